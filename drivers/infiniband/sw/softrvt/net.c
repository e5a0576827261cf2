// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCEv2 packets in and out: UDP port 4791 in every network namespace that
 * holds a softrvt device, IP and UDP headers, the ICRC, and the dispatch of
 * received packets to their QP.
 *
 * rdma_rxe binds its sockets in the initial namespace only; softrvt opens
 * a pair (IPv4 and IPv6) per namespace, when the first device of that
 * namespace is added, and closes it with the last one.  If another driver
 * already holds the port there, the device still works on its own QPs but
 * receives nothing from the wire: that is logged once.
 *
 * Receiving runs in softirq context.  It checks what can be checked
 * without the QP's state (lengths, headers, ICRC, QP number and transport)
 * and queues the packet on the QP; the QP's engine (ruc.c) does the rest in
 * process context, where copying into user memory is not under any lock.
 * One kind of packet has its ICRC checked by the engine instead, first
 * thing: one softrvt sends from this CPU to a peer on a veth, which comes
 * up here in the sender's context, marked (softrvt_rx_sent_here()).  Checked here,
 * the sending CPU would hash every byte twice; the receiving QP's engine
 * runs on another CPU whenever one is free.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <net/dst_cache.h>
#include <net/ip6_checksum.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

/* The sockets of one network namespace and the devices living there. */
struct softrvt_net {
	struct list_head list;		/* on softrvt_nets */
	struct net *net;		/* NULL once the namespace is gone */
	int users;			/* devices; under softrvt_nets_lock */
	struct socket *sock4;
	struct socket *sock6;
	struct list_head devs;		/* RCU list of softrvt_dev_info.net_node */
};

static LIST_HEAD(softrvt_nets);
static DEFINE_MUTEX(softrvt_nets_lock);

/* How many of softrvt's transmits this CPU is inside: softrvt_tx_begin(). */
static DEFINE_PER_CPU(unsigned int, softrvt_tx_depth);

/*
 * softrvt's mark on the packets it sends, in skb->inner_protocol: the
 * protocol inside an encapsulation, which the stack reads only when
 * skb->encapsulation is set (never, on these), and which a veth, its
 * peer's namespace (skb_scrub_packet()) and a segmentation keep.  RoCE's
 * own EtherType: no tunnel sets it.  A packet that carries it wrongly is
 * only checked later, by its QP's engine.
 */
#define SOFTRVT_TX_MARK	htons(ETH_P_IBOE)

/**
 * softrvt_pkt_of - the parsed headers of a received packet
 * @skb: a packet queued by the receive path
 *
 * Return: what softrvt_parse_bth() found; skb->data is at the BTH.
 */
struct softrvt_pkt *softrvt_pkt_of(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct softrvt_pkt) > sizeof(skb->cb));
	return (struct softrvt_pkt *)skb->cb;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_pkt_of);

static struct softrvt_dev_info *softrvt_net_find_dev(struct softrvt_net *rnet,
						     struct net_device *ndev)
{
	struct softrvt_dev_info *rdi;

	list_for_each_entry_rcu(rdi, &rnet->devs, net_node)
		if (rdi->ndev == ndev && ib_device_try_get(&rdi->ibdev))
			return rdi;
	return NULL;
}

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
 * softrvt_tx_begin - softrvt hands a packet to IP on this CPU
 * @skb: the packet, marked as softrvt's for softrvt_rx_sent_here()
 *
 * Called with migration disabled, until the matching softrvt_tx_end(); an
 * engine that preempts another here nests.
 */
void softrvt_tx_begin(struct sk_buff *skb)
{
	skb_set_inner_protocol(skb, SOFTRVT_TX_MARK);
	this_cpu_inc(softrvt_tx_depth);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_tx_begin);

/**
 * softrvt_tx_end - IP has returned the packet of softrvt_tx_begin()
 */
void softrvt_tx_end(void)
{
	this_cpu_dec(softrvt_tx_depth);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_tx_end);

