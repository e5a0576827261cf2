// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Two sides and RC QP pairs between them (rc_pair.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

#include "rc_pair.h"
#include "tap.h"

struct side sa = { .name = "A" }, sb = { .name = "B" };

/* Data */

uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* A u64 in memory is @want; a detail if not. */
bool u64_is(const uint8_t *p, uint64_t want, const char *what)
{
	uint64_t got = get64(p);

	if (got != want)
		detail("%s is 0x%016llx, want 0x%016llx", what,
		       (unsigned long long)got, (unsigned long long)want);
	return got == want;
}

/* Completions */

/* Poll @s's CQ for one completion for up to @ms. */
bool wait_wc(struct side *s, struct ibv_wc *wc, int ms,
	     const char *what)
{
	long long end = now_ms() + ms;

	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n == 1)
			return true;
		if (n < 0) {
			detail("%s: ibv_poll_cq on %s returned %d", what,
			       s->dev, n);
			return false;
		}
		if (now_ms() > end) {
			detail("%s: no completion within %d ms", what, ms);
			return false;
		}
		usleep(100);
	}
}

/*
 * The next completion of @s's CQ, within @ms, is as expected.  With an
 * error status only wr_id, status and qp_num are defined; with success
 * opcode and byte_len too, unless given as -1.
 */
bool expect_wc(struct side *s, const char *what, uint64_t wr_id,
	       enum ibv_wc_status status, int opcode,
	       long long byte_len, const struct ibv_qp *qp, int ms)
{
	struct ibv_wc wc;
	bool good;

	memset(&wc, 0, sizeof(wc));
	if (!wait_wc(s, &wc, ms, what)) {
		detail("%s: want wr_id 0x%llx status %s", what,
		       (unsigned long long)wr_id, ibv_wc_status_str(status));
		return false;
	}
	good = wc.wr_id == wr_id && wc.status == status &&
	       wc.qp_num == qp->qp_num;
	if (status == IBV_WC_SUCCESS) {
		if (opcode >= 0 && (int)wc.opcode != opcode)
			good = false;
		if (byte_len >= 0 && wc.byte_len != (uint32_t)byte_len)
			good = false;
	}
	if (!good) {
		detail_wc(what, &wc);
		detail("%s: want wr_id 0x%llx status %s (%d) opcode %d byte_len %lld qp_num 0x%x",
		       what, (unsigned long long)wr_id,
		       ibv_wc_status_str(status), status, opcode, byte_len,
		       qp->qp_num);
	}
	return good;
}

/* @s's CQ holds no completion now. */
bool cq_empty(struct side *s, const char *what)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(s->cq, 1, &wc);

	if (n < 0)
		detail("%s: ibv_poll_cq returned %d", what, n);
	else if (n > 0)
		detail_wc(what, &wc);
	return n == 0;
}

/* Throw away what is left on @s's CQ, saying so in TAP comments. */
void drain(struct side *s)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(s->cq, 1, &wc) == 1)
		printf("# %s: leftover completion on %s: wr_id 0x%llx status %s qp_num 0x%x\n",
		       tap_case ? tap_case : "", s->name, (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), wc.qp_num);
}

/* QPs */

const char *state_str(int state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	if (state >= 0 && state < (int)ARRAY_SIZE(names) &&
	    names[state])
		return names[state];
	return "?";
}

/* The QP's state, or -1 if ibv_query_qp fails. */
int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = ibv_query_qp(qp, &a, IBV_QP_STATE, &init);
	if (ret) {
		detail("ibv_query_qp QPN 0x%x: %s", qp->qp_num, strerror(ret));
		return -1;
	}
	return a.qp_state;
}

/* @qp reaches @want within @ms; polled with ibv_query_qp. */
bool wait_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms,
		const char *what)
{
	long long end = now_ms() + ms;
	int state;

	for (;;) {
		state = qp_state(qp);
		if (state == (int)want)
			return true;
		if (state < 0 || now_ms() > end)
			break;
		usleep(1000);
	}
	detail("%s: QP state %s (%d), want %s within %d ms", what,
	       state_str(state), state, state_str(want), ms);
	return false;
}

/* @qp is in @want now. */
bool state_is(struct ibv_qp *qp, enum ibv_qp_state want,
	      const char *what)
{
	int state = qp_state(qp);

	if (state != (int)want)
		detail("%s: QP state %s (%d), want %s", what,
		       state_str(state), state, state_str(want));
	return state == (int)want;
}

