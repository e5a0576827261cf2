// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles.  ib_core resolves a RoCE AH's MAC and holds its source
 * GID attribute for the AH's life; softrvt keeps a copy of the attributes.
 */

#include "softrvt.h"

/**
 * rvt_create_ah - create an address handle (ib_device_ops.create_ah)
 * @ibah: the AH allocated by ib_core
 * @init: the attributes
 * @udata: unused
 *
 * Return: 0, -EINVAL for a bad port or a missing GRH, -ENOMEM past max_ah.
 */
int rvt_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata)
{
	struct rvt_dev_info *rdi = ib_to_rvt(ibah->device);
	struct rvt_ah *ah = ibah_to_rvtah(ibah);
	struct rdma_ah_attr *attr = init->ah_attr;

	if (rdma_ah_get_port_num(attr) != 1 ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	if (atomic_inc_return(&rdi->n_ahs) > RVT_MAX_AH) {
		atomic_dec(&rdi->n_ahs);
		return -ENOMEM;
	}
	ah->attr = *attr;
	return 0;
}

/**
 * rvt_query_ah - report an AH's attributes (ib_device_ops.query_ah)
 * @ibah: the AH
 * @attr: filled with the attributes it was created with
 *
 * Return: 0.
 */
int rvt_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = ibah_to_rvtah(ibah)->attr;
	return 0;
}

/**
 * rvt_destroy_ah - free an address handle (ib_device_ops.destroy_ah)
 * @ibah: the AH; WQEs posted with it keep their own copy of what they need
 * @flags: RDMA_DESTROY_AH_SLEEPABLE or 0
 *
 * Return: 0.
 */
int rvt_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&ib_to_rvt(ibah->device)->n_ahs);
	return 0;
}
