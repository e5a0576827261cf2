// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The same-device path.
 *
 * A WQE for a QP of the same device is executed by softrvt_ruc_loopback(),
 * on its sender's engine: the payload is copied straight between the two
 * QPs' memory, with no packets, and both sides complete as the IB
 * transport would have them complete.  The copy is budgeted like a send
 * on the wire and continues where it stopped on the engine's next run.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_pack.h>

#include "softrvt.h"
#include "hdr.h"

/**
 * softrvt_get_rwqe - consume the next receive WQE of a QP
 * @qp: the responder QP
 * @wqe: room for a WQE with SOFTRVT_MAX_SGE entries
 *
 * Takes from the QP's SRQ if it has one, or an XRC TGT QP's from the SRQ
 * of the request being handled.  Any context.
 *
 * Return: 0, -ENOENT if none is posted, -EIO if the ring is corrupt.
 */
int softrvt_get_rwqe(struct softrvt_qp *qp, struct rvt_rwqe *wqe)
{
	unsigned long flags;
	int ret;

	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		return qp->r_xsrq ? softrvt_srq_get_rwqe(qp->r_xsrq, wqe) : -EIO;
	if (qp->ibqp.srq)
		return softrvt_srq_get_rwqe(softrvt_to_srq(qp->ibqp.srq), wqe);

	spin_lock_irqsave(&qp->r_rq.lock, flags);
	ret = softrvt_rq_pop_locked(&qp->r_rq, wqe);
	spin_unlock_irqrestore(&qp->r_rq.lock, flags);
	return ret < 0 ? ret : 0;
}

static bool softrvt_is_ud(const struct softrvt_qp *qp)
{
	return softrvt_is_ud_type(qp->ibqp.qp_type);
}

/* The type of QP the peer of a connected QP has. */
static enum ib_qp_type softrvt_peer_type(enum ib_qp_type type)
{
	if (type == IB_QPT_XRC_INI)
		return IB_QPT_XRC_TGT;
	return type;
}

/* Whether @qp may receive what @sqp sends. */
static bool softrvt_ruc_peer_ok(const struct softrvt_qp *sqp, const struct softrvt_qp *qp,
				const struct softrvt_swqe *wqe)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	u32 qkey;

	if (!softrvt_qp_state_receives(state))
		return false;
	if (!softrvt_is_ud(sqp))
		return qp->ibqp.qp_type == softrvt_peer_type(sqp->ibqp.qp_type) &&
		       qp->attr.dest_qp_num == sqp->ibqp.qp_num;
	if (!softrvt_is_ud(qp))
		return false;
	/* A Q_Key with the high bit set means "use the sender's own". */
	qkey = (wqe->remote_qkey & 0x80000000) ? sqp->attr.qkey :
						 wqe->remote_qkey;
	return qkey == qp->attr.qkey;
}

/* Resolve the sender's local list: it is read, or written by READ/atomics. */
static int softrvt_ruc_local_sge(struct softrvt_qp *sqp, struct softrvt_swqe *wqe)
{
	int access = 0;

	if (softrvt_wqe_is_rd_atomic(wqe))
		access = IB_ACCESS_LOCAL_WRITE;
	if (!wqe->num_sge && wqe->length) {
		/* A FLUSH's length is the range: it has nothing to send. */
		softrvt_sge_state_init_one(&sqp->s_sge, NULL,
					   (uintptr_t)softrvt_swqe_inline(wqe),
					   wqe->opcode == IB_WR_FLUSH ? 0 :
								   wqe->length);
		return 0;
	}
	return softrvt_sge_state_init(&sqp->s_sge, sqp->ibqp.pd, wqe->sg_list,
				      wqe->num_sge, access);
}

/* Resolve the responder's region for RDMA and atomics. */
static int softrvt_ruc_remote_sge(struct softrvt_qp *sqp, struct softrvt_qp *qp,
				  struct softrvt_swqe *wqe, u32 len, int access)
{
	struct softrvt_mr *mr = NULL;

