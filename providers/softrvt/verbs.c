/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsoftrvt: the verbs.
 *
 * Everything but the fast paths is a kernel command.  poll_cq and the
 * extended CQ's ibv_start_poll() read the mmapped CQ ring; post_recv and
 * post_srq_recv write the mmapped receive ring.  post_send always goes
 * through the kernel, and so do ibv_bind_mw(), as a send WR, and the
 * ibv_wr_*() batches of extended QPs (wr.c).
 *
 * Functions returning int return 0 or a positive errno value, as
 * libibverbs expects; those returning a pointer return NULL with errno
 * set.  poll_cq returns -1 for a CQ it can no longer read.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softrvt.h"

int softrvt_query_device(struct ibv_context *context,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw_ver;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw_ver = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw_ver >> 32) & 0xffff,
		 (unsigned int)(fw_ver >> 16) & 0xffff,
		 (unsigned int)fw_ver & 0xffff);
	return 0;
}

int softrvt_query_port(struct ibv_context *context, uint8_t port,
		       struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *softrvt_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

/*
 * A PD of an imported context (ibv_import_pd()): libsoftrvt's PD is the
 * handle alone, and the kernel checks the handle each time it is used.
 */
struct ibv_pd *softrvt_import_pd(struct ibv_context *context,
				 uint32_t pd_handle)
{
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->context = context;
	pd->handle = pd_handle;
	return pd;
}

void softrvt_unimport_pd(struct ibv_pd *pd)
{
	free(pd);
}

int softrvt_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

struct ibv_mr *softrvt_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			      uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* An MR of an imported context: its keys and length from the kernel. */
struct ibv_mr *softrvt_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

void softrvt_unimport_mr(struct ibv_mr *mr)
{
	free(verbs_get_mr(mr));
}

/*
 * The kernel registers a new MR in the old one's place, under the old
 * one's keys; ibv_cmd_rereg_mr() takes them from its answer.
 */
int softrvt_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		     void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;
	int ret;

	ret = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
			       access, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		errno = ret;
		return ret;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

int softrvt_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/*
 * The length the kernel maps for a ring: a header, then slots of stride
 * bytes, rounded up to whole pages.  ib_core refuses any other length.
 */
static int softrvt_ring_len(struct ibv_context *context, size_t header,
			    uint32_t slots, size_t stride, size_t *len)
{
	size_t page = to_sdev(context->device)->page_size;
	size_t n;

	if (__builtin_mul_overflow((size_t)slots, stride, &n) ||
	    __builtin_add_overflow(n, header + page - 1, &n))
		return ENOMEM;
	*len = n & ~(page - 1);
	return 0;
}

/*
 * Map a ring the kernel made for this context at @offset, with @prot: a
 * ring we write an index of is PROT_READ | PROT_WRITE, the QP state page
 * PROT_READ (the kernel refuses to map it writable).  Returns NULL with
 * errno set on failure.
 */
static void *softrvt_map_ring(struct ibv_context *context, uint64_t offset,
			      size_t len, int prot)
{
	void *ring;

	/* The kernel never hands out offset 0: it would be a missing ring. */
	if (!offset) {
		errno = EINVAL;
		return NULL;
	}
	if ((uint64_t)(off_t)offset != offset) {
		errno = EOVERFLOW;
		return NULL;
	}
	ring = mmap(NULL, len, prot, MAP_SHARED, context->cmd_fd,
		    (off_t)offset);
	return ring == MAP_FAILED ? NULL : ring;
}

/*
 * Map the CQ ring at @offset for the capacity in ibv_cq.cqe, replacing
 * the one mapped so far.  On error the old mapping stays.
 */
static int softrvt_cq_map(struct softrvt_cq *cq, uint64_t offset)
{
	struct ibv_context *context = cq->vcq.cq.context;
	int cqe = cq->vcq.cq.cqe;
	size_t len;
	void *ring;
	int ret;

	if (cqe < 1)
		return EINVAL;
	ret = softrvt_ring_len(context, offsetof(struct rvt_cq_wc, uqueue),
			       (uint32_t)cqe + 1, sizeof(struct ib_uverbs_wc),
			       &len);
	if (ret)
		return ret;
	ring = softrvt_map_ring(context, offset, len,
				PROT_READ | PROT_WRITE);
	if (!ring)
		return errno;

	if (cq->ring)
		munmap(cq->ring, cq->ring_len);
	cq->ring = ring;
	cq->ring_len = len;
	cq->size = (uint32_t)cqe + 1;
	return 0;
}

static void softrvt_cq_unmap(struct softrvt_cq *cq)
{
	if (cq->ring)
		munmap(cq->ring, cq->ring_len);
	cq->ring = NULL;
	cq->ring_len = 0;
	cq->size = 0;
}

struct ibv_cq *softrvt_create_cq(struct ibv_context *context, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	struct usoftrvt_create_cq_resp resp = {};
	struct usoftrvt_create_cq cmd = {};
	struct softrvt_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;

	ret = softrvt_cq_map(cq, resp.mmap_offset);
	if (ret)
		goto err_cmd;
	return &cq->vcq.cq;

err_cmd:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

/*
 * The kernel moves the completions not yet polled to a new ring and
 * returns its offset.  The poll lock keeps our tail still meanwhile, as
 * the kernel copies from it.
 */
int softrvt_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct usoftrvt_resize_cq_resp resp = {};
	struct usoftrvt_resize_cq cmd = {};
	struct softrvt_cq *cq = to_scq(ibcq);
	int ret;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (!ret) {
		ret = softrvt_cq_map(cq, resp.mmap_offset);
		/*
		 * The kernel fills the new ring only: the old one is dead.
		 * Without the new one the CQ cannot be polled any more.
		 */
		if (ret)
			softrvt_cq_unmap(cq);
	}
	pthread_spin_unlock(&cq->lock);
	return ret;
}

int softrvt_destroy_cq(struct ibv_cq *ibcq)
{
	struct softrvt_cq *cq = to_scq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	softrvt_cq_unmap(cq);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/*
 * The ring's wc_flags are the kernel's enum ib_wc_flags, as ib_uverbs'
 * poll_cq would pass them.  libibverbs numbers its own differently from
 * bit 2 on (there the kernel's WITH_INVALIDATE would read as
 * IBV_WC_IP_CSUM_OK), and has nothing for the kernel's SMAC, VLAN and
 * network header type: those are dropped.
 */
#define SOFTRVT_KWC_GRH		(1U << 0)
#define SOFTRVT_KWC_WITH_IMM	(1U << 1)
#define SOFTRVT_KWC_WITH_INV	(1U << 2)
#define SOFTRVT_KWC_IP_CSUM_OK	(1U << 3)

static unsigned int softrvt_wc_flags(uint32_t kflags)
{
	unsigned int flags = 0;

	if (kflags & SOFTRVT_KWC_GRH)
		flags |= IBV_WC_GRH;
	if (kflags & SOFTRVT_KWC_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (kflags & SOFTRVT_KWC_WITH_INV)
		flags |= IBV_WC_WITH_INV;
	if (kflags & SOFTRVT_KWC_IP_CSUM_OK)
		flags |= IBV_WC_IP_CSUM_OK;
	return flags;
}

static void softrvt_copy_wc(struct ibv_wc *wc, const struct ib_uverbs_wc *uwc)
{
	wc->wr_id = uwc->wr_id;
	wc->status = uwc->status;
	wc->opcode = uwc->opcode;
	wc->vendor_err = uwc->vendor_err;
	wc->byte_len = uwc->byte_len;
	/* Also invalidated_rkey: both unions overlay the same word. */
	wc->imm_data = uwc->ex.imm_data;
	wc->qp_num = uwc->qp_num;
	wc->src_qp = uwc->src_qp;
	wc->wc_flags = softrvt_wc_flags(uwc->wc_flags);
	wc->pkey_index = uwc->pkey_index;
	wc->slid = uwc->slid;
	wc->sl = uwc->sl;
	wc->dlid_path_bits = uwc->dlid_path_bits;
}

/*
 * Take completions off the ring, without a system call.  The kernel owns
 * head and we own tail; both are checked to lie inside the ring, and a
 * CQ whose indices are corrupt is reported as an error, never followed.
 */
int softrvt_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct softrvt_cq *cq = to_scq(ibcq);
	struct rvt_cq_wc *ring;
	uint32_t head, tail;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	ring = cq->ring;
	if (!ring) {
		n = -1;
		goto out;
	}
	tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	/* Acquire: pairs with the kernel's release of the entries it wrote. */
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	if (head >= cq->size || tail >= cq->size) {
		n = -1;
		goto out;
	}

	for (; n < ne && tail != head; n++) {
		softrvt_copy_wc(&wc[n], &ring->uqueue[tail]);
		if (++tail == cq->size)
			tail = 0;
	}
	/* Release: we are done reading the slots the kernel may now reuse. */
	if (n)
		atomic_store_explicit(&ring->tail, tail, memory_order_release);
out:
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * Extended polling.  A successful ibv_start_poll() takes the poll lock,
 * which ibv_end_poll() drops; in between, the completion at the tail is
 * copied once into cq->cur and every ibv_wc_read_*() reads that copy,
 * never the ring, which the kernel may be writing.  The tail moves past a
 * completion when the caller asks for the next one or ends the batch.
 */
static int softrvt_cq_read_next(struct softrvt_cq *cq, uint32_t tail)
{
	struct rvt_cq_wc *ring = cq->ring;
	uint32_t head;

	if (!ring)
		return EIO;
	/* Acquire: pairs with the kernel's release of the entries it wrote. */
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	if (head >= cq->size || tail >= cq->size)
		return EIO;
	if (head == tail)
		return ENOENT;

	memcpy(&cq->cur, &ring->uqueue[tail], sizeof(cq->cur));
	cq->next_tail = tail + 1 == cq->size ? 0 : tail + 1;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static void softrvt_cq_consume(struct softrvt_cq *cq)
{
	/* Release: we are done reading the slot the kernel may now reuse. */
	atomic_store_explicit(&cq->ring->tail, cq->next_tail,
			      memory_order_release);
}

static int softrvt_start_poll(struct ibv_cq_ex *ibcq,
			      struct ibv_poll_cq_attr *attr)
{
	struct softrvt_cq *cq = to_scq_ex(ibcq);
	uint32_t tail;
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	ret = EIO;
	if (cq->ring) {
		tail = atomic_load_explicit(&cq->ring->tail,
					    memory_order_relaxed);
		ret = softrvt_cq_read_next(cq, tail);
	}
	/* No ibv_end_poll() follows a failed ibv_start_poll(). */
	if (ret)
		pthread_spin_unlock(&cq->lock);
	return ret;
}

static int softrvt_next_poll(struct ibv_cq_ex *ibcq)
{
	struct softrvt_cq *cq = to_scq_ex(ibcq);

	softrvt_cq_consume(cq);
	/* Our own index: the last one we published, not the ring's word. */
	return softrvt_cq_read_next(cq, cq->next_tail);
}

static void softrvt_end_poll(struct ibv_cq_ex *ibcq)
{
	struct softrvt_cq *cq = to_scq_ex(ibcq);

	softrvt_cq_consume(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode softrvt_wc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.opcode;
}

static uint32_t softrvt_wc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.vendor_err;
}

static uint32_t softrvt_wc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.byte_len;
}

/* Also ibv_wc_read_invalidated_rkey(): the same word. */
static __be32 softrvt_wc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.ex.imm_data;
}

static uint32_t softrvt_wc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.qp_num;
}

static uint32_t softrvt_wc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.src_qp;
}

