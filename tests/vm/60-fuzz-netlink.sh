#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Netlink fuzz of softmq's RTM_NEWQDISC add/change/replace (tests/fuzz/nlfuzz.py).
#
# Two places softmq can sit: the root of fz0 (NOLOCK path) and child 1:1 of
# an mq root on fz1 (4 TX queues; grafted under mq, NOLOCK cleared: the
# root-lock path).  UDP traffic runs through both while the fuzzer sends
# generated and mutated requests; each one must be refused, or accepted
# with a dump equal to what was asked (the fuzzer's model of the kernel's
# parsing).  After: memory back to baseline, kmemleak clean (KASAN line).
#
# Counts: 3000 requests (normal suite), 20000 with SOFTMQ_FULL=1;
# SOFTMQ_FUZZ_COUNT overrides, SOFTMQ_FUZZ_SEED fixes the seed.
. "$(dirname "$0")/lib.sh"

COUNT=${SOFTMQ_FUZZ_COUNT:-$(n 3000 20000)}
softmq_load || { fail fuzz-netlink "cannot load sch_softmq"; exit 0; }
modprobe dummy 2>/dev/null

cleanup() { ip link del fz0 2>/dev/null; ip link del fz1 2>/dev/null; true; }
trap cleanup EXIT
cleanup
ip link add fz0 type dummy && ip link add fz1 numtxqueues 4 type dummy ||
	{ fail fuzz-netlink "cannot create dummy devices"; exit 0; }
for d in fz0 fz1; do sysctl -qw net.ipv6.conf.$d.disable_ipv6=1; ip link set $d up; done
ip addr add 198.18.0.1/16 dev fz0
ip addr add 198.19.0.1/16 dev fz1
tc qdisc add dev fz1 root handle 1: mq || { fail fuzz-netlink "cannot add mq on fz1"; exit 0; }

# Baseline with the module loaded and the devices up, before any softmq.
base=$(mem_snap)
seed=${SOFTMQ_FUZZ_SEED:-$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')}
t0=$(date +%s)
$PY "$SMQ_FUZZDIR/nlfuzz.py" --dev fz0 --mq-dev fz1 --mq-parent 1:1 \
	--count "$COUNT" --seed "$seed" --traffic --nested-flag optional \
	--log "$SMQ_OUT/nlfuzz.log" > "$SMQ_OUT/nlfuzz.out" 2>&1
rc=$?
sed 's/^/  /' "$SMQ_OUT/nlfuzz.out" | tail -n 40
if [ $rc = 0 ]; then
	pass fuzz-netlink-$COUNT
else
	fail fuzz-netlink-$COUNT "$(grep -m1 -E '^FAIL-DETAIL|Traceback|Error' "$SMQ_OUT/nlfuzz.out" || echo "nlfuzz exited $rc") (seed $seed, replay with SOFTMQ_FUZZ_SEED=$seed)"
fi
note "fuzz: $COUNT requests in $(( $(date +%s) - t0 )) s"

# Leave nothing of softmq behind, then memory must be back.
tc qdisc del dev fz0 root 2>/dev/null
tc qdisc del dev fz1 root 2>/dev/null
tc qdisc add dev fz1 root handle 1: mq
mem_check fuzz-netlink-memory "$base"
kmemleak_scan fuzz-netlink-kmemleak
exit 0
