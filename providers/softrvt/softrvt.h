/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsoftrvt: the userspace provider for softrvt, a software RDMA device
 * in the style of rdmavt.
 *
 * The kernel shares three kinds of ring with us, each mapped with one
 * mmap() of the context's command fd at the offset the kernel returns:
 *
 *  - a CQ ring (struct rvt_cq_wc): the kernel produces and owns head, we
 *    consume and own tail, so completions are polled without a system
 *    call;
 *  - a receive ring (struct rvt_rwq) per SRQ and per QP without an SRQ:
 *    we produce and own head, the kernel consumes and publishes tail.
 *
 * A ring of size slots holds at most size - 1 entries: head == tail is
 * empty.  Each side reads the other's index on every use, with acquire
 * semantics, and checks it lies inside the ring; each side publishes its
 * own index with a release store after the entries it covers.  No index
 * is cached here: the kernel may rewrite both (QP reset, resize).
 */
#ifndef SOFTRVT_H
#define SOFTRVT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#include <infiniband/verbs.h>

/* The ring indices shared with the kernel are C11 atomics here. */
#define RDMA_ATOMIC_UAPI(_type, _name) _Atomic(_type) _name
#include <rdma/rvt-abi.h>
#include <rdma/softrvt-abi.h>
#include <kernel-abi/softrvt-abi.h>

/*
 * libibverbs' private commands as of the rdma-core tree the provider is
 * built in: private ABI 65 (rdma-core 65) gave three of them an argument
 * for what softrvt does not use (file descriptors passed to the context,
 * a CQ buffer of the caller's, a driver command buffer).  One source for
 * both ABIs; the library's name carries the one it was built for.
 */
static inline int softrvt_cmd_get_context(struct verbs_context *ctx,
					  struct ibv_get_context *cmd,
					  size_t cmd_size,
					  struct ib_uverbs_get_context_resp *resp,
					  size_t resp_size)
{
#if IBVERBS_PABI_VERSION >= 65
	return ibv_cmd_get_context(ctx, cmd, cmd_size, NULL, resp, resp_size);
#else
	return ibv_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size);
#endif
}

static inline int softrvt_cmd_create_cq_ex(struct ibv_context *context,
					   const struct ibv_cq_init_attr_ex *attr,
					   struct verbs_cq *cq,
					   struct ibv_create_cq_ex *cmd,
					   size_t cmd_size,
					   struct ib_uverbs_ex_create_cq_resp *resp,
					   size_t resp_size)
{
#if IBVERBS_PABI_VERSION >= 65
	return ibv_cmd_create_cq_ex(context, attr, NULL, cq, cmd, cmd_size,
				    resp, resp_size, 0);
#else
	return ibv_cmd_create_cq_ex(context, attr, cq, cmd, cmd_size, resp,
				    resp_size, 0);
#endif
}

static inline int softrvt_cmd_create_qp_ex2(struct ibv_context *context,
					    struct verbs_qp *qp,
					    struct ibv_qp_init_attr_ex *attr,
					    struct ibv_create_qp_ex *cmd,
					    size_t cmd_size,
					    struct ib_uverbs_ex_create_qp_resp *resp,
					    size_t resp_size)
{
#if IBVERBS_PABI_VERSION >= 65
	return ibv_cmd_create_qp_ex2(context, qp, attr, cmd, cmd_size, resp,
				     resp_size, NULL);
#else
	return ibv_cmd_create_qp_ex2(context, qp, attr, cmd, cmd_size, resp,
				     resp_size);
#endif
}

/* The mapped layouts must be the kernel's, byte for byte. */
static_assert(sizeof(_Atomic(__u32)) == sizeof(__u32), "atomic index size");
static_assert(offsetof(struct rvt_cq_wc, uqueue) == 8, "rvt_cq_wc header");
static_assert(sizeof(struct ib_uverbs_wc) == 48, "ib_uverbs_wc size");
static_assert(offsetof(struct rvt_rwq, wq) == 8, "rvt_rwq header");
static_assert(sizeof(struct rvt_rwqe) == 16, "rvt_rwqe size");
static_assert(sizeof(struct rvt_wqe_sge) == 16, "rvt_wqe_sge size");

