# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the softmq VM tests (tests/vm/[1-9]*.sh).  Sourced by
# bash, never run: executed on its own it does nothing and exits 0.
#
# Every name the test bed gives us is looked up here and only here, so a
# rename in tests/testbed/vm.sh is a one-line fix below.  Python helpers
# (lib/*.py) get what they need from the SMQ_* variables exported here.
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
export SMQ_REPO SMQ_LINE SMQ_KO SMQ_TESTMODS SMQ_OUT SMQ_TC615
export SOFTMQ_UAPI=$SMQ_REPO/include/uapi/softmq.h
export TC_LIB_DIR=$SMQ_TC_LIB_DIR

SLOWDEV_KO=$SMQ_TESTMODS/slowdev/slowdev.ko
# Debian's python3 (the host's / is the guest's root; a pyenv shim on PATH
# would not see python3-pyroute2 and friends).
PY=/usr/bin/python3
SMQ="$PY $SMQ_VMDIR/lib/smq.py"
FLOWS="$PY $SMQ_VMDIR/lib/flows.py"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

mkdir -p "$SMQ_OUT"
SMQ_ORIG_DEFAULT_QDISC=$(sysctl -n net.core.default_qdisc 2>/dev/null || echo fq_codel)
NCPU=$(nproc)
CPUS=$(seq -s, 0 $((NCPU - 1)))

