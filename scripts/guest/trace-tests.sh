# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The tracepoints and the restrack details against the counters, on the
# traffic wire-tests.sh makes anyway; sourced by it, after wire-setup.sh.
# The CI's time is spent: no exchange is added for these checks.
#
#   trace_on_start, trace_on_check
#                 around an rc_pingpong between softrvt1 and softrvt2:
#                 every event on records each kind, one softrvt_tx per
#                 tx_packets
#   trace_start   before the lossy transfer between softrvt1 and softrvt2:
#                 softrvt_drop, softrvt_retransmit and softrvt_go_back on,
#                 the counters read, `rdma -dd resource show qp` sampled
#                 in the background
#   trace_check   after it, once the QPs are gone: each device's
#                 retransmit events against its retransmits counter, its
#                 drop events against each drop counter, reason by reason;
#                 the QP fields moved between samples; then every event
#                 off, the buffer emptied
#   trace_off_check
#                 after softrvt3's exchanges with rxe0 that follow:
#                 nothing was recorded
# No kernel address in any trace or resource line.
#
# Events go to an instance of their own (instances/softrvt), so that
# nothing else in the guest writes to the buffer counted.

TRACEFS=/sys/kernel/tracing
TRACE_I=$TRACEFS/instances/softrvt
TRACE_OUT=$OUT/wire/trace
TRACE_DEVS="ns1:softrvt1 ns2:softrvt2"
# A kernel address as %lx or %p would print one (x86-64, 4 or 5 levels).
TRACE_KADDR='ffff[0-9a-f]{12}'

trace_counters_all() { # FILE
	local nd
	: > "$1"
	for nd in $TRACE_DEVS; do
		dev_counters "${nd%%:*}" "${nd#*:}" | sed "s/^/${nd#*:} /" >> "$1"
	done
}

trace_events() { # 0|1 EVENT...: enable or disable events of the instance
	local v=$1 e
	shift
	for e in "$@"; do echo "$v" > "$TRACE_I/events/softrvt/$e/enable"; done
}

trace_sampler() {
	local n=0 nd
	while [ ! -e "$TRACE_OUT/stop" ] && [ "$n" -lt 20 ]; do
		n=$((n + 1))
		for nd in $TRACE_DEVS; do
			echo "sample $n ${nd#*:}"
			ns_exec "${nd%%:*}" rdma -dd resource show qp \
				link "${nd#*:}/1"
		done
		sleep 3
	done > "$TRACE_OUT/resource.qp" 2>&1
}

trace_setup() {
	mkdir -p "$TRACE_OUT"
	[ -e "$TRACEFS/instances" ] || mount -t tracefs nodev "$TRACEFS"
	mkdir -p "$TRACE_I"
	# Events only: formatting task, CPU and time costs under TCG.
	echo 0 > "$TRACE_I/options/context-info"
}

trace_on_start() {
	trace_setup
	: > "$TRACE_I/trace"
	trace_counters_all "$TRACE_OUT/all.counters.0"
	echo 1 > "$TRACE_I/events/softrvt/enable"
}

# Every event on: each kind is recorded, and a packet sent is one
# softrvt_tx event.
trace_on_check() {
	local kinds k
	echo 0 > "$TRACE_I/events/softrvt/enable"
	trace_counters_all "$TRACE_OUT/all.counters.1"
	cat "$TRACE_I/trace" > "$TRACE_OUT/all.trace"
	kinds=$(trace_count "$TRACE_OUT/all.trace" | awk '{ print $1 }' | sort -u | tr '\n' ' ')
	echo "event kinds: $kinds"
	for k in tx rx ack_sent ack_rcvd qp_state cq_enter; do
		check "trace: every event on records softrvt_$k" \
			grep -q "softrvt_$k: dev=softrvt" "$TRACE_OUT/all.trace"
	done
	check "trace: softrvt_tx events of softrvt1 equal its tx_packets" [ \
		"$(grep -c 'softrvt_tx: dev=softrvt1 ' "$TRACE_OUT/all.trace")" = \
		"$(($(trace_tx "$TRACE_OUT/all.counters.1" softrvt1) - \
		    $(trace_tx "$TRACE_OUT/all.counters.0" softrvt1)))" ]
	check "trace: no kernel address with every event on" \
		trace_absent_e "$TRACE_KADDR" "$TRACE_OUT/all.trace"
}

