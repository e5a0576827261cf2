// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions, their keys, and access to the memory behind them.
 *
 * A key is (tag << 25) | (index << 8) | variant: the index finds the MR in
 * mr_xa, the low byte belongs to the consumer as the IB spec allows, and
 * the tag and the first variant are random, so that a peer cannot name a
 * region by counting (indices are handed out cyclically).  The whole key
 * must match.  Index 0 is never allocated; lkey 0 is the device's
 * local_dma_lkey, valid for kernel PDs.
 *
 * Lookups run under RCU and take a reference; deregistration unpublishes
 * the MR, then waits for the references in flight before freeing it.
 *
 * A fast-registration MR (alloc_mr) is created invalid and becomes valid,
 * with a key whose low byte the consumer chose, by an IB_WR_REG_MR its QP
 * executes in send queue order; IB_WR_LOCAL_INV or a peer's SEND with
 * Invalidate make it invalid again.  None of it sleeps or allocates: the
 * NVMe and NFS clients post these from any context.
 *
 * Memory windows (mw.c) take their keys from the same indices: an entry
 * of mr_xa is an MR, or a window tagged SOFTRVT_KEY_MW, which no MR lookup
 * finds.  An MR with windows bound to it is neither invalidated nor
 * deregistered.
 */

#include <linux/highmem.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "softrvt.h"

#define SOFTRVT_KEY_INDEX_BITS	17
#define SOFTRVT_MR_INDEX_MAX	((1U << SOFTRVT_KEY_INDEX_BITS) - 1)
#define SOFTRVT_KEY_TAG_SHIFT	(SOFTRVT_KEY_INDEX_SHIFT + SOFTRVT_KEY_INDEX_BITS)
static_assert(SOFTRVT_MAX_MR + SOFTRVT_MAX_MW <= SOFTRVT_MR_INDEX_MAX);

static u32 softrvt_key_index(u32 key)
{
	return (key >> SOFTRVT_KEY_INDEX_SHIFT) & SOFTRVT_MR_INDEX_MAX;
}

/**
 * softrvt_mr_make_key - a new key for the MR or window at an index of mr_xa
 * @index: the index, 1 to SOFTRVT_MR_INDEX_MAX
 *
 * Return: the key, with a random tag and variant.
 */
u32 softrvt_mr_make_key(u32 index)
{
	u32 rnd = get_random_u32();

	return (rnd & ~0U << SOFTRVT_KEY_TAG_SHIFT) |
	       index << SOFTRVT_KEY_INDEX_SHIFT | (rnd & 0xff);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_make_key);

/**
 * softrvt_key_alloc - reserve an index of mr_xa and make a key for it
 * @rdi: the device
 * @key: set to the new key
 *
 * The index finds nothing until softrvt_key_set() publishes the MR or the
 * window.  Process context.
 *
 * Return: 0, -EBUSY when no index is free, or -ENOMEM.
 */
int softrvt_key_alloc(struct softrvt_dev_info *rdi, u32 *key)
{
	u32 index;
	int ret;

	ret = xa_alloc_cyclic(&rdi->mr_xa, &index, NULL,
			      XA_LIMIT(1, SOFTRVT_MR_INDEX_MAX),
			      &rdi->next_mr_index, GFP_KERNEL);
	if (ret < 0)
		return ret;
	*key = softrvt_mr_make_key(index);
	return 0;
}

/**
 * softrvt_key_set - publish what a key of softrvt_key_alloc() names
 * @rdi: the device
 * @key: the key
 * @entry: a struct softrvt_mr, or a struct softrvt_mw tagged with
 *	   xa_tag_pointer(mw, SOFTRVT_KEY_MW)
 */
void softrvt_key_set(struct softrvt_dev_info *rdi, u32 key, void *entry)
{
	/* The index is reserved: storing there allocates nothing. */
	xa_store(&rdi->mr_xa, softrvt_key_index(key), entry, GFP_KERNEL);
}

/**
 * softrvt_key_free - unpublish a key's index and free it
 * @rdi: the device
 * @key: the key
 *
 * Lookups under RCU may still see the entry until a grace period ends.
 */
void softrvt_key_free(struct softrvt_dev_info *rdi, u32 key)
{
	xa_erase(&rdi->mr_xa, softrvt_key_index(key));
}

