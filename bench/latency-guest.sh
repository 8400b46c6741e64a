#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In-guest runner of `make bench MODE=latency`: latency under load through a
# rate-limited bottleneck, every variant interleaved in one boot.  Needs
# root, iproute2 (ip, tc, ss), iperf3, iputils ping, ethtool, the veth,
# sch_tbf, sch_fq_codel modules and sch_softmq.ko (--ko, unless loaded).
#
#   latency-guest.sh --out DIR [--ko PATH] [--tc-lib DIR] [--secs 10]
#                    [--omit 3] [--rounds 3] [--rate 20mbit] [--burst 64k]
#                    [--flows 4] [--variants "..."] [--tag TEXT]
#
# Topology: netns lsnd (198.18.3.1/30, veth ls0) -> netns lrcv (198.18.3.2,
# lr0).  Root of ls0: tbf rate RATE (the bottleneck this VM holds steady
# under TCG) with the qdisc under test as its child at 1:1 (handle 10:):
# under a classful parent the core clears TCQ_F_NOLOCK, so softmq runs in
# locked mode here, as fq_codel and pfifo_fast do.  TSO/GSO off on ls0: the
# child sees MTU-sized packets, as behind tbf anyway (tbf segments).
#
# Per run: FLOWS bulk TCP flows (one iperf3 -P FLOWS client, lsnd -> lrcv,
# -J, OMIT s unmeasured then SECS s measured) and, from OMIT on, a ping
# probe every 50 ms for SECS s (ICMP: a flow of its own for fq_codel and
# softmq); `ss -tin` sampled each second; `tc -s -j qdisc show` at the
# start and the end of the measured window.  Raw files go to
# DIR/<variant>-r<round>/, one line per run to DIR/runs.jsonl (first line
# "env").  bench/report_latency.py turns them into the tables.
#
# Variants (rows): pfifo_fast, fq_codel, softmq (module defaults: CoDel on
# where the module has it), softmq-nocodel (`softmq nocodel`; a "skip"
# record where the module has no CoDel), and -ecn runs of fq_codel and
# softmq (net.ipv4.tcp_ecn=1 in the sender's netns; otherwise 2, the
# kernel default: no ECN requested).
#
# softmq's options and xstats without the tc plugin: tests/vm/lib/smq.py
# (raw rtnetlink, the layout read from include/uapi/softmq.h) reads the
# module's CoDel option, adds `codel 0` where tc has no `nocodel` (a plugin
# older than the module), and reads the xstats once per softmq run, after
# the traffic (smq-end.json: CoDel's drops and marks over the whole run).
#
# Prints the test bed's protocol on stdout: "PASS bench-<tag>: N runs" or
# "FAIL bench-<tag>: why".
{ # parsed whole before it runs: editing this file cannot break a running copy
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

KO="" OUT="" TCLIB="" SECS=10 OMIT=3 ROUNDS=3 RATE=20mbit BURST=64k NFLOWS=4 TAG=""
VARIANTS="pfifo_fast fq_codel softmq softmq-nocodel fq_codel-ecn softmq-ecn"
while [ $# -gt 0 ]; do
	case "$1" in
	--ko) KO=$2; shift 2;;
	--out) OUT=$2; shift 2;;
	--tc-lib) TCLIB=$2; shift 2;;
	--secs) SECS=$2; shift 2;;
	--omit) OMIT=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--rate) RATE=$2; shift 2;;
	--burst) BURST=$2; shift 2;;
	--flows) NFLOWS=$2; shift 2;;
	--variants) VARIANTS=$2; shift 2;;
	--tag) TAG=$2; shift 2;;
	*) echo "latency-guest.sh: unknown argument $1" >&2; exit 2;;
	esac
done
[ -n "$OUT" ] || { echo "latency-guest.sh: --out DIR needed" >&2; exit 2; }

say() { echo "[bench] $*" >&2; }
fail() { say "ERROR: $*"; echo "FAIL bench-${TAG:-latency}: $*"; exit 0; }

