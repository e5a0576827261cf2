// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_xfer: large RC transfers over an unreliable wire deliver the right
 * bytes.
 *
 * A server and a client (normally in two network namespaces joined by a
 * link with netem loss and reordering) connect one RC QP each, exchanging
 * the QP details over a plain TCP socket, and move TOTAL bytes three ways:
 * RDMA WRITE from the client, SEND from the client into posted receives,
 * and RDMA READ by the client. Every completion must succeed, in posting
 * order, with the right opcode, and the receiving side compares every byte
 * against a pattern derived from its offset and a per-phase seed. So a
 * pass proves that retransmission, duplicate and out-of-order handling
 * neither lose, reorder nor corrupt data, and never fail a transfer that
 * the retry limits allow to complete.
 *
 * usage: wire_xfer [-d DEV] [-g GIDIDX] [-p TCPPORT] [-s TOTAL_BYTES]
 *                  [-m MSG_BYTES] [-t SECONDS] [-M MTU] [-R] [-o OPS] [-e]
 *                  [SERVER_HOST]
 *
 * Without SERVER_HOST it is the server. Prints "wire_xfer: OK ..." and
 * exits 0, or prints "wire_xfer: FAIL <reason>" (or "wire_xfer: TIMEOUT"
 * when the -t watchdog fires) and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define IB_PORT		1
#define QP_DEPTH	64	/* max_send_wr and max_recv_wr */
#define CQ_SIZE		(2 * QP_DEPTH + 4)
#define WC_BATCH	16
#define SEND_DEPTH	16	/* outstanding WRITEs and SENDs */
#define READ_DEPTH	4	/* outstanding READs: max_rd_atomic */
#define RECV_DEPTH	32	/* receives kept posted by the server */
#define RD_ATOMIC	4
#define PEER_CHECK	4096	/* empty CQ polls between socket checks */
#define CONNECT_SECS	10	/* the client retries connect() */

#define GOLDEN		0x9E3779B97F4A7C15ULL
#define SEED_WRITE	0x5752495445000000ULL
#define SEED_SEND	0x53454e4400000000ULL
#define SEED_READ	0x5245414400000000ULL

#define INFO_MAGIC	0x57584631	/* "WXF1" */

/* Control messages on the TCP socket, one big-endian u32 each. */
enum {
	CTL_OK = 0x77780001,
	CTL_FAIL,
	CTL_WRITE_DONE,
	CTL_RECV_READY,
	CTL_READ_READY,
};

/* What each side tells the other; integers in network byte order. */
struct xfer_info {
	uint32_t magic;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
	uint64_t total;
	uint32_t msg;
	uint16_t lid;
	uint16_t mtu;
	uint8_t gid[16];
};

_Static_assert(sizeof(struct xfer_info) == 56, "xfer_info has padding");

/* The same, in host byte order. */
struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
	uint64_t total;
	uint32_t msg;
	uint16_t lid;
	uint16_t mtu;
	union ibv_gid gid;
};

static struct {
	const char *dev;
	unsigned int gid_idx;
	const char *port;
	uint64_t total;
	uint64_t msg;
	unsigned int timeout;
	unsigned int mtu;
	enum ibv_mtu mtu_enum;
	const char *host;	/* NULL: server */
	const char *ops;	/* -o: the phases run, of "wsr" */
	bool events;		/* -e: sleep on a completion channel */
} cfg = {
	.port = "18515",
	.ops = "wsr",
	.total = 64ULL << 20,
	.msg = 1ULL << 20,
	.timeout = 300,
	.mtu = 1024,
	.mtu_enum = IBV_MTU_1024,
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;	/* -e only */
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	int sock;
	char dev_name[64];
} g = { .sock = -1 };

static struct peer_info peer;

/* Frees whatever exists, ignoring errors: the failure path. */
static void quiet_teardown(void)
{
	if (g.qp)
		ibv_destroy_qp(g.qp);
	if (g.mr)
		ibv_dereg_mr(g.mr);
	if (g.cq)
		ibv_destroy_cq(g.cq);
	if (g.chan)
		ibv_destroy_comp_channel(g.chan);
	if (g.pd)
		ibv_dealloc_pd(g.pd);
	if (g.ctx)
		ibv_close_device(g.ctx);
	if (g.sock >= 0)
		close(g.sock);
	free(g.buf);
	memset(&g, 0, sizeof(g));
	g.sock = -1;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("wire_xfer: FAIL ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (g.sock >= 0) {
		uint32_t c = htonl(CTL_FAIL);

		/* best effort: the peer stops waiting for us */
		send(g.sock, &c, sizeof(c), MSG_NOSIGNAL);
	}
	quiet_teardown();
	exit(1);
}

