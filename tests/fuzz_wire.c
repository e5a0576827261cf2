// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_wire: a RoCEv2 packet fuzzer that accounts for every packet.
 *
 * The program runs in the network namespace of the device under test
 * (DEV, normally softrvt1 in ns1) and sends from a raw socket it opens in
 * another namespace (normally ns2, across the veth).  It keeps, on DEV,
 * QPs of every type (RC, UC, UD) in every state (RESET, INIT, RTR, RTS,
 * SQD, SQE, ERR), with receives and sends posted, whose peer is FUZZ, an
 * address no host owns; and between DEV and PEER (softrvt2, the other end
 * of the veth) an RC connection carrying real traffic whose every byte is
 * checked.  Each round makes fresh QPs, sends ROUND packets built from
 * the header layouts (every opcode of every transport, valid for the QP
 * it goes to) and mutated (bit flips, boundary values of PSN, QPN, P_Key,
 * rkey, va, DMA length, Q_Key, syndrome, pad, opcode, lengths cut or
 * grown, the UDP length), most with their ICRC fixed up and some not,
 * from FUZZ, from an address that is nobody's peer and from the real
 * peer's address, over IPv4 and IPv6.
 *
 * The accounting.  For each packet the program predicts, from its bytes,
 * what the receive path of DEV does with it (softrvt_rcv(): the UDP layer's
 * own checks, then header, ICRC, P_Key, QP number and transport) and, for
 * a packet that is queued, what its QP's engine does, as far as that does
 * not depend on earlier fuzzed packets.  After a round, once the real
 * traffic is idle and every queue is drained:
 *
 *  - network: the UDP datagrams of DEV's namespace (InDatagrams +
 *    InErrors, IPv4 and IPv6) grew by exactly the packets sent plus the
 *    packets PEER sent (its tx_packets); InErrors by exactly the packets
 *    with a UDP length longer than the datagram.  Nothing vanished
 *    between the socket and the device.
 *  - the door: drop_bad_icrc, drop_bad_pkey, drop_no_qp and
 *    drop_bad_transport grew by exactly the number predicted for each;
 *    rx_packets + drop_queue_full (+ drop_dev_queue_full) by exactly the
 *    packets predicted to pass plus PEER's; drop_bad_hdr by at least the
 *    number predicted (the engine also counts there) and at most that
 *    plus the packets whose effect depends on the QP's history ("wild").
 *  - the engine, when no packet was dropped for a full queue:
 *    drop_bad_addr exactly (a connected QP in RTR or later takes only
 *    its peer's packets; the real traffic's QP is shot at from other
 *    addresses only), drop_bad_qkey exactly (UD), drop_bad_state at least
 *    what INIT and ERR QPs and RC responses to an RTR QP make, and at
 *    most that plus the wild packets; a QP in RESET counts nothing.
 *  - UD receives: a UD QP takes one receive WQE per packet with its Q_Key
 *    while it has one: its completions, in order, are exactly those
 *    packets, with their length, immediate data, IP header and payload.
 *  - every WQE posted on the fuzzer's QPs completes exactly once once the
 *    QPs are moved to ERR (success or an error status), with a known
 *    wr_id; no other completion appears; no CQ or device error event.
 *  - the real traffic: every SEND, WRITE with immediate and READ
 *    completes successfully, in order, with its bytes.
 *
 * usage: fuzz_wire [-n PACKETS] [-r ROUND] [-s SEED] [-t SECONDS] [-S]
 *                  [-d DEV] [-a ADDR] [-A ADDR6] [-D PEER] [-p PEER_ADDR]
 *                  [-N NETNS] [-f FUZZ] [-F FUZZ6] [-x OTHER] [-X OTHER6]
 * Defaults are those of scripts/guest/wire-setup.sh.  -S sends one packet
 * at a time and checks the door's verdict on each (slow; for finding the
 * packet behind a mismatch).  Prints TAP; exits 1 on a failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
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

#include "tap.h"

typedef uint8_t u8;
#include "../kunit/rxe_vectors.h"

#define IB_PORT		1
#define MTU		256		/* the fuzzer QPs' path MTU: small packets */
#define ROCE_PORT	4791
#define GSI_QKEY	0x80010000u
#define FUZZ_QKEY	0x1eadbeefu
#define FAKE_DQPN	0xfed000	/* the fuzzer's QPs' peers: nobody */
#define BATCH		64		/* packets per sendmmsg */
#define PKT_MAX		1480		/* on a 1500-byte link, IPv6 too */
#define QP_CAP		3000		/* packets per QP per round */
#define NRECV		8		/* receives posted per fuzzer QP */
#define RBUF		2048		/* bytes per receive buffer */
#define QBUF		(64 * 1024)	/* memory per fuzzer QP */
#define WAIT_MS		120000		/* for the network and the engines */
#define MAX_FQP		32

/* ---- Packets ---------------------------------------------------------- */

enum {
	OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM,
	OP_SEND_ONLY, OP_SEND_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
	OP_WRITE_LAST, OP_WRITE_LAST_IMM, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM,
	OP_READ_REQ, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
	OP_READ_RESP_LAST, OP_READ_RESP_ONLY, OP_ACK, OP_ATOMIC_ACK,
	OP_CMP_SWAP, OP_FETCH_ADD, OP_RESV_15, OP_SEND_LAST_INV,
	OP_SEND_ONLY_INV,
};
#define TR_RC	0x00
#define TR_UC	0x20
#define TR_UD	0x60
#define TR_XRC	0xa0

enum {
	H_RETH = 1, H_AETH = 2, H_DETH = 4, H_IMM = 8, H_IETH = 16,
	H_ATMETH = 32, H_ATMACK = 64, H_PAYLOAD = 128, H_XRCETH = 256,
	H_FETH = 512,
};

/* The headers after the BTH of each operation (IBA 9.2), as softrvt
 * parses them; 0: an operation softrvt does not speak. */
static const uint8_t op_hdrs[32] = {
	[OP_SEND_FIRST] = H_PAYLOAD,
	[OP_SEND_MIDDLE] = H_PAYLOAD,
	[OP_SEND_LAST] = H_PAYLOAD,
	[OP_SEND_LAST_IMM] = H_IMM | H_PAYLOAD,
	[OP_SEND_ONLY] = H_PAYLOAD,
	[OP_SEND_ONLY_IMM] = H_IMM | H_PAYLOAD,
	[OP_WRITE_FIRST] = H_RETH | H_PAYLOAD,
	[OP_WRITE_MIDDLE] = H_PAYLOAD,
	[OP_WRITE_LAST] = H_PAYLOAD,
	[OP_WRITE_LAST_IMM] = H_IMM | H_PAYLOAD,
	[OP_WRITE_ONLY] = H_RETH | H_PAYLOAD,
	[OP_WRITE_ONLY_IMM] = H_RETH | H_IMM | H_PAYLOAD,
	[OP_READ_REQ] = H_RETH,
	[OP_READ_RESP_FIRST] = H_AETH | H_PAYLOAD,
	[OP_READ_RESP_MIDDLE] = H_PAYLOAD,
	[OP_READ_RESP_LAST] = H_AETH | H_PAYLOAD,
	[OP_READ_RESP_ONLY] = H_AETH | H_PAYLOAD,
	[OP_ACK] = H_AETH,
	[OP_ATOMIC_ACK] = H_AETH | H_ATMACK,
	[OP_CMP_SWAP] = H_ATMETH,
	[OP_FETCH_ADD] = H_ATMETH,
	[OP_SEND_LAST_INV] = H_IETH | H_PAYLOAD,
	[OP_SEND_ONLY_INV] = H_IETH | H_PAYLOAD,
};

/* The headers of an opcode; -1 for one softrvt refuses. */
/*
 * FLUSH and ATOMIC_WRITE (0x1c, 0x1d on RC and XRC): softrvt parses them,
 * so the door counts them as it counts any request.  The fuzzer builds
 * none on purpose (op_hdrs[] lacks them); random opcodes meet them.
 */
static int placement_hdrs(uint8_t op)
{
	return op == 0x1c ? H_FETH | H_RETH : H_RETH | H_PAYLOAD;
}

static int opcode_hdrs(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	if (((opcode & 0xe0) == TR_RC || (opcode & 0xe0) == TR_XRC) &&
	    (op == 0x1c || op == 0x1d))
		return placement_hdrs(op) |
		       ((opcode & 0xe0) == TR_XRC ? H_XRCETH : 0);

	switch (opcode & 0xe0) {
	case TR_RC:
		break;
	case TR_UC:
		if (op > OP_WRITE_ONLY_IMM)
			return -1;
		break;
	case TR_UD:
		if (op != OP_SEND_ONLY && op != OP_SEND_ONLY_IMM)
			return -1;
		return op_hdrs[op] | H_DETH;
	case TR_XRC:
		/* RC's, with an XRCETH on requests; no QP here speaks it. */
		if (!op_hdrs[op])
			return -1;
		if (op >= OP_READ_RESP_FIRST && op <= OP_ATOMIC_ACK)
			return op_hdrs[op];
		return op_hdrs[op] | H_XRCETH;
	default:
		return -1;
	}
	return op_hdrs[op] ? op_hdrs[op] : -1;
}

static int hdrs_len(int h)
{
	return 12 + (h & H_XRCETH ? 4 : 0) + (h & H_FETH ? 4 : 0) +
	       (h & H_DETH ? 8 : 0) + (h & H_RETH ? 16 : 0) +
	       (h & H_ATMETH ? 28 : 0) + (h & H_AETH ? 4 : 0) +
	       (h & H_ATMACK ? 8 : 0) + (h & H_IMM ? 4 : 0) +
	       (h & H_IETH ? 4 : 0);
}

static bool is_response(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	return (opcode & 0xe0) == TR_RC && op >= OP_READ_RESP_FIRST &&
	       op <= OP_ATOMIC_ACK;
}

/* CRC-32 (IEEE 802.3, reflected), eight bytes at a time. */
static uint32_t crc_tab[8][256];

static void crc_init(void)
{
	uint32_t c;
	int i, j;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
					crc_tab[0][crc_tab[j - 1][i] & 0xff];
}

