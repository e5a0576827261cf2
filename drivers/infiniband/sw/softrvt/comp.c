// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC requester's answers: ACKs, NAKs, RDMA READ responses and atomic
 * ACKs complete send WQEs, in order.
 *
 * comp.acked_psn only moves forward.  An ACK acknowledges every PSN up to
 * its own, except those of a READ or atomic, whose data only their
 * responses bring: an ACK past such a WQE means its responses were lost,
 * and the requester goes back to it.  Answers to PSNs outside the window
 * in flight are duplicates and dropped.
 *
 * READ responses and atomic ACKs are placed as they come, in any order,
 * and remembered in comp.rd_seen; comp.acked_psn moves over them once the PSNs
 * before them are in.  A gap is taken for a loss only when answers
 * SOFTRVT_REORDER_SLACK PSNs past it arrived, so that a reordered network
 * does not make the responder read everything again.
 *
 * Going back is decided while answers are handled but done by the
 * engine after the batch (softrvt_req_go_back()): an answer later in the
 * batch may fill the gap.
 *
 * Runs in the QP's engine, in process context.
 */

#include <linux/jiffies.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/* Answers this many PSNs past a gap make it a loss rather than reordering. */
#define SOFTRVT_REORDER_SLACK	32
static_assert(SOFTRVT_REORDER_SLACK < SOFTRVT_MAX_INFLIGHT);

static bool softrvt_comp_sent(const struct softrvt_qp *qp, u32 i)
{
	return i != qp->req.cur || qp->req.cur_off;
}

/**
 * softrvt_comp_done - complete the WQE at s_tail
 * @qp: the RC requester
 * @status: its status; an error moves the QP to ERR
 */
void softrvt_comp_done(struct softrvt_qp *qp, enum ib_wc_status status)
{
	struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(qp, qp->s_tail);
	struct softrvt_swqe done;

	spin_lock_irq(&qp->s_lock);
	done = *wqe;
	if (qp->req.cur == qp->s_tail) {
		qp->req.cur = softrvt_sq_next(qp, qp->req.cur);
		qp->req.cur_off = 0;
	}
	qp->s_tail = softrvt_sq_next(qp, qp->s_tail);
	spin_unlock_irq(&qp->s_lock);

	softrvt_send_complete(qp, &done, status);
	if (status != IB_WC_SUCCESS) {
		ibdev_dbg(qp->ibqp.device,
			  "QP %u: WQE at PSN %u failed (%s): QP to ERR\n",
			  qp->ibqp.qp_num, done.psn, ib_wc_status_msg(status));
		softrvt_req_stop(qp, qp->s_tail);
		timer_delete(&qp->ack_timer);
		softrvt_qp_set_error(qp, 0);
	}
}

/*
 * Every PSN up to @psn is in: comp.acked_psn moves there and over the
 * answers placed beyond it, and the retry budgets start again.  A gap
 * left behind is still a loss if answers SOFTRVT_REORDER_SLACK past it are
 * in, or the responder took requests that far past it.
 */
static void softrvt_comp_progress(struct softrvt_qp *qp, u32 psn)
{
	u32 slack_end;
	u32 run;

	if (softrvt_psn_cmp(psn, qp->comp.acked_psn) <= 0)
		return;
	qp->comp.rd_seen = softrvt_psn_map_shift(qp->comp.rd_seen,
						 (psn - qp->comp.acked_psn) &
						 SOFTRVT_PSN_MASK);
	run = softrvt_psn_map_run(qp->comp.rd_seen);
	qp->comp.rd_seen = softrvt_psn_map_shift(qp->comp.rd_seen, run);
	qp->comp.acked_psn = softrvt_psn_add(psn, run);
	softrvt_req_rd_retire(qp);
	qp->comp.retry = qp->attr.retry_cnt;
	qp->comp.rnr_retry = qp->attr.rnr_retry;
	qp->req.rewound = false;
	qp->req.backoff = 0;
	if (softrvt_psn_cmp(qp->comp.ack_hint, qp->comp.acked_psn) < 0)
		qp->comp.ack_hint = qp->comp.acked_psn;
	slack_end = softrvt_psn_add(qp->comp.acked_psn, SOFTRVT_REORDER_SLACK);
	qp->comp.go_back = softrvt_psn_map_shift(qp->comp.rd_seen,
						 SOFTRVT_REORDER_SLACK) ||
			softrvt_psn_cmp(qp->comp.ack_hint, slack_end) >= 0;
	if (qp->comp.go_back)
		qp->comp.go_back_why = SOFTRVT_RESEND_GAP;
	if (qp->s_tail != qp->req.cur || qp->req.cur_off)
		softrvt_req_arm_ack_timer(qp);
}