static unsigned int softrvt_wc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return softrvt_wc_flags(to_scq_ex(ibcq)->cur.wc_flags);
}

static uint32_t softrvt_wc_read_slid(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.slid;
}

static uint8_t softrvt_wc_read_sl(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.sl;
}

static uint8_t softrvt_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.dlid_path_bits;
}

/*
 * What the CQ ring holds for every completion.  No time stamps, flow tags
 * or VLANs: the kernel records none.
 */
#define SOFTRVT_WC_EX_FLAGS						\
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |			\
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |		\
	 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |			\
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/*
 * An extended CQ is the same CQ and ring as ibv_create_cq()'s; it is
 * polled either way.  Only the fields the ring holds may be asked for,
 * and no parent domain.  IBV_CREATE_CQ_ATTR_SINGLE_THREADED is a hint;
 * the poll lock stays.
 */
struct ibv_cq_ex *softrvt_create_cq_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *attr)
{
	struct usoftrvt_create_cq_ex_resp resp = {};
	struct usoftrvt_create_cq_ex cmd = {};
	struct ibv_cq_ex *cqx;
	struct softrvt_cq *cq;
	int ret;

	if (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS ||
	    attr->wc_flags & ~(uint64_t)SOFTRVT_WC_EX_FLAGS ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	     attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = softrvt_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd.ibv_cmd,
				       sizeof(cmd), &resp.ibv_resp,
				       sizeof(resp));
	if (ret)
		goto err_lock;

