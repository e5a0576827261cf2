#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Where the counted kernel instructions of scripts/count.sh go.

RUN holds the plugin's profile (prof: "mark SEQ", then "VADDR INSNS
EXECS" for each translation block run since the marker before), the
guest's labels of the markers (marks) and its /proc/kallsyms.  For each
transfer "DRV OP SIZE ITERS" run at N and 2N, the blocks of the two runs
are named by the kernel function they start in and the difference of
the two is scaled to one GiB moved (one round trip for "rtt"), as
count-table.py does with the totals: start and end of the programs
cancel.  Prints, for each transfer, the functions that take the most,
then the totals by module (vmlinux, softrvt, rdma_rxe, ib_core...), and
the user instructions apart.  For post_poll_count's calls ("DRV post",
"DRV poll"), the user instructions of one call, by the function of the
library they ran in: the process's mappings (marks.DRV.maps) name the
file, nm its symbols, looked up under ROOT (the guest's root) or, for
/mnt/softrvt/, under TOP (the repository).  Exits 1 if the profile and
the labels disagree.

usage: count-prof.py RUN [ROOT TOP]
"""

import bisect
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

TOP_N = 25

GIB = 1 << 30
KERNEL_HALF = 0xffff800000000000


def load_kallsyms(path):
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[1] not in "tTwW":
                continue
            addr = int(parts[0], 16)
            if addr < KERNEL_HALF:
                continue
            mod = parts[3].strip("[]") if len(parts) > 3 else "vmlinux"
            syms.append((addr, parts[2], mod))
    syms.sort()
    return [a for a, _, _ in syms], syms


def load_prof(path):
    """{seq: {vaddr: insns}} for each marker's section."""
    sections = {}
    cur = None
    with open(path) as f:
        for line in f:
            if line.startswith("mark "):
                cur = sections.setdefault(int(line.split()[1]), defaultdict(int))
                continue
            vaddr, n, execs = line.split()
            cur[int(vaddr, 16)] += int(n) * int(execs)
    return sections


def by_symbol(section, addrs, syms):
    out = defaultdict(int)
    for vaddr, insns in section.items():
        if vaddr < KERNEL_HALF:
            out[("(user)", "user")] += insns
            continue
        i = bisect.bisect_right(addrs, vaddr) - 1
        if i < 0:
            out[("?", "?")] += insns
        else:
            out[(syms[i][1], syms[i][2])] += insns
    return out


class UserSyms:
    """User addresses of one process, named by function where nm can."""

    def __init__(self, maps, root, top):
        self.maps = []
        self.syms = {}
        self.root, self.top = root, top
        with open(maps) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6 or "x" not in parts[1]:
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                self.maps.append((lo, hi, int(parts[2], 16), parts[5]))

    def host_path(self, path):
        if path.startswith("/mnt/softrvt/"):
            return os.path.join(self.top, path[len("/mnt/softrvt/"):])
        return os.path.join(self.root, path.lstrip("/"))

    def table(self, path):
        if path not in self.syms:
            syms = []
            host = self.host_path(path)
            for opt in ([], ["-D"]):
                try:
                    out = subprocess.run(["nm", "--defined-only", *opt, host],
                                         capture_output=True, text=True).stdout
                except OSError:
                    out = ""
                for line in out.splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[1] in "tTwWiI":
                        syms.append((int(parts[0], 16), parts[2]))
            syms = sorted(set(syms))
            self.syms[path] = ([a for a, _ in syms], syms)
        return self.syms[path]

    def name(self, vaddr):
        for lo, hi, off, path in self.maps:
            if lo <= vaddr < hi:
                addrs, syms = self.table(path)
                i = bisect.bisect_right(addrs, vaddr - lo + off) - 1
                lib = os.path.basename(path)
                return (syms[i][1] if i >= 0 else "?", lib)
        return ("?", "?")


def calls(run, labels, sections, root, top):
    """Per call of post_poll_count, the user instructions by function:
    each function's median over the calls.  The profile cannot tell one
    process from another, and a call that a timer tick interrupted also
    holds other processes' blocks: the median leaves those out, as
    count-table.py's median of the totals does."""
    per = defaultdict(list)
    for seq, label in enumerate(labels, 1):
        m = re.match(r"(\S+) (post|poll) end hit$|(\S+) (post) end$", label)
        if not m or seq not in sections:
            continue
        drv, what = (m[1], m[2]) if m[1] else (m[3], m[4])
        per[(drv, what)].append({v: i for v, i in sections[seq].items()
                                 if v < KERNEL_HALF})
    for (drv, what), each in per.items():
        maps = f"{run}/marks.{drv}.maps"
        if not os.path.exists(maps):
            continue
        us = UserSyms(maps, root, top)
        named = []
        for addrs in each:
            by = defaultdict(int)
            for vaddr, insns in addrs.items():
                by[us.name(vaddr)] += insns
            named.append(by)
        syms = {k for by in named for k in by}
        med = {k: statistics.median(by.get(k, 0) for by in named) for k in syms}
        call = "ibv_post_send" if what == "post" else "ibv_poll_cq"
        print(f"== {drv} {call}: {sum(med.values()):.0f} user instructions, "
              f"the functions' medians over {len(each)} calls (functions "
              "of a library without symbols: the nearest exported one)")
        for (sym, lib), v in sorted(med.items(), key=lambda x: -x[1])[:TOP_N]:
            if v:
                print(f"   {v:6.1f}  {sym} [{lib}]")


def main(run, top, root=None, tree=None):
    addrs, syms = load_kallsyms(f"{run}/kallsyms")
    if not addrs:
        sys.exit(f"{run}/kallsyms: no kernel text symbols (kptr_restrict?)")
    sections = load_prof(f"{run}/prof")
    with open(f"{run}/marks") as f:
        labels = [line.strip() for line in f]
    spans = defaultdict(dict)
    for seq, label in enumerate(labels, 1):
        m = re.match(r"(\S+) (write|send|read|rtt) (\d+) (\d+) end$", label)
        if not m:
            continue
        if seq not in sections:
            sys.exit(f"marker {seq} ({label}) has no profile section")
        spans[(m[1], m[2], int(m[3]))][int(m[4])] = \
            by_symbol(sections[seq], addrs, syms)
    for (drv, op, size), w in spans.items():
        if len(w) != 2:
            continue
        n = min(w)
        scale = 1 / n if op == "rtt" else GIB / (n * size)
        unit = "round trip" if op == "rtt" else "GiB"
        diff = {k: (w[2 * n].get(k, 0) - w[n].get(k, 0)) * scale
                for k in set(w[n]) | set(w[2 * n])}
        kernel = sum(v for (s, mod), v in diff.items() if mod != "user")
        print(f"== {drv} {op.upper()} {size}: {kernel / 1e6:.1f} M kernel "
              f"instructions per {unit}" if op != "rtt" else
              f"== {drv} {op} {size}: {kernel / 1e3:.1f} k kernel "
              f"instructions per {unit}")
        mods = defaultdict(float)
        for (s, mod), v in diff.items():
            mods[mod] += v
        print("   by module: " + ", ".join(
            f"{mod} {100 * v / kernel:.1f}%" for mod, v in
            sorted(mods.items(), key=lambda x: -x[1])
            if mod != "user" and abs(v) >= kernel / 1000))
        print(f"   user: {mods.get('user', 0) / (1e6 if op != 'rtt' else 1e3):.1f}"
              f" {'M' if op != 'rtt' else 'k'}")
        for (s, mod), v in sorted(diff.items(), key=lambda x: -x[1])[:top]:
            if mod == "user":
                continue
            print(f"   {100 * v / kernel:5.1f}%  {s} [{mod}]")
    if root:
        calls(run, labels, sections, root, tree)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], TOP_N, *sys.argv[2:]))
