// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Scatter/gather lists resolved against their MRs, and copies between
 * them: the one place where payload bytes move.
 */

#include <linux/string.h>

#include "softrvt.h"

/**
 * softrvt_sge_state_init - resolve a scatter list for an access
 * @ss: the state to fill; its cursor starts at the first byte
 * @pd: the PD of the WQE
 * @list: the WQE's SGEs
 * @n: how many; at most SOFTRVT_MAX_SGE
 * @access: IB_ACCESS_LOCAL_WRITE to receive into the list, 0 to send it
 *
 * Every non-empty SGE is checked and its MR referenced until
 * softrvt_sge_state_release().
 *
 * Return: 0, or -EACCES if an SGE is not allowed (nothing is held then).
 */
int softrvt_sge_state_init(struct softrvt_sge_state *ss, struct ib_pd *pd,
			   const struct rvt_wqe_sge *list, u32 n, int access)
{
	u32 i;

	ss->num_sge = 0;
	ss->cur = 0;
	ss->offset = 0;
	ss->total_len = 0;
	if (n > SOFTRVT_MAX_SGE)
		return -EACCES;
	for (i = 0; i < n; i++) {
		struct softrvt_sge *sge = &ss->sge[ss->num_sge];

		if (!list[i].length)
			continue;
		if (softrvt_mr_lookup(pd, list[i].lkey, list[i].addr,
				      list[i].length, access, &sge->mr)) {
			softrvt_sge_state_release(ss);
			return -EACCES;
		}
		sge->iova = list[i].addr;
		sge->length = list[i].length;
		ss->total_len += sge->length;
		ss->num_sge++;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sge_state_init);

/**
 * softrvt_sge_state_init_one - a state over one region
 * @ss: the state to fill
 * @mr: the region's MR, already referenced, or NULL for kernel memory
 * @iova: first byte
 * @len: length
 *
 * Used for the remote side of RDMA and atomics, and for kernel buffers.
 * The reference on @mr passes to @ss.
 */
void softrvt_sge_state_init_one(struct softrvt_sge_state *ss, struct softrvt_mr *mr,
				u64 iova, u32 len)
{
	ss->sge[0].mr = mr;
	ss->sge[0].iova = iova;
	ss->sge[0].length = len;
	ss->num_sge = 1;
	ss->cur = 0;
	ss->offset = 0;
	ss->total_len = len;
}

/**
 * softrvt_sge_state_release - drop the MR references of a state
 * @ss: the state
 */
void softrvt_sge_state_release(struct softrvt_sge_state *ss)
{
	u32 i;

	for (i = 0; i < ss->num_sge; i++)
		if (ss->sge[i].mr)
			softrvt_put_mr(ss->sge[i].mr);
	ss->num_sge = 0;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sge_state_release);

/*
 * Callers size every copy and skip by the list's total_len; a cursor at
 * the end of the list is a bug of theirs, and would reach stale entries.
 */
static bool softrvt_sge_at_end(const struct softrvt_sge_state *ss)
{
	return WARN_ON_ONCE(ss->cur >= ss->num_sge);
}

/* Map the next piece at the cursor: no more than @len bytes. */
static void *softrvt_sge_next(struct softrvt_sge_state *ss, u32 len, u32 *avail)
{
	struct softrvt_sge *sge = &ss->sge[ss->cur];

	len = min(len, sge->length - ss->offset);
	return softrvt_mr_map(sge->mr, sge->iova + ss->offset, len, avail);
}

static void softrvt_sge_advance(struct softrvt_sge_state *ss, u32 len)
{
	ss->offset += len;
	if (ss->offset == ss->sge[ss->cur].length) {
		ss->cur++;
		ss->offset = 0;
	}
}

/**
 * softrvt_sge_copy - copy bytes from one state's cursor to another's
 * @dst: where to, cursor advanced
 * @src: where from, cursor advanced
 * @len: bytes; both states must hold that many past their cursors
 *
 * Any context: user pages are mapped with kmap_local_page().
 */
void softrvt_sge_copy(struct softrvt_sge_state *dst, struct softrvt_sge_state *src,
		      u32 len)
{
	while (len) {
		u32 davail, savail, n;
		void *d, *s;

		if (softrvt_sge_at_end(dst) || softrvt_sge_at_end(src))
			return;
		d = softrvt_sge_next(dst, len, &davail);
		s = softrvt_sge_next(src, davail, &savail);
		n = savail;
		memcpy(d, s, n);
		softrvt_mr_unmap(src->sge[src->cur].mr, s);
		softrvt_mr_unmap(dst->sge[dst->cur].mr, d);
		softrvt_sge_advance(src, n);
		softrvt_sge_advance(dst, n);
		len -= n;
	}
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sge_copy);

/**
 * softrvt_copy_to_sge - copy a kernel buffer to a state's cursor
 * @dst: where to, cursor advanced
 * @buf: the bytes
 * @len: how many
 */
void softrvt_copy_to_sge(struct softrvt_sge_state *dst, const void *buf, u32 len)
{
	while (len && !softrvt_sge_at_end(dst)) {
		u32 n;
		void *d = softrvt_sge_next(dst, len, &n);

		memcpy(d, buf, n);
		softrvt_mr_unmap(dst->sge[dst->cur].mr, d);
		softrvt_sge_advance(dst, n);
		buf += n;
		len -= n;
	}
}

/*
 * The page behind the cursor (@cur, @offset) of @ss, if its entry is in
 * a user MR, and in @n how many of @left bytes lie in that page: 0 if
 * they do not lie in user pages at all.  A page of a large folio is not
 * handed out: a packet's reference would keep the whole folio (2 MiB for
 * a THP) after the MR is gone, far more than the packet is charged.
 */
static struct page *softrvt_sge_user_page(const struct softrvt_sge_state *ss, u32 cur,
					  u32 offset, u32 left, u32 *n,
					  u32 *in_page)
{
	const struct softrvt_sge *sge;
	const struct softrvt_mr *mr;
	u64 off;

	*n = 0;
	if (cur >= ss->num_sge)
		return NULL;
	sge = &ss->sge[cur];
	mr = sge->mr;
	if (!mr || !mr->pages || mr->fr_pages)
		return NULL;
	off = sge->iova + offset - mr->iova + mr->page_offset;
	if (PageCompound(mr->pages[off >> PAGE_SHIFT]))
		return NULL;
	*in_page = offset_in_page(off);
	*n = min3(left, sge->length - offset, (u32)PAGE_SIZE - *in_page);
	return mr->pages[off >> PAGE_SHIFT];
}

/**
 * softrvt_sge_to_frags - hand bytes of a scatter list to a packet in place
 * @ss: the list, cursor advanced by @len if it returns true
 * @skb: the packet, whose fragments the bytes' pages join, each
 *	referenced until the packet is freed
 * @len: bytes
 * @max_frags: fragments the packet may have in all
 *
 * Only bytes of user MRs, whose pages are the process's own: a kernel
 * consumer's memory may be freed once its work request completes.  Each
 * fragment is charged a whole page in the packet's truesize, which the
 * receive queues' caps count: the page stays held, outside the process's
 * locked memory once its MR is deregistered, for as long as the packet
 * lives.  The
 * packet must not be sent where it completes the work request: the pages
 * may change after that (RC only, which completes on the ACK).
 *
 * Return: true if it did; false, with nothing changed, if some bytes lie
 * elsewhere or they need more fragments.
 */
bool softrvt_sge_to_frags(struct softrvt_sge_state *ss, struct sk_buff *skb, u32 len,
			  u32 max_frags)
{
	u32 cur = ss->cur, offset = ss->offset, left = len, frags, n, in_page;
	struct page *page;

	frags = skb_shinfo(skb)->nr_frags;
	while (left) {
		if (frags++ >= max_frags ||
		    !softrvt_sge_user_page(ss, cur, offset, left, &n, &in_page))
			return false;
		offset += n;
		if (offset == ss->sge[cur].length) {
			cur++;
			offset = 0;
		}
		left -= n;
	}
	while (len) {
		page = softrvt_sge_user_page(ss, ss->cur, ss->offset, len, &n,
					     &in_page);
		get_page(page);
		skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, page, in_page,
				n, PAGE_SIZE);
		softrvt_sge_advance(ss, n);
		len -= n;
	}
	/* The process may write into its pages while they are on their way. */
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sge_to_frags);

