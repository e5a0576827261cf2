// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for fast-registration MRs: alloc_mr, map_mr_sg, IB_WR_REG_MR,
 * IB_WR_LOCAL_INV and SEND with Invalidate, as kernel ULPs use them, on
 * the fixture of fr_fixture.h.
 */

#include <kunit/test.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>

#include "fr_fixture.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

static void fr_reg(struct kunit *test, struct softrvt_fr *f, struct softrvt_qp *qp,
		   struct softrvt_mr *mr, int access, u64 wr_id)
{
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = wr_id },
		.mr = &mr->ibmr,
		.key = mr->ibmr.rkey,
		.access = access,
	};

	softrvt_fr_post(test, qp, &wr.wr);
}

/* Only IB_MR_TYPE_MEM_REG, and no more blocks than advertised. */
static void alloc_mr_type_and_size(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	f->mr = softrvt_to_mr(ibmr);
	KUNIT_EXPECT_EQ(test, ibmr->lkey, ibmr->rkey);
	/* Born invalid: its key finds nothing. */
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, ibmr->rkey, 0, 0, 0));
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
	/* 4 KiB pieces of the 16 KiB: the 2nd block is left out. */
	const u32 piece[3][2] = {
		{ 512, SZ_4K - 512 }, { 2 * SZ_4K, SZ_4K }, { 3 * SZ_4K, 1000 },
	};
	u64 iova;

	f->mr = softrvt_fr_alloc(test, f, f->pd, 8);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 3, 100), 3);
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
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, iova,
						     f->mr->ibmr.length, 0));
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, iova - 1,
						      1, 0));
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, iova,
						      f->mr->ibmr.length + 1, 0));
}

/*
 * Blocks larger than a page, then, registered again, the same memory in
 * blocks of a page (NFS's PAGE_SIZE): the MR follows its last mapping.
 */
static void map_mr_sg_blocks_larger_than_a_page(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
	const u32 piece[1][2] = { { 300, SOFTRVT_FR_BYTES - 300 } };
	u64 iova;

	f->mr = softrvt_fr_alloc(test, f, f->pd, 1 << SOFTRVT_FR_ORDER);
	/* One block of the whole allocation, which is aligned to it. */
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SOFTRVT_FR_BYTES, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 1);
	iova = f->mr->ibmr.iova;
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	fr_expect_map(test, f->mr, iova, f->mem + 300, SOFTRVT_FR_BYTES - 300);
	fr_expect_map(test, f->mr, iova + SOFTRVT_FR_BYTES - 301, f->mem + SOFTRVT_FR_BYTES - 1,
		      1);

	KUNIT_EXPECT_EQ(test, softrvt_mr_invalidate(f->pd, f->mr->ibmr.rkey), 0);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, PAGE_SIZE, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 1 << SOFTRVT_FR_ORDER);
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(f->mr->ibmr.rkey));
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	fr_expect_map(test, f->mr, iova, f->mem + 300, PAGE_SIZE - 300);
	fr_expect_map(test, f->mr, iova + PAGE_SIZE - 300, f->mem + PAGE_SIZE,
		      PAGE_SIZE);
	fr_expect_map(test, f->mr, iova + SOFTRVT_FR_BYTES - 301, f->mem + SOFTRVT_FR_BYTES - 1,
		      1);
}

/* More blocks than max_num_sg: the list is cut, nothing is written past. */
static void map_mr_sg_stops_at_max_num_sg(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
	const u32 piece[1][2] = { { 0, 3 * SZ_4K } };

	f->mr = softrvt_fr_alloc(test, f, f->pd, 2);
	KUNIT_EXPECT_LT(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	KUNIT_EXPECT_EQ(test, f->mr->fr_mapped, 2);
}

/*
 * Through the engines: REG_MR, WRITEs through the rkey, LOCAL_INV, a
 * registration with the next key, SEND with Invalidate; each key works
 * exactly while its registration is valid.
 */
static void reg_inv_rotate_keys(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
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

	f->mr = softrvt_fr_alloc(test, f, f->pd, 4);
	key0 = f->mr->ibmr.rkey;
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 2, 0), 2);
	iova = f->mr->ibmr.iova;
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(key0));
	key1 = f->mr->ibmr.rkey;
	KUNIT_EXPECT_NE(test, key0, key1);
	KUNIT_EXPECT_EQ(test, key0 >> 8, key1 >> 8);

	fr_reg(test, f, f->rqp, f->mr, access, 0x100);
	softrvt_fr_expect_wc(test, f, 0x100, IB_WC_REG_MR, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, key0, iova, 1, 0));
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, key1, iova, 2 * SZ_4K,
						     IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, key1, iova, 1,
						      IB_ACCESS_REMOTE_READ));

	/* 6000 bytes across the gap between the two pieces. */
	softrvt_fr_fill(f->src, 6000, 1);
	softrvt_fr_write(test, f, iova + 1000, key1, 6000, 0x101);
	softrvt_fr_expect_wc(test, f, 0x101, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 1000, f->src, SZ_4K - 1000), 0);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 2 * SZ_4K,
				     f->src + SZ_4K - 1000, 6000 - SZ_4K + 1000),
			0);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + SZ_4K, 0, SZ_4K));

	softrvt_fr_inv(test, f->rqp, key1, 0x102);
	softrvt_fr_expect_wc(test, f, 0x102, IB_WC_LOCAL_INV, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, key1, iova, 1, 0));

	/* Registered again with the next key; the old one stays dead. */
	ib_update_fast_reg_key(&f->mr->ibmr, ib_inc_rkey(key1));
	fr_reg(test, f, f->rqp, f->mr, access, 0x103);
	softrvt_fr_expect_wc(test, f, 0x103, IB_WC_REG_MR, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, key1, iova, 1, 0));
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, iova, 1, 0));

	/* The peer invalidates it with its SEND. */
	softrvt_fr_fill(f->src, 64, 9);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = f->mr->ibmr.rkey;
	softrvt_fr_post(test, f->sqp, &swr);
	wc = softrvt_fr_wc(test, f);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 0x900);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 64);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, f->mr->ibmr.rkey);
	KUNIT_EXPECT_EQ(test, memcmp(f->dst, f->src, 64), 0);
	softrvt_fr_expect_wc(test, f, 0x901, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, iova, 1, 0));

	/* A WRITE through the invalidated rkey is refused, memory intact. */
	softrvt_fr_fill(f->src, 64, 0x55);
	softrvt_fr_write(test, f, iova, f->mr->ibmr.rkey, 64, 0x104);
	softrvt_fr_expect_wc(test, f, 0x104, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 64));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->sqp->state), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/* Every way IB_WR_REG_MR fails, and its status. */
