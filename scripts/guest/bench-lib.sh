# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# Shared by the guest parts of `make bench` (bench.sh on one guest,
# bench-pair.sh on two): the message sizes of the sweeps, the bytes moved
# at each size, the bandwidth of a wire_xfer phase, and the CPU time a run
# costs.  Sourced after lib.sh.

# Message sizes of the bandwidth sweeps, as wire_xfer's -m takes them.
BENCH_SIZES=${BENCH_SIZES:-"1K 4K 16K 64K 256K 1M"}
# Bytes per wire_xfer phase at most, in MiB.
BENCH_MIB=${BENCH_MIB:-64}
# Rounds of every workload, alternating the devices: the tables give
# medians and the spread of the rounds' ratios.
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
# The clock ticks of /proc/stat.
BENCH_HZ=$(getconf CLK_TCK)

# Bytes a wire_xfer phase moves at message size SIZE: 4096 messages, at
# most BENCH_MIB MiB, so that the small sizes end in seconds under TCG.
bench_bytes() { # SIZE -> REPLY
	local n=$1 max=$((BENCH_MIB << 20))
	case $n in
	*K) n=$((${n%K} << 10)) ;;
	*M) n=$((${n%M} << 20)) ;;
	esac
	n=$((n * 4096))
	[ "$n" -gt "$max" ] && n=$max
	REPLY=$n
}

# Ticks of system and softirq time this guest has spent, all CPUs.
cpu_ticks() { # -> REPLY
	local sys softirq _
	# cpu user nice system idle iowait irq softirq ...
	read -r _ _ _ sys _ _ _ softirq _ < /proc/stat
	REPLY=$((sys + softirq))
}

# CPU seconds (system and softirq) per GiB moved.
cpu_per_gib() { # TICKS BYTES
	awk -v t="$1" -v b="$2" -v hz="$BENCH_HZ" \
		'BEGIN { if (b > 0) printf "%.3f", t / hz / (b / 1073741824) }'
}

# MB/s of one phase, from wire_xfer's "write W s, send S s, read R s".
phase_mbs() { # CLIENT-LOG PHASE BYTES
	awk -v p="$2" -v b="$3" '/^wire_xfer: write .* s, send/ {
		for (i = 2; i < NF; i++)
			if ($i == p && $(i + 1) > 0) {
				printf "%.1f", b / 1e6 / $(i + 1)
				exit
			}
	}' "$1" 2>/dev/null
}

# MB/s that iperf3's receiver reported (-f m: Mbits/sec).
iperf_mbs() { # CLIENT-LOG
	awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") {
		printf "%.1f", $i / 8; exit } }' "$1" 2>/dev/null
}
