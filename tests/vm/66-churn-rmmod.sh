#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module unload under load: with softmq attached (as root, or as mq
# children) rmmod must fail and change nothing (same qdisc, same handle,
# packets still flowing); after delete rmmod must succeed, insmod again,
# and softmq must work again.  pktgen + iperf3 run through the veth all
# the time.  After: probe, counter identity, memory (module memory
# included: VmallocUsed) back to baseline.
#
# Cycles: 6 (normal suite), 100 with SOFTMQ_FULL=1, 10 then in an i386 or
# arm64 guest (SOFTMQ_RMMOD_CYCLES).
. "$(dirname "$0")/lib.sh"

CYCLES=${SOFTMQ_RMMOD_CYCLES:-$(n 6 100 10)}
churn_up churn-rmmod
# Every other softmq user must be gone for rmmod to work at all.
if [ "$(sysctl -n net.core.default_qdisc)" = softmq ]; then
	fail churn-rmmod "net.core.default_qdisc is softmq (left by an earlier test)"; exit 0
fi
refs() { awk '$1 == "sch_softmq" {print $3}' /proc/modules; }
[ "$(refs)" = 0 ] || { fail churn-rmmod "sch_softmq has $(refs) users before the test (an earlier test left a qdisc)"; exit 0; }
# Baseline with the module not loaded.
rmmod sch_softmq || { fail churn-rmmod "initial rmmod failed"; exit 0; }
base=$(mem_snap)
need churn-rmmod "insmod failed" softmq_load
need churn-rmmod "cannot start the load" load_start

fails=0 WAKES=0 t0=$(date +%s)
for c in $(seq "$CYCLES"); do
	if [ $((c % 2)) = 1 ]; then
		tc qdisc replace dev $DEV root handle 1: softmq || { echo "cycle $c: add failed"; fails=$((fails + 1)); }
	else
		tc qdisc replace dev $DEV root handle 1: mq
		for i in $(seq $TXQ); do tc qdisc add dev $DEV parent 1:$(printf %x "$i") softmq || fails=$((fails + 1)); done
	fi
	before=$(tc qdisc show dev $DEV)
	p0=$(qword "$($QSTAT $DEV)" packets)
	if out=$(rmmod sch_softmq 2>&1); then
		echo "cycle $c: rmmod succeeded with softmq attached"; fails=$((fails + 1))
		softmq_load
		break
	fi
	sleep 0.2
	after=$(tc qdisc show dev $DEV)
	p1=$(qword "$($QSTAT $DEV)" packets)
	[ "$before" = "$after" ] || { echo "cycle $c: failed rmmod changed the qdiscs: [$before] -> [$after]"; fails=$((fails + 1)); }
	[ "$p1" -gt "$p0" ] || { echo "cycle $c: no packets sent after the failed rmmod ($p0 -> $p1)"; fails=$((fails + 1)); }
	WAKES=$((WAKES + $(ring_wakeups $DEV)))
	tc qdisc del dev $DEV root || fails=$((fails + 1))
	out=$(rmmod sch_softmq 2>&1) || { echo "cycle $c: rmmod after delete failed: $out (refs $(refs))"; fails=$((fails + 1)); }
	softmq_load || { echo "cycle $c: insmod failed"; fails=$((fails + 1)); break; }
	load_keepalive || true
	[ $fails -gt 10 ] && break
done
note "churn-rmmod: $c cycles in $(( $(date +%s) - t0 )) s"
churn_result churn-rmmod cycles "$CYCLES" $fails $WAKES

tc qdisc replace dev $DEV root handle 1: softmq || fail churn-rmmod-works-again "softmq cannot be attached after the reloads"
load_stop
after_load churn-rmmod
tc qdisc del dev $DEV root
rmmod sch_softmq || fail churn-rmmod-final "final rmmod failed"
mem_check churn-rmmod-memory "$base"
softmq_load
exit 0
