// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fixture the fast-registration and memory-window suites share, see
 * fr_fixture.h.
 */

#include <kunit/test.h>
#include <linux/scatterlist.h>
#include <linux/workqueue.h>

#include "fr_fixture.h"

static void fr_timer(struct timer_list *t)
{
}

static void fr_release(void *ctx)
{
	struct softrvt_fr *f = ctx;

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
	free_pages((unsigned long)f->mem, SOFTRVT_FR_ORDER);
}

static struct softrvt_qp *fr_qp(struct kunit *test, struct softrvt_fr *f,
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
	qp->s_size = SOFTRVT_FR_SEND_WR + 1;
	qp->s_stride = ALIGN(sizeof(struct softrvt_swqe) +
			     sizeof(struct rvt_wqe_sge), 8);
	qp->s_wq = kunit_kzalloc(test, qp->s_size * qp->s_stride, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->s_wq);
	KUNIT_ASSERT_EQ(test, softrvt_rq_init(&qp->r_rq, 4, 1, false), 0);
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&f->rdi->qp_xa, qpn, qp,
					    GFP_KERNEL), 0);
	return qp;
}

struct softrvt_fr *softrvt_fr_setup(struct kunit *test)
{
	struct softrvt_fr *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kunit_kzalloc(test, sizeof(*f->rdi), GFP_KERNEL);
	f->pd = kunit_kzalloc(test, sizeof(*f->pd), GFP_KERNEL);
	f->pd2 = kunit_kzalloc(test, sizeof(*f->pd2), GFP_KERNEL);
	f->cq = kunit_kzalloc(test, sizeof(*f->cq), GFP_KERNEL);
	f->src = kunit_kzalloc(test, SOFTRVT_FR_BYTES, GFP_KERNEL);
	f->dst = kunit_kzalloc(test, SOFTRVT_FR_BYTES, GFP_KERNEL);
	f->mem = (u8 *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, SOFTRVT_FR_ORDER);
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
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->cq, SOFTRVT_FR_CQE, false), 0);
	f->sqp = fr_qp(test, f, SOFTRVT_FR_SQPN, SOFTRVT_FR_RQPN);
	f->rqp = fr_qp(test, f, SOFTRVT_FR_RQPN, SOFTRVT_FR_SQPN);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, fr_release, f),
			0);
	return f;
}

/* A fast-registration MR of @pd, as ib_alloc_mr() leaves it. */
struct softrvt_mr *softrvt_fr_alloc(struct kunit *test,
				    struct softrvt_fr *f,
				    struct ib_pd *pd, u32 max_num_sg)
{
	struct ib_mr *ibmr = softrvt_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_num_sg);

	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	ibmr->device = pd->device;
	ibmr->type = IB_MR_TYPE_MEM_REG;
	return softrvt_to_mr(ibmr);
}

/*
 * Map @n pieces of f->mem, (offset, length) pairs in @piece, in blocks of
 * @bsize bytes, skipping @skip bytes of the first, as ib_map_mr_sg() does.
 */
int softrvt_fr_map(struct softrvt_fr *f, struct softrvt_mr *mr,
		   u32 bsize, const u32 piece[][2], int n,
		   unsigned int skip)
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

void softrvt_fr_post(struct kunit *test, struct softrvt_qp *qp,
		     const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad = NULL;

	KUNIT_ASSERT_EQ(test, softrvt_post_send(&qp->ibqp, wr, &bad), 0);
	flush_work(&qp->send_work);
}

void softrvt_fr_inv(struct kunit *test, struct softrvt_qp *qp, u32 key,
		    u64 wr_id)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_id = wr_id,
		.ex.invalidate_rkey = key,
	};

	softrvt_fr_post(test, qp, &wr);
}

/* An RDMA WRITE of @len bytes of f->src from sqp, through the DMA lkey. */
void softrvt_fr_write(struct kunit *test, struct softrvt_fr *f,
		      u64 va, u32 rkey, u32 len, u64 wr_id)
{
	struct ib_sge sge = { .addr = (uintptr_t)f->src, .length = len };
	struct ib_rdma_wr wr = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .wr_id = wr_id,
			.sg_list = &sge, .num_sge = 1 },
		.remote_addr = va,
		.rkey = rkey,
	};

	softrvt_fr_post(test, f->sqp, &wr.wr);
}

/* The next completion, which must exist. */
struct ib_wc softrvt_fr_wc(struct kunit *test, struct softrvt_fr *f)
{
	struct ib_wc wc = {};

	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 1, &wc), 1);
	return wc;
}

void softrvt_fr_expect_wc(struct kunit *test, struct softrvt_fr *f,
			  u64 wr_id, enum ib_wc_opcode opcode,
			  enum ib_wc_status status)
{
	struct ib_wc wc = softrvt_fr_wc(test, f);

	KUNIT_EXPECT_EQ(test, wc.wr_id, wr_id);
	KUNIT_EXPECT_EQ(test, wc.status, status);
	if (status == IB_WC_SUCCESS)
		KUNIT_EXPECT_EQ(test, wc.opcode, opcode);
}

bool softrvt_fr_key_finds(struct softrvt_fr *f, u32 key, u64 va,
			  u64 len, int access)
{
	struct softrvt_mr *mr;

	if (softrvt_mr_lookup(f->pd, key, va, len, access, &mr))
		return false;
	softrvt_put_mr(mr);
	return true;
}

void softrvt_fr_fill(u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7 + (i >> 8);
}
