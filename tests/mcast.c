// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mcast: UD multicast on one device, without rdma_cm.
 *
 * The netdev joins an IPv4 group with a UDP socket (as rdma_cm joins for
 * its users), three UD QPs are attached to the group's GID, and a fourth
 * sends to it: the two with the sender's Q_Key receive the message, GRH
 * and payload checked, the one with another Q_Key does not.  A QP
 * detached receives nothing more.  Attaching a QP other than UD, a GID
 * that is not multicast or one QP more than a group holds, and detaching
 * a QP that is not attached, fail with the errno they must.
 *
 * The group, 239.18.0.1, is administratively scoped; the guest's veths
 * are its only links, and nothing it sends leaves the guest.
 *
 * usage: mcast DEV GID_INDEX IPV4_ADDRESS   prints TAP, exits 1 on any
 *                                           failure
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_pair.h"
#include "tap.h"

#define GROUP		"239.18.0.1"
#define QKEY		0x11111111
#define OTHER_QKEY	0x22222222
#define MCAST_QPN	0xffffff
#define GRH_LEN		40
#define MSG_LEN		100
#define MAX_ATTACH	64	/* softrvt's max_mcast_qp_attach */

static union ibv_gid mgid;

static struct ibv_qp *ud_qp(uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = sa.cq,
		.recv_cq = sa.cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp = ibv_create_qp(sa.pd, &ia);

	if (!qp) {
		detail("ibv_create_qp UD: %s", strerror(errno));
		return NULL;
	}
	if (!ud_qp_up(qp, &sa, qkey, 0)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* A receive of GRH_LEN + MSG_LEN bytes at @off of the buffer. */
static bool recv_at(struct ibv_qp *qp, uint64_t wr_id, size_t off)
{
	struct ibv_sge sg = sge_of(&sa, off, GRH_LEN + MSG_LEN);
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sg,
		.num_sge = 1,
	}, *bad = NULL;
	int ret;

	memset(sa.buf + off, CANARY, GRH_LEN + MSG_LEN);
	ret = ibv_post_recv(qp, &wr, &bad);
	if (ret)
		detail("ibv_post_recv QPN 0x%x: %s", qp->qp_num, strerror(ret));
	return !ret;
}

static bool send_to_group(struct ibv_qp *qp, struct ibv_ah *ah,
			  uint64_t wr_id)
{
	struct ibv_sge sg = sge_of(&sa, 0, MSG_LEN);
	struct ibv_send_wr wr = wr_of(wr_id, IBV_WR_SEND, &sg);

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = MCAST_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	return post_send(qp, &wr);
}

/* A receive of the message by QP @i of @rq, posted with wr_id @i. */
static bool good_recv(const struct ibv_wc *wc, struct ibv_qp *const *rq,
		      int n)
{
	int i;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
	    wc->byte_len != GRH_LEN + MSG_LEN ||
	    !(wc->wc_flags & IBV_WC_GRH)) {
		detail("completion wr_id %llu: status %s opcode %d byte_len %u flags 0x%x",
		       (unsigned long long)wc->wr_id,
		       ibv_wc_status_str(wc->status), wc->opcode, wc->byte_len,
		       wc->wc_flags);
		return false;
	}
	for (i = 0; i < n; i++)
		if (wc->qp_num == rq[i]->qp_num && wc->wr_id == (uint64_t)i)
			return true;
	detail("receive wr_id %llu on QP 0x%x: not one expected",
	       (unsigned long long)wc->wr_id, wc->qp_num);
	return false;
}

/*
 * The SEND's completion and one receive by each of the first @n QPs of
 * @rq, in whatever order they come; then nothing else for a while.
 */
static bool sent_and_received(struct ibv_qp *const *rq, int n,
			      uint64_t send_id)
{
	uint32_t seen = 0;
	bool sent = false;
	int i;

	for (i = 0; i < n + 1; i++) {
		struct ibv_wc wc;

		if (!wait_wc(&sa, &wc, WAIT_MS, "a completion"))
			return false;
		if (!sent && wc.wr_id == send_id &&
		    wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND) {
			sent = true;
			continue;
		}
		if (!good_recv(&wc, rq, n) || (seen & 1u << wc.wr_id)) {
			detail("completion %d of %d", i + 1, n + 1);
			return false;
		}
		seen |= 1u << wc.wr_id;
	}
	usleep(300 * 1000);
	return sent && cq_empty(&sa, "after the receives");
}

/* The payload after the GRH, whose IPv4 header names the group. */
static bool data_at(size_t off, const char *what)
{
	const uint8_t *grh = sa.buf + off;
	struct in_addr dst;

	memcpy(&dst, grh + GRH_LEN - 4, sizeof(dst));
	if (strcmp(inet_ntoa(dst), GROUP)) {
		detail("%s: the GRH's destination is %s", what, inet_ntoa(dst));
		return false;
	}
	return same(grh + GRH_LEN, sa.buf, MSG_LEN, what);
}

/* As rc_pair.c's case_prepare(), for the one side this test opens. */
static void mc_prepare(const char *name)
{
	tap_case = name;
	clear_details();
	drain(&sa);
}

