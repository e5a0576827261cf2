// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the RoCEv2 transport headers: build/parse round trips,
 * malformed packets, and PSN arithmetic across the 24-bit wrap.
 */

#include <crypto/hash.h>
#include <kunit/test.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <linux/unaligned.h>
#include <net/gso.h>
#include <net/ipv6.h>

#include "softrvt.h"
#include "hdr.h"
#include "rxe_vectors.h"

static u32 l3_len(const struct rxe_vector *v)
{
	return v->ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
}

/* Our ICRC of rxe's packets is the one rxe put on the wire. */
static void icrc_matches_rxe(struct kunit *test)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(rxe_vectors); i++) {
		const struct rxe_vector *v = &rxe_vectors[i];
		u32 len = v->len - SOFTRVT_ICRC_BYTES;

		KUNIT_EXPECT_EQ_MSG(test, softrvt_icrc(v->data, v->ipv6, len),
				    get_unaligned_le32(v->data + len),
				    "vector %d (%s)", i, v->name);
	}
}

/*
 * Fields routers rewrite do not change the ICRC; anything else does.
 * Each case flips one byte of a copy of every vector.
 */
static void icrc_covers_the_invariant_fields(struct kunit *test)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(rxe_vectors); i++) {
		const struct rxe_vector *v = &rxe_vectors[i];
		u32 len = v->len - SOFTRVT_ICRC_BYTES, l3 = l3_len(v);
		u32 want = get_unaligned_le32(v->data + len);
		u32 bth = l3 + sizeof(struct udphdr);
		u8 *p = kunit_kmalloc(test, v->len, GFP_KERNEL);

		KUNIT_ASSERT_NOT_NULL(test, p);
		memcpy(p, v->data, v->len);
		if (v->ipv6) {
			p[0] ^= 0x0f;	/* traffic class, low half */
			p[1] ^= 0xff;	/* traffic class, flow label */
			p[7] ^= 0xff;	/* hop limit */
		} else {
			p[1] ^= 0xff;	/* TOS */
			p[8] ^= 0xff;	/* TTL */
			p[10] ^= 0xff;	/* header checksum */
		}
		p[l3 + 6] ^= 0xff;	/* UDP checksum */
		p[bth + 4] ^= 0xc0;	/* FECN, BECN */
		KUNIT_EXPECT_EQ_MSG(test, softrvt_icrc(p, v->ipv6, len), want,
				    "vector %d: masked fields", i);

		memcpy(p, v->data, v->len);
		p[bth + 7] ^= 0x01;	/* destination QP */
		KUNIT_EXPECT_NE(test, softrvt_icrc(p, v->ipv6, len), want);
		memcpy(p, v->data, v->len);
		p[len - 1] ^= 0x80;	/* last payload byte */
		KUNIT_EXPECT_NE(test, softrvt_icrc(p, v->ipv6, len), want);
		memcpy(p, v->data, v->len);
		p[l3 + 2] ^= 0x01;	/* UDP destination port */
		KUNIT_EXPECT_NE(test, softrvt_icrc(p, v->ipv6, len), want);
		/* Too short to hold the headers. */
		KUNIT_EXPECT_EQ(test, softrvt_icrc(v->data, v->ipv6, bth + 11), 0);
	}
}

/* Payload lengths around the carry-less multiply's 64-byte blocks. */
static const u32 icrc_payload_lens[] = {
	0, 1, 15, 63, 64, 65, 79, 80, 127, 128, 1000, 4093, 4096, 4097, 8960,
};

/* The ICRC by the CRC-32 softrvt_icrc_init() chose; @tfm is not used. */
static u32 icrc_by_chosen(struct crypto_shash *tfm, const u8 *l3, bool ipv6,
			  u32 len)
{
	return softrvt_icrc(l3, ipv6, len);
}

/*
 * @icrc's ICRCs of rxe's packets are rxe's, and of packets with rxe's
 * headers and a random payload of every length in icrc_payload_lens, at
 * every alignment of a word, crc32_le()'s.
 */
