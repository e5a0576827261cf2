// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the Performance Management agent (mad.c): the
 * attributes it answers, their widths, the port's totals over the device
 * and its QP counters (those freed included), and the MADs it must leave
 * to ib_mad's agents.
 *
 * The device is built without ib_core: process_mad reads only its
 * counters.
 */

#include <kunit/test.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>
#include <rdma/rdma_counter.h>

#include "softrvt.h"
#include "loc.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

struct mad_fixture {
	struct softrvt_dev_info *rdi;
	struct ib_mad in, out;
};

static void mad_fixture_release(void *ctx)
{
	struct softrvt_dev_info *rdi = ctx;
	struct softrvt_qp_counter *qc;
	unsigned long id;

	xa_for_each(&rdi->counter_xa, id, qc)
		kfree(qc);
	xa_destroy(&rdi->counter_xa);
}

static struct mad_fixture *mad_setup(struct kunit *test)
{
	struct mad_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kunit_kzalloc(test, sizeof(*f->rdi), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->rdi);
	xa_init_flags(&f->rdi->counter_xa, XA_FLAGS_ALLOC1);
	mutex_init(&f->rdi->counter_lock);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, mad_fixture_release,
							f->rdi), 0);
	return f;
}

/*
 * Give process_mad a request: METHOD of ATTR of class CLASS (version
 * VERSION) for PortSelect PORT, with attribute modifier MOD.
 */
static int mad_ask_full(struct mad_fixture *f, u8 class, u8 version, u8 method,
			__be16 attr, u8 port, u32 mod)
{
	size_t size = sizeof(f->out);
	u16 pkey_index = 0;

	memset(&f->in, 0, sizeof(f->in));
	memset(&f->out, 0xa5, sizeof(f->out));
	f->in.mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	f->in.mad_hdr.mgmt_class = class;
	f->in.mad_hdr.class_version = version;
	f->in.mad_hdr.method = method;
	f->in.mad_hdr.attr_id = attr;
	f->in.mad_hdr.attr_mod = cpu_to_be32(mod);
	f->in.mad_hdr.tid = cpu_to_be64(0x1234);
	/* As ib_core's sysfs asks: PortSelect, after a reserved byte. */
	f->in.data[41] = port;
	return softrvt_process_mad(&f->rdi->ibdev, IB_MAD_IGNORE_MKEY, 1,
				   NULL, NULL, &f->in, &f->out, &size,
				   &pkey_index);
}

static int mad_get(struct mad_fixture *f, __be16 attr)
{
	return mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 1, IB_MGMT_METHOD_GET,
			    attr, 1, 0);
}

/* A field of the answer's attribute at sysfs's byte offset, any width. */
static u64 mad_field(struct mad_fixture *f, unsigned int offset, int bits)
{
	const u8 *p = f->out.data + 40 + offset;

	if (bits == 16)
		return get_unaligned_be16(p);
	if (bits == 32)
		return get_unaligned_be32(p);
	return get_unaligned_be64(p);
}

/* The answer's header: the request's, as a GetResp of STATUS. */
static void mad_expect_resp(struct kunit *test, struct mad_fixture *f, u16 status)
{
	KUNIT_EXPECT_EQ(test, f->out.mad_hdr.method, IB_MGMT_METHOD_GET_RESP);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(f->out.mad_hdr.status), status);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(f->out.mad_hdr.tid), 0x1234);
	KUNIT_EXPECT_EQ(test, f->out.mad_hdr.mgmt_class, IB_MGMT_CLASS_PERF_MGMT);
	KUNIT_EXPECT_EQ(test, f->out.mad_hdr.class_version, f->in.mad_hdr.class_version);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(f->out.mad_hdr.attr_id),
			be16_to_cpu(f->in.mad_hdr.attr_id));
}

static void mad_set(struct mad_fixture *f, enum softrvt_counter c, u64 v)
{
	atomic64_set(&f->rdi->counters[c], v);
}

/* A QP counter on F's device, its ID in *ID. */
static struct softrvt_qp_counter *mad_qp_counter(struct kunit *test,
						 struct mad_fixture *f, u32 *id)
{
	struct softrvt_qp_counter *qc = kzalloc(sizeof(*qc), GFP_KERNEL);
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, qc);
	ret = xa_alloc(&f->rdi->counter_xa, id, qc, xa_limit_32b, GFP_KERNEL);
	if (ret)
		kfree(qc);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return qc;
}

