// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostile_rings: a process that abuses every page it shares with softrvt
 * while a well-behaved peer keeps sending to it, then dies without
 * cleaning up.
 *
 * Each round forks a victim process.  It opens VDEV and creates QPs of
 * every type (RC, UC and UD with their own receive rings, RC on an SRQ),
 * an SRQ and CQs through libsoftrvt, finds every mapping of the uverbs
 * device that each creation added (/proc/self/maps) and maps each one a
 * second time itself, so that its writes do not depend on the provider's
 * mappings, which resizes replace.  The parent process is the peer: it
 * opens PDEV (the same device, or one across the wire), connects a QP to
 * each of the victim's and checks that one SEND to each arrives intact
 * before anything else happens.  Then:
 *
 *  - each QP state page must be read-only: a write faults (SIGSEGV
 *    caught), mprotect() and a writable mmap() are refused, and the page
 *    keeps the kernel's value;
 *  - defect 3: a QP moved to ERR while a thread keeps its receive ring
 *    full, publishing a WQE behind every one the kernel takes, must stop
 *    flushing within a few seconds, complete at most what was posted when
 *    the flush began, in order, and be destroyable meanwhile;
 *  - the peer floods every QP with SENDs of up to 4 KiB (several packets)
 *    and, on RC and UC, RDMA WRITEs;
 *  - a thread per writable page writes random values and boundary values
 *    (0, size - 1, size, 0x7fffffff, 0xffffffff ...) to the head and tail
 *    of the rings and CQs, random and out-of-range WQEs and completions,
 *    and random words anywhere; two more threads move the head of the RC
 *    receive ring and of the SRQ continuously; meanwhile the victim
 *    resizes the receive CQ and the SRQ, cycles the UC QP through ERR
 *    and RESET, posts and polls through the provider;
 *  - the victim then exits without destroying anything (even rounds),
 *    or is killed with SIGKILL in the middle of it (odd rounds).
 * The peer's RC QPs must end with an error completion, not hang, and its
 * UC and UD QPs keep completing.  The next round's intact SEND shows that
 * the device still works.  Whether the kernel stayed clean (no splat, no
 * leak) is checked by the guest suite from dmesg and kmemleak.
 *
 * The victim reports its checks to the parent over a socket; the parent
 * prints all of them as TAP.
 *
 * usage: hostile_rings VDEV VGID PDEV PGID
 * The scribbling lasts HOSTILE_SECONDS (default 3, 15 with
 * SOFTRVT_FULL=1) in each of HOSTILE_ROUNDS rounds (default 2, 6 with
 * SOFTRVT_FULL=1).  Exits 1 on any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rvt-abi.h>
#include <rdma/softrvt-abi.h>

#include "tap.h"

#define IB_PORT		1
#define WAIT_MS		10000	/* for a completion or a message */
#define FLUSH_LIMIT_MS	5000	/* a flush, or destroying its QP */
#define SETTLE_MS	500	/* a ring's tail still this long: flush over */
#define REAP_MS		30000	/* a dead victim's resources released */
#define PEER_ERR_MS	20000	/* a peer RC QP of a dead victim in error */
#define VBUF		(256 * 1024)	/* victim's MR */
#define PBUF		(64 * 1024)	/* peer's MR */
#define MSG_MAX		4096	/* flood messages: up to 4 packets */
#define UD_MAX		1024	/* the path MTU */
#define GRH_LEN		40
#define BASE_LEN	1000	/* the baseline SEND */
#define RQ_WR		64
#define SRQ_WR		64
#define RECV_SGE	2
#define CQ_ENTRIES	256
/* A flush long enough that the refilling thread runs in the middle of it. */
#define FLUSH_WR	4095
#define FLUSH_CQE	8191
#define WINDOW		8	/* outstanding peer sends per QP */
#define UD_QKEY		0x1a2b3c4d
#define PSN_V		0x0a0a0a
#define PSN_P		0x0b0b0b
#define MAX_REGIONS	32
#define MAX_MAPS	256
#define SLOT_HDR	8	/* head and tail before the slots */
#define CQE_BYTES	sizeof(struct ib_uverbs_wc)

enum { Q_RC, Q_UC, Q_UD, Q_SRQ, NQP };
static const char *const qname[NQP] = { "RC", "UC", "UD", "RC on SRQ" };
static const enum ibv_qp_type qtype[NQP] = {
	IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RC
};

/* Parent and victim talk in messages of one size over a SEQPACKET pair. */
enum { M_INFO, M_OK, M_NOTOK, M_DETAIL, M_STEP };
enum {
	S_READY,	/* victim: baseline receives posted */
	S_SENT,		/* peer: baseline SENDs done */
	S_CHECKED,	/* victim: baseline, state pages, flushes checked */
	S_FLOOD,	/* peer: flooding */
	S_DYING,	/* victim: scribbled; now exits or is killed */
};

struct info {
	union ibv_gid gid;
	uint32_t qpn[NQP];
	uint64_t addr;		/* victim's MR */
	uint32_t rkey;
};

struct msg {
	uint32_t type;
	uint32_t step;
	struct info info;
	char text[480];
};

enum exit_mode { END_EXIT, END_KILL };

/* Randomness: xorshift64*, one state per thread. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd32(uint64_t *s)
{
	return (uint32_t)(rnd(s) >> 32);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static const char *state_name(unsigned int s)
{
	static const char *const n[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"
	};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* Verbs used by both sides */

static bool modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		   char *err, size_t errlen)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret)
		snprintf(err, errlen, "ibv_modify_qp QPN 0x%x to %s: %s",
			 qp->qp_num, state_name(a->qp_state), strerror(ret));
	return !ret;
}

static bool to_init(struct ibv_qp *qp, enum ibv_qp_type type, char *err,
		    size_t errlen)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = IB_PORT,
		.qkey = UD_QKEY,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return modify(qp, &a, mask, err, errlen);
}

/* From RESET to RTS, connected to @dqpn at @dgid unless UD. */
static bool qp_up(struct ibv_qp *qp, enum ibv_qp_type type, int gid_index,
		  const union ibv_gid *dgid, uint32_t dqpn, uint32_t rq_psn,
		  uint32_t sq_psn, char *err, size_t errlen)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 6,		/* 0.12 ms */
		.ah_attr = {
			.is_global = 1,
			.grh = {
				.dgid = *dgid,
				.sgid_index = (uint8_t)gid_index,
				.hop_limit = 64,
			},
			.port_num = IB_PORT,
		},
	};
	int mask = IBV_QP_STATE;

	if (!to_init(qp, type, err, errlen))
		return false;
	if (type != IBV_QPT_UD)
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	if (type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (!modify(qp, &a, mask, err, errlen))
		return false;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;		/* 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;	/* for ever: RNR alone never ends the flood */
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return modify(qp, &a, mask, err, errlen);
}

