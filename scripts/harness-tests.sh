#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Tests of the test harness itself, on the host: the Debian mirror taken
# from apt's sources, the KVM probe and its fallback to TCG, the watchdog
# that stops a guest that hangs, the pair of guests that stops as one,
# the meeting point of the pair's scripts, the clearing of a build
# directory that a killed debootstrap left with mounts in it, and the
# instruction-counting plugin of `make bench`.  A broken
# KVM is played by scripts/harness/fake-qemu, so this runs on any machine.
#
# usage: harness-tests.sh KDIR [all|mirror|kvm|paused|sleeper|pair|pairsync|freshdir|plugin]
# Prints "PASS name"/"FAIL name" lines.
set -uo pipefail

. "$(dirname "$0")/common.sh"

kdir=$1
what=${2:-all}
work=$(mktemp -d /tmp/softrvt-harness.XXXXXX)
trap 'rm -rf "$work"' EXIT

result() { # name condition-status
	if [ "$2" = 0 ]; then echo "PASS harness: $1"; else echo "FAIL harness: $1"; fi
}

# vm.sh with the fake QEMU and a stand-in for /dev/kvm.  Sets rc, took.
fake_vm() { # name mode timeout cmd [env...]
	local name=$1 mode=$2 t=$3 cmd=$4 t0=$SECONDS
	shift 4
	mkdir -p "$work/$name"
	: > "$work/kvm"
	rc=0
	# The choice of accelerator is what these test: none is inherited.
	# The fake's "KVM" is TCG: a probe boot that passes takes a TCG
	# boot's time, minutes on a loaded host, not a real KVM's seconds.
	env -u SOFTRVT_ACCEL SOFTRVT_PROBE_TIMEOUT=600 \
		SOFTRVT_QEMU="$TOP/scripts/harness/fake-qemu" FAKE_KVM="$mode" \
		FAKE_KVM_STATE="$work/$name/fake-state" \
		SOFTRVT_KVM_DEV="$work/kvm" SOFTRVT_PROBE_CACHE="$work/$name" \
		"$@" "$TOP/scripts/vm.sh" -l -k "$kdir" -t "$t" -o "$work/$name/out" \
		-- "$cmd" > "$work/$name/log" 2>&1 || rc=$?
	took=$((SECONDS - t0))
}

show() { # name
	echo "--- harness $1: rc=$rc after ${took}s"
	grep -E '^\[softrvt\]|harness-ok' "$work/$1/log" | tail -n 8
}

accel_lines() { grep -c '^\[softrvt\] accel: ' "$work/$1/log"; }

mirror_tests() {
	local m=$work/apt ok=0 got
	mkdir -p "$m"/{list,sources,cloud,none}/sources.list.d
	cat > "$m/list/sources.list" <<-'EOF'
	# a comment
	deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://mirror.test/debian-security bookworm-security main
	deb-src http://src.test/debian bookworm main
	deb [ arch=amd64 ] http://mirror.test/debian/ bookworm main contrib
	EOF
	cat > "$m/sources/sources.list.d/debian.sources" <<-'EOF'
	Types: deb
	URIs: http://off.test/debian
	Suites: trixie
	Components: main
	Enabled: no

	Types: deb
	URIs: http://other.test/node
	Suites: nodistro
	Components: main

	Types: deb deb-src
	URIs: http://proxy.test:3142/debian
	Suites: trixie trixie-updates
	Components: contrib main
	EOF
	echo "http://cdn.test/debian priority:1" > "$m/mirrors"
	printf 'Types: deb\nURIs: mirror+file:%s\nSuites: bookworm\nComponents: main\n' \
		"$m/mirrors" > "$m/cloud/sources.list.d/debian.sources"
	echo "deb http://other.test/x nodistro main" > "$m/none/sources.list"
	for c in "list http://mirror.test/debian" "sources http://proxy.test:3142/debian" \
		 "cloud http://cdn.test/debian" "none "; do
		set -- $c
		got=$(SOFTRVT_APT_ETC=$m/$1 debian_mirror 2>/dev/null)
		if [ "$got" != "${2:-}" ]; then
			echo "--- mirror from $1: got '$got', want '${2:-}'"
			ok=1
		fi
	done
	result "the Debian mirror comes from apt's sources (one-line, deb822, mirror+file, none)" $ok
	grep -rqE 'https?://[a-z0-9.-]*debian\.org' "$TOP/scripts" "$TOP/Makefile" "$TOP/.ci"
	result "no script names a Debian mirror host" $((!$?))
}

