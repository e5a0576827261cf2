/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Two sides and RC QP pairs between them, shared by the tests that drive
 * a requester A and a responder B from one process (wire_errors, wire_mw):
 * each side is a device with a PD, a CQ and a BUF_SIZE-byte MR; each pair
 * is a fresh RC QP on each side, connected to the other.  A and B may be
 * two devices (every packet crosses the wire) or one (the same-device
 * path).  Every wait is bounded: a missing completion fails its check
 * instead of hanging.  Failures leave details for the next ok() (tap.h).
 */
#ifndef SOFTRVT_TESTS_RC_PAIR_H
#define SOFTRVT_TESTS_RC_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define IB_PORT		1
#define WAIT_MS		10000	/* for a completion or a QP state */
#define BUF_SIZE	(64 * 1024)
#define CQ_SIZE		64
#define QP_DEPTH	16
#define RD_ATOMIC	4
#define PSN_A		0x00a0a0	/* A's first send PSN, B's receive PSN */
#define PSN_B		0x00b0b0
#define CANARY		0xee
#define ATOMIC_OFF	32768	/* of the atomic target and result */
#define ACC_REMOTE	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* One device: A requests, B responds. */
struct side {
	const char *name;		/* "A" or "B" */
	const char *dev;
	int gid_index;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;		/* send and receive CQ of every QP */
	struct ibv_mr *mr;
	uint8_t *buf;			/* BUF_SIZE bytes, all of the MR */
	union ibv_gid gid;
};

struct pair {
	struct ibv_qp *qa, *qb;
};

struct pair_cfg {
	int a_access, b_access;		/* QP access flags */
	uint8_t timeout, retry_cnt, rnr_retry;	/* of both QPs */
	bool b_init_only;		/* B's QP stays in INIT */
	bool b_rtr_only;		/* B's QP stays in RTR */
};

extern struct side sa, sb;

/* Data */
uint64_t get64(const uint8_t *p);
void put64(uint8_t *p, uint64_t v);
bool u64_is(const uint8_t *p, uint64_t want, const char *what);

/* Completions */
bool wait_wc(struct side *s, struct ibv_wc *wc, int ms,
	     const char *what);
bool expect_wc(struct side *s, const char *what, uint64_t wr_id,
	       enum ibv_wc_status status, int opcode,
	       long long byte_len, const struct ibv_qp *qp, int ms);
bool cq_empty(struct side *s, const char *what);
void drain(struct side *s);

/* QPs */
const char *state_str(int state);
int qp_state(struct ibv_qp *qp);
bool wait_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms,
		const char *what);
bool state_is(struct ibv_qp *qp, enum ibv_qp_state want,
	      const char *what);
struct ibv_qp *make_qp(struct side *s);
bool modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
	    const struct side *s, const char *to);
bool to_init(struct ibv_qp *qp, const struct side *s, int access);
bool to_rtr(struct ibv_qp *qp, const struct side *s,
	    const struct side *peer, uint32_t dest_qpn, uint32_t rq_psn);
bool to_rts(struct ibv_qp *qp, const struct side *s,
	    const struct pair_cfg *c, uint32_t sq_psn);
struct pair_cfg default_cfg(void);
bool pair_up(struct pair *p, const struct pair_cfg *c);
void pair_down(struct pair *p);
void case_prepare(const char *name);
bool case_begin(struct pair *p, const char *name,
		const struct pair_cfg *c);
bool ud_qp_up(struct ibv_qp *qp, const struct side *s, uint32_t qkey,
	      uint32_t sq_psn);

/* Posting */
struct ibv_sge sge_of(const struct side *s, size_t off, uint32_t len);
bool post_recv(struct ibv_qp *qp, uint64_t wr_id, size_t off,
	       uint32_t len);
bool post_send(struct ibv_qp *qp, struct ibv_send_wr *wr);
struct ibv_send_wr wr_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			 struct ibv_sge *sg);
struct ibv_send_wr rdma_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			   struct ibv_sge *sg, size_t off,
			   uint32_t rkey);
struct ibv_send_wr atomic_of(uint64_t wr_id, enum ibv_wr_opcode opcode,
			     struct ibv_sge *sg, size_t off,
			     uint64_t compare_add, uint64_t swap);

/* softrvt's driver methods of the QP object, without the provider. */
int qp_method_raw(struct ibv_qp *qp, uint16_t method, uint16_t qp_attr,
		  uint16_t wr_attr, const void *wr, uint16_t len);

/* Devices */
bool side_open(struct side *s, int mr_access);
bool side_close(struct side *s);
void sides_close(void);
/* DEV_A GID_A DEV_B GID_B into sa and sb, or the usage on stderr. */
bool sides_from_args(int argc, char **argv, const char *prog,
		     const char *example);
const char *gid_str(const union ibv_gid *gid, char *buf, size_t len);
long long hw_counter(const char *dev, const char *name);
bool hold_rx(const char *dev, bool on);

#endif /* SOFTRVT_TESTS_RC_PAIR_H */