static struct ibv_context *open_dev(const char *name, char *err,
				    size_t errlen)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list) {
		snprintf(err, errlen, "ibv_get_device_list: %s",
			 strerror(errno));
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n)
		snprintf(err, errlen, "%s not among %d devices", name, n);
	else if (!(ctx = ibv_open_device(list[i])))
		snprintf(err, errlen, "ibv_open_device %s: %s", name,
			 strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

/* Victim: reports to the parent */

static int vsock = -1;

static void vsend(uint32_t type, uint32_t step, const struct info *info,
		  const char *text)
{
	struct msg m = { .type = type, .step = step };

	if (info)
		m.info = *info;
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	/* Without its parent the victim has no one to report to. */
	if (send(vsock, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		_exit(3);
}

static bool __attribute__((format(printf, 2, 3)))
vok(bool cond, const char *fmt, ...)
{
	char text[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	vsend(cond ? M_OK : M_NOTOK, 0, NULL, text);
	return cond;
}

static void __attribute__((format(printf, 1, 2))) vdetail(const char *fmt, ...)
{
	char text[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	vsend(M_DETAIL, 0, NULL, text);
}

static void vwait(uint32_t type, uint32_t step, struct msg *out)
{
	struct msg m;
	ssize_t n;

	n = recv(vsock, &m, sizeof(m), 0);
	if (n != (ssize_t)sizeof(m) || m.type != type ||
	    (type == M_STEP && m.step != step))
		_exit(4);
	if (out)
		*out = m;
}

/* Victim: the pages it shares with the kernel */

struct umap {
	uintptr_t start, end;
	uint64_t off;
	bool writable;
};

/* The mappings of a uverbs device in this process. */
static int uverbs_maps(struct umap *m, int max)
{
	char line[512], perms[8], path[256];
	unsigned long long off;
	unsigned long s, e;
	int n = 0;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %llx %*s %*s %255s", &s, &e,
			   perms, &off, path) < 4 ||
		    strncmp(path, "/dev/infiniband/uverbs", 22))
			continue;
		m[n].start = s;
		m[n].end = e;
		m[n].off = off;
		m[n].writable = perms[1] == 'w';
		n++;
	}
	fclose(f);
	return n;
}

/* A snapshot to compare the mappings with after a verb. */
struct snap {
	struct umap m[MAX_MAPS];
	int n;
};

static void take_snap(struct snap *s)
{
	s->n = uverbs_maps(s->m, MAX_MAPS);
}

/* The mappings present now that @before did not have, at most @max. */
static int new_maps(const struct snap *before, struct umap *out, int max)
{
	struct snap now;
	int i, j, n = 0;

	take_snap(&now);
	for (i = 0; i < now.n; i++) {
		for (j = 0; j < before->n; j++)
			if (now.m[i].start == before->m[j].start &&
			    now.m[i].off == before->m[j].off)
				break;
		if (j == before->n && n < max)
			out[n++] = now.m[i];
	}
	return n;
}

enum rkind { R_CQ, R_RING, R_STATE };

/* Our own mapping of a ring as it is now; replaced when it is resized. */
struct view {
	uint8_t *p;
	size_t len;
	uint32_t slots;
	size_t stride;
};

struct region {
	char name[48];
	enum rkind kind;
	struct view *view;	/* atomic: scribblers load it each burst */
	uint64_t off;
	int stop;		/* atomic */
	unsigned long ops;
	pthread_t thr, mover;
	bool has_thr, has_mover;
	uint64_t rng;
};

struct victim {
	const char *dev;
	int gid_index;
	uint64_t seed;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[NQP];
	struct region *rq[NQP], *st[NQP], *srq_reg, *rcq_reg;
	struct info peer;
	union ibv_gid gid;
	struct region reg[MAX_REGIONS];
	int nreg;
	uint32_t srq_max_wr;
};

static struct victim V;

static struct view *map_view(uint64_t off, size_t len, uint32_t slots,
			     size_t stride, bool writable)
{
	struct view *v = calloc(1, sizeof(*v));
	void *p;

	if (!v)
		return NULL;
	p = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, V.ctx->cmd_fd, (off_t)off);
	if (p == MAP_FAILED) {
		vdetail("mmap of offset 0x%llx, %zu bytes: %s",
			(unsigned long long)off, len, strerror(errno));
		free(v);
		return NULL;
	}
	v->p = p;
	v->len = len;
	v->slots = slots;
	v->stride = stride;
	return v;
}

/* Whether @slots slots of @stride bytes after the header fill @len. */
static bool layout_fits(size_t len, uint32_t slots, size_t stride)
{
	size_t need = SLOT_HDR + (size_t)slots * stride;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return slots > 1 && need <= len && len - need < pg;
}

static struct region *add_region(const char *name, enum rkind kind,
				 const struct umap *m, uint32_t slots,
				 size_t stride)
{
	size_t len = m->end - m->start;
	struct region *r;

	if (V.nreg == MAX_REGIONS)
		return NULL;
	if (kind == R_STATE ? m->writable || len != (size_t)sysconf(_SC_PAGESIZE)
			    : !m->writable || !layout_fits(len, slots, stride)) {
		vdetail("%s: mapping of %zu bytes %s does not fit %u slots of %zu bytes",
			name, len, m->writable ? "rw" : "r-", slots, stride);
		return NULL;
	}
	r = &V.reg[V.nreg];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->kind = kind;
	r->off = m->off;
	r->rng = V.seed ^ ((uint64_t)V.nreg << 40) ^ 0x9e3779b97f4a7c15ull;
	r->view = map_view(m->off, len, slots, stride, kind != R_STATE);
	if (!r->view)
		return NULL;
	V.nreg++;
	return r;
}

/* The one new mapping of the wanted kind since @before. */
static const struct umap *one_new(const struct umap *m, int n, bool writable,
				  const char *what)
{
	const struct umap *found = NULL;
	int i, count = 0;

	for (i = 0; i < n; i++) {
		if (m[i].writable == writable) {
			found = &m[i];
			count++;
		}
	}
	if (count != 1) {
		vdetail("%s: %d new %s mappings, want 1", what, count,
			writable ? "writable" : "read-only");
		return NULL;
	}
	return found;
}

static size_t rwqe_stride(uint32_t max_sge)
{
	return sizeof(struct rvt_rwqe) + max_sge * sizeof(struct rvt_wqe_sge);
}

static struct region *cq_region(const char *name, const struct snap *before,
				struct ibv_cq *cq)
{
	struct umap m[8];
	const struct umap *u;
	int n = new_maps(before, m, 8);

	u = one_new(m, n, true, name);
	return u ? add_region(name, R_CQ, u, (uint32_t)cq->cqe + 1,
			      CQE_BYTES) : NULL;
}

static struct ibv_cq *make_cq(int cqe, const char *name, struct region **r)
{
	struct ibv_cq *cq;
	struct snap s;

	take_snap(&s);
	cq = ibv_create_cq(V.ctx, cqe, NULL, NULL, 0);
	if (!cq) {
		vdetail("ibv_create_cq %s: %s", name, strerror(errno));
		return NULL;
	}
	*r = cq_region(name, &s, cq);
	return *r ? cq : NULL;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, struct ibv_cq *rcq,
			      struct ibv_srq *srq, uint32_t max_recv_wr,
			      const char *name, struct region **rq,
			      struct region **st)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = V.scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = srq ? 0 : max_recv_wr,
			.max_send_sge = 1,
			.max_recv_sge = srq ? 0 : RECV_SGE,
		},
		.qp_type = type,
	};
	char rname[48], sname[48];
	const struct umap *u;
	struct umap m[8];
	struct ibv_qp *qp;
	struct snap s;
	int n;

	take_snap(&s);
	qp = ibv_create_qp(V.pd, &ia);
	if (!qp) {
		vdetail("ibv_create_qp %s: %s", name, strerror(errno));
		return NULL;
	}
	n = new_maps(&s, m, 8);
	snprintf(rname, sizeof(rname), "%s receive ring", name);
	snprintf(sname, sizeof(sname), "%s state page", name);
	if (n != (srq ? 1 : 2)) {
		vdetail("ibv_create_qp %s: %d new mappings, want %d", name, n,
			srq ? 1 : 2);
		return NULL;
	}
	u = one_new(m, n, false, sname);
	*st = u ? add_region(sname, R_STATE, u, 1,
			     sizeof(struct softrvt_qp_state)) : NULL;
	if (!*st)
		return NULL;
	*rq = NULL;
	if (srq)
		return qp;
	u = one_new(m, n, true, rname);
	*rq = u ? add_region(rname, R_RING, u, ia.cap.max_recv_wr + 1,
			     rwqe_stride(ia.cap.max_recv_sge)) : NULL;
	return *rq ? qp : NULL;
}

static struct ibv_srq *make_srq(void)
{
	struct ibv_srq_init_attr ia = {
		.attr = { .max_wr = SRQ_WR, .max_sge = RECV_SGE },
	};
	const struct umap *u;
	struct ibv_srq_attr a;
	struct ibv_srq *srq;
	struct umap m[8];
	struct snap s;
	int n;

