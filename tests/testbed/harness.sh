#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest-side test harness: runs test scripts one after another, counts
# their case lines and scans the kernel log after each one.
#
#   harness.sh [--results DIR] [--timeout SEC] SCRIPT...
#   harness.sh --scan [FILE]      splat scanner alone: print any kernel
#                                 splat found in FILE (default stdin);
#                                 exit 1 if there is one
#   harness.sh --tcg-trap [FILE]  exit 0 if FILE's (stdin's) one splat is
#                                 a trap that TCG made, and say which
#   harness.sh --tcg-trap FILE FILE...
#                                 the same for each, as "STATUS FILE"
#                                 lines (one process: under TCG each
#                                 start of this script costs a second)
#
# Protocol for a test script (shell or python3, run from the repo root):
#   - print one line per case, at the start of the line:
#       PASS <name>
#       FAIL <name>: <why>
#       SKIP <name>: <reason>
#   - exit non-zero only if the script itself broke: that counts as one
#     extra FAIL ("<script>: exited with status N").
#   - write files into $SOFTMQ_RESULTS (a dir of its own, copied out).
# After each script the kernel log written since it started is scanned;
# a splat (BUG:, WARNING:, Oops, KASAN, UBSAN, lockdep, RCU stall,
# list corruption, refcount_t, hung task, soft lockup, a device that
# unregister_netdevice waits for) counts one FAIL for the script and is
# printed; a kernel log that cannot be read (dmesg fails, or the window's
# start marker is not in it) is a FAIL too, never a clean scan.  At the end
# the rest of the run's log (before, between and after the scripts) is
# scanned the same way.  A nested harness run inside a script judges the
# kernel log of its own run; the outer scan skips that region.
# One splat is not counted but set aside, once a run: a debug-trap
# warning or a user process's #GP that TCG made (tcg_debug_trap,
# tcg_user_trap below); the script that saw it runs again, and its second
# run counts.
#
# Ends with "N passed, N failed, N skipped" alone on the last line; exits 1
# if anything failed.  Also writes DIR/summary and DIR/cases.txt.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -u

SPLAT_RE='BUG:|BUG [^ :]+ \(|page allocation failure|WARNING:|Oops|KASAN|UBSAN|KCSAN|possible circular|inconsistent lock|possible recursive locking|rcu_[a-z]+ (self-)?detected stall|rcu: INFO|list_(del|add) corruption|refcount_t:|kernel BUG at|general protection fault|soft lockup|hard LOCKUP|blocked for more than|unregister_netdevice: waiting for|scheduling while atomic|sleeping function called from invalid context|kmemleak: [0-9]+ new suspected'

