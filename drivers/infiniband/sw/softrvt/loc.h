/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The functions each file of the driver offers the others, under the
 * file's name; the objects they work on are in softrvt.h.
 */

#ifndef SOFTRVT_LOC_H
#define SOFTRVT_LOC_H

struct softrvt_pkt;

/* trace.c */
void softrvt_drop(struct softrvt_dev_info *rdi, enum softrvt_counter why,
		  const struct softrvt_pkt *pkt);
void softrvt_qp_drop(struct softrvt_qp *qp, enum softrvt_counter why,
		     const struct softrvt_pkt *pkt);

/* main.c */
void softrvt_forget_dev(struct softrvt_dev_info *rdi);

/* device.c */
struct softrvt_dev_info *softrvt_alloc_dev(struct net_device *ndev);
bool softrvt_is_dev(const struct ib_device *ibdev);
int softrvt_register_dev(struct softrvt_dev_info *rdi, const char *name);
void softrvt_port_event(struct softrvt_dev_info *rdi, enum ib_event_type type);

/* counter.c */
const char *softrvt_counter_name(enum softrvt_counter c);
int softrvt_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int softrvt_counter_unbind_qp(struct ib_qp *ibqp);
int softrvt_counter_dealloc(struct rdma_counter *counter);
void softrvt_port_totals(struct softrvt_dev_info *rdi, u64 *tot);
struct rdma_hw_stats *softrvt_counter_alloc_stats(struct rdma_counter *counter);
int softrvt_counter_update_stats(struct rdma_counter *counter);
struct rdma_hw_stats *softrvt_alloc_hw_port_stats(struct ib_device *ibdev,
						  u32 port_num);
int softrvt_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			 u32 port_num, int index);

/* mad.c */
int softrvt_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
			const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			const struct ib_mad *in, struct ib_mad *out,
			size_t *out_mad_size, u16 *out_mad_pkey_index);

/* restrack.c */
int softrvt_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int softrvt_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int softrvt_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq);
int softrvt_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* mmap.c */
int softrvt_mmap_entry_create(struct ib_udata *udata, void *obj, size_t size,
			      bool writable, struct rdma_user_mmap_entry **entry,
			      u64 *offset);
int softrvt_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void softrvt_mmap_free(struct rdma_user_mmap_entry *entry);

/* pd.c */
int softrvt_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int softrvt_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* xrc.c */
extern const struct uapi_definition softrvt_xrc_uapi_defs[];
int softrvt_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int softrvt_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int softrvt_xsrq_publish(struct softrvt_dev_info *rdi, struct softrvt_srq *srq);
void softrvt_xsrq_unpublish(struct softrvt_dev_info *rdi, struct softrvt_srq *srq);
struct softrvt_srq *softrvt_xsrq_get(struct softrvt_dev_info *rdi, u32 srqn,
				     const struct ib_xrcd *xrcd);
void softrvt_xsrq_put(struct softrvt_srq *srq);

/* ah.c */
int softrvt_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		      struct ib_udata *udata);
int softrvt_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int softrvt_destroy_ah(struct ib_ah *ibah, u32 flags);
bool softrvt_av_init(struct softrvt_dev_info *rdi, const struct rdma_ah_attr *attr,
		     const struct ib_gid_attr *sgid_attr, struct softrvt_av *av);

/* mr.c */
u32 softrvt_mr_make_key(u32 index);
int softrvt_key_alloc(struct softrvt_dev_info *rdi, u32 *key);
void softrvt_key_set(struct softrvt_dev_info *rdi, u32 key, void *entry);
void softrvt_key_free(struct softrvt_dev_info *rdi, u32 key);
void *softrvt_key_find(struct softrvt_dev_info *rdi, u32 key);
struct softrvt_mr *softrvt_mr_get(struct softrvt_dev_info *rdi, u32 key);
int softrvt_mr_lookup(struct ib_pd *pd, u32 key, u64 iova, u64 len, int access,
		      struct softrvt_mr **mr);
