#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Traffic through softmq as root of veth0 (namespace smq_a, 198.18.0.1) to
# veth1 (smq_b, 198.18.0.2), in both key modes.
#
# UDP: numbered flows from python senders (flows.py; 4 processes over all
# CPUs, with key flow each process moves to the next CPU every 50 packets,
# so one flow is enqueued from every CPU in turn) plus pktgen (queue_xmit,
# one thread per CPU, 4 flows each) to build real contention and backlog.
# The order is measured where the qdisc releases packets: veth0's transmit
# tap (tcpdump -Q out; see kernel-facts §7: the receiver reorders on its own).
#   udp-order      no flow of ours or pktgen's reordered or duplicated
#                  (key cpu: pinned senders; a flow that changes CPU is
#                  only per-CPU FIFO there, measured and reported only)
#   udp-identity   after the traffic stops, exactly:
#                    enqueued == sent + dropped + backlog(0)
#                  "enqueued" is counted before the qdisc by a clsact egress
#                  matchall/pass action on veth0: sch_handle_egress() runs
#                  in __dev_queue_xmit() before __dev_xmit_skb(), and every
#                  packet it passes ends in exactly one of: the bypass path
#                  (counted in "sent" before sch_direct_xmit), softmq's
#                  enqueue -> later dequeued ("sent") or still queued
#                  ("backlog"; a driver requeue keeps it there), or a drop
#                  ("dropped", qdisc_drop_cpu).  Drops after the qdisc
#                  (veth) are the driver's, not in this sum.  Both counters
#                  count gso_segs for a GSO skb (bstats_update), drops count
#                  skbs: exact in packets when there is no GSO.  It must
#                  also equal what the senders handed over (python ok +
#                  ENOBUFS, via IP_RECVERR; pktgen sofar + errors);
#                    dropped == ENOBUFS + pktgen errors + drop_codel
#                            == xstats drop_nomem + drop_overlimit +
#                            drop_overmemory + drop_codel
#                  (CoDel drops at dequeue, after the senders were told
#                  their packet was taken)
#                  and the tap saw exactly `sent` of our packets when the
#                  capture lost none.
# TCP: iperf3 -P 4 for 2 s.  Without GSO (one skb = one packet, so the
# identity is exact in packets whatever is dropped) softmq is the root of
# sd0, a slowdev (tests/modules/slowdev) sending TCP_SD_PPS packets/s with
# loop=1 (what it sends comes back as received on sd0): the connection
# runs inside smq_a, from SD_SRC on sd0 to SD_DST on lo, out by sd0 (a
# rule for locally sent packets to SD_DST, "iif lo", looks up a table that
# routes it to sd0) and back by lo (the local table, moved after that
# rule).  A device that stops its queue makes the backlog certain: on a
# veth that keeps up, TCP without GSO queued 2-19 % of its segments and
# once, on a loaded CI host (6.1), 104 of 93682 in two runs in a row.
# With GSO, softmq is under a tbf of GSO_TBF_RATE (100 Mbit) on veth0: a
# few large skbs on a veth that never stops its queue (6.1, 6.12) would
# hardly ever queue (identity in segments when nothing is dropped; GSO
# skbs count gso_segs in bstats but 1 in drops).
#   tcp-*-order    no TCP segment at the tap with an IP ID below the
#                  highest seen in its stream: TCP numbers a socket's
#                  packets as it sends them, so lost and retransmitted
#                  segments and capture holes do not count (key flow; key
#                  cpu reports it)
#   tcp-*-identity as for UDP, enqueued from the clsact counter (gso: a
#                  SKIP when GSO skbs were dropped)
# Every order and identity case requires that the rings carried the case
# (rings_used: at least 1000 packets or 5 % of those sent).
# cputbf (make check: the lines quick-plan names for 20-traffic.sh:cputbf):
# key cpu under a tbf with 4 TCP streams pinned to CPU 0 and a flood on
# CPU 1 (see run_cputbf): their segments in order, in CPU 0's ring only.
# (xstats.bypassed with GSO is checked in 30-backlog.sh, behind a backlog.)
# flow-hash (key flow without CoDel, root of sd0, a slowdev held at 10
# pps while pktgen sends and the rings are read, so that the packets stay
# queued however slowly the guest runs): pktgen's skbs carry no hash and no socket, as forwarded
# packets without a device hash and unconnected UDP do; plain IPv4 and
# IPv6 UDP (16 flows a CPU, each family) are hashed from their addresses
# and ports, not by the flow dissector: a kprobe on its hash
# (__skb_get_hash_net, __skb_get_hash before 6.11) counts at most a few
# calls (the stack's own odd packet on sd0) while >= 1000 of them are
# enqueued, and their flows sit in more than 8 rings at once.  Control:
# the same packets in an 802.1Q header (pktgen's vlan_id: not plain IP to
# softmq) go to the dissector, and the probe counts every one queued.
# Then 16 IPv4 flows with IP options (flows.py --ip-options, unconnected
# sockets, ihl 6: the ports read after the options): at most a few
# dissector hashes while they queue, and more than 8 rings; a capture at
# sd0 shows that they had the options (>= 100 with ihl 6, none with 5).
# make check runs the key cpu cases on the lines tests/vm/quick-plan names
# for 20-traffic.sh:cpu; make check-full everywhere.
{ # the whole script is parsed before it runs (edits during a run are harmless)
. "$(dirname "$0")/lib.sh"
suite_start traffic
ns_setup || { fail traffic-setup "veth/netns setup failed"; exit 0; }
MAC_B=$(ip -n $NS_B -j link show veth1 | jq -r '.[0].address')
PROCS=$((NCPU * 2))
[ "$PROCS" -lt 4 ] && PROCS=4
# tcp-gso's tbf: below what iperf3 -P 4 with GSO reaches under TCG
GSO_TBF_RATE=${SOFTMQ_GSO_TBF_RATE:-100mbit}
# cputbf's tbf: a backlog at once, a few thousand segments in 4 s
CPUTBF_RATE=${SOFTMQ_CPUTBF_RATE:-20mbit}
# tcp-nogso's slowdev: TCP's 4 streams fill it at once under TCG (they
# reach 500 Mbit/s on a veth), ~20000 segments in 2 s.  On a sanitizer
# kernel they send ~1 800 segments/s, and on 6.12-kasan at 10000 pps only
# 1 % of them queued (43 of 3681): there the device sends 1000/s.
case $SMQ_LINE in *-kasan|*-kcsan) tcp_sd_pps=1000;; *) tcp_sd_pps=10000;; esac
TCP_SD_PPS=${SOFTMQ_TCP_SD_PPS:-$tcp_sd_pps}

