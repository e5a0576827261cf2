// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_mw: memory windows, type 1 and type 2, as a peer uses them.
 *
 * B's MR grants no remote right of its own, only IBV_ACCESS_MW_BIND: A
 * reaches B's memory through windows B binds, with ibv_bind_mw() (type 1)
 * or an IBV_WR_BIND_MW on B's QP (type 2).  A writes and reads through
 * them and the bytes are checked; an access past a window, through a key
 * a bind replaced, through a type 2 window on another QP than the one it
 * is bound to, or after an invalidation (B's IBV_WR_LOCAL_INV, A's SEND
 * with Invalidate) completes with IBV_WC_REM_ACCESS_ERR and leaves B's
 * memory alone.  An MR with a window bound to it is not deregistered.
 *
 * A and B are two devices (softrvt devices in two network namespaces:
 * every packet crosses the wire) or one device twice (the same-device
 * path).  The sides and QP pairs are rc_pair.c's.
 *
 * The driver method that carries BIND_MW and LOCAL_INV is also called
 * directly, with what the provider never sends: a WR with its reserved
 * word set, or of another opcode, must fail with EINVAL and post nothing.
 *
 * usage: wire_mw DEV_A GID_A DEV_B GID_B   prints TAP, exits 1 on any
 *                                            failure
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>


#include <infiniband/verbs.h>
#include <rdma/softrvt-abi.h>

#include "rc_pair.h"
#include "tap.h"

#define WIN_OFF		4096	/* of B's windows in its buffer */
#define WIN_LEN		8192
#define ACC_WIN		(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct ibv_mw *alloc_mw(enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(sb.pd, type);

	if (!mw)
		detail("ibv_alloc_mw type %d on %s: %s", type, sb.dev,
		       strerror(errno));
	return mw;
}

static bool dealloc_mw(struct ibv_mw *mw)
{
	int ret = mw ? ibv_dealloc_mw(mw) : 0;

	if (ret)
		detail("ibv_dealloc_mw: %s", strerror(ret));
	return !ret;
}

static struct ibv_mw_bind_info bind_info(struct ibv_mr *mr, size_t off,
					 uint64_t len, int access)
{
	struct ibv_mw_bind_info info = {
		.mr = mr,
		.addr = (uintptr_t)(sb.buf + off),
		.length = len,
		.mw_access_flags = access,
	};

	return info;
}

/* ibv_bind_mw() of a type 1 window on B's @qp, and its completion. */
static bool bind_type1(struct ibv_qp *qp, struct ibv_mw *mw, uint64_t wr_id,
		       struct ibv_mw_bind_info info)
{
	struct ibv_mw_bind bind = {
		.wr_id = wr_id,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = info,
	};
	uint32_t old = mw->rkey;
	int ret = ibv_bind_mw(qp, mw, &bind);

	if (ret) {
		detail("ibv_bind_mw: %s (%d)", strerror(ret), ret);
		return false;
	}
	if ((mw->rkey ^ old) >> 8 || mw->rkey == old) {
		detail("rkey 0x%08x after the bind, was 0x%08x: want a new low byte only",
		       mw->rkey, old);
		return false;
	}
	return expect_wc(&sb, "B", wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1,
			 qp, WAIT_MS);
}

/*
 * An IBV_WR_BIND_MW of a type 2 window on B's @qp, and its completion.
 * Return: the window's rkey, 0 on failure.
 */
static uint32_t bind_type2(struct ibv_qp *qp, struct ibv_mw *mw,
			   uint64_t wr_id, struct ibv_mw_bind_info info)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = info,
		},
	};

	if (!post_send(qp, &wr) ||
	    !expect_wc(&sb, "B", wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1, qp,
		       WAIT_MS))
		return 0;
	return wr.bind_mw.rkey;
}

/* B's IBV_WR_LOCAL_INV of @rkey, and its completion. */
static bool local_inv(struct ibv_qp *qp, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	};

	return post_send(qp, &wr) &&
	       expect_wc(&sb, "B", wr_id, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, -1,
			 qp, WAIT_MS);
}