	if (!(qp->attr.qp_access_flags & access))
		return -EACCES;
	if (len && softrvt_rkey_lookup(qp, wqe->rkey, wqe->remote_addr, len,
				       access, &mr))
		return -EACCES;
	softrvt_sge_state_init_one(&sqp->r_sge, mr, wqe->remote_addr, len);
	return 0;
}

static void softrvt_ruc_atomic(struct softrvt_qp *sqp, struct softrvt_swqe *wqe)
{
	struct softrvt_sge *sge = &sqp->r_sge.sge[0];
	u64 old;

	old = softrvt_mr_atomic(softrvt_to_dev(sqp->ibqp.device), sge->mr, sge->iova,
				wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD,
				wqe->compare_add, wqe->swap);
	softrvt_copy_to_sge(&sqp->s_sge, &old, sizeof(old));
}

/* Deliver a receive completion at the responder. */
static void softrvt_ruc_recv_complete(struct softrvt_qp *sqp, struct softrvt_qp *qp,
				      struct softrvt_swqe *wqe, u32 byte_len,
				      enum ib_wc_status status,
				      enum rdma_network_type net_type)
{
	struct softrvt_cq *cq = softrvt_qp_rx_cq(qp);
	struct ib_wc wc = {
		.wr_id = sqp->r_wqe->wr_id,
		.status = status,
		.opcode = IB_WC_RECV,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = sqp->ibqp.qp_num,
		.sl = wqe->sl,
		.port_num = 1,
	};

	if (!cq)
		return;

	if (status == IB_WC_SUCCESS) {
		if (wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
			wc.opcode = IB_WC_RECV_RDMA_WITH_IMM;
		if (wqe->opcode == IB_WR_SEND_WITH_IMM ||
		    wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
			wc.wc_flags |= IB_WC_WITH_IMM;
			wc.ex.imm_data = wqe->imm_data;
		}
		if (wqe->opcode == IB_WR_SEND_WITH_INV) {
			wc.wc_flags |= IB_WC_WITH_INVALIDATE;
			wc.ex.invalidate_rkey = wqe->rkey;
		}
		if (softrvt_is_ud(qp)) {
			wc.wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
			wc.network_hdr_type = net_type;
		}
	}
	softrvt_cq_enter(cq, &wc,
			 status != IB_WC_SUCCESS ||
			 (wqe->send_flags & IB_SEND_SOLICITED));
}

/*
 * A responder-side error: the responder completes its WQE (if it took one)
 * with @rstatus; a connected responder also goes to ERR.  An RC requester
 * sees @sstatus, UC and UD requesters never hear of it.
 */
static enum ib_wc_status softrvt_ruc_responder_error(struct softrvt_qp *sqp,
						     struct softrvt_qp *qp,
						     struct softrvt_swqe *wqe,
						     bool took_rwqe,
						     enum ib_wc_status rstatus,
						     enum ib_wc_status sstatus)
{
	enum ib_event_type event;

