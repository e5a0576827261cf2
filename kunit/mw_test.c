// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for memory windows bound to fast-registration MRs:
 * IB_WR_BIND_MW of type 1 and type 2 windows, accesses through them, their
 * invalidation, on the fixture of fr_fixture.h.
 */

#include <kunit/test.h>

#include "fr_fixture.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

static void mw_dealloc_action(void *ctx)
{
	struct softrvt_mw *mw = ctx;

	softrvt_dealloc_mw(&mw->ibmw);
}

/*
 * A window of @pd, as ib_core's alloc_mw makes it; deallocated when the
 * test ends, before the fixture's MR is deregistered.
 */
static struct softrvt_mw *mw_alloc(struct kunit *test, struct softrvt_fr *f,
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
static struct softrvt_mr *mw_mr(struct kunit *test, struct softrvt_fr *f,
				struct ib_pd *pd, int access)
{
	const u32 piece[1][2] = { { 0, SOFTRVT_FR_BYTES } };
	struct softrvt_mr *mr = softrvt_fr_alloc(test, f, pd, SOFTRVT_FR_BYTES / SZ_4K);
	struct ib_pd *qp_pd = f->rqp->ibqp.pd;

	KUNIT_ASSERT_EQ(test, softrvt_fr_map(f, mr, SZ_4K, piece, 1, 0), 1);
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_expect_wc(test, f, 0x500, IB_WC_BIND_MW, IB_WC_SUCCESS);
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
	softrvt_fr_fill(f->src, 3000, 3);
	softrvt_fr_write(test, f, base + 1000, k1, 3000, 0x501);
	softrvt_fr_expect_wc(test, f, 0x501, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(f->mem + 1000, f->src, 3000), 0);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 1000));
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem + 4000, 0, SOFTRVT_FR_BYTES - 4000));

	/* Bound again elsewhere, read-only, with the next key. */
	k2 = ib_inc_rkey(k1);
	mw_post_bind(test, f->rqp, k2, f->mr, base + 8192, 100,
		     IB_ACCESS_REMOTE_READ, 0x502);
	softrvt_fr_expect_wc(test, f, 0x502, IB_WC_BIND_MW, IB_WC_SUCCESS);
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
	softrvt_fr_expect_wc(test, f, 0x503, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k2, base + 8192, 1,
					      IB_ACCESS_REMOTE_READ));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k3, base + 8192, 1,
					      IB_ACCESS_REMOTE_READ));

	/* The peer's WRITE through it fails, the memory intact. */
	softrvt_fr_fill(f->dst, 64, 3);
	softrvt_fr_fill(f->src, 64, 0x77);
	softrvt_fr_write(test, f, base + 1000, k1, 64, 0x504);
	softrvt_fr_expect_wc(test, f, 0x504, 0, IB_WC_REM_ACCESS_ERR);
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_expect_wc(test, f, 0x600, IB_WC_BIND_MW, IB_WC_SUCCESS);

	/* Bound to rqp: a peer of another QP may not use it. */
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base, SZ_4K,
					     IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->sqp, k1, base, 1,
					      IB_ACCESS_REMOTE_WRITE));
	softrvt_fr_fill(f->src, 500, 5);
	softrvt_fr_write(test, f, base + 100, k1, 500, 0x601);
	softrvt_fr_expect_wc(test, f, 0x601, IB_WC_RDMA_WRITE, IB_WC_SUCCESS);
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
	KUNIT_EXPECT_TRUE(test, softrvt_fr_key_finds(f, f->mr->ibmr.rkey, base, 1, 0));

	/* Only its QP invalidates it, and only by its whole key. */
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->sqp, k1), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, k1 ^ 1), -EACCES);
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base, 1,
					     IB_ACCESS_REMOTE_WRITE));
	softrvt_fr_inv(test, f->rqp, k1, 0x602);
	softrvt_fr_expect_wc(test, f, 0x602, IB_WC_LOCAL_INV, IB_WC_SUCCESS);
	KUNIT_EXPECT_FALSE(test, mw_key_finds(f->rqp, k1, base, 1,
					      IB_ACCESS_REMOTE_WRITE));
	KUNIT_EXPECT_EQ(test, f->mr->n_mws, 0);

	/* The MR is free to invalidate now; the window's key is dead. */
	KUNIT_EXPECT_EQ(test, softrvt_rkey_invalidate(f->rqp, f->mr->ibmr.rkey), 0);
	softrvt_fr_fill(f->src, 64, 7);
	softrvt_fr_write(test, f, base, k1, 64, 0x603);
	softrvt_fr_expect_wc(test, f, 0x603, 0, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_FALSE(test, memchr_inv(f->mem, 0, 100));
}

/*
 * A type 2 window invalidated by the peer's SEND with Invalidate on its
 * QP, then bound again: a type 2 window is free once invalidated.
 */
static void mw_type2_send_with_inv(struct kunit *test)
{
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	softrvt_fr_expect_wc(test, f, 0x680, IB_WC_BIND_MW, IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, mw_key_finds(f->rqp, k1, base + SZ_4K, 1,
					     IB_ACCESS_REMOTE_WRITE));

	KUNIT_ASSERT_EQ(test, softrvt_post_recv(&f->rqp->ibqp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = k1;
	softrvt_fr_fill(f->src, 64, 6);
	softrvt_fr_post(test, f->sqp, &swr);
	wc = softrvt_fr_wc(test, f);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 0x690);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, k1);
	KUNIT_EXPECT_EQ(test, memcmp(f->dst, f->src, 64), 0);
	softrvt_fr_expect_wc(test, f, 0x691, IB_WC_SEND, IB_WC_SUCCESS);
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
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
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base + SOFTRVT_FR_BYTES - 63,
				      64, rd), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(f->rqp, k1, f->mr, base,
				      SOFTRVT_FR_BYTES + 1, rd), IB_WC_MW_BIND_ERR);
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
	softrvt_fr_expect_wc(test, f, 0x700, IB_WC_BIND_MW, IB_WC_MW_BIND_ERR);
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
	struct softrvt_fr *f = softrvt_fr_setup(test);
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

kunit_test_suite(softrvt_mw_suite);
