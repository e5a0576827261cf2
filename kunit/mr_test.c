// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit tests for MR lookup by key and for copies between scatter lists.
 *
 * MRs are built by hand in a device that is never registered: the tests
 * exercise softrvt_mr_lookup(), softrvt_mr_map() and softrvt_sge_copy() exactly as the
 * send engine calls them.
 */

#include <kunit/test.h>
#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "softrvt.h"

struct mr_fixture {
	struct softrvt_dev_info *rdi;
	struct ib_pd kpd;		/* a kernel PD */
	struct ib_pd upd;		/* a "user" PD: uobject set */
	struct softrvt_mr *mr;		/* index 5, variant 0x3c, pages */
	struct page *pages[3];
};

static void mr_fixture_release(void *ctx)
{
	struct mr_fixture *f = ctx;
	int i;

	xa_destroy(&f->rdi->mr_xa);
	for (i = 0; i < ARRAY_SIZE(f->pages); i++)
		if (f->pages[i])
			__free_page(f->pages[i]);
	kfree(f->mr->pages);
	kfree(f->mr);
	kfree(f->rdi);
}

static struct mr_fixture *mr_setup(struct kunit *test)
{
	struct mr_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct softrvt_mr *mr;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->rdi = kzalloc_obj(*f->rdi, GFP_KERNEL);
	f->mr = kzalloc_obj(*f->mr, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->rdi);
	KUNIT_ASSERT_NOT_NULL(test, f->mr);
	xa_init_flags(&f->rdi->mr_xa, XA_FLAGS_ALLOC1);
	f->kpd.device = &f->rdi->ibdev;
	f->upd.device = &f->rdi->ibdev;
	f->upd.uobject = (void *)&f->upd;	/* only tested for non-NULL */

	mr = f->mr;
	mr->pages = kcalloc(ARRAY_SIZE(f->pages), sizeof(*mr->pages),
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mr->pages);
	for (i = 0; i < ARRAY_SIZE(f->pages); i++) {
		f->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, f->pages[i]);
		mr->pages[i] = f->pages[i];
	}
	mr->npages = ARRAY_SIZE(f->pages);
	/* The region starts 100 bytes into its first page. */
	mr->page_offset = 100;
	mr->iova = 0x7f0000001000ULL;
	mr->length = 3 * PAGE_SIZE - 100;
	mr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ;
	mr->ibmr.pd = &f->upd;
	mr->ibmr.lkey = softrvt_mr_make_key(5);
	mr->ibmr.rkey = mr->ibmr.lkey;
	mr->key = mr->ibmr.lkey;
	mr->valid = true;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->refcount, 1);
	init_completion(&mr->released);
	KUNIT_ASSERT_EQ(test, xa_err(xa_store(&f->rdi->mr_xa, 5, mr,
					      GFP_KERNEL)), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							mr_fixture_release,
							f), 0);
	return f;
}

static void mr_lookup_checks_key_pd_access_bounds(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	u32 key = f->mr->ibmr.lkey;
	u64 iova = f->mr->iova, len = f->mr->length;
	struct softrvt_mr *mr = NULL;

	KUNIT_ASSERT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova, len,
						IB_ACCESS_LOCAL_WRITE, &mr), 0);
	KUNIT_EXPECT_PTR_EQ(test, mr, f->mr);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 2);
	softrvt_put_mr(mr);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);

	/* The consumer's key byte must match. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key ^ 1, iova, 1, 0, &mr),
			-EACCES);
	/* No MR at that index, and index 0 is not an MR. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key + (1 << 8), iova, 1,
						0, &mr), -EACCES);
	/* The right index with another tag. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key ^ BIT(31), iova, 1,
						0, &mr), -EACCES);
	/* Another PD. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->kpd, key, iova, 1, 0, &mr),
			-EACCES);
	/* Rights the MR was not registered with. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova, 8,
						IB_ACCESS_REMOTE_WRITE, &mr),
			-EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova, 8,
						IB_ACCESS_REMOTE_READ, &mr), 0);
	softrvt_put_mr(mr);
	/* Bounds: before, past the end, and a length that wraps. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova - 1, 1, 0, &mr),
			-EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova + len - 4, 8,
						0, &mr), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova + 8, U64_MAX - 4,
						0, &mr), -EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, key, iova + len - 8, 8,
						0, &mr), 0);
	softrvt_put_mr(mr);
	/* Every failure left the count alone. */
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);
}

