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

SRC=$OUT/selftests
# softrvt's provider, as a system with softrvt has it installed: their
# rping opens the device through librdmacm.
export RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt
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
	check "selftests: $p adapted: softrvt, test addresses only" \
		adapted_clean "$DST/rdma/$p"
	adapted_clean "$DST/rdma/$p" || continue
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