kvm_tests() {
	# The issue's host: /dev/kvm is there, QEMU's KVM fails at once.
	fake_vm probe-fails broken 600 'echo harness-ok'
	show probe-fails
	[ "$rc" = 0 ] && grep -q '^harness-ok' "$work/probe-fails/log" &&
		[ "$(accel_lines probe-fails)" = 1 ] &&
		grep -q '^\[softrvt\] accel: TCG, because KVM failed its probe boot: KVM internal error' \
			"$work/probe-fails/log"
	result "a KVM that fails the probe boot: TCG, said in one line, the command runs" $?
	[ "$(cat "$work"/probe-fails/accel-* 2>/dev/null)" = tcg ]
	result "the probe's verdict is kept for this host's later boots" $?

	# Forced KVM that fails: stopped in seconds, the cause named.
	fake_vm forced-kvm broken 600 'echo harness-ok' SOFTRVT_ACCEL=kvm
	show forced-kvm
	# The watchdog's own count: the wall clock would include waiting for
	# the guest lock while another guest runs.
	stopped=$(sed -n 's/.*watchdog stopped the guest after \([0-9]*\)s: KVM internal error.*/\1/p' \
		"$work/forced-kvm/log" | head -n 1)
	[ "$rc" = 126 ] && [ -n "$stopped" ] && [ "$stopped" -lt 60 ] &&
		grep -q '^KVM internal error' "$work/forced-kvm/out/verdict"
	result "SOFTRVT_ACCEL=kvm on a failing KVM: stopped within a minute, cause named" $?

	# KVM passes the probe, then fails during the run: run again on TCG.
	fake_vm late late 600 'echo harness-ok'
	show late
	[ "$rc" = 0 ] && grep -q '^harness-ok' "$work/late/log" &&
		grep -q '^\[softrvt\] accel: KVM (the probe boot reached' "$work/late/log" &&
		grep -q '^\[softrvt\] accel: TCG from now on, because KVM failed during the run' \
			"$work/late/log"
	result "KVM that passes the probe and fails later: the run is repeated on TCG" $?
	[ "$(cat "$work"/late/accel-* 2>/dev/null)" = tcg ]
	result "KVM that failed during a run is not used again" $?

	# No /dev/kvm at all: TCG without a probe, in one line.
	mkdir -p "$work/nokvm"
	rc=0
	env -u SOFTRVT_ACCEL SOFTRVT_KVM_DEV="$work/absent" SOFTRVT_PROBE_CACHE="$work/nokvm" \
		"$TOP/scripts/vm.sh" -l -k "$kdir" -t 600 -o "$work/nokvm/out" -- \
		'echo harness-ok' > "$work/nokvm/log" 2>&1 || rc=$?
	[ "$rc" = 0 ] && [ "$(accel_lines nokvm)" = 1 ] &&
		grep -q '^\[softrvt\] accel: TCG (no usable' "$work/nokvm/log"
	result "no /dev/kvm: TCG, said in one line" $?
}

# Start a guest under TCG whose command prints MARKER and then sleeps for
# ever, in the background; return once MARKER is out or vm.sh is gone.
# Sets vpid and rc.  usage: hung_guest NAME MARKER [VAR=VALUE...]
# It may first wait for the guest lock, held by make check's stock guest.
hung_guest() {
	local name=$1 marker=$2 n=1800
	shift 2
	mkdir -p "$work/$name"
	rc=0
	env SOFTRVT_ACCEL=tcg "$@" "$TOP/scripts/vm.sh" -l -k "$kdir" -t 1800 \
		-o "$work/$name/out" -- "echo $marker; sleep infinity" \
		> "$work/$name/log" 2>&1 &
	vpid=$!
	while [ $n -gt 0 ] && kill -0 "$vpid" 2>/dev/null &&
		! grep -q "^$marker" "$work/$name/log"; do
		sleep 1
		n=$((n - 1))
	done
}

