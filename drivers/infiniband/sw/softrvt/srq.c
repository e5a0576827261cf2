// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues.
 *
 * The ring is a struct softrvt_rq (rq.c).  A user SRQ's ring is mmapped and
 * filled by the provider without a system call; rvt_post_srq_recv()
 * serves kernel consumers and the uverbs post_srq_recv command.
 */

#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "softrvt.h"
#include "trace.h"

/**
 * softrvt_srq_init - set up an SRQ's ring and limit
 * @srq: the SRQ; ibsrq is left to the caller
 * @attr: max_wr, max_sge and srq_limit, already checked against the caps
 * @user: whether the ring will be mapped into userspace
 *
 * Return: 0 or -ENOMEM.
 */
int softrvt_srq_init(struct softrvt_srq *srq, const struct ib_srq_attr *attr,
		     bool user)
{
	srq->limit = attr->srq_limit;
	return softrvt_rq_init(&srq->rq, attr->max_wr, attr->max_sge, user);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_init);

/**
 * softrvt_srq_cleanup - release an SRQ's ring
 * @srq: the SRQ, no longer reachable by consumers
 */
void softrvt_srq_cleanup(struct softrvt_srq *srq)
{
	struct softrvt_rq ring = {};

	/*
	 * ib_core forgets an SRQ for rdma resource only after destroy_srq
	 * returns: until then softrvt_fill_res_srq_entry() may look at the
	 * ring, under its lock, and must find it gone rather than freed.
	 */
	spin_lock_irq(&srq->rq.lock);
	swap(ring.wq, srq->rq.wq);
	swap(ring.mmap_entry, srq->rq.mmap_entry);
	spin_unlock_irq(&srq->rq.lock);
	softrvt_rq_free(&ring);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_cleanup);

/**
 * rvt_post_srq_recv - post a chain of receive WRs to an SRQ
 * @ibsrq: the SRQ
 * @wr: the first WR
 * @bad_wr: set to the first WR not posted
 *
 * Walks the chain under the ring's IRQ-safe lock, so it may be called from
 * any context.  Stops at the first bad WR; the WRs before it stay posted.
 *
 * Return: 0; -EINVAL if a WR has more SGEs than the SRQ allows; -ENOMEM
 * if the ring is full; -EIO if the ring's producer index is corrupt.
 */
static int rvt_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad_wr)
{
	return softrvt_rq_post(&softrvt_to_srq(ibsrq)->rq, wr, bad_wr);
}

/**
 * softrvt_srq_get_rwqe - consume the oldest WQE of an SRQ
 * @srq: the SRQ
 * @wqe: a buffer of srq->rq.stride bytes for a copy of the WQE
 *
 * When the WQEs left fall below an armed limit the limit is disarmed and
 * IB_EVENT_SRQ_LIMIT_REACHED is raised, once, outside the lock.  Any
 * context.
 *
 * Return: 0, -ENOENT if the SRQ is empty, -EIO if its ring is corrupt.
 */
