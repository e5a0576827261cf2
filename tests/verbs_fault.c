// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_fault: every verb and the connection setup under injected
 * allocation failures.
 *
 * Kernel fault injection (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC), scoped
 * to this task, fails the allocations the kernel makes on its behalf.  Each
 * step below makes the objects it needs without injection, then runs one
 * verb (create, modify, resize, post or destroy of a context, PD, MR, CQ,
 * SRQ, AH or QP of each type in each state; the provider maps the rings
 * in the same call) with /proc/thread-self/fail-nth set to k, for k = 1,
 * 2, ... until the verb completes without reaching its k-th allocation.
 * Whenever the injected failure made the verb fail, it must have returned
 * an errno, and the same verb run again without injection must succeed:
 * the failure left nothing half done.  Everything is destroyed after each
 * try, without injection, and must go.  Then an RC connection between the
 * two devices moves data, checked.
 *
 * The rdma_cm part runs the whole connection setup (event channel, IDs,
 * bind, listen, address and route resolution, QPs, connect, accept, a
 * message each way, disconnect) with the k-th allocation failed, for k =
 * 1, 2, ... until the whole sequence succeeds without reaching it; after
 * each failed try everything is torn down and the next try starts clean.
 *
 * With -r ROUNDS, the steps also run ROUNDS times with a probability of
 * failure per allocation instead (task-filter, make-it-fail), so that an
 * error path itself meets failures.
 *
 * Leaks and kernel splats are for the suite's kmemleak and dmesg checks.
 *
 * usage: verbs_fault [-r ROUNDS] [-p PERCENT] [-c CM_STRIDE]
 *                    DEV_A DEV_B NETNS_A ADDR_A NETNS_B ADDR_B
 * DEV_A's GID for ADDR_A and DEV_B's for ADDR_B are found in sysfs; the
 * rdma_cm client runs in NETNS_A, the listener in NETNS_B (paths such as
 * /run/netns/nsf1).  Needs root and the debugfs of fault injection.
 * Prints TAP; exits 1 on a failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"

#define IB_PORT		1
#define MAX_TRIES	5000	/* allocations one verb may make */
#define CM_PORT		18600
#define CM_WAIT_MS	10000
#define MSG		64
#define ACC_ALL		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static const char *dev_a, *dev_b, *ns_a, *ns_b, *addr_a, *addr_b;
static unsigned int rounds, percent = 3, cm_stride = 1;

/* ---- Fault injection --------------------------------------------------- */

static int nth_fd = -1, mif_fd = -1;

struct knob {
	const char *path, *value;
	char saved[32];
	bool set;
};

static struct knob knobs[] = {
	{ .path = "/sys/kernel/debug/failslab/ignore-gfp-wait", .value = "N" },
	{ .path = "/sys/kernel/debug/failslab/verbose", .value = "0" },
	{ .path = "/sys/kernel/debug/failslab/task-filter", .value = "Y" },
	{ .path = "/sys/kernel/debug/failslab/interval", .value = "1" },
	{ .path = "/sys/kernel/debug/failslab/times", .value = "-1" },
	{ .path = "/sys/kernel/debug/failslab/space", .value = "0" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", .value = "N" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", .value = "N" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/min-order", .value = "0" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/verbose", .value = "0" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/task-filter", .value = "Y" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/interval", .value = "1" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/times", .value = "-1" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/space", .value = "0" },
	/* Last: only this task fails, and only while make-it-fail is 1. */
	{ .path = "/sys/kernel/debug/failslab/probability", .value = "0" },
	{ .path = "/sys/kernel/debug/fail_page_alloc/probability", .value = "0" },
};
#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))
#define K_PROB_SLAB (NKNOBS - 2)
#define K_PROB_PAGE (NKNOBS - 1)

static bool write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY);
	bool good;

	if (fd < 0)
		return false;
	good = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return good;
}

static void restore_knobs(void)
{
	size_t i;

	if (nth_fd >= 0)
		pwrite(nth_fd, "0", 1, 0);
	if (mif_fd >= 0)
		pwrite(mif_fd, "0", 1, 0);
	for (i = NKNOBS; i-- > 0;)
		if (knobs[i].set)
			write_str(knobs[i].path, knobs[i].saved);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	restore_knobs();
	printf("not ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nBail out!\n");
	exit(1);
}

static void set_knobs(void)
{
	size_t i;

	for (i = 0; i < NKNOBS; i++) {
		int fd = open(knobs[i].path, O_RDONLY);
		ssize_t n;

		if (fd < 0)
			die("%s: %s (CONFIG_FAULT_INJECTION_DEBUG_FS?)",
			    knobs[i].path, strerror(errno));
		n = read(fd, knobs[i].saved, sizeof(knobs[i].saved) - 1);
		close(fd);
		knobs[i].saved[n > 0 ? n : 0] = 0;
		if (!write_str(knobs[i].path, knobs[i].value))
			die("write %s: %s", knobs[i].path, strerror(errno));
		knobs[i].set = true;
	}
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	mif_fd = open("/proc/self/make-it-fail", O_RDWR);
	if (nth_fd < 0 || mif_fd < 0)
		die("fail-nth or make-it-fail: %s", strerror(errno));
}