/**
 * softrvt_rx_sent_here - whether a received packet came up in its sender's context
 * @skb: a packet in the receive path
 *
 * A veth hands a packet to its peer's receive softirq on the CPU that
 * sends it, before its transmit returns.  A packet softrvt sent
 * (softrvt_tx_begin()'s mark, which segments and copies of it keep too)
 * received while this CPU is inside such a transmit has its ICRC checked
 * by its QP's engine rather than here, where the sending CPU would hash
 * every byte twice.  The mark is kept by the packet itself, not guessed
 * from its address, which a freed and reallocated skb shares.  A wrong
 * answer costs only where the check runs: the engine checks what this
 * one did not (softrvt_rx_icrc_ok()).
 *
 * Return: true to leave the ICRC to the engine.
 */
bool softrvt_rx_sent_here(const struct sk_buff *skb)
{
	return !skb->encapsulation && skb->inner_protocol == SOFTRVT_TX_MARK &&
	       this_cpu_read(softrvt_tx_depth);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_rx_sent_here);

/*
 * Check a packet as far as it can be checked without its QP's state and
 * queue it there.  Takes ownership of @skb.
 */
static void softrvt_rcv(struct softrvt_dev_info *rdi, struct sk_buff *skb)
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
				&ib_to_rvt(qp->ibqp.device)->rx_queued);
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
	atomic_long_add(skb->truesize, &ib_to_rvt(qp->ibqp.device)->rx_queued);
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
 * path and everything else still run.  Releasing runs the engine of every
 * QP that has packets queued: each returned without rescheduling itself
 * while held.  Process context.
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

static int softrvt_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct softrvt_net *rnet;
	struct softrvt_dev_info *rdi = NULL;

	rcu_read_lock();
	rnet = rcu_dereference_sk_user_data(sk);
	if (rnet)
		rdi = softrvt_net_find_dev(rnet, skb->dev);
	rcu_read_unlock();
	if (!rdi) {
		kfree_skb(skb);
		return 0;
	}
	softrvt_rcv(rdi, skb);
	ib_device_put(&rdi->ibdev);
	return 0;
}

static struct socket *softrvt_udp_open(struct softrvt_net *rnet, bool ipv6)
{
	struct udp_tunnel_sock_cfg tnl = {
		.sk_user_data = rnet,
		.encap_type = 1,
		.encap_rcv = softrvt_udp_encap_recv,
	};
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.ipv6_v6only = ipv6,
		.local_udp_port = htons(SOFTRVT_ROCE_V2_UDP_DPORT),
	};
	struct socket *sock;
	int ret;

	ret = udp_sock_create(rnet->net, &cfg, &sock);
	if (ret) {
		pr_warn_ratelimited("UDP port %u (%s) is taken in this network namespace (%d): no RoCEv2 reception\n",
				    SOFTRVT_ROCE_V2_UDP_DPORT,
				    ipv6 ? "IPv6" : "IPv4", ret);
		return NULL;
	}
	setup_udp_tunnel_sock(rnet->net, softrvt_tunnel_sk(sock), &tnl);
	return sock;
}

static void softrvt_udp_close(struct softrvt_net *rnet)
{
	if (rnet->sock4)
		udp_tunnel_sock_release(softrvt_tunnel_sk(rnet->sock4));
	if (rnet->sock6)
		udp_tunnel_sock_release(softrvt_tunnel_sk(rnet->sock6));
	rnet->sock4 = NULL;
	rnet->sock6 = NULL;
}

/**
 * softrvt_net_attach - give a new device its namespace's sockets
 * @rdi: the device, not registered yet
 *
 * Opens the sockets of the netdev's namespace if it is the first device
 * there.  Process context.
 *
 * Return: 0 or -ENOMEM.
 */
int softrvt_net_attach(struct softrvt_dev_info *rdi)
{
	struct net *net = dev_net(rdi->ndev);
	struct softrvt_net *rnet;

	mutex_lock(&softrvt_nets_lock);
	list_for_each_entry(rnet, &softrvt_nets, list)
		if (rnet->net == net)
			goto found;
	rnet = kzalloc_obj(*rnet, GFP_KERNEL);
	if (!rnet) {
		mutex_unlock(&softrvt_nets_lock);
		return -ENOMEM;
	}
	rnet->net = net;
	INIT_LIST_HEAD(&rnet->devs);
	list_add(&rnet->list, &softrvt_nets);
found:
	if (!rnet->users++) {
		rnet->sock4 = softrvt_udp_open(rnet, false);
		rnet->sock6 = softrvt_udp_open(rnet, true);
	}
	list_add_tail_rcu(&rdi->net_node, &rnet->devs);
	rdi->rnet = rnet;
	mutex_unlock(&softrvt_nets_lock);
	return 0;
}

