// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wr_ex: the extended verbs API, ibv_wr_*() on extended QPs and the
 * ibv_start_poll() iterator on extended CQs.
 *
 * Every operation softrvt offers through ibv_wr_*() is posted on RC (A
 * requests, B responds) and UD, and every completion is read with the
 * iterator: the bytes that arrive, and the completions' opcode, byte_len,
 * immediate data, wc_flags, qp_num and src_qp.  The RC batch of every
 * data operation is also posted with ibv_post_send() and polled with
 * ibv_poll_cq() on a second pair: both must see the same completions.
 *
 * FLUSH and ATOMIC_WRITE, which exist only in this API: the eight bytes
 * land, a FLUSH completes after the WRITE it follows, and a persistent
 * FLUSH, a FLUSH through a key without the right, a misaligned
 * ATOMIC_WRITE and ibv_post_send() of either fail as they must.  A fifth
 * argument, "placement", runs those alone: the wire tests run them
 * against rdma_rxe both ways.
 *
 * Errors: a bad lkey completes with IBV_WC_LOC_PROT_ERR; a batch with a
 * bad WR fails ibv_wr_complete() with the errno ibv_post_send() gives for
 * that WR, and nothing of it is posted (no completion, no byte moved); a
 * QP not yet in RTS takes no batch; extended objects softrvt cannot
 * honour are refused with EOPNOTSUPP.
 *
 * usage: wr_ex DEV_A GID_A DEV_B GID_B [placement]   prints TAP, exits 1
 *                                                      on any failure
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/softrvt-abi.h>

#include "rc_pair.h"
#include "tap.h"

/* Everything softrvt's CQ ring holds for a completion. */
#define WC_FLAGS	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			 IBV_WC_EX_WITH_DLID_PATH_BITS)
#define RC_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND_WITH_INV | \
			 IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define PLACEMENT_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_FLUSH | \
			 IBV_QP_EX_WITH_ATOMIC_WRITE)
/* As pyverbs' test_qpex gives its RC QPs: both flush types. */
#define PLACEMENT_ACC	(ACC_REMOTE | IBV_ACCESS_FLUSH_GLOBAL | \
			 IBV_ACCESS_FLUSH_PERSISTENT)
#define UD_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define MAX_INLINE	64
#define MAX_SGE		2
#define QKEY		0x11111111
#define GRH_LEN		40
#define QUIET_MS	300	/* how long "nothing arrives" is watched */

/* One completion, every field the extended CQ offers. */
struct xwc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t byte_len;
	uint32_t imm;			/* imm_data or invalidated_rkey */
	unsigned int flags;
	uint32_t qp_num;
	uint32_t src_qp;
};

static struct ibv_cq_ex *cqx_a, *cqx_b;
static bool exact_caps = true;	/* the QPs' caps must be as asked */
/* rdma_rxe's FLUSH is not RoCEv2's: see pyverbs.rst, "FLUSH and rxe". */
static bool with_flush = true;
static uint8_t big_inline[4096];	/* more than any QP's max_inline_data */

static struct ibv_cq_ex *make_cq_ex(struct side *s)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = CQ_SIZE,
		.wc_flags = WC_FLAGS,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(s->ctx, &ca);

	if (!cq)
		detail("ibv_create_cq_ex %s: %s", s->dev, strerror(errno));
	return cq;
}

/* The side's CQ becomes an extended one; rc_pair.c's helpers poll it too. */
static bool side_cq_ex(struct side *s, struct ibv_cq_ex **cqx)
{
	*cqx = make_cq_ex(s);
	if (!*cqx)
		return false;
	if (ibv_destroy_cq(s->cq)) {
		detail("ibv_destroy_cq %s", s->dev);
		return false;
	}
	s->cq = ibv_cq_ex_to_cq(*cqx);
	return true;
}

static void read_xwc(struct ibv_cq_ex *cq, struct xwc *w)
{
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->flags = ibv_wc_read_wc_flags(cq);
	/* The same word: a key in host order, or data in network order. */
	w->imm = w->flags & IBV_WC_WITH_INV ?
		 ibv_wc_read_invalidated_rkey(cq) :
		 ntohl(ibv_wc_read_imm_data(cq));
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	/* Read, so that each reader runs; nothing to check of them. */
	(void)ibv_wc_read_slid(cq);
	(void)ibv_wc_read_sl(cq);
	(void)ibv_wc_read_dlid_path_bits(cq);
	(void)ibv_wc_read_vendor_err(cq);
}

static void detail_xwc(const char *what, int i, const struct xwc *w)
{
	detail("%s[%d]: wr_id 0x%llx status %s opcode %d byte_len %u imm 0x%x flags 0x%x qp_num 0x%x src_qp 0x%x",
	       what, i, (unsigned long long)w->wr_id,
	       ibv_wc_status_str(w->status), w->opcode, w->byte_len, w->imm,
	       w->flags, w->qp_num, w->src_qp);
}

/*
 * @n completions of @cq within WAIT_MS, read with the iterator: as many
 * as it gives in a batch (ibv_next_poll()), then a new batch.
 */
static int poll_ex_ms(struct ibv_cq_ex *cq, struct xwc *out, int n,
		      const char *what, int ms)
{
	struct ibv_poll_cq_attr attr = {};
	long long end = now_ms() + ms;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			if (now_ms() > end)
				break;
			usleep(100);
			continue;
		}
		if (ret) {
			detail("%s: ibv_start_poll: %s", what, strerror(ret));
			break;
		}
		ret = 0;
		do {
			read_xwc(cq, &out[got++]);
		} while (got < n && !(ret = ibv_next_poll(cq)));
		ibv_end_poll(cq);
		if (ret && ret != ENOENT) {
			detail("%s: ibv_next_poll: %s", what, strerror(ret));
			break;
		}
	}
	if (got < n)
		detail("%s: %d of %d completions within %d ms", what, got, n,
		       ms);
	return got;
}

static int poll_ex(struct ibv_cq_ex *cq, struct xwc *out, int n,
		   const char *what)
{
	return poll_ex_ms(cq, out, n, what, WAIT_MS);
}

/* The same with ibv_poll_cq() on the same CQ. */
static int poll_legacy(struct ibv_cq_ex *cq, struct xwc *out, int n,
		       const char *what)
{
	long long end = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, &wc);
		if (ret < 0) {
			detail("%s: ibv_poll_cq returned %d", what, ret);
			break;
		}
		if (!ret) {
			if (now_ms() > end)
				break;
			usleep(100);
			continue;
		}
		out[got] = (struct xwc){
			.wr_id = wc.wr_id,
			.status = wc.status,
			.opcode = wc.opcode,
			.byte_len = wc.byte_len,
			.imm = wc.wc_flags & IBV_WC_WITH_INV ?
			       wc.invalidated_rkey : ntohl(wc.imm_data),
			.flags = wc.wc_flags,
			.qp_num = wc.qp_num,
			.src_qp = wc.src_qp,
		};
		got++;
	}
	if (got < n)
		detail("%s: %d of %d completions within %d ms", what, got, n,
		       WAIT_MS);
	return got;
}

