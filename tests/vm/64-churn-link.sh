#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Link flaps with packets queued: a slowdev device (tests/modules/slowdev,
# slower than its senders, so softmq holds a backlog) is taken down/up and
# its carrier off/on (both reset the qdisc with packets in its rings),
# alternately with softmq as root and as mq children, while UDP floods it
# and pktgen + iperf3 load a softmq-rooted veth on all vCPUs.  After: all
# devices drain, probes leave, exact counter identity on the veth and on
# both slow devices (with spills and over-limit drops), memory back.
#
# Flaps: 3 (normal suite: about 7 s each under TCG), 200 with
# SOFTMQ_FULL=1, 20 then in an i386 or arm64 guest (SOFTMQ_LINK_FLAPS).
. "$(dirname "$0")/lib.sh"

FLAPS=${SOFTMQ_LINK_FLAPS:-$(n 3 200 20)}
churn_up churn-link
need churn-link "no slowdev module ($SLOWDEV_KO); the test bed builds it: tests/testbed/build.sh $SMQ_LINE" slowdev_load
SP=/sys/module/slowdev/parameters
old_rate=$(cat $SP/rate_pps) old_fifo=$(cat $SP/fifo_len)
cleanup() {
	# shellcheck disable=SC2086
	[ -n "${FLOOD:-}" ] && { kill $FLOOD 2>/dev/null; wait $FLOOD 2>/dev/null; }
	load_stop; topo_down
	ip link del sl0 2>/dev/null; ip link del sl1 2>/dev/null
	echo "$old_rate" > $SP/rate_pps; echo "$old_fifo" > $SP/fifo_len
}
trap cleanup EXIT
# 200 pps while flapping: a Python flood outruns that even on a debug
# kernel under TCG with every vCPU busy, so each flap finds a backlog.
# The identity checks after the flaps run at 2000 pps.
echo 200 > $SP/rate_pps
echo 8 > $SP/fifo_len
ip link add sl0 type slowdev && ip link add sl1 numtxqueues $TXQ type slowdev ||
	{ fail churn-link "cannot create slowdev devices"; exit 0; }
for d in sl0 sl1; do
	sysctl -qw net.ipv6.conf.$d.disable_ipv6=1
	ip link set $d arp off; ip link set $d up
done
ip addr add 198.18.0.1/16 dev sl0
ip addr add 198.19.0.1/16 dev sl1
# 16 flows x 3 bands x 64: a backlog the drain checks empty in seconds.
tc qdisc replace dev sl0 root softmq flows 16 depth 64
tc qdisc replace dev sl1 root handle 1: mq
for i in $(seq $TXQ); do tc qdisc replace dev sl1 parent 1:$(printf %x "$i") softmq flows 16 depth 64; done
tc qdisc replace dev $DEV root softmq
base=$(mem_snap)
need churn-link "cannot start the load" load_start
$PY "$SMQ_FUZZDIR/flood.py" sl0 198.18 --procs 1 &
FLOOD=$!
$PY "$SMQ_FUZZDIR/flood.py" sl1 198.19 --procs 1 &
FLOOD="$FLOOD $!"
sleep 1

queued=0 fails=0 t0=$(date +%s)
for i in $(seq "$FLAPS"); do
	d=$([ $((i % 2)) = 1 ] && echo sl0 || echo sl1)
	# Wait (up to 2 s) for the flood to refill the rings the last flap
	# reset; a flap that finds none still runs but does not count.
	for _ in $(seq 20); do
		[ "$(softmq_qlen $d)" -gt 0 ] && { queued=$((queued + 1)); break; }
		sleep 0.1
	done
	if [ $(((i / 2) % 2)) = 0 ]; then
		ip link set $d down && ip link set $d up || fails=$((fails + 1))
	else
		ip link set $d carrier off && sleep 0.05 && ip link set $d carrier on || fails=$((fails + 1))
	fi
	tc qdisc show dev $d | grep -q '^qdisc softmq' || { echo "flap $i: softmq gone from $d"; fails=$((fails + 1)); }
	load_keepalive || true
	sleep 0.1
done
note "churn-link: $FLAPS flaps in $(( $(date +%s) - t0 )) s, $queued with packets queued in softmq"
# shellcheck disable=SC2086
kill $FLOOD 2>/dev/null; wait $FLOOD 2>/dev/null; FLOOD=""
echo 2000 > $SP/rate_pps
churn_result churn-link flaps "$FLAPS" $fails
if [ $queued -ge $((FLAPS / 2)) ]; then pass churn-link-with-backlog
else fail churn-link-with-backlog "only $queued of $FLAPS flaps had packets queued: the test did not test"; fi
for d in sl0 sl1; do
	if wait_drain $d 10; then pass churn-link-$d-drained; else fail churn-link-$d-drained "packets stuck after the flaps"; fi
	dst=$([ $d = sl0 ] && echo 198.18.0.2 || echo 198.19.0.2)
	if out=$($PY "$SMQ_FUZZDIR/probe.py" $d $dst --limit-ms "$PROBE_MS"); then pass churn-link-$d-probe; note "$out"
	else fail churn-link-$d-probe "$out"; fi
done
load_stop
after_load churn-link
# Exact identity on the slow devices too, where softmq really holds a
# backlog, spills beyond a 4-slot ring and drops at its limit (flows 1
# depth 4 limit 200 on sl0; sl1: mq of softmq children, counted through
# mq).
tc qdisc change dev sl0 root softmq flows 1 depth 4 limit 200
identity churn-link-sl0-identity sl0 198.18.0.2 02:00:00:00:00:02
identity churn-link-sl1-identity sl1 198.19.0.2 02:00:00:00:00:02
ip link del sl0; ip link del sl1
tc qdisc del dev $DEV root
mem_check churn-link-memory "$base"
exit 0
