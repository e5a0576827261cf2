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
#define RVT_OPCODE_LIST				\
	rvt_op(SEND_FIRST)			\
	rvt_op(SEND_MIDDLE)			\
	rvt_op(SEND_LAST)			\
	rvt_op(SEND_LAST_WITH_IMMEDIATE)	\
	rvt_op(SEND_ONLY)			\
	rvt_op(SEND_ONLY_WITH_IMMEDIATE)	\
	rvt_op(RDMA_WRITE_FIRST)		\
	rvt_op(RDMA_WRITE_MIDDLE)		\
	rvt_op(RDMA_WRITE_LAST)			\
	rvt_op(RDMA_WRITE_LAST_WITH_IMMEDIATE)	\
	rvt_op(RDMA_WRITE_ONLY)			\
	rvt_op(RDMA_WRITE_ONLY_WITH_IMMEDIATE)	\
	rvt_op(RDMA_READ_REQUEST)		\
	rvt_op(RDMA_READ_RESPONSE_FIRST)	\
	rvt_op(RDMA_READ_RESPONSE_MIDDLE)	\
	rvt_op(RDMA_READ_RESPONSE_LAST)		\
	rvt_op(RDMA_READ_RESPONSE_ONLY)		\
	rvt_op(ACKNOWLEDGE)			\
	rvt_op(ATOMIC_ACKNOWLEDGE)		\
	rvt_op(COMPARE_SWAP)			\
	rvt_op(FETCH_ADD)			\
	rvt_op(SEND_LAST_WITH_INVALIDATE)	\
	rvt_op_end(SEND_ONLY_WITH_INVALIDATE)

#define RVT_RESEND_LIST				\
	rvt_resend(TIMEOUT, timeout)		\
	rvt_resend(SEQ_NAK, seq_nak)		\
	rvt_resend(RNR_NAK, rnr_nak)		\
	rvt_resend_end(GAP, gap)

#define RVT_QPS_LIST				\
	rvt_qps(RESET)				\
	rvt_qps(INIT)				\
	rvt_qps(RTR)				\
	rvt_qps(RTS)				\
	rvt_qps(SQD)				\
	rvt_qps(SQE)				\
	rvt_qps_end(ERR)

#undef rvt_op
#undef rvt_op_end
#undef rvt_resend
#undef rvt_resend_end
#undef rvt_qps
#undef rvt_qps_end
#define rvt_op(x)		TRACE_DEFINE_ENUM(IB_OPCODE_##x);
#define rvt_op_end(x)		TRACE_DEFINE_ENUM(IB_OPCODE_##x);
#define rvt_resend(x, s)	TRACE_DEFINE_ENUM(RVT_RESEND_##x);
#define rvt_resend_end(x, s)	TRACE_DEFINE_ENUM(RVT_RESEND_##x);
#define rvt_qps(x)		TRACE_DEFINE_ENUM(IB_QPS_##x);
#define rvt_qps_end(x)		TRACE_DEFINE_ENUM(IB_QPS_##x);

RVT_OPCODE_LIST
RVT_RESEND_LIST
RVT_QPS_LIST

#undef rvt_op
#undef rvt_op_end
#undef rvt_resend
#undef rvt_resend_end
#undef rvt_qps
#undef rvt_qps_end
#define rvt_op(x)		{ IB_OPCODE_##x, #x },
#define rvt_op_end(x)		{ IB_OPCODE_##x, #x }
#define rvt_resend(x, s)	{ RVT_RESEND_##x, #s },
#define rvt_resend_end(x, s)	{ RVT_RESEND_##x, #s }
#define rvt_qps(x)		{ IB_QPS_##x, #x },
#define rvt_qps_end(x)		{ IB_QPS_##x, #x }

#define rvt_show_transport(op)						\
	__print_symbolic((op) >> 5, { 0, "RC" }, { 1, "UC" }, { 3, "UD" }, \
			 { 5, "XRC" })
#define rvt_show_opcode(op)	__print_symbolic((op) & 0x1f, RVT_OPCODE_LIST)
#define rvt_show_resend(why)	__print_symbolic(why, RVT_RESEND_LIST)
#define rvt_show_qps(state)	__print_symbolic(state, RVT_QPS_LIST)
#define rvt_show_aeth(syn)						\
	__print_symbolic((syn) & RVT_AETH_TYPE_MASK,			\
			 { RVT_AETH_ACK, "ACK" },			\
			 { RVT_AETH_RNR_NAK, "RNR_NAK" },		\
			 { RVT_AETH_NAK, "NAK" })

/*
 * A packet as its BTH has it.  @qpn is the local QP: the sender of a
 * packet sent (dqpn is the BTH's), the BTH's QP of a packet received.
 */
DECLARE_EVENT_CLASS(softrvt_pkt_class,
	TP_PROTO(const struct rvt_dev_info *rdi, u32 qpn,
		 const struct rvt_pkt *pkt),
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
		  rvt_show_transport(__entry->opcode),
		  rvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->len, __entry->ackreq)
);

