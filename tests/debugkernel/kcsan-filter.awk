# SPDX-License-Identifier: GPL-2.0
# Kernel log filter for the KCSAN line: pass every line through except the
# KCSAN reports that do not involve softmq, which go to the file named by
# -v ign=FILE (appended; default: dropped).
#
# A report is the block from "BUG: KCSAN:" to the "=====" line that closes
# it: title, both accesses' stacks, "value changed", the reporting CPU.
# It counts (stays in the log the splat scanner sees) when any line of it
# names softmq code: a frame in sch_softmq ("[sch_softmq]", softmq_*
# functions) or the title's "data-race in softmq_x / ...", not merely
# "softmq" (the sanitizer kernels' release, 6.12.117-softmq-kcsan, is in
# every report's "CPU:" line); or names warnme (the test
# bed's self-test module, which races on purpose to prove that a report
# gets through: tests/vm/00-selftest.sh).  softmq's private data is
# touched only by softmq code, so a race on it always has one access in
# softmq; a race with both accesses in the core (on the core's own Qdisc
# fields, in the stack, in drivers) is the core's, not ours, and is only
# recorded.
#
#   awk -v ign=FILE -f kcsan-filter.awk < kernel.log
{
	if (!inrep && $0 ~ /BUG: KCSAN:/) {
		inrep = 1; n = 0; ours = 0
	}
	if (!inrep) { print; next }
	buf[++n] = $0
	if ($0 ~ /softmq_|sch_softmq|warnme/) ours = 1
	if (n > 1 && $0 ~ /====================/ || n > 400) {
		flush()
	}
}
function flush(   i) {
	for (i = 1; i <= n; i++) {
		if (ours) print buf[i]
		else if (ign != "") print buf[i] >> ign
	}
	if (!ours) {
		ignored++
		if (ign != "") print "" >> ign
	}
	inrep = 0; n = 0
}
END {
	if (inrep) flush()
	if (ignored && ign != "")
		printf "kcsan-filter: %d report(s) without softmq\n", ignored >> ign
}
