// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for softrvt's receive rings, SRQs and CQs.
 *
 * The tests drive the same functions the verbs use (rvt_post_srq_recv(),
 * softrvt_srq_get_rwqe(), softrvt_srq_resize(), softrvt_cq_enter()...) on objects built
 * without an ib_device, and check ring contents and indices directly.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/kthread.h>
#include <linux/vmalloc.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

#define TEST_MAX_SGE	4

struct srq_fixture {
	struct softrvt_srq *srq;
	struct rvt_rwqe *wqe;		/* one ring slot, for consuming */
	int limit_events;
	struct ib_srq *event_srq;
};

static void srq_event(struct ib_event *ev, void *ctx)
{
	struct srq_fixture *f = ctx;

	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED) {
		f->limit_events++;
		f->event_srq = ev->element.srq;
	}
}

static void srq_release(void *ctx)
{
	softrvt_srq_cleanup(ctx);
}

static struct srq_fixture *srq_setup(struct kunit *test, u32 max_wr,
				     bool user)
{
	struct ib_srq_attr attr = {
		.max_wr = max_wr,
		.max_sge = TEST_MAX_SGE,
	};
	struct srq_fixture *f;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f);
	f->srq = kunit_kzalloc(test, sizeof(*f->srq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->srq);
	f->srq->ibsrq.event_handler = srq_event;
	f->srq->ibsrq.srq_context = f;
	KUNIT_ASSERT_EQ(test, softrvt_srq_init(f->srq, &attr, user), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, srq_release,
							f->srq), 0);
	f->wqe = kunit_kzalloc(test, f->srq->rq.stride, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->wqe);
	return f;
}

/* A chain of n WRs whose wr_id and SGEs are derived from base + i. */
static struct ib_recv_wr *make_chain(struct kunit *test, int n, u64 base)
{
	struct ib_recv_wr *wr;
	struct ib_sge *sge;
	int i, j;

	wr = kunit_kcalloc(test, n, sizeof(*wr), GFP_KERNEL);
	sge = kunit_kcalloc(test, n * TEST_MAX_SGE, sizeof(*sge), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, wr);
	KUNIT_ASSERT_NOT_NULL(test, sge);
	for (i = 0; i < n; i++) {
		u64 id = base + i;

		wr[i].wr_id = id;
		wr[i].num_sge = 1 + id % TEST_MAX_SGE;
		wr[i].sg_list = &sge[i * TEST_MAX_SGE];
		for (j = 0; j < wr[i].num_sge; j++) {
			sge[i * TEST_MAX_SGE + j].addr = (id << 8) | j;
			sge[i * TEST_MAX_SGE + j].length = 64 * (j + 1);
			sge[i * TEST_MAX_SGE + j].lkey = (u32)id ^ 0x5a5a;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	return wr;
}

/* Check that a ring slot or consumed WQE holds what make_chain() built. */
static void expect_wqe(struct kunit *test, const struct rvt_rwqe *wqe, u64 id)
{
	int j;

	KUNIT_EXPECT_EQ(test, wqe->wr_id, id);
	KUNIT_ASSERT_EQ(test, wqe->num_sge, 1 + id % TEST_MAX_SGE);
	for (j = 0; j < wqe->num_sge; j++) {
		KUNIT_EXPECT_EQ(test, wqe->sg_list[j].addr, (id << 8) | j);
		KUNIT_EXPECT_EQ(test, wqe->sg_list[j].length, 64 * (j + 1));
		KUNIT_EXPECT_EQ(test, wqe->sg_list[j].lkey, (u32)id ^ 0x5a5a);
	}
}

static u32 ring_head(struct softrvt_srq *srq)
{
	return READ_ONCE(srq->rq.wq->head.val);
}

static void post_single_wr(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 16, false);
	struct ib_recv_wr *wr = make_chain(test, 1, 42);
	const struct ib_recv_wr *bad = NULL;

	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad), 0);
	KUNIT_EXPECT_NULL(test, bad);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 1);
	KUNIT_EXPECT_EQ(test, f->srq->rq.tail, 0);
	expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, 0), 42);

	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	expect_wqe(test, f->wqe, 42);
	KUNIT_EXPECT_EQ(test, f->srq->rq.tail, 1);
	KUNIT_EXPECT_EQ(test, f->srq->rq.wq->tail.val, 1);
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
}

