#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Aggregate `make bench` runs into JSON, a markdown table and a PNG plot.

    report.py --meta META.json --out-prefix bench/results/DATE-ABI RUNS.jsonl...

RUNS.jsonl are the per-boot files bench/guest.sh writes (one "env"
line, then one "run" line per measurement).  META.json comes from the host
driver (bench/bench.sh): mode, command, host, time taken, what else
was running.  Writes PREFIX.json, PREFIX.md and (throughput mode) PREFIX.png;
prints the markdown on stdout.  Standard library only; the plot is drawn by
gnuplot (gnuplot-nox) when it is installed.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

QDISC_ORDER = ["noqueue", "bfifo", "pfifo_fast", "fq_codel", "fq", "softmq-flow", "softmq-cpu",
               "softmq-flow-nocodel", "softmq-cpu-nocodel", "mq-pfifo_fast", "mq-softmq", "tbf-bfifo", "tbf-pfifo_fast",
               "tbf-fq_codel", "tbf-fq", "tbf-softmq-flow", "tbf-softmq-cpu",
               "tbf-softmq-flow-nocodel", "tbf-softmq-cpu-nocodel"]
QDISC_LABEL = {
    "noqueue": "noqueue", "pfifo_fast": "pfifo_fast", "fq_codel": "fq_codel", "fq": "fq",
    "bfifo": "bfifo", "softmq-flow": "softmq key flow", "softmq-cpu": "softmq key cpu",
    "softmq-flow-nocodel": "softmq key flow nocodel", "softmq-cpu-nocodel": "softmq key cpu nocodel",
    "mq-pfifo_fast": "mq + pfifo_fast", "mq-softmq": "mq + softmq",
    "tbf-bfifo": "tbf (bfifo)", "tbf-pfifo_fast": "tbf / pfifo_fast",
    "tbf-fq_codel": "tbf / fq_codel", "tbf-fq": "tbf / fq", "tbf-softmq-flow": "tbf / softmq key flow",
    "tbf-softmq-cpu": "tbf / softmq key cpu",
    "tbf-softmq-flow-nocodel": "tbf / softmq key flow nocodel",
    "tbf-softmq-cpu-nocodel": "tbf / softmq key cpu nocodel",
}
# Short names for ratio column headers.
SHORT = {"noqueue": "noqueue", "pfifo_fast": "pfifo_fast", "softmq-flow": "flow",
         "fq_codel": "fq_codel", "softmq-flow-nocodel": "flow nocodel",
         "softmq-cpu-nocodel": "cpu nocodel",
         "softmq-cpu": "cpu", "mq-pfifo_fast": "mq+pfifo_fast", "mq-softmq": "mq+softmq",
         "tbf-bfifo": "bfifo", "tbf-pfifo_fast": "pfifo_fast", "tbf-softmq-flow": "flow",
         "tbf-softmq-cpu": "cpu", "tbf-softmq-flow-nocodel": "flow nocodel",
         "tbf-softmq-cpu-nocodel": "cpu nocodel"}
# What each family's qdiscs are measured against (the "no extra qdisc" floor).
BASELINE = {"tbf": "tbf-bfifo"}
def family(load):
    return load.split("-")[0] if load.startswith(("mq-", "tbf-")) else ""
def base_of(load):
    return BASELINE.get(family(load), "noqueue")
LOAD_ORDER = ["dummy", "veth", "udp", "mq-dummy", "mq-veth", "tbf-dummy"]
LOAD_TITLE = {
    "dummy": "pktgen queue_xmit -> dummy (1 TX queue)",
    "veth": "pktgen queue_xmit -> veth, peer in another netns (1 TX queue)",
    "udp": "UDP sockets, one sender per vCPU -> veth (1 TX queue)",
    "mq-dummy": "pktgen queue_xmit -> dummy with {q} TX queues (mq root)",
    "mq-veth": "pktgen queue_xmit -> veth with {q} TX queues (mq root)",
    "tbf-dummy": "pktgen queue_xmit -> dummy, root tbf 100gbit (never throttles) "
                 "with the qdisc as its child: enqueue + dequeue on every packet",
}
# (numerator, denominator) pairs shown as ratio columns, per load family.
RATIOS_SQ = [("softmq-flow", "pfifo_fast"), ("softmq-flow", "noqueue"),
             ("softmq-cpu", "pfifo_fast"), ("softmq-cpu", "noqueue"),
             ("softmq-flow", "fq_codel"), ("softmq-cpu-nocodel", "pfifo_fast")]
