# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared helpers for the softmq VM tests (tests/vm/[1-9]*.sh, the demo's
# guest half): case lines, modules, namespaces and veth pairs, captures,
# pktgen, the churn suites' load, memory and identity checks, the install
# suites' (80-install-*.sh) set-up and checks.  Sourced by
# bash, never run: executed on its own it does nothing and exits 0.
#
# Every name the test bed gives us is looked up here and only here, so a
# rename in tests/testbed/vm.sh is a one-line fix below.  Python helpers
# (lib/*.py) get what they need from the SMQ_* variables exported here.
#
# Settings (environment):
#   SOFTMQ_FULL=1           full counts and every plan part (make check-full)
#   SOFTMQ_LOAD_DELAY_NS    churn load: pktgen gap per packet and thread
#                           (default 200000: 5 kpps per vCPU; >= 100 us so
#                           pktgen sleeps instead of spinning and the
#                           control path runs)
#   SOFTMQ_LOAD_IPERF_BW    churn load: iperf3 bandwidth per stream (50M)
#   SOFTMQ_PROBE_MS         probe latency limit (default 10)
#   SOFTMQ_MEM_TOL_*        mem_check's tolerances (see there)
#
# Protocol (tests/testbed/harness.sh): one line per case, "PASS <name>",
# "FAIL <name>: <why>" or "SKIP <name>: <reason>"; exit non-zero only when
# the script itself broke.
[ "${BASH_SOURCE[0]}" = "$0" ] && exit 0

# ---------------------------------------------------------------- test bed env
SMQ_VMDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SMQ_REPO=${SOFTMQ_REPO:-$(cd "$SMQ_VMDIR/../.." && pwd)}
SMQ_LINE=${SOFTMQ_LINE:-$(uname -r)}                  # 6.1 6.12 7.2 7.2-rt
SMQ_KO=${SOFTMQ_KO:-$SMQ_REPO/build/$SMQ_LINE/softmq/sch_softmq.ko}
SMQ_TESTMODS=${SOFTMQ_TEST_MODULES:-$SMQ_REPO/build/$SMQ_LINE/modules}
SMQ_TC_LIB_DIR=${TC_LIB_DIR:-$SMQ_REPO/tc-plugin}     # holds q_softmq.so
SMQ_TC615=${SOFTMQ_TC615:-}                           # tc 6.15 binary, if any
SMQ_IN_VM=${SOFTMQ_IN_VM:-0}
SMQ_OUT=${SOFTMQ_RESULTS:-/tmp/softmq-results/$(basename "$0" .sh)}
SMQ_FULL=${SOFTMQ_FULL:-0}
export SMQ_REPO SMQ_LINE SMQ_KO SMQ_TESTMODS SMQ_OUT SMQ_TC615
export SOFTMQ_UAPI=$SMQ_REPO/include/uapi/softmq.h
export TC_LIB_DIR=$SMQ_TC_LIB_DIR

SLOWDEV_KO=$SMQ_TESTMODS/slowdev/slowdev.ko
# Debian's python3 (the host's / is the guest's root; a pyenv shim on PATH
# would not see python3-pyroute2 and friends).
PY=/usr/bin/python3
SMQ="$PY $SMQ_VMDIR/lib/smq.py"
FLOWS="$PY $SMQ_VMDIR/lib/flows.py"
# one qdisc's counters as shell words, "--all DEV": each qdisc's (smq.py stat)
QSTAT="$SMQ stat"
# The fuzz and churn suites' tools (nlfuzz.py, probe.py, flood.py)
SMQ_FUZZDIR=$SMQ_REPO/tests/fuzz
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

mkdir -p "$SMQ_OUT"
SMQ_ORIG_DEFAULT_QDISC=$(sysctl -n net.core.default_qdisc 2>/dev/null || echo fq_codel)
NCPU=$(nproc)
# nr_cpu_ids: the possible CPUs, hotplug slots included ("0-15" -> 16)
NR_CPU_IDS=$(( $(sed 's/.*[-,]//' /sys/devices/system/cpu/possible) + 1 ))
CPUS=$(seq -s, 0 $((NCPU - 1)))