static uint32_t crc_raw(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t a = c ^ (p[0] | p[1] << 8 | p[2] << 16 |
				  (uint32_t)p[3] << 24);

		c = crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
		    crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
		    crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^
		    crc_tab[0][p[7]];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

/*
 * The ICRC of a packet: @l3 is its IP header, @len the bytes from there
 * to the end of the pad.  The fields a router may change are ones.
 */
static uint32_t icrc(const uint8_t *l3, bool v6, size_t len)
{
	static const uint8_t ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	size_t ipl = v6 ? 40 : 20, hl = ipl + 8 + 12;
	uint8_t h[40 + 8 + 12];
	uint32_t c;

	if (len < hl)
		return 0;	/* no BTH: softrvt drops it before the ICRC */
	memcpy(h, l3, hl);
	if (v6) {
		h[0] |= 0x0f;
		h[1] = h[2] = h[3] = 0xff;
		h[7] = 0xff;
	} else {
		h[1] = 0xff;
		h[8] = 0xff;
		h[10] = h[11] = 0xff;
	}
	h[ipl + 6] = h[ipl + 7] = 0xff;
	h[ipl + 8 + 4] = 0xff;
	c = crc_raw(0xffffffffu, ones, sizeof(ones));
	c = crc_raw(c, h, hl);
	c = crc_raw(c, l3 + hl, len - hl);
	return ~c;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}
static uint16_t get16(const uint8_t *p) { return p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}
static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}
static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t ip_csum(const uint8_t *p, int n)
{
	uint32_t s = 0;
	int i;

	for (i = 0; i < n; i += 2)
		s += get16(p + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/* ---- Randomness ------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd(uint32_t n) { return n ? rnd64() % n : 0; }
static bool chance(unsigned int percent) { return rnd(100) < percent; }

static uint32_t pick32(const uint32_t *v, size_t n) { return v[rnd(n)]; }
#define PICK(...) ({ const uint32_t v_[] = { __VA_ARGS__ }; \
		     pick32(v_, sizeof(v_) / sizeof(v_[0])); })

/* ---- What the program knows of DEV ------------------------------------ */

enum role { R_FUZZ, R_REAL, R_GSI };

/* What happens to a packet, as predicted. */
enum fate {
	V_UDP_ERR,	/* the UDP layer drops it: InErrors */
	V_HDR, V_ICRC, V_PKEY, V_NOQP, V_TRANSPORT,	/* the door drops it */
	E_SILENT,	/* queued on a QP in RESET: purged */
	E_ADDR,		/* drop_bad_addr */
	E_STATE,	/* drop_bad_state */
	E_QKEY,		/* drop_bad_qkey */
	E_UD_OK,	/* takes a UD receive */
	E_WILD,		/* depends on the QP's history */
	NFATE,
};

static const char *const fate_name[NFATE] = {
	"UDP error", "bad header", "bad ICRC", "bad P_Key", "no QP",
	"bad transport", "RESET QP", "bad address", "bad state", "bad Q_Key",
	"UD receive", "wild",
};

/*
 * An IPv6 datagram whose UDP length is 0: Linux 6.12's UDP layer takes 0
 * as a jumbogram's length (RFC 2675) whether or not the packet has a jumbo
 * payload option, and softrvt drops it as a bad header; Linux 7.x takes it
 * so only with that option and drops the datagram itself (InErrors).
 * probe_v6_len0() asks the kernel with one such packet.
 */
static enum fate v6_len0_fate = V_HDR;

struct wrk {			/* a posted WQE */
	uint64_t wr_id;
	bool done;
};

/* A UD packet expected to land in a receive. */
struct ud_expect {
	uint32_t len;		/* payload */
	bool imm;
	uint32_t imm_data;	/* as on the wire */
	uint8_t ip[40];		/* the IP header as sent */
	bool v6;
	uint32_t sum;		/* of the payload */
};

struct fqp {
	enum role role;
	const char *name;
	struct ibv_qp *qp;
	uint32_t qpn;
	int type;		/* IBV_QPT_RC/UC/UD */
	int state;		/* at the start of the round */
	bool v6;		/* path over IPv6 */
	bool local;		/* peer on DEV itself */
	bool has_path;
	bool srq;
	uint32_t qkey;
	uint32_t rpsn;		/* the PSN its responder should expect next */
	uint32_t spsn, spsn_end;	/* PSNs its requester has sent */
	uint32_t sent;		/* packets this round */
	uint8_t *buf;		/* QBUF bytes, all of mr */
	struct ibv_mr *mr;
	struct wrk recv[NRECV + 4];
	int nrecv;
	struct wrk send[8];
	int nsend;
	/* UD: the packets expected in its receives, in order. */
	struct ud_expect ud[NRECV];
	int ud_n;		/* packets with its Q_Key this round */
	int ud_seen;		/* completions that took a packet */
	bool msg_open;		/* a multi-packet message was begun */
};

static struct {
	const char *dev, *peer_dev, *netns;
	const char *addr, *addr6, *peer_addr;
	const char *fuzz, *fuzz6, *other, *other6;
	uint64_t packets;
	uint32_t round;
	uint64_t seed;
	unsigned int seconds;
	bool single;
} cfg = {
	.dev = "softrvt1", .peer_dev = "softrvt2", .netns = "/run/netns/ns2",
	.addr = "198.18.12.1", .addr6 = "2001:2:0:12::1",
	.peer_addr = "198.18.12.2",
	.fuzz = "198.18.12.3", .fuzz6 = "2001:2:0:12::3",
	.other = "198.18.12.4", .other6 = "2001:2:0:12::4",
	.packets = 1000000, .round = 25000, .seconds = 1800,
};

static struct in_addr a4, p4, f4, x4;
static struct in6_addr a6, f6, x6;

/* The device under test: verbs objects of the fuzzer. */
static struct ibv_context *ctx;
static struct ibv_pd *fpd;
static struct ibv_cq *fcq;
static struct ibv_srq *fsrq;
static struct ibv_mr *srq_mr;
static uint8_t *srq_buf;
static struct wrk srq_wr[32];
static int srq_n;
static struct ibv_ah *ah4, *ah6;
static int gid4, gid6;
static union ibv_gid dgid4, dgid6, fgid4, fgid6;

static struct fqp fq[MAX_FQP];
static int nfq;
static struct fqp gsi = { .role = R_GSI, .name = "GSI", .qpn = 1,
			  .type = IBV_QPT_UD, .state = IBV_QPS_RTS,
			  .qkey = GSI_QKEY };
static struct fqp real_a = { .role = R_REAL, .name = "real traffic",
			     .type = IBV_QPT_RC, .state = IBV_QPS_RTS,
			     .has_path = true };
static uint32_t round_no;

static struct fqp *find_qpn(uint32_t qpn)
{
	int i;

	if (qpn == 1)
		return &gsi;
	if (real_a.qp && qpn == real_a.qpn)
		return &real_a;
	for (i = 0; i < nfq; i++)
		if (fq[i].qpn == qpn)
			return &fq[i];
	return NULL;
}

/* ---- The prediction --------------------------------------------------- */

/* Addresses of a built packet, for the path check. */
enum src { S_FUZZ, S_OTHER, S_PEER };

struct pkt {
	uint8_t d[PKT_MAX + 64];
	uint16_t len;
	bool v6;
	enum src src;
	enum fate fate;
	struct fqp *qp;		/* the QP it reaches, if queued */
};

/*
 * What DEV's receive path does with @p, and, for a packet it queues, its
 * QP's engine as far as the QP's state at the start of the round says.
 */
static enum fate predict(struct pkt *p)
{
	size_t ipl = p->v6 ? 40 : 20;
	const uint8_t *udp = p->d + ipl, *bth = udp + 8;
	uint32_t ulen = get16(udp + 4), rest, rem, qpn;
	uint8_t opcode, pad;
	struct fqp *q;
	int h, hl;

	p->qp = NULL;
	if (p->v6 && !ulen)
		return v6_len0_fate;
	if (ulen < 8 || ulen > p->len - ipl)
		return V_UDP_ERR;
	rest = ulen - 8;
	if (rest < 12 + 4)
		return V_HDR;
	opcode = bth[0];
	if (bth[1] & 0x0f)
		return V_HDR;
	h = opcode_hdrs(opcode);
	if (h < 0)
		return V_HDR;
	hl = hdrs_len(h);
	if (rest < (uint32_t)hl + 4)
		return V_HDR;
	pad = (bth[1] >> 4) & 3;
	rem = rest - hl - 4;
	if (pad > rem || (rem && !(h & H_PAYLOAD)))
		return V_HDR;
	if (icrc(p->d, p->v6, ipl + 8 + rest - 4) !=
	    get_le32(bth + rest - 4))
		return V_ICRC;
	if ((get16(bth + 2) & 0x7fff) != 0x7fff)
		return V_PKEY;
	qpn = get32(bth + 4) & 0xffffff;
	/*
	 * The multicast QPN takes UD packets to a multicast address only:
	 * every packet here goes to softrvt1's own address.
	 */
	if (qpn == 0xffffff)
		return V_TRANSPORT;
	q = find_qpn(qpn);
	if (!q)
		return V_NOQP;
	if ((q->type == IBV_QPT_RC && (opcode & 0xe0) != TR_RC) ||
	    (q->type == IBV_QPT_UC && (opcode & 0xe0) != TR_UC) ||
	    (q->type == IBV_QPT_UD && (opcode & 0xe0) != TR_UD))
		return V_TRANSPORT;
	p->qp = q;

	/* Queued on q: its engine (ruc.c, resp.c, comp.c). */
	if (q->state == IBV_QPS_RESET)
		return E_SILENT;
	if (q->type == IBV_QPT_UD) {
		if (q->state == IBV_QPS_INIT || q->state == IBV_QPS_ERR)
			return E_STATE;
		if (get32(bth + 12) != q->qkey)
			return E_QKEY;
		return q->role == R_GSI ? E_WILD : E_UD_OK;
	}
	if (q->state == IBV_QPS_INIT)
		return E_STATE;
	if (q->local || p->v6 != q->v6 ||
	    p->src != (q->role == R_REAL ? S_PEER : S_FUZZ))
		return E_ADDR;
	if (q->state == IBV_QPS_ERR)
		return E_STATE;
	if (q->type == IBV_QPT_RC && q->state == IBV_QPS_RTR &&
	    is_response(opcode))
		return E_STATE;
	return E_WILD;
}

/* ---- Building packets -------------------------------------------------- */

static uint16_t ip_id = 1;

/* IP and UDP headers for @tlen bytes of BTH..ICRC. */
static size_t put_ip_udp(struct pkt *p, uint32_t tlen)
{
	uint8_t *d = p->d;
	const void *src;

	if (p->v6) {
		src = p->src == S_FUZZ ? (const void *)&f6 : (const void *)&x6;
		put32(d, 0x60000000u | (chance(20) ? rnd(1 << 28) : 0));
		put16(d + 4, 8 + tlen);
		d[6] = 17;
		d[7] = chance(20) ? rnd(256) : 64;
		memcpy(d + 8, src, 16);
		memcpy(d + 24, &a6, 16);
		d += 40;
	} else {
		const struct in_addr *s = p->src == S_FUZZ ? &f4 :
					  p->src == S_OTHER ? &x4 : &p4;

		d[0] = 0x45;
		d[1] = chance(20) ? rnd(256) : 0;
		put16(d + 2, 20 + 8 + tlen);
		if (!++ip_id)
			ip_id = 1;	/* 0 would be replaced by the kernel */
		put16(d + 4, ip_id);
		put16(d + 6, 0x4000);
		d[8] = chance(20) ? 1 + rnd(255) : 64;
		d[9] = 17;
		put16(d + 10, 0);
		memcpy(d + 12, s, 4);
		memcpy(d + 16, &a4, 4);
		put16(d + 10, ip_csum(d, 20));
		d += 20;
	}
	put16(d, 49152 + rnd(16384));
	put16(d + 2, ROCE_PORT);
	put16(d + 4, 8 + tlen);
	put16(d + 6, 0);
	return p->v6 ? 40 : 20;
}

/* Lengths of the IP header fields once the transport part is @tlen. */
static void fix_lengths(struct pkt *p, uint32_t tlen)
{
	size_t ipl = p->v6 ? 40 : 20;

	if (p->v6) {
		put16(p->d + 4, 8 + tlen);
	} else {
		put16(p->d + 2, 20 + 8 + tlen);
		put16(p->d + 10, 0);
		put16(p->d + 10, ip_csum(p->d, 20));
	}
	put16(p->d + ipl + 4, 8 + tlen);
	p->len = ipl + 8 + tlen;
}

static const uint32_t psn_edges[] = {
	0, 1, 0x7fffff, 0x800000, 0x800001, 0xfffffe, 0xffffff,
};

static uint32_t psn_near(uint32_t psn)
{
	switch (rnd(6)) {
	case 0:
		return psn_edges[rnd(7)];
	case 1:
		return (psn + 0x800000) & 0xffffff;
	case 2:
		return (psn - 1 - rnd(4)) & 0xffffff;
	case 3:
		return (psn + 1 + rnd(64)) & 0xffffff;
	case 4:
		return rnd(1 << 24);
	default:
		return (psn ^ (1u << rnd(24))) & 0xffffff;
	}
}

static uint32_t some_qpn(const struct fqp *q)
{
	switch (rnd(7)) {
	case 0:
		return PICK(0, 1, 2, 3, 0xffffff, 0xfffffe, 0x800000);
	case 1:
		return q->qpn ^ (1u << rnd(24));
	case 2:
		return nfq ? fq[rnd(nfq)].qpn : 1;
	case 3:
		return real_a.qpn;
	case 4:
		return (q->qpn + 1 + rnd(3)) & 0xffffff;
	case 5:
		return 1;
	default:
		return rnd(1 << 24);
	}
}

static uint64_t some_va(const struct fqp *q, uint32_t len)
{
	uint64_t b = (uintptr_t)q->buf;

	switch (rnd(9)) {
	case 0: return 0;
	case 1: return ~0ull;
	case 2: return b - 1;
	case 3: return b + QBUF - len + 1;
	case 4: return b + QBUF;
	case 5: return 1ull << 63;
	case 6: return b + QBUF - 8;
	case 7: return (uintptr_t)srq_buf;
	default: return rnd64();
	}
}

static uint32_t some_rkey(const struct fqp *q)
{
	uint32_t k = q->mr ? q->mr->rkey : 0;

	switch (rnd(8)) {
	case 0: return 0;
	case 1: return ~0u;
	case 2: return k ^ (1u << rnd(32));
	case 3: return k + 0x100;
	case 4: return k - 0x100;
	case 5: return srq_mr ? srq_mr->rkey : 0;
	case 6: {
		const struct fqp *o = nfq ? &fq[rnd(nfq)] : q;

		return o->mr ? o->mr->rkey : 0;
	}
	default: return (uint32_t)rnd64();
	}
}

static uint32_t some_len(void)
{
	return PICK(0, 1, 7, 8, 9, MTU - 1, MTU, MTU + 1, 2 * MTU,
		    QBUF, QBUF + 1, 0x7fffffff, 0x80000000u, 0xfffffc00u,
		    0xffffffffu, 0xfffffbffu);
}

/* The operations a QP of type @type might be sent, requests or answers. */
static uint8_t base_opcode(const struct fqp *q)
{
	static const uint8_t rc_req[] = {
		OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM,
		OP_SEND_ONLY, OP_SEND_ONLY, OP_SEND_ONLY_IMM, OP_WRITE_FIRST,
		OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_LAST_IMM,
		OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM, OP_READ_REQ,
		OP_READ_REQ, OP_CMP_SWAP, OP_FETCH_ADD, OP_SEND_LAST_INV,
		OP_SEND_ONLY_INV,
	};
	static const uint8_t rc_resp[] = {
		OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST,
		OP_READ_RESP_ONLY, OP_READ_RESP_ONLY, OP_ACK, OP_ACK, OP_ACK,
		OP_ATOMIC_ACK,
	};

	if (q->type == IBV_QPT_UD)
		return TR_UD | (chance(70) ? OP_SEND_ONLY : OP_SEND_ONLY_IMM);
	if (q->type == IBV_QPT_UC)
		return TR_UC | rc_req[rnd(14)];	/* SENDs and WRITEs */
	if (q->spsn != q->spsn_end && chance(q->state == IBV_QPS_RTR ? 15 :
					     50))
		return TR_RC | rc_resp[rnd(sizeof(rc_resp))];
	return TR_RC | rc_req[rnd(sizeof(rc_req))];
}

/*
 * A packet for @q from @src, valid for what the fuzzer knows of @q, then
 * mutated unless @clean.  Fills p->d and p->len; the ICRC is right
 * unless a mutation says otherwise.
 */
static void build(struct pkt *p, struct fqp *q, enum src src, bool v6,
		  bool clean)
{
	uint8_t opcode = base_opcode(q), op = opcode & 0x1f;
	int h = opcode_hdrs(opcode), nmut, i;
	uint32_t plen = 0, psn, tlen, icrc_at;
	uint8_t *bth, *x;
	size_t ipl;
	bool bad_icrc = false, ulen_mut = false;

	p->v6 = v6;
	p->src = src;
	ipl = put_ip_udp(p, 0);
	bth = p->d + ipl + 8;

	/* The payload the operation carries. */
	if (h & H_PAYLOAD) {
		bool full = op == OP_SEND_FIRST || op == OP_SEND_MIDDLE ||
			    op == OP_WRITE_FIRST || op == OP_WRITE_MIDDLE ||
			    op == OP_READ_RESP_FIRST ||
			    op == OP_READ_RESP_MIDDLE;

		plen = full ? MTU : chance(60) ? rnd(65) : rnd(MTU + 1);
		if (q->type == IBV_QPT_UD && chance(5))
			plen = MTU + rnd(PKT_MAX - 40 - 8 - 20 - 4 - MTU - 4);
	}
	if (is_response(opcode)) {
		uint32_t n = (q->spsn_end - q->spsn) & 0xffffff;

		psn = (q->spsn + rnd(n ? n : 1)) & 0xffffff;
	} else {
		psn = q->rpsn;
	}
	bth[0] = opcode;
	bth[1] = (chance(10) ? 0x80 : 0) | (((4 - plen) & 3) << 4);
	put16(bth + 2, chance(10) ? 0x7fff : 0xffff);
	put32(bth + 4, q->qpn);
	put32(bth + 8, (chance(30) ? 0x80000000u : 0) | psn);
	x = bth + 12;
	if (h & H_DETH) {
		put32(x, chance(q->role == R_GSI ? 30 : 90) ? q->qkey :
			 (uint32_t)rnd64());
		put32(x + 4, rnd(1 << 24));
		x += 8;
	}
	if (h & H_RETH) {
		uint32_t len = op == OP_READ_REQ ?
			       (chance(50) ? 1 + rnd(2 * MTU) : 8) :
			       (op == OP_WRITE_FIRST ? MTU + plen : plen);
		uint64_t va = (uintptr_t)q->buf + rnd(QBUF / 2);

		if (op == OP_WRITE_FIRST)
			len = MTU + rnd(MTU + 1);
		put64(x, va);
		put32(x + 8, q->mr ? q->mr->rkey : 0);
		put32(x + 12, len);
		x += 16;
		if (op == OP_READ_REQ && !clean)
			q->rpsn = (q->rpsn + (len + MTU - 1) / MTU - 1) &
				  0xffffff;
	}
	if (h & H_ATMETH) {
		put64(x, ((uintptr_t)q->buf + rnd(QBUF / 2)) & ~7ull);
		put32(x + 8, q->mr ? q->mr->rkey : 0);
		put64(x + 12, rnd64());
		put64(x + 20, chance(50) ? 0 : rnd64());
		x += 28;
	}
	if (h & H_AETH) {
		uint8_t syn = chance(70) ? 0x1f : (uint8_t)rnd(256);

		put32(x, (uint32_t)syn << 24 | rnd(1 << 24));
		x += 4;
	}
	if (h & H_ATMACK) {
		put64(x, rnd64());
		x += 8;
	}
	if (h & H_IMM) {
		put32(x, (uint32_t)rnd64());
		x += 4;
	}
	if (h & H_IETH) {
		put32(x, some_rkey(q));
		x += 4;
	}
	for (i = 0; i < (int)plen; i++)
		x[i] = (uint8_t)(round_no * 131 + psn * 7 + i);
	if (q->role == R_GSI && plen >= 4) {
		/*
		 * A MAD of a class nobody registered: ib_mad drops it
		 * quietly, where another base version costs a line of log.
		 */
		x[0] = 1;
		x[1] = 0x2a + rnd(6);
		x[2] = 1;
	}
	x += plen;
	memset(x, 0, (4 - plen) & 3);
	x += (4 - plen) & 3;
	tlen = x - bth + 4;
	if (!is_response(opcode) && !clean)
		q->rpsn = (q->rpsn + 1) & 0xffffff;

	/* Mutations. */
	nmut = clean || chance(15) ? 0 : 1 + rnd(3);
	for (i = 0; i < nmut; i++) {
		/* Headers and payload: what is left of them after a cut. */
		uint32_t hl = tlen > 4 ? tlen - 4 : 0;

		if (!hl)
			break;

		switch (rnd(17)) {
		case 0:		/* bit flips */
		case 1: {
			int n = 1 + rnd(4);

			while (n--)
				bth[rnd(hl)] ^= 1 << rnd(8);
			break;
		}
		case 2:		/* opcode */
			bth[0] = chance(50) ? (uint8_t)rnd(256) :
				 (bth[0] & 0xe0) | rnd(32);
			break;
		case 3:		/* another transport, same operation */
			bth[0] = (bth[0] & 0x1f) | PICK(TR_RC, TR_UC, TR_UD,
							 0x40, 0x80, 0xa0,
							 0xc0, 0xe0);
			break;
		case 4:
			put32(bth + 8, (get32(bth + 8) & 0xff000000u) |
				       psn_near(psn));
			break;
		case 5:
			put32(bth + 4, (get32(bth + 4) & 0xff000000u) |
				       some_qpn(q));
			break;
		case 6:
			put16(bth + 2, PICK(0, 0x7fff, 0x8000, 0xfffe, 0x7ffe,
					    0xffff, 0x1234));
			break;
		case 7:		/* pad, SE, MigReq, TVer */
			bth[1] = chance(80) ? (bth[1] & 0x0f) | rnd(16) << 4 :
				 (uint8_t)rnd(256);
			break;
		case 8:		/* bits the receiver must ignore */
			bth[4] = (uint8_t)rnd(256);
			bth[8] = (bth[8] & 0x80) | rnd(128);
			break;
		case 9:		/* the first extended header */
			if (hl > 12) {
				x = bth + 12;
				if (h & H_RETH || h & H_ATMETH) {
					switch (rnd(3)) {
					case 0:
						put64(x, some_va(q, 8));
						break;
					case 1:
						put32(x + 8, some_rkey(q));
						break;
					default:
						if (h & H_RETH)
							put32(x + 12,
							      some_len());
						else
							put64(x, some_va(q, 8) |
								 rnd(8));
					}
				} else if (h & H_AETH) {
					x[0] = PICK(0x00, 0x1f, 0x20, 0x21,
						    0x3f, 0x40, 0x60, 0x61,
						    0x62, 0x63, 0x64, 0x65,
						    0x7f, 0x80, 0xff);
				} else if (h & H_DETH) {
					put32(x, PICK(0, GSI_QKEY, FUZZ_QKEY,
						      FUZZ_QKEY ^ 1,
						      0x80000000u,
						      0xffffffffu));
					put32(x + 4, rnd64());
				} else {
					put32(x, rnd64());
				}
			}
			break;
		case 10:	/* cut short, ICRC after the cut */
			tlen = 4 + rnd(tlen);
			break;
		case 11:	/* cut, the ICRC cut off with it */
			tlen = rnd(tlen + 1);
			bad_icrc = true;
			break;
		case 12: {	/* grown */
			uint32_t more = 1 + rnd(64);

			if (ipl + 8 + tlen + more <= PKT_MAX) {
				for (uint32_t k = 0; k < more; k++)
					bth[tlen - 4 + k] = (uint8_t)rnd(256);
				tlen += more;
			}
			break;
		}
		case 13:	/* a payload of another length */
			if (h & H_PAYLOAD) {
				uint32_t hdr = hdrs_len(h);
				uint32_t n = PICK(0, 1, 3, MTU - 1, MTU,
						  MTU + 1, MTU + 4, 1200);

				if (ipl + 8 + hdr + n + 4 <= PKT_MAX) {
					memset(bth + hdr, 0x5a, n);
					tlen = hdr + n + 4;
				}
			}
			break;
		case 14:
			bad_icrc = true;
			break;
		case 15:
			ulen_mut = true;
			break;
		default:	/* a word anywhere */
			if (hl >= 4)
				put32(bth + rnd(hl - 3),
				      PICK(0, 1, 0x7fffffff, 0x80000000u,
					   0xffffffffu, (uint32_t)rnd64()));
			break;
		}
	}
	fix_lengths(p, tlen);
	if (tlen >= 4) {
		icrc_at = ipl + 8 + tlen - 4;
		put_le32(p->d + icrc_at, icrc(p->d, v6, icrc_at));
	}
	if (bad_icrc && tlen >= 4 && chance(90))
		p->d[ipl + 8 + tlen - 1 - rnd(4)] ^= 1 << rnd(8);
	if (ulen_mut && chance(40)) {
		/* A UDP length the datagram does not have. */
		uint16_t ul = get16(p->d + ipl + 4);

		put16(p->d + ipl + 4, PICK(0, 7, ul + 1, ul + 100, 0xffff,
					   ul > 8 ? ul - 1 : 8,
					   ul > 12 ? ul - 4 : 8));
	}
}

/* ---- Counters --------------------------------------------------------- */

enum {
	C_RX, C_TX, C_HDR, C_ICRC, C_PKEY, C_NOQP, C_TRANSPORT, C_QFULL,
	C_DEVQFULL, C_ADDR, C_STATE, C_QKEY, C_PSN, C_NORWQE, C_DUP,
	C_RETRANS, NCNT,
};

static const char *const cnt_name[NCNT] = {
	"rx_packets", "tx_packets", "drop_bad_hdr", "drop_bad_icrc",
	"drop_bad_pkey", "drop_no_qp", "drop_bad_transport",
	"drop_queue_full", "drop_dev_queue_full", "drop_bad_addr",
	"drop_bad_state", "drop_bad_qkey", "drop_bad_psn", "drop_no_rwqe",
	"dup_requests", "retransmits",
};

struct snap {
	long long c[NCNT];
	long long peer_tx;
	long long udp_in, udp_err, udp6_in, udp6_err;
};

static int cnt_fd[NCNT], peer_tx_fd, snmp_fd, snmp6_fd;
/* For a diagnosis when packets vanish: the sender's side of the link. */
static int ns2_dev_fd = -1, ns2_arp_fd = -1, ns2_nd_fd = -1, ns2_snmp_fd = -1;

static long long read_num(int fd)
{
	char b[64];
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = 0;
	return strtoll(b, NULL, 10);
}

static int open_counter(const char *dev, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	return open(path, O_RDONLY);
}

/* Udp's InDatagrams and InErrors from /proc/net/snmp. */
static void read_snmp(struct snap *s)
{
	static char b[16384];
	char *l, *v;
	ssize_t n;

	n = pread(snmp_fd, b, sizeof(b) - 1, 0);
	b[n > 0 ? n : 0] = 0;
	l = strstr(b, "\nUdp: ");
	v = l ? strstr(l + 1, "\nUdp: ") : NULL;
	if (v) {
		/* Udp: InDatagrams NoPorts InErrors ... */
		long long in, noports, err;

		if (sscanf(v + 6, "%lld %lld %lld", &in, &noports, &err) == 3) {
			s->udp_in = in;
			s->udp_err = err;
		}
	}
	n = pread(snmp6_fd, b, sizeof(b) - 1, 0);
	b[n > 0 ? n : 0] = 0;
	l = strstr(b, "Udp6InDatagrams");
	if (l)
		s->udp6_in = strtoll(l + 15, NULL, 10);
	l = strstr(b, "Udp6InErrors");
	if (l)
		s->udp6_err = strtoll(l + 12, NULL, 10);
}

static void snap(struct snap *s)
{
	int i;

	for (i = 0; i < NCNT; i++)
		s->c[i] = read_num(cnt_fd[i]);
	s->peer_tx = read_num(peer_tx_fd);
	read_snmp(s);
}

static long long udp_total(const struct snap *s)
{
	return s->udp_in + s->udp_err + s->udp6_in + s->udp6_err;
}

/* A file's text as "# " lines: what the kernel says of lost packets. */
static void show_file(const char *what, int fd)
{
	static char b[16384];
	char *l, *e;
	ssize_t n;

	if (fd < 0)
		return;
	n = pread(fd, b, sizeof(b) - 1, 0);
	b[n > 0 ? n : 0] = 0;
	printf("# %s:\n", what);
	for (l = b; *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		printf("#   %.*s\n", (int)(e - l), l);
		if (!*e)
			break;
	}
}

static void show_network(void)
{
	int fd = open("/proc/net/softnet_stat", O_RDONLY);

	show_file("receiver /proc/net/dev", open("/proc/self/net/dev", O_RDONLY));
	show_file("receiver /proc/net/snmp", snmp_fd);
	show_file("sender /proc/net/dev", ns2_dev_fd);
	show_file("sender /proc/net/snmp", ns2_snmp_fd);
	show_file("sender /proc/net/stat/arp_cache", ns2_arp_fd);
	show_file("sender /proc/net/stat/ndisc_cache", ns2_nd_fd);
	show_file("/proc/net/softnet_stat", fd);
	if (fd >= 0)
		close(fd);
}

/* softrvt's debugfs count of queued received bytes, if it has one. */
static long long rx_queued(void)
{
	static char b[4096];
	char *l;
	int fd = open("/sys/kernel/debug/softrvt/rx_queued", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	b[n > 0 ? n : 0] = 0;
	for (l = b; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		size_t dl = strlen(cfg.dev);

		if (!strncmp(l, cfg.dev, dl) && l[dl] == ' ')
			return strtoll(l + dl + 1, NULL, 10);
	}
	return -1;
}

/* ---- Addresses, namespaces, sockets ------------------------------------ */

static int raw4 = -1, raw6 = -1;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("not ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nBail out!\n");
	exit(1);
}

static void gid_of(const char *addr, union ibv_gid *gid)
{
	struct in_addr v4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, addr, &v4) == 1) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &v4, 4);
	} else {
		inet_pton(AF_INET6, addr, gid->raw);
	}
}