/**
 * softrvt_net_detach - a device is going: stop giving it packets
 * @rdi: the device, unregistered
 *
 * Closes the namespace's sockets with its last device.  Process context.
 */
void softrvt_net_detach(struct softrvt_dev_info *rdi)
{
	struct softrvt_net *rnet = rdi->rnet;

	if (!rnet)
		return;
	mutex_lock(&softrvt_nets_lock);
	list_del_rcu(&rdi->net_node);
	if (!--rnet->users) {
		softrvt_udp_close(rnet);
		list_del(&rnet->list);
	} else {
		rnet = NULL;
	}
	mutex_unlock(&softrvt_nets_lock);
	/* The receive path may still be looking at the device or rnet. */
	synchronize_rcu();
	kfree(rnet);
	rdi->rnet = NULL;
}

/*
 * A namespace going away takes its sockets with it, even if a device of
 * it is still waiting for its queued unregistration.
 */
static void __net_exit softrvt_net_exit(struct net *net)
{
	struct softrvt_net *rnet;

	mutex_lock(&softrvt_nets_lock);
	list_for_each_entry(rnet, &softrvt_nets, list) {
		if (rnet->net == net) {
			softrvt_udp_close(rnet);
			rnet->net = NULL;
		}
	}
	mutex_unlock(&softrvt_nets_lock);
}

static struct pernet_operations softrvt_net_ops = {
	.exit = softrvt_net_exit,
};

/**
 * softrvt_net_init - follow network namespaces
 *
 * Return: 0 or a negative errno.
 */
int softrvt_net_init(void)
{
	return register_pernet_subsys(&softrvt_net_ops);
}

/**
 * softrvt_net_exit_all - stop following network namespaces; no device is left
 */
void softrvt_net_exit_all(void)
{
	unregister_pernet_subsys(&softrvt_net_ops);
}

/*
 * The route to @av's destination.  A connected QP passes its @cache: the
 * route is looked up again only when the routing tables change.  Called
 * with BHs off, as the cache is per CPU.
 */
static struct dst_entry *softrvt_route(struct softrvt_dev_info *rdi,
				       const struct softrvt_av *av, bool ipv6,
				       struct dst_cache *cache)
{
	struct net *net = dev_net(rdi->ndev);

	if (!ipv6) {
		struct flowi4 fl4 = {
			.flowi4_oif = rdi->ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
		};
		struct rtable *rt;

		memcpy(&fl4.saddr, av->sgid.raw + 12, sizeof(fl4.saddr));
		memcpy(&fl4.daddr, av->dgid.raw + 12, sizeof(fl4.daddr));
		if (cache) {
			__be32 saddr;

			rt = dst_cache_get_ip4(cache, &saddr);
			if (rt)
				return &rt->dst;
		}
		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt))
			return NULL;
		if (cache)
			dst_cache_set_ip4(cache, &rt->dst, fl4.saddr);
		return &rt->dst;
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct flowi6 fl6 = {
			.flowi6_oif = rdi->ndev->ifindex,
			.flowi6_proto = IPPROTO_UDP,
		};
		struct dst_entry *dst;

		memcpy(&fl6.saddr, av->sgid.raw, sizeof(fl6.saddr));
		memcpy(&fl6.daddr, av->dgid.raw, sizeof(fl6.daddr));
		if (cache) {
			struct in6_addr saddr;

			dst = dst_cache_get_ip6(cache, &saddr);
			if (dst)
				return dst;
		}
		dst = softrvt_ip6_dst_lookup_flow(net, NULL, &fl6);
		if (IS_ERR(dst))
			return NULL;
		if (dst->error) {
			dst_release(dst);
			return NULL;
		}
		if (cache)
			dst_cache_set_ip6(cache, dst, &fl6.saddr);
		return dst;
	}
#else
	return NULL;
#endif
}

static struct sk_buff *softrvt_alloc_skb(struct softrvt_dev_info *rdi, u32 len,
					 gfp_t gfp)
{
	u32 head = LL_RESERVED_SPACE(rdi->ndev) + sizeof(struct ipv6hdr) +
		   sizeof(struct udphdr);
	struct sk_buff *skb;

	skb = alloc_skb(head + len, gfp);
	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	skb_put(skb, len);
	return skb;
}

