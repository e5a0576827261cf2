#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In-guest part of `make bench`: the same workloads on softrvt and on rxe,
# each device on its own veth pair, client and server on the device, and
# the ratio softrvt/rxe of every figure.
set -u

export RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt
OUT=${OUT:-/mnt/out}
. scripts/guest/lib.sh
LOG=$OUT/bench
mkdir -p "$LOG"

ip link add a0 type veth peer name a1
ip link add b0 type veth peer name b1
for l in a0 a1 b0 b1; do ip link set "$l" up; done
ip addr add 198.18.21.1/24 dev a0
ip addr add 198.18.22.1/24 dev b0
modprobe rdma_rxe
rdma link add softrvt0 type softrvt netdev a0 || exit 1
rdma link add rxe0 type rxe netdev b0 || exit 1
sleep 1

echo "kernel: $(uname -r) $(uname -v), built without debug options"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) x $(nproc) (QEMU -cpu max)"
echo "A perftest figure of n/a means its clock calibration failed three"
echo "times; the pingpong rows time themselves and always hold."


# One server/client run; prints the client's output.
run_pair() {
	local log=$1
	shift
	timeout 300 "$@" > "$log.server" 2>&1 &
	local spid=$! n=100
	while [ $n -gt 0 ] && ! tcp_listening 18515; do sleep 0.1; n=$((n - 1)); done
	timeout 300 "$@" localhost > "$log.client" 2>&1
	wait "$spid"
	cat "$log.client"
}

# Field $2 of the first result line of perftest output.
perf_figure() { # column
	awk -v col="$1" '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { print $col; exit }'
}

# A perftest figure, retried while perftest's clock calibration fails
# (it then prints 0.00 although the transfer ran).  usage: figure COL LOG CMD...
figure() {
	local col=$1 log=$2 try fig
	shift 2
	for try in 1 2 3; do
		fig=$(run_pair "$log" "$@" | perf_figure "$col")
		case "$fig" in
		"" | 0 | 0.0 | 0.00 | 0.000 | inf | nan | -nan) ;;
		*) echo "$fig"; return ;;
		esac
	done
	echo "n/a"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

report() { # name unit softrvt rxe
	printf '%-28s %12s %12s %8s  %s\n' "$1" "$3" "$4" "$(ratio "$3" "$4")" "$2"
}

printf '%-28s %12s %12s %8s  %s\n' workload softrvt rxe ratio unit
for t in send write read; do
	for size in 65536 4096; do
		for dev in softrvt0 rxe0; do
			figure 4 "$LOG/${t}_bw_${size}_$dev" ib_${t}_bw -d $dev \
				-x 1 -F -s $size -n 2000 > "$LOG/fig.$dev"
		done
		report "ib_${t}_bw $size" "MB/s (BW average)" \
			"$(cat "$LOG/fig.softrvt0")" "$(cat "$LOG/fig.rxe0")"
	done
done
for t in send write; do
	for dev in softrvt0 rxe0; do
		figure 6 "$LOG/${t}_lat_$dev" ib_${t}_lat -d $dev -x 1 -F \
			-s 8 -n 2000 > "$LOG/fig.$dev"
	done
	report "ib_${t}_lat 8" "usec (t_avg; lower is better)" \
		"$(cat "$LOG/fig.softrvt0")" "$(cat "$LOG/fig.rxe0")"
done
# The pingpongs time themselves with gettimeofday(): their figures hold
# even when perftest's cycle-counter calibration fails under QEMU.
pingpong() { # name field prog args...
	local name=$1 field=$2 prog=$3 dev
	shift 3
	for dev in softrvt0 rxe0; do
		run_pair "$LOG/${prog}_$dev" $prog -d $dev -g 1 "$@" |
			awk -v f="$field" '$0 ~ f { print $(NF-1); exit }' > "$LOG/fig.$dev"
	done
	report "$name" "$([ "$field" = iters ] && echo 'usec/iter (lower is better)' || echo 'Mbit/s')" \
		"$(cat "$LOG/fig.softrvt0")" "$(cat "$LOG/fig.rxe0")"
}
pingpong "ibv_rc_pingpong 65536" bytes ibv_rc_pingpong -s 65536 -n 2000
pingpong "ibv_rc_pingpong 4096" bytes ibv_rc_pingpong -s 4096 -n 5000
pingpong "ibv_rc_pingpong 8" iters ibv_rc_pingpong -s 8 -n 5000
pingpong "ibv_ud_pingpong 1024" iters ibv_ud_pingpong -s 1024 -n 5000
pingpong "ibv_srq_pingpong 4096" iters ibv_srq_pingpong -s 4096 -n 2000
for dev in softrvt0 rxe0; do
	tests/bench_micro post $dev | awk '{ print $2 }' > "$LOG/fig.$dev"
done
report "post_srq_recv" "ns/WR (lower is better)" \
	"$(cat "$LOG/fig.softrvt0")" "$(cat "$LOG/fig.rxe0")"
echo
echo "limit for the same-device path: $(tests/bench_micro memcpy)"

rdma link delete softrvt0
rdma link delete rxe0
ip link del a0
ip link del b0