RATIOS_MQ = [("mq-softmq", "mq-pfifo_fast"), ("mq-softmq", "noqueue")]
RATIOS_TBF = [("tbf-softmq-flow", "tbf-pfifo_fast"), ("tbf-softmq-cpu", "tbf-pfifo_fast"),
              ("tbf-softmq-flow", "tbf-bfifo")]

CAVEAT = (
    "QEMU TCG is a binary translator, not a CPU model: it does not model "
    "caches, so cache-line bouncing between CPUs, false sharing and the real "
    "cost of atomic instructions and memory barriers do not show in these "
    "numbers; vCPUs are host threads sharing the host's cores with everything "
    "else running there. What the numbers can show: per-packet path length "
    "(instruction count), serialization (a lock held by one vCPU still stalls "
    "the others), drops, and ratios between qdiscs measured in the same boot. "
    "What they cannot show: how softmq's lock-free enqueue scales on real "
    "multi-core hardware, where that is the point. Absolute pps are about two "
    "orders of magnitude below hardware. Real numbers: `make bench HOST=1` on "
    "a machine that can load modules.")


def run_pps(r):
    """Accepted packets per second of one run, and its drop count."""
    if r["load"] == "udp":
        u = r["udp"]
        ns = max(u["elapsed_ns"], 1)
        return u["sent"] * 1e9 / ns, u["drops"], u["sent"]
    us = max(r["elapsed_us"], 1)
    return r["pkts"] * 1e6 / us, r["errors"], r["pkts"]


def run_ipp(r):
    """Guest instructions per accepted packet (icount shift=0: 1 ns = 1 insn).

    Sum of the busy time of all senders over all accepted packets."""
    if r["load"] == "udp":
        u = r["udp"]
        return sum(s["ns"] for s in u["per_sender"]) / max(u["sent"], 1)
    return r["cpu_us"] * 1000.0 / max(r["pkts"], 1)


def load_runs(paths):
    envs, runs = [], []
    for p in paths:
        env = None
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    o = json.loads(line)
                except json.JSONDecodeError:
                    print(f"report: skipping a bad line in {p}", file=sys.stderr)
                    continue
                if o.get("type") == "env":
                    env = o
                    envs.append(o)
                elif o.get("type") == "run":
                    o["_env"] = env
                    runs.append(o)
    return envs, runs


def cells_of(runs, metric):
    cells = {}
    for r in runs:
        key = (r["load"], r["vcpus"], r["flows"], r["qdisc"])
        cells.setdefault(key, []).append(r)
    out = {}
    for key, rs in cells.items():
        rs.sort(key=lambda x: x["round"])
        if metric == "pps":
            vals = [run_pps(r) for r in rs]
            v = [x[0] for x in vals]
            drops = sum(x[1] for x in vals)
            sent = sum(x[2] for x in vals)
            qd = [r.get("qdisc_drops") for r in rs if r.get("qdisc_drops") is not None]
            qs = [r.get("qstats") or {} for r in rs]
            sent_q = sum(x.get("sent", 0) for x in qs)
            byp = sum(x.get("bypassed", 0) for x in qs)
            out[key] = {
                "bypassed_pct": (100.0 * byp / sent_q) if sent_q and any("bypassed" in x for x in qs) else None,
                "ring_full": sum(x.get("drops_ring_full", 0) for x in qs) if any("drops_ring_full" in x for x in qs) else None,
                "spilled": sum(x.get("spilled", 0) for x in qs) if any("spilled" in x for x in qs) else None,
                "n": len(v), "median": statistics.median(v), "min": min(v),
                "max": max(v), "values": v, "drops": drops,
                "drop_pct": 100.0 * drops / max(drops + sent, 1),
                "qdisc_drops": sum(qd) if qd else None,
            }
        else:
            v = [run_ipp(r) for r in rs]
            med = statistics.median(v)
            out[key] = {
                "n": len(v), "median": med, "min": min(v), "max": max(v),
                "values": v,
                "spread_pct": 100.0 * (max(v) - min(v)) / med if med else 0.0,
                "drops": sum(run_pps(r)[1] for r in rs),
            }
    return out