/**
 * softrvt_key_find - the entry of mr_xa a key's index names
 * @rdi: the device
 * @key: the key; only its index is looked at
 *
 * The caller holds rcu_read_lock().
 *
 * Return: an MR, a window tagged SOFTRVT_KEY_MW, or NULL.
 */
void *softrvt_key_find(struct softrvt_dev_info *rdi, u32 key)
{
	return xa_load(&rdi->mr_xa, softrvt_key_index(key));
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_key_find);

static struct softrvt_mr *softrvt_mr_new(struct softrvt_dev_info *rdi, int access)
{
	struct softrvt_mr *mr;
	int ret;

	if (atomic_inc_return(&rdi->n_mrs) > SOFTRVT_MAX_MR) {
		ret = -ENOMEM;
		goto err_count;
	}
	mr = kzalloc_obj(*mr, GFP_KERNEL);
	if (!mr) {
		ret = -ENOMEM;
		goto err_count;
	}
	refcount_set(&mr->refcount, 1);
	init_completion(&mr->released);
	spin_lock_init(&mr->lock);
	mr->access = access;
	mr->valid = true;
	/* Reserve the index now; the MR is published once complete. */
	ret = softrvt_key_alloc(rdi, &mr->key);
	if (ret)
		goto err_free;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&rdi->n_mrs);
	return ERR_PTR(ret);
}

static void softrvt_free_mr(struct softrvt_dev_info *rdi, struct softrvt_mr *mr)
{
	if (!mr->key_moved)
		softrvt_key_free(rdi, mr->key);
	softrvt_put_mr(mr);
	wait_for_completion(&mr->released);
	kvfree(mr->pages);
	kfree(mr->fr_pages);
	atomic_dec(&rdi->n_mrs);
	kfree_rcu(mr, rcu);
}

/**
 * softrvt_put_mr - drop a reference taken by softrvt_mr_lookup()
 * @mr: the MR
 */
void softrvt_put_mr(struct softrvt_mr *mr)
{
	if (refcount_dec_and_test(&mr->refcount))
		complete(&mr->released);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_put_mr);

static bool softrvt_mr_allows_locked(const struct softrvt_mr *m, struct ib_pd *pd,
				     u32 key, u64 iova, u64 len, int access)
{
	/* Only a fast-registration MR changes: the others need no lock. */
	lockdep_assert(!m->fr_pages || lockdep_is_held(&m->lock));
	return m->valid && m->key == key && m->ibmr.pd == pd &&
	       (m->access & access) == access && iova >= m->iova &&
	       len <= m->length && iova - m->iova <= m->length - len;
}

/*
 * A fast-registration MR changes under REG_MR and invalidations: its
 * key, state and region are read together, under its lock.
 */
static bool softrvt_mr_allows(struct softrvt_mr *m, struct ib_pd *pd, u32 key,
			      u64 iova, u64 len, int access)
{
	unsigned long flags;
	bool ok;

	if (!m->fr_pages)
		return softrvt_mr_allows_locked(m, pd, key, iova, len, access);
	spin_lock_irqsave(&m->lock, flags);
	ok = softrvt_mr_allows_locked(m, pd, key, iova, len, access);
	spin_unlock_irqrestore(&m->lock, flags);
	return ok;
}

/**
 * softrvt_mr_get - the MR whose index a key carries, with a reference
 * @rdi: the device
 * @key: the key; only its index is looked at
 *
 * Any context.
 *
 * Return: the MR for softrvt_put_mr(), or NULL if the index names none (a
 * memory window's key names none).
 */
struct softrvt_mr *softrvt_mr_get(struct softrvt_dev_info *rdi, u32 key)
{
	struct softrvt_mr *m;
	void *entry;

	rcu_read_lock();
	entry = softrvt_key_find(rdi, key);
	m = xa_pointer_tag(entry) ? NULL : entry;
	if (m && !refcount_inc_not_zero(&m->refcount))
		m = NULL;
	rcu_read_unlock();
	return m;
}

/**
 * softrvt_mr_lookup - find the MR behind a key and check an access through it
 * @pd: the PD the access is made in
 * @key: the lkey or rkey
 * @iova: first byte accessed
 * @len: bytes accessed
 * @access: IB_ACCESS_* rights needed; 0 for a local read
 * @mr: set to the MR with a reference, or to NULL for the local DMA lkey
 *	(then @iova is a kernel virtual address)
 *
 * Any context.
 *
 * Return: 0, or -EACCES when the key, PD, rights or bounds do not allow it,
 * or the MR is a fast-registration MR not valid now.
 */
