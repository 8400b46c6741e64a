/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq_ring.h - bounded lockless MPSC ring and the "ring has work" marking.
 *
 * This one header is compiled into the kernel module and into the userspace
 * unit tests, stress tests, fuzzer and benchmark (tests/ring/), which
 * provide the kernel API it uses (tests/ring/kshim/), so what is tested is
 * what runs.
 *
 * Roles
 *   producer: any CPU, any number at once (softmq_enqueue, BH disabled; on
 *             PREEMPT_RT several tasks on one CPU may be inside at once).
 *   consumer: exactly one at a time (softmq_dequeue under qdisc seqlock).
 *
 * Ring state
 *   tail  = (claimed << 1) | SOFTMQ_RING_IDLE.  Producers claim position
 *           "claimed" with a cmpxchg that also clears IDLE; the consumer sets
 *           IDLE with a cmpxchg only when nothing is claimed beyond head.
 *   head  = next position the consumer will take; written by the consumer
 *           only (release), read by producers only when they look full.
 *   slot[pos & mask] = item, or NULL when free or claimed-but-unpublished.
 *
 * Spill: the ring is the fast path, not a cap.  Every push claims a
 * position first; one whose position does not fit in the slots (the
 * consumer is more than depth behind) pushes its item, tagged with that
 * position, onto the ring's spill stack instead (one cmpxchg; an item
 * lends the ring its first two words while it is queued: struct
 * softmq_spill, an skb's list linkage).  The consumer takes position head
 * from its slot, or else from the spilled items, which it takes off the
 * stack in batches and keeps sorted by position: one order, the claims',
 * across both, so a serialised sender's items leave in order whatever
 * the ring's depth.  A position's item is in its slot or spilled, decided
 * once by its producer: slot[pos & mask] is only written for a position
 * that fits, i.e. after the consumer has taken every position before it.
 *
 * Who blocks whom: a producer stalled between its cmpxchg and its slot store
 * leaves a NULL slot at the consumer's head; softmq_ring_pop() then returns
 * NULL without waiting and the consumer moves on to other rings.  Only that
 * ring's later items wait (FIFO), and the stalled producer's own qdisc_run
 * after publishing picks them up.  Producers never wait for each other
 * beyond a cmpxchg retry.
 *
 * The empty -> non-empty edge: the producer whose cmpxchg cleared IDLE gets
 * SOFTMQ_PUSH_WOKE and must mark the ring active (set_bit() in the band's
 * bitmap).  The mark is not ordered after the slot's publish: a consumer
 * may see the mark first, find the slot NULL, fail to retire (the tail
 * holds the claim) and move on; the producer runs the qdisc.  The
 * consumer unmarks a drained ring with softmq_ring_retire(): clear the mark,
 * then cmpxchg IDLE in; the cmpxchg is fully ordered, so a producer that sees
 * IDLE re-marks after our clear.  After marking, the producer notes the
 * band in a hint word (softmq_band_note) that lets the consumer skip an
 * empty band without a scan; the consumer clears a hint only after a scan
 * found no mark, and scans once more after the clear (softmq_band_clear_hint).
 * The same word has a WOKE bit per band, set beside the hint, that the
 * consumer takes before it looks for rings it has not met yet
 * (softmq_band_woke_take).  A bitmap of 2..BITS_PER_LONG words has a
 * summary word before it, a bit per word that may hold a mark
 * (softmq_active_mark, softmq_active_summary_drop), so that the
 * consumer's looks read those words only.  No producer writes shared
 * state on every packet except the ring it pushes to.
 */
#ifndef _SOFTMQ_RING_H
#define _SOFTMQ_RING_H

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/cache.h>
#include <linux/compiler.h>
#include <linux/find.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/types.h>

/* ---- the ring ----------------------------------------------------------- */

#define SOFTMQ_RING_IDLE	1L
/* Positions live in tail's upper bits: compare them modulo this mask. */
#define SOFTMQ_RING_POS_MASK	(ULONG_MAX >> 1)

/*
 * The first two words of an item, the ring's while the item is queued and
 * spilled (an skb's next and prev); zero again when it is popped.
 */
struct softmq_spill {
	struct softmq_spill	*next;
	unsigned long		pos;
};

struct softmq_ring {
	/* Producer line: written by every CPU that pushes to this ring. */
	____cacheline_aligned_in_smp atomic_long_t tail;
	unsigned long	head_snap;	/* a recent head; spares producers a miss */
	unsigned long	mask;		/* depth - 1, read-only after init */
	atomic_long_t	bytes_in;	/* bytes pushed (softmq_ring_account) */
	/* Spilled items, newest first; pushed only while the slots are full. */
	struct softmq_spill *spilled;

