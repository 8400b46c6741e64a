# SPDX-License-Identifier: GPL-2.0
# tests/vm/quick-plan lookups, shared by tests/testbed/harness.sh (whole
# scripts) and tests/vm/lib.sh (parts of a script).  Sourced, never run.
#   plan_lines NAME   the lines quick-plan names for NAME ("<script>" or
#                     "<script>:<part>"); empty if it does not list NAME
#   plan_runs NAME    true if make check runs NAME on $SOFTMQ_LINE (an
#                     unlisted NAME runs on every line)
SOFTMQ_PLAN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/quick-plan
plan_lines() {
	awk -v s="$1" '$1 == s { $1 = ""; sub(/^ /, ""); print; exit }' "$SOFTMQ_PLAN" 2>/dev/null
}
plan_runs() {
	local lines
	lines=$(plan_lines "$1")
	[ -z "$lines" ] && return 0
	case " $lines " in *" ${SOFTMQ_LINE:-none} "*) return 0;; esac
	return 1
}
