/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel interfaces softrvt uses that changed between Linux 6.1 and
 * 7.3, in one place.  The driver is written against the newest kernel;
 * for an older one this header supplies what it lacks, under the newest
 * kernel's names and with their meaning, so that dropping this header
 * (and compat.c) leaves the driver as it would be in the kernel tree.
 * Kernel names are defined here only where the kernel does not define
 * them, so nothing here can collide with the kernel built against.
 *
 * compat.mk finds the features in the kernel's headers and defines
 * SOFTRVT_HAVE_<FEATURE>; each entry names the release that brought the
 * change.  Documentation/softrvt/compat.rst says how to add a kernel.
 */
#ifndef SOFTRVT_COMPAT_H
#define SOFTRVT_COMPAT_H

#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/timer.h>
#include <rdma/ib_verbs.h>

/* v6.12: <asm/unaligned.h> moved to <linux/unaligned.h>. */
#ifdef SOFTRVT_HAVE_LINUX_UNALIGNED
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * v6.2: RDMA FLUSH and ATOMIC WRITE (IBTA 1.5).  Without them the device
 * advertises neither and refuses to post them (SOFTRVT_PLACEMENT); the
 * values are the later kernels' (uapi for IB_UVERBS_*, IB_FLUSH_* and
 * IB_ACCESS_FLUSH_*, which ib_core of these kernels refuses on MRs), the
 * two IB_WC_* ones any unused in 6.1's enum: never seen, nothing is
 * posted.
 */
#ifdef SOFTRVT_HAVE_PLACEMENT
#define SOFTRVT_PLACEMENT true
#define SOFTRVT_DEVICE_PLACEMENT_CAPS \
	(IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_ATOMIC_WRITE)
#else
#define SOFTRVT_PLACEMENT false
#define SOFTRVT_DEVICE_PLACEMENT_CAPS 0
#define IB_UVERBS_WR_FLUSH 14
#define IB_UVERBS_WR_ATOMIC_WRITE 15
#define IB_WR_FLUSH IB_UVERBS_WR_FLUSH
#define IB_WR_ATOMIC_WRITE IB_UVERBS_WR_ATOMIC_WRITE
#define IB_WC_FLUSH 11
#define IB_WC_ATOMIC_WRITE 12
#define IB_FLUSH_GLOBAL BIT(0)
#define IB_FLUSH_PERSISTENT BIT(1)
#define IB_FLUSH_RANGE 0
#define IB_FLUSH_MR 1
#define IB_ACCESS_FLUSH_GLOBAL BIT(8)
#define IB_ACCESS_FLUSH_PERSISTENT BIT(9)
#define IB_OPCODE_FLUSH 0x1c
#define IB_OPCODE_ATOMIC_WRITE 0x1d
#endif

/* v6.3: the VMA flags are written through helpers only. */
#ifndef SOFTRVT_HAVE_VM_FLAGS_CLEAR
static inline void vm_flags_clear(struct vm_area_struct *vma,
				  unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * v6.5, and later 6.1 stable releases (Debian 12's 6.1.0-57 has it, its
 * 6.1.0-50 not): the size of a type with a flexible array, without an
 * object of it.
 */
#ifndef SOFTRVT_HAVE_STRUCT_SIZE_T
#include <linux/overflow.h>
#define struct_size_t(type, member, count) \
	struct_size((type *)NULL, member, count)
#endif

/*
 * v7.0: kzalloc_obj(), an allocation of one object typed by what it
 * points to.  A macro in <linux/slab.h>: its absence is the test.  Here
 * the GFP flags are not optional, as every caller passes them.
 */
#include <linux/slab.h>
#ifndef kzalloc_obj
#define kzalloc_obj(P, GFP) \
	({ typeof(P) *__obj = kzalloc(sizeof(P), GFP); __obj; })
#endif

/* v6.4: software devices' DMA addresses are kernel virtual addresses. */
#ifndef SOFTRVT_HAVE_VIRT_DMA_TO_PTR
static inline void *ib_virt_dma_to_ptr(u64 dma_addr)
{
	return (void *)(uintptr_t)dma_addr;
}
#endif

/* v6.10: __assign_str() takes the field alone; before, its source too. */
#ifdef SOFTRVT_HAVE_ASSIGN_STR_1
#define SOFTRVT_ASSIGN_STR(dst, src) __assign_str(dst)
#else
#define SOFTRVT_ASSIGN_STR(dst, src) __assign_str(dst, src)
#endif

/* v6.13: MODULE_IMPORT_NS() takes a string. */
#ifdef SOFTRVT_HAVE_IMPORT_NS_STRING
#define SOFTRVT_KUNIT_NS "EXPORTED_FOR_KUNIT_TESTING"
#else
#define SOFTRVT_KUNIT_NS EXPORTED_FOR_KUNIT_TESTING
#endif

/* v6.13: hrtimer_setup() sets the callback with the rest (KUnit only). */
#ifndef SOFTRVT_HAVE_HRTIMER_SETUP
#include <linux/hrtimer.h>
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* v6.16: from_timer() became timer_container_of(). */
#ifndef SOFTRVT_HAVE_TIMER_CONTAINER_OF
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/* v6.17: dev_get_flags() became netif_get_flags(). */
#ifndef SOFTRVT_HAVE_NETIF_GET_FLAGS
static inline unsigned int netif_get_flags(const struct net_device *dev)
{
	return dev_get_flags(dev);
}
#endif

/*
 * v6.12: ib_device_get_netdev() is the drivers' way to their port's
 * netdev.  Before it, softrvt holds the netdev it was created on.
 */
static inline struct net_device *softrvt_get_netdev(struct ib_device *ibdev,
						    u32 port,
						    struct net_device *own)
{
#ifdef SOFTRVT_HAVE_GET_NETDEV
	return ib_device_get_netdev(ibdev, port);
#else
	dev_hold(own);
	return own;
#endif
}

/* v7.2: ib_umem_get() became ib_umem_get_va(). */
#ifndef SOFTRVT_HAVE_UMEM_GET_VA
#include <rdma/ib_umem.h>
static inline struct ib_umem *ib_umem_get_va(struct ib_device *device,
					     unsigned long addr, size_t size,
					     int access)
{
	return ib_umem_get(device, addr, size, access);
}
#endif

/*
 * v7.2 (and 7.1.5): the UDP tunnel helpers take the socket's struct sock.
 * v7.1: IPv6 is built in; ipv6_stub, which let modules reach the IPv6
 * routing of a modular IPv6 without depending on it, is gone.
 */
#ifdef SOFTRVT_HAVE_UDP_TUNNEL_SK
#define softrvt_tunnel_sk(sock) ((sock)->sk)
#else
#define softrvt_tunnel_sk(sock) (sock)
#endif

#ifdef SOFTRVT_HAVE_IPV6_STUB
#include <net/ipv6_stubs.h>
#define softrvt_ip6_dst_lookup_flow(net, sk, fl6) \
	ipv6_stub->ipv6_dst_lookup_flow(net, sk, fl6, NULL)
#else
#include <net/ipv6.h>
#define softrvt_ip6_dst_lookup_flow(net, sk, fl6) \
	ip6_dst_lookup_flow(net, sk, fl6, NULL)
#endif

extern const struct ib_device_ops softrvt_compat_ops;

#endif /* SOFTRVT_COMPAT_H */
