# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two guests as two hosts, seen from inside one of them; sourced after
# lib.sh and wire-setup.sh.
#
# scripts/vm-pair.sh boots two guests and runs the same command in both,
# with SOFTRVT_PAIR=a in one and SOFTRVT_PAIR=b in the other.  Their eth0
# are the two ends of one link (a QEMU socket netdev, MTU 9000):
#
#   guest a: eth0 198.18.50.1/24  <---->  guest b: eth0 198.18.50.2/24
#
# The two scripts run in lockstep: both call pair_sync with the same steps
# in the same order, and each waits there for the other (guest a runs the
# meeting point, pair-sync.py).  A step the other guest does not reach in
# time, or a different step, is a FAIL line and puts the pair out of
# step: every later pair_sync fails at once, so that a lost guest costs
# one deadline, not one per step.

PAIR_ROLE=${SOFTRVT_PAIR:-}
case $PAIR_ROLE in
a) PAIR_OTHER=b PAIR_ADDR=198.18.50.1 PAIR_PEER=198.18.50.2 ;;
b) PAIR_OTHER=a PAIR_ADDR=198.18.50.2 PAIR_PEER=198.18.50.1 ;;
*)
	echo "pair-lib.sh: SOFTRVT_PAIR is '$PAIR_ROLE', not a or b: run by scripts/vm-pair.sh" >&2
	return 2
	;;
esac
PAIR_SYNC_ADDR=198.18.50.1
PAIR_SYNC_PORT=7471
# Seconds a guest waits for the other at a step, unless the step says.
PAIR_SYNC_TIMEOUT=${PAIR_SYNC_TIMEOUT:-300}
PAIR_BROKEN=""
PAIR_DEV=""
PAIR_GID=""

# Under TCG every fork takes a good part of a second: time and poll with
# bash's builtins.
now_us() { REPLY=${EPOCHREALTIME/[.,]/}; }
since() { # START-US -> REPLY, seconds since then with two decimals
	local t
	now_us
	t=$(((REPLY - $1) / 10000))
	printf -v REPLY '%d.%02d' $((t / 100)) $((t % 100))
}

pair_out_of_step() { # STEP REASON
	PAIR_BROKEN="at '$1': $2"
	fail "lockstep: guest $PAIR_ROLE meets guest $PAIR_OTHER at '$1' ($2)"
}

# Wait for the other guest at STEP; its VALUE comes back in REPLY.
# VALUE is one word.  Fails (and puts the pair out of step) if the other
# guest does not reach STEP within TIMEOUT seconds or reaches another.
pair_sync() { # STEP [VALUE] [TIMEOUT]
	local step=$1 value=${2:--} t=${3:-$PAIR_SYNC_TIMEOUT}
	local start=$SECONDS line="" rc left

	REPLY=""
	if [ -n "$PAIR_BROKEN" ]; then
		echo "pair: not waiting at '$step': out of step since $PAIR_BROKEN"
		return 1
	fi
	# Until guest a's meeting point listens (both guests boot at once).
	until { exec 8<>"/dev/tcp/$PAIR_SYNC_ADDR/$PAIR_SYNC_PORT"; } 2>/dev/null; do
		if [ $((SECONDS - start)) -ge "$t" ]; then
			pair_out_of_step "$step" "no meeting point at $PAIR_SYNC_ADDR:$PAIR_SYNC_PORT within ${t}s"
			return 1
		fi
		sleep 0.5
	done
	printf '%s\t%s\t%s\n' "$PAIR_ROLE" "$value" "$step" >&8
	# Say that this guest waits, now and then: the host's watchdog takes a
	# silent guest for a stuck one.
	while :; do
		left=$((t - (SECONDS - start)))
		[ "$left" -gt 30 ] && left=30
		[ "$left" -lt 1 ] && left=1
		read -r -t "$left" -u 8 line
		rc=$?
		[ "$rc" = 0 ] && break
		if [ "$rc" -le 128 ]; then
			exec 8>&-
			pair_out_of_step "$step" "the meeting point hung up: guest a is gone?"
			return 1
		fi
		if [ $((SECONDS - start)) -ge "$t" ]; then
			exec 8>&-
			pair_out_of_step "$step" "guest $PAIR_OTHER did not come within ${t}s"
			return 1
		fi
		echo "pair: guest $PAIR_ROLE waits for guest $PAIR_OTHER at '$step' ($((SECONDS - start))s)"
	done
	exec 8>&-
	case $line in
	OK$'\t'*)
		REPLY=${line#OK$'\t'}
		return 0
		;;
	MISMATCH$'\t'*)
		pair_out_of_step "$step" "guest $PAIR_OTHER is at '${line#MISMATCH$'\t'}'"
		;;
	*)
		pair_out_of_step "$step" "the meeting point said '$line'"
		;;
	esac
	return 1
}