static int join_group(const char *local)
{
	struct ip_mreq mreq = {};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0) {
		detail("socket: %s", strerror(errno));
		return -1;
	}
	inet_pton(AF_INET, GROUP, &mreq.imr_multiaddr);
	inet_pton(AF_INET, local, &mreq.imr_interface);
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
		       sizeof(mreq))) {
		detail("IP_ADD_MEMBERSHIP %s on %s: %s", GROUP, local,
		       strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void case_delivery(void)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = IB_PORT,
		.grh = { .dgid = mgid, .sgid_index = (uint8_t)sa.gid_index,
			 .hop_limit = 1 },
	};
	struct ibv_qp *rq[3] = {}, *sq = NULL;
	struct ibv_ah *ah = NULL;
	bool good;
	int i;

	mc_prepare("delivery");
	for (i = 0; i < 3; i++)
		rq[i] = ud_qp(i < 2 ? QKEY : OTHER_QKEY);
	sq = ud_qp(QKEY);
	ah = ibv_create_ah(sa.pd, &aa);
	if (!ah)
		detail("ibv_create_ah to %s: %s", GROUP, strerror(errno));
	if (!ok(rq[0] && rq[1] && rq[2] && sq && ah,
		"four UD QPs, an AH to the group"))
		goto out;
	for (i = 0; i < 3; i++)
		if (ibv_attach_mcast(rq[i], &mgid, 0))
			break;
	if (!ok(i == 3, "ibv_attach_mcast of three QPs, two Q_Keys"))
		goto out;
	for (i = 0; i < 3; i++)
		recv_at(rq[i], i, 4096 * (i + 1));

	pattern(sa.buf, MSG_LEN, 41);
	good = send_to_group(sq, ah, 0x10) &&
	       sent_and_received(rq, 2, 0x10) &&
	       data_at(4096, "QP 1's copy") && data_at(8192, "QP 2's copy");
	ok(good, "a SEND to the group reaches both QPs of its Q_Key and no other, GRH and data checked");

	good = !ibv_detach_mcast(rq[1], &mgid, 0);
	recv_at(rq[0], 0, 4096);
	pattern(sa.buf, MSG_LEN, 43);
	good = good && send_to_group(sq, ah, 0x11) &&
	       sent_and_received(rq, 1, 0x11) &&
	       data_at(4096, "QP 1's second copy");
	ok(good, "ibv_detach_mcast: the detached QP receives nothing more");
	errno = 0;
	i = ibv_detach_mcast(rq[1], &mgid, 0);
	ok(i != 0, "ibv_detach_mcast of a QP not attached fails (got %s)",
	   strerror(i));
out:
	if (ah)
		ibv_destroy_ah(ah);
	/*
	 * QPs 1 and 3 are still attached; ib_uverbs refuses to destroy a QP
	 * with attachments (EBUSY), so they leave the group first.
	 */
	for (i = 0; i < 3; i++) {
		if (!rq[i])
			continue;
		if (i != 1)
			ibv_detach_mcast(rq[i], &mgid, 0);
		ok(!ibv_destroy_qp(rq[i]), "ibv_destroy_qp %d", i);
	}
	if (sq)
		ibv_destroy_qp(sq);
	drain(&sa);
	tap_case = NULL;
}

static void case_refused(void)
{
	struct ibv_qp *rc, *ud[MAX_ATTACH + 1] = {};
	union ibv_gid unicast = sa.gid;
	int i, ret, n = 0;

	mc_prepare("refused");
	rc = make_qp(&sa);
	ret = rc ? ibv_attach_mcast(rc, &mgid, 0) : -1;
	ok(ret == EINVAL, "ibv_attach_mcast of an RC QP: EINVAL (got %s)",
	   strerror(ret));
	if (rc)
		ibv_destroy_qp(rc);

	ud[0] = ud_qp(QKEY);
	ret = ud[0] ? ibv_attach_mcast(ud[0], &unicast, 0) : -1;
	ok(ret == EINVAL, "ibv_attach_mcast of a unicast GID: EINVAL (got %s)",
	   strerror(ret));

	for (i = 0; i < MAX_ATTACH + 1; i++) {
		if (!ud[i])
			ud[i] = ud_qp(QKEY);
		if (!ud[i])
			break;
		ret = ibv_attach_mcast(ud[i], &mgid, 0);
		if (ret)
			break;
		n++;
	}
	ok(n == MAX_ATTACH && ret == ENOMEM,
	   "a group takes %d QPs, the next is refused with ENOMEM (%d, %s)",
	   MAX_ATTACH, n, strerror(ret));
	for (i = 0; i < MAX_ATTACH + 1; i++) {
		if (!ud[i])
			continue;
		if (i < n && ibv_detach_mcast(ud[i], &mgid, 0))
			ok(false, "ibv_detach_mcast %d", i);
		if (ibv_destroy_qp(ud[i]))
			ok(false, "ibv_destroy_qp %d", i);
	}
	tap_case = NULL;
}

int main(int argc, char **argv)
{
	struct in6_addr a6;
	int fd;

	if (argc != 4 || !parse_index(argv[2], &sa.gid_index)) {
		fprintf(stderr, "usage: %s DEV GID_INDEX IPV4_ADDRESS\n",
			argv[0]);
		return 2;
	}
	sa.dev = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");

	memset(&a6, 0, sizeof(a6));
	a6.s6_addr[10] = 0xff;
	a6.s6_addr[11] = 0xff;
	inet_pton(AF_INET, GROUP, &a6.s6_addr[12]);
	memcpy(mgid.raw, &a6, sizeof(mgid.raw));

	fd = join_group(argv[3]);
	if (ok(fd >= 0, "the netdev joins %s", GROUP) &&
	    ok(side_open(&sa, IBV_ACCESS_LOCAL_WRITE), "open %s, GID %d",
	       sa.dev, sa.gid_index)) {
		case_delivery();
		case_refused();
	}
	if (fd >= 0)
		close(fd);
	sides_close();
	return tap_done();
}
