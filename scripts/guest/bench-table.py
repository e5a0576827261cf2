#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The table of a bench CSV (round,device,workload,figure,unit): for each
workload the median figure of DEVICE and of ANCHOR over the rounds, the
ratio of the medians, and the spread of the rounds' own ratios.  A "tcp"
device's "stream" figure, if any, is the anchor of extra rows: DEVICE's
64K bandwidths against the TCP stream on the same link.

usage: bench-table.py CSV DEVICE ANCHOR
"""

import csv
import statistics
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def main():
    path, dev, anchor = sys.argv[1:4]
    figs = {}
    units = {}
    order = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = row["workload"]
            if key not in order:
                order.append(key)
            units[key] = row["unit"]
            fig = number(row["figure"])
            if fig is not None:
                figs.setdefault((row["device"], key), {})[row["round"]] = fig

    def line(name, a, b, ratios, unit):
        spread = "%.2f..%.2f" % (min(ratios), max(ratios)) if ratios else "n/a"
        ratio = "%.2f" % (a / b) if a and b else "n/a"
        print("%-24s %10s %10s %7s %12s  %s" % (
            name, "%.1f" % a if a else "n/a", "%.1f" % b if b else "n/a",
            ratio, spread, unit))

    print("%-24s %10s %10s %7s %12s  %s" % (
        "workload", dev, anchor, "ratio", "spread", "unit"))
    for key in order:
        mine = figs.get((dev, key), {})
        theirs = figs.get((anchor, key), {})
        if not mine and not theirs:
            continue
        ratios = [mine[r] / theirs[r] for r in mine
                  if r in theirs and theirs[r] > 0]
        unit = units[key]
        if "usec" in unit:
            unit += " (lower is better)"
        line(key, statistics.median(mine.values()) if mine else None,
             statistics.median(theirs.values()) if theirs else None,
             ratios, unit)
    tcp = figs.get(("tcp", "stream"), {})
    if not tcp:
        return
    tcp_mbs = statistics.median(tcp.values())
    print()
    print("%-24s %10s %10s %7s" % ("against TCP", dev, "tcp", "ratio"))
    for key in order:
        mine = figs.get((dev, key), {})
        if units.get(key) != "MB/s" or not key.endswith("64K") or not mine:
            continue
        line(key, statistics.median(mine.values()), tcp_mbs,
             [v / tcp_mbs for v in mine.values()], "MB/s (one iperf3 stream)")


if __name__ == "__main__":
    main()
