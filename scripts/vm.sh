#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Boot the test kernel in QEMU and run one command in the guest.
#
# usage: vm.sh [-k KDIR] [-t SECONDS] [-o OUTDIR] [-c CPU] [-s CPUS]
#              [-a ARGS] [-q QEMU-ARGS] [-l] [-S] -- COMMAND...
#
# -a adds ARGS to the guest kernel's command line (module parameters of
# built-in code, such as ib_core.force_mr=1).
#
# -s sets the number of virtual CPUs (default 2); -q adds QEMU-ARGS, split
# at white space, to QEMU's command line (a network device, for instance).
#
# -l (light) skips what only the tests of softrvt need: the modules copied
# into the guest's /lib/modules and the kmemleak scan.
#
# -S (stock) boots a Debian release's own kernel and initramfs instead of
# the test kernel, from the image of scripts/build-stock-root.sh (the
# release SOFTRVT_STOCK names, Debian 13 by default, with linux-headers,
# dkms and rdma-core) as a virtio disk whose writes QEMU discards;
# implies -l.  The repository and OUTDIR are
# mounted as below; the guest has no network either.
#
# The guest root is the cached Debian root, read-only over 9p; the
# repository is a second read-only 9p mount at /mnt/softrvt (the working
# directory of COMMAND); OUTDIR is writable at /mnt/out and receives the
# command's status, the kernel log and the kmemleak report.  The
# read-only mounts cache with cache=loose: nothing changes them during a
# run, and under TCG every uncached 9p lookup is a round trip to QEMU (a
# pyverbs import took 23 s uncached, 6 s cached; a pingpong 11 s, 6 s).
# The host must not change the repository while a guest runs.
#
# KVM is used only once a short probe boot under it has reached the
# guest's init; otherwise TCG, said in one line.  SOFTRVT_ACCEL=tcg|kvm
# forces either.  A watchdog stops a guest that hangs instead of letting
# it sit until the timeout:
#   - QEMU printed "KVM internal error" (it pauses the guest for ever);
#   - the guest's heartbeat (OUTDIR/heartbeat, rewritten every few
#     seconds by its init) is older than SOFTRVT_HEARTBEAT_STALL seconds
#     (default 120), or did not appear within SOFTRVT_BOOT_STALL seconds
#     (default 240): the guest kernel is wedged or paused;
#   - neither the console nor any file under OUTDIR changed for
#     SOFTRVT_STALL seconds (default 240): the command is stuck;
#   - the file named by SOFTRVT_STOP appeared: whoever runs this guest
#     together with others wants it stopped, for the reason the file
#     gives (scripts/vm-pair.sh, when the other guest failed).
# The cause goes to OUTDIR/verdict and stderr.
#
# Exit status: the command's; 124 on timeout; 125 if the guest died
# before the command finished; 126 if the watchdog stopped it.
set -euo pipefail

. "$(dirname "$0")/common.sh"

kdir=""
timeout=1200
out=""
cpu=max
smp=2
light=0
append=""
qemu_args=""
stock=0
while getopts "k:t:o:c:s:a:q:lS" opt; do
	case $opt in
	k) kdir=$OPTARG ;;
	t) timeout=$OPTARG ;;
	o) out=$OPTARG ;;
	c) cpu=$OPTARG ;;
	s) smp=$OPTARG ;;
	a) append=$OPTARG ;;
	q) qemu_args=$OPTARG ;;
	l) light=1 ;;
	S) stock=1; light=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { log "usage: vm.sh [-k KDIR] [-t S] [-o DIR] -- CMD"; exit 2; }

qemu=${SOFTRVT_QEMU:-qemu-system-x86_64}
kvm_dev=${SOFTRVT_KVM_DEV:-/dev/kvm}
stall=${SOFTRVT_STALL:-240}
hb_stall=${SOFTRVT_HEARTBEAT_STALL:-120}
boot_stall=${SOFTRVT_BOOT_STALL:-240}
probe_timeout=${SOFTRVT_PROBE_TIMEOUT:-90}
stop_file=${SOFTRVT_STOP:-}

# Two cores: one guest at a time, whoever starts it.
exec 9> "${SOFTRVT_GUEST_LOCK:-$CACHE/guest.lock}"
if ! flock -n 9; then
	log "waiting for another guest to finish"
	flock 9
fi

if [ "$stock" = 1 ]; then
	# It stands for the kernel in the KVM probe's cache key too.
	kdir=$("$TOP/scripts/build-stock-root.sh")
else
	[ -n "$kdir" ] || kdir=$("$TOP/scripts/build-kernel.sh" debug)
	root=$("$TOP/scripts/build-rootfs.sh")
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/softrvt-vm.XXXXXX)
mkdir -p "$out"

share() { # tag path [ro]
	local ro=""
	[ "${3:-}" = ro ] && ro=",readonly=on"
	echo "-fsdev local,id=$1,path=$2,security_model=none,multidevs=remap$ro"
	echo "-device virtio-9p-pci,fsdev=$1,mount_tag=$1"
}