/* Nothing arrives on @cq for QUIET_MS. */
static bool quiet(struct ibv_cq_ex *cq, const char *what)
{
	struct xwc w;

	if (!poll_ex_ms(cq, &w, 1, "(expected none)", QUIET_MS)) {
		clear_details();
		return true;
	}
	detail_xwc(what, 0, &w);
	detail("%s: a completion arrived, none was expected", what);
	return false;
}

/* One completion against what it should be; @byte_len < 0: not checked. */
static bool want(const struct xwc *w, const char *what, int i,
		 uint64_t wr_id, int opcode, long long byte_len,
		 unsigned int flags, uint32_t imm, const struct ibv_qp *qp)
{
	bool good = w->wr_id == wr_id && w->status == IBV_WC_SUCCESS &&
		    w->opcode == opcode && w->flags == flags &&
		    w->qp_num == qp->qp_num &&
		    (byte_len < 0 || w->byte_len == byte_len) &&
		    (!(flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) ||
		     w->imm == imm);

	if (!good) {
		detail_xwc(what, i, w);
		detail("%s[%d]: want wr_id 0x%llx IBV_WC_SUCCESS opcode %d byte_len %lld flags 0x%x imm 0x%x qp_num 0x%x",
		       what, i, (unsigned long long)wr_id, opcode, byte_len,
		       flags, imm, qp->qp_num);
	}
	return good;
}

/* QPs */

static struct ibv_qp *make_qp_ex(struct side *s, struct ibv_cq_ex *cq,
				 enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = ibv_cq_ex_to_cq(cq),
		.recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = {
			.max_send_wr = QP_DEPTH,
			.max_recv_wr = QP_DEPTH,
			.max_send_sge = MAX_SGE,
			.max_recv_sge = 1,
			.max_inline_data = MAX_INLINE,
		},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &ia);

	if (!qp) {
		detail("ibv_create_qp_ex %s type %d ops 0x%llx: %s", s->dev,
		       type, (unsigned long long)ops, strerror(errno));
		return NULL;
	}
	if (!ibv_qp_to_qp_ex(qp)) {
		detail("ibv_qp_to_qp_ex %s: NULL", s->dev);
		ibv_destroy_qp(qp);
		return NULL;
	}
	/* The bad WR cases, which run on softrvt only, rely on these limits. */
	if (exact_caps && (ia.cap.max_inline_data < MAX_INLINE ||
	    ia.cap.max_inline_data >= sizeof(big_inline) ||
	    ia.cap.max_send_sge != MAX_SGE)) {
		detail("%s: max_inline_data %u, max_send_sge %u", s->dev,
		       ia.cap.max_inline_data, ia.cap.max_send_sge);
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

struct xpair {
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *xa, *xb;
};

static void xpair_down(struct xpair *p)
{
	if (p->qa && ibv_destroy_qp(p->qa))
		ok(false, "ibv_destroy_qp A");
	if (p->qb && ibv_destroy_qp(p->qb))
		ok(false, "ibv_destroy_qp B");
	drain(&sa);
	drain(&sb);
	memset(p, 0, sizeof(*p));
}

/*
 * An RC pair of extended QPs taking @ops, with @c's access flags; @rts:
 * both in RTS, else A stays in INIT.
 */
static bool rc_up_with(struct xpair *p, bool rts, uint64_t ops,
		       const struct pair_cfg *cfg)
{
	struct pair_cfg c = *cfg;

	memset(p, 0, sizeof(*p));
	p->qa = make_qp_ex(&sa, cqx_a, IBV_QPT_RC, ops);
	p->qb = p->qa ? make_qp_ex(&sb, cqx_b, IBV_QPT_RC, ops) : NULL;
	if (!p->qb)
		return false;
	p->xa = ibv_qp_to_qp_ex(p->qa);
	p->xb = ibv_qp_to_qp_ex(p->qb);
	if (!to_init(p->qa, &sa, c.a_access) ||
	    !to_init(p->qb, &sb, c.b_access))
		return false;
	if (!rts)
		return true;
	return to_rtr(p->qa, &sa, &sb, p->qb->qp_num, PSN_B) &&
	       to_rts(p->qa, &sa, &c, PSN_A) &&
	       to_rtr(p->qb, &sb, &sa, p->qa->qp_num, PSN_A) &&
	       to_rts(p->qb, &sb, &c, PSN_B);
}

static bool rc_up(struct xpair *p, bool rts)
{
	struct pair_cfg c = default_cfg();

	return rc_up_with(p, rts, RC_OPS, &c);
}

static bool begin(struct xpair *p, const char *name, bool rts)
{
	case_prepare(name);
	if (rc_up(p, rts))
		return true;
	ok(false, "set up the QP pair");
	xpair_down(p);
	return false;
}

/* The RC batch of every data operation */

/* Where the batch's data lives, in A's and B's buffers. */
#define A_SEND1		0	/* 100 bytes */
#define A_SEND2A	200	/* 50 bytes */
#define A_SEND2B	300	/* 30 bytes */
#define A_WRITE		1024	/* 512 bytes, to B_WRITE */
#define A_READ		8192	/* 256 bytes, from B_READ */
#define A_FADD		16384	/* 8 bytes each: the old values */
#define A_CSWP		16392
#define B_RECV(i)	(20480 + 1024 * (i))	/* 1 KiB receive buffers */
#define B_WRITE		8192
#define B_WIMM		12288	/* the inline write of 40 bytes */
#define B_READ		14336
#define B_FADD		ATOMIC_OFF
#define B_CSWP		(ATOMIC_OFF + 8)
#define FADD_OLD	0x1122334455667788ULL
#define CSWP_OLD	0x0123456789abcdefULL
#define CSWP_NEW	0xfedcba9876543210ULL
#define IMM2		0xa1b2c3d4
#define IMM5		0x5a5a0005
#define N_A		8	/* WRs of the batch, all signalled */
#define N_B		4	/* of them consuming a receive */

static const char inl1[] = "inline, first buffer";	/* 20 bytes */
static const char inl2[] = "and second";		/* 10 bytes */
static uint8_t inl_write[40];

static void batch_ex(struct xpair *p)
{
	struct ibv_qp_ex *x = p->xa;
	struct ibv_sge two[2] = {
		sge_of(&sa, A_SEND2A, 50), sge_of(&sa, A_SEND2B, 30),
	};
	struct ibv_data_buf bufs[2] = {
		{ (void *)inl1, sizeof(inl1) - 1 },
		{ (void *)inl2, sizeof(inl2) - 1 },
	};
	uint64_t rb = (uintptr_t)sb.buf;
	uint32_t rkey = sb.mr->rkey, lkey = sa.mr->lkey;

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, lkey, (uintptr_t)sa.buf + A_SEND1, 100);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htonl(IMM2));
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 4;
	ibv_wr_rdma_write(x, rkey, rb + B_WRITE);
	ibv_wr_set_sge(x, lkey, (uintptr_t)sa.buf + A_WRITE, 512);
	x->wr_id = 5;
	ibv_wr_rdma_write_imm(x, rkey, rb + B_WIMM, htonl(IMM5));
	ibv_wr_set_inline_data(x, inl_write, sizeof(inl_write));
	x->wr_id = 6;
	ibv_wr_rdma_read(x, rkey, rb + B_READ);
	ibv_wr_set_sge(x, lkey, (uintptr_t)sa.buf + A_READ, 256);
	x->wr_id = 7;
	ibv_wr_atomic_fetch_add(x, rkey, rb + B_FADD, 5);
	ibv_wr_set_sge(x, lkey, (uintptr_t)sa.buf + A_FADD, 8);
	x->wr_id = 8;
	ibv_wr_atomic_cmp_swp(x, rkey, rb + B_CSWP, CSWP_OLD, CSWP_NEW);
	ibv_wr_set_sge(x, lkey, (uintptr_t)sa.buf + A_CSWP, 8);
}

