// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCEv2 invariant CRC (IBA annex A17.3.3): a CRC-32 over the packet
 * from the IP header to the end of the payload and pad, with the fields
 * routers may change replaced by ones, behind 64 bits of ones that stand
 * for the InfiniBand LRH.
 */

#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "softrvt.h"
#include "hdr.h"

/**
 * rvt_icrc_split - compute the ICRC of a packet whose headers lie apart
 * @l3: the IP header, the UDP header after it
 * @ipv6: whether @l3 is an IPv6 header (else IPv4 without options)
 * @bth: the BTH; the rest of the packet follows it to the end of the pad
 * @len: bytes from @bth to the end of the pad, the ICRC excluded
 *
 * A train of packets sent as one UDP GSO skb has one IP and UDP header
 * for all of them, but the segmenter gives each packet its own lengths:
 * the ICRC of each is computed over a copy of the headers it will carry.
 *
 * Return: the ICRC, as it is stored little-endian after the pad; 0 if
 * @len cannot hold a BTH.
 */
u32 rvt_icrc_split(const u8 *l3, bool ipv6, const u8 *bth, u32 len)
{
	static const u8 lrh_ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	u8 hdrs[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		sizeof(struct rvt_bth)];
	u32 l3len = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u32 hlen = l3len + sizeof(struct udphdr);
	struct rvt_bth *masked_bth;
	struct udphdr *udp;
	u32 crc;

	if (len < sizeof(struct rvt_bth))
		return 0;
	memcpy(hdrs, l3, hlen);
	memcpy(hdrs + hlen, bth, sizeof(struct rvt_bth));
	if (ipv6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)hdrs;

		/* Traffic class, flow label and hop limit. */
		ip6->priority = 0xf;
		memset(ip6->flow_lbl, 0xff, sizeof(ip6->flow_lbl));
		ip6->hop_limit = 0xff;
	} else {
		struct iphdr *ip4 = (struct iphdr *)hdrs;

		ip4->tos = 0xff;
		ip4->ttl = 0xff;
		ip4->check = (__force __sum16)0xffff;
	}
	udp = (struct udphdr *)(hdrs + l3len);
	udp->check = (__force __sum16)0xffff;
	masked_bth = (struct rvt_bth *)(udp + 1);
	/* FECN, BECN and the six reserved bits before the QPN. */
	masked_bth->qpn |= cpu_to_be32(~RVT_BTH_QPN_MASK);

	crc = crc32_le(~0U, lrh_ones, sizeof(lrh_ones));
	crc = crc32_le(crc, hdrs, hlen + sizeof(struct rvt_bth));
	crc = crc32_le(crc, bth + sizeof(struct rvt_bth),
		       len - sizeof(struct rvt_bth));
	return ~crc;
}
EXPORT_SYMBOL_IF_KUNIT(rvt_icrc_split);

/**
 * rvt_icrc - compute a packet's ICRC
 * @l3: the IP header; the UDP header and the BTH follow it
 * @ipv6: whether @l3 is an IPv6 header (else IPv4 without options)
 * @len: bytes from @l3 to the end of the pad, the ICRC excluded
 *
 * Return: the ICRC, as it is stored little-endian after the pad; 0 if
 * @len cannot hold the headers.
 */
u32 rvt_icrc(const u8 *l3, bool ipv6, u32 len)
{
	u32 hlen = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct udphdr);

	if (len < hlen + sizeof(struct rvt_bth))
		return 0;
	return rvt_icrc_split(l3, ipv6, l3 + hlen, len - hlen);
}
EXPORT_SYMBOL_IF_KUNIT(rvt_icrc);
