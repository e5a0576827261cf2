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
 * PSN accepted, when a packet asked for one or repaired a sequence error;
 * but the ACK owed for a message that completes a receive WQE leaves
 * before its completion is entered.
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
#define SOFTRVT_READ_BUDGET		64

static bool softrvt_op_first(u8 op)
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

static bool softrvt_op_last(u8 op)
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

static bool softrvt_op_send(u8 op)
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
static u32 softrvt_resp_build(struct softrvt_qp *qp, u8 opcode, u16 mask, u32 psn,
			      u8 syndrome, u32 msn, u32 len, const u64 *orig,
			      u8 *p)
{
	u32 pad = softrvt_pad_bytes(len);
	u8 *start = p;

	softrvt_build_bth((struct softrvt_bth *)p, opcode, false, pad, 0xffff,
			  qp->attr.dest_qp_num, false, psn);
	p += sizeof(struct softrvt_bth);
	if (mask & SOFTRVT_HDR_AETH) {
		put_unaligned_be32((u32)syndrome << 24 |
				   (msn & SOFTRVT_BTH_PSN_MASK), p);
		p += sizeof(struct softrvt_aeth);
	}
	if (mask & SOFTRVT_HDR_ATMACK) {
		put_unaligned_be64(*orig, p);
		p += sizeof(struct softrvt_atmack);
	}
	return p - start;
}

/* An XRC TGT QP answers in XRC, without an XRCETH. */
static int softrvt_resp_opcode_info(const struct softrvt_qp *qp, u8 *opcode,
				    u16 *mask)
{
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		*opcode = SOFTRVT_OPCODE_XRC | (*opcode & 0x1f);
	return softrvt_opcode_info(*opcode, mask);
}

static u16 softrvt_resp_sport(const struct softrvt_qp *qp)
{
	return rdma_get_udp_sport(qp->s_av.flow_label, qp->ibqp.qp_num,
				  qp->attr.dest_qp_num);
}

/*
 * Build and send an answer: ACK, NAK, READ response or atomic ACK, whose
 * AETH carries @msn.  A READ response's payload is taken from r_sge.
 */
static int softrvt_resp_answer_msn(struct softrvt_qp *qp, u8 opcode, u32 psn,
				   u8 syndrome, u32 msn, u32 len, const u64 *orig)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	struct sk_buff *skb;
	u16 mask;

	if (softrvt_resp_opcode_info(qp, &opcode, &mask))
		return -EINVAL;
	skb = softrvt_alloc_pkt_from(rdi, softrvt_hdr_len(mask), &qp->r_sge, len,
				     true);
	if (!skb)
		return -ENOMEM;
	softrvt_resp_build(qp, opcode, mask, psn, syndrome, msn, len, orig,
			   skb->data);
	return softrvt_xmit(qp, &qp->s_av, &qp->s_dst_cache, softrvt_resp_sport(qp),
			    skb);
}

static int softrvt_resp_answer(struct softrvt_qp *qp, u8 opcode, u32 psn,
			       u8 syndrome, u32 len, const u64 *orig)
{
	return softrvt_resp_answer_msn(qp, opcode, psn, syndrome, qp->resp.msn, len,
				       orig);
}

/*
 * Return: 0 if the ACK or NAK left; otherwise it is as if never sent,
 * and whoever owes it sends it again later rather than leave the
 * requester to its timer.
 */
static int softrvt_resp_ack(struct softrvt_qp *qp, u8 syndrome, u32 psn)
{
	trace_softrvt_ack_sent(qp, psn, syndrome, qp->resp.msn);
	return softrvt_resp_answer(qp, IB_OPCODE_RC_ACKNOWLEDGE, psn, syndrome, 0,
				   NULL);
}

/**
 * softrvt_resp_flush_ack - send the coalesced ACK, if one is owed
 * @qp: the responder
 */
void softrvt_resp_flush_ack(struct softrvt_qp *qp)
{
	/* It would acknowledge the READs whose responses are still due. */
	if (!qp->resp.ack_pending || qp->resp.read_pending)
		return;
	if (!softrvt_resp_ack(qp, SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT,
			      softrvt_psn_add(qp->resp.psn, SOFTRVT_PSN_MASK)))
		qp->resp.ack_pending = false;
}

/**
 * softrvt_resp_reset - forget the responder's progress, for RESET and RTR
 * @qp: the QP, its engine stopped
 */
void softrvt_resp_reset(struct softrvt_qp *qp)
{
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.ack_pending = false;
	qp->resp.in_msg = false;
	qp->resp.has_rwqe = false;
	memset(qp->resp.atomic, 0, sizeof(qp->resp.atomic));
	memset(qp->resp.read, 0, sizeof(qp->resp.read));
	qp->resp.read_next = 0;
	qp->resp.read_pending = 0;
	qp->resp.read_held = 0;
}

/* Complete the WQE held; an XRC SRQ gone meanwhile takes it with it. */
static void softrvt_resp_recv_done(struct softrvt_qp *qp, enum ib_wc_status status,
				   struct ib_wc *wc, bool solicited)
{
	struct softrvt_cq *cq = softrvt_qp_rx_cq(qp);

	wc->wr_id = qp->r_wqe->wr_id;
	wc->status = status;
	wc->qp = &qp->ibqp;
	wc->port_num = 1;
	qp->resp.has_rwqe = false;
	if (cq)
		softrvt_cq_enter(cq, wc, solicited || status != IB_WC_SUCCESS);
}

