// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_errors: RC transport errors over the wire complete with the right
 * statuses on both ends.
 *
 * One process opens two RDMA devices (normally softrvt devices in two
 * network namespaces joined by a link; the process does not care) and
 * connects RC QPs between them, so every request, ACK and NAK crosses the
 * wire instead of the loopback path. Each case makes a fresh QP pair,
 * provokes one transport error (a bad rkey, a READ past the MR, a QP
 * without remote write, a receive too small, a SEND with Invalidate of
 * an rkey the responder cannot invalidate, RNR with and without
 * retries, a responder that never answers, an ACK that reached a QP
 * the consumer then moved to ERR, a misaligned atomic) and checks
 * the work completions (wr_id, status, opcode, byte_len), the QP states
 * and the memory of both sides; one more leaves B's QP in RTR and checks
 * that its first packet raises IBV_EVENT_COMM_EST, once. A baseline case first shows that such a
 * pair moves data correctly. A last case makes QP creation fail on A
 * while B floods the QPNs being created with packets. Every wait is
 * bounded: a missing completion fails its check instead of hanging.
 *
 * usage: wire_errors DEV_A GID_A DEV_B GID_B   prints TAP, exits 1 on any
 *                                                failure
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/softrvt-abi.h>

#include "rc_pair.h"
#include "tap.h"

#define RETRY_WAIT_MS	20000	/* for the transport retry case */

/* Cases */

/* 1: SEND, RDMA WRITE, RDMA READ and the atomics succeed, right bytes. */
static void case_baseline(void)
{
	const uint64_t v0 = 0x1111222233334444ull;
	const uint64_t v1 = 0xaaaabbbbccccddddull;
	struct pair_cfg c = default_cfg();
	uint8_t *target = sb.buf + ATOMIC_OFF, *result = sa.buf + ATOMIC_OFF;
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted, done;

	if (!case_begin(&p, "baseline", &c))
		return;

	/* SEND 3000 bytes into a 4096-byte receive at B's offset 0. */
	pattern(sa.buf, 3000, 1);
	sg = sge_of(&sa, 0, 3000);
	wr = wr_of(0x101, IBV_WR_SEND, &sg);
	posted = post_recv(p.qb, 0x1b1, 0, 4096) && post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x101, IBV_WC_SUCCESS, IBV_WC_SEND,
			       -1, p.qa, WAIT_MS),
	   "SEND 3000 bytes: A completes IBV_WC_SUCCESS, IBV_WC_SEND");
	ok(posted && expect_wc(&sb, "B", 0x1b1, IBV_WC_SUCCESS, IBV_WC_RECV,
			       3000, p.qb, WAIT_MS),
	   "B's receive completes IBV_WC_SUCCESS, IBV_WC_RECV, byte_len 3000");
	ok(posted && same(sb.buf, sa.buf, 3000, "B's receive buffer") &&
	   all_bytes(sb.buf + 3000, 4096 - 3000, CANARY,
		     "B past the message"),
	   "B received the 3000 bytes, nothing past them");

	/* RDMA WRITE 5000 bytes from A's 4096 to B's 8192. */
	pattern(sa.buf + 4096, 5000, 2);
	sg = sge_of(&sa, 4096, 5000);
	wr = rdma_of(0x102, IBV_WR_RDMA_WRITE, &sg, 8192, sb.mr->rkey);
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x102, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_WRITE, -1, p.qa, WAIT_MS),
	   "RDMA WRITE 5000 bytes: A completes IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE");
	ok(posted && same(sb.buf + 8192, sa.buf + 4096, 5000, "B's target") &&
	   all_bytes(sb.buf + 4096, 4096, CANARY, "B before the target") &&
	   all_bytes(sb.buf + 13192, 16384 - 13192, CANARY,
		     "B after the target"),
	   "the 5000 bytes are in B's MR, nothing around them changed");

	/* RDMA READ 5000 bytes from B's 16384 into A's 16384. */
	pattern(sb.buf + 16384, 5000, 3);
	sg = sge_of(&sa, 16384, 5000);
	wr = rdma_of(0x103, IBV_WR_RDMA_READ, &sg, 16384, sb.mr->rkey);
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x103, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_READ, 5000, p.qa, WAIT_MS),
	   "RDMA READ 5000 bytes: A completes IBV_WC_SUCCESS, IBV_WC_RDMA_READ, byte_len 5000");
	ok(posted && same(sa.buf + 16384, sb.buf + 16384, 5000,
			  "A's READ buffer") &&
	   all_bytes(sa.buf + 21384, 24576 - 21384, CANARY,
		     "A after the READ buffer"),
	   "A read B's 5000 bytes, nothing past them");

	/* Atomics on the u64 at B's ATOMIC_OFF. */
	put64(target, v0);
	wr = atomic_of(0x104, IBV_WR_ATOMIC_FETCH_AND_ADD, &sg, ATOMIC_OFF,
		       0x10, 0);
	done = post_send(p.qa, &wr) &&
	       expect_wc(&sa, "A", 0x104, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8,
			 p.qa, WAIT_MS);
	ok(done, "FETCH_AND_ADD: A completes IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, byte_len 8");
	ok(done && u64_is(result, v0, "returned value") &&
	   u64_is(target, v0 + 0x10, "B's u64"),
	   "FETCH_AND_ADD 0x10: old value returned, B's memory = old + 0x10");

	wr = atomic_of(0x105, IBV_WR_ATOMIC_CMP_AND_SWP, &sg, ATOMIC_OFF,
		       v0 + 0x10, v1);
	done = post_send(p.qa, &wr) &&
	       expect_wc(&sa, "A", 0x105, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8,
			 p.qa, WAIT_MS);
	ok(done, "CMP_AND_SWP: A completes IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, byte_len 8");
	ok(done && u64_is(result, v0 + 0x10, "returned value") &&
	   u64_is(target, v1, "B's u64"),
	   "matching CMP_AND_SWP: old value returned, B's memory swapped");

	put64(result, 0);
	wr = atomic_of(0x106, IBV_WR_ATOMIC_CMP_AND_SWP, &sg, ATOMIC_OFF,
		       1, 0x5555);
	done = post_send(p.qa, &wr) &&
	       expect_wc(&sa, "A", 0x106, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8,
			 p.qa, WAIT_MS);
	ok(done && u64_is(result, v1, "returned value") &&
	   u64_is(target, v1, "B's u64"),
	   "failing CMP_AND_SWP: old value returned, B's memory unchanged");
	ok(all_bytes(sb.buf + ATOMIC_OFF - 8, 8, CANARY, "B before the u64") &&
	   all_bytes(sb.buf + ATOMIC_OFF + 8, 8, CANARY, "B after the u64") &&
	   all_bytes(sa.buf + ATOMIC_OFF + 8, 8, CANARY, "A after the result"),
	   "the atomics changed only the 8 target and result bytes");
	ok(cq_empty(&sb, "B's CQ"),
	   "no completion on B for the WRITE, the READ and the atomics");
	pair_down(&p);
}