static void post_long_chain(struct kunit *test)
{
	const int n = 200;
	struct srq_fixture *f = srq_setup(test, n, false);
	struct ib_recv_wr *wr = make_chain(test, n, 1000);
	const struct ib_recv_wr *bad = NULL;
	int i;

	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad), 0);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), n);
	for (i = 0; i < n; i++)
		expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, i), 1000 + i);
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, 1000 + i);
	}
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
}

static void post_chain_bad_sge_in_middle(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 16, false);
	struct ib_recv_wr *wr = make_chain(test, 6, 7);
	const struct ib_recv_wr *bad = NULL;
	struct rvt_rwqe *slot;

	wr[3].num_sge = TEST_MAX_SGE + 1;
	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad),
			-EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, &wr[3]);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 3);
	expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, 0), 7);
	expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, 1), 8);
	expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, 2), 9);
	/* Nothing of the bad WR or the ones after it reached the ring. */
	slot = softrvt_rwqe_ptr(&f->srq->rq, 3);
	KUNIT_EXPECT_EQ(test, slot->wr_id, 0);
	KUNIT_EXPECT_EQ(test, slot->num_sge, 0);
	slot = softrvt_rwqe_ptr(&f->srq->rq, 4);
	KUNIT_EXPECT_EQ(test, slot->wr_id, 0);

	/* A negative num_sge is as bad as a large one. */
	wr[0].num_sge = -1;
	bad = NULL;
	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad),
			-EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, &wr[0]);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 3);
}

static void post_ring_full(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 8, false);
	struct ib_recv_wr *wr = make_chain(test, 11, 100);
	const struct ib_recv_wr *bad = NULL;
	int i;

	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad),
			-ENOMEM);
	KUNIT_EXPECT_PTR_EQ(test, bad, &wr[8]);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 8);
	for (i = 0; i < 8; i++)
		expect_wqe(test, softrvt_rwqe_ptr(&f->srq->rq, i), 100 + i);

	/* One slot freed: exactly one more WR fits, the next is refused. */
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	expect_wqe(test, f->wqe, 100);
	bad = NULL;
	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, &wr[8], &bad),
			-ENOMEM);
	KUNIT_EXPECT_PTR_EQ(test, bad, &wr[9]);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 0);
	for (i = 1; i <= 8; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, 100 + i);
	}
}

static void post_wraparound_laps(struct kunit *test)
{
	const u32 max_wr = 5;
	struct srq_fixture *f = srq_setup(test, max_wr, false);
	u64 next_post = 0, next_get = 0;
	int lap;

	/* Uneven batches walk head and tail across the wrap many times. */
	for (lap = 0; lap < 40; lap++) {
		int batch = 1 + lap % max_wr, i;
		struct ib_recv_wr *wr = make_chain(test, batch, next_post);
		const struct ib_recv_wr *bad = NULL;

		KUNIT_ASSERT_EQ(test,
				softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad), 0);
		next_post += batch;
		for (i = 0; i < batch; i++) {
			KUNIT_ASSERT_EQ(test,
					softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
			expect_wqe(test, f->wqe, next_get++);
		}
		KUNIT_EXPECT_EQ(test, ring_head(f->srq), next_post % (max_wr + 1));
		KUNIT_EXPECT_EQ(test, f->srq->rq.tail, next_get % (max_wr + 1));
	}
	KUNIT_EXPECT_EQ(test, next_get, next_post);
	KUNIT_EXPECT_GT(test, next_post, 10 * (max_wr + 1));
}

/*
 * rvt_post_srq_recv() from a hard interrupt: an hrtimer and an irq_work
 * of the default kinds, which expire in hard interrupt context, as a
 * device's interrupt handler runs.  Not their _HARD kinds: those stay in
 * hard interrupt context on PREEMPT_RT too, where no spinlock_t may be
 * taken (lockdep's PROVE_RAW_LOCK_NESTING says so), and where an
 * interrupt handler, threaded, may take one, as rdmavt's and rxe's SRQs
 * do.
 */
struct irq_post {
	struct hrtimer timer;
	struct irq_work work;
	struct softrvt_srq *srq;
	struct ib_recv_wr *wr;
	const struct ib_recv_wr *bad;
	int ret;
	bool in_hardirq;
	struct completion done;
};

static void irq_post_now(struct irq_post *p)
{
	p->in_hardirq = in_hardirq();
	p->ret = softrvt_srq_ops.post_srq_recv(&p->srq->ibsrq, p->wr, &p->bad);
	complete(&p->done);
}

