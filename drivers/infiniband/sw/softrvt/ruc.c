// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The send engine and the same-device path.
 *
 * Each QP has a work item that runs its send queue in order.  A WQE for a
 * QP of the same device is executed by softrvt_ruc_loopback(): the payload is
 * copied straight between the two QPs' memory, with no packets, and both
 * sides complete as the IB transport would have them complete.
 *
 * The engine runs in process context, on an unbound workqueue or in the
 * system call of a process posting to a QP of the device, one WQE at a
 * time per QP; it holds no lock while copying.  Each run is budgeted
 * (softrvt_engine()): a message of up to 2 GiB is copied or sent over many
 * runs, so that no caller holds a CPU for long.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jiffies.h>
#include <linux/sizes.h>
#include <linux/udp.h>
#include <linux/workqueue.h>
#include <net/checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_pack.h>

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

/*
 * The local ACK timeout: 4.096 us << timeout (IB spec 9.7.6.1.3), where 0
 * means "wait for ever"; softrvt then waits the longest one, about 2.4 h
 * rather than never giving up.
 */
unsigned long softrvt_ack_timeout(u8 timeout)
{
	u64 ns = 4096ULL << (timeout ? min_t(u8, timeout, 31) : 31);

	return max(nsecs_to_jiffies(ns), 1UL);
}

/**
 * softrvt_ruc_init - create the engine's workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int softrvt_ruc_init(void)
{
	softrvt_wq = alloc_workqueue("softrvt", WQ_UNBOUND, 0);
	return softrvt_wq ? 0 : -ENOMEM;
}

/**
 * softrvt_ruc_exit - destroy the engine's workqueue; every QP is gone
 */