	if (took_rwqe)
		softrvt_ruc_recv_complete(sqp, qp, wqe, 0, rstatus, 0);
	if (softrvt_is_ud(qp))
		return IB_WC_SUCCESS;
	/* The responder's affiliated events, IB spec 11.6.3.1. */
	switch (sstatus) {
	case IB_WC_REM_ACCESS_ERR:
		event = IB_EVENT_QP_ACCESS_ERR;
		break;
	case IB_WC_REM_INV_REQ_ERR:
		event = IB_EVENT_QP_REQ_ERR;
		break;
	default:
		event = IB_EVENT_QP_FATAL;
		break;
	}
	ibdev_dbg(qp->ibqp.device,
		  "QP %u: request of QP %u refused (%s): QP to ERR\n",
		  qp->ibqp.qp_num, sqp->ibqp.qp_num,
		  ib_wc_status_msg(sstatus));
	softrvt_qp_set_error(qp, event);
	return softrvt_is_rc_req(sqp->ibqp.qp_type) ? sstatus : IB_WC_SUCCESS;
}

/* The network a UD receive completion reports: the one of the AH's GIDs. */
static enum rdma_network_type softrvt_ruc_net_type(const struct softrvt_swqe *wqe)
{
	return ipv6_addr_v4mapped((struct in6_addr *)wqe->av.sgid.raw) ?
	       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
}

/*
 * The IP header a RoCEv2 packet of @len payload bytes would have carried
 * from the AH's source GID to its destination, placed in @grh.
 */
static void softrvt_ruc_build_grh(struct softrvt_swqe *wqe, u32 len, u8 *grh)
{
	u32 l4 = sizeof(struct udphdr) + IB_BTH_BYTES + IB_DETH_BYTES + len +
		 sizeof(u32);
	union {
		struct iphdr ip4;
		struct ipv6hdr ip6;
	} h = {};

	if (softrvt_ruc_net_type(wqe) == RDMA_NETWORK_IPV4) {
		h.ip4.version = 4;
		h.ip4.ihl = 5;
		h.ip4.ttl = 64;
		h.ip4.protocol = IPPROTO_UDP;
		h.ip4.tot_len = htons(sizeof(h.ip4) + l4);
		memcpy(&h.ip4.saddr, wqe->av.sgid.raw + 12, sizeof(h.ip4.saddr));
		memcpy(&h.ip4.daddr, wqe->av.dgid.raw + 12, sizeof(h.ip4.daddr));
		h.ip4.check = ip_fast_csum((u8 *)&h.ip4, h.ip4.ihl);
		softrvt_grh_place(grh, &h.ip4, false);
	} else {
		h.ip6.version = 6;
		h.ip6.hop_limit = 64;
		h.ip6.nexthdr = IPPROTO_UDP;
		h.ip6.payload_len = htons(l4);
		memcpy(&h.ip6.saddr, wqe->av.sgid.raw, sizeof(h.ip6.saddr));
		memcpy(&h.ip6.daddr, wqe->av.dgid.raw, sizeof(h.ip6.daddr));
		softrvt_grh_place(grh, &h.ip6, true);
	}
}

/*
 * A SEND's receive side, its receive WQE taken: the receive's list
 * resolved in the responder's PD and long enough, a UD QP's GRH placed
 * first.
 */
static enum softrvt_ruc_result softrvt_ruc_start_send(struct softrvt_qp *sqp,
						      struct softrvt_qp *qp,
						      struct softrvt_swqe *wqe,
						      enum ib_wc_status *status)
{
	u32 len = wqe->length;
	u32 grh = softrvt_is_ud(qp) ? SOFTRVT_GRH_BYTES : 0;
	u8 grh_buf[SOFTRVT_GRH_BYTES];

	if (softrvt_sge_state_init(&sqp->r_sge, softrvt_qp_rx_pd(qp),
				   sqp->r_wqe->sg_list,
				   sqp->r_wqe->num_sge,
				   IB_ACCESS_LOCAL_WRITE)) {
		*status = softrvt_ruc_responder_error(sqp, qp, wqe, true,
						      IB_WC_LOC_PROT_ERR,
						      IB_WC_REM_OP_ERR);
		return SOFTRVT_RUC_DONE;
	}
	if (sqp->r_sge.total_len < grh + len) {
		softrvt_sge_state_release(&sqp->r_sge);
		*status = softrvt_ruc_responder_error(sqp, qp, wqe, true,
						      IB_WC_LOC_LEN_ERR,
						      IB_WC_REM_INV_REQ_ERR);
		return SOFTRVT_RUC_DONE;
	}
	if (grh) {
		softrvt_ruc_build_grh(wqe, len, grh_buf);
		softrvt_copy_to_sge(&sqp->r_sge, grh_buf, grh);
	}
	sqp->s_peer_rwqe = true;
	return SOFTRVT_RUC_MORE;
}

/*
 * Start @wqe against @qp; the sender's local list is resolved.  SEND,
 * WRITE and READ return SOFTRVT_RUC_MORE with both lists ready for their
 * payload (softrvt_ruc_copy()), and the receive WQE they take, if any, in
 * sqp->r_wqe; the others are done at once.
 */
static enum softrvt_ruc_result softrvt_ruc_execute(struct softrvt_qp *sqp,
						   struct softrvt_qp *qp,
						   struct softrvt_swqe *wqe,
						   enum ib_wc_status *status)
{
	bool rc = softrvt_is_rc_req(sqp->ibqp.qp_type);
	bool need_rwqe = wqe->opcode == IB_WR_SEND ||
			 wqe->opcode == IB_WR_SEND_WITH_IMM ||
			 wqe->opcode == IB_WR_SEND_WITH_INV ||
			 wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	u32 len = wqe->length;
	int ret;

