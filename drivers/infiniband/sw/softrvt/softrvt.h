/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * softrvt: a software RDMA device in the style of rdmavt.
 *
 * The device's objects, its limits and the helpers on them; the functions
 * each file offers the others are in loc.h, included last.  Object layout
 * and locking are described in Documentation/softrvt/design.rst.
 */
#ifndef SOFTRVT_H
#define SOFTRVT_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/rvt-abi.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/softrvt-abi.h>

#include "compat.h"

#include <kunit/visibility.h>

/* Limits reported by query_device and enforced by the verbs. */
#define SOFTRVT_MAX_QP		16384
#define SOFTRVT_MAX_QP_WR		16383
#define SOFTRVT_MAX_SGE		32
#define SOFTRVT_MAX_CQ		16384
/*
 * libfabric's ofi_rxm opens one CQ for the MSG endpoints of its whole
 * universe: (128 + 128) * 256 = 65536 entries with its defaults, four
 * times that with a universe of 1024.
 */
#define SOFTRVT_MAX_CQE		262143
#define SOFTRVT_MAX_SRQ		16384
#define SOFTRVT_MAX_SRQ_WR		16383
#define SOFTRVT_MAX_SRQ_SGE		32
#define SOFTRVT_MAX_PD		65536
#define SOFTRVT_MAX_MR		65536
#define SOFTRVT_MAX_MW		32768
/* Pages of a fast-registration MR (max_fast_reg_page_list_len). */
#define SOFTRVT_MAX_FAST_REG_PAGES	512
#define SOFTRVT_MAX_INLINE		256
/* A message's bytes; its PSNs stay well within half the PSN space. */
#define SOFTRVT_MAX_MSG_SZ		BIT(31)
#define SOFTRVT_MAX_AH		65536
#define SOFTRVT_MAX_RD_ATOMIC	128
#define SOFTRVT_MAX_MCAST_GRP	1024
#define SOFTRVT_MAX_MCAST_QP_ATTACH	64
/* The destination QP of a multicast packet (IBA 10.5.2.2). */
#define SOFTRVT_MCAST_QPN		0xffffff
#define SOFTRVT_PORT_GID_TBL_LEN	128
#define SOFTRVT_VENDOR_ID		0xffffff
/* IB spec: the LSB of a key is owned by the consumer, the rest by us. */
#define SOFTRVT_KEY_INDEX_SHIFT	8
#define SOFTRVT_PSN_MASK		0xffffff
/*
 * Request PSNs in flight before the requester waits for ACKs.  Go-back-N
 * resends what follows a loss, so a small window wastes less on a lossy
 * path; a veth or a LAN does not need more.  Every PSN in flight has a
 * bit in softrvt_qp.comp.rd_seen.
 */
#define SOFTRVT_MAX_INFLIGHT	64
static_assert(SOFTRVT_MAX_INFLIGHT <= 64);
/* rnr_retry value meaning "retry for ever" (IBA 9.7.5.2.8). */
#define SOFTRVT_RNR_RETRY_INFINITE	7
/* Packets a QP may have queued before its engine gets to them. */
#define SOFTRVT_RX_QUEUE_MAX	4096
/*
 * Memory (skb truesize) the received packets queued on all the QPs of a
 * device may take together: the cap of each QP does not bound a flood
 * spread over many QPs while their engines are short of CPU.  64 MiB
 * holds some 4000 jumbo frames, a full window (SOFTRVT_MAX_INFLIGHT) for each
 * of 60 QPs; RC repairs what is dropped beyond that.
 */
#define SOFTRVT_RX_DEV_MAX_BYTES	(64L << 20)
/* Bytes of the GRH space at the start of a UD receive buffer. */
#define SOFTRVT_GRH_BYTES		40

