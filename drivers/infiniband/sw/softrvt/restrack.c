// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Driver details for `rdma resource show qp|cq|srq|mr -dd`: the state of
 * an object that no verb reports, for diagnosing a stalled connection
 * from outside.
 *
 * ib_core calls these in process context with a reference on the object.
 * A QP's engine state is read without its lock, each field once, as the
 * engine last wrote it: the values are not one consistent snapshot, which
 * a diagnosis taken while the QP runs cannot have anyway, but none of
 * them is torn.  The rings' indices are read under their locks.  Nothing
 * here is an address: iova and the rings' memory are left out.
 */

#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "softrvt.h"
#include "hdr.h"

struct softrvt_res_u32 {
	const char *name;
	u32 value;
};

/* Put @n values in a driver nest of @msg; nothing of it if they do not fit. */
static int softrvt_fill_res(struct sk_buff *msg, const struct softrvt_res_u32 *v,
			    unsigned int n)
{
	struct nlattr *nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	unsigned int i;

	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (rdma_nl_put_driver_u32(msg, v[i].name, v[i].value)) {
			nla_nest_cancel(msg, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, nest);
	return 0;
}

/* Retries of a budget of @cnt spent so far, @left being what remains. */
static u32 softrvt_res_used(u8 cnt, u8 left)
{
	return cnt >= left ? cnt - left : 0;
}

/* WQEs posted and not completed. */
static u32 softrvt_res_sq_wqes(struct softrvt_qp *qp)
{
	u32 head, tail;

	spin_lock_irq(&qp->s_lock);
	head = qp->s_head;
	tail = qp->s_tail;
	spin_unlock_irq(&qp->s_lock);
	return head >= tail ? head - tail : head + qp->s_size - tail;
}

/**
 * softrvt_fill_res_qp_entry - a QP's requester and responder state
 * (ib_device_ops.fill_res_qp_entry)
 * @msg: the netlink message
 * @ibqp: the QP
 *
 * PSNs in flight, READ and atomic requests outstanding both ways, the
 * retry budgets spent on the oldest WQE, the packets queued for the
 * engine and the send queue's occupancy.
 *
 * Return: 0 or -EMSGSIZE.
 */
int softrvt_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	const struct softrvt_res_u32 v[] = {
		{ "next_psn", READ_ONCE(qp->req.psn) },
		{ "unacked_psn", softrvt_psn_add(READ_ONCE(qp->comp.acked_psn), 1) },
		{ "max_psn", READ_ONCE(qp->req.max_psn) },
		{ "expected_psn", READ_ONCE(qp->resp.psn) },
		{ "rd_atomic_out", READ_ONCE(qp->req.rd_count) },
		{ "rd_atomic_in", READ_ONCE(qp->resp.read_held) },
		{ "retries_used", softrvt_res_used(qp->attr.retry_cnt,
						   READ_ONCE(qp->comp.retry)) },
		{ "rnr_retries_used",
		  qp->attr.rnr_retry == SOFTRVT_RNR_RETRY_INFINITE ? 0 :
		  softrvt_res_used(qp->attr.rnr_retry, READ_ONCE(qp->comp.rnr_retry)) },
		{ "backoff", READ_ONCE(qp->req.backoff) },
		{ "rnr_wait", READ_ONCE(qp->req.rnr_wait) },
		{ "rx_queued", skb_queue_len_lockless(&qp->r_pkts) },
		{ "sq_wqes", softrvt_res_sq_wqes(qp) },
	};

	return softrvt_fill_res(msg, v, ARRAY_SIZE(v));
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_fill_res_qp_entry);

/**
 * softrvt_fill_res_cq_entry - a CQ's ring indices
 * (ib_device_ops.fill_res_cq_entry)
 * @msg: the netlink message
 * @ibcq: the CQ
 *
 * The consumer index of a user CQ is what its process last wrote, read
 * once, unchecked: it is shown as the kernel would find it.
 *
 * Return: 0 or -EMSGSIZE.
 */
int softrvt_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);
	struct softrvt_res_u32 v[5];

	spin_lock_irq(&cq->lock);
	v[0] = (struct softrvt_res_u32){ "slots", cq->size };
	v[1] = (struct softrvt_res_u32){ "head", cq->head };
	v[2] = (struct softrvt_res_u32){ "tail", cq->queue ?
				     READ_ONCE(cq->queue->tail.val) : cq->tail };
	v[3] = (struct softrvt_res_u32){ "overflowed", cq->overflowed };
	v[4] = (struct softrvt_res_u32){ "armed", cq->notify };
	spin_unlock_irq(&cq->lock);
	return softrvt_fill_res(msg, v, ARRAY_SIZE(v));
}

/**
 * softrvt_fill_res_srq_entry - an SRQ's ring indices and armed limit
 * (ib_device_ops.fill_res_srq_entry)
 * @msg: the netlink message
 * @ibsrq: the SRQ
 *
 * The producer index of a user SRQ is read as a user CQ's consumer
 * index is: once, unchecked.
 *
 * Return: 0 or -EMSGSIZE.
 */
int softrvt_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq)
{
	struct softrvt_srq *srq = softrvt_to_srq(ibsrq);
	struct softrvt_res_u32 v[4];

	spin_lock_irq(&srq->rq.lock);
	v[0] = (struct softrvt_res_u32){ "slots", srq->rq.size };
	v[1] = (struct softrvt_res_u32){ "head", srq->rq.wq ?
				     READ_ONCE(srq->rq.wq->head.val) : 0 };
	v[2] = (struct softrvt_res_u32){ "tail", srq->rq.tail };
	v[3] = (struct softrvt_res_u32){ "limit", srq->limit };
	spin_unlock_irq(&srq->rq.lock);
	return softrvt_fill_res(msg, v, ARRAY_SIZE(v));
}

/**
 * softrvt_fill_res_mr_entry - an MR's pages and windows
 * (ib_device_ops.fill_res_mr_entry)
 * @msg: the netlink message
 * @ibmr: the MR
 *
 * Return: 0 or -EMSGSIZE.
 */
int softrvt_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct softrvt_mr *mr = softrvt_to_mr(ibmr);
	struct softrvt_res_u32 v[4];

	spin_lock_irq(&mr->lock);
	v[0] = (struct softrvt_res_u32){ "pages", mr->fr_pages ? mr->fr_mapped :
					       (u32)mr->npages };
	v[1] = (struct softrvt_res_u32){ "valid", mr->valid };
	v[2] = (struct softrvt_res_u32){ "mws_bound", mr->n_mws };
	v[3] = (struct softrvt_res_u32){ "fast_reg", !!mr->fr_pages };
	spin_unlock_irq(&mr->lock);
	return softrvt_fill_res(msg, v, ARRAY_SIZE(v));
}
