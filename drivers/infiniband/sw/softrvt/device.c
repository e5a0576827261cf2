// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ib_device: its operations table, attributes, port and registration.
 */

#include <linux/if_ether.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>

#include "softrvt.h"

/**
 * softrvt_query_device - report device attributes (ib_device_ops.query_device)
 * @ibdev: the device
 * @props: filled with the limits the verbs enforce
 * @udata: must carry no request
 *
 * Return: 0, or -EINVAL for unexpected udata.
 */
static int softrvt_query_device(struct ib_device *ibdev,
				struct ib_device_attr *props,
				struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(props, 0, sizeof(*props));
	props->fw_ver = 0;
	props->sys_image_guid = ibdev->node_guid;
	props->max_mr_size = U64_MAX;
	props->page_size_cap = PAGE_SIZE;
	props->vendor_id = SOFTRVT_VENDOR_ID;
	props->max_qp = SOFTRVT_MAX_QP;
	props->max_qp_wr = SOFTRVT_MAX_QP_WR;
	props->device_cap_flags = IB_DEVICE_SRQ_RESIZE |
				  IB_DEVICE_SYS_IMAGE_GUID |
				  IB_DEVICE_RC_RNR_NAK_GEN |
				  IB_DEVICE_PORT_ACTIVE_EVENT |
				  IB_DEVICE_MEM_MGT_EXTENSIONS |
				  IB_DEVICE_MEM_WINDOW |
				  IB_DEVICE_MEM_WINDOW_TYPE_2B |
				  IB_DEVICE_XRC |
				  /* Not _PERSISTENT: no persistent memory. */
				  SOFTRVT_DEVICE_PLACEMENT_CAPS;
	props->kernel_cap_flags = IBK_LOCAL_DMA_LKEY | IBK_ALLOW_USER_UNREG;
	props->max_send_sge = SOFTRVT_MAX_SGE;
	props->max_recv_sge = SOFTRVT_MAX_SGE;
	props->max_sge_rd = SOFTRVT_MAX_SGE;
	props->max_cq = SOFTRVT_MAX_CQ;
	props->max_cqe = SOFTRVT_MAX_CQE;
	props->max_mr = SOFTRVT_MAX_MR;
	props->max_mw = SOFTRVT_MAX_MW;
	props->max_fast_reg_page_list_len = SOFTRVT_MAX_FAST_REG_PAGES;
	props->max_pd = SOFTRVT_MAX_PD;
	props->max_srq = SOFTRVT_MAX_SRQ;
	props->max_srq_wr = SOFTRVT_MAX_SRQ_WR;
	props->max_srq_sge = SOFTRVT_MAX_SRQ_SGE;
	props->max_pkeys = 1;
	props->local_ca_ack_delay = 15;
	props->max_ah = SOFTRVT_MAX_AH;
	props->max_mcast_grp = SOFTRVT_MAX_MCAST_GRP;
	props->max_mcast_qp_attach = SOFTRVT_MAX_MCAST_QP_ATTACH;
	props->max_total_mcast_qp_attach = SOFTRVT_MAX_MCAST_GRP *
					   SOFTRVT_MAX_MCAST_QP_ATTACH;
	props->max_qp_rd_atom = SOFTRVT_MAX_RD_ATOMIC;
	props->max_qp_init_rd_atom = SOFTRVT_MAX_RD_ATOMIC;
	props->max_res_rd_atom = SOFTRVT_MAX_RD_ATOMIC * SOFTRVT_MAX_QP;
	/* Atomic among the device's QPs, not with the CPU's own atomics. */
	props->atomic_cap = IB_ATOMIC_HCA;
	return 0;
}

/**
 * softrvt_query_port - report the port's state (ib_device_ops.query_port)
 * @ibdev: the device
 * @port_num: always 1
 * @props: zeroed by ib_core, filled here from the netdev
 *
 * Return: 0, or -ENODEV once the netdev is gone.
 */
static int softrvt_query_port(struct ib_device *ibdev, u32 port_num,
			      struct ib_port_attr *props)
{
	struct net_device *ndev;
	int ret;

	ndev = softrvt_get_netdev(ibdev, port_num, softrvt_to_dev(ibdev)->ndev);
	if (!ndev)
		return -ENODEV;

