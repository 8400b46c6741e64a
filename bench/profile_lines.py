#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""profile_lines.py - one function of a `make bench MODE=profile` run, by
source line: where inside it the instructions per packet go.

  profile_lines.py DIR KO FUNCTION QDISC FLOWS

DIR is one boot's profile directory (build/bench/<run>/<line>-profile:
runs.jsonl, kallsyms, phase-NNNN.txt), KO the sch_softmq.ko that boot
loaded, with its debug info (build/<line>/softmq/sch_softmq.ko), QDISC and
FLOWS pick the run (e.g. tbf-softmq-cpu 16).  Each translation block that
starts inside FUNCTION is printed with its offset, its instructions per
packet and its source line as addr2line sees it (inlined callers after
"<-").  A block is charged to the line it starts on.
"""
import bisect
import collections
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_profile import load_symbols  # noqa: E402


def ko_offset(ko, fn):
    """FUNCTION's offset in the module's .text, from its symbol table."""
    out = subprocess.run(["nm", ko], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tT" and p[2] == fn:
            return int(p[0], 16)
    sys.exit(f"profile_lines: {fn} not in {ko}")


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.strip().split("\n\n")[1])
    d, ko, fn, qdisc, flows = sys.argv[1:]
    addrs, names = load_symbols(os.path.join(d, "kallsyms"))
    starts = [a for a, n in zip(addrs, names) if n.split()[0] == fn]
    if not starts:
        sys.exit(f"profile_lines: {fn} not in {d}/kallsyms")
    base, koff = starts[0], ko_offset(ko, fn)
    run = None
    for line in open(os.path.join(d, "runs.jsonl")):
        r = json.loads(line)
        if (r.get("type") == "run" and r.get("qdisc") == qdisc and
                str(r.get("flows")) == flows and "profile_phase" in r):
            run = r
    if not run or not run.get("pkts"):
        sys.exit(f"profile_lines: no profiled run of {qdisc} with {flows} flows in {d}")
    blocks = collections.Counter()
    with open(os.path.join(d, "phase-%04d.txt" % run["profile_phase"])) as f:
        for line in f:
            va, n = line.split()[:2]
            va = int(va, 16)
            i = bisect.bisect_right(addrs, va) - 1
            if i >= 0 and addrs[i] == base:
                blocks[va - base] += int(n)
    pkts = run["pkts"]
    print(f"{fn}, {qdisc}, {flows} flows: {sum(blocks.values()) / pkts:.1f} "
          f"instructions per packet")
    for off, n in sorted(blocks.items()):
        src = subprocess.run(["addr2line", "-e", ko, "-j", ".text", "-f", "-i",
                              hex(koff + off)], capture_output=True, text=True).stdout
        where = [os.path.basename(s) for s in src.splitlines()[1::2]]
        print(f"{off:6x} {n / pkts:7.1f}  {' <- '.join(where)}")


if __name__ == "__main__":
    main()
