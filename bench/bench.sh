#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: softmq against noqueue, pfifo_fast, fq_codel and fq, side by side.
#
#   bench/bench.sh                 throughput, every line in $KERNELS,
#                                        one VM boot per vCPU count
#   MODE=icount bench/bench.sh     guest instructions per packet, 1 vCPU
#                                        under QEMU -icount shift=0
#   MODE=profile bench/bench.sh    icount's queued path, instructions per
#                                        packet per kernel function (QEMU
#                                        plugin bench/insn-profile.c, nokaslr)
#   MODE=sharing bench/bench.sh    cache lines written by more than one vCPU,
#                                        per packet, per function and line
#                                        (QEMU plugin bench/line-share.c,
#                                        -smp 4 8 16, nokaslr)
#   MODE=latency bench/bench.sh    latency under load: 4 TCP flows + a ping
#                                        probe through tbf (the bottleneck)
#                                        with each qdisc as its child, 2 vCPUs
#   HOST=1 bench/bench.sh          the same matrix on the running kernel,
#                                        no VM (needs root + module loading +
#                                        its headers): the real numbers
#
# Environment (all optional):
#   KERNELS="6.12 7.2"   kernel lines (tests/testbed/kernels.sh)
#   BENCH_QUICK=1        a quick pass for iteration: fewer packets, 2 rounds,
#                        flows 1 and 1024 (not for publishing)
#   BENCH_VCPUS="1 2 4"  vCPU counts (HOST=1: sender threads, default
#                        "1 2 <all CPUs>"); MODE=profile takes one: 1 runs
#                        under -icount, more multi-threaded (all vCPUs'
#                        instructions per packet sent, refused attempts in)
#   BENCH_COUNTS="D V U" packets per sender thread per run for the pktgen
#                        dummy loads, the pktgen veth loads and UDP
#                        (default "50000 20000 10000": each run lasts about
#                        0.1-0.5 s under TCG; icount "10000 5000 1000")
#   BENCH_ROUNDS=R       interleaved rounds per qdisc (>= 5 for publishing)
#   BENCH_FLOWS="1 16 1024"
#   BENCH_LOADS="dummy veth udp mq-dummy mq-veth"   (icount: "dummy veth
#                        udp tbf-dummy"; profile: "tbf-dummy slow", and
#                        "gso", UDP GSO skbs, with profile only; see
#                        bench/guest.sh)
#   BENCH_SOFTMQ_OPTS="depth 256"  extra tc options for every softmq the
#                        bench adds (not mq's children: default_qdisc)
#   BENCH_TXQLEN=N       the dummy and veth devices' txqueuelen, pfifo_fast's
#                        limit (default 1000; 10240 is fq_codel's and
#                        softmq's); not the slow device's, not MODE=latency
#   BENCH_KO=PATH        load this sch_softmq.ko instead of the line's build
#                        (to try a data-path change; one kernel line only)
#   BENCH_OUT=DIR        where results go (default bench/results)
#   MODE=latency only (bench/latency-guest.sh; rounds default 3, vCPUs 2):
#   BENCH_LAT_SECS=10    measured seconds per run (after BENCH_LAT_OMIT=3
#                        unmeasured: slow start, the queue filling)
#   BENCH_LAT_RATE=20mbit  the tbf bottleneck's rate, BENCH_LAT_BURST=64k its burst
#   BENCH_LAT_VARIANTS="pfifo_fast fq_codel softmq softmq-nocodel fq_codel-ecn softmq-ecn"
#   BENCH_SLOW_PPS=N     the slowdev's rate (the "slow" load): MODE=sharing
#                        5000, MODE=profile 100000 (BENCH_SLOW_COUNT=2000
#                        packets per run there; the "gso" load's wire
#                        packets, BENCH_GSO_COUNT=200 skbs of 30 a run)
#   BENCH_QDISCS="..."   only these qdiscs of each load (bench/guest.sh --qdiscs:
#                        noqueue pfifo_fast fq_codel fq softmq-flow softmq-cpu
#                        mq-pfifo_fast mq-softmq, tbf-...)
#   BENCH_REV=REV        build sch_softmq.ko from git REV's Kbuild, src/ and
#                        include/ (git archive into the run's dir) instead of
#                        the working tree's build: figures for a commit while
#                        the tree is being edited
#   SELFTEST=1           MODE=sharing: the instrument's planted-counter
#                        self-test: a module with one atomic_long_inc() on a
#                        global per packet at the top of softmq_enqueue()
#                        (patched into the exported copy only), slow load,
#                        softmq key flow and key cpu, 4 vCPUs; PASS when the
#                        plugin charges >= 1 producer-shared store per packet
#                        to softmq_enqueue in every cell, else FAIL and exit 1
#   BENCH_NOTE=TEXT      added to the results' "also running" line
#
# Writes DIR/<date>-<kernel>.json, .md and .png (icount: <date>-<kernel>-icount.*,
# latency: <date>-<kernel>-latency.*, profile: <date>-<kernel>-profile.*,
# sharing: <date>-<kernel>-sharing.*)
# and prints the markdown table(s) at the end.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$BENCH_DIR/../tests/testbed/lib.sh"
blog() { printf '[bench] %s\n' "$*" >&2; }

