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
 * Runs in the QP's engine, in process context.
 */

#include <linux/jiffies.h>
#include <linux/unaligned.h>

#include "softrvt.h"
#include "hdr.h"

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
	if (rvt_wqe_is_rd_atomic(wqe) && qp->s_rd_out &&
	    rvt_comp_sent(qp, qp->s_tail))
		qp->s_rd_out--;
	if (qp->s_cur == qp->s_tail) {
		qp->s_cur = rvt_comp_next(qp, qp->s_cur);
		qp->s_cur_off = 0;
	}
	qp->s_tail = rvt_comp_next(qp, qp->s_tail);
	spin_unlock_irq(&qp->s_lock);

	rvt_send_complete(qp, &done, status);
	if (status != IB_WC_SUCCESS) {
		set_bit(RVT_S_STOPPED, &qp->s_flags);
		timer_delete(&qp->ack_timer);
		rvt_qp_set_error(qp, 0);
	}
}

/* s_acked_psn moved: the retry budgets start again. */
static void rvt_comp_progress(struct rvt_qp *qp, u32 psn)
{
	if (rvt_psn_cmp(psn, qp->s_acked_psn) <= 0)
		return;
	qp->s_acked_psn = psn;
	qp->s_retry = qp->attr.retry_cnt;
	qp->s_rnr_retry = qp->attr.rnr_retry;
	qp->s_rewound = false;
	if (qp->s_tail != qp->s_cur || qp->s_cur_off)
		rvt_req_arm_ack_timer(qp);
}

/**
 * rvt_comp_advance - complete the WQEs acknowledged so far
 * @qp: the RC requester
 *
 * A WQE that failed locally completes with its error once everything
 * before it is acknowledged.
 */