	*status = IB_WC_SUCCESS;
	if (need_rwqe) {
		ret = softrvt_get_rwqe(qp, sqp->r_wqe);
		if (ret == -ENOENT) {
			if (rc)
				return SOFTRVT_RUC_RNR;
			return SOFTRVT_RUC_DONE;	/* UC and UD drop it */
		}
		if (ret) {
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false, 0,
							      IB_WC_REM_OP_ERR);
			return SOFTRVT_RUC_DONE;
		}
	}

	switch (wqe->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
		return softrvt_ruc_start_send(sqp, qp, wqe, status);
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (softrvt_ruc_remote_sge(sqp, qp, wqe, len,
					   IB_ACCESS_REMOTE_WRITE)) {
			/* IBA 11.6.2: the receive's "Local Access Error". */
			*status = softrvt_ruc_responder_error(sqp, qp, wqe,
							      need_rwqe,
							      IB_WC_LOC_ACCESS_ERR,
							      IB_WC_REM_ACCESS_ERR);
			return SOFTRVT_RUC_DONE;
		}
		sqp->s_peer_rwqe = need_rwqe;
		return SOFTRVT_RUC_MORE;
	case IB_WR_RDMA_READ:
		if (!qp->attr.max_dest_rd_atomic) {
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false,
							      0,
							      IB_WC_REM_INV_REQ_ERR);
			return SOFTRVT_RUC_DONE;
		}
		if (softrvt_ruc_remote_sge(sqp, qp, wqe, len,
					   IB_ACCESS_REMOTE_READ)) {
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false,
							      0,
							      IB_WC_REM_ACCESS_ERR);
			return SOFTRVT_RUC_DONE;
		}
		sqp->s_peer_rwqe = false;
		return SOFTRVT_RUC_MORE;
	case IB_WR_FLUSH:
	case IB_WR_ATOMIC_WRITE:
		ret = wqe->opcode == IB_WR_FLUSH ?
		      softrvt_placement_flush(qp, wqe->rkey, wqe->remote_addr, len,
					      wqe->flush_type, wqe->flush_level) :
		      softrvt_placement_atomic_write(qp, wqe->rkey,
						     wqe->remote_addr,
						     wqe->compare_add);
		if (ret)
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false,
							      0,
							      ret == -EACCES ?
							      IB_WC_REM_ACCESS_ERR :
							      IB_WC_REM_INV_REQ_ERR);
		return SOFTRVT_RUC_DONE;
	default:	/* atomics */
		if (!qp->attr.max_dest_rd_atomic ||
		    (wqe->remote_addr & (sizeof(u64) - 1))) {
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false,
							      0,
							      IB_WC_REM_INV_REQ_ERR);
			return SOFTRVT_RUC_DONE;
		}
		if (softrvt_ruc_remote_sge(sqp, qp, wqe, sizeof(u64),
					   IB_ACCESS_REMOTE_ATOMIC)) {
			*status = softrvt_ruc_responder_error(sqp, qp, wqe, false,
							      0,
							      IB_WC_REM_ACCESS_ERR);
			return SOFTRVT_RUC_DONE;
		}
		softrvt_ruc_atomic(sqp, wqe);
		softrvt_sge_state_release(&sqp->r_sge);
		return SOFTRVT_RUC_DONE;
	}
}

/*
 * A SEND or WRITE with immediate is all copied: it completes at the
 * responder, and a SEND with invalidate invalidates, as the wire's
 * responder does once the data is in.
 */
static enum softrvt_ruc_result softrvt_ruc_finish(struct softrvt_qp *sqp,
						  struct softrvt_qp *qp,
						  struct softrvt_swqe *wqe,
						  enum ib_wc_status *status)
{
	u32 grh = softrvt_is_ud(qp) ? SOFTRVT_GRH_BYTES : 0;

