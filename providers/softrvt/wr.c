/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsoftrvt: the ibv_wr_*() API of extended QPs.
 *
 * softrvt's send queue is kernel memory, so a batch cannot be written in
 * place and published by moving an index.  The ibv_wr_*() calls between
 * ibv_wr_start() and ibv_wr_complete() build the batch here as a list of
 * struct ibv_send_wr, with copies of the SGE lists and inline payloads,
 * which the caller may reuse as soon as a setter returns, and
 * ibv_wr_complete() posts the list as ibv_post_send() would.
 *
 * A batch with a bad WR must fail as a whole, with the errno
 * ibv_post_send() gives for that WR.  So every check the kernel makes
 * before it takes a WR is made here first, on the whole batch, before
 * anything is posted: the opcode for the QP type (send_ops_flags), the
 * SGE count, the inline length, the atomic operand, the message size,
 * the UD address and MTU, and the QP's state.  What stays the kernel's is
 * room in the send queue, whose consumer index only the kernel knows: a
 * batch longer than the queue fails with ENOMEM and posts nothing, but one
 * that finds the queue partly full has its WRs that fit posted, as with
 * ibv_post_send().
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "softrvt.h"

/* The operations each QP type takes, as the kernel's post_send checks. */
uint64_t softrvt_send_ops(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_SEND_WITH_INV |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
		       IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE;
	case IBV_QPT_UC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	case IBV_QPT_UD:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_QPT_XRC_SEND:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_SEND_WITH_INV |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_LOCAL_INV;
	default:
		return 0;
	}
}

/* Grow an array to hold @want elements of @size bytes. */
static int softrvt_grow(void **array, size_t *cap, size_t want, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (want <= *cap)
		return 0;
	while (n < want)
		if (__builtin_mul_overflow(n, 2, &n))
			return ENOMEM;
	if (__builtin_mul_overflow(n, size, &size))
		return ENOMEM;
	p = realloc(*array, size);
	if (!p)
		return ENOMEM;
	*array = p;
	*cap = n;
	return 0;
}

static void softrvt_wr_fail(struct softrvt_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/*
 * Start a WR of the batch, with the caller's wr_id and wr_flags.  NULL
 * once the batch has failed: it will not be posted, the rest is ignored.
 * IBV_SEND_INLINE comes from the inline setters, not from wr_flags.
 */
static struct ibv_send_wr *softrvt_wr_new(struct ibv_qp_ex *qpx,
					  enum ibv_wr_opcode opcode)
{
	struct softrvt_wr_batch *b = &to_sqp_ex(qpx)->batch;
	struct ibv_send_wr *wr;
	int ret;

	if (b->err)
		return NULL;
	ret = softrvt_grow((void **)&b->wr, &b->wr_cap, b->nwr + 1,
			   sizeof(*b->wr));
	if (ret) {
		softrvt_wr_fail(b, ret);
		return NULL;
	}

	wr = &b->wr[b->nwr].wr;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qpx->wr_id;
	wr->opcode = opcode;
	wr->send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
	b->wr[b->nwr].first_sge = b->nsge;
	memset(&b->wr[b->nwr].placement, 0, sizeof(b->wr[b->nwr].placement));
	b->nwr++;
	return wr;
}

/* The WR a setter applies to: the last one built, if the batch is good. */
static struct ibv_send_wr *softrvt_wr_cur(struct softrvt_qp *qp)
{
	struct softrvt_wr_batch *b = &qp->batch;

	if (b->err)
		return NULL;
	if (!b->nwr) {
		softrvt_wr_fail(b, EINVAL);
		return NULL;
	}
	return &b->wr[b->nwr - 1].wr;
}

static void softrvt_wr_send(struct ibv_qp_ex *qpx)
{
	softrvt_wr_new(qpx, IBV_WR_SEND);
}

static void softrvt_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void softrvt_wr_send_inv(struct ibv_qp_ex *qpx,
				uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void softrvt_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    __be32 imm_data)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void softrvt_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr)
{
	softrvt_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void softrvt_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, __be32 imm_data)
{
	softrvt_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
			imm_data);
}