/*
 * The raw sockets, opened in the sender's namespace; the program itself
 * stays in DEV's, where /proc/net/snmp is the receiver's.
 */
static void open_sockets(void)
{
	int self = open("/proc/self/ns/net", O_RDONLY);
	int other = open(cfg.netns, O_RDONLY);

	if (self < 0 || other < 0)
		die("open %s: %s", cfg.netns, strerror(errno));
	if (setns(other, CLONE_NEWNET))
		die("setns %s: %s", cfg.netns, strerror(errno));
	raw4 = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	raw6 = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	ns2_dev_fd = open("/proc/self/net/dev", O_RDONLY);
	ns2_arp_fd = open("/proc/self/net/stat/arp_cache", O_RDONLY);
	ns2_nd_fd = open("/proc/self/net/stat/ndisc_cache", O_RDONLY);
	ns2_snmp_fd = open("/proc/self/net/snmp", O_RDONLY);
	if (setns(self, CLONE_NEWNET))
		die("setns back: %s", strerror(errno));
	if (raw4 < 0 || raw6 < 0)
		die("raw sockets: %s", strerror(errno));
	close(self);
	close(other);
}

/* ---- Completions and events ------------------------------------------- */

static bool events_bad;
static unsigned long events_seen;

static void drain_events(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		events_seen++;
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_GID_CHANGE:
			break;
		default:
			if (!events_bad)
				printf("# async event %s (%d)\n",
				       ibv_event_type_str(ev.event_type),
				       ev.event_type);
			events_bad = true;
		}
		ibv_ack_async_event(&ev);
	}
}

