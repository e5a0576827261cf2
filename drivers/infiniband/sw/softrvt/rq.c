// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receive rings shared by QP receive queues and SRQs.
 *
 * A ring has size slots and holds at most size - 1 WQEs, so head == tail
 * means empty and head + 1 == tail (mod size) means full.  Indices are
 * always reduced modulo size; one that is not is corrupt.
 */

#include <linux/overflow.h>
#include <linux/vmalloc.h>

#include "softrvt.h"

/**
 * softrvt_rq_init - allocate an empty receive ring
 * @rq: the ring; its lock is initialised here
 * @max_wr: WQEs the ring must hold
 * @max_sge: scatter entries per WQE
 * @user: allocate with vmalloc_user() so the ring can be mmapped
 *
 * Return: 0 or -ENOMEM.
 */
int softrvt_rq_init(struct softrvt_rq *rq, u32 max_wr, u32 max_sge, bool user)
{
	size_t bytes;

	spin_lock_init(&rq->lock);
	rq->wq = NULL;
	if (max_wr >= U32_MAX || max_sge > U8_MAX)
		return -EINVAL;

	rq->size = max_wr + 1;
	rq->max_sge = max_sge;
	rq->stride = struct_size_t(struct rvt_rwqe, sg_list, max_sge);
	rq->user = user;
	rq->tail = 0;
	rq->mmap_entry = NULL;

	bytes = size_add(sizeof(struct softrvt_rwq_header),
			 size_mul(rq->size, rq->stride));
	if (bytes == SIZE_MAX)
		return -ENOMEM;
	rq->wq = user ? vmalloc_user(PAGE_ALIGN(bytes)) : vzalloc(bytes);
	return rq->wq ? 0 : -ENOMEM;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_init);

/**
 * softrvt_rq_free - release a ring
 * @rq: the ring
 *
 * A mapped ring belongs to its mmap entry from then on, and is freed by
 * softrvt_mmap_free() once no mmap() can still reach it.  Process context.
 */
void softrvt_rq_free(struct softrvt_rq *rq)
{
	if (rq->mmap_entry)
		rdma_user_mmap_entry_remove(rq->mmap_entry);
	else
		vfree(rq->wq);
	rq->mmap_entry = NULL;
	rq->wq = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_free);

/**
 * softrvt_rq_head - read and validate the producer index
 * @rq: the ring
 * @head: where to store the index
 *
 * For a user ring the index comes from userspace: it is read once, with
 * acquire semantics so the WQE it publishes is visible, and never used
 * unless it lies inside the ring.
 *
 * Return: 0, or -EIO when the index is out of range.
 */
int softrvt_rq_head(const struct softrvt_rq *rq, u32 *head)
{
	/* Acquire: pairs with the producer's release of the WQEs it wrote. */
	u32 h = smp_load_acquire(&rq->wq->head.val);

	if (unlikely(h >= rq->size))
		return -EIO;
	*head = h;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_head);

/**
 * softrvt_rq_count - WQEs between two valid indices
 * @rq: the ring
 * @head: producer index, < @rq->size
 * @tail: consumer index, < @rq->size
 *
 * Return: the number of posted, unconsumed WQEs.
 */
u32 softrvt_rq_count(const struct softrvt_rq *rq, u32 head, u32 tail)
{
	return head >= tail ? head - tail : rq->size - tail + head;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_count);

static u32 softrvt_rq_next(const struct softrvt_rq *rq, u32 index)
{
	return ++index == rq->size ? 0 : index;
}

/**
 * softrvt_rq_post - append a chain of receive WRs
 * @rq: the ring
 * @wr: the first WR of the chain
 * @bad_wr: set to the first WR not posted
 *
 * Stops at the first WR that cannot be posted; the ones before it stay
 * posted.  May be called from any context, including hard interrupts.
 *
 * Return: 0, -EINVAL for too many SGEs, -ENOMEM for a full ring, -EIO
 * for a corrupt producer index.
 */
int softrvt_rq_post(struct softrvt_rq *rq, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int ret = 0;
	u32 head;

	spin_lock_irqsave(&rq->lock, flags);
	ret = softrvt_rq_head(rq, &head);
	for (; !ret && wr; wr = wr->next) {
		struct rvt_rwqe *wqe;
		u32 next;
		int i;

		if (unlikely(wr->num_sge > rq->max_sge || wr->num_sge < 0)) {
			ret = -EINVAL;
			break;
		}
		next = softrvt_rq_next(rq, head);
		if (unlikely(next == rq->tail)) {
			ret = -ENOMEM;
			break;
		}
		wqe = softrvt_rwqe_ptr(rq, head);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sg_list[i].addr = wr->sg_list[i].addr;
			wqe->sg_list[i].length = wr->sg_list[i].length;
			wqe->sg_list[i].lkey = wr->sg_list[i].lkey;
		}
		head = next;
		/*
		 * Release: the WQE before the index that publishes it.  A user
		 * ring's consumer-side readers are in other contexts.
		 */
		smp_store_release(&rq->wq->head.val, head);
	}
	spin_unlock_irqrestore(&rq->lock, flags);

	if (ret)
		*bad_wr = wr;
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_post);

/**
 * softrvt_rq_pop_locked - take the oldest WQE off a ring
 * @rq: the ring, with @rq->lock held
 * @wqe: a buffer of @rq->stride bytes that receives a copy of the WQE
 *
 * The WQE is copied out because userspace may rewrite a user ring at any
 * time; its num_sge is checked on the copy, never on the ring.
 *
 * Return: the number of WQEs left, -ENOENT if the ring was empty, -EIO if
 * the producer index or the WQE is corrupt.
 */
