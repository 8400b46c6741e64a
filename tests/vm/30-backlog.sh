#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# softmq with a real backlog: root of sd0, a slowdev (tests/modules/slowdev:
# transmits rate_pps packets/s from an 8-packet FIFO and stops its queue
# when that is full), in namespace smq_a, route 198.18.1.0/24.  What left
# the qdisc is read on sd0's transmit tap (tcpdump -Q out / AF_PACKET).
#
#   fair-flow        DRR byte fairness, key flow, flows 1000 (not a power
#                    of two): 3 backlogged flows of
#                    1442, 442 and 106-byte frames, each within 10 % of
#                    a third of the bytes sent while all three were queued
#                    (per-packet round robin would give 73/22/5 %)
#   fair-flow-cursor the same run: softmq_cursor_dequeue() (the cursor
#                    ring's next packet without the round robin's walk)
#                    gave >= half of the packets sent (a return probe;
#                    about 85 % expected: a visit's packets but its first)
#   fair-cpu         key cpu: the same between two CPUs (one flow pinned
#                    to each, 1442 vs 106-byte frames)
#   fair-refill      a UDP GSO sender that refills its ring right after
#                    each pop against a backlogged flow: half the bytes each
#   fair-refill-late the same, key cpu, the refilling sender alone first
#                    (its ring retired at each pop) and the other joining
#   fair-refill-laps, fair-refill-late-laps  the same runs:
#                    softmq_ring_refill() (an entry probe) runs at most 3
#                    times a skb dequeued (both rings tens of quanta in
#                    debt: the rounds that only refill are taken at once)
#   prio-<key>       bands 3: while a prio 6 flow (band 0) is backlogged
#                    >= 90 % of the packets leaving are its; before it
#                    starts, prio 0 (band 1) gets >= 90 % against prio 1
#                    (band 2); prio-bands1: with bands 1 the prio 6 flow
#                    gets no such precedence (the check can tell), judged
#                    on >= 500 packets as the bands 3 cases are
#   spill-<key>      one ring (flows 1 / a pinned CPU) of depth 16, limit
#                    2000, blasted: it spills (spilled > 0, ring_hiwat >
#                    16), drop_overlimit +
#                    drop_overmemory + drop_nomem == ENOBUFS at the
#                    senders, qdisc drops == those + drop_codel (CoDel at
#                    dequeue, not seen by senders), enqueued (clsact) ==
#                    sent + dropped + backlog once drained;
#                    spill-<key>-cursor: softmq_cursor_dequeue() gave
#                    >= a quarter of them (a third expected: 1042-byte
#                    packets, quantum 1514, the walk takes the one after
#                    each refill; key flow's one ring included, whose
#                    WOKE bit no pass takes (the shortcut's test leaves
#                    it out: woke_mask), and which a reset once left
#                    with its look for woken rings pending for ever:
#                    clsact's graft resets the root)
#   spill-flow-bands3-cursor  flows 1, bands 3, quantum 30000: 30
#                    prio 6 packets into a 200 pps device (about 20
#                    queue in band 0, less than a quantum: its ring
#                    wakes, drains and is retired without a refill, its
#                    WOKE bit set), then the spill's blast in band 1:
#                    the shortcut gives >= half of it (about 28 packets
#                    a quantum, the walk takes the first).  At ba94681
#                    the refill took only its own band's bit: band 0's
#                    stayed set and turned the shortcut off everywhere
#                    (0 %)
#   burst-<mode>-<key>-codel<0|1>  one flow's back-to-back burst of 800
#                    1000-byte frames (one pktgen thread) into softmq with
#                    its defaults (depth 64), under a 10 Mbit tbf (locked
#                    mode) and as the root of a 1250 pps slowdev (NOLOCK):
#                    none refused, spilled > 0 and ring_hiwat > 64, pktgen
#                    without errors, sent + CoDel drops == 800 (make
#                    check: the half burst 1 runs; make check-full: all)
#   linkdown-<key>   ~1000 packets queued, carrier off: the qdisc is reset
#                    (backlog 0), what it freed counted as dropped
#                    (enqueued == sent + dropped + backlog, drops > 0),
#                    skbuff_head_cache objects back to the level before
#                    the traffic (no leak); two geometry changes while
#                    down: the old table is forgotten at once (draining 0, no
#                    EBUSY); carrier on: a packet leaves within 10 ms
#   delete-<key>     ~1000 packets queued, qdisc deleted, twice over:
#                    skbuff_head_cache objects back within 8 of the level
#                    before the first (a leak of 4 skbs per instance fails)
#   devdel-<key>     the same with the device deleted
#   gso-bypassed     UDP GSO through a backlogged queue: xstats.bypassed
#                    (in the core's packet unit, segments) stays < 1/4 of
#                    the packets sent
#   gso-refill-<flows1|alone>  one UDP GSO sender, backlogged, 43 KB
#                    skbs against an MTU quantum, its ring the band's
#                    only one (flows 1) or the only one marked of 1024:
#                    softmq_ring_refill() (an entry probe) runs at most
#                    3 times a skb (2 expected: 28 before, a round of
#                    the lap a quantum), at least once every other skb,
#                    with ring_hiwat >= 2 (the ring backlogged in debt)
#   stuck-<key>      12 single packets, each after an idle period that
#                    follows a burst (a backlog built and drained),
#                    alternating CPUs: none lost, none as late as a stuck
#                    one (100 ms), the 90th percentile out of the qdisc
#                    (tap) and of the device (slowdev loop=1) within 10 ms
# make check runs the key cpu cases (fair-cpu and every *-cpu) on the lines
# tests/vm/quick-plan names for 30-backlog.sh:cpu, the fair-*, prio-* and
# gso-refill-* cases (the DRR and the bands: softmq's own code, the same
# on every kernel; about 50 s a line) on those it names for
# 30-backlog.sh:shares;
# make check-full everywhere.  The fair-* and prio-* cases run on the
# Debian lines only: the sanitizer kernels are too slow under TCG to keep
# the rings backlogged.
{ # the whole script is parsed before it runs (edits during a run are harmless)
. "$(dirname "$0")/lib.sh"
suite_start backlog
[ -e "$SLOWDEV_KO" ] || { fail backlog-slowdev "no $SLOWDEV_KO"; exit 0; }
RATE=2000
# The fair-* and prio-* senders are Python processes sharing two TCG
# vCPUs with tcpdump: to keep every ring backlogged, the 106-byte flow has
# to refill its ring at ~3/4 of the device's packet rate, the prio 6 flow
# at all of it.  At 2000 pps that sat at the senders' limit on 7.2-rt (CI:
# the small flows' rings ran dry and the 1442-byte flow got 50 % of the
# bytes; the prio 6 flow, with 256 KiB of send buffer, sent 1332
# packets/s and got 61 % while "backlogged").  1000 pps and 1 MB of send
# buffer per flow (about a second of backlog even for the small frames)
# leave them a 2x margin; the windows still hold > 2000 (fair) and > 1000
# (prio) packets.
SHARE_RATE=1000 SHARE_SNDBUF=1048576
# The prio 6 sender alone must outpace the device: in an arm64 guest (TCG
# translating another ISA) it handed over 842 packets/s and band 0 got
# 68 %.  500 pps there still gives its window 750 packets (500 needed).
PRIO_RATE=$SHARE_RATE
case $SMQ_LINE in *-arm64) PRIO_RATE=500;; esac
IP_D=$SD_DST
KEYS=flow
part_runs 30-backlog.sh:cpu && KEYS="flow cpu"

