# SPDX-License-Identifier: GPL-2.0
# Helpers of the reliability tests (tests/vm/6*-*.sh), sourced in the guest.
#
# Settings (environment):
#   SOFTMQ_FULL=1           full counts (make check-full); default: short
#   SOFTMQ_LOAD_DELAY_NS    pktgen gap per packet and thread (default 200000:
#                           5 kpps per vCPU; >= 100 us so pktgen sleeps
#                           instead of spinning and the control path runs)
#   SOFTMQ_LOAD_IPERF_BW    iperf3 bandwidth per stream (default 50M)
#   SOFTMQ_PROBE_MS         probe latency limit (default 10)
# The test bed's names (module paths, plugin dir, results dir) are looked
# up in tests/vm/lib.sh only; sourced first, its helpers that share a name
# with ours (skip, note, qget) are replaced below.

REL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../vm/lib.sh
. "$REL_DIR/../vm/lib.sh"
REPO=$SMQ_REPO
FULL=${SOFTMQ_FULL:-0}
NCPU=$(nproc)
PY="/usr/bin/python3 -B"
QSTAT="$PY $REL_DIR/qstat.py"
PROBE_MS=${SOFTMQ_PROBE_MS:-10}
LOAD_DELAY_NS=${SOFTMQ_LOAD_DELAY_NS:-200000}
LOAD_IPERF_BW=${SOFTMQ_LOAD_IPERF_BW:-50M}
NS=smqpeer
DEV=smq0 PEER=smq1 ADDR=198.18.77.1 PEER_ADDR=198.18.77.2
REL_FAILS=0

