#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""smq.py - drive softmq over raw rtnetlink (Python stdlib only).

Independent of the tc plugin, so the VM tests can tell a plugin bug from a
kernel bug, and free to send what tc would refuse (bad attributes).
Attribute numbers and the xstats layout are read from include/uapi/softmq.h
at run time, so this helper follows the ABI header.

  smq.py add|change|replace|link DEV [root|parent X:Y] [handle X:]
         [flows N] [depth N] [quantum N] [bands N] [key flow|cpu|N]
         [limit N] [memory_limit N] [codel 0|1] [target US]
         [interval US] [ecn 0|1] [ce_threshold US|0xffffffff]
                                   (any TCA_SOFTMQ_* by its lower-case name,
                                   one u32; values unchecked)
         [attr NUM:TYPE:VALUE]...  (TYPE u8|u16|u32|u64|str|hex; raw attribute)
         [noopts]                  (no TCA_OPTIONS at all)
         [emptyopts]               (an empty TCA_OPTIONS nest)
         [nestedflag]              (set NLA_F_NESTED on TCA_OPTIONS; tc does not)
  smq.py del DEV [root|parent X:Y]
  smq.py show DEV                  JSON list of the device's qdiscs: kind,
                                   handle, parent, options, stats, xstats
                                   (options as dumped: ce_threshold only
                                   when set)
  smq.py classes DEV               JSON list of the device's softmq classes
                                   (one per ring holding packets): handle,
                                   parent, stats (qlen, backlog), xstats
                                   (struct tc_softmq_cl_stats)
  smq.py batch                     commands from stdin, one per line:
                                   "CMD DEV WORDS..." (add|change|replace|
                                   link|del) or "sleep SECS"; prints one JSON
                                   line per command: {"cmd", "rc", "msg",
                                   "before", "after"} (root options before
                                   and after)
  smq.py stat DEV [root|X:Y]       one qdisc's counters as shell words (the
                                   shell suites' $QSTAT; lib.sh's qword()
                                   reads them): kind=K handle=H parent=P
                                   bytes=N packets=N qlen=N backlog=N
                                   drops=N requeues=N overlimits=N, and for
                                   softmq every xstats field (NAME=N);
                                   "kind=none" and exit 1 when there is none
  smq.py stat --all DEV            the same, one line per qdisc of DEV
  smq.py get DEV [PARENT] FIELD... one line of values, e.g.
                                   `smq.py get veth0 stats.drops xstats.bypassed`;
                                   PARENT (root, X:Y) selects the qdisc
                                   (default root)
  smq.py peak DEV SECS FIELD...    sample every softmq qdisc of DEV for
                                   SECS seconds (or until the file named by
                                   $SMQ_PEAK_STOP exists) and print, per
                                   qdisc, "HANDLE PARENT SAMPLES max1 max2..."
                                   (numeric FIELDs)

Errors: the kernel's errno and extack message on stderr, exit status 2.