void softrvt_put_mr(struct softrvt_mr *mr);
void *softrvt_mr_map(struct softrvt_mr *mr, u64 iova, u32 len, u32 *avail);
void softrvt_mr_unmap(struct softrvt_mr *mr, void *addr);
u64 softrvt_mr_atomic(struct softrvt_dev_info *rdi, struct softrvt_mr *mr,
		      u64 va, bool fetch_add, u64 compare_add, u64 swap);
struct ib_mr *softrvt_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *softrvt_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 iova, int access, struct ib_udata *udata);
struct ib_mr *softrvt_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				    u64 length, u64 iova, int access,
				    struct ib_pd *pd, struct ib_udata *udata);
int softrvt_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *softrvt_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			       u32 max_num_sg);
int softrvt_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		      unsigned int *sg_offset);
enum ib_wc_status softrvt_mr_fast_reg(struct softrvt_qp *qp, struct softrvt_mr *mr,
				      u32 key, int access);
int softrvt_mr_invalidate(struct ib_pd *pd, u32 key);

/* mw.c */
int softrvt_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int softrvt_dealloc_mw(struct ib_mw *ibmw);
enum ib_wc_status softrvt_mw_bind(struct softrvt_qp *qp, const struct softrvt_swqe *wqe);
int softrvt_rkey_lookup(struct softrvt_qp *qp, u32 rkey, u64 iova, u64 len,
			int access, struct softrvt_mr **mr);
int softrvt_rkey_invalidate(struct softrvt_qp *qp, u32 rkey);
void softrvt_mw_unbind_qp(struct softrvt_qp *qp);

/* mcast.c */
int softrvt_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int softrvt_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void softrvt_mcast_detach_qp(struct softrvt_qp *qp);
void softrvt_mcast_rcv(struct softrvt_dev_info *rdi, struct sk_buff *skb);

/* placement.c */
int softrvt_placement_flush(struct softrvt_qp *qp, u32 rkey, u64 iova, u32 len,
			    u8 type, u8 level);
int softrvt_placement_atomic_write(struct softrvt_qp *qp, u32 rkey, u64 iova,
				   u64 value);
bool softrvt_flush_valid(u8 type, u8 level);

/* methods.c */
extern const struct uapi_definition softrvt_uapi_defs[];
int softrvt_post_placement_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr);

/* sge.c */
int softrvt_sge_state_init(struct softrvt_sge_state *ss, struct ib_pd *pd,
			   const struct rvt_wqe_sge *list, u32 n, int access);
void softrvt_sge_state_init_one(struct softrvt_sge_state *ss, struct softrvt_mr *mr,
				u64 iova, u32 len);
void softrvt_sge_state_release(struct softrvt_sge_state *ss);
void softrvt_sge_copy(struct softrvt_sge_state *dst, struct softrvt_sge_state *src,
		      u32 len);
void softrvt_copy_to_sge(struct softrvt_sge_state *dst, const void *buf, u32 len);
void softrvt_copy_from_sge(void *buf, struct softrvt_sge_state *src, u32 len);
void softrvt_sge_skip(struct softrvt_sge_state *ss, u32 len);
void softrvt_copy_skb_to_sge(struct softrvt_sge_state *dst, struct sk_buff *skb,
			     u32 off, u32 len);
bool softrvt_sge_to_frags(struct softrvt_sge_state *ss, struct sk_buff *skb, u32 len,
			  u32 max_frags);

/* cq.c */
int softrvt_cq_init(struct softrvt_cq *cq, u32 entries, bool user);
void softrvt_cq_cleanup(struct softrvt_cq *cq);
bool softrvt_cq_enter(struct softrvt_cq *cq, struct ib_wc *wc, bool solicited);
int softrvt_cq_resize(struct softrvt_cq *cq, u32 entries, struct ib_udata *udata);
int softrvt_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs);
int softrvt_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int softrvt_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *entry);
int softrvt_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int softrvt_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

