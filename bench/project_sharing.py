#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""project_sharing.py - a projection, not a measurement: packets per second
against sender CPUs (1-128) for each qdisc on a single-queue device, from
what this project can measure without such a machine.

  project_sharing.py --sharing S.json --icount I.json --out-prefix PREFIX

Inputs: a `make bench MODE=sharing` result (producer-shared lines stored
per packet, `plines`, per qdisc and vCPU count, dummy load) and a
`make bench MODE=icount` result (instructions per packet, dummy, 16 flows).
The model, per packet, N sender CPUs:

  t_cpu  = insns / IPNS                       each CPU's own work, in parallel
  t_line = plines(N) * c(N)                   producer-shared lines: each one
                                              is owned by one CPU at a time,
                                              so its transfers serialise
  Mpps(N) = 1000 / max(t_cpu / N, t_line)     (N = 1: 1000 / t_cpu)

IPNS = 6 instructions per ns (3 GHz, IPC 2; kernel networking code); c(N) =
80 ns per transfer within a socket of 32 cores, 200 ns across sockets (the
fraction of transfers that cross: (N - 32) / N above 32 CPUs).  plines is
taken at the nearest measured vCPU count (4, 8, 16; 16 for more CPUs).
What it leaves out: private-line misses, the consumer's own per-packet
work when it is one CPU (softmq: one consumer at a time; pfifo_fast: the
qdisc seqlock's owner), lock hand-over latency beyond the line transfer,
and the NIC.  Writes PREFIX.md, PREFIX.json and PREFIX.png (gnuplot).
"""
import argparse
import json
import shutil
import subprocess
import sys

IPNS = 6.0
C_IN, C_X, SOCKET = 80.0, 200.0, 32
NS = [1, 2, 4, 8, 16, 32, 64, 128]
PUBLISHED = {"pfifo_fast": (4, 5.0, "NOLOCK pfifo_fast, single-queue device, plateau near 5 Mpps "
                                    "from 4 threads (netdev 2019)")}
LABEL = {"noqueue": "noqueue", "pfifo_fast": "pfifo_fast", "fq_codel": "fq_codel", "fq": "fq",
         "softmq-flow": "softmq key flow", "softmq-cpu": "softmq key cpu"}


def cost(n):
    if n <= SOCKET:
        return C_IN
    return (C_IN * SOCKET + C_X * (n - SOCKET)) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharing", required=True)
    ap.add_argument("--icount", required=True)
    ap.add_argument("--out-prefix", required=True)
    ap.add_argument("--flows", type=int, default=16)
    a = ap.parse_args()
    sh = json.load(open(a.sharing))
    ic = json.load(open(a.icount))
    insns = {c["qdisc"]: c["median"] for c in ic["cells"]
             if c["load"] == "dummy" and c["flows"] == a.flows}
    pl = {}
    for c in sh["cells"]:
        if c["load"] == "dummy":
            pl.setdefault(c["qdisc"], {})[c["vcpus"]] = c["per_packet"]["plines"]
    qds = [q for q in LABEL if q in pl and q in insns]
    if not qds:
        sys.exit("project_sharing: no qdisc in both inputs")
    rows, out = {}, {"model": __doc__, "ipns": IPNS, "c_in": C_IN, "c_x": C_X,
                     "socket": SOCKET, "qdiscs": {}}
    for q in qds:
        meas = pl[q]
        vs = sorted(meas)
        r = []
        for n in NS:
            t_cpu = insns[q] / IPNS
            if n == 1:
                r.append(1000 / t_cpu)
                continue
            v = min(vs, key=lambda x: (abs(x - n), -x)) if n <= vs[-1] else vs[-1]
            t_line = meas[v] * cost(n) if n >= 3 else 0
            r.append(1000 / max(t_cpu / n, t_line))
        rows[q] = r
        out["qdiscs"][q] = {"insns": insns[q], "plines": meas, "mpps": dict(zip(NS, r))}
    md = ["# Projection (not a measurement): Mpps against sender CPUs, one single-queue device", "",
          f"From `{a.sharing}` (producer-shared lines per packet, `plines`, dummy load) and "
          f"`{a.icount}` (instructions per packet, dummy, {a.flows} flows).  Model: "
          f"Mpps(N) = 1000 / max(insns / {IPNS:g} / N, plines × c(N)); c = {C_IN:g} ns per "
          f"transfer within a {SOCKET}-core socket, {C_X:g} ns across; consumer and lock "
          "hand-over costs left out, so every figure is an upper bound of the design.", "",
          "| qdisc | insns/pkt | plines 4/8/16 | " + " | ".join(f"N={n}" for n in NS) + " |",
          "|---|---:|---|" + "---:|" * len(NS)]
    for q in qds:
        m = pl[q]
        md.append(f"| {LABEL[q]} | {insns[q]:.0f} | "
                  + "/".join(f"{m[v]:.2f}" for v in sorted(m)) + " | "
                  + " | ".join(f"{x:.1f}" for x in rows[q]) + " |")
    md.append("")
    for q, (n, mpps, what) in PUBLISHED.items():
        if q in rows:
            p = rows[q][NS.index(n)]
            md.append(f"Check: {what}: projected {p:.1f} Mpps at {n} CPUs, "
                      f"{100 * (p - mpps) / mpps:+.0f} % off.")
            out["check"] = {"qdisc": q, "cpus": n, "published_mpps": mpps, "projected_mpps": p}
    md.append("")
    with open(a.out_prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    with open(a.out_prefix + ".json", "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(md))
    gp = shutil.which("gnuplot")
    if not gp:
        return
    dat = a.out_prefix + ".dat"
    with open(dat, "w") as f:
        for i, n in enumerate(NS):
            f.write(f"{n} " + " ".join(f"{rows[q][i]:.3f}" for q in qds) + "\n")
    plots = ", ".join(f"'{dat}' using 1:{i + 2} with linespoints title '{LABEL[q]}'"
                      for i, q in enumerate(qds))
    pub = ", ".join(f"'-' using 1:2 with points pt 7 ps 2 title 'published: {q} {m} Mpps at {n}'"
                    for q, (n, m, _) in PUBLISHED.items())
    inline = "".join(f"{n} {m}\ne\n" for q, (n, m, _) in PUBLISHED.items())
    script = (f"set terminal pngcairo size 900,560 noenhanced\nset output '{a.out_prefix}.png'\n"
              "set logscale x 2\nset xlabel 'sender CPUs'\nset ylabel 'Mpps (projection)'\n"
              "set title 'PROJECTION from TCG-measured shared lines and instruction counts'\n"
              "set key left top\nset grid\n"
              f"plot {plots}, {pub}\n{inline}")
    try:
        subprocess.run([gp], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        try:
            subprocess.run([gp], input=script.replace("pngcairo", "png"), text=True, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"project_sharing: no PNG: {e}", file=sys.stderr)
    import os
    os.unlink(dat)


if __name__ == "__main__":
    main()
