#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Teardown under traffic.  While RC traffic runs between two devices, one
# of four things happens to a softrvt device: `rdma link delete`, `ip link
# del` of its netdev, deletion of its network namespace, or `rmmod
# softrvt`.  On softrvt to softrvt (ns1/ns2, as wire-setup.sh) and on rxe
# to softrvt (rxe in the initial namespace, softrvt in ns3).  A veth pair
# goes as a whole: deleting one end, or the namespace of one end, takes
# the devices of both ends.
#
# The traffic is tests/wire_xfer (even rounds) or ib_write_bw (odd
# rounds): programs whose either end learns that the other is gone, from
# a completion or from their TCP connection, whatever it was doing.  Each
# round must end with the teardown done, both programs gone with an error
# (one still there when its timeout strikes is hung, and fails), the
# device gone, no kernel splat, and the module unloading and loading
# again.  Rounds: TEARDOWN_ROUNDS, default 1, or 20 with SOFTRVT_FULL=1;
# without SOFTRVT_FULL each action runs on one pair only (below).
# rxe binds UDP 4791 in the initial namespace: no softrvt device may live
# there meanwhile.
#
# The programs run in the initial namespace and meet over TCP on an
# address of its loopback interface, so that no process keeps a deleted
# namespace alive; their RDMA traffic goes through the devices of the
# namespaces.  Polls are bash builtins and deadlines are in seconds: under
# TCG every fork counts.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh

if [ "${SOFTRVT_FULL:-}" = 1 ]; then
	rounds=${TEARDOWN_ROUNDS:-20}
else
	rounds=${TEARDOWN_ROUNDS:-1}
fi
app_timeout=${TEARDOWN_APP_TIMEOUT:-60}
LOG=$OUT/teardown
mkdir -p "$LOG"
CTL=198.18.15.1

# Wait up to $1 seconds for a command to succeed.
wait_secs() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

file_has() { # FILE STRING
	local l
	[ -r "$1" ] || return 1
	while IFS= read -r l; do
		[[ $l == *"$2"* ]] && return 0
	done < "$1"
	return 1
}

# Each end printed the other's QP: connected.  usage: connected LOG WORDS
connected() {
	file_has "$1.server" "$2" && file_has "$1.client" "$2"
}

# softrvt1 (ns1, w0) <-> softrvt2 (ns2, w1)
ss_up() { wire_ns_pair ns1 w0 softrvt1 ns2 w1 softrvt2 12; }
# rxe0 (init, x0) <-> softrvt3 (ns3, x1)
sr_up() { wire_rxe_pair; }

# Whatever a round left: devices, links, namespaces.
all_down() {
	local d
	for d in softrvt1 softrvt2 softrvt3 rxe0; do
		has_ibdev $d && timeout -k 5 60 rdma link delete $d 2>/dev/null
	done
	ip link del x0 2>/dev/null
	for d in ns1 ns2 ns3; do
		[ -e /run/netns/$d ] && ip netns del $d
	done
	wait_secs 30 wire_devices_gone
}

# Both ends of one program in the initial namespace: the server on
# SDEV, the client on CDEV.  Sets spid, cpid.
# usage: start_app PROG LOGBASE SDEV SADDR CDEV CADDR
start_app() {
	local prog=$1 log=$2 sdev=$3 saddr=$4 cdev=$5 caddr=$6
	local sgid cgid args sargs cargs mark
	sgid=$(gid_index "$sdev" "$saddr")
	cgid=$(gid_index "$cdev" "$caddr")
	case $prog in
	wire_xfer)
		# Longer than any round, with a watchdog the round outlives.
		args=(tests/wire_xfer -s 128M -m 64K -t 600)
		sargs=(-d "$sdev" -g "$sgid")
		cargs=(-d "$cdev" -g "$cgid")
		mark="wire_xfer: remote"
		;;
	write_bw)
		args=(ib_write_bw -F -s 65536 -n 100000000)
		sargs=(-d "$sdev" -x "$sgid")
		cargs=(-d "$cdev" -x "$cgid")
		mark="remote address"
		;;
	esac
	timeout -k 10 "$app_timeout" stdbuf -oL "${args[@]}" "${sargs[@]}" \
		> "$log.server" 2>&1 &
	spid=$!
	if ! wait_secs 30 tcp_listening 18515; then
		cpid=
		return 1
	fi
	timeout -k 10 "$app_timeout" stdbuf -oL "${args[@]}" "${cargs[@]}" \
		$CTL > "$log.client" 2>&1 &
	cpid=$!
	wait_secs 30 connected "$log" "$mark"
}

# What a program's exit status says: error (good), hang, or success.
verdict() {
	case $1 in
	0) echo "exit 0: it was never disturbed" ;;
	124 | 137) echo "timeout: it hung" ;;
	*) echo "error $1" ;;
	esac
}
app_ok() { [ "$1" != 0 ] && [ "$1" != 124 ] && [ "$1" != 137 ]; }
both_ok() { app_ok "$1" && app_ok "$2"; }

# The criteria of a round, and in how many rounds each failed.
criteria=(teardown apps gone module splat)
declare -A what=(
	[teardown]="the teardown succeeds"
	[apps]="both programs end with an error, not a hang"
	[gone]="the device goes"
	[module]="softrvt unloads and loads again"
	[splat]="no kernel splat"
)
declare -A failed
judge() { # CRITERION COMMAND...
	local c=$1
	shift
	"$@" && return 0
	failed[$c]=$((${failed[$c]:-0} + 1))
	echo "#   failed: ${what[$c]}"
	return 1
}