# identity_check NAME ENQ SENDERS_ENQ SENDERS_DROPS [SEL [DEV]]: the
# counters of the softmq (SEL: root, or its parent under tbf) on DEV
# (veth0) against the independent ones, once it has drained.
identity_check() {
	local name=$1 enq=$2 senq=$3 sdrops=$4 sel=${5:-root} dev=${6:-veth0}
	local pk dr ql nm cd ol om why=""
	if ! wait_backlog_zero ina $dev "$sel" 5; then
		why="backlog never drained: $(ina $SMQ get $dev "$sel" stats.qlen stats.backlog) (stuck packets?)"
	fi
	read -r pk dr ql nm cd ol om <<< "$(ina $SMQ get $dev "$sel" stats.packets stats.drops stats.qlen \
		xstats.drop_nomem xstats.drop_codel \
		xstats.drop_overlimit xstats.drop_overmemory)"
	[ $((pk + dr + ql)) -eq "$enq" ] ||
		why="$why; sent $pk + dropped $dr + backlog $ql = $((pk + dr + ql)) != enqueued $enq"
	[ "$senq" = - ] || [ "$senq" -eq "$enq" ] ||
		why="$why; senders handed over $senq != enqueued (clsact) $enq"
	[ "$sdrops" = - ] || [ "$dr" -eq $((sdrops + cd)) ] ||
		why="$why; qdisc drops $dr != drops seen by the senders $sdrops + codel $cd"
	[ "$dr" -eq $((nm + ol + om + cd)) ] ||
		why="$why; qdisc drops $dr != xstats nomem $nm + overlimit $ol + overmemory $om + codel $cd"
	rings_used ina $dev ||
		why="$why; the rings carried too little ($RINGS_NOTE): the identity was not tested under queueing"
	if [ -n "$why" ]; then fail "$name" "${why#; }"
	else pass "$name" "enqueued $enq = sent $pk + dropped $dr + backlog $ql; $RINGS_NOTE"; fi
}