/* A's RDMA WRITE of @len bytes at @off of A's buffer to @off of B's. */
static bool write_ok(struct pair *p, uint32_t rkey, size_t off, uint32_t len,
		     uint32_t seed, uint64_t wr_id)
{
	struct ibv_sge sg = sge_of(&sa, off, len);
	struct ibv_send_wr wr = rdma_of(wr_id, IBV_WR_RDMA_WRITE, &sg, off,
					rkey);

	pattern(sa.buf + off, len, seed);
	return post_send(p->qa, &wr) &&
	       expect_wc(&sa, "A", wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1,
			 p->qa, WAIT_MS) &&
	       same(sb.buf + off, sa.buf + off, len, "B's memory") &&
	       all_bytes(sb.buf, off, CANARY, "B before the WRITE") &&
	       all_bytes(sb.buf + off + len, BUF_SIZE - off - len, CANARY,
			 "B after the WRITE");
}

/* A's RDMA READ of @len bytes at @off of B's buffer into @off of A's. */
static bool read_ok(struct pair *p, uint32_t rkey, size_t off, uint32_t len,
		    uint64_t wr_id)
{
	struct ibv_sge sg = sge_of(&sa, off, len);
	struct ibv_send_wr wr = rdma_of(wr_id, IBV_WR_RDMA_READ, &sg, off,
					rkey);

	memset(sa.buf + off, CANARY, len);
	return post_send(p->qa, &wr) &&
	       expect_wc(&sa, "A", wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len,
			 p->qa, WAIT_MS) &&
	       same(sa.buf + off, sb.buf + off, len, "A's READ buffer");
}

/*
 * A's RDMA WRITE that B must refuse: A completes IBV_WC_REM_ACCESS_ERR,
 * B's QP goes to ERR and B's memory is as it was.
 */
static bool write_refused(struct pair *p, uint32_t rkey, size_t off,
			  uint32_t len, uint64_t wr_id)
{
	static uint8_t before[BUF_SIZE];
	struct ibv_sge sg = sge_of(&sa, off, len);
	struct ibv_send_wr wr = rdma_of(wr_id, IBV_WR_RDMA_WRITE, &sg, off,
					rkey);

	memcpy(before, sb.buf, BUF_SIZE);
	pattern(sa.buf + off, len, 0x5eed);
	return post_send(p->qa, &wr) &&
	       expect_wc(&sa, "A", wr_id, IBV_WC_REM_ACCESS_ERR, -1, -1, p->qa,
			 WAIT_MS) &&
	       wait_state(p->qb, IBV_QPS_ERR, WAIT_MS, "B") &&
	       same(sb.buf, before, BUF_SIZE, "B's memory");
}

/* A type 1 window: WRITE and READ inside it; not a byte past its end. */
static void case_type1(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_mw *mw;
	struct pair p;

	if (!case_begin(&p, "type 1", &c))
		return;
	mw = alloc_mw(IBV_MW_TYPE_1);
	ok(mw && bind_type1(p.qb, mw, 0x101,
			    bind_info(sb.mr, WIN_OFF, WIN_LEN, ACC_WIN)),
	   "ibv_bind_mw of %d bytes: B completes IBV_WC_BIND_MW, the rkey's low byte moves",
	   WIN_LEN);
	ok(mw && write_ok(&p, mw->rkey, WIN_OFF + 1000, 5000, 1, 0x102),
	   "RDMA WRITE of 5000 bytes through the window: the bytes land, nothing around them");
	ok(mw && read_ok(&p, mw->rkey, WIN_OFF + WIN_LEN - 3000, 3000, 0x103),
	   "RDMA READ of the window's last 3000 bytes: A reads them");
	ok(mw && write_refused(&p, mw->rkey, WIN_OFF + WIN_LEN - 8, 16, 0x104),
	   "RDMA WRITE 8 bytes past the window's end: IBV_WC_REM_ACCESS_ERR, B untouched");
	ok(dealloc_mw(mw), "ibv_dealloc_mw");
	pair_down(&p);
}

/*
 * A type 1 window bound again: the old key stops working, the new one
 * works in the new range; a length of 0 unbinds it.
 */
