// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_ops: softrvt's data path through libibverbs and libsoftrvt.
 *
 * Every case builds its own PD, CQs and QPs on one device, connects the
 * QPs to each other (same-device loopback), runs its operations and checks
 * the bytes moved and the completion fields the IB spec defines for them,
 * then destroys everything it made, so that a leak shows in kmemleak.
 * Every wait is bounded: a missing completion or event fails after
 * WAIT_MS instead of hanging, and the next case still runs.
 *
 * usage: verbs_ops [IBDEV [GID_INDEX]]   prints TAP, exits 1 on any failure
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tap.h"

#define WAIT_MS		5000	/* for anything that must happen */
#define QUIET_MS	300	/* for anything that must not */
#define QKEY		0x11111111
#define PSN		0x1234
#define GRH_BYTES	40
#define CANARY		0xee
#define MAX_OBJ		4
#define MAX_BUF		8
#define ACC_ALL		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static union ibv_gid gid;
static int gid_index = 1;
static enum ibv_mtu path_mtu = IBV_MTU_1024;
static size_t page_size;

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

/* Completions */

/* Poll @cq for one completion for up to @ms. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms,
		   const char *what)
{
	long long end = now_ms() + ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 1;
		if (n < 0) {
			detail("%s: ibv_poll_cq returned %d", what, n);
			return 0;
		}
		if (now_ms() > end) {
			detail("%s: no completion within %d ms", what, ms);
			return 0;
		}
		usleep(200);
	}
}

/* Nothing arrives on @cq for @ms. */
static int cq_quiet(struct ibv_cq *cq, int ms, const char *what)
{
	long long end = now_ms() + ms;
	struct ibv_wc wc;
	int n, good = 1;

	do {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) {
			detail("%s: ibv_poll_cq returned %d", what, n);
			return 0;
		}
		if (n > 0) {
			detail_wc(what, &wc);
			good = 0;
		}
		usleep(500);
	} while (now_ms() <= end);
	return good;
}

/*
 * @wc is as expected.  With an error status only wr_id, status and qp_num
 * are defined; otherwise opcode and byte_len too, unless given as -1.
 */
static int wc_is(const struct ibv_wc *wc, const char *what, uint64_t wr_id,
		 enum ibv_wc_status status, int opcode, long long byte_len,
		 const struct ibv_qp *qp)
{
	int good = wc->wr_id == wr_id && wc->status == status &&
		   (!qp || wc->qp_num == qp->qp_num);

	if (status == IBV_WC_SUCCESS) {
		if (opcode >= 0 && (int)wc->opcode != opcode)
			good = 0;
		if (byte_len >= 0 && wc->byte_len != (uint32_t)byte_len)
			good = 0;
	}
	if (!good) {
		detail_wc(what, wc);
		detail("%s: want wr_id 0x%llx status %s opcode %d byte_len %lld qp_num 0x%x",
		       what, (unsigned long long)wr_id,
		       ibv_wc_status_str(status), opcode, byte_len,
		       qp ? qp->qp_num : 0);
	}
	return good;
}

/* Wait for the next completion of @cq and check it; a copy in @out. */
static int expect_wc(struct ibv_cq *cq, const char *what, uint64_t wr_id,
		     enum ibv_wc_status status, int opcode, long long byte_len,
		     const struct ibv_qp *qp, struct ibv_wc *out)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	if (!wait_wc(cq, &wc, WAIT_MS, what)) {
		if (out)
			*out = wc;
		return 0;
	}
	if (out)
		*out = wc;
	return wc_is(&wc, what, wr_id, status, opcode, byte_len, qp);
}

/*
 * Wait for an async event of @type on @elem (a QP, SRQ or CQ, or NULL for
 * any).  Every event read is acknowledged at once, or destroying its
 * object would wait for ever.  @what NULL: a timeout is not worth a detail.
 */
static int wait_async(enum ibv_event_type type, const void *elem, int ms,
		      const char *what)
{
	long long end = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		long long left = end - now_ms();
		struct ibv_async_event ev;
		const void *got;
		int n;

		if (left < 0)
			left = 0;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR) {
			detail("%s: poll on the async fd: %s", what ? what : "",
			       strerror(errno));
			return 0;
		}
		if (n > 0 && !ibv_get_async_event(ctx, &ev)) {
			switch (ev.event_type) {
			case IBV_EVENT_SRQ_ERR:
			case IBV_EVENT_SRQ_LIMIT_REACHED:
				got = ev.element.srq;
				break;
			case IBV_EVENT_CQ_ERR:
				got = ev.element.cq;
				break;
			case IBV_EVENT_PORT_ACTIVE:
			case IBV_EVENT_PORT_ERR:
			case IBV_EVENT_LID_CHANGE:
			case IBV_EVENT_PKEY_CHANGE:
			case IBV_EVENT_SM_CHANGE:
			case IBV_EVENT_CLIENT_REREGISTER:
			case IBV_EVENT_GID_CHANGE:
			case IBV_EVENT_DEVICE_FATAL:
				got = NULL;
				break;
			default:
				got = ev.element.qp;
				break;
			}
			ibv_ack_async_event(&ev);
			if (ev.event_type == type && (!elem || got == elem))
				return 1;
			detail("%s: meanwhile async event %s (%d) on %p",
			       what ? what : "waiting",
			       ibv_event_type_str(ev.event_type),
			       ev.event_type, got);
			continue;
		}
		if (!left) {
			if (what)
				detail("%s: no %s within %d ms", what,
				       ibv_event_type_str(type), ms);
			return 0;
		}
	}
}

/* Objects of one case */

struct buf {
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

struct tc {
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_cq *cq[MAX_OBJ];
	int ncq;
	struct ibv_qp *qp[MAX_OBJ];
	int nqp;
	struct buf buf[MAX_BUF];
	int nbuf;
	/* The usual pair: a requests, b responds; each has one CQ. */
	struct ibv_qp *a, *b;
	struct ibv_cq *ca, *cb;
};

static int tc_begin(struct tc *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	tap_case = name;
	clear_details();
	t->pd = ibv_alloc_pd(ctx);
	if (!t->pd)
		detail("ibv_alloc_pd: %s", strerror(errno));
	return !!t->pd;
}

/* Destroy everything, children first; a failure is a failed check. */
static void tc_end(struct tc *t)
{
	int good = 1, i, ret;

	clear_details();
	ret = t->ah ? ibv_destroy_ah(t->ah) : 0;
	if (ret) {
		detail("ibv_destroy_ah: %s", strerror(ret));
		good = 0;
	}
	for (i = t->nqp - 1; i >= 0; i--) {
		ret = ibv_destroy_qp(t->qp[i]);
		if (ret) {
			detail("ibv_destroy_qp %d: %s", i, strerror(ret));
			good = 0;
		}
	}
	ret = t->srq ? ibv_destroy_srq(t->srq) : 0;
	if (ret) {
		detail("ibv_destroy_srq: %s", strerror(ret));
		good = 0;
	}
	for (i = t->ncq - 1; i >= 0; i--) {
		ret = ibv_destroy_cq(t->cq[i]);
		if (ret) {
			detail("ibv_destroy_cq %d: %s", i, strerror(ret));
			good = 0;
		}
	}
	ret = t->chan ? ibv_destroy_comp_channel(t->chan) : 0;
	if (ret) {
		detail("ibv_destroy_comp_channel: %s", strerror(ret));
		good = 0;
	}
	for (i = 0; i < t->nbuf; i++) {
		ret = t->buf[i].mr ? ibv_dereg_mr(t->buf[i].mr) : 0;
		if (ret) {
			detail("ibv_dereg_mr %d: %s", i, strerror(ret));
			good = 0;
		}
		free(t->buf[i].p);
	}
	ret = t->pd ? ibv_dealloc_pd(t->pd) : 0;
	if (ret) {
		detail("ibv_dealloc_pd: %s", strerror(ret));
		good = 0;
	}
	if (!good)
		ok(0, "destroy every object");
	tap_case = NULL;
	clear_details();
}

static void tc_setup_failed(struct tc *t)
{
	ok(0, "setup");
	tc_end(t);
}

#define SETUP(t, cond) do {			\
	if (!(cond)) {				\
		tc_setup_failed(t);		\
		return;				\
	}					\
} while (0)

/* A page-aligned buffer full of CANARY, registered with @access. */
static struct buf *tc_buf(struct tc *t, size_t len, int access)
{
	struct buf *b;
	void *p;

	if (t->nbuf == MAX_BUF)
		abort();
	if (posix_memalign(&p, page_size, len)) {
		detail("posix_memalign %zu bytes failed", len);
		return NULL;
	}
	memset(p, CANARY, len);
	b = &t->buf[t->nbuf++];
	b->p = p;
	b->len = len;
	b->mr = ibv_reg_mr(t->pd, p, len, access);
	if (!b->mr) {
		detail("ibv_reg_mr %zu bytes access 0x%x: %s", len, access,
		       strerror(errno));
		return NULL;
	}
	return b;
}

static struct ibv_sge sge(const struct buf *b, size_t off, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)(b->p + off),
		.length = len,
		.lkey = b->mr->lkey,
	};

	return s;
}

static struct ibv_cq *tc_cq(struct tc *t, struct ibv_comp_channel *chan)
{
	struct ibv_cq *cq;

	if (t->ncq == MAX_OBJ)
		abort();
	cq = ibv_create_cq(ctx, 64, NULL, chan, 0);
	if (!cq)
		detail("ibv_create_cq: %s", strerror(errno));
	else
		t->cq[t->ncq++] = cq;
	return cq;
}

struct qp_opts {
	enum ibv_qp_type type;
	int sig_all;
	uint32_t max_inline;
	uint32_t max_send_sge;		/* 0: 4 */
	struct ibv_srq *srq;
};

