// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCEv2 packets in and out: UDP port 4791 in every network namespace that
 * holds a softrvt device, routes, IP and UDP headers, the ICRC of packets
 * sent, and the packet trains of segmentation offload.
 *
 * rdma_rxe binds its sockets in the initial namespace only; softrvt opens
 * a pair (IPv4 and IPv6) per namespace, when the first device of that
 * namespace is added, and closes it with the last one.  If another driver
 * already holds the port there, the device still works on its own QPs but
 * receives nothing from the wire: that is logged once.
 *
 * Received packets go to softrvt_recv() (recv.c).
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

static struct softrvt_dev_info *softrvt_net_find_dev(struct softrvt_net *rnet,
						     struct net_device *ndev)
{
	struct softrvt_dev_info *rdi;

	list_for_each_entry_rcu(rdi, &rnet->devs, net_node)
		if (rdi->ndev == ndev && ib_device_try_get(&rdi->ibdev))
			return rdi;
	return NULL;
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
	softrvt_recv(rdi, skb);
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
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
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
	struct net *net = dev_net(softrvt_to_dev(qp->ibqp.device)->ndev);
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
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
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
	dst = softrvt_route(softrvt_to_dev(qp->ibqp.device), av, true, cache);
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
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
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