/* What `rdma statistic` shows; softrvt_count() adds to them. */
enum softrvt_counter {
	SOFTRVT_CNT_TX_PACKETS,
	SOFTRVT_CNT_TX_BYTES,
	SOFTRVT_CNT_RX_PACKETS,
	SOFTRVT_CNT_RX_BYTES,
	SOFTRVT_CNT_RETRANSMITS,
	SOFTRVT_CNT_ACK_TIMEOUTS,
	SOFTRVT_CNT_SEQ_NAKS_SENT,
	SOFTRVT_CNT_SEQ_NAKS_RCVD,
	SOFTRVT_CNT_RNR_NAKS_SENT,
	SOFTRVT_CNT_RNR_NAKS_RCVD,
	SOFTRVT_CNT_ERR_NAKS_SENT,
	SOFTRVT_CNT_ERR_NAKS_RCVD,
	SOFTRVT_CNT_DUP_REQUESTS,
	SOFTRVT_CNT_REORDERED_ANSWERS,
	SOFTRVT_CNT_DROP_BAD_ICRC,
	SOFTRVT_CNT_DROP_BAD_HDR,
	SOFTRVT_CNT_DROP_NO_QP,
	SOFTRVT_CNT_DROP_BAD_TRANSPORT,
	SOFTRVT_CNT_DROP_QUEUE_FULL,
	SOFTRVT_CNT_DROP_BAD_STATE,
	SOFTRVT_CNT_DROP_BAD_QKEY,
	SOFTRVT_CNT_DROP_BAD_PSN,
	SOFTRVT_CNT_DROP_NO_RWQE,
	SOFTRVT_CNT_TX_NO_ROUTE,
	SOFTRVT_CNT_DROP_BAD_PKEY,
	SOFTRVT_CNT_DROP_BAD_ADDR,
	SOFTRVT_CNT_DROP_DEV_QUEUE_FULL,
	SOFTRVT_CNT_DROP_BAD_XRC_SRQ,
	SOFTRVT_CNT_TX_IN_PLACE,
	SOFTRVT_CNT_RX_PAGED,
	SOFTRVT_CNT_TX_TOO_BIG,
	SOFTRVT_CNT_MAX
};

/* Why the RC requester went back and sends packets again. */
enum softrvt_resend_why {
	SOFTRVT_RESEND_TIMEOUT,	/* the local ACK timeout */
	SOFTRVT_RESEND_SEQ_NAK,	/* the responder NAKed a PSN out of sequence */
	SOFTRVT_RESEND_RNR_NAK,	/* the RNR wait is over */
	SOFTRVT_RESEND_GAP,		/* answers came for PSNs past a lost one */
};

struct softrvt_net;

struct softrvt_dev_info {
	struct ib_device ibdev;
	/* For matching netdev events only; the held reference is ib_core's. */
	struct net_device *ndev;
	struct list_head list;		/* on softrvt_devices, under softrvt_devices_lock */
	bool port_active;		/* last state reported; under RTNL */
	bool dying;			/* disabled: softrvt_qp_fail_all(), enable_driver */
	enum ib_mtu port_mtu;		/* from the netdev's MTU */

	atomic_t n_pds;
	atomic_t n_cqs;
	atomic_t n_srqs;
	atomic_t n_qps;
	atomic_t n_mrs;
	atomic_t n_mws;
	atomic_t n_ahs;
	/* Makes atomics of all QPs of the device atomic with each other. */
	spinlock_t atomic_lock;

	struct xarray qp_xa;		/* QPN -> struct softrvt_qp */
	u32 next_qpn;
	/* Key index -> struct softrvt_mr, or struct softrvt_mw tagged SOFTRVT_KEY_MW. */
	struct xarray mr_xa;
	u32 next_mr_index;
	/* XRC SRQ number -> struct softrvt_srq, see xrc.c. */
	struct xarray srq_xa;
	u32 next_srqn;

	struct softrvt_net *rnet;		/* the netdev's namespace, see net.c */
	struct list_head net_node;	/* on rnet->devs, RCU */
	atomic64_t counters[SOFTRVT_CNT_MAX];
	/* Counter ID -> struct softrvt_qp_counter, see counter.c. */
	struct xarray counter_xa;
	/*
	 * What the QP counters freed had counted, for the port's totals
	 * (mad.c).  counter_lock, a mutex of process context, holds a
	 * counter's removal from counter_xa together with the adding of its
	 * counts here, against softrvt_port_totals(); a counter's insertion
	 * needs no part of it.
	 */
	struct mutex counter_lock;
	u64 counters_gone[SOFTRVT_CNT_MAX];
	/* Truesize of the packets on every QP's r_pkts, see softrvt_rx_queue(). */
	atomic_long_t rx_queued;
	/* Engines leave received packets queued: see softrvt_rx_hold(). */
	bool rx_hold;
	/* Multicast groups and the QPs attached, see mcast.c. */
	spinlock_t mcast_lock;
	struct list_head mcast_grps;
	u32 n_mcast_grps;
};

