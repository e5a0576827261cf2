// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The send engine.
 *
 * Each QP has a work item that runs its send queue in order and handles
 * the packets its receive path queued.  A WQE for a QP of the same device
 * goes to softrvt_ruc_loopback() (ruc.c), one for the wire to the
 * requester (req.c); local operations are executed here, in queue order.
 *
 * The engine runs in process context, on an unbound workqueue or in the
 * system call of a process posting to a QP of the device, one WQE at a
 * time per QP; it holds no lock while copying.  Each run is budgeted
 * (softrvt_engine()): a message of up to 2 GiB is copied or sent over many
 * runs, so that no caller holds a CPU for long.
 */

#include <linux/jiffies.h>
#include <linux/sizes.h>
#include <linux/workqueue.h>

#include "softrvt.h"
#include "hdr.h"

/*
 * What one run of the engine may do before it yields: WQEs, payload bytes
 * (copied to a QP of the device or sent) and packets sent.  A process with
 * 64 MiB of locked memory can post 64 same-device messages of 2 GiB each
 * (32 SGEs over the same region) or UC messages of millions of packets;
 * a run does a MiB of it, which takes milliseconds, and the workqueue
 * does the rest one run after another, rescheduling between them.
 */
#define SOFTRVT_SEND_BUDGET		64
#define SOFTRVT_SEND_BYTES_BUDGET	SZ_1M
#define SOFTRVT_SEND_PKTS_BUDGET	256
/* Received packets one run of the engine handles. */
#define SOFTRVT_RX_BUDGET		256

static struct workqueue_struct *softrvt_wq;

/* The IB spec's RNR NAK timer encoding (table 45), in microseconds. */
const u32 softrvt_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/**
 * softrvt_ack_timeout - the local ACK timeout of a QP attribute, in jiffies
 * @timeout: the attribute: 4.096 us << timeout (IB spec 9.7.6.1.3)
 *
 * 0 means "wait for ever"; softrvt then waits the longest one, about 2.4 h,
 * rather than never giving up.
 *
 * Return: at least one jiffy.
 */
unsigned long softrvt_ack_timeout(u8 timeout)
{
	u64 ns = 4096ULL << (timeout ? min_t(u8, timeout, 31) : 31);

	return max(nsecs_to_jiffies(ns), 1UL);
}

/**
 * softrvt_engine_init - create the engine's workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int softrvt_engine_init(void)
{
	softrvt_wq = alloc_workqueue("softrvt", WQ_UNBOUND, 0);
	return softrvt_wq ? 0 : -ENOMEM;
}

/**
 * softrvt_engine_exit - destroy the engine's workqueue; every QP is gone
 */
void softrvt_engine_exit(void)
{
	destroy_workqueue(softrvt_wq);
}

/**
 * softrvt_schedule_send - make the QP's send engine run
 * @qp: the QP
 *
 * Any context.
 */
void softrvt_schedule_send(struct softrvt_qp *qp)
{
	queue_work(softrvt_wq, &qp->send_work);
}

/**
 * softrvt_rnr_timer_fn - an RNR wait is over: retry the WQE
 * @t: the QP's rnr_timer
 */
void softrvt_rnr_timer_fn(struct timer_list *t)
{
	struct softrvt_qp *qp = timer_container_of(qp, t, rnr_timer);

	set_bit(SOFTRVT_S_RNR_DONE, &qp->s_flags);
	softrvt_schedule_send(qp);
}

static enum ib_wc_opcode softrvt_wc_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_FLUSH:
		return IB_WC_FLUSH;
	case IB_WR_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/**
 * softrvt_send_complete - report a finished send WQE
 * @qp: the QP
 * @wqe: a copy of the WQE, already off the send queue
 * @status: how it ended
 *
 * Successful unsignaled WQEs complete silently; errors always complete.
 */
