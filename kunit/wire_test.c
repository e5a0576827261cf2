// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the RoCEv2 transport headers: build/parse round trips,
 * malformed packets, and PSN arithmetic across the 24-bit wrap.
 */

#include <kunit/test.h>

#include "softrvt.h"
#include "hdr.h"

static void bth_round_trip(struct kunit *test)
{
	u8 buf[sizeof(struct rvt_bth) + sizeof(struct rvt_reth) + 8 + 2 +
	       RVT_ICRC_BYTES] = {};
	struct rvt_pkt pkt;

	rvt_build_bth((struct rvt_bth *)buf,
		      IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_ONLY, true, 2,
		      0xffff, 0xabcdef, true, 0xfffffe);
	/* The wire bytes, as the IBA lays them out. */
	KUNIT_EXPECT_EQ(test, buf[0], 0x0a);
	KUNIT_EXPECT_EQ(test, buf[1], 0xa0);
	KUNIT_EXPECT_EQ(test, buf[2], 0xff);
	KUNIT_EXPECT_EQ(test, buf[3], 0xff);
	KUNIT_EXPECT_EQ(test, buf[4], 0x00);
	KUNIT_EXPECT_EQ(test, buf[5], 0xab);
	KUNIT_EXPECT_EQ(test, buf[6], 0xcd);
	KUNIT_EXPECT_EQ(test, buf[7], 0xef);
	KUNIT_EXPECT_EQ(test, buf[8], 0x80);
	KUNIT_EXPECT_EQ(test, buf[9], 0xff);
	KUNIT_EXPECT_EQ(test, buf[10], 0xff);
	KUNIT_EXPECT_EQ(test, buf[11], 0xfe);

	KUNIT_ASSERT_EQ(test, rvt_parse_bth(buf, sizeof(buf), &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, 0x0a);
	KUNIT_EXPECT_TRUE(test, pkt.se);
	KUNIT_EXPECT_TRUE(test, pkt.ackreq);
	KUNIT_EXPECT_EQ(test, pkt.pad, 2);
	KUNIT_EXPECT_EQ(test, pkt.pkey, 0xffff);
	KUNIT_EXPECT_EQ(test, pkt.qpn, 0xabcdef);
	KUNIT_EXPECT_EQ(test, pkt.psn, 0xfffffe);
	KUNIT_EXPECT_EQ(test, pkt.hdr_len, 12 + 16);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 8);
	KUNIT_EXPECT_TRUE(test, pkt.mask & RVT_HDR_RETH);

	/* Out-of-range fields are masked, never spilled into neighbours. */
	rvt_build_bth((struct rvt_bth *)buf, IB_OPCODE_UD | IB_OPCODE_SEND_ONLY,
		      false, 7, 1, 0xff000001, false, 0x1000005);
	KUNIT_EXPECT_EQ(test, buf[1], 0x30);
	KUNIT_EXPECT_EQ(test, buf[4], 0x00);
	KUNIT_EXPECT_EQ(test, buf[8], 0x00);
	KUNIT_EXPECT_EQ(test, buf[11], 0x05);
}

static void header_lengths(struct kunit *test)
{
	static const struct {
		u8 opcode;
		int len;
	} cases[] = {
		{ IB_OPCODE_RC | IB_OPCODE_SEND_ONLY, 12 },
		{ IB_OPCODE_RC | IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE, 16 },
		{ IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_FIRST, 28 },
		{ IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 32 },
		{ IB_OPCODE_RC | IB_OPCODE_RDMA_READ_REQUEST, 28 },
		{ IB_OPCODE_RC | IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE, 12 },
		{ IB_OPCODE_RC | IB_OPCODE_RDMA_READ_RESPONSE_ONLY, 16 },
		{ IB_OPCODE_RC | IB_OPCODE_ACKNOWLEDGE, 16 },
		{ IB_OPCODE_RC | IB_OPCODE_ATOMIC_ACKNOWLEDGE, 24 },
		{ IB_OPCODE_RC | IB_OPCODE_COMPARE_SWAP, 40 },
		{ IB_OPCODE_RC | IB_OPCODE_SEND_ONLY_WITH_INVALIDATE, 16 },
		{ IB_OPCODE_UC | IB_OPCODE_RDMA_WRITE_ONLY, 28 },
		{ IB_OPCODE_UD | IB_OPCODE_SEND_ONLY, 20 },
		{ IB_OPCODE_UD | IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE, 24 },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		u16 mask;

		KUNIT_ASSERT_EQ(test, rvt_opcode_info(cases[i].opcode, &mask),
				0);
		KUNIT_EXPECT_EQ_MSG(test, rvt_hdr_len(mask), cases[i].len,
				    "opcode 0x%02x", cases[i].opcode);
	}
}