def fmt_k(x):
    return f"{x / 1000:.1f}"


def ratio(cells, load, vc, fl, a, b):
    ca, cb = cells.get((load, vc, fl, a)), cells.get((load, vc, fl, b))
    if not ca or not cb or not cb["median"]:
        return None
    return ca["median"] / cb["median"]


def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}"


def where_line(meta, vcpus_list):
    h = meta.get("host", {})
    ov = [v for v in vcpus_list if v > h.get("cores", 0)]
    s = (f"QEMU {meta.get('qemu', '?')} TCG ({meta.get('accel', 'multi-threaded')}), "
         f"guest vCPUs {', '.join(map(str, vcpus_list))}"
         + (f" ({', '.join(map(str, ov))} over-subscribed: more vCPUs than host cores)" if ov else "")
         + f"; host: {h.get('cores', '?')} cores, {h.get('cpu', '?')}, {h.get('os', '?')}")
    return s


def md_header(meta, envs, kernel, vcpus_list, title):
    e0 = envs[0] if envs else {}
    lines = [f"# {title}", ""]
    lines.append(f"- **Kernel**: {kernel} (Debian), softmq {e0.get('softmq_version', '?')}, "
                 f"{e0.get('tc', 'tc ?')}")
    lines.append(f"- **Where**: {where_line(meta, vcpus_list)}")
    lines.append(f"- **Command**: `{meta.get('command', '?')}` — {meta.get('date', '?')}, "
                 f"took {meta.get('elapsed_s', 0) // 60} min {meta.get('elapsed_s', 0) % 60} s "
                 f"for {meta.get('kernels', '?')}")
    if meta.get("host", {}).get("others"):
        lines.append(f"- **Also running on the host** (noise): {meta['host']['others']}")
    cpt = e0.get("count_per_thread", {})
    if isinstance(cpt, dict):
        cpt = (f"pktgen→dummy {cpt.get('dummy', '?')}, pktgen→veth {cpt.get('veth', '?')}, "
               f"UDP {cpt.get('udp', '?')}")
    lines.append(f"- **Method**: packets per sender thread per run: {cpt} "
                 f"(64 B frames, after a short unmeasured warm-up that touches every flow), "
                 f"{e0.get('rounds', '?')} rounds with the qdiscs interleaved "
                 f"(A B C … A B C …) in one boot per vCPU count; flows = distinct "
                 f"IPv4 destinations (198.19.0.0/22), fixed UDP ports. pktgen: "
                 f"`xmit_mode queue_xmit`, `clone_skb 0`, one kpktgend per vCPU. "
                 f"pfifo_fast: `net.core.default_qdisc=pfifo_fast`, root deleted and "
                 f"added again (dummy and veth are IFF_NO_QUEUE, so their default "
                 f"root is noqueue); mq children come from `default_qdisc`. "
                 f"softmq defaults: flows 1024, depth 64, bands 3"
                 + (f"; every softmq but mq's children: `{e0['softmq_opts']}`"
                    if e0.get("softmq_opts") else "")
                 + (f"; the dummy and veth devices' txqueuelen {e0['txqueuelen']} "
                    "(pfifo_fast's limit)"
                    if e0.get("txqueuelen", 1000) != 1000 else "") + ".")
    lines.append(f"- **Caveat**: {CAVEAT}")
    lines.append("")
    return lines


