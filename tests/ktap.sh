#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The case lines of a test run as KTAP, for readers used to kselftest:
#
#   make check 2>&1 | tee check.log; tests/ktap.sh check.log > check.ktap
#   tests/testbed/vm.sh ... | tests/ktap.sh
#
# Every suite here prints "PASS name [(info)]", "FAIL name: why" and
# "SKIP name: why" (tests/README.md); those become "ok N name # info",
# "not ok N name # why" and "ok N name # SKIP why", numbered in order,
# under "KTAP version 1" and the "1..N" plan.  Other lines become "#"
# diagnostics.  Exits 1 if any case failed, like the run itself.
awk '
function esc(s) { gsub(/#/, "\\#", s); return s }
{ sub(/\r$/, "") }	# CR LF: the lines of a guest serial console
/^PASS [^ ]/ {
	s = substr($0, 6); name = s; info = ""
	if (match(s, / \(/)) { name = substr(s, 1, RSTART - 1); info = substr(s, RSTART + 2); sub(/\)$/, "", info) }
	line[++n] = "ok " n " " esc(name) (info != "" ? " # " esc(info) : ""); next
}
/^FAIL [^ ]/ {
	s = substr($0, 6); name = s; why = ""
	if (match(s, /: /)) { name = substr(s, 1, RSTART - 1); why = substr(s, RSTART + 2) }
	line[++n] = "not ok " n " " esc(name) (why != "" ? " # " esc(why) : ""); failed = 1; next
}
/^SKIP [^ ]/ {
	s = substr($0, 6); name = s; why = ""
	if (match(s, /: /)) { name = substr(s, 1, RSTART - 1); why = substr(s, RSTART + 2) }
	line[++n] = "ok " n " " esc(name) " # SKIP " esc(why); next
}
{ diag[n + 1] = diag[n + 1] "# " $0 "\n" }
END {
	print "KTAP version 1"
	print "1.." n
	for (i = 1; i <= n + 1; i++) {
		if (i in diag) printf "%s", diag[i]
		if (i <= n) print line[i]
	}
	exit failed
}' "$@"
