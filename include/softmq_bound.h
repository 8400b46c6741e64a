/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq_bound.h - an admission bound (limit in packets, or memory_limit in
 * bytes of skb truesize) that producers check and charge without writing a
 * line that every CPU writes per packet.
 *
 * Counted as a percpu_counter counts, but inline and with a fold the control
 * path can force: each CPU's producers add to that CPU's delta, the single
 * consumer to its own, and a delta is folded into @count with one atomic add
 * once it reaches @batch either way.  So the shared line is written once a
 * batch, and @count differs from the true backlog by less than
 * (nr_cpu_ids + 1) * batch, plus one charge per CPU caught between the two
 * steps of a fold.  @count goes below zero when the consumer folds packets
 * whose charges still sit in a producer's delta.
 *
 * The batch has a floor, so that it does not shrink toward one packet (a
 * shared write per packet) as CPUs are added or the limit lowered.  What
 * the producers' and the consumer's deltas may hide then grows, and the
 * ceiling moves up by what goes past their shares of it: the margin the
 * admission rule keeps between where refills stop and the ceiling stays
 * what it is without the floor (softmq_bound_batch()).
 *
 * Producers change their CPU's delta only with this_cpu_*() operations: each
 * is one step against interrupts and preemption, and a fold takes the delta
 * by exchange, so a fold forced by an IPI (softmq_bound_fold_this_cpu())
 * that comes between two steps of softmq_bound_charge() moves value
 * between the delta and @count without losing any or counting any twice:
 * @count plus all deltas stays exact, and no delta is left past a batch.
 *
 * Compiled into the module and into the userspace unit test
 * (tests/ring/bound.c, also built with -m32) on top of tests/ring/kshim.
 */
#ifndef _SOFTMQ_BOUND_H
#define _SOFTMQ_BOUND_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/types.h>

struct softmq_bound {
	u32		max;	/* the configured limit */
	u32		hard;	/* the ceiling: nothing gets past it */
	s32		batch;	/* fold threshold (softmq_bound_batch()) */
	atomic_long_t	count;
};

/*
 * The fold batches of limit and memory_limit (softmq_bound_batch()).  The
 * floors keep a CPU from writing the shared count more often than once in
 * 32 packets, or in 128 KiB (two 64 KiB GSO skbs), however many CPUs
 * there are: the lag grows with the CPUs instead, as percpu_counter's
 * does (its batch has the same floor of 32).  The caps matter only where
 * limit/16/nr_cpu_ids is large (few CPUs): they keep the count that
 * admission reads within a few hundred packets of the backlog there, at
 * a fold in 128 packets or 256 KiB.  At the default limits they are
 * reached below 8 CPUs (limit/16/8 is 80 packets and 256 KiB), so from 8
 * CPUs on the batch is limit/16/nr_cpu_ids, down to the floor.
 */
#define SOFTMQ_PKTS_BATCH_MIN	32U
#define SOFTMQ_PKTS_BATCH_MAX	128U
#define SOFTMQ_MEMORY_BATCH_MIN	(128U << 10)
#define SOFTMQ_MEMORY_BATCH_MAX	(256U << 10)

enum softmq_bound_level {
	SOFTMQ_BOUND_UNDER,	/* below max: admit */
	SOFTMQ_BOUND_OVER,	/* from max to hard: admit below the ring's share */
	SOFTMQ_BOUND_CEILING,	/* hard or above: refuse */
};

static inline enum softmq_bound_level
softmq_bound_level(const struct softmq_bound *b)
{
	long n = atomic_long_read(&b->count);

	/*
	 * Negative first: "long < u32" is an unsigned comparison where long
	 * is 32 bits wide, and a negative count would read as huge there.
	 */
	if (n < 0 || (unsigned long)n < READ_ONCE(b->max))
		return SOFTMQ_BOUND_UNDER;
	if ((unsigned long)n < READ_ONCE(b->hard))
		return SOFTMQ_BOUND_OVER;
	return SOFTMQ_BOUND_CEILING;
}

/*
 * Over @max, softmq_admit() admits a packet only into a ring that holds
 * less than room / rings in use (at least one packet).  The room is eight
 * times what is left below 9/8 of @max: @max at @max, nothing from 9/8 on.
 * So refills stop there in whatever order the rings refill, but for the
 * one packet an empty ring may always take, and 9/8 is below @hard by more
 * than the counting lag; with 32 packets or more a ring in use (two CPUs
 * or more) those single packets do not reach @hard either (docs/design.md,
 * "Why the share shrinks").  The shift is that 8; (9/8 max - n) * 8 < max,
 * so u32 holds it.
 */
#define SOFTMQ_BOUND_ROOM_SHIFT	3

static inline u32 softmq_bound_room(const struct softmq_bound *b)
{
	long n = atomic_long_read(&b->count);
	u32 max = READ_ONCE(b->max);
	u32 end = max + (max >> SOFTMQ_BOUND_ROOM_SHIFT);

	if (n < 0 || (unsigned long)n <= max)
		return max;
	if ((unsigned long)n >= end)
		return 0;
	return (end - (u32)n) << SOFTMQ_BOUND_ROOM_SHIFT;
}

/*
 * Between @max and @hard: may a ring that holds @len packets take one more
 * of @size units (1 for a packet count, the skb's truesize for memory),
 * with @rings in use?  Only below its share of the room, or when empty.
 * softmq_admit() asks it of both bounds, and the unit test of the refills
 * the same question.
 */
static inline bool softmq_bound_share_allows(const struct softmq_bound *b,
					     u32 rings, u32 size, u32 len)
{
	u32 share = softmq_bound_room(b) / max(rings, 1U) / max(size, 1U);

	return len < max(share, 1U);
}