/*
 * Whether answers may still complete WQEs.  In ERR they may until the
 * first WQE completes in error: the engine run that flushes the queue
 * handles the answers that reached the QP before it, and an ACK among
 * them is the peer's word that the message arrived.  A consumer that
 * moves the QP to ERR as soon as its peer disconnects (iSER after its
 * logout response) would otherwise see that response flushed although the
 * peer took it.  After an error, every later WQE flushes.  READ data is
 * not placed in ERR (softrvt_comp_rd_answer()): the READ flushes.
 */
static bool softrvt_comp_may_complete(const struct softrvt_qp *qp)
{
	return READ_ONCE(qp->state) != IB_QPS_ERR || !qp->comp.failed;
}

/**
 * softrvt_comp_advance - complete the WQEs acknowledged so far
 * @qp: the RC requester
 *
 * A WQE that failed, locally or by a NAK, completes with its error once
 * everything before it is acknowledged.
 */
void softrvt_comp_advance(struct softrvt_qp *qp)
{
	while (softrvt_comp_sent(qp, qp->s_tail) &&
	       softrvt_comp_may_complete(qp)) {
		struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(qp, qp->s_tail);

		if (wqe->wire_status != IB_WC_SUCCESS) {
			if (softrvt_psn_cmp(softrvt_psn_add(qp->comp.acked_psn, 1),
					    wqe->psn) >= 0)
				softrvt_comp_done(qp, wqe->wire_status);
			return;
		}
		if (softrvt_psn_cmp(wqe->lpsn, qp->comp.acked_psn) > 0)
			return;
		softrvt_comp_done(qp, IB_WC_SUCCESS);
	}
	if (qp->s_tail == qp->req.cur && !qp->req.cur_off)
		timer_delete(&qp->ack_timer);
}

/*
 * Go back to the oldest PSN not in, once until the next progress: the
 * answers still on their way to the old transmission would each ask for
 * it again.
 */
static void softrvt_comp_rewind(struct softrvt_qp *qp, enum softrvt_resend_why why)
{
	if (!qp->req.rewound) {
		qp->comp.go_back = true;
		qp->comp.go_back_why = why;
	}
}

/*
 * The responder has accepted every PSN up to @psn.  A READ or atomic
 * whose answers are not all in stops the walk: only they acknowledge
 * it, and if @lost, the ACK says some of them were lost.
 */
static void softrvt_comp_ack(struct softrvt_qp *qp, u32 psn, bool lost)
{
	u32 i = qp->s_tail;

	/* What the walk cannot take now is taken once the READ is in. */
	if (softrvt_psn_cmp(psn, qp->comp.ack_hint) > 0)
		qp->comp.ack_hint = psn;

	while (softrvt_comp_sent(qp, i)) {
		struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS ||
		    softrvt_psn_cmp(wqe->psn, psn) > 0)
			break;
		/* A WQE all in already waits for softrvt_comp_advance(). */
		if (softrvt_psn_cmp(wqe->lpsn, qp->comp.acked_psn) > 0) {
			if (softrvt_wqe_is_rd_atomic(wqe)) {
				softrvt_comp_progress(qp, softrvt_psn_add(wqe->psn,
									  SOFTRVT_PSN_MASK));
				if (lost &&
				    softrvt_psn_cmp(psn, qp->comp.acked_psn) > 0)
					softrvt_comp_rewind(qp, SOFTRVT_RESEND_GAP);
				return;
			}
			if (softrvt_psn_cmp(wqe->lpsn, psn) > 0) {
				softrvt_comp_progress(qp, psn);
				return;
			}
			softrvt_comp_progress(qp, wqe->lpsn);
		}
		if (i == qp->req.cur)
			break;
		i = softrvt_sq_next(qp, i);
	}
}

