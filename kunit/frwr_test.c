// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for fast-registration MRs: alloc_mr, map_mr_sg, IB_WR_REG_MR,
 * IB_WR_LOCAL_INV and SEND with Invalidate, as kernel ULPs use them; and
 * for memory windows bound to such MRs: IB_WR_BIND_MW of type 1 and type 2
 * windows, accesses through them, their invalidation.
 *
 * A device that is never registered holds two RC QPs of one PD whose
 * peers are each other, on the same-device path: WRs go through
 * softrvt_post_send() and the QPs' engines run on softrvt's workqueue (or,
 * for a user QP, in the poster's context).  The
 * MR's memory is kernel memory mapped through a scatter list whose DMA
 * addresses are kernel addresses, as ib_core's virtual DMA makes them.
 */

#include <kunit/test.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/workqueue.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

#define FR_CQE		64
#define FR_SEND_WR	16
#define FR_SQPN		0x31
#define FR_RQPN		0x32
/* Pages of the MR's memory: order 2, so 16 KiB aligned and contiguous. */
#define FR_ORDER	2
#define FR_BYTES	(PAGE_SIZE << FR_ORDER)

struct fr_fixture {
	struct softrvt_dev_info *rdi;
	struct ib_pd *pd;
	struct ib_pd *pd2;		/* another kernel PD */
	struct softrvt_cq *cq;		/* every completion of both QPs */
	struct softrvt_qp *sqp;		/* posts WRITEs and SENDs */
	struct softrvt_qp *rqp;		/* owns the MR, registers it */
	struct softrvt_mr *mr;
	u8 *mem;			/* FR_BYTES for the MR */
	u8 *src;			/* sqp's source buffer */
	u8 *dst;			/* rqp's receive buffer */
};

static void fr_timer(struct timer_list *t)
{
}

static void fr_release(void *ctx)
{
	struct fr_fixture *f = ctx;

	cancel_work_sync(&f->sqp->send_work);
	cancel_work_sync(&f->rqp->send_work);
	timer_delete_sync(&f->sqp->rnr_timer);
	timer_delete_sync(&f->rqp->rnr_timer);
	cancel_work_sync(&f->sqp->send_work);
	cancel_work_sync(&f->rqp->send_work);
	if (f->mr)
		softrvt_dereg_mr(&f->mr->ibmr, NULL);
	softrvt_rq_free(&f->sqp->r_rq);
	softrvt_rq_free(&f->rqp->r_rq);
	xa_destroy(&f->rdi->qp_xa);
	xa_destroy(&f->rdi->mr_xa);
	softrvt_cq_cleanup(f->cq);
	free_pages((unsigned long)f->mem, FR_ORDER);
}

static struct softrvt_qp *fr_qp(struct kunit *test, struct fr_fixture *f,
				u32 qpn, u32 dest)
{
	struct softrvt_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	qp->ibqp.device = &f->rdi->ibdev;
	qp->ibqp.pd = f->pd;
	qp->ibqp.qp_type = IB_QPT_RC;
	qp->ibqp.qp_num = qpn;
	qp->ibqp.send_cq = &f->cq->ibcq;
	qp->ibqp.recv_cq = &f->cq->ibcq;
	spin_lock_init(&qp->s_lock);
	INIT_WORK(&qp->send_work, softrvt_send_work);
	mutex_init(&qp->engine_lock);
	timer_setup(&qp->rnr_timer, fr_timer, 0);
	skb_queue_head_init(&qp->r_pkts);
	refcount_set(&qp->refcount, 1);
	init_completion(&qp->released);
	qp->state = IB_QPS_RTS;
	qp->s_local = true;
	qp->sq_sig_type = IB_SIGNAL_ALL_WR;
	qp->cap.max_send_sge = 1;
	qp->attr.dest_qp_num = dest;
	qp->attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ;
	qp->attr.max_rd_atomic = 1;
	qp->attr.max_dest_rd_atomic = 1;
	qp->r_wqe = kunit_kzalloc(test, struct_size(qp->r_wqe, sg_list,
						    SOFTRVT_MAX_SGE), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->r_wqe);
	qp->s_size = FR_SEND_WR + 1;
	qp->s_stride = ALIGN(sizeof(struct softrvt_swqe) +
			     sizeof(struct rvt_wqe_sge), 8);
	qp->s_wq = kunit_kzalloc(test, qp->s_size * qp->s_stride, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->s_wq);
	KUNIT_ASSERT_EQ(test, softrvt_rq_init(&qp->r_rq, 4, 1, false), 0);
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&f->rdi->qp_xa, qpn, qp,
					    GFP_KERNEL), 0);
	return qp;
}

static struct fr_fixture *fr_setup(struct kunit *test)
{
	struct fr_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kunit_kzalloc(test, sizeof(*f->rdi), GFP_KERNEL);
	f->pd = kunit_kzalloc(test, sizeof(*f->pd), GFP_KERNEL);
	f->pd2 = kunit_kzalloc(test, sizeof(*f->pd2), GFP_KERNEL);
	f->cq = kunit_kzalloc(test, sizeof(*f->cq), GFP_KERNEL);
	f->src = kunit_kzalloc(test, FR_BYTES, GFP_KERNEL);
	f->dst = kunit_kzalloc(test, FR_BYTES, GFP_KERNEL);
	f->mem = (u8 *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, FR_ORDER);
	KUNIT_ASSERT_NOT_NULL(test, f->rdi);
	KUNIT_ASSERT_NOT_NULL(test, f->pd);
	KUNIT_ASSERT_NOT_NULL(test, f->pd2);
	KUNIT_ASSERT_NOT_NULL(test, f->cq);
	KUNIT_ASSERT_NOT_NULL(test, f->src);
	KUNIT_ASSERT_NOT_NULL(test, f->dst);
	KUNIT_ASSERT_NOT_NULL(test, f->mem);

	xa_init_flags(&f->rdi->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&f->rdi->mr_xa, XA_FLAGS_ALLOC1);
	spin_lock_init(&f->rdi->atomic_lock);
	f->pd->device = &f->rdi->ibdev;
	f->pd2->device = &f->rdi->ibdev;
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->cq, FR_CQE, false), 0);
	f->sqp = fr_qp(test, f, FR_SQPN, FR_RQPN);
	f->rqp = fr_qp(test, f, FR_RQPN, FR_SQPN);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, fr_release, f),
			0);
	return f;
}

/* A fast-registration MR of @pd, as ib_alloc_mr() leaves it. */
static struct softrvt_mr *fr_alloc(struct kunit *test, struct fr_fixture *f,
				   struct ib_pd *pd, u32 max_num_sg)
{
	struct ib_mr *ibmr = softrvt_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_num_sg);

	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	ibmr->device = pd->device;
	ibmr->type = IB_MR_TYPE_MEM_REG;
	return ibmr_to_rvtmr(ibmr);
}