/* rq.c */
int softrvt_rq_init(struct softrvt_rq *rq, u32 max_wr, u32 max_sge, bool user);
void softrvt_rq_free(struct softrvt_rq *rq);
int softrvt_rq_head(const struct softrvt_rq *rq, u32 *head);
u32 softrvt_rq_count(const struct softrvt_rq *rq, u32 head, u32 tail);
int softrvt_rq_post(struct softrvt_rq *rq, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int softrvt_rq_pop_locked(struct softrvt_rq *rq, struct rvt_rwqe *wqe);
int softrvt_rq_resize_locked(struct softrvt_rq *rq, struct softrvt_rq *new);
size_t softrvt_rq_mmap_bytes(const struct softrvt_rq *rq);
int softrvt_rq_pop_wr_id(struct softrvt_rq *rq, u64 *wr_id);
u32 softrvt_rq_posted(struct softrvt_rq *rq);
void softrvt_rq_reset(struct softrvt_rq *rq);

/* srq.c */
int softrvt_srq_init(struct softrvt_srq *srq, const struct ib_srq_attr *attr,
		     bool user);
void softrvt_srq_cleanup(struct softrvt_srq *srq);
int softrvt_srq_set_limit(struct softrvt_srq *srq, u32 limit);
int softrvt_srq_resize(struct softrvt_srq *srq, u32 max_wr, const u32 *limit,
		       struct ib_udata *udata);
int softrvt_srq_get_rwqe(struct softrvt_srq *srq, struct rvt_rwqe *wqe);
extern const struct ib_device_ops softrvt_srq_ops;

/* qp.c */
int softrvt_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		      struct ib_udata *udata);
int softrvt_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		      struct ib_udata *udata);
int softrvt_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		     struct ib_qp_init_attr *init);
int softrvt_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int softrvt_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad_wr);
int softrvt_post_own_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr);
int softrvt_post_local_wr(struct ib_qp *ibqp, const struct ib_send_wr *wr);
int softrvt_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);
struct softrvt_qp *softrvt_lookup_qpn(struct softrvt_dev_info *rdi, u32 qpn);
void softrvt_put_qp(struct softrvt_qp *qp);
bool softrvt_qp_set_error(struct softrvt_qp *qp, enum ib_event_type event);
void softrvt_qp_set_sq_error(struct softrvt_qp *qp);
void softrvt_qp_event(struct softrvt_qp *qp, enum ib_event_type type);
void softrvt_comm_est(struct softrvt_qp *qp);
void softrvt_qp_flush_rq(struct softrvt_qp *qp);
struct softrvt_qp *softrvt_qp_next(struct softrvt_dev_info *rdi, unsigned long *index);
void softrvt_qp_fail_all(struct softrvt_dev_info *rdi);

/* recv.c */
void softrvt_recv(struct softrvt_dev_info *rdi, struct sk_buff *skb);
bool softrvt_pkt_on_path(struct sk_buff *skb, const struct softrvt_av *av);
bool softrvt_rx_queue(struct softrvt_dev_info *rdi, struct softrvt_qp *qp,
		      struct sk_buff *skb);
struct sk_buff *softrvt_rx_dequeue(struct softrvt_qp *qp);
bool softrvt_rx_icrc_ok(struct sk_buff *skb);
void softrvt_rx_unget(struct softrvt_qp *qp, struct sk_buff *skb);
void softrvt_rx_purge(struct softrvt_qp *qp);
void softrvt_rx_hold(struct softrvt_dev_info *rdi, bool hold);

/* net.c */
int softrvt_net_init(void);
void softrvt_net_exit_all(void);
int softrvt_net_attach(struct softrvt_dev_info *rdi);
void softrvt_net_detach(struct softrvt_dev_info *rdi);
void softrvt_tx_begin(struct sk_buff *skb);
void softrvt_tx_end(void);
bool softrvt_rx_sent_here(const struct sk_buff *skb);
struct sk_buff *softrvt_alloc_pkt(struct softrvt_dev_info *rdi, u32 len);
u32 softrvt_put_payload(u8 *p, struct softrvt_sge_state *ss, u32 len);
struct sk_buff *softrvt_alloc_pkt_from(struct softrvt_dev_info *rdi, u32 hdr_len,
				       struct softrvt_sge_state *ss, u32 len,
				       bool in_place);
int softrvt_xmit(struct softrvt_qp *qp, const struct softrvt_av *av,
		 struct dst_cache *cache, u16 sport, struct sk_buff *skb);