static inline void softrvt_count(struct softrvt_dev_info *rdi, enum softrvt_counter c,
				 u64 n)
{
	atomic64_add(n, &rdi->counters[c]);
}

/*
 * A counter of `rdma statistic qp`: the QPs bound to it count here instead
 * of in the device's counters, and ib_core adds it to the port's totals.
 */
struct softrvt_qp_counter {
	struct rcu_head rcu;
	atomic64_t counts[SOFTRVT_CNT_MAX];
};

/* Where RoCEv2 packets go: a QP's primary path or a UD WQE's AH. */
struct softrvt_av {
	union ib_gid sgid;
	union ib_gid dgid;
	u32 flow_label;
	u8 traffic_class;
	u8 hop_limit;
};

struct softrvt_ucontext {
	struct ib_ucontext ibucontext;
};

struct softrvt_pd {
	struct ib_pd ibpd;
};

/* An XRC domain: nothing but its identity, which XRC SRQs and QPs share. */
struct softrvt_xrcd {
	struct ib_xrcd ibxrcd;
};

struct softrvt_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;	/* grh.sgid_attr is held by ib_core */
	struct softrvt_av av;
	bool local;			/* dgid is one of this device's GIDs */
};

struct softrvt_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for the DMA MR */
	struct page **pages;		/* of umem, in order */
	unsigned long npages;
	u32 page_offset;		/* of iova in pages[0] */
	/*
	 * The key lookups match, whole; its low byte changes only when a
	 * fast-registration MR is registered again.  ibmr.lkey and rkey are
	 * the consumer's, which ib_update_fast_reg_key() moves ahead of us.
	 */
	u32 key;
	int access;
	u64 iova;
	u64 length;
	/*
	 * Fast registration (IB_MR_TYPE_MEM_REG), see softrvt_mr_fast_reg():
	 * map_mr_sg() fills fr_pages, each the kernel address of a block of
	 * ibmr.page_size bytes, while the MR is invalid; IB_WR_REG_MR makes
	 * it valid with a key, rights and the region ibmr then describes.
	 * @lock covers key, valid, access, iova, length and fr_shift of
	 * such an MR; lookups take it.  Other MRs never change, but for
	 * @n_mws and @dying, under @lock too.
	 */
	u64 *fr_pages;			/* NULL for other MRs */
	u32 fr_max;			/* entries of fr_pages */
	u32 fr_mapped;			/* filled by the last map_mr_sg() */
	u32 fr_filled;			/* the most ever filled */
	u8 fr_shift;			/* log2 of its block size */
	bool valid;			/* false: no key finds it */
	/* Memory windows bound to it: it is not invalidated or freed. */
	u32 n_mws;
	bool dying;			/* being deregistered: nothing binds */
	bool key_moved;			/* its key names its rereg successor */
	spinlock_t lock;
	refcount_t refcount;		/* 1 while registered, +1 per user */
	struct completion released;	/* refcount reached 0 */
	struct rcu_head rcu;
};

/*
 * A memory window (mw.c): a range of an MR the consumer grants a peer by
 * its own rkey.  Type 1 is bound and bound again with ibv_bind_mw(); type
 * 2 is bound to an MR and to one QP by IB_WR_BIND_MW, once, until it is
 * invalidated.  @lock covers everything after it; the window's entry in
 * mr_xa is found under RCU and dealloc waits a grace period.
 */
struct softrvt_mw {
	struct ib_mw ibmw;
	spinlock_t lock;		/* any context, before its MR's */
	u32 key;			/* matched whole; binds change its low byte */
	struct softrvt_mr *mr;		/* NULL: not bound; else n_mws counts it */
	u32 qpn;			/* type 2: the QP it is bound to */
	int access;			/* IB_ACCESS_REMOTE_* it grants */
	u64 iova;			/* its first byte, an address of the MR */
	u64 length;
};

/* The tag of a memory window's entry in mr_xa (xa_tag_pointer()). */
#define SOFTRVT_KEY_MW		1

/*
 * The header of struct rvt_rwq from <rdma/rvt-abi.h>, which the ring
 * starts with.  That struct ends in an array of flexible structures, which
 * sparse rejects, so the kernel names only the header and finds WQEs by
 * stride (softrvt_rwqe_ptr()); the memory layout is the same.
 */
struct softrvt_rwq_header {
	RDMA_ATOMIC_UAPI(u32, head);
	RDMA_ATOMIC_UAPI(u32, tail);
};