static void case_type1_rebind(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_mw *mw;
	uint32_t first;
	struct pair p;

	if (!case_begin(&p, "type 1 bound again", &c))
		return;
	mw = alloc_mw(IBV_MW_TYPE_1);
	ok(mw && bind_type1(p.qb, mw, 0x201,
			    bind_info(sb.mr, WIN_OFF, 4096, ACC_WIN)),
	   "bound to 4096 bytes");
	first = mw ? mw->rkey : 0;
	ok(mw && bind_type1(p.qb, mw, 0x202,
			    bind_info(sb.mr, WIN_OFF + WIN_LEN, 4096, ACC_WIN)),
	   "bound again to the next 4096 bytes");
	ok(mw && write_ok(&p, mw->rkey, WIN_OFF + WIN_LEN, 4096, 2, 0x203),
	   "RDMA WRITE through the new key, in the new range");
	ok(mw && write_refused(&p, first, WIN_OFF, 64, 0x204),
	   "RDMA WRITE through the key the bind replaced: IBV_WC_REM_ACCESS_ERR");
	pair_down(&p);

	if (!case_begin(&p, "type 1 unbound", &c)) {
		dealloc_mw(mw);
		return;
	}
	ok(mw && bind_type1(p.qb, mw, 0x205, bind_info(sb.mr, WIN_OFF, 4096,
						       ACC_WIN)) &&
	   write_ok(&p, mw->rkey, WIN_OFF, 100, 3, 0x206),
	   "bound from another QP of the PD, it works");
	ok(mw && bind_type1(p.qb, mw, 0x207, bind_info(sb.mr, 0, 0, 0)),
	   "ibv_bind_mw with a length of 0");
	ok(mw && write_refused(&p, mw->rkey, WIN_OFF, 100, 0x208),
	   "RDMA WRITE through the unbound window: IBV_WC_REM_ACCESS_ERR");
	ok(dealloc_mw(mw), "ibv_dealloc_mw");
	pair_down(&p);
}

/*
 * A type 2 window: bound to B's QP, WRITE and READ through it; no access
 * through another QP pair; invalidated by B's LOCAL_INV.
 */
static void case_type2_local_inv(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_mw *mw;
	uint32_t rkey = 0;
	struct pair p, p2;
	bool up;

	if (!case_begin(&p, "type 2, LOCAL_INV", &c))
		return;
	mw = alloc_mw(IBV_MW_TYPE_2);
	if (mw)
		rkey = bind_type2(p.qb, mw, 0x301,
				  bind_info(sb.mr, WIN_OFF, WIN_LEN, ACC_WIN));
	ok(rkey && rkey >> 8 == mw->rkey >> 8,
	   "IBV_WR_BIND_MW: B completes IBV_WC_BIND_MW");
	ok(rkey && write_ok(&p, rkey, WIN_OFF, WIN_LEN, 4, 0x302),
	   "RDMA WRITE of the whole window");
	ok(rkey && read_ok(&p, rkey, WIN_OFF + 100, 1000, 0x303),
	   "RDMA READ through it");

	/* Bound to p.qb: the QP of another pair may not use it. */
	up = pair_up(&p2, &c);
	ok(up && rkey && write_refused(&p2, rkey, WIN_OFF, 64, 0x304),
	   "RDMA WRITE through it to another QP of B: IBV_WC_REM_ACCESS_ERR");
	pair_down(&p2);
	tap_case = "type 2, LOCAL_INV";

	ok(rkey && local_inv(p.qb, rkey, 0x305),
	   "B's IBV_WR_LOCAL_INV of it: B completes IBV_WC_LOCAL_INV");
	ok(rkey && write_refused(&p, rkey, WIN_OFF, 64, 0x306),
	   "RDMA WRITE through it after LOCAL_INV: IBV_WC_REM_ACCESS_ERR");
	ok(dealloc_mw(mw), "ibv_dealloc_mw");
	pair_down(&p);
}