static struct ibv_qp *tc_qp(struct tc *t, struct ibv_cq *cq,
			    const struct qp_opts *o)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = o->srq,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = o->srq ? 0 : 16,
			.max_send_sge = o->max_send_sge ? o->max_send_sge : 4,
			.max_recv_sge = o->srq ? 0 : 4,
			.max_inline_data = o->max_inline,
		},
		.qp_type = o->type,
		.sq_sig_all = o->sig_all,
	};
	struct ibv_qp *qp;

	if (t->nqp == MAX_OBJ)
		abort();
	qp = ibv_create_qp(t->pd, &ia);
	if (!qp)
		detail("ibv_create_qp type %d: %s", o->type, strerror(errno));
	else
		t->qp[t->nqp++] = qp;
	return qp;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		  const char *to)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret)
		detail("ibv_modify_qp QPN 0x%x to %s (mask 0x%x): %s (%d)",
		       qp->qp_num, to, mask, strerror(ret), ret);
	return !ret;
}

static int qp_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return modify(qp, &a, mask, "INIT");
}

static int qp_rtr(struct ibv_qp *qp, uint32_t dest_qpn, uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE;

	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = path_mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = PSN;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	}
	if (qp->qp_type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return modify(qp, &a, mask, "RTR");
}

static int qp_rts(struct ibv_qp *qp, uint8_t rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = PSN,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = rnr_retry;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return modify(qp, &a, mask, "RTS");
}

static int qp_up(struct ibv_qp *qp, uint32_t dest_qpn, int access,
		 uint8_t min_rnr_timer, uint8_t rnr_retry)
{
	return qp_init(qp, access) && qp_rtr(qp, dest_qpn, min_rnr_timer) &&
	       qp_rts(qp, rnr_retry);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = ibv_query_qp(qp, &a, IBV_QP_STATE, &init);
	if (ret) {
		detail("ibv_query_qp: %s", strerror(ret));
		return (enum ibv_qp_state)-1;
	}
	return a.qp_state;
}

struct pair_opts {
	enum ibv_qp_type type;
	int access;			/* QP access flags of both */
	uint8_t min_rnr_timer;		/* of both */
	uint8_t rnr_retry;		/* of both */
	int a_sig_all;
	uint32_t a_max_inline;
	uint32_t a_max_send_sge;
	struct ibv_srq *b_srq;
	struct ibv_comp_channel *b_chan;
};

static struct pair_opts rc_opts(void)
{
	struct pair_opts o = {
		.type = IBV_QPT_RC,
		.access = ACC_ALL,
		.min_rnr_timer = 12,	/* 0.64 ms */
		.rnr_retry = 3,		/* a missing receive fails, not hangs */
		.a_sig_all = 1,
	};

	return o;
}

/* Two QPs of one type, each with its own CQ, connected to each other. */
static int tc_pair(struct tc *t, const struct pair_opts *o)
{
	struct qp_opts qa = {
		.type = o->type,
		.sig_all = o->a_sig_all,
		.max_inline = o->a_max_inline,
		.max_send_sge = o->a_max_send_sge,
	};
	struct qp_opts qb = {
		.type = o->type,
		.sig_all = 1,
		.srq = o->b_srq,
	};

	t->ca = tc_cq(t, NULL);
	t->cb = t->ca ? tc_cq(t, o->b_chan) : NULL;
	if (!t->cb)
		return 0;
	t->a = tc_qp(t, t->ca, &qa);
	t->b = t->a ? tc_qp(t, t->cb, &qb) : NULL;
	if (!t->b)
		return 0;
	return qp_up(t->a, t->b->qp_num, o->access, o->min_rnr_timer,
		     o->rnr_retry) &&
	       qp_up(t->b, t->a->qp_num, o->access, o->min_rnr_timer,
		     o->rnr_retry);
}

/* Posting */

static int post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sg,
		     int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = sg,
		.num_sge = n,
	}, *bad = NULL;
	int ret = ibv_post_recv(qp, &wr, &bad);

	if (ret)
		detail("ibv_post_recv QPN 0x%x wr_id 0x%llx: %s (%d)",
		       qp->qp_num, (unsigned long long)wr_id, strerror(ret),
		       ret);
	return !ret;
}

static int post_srq_recv(struct ibv_srq *srq, uint64_t wr_id,
			 struct ibv_sge *sg, int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = sg,
		.num_sge = n,
	}, *bad = NULL;
	int ret = ibv_post_srq_recv(srq, &wr, &bad);

	if (ret)
		detail("ibv_post_srq_recv wr_id 0x%llx: %s (%d)",
		       (unsigned long long)wr_id, strerror(ret), ret);
	return !ret;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret)
		detail("ibv_post_send QPN 0x%x wr_id 0x%llx: %s (%d)",
		       qp->qp_num, (unsigned long long)wr->wr_id,
		       strerror(ret), ret);
	return !ret;
}

/* A signaled WR of @opcode over @n SGEs. */
static struct ibv_send_wr send_wr(uint64_t wr_id, enum ibv_wr_opcode opcode,
				  struct ibv_sge *sg, int n)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sg,
		.num_sge = n,
		.opcode = opcode,
		.send_flags = IBV_SEND_SIGNALED,
	};

	return wr;
}

static struct ibv_send_wr rdma_wr(uint64_t wr_id, enum ibv_wr_opcode opcode,
				  struct ibv_sge *sg, int n,
				  const struct buf *remote, size_t off,
				  uint32_t rkey)
{
	struct ibv_send_wr wr = send_wr(wr_id, opcode, sg, n);

	wr.wr.rdma.remote_addr = (uintptr_t)(remote->p + off);
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* A SEND of @len pattern bytes from @src at @off, to a posted receive. */
static int send_msg(struct tc *t, const struct buf *src, size_t off,
		    uint32_t len, uint64_t wr_id)
{
	struct ibv_sge s = sge(src, off, len);
	struct ibv_send_wr wr = send_wr(wr_id, IBV_WR_SEND, &s, 1);

	return post_send(t->a, &wr);
}

/* Cases */

/* 1: three SGEs gathered at the requester, scattered into two. */
static void test_rc_send_sg(void)
{
	static uint8_t want[8001];
	struct pair_opts o = rc_opts();
	struct buf *s1 = NULL, *s2 = NULL, *r1 = NULL, *r2 = NULL;
	struct ibv_sge ssg[3], rsg[2];
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct tc t;
	int posted;

	memset(&wc, 0, sizeof(wc));
	SETUP(&t, tc_begin(&t, "rc send 3 SGEs into 2") && tc_pair(&t, &o) &&
	      (s1 = tc_buf(&t, 16384, 0)) &&
	      (s2 = tc_buf(&t, 8192, IBV_ACCESS_LOCAL_WRITE)) &&
	      (r1 = tc_buf(&t, 16384, IBV_ACCESS_LOCAL_WRITE)) &&
	      (r2 = tc_buf(&t, 8192, IBV_ACCESS_LOCAL_WRITE)));

	pattern(s1->p, s1->len, 1);
	pattern(s2->p, s2->len, 2);
	/* Pieces across page boundaries, from two MRs, one of one byte. */
	ssg[0] = sge(s1, 100, 5000);
	ssg[1] = sge(s2, 7, 3000);
	ssg[2] = sge(s1, 6000, 1);
	memcpy(want, s1->p + 100, 5000);
	memcpy(want + 5000, s2->p + 7, 3000);
	memcpy(want + 8000, s1->p + 6000, 1);
	/* Room for 8099 bytes: the first SGE takes 4099, the second 3902. */
	rsg[0] = sge(r1, 3, 4099);
	rsg[1] = sge(r2, 4090, 4000);

	wr = send_wr(0xa1, IBV_WR_SEND, ssg, 3);
	posted = post_recv(t.b, 0xb1, rsg, 2) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa1, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "requester completes IBV_WC_SEND with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xb1, IBV_WC_SUCCESS,
			       IBV_WC_RECV, 8001, t.b, &wc) &&
	   !(wc.wc_flags & IBV_WC_WITH_IMM),
	   "responder completes IBV_WC_RECV, byte_len 8001, no immediate");
	ok(same(r1->p + 3, want, 4099, "first receive SGE") &&
	   same(r2->p + 4090, want + 4099, 3902, "second receive SGE"),
	   "8001 bytes gathered from 3 SGEs and scattered into 2");
	ok(all_bytes(r1->p, 3, CANARY, "before the first SGE") &&
	   all_bytes(r1->p + 4102, r1->len - 4102, CANARY,
		     "after the first SGE") &&
	   all_bytes(r2->p, 4090, CANARY, "before the second SGE") &&
	   all_bytes(r2->p + 8090, r2->len - 8090, CANARY,
		     "after the second SGE"),
	   "no byte written outside the receive SGEs");
	ok(cq_quiet(t.ca, 50, "requester CQ") &&
	   cq_quiet(t.cb, 50, "responder CQ"),
	   "one completion on each side");
	tc_end(&t);
}

/* 2 */
static void test_rc_send_imm(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t imm = htonl(0x12345678);
	struct tc t;
	int posted;

	memset(&wc, 0, sizeof(wc));
	SETUP(&t, tc_begin(&t, "rc send with immediate") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 3);
	ss = sge(s, 0, 64);
	rs = sge(r, 0, 4096);
	wr = send_wr(0xa2, IBV_WR_SEND_WITH_IMM, &ss, 1);
	wr.imm_data = imm;
	posted = post_recv(t.b, 0xb2, &rs, 1) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa2, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "requester completes with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xb2, IBV_WC_SUCCESS,
			       IBV_WC_RECV, 64, t.b, &wc),
	   "responder completes IBV_WC_RECV, byte_len 64");
	if (!(wc.wc_flags & IBV_WC_WITH_IMM) || wc.imm_data != imm)
		detail_wc("responder", &wc);
	ok((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == imm,
	   "IBV_WC_WITH_IMM set, imm_data 0x12345678 in network order");
	ok(same(r->p, s->p, 64, "payload"), "payload delivered");
	tc_end(&t);
}

