#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Last script of a run on a kmemleak kernel (POST_TESTS): after the whole
# suite, scan (twice, objects must be older than 5 s and stay unreferenced)
# and fail on any unreferenced object, printing kmemleak's reports (with
# the allocation backtraces).  Anything leaked by the suite counts, softmq
# or not: a leak in the core triggered by softmq's calls is still a leak.
KL=/sys/kernel/debug/kmemleak
if [ ! -e $KL ]; then
	echo "SKIP kmemleak-check: no $KL (kernel without CONFIG_DEBUG_KMEMLEAK)"; exit 0
fi
if ! echo scan > $KL 2>/dev/null; then
	echo "FAIL kmemleak-check: kmemleak is off (boot with kmemleak=on)"; exit 0
fi
sleep 6
echo scan > $KL
sleep 1
echo scan > $KL
out=$(cat $KL)
[ -n "${SOFTMQ_RESULTS:-}" ] && printf '%s\n' "$out" > "$SOFTMQ_RESULTS/kmemleak.txt"
n=$(printf '%s\n' "$out" | grep -c '^unreferenced object')
if [ "$n" -gt 0 ]; then
	printf '%s\n' "$out" | head -n 80 | sed 's/^/    | /'
	echo "FAIL kmemleak-check: $n unreferenced object(s) after the suite"
else
	echo "PASS kmemleak-check"
fi
