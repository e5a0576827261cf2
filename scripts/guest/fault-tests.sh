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
if wire_ns_pair nsf1 f0 softrvt5 nsf2 f1 softrvt6 14; then
	args=(-r 1 -c 3)
	[ "${SOFTRVT_FULL:-}" ] && args=(-r 10 -c 1)
	tap_prog "fault" "$OUT/fault.tap" \
		timeout 3000 tests/verbs_fault "${args[@]}" softrvt5 softrvt6 \
		/run/netns/nsf1 198.18.14.1 /run/netns/nsf2 198.18.14.2
else
	fail "fault: namespaces, veth and devices"
fi
ip netns del nsf1
ip netns del nsf2
gone() { no_ibdev softrvt5 && no_ibdev softrvt6; }
check "fault: the devices go with their namespaces" wait_for 100 gone
