#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The lifecycle cases of tests/vm/10-lifecycle.sh (run by it, in the VM).

For each key mode (flow, cpu): add as root on a dummy, a veth and a 4-queue
veth; show; change every parameter; replace; a table of bad values on
change and on add (each: error, extack message that names the attribute or
points at it, state unchanged); delete.  Then module life: rmmod refused
while an instance exists, rmmod, add fails while unloaded, reload.
Netlink is driven by smq.py directly (the tc plugin is checked separately
in tc_cases()).
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smq as smqmod  # noqa: E402

KO = os.environ.get("SMQ_KO", "")
TC_LIB_DIR = os.environ.get("TC_LIB_DIR", "")
# the 6.1-686-pae line: the memory cap's arithmetic has 4-byte pointers
KERNEL_32BIT = os.uname().machine in ("i386", "i486", "i586", "i686", "armv7l")
TC615 = os.environ.get("SMQ_TC615", "")

NFAIL = 0


def out(line):
    print(line, flush=True)


def PASS(name, info=""):
    out("PASS %s%s" % (name, " (%s)" % info if info else ""))


def FAIL(name, why):
    global NFAIL
    NFAIL += 1
    out("FAIL %s: %s" % (name, why))


def SKIP(name, why):
    out("SKIP %s: %s" % (name, why))


def check(name, ok, why, info=""):
    if ok:
        PASS(name, info)
    else:
        FAIL(name, why)
    return ok


