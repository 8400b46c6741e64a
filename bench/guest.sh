#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In-guest (or HOST=1: on-host) runner of `make bench`: one boot, all qdiscs
# interleaved.  Needs root, iproute2 (tc, ip), and the modules pktgen, dummy,
# veth (modprobe) plus sch_softmq.ko (--ko, unless already loaded).
#
#   guest.sh --out FILE [--ko PATH] [--count-dummy N] [--count-veth N]
#            [--count-udp N] [--rounds R] [--flows "1 16 1024"]
#            [--loads "dummy veth udp mq-dummy mq-veth"] [--udpsend PATH]
#            [--tc-lib DIR] [--mq-queues 4] [--cpus N] [--tag TEXT]
#            [--softmq-opts "depth 256"] [--profile] [--netns NAME]
#            [--flow-split] [--xps] [--slowdev KO] [--slow-pps N]
#            [--slow-drain] [--count-slow N] [--count-gso N] [--gso-segs N]
#            [--qdiscs "softmq-flow softmq-cpu"]
#
# --softmq-opts: extra tc options for every softmq added by tc (not the mq
# children, which default_qdisc creates with the defaults); needs the plugin.
# --profile: MODE=profile (QEMU with bench/insn-profile.c): each measured
# pktgen run is bracketed by two writes of 4 to /proc/sys/vm/drop_caches
# (a no-op but for its handler, the plugin's mark), its record names the
# plugin's dump of that run (profile_phase), and /proc/kallsyms is copied
# beside FILE for the symbols.
# --flow-split: each pktgen thread sends its own F flows (thread c: the F
# destinations from 198.19.0.0 + c*F), instead of all threads walking the
# same F (MODE=sharing: distinct flows per thread).
# --xps: the mq loads map CPU c to TX queue c % queues (xps_cpus), as a
# multi-queue NIC's driver does, instead of hashing flows onto queues.
# --slowdev KO: the test bed's slow device (tests/modules/slowdev), for the
# "slow" load; --slow-pps its rate per TX queue (default 5000).
# --slow-drain: the slow load as a measure of the queued path with the qdisc
# as the NOLOCK root (MODE=profile): bfifo as the floor and softmq's nocodel
# variants among its qdiscs, a one-packet device FIFO (the qdisc holds the
# backlog: every packet queued), a txqueuelen no qdisc's backlog reaches,
# and after each pktgen run a wait until the device has sent everything
# queued, inside the profile's window, so that every packet's dequeue is
# counted; --count-slow its packets per run (default --count-dummy).  Under
# -icount pacing the senders would not help: a spinning sender's wait is
# instructions too, taken from the device's timer on the one vCPU.
# --qdiscs LIST: only these of each load's qdiscs (names as in qdiscs_for:
# noqueue pfifo_fast fq_codel fq softmq-flow softmq-cpu mq-pfifo_fast ...).
# --cpus N: senders (kpktgend threads / UDP senders) on CPUs 0..N-1
# (default: all online CPUs).  --txqueuelen N: the dummy and veth
# devices' (default 1000), which is pfifo_fast's limit: 10240 gives it
# fq_codel's and softmq's (the slow device keeps its own).  Counts are
# packets per sender per run.  On exit the devices, the netns and the
# default qdisc are restored, and a module we loaded is unloaded.
#
# For every load and flow count the qdiscs run A B C ... A B C ... for R
# rounds (same boot, same devices), each run preceded by a short unmeasured
# warm-up (every flow seen once: softmq allocates its rings lazily), so
# slow drift (host noise, TCG code cache) hits all qdiscs alike.  Every run
# appends one JSON object (one line) to FILE; a first line describes the
# environment.  Prints the test bed's protocol on stdout: "PASS
# bench-<tag>: N runs" at the end, or "FAIL bench-<tag>: why".
#
# Loads
#   dummy      pktgen queue_xmit, one kpktgend per CPU, clone_skb 0, 64 B,
#              into a single-queue dummy device
#   veth       the same into a veth whose peer sits in netns "bpeer"
#              (packets reach the peer's IP layer, not forwarded: dropped)
#   udp        udpsend: one UDP socket sender per CPU over that veth
#   mq-dummy   pktgen into a dummy with --mq-queues TX queues: noqueue,
#   mq-veth    mq + pfifo_fast children, mq + softmq children (children
#              made by mq from net.core.default_qdisc, so they keep NOLOCK)
#   slow       pktgen into sd0, a slowdev (--slowdev) transmitting
#              --slow-pps packets a second: slower than the senders, so the
#              root (NOLOCK for pfifo_fast and softmq) keeps a backlog and
#              drops; attempts = pkts + errors (pktgen counts a drop as an
#              error and sends until COUNT went through)
#   gso        udpsend (--udpsend), one sender on CPU 0, into sd0 (the slow
#              device, as --slow-drain sets it: a one-packet FIFO,
#              --slow-pps wire packets a second): UDP GSO skbs of
#              --gso-segs 1400-byte datagrams (43 KB at 30), --count-gso a
#              run (default 200), the socket's send buffer SO_SNDBUF 128
#              KB (256 KB as the kernel doubles it: about five skbs queued
#              at a time, a sojourn under CoDel's 5 ms target at the
#              profile's 100 000 wire packets a second; at 1 MB, about 20
#              queued, fq_codel's CoDel dropped 25 % and softmq's 7 %).  The core
#              segments them after the qdisc (sd0 has no GSO), so the qdisc
#              queues and dequeues whole skbs, and its DRR sees each one
#              leave its ring tens of quanta in debt.  The sender marks the
#              profile's window itself (udpsend -M), after the device drained
#              its warm-up and after it drained the run: only the sends and
#              their transmission are counted.  Floor: bfifo.  Destinations
#              198.18.64.0 + 0..F-1, via 198.18.0.10 (a permanent neighbour).
#              With --profile --slow-drain only (MODE=profile).
#   tbf-dummy  pktgen into a dummy whose root is a tbf that never throttles
#              (100gbit) with each qdisc as its child: a root without
#              TCQ_F_CAN_BYPASS, so every packet goes through the child's
#              enqueue and dequeue even on 1 CPU (the child runs locked,
#              NOLOCK cleared by the graft).  Baseline: tbf's own bfifo.
#              Meant for MODE=icount: path length of the queueing path.
# Flows: F IPv4 destinations 198.19.0.0 + 0..F-1 walked in turn, fixed
# UDP ports (src 9, dst 9): F stable 5-tuples.
#
# Under TCG every fork+exec is expensive: the per-run path uses bash
# builtins and two tc invocations only.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