/*
 * An XRC TGT QP handles a request with the SRQ @srqn, if it is one of
 * its domain: in r_xsrq, NULL if not, until softrvt_resp_xrc_leave().
 */
static void softrvt_resp_xrc_enter(struct softrvt_qp *qp, u32 srqn)
{
	mutex_lock(&qp->r_xrc_mutex);
	qp->r_xsrq = softrvt_xsrq_get(softrvt_to_dev(qp->ibqp.device), srqn, qp->xrcd);
}

static void softrvt_resp_xrc_leave(struct softrvt_qp *qp)
{
	softrvt_xsrq_put(qp->r_xsrq);
	qp->r_xsrq = NULL;
	mutex_unlock(&qp->r_xrc_mutex);
}

static void softrvt_resp_recv_error(struct softrvt_qp *qp, enum ib_wc_status status)
{
	struct ib_wc wc = { .opcode = IB_WC_RECV };

	softrvt_resp_recv_done(qp, status, &wc, true);
}

/**
 * softrvt_resp_flush - flush the receive WQE a half-received message holds
 * @qp: the QP, in ERR; called by its send engine only
 *
 * A SEND arriving in several packets keeps its receive WQE in r_wqe, off
 * the ring, until its last packet.  When the QP enters ERR first that WQE
 * completes with IB_WC_WR_FLUSH_ERR, before those still on the ring,
 * which were posted after it.
 */
void softrvt_resp_flush(struct softrvt_qp *qp)
{
	bool xrc = qp->ibqp.qp_type == IB_QPT_XRC_TGT;

	qp->resp.in_msg = false;
	if (!qp->resp.has_rwqe)
		return;
	if (xrc)
		softrvt_resp_xrc_enter(qp, qp->resp.xrc_srqn);
	softrvt_resp_recv_error(qp, IB_WC_WR_FLUSH_ERR);
	if (xrc)
		softrvt_resp_xrc_leave(qp);
}

/* Take the receive WQE of a message.  Return: 0, -ENOENT, -EIO. */
static int softrvt_resp_take_rwqe(struct softrvt_qp *qp)
{
	int ret;

	if (qp->resp.has_rwqe)
		return 0;
	ret = softrvt_get_rwqe(qp, qp->r_wqe);
	if (!ret)
		qp->resp.has_rwqe = true;
	return ret;
}

/*
 * A SEND packet's payload, resp.len bytes into the receive WQE.
 * Return: 0, -ENOENT without a receive WQE, or a NAK code.
 */
static int softrvt_resp_send_payload(struct softrvt_qp *qp, struct sk_buff *skb,
				     u32 off, u32 len)
{
	int ret = softrvt_resp_take_rwqe(qp);

	if (ret == -ENOENT)
		return ret;
	if (ret)
		return SOFTRVT_NAK_REM_OP;
	if (softrvt_sge_state_init(&qp->r_sge, softrvt_qp_rx_pd(qp),
				   qp->r_wqe->sg_list, qp->r_wqe->num_sge,
				   IB_ACCESS_LOCAL_WRITE)) {
		softrvt_resp_recv_error(qp, IB_WC_LOC_PROT_ERR);
		return SOFTRVT_NAK_REM_OP;
	}
	if (qp->r_sge.total_len - qp->resp.len < len) {
		softrvt_sge_state_release(&qp->r_sge);
		softrvt_resp_recv_error(qp, IB_WC_LOC_LEN_ERR);
		return SOFTRVT_NAK_INV_REQ;
	}
	softrvt_sge_skip(&qp->r_sge, qp->resp.len);
	softrvt_copy_skb_to_sge(&qp->r_sge, skb, off, len);
	softrvt_sge_state_release(&qp->r_sge);
	qp->resp.len += len;
	return 0;
}

/* A WRITE packet's payload, resp.len bytes into the RETH's region. */
static int softrvt_resp_write_payload(struct softrvt_qp *qp, struct sk_buff *skb,
				      u32 off, u32 len)
{
	struct softrvt_mr *mr;

	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return SOFTRVT_NAK_REM_ACCESS;
	if (qp->resp.dma_len - qp->resp.len < len)
		return SOFTRVT_NAK_INV_REQ;
	if (!len)
		return 0;
	if (softrvt_rkey_lookup(qp, qp->resp.rkey, qp->resp.va + qp->resp.len, len,
				IB_ACCESS_REMOTE_WRITE, &mr))
		return SOFTRVT_NAK_REM_ACCESS;
	softrvt_sge_state_init_one(&qp->r_sge, mr, qp->resp.va + qp->resp.len, len);
	softrvt_copy_skb_to_sge(&qp->r_sge, skb, off, len);
	softrvt_sge_state_release(&qp->r_sge);
	qp->resp.len += len;
	return 0;
}