	/* Consumer line: written by the consumer only. */
	____cacheline_aligned_in_smp unsigned long head;
	unsigned long	cmask;		/* copy of mask, keeps pops off the producer line */
	long		deficit;	/* consumer-private: softmq's DRR */
	unsigned long	bytes_out;	/* bytes popped (softmq_ring_taken) */
	/*
	 * Spilled items taken off the stack, each list sorted by position:
	 * those that came after every earlier one (appended), and the few
	 * whose producer lost a race to a later position (late).
	 */
	struct softmq_spill *spill_first;
	struct softmq_spill *spill_last;
	struct softmq_spill *late_first;
	struct softmq_spill *late_last;

	____cacheline_aligned_in_smp void *slot[];
};

enum softmq_push {
	SOFTMQ_PUSH_OK,		/* queued; the ring was already active */
	SOFTMQ_PUSH_WOKE,	/* queued into an idle ring: caller marks it */
	SOFTMQ_PUSH_SPILLED,	/* queued beyond the slots; the ring was active */
};

static inline size_t softmq_ring_bytes(unsigned int depth)
{
	return sizeof(struct softmq_ring) + (size_t)depth * sizeof(void *);
}

/*
 * @depth must be a power of two.  Slots must already be zeroed (kzalloc).
 * A new ring is idle and unmarked.
 */
static inline void softmq_ring_init(struct softmq_ring *r, unsigned int depth)
{
	atomic_long_set(&r->tail, SOFTMQ_RING_IDLE);
	r->head_snap = 0;
	r->mask = depth - 1;
	atomic_long_set(&r->bytes_in, 0);
	r->spilled = NULL;
	r->head = 0;
	r->cmask = depth - 1;
	r->deficit = 0;
	r->bytes_out = 0;
	r->spill_first = NULL;
	r->spill_last = NULL;
	r->late_first = NULL;
	r->late_last = NULL;
}

static inline unsigned long softmq_ring_pos(long tail)
{
	return (unsigned long)tail >> 1;
}

/*
 * Producer, after its claim of @pos: true if slot[pos & mask] is free.
 * Acquire on head (and on head_snap, which only ever holds a value some
 * producer read with acquire) orders our later slot store after the
 * consumer's NULL store that freed it.  A head read before other pops is
 * only older: a position that fits then still fits.  The snapshot is
 * refreshed whether or not the position fits: while a ring spills, the
 * positions run ahead of a snapshot nobody refreshes, and one more than
 * SOFTMQ_RING_POS_MASK behind it (2^31 pushes on 32-bit) would read as
 * fitting, a slot written while the consumer is still behind it.
 */
static inline bool softmq_ring_fits(struct softmq_ring *r, unsigned long pos)
{
	unsigned long h;

	/* Acquire: pairs with the release below (another producer's). */
	if (((pos - smp_load_acquire(&r->head_snap)) & SOFTMQ_RING_POS_MASK) <=
	    r->mask)
		return true;
	/* Acquire: pairs with the consumer's release of head after a pop. */
	h = smp_load_acquire(&r->head);
	/* Release: hands on what the acquire of head ordered. */
	smp_store_release(&r->head_snap, h);
	return ((pos - h) & SOFTMQ_RING_POS_MASK) <= r->mask;
}

/*
 * Producer: @pos does not fit; hand @item to the consumer on the spill
 * stack (llist_add()).  The cmpxchg is fully ordered: the consumer's xchg
 * that takes the stack sees next and pos.
 */
static inline void softmq_ring_spill(struct softmq_ring *r, void *item,
				     unsigned long pos)
{
	struct softmq_spill *s = item;
	struct softmq_spill *first = READ_ONCE(r->spilled);

	s->pos = pos;
	do {
		s->next = first;
	} while (!try_cmpxchg(&r->spilled, &first, s));
}

/*
 * Producer.  Safe from any number of contexts at once.  *retries counts lost
 * cmpxchg races (contention on this ring).  Never refuses: a push that
 * finds the slots full spills (SOFTMQ_PUSH_SPILLED); what a ring may hold
 * is the caller's to bound.  A push into an idle ring always fits (IDLE is
 * set only when nothing is claimed beyond head).
 */
