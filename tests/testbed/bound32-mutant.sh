#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The 32-bit line's reason to exist, shown: the VM suite must fail on the
# i386 kernel when the admission level test compares a signed count with
# the u32 limit the way it once did ("long < u32" is unsigned where long
# is 32 bits wide, so the negative count a consumer that folds first
# leaves refuses every packet from then on; every 64-bit build passes).
#
#   tests/testbed/bound32-mutant.sh [LINE]   (default 6.1-686-pae, fetched)
#
# Copies the tree, puts the old comparison back into
# include/softmq_bound.h, builds and boots the copy on LINE with the
# scripts that send traffic through softmq (20-traffic, 35-limits) and
# passes only if that run fails with a FAIL of a test case (not a build
# or boot failure).  make check-full runs it after the line itself passed.
# Prints PASS/FAIL lines and "N passed, N failed".
{ # parsed whole before it runs: editing this file cannot break a running copy
set -uo pipefail
. "$(dirname "$0")/lib.sh"

LINE=${1:-6.1-686-pae}
P=0 F=0
pass() { echo "PASS $1${2:+ ($2)}"; P=$((P + 1)); }
fail() { echo "FAIL $1: $2"; F=$((F + 1)); }
finish() { echo "$P passed, $F failed"; [ $F -eq 0 ]; exit; }

W=$REPO/build/bound32-mutant
rm -rf "$W"; mkdir -p "$W/tree"
git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 cp --parents -t "$W/tree") ||
	{ fail bound32-mutant-copy "cannot copy the tree to $W/tree"; finish; }
# cp of a tracked symlink or an uncommitted edit: the copy is the work tree
h=$W/tree/include/softmq_bound.h
sed -i 's/if (n < 0 || (unsigned long)n < READ_ONCE(b->max))/if (n < READ_ONCE(b->max))/' "$h"
if ! grep -q 'if (n < READ_ONCE(b->max))' "$h"; then
	fail bound32-mutant-applied "the level test in include/softmq_bound.h is not the one this mutant replaces"
	finish
fi
pass bound32-mutant-applied "include/softmq_bound.h: if (n < READ_ONCE(b->max))"

log=$W/vm.log
VM_TESTS="20-traffic 35-limits" "$W/tree/tests/testbed/vm.sh" --kernel "$LINE" \
	--results "$W/results" > "$log" 2>&1
rc=$?
# A case that sent traffic and judged it: not a set-up step (a missing
# device, module or plugin fails those, whatever the bound does).
cases() { grep -E '^FAIL (traffic|limits)-' "$log" | grep -vE '^FAIL [^: ]*-(setup|sink|rmmod|slowdev|insmod|plugin)(:| |$)'; }
if grep -q "^FAIL build-" "$log" || grep -qE "^FAIL vm-$LINE-(boot|harness)" "$log"; then
	fail bound32-mutant-fails "the mutant's run broke before its tests (log: ${log#"$REPO"/}): $(grep -m1 '^FAIL' "$log")"
elif [ $rc -ne 0 ] && [ -n "$(cases)" ]; then
	pass bound32-mutant-fails "$(cases | wc -l) case(s), first: $(cases | head -n 1 | cut -c1-160)"
else
	fail bound32-mutant-fails "the suite passed on $LINE with the 32-bit sign bug put back (log: ${log#"$REPO"/})"
fi
finish
}