/* ---- The fuzzer's QPs ------------------------------------------------- */

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum { K_RECV = 1, K_SEND, K_SRQ };

static uint64_t wr_id_of(int slot, int kind, int idx)
{
	return (uint64_t)round_no << 40 | (uint64_t)slot << 32 |
	       (uint64_t)kind << 16 | (unsigned int)idx;
}

static bool qp_modify(struct fqp *q, struct ibv_qp_attr *a, int mask)
{
	int ret = ibv_modify_qp(q->qp, a, mask);

	if (ret)
		detail("%s: ibv_modify_qp to %d: %s", q->name, a->qp_state,
		       strerror(ret));
	return !ret;
}

static int qp_state_now(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static bool post_recvs(struct fqp *q)
{
	uint32_t len = q->type == IBV_QPT_UD ? 40 + MTU : RBUF;
	int i;

	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)q->buf + QBUF / 2 + i * RBUF,
			.length = len,
			.lkey = q->mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = wr_id_of(q - fq, K_RECV, i),
			.sg_list = &sge, .num_sge = 1,
		}, *bad;
		int ret = ibv_post_recv(q->qp, &wr, &bad);

		if (ret) {
			detail("%s: ibv_post_recv: %s", q->name, strerror(ret));
			return false;
		}
		q->recv[q->nrecv].wr_id = wr.wr_id;
		q->recv[q->nrecv++].done = false;
	}
	return true;
}

static bool post_send1(struct fqp *q, enum ibv_wr_opcode op, uint32_t len,
		       uint32_t off, uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)q->buf + off, .length = len, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id_of(q - fq, K_SEND, q->nsend),
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = 0x10000 + rnd(1 << 20);
		wr.wr.rdma.rkey = (uint32_t)rnd64();
	} else if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = 0x10000 + 8 * rnd(1 << 16);
		wr.wr.atomic.rkey = (uint32_t)rnd64();
		wr.wr.atomic.compare_add = rnd64();
		wr.wr.atomic.swap = rnd64();
	}
	if (q->type == IBV_QPT_UD) {
		wr.wr.ud.ah = q->v6 ? ah6 : ah4;
		wr.wr.ud.remote_qpn = FAKE_DQPN;
		wr.wr.ud.remote_qkey = FUZZ_QKEY;
	}
	ret = ibv_post_send(q->qp, &wr, &bad);
	if (ret) {
		detail("%s: ibv_post_send: %s", q->name, strerror(ret));
		return false;
	}
	q->send[q->nsend].wr_id = wr.wr_id;
	q->send[q->nsend++].done = false;
	return true;
}

/* Sends the QP's requester keeps in flight, to nobody; the fuzzer answers. */
static bool post_sends(struct fqp *q)
{
	uint32_t lk = q->mr->lkey;

	if (q->type == IBV_QPT_RC) {
		/* PSNs: SEND 1, WRITE 1, READ of 2 MTUs 2, atomics 1 each. */
		q->spsn_end = (q->spsn + 6) & 0xffffff;
		return post_send1(q, IBV_WR_SEND, 64, 0, lk) &&
		       post_send1(q, IBV_WR_RDMA_WRITE, 64, 64, lk) &&
		       post_send1(q, IBV_WR_RDMA_READ, 2 * MTU, 4096, lk) &&
		       post_send1(q, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 128, lk) &&
		       post_send1(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 136, lk);
	}
	q->spsn_end = q->spsn;
	return post_send1(q, IBV_WR_SEND, 64, 0, lk) &&
	       post_send1(q, IBV_WR_SEND, 200, 256, lk);
}

enum { F_SRQ = 1, F_V6 = 2, F_LOCAL = 4 };

static char fq_names[MAX_FQP][24];
static uint8_t *fq_bufs[MAX_FQP];
static struct ibv_mr *fq_mrs[MAX_FQP];