/*
 * A receive ring: a QP's receive queue or an SRQ.  WQEs and both indices
 * live in one allocation laid out as struct rvt_rwq, which is mmapped for
 * user objects.  The kernel is always the consumer and keeps the only tail
 * it trusts in @tail, publishing it to wq->tail.  The producer is whoever
 * owns the object; wq->head is read back and validated on every use, as
 * userspace may have written anything there.
 */
struct softrvt_rq {
	struct softrvt_rwq_header *wq;
	u32 size;			/* slots: max_wr + 1, one always empty */
	u32 stride;			/* bytes per struct rvt_rwqe */
	u8 max_sge;
	bool user;			/* vmalloc_user, to be mmapped */
	u32 tail;
	/* Serialises producers, the consumer and resize; taken in any context. */
	spinlock_t lock;
	/* Owns wq once set: the ring is freed when the last mapping goes. */
	struct rdma_user_mmap_entry *mmap_entry;
};

/* One scatter entry resolved to its MR (NULL: kernel virtual address). */
struct softrvt_sge {
	struct softrvt_mr *mr;
	u64 iova;
	u32 length;
};

/* A resolved scatter list and a cursor into it. */
struct softrvt_sge_state {
	struct softrvt_sge sge[SOFTRVT_MAX_SGE];
	u32 num_sge;
	u32 cur;			/* entry of the cursor */
	u32 offset;			/* bytes into that entry */
	u32 total_len;
};

struct softrvt_srq {
	struct ib_srq ibsrq;
	struct softrvt_rq rq;
	u32 limit;			/* armed SRQ limit, 0 if not; under rq.lock */
	/*
	 * An XRC SRQ is found by its number (ibsrq.ext.xrc.srq_num) in
	 * srq_xa: 1 while it is there, +1 for each responder using it.
	 */
	refcount_t refcount;
	struct completion released;
};

/* Kernel CQ: entries are struct ib_wc; user CQ: struct rvt_cq_wc ring. */
struct softrvt_cq {
	struct ib_cq ibcq;
	/* Serialises softrvt_cq_enter, poll, notify and resize; any context. */
	spinlock_t lock;
	u32 size;			/* slots: ibcq.cqe + 1 */
	u32 head;			/* producer, always the kernel */
	u32 tail;			/* consumer, for kernel CQs only */
	u8 notify;			/* IB_CQ_NEXT_COMP, IB_CQ_SOLICITED or 0 */
	bool overflowed;
	struct ib_wc *kqueue;
	struct rvt_cq_wc *queue;
	struct rdma_user_mmap_entry *mmap_entry;
};

/* A send WQE.  Kernel-private: every send goes through the kernel. */
struct softrvt_swqe {
	u64 wr_id;
	enum ib_wr_opcode opcode;
	int send_flags;
	__be32 imm_data;
	u32 length;			/* payload bytes */
	u64 remote_addr;		/* RDMA and atomics */
	u32 rkey;			/* also the key to invalidate */
	u64 compare_add;		/* ATOMIC_WRITE: its 8 bytes, as given */
	u64 swap;
	u8 flush_type;			/* FLUSH: IB_FLUSH_GLOBAL, _PERSISTENT */
	u8 flush_level;			/* FLUSH: IB_FLUSH_RANGE or IB_FLUSH_MR */
	u32 remote_qpn;			/* UD */
	u32 xrc_srqn;			/* XRC: the SRQ it is for, at the peer */
	u32 remote_qkey;
	u8 sl;				/* UD, from the AH */
	bool local;			/* UD: the AH's peer is on this device */
	struct softrvt_av av;		/* UD */
	/* On the wire (RC): the PSNs it spans, responses to READ included. */
	u32 psn;
	u32 lpsn;
	u32 pmtu;			/* its payload bytes per packet */
	enum ib_wc_status wire_status;	/* a local error found sending it */
	/* IB_WR_REG_MR: the MR, its new rights; its new key is in rkey. */
	struct softrvt_mr *reg_mr;
	int reg_access;			/* also IB_WR_BIND_MW's */
	/*
	 * IB_WR_BIND_MW: the MR by its lkey and the window's length; the
	 * window's first byte is in remote_addr, its new key in rkey.
	 */
	u32 bind_lkey;
	u64 bind_len;
	/* REG_MR, LOCAL_INV, BIND_MW: executed, never again after going back. */
	bool local_done;
	u32 num_sge;			/* 0 when the payload is inline */
	struct rvt_wqe_sge sg_list[];	/* or the inline payload */
};

