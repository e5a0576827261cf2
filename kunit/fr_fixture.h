/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fixture of the fast-registration and memory-window suites
 * (frwr_test.c, mw_test.c): a device that is never registered holds two
 * RC QPs of one PD whose peers are each other, on the same-device path.
 * WRs go through softrvt_post_send() and the QPs' engines run on
 * softrvt's workqueue (or, for a user QP, in the poster's context).  The
 * MR's memory is kernel memory mapped through a scatter list whose DMA
 * addresses are kernel addresses, as ib_core's virtual DMA makes them.
 */

#ifndef SOFTRVT_FR_H
#define SOFTRVT_FR_H

#include <kunit/test.h>

#include "softrvt.h"

#define SOFTRVT_FR_CQE		64
#define SOFTRVT_FR_SEND_WR	16
#define SOFTRVT_FR_SQPN		0x31
#define SOFTRVT_FR_RQPN		0x32
/* Pages of the MR's memory: order 2, so 16 KiB aligned and contiguous. */
#define SOFTRVT_FR_ORDER	2
#define SOFTRVT_FR_BYTES	(PAGE_SIZE << SOFTRVT_FR_ORDER)

struct softrvt_fr {
	struct softrvt_dev_info *rdi;
	struct ib_pd *pd;
	struct ib_pd *pd2;		/* another kernel PD */
	struct softrvt_cq *cq;		/* every completion of both QPs */
	struct softrvt_qp *sqp;		/* posts WRITEs and SENDs */
	struct softrvt_qp *rqp;		/* owns the MR, registers it */
	struct softrvt_mr *mr;
	u8 *mem;			/* SOFTRVT_FR_BYTES for the MR */
	u8 *src;			/* sqp's source buffer */
	u8 *dst;			/* rqp's receive buffer */
};

struct softrvt_fr *softrvt_fr_setup(struct kunit *test);
struct softrvt_mr *softrvt_fr_alloc(struct kunit *test,
				    struct softrvt_fr *f,
				    struct ib_pd *pd, u32 max_num_sg);
int softrvt_fr_map(struct softrvt_fr *f, struct softrvt_mr *mr,
		   u32 bsize, const u32 piece[][2], int n,
		   unsigned int skip);
void softrvt_fr_post(struct kunit *test, struct softrvt_qp *qp,
		     const struct ib_send_wr *wr);
void softrvt_fr_inv(struct kunit *test, struct softrvt_qp *qp, u32 key,
		    u64 wr_id);
void softrvt_fr_write(struct kunit *test, struct softrvt_fr *f,
		      u64 va, u32 rkey, u32 len, u64 wr_id);
struct ib_wc softrvt_fr_wc(struct kunit *test, struct softrvt_fr *f);
void softrvt_fr_expect_wc(struct kunit *test, struct softrvt_fr *f,
			  u64 wr_id, enum ib_wc_opcode opcode,
			  enum ib_wc_status status);
bool softrvt_fr_key_finds(struct softrvt_fr *f, u32 key, u64 va,
			  u64 len, int access);
void softrvt_fr_fill(u8 *p, u32 len, u8 seed);

#endif /* SOFTRVT_FR_H */