	ret = softrvt_cq_map(cq, resp.mmap_offset);
	if (ret)
		goto err_cmd;

	cqx = &cq->vcq.cq_ex;
	cqx->start_poll = softrvt_start_poll;
	cqx->next_poll = softrvt_next_poll;
	cqx->end_poll = softrvt_end_poll;
	cqx->read_opcode = softrvt_wc_read_opcode;
	cqx->read_vendor_err = softrvt_wc_read_vendor_err;
	cqx->read_wc_flags = softrvt_wc_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = softrvt_wc_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = softrvt_wc_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = softrvt_wc_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = softrvt_wc_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = softrvt_wc_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		cqx->read_sl = softrvt_wc_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = softrvt_wc_read_dlid_path_bits;
	return cqx;

err_cmd:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

/*
 * Map a receive ring of max_wr + 1 slots of max_sge SGEs each at
 * @offset, replacing the one mapped so far.  On error the old mapping
 * stays.
 */
static int softrvt_rq_map(struct ibv_context *context, struct softrvt_rq *rq,
			  uint64_t offset, uint32_t max_wr, uint32_t max_sge)
{
	size_t stride, len;
	void *ring;
	int ret;

	/* struct rvt_rwqe counts its SGEs in a byte. */
	if (max_wr == UINT32_MAX || max_sge > UINT8_MAX)
		return EINVAL;
	stride = sizeof(struct rvt_rwqe) + max_sge * sizeof(struct rvt_wqe_sge);
	ret = softrvt_ring_len(context, offsetof(struct rvt_rwq, wq),
			       max_wr + 1, stride, &len);
	if (ret)
		return ret;
	ring = softrvt_map_ring(context, offset, len,
				PROT_READ | PROT_WRITE);
	if (!ring)
		return errno;

	if (rq->ring)
		munmap(rq->ring, rq->ring_len);
	rq->ring = ring;
	rq->ring_len = len;
	rq->size = max_wr + 1;
	rq->max_sge = max_sge;
	rq->stride = stride;
	return 0;
}

static void softrvt_rq_unmap(struct softrvt_rq *rq)
{
	if (rq->ring)
		munmap(rq->ring, rq->ring_len);
	rq->ring = NULL;
	rq->ring_len = 0;
	rq->size = 0;
}

static struct rvt_rwqe *softrvt_rwqe(const struct softrvt_rq *rq, uint32_t n)
{
	return (struct rvt_rwqe *)((char *)rq->ring +
				   offsetof(struct rvt_rwq, wq) +
				   (size_t)n * rq->stride);
}

/*
 * Append a chain of receive WRs to a ring, with rq->lock held.  Stops at
 * the first WR that cannot be posted, as the kernel does: EINVAL for too
 * many SGEs, ENOMEM for a full ring, EIO for a corrupt or missing ring.
 * The WRs before it stay posted.
 */
static int softrvt_rq_post(struct softrvt_rq *rq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct rvt_rwq *ring = rq->ring;
	uint32_t head, tail, next;
	int ret = 0;

	if (!ring) {
		ret = EIO;
		goto out;
	}
	/*
	 * Our index, but read from the ring every time: the kernel zeroes it
	 * when a QP goes to RESET and sets it when it posts for us.
	 */
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	if (head >= rq->size) {
		ret = EIO;
		goto out;
	}

	for (; wr; wr = wr->next) {
		struct rvt_rwqe *wqe;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			ret = EINVAL;
			break;
		}
		next = head + 1 == rq->size ? 0 : head + 1;
		/* Acquire: the kernel has copied out the WQE it consumed. */
		tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (tail >= rq->size) {
			ret = EIO;
			break;
		}
		if (next == tail) {
			ret = ENOMEM;
			break;
		}

		wqe = softrvt_rwqe(rq, head);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sg_list[i].addr = wr->sg_list[i].addr;
			wqe->sg_list[i].length = wr->sg_list[i].length;
			wqe->sg_list[i].lkey = wr->sg_list[i].lkey;
		}
		head = next;
		/* Release: the WQE is visible before the index publishing it. */
		atomic_store_explicit(&ring->head, head, memory_order_release);
	}