KO="" OUT="" ROUNDS=5 FLOWS="1 16 1024" TAG="" CPUS="" PROFILE=0 NMARK=0 NETNS=""
ARGS=("$@")
CNT_DUMMY=50000 CNT_VETH=20000 CNT_UDP=3000 CNT_GSO=200 GSO_SEGS=30
LOADS="dummy veth udp mq-dummy mq-veth" UDPSEND="" TCLIB="" MQQ=4 SMQ_OPTS=""
FLOW_SPLIT=0 XPS=0 SLOWDEV_KO="" SLOW_PPS=5000 SLOW_DRAIN=0 CNT_SLOW="" ONLY_QDISCS="" TXQLEN=1000
while [ $# -gt 0 ]; do
	case "$1" in
	--ko) KO=$2; shift 2;;
	--out) OUT=$2; shift 2;;
	--count-dummy) CNT_DUMMY=$2; shift 2;;
	--count-veth) CNT_VETH=$2; shift 2;;
	--count-udp) CNT_UDP=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--flows) FLOWS=$2; shift 2;;
	--loads) LOADS=$2; shift 2;;
	--udpsend) UDPSEND=$2; shift 2;;
	--tc-lib) TCLIB=$2; shift 2;;
	--mq-queues) MQQ=$2; shift 2;;
	--cpus) CPUS=$2; shift 2;;
	--tag) TAG=$2; shift 2;;
	--softmq-opts) SMQ_OPTS=$2; shift 2;;
	--profile) PROFILE=1; shift;;
	--netns) NETNS=$2; shift 2;;
	--flow-split) FLOW_SPLIT=1; shift;;
	--xps) XPS=1; shift;;
	--slowdev) SLOWDEV_KO=$2; shift 2;;
	--slow-pps) SLOW_PPS=$2; shift 2;;
	--slow-drain) SLOW_DRAIN=1; shift;;
	--count-slow) CNT_SLOW=$2; shift 2;;
	--count-gso) CNT_GSO=$2; shift 2;;
	--gso-segs) GSO_SEGS=$2; shift 2;;
	--qdiscs) ONLY_QDISCS=$2; shift 2;;
	--txqueuelen) TXQLEN=$2; shift 2;;
	*) echo "guest.sh: unknown argument $1" >&2; exit 2;;
	esac
done
[ -n "$OUT" ] || { echo "guest.sh: --out FILE needed" >&2; exit 2; }
case $TXQLEN in ''|*[!0-9]*) echo "guest.sh: --txqueuelen takes a number" >&2; exit 2;; esac

