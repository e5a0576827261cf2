// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD multicast.  A UD QP attached to a multicast GID receives every UD
 * packet sent to that GID's IP address with the multicast QPN (IBA
 * 10.5.2.2, RoCEv2 annex A17.4.5.2); each attached QP gets its own copy,
 * checked against its own Q_Key by the responder.  A sender needs nothing
 * of this: a UD WQE whose AH names a multicast GID goes to that IP
 * address, and the IP layer delivers a copy back to this host when the
 * netdev is a member of the group.
 *
 * Joining the IP group (IGMP, MLD) is the joiner's, as on every RoCE
 * device: rdma_cm does it for the groups it joins.  Attaching tells the
 * netdev the group's MAC address, as rdma_rxe does, so that a NIC's
 * filter lets the group's frames in.
 */

#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <rdma/ib_addr.h>

#include "softrvt.h"
#include "hdr.h"
#include "trace.h"

struct softrvt_mcast_grp {
	struct list_head node;		/* on rdi->mcast_grps */
	union ib_gid mgid;
	u32 n_qps;
	struct softrvt_qp *qps[SOFTRVT_MAX_MCAST_QP_ATTACH];
};

/* The group's Ethernet address, as IP maps it (RFC 1112, RFC 2464). */
static void softrvt_mcast_mac(const union ib_gid *mgid, u8 *mac)
{
	const struct in6_addr *addr = (const struct in6_addr *)mgid->raw;

	if (ipv6_addr_v4mapped(addr))
		ip_eth_mc_map(addr->s6_addr32[3], mac);
	else
		ipv6_eth_mc_map(addr, mac);
}

static struct softrvt_mcast_grp *softrvt_mcast_find(struct softrvt_dev_info *rdi,
						    const union ib_gid *mgid)
{
	struct softrvt_mcast_grp *grp;

	lockdep_assert_held(&rdi->mcast_lock);
	list_for_each_entry(grp, &rdi->mcast_grps, node)
		if (!memcmp(&grp->mgid, mgid, sizeof(*mgid)))
			return grp;
	return NULL;
}

static int softrvt_mcast_slot(const struct softrvt_mcast_grp *grp,
			      const struct softrvt_qp *qp)
{
	u32 i;

	for (i = 0; i < grp->n_qps; i++)
		if (grp->qps[i] == qp)
			return i;
	return -1;
}

/**
 * softrvt_attach_mcast - attach a UD QP to a multicast group (ib_device_ops.attach_mcast)
 * @ibqp: the QP
 * @gid: the group: an IPv6 multicast address, or an IPv4 one mapped
 * @lid: unused on RoCE
 *
 * Attaching a QP twice is not an error, as in rdma_rxe.  Process context.
 *
 * Return: 0; -EINVAL for a QP other than UD or a GID not multicast;
 * -ENOMEM when the group or the device holds all it may, or memory ran
 * out.
 */
int softrvt_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	struct softrvt_mcast_grp *grp, *new;
	u8 mac[ETH_ALEN];
	int ret = 0;

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)gid->raw))
		return -EINVAL;
	new = kzalloc_obj(*new, GFP_KERNEL);
	if (!new)
		return -ENOMEM;
	new->mgid = *gid;

	spin_lock_bh(&rdi->mcast_lock);
	grp = softrvt_mcast_find(rdi, gid);
	if (!grp) {
		if (rdi->n_mcast_grps >= SOFTRVT_MAX_MCAST_GRP) {
			ret = -ENOMEM;
			goto out;
		}
		grp = new;
		new = NULL;
		list_add_tail(&grp->node, &rdi->mcast_grps);
		rdi->n_mcast_grps++;
	}
	if (softrvt_mcast_slot(grp, qp) >= 0)
		goto out;
	if (grp->n_qps == SOFTRVT_MAX_MCAST_QP_ATTACH) {
		ret = -ENOMEM;
		goto out;
	}
	grp->qps[grp->n_qps++] = qp;
out:
	spin_unlock_bh(&rdi->mcast_lock);
	/* A new group: the netdev accepts its frames from now on. */
	if (!new) {
		softrvt_mcast_mac(gid, mac);
		dev_mc_add(rdi->ndev, mac);
	}
	kfree(new);
	return ret;
}

/*
 * Take @qp out of @grp, under the lock.  Return: the group if that left
 * it empty: it is off the list then, for softrvt_mcast_free() after the lock.
 */
