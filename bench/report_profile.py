#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report_profile.py - `make bench MODE=profile`: instructions per packet
per kernel function, from bench/insn-profile.c's dumps.

  report_profile.py --meta META.json --out-prefix PREFIX DIR...

Each DIR holds one boot's runs.jsonl (bench/guest.sh --profile: each run
names the plugin dump of its measured pktgen run, profile_phase), that
boot's /proc/kallsyms (kernel and module symbols, nokaslr) and the dumps
phase-NNNN.txt ("vaddr instructions" per translation block).  A block is
charged to the function whose symbol is at or below its start.  Writes
PREFIX.json and PREFIX.md: per flow count, the functions where any qdisc
spends at least 2 instructions per packet more than tbf's bfifo (what the
qdisc adds, function by function), and every softmq function.
"""
import bisect
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import QDISC_ORDER, QDISC_LABEL, md_header, report_args, write_report  # noqa: E402

BASE = "tbf-bfifo"
MIN_DELTA = 2.0


def load_symbols(path):
    addrs, names = [], []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 3 or p[1] not in "tTwW":
                continue
            name = p[2] + (" " + p[3] if len(p) > 3 else "")
            addrs.append(int(p[0], 16))
            names.append(name)
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def phase_functions(path, addrs, names):
    out = {}
    with open(path) as f:
        for line in f:
            va, n = line.split()
            i = bisect.bisect_right(addrs, int(va, 16)) - 1
            fn = names[i] if i >= 0 else "?"
            out[fn] = out.get(fn, 0) + int(n)
    return out


def main():
    a, meta = report_args("dirs")
    cells, envs = {}, []   # (load, flows, qdisc) -> {function: instructions/packet}
    for d in a.dirs:
        addrs, names = load_symbols(os.path.join(d, "kallsyms"))
        for line in open(os.path.join(d, "runs.jsonl")):
            r = json.loads(line)
            if r.get("type") == "env":
                envs.append(r)
                continue
            if r.get("type") != "run" or "profile_phase" not in r or not r["pkts"]:
                continue
            ph = os.path.join(d, "phase-%04d.txt" % r["profile_phase"])
            fns = phase_functions(ph, addrs, names)
            cells[(r["load"], r["flows"], r["qdisc"])] = {
                k: v / r["pkts"] for k, v in fns.items()}
    if not cells:
        sys.exit("report_profile: no profiled runs")
    kernel = meta.get("kernel", "?")
    md = md_header(meta, envs, kernel, [1],
                   f"softmq bench, instructions per packet per function: {kernel}, "
                   "TCG -icount shift=0, 1 vCPU")
    md += ["Each measured pktgen run (root tbf 100gbit, the qdisc as its child: every "
           "packet enqueued and dequeued) is counted by a QEMU TCG plugin "
           "(bench/insn-profile.c) per translation block, blocks charged to the "
           "function they start in (inlined helpers count in their caller). Values: "
           "instructions per packet sent. `Δ` rows: minus tbf's own bfifo on the "
           "same load, so what each qdisc adds, function by function "
           f"(functions where some qdisc adds ≥ {MIN_DELTA:.0f}).", ""]
    out = {"meta": meta, "cells": []}
    for (load, flows) in sorted({(k[0], k[1]) for k in cells}):
        qds = [q for q in QDISC_ORDER if (load, flows, q) in cells]
        base = cells.get((load, flows, BASE), {})
        fns = set()
        for q in qds:
            c = cells[(load, flows, q)]
            fns |= {f for f, v in c.items()
                    if v - base.get(f, 0) >= MIN_DELTA or "[sch_softmq]" in f and v >= 0.5}
        rows = sorted(fns, key=lambda f: -max(cells[(load, flows, q)].get(f, 0) - base.get(f, 0)
                                              for q in qds))
        md += [f"## {load}, {flows} flow(s)", "",
               "| function | " + " | ".join(QDISC_LABEL[q] for q in qds) + " |",
               "|---|" + "---:|" * len(qds)]
        for f in rows:
            vals = []
            for q in qds:
                v = cells[(load, flows, q)].get(f, 0)
                d = v - base.get(f, 0)
                vals.append(f"{v:.0f}" if q == BASE or abs(d) < 0.5 else f"{v:.0f} ({d:+.0f})")
            md.append(f"| `{f}` | " + " | ".join(vals) + " |")
        tot = [sum(cells[(load, flows, q)].values()) for q in qds]
        btot = sum(base.values())
        md.append("| **all kernel code** | " + " | ".join(
            f"**{t:.0f}**" + ("" if q == BASE else f" ({t - btot:+.0f})")
            for q, t in zip(qds, tot)) + " |")
        md.append("")
        for q in qds:
            out["cells"].append({"load": load, "flows": flows, "qdisc": q,
                                 "total": sum(cells[(load, flows, q)].values()),
                                 "functions": {f: round(v, 2) for f, v in
                                               cells[(load, flows, q)].items() if v >= 0.5}})
    write_report(a.out_prefix, out, md)


if __name__ == "__main__":
    main()
