// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Received RoCEv2 packets, from the UDP socket (net.c) to the QP's engine.
 *
 * Receiving runs in softirq context.  softrvt_recv() checks what can be
 * checked without the QP's state (lengths, headers, ICRC, QP number and
 * transport) and queues the packet on the QP; the QP's engine (engine.c)
 * takes it off the queue and does the rest in process context, where
 * copying into user memory is not under any lock.  One kind of packet has
 * its ICRC checked by the engine instead, first thing: one softrvt sends
 * from this CPU to a peer on a veth, which comes up here in the sender's
 * context, marked (softrvt_rx_sent_here()).  Checked here, the sending CPU
 * would hash every byte twice; the receiving QP's engine runs on another
 * CPU whenever one is free.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/udp.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/*
 * An XRC INI QP takes only answers and a TGT QP only requests: each is
 * one half of an RC QP.
 */
static bool softrvt_transport_ok(const struct softrvt_qp *qp, u8 opcode)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return (opcode & 0xe0) == IB_OPCODE_RC;
	case IB_QPT_XRC_INI:
		return (opcode & 0xe0) == SOFTRVT_OPCODE_XRC &&
		       softrvt_opcode_is_response(opcode);
	case IB_QPT_XRC_TGT:
		return (opcode & 0xe0) == SOFTRVT_OPCODE_XRC &&
		       !softrvt_opcode_is_response(opcode);
	case IB_QPT_UC:
		return (opcode & 0xe0) == IB_OPCODE_UC;
	default:
		return (opcode & 0xe0) == IB_OPCODE_UD;
	}
}

/* From here skb->data is the BTH and skb->len ends before the ICRC. */
static int softrvt_rx_trim(struct sk_buff *skb, struct udphdr *udph, u32 ulen)
{
	skb_pull(skb, (u8 *)(udph + 1) - skb->data);
	return pskb_trim(skb, ulen - sizeof(*udph) - SOFTRVT_ICRC_BYTES);
}

/*
 * A NIC may hand a packet over in pages: its headers, up to the last
 * extended header of its opcode, are pulled into the linear part, the
 * payload is left where it is (softrvt_icrc_skb_ok(), softrvt_copy_skb_to_sge()).
 * One too short for its headers is left for softrvt_parse_bth() to drop.
 */
static bool softrvt_rx_pull_hdrs(struct sk_buff *skb)
{
	int bth_off = skb_transport_offset(skb) + sizeof(struct udphdr);
	const struct softrvt_bth *bth;
	u16 mask;

	if (bth_off < (int)sizeof(struct udphdr) ||
	    !pskb_may_pull(skb, bth_off + sizeof(*bth)))
		return false;
	bth = (const struct softrvt_bth *)(skb->data + bth_off);
	if (softrvt_opcode_info(bth->opcode, &mask))
		return true;
	return pskb_may_pull(skb, min_t(u32, skb->len,
					bth_off + softrvt_hdr_len(mask)));
}

/**
 * softrvt_recv - check a received packet and queue it on its QP
 * @rdi: the device whose netdev received it
 * @skb: the packet, at its UDP header; consumed
 *
 * Checks what can be checked without the QP's state and queues the packet
 * for the QP's engine, or fans a multicast one out to its group.  Softirq
 * context, from the UDP socket of the device's namespace.
 */