# On the wire: softrvt to softrvt across two namespaces, against rxe (in
# the initial namespace) to softrvt on an identical veth pair.
. scripts/guest/wire-setup.sh
. scripts/guest/bench-lib.sh
wire_setup > /dev/null 2>&1 || { echo "wire setup failed"; exit 1; }

# One server/client run across namespaces; prints the client's output.
# usage: ns_pair LOG SNS SDEV SADDR CNS CDEV PROG ARGS... (%D, %G as in
# wire_pair)
ns_pair() {
	local log=$1 sns=$2 sdev=$3 saddr=$4 cns=$5 cdev=$6 prog=$7
	shift 7
	local sgid cgid sargs=() cargs=() a n=100
	# The client's address ends in 2 where the server's ends in 1.
	sgid=$(gid_index "$sdev" "$saddr")
	cgid=$(gid_index "$cdev" "${saddr%1}2")
	for a in "$@"; do
		local sa=${a//%G/$sgid} ca=${a//%G/$cgid}
		sargs+=("${sa//%D/$sdev}")
		cargs+=("${ca//%D/$cdev}")
	done
	(ns_spawn "$sns" timeout 300 "$prog" "${sargs[@]}") > "$log.server" 2>&1 &
	local spid=$!
	while [ $n -gt 0 ] && ! tcp_listening 18515 "$spid"; do
		sleep 0.1
		n=$((n - 1))
	done
	ns_exec "$cns" timeout 300 "$prog" "${cargs[@]}" "$saddr" \
		> "$log.client" 2>&1
	wait "$spid"
	cat "$log.client"
}

# Each veth at MTU 9000 and RoCE MTU 4096, as on the two-guest link.
for l in ns1:w0 ns2:w1 init:x0 ns3:x1; do
	ns_exec "${l%%:*}" ip link set "${l#*:}" mtu 9000
done

# A wire_xfer run of ROUND between the devices of WHICH, at message size
# SIZE: its phases' MB/s and the CPU time of the guest (both sides are
# in it) per GiB moved, as rows of $wcsv.  srvt4 and srvt6 are softrvt1
# (ns1) serving softrvt2 (ns2) over IPv4 and IPv6; rxe4 is rxe0 (the
# initial namespace) serving softrvt3 (ns3): two rxe devices do not talk
# in one guest (rxe binds in the initial namespace only).
wire_row() { # ROUND WHICH SIZE
	local round=$1 which=$2 size=$3 bytes log t0 op events=()
	bench_bytes "$size"
	bytes=$REPLY
	log=$LOG/xfer_${which}_${size}_$round
	# srvt4e and rxe4e: srvt4 and rxe4 with both sides sleeping on
	# completion events (wire_xfer -e) instead of busy-polling.
	case $which in
	srvt4e | rxe4e) events=(-e) ;;
	esac
	case $which in
	srvt4*) set -- ns1 softrvt1 198.18.12.1 ns2 softrvt2 ;;
	srvt6) set -- ns1 softrvt1 2001:2:0:12::1 ns2 softrvt2 ;;
	rxe4*) set -- init rxe0 198.18.13.1 ns3 softrvt3 ;;
	esac
	cpu_ticks
	t0=$REPLY
	ns_pair "$log" "$@" tests/wire_xfer "${events[@]}" -d %D -g %G \
		-s "$bytes" -m "$size" -M 4096 -t 600 > /dev/null
	cpu_ticks
	grep -q "wire_xfer: OK" "$log.client" || {
		echo "$which $size round $round failed: $(tail -n 1 "$log.client")"
		return
	}
	for op in write send read; do
		echo "$round,$which,$op $size,$(phase_mbs "$log.client" $op "$bytes"),MB/s"
	done >> "$wcsv"
	echo "$round,$which,cpu $size,$(cpu_per_gib $((REPLY - t0)) $((3 * bytes))),CPU s/GiB" >> "$wcsv"
}

# One TCP stream (iperf3) from ns1 to ns2 on the same veth, writes of SIZE.
tcp_row() { # ROUND SIZE
	local log=$LOG/tcp_$2_$1 n=100
	(ns_spawn ns2 timeout 60 iperf3 -s -1 -B 198.18.12.2) > "$log.server" 2>&1 &
	local spid=$!
	while [ $n -gt 0 ] && ! tcp_listening 5201 "$spid"; do sleep 0.1; n=$((n - 1)); done
	ns_exec ns1 timeout 60 iperf3 -c 198.18.12.2 -t 3 -l "$2" -f m > "$log.client" 2>&1
	wait "$spid"
	echo "$1,tcp,stream $2,$(iperf_mbs "$log.client"),MB/s" >> "$wcsv"
}

