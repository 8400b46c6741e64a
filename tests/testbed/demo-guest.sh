#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest half of `make demo` (run by tests/demo.sh through vm.sh):
# load softmq, make it the root qdisc of a multi-queue dummy device, push
# pktgen traffic through the full dev_queue_xmit path, show tc -s; the same
# with pfifo_fast; then UDP between two namespaces over veth; unload.
# All addresses are 198.18.0.0/15 (benchmarking range); the VM has no
# network, nothing leaves it.  Numbers are QEMU TCG numbers: only the
# ratio between qdiscs in this one run means anything.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -u
NCPU=$(nproc)
COUNT=${DEMO_COUNT:-20000}
TC=tc
PLUG=""
[ -e "${TC_LIB_DIR:-}/q_softmq.so" ] && PLUG=" (tc plugin: $TC_LIB_DIR/q_softmq.so)"

say() { printf '\n### %s\n' "$*"; }
run() { echo "# $*"; "$@"; }
step() {   # step NAME CMD...: a demo step as a test case
	local name=$1; shift
	if "$@"; then echo "PASS demo-$name"; else echo "FAIL demo-$name: '$*' failed"; return 1; fi
}

cleanup() {
	ip link del dm0 2>/dev/null
	ip netns del demo1 2>/dev/null
	ip netns del demo2 2>/dev/null
	[ -d /proc/net/pktgen ] && echo reset > /proc/net/pktgen/pgctrl 2>/dev/null
	rmmod pktgen 2>/dev/null
	true
}
trap cleanup EXIT

if [ ! -e "${SOFTMQ_KO:-}" ]; then
	echo "FAIL demo-module: sch_softmq.ko was not built for $SOFTMQ_LINE ($SOFTMQ_KO)"
	exit 1
fi

say "kernel $(uname -r), $NCPU vCPUs (QEMU TCG: slow, only ratios count)"
step insmod insmod "$SOFTMQ_KO" || exit 1
grep -q '^sch_softmq ' /proc/modules && echo "sch_softmq loaded$PLUG"

# ---------------------------------------------------------------- pktgen
pktgen_run() {   # pktgen_run: $NCPU threads, COUNT packets each, into dm0
	local c dev
	modprobe pktgen || return 1
	echo reset > /proc/net/pktgen/pgctrl
	for c in $(seq 0 $((NCPU - 1))); do
		dev="dm0@$c"
		echo "rem_device_all" > /proc/net/pktgen/kpktgend_$c
		echo "add_device $dev" > /proc/net/pktgen/kpktgend_$c
		{
			echo "count $COUNT"
			echo "pkt_size 128"
			echo "clone_skb 0"
			echo "xmit_mode queue_xmit"
			echo "dst_min 198.18.1.1"
			echo "dst_max 198.18.1.64"
			echo "udp_src_min 9"
			echo "udp_src_max 9"
			echo "dst_mac 02:00:5e:00:00:02"
			echo "delay 0"
		} | while read -r l; do echo "$l" > "/proc/net/pktgen/$dev"; done
	done
	echo start > /proc/net/pktgen/pgctrl
	for c in $(seq 0 $((NCPU - 1))); do
		printf 'thread %s: ' "$c"
		grep -A1 '^Result' "/proc/net/pktgen/dm0@$c" | tr -s ' \n' ' '
		echo
	done
}

say "dummy device dm0 ($NCPU TX queues), root qdisc softmq"
ip link add dm0 numtxqueues "$NCPU" type dummy
ip link set dm0 up
ip addr add 198.18.0.1/24 dev dm0
step add-softmq run $TC qdisc add dev dm0 root handle 1: softmq || exit 1
run $TC qdisc show dev dm0
say "pktgen: $NCPU threads x $COUNT packets (queue_xmit, 64 flows)"
step pktgen-softmq pktgen_run
run $TC -s qdisc show dev dm0
sent=$($TC -s qdisc show dev dm0 | awk '/Sent/ {print $4; exit}')
step softmq-sent-packets test "${sent:-0}" -gt 0

say "the same with pfifo_fast (Debian's default is fq_codel)"
step replace-pfifo_fast run $TC qdisc replace dev dm0 root handle 1: pfifo_fast
step pktgen-pfifo_fast pktgen_run
run $TC -s qdisc show dev dm0
step del-root run $TC qdisc del dev dm0 root
ip link del dm0

# ---------------------------------------------------------------- veth + UDP
say "UDP over veth between two namespaces, softmq root on the sender"
ip netns add demo1; ip netns add demo2
ip link add v1 numtxqueues "$NCPU" netns demo1 type veth peer name v2 netns demo2
ip -n demo1 addr add 198.18.2.1/24 dev v1; ip -n demo1 link set v1 up
ip -n demo2 addr add 198.18.2.2/24 dev v2; ip -n demo2 link set v2 up
ip -n demo1 link set lo up; ip -n demo2 link set lo up
step veth-softmq run ip netns exec demo1 $TC qdisc add dev v1 root softmq
if command -v iperf3 >/dev/null; then
	ip netns exec demo2 iperf3 -s -D -1 -p 5201 >/dev/null 2>&1
	sleep 1
	step iperf3-udp run ip netns exec demo1 iperf3 -c 198.18.2.2 -u -b 0 -l 512 -P 4 -t 3 -p 5201 -f m
else
	echo "SKIP demo-iperf3-udp: iperf3 not installed"
fi
run ip netns exec demo1 $TC -s qdisc show dev v1
ip netns del demo1; ip netns del demo2
sleep 1

say "unload"
rmmod pktgen 2>/dev/null
step rmmod run rmmod sch_softmq
exit 0
exit
}
