#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# SCSI over RDMA on softrvt, initiator and target in this kernel on one
# device, as blktests runs SRP on rdma_rxe: iSER (the open-iscsi
# initiator through ib_iser, the LIO iSCSI target through ib_isert) and
# SRP (ib_srp's add_target over RDMA/CM, the LIO target ib_srpt).  The
# target exports a memory-backed null_blk through configfs (no
# targetcli: every step of it is a file written here); fio writes and
# verifies (crc32c) random 4 KiB and sequential 1 MiB I/O on the disk
# that appears; then logout, the target taken down and every module of
# both ends removed.  Writes PASS/FAIL lines to $OUT/results.
set -u

. scripts/guest/lib.sh

ADDR=198.18.43.1
DEV=softrvt6
TGT=/sys/kernel/config/target
IQN=iqn.2026-12.org.softrvt:iser
SRP_PORT=5555
rand_mib=8 seq_mib=32
[ "${SOFTRVT_FULL:-}" ] && rand_mib=128 seq_mib=256

log0=$(dmesg | wc -l)

scsi_disk() { # the one SCSI disk of the guest (its root is 9p), once there
	local d
	for d in /sys/block/sd*; do
		[ -e "$d" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}

no_scsi_disk() { ! scsi_disk > /dev/null; }

io_checks() { # label
	check "$1: fio random 4 KiB writes, $rand_mib MiB, verified" \
		fio_verify_dev "$(scsi_disk)" "$1-rand4k" randwrite 4k "$rand_mib"
	check "$1: fio sequential 1 MiB writes, $seq_mib MiB, verified" \
		fio_verify_dev "$(scsi_disk)" "$1-seq1m" write 1M "$seq_mib"
}

# The backing store of either target: LIO's iblock over null_blk.
backstore_up() {
	{ mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config; } &&
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1 &&
		modprobe target_core_iblock &&
		mkdir -p "$TGT/core/iblock_0/disk0" &&
		echo udev_path=/dev/nullb0 > "$TGT/core/iblock_0/disk0/control" &&
		echo 1 > "$TGT/core/iblock_0/disk0/enable"
}

backstore_down() {
	rmdir "$TGT/core/iblock_0/disk0" "$TGT/core/iblock_0" 2>/dev/null
	# The target core loads backends of its own (target_core_file).
	local users
	users=$(awk '$1 == "target_core_mod" && $4 != "-" { print $4 }' \
		/proc/modules | tr , ' ')
	# shellcheck disable=SC2086
	modprobe -r target_core_iblock $users target_core_mod null_blk &&
		return 0
	lsmod | grep -E '^(target|iscsi|ib_|null)'
	ls -R "$TGT" | head -n 40
	return 1
}

# A LUN of disk0 in the target portal group TPG, open to any initiator
# the fabric lets in.
lun_up() { # tpg
	mkdir "$1/lun/lun_0" &&
		ln -s "$TGT/core/iblock_0/disk0" "$1/lun/lun_0/disk0"
}

lun_down() { # tpg
	rm -f "$1/lun/lun_0/disk0"
	rmdir "$1/lun/lun_0" 2>/dev/null
}

# iSER: the iSCSI target's network portal on ADDR turned to iSER (which
# loads ib_isert), no authentication, ACLs generated for any initiator.
iser_target_up() {
	local tpg=$TGT/iscsi/$IQN/tpgt_1
	modprobe iscsi_target_mod &&
		mkdir -p "$tpg" && lun_up "$tpg" &&
		mkdir "$tpg/np/$ADDR:3260" &&
		echo 1 > "$tpg/np/$ADDR:3260/iser" &&
		echo 0 > "$tpg/attrib/authentication" &&
		echo 1 > "$tpg/attrib/generate_node_acls" &&
		echo 1 > "$tpg/attrib/cache_dynamic_acls" &&
		echo 0 > "$tpg/attrib/demo_mode_write_protect" &&
		echo 1 > "$tpg/enable"
}

iser_target_down() {
	local tpg=$TGT/iscsi/$IQN/tpgt_1
	[ -e "$tpg/enable" ] && echo 0 > "$tpg/enable"
	rmdir "$tpg/np/$ADDR:3260" 2>/dev/null
	lun_down "$tpg"
	rmdir "$tpg" "$TGT/iscsi/$IQN" "$TGT/iscsi" 2>/dev/null
	modprobe -r ib_isert iscsi_target_mod
}

# open-iscsi keeps its node records under /etc/iscsi, read-only here.
iscsid_up() {
	mkdir -p /run/iscsi-etc &&
		cp -a /etc/iscsi/. /run/iscsi-etc/ &&
		mount --bind /run/iscsi-etc /etc/iscsi &&
		mount -t tmpfs tmpfs /var/lib/iscsi &&
		mkdir -p /run/lock/iscsi &&
		iscsid
}

iscsid_down() {
	iscsiadm -k 0 2> /dev/null || pkill -x iscsid
	umount /var/lib/iscsi
	umount /etc/iscsi
}

iser_login() {
	iscsiadm -m node -o new -T "$IQN" -p "$ADDR:3260" -I iser > /dev/null &&
		timeout 120 iscsiadm -m node -T "$IQN" -p "$ADDR:3260" -I iser --login &&
		wait_for 300 scsi_disk
}

iser_session_on_iser() {
	iscsiadm -m session -P 1 | grep -q 'Iface Transport: iser'
}

iser_logout() {
	timeout 120 iscsiadm -m node -T "$IQN" -p "$ADDR:3260" -I iser --logout &&
		wait_for 300 no_scsi_disk
}

# SRP: ib_srpt's port named by the interface ID of the GID at index 0,
# as ib_srpt names it; its RDMA/CM listener on SRP_PORT; an ACL for the
# initiator's address (the session name of an RDMA/CM login, which
# ib_srpt looks up under this name of the port; under the GID's, it
# looks up the initiator's port ID).
srpt_port_name() {
	cut -d: -f5- "/sys/class/infiniband/$DEV/ports/1/gids/0"
}

srp_target_up() {
	local tpg
	tpg=$TGT/srpt/$(srpt_port_name)/tpgt_1
	modprobe ib_srpt &&
		mkdir -p "$tpg" && lun_up "$tpg" &&
		mkdir "$tpg/acls/$ADDR" &&
		mkdir "$tpg/acls/$ADDR/lun_0" &&
		ln -s "$tpg/lun/lun_0" "$tpg/acls/$ADDR/lun_0/lun_0" &&
		echo "$SRP_PORT" > "$TGT/srpt/discovery_auth/rdma_cm_port" &&
		echo 1 > "$tpg/enable"
}

srp_target_down() {
	local tpg
	tpg=$TGT/srpt/$(srpt_port_name)/tpgt_1
	[ -e "$tpg/enable" ] && echo 0 > "$tpg/enable"
	rm -f "$tpg/acls/$ADDR/lun_0/lun_0"
	rmdir "$tpg/acls/$ADDR/lun_0" "$tpg/acls/$ADDR" 2>/dev/null
	lun_down "$tpg"
	rmdir "$tpg" "${tpg%/*}" 2>/dev/null
	[ -e "$TGT/srpt/discovery_auth/rdma_cm_port" ] &&
		echo 0 > "$TGT/srpt/discovery_auth/rdma_cm_port"
	rmdir "$TGT/srpt" 2>/dev/null
	modprobe -r ib_srpt
}

# The target port ID ib_srpt accepts is its service GUID, twice.
srp_add_target() {
	local guid
	guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid) &&
		guid=${guid#0x} &&
		modprobe ib_srp &&
		echo "id_ext=$guid,ioc_guid=$guid,dest=$ADDR:$SRP_PORT,src=$ADDR" \
			> "/sys/class/infiniband_srp/srp-$DEV-1/add_target" &&
		wait_for 300 scsi_disk
}

srp_remove_target() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done
	wait_for 300 no_scsi_disk
}