/**
 * softrvt_alloc_pkt - allocate a packet with room for @len bytes from the BTH
 * @rdi: the device it leaves from
 * @len: headers and payload (pad included), the ICRC excluded
 *
 * Process context.
 *
 * Return: the packet, skb->data at the BTH and skb->len == @len, or NULL.
 */
struct sk_buff *softrvt_alloc_pkt(struct softrvt_dev_info *rdi, u32 len)
{
	struct sk_buff *skb = softrvt_alloc_skb(rdi, len + SOFTRVT_ICRC_BYTES,
						GFP_KERNEL);

	if (skb)
		skb_trim(skb, len);
	return skb;
}

/**
 * softrvt_put_payload - copy a packet's payload after its headers, then its pad
 * @p: where the payload goes
 * @ss: its list, cursor at its first byte, advanced past it; unused if
 *	@len is 0
 * @len: payload bytes
 *
 * Return: the bytes written, the pad included.
 */
u32 softrvt_put_payload(u8 *p, struct softrvt_sge_state *ss, u32 len)
{
	u32 pad = softrvt_pad_bytes(len);

	if (len)
		softrvt_copy_from_sge(p, ss, len);
	memset(p + len, 0, pad);
	return len + pad;
}

/*
 * Payload from this long on is worth sending from its pages rather than
 * copying: below it, a copy costs less than the pages' references.
 */
#define SOFTRVT_ZCOPY_MIN_BYTES	1024

/*
 * A packet of @hdr_len bytes of headers, then @len of payload in the
 * pages of @ss, then a fragment of its own for the pad and the ICRC; or
 * NULL, @ss untouched, if the payload does not lie in user pages.
 */
static struct sk_buff *softrvt_alloc_paged_pkt(struct softrvt_dev_info *rdi,
					       u32 hdr_len,
					       struct softrvt_sge_state *ss, u32 len)
{
	u32 tail_len = softrvt_pad_bytes(len) + SOFTRVT_ICRC_BYTES;
	struct sk_buff *skb;
	struct page *page;
	u8 *tail;

	skb = softrvt_alloc_skb(rdi, hdr_len, GFP_KERNEL);
	if (!skb)
		return NULL;
	tail = netdev_alloc_frag(tail_len);
	if (!tail)
		goto free_skb;
	if (!softrvt_sge_to_frags(ss, skb, len, MAX_SKB_FRAGS - 1)) {
		skb_free_frag(tail);
		goto free_skb;
	}
	memset(tail, 0, tail_len);
	page = virt_to_head_page(tail);
	skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, page,
			tail - (u8 *)page_address(page), tail_len, tail_len);
	return skb;

free_skb:
	kfree_skb(skb);
	return NULL;
}

/**
 * softrvt_alloc_pkt_from - allocate a packet and place its payload
 * @rdi: the device it leaves from
 * @hdr_len: bytes of BTH and extended headers, for the caller to write at
 *	skb->data
 * @ss: the payload's list, cursor at its first byte, advanced past it;
 *	unused if @len is 0
 * @len: payload bytes
 * @in_place: the packet may carry the pages of @ss rather than a copy:
 *	nothing completes before the peer has taken it (an RC request, which
 *	completes on its ACK, or a READ response)
 *
 * A payload of SOFTRVT_ZCOPY_MIN_BYTES or more in user MRs goes out from its
 * pages (softrvt_sge_to_frags()) if the netdev takes fragments (a veth does; a
 * NIC without checksum offload does not); any other is copied after the
 * headers.  Process context.
 *
 * Return: the packet, skb->data at the BTH, for softrvt_xmit(); or NULL.
 */
struct sk_buff *softrvt_alloc_pkt_from(struct softrvt_dev_info *rdi, u32 hdr_len,
				       struct softrvt_sge_state *ss, u32 len,
				       bool in_place)
{
	struct sk_buff *skb;

	/* A device that cannot take fragments has the stack copy them. */
	if (in_place && len >= SOFTRVT_ZCOPY_MIN_BYTES &&
	    (READ_ONCE(rdi->ndev->features) & NETIF_F_SG)) {
		skb = softrvt_alloc_paged_pkt(rdi, hdr_len, ss, len);
		if (skb)
			return skb;
	}
	skb = softrvt_alloc_pkt(rdi, softrvt_pkt_bytes_of(hdr_len, len));
	if (skb)
		softrvt_put_payload(skb->data + hdr_len, ss, len);
	return skb;
}

