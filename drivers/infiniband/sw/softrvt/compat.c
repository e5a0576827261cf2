// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The device operations whose prototypes changed between Linux 6.1 and
 * 7.3, each in the form of the kernel built against and calling softrvt's
 * own function; softrvt_alloc_dev() adds them with ib_set_device_ops().  With
 * compat.h, this is all of softrvt that depends on the kernel's version.
 */

#include "softrvt.h"

#ifdef SOFTRVT_HAVE_CREATE_CQ_ATTRS
#define softrvt_compat_create_cq softrvt_create_cq
#else
/* v6.11: create_cq took the bundle's udata, not the bundle. */
static int softrvt_compat_create_cq(struct ib_cq *ibcq,
				    const struct ib_cq_init_attr *attr,
				    struct ib_udata *udata)
{
	return softrvt_create_cq(ibcq, attr,
				 udata ? rdma_udata_to_uverbs_attr_bundle(udata) :
				     NULL);
}
#endif

#ifdef SOFTRVT_HAVE_COUNTER_PORT
/* v6.15: a QP is bound to a counter of one of its ports. */
static int softrvt_compat_counter_bind_qp(struct rdma_counter *counter,
					  struct ib_qp *ibqp, u32 port)
{
	return softrvt_counter_bind_qp(counter, ibqp);
}

static int softrvt_compat_counter_unbind_qp(struct ib_qp *ibqp, u32 port)
{
	return softrvt_counter_unbind_qp(ibqp);
}
#else
#define softrvt_compat_counter_bind_qp softrvt_counter_bind_qp
#define softrvt_compat_counter_unbind_qp softrvt_counter_unbind_qp
#endif

#ifdef SOFTRVT_HAVE_COUNTER_INIT
/*
 * v6.15: ib_core allocates a counter at the size its driver gives
 * (size_rdma_counter, a kzalloc(0) without it) and calls the driver's
 * counter_init on it, unconditionally.  softrvt keeps a counter's
 * statistics in an object of its own (counter.c), made by
 * counter_alloc_stats: the counter is ib_core's struct alone, with
 * nothing of softrvt's to initialise.
 */
static void softrvt_compat_counter_init(struct rdma_counter *counter)
{
}
#endif

#ifdef SOFTRVT_HAVE_DMAH
/*
 * v6.17: a DMA handle steers a device's DMA (PCIe TPH); a software device
 * does no DMA and offers no handle to steer it with.
 */
static struct ib_mr *softrvt_compat_reg_user_mr(struct ib_pd *ibpd, u64 start,
						u64 length, u64 iova,
						int access,
						struct ib_dmah *dmah,
						struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return softrvt_reg_user_mr(ibpd, start, length, iova, access, udata);
}
#else
#define softrvt_compat_reg_user_mr softrvt_reg_user_mr
#endif

#ifdef SOFTRVT_HAVE_RESIZE_USER_CQ
/* v7.1: only user CQs are resized, by a count without a sign. */
static int softrvt_compat_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
				    struct ib_udata *udata)
{
	if (cqe > INT_MAX)
		return -EINVAL;
	return softrvt_resize_cq(ibcq, cqe, udata);
}
#endif

const struct ib_device_ops softrvt_compat_ops = {
	.counter_bind_qp = softrvt_compat_counter_bind_qp,
	.counter_unbind_qp = softrvt_compat_counter_unbind_qp,
#ifdef SOFTRVT_HAVE_COUNTER_INIT
	.counter_init = softrvt_compat_counter_init,
	.size_rdma_counter = sizeof(struct rdma_counter),
#endif
	.create_cq = softrvt_compat_create_cq,
#ifdef SOFTRVT_HAVE_FILL_RES_SRQ
	/* v6.7: SRQs appear in rdma resource listings. */
	.fill_res_srq_entry = softrvt_fill_res_srq_entry,
#endif
	.reg_user_mr = softrvt_compat_reg_user_mr,
#ifdef SOFTRVT_HAVE_RESIZE_USER_CQ
	.resize_user_cq = softrvt_compat_resize_cq,
#else
	.resize_cq = softrvt_resize_cq,
#endif
};
