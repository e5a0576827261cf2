// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: creation, the state machine, receive queues, destruction.
 *
 * The send side and the transports are not implemented yet: post_send
 * rejects every WR with -EOPNOTSUPP and query_device reports no RDMA READ
 * or atomic resources.
 */

#include <rdma/uverbs_ioctl.h>

#include "softrvt.h"

#define RVT_QPN_MAX		((1U << 24) - 1)
#define RVT_QPN_FIRST		2	/* 0 and 1 are the special QPs */

static int rvt_qp_check_cap(const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > RVT_MAX_QP_WR ||
	    cap->max_send_sge > RVT_MAX_SGE ||
	    cap->max_inline_data > RVT_MAX_INLINE)
		return -EINVAL;
	if (!init->srq &&
	    (cap->max_recv_wr > RVT_MAX_QP_WR ||
	     cap->max_recv_sge > RVT_MAX_SGE))
		return -EINVAL;
	return 0;
}

static int rvt_qp_alloc_qpn(struct rvt_dev_info *rdi, struct rvt_qp *qp,
			    enum ib_qp_type type)
{
	u32 qpn;
	int ret;

	if (type == IB_QPT_GSI) {
		ret = xa_insert_irq(&rdi->qp_xa, 1, qp, GFP_KERNEL);
		qpn = 1;
	} else {
		ret = xa_alloc_cyclic_irq(&rdi->qp_xa, &qpn, qp,
					  XA_LIMIT(RVT_QPN_FIRST, RVT_QPN_MAX),
					  &rdi->next_qpn, GFP_KERNEL);
	}
	if (ret < 0)
		return ret;
	qp->ibqp.qp_num = qpn;
	return 0;
}

/**
 * rvt_create_qp - create a queue pair (ib_device_ops.create_qp)
 * @ibqp: the QP allocated by ib_core
 * @init: type, capacities, CQs and SRQ
 * @udata: for a user QP, receives struct softrvt_create_qp_resp
 *
 * RC, UC, UD and GSI QPs are accepted.  Without an SRQ the QP gets its own
 * receive ring, mmapped for user QPs.  @init->cap is updated to what the
 * QP really has.
 *
 * Return: 0 or a negative errno.
 */
int rvt_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibqp->device);
	struct softrvt_create_qp_resp resp = {};
	struct rvt_qp *qp = ibqp_to_rvtqp(ibqp);
	int ret;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata)
			return -EPERM;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	ret = rvt_qp_check_cap(init);
	if (ret)
		return ret;
	if (atomic_inc_return(&rdi->n_qps) > RVT_MAX_QP) {
		ret = -ENOMEM;
		goto err_count;
	}

	mutex_init(&qp->state_mutex);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	qp->cap = init->cap;
	if (init->srq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	} else {
		ret = rvt_rq_init(&qp->r_rq, init->cap.max_recv_wr,
				  init->cap.max_recv_sge, !!udata);
		if (ret)
			goto err_count;
	}

	ret = rvt_qp_alloc_qpn(rdi, qp, init->qp_type);
	if (ret)
		goto err_rq;

	if (udata && !init->srq) {
		ret = rvt_mmap_entry_create(udata, qp->r_rq.wq,
					    rvt_rq_mmap_bytes(&qp->r_rq),
					    &qp->r_rq.mmap_entry,
					    &resp.rq_mmap_offset);
		if (ret)
			goto err_qpn;
	}
	if (udata) {
		ret = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (ret)
			goto err_qpn;
	}
	init->cap = qp->cap;
	return 0;

err_qpn:
	xa_erase_irq(&rdi->qp_xa, ibqp->qp_num);
err_rq:
	if (!init->srq)
		rvt_rq_free(&qp->r_rq);
err_count:
	atomic_dec(&rdi->n_qps);
	return ret;
}

static int rvt_qp_check_attr(struct rvt_qp *qp, const struct ib_qp_attr *attr,
			     int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic)
		return -EINVAL;
	if ((mask & IB_QP_CAP) &&
	    (attr->cap.max_send_wr > qp->cap.max_send_wr ||
	     attr->cap.max_recv_wr > qp->cap.max_recv_wr))
		return -EINVAL;
	return 0;
}

/* Keep what query_qp must report; the sgid_attr is ib_core's, not ours. */
static void rvt_qp_store_attr(struct rvt_qp *qp, const struct ib_qp_attr *attr,
			      int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_AV) {
		a->ah_attr = attr->ah_attr;
		a->ah_attr.grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & RVT_PSN_MASK;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & RVT_PSN_MASK;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
}

