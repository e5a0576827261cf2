// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Mapping rings into userspace.
 *
 * Each user ring gets an rdma_user_mmap_entry in its ucontext.  ib_core
 * looks entries up per ucontext and checks the mapping length against the
 * entry's, so a ring can be mapped only through the context that created
 * it and only whole.  The entry owns the ring: softrvt_mmap_free() releases it
 * once the object is gone and no mmap() call can still be using it.
 * Pages already mapped hold their own references and outlive the vfree().
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "softrvt.h"

struct softrvt_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *obj;
	bool writable;
};

static struct softrvt_mmap_entry *
softrvt_to_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct softrvt_mmap_entry, rdma_entry);
}

/**
 * softrvt_mmap_entry_create - make a vmalloc_user() ring mappable
 * @udata: the verb's udata, which names the ucontext
 * @obj: the ring; owned by the entry on success
 * @size: page-aligned length of @obj
 * @writable: whether userspace writes to @obj (it owns an index there);
 *	if not, it can only ever map @obj read-only
 * @entry: the new entry, for rdma_user_mmap_entry_remove()
 * @offset: the mmap offset to hand to userspace
 *
 * Return: 0 or a negative errno; on error @obj still belongs to the caller.
 */
int softrvt_mmap_entry_create(struct ib_udata *udata, void *obj, size_t size,
			      bool writable, struct rdma_user_mmap_entry **entry,
			      u64 *offset)
{
	struct softrvt_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct softrvt_ucontext,
					  ibucontext);
	struct softrvt_mmap_entry *e;
	int ret;

	if (!uctx)
		return -EINVAL;
	e = kzalloc_obj(*e, GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->obj = obj;
	e->writable = writable;
	/* Offset 0 is never handed out, so 0 can mean "no ring". */
	ret = rdma_user_mmap_entry_insert_range(&uctx->ibucontext,
						&e->rdma_entry, size, 1,
						U32_MAX);
	if (ret) {
		kfree(e);
		return ret;
	}
	*entry = &e->rdma_entry;
	*offset = rdma_user_mmap_get_offset(&e->rdma_entry);
	return 0;
}

/**
 * softrvt_mmap - map a ring into a user process (ib_device_ops.mmap)
 * @uctx: the caller's ucontext
 * @vma: the mapping being created
 *
 * A read-only object is refused to a writable mapping, and its mapping
 * loses VM_MAYWRITE so that mprotect() cannot make it writable later: the
 * kernel's copy of a QP's state is the kernel's alone.
 *
 * Return: 0, -EINVAL when @vma names no ring of @uctx or not its length,
 * -EPERM when it asks to write a read-only object.
 */
int softrvt_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct softrvt_mmap_entry *e;
	int ret;

	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	e = softrvt_to_mmap_entry(entry);
	if (!e->writable) {
		if (vma->vm_flags & VM_WRITE) {
			ret = -EPERM;
			goto out;
		}
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	ret = remap_vmalloc_range(vma, e->obj, 0);
out:
	rdma_user_mmap_entry_put(entry);
	return ret;
}

/**
 * softrvt_mmap_free - release a ring and its entry (ib_device_ops.mmap_free)
 * @entry: the entry, removed and no longer referenced
 */
void softrvt_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct softrvt_mmap_entry *e = softrvt_to_mmap_entry(entry);

	vfree(e->obj);
	kfree(e);
}