say() { echo "[bench] $*" >&2; }
fail() { say "ERROR: $*"; echo "FAIL bench-${TAG:-run}: $*"; exit 0; }

# --netns NAME: run in a network namespace of our own, made here and
# deleted after, so that on a real host (HOST=1) every device, address
# and route the bench makes lives and dies there.  What stays global:
# net.core.default_qdisc (restored on exit), the module, pktgen's module.
if [ -n "$NETNS" ] && [ -z "${SOFTMQ_BENCH_NETNS:-}" ]; then
	ip netns add "$NETNS" || fail "ip netns add $NETNS"
	SOFTMQ_BENCH_NETNS=$NETNS ip netns exec "$NETNS" "$0" "${ARGS[@]}"
	rc=$?
	ip netns del "$NETNS"
	exit $rc
fi

# The test bed's guest holds receive timestamps on (a TCG workaround, see
# tests/testbed/guest.sh); measure without them, as a host runs.
if [ -s /run/softmq-tstamp-hold.pid ]; then
	kill "$(cat /run/softmq-tstamp-hold.pid)" 2>/dev/null && sleep 1
	rm -f /run/softmq-tstamp-hold.pid
fi

PG=/proc/net/pktgen
NCPU=$(nproc)
[ -n "$CPUS" ] && [ "$CPUS" -lt "$NCPU" ] && NCPU=$CPUS
NRUN=0
PEERNS=bpeer

# ------------------------------------------------------------------ setup
# net.core.default_qdisc exists in the initial network namespace only.
DEFQ=/proc/sys/net/core/default_qdisc
if [ -n "${SOFTMQ_BENCH_NETNS:-}" ]; then
	defq_read() { nsenter --net=/proc/1/ns/net cat $DEFQ; }
	defq_write() { nsenter --net=/proc/1/ns/net sh -c "echo $1 > $DEFQ"; }
else
	defq_read() { cat $DEFQ; }
	defq_write() { echo "$1" > $DEFQ; }
fi
OLD_DEFAULT=$(defq_read) || fail "cannot read $DEFQ"
LOADED_KO=0
cleanup() {
	[ -e $PG/pgctrl ] && echo reset > $PG/pgctrl 2>/dev/null
	for d in bd0 bdm0 bv0 bvm0 bt0 sd0; do ip link del "$d" 2>/dev/null; done
	ip netns del $PEERNS 2>/dev/null
	defq_write "$OLD_DEFAULT" 2>/dev/null
	[ $LOADED_KO = 1 ] && rmmod sch_softmq 2>/dev/null
	[ $LOADED_SD = 1 ] && rmmod slowdev 2>/dev/null
}
LOADED_SD=0
trap cleanup EXIT
modprobe pktgen || fail "modprobe pktgen"
modprobe dummy numdummies=0 || fail "modprobe dummy"
modprobe veth || fail "modprobe veth"
if ! grep -q '^sch_softmq ' /proc/modules; then
	[ -n "$KO" ] && [ -e "$KO" ] || fail "no softmq module (--ko '$KO')"
	insmod "$KO" || fail "insmod $KO"
	LOADED_KO=1
fi
[ -d $PG ] || fail "no $PG"

# tc with the softmq plugin when there is one (options need it).
TC=(tc)
HAVE_OPTS=0
if [ -n "$TCLIB" ] && [ -e "$TCLIB/q_softmq.so" ]; then
	TC=(env "TC_LIB_DIR=$TCLIB" tc)
	HAVE_OPTS=1
fi

set_default_qdisc() { defq_write "$1" || fail "default_qdisc=$1"; }
set_default_qdisc pfifo_fast

ip netns del $PEERNS 2>/dev/null
ip netns add $PEERNS || fail "ip netns add"
ip -n $PEERNS link set lo up

mkdev_dummy() {   # NAME QUEUES
	ip link del "$1" 2>/dev/null
	ip link add "$1" numtxqueues "$2" numrxqueues "$2" type dummy || fail "dummy $1"
	ip link set "$1" txqueuelen "$TXQLEN" up || fail "up $1"
}
mkdev_veth() {    # NAME PEER QUEUES ADDR PEERADDR
	ip link del "$1" 2>/dev/null
	ip link add "$1" numtxqueues "$3" numrxqueues "$3" type veth \
		peer name "$2" numtxqueues "$3" numrxqueues "$3" netns $PEERNS ||
		fail "veth $1"
	ip link set "$1" txqueuelen "$TXQLEN" up || fail "up $1"
	ip addr add "$4/30" dev "$1"
	ip -n $PEERNS addr add "$5/30" dev "$2"
	ip -n $PEERNS link set "$2" up
}
set_xps() {   # DEV: CPU c sends on TX queue c % MQQ
	local q c m
	for ((q = 0; q < MQQ; q++)); do
		m=0
		for ((c = q; c < NCPU; c += MQQ)); do m=$((m | (1 << c))); done
		printf '%x' $m > "/sys/class/net/$1/queues/tx-$q/xps_cpus" || fail "xps_cpus $1 tx-$q"
	done
}
peer_mac() { ip -n $PEERNS -o link show "$1" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }

