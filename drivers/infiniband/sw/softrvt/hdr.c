// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building and parsing RoCEv2 transport headers.  The parser is the first
 * thing a received packet meets: it trusts nothing in the packet and
 * rejects what does not add up before anything else reads it.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>

#include "softrvt.h"
#include "hdr.h"

/*
 * The low five bits of an opcode name the operation, the top three the
 * transport; this table is indexed by the operation.
 */
static const u16 softrvt_op_mask[32] = {
	[IB_OPCODE_SEND_FIRST] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_MIDDLE] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_LAST] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_LAST_WITH_IMMEDIATE] = SOFTRVT_HDR_IMMDT | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE] = SOFTRVT_HDR_IMMDT | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_FIRST] = SOFTRVT_HDR_RETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_MIDDLE] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_LAST] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE] = SOFTRVT_HDR_IMMDT |
						     SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_ONLY] = SOFTRVT_HDR_RETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE] = SOFTRVT_HDR_RETH |
						     SOFTRVT_HDR_IMMDT |
						     SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_REQUEST] = SOFTRVT_HDR_RETH,
	[IB_OPCODE_RDMA_READ_RESPONSE_FIRST] = SOFTRVT_HDR_AETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE] = SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_LAST] = SOFTRVT_HDR_AETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_ONLY] = SOFTRVT_HDR_AETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_ACKNOWLEDGE] = SOFTRVT_HDR_AETH,
	[IB_OPCODE_ATOMIC_ACKNOWLEDGE] = SOFTRVT_HDR_AETH | SOFTRVT_HDR_ATMACK,
	[IB_OPCODE_COMPARE_SWAP] = SOFTRVT_HDR_ATMETH,
	[IB_OPCODE_FETCH_ADD] = SOFTRVT_HDR_ATMETH,
	[IB_OPCODE_SEND_LAST_WITH_INVALIDATE] = SOFTRVT_HDR_IETH | SOFTRVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY_WITH_INVALIDATE] = SOFTRVT_HDR_IETH | SOFTRVT_HDR_PAYLOAD,
	/* The memory placement extensions; both are answered like a READ. */
	[IB_OPCODE_FLUSH] = SOFTRVT_HDR_FETH | SOFTRVT_HDR_RETH,
	[IB_OPCODE_ATOMIC_WRITE] = SOFTRVT_HDR_RETH | SOFTRVT_HDR_PAYLOAD,
};

/**
 * softrvt_opcode_info - the headers an opcode carries
 * @opcode: the BTH opcode
 * @mask: set to its SOFTRVT_HDR_* bits
 *
 * RC and XRC carry every operation of the table, UC sends and RDMA
 * writes, UD only SEND_ONLY with or without immediate; every other opcode
 * (RD, CNP, vendor) is refused.  An XRC request carries an XRCETH, its
 * answers do not.
 *
 * Return: 0, or -EINVAL for an opcode softrvt does not speak.
 */