static void icrc_agrees(struct kunit *test,
			u32 (*icrc)(struct crypto_shash *tfm, const u8 *l3,
				    bool ipv6, u32 len),
			struct crypto_shash *tfm)
{
	const struct rxe_vector *v = &rxe_vectors[0];
	u32 hlen = l3_len(v) + sizeof(struct udphdr) + sizeof(struct softrvt_bth);
	u32 size = hlen + 8960 + 4;
	u8 *buf = kunit_kmalloc(test, size, GFP_KERNEL);
	int i, off;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < ARRAY_SIZE(rxe_vectors); i++) {
		u32 len = rxe_vectors[i].len - SOFTRVT_ICRC_BYTES;

		KUNIT_EXPECT_EQ_MSG(test, icrc(tfm, rxe_vectors[i].data,
					       rxe_vectors[i].ipv6, len),
				    get_unaligned_le32(rxe_vectors[i].data + len),
				    "vector %d (%s)", i, rxe_vectors[i].name);
	}
	for (off = 0; off < 4; off++) {
		memcpy(buf + off, v->data, hlen);
		get_random_bytes(buf + off + hlen, size - off - hlen);
		for (i = 0; i < ARRAY_SIZE(icrc_payload_lens); i++) {
			u32 len = hlen + icrc_payload_lens[i];

			KUNIT_EXPECT_EQ_MSG(test,
					    icrc(tfm, buf + off, v->ipv6, len),
					    softrvt_icrc_by(NULL, buf + off, v->ipv6, len),
					    "payload %u at offset %d",
					    icrc_payload_lens[i], off);
		}
	}
}

/* Whatever softrvt_icrc_init() chose gives crc32_le()'s ICRCs. */
static void icrc_chosen_crc32_agrees(struct kunit *test)
{
	icrc_agrees(test, icrc_by_chosen, NULL);
}

/*
 * So does each crypto driver of "crc32" it may choose: crc32-generic and
 * crc32-pclmul (loaded on demand where the CPU has PCLMULQDQ, as QEMU's
 * -cpu max has) before 6.14; since, crc32-lib over crc32_le(), which
 * runs the arch code itself.  Each one the kernel has is checked.
 */
static void icrc_by_each_crc32_driver(struct kunit *test)
{
	static const char *const drivers[] = {
		"crc32-generic", "crc32-pclmul", "crc32-lib",
	};
	struct crypto_shash *tfm;
	int i, found = 0;

	for (i = 0; i < ARRAY_SIZE(drivers); i++) {
		tfm = crypto_alloc_shash(drivers[i], 0, 0);
		if (IS_ERR(tfm))
			continue;
		found++;
		icrc_agrees(test, softrvt_icrc_by, tfm);
		crypto_free_shash(tfm);
	}
	KUNIT_EXPECT_GT(test, found, 0);
}

/*
 * A received packet as a NIC may hand it over: @headlen bytes of @buf in
 * the linear part (network header first, skb->data at the UDP header,
 * as encap_rcv() sees it), the rest in page fragments cut at @cut bytes
 * each, every one at an odd offset in its own pages.
 */
static struct sk_buff *paged_skb(struct kunit *test, const u8 *buf, u32 len,
				 u32 l3len, u32 headlen, u32 cut)
{
	struct sk_buff *skb = alloc_skb(MAX_HEADER + headlen, GFP_KERNEL);
	u32 off = headlen, frag = 0;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, MAX_HEADER);
	skb_put_data(skb, buf, headlen);
	skb_reset_network_header(skb);
	skb_pull(skb, l3len);
	skb_reset_transport_header(skb);
	while (off < len) {
		u32 n = min(cut, len - off);
		struct page *page = alloc_pages(GFP_KERNEL | __GFP_COMP, 1);

		KUNIT_ASSERT_NOT_NULL(test, page);
		KUNIT_ASSERT_LT(test, frag, (u32)MAX_SKB_FRAGS);
		KUNIT_ASSERT_LE(test, n + 100, 2 * (u32)PAGE_SIZE);
		memcpy(page_address(page) + 100, buf + off, n);
		skb_add_rx_frag(skb, frag++, page, 100, n, 2 * PAGE_SIZE);
		off += n;
	}
	return skb;
}

static void flip_byte(struct kunit *test, struct sk_buff *skb, u32 off)
{
	u8 b;

	KUNIT_ASSERT_FALSE(test, skb_copy_bits(skb, off, &b, 1));
	b ^= 0xff;
	KUNIT_ASSERT_FALSE(test, skb_store_bits(skb, off, &b, 1));
}

/*
 * One packet of @total bytes, in a linear part of @headlen and fragments
 * of @cut: its ICRC holds, and fails once its last byte, or the last one
 * before it, changes.
 */
static void check_paged_icrc(struct kunit *test, const u8 *pkt, u32 total,
			     u32 l3, bool ipv6, u32 headlen, u32 cut)
{
	u32 len = total - SOFTRVT_ICRC_BYTES;
	struct sk_buff *skb;

	if (DIV_ROUND_UP(total - headlen, cut) > MAX_SKB_FRAGS)
		return;
	skb = paged_skb(test, pkt, total, l3, headlen, cut);
	KUNIT_EXPECT_TRUE_MSG(test, softrvt_icrc_skb_ok(skb, ipv6, len),
			      "len %u head %u cut %u", total, headlen, cut);
	flip_byte(test, skb, skb->len - 1);
	KUNIT_EXPECT_FALSE(test, softrvt_icrc_skb_ok(skb, ipv6, len));
	flip_byte(test, skb, skb->len - 1);
	flip_byte(test, skb, skb->len - SOFTRVT_ICRC_BYTES - 1);
	KUNIT_EXPECT_FALSE(test, softrvt_icrc_skb_ok(skb, ipv6, len));
	kfree_skb(skb);
}

