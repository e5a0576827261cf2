// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * insn_count: a QEMU TCG plugin that counts the guest instructions each
 * virtual CPU executes, kernel and user apart, and writes the totals at
 * every marker the guest executes (tests/insn_mark) and at exit.
 *
 *   qemu-system-x86_64 ... -plugin insn_count.so,out=FILE
 *
 * FILE receives one line a marker, "mark SEQ kernel K user U" (SEQ
 * counts the markers from 1), and "exit kernel K user U" when QEMU
 * ends: the sums over every vCPU since the guest started.  The
 * difference between two markers is the work done between them; a
 * workload run at two sizes between markers gives the work per unit by
 * difference, without boot or setup.
 *
 * Counting is per translation block: a block's instructions are added
 * when it starts, to the counter of the vCPU that runs it (no two vCPUs
 * share a counter, so nothing is lost to racing adds), in the kernel's
 * when the block lies in the upper half of the address space.  A block
 * left early by an exception counts whole.  The marker is
 * "nopl 0x53520000(%rax)" (0f 1f 80 00 00 52 53) in user space: a no-op
 * anywhere.
 *
 * With prof=PFILE as well, every marker also writes to PFILE where the
 * instructions since the previous marker ran: "mark SEQ", then one line
 * "VADDR INSNS EXECS" (hex, decimal, decimal) for each translation block
 * run since, as many as ran; scripts/count-prof.py names the kernel's by
 * the guest's /proc/kallsyms.  A block translated again is a line of
 * its own.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KERNEL_HALF	0xffff800000000000ULL
#define MARK_LEN	7
static const uint8_t mark_bytes[MARK_LEN] = {
	0x0f, 0x1f, 0x80, 0x00, 0x00, 0x52, 0x53
};

/* One cache line a vCPU: the counters of two vCPUs never share one. */
struct vcpu_count {
	uint64_t kernel;
	uint64_t user;
	uint64_t pad[6];
};

/* A translation block: its size and, for the profile, its runs. */
struct tb_info {
	uint64_t vaddr;
	uint32_t n_insns;
	int kernel;
	uint64_t execs;			/* since the last marker */
	struct tb_info *next;
};

static struct vcpu_count *counts;
static unsigned int n_vcpus;
static FILE *out, *prof;
static unsigned int n_marks;
/* Every block translated, for the profile; appended under tbs_lock. */
static struct tb_info *tbs;
static pthread_mutex_t tbs_lock = PTHREAD_MUTEX_INITIALIZER;

static void totals(uint64_t *kernel, uint64_t *user)
{
	unsigned int i;

	*kernel = 0;
	*user = 0;
	for (i = 0; i < n_vcpus; i++) {
		*kernel += __atomic_load_n(&counts[i].kernel, __ATOMIC_RELAXED);
		*user += __atomic_load_n(&counts[i].user, __ATOMIC_RELAXED);
	}
}

/* udata: the block's struct tb_info. */
static void tb_exec(unsigned int vcpu, void *udata)
{
	struct tb_info *tb = udata;
	struct vcpu_count *c = &counts[vcpu % n_vcpus];

	if (tb->kernel)
		c->kernel += tb->n_insns;
	else
		c->user += tb->n_insns;
	/* Racy with two vCPUs running one block: the profile is one vCPU's. */
	tb->execs++;
}

/* The blocks run since the last marker, into the profile. */
static void prof_write(unsigned int seq)
{
	struct tb_info *tb;

	pthread_mutex_lock(&tbs_lock);
	fprintf(prof, "mark %u\n", seq);
	for (tb = tbs; tb; tb = tb->next) {
		if (!tb->execs)
			continue;
		fprintf(prof, "%" PRIx64 " %u %" PRIu64 "\n", tb->vaddr,
			tb->n_insns, tb->execs);
		tb->execs = 0;
	}
	fflush(prof);
	pthread_mutex_unlock(&tbs_lock);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	unsigned int seq = __atomic_add_fetch(&n_marks, 1, __ATOMIC_RELAXED);
	uint64_t kernel, user;

	(void)vcpu;
	(void)udata;
	totals(&kernel, &user);
	fprintf(out, "mark %u kernel %" PRIu64 " user %" PRIu64 "\n", seq,
		kernel, user);
	fflush(out);
	if (prof)
		prof_write(seq);
}

static int is_mark(struct qemu_plugin_insn *insn)
{
	return qemu_plugin_insn_size(insn) == MARK_LEN &&
	       !memcmp(qemu_plugin_insn_data(insn), mark_bytes, MARK_LEN);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct tb_info *info = calloc(1, sizeof(*info));

	(void)id;
	if (!info) {
		fprintf(stderr, "insn_count: out of memory\n");
		abort();
	}
	info->vaddr = qemu_plugin_tb_vaddr(tb);
	info->n_insns = n;
	info->kernel = info->vaddr >= KERNEL_HALF;
	pthread_mutex_lock(&tbs_lock);
	info->next = tbs;
	tbs = info;
	pthread_mutex_unlock(&tbs_lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec,
					     QEMU_PLUGIN_CB_NO_REGS, info);
	if (info->kernel)
		return;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (is_mark(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	uint64_t kernel, user;

	(void)id;
	(void)p;
	totals(&kernel, &user);
	fprintf(out, "exit kernel %" PRIu64 " user %" PRIu64 "\n",
		kernel, user);
	fclose(out);
	if (prof)
		fclose(prof);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL, *ppath = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strncmp(argv[i], "prof=", 5))
			ppath = argv[i] + 5;
	}
	if (!path || !info->system_emulation) {
		fprintf(stderr, "insn_count: usage: %s\n",
			"-plugin insn_count.so,out=FILE[,prof=PFILE] (system emulation)");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	if (ppath) {
		prof = fopen(ppath, "w");
		if (!prof) {
			perror(ppath);
			return -1;
		}
	}
	n_vcpus = info->system.max_vcpus > 0 ? info->system.max_vcpus : 1;
	counts = calloc(n_vcpus, sizeof(*counts));
	if (!counts)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