static inline enum softmq_push softmq_ring_push(struct softmq_ring *r,
						void *item,
						unsigned int *retries)
{
	long t = atomic_long_read(&r->tail);
	unsigned long pos;

	for (;;) {
		pos = softmq_ring_pos(t);
		if (atomic_long_try_cmpxchg(&r->tail, &t,
					    (long)(((pos + 1) & SOFTMQ_RING_POS_MASK) << 1)))
			break;
		(*retries)++;
	}
	if (!softmq_ring_fits(r, pos)) {
		softmq_ring_spill(r, item, pos);
		return SOFTMQ_PUSH_SPILLED;
	}
	/* Publish: pairs with the acquire in softmq_ring_pop_slot/peek. */
	smp_store_release(&r->slot[pos & r->mask], item);
	return (t & SOFTMQ_RING_IDLE) ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK;
}

/* Consumer.  Positions compare by their distance from head. */
static inline unsigned long softmq_ring_behind(const struct softmq_ring *r,
					       unsigned long pos)
{
	return (pos - r->head) & SOFTMQ_RING_POS_MASK;
}

/* Consumer: append @s to a sorted list if it goes last; false if not. */
static inline bool softmq_spill_append(struct softmq_ring *r,
				       struct softmq_spill **first,
				       struct softmq_spill **last,
				       struct softmq_spill *s)
{
	if (*first && softmq_ring_behind(r, s->pos) <
		      softmq_ring_behind(r, (*last)->pos))
		return false;
	if (*first)
		(*last)->next = s;
	else
		*first = s;
	*last = s;
	return true;
}

/* Consumer: takes the first item of @list, which is head's. */
static __always_inline void *softmq_spill_take(struct softmq_ring *r,
					       struct softmq_spill **list)
{
	struct softmq_spill *s = *list;

	*list = s->next;
	s->next = NULL;
	s->pos = 0;
	/* Release: pairs with the producers' acquire in softmq_ring_fits(). */
	smp_store_release(&r->head, (r->head + 1) & SOFTMQ_RING_POS_MASK);
	return s;
}

/*
 * Consumer: take the spill stack (llist_del_all(); the xchg is fully
 * ordered, so every item's next and pos are seen) and sort it in.
 * Producers spill in position order but for races, so the stack reversed
 * appends to the main list.  An item behind the main list's last lost a
 * race to a later position: it goes to the late list, near the end of
 * which it belongs, so that no item ever walks the main list (up to
 * limit packets long).  A walk is left only for an item behind the late
 * list's last, i.e. one that lost races to two later positions.
 */
static inline void softmq_ring_unspill(struct softmq_ring *r)
{
	struct softmq_spill *s = xchg(&r->spilled, NULL);
	struct softmq_spill *rev = NULL, *newest = s, *next, **at;
	bool sorted = true;

	while (s) {
		next = s->next;
		if (next && softmq_ring_behind(r, next->pos) >
			    softmq_ring_behind(r, s->pos))
			sorted = false;
		s->next = rev;
		rev = s;
		s = next;
	}
	/*
	 * No race among them, and all after the main list's last (a standing
	 * backlog: every push spills): one splice, not one append each.
	 */
	if (sorted && rev &&
	    (!r->spill_first || softmq_ring_behind(r, rev->pos) >
				softmq_ring_behind(r, r->spill_last->pos))) {
		if (r->spill_first)
			r->spill_last->next = rev;
		else
			r->spill_first = rev;
		r->spill_last = newest;
		return;
	}
	for (s = rev; s; s = next) {
		next = s->next;
		s->next = NULL;
		if (softmq_spill_append(r, &r->spill_first, &r->spill_last, s) ||
		    softmq_spill_append(r, &r->late_first, &r->late_last, s))
			continue;
		for (at = &r->late_first;
		     softmq_ring_behind(r, (*at)->pos) < softmq_ring_behind(r, s->pos);
		     at = &(*at)->next)
			;
		s->next = *at;
		*at = s;
	}
}

/*
 * Consumer: the list whose first item is head's spilled item, or NULL (not
 * spilled, or its producer has not pushed it yet).
 */
static inline struct softmq_spill **softmq_ring_spilled(struct softmq_ring *r)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		if (r->spill_first && r->spill_first->pos == r->head)
			return &r->spill_first;
		if (r->late_first && r->late_first->pos == r->head)
			return &r->late_first;
		if (pass || !READ_ONCE(r->spilled))
			break;
		softmq_ring_unspill(r);
	}
	return NULL;
}

/*
 * Consumer: nothing spilled, taken or not.  The test an empty pop makes
 * inline (at the end of every backlog, and per packet at low load), so
 * that only a ring that has spilled calls out of line.
 */