/* A fuzzer QP of @type brought to @state. */
static bool make_fqp(int type, int state, int flags)
{
	static const char *const st[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};
	struct fqp *q = &fq[nfq];
	int slot = nfq++;
	struct ibv_qp_init_attr ia = {
		.send_cq = fcq, .recv_cq = fcq,
		.srq = flags & F_SRQ ? fsrq : NULL,
		.cap = { .max_send_wr = 8, .max_recv_wr = NRECV + 4,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = type,
	};
	struct ibv_qp_attr a;

	memset(q, 0, sizeof(*q));
	q->role = R_FUZZ;
	snprintf(fq_names[slot], sizeof(fq_names[slot]), "%s %s%s%s%s",
		 type == IBV_QPT_RC ? "RC" : type == IBV_QPT_UC ? "UC" : "UD",
		 st[state], flags & F_SRQ ? " SRQ" : "",
		 flags & F_V6 ? " IPv6" : "", flags & F_LOCAL ? " local" : "");
	q->name = fq_names[slot];
	q->type = type;
	q->v6 = flags & F_V6;
	q->local = flags & F_LOCAL;
	q->srq = flags & F_SRQ;
	q->buf = fq_bufs[slot];
	q->mr = fq_mrs[slot];
	q->qkey = FUZZ_QKEY;
	q->rpsn = rnd(1 << 24);
	q->spsn = rnd(1 << 24);
	q->spsn_end = q->spsn;
	q->qp = ibv_create_qp(fpd, &ia);
	if (!q->qp) {
		detail("%s: ibv_create_qp: %s", q->name, strerror(errno));
		nfq--;
		return false;
	}
	q->qpn = q->qp->qp_num;
	q->state = IBV_QPS_RESET;
	if (state == IBV_QPS_RESET)
		return true;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = IB_PORT;
	if (type == IBV_QPT_UD) {
		a.qkey = q->qkey;
		if (!qp_modify(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				      IBV_QP_PORT | IBV_QP_QKEY))
			return false;
	} else {
		a.qp_access_flags = type == IBV_QPT_RC ? ACC_ALL :
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE;
		if (!qp_modify(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			return false;
	}
	q->state = IBV_QPS_INIT;
	if (!q->srq && !post_recvs(q))
		return false;
	if (state == IBV_QPS_INIT)
		return true;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (type == IBV_QPT_UD) {
		if (!qp_modify(q, &a, IBV_QP_STATE))
			return false;
	} else {
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

		a.path_mtu = IBV_MTU_256;
		a.dest_qp_num = FAKE_DQPN + slot;
		a.rq_psn = q->rpsn;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = IB_PORT;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.sgid_index = q->v6 ? gid6 : gid4;
		a.ah_attr.grh.dgid = q->local ? dgid4 : q->v6 ? fgid6 : fgid4;
		if (type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		if (!qp_modify(q, &a, mask))
			return false;
		q->has_path = true;
	}
	q->state = IBV_QPS_RTR;
	if (state == IBV_QPS_RTR)
		return true;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->spsn;
	if (type == IBV_QPT_RC) {
		a.timeout = 20;		/* 4 s: no retry within a round */
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		if (!qp_modify(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY |
				      IBV_QP_MAX_QP_RD_ATOMIC))
			return false;
	} else if (!qp_modify(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		return false;
	}
	q->state = IBV_QPS_RTS;
	if (!q->local && !post_sends(q))
		return false;
	if (state == IBV_QPS_RTS)
		return true;

	if (state == IBV_QPS_SQE) {
		/* A send with a key that is nobody's stops the send queue. */
		if (!post_send1(q, IBV_WR_SEND, 16, 512, q->mr->lkey ^ 0xff))
			return false;
		for (int i = 0; i < 5000 && qp_state_now(q->qp) != IBV_QPS_SQE;
		     i++)
			usleep(1000);
		if (qp_state_now(q->qp) != IBV_QPS_SQE) {
			detail("%s: not in SQE after a send with a bad lkey",
			       q->name);
			return false;
		}
		q->state = IBV_QPS_SQE;
		return true;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	if (state == IBV_QPS_SQD)
		a.en_sqd_async_notify = 1;
	if (!qp_modify(q, &a, IBV_QP_STATE |
			      (state == IBV_QPS_SQD ?
			       IBV_QP_EN_SQD_ASYNC_NOTIFY : 0)))
		return false;
	q->state = state;
	return true;
}

static bool make_srq(void)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 32, .max_sge = 1, .srq_limit = 4 },
	};
	int i;

	fsrq = ibv_create_srq(fpd, &sa);
	if (!fsrq) {
		detail("ibv_create_srq: %s", strerror(errno));
		return false;
	}
	srq_n = 0;
	for (i = 0; i < 32; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)srq_buf + i * RBUF,
			.length = RBUF, .lkey = srq_mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = wr_id_of(31, K_SRQ, i),
			.sg_list = &sge, .num_sge = 1,
		}, *bad;
		int ret = ibv_post_srq_recv(fsrq, &wr, &bad);

		if (ret) {
			detail("ibv_post_srq_recv: %s", strerror(ret));
			return false;
		}
		srq_wr[srq_n].wr_id = wr.wr_id;
		srq_wr[srq_n++].done = false;
	}
	return true;
}

/* Every type in every state, a few variants; fresh QP numbers. */
static bool make_fqps(void)
{
	static const struct { int type, state, flags; } set[] = {
		{ IBV_QPT_RC, IBV_QPS_RESET, 0 },
		{ IBV_QPT_RC, IBV_QPS_INIT, 0 },
		{ IBV_QPT_RC, IBV_QPS_RTR, 0 },
		{ IBV_QPT_RC, IBV_QPS_RTS, 0 },
		{ IBV_QPT_RC, IBV_QPS_SQD, 0 },
		{ IBV_QPT_RC, IBV_QPS_ERR, 0 },
		{ IBV_QPT_RC, IBV_QPS_RTS, F_SRQ },
		{ IBV_QPT_RC, IBV_QPS_RTS, F_V6 },
		{ IBV_QPT_RC, IBV_QPS_RTR, F_LOCAL },
		{ IBV_QPT_UC, IBV_QPS_RESET, 0 },
		{ IBV_QPT_UC, IBV_QPS_INIT, 0 },
		{ IBV_QPT_UC, IBV_QPS_RTR, 0 },
		{ IBV_QPT_UC, IBV_QPS_RTS, 0 },
		{ IBV_QPT_UC, IBV_QPS_SQD, 0 },
		{ IBV_QPT_UC, IBV_QPS_SQE, 0 },
		{ IBV_QPT_UC, IBV_QPS_ERR, 0 },
		{ IBV_QPT_UC, IBV_QPS_RTR, F_SRQ },
		{ IBV_QPT_UD, IBV_QPS_RESET, 0 },
		{ IBV_QPT_UD, IBV_QPS_INIT, 0 },
		{ IBV_QPT_UD, IBV_QPS_RTR, 0 },
		{ IBV_QPT_UD, IBV_QPS_RTS, 0 },
		{ IBV_QPT_UD, IBV_QPS_SQD, 0 },
		{ IBV_QPT_UD, IBV_QPS_SQE, 0 },
		{ IBV_QPT_UD, IBV_QPS_ERR, 0 },
		{ IBV_QPT_UD, IBV_QPS_RTS, F_V6 },
	};
	size_t i;

	nfq = 0;
	if (!make_srq())
		return false;
	for (i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		if (!make_fqp(set[i].type, set[i].state, set[i].flags))
			return false;
	/* Let the engines settle the states, e.g. SQD reached. */
	usleep(20000);
	drain_events();
	return true;
}

static bool destroy_fqps(void)
{
	bool good = true;
	int i, ret;

	drain_events();
	for (i = 0; i < nfq; i++) {
		ret = ibv_destroy_qp(fq[i].qp);
		if (ret) {
			detail("%s: ibv_destroy_qp: %s", fq[i].name,
			       strerror(ret));
			good = false;
		}
	}
	nfq = 0;
	if (fsrq) {
		ret = ibv_destroy_srq(fsrq);
		if (ret) {
			detail("ibv_destroy_srq: %s", strerror(ret));
			good = false;
		}
		fsrq = NULL;
	}
	return good;
}

static struct fqp *fqp_of(uint32_t qpn)
{
	int i;

	for (i = 0; i < nfq; i++)
		if (fq[i].qpn == qpn)
			return &fq[i];
	return NULL;
}

static struct wrk *find_wrk(struct wrk *w, int n, uint64_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (w[i].wr_id == id)
			return &w[i];
	return NULL;
}

static unsigned long wc_seen, wc_ok;

/* One completion of a fuzzer QP: known, once, and for UD the packet. */
static bool fuzz_wc(const struct ibv_wc *wc)
{
	struct fqp *q = fqp_of(wc->qp_num);
	struct wrk *w = NULL;

	wc_seen++;
	if (!q) {
		detail_wc("completion of no fuzzer QP", wc);
		return false;
	}
	if (((wc->wr_id >> 16) & 0xffff) == K_SRQ)
		w = find_wrk(srq_wr, srq_n, wc->wr_id);
	else if (((wc->wr_id >> 16) & 0xffff) == K_RECV)
		w = find_wrk(q->recv, q->nrecv, wc->wr_id);
	else
		w = find_wrk(q->send, q->nsend, wc->wr_id);
	if (!w || w->done) {
		detail_wc(w ? "a second completion" : "an unknown wr_id", wc);
		detail("on %s (QPN 0x%x)", q->name, q->qpn);
		return false;
	}
	w->done = true;
	if (wc->status == IBV_WC_SUCCESS)
		wc_ok++;
	if (wc->status == IBV_WC_SUCCESS && !(wc->opcode & IBV_WC_RECV) &&
	    ((wc->wr_id >> 16) & 0xffff) != K_SEND) {
		detail_wc("a receive completing as a send", wc);
		return false;
	}
	if (wc->status == IBV_WC_SUCCESS && (wc->opcode & IBV_WC_RECV) &&
	    wc->byte_len > (q->type == IBV_QPT_UD ? 40 + MTU : RBUF)) {
		detail_wc("more bytes than the buffer", wc);
		return false;
	}
	if (q->type == IBV_QPT_UD && ((wc->wr_id >> 16) & 0xffff) == K_RECV &&
	    wc->status != IBV_WC_WR_FLUSH_ERR) {
		int i = q->ud_seen++;
		const struct ud_expect *e = &q->ud[i];
		const uint8_t *b = q->buf + QBUF / 2 + (wc->wr_id & 0xffff) *
				   RBUF;
		uint32_t sum = 0, k;
		bool good;

		if (i >= q->ud_n || i >= NRECV) {
			detail_wc("a UD receive no packet explains", wc);
			detail("on %s: %d packets with its Q_Key", q->name,
			       q->ud_n);
			return false;
		}
		if (40 + e->len > 40 + MTU) {
			good = wc->status == IBV_WC_LOC_LEN_ERR;
		} else {
			good = wc->status == IBV_WC_SUCCESS &&
			       wc->byte_len == 40 + e->len &&
			       !!(wc->wc_flags & IBV_WC_WITH_IMM) == e->imm &&
			       (!e->imm || wc->imm_data == htonl(e->imm_data));
			if (good && e->v6)
				good = !memcmp(b, e->ip, 40);
			else if (good)
				good = !memcmp(b + 20, e->ip, 20);
			for (k = 0; good && k < e->len; k++)
				sum = sum * 31 + b[40 + k];
			if (good)
				good = sum == e->sum;
		}
		if (!good) {
			detail_wc("a UD receive", wc);
			detail("on %s: packet %d of the round: %u bytes%s, IP header and payload checked",
			       q->name, i, e->len, e->imm ? " with immediate" : "");
			return false;
		}
	}
	return true;
}

/* Poll the fuzzer's CQ; false on a bad completion. */
static bool poll_fuzz(void)
{
	struct ibv_wc wc[32];
	int n, i;
	bool good = true;

	while ((n = ibv_poll_cq(fcq, 32, wc)) > 0)
		for (i = 0; i < n; i++)
			good &= fuzz_wc(&wc[i]);
	if (n < 0) {
		detail("ibv_poll_cq: %d", n);
		good = false;
	}
	return good;
}

/* Every WQE of the fuzzer's QPs done, after moving them to ERR. */
static bool all_wqes_done(void)
{
	int i, k;

	for (i = 0; i < nfq; i++) {
		for (k = 0; k < fq[i].nrecv; k++)
			if (!fq[i].recv[k].done)
				return false;
		for (k = 0; k < fq[i].nsend; k++)
			if (!fq[i].send[k].done)
				return false;
	}
	return true;
}

static void undone_detail(void)
{
	int i, k, r, s;

	for (i = 0; i < nfq; i++) {
		for (r = k = 0; k < fq[i].nrecv; k++)
			r += !fq[i].recv[k].done;
		for (s = k = 0; k < fq[i].nsend; k++)
			s += !fq[i].send[k].done;
		if (r || s)
			detail("%s (QPN 0x%x, state %d now): %d receives and %d sends never completed",
			       fq[i].name, fq[i].qpn, qp_state_now(fq[i].qp),
			       r, s);
	}
}

/* ---- Real traffic: DEV <-> PEER, every byte checked --------------------- */

#define RT_SLOTS	8
#define RT_WINDOW	4
#define RT_SLOT		4096
#define RT_BUF		(3 * RT_SLOTS * RT_SLOT)
#define RT_RECV_OFF	0
#define RT_WRITE_OFF	(RT_SLOTS * RT_SLOT)
#define RT_READ_OFF	(2 * RT_SLOTS * RT_SLOT)

enum { RT_SEND, RT_WRITE_IMM, RT_READ };
static const uint32_t rt_len[] = { 2000, 3000, 2500 };

static struct {
	bool on, bad;
	struct ibv_context *bctx;
	struct ibv_pd *apd, *bpd;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *amr, *bmr;
	uint8_t *abuf, *bbuf, *want;
	int bgid;
	union ibv_gid bg;
	uint64_t next;		/* the next op to post */
	uint64_t oldest;	/* the oldest op not done */
	uint8_t left[64];	/* completions each op still waits for */
	uint64_t rq[64];	/* ops that take a receive, in order */
	unsigned int rq_head, rq_tail;
	bool posting;
	unsigned long done[3];
	unsigned long long bytes;
} rt;

static bool rt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool rt_fail(const char *fmt, ...)
{
	char b[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (!rt.bad)
		printf("# real traffic: %s\n", b);
	rt.bad = true;
	rt.posting = false;
	return false;
}

static uint32_t rt_seed(uint64_t seq) { return (uint32_t)(seq * 3 + 17); }

static bool rt_post_recv(int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rt.abuf + RT_RECV_OFF + slot * RT_SLOT,
		.length = RT_SLOT, .lkey = rt.amr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(rt.qa, &wr, &bad);

	return ret ? rt_fail("ibv_post_recv: %s", strerror(ret)) : true;
}

static bool rt_post(void)
{
	uint64_t s = rt.next;
	int kind = s % 3, slot = s % RT_SLOTS;
	uint32_t len = rt_len[kind];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (kind == RT_READ) {
		pattern(rt.bbuf + RT_READ_OFF + slot * RT_SLOT, len,
			rt_seed(s));
		memset(rt.abuf + RT_READ_OFF + slot * RT_SLOT, 0, len);
		sge.addr = (uintptr_t)rt.abuf + RT_READ_OFF + slot * RT_SLOT;
		sge.length = len;
		sge.lkey = rt.amr->lkey;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)rt.bbuf + RT_READ_OFF +
					 slot * RT_SLOT;
		wr.wr.rdma.rkey = rt.bmr->rkey;
		ret = ibv_post_send(rt.qa, &wr, &bad);
		rt.left[s % 64] = 1;
	} else {
		pattern(rt.bbuf + slot * RT_SLOT, len, rt_seed(s));
		sge.addr = (uintptr_t)rt.bbuf + slot * RT_SLOT;
		sge.length = len;
		sge.lkey = rt.bmr->lkey;
		if (kind == RT_SEND) {
			wr.opcode = IBV_WR_SEND;
		} else {
			memset(rt.abuf + RT_WRITE_OFF + slot * RT_SLOT, 0,
			       len);
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl((uint32_t)s);
			wr.wr.rdma.remote_addr = (uintptr_t)rt.abuf +
						 RT_WRITE_OFF + slot * RT_SLOT;
			wr.wr.rdma.rkey = rt.amr->rkey;
		}
		rt.rq[rt.rq_tail++ % 64] = s;
		ret = ibv_post_send(rt.qb, &wr, &bad);
		rt.left[s % 64] = 2;
	}
	if (ret)
		return rt_fail("ibv_post_send: %s", strerror(ret));
	rt.next++;
	return true;
}

static void rt_done_one(uint64_t s)
{
	if (--rt.left[s % 64])
		return;
	rt.done[s % 3]++;
	rt.bytes += rt_len[s % 3];
	while (rt.oldest < rt.next && !rt.left[rt.oldest % 64])
		rt.oldest++;
}

static bool rt_check(const uint8_t *got, uint64_t s, const char *what)
{
	uint32_t len = rt_len[s % 3], i;

	pattern(rt.want, len, rt_seed(s));
	for (i = 0; i < len; i++)
		if (got[i] != rt.want[i])
			return rt_fail("op %" PRIu64 ": %s: byte %u of %u is 0x%02x, want 0x%02x",
				       s, what, i, len, got[i], rt.want[i]);
	return true;
}

static bool rt_wc_a(const struct ibv_wc *wc)
{
	uint64_t s;

	if (wc->status != IBV_WC_SUCCESS)
		return rt_fail("DEV completion wr_id %" PRIu64 " status %s",
			       wc->wr_id, ibv_wc_status_str(wc->status));
	if (wc->opcode == IBV_WC_RDMA_READ) {
		s = wc->wr_id;
		if (s < rt.oldest || s >= rt.next || rt.left[s % 64] != 1 ||
		    s % 3 != RT_READ)
			return rt_fail("READ completion for op %" PRIu64, s);
		if (!rt_check(rt.abuf + RT_READ_OFF + (s % RT_SLOTS) *
			      RT_SLOT, s, "READ data"))
			return false;
		rt_done_one(s);
		return true;
	}
	if (rt.rq_head == rt.rq_tail)
		return rt_fail("a receive completion nobody sent");
	s = rt.rq[rt.rq_head++ % 64];
	if (s % 3 == RT_SEND) {
		if (wc->opcode != IBV_WC_RECV || wc->byte_len != rt_len[0] ||
		    (wc->wc_flags & IBV_WC_WITH_IMM))
			return rt_fail("SEND %" PRIu64 " received as opcode %d, %u bytes",
				       s, wc->opcode, wc->byte_len);
		if (!rt_check(rt.abuf + RT_RECV_OFF + wc->wr_id * RT_SLOT, s,
			      "SEND data"))
			return false;
	} else {
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    !(wc->wc_flags & IBV_WC_WITH_IMM) ||
		    ntohl(wc->imm_data) != (uint32_t)s)
			return rt_fail("WRITE with immediate %" PRIu64 " received as opcode %d imm 0x%x",
				       s, wc->opcode, ntohl(wc->imm_data));
		if (!rt_check(rt.abuf + RT_WRITE_OFF + (s % RT_SLOTS) *
			      RT_SLOT, s, "WRITE data"))
			return false;
	}
	rt_done_one(s);
	return rt_post_recv((int)wc->wr_id);
}

static bool rt_wc_b(const struct ibv_wc *wc)
{
	uint64_t s = wc->wr_id;

	if (wc->status != IBV_WC_SUCCESS)
		return rt_fail("PEER completion wr_id %" PRIu64 " status %s",
			       s, ibv_wc_status_str(wc->status));
	if (s < rt.oldest || s >= rt.next || s % 3 == RT_READ ||
	    !rt.left[s % 64])
		return rt_fail("PEER completion for op %" PRIu64, s);
	rt_done_one(s);
	return true;
}

static void rt_poll(void)
{
	struct ibv_wc wc[16];
	int n, i;

	if (!rt.on)
		return;
	while (!rt.bad && (n = ibv_poll_cq(rt.acq, 16, wc)) > 0)
		for (i = 0; i < n && !rt.bad; i++)
			rt_wc_a(&wc[i]);
	while (!rt.bad && (n = ibv_poll_cq(rt.bcq, 16, wc)) > 0)
		for (i = 0; i < n && !rt.bad; i++)
			rt_wc_b(&wc[i]);
	while (rt.posting && !rt.bad && rt.next - rt.oldest < RT_WINDOW)
		rt_post();
}

/* Stop posting and wait for what is in flight. */
static bool rt_quiesce(void)
{
	long long end = now_ms() + WAIT_MS;

	rt.posting = false;
	while (rt.on && !rt.bad && rt.oldest != rt.next) {
		if (now_ms() > end)
			return rt_fail("%" PRIu64 " operations still in flight after %d s",
				       rt.next - rt.oldest, WAIT_MS / 1000);
		rt_poll();
		usleep(500);
	}
	return !rt.bad;
}

static struct ibv_qp *rt_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = RT_SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &ia);
}

