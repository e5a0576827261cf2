// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_micro: micro-benchmarks for `make bench`.
 *
 *   bench_micro post DEV     ns per WR of ibv_post_srq_recv() in a loop
 *   bench_micro memcpy       memcpy bandwidth of 64 KiB copies, MB/s
 *
 * Prints one line "name value unit".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static int bench_post(const char *dev)
{
	enum { BATCH = 4096, ROUNDS = 64 };
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	static char buf[4096];
	double total = 0;
	long posted = 0;
	int r, i;

	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", dev);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		fprintf(stderr, "cannot register memory\n");
		return 1;
	}
	/* A fresh SRQ per round: nothing consumes, so each round fills one. */
	for (r = 0; r < ROUNDS; r++) {
		struct ibv_srq_init_attr attr = {
			.attr = { .max_wr = BATCH, .max_sge = 1 },
		};
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey,
		};
		struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		struct ibv_srq *srq = ibv_create_srq(pd, &attr);
		double t0;

		if (!srq) {
			fprintf(stderr, "cannot create an SRQ\n");
			return 1;
		}
		t0 = now();
		for (i = 0; i < BATCH; i++) {
			wr.wr_id = i;
			if (ibv_post_srq_recv(srq, &wr, &bad)) {
				fprintf(stderr, "post %d failed\n", i);
				return 1;
			}
		}
		total += now() - t0;
		posted += BATCH;
		ibv_destroy_srq(srq);
	}
	printf("post_srq_recv %.1f ns/WR\n", total * 1e9 / posted);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

static int bench_memcpy(void)
{
	enum { SIZE = 65536, LOOPS = 20000 };
	char *a = malloc(SIZE), *b = malloc(SIZE);
	double t0, t;
	int i;

	if (!a || !b)
		return 1;
	memset(a, 1, SIZE);
	memset(b, 2, SIZE);
	t0 = now();
	for (i = 0; i < LOOPS; i++) {
		memcpy(i & 1 ? a : b, i & 1 ? b : a, SIZE);
		__asm__ volatile("" : : "r"(a), "r"(b) : "memory");
	}
	t = now() - t0;
	printf("memcpy %.1f MB/s\n", (double)SIZE * LOOPS / t / 1e6);
	free(a);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "post"))
		return bench_post(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "memcpy"))
		return bench_memcpy();
	fprintf(stderr, "usage: bench_micro post DEV | memcpy\n");
	return 2;
}
