// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The memory placement extensions of IBA 1.5 (annex A19) on RC: FLUSH,
 * which makes what earlier requests wrote visible (globally, or
 * persistently) before it is answered, and ATOMIC_WRITE, which stores
 * eight bytes at once.  Both are answered with an RDMA READ response
 * without payload, as rdma_rxe answers them.
 *
 * The responder's half is here, shared by the wire's responder (resp.c)
 * and the same-device path (ruc.c).  ib_uverbs' post_send carries
 * neither: the uverbs method that posts them is in methods.c.
 *
 * softrvt has no persistent memory: no region may be registered with
 * IB_ACCESS_FLUSH_PERSISTENT (the device does not claim
 * IB_DEVICE_FLUSH_PERSISTENT, so ib_core refuses it), and a persistent
 * FLUSH is refused as a remote access error, as rdma_rxe refuses one to a
 * region that is not persistent memory.
 */

#include "softrvt.h"

/* The rights a FLUSH of @type needs, of the QP and of the region. */
static int softrvt_flush_access(u8 type)
{
	return (type & IB_FLUSH_GLOBAL ? IB_ACCESS_FLUSH_GLOBAL : 0) |
	       (type & IB_FLUSH_PERSISTENT ? IB_ACCESS_FLUSH_PERSISTENT : 0);
}

/**
 * softrvt_flush_valid - whether a FLUSH's type and level are ones softrvt knows
 * @type: IB_FLUSH_GLOBAL and/or IB_FLUSH_PERSISTENT
 * @level: IB_FLUSH_RANGE or IB_FLUSH_MR
 *
 * Return: true if both are.
 */
bool softrvt_flush_valid(u8 type, u8 level)
{
	return type && !(type & ~(IB_FLUSH_GLOBAL | IB_FLUSH_PERSISTENT)) &&
	       (level == IB_FLUSH_RANGE || level == IB_FLUSH_MR);
}

/**
 * softrvt_placement_flush - execute a FLUSH at the responder
 * @qp: the responder QP
 * @rkey: the region's key
 * @iova: the range's first byte (IB_FLUSH_RANGE)
 * @len: the range's bytes (IB_FLUSH_RANGE)
 * @type: the placement type, IB_FLUSH_GLOBAL and/or IB_FLUSH_PERSISTENT
 * @level: IB_FLUSH_RANGE, or IB_FLUSH_MR for the whole region
 *
 * Every request before it was executed in order and wrote with the CPU:
 * a full barrier makes those stores visible to every CPU before the
 * answer leaves.  Any context.
 *
 * Return: 0; -EINVAL for a type or level that does not exist; -EACCES
 * when the QP or the region lacks the right, or the range is not the
 * region's, and for any persistent FLUSH.
 */
int softrvt_placement_flush(struct softrvt_qp *qp, u32 rkey, u64 iova, u32 len,
			    u8 type, u8 level)
{
	int access = softrvt_flush_access(type);
	u64 range = len;
	struct softrvt_mr *mr;

	if (!softrvt_flush_valid(type, level))
		return -EINVAL;
	if ((qp->attr.qp_access_flags & access) != access ||
	    (type & IB_FLUSH_PERSISTENT))
		return -EACCES;
	if (level == IB_FLUSH_MR) {
		/* Its range is ignored (oA19-9): the region names itself. */
		mr = softrvt_mr_get(softrvt_to_dev(qp->ibqp.device), rkey);
		if (!mr)
			return -EACCES;
		iova = READ_ONCE(mr->iova);
		range = READ_ONCE(mr->length);
		softrvt_put_mr(mr);
	}
	if (softrvt_rkey_lookup(qp, rkey, iova, range, access, &mr))
		return -EACCES;
	softrvt_put_mr(mr);
	/* The stores of the requests before it, before its answer. */
	smp_mb();
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_placement_flush);

/**
 * softrvt_placement_atomic_write - execute an ATOMIC_WRITE at the responder
 * @qp: the responder QP
 * @rkey: the region's key
 * @iova: where the eight bytes go, aligned to eight (IBA A19.4.2)
 * @value: the eight bytes, as the requester gave them
 *
 * The store is one 64-bit store, ordered after every store the requests
 * before it made.  Any context.
 *
 * Return: 0; -EINVAL for an address that is not aligned; -EACCES when
 * the QP or the region does not allow the write.
 */
int softrvt_placement_atomic_write(struct softrvt_qp *qp, u32 rkey, u64 iova,
				   u64 value)
{
	struct softrvt_mr *mr;
	u32 avail;
	void *target;
	int ret = 0;

	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return -EACCES;
	if (iova & (sizeof(u64) - 1))
		return -EINVAL;
	if (softrvt_rkey_lookup(qp, rkey, iova, sizeof(u64),
				IB_ACCESS_REMOTE_WRITE, &mr))
		return -EACCES;
	target = softrvt_mr_map(mr, iova, sizeof(u64), &avail);
	/* A region whose iova and pages disagree on the alignment. */
	if (avail < sizeof(u64) || !IS_ALIGNED((uintptr_t)target, sizeof(u64)))
		ret = -EINVAL;
	else	/* after every store of the requests before it */
		smp_store_release((u64 *)target, value);
	softrvt_mr_unmap(mr, target);
	softrvt_put_mr(mr);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_placement_atomic_write);
