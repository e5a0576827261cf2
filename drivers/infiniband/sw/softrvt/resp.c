// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCEv2 responder: request packets become memory writes, receive
 * completions, RDMA READ responses, atomic results and ACKs.
 *
 * An RC responder accepts exactly the PSN it expects.  A later one gets a
 * sequence NAK (once per expected PSN); an earlier one is a duplicate: a
 * SEND or WRITE is acknowledged again, a READ is executed again from its
 * own RETH, an atomic is answered from the replay cache without being
 * executed twice.  ACKs are coalesced: one per engine run, for the last
 * PSN accepted, when a packet asked for one or repaired a sequence error.
 *
 * A UC responder takes what arrives in order and drops the rest of a
 * message with a gap; a UD responder checks the Q_Key and puts the IP
 * header into the first 40 bytes of the receive buffer (the GRH space).
 *
 * Runs in the QP's engine, in process context: the copies into user
 * memory hold no lock.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/*
 * READ responses one engine run sends: a READ of gigabytes is answered
 * over many runs, between which the worker serves other QPs.
 */
#define RVT_READ_BUDGET		64

static bool rvt_op_first(u8 op)
{
	switch (op) {
	case IB_OPCODE_SEND_FIRST:
	case IB_OPCODE_SEND_ONLY:
	case IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE:
	case IB_OPCODE_SEND_ONLY_WITH_INVALIDATE:
	case IB_OPCODE_RDMA_WRITE_FIRST:
	case IB_OPCODE_RDMA_WRITE_ONLY:
	case IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE:
		return true;
	default:
		return false;
	}
}

static bool rvt_op_last(u8 op)
{
	switch (op) {
	case IB_OPCODE_SEND_LAST:
	case IB_OPCODE_SEND_LAST_WITH_IMMEDIATE:
	case IB_OPCODE_SEND_LAST_WITH_INVALIDATE:
	case IB_OPCODE_SEND_ONLY:
	case IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE:
	case IB_OPCODE_SEND_ONLY_WITH_INVALIDATE:
	case IB_OPCODE_RDMA_WRITE_LAST:
	case IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE:
	case IB_OPCODE_RDMA_WRITE_ONLY:
	case IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE:
		return true;
	default:
		return false;
	}
}

static bool rvt_op_send(u8 op)
{
	return op <= IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE ||
	       op == IB_OPCODE_SEND_LAST_WITH_INVALIDATE ||
	       op == IB_OPCODE_SEND_ONLY_WITH_INVALIDATE;
}

/*
 * Write the headers of @mask of an answer at @p, its AETH carrying @msn,
 * for @len payload bytes.  Returns the bytes written, the BTH and
 * extended headers.
 */
static u32 rvt_resp_build(struct rvt_qp *qp, u8 opcode, u16 mask, u32 psn,
			  u8 syndrome, u32 msn, u32 len, const u64 *orig,
			  u8 *p)
{
	u32 pad = rvt_pad_bytes(len);
	u8 *start = p;

	rvt_build_bth((struct rvt_bth *)p, opcode, false, pad, 0xffff,
		      qp->attr.dest_qp_num, false, psn);
	p += sizeof(struct rvt_bth);
	if (mask & RVT_HDR_AETH) {
		put_unaligned_be32((u32)syndrome << 24 |
				   (msn & RVT_BTH_PSN_MASK), p);
		p += sizeof(struct rvt_aeth);
	}
	if (mask & RVT_HDR_ATMACK) {
		put_unaligned_be64(*orig, p);
		p += sizeof(struct rvt_atmack);
	}
	return p - start;
}

/* An XRC TGT QP answers in XRC, without an XRCETH. */
static int rvt_resp_opcode_info(const struct rvt_qp *qp, u8 *opcode,
				u16 *mask)
{
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		*opcode = RVT_OPCODE_XRC | (*opcode & 0x1f);
	return rvt_opcode_info(*opcode, mask);
}

static u16 rvt_resp_sport(const struct rvt_qp *qp)
{
	return rdma_get_udp_sport(qp->s_av.flow_label, qp->ibqp.qp_num,
				  qp->attr.dest_qp_num);
}

/*
 * Build and send an answer: ACK, NAK, READ response or atomic ACK, whose
 * AETH carries @msn.  A READ response's payload is taken from r_sge.
 */
static int rvt_resp_answer_msn(struct rvt_qp *qp, u8 opcode, u32 psn,
			       u8 syndrome, u32 msn, u32 len, const u64 *orig)
{
	struct rvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	struct sk_buff *skb;
	u16 mask;

	if (rvt_resp_opcode_info(qp, &opcode, &mask))
		return -EINVAL;
	skb = rvt_alloc_pkt_from(rdi, rvt_hdr_len(mask), &qp->r_sge, len,
				 true);
	if (!skb)
		return -ENOMEM;
	rvt_resp_build(qp, opcode, mask, psn, syndrome, msn, len, orig,
		       skb->data);
	return rvt_xmit(qp, &qp->s_av, &qp->s_dst_cache, rvt_resp_sport(qp),
			skb);
}

static int rvt_resp_answer(struct rvt_qp *qp, u8 opcode, u32 psn,
			   u8 syndrome, u32 len, const u64 *orig)
{
	return rvt_resp_answer_msn(qp, opcode, psn, syndrome, qp->r_msn, len,
				   orig);
}

/*
 * Return: 0 if the ACK or NAK left; otherwise it is as if never sent,
 * and whoever owes it sends it again later rather than leave the
 * requester to its timer.
 */