/* A type 2 window invalidated by A's SEND with Invalidate. */
static void case_type2_send_inv(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_mw *mw;
	uint32_t rkey = 0;
	struct ibv_sge sg;
	struct ibv_wc wc;
	struct pair p;
	bool got;

	if (!case_begin(&p, "type 2, SEND with Invalidate", &c))
		return;
	mw = alloc_mw(IBV_MW_TYPE_2);
	if (mw)
		rkey = bind_type2(p.qb, mw, 0x401,
				  bind_info(sb.mr, WIN_OFF, WIN_LEN, ACC_WIN));
	ok(rkey && write_ok(&p, rkey, WIN_OFF + WIN_LEN - 100, 100, 5, 0x402),
	   "bound, RDMA WRITE through it");

	pattern(sa.buf, 200, 6);
	sg = sge_of(&sa, 0, 200);
	wr = wr_of(0x403, IBV_WR_SEND_WITH_INV, &sg);
	wr.invalidate_rkey = rkey;
	got = rkey && post_recv(p.qb, 0x4b1, 0, 1024) && post_send(p.qa, &wr) &&
	      expect_wc(&sa, "A", 0x403, IBV_WC_SUCCESS, IBV_WC_SEND, -1, p.qa,
			WAIT_MS);
	ok(got, "SEND_WITH_INV naming it: A completes IBV_WC_SUCCESS");
	memset(&wc, 0, sizeof(wc));
	got = got && wait_wc(&sb, &wc, WAIT_MS, "B");
	if (got && (wc.wr_id != 0x4b1 || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != 200 ||
		    wc.wc_flags != IBV_WC_WITH_INV ||
		    wc.invalidated_rkey != rkey)) {
		detail_wc("B", &wc);
		detail("B: want wr_id 0x4b1, IBV_WC_RECV of 200 bytes, wc_flags IBV_WC_WITH_INV (0x%x) alone, invalidated_rkey 0x%08x; got 0x%08x",
		       IBV_WC_WITH_INV,
		       rkey, wc.invalidated_rkey);
		got = false;
	}
	ok(got && same(sb.buf, sa.buf, 200, "B's receive"),
	   "B's receive completes with IBV_WC_WITH_INV and the window's rkey, the bytes in");
	ok(rkey && write_refused(&p, rkey, WIN_OFF, 64, 0x404),
	   "RDMA WRITE through it after the SEND: IBV_WC_REM_ACCESS_ERR");
	ok(dealloc_mw(mw), "ibv_dealloc_mw");
	pair_down(&p);
}

/*
 * An MR with a window bound to it is not deregistered (EBUSY); once the
 * window is gone, it is.  A window deallocated while bound takes its key
 * with it.
 */
static void case_mr_busy(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	uint32_t rkey = 0;
	struct pair p;
	int ret;

	if (!case_begin(&p, "MR with a window", &c))
		return;
	mr = ibv_reg_mr(sb.pd, sb.buf, BUF_SIZE,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!mr)
		detail("ibv_reg_mr: %s", strerror(errno));
	mw = mr ? alloc_mw(IBV_MW_TYPE_2) : NULL;
	if (mw)
		rkey = bind_type2(p.qb, mw, 0x501,
				  bind_info(mr, WIN_OFF, 4096, ACC_WIN));
	ret = rkey ? ibv_dereg_mr(mr) : 0;
	if (rkey && ret != EBUSY)
		detail("ibv_dereg_mr: %s (%d), want EBUSY", strerror(ret), ret);
	ok(rkey && ret == EBUSY,
	   "ibv_dereg_mr of an MR with a type 2 window bound: EBUSY");
	ok(rkey && write_ok(&p, rkey, WIN_OFF, 4096, 7, 0x502),
	   "the window still works");
	ok(dealloc_mw(mw), "ibv_dealloc_mw of the bound window");
	ok(rkey && write_refused(&p, rkey, WIN_OFF, 64, 0x503),
	   "RDMA WRITE through the deallocated window: IBV_WC_REM_ACCESS_ERR");
	ret = mr ? ibv_dereg_mr(mr) : -1;
	if (ret)
		detail("ibv_dereg_mr: %s (%d)", strerror(ret), ret);
	ok(!ret, "then ibv_dereg_mr succeeds");
	pair_down(&p);
}