def md_throughput(meta, envs, cells, kernel):
    vcpus_list = sorted({k[1] for k in cells})
    flows_list = sorted({k[2] for k in cells})
    loads = [l for l in LOAD_ORDER if any(k[0] == l for k in cells)]
    mqq = envs[0].get("mq_queues", 4) if envs else 4
    lines = md_header(meta, envs, kernel, vcpus_list,
                      f"softmq bench: {kernel}, TCG, vCPUs {'/'.join(map(str, vcpus_list))}")
    spreads = sorted((c["max"] - c["min"]) / c["median"] for c in cells.values() if c["median"])
    noise = 100 * spreads[len(spreads) // 2] if spreads else 0
    lines.append("Cells: median kpps [min–max] over the rounds; `d` = packets dropped "
                 "(pktgen errors / ENOBUFS), % of attempts, when not 0. Ratios: medians.")
    lines.append(f"**Noise**: the median cell's min–max spread is {noise:.0f}% of its median "
                 "(same qdisc, same boot, rounds minutes apart): ratios closer to 1.0 than "
                 "that are not a measured difference.")
    lines.append("")
    for load in loads:
        qds = [q for q in QDISC_ORDER if any(k[0] == load and k[3] == q for k in cells)]
        rset = {"mq": RATIOS_MQ, "tbf": RATIOS_TBF}.get(family(load), RATIOS_SQ)
        rts = [(a, b) for a, b in rset if a in qds and b in qds]
        lines.append(f"## {LOAD_TITLE[load].format(q=mqq)}")
        lines.append("")
        hdr = ["vCPUs", "flows"] + [QDISC_LABEL[q] for q in qds] + \
              [f"{SHORT[a]} / {SHORT[b]}" for a, b in rts]
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "|".join(["---:"] * len(hdr)) + "|")
        for vc in vcpus_list:
            for fl in flows_list:
                if not any((load, vc, fl, q) in cells for q in qds):
                    continue
                row = [f"{vc}{' (over)' if vc > meta.get('host', {}).get('cores', 99) else ''}", str(fl)]
                for q in qds:
                    c = cells.get((load, vc, fl, q))
                    if not c:
                        row.append("–")
                        continue
                    s = f"{fmt_k(c['median'])} [{fmt_k(c['min'])}–{fmt_k(c['max'])}]"
                    if c["drops"]:
                        s += f" d{c['drop_pct']:.1f}%"
                    row.append(s)
                for a, b in rts:
                    row.append(fmt_ratio(ratio(cells, load, vc, fl, a, b)))
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        sm = [q for q in qds if "softmq" in q]
        use = []
        for vc in vcpus_list:
            for fl in flows_list:
                parts = []
                for q in sm:
                    c = cells.get((load, vc, fl, q))
                    if c and c.get("bypassed_pct") is not None:
                        parts.append(f"{QDISC_LABEL[q].replace('softmq key ', '')} "
                                     f"{c['bypassed_pct']:.0f}%"
                                     + (f" ({c['ring_full']} ring-full)" if c.get("ring_full") else "")
                                     + (f" ({c['spilled']} spilled)" if c.get("spilled") else ""))
                if parts:
                    use.append(f"{vc}v/{fl}f: " + ", ".join(parts))
        if use:
            lines.append("softmq packets that bypassed the queue (xstats `bypassed`/sent; the rest "
                         "went through enqueue/dequeue; ring-full drops and packets spilled beyond a ring's slots in all rounds): "
                         + "; ".join(use) + ".")
            lines.append("")
    return lines


