// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: creation, the state machine, posting, destruction.
 *
 * The send queue is kernel memory; post_send checks and copies each WR into
 * it and kicks the send engine (engine.c), which executes WQEs in order.  The
 * receive queue is a struct softrvt_rq (rq.c), mmapped for user QPs.
 */

#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

#define SOFTRVT_QPN_MAX		((1U << 24) - 1)
#define SOFTRVT_QPN_FIRST		2	/* 0 and 1 are the special QPs */

static int softrvt_qp_check_cap(const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > SOFTRVT_MAX_QP_WR ||
	    cap->max_send_sge > SOFTRVT_MAX_SGE ||
	    cap->max_inline_data > SOFTRVT_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && !softrvt_is_xrc_type(init->qp_type) &&
	    (cap->max_recv_wr > SOFTRVT_MAX_QP_WR ||
	     cap->max_recv_sge > SOFTRVT_MAX_SGE))
		return -EINVAL;
	return 0;
}

static int softrvt_qp_alloc_qpn(struct softrvt_dev_info *rdi, struct softrvt_qp *qp,
				enum ib_qp_type type)
{
	u32 qpn;
	int ret;

	if (type == IB_QPT_GSI) {
		ret = xa_insert_irq(&rdi->qp_xa, 1, qp, GFP_KERNEL);
		qpn = 1;
	} else {
		ret = xa_alloc_cyclic_irq(&rdi->qp_xa, &qpn, qp,
					  XA_LIMIT(SOFTRVT_QPN_FIRST, SOFTRVT_QPN_MAX),
					  &rdi->next_qpn, GFP_KERNEL);
	}
	if (ret < 0)
		return ret;
	qp->ibqp.qp_num = qpn;
	return 0;
}

/**
 * softrvt_lookup_qpn - find a QP of the device by number
 * @rdi: the device
 * @qpn: the QP number
 *
 * Any context.
 *
 * Return: the QP with a reference for softrvt_put_qp(), or NULL.
 */
struct softrvt_qp *softrvt_lookup_qpn(struct softrvt_dev_info *rdi, u32 qpn)
{
	struct softrvt_qp *qp;

	rcu_read_lock();
	qp = xa_load(&rdi->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refcount))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

/**
 * softrvt_put_qp - drop a reference from softrvt_lookup_qpn()
 * @qp: the QP
 */
void softrvt_put_qp(struct softrvt_qp *qp)
{
	if (refcount_dec_and_test(&qp->refcount))
		complete(&qp->released);
}

/*
 * Every state change goes through here, with s_lock held, so that the
 * copy a user QP's provider reads is never stale for long.
 */
static void softrvt_qp_set_state(struct softrvt_qp *qp, enum ib_qp_state state)
{
	lockdep_assert_held(&qp->s_lock);
	trace_softrvt_qp_state(qp, qp->state, state);
	WRITE_ONCE(qp->state, state);
	if (qp->state_page)
		WRITE_ONCE(qp->state_page->state, state);
}

static void softrvt_qp_free_queues(struct softrvt_qp *qp)
{
	if (softrvt_qp_has_rq(qp))
		softrvt_rq_free(&qp->r_rq);
	vfree(qp->s_wq);
	kfree(qp->r_wqe);
	dst_cache_destroy(&qp->s_dst_cache);
	if (qp->state_entry)
		rdma_user_mmap_entry_remove(qp->state_entry);
	else
		vfree(qp->state_page);
}

/*
 * Stop the engine and drop every WQE and packet, for RESET and teardown.
 * The engine does nothing in RESET, so once it is cancelled nothing arms
 * the timers again.
 */
static void softrvt_qp_quiesce(struct softrvt_qp *qp)
{
	cancel_work_sync(&qp->send_work);
	/* A run in a poster's context may arm a timer or requeue the work. */
	mutex_lock(&qp->engine_lock);
	mutex_unlock(&qp->engine_lock);
	timer_delete_sync(&qp->rnr_timer);
	timer_delete_sync(&qp->ack_timer);
	cancel_work_sync(&qp->send_work);
	softrvt_ruc_reset(qp);
	softrvt_rx_purge(qp);
	spin_lock_irq(&qp->s_lock);
	qp->s_head = 0;
	qp->s_tail = 0;
	qp->req.cur = 0;
	qp->req.cur_off = 0;
	qp->req.rd_count = 0;
	qp->req.rnr_wait = false;
	qp->req.rewound = false;
	qp->req.backoff = 0;
	qp->comp.go_back = false;
	qp->comp.rd_seen = 0;
	qp->s_flags = 0;
	qp->comp.retry_loaded = false;
	spin_unlock_irq(&qp->s_lock);
	softrvt_resp_reset(qp);
	if (softrvt_qp_has_rq(qp))
		softrvt_rq_reset(&qp->r_rq);
}

/*
 * Take back a QP whose QPN was published, for destroy and for a create
 * that fails after softrvt_qp_alloc_qpn(): from then on the receive path
 * (softrvt_rcv(), a local sender) may have found it, taken a reference,
 * queued packets and scheduled the send engine.  Unpublish the QPN, wait
 * for every reference, then stop the engine and its timers and drop what
 * is queued, so that nothing can reach the QP once ib_core frees it.
 */