	*status = IB_WC_SUCCESS;
	if (!sqp->s_peer_rwqe)
		return SOFTRVT_RUC_DONE;
	if (wqe->opcode == IB_WR_SEND_WITH_INV &&
	    softrvt_rkey_invalidate(qp, wqe->rkey)) {
		*status = softrvt_ruc_responder_error(sqp, qp, wqe, true,
						      IB_WC_REM_INV_REQ_ERR,
						      IB_WC_REM_INV_REQ_ERR);
		return SOFTRVT_RUC_DONE;
	}
	softrvt_ruc_recv_complete(sqp, qp, wqe, grh + wqe->length, IB_WC_SUCCESS,
				  grh ? softrvt_ruc_net_type(wqe) : RDMA_NETWORK_IB);
	return SOFTRVT_RUC_DONE;
}

/*
 * A message was left half copied (softrvt_ruc_drop_msg()): the receive WQE it
 * took completes as flushed if the responder is in ERR, with the IB spec's
 * Remote Aborted Error if it still receives (the requester stopped sending
 * it), and not at all once it is in RESET.
 */
static void softrvt_ruc_abort(struct softrvt_qp *sqp, struct softrvt_qp *qp,
			      struct softrvt_swqe *wqe)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (!sqp->s_peer_rwqe || state == IB_QPS_RESET ||
	    state == IB_QPS_INIT)
		return;
	softrvt_ruc_recv_complete(sqp, qp, wqe, 0,
				  state == IB_QPS_ERR ? IB_WC_WR_FLUSH_ERR :
						    IB_WC_REM_ABORT_ERR,
				  RDMA_NETWORK_IB);
}

/* The responder's parts of a same-device message. */
enum softrvt_ruc_step {
	SOFTRVT_RUC_BEGIN,		/* softrvt_ruc_execute() */
	SOFTRVT_RUC_FINISH,		/* softrvt_ruc_finish() */
	SOFTRVT_RUC_ABORT,		/* softrvt_ruc_abort() */
};

static enum softrvt_ruc_result softrvt_ruc_step(struct softrvt_qp *sqp, struct softrvt_qp *qp,
						struct softrvt_swqe *wqe,
						enum ib_wc_status *status,
						enum softrvt_ruc_step step)
{
	switch (step) {
	case SOFTRVT_RUC_BEGIN:
		return softrvt_ruc_execute(sqp, qp, wqe, status);
	case SOFTRVT_RUC_FINISH:
		return softrvt_ruc_finish(sqp, qp, wqe, status);
	default:
		softrvt_ruc_abort(sqp, qp, wqe);
		return SOFTRVT_RUC_DONE;
	}
}

/*
 * A step of @wqe at @qp.  At an XRC TGT QP: with the SRQ the WQE names,
 * if that is one of the QP's domain, else as an invalid request (a
 * message half copied then completes nowhere: its CQ is the SRQ's).  A
 * sender of the device and the QP's own engine may both be at it:
 * r_xrc_mutex.
 */
static enum softrvt_ruc_result softrvt_ruc_respond(struct softrvt_qp *sqp,
						   struct softrvt_qp *qp,
						   struct softrvt_swqe *wqe,
						   enum ib_wc_status *status,
						   enum softrvt_ruc_step step)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	enum softrvt_ruc_result res = SOFTRVT_RUC_DONE;
	struct softrvt_srq *srq;

	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT)
		return softrvt_ruc_step(sqp, qp, wqe, status, step);

	mutex_lock(&qp->r_xrc_mutex);
	srq = softrvt_xsrq_get(rdi, wqe->xrc_srqn, qp->xrcd);
	if (srq) {
		qp->r_xsrq = srq;
		res = softrvt_ruc_step(sqp, qp, wqe, status, step);
		qp->r_xsrq = NULL;
	} else if (step != SOFTRVT_RUC_ABORT) {
		/* Traced as a wire packet's would be: no headers here. */
		softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_XRC_SRQ, NULL);
		*status = softrvt_ruc_responder_error(sqp, qp, wqe, false, 0,
						      IB_WC_REM_INV_REQ_ERR);
	}
	mutex_unlock(&qp->r_xrc_mutex);
	softrvt_xsrq_put(srq);
	return res;
}

