#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`make bench`'s plot: bandwidth against message size, one row of
panels (RDMA WRITE, SEND, READ) a link, one line a device, and the TCP
stream's writes of the same size in every panel.  Each point is the
median over the rounds of a bench CSV (round,device,workload,figure,unit).
Drawn by gnuplot into a PNG.

usage: bench-plot.py OUT.png TITLE CSV [TITLE CSV...]
"""

import csv
import os
import statistics
import subprocess
import sys
import tempfile

OPS = ("write", "send", "read")
NAMES = {
    "srvt4": "softrvt-softrvt IPv4", "srvt6": "softrvt-softrvt IPv6",
    "rxe4": "rxe-softrvt IPv4", "softrvt": "softrvt-softrvt",
    "rxe": "rxe-rxe", "tcp": "TCP stream",
}
# One colour a device, the same in every panel.
COLOURS = {
    "srvt4": "#1b9e77", "srvt6": "#7570b3", "softrvt": "#1b9e77",
    "rxe4": "#d95f02", "rxe": "#d95f02", "tcp": "#666666",
}


def size_bytes(text):
    mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    return int(text.rstrip("KM")) * mult


def medians(path):
    """series[(device, op)] = [(bytes, MB/s)], sorted by size."""
    figs = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["unit"] != "MB/s":
                continue
            try:
                fig = float(row["figure"])
            except ValueError:
                continue
            op, size = row["workload"].split()
            figs.setdefault((row["device"], op, size_bytes(size)), []).append(fig)
    series = {}
    for (dev, op, size), values in figs.items():
        series.setdefault((dev, op), []).append((size, statistics.median(values)))
    return {k: sorted(v) for k, v in series.items()}


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    links = [(sys.argv[i], medians(sys.argv[i + 1]))
             for i in range(2, len(sys.argv), 2)]
    tmp = tempfile.mkdtemp(prefix="bench-plot.")
    plot = [
        "set terminal png size 1500,%d" % (450 * len(links)),
        "set output '%s'" % out,
        "set multiplot layout %d,3" % len(links),
        "set logscale x 2",
        "set xtics ('1K' 1024, '4K' 4096, '16K' 16384, '64K' 65536, "
        "'256K' 262144, '1M' 1048576)",
        "set xlabel 'message size (bytes)'",
        "set ylabel 'MB/s'",
        "set yrange [0:*]",
        "set key top left",
        "set grid",
    ]
    for n, (title, series) in enumerate(links):
        for op in OPS:
            curves = []
            for (dev, what), points in sorted(series.items()):
                if what != op and not (dev == "tcp" and what == "stream"):
                    continue
                data = os.path.join(tmp, "%d-%s-%s.dat" % (n, dev, op))
                with open(data, "w") as f:
                    for size, mbs in points:
                        f.write("%d %.2f\n" % (size, mbs))
                curves.append("'%s' using 1:2 with linespoints lw 2 "
                              "lc rgb '%s' title '%s'" %
                              (data, COLOURS.get(dev, "#000000"),
                               NAMES.get(dev, dev)))
            plot.append("set title '%s: %s'" % (title, op))
            plot.append("plot " + ", ".join(curves) if curves else
                        "plot NaN notitle")
    plot.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(plot) + "\n", text=True,
                   check=True)


if __name__ == "__main__":
    main()