/* A key that is not @mr's rkey, nor its lkey. */
static uint32_t bad_rkey_of(const struct ibv_mr *mr)
{
	uint32_t key = mr->rkey ^ 0x1000;

	return key == mr->lkey ? mr->rkey ^ 0x2000 : key;
}

/* 2 and 10: a bad rkey; B and A go to ERR, a SEND behind it flushes. */
static void case_bad_rkey(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr, wr2;
	struct ibv_sge sg, sg2;
	uint32_t bad_rkey;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "bad rkey", &c))
		return;
	bad_rkey = bad_rkey_of(sb.mr);
	printf("# rkey 0x%08x, bad rkey 0x%08x\n", sb.mr->rkey, bad_rkey);

	pattern(sa.buf, 2000, 4);
	pattern(sa.buf + 4096, 100, 5);
	sg = sge_of(&sa, 0, 2000);
	sg2 = sge_of(&sa, 4096, 100);
	wr = rdma_of(0x201, IBV_WR_RDMA_WRITE, &sg, 0, bad_rkey);
	wr2 = wr_of(0x202, IBV_WR_SEND, &sg2);
	wr.next = &wr2;
	/* Both posted before any completion is polled. */
	posted = post_recv(p.qb, 0x2b1, 8192, 4096) && post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x201, IBV_WC_REM_ACCESS_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "RDMA WRITE with rkey 0x%08x: A completes IBV_WC_REM_ACCESS_ERR",
	   bad_rkey);
	ok(posted && expect_wc(&sa, "A", 0x202, IBV_WC_WR_FLUSH_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "the SEND posted behind it completes IBV_WC_WR_FLUSH_ERR");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	ok(posted && wait_state(p.qa, IBV_QPS_ERR, WAIT_MS, "A"),
	   "A's QP is in IBV_QPS_ERR");
	ok(posted && expect_wc(&sb, "B", 0x2b1, IBV_WC_WR_FLUSH_ERR, -1, -1,
			       p.qb, WAIT_MS),
	   "B's receive is flushed, IBV_WC_WR_FLUSH_ERR: the SEND never landed");
	ok(all_bytes(sb.buf, BUF_SIZE, CANARY, "B's buffer"),
	   "nothing written to B's memory");
	pair_down(&p);
}

/*
 * 2b: a one-packet RDMA WRITE with immediate and a bad rkey: B takes a
 * receive for the immediate before it checks the rkey, and that receive
 * completes with a Local Access Error (IBA 11.6.2), as on the
 * same-device path.
 */
