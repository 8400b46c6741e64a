#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Self-test of the test bed: proves the harness can fail.
#
# Runs a nested harness over small inner scripts: one clean, one that loads
# the test-only module warnme (its init WARNs), one that exits non-zero, one
# that prints no case at all, one that prints an undeclared SKIP, one that
# hangs past its timeout.  The outer cases PASS only when the nested
# run judged those inner ones FAIL (with the splat printed) — so the normal
# suite stays green while the failure paths are exercised on every line.
# Then short nested runs: a WARN between two scripts (in neither's
# window) fails the run, and a kernel log that cannot be read (dmesg
# failing from the start, or from the middle of a run) is a FAIL, not a
# clean scan; and a debug trap or a user process's #GP that TCG made
# reruns its script, once a run.  (A guest that crashes mid-script cannot
# be tested from inside it: tests/testbed/selftest.sh boots one that does.)
{ # parsed whole before it runs: editing this file cannot break a running copy
H=$SOFTMQ_REPO/tests/testbed/harness.sh
WARNME=$SOFTMQ_TEST_MODULES/warnme/warnme.ko
dir=$(mktemp -d /tmp/softmq-selftest.XXXXXX)
trap 'rm -rf "$dir"' EXIT

check() {   # check NAME WHY CONDITION...
	local name=$1 why=$2; shift 2
	if "$@"; then echo "PASS $name"; else echo "FAIL $name: $why"; fi
}

# 1. The splat scanner alone, on canned kernel log text.
scan_rc() { "$H" --scan > /dev/null; echo $?; }
rc=$(printf '%s\n' '[ 1.0] ok' '[ 2.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2' \
	'[ 2.1] ---[ end trace 0000000000000000 ]---' | scan_rc)
check selftest-scan-warning "scanner missed a WARNING splat (rc=$rc)" test "$rc" = 1
rc=$(echo '[ 9.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:' | scan_rc)
check selftest-scan-stall "scanner missed an RCU stall (rc=$rc)" test "$rc" = 1
rc=$(echo '[ 3.0] unregister_netdevice: waiting for smq0 to become free. Usage count = 2' | scan_rc)
check selftest-scan-netdev-leak "scanner missed a device unregister_netdevice waits for (rc=$rc)" test "$rc" = 1
# a splat that starts right after the 60 lines printed of one with no end
out=$({ echo '[ 1.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2'
	for i in $(seq 60); do echo "[ 1.1]  f$i+0x1/0x2"; done
	echo '[ 2.0] BUG: the second splat'; } | "$H" --scan)
check selftest-scan-after-cut "scanner missed a splat right after a cut one" grep -q 'BUG: the second splat' <<<"$out"
rc=$(printf '%s\n' '[ 1.0] sch_softmq: loading out-of-tree module taints kernel.' \
	'[ 1.1] softmq-harness: begin 1.1.1 x.sh' | scan_rc)
check selftest-scan-clean "scanner flagged a clean log (rc=$rc)" test "$rc" = 0

# show_nested WHAT: print a nested run's output ($out, status $rc) under
# WHAT; its last line goes to $last
show_nested() {
	echo "nested harness output, $1 (rc=$rc):"
	printf '%s\n' "$out" | sed 's/^/  | /'
	last=$(printf '%s\n' "$out" | tail -n 1)
}

# 2. A nested harness run.
if [ ! -e "$WARNME" ]; then
	echo "FAIL selftest-warnme-built: $WARNME missing (tests/testbed/build.sh $SOFTMQ_LINE)"
	exit 0
fi
cat > "$dir/inner-ok.sh" <<'EOF'
echo "PASS inner-ok"
EOF
cat > "$dir/inner-warn.sh" <<EOF
insmod "$WARNME" || { echo "FAIL inner-warn-insmod: insmod failed"; exit 0; }
rmmod warnme
echo "PASS inner-warn-loaded"
EOF
cat > "$dir/inner-exit.sh" <<'EOF'
echo "PASS inner-exit-before-exit"
exit 3
EOF
cat > "$dir/inner-silent.sh" <<'EOF'
exit 0
EOF
cat > "$dir/inner-skip.sh" <<'EOF'
echo "SKIP selftest-probe-undeclared: a reason tests/vm/skips does not list"
EOF
cat > "$dir/inner-hang.sh" <<'EOF'
echo "SKIP inner-hang: about to hang"
sleep 600
EOF

# The inner timeout must outlast insmod + WARN of inner-warn.sh (over 3 s
# on the sanitizer kernels under TCG) and still end inner-hang.sh's sleep.
case "${SOFTMQ_LINE:-}" in *-kasan|*-kcsan) inner_to=20;; *) inner_to=3;; esac
out=$("$H" --results "$dir/res" --timeout $inner_to "$dir/inner-ok.sh" "$dir/inner-warn.sh" \
	"$dir/inner-exit.sh" "$dir/inner-silent.sh" "$dir/inner-skip.sh" "$dir/inner-hang.sh" 2>&1)