sd_diag() {    # one line: why is nothing leaving sd0?
	echo "carrier $(ina cat /sys/class/net/sd0/carrier 2>&1)," \
		"operstate $(ina cat /sys/class/net/sd0/operstate 2>&1);" \
		"slowdev: $(ina ethtool -S sd0 2>&1 | awk 'NR > 1 { printf "%s%s ", $1, $2 }')" \
		"qdisc: $(ina $SMQ get sd0 kind stats xstats 2>&1 | tr -d '"' | cut -c1-400)"
}

# cursor_on NAME: count the packets softmq_cursor_dequeue() gives from
# now on; cursor_check NAME SENT MIN_PCT: stop counting, and PASS NAME if
# it gave at least MIN_PCT % of SENT (the qdisc's packets sent, read just
# before).  A kernel without kprobe events: SKIP.
CURSOR_OK=0
cursor_on() {
	CURSOR_OK=0
	kret_on cursor softmq_cursor_dequeue && CURSOR_OK=1
}
cursor_check() {
	local name=$1 sent=$2 min=$3 got calls
	if [ "$CURSOR_OK" != 1 ]; then
		skip "$name" "no kprobe events (return probe on softmq_cursor_dequeue refused)"
		return
	fi
	echo 0 > $TRACEFS/events/smqtest/cursor/enable
	got=$(kret_count cursor)
	# its calls, NULL returns included: the why of a failure
	calls=$(kprobe_hits cursor)
	kprobe_off cursor
	if ! [[ $sent =~ ^[0-9]+$ ]] || [ "$sent" -eq 0 ]; then
		fail "$name" "the qdisc sent '$sent' packets"
	elif [ $((got * 100)) -ge $((sent * min)) ]; then
		pass "$name" "$got of $sent packets sent ($((got * 100 / sent)) %) by the shortcut"
	else
		fail "$name" "the shortcut gave $got of $sent packets sent ($((got * 100 / sent)) %, want >= $min %) in ${calls:-?} calls; trace: $(sed -n 's/^# entries-in-buffer/entries-in-buffer/p' $TRACEFS/trace)"
	fi
}

# refill_on: count softmq_ring_refill()'s calls from now on (an entry
# probe); refill_check NAME SKBS MAX: stop counting, and PASS NAME if
# there were at least SKBS / 2 (rings out of credit: a backlog in debt)
# and at most MAX a skb.  A kernel without kprobe events: SKIP.
REFILL_OK=0
refill_on() {
	REFILL_OK=0
	kcall_on refill sch_softmq:softmq_ring_refill && REFILL_OK=1
}
refill_check() {
	local name=$1 skbs=$2 max=$3 calls
	if [ "$REFILL_OK" != 1 ]; then
		skip "$name" "no kprobe events (entry probe on softmq_ring_refill refused)"
		return
	fi
	calls=$(kprobe_hits refill)
	kprobe_off refill
	if ! [[ $calls =~ ^[0-9]+$ ]] || ! [[ $skbs =~ ^[0-9]+$ ]] || [ "$skbs" -lt 20 ]; then
		fail "$name" "want a call count and >= 20 skbs: '$calls' calls, '$skbs' skbs"
	elif [ $((calls * 2)) -lt "$skbs" ]; then
		fail "$name" "no backlog in debt: $calls refills for $skbs skbs"
	elif [ "$calls" -le $((skbs * max)) ]; then
		pass "$name" "$calls refills for $skbs skbs dequeued ($((calls * 10 / skbs / 10)).$((calls * 10 / skbs % 10)) a skb)"
	else
		fail "$name" "$calls refills for $skbs skbs dequeued, want <= $max a skb"
	fi
}

