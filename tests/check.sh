#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: every test softmq has, on a fresh Debian 12 machine.
#
#   tests/check.sh [LINE...]        default lines: 6.1 6.12 7.2 7.2-rt
#
# 1. installs missing Debian packages (root; otherwise prints the command)
# 2. userspace suites: make -C tests/ring check, make -C tc-plugin check (tests/tc-plugin)
#    (when their Makefiles exist)
# 3. tests/install/check.sh (make install, dkms, make deb + lintian) and
#    tests/lint/check.sh (checkpatch --strict, sparse, the arm64 and i386
#    W=1 builds) on the host against the Debian lines' headers (fetched
#    beside step 2)
# 4. per kernel line: fetch the Debian kernel (tests/testbed/kernels.sh),
#    build sch_softmq.ko + test modules with W=1 (tests/testbed/build.sh),
#    boot it under QEMU and run tests/vm/*.sh (tests/testbed/vm.sh)
# Each step's cases are counted; a line that cannot be done here (no sid
# chroot offline) is a counted SKIP with its reason.  Prints
# "<line>: N passed, N failed, N skipped" per line and the total
# "N passed, N failed, N skipped" as the very last line; exits 1 if
# anything failed.  Env: VM_TESTS (select tests/vm scripts), SOFTMQ_CACHE,
# SOFTMQ_OFFLINE=1, VM_SMP, VM_MEM.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -uo pipefail
. "$(dirname "$0")/testbed/lib.sh"
# Every tool below (plugin tests, sanitizer kernel builds) finds the same cache.
export SOFTMQ_CACHE=$CACHE

