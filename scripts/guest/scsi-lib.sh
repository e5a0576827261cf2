# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# SCSI over RDMA: both ends of iSER (the open-iscsi initiator through
# ib_iser, the LIO iSCSI target through ib_isert) and of SRP (ib_srp's
# add_target over RDMA/CM, the LIO target ib_srpt), for scsi-tests.sh
# (both ends in one guest) and pair-tests.sh (one end a host).  The
# target exports a memory-backed null_blk through configfs (no
# targetcli: every step of it is a file written here); fio writes and
# verifies (crc32c) random 4 KiB and sequential 1 MiB I/O on the disk
# that appears.  Sourced after lib.sh; the caller sets:
#
#   SCSI_DEV       this side's RDMA device (the target's port, the
#                  initiator's SRP port)
#   SCSI_TGT_ADDR  the target's address (iSCSI portal, SRP destination)
#   SCSI_INI_ADDR  the initiator's (its SRP source)
#   rand_mib, seq_mib  what fio writes and verifies

TGT=/sys/kernel/config/target
IQN=iqn.2026-12.org.softrvt:iser
SRP_PORT=5555

scsi_disk() { # the one SCSI disk of the guest (its root is 9p), once there
	local d
	for d in /sys/block/sd*; do
		[ -e "$d" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}

no_scsi_disk() { ! scsi_disk > /dev/null; }

# shellcheck disable=SC2154 # rand_mib and seq_mib: the caller's
scsi_io_checks() { # label
	local job=${1//[^A-Za-z0-9_-]/_}
	check "$1: fio random 4 KiB writes, $rand_mib MiB, verified" \
		fio_verify_dev "$(scsi_disk)" "$job-rand4k" randwrite 4k "$rand_mib"
	check "$1: fio sequential 1 MiB writes, $seq_mib MiB, verified" \
		fio_verify_dev "$(scsi_disk)" "$job-seq1m" write 1M "$seq_mib"
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

# iSER: the iSCSI target's network portal on the target's address turned
# to iSER (which loads ib_isert), no authentication, ACLs generated for
# any initiator.
iser_target_up() {
	local tpg=$TGT/iscsi/$IQN/tpgt_1 np
	np=$tpg/np/$SCSI_TGT_ADDR:3260
	modprobe iscsi_target_mod &&
		mkdir -p "$tpg" && lun_up "$tpg" &&
		mkdir "$np" &&
		echo 1 > "$np/iser" &&
		echo 0 > "$tpg/attrib/authentication" &&
		echo 1 > "$tpg/attrib/generate_node_acls" &&
		echo 1 > "$tpg/attrib/cache_dynamic_acls" &&
		echo 0 > "$tpg/attrib/demo_mode_write_protect" &&
		echo 1 > "$tpg/enable"
}

iser_target_down() {
	local tpg=$TGT/iscsi/$IQN/tpgt_1
	[ -e "$tpg/enable" ] && echo 0 > "$tpg/enable"
	rmdir "$tpg/np/$SCSI_TGT_ADDR:3260" 2>/dev/null
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
	local p=$SCSI_TGT_ADDR:3260
	iscsiadm -m node -o new -T "$IQN" -p "$p" -I iser > /dev/null &&
		timeout 120 iscsiadm -m node -T "$IQN" -p "$p" -I iser --login &&
		wait_for 300 scsi_disk
}

iser_session_on_iser() {
	iscsiadm -m session -P 1 | grep -q 'Iface Transport: iser'
}

iser_logout() {
	timeout 120 iscsiadm -m node -T "$IQN" -p "$SCSI_TGT_ADDR:3260" \
		-I iser --logout && wait_for 300 no_scsi_disk
}

# SRP: ib_srpt's port named by the interface ID of the GID at index 0,
# as ib_srpt names it; its RDMA/CM listener on SRP_PORT; an ACL named by
# the session name of an RDMA/CM login, which ib_srpt looks up under this
# name of the port (under the GID's, it looks up the initiator's port
# ID).  That name is meant to be the initiator's address, but ib_srpt
# (7.3) prints the passive CM ID's route.addr.src_addr, which on the
# passive side is the local address the login came to: the target's own
# ("Rejected login for initiator 198.18.50.1: ret = -13" for an
# initiator at 198.18.50.2, seen).  On one host both are the same.
srpt_acl_name() { echo "$SCSI_TGT_ADDR"; }

srpt_port_name() {
	cut -d: -f5- "/sys/class/infiniband/$SCSI_DEV/ports/1/gids/0"
}

srp_target_up() {
	local tpg acl
	tpg=$TGT/srpt/$(srpt_port_name)/tpgt_1
	acl=$tpg/acls/$(srpt_acl_name)
	modprobe ib_srpt &&
		mkdir -p "$tpg" && lun_up "$tpg" &&
		mkdir "$acl" "$acl/lun_0" &&
		ln -s "$tpg/lun/lun_0" "$acl/lun_0/lun_0" &&
		echo "$SRP_PORT" > "$TGT/srpt/discovery_auth/rdma_cm_port" &&
		echo 1 > "$tpg/enable"
}

srp_target_down() {
	local tpg acl
	tpg=$TGT/srpt/$(srpt_port_name)/tpgt_1
	acl=$tpg/acls/$(srpt_acl_name)
	[ -e "$tpg/enable" ] && echo 0 > "$tpg/enable"
	rm -f "$acl/lun_0/lun_0"
	rmdir "$acl/lun_0" "$acl" 2>/dev/null
	lun_down "$tpg"
	rmdir "$tpg" "${tpg%/*}" 2>/dev/null
	[ -e "$TGT/srpt/discovery_auth/rdma_cm_port" ] &&
		echo 0 > "$TGT/srpt/discovery_auth/rdma_cm_port"
	rmdir "$TGT/srpt" 2>/dev/null
	modprobe -r ib_srpt
}

# The target port ID ib_srpt accepts: its service GUID, twice.
srpt_guid() {
	local guid
	guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid) &&
		echo "${guid#0x}"
}

srp_add_target() { # TARGET-GUID
	modprobe ib_srp &&
		echo "id_ext=$1,ioc_guid=$1,dest=$SCSI_TGT_ADDR:$SRP_PORT,src=$SCSI_INI_ADDR" \
			> "/sys/class/infiniband_srp/srp-$SCSI_DEV-1/add_target" &&
		wait_for 300 scsi_disk
}

srp_remove_target() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done
	wait_for 300 no_scsi_disk
}