/*
 * A packet of rxe's, then one with a 4 KiB payload, in a linear part of
 * just its headers or more, and fragments cut anywhere (across the ICRC
 * too).
 */
static void icrc_of_a_paged_packet(struct kunit *test)
{
	static const u32 cuts[] = { 1, 5, 13, 64, 300, 1000, 4096, 9000 };
	const struct rxe_vector *v = &rxe_vectors[1];
	u32 l3 = l3_len(v), hdrs = l3 + sizeof(struct udphdr) +
		 sizeof(struct softrvt_bth);
	u32 big = hdrs + 4096 + SOFTRVT_ICRC_BYTES;
	u8 *buf = kunit_kmalloc(test, big, GFP_KERNEL);
	struct sk_buff *skb;
	int j, k;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, v->data, hdrs);
	get_random_bytes(buf + hdrs, big - hdrs);
	/* The headers' lengths do not enter the check; only its bytes. */
	put_unaligned_le32(softrvt_icrc(buf, v->ipv6, big - SOFTRVT_ICRC_BYTES),
			   buf + big - SOFTRVT_ICRC_BYTES);

	for (j = 0; j < ARRAY_SIZE(cuts); j++) {
		for (k = 0; k < 3; k++) {
			check_paged_icrc(test, v->data, v->len, l3, v->ipv6,
					 hdrs + k * 17, cuts[j]);
			check_paged_icrc(test, buf, big, l3, v->ipv6,
					 hdrs + k * 17, cuts[j]);
		}
	}
	/* Shorter than its headers, or its ICRC beyond the skb: no. */
	skb = paged_skb(test, v->data, v->len, l3, hdrs, 64);
	KUNIT_EXPECT_FALSE(test, softrvt_icrc_skb_ok(skb, v->ipv6, hdrs - 1));
	KUNIT_EXPECT_FALSE(test, softrvt_icrc_skb_ok(skb, v->ipv6, v->len));
	kfree_skb(skb);
}

/*
 * Payload is copied out of a paged packet byte for byte, from any offset
 * and of any length, into a list that splits it again elsewhere.
 */
static void copy_from_a_paged_packet(struct kunit *test)
{
	static const u32 cuts[] = { 1000, 2048, 4096 };
	u32 len = 9000, l3 = sizeof(struct ipv6hdr);
	u8 *src = kunit_kmalloc(test, len, GFP_KERNEL);
	u8 *dst = kunit_kzalloc(test, len, GFP_KERNEL);
	/* Too large for the stack with its SOFTRVT_MAX_SGE entries. */
	struct softrvt_sge_state *ss = kunit_kzalloc(test, sizeof(*ss), GFP_KERNEL);
	int j, k;

	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	KUNIT_ASSERT_NOT_NULL(test, ss);
	get_random_bytes(src, len);
	for (j = 0; j < ARRAY_SIZE(cuts); j++) {
		struct sk_buff *skb = paged_skb(test, src, len, l3, 100,
						cuts[j]);
		/* Offsets from skb->data: in the linear part, in pages. */
		static const u32 offs[] = { 0, 59, 60, 61, 4000, 8800 };

		for (k = 0; k < ARRAY_SIZE(offs); k++) {
			u32 off = offs[k], n = skb->len - off, half = n / 3;

			memset(dst, 0, len);
			memset(ss, 0, sizeof(*ss));
			ss->sge[0].iova = (uintptr_t)dst;
			ss->sge[0].length = half;
			ss->sge[1].iova = (uintptr_t)dst + half;
			ss->sge[1].length = n - half;
			ss->num_sge = 2;
			ss->total_len = n;
			softrvt_copy_skb_to_sge(ss, skb, off, n);
			KUNIT_EXPECT_EQ_MSG(test, memcmp(dst, src + l3 + off, n),
					    0, "cut %u off %u", cuts[j], off);
			KUNIT_EXPECT_EQ(test, ss->cur, 2U);
		}
		kfree_skb(skb);
	}
}

/*
 * @skb, whose network header is set and whose ICRC follows its last byte,
 * as the receive path queues a packet whose ICRC it left to the engine:
 * data at the BTH, the ICRC it carried in its softrvt_pkt and trimmed off.
 */