/**
 * softrvt_alloc_train - allocate a train of packets, for softrvt_xmit_train()
 * @rdi: the device it leaves from
 * @len: bytes of every packet, each from its BTH to the end of its ICRC
 *
 * A train that cannot be had at once is sent packet by packet instead:
 * no warning, no retries.  Process context.
 *
 * Return: the skb, skb->data at the first BTH and skb->len == @len, or
 * NULL.
 */
struct sk_buff *softrvt_alloc_train(struct softrvt_dev_info *rdi, u32 len)
{
	return softrvt_alloc_skb(rdi, len,
				 GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
}

/*
 * The headers of a packet being sent, for a tracepoint: @len counts from
 * the BTH to the end of the payload; the ICRC, which softrvt_parse_bth()
 * expects, is not read.
 */
static const struct softrvt_pkt *softrvt_tx_pkt(const void *bth, u32 len,
						struct softrvt_pkt *pkt)
{
	return softrvt_parse_bth(bth, len + SOFTRVT_ICRC_BYTES, pkt) ? NULL : pkt;
}

/*
 * Route @skb to @av's destination and put the UDP and IP headers before
 * its @ulen bytes of UDP payload, the ICRC included.  The caller counts
 * and frees the packet if there is no route.
 */
/*
 * Whether packets of @seg bytes (BTH to ICRC) fit the route's MTU.  A
 * route's MTU can be below the port's, which bounds the QP's path MTU (a
 * router's link, `ip route ... mtu`, a PMTU learnt from ICMP): every
 * packet of a full MTU would be dropped by IP, silently, and RC would
 * retry until it gave up.  Say it once in a while, and count each.
 */
static bool softrvt_route_fits(struct softrvt_qp *qp, struct dst_entry *dst,
			       bool ipv6, u32 seg)
{
	u32 len = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		  sizeof(struct udphdr) + seg;
	u32 mtu = dst_mtu(dst);

	if (likely(len <= mtu))
		return true;
	ibdev_warn_ratelimited(qp->ibqp.device,
			       "QP %u: a %u-byte packet exceeds the route's MTU of %u: dropped, counted in tx_too_big; the path MTU must be smaller\n",
			       qp->ibqp.qp_num, len, mtu);
	return false;
}

/* The counter of a packet that softrvt_push_hdrs() refused. */
static enum softrvt_counter softrvt_tx_drop_why(int err)
{
	return err == -EMSGSIZE ? SOFTRVT_CNT_TX_TOO_BIG : SOFTRVT_CNT_TX_NO_ROUTE;
}

/*
 * Route @skb and push its UDP and IP headers; @seg is the length of each
 * packet it carries, from the BTH to the ICRC.  Return: 0, -EHOSTUNREACH
 * or -EMSGSIZE.
 */
static int softrvt_push_hdrs(struct softrvt_qp *qp, const struct softrvt_av *av,
			     struct dst_cache *cache, u16 sport, bool ipv6,
			     u32 ulen, u32 seg, struct sk_buff *skb)
{
	struct softrvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	struct dst_entry *dst;
	struct udphdr *udph;

	local_bh_disable();
	dst = softrvt_route(rdi, av, ipv6, cache);
	local_bh_enable();
	if (!dst)
		return -EHOSTUNREACH;
	if (!softrvt_route_fits(qp, dst, ipv6, seg)) {
		dst_release(dst);
		return -EMSGSIZE;
	}
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;

	udph = skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph->source = htons(sport);
	udph->dest = htons(SOFTRVT_ROCE_V2_UDP_DPORT);
	udph->len = htons(sizeof(*udph) + ulen);
	udph->check = 0;

	if (ipv6) {
		struct ipv6hdr *ip6h = skb_push(skb, sizeof(*ip6h));

		skb_reset_network_header(skb);
		ip6_flow_hdr(ip6h, av->traffic_class,
			     cpu_to_be32(av->flow_label) & IPV6_FLOWLABEL_MASK);
		ip6h->payload_len = udph->len;
		ip6h->nexthdr = IPPROTO_UDP;
		ip6h->hop_limit = av->hop_limit ?: 64;
		memcpy(&ip6h->saddr, av->sgid.raw, sizeof(ip6h->saddr));
		memcpy(&ip6h->daddr, av->dgid.raw, sizeof(ip6h->daddr));
		skb->protocol = htons(ETH_P_IPV6);
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	} else {
		struct iphdr *iph = skb_push(skb, sizeof(*iph));

		skb_reset_network_header(skb);
		iph->version = 4;
		iph->ihl = sizeof(*iph) / 4;
		iph->tos = av->traffic_class;
		iph->tot_len = htons(sizeof(*iph) + sizeof(*udph) + ulen);
		iph->frag_off = htons(IP_DF);
		iph->ttl = av->hop_limit ?: 64;
		iph->protocol = IPPROTO_UDP;
		memcpy(&iph->saddr, av->sgid.raw + 12, sizeof(iph->saddr));
		memcpy(&iph->daddr, av->dgid.raw + 12, sizeof(iph->daddr));
		/* The ICRC covers the ID: choose it before computing that. */
		__ip_select_ident(dev_net(rdi->ndev), iph, 1);
		skb->protocol = htons(ETH_P_IP);
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	}
	return 0;
}

/*
 * A veth hands the packet to its peer's receive softirq before this
 * returns, on this CPU: softrvt_rcv() knows it by softrvt_rx_sent_here().
 */
static int softrvt_local_out(struct softrvt_qp *qp, bool ipv6, struct sk_buff *skb)
{
	struct net *net = dev_net(ib_to_rvt(qp->ibqp.device)->ndev);
	int ret;

	migrate_disable();
	softrvt_tx_begin(skb);
	if (ipv6)
		ret = ip6_local_out(net, NULL, skb);
	else
		ret = ip_local_out(net, NULL, skb);
	softrvt_tx_end();
	migrate_enable();
	return net_xmit_eval(ret) ? -EIO : 0;
}

static bool softrvt_av_is_ipv6(const struct softrvt_av *av)
{
	return !ipv6_addr_v4mapped((const struct in6_addr *)av->sgid.raw);
}

/*
 * The ICRC of a packet whose headers are pushed: after the pad, where a
 * linear packet has room reserved and a paged one (softrvt_alloc_pkt_from())
 * the last bytes of its last fragment.
 */
static int softrvt_put_icrc(struct sk_buff *skb, bool ipv6)
{
	__le32 icrc_le;
	u32 icrc;

	if (!skb_is_nonlinear(skb)) {
		icrc = softrvt_icrc(skb_network_header(skb), ipv6, skb->len);
		put_unaligned_le32(icrc, skb_put(skb, SOFTRVT_ICRC_BYTES));
		return 0;
	}
	if (WARN_ON_ONCE(!softrvt_icrc_skb(skb, ipv6, skb->len - SOFTRVT_ICRC_BYTES,
					   &icrc)))
		return -EINVAL;
	icrc_le = cpu_to_le32(icrc);
	return skb_store_bits(skb, skb->len - SOFTRVT_ICRC_BYTES, &icrc_le,
			      sizeof(icrc_le));
}

/**
 * softrvt_xmit - add UDP, IP and the ICRC to a packet and send it
 * @qp: the QP sending it, whose counters count it
 * @av: the path: GIDs, traffic class, hop limit
 * @cache: the route cache of a connected QP's @av, or NULL
 * @sport: UDP source port, from the flow
 * @skb: from softrvt_alloc_pkt() or softrvt_alloc_pkt_from(), filled from the BTH
 *	on; consumed
 *
 * Process context.
 *
 * Return: 0, or a negative errno when the packet could not be routed;
 * the packet is counted and freed either way.
 */
int softrvt_xmit(struct softrvt_qp *qp, const struct softrvt_av *av,
		 struct dst_cache *cache, u16 sport, struct sk_buff *skb)
{
	struct softrvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	bool ipv6 = softrvt_av_is_ipv6(av);
	/* A paged packet has the room for its ICRC in its length. */
	u32 payload = skb->len -
		      (skb_is_nonlinear(skb) ? SOFTRVT_ICRC_BYTES : 0);
	struct softrvt_pkt pkt;
	u8 *bth = skb->data;
	int ret;