static void malformed_packets_rejected(struct kunit *test)
{
	u8 buf[64] = {};
	struct rvt_pkt pkt;
	u16 mask;

	/* Opcodes softrvt does not speak. */
	KUNIT_EXPECT_EQ(test, rvt_opcode_info(IB_OPCODE_UD | IB_OPCODE_SEND_FIRST,
					      &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_opcode_info(IB_OPCODE_UC |
					      IB_OPCODE_RDMA_READ_REQUEST,
					      &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_opcode_info(IB_OPCODE_RD | IB_OPCODE_SEND_ONLY,
					      &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_opcode_info(IB_OPCODE_CNP, &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_opcode_info(IB_OPCODE_RC | 0x15, &mask),
			-EINVAL);

	/* Shorter than a BTH and ICRC, or than the opcode's headers. */
	rvt_build_bth((void *)buf, IB_OPCODE_RC | IB_OPCODE_SEND_ONLY, false, 0,
		      0xffff, 5, false, 1);
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 15, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 16, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 0);
	buf[0] = IB_OPCODE_RC | IB_OPCODE_RDMA_READ_REQUEST;
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 16 + 3, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 16 + 4, &pkt), 0);
	/* Payload on an opcode that carries none. */
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 16 + 4 + 4, &pkt),
			-EINVAL);

	/* A pad count larger than the payload. */
	rvt_build_bth((void *)buf, IB_OPCODE_RC | IB_OPCODE_SEND_ONLY, false, 3,
		      0xffff, 5, false, 1);
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 2 + 4, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 4 + 4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 1);

	/* A transport version other than 0. */
	buf[1] |= 0x01;
	KUNIT_EXPECT_EQ(test, rvt_parse_bth(buf, 12 + 4 + 4, &pkt), -EINVAL);
}

static void psn_arithmetic_wraps(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, rvt_psn_add(0xffffff, 1), 0);
	KUNIT_EXPECT_EQ(test, rvt_psn_add(0xfffffe, 5), 3);
	KUNIT_EXPECT_EQ(test, rvt_psn_cmp(5, 5), 0);
	KUNIT_EXPECT_GT(test, rvt_psn_cmp(0, 0xffffff), 0);
	KUNIT_EXPECT_LT(test, rvt_psn_cmp(0xffffff, 0), 0);
	KUNIT_EXPECT_GT(test, rvt_psn_cmp(3, 0xfffffe), 0);
	KUNIT_EXPECT_EQ(test, rvt_psn_cmp(3, 0xfffffe), 5);
	KUNIT_EXPECT_EQ(test, rvt_psn_cmp(0xfffffe, 3), -5);
	/* Half the space ahead is "after", the other half "before". */
	KUNIT_EXPECT_GT(test, rvt_psn_cmp(0x7fffff, 0), 0);
	KUNIT_EXPECT_LT(test, rvt_psn_cmp(0x800001, 0), 0);
	/* Bits above the 24 are ignored. */
	KUNIT_EXPECT_EQ(test, rvt_psn_cmp(0x1000005, 5), 0);
}

static struct kunit_case softrvt_wire_cases[] = {
	KUNIT_CASE(bth_round_trip),
	KUNIT_CASE(header_lengths),
	KUNIT_CASE(malformed_packets_rejected),
	KUNIT_CASE(psn_arithmetic_wraps),
	{}
};

static struct kunit_suite softrvt_wire_suite = {
	.name = "softrvt_wire",
	.test_cases = softrvt_wire_cases,
};

kunit_test_suites(&softrvt_wire_suite);