	props->max_mtu = IB_MTU_4096;
	props->active_mtu = READ_ONCE(softrvt_to_dev(ibdev)->port_mtu);
	props->gid_tbl_len = SOFTRVT_PORT_GID_TBL_LEN;
	props->pkey_tbl_len = 1;
	props->max_msg_sz = SOFTRVT_MAX_MSG_SZ;
	props->port_cap_flags = 0;
	props->ip_gids = true;
	if (netif_running(ndev) && netif_carrier_ok(ndev)) {
		props->state = IB_PORT_ACTIVE;
		props->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		props->state = IB_PORT_DOWN;
		props->phys_state = (netif_get_flags(ndev) & IFF_UP) ?
				    IB_PORT_PHYS_STATE_POLLING :
				    IB_PORT_PHYS_STATE_DISABLED;
	}
	dev_put(ndev);

	ret = ib_get_eth_speed(ibdev, port_num, &props->active_speed,
			       &props->active_width);
	return ret;
}

/**
 * softrvt_query_pkey - the single default P_Key (ib_device_ops.query_pkey)
 * @ibdev: the device
 * @port_num: always 1
 * @index: only 0 exists
 * @pkey: set to the full-membership default
 *
 * Return: 0, or -EINVAL for another index.
 */
static int softrvt_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			      u16 *pkey)
{
	if (index != 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

/**
 * softrvt_get_port_immutable - port capabilities (ib_device_ops.get_port_immutable)
 * @ibdev: the device
 * @port_num: always 1
 * @immutable: filled as a RoCEv2 port, so ib_core builds IP-based GIDs
 *
 * Return: 0.
 */
static int softrvt_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				      struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = SOFTRVT_PORT_GID_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

/**
 * softrvt_get_link_layer - the port's link layer (ib_device_ops.get_link_layer)
 * @ibdev: the device
 * @port_num: always 1
 *
 * Needed while the port's immutable data is being set up, when ib_core
 * cannot yet derive it from the core capability flags.
 *
 * Return: IB_LINK_LAYER_ETHERNET.
 */
static enum rdma_link_layer softrvt_get_link_layer(struct ib_device *ibdev,
						   u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

/**
 * softrvt_alloc_ucontext - open a user context (ib_device_ops.alloc_ucontext)
 * @uctx: the context allocated by ib_core
 * @udata: unused; the ABI version is carried by uverbs_abi_ver
 *
 * Return: 0.
 */
static int softrvt_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	return 0;
}

/**
 * softrvt_query_ucontext - describe a user context to a process importing it
 * (ib_device_ops.query_ucontext)
 * @uctx: the context
 * @attrs: the bundle of UVERBS_METHOD_QUERY_CONTEXT
 *
 * A process that received another's command fd opens the same context
 * with ibv_import_device(), which asks ib_core to describe it.  Its
 * vendor part is empty: softrvt keeps nothing per context.
 *
 * Return: 0.
 */
static int softrvt_query_ucontext(struct ib_ucontext *uctx,
				  struct uverbs_attr_bundle *attrs)
{
	return 0;
}

/**
 * softrvt_dealloc_ucontext - close a user context
 * (ib_device_ops.dealloc_ucontext)
 * @uctx: the context; ib_core has already destroyed its objects
 */
static void softrvt_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/**
 * softrvt_disassociate_ucontext - cut a context off a departing device
 * (ib_device_ops.disassociate_ucontext)
 * @uctx: the context; ib_core has already destroyed its objects
 *
 * Having this lets ib_core unregister a device, and the module go, while
 * processes still hold the device open: they get -EIO from every later
 * command instead of the unregistration waiting for them to exit.  There
 * is nothing to cut off here.  softrvt has no hardware a process could
 * still reach, and the rings it mapped are vmalloc_user() pages whose
 * mappings hold their own references (mmap.c): they outlive the objects
 * and the module, and vanish with the mappings.  softrvt_qp_fail_all() has
 * flushed every QP into those rings before.
 */
static void softrvt_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

/**
 * softrvt_enable_driver - the device is enabled, before any client is added
 * (ib_device_ops.enable_driver)
 * @ibdev: the device
 *
 * A device is disabled and enabled again when it moves to another network
 * namespace (`rdma dev set DEV netns NS`, or its namespace deleted in
 * exclusive mode): its clients are removed, softrvt's first, which fails
 * every QP and locks them in ERR (softrvt_qp_fail_all()), and are added
 * back here.  The QPs of before are gone with their owners by then; ib_mad,
 * added before softrvt's client, moves the new QP1 out of RESET at once.
 *
 * Return: 0.
 */
static int softrvt_enable_driver(struct ib_device *ibdev)
{
	WRITE_ONCE(softrvt_to_dev(ibdev)->dying, false);
	return 0;
}

/**
 * softrvt_dealloc_driver - last teardown after unregistration
 * (ib_device_ops.dealloc_driver)
 * @ibdev: the device, no longer reachable through ib_core
 */
static void softrvt_dealloc_driver(struct ib_device *ibdev)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibdev);

	ibdev_dbg(ibdev, "removed\n");
	softrvt_forget_dev(rdi);
	softrvt_net_detach(rdi);
	WARN_ON(!xa_empty(&rdi->qp_xa));
	WARN_ON(!xa_empty(&rdi->mr_xa));
	WARN_ON(!xa_empty(&rdi->srq_xa));
	WARN_ON(!xa_empty(&rdi->counter_xa));
	/* Every QP left its groups when it was destroyed. */
	WARN_ON(!list_empty(&rdi->mcast_grps));
	/* Every QP is gone, and with it every queued packet. */
	WARN_ON(atomic_long_read(&rdi->rx_queued));
	xa_destroy(&rdi->qp_xa);
	xa_destroy(&rdi->mr_xa);
	xa_destroy(&rdi->srq_xa);
	xa_destroy(&rdi->counter_xa);
}

