// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCEv2 requester: send WQEs become request packets.
 *
 * UD and UC WQEs are sent once and complete when their last packet is out.
 * RC WQEs stay on the send queue until comp.c sees them acknowledged; the
 * requester keeps a window of PSNs in flight and goes back to the oldest
 * unacknowledged PSN (go-back-N) after a NAK, an RNR wait or the local ACK
 * timeout.  A WQE can be resent from any of its packets: the responder
 * has accepted exactly the PSNs before it.
 *
 * All of it runs in the QP's engine (engine.c), in process context.
 */

#include <linux/jiffies.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/* Ask for an ACK at least this often within long messages. */
#define SOFTRVT_ACKREQ_EVERY	16
/*
 * An RDMA READ WQE is asked for in requests of at most this many packets:
 * after a lost or reordered response, only the rest of one such request
 * is asked and sent again, not the rest of a long READ.
 */
#define SOFTRVT_READ_CHUNK_PKTS	16
/*
 * The ACK timer doubles with each timeout in a row, up to this shift.  A
 * software peer on a busy host can fall behind by more than the local
 * ACK timeout while it is alive: rdma_rxe in a TCG guest, sent 64 KiB
 * messages on 16 QPs at once, took every packet resent on a timeout as
 * a duplicate.  Each timeout resends a window that only lengthens such a
 * peer's backlog, and at a fixed period retry_cnt + 1 periods can pass
 * before it gets to the first ACK: the QP would fail with
 * IB_WC_RETRY_EXC_ERR although its peer is alive.  With the doubling it
 * is given 47 periods rather than 8 at retry_cnt 7, and far fewer
 * resends; a peer that is gone is still given up on after retry_cnt
 * retries.
 */
#define SOFTRVT_ACK_BACKOFF_MAX	3
/* P_Key of the default partition: RoCE has no other. */
#define SOFTRVT_DEFAULT_PKEY	0xffff

/**
 * softrvt_qp_mtu - payload bytes per packet of a QP
 * @qp: the QP
 *
 * A connected QP's packets carry the path MTU, as the port's was when
 * modify_qp set it (softrvt_qp_set_mtu()): its requester and its responder
 * keep that value for the connection's life, as its peer does, whatever
 * the netdev's MTU does later.  A UD QP sends and takes what the port
 * takes now.
 *
 * Return: payload bytes per packet.
 */
u32 softrvt_qp_mtu(const struct softrvt_qp *qp)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);

	if (softrvt_is_ud_type(qp->ibqp.qp_type))
		return ib_mtu_enum_to_int(READ_ONCE(rdi->port_mtu));
	return ib_mtu_enum_to_int(READ_ONCE(qp->mtu) ?: IB_MTU_256);
}

/**
 * softrvt_qp_set_mtu - fix a connected QP's MTU when modify_qp sets the path's
 * @qp: the QP
 * @path_mtu: the path MTU asked for
 *
 * Never above the port's MTU at that moment: a larger packet would not
 * leave the netdev.
 */
void softrvt_qp_set_mtu(struct softrvt_qp *qp, enum ib_mtu path_mtu)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);

	WRITE_ONCE(qp->mtu, min(path_mtu, READ_ONCE(rdi->port_mtu)));
}

/**
 * softrvt_wqe_is_rd_atomic - whether a WQE is answered with data
 * @wqe: the WQE
 *
 * Return: true for RDMA READ and the atomics.
 */
bool softrvt_wqe_is_rd_atomic(const struct softrvt_swqe *wqe)
{
	return wqe->opcode == IB_WR_RDMA_READ ||
	       wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/* PSNs a WQE uses: one per packet, READ responses included. */
static u32 softrvt_wqe_npkts(const struct softrvt_swqe *wqe)
{
	if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
	    wqe->opcode == IB_WR_FLUSH)
		return 1;
	/* In 64 bits: a length near 4 GiB must not wrap to a few packets. */
	return max_t(u64, 1, DIV_ROUND_UP_ULL(wqe->length, wqe->pmtu));
}

/* Whether a new READ or atomic request would exceed max_rd_atomic. */
static bool softrvt_req_rd_full(const struct softrvt_qp *qp)
{
	return qp->req.rd_count >= max_t(u32, qp->attr.max_rd_atomic, 1);
}

/* A new READ or atomic request went out; @lpsn is its last answer's. */
static void softrvt_req_rd_sent(struct softrvt_qp *qp, u32 lpsn)
{
	qp->req.rd_lpsn[(qp->req.rd_first + qp->req.rd_count) % SOFTRVT_MAX_RD_ATOMIC] =
		lpsn;
	qp->req.rd_count++;
}

