#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Boot two guests side by side, each its own kernel, joined by one link,
# and run one command in both: two hosts, for the tests and the bench.
#
# usage: vm-pair.sh [-k KDIR] [-t SECONDS] [-o OUTDIR] [-c CPU] [-a ARGS]
#                   [-l] [-S A:B] -- COMMAND...
#
# Each guest is a scripts/vm.sh guest (the options are vm.sh's) with one
# virtual CPU, as the host has two cores.  -S A:B boots stock guests
# instead (vm.sh -S): guest a the Debian release A of
# scripts/build-stock-root.sh, guest b the release B.  Their eth0 are virtio-net
# devices on one QEMU socket netdev: guest a's QEMU listens on a free TCP
# port of 127.0.0.1, guest b's connects to it; the link takes frames of
# up to 9000 bytes.  COMMAND runs in both guests with SOFTRVT_PAIR=a or
# SOFTRVT_PAIR=b in its environment (scripts/guest/pair-lib.sh takes the
# guest's role and address from it).  Each guest has its own out folder,
# OUTDIR/a and OUTDIR/b (results, kernel log, kmemleak report, verdict),
# and vm.sh's output in OUTDIR/a.log and OUTDIR/b.log, shown here too,
# each line behind "a| " or "b| ".
#
# The link's TCP connection lives in a network namespace of the pair's
# own (below), so that nothing of the host's network sees it or is
# changed for it.
#
# Each guest keeps vm.sh's watchdog.  Once one of them fails (its command
# exits non-zero, or the watchdog stops it, or the guest dies), the other
# is stopped too, its verdict naming the one that failed; once one ends
# well, the other has SOFTRVT_PAIR_GRACE seconds (default 300) to end as
# well.  The first failure goes to OUTDIR/verdict and stderr, naming the
# guest.
#
# The pair takes the guest lock once, for both guests.  It runs under TCG
# unless SOFTRVT_ACCEL=kvm: vm.sh meets a KVM failure in the middle of a
# run by booting again under TCG, which would leave the other guest
# alone.
#
# Exit status: 0 if the command exited 0 in both guests; else the status
# of the guest that failed first (vm.sh's: 124 timeout, 125 died, 126
# stopped by its watchdog).
set -uo pipefail

. "$(dirname "$0")/common.sh"

# The link's TCP connection runs in a network namespace of the pair's
# own, where 127.0.0.1 acknowledges at once (the route's quickack).
# QEMU sets TCP_NODELAY on the connecting side only: on the listening
# side a frame sent right after another waited for the first one's ACK,
# which the peer delays by 40 ms when it has nothing to send, and every
# exchange of small packets between the guests took ~48 ms.
if [ -z "${SOFTRVT_PAIR_NETNS:-}" ]; then
	export SOFTRVT_PAIR_NETNS=1
	ns=(unshare --net)
	[ "$(id -u)" = 0 ] || ns=(unshare --map-root-user --net)
	if "${ns[@]}" true 2>/dev/null; then
		exec "${ns[@]}" -- "$0" "$@"
	fi
	SOFTRVT_PAIR_NETNS=none
	log "pair: no network namespace of its own (unshare failed): the link keeps delayed ACKs"
elif [ "$SOFTRVT_PAIR_NETNS" = 1 ]; then
	ip link set lo up
	ip route replace local 127.0.0.1 dev lo table local proto kernel \
		scope host src 127.0.0.1 quickack 1
fi

kdir=""
out=""
opts=()
declare -A stock=()
while getopts "k:t:o:c:a:lS:" opt; do
	case $opt in
	k) kdir=$OPTARG ;;
	S) stock[a]=${OPTARG%%:*} stock[b]=${OPTARG#*:} ;;
	o) out=$OPTARG ;;
	t | c | a) opts+=("-$opt" "$OPTARG") ;;
	l) opts+=(-l) ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { log "usage: vm-pair.sh [-k KDIR] [-t S] [-o DIR] -- CMD"; exit 2; }

grace=${SOFTRVT_PAIR_GRACE:-300}
export SOFTRVT_ACCEL=${SOFTRVT_ACCEL:-tcg}

exec 9> "${SOFTRVT_GUEST_LOCK:-$CACHE/guest.lock}"
if ! flock -n 9; then
	log "waiting for another guest to finish"
	flock 9
fi