out:
	if (ret)
		*bad_wr = wr;
	return ret;
}

struct ibv_srq *softrvt_create_srq(struct ibv_pd *pd,
				   struct ibv_srq_init_attr *attr)
{
	struct usoftrvt_create_srq_resp resp = {};
	struct usoftrvt_create_srq cmd = {};
	struct softrvt_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;

	/* attr->attr now holds what the kernel really allocated. */
	ret = softrvt_rq_map(pd->context, &srq->rq, resp.mmap_offset,
			     attr->attr.max_wr, attr->attr.max_sge);
	if (ret)
		goto err_cmd;
	return &srq->vsrq.srq;

err_cmd:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_lock:
	pthread_spin_destroy(&srq->rq.lock);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

struct ibv_xrcd *softrvt_open_xrcd(struct ibv_context *context,
				   struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int softrvt_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}

/* The number the kernel gave an XRC SRQ, which senders put in XRCETHs. */
int softrvt_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct softrvt_srq *srq = to_ssrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/*
 * libibverbs itself sends a basic SRQ with nothing but a PD to
 * ibv_create_srq(); what reaches us also names a CQ, or asks for an XRC
 * SRQ (a PD, a CQ and an XRC domain) or a tag matching one, which
 * softrvt does not have.  A basic SRQ has no use for the CQ: it is the
 * same SRQ as ibv_create_srq()'s.  An XRC SRQ's ring is mapped and
 * posted to as a basic one's.
 */
struct ibv_srq *softrvt_create_srq_ex(struct ibv_context *context,
				      struct ibv_srq_init_attr_ex *attr)
{
	struct usoftrvt_create_xsrq_resp resp = {};
	struct usoftrvt_create_xsrq cmd = {};
	enum ibv_srq_type type = IBV_SRQT_BASIC;
	struct softrvt_srq *srq;
	int ret;

	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if (attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD) ||
	    (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (type == IBV_SRQT_XRC &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd))) {
		errno = EINVAL;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;

	ret = softrvt_rq_map(context, &srq->rq, resp.mmap_offset,
			     attr->attr.max_wr, attr->attr.max_sge);
	if (ret)
		goto err_cmd;
	return &srq->vsrq.srq;

err_cmd:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_lock:
	pthread_spin_destroy(&srq->rq.lock);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * IBV_SRQ_MAX_WR makes the kernel move the posted WQEs to a new ring of
 * max_wr + 1 slots and write its mmap offset to the address we pass.
 * The ring lock keeps posters off both rings until we have switched.
 */
int softrvt_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		       int attr_mask)
{
	struct softrvt_srq *srq = to_ssrq(ibsrq);
	struct usoftrvt_modify_srq cmd = {};
	uint64_t offset = 0;
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd));

	cmd.offset_addr = (uintptr_t)&offset;
	pthread_spin_lock(&srq->rq.lock);
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (!ret) {
		ret = softrvt_rq_map(ibsrq->context, &srq->rq, offset,
				     attr->max_wr, srq->rq.max_sge);
		/* The old ring is dead; without the new one we cannot post. */
		if (ret)
			softrvt_rq_unmap(&srq->rq);
	}
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}