static bool rt_connect(struct ibv_qp *qp, int sgid, const union ibv_gid *dgid,
		       uint32_t dqpn, uint32_t rpsn, uint32_t spsn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = IB_PORT;
	a.qp_access_flags = ACC_ALL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = IB_PORT;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = sgid;
	a.ah_attr.grh.dgid = *dgid;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return false;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;		/* 1 s: no spurious retry under TCG */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = spsn;
	a.max_rd_atomic = 4;
	return !ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void rt_setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), cfg.peer_dev))
			rt.bctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!rt.bctx)
		die("open %s", cfg.peer_dev);
	rt.bgid = find_gid(cfg.peer_dev, cfg.peer_addr, &rt.bg);
	if (rt.bgid < 0)
		die("no RoCE v2 GID of %s on %s", cfg.peer_addr, cfg.peer_dev);
	rt.abuf = aligned_alloc(4096, RT_BUF);
	rt.bbuf = aligned_alloc(4096, RT_BUF);
	rt.want = malloc(RT_SLOT);
	rt.apd = ibv_alloc_pd(ctx);
	rt.bpd = ibv_alloc_pd(rt.bctx);
	rt.acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rt.bcq = ibv_create_cq(rt.bctx, 64, NULL, NULL, 0);
	if (!rt.abuf || !rt.bbuf || !rt.want || !rt.apd || !rt.bpd ||
	    !rt.acq || !rt.bcq)
		die("real traffic: PD, CQ or memory");
	rt.amr = ibv_reg_mr(rt.apd, rt.abuf, RT_BUF, ACC_ALL);
	rt.bmr = ibv_reg_mr(rt.bpd, rt.bbuf, RT_BUF, ACC_ALL);
	rt.qa = rt_qp(rt.apd, rt.acq);
	rt.qb = rt_qp(rt.bpd, rt.bcq);
	if (!rt.amr || !rt.bmr || !rt.qa || !rt.qb)
		die("real traffic: MR or QP: %s", strerror(errno));
	if (!rt_connect(rt.qa, gid4, &rt.bg, rt.qb->qp_num, 0x100, 0x200) ||
	    !rt_connect(rt.qb, rt.bgid, &dgid4, rt.qa->qp_num, 0x200, 0x100))
		die("real traffic: connect: %s", strerror(errno));
	for (i = 0; i < RT_SLOTS; i++)
		rt_post_recv(i);
	real_a.qp = rt.qa;
	real_a.qpn = rt.qa->qp_num;
	real_a.buf = rt.abuf;
	real_a.mr = rt.amr;
	rt.on = true;
}

static void rt_teardown(void)
{
	if (!rt.on)
		return;
	ibv_destroy_qp(rt.qa);
	ibv_destroy_qp(rt.qb);
	ibv_dereg_mr(rt.amr);
	ibv_dereg_mr(rt.bmr);
	ibv_destroy_cq(rt.acq);
	ibv_destroy_cq(rt.bcq);
	ibv_dealloc_pd(rt.apd);
	ibv_dealloc_pd(rt.bpd);
	ibv_close_device(rt.bctx);
	real_a.qp = NULL;
	rt.on = false;
}

/* ---- Rounds ----------------------------------------------------------- */

struct tally {
	uint64_t sent, sent6;
	uint64_t fate[NFATE];
};

static struct tally total;
static struct pkt batch[BATCH];
static unsigned int failed_rounds;
static bool bad_net, bad_door, bad_engine, bad_ud, bad_wqe;

/* Which QP the next packet is built for, and from where. */
static struct fqp *choose(enum src *src, bool *v6)
{
	struct fqp *q = NULL;
	int tries;

	for (tries = 0; tries < 100 && !q; tries++) {
		uint32_t r = rnd(100);

		if (r < 8 && real_a.qp)
			q = &real_a;
		else if (r < 11)
			q = &gsi;
		else
			q = &fq[rnd(nfq)];
		if (q->sent >= QP_CAP)
			q = NULL;
	}
	if (!q)
		q = &fq[rnd(nfq)];	/* all full: the door still counts */
	r_src:
	switch (rnd(20)) {
	case 0: case 1: case 2:
		*src = S_OTHER;
		break;
	case 3: case 4:
		*src = S_PEER;
		break;
	default:
		*src = S_FUZZ;
	}
	if (q->role == R_REAL && *src == S_FUZZ && chance(50))
		goto r_src;
	*v6 = q->v6 ? chance(85) : chance(4);
	if (*v6 && *src == S_PEER)
		*src = S_OTHER;
	return q;
}

/*
 * A packet no peer could send unless it is the real traffic's: one the
 * real QP would take from its own peer's address.  The fuzzer may be any
 * host, not the real peer.
 */
static bool forbidden(const struct pkt *p)
{
	if (p->fate < E_SILENT || p->src != S_PEER)
		return false;
	return p->qp->role != R_FUZZ;
}

static void make_packet(struct pkt *p)
{
	enum src src;
	bool v6;
	int i;

	for (i = 0; i < 1000; i++) {
		struct fqp *q = choose(&src, &v6);

		build(p, q, src, v6, false);
		p->fate = predict(p);
		if (forbidden(p))
			continue;
		if (p->fate >= E_SILENT && p->qp->sent >= QP_CAP)
			continue;
		return;
	}
	die("no packet the fuzzer may send after 1000 tries");
}

/* The last packet of a round for @q: one whose fate is counted. */
static void make_marker(struct pkt *p, struct fqp *q)
{
	size_t ipl;
	uint8_t *bth;
	uint32_t tlen;

	if (q->type == IBV_QPT_UD || q->state == IBV_QPS_INIT)
		build(p, q, S_FUZZ, q->v6, true);
	else
		build(p, q, S_OTHER, q->v6, true);
	ipl = p->v6 ? 40 : 20;
	bth = p->d + ipl + 8;
	tlen = p->len - ipl - 8;
	put16(bth + 2, 0xffff);
	bth[1] &= 0x30;		/* keep the pad */
	if (q->type == IBV_QPT_UD)
		put32(bth + 12, ~q->qkey);
	put_le32(p->d + p->len - 4, icrc(p->d, p->v6, ipl + 8 + tlen - 4));
	p->fate = predict(p);
}

/* What a sent packet means for the round's accounting. */
static void tally_one(struct tally *t, struct pkt *p)
{
	struct fqp *q = p->qp;

	t->sent++;
	t->sent6 += p->v6;
	t->fate[p->fate]++;
	if (q && p->fate >= E_SILENT)
		q->sent++;
	if (p->fate == E_UD_OK) {
		size_t ipl = p->v6 ? 40 : 20;
		const uint8_t *bth = p->d + ipl + 8;
		uint32_t rest = get16(p->d + ipl + 4) - 8;
		int h = opcode_hdrs(bth[0]), hl = hdrs_len(h);
		uint32_t pad = (bth[1] >> 4) & 3, k, sum = 0;
		struct ud_expect *e;

		if (q->ud_n++ >= NRECV)
			return;
		e = &q->ud[q->ud_n - 1];
		e->len = rest - hl - 4 - pad;
		e->imm = h & H_IMM;
		e->imm_data = e->imm ? get32(bth + hl - 4) : 0;
		e->v6 = p->v6;
		memcpy(e->ip, p->d, ipl);
		for (k = 0; k < e->len; k++)
			sum = sum * 31 + bth[hl + k];
		e->sum = sum;
	}
}

/* Send @n packets of @b; tally those sent.  Return: how many. */
static int send_batch(struct pkt *b, int n, struct tally *t)
{
	struct mmsghdr m4[BATCH], m6[BATCH];
	struct iovec io[BATCH];
	struct sockaddr_in d4 = { .sin_family = AF_INET, .sin_addr = a4 };
	struct sockaddr_in6 d6 = { .sin6_family = AF_INET6, .sin6_addr = a6 };
	struct pkt *w4[BATCH], *w6[BATCH];
	int n4 = 0, n6 = 0, i, k, done = 0;

	memset(m4, 0, sizeof(m4));
	memset(m6, 0, sizeof(m6));
	for (i = 0; i < n; i++) {
		struct mmsghdr *m = b[i].v6 ? &m6[n6] : &m4[n4];

		io[i].iov_base = b[i].d;
		io[i].iov_len = b[i].len;
		m->msg_hdr.msg_iov = &io[i];
		m->msg_hdr.msg_iovlen = 1;
		if (b[i].v6) {
			m->msg_hdr.msg_name = &d6;
			m->msg_hdr.msg_namelen = sizeof(d6);
			w6[n6++] = &b[i];
		} else {
			m->msg_hdr.msg_name = &d4;
			m->msg_hdr.msg_namelen = sizeof(d4);
			w4[n4++] = &b[i];
		}
	}
	for (i = 0; i < n4; i += k) {
		k = sendmmsg(raw4, m4 + i, n4 - i, 0);
		if (k <= 0) {
			/* This one is not sent; the next ones may be. */
			printf("# sendmmsg IPv4 (%u bytes): %s\n",
			       w4[i]->len, strerror(errno));
			k = 1;
			continue;
		}
		for (int j = 0; j < k; j++)
			tally_one(t, w4[i + j]);
		done += k;
	}
	for (i = 0; i < n6; i += k) {
		k = sendmmsg(raw6, m6 + i, n6 - i, 0);
		if (k <= 0) {
			printf("# sendmmsg IPv6 (%u bytes): %s\n",
			       w6[i]->len, strerror(errno));
			k = 1;
			continue;
		}
		for (int j = 0; j < k; j++)
			tally_one(t, w6[i + j]);
		done += k;
	}
	return done;
}

