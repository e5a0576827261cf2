#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The table of instruction counts of scripts/count.sh.

Each RUN directory holds the plugin's output (insn: one "mark SEQ
kernel K user U" line a marker) and the guest's labels of the same
markers (marks: one line a marker, in the same order).  A transfer
"DRV OP SIZE ITERS" ran between "... start" and "... end" at ITERS = N
and 2N: its work per unit is the difference of the two runs divided by
N (units: bytes moved, round trips).  post_poll_count's markers bracket
single calls.  Prints, for every figure, softrvt's and rdma_rxe's
median over the runs and the ratio softrvt/rxe (median, and the lowest
and highest of the runs' ratios).  Exits 1 if a run's markers and labels
disagree or the instrument's own check (a loop of 10^6 x 2 user
instructions) is off by more than 64.

usage: count-table.py RUN...
"""

import re
import statistics
import sys
from collections import defaultdict

GIB = 1 << 30
LOOP = 2 * 1000000


def load(run):
    counts = []
    with open(f"{run}/insn") as f:
        for line in f:
            m = re.match(r"mark (\d+) kernel (\d+) user (\d+)$", line.strip())
            if m:
                counts.append((int(m[2]), int(m[3])))
    with open(f"{run}/marks") as f:
        labels = [line.strip() for line in f]
    if len(labels) != len(counts):
        sys.exit(f"{run}: {len(counts)} markers counted, {len(labels)} labelled")
    return list(zip(labels, counts))


def figures(marks):
    """Every figure of one run: {(metric, drv): value}."""
    spans = {}
    starts = {}
    calls = defaultdict(list)
    for label, (k, u) in marks:
        if label.endswith(" start"):
            starts[label[:-6]] = (k, u)
            continue
        m = re.match(r"(.*) end( hit| empty)?$", label)
        if not m or m[1] not in starts:
            sys.exit(f"marker '{label}' has no start")
        k0, u0 = starts.pop(m[1])
        if m[2] == " empty":
            continue
        if m[1].endswith(" post") or m[1].endswith(" poll"):
            calls[m[1]].append((k - k0, u - u0))
        else:
            spans[m[1]] = (k - k0, u - u0)
    check = spans.pop("check")[1]
    if abs(check - LOOP) > 64:
        sys.exit(f"the plugin counted {check} user instructions for a loop of {LOOP}")
    out = {("instrument", "loop"): check, ("instrument", "rep"): spans.pop("rep")[1]}
    by = defaultdict(dict)
    for name, (k, _) in spans.items():
        drv, op, size, iters = name.split()
        by[(drv, op, int(size))][int(iters)] = k
    for (drv, op, size), w in by.items():
        n = min(w)
        per = (w[2 * n] - w[n]) / n
        if op == "rtt":
            out[("kernel instructions per 8-byte RC round trip", drv)] = per
        else:
            out[(f"kernel instructions per GiB, {op.upper()} {size // 1024} KiB",
                 drv)] = per / size * GIB
    for name, v in calls.items():
        drv, what = name.split()
        call = "ibv_post_send" if what == "post" else "ibv_poll_cq"
        out[(f"user instructions per {call} (8-byte SEND)", drv)] = \
            statistics.median(u for _, u in v)
        out[(f"kernel instructions per {call} (8-byte SEND)", drv)] = \
            statistics.median(k for k, _ in v)
    for drv in {name.split()[0] for name in calls}:
        pair = [out.get((f"user instructions per {c} (8-byte SEND)", drv))
                for c in ("ibv_post_send", "ibv_poll_cq")]
        if None not in pair:
            out[("user instructions per post + poll (8-byte SEND)", drv)] = sum(pair)
    return out


def fmt(v):
    if v >= 1e6:
        return f"{v / 1e6:.1f} M"
    if v >= 1e4:
        return f"{v / 1e3:.1f} k"
    return f"{v:.0f}"


def main(runs):
    per_run = [figures(load(r)) for r in runs]
    metrics = []
    for f in per_run:
        for metric, _ in f:
            if metric not in metrics and metric != "instrument":
                metrics.append(metric)
    loops = sorted({f[("instrument", "loop")] for f in per_run})
    reps = sorted({f[("instrument", "rep")] for f in per_run})
    print(f"The instrument: a loop of {LOOP} user instructions counted as "
          f"{', '.join(map(str, loops))}; one rep movsb of 65536 bytes as "
          f"{', '.join(map(str, reps))}.")
    print(f"Guest instructions counted by QEMU (TCG plugin), {len(runs)} runs;")
    print("median per driver, and softrvt/rxe: median [lowest..highest run]")
    print(f"{'figure':58} {'softrvt':>9} {'rxe':>9}  softrvt/rxe")
    for metric in metrics:
        s = [f[(metric, "softrvt")] for f in per_run if (metric, "softrvt") in f]
        r = [f[(metric, "rxe")] for f in per_run if (metric, "rxe") in f]
        ratios = [f[(metric, "softrvt")] / f[(metric, "rxe")] for f in per_run
                  if (metric, "softrvt") in f and (metric, "rxe") in f
                  and f[(metric, "rxe")] > 0]
        ratio = (f"{statistics.median(ratios):.2f} "
                 f"[{min(ratios):.2f}..{max(ratios):.2f}]" if ratios else "-")
        print(f"{metric:58} {fmt(statistics.median(s)) if s else '-':>9} "
              f"{fmt(statistics.median(r)) if r else '-':>9}  {ratio}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