int softrvt_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int softrvt_destroy_srq(struct ibv_srq *ibsrq)
{
	struct softrvt_srq *srq = to_ssrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	softrvt_rq_unmap(&srq->rq);
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}

int softrvt_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct softrvt_srq *srq = to_ssrq(ibsrq);
	int ret;

	pthread_spin_lock(&srq->rq.lock);
	ret = softrvt_rq_post(&srq->rq, wr, bad_wr);
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}

static struct softrvt_qp *softrvt_qp_alloc(void)
{
	struct softrvt_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;
	ret = pthread_mutex_init(&qp->wr_lock, NULL);
	if (ret)
		goto err_spin;
	ret = pthread_mutex_init(&qp->xrc_lock, NULL);
	if (ret)
		goto err_wr;
	return qp;

err_wr:
	pthread_mutex_destroy(&qp->wr_lock);
err_spin:
	pthread_spin_destroy(&qp->rq.lock);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

static void softrvt_qp_free(struct softrvt_qp *qp)
{
	softrvt_qp_free_batch(qp);
	pthread_mutex_destroy(&qp->xrc_lock);
	pthread_mutex_destroy(&qp->wr_lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
}

/*
 * Map the state page and the receive ring of a QP the kernel just made,
 * and keep what it allocated (@cap, filled in by the command).
 */
static int softrvt_qp_map(struct ibv_context *context, struct softrvt_qp *qp,
			  const struct softrvt_create_qp_resp *resp,
			  const struct ibv_qp_cap *cap, bool has_srq)
{
	int ret;

	qp->state_len = to_sdev(context->device)->page_size;
	qp->state = softrvt_map_ring(context, resp->state_mmap_offset,
				     qp->state_len, PROT_READ);
	if (!qp->state)
		return errno;
	if (!has_srq) {
		ret = softrvt_rq_map(context, &qp->rq, resp->rq_mmap_offset,
				     cap->max_recv_wr, cap->max_recv_sge);
		if (ret) {
			munmap(qp->state, qp->state_len);
			return ret;
		}
	}
	qp->max_send_wr = cap->max_send_wr;
	qp->max_send_sge = cap->max_send_sge;
	qp->max_inline_data = cap->max_inline_data;
	return 0;
}

struct ibv_qp *softrvt_create_qp(struct ibv_pd *pd,
				 struct ibv_qp_init_attr *attr)
{
	struct usoftrvt_create_qp_resp resp = {};
	struct usoftrvt_create_qp cmd = {};
	struct softrvt_qp *qp;
	int ret;

	qp = softrvt_qp_alloc();
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	/* attr->cap now holds what the kernel really allocated. */
	ret = softrvt_qp_map(pd->context, qp, &resp.drv_payload, &attr->cap,
			     attr->srq || attr->qp_type == IBV_QPT_XRC_SEND);
	if (ret)
		goto err_cmd;
	return &qp->vqp.qp;

err_cmd:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	softrvt_qp_free(qp);
	errno = ret;
	return NULL;
}

/*
 * An extended QP: a PD and, for the ibv_wr_*() API, the operations in
 * send_ops_flags, which must all be ones the QP type can post.  No
 * creation flags, RSS, TSO or source QPN.
 *
 * XRC: an XRC_SEND QP has a state page and no receive ring.  An
 * XRC_RECV QP is the kernel's own, shared through its XRC domain: ib_core
 * gives the driver no udata for it, so there is nothing to map, and
 * nothing to post to it either.
 */
struct ibv_qp *softrvt_create_qp_ex(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr)
{
	struct usoftrvt_create_qp_ex_resp resp = {};
	struct usoftrvt_create_qp_ex cmd = {};
	struct softrvt_qp *qp;
	int ret;

	bool xrc_recv = attr->qp_type == IBV_QPT_XRC_RECV;

	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS &&
	     attr->create_flags) ||
	    (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS &&
	     (xrc_recv ||
	      attr->send_ops_flags & ~softrvt_send_ops(attr->qp_type)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	qp = softrvt_qp_alloc();
	if (!qp)
		return NULL;

	ret = softrvt_cmd_create_qp_ex2(context, &qp->vqp, attr, &cmd.ibv_cmd,
					sizeof(cmd), &resp.ibv_resp,
					sizeof(resp));
	if (ret)
		goto err_free;
	if (xrc_recv)
		return &qp->vqp.qp;

	ret = softrvt_qp_map(context, qp, &resp.drv_payload, &attr->cap,
			     attr->srq || attr->qp_type == IBV_QPT_XRC_SEND);
	if (ret)
		goto err_cmd;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		softrvt_qp_set_wr_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_cmd:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	softrvt_qp_free(qp);
	errno = ret;
	return NULL;
}

/* Another process's XRC_RECV QP, of an XRC domain we have opened. */
struct ibv_qp *softrvt_open_qp(struct ibv_context *context,
			       struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct softrvt_qp *qp;
	int ret;

	qp = softrvt_qp_alloc();
	if (!qp)
		return NULL;
	ret = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		softrvt_qp_free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

int softrvt_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/*
 * Nothing of the ring is kept here, so a move to RESET, which makes the
 * kernel empty the receive ring (both indices back to 0), needs nothing
 * from us.
 */
/*
 * Drop the completions of QP @qpn from a CQ ring, keeping the order of the
 * others.  From the newest back to the oldest, the others move up towards
 * the head, and the tail follows them: the kernel writes only at the head
 * and beyond, and reads our tail only to see whether the ring is full.
 */
static void softrvt_cq_clean(struct softrvt_cq *cq, uint32_t qpn)
{
	uint32_t head, tail, from, to;
	struct rvt_cq_wc *ring;

	pthread_spin_lock(&cq->lock);
	ring = cq->ring;
	if (!ring)
		goto out;
	tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	if (head >= cq->size || tail >= cq->size)
		goto out;
	for (from = head, to = head; from != tail;) {
		from = from ? from - 1 : cq->size - 1;
		if (ring->uqueue[from].qp_num == qpn)
			continue;
		to = to ? to - 1 : cq->size - 1;
		if (to != from)
			ring->uqueue[to] = ring->uqueue[from];
	}
	if (to != tail)
		atomic_store_explicit(&ring->tail, to, memory_order_release);
out:
	pthread_spin_unlock(&cq->lock);
}

/*
 * A QP moved to RESET leaves no completion behind in its CQs, as libmlx4
 * and libmlx5 do it: a consumer that resets a QP after an error and
 * reuses it does not poll the flushes of its former life.
 */
int softrvt_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !(attr_mask & IBV_QP_STATE) ||
	    attr->qp_state != IBV_QPS_RESET)
		return ret;
	if (ibqp->recv_cq)
		softrvt_cq_clean(to_scq(ibqp->recv_cq), ibqp->qp_num);
	if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
		softrvt_cq_clean(to_scq(ibqp->send_cq), ibqp->qp_num);
	return 0;
}

int softrvt_destroy_qp(struct ibv_qp *ibqp)
{
	struct softrvt_qp *qp = to_sqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	softrvt_rq_unmap(&qp->rq);
	if (qp->state)
		munmap(qp->state, qp->state_len);
	softrvt_qp_free(qp);
	return 0;
}

/*
 * WRs the kernel's post_send command does not carry, and WRs no command
 * may carry: a negative num_sge would be copied as a length.
 */
static bool softrvt_wr_is_own(const struct ibv_send_wr *wr)
{
	return wr->opcode == IBV_WR_BIND_MW ||
	       wr->opcode == IBV_WR_LOCAL_INV || softrvt_wr_is_placement(wr) ||
	       wr->num_sge < 0;
}

/*
 * Post a BIND_MW or LOCAL_INV, which the kernel's post_send command does
 * not carry, with softrvt's own method; @rkey is the window's new key, or
 * the key to invalidate.
 */
static int softrvt_post_mw_wr(struct ibv_qp *ibqp,
			      const struct ibv_send_wr *wr, uint32_t rkey)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_QP,
			       SOFTRVT_METHOD_QP_POST_MW_WR, 2);
	struct softrvt_mw_wr mw_wr = {
		.wr_id = wr->wr_id,
		.send_flags = wr->send_flags,
		.rkey = rkey,
	};

	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *info = &wr->bind_mw.bind_info;

