// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The port's Performance Management agent.  ib_core's sysfs counters
 * (ports/1/counters/) and perfquery read PortCounters and
 * PortCountersExtended through process_mad; softrvt answers a Get of
 * those and of ClassPortInfo from the counters `rdma statistic` shows,
 * totalled over the device and its QP counters (counter.c).
 *
 * The data counters are the payload octets, divided by four as the
 * attribute wants them: a RoCEv2 device has no link-level octets to
 * count, and the headers of a packet are not data.  The 32-bit fields of
 * PortCounters stop at all ones instead of wrapping (IBA 16.1.3.5);
 * ClassPortInfo says that PortCountersExtended has its 64-bit data and
 * packet counters (not the unicast and multicast ones).  PortRcvErrors
 * counts the packets dropped for a bad ICRC or header.
 *
 * Every other class goes on to ib_mad's agents (the CM's, for one).
 */

#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>

#include "softrvt.h"
#include "loc.h"

/* The one version of the PerfMgmt class softrvt speaks. */
#define SOFTRVT_PMA_CLASS_VERSION	1

static void softrvt_pma_class_port_info(struct ib_pma_mad *out)
{
	struct ib_class_port_info *cpi = (void *)out->data;

	cpi->base_version = IB_MGMT_BASE_VERSION;
	cpi->class_version = SOFTRVT_PMA_CLASS_VERSION;
	/*
	 * The 64-bit data and packet counters of PortCountersExtended, not
	 * its unicast and multicast ones, which softrvt does not keep.
	 */
	cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF;
	/* The response time, 4.096 us * 2^18: about a second. */
	ib_set_cpi_resp_time(cpi, 18);
}

/* N, stopping at all ones. */
static __be32 softrvt_pma32(u64 n)
{
	return cpu_to_be32(min_t(u64, n, U32_MAX));
}

static void softrvt_pma_counters(const u64 *tot, struct ib_pma_mad *out)
{
	struct ib_pma_portcounters *pc = (void *)out->data;
	u64 errors = tot[SOFTRVT_CNT_DROP_BAD_ICRC] + tot[SOFTRVT_CNT_DROP_BAD_HDR];

	pc->port_rcv_errors = cpu_to_be16(min_t(u64, errors, U16_MAX));
	pc->port_xmit_data = softrvt_pma32(tot[SOFTRVT_CNT_TX_BYTES] >> 2);
	pc->port_rcv_data = softrvt_pma32(tot[SOFTRVT_CNT_RX_BYTES] >> 2);
	pc->port_xmit_packets = softrvt_pma32(tot[SOFTRVT_CNT_TX_PACKETS]);
	pc->port_rcv_packets = softrvt_pma32(tot[SOFTRVT_CNT_RX_PACKETS]);
}

static void softrvt_pma_counters_ext(const u64 *tot, struct ib_pma_mad *out)
{
	struct ib_pma_portcounters_ext *pc = (void *)out->data;

	pc->port_xmit_data = cpu_to_be64(tot[SOFTRVT_CNT_TX_BYTES] >> 2);
	pc->port_rcv_data = cpu_to_be64(tot[SOFTRVT_CNT_RX_BYTES] >> 2);
	pc->port_xmit_packets = cpu_to_be64(tot[SOFTRVT_CNT_TX_PACKETS]);
	pc->port_rcv_packets = cpu_to_be64(tot[SOFTRVT_CNT_RX_PACKETS]);
}

/*
 * The answer to a Get of an attribute softrvt keeps: the request's
 * header, and the attribute's values or the status of a bad version,
 * port or modifier.  The counters of one answer are taken at one moment.
 */
static void softrvt_pma_get(struct softrvt_dev_info *rdi,
			    const struct ib_pma_mad *in, struct ib_pma_mad *out)
{
	/* Both counter attributes start: reserved, PortSelect, CounterSelect. */
	const size_t select_bytes = 4;
	__be16 attr = in->mad_hdr.attr_id;
	u8 port = in->data[1];
	u64 tot[SOFTRVT_CNT_MAX];
	u16 status = 0;

	memset(out, 0, sizeof(*out));
	out->mad_hdr = in->mad_hdr;
	out->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	if (in->mad_hdr.class_version != SOFTRVT_PMA_CLASS_VERSION) {
		status = IB_MGMT_MAD_STATUS_BAD_VERSION;
	} else if (attr == IB_PMA_CLASS_PORT_INFO) {
		softrvt_pma_class_port_info(out);
	} else if (in->mad_hdr.attr_mod || (port != 1 && port != 0xff)) {
		status = IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	} else {
		memcpy(out->data, in->data, select_bytes);
		softrvt_port_totals(rdi, tot);
		if (attr == IB_PMA_PORT_COUNTERS)
			softrvt_pma_counters(tot, out);
		else
			softrvt_pma_counters_ext(tot, out);
	}
	out->mad_hdr.status = cpu_to_be16(status);
}

/**
 * softrvt_process_mad - answer the Performance Management class
 * (ib_device_ops.process_mad)
 * @ibdev: the device
 * @mad_flags: IB_MAD_IGNORE_* flags; nothing here needs a key
 * @port_num: the port the MAD came in on, 1
 * @in_wc: the receive's completion, or NULL from ib_core's sysfs
 * @in_grh: its GRH, or NULL
 * @in: the MAD
 * @out: the answer, a whole ib_mad
 * @out_mad_size: the size of @out, not changed
 * @out_mad_pkey_index: the P_Key index of the answer, not changed
 *
 * Called in process context: from ib_core's sysfs, and from ib_mad's
 * receive completion work.  Only a Get of ClassPortInfo, PortCounters or
 * PortCountersExtended is answered here.  Everything else goes on to
 * ib_mad: to an agent of its class, or to ib_mad's own answer that the
 * method or attribute is not supported (a Set, which would clear the
 * counters, among them: `rdma statistic` does not clear them either).
 *
 * Return: IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY with the answer in
 * @out; IB_MAD_RESULT_SUCCESS to pass the MAD on; IB_MAD_RESULT_FAILURE
 * for a port the device does not have.
 */
int softrvt_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
			const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			const struct ib_mad *in, struct ib_mad *out,
			size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	__be16 attr = in->mad_hdr.attr_id;

	BUILD_BUG_ON(sizeof(struct ib_pma_mad) != sizeof(struct ib_mad));
	if (port_num != 1)
		return IB_MAD_RESULT_FAILURE;
	if (in->mad_hdr.mgmt_class != IB_MGMT_CLASS_PERF_MGMT ||
	    in->mad_hdr.method != IB_MGMT_METHOD_GET)
		return IB_MAD_RESULT_SUCCESS;
	if (attr != IB_PMA_CLASS_PORT_INFO && attr != IB_PMA_PORT_COUNTERS &&
	    attr != IB_PMA_PORT_COUNTERS_EXT)
		return IB_MAD_RESULT_SUCCESS;
	softrvt_pma_get(softrvt_to_dev(ibdev), (const struct ib_pma_mad *)in,
			(struct ib_pma_mad *)out);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_process_mad);