/* A connected responder's fatal error: NAK it and enter ERR. */
static void softrvt_resp_fatal(struct softrvt_qp *qp, u32 psn, int nak)
{
	enum ib_event_type event = IB_EVENT_QP_FATAL;

	if (nak == SOFTRVT_NAK_REM_ACCESS)
		event = IB_EVENT_QP_ACCESS_ERR;
	else if (nak == SOFTRVT_NAK_INV_REQ)
		event = IB_EVENT_QP_REQ_ERR;
	ibdev_dbg(qp->ibqp.device,
		  "QP %u: request at PSN %u refused (NAK code %d): QP to ERR\n",
		  qp->ibqp.qp_num, psn, nak);
	if (softrvt_is_rc_resp(qp->ibqp.qp_type)) {
		softrvt_qp_count(qp, SOFTRVT_CNT_ERR_NAKS_SENT, 1);
		softrvt_resp_ack(qp, SOFTRVT_AETH_NAK | nak, psn);
		qp->resp.ack_pending = false;
	}
	/*
	 * The receive a WRITE with immediate took: an rkey the WRITE may not
	 * use is its "Local Access Error" (IBA 11.6.2).
	 */
	if (qp->resp.has_rwqe)
		softrvt_resp_recv_error(qp, nak == SOFTRVT_NAK_REM_ACCESS ?
					IB_WC_LOC_ACCESS_ERR :
					IB_WC_REM_INV_REQ_ERR);
	softrvt_qp_set_error(qp, event);
}

/* Slot of the READ taken @back places before the next one. */
static u32 softrvt_read_slot(const struct softrvt_qp *qp, u32 back)
{
	return (qp->resp.read_next + SOFTRVT_MAX_RD_ATOMIC - back) % SOFTRVT_MAX_RD_ATOMIC;
}

/* Owe the responses of @e from @off to @end (a pass owes at least one). */
static void softrvt_read_owe(struct softrvt_read_res *e, u32 off, u32 end)
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
static void softrvt_read_forget(struct softrvt_qp *qp)
{
	u32 i;

	for (i = 0; i < SOFTRVT_MAX_RD_ATOMIC; i++)
		qp->resp.read[i].due = false;
	qp->resp.read_pending = 0;
	qp->resp.read_held = 0;
}

/*
 * Take a new READ request: its responses are sent by
 * softrvt_resp_read_answer(), in the order the READs came.  The responder
 * holds a resource for each READ until its last response is out, and
 * has max_dest_rd_atomic of them: a requester that asks for more is in
 * error, as it counts each READ until its last response is in.  READs
 * answered again for duplicates hold none: they were answered once.
 * Return: 0 or a NAK code; *@next is the PSN after its answers.
 */
static int softrvt_resp_read_take(struct softrvt_qp *qp, u32 psn,
				  const struct softrvt_reth *reth, u32 *next)
{
	u32 len = get_unaligned_be32(&reth->len);
	u32 rkey = get_unaligned_be32(&reth->rkey);
	u64 va = get_unaligned_be64(&reth->va);
	struct softrvt_read_res *e;
	struct softrvt_mr *mr;
	u64 npkts;

	if (!qp->attr.max_dest_rd_atomic ||
	    qp->resp.read_held >= qp->attr.max_dest_rd_atomic ||
	    len > SOFTRVT_MAX_MSG_SZ)
		return SOFTRVT_NAK_INV_REQ;
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ))
		return SOFTRVT_NAK_REM_ACCESS;
	/* Checked now for the NAK; again each run, as the MR may go. */
	if (len) {
		if (softrvt_rkey_lookup(qp, rkey, va, len, IB_ACCESS_REMOTE_READ,
					&mr))
			return SOFTRVT_NAK_REM_ACCESS;
		softrvt_put_mr(mr);
	}
	e = &qp->resp.read[qp->resp.read_next];
	e->va = va;
	e->rkey = rkey;
	e->len = len;
	e->mtu = softrvt_qp_mtu(qp);
	npkts = max_t(u64, 1, DIV_ROUND_UP_ULL(len, e->mtu));
	e->psn = psn;
	e->lpsn = softrvt_psn_add(psn, npkts - 1);
	e->msn = qp->resp.msn;
	e->srqn = qp->resp.xrc_srqn;
	e->answered = false;
	e->due = false;
	softrvt_read_owe(e, 0, len);
	qp->resp.read_next = (qp->resp.read_next + 1) % SOFTRVT_MAX_RD_ATOMIC;
	qp->resp.read_pending++;
	qp->resp.read_held++;
	*next = softrvt_psn_add(e->lpsn, 1);
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
static void softrvt_resp_read_again(struct softrvt_qp *qp, const struct softrvt_pkt *pkt,
				    const struct softrvt_reth *reth)
{
	u32 len = get_unaligned_be32(&reth->len);
	u64 va = get_unaligned_be64(&reth->va);
	struct softrvt_read_res *e = NULL;
	u32 psn = pkt->psn;
	u32 back, slot;
	u64 off, end;

	for (back = 1; back <= qp->attr.max_dest_rd_atomic; back++) {
		slot = softrvt_read_slot(qp, back);
		if (!qp->resp.read[slot].mtu)
			break;		/* never used since the reset */
		if (softrvt_psn_cmp(psn, qp->resp.read[slot].psn) >= 0 &&
		    softrvt_psn_cmp(psn, qp->resp.read[slot].lpsn) <= 0) {
			e = &qp->resp.read[slot];
			break;
		}
	}
	if (!e) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_PSN, pkt);
		return;
	}
	off = (u64)((psn - e->psn) & SOFTRVT_PSN_MASK) * e->mtu;
	if (get_unaligned_be32(&reth->rkey) != e->rkey || va != e->va + off ||
	    len > e->len - off) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_HDR, pkt);
		return;
	}
	/* Whole responses: a range that ends within one ends with it. */
	end = min_t(u64, e->len, round_up(off + len, e->mtu));
	softrvt_read_owe(e, off, end);
	/*
	 * Outside the pass, it starts a new one at it: the READs between
	 * owe nothing until their own duplicates come.
	 */
	if (back > qp->resp.read_pending)
		qp->resp.read_pending = back;
}

