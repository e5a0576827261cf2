// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * uverbs_rings: softrvt's user-shared rings through the raw uverbs write
 * ABI, before any provider exists.
 *
 * Checks that CQ and SRQ rings map only through their own ucontext and at
 * their own length, that an SRQ ring filled from userspace is consumed and
 * resized in order by the kernel, that a corrupt user index is refused,
 * that destroyed or replaced rings cannot be mapped again, that a resize
 * failing to report its new ring changes nothing, and that a
 * QP's state page can only ever be mapped read-only.
 *
 * usage: uverbs_rings IBDEV      prints TAP, exits 1 on any failure
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/rvt-abi.h>
#include <rdma/softrvt-abi.h>

/* enum ib_srq_attr_mask is not in the uapi headers. */
#define IB_SRQ_MAX_WR	(1 << 0)
#define IB_SRQ_LIMIT	(1 << 1)
/* Nor are enum ib_qp_attr_mask, enum ib_qp_type and enum ib_qp_state. */
#define IB_QP_STATE		(1 << 0)
#define IB_QP_ACCESS_FLAGS	(1 << 3)
#define IB_QP_PKEY_INDEX	(1 << 4)
#define IB_QP_PORT		(1 << 5)
#define IB_QPT_RC		2
#define IB_QPS_RESET		0
#define IB_QPS_INIT		1
#define IB_QPS_ERR		6

/* Scatter entries per receive WQE, for the SRQ and the QP tested. */
#define SRQ_SGE			2

static int n_tests, n_failed, last_ret;

static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	n_tests++;
	if (!cond)
		n_failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", n_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		printf("# the last command returned %d\n", last_ret);
	fflush(stdout);
}

static size_t page_align(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) & ~(pg - 1);
}

/* One legacy write command: header, then the command with its udata. */
static int uv_write(int fd, uint32_t command, const void *in, size_t in_len,
		    size_t out_len)
{
	struct ib_uverbs_cmd_hdr *hdr;
	size_t len = sizeof(*hdr) + in_len;
	char buf[4096];
	ssize_t n;

	if (len > sizeof(buf) || len % 4 || out_len % 4)
		abort();
	hdr = (void *)buf;
	hdr->command = command;
	hdr->in_words = len / 4;
	hdr->out_words = out_len / 4;
	memcpy(buf + sizeof(*hdr), in, in_len);
	n = write(fd, buf, len);
	if (n < 0)
		last_ret = -errno;
	else
		last_ret = n == (ssize_t)len ? 0 : -EIO;
	return last_ret;
}

static int open_uverbs(const char *ibdev)
{
	const char *base = "/sys/class/infiniband_verbs";
	struct dirent *de;
	char path[512], name[64];
	int fd = -1;
	DIR *d;

	d = opendir(base);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		FILE *f;

		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path), "%s/%s/ibdev", base, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%63s", name) == 1 && !strcmp(name, ibdev)) {
			snprintf(path, sizeof(path), "/dev/infiniband/%s",
				 de->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
		}
		fclose(f);
	}
	closedir(d);
	return fd;
}

static int get_context(int fd)
{
	struct ib_uverbs_get_context_resp resp;
	struct ib_uverbs_get_context cmd = {
		.response = (uintptr_t)&resp,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd, sizeof(cmd),
			sizeof(resp));
}

static int alloc_pd(int fd, uint32_t *pd)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ib_uverbs_alloc_pd cmd = { .response = (uintptr_t)&resp };
	int ret;

	ret = uv_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd),
		       sizeof(resp));
	*pd = resp.pd_handle;
	return ret;
}

struct create_cq_resp {
	struct ib_uverbs_create_cq_resp core;
	struct softrvt_cq_resp drv;
};

