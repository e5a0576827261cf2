#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Allocation failures injected into every verb and into rdma_cm's
# connection setup (tests/verbs_fault), on softrvt5 in nsf1 and softrvt6 in
# nsf2 joined by a veth.  The injection is scoped to the test's own task;
# the suite's kmemleak scan and dmesg check catch what it leaks or breaks.
# SOFTRVT_FULL=1 adds rounds of random failures and tries every
# allocation of the connection setup instead of every third.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh

section "fault injection"
if [ ! -e /sys/kernel/debug/failslab ] ||
   [ ! -e /sys/kernel/debug/fail_page_alloc ]; then
	fail "fault injection: failslab and fail_page_alloc in debugfs"
	exit 0
fi
modprobe rdma_ucm
ip netns add nsf1
ip netns add nsf2
ip link add f0 netns nsf1 type veth peer name f1 netns nsf2
if wire_ns_dev nsf1 f0 softrvt5 198.18.14.1 2001:2:0:14::1 &&
   wire_ns_dev nsf2 f1 softrvt6 198.18.14.2 2001:2:0:14::2; then
	args=(-r 1 -c 3)
	[ "${SOFTRVT_FULL:-}" ] && args=(-r 10 -c 1)
	timeout 3000 tests/verbs_fault "${args[@]}" softrvt5 softrvt6 \
		/run/netns/nsf1 198.18.14.1 /run/netns/nsf2 198.18.14.2 \
		> "$OUT/fault.tap" 2>&1
	rc=$?
	echo "# verbs_fault: exit status $rc"
	cat "$OUT/fault.tap"
	tap_results "fault" "$OUT/fault.tap"
	check "fault: exits 0" [ "$rc" = 0 ]
else
	fail "fault: namespaces, veth and devices"
fi
ip netns del nsf1
ip netns del nsf2
gone() { no_ibdev softrvt5 && no_ibdev softrvt6; }
check "fault: the devices go with their namespaces" wait_for 100 gone