# One round.  usage: round PAIR ACTION N
# PAIR ss: softrvt1 <-> softrvt2; sr: rxe0 <-> softrvt3.
round() {
	local pair=$1 action=$2 n=$3 app target ns nd log
	local t0 t1 arc crc src lines sdev saddr cdev caddr c
	log=$LOG/${pair}_${action}_$n
	spid='' cpid=''
	app=wire_xfer
	[ $((n % 2)) = 1 ] && app=write_bw
	if [ "$pair" = ss ]; then
		# Alternate which end loses its device.
		if [ $((n % 2)) = 0 ]; then
			target=softrvt1 ns=ns1 nd=w0
		else
			target=softrvt2 ns=ns2 nd=w1
		fi
		sdev=softrvt1 saddr=198.18.12.1 cdev=softrvt2 caddr=198.18.12.2
	else
		target=softrvt3 ns=ns3 nd=x1
		# softrvt serves in even rounds, rxe in odd ones.
		if [ $((n % 2)) = 0 ]; then
			sdev=softrvt3 saddr=198.18.13.2 cdev=rxe0 caddr=198.18.13.1
		else
			sdev=rxe0 saddr=198.18.13.1 cdev=softrvt3 caddr=198.18.13.2
		fi
	fi
	lines=$(dmesg | wc -l)
	if ! "${pair}_up" ||
	   ! start_app $app "$log" $sdev $saddr $cdev $caddr; then
		echo "# round $n: no $app running between $sdev and $cdev"
		tail -n 3 "$log.server" "$log.client" 2>/dev/null
		[ -n "$spid$cpid" ] && kill $spid $cpid 2>/dev/null
		wait
		for c in "${criteria[@]}"; do
			failed[$c]=$((${failed[$c]:-0} + 1))
		done
		all_down
		return
	fi
	# Traffic for a while: 1 to 3 s, so that the phases differ.
	sleep $((1 + n % 3))

	t0=$(date +%s%N)
	case $action in
	link) timeout -k 5 $((app_timeout + 30)) rdma link delete $target ;;
	netdev) timeout -k 5 $((app_timeout + 30)) ip -n $ns link del $nd ;;
	netns) ip netns del $ns ;;
	rmmod) timeout -k 5 $((app_timeout + 30)) rmmod softrvt ;;
	esac > "$log.action" 2>&1
	arc=$?
	t1=$(date +%s%N)
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	echo "# round $n ($app, $target): $action rc $arc in $(((t1 - t0) / 1000000)) ms; server $(verdict $src), client $(verdict $crc); all over in $((($(date +%s%N) - t0) / 1000000)) ms"
	judge teardown [ $arc = 0 ] || cat "$log.action"
	if ! judge apps both_ok $src $crc; then
		tail -n 3 "$log.server" "$log.client"
	fi
	if [ "$action" = rmmod ]; then
		judge gone wait_secs 30 eval '[ ! -e /sys/module/softrvt ]'
	else
		judge gone wait_secs 30 no_ibdev $target
	fi
	all_down
	# Nothing may hold the module after a round.
	rmmod softrvt 2>/dev/null
	judge module eval '[ ! -e /sys/module/softrvt ] && modprobe softrvt'
	if new_splats "$lines" > "$log.splat"; then
		judge splat false
		head -n 20 "$log.splat"
	fi
}

# One line per criterion for the rounds of a pair and an action.
report() { # NAME
	local c
	for c in "${criteria[@]}"; do
		if [ "${failed[$c]:-0}" = 0 ]; then
			pass "$1: ${what[$c]}"
		else
			echo "# $1: ${what[$c]}: failed in ${failed[$c]} of $rounds rounds"
			fail "$1: ${what[$c]}"
		fi
	done
	failed=()
}

start=$(date +%s)
ip addr add $CTL/32 dev lo
modprobe softrvt
for pair in ${TEARDOWN_PAIRS:-ss sr}; do
	# The round number picks the program and the end that loses its
	# device; starting each action at its own number covers both
	# programs and both ends even with one round of each.
	k=0
	actions=${TEARDOWN_ACTIONS:-link netdev netns rmmod}
	# make check: each action once, two on each pair (a round costs
	# ~45 s under TCG, most of it bringing the devices up and down);
	# check-full: every action on both pairs, 20 rounds each.
	if [ -z "${SOFTRVT_FULL:-}" ] && [ -z "${TEARDOWN_ACTIONS:-}" ]; then
		case $pair in
		ss) actions="link rmmod" ;;
		sr) actions="netdev netns" ;;
		esac
	fi
	for action in $actions; do
		section "teardown $pair $action: $rounds rounds"
		t=$SECONDS
		for ((i = k; i < k + rounds; i++)); do
			round "$pair" "$action" $i
		done
		k=$((k + 1))
		echo "# teardown $pair $action: $((SECONDS - t)) s"
		report "teardown $pair $action"
	done
done

section "teardown: the devices still work"
if ss_up; then
	pass "teardown: a fresh pair comes up"
	WIRE_TCP_ADDR=
	wire_pair "teardown: rc_pingpong afterwards" "iters in" \
		ns1 softrvt1 198.18.12.1 ns2 softrvt2 198.18.12.2 \
		ibv_rc_pingpong -d %D -g %G -s 4096 -n 20 -c
else
	fail "teardown: a fresh pair comes up"
fi
all_down
ip addr del $CTL/32 dev lo
modprobe -r rdma_rxe 2>/dev/null
echo "# teardown tests: $rounds rounds of each, $(($(date +%s) - start)) s"
true