# Both guests: eth0 at MTU 9000 with this guest's address; guest a starts
# the meeting point; then both meet (the other guest may still be
# booting).
pair_up() {
	if ! { ip link set eth0 mtu 9000 &&
		ip addr add "$PAIR_ADDR/24" dev eth0 &&
		ip link set eth0 up; }; then
		pair_out_of_step "eth0 up" "eth0 did not take $PAIR_ADDR at MTU 9000"
		ip link show
		return 1
	fi
	# The debug guest's rdma-core has every provider; softrvt's comes
	# from the repository (RDMAV_DRIVERS).  A stock guest's are installed.
	[ "${PAIR_PROVIDERS:-}" = installed ] || only_rxe_provider
	if [ "$PAIR_ROLE" = a ]; then
		scripts/guest/pair-sync.py "$PAIR_SYNC_ADDR" "$PAIR_SYNC_PORT" \
			2> "$OUT/pair-sync.log" &
		PAIR_SYNC_PID=$!
	fi
	pair_sync "eth0 up" - 600
}

# The end of the pair: both guests are done with the link.
pair_down() {
	local n=100
	pair_sync "the end"
	[ -n "${PAIR_SYNC_PID:-}" ] || return 0
	# The meeting point exits once it has answered both guests: killed as
	# soon as guest a has its answer, it could go before guest b had his.
	while [ $n -gt 0 ] && pid_running "$PAIR_SYNC_PID"; do
		sleep 0.1
		n=$((n - 1))
	done
	kill "$PAIR_SYNC_PID" 2>/dev/null
	true
}

# This guest's RDMA device on eth0: KIND is softrvt or rxe.  Only one at a
# time: both drivers take UDP port 4791 of the initial namespace.
pair_dev_up() { # KIND NAME
	case $1 in
	rxe) modprobe rdma_rxe || return 1 ;;
	esac
	rdma link add "$2" type "$1" netdev eth0 &&
		wait_for 100 state_is "$2" ACTIVE &&
		wait_for 100 has_gid "$2" "$PAIR_ADDR" || return 1
	PAIR_DEV=$2
	PAIR_GID=$(gid_index "$2" "$PAIR_ADDR")
}

pair_dev_down() {
	[ -n "$PAIR_DEV" ] || return 0
	rdma link delete "$PAIR_DEV" && wait_for 100 no_ibdev "$PAIR_DEV" ||
		return 1
	PAIR_DEV=""
}

# What the server side of pair_run waits for before the client starts:
# a TCP listener on port 18515 (0x4853), or an RDMA CM id in LISTEN.
pair_ready_tcp() { tcp_listening 18515; }
pair_ready_cm() {
	rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*comm $1"
}