def targets(cells, meta):
    """The issue's targets, evaluated on this run: list of (text, values, met)."""
    cores = meta.get("host", {}).get("cores", 2)
    vcpus_list = sorted({k[1] for k in cells})
    busy = [v for v in vcpus_list if v >= min(cores, max(vcpus_list))] or vcpus_list[-1:]
    out = []
    sq = [l for l in ("dummy", "veth", "udp") if any(k[0] == l for k in cells)]
    for key in ("softmq-flow", "softmq-cpu"):
        lab = QDISC_LABEL[key]
        vals = [(l, ratio(cells, l, 1, 1, key, "pfifo_fast")) for l in sq]
        vals = [(l, v) for l, v in vals if v is not None]
        if vals:
            out.append((f"{lab} ≥ 1.0× pfifo_fast, 1 flow, 1 vCPU",
                        ", ".join(f"{l} {v:.2f}" for l, v in vals),
                        all(v >= 1.0 for _, v in vals)))
        vals = []
        for l in sq:
            for vc in busy:
                for fl in sorted({k[2] for k in cells}):
                    if fl < 16:
                        continue
                    v = ratio(cells, l, vc, fl, key, "pfifo_fast")
                    if v is not None:
                        vals.append((f"{l} {vc}v {fl}f", v))
        if vals:
            out.append((f"{lab} ≥ 1.5× pfifo_fast, ≥16 flows, all vCPUs busy "
                        f"({'/'.join(map(str, busy))} vCPUs)",
                        ", ".join(f"{n} {v:.2f}" for n, v in vals),
                        all(v >= 1.5 for _, v in vals)))
        vals = []
        for (l, vc, fl, q) in cells:
            if q == key:
                v = ratio(cells, l, vc, fl, key, "noqueue")
                if v is not None:
                    vals.append((f"{l} {vc}v {fl}f", v))
        if vals:
            worst = sorted(vals, key=lambda x: x[1])[:3]
            out.append((f"{lab} ≥ 0.9× noqueue everywhere",
                        f"min {worst[0][1]:.2f} ({worst[0][0]}); below 0.9: "
                        f"{sum(1 for _, v in vals if v < 0.9)} of {len(vals)} cells",
                        all(v >= 0.9 for _, v in vals)))
    # Path length and drops: at 1 and 2 vCPUs (the host's cores, none
    # over-subscribed) no slower than pfifo_fast; in every cell no more drops.
    pairs = [("softmq-flow", "pfifo_fast"), ("softmq-cpu", "pfifo_fast"),
             ("mq-softmq", "mq-pfifo_fast")]
    for key, peer in pairs:
        if not any(k[3] == key for k in cells):
            continue
        lab = QDISC_LABEL.get(key, key)
        vals = []
        for (l, vc, fl, q) in cells:
            v = ratio(cells, l, vc, fl, key, peer) if q == key and vc <= 2 else None
            if v is not None:
                vals.append((v, f"{l} {vc}v {fl}f"))
        vals.sort()
        if vals:
            out.append((f"{lab} ≥ 0.95× {peer}, every 1- and 2-vCPU cell",
                        f"min {vals[0][0]:.2f} ({vals[0][1]}); below 0.95: "
                        f"{sum(1 for v, _ in vals if v < 0.95)} of {len(vals)} cells",
                        all(v >= 0.95 for v, _ in vals)))
        worse = []
        n = 0
        for (l, vc, fl, q) in sorted(cells):
            if q != key or (l, vc, fl, peer) not in cells:
                continue
            n += 1
            ca, cb = cells[(l, vc, fl, q)], cells[(l, vc, fl, peer)]
            if ca["drop_pct"] > cb["drop_pct"]:
                worse.append(f"{l} {vc}v {fl}f {ca['drops']} vs {cb['drops']} "
                             f"({ca['drop_pct']:.2f} % vs {cb['drop_pct']:.2f} %)")
        if n:
            out.append((f"{lab} drops ≤ {peer}'s, every cell",
                        (f"more in {len(worse)} of {n} cells: " + ", ".join(worse))
                        if worse else f"no more in any of {n} cells",
                        not worse))
    vals = []
    for (l, vc, fl, q) in cells:
        if q == "mq-softmq":
            v = ratio(cells, l, vc, fl, "mq-softmq", "mq-pfifo_fast")
            if v is not None:
                vals.append((f"{l} {vc}v {fl}f", v))
    if vals:
        vals.sort()
        out.append(("mq + softmq vs mq + pfifo_fast (no target; for reference)",
                    ", ".join(f"{n} {v:.2f}" for n, v in vals), None))
    return out


def md_targets(tg):
    lines = ["## Targets (ratios of medians in this run; they drive optimisation, not tests)", ""]
    lines.append("| target | measured | met |")
    lines.append("|---|---|:-:|")
    for t, v, m in tg:
        lines.append(f"| {t} | {v} | {'–' if m is None else ('yes' if m else '**no**')} |")
    lines.append("")
    return lines


def md_icount(meta, envs, cells, kernel):
    flows_list = sorted({k[2] for k in cells})
    loads = [l for l in LOAD_ORDER if any(k[0] == l for k in cells)]
    lines = md_header(meta, envs, kernel, [1],
                      f"softmq bench, instructions per packet: {kernel}, TCG -icount shift=0, 1 vCPU")
    lines.append("With `-icount shift=0` one guest nanosecond is one guest instruction: "
                 "a sender's busy time divided by the packets it got accepted is the "
                 "instructions per packet of the whole path (packet build, stack, qdisc, "
                 "driver, veth receive side; pktgen: sum over its threads). "
                 "Deterministic up to interrupt timing; spread = (max-min)/median over "
                 "the rounds. `Δ` = minus noqueue, i.e. what the qdisc adds.")
    lines.append("")
    for load in loads:
        qds = [q for q in QDISC_ORDER if any(k[0] == load and k[3] == q for k in cells)]
        lines.append(f"## {LOAD_TITLE[load].format(q=envs[0].get('mq_queues', 4) if envs else 4)}")
        lines.append("")
        hdr = ["flows"] + [QDISC_LABEL[q] for q in qds]
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "|".join(["---:"] * len(hdr)) + "|")
        for fl in flows_list:
            base = cells.get((load, 1, fl, base_of(load)))
            row = [str(fl)]
            for q in qds:
                c = cells.get((load, 1, fl, q))
                if not c:
                    row.append("–")
                    continue
                s = f"{c['median']:.0f} (±{c['spread_pct']:.1f}%)"
                if base and q != base_of(load):
                    s += f" Δ{c['median'] - base['median']:+.0f}"
                row.append(s)
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return lines


