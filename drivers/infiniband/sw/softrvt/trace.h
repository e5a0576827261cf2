/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of softrvt (system "softrvt"): packets in and out, drops
 * with their cause, ACKs and NAKs, go-back-N and the packets it resends,
 * QP states, completions and the SRQ limit.  See
 * Documentation/softrvt/debugging.rst.
 *
 * Nothing here prints a kernel address: objects are named by their device
 * and QPN, or by their restrack ID.  Arguments are values or objects the
 * caller has at hand, so that a disabled tracepoint costs its static
 * branch and nothing else; whatever must be derived is derived in
 * TP_fast_assign, which runs only when the event is enabled.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM softrvt

#if !defined(SOFTRVT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SOFTRVT_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <trace/misc/rdma.h>

#include "softrvt.h"
#include "hdr.h"

/* The low five bits of a BTH opcode; the top three are the transport. */
#define SOFTRVT_OPCODE_LIST				\
	softrvt_op(SEND_FIRST)			\
	softrvt_op(SEND_MIDDLE)			\
	softrvt_op(SEND_LAST)			\
	softrvt_op(SEND_LAST_WITH_IMMEDIATE)	\
	softrvt_op(SEND_ONLY)			\
	softrvt_op(SEND_ONLY_WITH_IMMEDIATE)	\
	softrvt_op(RDMA_WRITE_FIRST)		\
	softrvt_op(RDMA_WRITE_MIDDLE)		\
	softrvt_op(RDMA_WRITE_LAST)			\
	softrvt_op(RDMA_WRITE_LAST_WITH_IMMEDIATE)	\
	softrvt_op(RDMA_WRITE_ONLY)			\
	softrvt_op(RDMA_WRITE_ONLY_WITH_IMMEDIATE)	\
	softrvt_op(RDMA_READ_REQUEST)		\
	softrvt_op(RDMA_READ_RESPONSE_FIRST)	\
	softrvt_op(RDMA_READ_RESPONSE_MIDDLE)	\
	softrvt_op(RDMA_READ_RESPONSE_LAST)		\
	softrvt_op(RDMA_READ_RESPONSE_ONLY)		\
	softrvt_op(ACKNOWLEDGE)			\
	softrvt_op(ATOMIC_ACKNOWLEDGE)		\
	softrvt_op(COMPARE_SWAP)			\
	softrvt_op(FETCH_ADD)			\
	softrvt_op(SEND_LAST_WITH_INVALIDATE)	\
	softrvt_op_end(SEND_ONLY_WITH_INVALIDATE)

#define SOFTRVT_RESEND_LIST				\
	softrvt_resend(TIMEOUT, timeout)		\
	softrvt_resend(SEQ_NAK, seq_nak)		\
	softrvt_resend(RNR_NAK, rnr_nak)		\
	softrvt_resend_end(GAP, gap)

#define SOFTRVT_QPS_LIST				\
	softrvt_qps(RESET)				\
	softrvt_qps(INIT)				\
	softrvt_qps(RTR)				\
	softrvt_qps(RTS)				\
	softrvt_qps(SQD)				\
	softrvt_qps(SQE)				\
	softrvt_qps_end(ERR)

#undef softrvt_op
#undef softrvt_op_end
#undef softrvt_resend
#undef softrvt_resend_end
#undef softrvt_qps
#undef softrvt_qps_end
#define softrvt_op(x)		TRACE_DEFINE_ENUM(IB_OPCODE_##x);
#define softrvt_op_end(x)		TRACE_DEFINE_ENUM(IB_OPCODE_##x);
#define softrvt_resend(x, s)	TRACE_DEFINE_ENUM(SOFTRVT_RESEND_##x);
#define softrvt_resend_end(x, s)	TRACE_DEFINE_ENUM(SOFTRVT_RESEND_##x);
#define softrvt_qps(x)		TRACE_DEFINE_ENUM(IB_QPS_##x);
#define softrvt_qps_end(x)		TRACE_DEFINE_ENUM(IB_QPS_##x);

SOFTRVT_OPCODE_LIST
SOFTRVT_RESEND_LIST
SOFTRVT_QPS_LIST

#undef softrvt_op
#undef softrvt_op_end
#undef softrvt_resend
#undef softrvt_resend_end
#undef softrvt_qps
#undef softrvt_qps_end
#define softrvt_op(x)		{ IB_OPCODE_##x, #x },
#define softrvt_op_end(x)		{ IB_OPCODE_##x, #x }
#define softrvt_resend(x, s)	{ SOFTRVT_RESEND_##x, #s },
#define softrvt_resend_end(x, s)	{ SOFTRVT_RESEND_##x, #s }
#define softrvt_qps(x)		{ IB_QPS_##x, #x },
#define softrvt_qps_end(x)		{ IB_QPS_##x, #x }

#define softrvt_show_transport(op)						\
	__print_symbolic((op) >> 5, { 0, "RC" }, { 1, "UC" }, { 3, "UD" }, \
			 { 5, "XRC" })
