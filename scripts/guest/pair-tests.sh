#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Two hosts: the same script in both guests of scripts/vm-pair.sh, which
# sets SOFTRVT_PAIR=a or b (see pair-lib.sh for the link).  First softrvt
# on both hosts, then softrvt on guest a and rdma_rxe on guest b, each
# side as the server in turn: the pingpongs (data checked with -c),
# perftest's bandwidth tools, rping with its data validated, and
# tests/wire_xfer (RC WRITE, SEND and READ, every byte checked); then
# NVMe over Fabrics with the target on one host and the host on the
# other, softrvt host to rxe target and rxe host to softrvt target (both
# at once), fio verifying with crc32c; iSER and SRP the same way (LIO
# target on one host, initiator on the other); and the programs of
# clients.sh (qperf, libfabric, UCX, Open MPI, rsockets, librdmacm's
# examples) between softrvt and softrvt, softrvt and rxe, and rxe and rxe
# for reference.  perftest's figures are not judged: its clock
# calibration fails under TCG; a transfer that does not complete fails.
# Each guest writes PASS/FAIL lines to its own $OUT/results, the client's
# guest for each program, the NVMe host's for NVMe.
#
# Under TCG each program takes seconds to start and to end: `make check`
# runs each perftest tool once (WRITE on softrvt to softrvt, SEND from rxe
# to softrvt, READ by softrvt from rxe) and the SRQ pingpong on softrvt
# to softrvt only (wire-tests.sh runs it between rxe and softrvt at
# length); wire_xfer moves data by WRITE, SEND and READ in every pairing.
# SOFTRVT_FULL=1 runs every program in every pairing, softrvt to softrvt
# with either guest as the server, and larger NVMe transfers.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
. scripts/guest/nvme-lib.sh
. scripts/guest/pair-lib.sh || exit 2
. scripts/guest/clients.sh
. scripts/guest/scsi-lib.sh
: > "$OUT/results"
: > "$OUT/clients"

# Random 4 KiB I/O crosses the link of two TCG guests at about 300 KiB/s
# (iSER and SRP, 2026-12-08): 128 MiB of it, written and verified,
# outlasted fio_verify_dev's 600 s.
rand_mib=4 seq_mib=16
[ "${SOFTRVT_FULL:-}" ] && rand_mib=32 seq_mib=256

# Programs between a server on guest SROLE and a client on the other;
# both guests run this, each its side.  PROGS: any of rc srq write read
# send rping xfer, all of them with SOFTRVT_FULL=1.
suite() { # LABEL SROLE PROGS
	local label=$1 s=$2 progs=" ${3:-} " op
	[ "${SOFTRVT_FULL:-}" ] && progs=" rc srq write read send rping xfer "
	[[ $progs == *" rc "* ]] &&
		pair_prog "$label: rc_pingpong -s 65536 -c" "$iters" "$s" \
			ibv_rc_pingpong -d %D -g %G -s 65536 -n 10 -c
	[[ $progs == *" srq "* ]] &&
		pair_prog "$label: srq_pingpong -s 4096 -c" "$iters" "$s" \
			ibv_srq_pingpong -d %D -g %G -s 4096 -n 20 -c
	for op in write read send; do
		[[ $progs == *" $op "* ]] &&
			pair_prog "$label: ib_${op}_bw -s 65536" "$bw" "$s" \
				"ib_${op}_bw" -d %D -x %G -F -s 65536 -n 20
	done
	[[ $progs == *" rping "* ]] &&
		pair_run "$label: rping -v -V" "ping data" "$s" cm \
			rping -s -a %S -v -C 10 -- rping -c -a %S -v -V -C 10
	[[ $progs == *" xfer "* ]] &&
		pair_prog "$label: wire_xfer 2 MiB, data checked" "wire_xfer: OK" "$s" \
			tests/wire_xfer -d %D -g %G -s 2M -m 64K -M 4096 -t 100
	true
}

