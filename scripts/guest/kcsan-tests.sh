#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# On the KCSAN kernel (make check-full): the paths where modify_qp writes
# what the engine reads while it runs, exercised long enough for KCSAN's
# watchpoints to meet them.  Writes PASS/FAIL lines to $OUT/results; a
# KCSAN report naming softrvt fails the run (scripts/check.sh).
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
: > "$OUT/results"
only_rxe_provider || fail "setup: libibverbs providers trimmed to rxe's"
section "KCSAN: wire setup"
wire_setup || { fail "kcsan: wire setup"; exit 1; }
ig1=$(gid_index softrvt1 198.18.12.1)
ig2=$(gid_index softrvt2 198.18.12.2)
mkdir -p "$OUT/wire"
section "KCSAN: a new path in SQD while READ responses stream"
tap_prog "kcsan av sqd" "$OUT/wire/av-sqd.tap" \
	ns_exec ns1 timeout 1800 scripts/guest/wire-av-sqd.py softrvt1 "$ig1" \
	softrvt2 "$ig2" 30 200
section "KCSAN: rc_pingpong both ways"
wire_pair "kcsan: rc_pingpong -s 65536" "$iters" \
	ns1 softrvt1 198.18.12.1 ns2 softrvt2 198.18.12.2 \
	ibv_rc_pingpong -d %D -g %G -s 65536 -n 200 -c
wire_teardown
section "end"