int softrvt_mr_lookup(struct ib_pd *pd, u32 key, u64 iova, u64 len, int access,
		      struct softrvt_mr **mr)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(pd->device);
	struct softrvt_mr *m;

	if (key == 0) {
		/* The local DMA lkey: kernel PDs, local access, any address. */
		if (pd->uobject || (access & ~IB_ACCESS_LOCAL_WRITE))
			return -EACCES;
		*mr = NULL;
		return 0;
	}

	m = softrvt_mr_get(rdi, key);
	if (!m)
		return -EACCES;

	if (!softrvt_mr_allows(m, pd, key, iova, len, access)) {
		softrvt_put_mr(m);
		return -EACCES;
	}
	*mr = m;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_lookup);

/*
 * A fast-registration MR's blocks are kernel memory, mapped already.  The
 * lookup checked @iova against the region; should the consumer register
 * the MR again meanwhile (the transfer then lands in the new region, as a
 * late DMA would), the block index is still kept to entries of fr_pages
 * that some mapping filled.
 */
static void *softrvt_mr_map_fr(struct softrvt_mr *mr, u64 iova, u32 len, u32 *avail)
{
	u8 shift = READ_ONCE(mr->fr_shift);
	u64 base = READ_ONCE(mr->iova);
	u64 mask = BIT_ULL(shift) - 1;
	u64 off = iova - base + (base & mask);
	/* Pairs with softrvt_set_page(); a registration needs a block. */
	u32 filled = max(smp_load_acquire(&mr->fr_filled), 1U);
	u64 i = min_t(u64, off >> shift, filled - 1);

	*avail = min_t(u64, len, mask + 1 - (off & mask));
	return ib_virt_dma_to_ptr(READ_ONCE(mr->fr_pages[i]) + (off & mask));
}

/**
 * softrvt_mr_map - map part of a region for the CPU
 * @mr: the MR, or NULL for a kernel virtual address
 * @iova: the first byte; must lie inside @mr
 * @len: bytes wanted
 * @avail: set to how many bytes, at most @len, the mapping covers
 *
 * User MRs are mapped a page at a time with kmap_local_page(), so mappings
 * nest and are undone with softrvt_mr_unmap() in reverse order.  Any context.
 *
 * Return: the kernel address of @iova.
 */
void *softrvt_mr_map(struct softrvt_mr *mr, u64 iova, u32 len, u32 *avail)
{
	u64 off;
	u32 in_page;

	if (mr && mr->fr_pages)
		return softrvt_mr_map_fr(mr, iova, len, avail);
	if (!mr || !mr->pages) {
		*avail = len;
		return (void *)(uintptr_t)iova;
	}
	off = iova - mr->iova + mr->page_offset;
	in_page = offset_in_page(off);
	*avail = min_t(u32, len, PAGE_SIZE - in_page);
	return kmap_local_page(mr->pages[off >> PAGE_SHIFT]) + in_page;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_map);

/**
 * softrvt_mr_unmap - undo softrvt_mr_map()
 * @mr: as given to softrvt_mr_map()
 * @addr: the address it returned
 */
void softrvt_mr_unmap(struct softrvt_mr *mr, void *addr)
{
	if (mr && mr->pages)
		kunmap_local(addr);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_unmap);

/**
 * softrvt_mr_atomic - execute a CMP_AND_SWP or FETCH_AND_ADD on an MR
 * @rdi: the device; its atomic_lock orders every atomic it executes
 * @mr: the MR, referenced and checked by the caller for 8 aligned bytes at
 *	@va with IB_ACCESS_REMOTE_ATOMIC
 * @va: the target's address
 * @fetch_add: FETCH_AND_ADD, which adds @compare_add, else CMP_AND_SWP,
 *	which stores @swap where the target equals @compare_add
 * @compare_add: the value added or compared
 * @swap: the value stored by CMP_AND_SWP
 *
 * The one executor of both responders, the wire's and the same-device
 * path's: atomics are atomic with respect to each other on the device
 * (IB_ATOMIC_HCA), whichever path each came by.  Any context.
 *
 * Return: the target's value before.
 */