for l in $LOADS; do
	case $l in
	dummy) mkdev_dummy bd0 1;;
	mq-dummy) mkdev_dummy bdm0 "$MQQ"; [ $XPS = 1 ] && set_xps bdm0;;
	veth|udp) [ -e /sys/class/net/bv0 ] || mkdev_veth bv0 bv1 1 198.18.0.1 198.18.0.2;;
	mq-veth) mkdev_veth bvm0 bvm1 "$MQQ" 198.18.0.5 198.18.0.6;;
	tbf-dummy) mkdev_dummy bt0 1;;
	slow|gso)
		if [ $l = gso ] && { [ $PROFILE = 0 ] || [ $SLOW_DRAIN = 0 ]; }; then
			fail "the gso load is MODE=profile's (--profile --slow-drain)"
		fi
		[ -e /sys/class/net/sd0 ] && continue
		if ! grep -q '^slowdev ' /proc/modules; then
			[ -n "$SLOWDEV_KO" ] && [ -e "$SLOWDEV_KO" ] || fail "no slowdev module (--slowdev '$SLOWDEV_KO')"
			insmod "$SLOWDEV_KO" "rate_pps=$SLOW_PPS" fifo_len=8 || fail "insmod $SLOWDEV_KO"
			LOADED_SD=1
		fi
		echo "$SLOW_PPS" > /sys/module/slowdev/parameters/rate_pps
		# --slow-drain: a one-packet device FIFO, so the qdisc holds the backlog
		echo $([ $SLOW_DRAIN = 1 ] && echo 1 || echo 8) > /sys/module/slowdev/parameters/fifo_len
		ip link del sd0 2>/dev/null
		ip link add sd0 type slowdev || fail "slowdev sd0"
		ip link set sd0 txqueuelen $([ $SLOW_DRAIN = 1 ] && echo 20000 || echo 1000) up || fail "up sd0"
		ip addr add 198.18.0.9/30 dev sd0 || fail "sd0's address"
		ip neigh replace 198.18.0.10 lladdr 02:00:00:00:00:02 dev sd0 nud permanent &&
			ip route replace 198.18.64.0/18 via 198.18.0.10 dev sd0 || fail "sd0's route";;
	*) fail "unknown load $l";;
	esac
done
if [ -e /sys/class/net/bv0 ]; then
	# UDP: 198.19.0.0/16 via the peer, whose IP layer drops what it is not
	# asked to forward (forwarding is off in the netns: no ICMP back).  A
	# permanent neighbour: the peer has no reason to answer ARP for it.
	ip route replace 198.19.0.0/16 via 198.18.0.2 dev bv0
	ip neigh replace 198.18.0.2 lladdr "$(peer_mac bv1)" dev bv0 nud permanent
fi

# ------------------------------------------------------------------ qdiscs
# Each switch deletes the root (an IFF_NO_QUEUE device then gets noqueue)
# and adds a fresh one: "replace" onto the same kind would only change().
qdiscs_for() {   # LOAD -> QDISCS (global)
	case $1 in
	mq-*) QDISCS="noqueue mq-pfifo_fast mq-softmq";;
	gso) QDISCS="bfifo pfifo_fast fq_codel fq softmq-flow"
	   [ $HAVE_OPTS = 1 ] && QDISCS="$QDISCS softmq-cpu softmq-flow-nocodel softmq-cpu-nocodel";;
	slow) QDISCS="pfifo_fast fq_codel fq softmq-flow"
	   [ $HAVE_OPTS = 1 ] && QDISCS="$QDISCS softmq-cpu"
	   [ $SLOW_DRAIN = 1 ] && QDISCS="bfifo $QDISCS" &&
		[ $HAVE_OPTS = 1 ] && QDISCS="$QDISCS softmq-flow-nocodel softmq-cpu-nocodel";;
	tbf-*) QDISCS="tbf-bfifo tbf-pfifo_fast tbf-fq_codel tbf-fq tbf-softmq-flow"
	   # the AQM's own cost: the same with CoDel off (an older module
	   # refuses nocodel: set_qdisc fails and the cell says so)
	   [ $HAVE_OPTS = 1 ] && QDISCS="$QDISCS tbf-softmq-cpu tbf-softmq-flow-nocodel tbf-softmq-cpu-nocodel";;
	*) QDISCS="noqueue pfifo_fast fq_codel fq softmq-flow"
	   [ $HAVE_OPTS = 1 ] && QDISCS="$QDISCS softmq-cpu"
	   # CoDel's own cost at the root: only where --qdiscs asks for it
	   [ $HAVE_OPTS = 1 ] && [ -n "$ONLY_QDISCS" ] &&
		QDISCS="$QDISCS softmq-flow-nocodel softmq-cpu-nocodel";;
	esac
	if [ -n "$ONLY_QDISCS" ]; then
		local q keep=""
		for q in $QDISCS; do
			[[ " $ONLY_QDISCS " == *" $q "* ]] && keep="$keep${keep:+ }$q"
		done
		QDISCS=$keep
	fi
}

