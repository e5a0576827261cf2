// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building and parsing RoCEv2 transport headers.  The parser is the first
 * thing a received packet meets: it trusts nothing in the packet and
 * rejects what does not add up before anything else reads it.
 */

#include "softrvt.h"
#include "hdr.h"

/*
 * The low five bits of an opcode name the operation, the top three the
 * transport; this table is indexed by the operation.
 */
static const u16 rvt_op_mask[32] = {
	[IB_OPCODE_SEND_FIRST] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_MIDDLE] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_LAST] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_LAST_WITH_IMMEDIATE] = RVT_HDR_IMMDT | RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE] = RVT_HDR_IMMDT | RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_FIRST] = RVT_HDR_RETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_MIDDLE] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_LAST] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE] = RVT_HDR_IMMDT |
						     RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_ONLY] = RVT_HDR_RETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE] = RVT_HDR_RETH |
						     RVT_HDR_IMMDT |
						     RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_REQUEST] = RVT_HDR_RETH,
	[IB_OPCODE_RDMA_READ_RESPONSE_FIRST] = RVT_HDR_AETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE] = RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_LAST] = RVT_HDR_AETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_RDMA_READ_RESPONSE_ONLY] = RVT_HDR_AETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_ACKNOWLEDGE] = RVT_HDR_AETH,
	[IB_OPCODE_ATOMIC_ACKNOWLEDGE] = RVT_HDR_AETH | RVT_HDR_ATMACK,
	[IB_OPCODE_COMPARE_SWAP] = RVT_HDR_ATMETH,
	[IB_OPCODE_FETCH_ADD] = RVT_HDR_ATMETH,
	[IB_OPCODE_SEND_LAST_WITH_INVALIDATE] = RVT_HDR_IETH | RVT_HDR_PAYLOAD,
	[IB_OPCODE_SEND_ONLY_WITH_INVALIDATE] = RVT_HDR_IETH | RVT_HDR_PAYLOAD,
	/* The memory placement extensions; both are answered like a READ. */
	[IB_OPCODE_FLUSH] = RVT_HDR_FETH | RVT_HDR_RETH,
	[IB_OPCODE_ATOMIC_WRITE] = RVT_HDR_RETH | RVT_HDR_PAYLOAD,
};

/**
 * rvt_opcode_info - the headers an opcode carries
 * @opcode: the BTH opcode
 * @mask: set to its RVT_HDR_* bits
 *
 * RC and XRC carry every operation of the table, UC sends and RDMA
 * writes, UD only SEND_ONLY with or without immediate; every other opcode
 * (RD, CNP, vendor) is refused.  An XRC request carries an XRCETH, its
 * answers do not.
 *
 * Return: 0, or -EINVAL for an opcode softrvt does not speak.
 */
