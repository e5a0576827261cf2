/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 transport headers: the IBA base and extended transport headers
 * (IBA vol. 1, 9.2 to 9.5) carried in UDP to port 4791 (annex A17).
 * All fields are big endian on the wire.
 */
#ifndef SOFTRVT_HDR_H
#define SOFTRVT_HDR_H

#include <linux/bitops.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <rdma/ib_pack.h>

#define SOFTRVT_ROCE_V2_UDP_DPORT	4791
#define SOFTRVT_ICRC_BYTES		4
/* The XRC transport's opcodes (IBA 9.2.1), which <rdma/ib_pack.h> lacks. */
#define SOFTRVT_OPCODE_XRC		0xa0

struct softrvt_bth {
	u8 opcode;
	u8 flags;			/* SE:1 MigReq:1 PadCnt:2 TVer:4 */
	__be16 pkey;
	__be32 qpn;			/* FECN:1 BECN:1 resv:6 DestQP:24 */
	__be32 apsn;			/* AckReq:1 resv:7 PSN:24 */
};

struct softrvt_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

struct softrvt_aeth {
	__be32 smsn;			/* Syndrome:8 MSN:24 */
};

struct softrvt_deth {
	__be32 qkey;
	__be32 sqp;			/* resv:8 SrcQP:24 */
};

struct softrvt_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

struct softrvt_atmack {
	__be64 orig;
} __packed;

/*
 * The FLUSH extended transport header (IBA 1.5 annex A19, memory
 * placement extensions), before the RETH of a FLUSH: what the flush makes
 * the data (its placement type, IB_FLUSH_GLOBAL and IB_FLUSH_PERSISTENT
 * bits) and of what (selectivity: IB_FLUSH_RANGE, the RETH's range, or
 * IB_FLUSH_MR, the whole region).
 */
struct softrvt_feth {
	__be32 bits;			/* resv:26 SEL:2 PLT:4 */
};

#define SOFTRVT_FETH_PLT_MASK	0x0000000f
#define SOFTRVT_FETH_SEL_MASK	0x00000030
#define SOFTRVT_FETH_SEL_SHIFT	4

/* Right after the BTH of every XRC request (IBA 9.3.x). */
struct softrvt_xrceth {
	__be32 srqn;			/* resv:8 XRCSRQ:24 */
};

#define SOFTRVT_XRC_SRQN_MASK	0x00ffffff

#define SOFTRVT_BTH_SE		0x80
#define SOFTRVT_BTH_MIG		0x40
#define SOFTRVT_BTH_PAD_SHIFT	4
#define SOFTRVT_BTH_PAD_MASK	0x30
#define SOFTRVT_BTH_TVER_MASK	0x0f
#define SOFTRVT_BTH_ACKREQ		0x80000000
#define SOFTRVT_BTH_QPN_MASK	0x00ffffff
#define SOFTRVT_BTH_PSN_MASK	0x00ffffff

/* AETH syndromes, IBA 9.7.5.2.2. */
#define SOFTRVT_AETH_TYPE_MASK	0x60
#define SOFTRVT_AETH_ACK		0x00
#define SOFTRVT_AETH_RNR_NAK	0x20
#define SOFTRVT_AETH_NAK		0x60
#define SOFTRVT_AETH_VALUE_MASK	0x1f
#define SOFTRVT_NAK_PSN_SEQ		0
#define SOFTRVT_NAK_INV_REQ		1
#define SOFTRVT_NAK_REM_ACCESS	2
#define SOFTRVT_NAK_REM_OP		3
#define SOFTRVT_NAK_INV_RD_REQ	4
/* Credits field of an ACK that does not use end-to-end flow control. */
#define SOFTRVT_AETH_NO_CREDIT	0x1f

/* Which headers follow the BTH, for each opcode (softrvt_opcode_info()). */
enum {
	SOFTRVT_HDR_RETH	= BIT(0),
	SOFTRVT_HDR_AETH	= BIT(1),
	SOFTRVT_HDR_DETH	= BIT(2),
	SOFTRVT_HDR_IMMDT	= BIT(3),
	SOFTRVT_HDR_IETH	= BIT(4),
	SOFTRVT_HDR_ATMETH	= BIT(5),
	SOFTRVT_HDR_ATMACK	= BIT(6),
	SOFTRVT_HDR_PAYLOAD	= BIT(7),	/* may carry payload */
	SOFTRVT_HDR_XRCETH	= BIT(8),
	SOFTRVT_HDR_FETH	= BIT(9),
};

/* A parsed transport packet: offsets from the start of the BTH. */
struct softrvt_pkt {
	u8 opcode;
	u16 mask;			/* SOFTRVT_HDR_* present */
	u32 qpn;
	u32 psn;
	u32 srqn;			/* the XRCETH's, 0 without one */
	u16 pkey;
	u8 pad;
	bool se;
	bool ackreq;
	u16 hdr_len;			/* BTH and extended headers */
	u32 payload_len;		/* without pad and ICRC */
	bool ipv6;			/* received: the IP version */
	bool icrc_ok;			/* received: the ICRC was checked */
	u32 icrc;			/* received: the ICRC it carried */
};