static void case_bad_rkey_imm(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	uint32_t bad_rkey;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "bad rkey, WRITE with immediate", &c))
		return;
	bad_rkey = bad_rkey_of(sb.mr);
	pattern(sa.buf, 500, 6);
	sg = sge_of(&sa, 0, 500);
	wr = rdma_of(0x251, IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 0, bad_rkey);
	wr.imm_data = htonl(0x5eed);
	posted = post_recv(p.qb, 0x2c1, 8192, 4096) && post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x251, IBV_WC_REM_ACCESS_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "WRITE_WITH_IMM with rkey 0x%08x: A completes IBV_WC_REM_ACCESS_ERR",
	   bad_rkey);
	ok(posted && expect_wc(&sb, "B", 0x2c1, IBV_WC_LOC_ACCESS_ERR, -1, -1,
			       p.qb, WAIT_MS),
	   "B's receive for the immediate completes IBV_WC_LOC_ACCESS_ERR");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	ok(all_bytes(sb.buf, BUF_SIZE, CANARY, "B's buffer"),
	   "nothing written to B's memory");
	pair_down(&p);
}

/* 3: a READ reaching past B's MR. */
static void case_read_past_mr(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "READ past the MR", &c))
		return;
	sg = sge_of(&sa, 0, 64);
	wr = rdma_of(0x301, IBV_WR_RDMA_READ, &sg, BUF_SIZE - 8, sb.mr->rkey);
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x301, IBV_WC_REM_ACCESS_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "64 bytes from 8 before the end of B's MR: A completes IBV_WC_REM_ACCESS_ERR");
	ok(posted && all_bytes(sa.buf, 4096, CANARY, "A's READ buffer"),
	   "nothing written to A's READ buffer");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	pair_down(&p);
}

/* 4: a WRITE to a QP without IBV_ACCESS_REMOTE_WRITE. */
static void case_qp_no_remote_write(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted;

	c.b_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC;
	if (!case_begin(&p, "QP without remote write", &c))
		return;
	pattern(sa.buf, 100, 6);
	sg = sge_of(&sa, 0, 100);
	wr = rdma_of(0x401, IBV_WR_RDMA_WRITE, &sg, 0, sb.mr->rkey);
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x401, IBV_WC_REM_ACCESS_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "RDMA WRITE with B's valid rkey: A completes IBV_WC_REM_ACCESS_ERR");
	ok(posted && all_bytes(sb.buf, 4096, CANARY, "B's buffer"),
	   "nothing written to B's memory");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	pair_down(&p);
}

/* 5: a SEND larger than the receive. */
static void case_recv_too_small(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "receive too small", &c))
		return;
	pattern(sa.buf, 2000, 7);
	sg = sge_of(&sa, 0, 2000);
	wr = wr_of(0x501, IBV_WR_SEND, &sg);
	posted = post_recv(p.qb, 0x5b1, 0, 1000) && post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x501, IBV_WC_REM_INV_REQ_ERR, -1,
			       -1, p.qa, WAIT_MS),
	   "SEND 2000 bytes into 1000: A completes IBV_WC_REM_INV_REQ_ERR");
	ok(posted && expect_wc(&sb, "B", 0x5b1, IBV_WC_LOC_LEN_ERR, -1, -1,
			       p.qb, WAIT_MS),
	   "B's receive completes IBV_WC_LOC_LEN_ERR");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	ok(posted && all_bytes(sb.buf + 1000, BUF_SIZE - 1000, CANARY,
			       "B past the receive"),
	   "nothing written past B's receive buffer");
	pair_down(&p);
}

/* B's async events for @qp within @ms: how many were COMM_EST, all acked. */
static int comm_est_events(struct ibv_qp *qp, int ms, int *others)
{
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = sb.ctx->async_fd, .events = POLLIN };
	int n = 0;

	*others = 0;
	while (poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(sb.ctx, &ev))
			break;
		if (ev.event_type == IBV_EVENT_COMM_EST &&
		    ev.element.qp == qp)
			n++;
		else
			++*others;
		ibv_ack_async_event(&ev);
		ms = 0;
	}
	return n;
}

/*
 * 5a: B's QP stays in RTR and takes A's SENDs: IBV_EVENT_COMM_EST with
 * the first (the CM's cue when its RTU was lost), not with the second.
 */
