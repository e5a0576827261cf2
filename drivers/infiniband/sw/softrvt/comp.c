// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC requester's answers: ACKs, NAKs, RDMA READ responses and atomic
 * ACKs complete send WQEs, in order.
 *
 * s_acked_psn only moves forward.  An ACK acknowledges every PSN up to
 * its own, except those of a READ or atomic, whose data only their
 * responses bring: an ACK past such a WQE means its responses were lost,
 * and the requester goes back to it.  Answers to PSNs outside the window
 * in flight are duplicates and dropped.
 *
 * READ responses and atomic ACKs are placed as they come, in any order,
 * and remembered in s_rd_seen; s_acked_psn moves over them once the PSNs
 * before them are in.  A gap is taken for a loss only when answers
 * RVT_REORDER_SLACK PSNs past it arrived, so that a reordered network
 * does not make the responder read everything again.
 *
 * Going back is decided while answers are handled but done by the
 * engine after the batch (rvt_req_go_back()): an answer later in the
 * batch may fill the gap.
 *
 * Runs in the QP's engine, in process context.
 */

#include <linux/jiffies.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/* Answers this many PSNs past a gap make it a loss rather than reordering. */
#define RVT_REORDER_SLACK	32
static_assert(RVT_REORDER_SLACK < RVT_MAX_INFLIGHT);

static bool rvt_comp_sent(const struct rvt_qp *qp, u32 i)
{
	return i != qp->s_cur || qp->s_cur_off;
}

static u32 rvt_comp_next(const struct rvt_qp *qp, u32 i)
{
	return i + 1 == qp->s_size ? 0 : i + 1;
}

/**
 * rvt_comp_done - complete the WQE at s_tail
 * @qp: the RC requester
 * @status: its status; an error moves the QP to ERR
 */
void rvt_comp_done(struct rvt_qp *qp, enum ib_wc_status status)
{
	struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, qp->s_tail);
	struct rvt_swqe done;

	spin_lock_irq(&qp->s_lock);
	done = *wqe;
	if (qp->s_cur == qp->s_tail) {
		qp->s_cur = rvt_comp_next(qp, qp->s_cur);
		qp->s_cur_off = 0;
	}
	qp->s_tail = rvt_comp_next(qp, qp->s_tail);
	spin_unlock_irq(&qp->s_lock);

	rvt_send_complete(qp, &done, status);
	if (status != IB_WC_SUCCESS) {
		ibdev_dbg(qp->ibqp.device,
			  "QP %u: WQE at PSN %u failed (%s): QP to ERR\n",
			  qp->ibqp.qp_num, done.psn, ib_wc_status_msg(status));
		rvt_req_stop(qp, qp->s_tail);
		timer_delete(&qp->ack_timer);
		rvt_qp_set_error(qp, 0);
	}
}

/*
 * Every PSN up to @psn is in: s_acked_psn moves there and over the
 * answers placed beyond it, and the retry budgets start again.  A gap
 * left behind is still a loss if answers RVT_REORDER_SLACK past it are
 * in, or the responder took requests that far past it.
 */
static void rvt_comp_progress(struct rvt_qp *qp, u32 psn)
{
	u32 slack_end;
	u32 run;

	if (rvt_psn_cmp(psn, qp->s_acked_psn) <= 0)
		return;
	qp->s_rd_seen = rvt_psn_map_shift(qp->s_rd_seen,
					  (psn - qp->s_acked_psn) &
					  RVT_PSN_MASK);
	run = rvt_psn_map_run(qp->s_rd_seen);
	qp->s_rd_seen = rvt_psn_map_shift(qp->s_rd_seen, run);
	qp->s_acked_psn = rvt_psn_add(psn, run);
	rvt_req_rd_retire(qp);
	qp->s_retry = qp->attr.retry_cnt;
	qp->s_rnr_retry = qp->attr.rnr_retry;
	qp->s_rewound = false;
	qp->s_backoff = 0;
	if (rvt_psn_cmp(qp->s_ack_hint, qp->s_acked_psn) < 0)
		qp->s_ack_hint = qp->s_acked_psn;
	slack_end = rvt_psn_add(qp->s_acked_psn, RVT_REORDER_SLACK);
	qp->s_go_back = rvt_psn_map_shift(qp->s_rd_seen,
					  RVT_REORDER_SLACK) ||
			rvt_psn_cmp(qp->s_ack_hint, slack_end) >= 0;
	if (qp->s_go_back)
		qp->s_go_back_why = RVT_RESEND_GAP;
	if (qp->s_tail != qp->s_cur || qp->s_cur_off)
		rvt_req_arm_ack_timer(qp);
}

/**
 * rvt_comp_advance - complete the WQEs acknowledged so far
 * @qp: the RC requester
 *
 * A WQE that failed, locally or by a NAK, completes with its error once
 * everything before it is acknowledged.
 */
