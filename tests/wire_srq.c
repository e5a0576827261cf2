// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_srq: a soak of RC SENDs into one shared receive queue over the wire,
 * every completion accounted for.
 *
 * One process opens two devices (normally softrvt devices in two network
 * namespaces joined by a veth: every packet crosses the wire).  On the
 * receiving device, NQP RC QPs share one SRQ; on the sending device, as
 * many RC QPs send to them, each keeping WINDOW SENDs in flight, of
 * lengths from 16 bytes to MAX_SIZE (4 KiB unless -s says otherwise: up
 * to four packets; 64 KiB makes a quarter of them long messages of many
 * packets), until MESSAGES have been sent.  The SRQ (-r receives, 128
 * unless told) holds fewer receives than can be in flight, so the
 * responders also meet an empty SRQ now and then (RNR NAK, retried for
 * ever); a small one makes RNR NAKs the rule.
 *
 * The sending device may be another driver's (rdma_rxe): the sender's
 * retries are then its own, and only what arrives is checked here.
 *
 * Each message starts with its QP index and its sequence number on that
 * QP; the rest is a pattern of both.  The checks:
 *  - each send completes once, successfully, in posting order per QP, with
 *    the wr_id it was posted with;
 *  - each receive completes once, successfully, on a WQE of the SRQ that
 *    was posted and not yet used (its wr_id names it), on the QP the
 *    message was sent to, in sequence order per QP, with its length and
 *    every byte right;
 *  - the counts: messages sent == send completions == receive
 *    completions, per QP and in total, and nothing else arrives on either
 *    CQ in the second after the last one.
 *
 * usage: wire_srq [-n MESSAGES] [-q NQP] [-w WINDOW] [-t SECONDS]
 *                 [-s MAX_SIZE] [-r SRQ_DEPTH]
 *                 SEND_DEV SEND_GID RECV_DEV RECV_GID
 * Prints TAP; exits 1 on a failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tap.h"

#define IB_PORT		1
#define MAX_QP		64
#define MAX_WINDOW	64
#define SRQ_MAX		1024
#define SIZE_MAX_ARG	(1u << 20)
#define HDR		16		/* QP index, sequence number */
#define MAGIC		0x53525131u	/* "SRQ1" */

static struct {
	uint64_t messages;
	unsigned int nqp, window, seconds;
	uint32_t max_size;	/* bytes a message may have */
	unsigned int srq_depth;	/* receives the SRQ holds */
} cfg = { .messages = 100000, .nqp = 16, .window = 12, .seconds = 1500,
	  .max_size = 4096, .srq_depth = 128 };

struct side {
	const char *dev;
	int gid_index;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	union ibv_gid gid;
	struct ibv_qp *qp[MAX_QP];
};

static struct side snd, rcv;
static struct ibv_srq *srq;

/* Per QP: what was posted and what came back. */
static struct {
	uint64_t posted;	/* sends posted; also the next sequence */
	uint64_t sent;		/* send completions */
	uint64_t received;	/* receive completions */
} q[MAX_QP];
static bool srq_busy[SRQ_MAX];	/* posted, not completed */
static uint64_t total_posted, total_sent, total_received;
static bool bad_send, bad_recv;
static unsigned long bad_lines;