static int create_cq(int fd, uint32_t cqe, uint32_t *handle, uint64_t *off)
{
	struct create_cq_resp resp = {};
	struct ib_uverbs_create_cq cmd = {
		.response = (uintptr_t)&resp,
		.cqe = cqe,
		.comp_channel = -1,
	};
	int ret;

	ret = uv_write(fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd),
		       sizeof(resp));
	*handle = resp.core.cq_handle;
	*off = resp.drv.mmap_offset;
	return ret;
}

static int resize_cq(int fd, uint32_t handle, uint32_t cqe, uint64_t *off)
{
	struct {
		struct ib_uverbs_resize_cq_resp core;
		struct softrvt_cq_resp drv;
	} resp = {};
	struct ib_uverbs_resize_cq cmd = {
		.response = (uintptr_t)&resp,
		.cq_handle = handle,
		.cqe = cqe,
	};
	int ret;

	ret = uv_write(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &cmd, sizeof(cmd),
		       sizeof(resp));
	*off = resp.drv.mmap_offset;
	return ret;
}

static int destroy_cq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq cmd = {
		.response = (uintptr_t)&resp,
		.cq_handle = handle,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd),
			sizeof(resp));
}

static int create_srq(int fd, uint32_t pd, uint32_t max_wr, uint32_t max_sge,
		      uint32_t *handle, uint64_t *off)
{
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct softrvt_create_srq_resp drv;
	} resp = {};
	struct ib_uverbs_create_srq cmd = {
		.response = (uintptr_t)&resp,
		.pd_handle = pd,
		.max_wr = max_wr,
		.max_sge = max_sge,
	};
	int ret;

	ret = uv_write(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &cmd, sizeof(cmd),
		       sizeof(resp));
	*handle = resp.core.srq_handle;
	*off = resp.drv.mmap_offset;
	return ret;
}

static int modify_srq(int fd, uint32_t handle, uint32_t mask, uint32_t max_wr,
		      uint32_t limit, uint64_t *off)
{
	struct {
		struct ib_uverbs_modify_srq core;
		struct softrvt_modify_srq_cmd drv;
	} cmd = {
		.core = {
			.srq_handle = handle,
			.attr_mask = mask,
			.max_wr = max_wr,
			.srq_limit = limit,
		},
		.drv.offset_addr = (uintptr_t)off,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &cmd, sizeof(cmd), 0);
}

static int query_srq(int fd, uint32_t handle,
		     struct ib_uverbs_query_srq_resp *resp)
{
	struct ib_uverbs_query_srq cmd = {
		.response = (uintptr_t)resp,
		.srq_handle = handle,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_QUERY_SRQ, &cmd, sizeof(cmd),
			sizeof(*resp));
}

static int destroy_srq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_srq_resp resp;
	struct ib_uverbs_destroy_srq cmd = {
		.response = (uintptr_t)&resp,
		.srq_handle = handle,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &cmd, sizeof(cmd),
			sizeof(resp));
}

struct qp_info {
	uint32_t handle;
	uint32_t max_recv_wr;
	uint32_t max_recv_sge;
	uint64_t rq_off;
	uint64_t state_off;
};

/* An RC QP on one CQ, with its own receive queue. */
static int create_qp(int fd, uint32_t pd, uint32_t cq, uint32_t max_recv_wr,
		     struct qp_info *qp)
{
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct softrvt_create_qp_resp drv;
	} resp = {};
	struct ib_uverbs_create_qp cmd = {
		.response = (uintptr_t)&resp,
		.pd_handle = pd,
		.send_cq_handle = cq,
		.recv_cq_handle = cq,
		.max_send_wr = 4,
		.max_recv_wr = max_recv_wr,
		.max_send_sge = 1,
		.max_recv_sge = SRQ_SGE,
		.qp_type = IB_QPT_RC,
	};
	int ret;

	ret = uv_write(fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd),
		       sizeof(resp));
	qp->handle = resp.core.qp_handle;
	qp->max_recv_wr = resp.core.max_recv_wr;
	qp->max_recv_sge = resp.core.max_recv_sge;
	qp->rq_off = resp.drv.rq_mmap_offset;
	qp->state_off = resp.drv.state_mmap_offset;
	return ret;
}