static void softrvt_qp_unpublish(struct softrvt_dev_info *rdi, struct softrvt_qp *qp)
{
	spin_lock_irq(&qp->s_lock);
	softrvt_qp_set_state(qp, IB_QPS_RESET);
	spin_unlock_irq(&qp->s_lock);

	xa_erase_irq(&rdi->qp_xa, qp->ibqp.qp_num);
	/* No lookup may still be between xa_load() and its reference. */
	synchronize_rcu();
	softrvt_put_qp(qp);
	wait_for_completion(&qp->released);
	softrvt_qp_quiesce(qp);
}

/*
 * The QP types softrvt creates, and what each brings: a user INI QP has
 * no receive queue, a TGT QP (ib_core makes them as kernel QPs, shared
 * through their XRC domain) no queue at all.
 */
static int softrvt_qp_check_type(struct ib_qp_init_attr *init,
				 struct ib_udata *udata)
{
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata)
			return -EPERM;
		break;
	case IB_QPT_XRC_INI:
		/* Only the provider can name the SRQ of a send WR. */
		if (!udata)
			return -EOPNOTSUPP;
		init->cap.max_recv_wr = 0;
		init->cap.max_recv_sge = 0;
		break;
	case IB_QPT_XRC_TGT:
		if (!init->xrcd)
			return -EINVAL;
		memset(&init->cap, 0, sizeof(init->cap));
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	return softrvt_qp_check_cap(init);
}

static void softrvt_qp_init_fields(struct softrvt_qp *qp,
				   const struct ib_qp_init_attr *init)
{
	mutex_init(&qp->state_mutex);
	mutex_init(&qp->r_xrc_mutex);
	/* ib_core sets ibqp.xrcd only once the QP exists. */
	qp->xrcd = init->xrcd;
	spin_lock_init(&qp->s_lock);
	INIT_WORK(&qp->send_work, softrvt_send_work);
	mutex_init(&qp->engine_lock);
	timer_setup(&qp->rnr_timer, softrvt_rnr_timer_fn, 0);
	timer_setup(&qp->ack_timer, softrvt_ack_timer_fn, 0);
	skb_queue_head_init(&qp->r_pkts);
	refcount_set(&qp->refcount, 1);
	init_completion(&qp->released);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	qp->cap = init->cap;
}

/*
 * The send queue, the receive WQE buffer, the route cache and, without
 * an SRQ, the receive ring.  What fails leaves the rest for
 * softrvt_qp_free_queues().
 */
static int softrvt_qp_alloc_queues(struct softrvt_qp *qp,
				   const struct ib_qp_init_attr *init,
				   bool user)
{
	size_t payload;
	int ret;

	/* A slot holds the SGEs or the inline payload, whichever is larger. */
	payload = max_t(size_t,
			array_size(init->cap.max_send_sge,
				   sizeof(struct rvt_wqe_sge)),
			init->cap.max_inline_data);
	/*
	 * What the slot holds is the QP's inline capacity, at least what was
	 * asked, as on other devices: rdma_xclient posts 16 bytes inline on
	 * a QP of one SGE created with max_inline_data 0.
	 */
	qp->cap.max_inline_data = min_t(size_t, payload, SOFTRVT_MAX_INLINE);
	qp->s_stride = ALIGN(sizeof(struct softrvt_swqe) + payload, 8);
	qp->s_size = init->cap.max_send_wr + 1;
	qp->s_wq = vzalloc(array_size(qp->s_size, qp->s_stride));
	qp->r_wqe = kmalloc(struct_size(qp->r_wqe, sg_list, SOFTRVT_MAX_SGE),
			    GFP_KERNEL);
	if (!qp->s_wq || !qp->r_wqe)
		return -ENOMEM;
	if (!softrvt_is_ud_type(init->qp_type)) {
		ret = dst_cache_init(&qp->s_dst_cache, GFP_KERNEL);
		if (ret)
			return ret;
	}

	if (init->srq || softrvt_is_xrc_type(init->qp_type)) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
		return 0;
	}
	return softrvt_rq_init(&qp->r_rq, init->cap.max_recv_wr,
			       init->cap.max_recv_sge, user);
}

/*
 * A user QP's mappings, its receive ring if it has one and its state
 * page, and the response that says where they are.
 */
static int softrvt_qp_map_user(struct softrvt_qp *qp, struct ib_udata *udata)
{
	struct softrvt_create_qp_resp resp = {};
	int ret;

	if (softrvt_qp_has_rq(qp)) {
		ret = softrvt_mmap_entry_create(udata, qp->r_rq.wq,
						softrvt_rq_mmap_bytes(&qp->r_rq), true,
						&qp->r_rq.mmap_entry,
						&resp.rq_mmap_offset);
		if (ret)
			return ret;
	}
	qp->state_page = vmalloc_user(PAGE_SIZE);
	if (!qp->state_page)
		return -ENOMEM;
	qp->state_page->state = IB_QPS_RESET;
	ret = softrvt_mmap_entry_create(udata, qp->state_page, PAGE_SIZE,
					false, &qp->state_entry,
					&resp.state_mmap_offset);
	if (ret)
		return ret;
	return softrvt_copy_resp(udata, &resp, sizeof(resp));
}

