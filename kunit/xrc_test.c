// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for XRC: the XRCETH of XRC requests, and the lookup of the
 * SRQ it names, which finds only SRQs of the TGT QP's own domain.
 */

#include <kunit/test.h>
#include <linux/unaligned.h>

#include "softrvt.h"
#include "hdr.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

/* XRC requests carry an XRCETH before RC's headers; answers do not. */
static void xrceth_on_requests_only(struct kunit *test)
{
	static const struct {
		u8 op;
		int len;
		bool xrceth;
	} cases[] = {
		{ IB_OPCODE_SEND_ONLY, 16, true },
		{ IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE, 20, true },
		{ IB_OPCODE_RDMA_WRITE_FIRST, 32, true },
		{ IB_OPCODE_RDMA_READ_REQUEST, 32, true },
		{ IB_OPCODE_COMPARE_SWAP, 44, true },
		{ IB_OPCODE_SEND_ONLY_WITH_INVALIDATE, 20, true },
		{ IB_OPCODE_FLUSH, 36, true },
		{ IB_OPCODE_ATOMIC_WRITE, 32, true },
		{ IB_OPCODE_RDMA_READ_RESPONSE_ONLY, 16, false },
		{ IB_OPCODE_ACKNOWLEDGE, 16, false },
		{ IB_OPCODE_ATOMIC_ACKNOWLEDGE, 24, false },
	};
	u16 mask;
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		u8 opcode = SOFTRVT_OPCODE_XRC | cases[i].op;
		u32 ext = 12 + 4 * cases[i].xrceth;

		KUNIT_ASSERT_EQ(test, softrvt_opcode_info(opcode, &mask), 0);
		KUNIT_EXPECT_EQ_MSG(test, softrvt_hdr_len(mask), cases[i].len,
				    "opcode 0x%02x", opcode);
		KUNIT_EXPECT_EQ_MSG(test, !!(mask & SOFTRVT_HDR_XRCETH),
				    cases[i].xrceth, "opcode 0x%02x", opcode);
		KUNIT_EXPECT_EQ(test, softrvt_ext_hdr_off(mask), ext);
	}
	/* RC's reserved operations stay reserved in XRC. */
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(SOFTRVT_OPCODE_XRC | 0x15, &mask),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(SOFTRVT_OPCODE_XRC | 0x1f, &mask),
			-EINVAL);
}

/* The SRQ number is the low 24 bits of the XRCETH; a short packet fails. */
static void xrceth_parsed(struct kunit *test)
{
	u8 buf[64] = {};
	struct softrvt_pkt pkt;

	softrvt_build_bth((void *)buf, SOFTRVT_OPCODE_XRC | IB_OPCODE_SEND_ONLY, false,
			  0, 0xffff, 0x123456, false, 7);
	put_unaligned_be32(0xab000042, buf + 12);
	KUNIT_ASSERT_EQ(test, softrvt_parse_bth(buf, 16 + 8 + 4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.srqn, 0x42);
	KUNIT_EXPECT_EQ(test, pkt.qpn, 0x123456);
	KUNIT_EXPECT_EQ(test, pkt.hdr_len, 16);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 8);
	/* A BTH and an ICRC, without room for the XRCETH. */
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 4, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 15 + 4, &pkt), -EINVAL);
	/* An answer has none: its SRQ number is 0. */
	buf[0] = SOFTRVT_OPCODE_XRC | IB_OPCODE_ACKNOWLEDGE;
	KUNIT_ASSERT_EQ(test, softrvt_parse_bth(buf, 16 + 4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.srqn, 0);
}

/*
 * What softrvt_xsrq_get() finds, its reference put back at once, so that a
 * failed expectation does not leave softrvt_xsrq_unpublish() waiting.
 */
static struct softrvt_srq *xsrq_find(struct kunit *test, struct softrvt_dev_info *rdi,
				     u32 srqn, const struct ib_xrcd *xrcd)
{
	struct softrvt_srq *srq = softrvt_xsrq_get(rdi, srqn, xrcd);

	if (srq)
		KUNIT_EXPECT_GE(test, refcount_read(&srq->refcount), 2);
	softrvt_xsrq_put(srq);
	return srq;
}

/*
 * softrvt_xsrq_get() finds an SRQ by number only for a QP of its domain: a
 * number of another domain's SRQ, of no SRQ, or a QP without a domain
 * finds nothing.  A destroyed SRQ is not found any more.
 */
static void xsrq_lookup_checks_the_domain(struct kunit *test)
{
	struct softrvt_dev_info *rdi = kunit_kzalloc(test, sizeof(*rdi),
						     GFP_KERNEL);
	struct softrvt_srq *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct softrvt_srq *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	struct ib_xrcd *xa = kunit_kzalloc(test, sizeof(*xa), GFP_KERNEL);
	struct ib_xrcd *xb = kunit_kzalloc(test, sizeof(*xb), GFP_KERNEL);
	u32 na, nb;

	KUNIT_ASSERT_TRUE(test, rdi && a && b && xa && xb);
	xa_init_flags(&rdi->srq_xa, XA_FLAGS_ALLOC1);
	a->ibsrq.srq_type = IB_SRQT_XRC;
	a->ibsrq.ext.xrc.xrcd = xa;
	b->ibsrq.srq_type = IB_SRQT_XRC;
	b->ibsrq.ext.xrc.xrcd = xb;
	KUNIT_ASSERT_EQ(test, softrvt_xsrq_publish(rdi, a), 0);
	KUNIT_ASSERT_EQ(test, softrvt_xsrq_publish(rdi, b), 0);
	na = a->ibsrq.ext.xrc.srq_num;
	nb = b->ibsrq.ext.xrc.srq_num;
	KUNIT_EXPECT_NE(test, na, 0);
	KUNIT_EXPECT_NE(test, na, nb);
	KUNIT_EXPECT_LE(test, na, SOFTRVT_XRC_SRQN_MASK);

	KUNIT_EXPECT_PTR_EQ(test, xsrq_find(test, rdi, na, xa), a);
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, na, xb));
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, nb, xa));
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, na, NULL));
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, 0, xa));
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, SOFTRVT_XRC_SRQN_MASK, xa));

	softrvt_xsrq_unpublish(rdi, a);
	KUNIT_EXPECT_NULL(test, xsrq_find(test, rdi, na, xa));
	KUNIT_EXPECT_PTR_EQ(test, xsrq_find(test, rdi, nb, xb), b);
	softrvt_xsrq_unpublish(rdi, b);
	KUNIT_EXPECT_TRUE(test, xa_empty(&rdi->srq_xa));
	xa_destroy(&rdi->srq_xa);
}

static struct kunit_case softrvt_xrc_cases[] = {
	KUNIT_CASE(xrceth_on_requests_only),
	KUNIT_CASE(xrceth_parsed),
	KUNIT_CASE(xsrq_lookup_checks_the_domain),
	{}
};

static struct kunit_suite softrvt_xrc_suite = {
	.name = "softrvt_xrc",
	.test_cases = softrvt_xrc_cases,
};

kunit_test_suites(&softrvt_xrc_suite);
