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
rc=$(printf '%s\n' '[ 1.0] sch_softmq: loading out-of-tree module taints kernel.' \
	'[ 1.1] softmq-harness: begin 1.1.1 x.sh' | scan_rc)
check selftest-scan-clean "scanner flagged a clean log (rc=$rc)" test "$rc" = 0

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

# 3. On a sanitizer line, the sanitizer's own report: proves it is on,
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