ok()   { echo "PASS $1"; }
bad()  { echo "FAIL $1: $2"; REL_FAILS=$((REL_FAILS + 1)); }
skip() { echo "SKIP $1: $2"; }
note() { echo "  $*"; }
# n SHORT FULL: the count for this mode
n() { if [ "$FULL" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# ---------------------------------------------------------------- modules
# KO: a private copy of $SMQ_KO taken once per boot, so a rebuild of
# the build dir on the host during a run cannot hand insmod a half-written
# or different module.
KO=/run/softmq-rel.ko
load_softmq() {
	if [ ! -e $KO ]; then
		[ -e "$SMQ_KO" ] || { echo "no $SMQ_KO (tests/testbed/build.sh LINE)"; return 1; }
		cp "$SMQ_KO" $KO.tmp && mv $KO.tmp $KO || return 1
	fi
	grep -q '^sch_softmq ' /proc/modules && return 0
	insmod $KO
}
slowdev_ko() { echo "$SLOWDEV_KO"; }
load_slowdev() {
	grep -q '^slowdev ' /proc/modules && return 0
	[ -e "$(slowdev_ko)" ] || return 1
	insmod "$(slowdev_ko)" "$@"
}

# ---------------------------------------------------------------- memory
# mem_snap: "SUnreclaim_kB VmallocUsed_kB Percpu_kB skbuff_objects".
# Shrinking every cache first flushes per-CPU slabs and, under KASAN, the
# quarantine (kmem_cache_shrink drains it), so freed objects really count
# as free.
mem_snap() {
	local f
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2>/dev/null
	awk '/^SUnreclaim:/ {s=$2} /^VmallocUsed:/ {v=$2} /^Percpu:/ {p=$2}
	     END {printf "%d %d %d ", s, v, p}' /proc/meminfo
	awk '/^skbuff_/ {n += $2} END {print n + 0}' /proc/slabinfo 2>/dev/null || echo 0
}
# mem_check NAME "BASELINE": every counter back within its tolerance
# (retried for ~15 s: RCU-deferred frees, socket teardown).
MEM_TOL_SLAB_KB=${SOFTMQ_MEM_TOL_SLAB_KB:-2048}
MEM_TOL_VMALLOC_KB=${SOFTMQ_MEM_TOL_VMALLOC_KB:-512}
MEM_TOL_PERCPU_KB=${SOFTMQ_MEM_TOL_PERCPU_KB:-256}
MEM_TOL_SKB=${SOFTMQ_MEM_TOL_SKB:-256}
mem_check() {
	local name=$1 base=$2 now i s0 v0 p0 k0 s1 v1 p1 k1 why
	read -r s0 v0 p0 k0 <<< "$base"
	for i in $(seq 30); do
		now=$(mem_snap)
		read -r s1 v1 p1 k1 <<< "$now"
		why=""
		[ $((s1 - s0)) -gt "$MEM_TOL_SLAB_KB" ] && why="$why SUnreclaim +$((s1 - s0)) kB"
		[ $((v1 - v0)) -gt "$MEM_TOL_VMALLOC_KB" ] && why="$why VmallocUsed +$((v1 - v0)) kB"
		[ $((p1 - p0)) -gt "$MEM_TOL_PERCPU_KB" ] && why="$why Percpu +$((p1 - p0)) kB"
		[ $((k1 - k0)) -gt "$MEM_TOL_SKB" ] && why="$why skbuff objects +$((k1 - k0))"
		[ -z "$why" ] && break
		sleep 0.5
	done
	note "memory $name: SUnreclaim $s0 -> $s1 kB, VmallocUsed $v0 -> $v1 kB, Percpu $p0 -> $p1 kB, skbuff objects $k0 -> $k1"
	if [ -n "$why" ]; then bad "$name" "not back to baseline:$why"; else ok "$name"; fi
}

# kmemleak_scan NAME [PATTERN]: on a kmemleak kernel, scan and fail on
# unreferenced objects (whose report matches PATTERN, default any).
kmemleak_scan() {
	local name=$1 pat=${2:-.} out
	[ -w /sys/kernel/debug/kmemleak ] || { skip "$name" "kernel without kmemleak (only the KASAN line has it)"; return 0; }
	# Objects must be older than 5 s and be seen unreferenced twice.
	sleep 6
	echo scan > /sys/kernel/debug/kmemleak 2>/dev/null ||
		{ skip "$name" "kmemleak is off (boot with kmemleak=on)"; return 0; }
	sleep 1
	echo scan > /sys/kernel/debug/kmemleak
	out=$(cat /sys/kernel/debug/kmemleak)
	if [ -n "$out" ] && printf '%s\n' "$out" | grep -qE "$pat"; then
		printf '%s\n' "$out" | head -n 60 | sed 's/^/    | /'
		bad "$name" "kmemleak: $(printf '%s\n' "$out" | grep -c 'unreferenced object') unreferenced object(s)"
	else
		ok "$name"
	fi
}

# ---------------------------------------------------------------- topology
# veth pair smq0 (here) <-> smq1 (netns smqpeer), TXQ queues each, static
# neighbours, IPv6 off, no offloads on smq0 (1 skb = 1 packet), GRO on the
# peer (lets a backlog build).
PEER_MAC=""
topo_up() {
	local txq=${1:-$NCPU}
	topo_down
	modprobe veth 2>/dev/null
	ip netns add $NS || return 1
	ip link add $DEV numtxqueues "$txq" numrxqueues "$txq" type veth \
		peer name $PEER numtxqueues "$txq" numrxqueues "$txq" netns $NS || return 1
	sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1
	ip netns exec $NS sysctl -qw net.ipv6.conf.$PEER.disable_ipv6=1
	ip addr add $ADDR/24 dev $DEV
	ip netns exec $NS ip addr add $PEER_ADDR/24 dev $PEER
	ip netns exec $NS ip link set lo up
	ip link set $DEV up
	ip netns exec $NS ip link set $PEER up
	ethtool -K $DEV tso off gso off gro off > /dev/null 2>&1
	ip netns exec $NS ethtool -K $PEER gro on > /dev/null 2>&1
	PEER_MAC=$(ip netns exec $NS cat /sys/class/net/$PEER/address)
	ip neigh replace $PEER_ADDR lladdr "$PEER_MAC" dev $DEV nud permanent
	ip netns exec $NS ip neigh replace $ADDR lladdr "$(cat /sys/class/net/$DEV/address)" \
		dev $PEER nud permanent
}
topo_down() {
	ip link del $DEV 2>/dev/null
	ip netns del $NS 2>/dev/null
	true
}

# ---------------------------------------------------------------- load
PG=/proc/net/pktgen
pg() {   # pg FILE CMD: pktgen command, checked (builtins only: ~30 per set-up)
	local l
	echo "$2" > "$PG/$1" 2>/dev/null
	while IFS= read -r l; do
		case "$l" in
		*'Result: OK'*) return 0;;
		*Result:*) echo "pktgen $1: '$2' failed: $l"; return 1;;
		esac
	done < "$PG/$1"
	echo "pktgen $1: '$2' failed: no result"
	return 1
}
# pg_setup DEV COUNT: one pktgen thread per vCPU on DEV (count 0 = forever)
pg_setup() {   # pg_setup DEV COUNT [DST DST_MAC]
	local dev=$1 count=$2 dst=${3:-$PEER_ADDR} mac=${4:-$PEER_MAC} c d
	modprobe pktgen 2>/dev/null
	[ -e $PG/pgctrl ] || { echo "no pktgen"; return 1; }
	for c in $(seq 0 $((NCPU - 1))); do
		echo rem_device_all > $PG/kpktgend_$c
	done
	for c in $(seq 0 $((NCPU - 1))); do
		d=$dev@$c
		pg kpktgend_$c "add_device $d" || return 1
		pg "$d" "xmit_mode queue_xmit" || return 1
		pg "$d" "count $count"
		pg "$d" "clone_skb 0"
		pg "$d" "pkt_size $((100 + 300 * (c % 3)))"
		pg "$d" "delay $LOAD_DELAY_NS"
		pg "$d" "dst $dst"
		pg "$d" "dst_mac $mac"
		pg "$d" "udp_dst_min 9"
		pg "$d" "udp_dst_max 9"
		pg "$d" "udp_src_min 1024"
		pg "$d" "udp_src_max 65000"
		pg "$d" "flag UDPSRC_RND"
		pg "$d" "skb_priority $((c % 8))"
	done
}
pg_start() { ( echo start > $PG/pgctrl ) 2>/dev/null & PG_PID=$!; }
pg_stop() {
	echo stop > $PG/pgctrl 2>/dev/null
	[ -n "${PG_PID:-}" ] && wait "$PG_PID" 2>/dev/null
	PG_PID=""
}
pg_running() { grep -q 'Running: [^ ]' $PG/kpktgend_* 2>/dev/null; }
# pg_totals DEV: "sofar errors" summed over the threads
pg_totals() {
	cat $PG/"$1"@* 2>/dev/null | awk '/pkts-sofar:/ {for (i = 1; i < NF; i++) {
		if ($i == "pkts-sofar:") s += $(i + 1); if ($i == "errors:") e += $(i + 1)}}
		END {print s + 0, e + 0}'
}
pg_clear() {
	local c
	for c in $(seq 0 $((NCPU - 1))); do echo rem_device_all > $PG/kpktgend_$c 2>/dev/null; done
	true
}