static void mr_lookup_local_dma_lkey(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_mr *mr = (void *)1;

	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->kpd, 0, 0xffff888000000000ULL,
						64, IB_ACCESS_LOCAL_WRITE, &mr), 0);
	KUNIT_EXPECT_NULL(test, mr);
	/* Never for a user PD, never for remote access. */
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, 0, 0x1000, 64, 0, &mr),
			-EACCES);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->kpd, 0, 0x1000, 64,
						IB_ACCESS_REMOTE_READ, &mr),
			-EACCES);
}

static void mr_lookup_after_unpublish_fails(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_mr *mr;

	xa_erase(&f->rdi->mr_xa, 5);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, f->mr->ibmr.lkey,
						f->mr->iova, 1, 0, &mr), -EACCES);
	/* A dying MR (count 0) is not handed out either. */
	xa_store(&f->rdi->mr_xa, 5, f->mr, GFP_KERNEL);
	refcount_set(&f->mr->refcount, 0);
	KUNIT_EXPECT_EQ(test, softrvt_mr_lookup(&f->upd, f->mr->ibmr.lkey,
						f->mr->iova, 1, 0, &mr), -EACCES);
	refcount_set(&f->mr->refcount, 1);
}

/* Fill the MR's bytes with a pattern through the pages directly. */
static void mr_set_byte(struct mr_fixture *f, u64 off, u8 v)
{
	u64 o = off + f->mr->page_offset;
	u8 *p = kmap_local_page(f->pages[o >> PAGE_SHIFT]);

	p[offset_in_page(o)] = v;
	kunmap_local(p);
}

static u8 mr_byte(struct mr_fixture *f, u64 off)
{
	u64 o = off + f->mr->page_offset;
	u8 *p = kmap_local_page(f->pages[o >> PAGE_SHIFT]);
	u8 v = p[offset_in_page(o)];

	kunmap_local(p);
	return v;
}

static void copy_sge_across_pages_and_sges(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_sge_state *src, *dst;
	struct rvt_wqe_sge list[3];
	const u32 len = PAGE_SIZE + 700;
	u8 *a, *b;
	u32 i;

	src = kunit_kzalloc(test, sizeof(*src), GFP_KERNEL);
	dst = kunit_kzalloc(test, sizeof(*dst), GFP_KERNEL);
	a = kunit_kmalloc(test, 300, GFP_KERNEL);
	b = kunit_kmalloc(test, len - 300, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	for (i = 0; i < 300; i++)
		a[i] = i * 7 + 1;
	for (i = 0; i < len - 300; i++)
		b[i] = (i + 300) * 7 + 1;

	/* Source: two kernel buffers with the local DMA lkey. */
	list[0] = (struct rvt_wqe_sge){ .addr = (uintptr_t)a, .length = 300 };
	list[1] = (struct rvt_wqe_sge){ .addr = (uintptr_t)b,
					.length = len - 300 };
	KUNIT_ASSERT_EQ(test, softrvt_sge_state_init(src, &f->kpd, list, 2, 0), 0);
	KUNIT_EXPECT_EQ(test, src->total_len, len);

	/* Destination: the paged MR from 50 bytes before a page boundary. */
	list[0] = (struct rvt_wqe_sge){
		.addr = f->mr->iova + PAGE_SIZE - 100 - 50,
		.length = len, .lkey = f->mr->ibmr.lkey };
	KUNIT_ASSERT_EQ(test, softrvt_sge_state_init(dst, &f->upd, list, 1,
						     IB_ACCESS_LOCAL_WRITE), 0);
	softrvt_sge_copy(dst, src, len);
	for (i = 0; i < len; i++) {
		u8 got = mr_byte(f, PAGE_SIZE - 150 + i);

		if (got != (u8)(i * 7 + 1)) {
			KUNIT_FAIL(test, "byte %u: got %u want %u", i, got,
				   (u8)(i * 7 + 1));
			break;
		}
	}
	KUNIT_EXPECT_EQ(test, mr_byte(f, PAGE_SIZE - 151), 0);
	KUNIT_EXPECT_EQ(test, mr_byte(f, PAGE_SIZE - 150 + len), 0);
	KUNIT_EXPECT_EQ(test, dst->cur, 1);
	softrvt_sge_state_release(src);
	softrvt_sge_state_release(dst);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);
}

