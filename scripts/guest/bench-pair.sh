#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In-guest part of `make bench`'s two-host rows: both guests of
# scripts/vm-pair.sh run it.  The same workloads on one link, first
# rdma_rxe on both hosts, then softrvt on both, in ROUNDS alternating
# rounds (default 3), so that the two kernels' devices are compared as
# a user would deploy them; plus one TCP stream (iperf3) on the same
# link, the practical limit of a software transport there.
#
# Guest a serves, guest b is the client: b's $OUT/bench-pair.csv holds
# every figure of every round, and b prints the table: for each
# workload the medians over the rounds, their ratio, and the spread
# (lowest and highest) of the rounds' own ratios.  Bandwidths are timed
# by tests/wire_xfer with the wall clock (each byte checked), latency by
# ibv_rc_pingpong's gettimeofday(): neither depends on perftest's cycle
# clock calibration, which fails under QEMU.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
. scripts/guest/pair-lib.sh || exit 2
: > "$OUT/results"

rounds=${ROUNDS:-3}
mib=${BENCH_MIB:-64}
csv=$OUT/bench-pair.csv
[ "$PAIR_ROLE" = b ] && echo "round,device,workload,figure,unit" > "$csv"

pair_ready_iperf() { tcp_listening 5201; }

# Record a figure of this round on the client's guest.
record() { # DEVICE WORKLOAD FIGURE UNIT
	[ "$PAIR_ROLE" = b ] || return 0
	[ -n "$3" ] || set -- "$1" "$2" n/a "$4"
	echo "$round,$1,$2,$3,$4" >> "$csv"
}

# Seconds of one phase in wire_xfer's "write W s, send S s, read R s".
phase_mbs() { # LOG PHASE BYTES
	awk -v p="$2" -v b="$3" '/^wire_xfer: write .* s, send/ {
		for (i = 2; i < NF; i++)
			if ($i == p && $(i + 1) > 0) {
				printf "%.1f", b / 1e6 / $(i + 1)
				exit
			}
	}' "$1.client" 2>/dev/null
}

workloads() { # KIND
	local dev=$PAIR_DEV kind=$1 size log op
	for size in 64K 4K; do
		log=$OUT/wire/${kind}_xfer_${size}_$round
		pair_prog "${kind}_xfer_${size}_$round" "wire_xfer: OK" a \
			tests/wire_xfer -d %D -g %G -s "${mib}M" -m "$size" -M 4096 -t 600
		for op in write send read; do
			record "$kind" "$op $size" \
				"$(phase_mbs "$log" "$op" $((mib << 20)))" MB/s
		done
	done
	pair_prog "${kind}_lat_$round" "iters" a \
		ibv_rc_pingpong -d %D -g %G -s 8 -n 2000
	record "$kind" "rc_pingpong 8 B" "$(awk '/iters in/ { print $(NF-1); exit }' \
		"$OUT/wire/${kind}_lat_$round.client" 2>/dev/null)" "usec/iter"
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
done
PAIR_DEV=tcp
pair_run "tcp stream" "receiver" a iperf iperf3 -s -1 -- iperf3 -c %S -t 5 -f m
record tcp stream "$(awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") {
	printf "%.1f", $i / 8; exit } }' "$OUT/wire/tcp_stream.client" 2>/dev/null)" MB/s
PAIR_DEV=""
pair_down

[ "$PAIR_ROLE" = b ] || exit 0
echo
echo "Two hosts (two guests, one kernel each), one virtio link at MTU 9000,"
echo "RoCE MTU 4096; $mib MiB per wire_xfer phase, every byte checked;"
echo "medians of $rounds rounds, spread = lowest..highest round's ratio."
scripts/guest/bench-table.py "$csv" softrvt rxe