static enum hrtimer_restart irq_post_timer(struct hrtimer *t)
{
	irq_post_now(container_of(t, struct irq_post, timer));
	return HRTIMER_NORESTART;
}

static void irq_post_work(struct irq_work *w)
{
	irq_post_now(container_of(w, struct irq_post, work));
}

static void check_irq_post(struct kunit *test, struct srq_fixture *f,
			   struct irq_post *p, u64 base)
{
	int i;

	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&p->done, 10 * HZ),
			0);
	/* On PREEMPT_RT the default kinds run in a thread, as handlers do. */
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		KUNIT_EXPECT_TRUE(test, p->in_hardirq);
	KUNIT_EXPECT_EQ(test, p->ret, 0);
	/* Consume from process context: lockdep sees both contexts. */
	for (i = 0; i < 8; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, base + i);
	}
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
}

static void post_from_hardirq_hrtimer(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 16, false);
	struct irq_post *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	p->srq = f->srq;
	p->wr = make_chain(test, 8, 500);
	init_completion(&p->done);
	hrtimer_setup(&p->timer, irq_post_timer, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL);
	hrtimer_start(&p->timer, ns_to_ktime(100 * NSEC_PER_USEC),
		      HRTIMER_MODE_REL);
	check_irq_post(test, f, p, 500);
	hrtimer_cancel(&p->timer);
}

static void post_from_hardirq_irq_work(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 16, false);
	struct irq_post *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	p->srq = f->srq;
	p->wr = make_chain(test, 8, 600);
	init_completion(&p->done);
	p->work = IRQ_WORK_INIT(irq_post_work);
	irq_work_queue(&p->work);
	check_irq_post(test, f, p, 600);
	irq_work_sync(&p->work);
}

#define STRESS_PER_PRODUCER	4000

struct producer {
	struct softrvt_srq *srq;
	u64 id_base;
	int posted;
	int errors;
	bool stop;			/* set if the consumer gave up */
	struct completion done;
};

static int producer_fn(void *arg)
{
	struct producer *pr = arg;
	struct ib_sge sge = { .length = 1 };
	struct ib_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	while (pr->posted < STRESS_PER_PRODUCER && !READ_ONCE(pr->stop)) {
		int ret;

		wr.wr_id = pr->id_base + pr->posted;
		sge.addr = wr.wr_id;
		ret = softrvt_srq_ops.post_srq_recv(&pr->srq->ibsrq, &wr, &bad);
		if (ret == -ENOMEM) {
			cond_resched();
			continue;
		}
		if (ret)
			pr->errors++;
		else
			pr->posted++;
	}
	complete_all(&pr->done);
	return 0;
}

/* Runs before the SRQ is freed, even when an assertion ends the test. */
static void producers_stop(void *ctx)
{
	struct producer *pr = ctx;
	int i;

	for (i = 0; i < 2; i++)
		WRITE_ONCE(pr[i].stop, true);
	for (i = 0; i < 2; i++)
		if (pr[i].srq)
			wait_for_completion(&pr[i].done);
}

static void two_cpus_post_while_draining(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 64, false);
	struct producer *pr = kunit_kcalloc(test, 2, sizeof(*pr), GFP_KERNEL);
	int next[2] = { 0, 0 }, got = 0, i;
	unsigned long deadline;

	KUNIT_ASSERT_NOT_NULL(test, pr);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");

	for (i = 0; i < 2; i++)
		init_completion(&pr[i].done);
	KUNIT_ASSERT_EQ(test, kunit_add_action(test, producers_stop, pr), 0);
	for (i = 0; i < 2; i++) {
		struct task_struct *t;

		pr[i].id_base = (u64)(i + 1) << 32;
		t = kthread_create_on_cpu(producer_fn, &pr[i], i,
					  "softrvt_kunit/%u");
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
		/* Only a started producer is waited for. */
		pr[i].srq = f->srq;
		wake_up_process(t);
	}

	/* Generous: producers may be starved for long on a loaded host. */
	deadline = jiffies + 60 * HZ;
	while (got < 2 * STRESS_PER_PRODUCER && time_before(jiffies, deadline)) {
		int ret = softrvt_srq_get_rwqe(f->srq, f->wqe);
		u64 id, who, seq;

		if (ret == -ENOENT) {
			cond_resched();
			continue;
		}
		KUNIT_ASSERT_EQ(test, ret, 0);
		id = f->wqe->wr_id;
		who = (id >> 32) - 1;
		seq = id & U32_MAX;
		KUNIT_ASSERT_LT(test, who, 2);
		/* Per producer, WQEs arrive once each and in order. */
		KUNIT_ASSERT_EQ(test, seq, (u64)next[who]);
		KUNIT_ASSERT_EQ(test, f->wqe->sg_list[0].addr, id);
		next[who]++;
		got++;
	}
	for (i = 0; i < 2; i++) {
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&pr[i].done, 60 * HZ),
				0);
		KUNIT_EXPECT_EQ(test, pr[i].errors, 0);
		KUNIT_EXPECT_EQ(test, next[i], STRESS_PER_PRODUCER);
	}
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
}