rc=$?
echo "nested harness output (rc=$rc):"
printf '%s\n' "$out" | sed 's/^/  | /'

last=$(printf '%s\n' "$out" | tail -n 1)
check selftest-nested-exit-status "nested run exited $rc, want non-zero" test "$rc" -ne 0
check selftest-nested-summary "nested summary is '$last', want '3 passed, 5 failed, 1 skipped'" \
	test "$last" = "3 passed, 5 failed, 1 skipped"
check selftest-clean-script-passes "the clean inner script did not pass" \
	bash -c '! grep -q "^FAIL inner-ok" <<<"$1" && grep -q "^PASS inner-ok$" <<<"$1"' _ "$out"
check selftest-warn-splat-fails "a WARN in the kernel log did not fail its script" \
	grep -q '^FAIL inner-warn.sh: kernel splat: WARNING:' <<<"$out"
check selftest-warn-splat-printed "the splat was not printed" \
	grep -q 'softmq-warnme: deliberate warning' <<<"$out"
check selftest-exit-status-fails "a non-zero exit was not counted as a failure" \
	grep -q '^FAIL inner-exit.sh: exited with status 3$' <<<"$out"
check selftest-silent-script-fails "a script that reported no case was not failed" \
	grep -q '^FAIL inner-silent.sh: reported no cases (exit status 0)$' <<<"$out"
check selftest-undeclared-skip-fails "a SKIP tests/vm/skips does not declare was not failed" \
	grep -q '^FAIL selftest-probe-undeclared: undeclared SKIP' <<<"$out"
check selftest-timeout-fails "a hung script was not failed by its timeout" \
	grep -q "^FAIL inner-hang.sh: timed out after ${inner_to}s\$" <<<"$out"
check selftest-splat-attributed "the splat was blamed on the wrong script" \
	bash -c '! grep -qE "^FAIL inner-(ok|exit|silent|skip|hang).sh: kernel splat" <<<"$1"' _ "$out"

# 3 and 4 exercise the harness alone, the same on every kernel: make check
# runs them on the lines quick-plan names for 00-selftest.sh:harness.
. "$SOFTMQ_REPO/tests/vm/plan.sh"
if [ "${SOFTMQ_FULL:-0}" = 1 ] || plan_runs 00-selftest.sh:harness; then
# 3. A WARN between two scripts, in neither's window: the line's log
# filter (the harness's own hook, here cat with a side effect) loads
# warnme while the harness scans the first script's window, after that
# script's end marker and before the second's begin; only the scan of
# the run outside the windows can see it.
cat > "$dir/inner-before.sh" <<'INNER'
echo "PASS inner-before"
INNER
cat > "$dir/inner-after.sh" <<'INNER'
echo "PASS inner-after"
INNER
cat > "$dir/warn-filter.sh" <<INNER
#!/bin/bash
log=\$(cat)
if [ ! -e "$dir/warned" ]; then
	touch "$dir/warned"
	{ insmod "$WARNME" && rmmod warnme; } || echo "warn-filter: insmod warnme failed" >&2
fi
printf '%s\n' "\$log"
INNER
chmod +x "$dir/warn-filter.sh"
out=$(SOFTMQ_KMSG_FILTER="$dir/warn-filter.sh" "$H" --results "$dir/res-between" --timeout 60 \
	"$dir/inner-before.sh" "$dir/inner-after.sh" 2>&1)
rc=$?
show_nested "a WARN between the scripts"
check selftest-between-splat-fails "a WARN between two scripts did not fail the run" \
	grep -q '^FAIL harness-kernel-log: kernel splat between or after the scripts: WARNING:' <<<"$out"
check selftest-between-splat-printed "the WARN between the scripts was not printed" \
	grep -q 'softmq-warnme: deliberate warning' <<<"$out"
check selftest-between-splat-attributed "the WARN between the scripts was blamed on a script" \
	bash -c '! grep -qE "^FAIL inner-(before|after)\.sh" <<<"$1"' _ "$out"
check selftest-between-summary "nested run ended '$last' (rc=$rc), want '2 passed, 1 failed, 0 skipped' (rc=1)" \
	test "$last/$rc" = "2 passed, 1 failed, 0 skipped/1"