run_udp() {   # run_udp KEY MIGRATE TAG
	local key=$1 mig=$2 tag=$3 pre="traffic-$1-udp$3"
	local pcap=$SMQ_OUT/udp-$key$tag.pcap res=$SMQ_OUT/udp-$key$tag
	ina tc qdisc del dev veth0 root 2>/dev/null
	ina tc qdisc del dev veth0 clsact 2>/dev/null
	if ! ina $SMQ add veth0 root key "$key"; then
		fail "$pre-setup" "cannot add softmq key $key"; return
	fi
	egress_counter_on ina veth0 || { fail "$pre-setup" "clsact egress counter"; return; }
	pg_setup ina veth0 $IP_B "$MAC_B" 15000 200 || { fail "$pre-setup" "pktgen"; return; }
	cap_start "$INA" veth0 "$pcap" udp || { fail "$pre-setup" "tcpdump"; return; }
	rm -f "$res.go"
	$INA $FLOWS send --dst $IP_B --flows 16 --procs $PROCS --cpus "$CPUS" \
		--migrate "$mig" --count 1500 --size 64,300,1000 --start-file "$res.go" \
		> "$res.send.json" &
	local spid=$!
	sleep 0.5
	pg_start "$INA"
	touch "$res.go"
	wait $spid
	pg_wait
	wait_backlog_zero ina veth0 root 5       # what is queued still passes the tap
	local capdrop pg_sofar pg_err
	cap_stop "$pcap"; capdrop=$CAP_DROP
	read -r pg_sofar pg_err <<< "$(pg_stats ina veth0)"
	$FLOWS analyze "$pcap" > "$res.json"
	local ok nobufs other enq
	ok=$(jqv "$res.send.json" .ok); nobufs=$(jqv "$res.send.json" .enobufs)
	other=$(jqv "$res.send.json" '.errors | to_entries | map("\(.key)=\(.value)") | join(",")')
	enq=$(egress_count ina veth0)
	note "$key/udp$tag: python ok $ok enobufs $nobufs${other:+ errors $other}; pktgen sofar $pg_sofar errors $pg_err; clsact $enq; capture dropped ${capdrop:-?}; xstats: $(ina $SMQ get veth0 xstats | tr -d '{}"' | cut -c1-300)"

	# order (under queueing: the rings carried a share of it)
	local ro du pro pdu pgp pgf
	read -r ro du pro pdu pgp pgf <<< "$(jq -r '"\(.reorders) \(.dups) \(.pg_reorders) \(.pg_dups) \(.pg_pkts) \(.pg_flows)"' "$res.json")"
	if ! rings_used ina veth0; then
		fail "$pre-order" "the rings carried too little ($RINGS_NOTE): the order was not tested under queueing"
	elif [ "$key" = cpu ] && [ "$mig" != 0 ]; then
		# per-CPU FIFO only: report what a migrating flow sees
		if [ "$pro" -eq 0 ] && [ "$pdu" -eq 0 ] && [ "$du" -eq 0 ]; then
			pass "$pre-order" "pktgen flows in order; migrating python flows (per-CPU FIFO only, not promised): $ro reordered; $RINGS_NOTE"
		else
			fail "$pre-order" "pktgen (one CPU per flow) reordered $pro dup $pdu; python dups $du"
		fi
	elif [ "$ro" -eq 0 ] && [ "$du" -eq 0 ] && [ "$pro" -eq 0 ] && [ "$pdu" -eq 0 ] &&
	     [ "$pgf" -ge 2 ] && [ "$(jqv "$res.json" .pkts)" -gt 0 ]; then
		pass "$pre-order" "$(jqv "$res.json" .pkts) numbered + $pgp pktgen packets in $((16 + pgf)) flows, 0 reordered; $RINGS_NOTE"
	else
		fail "$pre-order" "reordered: ours $ro (dups $du), pktgen $pro (dups $pdu) in $pgf flows, $pgp pkts; per flow: $(jq -c '[.flows | to_entries[] | select(.value.reorders > 0) | {(.key): .value.reorders}] | add' "$res.json")"
	fi

	# identity
	local senq=$((ok + nobufs + pg_sofar + pg_err))
	if [ -n "$other" ]; then
		fail "$pre-identity" "senders saw unexpected errors: $other"
	else
		identity_check "$pre-identity" "$enq" "$senq" $((nobufs + pg_err))
	fi
	local sent seen
	sent=$(ina $SMQ get veth0 stats.packets)
	seen=$(( $(jqv "$res.json" .pkts) + pgp ))
	if [ "${capdrop:-1}" = 0 ]; then
		check "$pre-tap-count" "the tap saw $seen test packets, the qdisc sent $sent" \
			[ "$seen" -eq "$sent" ]
	else
		skip "$pre-tap-count" "the capture dropped ${capdrop:-?} packets"
	fi
	ina tc qdisc del dev veth0 clsact
}

# sd_loop_setup: sd0 in smq_a with the routes of tcp-nogso (see above).
# SD_SRC arrives on sd0 as a source address of smq_a's own: accept_local.
sd_loop_setup() {
	slowdev_load rate_pps="$TCP_SD_PPS" loop=1 || return 1
	ina ip link add sd0 gso_max_segs 1 type slowdev || return 1
	local mac
	mac=$(ina cat /sys/class/net/sd0/address) &&
	ina sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.sd0.rp_filter=0 \
		net.ipv4.conf.sd0.accept_local=1 &&
	ina ip addr add $SD_SRC/24 dev sd0 &&
	ina ip addr add $SD_DST/32 dev lo &&
	ina ip link set sd0 up &&
	ina ip neigh replace $SD_DST lladdr "$mac" dev sd0 nud permanent &&
	ina ip route add $SD_DST dev sd0 src $SD_SRC table 100 &&
	ina ip rule add pref 10 to $SD_DST iif lo lookup 100 &&
	ina ip rule add pref 1000 lookup local &&
	ina ip rule del pref 0
}

