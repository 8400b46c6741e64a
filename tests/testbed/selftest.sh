#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The test bed's guards against a run that did not run, from the host (the
# guest side is tests/vm/00-selftest.sh):
#
#   tests/testbed/selftest.sh LINE     (the line fetched and built)
#
#  1. one boot of sabotage scripts: one that prints nothing, one that
#     prints a SKIP tests/vm/skips does not declare, one that kills the
#     harness mid-run, and one after it that therefore never runs: vm.sh
#     must exit non-zero with a FAIL naming each;
#  2. one boot whose guest panics in the middle of a script (sysrq c; the
#     guest boots with oops=panic panic=-1): vm.sh must exit non-zero and
#     count a FAIL naming that script, the later one never run;
#     then one whose guest hangs (warnme mode=3: a CPU spinning with
#     preemption off): vm.sh must call it hung from the soft lockup,
#     name where the vCPUs are, and end it in minutes, not at --timeout;
#  3. a build that fails: make check-quick on a copy of the tree whose
#     source does not compile must exit non-zero, say which build failed
#     (and name it again after the summary), and boot nothing; then, in
#     the same copy with build.sh and vm.sh replaced by stubs, a vm.sh
#     that fails after the guest's summary ("1 passed, 0 failed") must
#     still fail make check-quick, and one that printed only declared
#     SKIPs and exited 0 must not;
#  4. the VM suites' helpers that once could not fail, each fed the broken
#     input it must refuse (no VM needed): share_check an analysis that
#     crashed, wait_drain a qdisc dump that printed nothing, pg_w a
#     pktgen command that was refused, inst_clean_start an install that
#     is already there; and vm.sh's excuse for a TCG crash (tcg_trap_re)
#     the i386 oops with an impossible EFLAGS, then the same oops with a
#     valid one, which it must not excuse.
# Prints PASS/FAIL lines and "N passed, N failed"; exits 1 on a failure.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -uo pipefail
. "$(dirname "$0")/lib.sh"
LINE=${1:?usage: selftest.sh LINE}
. "$(dirname "$0")/../cases.sh"
# expect NAME WHAT FILE REGEX: FILE has a line matching REGEX
expect() {
	if grep -qE "$4" "$3"; then pass "$1"; else fail "$1" "$2 (log: ${3#"$REPO"/})"; fi
}
W=$REPO/build/selftest
rm -rf "$W"; mkdir -p "$W/vm"

# ---------------------------------------------------------------- 1. vm.sh
cat > "$W/vm/1-silent.sh" <<'EOF'
exit 0
EOF
cat > "$W/vm/2-skip.sh" <<'EOF'
echo "PASS sabotage-before-skip"
echo "SKIP sabotage-undeclared: no reason anyone agreed to"
EOF
cat > "$W/vm/3-kill.sh" <<'EOF'
echo "PASS sabotage-before-kill"
# the harness is our parent's parent (timeout runs us)
kill -9 "$(ps -o ppid= -p "$PPID" | tr -d ' ')"
sleep 5
EOF
cat > "$W/vm/4-after.sh" <<'EOF'
echo "PASS sabotage-after-kill"
EOF
log=$W/vm.log
"$TB_DIR/vm.sh" --kernel "$LINE" --no-prepare --no-retry --results "$W/results" \
	"$W/vm/1-silent.sh" "$W/vm/2-skip.sh" "$W/vm/3-kill.sh" "$W/vm/4-after.sh" > "$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then pass selftest-vm-exit-status
else fail selftest-vm-exit-status "vm.sh exited 0 on a sabotaged run (log: ${log#"$REPO"/})"; fi
expect selftest-vm-silent-script "a script that printed nothing was not failed" "$log" \
	'^FAIL 1-silent.sh: reported no cases'
expect selftest-vm-undeclared-skip "an undeclared SKIP was not failed" "$log" \
	'^FAIL sabotage-undeclared: undeclared SKIP'