# A server in one guest, its client in the other, both on this pair's
# devices (pair_dev_up).  In the arguments, "%G" becomes the side's GID
# index, "%D" its device (as in wire_pair), "%S" the server's address and
# "%A" the side's own.
# The client's guest records the result: both must exit 0 and the
# client's output must match WANT.  READY is how the server shows that it
# is listening: tcp (port 18515, the verbs tools' exchange) or cm (an
# RDMA CM id in LISTEN).  Each side runs for at most PAIR_RUN_TIMEOUT
# seconds (default 120).
# usage: pair_run NAME WANT SERVER-ROLE READY SERVER-CMD... -- CLIENT-CMD...
pair_run() {
	local name=$1 want=$2 srole=$3 ready=$4 t=${PAIR_RUN_TIMEOUT:-120}
	local saddr=$PAIR_ADDR cmd=() args=() a log pid rc n t0 t1 waited
	shift 4
	[ "$srole" = "$PAIR_ROLE" ] || saddr=$PAIR_PEER
	if [ "$srole" = "$PAIR_ROLE" ]; then
		while [ "$1" != -- ]; do cmd+=("$1"); shift; done
	else
		while [ "$1" != -- ]; do shift; done
		shift
		cmd=("$@")
	fi
	wire_subst "$PAIR_DEV" "$PAIR_GID" "${cmd[@]}"
	for a in "${WIRE_ARGS[@]}"; do
		a=${a//%S/$saddr}
		args+=("${a//%A/$PAIR_ADDR}")
	done
	wire_log "$name"
	log=$REPLY

	now_us
	t0=$REPLY
	if [ "$srole" = "$PAIR_ROLE" ]; then
		echo "pair: $name: server on guest $PAIR_ROLE: ${args[*]}"
		timeout "$t" "${args[@]}" > "$log.server" 2>&1 &
		pid=$!
		# Up to 30 s, unless the server ends before it listens.
		rc=0 n=300
		until "pair_ready_$ready" "${args[0]##*/}"; do
			if [ $n -le 0 ] || ! kill -0 "$pid" 2>/dev/null; then
				rc=1
				break
			fi
			sleep 0.1
			n=$((n - 1))
		done
		since "$t0"
		waited=$REPLY
		[ "$rc" = 0 ] && echo "# $name: the server listened after ${waited}s"
		if ! pair_sync "$name: server ready" "$rc" || [ "$rc" != 0 ]; then
			kill "$pid" 2>/dev/null
			wait "$pid"
			[ "$rc" = 0 ] || echo "--- $name: the server did not listen within ${waited}s"
			tail -n 5 "$log.server"
			return
		fi
		pair_sync "$name: client done" - $((t + 60)) || {
			kill "$pid" 2>/dev/null
			wait "$pid"
			return
		}
		# The client is done: the server follows within seconds, or
		# is stopped after 30 (by the clock: under TCG a turn of this
		# loop takes longer than its sleep), well before the client's
		# guest stops waiting for it.
		now_us
		t1=$REPLY
		n=$((SECONDS + 30))
		while [ $SECONDS -lt $n ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		wait "$pid"
		rc=$?
		since "$t1"
		echo "# $name: the server ended ${REPLY}s after the client"
		[ "$rc" = 0 ] || { echo "--- $name: server rc=$rc"; tail -n 5 "$log.server"; }
		pair_sync "$name: server done" "$rc"
		return
	fi

	if ! pair_sync "$name: server ready"; then
		fail "$name"
		return
	fi
	if [ "$REPLY" != 0 ]; then
		fail "$name (the server in guest $PAIR_OTHER did not listen)"
		return
	fi
	echo "pair: $name: client on guest $PAIR_ROLE: ${args[*]}"
	now_us
	t1=$REPLY
	timeout "$t" "${args[@]}" > "$log.client" 2>&1
	rc=$?
	since "$t1"
	echo "# $name: the client ran ${REPLY}s"
	if ! pair_sync "$name: client done" "$rc" ||
		! pair_sync "$name: server done" - 60; then
		fail "$name"
		return
	fi
	wire_judge "$name" "$want" "$log" "$rc" "$REPLY"
	since "$t0"
	echo "# $name: ${REPLY}s in all"
}

# The same program on both sides, the client given the server's address.
# usage: pair_prog NAME WANT SERVER-ROLE PROG ARGS...
pair_prog() {
	local name=$1 want=$2 srole=$3
	shift 3
	pair_run "$name" "$want" "$srole" tcp "$@" -- "$@" %S
}
