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
 */

#include <linux/highmem.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "softrvt.h"

#define RVT_KEY_INDEX_BITS	17
#define RVT_MR_INDEX_MAX	((1U << RVT_KEY_INDEX_BITS) - 1)
#define RVT_KEY_TAG_SHIFT	(RVT_KEY_INDEX_SHIFT + RVT_KEY_INDEX_BITS)
static_assert(RVT_MAX_MR < RVT_MR_INDEX_MAX);

static u32 rvt_key_index(u32 key)
{
	return (key >> RVT_KEY_INDEX_SHIFT) & RVT_MR_INDEX_MAX;
}

/**
 * rvt_mr_make_key - a new key for the MR at an index of mr_xa
 * @index: the index, 1 to RVT_MR_INDEX_MAX
 *
 * Return: the key, with a random tag and variant.
 */
u32 rvt_mr_make_key(u32 index)
{
	u32 rnd = get_random_u32();

	return (rnd & ~0U << RVT_KEY_TAG_SHIFT) |
	       index << RVT_KEY_INDEX_SHIFT | (rnd & 0xff);
}
EXPORT_SYMBOL_IF_KUNIT(rvt_mr_make_key);

static struct rvt_mr *rvt_alloc_mr(struct rvt_dev_info *rdi, int access)
{
	struct rvt_mr *mr;
	u32 index;
	int ret;

	if (atomic_inc_return(&rdi->n_mrs) > RVT_MAX_MR) {
		ret = -ENOMEM;
		goto err_count;
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		ret = -ENOMEM;
		goto err_count;
	}
	refcount_set(&mr->refcount, 1);
	init_completion(&mr->released);
	mr->access = access;
	/* Reserve the index now; the MR is published once complete. */
	ret = xa_alloc_cyclic(&rdi->mr_xa, &index, NULL,
			      XA_LIMIT(1, RVT_MR_INDEX_MAX),
			      &rdi->next_mr_index, GFP_KERNEL);
	if (ret < 0)
		goto err_free;
	mr->ibmr.lkey = rvt_mr_make_key(index);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&rdi->n_mrs);
	return ERR_PTR(ret);
}

static void rvt_publish_mr(struct rvt_dev_info *rdi, struct rvt_mr *mr)
{
	xa_store(&rdi->mr_xa, rvt_key_index(mr->ibmr.lkey), mr,
		 GFP_KERNEL);
}

static void rvt_free_mr(struct rvt_dev_info *rdi, struct rvt_mr *mr)
{
	xa_erase(&rdi->mr_xa, rvt_key_index(mr->ibmr.lkey));
	rvt_put_mr(mr);
	wait_for_completion(&mr->released);
	kvfree(mr->pages);
	atomic_dec(&rdi->n_mrs);
	kfree_rcu(mr, rcu);
}

/**
 * rvt_put_mr - drop a reference taken by rvt_mr_lookup()
 * @mr: the MR
 */
void rvt_put_mr(struct rvt_mr *mr)
{
	if (refcount_dec_and_test(&mr->refcount))
		complete(&mr->released);
}
EXPORT_SYMBOL_IF_KUNIT(rvt_put_mr);

/**
 * rvt_mr_lookup - find the MR behind a key and check an access through it
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
 * Return: 0, or -EACCES when the key, PD, rights or bounds do not allow it.
 */
int rvt_mr_lookup(struct ib_pd *pd, u32 key, u64 iova, u64 len, int access,
		  struct rvt_mr **mr)
{
	struct rvt_dev_info *rdi = ib_to_rvt(pd->device);
	struct rvt_mr *m;

	if (key == 0) {
		/* The local DMA lkey: kernel PDs, local access, any address. */
		if (pd->uobject || (access & ~IB_ACCESS_LOCAL_WRITE))
			return -EACCES;
		*mr = NULL;
		return 0;
	}

	rcu_read_lock();
	m = xa_load(&rdi->mr_xa, rvt_key_index(key));
	if (m && !refcount_inc_not_zero(&m->refcount))
		m = NULL;
	rcu_read_unlock();
	if (!m)
		return -EACCES;

	if (m->ibmr.lkey != key || m->ibmr.pd != pd ||
	    (m->access & access) != access || iova < m->iova ||
	    len > m->length || iova - m->iova > m->length - len) {
		rvt_put_mr(m);
		return -EACCES;
	}
	*mr = m;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(rvt_mr_lookup);

/**
 * rvt_mr_map - map part of a region for the CPU
 * @mr: the MR, or NULL for a kernel virtual address
 * @iova: the first byte; must lie inside @mr
 * @len: bytes wanted
 * @avail: set to how many bytes, at most @len, the mapping covers
 *
 * User MRs are mapped a page at a time with kmap_local_page(), so mappings
 * nest and are undone with rvt_mr_unmap() in reverse order.  Any context.
 *
 * Return: the kernel address of @iova.
 */
void *rvt_mr_map(struct rvt_mr *mr, u64 iova, u32 len, u32 *avail)
{
	u64 off;
	u32 in_page;

	if (!mr || !mr->pages) {
		*avail = len;
		return (void *)(uintptr_t)iova;
	}
	off = iova - mr->iova + mr->page_offset;
	in_page = offset_in_page(off);
	*avail = min_t(u32, len, PAGE_SIZE - in_page);
	return kmap_local_page(mr->pages[off >> PAGE_SHIFT]) + in_page;
}

/**
 * rvt_mr_unmap - undo rvt_mr_map()
 * @mr: as given to rvt_mr_map()
 * @addr: the address it returned
 */
void rvt_mr_unmap(struct rvt_mr *mr, void *addr)
{
	if (mr && mr->pages)
		kunmap_local(addr);
}

/**
 * rvt_get_dma_mr - an MR covering all kernel memory (ib_device_ops.get_dma_mr)
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * Return: the MR or an ERR_PTR().
 */
struct ib_mr *rvt_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibpd->device);
	struct rvt_mr *mr;

	if (ibpd->uobject)
		return ERR_PTR(-EPERM);
	mr = rvt_alloc_mr(rdi, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->ibmr.pd = ibpd;
	mr->length = U64_MAX;
	rvt_publish_mr(rdi, mr);
	return &mr->ibmr;
}

static int rvt_mr_collect_pages(struct rvt_mr *mr)
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
 * rvt_reg_user_mr - register user memory (ib_device_ops.reg_user_mr)
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
struct ib_mr *rvt_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibpd->device);
	struct ib_umem *umem;
	struct rvt_mr *mr;
	int ret;

	if (length == 0)
		return ERR_PTR(-EINVAL);
	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	mr = rvt_alloc_mr(rdi, access);
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
	ret = rvt_mr_collect_pages(mr);
	if (ret) {
		rvt_free_mr(rdi, mr);
		ib_umem_release(umem);
		return ERR_PTR(ret);
	}
	rvt_publish_mr(rdi, mr);
	return &mr->ibmr;
}

/**
 * rvt_dereg_mr - deregister an MR (ib_device_ops.dereg_mr)
 * @ibmr: the MR
 * @udata: unused
 *
 * Waits for transfers using the MR to finish before unpinning its pages.
 * Process context.
 *
 * Return: 0.
 */
int rvt_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rvt_mr *mr = ibmr_to_rvtmr(ibmr);
	struct ib_umem *umem = mr->umem;

	rvt_free_mr(ib_to_rvt(ibmr->device), mr);
	ib_umem_release(umem);
	return 0;
}