		mw_wr.opcode = IB_UVERBS_WR_BIND_MW;
		mw_wr.mr_lkey = info->mr ? info->mr->lkey : 0;
		mw_wr.addr = info->addr;
		mw_wr.length = info->length;
		mw_wr.access = info->mw_access_flags;
	} else {
		mw_wr.opcode = IB_UVERBS_WR_LOCAL_INV;
	}
	fill_attr_in_obj(cmd, SOFTRVT_ATTR_POST_MW_WR_QP_HANDLE, ibqp->handle);
	fill_attr_in_ptr(cmd, SOFTRVT_ATTR_POST_MW_WR_WR, &mw_wr);
	return execute_ioctl(ibqp->context, cmd);
}

/*
 * Post a FLUSH or ATOMIC_WRITE of an ibv_wr_*() batch (wr.c), which alone
 * builds them: struct ibv_send_wr has no fields for them.
 */
static int softrvt_post_placement_wr(struct ibv_qp *ibqp,
				     const struct ibv_send_wr *wr)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_QP,
			       SOFTRVT_METHOD_QP_POST_PLACEMENT_WR, 2);
	const struct softrvt_wr *sw = container_of(wr, struct softrvt_wr, wr);
	struct softrvt_placement_wr pwr = sw->placement;

	pwr.wr_id = wr->wr_id;
	pwr.send_flags = wr->send_flags;
	fill_attr_in_obj(cmd, SOFTRVT_ATTR_POST_PLACEMENT_WR_QP_HANDLE,
			 ibqp->handle);
	fill_attr_in_ptr(cmd, SOFTRVT_ATTR_POST_PLACEMENT_WR_WR, &pwr);
	return execute_ioctl(ibqp->context, cmd);
}

/* Bytes of the largest command softrvt_cmd_post_send() builds itself. */
#define SOFTRVT_POST_CMD_MAX	4096