static u8 softrvt_read_resp_opcode(bool first, bool last)
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
static u32 softrvt_read_resp_len(const struct softrvt_qp *qp,
				 const struct softrvt_read_res *e, u32 off)
{
	u32 n = min(e->mtu, e->len - off);
	u8 opcode = softrvt_read_resp_opcode(!off, off + n == e->len);
	u16 mask;

	if (softrvt_resp_opcode_info(qp, &opcode, &mask))
		return 0;
	return softrvt_pkt_bytes(mask, n) + SOFTRVT_ICRC_BYTES;
}

/*
 * Send up to @budget responses of @e from @off on as one train
 * (softrvt_xmit_train()), as many as @lim lets (softrvt_train_take()).  Returns
 * how many went, 0 when fewer than two responses would go in one.
 */
static u32 softrvt_resp_read_train(struct softrvt_qp *qp, struct softrvt_read_res *e,
				   const struct softrvt_train_limit *lim, u32 off,
				   u32 psn, u32 budget)
{
	u32 seg_len = softrvt_read_resp_len(qp, e, off);
	u32 n = 0, bytes = 0, o = off, i;
	struct sk_buff *skb;
	u8 *p;

	while (n < budget && o < e->end) {
		u32 payload = min(e->mtu, e->len - o);

		if (!softrvt_train_take(lim, n, seg_len,
					softrvt_read_resp_len(qp, e, o),
					o + payload == e->len, &bytes))
			break;
		o += payload;
		n++;
	}
	if (n < 2)
		return 0;
	skb = softrvt_alloc_train(softrvt_to_dev(qp->ibqp.device), bytes);
	if (!skb)
		return 0;
	p = skb->data;
	for (i = 0; i < n; i++) {
		u32 len = min(e->mtu, e->len - off);
		u8 opcode = softrvt_read_resp_opcode(!off, off + len == e->len);
		u16 mask;

		/* softrvt_read_resp_len() found the layout of each. */
		softrvt_resp_opcode_info(qp, &opcode, &mask);
		p += softrvt_resp_build(qp, opcode, mask, psn,
					SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT, e->msn,
					len, NULL, p);
		p += softrvt_put_payload(p, &qp->r_sge, len) + SOFTRVT_ICRC_BYTES;
		psn = softrvt_psn_add(psn, 1);
		off += len;
	}
	softrvt_xmit_train(qp, &qp->s_av, &qp->s_dst_cache, softrvt_resp_sport(qp),
			   skb, seg_len);
	return n;
}

/* Send up to @budget of the responses @e owes, from its e->off. */
static int softrvt_resp_read_some(struct softrvt_qp *qp, struct softrvt_read_res *e,
				  u32 budget)
{
	u32 off = e->off;
	u32 left = e->end - off;
	u32 psn = softrvt_psn_add(e->psn, off / e->mtu);
	u32 bytes = min_t(u64, left, (u64)budget * e->mtu);
	struct softrvt_train_limit lim = {};
	struct softrvt_mr *mr = NULL;
	u32 sent = 0;

	if (left > e->mtu && budget > 1)
		softrvt_train_limit(qp, &qp->s_av, &qp->s_dst_cache, &lim);
	if (bytes && softrvt_rkey_lookup(qp, e->rkey, e->va + off, bytes,
					 IB_ACCESS_REMOTE_READ, &mr))
		return -EACCES;
	softrvt_sge_state_init_one(&qp->r_sge, mr, e->va + off, bytes);
	do {
		u32 n = min(e->mtu, e->len - off);
		u32 train = lim.bytes ?
			    softrvt_resp_read_train(qp, e, &lim, off, psn,
						    budget - sent) : 0;

		if (train) {
			psn = softrvt_psn_add(psn, train);
			off = min_t(u64, e->len, off + (u64)train * e->mtu);
			sent += train;
			continue;
		}
		softrvt_resp_answer_msn(qp, softrvt_read_resp_opcode(!off,
								     off + n == e->len),
					psn, SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT,
					e->msn, n, NULL);
		psn = softrvt_psn_add(psn, 1);
		off += n;
		sent++;
	} while (off < e->end && sent < budget);
	softrvt_sge_state_release(&qp->r_sge);
	e->off = off;
	return sent;
}

/**
 * softrvt_resp_read_answer - send the next responses of the READs taken
 * @qp: the responder
 *
 * Sends at most SOFTRVT_READ_BUDGET responses, oldest READ first.  An rkey
 * that stopped being valid meanwhile fails the READ as it would have
 * failed when it came.
 *
 * Return: whether responses are still due: the engine must run again.
 */