/* 3 */
static void test_rc_write(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL, *r = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct tc t;
	int posted;

	SETUP(&t, tc_begin(&t, "rc rdma write") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 8192, 0)) &&
	      (d = tc_buf(&t, 8192, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 4);
	rs = sge(r, 0, 4096);
	ss = sge(s, 10, 3000);
	wr = rdma_wr(0xa3, IBV_WR_RDMA_WRITE, &ss, 1, d, 3000, d->mr->rkey);
	posted = post_recv(t.b, 0xb3, &rs, 1) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa3, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_WRITE, -1, t.a, NULL),
	   "requester completes IBV_WC_RDMA_WRITE with SUCCESS");
	ok(same(d->p + 3000, s->p + 10, 3000, "target"),
	   "3000 bytes written across a page boundary");
	ok(all_bytes(d->p, 3000, CANARY, "before the target") &&
	   all_bytes(d->p + 6000, d->len - 6000, CANARY, "after the target"),
	   "nothing written outside the target");
	ok(cq_quiet(t.cb, 100, "responder CQ"),
	   "no receive completion at the responder");
	/* The receive posted before is still there for the next SEND. */
	ok(posted && send_msg(&t, s, 0, 32, 0xa4) &&
	   expect_wc(t.ca, "requester", 0xa4, IBV_WC_SUCCESS, IBV_WC_SEND,
		     -1, t.a, NULL) &&
	   expect_wc(t.cb, "responder", 0xb3, IBV_WC_SUCCESS, IBV_WC_RECV,
		     32, t.b, NULL) &&
	   same(r->p, s->p, 32, "payload"),
	   "the posted receive was left for a later SEND");
	tc_end(&t);
}

/* 4 */
static void test_rc_write_imm(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL;
	uint32_t imm = htonl(0xcafe0004);
	struct ibv_send_wr wr;
	struct ibv_sge ss;
	struct ibv_wc wc;
	struct tc t;
	int posted;

	memset(&wc, 0, sizeof(wc));
	SETUP(&t, tc_begin(&t, "rc rdma write with immediate") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 8192, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	pattern(s->p, s->len, 5);
	ss = sge(s, 0, 2000);
	wr = rdma_wr(0xa5, IBV_WR_RDMA_WRITE_WITH_IMM, &ss, 1, d, 4000,
		     d->mr->rkey);
	wr.imm_data = imm;
	/* The receive needs no buffer: the data goes where the write says. */
	posted = post_recv(t.b, 0xb5, NULL, 0) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa5, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_WRITE, -1, t.a, NULL),
	   "requester completes IBV_WC_RDMA_WRITE with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xb5, IBV_WC_SUCCESS,
			       IBV_WC_RECV_RDMA_WITH_IMM, 2000, t.b, &wc),
	   "responder completes IBV_WC_RECV_RDMA_WITH_IMM, byte_len 2000");
	if (!(wc.wc_flags & IBV_WC_WITH_IMM) || wc.imm_data != imm)
		detail_wc("responder", &wc);
	ok((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == imm,
	   "IBV_WC_WITH_IMM set, imm_data as posted");
	ok(same(d->p + 4000, s->p, 2000, "target") &&
	   all_bytes(d->p, 4000, CANARY, "before the target") &&
	   all_bytes(d->p + 6000, d->len - 6000, CANARY, "after the target"),
	   "2000 bytes written, nothing else");
	tc_end(&t);
}

/* 5 */
static void test_rc_read(void)
{
	struct pair_opts o = rc_opts();
	struct buf *l = NULL, *rm = NULL;
	struct ibv_send_wr wr;
	struct ibv_sge ls[2];
	struct tc t;
	int posted;

	SETUP(&t, tc_begin(&t, "rc rdma read") && tc_pair(&t, &o) &&
	      (l = tc_buf(&t, 16384, IBV_ACCESS_LOCAL_WRITE)) &&
	      (rm = tc_buf(&t, 8192, IBV_ACCESS_REMOTE_READ)));
	pattern(rm->p, rm->len, 6);
	/* 6000 bytes from remote offset 50 into two local pieces. */
	ls[0] = sge(l, 0, 1000);
	ls[1] = sge(l, 8000, 5000);
	wr = rdma_wr(0xa6, IBV_WR_RDMA_READ, ls, 2, rm, 50, rm->mr->rkey);
	posted = post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa6, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_READ, 6000, t.a, NULL),
	   "requester completes IBV_WC_RDMA_READ, byte_len 6000");
	ok(same(l->p, rm->p + 50, 1000, "first local SGE") &&
	   same(l->p + 8000, rm->p + 1050, 5000, "second local SGE"),
	   "6000 bytes read into two SGEs");
	ok(all_bytes(l->p + 1000, 7000, CANARY, "between the SGEs") &&
	   all_bytes(l->p + 13000, l->len - 13000, CANARY, "after the SGEs"),
	   "nothing written outside the local SGEs");
	ok(cq_quiet(t.cb, 50, "responder CQ"), "no completion at the responder");
	tc_end(&t);
}

