// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues.
 *
 * The kernel is the only producer.  A kernel CQ keeps struct ib_wc
 * entries and both indices privately.  A user CQ is a struct rvt_cq_wc
 * ring mapped into the process, which polls it without a system call and
 * owns the tail: the kernel reads that tail back, validated, only to see
 * whether the ring is full, and never writes it.
 */

#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "softrvt.h"
#include "trace.h"

static size_t softrvt_cq_ring_bytes(u32 size, bool user)
{
	if (user)
		return PAGE_ALIGN(struct_size_t(struct rvt_cq_wc, uqueue, size));
	return array_size(size, sizeof(struct ib_wc));
}

static int softrvt_cq_alloc_ring(struct softrvt_cq *cq, u32 size, bool user)
{
	size_t bytes = softrvt_cq_ring_bytes(size, user);

	if (user) {
		cq->queue = vmalloc_user(bytes);
		return cq->queue ? 0 : -ENOMEM;
	}
	cq->kqueue = vzalloc(bytes);
	return cq->kqueue ? 0 : -ENOMEM;
}

/**
 * softrvt_cq_init - allocate an empty CQ ring
 * @cq: the CQ; its lock is initialised here
 * @entries: completions the CQ must hold
 * @user: allocate a struct rvt_cq_wc ring for mmap
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int softrvt_cq_init(struct softrvt_cq *cq, u32 entries, bool user)
{
	if (entries < 1 || entries > SOFTRVT_MAX_CQE)
		return -EINVAL;
	spin_lock_init(&cq->lock);
	cq->size = entries + 1;
	cq->head = 0;
	cq->tail = 0;
	cq->notify = 0;
	cq->overflowed = false;
	cq->mmap_entry = NULL;
	cq->queue = NULL;
	cq->kqueue = NULL;
	cq->ibcq.cqe = entries;
	return softrvt_cq_alloc_ring(cq, cq->size, user);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_cq_init);

/**
 * softrvt_cq_cleanup - release a CQ's ring
 * @cq: the CQ, no longer reachable by producers
 */
void softrvt_cq_cleanup(struct softrvt_cq *cq)
{
	struct rdma_user_mmap_entry *entry;
	struct rvt_cq_wc *queue;
	struct ib_wc *kqueue;

	/*
	 * ib_core forgets a CQ for rdma resource only after destroy_cq
	 * returns: until then softrvt_fill_res_cq_entry() may look at the
	 * ring, under the lock, and must find it gone rather than freed.
	 */
	spin_lock_irq(&cq->lock);
	entry = cq->mmap_entry;
	queue = cq->queue;
	kqueue = cq->kqueue;
	cq->mmap_entry = NULL;
	cq->queue = NULL;
	cq->kqueue = NULL;
	spin_unlock_irq(&cq->lock);
	if (entry)
		rdma_user_mmap_entry_remove(entry);
	else
		vfree(queue);
	vfree(kqueue);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_cq_cleanup);

/*
 * The consumer index: ours for a kernel CQ, userspace's for a user CQ.
 * Returns -EIO for a user index outside the ring.
 */
static int softrvt_cq_tail(const struct softrvt_cq *cq, u32 *tail)
{
	/* Acquire: the process is done with the entries before its tail. */
	u32 t = cq->queue ? smp_load_acquire(&cq->queue->tail.val) : cq->tail;

	if (unlikely(t >= cq->size))
		return -EIO;
	*tail = t;
	return 0;
}

static u32 softrvt_cq_next(const struct softrvt_cq *cq, u32 index)
{
	return ++index == cq->size ? 0 : index;
}

static void softrvt_cq_to_uverbs_wc(struct ib_uverbs_wc *uwc,
				    const struct ib_wc *wc)
{
	memset(uwc, 0, sizeof(*uwc));
	uwc->wr_id = wc->wr_id;
	uwc->status = wc->status;
	uwc->opcode = wc->opcode;
	uwc->vendor_err = wc->vendor_err;
	uwc->byte_len = wc->byte_len;
	uwc->ex.imm_data = wc->ex.imm_data;
	uwc->qp_num = wc->qp->qp_num;
	uwc->src_qp = wc->src_qp;
	uwc->wc_flags = wc->wc_flags;
	uwc->pkey_index = wc->pkey_index;
	uwc->slid = ib_lid_cpu16(wc->slid);
	uwc->sl = wc->sl;
	uwc->dlid_path_bits = wc->dlid_path_bits;
	uwc->port_num = wc->port_num;
}