static void reg_mr_errors(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
	const u32 piece[1][2] = { { 0, SZ_4K } };
	struct softrvt_mr *other = softrvt_fr_alloc(test, f, f->pd2, 1);
	struct softrvt_mr plain = { .fr_pages = NULL };
	u32 key;

	f->mr = softrvt_fr_alloc(test, f, f->pd, 1);
	key = f->mr->ibmr.rkey;
	/* Not mapped yet. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key, 0),
			IB_WC_MW_BIND_ERR);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
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
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, key, f->mr->ibmr.iova, 1, 0));
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key ^ 0x5a,
						  IB_ACCESS_RELAXED_ORDERING),
			IB_WC_SUCCESS);
	/* Valid already, even with its own key. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, key ^ 0x5a, 0),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, key ^ 0x5a, f->mr->ibmr.iova,
						     1, 0));
	softrvt_dereg_mr(&other->ibmr, NULL);
}

/* Every way IB_WR_LOCAL_INV fails, and its status. */
static void local_inv_errors(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
	struct softrvt_mr *other = softrvt_fr_alloc(test, f, f->pd2, 1);
	struct ib_mr *dma = softrvt_get_dma_mr(f->pd, IB_ACCESS_LOCAL_WRITE);
	struct softrvt_swqe wqe = { .opcode = IB_WR_LOCAL_INV };
	const u32 piece[1][2] = { { 0, SZ_4K } };

	KUNIT_ASSERT_FALSE(test, IS_ERR(dma));
	dma->device = f->pd->device;
	f->mr = softrvt_fr_alloc(test, f, f->pd, 1);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
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
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, dma->rkey, 0, 1, 0));
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey,
						     f->mr->ibmr.iova, 1, 0));
	/* Twice: the second finds it invalid, which is fine. */
	wqe.rkey = f->mr->ibmr.rkey;
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, softrvt_local_op(f->rqp, &wqe), IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey,
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
	const u32 piece[1][2] = { { 0, SZ_4K } };
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 0x200 },
		.access = IB_ACCESS_LOCAL_WRITE,
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV, .wr_id = 0x201 };

	f->mr = softrvt_fr_alloc(test, f, f->pd, 1);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, SZ_4K, piece, 1, 0), 1);
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, f->mr, f->mr->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	wr.mr = &f->mr->ibmr;
	wr.key = f->mr->ibmr.rkey;
	wr.wr.next = &inv;
	inv.ex.invalidate_rkey = f->mr->ibmr.rkey;
	softrvt_fr_post(test, f->rqp, &wr.wr);
	flush_work(&f->rqp->send_work);

	softrvt_fr_expect_wc(test, f, 0x200, IB_WC_REG_MR, IB_WC_MW_BIND_ERR);
	softrvt_fr_expect_wc(test, f, 0x201, IB_WC_LOCAL_INV, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
	/* The flushed LOCAL_INV did not run. */
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey,
						     f->mr->ibmr.iova, 1, 0));
}