void softrvt_recv(struct softrvt_dev_info *rdi, struct sk_buff *skb)
{
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	enum softrvt_counter drop = SOFTRVT_CNT_DROP_BAD_HDR;
	const struct softrvt_pkt *parsed = NULL;
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	struct udphdr *udph;
	struct softrvt_qp *qp;
	u32 ulen, l3len;
	u8 *l3;

	if (!softrvt_rx_pull_hdrs(skb))
		goto drop;
	l3 = skb_network_header(skb);
	udph = udp_hdr(skb);
	ulen = ntohs(udph->len);
	if (ulen < sizeof(*udph) || ulen > skb->len - ((u8 *)udph - skb->data))
		goto drop;
	/* The ICRC covers the IP header as this code lays it out. */
	if (!ipv6 && (ip_hdr(skb)->ihl != 5 || ip_hdr(skb)->version != 4))
		goto drop;
	if (ipv6 && (u8 *)udph - l3 != sizeof(struct ipv6hdr))
		goto drop;
	if (softrvt_parse_bth(udph + 1, ulen - sizeof(*udph), pkt))
		goto drop;
	parsed = pkt;

	l3len = (u8 *)udph - l3 + ulen - SOFTRVT_ICRC_BYTES;
	pkt->icrc_ok = !softrvt_rx_sent_here(skb) || pkt->qpn == SOFTRVT_MCAST_QPN;
	if (!pkt->icrc_ok && !softrvt_icrc_carried(skb, l3len, &pkt->icrc))
		goto drop;
	if (pkt->icrc_ok && !softrvt_icrc_skb_ok(skb, ipv6, l3len)) {
		drop = SOFTRVT_CNT_DROP_BAD_ICRC;
		goto drop;
	}
	if (!softrvt_pkey_ok(pkt->pkey)) {
		drop = SOFTRVT_CNT_DROP_BAD_PKEY;
		goto drop;
	}
	pkt->ipv6 = ipv6;

	/* UD only: no connection ever has the multicast QPN (IBA 10.5.2.2). */
	if (pkt->qpn == SOFTRVT_MCAST_QPN) {
		if ((pkt->opcode & 0xe0) != IB_OPCODE_UD ||
		    !(ipv6 ? ipv6_addr_is_multicast(&ipv6_hdr(skb)->daddr) :
			     ipv4_is_multicast(ip_hdr(skb)->daddr))) {
			drop = SOFTRVT_CNT_DROP_BAD_TRANSPORT;
			goto drop;
		}
		if (softrvt_rx_trim(skb, udph, ulen))
			goto drop;
		softrvt_mcast_rcv(rdi, skb);
		return;
	}

	qp = softrvt_lookup_qpn(rdi, pkt->qpn);
	if (!qp) {
		drop = SOFTRVT_CNT_DROP_NO_QP;
		goto drop;
	}
	if (!softrvt_transport_ok(qp, pkt->opcode)) {
		softrvt_put_qp(qp);
		drop = SOFTRVT_CNT_DROP_BAD_TRANSPORT;
		goto drop;
	}

	if (softrvt_rx_trim(skb, udph, ulen)) {
		softrvt_put_qp(qp);
		goto drop;
	}
	softrvt_qp_count_pkt(qp, false, pkt->payload_len);
	if (skb_is_nonlinear(skb))
		softrvt_qp_count(qp, SOFTRVT_CNT_RX_PAGED, 1);
	trace_softrvt_rx(rdi, pkt->qpn, pkt);

	softrvt_rx_queue(rdi, qp, skb);
	softrvt_put_qp(qp);
	return;
drop:
	softrvt_drop(rdi, drop, parsed);
	kfree_skb(skb);
}

/**
 * softrvt_rx_queue - queue a received packet for its QP's engine
 * @rdi: the device
 * @qp: the QP, referenced by the caller
 * @skb: the packet; consumed
 *
 * A QP holds at most SOFTRVT_RX_QUEUE_MAX packets, the device at most
 * SOFTRVT_RX_DEV_MAX_BYTES of them (skb truesize) across all its QPs; a
 * packet over either cap is dropped and counted.  The charge is taken
 * under the queue's lock, so no dequeuer can see the packet before it is
 * charged; softrvt_rx_dequeue() and softrvt_rx_purge() give it back.  Any
 * context.
 *
 * Return: true if the packet was queued and the engine scheduled.
 */
bool softrvt_rx_queue(struct softrvt_dev_info *rdi, struct softrvt_qp *qp,
		      struct sk_buff *skb)
{
	enum softrvt_counter drop = SOFTRVT_CNT_DROP_QUEUE_FULL;
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&qp->r_pkts.lock, flags);
	if (skb_queue_len(&qp->r_pkts) < SOFTRVT_RX_QUEUE_MAX) {
		if (atomic_long_add_return(skb->truesize, &rdi->rx_queued) <=
		    SOFTRVT_RX_DEV_MAX_BYTES) {
			__skb_queue_tail(&qp->r_pkts, skb);
			queued = true;
		} else {
			atomic_long_sub(skb->truesize, &rdi->rx_queued);
			drop = SOFTRVT_CNT_DROP_DEV_QUEUE_FULL;
		}
	}
	spin_unlock_irqrestore(&qp->r_pkts.lock, flags);
	if (!queued) {
		softrvt_qp_drop(qp, drop, softrvt_pkt_of(skb));
		kfree_skb(skb);
		return false;
	}
	softrvt_schedule_send(qp);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rx_queue);

/**
 * softrvt_rx_icrc_ok - check the ICRC of a packet queued for a QP, once
 * @skb: from softrvt_rx_dequeue()
 *
 * The receive path checked most packets' ICRC already; one that came up
 * in its sender's context on this host is checked here, by the QP's
 * engine, before anything looks at its payload.  Any context.
 *
 * Return: whether the ICRC the packet carried is the one of its bytes.
 */