/* To INIT (port 1, P_Key index 0, no remote access) or to ERR. */
static int modify_qp(int fd, uint32_t handle, uint8_t state)
{
	struct ib_uverbs_modify_qp cmd = {
		.qp_handle = handle,
		.attr_mask = IB_QP_STATE,
		.qp_state = state,
	};

	if (state == IB_QPS_INIT) {
		cmd.attr_mask |= IB_QP_PKEY_INDEX | IB_QP_PORT |
				 IB_QP_ACCESS_FLAGS;
		cmd.port_num = 1;
	}
	return uv_write(fd, IB_USER_VERBS_CMD_MODIFY_QP, &cmd, sizeof(cmd), 0);
}

static int destroy_qp(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp cmd = {
		.response = (uintptr_t)&resp,
		.qp_handle = handle,
	};

	return uv_write(fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd),
			sizeof(resp));
}

/* Post n WRs with wr_id base.. and two SGEs each through the kernel. */
static int post_srq_recv_cmd(int fd, uint32_t handle, int n, uint64_t base,
			     uint32_t *bad_wr)
{
	struct ib_uverbs_post_srq_recv_resp resp = { .bad_wr = ~0u };
	struct {
		struct ib_uverbs_post_srq_recv core;
		struct ib_uverbs_recv_wr wr[8];
		struct ib_uverbs_sge sge[16];
	} cmd = {};
	size_t len;
	int i, ret;

	cmd.core.response = (uintptr_t)&resp;
	cmd.core.srq_handle = handle;
	cmd.core.wr_count = n;
	cmd.core.sge_count = 2 * n;
	cmd.core.wqe_size = sizeof(struct ib_uverbs_recv_wr);
	for (i = 0; i < n; i++) {
		cmd.wr[i].wr_id = base + i;
		cmd.wr[i].num_sge = 2;
		cmd.sge[2 * i] = (struct ib_uverbs_sge){
			.addr = (base + i) << 4, .length = 100, .lkey = 7 };
		cmd.sge[2 * i + 1] = (struct ib_uverbs_sge){
			.addr = ((base + i) << 4) | 1, .length = 200, .lkey = 8 };
	}
	/* The WRs and SGEs must be contiguous: move the SGEs up. */
	memmove(&cmd.wr[n], cmd.sge, 2 * n * sizeof(cmd.sge[0]));
	len = sizeof(cmd.core) + n * sizeof(cmd.wr[0]) +
	      2 * n * sizeof(cmd.sge[0]);
	ret = uv_write(fd, IB_USER_VERBS_CMD_POST_SRQ_RECV, &cmd, len,
		       sizeof(resp));
	*bad_wr = resp.bad_wr;
	return ret;
}

static size_t rwqe_stride(void)
{
	return sizeof(struct rvt_rwqe) + SRQ_SGE * sizeof(struct rvt_wqe_sge);
}

static struct rvt_rwqe *slot(struct rvt_rwq *wq, uint32_t i)
{
	return (struct rvt_rwqe *)((char *)wq->wq + i * rwqe_stride());
}

static size_t srq_bytes(uint32_t max_wr)
{
	return page_align(sizeof(struct rvt_rwq) + (max_wr + 1) * rwqe_stride());
}

static size_t cq_bytes(uint32_t cqe)
{
	return page_align(sizeof(struct rvt_cq_wc) +
			  (cqe + 1) * sizeof(struct ib_uverbs_wc));
}

