#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The kernel's own rdma selftests (tools/testing/selftests/rdma of the
# test kernel's source, staged by scripts/check.sh in $OUT/selftests),
# run against softrvt as they are written for rdma_rxe: adapted only
# where they name the driver (`type rxe`, the module rdma_rxe) and where
# they name addresses outside the test range (198.18.0.0/15, and
# 2001:2::/48 for IPv6), which nothing here may send to.  Each program
# of their Makefile's TEST_PROGS must exit 0: a skip fails too.  Writes
# PASS/FAIL lines to $OUT/results.
set -u

. scripts/guest/lib.sh
# softrvt's provider (RDMAV_DRIVERS), as a system with softrvt has it
# installed: their rping opens the device through librdmacm.
. scripts/guest/wire-setup.sh

SRC=$OUT/selftests
DST=/tmp/selftests

adapt() { # file
	sed -e 's/type rxe\b/type softrvt/g' -e 's/\brdma_rxe\b/softrvt/g' \
		-e 's/\b1\.1\.1\.1\b/198.18.44.1/g' \
		-e 's/\b1\.1\.1\.2\b/198.18.44.2/g' \
		-e 's/\b2\.2\.2\.2\b/198.18.45.2/g' \
		-e 's/\b2001:db8::/2001:2:0:44::/g' "$1"
}

# What the adaptation must leave: no driver but softrvt, no address
# outside the test ranges.
adapted_clean() { # file
	! grep -Eq 'type rxe\b|rdma_rxe' "$1" &&
		! grep -Eo '\b[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+\b' "$1" |
			grep -Evq '^198\.1[89]\.' &&
		! grep -Eiq '\b2001:db8' "$1"
}

# The programs the selftests' Makefile runs.
test_progs() {
	sed -n '/^TEST_PROGS/,/^$/p' "$SRC/rdma/Makefile" |
		grep -Eo '[A-Za-z0-9_]+\.sh'
}

section "the kernel's rdma selftests, on softrvt"
mkdir -p "$DST/rdma" "$DST/kselftest"
cp "$SRC/kselftest/ktap_helpers.sh" "$DST/kselftest/"
progs=$(test_progs)
check "selftests: TEST_PROGS of tools/testing/selftests/rdma found" \
	[ -n "$progs" ]
for p in $progs; do
	adapt "$SRC/rdma/$p" > "$DST/rdma/$p"
	chmod +x "$DST/rdma/$p"
	if ! adapted_clean "$DST/rdma/$p"; then
		fail "selftests: $p adapted: softrvt, test addresses only"
		continue
	fi
	pass "selftests: $p adapted: softrvt, test addresses only"
	# What a distribution's boot gives them: /dev/net/tun, whose module
	# a static node loads on first open (the one before may unload it).
	modprobe tun
	# Their stdout goes to /dev/null; bash -x says on stderr what ran.
	(cd "$DST/rdma" && timeout 300 bash -x "./$p") > "/tmp/$p.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pass "selftests: $p"
	else
		fail "selftests: $p (exit $rc)"
		tail -n 40 "/tmp/$p.log"
	fi
	cp "/tmp/$p.log" "$OUT/selftests-$p.log" 2>/dev/null
done

# What those programs leave unchecked: devices moved into namespaces of
# their own in exclusive mode (their clients removed and added again)
# still carry connections.  QP1 must leave RESET again ("Couldn't change
# QP1 state to INIT" and no RDMA CM otherwise).  The mode changes only
# while no namespace but the initial one exists.
section "devices moved into namespaces of their own (exclusive mode)"
log0=$(dmesg | wc -l)
ports_opened() { ! dmesg | tail -n +"$((log0 + 1))" | grep "softrvt4[01]: Couldn't"; }
# ip netns exec, not nsenter: libibverbs finds devices in the sysfs of the
# namespace, which it mounts.
rping_moved() {
	local spid crc log=/tmp/rping-moved
	ip netns exec sta timeout 120 rping -s -a 198.18.48.1 -v -C 5 \
		> "$log.server" 2>&1 &
	spid=$!
	wait_for 100 sh -c 'ip netns exec sta rdma resource show cm_id | grep -q LISTEN'
	ip netns exec stb timeout 120 rping -c -a 198.18.48.1 -v -V -C 5 \
		> "$log.client" 2>&1
	crc=$?
	wait "$spid" && [ "$crc" = 0 ] && grep -q '^ping data' "$log.client" &&
		return 0
	tail -n 5 "$log.server" "$log.client"
	return 1
}
check "netns: exclusive mode" rdma system set netns exclusive
ip netns add sta
ip netns add stb
ip link add t0 netns sta type veth peer name t1 netns stb
ns_exec sta ip addr add 198.18.48.1/24 dev t0
ns_exec stb ip addr add 198.18.48.2/24 dev t1
ns_exec sta ip link set t0 up
ns_exec stb ip link set t1 up
# A device is created in the initial namespace, whatever its netdev's.
ns_exec sta rdma link add softrvt40 type softrvt netdev t0
ns_exec stb rdma link add softrvt41 type softrvt netdev t1
check "netns: softrvt40 and softrvt41 moved into their netdevs' namespaces" \
	sh -c 'rdma dev set softrvt40 netns sta && rdma dev set softrvt41 netns stb'
check "netns: their ports opened again (QP1 out of RESET)" ports_opened
check "netns: rping between the moved devices, data validated" rping_moved
ip netns del sta
ip netns del stb
check "netns: both devices gone with their netdevs, the namespaces' veth" \
	wait_for 100 sh -c '! rdma dev show softrvt40 && ! rdma dev show softrvt41'
check "netns: no port failed to open again" ports_opened
check "netns: shared mode again" rdma system set netns shared