# 4. A kernel log that cannot be read is a FAIL: a dmesg ahead in PATH
# that fails, as dmesg does without the right to read the log, once
# $dir/no-dmesg exists (from the middle of a run, then from its start).
mkdir -p "$dir/bin"
cat > "$dir/bin/dmesg" <<INNER
#!/bin/sh
if [ -e "$dir/no-dmesg" ]; then
	echo "dmesg: read kernel buffer failed: Operation not permitted" >&2
	exit 1
fi
exec $(command -v dmesg) "\$@"
INNER
chmod +x "$dir/bin/dmesg"
cat > "$dir/inner-nodmesg.sh" <<INNER
touch "$dir/no-dmesg"
echo "PASS inner-nodmesg"
INNER
out=$(PATH="$dir/bin:$PATH" "$H" --results "$dir/res-nodmesg1" --timeout 60 "$dir/inner-nodmesg.sh" 2>&1)
rc=$?
show_nested "dmesg failing from the first script on"
check selftest-nodmesg-script-fails "a script's kernel log that could not be read was not failed" \
	grep -q '^FAIL inner-nodmesg.sh: cannot read the kernel log during inner-nodmesg.sh: dmesg failed: .*Operation not permitted' <<<"$out"
check selftest-nodmesg-run-fails "the run's kernel log that could not be read was not failed" \
	grep -q "^FAIL harness-kernel-log: cannot read the kernel log outside every script's window: dmesg failed" <<<"$out"
check selftest-nodmesg-summary "nested run ended '$last' (rc=$rc), want '1 passed, 2 failed, 0 skipped' (rc=1)" \
	test "$last/$rc" = "1 passed, 2 failed, 0 skipped/1"
out=$(PATH="$dir/bin:$PATH" "$H" --results "$dir/res-nodmesg2" --timeout 60 "$dir/inner-before.sh" 2>&1)
rc=$?
show_nested "dmesg failing from the start"
check selftest-nodmesg-start-fails "a kernel log unreadable from the start was not failed" \
	grep -q '^FAIL harness-kernel-log: cannot read the kernel log, no splat scan: dmesg failed: .*Operation not permitted' <<<"$out"
check selftest-nodmesg-start-summary "nested run ended '$last' (rc=$rc), want '1 passed, 1 failed, 0 skipped' (rc=1)" \
	test "$last/$rc" = "1 passed, 1 failed, 0 skipped/1"

# 5. A debug trap that TCG made (tests/testbed/seen/2026-12-07-6.12-debug-
# trap-20-traffic.txt) sets the script's first run aside, once a run; a
# second one in the run fails as any splat does.  Which traps are taken
# for TCG's is judged on the host (tests/testbed/tcg-trap-cases.sh, in
# tests/check.sh's setup group); its fixtures are the traps written to
# the kernel log here.
"$SOFTMQ_REPO/tests/testbed/tcg-trap-cases.sh" --fixtures "$dir"
# trap_script FILE FIRST [LATER]: a script that writes the trap into the
# kernel log and prints FIRST; with LATER, only on its first run, and
# LATER alone on the next
trap_script() {
	cat > "$1" <<INNER
if [ ! -e "$1.ran" ] || [ -z "${3:-}" ]; then
	touch "$1.ran"
	while IFS= read -r l; do echo "\$l" > /dev/kmsg; done < "$dir/trap.kmsg"
	echo "$2"
else
	echo "${3:-}"
fi
INNER
}
trap_script "$dir/inner-trap-failed.sh" "FAIL inner-trap-failed: a failure of its own beside the trap" \
	"PASS inner-trap-failed-second-run"
trap_script "$dir/inner-trap-once.sh" "PASS inner-trap-first-run" "PASS inner-trap-second-run"
trap_script "$dir/inner-trap-twice.sh" "PASS inner-trap-twice"
out=$("$H" --results "$dir/res-trap" --timeout 60 "$dir/inner-trap-failed.sh" "$dir/inner-trap-once.sh" \
	"$dir/inner-trap-twice.sh" 2>&1)
rc=$?
show_nested "debug traps that TCG made"
check selftest-tcg-trap-rerun "the first debug trap did not rerun its script" \
	grep -q '^TCG-RERUN inner-trap-once.sh: .*kmem_cache_alloc_node_noprof+0x74/0x330, EFLAGS 65d0ab02' <<<"$out"
check selftest-tcg-trap-set-aside "the first run's cases were counted" \
	bash -c '! grep -q inner-trap-first-run "$1" && grep -q "^PASS inner-trap-second-run" "$1"' _ "$dir/res-trap/cases.txt"