	take_snap(&s);
	srq = ibv_create_srq(V.pd, &ia);
	if (!srq) {
		vdetail("ibv_create_srq: %s", strerror(errno));
		return NULL;
	}
	if (ibv_query_srq(srq, &a)) {
		vdetail("ibv_query_srq: %s", strerror(errno));
		return NULL;
	}
	V.srq_max_wr = a.max_wr;
	n = new_maps(&s, m, 8);
	u = one_new(m, n, true, "SRQ ring");
	V.srq_reg = u ? add_region("SRQ ring", R_RING, u, a.max_wr + 1,
				   rwqe_stride(a.max_sge)) : NULL;
	return V.srq_reg ? srq : NULL;
}

static bool victim_open(void)
{
	char err[256] = "";
	void *p;

	V.ctx = open_dev(V.dev, err, sizeof(err));
	if (!V.ctx) {
		vdetail("%s", err);
		return false;
	}
	if (ibv_query_gid(V.ctx, IB_PORT, V.gid_index, &V.gid)) {
		vdetail("ibv_query_gid %d: %s", V.gid_index, strerror(errno));
		return false;
	}
	V.pd = ibv_alloc_pd(V.ctx);
	if (!V.pd || posix_memalign(&p, 4096, VBUF)) {
		vdetail("ibv_alloc_pd or the buffer: %s", strerror(errno));
		return false;
	}
	V.buf = p;
	memset(V.buf, 0, VBUF);
	V.mr = ibv_reg_mr(V.pd, V.buf, VBUF, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE);
	if (!V.mr) {
		vdetail("ibv_reg_mr: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool victim_create(void)
{
	struct region *scq_reg;
	int i;

	V.scq = make_cq(16, "send CQ", &scq_reg);
	if (!V.scq)
		return false;
	V.rcq = make_cq(CQ_ENTRIES, "receive CQ", &V.rcq_reg);
	if (!V.rcq)
		return false;
	V.srq = make_srq();
	if (!V.srq)
		return false;
	for (i = 0; i < NQP; i++) {
		V.qp[i] = make_qp(qtype[i], V.rcq, i == Q_SRQ ? V.srq : NULL,
				  RQ_WR, qname[i], &V.rq[i], &V.st[i]);
		if (!V.qp[i])
			return false;
	}
	return true;
}

static struct ibv_sge sge_at(size_t off, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)V.buf + off,
		.length = len,
		.lkey = V.mr->lkey,
	};

	return s;
}

static int post_recv_at(int q, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = sge_at(off, len);
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (q == Q_SRQ)
		return ibv_post_srq_recv(V.srq, &wr, &bad);
	return ibv_post_recv(V.qp[q], &wr, &bad);
}

/* Where the baseline SEND to QP @q lands, and where its data starts. */
static size_t base_off(int q)
{
	return (size_t)q * 8192;
}

static uint32_t base_seed(int q)
{
	return 0x5eed0000u + (uint32_t)q;
}

static bool victim_connect(void)
{
	char err[256] = "";
	int i;

	for (i = 0; i < NQP; i++) {
		if (!qp_up(V.qp[i], qtype[i], V.gid_index, &V.peer.gid,
			   V.peer.qpn[i], PSN_P, PSN_V, err, sizeof(err))) {
			vdetail("%s: %s", qname[i], err);
			return false;
		}
		if (post_recv_at(i, 100 + i, base_off(i), 4096 + GRH_LEN)) {
			vdetail("%s: post_recv: %s", qname[i], strerror(errno));
			return false;
		}
	}
	return true;
}

/* The baseline SEND to each QP arrived whole, where it was expected. */
static bool victim_baseline(void)
{
	static uint8_t want[BASE_LEN];
	long long end = now_ms() + WAIT_MS;
	bool seen[NQP] = { false }, good = true;
	int got = 0;

	while (got < NQP && now_ms() < end) {
		struct ibv_wc wc;
		int q, n = ibv_poll_cq(V.rcq, 1, &wc);
		uint32_t len;
		size_t data;

		if (n <= 0) {
			if (n < 0)
				break;
			sleep_ms(1);
			continue;
		}
		q = (int)wc.wr_id - 100;
		if (q < 0 || q >= NQP || seen[q] || wc.status != IBV_WC_SUCCESS ||
		    wc.qp_num != V.qp[q]->qp_num || wc.opcode != IBV_WC_RECV) {
			vdetail("unexpected completion: wr_id %llu status %s qp_num 0x%x opcode %d",
				(unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status), wc.qp_num,
				wc.opcode);
			good = false;
			continue;
		}
		seen[q] = true;
		got++;
		len = BASE_LEN + (qtype[q] == IBV_QPT_UD ? GRH_LEN : 0);
		data = base_off(q) + (qtype[q] == IBV_QPT_UD ? GRH_LEN : 0);
		pattern(want, BASE_LEN, base_seed(q));
		if (wc.byte_len != len) {
			vdetail("%s: byte_len %u, want %u", qname[q],
				wc.byte_len, len);
			good = false;
		} else if (memcmp(V.buf + data, want, BASE_LEN)) {
			vdetail("%s: the data differs from what was sent",
				qname[q]);
			good = false;
		}
	}
	if (got < NQP)
		vdetail("%d of %d baseline SENDs arrived in %d ms", got, NQP,
			WAIT_MS);
	return good && got == NQP;
}

/* Victim: the QP state pages */

static sigjmp_buf segv_env;
static volatile sig_atomic_t segv_code;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	segv_code = si->si_code;
	siglongjmp(segv_env, 1);
}

/* Whether writing @p faults with an access error. */
static bool write_faults(volatile uint32_t *p, uint32_t v)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	struct sigaction old;
	bool faulted = false;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	segv_code = 0;
	if (!sigsetjmp(segv_env, 1))
		*p = v;
	else
		faulted = segv_code == SEGV_ACCERR;
	sigaction(SIGSEGV, &old, NULL);
	return faulted;
}

static void check_state_pages(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int i;

	for (i = 0; i < NQP; i++) {
		struct view *v = V.st[i]->view;
		volatile uint32_t *state = (volatile uint32_t *)v->p;
		uint32_t before = *state;
		bool faults = write_faults(state, IBV_QPS_RESET);
		void *w;
		int mret, merr;

		errno = 0;
		mret = mprotect(v->p, pg, PROT_READ | PROT_WRITE);
		merr = errno;
		w = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED,
			 V.ctx->cmd_fd, (off_t)V.st[i]->off);
		if (w != MAP_FAILED)
			munmap(w, pg);
		vok(before == IBV_QPS_RTS && faults && *state == before &&
		    mret && merr == EACCES && w == MAP_FAILED,
		    "%s state page says RTS (%u), a write faults (%s), keeps it, mprotect() is refused (%s), a writable mmap() too (%s)",
		    qname[i], before, faults ? "yes" : "no", strerror(merr),
		    w == MAP_FAILED ? "refused" : "MAPPED");
	}
}

/* Victim: the flush of a ring whose head keeps moving (defect 3) */

struct keep_full {
	struct view *v;
	uint64_t seq;		/* wr_id of the next WQE published */
	int stop;		/* atomic */
	long long deadline;
};

/*
 * Publish a WQE behind every one the kernel takes, so that the ring is
 * always full, until told to stop or the deadline: an unbounded flush
 * would follow it for as long as it runs.
 */
static void *keep_full(void *arg)
{
	struct keep_full *k = arg;
	uint32_t *head = (uint32_t *)k->v->p, *tail = head + 1;
	uint32_t slots = k->v->slots, h = load32(head);
	unsigned long spins = 0;

	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE) &&
	       (++spins % 1024 || now_ms() < k->deadline)) {
		uint32_t t = load32(tail);

		if (t >= slots)
			continue;
		while ((h + 1) % slots != t) {
			struct rvt_rwqe *w = (struct rvt_rwqe *)
				(k->v->p + SLOT_HDR + (size_t)h * k->v->stride);

			w->wr_id = k->seq++;
			w->num_sge = 0;
			h = (h + 1) % slots;
			store32(head, h);
		}
		/* No yield: every WQE the kernel takes is replaced at once. */
	}
	return NULL;
}