struct ibv_qp *make_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = {
			.max_send_wr = QP_DEPTH,
			.max_recv_wr = QP_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		detail("ibv_create_qp on %s: %s", s->dev, strerror(errno));
	return qp;
}

bool modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
	    const struct side *s, const char *to)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret)
		detail("ibv_modify_qp %s QPN 0x%x to %s (mask 0x%x): %s (%d)",
		       s->name, qp->qp_num, to, mask, strerror(ret), ret);
	return !ret;
}

bool to_init(struct ibv_qp *qp, const struct side *s, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = IB_PORT,
		.qp_access_flags = access,
	};

	return modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS, s, "INIT");
}

/* @s's @qp to RTR, connected to QPN @dest_qpn on @peer. */
bool to_rtr(struct ibv_qp *qp, const struct side *s,
	    const struct side *peer, uint32_t dest_qpn, uint32_t rq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = RD_ATOMIC,
		.min_rnr_timer = 1,	/* 0.01 ms */
		.ah_attr = {
			.is_global = 1,
			.grh = {
				.dgid = peer->gid,
				.sgid_index = (uint8_t)s->gid_index,
				.hop_limit = 64,
			},
			.port_num = IB_PORT,
		},
	};

	/* A UC responder has neither READ resources nor RNR NAKs. */
	int rc_only = qp->qp_type == IBV_QPT_UC ? 0 :
		      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	return modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | rc_only,
		      s, "RTR");
}

bool to_rts(struct ibv_qp *qp, const struct side *s,
	    const struct pair_cfg *c, uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = c->timeout,
		.retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry,
		.sq_psn = sq_psn,
		.max_rd_atomic = RD_ATOMIC,
	};

	/* A UC requester waits for no answer: none of the RC attributes. */
	int rc_only = qp->qp_type == IBV_QPT_UC ? 0 :
		      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		      IBV_QP_MAX_QP_RD_ATOMIC;

	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | rc_only, s,
		      "RTS");
}

struct pair_cfg default_cfg(void)
{
	struct pair_cfg c = {
		.a_access = ACC_REMOTE,
		.b_access = ACC_REMOTE,
		.timeout = 14,		/* 67 ms */
		.retry_cnt = 7,
		.rnr_retry = 3,
	};

	return c;
}

/* A fresh QP pair: qa on A and qb on B, connected to each other. */
bool pair_up(struct pair *p, const struct pair_cfg *c)
{
	memset(p, 0, sizeof(*p));
	p->qa = make_qp(&sa);
	p->qb = p->qa ? make_qp(&sb) : NULL;
	if (!p->qb)
		return false;
	if (!to_init(p->qa, &sa, c->a_access) ||
	    !to_init(p->qb, &sb, c->b_access) ||
	    !to_rtr(p->qa, &sa, &sb, p->qb->qp_num, PSN_B) ||
	    !to_rts(p->qa, &sa, c, PSN_A))
		return false;
	if (c->b_init_only)
		return true;
	if (!to_rtr(p->qb, &sb, &sa, p->qa->qp_num, PSN_A))
		return false;
	return c->b_rtr_only || to_rts(p->qb, &sb, c, PSN_B);
}

/* Destroy the pair (a failure is a failed check) and drain both CQs. */
void pair_down(struct pair *p)
{
	bool good = true;
	int ret;

	clear_details();
	ret = p->qa ? ibv_destroy_qp(p->qa) : 0;
	if (ret) {
		detail("ibv_destroy_qp A: %s", strerror(ret));
		good = false;
	}
	ret = p->qb ? ibv_destroy_qp(p->qb) : 0;
	if (ret) {
		detail("ibv_destroy_qp B: %s", strerror(ret));
		good = false;
	}
	if (!good)
		ok(false, "destroy the QP pair");
	/* No completion of a destroyed QP arrives after this. */
	drain(&sa);
	drain(&sb);
	memset(p, 0, sizeof(*p));
	tap_case = NULL;
	clear_details();
}

/* Name a case; both buffers full of CANARY, both CQs empty. */
void case_prepare(const char *name)
{
	tap_case = name;
	clear_details();
	memset(sa.buf, CANARY, BUF_SIZE);
	memset(sb.buf, CANARY, BUF_SIZE);
	drain(&sa);
	drain(&sb);
}