	ret = softrvt_push_hdrs(qp, av, cache, sport, ipv6,
				payload + SOFTRVT_ICRC_BYTES, payload + SOFTRVT_ICRC_BYTES,
				skb);
	if (ret) {
		softrvt_qp_drop(qp, softrvt_tx_drop_why(ret),
				trace_softrvt_drop_enabled() ?
				softrvt_tx_pkt(bth, payload, &pkt) : NULL);
		kfree_skb(skb);
		return ret;
	}
	if (softrvt_put_icrc(skb, ipv6)) {
		kfree_skb(skb);
		return -EINVAL;
	}

	softrvt_qp_count_pkt(qp, true, payload);
	if (skb_is_nonlinear(skb))
		softrvt_qp_count(qp, SOFTRVT_CNT_TX_IN_PLACE, 1);
	if (trace_softrvt_tx_enabled() && softrvt_tx_pkt(bth, payload, &pkt))
		trace_softrvt_tx(rdi, qp->ibqp.qp_num, &pkt);
	return softrvt_local_out(qp, ipv6, skb);
}

/**
 * softrvt_train_limit - what one train may carry on a path
 * @qp: the QP sending it
 * @av: the path
 * @cache: the route cache of @av
 * @lim: set to the train's limits; @lim->bytes 0 if packets must go one
 *	by one
 *
 * A train is one UDP GSO skb that the stack cuts into datagrams of
 * one length as late as it can: one pass through routing, IP output,
 * the qdisc and the device (a veth hands it whole to its peer) instead of
 * one a packet.  Trains go only where the device takes UDP GSO skbs with
 * their checksum: on another device the stack would cut them before its
 * driver, at the price of a copy and a UDP checksum a packet, and gain
 * little.  Only on IPv6 paths: IPv4 packets carry DF, and a segmenter may
 * give the segments of a DF skb other IP IDs than the ones that follow
 * from the first (Documentation/networking/segmentation-offloads.rst),
 * which the ICRC covers.  It costs a route lookup: callers decide once a
 * message, not once a packet.  Process context.
 */
void softrvt_train_limit(struct softrvt_qp *qp, const struct softrvt_av *av,
			 struct dst_cache *cache, struct softrvt_train_limit *lim)
{
	u32 hdrs = sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct dst_entry *dst;
	struct net_device *dev;
	u32 gso_max;