/* 6 */
static void test_rc_atomics(void)
{
	const uint64_t v0 = 0x1111222233334444ull;
	const uint64_t v1 = 0xaaaabbbbccccddddull;
	struct pair_opts o = rc_opts();
	struct buf *l = NULL, *rm = NULL;
	uint64_t *target, *result;
	struct ibv_send_wr wr;
	struct ibv_sge ls;
	struct tc t;
	int done;

	SETUP(&t, tc_begin(&t, "rc atomics") && tc_pair(&t, &o) &&
	      (l = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)) &&
	      (rm = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_ATOMIC)));
	target = (uint64_t *)(rm->p + 64);
	result = (uint64_t *)(l->p + 8);
	*target = v0;
	ls = sge(l, 8, 8);

	wr = send_wr(0xa7, IBV_WR_ATOMIC_CMP_AND_SWP, &ls, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rm->mr->rkey;
	wr.wr.atomic.compare_add = v0;
	wr.wr.atomic.swap = v1;
	done = post_send(t.a, &wr) &&
	       expect_wc(t.ca, "requester", 0xa7, IBV_WC_SUCCESS,
			 IBV_WC_COMP_SWAP, 8, t.a, NULL);
	ok(done, "compare and swap completes IBV_WC_COMP_SWAP, byte_len 8");
	if (done && (*result != v0 || *target != v1))
		detail("returned 0x%016llx (want 0x%016llx), memory 0x%016llx (want 0x%016llx)",
		       (unsigned long long)*result, (unsigned long long)v0,
		       (unsigned long long)*target, (unsigned long long)v1);
	ok(done && *result == v0 && *target == v1,
	   "matching compare: old value returned, memory swapped");

	*result = 0;
	wr.wr_id = 0xa8;
	wr.wr.atomic.compare_add = 0x1;
	wr.wr.atomic.swap = 0x5555;
	done = post_send(t.a, &wr) &&
	       expect_wc(t.ca, "requester", 0xa8, IBV_WC_SUCCESS,
			 IBV_WC_COMP_SWAP, 8, t.a, NULL);
	if (done && (*result != v1 || *target != v1))
		detail("returned 0x%016llx, memory 0x%016llx, want both 0x%016llx",
		       (unsigned long long)*result,
		       (unsigned long long)*target, (unsigned long long)v1);
	ok(done && *result == v1 && *target == v1,
	   "failing compare: old value returned, memory unchanged");

	*result = 0;
	wr = send_wr(0xa9, IBV_WR_ATOMIC_FETCH_AND_ADD, &ls, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rm->mr->rkey;
	wr.wr.atomic.compare_add = 0x10;
	done = post_send(t.a, &wr) &&
	       expect_wc(t.ca, "requester", 0xa9, IBV_WC_SUCCESS,
			 IBV_WC_FETCH_ADD, 8, t.a, NULL);
	ok(done, "fetch and add completes IBV_WC_FETCH_ADD, byte_len 8");
	if (done && (*result != v1 || *target != v1 + 0x10))
		detail("returned 0x%016llx (want 0x%016llx), memory 0x%016llx (want 0x%016llx)",
		       (unsigned long long)*result, (unsigned long long)v1,
		       (unsigned long long)*target,
		       (unsigned long long)(v1 + 0x10));
	ok(done && *result == v1 && *target == v1 + 0x10,
	   "fetch and add: old value returned, memory = old + 0x10");
	ok(all_bytes(rm->p, 64, CANARY, "before the target") &&
	   all_bytes(rm->p + 72, rm->len - 72, CANARY, "after the target") &&
	   all_bytes(l->p, 8, CANARY, "before the result") &&
	   all_bytes(l->p + 16, l->len - 16, CANARY, "after the result"),
	   "only the 8 target and result bytes change");
	tc_end(&t);
}

/*
 * 7: LEN bytes inline on a QP created with MAX_INLINE and SGES send SGEs.
 * A QP's inline capacity is at least the room of its SGEs, as on other
 * devices: rdma_xclient posts 16 bytes inline on a QP of one SGE created
 * with max_inline_data 0.  A byte more than the QP reports is refused.
 */
static void rc_inline(const char *name, uint32_t max_inline, uint32_t sges,
		      uint32_t len)
{
	struct pair_opts o = rc_opts();
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr, *bad = NULL;
	uint8_t data[512], want[512];
	struct buf *r = NULL;
	struct tc t;
	int posted, ret;

	o.a_max_inline = max_inline;
	o.a_max_send_sge = sges;
	SETUP(&t, tc_begin(&t, name) && tc_pair(&t, &o) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	memset(&init, 0, sizeof(init));
	ret = ibv_query_qp(t.a, &attr, IBV_QP_CAP, &init);
	if (ret)
		detail("ibv_query_qp: %s", strerror(ret));
	else
		detail("cap.max_inline_data %u, init_attr.cap.max_inline_data %u",
		       attr.cap.max_inline_data, init.cap.max_inline_data);
	ok(!ret && attr.cap.max_inline_data >= len &&
	   init.cap.max_inline_data >= len &&
	   attr.cap.max_inline_data < sizeof(data),
	   "the QP reports max_inline_data >= %u", len);

	pattern(want, len, 7);
	memcpy(data, want, len);
	/* Not registered: the lkey of an inline SGE is not looked at. */
	ss.addr = (uintptr_t)data;
	ss.length = len;
	ss.lkey = 0xdeadbeef;
	rs = sge(r, 0, 4096);
	wr = send_wr(0xaa, IBV_WR_SEND, &ss, 1);
	wr.send_flags |= IBV_SEND_INLINE;
	posted = post_recv(t.b, 0xba, &rs, 1) && post_send(t.a, &wr);
	/* The data was copied by the post: reusing the buffer is allowed. */
	memset(data, 0, len);
	ok(posted && expect_wc(t.ca, "requester", 0xaa, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "requester completes with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xba, IBV_WC_SUCCESS,
			       IBV_WC_RECV, len, t.b, NULL),
	   "responder completes IBV_WC_RECV, byte_len %u", len);
	ok(same(r->p, want, len, "payload") &&
	   all_bytes(r->p + len, r->len - len, CANARY, "after the payload"),
	   "%u inline bytes delivered as they were at post time", len);
	if (!ret && attr.cap.max_inline_data < sizeof(data)) {
		ss.length = attr.cap.max_inline_data + 1;
		ok(ibv_post_send(t.a, &wr, &bad) == EINVAL && bad == &wr,
		   "%u bytes inline, one more than reported, refused with EINVAL",
		   ss.length);
	}
	tc_end(&t);
}

static void test_rc_inline(void)
{
	rc_inline("rc inline send", 64, 0, 64);
	rc_inline("rc inline send in the room of one SGE", 0, 1, 16);
}

/* 8 */
static void test_rc_unsignaled(void)
{
	struct pair_opts o = rc_opts();
	struct ibv_recv_wr rwr[4], *rbad = NULL;
	struct ibv_send_wr swr[4];
	struct ibv_sge ss[4], rs[4];
	struct buf *s = NULL, *r = NULL;
	struct tc t;
	int i, ret, posted, good;

	o.a_sig_all = 0;
	SETUP(&t, tc_begin(&t, "rc unsignaled sends") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 8);
	for (i = 0; i < 4; i++) {
		rs[i] = sge(r, 1024 * i, 1024);
		rwr[i] = (struct ibv_recv_wr){
			.wr_id = 0xb80 + i,
			.sg_list = &rs[i],
			.num_sge = 1,
			.next = i < 3 ? &rwr[i + 1] : NULL,
		};
		ss[i] = sge(s, 100 * i, 100 + i);
		swr[i] = send_wr(0xa80 + i, IBV_WR_SEND, &ss[i], 1);
		swr[i].send_flags = i == 3 ? IBV_SEND_SIGNALED : 0;
		swr[i].next = i < 3 ? &swr[i + 1] : NULL;
	}
	ret = ibv_post_recv(t.b, rwr, &rbad);
	if (ret)
		detail("ibv_post_recv of 4: %s", strerror(ret));
	posted = !ret && post_send(t.a, swr);
	ok(posted, "4 receives and 4 sends posted as chains");

	good = posted;
	for (i = 0; good && i < 4; i++)
		good = expect_wc(t.cb, "responder", 0xb80 + i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, 100 + i, t.b, NULL) &&
		       same(r->p + 1024 * i, s->p + 100 * i, 100 + i,
			    "payload");
	ok(good, "all 4 received in order");
	ok(posted && expect_wc(t.ca, "requester", 0xa83, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "the one signaled send completes, with the last wr_id");
	ok(cq_quiet(t.ca, QUIET_MS, "requester CQ"),
	   "no completion for the 3 unsignaled sends");
	tc_end(&t);
}

/* 9 */
static void test_uc(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL, *d = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct tc t;
	int posted;

	o.type = IBV_QPT_UC;
	o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	SETUP(&t, tc_begin(&t, "uc send and rdma write") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 8192, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)) &&
	      (d = tc_buf(&t, 8192, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	pattern(s->p, s->len, 9);

	ss = sge(s, 0, 1000);
	rs = sge(r, 0, 4096);
	wr = send_wr(0xa9, IBV_WR_SEND, &ss, 1);
	posted = post_recv(t.b, 0xb9, &rs, 1) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xa9, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "UC SEND: requester completes with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xb9, IBV_WC_SUCCESS,
			       IBV_WC_RECV, 1000, t.b, NULL) &&
	   same(r->p, s->p, 1000, "payload"),
	   "UC SEND: 1000 bytes received");

	ss = sge(s, 1000, 5000);
	wr = rdma_wr(0xaa, IBV_WR_RDMA_WRITE, &ss, 1, d, 100, d->mr->rkey);
	posted = post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xaa, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_WRITE, -1, t.a, NULL),
	   "UC RDMA WRITE: requester completes with SUCCESS");
	ok(same(d->p + 100, s->p + 1000, 5000, "target") &&
	   all_bytes(d->p, 100, CANARY, "before the target") &&
	   all_bytes(d->p + 5100, d->len - 5100, CANARY, "after the target"),
	   "UC RDMA WRITE: 5000 bytes written, nothing else");
	ok(cq_quiet(t.cb, 50, "responder CQ"),
	   "UC RDMA WRITE: no completion at the responder");
	tc_end(&t);
}

/* 10 */
static void test_ud(void)
{
	struct pair_opts o = rc_opts();
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = gid,
			.sgid_index = (uint8_t)gid_index,
			.hop_limit = 1,
		},
	};
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct tc t;
	int posted;

	o.type = IBV_QPT_UD;
	memset(&wc, 0, sizeof(wc));
	SETUP(&t, tc_begin(&t, "ud send") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	t.ah = ibv_create_ah(t.pd, &aa);
	if (!t.ah)
		detail("ibv_create_ah: %s", strerror(errno));
	SETUP(&t, t.ah);
	pattern(s->p, s->len, 10);

	ss = sge(s, 0, 512);
	rs = sge(r, 0, GRH_BYTES + 512);
	wr = send_wr(0xab, IBV_WR_SEND, &ss, 1);
	wr.wr.ud.ah = t.ah;
	wr.wr.ud.remote_qpn = t.b->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	posted = post_recv(t.b, 0xbb, &rs, 1) && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xab, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "requester completes with SUCCESS");
	ok(posted && expect_wc(t.cb, "responder", 0xbb, IBV_WC_SUCCESS,
			       IBV_WC_RECV, GRH_BYTES + 512, t.b, &wc),
	   "responder completes IBV_WC_RECV, byte_len 40 + 512");
	if (posted && (!(wc.wc_flags & IBV_WC_GRH) ||
		       wc.src_qp != t.a->qp_num))
		detail_wc("responder", &wc);
	ok(posted && (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == t.a->qp_num,
	   "IBV_WC_GRH set and src_qp is the sender's QPN");
	ok(same(r->p + GRH_BYTES, s->p, 512, "payload after the GRH"),
	   "512 bytes delivered after the 40 GRH bytes");

	/* A wrong Q_Key: dropped at the responder, a success at the sender. */
	posted = post_recv(t.b, 0xbc, &rs, 1);
	wr.wr_id = 0xac;
	wr.wr.ud.remote_qkey = 0x22222222;
	posted = posted && post_send(t.a, &wr);
	ok(posted && expect_wc(t.ca, "requester", 0xac, IBV_WC_SUCCESS,
			       IBV_WC_SEND, -1, t.a, NULL),
	   "wrong Q_Key: requester still completes with SUCCESS");
	ok(posted && cq_quiet(t.cb, QUIET_MS, "responder CQ"),
	   "wrong Q_Key: nothing received within %d ms", QUIET_MS);
	wr.wr_id = 0xad;
	wr.wr.ud.remote_qkey = QKEY;
	ok(posted && post_send(t.a, &wr) &&
	   expect_wc(t.ca, "requester", 0xad, IBV_WC_SUCCESS, IBV_WC_SEND,
		     -1, t.a, NULL) &&
	   expect_wc(t.cb, "responder", 0xbc, IBV_WC_SUCCESS, IBV_WC_RECV,
		     GRH_BYTES + 512, t.b, NULL),
	   "wrong Q_Key: the receive was left for the next datagram");
	tc_end(&t);
}

