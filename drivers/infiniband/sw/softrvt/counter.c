// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What `rdma statistic` shows: the device's counters, per port, and the
 * counters of `rdma statistic qp`, to which ib_core binds QPs (by hand, or
 * by type or process in its auto mode).
 *
 * A bound QP counts in its counter instead of in the device's: ib_core
 * shows a port's totals as the port's own counts plus every counter's,
 * those of counters already gone included.  Drops before a packet's QP is
 * known (ICRC, header, QP number, P_Key, transport) are the device's
 * alone.
 */

#include "softrvt.h"

static const struct rdma_stat_desc softrvt_counter_desc[SOFTRVT_CNT_MAX] = {
	[SOFTRVT_CNT_TX_PACKETS].name = "tx_packets",
	[SOFTRVT_CNT_TX_BYTES].name = "tx_bytes",
	[SOFTRVT_CNT_RX_PACKETS].name = "rx_packets",
	[SOFTRVT_CNT_RX_BYTES].name = "rx_bytes",
	[SOFTRVT_CNT_RETRANSMITS].name = "retransmits",
	[SOFTRVT_CNT_ACK_TIMEOUTS].name = "ack_timeouts",
	[SOFTRVT_CNT_SEQ_NAKS_SENT].name = "seq_naks_sent",
	[SOFTRVT_CNT_SEQ_NAKS_RCVD].name = "seq_naks_rcvd",
	[SOFTRVT_CNT_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[SOFTRVT_CNT_RNR_NAKS_RCVD].name = "rnr_naks_rcvd",
	[SOFTRVT_CNT_ERR_NAKS_SENT].name = "err_naks_sent",
	[SOFTRVT_CNT_ERR_NAKS_RCVD].name = "err_naks_rcvd",
	[SOFTRVT_CNT_DUP_REQUESTS].name = "dup_requests",
	[SOFTRVT_CNT_REORDERED_ANSWERS].name = "reordered_answers",
	[SOFTRVT_CNT_DROP_BAD_ICRC].name = "drop_bad_icrc",
	[SOFTRVT_CNT_DROP_BAD_HDR].name = "drop_bad_hdr",
	[SOFTRVT_CNT_DROP_NO_QP].name = "drop_no_qp",
	[SOFTRVT_CNT_DROP_BAD_TRANSPORT].name = "drop_bad_transport",
	[SOFTRVT_CNT_DROP_QUEUE_FULL].name = "drop_queue_full",
	[SOFTRVT_CNT_DROP_BAD_STATE].name = "drop_bad_state",
	[SOFTRVT_CNT_DROP_BAD_QKEY].name = "drop_bad_qkey",
	[SOFTRVT_CNT_DROP_BAD_PSN].name = "drop_bad_psn",
	[SOFTRVT_CNT_DROP_NO_RWQE].name = "drop_no_rwqe",
	[SOFTRVT_CNT_TX_NO_ROUTE].name = "tx_no_route",
	[SOFTRVT_CNT_DROP_BAD_PKEY].name = "drop_bad_pkey",
	[SOFTRVT_CNT_DROP_BAD_ADDR].name = "drop_bad_addr",
	[SOFTRVT_CNT_DROP_DEV_QUEUE_FULL].name = "drop_dev_queue_full",
	[SOFTRVT_CNT_DROP_BAD_XRC_SRQ].name = "drop_bad_xrc_srq",
	[SOFTRVT_CNT_TX_IN_PLACE].name = "tx_in_place",
	[SOFTRVT_CNT_RX_PAGED].name = "rx_paged",
	[SOFTRVT_CNT_TX_TOO_BIG].name = "tx_too_big",
};

/**
 * softrvt_counter_name - the name `rdma statistic` shows for a counter
 * @c: the counter
 *
 * softrvt_drop traces a drop's reason by this name: one table names the
 * counters for both.
 *
 * Return: the name, or "?" for a value that is no counter.
 */
const char *softrvt_counter_name(enum softrvt_counter c)
{
	return (unsigned int)c < SOFTRVT_CNT_MAX ? softrvt_counter_desc[c].name : "?";
}

/**
 * softrvt_alloc_hw_port_stats - describe the port counters
 * (ib_device_ops.alloc_hw_port_stats)
 * @ibdev: the device
 * @port_num: 1
 *
 * Return: the counters' descriptions, or NULL.
 */
struct rdma_hw_stats *softrvt_alloc_hw_port_stats(struct ib_device *ibdev,
						  u32 port_num)
{
	return rdma_alloc_hw_stats_struct(softrvt_counter_desc, SOFTRVT_CNT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/**
 * softrvt_get_hw_stats - read the counters (ib_device_ops.get_hw_stats)
 * @ibdev: the device
 * @stats: filled in
 * @port_num: 1
 * @index: the first counter wanted; all are read
 *
 * Return: the number of counters filled.
 */
int softrvt_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			 u32 port_num, int index)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibdev);
	int i;

	for (i = 0; i < SOFTRVT_CNT_MAX; i++)
		stats->value[i] = atomic64_read(&rdi->counters[i]);
	return SOFTRVT_CNT_MAX;
}

