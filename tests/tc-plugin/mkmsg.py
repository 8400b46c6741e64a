#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write canned RTM_NEWQDISC messages for nlshim.so's NLSHIM_DUMP.

    mkmsg.py OUT IFINDEX

Each qdisc below is what the softmq module dumps (TCA_KIND, TCA_OPTIONS,
TCA_STATS2 with TCA_STATS_APP = struct tc_softmq_xstats, and the legacy
TCA_XSTATS copy).  The expected values are in EXPECT (imported by check.py).
Attribute numbers and the xstats layout come from include/uapi/softmq.h.
"""
import re
import struct
import sys
import os

HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.path.join(HERE, '..', '..', 'include', 'uapi', 'softmq.h')

RTM_NEWQDISC = 36
TCA_KIND, TCA_OPTIONS, TCA_XSTATS, TCA_STATS2 = 1, 2, 4, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP = 1, 3, 4
NLA_F_NESTED = 1 << 15
TC_H_ROOT = 0xFFFFFFFF


def uapi():
    """Attribute numbers and the xstats field list, read from the header."""
    text = open(UAPI).read()
    enum = re.search(r'enum\s*{\s*(TCA_SOFTMQ_UNSPEC.*?)}', text, re.S).group(1)
    names = re.findall(r'(TCA_SOFTMQ_\w+)', enum)
    attrs = {n: i for i, n in enumerate(names)}
    body = re.search(r'struct tc_softmq_xstats\s*{(.*?)};', text, re.S).group(1)
    fields = re.findall(r'__(u64|u32)\s+(\w+);', body)
    return attrs, fields


ATTRS, XFIELDS = uapi()
XFMT = '=' + ''.join('Q' if t == 'u64' else 'I' for t, _ in XFIELDS)
XSIZE = struct.calcsize(XFMT)
OPTS = ['flows', 'depth', 'quantum', 'bands', 'key', 'limit', 'memory_limit']
KEYS = {'flow': 0, 'cpu': 1}


def rta(typ, payload):
    ln = 4 + len(payload)
    return struct.pack('=HH', ln, typ) + payload + b'\0' * ((4 - ln % 4) % 4)


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
    basic = struct.pack('=QI4x', 123456, 789)
    queue = struct.pack('=IIIII', 0, 0, xstats.get('drops_ring_full', 0), 0, 0)
    stats2 = (rta(TCA_STATS_BASIC, basic) + rta(TCA_STATS_QUEUE, queue) +
              rta(TCA_STATS_APP, x))
    attrs = (rta(TCA_KIND, b'softmq\0') + rta(TCA_OPTIONS | NLA_F_NESTED, o) +
             rta(TCA_STATS2 | NLA_F_NESTED, stats2) + rta(TCA_XSTATS, x))
    tcm = struct.pack('=BxHiIII', 0, 0, ifindex, handle, TC_H_ROOT, 2)
    body = tcm + attrs
    return struct.pack('=IHHII', 16 + len(body), RTM_NEWQDISC, 0, 0, 0) + body


# What the messages hold, and so what tc must print.
FULL_X = {n: 0 for _, n in XFIELDS}
FULL_X.update(drops_ring_full=5, drops_nomem=1, push_retries=17,
              ring_wakeups=42, busy_skips=3, bypassed=(1 << 32) + 7,
              active_rings=2, allocated_rings=7, ring_hiwat=31, draining=1,
              reconfigs=(1 << 40), drop_overlimit=11,
              drop_overmemory=(1 << 33), memory_usage=123456)
CPU_X = {n: 0 for _, n in XFIELDS}
CPU_X.update(drops_ring_full=9, push_retries=1, ring_wakeups=2)
# A block cut after the first six u64 counters: the rest must read as 0.
SHORT_LEN = 48

EXPECT = [
    dict(handle='1:', opts=dict(flows=1024, depth=64, quantum=1514, bands=3,
                                key='flow', limit=10240,
                                memory_limit=32 << 20), xstats=FULL_X),
    dict(handle='2:', opts=dict(flows=8, depth=4096, quantum=65536, bands=1,
                                key='cpu', limit=1, memory_limit=4097),
         xstats={n: (CPU_X[n] if i < 6 else 0)
                 for i, (_, n) in enumerate(XFIELDS)}),
    # A key this plugin does not know (a newer module): printed as a number.
    dict(handle='3:', opts=dict(flows=1, depth=1, quantum=64, bands=3,
                                key=7, limit=1 << 24, memory_limit=1536 << 10),
         xstats={n: 0 for _, n in XFIELDS}),
]


def build(ifindex):
    out = qdisc(ifindex, 0x00010000, EXPECT[0]['opts'], FULL_X)
    out += qdisc(ifindex, 0x00020000, EXPECT[1]['opts'], CPU_X, xlen=SHORT_LEN,
                 extra_opts=rta(len(ATTRS) + 3, struct.pack('=I', 99)))
    out += qdisc(ifindex, 0x00030000, EXPECT[2]['opts'], EXPECT[2]['xstats'])
    return out


if __name__ == '__main__':
    with open(sys.argv[1], 'wb') as f:
        f.write(build(int(sys.argv[2])))