/*
 * The sender is done with its responder @qp, and with its own list.
 * A responder that entered ERR while it was counted in r_senders may owe
 * its last-WQE event, see softrvt_engine_last_wqe().
 */
static void softrvt_ruc_put_peer(struct softrvt_qp *sqp, struct softrvt_qp *qp)
{
	atomic_dec(&qp->r_senders);
	/* Gone before the state is read. */
	smp_mb__after_atomic();
	if (qp->ibqp.srq && READ_ONCE(qp->state) == IB_QPS_ERR)
		softrvt_schedule_send(qp);
	softrvt_put_qp(qp);
	softrvt_sge_state_release(&sqp->s_sge);
	sqp->s_peer = NULL;
	sqp->s_peer_rwqe = false;
}

/**
 * softrvt_ruc_drop_msg - let go of the same-device message in progress
 * @sqp: the requester
 * @wqe: the WQE it was copying, flushed
 *
 * The responder left the states that receive, or the requester those that
 * send: the receive WQE it took completes as softrvt_ruc_abort() says.
 */
void softrvt_ruc_drop_msg(struct softrvt_qp *sqp, struct softrvt_swqe *wqe)
{
	struct softrvt_qp *qp = sqp->s_peer;
	enum ib_wc_status unused;

	if (!qp)
		return;
	softrvt_sge_state_release(&sqp->r_sge);
	softrvt_ruc_respond(sqp, qp, wqe, &unused, SOFTRVT_RUC_ABORT);
	softrvt_ruc_put_peer(sqp, qp);
	sqp->req.cur_off = 0;
}

/**
 * softrvt_ruc_reset - drop the same-device message a QP was copying
 * @qp: the requester, on its way to RESET, its engine stopped
 *
 * Its responder is let go of, which a destroy of that QP waits for.
 */
void softrvt_ruc_reset(struct softrvt_qp *qp)
{
	/* An XRC TGT QP has no send queue, and never a message. */
	if (qp->s_peer)
		softrvt_ruc_drop_msg(qp, softrvt_get_swqe_ptr(qp, qp->s_tail));
}

/*
 * Copy what the run's budget allows of the message in progress, from
 * where the last run stopped.  A UD message, at most an MTU, is copied
 * whole: a UD QP's r_wqe also serves the packets it receives from the
 * wire, which the next run may handle first.  Return: whether it is all
 * copied.
 */
static bool softrvt_ruc_copy(struct softrvt_qp *sqp, struct softrvt_swqe *wqe,
			     struct softrvt_budget *budget)
{
	u32 len = wqe->length - sqp->req.cur_off;

	if (!softrvt_is_ud(sqp))
		len = min(len, budget->bytes);
	if (wqe->opcode == IB_WR_RDMA_READ)
		softrvt_sge_copy(&sqp->s_sge, &sqp->r_sge, len);
	else
		softrvt_sge_copy(&sqp->r_sge, &sqp->s_sge, len);
	sqp->req.cur_off += len;
	softrvt_budget_spend(budget, 0, len);
	return sqp->req.cur_off == wqe->length;
}

/* No responder would answer: an RC requester times out and retries. */
static enum softrvt_ruc_result softrvt_ruc_unanswered(struct softrvt_qp *sqp,
						      enum ib_wc_status *status)
{
	/*
	 * The peer may still be on its way to RTR; UC and UD packets are
	 * simply lost.
	 */
	*status = IB_WC_SUCCESS;
	return softrvt_is_rc_req(sqp->ibqp.qp_type) ? SOFTRVT_RUC_RETRY :
						  SOFTRVT_RUC_DONE;
}

/*
 * Start @wqe: resolve the sender's list, find the responder and take what
 * the message needs of it.  SOFTRVT_RUC_MORE: s_peer holds the responder.
 */