# The programs of clients.sh between a server on guest SROLE and a
# client on the other: make check runs a slice of each (SET=slice),
# check-full all of them, both ways with softrvt.
clients() { # PAIRING SROLE SET
	local s=$2 set=$3 all="" qp=(rc_bw rc_lat) fi_sizes=(65536)
	local rdm_sizes=(4096 65536)
	CLIENTS_PAIRING=$1
	if [ "${SOFTRVT_FULL:-}" ]; then
		all=1
		qp=(rc_bw rc_bi_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
			rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat
			rc_compare_swap_mr rc_fetch_add_mr)
		fi_sizes=(64 4096 65536 1048576)
		rdm_sizes=("${fi_sizes[@]}")
	fi
	QPERF_IB_TESTS="ud_lat uc_bw" clients_qperf "$s" "${qp[@]}"
	clients_fabric "$s" rdm "${rdm_sizes[@]}"
	clients_ucx "$s" "$set"
	# make check's one MPI run: 4 ranks, softrvt on both hosts.
	if [ -n "$all" ]; then
		clients_mpi "$s" 2 $((16 << 20))
		clients_mpi "$s" 4 $((16 << 20))
	elif [ "$set" = all ]; then
		clients_mpi "$s" 4 $((1 << 20))
	fi
	[ "$set" = slice ] && [ -z "$all" ] && return
	clients_fabric "$s" msg "${fi_sizes[@]}"
	clients_fabric "$s" dgram 64 512 4096
	clients_rsockets "$s"
	clients_rdmacm "$s"
}

# NVMe/RDMA each way at once: each host is the target of the other's
# NVMe host.  LABEL_A names guest a's host and guest b's target, LABEL_B
# the other way.  A target's device goes with it.
nvme_both() { # LABEL_A LABEL_B
	local host=$1 target=$2 rc=0 n
	[ "$PAIR_ROLE" = b ] && host=$2 target=$1
	target_up "$PAIR_ADDR"
	rc=$?
	[ "$rc" = 0 ] || fail "nvme $target: target on $PAIR_ADDR:4420"
	if ! pair_sync "nvme: targets up" "$rc" || [ "$REPLY" != 0 ]; then
		fail "nvme $host: host connects (no target)"
		pair_sync "nvme: hosts done" - 900
		return
	fi
	# Half the host's packets 40 ms late while it connects: a connect
	# command then often reaches the target before the RTU does, and the
	# target runs it from the CM's ESTABLISHED event (see target_down).
	tc qdisc add dev eth0 root netem delay 40ms reorder 50%
	check "nvme $host: host connects" connect "$PAIR_PEER"
	tc qdisc del dev eth0 root
	# Booted with ib_core.force_mr=1 (PAIR_FORCE_MR=1), the target moves
	# data through MRs of its own (rdma_rw), once a host is connected.
	pair_sync "nvme: hosts connected" - 300
	if [ "${PAIR_FORCE_MR:-}" ]; then
		n=$(target_mrs)
		echo "nvme $target: the target holds $n MRs (force_mr)"
		check "nvme $target: with force_mr the target registers MRs" \
			[ "$n" -gt 0 ]
	fi
	io_checks "$host"
	check "nvme $host: disconnect" disconnect
	check "nvme $host: host modules removed" \
		modprobe -r nvme_rdma nvme_fabrics
	pair_sync "nvme: hosts done" - 900
	check "nvme $target: target removed, its device first" \
		target_down_pair
}
target_down_pair() { pair_dev_down && target_down; }

# iSER, then SRP, with the LIO target on guest TROLE and the initiator
# on the other, each end on its guest's device (scsi-lib.sh): fio
# verifying on the disk, logout or the remote port deleted, every
# module of both ends removed.  The SRP target tells the initiator its
# port ID (the service GUID) at the step where it is ready.
#
# The initiator disconnects as soon as it has the logout response: the
# target's QP goes to ERR then, and the response's SEND must complete as
# sent, not flushed (a flushed one left the command on its connection's
# list: a WARNING in iscsit_release_cmd(), the session never closed).
# softrvt's responder acknowledges a message before its completion, and
# its requester takes the ACKs that reached it before the flush
# (tests/wire_errors, "ACK taken before ERR").
scsi_pair() { # LABEL TROLE
	local label=$1 rc=1 guid=none
	SCSI_DEV=$PAIR_DEV
	if [ "$2" = "$PAIR_ROLE" ]; then
		SCSI_TGT_ADDR=$PAIR_ADDR SCSI_INI_ADDR=$PAIR_PEER
		check "$label: LIO backstore (iblock over null_blk)" backstore_up &&
			rc=0
		[ "$rc" = 0 ] && {
			check "$label: iSER portal on $SCSI_TGT_ADDR:3260" iser_target_up ||
				rc=1
		}
		pair_sync "$label: iser target" "$rc"
		pair_sync "$label: iser initiator done" - 900
		check "$label: iSER target taken down, its modules removed" \
			iser_target_down
		[ "$rc" = 0 ] &&
			check "$label: ib_srpt port $(srpt_port_name), RDMA/CM on $SRP_PORT" \
				srp_target_up && guid=$(srpt_guid)
		pair_sync "$label: srp target" "${guid:-none}"
		pair_sync "$label: srp initiator done" - 900
		check "$label: SRP target taken down, ib_srpt removed" srp_target_down
		check "$label: backstore removed, target core unloaded" backstore_down
		return
	fi
	SCSI_TGT_ADDR=$PAIR_PEER SCSI_INI_ADDR=$PAIR_ADDR
	if ! pair_sync "$label: iser target" || [ "$REPLY" != 0 ]; then
		fail "$label: iSER (the target did not come up)"
	else
		check "$label: iscsid started" iscsid_up
		check "$label: iSER login through the iser interface" iser_login
		check "$label: the session's transport is iser" iser_session_on_iser
		scsi_io_checks "$label: iser"
		check "$label: iSER logout, disk gone" iser_logout
		iscsid_down
		check "$label: ib_iser removed" modprobe -r ib_iser
	fi
	pair_sync "$label: iser initiator done"
	if pair_sync "$label: srp target" && [ "$REPLY" != none ]; then
		check "$label: SRP add_target" srp_add_target "$REPLY"
		scsi_io_checks "$label: srp"
		check "$label: SRP remote port deleted, disk gone" srp_remove_target
		check "$label: ib_srp removed" modprobe -r ib_srp
	else
		fail "$label: SRP (the target did not come up)"
	fi
	pair_sync "$label: srp initiator done"
}

