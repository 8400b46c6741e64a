#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side tests for q_softmq.so and tc-softmq.8 (`make -C tc-plugin check`).

Needs no softmq module and changes nothing in the host's kernel:
  * bad arguments: tc must exit 1 with our one-line error naming the argument
    plus the usage, and send the kernel nothing at all (nlshim.so logs every
    netlink message tc sends; the log must stay empty);
  * good arguments: the attributes tc would send are read from the shim's log
    while the shim, not the kernel, answers (NLSHIM_FAKE_ACK);
  * good arguments: TCA_OPTIONS carries NLA_F_NESTED;
  * printing: `tc [-s] [-j [-p]] qdisc show` and `tc -s [-j] class show`
    are fed canned softmq dumps (mkmsg.py) by the shim and their text and
    JSON are checked (qdisc xstats of every size, class xstats);
  * the plugin's exported symbols; the man page lint.
Every tc case runs with each tc binary found (Debian's 6.1 and the
bookworm-backports 6.15; see find_tcs()) and LD_BIND_NOW=1.

Environment: TC_OLD=/path/to/tc (default: tc on PATH), TC_NEW=/path/to/tc
(default: $SOFTMQ_TC615, else the test bed's cache/tools/iproute2-bpo/tc,
else any tc 6.15 under cache/; $SOFTMQ_CACHE moves cache/), VERBOSE=1.
Prints PASS/FAIL/SKIP lines and ends with "N passed, N failed, N skipped";
exits 1 if anything failed.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))      # tests/tc-plugin
ROOT = os.path.dirname(os.path.dirname(HERE))
PLUGIN_DIR = os.path.join(ROOT, 'tc-plugin')
OUT = os.path.join(PLUGIN_DIR, 'out')
SHIM = os.path.join(OUT, 'nlshim.so')
OUT_I386 = os.path.join(OUT, 'i386')    # the -m32 plugin and shim
MAN = os.path.join(PLUGIN_DIR, 'tc-softmq.8')
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import mkmsg  # noqa: E402

VERBOSE = os.environ.get('VERBOSE') == '1'
counts = {'pass': 0, 'fail': 0, 'skip': 0}


def result(ok, name, detail=''):
    if ok:
        counts['pass'] += 1
        print('PASS ' + name)
    else:
        counts['fail'] += 1
        first = detail.strip().splitlines()[0] if detail.strip() else ''
        print('FAIL %s%s' % (name, ': ' + first if first else ''))
        for line in detail.rstrip().splitlines():
            print('    | ' + line)
    sys.stdout.flush()


def skip(name, why, n=1):
    counts['skip'] += n
    print('SKIP %s: %s' % (name, why))


def cache_dir():
    return os.environ.get('SOFTMQ_CACHE') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
        'softmq')


def i386_argv(root):
    """Debian's i386 tc in ROOT, run by qemu-i386 (this host's kernel runs
    no i386 binaries); Tc.run() puts the guest's environment in front."""
    return [shutil.which('qemu-i386') or 'qemu-i386', '-L', root,
            os.path.join(root, 'sbin', 'tc')]


def tc_version(path):
    argv = path if isinstance(path, list) else [path]
    try:
        p = subprocess.run(argv + ['-V'], capture_output=True, text=True,
                           timeout=10)
    except OSError:
        return None
    m = re.search(r'iproute2-(\S+?),?\s', p.stdout + ' ')
    return m.group(1) if m else None


def find_tcs():
    """[(label, path)] for the tc binaries to test, plus skipped labels."""
    tcs, missing = [], []
    old = os.environ.get('TC_OLD') or shutil.which('tc') or '/usr/sbin/tc'
    v = tc_version(old) if os.access(old, os.X_OK) else None
    if v:
        tcs.append(('tc-' + v, old))
    else:
        missing.append(('tc (system)', 'no tc binary at %s' % old))
    new = os.environ.get('TC_NEW') or os.environ.get('SOFTMQ_TC615')
    if not new:
        # the test bed's cached bookworm-backports tc (a wrapper script),
        # else any tc 6.15 binary extracted under cache/
        cache = cache_dir()
        # the glob walks the whole cache (chroots, kernels: a minute or
        # more), so only when the test bed's own copy is not there
        def cands():
            yield os.path.join(cache, 'tools', 'iproute2-bpo', 'tc')
            for pat in ('**/sbin/tc', '**/bin/tc'):
                yield from sorted(glob.glob(os.path.join(cache, pat),
                                            recursive=True))
        for cand in cands():
            cv = tc_version(cand) if os.access(cand, os.X_OK) else None
            if cv and cv.startswith('6.15'):
                new = cand
                break
    # Debian 12's i386 tc with the -m32 plugin (tests/testbed/kernels.sh
    # tools fetches the root)
    root = os.environ.get('TC_I386_ROOT') or os.path.join(
        cache_dir(), 'tools', 'i386-tc', 'root')
    iv = None
    if os.access(os.path.join(root, 'sbin', 'tc'), os.X_OK):
        iv = tc_version(i386_argv(root))
    if iv:
        i386 = ('tc-%s-i386' % iv, i386_argv(root))
    elif not shutil.which('qemu-i386'):
        missing.append(('tc-i386', 'qemu-i386 not found (Debian: qemu-user)'))
    else:
        missing.append(('tc-i386', 'no i386 tc that runs under qemu-i386 in '
                        '%s: set TC_I386_ROOT, or fetch it with '
                        'tests/testbed/kernels.sh tools' % root))
    if new:
        nv = tc_version(new) if os.access(new, os.X_OK) else None
        if nv and (not tcs or nv != tcs[0][0][3:]):
            tcs.append(('tc-' + nv, new))
        elif nv:
            missing.append(('tc-6.15', 'TC_NEW=%s is the same version as '
                            'the system tc' % new))
        else:
            missing.append(('tc-6.15', 'TC_NEW=%s does not run' % new))
    else:
        missing.append(('tc-6.15', 'no bookworm-backports tc 6.15 found: set '
                        'TC_NEW=/path/to/tc, or fetch it with '
                        'tests/testbed/kernels.sh tools'))
    if iv:
        tcs.append(i386)
    return tcs, missing