/* Verbs calls return an errno value, a negative one, or -1 with errno. */
static const char *verr(int ret)
{
	if (ret == -1)
		return strerror(errno);
	return strerror(ret < 0 ? -ret : ret);
}

static void on_alarm(int sig)
{
	static const char msg[] = "wire_xfer: TIMEOUT\n";
	ssize_t r;

	(void)sig;
	r = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	_exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Data pattern */

static uint64_t pattern_word(uint64_t off, uint64_t seed)
{
	return off * GOLDEN ^ seed;
}

/* Little-endian words, so both ends agree whatever their byte order. */
static void fill(uint64_t seed)
{
	uint64_t off, w;

	for (off = 0; off + 8 <= cfg.total; off += 8) {
		w = htole64(pattern_word(off, seed));
		memcpy(g.buf + off, &w, 8);
	}
	if (off < cfg.total) {
		w = htole64(pattern_word(off, seed));
		memcpy(g.buf + off, &w, cfg.total - off);
	}
}

static void verify(const char *phase, uint64_t seed)
{
	uint64_t off, bad = 0, first = 0, want_first = 0, got_first = 0;

	for (off = 0; off < cfg.total; off += 8) {
		uint64_t n = cfg.total - off < 8 ? cfg.total - off : 8;
		uint64_t want = pattern_word(off, seed), got = 0;

		memcpy(&got, g.buf + off, n);
		got = le64toh(got);
		if (n < 8)
			want &= (1ULL << (8 * n)) - 1;
		if (got == want)
			continue;
		if (!bad++) {
			first = off;
			want_first = want;
			got_first = got;
		}
	}
	if (bad)
		fail("%s: data mismatch, first bad offset %" PRIu64
		     " (0x%" PRIx64 ", message %" PRIu64 "): expected 0x%016"
		     PRIx64 " got 0x%016" PRIx64 ", %" PRIu64 " bad words",
		     phase, first, first, first / cfg.msg, want_first,
		     got_first, bad);
}

/* ------------------------------------------------------------------ */
/* TCP side channel */

static void tcp_write(const void *p, size_t len, const char *what)
{
	const uint8_t *c = p;

	while (len) {
		ssize_t n = send(g.sock, c, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("TCP send (%s): %s", what, strerror(errno));
		}
		c += n;
		len -= n;
	}
}

static void tcp_read(void *p, size_t len, const char *what)
{
	uint8_t *c = p;

	while (len) {
		ssize_t n = recv(g.sock, c, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("TCP recv (%s): %s", what, strerror(errno));
		}
		if (!n)
			fail("peer closed the TCP connection (waiting for %s)",
			     what);
		c += n;
		len -= n;
	}
}

static void send_ctl(uint32_t code, const char *what)
{
	uint32_t c = htonl(code);

	tcp_write(&c, sizeof(c), what);
}

static void expect_ctl(uint32_t want, const char *what)
{
	uint32_t c;

	tcp_read(&c, sizeof(c), what);
	c = ntohl(c);
	if (c == want)
		return;
	if (c == CTL_FAIL) {
		close(g.sock);
		g.sock = -1;
		fail("peer reported a failure (waiting for %s)", what);
	}
	fail("protocol error: got 0x%08x waiting for %s", c, what);
}

/*
 * Called while busy polling: fails at once if the peer has gone away or
 * reported a failure, instead of spinning until the watchdog. Anything
 * else stays queued for the expect_ctl() that comes later.
 */
static void check_peer(const char *phase)
{
	struct pollfd p = { .fd = g.sock, .events = POLLIN };
	uint32_t c;
	ssize_t n;

	if (poll(&p, 1, 0) <= 0)
		return;
	n = recv(g.sock, &c, sizeof(c), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		fail("%s: peer closed the TCP connection", phase);
	if (n == (ssize_t)sizeof(c) && ntohl(c) == CTL_FAIL) {
		close(g.sock);
		g.sock = -1;
		fail("%s: peer reported a failure", phase);
	}
}

static void set_nodelay(void)
{
	int one = 1;

	if (setsockopt(g.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		fail("setsockopt(TCP_NODELAY): %s", strerror(errno));
}

static const char *addr_str(const struct sockaddr *sa, socklen_t len,
			    char *buf, size_t size)
{
	if (getnameinfo(sa, len, buf, size, NULL, 0, NI_NUMERICHOST))
		snprintf(buf, size, "?");
	return buf;
}

/*
 * Listens on all addresses: one dual-stack AF_INET6 socket if the
 * namespace has IPv6, else the AF_INET result.
 */
static void tcp_server(void)
{
	struct addrinfo hints = {
		.ai_flags = AI_PASSIVE,
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	}, *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int lfd = -1, err = 0, pass, ret, one = 1, zero = 0;
	char name[INET6_ADDRSTRLEN + 8];

	ret = getaddrinfo(NULL, cfg.port, &hints, &res);
	if (ret)
		fail("getaddrinfo(port %s): %s", cfg.port, gai_strerror(ret));
	for (pass = 0; pass < 2 && lfd < 0; pass++) {
		for (ai = res; ai && lfd < 0; ai = ai->ai_next) {
			if ((ai->ai_family == AF_INET6) != (pass == 0))
				continue;
			lfd = socket(ai->ai_family, ai->ai_socktype,
				     ai->ai_protocol);
			if (lfd < 0) {
				err = errno;
				continue;
			}
			if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
				       sizeof(one)) ||
			    (ai->ai_family == AF_INET6 &&
			     setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
					sizeof(zero))) ||
			    bind(lfd, ai->ai_addr, ai->ai_addrlen) ||
			    listen(lfd, 1)) {
				err = errno;
				close(lfd);
				lfd = -1;
			}
		}
	}
	freeaddrinfo(res);
	if (lfd < 0)
		fail("cannot listen on TCP port %s: %s", cfg.port,
		     strerror(err));
	fprintf(stderr, "wire_xfer: server waiting on TCP port %s\n",
		cfg.port);
	do
		g.sock = accept(lfd, (struct sockaddr *)&ss, &sslen);
	while (g.sock < 0 && errno == EINTR);
	err = errno;
	close(lfd);
	if (g.sock < 0)
		fail("accept: %s", strerror(err));
	fprintf(stderr, "wire_xfer: client %s connected\n",
		addr_str((struct sockaddr *)&ss, sslen, name, sizeof(name)));
	set_nodelay();
}

/* Retries for CONNECT_SECS, so the client may start before the server. */
static void tcp_client(void)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	}, *res, *ai;
	const struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
	double deadline = now() + CONNECT_SECS;
	char name[INET6_ADDRSTRLEN + 8];
	int fd = -1, err = 0, ret;

	ret = getaddrinfo(cfg.host, cfg.port, &hints, &res);
	if (ret)
		fail("getaddrinfo(%s, port %s): %s", cfg.host, cfg.port,
		     gai_strerror(ret));
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype,
				    ai->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			err = errno;
			close(fd);
			fd = -1;
		}
		if (fd >= 0 || now() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	if (fd < 0) {
		freeaddrinfo(res);
		fail("cannot connect to %s port %s: %s", cfg.host, cfg.port,
		     strerror(err));
	}
	fprintf(stderr, "wire_xfer: connected to %s port %s\n",
		addr_str(ai->ai_addr, ai->ai_addrlen, name, sizeof(name)),
		cfg.port);
	freeaddrinfo(res);
	g.sock = fd;
	set_nodelay();
}