/**
 * softrvt_req_rd_retire - forget the READ and atomic requests answered
 * @qp: the RC requester, whose comp.acked_psn moved
 *
 * A request holds a resource at the responder until its last answer is
 * sent, hence at least until that answer is in: going back to resend
 * does not free it.
 */
void softrvt_req_rd_retire(struct softrvt_qp *qp)
{
	while (qp->req.rd_count &&
	       softrvt_psn_cmp(qp->req.rd_lpsn[qp->req.rd_first],
			       qp->comp.acked_psn) <= 0) {
		qp->req.rd_first = (qp->req.rd_first + 1) % SOFTRVT_MAX_RD_ATOMIC;
		qp->req.rd_count--;
	}
}

/* Whether a request at @psn is sent for the first time. */
static bool softrvt_req_psn_is_new(const struct softrvt_qp *qp, u32 psn)
{
	return softrvt_psn_cmp(psn, qp->req.max_psn) >= 0;
}

/*
 * SEND and RDMA WRITE number their packets alike from their FIRST opcode:
 * FIRST, MIDDLE, LAST, LAST with immediate, ONLY, ONLY with immediate.
 */
static u8 softrvt_msg_opcode(u8 first_op, bool first, bool last, bool imm)
{
	static_assert(IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE -
		      IB_OPCODE_RDMA_WRITE_FIRST ==
		      IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE - IB_OPCODE_SEND_FIRST);
	if (first && last)
		return first_op + 4 + imm;
	if (first)
		return first_op;
	return first_op + (last ? 2 + imm : 1);
}

static u8 softrvt_req_opcode(struct softrvt_qp *qp, const struct softrvt_swqe *wqe,
			     bool first, bool last)
{
	u8 base;
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM ||
		   wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;

	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		base = IB_OPCODE_RC;
		break;
	case IB_QPT_UC:
		base = IB_OPCODE_UC;
		break;
	case IB_QPT_XRC_INI:
		base = SOFTRVT_OPCODE_XRC;
		break;
	default:
		return IB_OPCODE_UD | softrvt_msg_opcode(IB_OPCODE_SEND_FIRST, true,
							 true, imm);
	}
	switch (wqe->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return base | softrvt_msg_opcode(IB_OPCODE_RDMA_WRITE_FIRST, first,
						 last, imm);
	case IB_WR_RDMA_READ:
		return base | IB_OPCODE_RDMA_READ_REQUEST;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return base | IB_OPCODE_COMPARE_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return base | IB_OPCODE_FETCH_ADD;
	case IB_WR_FLUSH:
		return base | IB_OPCODE_FLUSH;
	case IB_WR_ATOMIC_WRITE:
		return base | IB_OPCODE_ATOMIC_WRITE;
	case IB_WR_SEND_WITH_INV:
		/* RC only; its last packet carries the rkey in an IETH. */
		if (last && first)
			return base | IB_OPCODE_SEND_ONLY_WITH_INVALIDATE;
		if (last)
			return base | IB_OPCODE_SEND_LAST_WITH_INVALIDATE;
		return base | softrvt_msg_opcode(IB_OPCODE_SEND_FIRST, first,
						 false, false);
	default:
		return base | softrvt_msg_opcode(IB_OPCODE_SEND_FIRST, first, last,
						 imm);
	}
}

/*
 * Write the headers of @mask of one request packet at @p, for @len
 * payload bytes @off bytes into @wqe.  Returns the bytes written, the BTH
 * and extended headers.
 */