/* Start a case: case_prepare(), then a fresh pair per @c. */
bool case_begin(struct pair *p, const char *name,
		const struct pair_cfg *c)
{
	case_prepare(name);
	if (pair_up(p, c))
		return true;
	ok(false, "set up the QP pair");
	pair_down(p);
	return false;
}

/* Posting */

struct ibv_sge sge_of(const struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)(s->buf + off),
		.length = len,
		.lkey = s->mr->lkey,
	};

	return sg;
}

/* A receive of @len bytes at @off of B's buffer. */
bool post_recv(struct ibv_qp *qp, uint64_t wr_id, size_t off,
	       uint32_t len)
{
	struct ibv_sge sg = sge_of(&sb, off, len);
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sg,
		.num_sge = 1,
	}, *bad = NULL;
	int ret = ibv_post_recv(qp, &wr, &bad);

	if (ret)
		detail("ibv_post_recv B QPN 0x%x wr_id 0x%llx: %s (%d)",
		       qp->qp_num, (unsigned long long)wr_id, strerror(ret),
		       ret);
	return !ret;
}

/* Post @wr (and the WRs chained to it) to @qp. */
bool post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret)
		detail("ibv_post_send QPN 0x%x wr_id 0x%llx: %s (%d), bad_wr wr_id 0x%llx",
		       qp->qp_num, (unsigned long long)wr->wr_id,
		       strerror(ret), ret,
		       bad ? (unsigned long long)bad->wr_id : 0ULL);
	return !ret;
}

/* A signaled WR of @opcode over the one SGE @sg. */
struct ibv_send_wr wr_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			 struct ibv_sge *sg)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sg,
		.num_sge = 1,
		.opcode = opcode,
		.send_flags = IBV_SEND_SIGNALED,
	};

	return wr;
}

/* An RDMA WRITE or READ with @sg, at @off of B's buffer, with @rkey. */
struct ibv_send_wr rdma_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			   struct ibv_sge *sg, size_t off,
			   uint32_t rkey)
{
	struct ibv_send_wr wr = wr_of(wr_id, opcode, sg);

	wr.wr.rdma.remote_addr = (uintptr_t)(sb.buf + off);
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* An atomic into the 8 bytes at ATOMIC_OFF of A's buffer. */
struct ibv_send_wr atomic_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			     struct ibv_sge *sg, size_t off,
			     uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr wr;

	*sg = sge_of(&sa, ATOMIC_OFF, 8);
	wr = wr_of(wr_id, opcode, sg);
	wr.wr.atomic.remote_addr = (uintptr_t)(sb.buf + off);
	wr.wr.atomic.rkey = sb.mr->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

bool side_open(struct side *s, int mr_access)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	void *p;
	int i, n, ret;

	list = ibv_get_device_list(&n);
	if (!list) {
		detail("ibv_get_device_list: %s", strerror(errno));
		return false;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), s->dev))
			break;
	if (i == n) {
		detail("%s not among the %d devices libibverbs found", s->dev,
		       n);
	} else {
		s->ctx = ibv_open_device(list[i]);
		if (!s->ctx)
			detail("ibv_open_device %s: %s", s->dev,
			       strerror(errno));
	}
	ibv_free_device_list(list);
	if (!s->ctx)
		return false;

	memset(&pa, 0, sizeof(pa));
	ret = ibv_query_port(s->ctx, IB_PORT, &pa);
	if (ret) {
		detail("ibv_query_port %s: %s", s->dev, strerror(ret));
		return false;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		detail("%s port %d is %s", s->dev, IB_PORT,
		       ibv_port_state_str(pa.state));
		return false;
	}
	if (ibv_query_gid(s->ctx, IB_PORT, s->gid_index, &s->gid)) {
		detail("ibv_query_gid %s index %d: %s", s->dev, s->gid_index,
		       strerror(errno));
		return false;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd) {
		detail("ibv_alloc_pd %s: %s", s->dev, strerror(errno));
		return false;
	}
	s->cq = ibv_create_cq(s->ctx, CQ_SIZE, NULL, NULL, 0);
	if (!s->cq) {
		detail("ibv_create_cq %s: %s", s->dev, strerror(errno));
		return false;
	}
	if (posix_memalign(&p, 4096, BUF_SIZE)) {
		detail("posix_memalign %d bytes failed", BUF_SIZE);
		return false;
	}
	s->buf = p;
	memset(s->buf, CANARY, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, mr_access);
	if (!s->mr) {
		detail("ibv_reg_mr %s %d bytes access 0x%x: %s", s->dev,
		       BUF_SIZE, mr_access, strerror(errno));
		return false;
	}
	return true;
}