void rvt_comp_advance(struct rvt_qp *qp)
{
	while (rvt_comp_sent(qp, qp->s_tail) &&
	       READ_ONCE(qp->state) != IB_QPS_ERR) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, qp->s_tail);

		if (wqe->wire_status != IB_WC_SUCCESS) {
			if (rvt_psn_cmp(rvt_psn_add(qp->s_acked_psn, 1),
					wqe->psn) >= 0)
				rvt_comp_done(qp, wqe->wire_status);
			return;
		}
		if (rvt_psn_cmp(wqe->lpsn, qp->s_acked_psn) > 0)
			return;
		rvt_comp_done(qp, IB_WC_SUCCESS);
	}
	if (qp->s_tail == qp->s_cur && !qp->s_cur_off)
		timer_delete(&qp->ack_timer);
}

/*
 * Go back to the oldest PSN not in, once until the next progress: the
 * answers still on their way to the old transmission would each ask for
 * it again.
 */
static void rvt_comp_rewind(struct rvt_qp *qp, enum rvt_resend_why why)
{
	if (!qp->s_rewound) {
		qp->s_go_back = true;
		qp->s_go_back_why = why;
	}
}

/*
 * The responder has accepted every PSN up to @psn.  A READ or atomic
 * whose answers are not all in stops the walk: only they acknowledge
 * it, and if @lost, the ACK says some of them were lost.
 */
static void rvt_comp_ack(struct rvt_qp *qp, u32 psn, bool lost)
{
	u32 i = qp->s_tail;

	/* What the walk cannot take now is taken once the READ is in. */
	if (rvt_psn_cmp(psn, qp->s_ack_hint) > 0)
		qp->s_ack_hint = psn;

	while (rvt_comp_sent(qp, i)) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS ||
		    rvt_psn_cmp(wqe->psn, psn) > 0)
			break;
		/* A WQE all in already waits for rvt_comp_advance(). */
		if (rvt_psn_cmp(wqe->lpsn, qp->s_acked_psn) > 0) {
			if (rvt_wqe_is_rd_atomic(wqe)) {
				rvt_comp_progress(qp, rvt_psn_add(wqe->psn,
								  RVT_PSN_MASK));
				if (lost &&
				    rvt_psn_cmp(psn, qp->s_acked_psn) > 0)
					rvt_comp_rewind(qp, RVT_RESEND_GAP);
				return;
			}
			if (rvt_psn_cmp(wqe->lpsn, psn) > 0) {
				rvt_comp_progress(qp, psn);
				return;
			}
			rvt_comp_progress(qp, wqe->lpsn);
		}
		if (i == qp->s_cur)
			break;
		i = rvt_comp_next(qp, i);
	}
}

static enum ib_wc_status rvt_nak_status(u8 code)
{
	switch (code) {
	case RVT_NAK_INV_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	case RVT_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case RVT_NAK_INV_RD_REQ:
		return IB_WC_REM_INV_RD_REQ_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

/*
 * A NAK failed the WQE holding @psn: it completes with @status once the
 * WQEs before it are in (rvt_comp_advance()); a READ before it may still
 * have responses on their way.  Nothing from it on is sent: the
 * responder is in error.
 */
static void rvt_comp_fail(struct rvt_qp *qp, u32 psn, enum ib_wc_status status)
{
	u32 i = qp->s_tail;

	while (rvt_comp_sent(qp, i)) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS)
			break;
		if (rvt_psn_cmp(psn, wqe->lpsn) <= 0) {
			if (rvt_psn_cmp(psn, wqe->psn) < 0)
				break;
			wqe->wire_status = status;
			rvt_req_stop(qp, i);
			return;
		}
		if (i == qp->s_cur)
			break;
		i = rvt_comp_next(qp, i);
	}
	/* No WQE holds it: fail the oldest, which cannot complete anyway. */
	if (rvt_comp_sent(qp, qp->s_tail))
		rvt_comp_done(qp, status);
}