trace_start() {
	trace_setup
	rm -f "$TRACE_OUT/stop"
	# Go-back-N under 5% loss and 10% reordering drops and resends some
	# 5 * 10^5 packets of 64 MiB, some 40 bytes of buffer each: 32 MiB a
	# CPU leaves room should one CPU take them all.
	echo 32768 > "$TRACE_I/buffer_size_kb"
	echo 0 > "$TRACE_I/events/enable"
	: > "$TRACE_I/trace"
	trace_events 1 softrvt_drop softrvt_retransmit softrvt_go_back
	trace_counters_all "$TRACE_OUT/lossy.counters.0"
	trace_sampler &
	TRACE_SAMPLER=$!
}

# Count events by device and reason: "EVENT DEV [REASON] COUNT" lines
# (the reason of a drop, the why of a go-back).
trace_count() { # TRACE-FILE
	awk '{
		for (i = 1; i <= NF; i++)
			if ($i ~ /^softrvt_[a-z_]+:$/)
				break
		if (i > NF)
			next
		ev = substr($i, 9, length($i) - 9)
		dev = $(i + 1); sub(/^dev=/, "", dev)
		key = ev " " dev
		if (ev == "drop") {
			why = $(i + 2); sub(/^reason=/, "", why)
			key = key " " why
		}
		if (ev == "go_back")
			for (j = i + 1; j <= NF; j++)
				if ($j ~ /^why=/)
					key = key " " substr($j, 5)
		n[key]++
	} END { for (k in n) print k, n[k] }' "$1" | sort
}

# Whether the events counted in COUNTS match the counters' deltas.
trace_match() { # COUNTS
	local dev name v0 v1 want got bad=0 drops=0 resent=0
	while read -r dev name v1; do
		case "$name" in
		retransmits) got=$(awk -v d="$dev" '$1 == "retransmit" && $2 == d { print $3 }' "$1") ;;
		drop_*|tx_no_route) got=$(awk -v d="$dev" -v r="$name" '$1 == "drop" && $2 == d && $3 == r { print $4 }' "$1") ;;
		*) continue ;;
		esac
		v0=$(awk -v d="$dev" -v c="$name" '$1 == d && $2 == c { print $3 }' "$TRACE_OUT/lossy.counters.0")
		want=$((v1 - v0))
		got=${got:-0}
		echo "$dev $name: counter +$want, trace $got"
		[ "$want" = "$got" ] || bad=1
		case "$name" in
		retransmits) resent=$((resent + want)) ;;
		*) drops=$((drops + want)) ;;
		esac
	done < "$TRACE_OUT/lossy.counters.1"
	echo "retransmitted $resent, dropped $drops"
	# A lossy transfer that neither dropped nor resent tested nothing.
	[ "$bad" = 0 ] && [ "$resent" -gt 0 ] && [ "$drops" -gt 0 ]
}

# Whether an RC QP of DEV showed the driver's fields in two samples and
# its PSNs moved between them.  rdma prints a QP's line, then its driver
# fields on lines of their own, each name prefixed with drv_.
trace_qp_moved() { # DEV
	awk -v d="$1" '
		function flush(  n, t, i, q, p, rc) {
			n = split(rec, t, " ")
			for (i = 1; i < n; i++) {
				if (t[i] == "lqpn") q = t[i + 1]
				if (t[i] == "type" && t[i + 1] == "RC") rc = 1
				if (t[i] ~ /^drv_(next|unacked|expected)_psn$/)
					p = p "/" t[i + 1]
			}
			rec = ""
			if (dev != d || !rc || p == "")
				return
			if (!(q in first)) first[q] = p
			else if (p != first[q]) moved = 1
		}
		/^sample / { flush(); dev = $3; next }
		/^link / { flush() }
		{ rec = rec " " $0 }
		END { flush(); exit !moved }' "$TRACE_OUT/resource.qp"
}

