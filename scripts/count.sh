#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Instruction counts, softrvt against rdma_rxe on the same work: the
# guest of scripts/guest/count.sh booted COUNT_RUNS times (default 3)
# under TCG with one virtual CPU and the counting plugin
# (scripts/build-plugin.sh), then the table of scripts/count-table.py:
# each figure's median and the spread of the runs; and from the first
# run's profile, the kernel functions that take the most of each
# transfer (scripts/count-prof.py).  Called by
# scripts/bench.sh with the kernel without debug options (a debug
# kernel's checks would be most of what is counted).  Under TCG the
# counts are of the guest's own instructions: unlike wall time they do
# not depend on the host's load or on how fast QEMU emulates an
# instruction.
#
# usage: count.sh KDIR SOFTRVT.KO OUTDIR
set -euo pipefail

. "$(dirname "$0")/common.sh"

[ $# = 3 ] || { echo "usage: count.sh KDIR SOFTRVT.KO OUTDIR" >&2; exit 2; }
kdir=$1 ko=$2 out=$3
plugin=$("$TOP/scripts/build-plugin.sh")
runs=${COUNT_RUNS:-3}
knobs=""
for v in COUNT_MIB COUNT_RTT COUNT_SIZES; do
	[ -n "${!v:-}" ] && knobs+="$v='${!v}' "
done
rm -rf "$out"
for r in $(seq "$runs"); do
	mkdir -p "$out/$r/modules"
	cp "$ko" "$out/$r/modules/"
	log "instruction counts: run $r of $runs"
	# The first run also profiles: where the instructions ran.
	prof=""
	[ "$r" = 1 ] && prof=",prof=$out/$r/prof"
	SOFTRVT_ACCEL=tcg "$TOP/scripts/vm.sh" -k "$kdir" -s 1 -c max -t 3000 \
		-o "$out/$r" -q "-plugin $plugin,out=$out/$r/insn$prof" -- \
		"${knobs}scripts/guest/count.sh" > "$out/$r.log" 2>&1 ||
		{ tail -n 30 "$out/$r.log" >&2; log "count run $r failed"; exit 1; }
	if grep -q '^FAIL' "$out/$r/results"; then
		grep '^FAIL' "$out/$r/results" >&2
		exit 1
	fi
done
"$TOP/scripts/count-table.py" "$out"/[0-9]*/ | tee "$out/table.txt"
"$TOP/scripts/count-prof.py" "$out/1" "$("$TOP/scripts/build-rootfs.sh")" "$TOP" \
	> "$out/profile.txt"
log "where the kernel's instructions go: $out/profile.txt"