static void queue_unchecked(struct kunit *test, struct sk_buff *skb,
			    bool ipv6)
{
	u32 hlen = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct udphdr);
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	u32 len = skb->len + (skb->data - skb_network_header(skb)) -
		  SOFTRVT_ICRC_BYTES;

	KUNIT_ASSERT_TRUE(test, softrvt_icrc_carried(skb, len, &pkt->icrc));
	skb_pull(skb, skb_network_header(skb) + hlen - skb->data);
	KUNIT_ASSERT_EQ(test, pskb_trim(skb, skb->len - SOFTRVT_ICRC_BYTES), 0);
	pkt->ipv6 = ipv6;
	pkt->icrc_ok = false;
}

/*
 * The engine's check of a packet the receive path left to it passes
 * rxe's packets, linear and paged, and fails them with any byte the ICRC
 * covers changed (payload, BTH) or another ICRC carried.  A failed check
 * is not remembered as a pass; a passed one is not made again.
 */
static void rx_icrc_checked_by_the_engine(struct kunit *test)
{
	int i, paged;

	for (i = 0; i < ARRAY_SIZE(rxe_vectors); i++) {
		const struct rxe_vector *v = &rxe_vectors[i];
		u32 hdrs = l3_len(v) + sizeof(struct udphdr) +
			   sizeof(struct softrvt_bth);

		for (paged = 0; paged < 2; paged++) {
			struct sk_buff *skb;
			struct softrvt_pkt *pkt;

			skb = paged_skb(test, v->data, v->len, l3_len(v),
					paged ? hdrs + 4 : v->len, 16);
			queue_unchecked(test, skb, v->ipv6);
			pkt = softrvt_pkt_of(skb);
			KUNIT_EXPECT_TRUE_MSG(test, softrvt_rx_icrc_ok(skb),
					      "%s, paged %d", v->name, paged);
			pkt->icrc_ok = false;
			flip_byte(test, skb, skb->len - 1);
			KUNIT_EXPECT_FALSE(test, softrvt_rx_icrc_ok(skb));
			flip_byte(test, skb, skb->len - 1);
			flip_byte(test, skb, 7);	/* the BTH's QPN */
			KUNIT_EXPECT_FALSE(test, softrvt_rx_icrc_ok(skb));
			flip_byte(test, skb, 7);
			pkt->icrc ^= 0x10;
			KUNIT_EXPECT_FALSE(test, softrvt_rx_icrc_ok(skb));
			KUNIT_EXPECT_FALSE(test, softrvt_rx_icrc_ok(skb));
			pkt->icrc ^= 0x10;
			KUNIT_EXPECT_TRUE(test, softrvt_rx_icrc_ok(skb));
			flip_byte(test, skb, skb->len - 1);
			KUNIT_EXPECT_TRUE(test, softrvt_rx_icrc_ok(skb));
			kfree_skb(skb);
		}
	}
}

/* rxe's packets parse into what the pingpong programs sent. */
static void parse_rxe_packets(struct kunit *test)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(rxe_vectors); i++) {
		const struct rxe_vector *v = &rxe_vectors[i];
		u32 off = l3_len(v) + sizeof(struct udphdr);
		struct softrvt_pkt pkt;
		bool ud = v->name[0] == 'u';

		KUNIT_ASSERT_EQ(test, softrvt_parse_bth(v->data + off, v->len - off,
							&pkt), 0);
		KUNIT_EXPECT_EQ(test, get_unaligned_be16(v->data + l3_len(v) + 2),
				SOFTRVT_ROCE_V2_UDP_DPORT);
		KUNIT_EXPECT_EQ(test, pkt.opcode, ud ?
				IB_OPCODE_UD | IB_OPCODE_SEND_ONLY :
				IB_OPCODE_RC | IB_OPCODE_SEND_ONLY);
		KUNIT_EXPECT_EQ(test, pkt.qpn, 0x11);
		KUNIT_EXPECT_EQ(test, pkt.pkey, 0xffff);
		KUNIT_EXPECT_EQ(test, pkt.payload_len, 64);
		KUNIT_EXPECT_EQ(test, pkt.hdr_len, ud ? 20 : 12);
		KUNIT_EXPECT_EQ(test, pkt.ackreq, !ud);
		if (ud)	/* the pingpongs' Q_Key */
			KUNIT_EXPECT_EQ(test,
					get_unaligned_be32(v->data + off + 12),
					0x11111111);
	}
}