void rvt_comp_advance(struct rvt_qp *qp)
{
	while (rvt_comp_sent(qp, qp->s_tail) &&
	       READ_ONCE(qp->state) != IB_QPS_ERR) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, qp->s_tail);

		if (wqe->wire_status != IB_WC_SUCCESS) {
			if (rvt_psn_add(qp->s_acked_psn, 1) == wqe->psn)
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
 * Go back to @psn, once until the next progress: the answers still on
 * their way to the old transmission would each ask for it again.
 */
static void rvt_comp_rewind(struct rvt_qp *qp, u32 psn)
{
	if (qp->s_rewound)
		return;
	rvt_req_rewind(qp, psn);
	qp->s_rewound = true;
}

/*
 * The responder has accepted every PSN up to @psn.  A READ or atomic
 * stops the walk: only its responses acknowledge it.
 */
static void rvt_comp_ack(struct rvt_qp *qp, u32 psn)
{
	u32 i = qp->s_tail;

	while (rvt_comp_sent(qp, i)) {
		struct rvt_swqe *wqe = rvt_get_swqe_ptr(qp, i);

		if (wqe->wire_status != IB_WC_SUCCESS ||
		    rvt_psn_cmp(wqe->psn, psn) > 0)
			break;
		if (rvt_wqe_is_rd_atomic(wqe)) {
			rvt_comp_progress(qp, rvt_psn_add(wqe->psn,
							  RVT_PSN_MASK));
			if (rvt_psn_cmp(psn, qp->s_acked_psn) > 0)
				rvt_comp_rewind(qp,
						rvt_psn_add(qp->s_acked_psn, 1));
			return;
		}
		if (rvt_psn_cmp(wqe->lpsn, psn) > 0) {
			rvt_comp_progress(qp, psn);
			return;
		}
		rvt_comp_progress(qp, wqe->lpsn);
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

static void rvt_comp_aeth(struct rvt_qp *qp, u32 psn, u8 syndrome)
{
	struct rvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	u8 value = syndrome & RVT_AETH_VALUE_MASK;

	switch (syndrome & RVT_AETH_TYPE_MASK) {
	case RVT_AETH_ACK:
		rvt_comp_ack(qp, psn);
		break;
	case RVT_AETH_RNR_NAK:
		rvt_count(rdi, RVT_CNT_RNR_NAKS_RCVD, 1);
		rvt_comp_ack(qp, rvt_psn_add(psn, RVT_PSN_MASK));
		rvt_comp_advance(qp);
		if (!rvt_comp_sent(qp, qp->s_tail))
			break;
		if (!qp->s_rnr_retry) {
			rvt_comp_done(qp, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->s_rnr_retry != RVT_RNR_RETRY_INFINITE)
			qp->s_rnr_retry--;
		rvt_req_rewind(qp, psn);
		qp->s_rnr_wait = true;
		timer_delete(&qp->ack_timer);
		mod_timer(&qp->rnr_timer,
			  jiffies + usecs_to_jiffies(rvt_rnr_usec[value]));
		break;
	case RVT_AETH_NAK:
		rvt_comp_ack(qp, rvt_psn_add(psn, RVT_PSN_MASK));
		rvt_comp_advance(qp);
		if (value == RVT_NAK_PSN_SEQ) {
			rvt_count(rdi, RVT_CNT_SEQ_NAKS_RCVD, 1);
			rvt_comp_rewind(qp, psn);
			break;
		}
		rvt_count(rdi, RVT_CNT_ERR_NAKS_RCVD, 1);
		if (rvt_comp_sent(qp, qp->s_tail))
			rvt_comp_done(qp, rvt_nak_status(value));
		break;
	default:
		rvt_count(rdi, RVT_CNT_DROP_BAD_HDR, 1);
		break;
	}
}

/* The WQE at s_tail if it is the one a response with @psn answers. */
static struct rvt_swqe *rvt_comp_responder_wqe(struct rvt_qp *qp, u32 psn,
					       bool read)
{
	struct rvt_swqe *wqe;
	bool is_read;

	/* Everything before the response is implied acknowledged. */
	rvt_comp_ack(qp, rvt_psn_add(psn, RVT_PSN_MASK));
	rvt_comp_advance(qp);
	if (!rvt_comp_sent(qp, qp->s_tail) ||
	    rvt_psn_add(qp->s_acked_psn, 1) != psn)
		return NULL;
	wqe = rvt_get_swqe_ptr(qp, qp->s_tail);
	is_read = wqe->opcode == IB_WR_RDMA_READ;
	if (read != is_read ||
	    !rvt_wqe_is_rd_atomic(wqe) || wqe->wire_status != IB_WC_SUCCESS ||
	    rvt_psn_cmp(psn, wqe->psn) < 0 || rvt_psn_cmp(psn, wqe->lpsn) > 0)
		return NULL;
	return wqe;
}

static void rvt_comp_read_response(struct rvt_qp *qp, struct rvt_pkt *pkt,
				   const u8 *payload)
{
	u8 op = pkt->opcode & 0x1f;
	u32 mtu = rvt_qp_mtu(qp);
	struct rvt_swqe *wqe;
	bool last;
	u32 off;

	wqe = rvt_comp_responder_wqe(qp, pkt->psn, true);
	if (!wqe) {
		rvt_count(ib_to_rvt(qp->ibqp.device), RVT_CNT_DROP_BAD_PSN, 1);
		return;
	}
	off = ((pkt->psn - wqe->psn) & RVT_PSN_MASK) * mtu;
	last = pkt->psn == wqe->lpsn;
	/* A READ is asked for in chunks: each one ends in LAST or ONLY. */
	if ((last && op != IB_OPCODE_RDMA_READ_RESPONSE_LAST &&
	     op != IB_OPCODE_RDMA_READ_RESPONSE_ONLY) ||
	    pkt->payload_len != (last ? wqe->length - off : mtu)) {
		rvt_comp_done(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	if (rvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
			       wqe->num_sge, IB_ACCESS_LOCAL_WRITE)) {
		rvt_comp_done(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	if (qp->s_sge.total_len < wqe->length) {
		rvt_sge_state_release(&qp->s_sge);
		rvt_comp_done(qp, IB_WC_LOC_LEN_ERR);
		return;
	}
	rvt_sge_skip(&qp->s_sge, off);
	rvt_copy_to_sge(&qp->s_sge, payload, pkt->payload_len);
	rvt_sge_state_release(&qp->s_sge);
	rvt_comp_progress(qp, pkt->psn);
	if (last)
		rvt_comp_done(qp, IB_WC_SUCCESS);
}

static void rvt_comp_atomic_ack(struct rvt_qp *qp, struct rvt_pkt *pkt,
				const struct rvt_atmack *atmack)
{
	struct rvt_swqe *wqe;
	u64 orig;

	wqe = rvt_comp_responder_wqe(qp, pkt->psn, false);
	if (!wqe) {
		rvt_count(ib_to_rvt(qp->ibqp.device), RVT_CNT_DROP_BAD_PSN, 1);
		return;
	}
	if (rvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
			       wqe->num_sge, IB_ACCESS_LOCAL_WRITE)) {
		rvt_comp_done(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	if (qp->s_sge.total_len < sizeof(orig)) {
		rvt_sge_state_release(&qp->s_sge);
		rvt_comp_done(qp, IB_WC_LOC_LEN_ERR);
		return;
	}
	orig = get_unaligned_be64(&atmack->orig);
	rvt_copy_to_sge(&qp->s_sge, &orig, sizeof(orig));
	rvt_sge_state_release(&qp->s_sge);
	rvt_comp_progress(qp, pkt->psn);
	rvt_comp_done(qp, IB_WC_SUCCESS);
}

/**
 * rvt_comp_packet - handle an answer from the responder
 * @qp: the RC requester
 * @skb: the packet, data at the BTH; the caller frees it
 */
void rvt_comp_packet(struct rvt_qp *qp, struct sk_buff *skb)
{
	struct rvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	struct rvt_pkt *pkt = rvt_pkt_of(skb);
	enum ib_qp_state state = READ_ONCE(qp->state);
	const u8 *hdr = skb->data + sizeof(struct rvt_bth);
	u8 syndrome = 0;

	if (state != IB_QPS_RTS && state != IB_QPS_SQD) {
		rvt_count(rdi, RVT_CNT_DROP_BAD_STATE, 1);
		return;
	}
	if (rvt_psn_cmp(pkt->psn, qp->s_acked_psn) <= 0 ||
	    rvt_psn_cmp(pkt->psn, qp->s_psn) >= 0) {
		rvt_count(rdi, RVT_CNT_DROP_BAD_PSN, 1);
		return;
	}
	if (pkt->mask & RVT_HDR_AETH)
		syndrome = get_unaligned_be32(hdr) >> 24;

	switch (pkt->opcode & 0x1f) {
	case IB_OPCODE_ACKNOWLEDGE:
		rvt_comp_aeth(qp, pkt->psn, syndrome);
		break;
	case IB_OPCODE_ATOMIC_ACKNOWLEDGE:
		if ((syndrome & RVT_AETH_TYPE_MASK) != RVT_AETH_ACK) {
			rvt_comp_aeth(qp, pkt->psn, syndrome);
			break;
		}
		rvt_comp_atomic_ack(qp, pkt, (const struct rvt_atmack *)
				    (hdr + sizeof(struct rvt_aeth)));
		break;
	case IB_OPCODE_RDMA_READ_RESPONSE_FIRST:
	case IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE:
	case IB_OPCODE_RDMA_READ_RESPONSE_LAST:
	case IB_OPCODE_RDMA_READ_RESPONSE_ONLY:
		if ((pkt->mask & RVT_HDR_AETH) &&
		    (syndrome & RVT_AETH_TYPE_MASK) != RVT_AETH_ACK) {
			rvt_comp_aeth(qp, pkt->psn, syndrome);
			break;
		}
		rvt_comp_read_response(qp, pkt, skb->data + pkt->hdr_len);
		break;
	default:
		/* A request opcode: resp.c has it. */
		break;
	}
	rvt_comp_advance(qp);
}
