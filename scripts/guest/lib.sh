# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers for the in-guest test scripts; sourced.

OUT=${OUT:-/mnt/out}

# Builtins only: a fork and exec of tee per result cost a tenth of a
# second each under TCG, and the suite records about a thousand.
pass() { echo "PASS $*"; echo "PASS $*" >> "$OUT/results"; }
fail() { echo "FAIL $*"; echo "FAIL $*" >> "$OUT/results"; }
# Each "ok"/"not ok" line of a TAP file becomes a result named PREFIX: ...
tap_results() { # prefix file
	local line
	while read -r line; do
		case "$line" in
		"not ok "*) fail "$1: ${line#not ok * - }" ;;
		"ok "*) pass "$1: ${line#ok * - }" ;;
		esac
	done < "$2"
}
# Run a TAP-printing program into LOG, show it, count its lines as results
# and its exit status as one more, "PREFIX: exits 0".
tap_prog() { # prefix log command...
	local prefix=$1 log=$2 rc
	shift 2
	"$@" > "$log" 2>&1
	rc=$?
	cat "$log"
	tap_results "$prefix" "$log"
	check "$prefix: exits 0" [ "$rc" = 0 ]
}
# A section's title on the console, and its start in $OUT/sections
# ("EPOCH title"), from which the host tells where a run spent its time.
section() { # title
	echo "== $*"
	printf '%(%s)T %s\n' -1 "$*" >> "$OUT/sections"
}
check() { # name command...
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# Wait up to $1 tenths of a second for a command to succeed.
wait_for() {
	local n=$1
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# Whether the network namespace of process PID (default: this shell) has a
# TCP listener on PORT.  Reads /proc with shell builtins: `ss` takes over a
# second a call under TCG, and the test servers are polled for.
tcp_listening() { # PORT [PID]
	local net=/proc/${2:-self}/net port f sl loc rem st rest
	printf -v port '%04X' "$1"
	for f in "$net/tcp" "$net/tcp6"; do
		[ -r "$f" ] || continue
		while read -r sl loc rem st rest; do
			[ "$st" = 0A ] && [ "${loc##*:}" = "$port" ] && return 0
		done < "$f"
	done
	return 1
}

# Whether process PID still runs: an exited child that was not waited
# for is a zombie, which kill -0 still finds.
pid_running() { # PID
	local key state _
	[ -r "/proc/$1/status" ] || return 1
	while read -r key state _; do
		[ "$key" = State: ] && { [ "$state" != Z ]; return; }
	done < "/proc/$1/status"
	return 1
}

# Only the libibverbs providers the tests use: libibverbs loads every one
# listed in /etc/libibverbs.d when a device is new to it, a second for
# each program under TCG.  softrvt's comes from RDMAV_DRIVERS; the stock
# guest's tests keep Debian's whole list.
only_rxe_provider() {
	mkdir -p /run/libibverbs.d &&
		cp /etc/libibverbs.d/rxe.driver /run/libibverbs.d/ &&
		mount --bind /run/libibverbs.d /etc/libibverbs.d
}

link_state() { # dev -> ACTIVE/DOWN
	rdma link show "$1/1" 2>/dev/null | sed -n 's/.* state \([A-Z]*\).*/\1/p'
}
has_ibdev() { [ -e "/sys/class/infiniband/$1" ]; }
no_ibdev() { [ ! -e "/sys/class/infiniband/$1" ]; }
state_is() { [ "$(link_state "$1")" = "$2" ]; }

# A busy loop on every CPU for at most SECONDS: the engines, softirqs
# and rxe's tasks then wait their turn, as on a loaded host.
CPU_HOGS=()
cpu_hogs() { # SECONDS
	local _
	for _ in $(seq "$(nproc)"); do
		timeout "$1" sh -c 'while :; do :; done' &
		CPU_HOGS+=($!)
	done
}
cpu_hogs_stop() {
	kill "${CPU_HOGS[@]}" 2>/dev/null
	wait "${CPU_HOGS[@]}" 2>/dev/null
	CPU_HOGS=()
}

veth() { # a b
	ip link add "$1" type veth peer name "$2" &&
		ip link set "$1" up && ip link set "$2" up
}

# What no kernel log may show after a test: a splat of any kind.
SPLAT_RE='WARNING:|BUG:|KASAN|UBSAN|possible circular|possible recursive|INFO: task .* blocked|Oops|general protection|refcount_t:|list_(add|del) corruption|soft lockup|rcu_sched self-detected|RCU stall'

# Kernel log lines with a splat since the line count $1.
new_splats() {
	dmesg | tail -n +"$(($1 + 1))" | grep -E "$SPLAT_RE"
}

# PASS when the kernel logged no splat since the line count $2.
check_no_splat() { # label log0
	local splats
	splats=$(new_splats "$2")
	[ -n "$splats" ] && printf '%s\n' "$splats"
	check "$1: no kernel splat" [ -z "$splats" ]
}

# fio writes NAME's pattern on DEV and reads it back, crc32c in every block.
fio_verify_dev() { # dev name rw bs mib
	timeout 600 fio --name="$2" --filename="$1" --direct=1 --allow_file_create=0 \
		--ioengine=libaio --iodepth=16 --rw="$3" --bs="$4" \
		--size="$5M" --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
		--output="/tmp/fio-$2.log" || { cat "/tmp/fio-$2.log"; return 1; }
	grep -E '^ *(write|read):' "/tmp/fio-$2.log"
}