/**
 * softrvt_create_qp - create a queue pair (ib_device_ops.create_qp)
 * @ibqp: the QP allocated by ib_core
 * @init: type, capacities, CQs and SRQ
 * @udata: for a user QP, receives struct softrvt_create_qp_resp
 *
 * RC, UC, UD and GSI QPs are accepted, and XRC's: a user INI QP, which
 * has no receive queue, and a TGT QP, which ib_core always creates as a
 * kernel QP (shared through its XRC domain) and which has no queue at
 * all.  Any other QP without an SRQ gets its own receive ring, mmapped
 * for user QPs.  @init->cap is updated to what the QP really has.
 *
 * Return: 0 or a negative errno.
 */
int softrvt_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		      struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	int ret;

	ret = softrvt_qp_check_type(init, udata);
	if (ret)
		return ret;
	if (atomic_inc_return(&rdi->n_qps) > SOFTRVT_MAX_QP) {
		ret = -ENOMEM;
		goto err_count;
	}

	softrvt_qp_init_fields(qp, init);
	ret = softrvt_qp_alloc_queues(qp, init, !!udata);
	if (ret)
		goto err_queues;
	ret = softrvt_qp_alloc_qpn(rdi, qp, init->qp_type);
	if (ret)
		goto err_queues;
	if (udata) {
		ret = softrvt_qp_map_user(qp, udata);
		if (ret)
			goto err_qpn;
	}
	init->cap = qp->cap;
	return 0;

err_qpn:
	softrvt_qp_unpublish(rdi, qp);
err_queues:
	/* The QP came zeroed: what was not allocated is NULL. */
	softrvt_qp_free_queues(qp);
err_count:
	atomic_dec(&rdi->n_qps);
	return ret;
}

static int softrvt_qp_check_attr(struct softrvt_qp *qp, const struct ib_qp_attr *attr,
				 int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SOFTRVT_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SOFTRVT_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_AV) && rdma_ah_get_port_num(&attr->ah_attr) != 1)
		return -EINVAL;
	if ((mask & IB_QP_CAP) &&
	    (attr->cap.max_send_wr > qp->cap.max_send_wr ||
	     attr->cap.max_recv_wr > qp->cap.max_recv_wr))
		return -EINVAL;
	return 0;
}

/* Keep what query_qp must report; the sgid_attr is ib_core's, not ours. */
static void softrvt_qp_store_attr(struct softrvt_qp *qp, const struct ib_qp_attr *attr,
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
	if (mask & IB_QP_PATH_MTU) {
		a->path_mtu = attr->path_mtu;
		softrvt_qp_set_mtu(qp, attr->path_mtu);
	}
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & SOFTRVT_PSN_MASK;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & SOFTRVT_PSN_MASK;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
}

/**
 * softrvt_qp_flush_rq - complete the posted receive WQEs with IB_WC_WR_FLUSH_ERR
 * @qp: the QP; nothing to do with an SRQ
 *
 * Completes the WQEs posted when the flush starts, at most the ring's
 * capacity, however fast a user producer keeps posting meanwhile (it
 * gets its later WQEs flushed by asking again, see softrvt-abi.h).  A
 * corrupt user ring stops the flush: its WQEs cannot be trusted.
 * Any context.
 */
void softrvt_qp_flush_rq(struct softrvt_qp *qp)
{
	struct softrvt_cq *cq = softrvt_to_cq(qp->ibqp.recv_cq);
	struct ib_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp = &qp->ibqp,
		.port_num = 1,
	};
	u32 n;

	if (!softrvt_qp_has_rq(qp))
		return;
	for (n = softrvt_rq_posted(&qp->r_rq);
	     n && !softrvt_rq_pop_wr_id(&qp->r_rq, &wc.wr_id); n--)
		softrvt_cq_enter(cq, &wc, true);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_qp_flush_rq);

/**
 * softrvt_qp_event - raise an affiliated asynchronous event on a QP
 * @qp: the QP
 * @type: the event
 */