set_qdisc() {   # DEV QDISC
	local dev=$1 q=$2 add=""
	case $q in
	noqueue) ;;
	bfifo) add="qdisc add dev $dev root bfifo";;
	pfifo_fast) add="qdisc add dev $dev root pfifo_fast";;
	fq_codel) add="qdisc add dev $dev root fq_codel";;
	fq) add="qdisc add dev $dev root fq";;
	softmq-flow)
		if [ $HAVE_OPTS = 1 ]; then add="qdisc add dev $dev root softmq key flow $SMQ_OPTS"
		else add="qdisc add dev $dev root softmq"; fi;;
	softmq-cpu) add="qdisc add dev $dev root softmq key cpu $SMQ_OPTS";;
	softmq-flow-nocodel|softmq-cpu-nocodel) q=${q#softmq-}
		add="qdisc add dev $dev root softmq key ${q%-nocodel} nocodel $SMQ_OPTS";;
	mq-pfifo_fast|mq-softmq)
		set_default_qdisc "${q#mq-}"
		add="qdisc add dev $dev root handle 1: mq";;
	tbf-*)
		add="qdisc add dev $dev root handle 1: tbf rate 100gbit burst 10mb limit 10mb"
		case $q in
		tbf-bfifo) ;;
		tbf-pfifo_fast) add="$add
qdisc add dev $dev parent 1:1 handle 10: pfifo_fast";;
		tbf-fq_codel) add="$add
qdisc add dev $dev parent 1:1 handle 10: fq_codel";;
		tbf-fq) add="$add
qdisc add dev $dev parent 1:1 handle 10: fq";;
		tbf-softmq-flow) add="$add
qdisc add dev $dev parent 1:1 handle 10: softmq$([ $HAVE_OPTS = 1 ] && echo " key flow $SMQ_OPTS")";;
		tbf-softmq-cpu) add="$add
qdisc add dev $dev parent 1:1 handle 10: softmq key cpu $SMQ_OPTS";;
		tbf-softmq-flow-nocodel|tbf-softmq-cpu-nocodel) q=${q#tbf-softmq-}; add="$add
qdisc add dev $dev parent 1:1 handle 10: softmq key ${q%-nocodel} nocodel $SMQ_OPTS";;
		*) fail "unknown qdisc $q";;
		esac;;
	*) fail "unknown qdisc $q";;
	esac
	"${TC[@]}" -force -batch - <<<"qdisc del dev $dev root
$add" 2>/dev/null
	set_default_qdisc pfifo_fast
}