check selftest-tcg-trap-own-failure "a trap beside a failure of the script's own set the failure aside" \
	bash -c 'grep -q "^FAIL inner-trap-failed:" "$1" && grep -q "^FAIL inner-trap-failed.sh: kernel splat: WARNING: .*exc_debug_kernel" "$1" &&
		! grep -q inner-trap-failed-second-run "$1"' _ "$dir/res-trap/cases.txt"
check selftest-tcg-trap-once "a second debug trap in the run did not fail its script" \
	grep -q '^FAIL inner-trap-twice.sh: kernel splat: WARNING: .*exc_debug_kernel' <<<"$out"
check selftest-tcg-trap-summary "nested run ended '$last' (rc=$rc), want '2 passed, 3 failed, 0 skipped' (rc=1)" \
	test "$last/$rc" = "2 passed, 3 failed, 0 skipped/1"

# A user process's #GP that TCG made (tests/testbed/seen/2026-12-07-6.12-
# user-gpf-40-default-qdisc.txt), at an instruction that raises none in
# the fixtures' file of its own (found through PATH: a directory of its
# own, as section 4's failing dmesg is in $dir/bin), sets its script's
# first run aside, what that run failed with it.
if [ "$(uname -m)" != x86_64 ]; then
	echo "SKIP selftest-tcg-user-trap: the #GP that TCG made is known on x86-64 guests only (uname -m: $(uname -m))"
else
cat > "$dir/inner-user-trap.sh" <<INNER
if [ ! -e "$dir/inner-user-trap.ran" ]; then
	touch "$dir/inner-user-trap.ran"
	cat "$dir/ut.kmsg" > /dev/kmsg
	echo "FAIL inner-user-trap: its sender died"
else
	echo "PASS inner-user-trap-second-run"
fi
INNER
out=$(PATH=$dir/gp-bin:$PATH "$H" --results "$dir/res-user-trap" --timeout 60 "$dir/inner-user-trap.sh" 2>&1)
rc=$?
show_nested "a user process's #GP that TCG made"
check selftest-tcg-user-trap-rerun "the #GP did not rerun its script" \
	grep -q "^TCG-RERUN inner-user-trap.sh: .*gpbin+0x40: sub \$0x1,%rdx, a #GP that killed python3\[3072\]; .*(0 passed, 1 failed, 0 skipped" <<<"$out"
check selftest-tcg-user-trap-set-aside "the first run's failure was counted, or the second run's pass was not" \
	bash -c '! grep -q "^FAIL" "$1" && grep -q "^PASS inner-user-trap-second-run" "$1"' _ "$dir/res-user-trap/cases.txt"
check selftest-tcg-user-trap-summary "nested run ended '$last' (rc=$rc), want '1 passed, 0 failed, 0 skipped' (rc=0)" \
	test "$last/$rc" = "1 passed, 0 failed, 0 skipped/0"
fi
else
	echo "SKIP 00-selftest-harness: make check runs this part on $(plan_lines 00-selftest.sh:harness) only (TCG time budget); make check-full on every line"
fi

# 5. On a sanitizer line, the sanitizer's own report: proves it is on,
# instruments out-of-tree modules (softmq is built the same way) and that
# its report reaches the scanner through the line's log filter.
case "${SOFTMQ_LINE:-}" in
*-kasan) smode=1 want="BUG: KASAN: slab-out-of-bounds in warnme_";;
*-kcsan) smode=2 want="BUG: KCSAN: data-race in warnme_";;
*) smode="";;
esac
if [ -z "$smode" ]; then
	echo "SKIP selftest-sanitizer-report: ${SOFTMQ_LINE:-this line} has no KASAN or KCSAN (the 6.12-kasan and 6.12-kcsan lines run it, twice)"
else
	cat > "$dir/inner-sanitizer.sh" <<EOF
insmod "$WARNME" mode=$smode || { echo "FAIL inner-sanitizer-insmod: insmod failed"; exit 0; }
rmmod warnme
echo "PASS inner-sanitizer-loaded"
EOF
	# Twice: a sanitizer that goes quiet after its first report (KASAN
	# without kasan_multi_shot) would hide every bug after this one.
	for i in 1 2; do
		out=$("$H" --results "$dir/res-san$i" --timeout 60 "$dir/inner-sanitizer.sh" 2>&1)
		rc=$?
		echo "nested harness output, sanitizer, load $i (rc=$rc):"
		printf '%s\n' "$out" | sed 's/^/  | /'
		check selftest-sanitizer-report-$i "no '$want' report failed the inner script (load $i)" \
			grep -q "^FAIL inner-sanitizer.sh: kernel splat: .*$want" <<<"$out"
	done
fi
exit 0
exit
}