static void bth_round_trip(struct kunit *test)
{
	u8 buf[sizeof(struct softrvt_bth) + sizeof(struct softrvt_reth) + 8 + 2 +
	       SOFTRVT_ICRC_BYTES] = {};
	struct softrvt_pkt pkt;

	softrvt_build_bth((struct softrvt_bth *)buf,
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

	KUNIT_ASSERT_EQ(test, softrvt_parse_bth(buf, sizeof(buf), &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, 0x0a);
	KUNIT_EXPECT_TRUE(test, pkt.se);
	KUNIT_EXPECT_TRUE(test, pkt.ackreq);
	KUNIT_EXPECT_EQ(test, pkt.pad, 2);
	KUNIT_EXPECT_EQ(test, pkt.pkey, 0xffff);
	KUNIT_EXPECT_EQ(test, pkt.qpn, 0xabcdef);
	KUNIT_EXPECT_EQ(test, pkt.psn, 0xfffffe);
	KUNIT_EXPECT_EQ(test, pkt.hdr_len, 12 + 16);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 8);
	KUNIT_EXPECT_TRUE(test, pkt.mask & SOFTRVT_HDR_RETH);

	/* Out-of-range fields are masked, never spilled into neighbours. */
	softrvt_build_bth((struct softrvt_bth *)buf, IB_OPCODE_UD | IB_OPCODE_SEND_ONLY,
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
		/* BTH, FETH, RETH; BTH, RETH and 8 bytes of payload. */
		{ IB_OPCODE_RC | IB_OPCODE_FLUSH, 32 },
		{ IB_OPCODE_RC | IB_OPCODE_ATOMIC_WRITE, 28 },
		{ IB_OPCODE_UC | IB_OPCODE_RDMA_WRITE_ONLY, 28 },
		{ IB_OPCODE_UD | IB_OPCODE_SEND_ONLY, 20 },
		{ IB_OPCODE_UD | IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE, 24 },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		u16 mask;

		KUNIT_ASSERT_EQ(test, softrvt_opcode_info(cases[i].opcode, &mask),
				0);
		KUNIT_EXPECT_EQ_MSG(test, softrvt_hdr_len(mask), cases[i].len,
				    "opcode 0x%02x", cases[i].opcode);
	}
}

static void malformed_packets_rejected(struct kunit *test)
{
	u8 buf[64] = {};
	struct softrvt_pkt pkt;
	u16 mask;

	/* Opcodes softrvt does not speak. */
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_UD | IB_OPCODE_SEND_FIRST,
						  &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_UC |
						  IB_OPCODE_RDMA_READ_REQUEST,
						  &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_RD | IB_OPCODE_SEND_ONLY,
						  &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_CNP, &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_RC | 0x15, &mask),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_UC | IB_OPCODE_FLUSH,
						  &mask), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_opcode_info(IB_OPCODE_UC |
						  IB_OPCODE_ATOMIC_WRITE, &mask),
			-EINVAL);

	/* Shorter than a BTH and ICRC, or than the opcode's headers. */
	softrvt_build_bth((void *)buf, IB_OPCODE_RC | IB_OPCODE_SEND_ONLY, false, 0,
			  0xffff, 5, false, 1);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 15, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 16, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 0);
	buf[0] = IB_OPCODE_RC | IB_OPCODE_RDMA_READ_REQUEST;
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 16 + 3, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 16 + 4, &pkt), 0);
	/* Payload on an opcode that carries none. */
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 16 + 4 + 4, &pkt),
			-EINVAL);
	buf[0] = IB_OPCODE_RC | IB_OPCODE_FLUSH;
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 4 + 16 + 4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 4 + 16 + 8 + 4, &pkt),
			-EINVAL);

	/* A pad count larger than the payload. */
	softrvt_build_bth((void *)buf, IB_OPCODE_RC | IB_OPCODE_SEND_ONLY, false, 3,
			  0xffff, 5, false, 1);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 2 + 4, &pkt), -EINVAL);
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 4 + 4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.payload_len, 1);

	/* A transport version other than 0. */
	buf[1] |= 0x01;
	KUNIT_EXPECT_EQ(test, softrvt_parse_bth(buf, 12 + 4 + 4, &pkt), -EINVAL);
}

static void psn_arithmetic_wraps(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, softrvt_psn_add(0xffffff, 1), 0);
	KUNIT_EXPECT_EQ(test, softrvt_psn_add(0xfffffe, 5), 3);
	KUNIT_EXPECT_EQ(test, softrvt_psn_cmp(5, 5), 0);
	KUNIT_EXPECT_GT(test, softrvt_psn_cmp(0, 0xffffff), 0);
	KUNIT_EXPECT_LT(test, softrvt_psn_cmp(0xffffff, 0), 0);
	KUNIT_EXPECT_GT(test, softrvt_psn_cmp(3, 0xfffffe), 0);
	KUNIT_EXPECT_EQ(test, softrvt_psn_cmp(3, 0xfffffe), 5);
	KUNIT_EXPECT_EQ(test, softrvt_psn_cmp(0xfffffe, 3), -5);
	/* Half the space ahead is "after", the other half "before". */
	KUNIT_EXPECT_GT(test, softrvt_psn_cmp(0x7fffff, 0), 0);
	KUNIT_EXPECT_LT(test, softrvt_psn_cmp(0x800001, 0), 0);
	/* Bits above the 24 are ignored. */
	KUNIT_EXPECT_EQ(test, softrvt_psn_cmp(0x1000005, 5), 0);
}