static void softrvt_cq_event(struct softrvt_cq *cq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = type,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/**
 * softrvt_cq_enter - add a completion to a CQ
 * @cq: the CQ
 * @wc: the completion; wc->qp must be set
 * @solicited: whether it satisfies an IB_CQ_SOLICITED request
 *
 * Any context.  A full CQ, or a user CQ whose tail index is corrupt,
 * loses the completion and raises IB_EVENT_CQ_ERR once; the CQ then stays
 * in error as the IB spec requires.  The completion handler runs after
 * the lock is dropped, as ULP handlers may poll or re-arm this CQ.
 *
 * Return: true if the completion was queued.
 */
bool softrvt_cq_enter(struct softrvt_cq *cq, struct ib_wc *wc, bool solicited)
{
	bool notify = false, error = false, queued = false;
	unsigned long flags;
	u32 tail, next;

	spin_lock_irqsave(&cq->lock, flags);
	if (unlikely(cq->overflowed))
		goto unlock;
	next = softrvt_cq_next(cq, cq->head);
	if (unlikely(softrvt_cq_tail(cq, &tail) || next == tail)) {
		cq->overflowed = true;
		error = true;
		goto unlock;
	}
	if (cq->queue) {
		softrvt_cq_to_uverbs_wc(&cq->queue->uqueue[cq->head], wc);
		cq->head = next;
		/* Release: the process must see the entry before the index. */
		smp_store_release(&cq->queue->head.val, next);
	} else {
		cq->kqueue[cq->head] = *wc;
		cq->head = next;
	}
	queued = true;
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		notify = true;
	}
unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
	trace_softrvt_cq_enter(cq, wc, queued);

	if (error)
		softrvt_cq_event(cq, IB_EVENT_CQ_ERR);
	else if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return queued;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_cq_enter);

/**
 * softrvt_cq_resize - give a CQ a ring of another size
 * @cq: the CQ
 * @entries: completions the new ring holds
 * @udata: for a user CQ, receives struct softrvt_cq_resp; NULL otherwise
 *
 * Completions not yet polled move to the new ring in order.
 * Process context.
 *
 * Return: 0, -EINVAL if they do not fit, -ENOMEM, -EFAULT, or -EIO if a
 * user CQ's tail index is corrupt.
 */
int softrvt_cq_resize(struct softrvt_cq *cq, u32 entries, struct ib_udata *udata)
{
	struct softrvt_cq_resp resp = {};
	struct softrvt_cq new = {};
	bool user = !!cq->queue;
	u32 tail, n;
	int ret;

	ret = softrvt_cq_init(&new, entries, user);
	if (ret)
		return ret;
	if (udata) {
		ret = softrvt_mmap_entry_create(udata, new.queue,
						softrvt_cq_ring_bytes(new.size, true),
						true, &new.mmap_entry, &resp.mmap_offset);
		/* Answer before the swap: after it, failing would lose the CQ. */
		if (!ret)
			ret = softrvt_copy_resp(udata, &resp, sizeof(resp));
		if (ret)
			goto out;
	}

	spin_lock_irq(&cq->lock);
	ret = softrvt_cq_tail(cq, &tail);
	if (ret)
		goto unlock;
	n = cq->head >= tail ? cq->head - tail : cq->size - tail + cq->head;
	if (n > entries) {
		ret = -EINVAL;
		goto unlock;
	}
	for (n = 0; tail != cq->head; tail = softrvt_cq_next(cq, tail), n++) {
		if (user)
			new.queue->uqueue[n] = cq->queue->uqueue[tail];
		else
			new.kqueue[n] = cq->kqueue[tail];
	}
	if (user) {
		new.queue->head.val = n;
		new.queue->tail.val = 0;
	}
	cq->head = n;
	cq->tail = 0;
	cq->size = new.size;
	cq->ibcq.cqe = entries;
	swap(cq->queue, new.queue);
	swap(cq->kqueue, new.kqueue);
	swap(cq->mmap_entry, new.mmap_entry);
unlock:
	spin_unlock_irq(&cq->lock);
out:
	softrvt_cq_cleanup(&new);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_cq_resize);

/**
 * softrvt_create_cq - create a completion queue (ib_device_ops.create_cq)
 * @ibcq: the CQ allocated by ib_core
 * @attr: cqe and comp_vector; no flags are supported
 * @attrs: uverbs bundle; its udata receives struct softrvt_cq_resp
 *
 * Return: 0 or a negative errno.
 */