bool softrvt_resp_read_answer(struct softrvt_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	int budget = SOFTRVT_READ_BUDGET;

	if (!softrvt_qp_state_receives(state))
		softrvt_read_forget(qp);
	while (qp->resp.read_pending && budget > 0) {
		struct softrvt_read_res *e =
			&qp->resp.read[softrvt_read_slot(qp, qp->resp.read_pending)];
		bool xrc = qp->ibqp.qp_type == IB_QPT_XRC_TGT;
		int sent;

		/* Skipped by the pass: no duplicate asked for it. */
		if (!e->due) {
			qp->resp.read_pending--;
			continue;
		}

		/* The rkey is the SRQ's PD's, as when the READ came. */
		if (xrc)
			softrvt_resp_xrc_enter(qp, e->srqn);
		sent = softrvt_resp_read_some(qp, e, budget);
		if (xrc)
			softrvt_resp_xrc_leave(qp);

		if (sent < 0) {
			u32 psn = softrvt_psn_add(e->psn, e->off / e->mtu);

			softrvt_read_forget(qp);
			softrvt_resp_fatal(qp, psn, SOFTRVT_NAK_REM_ACCESS);
			break;
		}
		budget -= sent;
		if (e->off >= e->end) {
			e->due = false;
			if (e->end == e->len && !e->answered) {
				e->answered = true;
				qp->resp.read_held--;
			}
			qp->resp.read_pending--;
		}
	}
	return qp->resp.read_pending;
}

/**
 * softrvt_resp_can_take - whether the responder may handle a request now
 * @qp: the responder
 * @skb: the request, first in the QP's queue
 *
 * While READ responses are still due, a later request waits: its ACK or
 * NAK would acknowledge the READs too early, and a WRITE or atomic could
 * change the memory they read.  Only more READs, new or repeated, are
 * taken in between; a new one only while the ring has a slot outside
 * the pass, as its slot is the oldest READ's.
 *
 * Return: true if softrvt_resp_packet() may have it.
 */
bool softrvt_resp_can_take(struct softrvt_qp *qp, struct sk_buff *skb)
{
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	int cmp;

	if (!qp->resp.read_pending)
		return true;
	if ((pkt->opcode & 0x1f) != IB_OPCODE_RDMA_READ_REQUEST)
		return false;
	cmp = softrvt_psn_cmp(pkt->psn, qp->resp.psn);
	return cmp < 0 || (!cmp && qp->resp.read_pending < SOFTRVT_MAX_RD_ATOMIC);
}

static int softrvt_resp_atomic(struct softrvt_qp *qp, u32 psn,
			       const struct softrvt_atmeth *ateth, bool fetch_add)
{
	u64 va = get_unaligned_be64(&ateth->va);
	u64 arg = get_unaligned_be64(&ateth->swap_add);
	u64 cmp = get_unaligned_be64(&ateth->compare);
	struct softrvt_mr *mr;
	u64 old;

	if (!qp->attr.max_dest_rd_atomic || (va & (sizeof(u64) - 1)))
		return SOFTRVT_NAK_INV_REQ;
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC))
		return SOFTRVT_NAK_REM_ACCESS;
	if (softrvt_rkey_lookup(qp, get_unaligned_be32(&ateth->rkey), va,
				sizeof(u64), IB_ACCESS_REMOTE_ATOMIC, &mr))
		return SOFTRVT_NAK_REM_ACCESS;

	old = softrvt_mr_atomic(softrvt_to_dev(qp->ibqp.device), mr, va, fetch_add,
				fetch_add ? arg : cmp, arg);
	softrvt_put_mr(mr);

	qp->resp.atomic[qp->resp.atomic_next].psn = psn;
	qp->resp.atomic[qp->resp.atomic_next].orig = old;
	qp->resp.atomic[qp->resp.atomic_next].valid = true;
	qp->resp.atomic_next = (qp->resp.atomic_next + 1) % SOFTRVT_MAX_RD_ATOMIC;
	softrvt_resp_answer(qp, IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE, psn,
			    SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT, 0, &old);
	return 0;
}

/*
 * FLUSH and ATOMIC_WRITE (placement.c), answered with a READ response
 * without payload.  Return: 0 or a NAK code.
 */
static int softrvt_resp_placement(struct softrvt_qp *qp, struct sk_buff *skb,
				  struct softrvt_pkt *pkt)
{
	const u8 *hdr = skb->data + softrvt_ext_hdr_off(pkt->mask);
	const struct softrvt_reth *reth;
	u64 va, value;
	u32 rkey, len;
	int ret;

	reth = (const void *)(pkt->mask & SOFTRVT_HDR_FETH ?
			      hdr + sizeof(struct softrvt_feth) : hdr);
	va = get_unaligned_be64(&reth->va);
	rkey = get_unaligned_be32(&reth->rkey);
	len = get_unaligned_be32(&reth->len);
	if (pkt->mask & SOFTRVT_HDR_FETH) {
		u32 feth = get_unaligned_be32(hdr);

		ret = softrvt_placement_flush(qp, rkey, va, len,
					      feth & SOFTRVT_FETH_PLT_MASK,
					      (feth & SOFTRVT_FETH_SEL_MASK) >>
					      SOFTRVT_FETH_SEL_SHIFT);
	} else {
		/* oA19-28: eight bytes, no more, no fewer, no pad. */
		if (len != sizeof(value) || pkt->payload_len != sizeof(value) ||
		    pkt->pad)
			return SOFTRVT_NAK_INV_REQ;
		if (skb_copy_bits(skb, pkt->hdr_len, &value, sizeof(value)))
			return SOFTRVT_NAK_INV_REQ;
		ret = softrvt_placement_atomic_write(qp, rkey, va, value);
	}
	if (ret)
		return ret == -EACCES ? SOFTRVT_NAK_REM_ACCESS : SOFTRVT_NAK_INV_REQ;
	softrvt_resp_answer(qp, IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY, pkt->psn,
			    SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT, 0, NULL);
	return 0;
}