# splat_scan [LINES]: stdin = kernel log lines; prints the splats, each
# up to its end-of-trace line or LINES lines after its first (default
# 60); exit 1 if any.
splat_scan() {
	awk -v re="$SPLAT_RE" -v max="${1:-60}" '
	{ l[NR] = $0 }
	END {
		n = 0; last = 0
		for (i = 1; i <= NR; i++) {
			if (i <= last || l[i] !~ re) continue
			n++
			if (n > 5) { print "    | ... more splats omitted"; break }
			# the WARN message comes just before "WARNING:"
			for (j = i - 2; j < i; j++)
				if (j > last && j >= 1) print "    | " l[j]
			print "    | " l[i]
			for (j = i + 1; j <= NR && j <= i + max; j++) {
				print "    | " l[j]
				if (l[j] ~ /---\[ end trace/) break
			}
			# the last line printed (the loop may have run out)
			last = (j > NR || j > i + max) ? j - 1 : j
		}
		exit(n > 0)
	}'
}

# kmsg_window TOKEN: the kernel log since "softmq-harness: begin TOKEN",
# without the regions of nested harness runs (begin X ... end X).  When
# dmesg fails, or its output has no such marker (it left the buffer, or
# the log read is not the one written), prints why and returns 1: a log
# that could not be read must not read as a clean one.
kmsg_window() {
	local buf
	if ! buf=$(dmesg 2>&1); then
		echo "dmesg failed: $(printf '%s\n' "$buf" | tail -n 1)"
		return 1
	fi
	printf '%s\n' "$buf" | awk -v tok="$1" '
	{ l[NR] = $0 }
	END {
		start = 0
		for (i = 1; i <= NR; i++)
			if (index(l[i], "softmq-harness: begin " tok " ")) start = i
		if (!start) {
			print "its start marker is not in the kernel log (" NR " lines read)"
			exit 1
		}
		for (i = start + 1; i <= NR; i++) {
			if (match(l[i], /softmq-harness: (begin|end) [^ ]+/)) {
				split(substr(l[i], RSTART, RLENGTH), w, " ")
				if (w[2] == "begin") b[w[3]] = i; else e[w[3]] = i
			}
		}
		for (t in b)
			if ((t in e) && e[t] > b[t])
				for (j = b[t]; j <= e[t]; j++) skip[j] = 1
		for (i = start + 1; i <= NR; i++)
			if (!(i in skip)) print l[i]
	}'
}

kmsg() { echo "softmq-harness: $*" > /dev/kmsg 2>/dev/null; }

# shellcheck source=tcg-trap.sh
. "$(dirname "$0")/tcg-trap.sh"

# tcg_debug_trap SPLAT: true if SPLAT (splat_scan 1000's output) is one splat
# alone, the warning of a debug trap taken in kernel mode, whose
# interrupted frame has an EFLAGS that no x86 CPU pushes (a reserved bit
# set, or bit 1 clear: the word is the bits of a register, TF among
# them), at a RIP in kernel text outside any module, with no softmq or
# slowdev frame on the whole trace ("?" frames are stale stack words).  The CPU
# writes that EFLAGS when it takes the trap, so no store by the guest
# made it: it is TCG's (tests/testbed/seen/2026-12-07-6.12-debug-trap-
# 20-traffic.txt; tcg-trap.sh's tcg_trap_re is the same test for the
# crashes vm.sh reruns).
# Prints the interrupted RIP and EFLAGS.
tcg_debug_trap() {
	local db rip fl
	[ "$(grep -cE "$SPLAT_RE" <<< "$1")" = 1 ] || return 1
	# a trace cut short may hide a frame
	grep -q -- '---\[ end trace' <<< "$1" || return 1
	grep -qE 'WARNING: CPU: [0-9]+ PID: [0-9]+ at arch/x86/kernel/traps\.c:[0-9]+ exc_debug_kernel\+' <<< "$1" ||
		return 1
	db=$(sed -n '/<#DB>/,/<\/#DB>/p' <<< "$1" | tr -d '\r')
	# a symbol's, not a bare address (a module's, or none known)
	rip=$(grep -m1 -oE 'RIP: 0010:[^ ]+( \[[A-Za-z0-9_]+\])?$' <<< "$db") || return 1
	[[ $rip =~ ^'RIP: 0010:'[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+/0x[0-9a-f]+$ ]] || return 1
	fl=$(awk -v r="$rip" 'index($0, r) { f = 1 } f' <<< "$db" |
		grep -m1 -oE 'EFLAGS: [0-9a-fA-F]{1,16}\b' | cut -d' ' -f2)
	[ -n "$fl" ] || return 1
	tcg_eflags_impossible "$fl" || return 1
	tcg_trace_names_softmq <<< "$1" && return 1
	echo "${rip#RIP: 0010:}, EFLAGS $fl"
}

# tcg_user_trap SPLAT: true if SPLAT is one splat alone, a user process's
# general protection fault (an x86-64 guest's "traps: COMM[PID] general
# protection fault ip:IP sp:.. error:0 in FILE[OFFSET,START+SIZE]", the
# format since 6.2: 6.1 prints no offset) at an instruction that
# tcg_insn_cannot_gp finds in FILE, looked up by name in PATH and the
# library directories (the guest's root is the host's, read-only: the
# file that ran), where the trap's numbers fit it (IP in the mapping, at
# OFFSET's place in its page, the whole mapping inside the file).  Such an
# instruction raises no #GP on any CPU, so the fault is most likely
# TCG's (tests/testbed/seen/2026-12-07-6.12-user-gpf-40-default-
# qdisc.txt: "sub $0x1,%rdx" in python3.11), not proven: an IRET to user
# mode that faults on a saved frame the kernel corrupted is reported the
# same way, at the interrupted instruction (with the selector as its
# error code, 0 for a null one).  The process died of it, so its
# script's cases may have failed.
# Prints the file, offset and instruction.
tcg_user_trap() {
	local t file off ip start size proc path d dirs insn
	[ "$(grep -cE "$SPLAT_RE" <<< "$1")" = 1 ] || return 1
	[ "$(uname -m)" = x86_64 ] || return 1
	t=$(grep -m1 -oE 'traps: [^][ ]+\[[0-9]+\] general protection fault ip:[0-9a-f]+ sp:[0-9a-f]+ error:0 in [^][ /]+\[[0-9a-f]+,[0-9a-f]+\+[0-9a-f]+\]' <<< "$1") ||
		return 1
	proc=${t#traps: } proc=${proc%% *}
	ip=${t#* ip:} ip=${ip%% *}
	file=${t##* in } off=${file#*[} file=${file%%[*}
	start=${off#*,} off=${off%%,*} size=${start#*+} start=${start%%+*} size=${size%]}
	(( (16#$ip & 16#fff) == (16#$off & 16#fff) &&
	   16#$ip >= 16#$start && 16#$ip < 16#$start + 16#$size )) || return 1
	IFS=: read -ra dirs <<< "$PATH"
	for d in "${dirs[@]}" /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
		# (an ELF file: a shim script of the same name ran nothing)
		[ -n "$d" ] && [ -f "$d/$file" ] && [ "$(head -c 4 "$d/$file" | tr -d '\177')" = ELF ] &&
			{ path=$d/$file; break; }
	done
	# the whole mapping within the file (its last page may run past
	# the end): a file of the same name and another size is refused
	[ -n "${path:-}" ] && (( 16#$off - (16#$ip - 16#$start) >= 0 &&
		16#$off - (16#$ip - 16#$start) + 16#$size <= ($(stat -c %s "$path") + 4095) / 4096 * 4096 )) ||
		return 1
	insn=$(tcg_insn_cannot_gp "$path" "$off") || return 1
	echo "$path+0x$off: $insn, a #GP that killed $proc"
}

if [ "${1:-}" = --tcg-trap ]; then
	shift
	[ $# -gt 0 ] || set -- /dev/stdin
	for f in "$@"; do
		whole=$(splat_scan 1000 < "$f")
		what=$(tcg_debug_trap "$whole" || tcg_user_trap "$whole")
		rc=$?
		if [ $# = 1 ]; then
			[ -z "$what" ] || echo "$what"
			exit $rc
		fi
		echo "$rc $f"
	done
	exit 0
fi
if [ "${1:-}" = --scan ]; then
	shift
	if [ $# -gt 0 ]; then splat_scan < "$1"; else splat_scan; fi
	exit
fi

RESULTS=${SOFTMQ_RESULTS_ROOT:-/tmp/softmq-results}
TIMEOUT=${SOFTMQ_SCRIPT_TIMEOUT:-900}
while [ $# -gt 0 ]; do
	case "$1" in
	--results) RESULTS=$2; shift 2;;
	--timeout) TIMEOUT=$2; shift 2;;
	--) shift; break;;
	-*) echo "harness: unknown option $1" >&2; exit 2;;
	*) break;;
	esac
done
mkdir -p "$RESULTS"
: > "$RESULTS/cases.txt"
: > "$RESULTS/times.txt"
# handled.txt: one line per script as the harness takes it up (ran, or
# left out by the plan); vm.sh checks that every selected script is there.
: > "$RESULTS/handled.txt"
npass=0 nfail=0 nskip=0 seq=0

# tests/vm/quick-plan: the lines a long script runs on in make check
# ("<script> <line>..."); a script not listed runs on every line.
# shellcheck source=../vm/plan.sh
. "$(dirname "$0")/../vm/plan.sh"

case_line() {   # print, record and count one case line
	echo "$1"
	echo "$1" >> "$RESULTS/cases.txt"
	case "$1" in
	PASS\ *) npass=$((npass + 1));;
	FAIL\ *) nfail=$((nfail + 1));;
	SKIP\ *) nskip=$((nskip + 1));;
	esac
}

# The whole run's kernel log is scanned at the end too, outside the
# scripts' own windows: a splat between two scripts or after the last one.
# Its "end" marker, written after that scan, makes the region of a nested
# run one that the outer harness leaves to it.
RUNTOK="$$.run.$(date +%s%N)"
kmsg "begin $RUNTOK harness"
# A kernel log that cannot be read means no splat scan at all: a FAIL,
# once here (each script's scan would fail the same way).
can_scan=1
if ! err=$(kmsg_window "$RUNTOK"); then
	can_scan=0
	case_line "FAIL harness-kernel-log: cannot read the kernel log, no splat scan: $err"
fi

# scan_window TOKEN WHERE FILE CASE [may-rerun]: scan the kernel log of TOKEN's window
# (SOFTMQ_KMSG_FILTER: a line's filter, e.g. KCSAN reports not involving
# softmq dropped, tests/debugkernel/kcsan-filter.awk); a splat is printed,
# kept in $RESULTS/FILE.splat and counted as "FAIL CASE: <first line>".  A
# window that cannot be read is "FAIL <CASE up to its ':'>: cannot read
# the kernel log ...".  With may-rerun, the run's first splat that
# tcg_debug_trap knows, in a script that failed nothing else (no FAIL
# since f0, its exit status counted as one), or that tcg_user_trap knows
# (its process died of it: what the script failed is set aside too), is
# kept in $RESULTS/FILE.tcg-trap.splat and not counted; tcg_trap says
# what it was, and the caller runs the script again.
tcg_rerun='' tcg_trap=''
scan_window() {
	local log splat whole first
	if ! log=$(kmsg_window "$1"); then
		case_line "FAIL ${4%%:*}: cannot read the kernel log $2: $log"
		return 0
	fi
	# shellcheck disable=SC2086
	splat=$(printf '%s\n' "$log" | ${SOFTMQ_KMSG_FILTER:-cat} | splat_scan)
	[ -n "$splat" ] || return 0
	echo "kernel log splat $2:"
	echo "$splat"
	# (judged on the whole trace: the one printed stops at 60 lines)
	if [ "${5:-}" = may-rerun ] && [ -z "$tcg_rerun" ]; then
		# shellcheck disable=SC2086
		whole=$(printf '%s\n' "$log" | ${SOFTMQ_KMSG_FILTER:-cat} | splat_scan 1000)
		if { [ "$nfail" = "$f0" ] && tcg_trap=$(tcg_debug_trap "$whole"); } ||
		   tcg_trap=$(tcg_user_trap "$whole"); then
			echo "$splat" > "$RESULTS/$3.tcg-trap.splat"
			return 0
		fi
	fi
	echo "$splat" > "$RESULTS/$3.splat"
	first=$(echo "$splat" | grep -E "$SPLAT_RE" | head -n 1 | sed 's/^    | //; s/^\[ *[0-9.]*\] //')
	case_line "FAIL $4: $first"
}

for script in "$@"; do
	seq=$((seq + 1))
	name=$(basename "$script")
	base=${name%.*}
	token="$$.$seq.$(date +%s%N)"
	export SOFTMQ_RESULTS="$RESULTS/$base"
	mkdir -p "$SOFTMQ_RESULTS"
	logf=$RESULTS/$base.log
	echo "$name" >> "$RESULTS/handled.txt"
	if [ ! -r "$script" ]; then
		case_line "FAIL $name: no such test script"
		continue
	fi
	if [ "${SOFTMQ_FULL:-0}" != 1 ] && ! plan_runs "$name"; then
		if [ "$(plan_lines "$name")" = - ]; then
			case_line "SKIP $name: make check leaves it to make check-full (TCG time budget)"
		else
			case_line "SKIP $name: make check runs it on $(plan_lines "$name") only (TCG time budget); make check-full runs it on every line"
		fi
		continue
	fi
	if [ -x "$script" ]; then cmd=("$script")
	elif [ "${name##*.}" = py ]; then cmd=(python3 "$script")
	else cmd=(bash "$script"); fi

	c0=$(wc -l < "$RESULTS/cases.txt") t0n=$(wc -l < "$RESULTS/times.txt")
	for _ in 1 2; do   # a second time only after a trap that TCG made
		echo "=== RUN $name"
		kmsg "begin $token $name"
		t0=$(date +%s)
		# times.txt: seconds into the script at which each case line came
		# (where a line's time goes; make check's budget is TCG time)
		timeout -k 10 "$TIMEOUT" "${cmd[@]}" < /dev/null 2>&1 | tee "$logf" |
			while IFS= read -r line; do
				echo "$line"
				case "$line" in
				PASS\ *|FAIL\ *|SKIP\ *)
					echo "$((EPOCHSECONDS - t0)) $base ${line%%:*}" >> "$RESULTS/times.txt";;
				esac
			done
		rc=${PIPESTATUS[0]}
		kmsg "end $token $name"
		p0=$npass f0=$nfail s0=$nskip
		while IFS= read -r line; do
			case "$line" in
			SKIP\ *)
				# only a SKIP tests/vm/skips (or the plan) declares counts
				# as one; any other is a case that silently stopped running
				cname=${line#SKIP }; cname=${cname%%:*}
				if skip_declared "$cname"; then
					echo "$line" >> "$RESULTS/cases.txt"; nskip=$((nskip + 1))
				else
					case_line "FAIL $cname: undeclared SKIP (tests/vm/skips): ${line#*: }"
				fi;;
			PASS\ *|FAIL\ *)
				echo "$line" >> "$RESULTS/cases.txt"
				case "$line" in
				PASS*) npass=$((npass + 1));; FAIL*) nfail=$((nfail + 1));;
				esac;;
			esac
		done < "$logf"
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			case_line "FAIL $name: timed out after ${TIMEOUT}s"
		elif [ "$rc" != 0 ]; then
			case_line "FAIL $name: exited with status $rc"
		fi
		tcg_trap=''
		[ $can_scan = 1 ] && scan_window "$token" "during $name" "$base" "$name: kernel splat" may-rerun
		[ -n "$tcg_trap" ] || break
		# Its first run, clean but for the trap (or for what the trap's
		# dead process failed), is set aside whole (cases, times, files)
		# and the script runs again in this boot: its second run counts,
		# and a splat of any kind there fails it (a second debug trap may
		# print nothing: the kernel's warning is a WARN_ON_ONCE).  Its
		# time goes to the console line, not to times.txt; tests/check.sh
		# leaves its FAIL lines, printed above, out of the run's list.
		tcg_rerun=$name
		echo "TCG-RERUN $name: the splat above is a trap that TCG made ($tcg_trap; harness.sh tcg_debug_trap, tcg_user_trap), not softmq's; its first run ($((npass - p0)) passed, $((nfail - f0)) failed, $((nskip - s0)) skipped, $(( $(date +%s) - t0 ))s) is set aside in ${SOFTMQ_RESULTS}.tcg-trap; running it again (once a run)"
		npass=$p0 nfail=$f0 nskip=$s0
		sed -i "$((c0 + 1)),\$d" "$RESULTS/cases.txt"
		sed -i "$((t0n + 1)),\$d" "$RESULTS/times.txt"
		rm -rf "$SOFTMQ_RESULTS.tcg-trap"
		mv "$SOFTMQ_RESULTS" "$SOFTMQ_RESULTS.tcg-trap" && mv "$logf" "$SOFTMQ_RESULTS.tcg-trap/script.log"
		mkdir -p "$SOFTMQ_RESULTS"
		token="$$.$seq.rerun.$(date +%s%N)"
	done
	# A script that ran and reported nothing tested nothing.
	if [ $((npass + nfail + nskip - p0 - f0 - s0)) = 0 ]; then
		case_line "FAIL $name: reported no cases (exit status $rc)"
	fi
	echo "--- $name: $((npass - p0)) passed, $((nfail - f0)) failed, $((nskip - s0)) skipped ($(( $(date +%s) - t0 ))s)"
	echo "$npass $nfail $nskip" > "$RESULTS/tally"
done

# (vm.sh boots with log_buf_len=8M, which holds a whole run: a start
# marker that left the buffer is a FAIL, "cannot read the kernel log")
[ $can_scan = 1 ] && scan_window "$RUNTOK" "outside every script's window" between-scripts \
	"harness-kernel-log: kernel splat between or after the scripts"
kmsg "end $RUNTOK harness"

echo "passed=$npass failed=$nfail skipped=$nskip reruns=$([ -n "$tcg_rerun" ] && echo 1 || echo 0)" > "$RESULTS/summary"
echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ]
exit
}
