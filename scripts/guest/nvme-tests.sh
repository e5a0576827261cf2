#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe over Fabrics, RDMA transport, host and target in this kernel over
# one softrvt device: the kernel's own ULPs on softrvt.  The host
# (nvme-rdma) registers its buffers with IB_WR_REG_MR and invalidates them
# with IB_WR_LOCAL_INV unless the target (nvmet-rdma) answered with a
# SEND with Invalidate; neither module takes a device without fast
# registration.  The target exports a memory-backed null_blk, configured
# through configfs; the host connects with nvme-cli and fio writes and
# verifies (crc32c) random 4 KiB and sequential 1 MiB I/O.
#
# usage: nvme-tests.sh [force_mr]
# Without argument: the target plain, then on an SRQ (nvmet-rdma
# use_srq=1); then disconnect and `rdma link delete` under I/O.  With
# force_mr, in a guest booted with ib_core.force_mr=1: the target's RDMA
# READ/WRITE go through fast-registered MRs too.  Writes PASS/FAIL lines
# to $OUT/results.
set -u

. scripts/guest/lib.sh
. scripts/guest/nvme-lib.sh

ADDR=198.18.41.1
variant=${1:-}
rand_mib=8 seq_mib=32
[ "${SOFTRVT_FULL:-}" ] && rand_mib=128 seq_mib=256

log0=$(dmesg | wc -l)

# A run of I/O that outlives what is done to it; its status says how it
# ended.  The device disappears under it: it must end, in error.
busy_io() { # log
	timeout 300 fio --name=busy --filename="$(nvme_dev)" --direct=1 --allow_file_create=0 \
		--ioengine=libaio --iodepth=8 --rw=randrw --bs=16k --size=64M \
		--time_based --runtime=200 > "$1" 2>&1
}

io_moving() { # some I/O completed on the namespace (shell builtins only)
	local d reads _ writes
	d=$(nvme_dev) || return 1
	read -r reads _ _ _ writes _ < "/sys/block/${d#/dev/}/stat" || return 1
	[ $((reads + writes)) -gt 100 ]
}

# Do CMD while fio runs; fio must then end, cut off by CMD: before its
# own 200 s run is over, however slow the machine (a minute after CMD
# was the limit, which an idle machine meets; the host's timeouts say
# how soon it ends).
under_io() { # label cmd...
	local label=$1 pid t0=$SECONDS ended
	shift
	busy_io /tmp/fio-busy.log &
	pid=$!
	if wait_for 300 io_moving; then
		pass "nvme: I/O running before $label"
	else
		fail "nvme: I/O running before $label"
		ls /sys/block
		cat "/sys/block/$(basename "$(nvme_dev)")/stat"
		cat /tmp/fio-busy.log
	fi
	check "nvme: $label under I/O" "$@"
	# A second a poll: under TCG a process a tenth of a second is slow.
	while [ $((SECONDS - t0)) -lt 190 ] && pid_running "$pid"; do
		sleep 1
	done
	ended=1
	pid_running "$pid" && ended=0
	check "nvme: fio ends, cut off by $label before its run is over" \
		[ "$ended" = 1 ]
	echo "nvme: fio ended $((SECONDS - t0)) s after it started"
	kill "$pid" 2>/dev/null
	wait "$pid"
	echo "nvme: fio under $label ended with status $?"
}

link_delete() {
	rdma link delete softrvt7 && wait_for 600 no_ctrl
}

dev_up() {
	check "nvme: softrvt device on n0" \
		rdma link add softrvt7 type softrvt netdev n0
	check "nvme: port ACTIVE" wait_for 50 state_is softrvt7 ACTIVE
}

section "NVMe over Fabrics (RDMA) on softrvt${variant:+ ($variant)}"
veth n0 n1
ip addr add "$ADDR/24" dev n0
dev_up

if [ "$variant" = force_mr ]; then
	check "nvme force_mr: booted with ib_core.force_mr=1" \
		grep -qw ib_core.force_mr=1 /proc/cmdline
	check "nvme force_mr: target configured" target_up "$ADDR"
	check "nvme force_mr: host connects" connect "$ADDR"
	n=$(target_mrs)
	echo "nvme force_mr: the target holds $n MRs"
	check "nvme force_mr: the target registers MRs" [ "$n" -gt 0 ]
	io_checks force_mr
	check "nvme force_mr: disconnect" disconnect
	check "nvme force_mr: target removed, its device first" \
		target_down softrvt7
else
	check "nvme: target configured (null_blk, nvmet-rdma on $ADDR:4420)" \
		target_up "$ADDR"
	check "nvme: host connects with nvme-cli" connect "$ADDR"
	check "nvme: the target registers no MR without force_mr" \
		[ "$(target_mrs)" = 0 ]
	io_checks plain
	check "nvme: disconnect" disconnect
	check "nvme: target removed, its device first" target_down softrvt7
	dev_up

	check "nvme use_srq: target on an SRQ" target_up "$ADDR" 1
	check "nvme use_srq: use_srq is on" \
		grep -qx Y /sys/module/nvmet_rdma/parameters/use_srq
	check "nvme use_srq: host connects" connect "$ADDR"
	io_checks use_srq

	under_io disconnect disconnect
	# The host keeps trying to reconnect for ctrl-loss-tmo, then gives up.
	check "nvme: host connects again" connect "$ADDR" --ctrl-loss-tmo=8 \
		--reconnect-delay=2
	under_io "rdma link delete" link_delete
	check "nvme: target removed after its device" target_down
fi
check "nvme: host modules removed" modprobe -r nvme_rdma nvme_fabrics
has_ibdev softrvt7 && rdma link delete softrvt7
ip link del n0
check_no_splat nvme "$log0"
