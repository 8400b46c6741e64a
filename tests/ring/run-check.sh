#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run-check.sh [--model-deep]: what `make -C tests/ring check` runs.
# One line per test: PASS name / FAIL name: why / SKIP name: why; the last
# line is "N passed, N failed[, N skipped]"; exit status 1 on any failure.
set -u
cd "$(dirname "$0")"
OUT=out
MAKE=${MAKE:-make}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
T0=$(date +%s)
mkdir -p "$OUT"

. ../cases.sh
indent() { sed 's/^/    /'; }

summary() {
	echo "# tests/ring: $(( $(date +%s) - T0 )) s"
	cases_summary
	exit
}

# build TARGET: make it; a failed build is one failed test.
build() {
	local log=$OUT/build-${1##*/}.log
	if $MAKE --no-print-directory -s "$1" >"$log" 2>&1; then
		return 0
	fi
	fail "build ${1#"$OUT"/}"
	tail -n 25 "$log" | indent
	return 1
}

# tap NAME CMD...: run CMD, turn its "ok/not ok - x" lines into PASS/FAIL;
# a non-zero exit with no failure reported is a failure of NAME.
tap() {
	local name=$1 out rc nf=0 line
	shift
	out=$("$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*" - "*|"ok - "*)
			pass "$name: ${line#* - }" ;;
		"not ok "*" - "*|"not ok - "*)
			fail "$name: ${line#* - }"; nf=$((nf + 1)) ;;
		esac
	done <<<"$out"
	if [ "$nf" -gt 0 ] || [ "$rc" -ne 0 ]; then
		[ "$nf" -gt 0 ] || fail "$name: exit status $rc"
		grep -vE '^(ok |not ok |1\.\.)' <<<"$out" | tail -n 40 | indent
	fi
}

# ThreadSanitizer cannot start on kernels with high mmap randomisation
# ("unexpected memory mapping"): retry such a run without ASLR.
tsan() {
	local out rc
	out=$(TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$@" 2>&1)
	rc=$?
	if grep -q 'unexpected memory mapping' <<<"$out" &&
	   command -v setarch >/dev/null; then
		out=$(TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
		      setarch "$(uname -m)" -R "$@" 2>&1)
		rc=$?
	fi
	printf '%s\n' "$out"
	return $rc
}
asan() {
	ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" \
	UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" "$@"
}

# model NAME EXPECT DEFINES [FILE]: one exhaustive spin run of model/FILE
# (default softmq.pml), started in the background (MODEL_JOBS at a time,
# default the host's CPUs: each pan is single-threaded); model_results
# waits for them and prints their lines in the order they were started.
# EXPECT ok: no error and a complete search; violation: spin must find one.
MODEL_JOBS=${MODEL_JOBS:-$(nproc)}
MODELS=()
model() {
	while [ "$(jobs -rp | wc -l)" -ge "$MODEL_JOBS" ]; do wait -n; done
	mkdir -p "$OUT/model/$1"
	model_run "$@" >"$OUT/model/$1.report" 2>&1 &
	MODELS+=("$1")
}
model_results() {
	local m line
	wait
	for m in "${MODELS[@]}"; do
		while IFS= read -r line; do
			case $line in
			"PASS "*) pass "${line#PASS }" ;;
			"FAIL "*) fail "${line#FAIL }" ;;
			*) echo "$line" ;;
			esac
		done <"$OUT/model/$m.report"
	done
	MODELS=()
}
model_run() {
	local name=$1 expect=$2 defs=$3 pml=${4:-softmq.pml} dir=$OUT/model/$1
	local errs states secs why
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "model/$pml" "$dir/"
	if ! (cd "$dir" && spin -a $defs "$pml" >spin.log 2>&1 &&
	      gcc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM="${MODEL_MEMLIM:-2048}" -o pan pan.c \
		>>spin.log 2>&1); then
		fail "model $name: spin/pan build failed"
		tail -n 20 "$dir/spin.log" | indent
		return
	fi
	(cd "$dir" && ./pan -m500000 >pan.out 2>&1)
	errs=$(grep -oE 'errors: [0-9]+' "$dir/pan.out" | awk '{print $2}')
	states=$(awk '/states, stored/ {print $1}' "$dir/pan.out")
	secs=$(grep -oE 'elapsed time [0-9.]+' "$dir/pan.out" | awk '{print $3}')
	why=$(grep -E '^pan:[0-9]+:' "$dir/pan.out" | head -n 1 | sed 's/^pan:[0-9]*: //')
	if [ -z "$errs" ]; then
		fail "model $name: pan did not finish"
		tail -n 20 "$dir/pan.out" | indent
	elif [ "$expect" = ok ]; then
		if [ "$errs" -ne 0 ]; then
			fail "model $name ($defs): $why"
			echo "    trail: cd $dir && spin -t -p $defs $pml"
		elif grep -qE 'reached -DMEMLIM bound|max search depth too small' \
			"$dir/pan.out"; then
			fail "model $name ($defs): search incomplete (memory/depth bound)"
		else
			pass "model $name ($defs): $states states, ${secs}s, no error"
		fi
	else
		if [ "$errs" -gt 0 ]; then
			pass "model $name ($defs): spin finds it: $why"
		else
			fail "model $name ($defs): spin found no violation ($states states)"
		fi
	fi
}