/* An atomic of @sg at @off of B's buffer (rc_pair.c's atomic_of() sets sg). */
static struct ibv_send_wr atomic_wr(uint64_t wr_id, enum ibv_wr_opcode opcode,
				   struct ibv_sge *sg, size_t off,
				   uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr wr = wr_of(wr_id, opcode, sg);

	wr.wr.atomic.remote_addr = (uintptr_t)(sb.buf + off);
	wr.wr.atomic.rkey = sb.mr->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

/* The same batch as ibv_post_send() WRs. */
static int batch_legacy(struct xpair *p)
{
	struct ibv_sge s1 = sge_of(&sa, A_SEND1, 100);
	struct ibv_sge two[2] = {
		sge_of(&sa, A_SEND2A, 50), sge_of(&sa, A_SEND2B, 30),
	};
	struct ibv_sge inl[2] = {
		{ (uintptr_t)inl1, sizeof(inl1) - 1, 0 },
		{ (uintptr_t)inl2, sizeof(inl2) - 1, 0 },
	};
	struct ibv_sge iw = { (uintptr_t)inl_write, sizeof(inl_write), 0 };
	struct ibv_sge w = sge_of(&sa, A_WRITE, 512);
	struct ibv_sge r = sge_of(&sa, A_READ, 256);
	struct ibv_sge fa = sge_of(&sa, A_FADD, 8);
	struct ibv_sge cs = sge_of(&sa, A_CSWP, 8);
	struct ibv_send_wr wr[N_A], *bad;
	int i;

	wr[0] = wr_of(1, IBV_WR_SEND, &s1);
	wr[1] = wr_of(2, IBV_WR_SEND_WITH_IMM, two);
	wr[1].num_sge = 2;
	wr[1].imm_data = htonl(IMM2);
	wr[2] = wr_of(3, IBV_WR_SEND, inl);
	wr[2].num_sge = 2;
	wr[2].send_flags |= IBV_SEND_INLINE;
	wr[3] = rdma_of(4, IBV_WR_RDMA_WRITE, &w, B_WRITE, sb.mr->rkey);
	wr[4] = rdma_of(5, IBV_WR_RDMA_WRITE_WITH_IMM, &iw, B_WIMM,
			sb.mr->rkey);
	wr[4].imm_data = htonl(IMM5);
	wr[4].send_flags |= IBV_SEND_INLINE;
	wr[5] = rdma_of(6, IBV_WR_RDMA_READ, &r, B_READ, sb.mr->rkey);
	wr[6] = atomic_wr(7, IBV_WR_ATOMIC_FETCH_AND_ADD, &fa, B_FADD, 5, 0);
	wr[7] = atomic_wr(8, IBV_WR_ATOMIC_CMP_AND_SWP, &cs, B_CSWP, CSWP_OLD,
			  CSWP_NEW);
	for (i = 0; i < N_A; i++) {
		wr[i].send_flags |= IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < N_A ? &wr[i + 1] : NULL;
	}
	return ibv_post_send(p->qa, wr, &bad);
}

/*
 * Run the batch one way and check every byte and completion; @a and @b
 * receive the completions, for the comparison of both ways.
 */
static bool run_batch(bool ex, struct xwc *a, struct xwc *b)
{
	const char *name = ex ? "RC batch, ibv_wr_*() and ibv_start_poll()" :
				"RC batch, ibv_post_send() and ibv_poll_cq()";
	int (*poll)(struct ibv_cq_ex *, struct xwc *, int, const char *) =
		ex ? poll_ex : poll_legacy;
	uint8_t want_recv[80];
	struct xpair p;
	bool good;
	int i, ret;

	if (!begin(&p, name, true))
		return false;
	pattern(sa.buf, 4096, 11);
	pattern(sb.buf + B_READ, 256, 12);
	pattern(inl_write, sizeof(inl_write), 13);
	put64(sb.buf + B_FADD, FADD_OLD);
	put64(sb.buf + B_CSWP, CSWP_OLD);
	good = true;
	for (i = 0; i < N_B; i++)
		good = post_recv(p.qb, 0xb0 + i, B_RECV(i), 1024) && good;
	if (ex) {
		batch_ex(&p);
		ret = ibv_wr_complete(p.xa);
	} else {
		ret = batch_legacy(&p);
	}
	if (ret)
		detail("posting: %s", strerror(ret));
	ok(good && !ret, "%s a batch of %d WRs: SEND, SEND_WITH_IMM of 2 SGEs, inline SEND of 2 buffers, RDMA_WRITE, inline RDMA_WRITE_WITH_IMM, RDMA_READ, FETCH_AND_ADD, CMP_AND_SWP",
	   ex ? "ibv_wr_complete()" : "ibv_post_send()", N_A);

	good = poll(cqx_a, a, N_A, "A") == N_A;
	good = good && want(&a[0], "A", 0, 1, IBV_WC_SEND, -1, 0, 0, p.qa);
	good = good && want(&a[1], "A", 1, 2, IBV_WC_SEND, -1, 0, 0, p.qa);
	good = good && want(&a[2], "A", 2, 3, IBV_WC_SEND, -1, 0, 0, p.qa);
	good = good && want(&a[3], "A", 3, 4, IBV_WC_RDMA_WRITE, -1, 0, 0,
			    p.qa);
	good = good && want(&a[4], "A", 4, 5, IBV_WC_RDMA_WRITE, -1, 0, 0,
			    p.qa);
	good = good && want(&a[5], "A", 5, 6, IBV_WC_RDMA_READ, 256, 0, 0,
			    p.qa);
	good = good && want(&a[6], "A", 6, 7, IBV_WC_FETCH_ADD, 8, 0, 0,
			    p.qa);
	good = good && want(&a[7], "A", 7, 8, IBV_WC_COMP_SWAP, 8, 0, 0,
			    p.qa);
	ok(good, "A: %d completions in order, each its opcode, qp_num and wc_flags; byte_len of READ and atomics",
	   N_A);

	good = poll(cqx_b, b, N_B, "B") == N_B;
	good = good && want(&b[0], "B", 0, 0xb0, IBV_WC_RECV, 100, 0, 0, p.qb);
	good = good && want(&b[1], "B", 1, 0xb1, IBV_WC_RECV, 80,
			    IBV_WC_WITH_IMM, IMM2, p.qb);
	good = good && want(&b[2], "B", 2, 0xb2, IBV_WC_RECV, 30, 0, 0, p.qb);
	good = good && want(&b[3], "B", 3, 0xb3, IBV_WC_RECV_RDMA_WITH_IMM,
			    40, IBV_WC_WITH_IMM, IMM5, p.qb);
	ok(good, "B: %d receive completions: opcode, byte_len, IBV_WC_WITH_IMM and the immediate data, qp_num",
	   N_B);

	good = same(sb.buf + B_RECV(0), sa.buf + A_SEND1, 100, "SEND");
	memcpy(want_recv, sa.buf + A_SEND2A, 50);
	memcpy(want_recv + 50, sa.buf + A_SEND2B, 30);
	good = same(sb.buf + B_RECV(1), want_recv, 80, "SEND of 2 SGEs") &&
	       good;
	memcpy(want_recv, inl1, 20);
	memcpy(want_recv + 20, inl2, 10);
	good = same(sb.buf + B_RECV(2), want_recv, 30, "inline SEND") && good;
	good = same(sb.buf + B_WRITE, sa.buf + A_WRITE, 512, "RDMA_WRITE") &&
	       all_bytes(sb.buf + B_WRITE + 512, 64, CANARY,
			 "past RDMA_WRITE") && good;
	good = same(sb.buf + B_WIMM, inl_write, 40, "inline RDMA_WRITE") &&
	       good;
	good = same(sa.buf + A_READ, sb.buf + B_READ, 256, "RDMA_READ") &&
	       all_bytes(sa.buf + A_READ + 256, 64, CANARY, "past RDMA_READ") &&
	       good;
	good = u64_is(sa.buf + A_FADD, FADD_OLD, "FETCH_ADD's old value") &&
	       u64_is(sb.buf + B_FADD, FADD_OLD + 5, "FETCH_ADD's sum") &&
	       u64_is(sa.buf + A_CSWP, CSWP_OLD, "CMP_SWAP's old value") &&
	       u64_is(sb.buf + B_CSWP, CSWP_NEW, "CMP_SWAP's new value") &&
	       good;
	ok(good, "every byte where it belongs, none past");

	/* For the comparison: each pair has its own QPNs. */
	for (i = 0; i < N_A + N_B; i++) {
		struct xwc *w = i < N_A ? &a[i] : &b[i - N_A];
		const struct ibv_qp *own = i < N_A ? p.qa : p.qb;
		const struct ibv_qp *peer = i < N_A ? p.qb : p.qa;

		w->qp_num = w->qp_num == own->qp_num ? 0 : w->qp_num;
		w->src_qp = w->src_qp == peer->qp_num ? 0 : w->src_qp;
	}
	xpair_down(&p);
	tap_case = NULL;
	return true;
}

static void case_rc_batch(void)
{
	struct xwc ea[N_A], eb[N_B], la[N_A], lb[N_B];
	bool good = true;
	int i;

	memset(ea, 0, sizeof(ea));
	memset(eb, 0, sizeof(eb));
	memset(la, 0, sizeof(la));
	memset(lb, 0, sizeof(lb));
	if (!run_batch(true, ea, eb) || !run_batch(false, la, lb))
		return;
	tap_case = "RC batch";
	clear_details();
	/* QPNs are relative to the pair (run_batch()); all must be equal. */
	for (i = 0; i < N_A + N_B; i++) {
		struct xwc *e = i < N_A ? &ea[i] : &eb[i - N_A];
		struct xwc *l = i < N_A ? &la[i] : &lb[i - N_A];

		if (e->wr_id != l->wr_id || e->status != l->status ||
		    e->opcode != l->opcode || e->byte_len != l->byte_len ||
		    e->flags != l->flags || e->qp_num != l->qp_num ||
		    e->src_qp != l->src_qp ||
		    ((e->flags & IBV_WC_WITH_IMM) && e->imm != l->imm)) {
			detail_xwc("ibv_wr_*()", i, e);
			detail_xwc("ibv_post_send()", i, l);
			good = false;
		}
	}
	ok(good, "ibv_wr_*() and ibv_post_send() give the same completions");
	tap_case = NULL;
}

/* Memory windows: BIND_MW, LOCAL_INV, SEND_WITH_INV */

static bool one_a(struct xpair *p, uint64_t wr_id, int opcode,
		  const char *what)
{
	struct xwc w;

	if (ibv_wr_complete(p->xa)) {
		detail("%s: ibv_wr_complete failed", what);
		return false;
	}
	return poll_ex(cqx_a, &w, 1, what) == 1 &&
	       want(&w, what, 0, wr_id, opcode, -1, 0, 0, p->qa);
}

static bool one_b(struct xpair *p, uint64_t wr_id, int opcode,
		  const char *what)
{
	struct xwc w;
	int ret = ibv_wr_complete(p->xb);

	if (ret) {
		detail("%s: ibv_wr_complete: %s", what, strerror(ret));
		return false;
	}
	return poll_ex(cqx_b, &w, 1, what) == 1 &&
	       want(&w, what, 0, wr_id, opcode, -1, 0, 0, p->qb);
}

static bool write_a(struct xpair *p, uint64_t wr_id, uint32_t rkey,
		    size_t off, uint32_t len)
{
	ibv_wr_start(p->xa);
	p->xa->wr_id = wr_id;
	p->xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p->xa, rkey, (uintptr_t)sb.buf + off);
	ibv_wr_set_sge(p->xa, sa.mr->lkey, (uintptr_t)sa.buf, len);
	return one_a(p, wr_id, IBV_WC_RDMA_WRITE, "A's RDMA_WRITE");
}