static void *map_prot(int fd, size_t len, uint64_t off, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

static void *map(int fd, size_t len, uint64_t off)
{
	return map_prot(fd, len, off, PROT_READ | PROT_WRITE);
}

static int wqe_is(struct rvt_rwqe *w, uint64_t id)
{
	return w->wr_id == id && w->num_sge == SRQ_SGE &&
	       w->sg_list[0].addr == id << 4 && w->sg_list[0].length == 100 &&
	       w->sg_list[0].lkey == 7 && w->sg_list[1].addr == ((id << 4) | 1) &&
	       w->sg_list[1].length == 200 && w->sg_list[1].lkey == 8;
}

static void user_post(struct rvt_rwq *wq, uint32_t size, uint64_t id)
{
	uint32_t head = __atomic_load_n(&wq->head.val, __ATOMIC_RELAXED);
	struct rvt_rwqe *w = slot(wq, head);

	w->wr_id = id;
	w->num_sge = SRQ_SGE;
	w->sg_list[0].addr = id << 4;
	w->sg_list[0].length = 100;
	w->sg_list[0].lkey = 7;
	w->sg_list[1].addr = (id << 4) | 1;
	w->sg_list[1].length = 200;
	w->sg_list[1].lkey = 8;
	__atomic_store_n(&wq->head.val, (head + 1) % size, __ATOMIC_RELEASE);
}

static void test_cq(int fd, int fd2)
{
	uint64_t off, off2;
	uint32_t cq;
	void *p, *q;
	struct rvt_cq_wc *ring;

	ok(create_cq(fd, 16, &cq, &off) == 0, "create_cq");
	ok(off != 0, "create_cq returns an mmap offset, never 0");
	p = map(fd, cq_bytes(16), off);
	ok(p != NULL, "CQ ring maps at its length");
	ring = p;
	ok(p && ring->head.val == 0 && ring->tail.val == 0, "CQ ring is empty");
	q = map(fd, cq_bytes(16) + 4096, off);
	ok(q == NULL && errno == EINVAL, "CQ ring refuses a longer mapping");
	q = map(fd2, cq_bytes(16), off);
	ok(q == NULL, "CQ ring refuses another ucontext");

	ok(resize_cq(fd, cq, 200, &off2) == 0, "resize_cq");
	ok(off2 != 0 && off2 != off, "resize_cq returns a new offset");
	q = map(fd, cq_bytes(200), off2);
	ok(q != NULL, "resized CQ ring maps");
	ok(map(fd, cq_bytes(16), off) == NULL, "replaced CQ ring is unmappable");
	ok(resize_cq(fd, cq, 1 << 20, &off2) == -EINVAL,
	   "resize_cq beyond max_cqe is refused");

	ok(destroy_cq(fd, cq) == 0, "destroy_cq");
	ok(map(fd, cq_bytes(200), off2) == NULL,
	   "destroyed CQ ring is unmappable");
	/* Mappings outlive the CQ: its pages are still ours to touch. */
	if (q)
		((struct rvt_cq_wc *)q)->tail.val = 3;
	if (p)
		munmap(p, cq_bytes(16));
	if (q)
		munmap(q, cq_bytes(200));
}

static void test_srq(int fd, int fd2, uint32_t pd)
{
	struct ib_uverbs_query_srq_resp qresp;
	uint64_t off, off2 = 0;
	struct rvt_rwq *wq, *wq2;
	uint32_t srq, bad;
	int i, good;

	ok(create_srq(fd, pd, 8, SRQ_SGE, &srq, &off) == 0, "create_srq");
	ok(create_srq(fd, pd, 100000, SRQ_SGE, &bad, &off2) == -EINVAL,
	   "create_srq beyond max_srq_wr is refused");
	wq = map(fd, srq_bytes(8), off);
	ok(wq != NULL, "SRQ ring maps at its length");
	ok(map(fd2, srq_bytes(8), off) == NULL,
	   "SRQ ring refuses another ucontext");
	ok(map(fd, srq_bytes(8) * 2, off) == NULL,
	   "SRQ ring refuses a longer mapping");
	if (!wq)
		return;

	/* Three WQEs from userspace, two through the kernel after them. */
	for (i = 0; i < 3; i++)
		user_post(wq, 9, 10 + i);
	ok(post_srq_recv_cmd(fd, srq, 2, 13, &bad) == 0, "post_srq_recv");
	ok(wq->head.val == 5, "kernel post advanced the shared head to 5");
	good = 1;
	for (i = 0; i < 5; i++)
		good &= wqe_is(slot(wq, i), 10 + i);
	ok(good, "ring holds user and kernel WQEs in order");

	/* Fill to capacity: the 9th WR does not fit a ring of 8. */
	/* uverbs reports the failed WR counting from 1. */
	ok(post_srq_recv_cmd(fd, srq, 4, 15, &bad) == -ENOMEM && bad == 4,
	   "post_srq_recv into a full ring fails at the first WR that does not fit");
	ok(wq->head.val == 8, "the WRs before it were posted");

	ok(modify_srq(fd, srq, IB_SRQ_MAX_WR, 4, 0, &off2) == -EINVAL,
	   "resize below the outstanding WQEs is refused");
	ok(modify_srq(fd, srq, IB_SRQ_LIMIT, 0, 9, &off2) == -EINVAL,
	   "a limit above max_wr is refused");
	off2 = 0;
	ok(modify_srq(fd, srq, IB_SRQ_MAX_WR | IB_SRQ_LIMIT, 20, 4, &off2) == 0,
	   "resize to 20 with limit 4");
	ok(off2 != 0 && off2 != off, "resize reports a new offset");
	ok(map(fd, srq_bytes(8), off) == NULL, "old SRQ ring is unmappable");
	wq2 = map(fd, srq_bytes(20), off2);
	ok(wq2 != NULL, "new SRQ ring maps");
	if (wq2) {
		good = wq2->head.val == 8 && wq2->tail.val == 0;
		for (i = 0; i < 8; i++)
			good &= wqe_is(slot(wq2, i), 10 + i);
		ok(good, "resize kept the 8 outstanding WQEs in order");
	}
	ok(query_srq(fd, srq, &qresp) == 0 && qresp.max_wr == 20 &&
	   qresp.max_sge == SRQ_SGE && qresp.srq_limit == 4,
	   "query_srq reports max_wr 20, max_sge 2, limit 4");

	if (wq2) {
		/* A corrupt producer index is refused, never followed. */
		wq2->head.val = 5000;
		ok(post_srq_recv_cmd(fd, srq, 1, 99, &bad) == -EIO && bad == 1,
		   "post_srq_recv with a corrupt head fails");
		ok(modify_srq(fd, srq, IB_SRQ_MAX_WR, 40, 0, &off) == -EIO,
		   "resize with a corrupt head fails");
		wq2->head.val = 8;
		ok(post_srq_recv_cmd(fd, srq, 1, 18, &bad) == 0 &&
		   wq2->head.val == 9 && wqe_is(slot(wq2, 8), 18),
		   "repaired head: posting works again");
	}

	ok(destroy_srq(fd, srq) == 0, "destroy_srq");
	ok(map(fd, srq_bytes(20), off2) == NULL,
	   "destroyed SRQ ring is unmappable");
	if (wq2) {
		wq2->tail.val = 1;	/* pages outlive the SRQ */
		munmap(wq2, srq_bytes(20));
	}
	munmap(wq, srq_bytes(8));
}

/*
 * A process that takes write access away from the word modify_srq reports
 * the new ring's offset in, as soon as the kernel first writes it: the
 * first write of a resize is then the only one that can succeed.
 */
#define OFFSET_UNSET	0x5a5a5a5a5a5a5a5aull

struct revoker {
	volatile uint64_t *word;	/* at the start of page */
	void *page;
	size_t len;
	int armed;			/* atomic: 1 until it revoked */
	int stop;			/* atomic */
};

static void *revoke_on_first_write(void *arg)
{
	struct revoker *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		if (!__atomic_load_n(&r->armed, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(r->word, __ATOMIC_ACQUIRE) == OFFSET_UNSET)
			continue;
		mprotect(r->page, r->len, PROT_READ);
		__atomic_store_n(&r->armed, 0, __ATOMIC_RELEASE);
	}
	return NULL;
}

#define BIG_SGE		32
#define RESIZE_ROUNDS	6

static size_t big_stride(void)
{
	return sizeof(struct rvt_rwqe) + BIG_SGE * sizeof(struct rvt_wqe_sge);
}

static size_t big_bytes(uint32_t max_wr)
{
	return page_align(sizeof(struct rvt_rwq) + (max_wr + 1) * big_stride());
}

/* Whether a ring of BIG_SGE-entry slots holds the 3 WQEs posted first. */
static int big_ring_holds_three(struct rvt_rwq *wq)
{
	int good = wq->head.val == 3 && wq->tail.val == 0;
	int i;

	for (i = 0; i < 3; i++)
		good &= wqe_is((struct rvt_rwqe *)((char *)wq->wq +
						   i * big_stride()), 40 + i);
	return good;
}

/*
 * A resize that reports failure must have changed nothing: the process
 * keeps using the ring it has.  One that succeeds must have said where
 * the new ring is.  Large rings make the kernel's work between taking
 * the resize and swapping the rings long, so that the revoker strikes in
 * between whenever the kernel writes the word before it is done.
 */
static void test_srq_resize_report(int fd, uint32_t pd)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ib_uverbs_query_srq_resp qresp;
	uint32_t srq, bad, cur = 8, want;
	struct revoker r = { .len = pg };
	int i, ret, consistent = 1, failed = 0;
	size_t mapped = big_bytes(8);
	uint64_t off;
	struct rvt_rwq *wq;
	pthread_t thr;

	ok(create_srq(fd, pd, 8, BIG_SGE, &srq, &off) == 0,
	   "create_srq with %d SGEs", BIG_SGE);
	wq = map(fd, big_bytes(8), off);
	ok(wq && post_srq_recv_cmd(fd, srq, 3, 40, &bad) == 0 &&
	   big_ring_holds_three(wq), "3 WQEs posted");
	r.page = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!wq || r.page == MAP_FAILED) {
		ok(0, "setup for the resize report test");
		return;
	}
	r.word = r.page;

	/* Read-only from the start: refused, and nothing changes. */
	mprotect(r.page, pg, PROT_READ);
	ret = modify_srq(fd, srq, IB_SRQ_MAX_WR, 1000, 0, (uint64_t *)r.word);
	ok(ret == -EFAULT && query_srq(fd, srq, &qresp) == 0 &&
	   qresp.max_wr == 8 && big_ring_holds_three(wq),
	   "resize with an unwritable offset word fails and changes nothing");

	if (pthread_create(&thr, NULL, revoke_on_first_write, &r)) {
		ok(0, "start the revoker thread");
		return;
	}
	for (i = 0; consistent && i < RESIZE_ROUNDS; i++) {
		want = i % 2 ? 8 : 16000;
		mprotect(r.page, pg, PROT_READ | PROT_WRITE);
		*r.word = OFFSET_UNSET;
		__atomic_store_n(&r.armed, 1, __ATOMIC_RELEASE);
		ret = modify_srq(fd, srq, IB_SRQ_MAX_WR, want, 0,
				 (uint64_t *)r.word);
		while (__atomic_load_n(&r.armed, __ATOMIC_ACQUIRE) &&
		       *r.word != OFFSET_UNSET)
			;
		__atomic_store_n(&r.armed, 0, __ATOMIC_RELEASE);
		if (query_srq(fd, srq, &qresp)) {
			consistent = 0;
		} else if (ret) {
			failed++;
			if (qresp.max_wr != cur) {
				printf("# round %d: resize to %u returned %d but the SRQ now holds %u\n",
				       i, want, ret, qresp.max_wr);
				consistent = 0;
			}
		} else if (qresp.max_wr != want || !*r.word ||
			   *r.word == OFFSET_UNSET) {
			printf("# round %d: resize to %u succeeded, max_wr %u, offset 0x%llx\n",
			       i, want, qresp.max_wr,
			       (unsigned long long)*r.word);
			consistent = 0;
		} else {
			munmap(wq, mapped);
			cur = want;
			mapped = big_bytes(cur);
			wq = map(fd, mapped, *r.word);
			if (!wq || !big_ring_holds_three(wq)) {
				printf("# round %d: the reported ring does not hold the WQEs\n",
				       i);
				consistent = 0;
			}
		}
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	printf("# %d of %d resizes failed\n", failed, i);
	ok(consistent,
	   "a resize racing a revoked offset word either fails unchanged or reports the new ring");

	ok(destroy_srq(fd, srq) == 0, "destroy_srq");
	if (wq)
		munmap(wq, mapped);
	munmap(r.page, pg);
}