if [ "${1:-}" = --model-deep ]; then
	# Larger configurations: minutes and GBs each; not part of check.
	export MODEL_MEMLIM=${MODEL_MEMLIM:-6144}
	# With the retire at the pop, -DANY_RING outgrows 8 GB (140M states).
	model deep-any-ring ok "-DANY_RING -DNO_POP_RETIRE"
	model deep-any-ring-cursor-3p ok "-DNP=3 -DK=1 -DANY_RING -DANY_CURSOR"
	model deep-any-ring-3p-d1-q1 ok "-DNP=3 -DK=1 -DDEPTH=1 -DQUOTA=1 -DANY_RING -DNO_POP_RETIRE"
	model deep-stall-map1-3p ok "-DMAXSTALL=1 -DRING_MAP=1 -DNP=3 -DK=1 -DDEPTH=1"
	model deep-control-lock ok "-DCONTROL_LOCK"
	model deep-summary-one-ring ok "-DSUMMARY -DRING_MAP=1"
	model deep-summary-any-cursor ok "-DSUMMARY -DANY_CURSOR"
	model deep-summary-stall-3p ok "-DSUMMARY -DMAXSTALL=1 -DNP=3 -DK=1 -DDEPTH=1"
	model_results
	summary
fi

echo "# tests/ring: $(gcc --version | head -n 1); $(clang --version | head -n 1); $(spin -V)"

# ---- the header on its own, and the unit tests ----------------------------
for t in header-gcc.o header-clang.o; do
	build "$OUT/$t" && pass "header builds on its own: ${t%.o} -Werror"
done
build "$OUT/unit" && tap unit "$OUT/unit"
build "$OUT/unit-kshim" && tap unit-kshim "$OUT/unit-kshim"
build "$OUT/unit-asan" && tap unit-asan asan "$OUT/unit-asan"
# include/softmq_bound.h: 64-bit and 32-bit longs (qemu-i386 where this
# kernel cannot run i386 binaries)
build "$OUT/bound" && tap bound "$OUT/bound"
if build "$OUT/bound-m32"; then
	if "$OUT/bound-m32" >/dev/null 2>&1; then tap bound-m32 "$OUT/bound-m32"
	else tap bound-m32 qemu-i386 "$OUT/bound-m32"; fi
fi

# ---- the model --------------------------------------------------------------
out=$(./check-model-map.py 2>&1)
while IFS= read -r line; do
	case $line in
	"PASS "*) pass "${line#PASS }" ;;
	"FAIL "*) fail "${line#FAIL }" ;;
	"SKIP "*) skip "${line#SKIP }" ;;
	*) echo "$line" ;;
	esac
done <<<"$out"

