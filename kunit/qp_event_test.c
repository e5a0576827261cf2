// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for the affiliated events of a QP's receive side.
 * IB_EVENT_QP_LAST_WQE_REACHED on a QP attached to an SRQ: once the event
 * is out, no receive completion of that QP may follow.  IB_EVENT_COMM_EST:
 * once, when a connected QP in RTR takes its first packet.
 *
 * Two RC QPs of one device, built without ib_core: a requester whose
 * peer is on the device and a responder taking its WQEs from an SRQ.  The
 * requester's engine is run in the test's task; the responder's runs on
 * softrvt's workqueue, as it would.  The SRQ's limit event, raised by the
 * requester's engine right after it took a WQE and before it delivered
 * into it, moves the responder to ERR: the moment the event must wait for.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/workqueue.h>

#include "softrvt.h"

MODULE_IMPORT_NS(SOFTRVT_KUNIT_NS);

#define LW_CQE		16
#define LW_INLINE	64
#define LW_SQPN		0x21
#define LW_RQPN		0x22

static const char lw_payload[] = "the last WQE of an SRQ QP";

struct lw_fixture {
	struct softrvt_dev_info *rdi;
	struct ib_pd *pd;
	struct softrvt_srq *srq;
	struct softrvt_cq *scq;
	struct softrvt_cq *rcq;
	struct softrvt_qp *sqp;		/* requester */
	struct softrvt_qp *rqp;		/* responder, on the SRQ */
	char *buf;			/* the SRQ WQE's buffer */
	int recv_done;			/* receive completions entered */
	int last_wqe;			/* LAST_WQE_REACHED raised */
	int recv_at_event;		/* recv_done when it was */
	int srq_limit;			/* SRQ_LIMIT_REACHED raised */
	int last_wqe_in_delivery;	/* raised while the sender delivered */
	int comm_est;			/* COMM_EST raised on the responder */
};

static void lw_qp_event(struct ib_event *ev, void *ctx)
{
	struct lw_fixture *f = ctx;

	if (ev->event == IB_EVENT_COMM_EST && ev->element.qp == &f->rqp->ibqp)
		f->comm_est++;
	if (ev->event != IB_EVENT_QP_LAST_WQE_REACHED)
		return;
	f->last_wqe++;
	f->recv_at_event = f->recv_done;
}

static void lw_recv_comp(struct ib_cq *ibcq, void *ctx)
{
	struct lw_fixture *f = ctx;

	f->recv_done++;
	softrvt_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
}

/*
 * The requester's engine took the SRQ's WQE and has not delivered yet:
 * the responder fails now, and its engine runs to completion meanwhile.
 */
static void lw_srq_event(struct ib_event *ev, void *ctx)
{
	struct lw_fixture *f = ctx;
	int ms = 10000;

	if (ev->event != IB_EVENT_SRQ_LIMIT_REACHED)
		return;
	f->srq_limit++;
	softrvt_qp_set_error(f->rqp, 0);
	/*
	 * Not flush_work(): this runs inside the requester's engine, under
	 * its engine_lock, and lockdep takes every QP's engine_lock and
	 * send_work for one lock each, as if the responder's engine waited
	 * for the requester's.  It does not: it runs on its own.
	 */
	while (work_busy(&f->rqp->send_work) && ms--)
		usleep_range(1000, 2000);
	f->last_wqe_in_delivery = f->last_wqe;
}

/* The requester's retry timer: the tests never let it expire. */
static void lw_timer(struct timer_list *t)
{
}

static void lw_release(void *ctx)
{
	struct lw_fixture *f = ctx;

	timer_delete_sync(&f->sqp->rnr_timer);
	cancel_work_sync(&f->sqp->send_work);
	cancel_work_sync(&f->rqp->send_work);
	xa_destroy(&f->rdi->qp_xa);
	softrvt_srq_cleanup(f->srq);
	softrvt_cq_cleanup(f->scq);
	softrvt_cq_cleanup(f->rcq);
}

static struct softrvt_qp *lw_qp(struct kunit *test, struct lw_fixture *f,
				u32 qpn, u32 dest)
{
	struct softrvt_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	qp->ibqp.device = &f->rdi->ibdev;
	qp->ibqp.pd = f->pd;
	qp->ibqp.qp_type = IB_QPT_RC;
	qp->ibqp.qp_num = qpn;
	qp->ibqp.send_cq = &f->scq->ibcq;
	qp->ibqp.recv_cq = &f->scq->ibcq;
	qp->ibqp.event_handler = lw_qp_event;
	qp->ibqp.qp_context = f;
	spin_lock_init(&qp->s_lock);
	INIT_WORK(&qp->send_work, softrvt_send_work);
	mutex_init(&qp->engine_lock);
	timer_setup(&qp->rnr_timer, lw_timer, 0);
	skb_queue_head_init(&qp->r_pkts);
	refcount_set(&qp->refcount, 1);
	init_completion(&qp->released);
	qp->state = IB_QPS_RTS;
	qp->s_local = true;
	qp->attr.dest_qp_num = dest;
	qp->r_wqe = kunit_kzalloc(test, struct_size(qp->r_wqe, sg_list,
						    SOFTRVT_MAX_SGE), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->r_wqe);
	qp->s_size = 2;
	qp->s_stride = ALIGN(sizeof(struct softrvt_swqe) + LW_INLINE, 8);
	qp->s_wq = kunit_kzalloc(test, qp->s_size * qp->s_stride, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->s_wq);
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&f->rdi->qp_xa, qpn, qp,
					    GFP_KERNEL), 0);
	return qp;
}