# The kernel, the root and the shares of one boot, in the array machine.
machine_args() { # outdir
	# no_timer_check on every kernel: under TCG on a loaded host the
	# 8254 timer's IRQ can miss the boot's check window, and the kernel
	# panicked "IO-APIC + timer doesn't work!" (a harness boot beside
	# make check and a CPU hog, 2026-12-07).
	if [ "$stock" = 1 ]; then
		# shellcheck disable=SC2207,SC2054
		machine=(-kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.img"
			-drive "file=$kdir/root.img,if=virtio,format=raw,snapshot=on"
			$(share softrvt "$TOP" ro) $(share out "$1")
			-append "console=ttyS0 root=/dev/vda rw init=/sbin/softrvt-boot panic=-1 oops=panic loglevel=4 no_timer_check${append:+ $append}")
		return
	fi
	# The test kernel's soft-lockup detector stays off unless a test turns
	# it on (scripts/guest/engine-tests.sh): under TCG a slow path of
	# another subsystem may hold a CPU for its threshold.  Four-level
	# paging (no5lvl) although QEMU's "max" CPU has LA57: on 7.3 with
	# KASAN, an interrupt taken while identify_cpu() rebuilds the CPUID
	# tables at boot drew a "wild-memory-access" report for a direct-map
	# address of five-level paging (once in four boots under load).
	# shellcheck disable=SC2207,SC2054
	machine=(-kernel "$kdir/arch/x86/boot/bzImage"
		-fsdev "local,id=root,path=$root,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
		$(share softrvt "$TOP" ro) $(share out "$1")
		$(share modroot "$kdir/modroot" ro)
		-append "console=ttyS0 root=/dev/root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro init=/sbin/softrvt-boot panic=-1 oops=panic loglevel=4 log_buf_len=16M nosoftlockup no5lvl no_timer_check${append:+ $append}")
}

# The newest change under DIR that is progress: any file but the
# heartbeat (which a stuck command does not stop).
progress_mark() { # dir
	find "$1" -type f ! -name heartbeat -printf '%T@ %s\n' 2>/dev/null |
		sort -n | tail -n 1
}

age() { # file -> seconds since it last changed, or -1 if missing
	local m
	m=$(stat -c %Y "$1" 2>/dev/null) || { echo -1; return; }
	echo $(($(date +%s) - m))
}

stop_qemu() { # pid
	kill -TERM "$1" 2>/dev/null || return 0
	kill -CONT "$1" 2>/dev/null || true
	local n=50
	while [ $n -gt 0 ] && kill -0 "$1" 2>/dev/null; do
		sleep 0.1
		n=$((n - 1))
	done
	kill -KILL "$1" 2>/dev/null || true
}

# Boot once and watch.  usage: boot ACCEL CPU OUTDIR TIMEOUT QUIET CMD
# Leaves the cause of a watchdog stop in OUTDIR/verdict; returns as the
# script does (command status, 124, 125 or 126).
boot() {
	local accel=$1 bcpu=$2 bout=$3 btimeout=$4 quiet=$5 cmd=$6
	local console=$bout/console.log verdict="" viewer="" qpid rc machine
	rm -f "$bout/status" "$bout/dmesg" "$bout/kmemleak" "$bout/verdict" \
		"$bout/heartbeat" "$bout/light"
	printf '%s\n' "$cmd" > "$bout/cmd"
	[ "$light" = 0 ] || : > "$bout/light"
	: > "$console"

	machine_args "$bout"
	# shellcheck disable=SC2086
	"$qemu" -machine "q35,accel=$accel" -cpu "$bcpu" \
		-bios /usr/share/qemu/qboot.rom -m 3072 -smp "$smp" \
		-display none -serial stdio -no-reboot -nic none \
		"${machine[@]}" $qemu_args \
		</dev/null > "$console" 2>&1 9>&- &
	qpid=$!
	echo "$qpid" > "$bout/qemu.pid"
	if [ "$quiet" = 0 ]; then
		tail -n +1 -f --pid="$qpid" "$console" >&2 9>&- &
		viewer=$!
	fi

	local start=$SECONDS last=$SECONDS mark="" now longest=0 hb
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 2
		if [ -n "$stop_file" ] && [ -f "$stop_file" ]; then
			verdict="stopped: $(head -n 1 "$stop_file")"
			break
		fi
		if grep -q 'KVM internal error' "$console"; then
			verdict="KVM internal error: QEMU paused the guest ($(grep -m1 -o 'Suberror: [0-9]*' "$console" || true))"
			break
		fi
		now=$(stat -c %s "$console")" $(progress_mark "$bout")"
		if [ "$now" != "$mark" ]; then
			mark=$now
			[ $((SECONDS - last)) -gt "$longest" ] && longest=$((SECONDS - last))
			last=$SECONDS
		fi
		hb=$(age "$bout/heartbeat")
		if [ "$hb" -lt 0 ] && [ $((SECONDS - start)) -ge "$boot_stall" ]; then
			verdict="the guest did not reach its init within ${boot_stall}s (no heartbeat)"
			break
		fi
		if [ "$hb" -ge "$hb_stall" ]; then
			verdict="the guest is wedged or paused: no heartbeat for ${hb}s"
			break
		fi
		if [ $((SECONDS - last)) -ge "$stall" ]; then
			verdict="no progress for $((SECONDS - last))s: no console output and no file written in the out folder"
			break
		fi
		if [ $((SECONDS - start)) -ge "$btimeout" ]; then
			verdict="timeout: the guest ran for ${btimeout}s"
			break
		fi
	done
	if [ -n "$verdict" ]; then
		stop_qemu "$qpid"
	fi
	set +e
	wait "$qpid"
	set -e
	[ -n "$viewer" ] && { sleep 0.2; kill "$viewer" 2>/dev/null || true; }
	[ $((SECONDS - last)) -gt "$longest" ] && longest=$((SECONDS - last))
	echo "$longest" > "$bout/longest-silence"

	if [ -n "$verdict" ]; then
		echo "$verdict" > "$bout/verdict"
		[ "$quiet" = 0 ] && {
			log "watchdog stopped the guest after $((SECONDS - start))s: $verdict"
			log "last console lines:"
			grep -v '^\s*$' "$console" | tail -n 3 | sed 's/^/[softrvt]   /' >&2
		}
		case "$verdict" in
		timeout:*) return 124 ;;
		*) return 126 ;;
		esac
	fi
	if [ ! -f "$bout/status" ]; then
		echo "the guest died before the command finished" > "$bout/verdict"
		[ "$quiet" = 0 ] && log "the guest died before the command finished"
		return 125
	fi
	rc=$(cat "$bout/status")
	return "$rc"
}