u64 softrvt_mr_atomic(struct softrvt_dev_info *rdi, struct softrvt_mr *mr,
		      u64 va, bool fetch_add, u64 compare_add, u64 swap)
{
	u64 *target, old;
	u32 avail;

	target = softrvt_mr_map(mr, va, sizeof(u64), &avail);
	spin_lock(&rdi->atomic_lock);
	old = READ_ONCE(*target);
	if (fetch_add)
		WRITE_ONCE(*target, old + compare_add);
	else if (old == compare_add)
		WRITE_ONCE(*target, swap);
	spin_unlock(&rdi->atomic_lock);
	softrvt_mr_unmap(mr, target);
	return old;
}

/**
 * softrvt_get_dma_mr - an MR covering all kernel memory (ib_device_ops.get_dma_mr)
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * Return: the MR or an ERR_PTR().
 */
struct ib_mr *softrvt_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibpd->device);
	struct softrvt_mr *mr;

	if (ibpd->uobject)
		return ERR_PTR(-EPERM);
	mr = softrvt_mr_new(rdi, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->ibmr.pd = ibpd;
	mr->length = U64_MAX;
	softrvt_key_set(rdi, mr->key, mr);
	return &mr->ibmr;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_get_dma_mr);

static int softrvt_mr_collect_pages(struct softrvt_mr *mr)
{
	struct sg_page_iter iter;
	unsigned long n = 0;

	mr->npages = ib_umem_num_pages(mr->umem);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &iter, 0) {
		if (WARN_ON(n >= mr->npages))
			return -EINVAL;
		mr->pages[n++] = sg_page_iter_page(&iter);
	}
	mr->page_offset = ib_umem_offset(mr->umem);
	return 0;
}

/**
 * softrvt_reg_user_mr - register user memory (ib_device_ops.reg_user_mr)
 * @ibpd: the PD
 * @start: user virtual address of the region
 * @length: its length in bytes
 * @iova: the address the consumer uses for the region's first byte
 * @access: IB_ACCESS_* flags, already checked by ib_core
 * @udata: unused
 *
 * The pages are pinned through ib_umem for the MR's lifetime, and kept in
 * an array so that any byte is found in constant time.
 *
 * Return: the MR or an ERR_PTR().
 */
struct ib_mr *softrvt_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 iova, int access, struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibpd->device);
	struct ib_umem *umem;
	struct softrvt_mr *mr;
	int ret;

	if (length == 0)
		return ERR_PTR(-EINVAL);
	umem = ib_umem_get_va(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	mr = softrvt_mr_new(rdi, access);
	if (IS_ERR(mr)) {
		ib_umem_release(umem);
		return ERR_CAST(mr);
	}
	mr->ibmr.pd = ibpd;
	mr->umem = umem;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	ret = softrvt_mr_collect_pages(mr);
	if (ret) {
		softrvt_free_mr(rdi, mr);
		ib_umem_release(umem);
		return ERR_PTR(ret);
	}
	softrvt_key_set(rdi, mr->key, mr);
	return &mr->ibmr;
}

/**
 * softrvt_rereg_user_mr - change a user MR (ib_device_ops.rereg_user_mr)
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD and/or IB_MR_REREG_ACCESS
 * @start: with IB_MR_REREG_TRANS, the new region's user address
 * @length: with IB_MR_REREG_TRANS, its length
 * @iova: with IB_MR_REREG_TRANS, the address of its first byte
 * @access: with IB_MR_REREG_ACCESS, the new rights, checked by ib_core
 * @pd: the PD the MR is to be in: its own without IB_MR_REREG_PD
 * @udata: unused
 *
 * A registered MR never changes under the lookups in flight: a new MR is
 * registered with what the flags change and what they keep of the old
 * one, and ib_core puts it in the old one's place and deregisters the
 * old one.  The new MR takes over the old one's keys, which the peers
 * hold: from then on they name it.  The old MR is marked dying first, so
 * that no memory window binds to it meanwhile: ib_core could then not
 * deregister it.  Process context.
 *
 * Return: the new MR, or an ERR_PTR(): -EBUSY while windows are bound to
 * the MR, as softrvt_dereg_mr() refuses then too; -EINVAL for an MR without
 * user pages; the MR is unchanged on error.
 */
