#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The send engine yields its CPU (tests/engine_budget): messages of 2 GiB
# posted by an unprivileged process, on one device (softrvt10, the same-
# device path, in the poster's own post_send first) and as UC on the wire
# from softrvt10 in nse1 to softrvt11 in nse2.  The test measures what
# it needs itself, and the kernel's soft-lockup detector watches it too:
# the suite boots with it off (nosoftlockup: under TCG slow paths of other
# subsystems hold a CPU for seconds), and it is on here, at a threshold
# of 2 x 5 s, panicking the guest on a lockup.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh

# SOFTLOCKUP_DETECTOR on and panicking: VALUE for each sysctl, or the
# values it had.
lockup_watch() { # on|off
	local k=/proc/sys/kernel
	[ -w $k/soft_watchdog ] || return 1
	if [ "$1" = on ]; then
		lockup_saved="$(cat $k/watchdog_thresh) $(cat $k/softlockup_panic)"
		echo 5 > $k/watchdog_thresh && echo 1 > $k/softlockup_panic &&
			echo 1 > $k/soft_watchdog
	else
		echo 0 > $k/soft_watchdog
		set -- $lockup_saved
		echo "$1" > $k/watchdog_thresh
		echo "$2" > $k/softlockup_panic
	fi
}

section "engine budget"
mkdir -p "$OUT/engine"
check "engine budget: the soft-lockup detector on, panicking" lockup_watch on
if wire_ns_pair nse1 e0 softrvt10 nse2 e1 softrvt11 16; then
	ig10=$(gid_index softrvt10 198.18.16.1)
	ig11=$(gid_index softrvt11 198.18.16.2)
	tap_prog "engine budget same device" "$OUT/engine/local.tap" \
		timeout 300 tests/engine_budget softrvt10 "$ig10" \
		softrvt10 "$ig10" local
	tap_prog "engine budget UC wire" "$OUT/engine/uc.tap" \
		timeout 300 tests/engine_budget softrvt10 "$ig10" \
		softrvt11 "$ig11" uc
else
	fail "engine budget: namespaces, veth and devices"
fi
lockup_watch off
ip netns del nse1
ip netns del nse2
gone() { no_ibdev softrvt10 && no_ibdev softrvt11; }
check "engine budget: the devices go with their namespaces" wait_for 100 gone