def sh(*cmd, check_rc=False, env=None):
    p = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if check_rc and p.returncode:
        raise RuntimeError("%s: rc %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p


def loaded():
    return os.path.isdir("/sys/module/sch_softmq")


def refcnt():
    try:
        return int(open("/sys/module/sch_softmq/refcnt").read())
    except OSError:
        return -1


S = None            # smqmod.Softmq()
ATTRS = {}
XSTATS_LEN = 0


def xstats_len(fields):
    off, align = 0, 1
    for _sign, bits, _name in fields:
        size = int(bits) // 8
        off = (off + size - 1) // size * size + size
        align = max(align, size)
    return (off + align - 1) // align * align


def root(dev):
    return S.find(dev, "root")


def state(dev):
    """What must not change on a refused request."""
    q = root(dev)
    if q is None:
        return None
    return {"kind": q["kind"], "handle": q["handle"], "options": q.get("options"),
            "reconfigs": q.get("xstats", {}).get("reconfigs")}


def defaults(key, dev="smqd0"):
    mtu = int(open("/sys/class/net/%s/mtu" % dev).read())
    # at the root: fq_codel's limits, whatever the TX queue count; CoDel
    # on with fq_codel's settings, no ce_threshold (not dumped while none)
    return {"flows": 1024, "depth": 64, "quantum": mtu + 14, "bands": 3, "key": key,
            "limit": 10240, "memory_limit": 32 << 20,
            "codel": 1, "target": 5000, "interval": 100000, "ecn": 1}


def setup_devs():
    for d in ("smqd0", "smqd1", "smqv0", "smqm0"):
        sh("ip", "link", "del", d)
    sh("modprobe", "dummy", "numdummies=0")
    sh("modprobe", "veth")
    sh("ip", "link", "add", "smqd0", "type", "dummy", check_rc=True)
    sh("ip", "link", "add", "smqd1", "type", "dummy", check_rc=True)
    sh("ip", "link", "add", "smqv0", "type", "veth", "peer", "name", "smqv1", check_rc=True)
    sh("ip", "link", "add", "smqm0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth",
       "peer", "name", "smqm1", "numtxqueues", "4", "numrxqueues", "4", check_rc=True)
    for d in ("smqd0", "smqd1", "smqv0", "smqv1", "smqm0", "smqm1"):
        sh("ip", "link", "set", d, "up", check_rc=True)


def add_cases(key):
    ok_all = True
    for dev, what in (("smqd0", "dummy"), ("smqv0", "veth"), ("smqm0", "veth4q")):
        name = "lifecycle-%s-add-%s" % (key, what)
        before = root(dev)
        r = S.qdisc("add", dev, ["root", "key", key])
        if r["rc"]:
            FAIL(name, "add failed: %s %s" % (os.strerror(r["rc"]), r["msg"]))
            ok_all = False
            continue
        qs = S.show(dev)
        q = [x for x in qs if x["parent"] == "root"]
        q = q[0] if q else {}
        exp = defaults(key, dev)
        problems = []
        if q.get("kind") != "softmq":
            problems.append("root is %s" % q.get("kind"))
        if q.get("options") != exp:
            problems.append("options %s, expected %s" % (q.get("options"), exp))
        if len(qs) != 1:
            problems.append("%d qdiscs on the device (expected the root alone): %s" %
                            (len(qs), [x["kind"] for x in qs]))
        if q.get("xstats_len") != XSTATS_LEN:
            problems.append("xstats %s bytes, uapi says %d" % (q.get("xstats_len"), XSTATS_LEN))
        xs = q.get("xstats", {})
        if xs.get("allocated_rings") != 0:
            # IPv6 is off and nothing sends: rings are allocated on first use
            problems.append("allocated_rings %s on an idle instance" % xs.get("allocated_rings"))
        cls = S.classes(dev)
        if cls:
            # a class per ring holding packets: none while idle
            problems.append("%d classes on an idle instance: %s" % (len(cls), cls[:2]))
        if problems:
            FAIL(name, "; ".join(problems) + " (was %s)" % (before or {}).get("kind"))
            ok_all = False
        else:
            PASS(name, "was %s" % (before or {}).get("kind"))
    return ok_all


def change_cases(key):
    dev = "smqd0"
    other = "cpu" if key == "flow" else "flow"
    steps = [("flows", ["flows", "16"], {"flows": 16}),
             # any count, as fq_codel's: the hash is scaled, not masked
             ("flows-1000", ["flows", "1000"], {"flows": 1000}),
             ("flows-3", ["flows", "3"], {"flows": 3}),
             ("depth", ["depth", "256"], {"depth": 256}),
             ("quantum", ["quantum", "3000"], {"quantum": 3000}),
             ("bands", ["bands", "1"], {"bands": 1}),
             ("key", ["key", other], {"key": other}),
             ("limit", ["limit", "1"], {"limit": 1}),
             ("memory_limit", ["memory_limit", "4096"], {"memory_limit": 4096}),
             ("limits-max", ["limit", str(1 << 24), "memory_limit", str(1 << 31)],
              {"limit": 1 << 24, "memory_limit": 1 << 31}),
             ("nocodel", ["codel", "0"], {"codel": 0}),
             ("target", ["target", "1"], {"target": 1}),
             ("interval", ["interval", "1"], {"interval": 1}),
             ("noecn", ["ecn", "0"], {"ecn": 0}),
             ("ce_threshold", ["ce_threshold", "1000"], {"ce_threshold": 1000}),
             ("ce_threshold-0", ["ce_threshold", "0"], {"ce_threshold": 0}),
             ("codel-max", ["codel", "1", "target", "60000000", "interval", "60000000",
                            "ecn", "1", "ce_threshold", "60000000"],
              {"codel": 1, "target": 60000000, "interval": 60000000, "ecn": 1,
               "ce_threshold": 60000000}),
             # ~0 switches ce_threshold off: the dump leaves it out again
             ("ce_threshold-off", ["ce_threshold", "0xffffffff"], {"ce_threshold": None}),
             ("all-back", ["flows", "1024", "depth", "64", "quantum", "1514", "bands", "3",
                           "key", key, "limit", "10240", "memory_limit", str(32 << 20),
                           "codel", "1", "target", "5000", "interval", "100000", "ecn", "1",
                           "ce_threshold", "0xffffffff"],
              defaults(key)),
             # the largest flows: with key flow every flow is a ring and a
             # class (minor band * rings + idx + 1 <= 65535), so 32768 with
             # one band; with key cpu flows is kept but the rings are
             # nr_cpu_ids, so 65536 with three bands is accepted
             ("flows-max", ["flows", "32768", "depth", "1", "bands", "1"]
              if key == "flow" else ["flows", "65536", "depth", "1"],
              {"flows": 32768, "depth": 1, "bands": 1} if key == "flow" else
              {"flows": 65536, "depth": 1}),
             ("depth-max", ["flows", "16", "depth", "4096"], {"flows": 16, "depth": 4096}),
             ("min", ["flows", "1", "depth", "1", "quantum", "64"],
              {"flows": 1, "depth": 1, "quantum": 64}),
             ("back", ["flows", "1024", "depth", "64", "quantum", "1514", "bands", "3",
                       "key", key], defaults(key))]
    for label, words, delta in steps:
        name = "lifecycle-%s-change-%s" % (key, label)
        before = state(dev)
        r = S.qdisc("change", dev, ["root"] + words)
        after = state(dev)
        exp = dict(before["options"])
        exp.update(delta)
        exp = {k: v for k, v in exp.items() if v is not None}
        if r["rc"]:
            FAIL(name, "refused: %s: %s" % (os.strerror(r["rc"]), r["msg"]))
        elif after["options"] != exp:
            FAIL(name, "options %s, expected %s" % (after["options"], exp))
        elif after["handle"] != before["handle"] or after["kind"] != "softmq":
            FAIL(name, "a different qdisc now: %s" % after)
        else:
            PASS(name, "reconfigs %s->%s" % (before["reconfigs"], after["reconfigs"]))
    name = "lifecycle-%s-change-nested-flag" % key
    before = state(dev)
    r = S.qdisc("change", dev, ["root", "nestedflag", "flows", "64"])
    after = state(dev)
    r2 = S.qdisc("change", dev, ["root", "flows", str(before["options"]["flows"])])
    check(name, r["rc"] == 0 and after["options"]["flows"] == 64 and r2["rc"] == 0,
          "TCA_OPTIONS with NLA_F_NESTED: rc %d %s, options %s" % (r["rc"], r["msg"],
                                                                 after["options"]))
    for label, words in (("empty", ["emptyopts"]), ("noopts", ["noopts"])):
        name = "lifecycle-%s-change-%s" % (key, label)
        before = state(dev)
        r = S.qdisc("change", dev, ["root"] + words)
        after = state(dev)
        check(name, r["rc"] == 0 and after == before,
              "rc %d (%s), state %s -> %s" % (r["rc"], r["msg"], before, after))


def replace_cases(key):
    dev = "smqd0"
    name = "lifecycle-%s-replace-same-kind" % key
    before = state(dev)
    r = S.qdisc("replace", dev, ["root", "flows", "8", "quantum", "2000", "key", key])
    after = state(dev)
    exp = dict(before["options"], flows=8, quantum=2000)
    check(name, r["rc"] == 0 and after["options"] == exp and after["kind"] == "softmq",
          "rc %d %s, options %s expected %s" % (r["rc"], r["msg"], after["options"], exp))

    name = "lifecycle-%s-replace-to-pfifo_fast" % key
    p = sh("tc", "qdisc", "replace", "dev", dev, "root", "pfifo_fast")
    q = root(dev)
    check(name, p.returncode == 0 and q and q["kind"] == "pfifo_fast",
          "tc rc %d %s, root now %s" % (p.returncode, p.stderr.strip(), q and q["kind"]))

    name = "lifecycle-%s-replace-from-pfifo_fast" % key
    r = S.qdisc("replace", dev, ["root", "key", key])
    q = root(dev)
    check(name, r["rc"] == 0 and q and q["kind"] == "softmq" and
          q.get("options") == defaults(key),
          "rc %d %s, root %s" % (r["rc"], r["msg"], q))


def bad_table(key):
    a = ATTRS
    maxq = 1 << 20
    # (label, words, attribute the error is about or None, words for a
    #  message check)
    return [
        ("flows-0", ["flows", "0"], "flows"),
        ("flows-131072", ["flows", "131072"], "flows"),
        ("flows-u32max", ["flows", "0xffffffff"], "flows"),
        ("depth-0", ["depth", "0"], "depth"),
        ("depth-3", ["depth", "3"], "depth"),
        ("depth-8192", ["depth", "8192"], "depth"),
        ("quantum-63", ["quantum", "63"], "quantum"),
        ("quantum-over", ["quantum", str(maxq + 1)], "quantum"),
        ("bands-0", ["bands", "0"], "bands"),
        ("bands-2", ["bands", "2"], "bands"),
        ("bands-4", ["bands", "4"], "bands"),
        ("key-2", ["key", "2"], "key"),
        ("key-u32max", ["key", "0xffffffff"], "key"),
        ("limit-0", ["limit", "0"], "limit"),
        ("limit-over", ["limit", str((1 << 24) + 1)], "limit"),
        ("memory_limit-4095", ["memory_limit", "4095"], "memory_limit"),
        ("memory_limit-over", ["memory_limit", str((1 << 31) + 1)], "memory_limit"),
        ("codel-2", ["codel", "2"], "codel"),
        ("codel-u32max", ["codel", "0xffffffff"], "codel"),
        ("target-0", ["target", "0"], "target"),
        ("target-over", ["target", "60000001"], "target"),
        ("target-u32max", ["target", "0xffffffff"], "target"),
        ("interval-0", ["interval", "0"], "interval"),
        ("interval-over", ["interval", "60000001"], "interval"),
        ("ecn-2", ["ecn", "2"], "ecn"),
        ("ce_threshold-over", ["ce_threshold", "60000001"], "ce_threshold"),
        ("ce_threshold-fffffffe", ["ce_threshold", "0xfffffffe"], "ce_threshold"),
        ("attr-u8-ecn", ["attr", "%d:u8:1" % a["ecn"]], "attr"),
        ("attr-u64-target", ["attr", "%d:u64:5000" % a["target"]], "attr"),
        # key flow explicitly: with key cpu there are only nr_cpu_ids rings
        # (16384 flows x 3 bands: over the cap alone, not over 65535 rings)
        ("memory-cap", ["key", "flow", "flows", "16384", "depth", "4096"], "cap"),
    ] + ([] if KERNEL_32BIT else [
        # 3072 rings of 4096 slots: 192 MiB with 8-byte pointers (on a
        # 32-bit kernel 96 MiB, accepted: rings_ok_cases)
        ("memory-cap-default-flows", ["key", "flow", "flows", "1024", "depth", "4096"], "cap"),
    ]) + [
        # a ring is a class, minor band * rings + idx + 1, and a minor has
        # 16 bits: bands x rings over 65535 wraps the class ids (depth 16:
        # far under the memory cap, so only this limit can refuse them)
        ("rings-3x32768", ["key", "flow", "flows", "32768", "bands", "3", "depth", "16"],
         "rings"),
        ("rings-1x65536", ["key", "flow", "flows", "65536", "bands", "1", "depth", "16"],
         "rings"),
        ("unknown-attr", ["attr", "%d:u32:1" % (max(a.values()) + 1)], "attr"),
        ("attr-u16", ["attr", "%d:u16:16" % a["flows"]], "attr"),
        ("attr-u64", ["attr", "%d:u64:16" % a["depth"]], "attr"),
        ("attr-empty", ["attr", "%d:hex:" % a["quantum"]], "attr"),
        ("partial", ["flows", "32", "quantum", "3000", "depth", "3"], "depth"),
        ("partial-codel", ["target", "2000", "ecn", "0", "interval", "0"], "interval"),
        ("partial-ce", ["codel", "0", "ce_threshold", "60000001"], "ce_threshold"),
    ]


def names_attr(r, words, what):
    """Does the error message name the attribute, or the extack offset point
    at the bad attribute?"""
    msg = r["msg"].lower()
    if not msg:
        return False
    if what == "cap":
        return "flows" in msg or "depth" in msg or "memory" in msg
    if what == "rings":
        return "65535" in msg
    if what in ("flows", "depth", "quantum", "bands", "key", "target", "interval",
                "ce_threshold") and what in msg:
        return True
    if r["offs"] is not None and r["offs"] in r["attr_offs"]:
        if what == "attr":
            return True
        # the attribute at that offset is the one with the bad value
        idx = r["attr_offs"].index(r["offs"])
        opt_words = [w for w in words[::2]]
        return idx < len(opt_words) and opt_words[idx] == what
    return False


def bad_cases(key):
    for label, words, what in bad_table(key):
        # on change: refused, says why, nothing changes
        name = "lifecycle-%s-bad-change-%s" % (key, label)
        before = state("smqd0")
        r = S.qdisc("change", "smqd0", ["root"] + words)
        after = state("smqd0")
        info = "%s: %s%s" % (os.strerror(r["rc"]) if r["rc"] else "ok", r["msg"],
                             " @%s" % r["offs"] if r["offs"] is not None else "")
        if r["rc"] == 0:
            FAIL(name, "accepted %s; state %s -> %s" % (words, before, after))
            # the next cases start from the configuration this one found
            S.qdisc("change", "smqd0", ["root"] + opt_words(before["options"]))
        elif after != before:
            FAIL(name, "refused (%s) but state changed: %s -> %s" % (info, before, after))
        elif not names_attr(r, words, what):
            FAIL(name, "refused, but the message neither names %s nor points at it: %s"
                 % (what, info))
        else:
            PASS(name, info)
        # on add: refused, the device keeps its qdisc
        name = "lifecycle-%s-bad-add-%s" % (key, label)
        before = state("smqd1")
        r = S.qdisc("add", "smqd1", ["root", "key", key] + words)
        after = state("smqd1")
        if r["rc"] == 0:
            FAIL(name, "accepted %s; root %s -> %s" % (words, before, after))
            S.qdisc("del", "smqd1", ["root"])
        elif after != before:
            FAIL(name, "refused but root changed: %s -> %s" % (before, after))
        elif not r["msg"]:
            FAIL(name, "refused without a message (%s)" % os.strerror(r["rc"]))
        else:
            PASS(name, r["msg"])


def opt_words(opts):
    """smq.py words that set every option of a dumped configuration."""
    words = []
    for k, v in opts.items():
        words += [k, str(v)]
    if "ce_threshold" not in opts:
        words += ["ce_threshold", "0xffffffff"]
    return words


def rings_ok_cases():
    """bands x rings up to 65535 (every class id fits a 16-bit minor): the
    largest such geometries are accepted by add and by change, and dumped
    as asked.  Their refusals one ring above are in bad_table().  On a
    32-bit kernel the memory cap, which counts bytes, also takes the
    default flows at the largest depth (4-byte slots: 96 MiB of rings)."""
    cases = [("rings-ok", "3x16384", ["flows", "16384", "bands", "3", "depth", "16"]),
             ("rings-ok", "1x32768", ["flows", "32768", "bands", "1", "depth", "16"])]
    if KERNEL_32BIT:
        cases.append(("cap-ok32", "1024x4096", ["flows", "1024", "bands", "3", "depth", "4096"]))
    for kind, label, words in cases:
        want = dict(zip(words[::2], (int(v) for v in words[1::2])))
        name = "lifecycle-flow-%s-add-%s" % (kind, label)
        r = S.qdisc("add", "smqd1", ["root", "key", "flow"] + words)
        q = root("smqd1")
        o = (q or {}).get("options") or {}
        check(name, r["rc"] == 0 and q and q["kind"] == "softmq" and
              {k: o.get(k) for k in want} == want,
              "rc %d %s, root %s" % (r["rc"], r["msg"], q))
        S.qdisc("del", "smqd1", ["root"])
        name = "lifecycle-flow-%s-change-%s" % (kind, label)
        before = state("smqd0")
        r = S.qdisc("change", "smqd0", ["root", "key", "flow"] + words)
        after = state("smqd0")
        o = after["options"]
        check(name, r["rc"] == 0 and {k: o.get(k) for k in want} == want and
              after["handle"] == before["handle"],
              "rc %d %s, options %s -> %s" % (r["rc"], r["msg"], before["options"], o))
        r = S.qdisc("change", "smqd0", ["root"] + opt_words(before["options"]))
        if r["rc"] or state("smqd0")["options"] != before["options"]:
            FAIL(name + "-back", "change back to %s: rc %d %s, now %s" %
                 (before["options"], r["rc"], r["msg"], state("smqd0")["options"]))


def delete_cases(key):
    for dev, what in (("smqd0", "dummy"), ("smqv0", "veth"), ("smqm0", "veth4q")):
        name = "lifecycle-%s-delete-%s" % (key, what)
        r = S.qdisc("del", dev, ["root"])
        q = root(dev)
        check(name, r["rc"] == 0 and q is not None and q["kind"] != "softmq",
              "rc %d %s, root now %s" % (r["rc"], r["msg"], q and q["kind"]),
              "root now %s" % (q and q["kind"]))
    name = "lifecycle-%s-refcount-zero" % key
    check(name, refcnt() == 0, "module refcnt %d with no instance left" % refcnt())


def tc_json(tc, dev):
    p = sh(tc, "-j", "qdisc", "show", "dev", dev, env=dict(os.environ, LD_BIND_NOW="1"))
    try:
        return [q for q in json.loads(p.stdout) if q.get("root")]
    except ValueError:
        return []


def tc_cases():
    if not os.path.exists(os.path.join(TC_LIB_DIR, "q_softmq.so")):
        SKIP("lifecycle-tc-plugin", "no q_softmq.so in TC_LIB_DIR=%s" % TC_LIB_DIR)
        return
    tcs = [("tc", "tc")]
    if TC615 and os.access(TC615, os.X_OK):
        tcs.append(("tc615", TC615))
    env = dict(os.environ, LD_BIND_NOW="1")
    for label, tc in tcs:
        pre = "lifecycle-%s" % label
        p = sh(tc, "qdisc", "add", "dev", "smqd0", "root", "softmq", "flows", "64",
               "key", "cpu", env=env)
        q = root("smqd0")
        check(pre + "-add", p.returncode == 0 and q and q["kind"] == "softmq" and
              q["options"]["flows"] == 64 and q["options"]["key"] == "cpu",
              "rc %d %s; kernel sees %s" % (p.returncode, p.stderr.strip(), q))
        j = tc_json(tc, "smqd0")
        o = j[0].get("options", {}) if j else {}
        check(pre + "-show", o.get("flows") == 64 and o.get("key") == "cpu" and
              o.get("depth") == 64, "tc -j shows %s" % o)
        p = sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", "depth", "128",
               "bands", "1", "key", "flow", env=env)
        q = root("smqd0")
        check(pre + "-change", p.returncode == 0 and q["options"]["depth"] == 128 and
              q["options"]["bands"] == 1 and q["options"]["key"] == "flow" and
              q["options"]["flows"] == 64,
              "rc %d %s; kernel sees %s" % (p.returncode, p.stderr.strip(), q["options"]))
        # CoDel through tc: the times as tc writes them, JSON in usec
        p = sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", "target", "2ms",
               "interval", "50ms", "noecn", "ce_threshold", "1.5ms", env=env)
        q = root("smqd0")
        j = tc_json(tc, "smqd0")
        o = j[0].get("options", {}) if j else {}
        check(pre + "-change-codel", p.returncode == 0 and
              {k: q["options"].get(k) for k in ("codel", "target", "interval", "ecn",
                                                "ce_threshold")} ==
              {"codel": 1, "target": 2000, "interval": 50000, "ecn": 0, "ce_threshold": 1500}
              and o.get("target") == 2000 and o.get("interval") == 50000 and
              "ecn" not in o and o.get("codel") is True and
              o.get("ce_threshold") == 1500,
              "rc %d %s; kernel sees %s; tc -j shows %s" % (p.returncode, p.stderr.strip(),
                                                           q["options"], o))
        p = sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", "nocodel", "ecn",
               "ce_threshold", "off", env=env)
        q = root("smqd0")
        t = sh(tc, "qdisc", "show", "dev", "smqd0", env=env).stdout
        check(pre + "-change-nocodel", p.returncode == 0 and q["options"]["codel"] == 0 and
              q["options"]["ecn"] == 1 and "ce_threshold" not in q["options"] and
              " nocodel target 2ms interval 50ms ecn" in t and "ce_threshold" not in t,
              "rc %d %s; kernel sees %s; tc shows %r" % (p.returncode, p.stderr.strip(),
                                                        q["options"], t))
        # iproute2's rule: of a repeated or contradicting option, the last counts
        p = sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", "ecn", "noecn",
               "depth", "256", "depth", "64", env=env)
        q = root("smqd0")
        check(pre + "-change-last-wins", p.returncode == 0 and q["options"]["ecn"] == 0 and
              q["options"]["depth"] == 64,
              "rc %d %s; kernel sees %s" % (p.returncode, p.stderr.strip(), q["options"]))
        sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", "codel", "target", "5ms",
           "interval", "100ms", env=env)
        for bad in (["flows", "0"], ["depth", "0"], ["bands", "2"], ["quantum", "1"],
                    ["key", "bogus"], ["flows", "65536", "depth", "4096"],
                    ["target", "0"], ["interval", "61s"], ["ce_threshold", "-1ms"],
                    ["quantum"], ["ecn", "bogus"]):
            before = state("smqd0")
            p = sh(tc, "qdisc", "change", "dev", "smqd0", "root", "softmq", *bad, env=env)
            after = state("smqd0")
            check(pre + "-bad-" + "-".join(bad[:2]),
                  p.returncode != 0 and p.stderr.strip() != "" and before == after,
                  "rc %d, stderr %r, state %s -> %s" % (p.returncode, p.stderr.strip(),
                                                        before, after),
                  p.stderr.strip().splitlines()[0] if p.stderr.strip() else "")
        p = sh(tc, "qdisc", "del", "dev", "smqd0", "root", env=env)
        q = root("smqd0")
        check(pre + "-del", p.returncode == 0 and q["kind"] != "softmq",
              "rc %d %s, root %s" % (p.returncode, p.stderr.strip(), q["kind"]))