struct ib_mr *softrvt_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				    u64 length, u64 iova, int access,
				    struct ib_pd *pd, struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibmr->device);
	struct softrvt_mr *old = softrvt_to_mr(ibmr);
	struct softrvt_mr *new;
	unsigned long irqflags;
	struct ib_mr *mr;
	u32 own_key;
	bool busy;

	if (!old->umem)
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->umem->address;
		length = old->length;
		iova = old->iova;
	}

	spin_lock_irqsave(&old->lock, irqflags);
	busy = old->n_mws;
	old->dying = !busy;
	spin_unlock_irqrestore(&old->lock, irqflags);
	if (busy)
		return ERR_PTR(-EBUSY);

	mr = softrvt_reg_user_mr(pd, start, length, iova, access, udata);
	if (IS_ERR(mr)) {
		spin_lock_irqsave(&old->lock, irqflags);
		old->dying = false;
		spin_unlock_irqrestore(&old->lock, irqflags);
		return mr;
	}

	/*
	 * The key is set before the MR is published at the old key's
	 * index; the new MR's own index was never handed out.
	 */
	new = softrvt_to_mr(mr);
	own_key = new->key;
	new->key = old->key;
	new->ibmr.lkey = old->ibmr.lkey;
	new->ibmr.rkey = old->ibmr.rkey;
	softrvt_key_set(rdi, old->key, new);
	softrvt_key_free(rdi, own_key);
	old->key_moved = true;
	return mr;
}

/**
 * softrvt_dereg_mr - deregister an MR (ib_device_ops.dereg_mr)
 * @ibmr: the MR
 * @udata: unused
 *
 * Waits for transfers using the MR to finish before unpinning its pages.
 * An MR with memory windows bound to it stays (IBA 10.6.7.2.6): ib_core
 * keeps its handle, and the cleanup of a process deallocates the windows
 * and then tries again.  Process context.
 *
 * Return: 0, or -EBUSY while windows are bound to it.
 */
int softrvt_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct softrvt_mr *mr = softrvt_to_mr(ibmr);
	struct ib_umem *umem = mr->umem;
	unsigned long flags;
	bool busy;

	/* A bind that found the MR before this must see it going. */
	spin_lock_irqsave(&mr->lock, flags);
	busy = mr->n_mws;
	mr->dying = !busy;
	spin_unlock_irqrestore(&mr->lock, flags);
	if (busy)
		return -EBUSY;
	softrvt_free_mr(softrvt_to_dev(ibmr->device), mr);
	ib_umem_release(umem);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_dereg_mr);

/**
 * softrvt_alloc_mr - a fast-registration MR (ib_device_ops.alloc_mr)
 * @ibpd: the PD
 * @mr_type: only IB_MR_TYPE_MEM_REG
 * @max_num_sg: the most blocks map_mr_sg() will be given for it
 *
 * The block list is allocated now, whole: mapping and registering the MR
 * later allocate nothing.  Process context.
 *
 * Return: the MR, invalid, or an ERR_PTR().
 */
struct ib_mr *softrvt_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			       u32 max_num_sg)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibpd->device);
	struct softrvt_mr *mr;

	if (mr_type != IB_MR_TYPE_MEM_REG || !max_num_sg ||
	    max_num_sg > SOFTRVT_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = softrvt_mr_new(rdi, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->fr_pages = kcalloc(max_num_sg, sizeof(*mr->fr_pages), GFP_KERNEL);
	if (!mr->fr_pages) {
		softrvt_free_mr(rdi, mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fr_max = max_num_sg;
	mr->valid = false;
	mr->ibmr.pd = ibpd;
	softrvt_key_set(rdi, mr->key, mr);
	return &mr->ibmr;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_alloc_mr);

static int softrvt_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct softrvt_mr *mr = softrvt_to_mr(ibmr);

	if (mr->fr_mapped == mr->fr_max)
		return -ENOMEM;
	/* A late transfer into the old region may read it: see map_fr. */
	WRITE_ONCE(mr->fr_pages[mr->fr_mapped], addr);
	mr->fr_mapped++;
	if (mr->fr_mapped > mr->fr_filled)
		/* The entry before the count: softrvt_mr_map_fr() reads both. */
		smp_store_release(&mr->fr_filled, mr->fr_mapped);
	return 0;
}

/**
 * softrvt_map_mr_sg - give a fast-registration MR its blocks (ib_device_ops)
 * @ibmr: the MR, invalid: its consumer does not map one in use
 * @sg: a DMA-mapped scatter list; softrvt's DMA addresses are kernel
 *	addresses
 * @sg_nents: its entries
 * @sg_offset: bytes to skip in the first entry, or NULL
 *
 * ib_sg_to_pages() cuts the list into blocks of ibmr->page_size bytes
 * (4 KiB from NVMe, PAGE_SIZE from NFS) and sets ibmr->iova and length;
 * IB_WR_REG_MR takes them.  Any context: nothing sleeps or allocates.
 *
 * Return: the entries mapped, which stop where a block would be past
 * the max_num_sg of alloc_mr, or a negative errno.
 */
int softrvt_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		      unsigned int *sg_offset)
{
	struct softrvt_mr *mr = softrvt_to_mr(ibmr);

	mr->fr_mapped = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, softrvt_set_page);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_map_mr_sg);