static int rvt_resp_ack(struct rvt_qp *qp, u8 syndrome, u32 psn)
{
	trace_softrvt_ack_sent(qp, psn, syndrome, qp->r_msn);
	return rvt_resp_answer(qp, IB_OPCODE_RC_ACKNOWLEDGE, psn, syndrome, 0,
			       NULL);
}

/**
 * rvt_resp_flush_ack - send the coalesced ACK, if one is owed
 * @qp: the responder
 */
void rvt_resp_flush_ack(struct rvt_qp *qp)
{
	/* It would acknowledge the READs whose responses are still due. */
	if (!qp->r_ack_pending || qp->r_read_pending)
		return;
	if (!rvt_resp_ack(qp, RVT_AETH_ACK | RVT_AETH_NO_CREDIT,
			  rvt_psn_add(qp->r_psn, RVT_PSN_MASK)))
		qp->r_ack_pending = false;
}

/**
 * rvt_resp_reset - forget the responder's progress, for RESET and RTR
 * @qp: the QP, its engine stopped
 */
void rvt_resp_reset(struct rvt_qp *qp)
{
	qp->r_msn = 0;
	qp->r_nak_sent = false;
	qp->r_ack_pending = false;
	qp->r_in_msg = false;
	qp->r_has_rwqe = false;
	memset(qp->r_atomic, 0, sizeof(qp->r_atomic));
	memset(qp->r_read, 0, sizeof(qp->r_read));
	qp->r_read_next = 0;
	qp->r_read_pending = 0;
	qp->r_read_held = 0;
}

/* Complete the WQE held; an XRC SRQ gone meanwhile takes it with it. */
static void rvt_resp_recv_done(struct rvt_qp *qp, enum ib_wc_status status,
			       struct ib_wc *wc, bool solicited)
{
	struct rvt_cq *cq = rvt_qp_rx_cq(qp);

	wc->wr_id = qp->r_wqe->wr_id;
	wc->status = status;
	wc->qp = &qp->ibqp;
	wc->port_num = 1;
	qp->r_has_rwqe = false;
	if (cq)
		rvt_cq_enter(cq, wc, solicited || status != IB_WC_SUCCESS);
}

/*
 * An XRC TGT QP handles a request with the SRQ @srqn, if it is one of
 * its domain: in r_xsrq, NULL if not, until rvt_resp_xrc_leave().
 */
static void rvt_resp_xrc_enter(struct rvt_qp *qp, u32 srqn)
{
	mutex_lock(&qp->r_xrc_mutex);
	qp->r_xsrq = rvt_xsrq_get(ib_to_rvt(qp->ibqp.device), srqn, qp->xrcd);
}

static void rvt_resp_xrc_leave(struct rvt_qp *qp)
{
	rvt_xsrq_put(qp->r_xsrq);
	qp->r_xsrq = NULL;
	mutex_unlock(&qp->r_xrc_mutex);
}

static void rvt_resp_recv_error(struct rvt_qp *qp, enum ib_wc_status status)
{
	struct ib_wc wc = { .opcode = IB_WC_RECV };

	rvt_resp_recv_done(qp, status, &wc, true);
}

/**
 * rvt_resp_flush - flush the receive WQE a half-received message holds
 * @qp: the QP, in ERR; called by its send engine only
 *
 * A SEND arriving in several packets keeps its receive WQE in r_wqe, off
 * the ring, until its last packet.  When the QP enters ERR first that WQE
 * completes with IB_WC_WR_FLUSH_ERR, before those still on the ring,
 * which were posted after it.
 */
void rvt_resp_flush(struct rvt_qp *qp)
{
	bool xrc = qp->ibqp.qp_type == IB_QPT_XRC_TGT;

	qp->r_in_msg = false;
	if (!qp->r_has_rwqe)
		return;
	if (xrc)
		rvt_resp_xrc_enter(qp, qp->r_xrc_srqn);
	rvt_resp_recv_error(qp, IB_WC_WR_FLUSH_ERR);
	if (xrc)
		rvt_resp_xrc_leave(qp);
}

/* Take the receive WQE of a message.  Return: 0, -ENOENT, -EIO. */
static int rvt_resp_take_rwqe(struct rvt_qp *qp)
{
	int ret;

	if (qp->r_has_rwqe)
		return 0;
	ret = rvt_get_rwqe(qp, qp->r_wqe);
	if (!ret)
		qp->r_has_rwqe = true;
	return ret;
}

/*
 * A SEND packet's payload, r_len bytes into the receive WQE.
 * Return: 0, -ENOENT without a receive WQE, or a NAK code.
 */
static int rvt_resp_send_payload(struct rvt_qp *qp, struct sk_buff *skb,
				 u32 off, u32 len)
{
	int ret = rvt_resp_take_rwqe(qp);

	if (ret == -ENOENT)
		return ret;
	if (ret)
		return RVT_NAK_REM_OP;
	if (rvt_sge_state_init(&qp->r_sge, rvt_qp_rx_pd(qp),
			       qp->r_wqe->sg_list, qp->r_wqe->num_sge,
			       IB_ACCESS_LOCAL_WRITE)) {
		rvt_resp_recv_error(qp, IB_WC_LOC_PROT_ERR);
		return RVT_NAK_REM_OP;
	}
	if (qp->r_sge.total_len - qp->r_len < len) {
		rvt_sge_state_release(&qp->r_sge);
		rvt_resp_recv_error(qp, IB_WC_LOC_LEN_ERR);
		return RVT_NAK_INV_REQ;
	}
	rvt_sge_skip(&qp->r_sge, qp->r_len);
	rvt_copy_skb_to_sge(&qp->r_sge, skb, off, len);
	rvt_sge_state_release(&qp->r_sge);
	qp->r_len += len;
	return 0;
}