class Tc:
    def __init__(self, label, path, tmp):
        self.label, self.path, self.tmp = label, path, tmp
        self.log = os.path.join(tmp, 'nl-%s.log' % label)

    def run(self, args, fake_ack=False, dump=None, class_dump=None):
        i386 = isinstance(self.path, list)
        out = OUT_I386 if i386 else OUT
        tc_env = dict(TC_LIB_DIR=OUT_I386 if i386 else PLUGIN_DIR,
                      LD_BIND_NOW='1', LD_PRELOAD=os.path.join(out, 'nlshim.so'),
                      NLSHIM_LOG=self.log, LC_ALL='C')
        if class_dump:
            tc_env['NLSHIM_CLASS_DUMP'] = class_dump
        if fake_ack:
            tc_env['NLSHIM_FAKE_ACK'] = '1'
        if dump:
            tc_env['NLSHIM_DUMP'] = dump
        env = dict(os.environ)
        for k in ('NLSHIM_FAKE_ACK', 'NLSHIM_DUMP', 'NLSHIM_CLASS_DUMP'):
            env.pop(k, None)
        if i386:
            # the guest's environment through qemu's -E: an LD_PRELOAD in
            # qemu's own would make the host's ld.so complain about the
            # 32-bit shim on stderr
            argv = self.path[:1] + [a for k, v in sorted(tc_env.items())
                                    for a in ('-E', '%s=%s' % (k, v))]
            argv += self.path[1:]
            env['LC_ALL'] = 'C'
        else:
            argv = [self.path]
            env.update(tc_env)
        if os.path.exists(self.log):
            os.unlink(self.log)
        p = subprocess.run(argv + args, capture_output=True, text=True,
                           env=env, timeout=30)
        sent = open(self.log).read() if os.path.exists(self.log) else ''
        if VERBOSE:
            print('    $ %s %s -> %d\n%s%s%s' % (self.label, ' '.join(args),
                                              p.returncode, p.stdout,
                                              p.stderr, sent))
        return p.returncode, p.stdout, p.stderr, sent