# share_check NAME JSON FLOWS TOLERANCE SENDJSON: every flow's byte share
# within TOLERANCE (relative) of 1/n.  A failure also prints what each
# sender handed the qdisc: a flow that fell short there had an empty ring.
share_check() {
	local name=$1 js=$2 flows=$3 tol=$4 sent=$5 n bad=""
	n=$(echo "$flows" | tr ',' '\n' | wc -l)
	local summary
	summary=$(jq -r --argjson n "$n" '.share.flows | to_entries |
		map("\(.key): \((.value.byte_share * 100 * 10 | round) / 10)% of bytes, \(.value.pkts) pkts") | join("; ")' "$js")
	bad=$(jq -r --argjson n "$n" --argjson tol "$tol" '.share.flows | to_entries[] |
		select(((.value.byte_share * $n) - 1 | fabs) > $tol) | .key' "$js")
	local tot
	tot=$(jqv "$js" .share.total_pkts)
	if ! [[ $tot =~ ^[0-9]+$ ]] || [ -z "$summary" ]; then
		fail "$name" "no share analysis ($js: total_pkts '$tot')"
	elif [ "$tot" -lt 1000 ]; then
		fail "$name" "only $tot packets in the measuring window: $summary"
	elif [ -n "$bad" ]; then
		fail "$name" "not within $(awk "BEGIN{print $tol*100}")% of the fair share: $summary; senders: $(jq -c '.flows | map_values(.ok)' "$sent" 2>&1)"
	else
		pass "$name" "$summary; window $(jq -c '.share.window | map(. * 100 | round / 100)' "$js") s"
	fi
}

fair_flow() {
	local res=$SMQ_OUT/fair-flow
	# flows 1000: a count that is not a power of two (the hash is scaled)
	sd_setup && slowdev_set rate_pps $SHARE_RATE && slowdev_set loop 0 &&
		sd_qdisc key flow bands 1 depth 1024 flows 1000 ||
		{ fail backlog-fair-flow "setup"; return; }
	cap_start "$INA" sd0 "$res.pcap" udp || { fail backlog-fair-flow "tcpdump"; return; }
	cursor_on
	$INA $FLOWS send --dst $IP_D --flows 3 --procs 3 --cpus "$CPUS" --duration 3 \
		--size 1400,400,64 --sndbuf $SHARE_SNDBUF > "$res.send.json"
	cursor_check backlog-fair-flow-cursor "$(ina $SMQ get sd0 stats.packets)" 50
	cap_stop "$res.pcap"
	$FLOWS analyze "$res.pcap" --share 0,1,2 > "$res.json"
	share_check backlog-fair-flow "$res.json" 0,1,2 0.10 "$res.send.json"
	check backlog-fair-flow-order "$(jqv "$res.json" .reorders) reordered" \
		[ "$(jqv "$res.json" .reorders)" -eq 0 ]
}

fair_cpu() {
	local res=$SMQ_OUT/fair-cpu
	if [ "$NCPU" -lt 2 ]; then skip backlog-fair-cpu "one CPU"; return; fi
	sd_setup && slowdev_set rate_pps $SHARE_RATE && sd_qdisc key cpu bands 1 depth 1024 ||
		{ fail backlog-fair-cpu "setup"; return; }
	cap_start "$INA" sd0 "$res.pcap" udp || { fail backlog-fair-cpu "tcpdump"; return; }
	$INA $FLOWS send --dst $IP_D --flows 2 --procs 2 --cpus 0,1 --duration 3 \
		--size 1400,64 --sndbuf $SHARE_SNDBUF > "$res.send.json"
	cap_stop "$res.pcap"
	$FLOWS analyze "$res.pcap" --share 0,1 > "$res.json"
	share_check backlog-fair-cpu "$res.json" 0,1 0.10 "$res.send.json"
}

# refill_run NAME KEY CPUS0 CPUS1 LEAD: sender 0 refills its ring (send
# buffer 30000), sender 1 keeps its own full; sender 0 starts LEAD s first.
refill_run() {
	local name=$1 key=$2 cpus0=$3 cpus1=$4 lead=$5 res=$SMQ_OUT/${1#backlog-}
	sd_setup && slowdev_set rate_pps $SHARE_RATE && slowdev_set loop 0 &&
		sd_qdisc key "$key" bands 1 depth 1024 quantum 1514 ||
		{ fail "$name" "setup"; return; }
	cap_start "$INA" sd0 "$res.pcap" udp || { fail "$name" "tcpdump"; return; }
	refill_on
	$INA $FLOWS send --dst $IP_D --first 0 --flows 1 --procs 1 --cpus "$cpus0" \
		--duration $((3 + lead)) --size 42000 --gso 1400 --sndbuf 30000 > "$res.send0.json" &
	local p0=$!
	[ "$lead" -eq 0 ] || sleep "$lead"
	$INA $FLOWS send --dst $IP_D --first 1 --flows 1 --procs 1 --cpus "$cpus1" --duration 3 \
		--size 42000 --gso 1400 --sndbuf $SHARE_SNDBUF > "$res.send1.json"
	wait $p0
	# 30 datagrams a skb; the probe counts to here, the backlog's tail
	# included
	wait_backlog_zero ina sd0 root 10
	refill_check "$name-laps" $(( $(ina $SMQ get sd0 stats.packets) / 30 )) 5
	cap_stop "$res.pcap"
	$FLOWS analyze "$res.pcap" --share 0,1 --gso-dport 30000 > "$res.json"
	jq -s '{flows: (.[0].flows + .[1].flows)}' "$res.send0.json" "$res.send1.json" \
		> "$res.send.json"
	share_check "$name" "$res.json" 0,1 0.10 "$res.send.json"
}

# A sender that refills its ring right after each pop (a send buffer of
# about two 42 KB UDP GSO skbs: one in the ring while the one before it
# leaves the device, the next sent as soon as that one is out) against a
# flow that keeps its ring full, both in 1400-byte segments: DRR gives
# each half the bytes.  A ring emptied by a pop while another is marked
# keeps its debt until a visit finds it empty; retired at the pop and
# served as a new flow with a fresh quantum after each refill (8d6e34c,
# reverted), the refilling sender got 67 %.  With one skb in flight it cannot refill before the
# other flow's skb is dequeued, and any scheduler alternates.
fair_refill() {
	refill_run backlog-fair-refill flow "$CPUS" "$CPUS" 0
}

# The same two senders, the refilling one alone for a second before the
# other starts, key cpu with each pinned (the refilling one on CPU 0, ring
# 0, first in every scan).  Alone, its ring may be retired at the pop that
# empties it (softmq_ring_drained()); once the other ring is marked it
# must not be: retired there, it is unknown and first in the next scan
# for new rings, which stops at it (already new in this lap) before the
# other ring is met, and the lap starts at it again.  Mutants, both run
# once by hand: the look at the other rings skipped (4ad31d2, before the
# refill rule): the late flow sent nothing until the first stopped; a
# retire at every pop that empties a ring (as 8d6e34c): the same here,
# and 100 % / 0 % in fair-refill.
fair_refill_late() {
	if [ "$NCPU" -lt 2 ]; then skip backlog-fair-refill-late "one CPU"; return; fi
	refill_run backlog-fair-refill-late cpu 0 1 1
}

prio_run() {   # prio_run NAME KEY BANDS -> writes $SMQ_OUT/NAME.json (band 0 window)
	local name=$1 key=$2 bands=$3 res=$SMQ_OUT/$1
	sd_setup && slowdev_set rate_pps $PRIO_RATE && sd_qdisc key "$key" bands "$bands" depth 1024 ||
		return 1
	cap_start "$INA" sd0 "$res.pcap" udp || return 1
	# flows 1 (prio 0: band 1) and 2 (prio 1: band 2) for 3.5 s; flow 0
	# (prio 6: band 0) from 1.2 s to 2.7 s.  The three sender processes
	# are started first, say when their sockets are ready and wait for
	# their start file: python starts slowly under TCG (on a loaded
	# 7.2-rt once slower than the 2.7 s a fixed sleep gave it, and all
	# three started at once: no "before" window).
	rm -f "$res.go12" "$res.go0" "$res.ready"*
	$INA $FLOWS send --dst $IP_D --first 1 --flows 2 --procs 2 --cpus "$CPUS" --duration 3.5 \
		--size 500 --prio 0,1 --sndbuf $SHARE_SNDBUF --start-file "$res.go12" \
		--ready-file "$res.ready12" > "$res.send12.json" &
	local p12=$!
	$INA $FLOWS send --dst $IP_D --first 0 --flows 1 --procs 1 --cpus "$CPUS" --duration 1.5 \
		--size 500 --prio 6 --sndbuf $SHARE_SNDBUF --start-file "$res.go0" \
		--ready-file "$res.ready0" > "$res.send0.json" &
	local p0=$! i
	for i in $(seq 300); do
		[ -e "$res.ready12.0" ] && [ -e "$res.ready12.1" ] && [ -e "$res.ready0.0" ] && break
		sleep 0.1
	done
	touch "$res.go12"
	sleep 1.2
	touch "$res.go0"
	wait $p0 $p12
	cap_stop "$res.pcap"
	$FLOWS analyze "$res.pcap" --prio 0 > "$res.all.json"
	jq '{share: .prio_busy}' "$res.all.json" > "$res.json"
	jq '{share: .prio_before}' "$res.all.json" > "$res.before.json"
	[ "$(jqv "$res.json" .share)" != null ]
}

prio() {
	local key
	for key in $KEYS; do
		local name=backlog-prio-$key res=$SMQ_OUT/backlog-prio-$key
		if ! prio_run "$name" $key 3; then fail "$name" "setup or run failed"; continue; fi
		local s0 s1 n0
		s0=$(jqv "$res.json" '.share.flows["0"].pkt_share')
		n0=$(jqv "$res.json" '.share.total_pkts')
		s1=$(jqv "$res.before.json" '.share.flows["1"].pkt_share')
		if [ "$n0" -lt 500 ] || [ "$(jqv "$res.before.json" .share.total_pkts)" -lt 300 ]; then
			fail "$name" "too few packets to judge: $n0 while band 0 was busy, $(jqv "$res.before.json" .share.total_pkts) before it (sender timing? $(jq -c '.flows | map_values({first, last})' "$res.all.json"))"
		# Not 100 %: a python sender under TCG leaves gaps in which its
		# ring is empty and the lower band is served.  Measured at
		# 2000 pps: 100 % (6.12), 97.3 % (7.2-rt), and once 61 % on
		# 7.2-rt with the prio 6 sender at 1332 packets/s (hence 1000
		# pps now); without priority (the bands 1 control below) 33 %.
		# 90 % keeps the verdict far from both.
		elif fcmp "$s0 >= 0.90 && $s1 >= 0.90"; then
			pass "$name" "band 0 got $(awk "BEGIN{printf \"%.1f\", $s0*100}")% of $n0 packets while queued; band 1 vs band 2 before: $(awk "BEGIN{printf \"%.1f\", $s1*100}")%"
		else
			fail "$name" "band 0 (prio 6) got only $s0 of $n0 packets while backlogged; band 1 (prio 0) vs band 2 (prio 1) got $s1 before (>= 0.90 expected); the prio 6 sender handed over $(jqv "$res.send0.json" .ok) packets in 1.5 s, the device sends $PRIO_RATE/s"
		fi
	done
	local name=backlog-prio-bands1 res=$SMQ_OUT/backlog-prio-bands1
	local s0 n0 try first=""
	# One more run when the prio 6 flow's window holds too few packets to
	# judge: its sender shares a vCPU with prio 0's (both are process 0
	# of their flows.py), and under TCG it once started sending only when
	# that one had finished (6.12, make check: its first packet 1 ms
	# after prio 0's last).  The verdict itself is not retried.
	for try in 1 2; do
		if ! prio_run "$name" flow 1; then fail "$name" "setup or run failed"; return; fi
		s0=$(jqv "$res.json" '.share.flows["0"].pkt_share')
		n0=$(jqv "$res.json" '.share.total_pkts')
		[[ $n0 =~ ^[0-9]+$ ]] && [ "$n0" -ge 500 ] && break
		first="${first:+$first; }run $try: $(jq -c '.flows | map_values({first, last})' "$res.all.json")"
		note "$name: run $try had ${n0:-no} packets in the prio 6 flow's window"
	done
	# as many packets as the bands 3 case needs: an empty window's share
	# (0, or null read as 0) would pass "< 0.8"
	if ! [[ $n0 =~ ^[0-9]+$ ]] || [ "$n0" -lt 500 ]; then
		fail "$name" "too few packets to judge in two runs: ${n0:-none} while the prio 6 flow was sending (sender timing? $first)"
	else
		check "$name" "with bands 1 the prio 6 flow still got $s0 of $n0 packets (precedence not switched off?)" \
			fcmp "$s0 < 0.8"
	fi
}

spill() {
	local key
	for key in $KEYS; do
		local name=backlog-spill-$key res=$SMQ_OUT/spill-$key
		# limit 2000: drained in about a second at RATE
		local q=(key "$key" depth 16 bands 1 limit 2000)
		[ "$key" = flow ] && q+=(flows 1)
		sd_setup && slowdev_set rate_pps $RATE && sd_qdisc "${q[@]}" ||
			{ fail "$name" "setup"; continue; }
		egress_counter_on ina sd0 || { fail "$name" "clsact"; continue; }
		# key cpu: both senders on CPU 0, so they share its ring
		local cpus=$CPUS
		[ "$key" = cpu ] && cpus=0
		cursor_on
		$INA $FLOWS send --dst $IP_D --flows 4 --procs 2 --cpus "$cpus" --duration 1.5 \
			--size 1000 > "$res.send.json"
		wait_backlog_zero ina sd0 root 5
		cursor_check "$name-cursor" "$(ina $SMQ get sd0 stats.packets)" 25
		local ok nob enq pk dr ql nm cd hw sp ol om why=""
		ok=$(jqv "$res.send.json" .ok); nob=$(jqv "$res.send.json" .enobufs)
		enq=$(egress_count ina sd0)
		read -r pk dr ql nm cd hw sp ol om <<< "$(ina $SMQ get sd0 stats.packets stats.drops stats.qlen \
			xstats.drop_nomem xstats.drop_codel xstats.ring_hiwat \
			xstats.spilled xstats.drop_overlimit xstats.drop_overmemory)"
		[ "$sp" -gt 0 ] || why="$why; nothing spilled although $ok packets were blasted at one 16-slot ring"
		[ "$hw" -gt 16 ] || why="$why; ring_hiwat $hw: the ring never held more than its 16 slots"
		[ "$dr" -eq $((ol + om + nm + cd)) ] || why="$why; qdisc drops $dr != overlimit $ol + overmemory $om + nomem $nm + codel $cd"
		[ $((ol + om + nm)) -eq "$nob" ] || why="$why; overlimit $ol + overmemory $om + nomem $nm != ENOBUFS at the senders $nob"
		[ $((pk + dr + ql)) -eq "$enq" ] || why="$why; sent $pk + dropped $dr + backlog $ql != enqueued $enq"
		[ $((ok + nob)) -eq "$enq" ] || why="$why; senders handed over $((ok + nob)) != enqueued $enq"
		[ "$(jqv "$res.send.json" '.errors | length')" -eq 0 ] ||
			why="$why; sender errors $(jq -c .errors "$res.send.json")"
		if [ -n "$why" ]; then fail "$name" "${why#; }"
		else pass "$name" "enqueued $enq = sent $pk + dropped $dr ($ol over limit, $cd CoDel) + backlog $ql; $sp spilled, hiwat $hw"; fi
	done
}

spill_bands() {
	local name=backlog-spill-flow-bands3-cursor res=$SMQ_OUT/spill-flow-bands3 before woke
	sd_setup && slowdev_set rate_pps 200 &&
		sd_qdisc key flow flows 1 bands 3 depth 16 limit 2000 quantum 30000 ||
		{ fail "$name" "setup"; return; }
	# faster than the device: they queue (an idle qdisc is bypassed)
	$INA $FLOWS send --dst $IP_D --flows 1 --procs 1 --cpus "$CPUS" --count 30 \
		--size 100 --prio 6 > "$res.send0.json"
	wait_backlog_zero ina sd0 root 5
	slowdev_set rate_pps $RATE
	read -r before woke <<< "$(ina $SMQ get sd0 stats.packets xstats.ring_wakeups)"
	if ! [[ $woke =~ ^[0-9]+$ ]] || [ "$woke" -eq 0 ]; then
		fail "$name" "the prio 6 packets never queued (ring_wakeups '$woke', sent '$before')"
		return
	fi
	cursor_on
	$INA $FLOWS send --dst $IP_D --flows 4 --procs 2 --cpus "$CPUS" --duration 1.5 \
		--size 1000 > "$res.send.json"
	wait_backlog_zero ina sd0 root 5
	cursor_check "$name" "$(( $(ina $SMQ get sd0 stats.packets) - before ))" 50
}

# burst_case MODE KEY CODEL: one flow's back-to-back burst of BURST x 1000-
# byte frames (one pktgen thread on CPU 0, fixed ports, queue_xmit) into
# softmq with its defaults (depth 64): MODE tbf, under a 10 Mbit tbf on a
# fast slowdev (locked mode), or root, as the root of a slowdev sending
# 1250 pps (10 Mbit/s of these frames; NOLOCK).  About 0.65 s of queue.
# Every frame must be admitted (no drop_overlimit, drop_overmemory,
# drop_nomem; pktgen saw no error), the ring must have
# spilled and held more than its slots, and once drained every frame was
# sent or dropped by CoDel at dequeue.
BURST=800
burst_case() {
	local mode=$1 key=$2 codel=$3 name=backlog-burst-$1-$2-codel$3 sel=root
	local q=(key "$key" codel "$codel") why=""
	sd_setup || { fail "$name" "setup"; return; }
	if [ "$mode" = tbf ]; then
		slowdev_set rate_pps 1000000 &&
			ina tc qdisc add dev sd0 root handle 1: tbf rate 10mbit burst 10kb latency 5s &&
			ina $SMQ add sd0 parent 1:1 handle 2: "${q[@]}" ||
			{ fail "$name" "setup: tbf + softmq"; return; }
		sel=2:
	else
		slowdev_set rate_pps 1250 && sd_qdisc "${q[@]}" ||
			{ fail "$name" "setup: softmq root"; return; }
	fi
	PG_FLOWS=0 pg_setup ina sd0 $SD_DST 02:00:00:00:00:02 $BURST 1000 0 ||
		{ fail "$name" "pktgen"; return; }
	ina bash -c 'echo start > /proc/net/pktgen/pgctrl'
	local i ql=1
	for i in $(seq 100); do
		ql=$(ina $SMQ get sd0 $sel stats.qlen)
		[ "$ql" = 0 ] && break
		sleep 0.1
	done
	local pgs pge pk dr nm cd hw sp ol om
	read -r pgs pge <<< "$(pg_stats ina sd0)"
	read -r pk dr nm cd hw sp ol om <<< "$(ina $SMQ get sd0 $sel stats.packets stats.drops \
		xstats.drop_nomem xstats.drop_codel xstats.ring_hiwat \
		xstats.spilled xstats.drop_overlimit xstats.drop_overmemory)"
	pg_clear ina
	[ "$ql" = 0 ] || why="$why; backlog $ql after 10 s"
	[ $((ol + om + nm)) -eq 0 ] ||
		why="$why; refused: overlimit $ol overmemory $om nomem $nm"
	[ "$pgs" -eq $BURST ] && [ "$pge" -eq 0 ] || why="$why; pktgen sent $pgs with $pge errors"
	[ "$sp" -gt 0 ] && [ "$hw" -gt 64 ] ||
		why="$why; spilled $sp, ring_hiwat $hw: the burst never queued beyond the ring's 64 slots"
	[ "$dr" -eq "$cd" ] || why="$why; drops $dr != drop_codel $cd"
	# sd0 may also send the odd IPv6 packet of its own
	[ $((pk + cd)) -ge $BURST ] && [ $((pk + cd)) -le $((BURST + 8)) ] ||
		why="$why; sent $pk + CoDel drops $cd is not the burst of $BURST"
	if [ -n "$why" ]; then fail "$name" "${why#; }"
	else pass "$name" "$BURST admitted, none refused; $sp spilled, ring_hiwat $hw, sent $pk, CoDel dropped $cd"; fi
}

# burst 1|2: a half of the eight cases.  In each, every value of mode, key
# and CoDel meets both values of the other two: half 1 in make check (the
# part burst), half 2 in make check-full (burst-rest).
burst() {
	local c
	if [ "$1" = 1 ]; then
		set -- "tbf flow 1" "tbf cpu 0" "root flow 0" "root cpu 1"
	else
		set -- "tbf flow 0" "tbf cpu 1" "root flow 1" "root cpu 0"
	fi
	# shellcheck disable=SC2086
	for c; do burst_case $c; done
}

# build_backlog N: start senders that keep ~1000+ packets queued in sd0's
# softmq; returns once qlen >= N (fails after 10 s).  Sets BG_PID (the
# senders) and BG_Q (the qlen reached).  Not to be run in $(...): the
# senders' pid must reach stop_backlog.
BG_PID="" BG_Q=0
build_backlog() {
	local want=$1 i v=0
	slowdev_set rate_pps 200
	$INA $FLOWS send --dst $IP_D --flows 4 --procs 2 --cpus "$CPUS" --duration 30 \
		--size 1000 --sndbuf 2097152 > "$SMQ_OUT/bg.json" 2>&1 &
	BG_PID=$!
	for i in $(seq 100); do
		v=$(ina $SMQ get sd0 stats.qlen 2>/dev/null)
		[ "${v:-0}" -ge "$want" ] && break
		sleep 0.1
	done
	BG_Q=${v:-0}
	[ "$BG_Q" -ge "$want" ]
}
stop_backlog() {
	[ -n "$BG_PID" ] && { kill -TERM "$BG_PID" 2>/dev/null; wait "$BG_PID" 2>/dev/null; }
	BG_PID=""
}

# leak_check NAME BEFORE QUEUED [LIMIT]: skb objects back near BEFORE
leak_check() {
	local name=$1 before=$2 queued=$3 after i lim=${4:-}
	# A leak of one skb in 16 of those queued (or 128) fails; quiet runs
	# come back within a few dozen objects (the delta is printed).
	[ -n "$lim" ] || lim=$(( queued / 16 > 128 ? queued / 16 : 128 ))
	for i in 1 2 3 4 5; do
		sleep 0.5
		after=$(skb_objs)
		[ $((after - before)) -lt "$lim" ] && break
	done
	if [ $((after - before)) -lt "$lim" ]; then
		pass "$name" "skbuff_head_cache $before -> $after objects, $queued were queued"
	else
		fail "$name" "skbuff_head_cache objects $before before, $after after $queued packets were queued (leak? limit +$lim)"
	fi
}

queued_then() {   # queued_then KEY WHAT
	local key=$1 what=$2 name=backlog-$2-$1 before q enq
	# codel 0: CoDel would drop a standing queue this old within a few
	# dequeues, and these cases are about what happens to packets queued
	sd_setup && slowdev_set loop 0 && sd_qdisc key "$key" flows 16 depth 1024 codel 0 &&
		egress_counter_on ina sd0 || { fail "$name" "setup"; return; }
	before=$(skb_objs)
	build_backlog 800 || { stop_backlog; fail "$name" "could not queue 800 packets (qlen $BG_Q)"; return; }
	q=$BG_Q
	case $what in
	linkdown)
		# senders stopped first: after carrier off their packets would
		# meet the noop qdisc, counted by clsact but not by softmq
		stop_backlog
		enq=$(egress_count ina sd0)
		local i v=-1 pk dr dr0
		dr0=$(ina $SMQ get sd0 stats.drops)
		ina ip link set sd0 carrier off
		for i in $(seq 40); do
			v=$(ina $SMQ get sd0 stats.qlen); [ "$v" = 0 ] && break; sleep 0.1
		done
		check "$name-reset" "qlen $v 4 s after carrier off with $q queued" [ "$v" = 0 ]
		# what the reset freed is counted as dropped: the identity holds
		read -r pk dr v <<< "$(ina $SMQ get sd0 stats.packets stats.drops stats.qlen)"
		local exact=0
		[ $((pk + dr + v)) -eq "$enq" ] && [ "$dr" -gt "$dr0" ] && exact=1
		check "$name-identity" "enqueued $enq != sent $pk + dropped $dr + backlog $v, or the reset dropped nothing ($dr0 drops before it)" \
			[ $exact = 1 ]
		leak_check "$name-noleak" "$before" "$q"
		# A geometry change while the link is down: the reset left the
		# table idle, so the old one is forgotten at once (no dequeue comes
		# to do it) and the next change is not refused as still draining.
		local err=$SMQ_OUT/$name-change.err d=""
		if ina $SMQ change sd0 root depth 512 2> "$err" &&
		   d=$(ina $SMQ get sd0 xstats.draining) && [ "$d" = 0 ] &&
		   ina $SMQ change sd0 root depth 256 2>> "$err"; then
			pass "$name-change-retires"
		else
			fail "$name-change-retires" "after the reset: draining '${d:-?}', $(tr '\n' ' ' < "$err")"
		fi
		ina ip link set sd0 carrier on
		slowdev_set rate_pps $RATE
		# linkwatch reactivates the qdisc when it sets the operstate:
		# wait for that (bounded), not for a fixed time
		for i in $(seq 50); do
			[ "$(ina cat /sys/class/net/sd0/operstate)" = up ] && break
			sleep 0.1
		done
		sleep 0.2    # dev_activate() comes right after, in the same work
		ina $FLOWS latency --dev sd0 --dst $IP_D --trials 5 --idle 0.05 > "$SMQ_OUT/$name-up.json"
		local mx lost
		mx=$(jqv "$SMQ_OUT/$name-up.json" .max_out_ms); lost=$(jqv "$SMQ_OUT/$name-up.json" .lost)
		if [ "$lost" = 0 ] && fcmp "$mx < 10"; then
			pass "$name-up" "max $mx ms"
		else
			fail "$name-up" "after carrier on: lost $lost of 5, max $mx ms; $(sd_diag)"
		fi
		;;
	esac
	note "$name: $q packets were queued"
}

# Deleting the qdisc, or its device, with 800+ packets queued: LEAK_REPS
# rounds against one skbuff_head_cache baseline taken before the first,
# judged once after the last with LEAK_SLACK objects of slack.  Quiet runs
# come back to the baseline exactly (6.12: 0 above it after each of 4
# rounds, for both; 6 skbs held per round read 6 12 18 24); a leak of k
# skbs per instance ends 2k above it, so with 2 rounds and a slack of 8 a
# leak of 4 skbs per instance fails, where one round against the 128 of
# the other leak checks let 127 pass.  A round costs 8-12 s under TCG
# (4 rounds of both added 50 s a line).  Each round's senders are started
# while the round before builds its backlog (their own ports, waiting on
# a start file), so that a round does not wait for python's start.
LEAK_REPS=2 LEAK_SLACK=8
sd_dev() {     # sd_dev: sd0 again in smq_a (sd_setup without the teardown)
	ina ip link add sd0 type slowdev && ina ip addr add $SD_SRC/24 dev sd0 &&
		ina ip link set sd0 up &&
		ina ip neigh replace $SD_DST lladdr 02:00:00:00:00:02 dev sd0 nud permanent
}
leak_senders() {   # leak_senders ROUND: ready to go on $SMQ_OUT/leak-go.ROUND; sets LEAK_PID
	rm -f "$SMQ_OUT/leak-go.$1"
	$INA $FLOWS send --dst $IP_D --flows 4 --procs 2 --cpus "$CPUS" --duration 30 \
		--size 1000 --sndbuf 2097152 --sport $((21000 + 100 * $1)) \
		--start-file "$SMQ_OUT/leak-go.$1" > "$SMQ_OUT/leak-$1.json" 2>&1 &
	LEAK_PID=$!
}
queued_leak() {   # queued_leak KEY delete|devdel
	local key=$1 what=$2 name=backlog-$2-$1 before="" r q qs="" ds="" tot=0 pid i v
	sd_setup && slowdev_set loop 0 && slowdev_set rate_pps 200 ||
		{ fail "$name-noleak" "setup"; return; }
	leak_senders 1
	for r in $(seq $LEAK_REPS); do
		pid=$LEAK_PID
		# codel 0: CoDel would drop a standing queue this old
		if [ $r -gt 1 ] && [ $what = devdel ]; then
			sd_dev || { kill $pid; fail "$name-noleak" "sd0 again (round $r)"; return; }
		fi
		sd_qdisc key "$key" flows 16 depth 1024 codel 0 ||
			{ kill $pid; fail "$name-noleak" "softmq (round $r)"; return; }
		[ -n "$before" ] || before=$(skb_objs)
		touch "$SMQ_OUT/leak-go.$r"
		[ $r -lt $LEAK_REPS ] && leak_senders $((r + 1))
		v=0
		for i in $(seq 150); do
			v=$(ina $SMQ get sd0 stats.qlen 2>/dev/null)
			[ "${v:-0}" -ge 800 ] && break
			sleep 0.1
		done
		if [ "${v:-0}" -lt 800 ]; then
			kill $pid $LEAK_PID 2>/dev/null
			fail "$name-noleak" "round $r: could not queue 800 packets (qlen $v)"
			return
		fi
		case $what in
		delete)
			# senders stopped first: the default qdisc that replaces
			# softmq would queue their next packets
			kill -TERM $pid; wait $pid
			q=$(ina $SMQ get sd0 stats.qlen)
			ina tc qdisc del dev sd0 root;;
		devdel)
			q=$v
			ina ip link del sd0
			kill -TERM $pid; wait $pid;;
		esac
		qs="$qs $q" tot=$((tot + q)) ds="$ds $(( $(skb_objs) - before ))"
	done
	leak_check "$name-noleak" "$before" "$tot" $LEAK_SLACK
	note "$name: $LEAK_REPS rounds, queued:$qs; skbuff_head_cache objects above the baseline after each:$ds"
}