SND=lsnd RCV=lrcv DEV=ls0 SADDR=198.18.3.1 RADDR=198.18.3.2
NRUN=0 LOADED_KO=0 SRV_PID=""
SMQPY=$(cd "$(dirname "$0")/.." && pwd)/tests/vm/lib/smq.py
HAVE_SMQPY=0
[ -e "$SMQPY" ] && command -v python3 > /dev/null && HAVE_SMQPY=1
smqpy() { ip netns exec $SND python3 "$SMQPY" "$@"; }
# The test bed's receive-timestamp holder (tests/testbed/guest.sh) stays:
# ping turns SO_TIMESTAMP on and off at every start and end, and the hold
# keeps that static key from being patched under traffic (the TCG int3
# race described there).  Every variant runs with it alike.

cleanup() {
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	ip netns del $SND 2>/dev/null
	ip netns del $RCV 2>/dev/null
	[ $LOADED_KO = 1 ] && { sleep 1; rmmod sch_softmq 2>/dev/null; }
}
trap cleanup EXIT

for c in iperf3 ping ss tc ip ethtool; do
	command -v $c > /dev/null || fail "no $c in the guest (install it on the host: the guest runs the host's /)"
done
modprobe veth || fail "modprobe veth"
modprobe sch_tbf 2>/dev/null
modprobe sch_fq_codel 2>/dev/null
if ! grep -q '^sch_softmq ' /proc/modules; then
	[ -n "$KO" ] && [ -e "$KO" ] || fail "no softmq module (--ko '$KO')"
	insmod "$KO" || fail "insmod $KO"
	LOADED_KO=1
fi

TC=(tc)
HAVE_PLUGIN=0
if [ -n "$TCLIB" ] && [ -e "$TCLIB/q_softmq.so" ]; then
	TC=(env "TC_LIB_DIR=$TCLIB" tc)
	HAVE_PLUGIN=1
fi

ip netns del $SND 2>/dev/null; ip netns del $RCV 2>/dev/null
ip netns add $SND || fail "netns $SND"
ip netns add $RCV || fail "netns $RCV"
ip -n $SND link set lo up
ip -n $RCV link set lo up
ip -n $SND link add $DEV type veth peer name lr0 netns $RCV || fail "veth"
ip -n $SND addr add $SADDR/30 dev $DEV
ip -n $RCV addr add $RADDR/30 dev lr0
ip -n $SND link set $DEV up
ip -n $RCV link set lr0 up
ip netns exec $SND ethtool -K $DEV tso off gso off > /dev/null 2>&1 || say "ethtool -K $DEV tso/gso off failed"
ip netns exec $SND ping -c 1 -W 5 $RADDR > /dev/null 2>&1 || fail "no ping through the veth"

ip netns exec $RCV iperf3 -s -B $RADDR > "$OUT/iperf3-server.log" 2>&1 &
SRV_PID=$!
sleep 1

# ------------------------------------------------------------ qdiscs
child_of() {   # VARIANT -> CHILD (tc words after "handle 10:")
	case $1 in
	pfifo_fast) CHILD=pfifo_fast;;
	fq_codel|fq_codel-ecn) CHILD=fq_codel;;
	softmq|softmq-ecn) CHILD=softmq;;
	softmq-nocodel) CHILD="softmq nocodel";;
	*) fail "unknown variant $1";;
	esac
}
NOCODEL_VIA=tc
set_qdisc() {   # CHILD-WORDS -> 0 when tc (or smq.py) took it
	"${TC[@]}" -n $SND qdisc del dev $DEV root 2>/dev/null
	if [ "$1" = "softmq nocodel" ] && [ $NOCODEL_VIA = smqpy ]; then
		"${TC[@]}" -n $SND qdisc add dev $DEV root handle 1: tbf rate $RATE burst $BURST latency 100ms &&
			smqpy add $DEV parent 1:1 handle 10: codel 0
		return
	fi
	"${TC[@]}" -n $SND -batch - <<EOF
qdisc add dev $DEV root handle 1: tbf rate $RATE burst $BURST latency 100ms
qdisc add dev $DEV parent 1:1 handle 10: $1
EOF
}
qdesc() { "${TC[@]}" -n $SND qdisc show dev $DEV | tr '\n' ';'; }

