#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Boot the test kernel in QEMU and run one command in the guest.
#
# usage: vm.sh [-k KDIR] [-t SECONDS] [-o OUTDIR] [-c CPU] -- COMMAND...
#
# The guest root is the cached Debian root, read-only over 9p; the
# repository is a second read-only 9p mount at /mnt/softrvt (the working
# directory of COMMAND); OUTDIR is writable at /mnt/out and receives the
# command's status, the kernel log and the kmemleak report.  The exit
# status is the command's, 124 on timeout, 125 if the guest died first.
set -euo pipefail

. "$(dirname "$0")/common.sh"

kdir=""
timeout=1200
out=""
cpu=max
while getopts "k:t:o:c:" opt; do
	case $opt in
	k) kdir=$OPTARG ;;
	t) timeout=$OPTARG ;;
	o) out=$OPTARG ;;
	c) cpu=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { log "usage: vm.sh [-k KDIR] [-t S] [-o DIR] -- CMD"; exit 2; }

[ -n "$kdir" ] || kdir=$("$TOP/scripts/build-kernel.sh" debug)
root=$("$TOP/scripts/build-rootfs.sh")
[ -n "$out" ] || out=$(mktemp -d /tmp/softrvt-vm.XXXXXX)
mkdir -p "$out"
rm -f "$out/status" "$out/dmesg" "$out/kmemleak"
printf '%s\n' "$*" > "$out/cmd"

accel=tcg
if [ -w /dev/kvm ] && [ -r /dev/kvm ]; then
	accel=kvm
	cpu=host
fi

share() { # tag path [ro]
	local ro=""
	[ "${3:-}" = ro ] && ro=",readonly=on"
	echo "-fsdev local,id=$1,path=$2,security_model=none,multidevs=remap$ro"
	echo "-device virtio-9p-pci,fsdev=$1,mount_tag=$1"
}

# shellcheck disable=SC2046
set +e
timeout --foreground -k 10 "$timeout" \
	qemu-system-x86_64 -machine q35,accel=$accel -cpu "$cpu" \
	-bios /usr/share/qemu/qboot.rom -m 3072 -smp 2 \
	-display none -serial stdio -no-reboot -nic none \
	-kernel "$kdir/arch/x86/boot/bzImage" \
	-fsdev "local,id=root,path=$root,security_model=none,readonly=on,multidevs=remap" \
	-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root \
	$(share softrvt "$TOP" ro) $(share out "$out") \
	$(share modroot "$kdir/modroot" ro) \
	-append "console=ttyS0 root=/dev/root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000 ro init=/sbin/softrvt-boot panic=-1 oops=panic loglevel=4" \
	</dev/null | tee "$out/console.log" >&2
rc=${PIPESTATUS[0]}
set -e

if [ "$rc" = 124 ]; then
	log "guest timed out after ${timeout}s"
	exit 124
fi
if [ ! -f "$out/status" ]; then
	log "guest died before the command finished"
	exit 125
fi
exit "$(cat "$out/status")"
