// SPDX-License-Identifier: GPL-2.0
/*
 * include/softmq_bound.h in userspace, through its kernel names (kshim/):
 * the admission bound's arithmetic with up to 16 simulated CPUs.  Built
 * twice, native and -m32 (where long is 32 bits wide, as on armhf and
 * i386 kernels).  Prints "ok N - what" / "not ok N - what" lines.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCPU	16

struct cpu_delta {
	int32_t	pkts;
	int32_t	mem;
};

#define KSHIM_PCPU_STRIDE	sizeof(struct cpu_delta)
#define RING_KSHIM		/* kshim's access hooks: fold_in_between() */
#define __KERNEL__
#include "softmq_bound.h"
#undef __KERNEL__

unsigned int kshim_cpu;
void (*kshim_hook)(enum kshim_ev ev, const void *addr);

static struct cpu_delta cpus[NCPU];
static unsigned int nr_cpus = NCPU;
static int tests, failed;

static void check(int ok, const char *what)
{
	tests++;
	if (!ok)
		failed++;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests, what);
}

static void reset(struct softmq_bound *b, u32 max, u32 batch_max)
{
	memset(cpus, 0, sizeof(cpus));
	memset(b, 0, sizeof(*b));
	softmq_bound_set(b, max, batch_max, nr_cpus);
}

/* What the bound has counted, folded or not: the true backlog. */
static long bound_total(struct softmq_bound *b, int32_t deq)
{
	long n = atomic_long_read(&b->count) + deq;
	unsigned int c;

	for (c = 0; c < NCPU; c++)
		n += cpus[c].pkts;
	return n;
}

static void charge_on(struct softmq_bound *b, unsigned int cpu, s32 n)
{
	kshim_cpu = cpu;
	softmq_bound_charge(b, &cpus[0].pkts, n);
}

static void fold_all(struct softmq_bound *b)
{
	unsigned int c;

	for (c = 0; c < NCPU; c++) {
		kshim_cpu = c;
		softmq_bound_fold_this_cpu(b, &cpus[0].pkts);
	}
}

/* A negative count (the consumer folded first) admits, at any word size. */
static void test_negative_count(void)
{
	struct softmq_bound b;
	int32_t deq = 0;

	reset(&b, 10240, 64);
	/* One CPU queues 5, the consumer sends them and goes idle. */
	charge_on(&b, 3, 5);
	softmq_bound_uncharge(&b, &deq, 5);
	softmq_bound_flush(&b, &deq);
	check(atomic_long_read(&b.count) == -5 && bound_total(&b, deq) == 0,
	      "consumer folds first: count -5, backlog 0");
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_UNDER,
	      "a negative count is under the limit (32-bit: not read as huge)");
	atomic_long_set(&b.count, LONG_MIN / 2);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_UNDER,
	      "a very negative count is under the limit");
}

static void test_levels(void)
{
	struct softmq_bound b;
	/* memory_limit's largest value: hard is past LONG_MAX on 32-bit */
	u32 max = 1U << 31;

	reset(&b, 160, 64);
	atomic_long_set(&b.count, 159);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_UNDER, "limit 160: 159 is under");
	atomic_long_set(&b.count, 160);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_OVER, "limit 160: 160 is over");
	atomic_long_set(&b.count, 199);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_OVER, "limit 160: 199 is over");
	atomic_long_set(&b.count, 200);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_CEILING,
	      "limit 160: 200 (5/4) is the ceiling");

	reset(&b, max, 128 << 10);
	atomic_long_set(&b.count, (long)(max / 4));
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_UNDER, "memory_limit 2 GiB: 512 MiB is under");
#if BITS_PER_LONG > 32
	check(b.hard == max + max / 4, "memory_limit 2 GiB: hard 2.5 GiB fits u32");
	atomic_long_set(&b.count, (long)max);
	check(softmq_bound_level(&b) == SOFTMQ_BOUND_OVER,
	      "memory_limit 2 GiB: 2 GiB is over");