static void softrvt_resp_duplicate(struct softrvt_qp *qp, struct sk_buff *skb,
				   struct softrvt_pkt *pkt)
{
	const u8 *hdr = skb->data + softrvt_ext_hdr_off(pkt->mask);
	u8 op = pkt->opcode & 0x1f;
	int i;

	softrvt_qp_count(qp, SOFTRVT_CNT_DUP_REQUESTS, 1);
	switch (op) {
	case IB_OPCODE_RDMA_READ_REQUEST:
		softrvt_resp_read_again(qp, pkt,
					(const struct softrvt_reth *)hdr);
		return;
	case IB_OPCODE_COMPARE_SWAP:
	case IB_OPCODE_FETCH_ADD:
		for (i = 0; i < SOFTRVT_MAX_RD_ATOMIC; i++) {
			if (qp->resp.atomic[i].valid &&
			    qp->resp.atomic[i].psn == pkt->psn) {
				softrvt_resp_answer(qp,
						    IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE,
						    pkt->psn,
						    SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT,
						    0, &qp->resp.atomic[i].orig);
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
		softrvt_resp_answer(qp, IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY,
				    pkt->psn, SOFTRVT_AETH_ACK | SOFTRVT_AETH_NO_CREDIT, 0,
				    NULL);
		return;
	default:
		qp->resp.ack_pending = true;
		return;
	}
}

/*
 * A SEND or WRITE packet of the current message, in order.  When it ends
 * a message that consumes a receive WQE, *@done is set and @wc holds the
 * completion, for the caller to enter (softrvt_resp_complete()).
 * Return: 0, -ENOENT (no receive WQE: nothing was written), or a NAK code.
 */
static int softrvt_resp_message(struct softrvt_qp *qp, struct sk_buff *skb,
				struct softrvt_pkt *pkt, struct ib_wc *wc,
				bool *done)
{
	const u8 *hdr = skb->data + softrvt_ext_hdr_off(pkt->mask);
	u8 op = pkt->opcode & 0x1f;
	u32 mtu = softrvt_qp_mtu(qp);
	int ret;

	if (softrvt_op_first(op)) {
		qp->resp.len = 0;
		qp->resp.msg_op = op;
	} else if (!qp->resp.in_msg ||
		   softrvt_op_send(op) != softrvt_op_send(qp->resp.msg_op)) {
		return SOFTRVT_NAK_INV_REQ;
	}
	/* Every packet but the last of a message carries a full MTU. */
	if (softrvt_op_last(op) ? pkt->payload_len > mtu :
			      pkt->payload_len != mtu)
		return SOFTRVT_NAK_INV_REQ;

	if (softrvt_op_send(op)) {
		ret = softrvt_resp_send_payload(qp, skb, pkt->hdr_len,
						pkt->payload_len);
		if (ret)
			return ret;
		qp->resp.in_msg = !softrvt_op_last(op);
		if (qp->resp.in_msg)
			return 0;
		wc->opcode = IB_WC_RECV;
		wc->byte_len = qp->resp.len;
		/*
		 * SEND with Invalidate: the IETH, last of the headers, names
		 * an MR or a type 2 window of this QP's PD.  One it cannot
		 * invalidate fails the receive with IB_WC_REM_INV_REQ_ERR, as
		 * in rxe, and is NAKed.
		 */
		if (pkt->mask & SOFTRVT_HDR_IETH) {
			u32 rkey = get_unaligned_be32(skb->data + pkt->hdr_len -
						      sizeof(__be32));

			if (softrvt_rkey_invalidate(qp, rkey))
				return SOFTRVT_NAK_INV_REQ;
			wc->wc_flags |= IB_WC_WITH_INVALIDATE;
			wc->ex.invalidate_rkey = rkey;
		}
	} else {
		bool imm = pkt->mask & SOFTRVT_HDR_IMMDT;

		if (pkt->mask & SOFTRVT_HDR_RETH) {
			const struct softrvt_reth *reth = (const void *)hdr;

			qp->resp.va = get_unaligned_be64(&reth->va);
			qp->resp.rkey = get_unaligned_be32(&reth->rkey);
			qp->resp.dma_len = get_unaligned_be32(&reth->len);
		}
		/* Take the WQE first: an RNR NAK must leave memory alone. */
		if (imm) {
			ret = softrvt_resp_take_rwqe(qp);
			if (ret)
				return ret == -ENOENT ? ret : SOFTRVT_NAK_REM_OP;
		}
		ret = softrvt_resp_write_payload(qp, skb, pkt->hdr_len,
						 pkt->payload_len);
		if (ret)
			return ret;
		qp->resp.in_msg = !softrvt_op_last(op);
		if (qp->resp.in_msg)
			return 0;
		if (qp->resp.len != qp->resp.dma_len)
			return SOFTRVT_NAK_INV_REQ;
		if (!imm)
			return 0;
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		wc->byte_len = qp->resp.dma_len;
	}
	if (pkt->mask & SOFTRVT_HDR_IMMDT) {
		memcpy(&wc->ex.imm_data, skb->data + pkt->hdr_len - 4,
		       sizeof(wc->ex.imm_data));
		wc->wc_flags |= IB_WC_WITH_IMM;
	}
	wc->src_qp = qp->attr.dest_qp_num;
	*done = true;
	return 0;
}

/*
 * Enter the completion of the RC or XRC message whose last packet @pkt was
 * just taken.  The ACK owed (the last packet of a message asks for one)
 * leaves first rather than at the end of the engine run: the requester
 * then learns of the delivery no later than the consumer here does.  A
 * consumer that answers by disconnecting (iSER after a logout response)
 * would otherwise have the peer's QP in ERR, and the SEND flushed there,
 * before the ACK is out.
 */
static void softrvt_resp_complete(struct softrvt_qp *qp, struct softrvt_pkt *pkt,
				  struct ib_wc *wc)
{
	softrvt_resp_flush_ack(qp);
	softrvt_resp_recv_done(qp, IB_WC_SUCCESS, wc, pkt->se);
}

/*
 * No receive WQE for the request at @psn.  As with a sequence NAK, the
 * ACK owed goes first, and the packets of the burst that follow draw
 * nothing (resp.nak_sent): a second NAK for the same PSN would cost a
 * requester one of its retries (rxe counts each), and a RoCE NIC sends
 * none.  The request, when it comes again and is taken, is acknowledged.
 */
static void softrvt_resp_rnr_nak(struct softrvt_qp *qp, u32 psn)
{
	softrvt_resp_flush_ack(qp);
	softrvt_qp_count(qp, SOFTRVT_CNT_RNR_NAKS_SENT, 1);
	if (!softrvt_resp_ack(qp, SOFTRVT_AETH_RNR_NAK |
			      (qp->attr.min_rnr_timer & SOFTRVT_AETH_VALUE_MASK), psn))
		qp->resp.nak_sent = true;
}

static void softrvt_resp_rc(struct softrvt_qp *qp, struct sk_buff *skb,
			    struct softrvt_pkt *pkt)
{
	const u8 *hdr = skb->data + softrvt_ext_hdr_off(pkt->mask);
	int diff = softrvt_psn_cmp(pkt->psn, qp->resp.psn);
	u8 op = pkt->opcode & 0x1f;
	u32 next = softrvt_psn_add(pkt->psn, 1);
	struct ib_wc wc = {};
	bool done = false;
	int ret;

	if (diff > 0) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_PSN, pkt);
		if (!qp->resp.nak_sent) {
			/*
			 * The ACK owed goes first: the NAK implies it, but a
			 * requester may count retries until it sees an ACK.
			 */
			softrvt_resp_flush_ack(qp);
			softrvt_qp_count(qp, SOFTRVT_CNT_SEQ_NAKS_SENT, 1);
			if (!softrvt_resp_ack(qp, SOFTRVT_AETH_NAK | SOFTRVT_NAK_PSN_SEQ,
					      qp->resp.psn))
				qp->resp.nak_sent = true;
		}
		return;
	}
	if (diff < 0) {
		softrvt_resp_duplicate(qp, skb, pkt);
		return;
	}
	/*
	 * An XRC request must name an SRQ of the TGT QP's domain, the same
	 * for every packet of a message; anything else is the requester's
	 * error (or a forgery from its path).
	 */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT &&
	    (!qp->r_xsrq || pkt->srqn != qp->resp.xrc_srqn)) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_XRC_SRQ, pkt);
		softrvt_resp_fatal(qp, pkt->psn, SOFTRVT_NAK_INV_REQ);
		return;
	}

	switch (op) {
	case IB_OPCODE_RDMA_READ_REQUEST:
		ret = qp->resp.in_msg ? SOFTRVT_NAK_INV_REQ :
		      softrvt_resp_read_take(qp, pkt->psn,
					     (const struct softrvt_reth *)hdr, &next);
		/* The responses acknowledge what came before. */
		if (!ret)
			qp->resp.ack_pending = false;
		break;
	case IB_OPCODE_COMPARE_SWAP:
	case IB_OPCODE_FETCH_ADD:
		ret = qp->resp.in_msg ? SOFTRVT_NAK_INV_REQ :
		      softrvt_resp_atomic(qp, pkt->psn,
					  (const struct softrvt_atmeth *)hdr,
					  op == IB_OPCODE_FETCH_ADD);
		if (!ret)
			qp->resp.ack_pending = false;
		break;
	case IB_OPCODE_FLUSH:
	case IB_OPCODE_ATOMIC_WRITE:
		ret = qp->resp.in_msg ? SOFTRVT_NAK_INV_REQ :
		      softrvt_resp_placement(qp, skb, pkt);
		if (!ret)
			qp->resp.ack_pending = false;
		break;
	default:
		ret = softrvt_resp_message(qp, skb, pkt, &wc, &done);
		if (ret == -ENOENT) {
			softrvt_resp_rnr_nak(qp, pkt->psn);
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
		if (!ret && (pkt->ackreq || qp->resp.nak_sent))
			qp->resp.ack_pending = true;
		break;
	}
	if (ret) {
		softrvt_resp_fatal(qp, pkt->psn, ret);
		return;
	}
	if (softrvt_op_last(op) || op == IB_OPCODE_RDMA_READ_REQUEST ||
	    op == IB_OPCODE_COMPARE_SWAP || op == IB_OPCODE_FETCH_ADD ||
	    op == IB_OPCODE_FLUSH || op == IB_OPCODE_ATOMIC_WRITE)
		qp->resp.msn = (qp->resp.msn + 1) & SOFTRVT_BTH_PSN_MASK;
	qp->resp.psn = next;
	qp->resp.nak_sent = false;
	if (done)
		softrvt_resp_complete(qp, pkt, &wc);
}