static void rvt_comp_aeth(struct rvt_qp *qp, const struct rvt_pkt *pkt,
			  u32 aeth)
{
	u8 syndrome = aeth >> 24;
	u8 value = syndrome & RVT_AETH_VALUE_MASK;
	u32 psn = pkt->psn;

	trace_softrvt_ack_rcvd(qp, psn, syndrome, aeth & RVT_BTH_PSN_MASK);

	switch (syndrome & RVT_AETH_TYPE_MASK) {
	case RVT_AETH_ACK:
		rvt_comp_ack(qp, psn, true);
		break;
	case RVT_AETH_RNR_NAK:
		rvt_qp_count(qp, RVT_CNT_RNR_NAKS_RCVD, 1);
		rvt_comp_ack(qp, rvt_psn_add(psn, RVT_PSN_MASK), true);
		rvt_comp_advance(qp);
		if (!rvt_comp_sent(qp, qp->s_tail))
			break;
		if (!qp->s_rnr_retry) {
			rvt_comp_fail(qp, psn, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->s_rnr_retry != RVT_RNR_RETRY_INFINITE)
			qp->s_rnr_retry--;
		/* Not past @psn: a READ before it may still be unanswered. */
		rvt_req_rewind(qp, rvt_psn_add(qp->s_acked_psn, 1),
			       RVT_RESEND_RNR_NAK);
		qp->s_go_back = false;
		qp->s_rnr_wait = true;
		timer_delete(&qp->ack_timer);
		mod_timer(&qp->rnr_timer,
			  jiffies + usecs_to_jiffies(rvt_rnr_usec[value]));
		break;
	case RVT_AETH_NAK:
		rvt_comp_ack(qp, rvt_psn_add(psn, RVT_PSN_MASK), true);
		rvt_comp_advance(qp);
		if (value == RVT_NAK_PSN_SEQ) {
			rvt_qp_count(qp, RVT_CNT_SEQ_NAKS_RCVD, 1);
			rvt_comp_rewind(qp, RVT_RESEND_SEQ_NAK);
			break;
		}
		rvt_qp_count(qp, RVT_CNT_ERR_NAKS_RCVD, 1);
		rvt_comp_fail(qp, psn, rvt_nak_status(value));
		break;
	default:
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_HDR, pkt);
		break;
	}
}

/* The sent WQE, not failed, that holds @psn. */
static struct rvt_swqe *rvt_comp_wqe_at(struct rvt_qp *qp, u32 psn)
{
	u32 i = qp->s_tail;

	while (rvt_comp_sent(qp, i)) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS ||
		    rvt_psn_cmp(psn, wqe->psn) < 0)
			return NULL;
		if (rvt_psn_cmp(psn, wqe->lpsn) <= 0)
			return wqe;
		if (i == qp->s_cur)
			break;
		i = rvt_comp_next(qp, i);
	}
	return NULL;
}

/* The sent READ or atomic WQE that an answer with @psn belongs to. */
static struct rvt_swqe *rvt_comp_rd_wqe(struct rvt_qp *qp, u32 psn)
{
	struct rvt_swqe *wqe = rvt_comp_wqe_at(qp, psn);

	return wqe && rvt_wqe_is_rd_atomic(wqe) ? wqe : NULL;
}

/*
 * A FLUSH or ATOMIC_WRITE is answered with a READ response without
 * payload, which acknowledges it as an ACK would (IBA 1.5 annex A19).
 */
static bool rvt_comp_is_placement_ack(struct rvt_qp *qp,
				      const struct rvt_pkt *pkt)
{
	struct rvt_swqe *wqe;

	if ((pkt->opcode & 0x1f) != IB_OPCODE_RDMA_READ_RESPONSE_ONLY ||
	    pkt->payload_len)
		return false;
	wqe = rvt_comp_wqe_at(qp, pkt->psn);
	return wqe && rvt_opcode_is_placement(wqe->opcode);
}