static void softrvt_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr)
{
	softrvt_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void softrvt_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			      uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void softrvt_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	softrvt_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			  compare, swap);
}

static void softrvt_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	softrvt_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			  add, 0);
}

static void softrvt_wr_local_inv(struct ibv_qp_ex *qpx,
				 uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

/*
 * FLUSH and ATOMIC_WRITE exist only here, in the ibv_wr_*() API: the
 * batch posts them with softrvt's method (softrvt_post_placement_wr()).
 */
static struct softrvt_placement_wr *
softrvt_wr_placement(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		     uint32_t rkey, uint64_t remote_addr)
{
	struct softrvt_wr_batch *b = &to_sqp_ex(qpx)->batch;
	struct softrvt_placement_wr *p;

	if (!softrvt_wr_new(qpx, opcode))
		return NULL;
	p = &b->wr[b->nwr - 1].placement;
	p->remote_addr = remote_addr;
	p->rkey = rkey;
	return p;
}

static void softrvt_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr, size_t len, uint8_t type,
			     uint8_t level)
{
	struct softrvt_placement_wr *p;

	p = softrvt_wr_placement(qpx, IBV_WR_FLUSH, rkey, remote_addr);
	if (!p)
		return;
	/* The RETH's length is 32 bits. */
	if (len > UINT32_MAX) {
		softrvt_wr_fail(&to_sqp_ex(qpx)->batch, EINVAL);
		return;
	}
	p->opcode = IB_UVERBS_WR_FLUSH;
	p->length = len;
	p->flush_type = type;
	p->flush_level = level;
}

static void softrvt_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr,
				    const void *atomic_wr)
{
	struct softrvt_placement_wr *p;

	p = softrvt_wr_placement(qpx, IBV_WR_ATOMIC_WRITE, rkey,
				 remote_addr);
	if (!p)
		return;
	p->opcode = IB_UVERBS_WR_ATOMIC_WRITE;
	memcpy(&p->value, atomic_wr, sizeof(p->value));
}

/* As IBV_WR_BIND_MW through ibv_post_send(): the caller owns mw->rkey. */
static void softrvt_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			       uint32_t rkey,
			       const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = softrvt_wr_new(qpx, IBV_WR_BIND_MW);

	if (!wr)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bind_info;
}

/* Kept for any QP type, as ibv_post_send() ignores them but for UD. */
static void softrvt_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = softrvt_wr_cur(to_sqp_ex(qpx));

	if (!wr)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/* The SRQ of an XRC_SEND QP's WR, as ibv_post_send() takes it. */
static void softrvt_wr_set_xrc_srqn(struct ibv_qp_ex *qpx,
				    uint32_t remote_srqn)
{
	struct ibv_send_wr *wr = softrvt_wr_cur(to_sqp_ex(qpx));

	if (!wr)
		return;
	wr->qp_type.xrc.remote_srqn = remote_srqn;
}

/*
 * Give the current WR room for @n SGEs at the end of the batch's SGE
 * array, in place of any it had: a setter called again replaces the
 * data.  NULL for none; the batch has failed if @n SGEs were refused.
 */
static struct ibv_sge *softrvt_wr_sges(struct softrvt_qp *qp,
				       struct ibv_send_wr *wr, size_t n)
{
	struct softrvt_wr_batch *b = &qp->batch;
	size_t first = b->wr[b->nwr - 1].first_sge;
	int ret;

	if (n > qp->max_send_sge) {
		softrvt_wr_fail(b, EINVAL);
		return NULL;
	}
	ret = softrvt_grow((void **)&b->sge, &b->sge_cap, first + n,
			   sizeof(*b->sge));
	if (ret) {
		softrvt_wr_fail(b, ret);
		return NULL;
	}
	b->nsge = first + n;
	wr->num_sge = n;
	wr->send_flags &= ~IBV_SEND_INLINE;
	return n ? &b->sge[first] : NULL;
}