/* Command and response buffers: the core verbs struct, then our udata. */
DECLARE_DRV_CMD(usoftrvt_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, softrvt_cq_resp);
DECLARE_DRV_CMD(usoftrvt_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, softrvt_cq_resp);
DECLARE_DRV_CMD(usoftrvt_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, softrvt_cq_resp);
DECLARE_DRV_CMD(usoftrvt_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, softrvt_create_srq_resp);
DECLARE_DRV_CMD(usoftrvt_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		empty, softrvt_create_srq_resp);
DECLARE_DRV_CMD(usoftrvt_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		softrvt_modify_srq_cmd, empty);
DECLARE_DRV_CMD(usoftrvt_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, softrvt_create_qp_resp);
DECLARE_DRV_CMD(usoftrvt_create_qp_ex, IB_USER_VERBS_EX_CMD_CREATE_QP,
		empty, softrvt_create_qp_resp);

struct softrvt_device {
	struct verbs_device ibv_dev;
	size_t page_size;
};

struct softrvt_context {
	struct verbs_context ibv_ctx;
	/*
	 * The kernel refused a write() of a command: the process's
	 * credentials are no longer those that opened the device
	 * (ib_safe_file_access()).  Commands go by ioctl from then on.
	 */
	atomic_bool no_write;
};

struct softrvt_cq {
	struct verbs_cq vcq;
	/*
	 * Serialises pollers and resize; held from a successful
	 * ibv_start_poll() to its ibv_end_poll().
	 */
	pthread_spinlock_t lock;
	/* NULL once a resize succeeded in the kernel but its mmap failed. */
	struct rvt_cq_wc *ring;
	size_t ring_len;
	uint32_t size;			/* slots: cqe + 1 */
	/*
	 * Extended polling: the completion being read, copied out of the
	 * ring once, and the tail to publish when the caller moves on.
	 */
	struct ib_uverbs_wc cur;
	uint32_t next_tail;
};

/* A receive ring: an SRQ's, or the receive queue of a QP without SRQ. */
struct softrvt_rq {
	/* Serialises producers, and an SRQ resize against them. */
	pthread_spinlock_t lock;
	/* NULL for a QP on an SRQ, or once a resize lost the ring. */
	struct rvt_rwq *ring;
	size_t ring_len;
	uint32_t size;			/* slots: max_wr + 1 */
	uint32_t max_sge;
	size_t stride;			/* bytes per struct rvt_rwqe */
};

struct softrvt_srq {
	struct verbs_srq vsrq;
	struct softrvt_rq rq;
};

/*
 * The WRs built by the ibv_wr_*() calls of one ibv_wr_start() ...
 * ibv_wr_complete() batch.  The arrays grow as needed, so a WR refers to
 * its SGEs, and an inline SGE to its bytes, by index until wr_complete
 * makes pointers of them.
 */
struct softrvt_wr {
	struct ibv_send_wr wr;
	size_t first_sge;		/* its SGEs, in softrvt_wr_batch.sge */
	/*
	 * IBV_WR_FLUSH and IBV_WR_ATOMIC_WRITE, which struct ibv_send_wr
	 * has no fields for: the kernel's own layout, all but wr_id and
	 * send_flags (taken from wr when it is posted).
	 */
	struct softrvt_placement_wr placement;
};

static inline bool softrvt_wr_is_placement(const struct ibv_send_wr *wr)
{
	return wr->opcode == IBV_WR_FLUSH || wr->opcode == IBV_WR_ATOMIC_WRITE;
}

struct softrvt_wr_batch {
	struct softrvt_wr *wr;
	size_t nwr, wr_cap;
	struct ibv_sge *sge;
	size_t nsge, sge_cap;
	uint8_t *inl;			/* inline payloads, copied */
	size_t ninl, inl_cap;
	int err;			/* the first error, 0 if none */
};