#define softrvt_show_opcode(op)	__print_symbolic((op) & 0x1f, SOFTRVT_OPCODE_LIST)
#define softrvt_show_resend(why)	__print_symbolic(why, SOFTRVT_RESEND_LIST)
#define softrvt_show_qps(state)	__print_symbolic(state, SOFTRVT_QPS_LIST)
#define softrvt_show_aeth(syn)						\
	__print_symbolic((syn) & SOFTRVT_AETH_TYPE_MASK,			\
			 { SOFTRVT_AETH_ACK, "ACK" },			\
			 { SOFTRVT_AETH_RNR_NAK, "RNR_NAK" },		\
			 { SOFTRVT_AETH_NAK, "NAK" })

/*
 * A packet as its BTH has it.  @qpn is the local QP: the sender of a
 * packet sent (dqpn is the BTH's), the BTH's QP of a packet received.
 */
DECLARE_EVENT_CLASS(softrvt_pkt_class,
	TP_PROTO(const struct softrvt_dev_info *rdi, u32 qpn,
		 const struct softrvt_pkt *pkt),
	TP_ARGS(rdi, qpn, pkt),
	TP_STRUCT__entry(
		__string(dev, dev_name(&rdi->ibdev.dev))
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
		__field(bool, ackreq)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&rdi->ibdev.dev));
		__entry->qpn = qpn;
		__entry->dqpn = pkt->qpn;
		__entry->psn = pkt->psn;
		__entry->len = pkt->payload_len;
		__entry->opcode = pkt->opcode;
		__entry->ackreq = pkt->ackreq;
	),
	TP_printk("dev=%s qpn=%u dqpn=%u %s_%s psn=%u len=%u ackreq=%u",
		  __get_str(dev), __entry->qpn, __entry->dqpn,
		  softrvt_show_transport(__entry->opcode),
		  softrvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->len, __entry->ackreq)
);

/* Handed to IP; @len is the payload, headers and pad excluded. */
DEFINE_EVENT(softrvt_pkt_class, softrvt_tx,
	TP_PROTO(const struct softrvt_dev_info *rdi, u32 qpn,
		 const struct softrvt_pkt *pkt),
	TP_ARGS(rdi, qpn, pkt));

/* Passed the checks of the receive path and queued for its QP. */
DEFINE_EVENT_PRINT(softrvt_pkt_class, softrvt_rx,
	TP_PROTO(const struct softrvt_dev_info *rdi, u32 qpn,
		 const struct softrvt_pkt *pkt),
	TP_ARGS(rdi, qpn, pkt),
	TP_printk("dev=%s qpn=%u %s_%s psn=%u len=%u ackreq=%u",
		  __get_str(dev), __entry->qpn,
		  softrvt_show_transport(__entry->opcode),
		  softrvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->len, __entry->ackreq));

/*
 * A packet dropped, with the name of the counter softrvt_drop() added it to
 * (the table of `rdma statistic`, so the two cannot differ).  @pkt is
 * NULL when its headers could not be parsed; the QPN is the BTH's
 * destination (the peer's for tx_no_route).
 */
TRACE_EVENT(softrvt_drop,
	TP_PROTO(const struct softrvt_dev_info *rdi, enum softrvt_counter why,
		 const struct softrvt_pkt *pkt),
	TP_ARGS(rdi, why, pkt),
	TP_STRUCT__entry(
		__string(dev, dev_name(&rdi->ibdev.dev))
		__string(reason, softrvt_counter_name(why))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(bool, parsed)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&rdi->ibdev.dev));
		SOFTRVT_ASSIGN_STR(reason, softrvt_counter_name(why));
		__entry->parsed = pkt;
		__entry->qpn = pkt ? pkt->qpn : 0;
		__entry->psn = pkt ? pkt->psn : 0;
		__entry->opcode = pkt ? pkt->opcode : 0;
	),
	TP_printk("dev=%s reason=%s qpn=%u %s_%s psn=%u%s",
		  __get_str(dev), __get_str(reason), __entry->qpn,
		  softrvt_show_transport(__entry->opcode),
		  softrvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->parsed ? "" : " unparsed")
);

/* The AETH of an ACK, NAK or RNR NAK: @value is the NAK code or timer. */
DECLARE_EVENT_CLASS(softrvt_aeth_class,
	TP_PROTO(const struct softrvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
	TP_ARGS(qp, psn, syndrome, msn),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, msn)
		__field(u8, syndrome)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->psn = psn;
		__entry->msn = msn;
		__entry->syndrome = syndrome;
	),
	TP_printk("dev=%s qpn=%u %s value=%u psn=%u msn=%u",
		  __get_str(dev), __entry->qpn,
		  softrvt_show_aeth(__entry->syndrome),
		  __entry->syndrome & SOFTRVT_AETH_VALUE_MASK, __entry->psn,
		  __entry->msn)
);

