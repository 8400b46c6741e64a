# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The case lines every suite prints (tests/README.md, "Report"), in one
# place: sourced by the host suites (ring, lint, install, the test bed's
# self-test) and by tests/vm/lib.sh in the guest.  Never run.
#   pass NAME [INFO]   PASS NAME (INFO)
#   fail NAME [WHY]    FAIL NAME: WHY
#   skip NAME WHY      SKIP NAME: WHY
#   cases_summary      "N passed, N failed[, N skipped]" (skipped shown when
#                      any, or with --skipped); status 1 if any case failed
CASES_PASS=0 CASES_FAIL=0 CASES_SKIP=0
pass() { echo "PASS $1${2:+ ($2)}"; CASES_PASS=$((CASES_PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; CASES_FAIL=$((CASES_FAIL + 1)); }
skip() { echo "SKIP $1: $2"; CASES_SKIP=$((CASES_SKIP + 1)); }
cases_summary() {
	if [ "$CASES_SKIP" -gt 0 ] || [ "${1:-}" = --skipped ]; then
		echo "$CASES_PASS passed, $CASES_FAIL failed, $CASES_SKIP skipped"
	else
		echo "$CASES_PASS passed, $CASES_FAIL failed"
	fi
	[ "$CASES_FAIL" -eq 0 ]
}