/**
 * softrvt_counter_alloc_stats - describe a QP counter's values
 * (ib_device_ops.counter_alloc_stats)
 * @counter: the counter ib_core is creating
 *
 * The same values as the port's: ib_core adds them up by index.
 *
 * Return: the counter's values, or NULL.
 */
struct rdma_hw_stats *softrvt_counter_alloc_stats(struct rdma_counter *counter)
{
	return softrvt_alloc_hw_port_stats(counter->device, counter->port);
}

/**
 * softrvt_counter_bind_qp - count a QP in a counter (ib_device_ops.counter_bind_qp)
 * @counter: the counter; its first QP gives it its ID
 * @ibqp: the QP, bound to no counter
 *
 * Called under the counter's mutex.  The QP's later counts go to the
 * counter; what it counted before stays the device's.
 *
 * Return: 0, or -ENOMEM.
 */
int softrvt_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(ibqp->device);
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);
	struct softrvt_qp_counter *qc;
	u32 id;
	int ret;

	lockdep_assert_held(&counter->lock);
	if (counter->id) {
		qc = xa_load(&rdi->counter_xa, counter->id);
		if (WARN_ON(!qc))
			return -EINVAL;
	} else {
		qc = kzalloc_obj(*qc, GFP_KERNEL);
		if (!qc)
			return -ENOMEM;
		ret = xa_alloc(&rdi->counter_xa, &id, qc, xa_limit_32b,
			       GFP_KERNEL);
		if (ret) {
			kfree(qc);
			return ret;
		}
		/* Unique on the device, as ib_core's restrack wants it. */
		counter->id = id;
	}
	rcu_assign_pointer(qp->counter, qc);
	ibqp->counter = counter;
	return 0;
}

/**
 * softrvt_counter_unbind_qp - count a QP in the device's counters again
 * (ib_device_ops.counter_unbind_qp)
 * @ibqp: the QP, bound to a counter
 *
 * Called under the counter's lock, also before the QP is destroyed.  A
 * count in flight still lands in the counter before this returns, so
 * that ib_core, reading the counter next, misses none of the QP's.
 *
 * Return: 0.
 */
int softrvt_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct softrvt_qp *qp = softrvt_to_qp(ibqp);

	lockdep_assert_held(&ibqp->counter->lock);
	RCU_INIT_POINTER(qp->counter, NULL);
	ibqp->counter = NULL;
	synchronize_rcu();
	return 0;
}

/**
 * softrvt_counter_update_stats - read a QP counter (ib_device_ops.counter_update_stats)
 * @counter: the counter
 *
 * Called under the counter's lock; its first QP gave it its ID.
 *
 * Return: 0, or -EINVAL for a counter this device never gave an ID.
 */
int softrvt_counter_update_stats(struct rdma_counter *counter)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(counter->device);
	struct softrvt_qp_counter *qc = xa_load(&rdi->counter_xa, counter->id);
	int i;

	lockdep_assert_held(&counter->lock);
	if (WARN_ON(!qc))
		return -EINVAL;
	for (i = 0; i < SOFTRVT_CNT_MAX; i++)
		counter->stats->value[i] = atomic64_read(&qc->counts[i]);
	return 0;
}

/**
 * softrvt_counter_dealloc - free a QP counter (ib_device_ops.counter_dealloc)
 * @counter: the counter, with no QP bound; ib_core read it last
 *
 * Return: 0.
 */
int softrvt_counter_dealloc(struct rdma_counter *counter)
{
	struct softrvt_dev_info *rdi = softrvt_to_dev(counter->device);
	struct softrvt_qp_counter *qc;
	int i;

	if (!counter->id)
		return 0;
	/* Its QPs are unbound: nothing counts here any more. */
	mutex_lock(&rdi->counter_lock);
	qc = xa_erase(&rdi->counter_xa, counter->id);
	if (qc) {
		for (i = 0; i < SOFTRVT_CNT_MAX; i++)
			rdi->counters_gone[i] += atomic64_read(&qc->counts[i]);
	}
	mutex_unlock(&rdi->counter_lock);
	if (qc)
		kfree_rcu(qc, rcu);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_counter_dealloc);

/**
 * softrvt_port_totals - the port's totals of every counter
 * @rdi: the device
 * @tot: filled, SOFTRVT_CNT_MAX of them
 *
 * What ib_core shows as the port's values in `rdma statistic`: the
 * device's own counts, every QP counter's, and those of the counters
 * freed, all read in one pass under counter_lock, so that a counter freed
 * meanwhile is counted once.  Process context: a mutex, as the pass over
 * every QP counter may be long, and anyone may read the sysfs files.
 */
void softrvt_port_totals(struct softrvt_dev_info *rdi, u64 *tot)
{
	struct softrvt_qp_counter *qc;
	unsigned long id;
	int i;

	mutex_lock(&rdi->counter_lock);
	for (i = 0; i < SOFTRVT_CNT_MAX; i++)
		tot[i] = atomic64_read(&rdi->counters[i]) + rdi->counters_gone[i];
	xa_for_each(&rdi->counter_xa, id, qc)
		for (i = 0; i < SOFTRVT_CNT_MAX; i++)
			tot[i] += atomic64_read(&qc->counts[i]);
	mutex_unlock(&rdi->counter_lock);
}