static void flush_case(enum ibv_qp_type type, const char *name)
{
	struct region *rq, *st, *cq_reg;
	struct keep_full k = { 0 };
	char cqname[48];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char err[256] = "";
	long long t0, last_change, settled_at = 0, t;
	uint32_t *tail, last, slots;
	uint64_t expect = 0;
	bool started = false, in_order = true, others = false;
	pthread_t thr;
	int n = 0, ret;

	snprintf(cqname, sizeof(cqname), "%s flush CQ", name);
	cq = make_cq(FLUSH_CQE, cqname, &cq_reg);
	if (!vok(cq != NULL, "flush: a CQ for the %s QP", name))
		return;
	qp = make_qp(type, cq, NULL, FLUSH_WR, name, &rq, &st);
	ret = qp && to_init(qp, type, err, sizeof(err));
	if (err[0])
		vdetail("%s", err);
	if (!vok(ret, "flush: %s QP with a %u-slot ring in INIT", name,
		 rq ? rq->view->slots : 0))
		return;
	k.v = rq->view;
	slots = k.v->slots;
	tail = (uint32_t *)k.v->p + 1;
	k.deadline = now_ms() + 4 * FLUSH_LIMIT_MS;
	if (pthread_create(&thr, NULL, keep_full, &k)) {
		vok(false, "flush: start the thread that keeps the ring full");
		return;
	}
	/* Full before the flush: it must take exactly what is there. */
	t = now_ms() + WAIT_MS;
	while (now_ms() < t &&
	       load32((uint32_t *)k.v->p) != slots - 1)
		sleep_ms(1);

	last = load32(tail);
	t0 = now_ms();
	ret = ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR },
			    IBV_QP_STATE);
	last_change = t0;
	while ((t = now_ms()) - t0 < FLUSH_LIMIT_MS) {
		uint32_t cur = load32(tail);

		if (cur != last) {
			last = cur;
			last_change = t;
			started = true;
		} else if (started && t - last_change >= SETTLE_MS) {
			settled_at = last_change;
			break;
		}
		usleep(200);
	}
	if (ret)
		vdetail("ibv_modify_qp to ERR: %s", strerror(ret));
	else if (!started)
		vdetail("the kernel took no WQE from the ring in %d ms",
			FLUSH_LIMIT_MS);
	else if (!settled_at)
		vdetail("the kernel was still taking WQEs after %d ms: %llu published so far",
			FLUSH_LIMIT_MS, (unsigned long long)k.seq);
	vok(!ret && settled_at,
	    "flush: %s QP moved to ERR while a thread refills its ring stops flushing after %lld ms (limit %d ms)",
	    name, settled_at ? settled_at - t0 : t - t0, FLUSH_LIMIT_MS);

	/*
	 * The completions: FLUSH_ERR, in ring order, one per WQE taken;
	 * polled until there are as many as WQEs taken, however long the
	 * engine takes on a busy machine, then a little longer for any
	 * beyond them.
	 */
	t = now_ms() + WAIT_MS;
	while (now_ms() < t) {
		struct ibv_wc wc[32];
		int i, got;

		if ((uint32_t)n >= last && t > now_ms() + 200)
			t = now_ms() + 200;
		got = ibv_poll_cq(cq, 32, wc);

		if (got <= 0) {
			sleep_ms(5);
			continue;
		}
		for (i = 0; i < got; i++) {
			if (wc[i].qp_num != qp->qp_num) {
				if (!others)
					vdetail("a completion of QPN 0x%x",
						wc[i].qp_num);
				others = true;
				continue;
			}
			if (in_order && (wc[i].status != IBV_WC_WR_FLUSH_ERR ||
					 wc[i].wr_id != expect)) {
				vdetail("completion %d: wr_id %llu status %s, want %llu %s",
					n, (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status),
					(unsigned long long)expect,
					ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
				in_order = false;
			}
			expect++;
			n++;
		}
	}
	vok(n >= 1 && n <= (int)slots - 1 && in_order && !others &&
	    (uint32_t)n == last,
	    "flush: %d FLUSH_ERR completions, at most the %u WQEs posted when it began, in order, one per WQE taken (tail %u)",
	    n, slots - 1, last);

	t = now_ms();
	ret = ibv_destroy_qp(qp);
	t = now_ms() - t;
	vok(!ret && t <= FLUSH_LIMIT_MS,
	    "flush: destroying the %s QP while its ring is still refilled takes %lld ms (%s)",
	    name, t, strerror(ret));
	__atomic_store_n(&k.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
}

/* Victim: scribbling */

static const uint32_t *bounds(uint32_t slots, int *n)
{
	static __thread uint32_t b[10];

	b[0] = 0;
	b[1] = 1;
	b[2] = slots - 2;
	b[3] = slots - 1;
	b[4] = slots;
	b[5] = slots + 1;
	b[6] = 0x7fffffff;
	b[7] = 0x80000000;
	b[8] = 0xfffffffe;
	b[9] = 0xffffffff;
	*n = 10;
	return b;
}

static uint32_t some_index(uint64_t *rng, uint32_t slots)
{
	int n;
	const uint32_t *b = bounds(slots, &n);

	return rnd(rng) & 1 ? b[rnd32(rng) % n] : rnd32(rng);
}

/* A WQE whose SGEs point into the victim's MR, or just outside it. */
static void fill_wqe(uint64_t *rng, struct rvt_rwqe *w, size_t stride,
		     bool valid)
{
	uint32_t max_sge = (uint32_t)((stride - sizeof(*w)) /
				      sizeof(struct rvt_wqe_sge));
	static const uint32_t lens[] = { 0, 1, 4096, VBUF, VBUF + 1,
					 0x80000000, 0xffffffff };
	uint32_t i, n;

	w->wr_id = rnd(rng);
	if (valid) {
		n = 1 + rnd32(rng) % max_sge;
	} else {
		static const uint32_t nsge[] = { 0, 1, 2, 33, 255 };

		n = rnd(rng) & 1 ? nsge[rnd32(rng) % 5] : rnd32(rng) & 0xff;
	}
	w->num_sge = (uint8_t)n;
	for (i = 0; i < max_sge; i++) {
		struct rvt_wqe_sge *s = &w->sg_list[i];
		uint32_t off = rnd32(rng) % VBUF;

		if (valid) {
			s->addr = (uintptr_t)V.buf + off;
			s->length = 1 + rnd32(rng) % (VBUF - off);
			s->lkey = V.mr->lkey;
			continue;
		}
		switch (rnd32(rng) % 6) {
		case 0:
			s->addr = (uintptr_t)V.buf + VBUF - 1;
			break;
		case 1:
			s->addr = (uintptr_t)V.buf + VBUF;
			break;
		case 2:
			s->addr = ~0ull - (rnd32(rng) % 64);
			break;
		case 3:
			s->addr = 0;
			break;
		default:
			s->addr = rnd(rng) & 1 ? rnd(rng) :
				  (uintptr_t)V.buf + off;
		}
		s->length = rnd(rng) & 1 ? lens[rnd32(rng) % 7] : rnd32(rng);
		switch (rnd32(rng) % 4) {
		case 0:
			s->lkey = V.mr->lkey;
			break;
		case 1:
			s->lkey = V.mr->lkey ^ (1u << (rnd32(rng) % 32));
			break;
		case 2:
			s->lkey = rnd(rng) & 1 ? 0 : 0xffffffff;
			break;
		default:
			s->lkey = rnd32(rng);
		}
	}
}

static uint8_t *slot_of(const struct view *v, uint32_t i)
{
	return v->p + SLOT_HDR + (size_t)(i % v->slots) * v->stride;
}

static void random_bytes(uint64_t *rng, uint8_t *p, size_t n)
{
	while (n) {
		uint64_t x = rnd(rng);
		size_t k = n < 8 ? n : 8;

		memcpy(p, &x, k);
		p += k;
		n -= k;
	}
}

static void scribble_ring(const struct view *v, uint64_t *rng)
{
	uint32_t *head = (uint32_t *)v->p, *tail = head + 1;
	uint32_t h = load32(head), t = load32(tail);

	switch (rnd32(rng) % 10) {
	case 0:
		store32(head, rnd32(rng));
		break;
	case 1:
		store32(head, some_index(rng, v->slots));
		break;
	case 2:
		store32(tail, some_index(rng, v->slots));
		break;
	case 3:
		random_bytes(rng, slot_of(v, rnd32(rng)), v->stride);
		break;
	case 4:
	case 5:
		/* Publish a WQE, usable or not, as a producer would. */
		fill_wqe(rng, (struct rvt_rwqe *)slot_of(v, h), v->stride,
			 rnd32(rng) % 3 == 0);
		store32(head, (h % v->slots + 1) % v->slots);
		break;
	case 6:
		store32(head, t);	/* empty, if t is sane */
		break;
	case 7:
		store32(head, (t % v->slots + v->slots - 1) % v->slots);
		break;
	case 8: {
		size_t off = (rnd(rng) % (v->len / 8)) * 8;
		uint64_t x = rnd(rng);

		memcpy(v->p + off, &x, 8);
		break;
	}
	default:
		store32(head, h + 1);	/* may step past the ring */
	}
}

static void scribble_cq(const struct view *v, uint64_t *rng)
{
	uint32_t *head = (uint32_t *)v->p, *tail = head + 1;

	switch (rnd32(rng) % 7) {
	case 0:
		store32(tail, rnd32(rng));
		break;
	case 1:
		store32(tail, some_index(rng, v->slots));
		break;
	case 2:
		store32(head, some_index(rng, v->slots));
		break;
	case 3:
		random_bytes(rng, slot_of(v, rnd32(rng)), CQE_BYTES);
		break;
	case 4:
		store32(tail, load32(head));	/* consume all, if sane */
		break;
	case 5:
		store32(tail, (load32(head) + 1) % v->slots);	/* full */
		break;
	default: {
		size_t off = (rnd(rng) % (v->len / 8)) * 8;
		uint64_t x = rnd(rng);

		memcpy(v->p + off, &x, 8);
	}
	}
}

static void *scribbler(void *arg)
{
	struct region *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		const struct view *v = __atomic_load_n(&r->view,
						       __ATOMIC_ACQUIRE);
		int i;

		for (i = 0; i < 64; i++) {
			if (r->kind == R_CQ)
				scribble_cq(v, &r->rng);
			else
				scribble_ring(v, &r->rng);
		}
		__atomic_add_fetch(&r->ops, 64, __ATOMIC_RELAXED);
		usleep(100);
	}
	return NULL;
}

