#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""project_sharing.py - a PROJECTION, not a measurement: packets per second
against sender CPUs (1-128) for each qdisc on one single-queue device (and
mq over 4 queues), from what this project measures without such a machine.

  project_sharing.py --sharing S.json --icount I.json [--profile P.json] --out-prefix PREFIX

Writes PREFIX.md, PREFIX.json (the model's parameters and inputs: what
`bench/report.py` evaluates for a HOST=1 run's CPU count) and PREFIX.png
(gnuplot).

Inputs, per qdisc q (all measured under QEMU TCG on 6.12):
  W1     instructions per packet, 1 vCPU, pktgen -> dummy (icount; bypass
         path for pfifo_fast and softmq).
  W      the queued path every packet takes once senders contend:
         noqueue's path + what q adds under tbf (icount tbf-dummy, 16
         flows), less the tbf-only peek; at least W1.
  E, D   q's enqueue- and dequeue-side instructions per packet (profile,
         tbf-dummy, 16 flows, per function, minus tbf/bfifo's; peeks and
         tbf's own functions left out; the clock reads split half/half).
  X      the device transmit the one consumer runs per packet
         (__qdisc_run .. dummy_xmit, without the skb free a NIC does at
         TX completion).
  Tp     producer-serialised line transfers per packet: over the qdisc's
         lines (the sharing report's own_lines) that its enqueue side
         stores from >= 3 CPUs, min(1, pshared stores a packet) each.
  Tc     consumer-side transfers per packet: the larger of the measured
         transfers of the lines >= 3 CPUs write only from the dequeue
         side (the struct Qdisc state line, the consumer's private
         lines) and those the qdisc's dequeue-side functions made
         (producer-written slots and skbs pulled to the consumer).  Not
         min(1, pshared) as for Tp: a consumer line moves only when the
         consumer changes CPU, a producer-shared line with nearly every
         packet.
  Tp and Tc come from the dummy-load cell (mq-dummy for mq) with the
  most vCPUs whose attempts exceed accepted packets by <= 10 % (drops
  change what a packet does), per accepted packet.  TCG interleaves
  vCPUs coarsely, so these are lower bounds on hardware's transfers.

The model, N sender CPUs, N >= 2, c = c(N) ns a transfer:
  work   = W / IPNS + (Tp + Tc) * c      CPU time per packet, any CPU
  A      = N / work                      all CPUs busy
  cons   = (D + X) / IPNS + Tc * c       one consumer at a time (the
                                         qdisc's RUNNING state / seqlock)
  prod   = Ecrit / IPNS + Tp * c         producers' serial part: a shared
                                         line owned by one CPU at a time
                                         (pfifo_fast: its producer lock,
                                         Ecrit = E; softmq: lock-free,
                                         Ecrit = 0)
  lock   = (E + D) / IPNS + (Tp + Tc) * c    locked roots (fq_codel, fq):
                                         enqueue and dequeue both under
                                         the root lock (6.12's path)
  noqueue on a single-queue NIC: the TX lock serialises X, + 2 transfers
  (the lock's line and the driver's ring state; structural, not measured).
  Mpps(N) = 1000 / max(work / N, cons, prod or lock);  N = 1: 1000 / (W1 / IPNS).
  mq over Q queues, CPU c -> queue c % Q: min(N, Q) * Mpps_child(ceil(N / Q)).

Costs (stated, not measured here): IPNS = 6 instructions a ns (3 GHz, IPC
2); c = 60 ns for a line transfer within a socket, 150 ns across sockets
(core-to-core latency ranges published for Xeon Ice Lake/Sapphire Rapids
and EPYC Milan/Genoa: AnandTech's and Chips and Cheese's "core to core
latency" charts, within a socket 20-110 ns by die/CCX, across sockets
110-200 ns); 32 cores a socket, sockets filled in order, so a transfer
crosses with probability 1 - sum((n_s / N)^2).

Left out: private cache misses, interrupts and TX completion, the NIC's
own limit, lock hand-over beyond one transfer, 6.12's busylock (a second
line per packet for locked roots), hyper-threads.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

IPNS = 6.0
C_IN, C_X, SOCKET = 60.0, 150.0, 32
NS = [1, 2, 4, 8, 16, 32, 64, 128]
MQ_QUEUES = 4
SENS = ["pfifo_fast", "fq_codel", "softmq-cpu", "softmq-flow"]
LABEL = {"noqueue": "noqueue", "pfifo_fast": "pfifo_fast", "fq_codel": "fq_codel", "fq": "fq",
         "softmq-flow": "softmq key flow", "softmq-cpu": "softmq key cpu",
         "mq-pfifo_fast": "mq + pfifo_fast (4 queues)", "mq-softmq": "mq + softmq (4 queues)"}
KIND = {"noqueue": "txlock", "pfifo_fast": "nolock", "softmq-flow": "nolock",
        "softmq-cpu": "nolock", "fq_codel": "locked", "fq": "locked"}
MQ_CHILD = {"mq-pfifo_fast": "pfifo_fast", "mq-softmq": "softmq-flow"}   # softmq's default key is flow
# The device transmit the consumer runs (profile, tbf-bfifo); the fallback
# is 6.12's count from 2026-12-01.
X_FUNCS = ["__qdisc_run", "sch_direct_xmit", "dev_hard_start_xmit", "netif_skb_features",
           "validate_xmit_skb", "skb_network_protocol", "validate_xmit_skb_list",
           "validate_xmit_xfrm", "dummy_xmit [dummy]", "skb_clone_tx_timestamp"]
X_FALLBACK = 470.0
NOQUEUE_TX_TRANSFERS = 2.0

# Published measurements the projection is checked against.
PUBLISHED = [
    {"what": "pfifo_fast (NOLOCK), single-queue device, pktgen queue_xmit",
     "source": "P. Abeni, commit ba27b4cdaaa6 \"net: dev: introduce support for sch BYPASS "
               "for lockless qdisc\" (net-next, 2019), \"patched\" column",
     "qdisc": "pfifo_fast", "plot_label": "pfifo_fast, one queue",
     "points": {1: 2.827, 2: 2.900, 4: 5.000, 8: 4.700}},
    {"what": "mq + pfifo_fast, one pktgen thread per TX queue",
     "source": "same commit, MQ device with mq root",
     "qdisc": "mq-pfifo_fast", "plot_label": "mq + pfifo_fast, one thread a queue",
     "points": {1: 2.889, 2: 5.188, 4: 9.589}},
]
# E. Dumazet, commit 100dfa74cad9 "net: dev_queue_xmit() llist adoption"
# (6.19): dual Xeon 6985P-C (2 x 120 cores, 480 threads), 30 TX queues with
# fq, 240 netperf UDP_STREAM: before (busylock + root lock, 6.12's path)
# 16 Mpps, 41 Mpps with each thread pinned to its own CPU; after 29 / 57.
DEFER = {"source": "E. Dumazet, commit 100dfa74cad9 \"net: dev_queue_xmit() llist adoption\" "
                   "(net-next, October 2025; in 6.19)",
         "queues": 30, "threads": 240, "socket": 120, "before": 16.0, "before_pinned": 41.0,
         "after": 29.0, "after_pinned": 57.0}


def cross_fraction(n, socket=SOCKET):
    """Probability that a line's previous owner is on another socket, N
    CPUs filling sockets of SOCKET cores in order."""
    if n <= socket:
        return 0.0
    parts = [socket] * (n // socket) + ([n % socket] if n % socket else [])
    return 1.0 - sum((p / n) ** 2 for p in parts)


def cost(n, p=None, socket=None):
    p = p or {}
    cin, cx = p.get("c_in", C_IN), p.get("c_x", C_X)
    return cin + (cx - cin) * cross_fraction(n, socket or p.get("socket", SOCKET))


def mpps(p, q, n, socket=None):
    """Projected Mpps for qdisc Q at N senders under parameters P (the JSON
    this script writes: p["qdiscs"][q] holds W1, W, E, D, X, Tp, Tc)."""
    if q in MQ_CHILD:
        Q = p.get("mq_queues", MQ_QUEUES)
        per = math.ceil(n / Q)
        child = dict(p["qdiscs"][MQ_CHILD[q]])
        child.update({k: v for k, v in p["qdiscs"][q].items() if k in ("Tp", "Tc")})
        return min(n, Q) * _single(p, child, KIND[MQ_CHILD[q]], per, socket)
    return _single(p, p["qdiscs"][q], KIND[q], n, socket)


def _single(p, m, kind, n, socket):
    ipns = p.get("ipns", IPNS)
    if n <= 1:
        return 1000.0 / (m["W1"] / ipns)
    c = cost(n, p, socket)
    tp, tc = m["Tp"], m["Tc"]
    work = m["W"] / ipns + (tp + tc) * c
    if kind == "txlock":
        serial = m["X"] / ipns + NOQUEUE_TX_TRANSFERS * c
        work += NOQUEUE_TX_TRANSFERS * c
    elif kind == "locked":
        serial = max((m["E"] + m["D"]) / ipns + (tp + tc) * c,
                     (m["D"] + m["X"]) / ipns + tc * c)
    else:
        ecrit = m["E"] if m.get("prod_lock") else 0.0
        serial = max((m["D"] + m["X"]) / ipns + tc * c, ecrit / ipns + tp * c)
    return 1000.0 / max(work / n, serial)


def split_profile(prof):
    """E, D per qdisc and X from a MODE=profile result (tbf-dummy, 16 flows)."""
    cells = {c["qdisc"]: c["functions"] for c in prof["cells"]
             if c["load"] == "tbf-dummy" and c["flows"] == 16}
    base = cells.get("tbf-bfifo")
    if not base:
        return {}, X_FALLBACK
    x = sum(base.get(f, 0.0) for f in X_FUNCS)
    out = {}
    for name, f in cells.items():
        if name == "tbf-bfifo":
            continue
        e = d = 0.0
        for fn in set(f) | set(base):
            dv = f.get(fn, 0.0) - base.get(fn, 0.0)
            if dv <= 0 or "peek" in fn or fn.startswith("tbf_"):
                continue
            if fn in ("ktime_get", "read_tsc", "__rcu_read_lock", "__rcu_read_unlock"):
                e += dv / 2
                d += dv / 2
            elif ("enqueue" in fn or "hash" in fn or "flow_dissect" in fn or "get_ports" in fn
                  or "list_add" in fn or fn.startswith("_raw_spin_")):
                e += dv
            else:
                d += dv
        peek = sum(max(0.0, f.get(fn, 0.0) - base.get(fn, 0.0)) for fn in f if "peek" in fn)
        out[name[len("tbf-"):]] = {"E": e, "D": d, "peek": peek}
    return out, x


def transfers(cell):
    """Tp, Tc per accepted packet from one sharing cell."""
    scale = cell["attempts"] / max(1, cell["pkts"])
    own = cell.get("own_lines", [])
    tp = sum(min(1.0, l["pshared"] * scale) for l in own if l.get("enq_writers", 0) >= 3)
    tcl = sum(l["transfers"] for l in own
              if l.get("enq_writers", 0) < 3 and l.get("writers", 0) >= 3) * scale
    tcf = sum(v["transfers"] for k, v in cell.get("own_functions", {}).items()
              if "enqueue" not in k) * scale
    return tp, max(tcl, tcf)


def pick_cell(cells):
    ok = [c for c in cells if c["attempts"] <= 1.10 * c["pkts"]]
    if ok:
        return max(ok, key=lambda c: c["vcpus"])
    return min(cells, key=lambda c: c["attempts"] / max(1, c["pkts"]))


def build(a):
    sh = json.load(open(a.sharing))
    ic = json.load(open(a.icount))
    prof = json.load(open(a.profile)) if a.profile else None
    med = {(c["load"], c["qdisc"]): c["median"] for c in ic["cells"] if c["flows"] == a.flows}
    split, x = split_profile(prof) if prof else ({}, X_FALLBACK)
    noq = med[("dummy", "noqueue")]
    bf = med.get(("tbf-dummy", "tbf-bfifo"))
    qd = {}
    for q in LABEL:
        cells = [c for c in sh["cells"] if c["qdisc"] == q
                 and c["load"] == ("mq-dummy" if q.startswith("mq-") else "dummy")]
        if not cells:
            continue
        cell = pick_cell(cells)
        tp, tc = transfers(cell)
        m = {"Tp": round(tp, 3), "Tc": round(tc, 3), "cell": f"{cell['load']}, {cell['vcpus']} vCPUs",
             "drops_pct": round(100 * (1 - cell["pkts"] / cell["attempts"]), 1)}
        if q in MQ_CHILD:
            qd[q] = m
            continue
        if ("dummy", q) not in med:
            continue
        w1 = med[("dummy", q)]
        s = split.get(q, {"E": 0.0, "D": 0.0, "peek": 0.0})
        tq = med.get(("tbf-dummy", "tbf-" + q))
        w = max(w1, noq + tq - bf - s["peek"]) if (tq and bf) else w1
        m.update({"W1": w1, "W": round(w, 1), "E": round(s["E"], 1), "D": round(s["D"], 1),
                  "X": round(x, 1), "prod_lock": q == "pfifo_fast"})
        qd[q] = m
    return {"projection": True, "model": __doc__, "ipns": IPNS, "c_in": C_IN, "c_x": C_X,
            "socket": SOCKET, "mq_queues": MQ_QUEUES,
            "inputs": {"sharing": os.path.basename(a.sharing), "icount": os.path.basename(a.icount),
                       "profile": os.path.basename(a.profile) if a.profile else None,
                       "flows": a.flows},
            "qdiscs": qd}


def checks(p):
    out = []
    for pub in PUBLISHED:
        q = pub["qdisc"]
        if q not in p["qdiscs"] or (q in MQ_CHILD and MQ_CHILD[q] not in p["qdiscs"]):
            continue
        for n, v in pub["points"].items():
            pr = mpps(p, q, n)
            out.append({"what": pub["what"], "source": pub["source"], "qdisc": q, "cpus": n,
                        "published_mpps": v, "projected_mpps": round(pr, 2),
                        "error_pct": round(100 * (pr - v) / v)})
    if "fq" in p["qdiscs"]:
        per = DEFER["threads"] // DEFER["queues"]
        # 240 threads over 2 sockets: half the transfers cross
        c_mix = p["c_in"] + (p["c_x"] - p["c_in"]) * 0.5
        pp = dict(p, c_in=c_mix, c_x=c_mix)
        pr = DEFER["queues"] * mpps(pp, "fq", per)
        for key in ("before_pinned", "before"):
            v = DEFER[key]
            out.append({"what": f"mq + fq, {DEFER['queues']} TX queues, {DEFER['threads']} UDP senders "
                                f"({per} a queue), 2 sockets, {key.replace('_', ', ')}",
                        "source": DEFER["source"], "qdisc": "fq", "cpus": DEFER["threads"],
                        "published_mpps": v, "projected_mpps": round(pr, 1),
                        "error_pct": round(100 * (pr - v) / v)})
    return out


def write(a, p):
    rows = {q: [mpps(p, q, n) for n in NS] for q in p["qdiscs"]
            if q not in MQ_CHILD or MQ_CHILD[q] in p["qdiscs"]}
    p["mpps"] = {q: {str(n): round(v, 2) for n, v in zip(NS, r)} for q, r in rows.items()}
    p["checks"] = checks(p)
    md = ["# PROJECTION (not a measurement): Mpps against sender CPUs", "",
          "**A projection from TCG measurements, not a measurement.**  From "
          f"`{p['inputs']['sharing']}` (shared lines per packet), `{p['inputs']['icount']}` "
          f"(instructions per packet) and `{p['inputs']['profile']}` (per function); "
          "the model and its costs are in `bench/project_sharing.py`'s header and "
          "bench/README.md (\"Projection\").  Costs: "
          f"{p['ipns']:g} instructions a ns; a line transfer {p['c_in']:g} ns within a "
          f"{p['socket']}-core socket, {p['c_x']:g} ns across.", "",
          "| qdisc | W1 / W insns | E / D / X | Tp / Tc (cell) | "
          + " | ".join(f"N={n}" for n in NS) + " |",
          "|---|---:|---|---|" + "---:|" * len(NS)]
    for q, r in rows.items():
        m = p["qdiscs"][q]
        if q in MQ_CHILD:
            c = p["qdiscs"][MQ_CHILD[q]]
            ins = f"as {LABEL[MQ_CHILD[q]]}"
            ed = ins
        else:
            c = m
            ins = f"{c['W1']:.0f} / {c['W']:.0f}"
            ed = f"{c['E']:.0f} / {c['D']:.0f} / {c['X']:.0f}"
        md.append(f"| {LABEL[q]} | {ins} | {ed} | {m['Tp']:.2f} / {m['Tc']:.2f} ({m['cell']}) | "
                  + " | ".join(f"{v:.1f}" for v in r) + " |")
    md += ["", "## Checked against published measurements", "",
           "| published | CPUs | published Mpps | projected Mpps | error |", "|---|---:|---:|---:|---:|"]
    for ch in p["checks"]:
        md.append(f"| {ch['what']} ({ch['source']}) | {ch['cpus']} | {ch['published_mpps']:g} | "
                  f"{ch['projected_mpps']:g} | {ch['error_pct']:+d} % |")
    md += ["", "## Sensitivity to the transfer cost (the one number this host cannot measure)", "",
           "| c within / across a socket (ns) | "
           + " | ".join(f"{LABEL[q]} N=16 / N=128" for q in SENS if q in rows) + " |",
           "|---|" + "---:|" * sum(1 for q in SENS if q in rows)]
    sens = []
    for cin, cx in ((30, 75), (60, 150), (120, 300)):
        pp = dict(p, c_in=cin, c_x=cx)
        vals = {q: (round(mpps(pp, q, 16), 2), round(mpps(pp, q, 128), 2)) for q in SENS if q in rows}
        sens.append({"c_in": cin, "c_x": cx, "mpps_16_128": vals})
        md.append(f"| {cin} / {cx} | " + " | ".join(f"{v[0]:.1f} / {v[1]:.1f}" for v in vals.values())
                  + " |")
    p["sensitivity"] = sens
    md.append("")
    with open(a.out_prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    png = plot(a.out_prefix, rows, p)
    p["png"] = os.path.basename(png) if png else None
    with open(a.out_prefix + ".json", "w") as f:
        json.dump(p, f, indent=1)


def plot(prefix, rows, p):
    gp = shutil.which("gnuplot")
    if not gp:
        print("project_sharing: gnuplot not installed, no PNG", file=sys.stderr)
        return None
    dat = prefix + ".dat"
    qs = list(rows)
    with open(dat, "w") as f:
        for i, n in enumerate(NS):
            f.write(f"{n} " + " ".join(f"{rows[q][i]:.4f}" for q in qs) + "\n")
    plots = [f"'{dat}' using 1:{i + 2} with linespoints lw 2 title '{LABEL[q]}'"
             for i, q in enumerate(qs)]
    inline = ""
    for pub in PUBLISHED:
        plots.append(f"'-' using 1:2 with points pt {7 if pub['qdisc'] == 'pfifo_fast' else 5} "
                     "ps 1.8 lc rgb 'black' title 'published (measured): "
                     f"{pub['plot_label']}, Abeni 2019'")
        inline += "".join(f"{n} {v}\n" for n, v in pub["points"].items()) + "e\n"
    png = prefix + ".png"
    script = (f"set terminal pngcairo size 1000,760 noenhanced\nset output '{png}'\n"
              "set logscale xy 2\nset xrange [0.8:160]\nset xtics (1,2,4,8,16,32,64,128)\n"
              "set xlabel 'sender CPUs'\nset ylabel 'Mpps (PROJECTION)'\n"
              "set title \"PROJECTION, not a measurement (from TCG instruction and shared-line counts)\\n"
              "one single-queue device (mq: 4 queues); "
              f"{p['c_in']:g} / {p['c_x']:g} ns a line transfer within / across sockets of "
              f"{p['socket']}, {p['ipns']:g} instructions a ns\"\n"
              "set key below horizontal maxcols 3\nset grid\n"
              f"plot {', '.join(plots)}\n{inline}")
    ok = False
    for term in ("pngcairo", "png"):
        try:
            subprocess.run([gp], input=script.replace("pngcairo", term), text=True, check=True,
                           capture_output=True)
            ok = True
            break
        except (OSError, subprocess.CalledProcessError) as e:
            err = e
    os.unlink(dat)
    if not ok:
        print(f"project_sharing: no PNG: {err}", file=sys.stderr)
        return None
    return png


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharing", required=True)
    ap.add_argument("--icount", required=True)
    ap.add_argument("--profile")
    ap.add_argument("--out-prefix", required=True)
    ap.add_argument("--flows", type=int, default=16)
    a = ap.parse_args()
    p = build(a)
    if not p["qdiscs"]:
        sys.exit("project_sharing: no qdisc in both inputs")
    write(a, p)


if __name__ == "__main__":
    main()