stuck() {
	local key=$1 name=backlog-stuck-$1 res=$SMQ_OUT/stuck-$1
	sd_setup && slowdev_set rate_pps $RATE && slowdev_set loop 1 && sd_qdisc key "$key" ||
		{ fail "$name" "setup"; return; }
	# Every trial: a burst of 100 (a backlog: the FIFO holds 8), drained
	# long before the probe (0.05 s at 2000 pps; idle 0.3 s).
	ina $FLOWS latency --dev sd0 --dst $IP_D --trials 12 --idle 0.3 --burst 100 --loop \
		--cpus "$CPUS" > "$res.json"
	# A stuck packet waits for the next transmit on the qdisc: here the
	# next trial's burst, 300 ms later, or never (lost after 1 s).  TCG
	# can stall a vCPU for a few ms at any time, so one slow trial is
	# judged by the percentile, the worst one only against the stuck
	# signature.  Measured (6.12): 0.24-0.66 ms to the tap, 0.86-1.43 ms
	# out of the device over 12 trials; allowance: 10 ms at the 90th
	# percentile (the 11th of 12), 100 ms for the worst.
	local mo mi lost slow p90o p90i
	mo=$(jqv "$res.json" .max_out_ms); mi=$(jqv "$res.json" .max_in_ms); lost=$(jqv "$res.json" .lost)
	p90o=$(jq '[.trials[] | .out_ms // 1e9] | sort | .[(length * 9 + 9) / 10 - 1 | floor]' "$res.json")
	p90i=$(jq '[.trials[] | .in_ms // 1e9] | sort | .[(length * 9 + 9) / 10 - 1 | floor]' "$res.json")
	slow=$(jq -c '[.trials[] | select((.out_ms // 1e9) >= 10 or (.in_ms // 1e9) >= 10)]' "$res.json")
	if [ "$lost" != 0 ]; then
		fail "$name" "$lost of 12 single packets did not leave within 1 s: $slow"
	elif ! fcmp "$mo < 100 && $mi < 100"; then
		fail "$name" "a packet waited like a stuck one: max $mo ms to the tap, $mi ms out of the device: $slow"
	elif fcmp "$p90o < 10 && $p90i < 10"; then
		pass "$name" "90th percentile $p90o ms to the tap, $p90i ms out of the device (max $mo, $mi)"
	else
		fail "$name" "slow: 90th percentile $p90o ms to the tap, $p90i ms out of the device: $slow"
	fi
	slowdev_set loop 0
}