static void fail_line(bool *flag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail_line(bool *flag, const char *fmt, ...)
{
	va_list ap;

	*flag = true;
	if (bad_lines++ >= 20)
		return;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("not ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nBail out!\n");
	exit(1);
}

/* The length of message @seq of QP @i: mostly short, a quarter long. */
static uint32_t msg_len(unsigned int i, uint64_t seq)
{
	uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ull ^ (i + 1) * 0xbf58476dull;

	x ^= x >> 29;
	if ((x & 3) == 0)
		return HDR + (uint32_t)((x >> 8) % (cfg.max_size - HDR + 1));
	return HDR + (uint32_t)((x >> 8) % 241);
}

static uint32_t msg_seed(unsigned int i, uint64_t seq)
{
	return (uint32_t)(seq * 131 + i * 0x10001 + 7);
}

static void fill(uint8_t *p, unsigned int i, uint64_t seq, uint32_t len)
{
	uint32_t m = MAGIC;

	memcpy(p, &m, 4);
	memcpy(p + 4, &i, 4);
	memcpy(p + 8, &seq, 8);
	pattern(p + HDR, len - HDR, msg_seed(i, seq));
}

static void open_side(struct side *s, const char *dev, int gid_index,
		      size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	s->dev = dev;
	s->gid_index = gid_index;
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			s->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!s->ctx)
		die("cannot open %s", dev);
	if (ibv_query_gid(s->ctx, IB_PORT, gid_index, &s->gid))
		die("ibv_query_gid %s %d", dev, gid_index);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 2 * MAX_QP * MAX_WINDOW + 64,
				      NULL, NULL, 0) : NULL;
	s->len = len;
	s->buf = aligned_alloc(4096, len);
	if (!s->cq || !s->buf)
		die("%s: PD, CQ or memory: %s", dev, strerror(errno));
	memset(s->buf, 0, len);
	s->mr = ibv_reg_mr(s->pd, s->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		die("%s: ibv_reg_mr: %s", dev, strerror(errno));
}