static u8 mr_pattern(u32 off)
{
	return off * 13 + 5;
}

/*
 * Fill the MR with mr_pattern() and describe @len of its bytes from 10 on
 * in two SGEs, the second starting mid-page.
 */
static void mr_two_sges(struct mr_fixture *f, struct rvt_wqe_sge *list,
			u32 len)
{
	u32 i;

	for (i = 0; i < f->mr->length; i++)
		mr_set_byte(f, i, mr_pattern(i));
	list[0] = (struct rvt_wqe_sge){ .addr = f->mr->iova + 10,
					.length = 1500,
					.lkey = f->mr->ibmr.lkey };
	list[1] = (struct rvt_wqe_sge){ .addr = f->mr->iova + 1510,
					.length = len - 1500,
					.lkey = f->mr->ibmr.lkey };
}

/*
 * The wire path cuts a message into MTU-sized packets: each packet's
 * payload is softrvt_sge_skip() to its offset, then softrvt_copy_from_sge().
 * Gathering every slice must rebuild the message, across SGEs and pages.
 */
static void packet_slices_rebuild_the_message(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_sge_state *ss;
	struct rvt_wqe_sge list[2];
	const u32 mtu = 1024, len = 2 * PAGE_SIZE + 333;
	u32 off, i;
	u8 *out;

	ss = kunit_kzalloc(test, sizeof(*ss), GFP_KERNEL);
	out = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ss);
	KUNIT_ASSERT_NOT_NULL(test, out);
	mr_two_sges(f, list, len);
	for (off = 0; off < len; off += mtu) {
		u32 n = min(mtu, len - off);

		KUNIT_ASSERT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list, 2,
							     0), 0);
		softrvt_sge_skip(ss, off);
		softrvt_copy_from_sge(out + off, ss, n);
		softrvt_sge_state_release(ss);
	}
	for (i = 0; i < len; i++) {
		if (out[i] != mr_pattern(i + 10)) {
			KUNIT_FAIL(test, "byte %u: got %u want %u", i, out[i],
				   mr_pattern(i + 10));
			break;
		}
	}
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);
}

/*
 * A paged MR's bytes go out in place: the packet's fragments are the MR's
 * own pages at the bytes' offsets, referenced while the packet lives, and
 * the list's cursor moves past them.  Bytes outside user MRs, or too many
 * fragments, leave packet and cursor as they were.
 */