run_tcp() {   # run_tcp KEY gso|nogso
	local key=$1 mode=$2 pre="traffic-$1-tcp-$2"
	local pcap=$SMQ_OUT/tcp-$key-$mode.pcap res=$SMQ_OUT/tcp-$key-$mode
	local sel=root dev=veth0 src=$IP_A dst=$IP_B srv=inb where
	if [ "$mode" = nogso ]; then
		dev=sd0 src=$SD_SRC dst=$SD_DST srv=ina
		where="root of sd0 at $TCP_SD_PPS pps"
		ina tc qdisc del dev sd0 root 2>/dev/null
		ina $SMQ add sd0 root key "$key" || { fail "$pre-setup" "cannot add softmq"; return; }
	else
		# A veth of 6.1/6.12 never stops its queue and a few large
		# skbs rarely meet each other: 451 of 211058 segments went
		# through the rings of a root softmq.  Under a tbf (burst
		# above 64 KB: no GSO skb is cut up) below what TCP reaches
		# here, every skb queues.  Depth 256: TSQ lets a socket have
		# 4 MB (64 skbs of 64 KB) in the qdisc, and 64 slots dropped
		# GSO skbs (whose retransmissions fill holes at the tap).
		sel=1:1 where="under tbf $GSO_TBF_RATE on veth0"
		ina tc qdisc del dev veth0 root 2>/dev/null
		ina tc qdisc add dev veth0 root handle 1: tbf rate "$GSO_TBF_RATE" burst 256k latency 500ms &&
			ina $SMQ add veth0 parent 1:1 key "$key" depth 256 ||
			{ fail "$pre-setup" "cannot add tbf $GSO_TBF_RATE with softmq under it"; return; }
	fi
	# A flow is one ring while its hash stays: TCP draws a new txhash on
	# a retransmission timeout (and on a DSACKed spurious retransmission),
	# which moves the stream to another ring with its older segments
	# still queued in the first (fq_codel's flows move the same way).
	# The order case is about the rings, not about that: keep the hash.
	ina sysctl -qw net.core.txrehash=0 ||
		{ fail "$pre-setup" "net.core.txrehash=0 refused"; return; }
	ina tc qdisc del dev $dev clsact 2>/dev/null
	egress_counter_on ina $dev || { fail "$pre-setup" "clsact egress counter"; return; }
	$srv iperf3 -s -1 -D -B $dst --logfile "$res.server.log" || { fail "$pre-setup" "iperf3 -s"; return; }
	sleep 0.5
	cap_start "$INA" $dev "$pcap" "outbound and tcp and src host $src" || { fail "$pre-setup" "tcpdump"; return; }
	local rs0 rs1 rh0 rh1
	rs0=$(ina nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}')
	rh0=$(ina nstat -az TcpExtTCPTimeouts | awk '/TCPTimeouts/ {print $2}')
	ina iperf3 -c $dst -B $src -P 4 -t 2 -J > "$res.iperf.json" 2> "$res.iperf.err"
	local irc=$?
	rs1=$(ina nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}')
	rh1=$(ina nstat -az TcpExtTCPTimeouts | awk '/TCPTimeouts/ {print $2}')
	local capdrop
	cap_stop "$pcap"; capdrop=$CAP_DROP
	$FLOWS analyze --tcp "$pcap" > "$res.json"
	local enq sentb recvb
	enq=$(egress_count ina $dev)
	sentb=$(jq '.end.sum_sent.bytes // 0' "$res.iperf.json" 2>/dev/null)
	recvb=$(jq '.end.sum_received.bytes // 0' "$res.iperf.json" 2>/dev/null)
	rings_used ina $dev
	note "$key/tcp-$mode, $where: iperf3 rc $irc sent $sentb received $recvb bytes ($(jq -r '.end.sum_received.bits_per_second / 1e6 | floor' "$res.iperf.json" 2>/dev/null) Mbit/s under TCG); retrans $((rs1 - rs0)), RTOs $((${rh1:-0} - ${rh0:-0})) (txrehash off: the hash kept); capture dropped ${capdrop:-?}; tap: $(jq -c '{tcp_reorders, tcp_retrans}' "$res.json"); $RINGS_NOTE"
	if [ $irc -ne 0 ] || [ "${sentb:-0}" -eq 0 ]; then
		fail "$pre-run" "iperf3 failed (rc $irc): $(head -c 300 "$res.iperf.err")"
		ina tc qdisc del dev $dev clsact; return
	fi
	pass "$pre-run" "$(( recvb / 1000000 )) MB through in 2 s"

	# The order TCP sent its segments in is their IP IDs' (a socket
	# numbers its packets as it sends them, retransmissions too): a
	# segment lost in the qdisc or the capture and sent again is not a
	# reorder, and a lossy capture leaves the verdict sound.
	local idr idup pk
	read -r idr idup pk <<< "$(jq -r '[.tcp[]] |
		"\(map(.id_reorders) | add // 0) \(map(.id_up) | add // 0) \(map(.pkts) | add // 0)"' "$res.json")"
	if [ "$key" = cpu ]; then
		# Not a case: key cpu promises per-CPU FIFO only, and TCP sends
		# from the application's CPU and from softirq on others, so
		# nothing here can fail; the UDP cases and cputbf check it.
		note "$pre-order: key cpu, $idr segments left in another order than sent (reported, not promised)"
	elif ! rings_used ina $dev; then
		fail "$pre-order" "the rings carried too little ($RINGS_NOTE): the order was not tested under queueing"
	elif [ "$pk" -eq 0 ] || [ $((idup * 10)) -lt $((pk * 9)) ]; then
		fail "$pre-order" "the IP IDs of $pk segments rose only $idup times: cannot tell the order TCP sent them in"
	else
		check "$pre-order" "$idr TCP segments left in another order than TCP sent them (IP ID): $(jq -c '.tcp' "$res.json" | cut -c1-300)" \
			[ "$idr" -eq 0 ]
	fi

	local dr
	dr=$(ina $SMQ get $dev "$sel" stats.drops)
	if [ "$mode" = nogso ] || [ "$dr" -eq 0 ]; then
		identity_check "$pre-identity" "$enq" - - "$sel" $dev
	else
		skip "$pre-identity" "GSO skbs were dropped ($dr): drops count skbs, sent counts segments"
	fi
	ina tc qdisc del dev $dev clsact
}