/*
 * The QP state page is the kernel's word on the QP's state: the process
 * may read it but never write it, not even by remapping or mprotect().
 */
static void test_qp_state_page(int fd, uint32_t pd)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct softrvt_qp_state *st;
	struct qp_info qp;
	uint64_t cq_off;
	uint32_t cq;
	void *p;

	ok(create_cq(fd, 16, &cq, &cq_off) == 0, "create_cq for a QP");
	ok(create_qp(fd, pd, cq, 8, &qp) == 0, "create_qp");
	ok(qp.state_off != 0, "create_qp returns a state page offset");

	p = map(fd, pg, qp.state_off);
	ok(p == NULL && errno == EPERM,
	   "state page refuses a PROT_WRITE mapping (EPERM)");
	if (p)
		munmap(p, pg);
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
		 qp.state_off);
	ok(p == MAP_FAILED, "state page refuses a private writable mapping");
	if (p != MAP_FAILED)
		munmap(p, pg);

	st = map_prot(fd, pg, qp.state_off, PROT_READ);
	ok(st != NULL, "state page maps PROT_READ");
	if (st) {
		ok(st->state == IB_QPS_RESET, "state page says RESET");
		ok(modify_qp(fd, qp.handle, IB_QPS_INIT) == 0 &&
		   __atomic_load_n(&st->state, __ATOMIC_ACQUIRE) ==
		   IB_QPS_INIT, "after modify to INIT it says INIT");
		errno = 0;
		ok(mprotect(st, pg, PROT_READ | PROT_WRITE) != 0 &&
		   errno == EACCES,
		   "mprotect() cannot make it writable (EACCES)");
		ok(modify_qp(fd, qp.handle, IB_QPS_ERR) == 0 &&
		   __atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == IB_QPS_ERR,
		   "after modify to ERR it says ERR");
	}
	ok(destroy_qp(fd, qp.handle) == 0, "destroy_qp");
	ok(destroy_cq(fd, cq) == 0, "destroy_cq of the QP");
	if (st)
		munmap(st, pg);
}

int main(int argc, char **argv)
{
	const char *ibdev = argc > 1 ? argv[1] : "softrvt0";
	int fd, fd2;
	uint32_t pd;

	printf("TAP version 13\n");
	fd = open_uverbs(ibdev);
	fd2 = open_uverbs(ibdev);
	ok(fd >= 0 && fd2 >= 0, "open the uverbs device of %s twice", ibdev);
	if (fd < 0 || fd2 < 0)
		return 1;
	ok(get_context(fd) == 0, "get_context");
	ok(get_context(fd2) == 0, "second get_context");
	ok(get_context(fd) != 0, "a second context on one fd is refused");
	ok(alloc_pd(fd, &pd) == 0, "alloc_pd");

	test_cq(fd, fd2);
	test_srq(fd, fd2, pd);
	test_srq_resize_report(fd, pd);
	test_qp_state_page(fd, pd);

	close(fd2);
	close(fd);
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