# qdisc_check DEV QDISC: reads tc -s once; fails on a wrong root kind; sets
# Q_DROPS (root line's "dropped": mq sums its children there), Q_DESC (the
# qdisc lines) and Q_X (JSON: root sent/requeues, softmq xstats summed over
# the softmq instances: how many packets bypassed the queue,
# packets spilled beyond a ring's slots, lost cmpxchg races, dequeue skips of unpublished slots).
qdisc_check() {
	local dev=$1 q=$2 l kind="" n=0 want k sent=0 req=0
	local -A x=([bypassed]=0 [spilled]=0 [push_retries]=0 [busy_skips]=0 [ring_hiwat]=0 [allocated_rings]=0)
	Q_DROPS=null Q_DESC=""
	mapfile -t TCS < <("${TC[@]}" -s qdisc show dev "$dev")
	for l in "${TCS[@]}"; do
		if [[ $l == qdisc\ * ]]; then
			n=$((n + 1))
			[ $n = 1 ] && { kind=${l#qdisc }; kind=${kind%% *}; }
			Q_DESC="$Q_DESC${Q_DESC:+; }$l"
			continue
		fi
		if [ $n = 1 ] && [[ $l =~ Sent\ [0-9]+\ bytes\ ([0-9]+)\ pkt\ \(dropped\ ([0-9]+),\ overlimits\ [0-9]+\ requeues\ ([0-9]+) ]]; then
			sent=${BASH_REMATCH[1]} Q_DROPS=${BASH_REMATCH[2]} req=${BASH_REMATCH[3]}
		fi
		for k in "${!x[@]}"; do
			if [[ $l =~ (^|[[:space:]])$k\ ([0-9]+) ]]; then
				if [ "$k" = ring_hiwat ]; then
					[ "${BASH_REMATCH[2]}" -gt "${x[$k]}" ] && x[$k]=${BASH_REMATCH[2]}
				else
					x[$k]=$(( ${x[$k]} + ${BASH_REMATCH[2]} ))
				fi
			fi
		done
	done
	case $q in mq-*) want=mq;; tbf-*) want=tbf;; softmq-*) want=softmq;; *) want=$q;; esac
	[ "$kind" = "$want" ] || fail "$dev: wanted $want, found '$kind'"
	if [[ $q == tbf-?* ]] && [ "$q" != tbf-bfifo ]; then
		want=${q#tbf-}; want=${want%%-*}
		[[ $Q_DESC == *"qdisc $want 10: parent 1:1"* ]] ||
			fail "$dev: wanted $want under tbf, found '$Q_DESC'"
	fi
	Q_X="{\"sent\":$sent,\"requeues\":$req"
	case $q in *softmq*)
		for k in "${!x[@]}"; do Q_X="$Q_X,\"$k\":${x[$k]}"; done;;
	esac
	Q_X="$Q_X}"
}

# ------------------------------------------------------------------ pktgen
pg_set() {   # FILE CMD
	echo "$2" > "$PG/$1" 2>/dev/null ||
		fail "pktgen $1: '$2': $(grep Result "$PG/$1" 2>/dev/null)"
}

pg_setup() {   # DEV FLOWS DSTMAC
	local dev=$1 flows=$2 mac=$3 cpu first=0 last f
	pg_set pgctrl reset
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		[ $FLOW_SPLIT = 1 ] && first=$((cpu * flows))
		last=$((first + flows - 1))
		pg_set "kpktgend_$cpu" rem_device_all
		pg_set "kpktgend_$cpu" "add_device $dev@$cpu"
		f=$dev@$cpu
		pg_set "$f" "xmit_mode queue_xmit"
		pg_set "$f" "clone_skb 0"
		pg_set "$f" "pkt_size 64"
		pg_set "$f" "delay 0"
		pg_set "$f" "src_min 198.18.0.1"
		pg_set "$f" "src_max 198.18.0.1"
		pg_set "$f" "dst_min 198.19.$((first / 256)).$((first % 256))"
		pg_set "$f" "dst_max 198.19.$((last / 256)).$((last % 256))"
		pg_set "$f" "udp_src_min 9"
		pg_set "$f" "udp_src_max 9"
		pg_set "$f" "udp_dst_min 9"
		pg_set "$f" "udp_dst_max 9"
		[ -n "$mac" ] && pg_set "$f" "dst_mac $mac"
	done
}

pg_count() {   # DEV N
	local cpu
	for ((cpu = 0; cpu < NCPU; cpu++)); do pg_set "$1@$cpu" "count $2"; done
}

# pg_run DEV: start all threads, wait; sets R_PK R_ER R_MAX R_SUM R_PER
PG_RE='Result: OK: ([0-9]+)\(c[0-9]+\+d[0-9]+\) usec, ([0-9]+) \([0-9]+byte,[0-9]+frags\).*errors: ([0-9]+)'
pg_run() {
	local dev=$1 cpu txt us pk er
	pg_set pgctrl start
	R_PK=0 R_ER=0 R_MAX=0 R_SUM=0 R_PER=""
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		# Result: OK: 123(c100+d23) usec, 10000 (64byte,0frags)
		#   81000pps 41Mb/sec (41472000bps) errors: 0
		read -r -d '' txt < "$PG/$dev@$cpu"
		[[ $txt =~ $PG_RE ]] || fail "no pktgen result for $dev@$cpu"
		us=${BASH_REMATCH[1]} pk=${BASH_REMATCH[2]} er=${BASH_REMATCH[3]}
		R_PK=$((R_PK + pk)) R_ER=$((R_ER + er)) R_SUM=$((R_SUM + us))
		[ "$us" -gt $R_MAX ] && R_MAX=$us
		R_PER="$R_PER${R_PER:+,}{\"pkts\":$pk,\"errors\":$er,\"us\":$us}"
	done
}