expect selftest-vm-harness-killed "a harness killed mid-run was not failed" "$log" \
	"^FAIL vm-$LINE-harness: the harness ended .*without writing its summary"
expect selftest-vm-not-run "the script after the kill was not named as never run" "$log" \
	"^FAIL vm-$LINE-scripts: 1 selected script\\(s\\) never ran: 4-after.sh"
if grep -q '^PASS sabotage-after-kill' "$log"; then
	fail selftest-vm-kill-worked "the script after the kill ran: the sabotage did not sabotage"
else
	pass selftest-vm-kill-worked
fi

# ---------------------------------------------------------------- 2. crash
# A kernel panic in the middle of a script ends the boot with no summary:
# never a pass (and not a TCG int3, so no rerun either).
cat > "$W/vm/c1-before.sh" <<'EOF'
echo "PASS sabotage-before-crash"
EOF
cat > "$W/vm/c2-crash.sh" <<'EOF'
echo "PASS sabotage-crash-armed"
sync
echo c > /proc/sysrq-trigger
sleep 30
echo "PASS sabotage-crash-survived"
EOF
cat > "$W/vm/c3-after.sh" <<'EOF'
echo "PASS sabotage-after-crash"
EOF
log=$W/vm-crash.log
"$TB_DIR/vm.sh" --kernel "$LINE" --no-prepare --results "$W/results-crash" \
	"$W/vm/c1-before.sh" "$W/vm/c2-crash.sh" "$W/vm/c3-after.sh" > "$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then pass selftest-crash-exit-status
else fail selftest-crash-exit-status "vm.sh exited 0 on a run whose guest panicked (log: ${log#"$REPO"/})"; fi
expect selftest-crash-named "a guest that panicked during a script did not fail that script" "$log" \
	'^FAIL c2-crash.sh: guest crashed during c2-crash.sh; 1 later script\(s\) not run'
expect selftest-crash-counted "the run with a panic did not count a failure" "$log" \
	"^vm $LINE: [0-9]+ passed, [1-9][0-9]* failed"
if grep -q 'Kernel panic' "$log" && ! grep -qE '^PASS sabotage-(crash-survived|after-crash)' "$log"; then
	pass selftest-crash-worked
else
	fail selftest-crash-worked "no kernel panic, or a script ran after it: the sabotage did not sabotage (log: ${log#"$REPO"/})"
fi

# ---------------------------------------------------------------- 2b. hang
# A kernel that stops making progress (a CPU spinning with preemption off
# while the script waits on it) cannot end its own run: vm.sh must see
# the soft lockup, say where the vCPUs are and fail the script long
# before --timeout.
cat > "$W/vm/h1-hang.sh" <<EOF
echo "PASS sabotage-hang-armed"
insmod $REPO/build/$LINE/modules/warnme/warnme.ko mode=3 seconds=900
echo "PASS sabotage-hang-survived"
EOF
log=$W/vm-hang.log
t0=$(now)
SOFTMQ_LOCKUP_S=30 "$TB_DIR/vm.sh" --kernel "$LINE" --no-prepare --no-retry \
	--results "$W/results-hang" --timeout 600 "$W/vm/h1-hang.sh" > "$log" 2>&1
rc=$?
t=$(( $(now) - t0 ))
if [ $rc -ne 0 ]; then pass selftest-hang-exit-status
else fail selftest-hang-exit-status "vm.sh exited 0 on a run whose guest hung (log: ${log#"$REPO"/})"; fi
expect selftest-hang-named "a guest that hung during a script did not fail that script as hung" "$log" \
	'^FAIL h1-hang.sh: guest hung \(soft lockup'
expect selftest-hang-where "vm.sh did not say where the hung vCPUs were" "$W/results-hang/hang.txt" \
	'^  CPU#[0-9]+: '
if [ $t -lt 300 ] && ! grep -q '^PASS sabotage-hang-survived' "$log"; then
	pass selftest-hang-quick "ended ${t}s after the boot began"
