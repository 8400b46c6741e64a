#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write canned RTM_NEWQDISC messages for nlshim.so's NLSHIM_DUMP.

    mkmsg.py OUT IFINDEX [CLASS_OUT]

Each qdisc below is what the softmq module dumps (TCA_KIND, TCA_OPTIONS,
TCA_STATS2 with TCA_STATS_APP = struct tc_softmq_xstats, and the legacy
TCA_XSTATS copy); each class (RTM_NEWTCLASS, one per active ring) carries
struct tc_softmq_xstats (type TCA_SOFTMQ_XSTATS_CLASS) the same way.  The expected values are in
EXPECT and CLASSES (imported by run_tests.py).  Attribute numbers and both
xstats layouts come from include/uapi/softmq.h, read by the tests' netlink
and uapi module tests/vm/lib/smq.py (as are the netlink constants and the
attribute encoder).
"""
import struct
import sys
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, '..', 'vm', 'lib'))
from smq import (NLA_F_NESTED, RTM_NEWQDISC, RTM_NEWTCLASS,  # noqa: E402
                 TC_H_ROOT, TCA_KIND, TCA_OPTIONS, TCA_STATS2, TCA_STATS_APP,
                 TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_XSTATS, fields_fmt,
                 read_class_fields, read_uapi)
from smq import nla as rta  # noqa: E402,F401

_attrs, _, _xfields = read_uapi()
ATTRS = {'TCA_SOFTMQ_' + n.upper(): v for n, v in _attrs.items()}
# Attribute types past the header's last one: unknown to tc.
UNKNOWN_ATTR = max(_attrs.values()) + 2
XFIELDS = [(s + b, n) for s, b, n in _xfields]
CFIELDS = [(s + b, n) for s, b, n in read_class_fields()]
# struct tc_softmq_xstats' type (TCA_SOFTMQ_XSTATS_QDISC, _CLASS)
XTYPE_QDISC, XTYPE_CLASS = 0, 1
# The qdisc counters as tc prints them, in the uapi's order: the header's
# type and pad are not printed, memory_usage is tc's memory_used (as for
# fq_codel).
PRINTED = {n: ('memory_used' if n == 'memory_usage' else n)
           for _, n in XFIELDS if n not in ('type', 'pad')}
XFMT = fields_fmt(_xfields)
XSIZE = struct.calcsize(XFMT)
CFMT = fields_fmt(read_class_fields())
CSIZE = struct.calcsize(CFMT)
# Options in attribute order (= the order tc sends and prints them).
OPTS = ['flows', 'depth', 'quantum', 'bands', 'key', 'limit', 'memory_limit',
        'codel', 'target', 'interval', 'ecn', 'ce_threshold']
BOOL_OPTS = ('codel', 'ecn')           # JSON true/false
TIME_OPTS = ('target', 'interval', 'ce_threshold')
CE_OFF = 0xFFFFFFFF
KEYS = {'flow': 0, 'cpu': 1}


def stats_attrs(app, drops=0):
    basic = struct.pack('=QI4x', 123456, 789)
    queue = struct.pack('=IIIII', 0, 0, drops, 0, 0)
    stats2 = (rta(TCA_STATS_BASIC, basic) + rta(TCA_STATS_QUEUE, queue) +
              rta(TCA_STATS_APP, app))
    return rta(TCA_STATS2 | NLA_F_NESTED, stats2) + rta(TCA_XSTATS, app)


def tclass(ifindex, handle, minor, cx, empty_opts=False):
    cx = dict(cx, type=XTYPE_CLASS)
    x = struct.pack(CFMT, *[cx.get(n, 0) for _, n in CFIELDS])
    x += bytes(XSIZE - len(x))          # the union's size, as the kernel's
    attrs = rta(TCA_KIND, b'softmq\0')
    if empty_opts:
        attrs += rta(TCA_OPTIONS | NLA_F_NESTED, b'')
    attrs += stats_attrs(x)
    tcm = struct.pack('=BxHiIII', 0, 0, ifindex, handle | minor, handle, 0)
    body = tcm + attrs
    return struct.pack('=IHHII', 16 + len(body), RTM_NEWTCLASS, 0, 0, 0) + body


def qdisc(ifindex, handle, opts, xstats, xlen=None, extra_opts=b''):
    o = b''
    for name in OPTS:
        if name in opts:
            v = opts[name]
            v = KEYS.get(v, v)
            o += rta(ATTRS['TCA_SOFTMQ_' + name.upper()], struct.pack('=I', v))
    o += extra_opts
    x = struct.pack(XFMT, *[xstats.get(n, 0) for _, n in XFIELDS])
    if xlen is not None:
        x = x[:xlen]
    attrs = (rta(TCA_KIND, b'softmq\0') + rta(TCA_OPTIONS | NLA_F_NESTED, o) +
             stats_attrs(x, xstats.get('drop_overlimit', 0)))
    tcm = struct.pack('=BxHiIII', 0, 0, ifindex, handle, TC_H_ROOT, 2)
    body = tcm + attrs
    return struct.pack('=IHHII', 16 + len(body), RTM_NEWQDISC, 0, 0, 0) + body


# What the messages hold, and so what tc must print.
FULL_X = {n: 0 for _, n in XFIELDS}
FULL_X.update(drop_nomem=1, push_retries=17,
              ring_wakeups=42, busy_skips=3, bypassed=(1 << 32) + 7,
              active_rings=2, allocated_rings=7, ring_hiwat=31, draining=1,
              reconfigs=(1 << 40), drop_overlimit=11,
              drop_overmemory=(1 << 33), memory_usage=123456)
CPU_X = {n: 0 for _, n in XFIELDS}
CPU_X.update(drop_overlimit=9, drop_nomem=1, memory_usage=2, spilled=4)
# A block cut after the header and its first five u64 counters (a module
# built from an older header): the rest must read as 0.
SHORT_LEN = 48
SHORT_FIELDS = 7
OLD_X = {n: 0 for _, n in XFIELDS}
OLD_X.update(push_retries=2, ring_wakeups=3,
             allocated_rings=4, reconfigs=5, drop_overlimit=6,
             drop_overmemory=7, memory_usage=8)
FULL_X.update(drop_codel=(1 << 35) + 3, maxpacket=1514, ecn_mark=77,
              ce_mark=(1 << 32) - 1, new_flow_count=999, new_flows_len=2,
              old_flows_len=5, spilled=(1 << 36) + 9)
CODEL_DEFAULTS = dict(codel=1, target=5000, interval=100000, ecn=1)

EXPECT = [
    dict(handle='1:', opts=dict(flows=1024, depth=64, quantum=1514, bands=3,
                                key='flow', limit=10240,
                                memory_limit=32 << 20, **CODEL_DEFAULTS),
         xstats=FULL_X),
    dict(handle='2:', opts=dict(flows=8, depth=4096, quantum=65536, bands=1,
                                key='cpu', limit=1, memory_limit=4097),
         xstats={n: (CPU_X[n] if i < SHORT_FIELDS else 0)
                 for i, (_, n) in enumerate(XFIELDS)}),
    # A key this plugin does not know (a newer module): printed as a number.
    # AQM off, no ecn, odd times, ce_threshold 0.
    dict(handle='3:', opts=dict(flows=1, depth=1, quantum=64, bands=3,
                                key=7, limit=1 << 24, memory_limit=1536 << 10,
                                codel=0, target=1500, interval=1000000,
                                ecn=0, ce_threshold=0),
         xstats={n: 0 for _, n in XFIELDS}),
    # A module from before CoDel: no CoDel attributes.
    dict(handle='4:', opts=dict(flows=64, depth=32, quantum=1514, bands=3,
                                key='flow', limit=100, memory_limit=4 << 20),
         xstats=OLD_X),
    # The extremes; ce_threshold set; a later attribute the plugin does
    # not know.
    dict(handle='5:', opts=dict(flows=1024, depth=64, quantum=1514, bands=1,
                                key='cpu', limit=10240, memory_limit=32 << 20,
                                codel=1, target=60000000, interval=1, ecn=1,
                                ce_threshold=2500),
         xstats=FULL_X, extra=True),
    # ce_threshold dumped as off (the kernel leaves it out; were it there,
    # it means none).
    dict(handle='6:', opts=dict(flows=1024, depth=64, quantum=1514, bands=3,
                                key='flow', limit=10240,
                                memory_limit=32 << 20, codel=0, target=12345,
                                interval=60000000, ecn=1, ce_threshold=CE_OFF),
         xstats=FULL_X),
]

# Classes of qdisc 1: (minor, class xstats, empty TCA_OPTIONS?, text line);
# times as tc's sprint_time() prints them ("%.3g")
CLASS_X = [
    (1, dict(band=0, index=0, deficit=1514, ldelay=0, count=0, lastcount=0,
             dropping=0, drop_next=0, new_flow=1), False,
     '  band 0 index 0 deficit 1514 count 0 lastcount 0 ldelay 0us new_flow'),
    (1024 + 5 + 1, dict(band=1, index=5, deficit=-300, ldelay=12345, count=3,
                        lastcount=2, dropping=1, drop_next=2500, new_flow=0),
     False,
     '  band 1 index 5 deficit -300 count 3 lastcount 2 ldelay 12.3ms '
     'dropping drop_next 2.5ms'),
    (2048 + 1 + 1, dict(band=2, index=1, deficit=0, ldelay=7000,
                        count=4294967295, lastcount=1, dropping=1,
                        drop_next=-1000, new_flow=1), True,
     '  band 2 index 1 deficit 0 count 4294967295 lastcount 1 ldelay 7ms '
     'dropping drop_next -1ms new_flow'),
    (2048 + 1023 + 1, dict(band=2, index=1023, deficit=-2147483648,
                           ldelay=60000000, count=1, lastcount=0, dropping=1,
                           drop_next=-2147483648, new_flow=0), False,
     '  band 2 index 1023 deficit -2147483648 count 1 lastcount 0 ldelay 60s '
     'dropping drop_next -2.15e+03s'),
    (3, dict(band=0, index=2, deficit=1, ldelay=999, count=0, lastcount=0,
             dropping=0, drop_next=-5, new_flow=0), False,
     '  band 0 index 2 deficit 1 count 0 lastcount 0 ldelay 999us'),
]


def build(ifindex):
    out = qdisc(ifindex, 0x00010000, EXPECT[0]['opts'], FULL_X)
    out += qdisc(ifindex, 0x00020000, EXPECT[1]['opts'], CPU_X, xlen=SHORT_LEN,
                 extra_opts=rta(UNKNOWN_ATTR + 3, struct.pack('=I', 99)))
    for e in EXPECT[2:]:
        handle = int(e['handle'].rstrip(':'), 16) << 16
        extra = rta(UNKNOWN_ATTR, struct.pack('=I', 1)) if e.get('extra') else b''
        out += qdisc(ifindex, handle, e['opts'], e['xstats'], xlen=e.get('xlen'),
                     extra_opts=extra)
    return out


def build_classes(ifindex):
    return b''.join(tclass(ifindex, 0x00010000, minor, cx, empty)
                    for minor, cx, empty, _ in CLASS_X)


if __name__ == '__main__':
    with open(sys.argv[1], 'wb') as f:
        f.write(build(int(sys.argv[2])))
    if len(sys.argv) > 3:
        with open(sys.argv[3], 'wb') as f:
            f.write(build_classes(int(sys.argv[2])))
