// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * post_poll_count: the provider's work for one signalled 8-byte SEND,
 * counted by the instruction-counting TCG plugin (insn_mark.h).
 *
 * An RC pair (rc_pair.c), A sending to B; for each of N messages a
 * receive is posted on B, then a marker, ibv_post_send() of the SEND on A,
 * a marker; then A's CQ is polled, each ibv_poll_cq() between two
 * markers, until it returns the completion (the process sleeps 1 ms
 * between polls that find nothing).  After each pair of markers the
 * program appends their labels to LABELS, one line a marker in the
 * plugin's order: "PREFIX post start", "PREFIX post end", "PREFIX poll
 * start", then "PREFIX poll end hit" or "PREFIX poll end empty".  The
 * user instructions between a start and its end are the provider's (and
 * libibverbs') work for that call; the kernel's, if the call enters it,
 * count apart.  Every completion and
 * every message's bytes are checked.  At the end the process's mappings
 * go to LABELS.PREFIX.maps, for the profile's user instructions.
 *
 * usage: post_poll_count DEV_A GID_A DEV_B GID_B N LABELS PREFIX
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "insn_mark.h"
#include "rc_pair.h"
#include "tap.h"

#define MSG_LEN		8
#define POLL_TRIES	10000	/* 1 ms apart */

static FILE *labels;
static const char *prefix;

static void label(const char *a, const char *b)
{
	fprintf(labels, "%s %s\n%s %s\n", prefix, a, prefix, b);
}

static bool one_message(struct pair *p, unsigned int i)
{
	struct ibv_sge sg = sge_of(&sa, 0, MSG_LEN);
	struct ibv_send_wr wr = wr_of(i, IBV_WR_SEND, &sg), *bad = NULL;
	struct ibv_wc wc;
	int ret, n = 0, tries;

	memset(sa.buf, 0, MSG_LEN);
	put64(sa.buf, 0x5052455300000000ULL + i);
	if (!post_recv(p->qb, i, 4096, MSG_LEN))
		return false;
	insn_mark();
	ret = ibv_post_send(p->qa, &wr, &bad);
	insn_mark();
	label("post start", "post end");
	if (ret) {
		detail("ibv_post_send %u: %s", i, strerror(ret));
		return false;
	}
	for (tries = 0; tries < POLL_TRIES; tries++) {
		insn_mark();
		n = ibv_poll_cq(sa.cq, 1, &wc);
		insn_mark();
		label("poll start", n > 0 ? "poll end hit" : "poll end empty");
		if (n)
			break;
		usleep(1000);
	}
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != i ||
	    wc.opcode != IBV_WC_SEND) {
		detail("message %u: poll %d, status %d, wr_id %llu", i, n,
		       n > 0 ? (int)wc.status : -1,
		       n > 0 ? (unsigned long long)wc.wr_id : 0ULL);
		return false;
	}
	return expect_wc(&sb, "B's receive", i, IBV_WC_SUCCESS, IBV_WC_RECV,
			 MSG_LEN, p->qb, WAIT_MS) &&
	       u64_is(sb.buf + 4096, 0x5052455300000000ULL + i, "message");
}

/*
 * /proc/self/maps to LABELS.PREFIX.maps: scripts/count-prof.py names the
 * user instructions of the profile by the libraries mapped there.
 */
static bool save_maps(const char *labels_path)
{
	char path[4096], buf[4096];
	FILE *in, *out;
	size_t n;
	bool good;

	snprintf(path, sizeof(path), "%s.%s.maps", labels_path, prefix);
	in = fopen("/proc/self/maps", "r");
	out = fopen(path, "w");
	good = in && out;
	while (good && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		good = fwrite(buf, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out && fclose(out))
		good = false;
	if (!good)
		detail("%s: %s", path, strerror(errno));
	return good;
}

int main(int argc, char **argv)
{
	struct pair_cfg cfg = default_cfg();
	struct pair p = { 0 };
	unsigned long n, i;
	bool good;

	n = argc == 8 ? strtoul(argv[5], NULL, 0) : 0;
	if (!n || !sides_from_args(5, argv, argv[0],
				   "softrvt0 1 softrvt0 1 100 /tmp/labels softrvt"))
		return 2;
	prefix = argv[7];
	labels = fopen(argv[6], "a");
	if (!labels) {
		perror(argv[6]);
		return 2;
	}
	setvbuf(labels, NULL, _IOLBF, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	good = ok(side_open(&sa, ACC_REMOTE) && side_open(&sb, ACC_REMOTE) &&
		  pair_up(&p, &cfg), "RC pair %s -> %s", sa.dev, sb.dev);
	for (i = 0; good && i < n; i++)
		good = one_message(&p, (unsigned int)i);
	ok(good, "%lu signalled %d-byte SENDs posted and polled between markers, data checked",
	   n, MSG_LEN);
	ok(save_maps(argv[6]), "the process's mappings saved beside %s", argv[6]);
	pair_down(&p);
	sides_close();
	fclose(labels);
	return tap_done();
}
