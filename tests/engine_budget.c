// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The send engine yields its CPU (issue 34, defect 3).  A process allowed
 * 64 MiB of locked memory can post messages of 2 GiB (32 SGEs over one
 * 64 MiB region): an engine that copied or sent each whole, 64 of them a
 * run, held a CPU for minutes, inside the poster's own post_send for a
 * same-device QP.  Each engine run is budgeted now, and a message goes
 * on in the next run from where the last stopped.
 *
 * usage: engine_budget DEV_A GID_A DEV_B GID_B local|uc
 *
 * local (A and B one device, RC):
 *   resume: SEND over 3 SGEs into 2, WRITE, WRITE with immediate and
 *     READ of a few MiB each, every one copied over several runs, at odd
 *     offsets: data, byte counts and the bytes around checked.
 *   hog: as an unprivileged process (RLIMIT_MEMLOCK 160 MiB), 64 SENDs
 *     of 2 GiB, 32 SGEs over A's 64 MiB MR each, into 64 receives of 32
 *     SGEs over B's 64 MiB MR, posted in one ibv_post_send().
 * uc (A and B two devices, the wire between them):
 *   hog: one UC SEND of 2 GiB, two million packets, likewise.
 *
 * A hog case checks that the post returns within POST_MS; that while the
 * engine works for OBSERVE_MS no CPU goes HOLD_MS without running a
 * thread pinned to it (a monitor on another CPU says so at once, should
 * the poster itself never come back); that what B received so far is
 * A's data; then, A's QP moved to ERR, that every WQE completes within
 * WAIT_MS in order, successfully or, from the one being copied on,
 * flushed; that a receive B was being filled ends with Remote Aborted
 * Error (same device) and the rest flush when B's QP goes to ERR.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rc_pair.h"
#include "tap.h"

#define BIG		(64u << 20)	/* each side's region */
#define BIG_SGES	32		/* a message of 2 GiB */
#define BIG_MSG		((uint64_t)BIG * BIG_SGES)
#define HOG_WRS		64
#define DEPTH		(HOG_WRS + 8)
#define CQ_DEPTH	(4 * DEPTH)
#define MEMLOCK		(160u << 20)	/* both regions and the small MRs */
#define NOBODY		65534
#define POST_MS		2000
#define OBSERVE_MS	10000
#define HOLD_MS		4000
#define BEAT_MS		10

static struct ibv_mr *big_a, *big_b;
static uint8_t *buf_a, *buf_b;
static bool uc;

/* One thread pinned to each CPU, waking every BEAT_MS. */
struct beat {
	int cpu;
	pthread_t thread;
	long long last;		/* when it last woke, now_ms() */
	long long max_gap;	/* its longest wait beyond BEAT_MS */
	bool pinned;
	bool told;		/* the monitor said it is held */
	int done;		/* it saw beats_stop */
};

static struct beat *beats;
static int n_beats;
static volatile int beats_stop;
static pthread_t monitor;