/*
 * On the CPU whose delta it folds: its producer (softmq_bound_charge()),
 * an IPI, or any caller with that CPU offline.  The exchange takes what
 * is there, which may be nothing where an IPI's fold came first.
 */
static inline void softmq_bound_fold_this_cpu(struct softmq_bound *b,
					      s32 __percpu *delta)
{
	s32 v = this_cpu_xchg(*delta, 0);

	if (v)
		atomic_long_add(v, &b->count);
}

/* Producer: @n more (or, undoing a charge, fewer) on this CPU. */
static inline void softmq_bound_charge(struct softmq_bound *b,
				       s32 __percpu *delta, s32 n)
{
	s32 batch = READ_ONCE(b->batch);
	s32 v = this_cpu_add_return(*delta, n);

	/* An IPI's fold may have taken it since the add: see above. */
	if (v >= batch || v <= -batch)
		softmq_bound_fold_this_cpu(b, delta);
}

/*
 * Consumer only: @n fewer, in its own @delta.  The consumer only takes
 * away, so its delta never rises above zero and only the lower threshold
 * can be reached.
 */
static inline void softmq_bound_uncharge(struct softmq_bound *b, s32 *delta,
					 u32 n)
{
	s32 batch = READ_ONCE(b->batch);
	s32 v = *delta - (s32)n;

	if (v <= -batch) {
		atomic_long_add(v, &b->count);
		v = 0;
	}
	/* dump() reads it. */
	WRITE_ONCE(*delta, v);
}

/* Consumer only, its queue found empty: fold what it holds back. */
static inline void softmq_bound_flush(struct softmq_bound *b, s32 *delta)
{
	if (*delta) {
		atomic_long_add(*delta, &b->count);
		WRITE_ONCE(*delta, 0);
	}
}

/*
 * The fold batch and the ceiling of a limit on @nr_cpus CPUs.
 *
 * The batch is limit/16/nr_cpus, so that all producers' deltas together
 * hide less than 1/16 of the limit and the consumer's less than that over
 * nr_cpus, kept between @batch_min and @batch_max, and never above
 * limit/16, so that one CPU alone hides less than 1/16.  Where the floor
 * wins (many CPUs, or a small limit), the producers' deltas may hide up to
 * nr_cpus * (batch - 1) (the lag) and the consumer's may make the count
 * read batch - 1 high, and the ceiling moves up by what each goes past
 * those shares.  softmq_admit() stops refills of rings that hold a packet
 * where the count it reads is 9/8 of the limit, and what is left below
 * the ceiling for the single packets of empty rings (a sparse flow's) is
 * then what it is without the floor (docs/design.md, "Why the share
 * shrinks").  The backlog's bound is hard + lag + one packet per CPU
 * (the consumer's delta only makes the count read high).
 */
static inline u32 softmq_bound_batch(u32 limit, u32 batch_min, u32 batch_max,
				     unsigned int nr_cpus)
{
	u32 batch = clamp(limit / 16 / nr_cpus, batch_min, batch_max);

	return clamp(batch, 1U, max(limit / 16, 1U));
}

static inline u32 softmq_bound_hard(u32 limit, u32 batch,
				    unsigned int nr_cpus, u64 hard_max)
{
	/* A delta holds less than the batch after each charge. */
	u64 lag = (u64)nr_cpus * (batch - 1);
	u64 hard = (u64)limit + limit / 4;

	if (lag > limit / 16)
		hard += lag - limit / 16;
	if (batch - 1 > limit / 16 / nr_cpus)
		hard += batch - 1 - limit / 16 / nr_cpus;
	return (u32)min(hard, hard_max);
}

/*
 * Producers read the three fields without a lock and may see a mix of old
 * and new ones for a moment; each mix still admits within the larger of
 * the two limits' bounds.  Lowering a limit drops nothing queued: new
 * packets are refused until the backlog falls below it.  Returns true when
 * the batch shrank: each CPU's delta may then hold up to the old batch,
 * more than the new bound allows for, and the caller must fold them all
 * (softmq_bound_fold_this_cpu() on each CPU).
 */
static inline bool softmq_bound_set(struct softmq_bound *b, u32 max,
				    u32 batch_min, u32 batch_max,
				    unsigned int nr_cpus)
{
	u64 hard_max = U32_MAX;
	u32 batch, hard;
	bool shrank;

	/*
	 * @count is a long: with 32-bit longs a memory_limit near its 2 GiB
	 * maximum would put hard past LONG_MAX, where the count wraps
	 * negative and reads as under.  Queued skb memory cannot come near
	 * that on such a kernel; keep the arithmetic sound anyway, and keep
	 * hard at 5/4 of max or more (so 9/8 of it, softmq_bound_room(),
	 * below hard) by capping max, with hard at most LONG_MAX / 2 (which
	 * may take back some of the floor's raise there, and only there).
	 */
#if BITS_PER_LONG == 32
	if (max > LONG_MAX / 2 / 5 * 4)
		max = LONG_MAX / 2 / 5 * 4;
	hard_max = LONG_MAX / 2;
#endif
	batch = softmq_bound_batch(max, batch_min, batch_max, nr_cpus);
	hard = softmq_bound_hard(max, batch, nr_cpus, hard_max);
	shrank = (s32)batch < READ_ONCE(b->batch);
	WRITE_ONCE(b->max, max);
	WRITE_ONCE(b->hard, hard);
	WRITE_ONCE(b->batch, (s32)batch);
	return shrank;
}

#endif /* _SOFTMQ_BOUND_H */