# run_cputbf: one TCP sender pinned to CPU 0 beside a pktgen flood
# pinned to CPU 1, through softmq key cpu as the child of a tbf (a classful
# parent: the enqueue runs under the root lock).  key cpu promises per-CPU
# FIFO, and a sender whose every packet is handed to the qdisc on one CPU
# is one flow in one ring.  Since 6.19 the core queues a locked qdisc's
# packets on q->defer_list and whichever CPU takes the lock enqueues the
# whole list, so a ring chosen by smp_processor_id() in enqueue is the
# draining CPU's: the sender's packets land in both CPUs' rings, and a
# woken ring is served first (sparse flows).  Everything the sender does
# stays on CPU 0: iperf3 client and server pinned, every receive steered
# to CPU 0 by RPS (the ACKs that clock it; ip_rcv orphans a segment there,
# so TSQ resumes it there too).  The flood (skb priority 1: band 2, below
# TCP's band 1) keeps CPU 1 taking the root lock and its ring backlogged;
# the UDP is dropped at veth1's ingress.  TSO/GSO off: one segment per skb.
# CoDel off: a segment it drops is freed by the dequeuing CPU (mostly CPU
# 1), where TCP's small-queue callback then sends the next ones from, a
# second CPU handing the sender's packets to the qdisc (7.2: 16 of 6529
# segments in another order, 10 retransmitted).  Without it nothing drops
# TCP's segments: the flood fills the limit, and above it only rings below
# their share of it (TCP's) are admitted.
# The receives steered to CPU 0 include the flood's.  A full backlog
# there (netdev_max_backlog, 1000) drops on the CPU that hands the packet
# over, the veth's transmitting one (CPU 1 for the flood's dequeues), and
# a TCP segment freed there resumes the sender there through its
# small-queue callback.  That is the likely cause of a failure on 7.2
# (stop 55's fresh-clone make check, once: 14 retransmitted, 20 of 6929
# in another order, TCP's band in CPU 1's ring; the drops were not
# counted then).  The run raises the backlog to 10000 and reports the
# receive backlogs' drops (softnet_stat) and TCP's retransmissions.
# TCP's small queues keep a socket's share of the backlog at a packet or
# two, so TCP's ring is seldom caught holding packets: what shows where its
# packets went is which rings exist (a ring is allocated at its first
# packet and lives as long as the qdisc).
#   cputbf-order  no TCP segment of the 4 streams at veth0's transmit tap
#                 with an IP ID below the highest seen in its stream (the
#                 order TCP sent them in, losses and retransmissions
#                 aside), with the rings carrying the case (rings_used), a
#                 backlog in at least half of the class dumps taken every
#                 0.1 s, CPU 1's rings holding packets in them, and TCP's
#                 band having CPU 0's ring and never CPU 1's
# softnet_drops: packets the receive backlogs dropped, all CPUs
softnet_drops() {
	local cpu dropped rest sum=0
	while read -r cpu dropped rest; do sum=$((sum + 0x$dropped)); done < /proc/net/softnet_stat
	echo $sum
}
run_cputbf() {
	local pre=traffic-cputbf res=$SMQ_OUT/cputbf pcap=$SMQ_OUT/cputbf.pcap
	local mac irc capdrop why="" rs0 rs1 bl0 sn0 sn1
	if [ "$NCPU" -lt 2 ]; then fail "$pre-setup" "needs 2 vCPUs, the guest has $NCPU"; return; fi
	ns_setup || { fail "$pre-setup" "veth/netns setup failed"; return; }
	mac=$(ip -n $NS_B -j link show veth1 | jq -r '.[0].address')
	ina ethtool -K veth0 tso off gso off >/dev/null 2>&1
	if ! ina sh -c 'echo 1 > /sys/class/net/veth0/queues/rx-0/rps_cpus' ||
	   ! inb sh -c 'echo 1 > /sys/class/net/veth1/queues/rx-0/rps_cpus'; then
		fail "$pre-setup" "cannot steer veth0/veth1 receives to CPU 0 (RPS)"; return
	fi
	modprobe -q sch_ingress; modprobe -q cls_u32; modprobe -q act_gact
	if ! ina tc qdisc add dev veth0 root handle 1: tbf rate "$CPUTBF_RATE" burst 20k latency 500ms ||
	   ! ina $SMQ add veth0 parent 1:1 handle 2: key cpu depth 512 codel 0 ||
	   ! inb tc qdisc add dev veth1 clsact ||
	   ! inb tc filter add dev veth1 ingress pref 1 protocol ip u32 match ip protocol 17 0xff action drop; then
		fail "$pre-setup" "tbf $CPUTBF_RATE + softmq key cpu, or the UDP drop on veth1"; return
	fi
	PG_DELAY=0 pg_setup ina veth0 $IP_B "$mac" 0 1000 1 'skb_priority 1' ||
		{ fail "$pre-setup" "pktgen on CPU 1"; return; }
	inb taskset -c 0 iperf3 -s -1 -D -B $IP_B --logfile "$res.server.log" ||
		{ fail "$pre-setup" "iperf3 -s"; return; }
	sleep 0.5
	cap_start "$INA" veth0 "$pcap" "tcp and src host $IP_A" || { fail "$pre-setup" "tcpdump"; return; }
	pg_start "$INA"
	sleep 0.5
	bl0=$(sysctl -n net.core.netdev_max_backlog)
	sysctl -qw net.core.netdev_max_backlog=10000
	sn0=$(softnet_drops)
	rs0=$(ina nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}')
	$INA taskset -c 0 iperf3 -c $IP_B -P 4 -t 4 -J > "$res.iperf.json" 2> "$res.iperf.err" &
	local ipid=$!
	# the class dump every 0.1 s from 0.5 s to 3.5 s, one python process
	# (one per dump took seconds here): "band:ring:qlen ..." of the rings
	# holding packets, one line a dump
	sleep 0.5
	$INA $PY - "$SMQ_VMDIR/lib" veth0 3 > "$res.samples" <<'EOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import smq
q, end = smq.Softmq(), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    print(" ".join("%d:%d:%d" % (c["xstats"]["band"], c["xstats"]["index"], c["stats"]["qlen"])
                   for c in q.classes(sys.argv[2]) if c["stats"].get("qlen", 0) > 0), flush=True)
    time.sleep(0.1)
EOF
	wait $ipid; irc=$?
	rs1=$(ina nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}')
	pg_stop "$INA"
	sn1=$(softnet_drops)
	sysctl -qw net.core.netdev_max_backlog="$bl0"
	local flood
	flood=$(pg_stats ina veth0 | awk '{print $1 " sent, " $2 " refused"}')
	cap_stop "$pcap"; capdrop=$CAP_DROP
	pg_clear "$INA" 2>/dev/null
	$FLOWS analyze --tcp "$pcap" > "$res.json"
	# the rings TCP's band (1) has, "band:index ..." (class 2:N is the
	# ring of slot N - 1 = band * nr_rings + index; key cpu: a ring per
	# possible CPU, nr_cpu_ids)
	local tcprings
	tcprings=$($INA $PY - "$SMQ_VMDIR/lib" veth0 <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import smq
with open("/sys/devices/system/cpu/possible") as f:
    n = int(f.read().strip().split(",")[-1].split("-")[-1]) + 1
q = smq.Softmq()
print(" ".join("1:%d" % i for i in range(n) if q.has_class(sys.argv[2], "2:%x" % (n + i + 1))))
EOF
)
	local n nb r0 r1 tcp1 tro seg
	# dumps in all, with a backlog, with CPU 0's / CPU 1's rings holding
	# packets, with TCP's band (1) in CPU 1's ring
	read -r n nb r0 r1 tcp1 <<< "$(awk '{ n++; a = b = t = 0
		for (i = 1; i <= NF; i++) { split($i, f, ":"); if (f[2] == 0) a = 1
			if (f[2] == 1) { b = 1; if (f[1] == 1) t = 1 } }
		nb += NF > 0; r0 += a; r1 += b; t1 += t }
		END { print n + 0, nb + 0, r0 + 0, r1 + 0, t1 + 0 }' "$res.samples")"
	# every stream (iperf3's control too); the order TCP sent a stream's
	# segments in is their IP IDs' (see run_tcp)
	local idup sq
	read -r tro idup sq seg <<< "$(jq -r '[.tcp[]] |
		"\(map(.id_reorders) | add // 0) \(map(.id_up) | add // 0) \(map(.reorders) | add // 0) \(map(.pkts) | add // 0)"' "$res.json")"
	rings_used ina veth0
	note "$pre: iperf3 rc $irc, $(jq -r '.end.sum_received.bits_per_second / 1e6 | floor' "$res.iperf.json" 2>/dev/null) Mbit/s; $seg segments at the tap, $tro in another order than sent (IP ID; $sq below the highest sequence, holes refilled included); retrans $((rs1 - rs0)); receive backlogs dropped $((sn1 - sn0)); capture dropped ${capdrop:-?}; class dumps $n: backlog in $nb, CPU 0's rings in $r0, CPU 1's in $r1, TCP's band in CPU 1's ring in $tcp1; TCP's band's rings: ${tcprings:-none}; flood $flood; $RINGS_NOTE"
	if [ $irc -ne 0 ] || [ "${seg:-0}" -eq 0 ]; then
		fail "$pre-order" "iperf3 failed (rc $irc) or no TCP segment at the tap: $(head -c 300 "$res.iperf.err")"
		return
	fi
	rings_used ina veth0 || why="$why; the rings carried too little ($RINGS_NOTE)"
	[ "$n" -gt 0 ] && [ $((nb * 2)) -ge "$n" ] ||
		why="$why; a backlog in only $nb of $n class dumps (tbf $CPUTBF_RATE)"
	[ "$r1" -gt 0 ] ||
		why="$why; CPU 1's rings held packets in none of $n dumps: the flood did not keep CPU 1 enqueueing"
	[[ " $tcprings " == *" 1:0 "* ]] ||
		why="$why; TCP's band has no ring of CPU 0 (its rings: ${tcprings:-none}): the sender's packets did not go where key cpu puts CPU 0's"
	[[ " $tcprings " != *" 1:1 "* ]] ||
		why="$why; TCP's band has a ring of CPU 1 (its rings: $tcprings): key cpu put packets the sender handed over on CPU 0 in CPU 1's ring"
	[ $((idup * 10)) -ge $((seg * 9)) ] ||
		why="$why; the IP IDs of $seg segments rose only $idup times: cannot tell the order TCP sent them in"
	[ "$tro" -eq 0 ] ||
		why="$why; $tro of $seg TCP segments of the one sender pinned to CPU 0 left in another order than TCP sent them (IP ID): key cpu put one CPU's packets in two rings (TCP's band's rings: $tcprings; retransmitted $((rs1 - rs0)), receive backlogs dropped $((sn1 - sn0)))"
	if [ -n "$why" ]; then fail "$pre-order" "${why#; }"
	else pass "$pre-order" "$seg segments of the sender on CPU 0 in order beside a flood on CPU 1; backlog in $nb of $n dumps; TCP in CPU 0's ring only; $RINGS_NOTE"; fi
}