int softrvt_opcode_info(u8 opcode, u16 *mask)
{
	u8 op = opcode & 0x1f;

	switch (opcode & 0xe0) {
	case IB_OPCODE_RC:
		break;
	case SOFTRVT_OPCODE_XRC:
		if (!softrvt_op_mask[op])
			return -EINVAL;
		*mask = softrvt_op_mask[op];
		if (!softrvt_opcode_is_response(opcode))
			*mask |= SOFTRVT_HDR_XRCETH;
		return 0;
	case IB_OPCODE_UC:
		if (op > IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
			return -EINVAL;
		break;
	case IB_OPCODE_UD:
		if (op != IB_OPCODE_SEND_ONLY &&
		    op != IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE)
			return -EINVAL;
		*mask = softrvt_op_mask[op] | SOFTRVT_HDR_DETH;
		return 0;
	default:
		return -EINVAL;
	}
	if (!softrvt_op_mask[op])
		return -EINVAL;
	*mask = softrvt_op_mask[op];
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_opcode_info);

/**
 * softrvt_hdr_len - bytes of BTH and extended headers
 * @mask: SOFTRVT_HDR_* bits
 *
 * Return: the length.
 */
int softrvt_hdr_len(u16 mask)
{
	int len = sizeof(struct softrvt_bth);

	/* The order on the wire; only the lengths matter here. */
	if (mask & SOFTRVT_HDR_XRCETH)
		len += sizeof(struct softrvt_xrceth);
	if (mask & SOFTRVT_HDR_DETH)
		len += sizeof(struct softrvt_deth);
	if (mask & SOFTRVT_HDR_FETH)
		len += sizeof(struct softrvt_feth);
	if (mask & SOFTRVT_HDR_RETH)
		len += sizeof(struct softrvt_reth);
	if (mask & SOFTRVT_HDR_ATMETH)
		len += sizeof(struct softrvt_atmeth);
	if (mask & SOFTRVT_HDR_AETH)
		len += sizeof(struct softrvt_aeth);
	if (mask & SOFTRVT_HDR_ATMACK)
		len += sizeof(struct softrvt_atmack);
	if (mask & SOFTRVT_HDR_IMMDT)
		len += sizeof(__be32);
	if (mask & SOFTRVT_HDR_IETH)
		len += sizeof(__be32);
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_hdr_len);

/**
 * softrvt_parse_bth - check and decode the transport headers of a packet
 * @buf: the UDP payload: BTH, extended headers, payload, pad, ICRC
 * @len: its length
 * @pkt: filled in on success
 *
 * Return: 0, or -EINVAL for a packet to drop: too short for its headers
 * and ICRC, an unknown opcode or transport version, or a pad count larger
 * than the payload, or payload on an opcode that carries none.
 */
int softrvt_parse_bth(const void *buf, u32 len, struct softrvt_pkt *pkt)
{
	const struct softrvt_bth *bth = buf;
	u32 rest;
	int hlen;

	if (len < sizeof(*bth) + SOFTRVT_ICRC_BYTES)
		return -EINVAL;
	if (bth->flags & SOFTRVT_BTH_TVER_MASK)
		return -EINVAL;
	if (softrvt_opcode_info(bth->opcode, &pkt->mask))
		return -EINVAL;
	hlen = softrvt_hdr_len(pkt->mask);
	if (len < hlen + SOFTRVT_ICRC_BYTES)
		return -EINVAL;

	pkt->opcode = bth->opcode;
	pkt->se = bth->flags & SOFTRVT_BTH_SE;
	pkt->pad = (bth->flags & SOFTRVT_BTH_PAD_MASK) >> SOFTRVT_BTH_PAD_SHIFT;
	pkt->pkey = be16_to_cpu(bth->pkey);
	pkt->qpn = be32_to_cpu(bth->qpn) & SOFTRVT_BTH_QPN_MASK;
	pkt->ackreq = be32_to_cpu(bth->apsn) & SOFTRVT_BTH_ACKREQ;
	pkt->psn = be32_to_cpu(bth->apsn) & SOFTRVT_BTH_PSN_MASK;
	pkt->hdr_len = hlen;
	pkt->srqn = 0;
	if (pkt->mask & SOFTRVT_HDR_XRCETH)
		pkt->srqn = be32_to_cpu(((const struct softrvt_xrceth *)(bth + 1))->srqn) &
			    SOFTRVT_XRC_SRQN_MASK;

	rest = len - hlen - SOFTRVT_ICRC_BYTES;
	if (pkt->pad > rest ||
	    (rest && !(pkt->mask & SOFTRVT_HDR_PAYLOAD)))
		return -EINVAL;
	pkt->payload_len = rest - pkt->pad;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_parse_bth);

/**
 * softrvt_build_bth - fill in a BTH
 * @bth: where
 * @opcode: the opcode
 * @se: solicited event
 * @pad: pad bytes after the payload, 0 to 3
 * @pkey: the partition key
 * @qpn: the destination QP
 * @ackreq: ask the responder for an ACK
 * @psn: the packet sequence number
 */
void softrvt_build_bth(struct softrvt_bth *bth, u8 opcode, bool se, u8 pad, u16 pkey,
		       u32 qpn, bool ackreq, u32 psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? SOFTRVT_BTH_SE : 0) |
		     ((pad << SOFTRVT_BTH_PAD_SHIFT) & SOFTRVT_BTH_PAD_MASK);
	bth->pkey = cpu_to_be16(pkey);
	bth->qpn = cpu_to_be32(qpn & SOFTRVT_BTH_QPN_MASK);
	bth->apsn = cpu_to_be32((ackreq ? SOFTRVT_BTH_ACKREQ : 0) |
				(psn & SOFTRVT_BTH_PSN_MASK));
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_build_bth);

/**
 * softrvt_grh_place - fill the GRH space of a UD receive buffer
 * @grh: SOFTRVT_GRH_BYTES bytes
 * @iph: the message's IPv4 or IPv6 header
 * @ipv6: which of the two @iph is
 *
 * An IPv6 header fills the space; an IPv4 header goes in its last 20
 * bytes after zeroes, where rxe and RoCEv2 NICs put it and where
 * consumers (ib_init_ah_attr_from_wc(), rdma-core's
 * ibv_init_ah_from_wc()) look for it.
 */
void softrvt_grh_place(u8 *grh, const void *iph, bool ipv6)
{
	memset(grh, 0, SOFTRVT_GRH_BYTES);
	if (ipv6)
		memcpy(grh, iph, sizeof(struct ipv6hdr));
	else
		memcpy(grh + SOFTRVT_GRH_BYTES - sizeof(struct iphdr), iph,
		       sizeof(struct iphdr));
}