static inline bool softmq_ring_unspilled(const struct softmq_ring *r)
{
	return !r->spill_first && !r->late_first && !READ_ONCE(r->spilled);
}

/*
 * The spill side of peek and pop, out of line: a peek or pop that finds
 * head's item in its slot never comes here, nor a pop that finds it first
 * on the main list, nor one of a ring that has not spilled.
 */
static noinline void *softmq_ring_peek_spilled(struct softmq_ring *r)
{
	struct softmq_spill **list = softmq_ring_spilled(r);

	return list ? *list : NULL;
}

/*
 * The body of softmq_ring_pop_spilled(), for a caller whose own path to it
 * is already out of line (the qdisc's take of a spilled ring): one call
 * a spilled packet, not two.
 */
static __always_inline void *__softmq_ring_pop_spilled(struct softmq_ring *r)
{
	struct softmq_spill **list = softmq_ring_spilled(r);

	return list ? softmq_spill_take(r, list) : NULL;
}

static noinline void *softmq_ring_pop_spilled(struct softmq_ring *r)
{
	return __softmq_ring_pop_spilled(r);
}

/*
 * Consumer.  The next item, or NULL if the ring is empty or the position at
 * head is claimed by a producer that has not published (or spilled) yet.
 * A slot that holds an item holds head's: a later position of that slot
 * fits only once head has passed this one.
 */
static inline void *softmq_ring_peek(struct softmq_ring *r)
{
	void * const *slot = &r->slot[r->head & r->cmask];
	/* Acquire: pairs with the producer's publish in softmq_ring_push(). */
	void *item = smp_load_acquire(slot);

	if (item || softmq_ring_unspilled(r))
		return item;
	return softmq_ring_peek_spilled(r);
}

/*
 * Consumer.  Takes head's item if its slot holds it; NULL if not (empty,
 * in flight, or spilled).  The first part of softmq_ring_pop(), for a
 * caller that keeps the spilled part (softmq_ring_pop_spilled() or its
 * body) behind softmq_ring_unspilled(), out of its per-packet path: one must
 * make both tests after a NULL, or it strands spilled items.
 */
static inline void *softmq_ring_pop_slot(struct softmq_ring *r)
{
	unsigned long h = r->head;
	void **slot = &r->slot[h & r->cmask];
	/* Acquire: pairs with the producer's publish in softmq_ring_push(). */
	void *item = smp_load_acquire(slot);

	if (!item)
		return NULL;
	WRITE_ONCE(*slot, NULL);
	/* Release: a producer that sees the new head also sees the NULL. */
	smp_store_release(&r->head, (h + 1) & SOFTMQ_RING_POS_MASK);
	return item;
}

/*
 * Consumer, after softmq_ring_pop_slot() found head's slot empty: takes
 * head's item if it is the first of the main spill list (spill_first).
 * A ring whose backlog stays deeper than its slots spills every push, and
 * nearly all its pops end here, inline, without a call: only the one that
 * takes the next batch off the stack, or finds head's item on the late
 * list, goes on to softmq_ring_pop_spilled(), behind
 * softmq_ring_unspilled() as after softmq_ring_pop_slot().
 */
static __always_inline void *softmq_ring_pop_listed(struct softmq_ring *r)
{
	struct softmq_spill *s = r->spill_first;

	if (!s || s->pos != r->head)
		return NULL;
	return softmq_spill_take(r, &r->spill_first);
}

/*
 * Consumer.  No item at head and nothing spilled: the ring may be empty, or
 * head's push is in flight (softmq_ring_retire() tells them apart).  No
 * acquire: the item is not read.
 */
static inline bool softmq_ring_looks_empty(const struct softmq_ring *r)
{
	return !READ_ONCE(r->slot[r->head & r->cmask]) &&
	       softmq_ring_unspilled(r);
}

/* Consumer.  Takes the next item; NULL as for softmq_ring_peek(). */
static inline void *softmq_ring_pop(struct softmq_ring *r)
{
	void *item = softmq_ring_pop_slot(r);

	if (!item)
		item = softmq_ring_pop_listed(r);
	if (item || softmq_ring_unspilled(r))
		return item;
	return softmq_ring_pop_spilled(r);
}

/* Consumer.  Claimed positions not yet taken (includes unpublished ones). */
static inline unsigned long softmq_ring_count(const struct softmq_ring *r)
{
	return (softmq_ring_pos(atomic_long_read(&r->tail)) - r->head) &
	       SOFTMQ_RING_POS_MASK;
}