/* 11a: two QPs on one SRQ consume its WQEs in posting order. */
static void test_srq_order(void)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	struct qp_opts qo = { .type = IBV_QPT_RC, .sig_all = 1 };
	struct ibv_qp *a[2] = { NULL, NULL }, *b[2] = { NULL, NULL };
	struct buf *s = NULL, *r = NULL;
	struct ibv_cq *ca = NULL, *cb = NULL;
	struct ibv_sge rs;
	struct tc t;
	int i, good;

	SETUP(&t, tc_begin(&t, "srq shared by two QPs") &&
	      (ca = tc_cq(&t, NULL)) && (cb = tc_cq(&t, NULL)) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	t.srq = ibv_create_srq(t.pd, &sa);
	if (!t.srq)
		detail("ibv_create_srq: %s", strerror(errno));
	SETUP(&t, t.srq);
	for (i = 0; i < 2; i++) {
		a[i] = tc_qp(&t, ca, &qo);
		qo.srq = t.srq;
		b[i] = a[i] ? tc_qp(&t, cb, &qo) : NULL;
		qo.srq = NULL;
		SETUP(&t, b[i] &&
		      qp_up(a[i], b[i]->qp_num, ACC_ALL, 12, 3) &&
		      qp_up(b[i], a[i]->qp_num, ACC_ALL, 12, 3));
	}
	pattern(s->p, s->len, 11);

	good = 1;
	for (i = 0; good && i < 4; i++) {
		rs = sge(r, 256 * i, 256);
		good = post_srq_recv(t.srq, 0x1100 + i, &rs, 1);
	}
	ok(good, "4 receives posted to the SRQ");

	/* Alternate senders; each send completes before the next starts. */
	for (i = 0; good && i < 4; i++) {
		struct ibv_sge ss = sge(s, 100 * i, 50 + i);
		struct ibv_send_wr wr = send_wr(0x1200 + i, IBV_WR_SEND, &ss,
						1);

		good = post_send(a[i % 2], &wr) &&
		       expect_wc(ca, "requester", 0x1200 + i, IBV_WC_SUCCESS,
				 IBV_WC_SEND, -1, a[i % 2], NULL);
	}
	ok(good, "4 sends, alternating between the two QPs, complete");
	for (i = 0; good && i < 4; i++)
		good = expect_wc(cb, "responder", 0x1100 + i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, 50 + i, b[i % 2], NULL) &&
		       same(r->p + 256 * i, s->p + 100 * i, 50 + i,
			    "payload");
	ok(good, "SRQ WQEs consumed in posting order, each by the QP that received");
	tc_end(&t);
}

/* 11b: the SRQ limit event. */
static void test_srq_limit(void)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	struct ibv_srq_attr attr = { .srq_limit = 8 };
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge rs;
	struct tc t;
	int i, good, ret, early;

	SETUP(&t, tc_begin(&t, "srq limit event") &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	t.srq = ibv_create_srq(t.pd, &sa);
	if (!t.srq)
		detail("ibv_create_srq: %s", strerror(errno));
	o.b_srq = t.srq;
	SETUP(&t, t.srq && tc_pair(&t, &o));
	pattern(s->p, s->len, 12);

	good = 1;
	for (i = 0; good && i < 10; i++) {
		rs = sge(r, 256 * i, 256);
		good = post_srq_recv(t.srq, 0x1300 + i, &rs, 1);
	}
	ok(good, "10 receives posted to an SRQ of 16");
	ret = ibv_modify_srq(t.srq, &attr, IBV_SRQ_LIMIT);
	if (ret)
		detail("ibv_modify_srq: %s", strerror(ret));
	memset(&attr, 0, sizeof(attr));
	if (!ret) {
		ret = ibv_query_srq(t.srq, &attr);
		if (ret)
			detail("ibv_query_srq: %s", strerror(ret));
		else
			detail("srq_limit %u max_wr %u", attr.srq_limit,
			       attr.max_wr);
	}
	ok(!ret && attr.srq_limit == 8 && attr.max_wr >= 16,
	   "limit armed at 8");

	for (i = 0; good && i < 2; i++)
		good = send_msg(&t, s, 0, 16, 0x1400 + i) &&
		       expect_wc(t.cb, "responder", 0x1300 + i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, 16, t.b, NULL);
	ok(good, "2 receives consumed");
	early = good && wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, t.srq, 200,
				   NULL);
	if (early)
		detail("IBV_EVENT_SRQ_LIMIT_REACHED with 8 WQEs left");
	ok(good && !early, "no limit event with 8 WQEs left");
	good = good && send_msg(&t, s, 0, 16, 0x1402) &&
	       expect_wc(t.cb, "responder", 0x1302, IBV_WC_SUCCESS,
			 IBV_WC_RECV, 16, t.b, NULL);
	ok(good, "a third receive consumed");
	ok(good && wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, t.srq, WAIT_MS,
			      "async fd"),
	   "IBV_EVENT_SRQ_LIMIT_REACHED with 7 WQEs left");
	memset(&attr, 0, sizeof(attr));
	attr.srq_limit = 99;
	ret = ibv_query_srq(t.srq, &attr);
	if (ret)
		detail("ibv_query_srq: %s", strerror(ret));
	else
		detail("srq_limit %u", attr.srq_limit);
	ok(!ret && attr.srq_limit == 0, "the event disarmed the limit");
	tc_end(&t);
}

/* Wait for a completion event on @chan for @cq; it is acknowledged. */
static int wait_cq_event(struct ibv_comp_channel *chan, struct ibv_cq *cq,
			 int ms, const char *what)
{
	long long end = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = chan->fd, .events = POLLIN };
		long long left = end - now_ms();
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int n;

		if (left < 0)
			left = 0;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR) {
			detail("%s: poll: %s", what, strerror(errno));
			return 0;
		}
		if (n > 0 && !ibv_get_cq_event(chan, &ev_cq, &ev_ctx)) {
			ibv_ack_cq_events(ev_cq, 1);
			if (ev_cq == cq)
				return 1;
			detail("%s: event for another CQ %p", what,
			       (void *)ev_cq);
			continue;
		}
		if (!left) {
			detail("%s: no completion event within %d ms", what,
			       ms);
			return 0;
		}
	}
}

/* 12 */
static void test_comp_channel(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct tc t;
	int good, ret;

	SETUP(&t, tc_begin(&t, "completion channel"));
	t.chan = ibv_create_comp_channel(ctx);
	if (!t.chan)
		detail("ibv_create_comp_channel: %s", strerror(errno));
	SETUP(&t, t.chan && set_nonblock(t.chan->fd));
	o.b_chan = t.chan;
	SETUP(&t, tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 13);

	ret = ibv_req_notify_cq(t.cb, 0);
	if (ret)
		detail("ibv_req_notify_cq: %s", strerror(ret));
	ok(!ret, "ibv_req_notify_cq for the next completion");
	rs = sge(r, 0, 256);
	good = !ret && post_recv(t.b, 0xbd, &rs, 1) &&
	       send_msg(&t, s, 0, 100, 0xad);
	ok(good && wait_cq_event(t.chan, t.cb, WAIT_MS, "channel"),
	   "ibv_get_cq_event reports the CQ");
	ok(good && expect_wc(t.cb, "responder", 0xbd, IBV_WC_SUCCESS,
			     IBV_WC_RECV, 100, t.b, NULL),
	   "the completion is there to poll");
	ok(good && !wait_cq_event(t.chan, t.cb, 100, "channel"),
	   "one event per arming");

	/* Armed for solicited completions only. */
	ret = ibv_req_notify_cq(t.cb, 1);
	if (ret)
		detail("ibv_req_notify_cq solicited: %s", strerror(ret));
	good = good && !ret && post_recv(t.b, 0xbe, &rs, 1) &&
	       post_recv(t.b, 0xbf, &rs, 1) &&
	       send_msg(&t, s, 0, 10, 0xae) &&
	       expect_wc(t.cb, "responder", 0xbe, IBV_WC_SUCCESS, IBV_WC_RECV,
			 10, t.b, NULL);
	ok(good && !wait_cq_event(t.chan, t.cb, QUIET_MS, "channel"),
	   "solicited only: no event for an unsolicited message");
	ss = sge(s, 0, 20);
	wr = send_wr(0xaf, IBV_WR_SEND, &ss, 1);
	wr.send_flags |= IBV_SEND_SOLICITED;
	good = good && post_send(t.a, &wr);
	ok(good && wait_cq_event(t.chan, t.cb, WAIT_MS, "channel") &&
	   expect_wc(t.cb, "responder", 0xbf, IBV_WC_SUCCESS, IBV_WC_RECV,
		     20, t.b, NULL),
	   "solicited only: an event for a solicited message");
	tc_end(&t);
}