static bool bind_b(struct xpair *p, struct ibv_mw *mw, uint32_t rkey,
		   uint64_t wr_id)
{
	struct ibv_mw_bind_info bi = {
		.mr = sb.mr,
		.addr = (uintptr_t)sb.buf + 4096,
		.length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	ibv_wr_start(p->xb);
	p->xb->wr_id = wr_id;
	p->xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p->xb, mw, rkey, &bi);
	return one_b(p, wr_id, IBV_WC_BIND_MW, "B's BIND_MW");
}

static void case_mw(void)
{
	struct ibv_mw *mw;
	uint32_t rkey, rkey2;
	struct xpair p;
	struct xwc w;
	bool good;

	if (!begin(&p, "memory window", true))
		return;
	mw = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_2);
	if (!ok(mw != NULL, "ibv_alloc_mw type 2")) {
		xpair_down(&p);
		return;
	}
	pattern(sa.buf, 4096, 21);
	rkey = ibv_inc_rkey(mw->rkey);
	ok(bind_b(&p, mw, rkey, 0x21), "ibv_wr_bind_mw() on B: IBV_WC_BIND_MW");
	ok(write_a(&p, 0x22, rkey, 4096 + 100, 200) &&
	   same(sb.buf + 4096 + 100, sa.buf, 200, "through the window"),
	   "RDMA_WRITE through the window lands");

	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x23;
	p.xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(p.xa, rkey);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	good = post_recv(p.qb, 0x2b, 0, 1024) &&
	       one_a(&p, 0x23, IBV_WC_SEND, "A's SEND_WITH_INV");
	good = good && poll_ex(cqx_b, &w, 1, "B") == 1 &&
	       want(&w, "B", 0, 0x2b, IBV_WC_RECV, 64, IBV_WC_WITH_INV, rkey,
		    p.qb) &&
	       same(sb.buf, sa.buf, 64, "SEND_WITH_INV's payload");
	ok(good, "ibv_wr_send_inv(): B receives with IBV_WC_WITH_INV and the invalidated rkey");

	rkey2 = ibv_inc_rkey(rkey);
	good = bind_b(&p, mw, rkey2, 0x24);
	ibv_wr_start(p.xb);
	p.xb->wr_id = 0x25;
	p.xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(p.xb, rkey2);
	good = good && one_b(&p, 0x25, IBV_WC_LOCAL_INV, "B's LOCAL_INV");
	ok(good, "bound again, then ibv_wr_local_inv() on B: IBV_WC_LOCAL_INV");

	memset(sb.buf + 4096, CANARY, 4096);
	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x26;
	p.xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.xa, rkey2, (uintptr_t)sb.buf + 4096);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	good = !ibv_wr_complete(p.xa) && poll_ex(cqx_a, &w, 1, "A") == 1;
	if (good && (w.wr_id != 0x26 || w.status != IBV_WC_REM_ACCESS_ERR)) {
		detail_xwc("A", 0, &w);
		good = false;
	}
	ok(good && all_bytes(sb.buf + 4096, 4096, CANARY, "the window"),
	   "RDMA_WRITE through the invalidated key: IBV_WC_REM_ACCESS_ERR, nothing written");
	xpair_down(&p);
	ok(!ibv_dealloc_mw(mw), "ibv_dealloc_mw");
	tap_case = NULL;
}