static void softrvt_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				    const struct ibv_sge *sg_list)
{
	struct softrvt_qp *qp = to_sqp_ex(qpx);
	struct ibv_send_wr *wr = softrvt_wr_cur(qp);
	struct ibv_sge *sge;

	if (!wr)
		return;
	sge = softrvt_wr_sges(qp, wr, num_sge);
	if (sge)
		memcpy(sge, sg_list, num_sge * sizeof(*sge));
}

static void softrvt_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			       uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr,
		.length = length,
		.lkey = lkey,
	};

	softrvt_wr_set_sge_list(qpx, 1, &sge);
}

/*
 * The payload is copied now, into the batch's inline buffer, and sent
 * as one inline SGE whose address is its offset in that buffer until
 * ibv_wr_complete() makes it a pointer (the buffer may still move).  The
 * kernel takes inline data for sends and RDMA writes only.
 */
static void softrvt_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					    size_t num_buf,
					    const struct ibv_data_buf *buf_list)
{
	struct softrvt_qp *qp = to_sqp_ex(qpx);
	struct softrvt_wr_batch *b = &qp->batch;
	struct ibv_send_wr *wr = softrvt_wr_cur(qp);
	struct ibv_sge *sge;
	size_t len = 0, i;
	uint8_t *p;
	int ret;

	if (!wr)
		return;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		break;
	default:
		softrvt_wr_fail(b, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (__builtin_add_overflow(len, buf_list[i].length, &len) ||
		    len > qp->max_inline_data) {
			softrvt_wr_fail(b, EINVAL);
			return;
		}
	}

	ret = softrvt_grow((void **)&b->inl, &b->inl_cap, b->ninl + len, 1);
	if (ret) {
		softrvt_wr_fail(b, ret);
		return;
	}
	sge = softrvt_wr_sges(qp, wr, len ? 1 : 0);
	if (b->err)
		return;
	wr->send_flags |= IBV_SEND_INLINE;
	if (!sge)
		return;
	sge->addr = b->ninl;
	sge->length = len;
	sge->lkey = 0;
	p = b->inl + b->ninl;
	for (i = 0; i < num_buf; i++) {
		memcpy(p, buf_list[i].addr, buf_list[i].length);
		p += buf_list[i].length;
	}
	b->ninl += len;
}

static void softrvt_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				       size_t length)
{
	const struct ibv_data_buf buf = {
		.addr = addr,
		.length = length,
	};

	softrvt_wr_set_inline_data_list(qpx, 1, &buf);
}

static void softrvt_batch_reset(struct softrvt_wr_batch *b)
{
	b->nwr = 0;
	b->nsge = 0;
	b->ninl = 0;
	b->err = 0;
}

static void softrvt_wr_start(struct ibv_qp_ex *qpx)
{
	struct softrvt_qp *qp = to_sqp_ex(qpx);

	pthread_mutex_lock(&qp->wr_lock);
	softrvt_batch_reset(&qp->batch);
}

static void softrvt_wr_abort(struct ibv_qp_ex *qpx)
{
	struct softrvt_qp *qp = to_sqp_ex(qpx);

	softrvt_batch_reset(&qp->batch);
	pthread_mutex_unlock(&qp->wr_lock);
}

static bool softrvt_wr_is_atomic(const struct ibv_send_wr *wr)
{
	return wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * The kernel's checks of one WR that the setters have not made, before
 * any WR of the batch is posted (see the top of this file).  @port: the
 * port's attributes, read on first need; @have_port: whether they were.
 */
static int softrvt_wr_check(struct softrvt_qp *qp,
			    const struct ibv_send_wr *wr,
			    struct ibv_port_attr *port, bool *have_port)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint64_t len = 0;
	int i, ret;

	/*
	 * They send nothing, or eight bytes of their own; the kernel checks
	 * them when they run.
	 */
	if (wr->opcode == IBV_WR_LOCAL_INV || wr->opcode == IBV_WR_BIND_MW ||
	    softrvt_wr_is_placement(wr))
		return 0;
	if (ud && !wr->wr.ud.ah)
		return EINVAL;
	if (softrvt_wr_is_atomic(wr) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length < sizeof(uint64_t)))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	/*
	 * The port's limits, read only for a WR that might pass them: any
	 * message up to the smallest MTU is within both.
	 */
	if (len <= 256)
		return 0;
	if (!*have_port) {
		ret = ibv_query_port(qp->vqp.qp.context, 1, port);
		if (ret)
			return ret;
		*have_port = true;
	}
	if (len > port->max_msg_sz)
		return EINVAL;
	/* A UD message is one packet. */
	if (ud && len > 128U << port->active_mtu)
		return EINVAL;
	return 0;
}