/*
 * Any CPU: the ring's occupancy at some instant, give or take the pushes and
 * pops running meanwhile.  Head is read first: the tail read after it can
 * only be further on, so the difference never wraps.
 */
static inline unsigned long softmq_ring_len(const struct softmq_ring *r)
{
	unsigned long head = READ_ONCE(r->head);

	return (softmq_ring_pos(atomic_long_read(&r->tail)) - head) &
	       SOFTMQ_RING_POS_MASK;
}

/*
 * Byte backlog.  A producer adds an item's size before its push (which
 * never refuses: it fills a slot or spills); the push's cmpxchg orders the
 * add before the item is published, and the consumer subtracts only after
 * its pop, so the consumer's softmq_ring_backlog() never goes below zero.
 * The add is on the producer line the push writes anyway.
 */
static inline void softmq_ring_account(struct softmq_ring *r, long bytes)
{
	atomic_long_add(bytes, &r->bytes_in);
}

/* Consumer, after popping an item of @bytes. */
static inline void softmq_ring_taken(struct softmq_ring *r, unsigned long bytes)
{
	WRITE_ONCE(r->bytes_out, r->bytes_out + bytes);
}

/* Any CPU: the bytes queued, as softmq_ring_len() counts items. */
static inline unsigned long softmq_ring_backlog(const struct softmq_ring *r)
{
	unsigned long out = READ_ONCE(r->bytes_out);
	long n = (long)((unsigned long)atomic_long_read(&r->bytes_in) - out);

	return n > 0 ? (unsigned long)n : 0;
}

/* ---- active marking ------------------------------------------------------ */

/* The bits of a one-word bitmap of @n (1..BITS_PER_LONG) bits. */
static inline unsigned long softmq_active_word(const unsigned long *map,
					       unsigned long n)
{
	return READ_ONCE(map[0]) & (~0UL >> (BITS_PER_LONG - n));
}

/*
 * Marks in more than one word and at most BITS_PER_LONG words (flows
 * 65..4096 on 64-bit, 33..1024 on 32-bit) have a summary: the word before
 * the bitmap, bit w set while word w may hold a mark.  The consumer's looks
 * (the next mark, a new ring, any other mark) read the summary and then
 * only the words it names: a ring that empties its word clears its bit,
 * so at low load key flow's 1 024 rings cost a word or two a look instead
 * of all 16.  A producer sets a word's bit on its ring's wake edge, only
 * if it is clear (the line stays shared while it is set); the consumer
 * clears it when a retire leaves the word empty.  The summary may name an
 * empty word (a look then reads it for nothing), never leave out one with
 * a mark that a look must find: see softmq_active_mark() and
 * softmq_active_summary_drop().  A bitmap of one word needs none, and one
 * of more than BITS_PER_LONG words is searched by the library, as before.
 */
static inline bool softmq_active_summed(unsigned long n)
{
	return n > BITS_PER_LONG && n <= BITS_PER_LONG * BITS_PER_LONG;
}

static inline unsigned long *softmq_active_summary(const unsigned long *map)
{
	return (unsigned long *)map - 1;
}

/*
 * Producer, on ring @idx's wake edge (or a re-mark of a ring whose waker
 * has not marked it yet): the mark, and its word in the summary.  The
 * barrier orders the mark before the summary's read: pairs with
 * softmq_active_summary_drop() (both sides store, full barrier, load): the
 * consumer's second read of the word finds our mark, or we find its clear
 * and set the bit again.  The caller notes the band next
 * (softmq_band_note()), whose barrier orders our summary store, if any,
 * before the hint's read: a consumer that cleared the hint and then reads
 * the summary sees the bit, or we see the clear and set the hint again.
 */
static inline void softmq_active_mark(unsigned long *map, unsigned long n,
				      unsigned long idx)
{
	unsigned long *summary = softmq_active_summary(map);

	set_bit(idx, map);
	if (!softmq_active_summed(n))
		return;
	/* The mark before the summary's read; pairs with _summary_drop(). */
	smp_mb__after_atomic();
	if (!test_bit(BIT_WORD(idx), summary))
		set_bit(BIT_WORD(idx), summary);
}

/*
 * Consumer, from softmq_ring_retire() once it unmarked ring @idx: if its
 * word is now empty, clear the word's bit in the summary, then read the word
 * again and set the bit back if a producer marked a ring there meanwhile
 * (its softmq_active_mark() may have read the bit still set before our
 * clear, and then relies on us).
 */