void softrvt_qp_event(struct softrvt_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/**
 * softrvt_comm_est - a connected QP in RTR received a packet
 * @qp: the QP, RC or UC
 *
 * Raises IB_EVENT_COMM_EST with the first packet since the QP left RESET:
 * the CM moves a QP that receives before its RTU arrived to RTS on it.
 * The QP's own engine (a packet from the wire) and a same-device
 * sender's engine may find it in RTR at once: the bit decides.
 */
void softrvt_comm_est(struct softrvt_qp *qp)
{
	if (!test_and_set_bit(SOFTRVT_S_COMM_EST, &qp->s_flags))
		softrvt_qp_event(qp, IB_EVENT_COMM_EST);
}

/* Enter ERR: the engine flushes both queues, see softrvt_send_work(). */
static void softrvt_qp_enter_error(struct softrvt_qp *qp)
{
	/*
	 * Pairs with the barrier a provider places between publishing a
	 * receive WQE and reading the state page: either the engine's flush,
	 * which reads the ring after this, sees the WQE or the provider sees
	 * ERR and has the kernel flush it.  Likewise with a same-device
	 * sender, between its entry in r_senders and its reading of the
	 * state, see softrvt_engine_last_wqe().
	 */
	smp_mb();
	/*
	 * The engine raises it once no WQE can be taken any more: for a QP
	 * on an SRQ, and for an XRC TGT QP, which takes its WQEs from the
	 * SRQs of its domain (IBA A14).
	 */
	if (qp->ibqp.srq || qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		set_bit(SOFTRVT_S_LAST_WQE, &qp->s_flags);
	softrvt_schedule_send(qp);
}

/**
 * softrvt_qp_set_error - move a QP to ERR after a transport error
 * @qp: the QP
 * @event: the affiliated event to raise, or 0 for none (the requester of
 *	a failed WQE learns from its completion)
 *
 * Any context.
 *
 * Return: true if the QP was not already in ERR or RESET.
 */
bool softrvt_qp_set_error(struct softrvt_qp *qp, enum ib_event_type event)
{
	unsigned long flags;
	bool changed;

	spin_lock_irqsave(&qp->s_lock, flags);
	changed = qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET;
	if (changed)
		softrvt_qp_set_state(qp, IB_QPS_ERR);
	spin_unlock_irqrestore(&qp->s_lock, flags);

	if (changed) {
		softrvt_qp_enter_error(qp);
		if (event)
			softrvt_qp_event(qp, event);
	}
	return changed;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_qp_set_error);

static bool softrvt_qp_sq_empty(struct softrvt_qp *qp)
{
	bool empty;

	spin_lock_irq(&qp->s_lock);
	empty = qp->s_tail == qp->s_head;
	spin_unlock_irq(&qp->s_lock);
	return empty;
}

/**
 * softrvt_qp_next - the next live QP of a device, in QPN order
 * @rdi: the device
 * @index: where to look from, 0 to begin; moved past the QP returned
 *
 * A QP being destroyed (no reference left to take) is passed over.
 * Process context.
 *
 * Return: the QP with a reference the caller puts, or NULL at the end.
 */
struct softrvt_qp *softrvt_qp_next(struct softrvt_dev_info *rdi, unsigned long *index)
{
	struct softrvt_qp *qp;

	rcu_read_lock();
	while ((qp = xa_find(&rdi->qp_xa, index, SOFTRVT_QPN_MAX, XA_PRESENT))) {
		(*index)++;
		if (refcount_inc_not_zero(&qp->refcount))
			break;
	}
	rcu_read_unlock();
	return qp;
}

/**
 * softrvt_qp_fail_all - move every QP of a departing device to ERR, flushed
 * @rdi: the device, being unregistered
 *
 * ib_core destroys the objects of the processes that hold a departing
 * device without waiting for them (softrvt_disassociate_ucontext()), and
 * none of its completions would ever come: a process polling its CQ ring
 * would wait for ever for the WQEs it posted.  This runs before, moves
 * each QP to ERR and waits until its engine has completed every WQE with
 * IB_WC_WR_FLUSH_ERR, so that processes see their work fail instead.
 * From now on softrvt_modify_qp() moves no QP anywhere but to ERR, so that
 * none escapes, until the device is enabled again (softrvt_enable_driver(),
 * after a move to another network namespace).  Process context.
 */
void softrvt_qp_fail_all(struct softrvt_dev_info *rdi)
{
	unsigned long index = 0;
	struct softrvt_qp *qp;
	u32 runs;

	WRITE_ONCE(rdi->dying, true);
	while ((qp = softrvt_qp_next(rdi, &index))) {
		softrvt_qp_set_error(qp, 0);
		/* Each engine run flushes a budget, then requeues. */
		runs = qp->s_size;
		do {
			softrvt_sync_send(qp);
		} while (!softrvt_qp_sq_empty(qp) && runs--);
		softrvt_put_qp(qp);
	}
}

/**
 * softrvt_qp_set_sq_error - stop a UC or UD send queue after a send error
 * @qp: the QP
 *
 * The QP moves to SQE: the send engine flushes the WQEs left, receives go
 * on.  Any context.
 */
void softrvt_qp_set_sq_error(struct softrvt_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->s_lock, flags);
	if (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD)
		softrvt_qp_set_state(qp, IB_QPS_SQE);
	spin_unlock_irqrestore(&qp->s_lock, flags);
	softrvt_schedule_send(qp);
}

/* The requester starts over at @psn, with nothing in flight. */
static void softrvt_qp_set_sq_psn(struct softrvt_qp *qp, u32 psn)
{
	lockdep_assert_held(&qp->s_lock);
	qp->req.psn = psn;
	qp->req.max_psn = psn;
	qp->comp.acked_psn = softrvt_psn_add(psn, SOFTRVT_PSN_MASK);
	qp->req.cur = qp->s_tail;
	qp->req.cur_off = 0;
	qp->req.rd_count = 0;
	qp->req.rewound = false;
	qp->req.backoff = 0;
	qp->comp.go_back = false;
	qp->comp.rd_seen = 0;
	qp->comp.ack_hint = qp->comp.acked_psn;
	qp->comp.failed = false;
}

/* What a move from @cur to @new sets going, once the QP's locks are out. */
static void softrvt_qp_state_moved(struct softrvt_qp *qp, enum ib_qp_state cur,
				   enum ib_qp_state new)
{
	if (new == IB_QPS_SQD)
		softrvt_schedule_send(qp);
	else if (new == IB_QPS_RESET && cur != IB_QPS_RESET)
		softrvt_qp_quiesce(qp);
	else if (new == IB_QPS_ERR && cur != IB_QPS_ERR)
		softrvt_qp_enter_error(qp);
	else if (new == IB_QPS_RTS)
		/* WQEs posted in SQD, or left by SQE, run again in RTS. */
		softrvt_schedule_send(qp);
}

/**
 * softrvt_modify_qp - change a QP's state and attributes (ib_device_ops.modify_qp)
 * @ibqp: the QP
 * @attr: new attributes
 * @attr_mask: IB_QP_* bits saying which are valid
 * @udata: unused
 *
 * The transition and mask are checked with ib_modify_qp_is_ok().  Moving
 * to ERR flushes both queues; moving to RESET empties them.
 * Process context.
 *
 * Return: 0, or -EINVAL with the QP unchanged; -ENODEV for any state but
 * ERR once the device is going (softrvt_qp_fail_all()).
 */
int softrvt_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		      struct ib_udata *udata)
{
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	bool set_av = (attr_mask & IB_QP_AV) &&
		      !softrvt_is_ud_type(ibqp->qp_type);
	enum ib_qp_state cur, new;
	struct softrvt_av av = {};
	bool local = false;
	int ret;

	if (attr_mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_mutex);
	cur = (attr_mask & IB_QP_CUR_STATE) ? attr->cur_qp_state :
					      READ_ONCE(qp->state);
	new = (attr_mask & IB_QP_STATE) ? attr->qp_state : cur;
	ret = -EINVAL;
	if (cur != READ_ONCE(qp->state) ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, attr_mask))
		goto unlock;
	ret = softrvt_qp_check_attr(qp, attr, attr_mask);
	if (ret)
		goto unlock;
	if (set_av) {
		local = softrvt_av_init(softrvt_to_dev(ibqp->device), &attr->ah_attr,
					attr->ah_attr.grh.sgid_attr, &av);
		/*
		 * The engine reads the path without s_lock, and it still
		 * runs in SQD (READ responses, ACKs, the WQE in flight), the
		 * one state that takes a new path without a reset: the path
		 * changes between two of its runs, never under one.
		 */
		mutex_lock(&qp->engine_lock);
	}

	spin_lock_irq(&qp->s_lock);
	/*
	 * A departing device's QPs stay in ERR: softrvt_qp_fail_all() sets dying
	 * before it takes each QP's s_lock to move it there.
	 */
	if (READ_ONCE(softrvt_to_dev(ibqp->device)->dying) && new != IB_QPS_ERR) {
		spin_unlock_irq(&qp->s_lock);
		ret = -ENODEV;
		goto unlock_engine;
	}
	/*
	 * softrvt_qp_set_error() and softrvt_qp_set_sq_error() change the state
	 * without state_mutex, under s_lock: judge the transition again
	 * against the state as it is now, so that a move to ERR since the
	 * check above is never undone by this one, and leave the QP
	 * untouched if the transition is no longer allowed.
	 */
	if (qp->state != cur) {
		if (!(attr_mask & IB_QP_STATE))
			new = qp->state;
		if ((attr_mask & IB_QP_CUR_STATE) ||
		    !ib_modify_qp_is_ok(qp->state, new, ibqp->qp_type,
					attr_mask)) {
			spin_unlock_irq(&qp->s_lock);
			ret = -EINVAL;
			goto unlock_engine;
		}
		cur = qp->state;
	}
	softrvt_qp_store_attr(qp, attr, attr_mask);
	if (set_av) {
		WRITE_ONCE(qp->s_local, local);
		qp->s_av = av;
		dst_cache_reset(&qp->s_dst_cache);
	}
	if (attr_mask & IB_QP_RQ_PSN)
		qp->resp.psn = qp->attr.rq_psn;
	if (attr_mask & IB_QP_SQ_PSN)
		softrvt_qp_set_sq_psn(qp, qp->attr.sq_psn);
	if (attr_mask & IB_QP_RETRY_CNT)
		qp->comp.retry = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		qp->comp.rnr_retry = attr->rnr_retry;
	softrvt_qp_set_state(qp, new);
	/* The engine raises SQ_DRAINED once the WQE in flight is done. */
	qp->s_draining = new == IB_QPS_SQD && cur != IB_QPS_SQD;
	spin_unlock_irq(&qp->s_lock);