# load_start: pktgen (one thread per vCPU) and iperf3 (NCPU TCP streams)
# through $DEV; load_stop ends both.
load_start() {
	pg_setup $DEV 0 || return 1
	ip netns exec $NS iperf3 -s -D -p 5201 -I /run/smq-iperf3.pid > /dev/null 2>&1
	sleep 0.3
	iperf3 -c $PEER_ADDR -p 5201 -P "$NCPU" -t 86400 -b "$LOAD_IPERF_BW" \
		> "$SMQ_OUT/iperf3.log" 2>&1 &
	IPERF_PID=$!
	pg_start
}
# load_alive: pktgen threads and iperf3 still running (restarts pktgen,
# which stops itself when its device goes down)
load_keepalive() {
	pg_running || pg_start
	[ -n "${IPERF_PID:-}" ] && kill -0 "$IPERF_PID" 2>/dev/null
}
load_stop() {
	pg_stop
	[ -n "${IPERF_PID:-}" ] && { kill "$IPERF_PID" 2>/dev/null; wait "$IPERF_PID" 2>/dev/null; }
	IPERF_PID=""
	[ -e /run/smq-iperf3.pid ] && kill "$(cat /run/smq-iperf3.pid)" 2>/dev/null
	rm -f /run/smq-iperf3.pid
	pg_clear
	sleep 0.5
}

# ---------------------------------------------------------------- checks
# wait_drain DEV [SEC]: every qdisc of DEV reports qlen 0 and backlog 0
wait_drain() {
	local dev=$1 t=${2:-5} i out
	for i in $(seq $((t * 10))); do
		# drained: qstat named at least one qdisc, and none holds anything
		out=$($QSTAT --all "$dev") && [ -n "$out" ] &&
			! echo "$out" | grep -qvE 'qlen=0 backlog=0|kind=(noqueue|noop)' && return 0
		sleep 0.1
	done
	echo "    wait_drain: $dev not drained after ${t}s (qstat rc/output below)"
	$QSTAT --all "$dev" | sed 's/^/    /'
	return 1
}
# softmq_qlen DEV: packets queued in DEV's softmq qdiscs (tc -s; C, fast)
softmq_qlen() {
	tc -s qdisc show dev "$1" | awk '/^qdisc/ {s = ($2 == "softmq")}
		s && /backlog/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+p$/) n += $i + 0}
		END {print n + 0}'
}
# ring_wakeups DEV: ring wakeups summed over DEV's softmq qdiscs now (tc -s)
ring_wakeups() {
	tc -s qdisc show dev "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "ring_wakeups") n += $(i + 1) }
		END { print n + 0 }'
}
# rings_used_check NAME WAKEUPS: the churn's load really queued (a ring
# woke in the instances sampled before they went away), not bypass only
rings_used_check() {
	if [ "$2" -gt 0 ]; then ok "$1"; note "$1: $2 ring wakeups seen"
	else bad "$1" "no ring ever woke in the sampled instances: the load took the bypass path only, the churn never met a queued packet"; fi
}
devtx() {   # tx_packets + tx_dropped of DEV
	echo $(( $(cat /sys/class/net/"$1"/statistics/tx_packets) + $(cat /sys/class/net/"$1"/statistics/tx_dropped) ))
}
qget() {   # qget WORDS KEY
	local w
	for w in $1; do [ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }; done
	echo 0
}