static long long d(const struct snap *a, const struct snap *b, int c)
{
	return b->c[c] - a->c[c];
}

static void hexdump(const struct pkt *p)
{
	int i;

	printf("#");
	for (i = 0; i < p->len; i++)
		printf("%s%02x", i && !(i % 32) ? "\n#" : " ", p->d[i]);
	printf("\n");
}

/* Where an IPv6 datagram of UDP length 0 ends: see v6_len0_fate. */
static void probe_v6_len0(void)
{
	struct pkt *p = &batch[0];
	struct tally t = { 0 };
	long long end = now_ms() + 5000;
	struct snap a, b;

	p->v6 = true;
	p->src = S_OTHER;
	put_ip_udp(p, 16);
	memset(p->d + 48, 0, 16);
	fix_lengths(p, 16);
	put16(p->d + 40 + 4, 0);
	snap(&a);
	if (send_batch(p, 1, &t) != 1)
		die("the IPv6 datagram of UDP length 0 was not sent");
	do {
		snap(&b);
	} while (udp_total(&b) == udp_total(&a) && now_ms() < end);
	/* As in single_step(): the device's counters may be 10 ms old. */
	usleep(30000);
	snap(&b);
	if (b.udp6_err - a.udp6_err == 1 && d(&a, &b, C_HDR) == 0)
		v6_len0_fate = V_UDP_ERR;
	else if (b.udp6_in - a.udp6_in == 1 && d(&a, &b, C_HDR) == 1)
		v6_len0_fate = V_HDR;
	else
		die("an IPv6 datagram of UDP length 0: Udp6InDatagrams +%lld, Udp6InErrors +%lld, drop_bad_hdr +%lld",
		    b.udp6_in - a.udp6_in, b.udp6_err - a.udp6_err,
		    d(&a, &b, C_HDR));
	printf("# an IPv6 datagram of UDP length 0 meets: %s\n",
	       fate_name[v6_len0_fate]);
}

/* -S: one packet at a time, the door's verdict on each. */
static bool single_step(uint32_t n)
{
	static const int fate_cnt[] = {
		[V_HDR] = C_HDR, [V_ICRC] = C_ICRC, [V_PKEY] = C_PKEY,
		[V_NOQP] = C_NOQP, [V_TRANSPORT] = C_TRANSPORT,
	};
	struct tally t = { 0 };
	struct snap a, b;
	uint32_t i, bad = 0;

	for (i = 0; i < n; i++) {
		long long end = now_ms() + 5000;
		bool good;

		make_packet(&batch[0]);
		snap(&a);
		if (send_batch(batch, 1, &t) != 1)
			continue;
		do {
			snap(&b);
		} while (udp_total(&b) == udp_total(&a) && now_ms() < end);
		/*
		 * The UDP counter moves after the receive path is done; the
		 * device's counters, as ib_core shows them, may be 10 ms old.
		 */
		usleep(30000);
		snap(&b);
		if (batch[0].fate == V_UDP_ERR)
			good = b.udp_err + b.udp6_err > a.udp_err + a.udp6_err;
		else if (batch[0].fate < E_SILENT)
			good = d(&a, &b, fate_cnt[batch[0].fate]) == 1 &&
			       d(&a, &b, C_RX) == 0;
		else
			good = d(&a, &b, C_RX) == 1;
		if (!good) {
			const struct pkt *p = &batch[0];
			size_t ipl = p->v6 ? 40 : 20;

			printf("# packet %u (IPv%d, %u bytes, UDP length %u, opcode 0x%02x, flags 0x%02x): predicted %s; rx %lld hdr %lld icrc %lld pkey %lld no_qp %lld transport %lld udp %lld\n",
			       i, p->v6 ? 6 : 4, p->len,
			       get16(p->d + ipl + 4), p->d[ipl + 8],
			       p->d[ipl + 9], fate_name[p->fate],
			       d(&a, &b, C_RX), d(&a, &b, C_HDR),
			       d(&a, &b, C_ICRC), d(&a, &b, C_PKEY),
			       d(&a, &b, C_NOQP), d(&a, &b, C_TRANSPORT),
			       udp_total(&b) - udp_total(&a));
			hexdump(p);
			if (++bad == 5)
				break;
		}
	}
	return ok(!bad, "single steps: %u packets, each as predicted", i);
}

/* Wait for @cond over fresh snapshots, up to WAIT_MS. */
#define WAIT_FOR(s, cond) ({						\
	long long end_ = now_ms() + WAIT_MS;				\
	bool met_;							\
	for (;;) {							\
		snap(s);						\
		met_ = (cond);						\
		if (met_ || now_ms() > end_)				\
			break;						\
		rt_poll();						\
		poll_fuzz();						\
		usleep(5000);						\
	}								\
	met_; })

static bool run_round(uint32_t n)
{
	struct tally t = { 0 };
	struct snap s0, s1;
	long long t0 = now_ms(), t_send, qfull, peer;
	long long acc, wild;
	uint32_t i, sent = 0;
	bool good = true, net, door, eng = true, ud = true, wqe;
	int k;

	round_no++;
	clear_details();
	if (!make_fqps()) {
		ok(false, "round %u: make the fuzzer's QPs", round_no);
		destroy_fqps();
		return false;
	}
	gsi.sent = real_a.sent = 0;
	/*
	 * The real traffic is idle between rounds: a packet of it in flight
	 * while the counters are read would be counted by PEER on one side
	 * of the snapshot and received on the other.
	 */
	snap(&s0);
	rt.posting = rt.on;
	rt_poll();

	while (sent < n) {
		k = n - sent < BATCH ? n - sent : BATCH;
		for (i = 0; i < (uint32_t)k; i++)
			make_packet(&batch[i]);
		sent += send_batch(batch, k, &t);
		rt_poll();
		good &= poll_fuzz();
		if (!(sent % (8 * BATCH)) && !cfg.single) {
			/* Keep at most a few batches between us and DEV. */
			long long end = now_ms() + WAIT_MS;
			struct snap s;

			snap(&s);
			while (t.sent + (s.peer_tx - s0.peer_tx) >
			       (uint64_t)(udp_total(&s) - udp_total(&s0)) +
			       4 * BATCH && now_ms() < end) {
				usleep(1000);
				snap(&s);
				rt_poll();
			}
		}
	}
	/* Each queue's last packet has a counted fate: see it, it is drained. */
	for (i = 0, k = 0; i < (uint32_t)nfq + 2; i++) {
		struct fqp *q = i < (uint32_t)nfq ? &fq[i] :
				i == (uint32_t)nfq ? &gsi : &real_a;

		if (q->state == IBV_QPS_RESET || (q == &real_a && !rt.on))
			continue;
		make_marker(&batch[k], q);
		if (batch[k].fate != E_ADDR && batch[k].fate != E_STATE &&
		    batch[k].fate != E_QKEY)
			die("marker for %s predicted %s", q->name,
			    fate_name[batch[k].fate]);
		if (++k == BATCH) {
			send_batch(batch, k, &t);
			k = 0;
		}
	}
	send_batch(batch, k, &t);
	t_send = now_ms();
	good &= rt_quiesce();

	/* The network: every packet reached DEV's UDP socket. */
	net = WAIT_FOR(&s1, udp_total(&s1) - udp_total(&s0) ==
		       (long long)t.sent + (s1.peer_tx - s0.peer_tx));
	peer = s1.peer_tx - s0.peer_tx;
	if (!net || s1.udp_err + s1.udp6_err - s0.udp_err - s0.udp6_err !=
		    (long long)t.fate[V_UDP_ERR]) {
		detail("round %u: sent %" PRIu64 " (IPv6 %" PRIu64 "), PEER sent %lld; DEV's namespace received %lld UDP datagrams, %lld UDP errors (%" PRIu64 " expected)",
		       round_no, t.sent, t.sent6, peer,
		       udp_total(&s1) - udp_total(&s0),
		       s1.udp_err + s1.udp6_err - s0.udp_err - s0.udp6_err,
		       t.fate[V_UDP_ERR]);
		if (!bad_net)
			show_network();
		net = false;
	}

	/* The engines: every queue drained (see make_marker()). */
	acc = 0;
	for (i = E_SILENT; i < NFATE; i++)
		acc += t.fate[i];
	wild = t.fate[E_WILD];
	WAIT_FOR(&s1, (d(&s0, &s1, C_QFULL) || d(&s0, &s1, C_DEVQFULL)) ?
		 true :
		 d(&s0, &s1, C_ADDR) >= (long long)t.fate[E_ADDR] &&
		 d(&s0, &s1, C_QKEY) >= (long long)t.fate[E_QKEY] &&
		 d(&s0, &s1, C_STATE) >= (long long)t.fate[E_STATE] &&
		 rx_queued() <= 0);
	usleep(200000);
	snap(&s1);
	qfull = d(&s0, &s1, C_QFULL) + d(&s0, &s1, C_DEVQFULL);
	peer = s1.peer_tx - s0.peer_tx;

	door = d(&s0, &s1, C_ICRC) == (long long)t.fate[V_ICRC] &&
	       d(&s0, &s1, C_PKEY) == (long long)t.fate[V_PKEY] &&
	       d(&s0, &s1, C_NOQP) == (long long)t.fate[V_NOQP] &&
	       d(&s0, &s1, C_TRANSPORT) == (long long)t.fate[V_TRANSPORT] &&
	       d(&s0, &s1, C_RX) + qfull == acc + peer &&
	       d(&s0, &s1, C_HDR) >= (long long)t.fate[V_HDR] &&
	       d(&s0, &s1, C_HDR) <= (long long)(t.fate[V_HDR] + wild);
	if (!door)
		detail("round %u: door: icrc %lld/%" PRIu64 " pkey %lld/%" PRIu64 " no_qp %lld/%" PRIu64 " transport %lld/%" PRIu64 " rx+queue_full %lld/%lld (PEER %lld) hdr %lld/%" PRIu64 "..+%lld (counted/predicted)",
		       round_no, d(&s0, &s1, C_ICRC), t.fate[V_ICRC],
		       d(&s0, &s1, C_PKEY), t.fate[V_PKEY],
		       d(&s0, &s1, C_NOQP), t.fate[V_NOQP],
		       d(&s0, &s1, C_TRANSPORT), t.fate[V_TRANSPORT],
		       d(&s0, &s1, C_RX) + qfull, acc + peer, peer,
		       d(&s0, &s1, C_HDR), t.fate[V_HDR], wild);
	if (!qfull) {
		eng = d(&s0, &s1, C_ADDR) == (long long)t.fate[E_ADDR] &&
		      d(&s0, &s1, C_QKEY) == (long long)t.fate[E_QKEY] &&
		      d(&s0, &s1, C_STATE) >= (long long)t.fate[E_STATE] &&
		      d(&s0, &s1, C_STATE) <=
				(long long)(t.fate[E_STATE] + wild);
		if (!eng)
			detail("round %u: engine: bad_addr %lld/%" PRIu64 " bad_qkey %lld/%" PRIu64 " bad_state %lld/%" PRIu64 "..+%lld (counted/predicted)",
			       round_no, d(&s0, &s1, C_ADDR), t.fate[E_ADDR],
			       d(&s0, &s1, C_QKEY), t.fate[E_QKEY],
			       d(&s0, &s1, C_STATE), t.fate[E_STATE], wild);
	}

	/* Every WQE completes once the QPs are in ERR. */
	for (i = 0; i < (uint32_t)nfq; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (fq[i].state != IBV_QPS_RESET)
			good &= qp_modify(&fq[i], &a, IBV_QP_STATE);
	}
	{
		long long end = now_ms() + WAIT_MS;

		do {
			wqe = poll_fuzz();
			good &= wqe;
			if (all_wqes_done())
				break;
			usleep(2000);
		} while (now_ms() < end);
		wqe = all_wqes_done() && good;
		if (!all_wqes_done())
			undone_detail();
	}
	for (i = 0; i < (uint32_t)nfq; i++) {
		struct fqp *q = &fq[i];

		if (q->type != IBV_QPT_UD || q->state == IBV_QPS_RESET ||
		    q->state == IBV_QPS_INIT || q->state == IBV_QPS_ERR)
			continue;
		if (q->ud_seen != (q->ud_n < NRECV ? q->ud_n : NRECV) &&
		    !qfull) {
			detail("round %u: %s: %d receives took a packet, %d packets had its Q_Key, %d receives were posted",
			       round_no, q->name, q->ud_seen, q->ud_n, NRECV);
			ud = false;
		}
	}
	drain_events();
	good &= destroy_fqps();
	good &= poll_fuzz();

	bad_net |= !net;
	bad_door |= !door;
	bad_engine |= !eng;
	bad_ud |= !ud;
	bad_wqe |= !wqe;
	for (i = 0; i < NFATE; i++)
		total.fate[i] += t.fate[i];
	total.sent += t.sent;
	total.sent6 += t.sent6;
	printf("# round %u: %" PRIu64 " packets (IPv6 %" PRIu64 ") in %lld ms, drained in %lld ms; PEER %lld; queue full %lld; dropped: hdr %" PRIu64 " icrc %" PRIu64 " pkey %" PRIu64 " no_qp %" PRIu64 " transport %" PRIu64 " udp %" PRIu64 "; queued: reset %" PRIu64 " addr %" PRIu64 " state %" PRIu64 " qkey %" PRIu64 " ud %" PRIu64 " wild %" PRIu64 "\n",
	       round_no, t.sent, t.sent6, t_send - t0, now_ms() - t_send, peer,
	       qfull, t.fate[V_HDR], t.fate[V_ICRC], t.fate[V_PKEY],
	       t.fate[V_NOQP], t.fate[V_TRANSPORT], t.fate[V_UDP_ERR],
	       t.fate[E_SILENT], t.fate[E_ADDR], t.fate[E_STATE],
	       t.fate[E_QKEY], t.fate[E_UD_OK], t.fate[E_WILD]);
	fflush(stdout);
	good &= net && door && eng && ud && wqe;
	if (!good)
		ok(false, "round %u: every packet and WQE accounted for",
		   round_no);
	clear_details();
	return good;
}