static inline void softmq_active_summary_drop(unsigned long *map,
					      unsigned long n,
					      unsigned long idx)
{
	unsigned long *summary = softmq_active_summary(map);
	unsigned long w = BIT_WORD(idx);

	if (!softmq_active_summed(n) || READ_ONCE(map[w]))
		return;
	clear_bit(w, summary);
	/* The clear before the word's second read; pairs with _active_mark(). */
	smp_mb__after_atomic();
	if (READ_ONCE(map[w]))
		set_bit(w, summary);
}

/*
 * Consumer.  The first marked ring at or after @from, or @n, in a summed
 * bitmap.  Each word is read after the summary bit that names it (an
 * address dependency: a mark published before its bit is seen with it).
 */
static inline unsigned long softmq_active_summed_next(const unsigned long *map,
						      unsigned long n,
						      unsigned long from)
{
	unsigned long first = BIT_WORD(from), s, w, bits;

	if (from >= n)
		return n;
	s = READ_ONCE(*softmq_active_summary(map)) & (~0UL << first);
	for (; s; s &= s - 1) {
		w = __ffs(s);
		bits = READ_ONCE(map[w]);
		if (w == first)
			bits &= BITMAP_FIRST_WORD_MASK(from);
		if (bits)
			return min(w * BITS_PER_LONG + __ffs(bits), n);
	}
	return n;
}

/*
 * Consumer.  First marked ring at or after @from, or @n if none.  A bitmap
 * of one word (key cpu on up to BITS_PER_LONG CPUs, small flow tables) is
 * scanned inline: the library's scan is a call per look, and the consumer
 * looks on every dequeue.
 */
static inline unsigned long softmq_active_next(const unsigned long *map,
					       unsigned long n,
					       unsigned long from)
{
	unsigned long w;

	if (n > BITS_PER_LONG)
		return softmq_active_summed(n) ?
		       softmq_active_summed_next(map, n, from) :
		       find_next_bit(map, n, from);
	if (from >= n)
		return n;
	w = softmq_active_word(map, n) & (~0UL << from);
	return w ? __ffs(w) : n;
}

/*
 * Consumer.  The first ring marked in @map and clear in @mask (a bitmap of
 * the consumer's own), or @n; one word inline, as softmq_active_next().
 */
static inline unsigned long softmq_active_first_andnot(const unsigned long *map,
						       const unsigned long *mask,
						       unsigned long n)
{
	unsigned long s, w, i;

	if (n > BITS_PER_LONG) {
		if (!softmq_active_summed(n))
			return find_next_andnot_bit(map, mask, n, 0);
		s = READ_ONCE(*softmq_active_summary(map));
		for (; s; s &= s - 1) {
			i = __ffs(s);
			w = READ_ONCE(map[i]) & ~mask[i];
			if (w)
				return min(i * BITS_PER_LONG + __ffs(w), n);
		}
		return n;
	}
	w = softmq_active_word(map, n) & ~mask[0];
	return w ? __ffs(w) : n;
}

/*
 * Consumer.  Whether a ring other than @but (< @n) is marked, in a bitmap
 * of more than one word.  Only the answer is wanted, and where it is asked
 * (a ring emptied by its pop) it is mostly no, which a scan learns by
 * searching every word: for key flow's 1024 rings, 16 words (64-bit) in
 * two library calls, one on each side of @but.  Here a summed bitmap's
 * words are the ones its summary names (at low load, @but's own and few
 * others), a larger one's every word, each a load and an OR.  Out of
 * line, as the library's scan was: inlined, its loops cost the one-word
 * callers registers.
 */
static noinline bool __softmq_active_any_but(const unsigned long *map,
					     unsigned long n,
					     unsigned long but)
{
	unsigned long last = BIT_WORD(n - 1), skip = BIT_WORD(but);
	unsigned long s, w, any;

	if (softmq_active_summed(n)) {
		s = READ_ONCE(*softmq_active_summary(map));
		for (; s; s &= s - 1) {
			w = __ffs(s);
			any = READ_ONCE(map[w]);
			if (w == skip)
				any &= ~BIT_MASK(but);
			if (w == last)
				any &= BITMAP_LAST_WORD_MASK(n);
			if (any)
				return true;
		}
		return false;
	}

	/* As the library's scans, the bits at and past @n do not count. */
	any = READ_ONCE(map[last]) & BITMAP_LAST_WORD_MASK(n);
	if (skip == last)
		any &= ~BIT_MASK(but);
	else
		any |= READ_ONCE(map[skip]) & ~BIT_MASK(but);
	for (w = 0; w < skip; w++)
		any |= READ_ONCE(map[w]);
	for (w = skip + 1; w < last; w++)
		any |= READ_ONCE(map[w]);
	return any;
}

