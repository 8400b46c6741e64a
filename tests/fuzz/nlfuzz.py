#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""nlfuzz.py - netlink fuzzer for softmq's RTM_NEWQDISC (add, change, replace).

Raw rtnetlink, Python stdlib only, so every byte of a request is ours to
break.  Each request is generated (well-formed options with boundary and
random values) or mutated (a corpus of accepted option blocks, damaged:
bit flips, byte stores, cuts, splices, inserted junk), and is then judged
against a model of what the kernel must do with exactly those bytes:

  * the top-level attributes are walked as nlmsg_parse_deprecated() does
    (liberal: a malformed attribute ends the walk, the rest is ignored);
  * TCA_OPTIONS is parsed as softmq does: nla_parse_nested() with
    NL_VALIDATE_STRICT (NLA_F_NESTED on the nest, no unknown or zero types,
    u32 attributes exactly 4 bytes and without NLA_F_NESTED, no trailing
    bytes, policy ranges), later duplicates win, then the semantic checks
    (depth a power of two, bands 1 or 3, ce_threshold at most 60 s
    or ~0 for none, at most 65535 rings (classes) in all, the 128 MiB memory
    cap on the merged configuration).
    A dump leaves ce_threshold out when it is none: read as ~0.

Oracle, per request:
  model says "accept"  -> the kernel must accept, and a dump of the qdisc
                          must show exactly the configuration asked for;
  model says "refuse"  -> the kernel must refuse (an errno, never a crash),
                          and a dump must show the previous state unchanged;
                          a refusal for the memory cap must carry the cap's
                          extack message.
A geometry change may also be refused with EBUSY (previous geometry still
draining) or ENOMEM; those are counted, the state must then be unchanged,
and more than 1 % of them fails the run.

  nlfuzz.py --dev DEV [--mq-dev DEV --mq-parent 1:1] [--count N] [--seed S]
            [--traffic] [--nested-flag required|optional] [--log FILE]
  nlfuzz.py --dev DEV [--parent X:Y] --once add|change|replace [flows=N ...]
            one request, prints "ok <dump>" or "error ERRNO extack"

Prints a summary; exits 1 on any mismatch (each one is printed with the
request bytes in hex so it can be replayed with --replay HEX).