#else
	{
		/* long is 32 bits: max capped so that hard stays 5/4 of it */
		check(b.max < max && b.hard <= LONG_MAX / 2 &&
		      b.hard == b.max + b.max / 4 &&
		      b.max + b.max / 8 < b.hard,
		      "memory_limit 2 GiB, 32-bit long: max capped, hard 5/4 of it <= LONG_MAX / 2");
		atomic_long_set(&b.count, (long)b.max);
		check(softmq_bound_level(&b) == SOFTMQ_BOUND_OVER &&
		      softmq_bound_room(&b) == b.max,
		      "memory_limit 2 GiB, 32-bit long: the capped max is over, room the limit");
		atomic_long_set(&b.count, (long)(b.max + b.max / 8));
		check(softmq_bound_level(&b) == SOFTMQ_BOUND_OVER &&
		      softmq_bound_room(&b) == 0,
		      "memory_limit 2 GiB, 32-bit long: 9/8 of it over, below hard, no room");
		atomic_long_set(&b.count, LONG_MAX / 2 + 10);
		check(softmq_bound_level(&b) == SOFTMQ_BOUND_CEILING,
		      "memory_limit 2 GiB, 32-bit long: a count past the cap is the ceiling");
	}
#endif
}

/* Random charges on 16 CPUs and uncharges by the consumer: exact sums. */
static void test_exact(void)
{
	struct softmq_bound b;
	int32_t deq = 0;
	long queued = 0;
	int i, ok = 1;

	reset(&b, 10240, 64);
	srand(1);
	for (i = 0; i < 200000; i++) {
		if (queued && rand() % 2) {
			softmq_bound_uncharge(&b, &deq, 1);
			queued--;
		} else {
			charge_on(&b, rand() % NCPU, 1);
			queued++;
		}
		if (bound_total(&b, deq) != queued)
			ok = 0;
		if (labs(atomic_long_read(&b.count) - queued) >=
		    (long)(NCPU + 1) * b.batch)
			ok = 0;
	}
	check(ok, "count + deltas == backlog; count within (CPUs + 1) x batch");
}

/* The consumer folds when its delta reaches -batch, not one later. */
static void test_uncharge_fold(void)
{
	struct softmq_bound b;
	int32_t deq = 0;
	int32_t i;

	reset(&b, 10240, 64);
	for (i = 1; i < b.batch; i++)
		softmq_bound_uncharge(&b, &deq, 1);
	check(deq == 1 - b.batch && atomic_long_read(&b.count) == 0,
	      "consumer: batch - 1 packets out, none folded yet");
	softmq_bound_uncharge(&b, &deq, 1);
	check(deq == 0 && atomic_long_read(&b.count) == -b.batch,
	      "consumer: the batch-th folds it");
	softmq_bound_uncharge(&b, &deq, 3 * b.batch);
	check(deq == 0 && atomic_long_read(&b.count) == -4 * b.batch,
	      "consumer: a truesize past the batch folds at once");
}

/* A fold from an interrupt between this_cpu_add_return() and the sub. */
static struct softmq_bound *hook_bound;
static int hook_folds;
static void fold_in_between(enum kshim_ev ev, const void *addr)
{
	(void)addr;
	if (ev == KSHIM_PCPU_ADD) {
		kshim_hook = NULL;
		hook_folds++;
		softmq_bound_fold_this_cpu(hook_bound, &cpus[0].pkts);
	}
}

static void test_fold_between_steps(void)
{
	struct softmq_bound b;
	int i, ok = 1;

	reset(&b, 10240, 64);
	hook_bound = &b;
	for (i = 0; i < 1000; i++) {
		/* every 7th charge crosses the batch: the fold lands mid-fold */
		kshim_hook = fold_in_between;
		charge_on(&b, i % NCPU, 7);
		kshim_hook = NULL;
		if (bound_total(&b, 0) != 7L * (i + 1))
			ok = 0;
	}
	check(ok && hook_folds == 1000,
	      "a forced fold between a charge's steps loses nothing");
}

/*
 * Admit packets from @ncpus CPUs in turn from @from_cpu, none sent, while the bound is below
 * its ceiling (every packet sparse: the most the OVER band can let in), and
 * return how many got in.
 */
static long admit_all(struct softmq_bound *b, unsigned int from_cpu,
		      unsigned int ncpus)
{
	long admitted = 0;
	unsigned int c = from_cpu;

	while (softmq_bound_level(b) != SOFTMQ_BOUND_CEILING && admitted < 100000) {
		charge_on(b, c, 1);
		admitted++;
		c = from_cpu + (c + 1 - from_cpu) % ncpus;
	}
	return admitted;
}