def module_cases():
    # an instance pins the module
    S.qdisc("add", "smqd0", ["root"])
    p = sh("rmmod", "sch_softmq")
    check("lifecycle-rmmod-refused-in-use", p.returncode != 0 and loaded(),
          "rmmod rc %d with an instance on smqd0, loaded=%s" % (p.returncode, loaded()),
          p.stderr.strip())
    S.qdisc("del", "smqd0", ["root"])
    p = sh("rmmod", "sch_softmq")
    check("lifecycle-rmmod", p.returncode == 0 and not loaded(),
          "rmmod rc %d: %s" % (p.returncode, p.stderr.strip()))
    r = S.qdisc("add", "smqd0", ["root"])
    check("lifecycle-add-while-unloaded", r["rc"] != 0 and root("smqd0")["kind"] != "softmq",
          "add worked without the module (rc %d)" % r["rc"], r["msg"])
    if r["rc"] == 0:
        S.qdisc("del", "smqd0", ["root"])
    p = sh("insmod", KO)
    r = S.qdisc("add", "smqd0", ["root", "flows", "32"])
    q = root("smqd0")
    ok = p.returncode == 0 and r["rc"] == 0 and q and q["options"]["flows"] == 32
    check("lifecycle-reload", ok, "insmod rc %d %s; add rc %d %s; root %s" %
          (p.returncode, p.stderr.strip(), r["rc"], r["msg"], q))
    S.qdisc("del", "smqd0", ["root"])


