# SPDX-License-Identifier: GPL-2.0
# tests/vm/quick-plan lookups, shared by tests/testbed/harness.sh (whole
# scripts) and tests/vm/lib.sh (parts of a script).  Sourced, never run.
#   plan_lines NAME   the lines quick-plan names for NAME ("<script>" or
#                     "<script>:<part>"); empty if it does not list NAME
#   plan_runs NAME    true if make check runs NAME on $SOFTMQ_LINE (an
#                     unlisted NAME runs on every line)
#   skip_declared CASE  true if a SKIP of CASE is allowed on $SOFTMQ_LINE:
#                     tests/vm/skips names it, or it is the SKIP part_runs
#                     prints for a "<script>:<part>" of quick-plan
SOFTMQ_PLAN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/quick-plan
SOFTMQ_SKIPS=$(dirname "$SOFTMQ_PLAN")/skips
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
skip_declared() {
	local name=$1 glob lines
	# a part of a script the plan keeps off this line: "<script>-<part>"
	awk '$1 ~ /:/ && $1 !~ /^#/ { split($1, a, ":"); sub(/\.sh$/, "", a[1]); print a[1] "-" a[2] }' \
		"$SOFTMQ_PLAN" 2>/dev/null | grep -qxF "$name" && return 0
	while read -r glob lines; do
		case "$glob" in ''|'#'*) continue;; esac
		lines=${lines%%#*}; lines=${lines//$'\t'/ }
		# shellcheck disable=SC2053
		[[ $name == $glob ]] || continue
		case " $lines " in *" * "*|*" ${SOFTMQ_LINE:-none} "*) return 0;; esac
	done < "$SOFTMQ_SKIPS"
	return 1
}