As a module (sys.path + import smq): the one netlink and uapi library of
the tests: Rtnl (a socket, request() raising NlError), nla/nla_parse,
dump(), parse_handle/fmt_handle, read_uapi/read_class_fields/fields_fmt/
xstats_decode, decode_qdisc, Softmq.  tests/fuzz/nlfuzz.py builds its
malformed requests itself and sends them with Rtnl.
"""

import errno
import json
import os
import re
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.environ.get("SOFTMQ_UAPI",
                      os.path.join(HERE, "..", "..", "..", "include", "uapi", "softmq.h"))

NLMSG_ERROR = 2
NLMSG_DONE = 3
RTM_NEWQDISC, RTM_DELQDISC, RTM_GETQDISC = 36, 37, 38
RTM_NEWTCLASS, RTM_GETTCLASS = 40, 42
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_ECHO = 0x1, 0x2, 0x4, 0x8
NLM_F_ROOT, NLM_F_MATCH = 0x100, 0x200
NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE = 0x100, 0x200, 0x400
NLM_F_CAPPED, NLM_F_ACK_TLVS = 0x100, 0x200
SOL_NETLINK, NETLINK_CAP_ACK, NETLINK_EXT_ACK = 270, 10, 11
NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS = 1, 2
NLA_F_NESTED, NLA_F_NET_BYTEORDER = 0x8000, 0x4000
NLA_TYPE_MASK = 0x3FFF

TCA_KIND, TCA_OPTIONS, TCA_STATS, TCA_XSTATS, TCA_STATS2 = 1, 2, 3, 4, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP, TCA_STATS_PKT64 = 1, 3, 4, 8
TC_H_ROOT = 0xFFFFFFFF
NESTED_FLAG = False         # set by build_opts() for the next qdisc_msg()
TCMSG = struct.Struct("=BxxxiIII")     # family, pad, ifindex, handle, parent, info
NLMSGHDR = struct.Struct("=IHHII")     # len, type, flags, seq, pid


class NlError(Exception):
    def __init__(self, err, msg, offs=None):
        super().__init__(err, msg)
        self.err = err
        self.msg = msg
        self.offs = offs        # extack: offset of the bad attribute

    def __str__(self):
        s = "%s (errno %d)" % (os.strerror(self.err), self.err)
        return s + (": " + self.msg if self.msg else "")


def read_uapi(path=UAPI):
    """Attribute numbers, key names and the xstats layout from softmq.h."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    attrs, keys = {}, {}
    m = re.search(r"enum\s*{\s*TCA_SOFTMQ_UNSPEC,(.*?)}", text, re.S)
    for i, name in enumerate(re.findall(r"\bTCA_SOFTMQ_(\w+)", m.group(1)), 1):
        if not name.startswith("_"):
            attrs[name.lower()] = i
    m = re.search(r"enum\s+softmq_key\s*{(.*?)}", text, re.S)
    for i, name in enumerate(re.findall(r"\bSOFTMQ_KEY_(\w+)", m.group(1))):
        if not name.startswith("_"):
            keys[name.lower()] = i
    return attrs, keys, xstats_fields(text, "tc_softmq_qd_stats")


def xstats_fields(text, member):
    """struct tc_softmq_xstats as a flat field list: its header (type, pad),
    then the union member @member's fields (all at its start)."""
    fields = []
    for name in ("tc_softmq_xstats", member):
        m = re.search(r"struct\s+%s\s*{(.*?)}" % name, text, re.S)
        fields += re.findall(r"__(u|s)(8|16|32|64)\s+(\w+)\s*;", m.group(1))
    return fields