/*
 * Link the batch into a list for ibv_post_send(), check it all, then
 * post it.  Nothing is posted if a check fails.
 */
static int softrvt_batch_post(struct softrvt_qp *qp)
{
	struct softrvt_wr_batch *b = &qp->batch;
	struct ibv_send_wr *wr, *bad;
	struct ibv_port_attr port;
	bool have_port = false;
	uint32_t state;
	size_t i;
	int ret;

	if (!b->nwr)
		return 0;
	/* As many as the queue holds at the most. */
	if (b->nwr > qp->max_send_wr)
		return ENOMEM;
	state = __atomic_load_n(&qp->state->state, __ATOMIC_ACQUIRE);
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	    state == IBV_QPS_RTR)
		return EINVAL;

	for (i = 0; i < b->nwr; i++) {
		wr = &b->wr[i].wr;
		wr->next = i + 1 < b->nwr ? &b->wr[i + 1].wr : NULL;
		wr->sg_list = wr->num_sge ? &b->sge[b->wr[i].first_sge] : NULL;
		if (wr->send_flags & IBV_SEND_INLINE && wr->num_sge)
			wr->sg_list[0].addr =
				(uintptr_t)(b->inl + wr->sg_list[0].addr);
		ret = softrvt_wr_check(qp, wr, &port, &have_port);
		if (ret)
			return ret;
	}
	return softrvt_post_batch(&qp->vqp.qp, &b->wr[0].wr, &bad);
}

static int softrvt_wr_complete(struct ibv_qp_ex *qpx)
{
	struct softrvt_qp *qp = to_sqp_ex(qpx);
	int ret;

	ret = qp->batch.err;
	if (!ret)
		ret = softrvt_batch_post(qp);
	softrvt_batch_reset(&qp->batch);
	pthread_mutex_unlock(&qp->wr_lock);
	return ret;
}

/*
 * The builders of the operations asked for, which softrvt_create_qp_ex()
 * checked the QP type takes; the setters and the batch calls always.
 */
void softrvt_qp_set_wr_ops(struct softrvt_qp *qp, uint64_t send_ops)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (send_ops & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = softrvt_wr_send;
	if (send_ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = softrvt_wr_send_imm;
	if (send_ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = softrvt_wr_send_inv;
	if (send_ops & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = softrvt_wr_rdma_write;
	if (send_ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = softrvt_wr_rdma_write_imm;
	if (send_ops & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = softrvt_wr_rdma_read;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = softrvt_wr_atomic_cmp_swp;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = softrvt_wr_atomic_fetch_add;
	if (send_ops & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = softrvt_wr_local_inv;
	if (send_ops & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = softrvt_wr_bind_mw;
	if (send_ops & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = softrvt_wr_flush;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = softrvt_wr_atomic_write;

	qpx->wr_set_ud_addr = softrvt_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = softrvt_wr_set_xrc_srqn;
	qpx->wr_set_sge = softrvt_wr_set_sge;
	qpx->wr_set_sge_list = softrvt_wr_set_sge_list;
	qpx->wr_set_inline_data = softrvt_wr_set_inline_data;
	qpx->wr_set_inline_data_list = softrvt_wr_set_inline_data_list;
	qpx->wr_start = softrvt_wr_start;
	qpx->wr_complete = softrvt_wr_complete;
	qpx->wr_abort = softrvt_wr_abort;
}

void softrvt_qp_free_batch(struct softrvt_qp *qp)
{
	struct softrvt_wr_batch *b = &qp->batch;

	free(b->wr);
	free(b->sge);
	free(b->inl);
	memset(b, 0, sizeof(*b));
}