static struct softrvt_mcast_grp *softrvt_mcast_take(struct softrvt_dev_info *rdi,
						    struct softrvt_mcast_grp *grp,
						    int slot)
	__must_hold(&rdi->mcast_lock)
{
	lockdep_assert_held(&rdi->mcast_lock);
	grp->qps[slot] = grp->qps[--grp->n_qps];
	grp->qps[grp->n_qps] = NULL;
	if (grp->n_qps)
		return NULL;
	list_del(&grp->node);
	rdi->n_mcast_grps--;
	return grp;
}

static void softrvt_mcast_free(struct softrvt_dev_info *rdi, struct softrvt_mcast_grp *grp)
{
	u8 mac[ETH_ALEN];

	softrvt_mcast_mac(&grp->mgid, mac);
	dev_mc_del(rdi->ndev, mac);
	kfree(grp);
}

/**
 * softrvt_detach_mcast - detach a QP from a multicast group (ib_device_ops.detach_mcast)
 * @ibqp: the QP
 * @gid: the group
 * @lid: unused on RoCE
 *
 * Process context.
 *
 * Return: 0, or -EINVAL if the QP is not attached to the group.
 */
int softrvt_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_mcast_grp *grp, *empty = NULL;
	int slot = -1;

	spin_lock_bh(&rdi->mcast_lock);
	grp = softrvt_mcast_find(rdi, gid);
	if (grp)
		slot = softrvt_mcast_slot(grp, softrvt_to_qp(ibqp));
	if (slot >= 0)
		empty = softrvt_mcast_take(rdi, grp, slot);
	spin_unlock_bh(&rdi->mcast_lock);
	if (empty)
		softrvt_mcast_free(rdi, empty);
	return slot >= 0 ? 0 : -EINVAL;
}

/**
 * softrvt_mcast_detach_qp - detach a QP from every group, before it goes
 * @qp: the QP being destroyed
 *
 * ib_uverbs detaches a user's QP itself; a kernel consumer may not have.
 * Once this returns the receive path cannot reach the QP through a group.
 */
void softrvt_mcast_detach_qp(struct softrvt_qp *qp)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(qp->ibqp.device);
	struct softrvt_mcast_grp *grp, *next;
	LIST_HEAD(empty);
	int slot;

	if (qp->ibqp.qp_type != IB_QPT_UD)
		return;
	spin_lock_bh(&rdi->mcast_lock);
	list_for_each_entry_safe(grp, next, &rdi->mcast_grps, node) {
		slot = softrvt_mcast_slot(grp, qp);
		if (slot >= 0 && softrvt_mcast_take(rdi, grp, slot))
			list_add(&grp->node, &empty);
	}
	spin_unlock_bh(&rdi->mcast_lock);
	list_for_each_entry_safe(grp, next, &empty, node)
		softrvt_mcast_free(rdi, grp);
}

/**
 * softrvt_mcast_rcv - hand a multicast packet to every QP attached to its group
 * @rdi: the device
 * @skb: a UD packet to the multicast QPN, checked as softrvt_rcv() checks
 *	 every packet, data at the BTH; consumed
 *
 * Softirq context.
 */
void softrvt_mcast_rcv(struct softrvt_dev_info *rdi, struct sk_buff *skb)
{
	struct softrvt_pkt *pkt = softrvt_pkt_of(skb);
	struct softrvt_mcast_grp *grp;
	union ib_gid mgid;
	u32 i, n;

	if (pkt->ipv6)
		memcpy(mgid.raw, &ipv6_hdr(skb)->daddr, sizeof(mgid.raw));
	else
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)mgid.raw);

	spin_lock_bh(&rdi->mcast_lock);
	grp = softrvt_mcast_find(rdi, &mgid);
	n = grp ? grp->n_qps : 0;
	for (i = 0; i < n; i++) {
		struct softrvt_qp *qp = grp->qps[i];
		struct sk_buff *copy = i + 1 < n ? skb_clone(skb, GFP_ATOMIC) :
						   skb;

		if (!copy) {
			softrvt_qp_drop(qp, SOFTRVT_CNT_DROP_DEV_QUEUE_FULL, pkt);
			continue;
		}
		softrvt_qp_count_pkt(qp, false, pkt->payload_len);
		trace_softrvt_rx(rdi, qp->ibqp.qp_num, pkt);
		softrvt_rx_queue(rdi, qp, copy);
	}
	spin_unlock_bh(&rdi->mcast_lock);
	if (!n) {
		softrvt_drop(rdi, SOFTRVT_CNT_DROP_NO_QP, pkt);
		kfree_skb(skb);
	}
}
