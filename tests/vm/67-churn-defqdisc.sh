#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# net.core.default_qdisc=softmq while devices come and go: slowdev devices
# with 1 TX queue (softmq root) and several (mq with softmq children, which
# keep NOLOCK this way) are created, pass traffic, and are destroyed, while
# pktgen + iperf3 load a veth on all vCPUs.  While softmq is the default
# the module must be pinned (rmmod refused), and at least half of the
# devices' softmq must queue (a ring woke).  After: default restored,
# probe, counter identity, memory back to baseline.
#
# Devices: 6 (normal suite), 200 with SOFTMQ_FULL=1, 20 then in an i386 or
# arm64 guest (SOFTMQ_DEV_CYCLES).
. "$(dirname "$0")/lib.sh"

CYCLES=${SOFTMQ_DEV_CYCLES:-$(n 6 200 20)}
churn_up churn-defqdisc
need churn-defqdisc "no slowdev module ($SLOWDEV_KO); the test bed builds it: tests/testbed/build.sh $SMQ_LINE" slowdev_load
old_def=$(sysctl -n net.core.default_qdisc)
SP=/sys/module/slowdev/parameters
old_rate=$(cat $SP/rate_pps)
cleanup() {
	sysctl -qw net.core.default_qdisc="$old_def"
	echo "$old_rate" > $SP/rate_pps
	load_stop; topo_down
	for d in $(ls /sys/class/net | grep '^dq'); do ip link del "$d"; done
	true
}
trap cleanup EXIT
# 5000 pps: the 200 packets each device is sent take 40 ms to leave, so
# its softmq queues (a Python sender outruns that under TCG)
echo 5000 > $SP/rate_pps
base=$(mem_snap)
# Pinned by the default alone: no softmq attached anywhere yet.
refs() { awk '$1 == "sch_softmq" {print $3}' /proc/modules; }
r0=$(refs)
sysctl -qw net.core.default_qdisc=softmq || { fail churn-defqdisc "cannot set default_qdisc=softmq"; exit 0; }
if [ "$r0" != 0 ]; then
	skip churn-defqdisc-pinned "sch_softmq already has $r0 users (an earlier test left a qdisc)"
elif rmmod sch_softmq 2> /dev/null; then
	fail churn-defqdisc-pinned "rmmod succeeded while softmq is the default qdisc (users before: $r0, now: $(refs))"
	softmq_load
else
	pass churn-defqdisc-pinned
fi
tc qdisc replace dev $DEV root softmq
need churn-defqdisc "cannot start the load" load_start

fails=0 WAKES=0 QUEUED=0 t0=$(date +%s)
for c in $(seq "$CYCLES"); do
	d=dq$c q=$([ $((c % 2)) = 1 ] && echo 1 || echo $TXQ)
	ip link add $d numtxqueues $q type slowdev || { fails=$((fails + 1)); continue; }
	sysctl -qw net.ipv6.conf.$d.disable_ipv6=1
	ip link set $d arp off
	ip link set $d up
	ip addr add 198.20.$((c % 250)).1/24 dev $d
	kinds="$(tc qdisc show dev $d | grep -c '^qdisc mq ') mq, $(tc qdisc show dev $d | grep -c '^qdisc softmq ') softmq"
	if [ $q = 1 ]; then want="0 mq, 1 softmq"; else want="1 mq, $q softmq"; fi
	[ "$kinds" = "$want" ] || { echo "device $d ($q TX queues): qdiscs '$kinds', want '$want'"; fails=$((fails + 1)); }
	$PY - $d 198.20.$((c % 250)) <<'EOF' || { echo "device $d: send failed"; fails=$((fails + 1)); }
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 25, sys.argv[1].encode())
for i in range(200):
    s.sendto(b"d" * 100, ("%s.%d" % (sys.argv[2], 2 + i % 200), 9 + i))
EOF
	# queued: a ring of the new device's softmq woke (within 1 s)
	queued_since $d 0 && QUEUED=$((QUEUED + 1))
	WAKES=$((WAKES + WAKES_NOW))
	# every other device goes away with packets still queued
	[ $((c % 4)) = 0 ] && ip link set $d down
	ip link del $d || fails=$((fails + 1))
	load_keepalive || true
	[ $fails -gt 10 ] && break
done
note "churn-defqdisc: $c devices in $(( $(date +%s) - t0 )) s, $QUEUED queued"
churn_result churn-defqdisc devices "$CYCLES" $fails $WAKES $QUEUED
sysctl -qw net.core.default_qdisc="$old_def"
load_stop
after_load churn-defqdisc
tc qdisc del dev $DEV root
mem_check churn-defqdisc-memory "$base"
exit 0