static enum ib_wc_status softrvt_nak_status(u8 code)
{
	switch (code) {
	case SOFTRVT_NAK_INV_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	case SOFTRVT_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case SOFTRVT_NAK_INV_RD_REQ:
		return IB_WC_REM_INV_RD_REQ_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

/*
 * A NAK failed the WQE holding @psn: it completes with @status once the
 * WQEs before it are in (softrvt_comp_advance()); a READ before it may still
 * have responses on their way.  Nothing from it on is sent: the
 * responder is in error.
 */
static void softrvt_comp_fail(struct softrvt_qp *qp, u32 psn, enum ib_wc_status status)
{
	u32 i = qp->s_tail;

	while (softrvt_comp_sent(qp, i)) {
		struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS)
			break;
		if (softrvt_psn_cmp(psn, wqe->lpsn) <= 0) {
			if (softrvt_psn_cmp(psn, wqe->psn) < 0)
				break;
			wqe->wire_status = status;
			softrvt_req_stop(qp, i);
			return;
		}
		if (i == qp->req.cur)
			break;
		i = softrvt_sq_next(qp, i);
	}
	/* No WQE holds it: fail the oldest, which cannot complete anyway. */
	if (softrvt_comp_sent(qp, qp->s_tail))
		softrvt_comp_done(qp, status);
}

static void softrvt_comp_aeth(struct softrvt_qp *qp, const struct softrvt_pkt *pkt,
			      u32 aeth)
{
	u8 syndrome = aeth >> 24;
	u8 value = syndrome & SOFTRVT_AETH_VALUE_MASK;
	u32 psn = pkt->psn;

	trace_softrvt_ack_rcvd(qp, psn, syndrome, aeth & SOFTRVT_BTH_PSN_MASK);

	switch (syndrome & SOFTRVT_AETH_TYPE_MASK) {
	case SOFTRVT_AETH_ACK:
		softrvt_comp_ack(qp, psn, true);
		break;
	case SOFTRVT_AETH_RNR_NAK:
		softrvt_qp_count(qp, SOFTRVT_CNT_RNR_NAKS_RCVD, 1);
		softrvt_comp_ack(qp, softrvt_psn_add(psn, SOFTRVT_PSN_MASK), true);
		softrvt_comp_advance(qp);
		if (!softrvt_comp_sent(qp, qp->s_tail))
			break;
		if (!qp->comp.rnr_retry) {
			softrvt_comp_fail(qp, psn, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->comp.rnr_retry != SOFTRVT_RNR_RETRY_INFINITE)
			qp->comp.rnr_retry--;
		/* Not past @psn: a READ before it may still be unanswered. */
		softrvt_req_rewind(qp, softrvt_psn_add(qp->comp.acked_psn, 1),
				   SOFTRVT_RESEND_RNR_NAK);
		qp->comp.go_back = false;
		qp->req.rnr_wait = true;
		timer_delete(&qp->ack_timer);
		mod_timer(&qp->rnr_timer,
			  jiffies + usecs_to_jiffies(softrvt_rnr_usec[value]));
		break;
	case SOFTRVT_AETH_NAK:
		softrvt_comp_ack(qp, softrvt_psn_add(psn, SOFTRVT_PSN_MASK), true);
		softrvt_comp_advance(qp);
		if (value == SOFTRVT_NAK_PSN_SEQ) {
			softrvt_qp_count(qp, SOFTRVT_CNT_SEQ_NAKS_RCVD, 1);
			softrvt_comp_rewind(qp, SOFTRVT_RESEND_SEQ_NAK);
			break;
		}
		softrvt_qp_count(qp, SOFTRVT_CNT_ERR_NAKS_RCVD, 1);
		softrvt_comp_fail(qp, psn, softrvt_nak_status(value));
		break;
	default:
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_HDR, pkt);
		break;
	}
}

/* The sent WQE, not failed, that holds @psn. */
static struct softrvt_swqe *softrvt_comp_wqe_at(struct softrvt_qp *qp, u32 psn)
{
	u32 i = qp->s_tail;

	while (softrvt_comp_sent(qp, i)) {
		struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS ||
		    softrvt_psn_cmp(psn, wqe->psn) < 0)
			return NULL;
		if (softrvt_psn_cmp(psn, wqe->lpsn) <= 0)
			return wqe;
		if (i == qp->req.cur)
			break;
		i = softrvt_sq_next(qp, i);
	}
	return NULL;
}