# ---------------------------------------------------------------- case lines
# pass, fail, skip (the harness counts the lines)
. "$SMQ_VMDIR/../cases.sh"
note() { echo "  # $*"; }
# check NAME WHY CMD...: PASS if CMD succeeds, else FAIL NAME: WHY
check() {
	local name=$1 why=$2; shift 2
	if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
# need NAME WHY CMD...: CMD must succeed, else FAIL NAME: WHY and the
# script ends there (exit 0: a FAIL was counted, the script did not break)
need() {
	local name=$1 why=$2; shift 2
	"$@" || { fail "$name" "$why"; exit 0; }
}
# Float comparison: fcmp "1.5 < 2"
fcmp() { awk "BEGIN { exit !($*) }"; }
# n SHORT FULL [FOREIGN]: the count for this mode (make check / make
# check-full); FOREIGN, if given, is make check-full's count in a guest of
# another architecture (the cross lines: TCG translates i386 and arm64
# several times slower than x86_64 on x86_64, and the x86_64 lines run the
# full counts of the same code)
n() {
	if [ "$SMQ_FULL" != 1 ]; then
		echo "$1"
	elif [ -n "${3:-}" ] && [ "$(uname -m)" != x86_64 ]; then
		echo "$3"
	else
		echo "$2"
	fi
}

# Must run as root inside the VM: loading modules on the host is impossible
# (and must never be tried on a shared machine).
require_vm() {
	if [ "$SMQ_IN_VM" != 1 ] && [ "${SMQ_FORCE:-0}" != 1 ]; then
		skip "$1" "not inside the test VM (SOFTMQ_IN_VM!=1)"
		exit 0
	fi
}
# suite_start NAME: a traffic suite's start: in the VM (require_vm),
# smq_cleanup at exit, softmq loaded (else FAIL NAME-insmod and exit)
suite_start() {
	require_vm "$1"
	trap smq_cleanup EXIT
	need "$1-insmod" "insmod $SMQ_KO failed" softmq_load
}

# ---------------------------------------------------------------- plan
# part_runs SCRIPT:PART: does make check run this part of a script on this
# line?  tests/vm/quick-plan lists "<script>:<part> <line>..." the way it
# lists whole scripts; a part it does not list runs on every line, and
# make check-full (SOFTMQ_FULL=1) runs every part everywhere.  When the
# answer is no, prints the part's SKIP line (counted, with the reason).
# shellcheck source=plan.sh
. "$SMQ_VMDIR/plan.sh"
part_runs() {
	[ "$SMQ_FULL" = 1 ] && return 0
	plan_runs "$1" && return 0
	local lines
	lines=$(plan_lines "$1")
	if [ "$lines" = - ]; then
		skip "${1%%.sh:*}-${1##*:}" "make check leaves this part to make check-full (TCG time budget)"
	else
		skip "${1%%.sh:*}-${1##*:}" "make check runs this part on $lines only (TCG time budget); make check-full on every line"
	fi
	return 1
}

# ---------------------------------------------------------------- JSON
# jqv FILE FILTER: one value (raw)
jqv() { jq -r "$2" "$1"; }

# qget DEV [PARENT] FIELD...: softmq/qdisc values via netlink (see smq.py get)
qget() { $SMQ get "$@"; }
# qword WORDS KEY: KEY's value in a $QSTAT line ("kind=softmq packets=N
# ..."), 0 if absent: one snapshot read many times
qword() {
	local w
	for w in $1; do [ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }; done
	echo 0
}

# ---------------------------------------------------------------- modules
mod_loaded() { [ -d "/sys/module/$1" ]; }
mod_refcnt() { cat "/sys/module/$1/refcnt" 2>/dev/null || echo -1; }

# softmq_load inserts a private copy of $SMQ_KO taken once per boot, so a
# rebuild of the build dir on the host during a run cannot hand insmod a
# half-written or different module.
SMQ_KO_COPY=/run/softmq-test.ko
softmq_load() {
	mod_loaded sch_softmq && return 0
	if [ ! -e $SMQ_KO_COPY ]; then
		[ -e "$SMQ_KO" ] || { echo "no $SMQ_KO (tests/testbed/build.sh $SMQ_LINE)"; return 1; }
		cp "$SMQ_KO" $SMQ_KO_COPY.tmp && mv $SMQ_KO_COPY.tmp $SMQ_KO_COPY || return 1
	fi
	insmod $SMQ_KO_COPY
}
softmq_unload() {
	mod_loaded sch_softmq || return 0
	rmmod sch_softmq
}
slowdev_load() {   # slowdev_load [param=value...]
	mod_loaded slowdev && rmmod slowdev
	insmod "$SLOWDEV_KO" "$@"
}
slowdev_set() {    # slowdev_set param value (live)
	echo "$2" > "/sys/module/slowdev/parameters/$1"
}

# ---------------------------------------------------------------- tc
have_plugin() { [ -e "$SMQ_TC_LIB_DIR/q_softmq.so" ]; }

# ---------------------------------------------------------------- namespaces
# Two namespaces joined by a veth pair, addresses from 198.18.0.0/15 only:
#   smq_a: veth0 198.18.0.1/24  (the sender; the qdisc under test is here)
#   smq_b: veth1 198.18.0.2/24
# No IPv6, static neighbours: the only packets on veth0 are the test's own.
NS_A=smq_a NS_B=smq_b
IP_A=198.18.0.1 IP_B=198.18.0.2
ina() { ip netns exec $NS_A "$@"; }
inb() { ip netns exec $NS_B "$@"; }
# For commands run in the background ("$INA cmd &"): a backgrounded shell
# function runs in a forked subshell, so $! and kill would reach that
# subshell, not the command.
INA="ip netns exec $NS_A" INB="ip netns exec $NS_B"

# nsx NS CMD...: CMD in namespace NS ("" = this one)
nsx() { local ns=$1; shift; if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
# ns_add NS: a new namespace, IPv6 off, lo up
ns_add() {
	ip netns add "$1" || return 1
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
	ip -n "$1" link set lo up
}
# ns_del NS...: kill whatever a failed case left running in them, delete them
ns_del() {
	local ns p
	for ns in "$@"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}
# veth_pair NS1 DEV1 IP1 NS2 DEV2 IP2 [link options...]: DEV1 in NS1 ("" =
# this namespace) joined to DEV2 in NS2, each IP/24, up, IPv6 off, static
# neighbours (no ARP, no IPv6: the only packets are the test's own); the
# link options (numtxqueues 4 ...) go to both ends.
veth_pair() {
	local n1=$1 d1=$2 a1=$3 n2=$4 d2=$5 a2=$6 m1 m2
	shift 6
	modprobe -q veth
	ip link add "$d1" ${n1:+netns "$n1"} "$@" type veth \
		peer name "$d2" ${n2:+netns "$n2"} "$@" || return 1
	nsx "$n1" sysctl -qw net.ipv6.conf."$d1".disable_ipv6=1
	nsx "$n2" sysctl -qw net.ipv6.conf."$d2".disable_ipv6=1
	ip ${n1:+-n "$n1"} addr add "$a1"/24 dev "$d1"
	ip ${n2:+-n "$n2"} addr add "$a2"/24 dev "$d2"
	ip ${n1:+-n "$n1"} link set "$d1" up
	ip ${n2:+-n "$n2"} link set "$d2" up
	m1=$(nsx "$n1" cat /sys/class/net/"$d1"/address)
	m2=$(nsx "$n2" cat /sys/class/net/"$d2"/address)
	ip ${n1:+-n "$n1"} neigh replace "$a2" lladdr "$m2" dev "$d1" nud permanent &&
	ip ${n2:+-n "$n2"} neigh replace "$a1" lladdr "$m1" dev "$d2" nud permanent
}
# ns_setup [veth options...]: e.g. ns_setup numtxqueues 4 numrxqueues 4
ns_setup() {
	ns_teardown
	ns_add $NS_A && ns_add $NS_B || return 1
	veth_pair $NS_A veth0 $IP_A $NS_B veth1 $IP_B "$@"
}
ns_teardown() { ns_del $NS_A $NS_B; }
# UDP test traffic is dropped on arrival at veth1 (before IP: no ICMP back,
# no receiver CPU spent); the drop action's counter is what arrived.
ns_sink_on() {
	modprobe -q sch_ingress; modprobe -q cls_matchall; modprobe -q act_gact
	inb tc qdisc add dev veth1 clsact &&
	inb tc filter add dev veth1 ingress pref 1 protocol ip matchall action drop
}
ns_sink_off() { inb tc qdisc del dev veth1 clsact 2>/dev/null; return 0; }
# Counts what veth0 hands to its qdisc (clsact egress runs before the qdisc):
# an independent "enqueued" counter for the identity checks.
egress_counter_on() {   # egress_counter_on NSCMD DEV
	local run=$1 dev=$2
	modprobe -q sch_ingress; modprobe -q cls_matchall; modprobe -q act_gact
	$run tc qdisc add dev "$dev" clsact &&
	$run tc filter add dev "$dev" egress pref 1 protocol all matchall action pass
}
egress_count() {        # egress_count NSCMD DEV -> packets seen
	$1 tc -s -j filter show dev "$2" egress |
		jq '[.[] | .options.actions[]?.stats.packets // empty] | add // 0'
}

# ---------------------------------------------------------------- slowdev
# sd0: a slowdev (tests/modules/slowdev, loaded by the script) in $NS_A,
# SD_SRC/24, one static neighbour SD_DST: a device slower than the senders,
# so that packets really queue (on an idle softmq they would bypass it).
SD_SRC=198.18.1.1 SD_DST=198.18.1.2
sd_setup() {   # sd_setup [numtxqueues N]: a fresh sd0 in smq_a
	ns_teardown
	ns_add $NS_A || return 1
	ina ip link add sd0 "$@" type slowdev || return 1
	ina ip addr add $SD_SRC/24 dev sd0
	ina ip link set sd0 up
	ina ip neigh replace $SD_DST lladdr 02:00:00:00:00:02 dev sd0 nud permanent
}
sd_qdisc() {   # sd_qdisc softmq-words...: a fresh softmq root on sd0
	ina tc qdisc del dev sd0 root 2>/dev/null
	ina $SMQ add sd0 root "$@"
}

# ---------------------------------------------------------------- capture
# cap_start PREFIX DEV FILE [tcpdump args]: capture transmitted packets (the
# device's transmit tap: the order the qdisc released them).  PREFIX is a
# command prefix such as "$INA" (not a function: see INA).
CAP_PID=""
cap_start() {
	local run=$1 dev=$2 file=$3; shift 3
	rm -f "$file" "$file.err"
	$run tcpdump -i "$dev" -Q out -n -s 96 -B 32768 --time-stamp-precision=nano \
		-w "$file" "$@" 2> "$file.err" &
	CAP_PID=$!
	local i
	for i in $(seq 100); do
		grep -q "listening on" "$file.err" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "tcpdump did not start: $(cat "$file.err")" >&2
	return 1
}
# cap_stop FILE: stop the capture; sets CAP_DROP to the number of packets
# the kernel dropped ("?" if unknown).  Not in a $(...) subshell: that
# could not wait for tcpdump to print its statistics.
CAP_DROP="?"
cap_stop() {
	local file=$1 i
	CAP_DROP="?"
	[ -n "$CAP_PID" ] || return 0
	# libpcap's TPACKET_V3 ring hands over a block when it is full or
	# 1 s old: packets in a younger block are lost when tcpdump stops.
	sleep 1.2
	kill -INT "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	CAP_PID=""
	# lost = what the kernel dropped, or what reached the socket but was
	# never written (received by filter - captured), whichever is more
	CAP_DROP=$(awk '/packets? captured/ { c = $1 } /received by filter/ { r = $1 }
		/dropped by kernel/ { d = $1; k = 1 }
		END { if (!k) print "?"; else print (r - c > d ? r - c : d) }' "$file.err")
}

# ---------------------------------------------------------------- queueing
# rings_used NSCMD DEV: did the softmq qdiscs of DEV (all of them: the root,
# mq's children or a tbf's child) carry a real share of the case through
# their rings, rather than send it by the bypass path?  True if a ring woke
# and the rings carried at least RINGS_MIN packets or RINGS_PCT % of the
# packets sent (sent - bypassed); one ring wakeup and a packet would say
# nothing about the order or the counters under queueing.  RINGS_NOTE says
# the counts and which bound held, or that neither did.  A traffic case
# that claims something about queueing asserts this.  On 6.1/6.12 a veth
# never stops its queue, and TCP with GSO put 451 of 211058 segments (ten
# skbs) through the rings of 20-traffic's case: such a case runs under a
# tbf parent (or on a slowdev), so that the backlog is certain.
RINGS_MIN=1000 RINGS_PCT=5
RINGS_NOTE=""
rings_used() {
	local sent byp wk thr
	read -r sent byp wk <<< "$($1 $SMQ show "$2" | jq -r '[.[] | select(.kind == "softmq")] |
		"\(map(.stats.packets) | add // 0) \(map(.xstats.bypassed) | add // 0) \(map(.xstats.ring_wakeups) | add // 0)"')"
	sent=${sent:-0} byp=${byp:-0} wk=${wk:-0}
	thr=$((sent - byp))
	RINGS_NOTE="sent $sent, $thr through the rings ($((sent > 0 ? thr * 100 / sent : 0)) %), ring wakeups $wk"
	if [ "$wk" -gt 0 ] && [ "$thr" -ge $RINGS_MIN ]; then
		RINGS_NOTE="$RINGS_NOTE: at least $RINGS_MIN packets through the rings"
	elif [ "$wk" -gt 0 ] && [ "$thr" -gt 0 ] && [ $((thr * 100)) -ge $((sent * RINGS_PCT)) ]; then
		RINGS_NOTE="$RINGS_NOTE: at least $RINGS_PCT % of those sent through the rings"
	else
		RINGS_NOTE="$RINGS_NOTE: neither $RINGS_MIN packets nor $RINGS_PCT % of those sent through the rings"
		return 1
	fi
}

# ---------------------------------------------------------------- waiting
# wait_backlog_zero NSCMD DEV [PARENT] [SECS]: until the qdisc holds nothing
wait_backlog_zero() {
	local run=$1 dev=$2 sel=${3:-root} secs=${4:-5} i v
	for i in $(seq $((secs * 10))); do
		v=$($run $SMQ get "$dev" "$sel" stats.qlen 2>/dev/null)
		[ "$v" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- slab
# skb_objs: skbuff_head_cache objects in use (per-CPU caches flushed first)
skb_objs() {
	local c
	for c in skbuff_head_cache skbuff_fclone_cache; do
		[ -w /sys/kernel/slab/$c/shrink ] && echo 1 > /sys/kernel/slab/$c/shrink
	done
	awk '$1 == "skbuff_head_cache" { print $2 }' /proc/slabinfo
}

# ---------------------------------------------------------------- cleanup
smq_cleanup() {
	[ -n "$CAP_PID" ] && kill "$CAP_PID" 2>/dev/null
	ns_teardown
	local d
	for d in $(ip -j link show 2>/dev/null | jq -r '.[].ifname' | grep -E '^smq'); do
		ip link del "$d" 2>/dev/null
	done
	sysctl -qw net.core.default_qdisc="$SMQ_ORIG_DEFAULT_QDISC" 2>/dev/null
	true
}

# ---------------------------------------------------------------- pktgen
# pktgen (xmit_mode queue_xmit: the full dev_queue_xmit path, so the qdisc
# sees it) with one thread per CPU, each sending PG_FLOWS flows of its own
# (UDP source ports 40000 + 16*cpu + i): every flow has one producer CPU.
# pktgen numbers each thread's packets (a per-device seq_num after its magic
# 0xbe9be955 right behind the UDP header); flows.py analyze checks it.
# The kernel's samples/pktgen/functions.sh is not sourced: it sets errexit
# and exits the script on an error (a case must FAIL, the script go on),
# and the guest has no kernel source.  pg_w checks a command the way its
# proc_cmd does.
PG_FLOWS=4
# pg_w FILE CMD: one pktgen command; fails (and says so) if the write
# failed or pktgen's "Result:" is not OK (pktgen takes some bad commands,
# an unknown xmit_mode or flag, and only says so there).  Builtins only.
pg_w() {
	local l
	echo "$2" > "$1" || { echo "pktgen: '$2' > $1 failed" >&2; return 1; }
	while IFS= read -r l; do
		case $l in
		*'Result: OK'*) return 0;;
		*Result:*) echo "pktgen: '$2' > $1: $l" >&2; return 1;;
		esac
	done < "$1"
	echo "pktgen: '$2' > $1: no result" >&2
	return 1
}
# pg_clear [NSCMD]: every pktgen thread of the namespace drops its devices
pg_clear() {
	$1 bash -c "$(declare -f pg_w); set -e
	for t in /proc/net/pktgen/kpktgend_*; do pg_w \$t rem_device_all; done"
}
# pg_setup NSCMD DEV DSTIP DSTMAC COUNT SIZE [cpus] [CMD...]   (PG_DELAY=ns
# between packets per thread, default 0: flat out; COUNT 0: until pg_stop).
# Each CMD is one more pktgen command for every thread's device, after the
# ones above (so it may override them), expanded per thread: $c is the
# thread's CPU, e.g. 'skb_priority $((c % 8))'.
pg_setup() {
	local run=$1 dev=$2 dst=$3 mac=$4 count=$5 size=$6 cpus=${7:-$CPUS} x more=""
	shift $(($# < 7 ? $# : 7))
	for x in "$@"; do more+="pg_w \$d \"$x\""$'\n'; done
	modprobe pktgen || return 1
	pg_clear "$run" || return 1
	$run bash -c "$(declare -f pg_w); set -e
	for c in ${cpus//,/ }; do
		t=/proc/net/pktgen/kpktgend_\$c
		pg_w \$t 'add_device $dev@'\$c
		d=/proc/net/pktgen/$dev@\$c
		pg_w \$d 'xmit_mode queue_xmit'
		pg_w \$d 'count $count'
		pg_w \$d 'clone_skb 0'
		pg_w \$d 'pkt_size $size'
		pg_w \$d 'delay ${PG_DELAY:-0}'
		pg_w \$d 'dst $dst'
		pg_w \$d 'dst_mac $mac'
		pg_w \$d \"udp_src_min \$((40000 + 16 * c))\"
		pg_w \$d \"udp_src_max \$((40000 + 16 * c + $PG_FLOWS))\"
		pg_w \$d 'udp_dst_min 9'
		pg_w \$d 'udp_dst_max 9'
		$more
	done"
}
PG_PID=""
# pg_start/pg_stop [NSCMD]: NSCMD such as "$INA" (none: this namespace)
# shellcheck disable=SC2120
pg_start() { $1 bash -c 'echo start > /proc/net/pktgen/pgctrl' & PG_PID=$!; }   # PREFIX: "$INA"
pg_wait()  { [ -n "$PG_PID" ] && wait "$PG_PID"; PG_PID=""; }
# shellcheck disable=SC2120
pg_stop()  { $1 bash -c 'echo stop > /proc/net/pktgen/pgctrl' 2>/dev/null; pg_wait; }
# pg_running: a pktgen thread of this namespace is sending
pg_running() { grep -q 'Running: [^ ]' /proc/net/pktgen/kpktgend_* 2>/dev/null; }
# pg_stats NSCMD DEV: "sofar errors" summed over the threads
pg_stats() {
	$1 bash -c "cat /proc/net/pktgen/$2@* 2>/dev/null" |
		awk '/pkts-sofar:/ { for (i = 1; i <= NF; i++) {
			if ($i == "pkts-sofar:") s += $(i + 1)
			if ($i == "errors:") e += $(i + 1) } }
		END { printf "%d %d\n", s, e }'
}

# ---------------------------------------------------------------- kprobe
# A kprobe on softmq_dequeue that records the Qdisc's flags, handle and
# parent (offsets from the kernel's BTF via pahole, else the layout every
# line from 6.1 to 7.2 has: flags +16, handle +56, parent +60).
TRACEFS=/sys/kernel/tracing
# tracefs_mount: tracefs at $TRACEFS, where the guest booted without it,
# and record-cmd off.  An event enabled with it on (the default) hooks
# sched_switch and sched_wakeup to record command names, and its enable
# and disable patch __schedule() and try_to_wake_up() on every CPU while
# they run; under TCG a vCPU can loop for ever on the int3 of such a patch
# (the 6.1 hangs of 40-default-qdisc, tests/README.md).  No test reads
# the names.
tracefs_mount() {
	[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS 2>/dev/null
	[ ! -w $TRACEFS/options/record-cmd ] || echo 0 > $TRACEFS/options/record-cmd
}
KP_OK=0
kp_on() {
	tracefs_mount
	[ -w $TRACEFS/kprobe_events ] || return 1
	# struct Qdisc starts with two function pointers, then flags, limit,
	# ops, stab and an hlist_node before handle and parent: pahole's
	# offsets where it reads the BTF (on the i386 line it cannot),
	# else these, from the pointer size (16, 56, 60 on 64-bit)
	local p=$(( $(getconf LONG_BIT) / 8 )) fl ha pa lay
	fl=$((2 * p)) ha=$((6 * p + 8)) pa=$((6 * p + 12))
	lay=$(pahole -C Qdisc /sys/kernel/btf/vmlinux 2>/dev/null)
	if [ -n "$lay" ]; then
		fl=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* flags;/ { print $(NF-2); exit }')
		ha=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* handle;/ { print $(NF-2); exit }')
		pa=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* parent;/ { print $(NF-2); exit }')
	fi
	[[ $fl =~ ^[0-9]+$ ]] || fl=$((2 * p))
	[[ $ha =~ ^[0-9]+$ ]] || ha=$((6 * p + 8))
	[[ $pa =~ ^[0-9]+$ ]] || pa=$((6 * p + 12))
	kp_off
	echo "p:smqtest/deq sch_softmq:softmq_dequeue flags=+$fl(\$arg1):x32 handle=+$ha(\$arg1):x32 parent=+$pa(\$arg1):x32" \
		>> $TRACEFS/kprobe_events || return 1
	echo > $TRACEFS/trace
	echo 1 > $TRACEFS/events/smqtest/deq/enable || return 1
	KP_OK=1
}
kp_off() {
	[ -e $TRACEFS/events/smqtest/deq/enable ] &&
		echo 0 > $TRACEFS/events/smqtest/deq/enable
	echo '-:smqtest/deq' >> $TRACEFS/kprobe_events 2>/dev/null
	KP_OK=0
	return 0
}
# kp_flags: "parent handle flags" once per distinct (parent, flags) seen
kp_flags() {
	sed -n 's/.*flags=\(0x[0-9a-f]*\) handle=\(0x[0-9a-f]*\) parent=\(0x[0-9a-f]*\).*/\3 \2 \1/p' \
		$TRACEFS/trace | sort -u
}
# kret_on EVENT FUNC: a return probe smqtest/EVENT on sch_softmq's FUNC
# that keeps, in the trace, only the returns that were not 0 (for a
# dequeue step: the calls that gave a packet), the trace emptied first;
# kret_count EVENT: how many the trace holds.  kcall_on EVENT SYMBOL: an
# entry probe on SYMBOL (sch_softmq:FUNC, or the kernel's), for
# kprobe_hits EVENT: its calls so far (kprobe_profile counts them while
# the event is enabled).  kprobe_off EVENT removes either.  A FUNC of
# sch_softmq must be out of line (noinline in the source); GCC may still
# clone it (FUNC.constprop.0): softmq_sym FUNC gives its name.
softmq_sym() {
	awk -v f="$1" '$4 == "[sch_softmq]" && ($3 == f || index($3, f ".") == 1) \
		{ print $3; exit }' /proc/kallsyms
}
kret_on() {
	local sym
	tracefs_mount
	[ -w $TRACEFS/kprobe_events ] || return 1
	kprobe_off "$1"
	sym=$(softmq_sym "$2")
	[ -n "$sym" ] || return 1
	echo "r:smqtest/$1 sch_softmq:$sym ret=\$retval:x$(getconf LONG_BIT)" \
		>> $TRACEFS/kprobe_events || return 1
	echo > $TRACEFS/trace
	{ echo 'ret != 0' > $TRACEFS/events/smqtest/$1/filter &&
		echo 1 > $TRACEFS/events/smqtest/$1/enable; } ||
		{ kprobe_off "$1"; return 1; }
}
kret_count() {
	grep -c " $1: (" $TRACEFS/trace
}
kcall_on() {
	local sym=$2
	tracefs_mount
	[ -w $TRACEFS/kprobe_events ] || return 1
	kprobe_off "$1"
	case $sym in sch_softmq:*)
		sym=$(softmq_sym "${sym#sch_softmq:}")
		[ -n "$sym" ] || return 1
		sym=sch_softmq:$sym;;
	esac
	{ echo "p:smqtest/$1 $sym" >> $TRACEFS/kprobe_events &&
		echo 1 > $TRACEFS/events/smqtest/$1/enable; } ||
		{ kprobe_off "$1"; return 1; }
}
# kprobe_profile: event (without its group), hits, misses
kprobe_hits() {
	awk -v e="$1" '$1 == e { print $2 }' $TRACEFS/kprobe_profile
}
kprobe_off() {
	[ ! -e $TRACEFS/events/smqtest/$1/enable ] ||
		echo 0 > $TRACEFS/events/smqtest/$1/enable
	echo "-:smqtest/$1" >> $TRACEFS/kprobe_events 2>/dev/null
	return 0
}

# ---------------------------------------------------------------- churn suites
# The fuzz and churn suites (6*-*.sh) load a veth pair with pktgen + iperf3
# while they change things, then check that nothing leaked or stuck and
# that every packet is accounted for.
PROBE_MS=${SOFTMQ_PROBE_MS:-10}
LOAD_DELAY_NS=${SOFTMQ_LOAD_DELAY_NS:-200000}
LOAD_IPERF_BW=${SOFTMQ_LOAD_IPERF_BW:-50M}

# veth pair smq0 (this namespace) <-> smq1 (netns smqpeer), TXQ queues
# each, no offloads on smq0 (1 skb = 1 packet), GRO on the peer (lets a
# backlog build).
NS=smqpeer
DEV=smq0 PEER=smq1 ADDR=198.18.77.1 PEER_ADDR=198.18.77.2
PEER_MAC=""
topo_up() {   # topo_up [TXQ]
	local txq=${1:-$NCPU}
	topo_down
	ns_add $NS || return 1
	veth_pair "" $DEV $ADDR $NS $PEER $PEER_ADDR numtxqueues "$txq" numrxqueues "$txq" ||
		return 1
	ethtool -K $DEV tso off gso off gro off > /dev/null 2>&1
	ip netns exec $NS ethtool -K $PEER gro on > /dev/null 2>&1
	PEER_MAC=$(ip netns exec $NS cat /sys/class/net/$PEER/address)
}
topo_down() {
	ip link del $DEV 2>/dev/null
	ns_del $NS
}
# churn_up SUITE [TXQ]: softmq loaded, the pair up with TXQ queues (sets
# TXQ; default NCPU, at least 2), pktgen loaded, load_stop and topo_down
# at exit (a script with more to undo replaces the trap and calls them);
# else FAIL SUITE and exit
churn_up() {
	TXQ=${2:-$((NCPU < 2 ? 2 : NCPU))}
	need "$1" "cannot load sch_softmq" softmq_load
	trap 'load_stop; topo_down' EXIT
	need "$1" "cannot set up the veth pair" topo_up "$TXQ"
	modprobe pktgen 2>/dev/null
}
# churn_result SUITE WHAT COUNT FAILS [WAKES [QUEUED]]: SUITE-WHAT-COUNT
# passes if no step failed; with WAKES, rings_used_check SUITE-rings-used
# (with QUEUED, the steps that queued: at least half of COUNT must)
churn_result() {
	if [ "$4" = 0 ]; then pass "$1-$2-$3"; else fail "$1-$2-$3" "$4 failed steps (see above)"; fi
	if [ $# -ge 6 ]; then rings_used_check "$1-rings-used" "$5" "$6" "$3" "$2"
	elif [ $# -ge 5 ]; then rings_used_check "$1-rings-used" "$5"; fi
}

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
	if [ -n "$why" ]; then fail "$name" "not back to baseline:$why"; else pass "$name"; fi
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
		fail "$name" "kmemleak: $(printf '%s\n' "$out" | grep -c 'unreferenced object') unreferenced object(s)"
	else
		pass "$name"
	fi
}

# pg_mix DEV COUNT DST MAC: pktgen on DEV (this namespace), one thread per
# vCPU, the churn load's mix: 100/400/700-byte packets by thread, random
# UDP source ports, skb priority = CPU % 8, LOAD_DELAY_NS apart
# shellcheck disable=SC2016 # $c is expanded per thread by pg_setup
pg_mix() {
	PG_DELAY=$LOAD_DELAY_NS pg_setup "" "$1" "$3" "$4" "$2" 100 "" \
		'pkt_size $((100 + 300 * (c % 3)))' 'udp_src_min 1024' 'udp_src_max 65000' \
		'flag UDPSRC_RND' 'skb_priority $((c % 8))'
}
# load_start: pktgen (one thread per vCPU) and iperf3 (NCPU TCP streams)
# through $DEV; load_stop ends both.
IPERF_PID=""
load_start() {
	pg_mix $DEV 0 $PEER_ADDR "$PEER_MAC" || return 1
	ip netns exec $NS iperf3 -s -D -p 5201 -I /run/smq-iperf3.pid > /dev/null 2>&1
	sleep 0.3
	iperf3 -c $PEER_ADDR -p 5201 -P "$NCPU" -t 86400 -b "$LOAD_IPERF_BW" \
		> "$SMQ_OUT/iperf3.log" 2>&1 &
	IPERF_PID=$!
	pg_start
}
# load_keepalive: pktgen threads and iperf3 still running (restarts
# pktgen, which stops itself when its device goes down)
load_keepalive() {
	pg_running || pg_start
	[ -n "$IPERF_PID" ] && kill -0 "$IPERF_PID" 2>/dev/null
}
load_stop() {
	pg_stop 2>/dev/null
	[ -n "$IPERF_PID" ] && { kill "$IPERF_PID" 2>/dev/null; wait "$IPERF_PID" 2>/dev/null; }
	IPERF_PID=""
	[ -e /run/smq-iperf3.pid ] && kill "$(cat /run/smq-iperf3.pid)" 2>/dev/null
	rm -f /run/smq-iperf3.pid
	pg_clear 2>/dev/null
	sleep 0.5
}

# wait_drain DEV [SEC]: every qdisc of DEV reports qlen 0 and backlog 0
wait_drain() {
	local dev=$1 t=${2:-5} i out
	for i in $(seq $((t * 10))); do
		# drained: $QSTAT named at least one qdisc, and none holds anything
		out=$($QSTAT --all "$dev") && [ -n "$out" ] &&
			! echo "$out" | grep -qvE 'qlen=0 backlog=0|kind=(noqueue|noop)' && return 0
		sleep 0.1
	done
	echo "    wait_drain: $dev not drained after ${t}s ($QSTAT rc/output below)"
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
# queued_since DEV W0 [SECS]: did a ring of DEV's softmq qdiscs wake since
# their ring_wakeups summed to W0 (0 for fresh instances)?  Read again every
# 0.1 s for at most SECS (default 1): a churn step's instances get a moment
# to queue before the step goes on.  A sum below W0 (instances replaced, or
# their counters reset) counts from 0.  Sets WAKES_NOW to the last sum.
WAKES_NOW=0
queued_since() {
	local i
	for i in $(seq $((${3:-1} * 10))); do
		WAKES_NOW=$(ring_wakeups "$1")
		[ "$WAKES_NOW" -gt "$2" ] && return 0
		[ "$WAKES_NOW" -lt "$2" ] && [ "$WAKES_NOW" -gt 0 ] && return 0
		sleep 0.1
	done
	return 1
}
# rings_used_check NAME WAKEUPS [QUEUED TOTAL UNIT]: the churn's load really
# queued.  With QUEUED: at least half of the TOTAL steps (UNIT: cycles,
# steps, devices) queued, a ring woke (or a backlog was seen) in the step
# itself, as 64-churn-link's flaps with a backlog; a churn that met queued
# packets once in eight steps did not test the other seven.  Without: a
# ring woke in the instances sampled before they went away.
rings_used_check() {
	if [ $# -ge 5 ]; then
		if [ "$3" -gt 0 ] && [ $(($3 * 2)) -ge "$4" ]; then
			pass "$1"; note "$1: $3 of $4 $5 queued, $2 ring wakeups seen"
		else
			fail "$1" "only $3 of $4 $5 queued (a ring woke in the step; at least half must): the churn mostly met empty rings ($2 ring wakeups in all)"
		fi
	elif [ "$2" -gt 0 ]; then pass "$1"; note "$1: $2 ring wakeups seen"
	else fail "$1" "no ring ever woke in the sampled instances: the load took the bypass path only, the churn never met a queued packet"; fi
}
devtx() {   # tx_packets + tx_dropped of DEV
	echo $(( $(cat /sys/class/net/"$1"/statistics/tx_packets) + $(cat /sys/class/net/"$1"/statistics/tx_dropped) ))
}

# drop_codel_sum DEV: CoDel's drops at dequeue, summed over DEV's softmq
# qdiscs (the root, or mq's children)
drop_codel_sum() {
	$SMQ show "$1" | jq '[.[] | select(.kind == "softmq") | .xstats.drop_codel] | add // 0'
}

# identity NAME DEV DST MAC: on a quiet DEV, a burst of pktgen packets
# (one thread per vCPU, queue_xmit) must be accounted for exactly:
#   qdisc sent + qdisc drops == pktgen sofar + errors (every packet entered)
#   qdisc drops == pktgen errors  (a qdisc drop is what pktgen sees fail)
#                  + softmq's drop_codel (CoDel drops at dequeue)
#   qdisc sent == device tx_packets + tx_dropped (after the device drained)
#   softmq: qdisc drops == xstats drop_nomem + drop_overlimit +
#           drop_overmemory + drop_codel
# DEV's root qdisc is the one counted (mq: the sum of its children).
identity() {
	local name=$1 dev=$2 dst=$3 mac=$4 q0 q1 d0 d1 sofar errs sent drops x0=0 x1=0 i nb cd=0
	nb=$(n 2000 10000)
	for i in $(seq 10); do   # quiet: nothing leaves DEV for 0.5 s
		d0=$(devtx "$dev"); sleep 0.5
		[ "$(devtx "$dev")" = "$d0" ] && break
	done
	pg_mix "$dev" $((nb / NCPU)) "$dst" "$mac" || { fail "$name" "pktgen setup failed"; return; }
	q0=$($QSTAT "$dev"); d0=$(devtx "$dev"); cd=$(drop_codel_sum "$dev")
	pg_start; pg_wait
	wait_drain "$dev" 20
	q1=$($QSTAT "$dev")
	sent=$(( $(qword "$q1" packets) - $(qword "$q0" packets) ))
	for i in $(seq 30); do   # the device's own FIFO drains after the qdisc
		d1=$(devtx "$dev")
		[ $((d1 - d0)) -ge "$sent" ] && break
		sleep 0.2
	done
	read -r sofar errs <<< "$(pg_stats "" "$dev")"
	pg_clear 2>/dev/null
	drops=$(( $(qword "$q1" drops) - $(qword "$q0" drops) ))
	cd=$(( $(drop_codel_sum "$dev") - cd ))
	if [ "$(qword "$q1" kind)" = softmq ]; then
		x0=$(( $(qword "$q0" drop_nomem) +
		       $(qword "$q0" drop_overlimit) + $(qword "$q0" drop_overmemory) ))
		x1=$(( $(qword "$q1" drop_nomem) +
		       $(qword "$q1" drop_overlimit) + $(qword "$q1" drop_overmemory) + cd ))
	else
		x1=$drops
	fi
	note "identity $name ($(qword "$q1" kind) root of $dev): pktgen sofar $sofar errors $errs; qdisc sent $sent drops $drops (CoDel $cd; softmq xstats drops $((x1 - x0))); device tx+dropped $((d1 - d0))"
	if [ "$sofar" -ne $((nb / NCPU * NCPU)) ]; then
		fail "$name" "pktgen sent $sofar of $((nb / NCPU * NCPU))"
	elif [ $((sent + drops)) -ne $((sofar + errs)) ] || [ "$drops" -ne $((errs + cd)) ] ||
	     [ "$sent" -ne $((d1 - d0)) ] || [ $((x1 - x0)) -ne "$drops" ]; then
		fail "$name" "sent $sent + drops $drops != pktgen $((sofar + errs)) (errors $errs), or drops != errors + CoDel $cd, or device $((d1 - d0)) != sent, or xstats drops $((x1 - x0)) != drops"
	else
		pass "$name"
	fi
}

# after_load NAME: the checks after every churn test, load stopped, on
# $DEV (the veth the load ran through):
#  - nothing stuck: every qdisc of $DEV drains to qlen 0 / backlog 0;
#  - a probe leaves within PROBE_MS (tests/fuzz/probe.py);
#  - counter identity (identity above) on the qdisc the test left;
#  - for softmq, again on a single one-slot ring (flows 1 depth 1), where
#    concurrent producers collide and spill.
after_load() {
	local name=$1 out
	if wait_drain $DEV 10; then pass "$name-drained"; else fail "$name-drained" "packets stuck in the qdisc after the load stopped"; fi
	if out=$($PY "$SMQ_FUZZDIR/probe.py" $DEV $PEER_ADDR --limit-ms "$PROBE_MS"); then
		pass "$name-probe"; note "$out"
	else
		fail "$name-probe" "$out"
	fi
	identity "$name-identity" $DEV $PEER_ADDR "$PEER_MAC"
	[ "$(qword "$($QSTAT $DEV)" kind)" = softmq ] || return 0
	tc qdisc change dev $DEV root softmq flows 1 depth 1 key flow ||
		{ fail "$name-identity-drops" "cannot change to flows 1 depth 1"; return; }
	identity "$name-identity-drops" $DEV $PEER_ADDR "$PEER_MAC"
}

# ---------------------------------------------------------------- install suites
# tests/vm/80-install-*.sh install softmq in the guest the ways
# docs/install.md says (dpkg -i, dkms, make install, the autoload of a
# placed module).  The guest's root is the host's / read-only under a
# tmpfs overlay, so dpkg -i, dkms and make install write only into the
# overlay.  Each script leaves the guest as it found it (no softmq module
# loaded or installed, no package, no dkms entry), so they run in any order.

# install_start PREFIX [build|checkout]: the install suite's state (REPO,
# ABI, V, MULTIARCH, WORK, OUTD, the dummy device IDEV, AUTOLOAD_NAME),
# inst_finish at exit, nothing of softmq loaded or installed; build: this
# guest can build a module for the line and has its headers; checkout:
# also a copy of the checkout in $SRC.  Exits the script (with the FAIL or
# SKIP said) when a step cannot be done.
install_start() {
	local p=$1 what=${2:-}
	REPO=$SMQ_REPO ABI=$(uname -r) V=$(cat "$SMQ_REPO/VERSION")
	MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
	IDEV=smqi0
	WORK=$(mktemp -d /tmp/softmq-install.XXXXXX)
	OUTD=$SMQ_OUT    # logs kept on the host (used by the scripts)
	export OUTD
	# tc must find q_softmq.so where the packages and make install put it,
	# not in the test bed's TC_LIB_DIR (tc then skips its default dir).
	unset TC_LIB_DIR
	# man-db's dpkg trigger rebuilds the whole man index: minutes under
	# TCG, and nothing we test.  The guest's root is a tmpfs overlay, so
	# this only lasts until power-off.
	if [ "$SMQ_IN_VM" = 1 ]; then rm -f /var/lib/man-db/auto-update; fi
	# The name the kernel asks modprobe for: "sch_<id>" before 6.9, then
	# "net-sch-<id>" (MODULE_ALIAS_NET_SCH).
	if printf '6.9\n%s\n' "$ABI" | sort -V -C; then
		AUTOLOAD_NAME=net-sch-softmq
	else
		AUTOLOAD_NAME=sch_softmq
	fi
	MODPROBE_LOG=$WORK/modprobe.log
	MODPROBE_ORIG=$(cat /proc/sys/kernel/modprobe)
	trap inst_finish EXIT
	if [ -n "$what" ]; then inst_can_build "$p" || exit 0; fi
	inst_clean_start "$p" || exit 0
	[ -n "$what" ] || return 0
	inst_headers || { fail "$p-headers" "no usable /lib/modules/$ABI/build ($KDIR)"; exit 0; }
	[ "$what" = checkout ] || return 0
	SRC=$WORK/softmq
	inst_copy_checkout "$SRC" || { fail "$p-copy" "cannot copy the checkout to $SRC"; exit 0; }
}

# inst_can_build PREFIX: the line's env, and whether this guest can build
# modules for it (7.x needs gcc-16, which lives in the host's sid chroot;
# a cross line's guest has no compiler at all).
inst_can_build() {
	local envf=${SOFTMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmq}/kernels/$SMQ_LINE.env
	if [ ! -r "$envf" ]; then skip "$1" "no kernel line env $envf"; return 1; fi
	# shellcheck disable=SC1090
	KDIR=$(. "$envf"; echo "$KDIR") TOOLCHAIN=$(. "$envf"; echo "$TOOLCHAIN")
	if [ -n "${SOFTMQ_GUEST_ARCH:-}" ]; then
		skip "$1" "the $SOFTMQ_GUEST_ARCH guest's root has no compiler: the module is cross-built on the host (build-$SMQ_LINE-softmq)"
		return 1
	fi
	if [ "$TOOLCHAIN" != host ]; then
		skip "$1" "building a module for $SMQ_LINE needs gcc-16 from the host's sid chroot, which does not exist inside the guest"
		return 1
	fi
	return 0
}

# headers: what installing linux-headers-$ABI does, /lib/modules/$ABI/build
# pointing at the headers (here the test bed's extracted copy, KDIR).
inst_headers() {
	local b=/lib/modules/$ABI/build t
	[ -e "$b/include" ] && return 0
	if [ -L "$b" ]; then
		t=$(readlink "$b")
		case "$t" in /*) mkdir -p "$(dirname "$t")"; ln -sfn "$KDIR" "$t";; esac
	fi
	[ -e "$b/include" ] || ln -sfn "$KDIR" "$b"
	[ -e "$b/include" ]
}

# inst_copy_checkout DIR: the checkout's sources (no build products) in DIR, as
# a user's clone would be.
inst_copy_checkout() {
	mkdir -p "$1" &&
	(cd "$REPO" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.so' \
		Makefile Kbuild VERSION dkms.conf src include tc-plugin) | tar -x -C "$1"
}

# inst_clean_start PREFIX: nothing of softmq loaded/installed before we start.
inst_clean_start() {
	if lsmod | grep -q '^sch_softmq '; then
		rmmod sch_softmq 2>/dev/null ||
			{ fail "$1-clean-start" "sch_softmq is loaded (by an earlier test) and busy"; return 1; }
	fi
	local l
	l=$(inst_leftovers | tr '\n' ' ')
	if [ -n "$l" ]; then fail "$1-clean-start" "already installed: $l"; return 1; fi
	return 0
}

# inst_leftovers: everything an install of softmq may leave behind, one per line.
inst_leftovers() {
	local p
	lsmod | grep -q '^sch_softmq ' && echo "module loaded"
	find /lib/modules/"$ABI"/ -name 'sch_softmq.ko*' 2>/dev/null
	grep -l softmq /lib/modules/"$ABI"/modules.alias /lib/modules/"$ABI"/modules.dep 2>/dev/null
	ls -d /usr/src/softmq-* /var/lib/dkms/softmq 2>/dev/null
	ls /usr/lib/"$MULTIARCH"/tc/q_softmq.so /usr/share/man/man8/tc-softmq.8* 2>/dev/null
	for p in softmq-dkms softmq-tc; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^[^u]' &&
			echo "package $p: $(dpkg-query -W -f='${db:Status-Abbrev}' "$p")"
	done
	return 0
}

# inst_nothing_left PREFIX
inst_nothing_left() {
	local l
	l=$(inst_leftovers | tr '\n' ' ')
	check "$1-nothing-left" "left behind: $l" test -z "$l"
}

# Log every module the kernel asks for (kernel.modprobe = a wrapper);
# install_start set MODPROBE_LOG and MODPROBE_ORIG.
inst_watch_modprobe() {
	cat > "$WORK/modprobe" <<EOF
#!/bin/sh
echo "\$*" >> $MODPROBE_LOG
exec $MODPROBE_ORIG "\$@"
EOF
	chmod +x "$WORK/modprobe"
	: > "$MODPROBE_LOG"
	echo "$WORK/modprobe" > /proc/sys/kernel/modprobe
}
inst_unwatch_modprobe() { echo "$MODPROBE_ORIG" > /proc/sys/kernel/modprobe; }

inst_dev() {
	ip link del "$IDEV" 2>/dev/null
	ip link add "$IDEV" type dummy && ip link set "$IDEV" up &&
		ip addr add 198.18.7.1/24 dev "$IDEV"
}

# inst_autoload PREFIX: module not loaded; "tc qdisc add dev X root softmq" must
# load it by itself, through the name this kernel asks for.
inst_autoload() {
	local p=$1 out
	if lsmod | grep -q '^sch_softmq '; then
		rmmod sch_softmq || { fail "$p-autoload" "cannot unload sch_softmq first"; return; }
	fi
	inst_dev || { fail "$p-autoload" "cannot create dummy device $IDEV"; return; }
	inst_watch_modprobe
	out=$(tc qdisc add dev "$IDEV" root softmq 2>&1)
	local rc=$?
	inst_unwatch_modprobe
	note "kernel asked modprobe for: $(tr '\n' ';' < "$MODPROBE_LOG")"
	if [ $rc -ne 0 ]; then
		fail "$p-autoload" "tc qdisc add dev $IDEV root softmq: $out (kernel asked for: $(tr '\n' ' ' < "$MODPROBE_LOG"))"
		return
	fi
	check "$p-autoload" "module not loaded after tc qdisc add" \
		bash -c 'lsmod | grep -q "^sch_softmq "'
	check "$p-autoload-name-$AUTOLOAD_NAME" \
		"kernel $ABI did not request $AUTOLOAD_NAME: $(tr '\n' ' ' < "$MODPROBE_LOG")" \
		grep -qw -- "$AUTOLOAD_NAME" "$MODPROBE_LOG"
	out=$(tc qdisc show dev "$IDEV")
	check "$p-attached" "tc qdisc show: $out" grep -q '^qdisc softmq [0-9a-f]*: root' <<<"$out"
}

# inst_traffic PREFIX: a few UDP packets (bash's /dev/udp) through the root
# softmq of $IDEV (dummy drops them after the qdisc), counted by tc -s.
inst_traffic() {
	local p=$1 out sent
	local i
	for i in 1 2 3 4 5; do echo "softmq $i" 2>/dev/null > /dev/udp/198.18.7.2/9; done
	out=$(tc -s qdisc show dev "$IDEV")
	sent=$(sed -n 's/^ *Sent [0-9]* bytes \([0-9]*\) pkt.*/\1/p' <<<"$out" | head -n 1)
	check "$p-traffic" "tc -s shows ${sent:-no} packets sent, want >= 5: $out" test "${sent:-0}" -ge 5
}

# inst_plugin PREFIX: tc parses and prints softmq's options with the installed
# q_softmq.so, from its default directory.
inst_plugin() {
	local p=$1 out
	out=$(LD_BIND_NOW=1 tc qdisc replace dev "$IDEV" root softmq flows 64 2>&1) ||
		{ fail "$p-plugin" "tc qdisc replace … softmq flows 64: $out"; return; }
	out=$(LD_BIND_NOW=1 tc qdisc show dev "$IDEV" 2>&1)
	check "$p-plugin" "the plugin did not print 'flows 64': $out" grep -q 'flows 64' <<<"$out"
}

inst_detach() {
	tc qdisc del dev "$IDEV" root 2>/dev/null
	ip link del "$IDEV" 2>/dev/null
	return 0
}

# inst_modinfo PREFIX: modinfo by module name, as an admin would.
inst_modinfo() {
	local p=$1 f
	f=$(modinfo -F filename sch_softmq 2>&1)
	note "modinfo sch_softmq: $f"
	modinfo sch_softmq 2>&1 | sed 's/^/  #   /'
	f=$(modinfo -F version sch_softmq 2>&1)
	check "$p-modinfo-version" "version '$f', want $V" test "$f" = "$V"
	f=$(modinfo -F alias sch_softmq 2>&1)
	check "$p-modinfo-alias" "aliases '$f'" grep -qx net-sch-softmq <<<"$f"
	f=$(modinfo -F license sch_softmq 2>&1)
	check "$p-modinfo-license" "license '$f'" test "$f" = GPL
	f=$(modinfo -F description sch_softmq 2>&1)
	check "$p-modinfo-description" "no description" test -n "$f"
}

inst_finish() {
	inst_detach
	inst_unwatch_modprobe 2>/dev/null
	rm -rf "$WORK"
	exit 0
}
