#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""qstat.py - one qdisc's counters as shell words, for the reliability tests.

  qstat.py DEV [root|X:Y]     prints  kind=K handle=H packets=N bytes=N
                              drops=N qlen=N backlog=N requeues=N, and for
                              softmq the xstats (drops_ring_full=N ...)
  qstat.py --all DEV          one line per qdisc of DEV (same words + parent)

Raw rtnetlink (nlfuzz.Netlink); the xstats layout is read from
include/uapi/softmq.h so it follows the ABI header.
"""
import os
import re
import socket
import struct
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nlfuzz  # noqa: E402

UAPI = os.path.join(HERE, "..", "..", "include", "uapi", "softmq.h")
TCA_STATS2 = 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP, TCA_STATS_PKT64 = 1, 3, 4, 8


def xstats_fields():
    text = re.sub(r"/\*.*?\*/", "", open(UAPI).read(), flags=re.S)
    body = re.search(r"struct\s+tc_softmq_xstats\s*{(.*?)}", text, re.S).group(1)
    return re.findall(r"__(u32|u64)\s+(\w+)\s*;", body)


def qdiscs(dev):
    nl = nlfuzz.Netlink()
    ifindex = socket.if_nametoindex(dev)
    seq = nl._send(nlfuzz.RTM_GETQDISC, nlfuzz.NLM_F_REQUEST | nlfuzz.NLM_F_DUMP,
                   nlfuzz.TCMSG.pack(0, ifindex, 0, 0, 0))
    out = []
    fields = xstats_fields()
    while True:
        data = nl.s.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            ln, ty, _, sq, _ = nlfuzz.NLMSGHDR.unpack_from(data, off)
            if ln < 16:
                break
            if sq == seq and ty == nlfuzz.NLMSG_DONE:
                return out
            if sq == seq and ty == nlfuzz.NLMSG_ERROR:
                raise OSError(-struct.unpack_from("=i", data, off + 16)[0], "dump")
            if sq == seq and ty == nlfuzz.RTM_NEWQDISC:
                _, ifi, handle, parent, _ = nlfuzz.TCMSG.unpack_from(data, off + 16)
                attrs = {t & nlfuzz.NLA_TYPE_MASK: d for t, d in
                         nlfuzz.Model.walk(data[off + 16 + nlfuzz.TCMSG.size:off + ln])[0]}
                q = {"kind": attrs.get(nlfuzz.TCA_KIND, b"").rstrip(b"\0").decode(),
                     "handle": "%x:%x" % (handle >> 16, handle & 0xFFFF),
                     "parent": "root" if parent == nlfuzz.TC_H_ROOT else
                     "%x:%x" % (parent >> 16, parent & 0xFFFF)}
                s2 = {t & nlfuzz.NLA_TYPE_MASK: d for t, d in
                      nlfuzz.Model.walk(attrs.get(TCA_STATS2, b""))[0]}
                if TCA_STATS_BASIC in s2:
                    q["bytes"], q["packets"] = struct.unpack_from("=QI", s2[TCA_STATS_BASIC])
                if TCA_STATS_PKT64 in s2:
                    q["packets"] = struct.unpack_from("=Q", s2[TCA_STATS_PKT64])[0]
                if TCA_STATS_QUEUE in s2:
                    (q["qlen"], q["backlog"], q["drops"], q["requeues"],
                     q["overlimits"]) = struct.unpack_from("=IIIII", s2[TCA_STATS_QUEUE])
                if q["kind"] == "softmq" and TCA_STATS_APP in s2:
                    app, pos = s2[TCA_STATS_APP], 0
                    for typ, name in fields:
                        fmt = "=Q" if typ == "u64" else "=I"
                        if pos + struct.calcsize(fmt) > len(app):
                            break
                        q[name] = struct.unpack_from(fmt, app, pos)[0]
                        pos += struct.calcsize(fmt)
                if ifi == ifindex:
                    out.append(q)
            off += nlfuzz.align4(ln)


def words(q):
    return " ".join("%s=%s" % kv for kv in q.items())


def main(argv):
    if len(argv) >= 3 and argv[1] == "--all":
        for q in qdiscs(argv[2]):
            print(words(q))
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    want = argv[2] if len(argv) > 2 else "root"
    for q in qdiscs(argv[1]):
        if q["parent"] == want:
            print(words(q))
            return 0
    print("kind=none")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
