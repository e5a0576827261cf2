// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the admission of received packets to their QP's queue:
 * the cap of each QP, the cap of the device across its QPs, the drop
 * counters (the device's, or a QP's counter when it is bound to one), and
 * the device's charge given back by every path that takes packets off a
 * queue.
 *
 * The device and QPs are built without ib_core: only what the code under
 * test reaches is set up.  A QP's engine is a work item that counts its
 * runs instead of consuming, so packets stay queued until the test takes
 * them.  Packets are small skbs whose truesize is set by hand to stand for
 * large ones: the admission reads nothing else of them.
 */

#include <kunit/test.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

#define RX_TEST_QPS	3

struct rx_fixture {
	struct softrvt_dev_info *rdi;
	struct softrvt_qp *qp[RX_TEST_QPS];
	atomic_t runs[RX_TEST_QPS];
};

static struct rx_fixture *rx_current;

static void rx_engine_stub(struct work_struct *work)
{
	struct softrvt_qp *qp = container_of(work, struct softrvt_qp, send_work);
	int i;

	for (i = 0; i < RX_TEST_QPS; i++)
		if (rx_current->qp[i] == qp)
			atomic_inc(&rx_current->runs[i]);
}

static void rx_fixture_release(void *ctx)
{
	struct rx_fixture *f = ctx;
	int i;

	for (i = 0; i < RX_TEST_QPS; i++) {
		cancel_work_sync(&f->qp[i]->send_work);
		skb_queue_purge(&f->qp[i]->r_pkts);
	}
	rx_current = NULL;
}

static struct rx_fixture *rx_setup(struct kunit *test)
{
	struct rx_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kunit_kzalloc(test, sizeof(*f->rdi), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->rdi);
	for (i = 0; i < RX_TEST_QPS; i++) {
		f->qp[i] = kunit_kzalloc(test, sizeof(*f->qp[i]), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, f->qp[i]);
		f->qp[i]->ibqp.device = &f->rdi->ibdev;
		f->qp[i]->ibqp.qp_num = 0x100 + i;
		skb_queue_head_init(&f->qp[i]->r_pkts);
		INIT_WORK(&f->qp[i]->send_work, rx_engine_stub);
		mutex_init(&f->qp[i]->engine_lock);
	}
	rx_current = f;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							rx_fixture_release,
							f), 0);
	return f;
}

static struct sk_buff *rx_pkt(struct kunit *test, unsigned int truesize)
{
	struct sk_buff *skb = alloc_skb(64, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	if (truesize)
		skb->truesize = truesize;
	return skb;
}

static u64 rx_count(struct rx_fixture *f, enum softrvt_counter c)
{
	return atomic64_read(&f->rdi->counters[c]);
}

/*
 * Four quarters of the device's cap fill it, whichever QPs hold them; the
 * next packet is dropped and counted as the device's, although its QP
 * holds nothing.  Each packet taken off a queue makes room again.
 */
static void rx_device_cap_across_qps(struct kunit *test)
{
	struct rx_fixture *f = rx_setup(test);
	unsigned int quarter = SOFTRVT_RX_DEV_MAX_BYTES / 4;
	struct sk_buff *skb;
	int i;

	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[i / 2],
							 rx_pkt(test, quarter)));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued),
			4L * quarter);

	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[2],
						  rx_pkt(test, quarter)));
	/* Even a small one: the cap is in bytes. */
	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[2],
						  rx_pkt(test, 0)));
	KUNIT_EXPECT_EQ(test, skb_queue_len(&f->qp[2]->r_pkts), 0);
	KUNIT_EXPECT_EQ(test, rx_count(f, SOFTRVT_CNT_DROP_DEV_QUEUE_FULL), 2);
	KUNIT_EXPECT_EQ(test, rx_count(f, SOFTRVT_CNT_DROP_QUEUE_FULL), 0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued),
			4L * quarter);

	skb = softrvt_rx_dequeue(f->qp[0]);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	kfree_skb(skb);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued),
			3L * quarter);
	KUNIT_EXPECT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[2],
						 rx_pkt(test, quarter)));

	for (i = 0; i < RX_TEST_QPS; i++)
		softrvt_rx_purge(f->qp[i]);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued), 0);
	for (i = 0; i < RX_TEST_QPS; i++)
		KUNIT_EXPECT_TRUE(test, skb_queue_empty(&f->qp[i]->r_pkts));

	/* Every queued packet scheduled its QP's engine; drops did not. */
	for (i = 0; i < RX_TEST_QPS; i++)
		flush_work(&f->qp[i]->send_work);
	KUNIT_EXPECT_GE(test, atomic_read(&f->runs[0]), 1);
	KUNIT_EXPECT_GE(test, atomic_read(&f->runs[1]), 1);
	KUNIT_EXPECT_GE(test, atomic_read(&f->runs[2]), 1);
}