static enum softrvt_ruc_result softrvt_ruc_begin(struct softrvt_qp *sqp,
						 struct softrvt_swqe *wqe,
						 enum ib_wc_status *status,
						 u8 *rnr_timer)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(sqp->ibqp.device);
	enum softrvt_ruc_result res;
	struct softrvt_qp *qp;
	u32 dqpn;

	/* READ and atomics need initiator depth (max_rd_atomic). */
	if (softrvt_wqe_is_rd_atomic(wqe) && !sqp->attr.max_rd_atomic) {
		*status = IB_WC_LOC_QP_OP_ERR;
		return SOFTRVT_RUC_DONE;
	}
	if (softrvt_ruc_local_sge(sqp, wqe)) {
		*status = IB_WC_LOC_PROT_ERR;
		return SOFTRVT_RUC_DONE;
	}
	if (wqe->opcode == IB_WR_RDMA_READ &&
	    sqp->s_sge.total_len < wqe->length) {
		softrvt_sge_state_release(&sqp->s_sge);
		*status = IB_WC_LOC_LEN_ERR;
		return SOFTRVT_RUC_DONE;
	}

	dqpn = softrvt_is_ud(sqp) ? wqe->remote_qpn : sqp->attr.dest_qp_num;
	qp = softrvt_lookup_qpn(rdi, dqpn);
	if (!qp) {
		softrvt_sge_state_release(&sqp->s_sge);
		return softrvt_ruc_unanswered(sqp, status);
	}
	atomic_inc(&qp->r_senders);
	/* Seen by the responder's engine before we see its state. */
	smp_mb__after_atomic();
	if (!softrvt_ruc_peer_ok(sqp, qp, wqe)) {
		softrvt_ruc_put_peer(sqp, qp);
		return softrvt_ruc_unanswered(sqp, status);
	}
	if (unlikely(READ_ONCE(qp->state) == IB_QPS_RTR) && !softrvt_is_ud(qp))
		softrvt_comm_est(qp);
	res = softrvt_ruc_respond(sqp, qp, wqe, status, SOFTRVT_RUC_BEGIN);
	*rnr_timer = qp->attr.min_rnr_timer;
	if (res == SOFTRVT_RUC_MORE)
		sqp->s_peer = qp;
	else
		softrvt_ruc_put_peer(sqp, qp);
	return res;
}

/**
 * softrvt_ruc_loopback - execute a send WQE against a QP of the same device
 * @sqp: the requester
 * @wqe: the WQE at the head of its send queue
 * @budget: what the engine's run may still copy
 * @status: set to the requester's completion status
 * @rnr_timer: set to the responder's min_rnr_timer on SOFTRVT_RUC_RNR
 *
 * A message is copied from req.cur_off on as far as @budget lets; the
 * engine's next run goes on with it, the responder held in s_peer and
 * counted in its r_senders meanwhile, as a packet between its first and
 * last would be.  Should the responder stop receiving in between, the
 * message is lost, as its packets would be.  Process context, from the
 * requester's send engine.
 *
 * Return: SOFTRVT_RUC_DONE; SOFTRVT_RUC_MORE when the budget ran out first;
 * SOFTRVT_RUC_RNR when an RC responder had no receive WQE posted,
 * SOFTRVT_RUC_RETRY when there is no RC responder to answer: nothing is held
 * then, and the WQE starts over.
 */
enum softrvt_ruc_result softrvt_ruc_loopback(struct softrvt_qp *sqp,
					     struct softrvt_swqe *wqe,
					     struct softrvt_budget *budget,
					     enum ib_wc_status *status,
					     u8 *rnr_timer)
{
	struct softrvt_qp *qp = sqp->s_peer;
	enum softrvt_ruc_result res;

	if (!qp) {
		res = softrvt_ruc_begin(sqp, wqe, status, rnr_timer);
		if (res != SOFTRVT_RUC_MORE)
			return res;
		qp = sqp->s_peer;
	} else if (!softrvt_ruc_peer_ok(sqp, qp, wqe)) {
		softrvt_ruc_drop_msg(sqp, wqe);
		return softrvt_ruc_unanswered(sqp, status);
	}
	if (!softrvt_ruc_copy(sqp, wqe, budget))
		return SOFTRVT_RUC_MORE;
	softrvt_sge_state_release(&sqp->r_sge);
	res = softrvt_ruc_respond(sqp, qp, wqe, status, SOFTRVT_RUC_FINISH);
	softrvt_ruc_put_peer(sqp, qp);
	return res;
}

