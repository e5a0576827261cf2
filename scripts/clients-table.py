#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The table of the programs people run on RDMA, from a pair run.

Each guest of the pair (scripts/guest/pair-tests.sh, clients.sh) leaves
rows "PAIRING<TAB>PROGRAM<TAB>PASS|FAIL<TAB>FIGURE" in its out folder's
file `clients`.  This prints one reStructuredText table: a line per
program, a column per pairing, each cell the result and the figure the
tool printed under TCG (for reading, not for judging).  Programs keep
the order in which they first ran.

usage: clients-table.py CLIENTS-FILE...
"""

import sys


def cells(paths):
    pairings, programs, cell = [], [], {}
    for path in paths:
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            parts = line.split("\t")
            if len(parts) != 4:
                continue
            pairing, program, result, figure = parts
            if pairing not in pairings:
                pairings.append(pairing)
            if program not in programs:
                programs.append(program)
            text = result.lower() if result in ("PASS", "FAIL") else "?"
            if figure:
                text += ": " + figure
            cell[(program, pairing)] = text
    return pairings, programs, cell


def table(pairings, programs, cell):
    head = ["program"] + pairings
    rows = [[p] + [cell.get((p, q), "not run") for q in pairings]
            for p in programs]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()
    out = [rule, line, rule]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in rows]
    out.append(rule)
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    pairings, programs, cell = cells(argv[1:])
    if not programs:
        print("clients-table.py: no rows", file=sys.stderr)
        return 1
    print(table(pairings, programs, cell))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
