// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for softrvt's QP receive queue handling, and for a new
 * path taken while the QP's engine runs.
 *
 * A QP is built without an ib_device: only what the code under test
 * reaches (its receive ring, its receive CQ, for some the send engine's
 * lock and packet queue) is set up.  A user ring is
 * written behind the kernel's back from the CQ's completion handler, which
 * runs in the middle of the kernel's work, as a hostile process on
 * another CPU could at any moment.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

#define QP_TEST_RECV_WR		8
#define QP_TEST_CQE		256
/* How often the hostile producer refills; far more than the ring holds. */
#define QP_TEST_REFILLS		64

struct qp_fixture {
	struct softrvt_qp *qp;
	struct softrvt_cq *cq;
	int completions;
	int refills;			/* left for the hostile producer */
	bool engine;			/* send_work is set up */
	struct task_struct *poster;	/* the task inside post_recv */
	int inline_completions;		/* handler calls from that task */
};

static void qp_fixture_release(void *ctx)
{
	struct qp_fixture *f = ctx;

	if (f->engine)
		cancel_work_sync(&f->qp->send_work);
	softrvt_rq_free(&f->qp->r_rq);
	softrvt_cq_cleanup(f->cq);
}

/*
 * What the send engine touches of a QP with nothing to send and nothing
 * received: enough for softrvt_send_work() to run on it.
 */
static void qp_engine_setup(struct qp_fixture *f, enum ib_qp_state state)
{
	struct softrvt_qp *qp = f->qp;

	spin_lock_init(&qp->s_lock);
	skb_queue_head_init(&qp->r_pkts);
	INIT_WORK(&qp->send_work, softrvt_send_work);
	mutex_init(&qp->engine_lock);
	qp->state = state;
	f->engine = true;
}

static struct qp_fixture *qp_setup(struct kunit *test, bool user,
				   ib_comp_handler comp)
{
	struct qp_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->qp = kunit_kzalloc(test, sizeof(*f->qp), GFP_KERNEL);
	f->cq = kunit_kzalloc(test, sizeof(*f->cq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->qp);
	KUNIT_ASSERT_NOT_NULL(test, f->cq);
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->cq, QP_TEST_CQE, false), 0);
	KUNIT_ASSERT_EQ(test, softrvt_rq_init(&f->qp->r_rq, QP_TEST_RECV_WR, 1,
					      user), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							qp_fixture_release,
							f), 0);
	f->cq->ibcq.comp_handler = comp;
	f->cq->ibcq.cq_context = f;
	f->qp->ibqp.recv_cq = &f->cq->ibcq;
	f->qp->ibqp.qp_num = 0x42;
	f->qp->ibqp.qp_type = IB_QPT_RC;
	return f;
}

static void qp_post(struct kunit *test, struct qp_fixture *f, int n, u64 base)
{
	const struct ib_recv_wr *bad = NULL;
	struct ib_recv_wr wr = {};
	struct ib_sge sge = { .length = 64, .lkey = 1 };
	int i;

	for (i = 0; i < n; i++) {
		wr.wr_id = base + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		KUNIT_ASSERT_EQ(test, softrvt_rq_post(&f->qp->r_rq, &wr, &bad), 0);
	}
}

/*
 * A hostile producer: each completion the flush enters, it publishes one
 * more WQE right behind the kernel's tail, so the ring is never empty.
 */
static void refill_comp(struct ib_cq *ibcq, void *ctx)
{
	struct qp_fixture *f = ctx;
	struct softrvt_rq *rq = &f->qp->r_rq;
	u32 head = READ_ONCE(rq->wq->head.val);
	struct rvt_rwqe *wqe;

	f->completions++;
	if (f->refills) {
		f->refills--;
		wqe = softrvt_rwqe_ptr(rq, head % rq->size);
		wqe->wr_id = 0xbad0000 + f->refills;
		wqe->num_sge = 0;
		/* Release: the WQE before the index, as a provider does. */
		smp_store_release(&rq->wq->head.val, (head + 1) % rq->size);
	}
	softrvt_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
}

