#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tc bad input against the real kernel: every softmq option with a missing,
# doubled, negative, huge, out-of-range and non-numeric value, as add (no
# softmq yet), change and replace (softmq attached).  Each must exit 1
# (tc's parsers) or 2 (the kernel's policy, with its extack) with an error
# on stderr and leave the kernel as it was: the device's qdisc dump
# (handle, options) and softmq's reconfiguration counter unchanged.  (The
# host-side tests in tests/tc-plugin check the message text and that
# nothing is sent.)  Then the out-of-range values and malformed attributes
# go to the kernel raw, without tc: refused with an error, state unchanged.
. "$(dirname "$0")/lib.sh"

softmq_load || { fail tc-badinput "cannot load sch_softmq"; exit 0; }
modprobe dummy 2>/dev/null
D=tcb0
trap 'ip link del $D 2>/dev/null' EXIT
ip link del $D 2>/dev/null
ip link add $D type dummy && ip link set $D up || { fail tc-badinput "no dummy device"; exit 0; }
[ -e "${TC_LIB_DIR:-/nonexistent}/q_softmq.so" ] ||
	{ fail tc-badinput "no q_softmq.so in TC_LIB_DIR='${TC_LIB_DIR:-}' (make plugin)"; exit 0; }

# Sanity: the good form works (else every "refused" below proves nothing).
if ! out=$(tc qdisc add dev $D root softmq flows 64 depth 32 quantum 1000 bands 1 key cpu limit 100 memory_limit 1m codel target 5ms interval 100ms ecn ce_threshold 1ms 2>&1); then
	fail tc-badinput-good-form "tc refused a valid command: $out"; exit 0
fi
tc qdisc del dev $D root

bads=()
for o in flows depth quantum bands limit memory_limit target interval ce_threshold; do
	bads+=("$o" "$o $o" "$o -1" "$o -64" "$o 4294967296"
		"$o 18446744073709551616" "$o 99999999999999999999999" "$o abc" "$o 12abc"
		"$o 0x" "$o ''" "$o 64 junk")
	# quantum and memory_limit are tc sizes (1514, 1.5k, 1e3 are all
	# valid), target, interval and ce_threshold times (5ms, 1.5ms, 1e3
	# usec; ce_threshold 0 is valid), the others counts
	case $o in
	quantum|memory_limit) bads+=("$o 0" "$o 1.5q" "$o kb" "$o 64kq");;
	target|interval) bads+=("$o 0" "$o 0.5us" "$o 5m" "$o 5ns" "$o 61s" "$o 60000001"
		"$o 1e999" "$o nan" "$o -5ms" "$o off");;
	ce_threshold) bads+=("$o 5m" "$o 61s" "$o 60000001" "$o 4294967295" "$o nan"
		"$o -5ms" "$o on");;
	*) bads+=("$o 0" "$o 1e3" "$o 1k" "$o 64.5");;
	esac
done
bads+=("flows 131072" "flows 65537" "depth 8192" "depth 3" "depth 4097"
	"quantum 63" "quantum 1048577" "bands 2" "bands 4"
	"limit 16777217" "memory_limit 4095" "memory_limit 2049m" "memory_limit 5g"
	"key" "key key" "key flow key cpu" "key -1" "key 2" "key 4294967296" "key foo"
	"key FLOW" "frobnicate 1" "flows 64 frobnicate"
	"ecn 1" "codel on" "noecn 0" "ECN" "flows 64 flows 0")

# The kernel's view: qdisc dump with statistics and softmq's xstats
# (reconfiguration count, allocated rings).  Nothing sends on $D (no
# address, IPv6 off), so any difference is a change.
sysctl -qw net.ipv6.conf.$D.disable_ipv6=1
state() { tc -s -d qdisc show dev $D; }