void softrvt_train_limit(struct softrvt_qp *qp, const struct softrvt_av *av,
			 struct dst_cache *cache, struct softrvt_train_limit *lim);
bool softrvt_train_take(const struct softrvt_train_limit *lim, u32 n, u32 seg_len,
			u32 len, bool msg_last, u32 *bytes);
struct sk_buff *softrvt_alloc_train(struct softrvt_dev_info *rdi, u32 len);
void softrvt_train_seal(struct sk_buff *skb, u32 seg_len);
int softrvt_xmit_train(struct softrvt_qp *qp, const struct softrvt_av *av,
		       struct dst_cache *cache, u16 sport, struct sk_buff *skb,
		       u32 seg_len);

/* req.c */
u32 softrvt_qp_mtu(const struct softrvt_qp *qp);
void softrvt_qp_set_mtu(struct softrvt_qp *qp, enum ib_mtu path_mtu);
bool softrvt_req_send_rc(struct softrvt_qp *qp);
enum softrvt_ruc_result softrvt_req_send_unreliable(struct softrvt_qp *qp,
						    struct softrvt_swqe *wqe,
						    struct softrvt_budget *budget,
						    enum ib_wc_status *status);
void softrvt_req_rewind(struct softrvt_qp *qp, u32 psn, enum softrvt_resend_why why);
void softrvt_req_go_back(struct softrvt_qp *qp);
void softrvt_req_stop(struct softrvt_qp *qp, u32 i);
void softrvt_req_timeout(struct softrvt_qp *qp);
void softrvt_ack_timer_fn(struct timer_list *t);
void softrvt_req_arm_ack_timer(struct softrvt_qp *qp);
bool softrvt_req_ack_timer_due(struct softrvt_qp *qp);
bool softrvt_wqe_is_rd_atomic(const struct softrvt_swqe *wqe);
void softrvt_req_rd_retire(struct softrvt_qp *qp);

/* comp.c */
void softrvt_comp_packet(struct softrvt_qp *qp, struct sk_buff *skb);
void softrvt_comp_advance(struct softrvt_qp *qp);
void softrvt_comp_done(struct softrvt_qp *qp, enum ib_wc_status status);

/* resp.c */
void softrvt_resp_packet(struct softrvt_qp *qp, struct sk_buff *skb);
bool softrvt_resp_can_take(struct softrvt_qp *qp, struct sk_buff *skb);
bool softrvt_resp_read_answer(struct softrvt_qp *qp);
void softrvt_resp_flush_ack(struct softrvt_qp *qp);
void softrvt_resp_reset(struct softrvt_qp *qp);
void softrvt_resp_flush(struct softrvt_qp *qp);

/* icrc.c */
int softrvt_icrc_init(void);
void softrvt_icrc_exit(void);

/* engine.c */
void softrvt_send_complete(struct softrvt_qp *qp, struct softrvt_swqe *wqe,
			   enum ib_wc_status status);
int softrvt_engine_init(void);
void softrvt_engine_exit(void);
void softrvt_schedule_send(struct softrvt_qp *qp);
void softrvt_send_work(struct work_struct *work);
void softrvt_run_send(struct softrvt_qp *qp);
void softrvt_sync_send(struct softrvt_qp *qp);
void softrvt_rnr_timer_fn(struct timer_list *t);
unsigned long softrvt_ack_timeout(u8 timeout);
extern const u32 softrvt_rnr_usec[32];
bool softrvt_wqe_is_local_op(const struct softrvt_swqe *wqe);
enum ib_wc_status softrvt_local_op(struct softrvt_qp *qp, struct softrvt_swqe *wqe);

/* ruc.c */
int softrvt_get_rwqe(struct softrvt_qp *qp, struct rvt_rwqe *wqe);
enum softrvt_ruc_result softrvt_ruc_loopback(struct softrvt_qp *sqp,
					     struct softrvt_swqe *wqe,
					     struct softrvt_budget *budget,
					     enum ib_wc_status *status,
					     u8 *rnr_timer);
void softrvt_ruc_drop_msg(struct softrvt_qp *sqp, struct softrvt_swqe *wqe);
void softrvt_ruc_reset(struct softrvt_qp *qp);

#endif /* SOFTRVT_LOC_H */
