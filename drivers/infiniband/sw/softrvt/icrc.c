// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCEv2 invariant CRC (IBA annex A17.3.3): a CRC-32 over the packet
 * from the IP header to the end of the payload and pad, with the fields
 * routers may change replaced by ones, behind 64 bits of ones that stand
 * for the InfiniBand LRH.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/udp.h>

#include "softrvt.h"
#include "hdr.h"

/*
 * The CRC-32 of every ICRC: the crypto API's "crc32" (crc32-pclmul where
 * the CPU has PCLMULQDQ and its module is loaded) or, when NULL,
 * crc32_le(), whichever hashed a packet's worth of bytes faster when the
 * module loaded.  Neither is faster everywhere: on x86 hardware the
 * carry-less multiply is several times the tables' speed, but where it
 * is emulated (QEMU's TCG) it is half of it.  Set before any device
 * exists, freed after the last is gone.
 */
static struct crypto_shash *softrvt_crc_tfm __read_mostly;

/* Bytes the choice is timed over: one packet at the largest RoCE MTU. */
#define SOFTRVT_CRC_PROBE_BYTES	4096
#define SOFTRVT_CRC_PROBE_PASSES	8
#define SOFTRVT_CRC_PROBE_TRIALS	5

/*
 * crc32_le() by @tfm.  The "crc32" shash keeps the running CRC, not
 * inverted, as the u32 of its descriptor (as rdma_rxe relies on too);
 * softrvt_icrc_init() checks that before choosing it.
 */
static u32 softrvt_crc32_by(struct crypto_shash *tfm, u32 crc, const u8 *p,
			    u32 len)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	u32 *state;

	if (!tfm)
		return crc32_le(crc, p, len);
	desc->tfm = tfm;
	state = shash_desc_ctx(desc);
	*state = crc;
	if (crypto_shash_update(desc, p, len))
		return crc32_le(crc, p, len);
	crc = *state;
	/* The descriptor is on the stack: keep the read before it goes. */
	barrier_data(state);
	return crc;
}

/*
 * The running CRC, not inverted, over the 64 bits of ones that stand for
 * the LRH and the IP, UDP and BTH headers with their variant fields
 * masked.  @bth may lie apart from @l3 (a train's packets share one set of
 * IP and UDP headers).  The headers are too short for the carry-less
 * multiply to pay: crc32_le() whatever was chosen.
 */
static u32 softrvt_icrc_hdrs(const u8 *l3, bool ipv6, const u8 *bth)
{
	static const u8 lrh_ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	u8 hdrs[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		sizeof(struct softrvt_bth)];
	u32 l3len = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u32 hlen = l3len + sizeof(struct udphdr);
	struct softrvt_bth *masked_bth;
	struct udphdr *udp;
	u32 crc;

	memcpy(hdrs, l3, hlen);
	memcpy(hdrs + hlen, bth, sizeof(struct softrvt_bth));
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
	masked_bth = (struct softrvt_bth *)(udp + 1);
	/* FECN, BECN and the six reserved bits before the QPN. */
	masked_bth->qpn |= cpu_to_be32(~SOFTRVT_BTH_QPN_MASK);

	crc = crc32_le(~0U, lrh_ones, sizeof(lrh_ones));
	return crc32_le(crc, hdrs, hlen + sizeof(struct softrvt_bth));
}

static u32 softrvt_icrc_by_split(struct crypto_shash *tfm, const u8 *l3,
				 bool ipv6, const u8 *bth, u32 len)
{
	u32 crc;

	if (len < sizeof(struct softrvt_bth))
		return 0;
	crc = softrvt_icrc_hdrs(l3, ipv6, bth);
	crc = softrvt_crc32_by(tfm, crc, bth + sizeof(struct softrvt_bth),
			       len - sizeof(struct softrvt_bth));
	return ~crc;
}