unlock_engine:
	if (set_av)
		mutex_unlock(&qp->engine_lock);
	if (!ret)
		softrvt_qp_state_moved(qp, cur, new);
unlock:
	mutex_unlock(&qp->state_mutex);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_modify_qp);

/**
 * softrvt_query_qp - report a QP's attributes (ib_device_ops.query_qp)
 * @ibqp: the QP
 * @attr: filled with the current attributes
 * @attr_mask: ignored; everything is reported
 * @init: filled with the creation attributes
 *
 * Return: 0.
 */
int softrvt_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		     struct ib_qp_init_attr *init)
{
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);

	mutex_lock(&qp->state_mutex);
	*attr = qp->attr;
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	mutex_unlock(&qp->state_mutex);

	memset(init, 0, sizeof(*init));
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->xrcd = qp->xrcd;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

/**
 * softrvt_destroy_qp - free a queue pair (ib_device_ops.destroy_qp)
 * @ibqp: the QP
 * @udata: unused
 *
 * Unpublishes the QPN, waits for senders delivering to the QP and for its
 * send engine, then frees the queues.  Posted WQEs are discarded without
 * completions, as the IB spec allows.  Process context.
 *
 * Return: 0.
 */
int softrvt_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);

	softrvt_mcast_detach_qp(qp);
	softrvt_qp_unpublish(rdi, qp);
	softrvt_mw_unbind_qp(qp);
	softrvt_qp_free_queues(qp);
	mutex_destroy(&qp->engine_lock);
	mutex_destroy(&qp->r_xrc_mutex);
	mutex_destroy(&qp->state_mutex);
	atomic_dec(&rdi->n_qps);
	return 0;
}