/* ------------------------------------------------------------------ */
/* Verbs setup */

static void open_device(void)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	int i, num;

	list = ibv_get_device_list(&num);
	if (!list)
		fail("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < num && !dev; i++)
		if (!cfg.dev ||
		    !strcmp(ibv_get_device_name(list[i]), cfg.dev))
			dev = list[i];
	if (!dev) {
		ibv_free_device_list(list);
		if (cfg.dev)
			fail("RDMA device %s not found", cfg.dev);
		fail("no RDMA devices");
	}
	snprintf(g.dev_name, sizeof(g.dev_name), "%s",
		 ibv_get_device_name(dev));
	g.ctx = ibv_open_device(dev);
	i = errno;
	ibv_free_device_list(list);
	if (!g.ctx)
		fail("ibv_open_device(%s): %s", g.dev_name, strerror(i));
}

/* Creates everything local and fills in what the peer needs to know. */
static void setup(struct xfer_info *me, uint32_t psn)
{
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = QP_DEPTH,
			.max_recv_wr = QP_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char gstr[INET6_ADDRSTRLEN];
	void *p;
	int ret;

	open_device();

	ret = ibv_query_port(g.ctx, IB_PORT, &pa);
	if (ret)
		fail("ibv_query_port(%s, %d): %s", g.dev_name, IB_PORT,
		     verr(ret));
	if (pa.state != IBV_PORT_ACTIVE)
		fprintf(stderr, "wire_xfer: warning: %s port %d is %s\n",
			g.dev_name, IB_PORT, ibv_port_state_str(pa.state));
	if (cfg.mtu_enum > pa.active_mtu)
		fprintf(stderr,
			"wire_xfer: warning: -M %u above the active MTU %d\n",
			cfg.mtu, 128 << pa.active_mtu);
	if (pa.max_msg_sz && cfg.msg > pa.max_msg_sz)
		fail("MSG %" PRIu64 " above the port's max_msg_sz %u", cfg.msg,
		     pa.max_msg_sz);
	ret = ibv_query_gid(g.ctx, IB_PORT, cfg.gid_idx, &gid);
	if (ret)
		fail("ibv_query_gid(%s, port %d, index %u): %s", g.dev_name,
		     IB_PORT, cfg.gid_idx, verr(ret));
	if (!gid.global.subnet_prefix && !gid.global.interface_id)
		fail("GID index %u of %s port %d is empty", cfg.gid_idx,
		     g.dev_name, IB_PORT);

	g.pd = ibv_alloc_pd(g.ctx);
	if (!g.pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	if (cfg.events) {
		g.chan = ibv_create_comp_channel(g.ctx);
		if (!g.chan)
			fail("ibv_create_comp_channel: %s", strerror(errno));
	}
	g.cq = ibv_create_cq(g.ctx, CQ_SIZE, NULL, g.chan, 0);
	if (!g.cq)
		fail("ibv_create_cq(%d): %s", CQ_SIZE, strerror(errno));
	ret = posix_memalign(&p, sysconf(_SC_PAGESIZE), cfg.total);
	if (ret)
		fail("cannot allocate %" PRIu64 " bytes: %s", cfg.total,
		     strerror(ret));
	g.buf = p;
	memset(g.buf, 0, cfg.total);
	g.mr = ibv_reg_mr(g.pd, g.buf, cfg.total, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!g.mr)
		fail("ibv_reg_mr(%" PRIu64 " bytes): %s", cfg.total,
		     strerror(errno));
	qia.send_cq = g.cq;
	qia.recv_cq = g.cq;
	g.qp = ibv_create_qp(g.pd, &qia);
	if (!g.qp)
		fail("ibv_create_qp(RC): %s", strerror(errno));

	memset(me, 0, sizeof(*me));
	me->magic = htonl(INFO_MAGIC);
	me->qpn = htonl(g.qp->qp_num);
	me->psn = htonl(psn);
	me->rkey = htonl(g.mr->rkey);
	me->addr = htobe64((uintptr_t)g.buf);
	me->total = htobe64(cfg.total);
	me->msg = htonl((uint32_t)cfg.msg);
	me->lid = htons(pa.lid);
	me->mtu = htons(cfg.mtu);
	memcpy(me->gid, gid.raw, sizeof(me->gid));

	inet_ntop(AF_INET6, gid.raw, gstr, sizeof(gstr));
	fprintf(stderr,
		"wire_xfer: local %s port %d lid %u qpn 0x%06x psn 0x%06x "
		"gid %s\n", g.dev_name, IB_PORT, pa.lid, g.qp->qp_num, psn,
		gstr);
}

static void exchange(const struct xfer_info *me)
{
	struct xfer_info in;
	char gstr[INET6_ADDRSTRLEN];

	tcp_write(me, sizeof(*me), "QP info");
	tcp_read(&in, sizeof(in), "QP info");
	if (ntohl(in.magic) != INFO_MAGIC)
		fail("peer is not wire_xfer (magic 0x%08x)", ntohl(in.magic));
	peer.qpn = ntohl(in.qpn) & 0xffffff;
	peer.psn = ntohl(in.psn) & 0xffffff;
	peer.rkey = ntohl(in.rkey);
	peer.addr = be64toh(in.addr);
	peer.total = be64toh(in.total);
	peer.msg = ntohl(in.msg);
	peer.lid = ntohs(in.lid);
	peer.mtu = ntohs(in.mtu);
	memcpy(peer.gid.raw, in.gid, sizeof(in.gid));
	if (peer.total != cfg.total || peer.msg != cfg.msg ||
	    peer.mtu != cfg.mtu)
		fail("peer runs -s %" PRIu64 " -m %u -M %u, we run -s %" PRIu64
		     " -m %" PRIu64 " -M %u", peer.total, peer.msg, peer.mtu,
		     cfg.total, cfg.msg, cfg.mtu);

	inet_ntop(AF_INET6, peer.gid.raw, gstr, sizeof(gstr));
	fprintf(stderr,
		"wire_xfer: remote lid %u qpn 0x%06x psn 0x%06x gid %s addr 0x%"
		PRIx64 " rkey 0x%x\n", peer.lid, peer.qpn, peer.psn, gstr,
		peer.addr, peer.rkey);
}

static void modify(struct ibv_qp_attr *a, int mask, const char *to)
{
	int ret = ibv_modify_qp(g.qp, a, mask);

	if (ret)
		fail("ibv_modify_qp(0x%x) to %s: %s", g.qp->qp_num, to,
		     verr(ret));
}

static void connect_qp(uint32_t psn)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = IB_PORT,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_LOCAL_WRITE,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = cfg.mtu_enum,
		.dest_qp_num = peer.qpn,
		.rq_psn = peer.psn,
		.max_dest_rd_atomic = RD_ATOMIC,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.dlid = peer.lid,
			.sl = 0,
			.src_path_bits = 0,
			.port_num = IB_PORT,
			.grh = {
				.dgid = peer.gid,
				.sgid_index = (uint8_t)cfg.gid_idx,
				.hop_limit = 64,
			},
		},
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		/*
		 * Not 7: rdma_rxe (6.12, rxe_comp.c) retries for ever with 7,
		 * and an rxe end whose peer vanished would then never fail.
		 */
		.retry_cnt = 6,
		.rnr_retry = 7,
		.sq_psn = psn,
		.max_rd_atomic = RD_ATOMIC,
	};

	modify(&init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS, "INIT");
	modify(&rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	       IBV_QP_MIN_RNR_TIMER, "RTR");
	modify(&rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	       "RTS");
}