/*
 * Map @n pieces of f->mem, (offset, length) pairs in @piece, in blocks of
 * @bsize bytes, skipping @skip bytes of the first, as ib_map_mr_sg() does.
 */
static int fr_map(struct fr_fixture *f, struct softrvt_mr *mr, u32 bsize,
		  const u32 (*piece)[2], int n, unsigned int skip)
{
	struct scatterlist sg[4];
	int i;

	sg_init_table(sg, n);
	for (i = 0; i < n; i++) {
		sg_set_buf(&sg[i], f->mem + piece[i][0], piece[i][1]);
		sg_dma_address(&sg[i]) = (uintptr_t)sg_virt(&sg[i]);
		sg_dma_len(&sg[i]) = piece[i][1];
	}
	mr->ibmr.page_size = bsize;
	return softrvt_map_mr_sg(&mr->ibmr, sg, n, skip ? &skip : NULL);
}

static void fr_post(struct kunit *test, struct softrvt_qp *qp,
		    const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad = NULL;

	KUNIT_ASSERT_EQ(test, softrvt_post_send(&qp->ibqp, wr, &bad), 0);
	flush_work(&qp->send_work);
}

static void fr_reg(struct kunit *test, struct fr_fixture *f, struct softrvt_qp *qp,
		   struct softrvt_mr *mr, int access, u64 wr_id)
{
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = wr_id },
		.mr = &mr->ibmr,
		.key = mr->ibmr.rkey,
		.access = access,
	};

	fr_post(test, qp, &wr.wr);
}

static void fr_inv(struct kunit *test, struct softrvt_qp *qp, u32 key,
		   u64 wr_id)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_id = wr_id,
		.ex.invalidate_rkey = key,
	};

	fr_post(test, qp, &wr);
}

/* An RDMA WRITE of @len bytes of f->src from sqp, through the DMA lkey. */
static void fr_write(struct kunit *test, struct fr_fixture *f, u64 va,
		     u32 rkey, u32 len, u64 wr_id)
{
	struct ib_sge sge = { .addr = (uintptr_t)f->src, .length = len };
	struct ib_rdma_wr wr = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .wr_id = wr_id,
			.sg_list = &sge, .num_sge = 1 },
		.remote_addr = va,
		.rkey = rkey,
	};

	fr_post(test, f->sqp, &wr.wr);
}

/* The next completion, which must exist. */
static struct ib_wc fr_wc(struct kunit *test, struct fr_fixture *f)
{
	struct ib_wc wc = {};

	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 1, &wc), 1);
	return wc;
}

static void fr_expect_wc(struct kunit *test, struct fr_fixture *f, u64 wr_id,
			 enum ib_wc_opcode opcode, enum ib_wc_status status)
{
	struct ib_wc wc = fr_wc(test, f);

	KUNIT_EXPECT_EQ(test, wc.wr_id, wr_id);
	KUNIT_EXPECT_EQ(test, wc.status, status);
	if (status == IB_WC_SUCCESS)
		KUNIT_EXPECT_EQ(test, wc.opcode, opcode);
}

static bool fr_key_finds(struct fr_fixture *f, u32 key, u64 va, u64 len,
			 int access)
{
	struct softrvt_mr *mr;

	if (softrvt_mr_lookup(f->pd, key, va, len, access, &mr))
		return false;
	softrvt_put_mr(mr);
	return true;
}

static void fr_fill(u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7 + (i >> 8);
}

/* Only IB_MR_TYPE_MEM_REG, and no more blocks than advertised. */
static void alloc_mr_type_and_size(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct ib_mr *ibmr;

	KUNIT_EXPECT_EQ(test, PTR_ERR(softrvt_alloc_mr(f->pd, IB_MR_TYPE_SG_GAPS,
						       8)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(softrvt_alloc_mr(f->pd, IB_MR_TYPE_INTEGRITY,
						       8)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(softrvt_alloc_mr(f->pd, IB_MR_TYPE_DMA,
						       8)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(softrvt_alloc_mr(f->pd, IB_MR_TYPE_MEM_REG,
						       0)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(softrvt_alloc_mr(f->pd, IB_MR_TYPE_MEM_REG,
						       SOFTRVT_MAX_FAST_REG_PAGES + 1)),
			-EINVAL);
	KUNIT_EXPECT_GE(test, SOFTRVT_MAX_FAST_REG_PAGES, 512);

	ibmr = softrvt_alloc_mr(f->pd, IB_MR_TYPE_MEM_REG, SOFTRVT_MAX_FAST_REG_PAGES);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	ibmr->device = f->pd->device;
	f->mr = ibmr_to_rvtmr(ibmr);
	KUNIT_EXPECT_EQ(test, ibmr->lkey, ibmr->rkey);
	/* Born invalid: its key finds nothing. */
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, ibmr->rkey, 0, 0, 0));
	KUNIT_EXPECT_EQ(test, atomic_read(&f->rdi->n_mrs), 1);
}

/* Where softrvt_mr_map() puts @iova of a registered MR. */
static void fr_expect_map(struct kunit *test, struct softrvt_mr *mr, u64 iova,
			  const u8 *want, u32 want_avail)
{
	u32 avail;
	void *p = softrvt_mr_map(mr, iova, 1U << 20, &avail);

	KUNIT_EXPECT_PTR_EQ(test, p, (void *)want);
	KUNIT_EXPECT_EQ(test, avail, want_avail);
	softrvt_mr_unmap(mr, p);
}

/*
 * 4 KiB blocks over pieces of memory with gaps between them, an offset in
 * the first piece and more skipped by sg_offset: each iova lands where
 * its piece is, and a mapping never crosses a block.
 */
static void map_mr_sg_4k_blocks_with_offsets(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	/* 4 KiB pieces of the 16 KiB: the 2nd block is left out. */
	const u32 piece[3][2] = {
		{ 512, SZ_4K - 512 }, { 2 * SZ_4K, SZ_4K }, { 3 * SZ_4K, 1000 },
	};
	u64 iova;

	f->mr = fr_alloc(test, f, f->pd, 8);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, SZ_4K, piece, 3, 100), 3);
	iova = f->mr->ibmr.iova;
	KUNIT_EXPECT_EQ(test, iova, (u64)(uintptr_t)(f->mem + 612));
	KUNIT_EXPECT_EQ(test, f->mr->ibmr.length,
			(u64)(SZ_4K - 612 + SZ_4K + 1000));
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 3);

	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  IB_ACCESS_LOCAL_WRITE), IB_WC_SUCCESS);
	fr_expect_map(test, f->mr, iova, f->mem + 612, SZ_4K - 612);
	fr_expect_map(test, f->mr, iova + SZ_4K - 613, f->mem + SZ_4K - 1, 1);
	/* The next iova is in the third piece, past the gap. */
	fr_expect_map(test, f->mr, iova + SZ_4K - 612, f->mem + 2 * SZ_4K,
		      SZ_4K);
	fr_expect_map(test, f->mr, iova + 2 * SZ_4K - 612 + 10,
		      f->mem + 3 * SZ_4K + 10, SZ_4K - 10);
	/* The region's bounds. */
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, f->mr->ibmr.rkey, iova,
					     f->mr->ibmr.length, 0));
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, f->mr->ibmr.rkey, iova - 1,
					      1, 0));
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, f->mr->ibmr.rkey, iova,
					      f->mr->ibmr.length + 1, 0));
}

