#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# First script of a run on a kmemleak kernel (the test bed runs it before
# tests/vm/*.sh when the line's env has PRE_TESTS): scan once and mark
# everything allocated so far (boot, 9p, the harness) as already seen, so
# kmemleak-check.sh at the end reports only objects leaked by the suite.
KL=/sys/kernel/debug/kmemleak
if [ ! -e $KL ]; then
	echo "SKIP kmemleak-clear: no $KL (kernel without CONFIG_DEBUG_KMEMLEAK)"; exit 0
fi
if ! echo scan > $KL 2>/dev/null; then
	echo "FAIL kmemleak-clear: kmemleak is off; the line's BOOT_ARGS need kmemleak=on"; exit 0
fi
n=$(grep -c '^unreferenced object' $KL)
echo clear > $KL
echo "  kmemleak: $n object(s) reported before the suite (boot), cleared"
echo "PASS kmemleak-clear"