/* Move the head on and on, publishing whatever WQE the slot holds. */
static void *mover(void *arg)
{
	struct region *r = arg;
	uint64_t rng = r->rng ^ 0x1234;
	unsigned long n = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		const struct view *v = __atomic_load_n(&r->view,
						       __ATOMIC_ACQUIRE);
		uint32_t *head = (uint32_t *)v->p;
		uint32_t h = load32(head) % v->slots;

		if (rnd32(&rng) % 4 == 0)
			fill_wqe(&rng, (struct rvt_rwqe *)slot_of(v, h),
				 v->stride, rnd32(&rng) % 2);
		store32(head, (h + 1) % v->slots);
		if (++n % 256 == 0)
			sched_yield();
	}
	return NULL;
}

static int start_scribblers(void)
{
	int i, started = 0;

	for (i = 0; i < V.nreg; i++) {
		struct region *r = &V.reg[i];

		if (r->kind == R_STATE)
			continue;
		r->has_thr = !pthread_create(&r->thr, NULL, scribbler, r);
		started += r->has_thr;
		if (r == V.rq[Q_RC] || r == V.srq_reg) {
			r->has_mover = !pthread_create(&r->mover, NULL, mover,
						       r);
			started += r->has_mover;
		}
	}
	return started;
}

static void stop_scribblers(void)
{
	int i;

	for (i = 0; i < V.nreg; i++)
		__atomic_store_n(&V.reg[i].stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < V.nreg; i++) {
		if (V.reg[i].has_thr)
			pthread_join(V.reg[i].thr, NULL);
		if (V.reg[i].has_mover)
			pthread_join(V.reg[i].mover, NULL);
	}
}

/* Point a region's scribblers at the ring a resize created. */
static bool retarget(struct region *r, const struct snap *before,
		     uint32_t slots, size_t stride)
{
	struct umap m[8];
	const struct umap *u;
	struct view *v;
	int n = new_maps(before, m, 8);

	u = one_new(m, n, true, r->name);
	if (!u || !layout_fits(u->end - u->start, slots, stride))
		return false;
	v = map_view(u->off, u->end - u->start, slots, stride, true);
	if (!v)
		return false;
	r->off = u->off;
	/* The old view stays mapped: a scribbler may still be writing it. */
	__atomic_store_n(&r->view, v, __ATOMIC_RELEASE);
	return true;
}

struct calls {
	unsigned long n, failed, resized, lost, revived;
	long long worst_ms;
	const char *worst;
};

static void timed(struct calls *c, const char *what, long long t0, int ret)
{
	long long ms = now_ms() - t0;

	c->n++;
	if (ret)
		c->failed++;
	if (ms > c->worst_ms) {
		c->worst_ms = ms;
		c->worst = what;
	}
}

/*
 * What a process may ask of the kernel while its pages are garbage: one
 * call per turn, round robin, until @end (or for ever with 0).
 */
static void kernel_calls(struct calls *c, long long end)
{
	unsigned long turn;
	char err[256];

	for (turn = 0; !end || now_ms() < end; turn++) {
		struct ibv_qp_attr a = { 0 };
		struct ibv_qp_init_attr ia;
		struct ibv_srq_attr sa = { 0 };
		struct ibv_wc wc[16];
		long long t0 = now_ms();
		struct snap s;
		int i, ret = 0;

		switch (turn % 8) {
		case 0:
			take_snap(&s);
			ret = ibv_resize_cq(V.rcq, turn % 16 ? 128 : 512);
			if (!ret) {
				c->resized++;
				if (!retarget(V.rcq_reg, &s,
					      (uint32_t)V.rcq->cqe + 1,
					      CQE_BYTES))
					c->lost++;
			}
			timed(c, "ibv_resize_cq", t0, ret);
			break;
		case 1:
			take_snap(&s);
			sa.max_wr = turn % 16 == 1 ? 32 : 128;
			ret = ibv_modify_srq(V.srq, &sa, IBV_SRQ_MAX_WR);
			if (!ret) {
				c->resized++;
				if (ibv_query_srq(V.srq, &sa) ||
				    !retarget(V.srq_reg, &s, sa.max_wr + 1,
					      rwqe_stride(sa.max_sge)))
					c->lost++;
			}
			timed(c, "ibv_modify_srq max_wr", t0, ret);
			break;
		case 2:
			sa.srq_limit = 4;
			ret = ibv_modify_srq(V.srq, &sa, IBV_SRQ_LIMIT);
			timed(c, "ibv_modify_srq limit", t0, ret);
			break;
		case 3:
			for (i = 0; i < NQP; i++) {
				ret = ibv_query_qp(V.qp[i], &a, IBV_QP_STATE,
						   &ia);
				timed(c, "ibv_query_qp", t0, ret);
			}
			break;
		case 4:
			for (i = 0; i < NQP; i++) {
				ret = post_recv_at(i, 1000 + turn,
						   (turn * 4096) % VBUF, 4096);
				timed(c, "ibv_post_recv", t0, ret);
			}
			break;
		case 5:
			ret = ibv_poll_cq(V.rcq, 16, wc) < 0;
			timed(c, "ibv_poll_cq", t0, ret);
			ret = ibv_req_notify_cq(V.rcq, turn & 1);
			timed(c, "ibv_req_notify_cq", t0, ret);
			break;
		case 6:
			/* UC: through ERR and RESET, and up again. */
			a.qp_state = IBV_QPS_ERR;
			ret = ibv_modify_qp(V.qp[Q_UC], &a, IBV_QP_STATE);
			a.qp_state = IBV_QPS_RESET;
			ret = ret ?: ibv_modify_qp(V.qp[Q_UC], &a,
						   IBV_QP_STATE);
			ret = ret ?: !qp_up(V.qp[Q_UC], IBV_QPT_UC,
					    V.gid_index, &V.peer.gid,
					    V.peer.qpn[Q_UC], PSN_P, PSN_V,
					    err, sizeof(err));
			timed(c, "cycling the UC QP", t0, ret);
			break;
		default:
			/*
			 * An RC QP our pages broke: up again from RESET, as
			 * the peer does with its end, so that the flood goes
			 * on.  Both restart at the same PSNs.
			 */
			for (i = 0; i < NQP; i++) {
				if (qtype[i] != IBV_QPT_RC ||
				    load32((uint32_t *)V.st[i]->view->p) !=
				    IBV_QPS_ERR)
					continue;
				a.qp_state = IBV_QPS_RESET;
				ret = ibv_modify_qp(V.qp[i], &a, IBV_QP_STATE);
				ret = ret ?: !qp_up(V.qp[i], qtype[i],
						    V.gid_index, &V.peer.gid,
						    V.peer.qpn[i], PSN_P, PSN_V,
						    err, sizeof(err));
				c->revived += !ret;
				timed(c, "reviving an RC QP", t0, ret);
			}
		}
		sleep_ms(2);
	}
}