/* Idle and total jiffies of each CPU, to see what a run left unused. */
static int cpu_times(unsigned long long *idle, unsigned long long *all, int max)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[256];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = { 0 };

		if (strncmp(line, "cpu", 3) || line[3] == ' ')
			continue;
		if (sscanf(line + 3, "%*d %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]) < 4)
			continue;
		idle[n] = v[3] + v[4];
		all[n] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] +
			 v[7];
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* ---- Setup ------------------------------------------------------------ */

/* No QP on DEV but the GSI one: the prediction knows every QP number. */
static bool only_gsi(void)
{
	char cmd[128], line[512];
	bool good = true;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma res show qp link %s/1 2>&1",
		 cfg.dev);
	f = popen(cmd, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *l = strstr(line, "lqpn ");

		if (l && strtoul(l + 5, NULL, 10) != 1) {
			detail("%s: %s", cfg.dev, line);
			good = false;
		}
	}
	pclose(f);
	return good;
}

static void open_counters(void)
{
	int i;

	for (i = 0; i < NCNT; i++) {
		cnt_fd[i] = open_counter(cfg.dev, cnt_name[i]);
		if (cnt_fd[i] < 0 && i != C_DEVQFULL)
			die("counter %s of %s: %s", cnt_name[i], cfg.dev,
			    strerror(errno));
	}
	peer_tx_fd = open_counter(cfg.peer_dev, "tx_packets");
	snmp_fd = open("/proc/self/net/snmp", O_RDONLY);
	snmp6_fd = open("/proc/self/net/snmp6", O_RDONLY);
	if (peer_tx_fd < 0 || snmp_fd < 0 || snmp6_fd < 0)
		die("counters of %s or /proc/net/snmp: %s", cfg.peer_dev,
		    strerror(errno));
}

static void setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_ah_attr aa;
	int i, fl;

	if (inet_pton(AF_INET, cfg.addr, &a4) != 1 ||
	    inet_pton(AF_INET, cfg.peer_addr, &p4) != 1 ||
	    inet_pton(AF_INET, cfg.fuzz, &f4) != 1 ||
	    inet_pton(AF_INET, cfg.other, &x4) != 1 ||
	    inet_pton(AF_INET6, cfg.addr6, &a6) != 1 ||
	    inet_pton(AF_INET6, cfg.fuzz6, &f6) != 1 ||
	    inet_pton(AF_INET6, cfg.other6, &x6) != 1)
		die("bad address");
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), cfg.dev))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("open %s", cfg.dev);
	gid4 = find_gid(cfg.dev, cfg.addr, &dgid4);
	gid6 = find_gid(cfg.dev, cfg.addr6, &dgid6);
	if (gid4 < 0 || gid6 < 0)
		die("no RoCE v2 GIDs of %s and %s on %s", cfg.addr, cfg.addr6,
		    cfg.dev);
	gid_of(cfg.fuzz, &fgid4);
	gid_of(cfg.fuzz6, &fgid6);
	fl = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);

	fpd = ibv_alloc_pd(ctx);
	fcq = fpd ? ibv_create_cq(ctx, 2048, NULL, NULL, 0) : NULL;
	srq_buf = aligned_alloc(4096, QBUF);
	if (!fcq || !srq_buf)
		die("PD, CQ: %s", strerror(errno));
	srq_mr = ibv_reg_mr(fpd, srq_buf, QBUF, ACC_ALL);
	for (i = 0; i < MAX_FQP; i++) {
		fq_bufs[i] = aligned_alloc(4096, QBUF);
		if (!fq_bufs[i])
			die("memory");
		memset(fq_bufs[i], 0, QBUF);
		fq_mrs[i] = ibv_reg_mr(fpd, fq_bufs[i], QBUF, ACC_ALL);
		if (!fq_mrs[i])
			die("ibv_reg_mr: %s", strerror(errno));
	}
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = IB_PORT;
	aa.grh.hop_limit = 64;
	aa.grh.dgid = fgid4;
	aa.grh.sgid_index = gid4;
	ah4 = ibv_create_ah(fpd, &aa);
	aa.grh.dgid = fgid6;
	aa.grh.sgid_index = gid6;
	ah6 = ibv_create_ah(fpd, &aa);
	if (!srq_mr || !ah4 || !ah6)
		die("MR or AH: %s", strerror(errno));
	open_counters();
	open_sockets();
}

/* The fuzzer's ICRC is rdma_rxe's, on packets rxe sent. */
static bool icrc_selftest(void)
{
	size_t i;
	bool good = true;

	for (i = 0; i < sizeof(rxe_vectors) / sizeof(rxe_vectors[0]); i++) {
		const struct rxe_vector *v = &rxe_vectors[i];
		uint32_t c = icrc(v->data, v->ipv6, v->len - 4);

		if (c != get_le32(v->data + v->len - 4)) {
			detail("%s: ICRC 0x%08x, rxe sent 0x%08x", v->name, c,
			       get_le32(v->data + v->len - 4));
			good = false;
		}
	}
	return ok(good, "ICRC: the fuzzer computes rdma_rxe's on %zu recorded packets",
		  i);
}

int main(int argc, char **argv)
{
	unsigned long long idle0[16], all0[16], idle1[16], all1[16];
	long long start = now_ms(), end;
	bool time_out = false;
	int c, ncpu;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "n:r:s:t:Sd:a:A:D:p:N:f:F:x:X:")) != -1) {
		switch (c) {
		case 'n': cfg.packets = strtoull(optarg, NULL, 0); break;
		case 'r': cfg.round = strtoul(optarg, NULL, 0); break;
		case 's': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 't': cfg.seconds = strtoul(optarg, NULL, 0); break;
		case 'S': cfg.single = true; break;
		case 'd': cfg.dev = optarg; break;
		case 'a': cfg.addr = optarg; break;
		case 'A': cfg.addr6 = optarg; break;
		case 'D': cfg.peer_dev = optarg; break;
		case 'p': cfg.peer_addr = optarg; break;
		case 'N': cfg.netns = optarg; break;
		case 'f': cfg.fuzz = optarg; break;
		case 'F': cfg.fuzz6 = optarg; break;
		case 'x': cfg.other = optarg; break;
		case 'X': cfg.other6 = optarg; break;
		default:
			fprintf(stderr, "usage: see the head of fuzz_wire.c\n");
			return 2;
		}
	}
	if (!cfg.seed)
		cfg.seed = (uint64_t)time(NULL) * 2654435761u ^ getpid();
	if (!cfg.round || cfg.round > 200000)
		cfg.round = 25000;
	rng_state = cfg.seed;
	printf("# fuzz_wire: seed %" PRIu64 ", %" PRIu64 " packets in rounds of %u, at most %u s\n",
	       cfg.seed, cfg.packets, cfg.round, cfg.seconds);
	crc_init();
	icrc_selftest();
	if (!ok(only_gsi(), "%s holds no QP but the GSI one", cfg.dev))
		return tap_done();
	setup();
	end = start + cfg.seconds * 1000LL;
	if (cfg.single) {
		probe_v6_len0();
		if (make_fqps())
			single_step(cfg.packets);
		else
			ok(false, "make the fuzzer's QPs");
		destroy_fqps();
		return tap_done();
	}
	rt_setup();

	/* Resolve the neighbours before counting anything. */
	for (int i = 0; i < 2; i++) {
		struct tally t = { 0 };

		batch[i].v6 = i;
		batch[i].src = S_OTHER;
		put_ip_udp(&batch[i], 16);
		memset(batch[i].d + (i ? 48 : 28), 0, 16);
		fix_lengths(&batch[i], 16);
		send_batch(&batch[i], 1, &t);
	}
	usleep(500000);
	probe_v6_len0();

	ncpu = cpu_times(idle0, all0, 16);
	while (total.sent < cfg.packets && failed_rounds < 3) {
		uint64_t left = cfg.packets - total.sent;

		if (now_ms() > end) {
			time_out = true;
			break;
		}
		if (!run_round(left < cfg.round ? left : cfg.round))
			failed_rounds++;
	}
	rt_quiesce();
	end = now_ms();
	cpu_times(idle1, all1, 16);
	printf("# CPUs idle during the rounds:");
	for (c = 0; c < ncpu; c++)
		printf(" %.0f%%", 100.0 * (idle1[c] - idle0[c]) /
				  (all1[c] - all0[c] + 1));
	printf("\n");

	ok(!bad_net, "network: each of the %" PRIu64 " packets sent (%" PRIu64 " over IPv6) reached %s's UDP socket, and each of PEER's",
	   total.sent, total.sent6, cfg.dev);
	ok(!bad_door, "door: drops by cause (header %" PRIu64 ", ICRC %" PRIu64 ", P_Key %" PRIu64 ", QP number %" PRIu64 ", transport %" PRIu64 ") and rx_packets as predicted",
	   total.fate[V_HDR], total.fate[V_ICRC], total.fate[V_PKEY],
	   total.fate[V_NOQP], total.fate[V_TRANSPORT]);
	ok(!bad_engine, "engine: drop_bad_addr (%" PRIu64 ") and drop_bad_qkey (%" PRIu64 ") exact, drop_bad_state (%" PRIu64 " and up to %" PRIu64 " wild) bounded",
	   total.fate[E_ADDR], total.fate[E_QKEY], total.fate[E_STATE],
	   total.fate[E_WILD]);
	ok(!bad_ud, "UD: every packet with the Q_Key took a receive while there was one (%" PRIu64 " packets), length, immediate, IP header and payload checked",
	   total.fate[E_UD_OK]);
	ok(!bad_wqe, "WQEs: each completed exactly once (%lu completions, %lu successful)",
	   wc_seen, wc_ok);
	ok(!events_bad, "async events: none but QP, SRQ and port events (%lu)",
	   events_seen);
	ok(!rt.bad && rt.done[0] + rt.done[1] + rt.done[2] > 0,
	   "real traffic: %lu SENDs, %lu WRITEs with immediate, %lu READs (%llu bytes) intact",
	   rt.done[0], rt.done[1], rt.done[2], rt.bytes);
	ok(!time_out && total.sent >= cfg.packets,
	   "%" PRIu64 " packets in %lld s (%.0f per second), %u rounds",
	   total.sent, (end - start) / 1000,
	   total.sent * 1000.0 / (end - start + 1), round_no);
	rt_teardown();
	return tap_done();
}