# Properties P1-P5 (see the model's header comment).  Each exhaustive.
model base ok ""
model full-quota ok "-DDEPTH=1 -DQUOTA=1"
model three-producers ok "-DNP=3 -DK=1"
model one-ring ok "-DRING_MAP=1"
# 38M states, 2.3 GB since the pop that retires its ring (softmq_ring_drained())
MODEL_MEMLIM=3072 model one-ring-3p ok "-DRING_MAP=1 -DNP=3 -DK=1 -DDEPTH=1 -DQUOTA=2"
model own-rings ok "-DRING_MAP=2 -DDEPTH=1 -DQUOTA=1"
model any-cursor ok "-DANY_CURSOR"
model stall ok "-DMAXSTALL=1"
model stall-3p ok "-DMAXSTALL=1 -DNP=3 -DK=1 -DDEPTH=1"
# change()/reap holding the seqlock (softmq_consumer_unlock()).
model control-lock ok "-DCONTROL_LOCK -DNCTL=2 -DK=1"
model control-lock-one-ring ok "-DCONTROL_LOCK -DNCTL=2 -DK=1 -DRING_MAP=1"
model control-lock-quota ok "-DCONTROL_LOCK -DNCTL=2 -DK=1 -DDEPTH=1 -DQUOTA=1"
model control-lock-stall ok "-DCONTROL_LOCK -DNCTL=2 -DK=1 -DMAXSTALL=1"
# The looks through a summed bitmap's summary word (softmq_active_mark(),
# softmq_active_summary_drop()): each ring in a word of its own, or both
# in one word.
model summary ok "-DSUMMARY"
model summary-one-word ok "-DSUMMARY -DSUMMARY_ONE_WORD"
model summary-stall ok "-DSUMMARY -DMAXSTALL=1"
model summary-control-lock ok "-DSUMMARY -DCONTROL_LOCK -DNCTL=2 -DK=1"
# softmq_ring_seen()'s barrier under a non-multi-copy-atomic memory model
# (model/rwc.pml); SC and MCA cannot show the mutant's reorder.
model rwc ok "" rwc.pml
model rwc-mca ok "-DMCA" rwc.pml
model rwc-summary ok "-DSUMMARY" rwc.pml
model rwc-summary-mca ok "-DSUMMARY -DMCA" rwc.pml
model rwc-summary-drop ok "-DSUMMARY -DSUMMARY_DROP" rwc.pml
model rwc-summary-drop-mca ok "-DSUMMARY -DSUMMARY_DROP -DMCA" rwc.pml
# Mutants: spin must report each.
model mut-no-rescan violation "-DMUT_NO_RESCAN"
model mut-no-clear violation "-DMUT_NO_CLEAR"
model mut-retire-order violation "-DMUT_RETIRE_ORDER"
model mut-retire-noset violation "-DMUT_RETIRE_NOSET"
model mut-no-retrylock violation "-DMUT_NO_RETRYLOCK -DNO_CLEAN_END"
model mut-hint-no-rescan violation "-DMUT_HINT_NO_RESCAN"
model mut-pop-retire-no-look violation "-DMUT_POP_RETIRE_NO_LOOK"
model mut-pop-retire-no-restore violation "-DMUT_POP_RETIRE_NO_RESTORE"
# The spill (one ring of one slot, three producers: spills out of position
# order): a lookup that takes any spilled item breaks the claims' order
# (P1); one that trusts a non-empty list and leaves the stack loses an
# item (P3).
model mut-spill-any-pos violation "-DRING_MAP=1 -DNP=3 -DK=1 -DDEPTH=1 -DQUOTA=2 -DMUT_SPILL_ANY_POS"
model mut-spill-stale-list violation "-DRING_MAP=1 -DNP=3 -DK=1 -DDEPTH=1 -DQUOTA=2 -DMUT_SPILL_STALE_LIST"
model mut-control-no-missed violation "-DCONTROL_LOCK -DNCTL=2 -DK=1 -DMUT_CONTROL_NO_MISSED"
model mut-rwc-no-seen-mb violation "-DMUT_NO_SEEN_MB" rwc.pml
model mut-rwc-no-clear-hint-mb violation "-DMUT_NO_CLEAR_HINT_MB" rwc.pml
# The summary: a drop without its second read, a word named after the
# hint (P3, stuck items); softmq_ring_seen() that trusts a mark whose word
# is not named yet (rwc.pml; under SC too).
model mut-summary-no-recheck violation "-DSUMMARY -DMUT_SUMMARY_NO_RECHECK"
model mut-summary-one-word-no-recheck violation "-DSUMMARY -DSUMMARY_ONE_WORD -DMUT_SUMMARY_NO_RECHECK"
model mut-summary-after-hint violation "-DSUMMARY -DMUT_SUMMARY_AFTER_HINT"
model mut-rwc-seen-no-summary violation "-DSUMMARY -DSC -DMUT_SEEN_NO_SUMMARY" rwc.pml
# The three barriers of the summary under the weak model, the word first
# named for another ring whose retire drops the bit.
model mut-rwc-seen-no-summary-mb violation "-DSUMMARY -DSUMMARY_DROP -DMUT_SEEN_NO_SUMMARY_MB" rwc.pml
model mut-rwc-no-mark-mb violation "-DSUMMARY -DSUMMARY_DROP -DMUT_NO_MARK_MB" rwc.pml
model mut-rwc-no-drop-mb violation "-DSUMMARY -DSUMMARY_DROP -DMUT_NO_DROP_MB" rwc.pml
# No error expected: with multi-copy-atomic stores (x86-TSO is such a model)
# the mutant cannot reorder; rwc.pml's claim that only POWER-like CPUs can.
model rwc-mca-no-seen-mb ok "-DMCA -DMUT_NO_SEEN_MB" rwc.pml
# A known limit of the kernel's qdisc_run_begin(), not of softmq: a producer
# stopped between test_and_set_bit(MISSED) and its second trylock delays all
# rings.  Kept so that the model's P4 claim stays honest.
model kernel-stop-after-missed violation "-DMAXSTALL=1 -DNP=3 -DK=1 -DSTALL_AFTER_MISSED"
model_results