# identity NAME DEV DST MAC: on a quiet DEV, a burst of pktgen packets
# (one thread per vCPU, queue_xmit) must be accounted for exactly:
#   qdisc sent + qdisc drops == pktgen sofar + errors (every packet entered)
#   qdisc drops == pktgen errors  (a qdisc drop is what pktgen sees fail)
#   qdisc sent == device tx_packets + tx_dropped (after the device drained)
#   softmq: qdisc drops == xstats drops_ring_full + drops_nomem
# DEV's root qdisc is the one counted (mq: the sum of its children).
identity() {
	local name=$1 dev=$2 dst=$3 mac=$4 q0 q1 d0 d1 sofar errs sent drops x0=0 x1=0 i nb
	nb=$(n 2000 10000)
	for i in $(seq 10); do   # quiet: nothing leaves DEV for 0.5 s
		d0=$(devtx "$dev"); sleep 0.5
		[ "$(devtx "$dev")" = "$d0" ] && break
	done
	pg_setup "$dev" $((nb / NCPU)) "$dst" "$mac" || { bad "$name" "pktgen setup failed"; return; }
	q0=$($QSTAT "$dev"); d0=$(devtx "$dev")
	echo start > $PG/pgctrl 2>/dev/null
	wait_drain "$dev" 20
	q1=$($QSTAT "$dev")
	sent=$(( $(qget "$q1" packets) - $(qget "$q0" packets) ))
	for i in $(seq 30); do   # the device's own FIFO drains after the qdisc
		d1=$(devtx "$dev")
		[ $((d1 - d0)) -ge "$sent" ] && break
		sleep 0.2
	done
	read -r sofar errs <<< "$(pg_totals "$dev")"
	pg_clear
	drops=$(( $(qget "$q1" drops) - $(qget "$q0" drops) ))
	if [ "$(qget "$q1" kind)" = softmq ]; then
		x0=$(( $(qget "$q0" drops_ring_full) + $(qget "$q0" drops_nomem) ))
		x1=$(( $(qget "$q1" drops_ring_full) + $(qget "$q1" drops_nomem) ))
	else
		x1=$drops
	fi
	note "identity $name ($(qget "$q1" kind) root of $dev): pktgen sofar $sofar errors $errs; qdisc sent $sent drops $drops (softmq xstats drops $((x1 - x0))); device tx+dropped $((d1 - d0))"
	if [ "$sofar" -ne $((nb / NCPU * NCPU)) ]; then
		bad "$name" "pktgen sent $sofar of $((nb / NCPU * NCPU))"
	elif [ $((sent + drops)) -ne $((sofar + errs)) ] || [ "$drops" -ne "$errs" ] ||
	     [ "$sent" -ne $((d1 - d0)) ] || [ $((x1 - x0)) -ne "$drops" ]; then
		bad "$name" "sent $sent + drops $drops != pktgen $((sofar + errs)) (errors $errs), or device $((d1 - d0)) != sent, or xstats drops $((x1 - x0)) != drops"
	else
		ok "$name"
	fi
}

# after_load NAME: the checks after every churn test, load stopped, on
# $DEV (the veth the load ran through):
#  - nothing stuck: every qdisc of $DEV drains to qlen 0 / backlog 0;
#  - a probe leaves within PROBE_MS (tests/fuzz/probe.py);
#  - counter identity (identity above) on the qdisc the test left;
#  - for softmq, again on a single one-slot ring (flows 1 depth 1), where
#    concurrent producers can collide and drop.
after_load() {
	local name=$1 out
	if wait_drain $DEV 10; then ok "$name-drained"; else bad "$name-drained" "packets stuck in the qdisc after the load stopped"; fi
	if out=$($PY "$REL_DIR/probe.py" $DEV $PEER_ADDR --limit-ms "$PROBE_MS"); then
		ok "$name-probe"; note "$out"
	else
		bad "$name-probe" "$out"
	fi
	identity "$name-identity" $DEV $PEER_ADDR "$PEER_MAC"
	[ "$(qget "$($QSTAT $DEV)" kind)" = softmq ] || return 0
	tc qdisc change dev $DEV root softmq flows 1 depth 1 key flow ||
		{ bad "$name-identity-drops" "cannot change to flows 1 depth 1"; return; }
	identity "$name-identity-drops" $DEV $PEER_ADDR "$PEER_MAC"
}
