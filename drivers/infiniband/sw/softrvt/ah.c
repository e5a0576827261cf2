// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles.  ib_core resolves a RoCE AH's MAC and holds its source
 * GID attribute for the AH's life; softrvt keeps a copy of the attributes.
 */

#include <rdma/ib_cache.h>

#include "softrvt.h"

/**
 * softrvt_av_init - the RoCEv2 path that AH attributes describe
 * @rdi: the device
 * @attr: AH attributes with a GRH
 * @sgid_attr: the source GID's attribute, held by the caller
 * @av: filled in
 *
 * Return: whether the destination GID is one of this device's, so that
 * the same-device path applies.
 */
bool softrvt_av_init(struct softrvt_dev_info *rdi, const struct rdma_ah_attr *attr,
		     const struct ib_gid_attr *sgid_attr, struct softrvt_av *av)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	const struct ib_gid_attr *found;

	av->dgid = grh->dgid;
	av->sgid = sgid_attr ? sgid_attr->gid : grh->dgid;
	av->flow_label = grh->flow_label;
	av->traffic_class = grh->traffic_class;
	av->hop_limit = grh->hop_limit;
	found = rdma_find_gid_by_port(&rdi->ibdev, &grh->dgid,
				      IB_GID_TYPE_ROCE_UDP_ENCAP, 1, NULL);
	if (IS_ERR(found))
		return false;
	rdma_put_gid_attr(found);
	return true;
}

/**
 * softrvt_create_ah - create an address handle (ib_device_ops.create_ah)
 * @ibah: the AH allocated by ib_core
 * @init: the attributes
 * @udata: unused
 *
 * Return: 0, -EINVAL for a bad port or a missing GRH, -ENOMEM past max_ah.
 */
int softrvt_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		      struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibah->device);
	struct softrvt_ah *ah = softrvt_to_ah(ibah);
	struct rdma_ah_attr *attr = init->ah_attr;

	if (rdma_ah_get_port_num(attr) != 1 ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	if (atomic_inc_return(&rdi->n_ahs) > SOFTRVT_MAX_AH) {
		atomic_dec(&rdi->n_ahs);
		return -ENOMEM;
	}
	ah->attr = *attr;
	ah->local = softrvt_av_init(rdi, attr, ibah->sgid_attr, &ah->av);
	return 0;
}

/**
 * softrvt_query_ah - report an AH's attributes (ib_device_ops.query_ah)
 * @ibah: the AH
 * @attr: filled with the attributes it was created with
 *
 * Return: 0.
 */
int softrvt_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = softrvt_to_ah(ibah)->attr;
	return 0;
}

/**
 * softrvt_destroy_ah - free an address handle (ib_device_ops.destroy_ah)
 * @ibah: the AH; WQEs posted with it keep their own copy of what they need
 * @flags: RDMA_DESTROY_AH_SLEEPABLE or 0
 *
 * Return: 0.
 */
int softrvt_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&softrvt_to_dev(ibah->device)->n_ahs);
	return 0;
}