/* WRs that send nothing: no payload, never inline. */
static bool softrvt_wr_is_local_op(const struct ib_send_wr *wr)
{
	return wr->opcode == IB_WR_REG_MR || wr->opcode == IB_WR_LOCAL_INV ||
	       wr->opcode == IB_WR_BIND_MW;
}

/*
 * @own: softrvt's own WR layouts are allowed: @wr is then in a struct
 * softrvt_bind_wr (IB_WR_BIND_MW) or struct softrvt_placement_send_wr (IB_WR_FLUSH,
 * IB_WR_ATOMIC_WRITE).
 */
static int softrvt_check_send_wr(struct softrvt_qp *qp, const struct ib_send_wr *wr,
				 bool own)
{
	if (wr->opcode == IB_WR_BIND_MW)
		return own && (qp->ibqp.qp_type == IB_QPT_RC ||
			       qp->ibqp.qp_type == IB_QPT_UC) ? 0 : -EINVAL;
	if (softrvt_opcode_is_placement(wr->opcode))
		return own && qp->ibqp.qp_type == IB_QPT_RC ? 0 : -EINVAL;
	switch (qp->ibqp.qp_type) {
	case IB_QPT_XRC_TGT:
		return -EINVAL;		/* it has no send queue */
	case IB_QPT_RC:
	case IB_QPT_XRC_INI:
		switch (wr->opcode) {
		case IB_WR_ATOMIC_CMP_AND_SWP:
		case IB_WR_ATOMIC_FETCH_AND_ADD:
			if (wr->send_flags & IB_SEND_INLINE)
				return -EINVAL;
			break;
		case IB_WR_RDMA_READ:
		case IB_WR_SEND:
		case IB_WR_SEND_WITH_IMM:
		case IB_WR_SEND_WITH_INV:
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_WRITE_WITH_IMM:
		case IB_WR_LOCAL_INV:
			break;
		case IB_WR_REG_MR:
			return reg_wr(wr)->mr ? 0 : -EINVAL;
		default:
			return -EINVAL;
		}
		break;
	case IB_QPT_UC:
		if (wr->opcode == IB_WR_REG_MR)
			return reg_wr(wr)->mr ? 0 : -EINVAL;
		if (wr->opcode != IB_WR_SEND &&
		    wr->opcode != IB_WR_SEND_WITH_IMM &&
		    wr->opcode != IB_WR_RDMA_WRITE &&
		    wr->opcode != IB_WR_RDMA_WRITE_WITH_IMM &&
		    wr->opcode != IB_WR_LOCAL_INV)
			return -EINVAL;
		break;
	default:
		if ((wr->opcode != IB_WR_SEND &&
		     wr->opcode != IB_WR_SEND_WITH_IMM) || !ud_wr(wr)->ah)
			return -EINVAL;
		break;
	}
	/* It sends nothing: its sg_list is not looked at. */
	if (wr->opcode == IB_WR_LOCAL_INV)
		return 0;
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	if ((wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	     wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length < sizeof(u64)))
		return -EINVAL;
	return 0;
}

static int softrvt_send_wr_length(const struct ib_send_wr *wr, u32 *len)
{
	int i;

	*len = 0;
	if (softrvt_wr_is_local_op(wr))
		return 0;
	if (wr->opcode == IB_WR_ATOMIC_WRITE) {
		*len = sizeof(u64);
		return 0;
	}
	/* A FLUSH sends nothing: its length is the range it flushes. */
	if (wr->opcode == IB_WR_FLUSH) {
		*len = container_of(wr, struct softrvt_placement_send_wr, wr)->length;
		return 0;
	}
	for (i = 0; i < wr->num_sge; i++)
		if (check_add_overflow(*len, wr->sg_list[i].length, len))
			return -EINVAL;
	/* The max_msg_sz that query_device advertises, for every opcode. */
	return *len > SOFTRVT_MAX_MSG_SZ ? -EINVAL : 0;
}