/* FLUSH and ATOMIC_WRITE (IBA 1.5 annex A19) */

static const uint8_t aw_value[8] = { 0x8a, 0x7b, 0x6c, 0x5d, 0x4e, 0x3f, 0x20, 0x11 };

static bool placement_begin(struct xpair *p, const char *name)
{
	struct pair_cfg c = default_cfg();

	case_prepare(name);
	c.b_access = PLACEMENT_ACC;
	if (rc_up_with(p, true, PLACEMENT_OPS, &c))
		return true;
	ok(false, "set up the QP pair with FLUSH and ATOMIC_WRITE");
	xpair_down(p);
	return false;
}

/* A's one completion, which has @status. */
static bool placement_polled(struct xpair *p, uint64_t wr_id, int opcode,
			     int status, const char *what)
{
	struct xwc w;

	if (poll_ex(cqx_a, &w, 1, what) != 1)
		return false;
	if (status == IBV_WC_SUCCESS)
		return want(&w, what, 0, wr_id, opcode, -1, 0, 0, p->qa);
	if (w.wr_id != wr_id || w.status != status) {
		detail_xwc(what, 0, &w);
		detail("%s: want wr_id 0x%llx status %s", what,
		       (unsigned long long)wr_id, ibv_wc_status_str(status));
		return false;
	}
	return true;
}

/* Post what A's batch holds; its one completion has @status. */
static bool placement_done(struct xpair *p, uint64_t wr_id, int opcode,
			   int status, const char *what)
{
	int ret = ibv_wr_complete(p->xa);

	if (ret) {
		detail("%s: ibv_wr_complete: %s", what, strerror(ret));
		return false;
	}
	return placement_polled(p, wr_id, opcode, status, what);
}

static void atomic_write_a(struct xpair *p, uint64_t wr_id, uint32_t rkey,
			   size_t off)
{
	ibv_wr_start(p->xa);
	p->xa->wr_id = wr_id;
	p->xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(p->xa, rkey, (uintptr_t)sb.buf + off, aw_value);
}

static void flush_a(struct xpair *p, uint64_t wr_id, uint32_t rkey,
		    size_t off, size_t len, uint8_t type, uint8_t level)
{
	ibv_wr_start(p->xa);
	p->xa->wr_id = wr_id;
	p->xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(p->xa, rkey, (uintptr_t)sb.buf + off, len, type, level);
}

/* A region of B's buffer that may be flushed, beside side_open()'s MR. */
static struct ibv_mr *flush_mr(void)
{
	struct ibv_mr *mr = ibv_reg_mr(sb.pd, sb.buf, 8192,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_FLUSH_GLOBAL);

	if (!mr)
		detail("ibv_reg_mr with IBV_ACCESS_FLUSH_GLOBAL: %s",
		       strerror(errno));
	return mr;
}