section "SCSI over RDMA on softrvt: iSER and SRP"
veth s0 s1
ip addr add "$ADDR/24" dev s0
check "scsi: softrvt device on s0" rdma link add "$DEV" type softrvt netdev s0
check "scsi: port ACTIVE" wait_for 50 state_is "$DEV" ACTIVE
check "scsi: LIO backstore (iblock over null_blk)" backstore_up

section "iSER: open-iscsi and ib_iser against LIO's ib_isert"
check "iser: target portal on $ADDR:3260 turned to iSER" iser_target_up
check "iser: ib_isert loaded by the portal" grep -q '^ib_isert ' /proc/modules
check "iser: iscsid started" iscsid_up
check "iser: login through the iser interface" iser_login
check "iser: the session's transport is iser" iser_session_on_iser
io_checks iser
check "iser: logout, disk gone" iser_logout
iscsid_down
check "iser: target taken down, ib_isert and iscsi_target_mod removed" \
	iser_target_down
check "iser: initiator modules removed" modprobe -r ib_iser

section "SRP: ib_srp over RDMA/CM against LIO's ib_srpt"
check "srp: ib_srpt port $(srpt_port_name), RDMA/CM on $SRP_PORT" \
	srp_target_up
check "srp: add_target" srp_add_target
io_checks srp
check "srp: remote port deleted, disk gone" srp_remove_target
check "srp: initiator modules removed" modprobe -r ib_srp
check "srp: target taken down, ib_srpt removed" srp_target_down

check "scsi: backstore removed, target core unloaded" backstore_down
check "scsi: device removed" rdma link delete "$DEV"
ip link del s0
check_no_splat scsi "$log0"
