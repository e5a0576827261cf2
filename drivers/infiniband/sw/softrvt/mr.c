// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions and their keys.
 *
 * A key is (index << 8) | variant: the index finds the MR in mr_xa, the low
 * byte belongs to the consumer as the IB spec allows.  Index 0 is never
 * allocated; lkey 0 is the device's local_dma_lkey.
 */

#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "softrvt.h"

#define RVT_MR_INDEX_MAX	((1U << (32 - RVT_KEY_INDEX_SHIFT)) - 1)

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
	ret = xa_alloc_cyclic(&rdi->mr_xa, &index, mr,
			      XA_LIMIT(1, RVT_MR_INDEX_MAX),
			      &rdi->next_mr_index, GFP_KERNEL);
	if (ret < 0)
		goto err_free;

	mr->access = access;
	mr->ibmr.lkey = index << RVT_KEY_INDEX_SHIFT;
	mr->ibmr.rkey = mr->ibmr.lkey;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&rdi->n_mrs);
	return ERR_PTR(ret);
}

static void rvt_free_mr(struct rvt_dev_info *rdi, struct rvt_mr *mr)
{
	xa_erase(&rdi->mr_xa, mr->ibmr.lkey >> RVT_KEY_INDEX_SHIFT);
	kfree(mr);
	atomic_dec(&rdi->n_mrs);
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
	struct rvt_mr *mr;

	if (ibpd->uobject)
		return ERR_PTR(-EPERM);
	mr = rvt_alloc_mr(ib_to_rvt(ibpd->device), access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->length = U64_MAX;
	return &mr->ibmr;
}

/**
 * rvt_reg_user_mr - register user memory (ib_device_ops.reg_user_mr)
 * @ibpd: the PD
 * @start: user virtual address of the region
 * @length: its length in bytes
 * @iova: the address the peer uses for the region's first byte
 * @access: IB_ACCESS_* flags, already checked by ib_core
 * @udata: unused
 *
 * The pages are pinned through ib_umem for the MR's lifetime.
 *
 * Return: the MR or an ERR_PTR().
 */
struct ib_mr *rvt_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibpd->device);
	struct ib_umem *umem;
	struct rvt_mr *mr;

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
	mr->umem = umem;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	return &mr->ibmr;
}

/**
 * rvt_dereg_mr - deregister an MR (ib_device_ops.dereg_mr)
 * @ibmr: the MR
 * @udata: unused
 *
 * Return: 0.
 */
int rvt_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rvt_mr *mr = ibmr_to_rvtmr(ibmr);

	ib_umem_release(mr->umem);
	rvt_free_mr(ib_to_rvt(ibmr->device), mr);
	return 0;
}