/* Fail the @k-th allocation of this thread from now on. */
static void arm(unsigned int k)
{
	char b[16];
	int n = snprintf(b, sizeof(b), "%u", k);

	if (pwrite(nth_fd, b, n, 0) != n)
		die("fail-nth: %s", strerror(errno));
}

/* Stop injecting.  Return: whether the armed failure was injected. */
static bool disarm(void)
{
	static char b[16];
	ssize_t n = pread(nth_fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		die("read fail-nth: %s", strerror(errno));
	b[n] = 0;
	if (atoi(b) == 0)
		return true;
	if (pwrite(nth_fd, "0", 1, 0) != 1)
		die("fail-nth: %s", strerror(errno));
	return false;
}

static void random_faults(bool on)
{
	if (pwrite(mif_fd, on ? "1" : "0", 1, 0) != 1)
		die("make-it-fail: %s", strerror(errno));
}

/*
 * Nothing of ours may fault a page in while a failure is armed: the fault
 * would meet it instead of the verb.  Lock what is mapped, map ahead, and
 * keep malloc off brk and mmap.
 */
static void no_page_faults(void)
{
	volatile char stack[256 * 1024];
	void *p;

	memset((char *)stack, 1, sizeof(stack));
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, -1);
	mallopt(M_TOP_PAD, 64 << 20);
	p = malloc(32 << 20);
	free(p);
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		die("mlockall: %s", strerror(errno));
}

/* ---- Objects ----------------------------------------------------------- */

static struct ibv_context *ctx_a, *ctx_b;	/* open throughout */
static union ibv_gid gid_a, gid_b;
static int gidx_a, gidx_b;

/* What a step makes; teardown() destroys whatever is there. */
static struct {
	struct ibv_context *ctx;	/* a second context of A */
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_qp *qp;
	int qp_type;
	bool qp_srq;
	uint8_t *buf;
} o;

#define BUF_LEN (1 << 20)

static struct ibv_device **dev_list;
static struct ibv_device *ibdev_a, *ibdev_b;

static struct ibv_device *find_dev(const char *name)
{
	int i;

	for (i = 0; dev_list && dev_list[i]; i++)
		if (!strcmp(ibv_get_device_name(dev_list[i]), name))
			return dev_list[i];
	return NULL;
}

/* Destroy what the step made, without injection; each must go. */
static bool teardown(void)
{
	bool good = true;
	int ret;

#define GONE(obj, call) do {						\
		if (obj) {						\
			ret = call;					\
			if (ret) {					\
				detail(#call ": %s", strerror(ret));	\
				good = false;				\
			}						\
			obj = NULL;					\
		}							\
	} while (0)
	GONE(o.qp, ibv_destroy_qp(o.qp));
	GONE(o.srq, ibv_destroy_srq(o.srq));
	GONE(o.ah, ibv_destroy_ah(o.ah));
	GONE(o.cq, ibv_destroy_cq(o.cq));
	GONE(o.mr, ibv_dereg_mr(o.mr));
	GONE(o.pd, ibv_dealloc_pd(o.pd));
	GONE(o.ctx, ibv_close_device(o.ctx));
#undef GONE
	return good;
}

/* Setup helpers: without injection, and a failure is the test's. */
static void need(bool cond, const char *what)
{
	if (!cond)
		die("setup: %s: %s", what, strerror(errno));
}

static void mk_pd(void) { o.pd = ibv_alloc_pd(ctx_a); need(o.pd, "PD"); }
static void mk_cq(void)
{
	o.cq = ibv_create_cq(ctx_a, 16, NULL, NULL, 0);
	need(o.cq, "CQ");
}
static void mk_mr(void)
{
	o.mr = ibv_reg_mr(o.pd, o.buf, 4096, ACC_ALL);
	need(o.mr, "MR");
}
static void mk_srq(void)
{
	struct ibv_srq_init_attr a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};

	o.srq = ibv_create_srq(o.pd, &a);
	need(o.srq, "SRQ");
}

static struct ibv_qp *new_qp(void)
{
	struct ibv_qp_init_attr a = {
		.send_cq = o.cq, .recv_cq = o.cq,
		.srq = o.qp_srq ? o.srq : NULL,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = o.qp_type,
	};

	return ibv_create_qp(o.pd, &a);
}

/*
 * The attributes of each transition; the path leads to B.  SQD to RTS
 * takes none (IBA 11.2.4.2 table 91), so that @from matters.
 */