/**
 * softrvt_copy_skb_to_sge - copy bytes of a received packet to a scatter list
 * @dst: where to, cursor advanced
 * @skb: the packet; its bytes may lie in pages, as a NIC handed them over
 * @off: the first byte, counted from skb->data
 * @len: how many; @skb holds them (the receive path hashed every byte of
 *	the packet for its ICRC), @dst has room for them
 *
 * Any context.
 */
void softrvt_copy_skb_to_sge(struct softrvt_sge_state *dst, struct sk_buff *skb,
			     u32 off, u32 len)
{
	struct skb_seq_state st;
	const u8 *data;
	u32 done = 0, n;

	if (off + len <= skb_headlen(skb)) {
		softrvt_copy_to_sge(dst, skb->data + off, len);
		return;
	}
	skb_prepare_seq_read(skb, off, off + len, &st);
	while ((n = softrvt_skb_seq_next(&st, done, len, &data))) {
		softrvt_copy_to_sge(dst, data, n);
		done += n;
	}
	skb_abort_seq_read(&st);
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_copy_skb_to_sge);

/**
 * softrvt_copy_from_sge - copy from a scatter list into a buffer
 * @buf: the destination
 * @src: the source, advanced by @len
 * @len: bytes, no more than @src has left
 */
void softrvt_copy_from_sge(void *buf, struct softrvt_sge_state *src, u32 len)
{
	while (len && !softrvt_sge_at_end(src)) {
		u32 n;
		void *s = softrvt_sge_next(src, len, &n);

		memcpy(buf, s, n);
		softrvt_mr_unmap(src->sge[src->cur].mr, s);
		softrvt_sge_advance(src, n);
		buf += n;
		len -= n;
	}
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_copy_from_sge);

/**
 * softrvt_sge_skip - move a scatter list's cursor forward
 * @ss: the list
 * @len: bytes, no more than @ss has left
 *
 * A packet that resumes a message starts this far into its list.
 */
void softrvt_sge_skip(struct softrvt_sge_state *ss, u32 len)
{
	while (len && !softrvt_sge_at_end(ss)) {
		u32 n = min(len, ss->sge[ss->cur].length - ss->offset);

		softrvt_sge_advance(ss, n);
		len -= n;
	}
}
EXPORT_SYMBOL_IF_KUNIT(softrvt_sge_skip);