/*
 * IB_WR_BIND_MW as softrvt_post_local_wr() takes it: ib_verbs defines no
 * layout for it, so softrvt_post_send() refuses the opcode.
 */
struct softrvt_bind_wr {
	struct ib_send_wr wr;
	u32 rkey;			/* the window's new key, which names it */
	u32 mr_lkey;
	u64 addr;
	u64 length;			/* 0: unbind (type 1 only) */
	int access;
};

/*
 * IB_WR_FLUSH and IB_WR_ATOMIC_WRITE as softrvt_post_placement_wr() takes
 * them: ib_verbs defines no layout for them either.
 */
struct softrvt_placement_send_wr {
	struct ib_send_wr wr;
	u64 remote_addr;
	u32 rkey;
	u32 length;			/* FLUSH: the range's bytes */
	u64 value;			/* ATOMIC_WRITE: its 8 bytes, as given */
	u8 flush_type;
	u8 flush_level;
};

static inline bool softrvt_opcode_is_placement(enum ib_wr_opcode opcode)
{
	return opcode == IB_WR_FLUSH || opcode == IB_WR_ATOMIC_WRITE;
}

/*
 * Where a WQE without SGEs keeps the bytes it sends: an inline payload in
 * its sg_list, an ATOMIC_WRITE's operand in compare_add.
 */
static inline void *softrvt_swqe_inline(struct softrvt_swqe *wqe)
{
	return wqe->opcode == IB_WR_ATOMIC_WRITE ? (void *)&wqe->compare_add :
						   (void *)wqe->sg_list;
}

/*
 * An RDMA READ request the responder took: answered a bounded number of
 * packets per engine run, and kept afterwards to check duplicates.
 */
struct softrvt_read_res {
	u32 psn;			/* of its first response */
	u32 lpsn;			/* of its last */
	u64 va;				/* the region it asked for */
	u32 len;
	u32 rkey;
	u32 mtu;			/* payload bytes per response */
	u32 msn;			/* its answers' AETH MSN */
	u32 srqn;			/* XRC: whose PD its rkey is checked in */
	bool answered;			/* its last response went out once */
	/*
	 * The responses this pass owes: from byte off up to end, at least
	 * one.  A duplicate asks for a range again; nothing else does.
	 */
	bool due;
	u32 off;
	u32 end;
};

/*
 * The RoCEv2 requester's state (req.c), only the QP's engine touches it
 * while the QP is in RTS, SQD or ERR.  cur is the next WQE to (re)transmit;
 * the send queue's s_tail the oldest not completed.
 */
struct softrvt_req {
	u32 cur;
	u32 cur_off;			/* bytes of the WQE at cur sent */
	u32 psn;			/* next PSN to send */
	u32 max_psn;			/* one past the highest PSN ever sent */
	bool rewound;			/* went back, no progress since */
	u8 backoff;			/* ACK timeouts in a row: timer << it */
	u8 resend_why;			/* enum softrvt_resend_why, last go-back */
	bool rnr_wait;			/* paused by an RNR NAK */
	/*
	 * READ and atomic requests sent and not all answered, oldest first:
	 * the PSN of each one's last answer.  The peer's responder holds a
	 * resource for each; max_rd_atomic bounds them.
	 */
	u32 rd_lpsn[SOFTRVT_MAX_RD_ATOMIC];
	u8 rd_first;
	u8 rd_count;
	u32 stop;			/* SOFTRVT_S_STOPPED: nothing from it is sent */
	unsigned long ack_deadline;	/* jiffies: when ack_timer is really due */
};

/*
 * The requester's completer (comp.c): what the answers told, and the
 * retries left for the WQE at the send queue's s_tail.  The engine alone
 * touches it; the requester reads it and consumes go_back.
 */
struct softrvt_comp {
	u32 acked_psn;			/* every PSN up to it is acknowledged */
	u64 rd_seen;			/* answers placed past acked_psn */
	u32 ack_hint;			/* highest PSN an ACK or NAK covered */
	bool go_back;			/* an answer showed a loss: go back */
	u8 go_back_why;			/* enum softrvt_resend_why of go_back */
	u8 rnr_retry;			/* RNR retries left for the WQE at s_tail */
	u8 retry;			/* timeout retries left for that WQE */
	bool retry_loaded;		/* both counters are loaded for it */
	bool failed;			/* a WQE completed in error: the rest flush */
};