static void case_comm_est(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	int i, first = 0, second = 0, others = 0, others2 = 0;
	bool posted = true;
	int flags;

	c.b_rtr_only = true;
	if (!case_begin(&p, "COMM_EST", &c))
		return;
	flags = fcntl(sb.ctx->async_fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(sb.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		posted = false;
	for (i = 0; i < 2 && posted; i++) {
		pattern(sa.buf, 512, 20 + i);
		sg = sge_of(&sa, 0, 512);
		wr = wr_of(0x5a1 + i, IBV_WR_SEND, &sg);
		posted = post_recv(p.qb, 0x5b1 + i, 0, 512) &&
			 post_send(p.qa, &wr) &&
			 expect_wc(&sa, "A", 0x5a1 + i, IBV_WC_SUCCESS,
				   IBV_WC_SEND, -1, p.qa, WAIT_MS) &&
			 expect_wc(&sb, "B", 0x5b1 + i, IBV_WC_SUCCESS,
				   IBV_WC_RECV, 512, p.qb, WAIT_MS) &&
			 same(sb.buf, sa.buf, 512, "B's receive buffer");
		if (!i)
			first = comm_est_events(p.qb, WAIT_MS, &others);
		else
			second = comm_est_events(p.qb, 200, &others2);
	}
	ok(posted, "B in RTR receives two SENDs of 512 bytes, data as sent");
	ok(posted && first == 1 && !others,
	   "the first raises IBV_EVENT_COMM_EST on B's QP (%d, %d other events)",
	   first, others);
	ok(posted && !second && !others2,
	   "the second raises none (%d COMM_EST, %d other events)", second,
	   others2);
	ok(posted && state_is(p.qb, IBV_QPS_RTR, "B"),
	   "B's QP stays in RTR: the consumer moves it");
	if (flags >= 0)
		fcntl(sb.ctx->async_fd, F_SETFL, flags);
	pair_down(&p);
}

/*
 * 5b: a SEND with Invalidate of 3000 bytes (SEND_FIRST, SEND_MIDDLE,
 * SEND_LAST_WITH_INVALIDATE at MTU 1024) naming B's rkey, which is not a
 * fast-registration MR's: B takes the data, fails its receive with
 * IBV_WC_REM_INV_REQ_ERR as rxe's responder does, and NAKs the request.
 */
static void case_send_with_inv_bad_rkey(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "SEND with Invalidate of an rkey B cannot invalidate",
			&c))
		return;
	pattern(sa.buf, 3000, 8);
	sg = sge_of(&sa, 0, 3000);
	wr = wr_of(0x551, IBV_WR_SEND_WITH_INV, &sg);
	wr.invalidate_rkey = sb.mr->rkey;
	posted = post_recv(p.qb, 0x5c1, 0, 4096) && post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x551, IBV_WC_REM_INV_REQ_ERR, -1,
			       -1, p.qa, WAIT_MS),
	   "SEND_WITH_INV of rkey 0x%08x: A completes IBV_WC_REM_INV_REQ_ERR",
	   sb.mr->rkey);
	ok(posted && expect_wc(&sb, "B", 0x5c1, IBV_WC_REM_INV_REQ_ERR, -1,
			       -1, p.qb, WAIT_MS),
	   "B's receive completes IBV_WC_REM_INV_REQ_ERR");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	ok(posted && same(sb.buf, sa.buf, 3000, "B's receive buffer"),
	   "the 3000 bytes landed in B's receive before the rkey was checked");
	ok(posted && all_bytes(sb.buf + 3000, BUF_SIZE - 3000, CANARY,
			       "B past the message"),
	   "nothing written past them");
	pair_down(&p);
}

/* 6: no receive at B and rnr_retry 0. */
static void case_rnr_exceeded(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	long long t0;
	struct pair p;
	bool posted;

	c.rnr_retry = 0;
	if (!case_begin(&p, "RNR, rnr_retry 0", &c))
		return;
	pattern(sa.buf, 64, 8);
	sg = sge_of(&sa, 0, 64);
	wr = wr_of(0x601, IBV_WR_SEND, &sg);
	t0 = now_ms();
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x601, IBV_WC_RNR_RETRY_EXC_ERR, -1,
			       -1, p.qa, WAIT_MS),
	   "SEND with no receive at B: A completes IBV_WC_RNR_RETRY_EXC_ERR");
	printf("# RNR error after %lld ms\n", now_ms() - t0);
	ok(posted && wait_state(p.qa, IBV_QPS_ERR, WAIT_MS, "A"),
	   "A's QP goes to IBV_QPS_ERR");
	ok(posted && state_is(p.qb, IBV_QPS_RTS, "B") &&
	   cq_empty(&sb, "B's CQ"),
	   "B's QP stays in IBV_QPS_RTS, no completion on B");
	pair_down(&p);
}