/* The state pages still hold what query_qp says, scribbling or not. */
static bool state_pages_agree(void)
{
	bool good = true;
	int i, tries;

	for (i = 0; i < NQP; i++) {
		for (tries = 0; tries < 5; tries++) {
			struct ibv_qp_init_attr ia;
			struct ibv_qp_attr a;
			uint32_t s = load32((uint32_t *)V.st[i]->view->p);

			if (!ibv_query_qp(V.qp[i], &a, IBV_QP_STATE, &ia) &&
			    a.qp_state == s)
				break;
		}
		if (tries == 5) {
			vdetail("%s state page: %s, query_qp disagrees",
				qname[i],
				state_name(load32((uint32_t *)V.st[i]->view->p)));
			good = false;
		}
	}
	return good;
}

static int victim_main(int sock, const char *dev, int gid_index,
		       enum exit_mode mode, unsigned int seconds,
		       uint64_t seed)
{
	struct info me = { 0 };
	struct calls c = { 0 };
	struct msg m;
	int i, threads;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	vsock = sock;
	V.dev = dev;
	V.gid_index = gid_index;
	V.seed = seed | 1;

	i = victim_open() && victim_create();
	if (!vok(i, "victim: %s opened; RC, UC, UD QPs with rings, RC on an SRQ, CQs: %d shared pages found and mapped again",
		 dev, V.nreg))
		return 1;
	me.gid = V.gid;
	for (i = 0; i < NQP; i++)
		me.qpn[i] = V.qp[i]->qp_num;
	me.addr = (uintptr_t)V.buf;
	me.rkey = V.mr->rkey;
	vsend(M_INFO, 0, &me, NULL);
	vwait(M_INFO, 0, &m);
	V.peer = m.info;
	if (!vok(victim_connect(), "victim: QPs connected to the peer's"))
		return 1;
	vsend(M_STEP, S_READY, NULL, NULL);
	vwait(M_STEP, S_SENT, NULL);
	vok(victim_baseline(),
	    "victim: one SEND from the peer to each QP arrives intact");
	check_state_pages();

	/* Plenty of usable WQEs, so that the flood lands somewhere. */
	for (i = 0; i < NQP; i++) {
		uint32_t k, n = i == Q_SRQ ? V.srq_max_wr : RQ_WR;

		for (k = 0; k < n - 1; k++)
			if (post_recv_at(i, 200 + k, (k * 4096) % VBUF,
					 4096 + GRH_LEN))
				break;
	}
	/*
	 * Before the flood: the thread refilling the ring must be able to
	 * run while the kernel flushes, which on two CPUs it may not if the
	 * peer keeps one busy.
	 */
	flush_case(IBV_QPT_RC, "RC");
	flush_case(IBV_QPT_UD, "UD");
	vsend(M_STEP, S_CHECKED, NULL, NULL);
	vwait(M_STEP, S_FLOOD, NULL);

	threads = start_scribblers();
	vdetail("scribbling on %d pages with %d threads for %u s, seed 0x%llx",
		V.nreg, threads, seconds, (unsigned long long)V.seed);
	kernel_calls(&c, now_ms() + seconds * 1000LL);
	{
		unsigned long ops = 0;

		for (i = 0; i < V.nreg; i++)
			ops += __atomic_load_n(&V.reg[i].ops,
					       __ATOMIC_RELAXED);
		vok(threads > 0 && ops > 0 && c.worst_ms < FLUSH_LIMIT_MS,
		    "victim: %lu scribbles; %lu kernel calls during them (%lu failed, %lu resizes, %lu rings not found after one, %lu RC QPs revived), the slowest %s took %lld ms",
		    ops, c.n, c.failed, c.resized, c.lost, c.revived,
		    c.worst ? c.worst : "-", c.worst_ms);
	}
	vok(state_pages_agree(),
	    "victim: every state page still agrees with query_qp");
	vsend(M_STEP, S_DYING, NULL, NULL);
	if (mode == END_EXIT)
		exit(0);	/* with the scribblers running, nothing freed */
	/* The parent kills us; until then, more of the same. */
	kernel_calls(&c, now_ms() + 300000);
	stop_scribblers();
	return 5;
}

/* Parent: the peer */

struct pq {
	struct ibv_qp *qp;
	enum ibv_qp_type type;
	int outstanding;
	int dead;		/* atomic */
	int err_status;		/* atomic: of its first error completion */
	unsigned long done;	/* atomic: successful completions */
	unsigned long errs;
	unsigned long revived;
	long long revive_at;	/* the next attempt, after an error */
};

struct peer {
	const char *dev;
	int gid_index;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_ah *ah;
	struct pq q[NQP];
	struct info v;		/* the victim's */
	int stop;		/* atomic */
	int revive;		/* atomic: RC QPs come back after an error */
	int poll_failed;
	uint64_t rng;
	pthread_t thr;
};

static struct peer P;