# The queued path (tbf parent): what each qdisc adds over tbf's own bfifo,
# against a peer's addition times a factor (issue 29's targets; its third,
# key cpu against fq_codel's addition less the flow hash, needs the
# per-function profile: MODE=profile's "without the flow hash" row).
TBF_TARGETS = [("tbf-softmq-cpu-nocodel", "tbf-pfifo_fast", 1.8, "× 1.8"),
               ("tbf-softmq-flow", "tbf-fq_codel", 1.0, "")]


def icount_targets(cells):
    out = []
    for key, peer, factor, how in TBF_TARGETS:
        vals = []
        for (l, vc, fl, q) in sorted(cells):
            base = (l, vc, fl, "tbf-bfifo")
            if q != key or (l, vc, fl, peer) not in cells or base not in cells:
                continue
            b = cells[base]["median"]
            a, p = cells[(l, vc, fl, q)]["median"] - b, cells[(l, vc, fl, peer)]["median"] - b
            vals.append((f"{l} {fl}f", a, p))
        if vals:
            out.append((f"icount, queued path: {QDISC_LABEL[key]} adds ≤ {QDISC_LABEL[peer]}'s "
                        f"addition{(' ' + how) if how else ''} (over tbf's bfifo)",
                        ", ".join(f"{n} {a:+.0f} vs {p * factor:+.0f} ({a / p:.2f}×)" if p > 0 else
                                  f"{n} {a:+.0f} vs {p * factor:+.0f}" for n, a, p in vals),
                        all(a <= p * factor for _, a, p in vals)))
    for key in ("softmq-flow", "softmq-cpu", "mq-softmq"):
        base = {"mq": "mq-pfifo_fast", "tbf": "tbf-pfifo_fast"}.get(family(key), "pfifo_fast")
        vals = []
        for (l, vc, fl, q) in sorted(cells):
            if q != key or (l, vc, fl, base) not in cells:
                continue
            a, b = cells[(l, vc, fl, q)]["median"], cells[(l, vc, fl, base)]["median"]
            vals.append((f"{l} {fl}f", a - b, b))
        if vals:
            # Equal within the run-to-run spread (~0.1-0.5%) counts as met.
            out.append((f"icount: {QDISC_LABEL[key]} instructions/packet ≤ {QDISC_LABEL[base]}'s "
                        "(difference; ≤ 0.5% counts as equal)",
                        ", ".join(f"{n} {d:+.0f}" for n, d, _ in vals),
                        all(d <= 0.005 * b for _, d, b in vals)))
    return out


def run_gnuplot(gp, script):
    """Feed SCRIPT (lines) to gnuplot GP; False, with its errors, if it fails."""
    r = subprocess.run([gp], input="\n".join(script) + "\n", text=True,
                       capture_output=True)
    if r.returncode != 0:
        print("report: gnuplot failed:\n" + r.stderr[-2000:], file=sys.stderr)
        return False
    return True


def is_host(meta):
    """A `make bench HOST=1` run: no QEMU, the running kernel."""
    return meta.get("qemu") is None and str(meta.get("accel", "")).startswith("none")