/* 7: no receive at B at first, rnr_retry 7: the SEND waits for it. */
static void case_rnr_recovered(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted, received;

	c.rnr_retry = 7;	/* infinite */
	if (!case_begin(&p, "RNR, rnr_retry 7", &c))
		return;
	pattern(sa.buf, 100, 9);
	sg = sge_of(&sa, 0, 100);
	wr = wr_of(0x701, IBV_WR_SEND, &sg);
	posted = post_send(p.qa, &wr);
	usleep(200 * 1000);
	ok(posted && cq_empty(&sa, "A's CQ"),
	   "SEND with no receive at B: nothing completes at A for 200 ms");
	received = posted && post_recv(p.qb, 0x7b1, 0, 4096);
	ok(received && expect_wc(&sa, "A", 0x701, IBV_WC_SUCCESS, IBV_WC_SEND,
				 -1, p.qa, WAIT_MS),
	   "once B posts a receive, A completes IBV_WC_SUCCESS, IBV_WC_SEND");
	ok(received && expect_wc(&sb, "B", 0x7b1, IBV_WC_SUCCESS, IBV_WC_RECV,
				 100, p.qb, WAIT_MS),
	   "B's receive completes IBV_WC_SUCCESS, IBV_WC_RECV, byte_len 100");
	ok(received && same(sb.buf, sa.buf, 100, "B's receive buffer") &&
	   all_bytes(sb.buf + 100, 4096 - 100, CANARY, "B past the message"),
	   "B received the 100 bytes, nothing past them");
	pair_down(&p);
}

/*
 * 7b: a SEND waiting out RNR NAKs with a WQE behind it that fails
 * locally (a bad lkey): the SEND is still resent and completes once B
 * posts a receive, then the failed WQE completes with its error.
 */
static void case_rnr_then_local_error(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr, wr2;
	struct ibv_sge sg, sg2;
	struct pair p;
	bool posted, received;

	c.rnr_retry = 7;	/* infinite */
	if (!case_begin(&p, "RNR with a local error behind", &c))
		return;
	pattern(sa.buf, 100, 10);
	sg = sge_of(&sa, 0, 100);
	sg2 = sge_of(&sa, 4096, 100);
	sg2.lkey ^= 0x100000;
	wr = wr_of(0x751, IBV_WR_SEND, &sg);
	wr2 = wr_of(0x752, IBV_WR_SEND, &sg2);
	wr.next = &wr2;
	posted = post_send(p.qa, &wr);
	usleep(200 * 1000);
	ok(posted && cq_empty(&sa, "A's CQ"),
	   "SEND with no receive at B: nothing completes at A for 200 ms");
	received = posted && post_recv(p.qb, 0x7c1, 0, 4096);
	ok(received && expect_wc(&sa, "A", 0x751, IBV_WC_SUCCESS, IBV_WC_SEND,
				 -1, p.qa, WAIT_MS),
	   "once B posts a receive, the SEND is resent and completes IBV_WC_SUCCESS");
	ok(received && expect_wc(&sa, "A", 0x752, IBV_WC_LOC_PROT_ERR, -1, -1,
				 p.qa, WAIT_MS),
	   "the SEND with a bad lkey behind it completes IBV_WC_LOC_PROT_ERR");
	ok(received && expect_wc(&sb, "B", 0x7c1, IBV_WC_SUCCESS, IBV_WC_RECV,
				 100, p.qb, WAIT_MS) &&
	   same(sb.buf, sa.buf, 100, "B's receive buffer"),
	   "B received the first SEND's 100 bytes");
	ok(received && wait_state(p.qa, IBV_QPS_ERR, WAIT_MS, "A"),
	   "A's QP goes to IBV_QPS_ERR");
	pair_down(&p);
}

/* 8: B's QP stays in INIT and never answers: A's retries run out. */
static void case_retry_exceeded(void)
{
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	long long t0;
	struct pair p;
	bool posted;

	c.timeout = 10;		/* 4.2 ms */
	c.retry_cnt = 2;
	c.b_init_only = true;
	if (!case_begin(&p, "retries exceeded", &c))
		return;
	pattern(sa.buf, 64, 10);
	sg = sge_of(&sa, 0, 64);
	wr = wr_of(0x801, IBV_WR_SEND, &sg);
	t0 = now_ms();
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x801, IBV_WC_RETRY_EXC_ERR, -1, -1,
			       p.qa, RETRY_WAIT_MS),
	   "SEND to a QP in INIT: A completes IBV_WC_RETRY_EXC_ERR");
	printf("# retry error after %lld ms\n", now_ms() - t0);
	ok(posted && wait_state(p.qa, IBV_QPS_ERR, WAIT_MS, "A"),
	   "A's QP goes to IBV_QPS_ERR");
	ok(posted && state_is(p.qb, IBV_QPS_INIT, "B") &&
	   cq_empty(&sb, "B's CQ"),
	   "B's QP is still in IBV_QPS_INIT, no completion on B");
	pair_down(&p);
}