def main():
    global S, ATTRS, XSTATS_LEN
    if loaded():
        sh("rmmod", "sch_softmq")
    p = sh("insmod", KO)
    if not check("lifecycle-insmod", p.returncode == 0 and loaded(),
                 "insmod %s: rc %d %s" % (KO, p.returncode, p.stderr.strip())):
        return 0
    p = sh("modinfo", "-F", "alias", KO)
    aliases = p.stdout.split()
    check("lifecycle-autoload-aliases", "net-sch-softmq" in aliases,
          "modinfo aliases %s lack net-sch-softmq" % aliases, " ".join(aliases) or "-")
    S = smqmod.Softmq()
    ATTRS = S.attrs
    XSTATS_LEN = xstats_len(S.fields)
    setup_devs()
    for key in ("flow", "cpu"):
        if not add_cases(key):
            # leave nothing half-made for the next key
            for d in ("smqd0", "smqv0", "smqm0"):
                S.qdisc("del", d, ["root"])
            continue
        change_cases(key)
        replace_cases(key)
        bad_cases(key)
        if key == "flow":
            rings_ok_cases()
        delete_cases(key)
    tc_cases()
    module_cases()
    for d in ("smqd0", "smqd1", "smqv0", "smqm0"):
        sh("ip", "link", "del", d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