int softrvt_rq_pop_locked(struct softrvt_rq *rq, struct rvt_rwqe *wqe)
{
	u32 head;
	int ret;

	lockdep_assert_held(&rq->lock);

	ret = softrvt_rq_head(rq, &head);
	if (ret)
		return ret;
	if (head == rq->tail)
		return -ENOENT;

	memcpy(wqe, softrvt_rwqe_ptr(rq, rq->tail), rq->stride);
	if (unlikely(wqe->num_sge > rq->max_sge))
		return -EIO;

	rq->tail = softrvt_rq_next(rq, rq->tail);
	/* Release: a user producer may reuse the slot once it sees this. */
	smp_store_release(&rq->wq->tail.val, rq->tail);
	return softrvt_rq_count(rq, head, rq->tail);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_pop_locked);

/**
 * softrvt_rq_resize_locked - move a ring's outstanding WQEs into another ring
 * @rq: the ring in use, with @rq->lock held
 * @new: an empty ring from softrvt_rq_init() with the same max_sge
 *
 * Outstanding WQEs keep their order and start at slot 0 of the new ring,
 * then the two rings are exchanged, so that on success @new holds the
 * old ring and on failure the unused new one; either way the caller
 * releases @new with softrvt_rq_free() outside the lock.
 *
 * Return: 0, -EINVAL if the outstanding WQEs do not fit, or -EIO for a
 * corrupt producer index.
 */
int softrvt_rq_resize_locked(struct softrvt_rq *rq, struct softrvt_rq *new)
{
	u32 head, tail, n;
	int ret;

	lockdep_assert_held(&rq->lock);

	ret = softrvt_rq_head(rq, &head);
	if (ret)
		return ret;
	if (softrvt_rq_count(rq, head, rq->tail) >= new->size)
		return -EINVAL;
	for (n = 0, tail = rq->tail; tail != head;
	     tail = softrvt_rq_next(rq, tail), n++)
		memcpy(softrvt_rwqe_ptr(new, n), softrvt_rwqe_ptr(rq, tail),
		       rq->stride);
	new->wq->head.val = n;
	new->wq->tail.val = 0;
	new->tail = 0;

	swap(rq->wq, new->wq);
	swap(rq->size, new->size);
	swap(rq->tail, new->tail);
	swap(rq->mmap_entry, new->mmap_entry);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rq_resize_locked);

/**
 * softrvt_rq_mmap_bytes - the length userspace maps for a ring
 * @rq: the ring
 *
 * Return: the page-aligned size of the allocation behind @rq->wq.
 */
size_t softrvt_rq_mmap_bytes(const struct softrvt_rq *rq)
{
	return PAGE_ALIGN(sizeof(struct softrvt_rwq_header) +
			  (size_t)rq->size * rq->stride);
}

/**
 * softrvt_rq_pop_wr_id - discard the oldest WQE, keeping only its wr_id
 * @rq: the ring
 * @wr_id: where to store the WQE's wr_id
 *
 * Used to flush a ring one WQE at a time, so that each completion is
 * entered without the ring's lock held.  Any context.
 *
 * Return: 0, -ENOENT if the ring is empty, -EIO if it is corrupt.
 */
int softrvt_rq_pop_wr_id(struct softrvt_rq *rq, u64 *wr_id)
{
	unsigned long flags;
	u32 head;
	int ret;

	spin_lock_irqsave(&rq->lock, flags);
	ret = softrvt_rq_head(rq, &head);
	if (!ret && head == rq->tail)
		ret = -ENOENT;
	if (!ret) {
		*wr_id = softrvt_rwqe_ptr(rq, rq->tail)->wr_id;
		rq->tail = softrvt_rq_next(rq, rq->tail);
		/* Release: as in softrvt_rq_pop_locked(). */
		smp_store_release(&rq->wq->tail.val, rq->tail);
	}
	spin_unlock_irqrestore(&rq->lock, flags);
	return ret;
}

/**
 * softrvt_rq_posted - how many WQEs a ring holds right now
 * @rq: the ring
 *
 * A flush completes this many WQEs and no more: a user producer can keep
 * publishing WQEs as fast as the kernel consumes them, so "until the ring
 * is empty" might never come.  WQEs published later are the next flush's.
 * Any context.
 *
 * Return: the number of posted WQEs, 0 if the producer index is corrupt.
 */
u32 softrvt_rq_posted(struct softrvt_rq *rq)
{
	unsigned long flags;
	u32 head, n = 0;

	spin_lock_irqsave(&rq->lock, flags);
	if (!softrvt_rq_head(rq, &head))
		n = softrvt_rq_count(rq, head, rq->tail);
	spin_unlock_irqrestore(&rq->lock, flags);
	return n;
}

/**
 * softrvt_rq_reset - empty a ring without completing its WQEs
 * @rq: the ring
 *
 * For the move to RESET, which discards posted WQEs.  Both indices are
 * written, as userspace restarts its producer at 0 too.
 */
void softrvt_rq_reset(struct softrvt_rq *rq)
{
	unsigned long flags;

	spin_lock_irqsave(&rq->lock, flags);
	rq->tail = 0;
	/* Plain stores suffice: no WQE is published by an empty ring. */
	WRITE_ONCE(rq->wq->tail.val, 0);
	WRITE_ONCE(rq->wq->head.val, 0);
	spin_unlock_irqrestore(&rq->lock, flags);
}