DEFINE_EVENT(softrvt_aeth_class, softrvt_ack_sent,
	TP_PROTO(const struct softrvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
	TP_ARGS(qp, psn, syndrome, msn));

DEFINE_EVENT(softrvt_aeth_class, softrvt_ack_rcvd,
	TP_PROTO(const struct softrvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
	TP_ARGS(qp, psn, syndrome, msn));

/* The requester goes back to @psn (from req.psn, the next it would send). */
TRACE_EVENT(softrvt_go_back,
	TP_PROTO(const struct softrvt_qp *qp, u32 psn, enum softrvt_resend_why why),
	TP_ARGS(qp, psn, why),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, next)
		__field(u32, why)
		__field(u8, retry)
		__field(u8, rnr_retry)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->psn = psn;
		__entry->next = qp->req.psn;
		__entry->why = why;
		__entry->retry = qp->comp.retry;
		__entry->rnr_retry = qp->comp.rnr_retry;
	),
	TP_printk("dev=%s qpn=%u from psn=%u (next was %u) why=%s retry_left=%u rnr_retry_left=%u",
		  __get_str(dev), __entry->qpn, __entry->psn, __entry->next,
		  softrvt_show_resend(__entry->why), __entry->retry,
		  __entry->rnr_retry)
);

/* A request packet sent again, counted in `retransmits`. */
TRACE_EVENT(softrvt_retransmit,
	TP_PROTO(const struct softrvt_qp *qp, u8 opcode, u32 psn,
		 enum softrvt_resend_why why),
	TP_ARGS(qp, opcode, psn, why),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, why)
		__field(u8, opcode)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->psn = psn;
		__entry->why = why;
		__entry->opcode = opcode;
	),
	TP_printk("dev=%s qpn=%u %s_%s psn=%u why=%s",
		  __get_str(dev), __entry->qpn,
		  softrvt_show_transport(__entry->opcode),
		  softrvt_show_opcode(__entry->opcode), __entry->psn,
		  softrvt_show_resend(__entry->why))
);

/* Only a change of state: a QP set again to its state is not traced. */
TRACE_EVENT_CONDITION(softrvt_qp_state,
	TP_PROTO(const struct softrvt_qp *qp, enum ib_qp_state old,
		 enum ib_qp_state new),
	TP_ARGS(qp, old, new),
	TP_CONDITION(old != new),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, old)
		__field(u32, new)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("dev=%s qpn=%u %s -> %s", __get_str(dev), __entry->qpn,
		  softrvt_show_qps(__entry->old), softrvt_show_qps(__entry->new))
);

/*
 * A work completion entered, or refused by a full CQ (@queued false).
 * The wr_id of a kernel consumer is often the address of its context
 * (ib_cqe): it is recorded for user CQs only.
 */
TRACE_EVENT(softrvt_cq_enter,
	TP_PROTO(const struct softrvt_cq *cq, const struct ib_wc *wc, bool queued),
	TP_ARGS(cq, wc, queued),
	TP_STRUCT__entry(
		__string(dev, cq->ibcq.device ?
			      dev_name(&cq->ibcq.device->dev) : "")
		__field(u64, wr_id)
		__field(u32, cq_id)
		__field(u32, qpn)
		__field(u32, status)
		__field(u32, opcode)
		__field(u32, byte_len)
		__field(bool, user)
		__field(bool, queued)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, cq->ibcq.device ?
				   dev_name(&cq->ibcq.device->dev) : "");
		__entry->user = !rdma_is_kernel_res(&cq->ibcq.res);
		__entry->wr_id = __entry->user ? wc->wr_id : 0;
		__entry->cq_id = cq->ibcq.res.id;
		__entry->qpn = wc->qp ? wc->qp->qp_num : 0;
		__entry->status = wc->status;
		__entry->opcode = wc->opcode;
		__entry->byte_len = wc->byte_len;
		__entry->queued = queued;
	),
	TP_printk("dev=%s cq=%u qpn=%u wr_id=0x%llx%s status=%s opcode=%u byte_len=%u%s",
		  __get_str(dev), __entry->cq_id, __entry->qpn,
		  __entry->wr_id, __entry->user ? "" : " (kernel CQ)",
		  rdma_show_wc_status(__entry->status), __entry->opcode,
		  __entry->byte_len, __entry->queued ? "" : " overflow")
);

/* WQEs left fell below the armed limit: SRQ_LIMIT_REACHED is raised. */
TRACE_EVENT(softrvt_srq_limit,
	TP_PROTO(const struct softrvt_srq *srq, u32 left, u32 limit),
	TP_ARGS(srq, left, limit),
	TP_STRUCT__entry(
		__string(dev, srq->ibsrq.device ?
			      dev_name(&srq->ibsrq.device->dev) : "")
		__field(u32, srq_id)
		__field(u32, left)
		__field(u32, limit)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, srq->ibsrq.device ?
				   dev_name(&srq->ibsrq.device->dev) : "");
		__entry->srq_id = srq->ibsrq.res.id;
		__entry->left = left;
		__entry->limit = limit;
	),
	TP_printk("dev=%s srq=%u left=%u limit=%u", __get_str(dev),
		  __entry->srq_id, __entry->left, __entry->limit)
);

#endif /* SOFTRVT_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