# refuse_all NAME WANT_RC MODES CMD ARGS...: every ARGS (one string of
# option words) as each mode in MODES, through "CMD MODE ARGS" (CMD ends
# where the mode goes: "tc qdisc", or smq.py); each must exit WANT_RC with
# a message and leave the kernel's state as it was.  WANT_RC may list
# several: tc exits 1 on a word its parsers refuse and 2 on the kernel's
# refusal, which must then carry the kernel's "Error:" (extack) line.
# One case for them all, a FAIL per one that was not refused.
refuse_all() {
	local name=$1 want=$2 modes=$3 cmd=$4 mode args before after out rc why n_ok=0 n_bad=0
	shift 4
	for mode in $modes; do
		tc qdisc del dev $D root 2>/dev/null
		[ "$mode" != add ] && tc qdisc add dev $D root softmq flows 128 depth 16 quantum 700
		after=$(state)
		for args in "$@"; do
			before=$after
			out=$(eval "$cmd $mode $args" 2>&1 >/dev/null)
			rc=$?
			after=$(state)
			why=""
			case " $want " in
			*" $rc "*) ;;
			*) why="exit status $rc (want $want)";;
			esac
			[ -n "$out" ] || why="$why, no error message"
			[ "$rc" = 2 ] && [ "$cmd" = "tc qdisc" ] && ! grep -q '^Error: ' <<< "$out" &&
				why="$why, no extack message"
			[ "$before" = "$after" ] || why="$why, kernel state changed: [$before] -> [$after]"
			if [ -n "$why" ]; then
				fail "$name-$mode-$(echo "$args" | tr -c 'a-zA-Z0-9\n-' '_')" "$cmd $mode ... $args: ${why#, } (output: $(echo "$out" | head -n 2 | tr '\n' ' '))"
				n_bad=$((n_bad + 1))
			else
				n_ok=$((n_ok + 1))
			fi
		done
	done
	note "$name: $n_ok of $((n_ok + n_bad)) refused with exit $want and no kernel change"
	[ $n_bad = 0 ] && pass "$name-all-$((n_ok + n_bad))"
}

# Normal suite: every variant as change (softmq attached: the case where
# a wrong refusal would cost a running config); the full run
# (SOFTMQ_FULL=1) also as add and replace.  tc's parsers refuse a word
# that is not a number, size or time before anything is sent (exit 1);
# a value out of range reaches the kernel, whose policy refuses it with
# an extack message (exit 2).  A repeated option is not among them: its
# last value wins, as in every tc qdisc.
refuse_all tc-badinput "1 2" "$modes" "tc qdisc" "${bads[@]/#/dev $D root softmq }"

# The out-of-range values and malformed attributes go to the kernel raw
# too (smq.py: no parser in between; exit 2 is the kernel's
# refusal, with the errno and the extack message).
raws=("flows 131072" "flows 65537" "flows 0" "depth 8192" "depth 3"
	"depth 4097" "depth 0" "quantum 63" "quantum 1048577" "quantum 0" "bands 2"
	"bands 4" "bands 0" "key 2" "key 4294967295" "flows 65536 depth 4096"
	"limit 0" "limit 16777217" "limit 4294967295" "memory_limit 0"
	"memory_limit 4095" "memory_limit 2147483649" "memory_limit 4294967295"
	"codel 2" "codel 4294967295" "ecn 2" "target 0" "target 60000001"
	"target 4294967295" "interval 0" "interval 60000001" "ce_threshold 60000001"
	"ce_threshold 4294967294" "target 5000 ecn 0 interval 0"
	"attr 1:u16:64" "attr 1:u64:64" "attr 2:str:16" "attr 99:u32:1"
	"attr 9:u64:5000" "attr 11:u8:1" "attr 12:u16:1000")
refuse_all tc-badinput-raw 2 "add change" "$PY $SOFTMQ_REPO/tests/vm/lib/smq.py" "${raws[@]/#/$D root }"
tc qdisc del dev $D root 2>/dev/null
exit 0