/* The RoCEv2 responder's state (resp.c); only the engine touches it. */
struct softrvt_resp {
	u32 psn;			/* next PSN expected */
	u32 msn;
	bool nak_sent;			/* a sequence NAK for psn is out */
	bool ack_pending;		/* an ACK for psn - 1 is owed */
	bool in_msg;			/* within a multi-packet SEND or WRITE */
	bool has_rwqe;			/* r_wqe holds the current SEND's WQE */
	u8 msg_op;			/* opcode of the message's first packet */
	u32 len;			/* bytes of the current message so far */
	u64 va;				/* current WRITE: target, key and length */
	u32 rkey;
	u32 dma_len;
	struct {
		u32 psn;
		bool valid;
		u64 orig;
	} atomic[SOFTRVT_MAX_RD_ATOMIC];	/* replies to replay for duplicates */
	u8 atomic_next;
	/*
	 * READs taken, newest at read_next - 1.  The last read_pending of
	 * them make the pass being answered, oldest first: those with
	 * responses due; never more than the ring holds, so that a new READ
	 * never takes the slot of one in the pass.  read_held of them were
	 * never answered whole: the resources of max_dest_rd_atomic in use.
	 */
	struct softrvt_read_res read[SOFTRVT_MAX_RD_ATOMIC];
	u8 read_next;
	u8 read_pending;
	u8 read_held;
	u32 xrc_srqn;			/* XRC TGT: the SRQ of the message in progress */
};

struct softrvt_qp {
	struct ib_qp ibqp;
	struct softrvt_rq r_rq;		/* unused when attached to an SRQ */
	/* Serialises modify and query; process context. */
	struct mutex state_mutex;
	/* Written with softrvt_qp_set_state() under s_lock; read lock-free. */
	enum ib_qp_state state;
	struct softrvt_qp_state *state_page;	/* user QPs: mapped copy */
	struct rdma_user_mmap_entry *state_entry;
	struct ib_qp_attr attr;		/* as last modified, for query */
	struct ib_qp_cap cap;
	enum ib_sig_type sq_sig_type;
	/* Bound by `rdma statistic qp`, or NULL: see softrvt_qp_counts(). */
	struct softrvt_qp_counter __rcu *counter;

	/* Send queue: posted at s_head, executed and completed at s_tail. */
	spinlock_t s_lock;		/* SQ indices and state; any context */
	void *s_wq;
	u32 s_size;			/* slots: max_send_wr + 1 */
	u32 s_stride;
	u32 s_head;
	u32 s_tail;
	bool s_draining;		/* SQD entered, SQ_DRAINED not raised yet */
	struct work_struct send_work;	/* the send engine, see engine.c */
	struct mutex engine_lock;	/* held by the engine while it runs */
	struct timer_list rnr_timer;	/* RNR and ACK timeout waits */
	/* Engine scratch, used only by this QP's send_work. */
	struct softrvt_sge_state s_sge;
	struct softrvt_sge_state r_sge;
	/*
	 * A same-device message copied over several engine runs (ruc.c):
	 * its responder, referenced and counted in its r_senders, and
	 * whether r_wqe holds the receive WQE taken for it.  Meanwhile
	 * s_sge and r_sge keep their MRs and cursors, and req.cur_off counts
	 * the bytes copied.
	 */
	struct softrvt_qp *s_peer;
	bool s_peer_rwqe;
	/*
	 * Room for SOFTRVT_MAX_SGE entries: the responder's WQE while this QP's
	 * engine delivers to a QP of the device, or this QP's own while it
	 * receives from the wire.  A QP never does both for one message.
	 */
	struct rvt_rwqe *r_wqe;

	/* RC/UC/XRC: the path to the peer. */
	enum ib_mtu mtu;		/* see softrvt_qp_mtu() */
	bool s_local;			/* the peer is on this device */
	struct softrvt_av s_av;		/* primary path */
	struct dst_cache s_dst_cache;	/* the route of s_av */

	/* RoCEv2's three parts, each kept by one file: req.c, comp.c, resp.c. */
	struct softrvt_req req;
	struct softrvt_comp comp;
	struct softrvt_resp resp;
	struct sk_buff_head r_pkts;	/* received, for the engine */
	unsigned long s_flags;		/* SOFTRVT_S_*, set by the timers */
	struct timer_list ack_timer;	/* the local ACK timeout */
	bool s_mw_bound;		/* a type 2 window was bound to it */