static u32 softrvt_req_build(struct softrvt_qp *qp, struct softrvt_swqe *wqe, u8 opcode,
			     u16 mask, u32 psn, u32 off, u32 len, bool ackreq,
			     u32 dma_len, u8 *p)
{
	bool ud = (opcode & 0xe0) == IB_OPCODE_UD;
	u32 dqpn = ud ? wqe->remote_qpn : qp->attr.dest_qp_num;
	u32 pad = softrvt_pad_bytes(len);
	u8 *start = p;

	softrvt_build_bth((struct softrvt_bth *)p, opcode,
			  (wqe->send_flags & IB_SEND_SOLICITED) &&
			  (mask & SOFTRVT_HDR_PAYLOAD) && off + len == wqe->length,
			  pad, SOFTRVT_DEFAULT_PKEY, dqpn, ackreq, psn);
	p += sizeof(struct softrvt_bth);
	if (mask & SOFTRVT_HDR_XRCETH) {
		put_unaligned_be32(wqe->xrc_srqn & SOFTRVT_XRC_SRQN_MASK, p);
		p += sizeof(struct softrvt_xrceth);
	}
	if (mask & SOFTRVT_HDR_DETH) {
		struct softrvt_deth *deth = (struct softrvt_deth *)p;
		/* A Q_Key with the high bit set means "use the QP's own". */
		u32 qkey = (wqe->remote_qkey & 0x80000000) ? qp->attr.qkey :
							     wqe->remote_qkey;

		deth->qkey = cpu_to_be32(qkey);
		deth->sqp = cpu_to_be32(qp->ibqp.qp_num & SOFTRVT_BTH_QPN_MASK);
		p += sizeof(*deth);
	}
	if (mask & SOFTRVT_HDR_FETH) {
		put_unaligned_be32((wqe->flush_level << SOFTRVT_FETH_SEL_SHIFT &
				    SOFTRVT_FETH_SEL_MASK) |
				   (wqe->flush_type & SOFTRVT_FETH_PLT_MASK), p);
		p += sizeof(struct softrvt_feth);
	}
	if (mask & SOFTRVT_HDR_RETH) {
		struct softrvt_reth *reth = (struct softrvt_reth *)p;

		reth->va = cpu_to_be64(wqe->remote_addr + off);
		reth->rkey = cpu_to_be32(wqe->rkey);
		reth->len = cpu_to_be32(dma_len);
		p += sizeof(*reth);
	}
	if (mask & SOFTRVT_HDR_ATMETH) {
		struct softrvt_atmeth *ateth = (struct softrvt_atmeth *)p;

		ateth->va = cpu_to_be64(wqe->remote_addr);
		ateth->rkey = cpu_to_be32(wqe->rkey);
		if (wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
			ateth->swap_add = cpu_to_be64(wqe->compare_add);
			ateth->compare = 0;
		} else {
			ateth->swap_add = cpu_to_be64(wqe->swap);
			ateth->compare = cpu_to_be64(wqe->compare_add);
		}
		p += sizeof(*ateth);
	}
	if (mask & SOFTRVT_HDR_IMMDT) {
		memcpy(p, &wqe->imm_data, sizeof(wqe->imm_data));
		p += sizeof(wqe->imm_data);
	}
	if (mask & SOFTRVT_HDR_IETH) {
		put_unaligned_be32(wqe->rkey, p);
		p += sizeof(__be32);
	}

	if (softrvt_psn_cmp(psn, qp->req.max_psn) < 0 &&
	    softrvt_is_rc_req(qp->ibqp.qp_type)) {
		softrvt_qp_count(qp, SOFTRVT_CNT_RETRANSMITS, 1);
		trace_softrvt_retransmit(qp, opcode, psn, qp->req.resend_why);
	}
	return p - start;
}

static u16 softrvt_req_sport(const struct softrvt_qp *qp, const struct softrvt_av *av,
			     u32 dqpn)
{
	return rdma_get_udp_sport(av->flow_label, qp->ibqp.qp_num, dqpn);
}

/*
 * Build and send one request packet: @len payload bytes taken from @ss
 * (NULL for READ requests and atomics), which is @off bytes into @wqe.
 */
static int softrvt_req_packet(struct softrvt_qp *qp, struct softrvt_swqe *wqe, u8 opcode,
			      u32 psn, u32 off, u32 len, bool ackreq,
			      struct softrvt_sge_state *ss, u32 dma_len)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	bool ud = (opcode & 0xe0) == IB_OPCODE_UD;
	const struct softrvt_av *av = ud ? &wqe->av : &qp->s_av;
	u32 dqpn = ud ? wqe->remote_qpn : qp->attr.dest_qp_num;
	struct sk_buff *skb;
	u16 mask;

	if (softrvt_opcode_info(opcode, &mask))
		return -EINVAL;
	skb = softrvt_alloc_pkt_from(rdi, softrvt_hdr_len(mask), ss, len,
				     softrvt_is_rc_req(qp->ibqp.qp_type));
	if (!skb)
		return -ENOMEM;
	softrvt_req_build(qp, wqe, opcode, mask, psn, off, len, ackreq, dma_len,
			  skb->data);
	return softrvt_xmit(qp, av, ud ? NULL : &qp->s_dst_cache,
			    softrvt_req_sport(qp, av, dqpn), skb);
}

/* The WQE's local list, @off bytes in: what its packets carry. */
static int softrvt_req_sge(struct softrvt_qp *qp, struct softrvt_swqe *wqe, u32 off)
{
	if (!wqe->num_sge) {
		softrvt_sge_state_init_one(&qp->s_sge, NULL,
					   (uintptr_t)softrvt_swqe_inline(wqe),
					   wqe->length);
	} else if (softrvt_sge_state_init(&qp->s_sge, qp->ibqp.pd, wqe->sg_list,
					  wqe->num_sge, 0)) {
		return -EACCES;
	}
	if (qp->s_sge.total_len < wqe->length) {
		softrvt_sge_state_release(&qp->s_sge);
		return -EINVAL;
	}
	softrvt_sge_skip(&qp->s_sge, off);
	return 0;
}

