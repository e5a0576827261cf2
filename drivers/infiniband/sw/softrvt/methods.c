// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The driver's own uverbs methods on QPs that post send WRs which
 * ib_uverbs' post_send does not carry: memory window WRs (BIND_MW and
 * LOCAL_INV) and the placement WRs (FLUSH and ATOMIC_WRITE).  They sit
 * above the send queue (qp.c), like post_send itself, so that the memory
 * layer (mr.c, mw.c, placement.c) calls nothing above it.
 */

#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME softrvt
#include <rdma/uverbs_named_ioctl.h>

#include "softrvt.h"

/*
 * SOFTRVT_METHOD_QP_POST_MW_WR: post one IB_WR_BIND_MW or IB_WR_LOCAL_INV
 * to a user QP, in send queue order with its other WRs.  Every key and
 * right is checked when the WR runs, against the QP's PD.
 */
static int UVERBS_HANDLER(SOFTRVT_METHOD_QP_POST_MW_WR)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ibqp =
		uverbs_attr_get_obj(attrs, SOFTRVT_ATTR_POST_MW_WR_QP_HANDLE);
	struct softrvt_mw_wr uwr;
	struct softrvt_bind_wr bwr = {};
	int ret;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	ret = uverbs_copy_from(&uwr, attrs, SOFTRVT_ATTR_POST_MW_WR_WR);
	if (ret)
		return ret;
	if (uwr.reserved)
		return -EINVAL;
	bwr.wr.wr_id = uwr.wr_id;
	bwr.wr.send_flags = uwr.send_flags;
	switch (uwr.opcode) {
	case IB_UVERBS_WR_BIND_MW:
		bwr.wr.opcode = IB_WR_BIND_MW;
		bwr.rkey = uwr.rkey;
		bwr.mr_lkey = uwr.mr_lkey;
		bwr.addr = uwr.addr;
		bwr.length = uwr.length;
		bwr.access = uwr.access;
		break;
	case IB_UVERBS_WR_LOCAL_INV:
		bwr.wr.opcode = IB_WR_LOCAL_INV;
		bwr.wr.ex.invalidate_rkey = uwr.rkey;
		break;
	default:
		return -EINVAL;
	}
	return softrvt_post_local_wr(ibqp, &bwr.wr);
}

DECLARE_UVERBS_NAMED_METHOD(SOFTRVT_METHOD_QP_POST_MW_WR,
			    UVERBS_ATTR_IDR(SOFTRVT_ATTR_POST_MW_WR_QP_HANDLE,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(SOFTRVT_ATTR_POST_MW_WR_WR,
					       UVERBS_ATTR_TYPE(struct softrvt_mw_wr),
					       UA_MANDATORY));

/**
 * softrvt_post_placement_wr - post one IB_WR_FLUSH or IB_WR_ATOMIC_WRITE
 * @ibqp: the QP, RC
 * @wr: the wr of a struct softrvt_placement_send_wr, alone
 *
 * As softrvt_post_send(), for the placement WRs of user QPs (see
 * SOFTRVT_METHOD_QP_POST_PLACEMENT_WR below).  Process context.
 *
 * Return: 0 or a negative errno, as softrvt_post_send().
 */
int softrvt_post_placement_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr)
{
	const struct softrvt_placement_send_wr *pwr =
		container_of(wr, struct softrvt_placement_send_wr, wr);

	if (wr->next || !softrvt_opcode_is_placement(wr->opcode))
		return -EINVAL;
	if (wr->opcode == IB_WR_FLUSH &&
	    !softrvt_flush_valid(pwr->flush_type, pwr->flush_level))
		return -EINVAL;
	return softrvt_post_own_wr(ibqp, wr);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_post_placement_wr);

/*
 * SOFTRVT_METHOD_QP_POST_PLACEMENT_WR: post one FLUSH or ATOMIC_WRITE to
 * a user QP, in send queue order with its other WRs.  The key, range and
 * rights are the responder's to check.
 */
static int UVERBS_HANDLER(SOFTRVT_METHOD_QP_POST_PLACEMENT_WR)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ibqp = uverbs_attr_get_obj(attrs,
						 SOFTRVT_ATTR_POST_PLACEMENT_WR_QP_HANDLE);
	struct softrvt_placement_send_wr pwr = {};
	struct softrvt_placement_wr uwr;
	int ret;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	/* Not advertised where ib_core lacks them (compat.h). */
	if (!SOFTRVT_PLACEMENT)
		return -EOPNOTSUPP;
	ret = uverbs_copy_from(&uwr, attrs, SOFTRVT_ATTR_POST_PLACEMENT_WR_WR);
	if (ret)
		return ret;
	if (memchr_inv(uwr.reserved, 0, sizeof(uwr.reserved)))
		return -EINVAL;
	switch (uwr.opcode) {
	case IB_UVERBS_WR_FLUSH:
		pwr.wr.opcode = IB_WR_FLUSH;
		pwr.length = uwr.length;
		pwr.flush_type = uwr.flush_type;
		pwr.flush_level = uwr.flush_level;
		break;
	case IB_UVERBS_WR_ATOMIC_WRITE:
		if (uwr.length || uwr.flush_type || uwr.flush_level)
			return -EINVAL;
		pwr.wr.opcode = IB_WR_ATOMIC_WRITE;
		pwr.value = uwr.value;
		break;
	default:
		return -EINVAL;
	}
	pwr.wr.wr_id = uwr.wr_id;
	pwr.wr.send_flags = uwr.send_flags;
	pwr.remote_addr = uwr.remote_addr;
	pwr.rkey = uwr.rkey;
	return softrvt_post_placement_wr(ibqp, &pwr.wr);
}

DECLARE_UVERBS_NAMED_METHOD(SOFTRVT_METHOD_QP_POST_PLACEMENT_WR,
			    UVERBS_ATTR_IDR(SOFTRVT_ATTR_POST_PLACEMENT_WR_QP_HANDLE,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(SOFTRVT_ATTR_POST_PLACEMENT_WR_WR,
					       UVERBS_ATTR_TYPE(struct softrvt_placement_wr),
					       UA_MANDATORY));

ADD_UVERBS_METHODS(softrvt_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(SOFTRVT_METHOD_QP_POST_MW_WR),
		   &UVERBS_METHOD(SOFTRVT_METHOD_QP_POST_PLACEMENT_WR));

/* The driver's own uverbs methods, in ib_device.driver_def. */
const struct uapi_definition softrvt_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &softrvt_qp_methods),
	UAPI_DEF_CHAIN(softrvt_xrc_uapi_defs),
	{},
};