/* A failed LOCAL_INV likewise. */
static void local_inv_error_fails_the_qp(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);

	softrvt_fr_inv(test, f->rqp, 0x12345678, 0x300);
	softrvt_fr_expect_wc(test, f, 0x300, IB_WC_LOCAL_INV, IB_WC_LOC_PROT_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/*
 * SEND with Invalidate naming an rkey the responder cannot invalidate:
 * the data is in, the receive fails with IB_WC_REM_INV_REQ_ERR as in rxe,
 * the sender's too, and both QPs are in ERR.
 */
static void send_with_inv_bad_rkey(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
	struct softrvt_mr *other = softrvt_fr_alloc(test, f, f->pd2, 1);
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
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, other, SZ_4K, piece, 1, 0), 1);
	f->rqp->ibqp.pd = f->pd2;
	KUNIT_ASSERT_EQ(test, softrvt_mr_fast_reg(f->rqp, other, other->ibmr.rkey,
						  0), IB_WC_SUCCESS);
	f->rqp->ibqp.pd = f->pd;

	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = other->ibmr.rkey;
	softrvt_fr_post(test, f->sqp, &swr);
	flush_work(&f->rqp->send_work);

	softrvt_fr_expect_wc(test, f, 0x400, IB_WC_RECV, IB_WC_REM_INV_REQ_ERR);
	softrvt_fr_expect_wc(test, f, 0x401, IB_WC_SEND, IB_WC_REM_INV_REQ_ERR);
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_fill(f->src, 64, 5);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);

	/* Idle: done when post_send returns, nothing waited for. */
	KUNIT_ASSERT_EQ(test, softrvt_post_send(&f->sqp->ibqp, &swr, &bad), 0);
	softrvt_fr_expect_wc(test, f, 0x500, IB_WC_RECV, IB_WC_SUCCESS);
	softrvt_fr_expect_wc(test, f, 0x501, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->dst, f->src, 64);

	/* Running elsewhere: not run here, but run once that run ends. */
	softrvt_fr_fill(f->src, 64, 9);
	mutex_lock(&f->sqp->engine_lock);
	KUNIT_EXPECT_EQ(test, softrvt_post_send(&f->sqp->ibqp, &swr, &bad), 0);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 1, &wc), 0);
	mutex_unlock(&f->sqp->engine_lock);
	softrvt_sync_send(f->sqp);
	softrvt_fr_expect_wc(test, f, 0x500, IB_WC_RECV, IB_WC_SUCCESS);
	softrvt_fr_expect_wc(test, f, 0x501, IB_WC_SEND, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->dst, f->src, 64);
	f->sqp->ibqp.uobject = NULL;
}

/* A FLUSH or ATOMIC_WRITE from sqp, in the layout the uverbs method fills. */
static int fr_placement(struct softrvt_fr *f, enum ib_wr_opcode opcode,
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
static u64 fr_flushable(struct kunit *test, struct softrvt_fr *f)
{
	const u32 piece[1][2] = { { 0, SOFTRVT_FR_BYTES } };

	f->mr = softrvt_fr_alloc(test, f, f->pd, 1 << SOFTRVT_FR_ORDER);
	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, f->mr, PAGE_SIZE, piece, 1, 0), 1);
	fr_reg(test, f, f->rqp, f->mr,
	       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, 0x700);
	softrvt_fr_expect_wc(test, f, 0x700, IB_WC_REG_MR, IB_WC_SUCCESS);
	f->mr->access |= IB_ACCESS_FLUSH_GLOBAL;
	f->rqp->attr.qp_access_flags |= IB_ACCESS_FLUSH_GLOBAL |
					IB_ACCESS_FLUSH_PERSISTENT;
	return f->mr->ibmr.iova;
}

/* FLUSH and ATOMIC_WRITE on the same-device path, and their errors. */
static void placement_wrs(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_expect_wc(test, f, 0x702, IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, f->mem + 1024, &value, sizeof(value));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1016, 0, 8));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1032, 0, 8));

	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, iova + 8, key, 64,
					   IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, 0,
					   0x703), 0);
	softrvt_fr_expect_wc(test, f, 0x703, IB_WC_FLUSH, IB_WC_SUCCESS);
	/* The whole region: the range the WR names does not matter. */
	KUNIT_EXPECT_EQ(test, fr_placement(f, IB_WR_FLUSH, 0, key, 0,
					   IB_FLUSH_GLOBAL, IB_FLUSH_MR, 0,
					   0x704), 0);
	softrvt_fr_expect_wc(test, f, 0x704, IB_WC_FLUSH, IB_WC_SUCCESS);

	/* Past the region, persistent, unaligned: each fails the pair. */
	KUNIT_EXPECT_EQ(test, softrvt_placement_flush(f->rqp, key, iova + 8,
						      SOFTRVT_FR_BYTES, IB_FLUSH_GLOBAL,
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
	softrvt_fr_expect_wc(test, f, 0x705, 0, IB_WC_REM_INV_REQ_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 1032, 0, 8));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->sqp->state), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->rqp->state), IB_QPS_ERR);
}

/* Only RC QPs take them; the QP's rights are checked as the region's. */
static void placement_wrs_refused(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_expect_wc(test, f, 0x712, 0, IB_WC_REM_ACCESS_ERR);
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

kunit_test_suite(softrvt_frwr_suite);