/* ------------------------------------------------------------------ */
/* Data movement */

/* A QP completes its WRs in posting order, so wr_id must be @want. */
static void check_wc(const struct ibv_wc *wc, enum ibv_wc_opcode op,
		     uint64_t want, const char *phase)
{
	if (wc->status != IBV_WC_SUCCESS)
		fail("%s: completion %" PRIu64 " (wr_id %" PRIu64 "): %s "
		     "(status %d, vendor_err 0x%x)", phase, want, wc->wr_id,
		     ibv_wc_status_str(wc->status), wc->status,
		     wc->vendor_err);
	if (wc->opcode != op)
		fail("%s: completion wr_id %" PRIu64 " has opcode %d, not %d",
		     phase, wc->wr_id, wc->opcode, op);
	if (wc->qp_num != g.qp->qp_num)
		fail("%s: completion wr_id %" PRIu64 " for QPN 0x%x, not 0x%x",
		     phase, wc->wr_id, wc->qp_num, g.qp->qp_num);
	if (wc->wr_id != want)
		fail("%s: completion out of order: wr_id %" PRIu64
		     ", expected %" PRIu64, phase, wc->wr_id, want);
}

static void post_sq(enum ibv_wr_opcode op, uint64_t idx, const char *phase)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(g.buf + idx * cfg.msg),
		.length = (uint32_t)cfg.msg,
		.lkey = g.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = idx,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	int ret;

	if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = peer.addr + idx * cfg.msg;
		wr.wr.rdma.rkey = peer.rkey;
	}
	ret = ibv_post_send(g.qp, &wr, &bad);
	if (ret)
		fail("%s: ibv_post_send(message %" PRIu64 "): %s", phase, idx,
		     verr(ret));
}

