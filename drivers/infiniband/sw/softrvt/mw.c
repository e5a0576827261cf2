// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows, type 1 and type 2B.
 *
 * A window grants a peer remote access to a range of an MR, by an rkey of
 * its own.  Its key comes from the MRs' key space (mr.c) and its entry in
 * mr_xa is tagged SOFTRVT_KEY_MW, so that an rkey names an MR or a window,
 * never both, and a window's key is never an lkey.
 *
 * Both types are bound by an IB_WR_BIND_MW that the QP's send engine
 * executes in send queue order, like IB_WR_REG_MR: ibv_bind_mw() of a type
 * 1 window is such a WR too, posted by the provider.  ib_uverbs' post_send
 * carries neither BIND_MW nor LOCAL_INV, so the provider posts them with
 * the driver method SOFTRVT_METHOD_QP_POST_MW_WR (methods.c).  A type 1 window
 * is bound again, or unbound with a length of 0, by another bind; a type
 * 2 window is bound once, to the MR and to the QP that binds it, until
 * IB_WR_LOCAL_INV or a SEND with Invalidate on that QP invalidates it.
 * Each bind takes the key the consumer gives, which may differ from the
 * window's only in its low byte.
 *
 * Remote accesses through a window check its key, PD, QP (type 2), rights
 * and range, then go to its MR, whose bound windows keep it from being
 * invalidated or deregistered.  Zero-based windows are not supported.
 *
 * A window's fields change under its lock, taken before its MR's.  It is
 * found under RCU: ib_core frees it as soon as dealloc_mw returns, so
 * dealloc waits a grace period once the window is unpublished.
 */

#include "softrvt.h"

/* The rights a bind may give; LOCAL_WRITE means nothing to a window. */
#define SOFTRVT_MW_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)
#define SOFTRVT_MW_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC)

/* The window whose index @key carries; the caller holds RCU. */
static struct softrvt_mw *softrvt_mw_find(struct softrvt_dev_info *rdi, u32 key)
{
	void *entry = softrvt_key_find(rdi, key);

	if (xa_pointer_tag(entry) != SOFTRVT_KEY_MW)
		return NULL;
	return xa_untag_pointer(entry);
}

/**
 * softrvt_alloc_mw - allocate a memory window (ib_device_ops.alloc_mw)
 * @ibmw: the window ib_core allocated, with its PD and type (1 or 2)
 * @udata: unused
 *
 * Its rkey is ibmw->rkey; it is not bound.  Process context.
 *
 * Return: 0 or a negative errno.
 */
int softrvt_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibmw->device);
	struct softrvt_mw *mw = softrvt_to_mw(ibmw);
	int ret;

	if (atomic_inc_return(&rdi->n_mws) > SOFTRVT_MAX_MW) {
		ret = -ENOMEM;
		goto err;
	}
	spin_lock_init(&mw->lock);
	ret = softrvt_key_alloc(rdi, &mw->key);
	if (ret)
		goto err;
	ibmw->rkey = mw->key;
	softrvt_key_set(rdi, mw->key, xa_tag_pointer(mw, SOFTRVT_KEY_MW));
	return 0;

err:
	atomic_dec(&rdi->n_mws);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_alloc_mw);

/* Release the window's MR. */
static void softrvt_mw_unbind_locked(struct softrvt_mw *mw)
	__must_hold(&mw->lock)
{
	struct softrvt_mr *mr = mw->mr;

	lockdep_assert_held(&mw->lock);
	if (!mr)
		return;
	spin_lock(&mr->lock);
	mr->n_mws--;
	spin_unlock(&mr->lock);
	mw->mr = NULL;
	mw->access = 0;
	mw->iova = 0;
	mw->length = 0;
}

/**
 * softrvt_dealloc_mw - free a memory window (ib_device_ops.dealloc_mw)
 * @ibmw: the window, bound or not
 *
 * A bound window releases its MR.  Accesses that passed their check
 * before finish; none starts after.  Process context; sleeps for an RCU
 * grace period.
 *
 * Return: 0.
 */
int softrvt_dealloc_mw(struct ib_mw *ibmw)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibmw->device);
	struct softrvt_mw *mw = softrvt_to_mw(ibmw);
	unsigned long flags;

	softrvt_key_free(rdi, mw->key);
	/* No lookup or bind is still inside the window after this. */
	synchronize_rcu();
	spin_lock_irqsave(&mw->lock, flags);
	softrvt_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	atomic_dec(&rdi->n_mws);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_dealloc_mw);

/*
 * Whether @mr, of @pd and named by @lkey, may have the window [@iova,
 * @iova + @len) with rights @access bound to it (IBA C10-73 to C10-75);
 * it then counts the window.
 */
