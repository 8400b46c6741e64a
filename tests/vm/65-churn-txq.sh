#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# txqueuelen and the number of TX queues (ethtool -L on veth) changed while
# pktgen + iperf3 run on all vCPUs through softmq: as the device root
# (shared by all TX queues; with key flow and key cpu) and as mq children
# (queues appear and disappear under mq); at least half of the steps must
# queue (a ring woke during the step).  After: nothing stuck, probe,
# counter identity, memory back to baseline.
#
# Steps: 8 (normal suite), 100 with SOFTMQ_FULL=1, 16 then in an i386 or
# arm64 guest (SOFTMQ_TXQ_STEPS).
. "$(dirname "$0")/lib.sh"

STEPS=${SOFTMQ_TXQ_STEPS:-$(n 8 100 16)}
MAXQ=$((NCPU * 2 < 4 ? 4 : NCPU * 2))
churn_up churn-txq $MAXQ
if ! ethtool -L $DEV tx 1 > /dev/null 2>&1; then
	skip churn-txq "ethtool -L does not work on veth here: $(ethtool -L $DEV tx 1 2>&1)"
	exit 0
fi
ethtool -L $DEV tx $MAXQ
base=$(mem_snap)
tc qdisc replace dev $DEV root handle 2: softmq
need churn-txq "cannot start the load" load_start

RANDOM=11
fails=0 WAKES=0 QUEUED=0 t0=$(date +%s)
for s in $(seq "$STEPS"); do
	case $((s % 4)) in
	1) tc qdisc del dev $DEV root 2>/dev/null; tc qdisc add dev $DEV root handle 2: softmq key flow;;
	2) tc qdisc replace dev $DEV root handle 2: softmq key cpu flows 16;;
	3|0)
		if ! tc qdisc show dev $DEV | grep -q 'qdisc mq 1:'; then
			tc qdisc del dev $DEV root 2>/dev/null
			tc qdisc add dev $DEV root handle 1: mq
			for i in $(seq $MAXQ); do tc qdisc add dev $DEV parent 1:$(printf %x "$i") softmq depth 32; done
		fi;;
	esac || { echo "step $s: qdisc setup failed"; fails=$((fails + 1)); }
	w0=$(ring_wakeups $DEV)
	q=$((1 + RANDOM % MAXQ)) l=$(( (RANDOM % 5 == 0) ? 0 : 1 + RANDOM % 2000 ))
	ethtool -L $DEV tx $q || { echo "step $s: ethtool -L $DEV tx $q failed"; fails=$((fails + 1)); }
	ip link set $DEV txqueuelen $l || { echo "step $s: txqueuelen $l failed"; fails=$((fails + 1)); }
	got=$(ethtool -l $DEV | awk '/^Current/ {c = 1} c && /^TX:/ {print $2; exit}')
	[ "$got" = "$q" ] || { echo "step $s: $DEV has $got TX queues, want $q"; fails=$((fails + 1)); }
	sleep 0.3
	# queued: a ring woke during the step (within 1 s more)
	queued_since $DEV "$w0" && QUEUED=$((QUEUED + 1))
	WAKES=$((WAKES + WAKES_NOW))
	load_keepalive || { echo "step $s: iperf3 died"; fails=$((fails + 1)); }
done
note "churn-txq: $STEPS steps in $(( $(date +%s) - t0 )) s, $QUEUED queued"
churn_result churn-txq steps "$STEPS" $fails $WAKES $QUEUED
ethtool -L $DEV tx $MAXQ
ip link set $DEV txqueuelen 1000
load_stop
# mq children and their drain first, then a softmq root for the identity.
if wait_drain $DEV 10; then pass churn-txq-drained-last; else fail churn-txq-drained-last "packets stuck after the steps"; fi
tc qdisc del dev $DEV root
tc qdisc add dev $DEV root handle 2: softmq
after_load churn-txq
tc qdisc del dev $DEV root
mem_check churn-txq-memory "$base"
exit 0