/**
 * softrvt_req_send_unreliable - send a UD or UC WQE to the wire
 * @qp: the requester
 * @wqe: the WQE at s_tail
 * @budget: what the engine's run may still send
 * @status: set to the completion status: local errors only, as nobody
 *	answers
 *
 * A UC message may be 2 GiB, millions of packets: it is sent from
 * req.cur_off on, as far as @budget lets, and the engine's next run sends
 * the rest.  Its packets are cut at the MTU of its first one.
 *
 * Return: SOFTRVT_RUC_DONE once the WQE is sent or failed, SOFTRVT_RUC_MORE when
 * the budget ran out first.
 */
enum softrvt_ruc_result softrvt_req_send_unreliable(struct softrvt_qp *qp,
						    struct softrvt_swqe *wqe,
						    struct softrvt_budget *budget,
						    enum ib_wc_status *status)
{
	u32 off = qp->req.cur_off;
	bool more;

	*status = IB_WC_SUCCESS;
	if (!off) {
		wqe->pmtu = softrvt_qp_mtu(qp);
		if (wqe->length > wqe->pmtu && qp->ibqp.qp_type != IB_QPT_UC) {
			*status = IB_WC_LOC_LEN_ERR;
			return SOFTRVT_RUC_DONE;
		}
	}
	if (softrvt_req_sge(qp, wqe, off)) {
		*status = IB_WC_LOC_PROT_ERR;
		return SOFTRVT_RUC_DONE;
	}
	do {
		u32 len = min(wqe->pmtu, wqe->length - off);
		u8 opcode = softrvt_req_opcode(qp, wqe, !off,
					       off + len == wqe->length);

		/* A packet the network drops is lost, as on the wire. */
		softrvt_req_packet(qp, wqe, opcode, qp->req.psn, off, len, false,
				   &qp->s_sge, wqe->length - off);
		qp->req.psn = softrvt_psn_add(qp->req.psn, 1);
		off += len;
		more = softrvt_budget_spend(budget, 1, len);
	} while (off < wqe->length && more);
	softrvt_sge_state_release(&qp->s_sge);
	qp->req.cur_off = off;
	return off < wqe->length ? SOFTRVT_RUC_MORE : SOFTRVT_RUC_DONE;
}

static bool softrvt_req_outstanding(const struct softrvt_qp *qp)
{
	return qp->s_tail != qp->req.cur || qp->req.cur_off;
}

/**
 * softrvt_req_stop - a WQE failed: send nothing from it on
 * @qp: the RC requester
 * @i: the WQE's index in the send queue
 *
 * The WQEs before it are still resent if their packets are lost; the
 * failed one completes with its error once they are acknowledged.
 */
void softrvt_req_stop(struct softrvt_qp *qp, u32 i)
{
	qp->req.stop = i;
	set_bit(SOFTRVT_S_STOPPED, &qp->s_flags);
}

/* How far WQE @i is from s_tail, the oldest not completed. */
static u32 softrvt_sq_dist(const struct softrvt_qp *qp, u32 i)
{
	return i >= qp->s_tail ? i - qp->s_tail : i + qp->s_size - qp->s_tail;
}

/* Whether a stopped requester reached the WQE that failed. */
static bool softrvt_req_at_stop(struct softrvt_qp *qp)
{
	if (!test_bit(SOFTRVT_S_STOPPED, &qp->s_flags))
		return false;
	if (qp->req.cur == qp->req.stop) {
		/* Passed, so that softrvt_comp_advance() completes it in order. */
		qp->req.cur = softrvt_sq_next(qp, qp->req.cur);
		qp->req.cur_off = 0;
		return true;
	}
	return softrvt_sq_dist(qp, qp->req.cur) > softrvt_sq_dist(qp, qp->req.stop);
}

/**
 * softrvt_req_rewind - go back to a PSN and resend from there
 * @qp: the RC requester
 * @psn: the first PSN the responder has not accepted
 * @why: what showed the loss, for the tracepoints
 *
 * Finds the WQE that holds @psn and the byte offset of that packet.
 */
void softrvt_req_rewind(struct softrvt_qp *qp, u32 psn, enum softrvt_resend_why why)
{
	u32 i = qp->s_tail;
	struct softrvt_swqe *wqe;

	trace_softrvt_go_back(qp, psn, why);
	qp->req.resend_why = why;

	while (i != qp->req.cur || qp->req.cur_off) {
		wqe = softrvt_get_swqe_ptr(qp, i);
		if (softrvt_psn_cmp(psn, wqe->lpsn) <= 0 &&
		    softrvt_psn_cmp(psn, wqe->psn) >= 0) {
			u64 off = (u64)((psn - wqe->psn) & SOFTRVT_PSN_MASK) *
				  wqe->pmtu;

			qp->req.cur = i;
			qp->req.cur_off = (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
					 wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) ?
					0 : min_t(u64, off, wqe->length);
			qp->req.psn = psn;
			return;
		}
		if (i == qp->req.cur)
			break;
		i = softrvt_sq_next(qp, i);
	}
	/* Nothing sent holds @psn: resume with what was not sent yet. */
	qp->req.cur = i;
	qp->req.cur_off = 0;
	qp->req.psn = psn;
}