/*
 * Gather the inline payload of a user QP's WR into @buf.  Its SGEs hold
 * user addresses: this runs before any lock is taken, since it may fault.
 */
static int softrvt_gather_user_inline(const struct ib_send_wr *wr, char *buf)
{
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (copy_from_user(buf, u64_to_user_ptr(sge->addr),
				   sge->length))
			return -EFAULT;
		buf += sge->length;
	}
	return 0;
}

/*
 * The WRs that carry no scatter list (REG_MR, BIND_MW, FLUSH and
 * ATOMIC_WRITE): their fields into @wqe.  Return: whether @wr was one.
 */
static bool softrvt_fill_swqe_nosge(struct softrvt_swqe *wqe,
				    const struct ib_send_wr *wr)
{
	const struct softrvt_placement_send_wr *pwr;
	const struct softrvt_bind_wr *bind;

	switch (wr->opcode) {
	case IB_WR_REG_MR:
		wqe->reg_mr = softrvt_to_mr(reg_wr(wr)->mr);
		wqe->reg_access = reg_wr(wr)->access;
		wqe->rkey = reg_wr(wr)->key;
		break;
	case IB_WR_BIND_MW:
		bind = container_of(wr, struct softrvt_bind_wr, wr);
		wqe->rkey = bind->rkey;
		wqe->bind_lkey = bind->mr_lkey;
		wqe->remote_addr = bind->addr;
		wqe->bind_len = bind->length;
		wqe->reg_access = bind->access;
		break;
	case IB_WR_FLUSH:
	case IB_WR_ATOMIC_WRITE:
		pwr = container_of(wr, struct softrvt_placement_send_wr, wr);
		wqe->remote_addr = pwr->remote_addr;
		wqe->rkey = pwr->rkey;
		wqe->compare_add = pwr->value;
		wqe->flush_type = pwr->flush_type;
		wqe->flush_level = pwr->flush_level;
		break;
	default:
		return false;
	}
	wqe->num_sge = 0;
	return true;
}

/*
 * The payload's description: an inline payload copied into the slot (from
 * @user_inline for a user QP; a kernel QP's SGEs hold kernel addresses),
 * else the SGEs.
 */
static void softrvt_fill_swqe_sges(struct softrvt_swqe *wqe,
				   const struct ib_send_wr *wr, u32 len,
				   bool is_inline, const char *user_inline)
{
	char *p = (char *)wqe->sg_list;
	int i;

	wqe->num_sge = is_inline ? 0 : wr->num_sge;
	if (is_inline && user_inline) {
		memcpy(p, user_inline, len);
		return;
	}
	for (i = 0; i < wr->num_sge; i++) {
		if (is_inline) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
			continue;
		}
		wqe->sg_list[i].addr = wr->sg_list[i].addr;
		wqe->sg_list[i].length = wr->sg_list[i].length;
		wqe->sg_list[i].lkey = wr->sg_list[i].lkey;
	}
}

/* Fill a send queue slot from @wr, as softrvt_fill_swqe_sges() says. */
static void softrvt_fill_swqe(struct softrvt_qp *qp, struct softrvt_swqe *wqe,
			      const struct ib_send_wr *wr, u32 len,
			      bool is_inline, const char *user_inline)
{
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	if (qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		wqe->send_flags |= IB_SEND_SIGNALED;
	wqe->imm_data = wr->ex.imm_data;
	wqe->length = len;
	wqe->local_done = false;
	wqe->xrc_srqn = qp->s_xrc_srqn;
	if (softrvt_fill_swqe_nosge(wqe, wr))
		return;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->rkey = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = atomic_wr(wr)->remote_addr;
		wqe->rkey = atomic_wr(wr)->rkey;
		wqe->compare_add = atomic_wr(wr)->compare_add;
		wqe->swap = atomic_wr(wr)->swap;
		wqe->length = sizeof(u64);
		break;
	default:
		break;
	}
	if (softrvt_is_ud_type(qp->ibqp.qp_type)) {
		struct softrvt_ah *ah = softrvt_to_ah(ud_wr(wr)->ah);

		wqe->remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->remote_qkey = ud_wr(wr)->remote_qkey;
		wqe->sl = rdma_ah_get_sl(&ah->attr);
		wqe->av = ah->av;
		wqe->local = ah->local;
	}
	softrvt_fill_swqe_sges(wqe, wr, len, is_inline, user_inline);
}