def host_projection(meta, cells, path=None):
    """HOST=1: what the newest PROJECTION (bench/project_sharing.py, from the
    TCG sharing and instruction counts) predicts for this host's CPU count,
    one line per qdisc, and beside each measured dummy cell; so the first
    many-core run checks the projection.  BENCH_PROJECTION=<file.json>
    picks another projection.  Returns (markdown lines, JSON summary)."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = path or os.environ.get("BENCH_PROJECTION") or next(
        iter(sorted(glob.glob(os.path.join(here, "results", "*-projection.json")), reverse=True)), None)
    if not path or not os.path.exists(path):
        return ["## Projection for this host", "",
                "No `bench/results/*-projection.json` to compare with "
                "(bench/project_sharing.py writes one).", ""], None
    sys.path.insert(0, here)
    try:
        import project_sharing as ps
    finally:
        sys.path.pop(0)
    with open(path) as f:
        p = json.load(f)
    cores = int(meta.get("host", {}).get("cores", 0) or 0)
    qds = [q for q in ps.LABEL if q in p.get("qdiscs", {})
           and (q not in ps.MQ_CHILD or ps.MQ_CHILD[q] in p["qdiscs"])]
    md = [f"## What the PROJECTION predicted for this host ({cores} CPUs)", "",
          f"A projection, not a measurement: `{os.path.basename(path)}` "
          "(bench/project_sharing.py, from TCG shared-line and instruction counts, "
          f"{p.get('c_in', ps.C_IN):g} / {p.get('c_x', ps.C_X):g} ns a line transfer within / "
          "across sockets; see bench/README.md, \"Projection\").  "
          "Measured: the dummy loads' median above (16 flows where run); the error is "
          "projected / measured - 1.  The projection's noqueue has a single-queue NIC's "
          "TX lock; the dummy has none (LLTX), so noqueue's measured line should scale with "
          "the CPUs where the projection's flattens; its mq rows are for 4 TX queues "
          "(guest.sh's default).", ""]
    summary = {"file": os.path.basename(path), "cores": cores, "qdiscs": {}}
    for q in qds:
        pr = ps.mpps(p, q, cores) if cores else float("nan")
        md.append(f"- {ps.LABEL[q]}: projected **{pr:.2f} Mpps** at {cores} sender CPUs")
        summary["qdiscs"][q] = {"projected_mpps_at_cores": round(pr, 3), "cells": []}
    md += ["", "| qdisc | load | sender CPUs | projected Mpps | measured Mpps | error |",
           "|---|---|---:|---:|---:|---:|"]
    for q in qds:
        load = "mq-dummy" if q.startswith("mq-") else "dummy"
        mine = [(k, v) for k, v in cells.items() if k[0] == load and k[3] == q]
        flows = sorted({k[2] for k, _ in mine})
        fl = 16 if 16 in flows else (flows[-1] if flows else None)
        for k, v in sorted(mine, key=lambda kv: kv[0][1]):
            if k[2] != fl:
                continue
            pr, me = ps.mpps(p, q, k[1]), v["median"] / 1e6
            err = f"{100 * (pr / me - 1):+.0f} %" if me > 0 else "–"
            md.append(f"| {ps.LABEL[q]} | {load} | {k[1]} | {pr:.2f} | {me:.2f} | {err} |")
            summary["qdiscs"][q]["cells"].append(
                {"cpus": k[1], "flows": fl, "projected_mpps": round(pr, 3), "measured_mpps": round(me, 3)})
    md.append("")
    return md, summary


def write_report(prefix, out, md):
    """PREFIX.json (OUT) and PREFIX.md (MD lines), and MD on stdout."""
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    with open(prefix + ".json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


def plot(cells, meta, kernel, png):
    gp = shutil.which("gnuplot")
    if not gp:
        print("report: gnuplot not installed, no PNG (apt-get install gnuplot-nox)",
              file=sys.stderr)
        return False
    vcpus_list = sorted({k[1] for k in cells})
    loads = [l for l in LOAD_ORDER if any(k[0] == l for k in cells)]
    flows_list = sorted({k[2] for k in cells})
    colors = {"noqueue": "#000000", "pfifo_fast": "#1f77b4", "fq_codel": "#2ca02c",
              "softmq-flow": "#d62728", "softmq-cpu": "#ff7f0e",
              "mq-pfifo_fast": "#1f77b4", "mq-softmq": "#d62728"}
    dash = {"mq-pfifo_fast": 2, "mq-softmq": 2}
    rows, cols = len(loads), len(vcpus_list)
    cores = meta.get("host", {}).get("cores", 2)
    s = []
    s.append(f"set terminal pngcairo noenhanced size {420 * cols},{300 * rows + 60} font 'sans,9'")
    s.append(f"set output '{png}'")
    s.append(f"set multiplot layout {rows},{cols} title \"softmq bench, {kernel}: "
             f"median kpps [min-max] vs flows, QEMU TCG on {cores} host cores "
             f"(TCG does not model cache-line contention)\" font 'sans,11'")
    s.append("set logscale x 2")
    s.append(f"set xrange [{flows_list[0] / 1.5}:{flows_list[-1] * 1.5}]")
    s.append("set xtics (" + ", ".join(f"\"{f}\" {f}" for f in flows_list) + ")")
    s.append("set key bottom left font 'sans,7' samplen 2 opaque")
    s.append("set grid ytics")
    s.append("set yrange [0:*]")
    s.append("set ylabel 'kpps' offset 1,0")
    for load in loads:
        for vc in vcpus_list:
            qds = [q for q in QDISC_ORDER if any(k[0] == load and k[1] == vc and k[3] == q
                                                 for k in cells)]
            over = " (over-subscribed)" if vc > cores else ""
            s.append(f"set title \"{load}, {vc} vCPU{'s' if vc > 1 else ''}{over}\"")
            parts, data = [], []
            for i, q in enumerate(qds):
                pts = []
                for fl in flows_list:
                    c = cells.get((load, vc, fl, q))
                    if c:
                        pts.append(f"{fl} {c['median'] / 1000:.3f} {c['min'] / 1000:.3f} {c['max'] / 1000:.3f}")
                name = f"$d_{load.replace('-', '_')}_{vc}_{i}"
                data.append(f"{name} << EOD\n" + "\n".join(pts) + "\nEOD")
                lc = colors.get(q, "#777777")
                dt = dash.get(q, 1)
                parts.append(f"{name} using 1:2:3:4 with yerrorlines lc rgb '{lc}' dt {dt} "
                             f"pt 7 ps 0.6 title '{QDISC_LABEL[q]}'")
            s.extend(data)
            if parts:
                s.append("plot " + ", ".join(parts))
            else:
                s.append("set multiplot next")
    s.append("unset multiplot")
    return run_gnuplot(gp, s)


def report_args(inputs, nargs="+"):
    """The reports' command line: --meta FILE --out-prefix PREFIX INPUTS;
    returns (args, meta)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out-prefix", required=True)
    ap.add_argument(inputs, nargs=nargs)
    a = ap.parse_args()
    with open(a.meta) as f:
        return a, json.load(f)