	lim->bytes = 0;
	lim->segs = 0;
	if (!softrvt_av_is_ipv6(av))
		return;
	local_bh_disable();
	dst = softrvt_route(ib_to_rvt(qp->ibqp.device), av, true, cache);
	local_bh_enable();
	if (!dst)
		return;
	dev = dst->dev;
	if ((dev->features & NETIF_F_GSO_UDP_L4) &&
	    (dev->features & (NETIF_F_IPV6_CSUM | NETIF_F_HW_CSUM))) {
		gso_max = READ_ONCE(dev->gso_max_size);
		lim->bytes = min(SOFTRVT_TRAIN_MAX_BYTES,
				 gso_max > hdrs ? gso_max - hdrs : 0);
		lim->segs = READ_ONCE(dev->gso_max_segs);
	}
	dst_release(dst);
}

/**
 * softrvt_train_take - whether one more packet joins a train
 * @lim: the path's limits, from softrvt_train_limit()
 * @n: packets already in the train
 * @seg_len: bytes of the train's first packet, BTH to ICRC
 * @len: bytes of this packet, BTH to ICRC; 0 if it has no layout
 * @msg_last: this packet ends its message
 * @bytes: the train's bytes so far; @len is added when it joins
 *
 * The segmenter cuts a train into datagrams of @seg_len bytes but the
 * last: a packet joins only if it is as long as the first, or shorter and
 * the message's last (the train ends with it).
 *
 * Return: whether it joined.
 */
bool softrvt_train_take(const struct softrvt_train_limit *lim, u32 n, u32 seg_len,
			u32 len, bool msg_last, u32 *bytes)
{
	if (!len || n >= lim->segs || *bytes + len > lim->bytes)
		return false;
	if (len > seg_len || (len < seg_len && !msg_last))
		return false;
	*bytes += len;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_train_take);

/**
 * softrvt_train_seal - give each packet of a train its ICRC, and the train
 *	what the segmenter needs
 * @skb: an IPv6 train: its network and transport headers set, the UDP
 *	payload the packets, each from its BTH to the end of its ICRC
 * @seg_len: bytes of every packet but the last, which may be shorter
 *
 * The segmenter gives each datagram the train's IPv6 and UDP headers with
 * its own lengths, and a UDP checksum of its own (which the ICRC leaves
 * out): each ICRC is computed for the headers its packet will have.
 */
void softrvt_train_seal(struct sk_buff *skb, u32 seg_len)
{
	struct ipv6hdr *ip6h = ipv6_hdr(skb);
	struct udphdr *udph = udp_hdr(skb);
	u8 hdrs[sizeof(*ip6h) + sizeof(*udph)];
	struct udphdr *seg_udph = (struct udphdr *)(hdrs + sizeof(*ip6h));
	struct ipv6hdr *seg_ip6h = (struct ipv6hdr *)hdrs;
	u32 left = ntohs(udph->len) - sizeof(*udph);
	u8 *pkt = (u8 *)(udph + 1);
	u32 segs = 0;

	memcpy(hdrs, ip6h, sizeof(hdrs));
	while (left) {
		u32 len = min(left, seg_len);

		seg_udph->len = htons(sizeof(*udph) + len);
		seg_ip6h->payload_len = seg_udph->len;
		put_unaligned_le32(softrvt_icrc_split(hdrs, true, pkt,
						      len - SOFTRVT_ICRC_BYTES),
				   pkt + len - SOFTRVT_ICRC_BYTES);
		pkt += len;
		left -= len;
		segs++;
	}
	skb_shinfo(skb)->gso_size = seg_len;
	skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
	skb_shinfo(skb)->gso_segs = segs;
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = skb_transport_header(skb) - skb->head;
	skb->csum_offset = offsetof(struct udphdr, check);
	udph->check = ~csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr,
				       ntohs(udph->len), IPPROTO_UDP, 0);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_train_seal);