KERNELS=${KERNELS:-"6.12 7.2"}
MODE=${MODE:-throughput}
[ "$MODE" = "" ] && MODE=throughput
HOST=${HOST:-0}
QUICK=${BENCH_QUICK:-0}
case "$MODE" in throughput|icount|latency|profile|sharing) ;; *) die "MODE must be icount, profile, sharing or latency (or empty)";; esac
case "$MODE" in profile|sharing) [ "$HOST" = 1 ] && die "MODE=$MODE needs the VM (a QEMU plugin)";; esac

SELFTEST=${SELFTEST:-0}
[ "$SELFTEST" = 1 ] && [ "$MODE" != sharing ] && die "SELFTEST=1 is MODE=sharing's self-test"
d_qdiscs=""
if [ "$MODE" = sharing ] && [ "$SELFTEST" = 1 ]; then
	# The planted counter: every enqueue stores it, so the slow load
	# (every packet enqueued, the root keeps a backlog), softmq only.
	d_counts="500 0 0" d_rounds=1 d_vcpus=4
	d_loads=slow d_qdiscs="softmq-flow softmq-cpu"
elif [ "$MODE" = sharing ]; then
	# One round (the plugin slows TCG several times); one count for the
	# three pktgen loads (dummy, mq-dummy, slow), 16 flows per thread.
	d_counts="2000 0 0" d_rounds=1 d_vcpus="4 8 16"
	d_loads="dummy mq-dummy slow"
elif [ "$MODE" = profile ]; then
	# One deterministic round: the same counts as icount, per function.
	d_counts="10000 5000 1000" d_rounds=1 d_vcpus=1
	d_loads="tbf-dummy slow"
elif [ "$MODE" = icount ]; then
	# Deterministic: few rounds suffice, they show the run-to-run spread.
	d_counts="10000 5000 1000" d_rounds=3 d_vcpus=1
	d_loads="dummy veth udp tbf-dummy"
elif [ "$MODE" = latency ]; then
	# One boot per line, 2 vCPUs (the host's cores): senders, receiver and
	# probe on separate vCPUs where the scheduler can.
	d_counts="50000 20000 10000" d_rounds=3 d_vcpus=2
	d_loads=latency
else
	d_counts="50000 20000 10000" d_rounds=5 d_vcpus="1 2 4"
	d_loads="dummy veth udp mq-dummy mq-veth"
fi
d_flows="1 16 1024"
[ "$MODE" = sharing ] && d_flows=16
if [ "$QUICK" = 1 ]; then
	d_counts="10000 4000 1000" d_rounds=2 d_flows="1 1024"
	[ "$MODE" = sharing ] && d_counts="500 0 0" d_rounds=1 d_flows=16
fi
COUNTS=${BENCH_COUNTS:-$d_counts}
read -r C_DUMMY C_VETH C_UDP <<<"$COUNTS"
[ -n "$C_UDP" ] || die "BENCH_COUNTS needs three numbers: dummy veth udp"
ROUNDS=${BENCH_ROUNDS:-$d_rounds}
FLOWS=${BENCH_FLOWS:-$d_flows}
LOADS=${BENCH_LOADS:-$d_loads}
VCPUS=${BENCH_VCPUS:-$d_vcpus}
case ${BENCH_TXQLEN:-1000} in ''|*[!0-9]*|0*) die "BENCH_TXQLEN must be a positive number (got '${BENCH_TXQLEN:-}')";; esac
[ "$MODE" = latency ] && [ -n "${BENCH_TXQLEN:-}" ] && die "BENCH_TXQLEN is for the pktgen and UDP loads, not MODE=latency"
QDISCS=${BENCH_QDISCS:-$d_qdiscs}
REV=${BENCH_REV:-}
[ -n "$REV" ] && [ -n "${BENCH_KO:-}" ] && die "BENCH_REV and BENCH_KO exclude each other"
[ -n "$REV" ] && { git -C "$REPO" rev-parse --verify -q "$REV^{commit}" > /dev/null || die "BENCH_REV=$REV: no such commit"; }
LAT_SECS=${BENCH_LAT_SECS:-10}
LAT_OMIT=${BENCH_LAT_OMIT:-3}
LAT_RATE=${BENCH_LAT_RATE:-20mbit}
LAT_BURST=${BENCH_LAT_BURST:-64k}
LAT_VARIANTS=${BENCH_LAT_VARIANTS:-"pfifo_fast fq_codel softmq softmq-nocodel fq_codel-ecn softmq-ecn"}
OUTDIR=${BENCH_OUT:-$REPO/bench/results}
# The slow load: MODE=sharing, a device far slower than the senders (a
# standing backlog, drops); MODE=profile, the queued path with the qdisc as
# the NOLOCK root (bench/guest.sh --slow-drain): one vCPU sends and runs the
# device's timer, so the backlog grows through the run (BENCH_SLOW_COUNT
# packets per run) and drains after it, deeper than a ring's slots where
# one ring takes them all (key cpu: the report gives the share spilled).
if [ "$MODE" = profile ]; then
	# one count, 1 to the plugin's 16 slots (bench/insn-profile.c)
	case $VCPUS in [1-9]|1[0-6]) ;; *) die "MODE=profile takes one vCPU count, 1 to 16 (BENCH_VCPUS='$VCPUS')";; esac
	SLOW_PPS=${BENCH_SLOW_PPS:-100000}