static void post_rq(uint64_t idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(g.buf + idx * cfg.msg),
		.length = (uint32_t)cfg.msg,
		.lkey = g.mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = idx,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad = NULL;
	int ret;

	ret = ibv_post_recv(g.qp, &wr, &bad);
	if (ret)
		fail("send: ibv_post_recv(message %" PRIu64 "): %s", idx,
		     verr(ret));
}

/*
 * With -e, an empty CQ is armed and polled once more (a completion may
 * have come before the arming); then the process sleeps on the channel,
 * waking at least every 100 ms to see that the peer is still there.
 */
static void wait_cq_event(const char *phase)
{
	struct pollfd p = { .fd = g.chan->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int ret;

	ret = poll(&p, 1, 100);
	if (ret < 0 && errno != EINTR)
		fail("%s: poll(completion channel): %s", phase,
		     strerror(errno));
	if (ret <= 0) {
		check_peer(phase);
		return;
	}
	if (ibv_get_cq_event(g.chan, &cq, &ctx))
		fail("%s: ibv_get_cq_event: %s", phase, strerror(errno));
	if (cq != g.cq)
		fail("%s: event for a CQ that is not ours", phase);
	ibv_ack_cq_events(cq, 1);
}

static int poll_cq(struct ibv_wc *wc, const char *phase, unsigned int *idle)
{
	int n = ibv_poll_cq(g.cq, WC_BATCH, wc);
	int ret;

	if (!n && cfg.events) {
		ret = ibv_req_notify_cq(g.cq, 0);
		if (ret)
			fail("%s: ibv_req_notify_cq: %s", phase, verr(ret));
		n = ibv_poll_cq(g.cq, WC_BATCH, wc);
		if (!n)
			wait_cq_event(phase);
	}
	if (n < 0)
		fail("%s: ibv_poll_cq: %s", phase, verr(n));
	if (n)
		*idle = 0;
	else if (++*idle % PEER_CHECK == 0)
		check_peer(phase);
	return n;
}

/* Moves the whole buffer as MSG-sized WRs, at most @depth outstanding. */
static void run_sq(enum ibv_wr_opcode op, enum ibv_wc_opcode wc_op,
		   unsigned int depth, const char *phase)
{
	uint64_t count = cfg.total / cfg.msg, posted = 0, done = 0;
	uint64_t step = count >= 8 ? count / 8 : 1;
	struct ibv_wc wc[WC_BATCH];
	unsigned int idle = 0;
	int i, n;

	while (done < count) {
		while (posted < count && posted - done < depth)
			post_sq(op, posted++, phase);
		n = poll_cq(wc, phase, &idle);
		for (i = 0; i < n; i++) {
			check_wc(&wc[i], wc_op, done++, phase);
			/* Signs of life for the test harness's watchdog. */
			if (done % step == 0)
				fprintf(stderr, "wire_xfer: %s %" PRIu64
					" of %" PRIu64 " messages\n", phase,
					done, count);
		}
	}
}

/* Receives MSG-sized SENDs into consecutive slices of the buffer. */
static void run_rq(void)
{
	uint64_t count = cfg.total / cfg.msg, posted = 0, done = 0;
	struct ibv_wc wc[WC_BATCH];
	unsigned int idle = 0;
	int i, n;

	while (posted < count && posted < RECV_DEPTH)
		post_rq(posted++);
	send_ctl(CTL_RECV_READY, "receives posted");
	while (done < count) {
		n = poll_cq(wc, "send", &idle);
		for (i = 0; i < n; i++) {
			check_wc(&wc[i], IBV_WC_RECV, done, "send");
			if (wc[i].byte_len != cfg.msg)
				fail("send: message %" PRIu64 " has %u bytes, "
				     "not %" PRIu64, done, wc[i].byte_len,
				     cfg.msg);
			if (wc[i].wc_flags & IBV_WC_WITH_IMM)
				fail("send: message %" PRIu64
				     " has immediate data", done);
			done++;
			if (posted < count)
				post_rq(posted++);
		}
	}
}

static void phase_write(uint64_t seed)
{
	if (!cfg.host) {
		/* the buffer was zeroed before the QP info went out */
		expect_ctl(CTL_WRITE_DONE, "write done");
		verify("write", seed);
		send_ctl(CTL_OK, "write verified");
		return;
	}
	fill(seed);
	run_sq(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, SEND_DEPTH, "write");
	send_ctl(CTL_WRITE_DONE, "write done");
	expect_ctl(CTL_OK, "write verification");
}

static void phase_send(uint64_t seed)
{
	if (!cfg.host) {
		memset(g.buf, 0, cfg.total);
		run_rq();
		verify("send", seed);
		send_ctl(CTL_OK, "send verified");
		return;
	}
	fill(seed);
	expect_ctl(CTL_RECV_READY, "receives posted");
	run_sq(IBV_WR_SEND, IBV_WC_SEND, SEND_DEPTH, "send");
	expect_ctl(CTL_OK, "send verification");
}

static void phase_read(uint64_t seed)
{
	if (!cfg.host) {
		fill(seed);
		send_ctl(CTL_READ_READY, "read source ready");
		expect_ctl(CTL_OK, "read verification");
		return;
	}
	memset(g.buf, 0, cfg.total);
	expect_ctl(CTL_READ_READY, "read source ready");
	run_sq(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, READ_DEPTH, "read");
	verify("read", seed);
	send_ctl(CTL_OK, "read verified");
}

/* The success path: every destroy must work. */
static void teardown(void)
{
	int ret;

#define DESTROY(field, call, name)					\
	do {								\
		ret = call(g.field);					\
		g.field = NULL;						\
		if (ret)						\
			fail(name ": %s", verr(ret));			\
	} while (0)

	DESTROY(qp, ibv_destroy_qp, "ibv_destroy_qp");
	DESTROY(mr, ibv_dereg_mr, "ibv_dereg_mr");
	DESTROY(cq, ibv_destroy_cq, "ibv_destroy_cq");
	if (g.chan)
		DESTROY(chan, ibv_destroy_comp_channel,
			"ibv_destroy_comp_channel");
	DESTROY(pd, ibv_dealloc_pd, "ibv_dealloc_pd");
	DESTROY(ctx, ibv_close_device, "ibv_close_device");
#undef DESTROY
	free(g.buf);
	g.buf = NULL;
	close(g.sock);
	g.sock = -1;
}

/* ------------------------------------------------------------------ */
/* Command line */

/* The bytes phase @op moves in this run: cfg.total, or 0 if not run. */
static uint64_t phase_bytes(char op)
{
	return strchr(cfg.ops, op) ? cfg.total : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: wire_xfer [-d DEV] [-g GIDIDX] [-p TCPPORT] [-s TOTAL_BYTES]\n"
"                 [-m MSG_BYTES] [-t SECONDS] [-M MTU] [-R] [-o OPS] [-e]\n"
"                 [SERVER_HOST]\n"
"  -d DEV          RDMA device (default: the first one)\n"
"  -g GIDIDX       source GID index on port 1 (default 0)\n"
"  -p TCPPORT      TCP port of the side channel (default 18515)\n"
"  -s TOTAL_BYTES  bytes moved per phase (default 64M)\n"
"  -m MSG_BYTES    bytes per WR, must divide TOTAL (default 1M)\n"
"  -t SECONDS      watchdog for the whole run (default 300)\n"
"  -M MTU          path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)\n"
"  -R              WRITE and SEND phases only (-o ws)\n"
"  -o OPS          the phases run, any of w (WRITE), s (SEND), r (READ);\n"
"                  give it to both sides (default wsr)\n"
"  -e              sleep on a completion channel instead of busy polling\n"
"  SERVER_HOST     run as the client of this server; without it, serve\n"
"Sizes take a K, M or G suffix (powers of 1024).\n");
}