/*
 * Blocks larger than a page, then, registered again, the same memory in
 * blocks of a page (NFS's PAGE_SIZE): the MR follows its last mapping.
 */
static void map_mr_sg_blocks_larger_than_a_page(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	const u32 piece[1][2] = { { 300, FR_BYTES - 300 } };
	u64 iova;

	f->mr = fr_alloc(test, f, f->pd, 1 << FR_ORDER);
	/* One block of the whole allocation, which is aligned to it. */
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, FR_BYTES, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 1);
	iova = f->mr->ibmr.iova;
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	fr_expect_map(test, f->mr, iova, f->mem + 300, FR_BYTES - 300);
	fr_expect_map(test, f->mr, iova + FR_BYTES - 301, f->mem + FR_BYTES - 1,
		      1);

	KUNIT_EXPECT_EQ(test, softrvt_mr_invalidate(f->pd, f->mr->ibmr.rkey), 0);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, PAGE_SIZE, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 1 << FR_ORDER);
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(f->mr->ibmr.rkey));
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	fr_expect_map(test, f->mr, iova, f->mem + 300, PAGE_SIZE - 300);
	fr_expect_map(test, f->mr, iova + PAGE_SIZE - 300, f->mem + PAGE_SIZE,
		      PAGE_SIZE);
	fr_expect_map(test, f->mr, iova + FR_BYTES - 301, f->mem + FR_BYTES - 1,
		      1);
}

/* More blocks than max_num_sg: the list is cut, nothing is written past. */
static void map_mr_sg_stops_at_max_num_sg(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	const u32 piece[1][2] = { { 0, 3 * SZ_4K } };

	f->mr = fr_alloc(test, f, f->pd, 2);
	KUNIT_EXPECT_LT(test, fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 2);
}

/*
 * Through the engines: REG_MR, WRITEs through the rkey, LOCAL_INV, a
 * registration with the next key, SEND with Invalidate; each key works
 * exactly while its registration is valid.
 */
static void reg_inv_rotate_keys(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	const u32 piece[2][2] = { { 0, SZ_4K }, { 2 * SZ_4K, SZ_4K } };
	int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	struct ib_sge rsge = { .addr = (uintptr_t)f->dst, .length = 64 };
	struct ib_recv_wr rwr = { .wr_id = 0x900, .sg_list = &rsge,
				  .num_sge = 1 };
	const struct ib_recv_wr *rbad;
	struct ib_sge ssge = { .addr = (uintptr_t)f->src, .length = 64 };
	struct ib_send_wr swr = { .opcode = IB_WR_SEND_WITH_INV,
				  .wr_id = 0x901, .sg_list = &ssge,
				  .num_sge = 1 };
	u32 key0, key1;
	struct ib_wc wc;
	u64 iova;

	f->mr = fr_alloc(test, f, f->pd, 4);
	key0 = f->mr->ibmr.rkey;
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, SZ_4K, piece, 2, 0), 2);
	iova = f->mr->ibmr.iova;
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(key0));
	key1 = f->mr->ibmr.rkey;
	KUNIT_EXPECT_NE(test, key0, key1);
	KUNIT_EXPECT_EQ(test, key0 >> 8, key1 >> 8);

	fr_reg(test, f, f->rqp, f->mr, access, 0x100);
	fr_expect_wc(test, f, 0x100, IB_WC_REG_MR, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, key0, iova, 1, 0));
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, key1, iova, 2 * SZ_4K,
					     IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, key1, iova, 1,
					      IB_ACCESS_REMOTE_READ));

	/* 6000 bytes across the gap between the two pieces. */
	fr_fill(f->src, 6000, 1);
	fr_write(test, f, iova + 1000, key1, 6000, 0x101);
	fr_expect_wc(test, f, 0x101, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 1000, f->src, SZ_4K - 1000), 0);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 2 * SZ_4K,
				     f->src + SZ_4K - 1000, 6000 - SZ_4K + 1000),
			0);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + SZ_4K, 0, SZ_4K));

	fr_inv(test, f->rqp, key1, 0x102);
	fr_expect_wc(test, f, 0x102, IB_WC_LOCAL_INV, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, key1, iova, 1, 0));

	/* Registered again with the next key; the old one stays dead. */
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(key1));
	fr_reg(test, f, f->rqp, f->mr, access, 0x103);
	fr_expect_wc(test, f, 0x103, IB_WC_REG_MR, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, key1, iova, 1, 0));
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, f->mr->ibmr.rkey, iova, 1, 0));

	/* The peer invalidates it with its SEND. */
	fr_fill(f->src, 64, 9);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = f->mr->ibmr.rkey;
	fr_post(test, f->sqp, &swr);
	wc = fr_wc(test, f);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 0x900);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 64);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, f->mr->ibmr.rkey);
	KUNIT_EXPECT_EQ(test, memcmp(f->dst, f->src, 64), 0);
	fr_expect_wc(test, f, 0x901, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, f->mr->ibmr.rkey, iova, 1, 0));

	/* A WRITE through the invalidated rkey is refused, memory intact. */
	fr_fill(f->src, 64, 0x55);
	fr_write(test, f, iova, f->mr->ibmr.rkey, 64, 0x104);
	fr_expect_wc(test, f, 0x104, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 64));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->sqp->state), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/* Every way IB_WR_REG_MR fails, and its status. */
