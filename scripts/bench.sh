#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make bench`: one guest boot on the kernel without debug options, the
# same workloads on softrvt and on rxe side by side, and their ratios.
# Absolute figures on shared machines mean little; the ratios do.
set -euo pipefail

. "$(dirname "$0")/common.sh"

kdir=$("$TOP/scripts/build-kernel.sh" release)
"$TOP/scripts/build-rootfs.sh" > /dev/null
"$TOP/scripts/build-provider.sh" > /dev/null
make -s -C "$TOP/tests"

# Modules for this kernel are built from a clean copy of the sources, so
# the debug kernel's objects in the tree neither leak in nor get replaced.
build_module() { # DIR [MAKE-ARGS...]
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$TOP" && git ls-files -z -- Kbuild drivers include kunit |
		xargs -0 tar -c) | tar -x -C "$dir"
	make -s -C "$kdir" M="$dir" "$@" modules
}
src=$CACHE/bench-src
build_module "$src"
# The same module with its tracepoints compiled out, to price them off.
notrace=$CACHE/bench-src-notrace
build_module "$notrace" KCFLAGS=-DNOTRACE

out=${BENCH_OUT:-$CACHE/bench-last}
rm -rf "$out"
mkdir -p "$out/modules" "$out/notrace"
cp "$src/drivers/infiniband/sw/softrvt/softrvt.ko" "$out/modules/"
cp "$notrace/drivers/infiniband/sw/softrvt/softrvt.ko" "$out/notrace/"
"$TOP/scripts/vm.sh" -k "$kdir" -c max -t 3000 -o "$out" -- \
	scripts/guest/bench.sh 2>&1 | grep -v '^\[init ' | tee "$out/bench.log" |
	grep -vE '^\[ *[0-9]+\.[0-9]+\]|^sysrq'

# Two hosts: rdma_rxe to rdma_rxe against softrvt to softrvt on one link,
# and a TCP stream on it (scripts/guest/bench-pair.sh).
pair=$out/pair
mkdir -p "$pair/a/modules" "$pair/b/modules"
cp "$out/modules/softrvt.ko" "$pair/a/modules/"
cp "$out/modules/softrvt.ko" "$pair/b/modules/"
"$TOP/scripts/vm-pair.sh" -k "$kdir" -c max -t 3000 -o "$pair" -- \
	scripts/guest/bench-pair.sh > "$out/bench-pair.log" 2>&1 ||
	log "the two-host bench failed: see $out/bench-pair.log"
echo
echo "Two hosts (two guests, one kernel each) on one virtio link, MTU 9000:"
"$TOP/scripts/guest/bench-table.py" "$pair/b/bench-pair.csv" softrvt rxe |
	tee "$out/bench-pair.txt"