/* Consumer.  Whether a ring other than @but (< @n) is marked. */
static inline bool softmq_active_any_but(const unsigned long *map,
					 unsigned long n, unsigned long but)
{
	if (n <= BITS_PER_LONG)
		return softmq_active_word(map, n) & ~BIT(but);
	return __softmq_active_any_but(map, n, but);
}

/*
 * Consumer.  The first marked ring at or after @from (at most @n), else the
 * first before it (one wrap), else @n: the kernel's find_next_bit_wrap().
 * A mark set behind the scan is missed as by any scan; the producer that
 * set it runs the qdisc after its push.
 */
static inline unsigned long softmq_active_next_wrap(const unsigned long *map,
						    unsigned long n,
						    unsigned long from)
{
	unsigned long w, after;

	if (n > BITS_PER_LONG) {
		if (!softmq_active_summed(n))
			return find_next_bit_wrap(map, n, from);
		w = softmq_active_summed_next(map, n, from);
		if (w < n || !from)
			return w;
		w = softmq_active_summed_next(map, n, 0);
		return w < from ? w : n;
	}
	w = softmq_active_word(map, n);
	if (!w)
		return n;
	after = from < n ? w & (~0UL << from) : 0;
	return __ffs(after ? after : w);
}

/* The first "a ring woke" bit of the hint word; the band bits are below. */
#define SOFTMQ_BAND_WOKE	8

/*
 * Band hints: one bit per band in a word beside the marks, "this band may
 * have a marked ring", so the consumer skips an empty band without scanning
 * its bitmap (flows 1024: 16 words, for each empty band on every dequeue);
 * and one per band at SOFTMQ_BAND_WOKE + band, "a ring of this band woke
 * since the consumer last took this bit to look for new ones"
 * (softmq_band_woke_take(); the consumer may meet a ring that woke
 * without taking it, and leave it set).
 *
 * Producer, after it marked a ring of @band (set_bit() on its wake edge,
 * or a helper's re-mark).  The barrier orders that mark before the hint
 * read; the read spares the store while the bit is set, so producers keep
 * the line shared.  Pairs with softmq_band_clear_hint(): both sides store,
 * full barrier, load (store buffering), so at least one sees the other:
 * the consumer's rescan finds our mark, or we find its clear and set the
 * bit again.
 */
static inline void softmq_band_note(unsigned long *hints, unsigned int band)
{
	/* Our mark before the hint read; pairs with softmq_band_clear_hint(). */
	smp_mb__after_atomic();
	if (!test_bit(band, hints))
		set_bit(band, hints);
	if (!test_bit(SOFTMQ_BAND_WOKE + band, hints))
		set_bit(SOFTMQ_BAND_WOKE + band, hints);
}

/*
 * Consumer: a ring of @band may have woken since softmq_band_woke_take()
 * last cleared the bit.  A read only; a wake after it is met by the next.
 */
static inline bool softmq_band_woke(const unsigned long *hints,
				    unsigned int band)
{
	return test_bit(SOFTMQ_BAND_WOKE + band, hints);
}

/*
 * Consumer, before it looks for rings of @band that woke (marked, not yet
 * met: new flows).  True if one may have woken since it last looked: the
 * bit is cleared, then the scan.  Both sides store, full barrier, load, as
 * for the hint: a producer that finds the bit still set marked before our
 * clear, and the scan after it finds the ring.  Backlogged rings do not
 * wake, so a busy band costs one load here instead of a scan of its
 * bitmap on every dequeue.  A ring missed here only loses its place as a
 * new flow: the round robin serves every marked ring.
 */
static inline bool softmq_band_woke_take(unsigned long *hints,
					 unsigned int band)
{
	if (!softmq_band_woke(hints, band))
		return false;
	clear_bit(SOFTMQ_BAND_WOKE + band, hints);
	/* The clear before the scan; pairs with softmq_band_note(). */
	smp_mb__after_atomic();
	return true;
}

/*
 * Consumer, after a scan of @band's marks @map found none.  Clears the hint,
 * then scans once more: a producer that marked before the clear is seen
 * here; one that marks after it sees the clear (softmq_band_note()).
 * Returns true if the band is empty and unhinted; false (hint set again) if
 * the rescan found a mark.
 */