/* A WRITE packet's payload, r_len bytes into the RETH's region. */
static int rvt_resp_write_payload(struct rvt_qp *qp, struct sk_buff *skb,
				  u32 off, u32 len)
{
	struct rvt_mr *mr;

	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return RVT_NAK_REM_ACCESS;
	if (qp->r_dma_len - qp->r_len < len)
		return RVT_NAK_INV_REQ;
	if (!len)
		return 0;
	if (rvt_rkey_lookup(qp, qp->r_rkey, qp->r_va + qp->r_len, len,
			    IB_ACCESS_REMOTE_WRITE, &mr))
		return RVT_NAK_REM_ACCESS;
	rvt_sge_state_init_one(&qp->r_sge, mr, qp->r_va + qp->r_len, len);
	rvt_copy_skb_to_sge(&qp->r_sge, skb, off, len);
	rvt_sge_state_release(&qp->r_sge);
	qp->r_len += len;
	return 0;
}

/* A connected responder's fatal error: NAK it and enter ERR. */
static void rvt_resp_fatal(struct rvt_qp *qp, u32 psn, int nak)
{
	enum ib_event_type event = IB_EVENT_QP_FATAL;

	if (nak == RVT_NAK_REM_ACCESS)
		event = IB_EVENT_QP_ACCESS_ERR;
	else if (nak == RVT_NAK_INV_REQ)
		event = IB_EVENT_QP_REQ_ERR;
	ibdev_dbg(qp->ibqp.device,
		  "QP %u: request at PSN %u refused (NAK code %d): QP to ERR\n",
		  qp->ibqp.qp_num, psn, nak);
	if (rvt_is_rc_resp(qp->ibqp.qp_type)) {
		rvt_qp_count(qp, RVT_CNT_ERR_NAKS_SENT, 1);
		rvt_resp_ack(qp, RVT_AETH_NAK | nak, psn);
		qp->r_ack_pending = false;
	}
	/*
	 * The receive a WRITE with immediate took: an rkey the WRITE may not
	 * use is its "Local Access Error" (IBA 11.6.2).
	 */
	if (qp->r_has_rwqe)
		rvt_resp_recv_error(qp, nak == RVT_NAK_REM_ACCESS ?
					IB_WC_LOC_ACCESS_ERR :
					IB_WC_REM_INV_REQ_ERR);
	rvt_qp_set_error(qp, event);
}

/* Slot of the READ taken @back places before the next one. */
static u32 rvt_read_slot(const struct rvt_qp *qp, u32 back)
{
	return (qp->r_read_next + RVT_MAX_RD_ATOMIC - back) % RVT_MAX_RD_ATOMIC;
}

/* Owe the responses of @e from @off to @end (a pass owes at least one). */
static void rvt_read_owe(struct rvt_read_res *e, u32 off, u32 end)
{
	if (e->due) {
		e->off = min(e->off, off);
		e->end = max(e->end, end);
	} else {
		e->off = off;
		e->end = end;
		e->due = true;
	}
}

/* No responses are owed any more: the QP failed or left the states. */
static void rvt_read_forget(struct rvt_qp *qp)
{
	u32 i;

	for (i = 0; i < RVT_MAX_RD_ATOMIC; i++)
		qp->r_read[i].due = false;
	qp->r_read_pending = 0;
	qp->r_read_held = 0;
}

/*
 * Take a new READ request: its responses are sent by
 * rvt_resp_read_answer(), in the order the READs came.  The responder
 * holds a resource for each READ until its last response is out, and
 * has max_dest_rd_atomic of them: a requester that asks for more is in
 * error, as it counts each READ until its last response is in.  READs
 * answered again for duplicates hold none: they were answered once.
 * Return: 0 or a NAK code; *@next is the PSN after its answers.
 */
static int rvt_resp_read_take(struct rvt_qp *qp, u32 psn,
			      const struct rvt_reth *reth, u32 *next)
{
	u32 len = get_unaligned_be32(&reth->len);
	u32 rkey = get_unaligned_be32(&reth->rkey);
	u64 va = get_unaligned_be64(&reth->va);
	struct rvt_read_res *e;
	struct rvt_mr *mr;
	u64 npkts;

	if (!qp->attr.max_dest_rd_atomic ||
	    qp->r_read_held >= qp->attr.max_dest_rd_atomic ||
	    len > RVT_MAX_MSG_SZ)
		return RVT_NAK_INV_REQ;
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ))
		return RVT_NAK_REM_ACCESS;
	/* Checked now for the NAK; again each run, as the MR may go. */
	if (len) {
		if (rvt_rkey_lookup(qp, rkey, va, len, IB_ACCESS_REMOTE_READ,
				    &mr))
			return RVT_NAK_REM_ACCESS;
		rvt_put_mr(mr);
	}
	e = &qp->r_read[qp->r_read_next];
	e->va = va;
	e->rkey = rkey;
	e->len = len;
	e->mtu = rvt_qp_mtu(qp);
	npkts = max_t(u64, 1, DIV_ROUND_UP_ULL(len, e->mtu));
	e->psn = psn;
	e->lpsn = rvt_psn_add(psn, npkts - 1);
	e->msn = qp->r_msn;
	e->srqn = qp->r_xrc_srqn;
	e->answered = false;
	e->due = false;
	rvt_read_owe(e, 0, len);
	qp->r_read_next = (qp->r_read_next + 1) % RVT_MAX_RD_ATOMIC;
	qp->r_read_pending++;
	qp->r_read_held++;
	*next = rvt_psn_add(e->lpsn, 1);
	return 0;
}

