#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest half of `make demo` (run by tests/demo.sh through vm.sh): load
# softmq, then put softmq, pfifo_fast and fq_codel (Debian's default) one
# after the other as the root qdisc of the same multi-queue dummy device,
# each confirmed by `tc qdisc show` before pktgen drives the same load
# through the full dev_queue_xmit path; check every packet is accounted
# for; print a table of the ratios and a verdict; unload.
# All addresses are 198.18.0.0/15 (benchmarking range); the VM has no
# network, nothing leaves it.  Numbers are QEMU TCG numbers: only the
# ratios between qdiscs in this one run mean anything.
#
#   DEMO_COUNT=N    pktgen packets per thread and run (default 20000)
#   DEMO_ROUNDS=N   interleaved rounds; each qdisc's best counts (default 3)
{ # parsed whole before it runs: editing this file cannot break a running copy
set -u
# shellcheck source=../vm/lib.sh
. "$SOFTMQ_REPO/tests/vm/lib.sh"
COUNT=${DEMO_COUNT:-20000}
ROUNDS=${DEMO_ROUNDS:-3}
KINDS=(softmq pfifo_fast fq_codel)
DEV=smq_demo0

say() { printf '\n### %s\n' "$*"; }
run() { echo "# $*"; "$@"; }
cleanup() {
	pg_stop "" 2>/dev/null
	ip link del $DEV 2>/dev/null
	true
}
trap cleanup EXIT

if [ ! -e "$SMQ_KO" ]; then
	fail demo-module "sch_softmq.ko was not built for $SMQ_LINE ($SMQ_KO)"
	exit 0
fi

say "kernel $(uname -r), $NCPU vCPUs (QEMU TCG: slow, only ratios count)"
if softmq_load; then pass demo-insmod; else fail demo-insmod "insmod $SMQ_KO failed"; exit 0; fi
have_plugin && echo "tc plugin: $SMQ_TC_LIB_DIR/q_softmq.so"

ip link add $DEV numtxqueues "$NCPU" type dummy
# pktgen's packets only: no IPv6 (MLD, router solicitations), no ARP
sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1
ip link set $DEV arp off up
ip addr add 198.18.0.1/24 dev $DEV

# qdisc_counters KIND: "sent dropped backlog" of the root qdisc of KIND
qdisc_counters() {
	tc -s qdisc show dev $DEV root | awk -v k="$1" '
		$1 == "qdisc" { mine = ($2 == k) }
		mine && $1 == "Sent" { s = $4; d = $7; sub(/,/, "", d) }
		mine && $1 == "backlog" { b = $3; sub(/p$/, "", b) }
		END { if (s == "") exit 1; print s, d, b }'
}

# measure KIND: one run of the load with KIND as root; sets PPS, or FAILs.
declare -A BEST DROPS ROUND_DROPS
measure() {
	local k=$1 shown sofar errors sent dropped backlog t0 t1 pps
	PPS=0
	tc qdisc del dev $DEV root 2>/dev/null
	if ! tc qdisc add dev $DEV root handle 1: "$k"; then
		fail "demo-$k-add" "tc qdisc add dev $DEV root handle 1: $k failed"
		return 1
	fi
	# The root really is KIND before anything is measured.
	shown=$(tc qdisc show dev $DEV root | head -n 1)
	case "$shown" in
	"qdisc $k 1: root"*) pass "demo-$k-root" "$shown";;
	*) fail "demo-$k-root" "tc qdisc show says '$shown'"; return 1;;
	esac
	if ! pg_setup "" $DEV 198.18.0.2 02:00:5e:00:00:02 "$COUNT" 128; then
		fail "demo-$k-pktgen" "pktgen setup failed"
		return 1
	fi
	t0=$(date +%s%N)
	pg_start ""; pg_wait
	t1=$(date +%s%N)
	read -r sofar errors < <(pg_stats "" $DEV)
	read -r sent dropped backlog < <(qdisc_counters "$k") || {
		fail "demo-$k-counters" "no Sent line for $k in tc -s qdisc show"
		return 1
	}
	# Every packet pktgen handed to dev_queue_xmit went through this root:
	# sent by it, or dropped and counted by it; nothing is left queued.
	# pktgen counts what the qdisc accepted in sofar (it stops at COUNT)
	# and what it refused in errors, on top.
	if [ "$sofar" -ne $((NCPU * COUNT)) ] || [ $((sent + dropped)) -ne $((sofar + errors)) ] ||
	   [ "$backlog" -ne 0 ]; then
		fail "demo-$k-accounted" "pktgen sent $sofar (errors $errors), $k: sent $sent dropped $dropped backlog $backlog"
		return 1
	fi
	pps=$(( sofar * 1000000000 / (t1 - t0) ))
	pass "demo-$k-accounted" "$sofar packets: sent $sent, dropped $dropped, $pps pps"
	PPS=$pps
	[ "${BEST[$k]:-0}" -ge "$pps" ] || BEST[$k]=$pps
	DROPS[$k]=$(( ${DROPS[$k]:-0} + dropped ))
	ROUND_DROPS[$k,$ROUND]=$dropped
}