# --quick (make check-quick): one line (default 6.12); only the host
# suites whose sources the change touches (against QUICK_BASE, default
# the merge-base with origin/main, else HEAD: the uncommitted work); in
# the VM the scripts every line runs plus any tests/vm script touched.
QUICK=0
[ "${1:-}" = --quick ] && { QUICK=1; shift; }
LINES=("$@")
[ ${#LINES[@]} -gt 0 ] || LINES=(6.1 6.12 7.2 7.2-rt)
if [ $QUICK = 1 ]; then
	[ $# -gt 0 ] || LINES=(6.12)
	[ ${#LINES[@]} -eq 1 ] || die "check-quick takes one line"
	QUICK_BASE=${QUICK_BASE:-$(git -C "$REPO" merge-base HEAD origin/main 2>/dev/null || echo HEAD)}
	CHANGED=$( { git -C "$REPO" diff --name-only "$QUICK_BASE"
		git -C "$REPO" ls-files --others --exclude-standard; } | sort -u)
	echo "== check-quick on ${LINES[0]}: changed since $QUICK_BASE: $(echo "$CHANGED" | wc -w) file(s)"
fi
# touched REGEX: the change touches a path matching REGEX (always, unless quick)
touched() { [ $QUICK = 0 ] || echo "$CHANGED" | grep -qE "$1"; }
LOGDIR=$REPO/build/check
# The Debian amd64 lines (the sanitizer lines are kernels we build
# ourselves; a cross line, 6.1-686-pae or 6.12-arm64, boots another
# architecture and has its W=1 build in the lint suite already).
debian_lines=()
for line in "${LINES[@]}"; do
	case $line in *-kasan|*-kcsan) ;; *) is_cross_line "$line" || debian_lines+=("$line");; esac
done
# make check runs these on a cross line named in KERNELS (the smoke:
# load, configure, unload, traffic through the rings; no cross line is
# in its default lines, see the Makefile), make check-full every script
CROSS_SMOKE="10-lifecycle.sh 20-traffic.sh"
# make demo's line (tests/demo.sh's default) if it is checked, else the
# first Debian line; none for make check-debug
DEMO_LINE=${debian_lines[0]:-}
for line in "${debian_lines[@]}"; do [ "$line" = 6.12 ] && DEMO_LINE=6.12; done
mkdir -p "$LOGDIR"
T0=$(now)
TP=0 TF=0 TS=0
SUMMARY=()
# every FAIL line of the run, "<group>: FAIL ...", repeated after the
# summary (a CI log that shows only its tail still names what failed);
# GROUP_LOGS are the logs of the group being run, GROUP_FAILS its FAIL
# lines printed here
FAILS=() GROUP_LOGS=() GROUP_FAILS=()
say_fail() { echo "$1"; GROUP_FAILS+=("$1"); }

# count FILE: add the PASS/FAIL/SKIP lines of FILE to P F S
count() {
	P=$((P + $(grep -c '^PASS ' "$1" || true)))
	F=$((F + $(grep -c '^FAIL ' "$1" || true)))
	S=$((S + $(grep -c '^SKIP ' "$1" || true)))
}
# summary_of FILE: add the last "N passed, N failed[, N skipped]" of FILE
summary_of() {
	local l
	l=$(grep -E '^(vm [^:]*: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?' "$1" | tail -n 1)
	[ -n "$l" ] || return 1
	l=${l#vm *: }
	set -- $(echo "$l" | sed -E 's/([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/')
	P=$((P + $1)); F=$((F + $2)); S=$((S + ${3:-0}))
}
finish_group() {   # finish_group NAME SECONDS
	local l
	echo "$1: $P passed, $F failed, $S skipped (${2}s)"
	SUMMARY+=("$1: $P passed, $F failed, $S skipped (${2}s)")
	TP=$((TP + P)); TF=$((TF + F)); TS=$((TS + S))
	# (a guest script's FAIL lines before its "TCG-RERUN" line are of a
	# first run the harness set aside, tests/testbed/harness.sh)
	while IFS= read -r l; do
		FAILS+=("$1: $l")
	done < <({ [ ${#GROUP_LOGS[@]} -eq 0 ] || cat "${GROUP_LOGS[@]}" 2>/dev/null
		printf '%s\n' "${GROUP_FAILS[@]}"; } |
		awk '/^=== RUN / || /^TCG-RERUN / { if ($1 != "TCG-RERUN") for (i = 1; i <= n; i++) print f[i]; n = 0 }
			/^FAIL / { f[++n] = $0 } END { for (i = 1; i <= n; i++) print f[i] }')
	GROUP_LOGS=() GROUP_FAILS=()
}

# quick_vm_tests: the tests/vm scripts make check runs on every line
# (quick-plan does not restrict them), and any tests/vm script touched
quick_vm_tests() {
	local f b
	. "$REPO/tests/vm/plan.sh"
	for f in "$REPO"/tests/vm/[0-9]*.sh; do
		b=$(basename "$f")
		if [ -z "$(plan_lines "$b")" ] || echo "$CHANGED" | grep -qx "tests/vm/$b"; then
			printf '%s ' "$b"
		fi
	done
}

echo "== softmq check: lines ${LINES[*]} (cache: $CACHE)"
# ------------------------------------------------------------ packages
# shellcheck disable=SC2086
if ! need_pkgs $(all_host_pkgs); then
	echo "FAIL host-packages: missing Debian packages (see above)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

# ------------------------------------------------------------ tools
# tc 6.15 and the linux-source extracts (tdc, checkpatch: minutes of xz on
# a cold cache) download beside the ring suite; the private apt lists are
# refreshed first, once, so the two background jobs never race for them.
# under the fetch lock: another run's kernels.sh fetch may be refreshing
# the same lists (kernels.sh takes it around its own papt_update)
{ flock -w 3600 8 && papt_update; } 8>"$CACHE/fetch.lock" ||
	log "private apt lists unusable; the fetches below will say why"
tools_rc=$LOGDIR/tools.rc
rm -f "$tools_rc"
( "$TB_DIR/kernels.sh" tools > "$LOGDIR/tools.log" 2>&1; echo $? > "$tools_rc" ) &
tools_pid=$!
# tools_done: wait for the tools fetch and count it (once)
tools_counted=0
tools_done() {
	[ $tools_counted = 1 ] && return 0
	tools_counted=1
	local t0
	t0=$(now)
	wait $tools_pid
	P=0 F=0 S=0
	if [ "$(cat "$tools_rc" 2>/dev/null)" = 0 ]; then echo "PASS fetch-tools"; P=1
	else
		tail -n 5 "$LOGDIR/tools.log" | sed 's/^/    /'
		say_fail "FAIL fetch-tools: tc 6.15 / linux-source extracts (log: build/check/tools.log)"; F=1
	fi
	"$TB_DIR/build.sh" plugin > "$LOGDIR/plugin-build.log" 2>&1
	GROUP_LOGS+=("$LOGDIR/plugin-build.log")
	cat "$LOGDIR/plugin-build.log"; count "$LOGDIR/plugin-build.log"
	# the apt fallback's parser, on each form apt reports a failed index in
	local want got fx=$TB_DIR/apt-failures.txt
	want=$(sed -n 's/^# expect: //p' "$fx")
	got=$(papt_failed_indexes "$fx")
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		echo "PASS testbed-apt-failed-indexes: $(echo $got)"; P=$((P + 1))
	else
		say_fail "FAIL testbed-apt-failed-indexes: got '$(echo $got)', want '$(echo $want)' (${fx#"$REPO"/})"
		F=$((F + 1))
	fi
	# vm.sh's rule for a guest stuck on an int3, on the places of both
	# 6.1 hangs and of guests that were not stuck
	local k blocks bad=""
	fx=$TB_DIR/vcpu-places.txt
	blocks=$(grep -c '^# expect: ' "$fx")
	for k in $(seq "$blocks"); do
		want=$(grep '^# expect: ' "$fx" | sed -n "${k}p" | sed 's/^# expect: //')
		got=running
		awk -v k="$k" '/^# expect: / { b++ } b == k && !/^#/' "$fx" |
			vcpus_int3_loop && got=hung
		[ "$got" = "$want" ] || bad="$bad; case $k: $got, want $want"
	done
	if [ "$blocks" -ge 4 ] && [ -z "$bad" ]; then
		echo "PASS testbed-int3-loop: $blocks sets of vCPU places, the 2 hangs found"; P=$((P + 1))
	else
		say_fail "FAIL testbed-int3-loop: ${bad#; } (${fx#"$REPO"/}, $blocks cases)"
		F=$((F + 1))
	fi
	# the harness's judgement of the traps that TCG makes, on files: a
	# second here, one to two an excerpt in a TCG guest
	local tdir tlog=$LOGDIR/tcg-trap-cases.log
	tdir=$(mktemp -d)
	"$TB_DIR/tcg-trap-cases.sh" "$tdir" > "$tlog" 2>&1
	rm -rf "$tdir"
	GROUP_LOGS+=("$tlog")
	grep -E '^(PASS|FAIL|SKIP) ' "$tlog"; count "$tlog"
	if ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$tlog"; then
		tail -n 5 "$tlog" | sed 's/^/    /'
		say_fail "FAIL testbed-tcg-trap-cases: tests/testbed/tcg-trap-cases.sh printed no summary (log: ${tlog#"$REPO"/})"
		F=$((F + 1))
	fi
	finish_group setup $(( $(now) - t0 ))
}

# ------------------------------------------------------------ host suites
# host_suite NAME CMD...: run CMD with its output in build/check/NAME.log,
# count its cases (its summary line, else its PASS/FAIL/SKIP lines); a
# non-zero exit with no FAIL counted is one FAIL.
host_suite() {
	local name=$1 logf rc
	shift
	P=0 F=0 S=0; t=$(now)
	logf=$LOGDIR/$(echo "$name" | tr / -).log
	echo "== $name"
	"$@" > "$logf" 2>&1
	rc=$?
	GROUP_LOGS+=("$logf")
	grep -E '^(FAIL|SKIP) ' "$logf" | head -n 40
	if ! summary_of "$logf"; then
		count "$logf"
		[ $((P + F + S)) -gt 0 ] || tail -n 10 "$logf" | sed 's/^/    /'
	fi
	if [ $rc -ne 0 ] && [ $F -eq 0 ]; then
		tail -n 10 "$logf" | sed 's/^/    /'
		say_fail "FAIL $name: exited with status $rc (log: ${logf#"$REPO"/})"
		F=$((F + 1))
	fi
	finish_group "$name" $(( $(now) - t ))
}

# The Debian kernels (and the sid chroot) download while the host suites
# run: on a cold machine that is minutes of network and disk the CPU-bound
# suites need not wait for.  The install suite below needs their headers;
# the per-line step finds them cached and reports fetch errors.
prefetched=$LOGDIR/prefetched
: > "$prefetched"
tp=$(now)
(
	for line in "${debian_lines[@]}"; do
		"$TB_DIR/kernels.sh" fetch "$line" > "$LOGDIR/$line-prefetch.log" 2>&1 &&
			echo "$line" >> "$prefetched"
	done
	echo "(kernels fetched in $(( $(now) - tp ))s, beside the host suites: logs build/check/*-prefetch.log)"
) &
prefetch_pid=$!

touched '^(include/softmq_ring\.h|tests/ring/)' &&
	host_suite tests/ring make -C "$REPO/tests/ring" check
tools_done
TC615=$("$TB_DIR/kernels.sh" path tc615)
if [ -x "$TC615" ]; then export TC_NEW=$TC615; fi
touched '^(tc-plugin/|tests/tc-plugin/|include/uapi/)' &&
	host_suite tc-plugin make -C "$REPO/tc-plugin" check

# ------------------------------------------------------------ install (host)
# make install/dkms/make deb against the Debian lines' headers (no module
# loading: the VM scripts 80-install-* do that, with the packages this
# leaves in build/deb/), on the lines whose kernel the prefetch got.
t=$(now)
wait $prefetch_pid
[ $(( $(now) - t )) -gt 0 ] && echo "(waited $(( $(now) - t ))s for the kernel downloads)"
inst=()
mapfile -t inst < "$prefetched"
if [ ${#inst[@]} -gt 0 ]; then
	touched '^(Makefile|Kbuild|dkms\.conf|VERSION|debian/|tc-plugin/Makefile|tests/install/)' &&
		host_suite install "$REPO/tests/install/check.sh" "${inst[@]}"
	# checkpatch --strict and sparse against the same headers
	touched '^(Kbuild|src/|include/|tests/modules/|tests/lint/|tests/ring/(codel\.c|kshim))' &&
		host_suite lint "$REPO/tests/lint/check.sh" "${inst[@]}"
elif [ ${#debian_lines[@]} -gt 0 ]; then
	P=0 F=1 S=0
	say_fail "FAIL install-lint: no kernel line's headers could be fetched (build/check/*-prefetch.log), so neither the install nor the lint suite ran"
	finish_group install 0
fi

# line_extras LINE WHY: the suites that run after LINE's own (make demo,
# and make check-full's harness guards, 32-bit mutant and sharing
# self-test).  With WHY (the line was skipped, or broke before its VM
# run) each one that would have run is a counted SKIP that says so,
# never left out in silence.  P, F and S still hold the line's counts.
extra_suite() {   # extra_suite NAME CMD...: run it, or SKIP it with $EXTRAS_WHY
	if [ -n "$EXTRAS_WHY" ]; then
		P=0 F=0 S=1
		echo "SKIP $1: not run, $EXTRAS_WHY"
		finish_group "$1" 0
	else
		host_suite "$@"
	fi
}
line_extras() {
	local line=$1 line_f=$F
	EXTRAS_WHY=$2
	# make demo, on the line it runs on (once that line has built and
	# passed its build): the README's first command, end to end.
	if [ "$line" = "$DEMO_LINE" ] && touched '^(tests/demo\.sh|tests/testbed/|tests/vm/lib\.sh|src/|include/)'; then
		extra_suite demo "$REPO/tests/demo.sh" --no-prepare "$line"
	fi
	# the test bed's own guards (a run that did not run must fail):
	# they test the harness, not the qdisc, so make check leaves their
	# 70-odd seconds to check-full, and check-quick runs them when the
	# harness changes
	if [ "$line" = "$DEMO_LINE" ] && touched '^(tests/check\.sh|tests/testbed/|tests/vm/(plan\.sh|skips|quick-plan))'; then
		if [ $QUICK = 1 ] || [ "${SOFTMQ_FULL:-0}" = 1 ]; then
			extra_suite testbed-selftest "$TB_DIR/selftest.sh" "$line"
		else
			P=0 F=0 S=1
			echo "SKIP testbed-selftest: make check-full runs the test bed's own guards (make check-quick when tests/testbed changes)"
			finish_group testbed-selftest 0
		fi
	fi
	# make check-full: the 32-bit line must fail with the 32-bit sign bug
	# of the admission bound put back (a copy of the tree, one boot)
	if [ "$line" = 6.1-686-pae ] && [ "${SOFTMQ_FULL:-0}" = 1 ]; then
		if [ "$line_f" = 0 ]; then
			extra_suite bound32-mutant "$TB_DIR/bound32-mutant.sh" "$line"
		else
			P=0 F=0 S=1
			echo "SKIP bound32-mutant: the line failed without the mutant, so its failing with it would prove nothing"
			finish_group bound32-mutant 0
		fi
	fi
	# make check-full: the sharing instrument's planted-counter self-test
	# (bench/README.md; 4 vCPUs under its QEMU plugin, minutes: not in
	# make check's 45)
	if [ "$line" = "$DEMO_LINE" ] && [ "${SOFTMQ_FULL:-0}" = 1 ]; then
		extra_suite sharing-selftest env MODE=sharing SELFTEST=1 KERNELS="$line" \
			BENCH_OUT="$LOGDIR/sharing-selftest" "$REPO/bench/bench.sh"
	fi
}

# ------------------------------------------------------------ kernel lines
for line in "${LINES[@]}"; do
	P=0 F=0 S=0; t=$(now)
	echo "== kernel line $line"
	logf=$LOGDIR/$line-fetch.log
	"$TB_DIR/kernels.sh" fetch "$line" > "$logf" 2>&1
	rc=$?
	grep -v '^Get:' "$logf" | tail -n 5
	if [ $rc -eq 2 ] && [ "${SOFTMQ_OFFLINE:-0}" = 1 ]; then
		# declared offline: a line that needs the network is a counted SKIP
		why=$(grep -v '^\[testbed\]' "$logf" | tail -n 1)
		echo "SKIP line-$line: SOFTMQ_OFFLINE=1 and ${why:-it cannot be done offline}"
		S=1; finish_group "$line" $(( $(now) - t ))
		line_extras "$line" "line $line was skipped (SOFTMQ_OFFLINE=1)"; continue
	elif [ $rc -eq 2 ] && grep -qF "$PAPT_LEFT_OUT_WHY" "$logf"; then
		# the mirror served a foreign architecture's index that does not
		# match its Release file (tests/testbed/lib.sh papt_update)
		echo "SKIP line-$line: $(tail -n 1 "$logf")"
		S=1; finish_group "$line" $(( $(now) - t ))
		line_extras "$line" "line $line was skipped (the mirror's index)"; continue
	elif [ $rc -ne 0 ]; then
		say_fail "FAIL fetch-$line: could not fetch the kernel (log: ${logf#"$REPO"/})"
		F=1; finish_group "$line" $(( $(now) - t ))
		line_extras "$line" "line $line's kernel could not be fetched"; continue
	fi
	tf=$(( $(now) - t ))
	logf=$LOGDIR/$line-build.log
	"$TB_DIR/build.sh" "$line" > "$logf" 2>&1
	rc=$?
	GROUP_LOGS+=("$logf")
	cat "$logf"; f0=$F; count "$logf"
	tb=$(( $(now) - t - tf ))
	if [ $rc -ne 0 ]; then
		# A failed build never boots: the VM would load what an earlier
		# run left, or nothing.
		[ $F -gt "$f0" ] || { tail -n 5 "$logf" | sed 's/^/    /'
			say_fail "FAIL build-$line: build.sh exited with status $rc (log: ${logf#"$REPO"/})"; }
		say_fail "FAIL vm-$line: not booted, the build failed"
		F=$((F + (F > f0 ? 1 : 2)))
		finish_group "$line" $(( $(now) - t ))
		line_extras "$line" "line $line did not build"; continue
	fi
	logf=$LOGDIR/$line-vm.log
	line_tests=${VM_TESTS:-}
	if [ $QUICK = 1 ]; then
		line_tests=$(quick_vm_tests)
		echo "(check-quick: VM scripts $line_tests)"
	elif is_cross_line "$line" && [ "${SOFTMQ_FULL:-0}" != 1 ] && [ -z "${VM_TESTS:-}" ]; then
		line_tests=$CROSS_SMOKE
		for f in "$REPO"/tests/vm/[0-9]*.sh; do
			b=$(basename "$f")
			case " $CROSS_SMOKE " in *" $b "*) continue;; esac
			echo "SKIP vm-$line-${b%.sh}: make check runs ${CROSS_SMOKE// /, } on a cross line, make check-full every script"
			S=$((S + 1))
		done
	fi
	VM_TESTS=$line_tests "$TB_DIR/vm.sh" --kernel "$line" --no-prepare ${VM_SMP:+--smp $VM_SMP} \
		${VM_MEM:+--mem $VM_MEM} 2>&1 | tee "$logf"
	# vm.sh's own status, not tee's: the log's last summary line can be
	# the guest harness's (the console is echoed), which a vm.sh that
	# failed after it never corrected.  vm.sh exits non-zero only when it
	# counted a FAIL (declared SKIPs exit 0) or broke.
	rc=${PIPESTATUS[0]}
	GROUP_LOGS+=("$logf")
	f0=$F
	if ! summary_of "$logf"; then
		say_fail "FAIL vm-$line: the VM run printed no summary (log: ${logf#"$REPO"/})"
		F=$((F + 1))
	elif [ $rc -ne 0 ] && [ $F -eq "$f0" ]; then
		tail -n 5 "$logf" | sed 's/^/    /'
		say_fail "FAIL vm-$line: vm.sh exited with status $rc but its log counts no failure (log: ${logf#"$REPO"/})"
		F=$((F + 1))
	fi
	lw=$(sed -n 's/.*got the VM lock after \([0-9]*\)s.*/\1/p' "$logf" | tail -n 1)
	echo "($line: fetch ${tf}s, build ${tb}s, vm $(( $(now) - t - tf - tb ))s${lw:+, of which ${lw}s waiting for the VM lock})"
	finish_group "$line" $(( $(now) - t ))
	line_extras "$line" ""
done

echo "== summary ($(( $(now) - T0 ))s)"
printf '%s\n' "${SUMMARY[@]}"
[ ${#FAILS[@]} -eq 0 ] || { echo "== failed"; printf '%s\n' "${FAILS[@]}"; }
echo "$TP passed, $TF failed, $TS skipped"
[ $TF -eq 0 ]
exit
}