wcsv=$OUT/bench-wire.csv
echo "round,device,workload,figure,unit" > "$wcsv"
ecsv=$OUT/bench-events.csv
echo "round,device,workload,figure,unit" > "$ecsv"
for round in $(seq "$BENCH_ROUNDS"); do
	# As kernel consumers and most applications take completions: by
	# events, both sides asleep between them.  Not plotted.
	for which in srvt4e rxe4e; do
		wcsv=$ecsv wire_row $round $which 64K
	done
	for size in $BENCH_SIZES; do
		for which in srvt4 srvt6 rxe4; do
			wire_row $round $which "$size"
		done
		tcp_row $round "$size"
	done
	for which in srvt rxe; do
		if [ $which = srvt ]; then
			set -- ns1 softrvt1 198.18.12.1 ns2 softrvt2
		else
			set -- init rxe0 198.18.13.1 ns3 softrvt3
		fi
		ns_pair "$LOG/wire_lat.$which.$round" "$@" ibv_rc_pingpong -d %D \
			-g %G -s 8 -n 2000 | awk -v r=$round -v w=${which}4 '/iters in/ {
				print r "," w ",rc_pingpong 8 B," $(NF-1) ",usec/iter"
				exit
			}' >> "$wcsv"
	done
done
# Where the time goes: one more 64 KiB run of each pair of devices under
# perf record (every CPU, kernel and user), outside the measured rounds.
profile_row() { # WHICH
	local prof=$OUT/profile-$1
	# Its figures, skewed by the sampling, stay out of the table.
	local wcsv=$prof.csv
	command -v perf > /dev/null || { echo "profile: no perf in the guest root"; return; }
	perf record -q -a -F 499 -o "$prof.data" -- sleep 600 > /dev/null 2>&1 &
	local ppid=$!
	sleep 2
	wire_row profile "$1" 64K
	kill -INT "$ppid"
	wait "$ppid"
	perf report -i "$prof.data" --stdio --no-children --sort symbol \
		--percent-limit 0.5 2> /dev/null | grep -v '^$' > "$prof.txt"
	rm -f "$prof.data"
}
for which in srvt4 srvt6 rxe4; do
	profile_row $which
done
wire_teardown > /dev/null 2>&1
echo
echo "On the wire, two namespaces of one guest joined by veth (MTU 9000,"
echo "RoCE MTU 4096); wire_xfer, every byte checked; medians of $BENCH_ROUNDS rounds."
echo "softrvt to softrvt on IPv4 (srvt4) against rxe to softrvt (rxe4):"
scripts/guest/bench-table.py -a srvt4 rxe4 "$wcsv"
echo
echo "softrvt to softrvt on IPv6 (srvt6, trains) against IPv4 (srvt4):"
scripts/guest/bench-table.py srvt6 srvt4 "$wcsv"
echo
echo "The same with both sides sleeping on completion events (wire_xfer -e),"
echo "64 KiB: softrvt to softrvt (srvt4e) against rxe to softrvt (rxe4e):"
scripts/guest/bench-table.py srvt4e rxe4e "$ecsv"
for which in srvt4 srvt6 rxe4; do
	[ -s "$OUT/profile-$which.txt" ] || continue
	echo
	echo "Where the time went in one more 64K run of $which (perf, every CPU,"
	echo "self time; the whole report in profile-$which.txt):"
	grep -v '^#' "$OUT/profile-$which.txt" | head -n 20
done

# Tracepoints compiled in but off, against the same module built without
# them (-DNOTRACE, /mnt/out/notrace): softrvt1 to softrvt2 across the
# namespaces, the two modules in alternating rounds.
tcsv=$LOG/tracepoints.csv
echo "round,device,workload,figure,unit" > "$tcsv"
for round in 1 2 3; do
	for variant in notrace traced; do
		rmmod softrvt 2>/dev/null
		if [ $variant = notrace ]; then
			# insmod loads no dependency of its own.
			modprobe -a udp_tunnel ip6_udp_tunnel &&
				insmod /mnt/out/notrace/softrvt.ko
		else
			modprobe softrvt
		fi || { echo "tracepoints: $variant module did not load"; break 2; }
		wire_setup > /dev/null 2>&1 || { echo "wire setup failed"; break 2; }
		ns_pair "$LOG/tp_xfer.$variant.$round" ns1 softrvt1 198.18.12.1 \
			ns2 softrvt2 tests/wire_xfer -d %D -g %G -s 64M -m 64K \
			-M 4096 -t 600 > /dev/null
		awk -v r=$round -v v=$variant '/MB\/s=/ { sub(".*MB/s=", "");
			print r "," v ",wire_xfer 64K," $0 ",MB/s"; exit }' \
			"$LOG/tp_xfer.$variant.$round.client" >> "$tcsv"
		ns_pair "$LOG/tp_lat.$variant.$round" ns1 softrvt1 198.18.12.1 \
			ns2 softrvt2 ibv_rc_pingpong -d %D -g %G -s 8 -n 5000 |
			awk -v r=$round -v v=$variant '/iters in/ {
				print r "," v ",rc_pingpong 8 B," $(NF-1) ",usec/iter"; exit }' \
			>> "$tcsv"
		wire_teardown > /dev/null 2>&1
	done
done
echo
echo "Tracepoints compiled in and off (traced) against compiled out (notrace),"
echo "softrvt1 to softrvt2 across two namespaces; medians of 3 rounds:"
scripts/guest/bench-table.py traced notrace "$tcsv"