static int to_state(struct ibv_qp *qp, int type, int from, int state)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	if (from == IBV_QPS_SQD)
		return ibv_modify_qp(qp, &a, mask);
	switch (state) {
	case IBV_QPS_INIT:
		a.port_num = IB_PORT;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (type == IBV_QPT_UD) {
			a.qkey = 0x11111111;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = type == IBV_QPT_RC ? ACC_ALL :
					    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (type == IBV_QPT_UD)
			break;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = 0xfed000;
		a.rq_psn = 0x100;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = IB_PORT;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.sgid_index = gidx_a;
		a.ah_attr.grh.dgid = gid_b;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		a.sq_psn = 0x200;
		mask |= IBV_QP_SQ_PSN;
		if (type == IBV_QPT_RC) {
			a.timeout = 14;
			a.retry_cnt = 1;
			a.rnr_retry = 1;
			a.max_rd_atomic = 4;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static const int path[] = {
	IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_RTS,
	IBV_QPS_ERR, IBV_QPS_RESET,
};

/* ---- Steps ------------------------------------------------------------- */

struct step {
	char name[64];
	void (*setup)(const struct step *s);
	int (*action)(const struct step *s);	/* 0 or an errno */
	int type;		/* QP type */
	int hop;		/* index in path[] of the transition */
	bool srq;
};

static int err_of(int ret) { return ret < 0 ? errno : ret; }
static int ptr_err(const void *p) { return p ? 0 : (errno ? errno : -1); }

static void su_none(const struct step *s) { (void)s; }
static void su_pd(const struct step *s) { (void)s; mk_pd(); }
static void su_cq(const struct step *s) { (void)s; mk_cq(); }
static void su_srq(const struct step *s) { (void)s; mk_pd(); mk_srq(); }

/* What a QP of @s needs: PD, CQ and, for one on an SRQ, the SRQ. */
static void su_qp_base(const struct step *s)
{
	mk_pd();
	mk_cq();
	o.qp_type = s->type;
	o.qp_srq = s->srq;
	if (s->srq)
		mk_srq();
}

static void su_qp(const struct step *s)
{
	int i;

	su_qp_base(s);
	o.qp = new_qp();
	need(o.qp, "QP");
	for (i = 0; i < s->hop; i++)
		need(!to_state(o.qp, s->type, i ? path[i - 1] : IBV_QPS_RESET,
			       path[i]), "QP state");
}

static void su_qp_rts(const struct step *s)
{
	struct step t = *s;

	t.hop = 3;
	su_qp(&t);
	mk_mr();
}

static void su_all(const struct step *s)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = IB_PORT,
		.grh = { .dgid = gid_b, .sgid_index = gidx_a,
			 .hop_limit = 64 },
	};

	su_qp_rts(s);
	o.ah = ibv_create_ah(o.pd, &aa);
	need(o.ah, "AH");
}

static int ac_open(const struct step *s)
{
	(void)s;
	errno = 0;
	o.ctx = ibv_open_device(ibdev_a);
	return ptr_err(o.ctx);
}

static int ac_pd(const struct step *s)
{
	(void)s;
	o.pd = ibv_alloc_pd(ctx_a);
	return ptr_err(o.pd);
}

static int ac_mr(const struct step *s)
{
	o.mr = ibv_reg_mr(o.pd, o.buf, s->type, ACC_ALL);
	return ptr_err(o.mr);
}

static int ac_cq(const struct step *s)
{
	(void)s;
	o.cq = ibv_create_cq(ctx_a, 16, NULL, NULL, 0);
	return ptr_err(o.cq);
}

static int ac_resize_cq(const struct step *s)
{
	return err_of(ibv_resize_cq(o.cq, s->type));
}

static int ac_srq(const struct step *s)
{
	struct ibv_srq_init_attr a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};

	(void)s;
	o.srq = ibv_create_srq(o.pd, &a);
	return ptr_err(o.srq);
}

static int ac_modify_srq(const struct step *s)
{
	struct ibv_srq_attr a = { .max_wr = 64, .srq_limit = 4 };

	return err_of(ibv_modify_srq(o.srq, &a, s->type));
}

static int ac_ah(const struct step *s)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = IB_PORT,
		.grh = { .dgid = gid_b, .sgid_index = gidx_a,
			 .hop_limit = 64 },
	};

	(void)s;
	o.ah = ibv_create_ah(o.pd, &aa);
	return ptr_err(o.ah);
}

static int ac_qp(const struct step *s)
{
	(void)s;
	o.qp = new_qp();
	return ptr_err(o.qp);
}

static int ac_modify_qp(const struct step *s)
{
	return err_of(to_state(o.qp, s->type,
			       s->hop ? path[s->hop - 1] : IBV_QPS_RESET,
			       path[s->hop]));
}