/*
 * Complete every WQE of the receive ring with IB_WC_WR_FLUSH_ERR.  A
 * corrupt user ring stops the flush: its WQEs cannot be trusted.
 */
static void rvt_qp_flush_rq(struct rvt_qp *qp)
{
	struct rvt_cq *cq = ibcq_to_rvtcq(qp->ibqp.recv_cq);
	struct ib_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp = &qp->ibqp,
		.port_num = 1,
	};

	if (qp->ibqp.srq)
		return;
	while (!rvt_rq_pop_wr_id(&qp->r_rq, &wc.wr_id))
		rvt_cq_enter(cq, &wc, true);
}

/**
 * rvt_modify_qp - change a QP's state and attributes (ib_device_ops.modify_qp)
 * @ibqp: the QP
 * @attr: new attributes
 * @attr_mask: IB_QP_* bits saying which are valid
 * @udata: unused
 *
 * The transition and mask are checked with ib_modify_qp_is_ok().  Moving
 * to ERR flushes the receive queue; moving to RESET empties it.
 * Process context.
 *
 * Return: 0, or -EINVAL with the QP unchanged.
 */
int rvt_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		  struct ib_udata *udata)
{
	struct rvt_qp *qp = ibqp_to_rvtqp(ibqp);
	enum ib_qp_state cur, new;
	int ret;

	if (attr_mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_mutex);
	cur = (attr_mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (attr_mask & IB_QP_STATE) ? attr->qp_state : cur;
	ret = -EINVAL;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, attr_mask))
		goto unlock;
	ret = rvt_qp_check_attr(qp, attr, attr_mask);
	if (ret)
		goto unlock;

	rvt_qp_store_attr(qp, attr, attr_mask);
	/* Paired with the READ_ONCE() in rvt_post_recv(). */
	WRITE_ONCE(qp->state, new);
	if (new == IB_QPS_RESET && cur != IB_QPS_RESET && !ibqp->srq)
		rvt_rq_reset(&qp->r_rq);
	else if (new == IB_QPS_ERR)
		rvt_qp_flush_rq(qp);
unlock:
	mutex_unlock(&qp->state_mutex);
	return ret;
}

/**
 * rvt_query_qp - report a QP's attributes (ib_device_ops.query_qp)
 * @ibqp: the QP
 * @attr: filled with the current attributes
 * @attr_mask: ignored; everything is reported
 * @init: filled with the creation attributes
 *
 * Return: 0.
 */
int rvt_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		 struct ib_qp_init_attr *init)
{
	struct rvt_qp *qp = ibqp_to_rvtqp(ibqp);

	mutex_lock(&qp->state_mutex);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	mutex_unlock(&qp->state_mutex);

	memset(init, 0, sizeof(*init));
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

/**
 * rvt_destroy_qp - free a queue pair (ib_device_ops.destroy_qp)
 * @ibqp: the QP
 * @udata: unused
 *
 * Posted WQEs are discarded without completions, as the IB spec allows.
 *
 * Return: 0.
 */
int rvt_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibqp->device);
	struct rvt_qp *qp = ibqp_to_rvtqp(ibqp);

	xa_erase_irq(&rdi->qp_xa, ibqp->qp_num);
	if (!ibqp->srq)
		rvt_rq_free(&qp->r_rq);
	mutex_destroy(&qp->state_mutex);
	atomic_dec(&rdi->n_qps);
	return 0;
}

/**
 * rvt_post_send - post send WRs (ib_device_ops.post_send)
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to @wr
 *
 * No transport is implemented yet, so nothing can be sent.
 *
 * Return: -EOPNOTSUPP.
 */
int rvt_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

/**
 * rvt_post_recv - post receive WRs to a QP's own ring (ib_device_ops.post_recv)
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to the first WR not posted
 *
 * Any context.  A QP in RESET or attached to an SRQ takes no receives; in
 * ERR the WRs are posted and flushed at once, as the IB spec requires
 * (ib_drain_rq() relies on it).
 *
 * Return: 0 or a negative errno, see rvt_rq_post().
 */
int rvt_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct rvt_qp *qp = ibqp_to_rvtqp(ibqp);
	int ret;

	if (ibqp->srq || READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	ret = rvt_rq_post(&qp->r_rq, wr, bad_wr);
	/*
	 * Read the state after posting: a concurrent move to ERR either
	 * flushed after our WQEs went in or is visible here.
	 */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		rvt_qp_flush_rq(qp);
	return ret;
}