static void reg_mr_errors(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	const u32 piece[1][2] = { { 0, SZ_4K } };
	struct softrvt_mr *other = fr_alloc(test, f, f->pd2, 1);
	struct softrvt_mr plain = { .fr_pages = NULL };
	u32 key;

	f->mr = fr_alloc(test, f, f->pd, 1);
	key = f->mr->ibmr.rkey;
	/* Not mapped yet. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key, 0),
			IB_WC_MW_BIND_ERR);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	/* Another MR index in the key. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key + BIT(8), 0),
			IB_WC_MW_BIND_ERR);
	/* Rights it may not have: remote write needs local write. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key,
						  IB_ACCESS_REMOTE_WRITE),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key,
						  IB_ZERO_BASED),
			IB_WC_MW_BIND_ERR);
	/* Not a fast-registration MR. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, &plain, key, 0),
			IB_WC_MW_BIND_ERR);
	/* Of another PD. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, other, other->ibmr.rkey,
						  0), IB_WC_LOC_PROT_ERR);
	/* None of that made it valid; an optional right is ignored. */
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, key, f->mr->ibmr.iova, 1, 0));
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key ^ 0x5a,
						  IB_ACCESS_RELAXED_ORDERING),
			IB_WC_SUCCESS);
	/* Valid already, even with its own key. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key ^ 0x5a, 0),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, key ^ 0x5a, f->mr->ibmr.iova,
					     1, 0));
	softrvt_dereg_mr(&other->ibmr, NULL);
}

/* Every way IB_WR_LOCAL_INV fails, and its status. */
static void local_inv_errors(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct softrvt_mr *other = fr_alloc(test, f, f->pd2, 1);
	struct ib_mr *dma = softrvt_get_dma_mr(f->pd, IB_ACCESS_LOCAL_WRITE);
	struct softrvt_swqe wqe = { .opcode = IB_WR_LOCAL_INV };
	const u32 piece[1][2] = { { 0, SZ_4K } };

	KUNIT_ASSERT_FALSE(test, IS_ERR(dma));
	dma->device = f->pd->device;
	f->mr = fr_alloc(test, f, f->pd, 1);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);

	/* The key's consumer byte, another index, another PD. */
	wqe.rkey = f->mr->ibmr.rkey ^ 1;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_LOC_PROT_ERR);
	wqe.rkey = f->mr->ibmr.rkey + BIT(12);
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_LOC_PROT_ERR);
	wqe.rkey = other->ibmr.rkey;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_LOC_PROT_ERR);
	/* An MR that is not for fast registration. */
	wqe.rkey = dma->rkey;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, dma->rkey, 0, 1, 0));
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, f->mr->ibmr.rkey,
					     f->mr->ibmr.iova, 1, 0));
	/* Twice: the second finds it invalid, which is fine. */
	wqe.rkey = f->mr->ibmr.rkey;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, fr_key_finds(f, f->mr->ibmr.rkey,
					      f->mr->ibmr.iova, 1, 0));
	softrvt_dereg_mr(&other->ibmr, NULL);
	softrvt_dereg_mr(dma, NULL);
}

/*
 * A failed REG_MR on the send queue completes with its error and moves
 * the QP to ERR; the WQE after it is flushed, not executed.
 */
static void reg_mr_error_fails_the_qp(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	const u32 piece[1][2] = { { 0, SZ_4K } };
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 0x200 },
		.access = IB_ACCESS_LOCAL_WRITE,
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV, .wr_id = 0x201 };

	f->mr = fr_alloc(test, f, f->pd, 1);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	wr.mr = &f->mr->ibmr;
	wr.key = f->mr->ibmr.rkey;
	wr.wr.next = &inv;
	inv.ex.invalidate_rkey = f->mr->ibmr.rkey;
	fr_post(test, f->rqp, &wr.wr);
	flush_work(&f->rqp->send_work);

	fr_expect_wc(test, f, 0x200, IB_WC_REG_MR, IB_WC_MW_BIND_ERR);
	fr_expect_wc(test, f, 0x201, IB_WC_LOCAL_INV, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
	/* The flushed LOCAL_INV did not run. */
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, f->mr->ibmr.rkey,
					     f->mr->ibmr.iova, 1, 0));
}

/* A failed LOCAL_INV likewise. */
static void local_inv_error_fails_the_qp(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);

	fr_inv(test, f->rqp, 0x12345678, 0x300);
	fr_expect_wc(test, f, 0x300, IB_WC_LOCAL_INV, IB_WC_LOC_PROT_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/*
 * SEND with Invalidate naming an rkey the responder cannot invalidate:
 * the data is in, the receive fails with IB_WC_REM_INV_REQ_ERR as in rxe,
 * the sender's too, and both QPs are in ERR.
 */
static void send_with_inv_bad_rkey(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct softrvt_mr *other = fr_alloc(test, f, f->pd2, 1);
	struct ib_sge rsge = { .addr = (uintptr_t)f->dst, .length = 64 };
	struct ib_recv_wr rwr = { .wr_id = 0x400, .sg_list = &rsge,
				  .num_sge = 1 };
	const struct ib_recv_wr *rbad;
	struct ib_sge ssge = { .addr = (uintptr_t)f->src, .length = 32 };
	struct ib_send_wr swr = { .opcode = IB_WR_SEND_WITH_INV,
				  .wr_id = 0x401, .sg_list = &ssge,
				  .num_sge = 1 };
	const u32 piece[1][2] = { { 0, SZ_4K } };
	struct softrvt_mr *found = NULL;

	/* Valid, but of another PD than the responder's. */
	KUNIT_ASSERT_EQ(test, fr_map(f, other, SZ_4K, piece, 1, 0), 1);
	f->rqp->ibqp.pd = f->pd2;
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, other, other->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	f->rqp->ibqp.pd = f->pd;

	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = other->ibmr.rkey;
	fr_post(test, f->sqp, &swr);
	flush_work(&f->rqp->send_work);

	fr_expect_wc(test, f, 0x400, IB_WC_RECV, IB_WC_REM_INV_REQ_ERR);
	fr_expect_wc(test, f, 0x401, IB_WC_SEND, IB_WC_REM_INV_REQ_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->sqp->state), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
	/* Still valid. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(f->pd2, other->ibmr.rkey,
						other->ibmr.iova, 1, 0, &found), 0);
	if (found)
		softrvt_put_mr(found);
	softrvt_dereg_mr(&other->ibmr, NULL);
}

/*
 * A user QP's post_send runs the engine in the poster's context, unless
 * the engine is running elsewhere: then that run may have looked at the
 * send queue before the new WR was there, and the workqueue must run it
 * again.  Only ibqp.uobject tells a user QP; the fixture's QPs are peers
 * on one device, the case where it runs the engine itself.
 */
static void user_post_send_runs_the_engine(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct ib_sge rsge = { .addr = (uintptr_t)f->dst, .length = 64 };
	struct ib_recv_wr rwr = { .wr_id = 0x500, .sg_list = &rsge,
				  .num_sge = 1 };
	const struct ib_recv_wr *rbad;
	struct ib_sge ssge = { .addr = (uintptr_t)f->src, .length = 64 };
	struct ib_send_wr swr = { .opcode = IB_WR_SEND, .wr_id = 0x501,
				  .sg_list = &ssge, .num_sge = 1 };
	const struct ib_send_wr *bad;
	struct ib_wc wc;

	/* ib_core's type is private to it; softrvt never looks inside. */
	f->sqp->ibqp.uobject = (void *)&user_post_send_runs_the_engine;
	fr_fill(f->src, 64, 5);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);

	/* Idle: done when post_send returns, nothing waited for. */
	KUNIT_ASSERT_EQ(test, softrvt_post_send(&f->sqp->ibqp, &swr, &bad), 0);
	fr_expect_wc(test, f, 0x500, IB_WC_RECV, IB_WC_SUCCESS);
	fr_expect_wc(test, f, 0x501, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->dst, f->src, 64);

	/* Running elsewhere: not run here, but run once that run ends. */
	fr_fill(f->src, 64, 9);
	mutex_lock(&f->sqp->engine_lock);
	KUNIT_EXPECT_EQ(test, softrvt_post_send(&f->sqp->ibqp, &swr, &bad), 0);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 1, &wc), 0);
	mutex_unlock(&f->sqp->engine_lock);
	softrvt_sync_send(f->sqp);
	fr_expect_wc(test, f, 0x500, IB_WC_RECV, IB_WC_SUCCESS);
	fr_expect_wc(test, f, 0x501, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->dst, f->src, 64);
	f->sqp->ibqp.uobject = NULL;
}