/*
 * Lowering the limit live: 16 CPUs, 10240 (batch 40) -> 160 (batch 1).
 * Each CPU's delta holds 39 packets the consumer already sent and folded,
 * so count reads 16 x 39 = 624 below the backlog.
 */
static long lower_limit(int fold)
{
	struct softmq_bound b;
	int32_t deq = 0;
	unsigned int c;
	bool shrank;

	reset(&b, 10240, 64);
	for (c = 0; c < NCPU; c++)
		charge_on(&b, c, 39);
	softmq_bound_uncharge(&b, &deq, 39 * NCPU);
	softmq_bound_flush(&b, &deq);
	shrank = softmq_bound_set(&b, 160, 64, nr_cpus);
	if (!shrank)
		return -1;
	if (fold)
		fold_all(&b);
	/*
	 * Then one CPU sends (its own residue folds at once): the other 15
	 * stay idle, and without the fold so do their residues.  With it,
	 * every CPU sends too: the bound holds either way.
	 */
	return admit_all(&b, 0, fold ? NCPU : 1);
}

static void test_lower_limit(void)
{
	/* the stated bound: limit x 21/16 + one packet per CPU */
	long bound = 160 * 21 / 16 + NCPU, with = lower_limit(1), without = lower_limit(0);
	char what[160];

	snprintf(what, sizeof(what),
		 "limit 10240 -> 160 on 16 CPUs: %ld admitted with the fold (bound %ld)",
		 with, bound);
	check(with > 0 && with <= bound, what);
	snprintf(what, sizeof(what),
		 "the same without the fold admits %ld: the case can fail", without);
	check(without > bound, what);
	{
		struct softmq_bound b;

		reset(&b, 10240, 64);
		check(!softmq_bound_set(&b, 20480, 64, nr_cpus),
		      "raising the limit (batch 64 -> 64) asks for no fold");
	}
}

/*
 * Refill @rings rings, all empty, from a count at the limit 4000 by
 * softmq_admit()'s rule over the limit (softmq_bound_share_allows(), the
 * module's own: fewer than room / rings, at least one) until nothing more
 * is admitted: round robin, one packet a ring in
 * turn, or in bursts, each ring filled as far as it may go before the
 * next.  Returns the count where the refills stopped; *@late counts the
 * packets admitted from 9/8 of the limit on into a ring that already held
 * one (the rule admits none there).
 */
static long refill_stop(struct softmq_bound *b, unsigned int rings, bool burst,
			unsigned int *late)
{
	static u16 len[1024];
	unsigned int r;
	bool admitted;

	reset(b, 4000, 64);
	memset(len, 0, sizeof(len));
	atomic_long_set(&b->count, 4000);
	*late = 0;
	do {
		admitted = false;
		for (r = 0; r < rings; r++) {
			do {
				if (softmq_bound_level(b) == SOFTMQ_BOUND_CEILING ||
				    !softmq_bound_share_allows(b, rings, 1, len[r]))
					break;
				if (len[r] && atomic_long_read(&b->count) >= 4500)
					(*late)++;
				len[r]++;
				atomic_long_add(1, &b->count);
				admitted = true;
			} while (burst);
		}
	} while (admitted);
	return atomic_long_read(&b->count);
}

/*
 * softmq_bound_share_allows(): a ring's share of the room over the rings
 * in use, in units of @size (memory_limit: the skb's truesize), at least
 * one packet; no rings and a size of 0 count as 1.
 */
static void test_share(void)
{
	static const struct {
		long n;
		u32 rings, size, len;
		bool allows;
	} cases[] = {
		/* at the limit the room is the limit: 1000 / 4 / 100 = 2 */
		{ 1000, 4, 100, 1, true }, { 1000, 4, 100, 2, false },
		/* truesize 0, no rings: 1000 / 1 / 1 */
		{ 1000, 0, 0, 999, true }, { 1000, 0, 0, 1000, false },
		/* a share below one packet: an empty ring only */
		{ 1000, 4, 400, 0, true }, { 1000, 4, 400, 1, false },
		/* at 9/8 the room is gone: an empty ring only */
		{ 1125, 1, 1, 0, true }, { 1125, 1, 1, 1, false },
		/* halfway to 9/8: (1125 - 1062) * 8 = 504 */
		{ 1062, 2, 2, 125, true }, { 1062, 2, 2, 126, false },
	};
	struct softmq_bound b;
	unsigned int i;

	reset(&b, 1000, 64);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char what[120];

		atomic_long_set(&b.count, cases[i].n);
		snprintf(what, sizeof(what),
			 "limit 1000 at %ld: %u rings, size %u, a ring of %u %s",
			 cases[i].n, cases[i].rings, cases[i].size, cases[i].len,
			 cases[i].allows ? "takes one more" : "is full");
		check(softmq_bound_share_allows(&b, cases[i].rings,
						cases[i].size, cases[i].len) ==
		      cases[i].allows, what);
	}
}

