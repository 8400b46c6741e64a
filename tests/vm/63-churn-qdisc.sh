#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Churn under load: add / change (every parameter) / replace (softmq <->
# pfifo_fast <-> fq_codel) / delete cycles on a veth whose TX queues are
# all busy (pktgen thread per vCPU + iperf3, one TCP stream per vCPU).
# Odd cycles use softmq as the device root (NOLOCK, shared by all TX
# queues), even ones as children of mq (grafted: root-lock path).
# Every tc command must succeed (a geometry change may answer EBUSY while
# the previous geometry still drains: that line retried, counted) and the
# dump after the changes must show them; at least half of the cycles must
# queue (a ring of the cycle's instances woke).  Commands go through tc
# -batch (process start-up dominates under load).  After: nothing stuck,
# probe, exact counter identity, memory back to baseline.
#
# Cycles: 8 (normal suite), 1000 with SOFTMQ_FULL=1, 50 then in an i386
# or arm64 guest (SOFTMQ_CHURN_CYCLES).
. "$(dirname "$0")/lib.sh"

CYCLES=${SOFTMQ_CHURN_CYCLES:-$(n 8 1000 50)}
churn_up churn-qdisc
base=$(mem_snap)
need churn-qdisc "cannot start the load" load_start

# tcb NAME: run the tc batch in $B (tc -force -batch: one process for the
# whole list, under load process start-up dominates).  tc prints a failed
# line's messages, then "Command failed FILE:LINE".  A line refused because
# the previous geometry is still draining (EBUSY, "still draining") is
# retried alone (counted) while that is the answer; any other failure, of
# the batch or of a retry, is printed and counted.
B=/run/smq-churn.batch
tcb() {
	local out line msg cmd i ok n=0
	out=$(tc -force -batch $B 2>&1) && return 0
	while IFS=$'\t' read -r line msg; do
		n=$((n + 1))
		cmd=$(sed -n "${line}p" $B)
		ok=0
		for i in 1 2 3 4 5; do
			case $msg in *'still draining'*) ;; *) break;; esac
			EBUSY=$((EBUSY + 1)); sleep 0.2
			# shellcheck disable=SC2086
			msg=$(tc $cmd 2>&1) && { ok=1; break; }
		done
		[ $ok = 1 ] && continue
		echo "cycle $c ($1): tc $cmd failed: $(printf '%s' "$msg" | head -c 300)"
		fails=$((fails + 1))
	done < <(printf '%s\n' "$out" | awk '/^Command failed .*:[0-9]+$/ {
			n = $NF; sub(/.*:/, "", n); gsub(/\t/, " ", m); print n "\t" m; m = ""; next }
		{ m = m (m == "" ? "" : " ") $0 }')
	if [ $n = 0 ]; then
		echo "cycle $c ($1): tc -batch failed, no failed line named: $(printf '%s' "$out" | head -c 300)"
		fails=$((fails + 1))
	fi
}
RANDOM=7
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
fails=0 EBUSY=0 WAKES=0 QUEUED=0 t0=$(date +%s)
for c in $(seq "$CYCLES"); do
	# Under the cap with 3 bands: flows * pow2(128 + 8 * depth) <= 32 MiB.
	while :; do
		f=$(pick 1 2 16 64 256 1024 4096) d=$(pick 1 8 32 64 256 1024)
		r=1; while [ $r -lt $((128 + 8 * d)) ]; do r=$((r * 2)); done
		[ $((f * r)) -le $((32 << 20)) ] && break
	done
	qn=$(pick 64 300 1514 9000 65536) b=$(pick 1 3) k=$(pick flow cpu)
	if [ $((c % 2)) = 1 ]; then
		parents=(root)
		echo "qdisc add dev $DEV root handle 1: softmq" > $B
	else
		parents=()
		for i in $(seq $TXQ); do parents+=("parent 1:$(printf %x "$i")"); done
		echo "qdisc add dev $DEV root handle 1: mq" > $B
		for p in "${parents[@]}"; do echo "qdisc add dev $DEV $p softmq"; done >> $B
	fi
	for p in "${parents[@]}"; do
		for o in "flows $f" "depth $d" "quantum $qn" "bands $b" "key $k"; do
			echo "qdisc change dev $DEV $p softmq $o"
		done
	done >> $B
	tcb "add+change"
	want="flows $f depth $d quantum $qn bands $b key $k"
	got=$(tc qdisc show dev $DEV | grep -c "softmq .*$want")
	if [ "$got" != ${#parents[@]} ]; then
		echo "cycle $c: $got of ${#parents[@]} softmq qdiscs show '$want':"
		tc qdisc show dev $DEV | sed 's/^/    /'
		fails=$((fails + 1))
	fi
	# queued: a ring of this cycle's fresh instances woke (within 1 s)
	queued_since $DEV 0 && QUEUED=$((QUEUED + 1))
	WAKES=$((WAKES + WAKES_NOW))
	for p in "${parents[@]}"; do
		for o in pfifo_fast fq_codel "softmq flows $f bands $b" pfifo_fast softmq; do
			echo "qdisc replace dev $DEV $p $o"
		done
	done > $B
	echo "qdisc del dev $DEV root" >> $B
	tcb "replace+delete"
	load_keepalive || { echo "cycle $c: iperf3 died: $(tail -n 3 "$SMQ_OUT/iperf3.log")"; fails=$((fails + 1)); }
	[ $fails -gt 10 ] && { echo "too many failures, stopping at cycle $c"; break; }
done
note "churn-qdisc: $c cycles in $(( $(date +%s) - t0 )) s, $QUEUED queued, $EBUSY EBUSY retries, load: pktgen $(pg_stats "" $DEV | cut -d' ' -f1) packets"
churn_result churn-qdisc cycles "$CYCLES" $fails $WAKES $QUEUED

# The checks run on a softmq root that went through one more change.
tc qdisc replace dev $DEV root handle 1: softmq flows 64 depth 64
load_stop
tc qdisc change dev $DEV root softmq flows 256 bands 3
after_load churn-qdisc
tc qdisc del dev $DEV root
mem_check churn-qdisc-memory "$base"
exit 0