else
	SLOW_PPS=${BENCH_SLOW_PPS:-5000}
fi
C_SLOW=${BENCH_SLOW_COUNT:-2000}
C_GSO=${BENCH_GSO_COUNT:-200}
case $C_GSO in ''|*[!0-9]*|0*) die "BENCH_GSO_COUNT must be a positive number (got '$C_GSO')";; esac
case " $LOADS " in *" gso "*) [ "$MODE" = profile ] || die "the gso load is MODE=profile's (BENCH_LOADS='$LOADS')";; esac
ICOUNT_BOOT_ARGS="clocksource=tsc tsc=reliable"
DATE=$(date +%Y-%m-%d)
RUNID=$(date +%Y%m%d-%H%M%S)
WORK=$REPO/build/bench/$RUNID
T0=$(now)
mkdir -p "$WORK" "$OUTDIR"

cmdline="make bench"
[ "$KERNELS" != "6.12 7.2" ] && [ "$HOST" != 1 ] && cmdline="$cmdline KERNELS=\"$KERNELS\""
[ "$MODE" != throughput ] && cmdline="$cmdline MODE=$MODE"
[ "$HOST" = 1 ] && cmdline="$cmdline HOST=1"
[ "$QUICK" = 1 ] && cmdline="$cmdline BENCH_QUICK=1"
[ "$SELFTEST" = 1 ] && cmdline="$cmdline SELFTEST=1"
for v in BENCH_QDISCS BENCH_REV BENCH_SLOW_PPS BENCH_SLOW_COUNT BENCH_GSO_COUNT BENCH_VCPUS BENCH_COUNTS BENCH_ROUNDS BENCH_FLOWS BENCH_LOADS BENCH_SOFTMQ_OPTS BENCH_TXQLEN BENCH_KO \
	BENCH_LAT_SECS BENCH_LAT_OMIT BENCH_LAT_RATE BENCH_LAT_BURST BENCH_LAT_VARIANTS; do
	[ -n "${!v:-}" ] && cmdline="$cmdline $v=\"${!v}\""
done

# ------------------------------------------------------------ tools
# gnuplot draws the PNG; installed when we are root, else no plot.
need_pkgs gnuplot-nox iproute2 kmod || blog "continuing without the missing packages (no PNG without gnuplot)"
# MODE=latency: the guest runs the host's userland (tests/testbed/vm.sh).
if [ "$MODE" = latency ]; then
	need_pkgs iperf3 iputils-ping iproute2 ethtool ||
		die "MODE=latency needs iperf3, ping (iputils-ping), ss (iproute2) and ethtool"
fi
UDPSEND=$REPO/build/bench/udpsend
mkdir -p "$(dirname "$UDPSEND")"
if [ ! -x "$UDPSEND" ] || [ "$BENCH_DIR/udpsend.c" -nt "$UDPSEND" ]; then
	gcc -O2 -Wall -Wextra -o "$UDPSEND" "$BENCH_DIR/udpsend.c" || die "building udpsend failed"
fi
PY=/usr/bin/python3
[ -x $PY ] || PY=python3

# What else is running here: the measurement shares the host's cores.
others() {
	ps -eo pcpu=,comm= --sort=-pcpu | awk -v me="$$" '
		$1 >= 5 && $2 !~ /^(ps|awk|bench.sh)$/ { n[$2] += $1 }
		END { for (c in n) printf "%s %.0f%%, ", c, n[c] }' | sed 's/, $//'
}
meta_json() {   # MODE KERNEL ACCEL -> meta.json on stdout
	M_MODE=$1 M_KERNEL=$2 M_ACCEL=$3 \
	M_CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) \
	M_OS=$(. /etc/os-release && echo "$PRETTY_NAME") \
	M_QEMU=$(qemu-system-x86_64 --version 2>/dev/null | head -n 1 | sed 's/QEMU emulator version //') \
	M_OTHERS_START=$OTHERS_START M_OTHERS_END=$(others) M_LOAD_START=$LOAD_START \
	M_LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg) M_NOTE=${BENCH_NOTE:-} \
	M_DATE=$DATE M_CMD=$cmdline M_KERNELS=$KERNELS M_HOST=$HOST \
	M_ELAPSED=$(( $(now) - T0 )) M_CORES=$(nproc) M_COUNTS="$C_DUMMY $C_VETH $C_UDP" \
	M_ROUNDS=$ROUNDS M_FLOWS=$FLOWS M_LOADS=$LOADS M_VCPUS=$VCPUS M_QUICK=$QUICK \
	M_KO=${MODULE_DESC:-${BENCH_KO:-}} M_LAT="$LAT_SECS $LAT_OMIT $LAT_RATE $LAT_BURST" M_LATV=$LAT_VARIANTS \
	$PY - <<'EOF'