int softrvt_srq_get_rwqe(struct softrvt_srq *srq, struct rvt_rwqe *wqe)
{
	unsigned long flags;
	bool fire = false;
	int left;

	spin_lock_irqsave(&srq->rq.lock, flags);
	left = softrvt_rq_pop_locked(&srq->rq, wqe);
	if (left >= 0 && srq->limit && left < srq->limit) {
		trace_softrvt_srq_limit(srq, left, srq->limit);
		srq->limit = 0;
		fire = true;
	}
	spin_unlock_irqrestore(&srq->rq.lock, flags);

	if (fire && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return left < 0 ? left : 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_get_rwqe);

/**
 * softrvt_srq_set_limit - arm (or with 0 disarm) the SRQ limit event
 * @srq: the SRQ
 * @limit: WQE count below which the event fires
 *
 * Return: 0, or -EINVAL if @limit is not below the SRQ's capacity.
 */
int softrvt_srq_set_limit(struct softrvt_srq *srq, u32 limit)
{
	int ret = 0;

	spin_lock_irq(&srq->rq.lock);
	if (limit >= srq->rq.size)
		ret = -EINVAL;
	else
		srq->limit = limit;
	spin_unlock_irq(&srq->rq.lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_set_limit);

/**
 * softrvt_srq_resize - give an SRQ a ring of another size
 * @srq: the SRQ
 * @max_wr: WQEs the new ring holds
 * @limit: a limit to arm together with the resize, or NULL to keep the
 *	current one
 * @udata: for a user SRQ, carries the address where the new ring's mmap
 *	offset is written (struct softrvt_modify_srq_cmd); NULL otherwise
 *
 * Outstanding WQEs move to the new ring in order; the limit changes only
 * if the resize succeeds.  Every step that can fail, writing the offset
 * to userspace included, comes before the rings are swapped, so that an
 * error always means nothing changed.  Process context.
 *
 * Return: 0, -EINVAL if the outstanding WQEs or the armed limit do not fit,
 * -ENOMEM, -EFAULT, or -EIO for a corrupt ring.
 */
int softrvt_srq_resize(struct softrvt_srq *srq, u32 max_wr, const u32 *limit,
		       struct ib_udata *udata)
{
	struct softrvt_modify_srq_cmd cmd = {};
	u64 __user *offset_addr = NULL;
	struct softrvt_rq new;
	u64 offset = 0;
	int ret;

	if (udata) {
		/* Without an address for the new offset the ring is lost. */
		if (udata->inlen < sizeof(cmd))
			return -EINVAL;
		ret = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
		if (ret)
			return ret;
		offset_addr = u64_to_user_ptr(cmd.offset_addr);
	}

	ret = softrvt_rq_init(&new, max_wr, srq->rq.max_sge, srq->rq.user);
	if (ret)
		return ret;
	if (udata) {
		ret = softrvt_mmap_entry_create(udata, new.wq,
						softrvt_rq_mmap_bytes(&new), true,
						&new.mmap_entry, &offset);
		if (ret)
			goto out;
		/*
		 * Report the new ring before the swap: failing after it would
		 * return an error for a resize that took effect, leaving the
		 * process without the ring the SRQ then uses.
		 */
		if (put_user(offset, offset_addr)) {
			ret = -EFAULT;
			goto out;
		}
	}

	spin_lock_irq(&srq->rq.lock);
	if ((limit ? *limit : srq->limit) > max_wr) {
		ret = -EINVAL;
	} else {
		ret = softrvt_rq_resize_locked(&srq->rq, &new);
		if (!ret && limit)
			srq->limit = *limit;
	}
	spin_unlock_irq(&srq->rq.lock);
out:
	softrvt_rq_free(&new);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_resize);

static int softrvt_srq_check_attr(const struct ib_srq_attr *attr)
{
	if (attr->max_wr == 0 || attr->max_wr > SOFTRVT_MAX_SRQ_WR ||
	    attr->max_sge == 0 || attr->max_sge > SOFTRVT_MAX_SRQ_SGE ||
	    attr->srq_limit >= attr->max_wr + 1)
		return -EINVAL;
	return 0;
}

/**
 * rvt_create_srq - create a shared receive queue (ib_device_ops.create_srq)
 * @ibsrq: the SRQ allocated by ib_core
 * @init: requested attributes; IB_SRQT_BASIC or IB_SRQT_XRC
 * @udata: user command and response, NULL for kernel SRQs
 *
 * A user SRQ's ring is mmapped at the offset returned in struct
 * softrvt_create_srq_resp.  An XRC SRQ gets a number, by which the
 * requests for it name it (xrc.c); ib_core keeps its domain and CQ.
 *
 * Return: 0 or a negative errno.
 */
static int rvt_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			  struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibsrq->device);
	struct softrvt_srq *srq = softrvt_to_srq(ibsrq);
	struct softrvt_create_srq_resp resp = {};
	int ret;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	ret = softrvt_srq_check_attr(&init->attr);
	if (ret)
		return ret;
	if (atomic_inc_return(&rdi->n_srqs) > SOFTRVT_MAX_SRQ) {
		ret = -ENOMEM;
		goto err_count;
	}

	ret = softrvt_srq_init(srq, &init->attr, !!udata);
	if (ret)
		goto err_count;

	if (udata) {
		ret = softrvt_mmap_entry_create(udata, srq->rq.wq,
						softrvt_rq_mmap_bytes(&srq->rq), true,
						&srq->rq.mmap_entry,
						&resp.mmap_offset);
		if (ret)
			goto err_ring;
		ret = softrvt_copy_resp(udata, &resp, sizeof(resp));
		if (ret)
			goto err_ring;
	}
	/* Last: from now on requests find it. */
	if (init->srq_type == IB_SRQT_XRC) {
		ret = softrvt_xsrq_publish(rdi, srq);
		if (ret)
			goto err_ring;
	}
	/* What the SRQ really holds, as ib_core reports it back. */
	init->attr.max_wr = srq->rq.size - 1;
	return 0;

err_ring:
	softrvt_srq_cleanup(srq);
err_count:
	atomic_dec(&rdi->n_srqs);
	return ret;
}