int softrvt_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibcq->device);
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);
	struct softrvt_cq_resp resp = {};
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (atomic_inc_return(&rdi->n_cqs) > SOFTRVT_MAX_CQ) {
		ret = -ENOMEM;
		goto err_count;
	}

	ret = softrvt_cq_init(cq, attr->cqe, !!udata);
	if (ret)
		goto err_count;

	if (udata) {
		ret = softrvt_mmap_entry_create(udata, cq->queue,
						softrvt_cq_ring_bytes(cq->size, true),
						true, &cq->mmap_entry,
						&resp.mmap_offset);
		if (ret)
			goto err_ring;
		ret = softrvt_copy_resp(udata, &resp, sizeof(resp));
		if (ret)
			goto err_ring;
	}
	return 0;

err_ring:
	softrvt_cq_cleanup(cq);
err_count:
	atomic_dec(&rdi->n_cqs);
	return ret;
}

/**
 * softrvt_destroy_cq - free a completion queue (ib_device_ops.destroy_cq)
 * @ibcq: the CQ; ib_core guarantees no QP still uses it
 * @udata: unused
 *
 * Return: 0.
 */
int softrvt_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);

	softrvt_cq_cleanup(cq);
	atomic_dec(&softrvt_to_dev(ibcq->device)->n_cqs);
	return 0;
}

/**
 * softrvt_poll_cq - take completions off a kernel CQ (ib_device_ops.poll_cq)
 * @ibcq: the CQ
 * @num_entries: room in @entry
 * @entry: where to copy them
 *
 * User CQs are polled in userspace and never come here.  Any context.
 *
 * Return: the number of completions copied.
 */
int softrvt_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *entry)
{
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);
	unsigned long flags;
	int n = 0;

	if (WARN_ON_ONCE(!cq->kqueue))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	for (; n < num_entries && cq->tail != cq->head; n++) {
		entry[n] = cq->kqueue[cq->tail];
		cq->tail = softrvt_cq_next(cq, cq->tail);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_poll_cq);

/**
 * softrvt_req_notify_cq - arm a CQ's completion event
 * (ib_device_ops.req_notify_cq)
 * @ibcq: the CQ
 * @flags: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP, optionally with
 *	IB_CQ_REPORT_MISSED_EVENTS
 *
 * A pending IB_CQ_NEXT_COMP is not weakened to IB_CQ_SOLICITED.
 *
 * Return: 1 if IB_CQ_REPORT_MISSED_EVENTS was asked and the CQ is not
 * empty, else 0.
 */
int softrvt_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);
	unsigned long irqflags;
	int ret = 0;
	u32 tail;

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    !softrvt_cq_tail(cq, &tail) && tail != cq->head)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_req_notify_cq);

/*
 * Let the engine of each QP whose send queue completes into @cq run the
 * WRs posted to it so far.  A consumer posts and then resizes without
 * waiting, and the engine runs later: without this, a shrinking resize
 * would count the completions that happened to be made already, succeed,
 * and have the rest overrun the CQ.  RC WRs waiting for a peer's ACK are
 * still not counted.
 */
static void softrvt_cq_settle(struct softrvt_cq *cq)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(cq->ibcq.device);
	unsigned long index = 0;
	struct softrvt_qp *qp;

	while ((qp = softrvt_qp_next(rdi, &index))) {
		if (qp->ibqp.send_cq == &cq->ibcq)
			softrvt_sync_send(qp);
		softrvt_put_qp(qp);
	}
}

/**
 * softrvt_resize_cq - change a CQ's capacity (ib_device_ops.resize_cq)
 * @ibcq: the CQ
 * @cqe: the new capacity
 * @udata: for a user CQ, receives the new ring's struct softrvt_cq_resp
 *
 * A CQ shrinks only if it can hold the completions it has plus those of
 * the send WRs its QPs' engines can run now (softrvt_cq_settle()).  Process
 * context.
 *
 * Return: 0 or a negative errno; the CQ is unchanged on error.
 */
int softrvt_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct softrvt_cq *cq = softrvt_to_cq(ibcq);

	if (cqe < 1 || cqe > SOFTRVT_MAX_CQE)
		return -EINVAL;
	if (cqe < ibcq->cqe)
		softrvt_cq_settle(cq);
	return softrvt_cq_resize(cq, cqe, udata);
}