static bool peer_open(void)
{
	char err[256] = "";
	void *p;

	P.ctx = open_dev(P.dev, err, sizeof(err));
	if (!P.ctx) {
		detail("%s", err);
		return false;
	}
	if (ibv_query_gid(P.ctx, IB_PORT, P.gid_index, &P.gid)) {
		detail("ibv_query_gid %d: %s", P.gid_index, strerror(errno));
		return false;
	}
	P.pd = ibv_alloc_pd(P.ctx);
	P.cq = P.pd ? ibv_create_cq(P.ctx, 4 * NQP * WINDOW, NULL, NULL, 0) :
		      NULL;
	if (!P.cq || posix_memalign(&p, 4096, PBUF)) {
		detail("PD, CQ or buffer: %s", strerror(errno));
		return false;
	}
	P.buf = p;
	pattern(P.buf, PBUF, 77);
	P.mr = ibv_reg_mr(P.pd, P.buf, PBUF, IBV_ACCESS_LOCAL_WRITE);
	if (!P.mr) {
		detail("ibv_reg_mr: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool peer_qps(void)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = {
			.dgid = P.v.gid,
			.sgid_index = (uint8_t)P.gid_index,
			.hop_limit = 64,
		},
		.port_num = IB_PORT,
	};
	int i;

	for (i = 0; i < NQP; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = P.cq,
			.recv_cq = P.cq,
			.cap = {
				.max_send_wr = 2 * WINDOW,
				.max_recv_wr = 1,
				.max_send_sge = 1,
				.max_recv_sge = 1,
			},
			.qp_type = qtype[i],
		};

		memset(&P.q[i], 0, sizeof(P.q[i]));
		P.q[i].type = qtype[i];
		P.q[i].qp = ibv_create_qp(P.pd, &ia);
		if (!P.q[i].qp) {
			detail("peer ibv_create_qp %s: %s", qname[i],
			       strerror(errno));
			return false;
		}
	}
	P.ah = ibv_create_ah(P.pd, &aa);
	if (!P.ah) {
		detail("peer ibv_create_ah: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool peer_connect(void)
{
	char err[256] = "";
	int i;

	for (i = 0; i < NQP; i++) {
		if (!qp_up(P.q[i].qp, qtype[i], P.gid_index, &P.v.gid,
			   P.v.qpn[i], PSN_V, PSN_P, err, sizeof(err))) {
			detail("peer %s: %s", qname[i], err);
			return false;
		}
	}
	return true;
}

static int peer_post(struct pq *q, uint64_t wr_id, size_t off, uint32_t len,
		     bool write)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)P.buf + off,
		.length = len,
		.lkey = P.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &s,
		.num_sge = 1,
		.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int i = (int)(q - P.q);

	if (q->type == IBV_QPT_UD) {
		wr.wr.ud.ah = P.ah;
		wr.wr.ud.remote_qpn = P.v.qpn[i];
		wr.wr.ud.remote_qkey = UD_QKEY;
	} else if (write) {
		wr.wr.rdma.remote_addr = P.v.addr +
					 (rnd32(&P.rng) % (VBUF - len));
		wr.wr.rdma.rkey = P.v.rkey;
	}
	return ibv_post_send(q->qp, &wr, &bad);
}

/* One SEND to each victim QP, with the data the victim checks. */
static bool peer_baseline(void)
{
	long long end = now_ms() + WAIT_MS;
	int i, done = 0;
	bool good = true;

	for (i = 0; i < NQP; i++) {
		pattern(P.buf + i * 2048, BASE_LEN, base_seed(i));
		if (peer_post(&P.q[i], i, i * 2048, BASE_LEN, false)) {
			detail("peer post_send %s: %s", qname[i],
			       strerror(errno));
			return false;
		}
	}
	while (done < NQP && now_ms() < end) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(P.cq, 1, &wc);

		if (n <= 0) {
			sleep_ms(1);
			continue;
		}
		done++;
		if (wc.status != IBV_WC_SUCCESS) {
			detail_wc("peer baseline SEND", &wc);
			good = false;
		}
	}
	if (done < NQP)
		detail("%d of %d baseline SENDs completed at the peer", done,
		       NQP);
	pattern(P.buf, PBUF, 77);
	return good && done == NQP;
}

static struct pq *pq_of(uint32_t qpn)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (P.q[i].qp->qp_num == qpn)
			return &P.q[i];
	return NULL;
}

/*
 * An RC QP in error, its WQEs flushed: from RESET to RTS again at the
 * PSNs it started with, which the victim's end restarts at too.
 */
static void revive(struct pq *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int i = (int)(q - P.q);
	char err[256];

	if (q->type != IBV_QPT_RC || q->outstanding ||
	    !__atomic_load_n(&P.revive, __ATOMIC_ACQUIRE) ||
	    now_ms() < q->revive_at)
		return;
	q->revive_at = now_ms() + 100;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE) ||
	    !qp_up(q->qp, q->type, P.gid_index, &P.v.gid, P.v.qpn[i], PSN_V,
		   PSN_P, err, sizeof(err)))
		return;
	q->revived++;
	__atomic_store_n(&q->dead, 0, __ATOMIC_RELEASE);
}

/* Keep WINDOW messages outstanding on every QP that is not in error. */
static void *flood(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&P.stop, __ATOMIC_ACQUIRE)) {
		struct ibv_wc wc[32];
		int i, n;

		for (i = 0; i < NQP; i++) {
			struct pq *q = &P.q[i];
			uint32_t max = q->type == IBV_QPT_UD ? UD_MAX : MSG_MAX;

			if (__atomic_load_n(&q->dead, __ATOMIC_RELAXED))
				revive(q);

			while (!__atomic_load_n(&q->dead, __ATOMIC_RELAXED) &&
			       q->outstanding < WINDOW) {
				uint32_t len = 1 + rnd32(&P.rng) % max;

				if (peer_post(q, i, rnd32(&P.rng) % (PBUF - len),
					      len, q->type != IBV_QPT_UD &&
					      rnd32(&P.rng) % 2))
					break;
				q->outstanding++;
			}
		}
		n = ibv_poll_cq(P.cq, 32, wc);
		if (n < 0) {
			P.poll_failed = 1;
			break;
		}
		for (i = 0; i < n; i++) {
			struct pq *q = pq_of(wc[i].qp_num);

			if (!q || wc[i].opcode & IBV_WC_RECV)
				continue;
			q->outstanding--;
			if (wc[i].status == IBV_WC_SUCCESS) {
				__atomic_add_fetch(&q->done, 1,
						   __ATOMIC_RELAXED);
				continue;
			}
			q->errs++;
			if (!__atomic_load_n(&q->err_status, __ATOMIC_RELAXED))
				__atomic_store_n(&q->err_status,
						 (int)wc[i].status + 1000,
						 __ATOMIC_RELAXED);
			__atomic_store_n(&q->dead, 1, __ATOMIC_RELEASE);
		}
		if (!n)
			usleep(200);
	}
	return NULL;
}

static void peer_down(void)
{
	int i, bad = 0;

	if (P.ah && ibv_destroy_ah(P.ah))
		bad++;
	P.ah = NULL;
	for (i = 0; i < NQP; i++) {
		if (P.q[i].qp && ibv_destroy_qp(P.q[i].qp)) {
			detail("peer ibv_destroy_qp %s: %s", qname[i],
			       strerror(errno));
			bad++;
		}
		P.q[i].qp = NULL;
	}
	/* What the flood left in the CQ. */
	for (;;) {
		struct ibv_wc wc[32];

		if (ibv_poll_cq(P.cq, 32, wc) <= 0)
			break;
	}
	ok(!bad, "peer: QPs and AH destroyed");
}

/* Parent: talking to the victim */

static int psock = -1;

static void psend(uint32_t type, uint32_t step, const struct info *info)
{
	struct msg m = { .type = type, .step = step };

	if (info)
		m.info = *info;
	if (send(psock, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		detail("send to the victim: %s", strerror(errno));
}

/*
 * Receive until the victim sends @type (and @step), printing its checks
 * on the way.  False on a timeout or if the victim is gone.
 */
static bool pump(uint32_t type, uint32_t step, struct msg *out, int ms)
{
	long long end = now_ms() + ms;
	struct msg m;

	for (;;) {
		struct pollfd pfd = { .fd = psock, .events = POLLIN };
		long long left = end - now_ms();
		ssize_t n;
		int r;

		if (left <= 0) {
			detail("nothing from the victim for %d ms", ms);
			return false;
		}
		r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno != EINTR)
			return false;
		if (r <= 0)
			continue;
		n = recv(psock, &m, sizeof(m), 0);
		if (n == 0) {
			detail("the victim is gone");
			return false;
		}
		if (n != (ssize_t)sizeof(m)) {
			detail("a message of %zd bytes from the victim", n);
			return false;
		}
		m.text[sizeof(m.text) - 1] = '\0';
		switch (m.type) {
		case M_DETAIL:
			detail("%s", m.text);
			break;
		case M_OK:
		case M_NOTOK:
			ok(m.type == M_OK, "%s", m.text);
			break;
		default:
			if (m.type == type &&
			    (type != M_STEP || m.step == step)) {
				if (out)
					*out = m;
				return true;
			}
			detail("message %u/%u from the victim, want %u/%u",
			       m.type, m.step, type, step);
			return false;
		}
	}
}

/* Wait up to @ms for @pid; its status, or -1 if it is still there. */
static int reap(pid_t pid, int ms, long long *took)
{
	long long t0 = now_ms();
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			*took = now_ms() - t0;
			return status;
		}
		if (r < 0 || now_ms() - t0 > ms)
			return -1;
		sleep_ms(5);
	}
}