# A guest whose kernel stops (QEMU paused, as after a KVM error it did
# not report): caught by the missing heartbeat.
paused_test() {
	local d=$work/paused t0=$SECONDS
	hung_guest paused harness-pausing SOFTRVT_HEARTBEAT_STALL=30
	kill -STOP "$(cat "$d/out/qemu.pid" 2>/dev/null)" 2>/dev/null
	local paused=$SECONDS
	wait "$vpid" || rc=$?
	took=$((SECONDS - paused))
	echo "--- harness paused: rc=$rc, stopped ${took}s after the pause ($((SECONDS - t0))s in all)"
	grep -E '^\[softrvt\] (watchdog|accel)' "$d/log"
	[ "$rc" = 126 ] && [ "$took" -lt 90 ] &&
		grep -q 'wedged or paused: no heartbeat' "$d/out/verdict"
	result "a paused guest is stopped for its missing heartbeat, cause named" $?
}

# A test that sleeps for ever: stopped and named within a minute of the
# stall threshold after its last sign of life.  SOFTRVT_FULL=1 (check-full)
# at the default threshold, 240 s: within 5 minutes; make check at 60 s,
# as make check's guests wait for this one's guest lock meanwhile.
sleeper_test() {
	local d=$work/sleeper stall=60
	[ "${SOFTRVT_FULL:-}" ] && stall=240
	hung_guest sleeper harness-sleeping SOFTRVT_STALL=$stall
	local asleep=$SECONDS
	wait "$vpid" || rc=$?
	took=$((SECONDS - asleep))
	echo "--- harness sleeper: rc=$rc, stopped ${took}s after the command's last output"
	grep -E '^\[softrvt\] (watchdog|accel)' "$d/log"
	[ "$rc" = 126 ] && grep -q "^harness-sleeping" "$d/log" &&
		[ "$took" -lt $((stall + 60)) ] &&
		grep -q '^no progress for' "$d/out/verdict"
	result "a test that sleeps for ever is stopped within $((stall + 60)) s (stall threshold ${stall} s), cause named" $?
}

# Two guests of vm-pair.sh, both at a command that sleeps for ever; then
# guest b's kernel stops (its QEMU paused).  b's watchdog stops it for its
# missing heartbeat, the pair stops a, and the pair's verdict names b.
pair_test() {
	# Up to an hour for both to start: the pair may wait for the guest
	# lock while another guest of this machine runs.
	local d=$work/pair t0=$SECONDS n=3600 paused
	mkdir -p "$d"
	rc=0
	SOFTRVT_HEARTBEAT_STALL=30 "$TOP/scripts/vm-pair.sh" -l -k "$kdir" \
		-t 1800 -o "$d/out" -- 'echo "harness-pair-$SOFTRVT_PAIR"; sleep infinity' \
		> "$d/log" 2>&1 &
	vpid=$!
	while [ $n -gt 0 ] && kill -0 "$vpid" 2>/dev/null &&
		! { grep -q '^a| harness-pair-a' "$d/log" &&
			grep -q '^b| harness-pair-b' "$d/log"; }; do
		sleep 1
		n=$((n - 1))
	done
	kill -STOP "$(cat "$d/out/b/qemu.pid" 2>/dev/null)" 2>/dev/null
	paused=$SECONDS
	wait "$vpid" || rc=$?
	took=$((SECONDS - paused))
	echo "--- harness pair: rc=$rc, ended ${took}s after guest b's pause ($((SECONDS - t0))s in all)"
	grep -E '^\[softrvt\] pair:' "$d/log"
	[ "$rc" = 126 ] && [ "$took" -lt 120 ] &&
		grep -q '^guest b failed: the guest is wedged or paused' "$d/out/verdict" &&
		grep -q '^the guest is wedged or paused' "$d/out/b/verdict" &&
		grep -q '^stopped: guest b failed: the guest is wedged' "$d/out/a/verdict"
	result "a paused guest of a pair is stopped for its missing heartbeat, the other with it, the verdict naming it" $?
}

