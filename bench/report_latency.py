#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Aggregate `make bench MODE=latency` runs into JSON, a markdown table and a PNG.

    report_latency.py --meta META.json --out-prefix bench/results/DATE-ABI-latency RAWDIR

RAWDIR is what bench/latency-guest.sh wrote: runs.jsonl (an "env" line,
"run" and "skip" lines) and one folder per run with iperf3.json,
ping.txt, ss.txt, tc-start.json and tc-end.json.  Writes PREFIX.json,
PREFIX.md and PREFIX.png (gnuplot, as bench/report.py draws its plot);
prints the markdown on stdout.  Standard library only.
"""
import json
import os
import re
import shutil
import statistics
import sys

from report import report_args, run_gnuplot, write_report

ORDER = ["pfifo_fast", "fq_codel", "softmq", "softmq-nocodel", "fq_codel-ecn", "softmq-ecn"]
COLORS = {"pfifo_fast": "#1f77b4", "fq_codel": "#2ca02c", "softmq": "#d62728",
          "softmq-nocodel": "#ff7f0e", "fq_codel-ecn": "#17becf", "softmq-ecn": "#9467bd"}

CAVEAT = (
    "QEMU TCG, not hardware: the bottleneck is a tbf at a rate the VM holds "
    "steady, so the queue, not the CPU, sets the delay; the numbers compare "
    "queue management (how much standing queue each qdisc lets TCP build, "
    "whether a sparse flow waits behind bulk flows, how fair the bulk flows "
    "are) between qdiscs measured in the same boot.  They cannot say what "
    "the qdiscs cost per packet or how they scale on many cores (tbf as the "
    "root runs every child locked; `make bench` and `MODE=icount` measure "
    "that), and absolute RTTs carry TCG's timer and scheduling jitter "
    "(about a millisecond: a ping through an empty queue).")


def label(v, env):
    if v == "softmq":
        return "softmq (defaults: CoDel on)" if env.get("softmq_aqm") else \
            "softmq (defaults; this module has no AQM)"
    if v == "softmq-ecn":
        return "softmq, tcp_ecn=1" + ("" if env.get("softmq_aqm") else " (no AQM)")
    if v == "softmq-nocodel":
        return "softmq nocodel (AQM off)"
    if v.endswith("-ecn"):
        return v[:-4] + ", tcp_ecn=1"
    return v


def pct(vals, p):
    """Percentile by linear interpolation (numpy's default)."""
    if not vals:
        return None
    s = sorted(vals)
    k = (len(s) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(s) - 1)
    return s[f] + (s[c] - s[f]) * (k - f)


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or not any(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def parse_ping(path):
    rtts, tx, rx = [], None, None
    try:
        with open(path) as f:
            for line in f:
                m = re.search(r"time=([0-9.]+) ms", line)
                if m:
                    rtts.append(float(m.group(1)))
                    continue
                m = re.search(r"(\d+) packets transmitted, (\d+) received", line)
                if m:
                    tx, rx = int(m.group(1)), int(m.group(2))
    except OSError:
        pass
    return rtts, tx, rx


def parse_ss(path, omit):
    """Bulk flows' srtt samples (ms) from the `ss -tin` snapshots after OMIT s.

    The iperf3 control connection (a few KB acked) is left out: only
    sockets with more than 1 MB acked count as bulk flows."""
    out, t_first, t = [], None, None
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        if line.startswith("@ "):
            t = float(line[2:])
            t_first = t if t_first is None else t_first
            continue
        m = re.search(r"\brtt:([0-9.]+)/", line)
        a = re.search(r"\bbytes_acked:(\d+)", line)
        if m and a and int(a.group(1)) > 1_000_000 and t is not None and t - t_first >= omit:
            out.append(float(m.group(1)))
    return out


def qdisc_stats(path):
    """(root tbf, child 10:) dicts from `tc -s -j qdisc show`."""
    try:
        qs = json.load(open(path))
    except (OSError, ValueError):
        return None, None
    root = next((q for q in qs if q.get("root")), None)
    child = next((q for q in qs if q.get("handle") == "10:"), None)
    return root, child


def delta(a, b, key):
    if not a or not b:
        return None
    x0, x1 = a.get(key), b.get(key)
    if x0 is None:
        x0 = (a.get("xstats") or {}).get(key)
        x1 = (b.get("xstats") or {}).get(key)
    if x0 is None or x1 is None:
        return None
    return x1 - x0


def run_metrics(raw, run, env):
    d = os.path.join(raw, run["dir"])
    m = {"variant": run["variant"], "round": run["round"], "tcp_ecn": run.get("tcp_ecn"),
         "qdisc_desc": run.get("qdisc_desc")}
    # Bulk flows: iperf3 -J (client; its "receiver" blocks are the server's counts).
    try:
        ip = json.load(open(os.path.join(d, "iperf3.json")))
    except (OSError, ValueError) as e:
        ip = {"error": f"no iperf3 JSON: {e}"}
    m["iperf3_error"] = ip.get("error")
    streams = (ip.get("end") or {}).get("streams") or []
    gp = [s["receiver"]["bits_per_second"] / 1e6 for s in streams if "receiver" in s]
    m["flow_goodput_mbit"] = gp
    m["goodput_mbit"] = sum(gp) if gp else None
    m["jain"] = jain(gp)
    m["retransmits"] = sum(s["sender"].get("retransmits", 0) for s in streams if "sender" in s) \
        if streams else None
    mr = [s["sender"]["mean_rtt"] / 1000 for s in streams if s.get("sender", {}).get("mean_rtt")]
    m["iperf3_mean_rtt_ms"] = statistics.mean(mr) if mr else None
    irtt = [s["rtt"] / 1000 for iv in ip.get("intervals", [])
            if not iv.get("sum", {}).get("omitted") for s in iv.get("streams", []) if s.get("rtt")]
    m["iperf3_interval_rtt_median_ms"] = statistics.median(irtt) if irtt else None
    # Bulk srtt from ss -tin on the sender.
    ss = parse_ss(os.path.join(d, "ss.txt"), env.get("omit", 3))
    m["srtt_samples"] = len(ss)
    m["srtt_ms"] = statistics.median(ss) if ss else m["iperf3_interval_rtt_median_ms"]
    m["_srtt"] = ss
    # Probe.
    rtts, tx, rx = parse_ping(os.path.join(d, "ping.txt"))
    m["_probe"] = rtts
    m["probe_n"] = len(rtts)
    m["probe_p50_ms"] = pct(rtts, 50)
    m["probe_p99_ms"] = pct(rtts, 99)
    m["probe_max_ms"] = max(rtts) if rtts else None
    m["probe_loss_pct"] = 100.0 * (tx - rx) / tx if tx else None
    # The child qdisc over the measured window.
    r0, c0 = qdisc_stats(os.path.join(d, "tc-start.json"))
    r1, c1 = qdisc_stats(os.path.join(d, "tc-end.json"))
    m["sent_pkts"] = delta(c0, c1, "packets")
    m["drops"] = delta(c0, c1, "drops")
    m["drops_whole_run"] = (c1 or {}).get("drops")
    # AQM counters over the whole run (the qdisc is new at each run's start):
    # tc's xstats, or for softmq with a tc plugin older than the module the
    # module's own, read by tests/vm/lib/smq.py after the traffic.
    xs, m["aqm_counters_from"] = dict(c1 or {}), "tc -s -j"
    if not any(k in xs for k in ("ecn_mark", "drop_codel")):
        try:
            sq = json.load(open(os.path.join(d, "smq-end.json")))
            xs = next((q.get("xstats") or {} for q in sq if q.get("handle") == "10:"), {})
            m["aqm_counters_from"] = "tests/vm/lib/smq.py"
        except (OSError, ValueError):
            pass
    marks = [xs.get(k) for k in ("ecn_mark", "ce_mark")]
    m["ce_marks"] = sum(x for x in marks if x is not None) if any(x is not None for x in marks) else None
    m["drop_codel"] = xs.get("drop_codel")
    m["drop_overlimit"] = xs.get("drop_overlimit")
    m["drops_ring_full"] = xs.get("drops_ring_full")
    m["tbf_overlimits"] = delta(r0, r1, "overlimits")
    # tc -j prints a qdisc's xstats among its own keys (no "xstats" object)
    m["child_stats_end"] = {k: v for k, v in (c1 or {}).items() if k != "options"}
    return m


METRICS = ["probe_p50_ms", "probe_p99_ms", "probe_loss_pct", "srtt_ms", "iperf3_mean_rtt_ms",
           "goodput_mbit", "jain", "drops", "drops_whole_run", "ce_marks", "drop_codel",
           "sent_pkts", "retransmits"]


def cells_of(runs):
    cells = {}
    for v in ORDER + sorted({r["variant"] for r in runs} - set(ORDER)):
        rs = sorted((r for r in runs if r["variant"] == v), key=lambda r: r["round"])
        if not rs:
            continue
        c = {"n": len(rs), "rounds": [r["round"] for r in rs]}
        for k in METRICS:
            vals = [r[k] for r in rs if r.get(k) is not None]
            c[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
                    "values": vals} if vals else None
        pooled = [x for r in rs for x in r["_probe"]]
        c["probe_pooled_p99_ms"] = pct(pooled, 99)
        c["probe_pooled_n"] = len(pooled)
        cells[v] = c
    return cells


def med(cells, v, k):
    c = cells.get(v)
    return c[k]["median"] if c and c.get(k) else None


def fmt(x, nd=1):
    return "–" if x is None else f"{x:.{nd}f}"


def cell_str(c, k, nd=1):
    if not c or not c.get(k):
        return "–"
    x = c[k]
    if len(x["values"]) == 1:
        return fmt(x["median"], nd)
    return f"{fmt(x['median'], nd)} [{fmt(x['min'], nd)}–{fmt(x['max'], nd)}]"


def targets(cells, env):
    """The tracker's targets: list of (target, measured, met)."""
    out = []
    aqm = env.get("softmq_aqm")
    note = "" if aqm else " (no AQM in this module)"

    def ratio_t(text, a, b, k, op, lim):
        x, y = med(cells, a, k), med(cells, b, k)
        if x is None or y is None or not y:
            out.append((text, "not measured", None))
            return
        r = x / y
        met = {"le": r <= lim, "lt": r < lim, "ge": r >= lim, "within": abs(r - 1) <= lim}[op]
        out.append((text + note, f"{x:.2f} / {y:.2f} = {r:.3f}×", met))

    for s, f in (("softmq", "fq_codel"), ("softmq-ecn", "fq_codel-ecn")):
        if s not in cells:
            continue
        ratio_t(f"{s}: bulk srtt ≤ 1.2× {f}'s", s, f, "srtt_ms", "le", 1.2)
        ratio_t(f"{s}: probe p99 ≤ 1.2× {f}'s", s, f, "probe_p99_ms", "le", 1.2)
        ratio_t(f"{s}: bulk srtt < 1/10 of pfifo_fast's", s, "pfifo_fast", "srtt_ms", "lt", 0.1)
        ratio_t(f"{s}: probe p99 < 1/10 of pfifo_fast's", s, "pfifo_fast", "probe_p99_ms", "lt", 0.1)
        ratio_t(f"{s}: goodput within 5 % of {f}'s", s, f, "goodput_mbit", "within", 0.05)
        j = cells[s].get("jain")
        if j:
            out.append((f"{s}: Jain's index ≥ 0.95 over the bulk flows{note}",
                        f"median {j['median']:.3f}, min {j['min']:.3f}", j["median"] >= 0.95))
    c = cells.get("softmq-ecn")
    if c:
        mk, dr, sent = med(cells, "softmq-ecn", "ce_marks"), med(cells, "softmq-ecn", "drops"), \
            med(cells, "softmq-ecn", "sent_pkts")
        if mk is None:
            out.append(("softmq, tcp_ecn=1: CE marks counted, drops near zero (≤ 0.1 % of sent)"
                        + note, f"no CE mark counter in this module's xstats; drops {fmt(dr, 0)}",
                        False))
        else:
            ok = mk > 0 and dr is not None and sent and dr <= 0.001 * sent
            out.append(("softmq, tcp_ecn=1: CE marks counted, drops near zero (≤ 0.1 % of sent)"
                        + note, f"CE marks {mk:.0f} per run, drops {fmt(dr, 0)} of {fmt(sent, 0)} "
                        f"sent in the measured window (medians per round)", ok))
    if "softmq-nocodel" in cells and "softmq" in cells:
        out.append(("softmq nocodel vs softmq: what the AQM buys (no target)",
                    f"srtt {fmt(med(cells, 'softmq-nocodel', 'srtt_ms'))} → "
                    f"{fmt(med(cells, 'softmq', 'srtt_ms'))} ms, probe p99 "
                    f"{fmt(med(cells, 'softmq-nocodel', 'probe_p99_ms'))} → "
                    f"{fmt(med(cells, 'softmq', 'probe_p99_ms'))} ms", None))
    return out


def markdown(meta, env, cells, skips, tg, png):
    kernel = env.get("kernel", meta.get("kernel", "?"))
    h = meta.get("host", {})
    where = "TCG" if meta.get("qemu") else "HOST=1"
    L = [f"# softmq bench, latency under load: {kernel}, {where}, {env.get('vcpus', '?')} vCPUs", ""]
    if png:
        L += [f"![probe RTT, bulk srtt, goodput, fairness]({os.path.basename(png)})", ""]
    L.append(f"- **Kernel**: {kernel} (Debian), softmq {env.get('softmq_version') or '?'}; "
             f"{env.get('tc', 'tc ?')}; {env.get('iperf3', 'iperf3 ?')}; {env.get('ping', 'ping ?')}")
    if meta.get("qemu"):
        L.append(f"- **Where**: QEMU {meta['qemu']} TCG ({meta.get('accel', '?')}), "
                 f"{env.get('vcpus', '?')} vCPUs, `-net none` (all traffic inside the guest); "
                 f"host: {h.get('cores', '?')} cores, {h.get('cpu', '?')}, {h.get('os', '?')}")
    else:
        L.append(f"- **Where**: the running kernel (HOST=1), {env.get('vcpus', '?')} CPUs, "
                 f"{h.get('cpu', '?')}, {h.get('os', '?')}; traffic between two netns")
    L.append(f"- **Command**: `{meta.get('command', '?')}` — {meta.get('date', '?')}, took "
             f"{meta.get('elapsed_s', 0) // 60} min {meta.get('elapsed_s', 0) % 60} s for "
             f"{meta.get('kernels', '?')}")
    if h.get("others"):
        L.append(f"- **Also running on the host** (noise): {h['others']}")
    L.append(f"- **Bottleneck**: veth between two netns (198.18.3.1 → 198.18.3.2); root of the "
             f"sender's veth `tbf rate {env.get('rate')} burst {env.get('burst')} latency 100ms`, "
             f"the qdisc under test its child at `parent 1:1` (TSO/GSO off on that veth). Under "
             f"a classful parent the core clears `TCQ_F_NOLOCK`: softmq runs locked here, like "
             f"the others; this measures its queue management, not its lockless enqueue.")
    L.append(f"- **Load**: {env.get('flows')} bulk TCP flows (one `iperf3 -P {env.get('flows')} "
             f"-J`, cubic) for {env.get('omit')} s unmeasured + {env.get('secs')} s measured; "
             f"probe: `ping -i 0.05` (ICMP, a flow of its own) for the measured {env.get('secs')} s; "
             f"`ss -tin` on the sender each second. {env.get('rounds')} round{'s' if env.get('rounds') != 1 else ''}, the variants "
             f"interleaved in one boot; cells are medians over the rounds [min–max].")
    L.append("- **Columns**: probe RTT p50/p99 per round (then the median over rounds); bulk "
             "srtt = median of the bulk flows' `ss -tin` rtt samples in the measured window "
             "(iperf3's mean_rtt in parentheses); goodput = sum of the flows' receiver-side "
             "rates (iperf3 -J); Jain = (Σx)²/(n·Σx²) over the flows' goodputs; drops = the "
             "child qdisc's `drops` over the measured window (`tc -s -j`); CE marks = its "
             "xstats `ecn_mark` + `ce_mark` over the whole run, warm-up included (for softmq "
             "read with tests/vm/lib/smq.py where the tc plugin is older than the module).")
    L.append(f"- **softmq's AQM**: {'CoDel per ring, on by default' if env.get('softmq_aqm') else 'absent in this module'}"
             f" ({env.get('softmq_aqm_how', '?')}); "
             f"default options as shown: `{(env.get('softmq_default_desc') or '').strip(';')}`")
    L.append(f"- **Caveat**: {CAVEAT}")
    L.append("")
    hdr = ["qdisc (child of tbf)", "probe p50 ms", "probe p99 ms", "probe loss %",
           "bulk srtt ms", "goodput Mbit/s", "Jain", "drops", "CE marks (run)", "retrans"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|---|" + "|".join(["---:"] * (len(hdr) - 1)) + "|")
    for v in ORDER:
        if v in cells:
            c = cells[v]
            srtt = cell_str(c, "srtt_ms")
            if c.get("iperf3_mean_rtt_ms"):
                srtt += f" ({fmt(c['iperf3_mean_rtt_ms']['median'])})"
            L.append("| " + " | ".join([
                label(v, env), cell_str(c, "probe_p50_ms", 2), cell_str(c, "probe_p99_ms", 2),
                cell_str(c, "probe_loss_pct", 1), srtt, cell_str(c, "goodput_mbit", 2),
                cell_str(c, "jain", 3), cell_str(c, "drops", 0), cell_str(c, "ce_marks", 0),
                cell_str(c, "retransmits", 0)]) + " |")
        elif v in skips:
            L.append(f"| {label(v, env)} | n/a | | | | | | | | |")
    L.append("")
    for v, why in skips.items():
        L.append(f"- {label(v, env)}: n/a — {why}")
    if skips:
        L.append("")
    L.append("## Targets (a benchmark, not a test: they drive the work)")
    L.append("")
    L.append("| target | measured (medians over the rounds) | met |")
    L.append("|---|---|:-:|")
    for t, m, ok in tg:
        L.append(f"| {t} | {m} | {'–' if ok is None else ('met' if ok else '**missed**')} |")
    L.append("")
    return L


def plot(cells, runs_by_v, env, kernel, png):
    gp = shutil.which("gnuplot")
    if not gp:
        print("report: gnuplot not installed, no PNG (apt-get install gnuplot-nox)",
              file=sys.stderr)
        return False
    vs = [v for v in ORDER if v in cells]
    short = {v: v.replace("-nocodel", " nocodel").replace("-ecn", " ecn") for v in vs}
    s = ["set terminal pngcairo noenhanced size 1100,800 font 'sans,9'", f"set output '{png}'",
         f"set multiplot layout 2,2 title \"softmq bench, latency under load, {kernel}: "
         f"{env.get('flows')} TCP flows + ping through tbf {env.get('rate')} (qdisc = tbf's child), "
         f"{'QEMU TCG' if not env.get('host') else 'HOST=1'}, {env.get('rounds')} rounds\" font 'sans,11'",
         "set grid", "set key bottom right font 'sans,8' samplen 2"]
    # 1, 2: CDFs of the probe RTT and of the bulk srtt samples, pooled over rounds.
    for title, key, xl in (("probe (ping) RTT, CDF over all rounds", "_probe", "RTT ms (log)"),
                           ("bulk flows' srtt (ss -tin samples), CDF", "_srtt", "srtt ms (log)")):
        s += [f"set title \"{title}\"", "set logscale x", f"set xlabel '{xl}'",
              "set ylabel 'fraction'", "set yrange [0:1]", "set xrange [*:*]"]
        parts = []
        for i, v in enumerate(vs):
            xs = sorted(x for r in runs_by_v.get(v, []) for x in r[key] if x > 0)
            if not xs:
                continue
            name = f"$c{key[1]}{i}"
            s.append(f"{name} << EOD\n" + "\n".join(
                f"{x:.4f} {(j + 1) / len(xs):.5f}" for j, x in enumerate(xs)) + "\nEOD")
            parts.append(f"{name} using 1:2 with steps lw 2 lc rgb '{COLORS.get(v, '#777777')}' "
                         f"title '{short[v]}'")
        s.append("plot " + ", ".join(parts) if parts else "set multiplot next")
    s += ["unset logscale x", "unset xlabel", "set key off", "set style fill solid 0.6",
          "set boxwidth 0.6", "set xrange [-0.6:%f]" % (len(vs) - 0.4), "set xtics rotate by -20"]
    for title, key, yl, yr in (("goodput, sum of the flows (median, min-max)", "goodput_mbit",
                                "Mbit/s", "[0:*]"),
                               ("Jain's fairness index over the bulk flows", "jain", "index",
                                "[0.5:1.02]")):
        rows = []
        for i, v in enumerate(vs):
            c = cells[v].get(key)
            if c:
                rows.append(f"{i} \"{short[v]}\" {c['median']:.4f} {c['min']:.4f} {c['max']:.4f} "
                            f"0x{COLORS.get(v, '#777777')[1:]}")
        s.append(f"$b_{key} << EOD\n" + "\n".join(rows) + "\nEOD")
        s += [f"set title \"{title}\"", f"set ylabel '{yl}'", f"set yrange {yr}"]
        s.append(f"plot $b_{key} using 1:3:6:xtic(2) with boxes lc rgb variable, "
                 f"'' using 1:3:4:5 with yerrorbars lc rgb '#000000' pt 0")
    s.append("unset multiplot")
    return run_gnuplot(gp, s)


def main():
    a, meta = report_args("rawdir", None)
    env, runs, skips = {}, [], {}
    with open(os.path.join(a.rawdir, "runs.jsonl")) as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("type") == "env":
                env = o
            elif o.get("type") == "skip":
                skips[o["variant"]] = o.get("why", "")
            elif o.get("type") == "run":
                runs.append(o)
    if not runs:
        print("report: no runs", file=sys.stderr)
        return 1
    ms = [run_metrics(a.rawdir, r, env) for r in runs]
    cells = cells_of(ms)
    tg = targets(cells, env)
    kernel = env.get("kernel", "?")
    png = a.out_prefix + ".png"
    by_v = {}
    for m in ms:
        by_v.setdefault(m["variant"], []).append(m)
    have_png = plot(cells, by_v, dict(env, host=not meta.get("qemu")), kernel, png)
    md = markdown(meta, env, cells, skips, tg, png if have_png else None)
    out = {
        "meta": meta, "kernel": kernel, "mode": "latency", "env": env, "caveat": CAVEAT,
        "cells": {v: c for v, c in cells.items()}, "skipped": skips,
        "targets": [dict(target=t, measured=m, met=ok) for t, m, ok in tg],
        "runs": [{k: (v if not k.startswith("_") else None) for k, v in m.items()
                  if not k.startswith("_")} | {"probe_rtt_ms": m["_probe"], "srtt_samples_ms": m["_srtt"]}
                 for m in ms],
        "png": os.path.basename(png) if have_png else None,
    }
    write_report(a.out_prefix, out, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