int rvt_opcode_info(u8 opcode, u16 *mask)
{
	u8 op = opcode & 0x1f;

	switch (opcode & 0xe0) {
	case IB_OPCODE_RC:
		break;
	case RVT_OPCODE_XRC:
		if (!rvt_op_mask[op])
			return -EINVAL;
		*mask = rvt_op_mask[op];
		if (!rvt_opcode_is_response(opcode))
			*mask |= RVT_HDR_XRCETH;
		return 0;
	case IB_OPCODE_UC:
		if (op > IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
			return -EINVAL;
		break;
	case IB_OPCODE_UD:
		if (op != IB_OPCODE_SEND_ONLY &&
		    op != IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE)
			return -EINVAL;
		*mask = rvt_op_mask[op] | RVT_HDR_DETH;
		return 0;
	default:
		return -EINVAL;
	}
	if (!rvt_op_mask[op])
		return -EINVAL;
	*mask = rvt_op_mask[op];
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(rvt_opcode_info);

/**
 * rvt_hdr_len - bytes of BTH and extended headers
 * @mask: RVT_HDR_* bits
 *
 * Return: the length.
 */
int rvt_hdr_len(u16 mask)
{
	int len = sizeof(struct rvt_bth);

	/* The order on the wire; only the lengths matter here. */
	if (mask & RVT_HDR_XRCETH)
		len += sizeof(struct rvt_xrceth);
	if (mask & RVT_HDR_DETH)
		len += sizeof(struct rvt_deth);
	if (mask & RVT_HDR_FETH)
		len += sizeof(struct rvt_feth);
	if (mask & RVT_HDR_RETH)
		len += sizeof(struct rvt_reth);
	if (mask & RVT_HDR_ATMETH)
		len += sizeof(struct rvt_atmeth);
	if (mask & RVT_HDR_AETH)
		len += sizeof(struct rvt_aeth);
	if (mask & RVT_HDR_ATMACK)
		len += sizeof(struct rvt_atmack);
	if (mask & RVT_HDR_IMMDT)
		len += sizeof(__be32);
	if (mask & RVT_HDR_IETH)
		len += sizeof(__be32);
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(rvt_hdr_len);

/**
 * rvt_parse_bth - check and decode the transport headers of a packet
 * @buf: the UDP payload: BTH, extended headers, payload, pad, ICRC
 * @len: its length
 * @pkt: filled in on success
 *
 * Return: 0, or -EINVAL for a packet to drop: too short for its headers
 * and ICRC, an unknown opcode or transport version, or a pad count larger
 * than the payload, or payload on an opcode that carries none.
 */
int rvt_parse_bth(const void *buf, u32 len, struct rvt_pkt *pkt)
{
	const struct rvt_bth *bth = buf;
	u32 rest;
	int hlen;

	if (len < sizeof(*bth) + RVT_ICRC_BYTES)
		return -EINVAL;
	if (bth->flags & RVT_BTH_TVER_MASK)
		return -EINVAL;
	if (rvt_opcode_info(bth->opcode, &pkt->mask))
		return -EINVAL;
	hlen = rvt_hdr_len(pkt->mask);
	if (len < hlen + RVT_ICRC_BYTES)
		return -EINVAL;

	pkt->opcode = bth->opcode;
	pkt->se = bth->flags & RVT_BTH_SE;
	pkt->pad = (bth->flags & RVT_BTH_PAD_MASK) >> RVT_BTH_PAD_SHIFT;
	pkt->pkey = be16_to_cpu(bth->pkey);
	pkt->qpn = be32_to_cpu(bth->qpn) & RVT_BTH_QPN_MASK;
	pkt->ackreq = be32_to_cpu(bth->apsn) & RVT_BTH_ACKREQ;
	pkt->psn = be32_to_cpu(bth->apsn) & RVT_BTH_PSN_MASK;
	pkt->hdr_len = hlen;
	pkt->srqn = 0;
	if (pkt->mask & RVT_HDR_XRCETH)
		pkt->srqn = be32_to_cpu(((const struct rvt_xrceth *)(bth + 1))->srqn) &
			    RVT_XRC_SRQN_MASK;

	rest = len - hlen - RVT_ICRC_BYTES;
	if (pkt->pad > rest ||
	    (rest && !(pkt->mask & RVT_HDR_PAYLOAD)))
		return -EINVAL;
	pkt->payload_len = rest - pkt->pad;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(rvt_parse_bth);

/**
 * rvt_build_bth - fill in a BTH
 * @bth: where
 * @opcode: the opcode
 * @se: solicited event
 * @pad: pad bytes after the payload, 0 to 3
 * @pkey: the partition key
 * @qpn: the destination QP
 * @ackreq: ask the responder for an ACK
 * @psn: the packet sequence number
 */
void rvt_build_bth(struct rvt_bth *bth, u8 opcode, bool se, u8 pad, u16 pkey,
		   u32 qpn, bool ackreq, u32 psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? RVT_BTH_SE : 0) |
		     ((pad << RVT_BTH_PAD_SHIFT) & RVT_BTH_PAD_MASK);
	bth->pkey = cpu_to_be16(pkey);
	bth->qpn = cpu_to_be32(qpn & RVT_BTH_QPN_MASK);
	bth->apsn = cpu_to_be32((ackreq ? RVT_BTH_ACKREQ : 0) |
				(psn & RVT_BTH_PSN_MASK));
}
EXPORT_SYMBOL_IF_KUNIT(rvt_build_bth);