# A section's title, with the seconds since the script started.
stage() { echo "== pair (${SECONDS}s): $*"; }

stage "guest $PAIR_ROLE at $PAIR_ADDR, guest $PAIR_OTHER at $PAIR_PEER"
[ "${PAIR_FORCE_MR:-}" ] && check "force_mr: booted with ib_core.force_mr=1" \
	grep -qw ib_core.force_mr=1 /proc/cmdline
if ! pair_up; then
	ip addr show eth0
	exit 0
fi
pass "link: eth0 up at MTU 9000, guest $PAIR_OTHER met over it"

stage "softrvt on both hosts"
check "link: softrvt device on eth0" pair_dev_up softrvt softrvt0
pair_sync "softrvt on both"
suite "srvt-srvt, server a" a "rc srq write rping xfer"
# virtio-net hands a large packet over in pages: each host took the
# other's WRITEs, SENDs or READ responses from them.
paged=$(dev_counter init softrvt0 rx_paged)
check "srvt-srvt: packets taken in the NIC's pages (rx_paged ${paged:-none})" \
	[ "${paged:-0}" -gt 0 ]
[ "${SOFTRVT_FULL:-}" ] && suite "srvt-srvt, server b" b
stage "the programs people run on RDMA, softrvt on both hosts"
clients softrvt-softrvt a all
stage "iSER and SRP, softrvt on both hosts"
scsi_pair "scsi srvt target (a), srvt initiator (b)" a

stage "softrvt on guest a, rxe on guest b"
if [ "$PAIR_ROLE" = b ]; then
	check "link: softrvt device removed" pair_dev_down
	check "link: rxe device on eth0" pair_dev_up rxe rxe0
fi
pair_sync "softrvt and rxe"
suite "srvt server (a), rxe client (b)" a "rc send rping xfer"
suite "rxe server (b), srvt client (a)" b "rc read rping xfer"
stage "the programs people run on RDMA, softrvt and rxe"
CLIENTS_FI_UNIVERSE=64
clients "softrvt server, rxe client" a slice
if [ "${SOFTRVT_FULL:-}" ]; then
	clients "rxe server, softrvt client" b all
	stage "iSER and SRP, softrvt and rxe"
	scsi_pair "scsi srvt target (a), rxe initiator (b)" a
	scsi_pair "scsi rxe target (b), srvt initiator (a)" b
fi
stage "NVMe/RDMA each way: each host the target of the other"
nvme_both "srvt host (a), rxe target (b)" "rxe host (b), srvt target (a)"

stage "the programs people run on RDMA, rxe on both hosts (the reference)"
pair_dev_down
check "link: rxe device on eth0" pair_dev_up rxe rxe0
pair_sync "rxe on both"
clients rxe-rxe a slice
check "link: rxe device removed" pair_dev_down

stage "teardown"
# A target's device went with its target.
[ -n "$PAIR_DEV" ] && check "link: $PAIR_DEV removed" pair_dev_down
pair_down
echo "# pair: guest $PAIR_ROLE ran its tests in ${SECONDS}s"
