# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What the kernel built against has, read from its headers: each probe
# defines SOFTRVT_HAVE_<FEATURE> for compat.h.  Features, not release
# numbers: a distribution kernel may carry a change before its release
# does.  Included by the driver's and the KUnit module's Kbuild.
#
# $(call softrvt_has,HEADER,REGEX,FEATURE): REGEX matches a line of HEADER.
# $(call softrvt_near,HEADER,ANCHOR,REGEX,FEATURE): REGEX matches one of
# the three lines from the one ANCHOR matches (a prototype over lines).
# No parentheses in the expressions: make would count them.

# The oldest kernel softrvt is written for: the probes below start there.
ifeq ($(shell [ $$(($(VERSION) * 256 + $(PATCHLEVEL))) -lt $$((6 * 256 + 1)) ] && echo old),old)
$(error softrvt needs Linux 6.1 or newer, not $(KERNELRELEASE))
endif

softrvt_inc := $(srctree)/include
softrvt_has = $(if $(shell grep -sqE '$(2)' $(softrvt_inc)/$(1) && echo y),-DSOFTRVT_HAVE_$(3))
softrvt_near = $(if $(shell grep -sA2 -E '$(2)' $(softrvt_inc)/$(1) | grep -qE '$(3)' && echo y),-DSOFTRVT_HAVE_$(4))

softrvt_compat := \
	$(call softrvt_has,rdma/ib_verbs.h,IB_WR_FLUSH,PLACEMENT) \
	$(call softrvt_has,linux/unaligned.h,get_unaligned,LINUX_UNALIGNED) \
	$(call softrvt_has,rdma/ib_verbs.h,ib_device_get_netdev,GET_NETDEV) \
	$(call softrvt_near,rdma/ib_verbs.h,[*]create_cq[^a-z_],uverbs_attr_bundle,CREATE_CQ_ATTRS) \
	$(call softrvt_has,rdma/ib_verbs.h,fill_res_srq_entry,FILL_RES_SRQ) \
	$(call softrvt_has,linux/mm.h,vm_flags_clear,VM_FLAGS_CLEAR) \
	$(call softrvt_has,linux/overflow.h,define struct_size_t,STRUCT_SIZE_T) \
	$(call softrvt_has,rdma/ib_verbs.h,ib_virt_dma_to_ptr,VIRT_DMA_TO_PTR) \
	$(call softrvt_has,trace/stages/stage6_event_callback.h,define __assign_str.dst[^a-z_$(comma)],ASSIGN_STR_1) \
	$(call softrvt_has,linux/module.h,MODULE_INFO.import_ns$(comma) ns[^a-z_],IMPORT_NS_STRING) \
	$(call softrvt_has,linux/hrtimer.h,void hrtimer_setup[^a-z_],HRTIMER_SETUP) \
	$(call softrvt_has,linux/timer.h,define timer_container_of,TIMER_CONTAINER_OF) \
	$(call softrvt_has,linux/netdevice.h,netif_get_flags[^a-z_],NETIF_GET_FLAGS) \
	$(call softrvt_near,rdma/ib_verbs.h,[*]counter_bind_qp[^a-z_],u32 port,COUNTER_PORT) \
	$(call softrvt_has,rdma/ib_verbs.h,[*]counter_init[^a-z_],COUNTER_INIT) \
	$(call softrvt_near,rdma/ib_verbs.h,[*]reg_user_mr[^a-z_],ib_dmah,DMAH) \
	$(call softrvt_has,rdma/ib_verbs.h,[*]resize_user_cq[^a-z_],RESIZE_USER_CQ) \
	$(call softrvt_has,rdma/ib_umem.h,ib_umem_get_va[^a-z_],UMEM_GET_VA) \
	$(call softrvt_has,net/ipv6_stubs.h,ipv6_dst_lookup_flow,IPV6_STUB) \
	$(call softrvt_near,net/udp_tunnel.h,void setup_udp_tunnel_sock[^a-z_],struct sock [*]sk,UDP_TUNNEL_SK)

ccflags-y += $(strip $(softrvt_compat))

# Before v6.2 IB_WR_FLUSH and IB_WR_ATOMIC_WRITE are compat.h's numbers,
# outside enum ib_wr_opcode: the switches that name them would trip
# -Wswitch.  Kernels that have them keep the check.
ifeq ($(filter -DSOFTRVT_HAVE_PLACEMENT,$(softrvt_compat)),)
ccflags-y += -Wno-switch
endif