The socket, nla(), parse_handle() and the attribute numbers come from
tests/vm/lib/smq.py (the tests' netlink and uapi module); what is the
fuzzer's own is the generator of malformed options and the model below.
"""

import argparse
import errno
import os
import random
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "vm", "lib"))
from smq import (NLA_F_NESTED, NLA_F_NET_BYTEORDER, NLA_TYPE_MASK,  # noqa: E402
                 NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE,
                 RTM_DELQDISC, RTM_GETQDISC, RTM_NEWQDISC, TC_H_ROOT,
                 TCA_KIND, TCA_OPTIONS, TCMSG, NlError, Rtnl, align4, dump,
                 nla, nla_parse, parse_handle, read_uapi)

NLA = struct.Struct("=HH")

# The options the model below knows, by their names in include/uapi/softmq.h
# (ABI: append only); the numbers are the header's.
MODEL_NAMES = ("flows", "depth", "quantum", "bands", "key", "limit",
               "memory_limit", "codel", "target", "interval", "ecn",
               "ce_threshold")
UAPI_ATTRS = read_uapi()[0]
(FLOWS, DEPTH, QUANTUM, BANDS, KEY, LIMIT, MEMORY_LIMIT,
 CODEL, TARGET, INTERVAL, ECN, CE_THRESHOLD) = (UAPI_ATTRS.get(n, -1 - i)
                                                for i, n in enumerate(MODEL_NAMES))
NAMES = {UAPI_ATTRS.get(n, -1 - i): n for i, n in enumerate(MODEL_NAMES)}
MAXTYPE = max(UAPI_ATTRS.values())
CODEL_TIME_MAX = 60000000           # us: 60 s
CE_OFF = 0xFFFFFFFF                 # ce_threshold: none
# Policy ranges.  ce_threshold's policy is a bare u32: its range (0..60 s,
# or CE_OFF) is a semantic check, after the policy (see parse_options).
RANGES = {FLOWS: (1, 65536), DEPTH: (1, 4096), QUANTUM: (64, 1 << 20),
          BANDS: (1, 3), KEY: (0, 1), LIMIT: (1, 1 << 24),
          MEMORY_LIMIT: (4096, 1 << 31), CODEL: (0, 1),
          TARGET: (1, CODEL_TIME_MAX), INTERVAL: (1, CODEL_TIME_MAX),
          ECN: (0, 1), CE_THRESHOLD: (0, 0xFFFFFFFF)}


def uapi_matches():
    """The header has exactly the options the model knows."""
    return sorted(UAPI_ATTRS) == sorted(MODEL_NAMES)


MEM_CAP = 128 << 20
CAP_MSG = "memory cap"
MAX_CLASSES = 65535
CLASSES_MSG = "exceeds 65535"
# struct softmq_ring: three 64-byte aligned lines up to slot[] (128 bytes
# of header), then depth pointers.
RING_HDR = 128
# The kernel's pointer size: this userland's (i386 on the 6.1-686-pae line,
# where 1024 slots are 4 KiB and a geometry half the size of 64-bit's).
PTR = struct.calcsize("P")
U32MAX = 0xFFFFFFFF


def pow2_ceil(n):
    p = 1
    while p < n:
        p <<= 1
    return p


def is_pow2(n):
    return n and not (n & (n - 1))


def txqs(dev):
    """The device's real TX queue count (what the kernel divides by)."""
    return len([q for q in os.listdir("/sys/class/net/%s/queues" % dev)
                if q.startswith("tx-")])


def nr_cpu_ids():
    # "0-3" or "0"; nr_cpu_ids is the highest possible CPU + 1.
    try:
        txt = open("/sys/devices/system/cpu/possible").read().strip()
        return max(int(x.split("-")[-1]) for x in txt.split(",")) + 1
    except OSError:
        return os.cpu_count() or 1


class Model:
    """What the kernel must do with a given set of bytes."""

    def __init__(self, ncpu, default_quantum, nested_required=True, txqs=1):
        self.ncpu = ncpu
        self.default_quantum = default_quantum
        self.nested_required = nested_required
        self.txqs = txqs        # > 1: a child serving one of txqs queues

    def defaults(self):
        # fq_codel's limits; a child serving one TX queue of several gets
        # its share, at least 1024 packets and 4 MiB
        limit, mem = 10240, 32 << 20
        if self.txqs > 1:
            limit, mem = max(limit // self.txqs, 1024), max(mem // self.txqs, 4 << 20)
        # CoDel: fq_codel's defaults, whatever the parent
        return {FLOWS: 1024, DEPTH: 64, QUANTUM: self.default_quantum,
                BANDS: 3, KEY: 0, LIMIT: limit, MEMORY_LIMIT: mem,
                CODEL: 1, TARGET: 5000, INTERVAL: 100000, ECN: 1,
                CE_THRESHOLD: CE_OFF}

    def geometry_bytes(self, cfg):
        rings = self.ncpu if cfg[KEY] == 1 else cfg[FLOWS]
        # header + pointers, cache-aligned bitmaps; an upper bound is
        # enough: the cap decision never hinges on the table's exact size
        # (ring parts are 2^k or 3*2^k, the cap 2^27).
        table = 128 + cfg[BANDS] * rings * PTR + 64
        table = (table + 63) & ~63
        table += cfg[BANDS] * (((rings + 63) // 64 * 8 + 63) & ~63)
        ring = pow2_ceil(RING_HDR + PTR * cfg[DEPTH])
        return table + cfg[BANDS] * rings * ring

    def geometry(self, cfg):
        rings = self.ncpu if cfg[KEY] == 1 else cfg[FLOWS]
        return (rings, cfg[DEPTH], cfg[BANDS], cfg[KEY])

    @staticmethod
    def walk(buf):
        """nla_for_each_attr(): (type_field, payload, ok) per attribute,
        then the remaining byte count."""
        out = []
        pos, rem = 0, len(buf)
        while rem >= 4:
            ln, ty = NLA.unpack_from(buf, pos)
            if ln < 4 or ln > rem:
                break
            out.append((ty, buf[pos + 4:pos + ln]))
            adv = align4(ln)
            pos += adv
            rem -= adv
        return out, rem

    def parse_options(self, nla_type, payload, cfg):
        """softmq_parse() on a copy of cfg: (ok, new_cfg, reason)."""
        if self.nested_required and not nla_type & NLA_F_NESTED:
            return False, cfg, "NLA_F_NESTED missing"
        attrs, rem = self.walk(payload)
        tb = {}
        for ty, data in attrs:
            t = ty & NLA_TYPE_MASK
            if t == 0 or t > MAXTYPE:
                return False, cfg, "unknown type %d" % t
            if len(data) != 4:
                return False, cfg, "%s length %d" % (NAMES[t], len(data))
            if ty & NLA_F_NESTED:
                return False, cfg, "NLA_F_NESTED on %s" % NAMES[t]
            v = struct.unpack("=I", data)[0]
            lo, hi = RANGES[t]
            if v < lo or v > hi:
                return False, cfg, "%s %d out of range" % (NAMES[t], v)
            tb[t] = v
        if rem > 0:
            return False, cfg, "%d trailing bytes" % rem
        new = dict(cfg)
        if FLOWS in tb:
            new[FLOWS] = tb[FLOWS]
        if DEPTH in tb:
            new[DEPTH] = tb[DEPTH]
            if not is_pow2(new[DEPTH]):
                return False, cfg, "depth not a power of two"
        if QUANTUM in tb:
            new[QUANTUM] = tb[QUANTUM]
        if BANDS in tb:
            new[BANDS] = tb[BANDS]
            if new[BANDS] not in (1, 3):
                return False, cfg, "bands not 1 or 3"
        if KEY in tb:
            new[KEY] = tb[KEY]
        for t in (LIMIT, MEMORY_LIMIT, CODEL, TARGET, INTERVAL, ECN):
            if t in tb:
                new[t] = tb[t]
        if CE_THRESHOLD in tb:
            new[CE_THRESHOLD] = tb[CE_THRESHOLD]
            if tb[CE_THRESHOLD] > CODEL_TIME_MAX and tb[CE_THRESHOLD] != CE_OFF:
                return False, cfg, "ce_threshold over 60 s and not ~0"
        # each ring is a class, minor band * rings + index + 1: 16 bits
        rings = self.ncpu if new[KEY] == 1 else new[FLOWS]
        if rings * new[BANDS] > MAX_CLASSES:
            return False, cfg, "classes"
        if self.geometry_bytes(new) > MEM_CAP:
            return False, cfg, "cap"
        return True, new, "ok"

    def top_level(self, attrs_bytes):
        """nlmsg_parse_deprecated(): last TCA_KIND / TCA_OPTIONS seen."""
        attrs, _ = self.walk(attrs_bytes)
        kind = opts = None
        for ty, data in attrs:
            t = ty & NLA_TYPE_MASK
            if t == TCA_KIND:
                kind = (ty, data)
            elif t == TCA_OPTIONS:
                opts = (ty, data)
        return kind, opts

    @staticmethod
    def kind_ok(kind):
        """None: absent; True: names softmq; False: names something else;
        'bad': refused by the top-level policy (empty NLA_STRING)."""
        if kind is None:
            return None
        data = kind[1]
        if len(data) < 1:
            return "bad"
        return data.rstrip(b"\0") == b"softmq"

    def predict(self, op, present, cur, attrs_bytes):
        """op: add|change|replace; present: softmq in the slot; cur: its cfg.
        Returns (ok, cfg_after, reason)."""
        kind, opts = self.top_level(attrs_bytes)
        k = self.kind_ok(kind)
        if k == "bad":
            return False, cur, "empty TCA_KIND"
        creating = op == "add" or (op == "replace" and not present)
        if creating:
            if k is not True:
                return False, None, "kind absent or not softmq"
            base = self.defaults()
        else:
            if k is False:
                return False, cur, "kind mismatch on change"
            base = cur
        if opts is None:
            return True, base, "no options"
        ok, new, why = self.parse_options(opts[0], opts[1], base)
        return ok, (new if ok else (None if creating else cur)), why


def request(nl, mtype, flags, body):
    """One acked request: (errno or 0, extack message)."""
    try:
        nl.request(mtype, flags | NLM_F_ACK, body)
    except NlError as e:
        return e.err, e.msg
    return 0, ""


def dump_qdiscs(nl, ifindex):
    """[(kind, handle, parent, options_payload)] of one device."""
    out = []
    for body in dump(nl, RTM_GETQDISC, ifindex):
        _, _, handle, parent, _ = TCMSG.unpack_from(body)
        a = nla_parse(body[TCMSG.size:])
        kind = a[TCA_KIND].rstrip(b"\0").decode() if TCA_KIND in a else None
        out.append((kind, handle, parent, a.get(TCA_OPTIONS)))
    return out


def u32(v):
    return struct.pack("=I", v & U32MAX)


def parse_dump_opts(payload):
    cfg = {}
    for t, d in nla_parse(payload or b"").items():
        if t in NAMES and len(d) == 4:
            cfg[t] = struct.unpack("=I", d)[0]
    # the kernel dumps ce_threshold only when it is set
    cfg.setdefault(CE_THRESHOLD, CE_OFF)
    return cfg


def boundary_values():
    vals = {0, 1, 2, 3, U32MAX, U32MAX - 1, 0x7FFFFFFF, 0x80000000, 0x80000001}
    for k in range(33):
        for d in (-1, 0, 1):
            v = (1 << k) + d
            if 0 <= v <= U32MAX:
                vals.add(v)
    for lo, hi in list(RANGES.values()) + [(0, CODEL_TIME_MAX)]:
        for v in (lo - 1, lo, lo + 1, hi - 1, hi, hi + 1):
            if 0 <= v <= U32MAX:
                vals.add(v)
    return sorted(vals)


class Generator:
    def __init__(self, rng, nested_flag=True):
        self.rng = rng
        self.bvals = boundary_values()
        self.corpus = [b""]
        self.nested_flag = nested_flag

    def value(self, t):
        r = self.rng.random()
        lo, hi = RANGES.get(t, (0, U32MAX))
        if r < 0.45:   # valid-looking: powers of two / small values in range
            if t in (FLOWS, DEPTH):
                k = self.rng.randint(0, hi.bit_length() - 1)
                return 1 << k
            if t == BANDS:
                return self.rng.choice((1, 3))
            if t in (KEY, CODEL, ECN):
                return self.rng.choice((0, 1))
            if t == CE_THRESHOLD:
                return self.rng.choice((CE_OFF, self.rng.randint(0, CODEL_TIME_MAX)))
            return self.rng.randint(lo, hi)
        if r < 0.85:
            return self.rng.choice(self.bvals)
        return self.rng.getrandbits(32)

    def good_options(self):
        types = [t for t in NAMES if self.rng.random() < 0.5]
        self.rng.shuffle(types)
        if types and self.rng.random() < 0.1:
            types.append(self.rng.choice(types))      # duplicate: last wins
        return b"".join(nla(t, u32(self.value(t))) for t in types)

    def mutate(self, buf):
        b = bytearray(buf)
        for _ in range(self.rng.randint(1, 4)):
            m = self.rng.randrange(7)
            if m == 0 and b:            # bit flip
                i = self.rng.randrange(len(b))
                b[i] ^= 1 << self.rng.randrange(8)
            elif m == 1 and b:          # interesting byte
                i = self.rng.randrange(len(b))
                b[i] = self.rng.choice((0, 1, 3, 4, 5, 6, 0x40, 0x7F, 0x80, 0xFF))
            elif m == 2 and b:          # cut
                b = b[:self.rng.randrange(len(b))]
            elif m == 3:                # insert junk
                i = self.rng.randint(0, len(b))
                b[i:i] = os.urandom(self.rng.randint(1, 9))
            elif m == 4 and len(b) >= 4:  # rewrite a length field
                i = self.rng.randrange(0, len(b) - 1, 4) if len(b) >= 8 else 0
                struct.pack_into("=H", b, i, self.rng.choice(
                    (0, 1, 3, 4, 5, 7, 8, 9, 12, 0xFFFF, len(b), len(b) + 4)) & 0xFFFF)
            elif m == 5 and len(b) >= 4:  # rewrite a type field
                i = self.rng.randrange(0, len(b) - 3, 4) if len(b) >= 8 else 0
                struct.pack_into("=H", b, i + 2, self.rng.choice(
                    (0, 6, 7, 0x3FFF, 0x8001, 0x4002, 0xC003, 0xFFFF,
                     self.rng.getrandbits(16))))
            else:                       # splice with a corpus entry
                other = self.rng.choice(self.corpus)
                b = b[:self.rng.randint(0, len(b))] + other[self.rng.randint(0, len(other)):]
        return bytes(b)

    def options(self):
        """(nla_type of TCA_OPTIONS, payload, class name)"""
        r = self.rng.random()
        nt = TCA_OPTIONS | (NLA_F_NESTED if self.nested_flag else 0)
        if r < 0.30:
            return nt, self.good_options(), "gen"
        if r < 0.45:
            return nt, self.mutate(self.rng.choice(self.corpus)), "mutate"
        if r < 0.55:        # one attribute with a wrong length
            t = self.rng.choice(list(NAMES))
            ln = self.rng.choice((0, 1, 2, 3, 5, 6, 7, 8, 12, 16, 64, 255))
            return nt, self.good_options() + nla(t, os.urandom(ln)), "length"
        if r < 0.63:        # odd types and flag bits
            t = self.rng.choice((0, 6, 7, 8, 12, 13, 15, 16, 255, 256, 0x3FFF)) if self.rng.random() < 0.6 \
                else self.rng.choice(list(NAMES)) | self.rng.choice((NLA_F_NESTED, NLA_F_NET_BYTEORDER, 0xC000))
            return nt, self.good_options() + nla(t, u32(self.value(t & NLA_TYPE_MASK))), "type"
        if r < 0.71:        # nesting
            inner = self.good_options() or nla(FLOWS, u32(64))
            for _ in range(self.rng.randint(1, 4)):
                inner = nla(self.rng.choice(list(NAMES) + [0, MAXTYPE + 1]) | NLA_F_NESTED, inner)
            return nt, self.good_options() + inner, "nest"
        if r < 0.79:        # truncated or trailing bytes
            g = self.good_options() or nla(DEPTH, u32(128))
            if self.rng.random() < 0.5:
                g = g[:self.rng.randrange(1, len(g))] if len(g) > 1 else b"\x08"
            else:
                g = g + os.urandom(self.rng.randint(1, 7))
            return nt, g, "trunc"
        if r < 0.84:        # oversized
            if self.rng.random() < 0.5:
                return nt, nla(self.rng.choice(list(NAMES)), os.urandom(self.rng.randint(5, 60000))), "huge-attr"
            n = self.rng.randint(100, 4000)
            return nt, b"".join(nla(self.rng.choice(list(NAMES)), u32(self.value(0)))
                                for _ in range(n)), "many-attrs"
        if r < 0.88:        # nest flag flipped
            return nt ^ NLA_F_NESTED, self.good_options(), "nestflag"
        if r < 0.93:        # random bytes
            return nt, os.urandom(self.rng.randint(0, 64)), "random"
        return nt, b"", "empty"

    def request_attrs(self):
        """Top-level attributes: (bytes, class)."""
        kind = nla(TCA_KIND, b"softmq\0")
        nt, opts, cls = self.options()
        r = self.rng.random()
        if r < 0.03:
            return kind, "no-options"
        if r < 0.05:        # a second TCA_OPTIONS: the last one counts
            nt2, opts2, _ = self.options()
            return kind + nla(nt2, opts2) + nla(nt, opts), cls + "+dup-options"
        if r < 0.08:        # kind variants
            k = self.rng.choice((b"softmq", b"softmq\0\0\0", b"softm", b"softmqq\0",
                                 b"SOFTMQ\0", b""))
            return nla(TCA_KIND, k) + nla(nt, opts), cls + "+kind"
        if r < 0.10:        # unknown top-level attribute (ignored)
            return kind + nla(200, os.urandom(8)) + nla(nt, opts), cls + "+junk-top"
        if r < 0.12 and len(opts) > 8:   # options nest overruns the message
            b = kind + nla(nt, opts)
            b = b[:len(b) - self.rng.randint(1, 8)]
            return b, cls + "+overrun"
        return kind + nla(nt, opts), cls


class Traffic(threading.Thread):
    """UDP to 198.18.0.0/15 out of the fuzzed devices: rings get allocated,
    geometry changes drain real packets."""

    def __init__(self, devs, pps=2000):
        super().__init__(daemon=True)
        self.devs, self.pps, self.stop = devs, pps, threading.Event()
        self.sent = 0

    def run(self):
        socks = []
        for d in self.devs:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, 25, d.encode())   # SO_BINDTODEVICE
            s.setblocking(False)
            socks.append(s)
        rng = random.Random(1)
        while not self.stop.is_set():
            for _ in range(20):
                n = rng.randrange(len(socks))
                s = socks[n]
                try:
                    s.setsockopt(socket.SOL_SOCKET, 12, rng.randrange(16))  # SO_PRIORITY
                    # device n owns 198.(18+n).0.0/16 (see 60-fuzz-netlink.sh)
                    s.sendto(b"x" * rng.randrange(1, 1400),
                             ("198.%d.%d.%d" % (18 + n, rng.randrange(1, 256), rng.randrange(1, 255)),
                              rng.randrange(1, 65535)))
                    self.sent += 1
                except OSError:
                    pass
            time.sleep(20.0 / self.pps)


class Slot:
    """One place a softmq can sit: a device root or an mq child."""

    def __init__(self, nl, dev, parent):
        self.nl, self.dev, self.parent = nl, dev, parent
        self.ifindex = socket.if_nametoindex(dev)

    def current(self):
        for kind, handle, parent, opts in dump_qdiscs(self.nl, self.ifindex):
            if parent == self.parent or (self.parent == TC_H_ROOT and parent == TC_H_ROOT):
                if kind == "softmq":
                    return parse_dump_opts(opts)
                return None
        return None

    def body(self, attrs):
        return TCMSG.pack(0, self.ifindex, 0, self.parent, 0) + attrs

    def delete(self):
        return request(self.nl, RTM_DELQDISC, 0, self.body(b""))


def mtu_of(dev):
    try:
        return int(open("/sys/class/net/%s/mtu" % dev).read())
    except OSError:
        return 1500


def fmt(cfg):
    if cfg is None:
        return "none"
    return " ".join("%s %d" % (NAMES[t], cfg.get(t, -1)) for t in sorted(NAMES))


def once(a):
    """One request; prints "ok <dump>" or "error <ERRNO> <extack>"."""
    nl = Rtnl(timeout=30)
    slot = Slot(nl, a.dev, parse_handle(a.parent))
    op, words = a.once[0], a.once[1:]
    byname = {v: k for k, v in NAMES.items()}
    opts = b""
    for w in words:
        k, _, v = w.partition("=")
        opts += nla(byname[k], u32(int(v, 0)))
    flags = {"add": NLM_F_CREATE | NLM_F_EXCL, "change": 0,
             "replace": NLM_F_CREATE | NLM_F_REPLACE}[op]
    err, msg = request(nl, RTM_NEWQDISC, flags, slot.body(
        nla(TCA_KIND, b"softmq\0") + nla(TCA_OPTIONS | NLA_F_NESTED, opts)))
    if err:
        print("error %s %s" % (errno.errorcode.get(err, err), msg))
        return 1
    print("ok %s" % fmt(slot.current()))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", required=True)
    ap.add_argument("--mq-dev")
    ap.add_argument("--mq-parent", default="1:1")
    ap.add_argument("--parent", default="root", help="--once: root or X:Y")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--traffic", action="store_true")
    ap.add_argument("--nested-flag", choices=("required", "optional"), default="optional",
                    help="does softmq refuse TCA_OPTIONS without NLA_F_NESTED?")
    ap.add_argument("--send-nested", choices=("yes", "no"), default="yes",
                    help="set NLA_F_NESTED on TCA_OPTIONS in generated requests")
    ap.add_argument("--log")
    ap.add_argument("--max-fail", type=int, default=20)
    ap.add_argument("--once", nargs="+", metavar="WORD",
                    help="send one request and print the outcome: "
                    "add|change|replace [flows=N depth=N quantum=N bands=N key=N "
                    "limit=N memory_limit=N codel=N target=US interval=US ecn=N "
                    "ce_threshold=US]")
    a = ap.parse_args()
    if a.once:
        return once(a)

    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    nl = Rtnl(timeout=30)
    slots = [Slot(nl, a.dev, TC_H_ROOT)]
    if a.mq_dev:
        slots.append(Slot(nl, a.mq_dev, parse_handle(a.mq_parent)))
    if not uapi_matches():
        print("FAIL-DETAIL nlfuzz's attribute table differs from include/uapi/softmq.h")
        return 1
    models = {s: Model(nr_cpu_ids(), min(max(mtu_of(s.dev) + 14, 64), 1 << 20),
                       a.nested_flag == "required",
                       txqs(s.dev) if s.parent != TC_H_ROOT else 1) for s in slots}
    gen = Generator(rng, a.send_nested == "yes")
    log = open(a.log, "w") if a.log else None
    traffic = None
    if a.traffic:
        traffic = Traffic([s.dev for s in slots])
        traffic.start()

    stats = {"accepted": 0, "refused": 0, "transient": 0, "mismatch": 0}
    errnos, classes = {}, {}
    fails = 0
    t0 = time.time()
    print("nlfuzz: seed %d, %d requests, devices %s" %
          (seed, a.count, " ".join("%s@%x" % (s.dev, s.parent) for s in slots)), flush=True)

    state = {s: s.current() for s in slots}
    for i in range(a.count):
        slot = rng.choice(slots)
        model = models[slot]
        cur = state[slot]
        present = cur is not None
        op = rng.choice(("add", "change", "replace"))
        if op == "add" and present:
            err, msg = slot.delete()
            if err:
                print("FAIL-DETAIL #%d: delete before add failed: %s %s" % (i, os.strerror(err), msg))
                fails += 1
            cur, present = None, False
        if op == "change" and not present:
            err, msg = request(nl, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL,
                                  slot.body(nla(TCA_KIND, b"softmq\0")))
            if err:
                print("FAIL-DETAIL #%d: default add failed: %s %s" % (i, os.strerror(err), msg))
                fails += 1
                continue
            cur, present = model.defaults(), True
            got = slot.current()
            if got != cur:
                print("FAIL-DETAIL #%d: default add dumps %s, want %s" % (i, fmt(got), fmt(cur)))
                fails += 1
                cur = got
        # The dumped configuration is the model's starting point (it was
        # checked against the previous prediction already).
        attrs, cls = gen.request_attrs()
        flags = {"add": NLM_F_CREATE | NLM_F_EXCL, "change": 0,
                 "replace": NLM_F_CREATE | NLM_F_REPLACE}[op]
        ok, want, why = model.predict(op, present, cur, attrs)
        err, msg = request(nl, RTM_NEWQDISC, flags, slot.body(attrs))
        got = state[slot] = slot.current()
        classes[cls] = classes.get(cls, 0) + 1
        verdict = None
        if ok and not err:
            stats["accepted"] += 1
            if got != want:
                verdict = "accepted but dumps %s, asked %s" % (fmt(got), fmt(want))
            else:
                # Accepted option blocks seed the mutator.
                _, o = model.top_level(attrs)
                if o and len(gen.corpus) < 500 and len(o[1]) < 200:
                    gen.corpus.append(o[1])
        elif ok and err in (errno.EBUSY, errno.ENOMEM) and present and \
                model.geometry(want) != model.geometry(cur):
            stats["transient"] += 1
            errnos[err] = errnos.get(err, 0) + 1
            if got != cur:
                verdict = "refused (%s) but the state changed: %s -> %s" % (
                    os.strerror(err), fmt(cur), fmt(got))
        elif ok:
            verdict = "refused (%s: %s), model accepts (%s): %s" % (
                os.strerror(err), msg, why, fmt(want))
        elif not err:
            verdict = "accepted, model refuses (%s); dump %s" % (why, fmt(got))
        else:
            stats["refused"] += 1
            errnos[err] = errnos.get(err, 0) + 1
            after = cur if not (op == "add" or (op == "replace" and not present)) else None
            if got != after:
                verdict = "refused (%s) but the state changed: %s -> %s" % (
                    os.strerror(err), fmt(cur), fmt(got))
            elif why == "cap" and CAP_MSG not in msg:
                verdict = "cap refusal without the cap message (extack '%s')" % msg
            elif why == "classes" and CLASSES_MSG not in msg:
                verdict = "class-count refusal without its message (extack '%s')" % msg
        if log:
            log.write("%d %s %s %s -> %s %s | %s\n" % (i, op, cls, why,
                      os.strerror(err) if err else "ok", msg, fmt(got)))
        if verdict:
            stats["mismatch"] += 1
            fails += 1
            print("FAIL-DETAIL #%d %s/%s on %s: %s" % (i, op, cls, slot.dev, verdict))
            print("    request attrs: %s" % attrs.hex())
            if fails >= a.max_fail:
                print("nlfuzz: too many failures, stopping")
                break
        if (i + 1) % 2000 == 0:
            print("nlfuzz: %d done (%.0f s)" % (i + 1, time.time() - t0), flush=True)

    if traffic:
        traffic.stop.set()
        traffic.join()
    total = stats["accepted"] + stats["refused"] + stats["transient"] + stats["mismatch"]
    print("nlfuzz: %d requests in %.1f s: %d accepted, %d refused, %d transient "
          "(EBUSY/ENOMEM), %d mismatches; seed %d%s" % (
              total, time.time() - t0, stats["accepted"], stats["refused"],
              stats["transient"], stats["mismatch"], seed,
              ", %d packets sent" % traffic.sent if traffic else ""))
    print("nlfuzz: errnos %s" % ", ".join("%s=%d" % (errno.errorcode.get(e, e), n)
                                          for e, n in sorted(errnos.items())))
    print("nlfuzz: classes %s" % ", ".join("%s=%d" % kv for kv in sorted(classes.items())))
    if stats["transient"] > max(10, total // 100):
        print("FAIL-DETAIL: %d transient refusals (more than 1 %%)" % stats["transient"])
        fails += 1
    if total < a.count:
        fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