# What this module can do: CoDel options are shown by a module that has
# them (an old module ignores attributes it does not know, so tc taking
# "nocodel" alone proves nothing).
set_qdisc softmq > /dev/null 2>&1 || fail "tbf + softmq child refused"
SMQ_DEFAULT_DESC=$(qdesc)
SMQ_AQM=0 SMQ_AQM_HOW="neither tc nor smq.py shows a CoDel option"
SMQ_SHOW=""
[ $HAVE_SMQPY = 1 ] && SMQ_SHOW=$(smqpy show $DEV 2>&1)
if [[ $SMQ_DEFAULT_DESC =~ (target|interval|codel) ]]; then
	SMQ_AQM=1 SMQ_AQM_HOW="tc shows its CoDel options"
elif [[ $SMQ_SHOW =~ \"codel\":\ ([01]) ]]; then
	# A tc plugin older than the module prints no CoDel options.
	SMQ_AQM=${BASH_REMATCH[1]}
	SMQ_AQM_HOW="the module's dump has codel ${BASH_REMATCH[1]} (read with tests/vm/lib/smq.py; this tc plugin does not show CoDel's options)"
fi
NOCODEL_OK=0 NOCODEL_WHY=""
if [ $SMQ_AQM = 0 ]; then
	NOCODEL_WHY="this module has no CoDel: softmq is already without AQM"
elif [ $HAVE_PLUGIN = 1 ] && set_qdisc "softmq nocodel" > /dev/null 2>&1; then
	NOCODEL_OK=1
elif [ $HAVE_SMQPY = 1 ]; then
	NOCODEL_VIA=smqpy
	if err=$(set_qdisc "softmq nocodel" 2>&1); then
		NOCODEL_OK=1
	else
		NOCODEL_WHY="'codel 0' refused: ${err%%$'\n'*}"
	fi
else
	NOCODEL_WHY="no tc plugin with nocodel, and no python3 for tests/vm/lib/smq.py"
fi
"${TC[@]}" -n $SND qdisc del dev $DEV root 2>/dev/null

json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/ }; JS="\"${s//$'\n'/ }\""; }
: > "$OUT/runs.jsonl" || fail "cannot write $OUT/runs.jsonl"
emit() { echo "$1" >> "$OUT/runs.jsonl"; }
{
	ver=$(cat /sys/module/sch_softmq/version 2>/dev/null)
	o="{\"type\":\"env\",\"kernel\":\"$(uname -r)\",\"vcpus\":$(nproc)"
	json_str "$ver"; o="$o,\"softmq_version\":$JS"
	json_str "$(tc -V 2>&1 | head -n 1)"; o="$o,\"tc\":$JS"
	json_str "$(iperf3 --version 2>&1 | head -n 1)"; o="$o,\"iperf3\":$JS"
	json_str "$(ping -V 2>&1 | head -n 1)"; o="$o,\"ping\":$JS"
	json_str "$SMQ_DEFAULT_DESC"; o="$o,\"softmq_default_desc\":$JS"
	json_str "$NOCODEL_WHY"; o="$o,\"nocodel_why\":$JS"
	json_str "$SMQ_AQM_HOW"; o="$o,\"softmq_aqm_how\":$JS"
	json_str "$NOCODEL_VIA"; o="$o,\"nocodel_via\":$JS"
	json_str "$VARIANTS"; o="$o,\"variants\":$JS"
	json_str "$TAG"; o="$o,\"tag\":$JS"
	o="$o,\"softmq_aqm\":$([ $SMQ_AQM = 1 ] && echo true || echo false)"
	o="$o,\"tc_plugin\":$([ $HAVE_PLUGIN = 1 ] && echo true || echo false)"
	o="$o,\"secs\":$SECS,\"omit\":$OMIT,\"rounds\":$ROUNDS,\"rate\":\"$RATE\",\"burst\":\"$BURST\""
	o="$o,\"flows\":$NFLOWS,\"probe_interval_ms\":50,\"saddr\":\"$SADDR\",\"raddr\":\"$RADDR\"}"
	emit "$o"
}
say "softmq AQM: $SMQ_AQM ($SMQ_AQM_HOW); nocodel: $([ $NOCODEL_OK = 1 ] && echo "yes, via $NOCODEL_VIA" || echo "no ($NOCODEL_WHY)")"