/* A QP's own cap counts packets; what it drops charges the device nothing. */
static void rx_qp_cap_charges_nothing(struct kunit *test)
{
	struct rx_fixture *f = rx_setup(test);
	long each;
	int i;

	for (i = 0; i < SOFTRVT_RX_QUEUE_MAX; i++)
		KUNIT_ASSERT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[0],
							 rx_pkt(test, 0)));
	each = skb_peek(&f->qp[0]->r_pkts)->truesize;
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued),
			each * SOFTRVT_RX_QUEUE_MAX);
	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[0],
						  rx_pkt(test, 0)));
	KUNIT_EXPECT_EQ(test, rx_count(f, SOFTRVT_CNT_DROP_QUEUE_FULL), 1);
	KUNIT_EXPECT_EQ(test, rx_count(f, SOFTRVT_CNT_DROP_DEV_QUEUE_FULL), 0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued),
			each * SOFTRVT_RX_QUEUE_MAX);
	/* Another QP is not affected. */
	KUNIT_EXPECT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[1],
						 rx_pkt(test, 0)));

	softrvt_rx_purge(f->qp[0]);
	softrvt_rx_purge(f->qp[1]);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued), 0);
}

/*
 * The engine of a QP in RESET drops what is queued: the device gets its
 * charge back.
 */
static void rx_engine_reset_gives_back(struct kunit *test)
{
	struct rx_fixture *f = rx_setup(test);
	struct softrvt_qp *qp = f->qp[0];
	int i;

	for (i = 0; i < 8; i++)
		KUNIT_ASSERT_TRUE(test, softrvt_rx_queue(f->rdi, qp,
							 rx_pkt(test, 4096)));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued), 8 * 4096);
	flush_work(&qp->send_work);

	qp->state = IB_QPS_RESET;
	softrvt_send_work(&qp->send_work);
	KUNIT_EXPECT_TRUE(test, skb_queue_empty(&qp->r_pkts));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->rdi->rx_queued), 0);
}

/*
 * A QP bound to a counter of `rdma statistic qp` counts its drops there,
 * not in the device's counters; unbound again, in the device's.
 */
static void rx_drop_counts_in_bound_counter(struct kunit *test)
{
	struct rx_fixture *f = rx_setup(test);
	unsigned int half = SOFTRVT_RX_DEV_MAX_BYTES / 2;
	struct softrvt_qp_counter *qc;
	enum softrvt_counter full = SOFTRVT_CNT_DROP_DEV_QUEUE_FULL;

	qc = kunit_kzalloc(test, sizeof(*qc), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qc);
	KUNIT_ASSERT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[0],
						 rx_pkt(test, half)));
	KUNIT_ASSERT_TRUE(test, softrvt_rx_queue(f->rdi, f->qp[0],
						 rx_pkt(test, half)));

	rcu_assign_pointer(f->qp[1]->counter, qc);
	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[1],
						  rx_pkt(test, 0)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&qc->counts[full]), 1);
	KUNIT_EXPECT_EQ(test, rx_count(f, full), 0);
	/* Only the bound QP's: another QP's drop stays the device's. */
	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[2],
						  rx_pkt(test, 0)));
	KUNIT_EXPECT_EQ(test, rx_count(f, full), 1);

	RCU_INIT_POINTER(f->qp[1]->counter, NULL);
	KUNIT_EXPECT_FALSE(test, softrvt_rx_queue(f->rdi, f->qp[1],
						  rx_pkt(test, 0)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&qc->counts[full]), 1);
	KUNIT_EXPECT_EQ(test, rx_count(f, full), 2);
}

static struct kunit_case softrvt_rx_cases[] = {
	KUNIT_CASE(rx_device_cap_across_qps),
	KUNIT_CASE(rx_qp_cap_charges_nothing),
	KUNIT_CASE(rx_engine_reset_gives_back),
	KUNIT_CASE(rx_drop_counts_in_bound_counter),
	{}
};

static struct kunit_suite softrvt_rx_suite = {
	.name = "softrvt_rx",
	.test_cases = softrvt_rx_cases,
};

kunit_test_suites(&softrvt_rx_suite);