static struct ibv_qp *make_qp(struct side *s, struct ibv_srq *sq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = sq,
		.cap = { .max_send_wr = MAX_WINDOW, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		die("%s: ibv_create_qp: %s", s->dev, strerror(errno));
	return qp;
}

static void connect_qp(struct side *s, struct ibv_qp *qp,
		       const struct side *peer, uint32_t dqpn, uint32_t psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = IB_PORT;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("%s: to INIT: %s", s->dev, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;		/* 0.01 ms */
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = IB_PORT;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = s->gid_index;
	a.ah_attr.grh.dgid = peer->gid;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("%s: to RTR: %s", s->dev, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;			/* 1 s */
	a.retry_cnt = 7;
	a.rnr_retry = 7;		/* for ever */
	a.sq_psn = psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("%s: to RTS: %s", s->dev, strerror(errno));
}

static void post_srq(unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rcv.buf + (size_t)slot * cfg.max_size,
		.length = cfg.max_size, .lkey = rcv.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int ret;

	memset(rcv.buf + (size_t)slot * cfg.max_size, 0xee, HDR);
	ret = ibv_post_srq_recv(srq, &wr, &bad);
	if (ret)
		die("ibv_post_srq_recv: %s", strerror(ret));
	srq_busy[slot] = true;
}

/* The send buffer of QP @i's message @seq: one per window slot. */
static uint8_t *send_slot(unsigned int i, uint64_t seq)
{
	return snd.buf + ((size_t)i * cfg.window + seq % cfg.window) *
			 cfg.max_size;
}

static void post_send(unsigned int i)
{
	uint64_t seq = q[i].posted;
	uint32_t len = msg_len(i, seq);
	uint8_t *p = send_slot(i, seq);
	struct ibv_sge sge = {
		.addr = (uintptr_t)p, .length = len, .lkey = snd.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)i << 48 | seq, .sg_list = &sge,
		.num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	fill(p, i, seq, len);
	ret = ibv_post_send(snd.qp[i], &wr, &bad);
	if (ret)
		die("ibv_post_send QP %u: %s", i, strerror(ret));
	q[i].posted++;
	total_posted++;
}

static int qp_index(struct side *s, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < cfg.nqp; i++)
		if (s->qp[i]->qp_num == qpn)
			return i;
	return -1;
}

static void send_wc(const struct ibv_wc *wc)
{
	int i = qp_index(&snd, wc->qp_num);
	uint64_t seq = wc->wr_id & ((1ull << 48) - 1);

	if (i < 0 || wc->wr_id >> 48 != (unsigned int)i) {
		fail_line(&bad_send, "send completion of QP 0x%x wr_id 0x%" PRIx64 ": no such send",
			  wc->qp_num, wc->wr_id);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_SEND ||
	    seq != q[i].sent || seq >= q[i].posted) {
		fail_line(&bad_send, "QP %d: send %" PRIu64 " completed with %s opcode %d; expected send %" PRIu64 " of %" PRIu64 " posted",
			  i, seq, ibv_wc_status_str(wc->status), wc->opcode,
			  q[i].sent, q[i].posted);
		return;
	}
	q[i].sent++;
	total_sent++;
	if (total_posted < cfg.messages)
		post_send(i);
}

static void recv_wc(const struct ibv_wc *wc)
{
	int i = qp_index(&rcv, wc->qp_num);
	uint64_t slot = wc->wr_id, seq;
	uint8_t *p;
	uint32_t m, idx;
	static uint8_t *want;

	if (!want) {
		want = malloc(cfg.max_size);
		if (!want)
			die("malloc: %s", strerror(errno));
	}
	if (slot >= cfg.srq_depth || !srq_busy[slot]) {
		fail_line(&bad_recv, "receive completion with wr_id 0x%" PRIx64 ": no such receive posted",
			  wc->wr_id);
		return;
	}
	srq_busy[slot] = false;
	if (i < 0 || wc->status != IBV_WC_SUCCESS ||
	    wc->opcode != IBV_WC_RECV) {
		fail_line(&bad_recv, "receive on QP 0x%x: %s opcode %d",
			  wc->qp_num, ibv_wc_status_str(wc->status),
			  wc->opcode);
		return;
	}
	p = rcv.buf + slot * cfg.max_size;
	seq = q[i].received;
	memcpy(&m, p, 4);
	memcpy(&idx, p + 4, 4);
	if (m != MAGIC || idx != (uint32_t)i ||
	    memcmp(p + 8, &seq, 8) || wc->byte_len != msg_len(i, seq) ||
	    wc->src_qp != snd.qp[i]->qp_num) {
		uint64_t got;

		memcpy(&got, p + 8, 8);
		fail_line(&bad_recv, "QP %d: receive %" PRIu64 ": header says QP %u message %" PRIu64 ", %u bytes (want %u), src_qp 0x%x",
			  i, seq, idx, got, wc->byte_len, msg_len(i, seq),
			  wc->src_qp);
		return;
	}
	pattern(want, wc->byte_len - HDR, msg_seed(i, seq));
	if (memcmp(p + HDR, want, wc->byte_len - HDR)) {
		fail_line(&bad_recv, "QP %d: message %" PRIu64 ": payload differs",
			  i, seq);
		return;
	}
	q[i].received++;
	total_received++;
	post_srq(slot);
}

static void poll_all(void)
{
	struct ibv_wc wc[32];
	int n, k;

	while ((n = ibv_poll_cq(rcv.cq, 32, wc)) > 0)
		for (k = 0; k < n; k++)
			recv_wc(&wc[k]);
	if (n < 0)
		fail_line(&bad_recv, "ibv_poll_cq: %d", n);
	while ((n = ibv_poll_cq(snd.cq, 32, wc)) > 0)
		for (k = 0; k < n; k++)
			send_wc(&wc[k]);
	if (n < 0)
		fail_line(&bad_send, "ibv_poll_cq: %d", n);
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_sge = 1 } };
	long long start, end, last = 0, next_note;
	uint64_t extra = 0;
	bool counts = true, timed_out = false;
	unsigned int i;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "n:q:w:t:s:r:")) != -1) {
		switch (c) {
		case 'n': cfg.messages = strtoull(optarg, NULL, 0); break;
		case 'q': cfg.nqp = strtoul(optarg, NULL, 0); break;
		case 'w': cfg.window = strtoul(optarg, NULL, 0); break;
		case 't': cfg.seconds = strtoul(optarg, NULL, 0); break;
		case 's': cfg.max_size = strtoul(optarg, NULL, 0); break;
		case 'r': cfg.srq_depth = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (argc - optind != 4 || !cfg.nqp || cfg.nqp > MAX_QP ||
	    !cfg.window || cfg.window > MAX_WINDOW ||
	    cfg.max_size < HDR || cfg.max_size > SIZE_MAX_ARG ||
	    !cfg.srq_depth || cfg.srq_depth > SRQ_MAX) {
		fprintf(stderr, "usage: wire_srq [-n MESSAGES] [-q NQP<=%d] [-w WINDOW<=%d] [-t SECONDS] [-s %d<=MAX_SIZE<=%u] [-r SRQ_DEPTH<=%d] SEND_DEV SEND_GID RECV_DEV RECV_GID\n",
			MAX_QP, MAX_WINDOW, HDR, SIZE_MAX_ARG, SRQ_MAX);
		return 2;
	}
	open_side(&snd, argv[optind], atoi(argv[optind + 1]),
		  (size_t)cfg.nqp * cfg.window * cfg.max_size);
	open_side(&rcv, argv[optind + 2], atoi(argv[optind + 3]),
		  (size_t)cfg.srq_depth * cfg.max_size);
	sa.attr.max_wr = cfg.srq_depth;
	srq = ibv_create_srq(rcv.pd, &sa);
	if (!srq)
		die("ibv_create_srq: %s", strerror(errno));
	for (i = 0; i < cfg.srq_depth; i++)
		post_srq(i);
	for (i = 0; i < cfg.nqp; i++) {
		snd.qp[i] = make_qp(&snd, NULL);
		rcv.qp[i] = make_qp(&rcv, srq);
		connect_qp(&snd, snd.qp[i], &rcv, rcv.qp[i]->qp_num,
			   0x1000 * i);
		connect_qp(&rcv, rcv.qp[i], &snd, snd.qp[i]->qp_num,
			   0x1000 * i);
	}
	printf("# %" PRIu64 " messages of 16 to %u bytes from %s to %s: %u RC QPs on one SRQ of %u, %u in flight per QP\n",
	       cfg.messages, cfg.max_size, snd.dev, rcv.dev, cfg.nqp,
	       cfg.srq_depth, cfg.window);

	start = now_ms();
	end = start + cfg.seconds * 1000LL;
	next_note = start + 60000;
	for (i = 0; i < cfg.nqp; i++)
		for (unsigned int k = 0; k < cfg.window &&
		     total_posted < cfg.messages; k++)
			post_send(i);
	while (total_received < cfg.messages || total_sent < cfg.messages) {
		uint64_t before = total_received + total_sent;

		poll_all();
		if (bad_send || bad_recv)
			break;
		if (total_received + total_sent != before)
			last = now_ms();
		if (now_ms() > end) {
			timed_out = true;
			break;
		}
		if (now_ms() > next_note) {
			printf("# %" PRIu64 " sent, %" PRIu64 " received after %lld s\n",
			       total_sent, total_received,
			       (now_ms() - start) / 1000);
			next_note += 60000;
		}
		if (total_received + total_sent == before)
			usleep(50);
	}
	end = now_ms();
	/* Nothing more may arrive. */
	{
		uint64_t r = total_received, s = total_sent;
		long long stop = now_ms() + 1000;

		while (now_ms() < stop && !bad_send && !bad_recv) {
			poll_all();
			usleep(1000);
		}
		extra = total_received - r + total_sent - s;
	}
	for (i = 0; i < cfg.nqp; i++)
		if (q[i].posted != q[i].sent || q[i].sent != q[i].received) {
			printf("# QP %u: posted %" PRIu64 ", send completions %" PRIu64 ", receives %" PRIu64 "\n",
			       i, q[i].posted, q[i].sent, q[i].received);
			counts = false;
		}
	ok(!bad_send, "each send completed once, successfully, in order, with its wr_id");
	ok(!bad_recv, "each receive completed once on a posted SRQ WQE, on its QP, in order, length and bytes checked");
	ok(!timed_out && counts && total_posted == cfg.messages &&
	   total_sent == cfg.messages && total_received == cfg.messages &&
	   !extra,
	   "%" PRIu64 " messages over %u QPs: %" PRIu64 " sent, %" PRIu64 " received, %" PRIu64 " extra completions",
	   total_posted, cfg.nqp, total_sent, total_received, extra);
	printf("# %" PRIu64 " messages in %lld ms (%.0f per second); last completion %lld ms before the end\n",
	       total_received, end - start,
	       total_received * 1000.0 / (end - start + 1),
	       last ? end - last : -1);
	for (i = 0; i < cfg.nqp; i++) {
		ibv_destroy_qp(snd.qp[i]);
		ibv_destroy_qp(rcv.qp[i]);
	}
	ibv_destroy_srq(srq);
	return tap_done();
}