void softrvt_send_complete(struct softrvt_qp *qp, struct softrvt_swqe *wqe,
			   enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = softrvt_wc_opcode(wqe->opcode),
		.byte_len = wqe->length,
		.qp = &qp->ibqp,
		.port_num = 1,
	};

	if (status != IB_WC_SUCCESS)
		qp->comp.failed = true;
	else if (!(wqe->send_flags & IB_SEND_SIGNALED))
		return;
	softrvt_cq_enter(softrvt_to_cq(qp->ibqp.send_cq), &wc, false);
}

/* Whether a WQE's peer is on this device: no packets then. */
static bool softrvt_engine_is_local(const struct softrvt_qp *qp,
				    const struct softrvt_swqe *wqe)
{
	return softrvt_is_ud_type(qp->ibqp.qp_type) ? wqe->local : qp->s_local;
}

/*
 * Whether a connected QP may act on a packet from the wire.  Once it has a
 * path (RTR and later) only its peer may talk to it; a QP whose peer is on
 * this device takes nothing from the wire at all, as its peer's packets
 * never go there (and a forged one would meet the receive state of the
 * same-device path).
 */
static bool softrvt_engine_pkt_is_peers(struct softrvt_qp *qp, struct sk_buff *skb)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (softrvt_is_ud_type(qp->ibqp.qp_type) || state == IB_QPS_RESET || state == IB_QPS_INIT)
		return true;
	return !READ_ONCE(qp->s_local) && softrvt_pkt_on_path(skb, &qp->s_av);
}

/*
 * Handle the packets the receive path queued: the ICRC of those it left
 * unchecked first (recv.c), then requests go to the responder, answers to
 * the requester.  Return: whether some are left to handle now (none while
 * the device is held, softrvt_rx_hold()).
 */
static bool softrvt_engine_rx(struct softrvt_qp *qp)
{
	/*
	 * None queued, or the device held for a test: softrvt_rx_hold() runs
	 * the engine again on release, softrvt_rx_queue() for a packet queued
	 * after this look.
	 */
	bool take = !skb_queue_empty_lockless(&qp->r_pkts) &&
		    !READ_ONCE(softrvt_to_dev(qp->ibqp.device)->rx_hold);
	int budget = take ? SOFTRVT_RX_BUDGET : 0;
	struct sk_buff *skb;

	while (budget-- > 0 && (skb = softrvt_rx_dequeue(qp))) {
		if (!softrvt_rx_icrc_ok(skb)) {
			softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_ICRC, softrvt_pkt_of(skb));
			kfree_skb(skb);
			continue;
		}
		if (!softrvt_engine_pkt_is_peers(qp, skb)) {
			softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_ADDR, softrvt_pkt_of(skb));
			kfree_skb(skb);
			continue;
		}
		/* Only RC and XRC have them: softrvt_parse_bth() saw to it. */
		if (softrvt_opcode_is_response(softrvt_pkt_of(skb)->opcode)) {
			softrvt_comp_packet(qp, skb);
		} else if (softrvt_resp_can_take(qp, skb)) {
			softrvt_resp_packet(qp, skb);
		} else {
			softrvt_rx_unget(qp, skb);
			break;
		}
		consume_skb(skb);
	}
	if (softrvt_resp_read_answer(qp))
		return true;
	softrvt_resp_flush_ack(qp);
	return take && !skb_queue_empty_lockless(&qp->r_pkts);
}

/* The RC requester on the wire: send, and see whether SQD is reached. */
static void softrvt_engine_rc_wire(struct softrvt_qp *qp)
{
	bool drained;

	if (test_and_clear_bit(SOFTRVT_S_RNR_DONE, &qp->s_flags))
		qp->req.rnr_wait = false;
	if (test_and_clear_bit(SOFTRVT_S_ACK_TIMEOUT, &qp->s_flags) &&
	    softrvt_req_ack_timer_due(qp))
		softrvt_req_timeout(qp);
	softrvt_req_go_back(qp);
	softrvt_req_send_rc(qp);
	softrvt_comp_advance(qp);

	spin_lock_irq(&qp->s_lock);
	drained = qp->state == IB_QPS_SQD && qp->s_draining &&
		  qp->s_tail == qp->req.cur && !qp->req.cur_off;
	if (drained)
		qp->s_draining = false;
	spin_unlock_irq(&qp->s_lock);
	if (drained)
		softrvt_qp_event(qp, IB_EVENT_SQ_DRAINED);
}

