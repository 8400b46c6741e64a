#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "tc qdisc change" of the geometry (flows, depth, bands, key, quantum)
# while traffic flows through softmq, applied by one smq.py batch process
# (netlink, exact pacing).  Traffic: python UDP flows with per-flow
# sequence numbers (flows.py) plus pktgen (one thread per CPU, 4 flows each).
#
#   change-geometry  veth0, key flow, senders moving between CPUs every 50
#                    packets: flows/depth/bands/quantum changed 8 times
#   change-key       veth0, key flow <-> cpu 4 times (senders pinned: under
#                    key cpu a flow that changes CPU has no order promise);
#                    make check: on the lines quick-plan names for
#                    50-change-traffic.sh:key
#   change-stress    veth0, 40 geometry changes 50 ms apart
#   change-backlog   sd0 (slowdev, 3000 pps): every change finds the old
#                    table still holding packets; a change within 100 ms of
#                    the previous may be refused with EBUSY
#   change-locked    sd0, softmq as an htb leaf (NOLOCK cleared) with a
#                    backlog: geometry changes never make its dequeue
#                    return NULL with packets queued (htb's
#                    "non-work-conserving" warning), the leaf drains
# For each: every change applied or refused with EBUSY and an extack
# message and the dump unchanged; the final dump is the last applied
# configuration; no flow reordered or duplicated at the device's transmit
# tap; exactly enqueued (clsact egress counter) == sent + dropped + backlog
# == what the senders handed over, drops == ENOBUFS + pktgen errors, and
# the tap saw every packet the qdisc sent (when the capture lost none): a
# change loses nothing it accepted.
{ # the whole script is parsed before it runs (edits during a run are harmless)
. "$(dirname "$0")/lib.sh"
suite_start change

# run_changes NAME DEV DST MAC MIGRATE GAP CHANGE...: each CHANGE is a
# comma-separated option list for "smq.py change DEV root ..."
run_changes() {
	local name=$1 dev=$2 dst=$3 mac=$4 mig=$5 gap=$6; shift 6
	local res=$SMQ_OUT/$name nchg=$#
	ina tc qdisc del dev "$dev" root 2>/dev/null
	ina tc qdisc del dev "$dev" clsact 2>/dev/null
	ina $SMQ add "$dev" root depth 256 || { fail "$name" "add"; return; }
	egress_counter_on ina "$dev" || { fail "$name" "clsact"; return; }
	local c
	{
		echo "sleep 0.8"
		for c in "$@"; do echo "change $dev root ${c//,/ }"; echo "sleep $gap"; done
		echo "sleep 0.3"
	} > "$res.batch"
	# pktgen and python paced to a few kpps: enough to keep rings busy,
	# few enough to capture and analyse every packet under TCG
	PG_DELAY=400000 pg_setup ina "$dev" "$dst" "$mac" 0 300 || { fail "$name" "pktgen"; return; }
	cap_start "$INA" "$dev" "$res.pcap" udp || { fail "$name" "tcpdump"; return; }
	$INA $FLOWS send --dst "$dst" --flows 16 --procs 4 --cpus "$CPUS" --migrate "$mig" \
		--duration 120 --pps 1000 --size 64,500,1200 > "$res.send.json" &
	local spid=$!
	pg_start "$INA"
	ina $SMQ batch < "$res.batch" > "$res.changes.json"
	kill -TERM $spid; wait $spid
	pg_stop "$INA"
	wait_backlog_zero ina "$dev" root 10     # what is queued still passes the tap
	cap_stop "$res.pcap"; local capdrop=$CAP_DROP
	$FLOWS analyze "$res.pcap" > "$res.json"

	local applied busy other last why=""
	applied=$(jq -s '[.[] | select(.rc == 0)] | length' "$res.changes.json")
	busy=$(jq -s '[.[] | select(.rc == 16)] | length' "$res.changes.json")
	other=$(jq -rs '[.[] | select(.rc != 0 and .rc != 16) | "\(.cmd): rc \(.rc) \(.msg)"] | join("; ")' "$res.changes.json")
	[ -z "$other" ] || why="$why; $other"
	local bad_busy
	bad_busy=$(jq -rs '[.[] | select(.rc == 16 and (.before != .after or .msg == ""))] | length' "$res.changes.json")
	[ "$bad_busy" -eq 0 ] || why="$why; $bad_busy EBUSY refusals changed the dump or gave no message"
	# every change answered, at least a quarter applied (EBUSY only where
	# a backlog keeps the previous table draining)
	[ $((applied + busy)) -eq "$nchg" ] || why="$why; $((applied + busy)) of $nchg changes answered 0 or EBUSY"
	[ $((applied * 4)) -ge "$nchg" ] || why="$why; only $applied of $nchg changes applied"
	last=$(jq -rs '[.[] | select(.rc == 0)] | last | .cmd' "$res.changes.json")

	local ok nob pgs pge enq pk dr ql r1 cd
	ok=$(jqv "$res.send.json" .ok); nob=$(jqv "$res.send.json" .enobufs)
	read -r pgs pge <<< "$(pg_stats ina "$dev")"
	enq=$(egress_count ina "$dev")
	read -r pk dr ql r1 cd <<< "$(ina $SMQ get "$dev" stats.packets stats.drops stats.qlen xstats.reconfigs xstats.drop_codel)"
	note "$name: $applied changes applied, $busy refused busy; python ok $ok enobufs $nob; pktgen $pgs/$pge; clsact $enq; capture lost $capdrop; reconfigs $r1; final $(ina $SMQ get "$dev" options)"
	[ "$ql" -eq 0 ] || why="$why; backlog $ql never drained (stuck packets?)"
	[ $((pk + dr + ql)) -eq "$enq" ] || why="$why; sent $pk + dropped $dr + backlog $ql != enqueued $enq"
	[ $((ok + nob + pgs + pge)) -eq "$enq" ] || why="$why; senders handed over $((ok + nob + pgs + pge)) != enqueued $enq"
	[ "$dr" -eq $((nob + pge + cd)) ] || why="$why; drops $dr != ENOBUFS $nob + pktgen errors $pge + codel $cd"
	[ "$(jqv "$res.send.json" '.errors | length')" -eq 0 ] || why="$why; sender errors $(jq -c .errors "$res.send.json")"
	rings_used ina "$dev" || why="$why; the rings carried nothing ($RINGS_NOTE): the changes met no queued packet"
	note "$name: $RINGS_NOTE"
	local ro
	ro=$(jq '.reorders + .pg_reorders + .dups + .pg_dups' "$res.json")
	[ "$ro" -eq 0 ] || why="$why; $ro packets reordered/duplicated at the tap: $(jq -c '[.flows | to_entries[] | select(.value.reorders + .value.dups > 0) | {(.key): [.value.reorders, .value.dups]}] | add' "$res.json" | cut -c1-300)"
	if [ "$capdrop" = 0 ]; then
		local seen=$(( $(jqv "$res.json" .pkts) + $(jqv "$res.json" .pg_pkts) ))
		[ "$seen" -eq "$pk" ] || why="$why; the tap saw $seen packets, the qdisc sent $pk"
	else
		note "$name: capture lost $capdrop packets: tap count not compared"
	fi
	# the final dump is the last applied configuration
	if [ -n "$last" ] && [ "$last" != null ]; then
		local opts w v
		opts=$(ina $SMQ get "$dev" options)
		set -- ${last#change "$dev" root }
		while [ $# -ge 2 ]; do
			w=$1 v=$2; shift 2
			[ "$(echo "$opts" | jq -r ".$w")" = "$v" ] ||
				why="$why; final options $opts lack $w $v (last applied: $last)"
		done
	fi
	if [ -n "$why" ]; then fail "$name" "${why#; }"
	else pass "$name" "$applied applied, $busy busy; enqueued $enq = sent $pk + dropped $dr; $(jqv "$res.json" .pkts) + $(jqv "$res.json" .pg_pkts) packets in order"; fi
	ina tc qdisc del dev "$dev" clsact
}

# change_locked: softmq as an htb leaf on sd0 (grafted under a classful
# parent: NOLOCK cleared, producers serialised by the root lock) while
# its geometry changes under traffic a little below the class's rate, so
# every packet is enqueued into the new table and dequeued at once.  Each
# change must mark the old table unreachable at swap time: until a change
# waited a grace period for that, a dequeue in between found the old table
# empty but not unreachable and returned NULL with the packet queued, and htb said
# so ("qdisc_warn_nonwc": "is non-work-conserving?").
change_locked() {
	local name=change-locked why="" c rc applied=0 busy=0 w0 w1 s0 s1 spid
	ina tc qdisc del dev sd0 root 2>/dev/null
	ina tc qdisc add dev sd0 root handle 1: htb default 1 &&
		ina tc class add dev sd0 parent 1: classid 1:1 htb rate 4mbit &&
		ina $SMQ add sd0 parent 1:1 depth 256 || { fail $name "htb + softmq leaf setup"; return; }
	w0=$(dmesg | grep -c 'non-work-conserving')
	$INA $FLOWS send --dst 198.18.1.2 --flows 4 --procs 2 --cpus "$CPUS" \
		--duration 60 --pps 150 --size 500 > "$SMQ_OUT/$name.send.json" &
	spid=$!
	sleep 1
	s0=$(ina $SMQ get sd0 1:1 stats.packets)
	for c in depth,128 flows,64 bands,1 depth,64,bands,3 flows,1024 depth,256 flows,16 depth,32; do
		ina $SMQ change sd0 parent 1:1 ${c//,/ } 2> "$SMQ_OUT/$name.err"
		rc=$?
		if [ $rc = 0 ]; then applied=$((applied + 1))
		elif grep -q 'still draining' "$SMQ_OUT/$name.err"; then busy=$((busy + 1))
		else why="$why; change $c: rc $rc $(cat "$SMQ_OUT/$name.err")"; fi
		sleep 0.3
	done
	s1=$(ina $SMQ get sd0 1:1 stats.packets)
	kill -TERM $spid 2>/dev/null; wait $spid   # on a slow kernel it may have ended
	wait_backlog_zero ina sd0 1:1 10 || why="$why; the leaf never drained: $(ina $SMQ get sd0 1:1 stats.qlen xstats.draining)"
	w1=$(dmesg | grep -c 'non-work-conserving')
	[ "$w1" -eq "$w0" ] || why="$why; $(dmesg | grep 'non-work-conserving' | tail -n 1)"
	[ "$applied" -ge 4 ] || why="$why; only $applied of 8 changes applied"
	[ $((s1 - s0)) -ge 500 ] || why="$why; only $((s1 - s0)) packets passed during the changes: the case did not test"
	ina tc qdisc del dev sd0 root
	if [ -n "$why" ]; then fail $name "${why#; }"
	else pass $name "$applied applied, $busy busy, $((s1 - s0)) packets through during them; dequeue never came back empty-handed"; fi
}

ns_setup || { fail change-setup "veth/netns"; exit 0; }
MAC_B=$(ip -n $NS_B -j link show veth1 | jq -r '.[0].address')
ns_sink_on || { fail change-setup "sink"; exit 0; }

run_changes change-geometry veth0 $IP_B "$MAC_B" 50 0.4 \
	flows,16 depth,1024 flows,1 bands,1 bands,3,depth,16 flows,256,depth,64 \
	quantum,300 flows,1024,quantum,1514
part_runs 50-change-traffic.sh:key &&
	run_changes change-key veth0 $IP_B "$MAC_B" 0 0.5 \
		key,cpu key,flow key,cpu,bands,1 key,flow,bands,3
stress=()
for i in $(seq 20); do stress+=(flows,16,depth,32 flows,64,depth,128); done
run_changes change-stress veth0 $IP_B "$MAC_B" 50 0.05 "${stress[@]}"
ina tc qdisc del dev veth0 root

# backlog: slowdev in smq_a
if slowdev_load rate_pps=3000 fifo_len=8; then
	ina ip link add sd0 type slowdev && ina ip addr add 198.18.1.1/24 dev sd0 &&
		ina ip link set sd0 up
	run_changes change-backlog sd0 198.18.1.2 "$(ina cat /sys/class/net/sd0/address)" 0 0.25 \
		flows,16 depth,128 bands,1 flows,1024,bands,3 key,cpu depth,64 key,flow \
		flows,64,quantum,500
	change_locked
	ina ip link del sd0
	rmmod slowdev
else
	fail change-backlog "insmod slowdev failed"
fi
ns_teardown
if out=$(softmq_unload 2>&1); then pass change-rmmod; else fail change-rmmod "$out"; fi
exit 0
}