static void post_n(struct kunit *test, struct srq_fixture *f, int n, u64 base)
{
	const struct ib_recv_wr *bad = NULL;

	KUNIT_ASSERT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq,
							    make_chain(test, n, base), &bad),
			0);
}

static void srq_limit_fires_once_per_arming(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 32, false);
	int i;

	post_n(test, f, 10, 0);
	KUNIT_ASSERT_EQ(test, softrvt_srq_set_limit(f->srq, 5), 0);

	/* 10 -> 5 left: not below the limit yet. */
	for (i = 0; i < 5; i++)
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 0);
	/* 4 left: fires, and disarms. */
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 1);
	KUNIT_EXPECT_PTR_EQ(test, f->event_srq, &f->srq->ibsrq);
	KUNIT_EXPECT_EQ(test, f->srq->limit, 0);
	for (i = 0; i < 4; i++)
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 1);

	/* Re-armed: refilling does not fire, falling below again does. */
	KUNIT_ASSERT_EQ(test, softrvt_srq_set_limit(f->srq, 3), 0);
	post_n(test, f, 6, 100);
	KUNIT_EXPECT_EQ(test, f->limit_events, 1);
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 1);
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 2);
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	KUNIT_EXPECT_EQ(test, f->limit_events, 2);

	/* A limit the SRQ cannot hold is refused and leaves it disarmed. */
	KUNIT_EXPECT_EQ(test, softrvt_srq_set_limit(f->srq, 33), -EINVAL);
	KUNIT_EXPECT_EQ(test, f->srq->limit, 0);
}

static void srq_resize_keeps_outstanding(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 8, false);
	u32 limit = 3;
	int i;

	/* Move tail off 0 so the outstanding WQEs straddle the wrap. */
	post_n(test, f, 6, 0);
	for (i = 0; i < 6; i++)
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	post_n(test, f, 7, 10);
	KUNIT_ASSERT_LT(test, ring_head(f->srq), f->srq->rq.tail);

	/* Too small for the 7 outstanding: refused, nothing changes. */
	KUNIT_EXPECT_EQ(test, softrvt_srq_resize(f->srq, 6, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, f->srq->rq.size, 9);

	KUNIT_ASSERT_EQ(test, softrvt_srq_resize(f->srq, 100, &limit, NULL), 0);
	KUNIT_EXPECT_EQ(test, f->srq->rq.size, 101);
	KUNIT_EXPECT_EQ(test, f->srq->rq.tail, 0);
	KUNIT_EXPECT_EQ(test, ring_head(f->srq), 7);
	KUNIT_EXPECT_EQ(test, f->srq->limit, 3);

	/* An armed limit above the new size is refused. */
	KUNIT_EXPECT_EQ(test, softrvt_srq_resize(f->srq, 2, NULL, NULL), -EINVAL);

	post_n(test, f, 50, 17);
	for (i = 0; i < 57; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, 10 + i);
	}
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
	KUNIT_EXPECT_EQ(test, f->limit_events, 1);

	/* Exactly full fits into a ring of that size. */
	post_n(test, f, 5, 200);
	KUNIT_ASSERT_EQ(test, softrvt_srq_resize(f->srq, 5, NULL, NULL), 0);
	for (i = 0; i < 5; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, 200 + i);
	}
}