/*
 * A duplicate READ request: the requester lost responses and asks again
 * from @psn.  It must repeat one of the last max_dest_rd_atomic READs
 * taken (a requester has no more outstanding), from the same place of
 * the same region, for no more than that READ asked.  That range alone
 * is answered again: the requester repeats every later request it
 * wants answered, so one duplicate never draws more responses than its
 * own length.  Anything else is dropped.
 */
static void rvt_resp_read_again(struct rvt_qp *qp, const struct rvt_pkt *pkt,
				const struct rvt_reth *reth)
{
	u32 len = get_unaligned_be32(&reth->len);
	u64 va = get_unaligned_be64(&reth->va);
	struct rvt_read_res *e = NULL;
	u32 psn = pkt->psn;
	u32 back, slot;
	u64 off, end;

	for (back = 1; back <= qp->attr.max_dest_rd_atomic; back++) {
		slot = rvt_read_slot(qp, back);
		if (!qp->r_read[slot].mtu)
			break;		/* never used since the reset */
		if (rvt_psn_cmp(psn, qp->r_read[slot].psn) >= 0 &&
		    rvt_psn_cmp(psn, qp->r_read[slot].lpsn) <= 0) {
			e = &qp->r_read[slot];
			break;
		}
	}
	if (!e) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	off = (u64)((psn - e->psn) & RVT_PSN_MASK) * e->mtu;
	if (get_unaligned_be32(&reth->rkey) != e->rkey || va != e->va + off ||
	    len > e->len - off) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_HDR, pkt);
		return;
	}
	/* Whole responses: a range that ends within one ends with it. */
	end = min_t(u64, e->len, round_up(off + len, e->mtu));
	rvt_read_owe(e, off, end);
	/*
	 * Outside the pass, it starts a new one at it: the READs between
	 * owe nothing until their own duplicates come.
	 */
	if (back > qp->r_read_pending)
		qp->r_read_pending = back;
}

