#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# SCSI over RDMA on softrvt, initiator and target in this kernel on one
# device, as blktests runs SRP on rdma_rxe: iSER (the open-iscsi
# initiator through ib_iser, the LIO iSCSI target through ib_isert) and
# SRP (ib_srp's add_target over RDMA/CM, the LIO target ib_srpt), as
# scsi-lib.sh sets them up: fio verifying on the disk that appears; then
# logout, the target taken down and every module of both ends removed.
# Writes PASS/FAIL lines to $OUT/results.
set -u

. scripts/guest/lib.sh
. scripts/guest/scsi-lib.sh

SCSI_DEV=softrvt6 SCSI_TGT_ADDR=198.18.43.1 SCSI_INI_ADDR=198.18.43.1
rand_mib=8 seq_mib=32
[ "${SOFTRVT_FULL:-}" ] && rand_mib=128 seq_mib=256

log0=$(dmesg | wc -l)

section "SCSI over RDMA on softrvt: iSER and SRP"
veth s0 s1
ip addr add "$SCSI_TGT_ADDR/24" dev s0
check "scsi: softrvt device on s0" rdma link add "$SCSI_DEV" type softrvt netdev s0
check "scsi: port ACTIVE" wait_for 50 state_is "$SCSI_DEV" ACTIVE
check "scsi: LIO backstore (iblock over null_blk)" backstore_up

section "iSER: open-iscsi and ib_iser against LIO's ib_isert"
check "iser: target portal on $SCSI_TGT_ADDR:3260 turned to iSER" iser_target_up
check "iser: ib_isert loaded by the portal" grep -q '^ib_isert ' /proc/modules
check "iser: iscsid started" iscsid_up
check "iser: login through the iser interface" iser_login
check "iser: the session's transport is iser" iser_session_on_iser
scsi_io_checks iser
check "iser: logout, disk gone" iser_logout
iscsid_down
check "iser: target taken down, ib_isert and iscsi_target_mod removed" \
	iser_target_down
check "iser: initiator modules removed" modprobe -r ib_iser

section "SRP: ib_srp over RDMA/CM against LIO's ib_srpt"
check "srp: ib_srpt port $(srpt_port_name), RDMA/CM on $SRP_PORT" \
	srp_target_up
check "srp: add_target" srp_add_target "$(srpt_guid)"
scsi_io_checks srp
check "srp: remote port deleted, disk gone" srp_remove_target
check "srp: initiator modules removed" modprobe -r ib_srp
check "srp: target taken down, ib_srpt removed" srp_target_down

check "scsi: backstore removed, target core unloaded" backstore_down
check "scsi: device removed" rdma link delete "$SCSI_DEV"
ip link del s0
check_no_splat scsi "$log0"
