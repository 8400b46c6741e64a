#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# softmq lifecycle, both key modes: insmod; add as root on a dummy, a veth
# and a 4-queue veth; show (options = defaults, CoDel's included, xstats
# size = uapi struct, no ring allocated and no class while idle); change
# each parameter (and all at once, the extremes, empty options,
# ce_threshold set and back off); replace (same kind, to and from
# pfifo_fast); a table of bad values on change and on add (refused, an
# extack message naming the attribute or pointing at it, dumps identical
# before/after, also when the bad attribute follows good ones); delete;
# module refcount back to 0; the tc plugin (tc 6.1 and 6.15) for the same
# steps, CoDel's times and flags included; rmmod refused while an instance
# exists, rmmod, add fails while unloaded, reload.  Netlink via tests/vm/lib/smq.py.
{ # the whole script is parsed before it runs (edits during a run are harmless)
. "$(dirname "$0")/lib.sh"
require_vm lifecycle
trap smq_cleanup EXIT
# Nothing but the test may send on the new devices (lazy ring allocation
# is checked on idle instances).
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
$PY "$SMQ_VMDIR/lib/lifecycle.py"
rc=$?
mod_loaded sch_softmq && rmmod sch_softmq
exit $rc
}