# ---- bad arguments: (words after "softmq", regex the first line must match).
# Only syntax is checked here: tc's own parsers (get_unsigned, get_size,
# get_time) and the words; ranges are the kernel's (extack), tested in the
# VM (tests/vm/61-tc-badinput.sh, tests/tdc).
MISSING = r'"%s" needs a value$'
ILLEGAL = r'Illegal "%s" "%s"$'
BAD_CASES = [
    (['flows'], MISSING % 'flows'),
    (['depth'], MISSING % 'depth'),
    (['quantum'], MISSING % 'quantum'),
    (['bands'], MISSING % 'bands'),
    (['key'], MISSING % 'key'),
    (['limit'], MISSING % 'limit'),
    (['memory_limit'], MISSING % 'memory_limit'),
    (['flows', '8', 'depth'], MISSING % 'depth'),
    (['foo'], r'What is "foo"\?$'),
    (['FLOWS', '8'], r'What is "FLOWS"\?$'),
    (['flows', '8', 'drop_batch', '64'], r'What is "drop_batch"\?$'),
    (['limit', '10k'], ILLEGAL % ('limit', '10k')),
    (['limit', '4294967296'], ILLEGAL % ('limit', '4294967296')),
    (['memory_limit', '5g'], ILLEGAL % ('memory_limit', '5g')),
    (['memory_limit', '32Mx'], ILLEGAL % ('memory_limit', '32Mx')),
    (['memory_limit', ''], ILLEGAL % ('memory_limit', '')),
    (['flows', 'abc'], ILLEGAL % ('flows', 'abc')),
    (['flows', ''], ILLEGAL % ('flows', '')),
    (['flows', '8k'], ILLEGAL % ('flows', '8k')),
    (['flows', '1.5'], ILLEGAL % ('flows', r'1\.5')),
    (['flows', '99999999999999999999999999'], ILLEGAL % ('flows', '9+')),
    (['depth', '1.5k'], ILLEGAL % ('depth', r'1\.5k')),
    (['quantum', 'abc'], ILLEGAL % ('quantum', 'abc')),
    (['quantum', '1514x'], ILLEGAL % ('quantum', '1514x')),
    (['quantum', '99999999999'], ILLEGAL % ('quantum', '99999999999')),
    (['bands', 'three'], ILLEGAL % ('bands', 'three')),
    (['key', 'hash'], ILLEGAL % ('key', 'hash')),
    (['key', 'CPU'], ILLEGAL % ('key', 'CPU')),
    (['key', '1'], ILLEGAL % ('key', '1')),
    (['key', ''], ILLEGAL % ('key', '')),
    # CoDel: times (get_time()'s syntax, and no negative, NaN or huge one)
    (['target'], MISSING % 'target'),
    (['interval'], MISSING % 'interval'),
    (['ce_threshold'], MISSING % 'ce_threshold'),
    (['ecn', 'target'], MISSING % 'target'),
    (['target', '5ms', 'interval'], MISSING % 'interval'),
    (['target', '-5ms'], ILLEGAL % ('target', '-5ms')),
    (['target', '-1'], ILLEGAL % ('target', '-1')),
    (['target', ' -5ms'], ILLEGAL % ('target', ' -5ms')),
    (['interval', '-100ms'], ILLEGAL % ('interval', '-100ms')),
    (['ce_threshold', '-1ms'], ILLEGAL % ('ce_threshold', '-1ms')),
    (['target', 'abc'], ILLEGAL % ('target', 'abc')),
    (['target', ''], ILLEGAL % ('target', '')),
    (['target', 'ms'], ILLEGAL % ('target', 'ms')),
    (['target', '5m'], ILLEGAL % ('target', '5m')),
    (['target', '5mss'], ILLEGAL % ('target', '5mss')),
    (['target', '5 ms'], ILLEGAL % ('target', '5 ms')),
    (['target', '5ns'], ILLEGAL % ('target', '5ns')),
    (['target', 'nan'], ILLEGAL % ('target', 'nan')),
    (['ce_threshold', 'nan'], ILLEGAL % ('ce_threshold', 'nan')),
    (['target', 'inf'], ILLEGAL % ('target', 'inf')),
    (['target', '1e999s'], ILLEGAL % ('target', '1e999s')),
    (['target', '4294967296'], ILLEGAL % ('target', '4294967296')),
    (['target', '4295s'], ILLEGAL % ('target', '4295s')),
    (['interval', '4294968ms'], ILLEGAL % ('interval', '4294968ms')),
    (['ce_threshold', '1e10us'], ILLEGAL % ('ce_threshold', '1e10us')),
    (['interval', '100msx'], ILLEGAL % ('interval', '100msx')),
    (['interval', 'off'], ILLEGAL % ('interval', 'off')),
    (['ce_threshold', 'on'], ILLEGAL % ('ce_threshold', 'on')),
    (['ce_threshold', 'OFF'], ILLEGAL % ('ce_threshold', 'OFF')),
    (['ecn', '1'], r'What is "1"\?$'),
    (['codel', 'on'], r'What is "on"\?$'),
    (['ECN'], r'What is "ECN"\?$'),
    (['noce_threshold'], r'What is "noce_threshold"\?$'),
    (['aqm'], r'What is "aqm"\?$'),
]

# ---- good arguments: (words, the TCA_OPTIONS tc must send as "type:value")
A = {n: mkmsg.ATTRS['TCA_SOFTMQ_' + n.upper()] for n in mkmsg.OPTS}


def opts(**kv):
    return ','.join('%d:%d' % (A[n], kv[n]) for n in mkmsg.OPTS if n in kv)