/*
 * IB_EVENT_QP_LAST_WQE_REACHED tells the consumer of an SRQ that a QP in
 * ERR takes no more WQEs from it and that every completion of a WQE it
 * took is on the CQ: the consumer may then reap them and destroy the QP.
 * Two kinds of engine take SRQ WQEs for a QP, and neither may do so once
 * the event is out:
 *
 * - its own, for packets from the wire.  This is it, in ERR: the WQE a
 *   half-received message held was just flushed, the packets it took
 *   before ERR were handled in earlier runs (the engine never runs
 *   twice at once), and the responder drops every packet from now on,
 *   as ERR is left only for RESET.
 *
 * - the engine of a sender on this device, in softrvt_ruc_loopback(), which
 *   may have read the state just before ERR was entered and be copying
 *   into a WQE it took.  A sender counts itself in r_senders, with a full
 *   barrier, before it reads the state, and leaves after its receive
 *   completion; the move to ERR stores the state, then a full barrier,
 *   then sets SOFTRVT_S_LAST_WQE and schedules this engine, which reads the
 *   flag, then a full barrier, then r_senders.  Of the two, one
 *   at least sees the other's store: the sender sees ERR and takes
 *   nothing, or this engine sees the sender and waits.  A sender leaving
 *   decrements, with a full barrier, then reads the state, and
 *   schedules this engine if it is ERR: by the same pairing, an engine
 *   that counted it finds it gone on that later run.
 *
 * A sender that looks the QP up after ERR counts itself too but takes
 * nothing; it only delays the event to its own departure.
 */
