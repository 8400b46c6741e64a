#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the code quoted in model/*.pml still says what it quotes.

  /* H:nnn text */   text must be on line nnn of include/softmq_ring.h
  /* H: text */      text must be somewhere in include/softmq_ring.h
  /* Q: text */      text must be somewhere in src/sch_softmq.c
Whitespace runs compare equal.  --fix rewrites moved H: line numbers when the
quoted text is found exactly once elsewhere.  A quote whose text is on
several lines (a barrier, "return false;") is moved by the shift of the
quote nearest to it in the file's old numbering whose text is on one line
only, to the occurrence nearest that place: even when its old line still
holds the same text, which after a shift is another occurrence (another
function's barrier).  Prints PASS/FAIL/SKIP lines.
"""
import os, re, sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, '..', '..'))
models = [os.path.join(here, 'model', f) for f in ('softmq.pml', 'rwc.pml')]
hdr = os.path.join(root, 'include', 'softmq_ring.h')
qdisc = os.path.join(root, 'src', 'sch_softmq.c')
fix = '--fix' in sys.argv

norm = lambda s: ' '.join(s.split())
pat = re.compile(r'/\*\s*([HQ]):(\d*)\s+(.*?)\s*\*/')
hlines = [norm(l) for l in open(hdr).read().split('\n')]
qtext = norm(open(qdisc).read()) if os.path.exists(qdisc) else None

bad, nh, nq = [], 0, 0
for model in models:
    if not os.path.exists(model):
        continue
    name = os.path.basename(model)
    text = open(model).read()
    moved = {}
    ambiguous = []
    anchors = []	# (old line, shift) of quotes whose text is on one line
    for m in pat.finditer(text):
        kind, num, quote = m.group(1), m.group(2), norm(m.group(3))
        if kind == 'Q':
            nq += 1
            if qtext is not None and quote not in qtext:
                bad.append('%s: Q: %r not in src/sch_softmq.c' % (name, quote))
            continue
        nh += 1
        where = [i + 1 for i, l in enumerate(hlines) if quote in l]
        if not where:
            bad.append('%s: H:%s %r not in include/softmq_ring.h' % (name, num, quote))
        elif not num:
            continue
        elif len(where) == 1:
            anchors.append((int(num), where[0] - int(num)))
            if int(num) == where[0]:
                continue
            if fix:
                moved[m.start()] = (m.group(0), m.group(0).replace('H:' + num, 'H:%d' % where[0], 1))
            else:
                bad.append('%s: H:%s %r is now at line %d (make -C tests/ring model-map-fix)'
                           % (name, num, quote, where[0]))
        elif fix:
            ambiguous.append((m, num, quote, where))
        elif int(num) not in where:
            bad.append('%s: H:%s %r is now at line %s (make -C tests/ring model-map-fix)'
                       % (name, num, quote, ','.join(map(str, where))))
    # A quote found on several lines: the occurrence nearest to where the
    # nearest one-line quote (in the old numbering) says its old line went.
    for m, num, quote, where in ambiguous:
        if not anchors:
            if int(num) not in where:
                bad.append('%s: H:%s %r is now at line %s (no one-line quote to go by)'
                           % (name, num, quote, ','.join(map(str, where))))
            continue
        shift = min(anchors, key=lambda a: abs(a[0] - int(num)))[1]
        best = min(where, key=lambda w: abs(w - (int(num) + shift)))
        if best != int(num):
            moved[m.start()] = (m.group(0), m.group(0).replace('H:' + num, 'H:%d' % best, 1))
    if moved:
        for start in sorted(moved, reverse=True):
            old, new = moved[start]
            text = text[:start] + new + text[start + len(old):]
        open(model, 'w').write(text)
        print('# model-map: renumbered %d H: quotes in %s' % (len(moved), name))
for b in bad:
    print('#   ' + b)
if bad:
    print('FAIL model-map: %d of %d quotes out of date' % (len(bad), nh + nq))
    sys.exit(1)
print('PASS model-map: %d header quotes match include/softmq_ring.h' % nh)
if qtext is None:
    print('SKIP model-map-qdisc: src/sch_softmq.c not present')
else:
    print('PASS model-map-qdisc: %d quotes match src/sch_softmq.c' % nq)