import json, os
e = os.environ
host = e["M_HOST"] == "1"
others = "; ".join(x for x in [
    "at start: " + e["M_OTHERS_START"] if e["M_OTHERS_START"] else "",
    "at end: " + e["M_OTHERS_END"] if e["M_OTHERS_END"] else "",
    f"load average {e['M_LOAD_START']} at start, {e['M_LOAD_END']} at end",
    e["M_NOTE"]] if x)
c = e["M_COUNTS"].split()
print(json.dumps({
    "mode": e["M_MODE"], "kernel": e["M_KERNEL"], "accel": e["M_ACCEL"],
    "date": e["M_DATE"], "command": e["M_CMD"],
    "kernels": "the running kernel" if host else e["M_KERNELS"],
    "elapsed_s": int(e["M_ELAPSED"]), "qemu": None if host else e["M_QEMU"],
    "host": {"cores": int(e["M_CORES"]), "cpu": e["M_CPU"], "os": e["M_OS"],
             "others": others},
    "count_per_thread": {"dummy": int(c[0]), "veth": int(c[1]), "udp": int(c[2])},
    "rounds": int(e["M_ROUNDS"]), "flows": e["M_FLOWS"], "loads": e["M_LOADS"],
    "vcpus": e["M_VCPUS"], "quick": e["M_QUICK"] == "1",
    "module": e["M_KO"] or "build/<line>/softmq/sch_softmq.ko (this tree)",
} | ({"latency": dict(zip(("secs", "omit", "rate", "burst"), e["M_LAT"].split()),
                      variants=e["M_LATV"])} if e["M_MODE"] == "latency" else {}), indent=1))
EOF
}
OTHERS_START=$(others)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

REPORTS=()
SELFTEST_FAIL=0
report() {   # PREFIX META RUNS...   (latency: PREFIX META RAWDIR)
	local prefix=$1 meta=$2 rep=report.py; shift 2
	[ "$MODE" = latency ] && rep=report_latency.py
	[ "$MODE" = profile ] && rep=report_profile.py
	[ "$MODE" = sharing ] && rep=report_sharing.py
	if [ "$MODE" = sharing ] && [ "$SELFTEST" = 1 ]; then
		# exit 1: a self-test cell failed (the report is still written)
		$PY "$BENCH_DIR/$rep" --selftest --meta "$meta" --out-prefix "$prefix" "$@" > "$prefix.stdout" ||
			SELFTEST_FAIL=1
		[ -s "$prefix.md" ] || { blog "report failed for $prefix"; SELFTEST_FAIL=1; return 1; }
		grep -E '^(PASS|FAIL) sharing-selftest' "$prefix.stdout" >&2 || true
		REPORTS+=("$prefix")
		return 0
	fi
	$PY "$BENCH_DIR/$rep" --meta "$meta" --out-prefix "$prefix" "$@" > "$prefix.stdout" ||
		{ blog "report failed for $prefix"; return 1; }
	REPORTS+=("$prefix")
}

