// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC: domains, the numbers of XRC SRQs, and the SRQ number an INI QP
 * sends to.
 *
 * An XRC TGT QP receives into whichever SRQ of its domain a request's
 * XRCETH names.  The number comes from the wire, so it is looked up, and
 * the SRQ's domain compared with the QP's, for every request; the SRQ is
 * held only while that request is handled, so that destroying it never
 * waits for a peer.
 */

#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME softrvt
#include <rdma/uverbs_named_ioctl.h>

#include "softrvt.h"
#include "hdr.h"

/* XRC SRQ numbers are 24 bits on the wire; 0 stays unused. */
#define SOFTRVT_SRQN_MAX		SOFTRVT_XRC_SRQN_MASK

/**
 * softrvt_alloc_xrcd - create an XRC domain (ib_device_ops.alloc_xrcd)
 * @ibxrcd: the domain allocated by ib_core
 * @udata: unused
 *
 * Return: 0.
 */
int softrvt_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

/**
 * softrvt_dealloc_xrcd - free an XRC domain (ib_device_ops.dealloc_xrcd)
 * @ibxrcd: the domain; ib_core checked that no SRQ or QP uses it
 * @udata: unused
 *
 * Return: 0.
 */
int softrvt_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

/**
 * softrvt_xsrq_publish - give a new XRC SRQ its number
 * @rdi: the device
 * @srq: the SRQ, ready to take requests
 *
 * Sets ibsrq.ext.xrc.srq_num, which ib_core returns to the consumer.
 *
 * Return: 0 or a negative errno.
 */
int softrvt_xsrq_publish(struct softrvt_dev_info *rdi, struct softrvt_srq *srq)
{
	u32 srqn;
	int ret;

	refcount_set(&srq->refcount, 1);
	init_completion(&srq->released);
	ret = xa_alloc_cyclic(&rdi->srq_xa, &srqn, srq,
			      XA_LIMIT(1, SOFTRVT_SRQN_MAX), &rdi->next_srqn,
			      GFP_KERNEL);
	if (ret < 0)
		return ret;
	srq->ibsrq.ext.xrc.srq_num = srqn;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_xsrq_publish);

/**
 * softrvt_xsrq_unpublish - take an XRC SRQ's number back, for destroy
 * @rdi: the device
 * @srq: the SRQ
 *
 * Waits for the responders handling a request with it; they hold it for
 * one request each, never across messages.  Process context.
 */
void softrvt_xsrq_unpublish(struct softrvt_dev_info *rdi, struct softrvt_srq *srq)
{
	xa_erase(&rdi->srq_xa, srq->ibsrq.ext.xrc.srq_num);
	/* No lookup may still be between xa_load() and its reference. */
	synchronize_rcu();
	softrvt_xsrq_put(srq);
	wait_for_completion(&srq->released);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_xsrq_unpublish);

/**
 * softrvt_xsrq_get - find the XRC SRQ a request names
 * @rdi: the device
 * @srqn: the number, from an XRCETH or a WQE: anything
 * @xrcd: the domain of the TGT QP the request is for
 *
 * Any context.
 *
 * Return: the SRQ with a reference for softrvt_xsrq_put(), or NULL if no
 * SRQ of @xrcd has that number.
 */
struct softrvt_srq *softrvt_xsrq_get(struct softrvt_dev_info *rdi, u32 srqn,
				     const struct ib_xrcd *xrcd)
{
	struct softrvt_srq *srq;

	if (!xrcd)
		return NULL;
	rcu_read_lock();
	srq = xa_load(&rdi->srq_xa, srqn);
	if (srq && (srq->ibsrq.ext.xrc.xrcd != xrcd ||
		    !refcount_inc_not_zero(&srq->refcount)))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_xsrq_get);

/**
 * softrvt_xsrq_put - drop a reference from softrvt_xsrq_get()
 * @srq: the SRQ, or NULL
 */
void softrvt_xsrq_put(struct softrvt_srq *srq)
{
	if (srq && refcount_dec_and_test(&srq->refcount))
		complete(&srq->released);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_xsrq_put);

/*
 * SOFTRVT_METHOD_QP_SET_XRC_SRQN: the SRQ the WRs an XRC INI QP takes
 * from now on are for.  ib_uverbs' post_send has no field for it.
 */
static int UVERBS_HANDLER(SOFTRVT_METHOD_QP_SET_XRC_SRQN)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ibqp =
		uverbs_attr_get_obj(attrs, SOFTRVT_ATTR_SET_XRC_SRQN_QP_HANDLE);
	struct softrvt_qp *qp;
	u32 srqn;
	int ret;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	ret = uverbs_copy_from(&srqn, attrs, SOFTRVT_ATTR_SET_XRC_SRQN_SRQN);
	if (ret)
		return ret;
	if (ibqp->qp_type != IB_QPT_XRC_INI || srqn > SOFTRVT_SRQN_MAX)
		return -EINVAL;
	qp = softrvt_to_qp(ibqp);
	spin_lock_irq(&qp->s_lock);
	qp->s_xrc_srqn = srqn;
	spin_unlock_irq(&qp->s_lock);
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(SOFTRVT_METHOD_QP_SET_XRC_SRQN,
			    UVERBS_ATTR_IDR(SOFTRVT_ATTR_SET_XRC_SRQN_QP_HANDLE,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(SOFTRVT_ATTR_SET_XRC_SRQN_SRQN,
					       UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY));

ADD_UVERBS_METHODS(softrvt_qp_xrc, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(SOFTRVT_METHOD_QP_SET_XRC_SRQN));

/* Chained from softrvt_uapi_defs (methods.c). */
const struct uapi_definition softrvt_xrc_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &softrvt_qp_xrc),
	{},
};