/*
 * A SEND that B took is acknowledged before B's receive completes, and A
 * completes it as sent even when A's consumer moves the QP to ERR once
 * the ACK is there but before A's engine handled it (iSER's target sees
 * the initiator disconnect right after its logout response).  A's
 * handling of received packets is held (debugfs rx_hold) from the post
 * until the QP is in ERR.
 */
static void case_ack_before_err(void)
{
	struct pair_cfg c = default_cfg();
	long long b_tx0, b_tx, a_rx0, a_rx = -1, end;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	bool held, posted, got, err;
	struct pair p;

	if (!case_begin(&p, "ACK taken before ERR", &c))
		return;
	pattern(sa.buf, 256, 13);
	sg = sge_of(&sa, 0, 256);
	wr = wr_of(0xa01, IBV_WR_SEND, &sg);
	b_tx0 = hw_counter(sb.dev, "tx_packets");
	a_rx0 = hw_counter(sa.dev, "rx_packets");
	held = ok(b_tx0 >= 0 && a_rx0 >= 0 && hold_rx(sa.dev, true),
		  "hold %s's received packets (tx_packets %lld on B, rx_packets %lld on A)",
		  sa.dev, b_tx0, a_rx0);
	posted = held && post_recv(p.qb, 0xab1, 0, 4096) && post_send(p.qa, &wr);
	got = ok(posted && expect_wc(&sb, "B", 0xab1, IBV_WC_SUCCESS, IBV_WC_RECV,
				     256, p.qb, WAIT_MS),
		 "B's receive completes IBV_WC_SUCCESS, 256 bytes");
	b_tx = hw_counter(sb.dev, "tx_packets");
	ok(got && b_tx > b_tx0,
	   "B's ACK left before its receive completed (tx_packets %lld -> %lld)",
	   b_tx0, b_tx);
	ok(got && same(sb.buf, sa.buf, 256, "B's receive buffer"),
	   "B received the 256 bytes");
	for (end = now_ms() + WAIT_MS; got && now_ms() < end; usleep(1000)) {
		a_rx = hw_counter(sa.dev, "rx_packets");
		if (a_rx > a_rx0)
			break;
	}
	got = ok(got && a_rx > a_rx0,
		 "the ACK reached A and waits there (rx_packets %lld -> %lld)",
		 a_rx0, a_rx);
	err = ok(got && modify(p.qa, &a, IBV_QP_STATE, &sa, "ERR"),
		 "A's consumer moves its QP to IBV_QPS_ERR");
	ok(got && err && cq_empty(&sa, "A's CQ while held"),
	   "A's SEND does not complete while the ACK is held");
	ok(!held || hold_rx(sa.dev, false), "release %s", sa.dev);
	ok(err && expect_wc(&sa, "A", 0xa01, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
			    p.qa, WAIT_MS),
	   "A's SEND completes IBV_WC_SUCCESS, not flushed: the ACK came first");
	pair_down(&p);
}

/* 9: FETCH_AND_ADD on an address that is not 8-byte aligned. */
static void case_misaligned_atomic(void)
{
	const uint64_t v0 = 0x0102030405060708ull;
	struct pair_cfg c = default_cfg();
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	struct pair p;
	bool posted;

	if (!case_begin(&p, "misaligned atomic", &c))
		return;
	put64(sb.buf + ATOMIC_OFF, v0);
	wr = atomic_of(0x901, IBV_WR_ATOMIC_FETCH_AND_ADD, &sg,
		       ATOMIC_OFF + 4, 1, 0);
	posted = post_send(p.qa, &wr);
	ok(posted && expect_wc(&sa, "A", 0x901, IBV_WC_REM_INV_REQ_ERR, -1, -1,
			       p.qa, WAIT_MS),
	   "FETCH_AND_ADD at aligned + 4: A completes IBV_WC_REM_INV_REQ_ERR");
	ok(posted && u64_is(sb.buf + ATOMIC_OFF, v0, "B's u64") &&
	   all_bytes(sb.buf + ATOMIC_OFF + 8, 8, CANARY, "B after the u64") &&
	   all_bytes(sa.buf + ATOMIC_OFF, 8, CANARY, "A's result"),
	   "B's memory and A's result buffer unchanged");
	ok(posted && wait_state(p.qb, IBV_QPS_ERR, WAIT_MS, "B"),
	   "B's QP goes to IBV_QPS_ERR");
	pair_down(&p);
}

/* Devices */