static void user_corrupt_head_rejected(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 8, true);
	struct ib_recv_wr *wr = make_chain(test, 2, 50);
	const struct ib_recv_wr *bad = NULL;
	struct softrvt_rq *rq = &f->srq->rq;

	post_n(test, f, 3, 0);
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);

	/* As a buggy or hostile process would: head beyond the ring. */
	WRITE_ONCE(rq->wq->head.val, rq->size + 7);
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -EIO);
	KUNIT_EXPECT_EQ(test, rq->tail, 1);
	KUNIT_EXPECT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, wr, &bad),
			-EIO);
	KUNIT_EXPECT_PTR_EQ(test, bad, &wr[0]);
	KUNIT_EXPECT_EQ(test, rq->wq->head.val, rq->size + 7);
	KUNIT_EXPECT_EQ(test, softrvt_srq_resize(f->srq, 16, NULL, NULL), -EIO);
	KUNIT_EXPECT_EQ(test, rq->size, 9);

	WRITE_ONCE(rq->wq->head.val, U32_MAX);
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -EIO);

	/* Once the producer repairs its index, the ring works again. */
	WRITE_ONCE(rq->wq->head.val, 3);
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
	expect_wqe(test, f->wqe, 1);
}

static void user_corrupt_tail_ignored(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 8, true);
	struct softrvt_rq *rq = &f->srq->rq;
	int i;

	post_n(test, f, 4, 0);
	KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);

	/* The kernel's tail is its own; the shared copy is only output. */
	WRITE_ONCE(rq->wq->tail.val, 0xdead);
	for (i = 1; i < 4; i++) {
		KUNIT_ASSERT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), 0);
		expect_wqe(test, f->wqe, i);
		KUNIT_EXPECT_EQ(test, rq->wq->tail.val, i + 1);
	}
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -ENOENT);
}

static void user_corrupt_wqe_rejected(struct kunit *test)
{
	struct srq_fixture *f = srq_setup(test, 8, true);
	struct softrvt_rq *rq = &f->srq->rq;

	post_n(test, f, 2, 0);
	softrvt_rwqe_ptr(rq, 0)->num_sge = 200;
	KUNIT_EXPECT_EQ(test, softrvt_srq_get_rwqe(f->srq, f->wqe), -EIO);
	KUNIT_EXPECT_EQ(test, rq->tail, 0);
}

struct cq_fixture {
	struct softrvt_cq *cq;
	int err_events;
	int comp_events;
	struct ib_qp qp;
};

static void cq_event(struct ib_event *ev, void *ctx)
{
	struct cq_fixture *f = ctx;

	if (ev->event == IB_EVENT_CQ_ERR)
		f->err_events++;
}

static void cq_comp(struct ib_cq *cq, void *ctx)
{
	struct cq_fixture *f = ctx;

	f->comp_events++;
}

static void cq_release(void *ctx)
{
	softrvt_cq_cleanup(ctx);
}

static struct cq_fixture *cq_setup(struct kunit *test, u32 entries, bool user)
{
	struct cq_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->cq = kunit_kzalloc(test, sizeof(*f->cq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->cq);
	f->cq->ibcq.event_handler = cq_event;
	f->cq->ibcq.comp_handler = cq_comp;
	f->cq->ibcq.cq_context = f;
	f->qp.qp_num = 77;
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->cq, entries, user), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cq_release,
							f->cq), 0);
	return f;
}

static bool cq_add(struct cq_fixture *f, u64 wr_id, bool solicited)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_SUCCESS,
		.opcode = IB_WC_RECV,
		.byte_len = (u32)wr_id * 3,
		.qp = &f->qp,
	};

	return softrvt_cq_enter(f->cq, &wc, solicited);
}

static void cq_kernel_order_and_resize(struct kunit *test)
{
	struct cq_fixture *f = cq_setup(test, 4, false);
	struct ib_wc *wc = kunit_kcalloc(test, 8, sizeof(*wc), GFP_KERNEL);
	int i, n;

	KUNIT_ASSERT_NOT_NULL(test, wc);

	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_TRUE(test, cq_add(f, i, false));
	KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 2, wc), 2);
	for (i = 3; i < 6; i++)
		KUNIT_ASSERT_TRUE(test, cq_add(f, i, false));
	/* Four outstanding, straddling the wrap: a CQ of 3 cannot hold them. */
	KUNIT_EXPECT_EQ(test, softrvt_cq_resize(f->cq, 3, NULL), -EINVAL);
	KUNIT_ASSERT_EQ(test, softrvt_cq_resize(f->cq, 16, NULL), 0);
	KUNIT_EXPECT_EQ(test, f->cq->ibcq.cqe, 16);
	n = softrvt_poll_cq(&f->cq->ibcq, 8, wc);
	KUNIT_ASSERT_EQ(test, n, 4);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 2 + i);
		KUNIT_EXPECT_EQ(test, wc[i].byte_len, (2 + i) * 3);
		KUNIT_EXPECT_PTR_EQ(test, wc[i].qp, &f->qp);
	}
}