static bool softrvt_mw_take_mr(struct softrvt_mr *mr, struct ib_pd *pd, u32 lkey,
			       u64 iova, u64 len, int access)
{
	bool ok;

	spin_lock(&mr->lock);
	ok = mr->valid && !mr->dying && mr->key == lkey && mr->ibmr.pd == pd &&
	     (mr->access & IB_ACCESS_MW_BIND) &&
	     (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	      (mr->access & IB_ACCESS_LOCAL_WRITE)) &&
	     iova >= mr->iova && len <= mr->length &&
	     iova - mr->iova <= mr->length - len;
	if (ok)
		mr->n_mws++;
	spin_unlock(&mr->lock);
	return ok;
}

/* Whether @qp may bind @mw as @wqe asks, MR aside.  Under mw->lock. */
static bool softrvt_mw_may_bind(const struct softrvt_qp *qp, const struct softrvt_mw *mw,
				const struct softrvt_swqe *wqe)
{
	/* Another index or tag: another window. */
	if ((wqe->rkey ^ mw->key) >> SOFTRVT_KEY_INDEX_SHIFT)
		return false;
	if (mw->ibmw.pd != qp->ibqp.pd)
		return false;
	if (mw->ibmw.type == IB_MW_TYPE_1)
		return true;
	/* Type 2 is bound from the free state only, to a range (o10-37.2.30, 40). */
	return !mw->mr && wqe->bind_len;
}

/**
 * softrvt_mw_bind - execute IB_WR_BIND_MW
 * @qp: the QP whose send engine runs the WQE
 * @wqe: the WQE: the window's new key in rkey, the MR's lkey in
 *	 bind_lkey, the range at remote_addr of bind_len bytes, the rights
 *	 in reg_access
 *
 * The window, the MR and the QP must share a PD; the MR must grant
 * IB_ACCESS_MW_BIND, and local write for a window that grants remote
 * write or atomics; the range must lie inside the MR.  A type 2 window is
 * bound to @qp too.  Any context; does not allocate.
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR for any of the above, an
 * unknown key or rights a window cannot have (zero-based ones among them).
 */
enum ib_wc_status softrvt_mw_bind(struct softrvt_qp *qp, const struct softrvt_swqe *wqe)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	int access = wqe->reg_access & ~IB_ACCESS_OPTIONAL;
	enum ib_wc_status status = IB_WC_MW_BIND_ERR;
	struct softrvt_mr *mr = NULL;
	unsigned long flags;
	struct softrvt_mw *mw;

	if (access & ~SOFTRVT_MW_ACCESS)
		return IB_WC_MW_BIND_ERR;
	if (wqe->bind_len) {
		mr = softrvt_mr_get(rdi, wqe->bind_lkey);
		if (!mr)
			return IB_WC_MW_BIND_ERR;
	}

	rcu_read_lock();
	mw = softrvt_mw_find(rdi, wqe->rkey);
	if (!mw)
		goto out;
	spin_lock_irqsave(&mw->lock, flags);
	if (!softrvt_mw_may_bind(qp, mw, wqe) ||
	    (mr && !softrvt_mw_take_mr(mr, qp->ibqp.pd, wqe->bind_lkey,
				       wqe->remote_addr, wqe->bind_len, access))) {
		spin_unlock_irqrestore(&mw->lock, flags);
		goto out;
	}
	/* A type 1 window bound again leaves its old MR. */
	softrvt_mw_unbind_locked(mw);
	mw->key = wqe->rkey;
	if (mr) {
		mw->mr = mr;
		mw->access = access & SOFTRVT_MW_REMOTE;
		mw->iova = wqe->remote_addr;
		mw->length = wqe->bind_len;
	}
	if (mw->ibmw.type == IB_MW_TYPE_2) {
		mw->qpn = qp->ibqp.qp_num;
		qp->s_mw_bound = true;
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	status = IB_WC_SUCCESS;
out:
	rcu_read_unlock();
	/* The binding holds the MR through n_mws, not a reference. */
	if (mr)
		softrvt_put_mr(mr);
	return status;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mw_bind);

/* Whether @mw lets @qp's peer at [@iova, @iova + @len).  Under mw->lock. */
static bool softrvt_mw_allows(const struct softrvt_mw *mw, const struct softrvt_qp *qp,
			      u32 rkey, u64 iova, u64 len, int access)
{
	return mw->mr && mw->key == rkey && mw->ibmw.pd == softrvt_qp_rx_pd(qp) &&
	       (mw->ibmw.type == IB_MW_TYPE_1 ||
		mw->qpn == qp->ibqp.qp_num) &&
	       (mw->access & access) == access && iova >= mw->iova &&
	       len <= mw->length && iova - mw->iova <= mw->length - len;
}

