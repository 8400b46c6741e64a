#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CoDel per ring, ECN, sparse flows first and the per-ring classes.
#
#   sparse   sd0 (slowdev) at 500 packets/s under softmq's defaults, 50 UDP
#            flows of 242-byte packets flat out: a DRR lap of the band is
#            about 50 quanta of 6 packets, 600 ms.  Single packets of
#            another flow after idle gaps longer than a lap (its ring
#            wakes each time, and may count as new once a lap) leave
#            within 25 ms, median: served as new flows (in the lap they
#            would wait half of one on average; a probe port whose hash
#            lands in a flood flow's full ring is refused, and another
#            port is tried).  A probe the lap meets while it scans is not
#            counted as new, so new_flow_count only has to grow.  Then
#            CoDel off (change), the device slowed to 1 packet/s and the
#            flood stopped: the class dump lists the backlogged rings,
#            and their packets and bytes add up to the qdisc's backlog,
#            read before and after the dump (the backlog only shrinks
#            then; the qdisc also counts the packet the core may hold
#            requeued, and one may be leaving).
#            After the drain: no flow reordered on the transmit tap,
#            sent + dropped + backlog == enqueued (clsact), and CoDel
#            dropped from the flood's standing queues (codel_drops > 0,
#            counted in the qdisc's drops)
#   ecn      veth between two namespaces, tbf 20 Mbit as root and softmq as
#            its child (a classful parent clears NOLOCK: the locked mode),
#            4 iperf3 TCP flows for 9 s with tcp_ecn=1 on the sender:
#            ecn_mark > 0, no CoDel drop, CE-marked packets on veth0's
#            transmit tap; with tcp_ecn=0: codel_drops > 0, no ecn_mark,
#            no CE on the tap
#   sojourn  in those two runs, the fullest ring's ldelay (class xstats),
#            sampled from 2 s to 7 s: median within 4 x target (20 ms);
#            the same flows with nocodel: standing queues, the qdisc's
#            median backlog more than twice what it held with CoDel
{ # the whole script is parsed before it runs (edits during a run are harmless)
. "$(dirname "$0")/lib.sh"
suite_start aqm
have_plugin || { fail aqm-plugin "no q_softmq.so in $SMQ_TC_LIB_DIR"; exit 0; }

# classes NSCMD DEV: one line per softmq class (tc -s class show over
# netlink: Debian 12's tc prints classes as text only), "minor qlen
# backlog ldelay"
classes() {
	$1 $SMQ classes "$2" | jq -r '.[] |
		"\(.handle | split(":")[1]) \(.stats.qlen) \(.stats.backlog) \(.xstats.ldelay)"'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "" }'; }

# ---------------------------------------------------------------- sparse
sparse() {
	local name=aqm-sparse out=$SMQ_OUT/sparse why=""
	local nf0 nf1 med n ql bl ql2 bl2 cql cbl pk dr enq cd
	[ -e "$SLOWDEV_KO" ] || { fail $name "no $SLOWDEV_KO"; return; }
	slowdev_load rate_pps=500 || { fail $name "insmod slowdev"; return; }
	sd_setup && ina tc qdisc add dev sd0 root handle 1: softmq &&
		egress_counter_on ina sd0 || { fail $name "setup"; return; }
	cap_start "$INA" sd0 "$out.pcap" udp || { fail $name "tcpdump"; return; }
	$INA $FLOWS send --dst $SD_DST --flows 50 --procs 2 --duration 30 \
		--size 200 > "$out.send.json" &
	local fpid=$!
	sleep 1.5
	# The probe's ring is its hash's: with 50 flows in 1024 rings, one
	# boot in twenty puts it in a flood flow's full ring, which refuses it
	# (ENOBUFS) and is no sparse flow.  Then probe from another source
	# port (another hash), at most three times.
	local sport enobufs
	for sport in 29999 28999 27999; do
		nf0=$(ina $SMQ get sd0 xstats.new_flow_count)
		ina $FLOWS latency --dev sd0 --dst $SD_DST --sport $sport --trials 10 \
			--idle 0.8 > "$out.lat.json"
		nf1=$(ina $SMQ get sd0 xstats.new_flow_count)
		enobufs=$(jq '[.trials[] | select(.err == "ENOBUFS")] | length' "$out.lat.json")
		[ "$enobufs" = 0 ] && break
		note "sparse probes from port $sport: $enobufs of 10 refused (ENOBUFS): their ring is a flood flow's"
	done
	[ "$enobufs" = 0 ] || why="$why; every probe port hashed to a full ring"
	med=$(jq -r '.trials[].out_ms // 1e9' "$out.lat.json" | median)
	note "sparse probes: median $med ms to the tap (a lap about 600 ms), all: $(jq -c '[.trials[].out_ms | . // -1 | floor]' "$out.lat.json"); new_flow_count $nf0 -> $nf1"
	fcmp "$med < 25" || why="$why; sparse probes' median $med ms >= 25 ms (a quarter lap)"
	[ "$nf1" -gt "$nf0" ] || why="$why; new_flow_count did not grow ($nf0 -> $nf1)"

	# Freeze the backlog: CoDel off, the device at 1 packet/s, the flood
	# stopped (an enqueue in flight has its packet in a ring before the
	# qdisc counts it).  The qdisc's backlog is read before and after the
	# class dump; with nothing arriving it can only shrink, so the classes
	# hold at most the first read and at least the second less 2 packets
	# (the one the core may hold requeued, the one leaving).
	ina $SMQ change sd0 root codel 0 || why="$why; change to codel 0 failed"
	slowdev_set rate_pps 1
	kill -TERM $fpid 2>/dev/null
	wait $fpid
	sleep 0.5
	read -r ql bl <<< "$(ina $SMQ get sd0 stats.qlen stats.backlog)"
	classes ina sd0 > "$out.classes"
	read -r ql2 bl2 <<< "$(ina $SMQ get sd0 stats.qlen stats.backlog)"
	read -r n cql cbl <<< "$(awk '{ n++; q += $2; b += $3 } END { print n + 0, q + 0, b + 0 }' "$out.classes")"
	note "classes: $n rings listed, $cql packets $cbl bytes; qdisc before and after: $ql, $ql2 packets, $bl, $bl2 bytes"
	[ "$n" -ge 2 ] || why="$why; $n classes listed with a flood of 50 flows queued"
	[ "$cql" -le "$ql" ] && [ "$cql" -ge $((ql2 - 2)) ] ||
		why="$why; classes hold $cql packets, the qdisc $ql before the dump and $ql2 after"
	[ "$cbl" -le "$bl" ] && [ "$cbl" -ge $((bl2 - 2 * 242)) ] ||
		why="$why; classes hold $cbl bytes, the qdisc $bl before the dump and $bl2 after (packets of 242 bytes)"
	slowdev_set rate_pps 5000
	wait_backlog_zero ina sd0 root 30 || why="$why; backlog not drained in 30 s"
	cap_stop "$out.pcap"
	[ -z "$(classes ina sd0)" ] || why="$why; classes listed with nothing queued: $(classes ina sd0 | head -3)"

	$FLOWS analyze "$out.pcap" > "$out.order.json" 2> "$out.order.err" ||
		why="$why; flows.py analyze failed: $(head -c 200 "$out.order.err")"
	[ "$(jqv "$out.order.json" .reorders)" = 0 ] ||
		why="$why; $(jqv "$out.order.json" .reorders) reordered on the tap"
	read -r pk dr ql cd <<< "$(ina $SMQ get sd0 stats.packets stats.drops stats.qlen xstats.codel_drops)"
	enq=$(egress_count ina sd0)
	note "sent $pk dropped $dr (codel $cd) backlog $ql of $enq enqueued; capture dropped $CAP_DROP"
	[ $((pk + dr + ql)) -eq "$enq" ] || why="$why; sent $pk + dropped $dr + backlog $ql != enqueued $enq"
	[ "$cd" -gt 0 ] && [ "$dr" -ge "$cd" ] ||
		why="$why; codel_drops $cd (qdisc drops $dr): CoDel never cut the flood's queues"
	if [ -z "$why" ]; then pass $name; else fail $name "${why#; }"; fi
}

# ---------------------------------------------------------------- ecn, sojourn
# tcp_run NAME ECN "SOFTMQ WORDS": tbf 20 Mbit with softmq under it, one
# iperf3 flow for 6 s; classes sampled from 2 s on into OUT.samples
# ("backlog ldelay" of the ring with the largest backlog); CE-marked
# packets captured on veth0's transmit tap into OUT.ce.pcap
tcp_run() {
	local name=$1 ecn=$2 words=$3 out=$SMQ_OUT/$1 i
	ns_setup || return 1
	ina ip link set veth0 txqueuelen 1000
	ina sysctl -qw net.ipv4.tcp_ecn="$ecn"
	# shellcheck disable=SC2086 # word list
	ina tc qdisc add dev veth0 root handle 1: tbf rate 20mbit burst 20k latency 500ms &&
		ina tc qdisc add dev veth0 parent 1:1 handle 2: softmq $words || return 1
	inb iperf3 -s -1 -D -B $IP_B --logfile "$out.server.log" || return 1
	sleep 0.3
	cap_start "$INA" veth0 "$out.ce.pcap" 'tcp and ip[1] & 3 = 3' || return 1
	$INA iperf3 -c $IP_B -P 4 -t 9 -J > "$out.iperf.json" 2> "$out.iperf.err" &
	local ipid=$! end=$((SECONDS + 7))
	sleep 2
	: > "$out.samples"
	# from 2 s to 7 s of the 9 (a sample takes a few hundred ms under TCG)
	while [ $SECONDS -lt $end ] && kill -0 $ipid 2>/dev/null; do
		# the qdisc's bytes, and the fullest ring's sojourn
		classes ina veth0 | sort -k3 -n |
			awk '{ b += $3; ld = $4 } END { print b + 0, ld + 0 }' >> "$out.samples"
		sleep 0.1
	done
	wait $ipid || { echo "iperf3: $(head -c 200 "$out.iperf.err")" > "$out.err"; return 1; }
	cap_stop "$out.ce.pcap"
	TCP_CE=$(tcpdump -r "$out.ce.pcap" -n 2>/dev/null | wc -l)
	TCP_BL=$(awk '{ print $1 }' "$out.samples" | median)
	TCP_LD=$(awk '{ print $2 }' "$out.samples" | median)
	read -r TCP_ECN TCP_CD <<< "$(ina $SMQ get veth0 1:1 xstats.ecn_mark xstats.codel_drops)"
	TCP_MBIT=$(jq -r '.end.sum_received.bits_per_second / 1e6 | floor' "$out.iperf.json")
	note "$name: $TCP_MBIT Mbit/s, backlog median $TCP_BL bytes, fullest ring's ldelay median $TCP_LD us, ecn_mark $TCP_ECN, codel_drops $TCP_CD, CE on the tap $TCP_CE"
}

tcp_cases() {
	local why="" bl_codel
	if ! tcp_run aqm-ect 1 ""; then
		fail aqm-ect "setup or iperf3 failed $(cat "$SMQ_OUT/aqm-ect.err" 2>/dev/null)"
	else
		[ "${TCP_ECN:-0}" -gt 0 ] || why="$why; ecn_mark ${TCP_ECN:-none}: no ECT packet marked"
		[ "${TCP_CD:-1}" = 0 ] || why="$why; codel_drops ${TCP_CD:-none} with an ECN flow"
		[ "$TCP_CE" -gt 0 ] || why="$why; no CE-marked packet on the tap"
		if [ -z "$why" ]; then pass aqm-ect; else fail aqm-ect "${why#; }"; fi
		check aqm-sojourn-ect "ldelay median $TCP_LD us" fcmp "${TCP_LD:-1e9} <= 20000"
	fi
	why=""
	if ! tcp_run aqm-notect 0 ""; then
		fail aqm-notect "setup or iperf3 failed $(cat "$SMQ_OUT/aqm-notect.err" 2>/dev/null)"
		return
	fi
	[ "${TCP_CD:-0}" -gt 0 ] || why="$why; codel_drops ${TCP_CD:-none}: CoDel never dropped"
	[ "${TCP_ECN:-1}" = 0 ] || why="$why; ecn_mark ${TCP_ECN:-none} on a flow without ECN"
	[ "$TCP_CE" = 0 ] || why="$why; $TCP_CE CE-marked packets on the tap"
	if [ -z "$why" ]; then pass aqm-notect; else fail aqm-notect "${why#; }"; fi
	check aqm-sojourn-notect "ldelay median $TCP_LD us" fcmp "${TCP_LD:-1e9} <= 20000"
	bl_codel=$TCP_BL
	if ! tcp_run aqm-nocodel 0 nocodel; then
		fail aqm-sojourn-standing "setup or iperf3 failed $(cat "$SMQ_OUT/aqm-nocodel.err" 2>/dev/null)"
		return
	fi
	check aqm-sojourn-standing "backlog median: $TCP_BL bytes without CoDel, $bl_codel with" \
		fcmp "${TCP_BL:-0} > 2 * ${bl_codel:-1e12}"
	check aqm-nocodel-quiet "codel_drops $TCP_CD with nocodel" [ "${TCP_CD:-1}" = 0 ]
}

sparse
tcp_cases
exit 0
}