/*
 * QP creation that fails after the QPN is allocated, while packets for
 * that QPN arrive: A's kernel must take the QP down as destroy would
 * (wait for the receive path's references, stop the send engine, drop
 * the packets it queued), or they outlive the QP.  B's UD QP floods the
 * QPN A will allocate next; A creates UD QPs through the uverbs write ABI
 * with the response buffer read-only, so each creation fails at its very
 * end.  The kernel log (KASAN, kmemleak) is the main witness; the test
 * checks that each creation failed with EFAULT, that the QPNs flooded
 * were the ones taken, and that A still receives intact data afterwards.
 */
#define CREATE_ROUNDS	300
#define UD_QKEY		0x11111111
#define GRH_BYTES	40
#define FLOOD_MSG	64

struct flood {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_ah *ah;
	uint32_t target;	/* atomic: the QPN to flood */
	int stop;		/* atomic */
	long sent;
	int error;		/* first post or completion failure */
};

static void *flood_qpn(void *arg)
{
	struct flood *f = arg;
	struct ibv_sge sg = sge_of(&sb, 0, FLOOD_MSG);
	struct ibv_send_wr wr = {
		.sg_list = &sg,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc[16];
	int out = 0, n, i;

	wr.wr.ud.ah = f->ah;
	wr.wr.ud.remote_qkey = UD_QKEY;
	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE) && !f->error) {
		wr.wr.ud.remote_qpn = __atomic_load_n(&f->target,
						      __ATOMIC_ACQUIRE);
		if (out < QP_DEPTH) {
			f->error = ibv_post_send(f->qp, &wr, &bad);
			out += !f->error;
		}
		n = ibv_poll_cq(f->cq, 16, wc);
		if (n < 0)
			f->error = EIO;
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				f->error = EIO;
		out -= n > 0 ? n : 0;
		f->sent += n > 0 ? n : 0;
	}
	return NULL;
}

static struct ibv_qp *make_ud_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = QP_DEPTH,
			.max_recv_wr = QP_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		detail("ibv_create_qp UD on %s: %s", s->dev, strerror(errno));
	else if (!ud_qp_up(qp, s, UD_QKEY, 0)) {
		ibv_destroy_qp(qp);
		qp = NULL;
	}
	return qp;
}

/* A UD QP on @s, created through the write ABI answering into @resp. */
static int create_qp_raw(struct side *s, void *resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_CREATE_QP,
			.in_words = sizeof(req) / 4,
			.out_words = (sizeof(struct ib_uverbs_create_qp_resp) +
				      sizeof(struct softrvt_create_qp_resp)) / 4,
		},
		.cmd = {
			.response = (uintptr_t)resp,
			.pd_handle = s->pd->handle,
			.send_cq_handle = s->cq->handle,
			.recv_cq_handle = s->cq->handle,
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.qp_type = IBV_QPT_UD,
		},
	};

	return write(s->ctx->cmd_fd, &req, sizeof(req)) < 0 ? errno : 0;
}

