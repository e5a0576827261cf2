#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core's own pyverbs tests (python3-pyverbs, Debian 13) on softrvt0,
# one module per process as some crash outright on software devices.
# usage: pyverbs-tests.sh MODULE...   Prints "PYVERBS <module> <rc> <summary>".
set -u
export RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt
OUT=${OUT:-/mnt/out}
src=/usr/share/doc/rdma-core/tests
work=/tmp/pyverbs
mkdir -p "$work/tests" "$OUT/pyverbs"
cp -a "$src"/. "$work/tests/"
gunzip -f "$work"/tests/*.gz 2>/dev/null
cd "$work" || exit 1
for m in "$@"; do
	timeout 300 python3 tests/run_tests.py --dev softrvt0 --gid 1 -v \
		"tests.$m" > "$OUT/pyverbs/$m.log" 2>&1
	rc=$?
	echo "PYVERBS $m $rc $(grep -E '^(OK|FAILED)' "$OUT/pyverbs/$m.log" | tail -1)"
done
