// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains.  A PD carries no state of its own here: MRs, QPs and
 * AHs point at it, and ib_core keeps it alive while they exist.
 */

#include "softrvt.h"

/**
 * softrvt_alloc_pd - allocate a protection domain (ib_device_ops.alloc_pd)
 * @ibpd: the PD allocated by ib_core
 * @udata: unused; PDs have no driver data
 *
 * Return: 0, or -ENOMEM past the device's max_pd.
 */
int softrvt_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibpd->device);

	if (atomic_inc_return(&rdi->n_pds) > SOFTRVT_MAX_PD) {
		atomic_dec(&rdi->n_pds);
		return -ENOMEM;
	}
	return 0;
}

/**
 * softrvt_dealloc_pd - free a protection domain (ib_device_ops.dealloc_pd)
 * @ibpd: the PD
 * @udata: unused
 *
 * Return: 0.
 */
int softrvt_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&softrvt_to_dev(ibpd->device)->n_pds);
	return 0;
}