static void flush_rq_bounded_by_what_was_posted(struct kunit *test)
{
	struct qp_fixture *f = qp_setup(test, true, refill_comp);
	struct ib_wc *wc = kunit_kcalloc(test, QP_TEST_CQE, sizeof(*wc),
					 GFP_KERNEL);
	u32 head, tail;
	int i, n;

	KUNIT_ASSERT_NOT_NULL(test, wc);
	qp_post(test, f, 4, 100);
	f->refills = QP_TEST_REFILLS;
	softrvt_req_notify_cq(&f->cq->ibcq, IB_CQ_NEXT_COMP);

	softrvt_qp_flush_rq(f->qp);

	/* Exactly the four WQEs posted when the flush began, in order. */
	n = softrvt_poll_cq(&f->cq->ibcq, QP_TEST_CQE, wc);
	KUNIT_EXPECT_EQ(test, n, 4);
	KUNIT_EXPECT_EQ(test, f->completions, 4);
	for (i = 0; i < min(n, 4); i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 100 + i);
		KUNIT_EXPECT_EQ(test, wc[i].status, IB_WC_WR_FLUSH_ERR);
		KUNIT_EXPECT_EQ(test, wc[i].opcode, IB_WC_RECV);
		KUNIT_EXPECT_PTR_EQ(test, wc[i].qp, &f->qp->ibqp);
	}
	/* What the producer added meanwhile is still posted, not lost. */
	tail = READ_ONCE(f->qp->r_rq.wq->tail.val);
	head = READ_ONCE(f->qp->r_rq.wq->head.val);
	KUNIT_EXPECT_EQ(test, tail, 4);
	KUNIT_EXPECT_EQ(test, head, 8);
}

static void count_comp(struct ib_cq *ibcq, void *ctx)
{
	struct qp_fixture *f = ctx;

	f->completions++;
	softrvt_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
}

static void flush_rq_corrupt_head_stops(struct kunit *test)
{
	struct qp_fixture *f = qp_setup(test, true, count_comp);
	struct ib_wc wc[4];

	qp_post(test, f, 3, 7);
	WRITE_ONCE(f->qp->r_rq.wq->head.val, U32_MAX);
	softrvt_qp_flush_rq(f->qp);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 4, wc), 0);
	KUNIT_EXPECT_EQ(test, f->qp->r_rq.tail, 0);

	/* Repaired: the next flush completes the three. */
	WRITE_ONCE(f->qp->r_rq.wq->head.val, 3);
	softrvt_qp_flush_rq(f->qp);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 4, wc), 3);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 7);
	KUNIT_EXPECT_EQ(test, wc[2].wr_id, 9);
}

static void post_comp(struct ib_cq *ibcq, void *ctx)
{
	struct qp_fixture *f = ctx;

	if (current == READ_ONCE(f->poster))
		f->inline_completions++;
	f->completions++;
	softrvt_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
}

/*
 * A receive posted in ERR is flushed, but not from inside post_recv: a
 * kernel consumer may hold a lock there that its handler takes too.
 */
static void post_recv_in_err_completes_later(struct kunit *test)
{
	struct qp_fixture *f = qp_setup(test, false, post_comp);
	struct ib_sge sge = { .length = 64, .lkey = 1 };
	struct ib_recv_wr wr = {
		.wr_id = 0x77,
		.sg_list = &sge,
		.num_sge = 1,
	};
	const struct ib_recv_wr *bad = NULL;
	struct ib_wc wc[2];

	qp_engine_setup(f, IB_QPS_ERR);
	softrvt_req_notify_cq(&f->cq->ibcq, IB_CQ_NEXT_COMP);

	WRITE_ONCE(f->poster, current);
	KUNIT_EXPECT_EQ(test, softrvt_post_recv(&f->qp->ibqp, &wr, &bad), 0);
	WRITE_ONCE(f->poster, NULL);
	KUNIT_EXPECT_EQ(test, f->inline_completions, 0);

	/* The engine flushes it. */
	flush_work(&f->qp->send_work);
	KUNIT_EXPECT_EQ(test, f->completions, 1);
	KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 2, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0x77);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, wc[0].opcode, IB_WC_RECV);
}

/*
 * A message half received from the wire holds a receive WQE outside the
 * ring (r_wqe).  When the QP enters ERR that WQE is flushed like the
 * ring's, and first, as it was taken first.
 */
static void flush_held_rwqe_first(struct kunit *test)
{
	struct qp_fixture *f = qp_setup(test, false, count_comp);
	struct ib_wc wc[4];
	int i, n;

	qp_engine_setup(f, IB_QPS_ERR);
	f->qp->r_wqe = kunit_kzalloc(test, struct_size(f->qp->r_wqe, sg_list,
						       SOFTRVT_MAX_SGE),
				     GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->qp->r_wqe);
	f->qp->r_wqe->wr_id = 0x50;
	f->qp->resp.has_rwqe = true;
	f->qp->resp.in_msg = true;
	f->qp->resp.len = 1024;
	qp_post(test, f, 2, 0x51);

	softrvt_send_work(&f->qp->send_work);

	n = softrvt_poll_cq(&f->cq->ibcq, 4, wc);
	KUNIT_EXPECT_EQ(test, n, 3);
	for (i = 0; i < min(n, 3); i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 0x50 + i);
		KUNIT_EXPECT_EQ(test, wc[i].status, IB_WC_WR_FLUSH_ERR);
		KUNIT_EXPECT_EQ(test, wc[i].opcode, IB_WC_RECV);
	}
	KUNIT_EXPECT_FALSE(test, f->qp->resp.has_rwqe);
	KUNIT_EXPECT_FALSE(test, f->qp->resp.in_msg);

	/* Flushed once: the engine running again adds nothing. */
	softrvt_send_work(&f->qp->send_work);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 4, wc), 0);
}