GOOD_CASES = [
    ([], opts()),
    (['flows', '8'], opts(flows=8)),
    (['flows', '1'], opts(flows=1)),
    (['flows', '65536'], opts(flows=65536)),
    (['depth', '1'], opts(depth=1)),
    (['depth', '4096'], opts(depth=4096)),
    (['quantum', '1514'], opts(quantum=1514)),
    (['quantum', '1514b'], opts(quantum=1514)),
    (['quantum', '1.5k'], opts(quantum=1536)),
    (['quantum', '64kb'], opts(quantum=65536)),
    (['quantum', '64'], opts(quantum=64)),
    (['quantum', '1m'], opts(quantum=1048576)),
    (['quantum', '1024k'], opts(quantum=1048576)),
    (['quantum', '100.5'], opts(quantum=100)),   # tc sizes drop fractions
    (['quantum', '0x100'], opts(quantum=256)),   # strtod reads hex
    (['bands', '1'], opts(bands=1)),
    (['bands', '3'], opts(bands=3)),
    (['key', 'flow'], opts(key=0)),
    (['key', 'cpu'], opts(key=1)),
    (['limit', '1'], opts(limit=1)),
    (['limit', '16777216'], opts(limit=16777216)),
    (['memory_limit', '32Mb'], opts(memory_limit=32 << 20)),
    (['memory_limit', '32m'], opts(memory_limit=32 << 20)),
    (['memory_limit', '4096'], opts(memory_limit=4096)),
    (['memory_limit', '2g'], opts(memory_limit=2 << 30)),
    (['memory_limit', '1.5m'], opts(memory_limit=1536 << 10)),
    # ranges are the kernel's: out-of-range values are sent as they are
    (['flows', '1000'], opts(flows=1000)),
    (['flows', '0'], opts(flows=0)),
    (['depth', '8192'], opts(depth=8192)),
    (['limit', '0'], opts(limit=0)),
    (['bands', '2'], opts(bands=2)),
    (['quantum', '63'], opts(quantum=63)),
    (['memory_limit', '3g'], opts(memory_limit=3 << 30)),
    (['target', '0'], opts(target=0)),
    (['target', '61s'], opts(target=61000000)),
    (['target', '4294s'], opts(target=4294000000)),
    (['interval', '4294967ms'], opts(interval=4294967000)),
    # tc's get_unsigned(): hex and octal as every tc qdisc reads them
    (['flows', '0x10'], opts(flows=16)),
    (['limit', '010'], opts(limit=8)),
    # a repeated option: the last one wins, as in every tc qdisc
    (['flows', '8', 'flows', '16'], opts(flows=16)),
    (['ecn', 'noecn'], opts(ecn=0)),
    (['nocodel', 'codel'], opts(codel=1)),
    (['key', 'cpu', 'depth', '8', 'key', 'flow'], opts(depth=8, key=0)),
    (['ce_threshold', '1ms', 'ce_threshold', 'off'],
     opts(ce_threshold=mkmsg.CE_OFF)),
    (['key', 'cpu', 'bands', '1', 'quantum', '9000', 'depth', '256',
      'flows', '4096', 'memory_limit', '4m', 'limit', '2000'],
     opts(flows=4096, depth=256, quantum=9000, bands=1, key=1, limit=2000,
          memory_limit=4 << 20)),
    # CoDel: get_time()'s syntax (any case; a bare number is usec)
    (['codel'], opts(codel=1)),
    (['nocodel'], opts(codel=0)),
    (['ecn'], opts(ecn=1)),
    (['noecn'], opts(ecn=0)),
    (['target', '5ms'], opts(target=5000)),
    (['target', '500us'], opts(target=500)),
    (['target', '1.5ms'], opts(target=1500)),
    (['target', '2500'], opts(target=2500)),
    (['target', '1'], opts(target=1)),
    (['target', '60s'], opts(target=60000000)),
    (['target', '60000000us'], opts(target=60000000)),
    (['target', '5MS'], opts(target=5000)),
    (['target', '5msec'], opts(target=5000)),
    (['target', '5msecs'], opts(target=5000)),
    (['target', '3usec'], opts(target=3)),
    (['target', '3usecs'], opts(target=3)),
    (['target', '1.9us'], opts(target=1)),       # get_time drops fractions
    (['target', '1e3'], opts(target=1000)),
    (['target', '+5ms'], opts(target=5000)),
    (['interval', '100ms'], opts(interval=100000)),
    (['interval', '1s'], opts(interval=1000000)),
    (['interval', '2sec'], opts(interval=2000000)),
    (['interval', '2secs'], opts(interval=2000000)),
    (['interval', '0.25s'], opts(interval=250000)),
    (['interval', '1us'], opts(interval=1)),
    (['ce_threshold', '1ms'], opts(ce_threshold=1000)),
    (['ce_threshold', '0'], opts(ce_threshold=0)),
    (['ce_threshold', '60s'], opts(ce_threshold=60000000)),
    (['ce_threshold', 'off'], opts(ce_threshold=mkmsg.CE_OFF)),
    (['ce_threshold', '2.5ms', 'noecn', 'interval', '200ms', 'nocodel',
      'target', '10ms'],
     opts(codel=0, target=10000, interval=200000, ecn=0, ce_threshold=2500)),
    # every option at once (also the change and replace case)
    (['ecn', 'target', '4ms', 'key', 'cpu', 'bands', '1', 'quantum', '9000',
      'depth', '256', 'ce_threshold', '800us', 'flows', '4096', 'memory_limit',
      '4m', 'limit', '2000', 'interval', '50ms', 'codel'],
     opts(flows=4096, depth=256, quantum=9000, bands=1, key=1, limit=2000,
          memory_limit=4 << 20, codel=1, target=4000, interval=50000, ecn=1,
          ce_threshold=800)),
]

# The netlink flags tc sets per command (NLM_F_REQUEST|ACK|CREATE|EXCL|REPLACE)
CMDS = [('add', 0x0605), ('change', 0x0005), ('replace', 0x0505)]


