#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run tdc.py over softmq's cases with one tc binary; print PASS/FAIL lines.

    tdcrun.py --tdc-dir DIR --tc TC --lib TC_LIB_DIR --ip IP --cases FILE
              --out DIR --label LABEL

Called by run.sh (see there).  Works with the tdc.py of linux 6.1 and 6.12:

  * tdc runs every command with env=ENVIR from tdc_config_local.py, so a
    private copy of the tc-testing dir gets one that passes TC_LIB_DIR and
    LD_BIND_NOW=1 and sets $TC and $IP (the linux-source tree is never
    written to);
  * tdc stops the whole run at the first setup or teardown that fails and
    marks every later case "skipped"; those cases are run again in a new
    tdc run, until each case has a verdict of its own;
  * the verdicts are read from tdc's TAP file.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CONFIG = '''# Written by softmq's tests/tdc/tdcrun.py.
import os

# tdc runs every command with env=ENVIR: keep ours, point tc at the plugin.
ENVIR = dict(os.environ)
ENVIR['TC_LIB_DIR'] = %(lib)r
ENVIR['LD_BIND_NOW'] = '1'

EXTRA_NAMES = {'TC': %(tc)r, 'IP': %(ip)r}
'''

# tdc.py raises RLIMIT_NOFILE to 1048576 and dies where that is not allowed
# (a container); clamp to the hard limit there and change nothing else.
SITECUSTOMIZE = '''import resource
_setrlimit = resource.setrlimit
def _clamped(which, limits):
    try:
        _setrlimit(which, limits)
    except (ValueError, OSError):
        hard = resource.getrlimit(which)[1]
        _setrlimit(which, tuple(min(v, hard) for v in limits))
resource.setrlimit = _clamped
'''

TAP_RE = re.compile(r'(not )?ok \d+ (\S+) - (.*?)(?: # skipped - (.*))?$')


def parse_tap(path):
    """{id: None (passed) | ['why', ...] (failed) | ('skip', reason)}"""
    res, cur = {}, None
    if not os.path.exists(path):
        return res
    for line in open(path, errors='replace').read().splitlines():
        m = TAP_RE.match(line)
        if m:
            cur = m.group(2)
            if m.group(4) is not None:
                res[cur] = ('skip', m.group(4))
            elif m.group(1):
                res[cur] = []
            else:
                res[cur] = None
        elif cur and isinstance(res.get(cur), list) and line.strip():
            if not line.strip().startswith('Commands executed'):
                res[cur].append(line.strip())
    return res


def main():
    ap = argparse.ArgumentParser()
    for a in ('tdc-dir', 'tc', 'lib', 'ip', 'cases', 'out', 'label'):
        ap.add_argument('--' + a, required=True)
    ap.add_argument('--timeout', type=int, default=1800)
    args = ap.parse_args()

    cases = json.load(open(args.cases))
    work = tempfile.mkdtemp(prefix='softmq-tdc-')
    tdc = os.path.join(work, 'tdc')
    shutil.copytree(args.tdc_dir, tdc, symlinks=True,
                    ignore=shutil.ignore_patterns('tc-tests', '__pycache__',
                                                  'tdc_config_local.py',
                                                  'test-results.*'))
    os.makedirs(os.path.join(tdc, 'tc-tests'), exist_ok=True)
    with open(os.path.join(tdc, 'tdc_config_local.py'), 'w') as f:
        f.write(CONFIG % dict(lib=args.lib, tc=args.tc, ip=args.ip))
    shim = os.path.join(work, 'pyshim')
    os.makedirs(shim)
    with open(os.path.join(shim, 'sitecustomize.py'), 'w') as f:
        f.write(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1', PYTHONPATH=shim)

    verdict = {}
    pending = [c['id'] for c in cases]
    run = 0
    while pending:
        run += 1
        batch = [c for c in cases if c['id'] in pending]
        cfile = os.path.join(work, 'cases-%d.json' % run)
        with open(cfile, 'w') as f:
            json.dump(batch, f, indent=4)
        tap = os.path.join(args.out, 'tdc-%s-%d.tap' % (args.label, run))
        log = os.path.join(args.out, 'tdc-%s-%d.log' % (args.label, run))
        if os.path.exists(tap):
            os.unlink(tap)
        with open(log, 'w') as lf:
            try:
                p = subprocess.run([sys.executable, 'tdc.py', '-f', cfile,
                                    '--format', 'tap', '--outfile', tap],
                                   cwd=tdc, env=env, stdout=lf,
                                   stderr=subprocess.STDOUT,
                                   timeout=args.timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc = 'timeout'
        print('# tdc %s run %d: %d cases, tdc.py exited %s, log %s' %
              (args.label, run, len(batch), rc, log))
        sys.stdout.flush()
        res = parse_tap(tap)
        progress, again = False, []
        for cid in pending:
            r = res.get(cid)
            if isinstance(r, tuple) and 'previous' in r[1]:
                again.append(cid)          # tdc gave up before this case
                continue
            if cid not in res:
                # no line at all: tdc died; retry unless it died at once
                again.append(cid)
                continue
            verdict[cid] = r
            progress = True
        if not progress:
            for cid in again:
                verdict[cid] = ['no result from tdc (see %s)' % log]
            break
        pending = again

    npass = nfail = 0
    for c in cases:
        name = 'tdc %s %s %s' % (args.label, c['id'], c['name'])
        r = verdict.get(c['id'], ['no result from tdc'])
        if r is None:
            npass += 1
            print('PASS ' + name)
            continue
        nfail += 1
        if isinstance(r, tuple):
            why = 'skipped by tdc: ' + r[1]
        else:
            why = ' | '.join(r) or 'failed'
        print('FAIL %s: %s' % (name, why[:700]))
    print('# tdc %s: %d passed, %d failed' % (args.label, npass, nfail))
    with open(os.path.join(args.out, 'tdc-%s.count' % args.label), 'w') as f:
        f.write('%d %d\n' % (npass, nfail))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