static int ac_post_send(const struct step *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)o.buf, .length = MSG, .lkey = o.mr->lkey,
	};
	struct ibv_send_wr wr[2], *bad;

	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	if (s->type == IBV_QPT_UD) {
		wr[0].wr.ud.ah = o.ah;
		wr[0].wr.ud.remote_qpn = 0xfed000;
		wr[0].wr.ud.remote_qkey = 0x11111111;
	}
	wr[1] = wr[0];
	wr[1].wr_id = 2;
	wr[0].next = &wr[1];
	return err_of(ibv_post_send(o.qp, wr, &bad));
}

static int ac_post_recv(const struct step *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)o.buf + 4096 - 2048, .length = 2048,
		.lkey = o.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	(void)s;
	if (o.qp_srq)
		return err_of(ibv_post_srq_recv(o.srq, &wr, &bad));
	return err_of(ibv_post_recv(o.qp, &wr, &bad));
}

/* Destroy one object; whatever else the setup made stays. */
static int ac_destroy(const struct step *s)
{
	int ret;

#define DESTROY(obj, call) do {								ret = call;								if (!ret)									obj = NULL;							return ret;							} while (0)
	switch (s->hop) {
	case 0:
		DESTROY(o.qp, ibv_destroy_qp(o.qp));
	case 1:
		DESTROY(o.ah, ibv_destroy_ah(o.ah));
	case 2:
		DESTROY(o.mr, ibv_dereg_mr(o.mr));
	case 3:
		DESTROY(o.srq, ibv_destroy_srq(o.srq));
	case 4:
		DESTROY(o.cq, ibv_destroy_cq(o.cq));
	default:
		DESTROY(o.pd, ibv_dealloc_pd(o.pd));
	}
#undef DESTROY
}

/* A context closed with everything still in it: the kernel cleans up. */
static void su_ctx_full(const struct step *s)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	(void)s;
	o.ctx = ibv_open_device(ibdev_a);
	need(o.ctx, "context");
	pd = ibv_alloc_pd(o.ctx);
	need(pd, "PD");
	cq = ibv_create_cq(o.ctx, 16, NULL, NULL, 0);
	need(cq, "CQ");
	need(ibv_reg_mr(pd, o.buf, 4096, ACC_ALL), "MR");
	need(ibv_create_srq(pd, &sa), "SRQ");
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	need(qp, "QP");
	need(!to_state(qp, IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT) &&
	     !to_state(qp, IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR) &&
	     !to_state(qp, IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS),
	     "QP to RTS");
}

static int ac_close(const struct step *s)
{
	int ret;

	(void)s;
	ret = ibv_close_device(o.ctx);
	if (!ret)
		o.ctx = NULL;
	return ret;
}

static struct step steps[128];
static int nsteps;