/* The sent READ or atomic WQE that an answer with @psn belongs to. */
static struct softrvt_swqe *softrvt_comp_rd_wqe(struct softrvt_qp *qp, u32 psn)
{
	struct softrvt_swqe *wqe = softrvt_comp_wqe_at(qp, psn);

	return wqe && softrvt_wqe_is_rd_atomic(wqe) ? wqe : NULL;
}

/*
 * A FLUSH or ATOMIC_WRITE is answered with a READ response without
 * payload, which acknowledges it as an ACK would (IBA 1.5 annex A19).
 */
static bool softrvt_comp_is_placement_ack(struct softrvt_qp *qp,
					  const struct softrvt_pkt *pkt)
{
	struct softrvt_swqe *wqe;

	if ((pkt->opcode & 0x1f) != IB_OPCODE_RDMA_READ_RESPONSE_ONLY ||
	    pkt->payload_len)
		return false;
	wqe = softrvt_comp_wqe_at(qp, pkt->psn);
	return wqe && softrvt_opcode_is_placement(wqe->opcode);
}

/* Check a READ response against its WQE and write its data. */
static enum ib_wc_status softrvt_comp_read_data(struct softrvt_qp *qp,
						struct softrvt_swqe *wqe,
						struct softrvt_pkt *pkt,
						struct sk_buff *skb)
{
	u8 op = pkt->opcode & 0x1f;
	bool last = pkt->psn == wqe->lpsn;
	/* The WQE's own MTU: the netdev's may have changed since it began. */
	u64 off = (u64)((pkt->psn - wqe->psn) & SOFTRVT_PSN_MASK) * wqe->pmtu;