# UDP GSO skbs (20 datagrams each) through a backlogged softmq: almost
# nothing can bypass a queue that is never empty, so xstats.bypassed
# (packets, as the core counts them: segments) must stay a small part of
# what was sent; counting dequeued skbs against sent segments made it
# nearly all of it.
gso_bypassed() {
	local name=backlog-gso-bypassed res=$SMQ_OUT/gso
	sd_setup && slowdev_set rate_pps 3000 && sd_qdisc key flow depth 256 ||
		{ fail "$name" "setup"; return; }
	$INA $FLOWS send --dst $IP_D --flows 2 --procs 2 --cpus "$CPUS" --duration 2 \
		--size 20000 --gso 1000 --sndbuf 1048576 > "$res.send.json"
	wait_backlog_zero ina sd0 root 10
	local pk dr byp ok err
	read -r pk dr byp <<< "$(ina $SMQ get sd0 stats.packets stats.drops xstats.bypassed)"
	ok=$(jqv "$res.send.json" .ok); err=$(jq -c .errors "$res.send.json")
	# A dropped GSO skb (CoDel, at 3000 pps behind a backlog of seconds)
	# is one drop and its 20 segments are never sent: a send counts as
	# GSO when its skb left as 10 or more packets or was dropped whole.
	if [ "$ok" -lt 10 ]; then
		fail "$name" "UDP GSO sends failed: ok $ok errors $err"
	elif [ $((pk + 20 * dr)) -lt $((ok * 10)) ]; then
		fail "$name" "sent $pk packets and dropped $dr skbs for $ok GSO sends of 20 segments (not GSO?)"
	else
		check "$name" "bypassed $byp of $pk packets sent through a backlogged queue" \
			[ $((byp * 4)) -lt "$pk" ]
		note "$name: $ok GSO skbs, $pk packets sent, $dr skbs dropped, $byp bypassed"
	fi
}