static void *beat_fn(void *arg)
{
	struct beat *b = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(b->cpu, &set);
	b->pinned = !sched_setaffinity(0, sizeof(set), &set);
	__atomic_store_n(&b->last, now_ms(), __ATOMIC_RELAXED);
	while (!beats_stop) {
		long long t, gap;

		usleep(BEAT_MS * 1000);
		t = now_ms();
		gap = t - __atomic_load_n(&b->last, __ATOMIC_RELAXED) -
		      BEAT_MS;
		if (gap > b->max_gap)
			b->max_gap = gap;
		__atomic_store_n(&b->last, t, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Say at once when a CPU is held: a poster that never returns from its
 * system call cannot say it itself.
 */
static void *monitor_fn(void *arg)
{
	(void)arg;
	while (!beats_stop) {
		long long t = now_ms();
		int i;

		for (i = 0; i < n_beats; i++) {
			long long held = t - __atomic_load_n(&beats[i].last,
							     __ATOMIC_RELAXED);

			if (held > HOLD_MS && !beats[i].told) {
				beats[i].told = true;
				printf("# CPU %d held: its thread has not run for %lld ms\n",
				       beats[i].cpu, held);
				fflush(stdout);
			}
		}
		usleep(100 * 1000);
	}
	return NULL;
}

static bool beats_start(void)
{
	int i, n = (int)sysconf(_SC_NPROCESSORS_ONLN);

	beats = calloc(n, sizeof(*beats));
	if (!beats)
		return false;
	beats_stop = 0;
	for (i = 0; i < n; i++) {
		beats[i].cpu = i;
		beats[i].last = now_ms();
		if (pthread_create(&beats[i].thread, NULL, beat_fn, &beats[i]))
			break;
		n_beats++;
	}
	return n_beats == n &&
	       !pthread_create(&monitor, NULL, monitor_fn, NULL);
}

/*
 * The longest a CPU went without running its thread, or still goes; -1
 * if one was not pinned.  A thread that cannot run to see the end is
 * left behind, with its memory: joining it would wait as long as its CPU
 * is held.
 */
static long long beats_end(void)
{
	long long worst = 0, end;
	int i;

	beats_stop = 1;
	pthread_join(monitor, NULL);
	end = now_ms() + 4 * HOLD_MS;
	for (i = 0; i < n_beats; i++) {
		struct beat *b = &beats[i];
		long long gap;

		while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) &&
		       now_ms() < end)
			usleep(10 * 1000);
		if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
			pthread_join(b->thread, NULL);
			gap = b->max_gap;
		} else {
			pthread_detach(b->thread);
			gap = now_ms() - __atomic_load_n(&b->last,
							 __ATOMIC_RELAXED);
			if (b->max_gap > gap)
				gap = b->max_gap;
		}
		if (!b->pinned) {
			detail("thread for CPU %d not pinned", b->cpu);
			worst = -1;
		} else if (worst >= 0 && gap > worst) {
			worst = gap;
		}
		detail("CPU %d: longest wait %lld ms", b->cpu, gap);
	}
	n_beats = 0;
	return worst;
}

static struct ibv_qp *make_big_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = {
			.max_send_wr = DEPTH,
			.max_recv_wr = DEPTH,
			.max_send_sge = BIG_SGES,
			.max_recv_sge = BIG_SGES,
		},
		.qp_type = uc ? IBV_QPT_UC : IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		detail("ibv_create_qp on %s: %s", s->dev, strerror(errno));
	return qp;
}

/* @s's @qp through INIT and RTR to RTS, connected to @peer's @dqpn. */
static bool connect_qp(struct ibv_qp *qp, struct side *s,
		       const struct side *peer, uint32_t dqpn,
		       uint32_t rq_psn, uint32_t sq_psn)
{
	struct pair_cfg c = default_cfg();

	return to_init(qp, s, uc ? IBV_ACCESS_REMOTE_WRITE : ACC_REMOTE) &&
	       to_rtr(qp, s, peer, dqpn, rq_psn) &&
	       to_rts(qp, s, &c, sq_psn);
}

static bool to_err(struct ibv_qp *qp, const struct side *s)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return modify(qp, &a, IBV_QP_STATE, s, "ERR");
}

/* A region of @len bytes, registered for everything, CANARY filled. */
static struct ibv_mr *big_mr(struct side *s, uint8_t **buf, size_t len)
{
	struct ibv_mr *mr;
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		detail("mmap %zu bytes: %s", len, strerror(errno));
		return NULL;
	}
	memset(p, CANARY, len);
	mr = ibv_reg_mr(s->pd, p, len, ACC_REMOTE);
	if (!mr) {
		detail("ibv_reg_mr %s %zu bytes: %s", s->dev, len,
		       strerror(errno));
		munmap(p, len);
		return NULL;
	}
	*buf = p;
	return mr;
}

/* The sides' CQs, deep enough for every WQE of both QPs. */
static bool deep_cq(struct side *s)
{
	struct ibv_cq *cq = ibv_create_cq(s->ctx, CQ_DEPTH, NULL, NULL, 0);

	if (!cq) {
		detail("ibv_create_cq %s %d: %s", s->dev, CQ_DEPTH,
		       strerror(errno));
		return false;
	}
	ibv_destroy_cq(s->cq);
	s->cq = cq;
	return true;
}

/*
 * What an unprivileged process may do: RLIMIT_MEMLOCK of 160 MiB, no
 * CAP_IPC_LOCK.  The device is opened already (its node is root's).
 */