trace_tx() { # FILE DEV: tx_packets of DEV in a counters file
	awk -v d="$2" '$1 == d && $2 == "tx_packets" { print $3 }' "$1"
}

trace_check() {
	local t0
	t0=$(date +%s)
	trace_counters_all "$TRACE_OUT/lossy.counters.1"
	trace_events 0 softrvt_drop softrvt_retransmit softrvt_go_back
	touch "$TRACE_OUT/stop"
	wait "$TRACE_SAMPLER"

	echo "-- events recorded in the lossy transfer, per device and reason"
	cat "$TRACE_I"/per_cpu/cpu*/stats > "$TRACE_OUT/lossy.stats"
	check "trace: the buffer lost no event of the lossy transfer" \
		trace_absent "^overrun: [1-9]" "$TRACE_OUT/lossy.stats"
	# Some 10^5 lines: on the guest's tmpfs, not the 9p folder.
	cat "$TRACE_I/trace" > /tmp/softrvt-lossy.trace
	trace_count /tmp/softrvt-lossy.trace | tee "$TRACE_OUT/lossy.counts"
	check "trace: retransmit and drop events equal the counters, per device and reason" \
		trace_match "$TRACE_OUT/lossy.counts"
	grep -m 3 softrvt_go_back /tmp/softrvt-lossy.trace
	check "trace: no kernel address in the lossy trace" \
		trace_absent_e "$TRACE_KADDR" /tmp/softrvt-lossy.trace
	# What the documentation shows; the whole trace is large.
	head -n 300 /tmp/softrvt-lossy.trace > "$TRACE_OUT/lossy.head"
	rm -f /tmp/softrvt-lossy.trace

	grep -m 2 -A3 "type RC" "$TRACE_OUT/resource.qp"
	check "resource: RC QPs of softrvt1 show the driver's PSNs, which move" \
		trace_qp_moved softrvt1
	check "resource: RC QPs of softrvt2 show the driver's PSNs, which move" \
		trace_qp_moved softrvt2
	check "resource: no kernel address in rdma resource -dd" \
		trace_absent_e "$TRACE_KADDR" "$TRACE_OUT/resource.qp"

	# Every event off from here: what follows must record nothing.
	echo 0 > "$TRACE_I/events/softrvt/enable"
	: > "$TRACE_I/trace"
	echo 1024 > "$TRACE_I/buffer_size_kb"
	dev_counters ns3 softrvt3 > "$TRACE_OUT/off.counters.0"
	echo "trace checks after the transfer: $(($(date +%s) - t0)) s"
}

# After softrvt3's exchanges with rxe0, every event off.
trace_off_check() {
	dev_counters ns3 softrvt3 > "$TRACE_OUT/off.counters.1"
	cat "$TRACE_I/trace" > "$TRACE_OUT/off.trace"
	check "trace: packets were sent with every event off" [ \
		"$(awk '$1 == "tx_packets" { print $2 }' "$TRACE_OUT/off.counters.1")" -gt \
		"$(awk '$1 == "tx_packets" { print $2 }' "$TRACE_OUT/off.counters.0")" ]
	check "trace: with every event off nothing is recorded" \
		trace_absent "softrvt_" "$TRACE_OUT/off.trace"
	rmdir "$TRACE_I"
}

trace_absent() { ! grep -q "$1" "$2"; }
trace_absent_e() { ! grep -qE "$1" "$2"; }