# ---------------------------------------------------------------- case lines
NFAIL=0
pass() { echo "PASS $1${2:+ ($2)}"; }
fail() { echo "FAIL $1: $2"; NFAIL=$((NFAIL + 1)); }
skip() { echo "SKIP $1: $2"; }
note() { echo "  # $*"; }
# check NAME WHY CMD...: PASS if CMD succeeds, else FAIL NAME: WHY
check() {
	local name=$1 why=$2; shift 2
	if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
# Float comparison: fcmp "1.5 < 2"
fcmp() { awk "BEGIN { exit !($*) }"; }

# Must run as root inside the VM: loading modules on the host is impossible
# (and must never be tried on a shared machine).
require_vm() {
	if [ "$SMQ_IN_VM" != 1 ] && [ "${SMQ_FORCE:-0}" != 1 ]; then
		skip "$1" "not inside the test VM (SOFTMQ_IN_VM!=1)"
		exit 0
	fi
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
	[ "${SOFTMQ_FULL:-0}" = 1 ] && return 0
	plan_runs "$1" && return 0
	skip "${1%%.sh:*}-${1##*:}" "make check runs this part on $(plan_lines "$1") only (TCG time budget); make check-full on every line"
	return 1
}

# ---------------------------------------------------------------- JSON
# jqv FILE FILTER: one value (raw)
jqv() { jq -r "$2" "$1"; }

# qget DEV [PARENT] FIELD...: softmq/qdisc values via netlink (see smq.py get)
qget() { $SMQ get "$@"; }

# ---------------------------------------------------------------- modules
mod_loaded() { [ -d "/sys/module/$1" ]; }
mod_refcnt() { cat "/sys/module/$1/refcnt" 2>/dev/null || echo -1; }

softmq_load() {
	mod_loaded sch_softmq && return 0
	insmod "$SMQ_KO"
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

# ns_setup [veth options...]: e.g. ns_setup numtxqueues 4 numrxqueues 4
ns_setup() {
	ns_teardown
	modprobe veth || return 1
	ip netns add $NS_A && ip netns add $NS_B || return 1
	ip link add veth0 netns $NS_A "$@" type veth peer name veth1 netns $NS_B "$@" ||
		return 1
	local ns
	for ns in $NS_A $NS_B; do
		ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1
		ip -n $ns link set lo up
	done
	ip -n $NS_A addr add $IP_A/24 dev veth0
	ip -n $NS_B addr add $IP_B/24 dev veth1
	ip -n $NS_A link set veth0 up
	ip -n $NS_B link set veth1 up
	ip -n $NS_A neigh replace $IP_B lladdr "$(ip -n $NS_B -j link show veth1 | jq -r '.[0].address')" \
		dev veth0 nud permanent
	ip -n $NS_B neigh replace $IP_A lladdr "$(ip -n $NS_A -j link show veth0 | jq -r '.[0].address')" \
		dev veth1 nud permanent
}
ns_teardown() {
	local ns p
	for ns in $NS_A $NS_B; do
		# whatever a failed case left running in our namespaces
		for p in $(ip netns pids $ns 2>/dev/null); do kill "$p" 2>/dev/null; done
		ip netns del $ns 2>/dev/null
	done
	return 0
}
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
	ip netns add $NS_A || return 1
	ina sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ina ip link set lo up
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
# rings_used NSCMD DEV: did the softmq qdiscs of DEV (all of them: the root
# or mq's children) queue packets in their rings, rather than send every
# one by the bypass path?  True if a ring woke and the rings carried
# packets; RINGS_NOTE holds the counts either way.  A traffic case that
# claims something about queueing asserts this.  No share is required: on
# 6.1/6.12 a veth never stops its queue, and TCP with GSO put 451 of
# 211058 segments (ten skbs) through the rings of 20-traffic's case.
RINGS_NOTE=""
rings_used() {
	local sent byp wk
	read -r sent byp wk <<< "$($1 $SMQ show "$2" | jq -r '[.[] | select(.kind == "softmq")] |
		"\(map(.stats.packets) | add // 0) \(map(.xstats.bypassed) | add // 0) \(map(.xstats.ring_wakeups) | add // 0)"')"
	RINGS_NOTE="sent $sent, $((sent - byp)) through the rings, ring wakeups $wk"
	[ "${wk:-0}" -gt 0 ] && [ $((sent - byp)) -gt 0 ]
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
PG_FLOWS=4
# pg_w FILE CMD: one pktgen command; fails (and says so) if pktgen refused it
pg_w() { echo "$2" > "$1" || { echo "pktgen: '$2' > $1 failed" >&2; return 1; }; }
# pg_setup NSCMD DEV DSTIP DSTMAC COUNT SIZE [cpus]   (PG_DELAY=ns between
# packets per thread, default 0: flat out; COUNT 0: until pg_stop)
pg_setup() {
	local run=$1 dev=$2 dst=$3 mac=$4 count=$5 size=$6 cpus=${7:-$CPUS} c d
	modprobe pktgen || return 1
	$run bash -c "$(declare -f pg_w); set -e
	for c in \$(ls /proc/net/pktgen | sed -n 's/^kpktgend_//p'); do
		pg_w /proc/net/pktgen/kpktgend_\$c rem_device_all
	done
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
	done"
}
PG_PID=""
pg_start() { $1 bash -c 'echo start > /proc/net/pktgen/pgctrl' & PG_PID=$!; }   # PREFIX: "$INA"
pg_wait()  { [ -n "$PG_PID" ] && wait "$PG_PID"; PG_PID=""; }
pg_stop()  { $1 bash -c 'echo stop > /proc/net/pktgen/pgctrl' 2>/dev/null; pg_wait; }
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
KP_OK=0
kp_on() {
	[ -w $TRACEFS/kprobe_events ] ||
		mount -t tracefs nodev $TRACEFS 2>/dev/null
	[ -w $TRACEFS/kprobe_events ] || return 1
	local fl=16 ha=56 pa=60 lay
	lay=$(pahole -C Qdisc /sys/kernel/btf/vmlinux 2>/dev/null)
	if [ -n "$lay" ]; then
		fl=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* flags;/ { print $(NF-2); exit }')
		ha=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* handle;/ { print $(NF-2); exit }')
		pa=$(echo "$lay" | awk '$0 ~ /^\t[a-z].* parent;/ { print $(NF-2); exit }')
	fi
	[[ $fl =~ ^[0-9]+$ ]] || fl=16
	[[ $ha =~ ^[0-9]+$ ]] || ha=56
	[[ $pa =~ ^[0-9]+$ ]] || pa=60
	kp_off
	echo "p:smqtest/deq sch_softmq:softmq_dequeue flags=+${fl:-16}(%di):x32 handle=+${ha:-56}(%di):x32 parent=+${pa:-60}(%di):x32" \
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