else
	fail selftest-hang-quick "the hung run took ${t}s, or the script went on (log: ${log#"$REPO"/})"
fi

# ---------------------------------------------------------------- 3. build
# Outside the checkout (git must not find this repository above the copy:
# with no git, check-quick's "touched" finds nothing and runs no host suite).
tmp=$(mktemp -d /tmp/softmq-selftest.XXXXXX)
tree=$tmp/tree
mkdir -p "$tree"
git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 tar -c) | tar -x -C "$tree"
echo '#error "sabotage: this tree must not build"' >> "$tree/src/sch_softmq.c"
log=$W/check-quick.log
GIT_CEILING_DIRECTORIES=$tmp SOFTMQ_CACHE=$CACHE "$tree/tests/check.sh" --quick "$LINE" > "$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then pass selftest-build-exit-status
else fail selftest-build-exit-status "check-quick exited 0 on a tree that cannot build (log: ${log#"$REPO"/})"; fi
expect selftest-build-named "the failed build was not named" "$log" "^FAIL build-$LINE-softmq: make failed"
expect selftest-build-listed "the failed build was not listed after the summary" "$log" \
	"^$LINE: FAIL build-$LINE-softmq: make failed"
expect selftest-build-no-boot "the VM was not refused after the failed build" "$log" \
	"^FAIL vm-$LINE: not booted, the build failed"
if grep -q 'guest ready' "$log"; then
	fail selftest-build-booted "a VM booted after the build failed"
else
	pass selftest-build-booted
fi
# make check's reading of the VM run: vm.sh's log echoes the guest's
# console, whose summary line a vm.sh that failed after it never
# corrected; its exit status must count.  Stubs (the copy's source does
# not build, and nothing here needs it to): build.sh passes, vm.sh prints
# what SELFTEST_VM says.
cat > "$tree/tests/testbed/build.sh" <<'EOF'
#!/bin/bash
echo "PASS build-$1-stub"
EOF
cat > "$tree/tests/testbed/vm.sh" <<'EOF'
#!/bin/bash
case $SELFTEST_VM in
late)	# the guest's summary, then vm.sh breaks
	printf '%s\n' "=== RUN 00-stub.sh" "PASS stub-case" "1 passed, 0 failed, 0 skipped" \
		"SOFTMQ-GUEST-DONE rc=0"
	echo "[testbed] ERROR: sabotage: vm.sh broke after the guest's summary" >&2
	exit 3;;
skips)	printf '%s\n' "PASS stub-case" "SKIP stub-declared: declared" \
		"1 passed, 0 failed, 1 skipped" "vm stub: 1 passed, 0 failed, 1 skipped (0s)";;
esac
EOF
log=$W/check-vm-late.log
SELFTEST_VM=late GIT_CEILING_DIRECTORIES=$tmp SOFTMQ_CACHE=$CACHE "$tree/tests/check.sh" --quick "$LINE" > "$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then pass selftest-vm-status-exit-status
else fail selftest-vm-status-exit-status "check-quick exited 0 after vm.sh exited 3 (log: ${log#"$REPO"/})"; fi
expect selftest-vm-status-named "vm.sh's failure after the guest's summary was not counted" "$log" \
	"^FAIL vm-$LINE: vm.sh exited with status 3 but its log counts no failure"
expect selftest-vm-status-listed "vm.sh's failure was not listed after the summary" "$log" \
	"^$LINE: FAIL vm-$LINE: vm.sh exited with status 3"
log=$W/check-vm-skips.log
SELFTEST_VM=skips GIT_CEILING_DIRECTORIES=$tmp SOFTMQ_CACHE=$CACHE "$tree/tests/check.sh" --quick "$LINE" > "$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && tail -n 1 "$log" | grep -qE '^[0-9]+ passed, 0 failed, 1 skipped$'; then
	pass selftest-vm-status-skips
else
	fail selftest-vm-status-skips "check-quick failed (rc=$rc) a VM run of declared SKIPs that exited 0 (log: ${log#"$REPO"/})"