static void case_create_fails_under_traffic(void)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = {
			.dgid = sa.gid,
			.sgid_index = (uint8_t)sb.gid_index,
			.hop_limit = 64,
		},
		.port_num = IB_PORT,
	};
	struct flood f = {};
	struct ibv_qp *probe = NULL;
	uint32_t first = 0;
	int i, ret, efault = 0;
	bool good, flooding = false;
	pthread_t thr;
	void *ro;

	tap_case = "create_qp failing while its QPN is flooded";
	clear_details();
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f.cq = ibv_create_cq(sb.ctx, 4 * QP_DEPTH, NULL, NULL, 0);
	good = ro != MAP_FAILED && f.cq;
	f.qp = good ? make_ud_qp(&sb, f.cq) : NULL;
	f.ah = f.qp ? ibv_create_ah(sb.pd, &aa) : NULL;
	/* The QPN A hands out next: one past a probe's. */
	probe = f.ah ? make_ud_qp(&sa, sa.cq) : NULL;
	if (probe) {
		first = probe->qp_num + 1;
		good = !ibv_destroy_qp(probe);
		probe = NULL;
	}
	f.target = first;
	if (good && f.ah && first)
		flooding = !pthread_create(&thr, NULL, flood_qpn, &f);
	if (!ok(good && flooding, "setup: B's UD QP floods QPN 0x%x of A",
		first))
		goto out;

	/* Let the flood get going, then create into it. */
	usleep(100000);
	for (i = 0; i < CREATE_ROUNDS; i++) {
		__atomic_store_n(&f.target, first + i, __ATOMIC_RELEASE);
		usleep(200);
		ret = create_qp_raw(&sa, ro);
		efault += ret == EFAULT;
		if (ret && ret != EFAULT)
			detail("round %d: create_qp failed with %s", i,
			       strerror(ret));
		if (!ret)
			detail("round %d: create_qp succeeded", i);
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	printf("# %ld flood packets sent during %d failing creations\n",
	       f.sent, CREATE_ROUNDS);
	ok(efault == CREATE_ROUNDS && !f.error && f.sent > CREATE_ROUNDS,
	   "%d creations with a read-only response fail with EFAULT under the flood",
	   CREATE_ROUNDS);

	/* Each failed creation took the QPN flooded for it. */
	probe = make_ud_qp(&sa, sa.cq);
	if (probe)
		detail("next QPN 0x%x, expected 0x%x", probe->qp_num,
		       first + CREATE_ROUNDS);
	ok(probe && probe->qp_num == first + CREATE_ROUNDS,
	   "the failed creations took the QPNs flooded");

	/* A still receives, intact, on the QP created afterwards. */
	if (probe) {
		struct ibv_sge sg = sge_of(&sb, 4096, 512);
		struct ibv_sge rsg = sge_of(&sa, 0, GRH_BYTES + 512);
		struct ibv_send_wr wr = {
			.wr_id = 0xf1,
			.sg_list = &sg,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;
		struct ibv_recv_wr rwr = {
			.wr_id = 0xe1,
			.sg_list = &rsg,
			.num_sge = 1,
		}, *rbad;
		struct ibv_wc wc;
		long long end;

		drain(&sa);
		pattern(sb.buf + 4096, 512, 77);
		memset(sa.buf, CANARY, 4096);
		wr.wr.ud.ah = f.ah;
		wr.wr.ud.remote_qpn = probe->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
		good = !ibv_post_recv(probe, &rwr, &rbad) &&
		       !ibv_post_send(f.qp, &wr, &bad);
		/* Past the flood's last completions, to this send's. */
		end = now_ms() + WAIT_MS;
		memset(&wc, 0, sizeof(wc));
		while (good && wc.wr_id != 0xf1 && now_ms() < end)
			if (ibv_poll_cq(f.cq, 1, &wc) == 0)
				usleep(100);
		good = good && wc.wr_id == 0xf1 &&
		       wc.status == IBV_WC_SUCCESS &&
		       expect_wc(&sa, "A", 0xe1, IBV_WC_SUCCESS, IBV_WC_RECV,
				 GRH_BYTES + 512, probe, WAIT_MS) &&
		       same(sa.buf + GRH_BYTES, sb.buf + 4096, 512, "payload");
		ok(good, "a UD message to A's next QP arrives intact");
		ibv_destroy_qp(probe);
	}
out:
	if (f.ah)
		ibv_destroy_ah(f.ah);
	if (f.qp)
		ibv_destroy_qp(f.qp);
	if (f.cq)
		ibv_destroy_cq(f.cq);
	if (ro != MAP_FAILED)
		munmap(ro, 4096);
	tap_case = NULL;
}

int main(int argc, char **argv)
{
	char ga[INET6_ADDRSTRLEN], gb[INET6_ADDRSTRLEN];
	static const union ibv_gid zero_gid;
	bool up;

	if (!sides_from_args(argc, argv, argc > 0 ? argv[0] : "wire_errors",
			     "softrvt1 1 softrvt2 1"))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");

	up = ok(side_open(&sa, IBV_ACCESS_LOCAL_WRITE),
		"open A: %s, port %d ACTIVE, GID %d, PD, CQ, %d-byte MR",
		sa.dev, IB_PORT, sa.gid_index, BUF_SIZE);
	up = ok(side_open(&sb, ACC_REMOTE),
		"open B: %s, port %d ACTIVE, GID %d, PD, CQ, %d-byte MR",
		sb.dev, IB_PORT, sb.gid_index, BUF_SIZE) && up;
	if (up) {
		gid_str(&sa.gid, ga, sizeof(ga));
		gid_str(&sb.gid, gb, sizeof(gb));
		detail("A %s GID %s, B %s GID %s", sa.dev, ga, sb.dev, gb);
		up = ok(strcmp(sa.dev, sb.dev) &&
			memcmp(&sa.gid, &zero_gid, sizeof(zero_gid)) &&
			memcmp(&sb.gid, &zero_gid, sizeof(zero_gid)) &&
			memcmp(&sa.gid, &sb.gid, sizeof(sa.gid)),
			"two devices with distinct, non-zero GIDs (A %s, B %s)",
			ga, gb);
	}
	if (up) {
		case_baseline();
		case_bad_rkey();
		case_bad_rkey_imm();
		case_read_past_mr();
		case_qp_no_remote_write();
		case_recv_too_small();
		case_comm_est();
		case_send_with_inv_bad_rkey();
		case_rnr_exceeded();
		case_rnr_recovered();
		case_rnr_then_local_error();
		case_retry_exceeded();
		case_ack_before_err();
		case_misaligned_atomic();
		case_create_fails_under_traffic();
	}

	/* A device that never opened has nothing to check. */
	sides_close();
	return tap_done();
}