/*
 * hca_type names the driver, as cxgb4's does.  softrvt has no driver_id of
 * its own (RDMA_DRIVER_UNKNOWN: the enum is uapi, handed out to drivers in
 * the tree) and no parent device to carry a modalias, so this file is the
 * mark by which the libsoftrvt provider recognizes its devices whatever
 * their names.
 */
static ssize_t hca_type_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "softrvt\n");
}
static DEVICE_ATTR_RO(hca_type);

static struct attribute *softrvt_attributes[] = {
	&dev_attr_hca_type.attr,
	NULL
};

static const struct attribute_group softrvt_attr_group = {
	.attrs = softrvt_attributes,
};

static const struct ib_device_ops softrvt_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SOFTRVT_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = softrvt_alloc_hw_port_stats,
	.alloc_mr = softrvt_alloc_mr,
	.alloc_mw = softrvt_alloc_mw,
	.attach_mcast = softrvt_attach_mcast,
	.alloc_pd = softrvt_alloc_pd,
	.alloc_ucontext = softrvt_alloc_ucontext,
	.alloc_xrcd = softrvt_alloc_xrcd,
	.counter_alloc_stats = softrvt_counter_alloc_stats,
	.counter_dealloc = softrvt_counter_dealloc,
	.counter_update_stats = softrvt_counter_update_stats,
	.create_ah = softrvt_create_ah,
	.create_user_ah = softrvt_create_ah,
	.create_qp = softrvt_create_qp,
	.dealloc_driver = softrvt_dealloc_driver,
	.dealloc_mw = softrvt_dealloc_mw,
	.dealloc_pd = softrvt_dealloc_pd,
	.dealloc_ucontext = softrvt_dealloc_ucontext,
	.dealloc_xrcd = softrvt_dealloc_xrcd,
	.dereg_mr = softrvt_dereg_mr,
	.destroy_ah = softrvt_destroy_ah,
	.destroy_cq = softrvt_destroy_cq,
	.destroy_qp = softrvt_destroy_qp,
	.detach_mcast = softrvt_detach_mcast,
	.device_group = &softrvt_attr_group,
	.disassociate_ucontext = softrvt_disassociate_ucontext,
	.enable_driver = softrvt_enable_driver,
	.fill_res_cq_entry = softrvt_fill_res_cq_entry,
	.fill_res_mr_entry = softrvt_fill_res_mr_entry,
	.fill_res_qp_entry = softrvt_fill_res_qp_entry,
	.get_dma_mr = softrvt_get_dma_mr,
	.get_hw_stats = softrvt_get_hw_stats,
	.get_link_layer = softrvt_get_link_layer,
	.get_port_immutable = softrvt_get_port_immutable,
	.map_mr_sg = softrvt_map_mr_sg,
	.mmap = softrvt_mmap,
	.mmap_free = softrvt_mmap_free,
	.modify_qp = softrvt_modify_qp,
	.poll_cq = softrvt_poll_cq,
	.post_recv = softrvt_post_recv,
	.post_send = softrvt_post_send,
	.process_mad = softrvt_process_mad,
	.query_device = softrvt_query_device,
	.query_ah = softrvt_query_ah,
	.query_pkey = softrvt_query_pkey,
	.query_port = softrvt_query_port,
	.query_qp = softrvt_query_qp,
	.query_ucontext = softrvt_query_ucontext,
	.req_notify_cq = softrvt_req_notify_cq,
	.rereg_user_mr = softrvt_rereg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_ah, softrvt_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, softrvt_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, softrvt_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, softrvt_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, softrvt_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, softrvt_ucontext, ibucontext),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, softrvt_xrcd, ibxrcd),
};