/* Check a READ response against its WQE and write its data. */
static enum ib_wc_status rvt_comp_read_data(struct rvt_qp *qp,
					    struct rvt_swqe *wqe,
					    struct rvt_pkt *pkt,
					    struct sk_buff *skb)
{
	u8 op = pkt->opcode & 0x1f;
	bool last = pkt->psn == wqe->lpsn;
	/* The WQE's own MTU: the netdev's may have changed since it began. */
	u64 off = (u64)((pkt->psn - wqe->psn) & RVT_PSN_MASK) * wqe->pmtu;

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
	if (rvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
			       wqe->num_sge, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_LOC_PROT_ERR;
	if (qp->s_sge.total_len < wqe->length) {
		rvt_sge_state_release(&qp->s_sge);
		return IB_WC_LOC_LEN_ERR;
	}
	rvt_sge_skip(&qp->s_sge, off);
	rvt_copy_skb_to_sge(&qp->s_sge, skb, pkt->hdr_len, pkt->payload_len);
	rvt_sge_state_release(&qp->s_sge);
	return IB_WC_SUCCESS;
}

/* Write an atomic's original value where its WQE wants it. */
static enum ib_wc_status rvt_comp_atomic_data(struct rvt_qp *qp,
					      struct rvt_swqe *wqe,
					      const struct rvt_atmack *atmack)
{
	u64 orig;

	if (wqe->opcode == IB_WR_RDMA_READ)
		return IB_WC_BAD_RESP_ERR;
	if (rvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
			       wqe->num_sge, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_LOC_PROT_ERR;
	if (qp->s_sge.total_len < sizeof(orig)) {
		rvt_sge_state_release(&qp->s_sge);
		return IB_WC_LOC_LEN_ERR;
	}
	orig = get_unaligned_be64(&atmack->orig);
	rvt_copy_to_sge(&qp->s_sge, &orig, sizeof(orig));
	rvt_sge_state_release(&qp->s_sge);
	return IB_WC_SUCCESS;
}

/*
 * A READ response in @skb (@atmack NULL) or an atomic ACK (@skb NULL):
 * place it, in or out of order.  One that cannot be placed fails its WQE
 * when it is the oldest answer missing; out of order it is dropped and
 * asked again.
 */
static void rvt_comp_rd_answer(struct rvt_qp *qp, struct rvt_pkt *pkt,
			       struct sk_buff *skb,
			       const struct rvt_atmack *atmack)
{
	u32 psn = pkt->psn;
	enum ib_wc_status status;
	struct rvt_swqe *wqe;
	u32 gap;

	wqe = rvt_comp_rd_wqe(qp, psn);
	if (!wqe || rvt_psn_map_test(qp->s_rd_seen, qp->s_acked_psn, psn)) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	/* The responder took every request before this WQE's. */
	rvt_comp_ack(qp, rvt_psn_add(wqe->psn, RVT_PSN_MASK), false);
	rvt_comp_advance(qp);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		return;

	status = atmack ? rvt_comp_atomic_data(qp, wqe, atmack) :
			  rvt_comp_read_data(qp, wqe, pkt, skb);
	gap = (psn - qp->s_acked_psn - 1) & RVT_PSN_MASK;
	if (status != IB_WC_SUCCESS) {
		if (!gap && wqe == rvt_get_swqe_ptr(qp, qp->s_tail))
			rvt_comp_done(qp, status);
		else
			rvt_qp_drop(qp, RVT_CNT_DROP_BAD_HDR, pkt);
		return;
	}
	if (!gap) {
		rvt_comp_progress(qp, psn);
		return;
	}
	rvt_qp_count(qp, RVT_CNT_REORDERED_ANSWERS, 1);
	qp->s_rd_seen = rvt_psn_map_set(qp->s_rd_seen, qp->s_acked_psn, psn);
	if (gap >= RVT_REORDER_SLACK)
		rvt_comp_rewind(qp, RVT_RESEND_GAP);
}

/**
 * rvt_comp_packet - handle an answer from the responder
 * @qp: the RC requester
 * @skb: the packet, data at the BTH; the caller frees it
 */
void rvt_comp_packet(struct rvt_qp *qp, struct sk_buff *skb)
{
	struct rvt_pkt *pkt = rvt_pkt_of(skb);
	enum ib_qp_state state = READ_ONCE(qp->state);
	const u8 *hdr = skb->data + sizeof(struct rvt_bth);
	u8 syndrome = 0;
	u32 aeth = 0;

	if (state != IB_QPS_RTS && state != IB_QPS_SQD) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_STATE, pkt);
		return;
	}
	if (rvt_psn_cmp(pkt->psn, qp->s_acked_psn) <= 0 ||
	    rvt_psn_cmp(pkt->psn, qp->s_psn) >= 0) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	if (pkt->mask & RVT_HDR_AETH) {
		aeth = get_unaligned_be32(hdr);
		syndrome = aeth >> 24;
	}

	switch (pkt->opcode & 0x1f) {
	case IB_OPCODE_ACKNOWLEDGE:
		rvt_comp_aeth(qp, pkt, aeth);
		break;
	case IB_OPCODE_ATOMIC_ACKNOWLEDGE:
		if ((syndrome & RVT_AETH_TYPE_MASK) != RVT_AETH_ACK) {
			rvt_comp_aeth(qp, pkt, aeth);
			break;
		}
		rvt_comp_rd_answer(qp, pkt, NULL, (const struct rvt_atmack *)
				   (hdr + sizeof(struct rvt_aeth)));
		break;
	case IB_OPCODE_RDMA_READ_RESPONSE_FIRST:
	case IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE:
	case IB_OPCODE_RDMA_READ_RESPONSE_LAST:
	case IB_OPCODE_RDMA_READ_RESPONSE_ONLY:
		if (((pkt->mask & RVT_HDR_AETH) &&
		     (syndrome & RVT_AETH_TYPE_MASK) != RVT_AETH_ACK) ||
		    rvt_comp_is_placement_ack(qp, pkt)) {
			rvt_comp_aeth(qp, pkt, aeth);
			break;
		}
		rvt_comp_rd_answer(qp, pkt, skb, NULL);
		break;
	default:
		/* A request opcode: resp.c has it. */
		break;
	}
	if (rvt_psn_cmp(qp->s_ack_hint, qp->s_acked_psn) > 0)
		rvt_comp_ack(qp, qp->s_ack_hint, false);
	rvt_comp_advance(qp);
}