/* The parsed headers of a received packet, kept in its control block. */
static inline struct softrvt_pkt *softrvt_pkt_of(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct softrvt_pkt) > sizeof(skb->cb));
	return (struct softrvt_pkt *)skb->cb;
}

/*
 * The one partition of a RoCE port is the default one, of which softrvt is
 * a full member: a packet may carry its full (0xffff) or limited (0x7fff)
 * P_Key, nothing else (IBA 10.9.3, two limited members do not talk).
 */
static inline bool softrvt_pkey_ok(u16 pkey)
{
	return (pkey & 0x7fff) == 0x7fff;
}

/* 24-bit PSN arithmetic: the sign of a - b across the wrap. */
static inline int softrvt_psn_cmp(u32 a, u32 b)
{
	return ((int)((a - b) << 8)) >> 8;
}

static inline u32 softrvt_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SOFTRVT_BTH_PSN_MASK;
}

/*
 * A map of the 64 PSNs after a base PSN: bit i stands for base + 1 + i.
 * The requester keeps one of the answers it placed beyond comp.acked_psn.
 */
static inline u64 softrvt_psn_map_shift(u64 map, u32 n)
{
	return n >= 64 ? 0 : map >> n;
}

/* How many PSNs right after the base the map holds, without a gap. */
static inline u32 softrvt_psn_map_run(u64 map)
{
	return map == U64_MAX ? 64 : __ffs64(~map);
}

static inline bool softrvt_psn_map_test(u64 map, u32 base, u32 psn)
{
	u32 bit = (psn - base - 1) & SOFTRVT_BTH_PSN_MASK;

	return bit < 64 && (map & BIT_ULL(bit));
}

/* A PSN past the 64 the map covers is not recorded. */
static inline u64 softrvt_psn_map_set(u64 map, u32 base, u32 psn)
{
	u32 bit = (psn - base - 1) & SOFTRVT_BTH_PSN_MASK;

	return bit < 64 ? map | BIT_ULL(bit) : map;
}

/*
 * The answers of the reliable transports: READ responses, ACKs and atomic
 * ACKs, whatever the transport (RC or XRC).
 */
static inline bool softrvt_opcode_is_response(u8 opcode)
{
	u8 op = opcode & 0x1f;

	return op >= IB_OPCODE_RDMA_READ_RESPONSE_FIRST &&
	       op <= IB_OPCODE_ATOMIC_ACKNOWLEDGE;
}

/* Where the headers after the BTH and the XRCETH start. */
static inline u32 softrvt_ext_hdr_off(u16 mask)
{
	return sizeof(struct softrvt_bth) +
	       (mask & SOFTRVT_HDR_XRCETH ? sizeof(struct softrvt_xrceth) : 0);
}

int softrvt_opcode_info(u8 opcode, u16 *mask);
int softrvt_hdr_len(u16 mask);

/* The pad that brings a payload of @len bytes to a multiple of four. */
static inline u32 softrvt_pad_bytes(u32 len)
{
	return (4 - len) & 3;
}

/* A packet's bytes from its BTH to the end of its pad. */
static inline u32 softrvt_pkt_bytes_of(u32 hdr_len, u32 len)
{
	return hdr_len + len + softrvt_pad_bytes(len);
}

static inline u32 softrvt_pkt_bytes(u16 mask, u32 len)
{
	return softrvt_pkt_bytes_of(softrvt_hdr_len(mask), len);
}

int softrvt_parse_bth(const void *buf, u32 len, struct softrvt_pkt *pkt);
void softrvt_grh_place(u8 *grh, const void *iph, bool ipv6);
void softrvt_build_bth(struct softrvt_bth *bth, u8 opcode, bool se, u8 pad, u16 pkey,
		       u32 qpn, bool ackreq, u32 psn);
u32 softrvt_icrc(const u8 *l3, bool ipv6, u32 len);
#if IS_ENABLED(CONFIG_KUNIT)
struct crypto_shash;
u32 softrvt_icrc_by(struct crypto_shash *tfm, const u8 *l3, bool ipv6, u32 len);
#endif
u32 softrvt_icrc_split(const u8 *l3, bool ipv6, const u8 *bth, u32 len);
struct sk_buff;
bool softrvt_icrc_skb(struct sk_buff *skb, bool ipv6, u32 len, u32 *icrc);
bool softrvt_icrc_carried(const struct sk_buff *skb, u32 len, u32 *icrc);
bool softrvt_icrc_skb_ok(struct sk_buff *skb, bool ipv6, u32 len);

#endif /* SOFTRVT_HDR_H */