static void case_placement(void)
{
	struct ibv_mr *fmr;
	struct xpair p;
	bool good;

	if (!placement_begin(&p, "FLUSH and ATOMIC_WRITE"))
		return;
	fmr = flush_mr();
	if (!ok(fmr != NULL, "ibv_reg_mr with IBV_ACCESS_FLUSH_GLOBAL")) {
		xpair_down(&p);
		return;
	}
	memset(sb.buf, CANARY, 8192);
	atomic_write_a(&p, 0x61, sb.mr->rkey, 64);
	good = placement_done(&p, 0x61, IBV_WC_ATOMIC_WRITE, IBV_WC_SUCCESS,
			      "A's ATOMIC_WRITE");
	ok(good && same(sb.buf + 64, aw_value, 8, "the eight bytes") &&
	   all_bytes(sb.buf, 64, CANARY, "before them") &&
	   all_bytes(sb.buf + 72, 64, CANARY, "after them"),
	   "ibv_wr_atomic_write(): IBV_WC_ATOMIC_WRITE, its 8 bytes land, nothing else");

	if (with_flush) {
		/* The WRITE's data is in when the FLUSH after it completes. */
		pattern(sa.buf, 4096, 31);
		ibv_wr_start(p.xa);
		p.xa->wr_id = 0x62;
		p.xa->wr_flags = 0;
		ibv_wr_rdma_write(p.xa, fmr->rkey, (uintptr_t)sb.buf + 1024);
		ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 3000);
		p.xa->wr_id = 0x63;
		p.xa->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_flush(p.xa, fmr->rkey, (uintptr_t)sb.buf + 1024, 3000,
			     IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
		good = placement_done(&p, 0x63, IBV_WC_FLUSH, IBV_WC_SUCCESS,
				      "A's WRITE then FLUSH");
		ok(good && same(sb.buf + 1024, sa.buf, 3000, "the WRITE's data"),
		   "ibv_wr_flush() of a range after an unsignaled WRITE: IBV_WC_FLUSH, the data is in");

		flush_a(&p, 0x64, fmr->rkey, 0, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR);
		ok(placement_done(&p, 0x64, IBV_WC_FLUSH, IBV_WC_SUCCESS,
				  "A's FLUSH of the region"),
		   "ibv_wr_flush() of the whole region: IBV_WC_FLUSH");
	}
	xpair_down(&p);

	/* Each error sends B's QP to ERR: a new pair for the next. */
	if (with_flush && placement_begin(&p, "FLUSH and ATOMIC_WRITE")) {
		flush_a(&p, 0x65, fmr->rkey, 0, 64, IBV_FLUSH_PERSISTENT,
			IBV_FLUSH_RANGE);
		ok(placement_done(&p, 0x65, 0, IBV_WC_REM_ACCESS_ERR,
				  "A's persistent FLUSH"),
		   "a persistent FLUSH of a region without the right: IBV_WC_REM_ACCESS_ERR");
		xpair_down(&p);
	}
	if (with_flush && placement_begin(&p, "FLUSH and ATOMIC_WRITE")) {
		flush_a(&p, 0x66, sb.mr->rkey, 0, 64, IBV_FLUSH_GLOBAL,
			IBV_FLUSH_RANGE);
		ok(placement_done(&p, 0x66, 0, IBV_WC_REM_ACCESS_ERR,
				  "A's FLUSH through a key without the right"),
		   "a FLUSH through a key without IBV_ACCESS_FLUSH_GLOBAL: IBV_WC_REM_ACCESS_ERR");
		xpair_down(&p);
	}
	if (placement_begin(&p, "FLUSH and ATOMIC_WRITE")) {
		memset(sb.buf, CANARY, 256);
		atomic_write_a(&p, 0x67, sb.mr->rkey, 68);
		good = placement_done(&p, 0x67, 0, IBV_WC_REM_INV_REQ_ERR,
				      "A's misaligned ATOMIC_WRITE");
		ok(good && all_bytes(sb.buf, 256, CANARY, "B's buffer"),
		   "an ATOMIC_WRITE not aligned to 8: IBV_WC_REM_INV_REQ_ERR, nothing written");
		xpair_down(&p);
	}
	/* What ibv_post_send() makes of them is the provider's own. */
	if (!strncmp(sa.dev, "softrvt", 7) &&
	    placement_begin(&p, "FLUSH and ATOMIC_WRITE")) {
		struct ibv_send_wr wr = {
			.wr_id = 0x68,
			.opcode = IBV_WR_FLUSH,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad = NULL;
		int ret = ibv_post_send(p.qa, &wr, &bad);

		ok(ret == EINVAL && bad == &wr && quiet(cqx_a, "A"),
		   "ibv_post_send() of IBV_WR_FLUSH, which has no ibv_send_wr layout: EINVAL (got %s)",
		   strerror(ret));
		xpair_down(&p);
	}
	ok(!ibv_dereg_mr(fmr), "ibv_dereg_mr of the flushable region");
	tap_case = NULL;
}

/* SOFTRVT_METHOD_QP_POST_PLACEMENT_WR without the provider. */
static int post_placement_raw(struct ibv_qp *qp,
			      const struct softrvt_placement_wr *wr)
{
	return qp_method_raw(qp, SOFTRVT_METHOD_QP_POST_PLACEMENT_WR,
			     SOFTRVT_ATTR_POST_PLACEMENT_WR_QP_HANDLE,
			     SOFTRVT_ATTR_POST_PLACEMENT_WR_WR, wr, sizeof(*wr));
}

/*
 * The method as any process may call it, with bad WRs: each refused with
 * EINVAL, nothing posted.  A good ATOMIC_WRITE first, so that the
 * refusals are not the call's own fault.
 */
static void case_placement_method(void)
{
	struct softrvt_placement_wr good = {
		.wr_id = 0x71,
		.opcode = IB_UVERBS_WR_ATOMIC_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.remote_addr = (uintptr_t)sb.buf + 64,
		.rkey = sb.mr->rkey,
	}, wr;
	static const struct {
		const char *what;
		uint32_t opcode, length;
		uint8_t type, level, reserved;
	} bad[] = {
		{ "a reserved byte set", IB_UVERBS_WR_ATOMIC_WRITE, 0, 0, 0, 1 },
		{ "opcode SEND", IB_UVERBS_WR_SEND, 0, 0, 0, 0 },
		{ "ATOMIC_WRITE with a length", IB_UVERBS_WR_ATOMIC_WRITE, 8,
		  0, 0, 0 },
		{ "ATOMIC_WRITE with a flush type", IB_UVERBS_WR_ATOMIC_WRITE,
		  0, IBV_FLUSH_GLOBAL, 0, 0 },
		{ "FLUSH of no type", IB_UVERBS_WR_FLUSH, 64, 0, 0, 0 },
		{ "FLUSH of type 4", IB_UVERBS_WR_FLUSH, 64, 4, 0, 0 },
		{ "FLUSH of level 2", IB_UVERBS_WR_FLUSH, 64, IBV_FLUSH_GLOBAL,
		  2, 0 },
	};
	struct xpair p;
	size_t i;
	int ret;

	if (!placement_begin(&p, "placement method, bad input"))
		return;
	memset(sb.buf + 64, 0, 8);
	memcpy(&good.value, aw_value, sizeof(good.value));
	ret = post_placement_raw(p.qa, &good);
	ok(!ret && placement_polled(&p, 0x71, IBV_WC_ATOMIC_WRITE,
				    IBV_WC_SUCCESS, "the method's ATOMIC_WRITE") &&
	   same(sb.buf + 64, aw_value, 8, "the eight bytes"),
	   "a well-formed ATOMIC_WRITE through the method lands (returned %d)",
	   ret);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr = good;
		wr.wr_id = 0x72 + i;
		wr.opcode = bad[i].opcode;
		wr.length = bad[i].length;
		wr.flush_type = bad[i].type;
		wr.flush_level = bad[i].level;
		wr.reserved[5] = bad[i].reserved;
		ret = post_placement_raw(p.qa, &wr);
		ok(ret == EINVAL, "%s: EINVAL (returned %d)", bad[i].what, ret);
	}
	ok(quiet(cqx_a, "A"), "none of them posted anything");
	xpair_down(&p);
	tap_case = NULL;
}

/* Errors */

static void case_bad_lkey(void)
{
	struct xpair p;
	struct xwc w;
	bool good;

	if (!begin(&p, "bad lkey", true))
		return;
	good = post_recv(p.qb, 0x3b, 0, 1024);
	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x31;
	p.xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.xa);
	ibv_wr_set_sge(p.xa, sa.mr->lkey ^ 0x5a5a00, (uintptr_t)sa.buf, 64);
	good = good && !ibv_wr_complete(p.xa) &&
	       poll_ex(cqx_a, &w, 1, "A") == 1;
	if (good && (w.wr_id != 0x31 || w.status != IBV_WC_LOC_PROT_ERR ||
		     w.qp_num != p.qa->qp_num)) {
		detail_xwc("A", 0, &w);
		good = false;
	}
	ok(good, "a SEND of a bad lkey is posted and completes with IBV_WC_LOC_PROT_ERR");
	ok(quiet(cqx_b, "B"), "B receives nothing");
	xpair_down(&p);
	tap_case = NULL;
}

/*
 * A batch of a good SEND and then a bad WR built by @bad: ibv_wr_complete()
 * must fail with @err, what ibv_post_send() gives for the same two WRs
 * (@legacy), and nothing may be posted.
 */