def check_bad(tc):
    for cmd in ('add', 'change', 'replace'):
        cases = BAD_CASES if cmd == 'add' else BAD_CASES[::7]
        for words, rx in cases:
            name = '%s %s: %s softmq %s' % (tc.label, cmd, cmd,
                                           ' '.join(repr(w) if not w or ' ' in w
                                                    else w for w in words))
            # FAKE_ACK: even a plugin bug cannot reach the kernel
            rc, out, err, sent = tc.run(['qdisc', cmd, 'dev', 'lo', 'root',
                                         'softmq'] + words, fake_ack=True)
            lines = err.splitlines()
            why = []
            if rc != 1:
                why.append('exit %d, expected 1' % rc)
            if not lines or not re.match(rx, lines[0]):
                why.append('first stderr line does not match %r' % rx)
            if len(lines) < 2 or not lines[1].startswith('Usage: ... softmq'):
                why.append('usage does not follow the error line')
            if re.search(r'RTNETLINK|Error:|Unknown qdisc|Cannot find', err):
                why.append('a kernel/tc error, not the plugin\'s')
            if sent:
                why.append('tc sent netlink messages:\n' + sent)
            if out:
                why.append('unexpected stdout')
            result(not why, name, '\n'.join(why) + '\nstderr:\n' + err)


def check_help(tc):
    rc, out, err, sent = tc.run(['qdisc', 'add', 'dev', 'lo', 'root',
                                 'softmq', 'help'], fake_ack=True)
    why = []
    if rc != 1:
        why.append('exit %d, expected 1 (tc convention for help)' % rc)
    if not err.startswith('Usage: ... softmq [ flows NUMBER ] [ depth PACKETS ]'
                          ' [ quantum BYTES ]\n                  [ bands 1|3 ]'
                          ' [ key flow|cpu ]\n                  [ limit PACKETS ]'
                          ' [ memory_limit BYTES ]\n                  [ codel |'
                          ' nocodel ] [ target TIME ] [ interval TIME ]\n'
                          '                  [ ecn | noecn ] [ ce_threshold'
                          ' TIME|off ]\n'):
        why.append('usage synopsis missing or wrong')
    # the synopsis only, as fq_codel's: what each option means is the man
    # page's
    if len(err.splitlines()) != 5:
        why.append('usage is %d lines, expected the 5 of the synopsis' %
                   len(err.splitlines()))
    if sent:
        why.append('tc sent netlink messages:\n' + sent)
    result(not why, '%s help prints the usage' % tc.label,
           '\n'.join(why) + '\nstderr:\n' + err)
    # help anywhere stops parsing, even after a bad value would have
    rc, out, err, sent = tc.run(['qdisc', 'add', 'dev', 'lo', 'root',
                                 'softmq', 'flows', '8', 'help'],
                                fake_ack=True)
    result(rc == 1 and err.startswith('Usage: ... softmq') and not sent,
           '%s "flows 8 help" prints the usage' % tc.label, err + sent)


def check_good(tc):
    for cmd, flags in CMDS:
        cases = GOOD_CASES if cmd == 'add' else GOOD_CASES[-1:]
        for words, want in cases:
            name = '%s %s: %s softmq %s -> [%s]' % (tc.label, cmd, cmd,
                                                   ' '.join(words), want)
            rc, out, err, sent = tc.run(['qdisc', cmd, 'dev', 'lo', 'root',
                                         'softmq'] + words, fake_ack=True)
            msgs = [line for line in sent.splitlines()
                    if line.startswith('send type=36 ')]
            why = []
            if rc != 0:
                why.append('exit %d, expected 0' % rc)
            if len(msgs) != 1:
                why.append('expected one RTM_NEWQDISC, got:\n' + sent)
            else:
                m = re.match(r'send type=36 flags=0x([0-9a-f]+) parent=0x'
                             r'ffffffff kind=softmq nested=(\d) opts=(\S*)$',
                             msgs[0])
                if not m:
                    why.append('unexpected message: ' + msgs[0])
                else:
                    if int(m.group(1), 16) != flags:
                        why.append('flags 0x%s, expected 0x%04x' %
                                   (m.group(1), flags))
                    if m.group(2) != '1':
                        why.append('TCA_OPTIONS without NLA_F_NESTED')
                    if m.group(3) != want:
                        why.append('options [%s], expected [%s]' %
                                   (m.group(3), want))
            if err:
                why.append('stderr: ' + err)
            result(not why, name, '\n'.join(why))


def usec_text(us):
    """A time as tc's sprint_time() prints it ("%.3g" of s, ms or us)."""
    if us >= 1000000:
        return '%.3gs' % (us / 1e6)
    if us >= 1000:
        return '%.3gms' % (us / 1e3)
    return '%dus' % us


def size_text(sz):
    """A size as tc's sprint_size() prints it (Mb, Kb within 1 Kb, 16 b)."""
    for unit, name, slack in ((1 << 20, 'Mb', 1024), (1 << 10, 'Kb', 16)):
        if sz >= unit and abs(unit * round(sz / unit) - sz) < slack:
            return '%g%s' % (round(sz / unit), name)
    return '%db' % sz