static u8 rvt_read_resp_opcode(bool first, bool last)
{
	if (first && last)
		return IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY;
	if (first)
		return IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST;
	if (last)
		return IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST;
	return IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/*
 * The bytes of the READ response @off bytes into @e, from its BTH to the
 * end of its ICRC; 0 if it has no header layout.
 */
static u32 rvt_read_resp_len(const struct rvt_qp *qp,
			     const struct rvt_read_res *e, u32 off)
{
	u32 n = min(e->mtu, e->len - off);
	u8 opcode = rvt_read_resp_opcode(!off, off + n == e->len);
	u16 mask;

	if (rvt_resp_opcode_info(qp, &opcode, &mask))
		return 0;
	return rvt_pkt_bytes(mask, n) + RVT_ICRC_BYTES;
}

/*
 * Send up to @budget responses of @e from @off on as one train
 * (rvt_xmit_train()), as many as @lim lets (rvt_train_take()).  Returns
 * how many went, 0 when fewer than two responses would go in one.
 */
static u32 rvt_resp_read_train(struct rvt_qp *qp, struct rvt_read_res *e,
			       const struct rvt_train_limit *lim, u32 off,
			       u32 psn, u32 budget)
{
	u32 seg_len = rvt_read_resp_len(qp, e, off);
	u32 n = 0, bytes = 0, o = off, i;
	struct sk_buff *skb;
	u8 *p;

	while (n < budget && o < e->end) {
		u32 payload = min(e->mtu, e->len - o);

		if (!rvt_train_take(lim, n, seg_len,
				    rvt_read_resp_len(qp, e, o),
				    o + payload == e->len, &bytes))
			break;
		o += payload;
		n++;
	}
	if (n < 2)
		return 0;
	skb = rvt_alloc_train(ib_to_rvt(qp->ibqp.device), bytes);
	if (!skb)
		return 0;
	p = skb->data;
	for (i = 0; i < n; i++) {
		u32 len = min(e->mtu, e->len - off);
		u8 opcode = rvt_read_resp_opcode(!off, off + len == e->len);
		u16 mask;

		/* rvt_read_resp_len() found the layout of each. */
		rvt_resp_opcode_info(qp, &opcode, &mask);
		p += rvt_resp_build(qp, opcode, mask, psn,
				    RVT_AETH_ACK | RVT_AETH_NO_CREDIT, e->msn,
				    len, NULL, p);
		p += rvt_put_payload(p, &qp->r_sge, len) + RVT_ICRC_BYTES;
		psn = rvt_psn_add(psn, 1);
		off += len;
	}
	rvt_xmit_train(qp, &qp->s_av, &qp->s_dst_cache, rvt_resp_sport(qp),
		       skb, seg_len);
	return n;
}

/* Send up to @budget of the responses @e owes, from its e->off. */
static int rvt_resp_read_some(struct rvt_qp *qp, struct rvt_read_res *e,
			      u32 budget)
{
	u32 off = e->off;
	u32 left = e->end - off;
	u32 psn = rvt_psn_add(e->psn, off / e->mtu);
	u32 bytes = min_t(u64, left, (u64)budget * e->mtu);
	struct rvt_train_limit lim = {};
	struct rvt_mr *mr = NULL;
	u32 sent = 0;

	if (left > e->mtu && budget > 1)
		rvt_train_limit(qp, &qp->s_av, &qp->s_dst_cache, &lim);
	if (bytes && rvt_rkey_lookup(qp, e->rkey, e->va + off, bytes,
				     IB_ACCESS_REMOTE_READ, &mr))
		return -EACCES;
	rvt_sge_state_init_one(&qp->r_sge, mr, e->va + off, bytes);
	do {
		u32 n = min(e->mtu, e->len - off);
		u32 train = lim.bytes ?
			    rvt_resp_read_train(qp, e, &lim, off, psn,
						budget - sent) : 0;

		if (train) {
			psn = rvt_psn_add(psn, train);
			off = min_t(u64, e->len, off + (u64)train * e->mtu);
			sent += train;
			continue;
		}
		rvt_resp_answer_msn(qp, rvt_read_resp_opcode(!off,
							     off + n == e->len),
				    psn, RVT_AETH_ACK | RVT_AETH_NO_CREDIT,
				    e->msn, n, NULL);
		psn = rvt_psn_add(psn, 1);
		off += n;
		sent++;
	} while (off < e->end && sent < budget);
	rvt_sge_state_release(&qp->r_sge);
	e->off = off;
	return sent;
}

/**
 * rvt_resp_read_answer - send the next responses of the READs taken
 * @qp: the responder
 *
 * Sends at most RVT_READ_BUDGET responses, oldest READ first.  An rkey
 * that stopped being valid meanwhile fails the READ as it would have
 * failed when it came.
 *
 * Return: whether responses are still due: the engine must run again.
 */
bool rvt_resp_read_answer(struct rvt_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	int budget = RVT_READ_BUDGET;

	if (state != IB_QPS_RTR && state != IB_QPS_RTS &&
	    state != IB_QPS_SQD && state != IB_QPS_SQE)
		rvt_read_forget(qp);
	while (qp->r_read_pending && budget > 0) {
		struct rvt_read_res *e =
			&qp->r_read[rvt_read_slot(qp, qp->r_read_pending)];
		bool xrc = qp->ibqp.qp_type == IB_QPT_XRC_TGT;
		int sent;

		/* Skipped by the pass: no duplicate asked for it. */
		if (!e->due) {
			qp->r_read_pending--;
			continue;
		}

		/* The rkey is the SRQ's PD's, as when the READ came. */
		if (xrc)
			rvt_resp_xrc_enter(qp, e->srqn);
		sent = rvt_resp_read_some(qp, e, budget);
		if (xrc)
			rvt_resp_xrc_leave(qp);

		if (sent < 0) {
			u32 psn = rvt_psn_add(e->psn, e->off / e->mtu);

			rvt_read_forget(qp);
			rvt_resp_fatal(qp, psn, RVT_NAK_REM_ACCESS);
			break;
		}
		budget -= sent;
		if (e->off >= e->end) {
			e->due = false;
			if (e->end == e->len && !e->answered) {
				e->answered = true;
				qp->r_read_held--;
			}
			qp->r_read_pending--;
		}
	}
	return qp->r_read_pending;
}

/**
 * rvt_resp_can_take - whether the responder may handle a request now
 * @qp: the responder
 * @skb: the request, first in the QP's queue
 *
 * While READ responses are still due, a later request waits: its ACK or
 * NAK would acknowledge the READs too early, and a WRITE or atomic could
 * change the memory they read.  Only more READs, new or repeated, are
 * taken in between; a new one only while the ring has a slot outside
 * the pass, as its slot is the oldest READ's.
 *
 * Return: true if rvt_resp_packet() may have it.
 */
bool rvt_resp_can_take(struct rvt_qp *qp, struct sk_buff *skb)
{
	struct rvt_pkt *pkt = rvt_pkt_of(skb);
	int cmp;

	if (!qp->r_read_pending)
		return true;
	if ((pkt->opcode & 0x1f) != IB_OPCODE_RDMA_READ_REQUEST)
		return false;
	cmp = rvt_psn_cmp(pkt->psn, qp->r_psn);
	return cmp < 0 || (!cmp && qp->r_read_pending < RVT_MAX_RD_ATOMIC);
}

static int rvt_resp_atomic(struct rvt_qp *qp, u32 psn,
			   const struct rvt_atmeth *ateth, bool fetch_add)
{
	struct rvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	u64 va = get_unaligned_be64(&ateth->va);
	u64 arg = get_unaligned_be64(&ateth->swap_add);
	u64 cmp = get_unaligned_be64(&ateth->compare);
	struct rvt_mr *mr;
	u64 *target, old;
	u32 avail;

	if (!qp->attr.max_dest_rd_atomic || (va & (sizeof(u64) - 1)))
		return RVT_NAK_INV_REQ;
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC))
		return RVT_NAK_REM_ACCESS;
	if (rvt_rkey_lookup(qp, get_unaligned_be32(&ateth->rkey), va,
			    sizeof(u64), IB_ACCESS_REMOTE_ATOMIC, &mr))
		return RVT_NAK_REM_ACCESS;

	target = rvt_mr_map(mr, va, sizeof(u64), &avail);
	spin_lock(&rdi->atomic_lock);
	old = READ_ONCE(*target);
	if (fetch_add)
		WRITE_ONCE(*target, old + arg);
	else if (old == cmp)
		WRITE_ONCE(*target, arg);
	spin_unlock(&rdi->atomic_lock);
	rvt_mr_unmap(mr, target);
	rvt_put_mr(mr);

	qp->r_atomic[qp->r_atomic_next].psn = psn;
	qp->r_atomic[qp->r_atomic_next].orig = old;
	qp->r_atomic[qp->r_atomic_next].valid = true;
	qp->r_atomic_next = (qp->r_atomic_next + 1) % RVT_MAX_RD_ATOMIC;
	rvt_resp_answer(qp, IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE, psn,
			RVT_AETH_ACK | RVT_AETH_NO_CREDIT, 0, &old);
	return 0;
}

/*
 * FLUSH and ATOMIC_WRITE (placement.c), answered with a READ response
 * without payload.  Return: 0 or a NAK code.
 */
