#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report_sharing.py - `make bench MODE=sharing`: cache lines written by more
than one vCPU, per packet, from bench/line-share.c's dumps.

  report_sharing.py --meta META.json --out-prefix PREFIX DIR...

Each DIR is one boot (one vCPU count): runs.jsonl (bench/guest.sh --profile:
each run names the plugin dump of its measured pktgen run, profile_phase),
kallsyms (the guest's /proc/kallsyms, nokaslr: kernel and module symbols)
and share-NNNN.txt (the plugin's dumps).  Per run, per packet handed to
dev_queue_xmit() (pktgen's packets + errors: a drop is an error):

  xstores   stores to a line last written by another vCPU
  xloads    loads of a line another vCPU wrote since this vCPU last read it
  transfers xstores + xloads - rmw (a locked read-modify-write of a remote
            line is one transfer, seen as a load and a store)
  pshared   stores to lines written by three or more vCPUs in the window
            (exact, from the per-line dump; producer-shared lines)
  own       the same events in the qdisc's own functions (its module, or
            pfifo_fast_*/mq_*), where the qdisc's design decides them

and where: per function (each instruction charged to the text symbol at or
below it) and per line (address, region, nearest data symbol, writers,
readers, the functions that stored to it or read it across vCPUs).
Writes PREFIX.json and PREFIX.md.

  report_sharing.py --selftest --meta ... (bench.sh SELFTEST=1)

also judges the planted-counter self-test: in every softmq cell (a module
with one atomic_long_inc() on a global at the top of softmq_enqueue()) the
producer-shared stores charged to softmq_enqueue must be >= 1 per packet;
prints one PASS/FAIL line per cell and exits 1 on a FAIL.
"""
import bisect
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import QDISC_ORDER, QDISC_LABEL, report_args, write_report  # noqa: E402

LOAD_ORDER = ["dummy", "mq-dummy", "slow"]
LOAD_TITLE = {
    "dummy": "pktgen → dummy (single queue, mostly the bypass path)",
    "mq-dummy": "pktgen → 4-queue dummy, mq, XPS: CPU c on queue c % 4",
    "slow": "pktgen → slowdev (single queue, slower than the senders: a standing backlog and drops)",
}
BASE = {"dummy": "noqueue", "mq-dummy": "noqueue", "slow": None}
TOP_FN = 12
TOP_LINES = 8
REGIONS = [  # x86_64, nokaslr: 5-level paging (QEMU's -cpu max has LA57), then 4-level
    (0xff11000000000000, 0xff91000000000000, "direct map (slab, pages, per-CPU)"),
    (0xffa0000000000000, 0xffd2000000000000, "vmalloc (stacks, vmalloc'd tables)"),
    (0xffd4000000000000, 0xffd6000000000000, "struct page"),
    (0xffff888000000000, 0xffffc88000000000, "direct map (slab, pages, per-CPU)"),
    (0xffffc90000000000, 0xffffe90000000000, "vmalloc (stacks, vmalloc'd tables)"),
    (0xffffea0000000000, 0xffffeb0000000000, "struct page"),
    (0xfffffe0000000000, 0xffffff0000000000, "cpu_entry_area"),
    (0xffffffff80000000, 0xffffffffa0000000, "kernel image"),
    (0xffffffffa0000000, 0xffffffffff000000, "modules"),
]


def load_symbols(path):
    text, data = [], []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 3:
                continue
            name = p[2] + (" " + p[3] if len(p) > 3 else "")
            a = int(p[0], 16)
            if not a:
                continue
            (text if p[1] in "tTwW" else data if p[1] in "dDbBrR" else []).append((a, name))
    text.sort()
    data.sort()
    return ([a for a, _ in text], [n for _, n in text],
            [a for a, _ in data], [n for _, n in data])


class Syms:
    def __init__(self, path):
        self.ta, self.tn, self.da, self.dn = load_symbols(path)

    def fn(self, va):
        i = bisect.bisect_right(self.ta, va) - 1
        return self.tn[i] if i >= 0 else "?"

    def data(self, va):
        """The data symbol at or below VA when VA is in the image or a module
        (slab and per-CPU memory have no symbols)."""
        if va < 0xffffffff80000000:
            return ""
        i = bisect.bisect_right(self.da, va) - 1
        if i < 0 or va - self.da[i] > 4096:
            return ""
        off = va - self.da[i]
        return self.dn[i] + (f"+{off:#x}" if off else "")


def region(va):
    for lo, hi, name in REGIONS:
        if lo <= va < hi:
            return name
    return "?"


def own_fn(q, fn):
    """Is FN the qdisc's own code?"""
    if "softmq" in q:
        return "[sch_softmq]" in fn
    if "fq_codel" in q:
        return "[sch_fq_codel]" in fn or fn.startswith("fq_codel")
    if q.endswith("fq"):
        return "[sch_fq]" in fn or fn.startswith("fq_")
    if "pfifo_fast" in q:
        return fn.startswith("pfifo_fast") or fn.startswith("mq_")
    return False


def enq_fn(q, fn):
    """Is FN the qdisc's enqueue function (its producer side)?"""
    return own_fn(q, fn) and "enqueue" in fn


def parse_dump(path, syms, q, npk):
    vcpu, insns, lines, overflow = {}, {}, [], 0
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "V":
                # loads stores [insns uloads ustores] (the last three since
                # the plugin's self-check, 2026-12-02)
                vcpu[int(p[1])] = [int(x) for x in p[2:7]] + [0] * (7 - len(p))
            elif p[0] == "I":
                insns[int(p[1], 16)] = [int(x) for x in p[2:6]]
            elif p[0] == "L":
                # ids: vaddr:writers:stores (since 2026-12-02), or vaddr
                ids = []
                for x in p[10:]:
                    t = x.split(":") + ["0", "0"]
                    ids.append((int(t[0], 16), int(t[1], 16), int(t[2])))
                lines.append((int(p[1], 16), int(p[2], 16), int(p[3], 16),
                              [int(x) for x in p[4:10]], ids))
            elif p[0] == "X":
                overflow = int(p[2])
    tot = dict(xstores=0, xloads=0, rmw=0, pstores_at=0)
    fns = {}
    for va, (xs, xl, rmw, ps) in insns.items():
        fn = syms.fn(va)
        d = fns.setdefault(fn, dict(xstores=0, xloads=0, rmw=0, pstores_at=0, pshared=0))
        for k, v in zip(("xstores", "xloads", "rmw", "pstores_at"), (xs, xl, rmw, ps)):
            d[k] += v
            tot[k] += v
    pshared = own_ps = plines = enq_ps = 0
    lrows = []
    for addr, wr, rd, (st, ld, xs, xl, rmw, ps), idx in lines:
        nw = bin(wr).count("1")
        ids = [i for i, _, _ in idx]
        lfns = []
        for i in ids:
            fn = syms.fn(i)
            if fn not in lfns:
                lfns.append(fn)
        # the enqueue side's own writer set: the vCPUs whose stores the
        # qdisc's enqueue function made to this line (a consumer that
        # moves between CPUs adds writers to a one-producer line, not
        # producers); its stores count when that set has >= 3 vCPUs
        emask, est = 0, 0
        for i, m, n in idx:
            if enq_fn(q, syms.fn(i)):
                emask |= m
                est += n
        enw = bin(emask).count("1")
        if enw >= 3:
            enq_ps += est
        ex = st if nw >= 3 else 0
        pshared += ex
        if nw >= 3:
            # on hardware, where every packet may come from another CPU,
            # a producer-shared line stored on every packet moves once
            # per packet however often it is stored: the structural count
            plines += min(st / npk, 1.0)
        if ex:
            # the exact per-line figure, spread over the functions that
            # stored to it in proportion to the stores of its first 6
            # instructions (older dumps: their at-the-store counts)
            w = {}
            for i, _, n in idx:
                if n:
                    fn = syms.fn(i)
                    w[fn] = w.get(fn, 0) + n
            for i in ids if not w else []:
                if insns.get(i, [0, 0, 0, 0])[3]:
                    fn = syms.fn(i)
                    w[fn] = w.get(fn, 0) + insns[i][3]
            if not w:		# its storing instructions were past the 6 kept
                w = {(lfns[0] if lfns else "?"): 1}
            tw = sum(w.values())
            for fn, x in w.items():
                fns.setdefault(fn, dict(xstores=0, xloads=0, rmw=0, pstores_at=0, pshared=0))
                fns[fn]["pshared"] += ex * x / tw
            if any(own_fn(q, fn) for fn in lfns):
                own_ps += ex
        lrows.append(dict(qdisc_=q, addr=f"{addr:#x}", region=region(addr), symbol=syms.data(addr),
                          writers=nw, readers=bin(rd).count("1"),
                          stores=st / npk, loads=ld / npk, xstores=xs / npk,
                          xloads=xl / npk, transfers=(xs + xl - rmw) / npk,
                          pshared=ex / npk, enq_writers=enw,
                          enq_pshared=(est if enw >= 3 else 0) / npk, functions=lfns))
    lrows.sort(key=lambda r: -(r["transfers"] + r["pshared"]))
    own_t = sum(d["xstores"] + d["xloads"] - d["rmw"] for fn, d in fns.items() if own_fn(q, fn))
    per = dict(
        xstores=tot["xstores"] / npk, xloads=tot["xloads"] / npk,
        transfers=(tot["xstores"] + tot["xloads"] - tot["rmw"]) / npk,
        pshared=pshared / npk, pstores_at=tot["pstores_at"] / npk, plines=plines,
        own_transfers=own_t / npk, own_pshared=own_ps / npk, enq_pshared=enq_ps / npk,
        accesses=sum(v[0] + v[1] for v in vcpu.values()) / npk,
        insns=sum(v[2] for v in vcpu.values()) / npk,
        user_accesses=sum(v[3] + v[4] for v in vcpu.values()) / npk,
        overflow=overflow)
    fnrows = {fn: dict(transfers=(d["xstores"] + d["xloads"] - d["rmw"]) / npk,
                       xstores=d["xstores"] / npk, xloads=d["xloads"] / npk,
                       pshared=d["pshared"] / npk)
              for fn, d in fns.items()}
    return per, fnrows, lrows


def f2(x):
    return "0" if abs(x) < 0.005 else f"{x:.2f}"


def selftest(cells):
    """The planted counter: >= 1 pshared store a packet in softmq_enqueue."""
    ok, n = True, 0
    for c in cells.values():
        if "softmq" not in c["qdisc"]:
            continue
        n += 1
        enq = sum(d["pshared"] for fn, d in c["functions"].items()
                  if fn.split()[0] == "softmq_enqueue")
        pl = [r for r in c["lines"] if r["symbol"].startswith("softmq_planted_shared")]
        where = (f"planted line {pl[0]['addr']}: {pl[0]['writers']} writers, "
                 f"{pl[0]['stores']:.2f} stores and {pl[0]['pshared']:.2f} pshared a packet, "
                 f"by {', '.join(pl[0]['functions'])}") if pl else "planted line not among the dumped lines"
        ep = c["per_packet"].get("enq_pshared", 0)
        good = enq >= 1.0 and ep >= 1.0
        ok &= good
        print(f"{'PASS' if good else 'FAIL'} sharing-selftest {c['load']} {c['qdisc']} "
              f"{c['vcpus']} vCPUs: softmq_enqueue {enq:.2f} producer-shared stores a packet, "
              f"{ep:.2f} to lines it wrote itself from >= 3 vCPUs (>= 1 wanted for both; "
              f"{c['attempts']} packets; {where})")
    if not n:
        print("FAIL sharing-selftest: no softmq cell")
        ok = False
    return ok



def line_table(title, cells, load, v, qds, key, nfuncs):
    """One table of shared lines (cells' KEY list) per qdisc, at V vCPUs."""
    md = [title, "",
          "| qdisc | line | where | writers | enq writers | readers | stores | tr | pshared | functions |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for q in qds:
        c = cells.get((load, v, q))
        if not c:
            continue
        for r in c[key][:TOP_LINES]:
            if r["transfers"] + r["pshared"] < 0.01:
                continue
            where = r["symbol"] or r["region"]
            md.append(f"| {QDISC_LABEL.get(q, q)} | `{r['addr']}` | {where} | {r['writers']} | {r.get('enq_writers', 0)} | "
                      f"{r['readers']} | {f2(r['stores'])} | {f2(r['transfers'])} | "
                      f"{f2(r['pshared'])} | {', '.join('`%s`' % f for f in r['functions'][:nfuncs])} |")
    md.append("")
    return md

def main():
    st = "--selftest" in sys.argv
    if st:
        sys.argv.remove("--selftest")
    a, meta = report_args("dirs")
    cells, envs = {}, []
    for d in a.dirs:
        ks = os.path.join(d, "kallsyms")
        if not os.path.exists(ks):
            print(f"report_sharing: no kallsyms in {d}", file=sys.stderr)
            continue
        syms = Syms(ks)
        for line in open(os.path.join(d, "runs.jsonl")):
            r = json.loads(line)
            if r.get("type") == "env":
                envs.append(r)
                continue
            if r.get("type") != "run" or "profile_phase" not in r:
                continue
            npk = r["pkts"] + r["errors"]
            ph = os.path.join(d, "share-%04d.txt" % r["profile_phase"])
            if not npk or not os.path.exists(ph):
                print(f"report_sharing: {r['load']} {r['qdisc']} {r['vcpus']} vCPUs: "
                      f"{'no packets' if not npk else 'no dump ' + ph}", file=sys.stderr)
                continue
            per, fns, lns = parse_dump(ph, syms, r["qdisc"], npk)
            qs = r.get("qstats", {})
            cells[(r["load"], r["vcpus"], r["qdisc"])] = dict(
                load=r["load"], vcpus=r["vcpus"], qdisc=r["qdisc"], flows=r["flows"],
                attempts=npk, pkts=r["pkts"], errors=r["errors"],
                qdisc_drops=r.get("qdisc_drops"), qstats=qs, per_packet=per,
                functions=dict(sorted(fns.items(), key=lambda kv: -(kv[1]["transfers"] + kv[1]["pshared"]))[:40]),
                own_functions={fn: d for fn, d in fns.items() if own_fn(r["qdisc"], fn)},
                lines=lns[:30],
                own_lines=[r for r in lns if any(own_fn(r["qdisc_"], f) for f in r["functions"])][:30])
    if not cells:
        sys.exit("report_sharing: no runs with dumps")
    kernel = meta.get("kernel", "?")
    e0 = envs[0] if envs else {}
    vl = sorted({k[1] for k in cells})
    loads = [l for l in LOAD_ORDER if any(k[0] == l for k in cells)]
    md = [f"# softmq bench, cache lines shared between vCPUs, per packet: {kernel}", "",
          f"- **Kernel**: {kernel} (Debian), softmq {e0.get('softmq_version', '?')}",
          f"- **Where**: QEMU {meta.get('qemu', '?')} ({meta.get('accel', '?')}), "
          f"vCPUs {', '.join(map(str, vl))} on a {meta.get('host', {}).get('cores', '?')}-core host",
          f"- **Command**: `{meta.get('command', '?')}` — {meta.get('date', '?')}, took "
          f"{meta.get('elapsed_s', 0) // 60} min {meta.get('elapsed_s', 0) % 60} s",
          f"- **Load**: one pktgen thread per vCPU (`queue_xmit`, `clone_skb 0`, 64 B), "
          f"{e0.get('count_per_thread', {}).get('dummy', '?')} packets per thread in the measured "
          f"run, {cells[next(iter(cells))]['flows']} flows per thread, distinct between threads; "
          f"slowdev at {e0.get('slow_pps', '?')} pps",
          "- **Per packet**: per packet handed to `dev_queue_xmit()` (sent + dropped). "
          "`xst`: stores to a 64-byte line last written by another vCPU; `xld`: loads of a line "
          "another vCPU wrote since this one last read it; `tr`: transfers = xst + xld − locked "
          "read-modify-writes counted in both; `pshared`: stores to lines written by ≥ 3 vCPUs "
          "in the window (producer-shared); `plines`: producer-shared lines stored per packet, each "
          "counted at most once a packet (what they would cost on hardware, where consecutive "
          "packets can come from different CPUs); `own`: transfers / pshared stores in the qdisc's own "
          "functions; `enq pshared`: stores by the qdisc's enqueue function (`pfifo_fast_enqueue`, "
          "`fq_codel_enqueue`, `fq_enqueue`, `softmq_enqueue`, with what is inlined in it) to lines that "
          "function itself stored from ≥ 3 vCPUs: the producer side's own sharing, without the "
          "writers a consumer that moves between CPUs adds (from the first 6 instructions the "
          "plugin keeps per line). TCG runs each vCPU for whole translation blocks and 2 host cores interleave "
          "the vCPUs coarsely: every count is a lower bound; which lines are shared, and by "
          "whom, is the result. `insns`, `accesses`: kernel instructions executed and their "
          "accesses to kernel memory in the window, all vCPUs, per packet (the instrument's "
          "self-check: about 0.3–0.5 accesses an instruction; far fewer means accesses are "
          "being missed).", ""]
    bad = sorted({(c["load"], c["vcpus"], c["qdisc"]) for c in cells.values()
                  if c["per_packet"]["insns"] and
                  c["per_packet"]["accesses"] < 0.15 * c["per_packet"]["insns"]})
    if bad:
        msg = (f"**Self-check failed**: in {len(bad)} cells the plugin saw fewer than 0.15 kernel "
               f"accesses per kernel instruction (first: {bad[0]}): accesses are being missed, "
               "the figures undercount.")
        print("report_sharing: " + msg.replace("**", ""), file=sys.stderr)
        md += [msg, ""]
    out = {"meta": meta, "envs": envs, "cells": list(cells.values())}
    for load in loads:
        md += [f"## {LOAD_TITLE.get(load, load)}", "",
               "| qdisc | vCPUs | xst | xld | tr | pshared | Δ pshared | plines | own tr | own pshared | enq pshared | insns | accesses | drops | lines lost |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        qds = [q for q in QDISC_ORDER if any(k[0] == load and k[2] == q for k in cells)]
        for q in qds:
            for v in vl:
                c = cells.get((load, v, q))
                if not c:
                    continue
                p = c["per_packet"]
                b = cells.get((load, v, BASE.get(load)))
                dps = f"{p['pshared'] - b['per_packet']['pshared']:+.2f}" if b and q != BASE.get(load) else "–"
                drops = f"{100 * c['errors'] / c['attempts']:.0f} %" if c["errors"] else "0"
                md.append(f"| {QDISC_LABEL.get(q, q)} | {v} | {f2(p['xstores'])} | {f2(p['xloads'])} | "
                          f"{f2(p['transfers'])} | {f2(p['pshared'])} | {dps} | {f2(p['plines'])} | {f2(p['own_transfers'])} | "
                          f"{f2(p['own_pshared'])} | {f2(p['enq_pshared'])} | {p['insns']:.0f} | {p['accesses']:.0f} | {drops} | {p['overflow']} |")
        md.append("")
        for v in vl:
            cs = [(q, cells[(load, v, q)]) for q in qds if (load, v, q) in cells]
            if not cs:
                continue
            allf = {}
            for q, c in cs:
                for fn, d in c["functions"].items():
                    allf[fn] = max(allf.get(fn, 0), d["transfers"] + d["pshared"])
            top = sorted(allf, key=lambda f: -allf[f])[:TOP_FN]
            md += [f"### {load}, {v} vCPUs: functions (transfers / pshared stores per packet)", "",
                   "| function | " + " | ".join(QDISC_LABEL.get(q, q) for q, _ in cs) + " |",
                   "|---|" + "---:|" * len(cs)]
            for fn in top:
                vals = []
                for q, c in cs:
                    d = c["functions"].get(fn)
                    vals.append(f"{f2(d['transfers'])} / {f2(d['pshared'])}" if d else "–")
                md.append(f"| `{fn}` | " + " | ".join(vals) + " |")
            md.append("")
        for v in vl:
            cs = [(q, cells[(load, v, q)]) for q in qds if (load, v, q) in cells]
            rows = [(QDISC_LABEL.get(q, q), fn, d) for q, c in cs
                    for fn, d in sorted(c["own_functions"].items(),
                                        key=lambda kv: -(kv[1]["transfers"] + kv[1]["pshared"]))
                    if d["transfers"] + d["pshared"] >= 0.005]
            if not rows:
                continue
            md += [f"### {load}, {v} vCPUs: the qdiscs' own functions, per packet", "",
                   "| qdisc | function | xst | xld | transfers | pshared |", "|---|---|---:|---:|---:|---:|"]
            md += [f"| {ql} | `{fn}` | {f2(d['xstores'])} | {f2(d['xloads'])} | {f2(d['transfers'])} | "
                   f"{f2(d['pshared'])} |" for ql, fn, d in rows]
            md.append("")
        v = vl[-1]
        md += line_table(f"### {load}, {v} vCPUs: the most shared lines per qdisc",
                         cells, load, v, qds, "lines", 4)
        md += line_table(f"### {load}, {v} vCPUs: the lines the qdisc's own code touches",
                         cells, load, v, qds, "own_lines", 5)
    for c in cells.values():
        for r in c["lines"] + c["own_lines"]:
            r.pop("qdisc_", None)
    if st:
        good = selftest(cells)
        md += ["## Self-test (planted shared counter)", "",
               "A module with one `atomic_long_inc()` on a global per packet at the top of "
               "`softmq_enqueue()`: the plugin must charge >= 1 producer-shared store per packet "
               "to `softmq_enqueue` in every softmq cell: " + ("**PASS**" if good else "**FAIL**"), ""]
        write_report(a.out_prefix, out, md)
        sys.exit(0 if good else 1)
    write_report(a.out_prefix, out, md)


if __name__ == "__main__":
    main()
