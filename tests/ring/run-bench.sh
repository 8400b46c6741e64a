#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run-bench.sh: what `make -C tests/ring bench` runs (after building out/bench).
#   1. instructions per uncontended push+pop pair, from callgrind: inclusive
#      Ir of the noinline wrappers pair_push/pair_pop (each includes its own
#      entry and ret, not the caller's call), per call; the same for the
#      spinlock ring and the mutex queue pairs and for the idle edge cycle.
#      Deterministic: the same binary gives the same counts on every run.
#   2. throughput table (bench tput REPS ITEMS), all queues in one run.
# Prints the tables and writes ../../bench/results/ring-<date>.md.
# Env: REPS (default 9), ITEMS per producer (default 1000000), PAIRS (1000000).
set -eu
cd "$(dirname "$0")"
OUT=out
REPS=${REPS:-9}
ITEMS=${ITEMS:-1000000}
PAIRS=${PAIRS:-1000000}
RESULTS=../../bench/results
mkdir -p "$RESULTS"
res=$RESULTS/ring-$(date -u +%Y-%m-%d).md

valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
	"$OUT/bench-ir" ir "$PAIRS" >"$OUT/callgrind.log" 2>&1
callgrind_annotate --inclusive=yes "$OUT/callgrind.out" >"$OUT/callgrind.txt" 2>/dev/null
# inclusive Ir of function $1 (the "=> file:func (Nx)" call-site lines)
ir_of() {
	grep -E "=> .*:$1 \(" "$OUT/callgrind.txt" | head -n 1 |
		awk '{gsub(",", "", $1); print $1}'
}
per() { awk -v a="$1" -v n="$PAIRS" 'BEGIN { printf "%.1f", a / n }'; }
push=$(per "$(ir_of pair_push)")
pop=$(per "$(ir_of pair_pop)")
pair=$(awk -v a="$push" -v b="$pop" 'BEGIN { printf "%.1f", a + b }')
edge=$(per "$(ir_of edge_cycle)")
spin=$(per "$(ir_of spin_pair)")
mutex=$(per "$(ir_of mutex_pair)")
verdict=$(awk -v p="$pair" 'BEGIN { print (p <= 40) ? "met" : "MISSED" }')

load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
"$OUT/bench" tput "$REPS" "$ITEMS" >"$OUT/tput.md"
t1=$(date +%s)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# ratio CONSUMER QUEUE FIELD: the "vs spinring" column for 2 producers
# (field 6: wall clock, field 8: per CPU-second)
ratio() {
	awk -F'|' -v c="$1" -v q="$2" -v f="$3" \
		'$2 ~ c && $3 ~ /2/ && $4 == " " q " " {gsub(/[ x]/, "", $f); print $f}' \
		"$OUT/tput.md"
}
rw=$(ratio dedicated softmq 6); rc=$(ratio dedicated softmq 8)
rrw=$(ratio dedicated softmq-R 6); rrc=$(ratio dedicated softmq-R 8)
riw=$(ratio inline softmq 6); ric=$(ratio inline softmq 8)
tverdict=$(awk -v a="$rw" -v b="$rc" 'BEGIN { print (a >= 1.5 && b >= 1.5) ? "met" : "MISSED" }')

{
	echo "# softmq ring microbenchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs,"
	echo "kernel $(uname -r); $(gcc --version | head -n 1); load average $load0 before, $load1 after"
	echo "(the machine is shared: other jobs run at the same time)."
	echo "Header: include/softmq_ring.h at $(git log -1 --format=%h -- ../../include/softmq_ring.h 2>/dev/null || echo '?')."
	echo
	echo "## Instructions per uncontended operation (callgrind, $PAIRS iterations)"
	echo
	echo "| what | Ir per iteration |"
	echo "|---|---|"
	echo "| softmq push (pair_push) | $push |"
	echo "| softmq pop (pair_pop) | $pop |"
	echo "| **softmq push+pop pair** | **$pair** (target <= 40: $verdict) |"
	echo "| softmq idle edge: push WOKE + mark + find + pop + empty pop + retire | $edge |"
	echo "| spinring push+pop (pthread_spin_lock) | $spin |"
	echo "| mutexq push+pop (pthread_mutex) | $mutex |"
	echo
	echo "Counts are inclusive Ir of noinline wrappers: each includes its own"
	echo "entry and ret, not the caller's call; gcc -O2, x86-64."
	echo
	echo "## Throughput (Mitems/s moved producer -> consumer; median of $REPS runs, $ITEMS items per producer, depth 1024; $((t1 - t0)) s)"
	echo
	cat "$OUT/tput.md"
	echo
	echo "dedicated: P producer threads + 1 consumer thread (3 threads on 2 CPUs"
	echo "for P = 2); inline: no consumer thread, each producer takes the consumer"
	echo "role with a trylock after its push (qdisc_run's pattern), P threads."
	echo
	echo "Mitems per CPU-s counts only the CPU time this process got: on a shared"
	echo "machine it is the steadier of the two (time other jobs take does not"
	echo "count; our own spinning and lock waiting does)."
	echo
	echo "2 producers, dedicated consumer, softmq/spinring: ${rw}x wall, ${rc}x per CPU-s"
	echo "(target >= 1.5: $tverdict); per-producer rings (softmq-R): ${rrw}x, ${rrc}x;"
	echo "inline consumer: softmq ${riw}x, ${ric}x."
} >"$res"
cat "$res"
echo
echo "# written to ${res#../../}"
