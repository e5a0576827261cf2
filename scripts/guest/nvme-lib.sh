# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# NVMe over Fabrics, RDMA transport: the target (nvmet-rdma exporting a
# memory-backed null_blk, configured through configfs) and the host
# (nvme-rdma through nvme-cli), and fio verifying what it wrote; sourced
# after lib.sh by nvme-tests.sh (host and target in one kernel) and
# pair-tests.sh (on two hosts).  io_checks writes rand_mib MiB of random
# 4 KiB and seq_mib MiB of sequential 1 MiB I/O, which the caller sets.

NQN=nqn.2026-12.org.softrvt:nvme-frwr
CFS=/sys/kernel/config/nvmet

nvme_dev() { # the namespace's block device, once there
	local d
	for d in /sys/block/nvme*n1; do
		[ -e "$d" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}

no_ctrl() { ! ls /sys/class/nvme 2>/dev/null | grep -q .; }

target_up() { # ADDR [use_srq]
	# The guest's init does not mount configfs.
	{ mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config; } &&
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1 &&
		modprobe nvmet-rdma use_srq="${2:-0}" &&
		mkdir "$CFS/subsystems/$NQN" &&
		echo 1 > "$CFS/subsystems/$NQN/attr_allow_any_host" &&
		mkdir "$CFS/subsystems/$NQN/namespaces/1" &&
		echo /dev/nullb0 > "$CFS/subsystems/$NQN/namespaces/1/device_path" &&
		echo 1 > "$CFS/subsystems/$NQN/namespaces/1/enable" &&
		mkdir "$CFS/ports/1" &&
		echo rdma > "$CFS/ports/1/addr_trtype" &&
		echo ipv4 > "$CFS/ports/1/addr_adrfam" &&
		echo "$1" > "$CFS/ports/1/addr_traddr" &&
		echo 4420 > "$CFS/ports/1/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN"
}

# The target's RDMA device goes before its port.  nvmet-rdma (6.12)
# removes a port under nvmet_config_sem and destroys its listening cm_id
# there, which takes the id's handler_mutex; and a connect command that
# reached the target before the host's RTU is executed from the
# ESTABLISHED event, under the new id's handler_mutex, and takes
# nvmet_config_sem: lockdep reports a circular dependency (one lock class
# for every id's handler_mutex).  That is nvmet's, on any RDMA device: in
# the two guests, with half the host's packets 40 ms late while it
# connected, the report came on port removal, and with the device removed
# first it did not (2026-12-02).  Removing the device first lets rdma_cm
# destroy the listener (DEVICE_REMOVAL, nvmet_rdma_device_removal)
# without nvmet_config_sem; the port then has no cm_id left to destroy.
target_down() { # [IBDEV: removed first]
	if [ -n "${1:-}" ]; then
		rdma link delete "$1" && wait_for 100 no_ibdev "$1" || return 1
	fi
	rm -f "$CFS/ports/1/subsystems/$NQN"
	rmdir "$CFS/ports/1" 2>/dev/null
	[ -e "$CFS/subsystems/$NQN/namespaces/1/enable" ] &&
		echo 0 > "$CFS/subsystems/$NQN/namespaces/1/enable"
	rmdir "$CFS/subsystems/$NQN/namespaces/1" 2>/dev/null
	rmdir "$CFS/subsystems/$NQN" 2>/dev/null
	modprobe -r nvmet_rdma nvmet null_blk
}

connect() { # ADDR [nvme connect options]
	local addr=$1 f
	shift
	# A fio that outlived its namespace may have left a plain file there.
	for f in /dev/nvme*n1; do
		[ -f "$f" ] && rm -f "$f"
	done
	modprobe nvme-rdma &&
		timeout 120 nvme connect -t rdma -a "$addr" -s 4420 -n "$NQN" "$@" &&
		wait_for 300 nvme_dev
}

disconnect() {
	timeout 120 nvme disconnect -n "$NQN" > /dev/null &&
		wait_for 300 no_ctrl && return 0
	# Say where it is stuck: the blocked tasks' stacks.
	echo w > /proc/sysrq-trigger
	dmesg | tail -n 80
	return 1
}

# Kernel MRs the target owns: none unless rdma_rw registers its pages
# (ib_core.force_mr=1 on the kernel's command line).
target_mrs() {
	rdma -d resource show mr 2>/dev/null | grep -c 'nvmet_rdma'
}

# fio writes NAME's pattern on the namespace and reads it back.
fio_verify() { # name rw bs mib
	fio_verify_dev "$(nvme_dev)" "$@"
}

# shellcheck disable=SC2154 # rand_mib and seq_mib: the caller's
io_checks() { # label
	check "nvme $1: fio random 4 KiB writes, $rand_mib MiB, verified" \
		fio_verify rand4k randwrite 4k "$rand_mib"
	check "nvme $1: fio sequential 1 MiB writes, $seq_mib MiB, verified" \
		fio_verify seq1m write 1M "$seq_mib"
}