static void softrvt_resp_uc(struct softrvt_qp *qp, struct sk_buff *skb,
			    struct softrvt_pkt *pkt)
{
	u8 op = pkt->opcode & 0x1f;
	struct ib_wc wc = {};
	bool done = false;
	int ret;

	if (pkt->psn != qp->resp.psn) {
		/* Packets were lost: so is the message they belonged to. */
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_PSN, pkt);
		qp->resp.in_msg = false;
	}
	qp->resp.psn = softrvt_psn_add(pkt->psn, 1);
	if (softrvt_op_first(op))
		qp->resp.in_msg = false;	/* a message cut short is dropped */
	else if (!qp->resp.in_msg)
		return;

	ret = softrvt_resp_message(qp, skb, pkt, &wc, &done);
	if (ret) {
		/* The receive WQE, if taken, serves the next message. */
		softrvt_qp_drop(qp, ret == -ENOENT ? SOFTRVT_CNT_DROP_NO_RWQE :
				SOFTRVT_CNT_DROP_BAD_HDR, pkt);
		qp->resp.in_msg = false;
	} else if (done) {
		softrvt_resp_recv_done(qp, IB_WC_SUCCESS, &wc, pkt->se);
	}
}

static void softrvt_resp_ud(struct softrvt_qp *qp, struct sk_buff *skb,
			    struct softrvt_pkt *pkt)
{
	const struct softrvt_deth *deth = (const void *)(skb->data +
							 sizeof(struct softrvt_bth));
	struct ib_wc wc = {
		.opcode = IB_WC_RECV,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = pkt->ipv6 ? RDMA_NETWORK_IPV6 :
						RDMA_NETWORK_IPV4,
	};
	u8 grh[SOFTRVT_GRH_BYTES];
	int ret;

