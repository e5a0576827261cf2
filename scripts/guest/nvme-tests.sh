#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe over Fabrics, RDMA transport, host and target in this kernel over
# one softrvt device: the kernel's own ULPs on softrvt.  The host
# (nvme-rdma) registers its buffers with IB_WR_REG_MR and invalidates them
# with IB_WR_LOCAL_INV unless the target (nvmet-rdma) answered with a
# SEND with Invalidate; neither module takes a device without fast
# registration.  The target exports a memory-backed null_blk; the host
# writes a few MiB, reads them back and the checksums must match.  nvme-cli
# is not in the guest root: the target is configured through configfs,
# the host connects through /dev/nvme-fabrics.  Writes PASS/FAIL lines to
# $OUT/results.
set -u

. scripts/guest/lib.sh

NQN=nqn.2026-12.org.softrvt:nvme-frwr
ADDR=198.18.41.1
MIB=${SOFTRVT_NVME_MIB:-8}
CFS=/sys/kernel/config/nvmet
splat_re='WARNING:|BUG:|KASAN|UBSAN|possible circular|possible recursive|INFO: task .* blocked|Oops|general protection|refcount_t:|list_(add|del) corruption|soft lockup|RCU stall'

log0=$(dmesg | wc -l)

nvme_dev() { # the namespace's block device, once there
	local d
	for d in /sys/block/nvme*n1; do
		[ -e "$d" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}

target_up() {
	# The guest's init does not mount configfs.
	{ mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config; } &&
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1 &&
		modprobe nvmet-rdma &&
		mkdir "$CFS/subsystems/$NQN" &&
		echo 1 > "$CFS/subsystems/$NQN/attr_allow_any_host" &&
		mkdir "$CFS/subsystems/$NQN/namespaces/1" &&
		echo /dev/nullb0 > "$CFS/subsystems/$NQN/namespaces/1/device_path" &&
		echo 1 > "$CFS/subsystems/$NQN/namespaces/1/enable" &&
		mkdir "$CFS/ports/1" &&
		echo rdma > "$CFS/ports/1/addr_trtype" &&
		echo ipv4 > "$CFS/ports/1/addr_adrfam" &&
		echo "$ADDR" > "$CFS/ports/1/addr_traddr" &&
		echo 4420 > "$CFS/ports/1/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN"
}

target_down() {
	rm -f "$CFS/ports/1/subsystems/$NQN"
	rmdir "$CFS/ports/1" 2>/dev/null
	[ -e "$CFS/subsystems/$NQN/namespaces/1/enable" ] &&
		echo 0 > "$CFS/subsystems/$NQN/namespaces/1/enable"
	rmdir "$CFS/subsystems/$NQN/namespaces/1" 2>/dev/null
	rmdir "$CFS/subsystems/$NQN" 2>/dev/null
	true
}

connect() {
	modprobe nvme-rdma &&
		timeout 120 sh -c "printf %s 'transport=rdma,traddr=$ADDR,trsvcid=4420,nqn=$NQN' > /dev/nvme-fabrics"
}

disconnect() {
	local c

	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] &&
			echo 1 > "$c/delete_controller"
	done
	wait_for 300 sh -c '! ls /sys/block | grep -q "^nvme"'
}

remove_modules() {
	local m

	for m in nvme_rdma nvmet_rdma nvmet null_blk nvme_fabrics nvme_core; do
		modprobe -r "$m" || return 1
	done
}

# Write $MIB MiB of random data in 1 MiB direct I/Os, then 4 KiB ones at
# an odd offset, and read all of it back; compare checksums.
io_round_trip() {
	local dev=$1 want got

	head -c $((MIB << 20)) /dev/urandom > /tmp/nvme.data
	timeout 300 dd if=/tmp/nvme.data of="$dev" bs=1M oflag=direct \
		status=none || return 1
	timeout 300 dd if=/tmp/nvme.data of="$dev" bs=4k count=64 skip=3 \
		seek=$(((MIB << 8) + 7)) oflag=direct status=none || return 1
	want=$( (cat /tmp/nvme.data; dd if=/tmp/nvme.data bs=4k count=64 \
		skip=3 status=none) | sha256sum)
	got=$( (timeout 300 dd if="$dev" bs=1M count="$MIB" iflag=direct \
		status=none; timeout 300 dd if="$dev" bs=4k count=64 \
		skip=$(((MIB << 8) + 7)) iflag=direct status=none) | sha256sum)
	echo "nvme: want $want, read $got"
	[ "$want" = "$got" ]
}

echo "== NVMe over Fabrics (RDMA) on softrvt"
veth n0 n1
ip addr add "$ADDR/24" dev n0
check "nvme: softrvt device on n0" rdma link add softrvt7 type softrvt netdev n0
check "nvme: port ACTIVE" wait_for 50 state_is softrvt7 ACTIVE
check "nvme: target configured (null_blk, nvmet-rdma on $ADDR:4420)" target_up
check "nvme: host connects through /dev/nvme-fabrics" connect
check "nvme: namespace appears" wait_for 300 nvme_dev
dev=$(nvme_dev)
if [ -n "$dev" ]; then
	check "nvme: $MIB MiB and 64 x 4 KiB written and read back intact" \
		io_round_trip "$dev"
else
	fail "nvme: $MIB MiB and 64 x 4 KiB written and read back intact"
fi
check "nvme: disconnect" disconnect
target_down
check "nvme: modules removed" remove_modules
rdma link delete softrvt7
ip link del n0
rm -f /tmp/nvme.data
splats=$(dmesg | tail -n +"$((log0 + 1))" | grep -E "$splat_re")
[ -n "$splats" ] && printf '%s\n' "$splats"
check "nvme: no kernel splat" [ -z "$splats" ]