def expected_text(e, stats):
    o = e['opts']
    key = o['key'] if isinstance(o['key'], str) else str(o['key'])
    mem = size_text(o['memory_limit'])
    line = ('qdisc softmq %s dev lo root refcnt 2 flows %d depth %d '
            'quantum %d bands %d key %s limit %dp memory_limit %s' %
            (e['handle'], o['flows'], o['depth'], o['quantum'], o['bands'],
             key, o['limit'], mem))
    # as fq_codel: "target 5ms interval 100ms ecn", nocodel when AQM is off
    if o.get('codel') == 0:
        line += ' nocodel'
    for k in ('target', 'interval'):
        if k in o:
            line += ' %s %s' % (k, usec_text(o[k]))
    if o.get('ecn'):
        line += ' ecn'
    if o.get('ce_threshold', mkmsg.CE_OFF) != mkmsg.CE_OFF:
        line += ' ce_threshold %s' % usec_text(o['ce_threshold'])
    lines = [line]
    if stats:
        x = e['xstats']
        names = list(mkmsg.PRINTED)
        # one line each: drops and memory, paths, CoDel and new flows, rings
        for part in (names[:5], names[5:11], names[11:17], names[17:]):
            lines.append('  ' + ' '.join('%s %d' % (mkmsg.PRINTED[n], x[n])
                                         for n in part))
    return lines


def expected_json_opts(e):
    """The options object tc -j must print, in this order."""
    out = {}
    for k in mkmsg.OPTS:
        if k not in e['opts']:
            continue
        v = e['opts'][k]
        if k == 'key':
            v = v if isinstance(v, str) else str(v)
        elif k in mkmsg.BOOL_OPTS:
            v = bool(v)
        elif k == 'ce_threshold' and v == mkmsg.CE_OFF:
            continue
        if k == 'ecn' and not v:
            continue        # as fq_codel: only when set
        out[k] = v
    return out


def check_print(tc, dump):
    names = list(mkmsg.PRINTED)
    keys = [mkmsg.PRINTED[n] for n in names]
    for stats in (False, True):
        args = (['-s'] if stats else []) + ['qdisc', 'show']
        rc, out, err, sent = tc.run(args, dump=dump)
        text = [line.rstrip() for line in out.splitlines()]
        why = [] if rc == 0 and not err else ['exit %d stderr %s' % (rc, err)]
        for e in mkmsg.EXPECT:
            want = expected_text(e, stats)
            try:
                i = text.index(want[0])
            except ValueError:
                why.append('missing line: ' + want[0])
                continue
            if stats:
                # the tc core prints Sent/backlog lines between options and xstats
                got = text[i + 1:i + 8]
                for w in want[1:]:
                    if w not in got:
                        why.append('missing xstats line: ' + w)
            elif any('drop_overlimit' in t for t in text):
                why.append('xstats printed without -s')
        result(not why, '%s tc %s prints options%s in synopsis order' %
               (tc.label, ' '.join(args), ' and xstats' if stats else ''),
               '\n'.join(why) + '\nstdout:\n' + out)

    for flags in (['-j'], ['-j', '-s'], ['-j', '-p', '-s'], ['-p', '-j']):
        stats = '-s' in flags
        rc, out, err, sent = tc.run(flags + ['qdisc', 'show'], dump=dump)
        why = [] if rc == 0 and not err else ['exit %d stderr %s' % (rc, err)]
        try:
            data = json.loads(out)
        except ValueError as ex:
            result(False, '%s tc %s qdisc show is valid JSON' %
                   (tc.label, ' '.join(flags)), '%s\n%s' % (ex, out))
            continue
        keysets = set()
        for e in mkmsg.EXPECT:
            q = [d for d in data if d.get('handle') == e['handle']]
            if len(q) != 1:
                why.append('qdisc %s not found once' % e['handle'])
                continue
            q = q[0]
            if q.get('kind') != 'softmq':
                why.append('kind %r' % q.get('kind'))
            o = q.get('options', {})
            wopts = expected_json_opts(e)
            if list(o) != list(wopts):
                why.append('options keys %s, expected %s in that order' %
                           (list(o), list(wopts)))
            for k, want in wopts.items():
                if o.get(k) != want or type(o.get(k)) is not type(want):
                    why.append('options.%s = %r, expected %r' %
                               (k, o.get(k), want))
            present = [k for k in keys if k in q]
            keysets.add(tuple(present))
            if stats:
                if present != keys:
                    why.append('xstats keys %s, expected %s' % (present, keys))
                for n, k in zip(names, keys):
                    if q.get(k) != e['xstats'][n]:
                        why.append('%s = %r, expected %r' %
                                   (k, q.get(k), e['xstats'][n]))
            elif present:
                why.append('xstats printed without -s: %s' % present)
        if len(keysets) > 1:
            why.append('different xstats keys between qdiscs: %s' % keysets)
        result(not why, '%s tc %s qdisc show: valid JSON, same keys, right '
               'values' % (tc.label, ' '.join(flags)),
               '\n'.join(why) + '\nstdout:\n' + out)


