#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""flows.py - numbered UDP flows for the softmq VM tests (stdlib only).

  flows.py send --dst IP [options]       send numbered UDP flows; prints JSON
  flows.py analyze PCAP [options]        per-flow order/bytes from a capture
  flows.py latency --dev DEV --dst IP    single packets after idle periods:
                                         how long until they leave DEV

Every packet's UDP payload starts with
    u32 magic 0x534d5131 ("SMQ1"), u32 flow, u32 seq, u32 prio, u64 t_ns
(network byte order; t_ns = CLOCK_REALTIME just before sendto).  Flow f is
sent from UDP port sport+f to dport+f, so every flow is its own 5-tuple.

send
  --flows N          number of flows (default 4)
  --first F          number of the first flow (default 0): flows F..F+N-1
  --procs P          sender processes (default: one per CPU in --cpus); flow
                     f belongs to process f % P, which sends its flows round
                     robin, so each flow has exactly one producer at a time
  --cpus LIST        CPUs (default: all); process p starts on cpus[p % n]
  --migrate K        every K packets a process moves to the next CPU of
                     --cpus (a flow's packets are then enqueued on all CPUs)
  --count C          packets per flow (default 1000) or --duration SEC
                     (until then or SIGTERM/SIGINT: stop cleanly)
  --size S|S1,S2..   UDP payload bytes (>= 24), per flow round robin
  --prio P|P1,P2..   SO_PRIORITY, per flow round robin
  --sndbuf BYTES     SO_SNDBUF(FORCE): bounds the packets in flight per flow
  --pps R            pace each process to R packets/s (default: flat out);
                     a sender that falls behind catches up in a burst
  --no-catch-up      with --pps: one that falls behind starts its schedule
                     again instead, each packet 1/R after the one before
                     (a sparse flow stays sparse when the guest stalls);
                     "late" counts the times (0 without it)
  --gso SEG          UDP_SEGMENT: each sendto is one GSO skb of --size bytes
                     cut into SEG-byte datagrams (only the first carries the
                     header above)
  --ip-options       IP_OPTIONS of three NOPs and an end of list: a 24-byte
                     IPv4 header (ihl 6)
  --start-file F     wait until F exists before sending (synchronised start)
  --ready-file F     each sender process creates F.<process index> once its
                     sockets are set up (python starts slowly under TCG:
                     the caller waits for these before its start files)
  Sockets use IP_RECVERR, so a packet the qdisc drops fails sendto with
  ENOBUFS and is counted as "enobufs"; "ok" packets were accepted by the
  qdisc (or sent by it directly).  Other errors are counted per errno.
  Output: {"ok": .., "enobufs": .., "errors": {..}, "flows": {f: {ok, enobufs}}}

analyze PCAP (a tcpdump -w capture, any timestamp precision)
  --tcp              also TCP streams: segments below the highest sequence
                     seen that are not retransmissions (all their bytes
                     seen before) count as reorders (a segment lost before
                     the tap and sent again counts too); "id_reorders":
                     segments whose IP ID (TCP numbers a socket's packets
                     as it sends them, retransmissions included) is below
                     the highest seen, i.e. left in another order than TCP
                     sent them, whatever was lost; "id_up": segments whose
                     IP ID is above the previous one (the IDs are usable)
  --share F1,F2..    byte/packet share of these flows in the window where
                     all of them were sending (trimmed by --trim, default 0.15)
  --window T0,T1     explicit window, seconds relative to the first packet
  --gso-dport PORT   also count, in flows and shares, the UDP datagrams
                     without the header (a GSO send's later segments):
                     flow = destination port - PORT (send's --dport)
  --prio F           priority windows, in the same pass: "prio_busy" = the
                     shares of all flows while flow F was sending (its first
                     to last packet, trimmed by 0.15 s), "prio_before" = the
                     shares of the others from the first of their packets
                     (+0.15 s) to F's first (-0.1 s)
  Output: {"flows": {f: {pkts, bytes, reorders, dups, gaps, first, last,
           prio}}, "share": {...}, "tcp": {...}}

latency: sends --trials single packets on --dev's route to --dst, each after
  --idle SEC of silence (with --burst N, after N packets sent at once just
  before that idle time: a backlog that drains before the probe), and reads them back from an AF_PACKET socket on
  --dev (transmit tap; with --loop also the copy the device hands back as
  received).  Output: {"trials": [...], "max_out_ms": .., "max_in_ms": ..,
  "lost": N}
"""

import argparse
import errno
import json
import os
import select
import signal
import socket
import struct
import sys
import time

MAGIC = 0x534D5131
PKTGEN_MAGIC = 0xBE9BE955
HDR = struct.Struct("!IIIIQ")
IP_RECVERR = 11
SO_SNDBUFFORCE = 32
SO_TIMESTAMPNS = 35
UDP_SEGMENT = 103
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
PACKET_HOST = 0


def intlist(s):
    return [int(x) for x in str(s).split(",") if x != ""]


def cpulist(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


# ------------------------------------------------------------------ send

STOP = False


def _stop(_sig, _frm):
    global STOP
    STOP = True


def sender(p, flows, a, cpus, wfd):
    """One sender process: its flows, round robin; writes a JSON report."""
    global STOP
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    ci = p % len(cpus)
    os.sched_setaffinity(0, {cpus[ci]})
    sizes, prios = intlist(a.size), intlist(a.prio)
    socks, rep = [], {}
    for f in flows:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_IP, IP_RECVERR, 1)
        prio = prios[(f - a.first) % len(prios)]
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, prio)
        if a.sndbuf:
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, a.sndbuf)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, a.sndbuf)
        if a.gso:
            s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, a.gso)
        if a.ip_options:
            s.setsockopt(socket.SOL_IP, socket.IP_OPTIONS, b"\x01\x01\x01\x00")
        # A send that waits for socket memory (the qdisc holds the flow's
        # send buffer, a slow device drains it) gives up after 0.1 s and is
        # tried again, so that SIGTERM stops the sender: Python retries a
        # send a signal interrupted, and a frozen device (1 pps) would keep
        # it blocked for hours.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                     struct.pack("ll", 0, 100000))
        s.bind((a.src or "0.0.0.0", a.sport + f))
        size = max(sizes[(f - a.first) % len(sizes)], HDR.size)
        socks.append([s, f, prio, bytearray(size), (a.dst, a.dport + f), 0])
        rep[f] = {"ok": 0, "enobufs": 0}
    errs = {}
    if a.ready_file:
        open("%s.%d" % (a.ready_file, p), "w").close()
    if a.start_file:
        while not os.path.exists(a.start_file) and not STOP:
            time.sleep(0.005)
    deadline = time.monotonic() + a.duration if a.duration else None
    sent = late = 0
    t0 = time.monotonic()
    done = 0
    while not STOP and done < len(socks):
        done = 0
        for ent in socks:
            s, f, prio, buf, dst, seq = ent
            if a.count and seq >= a.count:
                done += 1
                continue
            HDR.pack_into(buf, 0, MAGIC, f, seq, prio, time.time_ns())
            try:
                s.sendto(buf, dst)
                rep[f]["ok"] += 1
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    continue        # no socket memory yet: this packet again
                if e.errno == errno.ENOBUFS:
                    rep[f]["enobufs"] += 1
                else:
                    errs[e.errno] = errs.get(e.errno, 0) + 1
                    if errs[e.errno] > 100000:      # a broken path: give up
                        STOP = True
                        break
            ent[5] = seq + 1
            sent += 1
            if a.migrate and sent % a.migrate == 0 and len(cpus) > 1:
                ci = (ci + 1) % len(cpus)
                os.sched_setaffinity(0, {cpus[ci]})
            if a.pps:
                ahead = sent / a.pps - (time.monotonic() - t0)
                if ahead <= 0 and a.no_catch_up:
                    t0 -= ahead - 1 / a.pps     # the next one 1/R from now
                    ahead = 1 / a.pps
                    late += 1
                if ahead > 0:
                    time.sleep(ahead)
        if deadline and time.monotonic() >= deadline:
            break
    os.write(wfd, (json.dumps({"p": p, "flows": rep, "errors": errs, "late": late,
                               "secs": time.monotonic() - t0}) + "\n").encode())
    os._exit(0)


def cmd_send(a):
    cpus = cpulist(a.cpus) if a.cpus else sorted(os.sched_getaffinity(0))
    procs = a.procs or len(cpus)
    if not a.count and not a.duration:
        a.count = 1000
    r, w = os.pipe()
    pids = []
    for p in range(procs):
        flows = [a.first + f for f in range(a.flows) if f % procs == p]
        if not flows:
            continue
        pid = os.fork()
        if pid == 0:
            os.close(r)
            sender(p, flows, a, cpus, w)
        pids.append(pid)
    os.close(w)

    def fwd(sig, _frm):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    signal.signal(signal.SIGTERM, fwd)
    signal.signal(signal.SIGINT, fwd)
    data = b""
    while True:
        try:
            chunk = os.read(r, 65536)
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    for pid in pids:
        os.waitpid(pid, 0)
    out = {"ok": 0, "enobufs": 0, "errors": {}, "flows": {}, "procs": len(pids), "late": 0}
    for line in data.decode().splitlines():
        rep = json.loads(line)
        out["late"] += rep["late"]
        for f, c in rep["flows"].items():
            out["flows"][f] = c
            out["ok"] += c["ok"]
            out["enobufs"] += c["enobufs"]
        for e, n in rep["errors"].items():
            name = errno.errorcode.get(int(e), e)
            out["errors"][name] = out["errors"].get(name, 0) + n
    if len(out["flows"]) != a.flows:
        out["errors"]["missing_reports"] = a.flows - len(out["flows"])
    print(json.dumps(out, sort_keys=True))
    return 0


# ------------------------------------------------------------------ analyze

def pcap_records(path):
    with open(path, "rb") as fh:
        gh = fh.read(24)
        if len(gh) < 24:
            return
        magic = struct.unpack("<I", gh[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        else:
            end = ">"
            magic = struct.unpack(">I", gh[:4])[0]
        nano = magic == 0xA1B23C4D
        linktype = struct.unpack(end + "I", gh[20:24])[0]
        rh = struct.Struct(end + "IIII")
        while True:
            h = fh.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, orig = rh.unpack(h)
            data = fh.read(incl)
            ts = sec + frac / (1e9 if nano else 1e6)
            yield ts, orig, linktype, data


def l3(linktype, data):
    """-> (ip header offset) or None for non-IPv4."""
    if linktype == 1:       # Ethernet
        if len(data) < 14:
            return None
        et = struct.unpack_from("!H", data, 12)[0]
        off = 14
        if et == 0x8100 and len(data) >= 18:
            et = struct.unpack_from("!H", data, 16)[0]
            off = 18
        return off if et == 0x0800 else None
    if linktype == 113:     # Linux cooked (any)
        et = struct.unpack_from("!H", data, 14)[0]
        return 16 if et == 0x0800 else None
    return None


class TcpStream:
    def __init__(self):
        self.base = None
        self.max_end = 0
        self.covered = []       # merged [s, e) intervals, sorted
        self.pkts = self.reorders = self.retrans = self.bytes = 0
        self.last_raw = None
        self.ext = 0
        self.id_last = None
        self.id_ext = self.id_max = 0
        self.id_reorders = self.id_up = 0

    def add_id(self, ipid):
        # 16-bit IP ID -> relative, as extend() does for the sequence
        if self.id_last is None:
            self.id_last = ipid
            return
        d = (ipid - self.id_last) & 0xFFFF
        if d >= 1 << 15:
            d -= 1 << 16
        self.id_last = ipid
        self.id_ext += d
        if d > 0:
            self.id_up += 1
        if self.id_ext < self.id_max:
            self.id_reorders += 1
        self.id_max = max(self.id_max, self.id_ext)

    def extend(self, raw):
        # 32-bit sequence -> 64-bit, relative to the first segment.
        if self.base is None:
            self.base = raw
            self.last_raw = raw
            return 0
        d = (raw - self.last_raw) & 0xFFFFFFFF
        if d >= 1 << 31:
            d -= 1 << 32
        self.ext += d
        self.last_raw = raw
        return self.ext

    def add(self, raw, length):
        s = self.extend(raw)
        e = s + length
        self.pkts += 1
        self.bytes += length
        if s < self.max_end:
            if self.is_covered(s, e):
                self.retrans += 1
            else:
                self.reorders += 1
        self.cover(s, e)
        self.max_end = max(self.max_end, e)

    def is_covered(self, s, e):
        for a, b in self.covered:
            if a <= s and e <= b:
                return True
        return False

    def cover(self, s, e):
        out = []
        for a, b in self.covered:
            if b < s or a > e:
                out.append((a, b))
            else:
                s, e = min(a, s), max(b, e)
        out.append((s, e))
        out.sort()
        # Keep the list short: old holes (capture drops) merge into one range.
        if len(out) > 64:
            out = [(out[0][0], out[-64][1])] + out[-63:]
        self.covered = out


def cmd_analyze(a):
    flows, tcp = {}, {}
    pkts = []           # (ts, flow, bytes) for share windows
    t_first = None
    other = 0
    for ts, orig, lt, data in pcap_records(a.pcap):
        if t_first is None:
            t_first = ts
        off = l3(lt, data)
        if off is None or len(data) < off + 20:
            other += 1
            continue
        ihl = (data[off] & 0x0F) * 4
        proto = data[off + 9]
        tot = struct.unpack_from("!H", data, off + 2)[0]
        l4 = off + ihl
        if proto == 17 and len(data) >= l4 + 8 + HDR.size:
            magic, f, seq, prio, _tns = HDR.unpack_from(data, l4 + 8)
            if magic == PKTGEN_MAGIC:
                # pktgen: magic, seq_num (per pktgen device, i.e. per
                # thread); a flow is its UDP source port.
                seq = f
                f = "pg%d" % struct.unpack_from("!H", data, l4)[0]
                prio = 0
            elif magic != MAGIC:
                # A GSO send's later segment (--gso-dport): a flow already
                # seen, by its port; it carries no sequence number.
                f = struct.unpack_from("!H", data, l4 + 2)[0] - a.gso_dport
                if not a.gso_dport or f not in flows:
                    other += 1
                    continue
                seq = None
            st = flows.get(f)
            if st is None:
                st = flows[f] = {"pkts": 0, "bytes": 0, "reorders": 0, "dups": 0,
                                 "max": -1, "first": ts, "last": ts, "prio": prio,
                                 "seen": set()}
            st["pkts"] += 1
            st["bytes"] += orig
            st["last"] = ts
            if seq is None:
                pass
            elif seq in st["seen"]:
                st["dups"] += 1
            elif seq < st["max"]:
                st["reorders"] += 1
            if seq is not None:
                st["seen"].add(seq)
                st["max"] = max(st["max"], seq)
            pkts.append((ts, f, orig))
        elif proto == 6 and a.tcp and len(data) >= l4 + 20:
            sport, dport, seq = struct.unpack_from("!HHI", data, l4)
            doff = (data[l4 + 12] >> 4) * 4
            plen = tot - ihl - doff
            if plen <= 0:
                continue
            key = "%d>%d" % (sport, dport)
            ts_ = tcp.setdefault(key, TcpStream())
            ts_.add(seq, plen)
            ts_.add_id(struct.unpack_from("!H", data, off + 4)[0])
        else:
            other += 1
    out = {"flows": {}, "other": other}
    for f, st in sorted(flows.items(), key=lambda kv: str(kv[0])):
        seen = st.pop("seen")
        st["gaps"] = (st["max"] + 1 - len(seen)) if seen else 0
        st["first"] -= t_first
        st["last"] -= t_first
        out["flows"][str(f)] = st
    ours = [st for f, st in flows.items() if not str(f).startswith("pg")]
    pg = [st for f, st in flows.items() if str(f).startswith("pg")]
    out["reorders"] = sum(st["reorders"] for st in ours)
    out["dups"] = sum(st["dups"] for st in ours)
    out["pkts"] = sum(st["pkts"] for st in ours)
    out["pg_reorders"] = sum(st["reorders"] for st in pg)
    out["pg_dups"] = sum(st["dups"] for st in pg)
    out["pg_pkts"] = sum(st["pkts"] for st in pg)
    out["pg_flows"] = len(pg)
    if a.tcp:
        out["tcp"] = {k: {"pkts": s.pkts, "bytes": s.bytes, "reorders": s.reorders,
                          "retrans": s.retrans, "id_reorders": s.id_reorders,
                          "id_up": s.id_up} for k, s in tcp.items()}
        out["tcp_reorders"] = sum(s.reorders for s in tcp.values())
        out["tcp_retrans"] = sum(s.retrans for s in tcp.values())
    def shares(want, w0, w1):
        """Packets and bytes of the flows in WANT between w0 and w1 (s)."""
        by = {f: [0, 0] for f in want}
        for ts, f, nbytes in pkts:
            rel = ts - t_first
            if f in by and w0 <= rel <= w1:
                by[f][0] += 1
                by[f][1] += nbytes
        tot_b = sum(v[1] for v in by.values())
        tot_p = sum(v[0] for v in by.values())
        return {"window": [w0, w1], "total_bytes": tot_b, "total_pkts": tot_p,
                "flows": {str(f): {"pkts": v[0], "bytes": v[1],
                                   "byte_share": v[1] / tot_b if tot_b else 0,
                                   "pkt_share": v[0] / tot_p if tot_p else 0}
                          for f, v in by.items()}}

    if a.prio != "" and int(a.prio) in flows:
        p = int(a.prio)
        others = [f for f in flows if f != p and not str(f).startswith("pg")]
        # first/last are relative to the first packet already
        f0, l0 = flows[p]["first"], flows[p]["last"]
        # From the first packet of any other flow: their senders start
        # together (one start file), and under strict priority the lower
        # band may not leave at all until the higher one is done.
        s1 = min([flows[f]["first"] for f in others] or [0])
        out["prio_busy"] = shares([p] + others, f0 + 0.15, l0 - 0.15)
        out["prio_before"] = shares(others, s1 + 0.15, f0 - 0.1)
    if a.share:
        want = intlist(a.share)
        if a.window:
            w0, w1 = [float(x) for x in a.window.split(",")]
        elif all(f in flows for f in want):
            s0 = max(flows[f]["first"] for f in want)
            s1 = min(flows[f]["last"] for f in want)
            trim = (s1 - s0) * a.trim
            w0, w1 = s0 + trim, s1 - trim
        else:
            w0 = w1 = 0.0
        out["share"] = shares(want, w0, w1)
    print(json.dumps(out, sort_keys=True))
    return 0


# ------------------------------------------------------------------ latency

def cmd_latency(a):
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    cap.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    cap.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    cap.bind((a.dev, 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.setsockopt(socket.SOL_IP, IP_RECVERR, 1)
    tx.bind(("0.0.0.0", a.sport))
    buf = bytearray(max(a.size, HDR.size))
    bsock = None
    if a.burst:
        bsock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        bsock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 1 << 22)
        bsock.bind(("0.0.0.0", a.sport + 1))
        bbuf = bytearray(max(a.size, HDR.size))
    trials = []
    cpus = cpulist(a.cpus) if a.cpus else sorted(os.sched_getaffinity(0))
    for i in range(a.trials):
        os.sched_setaffinity(0, {cpus[i % len(cpus)]})
        if bsock:
            # a backlog first, drained during the idle time
            for j in range(a.burst):
                HDR.pack_into(bbuf, 0, MAGIC, a.flow + 1, i * a.burst + j, 0, time.time_ns())
                try:
                    bsock.sendto(bbuf, (a.dst, a.dport + 1))
                except OSError:
                    pass
        time.sleep(a.idle)
        # drain whatever the capture holds (earlier trials' echoes)
        while select.select([cap], [], [], 0)[0]:
            cap.recv(65536)
        t_send = time.time_ns()
        HDR.pack_into(buf, 0, MAGIC, a.flow, i, 0, t_send)
        err = None
        try:
            tx.sendto(buf, (a.dst, a.dport))
        except OSError as e:
            err = errno.errorcode.get(e.errno, str(e.errno))
        got = {"trial": i, "cpu": cpus[i % len(cpus)], "err": err,
               "out_ms": None, "in_ms": None}
        deadline = time.monotonic() + a.timeout
        while time.monotonic() < deadline and not err:
            if got["out_ms"] is not None and (got["in_ms"] is not None or not a.loop):
                break
            if not select.select([cap], [], [], 0.05)[0]:
                continue
            data, anc, _fl, addr = cap.recvmsg(65536, 1024)
            pkttype = addr[2]
            off = l3(1, data)
            if off is None:
                continue
            l4 = off + (data[off] & 0x0F) * 4
            if data[off + 9] != 17 or len(data) < l4 + 8 + HDR.size:
                continue
            magic, f, seq, _p, _t = HDR.unpack_from(data, l4 + 8)
            if magic != MAGIC or f != a.flow or seq != i:
                continue
            ts = None
            for lvl, typ, cdata in anc:
                if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    # the old SO_TIMESTAMPNS: a native struct timespec
                    # (two 32-bit longs on the i386 line)
                    sec, nsec = struct.unpack("@ll", cdata[:struct.calcsize("@ll")])
                    ts = sec * 1000000000 + nsec
            if ts is None:
                ts = time.time_ns()
            ms = (ts - t_send) / 1e6
            if pkttype == PACKET_OUTGOING and got["out_ms"] is None:
                got["out_ms"] = ms
            elif pkttype != PACKET_OUTGOING and got["in_ms"] is None:
                got["in_ms"] = ms
        trials.append(got)
    outs = [t["out_ms"] for t in trials if t["out_ms"] is not None]
    ins = [t["in_ms"] for t in trials if t["in_ms"] is not None]
    res = {"trials": trials,
           "max_out_ms": max(outs) if outs else None,
           "max_in_ms": max(ins) if ins else None,
           "lost": sum(1 for t in trials if t["out_ms"] is None or
                       (a.loop and t["in_ms"] is None)),
           "errors": sum(1 for t in trials if t["err"])}
    print(json.dumps(res, sort_keys=True))
    return 0


def main():
    ap = argparse.ArgumentParser(description="softmq test flows")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--src", default="")
    s.add_argument("--flows", type=int, default=4)
    s.add_argument("--first", type=int, default=0)
    s.add_argument("--procs", type=int, default=0)
    s.add_argument("--cpus", default="")
    s.add_argument("--migrate", type=int, default=0)
    s.add_argument("--count", type=int, default=0)
    s.add_argument("--duration", type=float, default=0)
    s.add_argument("--size", default="64")
    s.add_argument("--prio", default="0")
    s.add_argument("--sndbuf", type=int, default=0)
    s.add_argument("--pps", type=float, default=0)
    s.add_argument("--no-catch-up", action="store_true")
    s.add_argument("--gso", type=int, default=0)
    s.add_argument("--ip-options", action="store_true")
    s.add_argument("--sport", type=int, default=20000)
    s.add_argument("--dport", type=int, default=30000)
    s.add_argument("--start-file", default="")
    s.add_argument("--ready-file", default="")
    z = sub.add_parser("analyze")
    z.add_argument("pcap")
    z.add_argument("--tcp", action="store_true")
    z.add_argument("--share", default="")
    z.add_argument("--window", default="")
    z.add_argument("--gso-dport", type=int, default=0)
    z.add_argument("--trim", type=float, default=0.15)
    z.add_argument("--prio", default="")
    lt = sub.add_parser("latency")
    lt.add_argument("--dev", required=True)
    lt.add_argument("--dst", required=True)
    lt.add_argument("--dport", type=int, default=39999)
    lt.add_argument("--sport", type=int, default=29999)
    lt.add_argument("--flow", type=int, default=9999)
    lt.add_argument("--size", type=int, default=64)
    lt.add_argument("--trials", type=int, default=10)
    lt.add_argument("--idle", type=float, default=0.1)
    lt.add_argument("--timeout", type=float, default=1.0)
    lt.add_argument("--loop", action="store_true")
    lt.add_argument("--burst", type=int, default=0)
    lt.add_argument("--cpus", default="")
    a = ap.parse_args()
    return {"send": cmd_send, "analyze": cmd_analyze, "latency": cmd_latency}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