/*
 * modify_qp taking a new path in SQD, from a worker, while the test holds
 * the engine's lock as a run of the engine would.
 */
struct av_fixture {
	struct qp_fixture *f;
	struct work_struct work;
	struct completion started;
	struct completion done;
	struct ib_qp_attr attr;
	int ret;
};

static void av_modify_work(struct work_struct *work)
{
	struct av_fixture *a = container_of(work, struct av_fixture, work);

	complete(&a->started);
	a->ret = softrvt_modify_qp(&a->f->qp->ibqp, &a->attr,
				   IB_QP_STATE | IB_QP_AV, NULL);
	complete(&a->done);
}

static void av_fixture_release(void *ctx)
{
	struct qp_fixture *f = ctx;

	/* A run the move to SQD queued may still read the route's cache. */
	cancel_work_sync(&f->qp->send_work);
	dst_cache_destroy(&f->qp->s_dst_cache);
}

/*
 * The engine reads a QP's path without s_lock, and it still runs in SQD,
 * the one state where the path may change without a reset: a new path
 * must wait for the run in progress to end, so that no packet of a run
 * carries half of the old GIDs and half of the new.
 */
static void modify_av_waits_for_the_engine(struct kunit *test)
{
	struct qp_fixture *f = qp_setup(test, false, count_comp);
	struct av_fixture *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct softrvt_dev_info *rdi = kunit_kzalloc(test, sizeof(*rdi),
						     GFP_KERNEL);
	struct softrvt_qp *qp = f->qp;
	union ib_gid old = { .raw = { 0xfe, 0x80, [15] = 0x01 } };
	bool done_while_held, local;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, rdi);
	qp_engine_setup(f, IB_QPS_SQD);
	mutex_init(&qp->state_mutex);
	KUNIT_ASSERT_EQ(test, dst_cache_init(&qp->s_dst_cache, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							av_fixture_release,
							f), 0);
	/* A UC QP: the engine then has nothing to do on the wire in SQD. */
	qp->ibqp.qp_type = IB_QPT_UC;
	qp->ibqp.device = &rdi->ibdev;
	qp->s_av.dgid = old;
	qp->s_local = true;

	a->f = f;
	a->attr.qp_state = IB_QPS_SQD;
	a->attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a->attr.ah_attr, 1);
	rdma_ah_set_ah_flags(&a->attr.ah_attr, IB_AH_GRH);
	a->attr.ah_attr.grh.dgid = old;
	a->attr.ah_attr.grh.dgid.raw[15] = 0x02;
	a->attr.ah_attr.grh.hop_limit = 64;
	INIT_WORK(&a->work, av_modify_work);
	init_completion(&a->started);
	init_completion(&a->done);

	mutex_lock(&qp->engine_lock);
	queue_work(system_unbound_wq, &a->work);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&a->started,
							  10 * HZ), 0);
	/* Ample for a modify that does not wait to have returned. */
	done_while_held = wait_for_completion_timeout(&a->done, HZ / 5);
	KUNIT_EXPECT_FALSE(test, done_while_held);
	KUNIT_EXPECT_MEMEQ(test, &qp->s_av.dgid, &old, sizeof(old));
	local = READ_ONCE(qp->s_local);
	KUNIT_EXPECT_TRUE(test, local);
	mutex_unlock(&qp->engine_lock);

	flush_work(&a->work);
	KUNIT_EXPECT_EQ(test, a->ret, 0);
	KUNIT_EXPECT_MEMEQ(test, &qp->s_av.dgid, &a->attr.ah_attr.grh.dgid,
			   sizeof(old));
	/* No GID of this device is the destination: not a local peer. */
	local = READ_ONCE(qp->s_local);
	KUNIT_EXPECT_FALSE(test, local);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->state), IB_QPS_SQD);
}

static struct kunit_case softrvt_qp_cases[] = {
	KUNIT_CASE(flush_rq_bounded_by_what_was_posted),
	KUNIT_CASE(flush_rq_corrupt_head_stops),
	KUNIT_CASE(post_recv_in_err_completes_later),
	KUNIT_CASE(flush_held_rwqe_first),
	KUNIT_CASE(modify_av_waits_for_the_engine),
	{}
};

static struct kunit_suite softrvt_qp_suite = {
	.name = "softrvt_qp",
	.test_cases = softrvt_qp_cases,
};

kunit_test_suites(&softrvt_qp_suite);
