/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The marker of the instruction-counting TCG plugin
 * (scripts/qemu-plugin/insn_count.c): "nopl 0x53520000(%rax)", a no-op
 * at which the plugin writes its counts so far.
 */
#ifndef SOFTRVT_TESTS_INSN_MARK_H
#define SOFTRVT_TESTS_INSN_MARK_H

static inline void insn_mark(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x52, 0x53"
			 ::: "memory");
}

#endif /* SOFTRVT_TESTS_INSN_MARK_H */