#define MAD_REPLY	(IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY)

/*
 * ClassPortInfo offers the 64-bit data and packet counters without the
 * unicast and multicast ones softrvt does not keep: ib_core's sysfs then
 * shows the first and not the others.
 */
static void mad_class_port_info(struct kunit *test)
{
	struct mad_fixture *f = mad_setup(test);
	struct ib_class_port_info *cpi = (void *)(f->out.data + 40);

	KUNIT_EXPECT_EQ(test, mad_get(f, IB_PMA_CLASS_PORT_INFO), MAD_REPLY);
	mad_expect_resp(test, f, 0);
	KUNIT_EXPECT_EQ(test, cpi->base_version, IB_MGMT_BASE_VERSION);
	KUNIT_EXPECT_EQ(test, cpi->class_version, 1);
	KUNIT_EXPECT_TRUE(test, cpi->capability_mask &
			  IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF);
	KUNIT_EXPECT_FALSE(test, cpi->capability_mask & IB_PMA_CLASS_CAP_EXT_WIDTH);
	KUNIT_EXPECT_EQ(test, ib_get_cpi_resp_time(cpi), 18);
}

/*
 * The extended counters are the port's totals: the device's counts plus
 * every QP counter's, the data in 4-octet words.  A counter freed leaves
 * its counts in the totals.
 */
static void mad_counters_ext_totals(struct kunit *test)
{
	struct mad_fixture *f = mad_setup(test);
	struct rdma_counter counter = { .device = &f->rdi->ibdev };
	struct softrvt_qp_counter *qc;
	u32 id;

	mad_set(f, SOFTRVT_CNT_TX_BYTES, 4000);
	mad_set(f, SOFTRVT_CNT_RX_BYTES, 1ULL << 40);
	mad_set(f, SOFTRVT_CNT_TX_PACKETS, 10);
	mad_set(f, SOFTRVT_CNT_RX_PACKETS, 20);
	qc = mad_qp_counter(test, f, &id);
	atomic64_set(&qc->counts[SOFTRVT_CNT_TX_BYTES], 400);
	atomic64_set(&qc->counts[SOFTRVT_CNT_TX_PACKETS], 3);

	KUNIT_EXPECT_EQ(test, mad_get(f, IB_PMA_PORT_COUNTERS_EXT), MAD_REPLY);
	mad_expect_resp(test, f, 0);
	KUNIT_EXPECT_EQ(test, f->out.data[41], 1);
	KUNIT_EXPECT_EQ(test, mad_field(f, 8, 64), 1100);
	KUNIT_EXPECT_EQ(test, mad_field(f, 16, 64), 1ULL << 38);
	KUNIT_EXPECT_EQ(test, mad_field(f, 24, 64), 13);
	KUNIT_EXPECT_EQ(test, mad_field(f, 32, 64), 20);

	counter.id = id;
	KUNIT_EXPECT_EQ(test, softrvt_counter_dealloc(&counter), 0);
	KUNIT_EXPECT_TRUE(test, xa_empty(&f->rdi->counter_xa));
	KUNIT_EXPECT_EQ(test, mad_get(f, IB_PMA_PORT_COUNTERS_EXT), MAD_REPLY);
	KUNIT_EXPECT_EQ(test, mad_field(f, 8, 64), 1100);
	KUNIT_EXPECT_EQ(test, mad_field(f, 24, 64), 13);
}