/**
 * softrvt_alloc_dev - allocate a device for a netdev
 * @ndev: the netdev it will sit on
 *
 * Return: the device, or NULL.
 */
struct softrvt_dev_info *softrvt_alloc_dev(struct net_device *ndev)
{
	struct softrvt_dev_info *rdi;

	rdi = ib_alloc_device(softrvt_dev_info, ibdev);
	if (!rdi)
		return NULL;
	rdi->ndev = ndev;
	INIT_LIST_HEAD(&rdi->list);
	spin_lock_init(&rdi->atomic_lock);
	spin_lock_init(&rdi->mcast_lock);
	INIT_LIST_HEAD(&rdi->mcast_grps);
	xa_init_flags(&rdi->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&rdi->mr_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&rdi->srq_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&rdi->counter_xa, XA_FLAGS_ALLOC1);
	mutex_init(&rdi->counter_lock);
	return rdi;
}

/**
 * softrvt_is_dev - whether an ib_device is one of softrvt's
 * @ibdev: any ib_device
 *
 * Return: true for a device softrvt_alloc_dev() made.
 */
bool softrvt_is_dev(const struct ib_device *ibdev)
{
	return ibdev->ops.dealloc_driver == softrvt_dealloc_driver;
}

/**
 * softrvt_register_dev - register a device with ib_core
 * @rdi: from softrvt_alloc_dev()
 * @name: the ib_device name, from rdma link add
 *
 * On failure the caller still owns @rdi and frees it with
 * ib_dealloc_device().  Process context; takes RTNL inside ib_core.
 *
 * Return: 0 or a negative errno.
 */
int softrvt_register_dev(struct softrvt_dev_info *rdi, const char *name)
{
	struct ib_device *ibdev = &rdi->ibdev;
	int ret;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	/*
	 * The post commands let a process use the kernel's path into its
	 * own mmapped rings; sends always go through the kernel.  POLL_CQ
	 * stays off: user CQs are polled from their ring.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	strscpy(ibdev->node_desc, "softrvt", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    rdi->ndev->dev_addr);
	ib_set_device_ops(ibdev, &softrvt_dev_ops);
	ib_set_device_ops(ibdev, &softrvt_srq_ops);
	ib_set_device_ops(ibdev, &softrvt_compat_ops);
	/* The memory window WRs ib_uverbs' post_send does not carry. */
	ibdev->driver_def = softrvt_uapi_defs;

	ret = ib_device_set_netdev(ibdev, rdi->ndev, 1);
	if (ret)
		return ret;
	/* No dma_device: ib_core then uses virtual addresses as DMA addresses. */
	return ib_register_device(ibdev, name, NULL);
}

/**
 * softrvt_port_event - tell consumers the port went up or down
 * @rdi: the device
 * @type: IB_EVENT_PORT_ACTIVE or IB_EVENT_PORT_ERR
 */
void softrvt_port_event(struct softrvt_dev_info *rdi, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &rdi->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
}