/*
 * Count each packet of a train, as sent (@err 0) or as dropped for what
 * softrvt_push_hdrs() returned.
 */
static void softrvt_train_count(struct softrvt_qp *qp, const u8 *pkt, u32 left,
				u32 seg_len, int err)
{
	bool sent = !err;
	struct softrvt_dev_info *rdi = ib_to_rvt(qp->ibqp.device);
	struct softrvt_pkt parsed;

	while (left) {
		u32 len = min(left, seg_len) - SOFTRVT_ICRC_BYTES;
		bool traced = sent ? trace_softrvt_tx_enabled() :
				     trace_softrvt_drop_enabled();
		const struct softrvt_pkt *p = traced ?
					  softrvt_tx_pkt(pkt, len, &parsed) : NULL;

		if (!sent) {
			softrvt_qp_drop(qp, softrvt_tx_drop_why(err), p);
		} else {
			softrvt_qp_count_pkt(qp, true, len);
			if (p)
				trace_softrvt_tx(rdi, qp->ibqp.qp_num, p);
		}
		pkt += len + SOFTRVT_ICRC_BYTES;
		left -= len + SOFTRVT_ICRC_BYTES;
	}
}

/**
 * softrvt_xmit_train - send a train of packets as one UDP GSO skb
 * @qp: the QP sending them, whose counters count each
 * @av: the path, whose softrvt_train_limit() this train keeps to
 * @cache: the route cache of @av
 * @sport: UDP source port, from the flow
 * @skb: from softrvt_alloc_train(), the packets filled from the BTH on, each
 *	with room for its ICRC at its end; consumed
 * @seg_len: bytes of every packet but the last, which may be shorter
 *
 * Process context.
 *
 * Return: as softrvt_xmit().
 */
int softrvt_xmit_train(struct softrvt_qp *qp, const struct softrvt_av *av,
		       struct dst_cache *cache, u16 sport, struct sk_buff *skb,
		       u32 seg_len)
{
	u32 ulen = skb->len;
	u8 *pkts = skb->data;
	int ret;

	ret = softrvt_push_hdrs(qp, av, cache, sport, true, ulen, seg_len, skb);
	if (ret) {
		softrvt_train_count(qp, pkts, ulen, seg_len, ret);
		kfree_skb(skb);
		return ret;
	}
	softrvt_train_seal(skb, seg_len);
	softrvt_train_count(qp, pkts, ulen, seg_len, 0);
	return softrvt_local_out(qp, true, skb);
}