/* A FLUSH or ATOMIC_WRITE from sqp, in the layout the uverbs method fills. */
static int fr_placement(struct fr_fixture *f, enum ib_wr_opcode opcode,
			u64 va, u32 rkey, u32 len, u8 type, u8 level, u64 value,
			u64 wr_id)
{
	struct softrvt_placement_send_wr pwr = {
		.wr = { .opcode = opcode, .wr_id = wr_id },
		.remote_addr = va,
		.rkey = rkey,
		.length = len,
		.value = value,
		.flush_type = type,
		.flush_level = level,
	};
	int ret = softrvt_post_placement_wr(&f->sqp->ibqp, &pwr.wr);

	flush_work(&f->sqp->send_work);
	return ret;
}

/* An MR registered as a user's with IB_ACCESS_FLUSH_GLOBAL would be. */
static u64 fr_flushable(struct kunit *test, struct fr_fixture *f)
{
	const u32 piece[1][2] = { { 0, FR_BYTES } };

	f->mr = fr_alloc(test, f, f->pd, 1 << FR_ORDER);
	KUNIT_ASSERT_EQ(test, fr_map(f, f->mr, PAGE_SIZE, piece, 1, 0), 1);
	fr_reg(test, f, f->rqp, f->mr,
	       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, 0x700);
	fr_expect_wc(test, f, 0x700, IB_WC_REG_MR, IB_WC_SUCCESS);
	f->mr->access |= IB_ACCESS_FLUSH_GLOBAL;
	f->rqp->attr.qp_access_flags |= IB_ACCESS_FLUSH_GLOBAL |
					IB_ACCESS_FLUSH_PERSISTENT;
	return f->mr->ibmr.iova;
}

/* FLUSH and ATOMIC_WRITE on the same-device path, and their errors. */
static void placement_wrs(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct ib_send_wr plain = { .opcode = IB_WR_FLUSH };
	const struct ib_send_wr *bad = NULL;
	u64 value = 0x1122334455667788ULL;
	u32 key;
	u64 iova;

	/* A kernel WR has no layout for them. */
	KUNIT_EXPECT_EQ(test, softrvt_post_send(&f->sqp->ibqp, &plain, &bad),
			-EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, (const struct ib_send_wr *)&plain);
	iova = fr_flushable(test, f);
	key = f->mr->ibmr.rkey;
	/* A type or level that does not exist is refused when posted. */
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova, key, 8, 0,
					   IB_FLUSH_RANGE, 0, 0x701), -EINVAL);
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova, key, 8, 4,
					   IB_FLUSH_RANGE, 0, 0x701), -EINVAL);
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova, key, 8,
					   IB_FLUSH_GLOBAL, 2, 0, 0x701),
			-EINVAL);

	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_ATOMIC_WRITE, iova + 1024,
					   key, 0, 0, 0, value, 0x702), 0);
	fr_expect_wc(test, f, 0x702, IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->mem + 1024, &value, sizeof(value));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1016, 0, 8));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1032, 0, 8));

	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova + 8, key, 64,
					   IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, 0,
					   0x703), 0);
	fr_expect_wc(test, f, 0x703, IB_WC_FLUSH, IB_WC_SUCCESS);
	/* The whole region: the range the WR names does not matter. */
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, 0, key, 0,
					   IB_FLUSH_GLOBAL, IB_FLUSH_MR, 0,
					   0x704), 0);
	fr_expect_wc(test, f, 0x704, IB_WC_FLUSH, IB_WC_SUCCESS);

	/* Past the region, persistent, unaligned: each fails the pair. */
	KUNIT_EXPECT_EQ(test, softrvt_placement_flush(f->rqp, key, iova + 8,
						      FR_BYTES, IB_FLUSH_GLOBAL,
						      IB_FLUSH_RANGE), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_placement_flush(f->rqp, key, iova, 8,
						      IB_FLUSH_PERSISTENT,
						      IB_FLUSH_RANGE), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_placement_atomic_write(f->rqp, key,
							     iova + 4, value),
			-EINVAL);
	f->mr->access &= ~IB_ACCESS_FLUSH_GLOBAL;
	KUNIT_EXPECT_EQ(test, softrvt_placement_flush(f->rqp, key, iova, 8,
						      IB_FLUSH_GLOBAL,
						      IB_FLUSH_MR), -EACCES);
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_ATOMIC_WRITE, iova + 1028,
					   key, 0, 0, 0, value, 0x705), 0);
	fr_expect_wc(test, f, 0x705, 0, IB_WC_REM_INV_REQ_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1032, 0, 8));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->sqp->state), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/* Only RC QPs take them; the QP's rights are checked as the region's. */