static inline bool softmq_band_clear_hint(unsigned long *hints,
					  unsigned int band,
					  const unsigned long *map,
					  unsigned long n)
{
	clear_bit(band, hints);
	/* The clear before the rescan; pairs with softmq_band_note(). */
	smp_mb__after_atomic();
	if (softmq_active_next(map, n, 0) >= n)
		return true;
	set_bit(band, hints);
	return false;
}

/*
 * Consumer, after a pop that left ring @idx of @band looking empty
 * (softmq_ring_looks_empty()), to retire it now rather than on its next
 * visit.  softmq_band_clear_hint() with @idx left out of the rescan (it
 * is still marked): the same clear, barrier and look, paired alike with
 * softmq_band_note() and softmq_ring_seen().  True: no other ring is
 * marked and the hint is clear; the caller retires @idx and, if that
 * fails (a push in flight keeps the mark), sets the hint again.  False:
 * another ring is marked, and the hint is set again.
 */
static inline bool softmq_band_clear_hint_but(unsigned long *hints,
					      unsigned int band,
					      const unsigned long *map,
					      unsigned long n,
					      unsigned long idx)
{
	clear_bit(band, hints);
	/* The clear before the rescan; pairs with softmq_band_note(). */
	smp_mb__after_atomic();
	if (!softmq_active_any_but(map, n, idx))
		return true;
	set_bit(band, hints);
	return false;
}

/*
 * Producer, after a push that did not wake ring @idx of @band (its waker
 * may not have marked it, or noted the band, yet: IRQ, vCPU preemption,
 * PREEMPT_RT).  True if the consumer is sure to find the ring: marked,
 * its word named in a summed bitmap's summary (the consumer's looks read
 * no word the summary leaves out: W may be stopped between its mark and
 * that bit), and its band hinted.  False: the caller marks, names and
 * notes itself.
 *
 * The barrier between the two loads: a waker W marks the ring and is
 * stopped before its note; the consumer C clears the hint, full barrier,
 * rescans and (W's mark not having reached it) finds nothing.  If we see
 * W's mark we must see C's clear, or we trust a hint C has cleared: the
 * band is skipped with our packet in it, DRAINING stays clear, and the
 * bypass path may send our flow's next packet first.  That is the
 * RWC pattern: with plain loads here it is allowed on weakly ordered CPUs
 * (POWER; arm64 only through load-load reordering), forbidden once both
 * sides have a full barrier (LKMM, and x86 always).  C's is in
 * softmq_band_clear_hint().
 */
static inline bool softmq_ring_seen(const unsigned long *map, unsigned long n,
				    unsigned int idx,
				    const unsigned long *hints,
				    unsigned int band)
{
	if (!test_bit(idx, map))
		return false;
	if (softmq_active_summed(n)) {
		/*
		 * The mark read before the summary's: the word's bit may be
		 * set for another ring of the word, and a consumer that has
		 * not seen this mark yet may drop it; after the barrier, that
		 * drop's second read sees the mark.  Pairs with
		 * softmq_active_summary_drop().
		 */
		smp_mb();
		if (!test_bit(BIT_WORD(idx), softmq_active_summary(map)))
			return false;
	}
	/* The mark read before the hint read; pairs with _band_clear_hint(). */
	smp_mb();
	return test_bit(band, hints);
}

/*
 * Consumer, after softmq_ring_pop() returned NULL on marked ring @idx of
 * the @n-ring bitmap @map.  Returns true if the ring was empty and is now
 * idle and unmarked (and its summary word dropped if that left the word
 * empty): the next push gets SOFTMQ_PUSH_WOKE and marks it again.  Returns
 * false if a producer holds a claimed slot (push in flight) or pushed
 * since: the ring stays marked and that producer's own qdisc run will find
 * its item.
 */
static inline bool softmq_ring_retire(struct softmq_ring *r,
				      unsigned long *map, unsigned long n,
				      unsigned int idx)
{
	long t = atomic_long_read(&r->tail);

	if (softmq_ring_pos(t) != r->head)
		return false;
	clear_bit(idx, map);
	/*
	 * Fully ordered cmpxchg: the clear above is visible before IDLE is.
	 * A producer whose cmpxchg returns our IDLE value sets the mark after
	 * that, so the ring cannot end up holding items and unmarked.
	 */
	if (atomic_long_try_cmpxchg(&r->tail, &t, t | SOFTMQ_RING_IDLE)) {
		softmq_active_summary_drop(map, n, idx);
		return true;
	}
	set_bit(idx, map);
	return false;
}

#endif /* _SOFTMQ_RING_H */