static int rvt_resp_placement(struct rvt_qp *qp, struct sk_buff *skb,
			      struct rvt_pkt *pkt)
{
	const u8 *hdr = skb->data + rvt_ext_hdr_off(pkt->mask);
	const struct rvt_reth *reth;
	u64 va, value;
	u32 rkey, len;
	int ret;

	reth = (const void *)(pkt->mask & RVT_HDR_FETH ?
			      hdr + sizeof(struct rvt_feth) : hdr);
	va = get_unaligned_be64(&reth->va);
	rkey = get_unaligned_be32(&reth->rkey);
	len = get_unaligned_be32(&reth->len);
	if (pkt->mask & RVT_HDR_FETH) {
		u32 feth = get_unaligned_be32(hdr);

		ret = rvt_placement_flush(qp, rkey, va, len,
					  feth & RVT_FETH_PLT_MASK,
					  (feth & RVT_FETH_SEL_MASK) >>
					  RVT_FETH_SEL_SHIFT);
	} else {
		/* oA19-28: eight bytes, no more, no fewer, no pad. */
		if (len != sizeof(value) || pkt->payload_len != sizeof(value) ||
		    pkt->pad)
			return RVT_NAK_INV_REQ;
		if (skb_copy_bits(skb, pkt->hdr_len, &value, sizeof(value)))
			return RVT_NAK_INV_REQ;
		ret = rvt_placement_atomic_write(qp, rkey, va, value);
	}
	if (ret)
		return ret == -EACCES ? RVT_NAK_REM_ACCESS : RVT_NAK_INV_REQ;
	rvt_resp_answer(qp, IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY, pkt->psn,
			RVT_AETH_ACK | RVT_AETH_NO_CREDIT, 0, NULL);
	return 0;
}

static void rvt_resp_duplicate(struct rvt_qp *qp, struct sk_buff *skb,
			       struct rvt_pkt *pkt)
{
	const u8 *hdr = skb->data + rvt_ext_hdr_off(pkt->mask);
	u8 op = pkt->opcode & 0x1f;
	int i;

	rvt_qp_count(qp, RVT_CNT_DUP_REQUESTS, 1);
	switch (op) {
	case IB_OPCODE_RDMA_READ_REQUEST:
		rvt_resp_read_again(qp, pkt,
				    (const struct rvt_reth *)hdr);
		return;
	case IB_OPCODE_COMPARE_SWAP:
	case IB_OPCODE_FETCH_ADD:
		for (i = 0; i < RVT_MAX_RD_ATOMIC; i++) {
			if (qp->r_atomic[i].valid &&
			    qp->r_atomic[i].psn == pkt->psn) {
				rvt_resp_answer(qp,
						IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE,
						pkt->psn,
						RVT_AETH_ACK | RVT_AETH_NO_CREDIT,
						0, &qp->r_atomic[i].orig);
				return;
			}
		}
		return;
	case IB_OPCODE_FLUSH:
	case IB_OPCODE_ATOMIC_WRITE:
		/*
		 * Done once, in order, when first taken: answered again, not
		 * done again (oA19-14): later requests may have written since.
		 */
		rvt_resp_answer(qp, IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY,
				pkt->psn, RVT_AETH_ACK | RVT_AETH_NO_CREDIT, 0,
				NULL);
		return;
	default:
		qp->r_ack_pending = true;
		return;
	}
}

/*
 * A SEND or WRITE packet of the current message, in order.
 * Return: 0, -ENOENT (no receive WQE: nothing was written), or a NAK code.
 */
static int rvt_resp_message(struct rvt_qp *qp, struct sk_buff *skb,
			    struct rvt_pkt *pkt)
{
	const u8 *hdr = skb->data + rvt_ext_hdr_off(pkt->mask);
	u8 op = pkt->opcode & 0x1f;
	u32 mtu = rvt_qp_mtu(qp);
	struct ib_wc wc = {};
	int ret;

	if (rvt_op_first(op)) {
		qp->r_len = 0;
		qp->r_msg_op = op;
	} else if (!qp->r_in_msg ||
		   rvt_op_send(op) != rvt_op_send(qp->r_msg_op)) {
		return RVT_NAK_INV_REQ;
	}
	/* Every packet but the last of a message carries a full MTU. */
	if (rvt_op_last(op) ? pkt->payload_len > mtu :
			      pkt->payload_len != mtu)
		return RVT_NAK_INV_REQ;