static void sge_pages_become_packet_fragments(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_sge_state *ss = kunit_kzalloc(test, sizeof(*ss), GFP_KERNEL);
	const u32 len = 2 * PAGE_SIZE + 333, skip = 200, hdr = 16;
	const u32 n = len - skip - 10;
	struct rvt_wqe_sge list[2];
	int refs[ARRAY_SIZE(f->pages)];
	u8 *out = kunit_kzalloc(test, len, GFP_KERNEL);
	struct sk_buff *skb = alloc_skb(64, GFP_KERNEL);
	u8 kbuf[32] = {};
	u32 i, truesize;

	KUNIT_ASSERT_NOT_NULL(test, ss);
	KUNIT_ASSERT_NOT_NULL(test, out);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_put(skb, hdr);
	mr_two_sges(f, list, len);
	for (i = 0; i < ARRAY_SIZE(f->pages); i++)
		refs[i] = page_ref_count(f->pages[i]);
	KUNIT_ASSERT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list, 2, 0), 0);
	softrvt_sge_skip(ss, skip);
	/* Room for one fragment, not the four the bytes need. */
	KUNIT_EXPECT_FALSE(test, softrvt_sge_to_frags(ss, skb, n, 1));
	KUNIT_EXPECT_EQ(test, skb->len, hdr);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 0);

	truesize = skb->truesize;
	KUNIT_ASSERT_TRUE(test, softrvt_sge_to_frags(ss, skb, n, MAX_SKB_FRAGS));
	KUNIT_EXPECT_EQ(test, skb->len, hdr + n);
	KUNIT_EXPECT_EQ(test, skb->data_len, n);
	/* The first SGE's rest in page 0; the second's over pages 0 to 2. */
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 4);
	/* Each fragment holds a page: the receive caps count them so. */
	KUNIT_EXPECT_EQ(test, skb->truesize, truesize + 4 * PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, skb_shinfo(skb)->flags & SKBFL_SHARED_FRAG);
	KUNIT_EXPECT_EQ(test, page_ref_count(f->pages[0]), refs[0] + 2);
	KUNIT_EXPECT_EQ(test, page_ref_count(f->pages[1]), refs[1] + 1);
	KUNIT_EXPECT_EQ(test, page_ref_count(f->pages[2]), refs[2] + 1);
	KUNIT_ASSERT_EQ(test, skb_copy_bits(skb, hdr, out, n), 0);
	for (i = 0; i < n; i++) {
		if (out[i] != mr_pattern(i + 10 + skip)) {
			KUNIT_FAIL(test, "byte %u: got %u want %u", i, out[i],
				   mr_pattern(i + 10 + skip));
			break;
		}
	}
	/* The cursor is past them: the next bytes are the list's last. */
	softrvt_copy_from_sge(out, ss, 10);
	KUNIT_EXPECT_EQ(test, out[9], mr_pattern(len - 1 + 10));
	softrvt_sge_state_release(ss);
	kfree_skb(skb);
	for (i = 0; i < ARRAY_SIZE(f->pages); i++)
		KUNIT_EXPECT_EQ(test, page_ref_count(f->pages[i]), refs[i]);

	/*
	 * Kernel memory (no MR) after some of the MR's bytes: all are
	 * copied, none go.  The state is built by hand, holding no
	 * references: a kernel PD's list cannot name a user MR.
	 */
	skb = alloc_skb(64, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	memset(ss, 0, sizeof(*ss));
	ss->sge[0] = (struct softrvt_sge){ .mr = f->mr, .iova = f->mr->iova,
				       .length = 2000 };
	ss->sge[1] = (struct softrvt_sge){ .iova = (uintptr_t)kbuf,
				       .length = sizeof(kbuf) };
	ss->num_sge = 2;
	ss->total_len = 2000 + sizeof(kbuf);
	KUNIT_EXPECT_FALSE(test, softrvt_sge_to_frags(ss, skb, ss->total_len,
						      MAX_SKB_FRAGS));
	KUNIT_EXPECT_EQ(test, skb->len, 0);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 0);
	KUNIT_EXPECT_EQ(test, ss->cur, 0);
	KUNIT_EXPECT_EQ(test, ss->offset, 0);
	kfree_skb(skb);
	for (i = 0; i < ARRAY_SIZE(f->pages); i++)
		KUNIT_EXPECT_EQ(test, page_ref_count(f->pages[i]), refs[i]);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);
}

/*
 * Bytes in a page of a large folio are not handed to a packet: its
 * reference would hold the whole folio, beyond what it is charged.
 */