# The meeting point of a pair's scripts (pair-sync.py and pair_sync of
# scripts/guest/pair-lib.sh), here on the host's loopback: two scripts in
# step exchange their values; out of step, or alone, each fails at once or
# at its deadline, says why, and fails every later step without waiting.
pairsync_test() {
	local d=$work/pairsync port sp ok=0
	mkdir -p "$d/a" "$d/b"
	port=$((20000 + RANDOM % 40000))
	python3 "$TOP/scripts/guest/pair-sync.py" 127.0.0.1 "$port" 2> "$d/sync.log" &
	sp=$!
	side() { # role timeout steps...
		local role=$1 t=$2
		shift 2
		(
			cd "$TOP" || exit 1
			export OUT=$d/$role SOFTRVT_PAIR=$role PAIR_SYNC_TIMEOUT=$t
			. scripts/guest/lib.sh
			. scripts/guest/pair-lib.sh
			PAIR_SYNC_ADDR=127.0.0.1 PAIR_SYNC_PORT=$port
			for step in "$@"; do
				pair_sync "$step" "$role-$step" && echo "$step: $REPLY"
			done
		) > "$d/$role.log" 2>&1
	}
	side a 10 one two > /dev/null & side b 10 one two
	wait $!
	grep -qx 'two: b-two' "$d/a.log" && grep -qx 'two: a-two' "$d/b.log" ||
		{ echo "--- in step:"; cat "$d/a.log" "$d/b.log"; ok=1; }
	side a 10 three four & side b 10 five
	wait $!
	grep -q "^FAIL lockstep: guest a meets guest b at 'three' (guest b is at 'five')" "$d/a/results" &&
		grep -q "^FAIL lockstep: guest b meets guest a at 'five' (guest a is at 'three')" "$d/b/results" &&
		grep -q "not waiting at 'four': out of step" "$d/a.log" ||
		{ echo "--- out of step:"; cat "$d/a.log" "$d/b.log"; ok=1; }
	: > "$d/a/results"
	local t0=$SECONDS
	side a 3 alone
	grep -q "^FAIL lockstep: guest a meets guest b at 'alone' (guest b did not come within 3s)" \
		"$d/a/results" && [ $((SECONDS - t0)) -lt 10 ] ||
		{ echo "--- alone:"; cat "$d/a.log"; ok=1; }
	: > "$d/b/results"
	(sleep 2; kill "$sp") &
	t0=$SECONDS
	side b 60 gone
	grep -q "^FAIL lockstep: guest b meets guest a at 'gone' (the meeting point hung up" \
		"$d/b/results" && [ $((SECONDS - t0)) -lt 10 ] ||
		{ echo "--- meeting point gone:"; cat "$d/b.log"; ok=1; }
	wait
	# At "the end" both are answered, then the meeting point exits by
	# itself: guest a waits for that before it goes (pair_down).
	port=$((port + 1))
	python3 "$TOP/scripts/guest/pair-sync.py" 127.0.0.1 "$port" 2>> "$d/sync.log" &
	sp=$!
	side a 10 "the end" > /dev/null & side b 10 "the end"
	wait $!
	# shellcheck source=scripts/guest/lib.sh
	running() { (OUT=$d . "$TOP/scripts/guest/lib.sh" && pid_running "$1"); }
	local n=50
	while [ $n -gt 0 ] && running "$sp"; do sleep 0.1; n=$((n - 1)); done
	grep -qx 'the end: b-the end' "$d/a.log" &&
		grep -qx 'the end: a-the end' "$d/b.log" && ! running "$sp" ||
		{ echo "--- the end:"; cat "$d/a.log" "$d/b.log"; kill "$sp"; ok=1; }
	wait
	result "pair_sync: in step, out of step, alone, meeting point gone, the end" $ok
}