/*
 * The requester's map of answers placed past comp.acked_psn: bits follow
 * their PSNs across the 24-bit wrap, PSNs past the 64 it covers are not
 * recorded, and moving the base consumes exactly the run of bits.
 */
static void psn_map_tracks_answers_across_the_wrap(struct kunit *test)
{
	u32 base = 0xfffffd;	/* comp.acked_psn */
	u64 map = 0;
	u32 run;

	map = softrvt_psn_map_set(map, base, 0xffffff);	/* bit 1 */
	map = softrvt_psn_map_set(map, base, 0);		/* bit 2 */
	map = softrvt_psn_map_set(map, base, 3);		/* bit 5 */
	KUNIT_EXPECT_EQ(test, map, 0x26ULL);
	KUNIT_EXPECT_TRUE(test, softrvt_psn_map_test(map, base, 0));
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(map, base, 0xfffffe));
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(map, base, 1));
	/* The base itself and what lies before it are never in the map. */
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(U64_MAX, base, base));
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(U64_MAX, base, 0xfffff0));
	/* 64 PSNs past the base is the last one recorded, 65 is not. */
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_set(0, base, softrvt_psn_add(base, 64)),
			BIT_ULL(63));
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_set(0, base, softrvt_psn_add(base, 65)),
			0ULL);
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(U64_MAX, base,
						      softrvt_psn_add(base, 65)));

	/* No run while base + 1 (0xfffffe) is missing. */
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_run(map), 0U);
	/* 0xfffffe comes in order: the base moves over it and the run. */
	map = softrvt_psn_map_shift(map, 1);
	base = softrvt_psn_add(base, 1);
	run = softrvt_psn_map_run(map);
	KUNIT_EXPECT_EQ(test, run, 2U);
	map = softrvt_psn_map_shift(map, run);
	base = softrvt_psn_add(base, run);
	KUNIT_EXPECT_EQ(test, base, 0U);
	KUNIT_EXPECT_TRUE(test, softrvt_psn_map_test(map, base, 3));
	KUNIT_EXPECT_FALSE(test, softrvt_psn_map_test(map, base, 2));

	KUNIT_EXPECT_EQ(test, softrvt_psn_map_run(U64_MAX), 64U);
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_run(0x7fffffffffffffffULL), 63U);
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_shift(U64_MAX, 64), 0ULL);
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_shift(U64_MAX, 1000), 0ULL);
	KUNIT_EXPECT_EQ(test, softrvt_psn_map_shift(0x30ULL, 4), 3ULL);
}

/* A train of RC SEND packets to QP 0x123, the last one shorter. */
#define TRAIN_PKTS	5
#define TRAIN_MTU	1024
#define TRAIN_LAST	100

static u8 train_byte(u32 pkt, u32 i)
{
	return pkt * 37 + i * 11;
}

static struct sk_buff *train_skb(struct kunit *test, u32 seg_len, u32 ulen)
{
	u32 head = MAX_HEADER + sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sk_buff *skb = alloc_skb(head + ulen, GFP_KERNEL);
	struct ipv6hdr *ip6h;
	struct udphdr *udph;
	u8 *p;
	u32 i, j;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, head);
	p = skb_put(skb, ulen);
	for (i = 0; i < TRAIN_PKTS; i++) {
		bool last = i == TRAIN_PKTS - 1;
		u32 len = last ? TRAIN_LAST : TRAIN_MTU;

		softrvt_build_bth((struct softrvt_bth *)p, IB_OPCODE_RC |
				  (last ? IB_OPCODE_SEND_LAST :
				   i ? IB_OPCODE_SEND_MIDDLE : IB_OPCODE_SEND_FIRST),
				  false, 0, 0xffff, 0x123, last, 1000 + i);
		for (j = 0; j < len; j++)
			p[sizeof(struct softrvt_bth) + j] = train_byte(i, j);
		p += seg_len;
	}

	udph = skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph->source = htons(0xc123);
	udph->dest = htons(SOFTRVT_ROCE_V2_UDP_DPORT);
	udph->len = htons(sizeof(*udph) + ulen);
	udph->check = 0;
	ip6h = skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6_flow_hdr(ip6h, 0x20, htonl(0x12345));
	ip6h->payload_len = udph->len;
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = 64;
	/* 2001:2::1 to 2001:2::2, the benchmarking range of RFC 5180. */
	ipv6_addr_set(&ip6h->saddr, htonl(0x20010002), 0, 0, htonl(1));
	ipv6_addr_set(&ip6h->daddr, htonl(0x20010002), 0, 0, htonl(2));
	skb->protocol = htons(ETH_P_IPV6);
	return skb;
}