static struct lw_fixture *lw_setup(struct kunit *test)
{
	struct ib_srq_attr sattr = { .max_wr = 4, .max_sge = 1 };
	struct lw_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kunit_kzalloc(test, sizeof(*f->rdi), GFP_KERNEL);
	f->pd = kunit_kzalloc(test, sizeof(*f->pd), GFP_KERNEL);
	f->srq = kunit_kzalloc(test, sizeof(*f->srq), GFP_KERNEL);
	f->scq = kunit_kzalloc(test, sizeof(*f->scq), GFP_KERNEL);
	f->rcq = kunit_kzalloc(test, sizeof(*f->rcq), GFP_KERNEL);
	f->buf = kunit_kzalloc(test, LW_INLINE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->rdi);
	KUNIT_ASSERT_NOT_NULL(test, f->pd);
	KUNIT_ASSERT_NOT_NULL(test, f->srq);
	KUNIT_ASSERT_NOT_NULL(test, f->scq);
	KUNIT_ASSERT_NOT_NULL(test, f->rcq);
	KUNIT_ASSERT_NOT_NULL(test, f->buf);

	xa_init_flags(&f->rdi->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&f->rdi->atomic_lock);
	f->pd->device = &f->rdi->ibdev;
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->scq, LW_CQE, false), 0);
	KUNIT_ASSERT_EQ(test, softrvt_cq_init(f->rcq, LW_CQE, false), 0);
	KUNIT_ASSERT_EQ(test, softrvt_srq_init(f->srq, &sattr, false), 0);
	f->srq->ibsrq.device = &f->rdi->ibdev;
	f->srq->ibsrq.event_handler = lw_srq_event;
	f->srq->ibsrq.srq_context = f;
	f->rcq->ibcq.comp_handler = lw_recv_comp;
	f->rcq->ibcq.cq_context = f;
	softrvt_req_notify_cq(&f->rcq->ibcq, IB_CQ_NEXT_COMP);

	f->sqp = lw_qp(test, f, LW_SQPN, LW_RQPN);
	f->rqp = lw_qp(test, f, LW_RQPN, LW_SQPN);
	f->rqp->ibqp.srq = &f->srq->ibsrq;
	f->rqp->ibqp.recv_cq = &f->rcq->ibcq;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, lw_release, f),
			0);
	return f;
}

/* One receive on the SRQ, into f->buf through the local DMA lkey. */
static void lw_post_srq(struct kunit *test, struct lw_fixture *f)
{
	struct ib_sge sge = {
		.addr = (uintptr_t)f->buf,
		.length = LW_INLINE,
		.lkey = 0,
	};
	struct ib_recv_wr wr = { .wr_id = 0x5e, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad = NULL;

	KUNIT_ASSERT_EQ(test, softrvt_srq_ops.post_srq_recv(&f->srq->ibsrq, &wr, &bad), 0);
}

/* An inline SEND of lw_payload in slot @slot of the requester's queue. */
static void lw_post_send_at(struct lw_fixture *f, u32 slot)
{
	struct softrvt_swqe *wqe = softrvt_get_swqe_ptr(f->sqp, slot);

	wqe->wr_id = 0x5d;
	wqe->opcode = IB_WR_SEND;
	wqe->send_flags = IB_SEND_SIGNALED;
	wqe->length = sizeof(lw_payload);
	wqe->num_sge = 0;
	memcpy(wqe->sg_list, lw_payload, sizeof(lw_payload));
	f->sqp->s_head = (slot + 1) % f->sqp->s_size;
}

static void lw_post_send(struct lw_fixture *f)
{
	lw_post_send_at(f, 0);
}

/*
 * The responder enters ERR while a sender of its device is between taking
 * its SRQ WQE and completing it: the event waits for that completion.
 */
static void last_wqe_waits_for_a_sender_delivering(struct kunit *test)
{
	struct lw_fixture *f = lw_setup(test);
	struct ib_wc wc[2];

	lw_post_srq(test, f);
	KUNIT_ASSERT_EQ(test, softrvt_srq_set_limit(f->srq, 1), 0);
	lw_post_send(f);

	softrvt_send_work(&f->sqp->send_work);
	flush_work(&f->rqp->send_work);

	KUNIT_EXPECT_EQ(test, f->srq_limit, 1);
	KUNIT_EXPECT_EQ(test, f->last_wqe_in_delivery, 0);
	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);
	KUNIT_EXPECT_EQ(test, f->recv_at_event, 1);
	KUNIT_EXPECT_EQ(test, f->recv_done, 1);

	/* The delivery itself was whole. */
	KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->rcq->ibcq, 2, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0x5e);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc[0].byte_len, sizeof(lw_payload));
	KUNIT_EXPECT_STREQ(test, f->buf, lw_payload);
	KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->scq->ibcq, 2, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0x5d);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);

	/* Raised once: the engine running again adds nothing. */
	softrvt_send_work(&f->rqp->send_work);
	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);
	/* A responder in RTS: not a first packet in RTR. */
	KUNIT_EXPECT_EQ(test, f->comm_est, 0);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->rqp->refcount), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->rqp->r_senders), 0);
}