if [ ${#stock[@]} = 0 ]; then
	[ -n "$kdir" ] || kdir=$("$TOP/scripts/build-kernel.sh" debug) || exit 1
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/softrvt-pair.XXXXXX)
mkdir -p "$out/a" "$out/b"
rm -f "$out/verdict"
work=$(mktemp -d /tmp/softrvt-pair-run.XXXXXX)
trap 'rm -rf "$work"' EXIT

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
port_taken() { ss -Htan "sport = :$1" 2>/dev/null | grep -q .; }

# A port nobody uses now: QEMU fails at once if it is taken meanwhile.
port=""
for _ in $(seq 100); do
	p=$((20000 + RANDOM % 40000))
	port_taken "$p" || { port=$p; break; }
done
[ -n "$port" ] || { log "pair: no free TCP port found"; exit 1; }

declare -A pid rc ended
start_guest() { # a|b listen|connect MAC COMMAND...
	local g=$1 side=$2 mac=$3 boot=(-k "$kdir")
	shift 3
	[ -z "${stock[$g]:-}" ] || boot=(-S)
	: > "$out/$g.log"
	# Each vm.sh has a lock of its own: the pair holds the real one.
	SOFTRVT_GUEST_LOCK=$work/lock.$g SOFTRVT_STOP=$work/stop.$g \
		SOFTRVT_STOCK=${stock[$g]:-} \
		"$TOP/scripts/vm.sh" "${boot[@]}" -o "$out/$g" -s 1 "${opts[@]}" \
		-q "-netdev socket,id=n0,$side=127.0.0.1:$port -device virtio-net-pci,netdev=n0,mac=$mac,host_mtu=9000" \
		-- "export SOFTRVT_PAIR=$g; $*" > "$out/$g.log" 2>&1 9>&- &
	pid[$g]=$!
	tail -n +1 -f --pid="${pid[$g]}" "$out/$g.log" 2>/dev/null 9>&- |
		sed -u "s/^/$g| /" &
}

stop_guest() { # a|b reason
	[ -n "${rc[$1]:-}" ] || [ -f "$work/stop.$1" ] || echo "$2" > "$work/stop.$1"
}

# What became of guest G, in one line.
cause() { # g
	if [ -f "$out/$1/verdict" ]; then
		cat "$out/$1/verdict"
	else
		echo "its command exited with status ${rc[$1]}"
	fi
}

# Guest G has ended: if it failed first, stop the other one.
first=""
guest_ended() { # g other
	local g=$1 other=$2
	ended[$g]=$SECONDS
	log "pair: guest $g ended with status ${rc[$g]} ($(cause "$g"))"
	if [ "${rc[$g]}" != 0 ] && [ -z "$first" ]; then
		first=$g
		echo "guest $g failed: $(cause "$g")" > "$out/verdict"
		stop_guest "$other" "guest $g failed: $(cause "$g")"
	fi
}

trap 'stop_guest a "the pair run was interrupted"; stop_guest b "the pair run was interrupted"' INT TERM

t0=$SECONDS
log "pair: guest a listens on 127.0.0.1:$port, guest b connects to it"
start_guest a listen 52:54:00:50:00:01 "$@"
# Guest b's QEMU would fail to connect before guest a's listens.
until listening "$port"; do
	if ! kill -0 "${pid[a]}" 2>/dev/null || [ $((SECONDS - t0)) -ge 300 ]; then
		stop_guest a "its QEMU did not listen on port $port within $((SECONDS - t0))s"
		wait "${pid[a]}"
		rc[a]=$?
		echo "guest a failed: its QEMU did not listen on 127.0.0.1:$port ($(cause a))" |
			tee "$out/verdict" >&2
		[ "${rc[a]}" = 0 ] && exit 125
		exit "${rc[a]}"
	fi
	sleep 0.2
done
start_guest b connect 52:54:00:50:00:02 "$@"

while [ -z "${rc[a]:-}" ] || [ -z "${rc[b]:-}" ]; do
	sleep 1
	for g in a b; do
		other=$([ "$g" = a ] && echo b || echo a)
		if [ -z "${rc[$g]:-}" ] && ! kill -0 "${pid[$g]}" 2>/dev/null; then
			wait "${pid[$g]}"
			rc[$g]=$?
			guest_ended "$g" "$other"
		fi
		if [ -n "${ended[$g]:-}" ] && [ -z "${rc[$other]:-}" ] &&
			[ $((SECONDS - ended[$g])) -ge "$grace" ]; then
			stop_guest "$other" "still running ${grace}s after guest $g ended"
		fi
	done
done
wait

log "pair: both guests ended after $((SECONDS - t0))s: a status ${rc[a]}, b status ${rc[b]}"
if [ -n "$first" ]; then
	log "pair: $(cat "$out/verdict")"
	exit "${rc[$first]}"
fi
exit 0