static void sge_large_folio_is_copied(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_sge_state *ss = kunit_kzalloc(test, sizeof(*ss), GFP_KERNEL);
	struct page *large = alloc_pages(GFP_KERNEL | __GFP_COMP, 1);
	struct sk_buff *skb = alloc_skb(64, GFP_KERNEL);
	struct rvt_wqe_sge list[2];
	int ref;

	KUNIT_ASSERT_NOT_NULL(test, ss);
	KUNIT_ASSERT_NOT_NULL(test, large);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	/* The MR's second page is the large folio's first, for this test. */
	f->mr->pages[1] = large;
	ref = page_ref_count(large);
	mr_two_sges(f, list, 2 * PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list, 2, 0), 0);
	KUNIT_EXPECT_FALSE(test, softrvt_sge_to_frags(ss, skb, 2 * PAGE_SIZE,
						      MAX_SKB_FRAGS));
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 0);
	KUNIT_EXPECT_EQ(test, ss->cur, 0);
	KUNIT_EXPECT_EQ(test, ss->offset, 0);
	KUNIT_EXPECT_EQ(test, page_ref_count(large), ref);
	softrvt_sge_state_release(ss);
	kfree_skb(skb);
	f->mr->pages[1] = f->pages[1];
	__free_pages(large, 1);
}

static void sge_state_init_bad_key_holds_nothing(struct kunit *test)
{
	struct mr_fixture *f = mr_setup(test);
	struct softrvt_sge_state *ss = kunit_kzalloc(test, sizeof(*ss), GFP_KERNEL);
	struct rvt_wqe_sge list[3] = {
		{ .addr = f->mr->iova, .length = 16, .lkey = f->mr->ibmr.lkey },
		{ .addr = 0, .length = 0, .lkey = 0xdeadbeef },	/* empty: ok */
		{ .addr = f->mr->iova, .length = 16, .lkey = 0xdead00 },
	};

	KUNIT_ASSERT_NOT_NULL(test, ss);
	KUNIT_EXPECT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list, 3, 0),
			-EACCES);
	KUNIT_EXPECT_EQ(test, refcount_read(&f->mr->refcount), 1);
	KUNIT_EXPECT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list, 2, 0), 0);
	KUNIT_EXPECT_EQ(test, ss->num_sge, 1);
	KUNIT_EXPECT_EQ(test, ss->total_len, 16);
	softrvt_sge_state_release(ss);
	/* More SGEs than any WQE can have. */
	KUNIT_EXPECT_EQ(test, softrvt_sge_state_init(ss, &f->upd, list,
						     SOFTRVT_MAX_SGE + 1, 0), -EACCES);
}

/*
 * A key cannot be guessed by counting: keys made for one index differ in
 * their tag and variant, and the index stays where lookups find it.
 */
static void mr_keys_have_a_random_part(struct kunit *test)
{
	u32 first = softrvt_mr_make_key(5), key, tags = 0, variants = 0;
	int i;

	for (i = 0; i < 64; i++) {
		key = softrvt_mr_make_key(5);
		KUNIT_EXPECT_EQ(test, (key >> 8) & 0x1ffff, 5);
		tags |= (key ^ first) >> 25;
		variants |= (key ^ first) & 0xff;
	}
	/* 64 draws all equal to the first: odds of 2^-448 and 2^-512. */
	KUNIT_EXPECT_NE(test, tags, 0);
	KUNIT_EXPECT_NE(test, variants, 0);
	/* Keys for the highest index keep it whole. */
	KUNIT_EXPECT_EQ(test, (softrvt_mr_make_key(0x1ffff) >> 8) & 0x1ffff,
			0x1ffff);
}

static struct kunit_case softrvt_mr_cases[] = {
	KUNIT_CASE(mr_lookup_checks_key_pd_access_bounds),
	KUNIT_CASE(mr_keys_have_a_random_part),
	KUNIT_CASE(mr_lookup_local_dma_lkey),
	KUNIT_CASE(mr_lookup_after_unpublish_fails),
	KUNIT_CASE(copy_sge_across_pages_and_sges),
	KUNIT_CASE(sge_state_init_bad_key_holds_nothing),
	KUNIT_CASE(packet_slices_rebuild_the_message),
	KUNIT_CASE(sge_pages_become_packet_fragments),
	KUNIT_CASE(sge_large_folio_is_copied),
	{}
};

static struct kunit_suite softrvt_mr_suite = {
	.name = "softrvt_mr",
	.test_cases = softrvt_mr_cases,
};

kunit_test_suites(&softrvt_mr_suite);
