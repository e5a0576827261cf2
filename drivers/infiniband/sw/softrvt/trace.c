// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tracepoints of trace.h, and softrvt_drop(), through which every dropped
 * packet is both counted and traced: the two cannot disagree.
 */

#define CREATE_TRACE_POINTS
#include "trace.h"

/**
 * softrvt_drop - count a dropped packet under its cause, and trace it
 * @rdi: the device
 * @why: the drop counter, its name the reason traced
 * @pkt: its parsed headers, or NULL if they could not be parsed
 *
 * Drops are the exception: an out-of-line call costs nothing that counts.
 * Any context.
 */
void softrvt_drop(struct softrvt_dev_info *rdi, enum softrvt_counter why,
		  const struct softrvt_pkt *pkt)
{
	softrvt_count(rdi, why, 1);
	trace_softrvt_drop(rdi, why, pkt);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_drop);

/**
 * softrvt_qp_drop - count a packet a QP dropped under its cause, and trace it
 * @qp: the QP; its counter takes the drop when it is bound to one
 * @why: the drop counter, its name the reason traced
 * @pkt: its parsed headers, or NULL for a same-device transfer
 *
 * Any context.
 */
void softrvt_qp_drop(struct softrvt_qp *qp, enum softrvt_counter why,
		     const struct softrvt_pkt *pkt)
{
	softrvt_qp_count(qp, why, 1);
	trace_softrvt_drop(softrvt_to_dev(qp->ibqp.device), why, pkt);
}