# One UDP GSO sender (42000-byte skbs of 30 datagrams, 43 KB on the wire
# against an MTU quantum) kept backlogged: each skb leaves its ring some
# 28 quanta in debt.  Alone in its band, the lap's first refill pays it
# all (softmq_ring_refill(), an entry probe counts its calls); before,
# each dequeue went round the band once a quantum, 28 refills and scans
# for every skb.  flows1: the table's one ring; alone: one ring of 1024.
gso_refill() {
	local what=$1 name=backlog-gso-refill-$1 res=$SMQ_OUT/gso-refill-$1 words=""
	[ "$what" = flows1 ] && words="flows 1"
	# codel 0: every skb is dequeued whole (CoDel would drop some
	# behind a backlog of tens of ms), so the sends are the dequeues
	sd_setup && slowdev_set rate_pps 3000 && sd_qdisc key flow $words depth 256 codel 0 ||
		{ fail "$name" "setup"; return; }
	refill_on
	$INA $FLOWS send --dst $IP_D --flows 1 --duration 1.5 \
		--size 42000 --gso 1400 --sndbuf 524288 > "$res.send.json"
	wait_backlog_zero ina sd0 root 10
	local pk dr hw ok
	read -r pk dr hw <<< "$(ina $SMQ get sd0 stats.packets stats.drops xstats.ring_hiwat)"
	ok=$(jqv "$res.send.json" .ok)
	if [ "$ok" -lt 20 ] || [ "$dr" -ne 0 ] || [ "$pk" -lt $((ok * 30)) ] || [ "${hw:-0}" -lt 2 ]; then
		kprobe_off refill
		fail "$name" "want >= 20 GSO skbs of 30 datagrams each sent whole through a backlog: $ok sent, $pk packets left, $dr dropped, ring_hiwat $hw; errors $(jq -c .errors "$res.send.json")"
	else
		refill_check "$name" "$ok" 5
	fi
}