# profile_mark: ends the plugin's current phase (its dump is phase NMARK-1).
profile_mark() {
	[ $PROFILE = 1 ] || return 0
	echo 4 > /proc/sys/vm/drop_caches
	NMARK=$((NMARK + 1))
}

# ------------------------------------------------------------------ records
emit() { echo "$1" >> "$OUT"; NRUN=$((NRUN + 1)); }
json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; JS="\"${s//$'\t'/ }\""; }

env_record() {
	local ver cpu k v o="{\"type\":\"env\""
	ver=$(cat /sys/module/sch_softmq/version 2>/dev/null || modinfo -F version "${KO:-sch_softmq}" 2>/dev/null)
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	for kv in "kernel=$(uname -r)" "cpu_model=$cpu" "softmq_version=$ver" \
		"tc=$(tc -V 2>&1 | head -n 1)" "flows=$FLOWS" "loads=$LOADS" \
		"tag=$TAG" "softmq_opts=$SMQ_OPTS" "cmdline=$(cat /proc/cmdline)"; do
		k=${kv%%=*} v=${kv#*=}
		json_str "$v"; o="$o,\"$k\":$JS"
	done
	o="$o,\"possible_cpus\":$(( $(cut -d- -f2 /sys/devices/system/cpu/possible) + 1 ))"
	o="$o,\"online_cpus\":$(nproc),\"vcpus\":$NCPU,\"rounds\":$ROUNDS,\"mq_queues\":$MQQ"
	o="$o,\"flow_split\":$FLOW_SPLIT,\"xps\":$XPS,\"slow_pps\":$SLOW_PPS,\"txqueuelen\":$TXQLEN"
	o="$o,\"count_per_thread\":{\"dummy\":$CNT_DUMMY,\"veth\":$CNT_VETH,\"udp\":$CNT_UDP}"
	o="$o,\"tc_options\":$([ $HAVE_OPTS = 1 ] && echo true || echo false)}"
	echo "$o" >> "$OUT"
}

# The clocksource now: it may change mid-boot (the tsc found unstable), and
# with it every packet's cost where the qdisc reads the clock.
clocksource_now() {
	read -r CS < /sys/devices/system/clocksource/clocksource0/current_clocksource || CS=unknown
}

# --slow-drain: wait until the slowdev has sent a run's packets.  A fixed
# sleep, not a poll of tc: a dump would run the qdisc's dump code inside
# the profile's window.  Under -icount sleep=off an idle vCPU skips ahead
# in guest time, so the wait costs little wall time.
drain_wait() {   # LOAD PACKETS_PER_THREAD
	[ "$1" = slow ] && [ $SLOW_DRAIN = 1 ] || return 0
	sleep "$(awk -v n="$2" -v c="$NCPU" -v r="$SLOW_PPS" 'BEGIN { printf "%.3f", n * c / r + 0.05 }')"
}

warm_count() { # FLOWS COUNT -> W: enough packets per thread to touch every flow
	W=$(( $1 + 100 ))
	[ $W -gt "$2" ] && W=$2
}

bench_pktgen() {   # LOAD DEV DSTMAC COUNT
	local load=$1 dev=$2 mac=$3 count=$4 flows r q t0
	for flows in $FLOWS; do
		pg_setup "$dev" "$flows" "$mac"
		warm_count "$flows" "$count"
		qdiscs_for "$load"
		for ((r = 1; r <= ROUNDS; r++)); do
			for q in $QDISCS; do
				t0=$EPOCHREALTIME
				set_qdisc "$dev" "$q"
				pg_count "$dev" "$W"
				pg_run "$dev"
				drain_wait "$load" "$W"
				pg_count "$dev" "$count"
				profile_mark
				pg_run "$dev"
				drain_wait "$load" "$count"
				profile_mark
				qdisc_check "$dev" "$q"
				clocksource_now
				json_str "$Q_DESC"
				emit "{\"type\":\"run\",\"load\":\"$load\",\"clocksource\":\"$CS\",\"dev\":\"$dev\",\"qdisc\":\"$q\",\"flows\":$flows,\"round\":$r,\"vcpus\":$NCPU,\"profile_phase\":$((NMARK - 1)),\"pkts\":$R_PK,\"errors\":$R_ER,\"elapsed_us\":$R_MAX,\"cpu_us\":$R_SUM,\"qdisc_drops\":$Q_DROPS,\"qstats\":$Q_X,\"threads\":[$R_PER],\"qdisc_desc\":$JS,\"wall_s\":$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))e-3}"
				say "$load $q flows=$flows round=$r: $R_PK pkts in ${R_MAX}us, errors $R_ER"
			done
		done
	done
	pg_set pgctrl reset
}

bench_udp() {   # COUNT
	local count=$1 flows r q out t0
	[ -x "$UDPSEND" ] || fail "no udpsend binary (--udpsend '$UDPSEND')"
	for flows in $FLOWS; do
		warm_count "$flows" "$count"
		qdiscs_for udp
		for ((r = 1; r <= ROUNDS; r++)); do
			for q in $QDISCS; do
				t0=$EPOCHREALTIME
				set_qdisc bv0 "$q"
				out=$("$UDPSEND" -n "$NCPU" -c "$count" -w "$W" -f "$flows" \
					-b 198.19.0.0 -p 9 -s 64) || fail "udpsend failed"
				qdisc_check bv0 "$q"
				json_str "$Q_DESC"
				emit "{\"type\":\"run\",\"load\":\"udp\",\"dev\":\"bv0\",\"qdisc\":\"$q\",\"flows\":$flows,\"round\":$r,\"vcpus\":$NCPU,\"udp\":$out,\"qdisc_drops\":$Q_DROPS,\"qstats\":$Q_X,\"qdisc_desc\":$JS,\"wall_s\":$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))e-3}"
				say "udp $q flows=$flows round=$r: $out"
			done
		done
	done
}

# The gso load (MODE=profile): sd0 as --slow-drain set it up above.
# udpsend marks the window itself; NMARK counts its marks.
bench_gso() {   # COUNT
	local count=$1 flows r q out t0 ms
	[ -x "$UDPSEND" ] || fail "no udpsend binary (--udpsend '$UDPSEND')"
	for flows in $FLOWS; do
		warm_count "$flows" "$count"
		# the device's time for the larger of the two phases, and 50 ms
		ms=$(( (count > W ? count : W) * GSO_SEGS * 1000 / SLOW_PPS + 50 ))
		qdiscs_for gso
		for ((r = 1; r <= ROUNDS; r++)); do
			for q in $QDISCS; do
				t0=$EPOCHREALTIME
				set_qdisc sd0 "$q"
				out=$("$UDPSEND" -n 1 -c "$count" -w "$W" -f "$flows" \
					-b 198.18.64.0 -p 9 -s 1442 -g "$GSO_SEGS" \
					-B 131072 -D "$ms" -M) || fail "udpsend failed"
				NMARK=$((NMARK + 2))
				qdisc_check sd0 "$q"
				clocksource_now
				json_str "$Q_DESC"
				[[ $out =~ \"sent\":([0-9]+),\"drops\":([0-9]+) ]] ||
					fail "udpsend's output: $out"
				emit "{\"type\":\"run\",\"load\":\"gso\",\"clocksource\":\"$CS\",\"dev\":\"sd0\",\"qdisc\":\"$q\",\"flows\":$flows,\"round\":$r,\"vcpus\":$NCPU,\"profile_phase\":$((NMARK - 1)),\"pkts\":${BASH_REMATCH[1]},\"errors\":${BASH_REMATCH[2]},\"gso_segs\":$GSO_SEGS,\"udp\":$out,\"qdisc_drops\":$Q_DROPS,\"qstats\":$Q_X,\"qdisc_desc\":$JS,\"wall_s\":$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))e-3}"
				say "gso $q flows=$flows round=$r: $out"
			done
		done
	done
}

: > "$OUT" || fail "cannot write $OUT"
env_record
t0=$(date +%s)
for l in $LOADS; do
	case $l in
	dummy) bench_pktgen dummy bd0 "" "$CNT_DUMMY";;
	veth) bench_pktgen veth bv0 "$(peer_mac bv1)" "$CNT_VETH";;
	mq-dummy) bench_pktgen mq-dummy bdm0 "" "$CNT_DUMMY";;
	mq-veth) bench_pktgen mq-veth bvm0 "$(peer_mac bvm1)" "$CNT_VETH";;
	tbf-dummy) bench_pktgen tbf-dummy bt0 "" "$CNT_DUMMY";;
	slow) bench_pktgen slow sd0 "" "${CNT_SLOW:-$CNT_DUMMY}";;
	udp) bench_udp "$CNT_UDP";;
	gso) bench_gso "$CNT_GSO";;
	esac
done
set_default_qdisc pfifo_fast
[ $PROFILE = 1 ] && { cp /proc/kallsyms "$(dirname "$OUT")/kallsyms" || fail "cannot copy /proc/kallsyms"; }
say "$NRUN runs in $(( $(date +%s) - t0 ))s"
echo "PASS bench-${TAG:-run}: $NRUN runs"
exit
}