struct softrvt_qp {
	struct verbs_qp vqp;
	struct softrvt_rq rq;
	/* The kernel's copy of the QP state, one page mapped read-only. */
	struct softrvt_qp_state *state;
	size_t state_len;
	/* What the kernel allocated, which it checks each send WR against. */
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t max_inline_data;
	/* The ibv_wr_*() API: held from ibv_wr_start() to its end. */
	pthread_mutex_t wr_lock;
	struct softrvt_wr_batch batch;
	/*
	 * XRC_SEND: the SRQ number the kernel puts on the WRs it takes, set
	 * before posting WRs for another; held across both.
	 */
	pthread_mutex_t xrc_lock;
	uint32_t xrc_srqn;
	bool xrc_srqn_set;
};

static inline struct softrvt_device *to_sdev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct softrvt_device, ibv_dev.device);
}

static inline struct softrvt_context *to_sctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct softrvt_context, ibv_ctx.context);
}

static inline struct softrvt_cq *to_scq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct softrvt_cq, vcq.cq);
}

static inline struct softrvt_cq *to_scq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct softrvt_cq, vcq.cq_ex);
}

static inline struct softrvt_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct softrvt_srq, vsrq.srq);
}

static inline struct softrvt_qp *to_sqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct softrvt_qp, vqp.qp);
}

static inline struct softrvt_qp *to_sqp_ex(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct softrvt_qp, vqp.qp_ex);
}

int softrvt_query_device(struct ibv_context *context,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int softrvt_query_port(struct ibv_context *context, uint8_t port,
		       struct ibv_port_attr *attr);

struct ibv_pd *softrvt_alloc_pd(struct ibv_context *context);
int softrvt_dealloc_pd(struct ibv_pd *pd);
struct ibv_pd *softrvt_import_pd(struct ibv_context *context,
				 uint32_t pd_handle);
void softrvt_unimport_pd(struct ibv_pd *pd);
struct ibv_mr *softrvt_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void softrvt_unimport_mr(struct ibv_mr *mr);
struct ibv_mr *softrvt_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			      uint64_t hca_va, int access);
int softrvt_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		     void *addr, size_t length, int access);
int softrvt_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *softrvt_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int softrvt_dealloc_mw(struct ibv_mw *mw);
int softrvt_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *mw_bind);

struct ibv_cq *softrvt_create_cq(struct ibv_context *context, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector);
struct ibv_cq_ex *softrvt_create_cq_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *attr);
int softrvt_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int softrvt_resize_cq(struct ibv_cq *ibcq, int cqe);
int softrvt_destroy_cq(struct ibv_cq *ibcq);

struct ibv_xrcd *softrvt_open_xrcd(struct ibv_context *context,
				   struct ibv_xrcd_init_attr *attr);
int softrvt_close_xrcd(struct ibv_xrcd *ibxrcd);
int softrvt_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
struct ibv_qp *softrvt_open_qp(struct ibv_context *context,
			       struct ibv_qp_open_attr *attr);

struct ibv_srq *softrvt_create_srq(struct ibv_pd *pd,
				   struct ibv_srq_init_attr *attr);
struct ibv_srq *softrvt_create_srq_ex(struct ibv_context *context,
				      struct ibv_srq_init_attr_ex *attr);
int softrvt_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		       int attr_mask);
int softrvt_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int softrvt_destroy_srq(struct ibv_srq *ibsrq);
int softrvt_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

struct ibv_qp *softrvt_create_qp(struct ibv_pd *pd,
				 struct ibv_qp_init_attr *attr);
struct ibv_qp *softrvt_create_qp_ex(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr);
int softrvt_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr);
int softrvt_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask);
int softrvt_destroy_qp(struct ibv_qp *ibqp);
int softrvt_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int softrvt_post_batch(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr);
int softrvt_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/* wr.c: the ibv_wr_*() API of extended QPs. */
uint64_t softrvt_send_ops(enum ibv_qp_type type);
void softrvt_qp_set_wr_ops(struct softrvt_qp *qp, uint64_t send_ops);
void softrvt_qp_free_batch(struct softrvt_qp *qp);

struct ibv_ah *softrvt_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int softrvt_destroy_ah(struct ibv_ah *ah);

#endif /* SOFTRVT_H */