/* 13 */
static void test_bad_lkey(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct tc t;
	uint32_t lkey;
	int ret;

	SETUP(&t, tc_begin(&t, "bad lkey") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	ss = sge(s, 0, 100);
	ss.lkey += 0x100000;
	rs = sge(r, 0, 4096);
	wr = send_wr(0xe1, IBV_WR_SEND, &ss, 1);
	ok(post_recv(t.b, 0xf1, &rs, 1) && post_send(t.a, &wr) &&
	   expect_wc(t.ca, "requester", 0xe1, IBV_WC_LOC_PROT_ERR, -1, -1,
		     t.a, NULL),
	   "lkey + 0x100000: IBV_WC_LOC_PROT_ERR");
	tc_end(&t);

	SETUP(&t, tc_begin(&t, "deregistered lkey") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	lkey = s->mr->lkey;
	ret = ibv_dereg_mr(s->mr);
	s->mr = NULL;
	if (ret)
		detail("ibv_dereg_mr: %s", strerror(ret));
	ss.addr = (uintptr_t)s->p;
	ss.length = 100;
	ss.lkey = lkey;
	rs = sge(r, 0, 4096);
	wr = send_wr(0xe2, IBV_WR_SEND, &ss, 1);
	ok(!ret && post_recv(t.b, 0xf2, &rs, 1) && post_send(t.a, &wr) &&
	   expect_wc(t.ca, "requester", 0xe2, IBV_WC_LOC_PROT_ERR, -1, -1,
		     t.a, NULL),
	   "lkey of a deregistered MR: IBV_WC_LOC_PROT_ERR");
	tc_end(&t);
}

/* One RDMA WRITE of @len at @off in @d with @rkey; expect @status. */
static int write_status(struct tc *t, const struct buf *s,
			const struct buf *d, size_t off, uint32_t len,
			uint32_t rkey, uint64_t wr_id,
			enum ibv_wc_status status)
{
	struct ibv_sge ss = sge(s, 0, len);
	struct ibv_send_wr wr = rdma_wr(wr_id, IBV_WR_RDMA_WRITE, &ss, 1, d,
					off, rkey);

	return post_send(t->a, &wr) &&
	       expect_wc(t->ca, "requester", wr_id, status, IBV_WC_RDMA_WRITE,
			 -1, t->a, NULL);
}

/* 14 */
static void test_bad_rkey(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL;
	struct tc t;

	SETUP(&t, tc_begin(&t, "bad rkey") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	pattern(s->p, s->len, 14);
	ok(write_status(&t, s, d, 0, 100, d->mr->rkey + 0x100000, 0xe3,
			IBV_WC_REM_ACCESS_ERR),
	   "RDMA WRITE with rkey + 0x100000: IBV_WC_REM_ACCESS_ERR");
	ok(all_bytes(d->p, d->len, CANARY, "target MR"),
	   "the MR behind the real rkey is untouched");
	tc_end(&t);

	/* The receive it took fails with a Local Access Error (IBA 11.6.2). */
	SETUP(&t, tc_begin(&t, "bad rkey, WRITE with immediate") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	pattern(s->p, s->len, 17);
	{
		struct ibv_sge ss = sge(s, 0, 100);
		struct ibv_send_wr wr = rdma_wr(0xe6, IBV_WR_RDMA_WRITE_WITH_IMM,
						&ss, 1, d, 0,
						d->mr->rkey + 0x100000);
		int posted = post_recv(t.b, 0xb6, NULL, 0) &&
			     post_send(t.a, &wr);

		ok(posted && expect_wc(t.ca, "requester", 0xe6,
				       IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE,
				       -1, t.a, NULL),
		   "WRITE_WITH_IMM with rkey + 0x100000: IBV_WC_REM_ACCESS_ERR");
		ok(posted && expect_wc(t.cb, "responder", 0xb6,
				       IBV_WC_LOC_ACCESS_ERR, -1, -1, t.b, NULL),
		   "the responder's receive completes IBV_WC_LOC_ACCESS_ERR");
		ok(all_bytes(d->p, d->len, CANARY, "target MR"),
		   "the MR behind the real rkey is untouched");
	}
	tc_end(&t);
}

/* 15 */
static void test_remote_access(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL;
	struct tc t;

	SETUP(&t, tc_begin(&t, "remote write to a read-only MR") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_READ)));
	pattern(s->p, s->len, 15);
	ok(write_status(&t, s, d, 0, 100, d->mr->rkey, 0xe4,
			IBV_WC_REM_ACCESS_ERR),
	   "MR without IBV_ACCESS_REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR");
	ok(all_bytes(d->p, d->len, CANARY, "target MR"), "the MR is untouched");
	tc_end(&t);

	SETUP(&t, tc_begin(&t, "remote write past the MR") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	pattern(s->p, s->len, 16);
	ok(write_status(&t, s, d, 4050, 100, d->mr->rkey, 0xe5,
			IBV_WC_REM_ACCESS_ERR),
	   "100 bytes at offset 4050 of 4096: IBV_WC_REM_ACCESS_ERR");
	ok(all_bytes(d->p, d->len, CANARY, "target MR"),
	   "nothing of it written");
	tc_end(&t);
}

/* 15a: re-registration changes what an MR's keys allow, not the keys. */
static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		 void *addr, size_t len, int access)
{
	int ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);

	if (ret)
		detail("ibv_rereg_mr flags 0x%x: %d (%s)", flags, ret,
		       strerror(errno));
	return !ret;
}

static void test_rereg_mr(void)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL;
	struct ibv_pd *pd2;
	uint32_t old_lkey, old_rkey;
	struct tc t;
	void *n;

	SETUP(&t, tc_begin(&t, "rereg MR access") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) && (d = tc_buf(&t, 4096, rw)));
	pattern(s->p, s->len, 151);
	old_lkey = d->mr->lkey;
	old_rkey = d->mr->rkey;
	ok(rereg(d->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		 IBV_ACCESS_LOCAL_WRITE), "rereg to local write only");
	if (d->mr->lkey != old_lkey || d->mr->rkey != old_rkey)
		detail("lkey 0x%x rkey 0x%x, were 0x%x 0x%x", d->mr->lkey,
		       d->mr->rkey, old_lkey, old_rkey);
	ok(d->mr->lkey == old_lkey && d->mr->rkey == old_rkey,
	   "the MR keeps its lkey and rkey, which the peer holds");
	ok(write_status(&t, s, d, 0, 100, old_rkey, 0xf1,
			IBV_WC_REM_ACCESS_ERR),
	   "RDMA WRITE: IBV_WC_REM_ACCESS_ERR");
	ok(all_bytes(d->p, d->len, CANARY, "target MR"), "the MR is untouched");
	tc_end(&t);

	SETUP(&t, tc_begin(&t, "rereg MR access and translation") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 153);
	old_rkey = d->mr->rkey;
	ok(rereg(d->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, rw) &&
	   write_status(&t, s, d, 8, 100, old_rkey, 0xf3, IBV_WC_SUCCESS),
	   "rereg to remote write: RDMA WRITE with the rkey of before succeeds");
	ok(same(d->p + 8, s->p, 100, "written bytes") &&
	   all_bytes(d->p, 8, CANARY, "before") &&
	   all_bytes(d->p + 108, d->len - 108, CANARY, "after"),
	   "100 bytes written at offset 8, nothing else");
	n = NULL;
	if (posix_memalign(&n, page_size, 8192))
		n = NULL;
	if (n)
		memset(n, CANARY, 8192);
	ok(n && rereg(d->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, n, 8192,
		      0) && d->mr->addr == n && d->mr->length == 8192,
	   "rereg to another 8 KiB buffer");
	if (n) {
		/* The MR is registered with its iova at n's address. */
		struct buf nb = { .p = n, .len = 8192, .mr = d->mr };

		memset(d->p, CANARY, d->len);
		ok(write_status(&t, s, &nb, 5000, 100, d->mr->rkey, 0xf4,
				IBV_WC_SUCCESS) &&
		   same((uint8_t *)n + 5000, s->p, 100, "written bytes") &&
		   all_bytes(d->p, d->len, CANARY, "old buffer"),
		   "RDMA WRITE lands in the new buffer, beyond the old length");
	}
	tc_end(&t);
	free(n);

	SETUP(&t, tc_begin(&t, "rereg MR PD") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) && (d = tc_buf(&t, 4096, rw)));
	pattern(s->p, s->len, 154);
	pd2 = ibv_alloc_pd(ctx);
	ok(pd2 && rereg(d->mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) &&
	   d->mr->pd == pd2, "rereg into another PD");
	ok(pd2 && write_status(&t, s, d, 0, 100, d->mr->rkey, 0xf5,
			       IBV_WC_REM_ACCESS_ERR),
	   "RDMA WRITE from a QP of the old PD: IBV_WC_REM_ACCESS_ERR");
	ok(all_bytes(d->p, d->len, CANARY, "target MR"), "the MR is untouched");
	ok(pd2 && rereg(d->mr, IBV_REREG_MR_CHANGE_PD, t.pd, NULL, 0, 0),
	   "rereg back into the QP's PD");
	ok(pd2 && !ibv_dealloc_pd(pd2), "the other PD is free again");
	tc_end(&t);
}

/* 15b: a CQ does not shrink below the completions owed to it. */
static void test_cq_shrink(void)
{
	struct pair_opts o = rc_opts();
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = gid,
			.sgid_index = (uint8_t)gid_index,
			.hop_limit = 1,
		},
	};
	struct ibv_send_wr wr;
	struct ibv_sge ss;
	struct buf *s = NULL;
	struct tc t;
	int i, posted, ret, good;

	o.type = IBV_QPT_UD;
	SETUP(&t, tc_begin(&t, "cq shrink with sends posted") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)));
	t.ah = ibv_create_ah(t.pd, &aa);
	if (!t.ah)
		detail("ibv_create_ah: %s", strerror(errno));
	SETUP(&t, t.ah);
	ss = sge(s, 0, 64);
	wr = send_wr(0, IBV_WR_SEND, &ss, 1);
	wr.wr.ud.ah = t.ah;
	wr.wr.ud.remote_qpn = t.b->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	/* No receive at b: the datagrams are dropped, the sends succeed. */
	for (i = 0, posted = 1; i < 16 && posted; i++) {
		wr.wr_id = 0x100 + i;
		posted = post_send(t.a, &wr);
	}
	ret = ibv_resize_cq(t.ca, 1);
	if (ret != EINVAL)
		detail("ibv_resize_cq to 1: %d (%s)", ret, strerror(ret));
	ok(posted && ret == EINVAL,
	   "shrinking to 1 right after 16 signaled sends: EINVAL");
	for (i = 0, good = posted; i < 16 && good; i++)
		good = expect_wc(t.ca, "requester", 0x100 + i, IBV_WC_SUCCESS,
				 IBV_WC_SEND, -1, t.a, NULL);
	ok(good, "all 16 completions, in order");
	ret = ibv_resize_cq(t.ca, 1);
	if (ret)
		detail("ibv_resize_cq to 1: %s", strerror(ret));
	ok(!ret && t.ca->cqe >= 1, "the empty CQ shrinks to 1");
	tc_end(&t);
}