static void placement_wrs_refused(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	u64 iova = fr_flushable(test, f);
	u32 key = f->mr->ibmr.rkey;

	f->sqp->ibqp.qp_type = IB_QPT_UC;
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_ATOMIC_WRITE, iova, key,
					   0, 0, 0, 1, 0x711), -EINVAL);
	f->sqp->ibqp.qp_type = IB_QPT_RC;
	f->rqp->attr.qp_access_flags &= ~IB_ACCESS_REMOTE_WRITE;
	KUNIT_EXPECT_EQ(test, softrvt_placement_atomic_write(f->rqp, key, iova,
							     1), -EACCES);
	f->rqp->attr.qp_access_flags &= ~IB_ACCESS_FLUSH_GLOBAL;
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova, key, 8,
					   IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, 0,
					   0x712), 0);
	fr_expect_wc(test, f, 0x712, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

static struct kunit_case softrvt_frwr_cases[] = {
	KUNIT_CASE(alloc_mr_type_and_size),
	KUNIT_CASE(map_mr_sg_4k_blocks_with_offsets),
	KUNIT_CASE(map_mr_sg_blocks_larger_than_a_page),
	KUNIT_CASE(map_mr_sg_stops_at_max_num_sg),
	KUNIT_CASE(reg_inv_rotate_keys),
	KUNIT_CASE(reg_mr_errors),
	KUNIT_CASE(local_inv_errors),
	KUNIT_CASE(reg_mr_error_fails_the_qp),
	KUNIT_CASE(local_inv_error_fails_the_qp),
	KUNIT_CASE(send_with_inv_bad_rkey),
	KUNIT_CASE(user_post_send_runs_the_engine),
	KUNIT_CASE(placement_wrs),
	KUNIT_CASE(placement_wrs_refused),
	{}
};

static struct kunit_suite softrvt_frwr_suite = {
	.name = "softrvt_frwr",
	.test_cases = softrvt_frwr_cases,
};

/* Memory windows */

static void mw_dealloc_action(void *ctx)
{
	struct softrvt_mw *mw = ctx;

	softrvt_dealloc_mw(&mw->ibmw);
}

/*
 * A window of @pd, as ib_core's alloc_mw makes it; deallocated when the
 * test ends, before the fixture's MR is deregistered.
 */
static struct softrvt_mw *mw_alloc(struct kunit *test, struct fr_fixture *f,
				   struct ib_pd *pd, enum ib_mw_type type)
{
	struct softrvt_mw *mw = kunit_kzalloc(test, sizeof(*mw), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mw);
	mw->ibmw.device = &f->rdi->ibdev;
	mw->ibmw.pd = pd;
	mw->ibmw.type = type;
	KUNIT_ASSERT_EQ(test, softrvt_alloc_mw(&mw->ibmw, NULL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, mw_dealloc_action,
							mw), 0);
	return mw;
}

/* An MR of @pd over all of f->mem, registered with @access. */
static struct softrvt_mr *mw_mr(struct kunit *test, struct fr_fixture *f,
				struct ib_pd *pd, int access)
{
	const u32 piece[1][2] = { { 0, FR_BYTES } };
	struct softrvt_mr *mr = fr_alloc(test, f, pd, FR_BYTES / SZ_4K);
	struct ib_pd *qp_pd = f->rqp->ibqp.pd;

	KUNIT_ASSERT_EQ(test, fr_map(f, mr, SZ_4K, piece, 1, 0), 1);
	f->rqp->ibqp.pd = pd;
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, mr, mr->ibmr.rkey, access),
			IB_WC_SUCCESS);
	f->rqp->ibqp.pd = qp_pd;
	return mr;
}

/* IB_WR_BIND_MW through @qp's send queue and engine. */
static void mw_post_bind(struct kunit *test, struct softrvt_qp *qp, u32 key,
			 struct softrvt_mr *mr, u64 va, u64 len, int access,
			 u64 wr_id)
{
	struct softrvt_bind_wr wr = {
		.wr = { .opcode = IB_WR_BIND_MW, .wr_id = wr_id },
		.rkey = key,
		.mr_lkey = mr ? mr->ibmr.lkey : 0,
		.addr = va,
		.length = len,
		.access = access,
	};

	KUNIT_ASSERT_EQ(test, softrvt_post_local_wr(&qp->ibqp, &wr.wr), 0);
	flush_work(&qp->send_work);
}

/* The same bind, executed at once, the QP untouched. */
static enum ib_wc_status mw_bind(struct softrvt_qp *qp, u32 key,
				 struct softrvt_mr *mr, u64 va, u64 len,
				 int access)
{
	struct softrvt_swqe wqe = {
		.opcode = IB_WR_BIND_MW,
		.rkey = key,
		.bind_lkey = mr ? mr->ibmr.lkey : 0,
		.remote_addr = va,
		.bind_len = len,
		.reg_access = access,
	};

	return softrvt_mw_bind(qp, &wqe);
}

/* Whether @qp's peer may access [@va, @va + @len) with @rkey. */
static bool mw_key_finds(struct softrvt_qp *qp, u32 rkey, u64 va, u64 len,
			 int access)
{
	struct softrvt_mr *mr;

	if (softrvt_rkey_lookup(qp, rkey, va, len, access, &mr))
		return false;
	softrvt_put_mr(mr);
	return true;
}

/*
 * A type 1 window: bound with the next key, written through, bound again
 * elsewhere with the next, then unbound with a length of 0; each key and
 * range works exactly while it is the window's.
 */