def check_class(tc, cdump):
    """tc -s class show: one class per ring, its xstats as fq_codel's."""
    rc, out, err, sent = tc.run(['-s', 'class', 'show', 'dev', 'lo'],
                                dump=None, class_dump=cdump)
    why = [] if rc == 0 and not err else ['exit %d stderr %r' % (rc, err)]
    blocks = re.split(r'^(?=class )', out, flags=re.M)
    blocks = [b for b in blocks if b.startswith('class ')]
    if len(blocks) != len(mkmsg.CLASS_X):
        why.append('%d classes printed, expected %d' %
                   (len(blocks), len(mkmsg.CLASS_X)))
    for minor, cx, _, line in mkmsg.CLASS_X:
        head = 'class softmq 1:%x ' % minor
        b = [x for x in blocks if x.startswith(head)]
        if len(b) != 1:
            why.append('no single block for %s' % head)
            continue
        lines = [t.rstrip() for t in b[0].splitlines()]
        if line not in lines:
            why.append('class 1:%x: missing xstats line %r' % (minor, line))
        if any('drop_overlimit' in t for t in lines):
            why.append('class 1:%x printed as qdisc xstats' % minor)
    if 'cannot parse' in out + err:
        why.append('an empty TCA_OPTIONS is not accepted: ' + err)
    result(not why, '%s tc -s class show prints each ring\'s CoDel state' %
           tc.label, '\n'.join(why) + '\nstdout:\n' + out)
    rc, out, err, sent = tc.run(['class', 'show', 'dev', 'lo'],
                                class_dump=cdump)
    result(rc == 0 and 'band' not in out and out.count('class softmq') ==
           len(mkmsg.CLASS_X), '%s tc class show (no -s) prints no xstats' %
           tc.label, out + err)
    # tc 6.1 prints classes as text only (its print_class has no JSON)
    ver = tuple(int(x) for x in re.findall(r'\d+', tc.label)[:2])
    if ver < (6, 2):
        return
    # every field but pad, in the order the text has them (fq_codel's)
    names = ['band', 'index', 'deficit', 'count', 'lastcount', 'ldelay',
             'dropping', 'drop_next', 'new_flow']
    if sorted(names) != sorted(n for _, n in mkmsg.CFIELDS
                               if n not in ('type', 'pad')):
        result(False, 'class xstats fields known to the test',
               'uapi has %s' % [n for _, n in mkmsg.CFIELDS])
    for flags in (['-j', '-s'], ['-j', '-p', '-s']):
        rc, out, err, sent = tc.run(flags + ['class', 'show', 'dev', 'lo'],
                                    class_dump=cdump)
        why = [] if rc == 0 and not err else ['exit %d stderr %r' % (rc, err)]
        try:
            data = json.loads(out)
        except ValueError as ex:
            result(False, '%s tc %s class show is valid JSON' %
                   (tc.label, ' '.join(flags)), '%s\n%s' % (ex, out))
            continue
        for minor, cx, _, _ in mkmsg.CLASS_X:
            c = [d for d in data if d.get('handle') == '1:%x' % minor]
            if len(c) != 1:
                why.append('class 1:%x not found once' % minor)
                continue
            st = c[0].get('stats', c[0])
            # as fq_codel: dropping (and its drop_next) and new_flow only
            # when set
            want_names = [n for n in names if
                          (n not in ('dropping', 'drop_next') or cx['dropping'])
                          and (n != 'new_flow' or cx['new_flow'])]
            got = [k for k in st if k in names]
            if got != want_names:
                why.append('1:%x keys %s, expected %s' % (minor, got,
                                                          want_names))
            for n in want_names:
                want = bool(cx[n]) if n in ('dropping', 'new_flow') else cx[n]
                if st.get(n) != want or type(st.get(n)) is not type(want):
                    why.append('1:%x %s = %r, expected %r' %
                               (minor, n, st.get(n), want))
        result(not why, '%s tc %s class show: valid JSON, every class xstat' %
               (tc.label, ' '.join(flags)), '\n'.join(why) + '\nstdout:\n' + out)


def check_exports():
    so = os.path.join(PLUGIN_DIR, 'q_softmq.so')
    try:
        p = subprocess.run(['nm', '-D', '--defined-only', so],
                           capture_output=True, text=True)
    except OSError:
        skip('plugin exports', 'nm not found')
        return
    syms = [line.split() for line in p.stdout.splitlines() if line.strip()]
    defined = {s[-1]: s[-2] for s in syms if len(s) >= 2}
    ok = defined.get('softmq_qdisc_util') in ('D', 'B') and len(defined) == 1
    result(ok, 'q_softmq.so exports only a writable softmq_qdisc_util',
           p.stdout)