bool softrvt_rx_icrc_ok(struct sk_buff *skb)
{
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	/* From the IP header to the end of the pad, where skb->len ends. */
	u32 len = skb->len + (skb->data - skb_network_header(skb));
	u32 icrc;

	if (!pkt->icrc_ok)
		pkt->icrc_ok = softrvt_icrc_skb(skb, pkt->ipv6, len, &icrc) &&
			       icrc == pkt->icrc;
	return pkt->icrc_ok;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rx_icrc_ok);

/**
 * softrvt_rx_dequeue - take the oldest packet queued on a QP
 * @qp: the QP
 *
 * Nothing touches a packet while it is queued, so its truesize is still
 * what softrvt_rx_queue() charged.  Any context.
 *
 * Return: the packet, now the caller's, or NULL.
 */
struct sk_buff *softrvt_rx_dequeue(struct softrvt_qp *qp)
{
	struct sk_buff *skb = skb_dequeue(&qp->r_pkts);

	if (skb)
		atomic_long_sub(skb->truesize,
				&softrvt_to_dev(qp->ibqp.device)->rx_queued);
	return skb;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rx_dequeue);

/**
 * softrvt_rx_unget - put back the packet softrvt_rx_dequeue() just returned
 * @qp: the QP
 * @skb: the packet, which its engine cannot handle yet
 *
 * Only the engine dequeues, so the packet is first again, as it was.  It
 * is charged to the device again, even past the cap: it was queued.
 */
void softrvt_rx_unget(struct softrvt_qp *qp, struct sk_buff *skb)
{
	atomic_long_add(skb->truesize, &softrvt_to_dev(qp->ibqp.device)->rx_queued);
	skb_queue_head(&qp->r_pkts, skb);
}

/**
 * softrvt_rx_purge - drop every packet queued on a QP
 * @qp: the QP, for RESET and teardown
 */
void softrvt_rx_purge(struct softrvt_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = softrvt_rx_dequeue(qp)))
		kfree_skb(skb);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rx_purge);

/**
 * softrvt_rx_hold - hold or release the handling of a device's received packets
 * @rdi: the device
 * @hold: true to hold, false to release
 *
 * For tests (debugfs softrvt/rx_hold, root only): while a device is held,
 * its QPs' engines take no packet off their queues, so that a test can
 * fill the queues up to their caps whatever the scheduler does, and see
 * what admission, RESET and destroy do with what is queued.  The receive
 * path and everything else still run, but for the flush of the send queue
 * of a QP in ERR with packets queued, which waits for them.  Releasing
 * runs the engine of every QP that has packets queued: each returned
 * without rescheduling itself while held.  Process context.
 */
void softrvt_rx_hold(struct softrvt_dev_info *rdi, bool hold)
{
	unsigned long index = 0;
	struct softrvt_qp *qp;

	WRITE_ONCE(rdi->rx_hold, hold);
	if (hold)
		return;
	/*
	 * An engine that saw the hold returned before this store; a packet
	 * queued after the check below schedules its engine itself.
	 */
	smp_mb();
	while ((qp = softrvt_qp_next(rdi, &index))) {
		if (!skb_queue_empty_lockless(&qp->r_pkts))
			softrvt_schedule_send(qp);
		softrvt_put_qp(qp);
	}
}

/**
 * softrvt_pkt_on_path - whether a received packet comes from a connection's peer
 * @skb: a packet queued by the receive path
 * @av: the connection's path: the packet must come from av->dgid to
 *	av->sgid, in the same IP version
 *
 * Anyone can send a UDP datagram to port 4791 with the right QP number and
 * a PSN in the window; the addresses are what a connected QP can check
 * before it acts on a packet.
 *
 * Return: true if both addresses match.
 */
bool softrvt_pkt_on_path(struct sk_buff *skb, const struct softrvt_av *av)
{
	bool v4 = ipv6_addr_v4mapped((const struct in6_addr *)av->sgid.raw);

	if (softrvt_pkt_of(skb)->ipv6) {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		return !v4 &&
		       !memcmp(&ip6h->saddr, av->dgid.raw, sizeof(ip6h->saddr)) &&
		       !memcmp(&ip6h->daddr, av->sgid.raw, sizeof(ip6h->daddr));
	}
	return v4 &&
	       !memcmp(&ip_hdr(skb)->saddr, av->dgid.raw + 12, 4) &&
	       !memcmp(&ip_hdr(skb)->daddr, av->sgid.raw + 12, 4);
}
