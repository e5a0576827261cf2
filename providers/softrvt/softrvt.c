/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsoftrvt: device matching and user contexts.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "softrvt.h"

/*
 * softrvt is an out-of-tree driver: its ib_device has driver_id
 * RDMA_DRIVER_UNKNOWN, which libibverbs never matches by id, and no
 * parent device, so it has no modalias either.  Its name is the user's
 * choice ("rdma link add roce0 type softrvt netdev eth0"), and a name
 * pattern would also claim another driver's device given a name like
 * ours.  What marks the device is its hca_type file, which the module
 * fills with "softrvt".  With an empty match table, libibverbs asks
 * match_device about each device its driver_id did not give to another
 * provider, and the answer rests on that file alone.  (rxe's provider
 * still claims any device named "rxe..." by name, if tried first.)
 *
 * The table must be there, empty: libibverbs 56.1 walks every
 * provider's table, unchecked, for a device whose driver_id is known.
 */
static const struct verbs_match_ent softrvt_match_table[] = {
	{},
};

static bool softrvt_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	char hca_type[sizeof("softrvt")];

	/* Fails for a missing file and for any longer content. */
	if (ibv_read_ibdev_sysfs_file(hca_type, sizeof(hca_type), sysfs_dev,
				      "hca_type") < 0)
		return false;
	return strcmp(hca_type, "softrvt") == 0;
}

static void softrvt_free_context(struct ibv_context *ibctx);

/*
 * libibverbs reads completion and async events from their fds itself; the
 * cq_event and async_event hooks are left to their defaults, which do
 * nothing: softrvt keeps no arming state here, and the QP state the
 * provider needs is the kernel's own, in the QP's state page.
 */
static const struct verbs_context_ops softrvt_ctx_ops = {
	.free_context = softrvt_free_context,
	.query_device_ex = softrvt_query_device,
	.query_port = softrvt_query_port,

	.alloc_pd = softrvt_alloc_pd,
	.dealloc_pd = softrvt_dealloc_pd,
	.import_pd = softrvt_import_pd,
	.unimport_pd = softrvt_unimport_pd,
	.import_mr = softrvt_import_mr,
	.unimport_mr = softrvt_unimport_mr,
	.reg_mr = softrvt_reg_mr,
	.rereg_mr = softrvt_rereg_mr,
	.dereg_mr = softrvt_dereg_mr,
	.alloc_mw = softrvt_alloc_mw,
	.dealloc_mw = softrvt_dealloc_mw,
	.bind_mw = softrvt_bind_mw,

	.create_cq = softrvt_create_cq,
	.create_cq_ex = softrvt_create_cq_ex,
	.poll_cq = softrvt_poll_cq,
	.req_notify_cq = ibv_cmd_req_notify_cq,
	.resize_cq = softrvt_resize_cq,
	.destroy_cq = softrvt_destroy_cq,

	.create_srq = softrvt_create_srq,
	.create_srq_ex = softrvt_create_srq_ex,
	.get_srq_num = softrvt_get_srq_num,
	.open_xrcd = softrvt_open_xrcd,
	.close_xrcd = softrvt_close_xrcd,
	.modify_srq = softrvt_modify_srq,
	.query_srq = softrvt_query_srq,
	.destroy_srq = softrvt_destroy_srq,
	.post_srq_recv = softrvt_post_srq_recv,

	.create_qp = softrvt_create_qp,
	.create_qp_ex = softrvt_create_qp_ex,
	.open_qp = softrvt_open_qp,
	.query_qp = softrvt_query_qp,
	.modify_qp = softrvt_modify_qp,
	.destroy_qp = softrvt_destroy_qp,
	.post_send = softrvt_post_send,
	.post_recv = softrvt_post_recv,

	.create_ah = softrvt_create_ah,
	.destroy_ah = softrvt_destroy_ah,
	/* The kernel keeps the groups: nothing of them in userspace. */
	.attach_mcast = ibv_cmd_attach_mcast,
	.detach_mcast = ibv_cmd_detach_mcast,
};

/* A new or imported context: its ops once the kernel took it, else undone. */
static struct verbs_context *softrvt_context_done(struct softrvt_context *ctx,
						  int ret)
{
	if (ret) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	verbs_set_ops(&ctx->ibv_ctx, &softrvt_ctx_ops);
	return &ctx->ibv_ctx;
}

static struct verbs_context *softrvt_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct softrvt_context *ctx;
	struct ibv_get_context cmd;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = softrvt_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp,
				      sizeof(resp));
	return softrvt_context_done(ctx, ret);
}

/*
 * Another process's context, from its command fd (ibv_import_device()):
 * softrvt keeps nothing per context beyond what ib_core does, so there
 * is nothing to fetch but the proof that the fd has a ucontext.
 */
static struct verbs_context *softrvt_import_context(struct ibv_device *ibdev,
						    int cmd_fd)
{
	struct softrvt_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_query_context(&ctx->ibv_ctx.context, NULL);
	return softrvt_context_done(ctx, ret);
}

static void softrvt_free_context(struct ibv_context *ibctx)
{
	struct softrvt_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *
softrvt_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct softrvt_device *dev;
	long page_size = sysconf(_SC_PAGESIZE);

	if (page_size <= 0)
		return NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->page_size = page_size;
	return &dev->ibv_dev;
}

static void softrvt_uninit_device(struct verbs_device *verbs_device)
{
	free(to_sdev(&verbs_device->device));
}

static const struct verbs_device_ops softrvt_dev_ops = {
	.name = "softrvt",
	.match_min_abi_version = SOFTRVT_UVERBS_ABI_VERSION,
	.match_max_abi_version = SOFTRVT_UVERBS_ABI_VERSION,
	.match_table = softrvt_match_table,
	.match_device = softrvt_match_device,
	.alloc_device = softrvt_device_alloc,
	.uninit_device = softrvt_uninit_device,
	.alloc_context = softrvt_alloc_context,
	.import_context = softrvt_import_context,
};
PROVIDER_DRIVER(softrvt, softrvt_dev_ops);