# ---- concurrency ----------------------------------------------------------------
if build "$OUT/stress"; then
	tap stress "$OUT/stress" one 4 200000 64
	tap stress "$OUT/stress" many 4 100000 16 37
	tap stress "$OUT/stress" many 3 20000 1 200
	tap stress "$OUT/stress" qdisc 4 100000 16 37
	tap stress "$OUT/stress" qdisc 3 50000 1 2
fi
if build "$OUT/stress-jitter"; then
	tap stress-jitter "$OUT/stress-jitter" one 4 50000 4
	tap stress-jitter "$OUT/stress-jitter" many 4 50000 4 37
	tap stress-jitter "$OUT/stress-jitter" many 2 50000 1 3
	tap stress-jitter "$OUT/stress-jitter" qdisc 4 50000 4 37
	tap stress-jitter "$OUT/stress-jitter" qdisc 3 30000 1 2
fi
# stress_sanitized NAME WRAPPER: the stress modes in the sanitizer build
# NAME, run through WRAPPER (tsan or asan)
stress_sanitized() {
	build "$OUT/$1" || return 0
	tap "$1" "$2" "$OUT/$1" one 4 50000 64
	tap "$1" "$2" "$OUT/$1" many 4 50000 16 37
	tap "$1" "$2" "$OUT/$1" qdisc 4 50000 16 37
	tap "$1" "$2" "$OUT/$1" qdisc 3 30000 1 2
}
stress_sanitized stress-tsan tsan
if build "$OUT/stress-jitter-tsan"; then
	tap stress-jitter-tsan tsan "$OUT/stress-jitter-tsan" many 4 20000 4 37
	tap stress-jitter-tsan tsan "$OUT/stress-jitter-tsan" qdisc 4 20000 4 37
fi
# Mutant: push publishes with a relaxed store instead of a release; TSan must
# see the consumer's plain read of the payload race with the producer's write.
mut=$OUT/mut/relaxed-publish
mkdir -p "$mut"
if python3 - "$mut/softmq_ring.h" <<'PYEOF'
import sys
s = open('../../include/softmq_ring.h').read()
a = 'smp_store_release(&r->slot[pos & r->mask], item);'
if a not in s:
    sys.exit(1)
open(sys.argv[1], 'w').write(s.replace(a, 'WRITE_ONCE(r->slot[pos & r->mask], item);'))
PYEOF
then
	if gcc -std=gnu11 -O1 -g -fsanitize=thread -Ikshim -I"$mut" stress.c -lpthread \
		-o "$mut/stress-tsan" >"$mut/build.log" 2>&1; then
		out=$(tsan "$mut/stress-tsan" one 4 20000 64 2>&1)
		rc=$?
		if [ $rc -ne 0 ] && grep -q 'ThreadSanitizer: data race' <<<"$out"; then
			pass "stress-tsan mutant relaxed-publish: TSan reports the race"
		else
			fail "stress-tsan mutant relaxed-publish: no race reported (exit $rc)"
		fi
	else
		fail "stress-tsan mutant relaxed-publish: build"
		tail -n 20 "$mut/build.log" | indent
	fi
else
	fail "stress-tsan mutant relaxed-publish: the publish store is no longer in the header"
fi
stress_sanitized stress-asan asan

# ---- fuzz -------------------------------------------------------------------------
if build "$OUT/fuzz"; then
	if out=$("$OUT/fuzz" fuzz-seeds/* 2>&1); then
		pass "fuzz: seed corpus ($(ls fuzz-seeds | wc -l) inputs)"
	else
		fail "fuzz: seed corpus"
		tail -n 30 <<<"$out" | indent
	fi
	mkdir -p "$OUT/fuzz-corpus"
	if out=$("$OUT/fuzz" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
		 -artifact_prefix="$OUT/fuzz-" "$OUT/fuzz-corpus" fuzz-seeds 2>&1); then
		pass "fuzz: ${FUZZ_SECONDS}s, $(grep -oE 'Done [0-9]+ runs' <<<"$out" | awk '{print $2}') runs"
	else
		fail "fuzz: ${FUZZ_SECONDS}s (crash input saved under $OUT/fuzz-*)"
		grep -vE '^#[0-9]+' <<<"$out" | tail -n 40 | indent
	fi
fi

summary