/* SOFTRVT_METHOD_QP_POST_MW_WR without the provider: 0 or the errno. */
static int post_mw_wr_raw(struct ibv_qp *qp, const struct softrvt_mw_wr *wr)
{
	return qp_method_raw(qp, SOFTRVT_METHOD_QP_POST_MW_WR,
			     SOFTRVT_ATTR_POST_MW_WR_QP_HANDLE,
			     SOFTRVT_ATTR_POST_MW_WR_WR, wr, sizeof(*wr));
}

/*
 * The method with bad WRs: each refused with EINVAL, nothing completes.
 * A good one first, so that the refusals are not the call's own fault;
 * a bind naming no window last: accepted, it fails when it runs.
 */
static void case_method_bad_input(void)
{
	struct pair_cfg c = default_cfg();
	struct softrvt_mw_wr wr;
	struct ibv_mw *mw;
	struct pair p;
	int ret;

	if (!case_begin(&p, "driver method, bad input", &c))
		return;
	mw = alloc_mw(IBV_MW_TYPE_2);
	wr = (struct softrvt_mw_wr) {
		.wr_id = 0x601,
		.opcode = IB_UVERBS_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.rkey = mw ? ibv_inc_rkey(mw->rkey) : 0,
		.mr_lkey = sb.mr->lkey,
		.addr = (uintptr_t)(sb.buf + WIN_OFF),
		.length = 4096,
		.access = IBV_ACCESS_REMOTE_WRITE,
	};
	ret = mw ? post_mw_wr_raw(p.qb, &wr) : -1;
	ok(!ret && expect_wc(&sb, "B", 0x601, IBV_WC_SUCCESS, IBV_WC_BIND_MW,
			     -1, p.qb, WAIT_MS) &&
	   write_ok(&p, wr.rkey, WIN_OFF, 4096, 8, 0x602),
	   "a well-formed BIND_MW through the method binds (returned %d)",
	   ret);

	wr.wr_id = 0x603;
	wr.reserved = 1;
	ret = post_mw_wr_raw(p.qb, &wr);
	ok(ret == EINVAL && cq_empty(&sb, "after the refused WR"),
	   "reserved word set: EINVAL, nothing posted (returned %d)", ret);

	wr.reserved = 0;
	wr.opcode = IB_UVERBS_WR_SEND;
	ret = post_mw_wr_raw(p.qb, &wr);
	ok(ret == EINVAL && cq_empty(&sb, "after the refused WR"),
	   "opcode SEND: EINVAL, nothing posted (returned %d)", ret);

	wr.opcode = IB_UVERBS_WR_BIND_MW;
	wr.wr_id = 0x604;
	wr.rkey ^= 0xffffff00;
	ret = post_mw_wr_raw(p.qb, &wr);
	ok(!ret && expect_wc(&sb, "B", 0x604, IBV_WC_MW_BIND_ERR, -1, -1,
			     p.qb, WAIT_MS),
	   "a bind whose key names no window: posted, completes IBV_WC_MW_BIND_ERR (returned %d)",
	   ret);
	drain(&sb);
	ok(dealloc_mw(mw), "ibv_dealloc_mw");
	pair_down(&p);
}

int main(int argc, char **argv)
{
	bool up;

	if (!sides_from_args(argc, argv, argc > 0 ? argv[0] : "wire_mw",
			     "softrvt1 1 softrvt2 1, or softrvt0 1 softrvt0 1"))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");

	up = ok(side_open(&sa, IBV_ACCESS_LOCAL_WRITE),
		"open A: %s, GID %d, PD, CQ, MR", sa.dev, sa.gid_index);
	up = ok(side_open(&sb, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
		"open B: %s, GID %d, PD, CQ, MR with only local write and IBV_ACCESS_MW_BIND",
		sb.dev, sb.gid_index) && up;
	if (up) {
		case_type1();
		case_type1_rebind();
		case_type2_local_inv();
		case_type2_send_inv();
		case_mr_busy();
		case_method_bad_input();
	}
	sides_close();
	return tap_done();
}
