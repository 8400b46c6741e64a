#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report_profile.py - `make bench MODE=profile`: instructions per packet
per kernel function, from bench/insn-profile.c's dumps.

  report_profile.py --meta META.json --out-prefix PREFIX DIR...

Each DIR holds one boot's runs.jsonl (bench/guest.sh --profile: each run
names the plugin dump of its measured pktgen run, profile_phase), that
boot's /proc/kallsyms (kernel and module symbols, nokaslr) and the dumps
phase-NNNN.txt ("vaddr instructions executions" per translation block;
dumps before the executions column have two).  A block is charged to the
function whose symbol is at or below its start.  With several vCPUs
(BENCH_VCPUS > 1, multi-threaded, no -icount) the counts are every
vCPU's per packet sent: the consumer's path, and the senders' attempts
that the qdisc refused (pktgen builds a new skb for every attempt).  Writes
PREFIX.json and PREFIX.md: per load and flow count, the functions where any
qdisc spends at least 2 instructions per packet more than the load's floor
(tbf's bfifo under tbf, a root bfifo on the slow device: what the qdisc
adds, function by function), every softmq function, and the totals with
and without the flow hash (the flow dissector and siphash: what pktgen's
hashless skbs make a per-flow qdisc pay, and a connected socket does not).
"""
import bisect
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import QDISC_ORDER, QDISC_LABEL, md_header, report_args, write_report  # noqa: E402

BASES = {"tbf-dummy": "tbf-bfifo", "slow": "bfifo", "gso": "bfifo"}
MIN_DELTA = 2.0
# The flow hash of a hashless skb, by function: skb_get_hash()'s, and
# softmq's HalfSipHash of the addresses and ports (since 76b1dae; its
# header reads, inlined into softmq_enqueue(), stay there).
HASH_FUNCTIONS = ("__skb_flow_dissect", "__flow_hash_from_keys", "__skb_flow_get_ports",
                  "__skb_get_hash", "__skb_get_hash_net", "__siphash_unaligned",
                  "__siphash_aligned", "skb_flow_dissect", "hsiphash_3u32",
                  "__hsiphash_unaligned", "__hsiphash_aligned")


def is_hash(fn):
    return fn.split(" ")[0] in HASH_FUNCTIONS


# The qdisc's own code: its module's functions, or a built-in qdisc's named
# ones (what the compiler inlined into them counts with them), and for
# softmq the library's bit scans, which nothing else on this path calls.
def own_function(qdisc, fn):
    q = qdisc.removeprefix("tbf-")
    name = fn.split(" ")[0]
    if q == "bfifo":
        return name in ("bfifo_enqueue", "qdisc_dequeue_head", "qdisc_peek_head")
    if q == "pfifo_fast":
        return name.startswith("pfifo_fast_")
    if q == "fq_codel":
        return name.startswith(("fq_codel_", "__fq_codel_", "codel_"))
    if q == "fq":
        return fn.endswith("[sch_fq]")
    if q.startswith("softmq"):
        return fn.endswith("[sch_softmq]") or name in (
            "_find_next_bit", "_find_next_andnot_bit", "_find_first_bit")
    return False


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
    """{function: instructions}, and the blocks executed (None if not dumped)"""
    out, blocks = {}, 0
    with open(path) as f:
        for line in f:
            p = line.split()
            i = bisect.bisect_right(addrs, int(p[0], 16)) - 1
            fn = names[i] if i >= 0 else "?"
            out[fn] = out.get(fn, 0) + int(p[1])
            blocks = blocks + int(p[2]) if len(p) > 2 and blocks is not None else None
    return out, blocks


def main():
    a, meta = report_args("dirs")
    cells, drops, paths, envs = {}, {}, {}, []   # (load, flows, qdisc) -> {function: instructions/packet}
    blocks, attempts, vcpus = {}, {}, set()
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
            fns, nb = phase_functions(ph, addrs, names)
            key = (r["load"], r["flows"], r["qdisc"])
            cells[key] = {k: v / r["pkts"] for k, v in fns.items()}
            if nb is not None:
                blocks[key] = nb / r["pkts"]
            attempts[key] = (r["pkts"] + r.get("errors", 0)) / r["pkts"]
            vcpus.add(r.get("vcpus", 1))
            drops[(r["load"], r["flows"], r["qdisc"])] = r.get("qdisc_drops", 0) / r["pkts"]
            qs = r.get("qstats") if isinstance(r.get("qstats"), dict) else {}
            if "bypassed" in qs and qs.get("sent"):
                paths[(r["load"], r["flows"], r["qdisc"])] = (
                    qs["bypassed"] / qs["sent"], qs.get("spilled", 0) / qs["sent"])
    if not cells:
        sys.exit("report_profile: no profiled runs")
    kernel = meta.get("kernel", "?")
    nv = max(vcpus)
    md = md_header(meta, envs, kernel, sorted(vcpus),
                   f"softmq bench, instructions per packet per function: {kernel}, "
                   + ("TCG -icount shift=0, 1 vCPU" if nv == 1 else
                      f"TCG multi-threaded, {nv} vCPUs"))
    md += ["Each measured pktgen run is counted by a QEMU TCG plugin "
           "(bench/insn-profile.c) per translation block, blocks charged to the "
           "function they start in (inlined helpers count in their caller). Loads: "
           "`tbf-dummy`, a root tbf 100gbit with the qdisc as its child (locked: a "
           "classful parent clears NOLOCK; every packet enqueued and dequeued); "
           "`slow`, the qdisc as the root of a slowdev slower than the sender "
           "(NOLOCK where the qdisc is: its own enqueue and dequeue path, the "
           "window held open until the device has sent every packet); `dummy`, "
           "the qdisc as the root of a dummy (the throughput bench's load; with "
           "several vCPUs the measured window ends when the senders stop, before "
           "the consumer has sent the last backlog); `gso`, the slow device's load "
           "with one UDP socket sending GSO skbs (UDP_SEGMENT) instead of pktgen, "
           "segmented by the core after the qdisc, counted per skb (the qdisc "
           "queues whole skbs; each is `gso_segs` datagrams on the wire). Values: "
           "instructions per packet handed to the device's queue (the gso load: "
           "per GSO skb). `(+n)`: minus the "
           "load's floor (tbf's bfifo; bfifo as the root), so what each qdisc adds, "
           "function by function "
           f"(functions where some qdisc adds ≥ {MIN_DELTA:.0f}). "
           "\"without the flow hash\": the same total less "
           + ", ".join(f"`{f}`" for f in HASH_FUNCTIONS) + ". "
           "\"The qdisc's own functions\": its module's functions, or a built-in "
           "qdisc's (`pfifo_fast_*`, `fq_codel_*`, `bfifo_enqueue`, "
           "`qdisc_dequeue_head`), with softmq the library bit scans it calls; "
           "without the flow hash and the core's path around the qdisc. On the "
           "slow load the device's rate sets the window's length, and under "
           "-icount time is instructions, so the sender spends whatever the "
           "qdisc saves waiting (in pktgen; in the gso load, idle): there, "
           "compare the qdiscs' own functions, not the totals."
           + ("" if nv == 1 else
              f" With {nv} vCPUs (multi-threaded, no -icount) the counts are all "
              "vCPUs' instructions per packet sent: the consumer's path once, "
              "and each attempt the qdisc refused, which pktgen rebuilds from a "
              "new skb (\"pktgen attempts per packet sent\")."), ""]
    out = {"meta": meta, "cells": []}
    for (load, flows) in sorted({(k[0], k[1]) for k in cells}):
        qds = [q for q in QDISC_ORDER if (load, flows, q) in cells]
        bq = BASES.get(load, "")
        base = cells.get((load, flows, bq), {})
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
                vals.append(f"{v:.0f}" if q == bq or not base or abs(d) < 0.5
                            else f"{v:.0f} ({d:+.0f})")
            md.append(f"| `{f}` | " + " | ".join(vals) + " |")
        tot = [sum(cells[(load, flows, q)].values()) for q in qds]
        btot = sum(base.values())
        md.append("| **all kernel code** | " + " | ".join(
            f"**{t:.0f}**" + ("" if q == bq or not base else f" ({t - btot:+.0f})")
            for q, t in zip(qds, tot)) + " |")
        if all((load, flows, q) in blocks for q in qds):
            md.append("| translation blocks executed | " + " | ".join(
                f"{blocks[(load, flows, q)]:.0f}" for q in qds) + " |")
        nh = [sum(v for f, v in cells[(load, flows, q)].items() if not is_hash(f)) for q in qds]
        bnh = sum(v for f, v in base.items() if not is_hash(f))
        md.append("| without the flow hash | " + " | ".join(
            f"{t:.0f}" + ("" if q == bq or not base else f" ({t - bnh:+.0f})")
            for q, t in zip(qds, nh)) + " |")
        md.append("| the qdisc's own functions | " + " | ".join(
            f"{sum(v for f, v in cells[(load, flows, q)].items() if own_function(q, f)):.0f}"
            for q in qds) + " |")
        if any((load, flows, q) in paths for q in qds):
            md.append("| softmq: bypassed / spilled, of sent | " + " | ".join(
                "%.0f %% / %.0f %%" % tuple(100 * x for x in paths[(load, flows, q)])
                if (load, flows, q) in paths else "" for q in qds) + " |")
        sender = "udpsend" if load == "gso" else "pktgen"
        md.append(f"| {sender} attempts per packet sent | " + " | ".join(
            f"{attempts[(load, flows, q)]:.2f}" for q in qds) + " |")
        md.append("| qdisc drops (warm-up run included) | " + " | ".join(
            f"{100 * drops[(load, flows, q)]:.1f} %" for q in qds) + " |")
        md.append("")
        for q in qds:
            out["cells"].append({"load": load, "flows": flows, "qdisc": q,
                                 "total": sum(cells[(load, flows, q)].values()),
                                 "total_no_hash": sum(v for f, v in cells[(load, flows, q)].items()
                                                      if not is_hash(f)),
                                 "drops_per_pkt": round(drops[(load, flows, q)], 4),
                                 "attempts_per_pkt": round(attempts[(load, flows, q)], 3),
                                 "blocks": round(blocks[(load, flows, q)], 1)
                                 if (load, flows, q) in blocks else None,
                                 "own": round(sum(v for f, v in cells[(load, flows, q)].items()
                                                  if own_function(q, f)), 1),
                                 "functions": {f: round(v, 2) for f, v in
                                               cells[(load, flows, q)].items() if v >= 0.5}})
    write_report(a.out_prefix, out, md)


if __name__ == "__main__":
    main()
