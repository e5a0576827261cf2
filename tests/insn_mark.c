// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * insn_mark: execute the marker of the instruction-counting TCG plugin
 * (insn_mark.h), so that the plugin writes its counts so far under the
 * marker's sequence number.  A no-op without the plugin.
 *
 *   insn_mark           one marker
 *   insn_mark -l N      a marker, a loop of N x (dec; jnz), a marker: the
 *                       plugin's own check (2N user instructions between)
 *   insn_mark -r N      a marker, "rep movsb" of N bytes, a marker: how the
 *                       plugin counts a string instruction's iterations
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "insn_mark.h"

int main(int argc, char **argv)
{
	unsigned long n;

	if (argc == 1) {
		insn_mark();
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "-l") && strcmp(argv[1], "-r"))) {
		fprintf(stderr, "usage: insn_mark [-l N | -r N]\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 0);
	if (!n)
		return 2;
	if (argv[1][1] == 'r') {
		char *src = calloc(1, n), *dst = malloc(n), *d = dst;
		const char *s = src;

		if (!src || !dst)
			return 1;
		insn_mark();
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n)
				 : : "memory");
		insn_mark();
		return dst[0];
	}
	insn_mark();
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
	insn_mark();
	return 0;
}