# What a killed debootstrap leaves: /proc mounted in its target and a
# bind of a directory that is not the cache's.  fresh_dir must empty the
# target and leave the bound directory and its file alone.
freshdir_test() {
	local d=$work/fresh ok=0
	mkdir -p "$d/keep" "$d/t/root/proc" "$d/t/root/dev"
	echo sentinel > "$d/keep/file"
	mount -t proc proc "$d/t/root/proc" &&
		mount --bind "$d/keep" "$d/t/root/dev" ||
		{ echo "--- freshdir: cannot mount"; ok=1; }
	(fresh_dir "$d/t") > "$d/log" 2>&1 || { cat "$d/log"; ok=1; }
	[ -d "$d/t" ] && [ -z "$(ls -A "$d/t")" ] ||
		{ echo "--- freshdir: left"; ls -AR "$d/t" | head; ok=1; }
	grep -q "$d/t" /proc/self/mounts &&
		{ echo "--- freshdir: still mounted"; grep "$d/t" /proc/self/mounts; ok=1; }
	[ "$(cat "$d/keep/file" 2>/dev/null)" = sentinel ] ||
		{ echo "--- freshdir: the bound directory lost its file"; ok=1; }
	result "fresh_dir: unmounts what a killed debootstrap left, removes nothing beyond" $ok
}

# The instruction-counting TCG plugin of `make bench` (scripts/count.sh)
# in a guest of one vCPU: a loop of 10^6 x (dec; jnz) between its two
# markers counts as 2 x 10^6 user instructions, give or take the
# translation blocks at either end, and QEMU's exit line follows; the
# profile written at the second marker holds the loop's block of two
# instructions, run 10^6 times but for the entry.
plugin_test() {
	local d=$work/plugin plugin n=1000000 diff loop
	mkdir -p "$d"
	if ! plugin=$("$TOP/scripts/build-plugin.sh" 2> "$d/build.log"); then
		tail -n 20 "$d/build.log"
		result "the instruction-counting plugin builds" 1
		return
	fi
	rc=0
	SOFTRVT_ACCEL=tcg "$TOP/scripts/vm.sh" -l -s 1 -k "$kdir" -t 900 \
		-o "$d/out" -q "-plugin $plugin,out=$d/insn,prof=$d/prof" -- \
		tests/insn_mark -l "$n" > "$d/log" 2>&1 || rc=$?
	cat "$d/insn"
	diff=$(awk '/^mark 1 / { a = $6 } /^mark 2 / { b = $6 } END { print b - a }' "$d/insn")
	[ "$rc" = 0 ] && [ "$(grep -c '^mark ' "$d/insn")" = 2 ] &&
		grep -q '^exit kernel [0-9]* user [0-9]*$' "$d/insn" &&
		[ "${diff#-}" -ge $((2 * n - 64)) ] && [ "${diff#-}" -le $((2 * n + 64)) ]
	result "the TCG plugin counts a loop of $((2 * n)) user instructions as $diff, its markers in order" $?
	loop=$(awk '/^mark / { m = $2; next }
		m == 2 && $1 !~ /^ffff/ && $2 == 2 && $3 >= '$((n - 2))' && $3 <= '$n' { print }' \
		"$d/prof" 2>/dev/null)
	echo "# the loop's block in the profile: ${loop:-none}"
	[ "$(grep -c '^mark ' "$d/prof" 2>/dev/null)" = 2 ] && [ -n "$loop" ]
	result "the TCG plugin's profile has the loop's block run $n times but its entry" $?
}

case $what in
all) mirror_tests; kvm_tests; paused_test; sleeper_test; pair_test; pairsync_test; freshdir_test; plugin_test ;;
mirror) mirror_tests ;;
kvm) kvm_tests ;;
paused) paused_test ;;
sleeper) sleeper_test ;;
pair) pair_test ;;
pairsync) pairsync_test ;;
freshdir) freshdir_test ;;
plugin) plugin_test ;;
*) echo "usage: harness-tests.sh KDIR [all|mirror|kvm|paused|sleeper|pair|pairsync|freshdir|plugin]"; exit 2 ;;
esac