def read_class_fields(path=UAPI):
    """struct tc_softmq_xstats' layout for a class, from softmq.h."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    return xstats_fields(text, "tc_softmq_cl_stats")


FIELD_FMT = {(8, "u"): "B", (16, "u"): "H", (32, "u"): "I", (64, "u"): "Q",
             (8, "s"): "b", (16, "s"): "h", (32, "s"): "i", (64, "s"): "q"}


def fields_layout(fields):
    """(name, struct format, offset) per field, each naturally aligned."""
    out, off = [], 0
    for sign, bits, name in fields:
        size = int(bits) // 8
        off = (off + size - 1) // size * size
        out.append((name, "=" + FIELD_FMT[(int(bits), sign)], off))
        off += size
    return out


def fields_fmt(fields):
    """One struct format for the whole structure (to build one)."""
    fmt, end = "=", 0
    for name, f, off in fields_layout(fields):
        fmt += "x" * (off - end) + f[1:]
        end = off + struct.calcsize(f)
    return fmt


def xstats_decode(fields, data):
    out = {}
    for name, f, off in fields_layout(fields):
        if off + struct.calcsize(f) > len(data):
            out["_short"] = len(data)
            break
        out[name] = struct.unpack_from(f, data, off)[0]
    return out


def nla(atype, payload):
    hdr = struct.pack("=HH", 4 + len(payload), atype)
    pad = b"\0" * ((4 - len(payload) % 4) % 4)
    return hdr + payload + pad


def nla_parse(data):
    out, off = {}, 0
    while off + 4 <= len(data):
        alen, atype = struct.unpack_from("=HH", data, off)
        if alen < 4:
            break
        out[atype & NLA_TYPE_MASK] = data[off + 4:off + alen]
        off += (alen + 3) & ~3
    return out


def parse_handle(s):
    if s == "root":
        return TC_H_ROOT
    if s in ("none", "0"):
        return 0
    major, _, minor = s.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def fmt_handle(h):
    if h == TC_H_ROOT:
        return "root"
    return "%x:%x" % (h >> 16, h & 0xFFFF) if h & 0xFFFF else "%x:" % (h >> 16)


def align4(n):
    return (n + 3) & ~3


class Rtnl:
    def __init__(self, timeout=None):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        for opt in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
            try:
                self.sock.setsockopt(SOL_NETLINK, opt, 1)
            except OSError:
                pass
        self.sock.bind((0, 0))
        self.sock.settimeout(timeout)
        self.seq = 0

    def request(self, mtype, flags, payload):
        """Send one message (any bytes as payload); return the replies
        [(type, body)] up to NLMSG_DONE or the ack, or raise NlError."""
        self.seq += 1
        msg = NLMSGHDR.pack(16 + len(payload), mtype,
                            flags | NLM_F_REQUEST, self.seq, 0) + payload
        self.sock.send(msg)
        replies = []
        while True:
            data = self.sock.recv(1 << 20)
            off = 0
            while off + 16 <= len(data):
                mlen, mt, mflags, mseq, _ = NLMSGHDR.unpack_from(data, off)
                if mlen < 16:
                    break
                body = data[off + 16:off + mlen]
                off += align4(mlen)
                if mseq != self.seq:
                    continue
                if mt == NLMSG_DONE:
                    return replies
                if mt == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", body)[0]
                    if err == 0:
                        return replies
                    # nlmsgerr: error, then the request header (+ payload
                    # unless capped), then extack TLVs.
                    olen = struct.unpack_from("=I", body, 4)[0]
                    tlv = body[4 + (16 if mflags & NLM_F_CAPPED else align4(olen)):]
                    msg, offs = "", None
                    if mflags & NLM_F_ACK_TLVS:
                        a = nla_parse(tlv)
                        if NLMSGERR_ATTR_MSG in a:
                            msg = a[NLMSGERR_ATTR_MSG].rstrip(b"\0").decode(errors="replace")
                        if NLMSGERR_ATTR_OFFS in a:
                            offs = struct.unpack("=I", a[NLMSGERR_ATTR_OFFS][:4])[0]
                    raise NlError(err, msg, offs)
                replies.append((mt, body))
                if not mflags & NLM_F_MULTI:
                    return replies


DUMP_REPLY = {RTM_GETQDISC: RTM_NEWQDISC, RTM_GETTCLASS: RTM_NEWTCLASS}


def dump(nl, mtype, idx):
    """The bodies of a qdisc or class dump (RTM_GETQDISC, RTM_GETTCLASS)
    that belong to device idx."""
    payload = TCMSG.pack(socket.AF_UNSPEC, idx, 0, 0, 0)
    return [body for mt, body in nl.request(mtype, NLM_F_DUMP, payload)
            if mt == DUMP_REPLY[mtype] and TCMSG.unpack_from(body)[1] == idx]


def ifindex(dev):
    try:
        return socket.if_nametoindex(dev)
    except OSError:
        raise NlError(errno.ENODEV, "no device " + dev) from None


def build_opts(words, attrs, keys):
    """Option words -> (TCA_OPTIONS payload or None, handle, parent, offsets).

    offsets: the offset of each option attribute inside the payload, in the
    order given (to check where the kernel's extack points).
    """
    global NESTED_FLAG
    NESTED_FLAG = False
    parent, handle = TC_H_ROOT, 0
    body, want_opts, offsets = b"", True, []
    i = 0

    def arg():
        nonlocal i
        if i + 1 >= len(words):
            raise SystemExit("smq.py: %s needs a value" % words[i])
        i += 1
        return words[i]

    def add(atype, payload):
        nonlocal body
        offsets.append(len(body))
        body += nla(atype, payload)

    while i < len(words):
        w = words[i]
        if w == "root":
            parent = TC_H_ROOT
        elif w == "parent":
            parent = parse_handle(arg())
        elif w == "handle":
            handle = parse_handle(arg())
        elif w == "noopts":
            want_opts = False
        elif w == "emptyopts":
            pass
        elif w == "nestedflag":
            NESTED_FLAG = True
        elif w == "key":
            v = arg()
            add(attrs["key"], struct.pack("=I", keys[v] if v in keys else int(v, 0)))
        elif w in attrs:
            add(attrs[w], struct.pack("=I", int(arg(), 0) & 0xFFFFFFFF))
        elif w == "attr":
            num, typ, val = arg().split(":", 2)
            packers = {"u8": "=B", "u16": "=H", "u32": "=I", "u64": "=Q"}
            if typ in packers:
                payload = struct.pack(packers[typ], int(val, 0))
            elif typ == "str":
                payload = val.encode() + b"\0"
            elif typ == "hex":
                payload = bytes.fromhex(val)
            else:
                raise SystemExit("smq.py: bad attr type " + typ)
            add(int(num, 0), payload)
        else:
            raise SystemExit("smq.py: unknown word " + w)
        i += 1
    return (body if want_opts else None), handle, parent, offsets


def qdisc_msg(dev, handle, parent, kind=None, opts=None):
    """The RTM_*QDISC payload, and where TCA_OPTIONS' payload starts in the
    whole message (nlmsghdr included), as extack offsets count."""
    payload = TCMSG.pack(socket.AF_UNSPEC, ifindex(dev), handle, parent, 0)
    if kind is not None:
        payload += nla(TCA_KIND, kind.encode() + b"\0")
    base = 16 + len(payload) + 4
    if opts is not None:
        payload += nla(TCA_OPTIONS | (NLA_F_NESTED if NESTED_FLAG else 0), opts)
    return payload, base


def decode_qdisc(body, attrs, keys, fields):
    _, idx, handle, parent, _ = TCMSG.unpack_from(body)
    a = nla_parse(body[TCMSG.size:])
    kind = a.get(TCA_KIND, b"").rstrip(b"\0").decode()
    q = {"kind": kind, "handle": fmt_handle(handle), "parent": fmt_handle(parent),
         "ifindex": idx}
    if kind == "softmq" and TCA_OPTIONS in a:
        names = {v: k for k, v in attrs.items()}
        knames = {v: k for k, v in keys.items()}
        opts = {}
        for t, v in nla_parse(a[TCA_OPTIONS]).items():
            val = struct.unpack("=I", v[:4])[0] if len(v) >= 4 else v.hex()
            name = names.get(t, "attr%d" % t)
            opts[name] = knames.get(val, val) if name == "key" else val
        q["options"] = opts
    if TCA_STATS2 in a:
        s2 = nla_parse(a[TCA_STATS2])
        st = {}
        if TCA_STATS_BASIC in s2:
            st["bytes"], st["packets"] = struct.unpack_from("=QI", s2[TCA_STATS_BASIC])
        if TCA_STATS_PKT64 in s2:
            st["packets"] = struct.unpack_from("=Q", s2[TCA_STATS_PKT64])[0]
        if TCA_STATS_QUEUE in s2:
            (st["qlen"], st["backlog"], st["drops"], st["requeues"],
             st["overlimits"]) = struct.unpack_from("=IIIII", s2[TCA_STATS_QUEUE])
        q["stats"] = st
        if kind == "softmq" and TCA_STATS_APP in s2:
            q["xstats"] = xstats_decode(fields, s2[TCA_STATS_APP])
            q["xstats_len"] = len(s2[TCA_STATS_APP])
    return q


def show(nl, dev, uapi):
    return [decode_qdisc(body, *uapi) for body in dump(nl, RTM_GETQDISC, ifindex(dev))]


def classes(nl, dev, cfields):
    """The device's softmq classes (tc -s class show), decoded."""
    out = []
    for body in dump(nl, RTM_GETTCLASS, ifindex(dev)):
        _, _, handle, parent, _ = TCMSG.unpack_from(body)
        a = nla_parse(body[TCMSG.size:])
        kind = a.get(TCA_KIND, b"").rstrip(b"\0").decode()
        if kind != "softmq":
            continue
        c = {"kind": kind, "handle": fmt_handle(handle), "parent": fmt_handle(parent)}
        if TCA_STATS2 in a:
            s2 = nla_parse(a[TCA_STATS2])
            st = {}
            if TCA_STATS_QUEUE in s2:
                (st["qlen"], st["backlog"], st["drops"], st["requeues"],
                 st["overlimits"]) = struct.unpack_from("=IIIII", s2[TCA_STATS_QUEUE])
            c["stats"] = st
            if TCA_STATS_APP in s2:
                c["xstats"] = xstats_decode(cfields, s2[TCA_STATS_APP])
                c["xstats_len"] = len(s2[TCA_STATS_APP])
        out.append(c)
    return out


def lookup(q, path):
    for part in path.split("."):
        if not isinstance(q, dict) or part not in q:
            return "-"
        q = q[part]
    return q


class Softmq:
    """The API the python tests use: one netlink socket, the uapi read once."""

    FLAGS = {"add": NLM_F_EXCL | NLM_F_CREATE, "change": 0,
             "replace": NLM_F_CREATE | NLM_F_REPLACE, "link": NLM_F_REPLACE}

    def __init__(self):
        self.uapi = read_uapi()
        self.attrs, self.keys, self.fields = self.uapi
        self.nl = Rtnl(timeout=30)   # a reply that never comes fails, not hangs

    def qdisc(self, cmd, dev, words=()):
        """Run one command; never raises for a kernel error.  Returns a dict:
        rc (0 or errno), msg (extack), offs (extack offset or None),
        attr_offs (where each option attribute was in our request)."""
        words = list(words)
        res = {"rc": 0, "msg": "", "offs": None, "attr_offs": []}
        try:
            if cmd == "del":
                _, handle, parent, _ = build_opts(words, self.attrs, self.keys)
                payload, _ = qdisc_msg(dev, handle, parent)
                self.nl.request(RTM_DELQDISC, NLM_F_ACK, payload)
            else:
                opts, handle, parent, offs = build_opts(words, self.attrs, self.keys)
                payload, base = qdisc_msg(dev, handle, parent, "softmq", opts)
                res["attr_offs"] = [base + o for o in offs]
                self.nl.request(RTM_NEWQDISC, self.FLAGS[cmd] | NLM_F_ACK, payload)
        except NlError as e:
            res.update(rc=e.err, msg=e.msg, offs=e.offs)
        return res

    def show(self, dev):
        return show(self.nl, dev, self.uapi)

    def classes(self, dev):
        return classes(self.nl, dev, read_class_fields())

    def has_class(self, dev, classid):
        """Does the class exist (RTM_GETTCLASS of one class)?  A softmq
        class is a ring: it exists from its first packet on, queued or
        not, where a dump shows only the rings holding packets."""
        payload = TCMSG.pack(socket.AF_UNSPEC, ifindex(dev), parse_handle(classid), 0, 0)
        try:
            # The kernel answers a class get only to NLM_F_ECHO (it
            # notifies RTNLGRP_TC); the ack that follows is skipped by the
            # next request's sequence check.
            self.nl.request(RTM_GETTCLASS, NLM_F_ECHO | NLM_F_ACK, payload)
        except NlError as e:
            if e.err == errno.ENOENT:
                return False
            raise
        return True

    def find(self, dev, sel="root"):
        want = fmt_handle(parse_handle(sel))
        for q in self.show(dev):
            if q["parent"] == want or (sel != "root" and q["handle"] == want):
                return q
        return None


def stat_words(q):
    """A decoded qdisc as shell words: kind=K handle=MAJ:MIN parent=P
    (root or MAJ:MIN), its stats, its xstats."""
    hx = "%x:%x" % divmod(parse_handle(q["handle"]), 0x10000)
    w = {"kind": q["kind"], "handle": hx,
         "parent": "root" if q["parent"] == "root" else
         "%x:%x" % divmod(parse_handle(q["parent"]), 0x10000)}
    w.update(q.get("stats", {}))
    w.update((k, v) for k, v in q.get("xstats", {}).items() if not k.startswith("_"))
    return " ".join("%s=%s" % kv for kv in w.items())


def stat(smq, argv):
    """stat DEV [PARENT] | stat --all DEV (see the usage above)."""
    if argv[0] == "--all":
        for q in smq.show(argv[1]):
            print(stat_words(q))
        return 0
    want = parse_handle(argv[1] if len(argv) > 1 else "root")
    for q in smq.show(argv[0]):
        if parse_handle(q["parent"]) == want:
            print(stat_words(q))
            return 0
    print("kind=none")
    return 1


def batch(smq):
    import time
    for line in sys.stdin:
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "sleep":
            time.sleep(float(w[1]))
            continue
        cmd, dev, words = w[0], w[1], w[2:]
        q = smq.find(dev, "root")
        before = q.get("options") if q else None
        r = smq.qdisc(cmd, dev, words)
        q = smq.find(dev, "root")
        print(json.dumps({"cmd": " ".join(w), "rc": r["rc"], "msg": r["msg"],
                          "before": before, "after": q.get("options") if q else None},
                         sort_keys=True), flush=True)
    return 0


def peak(smq, dev, secs, fields):
    """Highest value of each field per softmq qdisc, sampled back to back."""
    import time
    stop = os.environ.get("SMQ_PEAK_STOP")
    best, samples = {}, {}
    end = time.monotonic() + secs
    while time.monotonic() < end and not (stop and os.path.exists(stop)):
        for q in smq.show(dev):
            if q["kind"] != "softmq":
                continue
            key = (q["handle"], q["parent"])
            vals = [lookup(q, f) for f in fields]
            old = best.get(key, [0] * len(fields))
            best[key] = [max(o, v) if isinstance(v, int) else o
                         for o, v in zip(old, vals)]
            samples[key] = samples.get(key, 0) + 1
        time.sleep(0.005)
    for (handle, parent), vals in sorted(best.items()):
        print(handle, parent, samples[(handle, parent)], *vals)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "batch":
        return batch(Softmq())
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 1
    cmd, dev, words = argv[1], argv[2], argv[3:]
    smq = Softmq()
    try:
        if cmd in Softmq.FLAGS or cmd == "del":
            r = smq.qdisc(cmd, dev, words)
            if r["rc"]:
                where = ""
                if r["offs"] is not None:
                    where = " [bad attribute at offset %d" % r["offs"]
                    if r["offs"] in r["attr_offs"]:
                        where += ": option #%d" % (r["attr_offs"].index(r["offs"]) + 1)
                    where += "]"
                raise NlError(r["rc"], r["msg"] + where)
        elif cmd == "show":
            print(json.dumps(smq.show(dev), sort_keys=True))
        elif cmd == "classes":
            print(json.dumps(smq.classes(dev), sort_keys=True))
        elif cmd == "stat":
            return stat(smq, argv[2:])
        elif cmd == "peak":
            return peak(smq, dev, float(words[0]), words[1:])
        elif cmd == "get":
            sel = "root"
            if words and (words[0] == "root" or re.fullmatch(r"[0-9a-f]*:[0-9a-f]*", words[0])):
                sel, words = words[0], words[1:]
            q = smq.find(dev, sel)
            if q is None:
                raise NlError(errno.ENOENT, "no qdisc %s on %s" % (sel, dev))
            vals = [lookup(q, w) for w in words]
            print(" ".join(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list))
                           else str(v) for v in vals))
        else:
            print(__doc__, file=sys.stderr)
            return 1
    except NlError as e:
        print("smq.py %s %s: %s" % (cmd, dev, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:
        sys.exit(1)