static void __attribute__((noreturn, format(printf, 1, 2)))
bad_args(const char *fmt, ...)
{
	va_list ap;

	fputs("wire_xfer: FAIL ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	usage(stderr);
	exit(1);
}

static bool parse_u64(const char *s, uint64_t *out, bool suffix)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!*s || strchr(s, '-'))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	if (suffix && *end) {
		switch (*end++) {
		case 'k': case 'K':
			shift = 10;
			break;
		case 'm': case 'M':
			shift = 20;
			break;
		case 'g': case 'G':
			shift = 30;
			break;
		default:
			return false;
		}
	}
	if (*end || v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

static void parse_args(int argc, char **argv)
{
	uint64_t v;
	int c;

	while ((c = getopt(argc, argv, "d:g:p:s:m:t:M:Ro:eh")) != -1) {
		switch (c) {
		case 'd':
			cfg.dev = optarg;
			break;
		case 'g':
			if (!parse_u64(optarg, &v, false) || v > 255)
				bad_args("bad GID index '%s'", optarg);
			cfg.gid_idx = v;
			break;
		case 'p':
			if (!parse_u64(optarg, &v, false) || !v || v > 65535)
				bad_args("bad TCP port '%s'", optarg);
			cfg.port = optarg;
			break;
		case 's':
			if (!parse_u64(optarg, &cfg.total, true) || !cfg.total)
				bad_args("bad TOTAL_BYTES '%s'", optarg);
			break;
		case 'm':
			if (!parse_u64(optarg, &cfg.msg, true) || !cfg.msg)
				bad_args("bad MSG_BYTES '%s'", optarg);
			break;
		case 't':
			if (!parse_u64(optarg, &v, false) || !v ||
			    v > 1000000)
				bad_args("bad SECONDS '%s'", optarg);
			cfg.timeout = v;
			break;
		case 'M':
			if (!parse_u64(optarg, &v, false))
				bad_args("bad MTU '%s'", optarg);
			switch (v) {
			case 256:
				cfg.mtu_enum = IBV_MTU_256;
				break;
			case 512:
				cfg.mtu_enum = IBV_MTU_512;
				break;
			case 1024:
				cfg.mtu_enum = IBV_MTU_1024;
				break;
			case 2048:
				cfg.mtu_enum = IBV_MTU_2048;
				break;
			case 4096:
				cfg.mtu_enum = IBV_MTU_4096;
				break;
			default:
				bad_args("bad MTU '%s': 256, 512, 1024, 2048 "
					 "or 4096", optarg);
			}
			cfg.mtu = v;
			break;
		case 'R':
			/* Both sides must be given it: no READ phase. */
			cfg.ops = "ws";
			break;
		case 'o':
			if (!*optarg || strspn(optarg, "wsr") != strlen(optarg))
				bad_args("bad phases '%s': any of w, s, r", optarg);
			cfg.ops = optarg;
			break;
		case 'e':
			cfg.events = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			bad_args("bad option");
		}
	}
	if (optind < argc)
		cfg.host = argv[optind++];
	if (optind < argc)
		bad_args("unexpected argument '%s'", argv[optind]);
	if (cfg.total < cfg.msg)
		bad_args("TOTAL_BYTES %" PRIu64 " is smaller than MSG_BYTES %"
			 PRIu64, cfg.total, cfg.msg);
	if (cfg.total % cfg.msg)
		bad_args("TOTAL_BYTES %" PRIu64 " is not a multiple of "
			 "MSG_BYTES %" PRIu64, cfg.total, cfg.msg);
	if (cfg.msg > 1U << 31)
		bad_args("MSG_BYTES %" PRIu64 " is above 2G", cfg.msg);
	if (cfg.total > SIZE_MAX / 2)
		bad_args("TOTAL_BYTES %" PRIu64 " is too large", cfg.total);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct xfer_info me;
	struct timespec ts;
	uint64_t salt;
	uint32_t psn;
	double t0, t1, t2, t3;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL))
		fail("sigaction(SIGALRM): %s", strerror(errno));
	alarm(cfg.timeout);

	clock_gettime(CLOCK_REALTIME, &ts);
	srand48(ts.tv_nsec ^ ts.tv_sec ^ ((long)getpid() << 16));
	psn = lrand48() & 0xffffff;

	setup(&me, psn);
	if (cfg.host)
		tcp_client();
	else
		tcp_server();
	exchange(&me);
	connect_qp(psn);
	/* Neither side posts before the other's QP is ready to receive. */
	send_ctl(CTL_OK, "QP ready");
	expect_ctl(CTL_OK, "peer QP ready");

	/* A new pattern every run: stale data from an old run cannot pass. */
	salt = cfg.host ? (uint64_t)peer.psn << 32 | psn :
			  (uint64_t)psn << 32 | peer.psn;

	/*
	 * A line per phase: the test harness takes a long silence for a
	 * hang, and a phase through netem takes minutes under emulation.
	 */
	t0 = now();
	if (strchr(cfg.ops, 'w'))
		phase_write(SEED_WRITE ^ salt);
	t1 = now();
	fprintf(stderr, "wire_xfer: write done in %.3f s\n", t1 - t0);
	if (strchr(cfg.ops, 's'))
		phase_send(SEED_SEND ^ salt);
	t2 = now();
	fprintf(stderr, "wire_xfer: send done in %.3f s\n", t2 - t1);
	if (strchr(cfg.ops, 'r'))
		phase_read(SEED_READ ^ salt);
	t3 = now();
	fprintf(stderr, "wire_xfer: write %.3f s, send %.3f s, read %.3f s\n",
		t1 - t0, t2 - t1, t3 - t2);

	teardown();
	printf("wire_xfer: OK write=%" PRIu64 " send=%" PRIu64 " read=%" PRIu64
	       " bytes MB/s=%.1f\n", phase_bytes('w'), phase_bytes('s'),
	       phase_bytes('r'),
	       (double)(phase_bytes('w') + phase_bytes('s') + phase_bytes('r')) /
	       1e6 / (t3 > t0 ? t3 - t0 : 1e-9));
	return 0;
}