/**
 * softrvt_rkey_lookup - find the memory behind an rkey, for a remote access
 * @qp: the responder QP
 * @rkey: an MR's key, or a memory window's
 * @iova: first byte accessed
 * @len: bytes accessed
 * @access: the IB_ACCESS_REMOTE_* right needed
 * @mr: set to the MR with a reference, as softrvt_mr_lookup() does
 *
 * Through a window, the window's key, PD, QP (type 2), rights and range
 * are checked; the MR's own rights do not matter, the bind checked them.
 * The PD is the QP's, or an XRC TGT QP's request's SRQ's.
 * Any context.
 *
 * Return: 0, or -EACCES.
 */
int softrvt_rkey_lookup(struct softrvt_qp *qp, u32 rkey, u64 iova, u64 len,
			int access, struct softrvt_mr **mr)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	unsigned long flags;
	struct softrvt_mw *mw;
	int ret = -EACCES;

	/* Most rkeys name MRs: look for one first. */
	if (!softrvt_mr_lookup(softrvt_qp_rx_pd(qp), rkey, iova, len, access, mr))
		return 0;

	rcu_read_lock();
	mw = softrvt_mw_find(rdi, rkey);
	if (mw) {
		spin_lock_irqsave(&mw->lock, flags);
		if (softrvt_mw_allows(mw, qp, rkey, iova, len, access)) {
			/* Alive: its bound windows keep it registered. */
			refcount_inc(&mw->mr->refcount);
			*mr = mw->mr;
			ret = 0;
		}
		spin_unlock_irqrestore(&mw->lock, flags);
	}
	rcu_read_unlock();
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rkey_lookup);

/*
 * Invalidate the window @rkey names, for IB_WR_LOCAL_INV or a SEND with
 * Invalidate on @qp.  Return: 0; -ENOENT if it names none; -EACCES if
 * the key, the PD or (type 2, bound) the QP is not the window's; -EINVAL
 * for a type 1 window, which only a bind changes (o10-37.2.26).
 */
static int softrvt_mw_invalidate(struct softrvt_qp *qp, u32 rkey)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	unsigned long flags;
	struct softrvt_mw *mw;
	int ret = 0;

	rcu_read_lock();
	mw = softrvt_mw_find(rdi, rkey);
	if (!mw) {
		rcu_read_unlock();
		return -ENOENT;
	}
	spin_lock_irqsave(&mw->lock, flags);
	if (mw->key != rkey || mw->ibmw.pd != softrvt_qp_rx_pd(qp))
		ret = -EACCES;
	else if (mw->ibmw.type == IB_MW_TYPE_1)
		ret = -EINVAL;
	else if (mw->mr && mw->qpn != qp->ibqp.qp_num)
		ret = -EACCES;
	else
		softrvt_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	rcu_read_unlock();
	return ret;
}

/**
 * softrvt_rkey_invalidate - invalidate a type 2 window or a fast-reg MR
 * @qp: the QP of the IB_WR_LOCAL_INV, or the responder of a SEND with
 *	Invalidate
 * @rkey: the key, whole
 *
 * Invalidating an MR or a window that is not valid is allowed.  Any
 * context.
 *
 * Return: 0; -EACCES if @rkey names nothing @qp may invalidate; -EINVAL
 * for an MR or window that cannot be invalidated; -EBUSY for an MR with
 * windows bound to it.
 */
int softrvt_rkey_invalidate(struct softrvt_qp *qp, u32 rkey)
{
	int ret = softrvt_mw_invalidate(qp, rkey);

	if (ret != -ENOENT)
		return ret;
	return softrvt_mr_invalidate(softrvt_qp_rx_pd(qp), rkey);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rkey_invalidate);

/**
 * softrvt_mw_unbind_qp - invalidate the type 2 windows bound to a QP going away
 * @qp: the QP, unpublished, its engine stopped
 *
 * Their MRs may then be deregistered; the windows may be bound again by
 * another QP.  Process context.
 */
void softrvt_mw_unbind_qp(struct softrvt_qp *qp)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	unsigned long index, flags;
	void *entry;

	/* Only this QP's engine binds to it, and it has stopped. */
	if (!qp->s_mw_bound)
		return;
	/* Keeps each window found alive, as in softrvt_rkey_lookup(). */
	rcu_read_lock();
	xa_for_each(&rdi->mr_xa, index, entry) {
		struct softrvt_mw *mw;

		if (xa_pointer_tag(entry) != SOFTRVT_KEY_MW)
			continue;
		mw = xa_untag_pointer(entry);
		spin_lock_irqsave(&mw->lock, flags);
		if (mw->ibmw.type == IB_MW_TYPE_2 &&
		    mw->ibmw.pd == qp->ibqp.pd && mw->qpn == qp->ibqp.qp_num)
			softrvt_mw_unbind_locked(mw);
		spin_unlock_irqrestore(&mw->lock, flags);
	}
	rcu_read_unlock();
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mw_unbind_qp);