def main():
    a, meta = report_args("runs")
    envs, runs = load_runs([p for p in a.runs if os.path.exists(p)])
    if not runs:
        print("report: no runs", file=sys.stderr)
        return 1
    kernel = envs[0]["kernel"] if envs else meta.get("kernel", "?")
    mode = meta.get("mode", "throughput")
    metric = "ipp" if mode == "icount" else "pps"
    cells = cells_of(runs, metric)

    if mode == "icount":
        md = md_icount(meta, envs, cells, kernel)
        tg = icount_targets(cells)
    else:
        md = md_throughput(meta, envs, cells, kernel)
        tg = targets(cells, meta)
    md += md_targets(tg)
    proj = None
    if mode != "icount" and is_host(meta):
        pmd, proj = host_projection(meta, cells)
        md += pmd

    png = a.out_prefix + ".png"
    have_png = False
    if mode != "icount":
        have_png = plot(cells, meta, kernel, png)
        if have_png:
            md.insert(2, f"![pps vs flows]({os.path.basename(png)})\n")

    out = {
        "meta": meta, "kernel": kernel, "mode": mode, "metric":
        "instructions per accepted packet" if metric == "ipp" else "accepted packets per second",
        "caveat": CAVEAT, "envs": envs,
        "cells": [dict(load=k[0], vcpus=k[1], flows=k[2], qdisc=k[3], **v)
                  for k, v in sorted(cells.items())],
        "targets": [dict(target=t, measured=v, met=m) for t, v, m in tg],
        "runs": [{k: v for k, v in r.items() if k != "_env"} for r in runs],
        "png": os.path.basename(png) if have_png else None,
    }
    if proj is not None:
        out["projection"] = proj
    write_report(a.out_prefix, out, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
