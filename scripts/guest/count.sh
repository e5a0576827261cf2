#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In-guest part of the instruction counts of `make bench`
# (scripts/count.sh boots this guest with the counting plugin,
# scripts/qemu-plugin/insn_count.c): the same work on softrvt and on
# rdma_rxe, two devices of one driver on the two ends of a veth, each in
# a namespace of its own, so that every packet crosses the veth.  Each
# run lies between two markers (tests/insn_mark); each marker's label
# goes to $OUT/marks, one line a marker, in the plugin's order.  Every
# transfer runs at N and 2N iterations (N moves COUNT_MIB MiB, or makes
# COUNT_RTT round trips): the host takes the difference, which leaves
# out each program's start and end.
#   - tests/wire_xfer's WRITE, SEND and READ phases, each alone, of 4 KiB
#     and 64 KiB messages at a 4096-byte path MTU (veth MTU 9000), every
#     byte checked;
#   - ibv_rc_pingpong of 8 bytes (round trips);
#   - tests/post_poll_count: the provider's ibv_post_send() and
#     ibv_poll_cq() of one signalled 8-byte SEND, between markers.
set -u

export RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt
. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
: > "$OUT/results"
: > "$OUT/marks"
LOG=$OUT/count
mkdir -p "$LOG"

# Bytes a transfer moves at N iterations, and round trips at N.  Every
# process sleeps on completion events (-e): a process that polls keeps
# the one CPU busy, and the timer ticks and switches that follow the
# wall clock would land in the count.
mib=${COUNT_MIB:-16}
rtts=${COUNT_RTT:-1000}
sizes=(4096 65536)
[ -n "${COUNT_SIZES:-}" ] && read -r -a sizes <<< "$COUNT_SIZES"

mark() { tests/insn_mark && echo "$*" >> "$OUT/marks"; }

# One server in namespace cs and its client in cc, between markers
# "LABEL start" and "LABEL end"; the server listens before the first.
# %D and %G are each side's device and GID index; the client is given
# the server's address.
counted() { # LABEL CMD...
	local label=$1 log=$LOG/${1// /_} rc src
	shift
	wire_subst "$SDEV" "$SGID" "$@"
	wire_server "$label" "$log.server" cs "${WIRE_ARGS[@]}" || return
	wire_subst "$CDEV" "$CGID" "$@"
	mark "$label start"
	ns_exec cc "${WIRE_ARGS[@]}" 198.18.61.2 > "$log.client" 2>&1
	rc=$?
	wait "$WIRE_SPID"
	src=$?
	mark "$label end"
	check "$label: client and server exit 0" [ "$rc/$src" = 0/0 ]
}

devices_up() { # TYPE
	SDEV=${1}s CDEV=${1}c
	wire_ns_pair cc c0 "$CDEV" cs c1 "$SDEV" 61 "$1" &&
		ip -n cc link set c0 mtu 9000 && ip -n cs link set c1 mtu 9000 ||
		return 1
	CGID=$(gid_index "$CDEV" 198.18.61.1) &&
		SGID=$(gid_index "$SDEV" 198.18.61.2)
}

devices_down() {
	ns_exec cc rdma link delete "$CDEV"
	ns_exec cs rdma link delete "$SDEV"
	ip netns del cc
	ip netns del cs
}

tests/insn_mark -l 1000000 && echo "check start" >> "$OUT/marks" &&
	echo "check end" >> "$OUT/marks"
tests/insn_mark -r 65536 && echo "rep start" >> "$OUT/marks" &&
	echo "rep end" >> "$OUT/marks"
modprobe rdma_rxe
for drv in softrvt rxe; do
	section "instruction counts: $drv"
	check "$drv: two devices across a veth" devices_up "$drv" || continue
	for op in write send read; do
		for size in "${sizes[@]}"; do
			n=$(((mib << 20) / size))
			for it in "$n" $((2 * n)); do
				counted "$drv $op $size $it" tests/wire_xfer -d %D -g %G \
					-e -o "${op:0:1}" -M 4096 -m "$size" \
					-s $((it * size)) -t 900
			done
		done
	done
	for it in "$rtts" $((2 * rtts)); do
		counted "$drv rtt 8 $it" ibv_rc_pingpong -d %D -g %G -e -s 8 -n "$it"
	done
	check "$drv: post and poll counted, data checked" \
		ns_exec cc tests/post_poll_count "$CDEV" "$CGID" "$CDEV" "$CGID" \
		100 "$OUT/marks" "$drv"
	devices_down
done
# The kernel's symbols, modules included, for the profile of the first
# run (scripts/count-prof.py).
echo 0 > /proc/sys/kernel/kptr_restrict
cp /proc/kallsyms "$OUT/kallsyms"