/* Handed to IP; @len is the payload, headers and pad excluded. */
DEFINE_EVENT(softrvt_pkt_class, softrvt_tx,
	TP_PROTO(const struct rvt_dev_info *rdi, u32 qpn,
		 const struct rvt_pkt *pkt),
	TP_ARGS(rdi, qpn, pkt));

/* Passed the checks of the receive path and queued for its QP. */
DEFINE_EVENT_PRINT(softrvt_pkt_class, softrvt_rx,
	TP_PROTO(const struct rvt_dev_info *rdi, u32 qpn,
		 const struct rvt_pkt *pkt),
	TP_ARGS(rdi, qpn, pkt),
	TP_printk("dev=%s qpn=%u %s_%s psn=%u len=%u ackreq=%u",
		  __get_str(dev), __entry->qpn,
		  rvt_show_transport(__entry->opcode),
		  rvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->len, __entry->ackreq));

/*
 * A packet dropped, with the name of the counter rvt_drop() added it to
 * (the table of `rdma statistic`, so the two cannot differ).  @pkt is
 * NULL when its headers could not be parsed; the QPN is the BTH's
 * destination (the peer's for tx_no_route).
 */
TRACE_EVENT(softrvt_drop,
	TP_PROTO(const struct rvt_dev_info *rdi, enum rvt_counter why,
		 const struct rvt_pkt *pkt),
	TP_ARGS(rdi, why, pkt),
	TP_STRUCT__entry(
		__string(dev, dev_name(&rdi->ibdev.dev))
		__string(reason, rvt_counter_name(why))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(bool, parsed)
	),
	TP_fast_assign(
		SOFTRVT_ASSIGN_STR(dev, dev_name(&rdi->ibdev.dev));
		SOFTRVT_ASSIGN_STR(reason, rvt_counter_name(why));
		__entry->parsed = pkt;
		__entry->qpn = pkt ? pkt->qpn : 0;
		__entry->psn = pkt ? pkt->psn : 0;
		__entry->opcode = pkt ? pkt->opcode : 0;
	),
	TP_printk("dev=%s reason=%s qpn=%u %s_%s psn=%u%s",
		  __get_str(dev), __get_str(reason), __entry->qpn,
		  rvt_show_transport(__entry->opcode),
		  rvt_show_opcode(__entry->opcode), __entry->psn,
		  __entry->parsed ? "" : " unparsed")
);

/* The AETH of an ACK, NAK or RNR NAK: @value is the NAK code or timer. */
DECLARE_EVENT_CLASS(softrvt_aeth_class,
	TP_PROTO(const struct rvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
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
		  rvt_show_aeth(__entry->syndrome),
		  __entry->syndrome & RVT_AETH_VALUE_MASK, __entry->psn,
		  __entry->msn)
);

DEFINE_EVENT(softrvt_aeth_class, softrvt_ack_sent,
	TP_PROTO(const struct rvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
	TP_ARGS(qp, psn, syndrome, msn));

DEFINE_EVENT(softrvt_aeth_class, softrvt_ack_rcvd,
	TP_PROTO(const struct rvt_qp *qp, u32 psn, u8 syndrome, u32 msn),
	TP_ARGS(qp, psn, syndrome, msn));

/* The requester goes back to @psn (from s_psn, the next it would send). */
TRACE_EVENT(softrvt_go_back,
	TP_PROTO(const struct rvt_qp *qp, u32 psn, enum rvt_resend_why why),
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
		__entry->next = qp->s_psn;
		__entry->why = why;
		__entry->retry = qp->s_retry;
		__entry->rnr_retry = qp->s_rnr_retry;
	),
	TP_printk("dev=%s qpn=%u from psn=%u (next was %u) why=%s retry_left=%u rnr_retry_left=%u",
		  __get_str(dev), __entry->qpn, __entry->psn, __entry->next,
		  rvt_show_resend(__entry->why), __entry->retry,
		  __entry->rnr_retry)
);

/* A request packet sent again, counted in `retransmits`. */
TRACE_EVENT(softrvt_retransmit,
	TP_PROTO(const struct rvt_qp *qp, u8 opcode, u32 psn,
		 enum rvt_resend_why why),
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
		  rvt_show_transport(__entry->opcode),
		  rvt_show_opcode(__entry->opcode), __entry->psn,
		  rvt_show_resend(__entry->why))
);

/* Only a change of state: a QP set again to its state is not traced. */
TRACE_EVENT_CONDITION(softrvt_qp_state,
	TP_PROTO(const struct rvt_qp *qp, enum ib_qp_state old,
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
		  rvt_show_qps(__entry->old), rvt_show_qps(__entry->new))
);

/*
 * A work completion entered, or refused by a full CQ (@queued false).
 * The wr_id of a kernel consumer is often the address of its context
 * (ib_cqe): it is recorded for user CQs only.
 */
TRACE_EVENT(softrvt_cq_enter,
	TP_PROTO(const struct rvt_cq *cq, const struct ib_wc *wc, bool queued),
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
	TP_PROTO(const struct rvt_srq *srq, u32 left, u32 limit),
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