fi
rm -rf "$tmp"

# ---------------------------------------------------------------- 4. helpers
# Each helper runs in a subshell with the suites' own definitions (read
# from the scripts, so a change there is what is tested).
(
	eval "$(sed -n '/^share_check() {/,/^}/p' "$REPO/tests/vm/30-backlog.sh")"
	pass() { echo "PASS $1"; }; fail() { echo "FAIL $1: $2"; }; jqv() { jq -r "$2" "$1"; }
	: > "$W/empty.json"; echo '{}' > "$W/sent.json"
	share_check sabotage-share "$W/empty.json" 0,1,2 0.1 "$W/sent.json"
) > "$W/share.log" 2>&1
expect selftest-share-check "share_check passed an analysis that crashed" "$W/share.log" \
	'^FAIL sabotage-share: no share analysis'
(
	eval "$(sed -n '/^wait_drain() {/,/^}/p' "$REPO/tests/vm/lib.sh")"
	QSTAT=true
	wait_drain nodev 1 && echo "DRAINED" || echo "NOT DRAINED"
) > "$W/drain.log" 2>&1
expect selftest-wait-drain "wait_drain took a silent qdisc dump for a drained one" "$W/drain.log" '^NOT DRAINED$'
(
	eval "$(sed -n '/^pg_w() {/,/^}/p' "$REPO/tests/vm/lib.sh")"
	pg_w /dev/full "count 10" && echo "ACCEPTED" || echo "REFUSED"
	# a regular file reads back what was written: a pktgen file whose
	# "Result:" line is that (pktgen takes an unknown xmit_mode or flag
	# and says so only there)
	pg_w "$W/pg_dev" "Result: xmit_mode -:foo:- unknown" && echo "BAD RESULT ACCEPTED" || echo "BAD RESULT REFUSED"
	pg_w "$W/pg_dev" "Result: OK: count=10" && echo "OK RESULT ACCEPTED" || echo "OK RESULT REFUSED"
) > "$W/pg_w.log" 2>&1
expect selftest-pg-w "pg_w ignored a refused pktgen command" "$W/pg_w.log" '^REFUSED$'
expect selftest-pg-w-result "pg_w ignored pktgen's Result: line" "$W/pg_w.log" '^BAD RESULT REFUSED$'
expect selftest-pg-w-result-ok "pg_w refused a Result: OK" "$W/pg_w.log" '^OK RESULT ACCEPTED$'
(
	eval "$(sed -n '/^inst_clean_start() {/,/^}/p' "$REPO/tests/vm/lib.sh")"
	fail() { echo "FAIL $1: $2"; }; lsmod() { :; }
	inst_leftovers() { echo "package softmq-tc: ii"; }
	inst_clean_start sabotage-install && echo "CLEAN" || echo "NOT CLEAN"
) > "$W/clean.log" 2>&1
expect selftest-inst-clean-start "inst_clean_start took an installed package for a clean start" \
	"$W/clean.log" '^NOT CLEAN$'
(
	seen=$REPO/tests/testbed/seen/2026-12-04-i386-oops-20-traffic.txt
	echo "impossible EFLAGS: [$(tcg_trap_re "$seen")]"
	sed 's/EFLAGS: c4384646/EFLAGS: 00010246/' "$seen" > "$W/oops-valid.txt"
	grep -q 'EFLAGS: 00010246' "$W/oops-valid.txt" && echo "valid EFLAGS: [$(tcg_trap_re "$W/oops-valid.txt")]"
) > "$W/tcg.log" 2>&1
expect selftest-tcg-eflags "vm.sh's TCG excuse did not know an oops whose EFLAGS no CPU pushes" \
	"$W/tcg.log" '^impossible EFLAGS: \[\(Oops\|BUG\): \]$'
expect selftest-tcg-eflags-valid "vm.sh's TCG excuse took an oops with a valid EFLAGS for TCG's" \
	"$W/tcg.log" '^valid EFLAGS: \[\]$'

cases_summary
exit
}