/* 16 */
static void test_recv_too_small(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *r = NULL;
	struct ibv_sge rs;
	struct tc t;
	int posted;

	SETUP(&t, tc_begin(&t, "receive too small") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	rs = sge(r, 0, 128);
	posted = post_recv(t.b, 0xf6, &rs, 1) && send_msg(&t, s, 0, 256, 0xe6);
	ok(posted && expect_wc(t.ca, "requester", 0xe6,
			       IBV_WC_REM_INV_REQ_ERR, -1, -1, t.a, NULL),
	   "256 bytes into 128: requester IBV_WC_REM_INV_REQ_ERR");
	ok(posted && expect_wc(t.cb, "responder", 0xf6, IBV_WC_LOC_LEN_ERR,
			       -1, -1, t.b, NULL),
	   "responder IBV_WC_LOC_LEN_ERR");
	ok(all_bytes(r->p + 128, r->len - 128, CANARY, "after the receive"),
	   "nothing written past the receive buffer");
	/*
	 * The responder is in ERR now, without this process having been
	 * told (no async event is read here): a receive posted to it must
	 * still complete, flushed.
	 */
	ok(posted && post_recv(t.b, 0xf7, &rs, 1) &&
	   expect_wc(t.cb, "responder", 0xf7, IBV_WC_WR_FLUSH_ERR, -1, -1,
		     t.b, NULL),
	   "a receive posted after the error is flushed");
	tc_end(&t);
}

/* 17 */
static void test_rnr(void)
{
	struct pair_opts o = rc_opts();
	struct buf *s = NULL;
	long long t0;
	struct tc t;

	o.rnr_retry = 1;
	o.min_rnr_timer = 1;	/* 0.01 ms */
	SETUP(&t, tc_begin(&t, "rnr retries exceeded") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)));
	t0 = now_ms();
	ok(send_msg(&t, s, 0, 64, 0xe8) &&
	   expect_wc(t.ca, "requester", 0xe8, IBV_WC_RNR_RETRY_EXC_ERR, -1,
		     -1, t.a, NULL),
	   "no receive, rnr_retry 1: IBV_WC_RNR_RETRY_EXC_ERR");
	printf("# RNR error after %lld ms\n", now_ms() - t0);
	tc_end(&t);
}

/* 18 */
static void test_wrong_state(void)
{
	struct qp_opts qo = { .type = IBV_QPT_RC, .sig_all = 1 };
	struct ibv_send_wr swr, *sbad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp *a = NULL, *b = NULL;
	struct buf *s = NULL, *r = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_sge ss, rs;
	struct tc t;
	int ret;

	SETUP(&t, tc_begin(&t, "posting in the wrong state") &&
	      (cq = tc_cq(&t, NULL)) && (a = tc_qp(&t, cq, &qo)) &&
	      (b = tc_qp(&t, cq, &qo)) && (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	ss = sge(s, 0, 64);
	rs = sge(r, 0, 64);
	swr = send_wr(0xe9, IBV_WR_SEND, &ss, 1);
	rwr = (struct ibv_recv_wr){ .wr_id = 0xf9, .sg_list = &rs,
				    .num_sge = 1 };

	sbad = NULL;
	ret = ibv_post_send(b, &swr, &sbad);
	detail("returned %d, bad_wr %p for %p", ret, (void *)sbad,
	       (void *)&swr);
	ok(ret && sbad == &swr, "post_send in RESET fails, bad_wr is the WR");
	rbad = NULL;
	ret = ibv_post_recv(b, &rwr, &rbad);
	detail("returned %d, bad_wr %p for %p", ret, (void *)rbad,
	       (void *)&rwr);
	ok(ret && rbad == &rwr, "post_recv in RESET fails, bad_wr is the WR");

	SETUP(&t, qp_init(a, ACC_ALL));
	sbad = NULL;
	ret = ibv_post_send(a, &swr, &sbad);
	detail("returned %d, bad_wr %p for %p", ret, (void *)sbad,
	       (void *)&swr);
	ok(ret && sbad == &swr, "post_send in INIT fails, bad_wr is the WR");
	SETUP(&t, qp_rtr(a, b->qp_num, 12));
	sbad = NULL;
	ret = ibv_post_send(a, &swr, &sbad);
	detail("returned %d, bad_wr %p for %p", ret, (void *)sbad,
	       (void *)&swr);
	ok(ret && sbad == &swr, "post_send in RTR fails, bad_wr is the WR");
	ok(cq_quiet(cq, 50, "CQ"), "nothing completes");
	tc_end(&t);
}

/* 19 */
static void test_flush(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct pair_opts o = rc_opts();
	struct qp_opts qo = { .type = IBV_QPT_RC, .sig_all = 1 };
	struct buf *s = NULL, *r = NULL;
	struct ibv_qp *c = NULL;
	struct ibv_sge rs, ss;
	struct ibv_send_wr wr;
	struct tc t;
	int i, good, flushed, fatal;

	SETUP(&t, tc_begin(&t, "flush in ERR") && tc_pair(&t, &o) &&
	      (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	good = 1;
	for (i = 0; good && i < 3; i++) {
		rs = sge(r, 256 * i, 256);
		good = post_recv(t.b, 0xf10 + i, &rs, 1);
	}
	ok(good && modify(t.b, &attr, IBV_QP_STATE, "ERR"),
	   "3 receives posted, then the QP moved to ERR");
	flushed = good;
	for (i = 0; flushed && i < 3; i++)
		flushed = expect_wc(t.cb, "responder", 0xf10 + i,
				    IBV_WC_WR_FLUSH_ERR, -1, -1, t.b, NULL);
	ok(flushed, "3 IBV_WC_WR_FLUSH_ERR completions, in posting order");
	fatal = good && wait_async(IBV_EVENT_QP_FATAL, t.b, 200, NULL);
	if (fatal)
		detail("IBV_EVENT_QP_FATAL after ibv_modify_qp to ERR");
	ok(good && !fatal, "modify to ERR raises no IBV_EVENT_QP_FATAL");
	ss = sge(s, 0, 64);
	wr = send_wr(0xe10, IBV_WR_SEND, &ss, 1);
	ok(good && post_send(t.b, &wr) &&
	   expect_wc(t.cb, "responder", 0xe10, IBV_WC_WR_FLUSH_ERR, -1, -1,
		     t.b, NULL),
	   "a send posted in ERR completes with IBV_WC_WR_FLUSH_ERR");
	rs = sge(r, 0, 256);
	ok(good && post_recv(t.b, 0xf13, &rs, 1) &&
	   expect_wc(t.cb, "responder", 0xf13, IBV_WC_WR_FLUSH_ERR, -1, -1,
		     t.b, NULL),
	   "a receive posted in ERR completes with IBV_WC_WR_FLUSH_ERR");
	ok(cq_quiet(t.cb, 50, "responder CQ"), "nothing else completes");

	/*
	 * ib_core's state table (ib_modify_qp_is_ok()) has no RESET to ERR
	 * transition: a QP must be in INIT at least to be moved to ERR.
	 */
	c = tc_qp(&t, t.ca, &qo);
	ok(c && ibv_modify_qp(c, &attr, IBV_QP_STATE) != 0 &&
	   qp_state(c) == IBV_QPS_RESET,
	   "RESET to ERR is refused and the QP stays in RESET");
	tc_end(&t);
}

/* 20 */
static void test_too_many_sge(void)
{
	struct pair_opts o = rc_opts();
	struct ibv_qp_init_attr init;
	struct ibv_send_wr good_wr, bad_wr, *bad;
	struct ibv_qp_attr attr;
	struct ibv_sge ss[8], rs;
	struct buf *s = NULL, *r = NULL;
	uint32_t max;
	struct tc t;
	int i, ret;

	o.a_max_send_sge = 2;
	SETUP(&t, tc_begin(&t, "num_sge above max_send_sge") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (r = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE)));
	memset(&init, 0, sizeof(init));
	ret = ibv_query_qp(t.a, &attr, IBV_QP_CAP, &init);
	if (ret)
		detail("ibv_query_qp: %s", strerror(ret));
	max = ret ? 2 : init.cap.max_send_sge;
	SETUP(&t, !ret && max >= 2 && max < 8);
	for (i = 0; i < 8; i++)
		ss[i] = sge(s, 16 * i, 16);

	bad_wr = send_wr(0xe20, IBV_WR_SEND, ss, (int)max + 1);
	bad = NULL;
	ret = ibv_post_send(t.a, &bad_wr, &bad);
	detail("returned %d, bad_wr %p for %p", ret, (void *)bad,
	       (void *)&bad_wr);
	ok(ret && bad == &bad_wr, "%u SGEs of max %u: post_send fails, bad_wr is the WR",
	   max + 1, max);

	/* A good WR, then a bad one: the first is posted and runs. */
	good_wr = send_wr(0xe21, IBV_WR_SEND, ss, (int)max);
	good_wr.next = &bad_wr;
	bad_wr.wr_id = 0xe22;
	rs = sge(r, 0, 4096);
	bad = NULL;
	ret = post_recv(t.b, 0xf20, &rs, 1) ?
	      ibv_post_send(t.a, &good_wr, &bad) : 0;
	detail("returned %d, bad_wr %p, first WR %p, second %p", ret,
	       (void *)bad, (void *)&good_wr, (void *)&bad_wr);
	ok(ret && bad == &bad_wr,
	   "a chain failing at its second WR: bad_wr is the second");
	ok(expect_wc(t.ca, "requester", 0xe21, IBV_WC_SUCCESS, IBV_WC_SEND,
		     -1, t.a, NULL) &&
	   expect_wc(t.cb, "responder", 0xf20, IBV_WC_SUCCESS, IBV_WC_RECV,
		     16 * max, t.b, NULL) &&
	   same(r->p, s->p, 16 * max, "payload"),
	   "the WR before it was posted and completes");
	ok(cq_quiet(t.ca, 50, "requester CQ"), "the failed WR never completes");

	/* A negative num_sge: refused where it stands in the chain. */
	bad_wr = send_wr(0xe23, IBV_WR_SEND, ss, -1);
	bad = NULL;
	ret = ibv_post_send(t.a, &bad_wr, &bad);
	ok(ret == EINVAL && bad == &bad_wr,
	   "num_sge -1: post_send fails with EINVAL (%d), bad_wr is the WR", ret);
	good_wr = send_wr(0xe24, IBV_WR_SEND, ss, 1);
	good_wr.next = &bad_wr;
	bad = NULL;
	ret = post_recv(t.b, 0xf24, &rs, 1) ?
	      ibv_post_send(t.a, &good_wr, &bad) : 0;
	ok(ret == EINVAL && bad == &bad_wr,
	   "a chain with num_sge -1 second: EINVAL (%d), bad_wr is the second", ret);
	ok(expect_wc(t.ca, "requester", 0xe24, IBV_WC_SUCCESS, IBV_WC_SEND,
		     -1, t.a, NULL) &&
	   expect_wc(t.cb, "responder", 0xf24, IBV_WC_SUCCESS, IBV_WC_RECV,
		     16, t.b, NULL) &&
	   cq_quiet(t.ca, 50, "requester CQ"),
	   "the WR before it was posted and completes, the bad one never");
	tc_end(&t);
}

/*
 * 20b: a chain whose post_send command is larger than libsoftrvt builds
 * on its stack (4 KiB: 16 SENDs of 16 SGEs) goes the other way, through
 * libibverbs; every SEND still arrives whole, in order.
 */
#define LONG_WRS	16
#define LONG_SGES	16

static void test_long_chain(void)
{
	struct pair_opts o = rc_opts();
	struct ibv_send_wr wr[LONG_WRS], *bad = NULL;
	struct ibv_sge ss[LONG_WRS][LONG_SGES], rs;
	struct buf *s = NULL, *r = NULL;
	const uint32_t len = LONG_SGES * 16;
	int i, j, ret, good = 1;
	struct tc t;

	o.a_max_send_sge = LONG_SGES;
	SETUP(&t, tc_begin(&t, "a chain of 16 SENDs of 16 SGEs, past 4 KiB of command") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, LONG_WRS * len, 0)) &&
	      (r = tc_buf(&t, LONG_WRS * len, IBV_ACCESS_LOCAL_WRITE)));
	pattern(s->p, s->len, 20);
	for (i = 0; i < LONG_WRS; i++) {
		for (j = 0; j < LONG_SGES; j++)
			ss[i][j] = sge(s, i * len + 16 * j, 16);
		wr[i] = send_wr(0xe30 + i, IBV_WR_SEND, ss[i], LONG_SGES);
		wr[i].next = i + 1 < LONG_WRS ? &wr[i + 1] : NULL;
		rs = sge(r, i * len, len);
		good = good && post_recv(t.b, 0xf30 + i, &rs, 1);
	}
	ret = good ? ibv_post_send(t.a, wr, &bad) : -1;
	ok(!ret, "post_send of the chain returns 0 (%d)", ret);
	for (i = 0; !ret && i < LONG_WRS; i++)
		good = expect_wc(t.ca, "requester", 0xe30 + i, IBV_WC_SUCCESS,
				 IBV_WC_SEND, -1, t.a, NULL) &&
		       expect_wc(t.cb, "responder", 0xf30 + i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, len, t.b, NULL) && good;
	ok(!ret && good && same(r->p, s->p, LONG_WRS * len, "payload"),
	   "every SEND completes in order on both sides, every byte arrived");
	tc_end(&t);
}

/*
 * 21: a move to ERR by the kernel (here the responder's, for a WRITE with
 * a bad rkey) must not be undone by a modify_qp the process has in
 * flight.  A second thread keeps modifying the responder from RTS to RTS
 * while, round after round, the pair is brought up again and the error
 * provoked; after each error the responder must be in ERR, and stay
 * there.  The window is a few instructions of modify_qp: hence the rounds.
 */
#define RACE_ROUNDS	300

struct hammer {
	struct ibv_qp *qp;
	int stop;			/* atomic */
	long tries, refused;
};

static void *hammer_rts(void *arg)
{
	struct hammer *h = arg;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		h->refused += ibv_modify_qp(h->qp, &a, IBV_QP_STATE) != 0;
		h->tries++;
	}
	return NULL;
}