def check_man():
    if not os.path.exists(MAN):
        result(False, 'man page exists', MAN)
        return
    if shutil.which('groff'):
        p = subprocess.run(['groff', '-man', '-ww', '-z', MAN],
                           capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL='C'))
        result(p.returncode == 0 and not p.stderr.strip(),
               'man page: groff -man -ww -z is silent', p.stderr)
    else:
        result(False, 'man page: groff -man -ww -z', 'groff not installed (make check installs groff-base)')
    if shutil.which('mandoc'):
        p = subprocess.run(['mandoc', '-T', 'lint', '-W', 'warning', MAN],
                           capture_output=True, text=True)
        result(p.returncode == 0 and not (p.stdout + p.stderr).strip(),
               'man page: mandoc -T lint -W warning is silent',
               p.stdout + p.stderr)
    else:
        result(False, 'man page: mandoc -T lint', 'mandoc not installed (make check installs it)')
    text = open(MAN).read()
    missing = [s for s in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'PARAMETERS',
                           'EXAMPLES', 'STATISTICS', 'SEE ALSO', 'AUTHORS')
               if not re.search(r'^\.SH "?%s"?\s*$' % s, text, re.M)]
    missing += [k for k in mkmsg.PRINTED.values() if k not in text]
    result(not missing, 'man page has every section and explains every xstat',
           'missing: %s' % missing)
    missing = [n for _, n in mkmsg.CFIELDS if n not in ('type', 'pad') and n not in text]
    missing += [w for w in ('nocodel', 'noecn', 'target', 'interval',
                            'ce_threshold', 'class show', 'CODEL', '5ms',
                            '100ms', 'new_flow', 'drop_next')
                if w not in text]
    missing += [s for s in ('CODEL AND SPARSE FLOWS',)
                if not re.search(r'^\.SH "?%s"?\s*$' % s, text, re.M)]
    result(not missing, 'man page explains the CoDel options, every class '
           'xstat and CoDel per ring', 'missing: %s' % missing)


def check_install(tcs):
    """make install/uninstall with DESTDIR; the dir must be the one tc uses."""
    dest = tempfile.mkdtemp(prefix='softmq-destdir-')
    p = subprocess.run(['make', '-s', '-C', PLUGIN_DIR, 'install',
                        'DESTDIR=' + dest], capture_output=True, text=True)
    found = sorted(os.path.relpath(os.path.join(d, f), dest)
                   for d, _, fs in os.walk(dest) for f in fs)
    libs = [f for f in found if f.endswith('/tc/q_softmq.so')]
    ok = (p.returncode == 0 and len(found) == 2 and len(libs) == 1 and
          'usr/share/man/man8/tc-softmq.8' in found)
    result(ok, 'make install DESTDIR=... installs q_softmq.so and '
           'tc-softmq.8', p.stdout + p.stderr + '\n'.join(found))
    if libs:
        libdir = '/' + os.path.dirname(libs[0])
        for label, path in tcs:
            if isinstance(path, list):
                continue    # the i386 tc: make install is the host's
            blob = open(path, 'rb').read()
            m = re.search(rb'exec\s+(/\S+)', blob) if blob[:2] == b'#!' else None
            if m:   # the test bed's wrapper script: look at the binary
                blob = open(m.group(1).decode(), 'rb').read()
            dirs = set(m.decode() for m in
                       re.findall(rb'/usr/lib/[\w.-]*/?tc/?(?=\0)', blob))
            result(libdir in dirs or libdir + '/' in dirs,
                   '%s looks for plugins in %s (where make install puts '
                   'q_softmq.so)' % (label, libdir), 'tc has: %s' % dirs)
    p = subprocess.run(['make', '-s', '-C', PLUGIN_DIR, 'uninstall',
                        'DESTDIR=' + dest], capture_output=True, text=True)
    left = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs]
    result(p.returncode == 0 and not left,
           'make uninstall DESTDIR=... removes both', p.stderr + str(left))
    shutil.rmtree(dest, ignore_errors=True)


def main():
    if not os.path.exists(SHIM):
        print('FAIL nlshim.so not built (%s)' % SHIM)
        print('0 passed, 1 failed')
        return 1
    tmp = tempfile.mkdtemp(prefix='softmq-tc-')
    dump = os.path.join(tmp, 'dump.bin')
    cdump = os.path.join(tmp, 'classes.bin')
    ifindex = int(open('/sys/class/net/lo/ifindex').read())
    with open(dump, 'wb') as f:
        f.write(mkmsg.build(ifindex))
    with open(cdump, 'wb') as f:
        f.write(mkmsg.build_classes(ifindex))

    check_exports()
    check_man()
    tcs, missing = find_tcs()
    per_tc = (len(BAD_CASES) + 2 * len(BAD_CASES[::7]) + 2 +
              len(GOOD_CASES) + 2 + 2 + 4 + 2)
    check_install(tcs)
    # Both tc binaries are part of the test bed (tests/testbed/kernels.sh
    # tools fetches tc 6.15): one that is missing is a failure, not a skip.
    for label, why in missing:
        result(False, '%s: all %d tc cases' % (label, per_tc), why)
    for label, path in tcs:
        print('# %s = %s' % (label, ' '.join(path) if isinstance(path, list)
                              else path))
        tc = Tc(label, path, tmp)
        check_help(tc)
        check_bad(tc)
        check_good(tc)
        check_print(tc, dump)
        check_class(tc, cdump)
    shutil.rmtree(tmp, ignore_errors=True)
    print('%d passed, %d failed, %d skipped' %
          (counts['pass'], counts['fail'], counts['skip']))
    return 1 if counts['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