	if (rvt_op_send(op)) {
		ret = rvt_resp_send_payload(qp, skb, pkt->hdr_len,
					    pkt->payload_len);
		if (ret)
			return ret;
		qp->r_in_msg = !rvt_op_last(op);
		if (qp->r_in_msg)
			return 0;
		wc.opcode = IB_WC_RECV;
		wc.byte_len = qp->r_len;
		/*
		 * SEND with Invalidate: the IETH, last of the headers, names
		 * an MR or a type 2 window of this QP's PD.  One it cannot
		 * invalidate fails the receive with IB_WC_REM_INV_REQ_ERR, as
		 * in rxe, and is NAKed.
		 */
		if (pkt->mask & RVT_HDR_IETH) {
			u32 rkey = get_unaligned_be32(skb->data + pkt->hdr_len -
						      sizeof(__be32));

			if (rvt_rkey_invalidate(qp, rkey))
				return RVT_NAK_INV_REQ;
			wc.wc_flags |= IB_WC_WITH_INVALIDATE;
			wc.ex.invalidate_rkey = rkey;
		}
	} else {
		bool imm = pkt->mask & RVT_HDR_IMMDT;

		if (pkt->mask & RVT_HDR_RETH) {
			const struct rvt_reth *reth = (const void *)hdr;

			qp->r_va = get_unaligned_be64(&reth->va);
			qp->r_rkey = get_unaligned_be32(&reth->rkey);
			qp->r_dma_len = get_unaligned_be32(&reth->len);
		}
		/* Take the WQE first: an RNR NAK must leave memory alone. */
		if (imm) {
			ret = rvt_resp_take_rwqe(qp);
			if (ret)
				return ret == -ENOENT ? ret : RVT_NAK_REM_OP;
		}
		ret = rvt_resp_write_payload(qp, skb, pkt->hdr_len,
					     pkt->payload_len);
		if (ret)
			return ret;
		qp->r_in_msg = !rvt_op_last(op);
		if (qp->r_in_msg)
			return 0;
		if (qp->r_len != qp->r_dma_len)
			return RVT_NAK_INV_REQ;
		if (!imm)
			return 0;
		wc.opcode = IB_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = qp->r_dma_len;
	}
	if (pkt->mask & RVT_HDR_IMMDT) {
		memcpy(&wc.ex.imm_data, skb->data + pkt->hdr_len - 4,
		       sizeof(wc.ex.imm_data));
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	wc.src_qp = qp->attr.dest_qp_num;
	rvt_resp_recv_done(qp, IB_WC_SUCCESS, &wc, pkt->se);
	return 0;
}

/*
 * No receive WQE for the request at @psn.  As with a sequence NAK, the
 * ACK owed goes first, and the packets of the burst that follow draw
 * nothing (r_nak_sent): a second NAK for the same PSN would cost a
 * requester one of its retries (rxe counts each), and a RoCE NIC sends
 * none.  The request, when it comes again and is taken, is acknowledged.
 */
static void rvt_resp_rnr_nak(struct rvt_qp *qp, u32 psn)
{
	rvt_resp_flush_ack(qp);
	rvt_qp_count(qp, RVT_CNT_RNR_NAKS_SENT, 1);
	if (!rvt_resp_ack(qp, RVT_AETH_RNR_NAK |
			  (qp->attr.min_rnr_timer & RVT_AETH_VALUE_MASK), psn))
		qp->r_nak_sent = true;
}

static void rvt_resp_rc(struct rvt_qp *qp, struct sk_buff *skb,
			struct rvt_pkt *pkt)
{
	const u8 *hdr = skb->data + rvt_ext_hdr_off(pkt->mask);
	int diff = rvt_psn_cmp(pkt->psn, qp->r_psn);
	u8 op = pkt->opcode & 0x1f;
	u32 next = rvt_psn_add(pkt->psn, 1);
	int ret;

	if (diff > 0) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_PSN, pkt);
		if (!qp->r_nak_sent) {
			/*
			 * The ACK owed goes first: the NAK implies it, but a
			 * requester may count retries until it sees an ACK.
			 */
			rvt_resp_flush_ack(qp);
			rvt_qp_count(qp, RVT_CNT_SEQ_NAKS_SENT, 1);
			if (!rvt_resp_ack(qp, RVT_AETH_NAK | RVT_NAK_PSN_SEQ,
					  qp->r_psn))
				qp->r_nak_sent = true;
		}
		return;
	}
	if (diff < 0) {
		rvt_resp_duplicate(qp, skb, pkt);
		return;
	}
	/*
	 * An XRC request must name an SRQ of the TGT QP's domain, the same
	 * for every packet of a message; anything else is the requester's
	 * error (or a forgery from its path).
	 */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT &&
	    (!qp->r_xsrq || pkt->srqn != qp->r_xrc_srqn)) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_XRC_SRQ, pkt);
		rvt_resp_fatal(qp, pkt->psn, RVT_NAK_INV_REQ);
		return;
	}

	switch (op) {
	case IB_OPCODE_RDMA_READ_REQUEST:
		ret = qp->r_in_msg ? RVT_NAK_INV_REQ :
		      rvt_resp_read_take(qp, pkt->psn,
					 (const struct rvt_reth *)hdr, &next);
		/* The responses acknowledge what came before. */
		if (!ret)
			qp->r_ack_pending = false;
		break;
	case IB_OPCODE_COMPARE_SWAP:
	case IB_OPCODE_FETCH_ADD:
		ret = qp->r_in_msg ? RVT_NAK_INV_REQ :
		      rvt_resp_atomic(qp, pkt->psn,
				      (const struct rvt_atmeth *)hdr,
				      op == IB_OPCODE_FETCH_ADD);
		if (!ret)
			qp->r_ack_pending = false;
		break;
	case IB_OPCODE_FLUSH:
	case IB_OPCODE_ATOMIC_WRITE:
		ret = qp->r_in_msg ? RVT_NAK_INV_REQ :
		      rvt_resp_placement(qp, skb, pkt);
		if (!ret)
			qp->r_ack_pending = false;
		break;
	default:
		ret = rvt_resp_message(qp, skb, pkt);
		if (ret == -ENOENT) {
			rvt_resp_rnr_nak(qp, pkt->psn);
			return;
		}
		/*
		 * The packet a sequence NAK asked for is acknowledged even
		 * without AckReq: a requester counts its retries until an ACK
		 * shows progress (rxe resets its retry counter on an ACK, not
		 * on the progress a later NAK implies), and on a lossy link a
		 * resent burst that is cut again gets only another NAK.
		 * Without this ACK the retries run out although every burst
		 * moved the message on.
		 */
		if (!ret && (pkt->ackreq || qp->r_nak_sent))
			qp->r_ack_pending = true;
		break;
	}
	if (ret) {
		rvt_resp_fatal(qp, pkt->psn, ret);
		return;
	}
	if (rvt_op_last(op) || op == IB_OPCODE_RDMA_READ_REQUEST ||
	    op == IB_OPCODE_COMPARE_SWAP || op == IB_OPCODE_FETCH_ADD ||
	    op == IB_OPCODE_FLUSH || op == IB_OPCODE_ATOMIC_WRITE)
		qp->r_msn = (qp->r_msn + 1) & RVT_BTH_PSN_MASK;
	qp->r_psn = next;
	qp->r_nak_sent = false;
}