/* softmq_bound_room(): the share's room, and where refills stop. */
static void test_room(void)
{
	static const struct { long n; u32 room; } at160[] = {
		{ -5, 160 }, { 100, 160 }, { 160, 160 }, { 161, 152 },
		{ 170, 80 }, { 179, 8 }, { 180, 0 }, { 250, 0 },
	};
	static const unsigned int rings_in_use[] = { 4, 100, 250, 880 };
	struct softmq_bound b;
	unsigned int i;
	u32 prev = ~0U;
	long n;
	int ok = 1;

	reset(&b, 160, 64);
	for (i = 0; i < sizeof(at160) / sizeof(at160[0]); i++) {
		char what[80];

		atomic_long_set(&b.count, at160[i].n);
		snprintf(what, sizeof(what), "limit 160: room at %ld is %u",
			 at160[i].n, at160[i].room);
		check(softmq_bound_room(&b) == at160[i].room, what);
	}
	for (n = -5; n <= 210; n++) {
		u32 room;

		atomic_long_set(&b.count, n);
		room = softmq_bound_room(&b);
		if (room > prev || room > 160)
			ok = 0;
		prev = room;
	}
	check(ok, "limit 160: the room never grows with the count, never past the limit");

	/* memory_limit's largest: 9/8 of it and the room still fit u32 */
	reset(&b, 1U << 31, 128 << 10);
	if (b.max == 1U << 31) {
		atomic_long_set(&b.count, (long)(b.max + (1U << 20)));
		check(softmq_bound_room(&b) == ((1U << 28) - (1U << 20)) << 3,
		      "memory_limit 2 GiB, 1 MiB over: room (256 MiB - 1 MiB) * 8");
	} else {
		atomic_long_set(&b.count, (long)b.max + 1);
		check(softmq_bound_room(&b) < b.max,
		      "memory_limit 2 GiB, 32-bit long (capped): room below the limit just over it");
	}

	/*
	 * The case the room is for: rings empty when the count reaches the
	 * limit, refilled in either order.  From 9/8 of the limit (4500) on
	 * no ring that holds a packet is admitted, only the one packet an
	 * empty ring may always take.  With 16 packets a ring or more (250
	 * rings and fewer here) the stop leaves the ceiling (5000) further
	 * than the counting lag (1/16: 250), and an empty ring, a sparse
	 * flow's, is still admitted after the lag is folded in.  With 880
	 * rings (4.5 a ring) the empty rings' single packets alone can reach
	 * the ceiling, and refilled in bursts they do.  A share fixed at
	 * limit / rings admits into non-empty rings past 9/8 in every case.
	 */
	for (i = 0; i < sizeof(rings_in_use) / sizeof(rings_in_use[0]); i++) {
		unsigned int rings = rings_in_use[i];
		int burst;

		for (burst = 0; burst < 2; burst++) {
			unsigned int late;
			char what[200];
			bool ok;

			n = refill_stop(&b, rings, burst, &late);
			ok = !late && n <= 4500 + (long)rings;
			if (rings <= 4000 / 16)
				ok = ok && n + 250 < 5000;
			snprintf(what, sizeof(what),
				 "limit 4000, %u empty rings refilled %s: stop at %ld, %u admitted past 4500 into a non-empty ring (0%s)",
				 rings, burst ? "in bursts" : "round robin", n, late,
				 rings <= 4000 / 16 ? "; stop + lag 250 < ceiling 5000" : "");
			check(ok, what);
		}
	}
}

int main(void)
{
	printf("# long is %zu bits\n", sizeof(long) * 8);
	test_negative_count();
	test_levels();
	test_room();
	test_share();
	test_exact();
	test_uncharge_fold();
	test_fold_between_steps();
	test_lower_limit();
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}