static void drop_privileges(void)
{
	struct rlimit rl = { MEMLOCK, MEMLOCK };

	if (geteuid())
		return;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(NOBODY) ||
	    setuid(NOBODY))
		printf("# could not drop root: %s\n", strerror(errno));
}

static struct ibv_sge sge_at(struct ibv_mr *mr, size_t off, uint32_t len)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)mr->addr + off,
		.length = len,
		.lkey = mr->lkey,
	};

	return sg;
}

static bool post_one(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret)
		detail("ibv_post_send: %s", strerror(ret));
	return !ret;
}

/* What one resume case moves: at @soff of A's region to @doff of B's. */
struct move {
	const char *name;
	enum ibv_wr_opcode opcode;
	size_t soff, doff;
	uint32_t len;
};

/* A message of a few MiB, copied over several runs of the engine. */
static void resume_case(struct pair *p, const struct move *m, uint32_t seed)
{
	bool read = m->opcode == IBV_WR_RDMA_READ;
	bool imm = m->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool send = m->opcode == IBV_WR_SEND;
	/* READ moves B's bytes to A: the pattern starts where it is read. */
	uint8_t *src = read ? buf_b + m->doff : buf_a + m->soff;
	uint8_t *dst = read ? buf_a + m->soff : buf_b + m->doff;
	struct ibv_send_wr wr = { .wr_id = seed, .opcode = m->opcode };
	struct ibv_recv_wr rwr = { .wr_id = seed + 1 }, *rbad;
	struct ibv_sge sg[3], rsg[2];
	uint32_t third = m->len / 3;
	uint8_t *want;
	bool good;

	tap_case = m->name;
	clear_details();
	memset(buf_a, CANARY, BIG);
	memset(buf_b, CANARY, BIG);
	want = malloc(m->len);
	if (!want) {
		ok(false, "memory for the expected data");
		return;
	}
	pattern(want, m->len, seed);
	memcpy(src, want, m->len);

	if (send) {
		/* 3 SGEs of unequal length into 2 at other boundaries. */
		sg[0] = sge_at(big_a, m->soff, third + 5);
		sg[1] = sge_at(big_a, m->soff + third + 5, third - 9);
		sg[2] = sge_at(big_a, m->soff + 2 * third - 4,
			       m->len - 2 * third + 4);
		wr.num_sge = 3;
		rsg[0] = sge_at(big_b, m->doff, m->len / 2 + 3);
		rsg[1] = sge_at(big_b, m->doff + m->len / 2 + 3,
				m->len - m->len / 2 - 3 + 4096);
		rwr.sg_list = rsg;
		rwr.num_sge = 2;
	} else {
		sg[0] = sge_at(big_a, m->soff, m->len);
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = (uintptr_t)big_b->addr + m->doff;
		wr.wr.rdma.rkey = big_b->rkey;
		if (imm)
			wr.imm_data = htonl(seed);
	}
	wr.sg_list = sg;
	good = ((!send && !imm) || !ibv_post_recv(p->qb, &rwr, &rbad)) &&
	       post_one(p->qa, &wr) &&
	       expect_wc(&sa, "A's completion", seed,
			 IBV_WC_SUCCESS, read ? IBV_WC_RDMA_READ :
				send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE,
			 -1, p->qa, WAIT_MS);
	ok(good, "%u bytes complete at A", m->len);
	if (send || imm) {
		good = expect_wc(&sb, "B's receive", seed + 1, IBV_WC_SUCCESS,
				 imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
				 m->len, p->qb, WAIT_MS);
		ok(good, "B's receive completes with its byte count");
	}
	ok(same(dst, want, m->len, "data"), "every byte arrived in order");
	ok(all_bytes(dst - 4096, 4096, CANARY, "before") &&
	   all_bytes(dst + m->len, 4096, CANARY, "after"),
	   "nothing written around it");
	free(want);
}