/*
 * The kernel's own segmenter cuts a sealed train into the datagrams of
 * its packets, in order, each with an ICRC that holds for the IPv6 and
 * UDP headers the segmenter gave it.
 */
static void train_segments_carry_their_icrc(struct kunit *test)
{
	u32 seg_len = sizeof(struct softrvt_bth) + TRAIN_MTU + SOFTRVT_ICRC_BYTES;
	u32 ulen = (TRAIN_PKTS - 1) * seg_len + sizeof(struct softrvt_bth) +
		   TRAIN_LAST + SOFTRVT_ICRC_BYTES;
	u32 hlen = sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sk_buff *skb = train_skb(test, seg_len, ulen);
	struct sk_buff *segs, *seg, *next;
	u32 i = 0, j;

	softrvt_train_seal(skb, seg_len);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->gso_segs, TRAIN_PKTS);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->gso_size, seg_len);
	segs = skb_gso_segment(skb, NETIF_F_SG);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(segs));
	consume_skb(skb);

	skb_list_walk_safe(segs, seg, next) {
		u32 want = (i < TRAIN_PKTS - 1 ? TRAIN_MTU : TRAIN_LAST);
		u8 *l3, *payload;
		struct softrvt_pkt pkt;
		u32 len;

		skb_mark_not_on_list(seg);
		if (i >= TRAIN_PKTS || skb_linearize(seg)) {
			KUNIT_FAIL(test, "segment %u: one too many, or nonlinear", i);
			kfree_skb(seg);
			continue;
		}
		l3 = skb_network_header(seg);
		len = skb_tail_pointer(seg) - l3;
		KUNIT_EXPECT_EQ(test, len, hlen + sizeof(struct softrvt_bth) + want +
				SOFTRVT_ICRC_BYTES);
		KUNIT_EXPECT_EQ(test, ntohs(udp_hdr(seg)->len),
				len - sizeof(struct ipv6hdr));
		KUNIT_EXPECT_EQ_MSG(test, softrvt_icrc(l3, true, len - SOFTRVT_ICRC_BYTES),
				    get_unaligned_le32(l3 + len - SOFTRVT_ICRC_BYTES),
				    "segment %u", i);
		KUNIT_EXPECT_EQ(test, softrvt_parse_bth(l3 + hlen, len - hlen, &pkt),
				0);
		KUNIT_EXPECT_EQ(test, pkt.psn, 1000 + i);
		payload = l3 + hlen + sizeof(struct softrvt_bth);
		for (j = 0; j < want; j++)
			if (payload[j] != train_byte(i, j))
				break;
		KUNIT_EXPECT_EQ_MSG(test, j, want, "segment %u's payload", i);
		kfree_skb(seg);
		i++;
	}
	KUNIT_EXPECT_EQ(test, i, TRAIN_PKTS);
}

/*
 * A packet joins a train only as the segmenter will cut it again: as long
 * as the first, or shorter and the last; within the path's byte and
 * segment limits; never one without a header layout.
 */
static void train_take_follows_the_segmenter(struct kunit *test)
{
	const struct softrvt_train_limit lim = { .bytes = 3 * 4108, .segs = 2 };
	const struct softrvt_train_limit none = {};
	u32 bytes = 0;

	KUNIT_EXPECT_TRUE(test, softrvt_train_take(&lim, 0, 4108, 4108, false,
						   &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 4108);
	/* Longer than the first, or shorter but not the message's last. */
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&lim, 1, 4108, 4112, false,
						    &bytes));
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&lim, 1, 4108, 100, false,
						    &bytes));
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&lim, 1, 4108, 0, true,
						    &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 4108);
	KUNIT_EXPECT_TRUE(test, softrvt_train_take(&lim, 1, 4108, 100, true,
						   &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 4208);
	/* The path's segment limit, then its byte limit. */
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&lim, 2, 4108, 4108, false,
						    &bytes));
	bytes = 2 * 4108 + 1;
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&lim, 1, 4108, 4108, false,
						    &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 2 * 4108 + 1);
	bytes = 2 * 4108;
	KUNIT_EXPECT_TRUE(test, softrvt_train_take(&lim, 1, 4108, 4108, true,
						   &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 3 * 4108);
	/* A path that takes no trains. */
	bytes = 0;
	KUNIT_EXPECT_FALSE(test, softrvt_train_take(&none, 0, 4108, 4108, false,
						    &bytes));
	KUNIT_EXPECT_EQ(test, bytes, 0);
}