# ------------------------------------------------------------ one run
ss_sampler() {   # FILE: one `ss -tin` per second until killed
	while :; do
		echo "@ $EPOCHREALTIME" >> "$1"
		ss -N $SND -tin dst $RADDR >> "$1" 2>&1
		sleep 1
	done
}

run_one() {   # VARIANT ROUND
	local v=$1 r=$2 d ecn=2 t0 ipid spid ppid rc desc
	d=$OUT/$v-r$r
	mkdir -p "$d"
	child_of "$v"
	case $v in *-ecn) ecn=1;; esac
	ip netns exec $SND sysctl -qw net.ipv4.tcp_ecn=$ecn || fail "tcp_ecn=$ecn"
	set_qdisc "$CHILD" 2> "$d/tc-add.err" || fail "$v: tc refused '$CHILD': $(cat "$d/tc-add.err")"
	desc=$(qdesc)
	[ "$v" = softmq-nocodel ] && [ $NOCODEL_VIA = smqpy ] && desc="$desc (added by smq.py: codel 0)"
	[[ $desc == *"qdisc tbf 1: root"* && $desc == *"qdisc ${CHILD%% *} 10: parent 1:1"* ]] ||
		fail "$v: wanted tbf 1: root with ${CHILD%% *} 10: as its child, found '$desc'"
	t0=$EPOCHREALTIME
	ip netns exec $SND iperf3 -c $RADDR -P "$NFLOWS" -t "$SECS" -O "$OMIT" -i 1 -J \
		> "$d/iperf3.json" 2> "$d/iperf3.err" &
	ipid=$!
	ss_sampler "$d/ss.txt" &
	spid=$!
	sleep "$OMIT"
	"${TC[@]}" -n $SND -s -j qdisc show dev $DEV > "$d/tc-start.json" 2>&1
	ip netns exec $SND ping -n -i 0.05 -w "$SECS" -W 1 $RADDR > "$d/ping.txt" 2>&1 &
	ppid=$!
	wait $ipid; rc=$?
	"${TC[@]}" -n $SND -s -j qdisc show dev $DEV > "$d/tc-end.json" 2>&1
	wait $ppid
	kill $spid 2>/dev/null; wait $spid 2>/dev/null
	# softmq's xstats as the module's header has them (after the traffic:
	# a python start under TCG takes seconds of a vCPU)
	case $v in softmq*) [ $HAVE_SMQPY = 1 ] && smqpy show $DEV > "$d/smq-end.json" 2>&1;; esac
	json_str "$desc"
	emit "{\"type\":\"run\",\"variant\":\"$v\",\"round\":$r,\"dir\":\"$v-r$r\",\"tcp_ecn\":$ecn,\"iperf3_rc\":$rc,\"qdisc_desc\":$JS,\"wall_s\":$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))e-3}"
	NRUN=$((NRUN + 1))
	say "$v round $r: iperf3 rc $rc, $(grep -c 'time=' "$d/ping.txt") probe replies, $(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000000 )) s"
}

T0=$(date +%s)
for ((r = 1; r <= ROUNDS; r++)); do
	for v in $VARIANTS; do
		if [ "$v" = softmq-nocodel ] && [ $NOCODEL_OK = 0 ]; then
			[ $r = 1 ] && { json_str "$NOCODEL_WHY"; emit "{\"type\":\"skip\",\"variant\":\"$v\",\"why\":$JS}"; }
			continue
		fi
		run_one "$v" "$r"
	done
done
ip netns exec $SND sysctl -qw net.ipv4.tcp_ecn=2
say "$NRUN runs in $(( $(date +%s) - T0 ))s"
echo "PASS bench-${TAG:-latency}: $NRUN runs"
exit
}