# run_flow_hash: see flow-hash above
HASH_PKTS=300   # per pktgen thread and family
# sd0's rate while the packets queue.  It drains in wall-clock time and
# the guest's work (pktgen's hand-over, each python start) slows down
# with the host: at 100 pps a loaded host's run found a backlog of 104 in
# the qdisc's count and then none in a class dump a python start later.
HASH_RATE=10
# flow_hash_rings NAME: how many of sd0's rings hold packets, from one
# class dump kept in $SMQ_OUT/flow-hash-rings-NAME.json, after the
# qdisc's qlen read just before it: "N (qlen Q)".  A dump that fails or
# is no JSON list is tried once more, then reported as "? (the error)",
# not as 0 rings.
flow_hash_rings() {
	local f=$SMQ_OUT/flow-hash-rings-$1.json qlen n try
	for try in 1 2; do
		qlen=$(ina $SMQ get sd0 stats.qlen 2>&1)
		if ina $SMQ classes sd0 > "$f" 2> "$f.err" &&
		   n=$(jq -e 'if type == "array" then [.[] | select(.stats.qlen > 0)] | length else error("not a list") end' "$f" 2>> "$f.err"); then
			echo "$n (qlen $qlen)"
			return
		fi
	done
	echo "? (the class dump failed: $(head -c 300 "$f.err" | tr '\n' ' '))"
}
# held "N (qlen Q)": N, or 0 where the dump failed ("?")
held() { local n=${1%% *}; [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo 0; }
run_flow_hash() {
	local name=traffic-flow-hash sym hits0 hits1 hits2 rings4 rings6 why=""
	local fam sofar err enq=0 byp vsent=0 vbyp=0
	sym=$(awk '$2 ~ /^[Tt]$/ && ($3 == "__skb_get_hash_net" || $3 == "__skb_get_hash") { print $3; exit }' /proc/kallsyms)
	tracefs_mount
	if [ -z "$sym" ] || [ ! -w $TRACEFS/kprobe_events ]; then
		skip "$name" "no kprobe events or no __skb_get_hash(_net) in /proc/kallsyms"
		return
	fi
	local out
	sd_setup || { fail "$name" "setup: sd0"; return; }
	# pktgen writes its own IPv6 headers: sd0 needs no IPv6 address
	out=$(sd_qdisc key flow codel 0 2>&1) ||
		{ fail "$name" "setup: softmq key flow codel 0 on sd0: $out"; return; }
	kcall_on skbhash "$sym" || { fail "$name" "kprobe on $sym refused"; return; }
	hits0=$(kprobe_hits skbhash)
	slowdev_set rate_pps $HASH_RATE
	for fam in 4 6 vlan; do
		local extra=() r i
		[ $fam = 6 ] && extra=('src6 2001:2::1' 'dst6 2001:2::2')
		[ $fam = vlan ] && extra=('vlan_id 5')
		[ $fam = vlan ] && { hits1=$(kprobe_hits skbhash); byp=$(ina $SMQ get sd0 xstats.bypassed); }
		PG_FLOWS=15 pg_setup ina sd0 $SD_DST 02:00:00:00:00:02 $HASH_PKTS 100 "$CPUS" "${extra[@]}" ||
			{ fail "$name" "pktgen $fam setup"; kprobe_off skbhash; return; }
		pg_start "$INA"
		# pktgen ends only once its last skb is freed, behind the whole
		# backlog: look while it waits, once it has sent them all
		for i in $(seq 300); do
			read -r sofar err <<< "$(pg_stats ina sd0)"
			[ $((sofar + err)) -ge $((HASH_PKTS * NCPU)) ] && break
			sleep 0.1
		done
		[ $fam = vlan ] || r=$(flow_hash_rings "$fam")
		[ "$err" -eq 0 ] || why="$why; pktgen $fam: $err errors"
		case $fam in
		4) rings4=$r enq=$((enq + sofar));;
		6) rings6=$r enq=$((enq + sofar));;
		vlan) hits2=$(kprobe_hits skbhash) vsent=$sofar
		      vbyp=$(( $(ina $SMQ get sd0 xstats.bypassed) - byp ));;
		esac
		slowdev_set rate_pps 1000000
		pg_wait
		wait_backlog_zero ina sd0 root 10 || why="$why; the backlog of $fam did not drain"
		slowdev_set rate_pps $HASH_RATE
		pg_clear ina
	done
	# IPv4 with options (ihl 6: the ports after them, read apart):
	# unconnected UDP sockets, whose skbs carry no hash either
	local ohits0 ohits1 osent ropt ihl5 ihl6 ocap=$SMQ_OUT/flow-hash-opt.pcap
	cap_start "$INA" sd0 "$ocap" udp and dst portrange 31000-31015 ||
		why="$why; tcpdump on sd0 did not start"
	ohits0=$(kprobe_hits skbhash)
	$INA $FLOWS send --dst $SD_DST --flows 16 --count 40 --size 64 --ip-options \
		--sport 21000 --dport 31000 > "$SMQ_OUT/flow-hash-opt.json" &
	local opid=$!
	for i in $(seq 100); do
		ropt=$(ina $SMQ get sd0 stats.qlen)
		[ "${ropt:-0}" -ge 320 ] && break
		sleep 0.1
	done
	ropt=$(flow_hash_rings opt)
	ohits1=$(kprobe_hits skbhash)
	slowdev_set rate_pps 1000000
	wait $opid
	wait_backlog_zero ina sd0 root 10 || why="$why; the backlog of IPv4 with options did not drain"
	cap_stop "$ocap"
	osent=$(jqv "$SMQ_OUT/flow-hash-opt.json" .ok)
	# the options were on the wire: every packet sent has a 24-byte header
	ihl6=$(tcpdump -r "$ocap" -n 'ip[0] & 0xf = 6' 2>/dev/null | wc -l)
	ihl5=$(tcpdump -r "$ocap" -n 'ip[0] & 0xf = 5' 2>/dev/null | wc -l)
	[ "$ihl6" -ge 100 ] && [ "$ihl5" -eq 0 ] ||
		why="$why; the IP-options sender's packets at sd0: $ihl6 with ihl 6, $ihl5 with ihl 5 (want >= 100 and 0)"
	kprobe_off skbhash
	note "$name: $sym called ${hits0:-?} before, $((hits1 - hits0)) during $enq pktgen packets ($byp bypassed the rings), $((hits2 - hits1)) for $vsent in an 802.1Q header ($vbyp bypassed), $((ohits1 - ohits0)) while $osent IPv4 UDP packets with IP options queued ($ihl6 captured with ihl 6); rings holding IPv4 flows $rings4, IPv6 $rings6, IPv4 with options $ropt"
	[ "${osent:-0}" -ge 320 ] || why="$why; the IP-options sender handed over only ${osent:-0} of 640"
	[ $((ohits1 - ohits0)) -le 8 ] ||
		why="$why; the flow dissector hashed $((ohits1 - ohits0)) skbs while IPv4 UDP packets with IP options were queued"
	[ "$(held "$ropt")" -gt 8 ] ||
		why="$why; 16 IPv4 flows with IP options held only $ropt rings: not spread by their ports"
	[ "$enq" -ge 1000 ] || why="$why; pktgen handed over only $enq packets"
	[ $((enq - byp)) -ge 1000 ] || why="$why; only $((enq - byp)) packets were enqueued ($byp bypassed)"
	[ $((hits1 - hits0)) -le 8 ] ||
		why="$why; the flow dissector hashed $((hits1 - hits0)) skbs while $enq hashless IPv4/IPv6 UDP packets were queued"
	[ $((hits2 - hits1)) -ge $((vsent - vbyp)) ] && [ $((vsent - vbyp)) -ge 500 ] ||
		why="$why; control: the probe counted $((hits2 - hits1)) dissector hashes for $((vsent - vbyp)) queued packets in an 802.1Q header (>= 500, each counted, expected): it cannot see what it says is missing"
	[ "$(held "$rings4")" -gt 8 ] && [ "$(held "$rings6")" -gt 8 ] ||
		why="$why; the 16 flows a CPU held only $rings4 (IPv4) / $rings6 (IPv6) rings: not spread by their ports"
	if [ -n "$why" ]; then fail "$name" "${why#; }"
	else pass "$name" "$((enq - byp)) hashless UDP packets queued, $((hits1 - hits0)) dissector hashes; in $rings4 / $rings6 rings (IPv4 / IPv6); IPv4 with options $((ohits1 - ohits0)) hashes, $ropt rings; the $((vsent - vbyp)) tagged ones' $((hits2 - hits1)) counted"; fi
}

KEYS=flow
part_runs 20-traffic.sh:cpu && KEYS="flow cpu"
sd_loop_setup || fail traffic-sd-setup "sd0 (slowdev loop=1) with tcp-nogso's routes: $(ina ip -br addr 2>&1 | tr '\n' ' ')"
for key in $KEYS; do
	ns_sink_on || { fail traffic-sink "clsact drop on veth1"; exit 0; }
	if [ $key = flow ]; then
		run_udp flow 50 ""
	else
		run_udp cpu 0 ""          # pinned senders: per-CPU FIFO = per flow
		run_udp cpu 50 "-migrating"
	fi
	ns_sink_off
	run_tcp $key nogso
	run_tcp $key gso
	ina tc qdisc del dev veth0 root
	ina tc qdisc del dev sd0 root
done
part_runs 20-traffic.sh:hash && run_flow_hash
ina ip link del sd0
rmmod slowdev
ns_teardown
part_runs 20-traffic.sh:cputbf && run_cputbf
ns_teardown
if out=$(softmq_unload 2>&1); then pass traffic-rmmod; else fail traffic-rmmod "rmmod sch_softmq: $out"; fi
exit 0
}
