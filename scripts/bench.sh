#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make bench`: one guest boot on the kernel without debug options, the
# same workloads on softrvt and on rxe side by side, and their ratios;
# then two guests on one link.  On the wire, bandwidth from 1 KiB to
# 1 MiB messages (wire_xfer, timed by the wall clock), a TCP stream on
# the same link, and the CPU time (system and softirq) per GiB moved.
# Then the guest instructions each driver executes for the same work,
# counted by a QEMU plugin (scripts/count.sh, counts/table.txt).
# Writes bench-wire.csv, bench-pair.csv and bench.png (bandwidth against
# message size) into the out folder; BENCH_SIZES, BENCH_MIB and
# BENCH_ROUNDS (scripts/guest/bench-lib.sh) shrink a run.  Absolute
# figures on shared machines mean little; the ratios do.
set -euo pipefail

. "$(dirname "$0")/common.sh"

kdir=$("$TOP/scripts/build-kernel.sh" release)
"$TOP/scripts/build-rootfs.sh" > /dev/null
"$TOP/scripts/build-provider.sh" > /dev/null
make -s -C "$TOP/tests"
# The plot's only tool, wanted by nothing else.
command -v gnuplot > /dev/null ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends gnuplot-nox

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
# The sweeps' sizes and rounds (scripts/guest/bench-lib.sh), as given.
knobs=""
for v in BENCH_SIZES BENCH_MIB BENCH_ROUNDS; do
	[ -n "${!v:-}" ] && knobs+="$v='${!v}' "
done
"$TOP/scripts/vm.sh" -k "$kdir" -c max -t 3000 -o "$out" -- \
	"${knobs}scripts/guest/bench.sh" 2>&1 | grep -v '^\[init ' | tee "$out/bench.log" |
	grep -vE '^\[ *[0-9]+\.[0-9]+\]|^sysrq'

# Instructions counted, softrvt against rdma_rxe on the same work
# (scripts/count.sh): deterministic where the wall clock is not.
"$TOP/scripts/count.sh" "$kdir" "$out/modules/softrvt.ko" "$out/counts" ||
	log "the instruction counts failed: see $out/counts"

# Two hosts: rdma_rxe to rdma_rxe against softrvt to softrvt on one link,
# and a TCP stream on it (scripts/guest/bench-pair.sh).
pair=$out/pair
mkdir -p "$pair/a/modules" "$pair/b/modules"
cp "$out/modules/softrvt.ko" "$pair/a/modules/"
cp "$out/modules/softrvt.ko" "$pair/b/modules/"
"$TOP/scripts/vm-pair.sh" -k "$kdir" -c max -t 3000 -o "$pair" -- \
	"${knobs}scripts/guest/bench-pair.sh" > "$out/bench-pair.log" 2>&1 ||
	log "the two-host bench failed: see $out/bench-pair.log"
{
	echo
	echo "Two hosts (two guests, one kernel each), one virtio link at MTU 9000,"
	echo "RoCE MTU 4096; wire_xfer, every byte checked; medians of ${BENCH_ROUNDS:-3} rounds,"
	echo "spread = lowest..highest round's ratio; CPU = both guests' system"
	echo "and softirq time per GiB moved:"
	"$TOP/scripts/guest/bench-table.py" -a softrvt rxe "$pair/b/bench-pair.csv" \
		"$pair/a/bench-pair-cpu.csv" "$pair/b/bench-pair-cpu.csv"
	echo
	echo "The same link with both processes sleeping on completion events"
	echo "(wire_xfer -e): each guest has one CPU, which a busy-polling"
	echo "process shares with the kernel's work; CPU rows above (cpu events):"
	"$TOP/scripts/guest/bench-table.py" -a softrvt rxe "$pair/b/bench-pair-events.csv"
} | tee "$out/bench-pair.txt"
cp "$pair/b/bench-pair.csv" "$pair/b/bench-pair-events.csv" "$out/"
"$TOP/scripts/bench-plot.py" "$out/bench.png" \
	"one guest, two namespaces, veth MTU 9000" "$out/bench-wire.csv" \
	"two guests, one virtio link, MTU 9000" "$out/bench-pair.csv"
echo
echo "CSV: $out/bench-wire.csv (veth), $out/bench-events.csv (veth, processes"
echo "sleeping on completion events), $out/bench-pair.csv (two guests),"
echo "$out/bench-pair-events.csv (two guests, processes sleeping on events)"
echo "plot: $out/bench.png"