static void cq_overflow_and_notify(struct kunit *test)
{
	struct cq_fixture *f = cq_setup(test, 2, false);
	struct ib_wc wc[4];

	KUNIT_EXPECT_EQ(test, softrvt_req_notify_cq(&f->cq->ibcq, IB_CQ_SOLICITED),
			0);
	KUNIT_ASSERT_TRUE(test, cq_add(f, 1, false));
	KUNIT_EXPECT_EQ(test, f->comp_events, 0);
	KUNIT_ASSERT_TRUE(test, cq_add(f, 2, true));
	KUNIT_EXPECT_EQ(test, f->comp_events, 1);
	KUNIT_EXPECT_EQ(test, softrvt_req_notify_cq(&f->cq->ibcq,
						    IB_CQ_NEXT_COMP |
						    IB_CQ_REPORT_MISSED_EVENTS), 1);

	/* Full: the third is lost and the CQ errors, once. */
	KUNIT_EXPECT_FALSE(test, cq_add(f, 3, false));
	KUNIT_EXPECT_EQ(test, f->err_events, 1);
	KUNIT_EXPECT_FALSE(test, cq_add(f, 4, false));
	KUNIT_EXPECT_EQ(test, f->err_events, 1);
	KUNIT_EXPECT_EQ(test, softrvt_poll_cq(&f->cq->ibcq, 4, wc), 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 1);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 2);
}

static void cq_user_ring_and_corrupt_tail(struct kunit *test)
{
	struct cq_fixture *f = cq_setup(test, 4, true);
	struct rvt_cq_wc *q = f->cq->queue;

	KUNIT_ASSERT_TRUE(test, cq_add(f, 9, false));
	KUNIT_EXPECT_EQ(test, q->head.val, 1);
	KUNIT_EXPECT_EQ(test, q->uqueue[0].wr_id, 9);
	KUNIT_EXPECT_EQ(test, q->uqueue[0].byte_len, 27);
	KUNIT_EXPECT_EQ(test, q->uqueue[0].qp_num, 77);
	KUNIT_EXPECT_EQ(test, q->uqueue[0].opcode, IB_WC_RECV);

	/* The user consumer's tail is trusted only inside the ring. */
	WRITE_ONCE(q->tail.val, 1000);
	KUNIT_EXPECT_FALSE(test, cq_add(f, 10, false));
	KUNIT_EXPECT_EQ(test, f->err_events, 1);
	KUNIT_EXPECT_EQ(test, q->head.val, 1);
	KUNIT_EXPECT_EQ(test, softrvt_cq_resize(f->cq, 8, NULL), -EIO);
}

static struct kunit_case softrvt_ring_cases[] = {
	KUNIT_CASE(post_single_wr),
	KUNIT_CASE(post_long_chain),
	KUNIT_CASE(post_chain_bad_sge_in_middle),
	KUNIT_CASE(post_ring_full),
	KUNIT_CASE(post_wraparound_laps),
	KUNIT_CASE(post_from_hardirq_hrtimer),
	KUNIT_CASE(post_from_hardirq_irq_work),
	KUNIT_CASE_SLOW(two_cpus_post_while_draining),
	KUNIT_CASE(srq_limit_fires_once_per_arming),
	KUNIT_CASE(srq_resize_keeps_outstanding),
	KUNIT_CASE(user_corrupt_head_rejected),
	KUNIT_CASE(user_corrupt_tail_ignored),
	KUNIT_CASE(user_corrupt_wqe_rejected),
	{}
};

static struct kunit_suite softrvt_ring_suite = {
	.name = "softrvt_srq",
	.test_cases = softrvt_ring_cases,
};

static struct kunit_case softrvt_cq_cases[] = {
	KUNIT_CASE(cq_kernel_order_and_resize),
	KUNIT_CASE(cq_overflow_and_notify),
	KUNIT_CASE(cq_user_ring_and_corrupt_tail),
	{}
};

static struct kunit_suite softrvt_cq_suite = {
	.name = "softrvt_cq",
	.test_cases = softrvt_cq_cases,
};

kunit_test_suites(&softrvt_ring_suite, &softrvt_cq_suite);

MODULE_DESCRIPTION("KUnit tests for softrvt");
MODULE_LICENSE("Dual BSD/GPL");