static void resume_cases(void)
{
	static const struct move moves[] = {
		{ "resume SEND", IBV_WR_SEND, 4096 + 3, 8192 + 1,
		  (5u << 20) + 77 },
		{ "resume WRITE", IBV_WR_RDMA_WRITE, 8192 + 7, 4096 + 13,
		  (3u << 20) + 1 },
		{ "resume WRITE with immediate", IBV_WR_RDMA_WRITE_WITH_IMM,
		  4096, 4096 + 5, (2u << 20) + 4095 },
		{ "resume READ", IBV_WR_RDMA_READ, 4096 + 1, 12288 + 2,
		  (4u << 20) + 3 },
	};
	struct pair p = {};
	size_t i;

	tap_case = "resume";
	p.qa = make_big_qp(&sa);
	p.qb = p.qa ? make_big_qp(&sb) : NULL;
	if (!ok(p.qb && connect_qp(p.qa, &sa, &sb, p.qb->qp_num, PSN_B,
				   PSN_A) &&
		connect_qp(p.qb, &sb, &sa, p.qa->qp_num, PSN_A, PSN_B),
		"an RC pair on the device"))
		return;
	for (i = 0; i < ARRAY_SIZE(moves); i++)
		resume_case(&p, &moves[i], 0x100 * (i + 1));
	ibv_destroy_qp(p.qa);
	ibv_destroy_qp(p.qb);
	drain(&sa);
	drain(&sb);
}

/*
 * @n completions of @s for @qp, in order (by wr_id for A's SENDs): some
 * SUCCESS, of a whole 2 GiB message for B's receives; then for B's at
 * most one REM_ABORT_ERR; then WR_FLUSH_ERR.  With @n -1, those on the CQ
 * now.
 */
static bool hog_completions(struct side *s, const struct ibv_qp *qp,
			    int n, bool sends, int *n_ok, int *n_abort)
{
	bool good = true, flushing = false;
	int i;

	*n_ok = 0;
	*n_abort = 0;
	for (i = 0; n < 0 || i < n; i++) {
		struct ibv_wc wc;

		if (n < 0) {
			if (ibv_poll_cq(s->cq, 1, &wc) != 1)
				break;
		} else if (!wait_wc(s, &wc, WAIT_MS, s->name)) {
			return false;
		}
		if (wc.qp_num != qp->qp_num ||
		    (sends && wc.wr_id != (uint64_t)i)) {
			detail_wc("out of order", &wc);
			good = false;
		}
		if (wc.status == IBV_WC_SUCCESS && !flushing && !*n_abort &&
		    (sends || wc.byte_len == BIG_MSG)) {
			(*n_ok)++;
		} else if (wc.status == IBV_WC_REM_ABORT_ERR && !sends &&
			   !flushing && !*n_abort) {
			(*n_abort)++;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			flushing = true;
		} else {
			detail_wc("unexpected", &wc);
			good = false;
		}
	}
	return good;
}