static void add(const char *name, void (*setup)(const struct step *),
		int (*action)(const struct step *), int type, int hop,
		bool srq)
{
	struct step *s = &steps[nsteps++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->setup = setup;
	s->action = action;
	s->type = type;
	s->hop = hop;
	s->srq = srq;
}

static const char *type_name(int t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD";
}

static const char *state_name(int s)
{
	static const char *const n[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	return n[s];
}

static void make_steps(void)
{
	static const struct { int type; bool srq; } qps[] = {
		{ IBV_QPT_RC, false }, { IBV_QPT_UC, false },
		{ IBV_QPT_UD, false }, { IBV_QPT_RC, true },
	};
	char name[64];
	size_t i;
	int h;

	add("open a context", su_none, ac_open, 0, 0, false);
	add("allocate a PD", su_none, ac_pd, 0, 0, false);
	add("register a 4 KiB MR", su_pd, ac_mr, 4096, 0, false);
	add("register a 1 MiB MR", su_pd, ac_mr, BUF_LEN, 0, false);
	add("create a CQ", su_none, ac_cq, 0, 0, false);
	add("resize a CQ up", su_cq, ac_resize_cq, 256, 0, false);
	add("resize a CQ down", su_cq, ac_resize_cq, 4, 0, false);
	add("create an SRQ", su_pd, ac_srq, 0, 0, false);
	add("arm an SRQ's limit", su_srq, ac_modify_srq, IBV_SRQ_LIMIT, 0,
	    false);
	add("resize an SRQ", su_srq, ac_modify_srq, IBV_SRQ_MAX_WR, 0, false);
	add("create an AH", su_pd, ac_ah, 0, 0, false);
	for (i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
		const char *t = type_name(qps[i].type);
		const char *x = qps[i].srq ? " on an SRQ" : "";

		snprintf(name, sizeof(name), "create a %s QP%s", t, x);
		add(name, su_qp_base, ac_qp, qps[i].type, 0, qps[i].srq);
		for (h = 0; h < (int)(sizeof(path) / sizeof(path[0])); h++) {
			snprintf(name, sizeof(name), "%s QP%s %s to %s", t, x,
				 h ? state_name(path[h - 1]) : "RESET",
				 state_name(path[h]));
			add(name, su_qp, ac_modify_qp, qps[i].type, h,
			    qps[i].srq);
		}
		snprintf(name, sizeof(name), "post sends on a %s QP%s", t, x);
		add(name, qps[i].type == IBV_QPT_UD ? su_all : su_qp_rts,
		    ac_post_send, qps[i].type, 0, qps[i].srq);
		snprintf(name, sizeof(name), "post a receive on a %s QP%s", t,
			 x);
		add(name, su_qp_rts, ac_post_recv, qps[i].type, 0, qps[i].srq);
		snprintf(name, sizeof(name), "destroy a %s QP%s in RTS", t, x);
		add(name, su_all, ac_destroy, qps[i].type, 0, qps[i].srq);
	}
	add("destroy an AH", su_all, ac_destroy, IBV_QPT_UD, 1, false);
	add("deregister an MR a QP's PD holds", su_all, ac_destroy,
	    IBV_QPT_RC, 2, false);
	add("destroy an SRQ", su_srq, ac_destroy, 0, 3, false);
	add("destroy a CQ", su_cq, ac_destroy, 0, 4, false);
	add("deallocate a PD", su_pd, ac_destroy, 0, 5, false);
	add("close a context holding a PD, CQ, MR, SRQ and RC QP",
	    su_ctx_full, ac_close, 0, 0, false);
}

static unsigned long n_injected, n_failed, n_absorbed;
static int errnos[4096];

/* One step, failing its k-th allocation for k = 1, 2, ... */
static void run_step(const struct step *s)
{
	unsigned int k, fails = 0, points = 0;
	bool good = true;
	int ret;

	tap_case = s->name;
	clear_details();
	for (k = 1; k <= MAX_TRIES; k++) {
		bool inj;

		s->setup(s);
		arm(k);
		ret = s->action(s);
		inj = disarm();
		if (!inj) {
			/* k is past the verb's allocations: done. */
			if (ret) {
				detail("fails without injection: %s",
				       strerror(ret));
				good = false;
			}
			good &= teardown();
			break;
		}
		points++;
		n_injected++;
		if (ret) {
			fails++;
			n_failed++;
			if (ret > 0 && ret < 4096)
				errnos[ret]++;
			if (ret <= 0) {
				detail("allocation %u: failed without an errno (%d)",
				       k, ret);
				good = false;
			}
			/* Nothing half done: the same verb works now. */
			ret = s->action(s);
			if (ret) {
				detail("allocation %u failed it; again without injection: %s",
				       k, strerror(ret));
				good = false;
			}
		} else {
			n_absorbed++;
		}
		good &= teardown();
		if (!good)
			break;
	}
	if (k > MAX_TRIES) {
		detail("still allocating after %u", MAX_TRIES);
		good = false;
	}
	ok(good, "%u allocations failed one at a time, %u made it fail with an errno and it worked again",
	   points, fails);
	tap_case = NULL;
}

/* The same steps, with allocations failing at random, make-it-fail. */
static void run_random(unsigned int n)
{
	char pct[8];
	unsigned int r;
	int i, ret, fails = 0;
	bool good = true;

	snprintf(pct, sizeof(pct), "%u", percent);
	if (!write_str(knobs[K_PROB_SLAB].path, pct) ||
	    !write_str(knobs[K_PROB_PAGE].path, pct))
		die("probability: %s", strerror(errno));
	tap_case = "random failures";
	for (r = 0; r < n && good; r++) {
		for (i = 0; i < nsteps && good; i++) {
			const struct step *s = &steps[i];

			s->setup(s);
			random_faults(true);
			ret = s->action(s);
			random_faults(false);
			if (ret) {
				fails++;
				ret = s->action(s);
				if (ret) {
					detail("%s: again without injection: %s",
					       s->name, strerror(ret));
					good = false;
				}
			}
			good &= teardown();
		}
	}
	write_str(knobs[K_PROB_SLAB].path, "0");
	write_str(knobs[K_PROB_PAGE].path, "0");
	ok(good, "%u rounds of %d verbs with %u%% of allocations failing: %d failed, each worked again",
	   r, nsteps, percent, fails);
	tap_case = NULL;
}

/* ---- After the injection: data over an RC connection ------------------- */

static bool wait_cq(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	long long end = now_ms() + 10000;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && now_ms() < end)
		usleep(200);
	if (n != 1) {
		detail("%s: no completion", what);
		return false;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		detail_wc(what, wc);
		return false;
	}
	return true;
}

static int connect_rc(struct ibv_qp *qp, int sgid, const union ibv_gid *dgid,
		      uint32_t dqpn)
{
	struct ibv_qp_attr a;

	if (to_state(qp, IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x300;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = IB_PORT;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = sgid;
	a.ah_attr.grh.dgid = *dgid;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x300;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void data_after(void)
{
	struct ibv_pd *pa = ibv_alloc_pd(ctx_a), *pb = ibv_alloc_pd(ctx_b);
	struct ibv_cq *ca = ibv_create_cq(ctx_a, 8, NULL, NULL, 0);
	struct ibv_cq *cb = ibv_create_cq(ctx_b, 8, NULL, NULL, 0);
	static uint8_t sb[8192], rb[8192], want[8192];
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_mr *ma, *mb;
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc;
	bool good;

	need(pa && pb && ca && cb, "PD and CQ");
	ma = ibv_reg_mr(pa, sb, sizeof(sb), IBV_ACCESS_LOCAL_WRITE);
	mb = ibv_reg_mr(pb, rb, sizeof(rb), IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = ca;
	qa = ibv_create_qp(pa, &ia);
	ia.send_cq = ia.recv_cq = cb;
	qb = ibv_create_qp(pb, &ia);
	need(ma && mb && qa && qb, "MR and QP");
	need(!connect_rc(qa, gidx_a, &gid_b, qb->qp_num) &&
	     !connect_rc(qb, gidx_b, &gid_a, qa->qp_num), "connect");
	pattern(sb, sizeof(sb), 77);
	memcpy(want, sb, sizeof(want));
	{
		struct ibv_sge rs = { .addr = (uintptr_t)rb,
				      .length = sizeof(rb), .lkey = mb->lkey };
		struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &rs,
					  .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)sb,
				      .length = sizeof(sb), .lkey = ma->lkey };
		struct ibv_send_wr sw = { .wr_id = 8, .sg_list = &ss,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *sbad;

		need(!ibv_post_recv(qb, &rw, &rbad) &&
		     !ibv_post_send(qa, &sw, &sbad), "post");
	}
	tap_case = "after injection";
	good = wait_cq(ca, &wc, "SEND on A") && wait_cq(cb, &wc, "receive on B");
	good = good && wc.byte_len == sizeof(sb) &&
	       same(rb, want, sizeof(rb), "received bytes");
	ok(good, "an RC SEND of 8 KiB from %s to %s arrives intact", dev_a,
	   dev_b);
	tap_case = NULL;
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(ma);
	ibv_dereg_mr(mb);
	ibv_destroy_cq(ca);
	ibv_destroy_cq(cb);
	ibv_dealloc_pd(pa);
	ibv_dealloc_pd(pb);
}

/* ---- rdma_cm ----------------------------------------------------------- */

static struct {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *cid, *sid;
	bool c_qp, s_qp;
	struct ibv_mr *cmr, *smr;
	uint8_t cbuf[2 * MSG], sbuf[2 * MSG];
	int self_ns, a_ns, b_ns;
	bool c_up, s_up;
} cm;

static int enter_ns(int fd)
{
	return setns(fd, CLONE_NEWNET) ? errno : 0;
}

/* The next event of the channel, acknowledged; ESTABLISHED etc. noted. */
static int cm_event(enum rdma_cm_event_type want, struct rdma_cm_id **id,
		    const char *what)
{
	struct pollfd p = { .fd = cm.ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int ret;

	for (;;) {
		ret = poll(&p, 1, CM_WAIT_MS);
		if (ret < 0)
			return errno;
		if (!ret) {
			detail("%s: no %s within %d ms", what,
			       rdma_event_str(want), CM_WAIT_MS);
			return ETIMEDOUT;
		}
		if (rdma_get_cm_event(cm.ch, &ev))
			return errno ? errno : EIO;
		got = ev->event;
		/*
		 * Only the event asked for brings a new ID: a client's
		 * REJECTED, say, names the client's, which teardown would
		 * then destroy twice.
		 */
		if (id && got == want)
			*id = ev->id;
		if (got == RDMA_CM_EVENT_ESTABLISHED) {
			if (ev->id == cm.cid)
				cm.c_up = true;
			else
				cm.s_up = true;
		}
		ret = ev->status;
		rdma_ack_cm_event(ev);
		if (got == want)
			return 0;
		if (got == RDMA_CM_EVENT_ESTABLISHED &&
		    want == RDMA_CM_EVENT_ESTABLISHED)
			return 0;
		if (got == RDMA_CM_EVENT_ESTABLISHED ||
		    got == RDMA_CM_EVENT_DISCONNECTED ||
		    got == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			continue;
		detail("%s: %s (status %d), want %s", what,
		       rdma_event_str(got), ret, rdma_event_str(want));
		return ECONNABORTED;
	}
}

static int cm_qp(struct rdma_cm_id *id, bool *made)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	};

	if (rdma_create_qp(id, NULL, &ia))
		return errno ? errno : EIO;
	*made = true;
	return 0;
}

static int cm_post_recv(struct rdma_cm_id *id, struct ibv_mr *mr,
			uint8_t *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf + MSG, .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(id->qp, &wr, &bad);
}

static int cm_send(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(id->qp, &wr, &bad);
}

/* Both completions of one side: its SEND and its receive. */
static int cm_wait(struct rdma_cm_id *id, const char *what)
{
	long long end = now_ms() + CM_WAIT_MS;
	int seen = 0, n;
	struct ibv_wc wc;

	while (seen < 2 && now_ms() < end) {
		n = ibv_poll_cq(id->recv_cq, 1, &wc);
		if (!n && id->send_cq != id->recv_cq)
			n = ibv_poll_cq(id->send_cq, 1, &wc);
		if (n < 0)
			return EIO;
		if (!n) {
			usleep(200);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			detail_wc(what, &wc);
			return EIO;
		}
		seen++;
	}
	if (seen < 2) {
		detail("%s: %d of 2 completions", what, seen);
		return ETIMEDOUT;
	}
	return 0;
}

static int cm_sequence(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(CM_PORT) };
	struct sockaddr_in ca = { .sin_family = AF_INET };
	struct rdma_conn_param param = { .responder_resources = 1,
					 .initiator_depth = 1,
					 .retry_count = 7,
					 .rnr_retry_count = 7 };
	int ret;

	inet_pton(AF_INET, addr_b, &sa.sin_addr);
	inet_pton(AF_INET, addr_a, &ca.sin_addr);
	cm.ch = rdma_create_event_channel();
	if (!cm.ch)
		return errno ? errno : EIO;
	if ((ret = enter_ns(cm.b_ns)))
		return ret;
	if (rdma_create_id(cm.ch, &cm.lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(cm.lid, (struct sockaddr *)&sa) ||
	    rdma_listen(cm.lid, 1))
		return errno ? errno : EIO;
	if ((ret = enter_ns(cm.a_ns)))
		return ret;
	if (rdma_create_id(cm.ch, &cm.cid, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cm.cid, (struct sockaddr *)&ca,
			      (struct sockaddr *)&sa, 5000))
		return errno ? errno : EIO;
	if ((ret = cm_event(RDMA_CM_EVENT_ADDR_RESOLVED, NULL, "client")))
		return ret;
	if (rdma_resolve_route(cm.cid, 5000))
		return errno ? errno : EIO;
	if ((ret = cm_event(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, "client")))
		return ret;
	if ((ret = cm_qp(cm.cid, &cm.c_qp)))
		return ret;
	cm.cmr = ibv_reg_mr(cm.cid->qp->pd, cm.cbuf, sizeof(cm.cbuf),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!cm.cmr)
		return errno ? errno : EIO;
	if ((ret = cm_post_recv(cm.cid, cm.cmr, cm.cbuf)))
		return ret;
	if (rdma_connect(cm.cid, &param))
		return errno ? errno : EIO;
	if ((ret = cm_event(RDMA_CM_EVENT_CONNECT_REQUEST, &cm.sid,
			    "listener")))
		return ret;
	if ((ret = cm_qp(cm.sid, &cm.s_qp)))
		return ret;
	cm.smr = ibv_reg_mr(cm.sid->qp->pd, cm.sbuf, sizeof(cm.sbuf),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!cm.smr)
		return errno ? errno : EIO;
	if ((ret = cm_post_recv(cm.sid, cm.smr, cm.sbuf)))
		return ret;
	if (rdma_accept(cm.sid, &param))
		return errno ? errno : EIO;
	while (!cm.c_up || !cm.s_up)
		if ((ret = cm_event(RDMA_CM_EVENT_ESTABLISHED, NULL,
				    "both sides")))
			return ret;
	pattern(cm.cbuf, MSG, 1);
	pattern(cm.sbuf, MSG, 2);
	if ((ret = cm_send(cm.cid, cm.cmr, cm.cbuf)) ||
	    (ret = cm_send(cm.sid, cm.smr, cm.sbuf)) ||
	    (ret = cm_wait(cm.cid, "client")) ||
	    (ret = cm_wait(cm.sid, "server")))
		return ret;
	if (memcmp(cm.cbuf + MSG, cm.sbuf, MSG) ||
	    memcmp(cm.sbuf + MSG, cm.cbuf, MSG)) {
		detail("the messages differ");
		return EBADMSG;
	}
	if (rdma_disconnect(cm.cid))
		return errno ? errno : EIO;
	return 0;
}

/* Tear down whatever the sequence made; without injection. */
static bool cm_teardown(void)
{
	bool good = true;

	enter_ns(cm.self_ns);
	if (cm.cmr && ibv_dereg_mr(cm.cmr))
		good = false;
	if (cm.smr && ibv_dereg_mr(cm.smr))
		good = false;
	if (cm.c_qp)
		rdma_destroy_qp(cm.cid);
	if (cm.s_qp)
		rdma_destroy_qp(cm.sid);
	if (cm.sid && rdma_destroy_id(cm.sid))
		good = false;
	if (cm.cid && rdma_destroy_id(cm.cid))
		good = false;
	if (cm.lid && rdma_destroy_id(cm.lid))
		good = false;
	if (cm.ch)
		rdma_destroy_event_channel(cm.ch);
	if (!good)
		detail("rdma_cm teardown failed: %s", strerror(errno));
	cm.cmr = cm.smr = NULL;
	cm.c_qp = cm.s_qp = cm.c_up = cm.s_up = false;
	cm.sid = cm.cid = cm.lid = NULL;
	cm.ch = NULL;
	return good;
}

static void run_cm(void)
{
	unsigned int k, points = 0, fails = 0;
	bool good = true;
	int ret;

	cm.self_ns = open("/proc/self/ns/net", O_RDONLY);
	cm.a_ns = open(ns_a, O_RDONLY);
	cm.b_ns = open(ns_b, O_RDONLY);
	if (cm.self_ns < 0 || cm.a_ns < 0 || cm.b_ns < 0)
		die("namespaces: %s", strerror(errno));
	tap_case = "rdma_cm";
	clear_details();
	ret = cm_sequence();
	good = !ret && cm_teardown();
	if (!ok(good, "connection, a message each way, disconnection (%s)",
		ret ? strerror(ret) : "no injection"))
		return;
	for (k = 1; k <= 20 * MAX_TRIES; k += cm_stride) {
		bool inj;

		arm(k);
		ret = cm_sequence();
		inj = disarm();
		if (ret && !inj) {
			detail("fails without injection: %s", strerror(ret));
			good = false;
		}
		good &= cm_teardown();
		if (!inj || !good)
			break;
		points++;
		fails += !!ret;
	}
	if (good) {
		/* And it all works once the injection stops. */
		ret = cm_sequence();
		good = !ret && cm_teardown();
		if (ret)
			detail("after the injection: %s", strerror(ret));
	}
	ok(good, "the whole connection setup with allocation k failed, k = 1..%u (every %u): %u failed cleanly, then it works",
	   k, cm_stride, fails);
	tap_case = NULL;
}

int main(int argc, char **argv)
{
	int c, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "r:p:c:")) != -1) {
		switch (c) {
		case 'r': rounds = strtoul(optarg, NULL, 0); break;
		case 'p': percent = strtoul(optarg, NULL, 0); break;
		case 'c': cm_stride = strtoul(optarg, NULL, 0) ?: 1; break;
		default: return 2;
		}
	}
	if (argc - optind != 6) {
		fprintf(stderr, "usage: verbs_fault [-r ROUNDS] [-p PERCENT] [-c CM_STRIDE] DEV_A DEV_B NETNS_A ADDR_A NETNS_B ADDR_B\n");
		return 2;
	}
	dev_a = argv[optind];
	dev_b = argv[optind + 1];
	ns_a = argv[optind + 2];
	addr_a = argv[optind + 3];
	ns_b = argv[optind + 4];
	addr_b = argv[optind + 5];

	dev_list = ibv_get_device_list(NULL);
	ibdev_a = find_dev(dev_a);
	ibdev_b = find_dev(dev_b);
	ctx_a = ibdev_a ? ibv_open_device(ibdev_a) : NULL;
	ctx_b = ibdev_b ? ibv_open_device(ibdev_b) : NULL;
	if (!ctx_a || !ctx_b)
		die("open %s and %s", dev_a, dev_b);
	gidx_a = find_gid(dev_a, addr_a, &gid_a);
	gidx_b = find_gid(dev_b, addr_b, &gid_b);
	if (gidx_a < 0 || gidx_b < 0)
		die("RoCE v2 GIDs of %s and %s", addr_a, addr_b);
	o.buf = aligned_alloc(4096, BUF_LEN);
	if (!o.buf)
		die("memory");
	memset(o.buf, 0, BUF_LEN);
	make_steps();
	set_knobs();
	no_page_faults();

	for (i = 0; i < nsteps; i++)
		run_step(&steps[i]);
	if (rounds)
		run_random(rounds);
	run_cm();
	restore_knobs();
	data_after();
	printf("# %lu allocations failed: %lu made their verb fail, %lu were absorbed; errnos:",
	       n_injected, n_failed, n_absorbed);
	for (i = 0; i < 4096; i++)
		if (errnos[i])
			printf(" %s %d", strerrorname_np(i) ?: "?", errnos[i]);
	printf("\n");
	return tap_done();
}