/* One WR of @qp in the kernel's post_send command's form. */
static void softrvt_uverbs_wr(const struct ibv_qp *qp, const struct ibv_send_wr *wr,
			      struct ib_uverbs_send_wr *n)
{
	memset(n, 0, sizeof(*n));
	n->wr_id = wr->wr_id;
	n->num_sge = wr->num_sge;
	n->opcode = wr->opcode;
	n->send_flags = wr->send_flags;
	n->ex.imm_data = wr->imm_data;
	if (qp->qp_type == IBV_QPT_UD) {
		n->wr.ud.ah = wr->wr.ud.ah->handle;
		n->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		n->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		n->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		n->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		n->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		n->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		n->wr.atomic.swap = wr->wr.atomic.swap;
		n->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	default:
		break;
	}
}

/*
 * The kernel's post_send command for @wr's list, written to the command
 * fd as it is, the way rxe's provider rings its doorbell.  libibverbs'
 * ibv_cmd_post_send() builds the same command but, on a kernel with
 * UVERBS_METHOD_INVOKE_WRITE, wraps it in an ioctl's attributes: twice
 * the user instructions of the rest of a post (counted with the plugin
 * of make bench).  A list too long for the stack buffer goes to
 * ibv_cmd_post_send(), and so does every post of a process the kernel
 * no longer lets write() (it changed credentials since it opened the
 * device, as one that drops root does): the ioctl has no such check.
 * The kernel refuses that write() before it looks at the command.
 */
static int softrvt_cmd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr)
{
	struct softrvt_context *ctx = to_sctx(qp->context);
	uint64_t buf[SOFTRVT_POST_CMD_MAX / sizeof(uint64_t)];
	struct ibv_post_send *cmd = (struct ibv_post_send *)buf;
	struct ib_uverbs_post_send_resp resp = { .bad_wr = 0 };
	struct ib_uverbs_send_wr *n = cmd->send_wr;
	size_t wrs = 0, sges = 0, size = sizeof(*cmd), i;
	struct ibv_send_wr *w;
	struct ibv_sge *s;
	int ret = 0;

	if (atomic_load_explicit(&ctx->no_write, memory_order_relaxed))
		return ibv_cmd_post_send(qp, wr, bad_wr);
	/* No num_sge here is negative (softrvt_wr_is_own()). */
	for (w = wr; w; w = w->next) {
		wrs++;
		sges += w->num_sge;
		size = sizeof(*cmd) + wrs * sizeof(*n) + sges * sizeof(*s);
		if (size > sizeof(buf))
			return ibv_cmd_post_send(qp, wr, bad_wr);
	}

	cmd->hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd->hdr.in_words = size / 4;
	cmd->hdr.out_words = sizeof(resp) / 4;
	cmd->response = (uintptr_t)&resp;
	cmd->qp_handle = qp->handle;
	cmd->wr_count = wrs;
	cmd->sge_count = sges;
	cmd->wqe_size = sizeof(*n);
	s = (struct ibv_sge *)(n + wrs);
	for (w = wr; w; w = w->next, n++) {
		softrvt_uverbs_wr(qp, w, n);
		memcpy(s, w->sg_list, w->num_sge * sizeof(*s));
		s += w->num_sge;
	}
	if (write(qp->context->cmd_fd, cmd, size) != (ssize_t)size) {
		ret = errno;
		if (ret == EACCES) {
			atomic_store_explicit(&ctx->no_write, true, memory_order_relaxed);
			return ibv_cmd_post_send(qp, wr, bad_wr);
		}
	}
	/* The kernel numbers the WR that failed from 1. */
	if (resp.bad_wr && resp.bad_wr <= wrs) {
		for (w = wr, i = 1; i < resp.bad_wr; i++)
			w = w->next;
		*bad_wr = w;
	} else if (ret) {
		*bad_wr = wr;
	}
	return ret;
}

/*
 * The kernel takes most WRs with its post_send command, in one call for
 * the list; BIND_MW, LOCAL_INV and, from a batch (@batch), FLUSH and
 * ATOMIC_WRITE go one by one with softrvt's methods, and a WR with a
 * negative num_sge fails there with EINVAL.  A list holding both
 * kinds is posted a WR at a time, in order, so that the send queue holds
 * them as the list has them; the caller's list is not touched.
 */
static int softrvt_post_send_list(struct ibv_qp *ibqp,
				  struct ibv_send_wr *wr,
				  struct ibv_send_wr **bad_wr, bool batch)
{
	struct ibv_send_wr *w, one, *bad;
	int ret;

	for (w = wr; w && !softrvt_wr_is_own(w); w = w->next)
		;
	if (!w)
		return softrvt_cmd_post_send(ibqp, wr, bad_wr);

	for (w = wr; w; w = w->next) {
		if (w->opcode == IBV_WR_BIND_MW) {
			ret = softrvt_post_mw_wr(ibqp, w, w->bind_mw.rkey);
		} else if (w->opcode == IBV_WR_LOCAL_INV) {
			ret = softrvt_post_mw_wr(ibqp, w, w->invalidate_rkey);
		} else if (softrvt_wr_is_placement(w)) {
			ret = batch ? softrvt_post_placement_wr(ibqp, w) :
				      EINVAL;
		} else if (w->num_sge < 0) {
			ret = EINVAL;
		} else {
			one = *w;
			one.next = NULL;
			ret = softrvt_cmd_post_send(ibqp, &one, &bad);
		}
		if (ret) {
			*bad_wr = w;
			return ret;
		}
	}
	return 0;
}