/* Both QPs of @t from whatever state back to RTS, connected again. */
static int pair_again(struct tc *t, const struct pair_opts *o)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };

	return modify(t->a, &reset, IBV_QP_STATE, "RESET") &&
	       modify(t->b, &reset, IBV_QP_STATE, "RESET") &&
	       qp_up(t->a, t->b->qp_num, o->access, o->min_rnr_timer,
		     o->rnr_retry) &&
	       qp_up(t->b, t->a->qp_num, o->access, o->min_rnr_timer,
		     o->rnr_retry);
}

static void test_modify_vs_error(void)
{
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	struct pair_opts o = rc_opts();
	struct buf *s = NULL, *d = NULL;
	int round, undone = 0, good = 1;
	struct hammer h = {};
	enum ibv_qp_state st;
	long long t0;
	pthread_t thr;
	struct tc t;

	SETUP(&t, tc_begin(&t, "modify_qp racing a move to ERR") &&
	      tc_pair(&t, &o) && (s = tc_buf(&t, 4096, 0)) &&
	      (d = tc_buf(&t, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE)));
	h.qp = t.b;
	SETUP(&t, !pthread_create(&thr, NULL, hammer_rts, &h));
	t0 = now_ms();
	for (round = 0; good && round < RACE_ROUNDS; round++) {
		good = (!round || pair_again(&t, &o)) &&
		       write_status(&t, s, d, 0, 64, d->mr->rkey + 0x100000,
				    0xe30 + round, IBV_WC_REM_ACCESS_ERR) &&
		       wait_async(IBV_EVENT_QP_ACCESS_ERR, t.b, WAIT_MS,
				  "responder");
		if (!good)
			break;
		st = qp_state(t.b);
		if (st != IBV_QPS_ERR) {
			printf("# round %d: the responder is in state %d after its access error\n",
			       round, st);
			undone++;
		}
	}
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	printf("# %d rounds in %lld ms, %ld RTS to RTS modifies, %ld refused\n",
	       round, now_ms() - t0, h.tries, h.refused);
	ok(good, "%d rounds of bad-rkey WRITE, REM_ACCESS_ERR and the access error event",
	   RACE_ROUNDS);
	ok(good && !undone,
	   "the responder is in ERR after every error (%d undone)", undone);
	if (good && !undone) {
		st = ibv_modify_qp(t.b, &rts, IBV_QP_STATE) ? qp_state(t.b) :
							       IBV_QPS_RTS;
		ok(st == IBV_QPS_ERR, "modify_qp from ERR to RTS is refused");
	}
	tc_end(&t);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list) {
		detail("ibv_get_device_list: %s", strerror(errno));
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name)) {
			detail("also found %s", ibv_get_device_name(list[i]));
			continue;
		}
		c = ibv_open_device(list[i]);
		if (!c)
			detail("ibv_open_device: %s", strerror(errno));
		break;
	}
	if (i == n)
		detail("%s not among the %d devices libibverbs found", name,
		       n);
	ibv_free_device_list(list);
	return c;
}

int main(int argc, char **argv)
{
	const char *ibdev = argc > 1 ? argv[1] : "softrvt0";
	struct ibv_port_attr pa;
	char gid_str[INET6_ADDRSTRLEN] = "?";
	int ret;

	if (argc > 2)
		gid_index = atoi(argv[2]);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");

	ctx = open_dev(ibdev);
	if (!ok(!!ctx, "open %s", ibdev))
		return 1;
	if (!ok(set_nonblock(ctx->async_fd), "async fd non-blocking"))
		return 1;
	memset(&pa, 0, sizeof(pa));
	ret = ibv_query_port(ctx, 1, &pa);
	if (ret)
		detail("ibv_query_port: %s", strerror(ret));
	else
		detail("state %d active_mtu %d", pa.state, pa.active_mtu);
	ok(!ret && pa.state == IBV_PORT_ACTIVE, "port 1 is ACTIVE");
	if (!ret)
		path_mtu = pa.active_mtu;
	ret = ibv_query_gid(ctx, 1, gid_index, &gid);
	if (ret)
		detail("ibv_query_gid %d: %s", gid_index, strerror(errno));
	inet_ntop(AF_INET6, gid.raw, gid_str, sizeof(gid_str));
	if (!ok(!ret && (gid.global.subnet_prefix || gid.global.interface_id),
		"GID index %d is set (%s)", gid_index, gid_str))
		return 1;

	test_rc_send_sg();
	test_rc_send_imm();
	test_rc_write();
	test_rc_write_imm();
	test_rc_read();
	test_rc_atomics();
	test_rc_inline();
	test_rc_unsignaled();
	test_uc();
	test_ud();
	test_srq_order();
	test_srq_limit();
	test_comp_channel();
	test_bad_lkey();
	test_bad_rkey();
	test_remote_access();
	test_rereg_mr();
	test_cq_shrink();
	test_recv_too_small();
	test_rnr();
	test_wrong_state();
	test_flush();
	test_too_many_sge();
	test_long_chain();
	test_modify_vs_error();

	ret = ibv_close_device(ctx);
	ok(!ret, "close %s", ibdev);
	return tap_done();
}
