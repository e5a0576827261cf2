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
src=$CACHE/bench-src
rm -rf "$src"
mkdir -p "$src"
(cd "$TOP" && git ls-files -z -- Kbuild drivers include kunit |
	xargs -0 tar -c) | tar -x -C "$src"
make -s -C "$kdir" M="$src" modules

out=${BENCH_OUT:-$CACHE/bench-last}
rm -rf "$out"
mkdir -p "$out/modules"
cp "$src/drivers/infiniband/sw/softrvt/softrvt.ko" "$out/modules/"
"$TOP/scripts/vm.sh" -k "$kdir" -c max -t 3000 -o "$out" -- \
	scripts/guest/bench.sh 2>&1 | grep -v '^\[init ' | tee "$out/bench.log" |
	grep -vE '^\[ *[0-9]+\.[0-9]+\]|^sysrq'
