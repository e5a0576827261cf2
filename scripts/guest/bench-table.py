#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The table of bench CSVs (round,device,workload,figure,unit): for each
workload the median figure of DEVICE and of ANCHOR over the rounds, the
ratio of the medians, and the spread of the rounds' own ratios.

Figures in "CPU s/GiB" are shares of one run's CPU time: where several
CSVs (one per host) hold the same round, device and workload, they are
added.  A "tcp" device's "stream SIZE" figures are the anchor of extra
rows: DEVICE's bandwidths at SIZE against a TCP stream writing SIZE on
the same link.  With -a, ANCHOR's too, so that the table shows what a
multiple of the anchor asks of the link: where ANCHOR reaches a third
of the TCP stream, three times ANCHOR is faster than TCP there.

usage: bench-table.py [-a] DEVICE ANCHOR CSV...
"""

import csv
import statistics
import sys

CPU_UNIT = "CPU s/GiB"


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def load(paths):
    """figs[(device, workload)][round], units[workload], workload order."""
    figs = {}
    units = {}
    order = []
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = row["workload"]
                if key not in order:
                    order.append(key)
                units[key] = row["unit"]
                fig = number(row["figure"])
                if fig is None:
                    continue
                rounds = figs.setdefault((row["device"], key), {})
                if row["unit"] == CPU_UNIT:
                    rounds[row["round"]] = rounds.get(row["round"], 0) + fig
                else:
                    rounds[row["round"]] = fig
    return figs, units, order


def line(name, a, b, ratios, unit):
    spread = "%.2f..%.2f" % (min(ratios), max(ratios)) if ratios else "n/a"
    ratio = "%.2f" % (a / b) if a and b else "n/a"
    print("%-24s %10s %10s %7s %12s  %s" % (
        name, "%.2f" % a if a else "n/a", "%.2f" % b if b else "n/a",
        ratio, spread, unit))


def compare(name, mine, theirs, unit):
    ratios = [mine[r] / theirs[r] for r in mine
              if r in theirs and theirs[r] > 0]
    line(name, statistics.median(mine.values()) if mine else None,
         statistics.median(theirs.values()) if theirs else None,
         ratios, unit)


def main():
    args = sys.argv[1:]
    anchor_tcp = args[:1] == ["-a"]
    if anchor_tcp:
        args = args[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    dev, anchor = args[:2]
    figs, units, order = load(args[2:])

    print("%-24s %10s %10s %7s %12s  %s" % (
        "workload", dev, anchor, "ratio", "spread", "unit"))
    for key in order:
        mine = figs.get((dev, key), {})
        theirs = figs.get((anchor, key), {})
        if not mine and not theirs:
            continue
        unit = units[key]
        if "usec" in unit or unit == CPU_UNIT:
            unit += " (lower is better)"
        compare(key, mine, theirs, unit)

    tcp_rows = [key for key in order
                if units.get(key) == "MB/s" and figs.get((dev, key))
                and figs.get(("tcp", "stream " + key.split()[-1]))]
    if not tcp_rows:
        return
    print()
    print("%-24s %10s %10s %7s %12s" % (
        "against TCP", dev, "tcp", "ratio", "spread"))
    for key in tcp_rows:
        compare(key, figs[(dev, key)], figs[("tcp", "stream " + key.split()[-1])],
                "MB/s (one iperf3 stream, same write size)")
    anchor_rows = [key for key in tcp_rows if figs.get((anchor, key))]
    if not anchor_tcp or not anchor_rows:
        return
    print()
    print("%-24s %10s %10s %7s %12s" % (
        "against TCP", anchor, "tcp", "ratio", "spread"))
    for key in anchor_rows:
        compare(key, figs[(anchor, key)],
                figs[("tcp", "stream " + key.split()[-1])],
                "MB/s (3x %s passes TCP where this is > 0.33)" % anchor)


if __name__ == "__main__":
    main()