# ------------------------------------------------------------ HOST=1
host_mode() {
	local why="" kver ko threads t n runs=()
	kver=$(uname -r)
	[ "$(id -u)" = 0 ] || why="not root"
	[ -z "$why" ] && [ ! -e /proc/modules ] && why="this kernel has no module support (/proc/modules missing)"
	[ -z "$why" ] && [ ! -e "/lib/modules/$kver/build/Makefile" ] &&
		why="no headers for $kver (/lib/modules/$kver/build; apt-get install linux-headers-$kver)"
	[ -z "$why" ] && ! modprobe -n pktgen 2>/dev/null && why="no pktgen module for $kver"
	[ -z "$why" ] && [ -r /sys/kernel/security/lockdown ] &&
		! grep -q '\[none\]' /sys/kernel/security/lockdown &&
		why="kernel lockdown is on (Secure Boot): unsigned modules are refused"
	if [ -n "$why" ]; then
		echo "HOST=1: cannot benchmark on this machine: $why."
		echo "HOST=1 needs root, a kernel that loads modules (not Secure Boot locked), its headers and pktgen."
		echo "Here, use the VM bench: make bench (TCG) or make bench MODE=icount."
		exit 2
	fi
	blog "HOST=1: building sch_softmq.ko for $kver"
	make -C "$REPO" modules > "$WORK/build.log" 2>&1 || die "module build failed: $WORK/build.log"
	ko=$REPO/sch_softmq.ko
	[ -e "$REPO/tc-plugin/Makefile" ] && make -C "$REPO/tc-plugin" > "$WORK/plugin.log" 2>&1 || true
	if [ "$MODE" = latency ]; then
		blog "HOST=1, MODE=latency"
		mkdir -p "$WORK/host-lat"
		"$BENCH_DIR/latency-guest.sh" --ko "$ko" --tc-lib "$REPO/tc-plugin" \
			--out "$WORK/host-lat" --secs "$LAT_SECS" --omit "$LAT_OMIT" \
			--rounds "$ROUNDS" --rate "$LAT_RATE" --burst "$LAT_BURST" --variants "$LAT_VARIANTS" \
			--tag host-latency | tee "$WORK/host-lat.log"
		meta_json "$MODE" "$kver" "none (bare metal / host kernel)" > "$WORK/meta.json"
		report "$OUTDIR/$DATE-$kver-host-latency" "$WORK/meta.json" "$WORK/host-lat"
		return
	fi
	n=$(nproc)
	threads=${BENCH_VCPUS:-"1 2 $n"}
	for t in $(echo "$threads" | tr ' ' '\n' | awk -v n="$n" '$1 <= n' | sort -nu); do
		blog "HOST=1: $t sender thread(s)"
		"$BENCH_DIR/guest.sh" --ko "$ko" --tc-lib "$REPO/tc-plugin" --udpsend "$UDPSEND" \
			--out "$WORK/host-$t.jsonl" --netns softmq-bench --count-dummy "$C_DUMMY" --count-veth "$C_VETH" \
			--count-udp "$C_UDP" --rounds "$ROUNDS" \
			--flows "$FLOWS" --loads "$LOADS" --cpus "$t" --tag "host-$t" \
			--softmq-opts "${BENCH_SOFTMQ_OPTS:-}" --txqueuelen "${BENCH_TXQLEN:-1000}" |
			tee "$WORK/host-$t.log"
		runs+=("$WORK/host-$t.jsonl")
	done
	meta_json "$MODE" "$kver" "none (bare metal / host kernel)" > "$WORK/meta.json"
	report "$OUTDIR/$DATE-$kver-host" "$WORK/meta.json" "${runs[@]}"
}

# ------------------------------------------------------------ VM mode
# export_ko LINE DEST: sch_softmq.ko built in DEST from git $REV's sources
# (the working tree's when REV is empty) against LINE's headers; with
# SELFTEST=1 patched first with the planted shared counter (one
# atomic_long_inc() on a module global at the top of softmq_enqueue(): a
# wrapper that calls the real one, renamed).  Sets LINE_KO and MODULE_DESC.
export_ko() {
	local line=$1 dest=$2 ver envf src
	envf=$(line_env "$line")
	rm -rf "$dest"; mkdir -p "$dest"
	if [ -n "$REV" ]; then
		git -C "$REPO" archive "$REV" Kbuild src include | tar -x -C "$dest" ||
			die "git archive $REV failed"
		ver=$(git -C "$REPO" describe --tags --always "$REV")
		MODULE_DESC="git $REV ($ver), exported and built for this run"
	else
		tar -C "$REPO" -c Kbuild src include | tar -x -C "$dest"
		ver=$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null || echo unknown)
		MODULE_DESC="the working tree ($ver), built for this run"
	fi
	if [ "$SELFTEST" = 1 ]; then
		src=$dest/src/sch_softmq.c
		grep -q '^static int softmq_enqueue(struct sk_buff \*skb, struct Qdisc \*sch,' "$src" ||
			die "SELFTEST: softmq_enqueue()'s definition not found in src/sch_softmq.c"
		# rename the real one; declare both before it (the ops struct
		# names softmq_enqueue); the wrapper goes at the end of the file
		sed -i '0,/^static int softmq_enqueue(struct sk_buff \*skb, struct Qdisc \*sch,/s//static int softmq_enqueue_unplanted(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free);\nstatic int softmq_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free);\nstatic int softmq_enqueue_unplanted(struct sk_buff *skb, struct Qdisc *sch,/' "$src"
		cat >> "$src" <<'EOF'

/* bench/bench.sh SELFTEST=1: the planted shared counter (never in a release build) */
static atomic_long_t softmq_planted_shared;

static int softmq_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	atomic_long_inc(&softmq_planted_shared);
	return softmq_enqueue_unplanted(skb, sch, to_free);
}
EOF
		grep -q 'enqueue.*= softmq_enqueue,' "$src" || die "SELFTEST: softmq's ops no longer name softmq_enqueue"
		ver="$ver+planted"
		MODULE_DESC="$MODULE_DESC, with the planted shared counter (SELFTEST=1)"
	fi
	(
		. "$envf"
		if [ "$TOOLCHAIN" = host ]; then
			make -C "$KDIR" M="$dest" -j2 SOFTMQ_VERSION="$ver" modules
		else
			"$TB_DIR/sidroot.sh" run --bind "$dest" -- \
				make -C "$KDIR" M="$dest" -j2 SOFTMQ_VERSION="$ver" modules
		fi
	) > "$dest.log" 2>&1 || die "building the module in $dest failed: $dest.log"
	LINE_KO=$dest/sch_softmq.ko
	[ -e "$LINE_KO" ] || die "no $LINE_KO ($dest.log)"
}