	if (get_unaligned_be32(&deth->qkey) != qp->attr.qkey) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_QKEY, pkt);
		return;
	}
	ret = softrvt_get_rwqe(qp, qp->r_wqe);
	if (ret) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_NO_RWQE, pkt);
		return;
	}
	qp->resp.has_rwqe = true;
	if (softrvt_sge_state_init(&qp->r_sge, qp->ibqp.pd, qp->r_wqe->sg_list,
				   qp->r_wqe->num_sge, IB_ACCESS_LOCAL_WRITE)) {
		softrvt_resp_recv_error(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	if (qp->r_sge.total_len < SOFTRVT_GRH_BYTES + pkt->payload_len) {
		softrvt_sge_state_release(&qp->r_sge);
		softrvt_resp_recv_error(qp, IB_WC_LOC_LEN_ERR);
		return;
	}
	softrvt_grh_place(grh, pkt->ipv6 ? (void *)ipv6_hdr(skb) : ip_hdr(skb),
			  pkt->ipv6);
	softrvt_copy_to_sge(&qp->r_sge, grh, sizeof(grh));
	softrvt_copy_skb_to_sge(&qp->r_sge, skb, pkt->hdr_len, pkt->payload_len);
	softrvt_sge_state_release(&qp->r_sge);

	wc.byte_len = SOFTRVT_GRH_BYTES + pkt->payload_len;
	wc.src_qp = get_unaligned_be32(&deth->sqp) & SOFTRVT_BTH_QPN_MASK;
	if (pkt->mask & SOFTRVT_HDR_IMMDT) {
		memcpy(&wc.ex.imm_data, skb->data + pkt->hdr_len - 4,
		       sizeof(wc.ex.imm_data));
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	softrvt_resp_recv_done(qp, IB_WC_SUCCESS, &wc, pkt->se);
}

/*
 * An XRC TGT QP: RC, with the SRQ the request names.  A message in
 * progress keeps the SRQ of its first packet: its receive WQE came from
 * there, and its WRITE's rkey is checked in that SRQ's PD.
 */
static void softrvt_resp_xrc(struct softrvt_qp *qp, struct sk_buff *skb,
			     struct softrvt_pkt *pkt)
{
	if (!qp->resp.in_msg && !qp->resp.has_rwqe)
		qp->resp.xrc_srqn = pkt->srqn;
	softrvt_resp_xrc_enter(qp, qp->resp.xrc_srqn);
	softrvt_resp_rc(qp, skb, pkt);
	softrvt_resp_xrc_leave(qp);
}

/**
 * softrvt_resp_packet - handle a request packet
 * @qp: the responder
 * @skb: the packet, data at the BTH; the caller frees it
 */
void softrvt_resp_packet(struct softrvt_qp *qp, struct sk_buff *skb)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);

	if (!softrvt_qp_state_receives(state)) {
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_STATE, pkt);
		return;
	}
	if (unlikely(state == IB_QPS_RTR) &&
	    !softrvt_is_ud_type(qp->ibqp.qp_type))
		softrvt_comm_est(qp);
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		softrvt_resp_rc(qp, skb, pkt);
		break;
	case IB_QPT_XRC_TGT:
		softrvt_resp_xrc(qp, skb, pkt);
		break;
	case IB_QPT_UC:
		softrvt_resp_uc(qp, skb, pkt);
		break;
	default:
		softrvt_resp_ud(qp, skb, pkt);
		break;
	}
}