static void mw_type1_bind_rebind_unbind(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	int racc = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	struct softrvt_mw *mw;
	struct softrvt_mr *found;
	u32 k0, k1, k2, k3;
	u64 base;

	f->mr = mw_mr(test, f, f->pd,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	base = f->mr->ibmr.iova;
	mw = mw_alloc(test, f, f->pd, IB_MW_TYPE_1);
	k0 = mw->ibmw.rkey;
	KUNIT_EXPECT_EQ(test, atomic_read(&f->rdi->n_mws), 1);
	/* Not bound yet; the MR itself grants no remote right. */
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k0, base, 1,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, f->mr->ibmr.rkey, base,
					      1, IB_ACCESS_REMOTE_WRITE));

	k1 = ib_inc_rkey(k0);
	mw_post_bind(test, f->rqp, k1, f->mr, base + 1000, 3000, racc, 0x500);
	fr_expect_wc(test, f, 0x500, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 1);
	KUNIT_EXPECT_EQ(test, mw->key, k1);
	/* Its range and rights, for any QP of its PD: it is type 1. */
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base + 1000, 3000,
					     IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->sqp, k1, base + 1000, 3000,
					     IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k0, base + 1000, 1,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + 999, 2,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + 3999, 2,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + 1000, 8,
					      IB_ACCESS_REMOTE_ATOMIC));
	f->rqp->ibqp.pd = f->pd2;
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + 1000, 1,
					      IB_ACCESS_REMOTE_WRITE));
	f->rqp->ibqp.pd = f->pd;
	/* A window's key is no lkey. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(f->pd, k1, base + 1000, 1, 0,
						&found), -EACCES);

	/* A WRITE through it lands in the window, and nowhere else. */
	fr_fill(f->src, 3000, 3);
	fr_write(test, f, base + 1000, k1, 3000, 0x501);
	fr_expect_wc(test, f, 0x501, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 1000, f->src, 3000), 0);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 1000));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 4000, 0, FR_BYTES - 4000));

	/* Bound again elsewhere, read-only, with the next key. */
	k2 = ib_inc_rkey(k1);
	mw_post_bind(test, f->rqp, k2, f->mr, base + 8192, 100,
		     IB_ACCESS_REMOTE_READ, 0x502);
	fr_expect_wc(test, f, 0x502, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 1);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + 1000, 1,
					      IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k2, base + 8192, 100,
					     IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k2, base + 8192, 1,
					      IB_ACCESS_REMOTE_WRITE));

	/* A length of 0 unbinds it. */
	k3 = ib_inc_rkey(k2);
	mw_post_bind(test, f->rqp, k3, NULL, 0, 0, 0, 0x503);
	fr_expect_wc(test, f, 0x503, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k2, base + 8192, 1,
					      IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k3, base + 8192, 1,
					      IB_ACCESS_REMOTE_READ));

	/* The peer's WRITE through it fails, the memory intact. */
	fr_fill(f->dst, 64, 3);
	fr_fill(f->src, 64, 0x77);
	fr_write(test, f, base + 1000, k1, 64, 0x504);
	fr_expect_wc(test, f, 0x504, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 1000, f->dst, 64), 0);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/*
 * A type 2 window: bound once, to its MR and its QP, which alone may use
 * and invalidate it; its MR can be neither invalidated nor deregistered
 * meanwhile.  IB_WR_LOCAL_INV frees both.
 */
static void mw_type2_bind_local_inv(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct softrvt_swqe inv = { .opcode = IB_WR_LOCAL_INV };
	struct softrvt_mw *mw;
	u32 k1;
	u64 base;

	f->mr = mw_mr(test, f, f->pd,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	base = f->mr->ibmr.iova;
	mw = mw_alloc(test, f, f->pd, IB_MW_TYPE_2);
	k1 = ib_inc_rkey(mw->ibmw.rkey);
	mw_post_bind(test, f->rqp, k1, f->mr, base, SZ_4K,
		     IB_ACCESS_REMOTE_WRITE, 0x600);
	fr_expect_wc(test, f, 0x600, IB_WC_BIND_MW, IB_WC_SUCCESS);

	/* Bound to rqp: a peer of another QP may not use it. */
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base, SZ_4K,
					     IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->sqp, k1, base, 1,
					      IB_ACCESS_REMOTE_WRITE));
	fr_fill(f->src, 500, 5);
	fr_write(test, f, base + 100, k1, 500, 0x601);
	fr_expect_wc(test, f, 0x601, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 100, f->src, 500), 0);

	/* Bound once: binding it again fails and changes nothing. */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, ib_inc_rkey(k1), f->mr, base, 16,
				      IB_ACCESS_REMOTE_WRITE),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw->key, k1);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 1);

	/* Its MR can be neither invalidated nor deregistered. */
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, f->mr->ibmr.rkey),
			-EBUSY);
	inv.rkey = f->mr->ibmr.rkey;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &inv), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, softrvt_dereg_mr(&f->mr->ibmr, NULL), -EBUSY);
	KUNIT_EXPECT_TRUE(test, fr_key_finds(f, f->mr->ibmr.rkey, base, 1, 0));

	/* Only its QP invalidates it, and only by its whole key. */
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->sqp, k1), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, k1 ^ 1), -EACCES);
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base, 1,
					     IB_ACCESS_REMOTE_WRITE));
	fr_inv(test, f->rqp, k1, 0x602);
	fr_expect_wc(test, f, 0x602, IB_WC_LOCAL_INV, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base, 1,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);

	/* The MR is free to invalidate now; the window's key is dead. */
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, f->mr->ibmr.rkey), 0);
	fr_fill(f->src, 64, 7);
	fr_write(test, f, base, k1, 64, 0x603);
	fr_expect_wc(test, f, 0x603, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 100));
}

/*
 * A type 2 window invalidated by the peer's SEND with Invalidate on its
 * QP, then bound again: a type 2 window is free once invalidated.
 */
static void mw_type2_send_with_inv(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	struct ib_sge rsge = { .addr = (uintptr_t)f->dst, .length = 64 };
	struct ib_recv_wr rwr = { .wr_id = 0x690, .sg_list = &rsge,
				  .num_sge = 1 };
	const struct ib_recv_wr *rbad;
	struct ib_sge ssge = { .addr = (uintptr_t)f->src, .length = 64 };
	struct ib_send_wr swr = { .opcode = IB_WR_SEND_WITH_INV,
				  .wr_id = 0x691, .sg_list = &ssge,
				  .num_sge = 1 };
	struct softrvt_mw *mw;
	struct ib_wc wc;
	u32 k1, k2;
	u64 base;

	f->mr = mw_mr(test, f, f->pd,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	base = f->mr->ibmr.iova;
	mw = mw_alloc(test, f, f->pd, IB_MW_TYPE_2);
	k1 = ib_inc_rkey(mw->ibmw.rkey);
	mw_post_bind(test, f->rqp, k1, f->mr, base + SZ_4K, SZ_4K,
		     IB_ACCESS_REMOTE_WRITE, 0x680);
	fr_expect_wc(test, f, 0x680, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base + SZ_4K, 1,
					     IB_ACCESS_REMOTE_WRITE));

	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = k1;
	fr_fill(f->src, 64, 6);
	fr_post(test, f->sqp, &swr);
	wc = fr_wc(test, f);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 0x690);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, k1);
	KUNIT_EXPECT_EQ(test, memcmp(f->dst, f->src, 64), 0);
	fr_expect_wc(test, f, 0x691, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base + SZ_4K, 1,
					      IB_ACCESS_REMOTE_WRITE));

	/* Free again: it binds anew, with the next key. */
	k2 = ib_inc_rkey(k1);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k2, f->mr, base, 64,
				      IB_ACCESS_REMOTE_READ), IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k2, base, 64,
					     IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base, 1,
					      IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, k2), 0);
}