/* Free whatever exists; false if anything fails. */
bool side_close(struct side *s)
{
	bool good = true;
	int ret;

	ret = s->mr ? ibv_dereg_mr(s->mr) : 0;
	if (ret) {
		detail("ibv_dereg_mr %s: %s", s->dev, strerror(ret));
		good = false;
	}
	ret = s->cq ? ibv_destroy_cq(s->cq) : 0;
	if (ret) {
		detail("ibv_destroy_cq %s: %s", s->dev, strerror(ret));
		good = false;
	}
	ret = s->pd ? ibv_dealloc_pd(s->pd) : 0;
	if (ret) {
		detail("ibv_dealloc_pd %s: %s", s->dev, strerror(ret));
		good = false;
	}
	ret = s->ctx ? ibv_close_device(s->ctx) : 0;
	if (ret) {
		detail("ibv_close_device %s: %s", s->dev, strerror(errno));
		good = false;
	}
	free(s->buf);
	s->mr = NULL;
	s->cq = NULL;
	s->pd = NULL;
	s->ctx = NULL;
	s->buf = NULL;
	return good;
}

bool sides_from_args(int argc, char **argv, const char *prog,
		     const char *example)
{
	if (argc != 5 || !parse_index(argv[2], &sa.gid_index) ||
	    !parse_index(argv[4], &sb.gid_index)) {
		fprintf(stderr, "usage: %s DEV_A GID_A DEV_B GID_B\n"
			"  e.g. %s %s\n", prog, prog, example);
		return false;
	}
	sa.dev = argv[1];
	sb.dev = argv[3];
	return true;
}

const char *gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* @dev's port counter @name (hw_counters), or -1 if it cannot be read. */
long long hw_counter(const char *dev, const char *name)
{
	char path[256], b[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%d/hw_counters/%s", dev,
		 IB_PORT, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = 0;
	return strtoll(b, NULL, 10);
}

/* Hold (@on) or release the handling of @dev's received packets. */
bool hold_rx(const char *dev, bool on)
{
	char line[128];
	int fd, len;
	bool done;

	fd = open("/sys/kernel/debug/softrvt/rx_hold", O_WRONLY);
	if (fd < 0) {
		detail("debugfs softrvt/rx_hold: %s", strerror(errno));
		return false;
	}
	len = snprintf(line, sizeof(line), "%s %d\n", dev, on);
	done = write(fd, line, len) == len;
	if (!done)
		detail("rx_hold \"%s %d\": %s", dev, on, strerror(errno));
	close(fd);
	return done;
}

/* A UD QP from RESET to RTS with Q_Key @qkey, sending from PSN @sq_psn. */
bool ud_qp_up(struct ibv_qp *qp, const struct side *s, uint32_t qkey,
	      uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = IB_PORT,
		.qkey = qkey,
	};

	if (!modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_QKEY, s, "INIT"))
		return false;
	a.qp_state = IBV_QPS_RTR;
	if (!modify(qp, &a, IBV_QP_STATE, s, "RTR"))
		return false;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, s, "RTS");
}

/* Close B, then A; a side that opened is a check, one that did not is not. */
void sides_close(void)
{
	struct side *s[] = { &sb, &sa };
	size_t i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		if (s[i]->ctx)
			ok(side_close(s[i]), "close %s: %s", s[i]->name,
			   s[i]->dev);
		else
			side_close(s[i]);
	}
}

/*
 * One of softrvt's driver methods of the QP object that take the QP and
 * one struct, called as any process may call it, without the provider.
 * Return: 0 or the errno.
 */
int qp_method_raw(struct ibv_qp *qp, uint16_t method, uint16_t qp_attr,
		  uint16_t wr_attr, const void *wr, uint16_t len)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[2];
	} cmd = {
		.hdr = {
			.length = sizeof(cmd),
			.object_id = UVERBS_OBJECT_QP,
			.method_id = method,
			.num_attrs = 2,
		},
		.attrs = {
			{ .attr_id = qp_attr, .data = qp->handle },
			{ .attr_id = wr_attr, .len = len,
			  .data = (uintptr_t)wr },
		},
	};

	return ioctl(qp->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd) ? errno : 0;
}