	/*
	 * XRC.  An INI QP sends each WQE to the SRQ s_xrc_srqn named when it
	 * was posted (set by SOFTRVT_METHOD_QP_SET_XRC_SRQN).  A TGT QP has
	 * no queue of its own: each request names, in its XRCETH, an SRQ of
	 * the QP's XRC domain whose PD, WQEs and CQ serve it.  r_xsrq is that
	 * SRQ while a request is handled, under r_xrc_mutex: the QP's own
	 * engine and a sender of this device (ruc.c) both take it.
	 */
	struct ib_xrcd *xrcd;		/* TGT: its domain */
	u32 s_xrc_srqn;			/* INI, under s_lock */
	struct mutex r_xrc_mutex;
	struct softrvt_srq *r_xsrq;

	/* 1 while the QPN finds the QP, +1 for each sender delivering to it. */
	refcount_t refcount;
	/*
	 * Same-device senders between their check of this QP's state and
	 * the end of their delivery, see softrvt_engine_last_wqe().
	 */
	atomic_t r_senders;
	struct completion released;
};

static inline bool softrvt_is_ud_type(enum ib_qp_type type)
{
	return type == IB_QPT_UD || type == IB_QPT_GSI;
}

/* A requester that waits for ACKs: RC, and XRC's INI. */
static inline bool softrvt_is_rc_req(enum ib_qp_type type)
{
	return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
}

/* A responder that sends ACKs: RC, and XRC's TGT. */
static inline bool softrvt_is_rc_resp(enum ib_qp_type type)
{
	return type == IB_QPT_RC || type == IB_QPT_XRC_TGT;
}

static inline bool softrvt_is_xrc_type(enum ib_qp_type type)
{
	return type == IB_QPT_XRC_INI || type == IB_QPT_XRC_TGT;
}

static inline struct softrvt_dev_info *softrvt_to_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct softrvt_dev_info, ibdev);
}

static inline struct softrvt_pd *softrvt_to_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct softrvt_pd, ibpd);
}

static inline struct softrvt_ah *softrvt_to_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct softrvt_ah, ibah);
}

static inline struct softrvt_mr *softrvt_to_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct softrvt_mr, ibmr);
}

static inline struct softrvt_mw *softrvt_to_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct softrvt_mw, ibmw);
}

static inline struct softrvt_cq *softrvt_to_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct softrvt_cq, ibcq);
}

static inline struct softrvt_srq *softrvt_to_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct softrvt_srq, ibsrq);
}

static inline struct softrvt_qp *softrvt_to_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct softrvt_qp, ibqp);
}

/*
 * Where a QP counts: in the counter it is bound to, else in the device's.
 * Under rcu_read_lock(): softrvt_counter_unbind_qp() waits for a count in
 * flight before ib_core reads the counter a last time.
 */
static inline atomic64_t *softrvt_qp_counts(struct softrvt_qp *qp)
{
	struct softrvt_qp_counter *qc = rcu_dereference(qp->counter);

	return qc ? qc->counts : softrvt_to_dev(qp->ibqp.device)->counters;
}

/* Count for a QP.  Any context. */
static inline void softrvt_qp_count(struct softrvt_qp *qp, enum softrvt_counter c,
				    u64 n)
{
	rcu_read_lock();
	atomic64_add(n, &softrvt_qp_counts(qp)[c]);
	rcu_read_unlock();
}

/* Count a packet a QP sent or received, and its payload.  Any context. */
static inline void softrvt_qp_count_pkt(struct softrvt_qp *qp, bool tx, u32 len)
{
	atomic64_t *counts;

	rcu_read_lock();
	counts = softrvt_qp_counts(qp);
	atomic64_inc(&counts[tx ? SOFTRVT_CNT_TX_PACKETS : SOFTRVT_CNT_RX_PACKETS]);
	atomic64_add(len, &counts[tx ? SOFTRVT_CNT_TX_BYTES : SOFTRVT_CNT_RX_BYTES]);
	rcu_read_unlock();
}

/* Whether a QP has a receive ring of its own: not on an SRQ, not XRC. */
static inline bool softrvt_qp_has_rq(const struct softrvt_qp *qp)
{
	return !qp->ibqp.srq && !softrvt_is_xrc_type(qp->ibqp.qp_type);
}