/* Every way IB_WR_BIND_MW fails: IB_WC_MW_BIND_ERR, nothing bound. */
static void mw_bind_errors(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	int wr = IB_ACCESS_REMOTE_WRITE, rd = IB_ACCESS_REMOTE_READ;
	struct softrvt_mr *nobind, *ro, *other;
	struct softrvt_mw *mw1, *mw2, *mwo;
	struct softrvt_bind_wr kwr = { .wr = { .opcode = IB_WR_BIND_MW } };
	const struct ib_send_wr *bad;
	u32 k1, k2, ko;
	u64 base;

	f->mr = mw_mr(test, f, f->pd,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	nobind = mw_mr(test, f, f->pd, IB_ACCESS_LOCAL_WRITE);
	ro = mw_mr(test, f, f->pd, IB_ACCESS_MW_BIND);
	other = mw_mr(test, f, f->pd2,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	base = f->mr->ibmr.iova;
	mw1 = mw_alloc(test, f, f->pd, IB_MW_TYPE_1);
	mw2 = mw_alloc(test, f, f->pd, IB_MW_TYPE_2);
	mwo = mw_alloc(test, f, f->pd2, IB_MW_TYPE_2);
	k1 = ib_inc_rkey(mw1->ibmw.rkey);
	k2 = ib_inc_rkey(mw2->ibmw.rkey);
	ko = ib_inc_rkey(mwo->ibmw.rkey);

	/* An MR without IB_ACCESS_MW_BIND (C10-73). */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, nobind, base, 64, rd),
			IB_WC_MW_BIND_ERR);
	/* Remote write over an MR without local write (C10-74). */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, ro, base, 64, wr),
			IB_WC_MW_BIND_ERR);
	/* An MR, or a window, of another PD than the QP's (C10-72). */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, other, base, 64, rd),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, ko, f->mr, base, 64, rd),
			IB_WC_MW_BIND_ERR);
	/* A range outside the MR (C10-75). */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base - 1, 64, rd),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base + FR_BYTES - 63,
				      64, rd), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base,
				      FR_BYTES + 1, rd), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base + 64, U64_MAX,
				      rd), IB_WC_MW_BIND_ERR);
	/* Zero-based, or a right no window grants. */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base, 64,
				      rd | IB_ZERO_BASED), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base, 64,
				      rd | IB_ACCESS_MW_BIND),
			IB_WC_MW_BIND_ERR);
	/* A key with another index or tag than the window's. */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1 + BIT(8), f->mr, base, 64, rd),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1 ^ BIT(31), f->mr, base, 64,
				      rd), IB_WC_MW_BIND_ERR);
	/* An lkey that is not the MR's whole key. */
	f->mr->ibmr.lkey ^= 1;
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base, 64, rd),
			IB_WC_MW_BIND_ERR);
	f->mr->ibmr.lkey ^= 1;
	/* Type 2: never with a length of 0, never while bound (o10-37.2.30). */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k2, NULL, 0, 0, 0),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k2, f->mr, base, 64, rd),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, ib_inc_rkey(k2), f->mr, base, 64,
				      rd), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 1);
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, k2), 0);

	/* None of the failures bound anything. */
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);
	KUNIT_EXPECT_EQ(test, nobind->n_mws, 0);
	KUNIT_EXPECT_EQ(test, ro->n_mws, 0);
	KUNIT_EXPECT_EQ(test, other->n_mws, 0);
	KUNIT_EXPECT_PTR_EQ(test, mw1->mr, NULL);
	KUNIT_EXPECT_EQ(test, mw1->key, mw1->ibmw.rkey);
	/* What the checks refused is allowed otherwise. */
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, ro, base, 64, rd),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, ib_inc_rkey(k1), NULL, 0, 0, 0),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, ro->n_mws, 0);

	/* Kernel consumers cannot post it: ib_verbs has no layout for it. */
	kwr.rkey = k1;
	KUNIT_EXPECT_EQ(test, softrvt_post_send(&f->rqp->ibqp, &kwr.wr, &bad),
			-EINVAL);
	/* Through the send queue, a failure fails the QP. */
	mw_post_bind(test, f->rqp, k1, nobind, base, 64, rd, 0x700);
	fr_expect_wc(test, f, 0x700, IB_WC_BIND_MW, IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);

	/* Nothing stayed bound to them. */
	KUNIT_EXPECT_EQ(test, softrvt_dereg_mr(&nobind->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softrvt_dereg_mr(&ro->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softrvt_dereg_mr(&other->ibmr, NULL), 0);
}

/*
 * A QP going away invalidates the type 2 windows bound to it, not the
 * type 1; a window deallocated while bound frees its MR.
 */
static void mw_qp_destroy_and_dealloc(struct kunit *test)
{
	struct fr_fixture *f = fr_setup(test);
	int rd = IB_ACCESS_REMOTE_READ;
	struct softrvt_mw *mw1, *mw2;
	u32 k1, k2;
	u64 base;

	f->mr = mw_mr(test, f, f->pd,
		      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	base = f->mr->ibmr.iova;
	mw1 = mw_alloc(test, f, f->pd, IB_MW_TYPE_1);
	mw2 = mw_alloc(test, f, f->pd, IB_MW_TYPE_2);
	k1 = ib_inc_rkey(mw1->ibmw.rkey);
	k2 = ib_inc_rkey(mw2->ibmw.rkey);
	KUNIT_ASSERT_EQ(test, mw_bind(f->rqp, k1, f->mr, base, 64, rd),
			IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, mw_bind(f->rqp, k2, f->mr, base, 64, rd),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 2);

	/* Another QP going away leaves them. */
	softrvt_mw_unbind_qp(f->sqp);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 2);
	softrvt_mw_unbind_qp(f->rqp);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 1);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k2, base, 1, rd));
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base, 1, rd));

	/* Deallocated while bound: the MR may go, the key finds nothing. */
	kunit_release_action(test, mw_dealloc_action, mw1);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->rdi->n_mws), 1);
	KUNIT_EXPECT_PTR_EQ(test, softrvt_key_find(f->rdi, k1), NULL);
	KUNIT_EXPECT_EQ(test, softrvt_dereg_mr(&f->mr->ibmr, NULL), 0);
	f->mr = NULL;
}

static struct kunit_case softrvt_mw_cases[] = {
	KUNIT_CASE(mw_type1_bind_rebind_unbind),
	KUNIT_CASE(mw_type2_bind_local_inv),
	KUNIT_CASE(mw_type2_send_with_inv),
	KUNIT_CASE(mw_bind_errors),
	KUNIT_CASE(mw_qp_destroy_and_dealloc),
	{}
};

static struct kunit_suite softrvt_mw_suite = {
	.name = "softrvt_mw",
	.test_cases = softrvt_mw_cases,
};

kunit_test_suites(&softrvt_frwr_suite, &softrvt_mw_suite);