static void hog_case(void)
{
	struct ibv_send_wr wrs[HOG_WRS], *bad;
	struct ibv_recv_wr rwrs[HOG_WRS], *rbad;
	struct ibv_sge sg[BIG_SGES], rsg[BIG_SGES];
	int n = uc ? 1 : HOG_WRS;
	int i, ret, a_ok, a_abort, b_ok, b_abort;
	long long t0, t1, held;
	struct pair p = {};
	bool good;

	tap_case = uc ? "hog UC on the wire" : "hog same device";
	clear_details();
	p.qa = make_big_qp(&sa);
	p.qb = p.qa ? make_big_qp(&sb) : NULL;
	if (!ok(p.qb && connect_qp(p.qa, &sa, &sb, p.qb->qp_num, PSN_B,
				   PSN_A) &&
		connect_qp(p.qb, &sb, &sa, p.qa->qp_num, PSN_A, PSN_B),
		"a pair of %s QPs", uc ? "UC" : "RC"))
		return;
	pattern(buf_a, BIG, 0x5eed);
	memset(buf_b, CANARY, BIG);
	for (i = 0; i < BIG_SGES; i++) {
		sg[i] = sge_at(big_a, 0, BIG);
		rsg[i] = sge_at(big_b, 0, BIG);
	}
	memset(wrs, 0, sizeof(wrs));
	memset(rwrs, 0, sizeof(rwrs));
	for (i = 0; i < n; i++) {
		rwrs[i].wr_id = i;
		rwrs[i].sg_list = rsg;
		rwrs[i].num_sge = BIG_SGES;
		rwrs[i].next = i + 1 < n ? &rwrs[i + 1] : NULL;
		wrs[i].wr_id = i;
		wrs[i].opcode = IBV_WR_SEND;
		wrs[i].send_flags = IBV_SEND_SIGNALED;
		wrs[i].sg_list = sg;
		wrs[i].num_sge = BIG_SGES;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	ret = ibv_post_recv(p.qb, rwrs, &rbad);
	if (!ok(!ret, "%d receives of 2 GiB posted at B", n))
		return;
	if (!ok(beats_start(), "a thread on each CPU"))
		return;

	t0 = now_ms();
	ret = ibv_post_send(p.qa, wrs, &bad);
	t1 = now_ms();
	ok(!ret, "%d SENDs of 2 GiB posted at A: %s", n, strerror(ret));
	ok(t1 - t0 < POST_MS, "the post returned in %lld ms (< %d)", t1 - t0,
	   POST_MS);
	while (now_ms() - t0 < OBSERVE_MS)
		usleep(100 * 1000);
	held = beats_end();
	ok(held >= 0 && held < HOLD_MS,
	   "no CPU held for %d ms while the engine worked: longest %lld ms",
	   HOLD_MS, held);

	/* Whatever B has by now is A's, from its first byte on. */
	for (i = 0; i < (int)BIG && buf_b[i] == buf_a[i]; i++)
		;
	ok(i > 0, "B holds A's data: %d bytes from the first on", i);

	good = to_err(p.qa, &sa) &&
	       hog_completions(&sa, p.qa, n, true, &a_ok, &a_abort);
	ok(good, "A's QP to ERR: all %d SENDs complete in order, %d of them whole",
	   n, a_ok);
	if (uc) {
		/* The rest of a UC message is lost: B drops what it has. */
		good = to_err(p.qb, &sb) &&
		       hog_completions(&sb, p.qb, n, false, &b_ok, &b_abort);
		ok(good && b_ok <= a_ok && !b_abort,
		   "B's QP to ERR: its receive completes, whole or flushed");
	} else {
		/*
		 * A's engine completed the receive it was filling before
		 * it flushed the SEND: B's CQ holds all it will by now.
		 * Only a message that ended just as a run did left none.
		 */
		int rest;

		good = hog_completions(&sb, p.qb, -1, false, &b_ok, &b_abort);
		ok(good && b_ok == a_ok && b_abort <= 1,
		   "B: %d receives whole, the one being filled aborted (%d)",
		   b_ok, b_abort);
		rest = n - b_ok - b_abort;
		good = to_err(p.qb, &sb) &&
		       hog_completions(&sb, p.qb, rest, false, &b_ok,
				       &b_abort);
		ok(good && !b_ok && !b_abort,
		   "B's QP to ERR: the other receives flush");
	}
	ok(cq_empty(&sa, "A") && cq_empty(&sb, "B"), "nothing more completes");
	ibv_destroy_qp(p.qa);
	ibv_destroy_qp(p.qb);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 6 || (strcmp(argv[5], "local") && strcmp(argv[5], "uc"))) {
		fprintf(stderr, "usage: %s DEV_A GID_A DEV_B GID_B local|uc\n",
			argv[0]);
		return 2;
	}
	uc = !strcmp(argv[5], "uc");
	if (!sides_from_args(5, argv, argv[0], "softrvt0 1 softrvt0 1"))
		return 2;
	sa.name = "A";
	sb.name = "B";
	tap_case = "setup";
	if (!ok(side_open(&sa, ACC_REMOTE) && side_open(&sb, ACC_REMOTE) &&
		deep_cq(&sa) && deep_cq(&sb), "both sides open"))
		return tap_done();
	drop_privileges();
	big_a = big_mr(&sa, &buf_a, BIG);
	big_b = big_a ? big_mr(&sb, &buf_b, BIG) : NULL;
	if (!ok(big_b, "64 MiB registered on each side, as nobody with %u MiB of RLIMIT_MEMLOCK",
		MEMLOCK >> 20))
		return tap_done();
	if (!uc)
		resume_cases();
	hog_case();
	ibv_dereg_mr(big_a);
	ibv_dereg_mr(big_b);
	sides_close();
	return tap_done();
}