void softrvt_ruc_exit(void)
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
		return softrvt_srq_get_rwqe(ibsrq_to_rvtsrq(qp->ibqp.srq), wqe);

	spin_lock_irqsave(&qp->r_rq.lock, flags);
	ret = softrvt_rq_pop_locked(&qp->r_rq, wqe);
	spin_unlock_irqrestore(&qp->r_rq.lock, flags);
	return ret < 0 ? ret : 0;
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

	if (status == IB_WC_SUCCESS && !(wqe->send_flags & IB_SEND_SIGNALED))
		return;
	softrvt_cq_enter(ibcq_to_rvtcq(qp->ibqp.send_cq), &wc, false);
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

	old = softrvt_mr_atomic(ib_to_rvt(sqp->ibqp.device), sge->mr, sge->iova,
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
	struct softrvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
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
 * its last-WQE event, see softrvt_ruc_last_wqe().
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

/*
 * Let go of the same-device message in progress, at @wqe: the responder
 * left the states that receive, or the requester those that send.
 */
static void softrvt_ruc_drop_msg(struct softrvt_qp *sqp, struct softrvt_swqe *wqe)
{
	struct softrvt_qp *qp = sqp->s_peer;
	enum ib_wc_status unused;

	if (!qp)
		return;
	softrvt_sge_state_release(&sqp->r_sge);
	softrvt_ruc_respond(sqp, qp, wqe, &unused, SOFTRVT_RUC_ABORT);
	softrvt_ruc_put_peer(sqp, qp);
	sqp->s_cur_off = 0;
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
	u32 len = wqe->length - sqp->s_cur_off;

	if (!softrvt_is_ud(sqp))
		len = min(len, budget->bytes);
	if (wqe->opcode == IB_WR_RDMA_READ)
		softrvt_sge_copy(&sqp->s_sge, &sqp->r_sge, len);
	else
		softrvt_sge_copy(&sqp->r_sge, &sqp->s_sge, len);
	sqp->s_cur_off += len;
	softrvt_budget_spend(budget, 0, len);
	return sqp->s_cur_off == wqe->length;
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
	struct softrvt_dev_info *rdi = ib_to_rvt(sqp->ibqp.device);
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
 * A message is copied from s_cur_off on as far as @budget lets; the
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
static enum softrvt_ruc_result softrvt_ruc_loopback(struct softrvt_qp *sqp,
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

/* Whether a WQE's peer is on this device: no packets then. */
static bool softrvt_ruc_is_local(const struct softrvt_qp *qp,
				 const struct softrvt_swqe *wqe)
{
	return softrvt_is_ud(qp) ? wqe->local : qp->s_local;
}

/*
 * Whether a connected QP may act on a packet from the wire.  Once it has a
 * path (RTR and later) only its peer may talk to it; a QP whose peer is on
 * this device takes nothing from the wire at all, as its peer's packets
 * never go there (and a forged one would meet the receive state of the
 * same-device path).
 */
static bool softrvt_ruc_pkt_is_peers(struct softrvt_qp *qp, struct sk_buff *skb)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (softrvt_is_ud(qp) || state == IB_QPS_RESET || state == IB_QPS_INIT)
		return true;
	return !READ_ONCE(qp->s_local) && softrvt_pkt_on_path(skb, &qp->s_av);
}

/*
 * Handle the packets the receive path queued: the ICRC of those it left
 * unchecked first (net.c), then requests go to the responder, answers to
 * the requester.  Return: whether some are left to handle now (none while
 * the device is held, softrvt_rx_hold()).
 */
static bool softrvt_ruc_rx(struct softrvt_qp *qp)
{
	/*
	 * None queued, or the device held for a test: softrvt_rx_hold() runs
	 * the engine again on release, softrvt_rx_queue() for a packet queued
	 * after this look.
	 */
	bool take = !skb_queue_empty_lockless(&qp->r_pkts) &&
		    !READ_ONCE(ib_to_rvt(qp->ibqp.device)->rx_hold);
	int budget = take ? SOFTRVT_RX_BUDGET : 0;
	struct sk_buff *skb;

	while (budget-- > 0 && (skb = softrvt_rx_dequeue(qp))) {
		if (!softrvt_rx_icrc_ok(skb)) {
			softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_BAD_ICRC, softrvt_pkt_of(skb));
			kfree_skb(skb);
			continue;
		}
		if (!softrvt_ruc_pkt_is_peers(qp, skb)) {
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
static void softrvt_ruc_rc_wire(struct softrvt_qp *qp)
{
	bool drained;

	if (test_and_clear_bit(SOFTRVT_S_RNR_DONE, &qp->s_flags))
		qp->s_rnr_wait = false;
	if (test_and_clear_bit(SOFTRVT_S_ACK_TIMEOUT, &qp->s_flags) &&
	    softrvt_req_ack_timer_due(qp))
		softrvt_req_timeout(qp);
	softrvt_req_go_back(qp);
	softrvt_req_send_rc(qp);
	softrvt_comp_advance(qp);

	spin_lock_irq(&qp->s_lock);
	drained = qp->state == IB_QPS_SQD && qp->s_draining &&
		  qp->s_tail == qp->s_cur && !qp->s_cur_off;
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
static void softrvt_ruc_last_wqe(struct softrvt_qp *qp)
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
	       (state == IB_QPS_SQD && (qp->s_cur_off || qp->s_peer));
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
	if (!qp->s_retry_loaded) {
		qp->s_rnr_retry = qp->attr.rnr_retry;
		qp->s_retry = qp->attr.retry_cnt;
		qp->s_retry_loaded = true;
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
	if (qp->s_peer || softrvt_ruc_is_local(qp, wqe))
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
		if (!qp->s_rnr_retry) {
			*status = IB_WC_RNR_RETRY_EXC_ERR;
			return SOFTRVT_STEP_RETIRE;
		}
		if (qp->s_rnr_retry != SOFTRVT_RNR_RETRY_INFINITE)
			qp->s_rnr_retry--;
		mod_timer(&qp->rnr_timer, jiffies +
			  usecs_to_jiffies(softrvt_rnr_usec[rnr_timer & 31]));
		return SOFTRVT_STEP_WAIT;
	}
	if (!qp->s_retry) {
		*status = IB_WC_RETRY_EXC_ERR;
		return SOFTRVT_STEP_RETIRE;
	}
	qp->s_retry--;
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
	qp->s_cur = qp->s_tail;
	qp->s_cur_off = 0;
	qp->s_retry_loaded = false;
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
 * budget ran out within goes on in the next run, from s_cur_off; the
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
		softrvt_ruc_last_wqe(qp);
	}
	more_rx = softrvt_ruc_rx(qp);
	if (more_rx)
		softrvt_schedule_send(qp);
	if (softrvt_is_rc_req(qp->ibqp.qp_type) && !qp->s_local && !qp->s_peer &&
	    READ_ONCE(qp->state) != IB_QPS_ERR) {
		softrvt_ruc_rc_wire(qp);
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