/* PortCounters' 32- and 16-bit fields stop at all ones rather than wrap. */
static void mad_counters_saturate(struct kunit *test)
{
	struct mad_fixture *f = mad_setup(test);

	mad_set(f, SOFTRVT_CNT_TX_BYTES, 4ULL << 32);
	mad_set(f, SOFTRVT_CNT_RX_BYTES, 40);
	mad_set(f, SOFTRVT_CNT_TX_PACKETS, 1ULL << 33);
	mad_set(f, SOFTRVT_CNT_RX_PACKETS, 7);
	mad_set(f, SOFTRVT_CNT_DROP_BAD_ICRC, 70000);
	KUNIT_EXPECT_EQ(test, mad_get(f, IB_PMA_PORT_COUNTERS), MAD_REPLY);
	mad_expect_resp(test, f, 0);
	KUNIT_EXPECT_EQ(test, mad_field(f, 8, 16), U16_MAX);
	KUNIT_EXPECT_EQ(test, mad_field(f, 24, 32), U32_MAX);
	KUNIT_EXPECT_EQ(test, mad_field(f, 28, 32), 10);
	KUNIT_EXPECT_EQ(test, mad_field(f, 32, 32), U32_MAX);
	KUNIT_EXPECT_EQ(test, mad_field(f, 36, 32), 7);
}

/*
 * A request of another class version, port or modifier is answered with
 * the status that says which; PortSelect 0xFF (all ports) is port 1.
 */
static void mad_bad_requests(struct kunit *test)
{
	struct mad_fixture *f = mad_setup(test);

	mad_set(f, SOFTRVT_CNT_TX_PACKETS, 5);
	KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 2,
					   IB_MGMT_METHOD_GET,
					   IB_PMA_PORT_COUNTERS_EXT, 1, 0), MAD_REPLY);
	mad_expect_resp(test, f, IB_MGMT_MAD_STATUS_BAD_VERSION);
	KUNIT_EXPECT_EQ(test, mad_field(f, 24, 64), 0);
	KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 1,
					   IB_MGMT_METHOD_GET,
					   IB_PMA_PORT_COUNTERS_EXT, 2, 0), MAD_REPLY);
	mad_expect_resp(test, f, IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 1,
					   IB_MGMT_METHOD_GET,
					   IB_PMA_PORT_COUNTERS, 1, 7), MAD_REPLY);
	mad_expect_resp(test, f, IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 1,
					   IB_MGMT_METHOD_GET,
					   IB_PMA_PORT_COUNTERS_EXT, 0xff, 0), MAD_REPLY);
	mad_expect_resp(test, f, 0);
	KUNIT_EXPECT_EQ(test, mad_field(f, 24, 64), 5);
}

/*
 * What is not a Get of an attribute softrvt keeps goes on to ib_mad's
 * agents: a Set (which would clear the counters), other attributes,
 * responses and traps, other classes.  Another port is refused.
 */
static void mad_passed_on(struct kunit *test)
{
	struct mad_fixture *f = mad_setup(test);
	static const u8 methods[] = { IB_MGMT_METHOD_SET, IB_MGMT_METHOD_GET_RESP,
				      IB_MGMT_METHOD_TRAP, IB_MGMT_METHOD_TRAP_REPRESS };
	size_t size = sizeof(f->out);
	u16 pkey_index = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(methods); i++)
		KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_PERF_MGMT, 1,
						   methods[i], IB_PMA_PORT_COUNTERS,
						   1, 0), IB_MAD_RESULT_SUCCESS);
	KUNIT_EXPECT_EQ(test, mad_get(f, IB_PMA_PORT_SAMPLES_CONTROL),
			IB_MAD_RESULT_SUCCESS);
	KUNIT_EXPECT_EQ(test, mad_ask_full(f, IB_MGMT_CLASS_CM, 2,
					   IB_MGMT_METHOD_SEND,
					   cpu_to_be16(0x0010), 0, 0),
			IB_MAD_RESULT_SUCCESS);
	mad_get(f, IB_PMA_PORT_COUNTERS);
	KUNIT_EXPECT_EQ(test, softrvt_process_mad(&f->rdi->ibdev, 0, 2, NULL,
						  NULL, &f->in, &f->out, &size,
						  &pkey_index),
			IB_MAD_RESULT_FAILURE);
}

static struct kunit_case softrvt_mad_cases[] = {
	KUNIT_CASE(mad_class_port_info),
	KUNIT_CASE(mad_counters_ext_totals),
	KUNIT_CASE(mad_counters_saturate),
	KUNIT_CASE(mad_bad_requests),
	KUNIT_CASE(mad_passed_on),
	{}
};

static struct kunit_suite softrvt_mad_suite = {
	.name = "softrvt_mad",
	.test_cases = softrvt_mad_cases,
};

kunit_test_suite(softrvt_mad_suite);