slowdev_load rate_pps=$RATE fifo_len=8 || { fail backlog-slowdev "insmod slowdev failed"; exit 0; }
# Shares and priority need senders that keep every ring backlogged at
# 1000-2000 packets/s: python on a sanitizer kernel under TCG sends a few
# hundred (KASAN: 3.6 % of the bytes for the small-frame flow, its ring
# ran dry).  These run on the Debian lines only (tests/vm/skips).
case $SMQ_LINE in
*-kasan|*-kcsan)
	skip backlog-shares "fair-* and prio-* need senders faster than a sanitizer kernel under TCG";;
*)
	if part_runs 30-backlog.sh:shares; then
		fair_flow
		fair_refill
		fair_refill_late
		case " $KEYS " in *" cpu "*) fair_cpu;; esac
		prio
		spill_bands
		gso_refill flows1
		gso_refill alone
	fi;;
esac
spill
part_runs 30-backlog.sh:burst && burst 1
part_runs 30-backlog.sh:burst-rest && burst 2
gso_bypassed
for key in $KEYS; do
	queued_then $key linkdown
	queued_leak $key delete
	queued_leak $key devdel
	stuck $key
done
ns_teardown
rmmod slowdev
if out=$(softmq_unload 2>&1); then pass backlog-rmmod; else fail backlog-rmmod "rmmod sch_softmq: $out"; fi
exit 0
}
