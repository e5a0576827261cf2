/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softrvt user/kernel ABI: the udata exchanged on verbs commands.
 *
 * The shared rings themselves use the rdmavt layouts from <rdma/rvt-abi.h>:
 * struct rvt_cq_wc for user CQs and struct rvt_rwq/struct rvt_rwqe for
 * receive queues and SRQs.  Each ring is one mmap() at the offset returned
 * here; its length is the header plus (entries + 1) slots, page aligned.
 */
#ifndef SOFTRVT_ABI_USER_H
#define SOFTRVT_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define SOFTRVT_UVERBS_ABI_VERSION	1

/* Response to create_cq and resize_cq: where to mmap the CQ ring. */
struct softrvt_cq_resp {
	__aligned_u64 mmap_offset;
};

/* Response to create_srq: where to mmap the SRQ's receive ring. */
struct softrvt_create_srq_resp {
	__aligned_u64 mmap_offset;
};

/*
 * modify_srq has no response buffer.  When IB_SRQ_MAX_WR resizes a user
 * SRQ, the kernel writes the new ring's mmap offset (never 0) as a __u64
 * to the user address given here, before it moves the WQEs over.  The
 * value is meaningful only if the command succeeds; if the address cannot
 * be written the command fails with EFAULT and the SRQ is unchanged.
 */
struct softrvt_modify_srq_cmd {
	__aligned_u64 offset_addr;
};

/*
 * Response to create_qp: where to mmap the receive ring (0: none, the QP
 * uses an SRQ) and the QP's state page (struct softrvt_qp_state).
 */
struct softrvt_create_qp_resp {
	__aligned_u64 rq_mmap_offset;
	__aligned_u64 state_mmap_offset;
};

/*
 * The QP state page, one page mapped read-only.  The kernel stores the
 * QP's state (enum ib_qp_state) there before it acts on a change.  When a
 * QP enters ERR the kernel flushes the receive ring once; a WQE written
 * to the ring after that is flushed only if the provider asks: after
 * publishing a WQE, a full memory barrier, then reading IB_QPS_ERR here
 * means "post through the kernel" (an empty post_recv command will do).
 */
struct softrvt_qp_state {
	__u32 state;
};

/*
 * ib_uverbs' post_send carries neither IB_UVERBS_WR_BIND_MW (of
 * ibv_bind_mw() and IBV_WR_BIND_MW) nor IB_UVERBS_WR_LOCAL_INV.  The
 * provider posts each such WR with the driver method
 * SOFTRVT_METHOD_QP_POST_MW_WR of the QP object; it joins the send queue
 * after the WRs posted before it, and runs and completes in that order.
 * The method fails as post_send would (EINVAL, ENOMEM for a full send
 * queue); the keys, the range and the rights are checked when the WR
 * runs, and a WR they do not allow completes with an error.
 */
enum softrvt_qp_methods {
	SOFTRVT_METHOD_QP_POST_MW_WR = (1U << UVERBS_ID_NS_SHIFT),
	SOFTRVT_METHOD_QP_SET_XRC_SRQN,
	SOFTRVT_METHOD_QP_POST_PLACEMENT_WR,
};

enum softrvt_post_mw_wr_attrs {
	SOFTRVT_ATTR_POST_MW_WR_QP_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SOFTRVT_ATTR_POST_MW_WR_WR,	/* struct softrvt_mw_wr */
};

struct softrvt_mw_wr {
	__aligned_u64 wr_id;
	__u32 opcode;		/* IB_UVERBS_WR_BIND_MW or _LOCAL_INV */
	__u32 send_flags;	/* IB_UVERBS_SEND_SIGNALED and the like */
	/*
	 * BIND_MW: the window's new rkey, which names the window: only its
	 * low byte may differ from the window's key.  LOCAL_INV: the rkey
	 * to invalidate.
	 */
	__u32 rkey;
	__u32 mr_lkey;		/* BIND_MW: the MR's lkey */
	__aligned_u64 addr;	/* BIND_MW: the window's first byte in the MR */
	__aligned_u64 length;	/* BIND_MW: 0 unbinds a type 1 window */
	__u32 access;		/* BIND_MW: IB_UVERBS_ACCESS_REMOTE_* */
	__u32 reserved;		/* 0 */
};

/*
 * ib_uverbs' post_send carries no XRC SRQ number either.  The WRs an XRC
 * INI QP takes go to the SRQ last set with SOFTRVT_METHOD_QP_SET_XRC_SRQN
 * (0 until then, which no SRQ has); the provider sets it before it posts
 * WRs for another SRQ, with the posts of the QP serialised.
 */
enum softrvt_set_xrc_srqn_attrs {
	SOFTRVT_ATTR_SET_XRC_SRQN_QP_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SOFTRVT_ATTR_SET_XRC_SRQN_SRQN,	/* __u32 */
};

/*
 * Nor IB_UVERBS_WR_FLUSH and IB_UVERBS_WR_ATOMIC_WRITE, the memory
 * placement extensions (IBA 1.5 annex A19) of ibv_wr_flush() and
 * ibv_wr_atomic_write(), RC only: the provider posts each with
 * SOFTRVT_METHOD_QP_POST_PLACEMENT_WR, which joins the send queue in
 * order as SOFTRVT_METHOD_QP_POST_MW_WR does and fails as post_send would.
 */
enum softrvt_post_placement_wr_attrs {
	SOFTRVT_ATTR_POST_PLACEMENT_WR_QP_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SOFTRVT_ATTR_POST_PLACEMENT_WR_WR,	/* struct softrvt_placement_wr */
};

struct softrvt_placement_wr {
	__aligned_u64 wr_id;
	__u32 opcode;		/* IB_UVERBS_WR_FLUSH or _ATOMIC_WRITE */
	__u32 send_flags;	/* IB_UVERBS_SEND_SIGNALED and the like */
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 length;		/* FLUSH: the range's bytes; else 0 */
	__aligned_u64 value;	/* ATOMIC_WRITE: its 8 bytes, as given */
	__u8 flush_type;	/* FLUSH: IB_FLUSH_GLOBAL and/or _PERSISTENT */
	__u8 flush_level;	/* FLUSH: IB_FLUSH_RANGE or IB_FLUSH_MR */
	__u8 reserved[6];	/* 0 */
};

#endif /* SOFTRVT_ABI_USER_H */