	if (wqe->opcode != IB_WR_RDMA_READ)
		return IB_WC_BAD_RESP_ERR;
	/* A READ is asked for in chunks: each one ends in LAST or ONLY. */
	if (last && op != IB_OPCODE_RDMA_READ_RESPONSE_LAST &&
	    op != IB_OPCODE_RDMA_READ_RESPONSE_ONLY)
		return IB_WC_BAD_RESP_ERR;
	/* Every response but the last is full; none reaches past the WQE. */
	if (off > wqe->length ||
	    pkt->payload_len != (last ? wqe->length - off : wqe->pmtu) ||
	    off + pkt->payload_len > wqe->length)
		return IB_WC_BAD_RESP_ERR;
	if (softrvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
				   wqe->num_sge, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_LOC_PROT_ERR;
	if (qp->s_sge.total_len < wqe->length) {
		softrvt_sge_state_release(&qp->s_sge);
		return IB_WC_LOC_LEN_ERR;
	}
	softrvt_sge_skip(&qp->s_sge, off);
	softrvt_copy_skb_to_sge(&qp->s_sge, skb, pkt->hdr_len, pkt->payload_len);
	softrvt_sge_state_release(&qp->s_sge);
	return IB_WC_SUCCESS;
}

/* Write an atomic's original value where its WQE wants it. */
static enum ib_wc_status softrvt_comp_atomic_data(struct softrvt_qp *qp,
						  struct softrvt_swqe *wqe,
						  const struct softrvt_atmack *atmack)
{
	u64 orig;

	if (wqe->opcode == IB_WR_RDMA_READ)
		return IB_WC_BAD_RESP_ERR;
	if (softrvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
				   wqe->num_sge, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_LOC_PROT_ERR;
	if (qp->s_sge.total_len < sizeof(orig)) {
		softrvt_sge_state_release(&qp->s_sge);
		return IB_WC_LOC_LEN_ERR;
	}
	orig = get_unaligned_be64(&atmack->orig);
	softrvt_copy_to_sge(&qp->s_sge, &orig, sizeof(orig));
	softrvt_sge_state_release(&qp->s_sge);
	return IB_WC_SUCCESS;
}

/*
 * A READ response in @skb (@atmack NULL) or an atomic ACK (@skb NULL):
 * place it, in or out of order.  One that cannot be placed fails its WQE
 * when it is the oldest answer missing; out of order it is dropped and
 * asked again.
 */
static void softrvt_comp_rd_answer(struct softrvt_qp *qp, struct softrvt_pkt *pkt,
				   struct sk_buff *skb,
				   const struct softrvt_atmack *atmack)
{
	u32 psn = pkt->psn;
	enum ib_wc_status status;
	struct softrvt_swqe *wqe;
	u32 gap;

	wqe = softrvt_comp_rd_wqe(qp, psn);
	if (!wqe || softrvt_psn_map_test(qp->comp.rd_seen, qp->comp.acked_psn, psn)) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	/* The responder took every request before this WQE's. */
	softrvt_comp_ack(qp, softrvt_psn_add(wqe->psn, SOFTRVT_PSN_MASK), false);
	softrvt_comp_advance(qp);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		return;

	status = atmack ? softrvt_comp_atomic_data(qp, wqe, atmack) :
			  softrvt_comp_read_data(qp, wqe, pkt, skb);
	gap = (psn - qp->comp.acked_psn - 1) & SOFTRVT_PSN_MASK;
	if (status != IB_WC_SUCCESS) {
		if (!gap && wqe == softrvt_get_swqe_ptr(qp, qp->s_tail))
			softrvt_comp_done(qp, status);
		else
			softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_HDR, pkt);
		return;
	}
	if (!gap) {
		softrvt_comp_progress(qp, psn);
		return;
	}
	softrvt_qp_count(qp, SOFTRVT_CNT_REORDERED_ANSWERS, 1);
	qp->comp.rd_seen = softrvt_psn_map_set(qp->comp.rd_seen, qp->comp.acked_psn, psn);
	if (gap >= SOFTRVT_REORDER_SLACK)
		softrvt_comp_rewind(qp, SOFTRVT_RESEND_GAP);
}

/**
 * softrvt_comp_packet - handle an answer from the responder
 * @qp: the RC requester
 * @skb: the packet, data at the BTH; the caller frees it
 */
void softrvt_comp_packet(struct softrvt_qp *qp, struct sk_buff *skb)
{
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	enum ib_qp_state state = READ_ONCE(qp->state);
	const u8 *hdr = skb->data + sizeof(struct softrvt_bth);
	u8 syndrome = 0;
	u32 aeth = 0;

	if ((state != IB_QPS_RTS && state != IB_QPS_SQD && state != IB_QPS_ERR) ||
	    !softrvt_comp_may_complete(qp)) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_STATE, pkt);
		return;
	}
	if (softrvt_psn_cmp(pkt->psn, qp->comp.acked_psn) <= 0 ||
	    softrvt_psn_cmp(pkt->psn, qp->req.psn) >= 0) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	if (pkt->mask & SOFTRVT_HDR_AETH) {
		aeth = get_unaligned_be32(hdr);
		syndrome = aeth >> 24;
	}
	/* In ERR nothing is resent: a NAK has nothing left to act on. */
	if (state == IB_QPS_ERR &&
	    (syndrome & SOFTRVT_AETH_TYPE_MASK) != SOFTRVT_AETH_ACK) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_STATE, pkt);
		return;
	}

	switch (pkt->opcode & 0x1f) {
	case IB_OPCODE_ACKNOWLEDGE:
		softrvt_comp_aeth(qp, pkt, aeth);
		break;
	case IB_OPCODE_ATOMIC_ACKNOWLEDGE:
		if ((syndrome & SOFTRVT_AETH_TYPE_MASK) != SOFTRVT_AETH_ACK) {
			softrvt_comp_aeth(qp, pkt, aeth);
			break;
		}
		softrvt_comp_rd_answer(qp, pkt, NULL, (const struct softrvt_atmack *)
				       (hdr + sizeof(struct softrvt_aeth)));
		break;
	case IB_OPCODE_RDMA_READ_RESPONSE_FIRST:
	case IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE:
	case IB_OPCODE_RDMA_READ_RESPONSE_LAST:
	case IB_OPCODE_RDMA_READ_RESPONSE_ONLY:
		if (((pkt->mask & SOFTRVT_HDR_AETH) &&
		     (syndrome & SOFTRVT_AETH_TYPE_MASK) != SOFTRVT_AETH_ACK) ||
		    softrvt_comp_is_placement_ack(qp, pkt)) {
			softrvt_comp_aeth(qp, pkt, aeth);
			break;
		}
		softrvt_comp_rd_answer(qp, pkt, skb, NULL);
		break;
	default:
		/* A request opcode: resp.c has it. */
		break;
	}
	if (softrvt_psn_cmp(qp->comp.ack_hint, qp->comp.acked_psn) > 0)
		softrvt_comp_ack(qp, qp->comp.ack_hint, false);
	softrvt_comp_advance(qp);
}