say "load: pktgen, $NCPU threads x $COUNT packets of 128 bytes (queue_xmit), into $DEV ($NCPU TX queues); $ROUNDS interleaved rounds"
for r in $(seq "$ROUNDS"); do
	ROUND=$r
	for k in "${KINDS[@]}"; do
		measure "$k"
		echo "round $r: $k $PPS pps"
		if [ "$k" = softmq ] && [ "$r" = 1 ]; then
			run tc -s qdisc show dev $DEV root
		fi
	done
done
tc qdisc del dev $DEV root 2>/dev/null
ip link del $DEV

say "result (best of $ROUNDS rounds; QEMU TCG, $NCPU vCPUs: only the ratios mean anything)"
ok=1
for k in "${KINDS[@]}"; do [ "${BEST[$k]:-0}" -gt 0 ] || ok=0; done
if [ $ok = 1 ]; then
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
	printf '%-12s %10s %14s %12s %8s\n' qdisc kpps "vs pfifo_fast" "vs fq_codel" drops
	for k in "${KINDS[@]}"; do
		printf '%-12s %10s %14s %12s %8s\n' "$k" "$(ratio "${BEST[$k]}" 1000)" \
			"$(ratio "${BEST[$k]}" "${BEST[pfifo_fast]}")x" \
			"$(ratio "${BEST[$k]}" "${BEST[fq_codel]}")x" "${DROPS[$k]}"
	done
	echo "verdict: softmq moved $(ratio "${BEST[softmq]}" "${BEST[pfifo_fast]}")x pfifo_fast's and $(ratio "${BEST[softmq]}" "${BEST[fq_codel]}")x fq_codel's packet rate on this load, every packet accounted for"
	# Drops do not move with TCG's speed the way the rates do: softmq
	# dropping more than pfifo_fast in any round is a bug, and fails.
	worse=""
	for r in $(seq "$ROUNDS"); do
		[ "${ROUND_DROPS[softmq,$r]:-0}" -le "${ROUND_DROPS[pfifo_fast,$r]:-0}" ] ||
			worse+=", round $r: ${ROUND_DROPS[softmq,$r]} against ${ROUND_DROPS[pfifo_fast,$r]}"
	done
	echo "drops: softmq ${DROPS[softmq]}, pfifo_fast ${DROPS[pfifo_fast]}, fq_codel ${DROPS[fq_codel]} in all rounds"
	check demo-drops "softmq dropped more than pfifo_fast in ${worse#, }" [ -z "$worse" ]
	echo "note: these rates move with the host's load (QEMU TCG); the figures that do not are 'make bench MODE=icount' (instructions per packet) and 'make bench MODE=sharing' (lines written by >= 3 CPUs per packet), with its projection to many cores in bench/README.md"
	pass demo-compared "softmq, pfifo_fast and fq_codel each measured"
else
	fail demo-compared "not every qdisc was measured (see above)"
fi

say "unload"
rmmod pktgen 2>/dev/null
check demo-rmmod "rmmod sch_softmq failed" rmmod sch_softmq
exit 0
exit
}