/**
 * softrvt_req_timeout - the local ACK timeout expired
 * @qp: the RC requester
 *
 * Resends from the oldest unacknowledged PSN, or completes the oldest WQE
 * with IB_WC_RETRY_EXC_ERR once retry_cnt retries are used up.
 */
void softrvt_req_timeout(struct softrvt_qp *qp)
{
	if (!softrvt_req_outstanding(qp) || qp->req.rnr_wait)
		return;
	softrvt_qp_count(qp, SOFTRVT_CNT_ACK_TIMEOUTS, 1);
	if (!qp->comp.retry) {
		softrvt_comp_done(qp, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->comp.retry--;
	if (qp->req.backoff < SOFTRVT_ACK_BACKOFF_MAX)
		qp->req.backoff++;
	qp->comp.go_back = false;
	softrvt_req_rewind(qp, softrvt_psn_add(qp->comp.acked_psn, 1),
			   SOFTRVT_RESEND_TIMEOUT);
	qp->req.rewound = true;
}

/**
 * softrvt_req_go_back - go back to the oldest PSN not in, if answers said so
 * @qp: the RC requester
 *
 * comp.c decides it while it handles a batch of answers; the engine does
 * it after the batch, as an answer later in the batch may fill the gap.
 */
void softrvt_req_go_back(struct softrvt_qp *qp)
{
	if (!qp->comp.go_back)
		return;
	qp->comp.go_back = false;
	softrvt_req_rewind(qp, softrvt_psn_add(qp->comp.acked_psn, 1),
			   qp->comp.go_back_why);
	qp->req.rewound = true;
}

/**
 * softrvt_req_arm_ack_timer - (re)start the local ACK timeout
 * @qp: the RC requester
 *
 * The QP's timeout, doubled for each timeout since the last progress.
 */
void softrvt_req_arm_ack_timer(struct softrvt_qp *qp)
{
	qp->req.ack_deadline = jiffies + (softrvt_ack_timeout(qp->attr.timeout) <<
					qp->req.backoff);
	mod_timer(&qp->ack_timer, qp->req.ack_deadline);
}

/**
 * softrvt_req_ack_timer_due - whether an expiry of the ACK timer still counts
 * @qp: the RC requester
 *
 * The timer may fire while the engine is busy with answers that move the
 * deadline: such an expiry is stale and only re-arms the timer.
 *
 * Return: true if the timeout really passed without progress.
 */
bool softrvt_req_ack_timer_due(struct softrvt_qp *qp)
{
	if (time_after_eq(jiffies, qp->req.ack_deadline))
		return true;
	mod_timer(&qp->ack_timer, qp->req.ack_deadline);
	return false;
}

/**
 * softrvt_ack_timer_fn - no ACK came in time: tell the engine
 * @t: the QP's ack_timer
 */
void softrvt_ack_timer_fn(struct timer_list *t)
{
	struct softrvt_qp *qp = timer_container_of(qp, t, ack_timer);

	set_bit(SOFTRVT_S_ACK_TIMEOUT, &qp->s_flags);
	softrvt_schedule_send(qp);
}

/* Start the WQE at req.cur: its PSNs, or a local error found now. */
static void softrvt_req_start_wqe(struct softrvt_qp *qp, struct softrvt_swqe *wqe)
{
	/*
	 * Its packets, and its READ responses, are cut at this MTU until it
	 * completes, whatever happens to the netdev's MTU meanwhile.
	 */
	wqe->pmtu = softrvt_qp_mtu(qp);
	wqe->psn = qp->req.psn;
	wqe->lpsn = softrvt_psn_add(qp->req.psn, softrvt_wqe_npkts(wqe) - 1);
	wqe->wire_status = IB_WC_SUCCESS;
	if (softrvt_wqe_is_rd_atomic(wqe) && !qp->attr.max_rd_atomic)
		wqe->wire_status = IB_WC_LOC_QP_OP_ERR;
	else if (wqe->opcode == IB_WR_RDMA_READ || wqe->opcode == IB_WR_FLUSH)
		;	/* a READ's list is written when the responses come */
	else if (softrvt_req_sge(qp, wqe, 0))
		wqe->wire_status = IB_WC_LOC_PROT_ERR;
	else
		softrvt_sge_state_release(&qp->s_sge);
}

/*
 * Execute the REG_MR, LOCAL_INV or BIND_MW at req.cur, once.  It takes no
 * PSN and completes in order once what precedes it is acknowledged.
 * LOCAL_INV first waits for the WQEs before it to complete (the IB spec's
 * local invalidate fence, which rxe makes mandatory too): one of them sent
 * again after a loss must still find the region it names.  REG_MR need
 * not wait: nothing before it can use a region that was invalid; nor
 * BIND_MW: a window serves the peer's requests, never this QP's own.
 * Return: false while it waits.
 */
static bool softrvt_req_local_op(struct softrvt_qp *qp, struct softrvt_swqe *wqe)
{
	if (!wqe->local_done) {
		if (wqe->opcode == IB_WR_LOCAL_INV && qp->s_tail != qp->req.cur) {
			/* Those all in complete now: nothing else would. */
			softrvt_comp_advance(qp);
			if (qp->s_tail != qp->req.cur)
				return false;
		}
		wqe->psn = qp->req.psn;
		wqe->lpsn = softrvt_psn_add(qp->req.psn, SOFTRVT_PSN_MASK);
		wqe->wire_status = softrvt_local_op(qp, wqe);
		if (wqe->wire_status != IB_WC_SUCCESS)
			softrvt_req_stop(qp, qp->req.cur);
	}
	qp->req.cur = softrvt_sq_next(qp, qp->req.cur);
	qp->req.cur_off = 0;
	return true;
}

enum softrvt_req_sent {
	SOFTRVT_REQ_WQE_SENT,	/* the WQE's last packet is out */
	SOFTRVT_REQ_WQE_PART,	/* the window ended within the WQE */
	SOFTRVT_REQ_WINDOW_FULL,	/* a READ chunk did not fit: nothing sent */
};

/*
 * Ask for the next chunk of the READ at req.cur.  A chunk is asked only
 * whole within the window, so that each of its responses has a bit in
 * comp.rd_seen; after going back, the responses already in are skipped.
 */
static enum softrvt_req_sent softrvt_req_send_read(struct softrvt_qp *qp,
						   struct softrvt_swqe *wqe)
{
	u32 window_end = softrvt_psn_add(qp->comp.acked_psn, SOFTRVT_MAX_INFLIGHT);
	u32 mtu = wqe->pmtu;
	u32 off = qp->req.cur_off;
	u32 psn = qp->req.psn;
	u32 pkts, len;

	while (off < wqe->length &&
	       (softrvt_psn_cmp(psn, qp->comp.acked_psn) <= 0 ||
		softrvt_psn_map_test(qp->comp.rd_seen, qp->comp.acked_psn, psn))) {
		off += min(mtu, wqe->length - off);
		psn = softrvt_psn_add(psn, 1);
	}
	/* Skipped responses stay skipped while the window is full. */
	if (off != qp->req.cur_off) {
		qp->req.cur_off = off;
		qp->req.psn = psn;
	}
	/*
	 * Chunks keep their first transmission's boundaries when resent
	 * from a middle packet, so that a request the responder already
	 * saw is never resent reaching past it.
	 */
	pkts = SOFTRVT_READ_CHUNK_PKTS - (off / mtu) % SOFTRVT_READ_CHUNK_PKTS;
	len = min(wqe->length - off, pkts * mtu);
	pkts = max(1U, DIV_ROUND_UP(len, mtu));
	if (off && off == wqe->length)
		pkts = 0;	/* every response is in */
	else if (softrvt_psn_cmp(softrvt_psn_add(psn, pkts - 1), window_end) > 0)
		return SOFTRVT_REQ_WINDOW_FULL;
	else if (softrvt_req_psn_is_new(qp, psn) && softrvt_req_rd_full(qp))
		return SOFTRVT_REQ_WINDOW_FULL;
	if (pkts && softrvt_req_psn_is_new(qp, psn))
		softrvt_req_rd_sent(qp, softrvt_psn_add(psn, pkts - 1));
	if (pkts)
		softrvt_req_packet(qp, wqe, softrvt_req_opcode(qp, wqe, true, true),
				   psn, off, 0, true, NULL, len);
	/* The responses take a PSN each. */
	qp->req.psn = softrvt_psn_add(psn, pkts);
	qp->req.cur_off = off + len;
	return qp->req.cur_off == wqe->length ? SOFTRVT_REQ_WQE_SENT :
					      SOFTRVT_REQ_WQE_PART;
}

static bool softrvt_req_ackreq(const struct softrvt_qp *qp, bool last, u32 window_end)
{
	return last || !(qp->req.psn % SOFTRVT_ACKREQ_EVERY) ||
	       softrvt_psn_add(qp->req.psn, 1) == window_end;
}

/*
 * The bytes of the packet @off bytes into @wqe, from its BTH to the end
 * of its ICRC; 0 if it has no header layout.
 */
static u32 softrvt_req_pkt_len(struct softrvt_qp *qp, struct softrvt_swqe *wqe, u32 off)
{
	u32 len = min(wqe->pmtu, wqe->length - off);
	u16 mask;

	if (softrvt_opcode_info(softrvt_req_opcode(qp, wqe, !off,
						   off + len == wqe->length), &mask))
		return 0;
	return softrvt_pkt_bytes(mask, len) + SOFTRVT_ICRC_BYTES;
}

/*
 * How many packets of the WQE at req.cur, from req.cur_off on, one train
 * carries, and in @bytes their length: as many as the window and @lim
 * let (softrvt_train_take()).
 */
static u32 softrvt_req_train_pkts(struct softrvt_qp *qp, struct softrvt_swqe *wqe,
				  const struct softrvt_train_limit *lim,
				  u32 window_end, u32 seg_len, u32 *bytes)
{
	u32 off = qp->req.cur_off, psn = qp->req.psn, n = 0;

	*bytes = 0;
	while (off < wqe->length && softrvt_psn_cmp(psn, window_end) < 0) {
		u32 payload = min(wqe->pmtu, wqe->length - off);

		if (!softrvt_train_take(lim, n, seg_len,
					softrvt_req_pkt_len(qp, wqe, off),
					off + payload == wqe->length, bytes))
			break;
		off += payload;
		psn = softrvt_psn_add(psn, 1);
		n++;
	}
	return n;
}

/*
 * Send packets of the WQE at req.cur from req.cur_off on as one train
 * (softrvt_xmit_train()).  Returns whether it did: false when the path takes
 * no trains, or fewer than two packets would go in one.
 */
static bool softrvt_req_send_train(struct softrvt_qp *qp, struct softrvt_swqe *wqe,
				   const struct softrvt_train_limit *lim,
				   u32 window_end)
{
	u32 seg_len = softrvt_req_pkt_len(qp, wqe, qp->req.cur_off);
	u32 bytes, n, i;
	struct sk_buff *skb;
	u8 *p;

	n = softrvt_req_train_pkts(qp, wqe, lim, window_end, seg_len, &bytes);
	if (n < 2)
		return false;
	skb = softrvt_alloc_train(softrvt_to_dev(qp->ibqp.device), bytes);
	if (!skb)
		return false;
	p = skb->data;
	for (i = 0; i < n; i++) {
		u32 off = qp->req.cur_off;
		u32 len = min(wqe->pmtu, wqe->length - off);
		bool last = off + len == wqe->length;
		u8 opcode = softrvt_req_opcode(qp, wqe, !off, last);
		u16 mask;

		/* softrvt_req_pkt_len() found the layout of each. */
		softrvt_opcode_info(opcode, &mask);
		p += softrvt_req_build(qp, wqe, opcode, mask, qp->req.psn, off, len,
				       softrvt_req_ackreq(qp, last, window_end),
				       wqe->length - off, p);
		p += softrvt_put_payload(p, &qp->s_sge, len) + SOFTRVT_ICRC_BYTES;
		qp->req.psn = softrvt_psn_add(qp->req.psn, 1);
		qp->req.cur_off = off + len;
	}
	softrvt_xmit_train(qp, &qp->s_av, &qp->s_dst_cache,
			   softrvt_req_sport(qp, &qp->s_av, qp->attr.dest_qp_num), skb,
			   seg_len);
	return true;
}

/* Send the WQE at req.cur from req.cur_off on, as far as the window lets. */
static enum softrvt_req_sent softrvt_req_send_wqe(struct softrvt_qp *qp,
						  struct softrvt_swqe *wqe)
{
	u32 window_end = softrvt_psn_add(qp->comp.acked_psn, SOFTRVT_MAX_INFLIGHT);
	struct softrvt_train_limit lim = {};
	u32 mtu = wqe->pmtu;

	if (wqe->opcode == IB_WR_RDMA_READ)
		return softrvt_req_send_read(qp, wqe);
	if (softrvt_wqe_is_rd_atomic(wqe)) {
		if (softrvt_req_psn_is_new(qp, qp->req.psn)) {
			if (softrvt_req_rd_full(qp))
				return SOFTRVT_REQ_WINDOW_FULL;
			softrvt_req_rd_sent(qp, qp->req.psn);
		}
		softrvt_req_packet(qp, wqe, softrvt_req_opcode(qp, wqe, true, true),
				   qp->req.psn, 0, 0, true, NULL, 0);
		qp->req.psn = softrvt_psn_add(qp->req.psn, 1);
		return SOFTRVT_REQ_WQE_SENT;
	}
	/* Its RETH carries the range; it sends nothing of its own. */
	if (wqe->opcode == IB_WR_FLUSH) {
		softrvt_req_packet(qp, wqe, softrvt_req_opcode(qp, wqe, true, true),
				   qp->req.psn, 0, 0, true, NULL, wqe->length);
		qp->req.psn = softrvt_psn_add(qp->req.psn, 1);
		return SOFTRVT_REQ_WQE_SENT;
	}
	if (softrvt_req_sge(qp, wqe, qp->req.cur_off)) {
		/* The list was fine when the WQE started: an MR went away. */
		wqe->wire_status = IB_WC_LOC_PROT_ERR;
		return SOFTRVT_REQ_WQE_SENT;
	}
	if (wqe->length - qp->req.cur_off > mtu)
		softrvt_train_limit(qp, &qp->s_av, &qp->s_dst_cache, &lim);
	do {
		u32 off = qp->req.cur_off;
		u32 len = min(mtu, wqe->length - off);
		bool last = off + len == wqe->length;

		if (!last && lim.bytes &&
		    softrvt_req_send_train(qp, wqe, &lim, window_end)) {
			if (qp->req.cur_off == wqe->length)
				break;
			continue;
		}
		softrvt_req_packet(qp, wqe, softrvt_req_opcode(qp, wqe, !off, last),
				   qp->req.psn, off, len,
				   softrvt_req_ackreq(qp, last, window_end), &qp->s_sge,
				   wqe->length - off);
		qp->req.psn = softrvt_psn_add(qp->req.psn, 1);
		qp->req.cur_off = off + len;
		if (last)
			break;
	} while (softrvt_psn_cmp(qp->req.psn, window_end) < 0);
	softrvt_sge_state_release(&qp->s_sge);
	return qp->req.cur_off == wqe->length ? SOFTRVT_REQ_WQE_SENT :
					      SOFTRVT_REQ_WQE_PART;
}

/**
 * softrvt_req_send_rc - send what the RC window allows
 * @qp: the RC requester, on the wire
 *
 * Return: whether it stopped because the window or the READ/atomic limit
 * is full (an ACK will restart it) rather than for lack of WQEs.
 */
bool softrvt_req_send_rc(struct softrvt_qp *qp)
{
	bool full = false;

	for (;;) {
		enum softrvt_req_sent sent;
		enum ib_qp_state state;
		struct softrvt_swqe *wqe;
		u32 head;

		spin_lock_irq(&qp->s_lock);
		state = qp->state;
		head = qp->s_head;
		spin_unlock_irq(&qp->s_lock);

		if (qp->req.rnr_wait || qp->req.cur == head ||
		    softrvt_req_at_stop(qp))
			break;
		/* SQD: finish what was started, start nothing new. */
		if (state != IB_QPS_RTS &&
		    !(state == IB_QPS_SQD && qp->req.cur_off))
			break;
		if (softrvt_psn_cmp(qp->req.psn, softrvt_psn_add(qp->comp.acked_psn,
								 SOFTRVT_MAX_INFLIGHT)) >= 0) {
			full = true;
			break;
		}
		wqe = softrvt_get_swqe_ptr(qp, qp->req.cur);
		if (softrvt_wqe_is_local_op(wqe)) {
			if (!softrvt_req_local_op(qp, wqe))
				break;
			continue;
		}
		/* Resent from its start, it keeps its PSNs and its MTU. */
		if (!qp->req.cur_off && softrvt_req_psn_is_new(qp, qp->req.psn))
			softrvt_req_start_wqe(qp, wqe);
		if (wqe->wire_status != IB_WC_SUCCESS) {
			/*
			 * It takes no PSN and completes, in order, once what
			 * precedes it is acknowledged (comp.c).  Nothing after
			 * it is sent: the QP is going to ERR.
			 */
			wqe->lpsn = softrvt_psn_add(wqe->psn, SOFTRVT_PSN_MASK);
			softrvt_req_stop(qp, qp->req.cur);
			qp->req.cur = softrvt_sq_next(qp, qp->req.cur);
			qp->req.cur_off = 0;
			break;
		}
		/* Each READ chunk and atomic counts against max_rd_atomic. */
		sent = softrvt_req_send_wqe(qp, wqe);
		if (sent == SOFTRVT_REQ_WINDOW_FULL) {
			full = true;
			break;
		}
		if (sent == SOFTRVT_REQ_WQE_SENT) {
			qp->req.cur = softrvt_sq_next(qp, qp->req.cur);
			qp->req.cur_off = 0;
		}
		if (softrvt_psn_cmp(qp->req.psn, qp->req.max_psn) > 0)
			qp->req.max_psn = qp->req.psn;
	}
	if (softrvt_req_outstanding(qp) && !qp->req.rnr_wait &&
	    !timer_pending(&qp->ack_timer))
		softrvt_req_arm_ack_timer(qp);
	return full;
}
