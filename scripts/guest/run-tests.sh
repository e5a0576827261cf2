#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In-guest tests for `make check`: the KUnit module, then the module, link
# and ring tests.  Writes "PASS name"/"FAIL name" lines to $OUT/results
# and the KUnit log to $OUT/kunit.log.
#
# usage: run-tests.sh [SUITE...]  (every suite, in the order of $SUITES)
# Each suite starts with softrvt not loaded (the loop unloads it after
# each), so that any one runs alone (`make check T=SUITE`).
set -u

. scripts/guest/lib.sh
: > "$OUT/results"
only_rxe_provider || fail "setup: libibverbs providers trimmed to rxe's"

suite_readme() {
	section "README, as printed"
	scripts/guest/readme-tests.sh
}

suite_kunit() {
	section "KUnit"
	# The kernel log is kept whole for the suite's check: mark where KUnit's
	# output starts instead of clearing it.
	echo "softrvt-tests: KUnit starts" > /dev/kmsg
	if modprobe softrvt_kunit; then
		pass "kunit: module loads"
	else
		fail "kunit: module loads"
	fi
	dmesg | sed -n '/softrvt-tests: KUnit starts/,$p' | tail -n +2 > "$OUT/kunit.log"
	rmmod softrvt_kunit
}

suite_link() {
	section "rdma link"
	veth v0 v1
	check "link: softrvt not loaded before link add" sh -c '! lsmod | grep -q "^softrvt "'
	check "link: rdma link add autoloads softrvt" \
		rdma link add softrvt0 type softrvt netdev v0
	check "link: module loaded by alias" sh -c 'lsmod | grep -q "^softrvt "'
	# The crypto API's "crc32" is crc32-pclmul before 6.14 (KUnit loaded it:
	# the guest's CPU has PCLMULQDQ) and crc32-lib over crc32_le() since, when
	# lib/crc32 runs the arch code itself.  The module loaded again timed
	# crc32_le against it and kept crc32_le unless the other was faster by
	# more than an eighth.
	icrc_choice_holds() {
		dmesg | grep "softrvt: ICRC by" | tail -n 1 | awk '{
			sub(/.*softrvt: ICRC by /, "")
			# CHOSEN (crc32_le LE MB/s, OTHER TFM MB/s)
			chosen = $1; le = $3; other = $5; tfm = $6
			exit !((other == "crc32-pclmul" || other == "crc32-lib") &&
			       (chosen == "crc32_le") == !(tfm * 8 > le * 9))
		}'
	}
	check "link: ICRC CRC-32 chosen by timing crc32_le against the crypto API's crc32" \
		icrc_choice_holds
	rdma link show
	rdma dev show
	check "link: rdma link show lists softrvt0 on v0" \
		sh -c 'rdma link show softrvt0/1 | grep -q "netdev v0"'
	check "link: port ACTIVE with carrier" wait_for 50 state_is softrvt0 ACTIVE
	check "link: node type and transport" \
		sh -c 'rdma dev show softrvt0 | grep -q "node_type ca"'
	check "link: hca_type names the driver, the provider's mark" \
		sh -c '[ "$(cat /sys/class/infiniband/softrvt0/hca_type)" = softrvt ]'
	check "link: second device on the same netdev refused with EEXIST" \
		sh -c 'rdma link add softrvt9 type softrvt netdev v0 2>&1 | grep -q "File exists"'
	check "link: refused device not created" no_ibdev softrvt9

	section "GIDs"
	ip addr add 198.18.11.1/24 dev v0
	ip addr add 2001:2:0:11::1/64 dev v0 nodad
	gid_has() { grep -qx "$1" /sys/class/infiniband/softrvt0/ports/1/gids/* 2>/dev/null; }
	check "gid: default GID from the MAC" \
		sh -c '[ "$(cut -c1-4 /sys/class/infiniband/softrvt0/ports/1/gids/0)" = fe80 ]'
	check "gid: IPv4 address becomes a GID" \
		wait_for 50 gid_has 0000:0000:0000:0000:0000:ffff:c612:0b01
	check "gid: IPv6 address becomes a GID" \
		wait_for 50 gid_has 2001:0002:0000:0011:0000:0000:0000:0001
	check "gid: RoCE v2 GID types" \
		grep -q "RoCE v2" /sys/class/infiniband/softrvt0/ports/1/gid_attrs/types/0

	section "port state follows the netdev"
	ip link set v1 down
	check "port: DOWN when the peer loses carrier" wait_for 50 state_is softrvt0 DOWN
	ip link set v1 up
	check "port: ACTIVE again with carrier" wait_for 50 state_is softrvt0 ACTIVE
	ip link set v0 down
	check "port: DOWN when its netdev is down" wait_for 50 state_is softrvt0 DOWN
	ip link set v0 up
	check "port: ACTIVE when its netdev is up" wait_for 50 state_is softrvt0 ACTIVE

	section "user rings through uverbs"
	if [ -x tests/uverbs_rings ]; then
		tap_prog "uverbs_rings" "$OUT/uverbs_rings.tap" \
			tests/uverbs_rings softrvt0
	else
		fail "uverbs_rings: binary built"
	fi

	section "verbs through libsoftrvt"
	scripts/guest/verbs-tests.sh

	section "rdma link delete and netdev removal"
	check "link: device on the peer end" \
		rdma link add softrvt1 type softrvt netdev v1
	check "link: rdma link delete removes it" \
		sh -c 'rdma link delete softrvt1 && ! rdma link show softrvt1/1 2>/dev/null'
	check "link: gone from sysfs" no_ibdev softrvt1
	check "link: add again after delete" \
		rdma link add softrvt1 type softrvt netdev v1
	ip link del v0
	check "link: deleting the netdevs removes both devices" \
		wait_for 100 sh -c '[ ! -e /sys/class/infiniband/softrvt0 ] && [ ! -e /sys/class/infiniband/softrvt1 ]'
	check "link: rdma link show is empty" sh -c '[ -z "$(rdma link show)" ]'

	section "rmmod with devices present"
	veth a0 a1
	veth b0 b1
	rdma link add softrvt2 type softrvt netdev a0
	rdma link add softrvt3 type softrvt netdev b1
	check "rmmod: two devices present" sh -c 'has_ibdev() { [ -e /sys/class/infiniband/$1 ]; }; has_ibdev softrvt2 && has_ibdev softrvt3'
	check "rmmod: succeeds" rmmod softrvt
	check "rmmod: devices removed" sh -c '[ -z "$(ls /sys/class/infiniband)" ]'
	check "rmmod: reload and add again" \
		sh -c 'modprobe softrvt && rdma link add softrvt4 type softrvt netdev a1 && [ -e /sys/class/infiniband/softrvt4 ]'
	rdma link delete softrvt4
	ip link del a0
	ip link del b0
}

suite_fault() { scripts/guest/fault-tests.sh; }

# Messages of 2 GiB posted by an unprivileged process: no CPU held.
suite_engine() { scripts/guest/engine-tests.sh; }

# The kernel's NVMe/RDMA host and target, then NFS over RDMA, each on one
# device; before the wire tests too, as they hold UDP 4791 in the initial
# namespace meanwhile.  The force_mr variant of NVMe needs its own boot.
suite_nvme() { scripts/guest/nvme-tests.sh; }
suite_nfs() { scripts/guest/nfs-tests.sh; }
# iSER and SRP, initiators and LIO targets, on one device.
suite_scsi() { scripts/guest/scsi-tests.sh; }
# The kernel's rdma selftests: before rxe is ever loaded, which holds UDP
# 4791 in the initial namespace that they watch open and close.
suite_selftests() { scripts/guest/selftests.sh; }

# After those: rxe binds UDP 4791 in the initial namespace when it loads,
# which it cannot while a softrvt device there holds the port.
suite_wire() {
	section "RoCEv2 on the wire"
	scripts/guest/wire-tests.sh
}

# After the wire tests, for the same reason: rxe comes and goes.
suite_teardown() {
	section "teardown under traffic"
	scripts/guest/teardown-tests.sh
}

SUITES="readme kunit link fault engine nvme nfs scsi selftests wire teardown"
# shellcheck disable=SC2086
[ $# -gt 0 ] || set -- $SUITES
for suite in "$@"; do
	case " $SUITES " in
	*" $suite "*)
		"suite_$suite"
		# The next suite starts with softrvt unloaded, whatever this
		# one left.
		rmmod softrvt 2>/dev/null
		;;
	*) fail "suite $suite: one of $SUITES" ;;
	esac
done
section "end"
true