# The probe: boot under KVM with a command that does nothing; KVM is
# trusted only if the guest reached its init and reported back.
probe_kvm() {
	local pout t0 rc=0
	pout=$(mktemp -d /tmp/softrvt-probe.XXXXXX)
	: > "$pout/probe"
	t0=$SECONDS
	boot kvm host "$pout" "$probe_timeout" 1 true || rc=$?
	if [ "$rc" = 0 ]; then
		probe_result="KVM (the probe boot reached the guest's init in $((SECONDS - t0))s)"
		rm -rf "$pout"
		return 0
	fi
	if [ -f "$pout/verdict" ]; then
		probe_result=$(cat "$pout/verdict")
	else
		probe_result="the probe's command failed (status $rc)"
	fi
	rm -rf "$pout"
	return 1
}

# One probe per host boot, QEMU and KVM device: its verdict is cached.
choose_accel() {
	local key
	case "${SOFTRVT_ACCEL:-auto}" in
	tcg) accel=tcg; accel_forced=1; return ;;
	kvm) accel=kvm; accel_forced=1; return ;;
	auto) accel_forced=0 ;;
	*) log "SOFTRVT_ACCEL must be tcg, kvm or auto"; exit 2 ;;
	esac
	if ! [ -r "$kvm_dev" ] || ! [ -w "$kvm_dev" ]; then
		accel=tcg
		log "accel: TCG (no usable $kvm_dev)"
		return
	fi
	key=$(printf '%s %s %s %s' "$(cat /proc/sys/kernel/random/boot_id)" \
		"$(command -v "$qemu")" "$kvm_dev" "$kdir" | sha256sum | cut -c1-16)
	verdict_file=${SOFTRVT_PROBE_CACHE:-$CACHE}/accel-$key
	if [ -f "$verdict_file" ]; then
		read -r accel < "$verdict_file"
		log "accel: $accel (this host's probe verdict, cached in $verdict_file)"
		return
	fi
	if probe_kvm; then
		accel=kvm
		log "accel: $probe_result"
	else
		accel=tcg
		log "accel: TCG, because KVM failed its probe boot: $probe_result (SOFTRVT_ACCEL=kvm forces it)"
	fi
	echo "$accel" > "$verdict_file"
}

verdict_file=""
choose_accel
cmd="$*"
rc=0
if [ "$accel" = kvm ]; then
	boot kvm host "$out" "$timeout" 0 "$cmd" || rc=$?
	# KVM that passed the probe can still fail later on another
	# instruction: run again under TCG rather than fail the run.
	if [ "$rc" = 126 ] && [ "$accel_forced" = 0 ] &&
		grep -q '^KVM internal error' "$out/verdict"; then
		log "accel: TCG from now on, because KVM failed during the run: $(cat "$out/verdict")"
		echo tcg > "$verdict_file"
		rc=0
		boot tcg "$cpu" "$out" "$timeout" 0 "$cmd" || rc=$?
	fi
else
	boot tcg "$cpu" "$out" "$timeout" 0 "$cmd" || rc=$?
fi
exit "$rc"
