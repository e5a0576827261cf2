// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the driver details of `rdma resource show qp -dd`: the
 * values a QP's fill hook puts in its netlink nest, read back as iproute2
 * reads them (a DRIVER_STRING name, then its DRIVER_U32 value), and a
 * message too short for them left as it was.
 *
 * The QP is built without ib_core: only what the hook reads is set.
 */

#include <kunit/test.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

static struct softrvt_qp *res_qp(struct kunit *test)
{
	struct softrvt_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	spin_lock_init(&qp->s_lock);
	skb_queue_head_init(&qp->r_pkts);
	return qp;
}

/* The value named @name in the driver nest at the start of @skb, or -1. */
static s64 res_value(struct sk_buff *skb, const char *name)
{
	const struct nlattr *nest = (const struct nlattr *)skb->data;
	const struct nlattr *a;
	bool match = false;
	int rem;

	if (nla_type(nest) != RDMA_NLDEV_ATTR_DRIVER)
		return -1;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) == RDMA_NLDEV_ATTR_DRIVER_STRING)
			match = !strcmp(nla_data(a), name);
		else if (match && nla_type(a) == RDMA_NLDEV_ATTR_DRIVER_U32)
			return nla_get_u32(a);
	}
	return -1;
}

/*
 * The PSNs as the requester and responder hold them, the oldest PSN not
 * acknowledged across the wrap, the send queue's WQEs across its wrap,
 * and the retry budgets spent, an infinite RNR budget spending nothing.
 */
static void res_qp_values(struct kunit *test)
{
	struct softrvt_qp *qp = res_qp(test);
	struct sk_buff *skb = alloc_skb(NLMSG_GOODSIZE, GFP_KERNEL);
	struct sk_buff *queued = alloc_skb(0, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_NOT_NULL(test, queued);
	qp->req.psn = 5;
	qp->comp.acked_psn = SOFTRVT_PSN_MASK;
	qp->req.max_psn = 9;
	qp->resp.psn = 0x123456;
	qp->req.rd_count = 3;
	qp->resp.read_held = 2;
	qp->attr.retry_cnt = 7;
	qp->comp.retry = 4;
	qp->attr.rnr_retry = SOFTRVT_RNR_RETRY_INFINITE;
	qp->comp.rnr_retry = SOFTRVT_RNR_RETRY_INFINITE;
	qp->s_size = 8;
	qp->s_head = 2;
	qp->s_tail = 6;
	skb_queue_tail(&qp->r_pkts, queued);

	KUNIT_ASSERT_EQ(test, softrvt_fill_res_qp_entry(skb, &qp->ibqp), 0);
	KUNIT_EXPECT_EQ(test, res_value(skb, "next_psn"), 5);
	KUNIT_EXPECT_EQ(test, res_value(skb, "unacked_psn"), 0);
	KUNIT_EXPECT_EQ(test, res_value(skb, "max_psn"), 9);
	KUNIT_EXPECT_EQ(test, res_value(skb, "expected_psn"), 0x123456);
	KUNIT_EXPECT_EQ(test, res_value(skb, "rd_atomic_out"), 3);
	KUNIT_EXPECT_EQ(test, res_value(skb, "rd_atomic_in"), 2);
	KUNIT_EXPECT_EQ(test, res_value(skb, "retries_used"), 3);
	KUNIT_EXPECT_EQ(test, res_value(skb, "rnr_retries_used"), 0);
	KUNIT_EXPECT_EQ(test, res_value(skb, "rx_queued"), 1);
	KUNIT_EXPECT_EQ(test, res_value(skb, "sq_wqes"), 4);
	KUNIT_EXPECT_EQ(test, res_value(skb, "no_such_field"), -1);

	skb_queue_purge(&qp->r_pkts);
	kfree_skb(skb);
}

/*
 * A message with room for the first fields only gets none of them: the
 * nest is cancelled whole.  (The fields take some 300 bytes.)
 */
static void res_qp_no_room(struct kunit *test)
{
	struct softrvt_qp *qp = res_qp(test);
	struct sk_buff *skb = alloc_skb(NLMSG_GOODSIZE, GFP_KERNEL);
	unsigned int len;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_put(skb, skb_tailroom(skb) - 100);
	len = skb->len;
	KUNIT_EXPECT_EQ(test, softrvt_fill_res_qp_entry(skb, &qp->ibqp), -EMSGSIZE);
	KUNIT_EXPECT_EQ(test, skb->len, len);
	kfree_skb(skb);
}

static struct kunit_case softrvt_restrack_cases[] = {
	KUNIT_CASE(res_qp_values),
	KUNIT_CASE(res_qp_no_room),
	{}
};

static struct kunit_suite softrvt_restrack_suite = {
	.name = "softrvt_restrack",
	.test_cases = softrvt_restrack_cases,
};

kunit_test_suites(&softrvt_restrack_suite);