/* Post a list of WRs; @own: as in softrvt_check_send_wr(). */
static int softrvt_post_wrs(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr, bool own)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	char *user_inline = NULL;
	unsigned long flags;
	int ret = 0;

	for (; wr; wr = wr->next) {
		bool is_inline = (wr->send_flags & IB_SEND_INLINE) &&
				 wr->opcode != IB_WR_RDMA_READ &&
				 !softrvt_wr_is_local_op(wr) &&
				 !softrvt_opcode_is_placement(wr->opcode);
		enum ib_qp_state state;
		u32 next, len;

		ret = softrvt_check_send_wr(qp, wr, own);
		if (!ret)
			ret = softrvt_send_wr_length(wr, &len);
		/* A UD message is one packet: no larger than the path MTU. */
		if (!ret && (qp->ibqp.qp_type == IB_QPT_UD ||
			     qp->ibqp.qp_type == IB_QPT_GSI) &&
		    len > ib_mtu_enum_to_int(READ_ONCE(rdi->port_mtu)))
			ret = -EINVAL;
		if (!ret && is_inline && len > qp->cap.max_inline_data)
			ret = -EINVAL;
		/* User QPs post from the uverbs write path: process context. */
		if (!ret && is_inline && ibqp->uobject) {
			if (!user_inline)
				user_inline = kmalloc(SOFTRVT_MAX_INLINE, GFP_KERNEL);
			ret = user_inline ?
			      softrvt_gather_user_inline(wr, user_inline) : -ENOMEM;
		}
		if (ret)
			break;

		spin_lock_irqsave(&qp->s_lock, flags);
		state = qp->state;
		next = softrvt_sq_next(qp, qp->s_head);
		if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
		    state == IB_QPS_RTR)
			ret = -EINVAL;
		else if (next == qp->s_tail)
			ret = -ENOMEM;
		else
			softrvt_fill_swqe(qp, softrvt_get_swqe_ptr(qp, qp->s_head), wr,
					  len, is_inline, user_inline);
		if (!ret)
			qp->s_head = next;
		spin_unlock_irqrestore(&qp->s_lock, flags);
		if (ret)
			break;
	}
	kfree(user_inline);
	if (ret)
		*bad_wr = wr;
	/* Only a message to this device is faster for it: see softrvt_run_send(). */
	if (ibqp->uobject && READ_ONCE(qp->s_local))
		softrvt_run_send(qp);
	else
		softrvt_schedule_send(qp);
	return ret;
}

/**
 * softrvt_post_send - post send WRs (ib_device_ops.post_send)
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to the first WR not posted
 *
 * Each WR is checked and copied into the send queue; the send engine then
 * runs them in order.  Allowed in RTS, in SQD (run after the return to
 * RTS), and in SQE and ERR (flushed).  Any context for kernel QPs.
 * IB_WR_BIND_MW, IB_WR_FLUSH and IB_WR_ATOMIC_WRITE, which ib_verbs gives
 * no layout, are refused.
 *
 * Return: 0; -EINVAL for a WR the QP cannot take or a QP in the wrong
 * state; -ENOMEM for a full send queue; -EFAULT for unreadable inline data.
 */
int softrvt_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad_wr)
{
	return softrvt_post_wrs(ibqp, wr, bad_wr, false);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_post_send);

/**
 * softrvt_post_own_wr - post one WR that may be in one of softrvt's layouts
 * @ibqp: the QP
 * @wr: the WR, alone, as softrvt_check_send_wr() takes it with @own
 *
 * For the callers below, which check the opcode.  Process context.
 *
 * Return: 0 or a negative errno, as softrvt_post_send().
 */
int softrvt_post_own_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad;

	return softrvt_post_wrs(ibqp, wr, &bad, true);
}

/**
 * softrvt_post_local_wr - post one IB_WR_BIND_MW or IB_WR_LOCAL_INV
 * @ibqp: the QP
 * @wr: the WR, alone; an IB_WR_BIND_MW is the wr of a struct softrvt_bind_wr
 *
 * As softrvt_post_send(), for the memory window WRs of user QPs (see
 * SOFTRVT_METHOD_QP_POST_MW_WR in mw.c).  Process context.
 *
 * Return: 0 or a negative errno, as softrvt_post_send().
 */
int softrvt_post_local_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr)
{
	if (wr->next || (wr->opcode != IB_WR_BIND_MW &&
			 wr->opcode != IB_WR_LOCAL_INV))
		return -EINVAL;
	return softrvt_post_own_wr(ibqp, wr);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_post_local_wr);

/**
 * softrvt_post_recv - post receive WRs to a QP's own ring (ib_device_ops.post_recv)
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to the first WR not posted
 *
 * Any context.  A QP in RESET or attached to an SRQ takes no receives; in
 * ERR the WRs are posted and then flushed, as the IB spec requires
 * (ib_drain_rq() relies on it), by the send engine: the completion
 * handler must not run inside the consumer's post_recv.
 *
 * Return: 0 or a negative errno, see softrvt_rq_post().
 */
int softrvt_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	int ret;

	if (!softrvt_qp_has_rq(qp) || READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	ret = softrvt_rq_post(&qp->r_rq, wr, bad_wr);
	/*
	 * Read the state after posting: a concurrent move to ERR either
	 * flushed after our WQEs went in or is visible here.
	 */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		softrvt_schedule_send(qp);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_post_recv);