# Rough duration of one boot's matrix, for the VM timeouts (calibrated on
# a 2-core host: ~1.3 s of set-up per run, pktgen dummy ~500 kpps, veth
# ~150 kpps, UDP ~20 kpps in all; icount about 3x slower).
estimate_s() {   # VCPUS
	local l nf s=0 per
	if [ "$MODE" = latency ]; then   # each run: OMIT + SECS + ~2 s set-up
		echo $(( $(echo "$LAT_VARIANTS" | wc -w) * ROUNDS * (LAT_SECS + LAT_OMIT + 3) + 60 ))
		return
	fi
	nf=$(echo "$FLOWS" | wc -w)
	for l in $LOADS; do
		case $l in
		dummy|mq-dummy|tbf-dummy|slow) per=$((13 + C_DUMMY * $1 * 10 / 500000));;
		gso) per=$((13 + C_GSO * 30 * 10 / 20000));;
		veth|mq-veth) per=$((13 + C_VETH * $1 * 10 / 150000));;
		udp) per=$((13 + C_UDP * $1 * 10 / 20000));;
		esac
		case $l in mq-*) per=$((per * 3));; *) per=$((per * 5));; esac
		s=$((s + per * nf * ROUNDS / 10))
	done
	[ "$MODE" = icount ] && s=$((s * 3))
	[ "$MODE" = profile ] && s=$((s * 6))
	[ "$MODE" = sharing ] && s=$((s * 20 + $1 * 30))	# the plugin; a slower boot
	echo $((s + 60))
}