/*
 * A packet softrvt sends is known in the receive path by the mark
 * softrvt_tx_begin() puts on it, not by its address: while this CPU is inside
 * that transmit, it and the segments the stack cuts from it (a train)
 * leave their ICRC to the engine; another skb, even one at the address of
 * a sent one freed meanwhile, a tunnel's packet whose inner protocol is
 * RoCE's, and the same packets once the transmit returned, are checked
 * in the receive path.
 */
static void rx_sent_here_by_the_mark(struct kunit *test)
{
	u32 seg_len = sizeof(struct softrvt_bth) + TRAIN_MTU + SOFTRVT_ICRC_BYTES;
	u32 ulen = (TRAIN_PKTS - 1) * seg_len + sizeof(struct softrvt_bth) +
		   TRAIN_LAST + SOFTRVT_ICRC_BYTES;
	struct sk_buff *skb = train_skb(test, seg_len, ulen);
	struct sk_buff *gone = alloc_skb(64, GFP_KERNEL);
	struct sk_buff *tunnel = alloc_skb(64, GFP_KERNEL);
	struct sk_buff *segs, *seg, *next, *again;
	bool sent_gone, again_here, tunnel_here, nested, segs_here = true;
	unsigned int n = 0;

	KUNIT_ASSERT_NOT_NULL(test, gone);
	KUNIT_ASSERT_NOT_NULL(test, tunnel);
	tunnel->encapsulation = 1;
	skb_set_inner_protocol(tunnel, htons(ETH_P_IBOE));
	softrvt_train_seal(skb, seg_len);
	KUNIT_EXPECT_FALSE(test, softrvt_rx_sent_here(skb));

	/* No assertion in here: it would leave migration disabled. */
	migrate_disable();
	softrvt_tx_begin(gone);
	sent_gone = softrvt_rx_sent_here(gone);
	kfree_skb(gone);
	/* Most often where the slab puts the next skb. */
	again = alloc_skb(64, GFP_ATOMIC);
	again_here = again && softrvt_rx_sent_here(again);
	tunnel_here = softrvt_rx_sent_here(tunnel);
	softrvt_tx_begin(skb);
	softrvt_tx_end();
	nested = softrvt_rx_sent_here(skb);
	segs = skb_gso_segment(skb, NETIF_F_SG);
	if (!IS_ERR_OR_NULL(segs))
		skb_list_walk_safe(segs, seg, next) {
			segs_here &= softrvt_rx_sent_here(seg);
			n++;
		}
	softrvt_tx_end();
	migrate_enable();

	KUNIT_EXPECT_TRUE(test, sent_gone);
	KUNIT_EXPECT_FALSE(test, again_here);
	KUNIT_EXPECT_FALSE(test, tunnel_here);
	KUNIT_EXPECT_TRUE_MSG(test, nested, "an engine preempted this one");
	KUNIT_EXPECT_EQ(test, n, TRAIN_PKTS);
	KUNIT_EXPECT_TRUE(test, segs_here);
	KUNIT_EXPECT_FALSE(test, softrvt_rx_sent_here(skb));
	if (!IS_ERR_OR_NULL(segs))
		skb_list_walk_safe(segs, seg, next) {
			KUNIT_EXPECT_FALSE(test, softrvt_rx_sent_here(seg));
			skb_mark_not_on_list(seg);
			kfree_skb(seg);
		}
	kfree_skb(again);
	kfree_skb(tunnel);
	kfree_skb(skb);
}

static struct kunit_case softrvt_wire_cases[] = {
	KUNIT_CASE(icrc_matches_rxe),
	KUNIT_CASE(icrc_covers_the_invariant_fields),
	KUNIT_CASE(icrc_chosen_crc32_agrees),
	KUNIT_CASE(icrc_by_each_crc32_driver),
	KUNIT_CASE(icrc_of_a_paged_packet),
	KUNIT_CASE(copy_from_a_paged_packet),
	KUNIT_CASE(rx_icrc_checked_by_the_engine),
	KUNIT_CASE(parse_rxe_packets),
	KUNIT_CASE(bth_round_trip),
	KUNIT_CASE(header_lengths),
	KUNIT_CASE(malformed_packets_rejected),
	KUNIT_CASE(psn_arithmetic_wraps),
	KUNIT_CASE(psn_map_tracks_answers_across_the_wrap),
	KUNIT_CASE(train_segments_carry_their_icrc),
	KUNIT_CASE(train_take_follows_the_segmenter),
	KUNIT_CASE(rx_sent_here_by_the_mark),
	{}
};

static struct kunit_suite softrvt_wire_suite = {
	.name = "softrvt_wire",
	.test_cases = softrvt_wire_cases,
};

kunit_test_suites(&softrvt_wire_suite);