static void softrvt_engine_last_wqe(struct softrvt_qp *qp)
{
	if (!test_bit(SOFTRVT_S_LAST_WQE, &qp->s_flags))
		return;
	/* The flag came after ERR: r_senders is read after both. */
	smp_mb();
	if (atomic_read(&qp->r_senders))
		return;
	if (test_and_clear_bit(SOFTRVT_S_LAST_WQE, &qp->s_flags))
		softrvt_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/**
 * softrvt_wqe_is_local_op - whether a send WQE acts on this device only
 * @wqe: the WQE
 *
 * Return: true for IB_WR_REG_MR, IB_WR_LOCAL_INV and IB_WR_BIND_MW, which
 * send nothing.
 */
bool softrvt_wqe_is_local_op(const struct softrvt_swqe *wqe)
{
	return wqe->opcode == IB_WR_REG_MR || wqe->opcode == IB_WR_LOCAL_INV ||
	       wqe->opcode == IB_WR_BIND_MW;
}

/**
 * softrvt_local_op - execute IB_WR_REG_MR, IB_WR_LOCAL_INV or IB_WR_BIND_MW
 * @qp: the QP, from its send engine, in send queue order
 * @wqe: the WQE; executed once, even if the requester goes back over it
 *
 * Return: the WQE's completion status; an error moves the QP to ERR.
 * LOCAL_INV fails with IB_WC_LOC_PROT_ERR for a key that names no MR or
 * window of the QP's PD, as rdmavt's does, and IB_WC_MW_BIND_ERR for one
 * that cannot be invalidated.
 */
enum ib_wc_status softrvt_local_op(struct softrvt_qp *qp, struct softrvt_swqe *wqe)
{
	wqe->local_done = true;
	if (wqe->opcode == IB_WR_REG_MR)
		return softrvt_mr_fast_reg(qp, wqe->reg_mr, wqe->rkey,
					   wqe->reg_access);
	if (wqe->opcode == IB_WR_BIND_MW)
		return softrvt_mw_bind(qp, wqe);
	switch (softrvt_rkey_invalidate(qp, wqe->rkey)) {
	case 0:
		return IB_WC_SUCCESS;
	case -EACCES:
		return IB_WC_LOC_PROT_ERR;
	default:
		return IB_WC_MW_BIND_ERR;
	}
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_local_op);

/*
 * The WQE at s_tail for this run of the engine, *@run saying whether the
 * QP's state lets it run (else it is flushed); NULL when the run is over:
 * the queue is empty, or the state holds it, and then SQD is reached
 * (IB_EVENT_SQ_DRAINED, once).
 */
static struct softrvt_swqe *softrvt_engine_next(struct softrvt_qp *qp,
						bool *run)
{
	struct softrvt_swqe *wqe;
	enum ib_qp_state state;

	spin_lock_irq(&qp->s_lock);
	state = qp->state;
	/* A message begun in RTS is sent whole before SQD is reached. */
	*run = state == IB_QPS_RTS ||
	       (state == IB_QPS_SQD && (qp->req.cur_off || qp->s_peer));
	if (qp->s_tail == qp->s_head ||
	    (!*run && state != IB_QPS_ERR && state != IB_QPS_SQE)) {
		/* The WQE in flight, if any, is done: SQD is reached. */
		bool drained = state == IB_QPS_SQD && qp->s_draining;

		qp->s_draining = false;
		spin_unlock_irq(&qp->s_lock);
		if (drained)
			softrvt_qp_event(qp, IB_EVENT_SQ_DRAINED);
		return NULL;
	}
	if (!qp->comp.retry_loaded) {
		qp->comp.rnr_retry = qp->attr.rnr_retry;
		qp->comp.retry = qp->attr.retry_cnt;
		qp->comp.retry_loaded = true;
	}
	wqe = softrvt_get_swqe_ptr(qp, qp->s_tail);
	spin_unlock_irq(&qp->s_lock);
	return wqe;
}

/* One WQE's turn: flushed, executed here, or sent to its responder. */
static enum softrvt_ruc_result
softrvt_engine_wqe(struct softrvt_qp *qp, struct softrvt_swqe *wqe, bool run,
		   struct softrvt_budget *budget, enum ib_wc_status *status,
		   u8 *rnr_timer)
{
	if (!run) {
		softrvt_ruc_drop_msg(qp, wqe);	/* flushed in ERR or SQE */
		return SOFTRVT_RUC_DONE;
	}
	if (softrvt_wqe_is_local_op(wqe)) {
		*status = softrvt_local_op(qp, wqe);
		return SOFTRVT_RUC_DONE;
	}
	if (qp->s_peer || softrvt_engine_is_local(qp, wqe))
		return softrvt_ruc_loopback(qp, wqe, budget, status, rnr_timer);
	return softrvt_req_send_unreliable(qp, wqe, budget, status);
}

/* What the engine does with a WQE after its turn. */
enum softrvt_engine_step {
	SOFTRVT_STEP_RETIRE,	/* complete it with its status */
	SOFTRVT_STEP_AGAIN,	/* the QP moved on meanwhile: look again */
	SOFTRVT_STEP_WAIT,	/* retry it when the QP's timer fires */
};

/*
 * After an RNR NAK (SOFTRVT_RUC_RNR) or a response that never came
 * (SOFTRVT_RUC_RETRY), with s_lock held: wait on the QP's timer while
 * retries are left, else retire the WQE with the error that ran out.
 */
static enum softrvt_engine_step
softrvt_engine_retry(struct softrvt_qp *qp, enum softrvt_ruc_result res,
		     u8 rnr_timer, enum ib_wc_status *status)
{
	lockdep_assert_held(&qp->s_lock);
	if (res != SOFTRVT_RUC_RNR && res != SOFTRVT_RUC_RETRY)
		return SOFTRVT_STEP_RETIRE;
	if (qp->state != IB_QPS_RTS)
		return SOFTRVT_STEP_AGAIN;
	if (res == SOFTRVT_RUC_RNR) {
		if (!qp->comp.rnr_retry) {
			*status = IB_WC_RNR_RETRY_EXC_ERR;
			return SOFTRVT_STEP_RETIRE;
		}
		if (qp->comp.rnr_retry != SOFTRVT_RNR_RETRY_INFINITE)
			qp->comp.rnr_retry--;
		mod_timer(&qp->rnr_timer, jiffies +
			  usecs_to_jiffies(softrvt_rnr_usec[rnr_timer & 31]));
		return SOFTRVT_STEP_WAIT;
	}
	if (!qp->comp.retry) {
		*status = IB_WC_RETRY_EXC_ERR;
		return SOFTRVT_STEP_RETIRE;
	}
	qp->comp.retry--;
	mod_timer(&qp->rnr_timer, jiffies + softrvt_ack_timeout(qp->attr.timeout));
	return SOFTRVT_STEP_WAIT;
}

/*
 * Take the WQE at s_tail off the send queue, with s_lock held: a copy of
 * what its completion needs goes to @done, as the slot is reused now.
 */
static void softrvt_engine_take(struct softrvt_qp *qp,
				const struct softrvt_swqe *wqe,
				struct softrvt_swqe *done)
{
	lockdep_assert_held(&qp->s_lock);
	*done = *wqe;
	qp->s_tail = softrvt_sq_next(qp, qp->s_tail);
	qp->req.cur = qp->s_tail;
	qp->req.cur_off = 0;
	qp->comp.retry_loaded = false;
}

/*
 * Complete a WQE taken off the send queue.  An RC error breaks the
 * connection, and so does a failed memory registration; otherwise on UC
 * and UD only the send queue stops (SQE), until the consumer moves it to
 * RTS.
 */
static void softrvt_engine_complete(struct softrvt_qp *qp,
				    struct softrvt_swqe *done,
				    enum ib_wc_status status)
{
	softrvt_send_complete(qp, done, status);
	if (status == IB_WC_SUCCESS || status == IB_WC_WR_FLUSH_ERR)
		return;
	ibdev_dbg(qp->ibqp.device, "QP %u: WQE failed (%s)\n",
		  qp->ibqp.qp_num, ib_wc_status_msg(status));
	if (softrvt_is_rc_req(qp->ibqp.qp_type) || softrvt_wqe_is_local_op(done))
		softrvt_qp_set_error(qp, 0);
	else
		softrvt_qp_set_sq_error(qp);
}

/*
 * The engine of a QP, under its engine_lock: it handles received packets
 * first, then runs WQEs from s_tail in order while the QP is in RTS,
 * flushes them and the receive queue in ERR, and waits out RNR NAKs on
 * the QP's timer.  An RC QP whose peer is on the wire keeps WQEs until
 * they are acknowledged (req.c, comp.c).
 *
 * A run does at most SOFTRVT_SEND_*BUDGET of work and, when there is more,
 * queues the next run and returns: the worker reschedules between two
 * (process_one_work()), and a poster's system call returns.  A WQE the
 * budget ran out within goes on in the next run, from req.cur_off; the
 * queue is drained in SQD only once it is done.  The engine always runs
 * in process context, but a run holds no CPU long enough to need
 * cond_resched().
 */
static void softrvt_engine(struct softrvt_qp *qp)
{
	enum ib_qp_state cur_state = READ_ONCE(qp->state);
	struct softrvt_budget budget = {
		.wqes = SOFTRVT_SEND_BUDGET,
		.bytes = SOFTRVT_SEND_BYTES_BUDGET,
		.pkts = SOFTRVT_SEND_PKTS_BUDGET,
	};
	bool more_rx;

	lockdep_assert_held(&qp->engine_lock);
	if (cur_state == IB_QPS_RESET) {
		/* A responder's destroy may be waiting for it. */
		softrvt_ruc_reset(qp);
		softrvt_rx_purge(qp);
		return;
	}
	/*
	 * Receives are flushed here rather than in softrvt_post_recv(), where a
	 * consumer may hold a lock that its completion handler takes, and
	 * rather than where the QP entered ERR: only the engine knows the
	 * WQE a half-received message holds, which goes first.
	 */
	if (cur_state == IB_QPS_ERR) {
		softrvt_resp_flush(qp);
		softrvt_qp_flush_rq(qp);
		softrvt_engine_last_wqe(qp);
	}
	more_rx = softrvt_engine_rx(qp);
	if (more_rx)
		softrvt_schedule_send(qp);
	/*
	 * In ERR the answers that reached the QP go before the flush of what
	 * it sent (softrvt_comp_may_complete()); while a test holds them, so
	 * does the flush: the release runs the engine again.
	 */
	if (cur_state == IB_QPS_ERR && !skb_queue_empty_lockless(&qp->r_pkts) &&
	    READ_ONCE(softrvt_to_dev(qp->ibqp.device)->rx_hold))
		return;
	if (softrvt_is_rc_req(qp->ibqp.qp_type) && !qp->s_local && !qp->s_peer &&
	    READ_ONCE(qp->state) != IB_QPS_ERR) {
		softrvt_engine_rc_wire(qp);
		return;
	}

	while (budget.wqes && budget.bytes && budget.pkts) {
		enum ib_wc_status status = IB_WC_WR_FLUSH_ERR;
		enum softrvt_engine_step step;
		enum softrvt_ruc_result res;
		struct softrvt_swqe done;
		struct softrvt_swqe *wqe;
		u8 rnr_timer = 0;
		bool run;

		wqe = softrvt_engine_next(qp, &run);
		if (!wqe)
			return;
		budget.wqes--;
		res = softrvt_engine_wqe(qp, wqe, run, &budget, &status,
					 &rnr_timer);
		if (res == SOFTRVT_RUC_MORE)
			break;

		spin_lock_irq(&qp->s_lock);
		step = softrvt_engine_retry(qp, res, rnr_timer, &status);
		if (step == SOFTRVT_STEP_RETIRE)
			softrvt_engine_take(qp, wqe, &done);
		spin_unlock_irq(&qp->s_lock);
		if (step == SOFTRVT_STEP_WAIT)
			return;
		if (step == SOFTRVT_STEP_RETIRE)
			softrvt_engine_complete(qp, &done, status);
	}
	softrvt_schedule_send(qp);
}

/**
 * softrvt_send_work - the engine of a QP, run by the workqueue
 * @work: the QP's send_work
 *
 * Waits for a run in a poster's context (softrvt_run_send()) to end: the
 * engine never runs twice at once.
 */
void softrvt_send_work(struct work_struct *work)
{
	struct softrvt_qp *qp = container_of(work, struct softrvt_qp, send_work);

	mutex_lock(&qp->engine_lock);
	softrvt_engine(qp);
	mutex_unlock(&qp->engine_lock);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_send_work);

/**
 * softrvt_run_send - run a QP's engine now, in the caller's context
 * @qp: the QP
 *
 * For the post_send of a user QP whose peer is on this device: the WRs
 * a process posts run in its own system call, as rdma_rxe runs them,
 * rather than after a worker wakes up, which cost a message most of its
 * latency.  On the wire it bought nothing measurable and let a sender
 * outrun its receiver (RNR NAKs): wire QPs keep the workqueue.  A run in
 * progress elsewhere may have looked at the send queue before the new
 * WRs were there: the workqueue runs the engine again after it.  Process
 * context, no lock held.
 */
void softrvt_run_send(struct softrvt_qp *qp)
{
	might_sleep();
	if (!mutex_trylock(&qp->engine_lock)) {
		softrvt_schedule_send(qp);
		return;
	}
	softrvt_engine(qp);
	mutex_unlock(&qp->engine_lock);
}

/**
 * softrvt_sync_send - wait for the QP's engine runs started so far to end
 * @qp: the QP
 *
 * Those of the workqueue and those in a poster's context alike.  Process
 * context.
 */
void softrvt_sync_send(struct softrvt_qp *qp)
{
	flush_work(&qp->send_work);
	mutex_lock(&qp->engine_lock);
	mutex_unlock(&qp->engine_lock);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sync_send);