/*
 * The PD a responder's receive WQEs and rkeys are checked in: an XRC TGT
 * QP has none of its own, it uses the SRQ of the request (NULL between
 * requests, which no lookup then matches).
 */
static inline struct ib_pd *softrvt_qp_rx_pd(const struct softrvt_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		return qp->r_xsrq ? qp->r_xsrq->ibsrq.pd : NULL;
	return qp->ibqp.pd;
}

/* Where a responder's receive completions go; NULL: nowhere. */
static inline struct softrvt_cq *softrvt_qp_rx_cq(const struct softrvt_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		return qp->r_xsrq ? softrvt_to_cq(qp->r_xsrq->ibsrq.ext.cq) :
				    NULL;
	return softrvt_to_cq(qp->ibqp.recv_cq);
}

/*
 * Answer a verb with as much of @resp as the caller's buffer takes: an
 * older provider may know a shorter response.
 */
static inline int softrvt_copy_resp(struct ib_udata *udata, void *resp,
				    size_t len)
{
	return ib_copy_to_udata(udata, resp, min(len, udata->outlen));
}

/* Bits of softrvt_qp.s_flags. */
#define SOFTRVT_S_ACK_TIMEOUT	0	/* the ACK timer expired */
#define SOFTRVT_S_RNR_DONE		1	/* the RNR wait is over */
#define SOFTRVT_S_STOPPED		2	/* a WQE failed: see req.stop */
#define SOFTRVT_S_LAST_WQE		3	/* ERR with an SRQ: LAST_WQE_REACHED owed */
#define SOFTRVT_S_COMM_EST		4	/* COMM_EST raised since the last RESET */

/*
 * The next piece of the @len bytes that skb_prepare_seq_read() set @st
 * to walk, @done of them walked: 0 at their end, or where the skb ends
 * early.  skb_seq_read() may hand out more than asked for; the caller
 * ends with skb_abort_seq_read() whether or not the walk finished.
 */
static inline u32 softrvt_skb_seq_next(struct skb_seq_state *st, u32 done,
				       u32 len, const u8 **data)
{
	if (done >= len)
		return 0;
	return min(skb_seq_read(done, data, st), len - done);
}

static inline struct rvt_rwqe *softrvt_rwqe_ptr(const struct softrvt_rq *rq,
						u32 n)
{
	return (struct rvt_rwqe *)((char *)(rq->wq + 1) + (size_t)n * rq->stride);
}

static inline struct softrvt_swqe *softrvt_get_swqe_ptr(const struct softrvt_qp *qp,
							u32 n)
{
	return (struct softrvt_swqe *)((char *)qp->s_wq + (size_t)n * qp->s_stride);
}

/* The send queue's slot after @i: every index of the ring moves by this. */
static inline u32 softrvt_sq_next(const struct softrvt_qp *qp, u32 i)
{
	return i + 1 == qp->s_size ? 0 : i + 1;
}

/* The receive side works in every state from RTR to SQE. */
static inline bool softrvt_qp_state_receives(enum ib_qp_state state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/* A train's packets, ICRCs included, fit in one UDP length field. */
#define SOFTRVT_TRAIN_MAX_BYTES	(65535U - 8U)

/* What a path lets one train carry; bytes 0: it takes no trains. */
struct softrvt_train_limit {
	u32 bytes;
	u32 segs;
};

/*
 * What one run of a QP's engine may still do before it yields its CPU,
 * see softrvt_engine(): WQEs, payload bytes copied or sent, packets sent.
 */
struct softrvt_budget {
	u32 wqes;
	u32 bytes;
	u32 pkts;
};

/*
 * Spend some of a run's budget.  Return: whether the WQE at hand may go
 * on with it.
 */
static inline bool softrvt_budget_spend(struct softrvt_budget *b, u32 pkts,
					u32 bytes)
{
	b->pkts -= min(b->pkts, pkts);
	b->bytes -= min(b->bytes, bytes);
	return b->pkts && b->bytes;
}

/* How a send WQE's turn in an engine run ended. */
enum softrvt_ruc_result {
	SOFTRVT_RUC_DONE,		/* complete the WQE with the status given */
	SOFTRVT_RUC_RNR,		/* no receive WQE at an RC responder: retry */
	SOFTRVT_RUC_RETRY,		/* no RC responder would answer: time out */
	SOFTRVT_RUC_MORE,		/* the budget ran out within it: go on later */
};

#include "loc.h"

#endif /* SOFTRVT_H */