/* The rights a fast registration may grant; optional ones are ignored. */
#define SOFTRVT_FR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND)

/**
 * softrvt_mr_fast_reg - execute IB_WR_REG_MR
 * @qp: the QP whose send engine runs the WQE
 * @mr: the MR of the WQE
 * @key: its new lkey and rkey: only the low byte may differ from the key
 *	it has (the consumer calls ib_update_fast_reg_key())
 * @access: the rights granted
 *
 * Registers the blocks, iova and length the last softrvt_map_mr_sg() left in
 * @mr.  Only an invalid MR of the QP's PD can be registered.  Any
 * context; does not allocate.
 *
 * Return: IB_WC_SUCCESS; IB_WC_LOC_PROT_ERR for an MR of another PD;
 * IB_WC_MW_BIND_ERR, the IB spec's memory management operation error,
 * for the rest: not a fast-registration MR, valid already, another index
 * in @key, rights that are not allowed, or a region its blocks do not
 * cover.
 */
enum ib_wc_status softrvt_mr_fast_reg(struct softrvt_qp *qp, struct softrvt_mr *mr,
				      u32 key, int access)
{
	u32 bsize = mr->ibmr.page_size;
	u64 iova = mr->ibmr.iova;
	u64 length = mr->ibmr.length;
	enum ib_wc_status status = IB_WC_MW_BIND_ERR;
	unsigned long flags;
	u64 end;

	if (!mr->fr_pages)
		return IB_WC_MW_BIND_ERR;
	if (mr->ibmr.pd != qp->ibqp.pd)
		return IB_WC_LOC_PROT_ERR;
	access &= ~IB_ACCESS_OPTIONAL;
	if ((access & ~SOFTRVT_FR_ACCESS) ||
	    ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IB_ACCESS_LOCAL_WRITE)))
		return IB_WC_MW_BIND_ERR;
	if (!is_power_of_2(bsize) || !mr->fr_mapped ||
	    check_add_overflow(iova & (bsize - 1), length, &end) ||
	    end > (u64)mr->fr_mapped * bsize)
		return IB_WC_MW_BIND_ERR;

	spin_lock_irqsave(&mr->lock, flags);
	if (!mr->valid && !((key ^ mr->key) >> SOFTRVT_KEY_INDEX_SHIFT)) {
		mr->key = key;
		mr->access = access;
		/* softrvt_mr_map_fr() reads these two without the lock. */
		WRITE_ONCE(mr->iova, iova);
		mr->length = length;
		WRITE_ONCE(mr->fr_shift, ilog2(bsize));
		mr->valid = true;
		status = IB_WC_SUCCESS;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	return status;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_fast_reg);

/**
 * softrvt_mr_invalidate - make a fast-registration MR invalid
 * @pd: the PD of the QP that asks: IB_WR_LOCAL_INV, or the responder of a
 *	SEND with Invalidate
 * @key: the MR's current key, whole
 *
 * Invalidating an invalid MR is allowed, as in rdmavt and rxe.  Transfers
 * that passed their key check before finish; none starts after.  Any
 * context.
 *
 * Return: 0; -EACCES if @key names no MR of @pd, -EINVAL if it names one
 * that is not a fast-registration MR, -EBUSY if memory windows are bound
 * to it.
 */
int softrvt_mr_invalidate(struct ib_pd *pd, u32 key)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(pd->device);
	unsigned long flags;
	struct softrvt_mr *m;
	int ret = 0;

	m = softrvt_mr_get(rdi, key);
	if (!m)
		return -EACCES;
	spin_lock_irqsave(&m->lock, flags);
	if (m->key != key || m->ibmr.pd != pd)
		ret = -EACCES;
	else if (!m->fr_pages)
		ret = -EINVAL;
	else if (m->n_mws)
		ret = -EBUSY;
	else
		m->valid = false;
	spin_unlock_irqrestore(&m->lock, flags);
	softrvt_put_mr(m);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_mr_invalidate);