/* Have the kernel put @srqn on the WRs an XRC_SEND QP takes from now. */
static int softrvt_set_xrc_srqn(struct ibv_qp *ibqp, uint32_t srqn)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_QP,
			       SOFTRVT_METHOD_QP_SET_XRC_SRQN, 2);

	fill_attr_in_obj(cmd, SOFTRVT_ATTR_SET_XRC_SRQN_QP_HANDLE,
			 ibqp->handle);
	fill_attr_in_uint32(cmd, SOFTRVT_ATTR_SET_XRC_SRQN_SRQN, srqn);
	return execute_ioctl(ibqp->context, cmd);
}

/*
 * An XRC_SEND QP: each WR names its SRQ in qp_type.xrc.remote_srqn,
 * which the kernel's post_send does not carry.  The SRQ is set when it
 * changes; the rest of the list, if it is all for one SRQ, is posted at
 * once, else WR by WR.
 */
static int softrvt_post_xrc(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad_wr)
{
	struct softrvt_qp *qp = to_sqp(ibqp);
	struct ibv_send_wr *w, *last, one, *bad;
	int ret = 0;

	pthread_mutex_lock(&qp->xrc_lock);
	for (w = wr; w; w = w->next) {
		uint32_t srqn = w->qp_type.xrc.remote_srqn;

		if (!qp->xrc_srqn_set || qp->xrc_srqn != srqn) {
			ret = softrvt_set_xrc_srqn(ibqp, srqn);
			if (ret) {
				*bad_wr = w;
				break;
			}
			qp->xrc_srqn = srqn;
			qp->xrc_srqn_set = true;
		}
		for (last = w; last->next &&
		     last->next->qp_type.xrc.remote_srqn == srqn;
		     last = last->next)
			;
		if (!last->next) {
			ret = softrvt_post_send_list(ibqp, w, bad_wr, false);
			break;
		}
		one = *w;
		one.next = NULL;
		ret = softrvt_post_send_list(ibqp, &one, &bad, false);
		if (ret) {
			*bad_wr = w;
			break;
		}
	}
	pthread_mutex_unlock(&qp->xrc_lock);
	return ret;
}

int softrvt_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	if (ibqp->qp_type == IBV_QPT_XRC_SEND)
		return softrvt_post_xrc(ibqp, wr, bad_wr);
	return softrvt_post_send_list(ibqp, wr, bad_wr, false);
}

/* As softrvt_post_send(), for the list of an ibv_wr_*() batch (wr.c). */
int softrvt_post_batch(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr)
{
	if (ibqp->qp_type == IBV_QPT_XRC_SEND)
		return softrvt_post_xrc(ibqp, wr, bad_wr);
	return softrvt_post_send_list(ibqp, wr, bad_wr, true);
}

struct ibv_mw *softrvt_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;

	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int softrvt_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * ibv_bind_mw() of a type 1 window (libibverbs checked the type) is a
 * BIND_MW WR with the window's next key.  The key is the window's from
 * now on, as the caller expects; should the WR complete with an error, the
 * caller puts the old one back, as with every provider.
 */
int softrvt_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	int ret;

	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	ret = softrvt_post_mw_wr(ibqp, &wr, wr.bind_mw.rkey);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

static uint32_t softrvt_qp_state(const struct softrvt_qp *qp)
{
	return __atomic_load_n(&qp->state->state, __ATOMIC_ACQUIRE);
}

/*
 * Like the kernel's post_recv: a QP on an SRQ or in RESET takes no
 * receives, and in ERR receives are flushed at once, as the IB spec
 * requires.  The kernel flushes the ring when it moves the QP to ERR, so
 * a WQE written after that flush would never complete: having written
 * ours, we read the kernel's state page, behind a full barrier that pairs
 * with the kernel's between publishing ERR and flushing, and if it says
 * ERR we have the kernel flush the ring again (an empty post).
 */
int softrvt_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct softrvt_qp *qp = to_sqp(ibqp);
	struct ibv_recv_wr *none;
	int ret;

	if (ibqp->srq || ibqp->qp_type == IBV_QPT_XRC_SEND ||
	    ibqp->qp_type == IBV_QPT_XRC_RECV ||
	    softrvt_qp_state(qp) == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&qp->rq.lock);
	ret = softrvt_rq_post(&qp->rq, wr, bad_wr);
	pthread_spin_unlock(&qp->rq.lock);

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (softrvt_qp_state(qp) == IBV_QPS_ERR &&
	    ibv_cmd_post_recv(ibqp, NULL, &none) && !ret)
		ret = EIO;
	return ret;
}

/* softrvt has no address handles yet: the kernel answers for itself. */
struct ibv_ah *softrvt_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp = {};
	struct ibv_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	return ah;
}

int softrvt_destroy_ah(struct ibv_ah *ah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;
	free(ah);
	return 0;
}