/**
 * rvt_modify_srq - resize an SRQ or arm its limit (ib_device_ops.modify_srq)
 * @ibsrq: the SRQ
 * @attr: new max_wr and/or srq_limit
 * @attr_mask: IB_SRQ_MAX_WR and/or IB_SRQ_LIMIT
 * @udata: struct softrvt_modify_srq_cmd for a user SRQ resize
 *
 * Return: 0 or a negative errno; nothing changes on error.
 */
static int rvt_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			  enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct softrvt_srq *srq = softrvt_to_srq(ibsrq);

	if (attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;

	if (attr_mask & IB_SRQ_MAX_WR) {
		if (attr->max_wr == 0 || attr->max_wr > SOFTRVT_MAX_SRQ_WR)
			return -EINVAL;
		return softrvt_srq_resize(srq, attr->max_wr,
					  (attr_mask & IB_SRQ_LIMIT) ?
					  &attr->srq_limit : NULL, udata);
	}
	if (attr_mask & IB_SRQ_LIMIT)
		return softrvt_srq_set_limit(srq, attr->srq_limit);
	return 0;
}

/**
 * rvt_query_srq - report an SRQ's attributes (ib_device_ops.query_srq)
 * @ibsrq: the SRQ
 * @attr: filled with max_wr, max_sge and the armed limit
 *
 * Return: 0.
 */
static int rvt_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct softrvt_srq *srq = softrvt_to_srq(ibsrq);

	spin_lock_irq(&srq->rq.lock);
	attr->max_wr = srq->rq.size - 1;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_irq(&srq->rq.lock);
	return 0;
}

/**
 * rvt_destroy_srq - free an SRQ (ib_device_ops.destroy_srq)
 * @ibsrq: the SRQ; ib_core guarantees no QP is attached to it
 * @udata: unused
 *
 * An XRC SRQ is named by requests instead: it first stops being found and
 * waits for the request being handled with it, if any.
 *
 * Return: 0.
 */
static int rvt_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct softrvt_srq *srq = softrvt_to_srq(ibsrq);

	if (ibsrq->srq_type == IB_SRQT_XRC)
		softrvt_xsrq_unpublish(softrvt_to_dev(ibsrq->device), srq);
	softrvt_srq_cleanup(srq);
	atomic_dec(&softrvt_to_dev(ibsrq->device)->n_srqs);
	return 0;
}

/*
 * The SRQ verbs, added to the device by softrvt_alloc_dev().  They keep
 * rdmavt's names, static: nothing outside this file calls them by name.
 */
const struct ib_device_ops softrvt_srq_ops = {
	.create_srq = rvt_create_srq,
	.destroy_srq = rvt_destroy_srq,
	.modify_srq = rvt_modify_srq,
	.post_srq_recv = rvt_post_srq_recv,
	.query_srq = rvt_query_srq,

	INIT_RDMA_OBJ_SIZE(ib_srq, softrvt_srq, ibsrq),
};
EXPORT_SYMBOL_IF_KUNIT(softrvt_srq_ops);