static void bad_batch(const char *name, void (*bad)(struct ibv_qp_ex *),
		      void (*legacy)(struct ibv_send_wr *, struct ibv_sge *),
		      int err)
{
	struct ibv_sge sg = sge_of(&sa, 0, 64), sgl[MAX_SGE + 1];
	struct ibv_send_wr wr[2], *badwr = NULL;
	struct xpair p;
	int ret;

	if (!begin(&p, name, true))
		return;
	pattern(sa.buf, 4096, 31);
	post_recv(p.qb, 0x4b, 0, 1024);
	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x41;
	p.xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.xa);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	p.xa->wr_id = 0x42;
	bad(p.xa);
	ret = ibv_wr_complete(p.xa);
	ok(ret == err, "ibv_wr_complete() fails with %s (got %s)",
	   strerror(err), strerror(ret));
	ok(quiet(cqx_a, "A") && quiet(cqx_b, "B") &&
	   all_bytes(sb.buf, 1024, CANARY, "B's receive buffer"),
	   "nothing of the batch was posted: no completion, no byte moved");

	if (legacy) {
		for (ret = 0; ret < MAX_SGE + 1; ret++)
			sgl[ret] = sge_of(&sa, 64 * ret, 64);
		/* The bad WR alone: ibv_post_send() posts up to it. */
		wr[0] = wr_of(0x43, IBV_WR_SEND, &sg);
		legacy(&wr[0], sgl);
		ret = ibv_post_send(p.qa, &wr[0], &badwr);
		ok(ret == err && badwr == &wr[0],
		   "ibv_post_send() of that WR fails with the same errno (got %s)",
		   strerror(ret));
	}

	/* The QP is fine: the receive is still there. */
	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x44;
	p.xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.xa);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	ok(one_a(&p, 0x44, IBV_WC_SEND, "A") &&
	   expect_wc(&sb, "B", 0x4b, IBV_WC_SUCCESS, IBV_WC_RECV, 64, p.qb,
		     WAIT_MS) &&
	   same(sb.buf, sa.buf, 64, "the SEND after"),
	   "a good batch after it is posted and delivered");
	xpair_down(&p);
	tap_case = NULL;
}

static void bad_sges(struct ibv_qp_ex *x)
{
	struct ibv_sge sgl[MAX_SGE + 1];
	int i;

	for (i = 0; i < MAX_SGE + 1; i++)
		sgl[i] = sge_of(&sa, 64 * i, 64);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, MAX_SGE + 1, sgl);
}

static void legacy_sges(struct ibv_send_wr *wr, struct ibv_sge *sgl)
{
	wr->sg_list = sgl;
	wr->num_sge = MAX_SGE + 1;
}

static void bad_inline(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big_inline, sizeof(big_inline));
}

static void legacy_inline(struct ibv_send_wr *wr, struct ibv_sge *sgl)
{
	sgl[0].addr = (uintptr_t)big_inline;
	sgl[0].length = sizeof(big_inline);
	wr->sg_list = sgl;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void bad_atomic(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_fetch_add(x, sb.mr->rkey, (uintptr_t)sb.buf + B_FADD, 1);
	ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf + A_FADD, 4);
}

static void legacy_atomic(struct ibv_send_wr *wr, struct ibv_sge *sgl)
{
	sgl[0] = sge_of(&sa, A_FADD, 4);
	*wr = atomic_wr(0x43, IBV_WR_ATOMIC_FETCH_AND_ADD, sgl, B_FADD, 1, 0);
}

/* With the good SEND, one more WR than the send queue holds. */
static void bad_long(struct ibv_qp_ex *x)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	uint32_t i;

	if (ibv_query_qp(&x->qp_base, &attr, IBV_QP_CAP, &init)) {
		detail("ibv_query_qp failed");
		return;
	}
	for (i = 0; i < init.cap.max_send_wr; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf, 8);
	}
}

static void case_not_rts(void)
{
	struct ibv_sge sg = sge_of(&sa, 0, 64);
	struct ibv_send_wr wr = wr_of(0x51, IBV_WR_SEND, &sg), *bad;
	struct xpair p;
	int ret, lret;

	if (!begin(&p, "QP in INIT", false))
		return;
	ibv_wr_start(p.xa);
	p.xa->wr_id = 0x52;
	ibv_wr_send(p.xa);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	ret = ibv_wr_complete(p.xa);
	lret = ibv_post_send(p.qa, &wr, &bad);
	ok(ret == EINVAL && lret == EINVAL,
	   "ibv_wr_complete() and ibv_post_send() both fail with EINVAL (got %s, %s)",
	   strerror(ret), strerror(lret));
	xpair_down(&p);
	tap_case = NULL;
}

static void case_setter_without_wr(void)
{
	struct xpair p;
	int ret;

	if (!begin(&p, "setter before any WR", true))
		return;
	ibv_wr_start(p.xa);
	ibv_wr_set_sge(p.xa, sa.mr->lkey, (uintptr_t)sa.buf, 64);
	ibv_wr_send(p.xa);
	ret = ibv_wr_complete(p.xa);
	ok(ret == EINVAL, "ibv_wr_complete() fails with EINVAL (got %s)",
	   strerror(ret));
	ok(quiet(cqx_a, "A"), "nothing was posted");

	ibv_wr_start(p.xa);
	ibv_wr_send(p.xa);
	ibv_wr_abort(p.xa);
	ok(quiet(cqx_a, "A"), "ibv_wr_abort() posts nothing");
	xpair_down(&p);
	tap_case = NULL;
}

/* UD */