vm_mode() {
	local line v abi est script res ok accel icount_arg=() runs prefix rc
	for line in $KERNELS; do
		"$TB_DIR/kernels.sh" fetch "$line" || { rc=$?; [ $rc = 2 ] && { blog "SKIP $line: cannot fetch here"; continue; }; die "fetch $line failed"; }
		"$TB_DIR/build.sh" "$line" > "$WORK/build-$line.log" 2>&1 || true
		grep -E '^(PASS|FAIL) build-.*softmq' "$WORK/build-$line.log" >&2 || true
		[ -e "$REPO/build/$line/softmq/sch_softmq.ko" ] || die "no softmq module for $line (see $WORK/build-$line.log)"
	done
	"$TB_DIR/build.sh" plugin > "$WORK/build-plugin.log" 2>&1 ||
		blog "tc plugin did not build: softmq key cpu is left out (see $WORK/build-plugin.log)"

	# One VM at a time on this host (the test bed's lock): take it once for
	# all our boots, so they run back to back under the same conditions,
	# and let vm.sh use a private lock meanwhile.
	local vm_lock=${SOFTMQ_VM_LOCK:-$CACHE/vm.lock}
	exec 7>"$vm_lock"
	if ! flock -n 7; then
		blog "waiting for other VMs to finish ($vm_lock)"
		local lt0; lt0=$(now)
		flock 7
		blog "got the VM lock after $(( $(now) - lt0 ))s"
		T0=$(now)	# the bench's own time starts here
	fi
	export SOFTMQ_VM_LOCK=$WORK/vm.lock
	OTHERS_START=$(others)
	LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

	accel="multi-threaded"
	if [ "$MODE" = icount ] || { [ "$MODE" = profile ] && [ "$VCPUS" = 1 ]; }; then
		# 16 possible CPUs (one present): nr_cpu_ids is 16, so key cpu
		# has its rings and the limit counters their many-CPU batch, as
		# on a real host; and the tsc clocksource throughout: the one
		# the boot picks can be replaced mid-run under -icount, which
		# moves every packet's cost (the clock reads) between rounds.
		icount_arg=(--icount 0 --maxcpus 16 --append "$ICOUNT_BOOT_ARGS")
		accel="single-threaded, -icount shift=0,sleep=off, -smp 1,maxcpus=16, $ICOUNT_BOOT_ARGS"
	fi
	if [ "$MODE" = profile ]; then
		gcc -O2 -Wall -shared -fPIC -o "$WORK/insn-profile.so" "$BENCH_DIR/insn-profile.c" -lpthread ||
			die "bench/insn-profile.c did not build"
		accel="$accel, QEMU plugin bench/insn-profile.c, nokaslr"
	fi
	if [ "$MODE" = sharing ]; then
		gcc -O2 -Wall -Wextra -shared -fPIC -o "$WORK/line-share.so" "$BENCH_DIR/line-share.c" -lpthread ||
			die "bench/line-share.c did not build"
		accel="$accel, QEMU plugin bench/line-share.c, nokaslr"
	fi
	for line in $KERNELS; do
		abi=$(sed -n 's/^ABI=//p' "$(line_env "$line")")
		runs=()
		LINE_KO=${BENCH_KO:-}
		if [ -n "$REV" ] || [ "$SELFTEST" = 1 ]; then
			export_ko "$line" "$WORK/$line-ko"
			blog "$line: module $MODULE_DESC"
		fi
		if [ "$MODE" = profile ] || [ "$MODE" = sharing ]; then
			# The plugin's mark: where the kernel runs the drop_caches
			# handler with nokaslr.  Debian ships no System.map (it is in
			# the -dbg package), so one short boot reads /proc/kallsyms.
			local mark markf=$CACHE/kernels/$abi.profile-mark
			if [ ! -s "$markf" ]; then
				mkdir -p "$WORK/mark"
				cat > "$WORK/mark/profile-mark.sh" <<'EOF'
#!/bin/sh
# generated by bench/bench.sh: where the drop_caches handler runs
awk '$3 == "drop_caches_sysctl_handler" { print "0x" $1; exit }' /proc/kallsyms > "$SOFTMQ_RESULTS/mark"
echo PASS profile-mark
EOF
				chmod +x "$WORK/mark/profile-mark.sh"
				"$TB_DIR/vm.sh" --kernel "$line" --smp 1 --no-prepare --append nokaslr \
					--results "$WORK/mark/res" "$WORK/mark/profile-mark.sh" > "$WORK/mark/vm.log" 2>&1 || true
				grep -qx '0xffff[0-9a-f]*' "$WORK/mark/res/profile-mark/mark" 2>/dev/null ||
					die "no drop_caches_sysctl_handler address from $line (see $WORK/mark/vm.log)"
				cp "$WORK/mark/res/profile-mark/mark" "$markf"
			fi
			mark=$(cat "$markf")
			icount_arg=(--icount 0 --maxcpus 16 --append "nokaslr $ICOUNT_BOOT_ARGS")
			# sharing, and profile with more than one vCPU (what a packet
			# costs when many vCPUs send: the refused attempts, the
			# consumer's calls): multi-threaded, as the throughput bench
			[ "$MODE" = sharing ] && icount_arg=(--append nokaslr)
			[ "$MODE" = profile ] && [ "$VCPUS" != 1 ] && icount_arg=(--append nokaslr)
		fi
		for v in $VCPUS; do
			est=$(estimate_s "$v")
			script=$WORK/$line-${v}v/bench-$line-${v}v.sh
			res=$WORK/$line-${v}v/vm
			mkdir -p "$(dirname "$script")"
			if [ "$MODE" = latency ]; then
				cat > "$script" <<EOF
#!/bin/bash
# generated by bench/bench.sh: one boot of the latency bench
mkdir -p "\$SOFTMQ_RESULTS/lat"
exec $BENCH_DIR/latency-guest.sh --ko "${LINE_KO:-\$SOFTMQ_KO}" --tc-lib "\$TC_LIB_DIR" \\
	--out "\$SOFTMQ_RESULTS/lat" --secs $LAT_SECS --omit $LAT_OMIT --rounds $ROUNDS \\
	--rate $LAT_RATE --burst $LAT_BURST --variants "$LAT_VARIANTS" --tag $line-${v}v-latency
EOF
			else
			cat > "$script" <<EOF
#!/bin/bash
# generated by bench/bench.sh: one boot of the bench matrix
exec $BENCH_DIR/guest.sh --ko "${LINE_KO:-\$SOFTMQ_KO}" --tc-lib "\$TC_LIB_DIR" \\
	--qdiscs "$QDISCS" --udpsend $UDPSEND --out "\$SOFTMQ_RESULTS/runs.jsonl" --netns softmq-bench \\
	--count-dummy $C_DUMMY --count-veth $C_VETH --count-udp $C_UDP \
	--rounds $ROUNDS --flows "$FLOWS" --loads "$LOADS" \\
	--softmq-opts "${BENCH_SOFTMQ_OPTS:-}" --txqueuelen "${BENCH_TXQLEN:-1000}" \\
	--tag $line-${v}v$([ "$MODE" = profile ] &&
		echo " --profile --slowdev \"\$SOFTMQ_TEST_MODULES/slowdev/slowdev.ko\" --slow-pps $SLOW_PPS --slow-drain --count-slow $C_SLOW --count-gso $C_GSO")$([ "$MODE" = sharing ] &&
		echo " --profile --flow-split --xps --slowdev \"\$SOFTMQ_TEST_MODULES/slowdev/slowdev.ko\" --slow-pps $SLOW_PPS")
EOF
			fi
			chmod +x "$script"
			blog "$line ($abi), $v vCPU(s)$([ "$MODE" = icount ] && echo ', icount'): about $((est / 60)) min"
			local t1; t1=$(now)
			local plugin=()
			if [ "$MODE" = profile ]; then
				# outside --results, which vm.sh empties first
				rm -rf "$WORK/$line-${v}v/profile"; mkdir -p "$WORK/$line-${v}v/profile"
				plugin=(--plugin "$WORK/insn-profile.so,out=$WORK/$line-${v}v/profile,mark=$mark")
			elif [ "$MODE" = sharing ]; then
				rm -rf "$WORK/$line-${v}v/profile"; mkdir -p "$WORK/$line-${v}v/profile"
				plugin=(--plugin "$WORK/line-share.so,out=$WORK/$line-${v}v/profile,mark=$mark")
			fi
			"$TB_DIR/vm.sh" --kernel "$line" --smp "$v" --no-prepare "${icount_arg[@]}" ${plugin[@]+"${plugin[@]}"} \
				--results "$res" --script-timeout $((est * 3)) \
				--timeout $((est * 3 + 600)) "$script" > "$WORK/$line-${v}v/vm.log" 2>&1 || true
			grep -E '^(PASS|FAIL|SKIP) |^vm ' "$WORK/$line-${v}v/vm.log" | sed 's/^/    /' >&2 || true
			blog "$line, $v vCPU(s): $(( $(now) - t1 ))s"
			local f=$res/bench-$line-${v}v/runs.jsonl
			if [ "$MODE" = latency ]; then
				f=$res/bench-$line-${v}v/lat
				if [ -s "$f/runs.jsonl" ] && grep -q '"type":"run"' "$f/runs.jsonl"; then
					rm -rf "$WORK/$line-${v}v-lat"
					cp -r "$f" "$WORK/$line-${v}v-lat"
					runs+=("$WORK/$line-${v}v-lat")
				else
					blog "no results from $line, $v vCPU(s): see $WORK/$line-${v}v/vm.log"
				fi
			elif [ "$MODE" = profile ] && [ -s "$f" ]; then
				rm -rf "$WORK/$line-profile"; mkdir -p "$WORK/$line-profile"
				cp "$f" "$(dirname "$f")/kallsyms" "$WORK/$line-${v}v"/profile/phase-*.txt "$WORK/$line-profile/" ||
					blog "profile files of $line missing"
				runs+=("$WORK/$line-profile")
			elif [ "$MODE" = sharing ] && [ -s "$f" ]; then
				rm -rf "$WORK/$line-${v}v-sharing"; mkdir -p "$WORK/$line-${v}v-sharing"
				cp "$f" "$(dirname "$f")/kallsyms" "$WORK/$line-${v}v"/profile/share-*.txt "$WORK/$line-${v}v-sharing/" ||
					blog "sharing files of $line, $v vCPU(s) missing"
				runs+=("$WORK/$line-${v}v-sharing")
			elif [ -s "$f" ]; then
				cp "$f" "$WORK/$line-${v}v.jsonl"
				runs+=("$WORK/$line-${v}v.jsonl")
			else
				blog "no results from $line, $v vCPU(s): see $WORK/$line-${v}v/vm.log"
			fi
		done
		[ ${#runs[@]} -gt 0 ] || { blog "no results at all for $line"; continue; }
		prefix=$OUTDIR/$DATE-$abi
		[ "$MODE" = icount ] && prefix=$prefix-icount
		[ "$MODE" = latency ] && prefix=$prefix-latency
		[ "$MODE" = profile ] && prefix=$prefix-profile
		[ "$MODE" = sharing ] && prefix=$prefix-sharing
		[ "$SELFTEST" = 1 ] && prefix=$prefix-selftest
		[ "$QUICK" = 1 ] && prefix=$prefix-quick
		meta_json "$MODE" "$abi" "$accel" > "$WORK/meta-$line.json"
		report "$prefix" "$WORK/meta-$line.json" "${runs[@]}"
	done
}

if [ "$HOST" = 1 ]; then
	host_mode
else
	[ "$(id -u)" = 0 ] || die "the VM bench needs root (vm.sh: 9p export of /); HOST=1 for the running kernel"
	vm_mode
fi

[ ${#REPORTS[@]} -gt 0 ] || die "no results"
for p in "${REPORTS[@]}"; do
	echo
	cat "$p.stdout"
	rm -f "$p.stdout"
done
echo
written=()    # icount mode writes no plot
for p in "${REPORTS[@]}"; do
	for x in json md png; do [ -e "$p.$x" ] && written+=("$p.$x"); done
done
blog "results: ${written[*]} ($(( ($(now) - T0) / 60 )) min $(( ($(now) - T0) % 60 )) s)"
if [ "$SELFTEST" = 1 ]; then
	[ "$SELFTEST_FAIL" = 0 ] || { blog "SELFTEST: FAIL (the plugin missed the planted shared counter)"; exit 1; }
	blog "SELFTEST: PASS"
fi
exit
}