/* After the victim is gone: peer RC QPs fail, UC and UD keep going. */
static void peer_after(void)
{
	long long t0 = now_ms(), end = t0 + PEER_ERR_MS;
	unsigned long uc0, ud0;
	bool rc_err = false;
	int i;

	while (now_ms() < end) {
		rc_err = __atomic_load_n(&P.q[Q_RC].dead, __ATOMIC_ACQUIRE) &&
			 __atomic_load_n(&P.q[Q_SRQ].dead, __ATOMIC_ACQUIRE);
		if (rc_err)
			break;
		sleep_ms(10);
	}
	for (i = 0; i < NQP; i++) {
		int st = __atomic_load_n(&P.q[i].err_status, __ATOMIC_RELAXED);

		printf("# peer %s: %lu sends completed, %lu with errors, first %s; revived %lu times\n",
		       qname[i], __atomic_load_n(&P.q[i].done, __ATOMIC_RELAXED),
		       P.q[i].errs, st ? ibv_wc_status_str(st - 1000) : "-",
		       P.q[i].revived);
	}
	if (!rc_err)
		detail("RC %s, RC on SRQ %s after %d ms",
		       P.q[Q_RC].dead ? "in error" : "still sending",
		       P.q[Q_SRQ].dead ? "in error" : "still sending",
		       PEER_ERR_MS);
	ok(rc_err, "peer: both RC QPs end with an error completion, no hang (%lld ms after the victim)",
	   now_ms() - t0);

	uc0 = __atomic_load_n(&P.q[Q_UC].done, __ATOMIC_RELAXED);
	ud0 = __atomic_load_n(&P.q[Q_UD].done, __ATOMIC_RELAXED);
	end = now_ms() + WAIT_MS;
	while (now_ms() < end &&
	       (__atomic_load_n(&P.q[Q_UC].done, __ATOMIC_RELAXED) == uc0 ||
		__atomic_load_n(&P.q[Q_UD].done, __ATOMIC_RELAXED) == ud0))
		sleep_ms(10);
	ok(__atomic_load_n(&P.q[Q_UC].done, __ATOMIC_RELAXED) > uc0 &&
	   __atomic_load_n(&P.q[Q_UD].done, __ATOMIC_RELAXED) > ud0 &&
	   !P.poll_failed,
	   "peer: UC and UD sends to the dead victim keep completing");
}

static void round_run(int round, enum exit_mode mode, unsigned int seconds,
		      uint64_t seed, const char *vdev, int vgid)
{
	char name[64];
	bool flooding = false;
	long long took = 0;
	struct msg m;
	pid_t pid;
	int sv[2], status;

	snprintf(name, sizeof(name), "round %d (%s)", round,
		 mode == END_EXIT ? "exit" : "SIGKILL");
	tap_case = name;
	printf("# %s: seed 0x%llx\n", name, (unsigned long long)seed);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) {
		ok(false, "socketpair: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(victim_main(sv[1], vdev, vgid, mode, seconds, seed));
	}
	close(sv[1]);
	psock = sv[0];
	if (pid < 0) {
		ok(false, "fork: %s", strerror(errno));
		close(psock);
		return;
	}

	P.rng = seed ^ 0xfeedull;
	if (!pump(M_INFO, 0, &m, 4 * WAIT_MS))
		goto kill;
	P.v = m.info;
	if (!ok(peer_qps(), "peer: %s QPs of each type and an AH", P.dev))
		goto kill;
	{
		struct info me = { .gid = P.gid };
		int i;

		for (i = 0; i < NQP; i++)
			me.qpn[i] = P.q[i].qp->qp_num;
		psend(M_INFO, 0, &me);
	}
	if (!ok(peer_connect(), "peer: QPs connected to the victim's") ||
	    !pump(M_STEP, S_READY, NULL, 4 * WAIT_MS))
		goto kill;
	ok(peer_baseline(), "peer: one SEND to each victim QP completes");
	psend(M_STEP, S_SENT, NULL);
	if (!pump(M_STEP, S_CHECKED, NULL, 4 * WAIT_MS))
		goto kill;
	__atomic_store_n(&P.stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&P.revive, 1, __ATOMIC_RELEASE);
	flooding = !pthread_create(&P.thr, NULL, flood, NULL);
	if (!ok(flooding, "peer: flooding every victim QP"))
		goto kill;
	psend(M_STEP, S_FLOOD, NULL);
	if (!pump(M_STEP, S_DYING, NULL, (int)seconds * 1000 + 12 * WAIT_MS))
		goto kill;
	/* From now on an RC QP in error stays so: the victim is going. */
	__atomic_store_n(&P.revive, 0, __ATOMIC_RELEASE);
	if (mode == END_EXIT) {
		status = reap(pid, REAP_MS, &took);
		ok(status != -1 && WIFEXITED(status) && !WEXITSTATUS(status),
		   "victim exits 0 without cleaning up, scribblers running; gone after %lld ms",
		   took);
	} else {
		sleep_ms(rnd32(&P.rng) % 300);
		kill(pid, SIGKILL);
		status = reap(pid, REAP_MS, &took);
		ok(status != -1 && WIFSIGNALED(status) &&
		   WTERMSIG(status) == SIGKILL,
		   "victim killed with SIGKILL while scribbling; gone after %lld ms",
		   took);
	}
	/* Whatever it said before it went. */
	pump(M_STEP, ~0u, NULL, 100);
	clear_details();
	if (status == -1) {
		ok(false, "victim still there %d ms after its end", REAP_MS);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	peer_after();
	goto down;

kill:
	ok(false, "the round ran to its end");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
down:
	if (flooding) {
		__atomic_store_n(&P.stop, 1, __ATOMIC_RELEASE);
		pthread_join(P.thr, NULL);
	}
	peer_down();
	close(psock);
	psock = -1;
	tap_case = NULL;
}

static unsigned int env_uint(const char *name, unsigned int dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 10);
	return *end || !v || v > 3600 ? dflt : (unsigned int)v;
}

int main(int argc, char **argv)
{
	bool full = getenv("SOFTRVT_FULL") &&
		    !strcmp(getenv("SOFTRVT_FULL"), "1");
	unsigned int seconds, rounds, r;
	uint64_t seed;
	int vgid;

	if (argc != 5 || !parse_index(argv[2], &vgid) ||
	    !parse_index(argv[4], &P.gid_index)) {
		fprintf(stderr, "usage: %s VDEV VGID PDEV PGID\n",
			argc > 0 ? argv[0] : "hostile_rings");
		return 2;
	}
	P.dev = argv[3];
	seconds = env_uint("HOSTILE_SECONDS", full ? 15 : 3);
	rounds = env_uint("HOSTILE_ROUNDS", full ? 6 : 2);
	seed = env_uint("HOSTILE_SEED", 0) ?: (uint64_t)time(NULL) * 2654435761u;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# victim %s GID %d, peer %s GID %d; %u rounds of %u s, seed 0x%llx\n",
	       argv[1], vgid, P.dev, P.gid_index, rounds, seconds,
	       (unsigned long long)seed);
	/* The victims are forks: keep the peer's MR out of them. */
	if (!ok(!ibv_fork_init(), "ibv_fork_init") ||
	    !ok(peer_open(), "peer: %s opened with a PD, a CQ and an MR",
		P.dev))
		return tap_done();
	for (r = 0; r < rounds; r++)
		round_run((int)r, r % 2 ? END_KILL : END_EXIT, seconds,
			  seed + r * 0x9e3779b97f4a7c15ull, argv[1], vgid);
	ok(!ibv_dereg_mr(P.mr) && !ibv_destroy_cq(P.cq) &&
	   !ibv_dealloc_pd(P.pd) && !ibv_close_device(P.ctx),
	   "peer: closed");
	return tap_done();
}