static void case_ud(void)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = {
			.dgid = sb.gid,
			.sgid_index = (uint8_t)sa.gid_index,
			.hop_limit = 64,
		},
		.port_num = IB_PORT,
	};
	struct ibv_sge sg = sge_of(&sa, 0, 5000);
	struct ibv_send_wr wr = wr_of(0x65, IBV_WR_SEND, &sg), *bad;
	struct ibv_port_attr pa;
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah = NULL;
	struct xwc w[2];
	uint8_t inl[MAX_INLINE];
	bool good;
	int ret, lret;

	tap_case = "UD";
	clear_details();
	memset(sa.buf, CANARY, BUF_SIZE);
	memset(sb.buf, CANARY, BUF_SIZE);
	qa = make_qp_ex(&sa, cqx_a, IBV_QPT_UD, UD_OPS);
	qb = qa ? make_qp_ex(&sb, cqx_b, IBV_QPT_UD, UD_OPS) : NULL;
	good = qb && ud_qp_up(qa, &sa, QKEY, PSN_A) &&
	       ud_qp_up(qb, &sb, QKEY, PSN_A);
	if (good) {
		ah = ibv_create_ah(sa.pd, &aa);
		if (!ah)
			detail("ibv_create_ah: %s", strerror(errno));
	}
	if (!ok(good && ah, "two UD QPs in RTS, an AH from A to B"))
		goto out;

	pattern(sa.buf, 4096, 41);
	pattern(inl, sizeof(inl), 42);
	good = post_recv(qb, 0x6b0, 0, 2048) && post_recv(qb, 0x6b1, 4096, 2048);
	x = ibv_qp_to_qp_ex(qa);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 0x61;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, qb->qp_num, QKEY);
	ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf, 1000);
	x->wr_id = 0x62;
	ibv_wr_send_imm(x, htonl(0x600d));
	ibv_wr_set_inline_data(x, inl, sizeof(inl));
	ibv_wr_set_ud_addr(x, ah, qb->qp_num, QKEY);
	ret = ibv_wr_complete(x);
	if (ret)
		detail("ibv_wr_complete: %s", strerror(ret));
	ok(good && !ret, "ibv_wr_complete() of SEND (1000 bytes) and inline SEND_WITH_IMM (%d bytes) with ibv_wr_set_ud_addr()",
	   MAX_INLINE);
	good = poll_ex(cqx_a, w, 2, "A") == 2 &&
	       want(&w[0], "A", 0, 0x61, IBV_WC_SEND, -1, 0, 0, qa) &&
	       want(&w[1], "A", 1, 0x62, IBV_WC_SEND, -1, 0, 0, qa);
	ok(good, "A: two IBV_WC_SEND");
	good = poll_ex(cqx_b, w, 2, "B") == 2 &&
	       want(&w[0], "B", 0, 0x6b0, IBV_WC_RECV, GRH_LEN + 1000,
		    IBV_WC_GRH, 0, qb) &&
	       want(&w[1], "B", 1, 0x6b1, IBV_WC_RECV, GRH_LEN + MAX_INLINE,
		    IBV_WC_GRH | IBV_WC_WITH_IMM, 0x600d, qb);
	if (good && (w[0].src_qp != qa->qp_num || w[1].src_qp != qa->qp_num)) {
		detail("src_qp 0x%x, 0x%x; want 0x%x", w[0].src_qp,
		       w[1].src_qp, qa->qp_num);
		good = false;
	}
	ok(good, "B: IBV_WC_RECV with IBV_WC_GRH, byte_len with the GRH, IBV_WC_WITH_IMM and its data, src_qp is A's");
	ok(same(sb.buf + GRH_LEN, sa.buf, 1000, "SEND") &&
	   same(sb.buf + 4096 + GRH_LEN, inl, sizeof(inl), "inline SEND"),
	   "the payloads after the GRH");

	/* No AH: ibv_post_send() fails with EINVAL too. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf, 8);
	ret = ibv_wr_complete(x);
	ok(ret == EINVAL, "a UD SEND without ibv_wr_set_ud_addr(): EINVAL (got %s)",
	   strerror(ret));

	/* More than the path MTU, in a batch after a good SEND. */
	memset(&pa, 0, sizeof(pa));
	ibv_query_port(sa.ctx, IB_PORT, &pa);
	sg.length = (128U << pa.active_mtu) + 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qb->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, qb->qp_num, QKEY);
	ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf, 8);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, qb->qp_num, QKEY);
	ibv_wr_set_sge(x, sa.mr->lkey, (uintptr_t)sa.buf, sg.length);
	ret = ibv_wr_complete(x);
	lret = ibv_post_send(qa, &wr, &bad);
	ok(ret == EINVAL && lret == EINVAL,
	   "a batch with a SEND of MTU + 1 = %u bytes: EINVAL, as ibv_post_send() (got %s, %s)",
	   sg.length, strerror(ret), strerror(lret));
	ok(quiet(cqx_a, "A"), "nothing of it was posted");
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (qb)
		ibv_destroy_qp(qb);
	if (qa)
		ibv_destroy_qp(qa);
	drain(&sa);
	drain(&sb);
	tap_case = NULL;
}

/* What softrvt refuses */

static void case_refused(void)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 4,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = ibv_cq_ex_to_cq(cqx_a),
		.recv_cq = ibv_cq_ex_to_cq(cqx_a),
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = sa.pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_srq_init_attr_ex sa_ex = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_BASIC,
		.pd = sa.pd,
		.cq = ibv_cq_ex_to_cq(cqx_a),
	};
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	tap_case = "refused";
	clear_details();
	errno = 0;
	cq = ibv_create_cq_ex(sa.ctx, &ca);
	ok(!cq && errno == EOPNOTSUPP,
	   "ibv_create_cq_ex() with completion time stamps: EOPNOTSUPP (got %s)",
	   strerror(errno));
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	errno = 0;
	qp = ibv_create_qp_ex(sa.ctx, &ia);
	ok(!qp && errno == EOPNOTSUPP,
	   "ibv_create_qp_ex() of a UD QP with RDMA_WRITE in send_ops_flags: EOPNOTSUPP (got %s)",
	   strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);

	srq = ibv_create_srq_ex(sa.ctx, &sa_ex);
	if (!srq)
		detail("ibv_create_srq_ex: %s", strerror(errno));
	ok(srq != NULL, "ibv_create_srq_ex() of a basic SRQ naming a CQ");
	if (srq)
		ok(!ibv_destroy_srq(srq), "ibv_destroy_srq");
	/* XRC SRQs are xsrq_pingpong's; one needs its domain. */
	sa_ex.srq_type = IBV_SRQT_XRC;
	errno = 0;
	srq = ibv_create_srq_ex(sa.ctx, &sa_ex);
	ok(!srq && errno == EINVAL,
	   "ibv_create_srq_ex() of an XRC SRQ without an XRC domain: EINVAL (got %s)",
	   strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);
	tap_case = NULL;
}

/* Run a case and say how long it took, for the suite's time budget. */
#define TIMED(call)							\
	do {								\
		long long t = now_ms();					\
									\
		call;							\
		printf("# took %lld ms\n", now_ms() - t);		\
	} while (0)

int main(int argc, char **argv)
{
	bool placement_only = false;
	long long t0;
	bool up;

	if (argc == 6 && (!strcmp(argv[5], "placement") ||
			  !strcmp(argv[5], "atomic_write"))) {
		placement_only = true;
		with_flush = !strcmp(argv[5], "placement");
		exact_caps = false;
		argc--;
	}
	if (!sides_from_args(argc, argv, argc > 0 ? argv[0] : "wr_ex",
			     "softrvt0 1 softrvt0 1"))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	t0 = now_ms();

	up = ok(side_open(&sa, ACC_REMOTE) && side_cq_ex(&sa, &cqx_a),
		"open A: %s, GID %d, PD, extended CQ, MR", sa.dev,
		sa.gid_index);
	up = ok(side_open(&sb, ACC_REMOTE | IBV_ACCESS_MW_BIND) &&
		side_cq_ex(&sb, &cqx_b),
		"open B: %s, GID %d, PD, extended CQ, MR", sb.dev,
		sb.gid_index) && up;
	printf("# open: %lld ms\n", now_ms() - t0);
	if (up && placement_only) {
		TIMED(case_placement());
	} else if (up) {
		TIMED(case_placement());
		TIMED(case_placement_method());
		TIMED(case_rc_batch());
		TIMED(case_mw());
		TIMED(case_bad_lkey());
		TIMED(bad_batch("bad WR: too many SGEs", bad_sges, legacy_sges,
				EINVAL));
		TIMED(bad_batch("bad WR: inline data past max_inline_data",
				bad_inline, legacy_inline, EINVAL));
		TIMED(bad_batch("bad WR: atomic of 4 bytes", bad_atomic,
				legacy_atomic, EINVAL));
		TIMED(bad_batch("bad batch: longer than the send queue",
				bad_long, NULL, ENOMEM));
		TIMED(case_setter_without_wr());
		TIMED(case_not_rts());
		TIMED(case_ud());
		TIMED(case_refused());
	}
	t0 = now_ms();
	sides_close();
	printf("# close: %lld ms\n", now_ms() - t0);
	return tap_done();
}
