#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In-guest part of `make bench`'s two-host rows: both guests of
# scripts/vm-pair.sh run it.  The same workloads on one link, first
# rdma_rxe on both hosts, then softrvt on both, in BENCH_ROUNDS
# alternating rounds (default 3), so that the two kernels' devices are
# compared as a user would deploy them; plus TCP streams (iperf3) on the
# same link, the practical limit of a software transport there.
#
# Guest a serves, guest b is the client: b's $OUT/bench-pair.csv holds
# every figure of every round, b's $OUT/bench-pair-events.csv those of the
# runs whose processes sleep on completion events (wire_xfer -e) at 4 KiB
# and 64 KiB: a guest has one CPU, which a busy-polling process shares
# with the kernel's work; each guest's bench-pair-cpu.csv its share
# of each run's CPU time (system and softirq) per GiB moved, which the
# host adds up.  Message sizes from 1 KiB to 1 MiB.  Bandwidths are timed
# by tests/wire_xfer with the wall clock (each byte checked), latency by
# ibv_rc_pingpong's gettimeofday(): neither depends on perftest's cycle
# clock calibration, which fails under QEMU.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
. scripts/guest/pair-lib.sh || exit 2
. scripts/guest/bench-lib.sh
: > "$OUT/results"

rounds=$BENCH_ROUNDS
csv=$OUT/bench-pair.csv
ev_csv=$OUT/bench-pair-events.csv
cpu_csv=$OUT/bench-pair-cpu.csv
[ "$PAIR_ROLE" = b ] && echo "round,device,workload,figure,unit" |
	tee "$ev_csv" > "$csv"
echo "round,device,workload,figure,unit" > "$cpu_csv"

pair_ready_iperf() { tcp_listening 5201; }

# Record a figure of this round on the client's guest, in CSV if given.
record() { # DEVICE WORKLOAD FIGURE UNIT [CSV]
	[ "$PAIR_ROLE" = b ] || return 0
	[ -n "$3" ] || set -- "$1" "$2" n/a "$4" "${5:-}"
	echo "$round,$1,$2,$3,$4" >> "${5:-$csv}"
}

# This guest's share of a run's CPU time, in its own CSV: the host adds
# the two guests' shares (bench-table.py).
record_cpu() { # DEVICE WORKLOAD TICKS BYTES
	echo "$round,$1,$2,$(cpu_per_gib "$3" "$4"),CPU s/GiB" >> "$cpu_csv"
}

# wire_xfer at one message size, its three phases and its CPU time
# recorded; with -e both processes sleep on completion events.
xfer() { # KIND SIZE [-e]
	local kind=$1 size=$2 ev=${3:-} name log op bytes t0 to=$csv
	bench_bytes "$size"
	bytes=$REPLY
	name=${kind}_xfer${ev:+_e}_${size}_$round
	log=$OUT/wire/$name
	cpu_ticks
	t0=$REPLY
	pair_prog "$name" "wire_xfer: OK" a tests/wire_xfer ${ev:+"$ev"} \
		-d %D -g %G -s "$bytes" -m "$size" -M 4096 -t 600
	cpu_ticks
	[ -n "$ev" ] && to=$ev_csv
	record_cpu "$kind" "cpu${ev:+ events} $size" $((REPLY - t0)) $((3 * bytes))
	for op in write send read; do
		record "$kind" "$op $size" \
			"$(phase_mbs "$log.client" "$op" "$bytes")" MB/s "$to"
	done
}

workloads() { # KIND
	local kind=$1 size
	for size in $BENCH_SIZES; do
		xfer "$kind" "$size"
	done
	for size in $BENCH_SIZES; do
		case $size in 4K | 64K) xfer "$kind" "$size" -e ;; esac
	done
	pair_prog "${kind}_lat_$round" "iters" a \
		ibv_rc_pingpong -d %D -g %G -s 8 -n 2000
	record "$kind" "rc_pingpong 8 B" "$(awk '/iters in/ { print $(NF-1); exit }' \
		"$OUT/wire/${kind}_lat_$round.client" 2>/dev/null)" "usec/iter"
}

# One TCP stream (iperf3) on the link, writes of each size.
tcp_streams() {
	local size
	PAIR_DEV=tcp
	for size in $BENCH_SIZES; do
		pair_run "tcp_${size}_$round" "receiver" a iperf iperf3 -s -1 -- \
			iperf3 -c %S -t 3 -l "$size" -f m
		record tcp "stream $size" "$(iperf_mbs "$OUT/wire/tcp_${size}_$round.client")" MB/s
		case $size in
		4K | 64K) record tcp "stream $size" \
			"$(iperf_mbs "$OUT/wire/tcp_${size}_$round.client")" MB/s "$ev_csv" ;;
		esac
	done
	PAIR_DEV=""
}

if ! pair_up; then
	ip addr show eth0
	exit 0
fi
for round in $(seq "$rounds"); do
	echo "== bench-pair: round $round of $rounds"
	# rdma_rxe binds UDP 4791 of the initial namespace while loaded;
	# each module is unloaded before the other's device comes up.
	pair_dev_up rxe rxe0 || fail "bench: rxe0 on eth0"
	pair_sync "rxe up, round $round"
	workloads rxe
	pair_dev_down
	modprobe -r rdma_rxe
	pair_dev_up softrvt softrvt0 || fail "bench: softrvt0 on eth0"
	pair_sync "softrvt up, round $round"
	workloads softrvt
	pair_dev_down
	modprobe -r softrvt
	pair_sync "devices down, round $round"
	tcp_streams
done
pair_down

# The table is the host's (scripts/bench.sh): it adds guest a's CPU
# shares to guest b's.