/**
 * softrvt_icrc_split - compute the ICRC of a packet whose headers lie apart
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
u32 softrvt_icrc_split(const u8 *l3, bool ipv6, const u8 *bth, u32 len)
{
	return softrvt_icrc_by_split(softrvt_crc_tfm, l3, ipv6, bth, len);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc_split);

/**
 * softrvt_icrc_by - compute a packet's ICRC with a given CRC-32
 * @tfm: a "crc32" shash, or NULL for crc32_le()
 * @l3: the IP header; the UDP header and the BTH follow it
 * @ipv6: whether @l3 is an IPv6 header (else IPv4 without options)
 * @len: bytes from @l3 to the end of the pad, the ICRC excluded
 *
 * Return: the ICRC, as it is stored little-endian after the pad; 0 if
 * @len cannot hold the headers.
 */
VISIBLE_IF_KUNIT u32 softrvt_icrc_by(struct crypto_shash *tfm, const u8 *l3,
				     bool ipv6, u32 len)
{
	u32 hlen = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct udphdr);

	if (len < hlen + sizeof(struct softrvt_bth))
		return 0;
	return softrvt_icrc_by_split(tfm, l3, ipv6, l3 + hlen, len - hlen);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc_by);

/**
 * softrvt_icrc - compute a packet's ICRC
 * @l3: the IP header; the UDP header and the BTH follow it
 * @ipv6: whether @l3 is an IPv6 header (else IPv4 without options)
 * @len: bytes from @l3 to the end of the pad, the ICRC excluded
 *
 * Return: the ICRC, as it is stored little-endian after the pad; 0 if
 * @len cannot hold the headers.
 */
u32 softrvt_icrc(const u8 *l3, bool ipv6, u32 len)
{
	return softrvt_icrc_by(softrvt_crc_tfm, l3, ipv6, len);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc);

/**
 * softrvt_icrc_skb - compute the ICRC of a packet, linear or paged
 * @skb: the packet: its IP and UDP headers and its BTH in the linear
 *	part, skb->data no further than the BTH; the rest may lie in pages
 * @ipv6: whether its IP header is IPv6 (else IPv4 without options)
 * @len: bytes from the IP header to the end of the pad
 * @icrc: set to the ICRC, as it is stored little-endian after the pad
 *
 * Pages are hashed where they are: those a NIC received into, and those
 * of user memory that a packet is sent from.
 *
 * Return: false if @skb is shorter than @len or its headers lie apart.
 */