static void rvt_resp_uc(struct rvt_qp *qp, struct sk_buff *skb,
			struct rvt_pkt *pkt)
{
	u8 op = pkt->opcode & 0x1f;
	int ret;

	if (pkt->psn != qp->r_psn) {
		/* Packets were lost: so is the message they belonged to. */
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_PSN, pkt);
		qp->r_in_msg = false;
	}
	qp->r_psn = rvt_psn_add(pkt->psn, 1);
	if (rvt_op_first(op))
		qp->r_in_msg = false;	/* a message cut short is dropped */
	else if (!qp->r_in_msg)
		return;

	ret = rvt_resp_message(qp, skb, pkt);
	if (ret) {
		/* The receive WQE, if taken, serves the next message. */
		rvt_qp_drop(qp, ret == -ENOENT ? RVT_CNT_DROP_NO_RWQE :
				RVT_CNT_DROP_BAD_HDR, pkt);
		qp->r_in_msg = false;
	}
}

static void rvt_resp_ud(struct rvt_qp *qp, struct sk_buff *skb,
			struct rvt_pkt *pkt)
{
	const struct rvt_deth *deth = (const void *)(skb->data +
						     sizeof(struct rvt_bth));
	struct ib_wc wc = {
		.opcode = IB_WC_RECV,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = pkt->ipv6 ? RDMA_NETWORK_IPV6 :
						RDMA_NETWORK_IPV4,
	};
	u8 grh[RVT_GRH_BYTES] = {};
	int ret;

	if (get_unaligned_be32(&deth->qkey) != qp->attr.qkey) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_QKEY, pkt);
		return;
	}
	ret = rvt_get_rwqe(qp, qp->r_wqe);
	if (ret) {
		rvt_qp_drop(qp, RVT_CNT_DROP_NO_RWQE, pkt);
		return;
	}
	qp->r_has_rwqe = true;
	if (rvt_sge_state_init(&qp->r_sge, qp->ibqp.pd, qp->r_wqe->sg_list,
			       qp->r_wqe->num_sge, IB_ACCESS_LOCAL_WRITE)) {
		rvt_resp_recv_error(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	if (qp->r_sge.total_len < RVT_GRH_BYTES + pkt->payload_len) {
		rvt_sge_state_release(&qp->r_sge);
		rvt_resp_recv_error(qp, IB_WC_LOC_LEN_ERR);
		return;
	}
	/* An IPv4 header goes in the last 20 bytes, as rxe and NICs do. */
	if (pkt->ipv6)
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	else
		memcpy(grh + RVT_GRH_BYTES - sizeof(struct iphdr), ip_hdr(skb),
		       sizeof(struct iphdr));
	rvt_copy_to_sge(&qp->r_sge, grh, sizeof(grh));
	rvt_copy_skb_to_sge(&qp->r_sge, skb, pkt->hdr_len, pkt->payload_len);
	rvt_sge_state_release(&qp->r_sge);

	wc.byte_len = RVT_GRH_BYTES + pkt->payload_len;
	wc.src_qp = get_unaligned_be32(&deth->sqp) & RVT_BTH_QPN_MASK;
	if (pkt->mask & RVT_HDR_IMMDT) {
		memcpy(&wc.ex.imm_data, skb->data + pkt->hdr_len - 4,
		       sizeof(wc.ex.imm_data));
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	rvt_resp_recv_done(qp, IB_WC_SUCCESS, &wc, pkt->se);
}

/*
 * An XRC TGT QP: RC, with the SRQ the request names.  A message in
 * progress keeps the SRQ of its first packet: its receive WQE came from
 * there, and its WRITE's rkey is checked in that SRQ's PD.
 */
static void rvt_resp_xrc(struct rvt_qp *qp, struct sk_buff *skb,
			 struct rvt_pkt *pkt)
{
	if (!qp->r_in_msg && !qp->r_has_rwqe)
		qp->r_xrc_srqn = pkt->srqn;
	rvt_resp_xrc_enter(qp, qp->r_xrc_srqn);
	rvt_resp_rc(qp, skb, pkt);
	rvt_resp_xrc_leave(qp);
}

/**
 * rvt_resp_packet - handle a request packet
 * @qp: the responder
 * @skb: the packet, data at the BTH; the caller frees it
 */
void rvt_resp_packet(struct rvt_qp *qp, struct sk_buff *skb)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	struct rvt_pkt *pkt = rvt_pkt_of(skb);

	/* Receiving works in every state from RTR to SQE. */
	if (state != IB_QPS_RTR && state != IB_QPS_RTS &&
	    state != IB_QPS_SQD && state != IB_QPS_SQE) {
		rvt_qp_drop(qp, RVT_CNT_DROP_BAD_STATE, pkt);
		return;
	}
	if (unlikely(state == IB_QPS_RTR) &&
	    !rvt_is_ud_type(qp->ibqp.qp_type))
		rvt_comm_est(qp);
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		rvt_resp_rc(qp, skb, pkt);
		break;
	case IB_QPT_XRC_TGT:
		rvt_resp_xrc(qp, skb, pkt);
		break;
	case IB_QPT_UC:
		rvt_resp_uc(qp, skb, pkt);
		break;
	default:
		rvt_resp_ud(qp, skb, pkt);
		break;
	}
}