/*
 * A message half received from the wire holds an SRQ WQE: it is flushed
 * first, then the event is raised.
 */
static void last_wqe_after_the_held_wqe_is_flushed(struct kunit *test)
{
	struct lw_fixture *f = lw_setup(test);
	struct ib_wc wc[2];

	f->rqp->r_wqe->wr_id = 0x77;
	f->rqp->r_wqe->num_sge = 0;
	f->rqp->resp.has_rwqe = true;
	f->rqp->resp.in_msg = true;

	KUNIT_EXPECT_TRUE(test, softrvt_qp_set_error(f->rqp, 0));
	flush_work(&f->rqp->send_work);

	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);
	KUNIT_EXPECT_EQ(test, f->recv_at_event, 1);
	KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->rcq->ibcq, 2, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0x77);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);
}

/*
 * An XRC TGT QP has no SRQ of its own: it takes its WQEs from the SRQs
 * of its domain, and its consumers wait for the same event.
 */
static void last_wqe_on_xrc_tgt(struct kunit *test)
{
	struct lw_fixture *f = lw_setup(test);

	f->rqp->ibqp.qp_type = IB_QPT_XRC_TGT;
	f->rqp->ibqp.srq = NULL;
	mutex_init(&f->rqp->r_xrc_mutex);

	KUNIT_EXPECT_TRUE(test, softrvt_qp_set_error(f->rqp, 0));
	flush_work(&f->rqp->send_work);
	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);
}

/*
 * A sender that finds the responder in ERR takes nothing from the SRQ;
 * the requester's RC WQE then waits for a retry, as nobody answers.
 */
static void no_srq_wqe_taken_after_err(struct kunit *test)
{
	struct lw_fixture *f = lw_setup(test);
	u32 head;

	lw_post_srq(test, f);
	KUNIT_EXPECT_TRUE(test, softrvt_qp_set_error(f->rqp, 0));
	flush_work(&f->rqp->send_work);
	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);

	lw_post_send(f);
	f->sqp->attr.retry_cnt = 1;
	f->sqp->attr.timeout = 31;
	softrvt_send_work(&f->sqp->send_work);
	timer_delete_sync(&f->sqp->rnr_timer);
	flush_work(&f->rqp->send_work);

	KUNIT_EXPECT_EQ(test, f->recv_done, 0);
	KUNIT_EXPECT_EQ(test, f->srq->rq.tail, 0);
	KUNIT_ASSERT_EQ(test, softrvt_rq_head(&f->srq->rq, &head), 0);
	KUNIT_EXPECT_EQ(test, head, 1);
	KUNIT_EXPECT_EQ(test, f->last_wqe, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->rqp->r_senders), 0);
}

/*
 * A responder in RTR takes the first SEND of its same-device peer: one
 * COMM_EST, before the receive completes; a second SEND raises none.
 */
static void comm_est_once_from_rtr(struct kunit *test)
{
	struct lw_fixture *f = lw_setup(test);
	struct ib_wc wc[2];
	int i;

	f->rqp->state = IB_QPS_RTR;
	for (i = 0; i < 2; i++) {
		lw_post_srq(test, f);
		lw_post_send_at(f, i);
		softrvt_send_work(&f->sqp->send_work);
		flush_work(&f->rqp->send_work);
		KUNIT_EXPECT_EQ(test, f->comm_est, 1);
		KUNIT_EXPECT_EQ(test, f->recv_done, i + 1);
		KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->rcq->ibcq, 2, wc), 1);
		KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);
		KUNIT_EXPECT_EQ(test, wc[0].byte_len, sizeof(lw_payload));
		KUNIT_ASSERT_EQ(test, softrvt_poll_cq(&f->scq->ibcq, 2, wc), 1);
		KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);
	}
	KUNIT_EXPECT_EQ(test, f->last_wqe, 0);
}

static struct kunit_case softrvt_qp_event_cases[] = {
	KUNIT_CASE(last_wqe_waits_for_a_sender_delivering),
	KUNIT_CASE(last_wqe_after_the_held_wqe_is_flushed),
	KUNIT_CASE(last_wqe_on_xrc_tgt),
	KUNIT_CASE(no_srq_wqe_taken_after_err),
	KUNIT_CASE(comm_est_once_from_rtr),
	{}
};

static struct kunit_suite softrvt_qp_event_suite = {
	.name = "softrvt_qp_event",
	.test_cases = softrvt_qp_event_cases,
};

kunit_test_suites(&softrvt_qp_event_suite);