bool softrvt_icrc_skb(struct sk_buff *skb, bool ipv6, u32 len, u32 *icrc)
{
	u32 hlen = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct udphdr) + sizeof(struct softrvt_bth);
	const u8 *l3 = skb_network_header(skb);
	int rest = l3 + hlen - skb->data;
	struct skb_seq_state st;
	u32 crc, done = 0, n;
	const u8 *data;

	if (len < hlen || rest < 0 || rest > skb_headlen(skb))
		return false;
	crc = softrvt_icrc_hdrs(l3, ipv6, l3 + hlen - sizeof(struct softrvt_bth));
	len -= hlen;
	skb_prepare_seq_read(skb, rest, rest + len, &st);
	while ((n = softrvt_skb_seq_next(&st, done, len, &data))) {
		crc = softrvt_crc32_by(softrvt_crc_tfm, crc, data, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	*icrc = ~crc;
	return done == len;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc_skb);

/**
 * softrvt_icrc_carried - the ICRC a received packet carries
 * @skb: the packet, linear or paged
 * @len: bytes from its IP header to the end of its pad; the ICRC follows
 * @icrc: set to the ICRC, as softrvt_icrc_skb() computes it
 *
 * Return: false if @skb ends before the ICRC.
 */
bool softrvt_icrc_carried(const struct sk_buff *skb, u32 len, u32 *icrc)
{
	int end = skb_network_header(skb) + len - skb->data;
	__le32 carried;

	if (end < 0 || skb_copy_bits(skb, end, &carried, sizeof(carried)))
		return false;
	*icrc = le32_to_cpu(carried);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc_carried);

/**
 * softrvt_icrc_skb_ok - check the ICRC of a received packet, linear or paged
 * @skb: the packet, as for softrvt_icrc_skb()
 * @ipv6: whether its IP header is IPv6 (else IPv4 without options)
 * @len: bytes from the IP header to the end of the pad; the ICRC follows
 *
 * Return: true if the ICRC the packet carries is the one computed.
 */
bool softrvt_icrc_skb_ok(struct sk_buff *skb, bool ipv6, u32 len)
{
	u32 carried, icrc;

	return softrvt_icrc_carried(skb, len, &carried) &&
	       softrvt_icrc_skb(skb, ipv6, len, &icrc) && icrc == carried;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_icrc_skb_ok);

/* The fastest of a few timed trials, in ns: others may preempt us. */
static u64 softrvt_crc_time(struct crypto_shash *tfm, const u8 *buf)
{
	u64 best = U64_MAX;
	int trial, pass;

	for (trial = 0; trial < SOFTRVT_CRC_PROBE_TRIALS; trial++) {
		u64 start = ktime_get_ns();
		u32 crc = ~0U;

		for (pass = 0; pass < SOFTRVT_CRC_PROBE_PASSES; pass++)
			crc = softrvt_crc32_by(tfm, crc, buf, SOFTRVT_CRC_PROBE_BYTES);
		/* Keep the passes from being optimised away. */
		barrier_data(&crc);
		best = min(best, ktime_get_ns() - start);
	}
	return max(best, 1ULL);
}

static u64 softrvt_crc_mbs(u64 ns)
{
	return div64_u64((u64)SOFTRVT_CRC_PROBE_BYTES * SOFTRVT_CRC_PROBE_PASSES *
			 NSEC_PER_SEC / 1000000, ns);
}

/**
 * softrvt_icrc_init - choose the CRC-32 of the ICRC
 *
 * Times crc32_le() against the crypto API's "crc32" over a packet's
 * worth of random bytes and keeps the crypto one if it is faster by more
 * than an eighth and gave crc32_le()'s result.  Without a "crc32" shash,
 * crc32_le().
 *
 * Return: 0, or -ENOMEM.
 */
int softrvt_icrc_init(void)
{
	struct crypto_shash *tfm;
	u64 ns_le, ns_tfm;
	bool faster;
	u8 *buf;

	tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(tfm)) {
		pr_info("ICRC by crc32_le (no crc32 shash: %ld)\n",
			PTR_ERR(tfm));
		return 0;
	}
	buf = kmalloc(SOFTRVT_CRC_PROBE_BYTES, GFP_KERNEL);
	if (!buf) {
		crypto_free_shash(tfm);
		return -ENOMEM;
	}
	get_random_bytes(buf, SOFTRVT_CRC_PROBE_BYTES);
	if (softrvt_crc32_by(tfm, ~0U, buf, SOFTRVT_CRC_PROBE_BYTES) !=
	    crc32_le(~0U, buf, SOFTRVT_CRC_PROBE_BYTES)) {
		pr_warn("%s disagrees with crc32_le; ICRC by crc32_le\n",
			crypto_shash_driver_name(tfm));
		goto out_free;
	}
	ns_le = softrvt_crc_time(NULL, buf);
	ns_tfm = softrvt_crc_time(tfm, buf);
	/* A tie is the same tables behind an indirect call: keep crc32_le. */
	faster = ns_tfm + ns_tfm / 8 < ns_le;
	pr_info("ICRC by %s (crc32_le %llu MB/s, %s %llu MB/s)\n",
		faster ? crypto_shash_driver_name(tfm) : "crc32_le",
		softrvt_crc_mbs(ns_le), crypto_shash_driver_name(tfm),
		softrvt_crc_mbs(ns_tfm));
	if (faster) {
		softrvt_crc_tfm = tfm;
		tfm = NULL;
	}
out_free:
	kfree(buf);
	if (tfm)
		crypto_free_shash(tfm);
	return 0;
}

/**
 * softrvt_icrc_exit - release the CRC-32 softrvt_icrc_init() chose
 */
void softrvt_icrc_exit(void)
{
	if (softrvt_crc_tfm)
		crypto_free_shash(softrvt_crc_tfm);
	softrvt_crc_tfm = NULL;
}
