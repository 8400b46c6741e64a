// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for include/softmq_ring.h (cmocka, TAP output).
 *
 * Built three times by the Makefile, each over kshim/ (the kernel API):
 *   out/unit        plain -O2
 *   out/unit-asan   ASan + UBSan
 *   out/unit-kshim  with kshim's access hooks (-DRING_KSHIM), which
 *                   let a test act as "another CPU" between two steps of
 *                   push/retire (the races a single thread cannot otherwise
 *                   produce: retire's cmpxchg losing to a push, push's cmpxchg
 *                   retry, the stale-tail re-read on a full-looking ring).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

#include "ring_inc.h"

#ifdef RING_KSHIM
void (*kshim_hook)(enum kshim_ev ev, const void *addr);
#endif

static unsigned long lcg_state = 12345;
static unsigned long lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005UL + 1442695040888963407UL;
	return lcg_state >> 33;
}

/* Push that must succeed with the given result. */
static void push_expect(struct softmq_ring *r, uintptr_t n, enum softmq_push want)
{
	unsigned int retries = 0;

	assert_int_equal(softmq_ring_push(r, ITEM(n), &retries), want);
	assert_int_equal(retries, 0);
}

/* Push items 1..n into an empty ring: the first one wakes it. */
static void fill(struct softmq_ring *r, int n)
{
	int i;

	for (i = 1; i <= n; i++)
		push_expect(r, i, i == 1 ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK);
}

/* Pop items first..last, in that order. */
static void pop_expect(struct softmq_ring *r, int first, int last)
{
	int i;

	for (i = first; i <= last; i++)
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), i);
}

/* ---- layout and trivial calls --------------------------------------------- */

static void t_layout(void **state)
{
	(void)state;
	assert_int_equal(softmq_ring_bytes(0), sizeof(struct softmq_ring));
	assert_int_equal(softmq_ring_bytes(4096),
			 sizeof(struct softmq_ring) + 4096 * sizeof(void *));
	/* producer line, consumer line and slots on separate cache lines */
	assert_int_equal(offsetof(struct softmq_ring, tail), 0);
	assert_true(offsetof(struct softmq_ring, mask) < 64);
	assert_true(offsetof(struct softmq_ring, head_snap) < 64);
	assert_int_equal(offsetof(struct softmq_ring, head), 64);
	assert_int_equal(offsetof(struct softmq_ring, cmask), 64 + sizeof(long));
	assert_int_equal(offsetof(struct softmq_ring, slot) % 64, 0);
	assert_true(offsetof(struct softmq_ring, slot) >= 128);
}

static void t_pos(void **state)
{
	(void)state;
	assert_int_equal(softmq_ring_pos(SOFTMQ_RING_IDLE), 0);
	assert_int_equal(softmq_ring_pos(2), 1);
	assert_int_equal(softmq_ring_pos(3), 1);
	assert_true(softmq_ring_pos(-1L) == SOFTMQ_RING_POS_MASK);
	assert_true(softmq_ring_pos(-2L) == SOFTMQ_RING_POS_MASK);
	assert_true(softmq_ring_pos(0) == 0);
	assert_true(SOFTMQ_RING_POS_MASK == (~0UL >> 1));
}

static void t_init_empty(void **state)
{
	unsigned long map[1] = { 0 };
	struct softmq_ring *r = ring_new(8);

	(void)state;
	assert_int_equal(TAIL_LOAD(r), SOFTMQ_RING_IDLE);
	assert_int_equal(r->head, 0);
	assert_int_equal(r->head_snap, 0);
	assert_int_equal(r->mask, 7);
	assert_int_equal(r->cmask, 7);
	assert_int_equal(r->deficit, 0);
	assert_int_equal(softmq_ring_count(r), 0);
	assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	assert_null(softmq_ring_peek(r));
	assert_null(softmq_ring_pop(r));
	/* retiring an idle empty ring: true, stays idle, bit stays clear */
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	assert_int_equal(map[0], 0);
	assert_int_equal(TAIL_LOAD(r), SOFTMQ_RING_IDLE);
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	free(r);
}

static void t_reinit(void **state)
{
	struct softmq_ring *r = ring_new(4);

	(void)state;
	fill(r, 3);
	pop_expect(r, 1, 3);
	r->deficit = 77;
	softmq_ring_init(r, 4);		/* slots are NULL again: allowed */
	assert_int_equal(softmq_ring_count(r), 0);
	assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	assert_int_equal(r->deficit, 0);
	push_expect(r, 9, SOFTMQ_PUSH_WOKE);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 9);
	free(r);
}

/* ---- push / pop / peek / count -------------------------------------------- */

static void t_fifo_full_peek_count(void **state)
{
	struct softmq_ring *r = ring_new(8);
	unsigned int retries = 0;
	int i;

	(void)state;
	for (i = 1; i <= 8; i++) {
		push_expect(r, i, i == 1 ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK);
		assert_int_equal(softmq_ring_count(r), i);
		assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	}
	/* full: the next ones spill, and still count */
	for (i = 9; i <= 11; i++) {
		assert_int_equal(softmq_ring_push(r, ITEM(i), &retries),
				 SOFTMQ_PUSH_SPILLED);
		assert_int_equal(softmq_ring_count(r), i);
	}
	assert_int_equal(retries, 0);
	assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	assert_int_equal(softmq_ring_pos(TAIL_LOAD(r)), 11);
	for (i = 1; i <= 11; i++) {
		assert_int_equal(ITEM_N(softmq_ring_peek(r)), i);
		assert_int_equal(ITEM_N(softmq_ring_peek(r)), i);  /* not consumed */
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), i);
		assert_int_equal(softmq_ring_count(r), 11 - i);
		assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	}
	assert_null(r->spilled);
	assert_null(r->spill_first);
	assert_null(softmq_ring_peek(r));
	assert_null(softmq_ring_pop(r));
	assert_int_equal(r->deficit, 0);		/* consumer-private, untouched */
	free(r);
}

/* The idle->active edge: WOKE only after a successful retire. */
static void t_woke_edge(void **state)
{
	unsigned long map[1] = { 0 };
	struct softmq_ring *r = ring_new(4);

	(void)state;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	set_bit(3, map);
	push_expect(r, 2, SOFTMQ_PUSH_OK);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);
	assert_null(softmq_ring_pop(r));
	/* drained but not retired: still active, a push is not a wake-up */
	push_expect(r, 3, SOFTMQ_PUSH_OK);
	assert_false(softmq_ring_retire(r, map, BITS_PER_LONG, 3));	/* holds an item */
	assert_int_equal(map[0], 1UL << 3);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 3));
	assert_int_equal(map[0], 0);
	assert_true(TAIL_LOAD(r) & SOFTMQ_RING_IDLE);
	push_expect(r, 4, SOFTMQ_PUSH_WOKE);
	assert_false(TAIL_LOAD(r) & SOFTMQ_RING_IDLE);
	free(r);
}

static void t_capacity_1(void **state)
{
	unsigned long map[1] = { 0 };
	struct softmq_ring *r = ring_new(1);
	unsigned int retries = 0;
	int lap;

	(void)state;
	assert_int_equal(r->mask, 0);
	for (lap = 1; lap <= 1000; lap++) {
		enum softmq_push res = softmq_ring_push(r, ITEM(lap), &retries);

		assert_int_equal(res, lap % 2 ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK);
		if (res == SOFTMQ_PUSH_WOKE)
			set_bit(0, map);
		assert_int_equal(softmq_ring_push(r, ITEM(5000 + lap), &retries),
				 SOFTMQ_PUSH_SPILLED);
		assert_int_equal(softmq_ring_count(r), 2);
		assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
		assert_int_equal(ITEM_N(softmq_ring_peek(r)), lap);
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), lap);
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), 5000 + lap);
		assert_null(softmq_ring_pop(r));
		if (lap % 2 == 0)	/* retire every other lap */
			assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	}
	assert_int_equal(retries, 0);
	assert_int_equal(r->head, 2000);	/* two per lap */
	free(r);
}

static void t_capacity_4096(void **state)
{
	struct softmq_ring *r = ring_new(4096);
	unsigned int retries = 0;
	int lap, i;

	(void)state;
	for (lap = 0; lap < 3; lap++) {
		for (i = 0; i < 4096; i++)
			assert_int_not_equal(softmq_ring_push(r, ITEM(lap * 10000 + i + 1),
							      &retries),
					     SOFTMQ_PUSH_SPILLED);
		assert_int_equal(softmq_ring_count(r), 4096);
		assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
		assert_int_equal(softmq_ring_push(r, ITEM(lap * 10000 + 5000),
						  &retries),
				 SOFTMQ_PUSH_SPILLED);
		for (i = 0; i < 4096; i++)
			assert_int_equal(ITEM_N(softmq_ring_pop(r)), lap * 10000 + i + 1);
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), lap * 10000 + 5000);
		assert_null(softmq_ring_pop(r));
	}
	assert_int_equal(retries, 0);
	free(r);
}

/*
 * Random fill levels against a reference queue, many laps, from @start; up
 * to twice the depth (and 8 more) queued, so that about a third of the
 * pushes spill.
 */
static void laps_vs_reference(unsigned int depth, unsigned long start,
			      unsigned long ops)
{
	struct softmq_ring *r = ring_new(depth);
	unsigned long map[1] = { 0 };
	unsigned long qmax = 2 * depth + 8, spills = 0;
	uintptr_t *ref = calloc(qmax, sizeof(*ref));
	unsigned long rh = 0, rt = 0, next = 1, i;
	unsigned int retries = 0;
	int idle = 1, wrapped = 0;

	ring_seek(r, start, 1);
	for (i = 0; i < ops; i++) {
		unsigned long op = lcg() % 8;

		if (op < 4) {		/* push */
			enum softmq_push res;

			if (rt - rh == qmax)
				continue;
			res = softmq_ring_push(r, ITEM(next), &retries);
			if (rt - rh >= depth) {
				assert_int_equal(res, SOFTMQ_PUSH_SPILLED);
				spills++;
			} else {
				assert_int_equal(res, idle ? SOFTMQ_PUSH_WOKE :
							     SOFTMQ_PUSH_OK);
			}
			if (res == SOFTMQ_PUSH_WOKE)
				set_bit(0, map);
			idle = 0;
			ref[rt++ % qmax] = next++;
		} else if (op < 7) {	/* pop */
			void *it = softmq_ring_pop(r);

			if (rt == rh) {
				assert_null(it);
				continue;
			}
			assert_int_equal(ITEM_N(it), ref[rh++ % qmax]);
		} else {		/* peek, count, retire when empty */
			assert_int_equal(softmq_ring_count(r), rt - rh);
			assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
			if (rt == rh) {
				assert_null(softmq_ring_peek(r));
				if (!idle) {
					assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
					assert_int_equal(map[0], 0);
					idle = 1;
				}
			} else {
				assert_int_equal(ITEM_N(softmq_ring_peek(r)),
						 ref[rh % qmax]);
				if (!idle) {
					assert_false(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
					assert_int_equal(map[0], 1);
				}
			}
		}
		/* positions as the header sees them, modulo POS_MASK + 1 */
		assert_true(r->head == ((start + rh) & SOFTMQ_RING_POS_MASK));
		assert_true(softmq_ring_pos(TAIL_LOAD(r)) ==
			    ((start + rt) & SOFTMQ_RING_POS_MASK));
		if (r->head < start)
			wrapped = 1;
	}
	assert_int_equal(retries, 0);
	assert_true(spills > 0);
	if (start > SOFTMQ_RING_POS_MASK - 16)
		assert_true(wrapped);	/* the run did cross the wrap */
	free(ref);
	free(r);
}

static void t_many_laps(void **state)
{
	(void)state;
	laps_vs_reference(4, 0, 200000);	/* ~25000 laps */
	laps_vs_reference(1, 0, 20000);
	laps_vs_reference(64, 0, 100000);
}

static void t_wrap_pos_mask(void **state)
{
	unsigned long d;

	(void)state;
	for (d = 1; d <= 4096; d *= 4)
		laps_vs_reference(d, SOFTMQ_RING_POS_MASK - d - 3, 20 * d + 1000);
	laps_vs_reference(4096, SOFTMQ_RING_POS_MASK - 5, 40000);
	laps_vs_reference(8, SOFTMQ_RING_POS_MASK, 1000);	/* next push wraps */
}

/* Full exactly at depth across the wrap (then spills), positions restart at 0. */
static void t_wrap_full_exact(void **state)
{
	struct softmq_ring *r = ring_new(4);
	unsigned long map[1] = { 0 };
	unsigned int retries = 0;

	(void)state;
	ring_seek(r, SOFTMQ_RING_POS_MASK - 1, 1);
	fill(r, 4);
	assert_int_equal(softmq_ring_pos(TAIL_LOAD(r)), 2);	/* wrapped */
	assert_int_equal(softmq_ring_count(r), 4);
	assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	assert_int_equal(softmq_ring_push(r, ITEM(5), &retries), SOFTMQ_PUSH_SPILLED);
	assert_int_equal(softmq_ring_push(r, ITEM(6), &retries), SOFTMQ_PUSH_SPILLED);
	assert_int_equal(softmq_ring_pos(TAIL_LOAD(r)), 4);
	pop_expect(r, 1, 6);
	assert_null(softmq_ring_pop(r));
	assert_int_equal(r->head, 4);
	set_bit(0, map);
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	assert_int_equal(TAIL_LOAD(r), (4 << 1) | SOFTMQ_RING_IDLE);
	free(r);
}

/* head_snap spares producers the consumer's line and is refreshed lazily. */
static void t_head_snap(void **state)
{
	struct softmq_ring *r = ring_new(4);
	unsigned int retries = 0;

	(void)state;
	fill(r, 4);
	assert_int_equal(SNAP_LOAD(r), 0);
	softmq_ring_pop(r);
	softmq_ring_pop(r);
	assert_int_equal(SNAP_LOAD(r), 0);		/* consumer never writes it */
	push_expect(r, 5, SOFTMQ_PUSH_OK);		/* looked full: read head */
	assert_int_equal(SNAP_LOAD(r), 2);
	push_expect(r, 6, SOFTMQ_PUSH_OK);		/* 5-2 < 4: snap suffices */
	assert_int_equal(softmq_ring_push(r, ITEM(7), &retries), SOFTMQ_PUSH_SPILLED);
	assert_int_equal(SNAP_LOAD(r), 2);
	pop_expect(r, 3, 7);

	/* a stale snapshot from before the wrap of the position space */
	ring_seek(r, 5, 0);
	r->head_snap = SOFTMQ_RING_POS_MASK - 10;
	push_expect(r, 8, SOFTMQ_PUSH_OK);
	assert_int_equal(SNAP_LOAD(r), 5);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 8);
	assert_int_equal(retries, 0);
	free(r);
}

/* A producer stalled between its claim and its publish (emulated: the claim
 * is the cmpxchg push does, the publish its release store). */
static void claim(struct softmq_ring *r, unsigned long *pos, int *woke)
{
	long t = TAIL_LOAD(r);

	*pos = softmq_ring_pos(t);
	*woke = t & SOFTMQ_RING_IDLE;
	TAIL_STORE(r, (long)(((*pos + 1) & SOFTMQ_RING_POS_MASK) << 1));
}

static void t_unpublished_head(void **state)
{
	struct softmq_ring *r = ring_new(4);
	unsigned long map[1] = { 0 }, pos;
	int woke;

	(void)state;
	claim(r, &pos, &woke);
	assert_true(woke);
	push_expect(r, 2, SOFTMQ_PUSH_OK);	/* behind the stalled one */
	set_bit(0, map);		/* as the stalled one will */
	assert_int_equal(softmq_ring_count(r), 2);	/* includes the claim */
	assert_int_equal(softmq_ring_len(r), softmq_ring_count(r));
	assert_null(softmq_ring_peek(r));	/* FIFO: nothing skips it */
	assert_null(softmq_ring_pop(r));
	/* retire failure case 1: a claimed slot at head -> false, mark kept */
	assert_false(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	assert_int_equal(map[0], 1);
	assert_false(TAIL_LOAD(r) & SOFTMQ_RING_IDLE);
	__atomic_store_n(&r->slot[pos & r->mask], ITEM(1), __ATOMIC_RELEASE);
	assert_int_equal(ITEM_N(softmq_ring_peek(r)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	assert_int_equal(map[0], 0);
	free(r);
}

/*
 * The claimed-but-unpublished position also counts against the slots: the
 * pushes behind it spill, and nothing overtakes it, whether it lands in
 * its slot or spills itself.
 */
static void t_unpublished_full(void **state)
{
	struct softmq_ring *r = ring_new(2);
	unsigned int retries = 0;
	unsigned long pos;
	int woke;

	(void)state;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	claim(r, &pos, &woke);
	assert_false(woke);
	assert_int_equal(softmq_ring_push(r, ITEM(3), &retries), SOFTMQ_PUSH_SPILLED);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_null(softmq_ring_pop(r));	/* 2 unpublished: 3 waits */
	assert_null(softmq_ring_peek(r));
	assert_true(softmq_ring_fits(r, pos));
	__atomic_store_n(&r->slot[pos & r->mask], ITEM(2), __ATOMIC_RELEASE);
	push_expect(r, 4, SOFTMQ_PUSH_SPILLED);	/* 3 - head 1 > mask */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 4);
	assert_null(softmq_ring_pop(r));

	/* the stalled one spills: its position had no slot when it looked */
	push_expect(r, 5, SOFTMQ_PUSH_OK);
	push_expect(r, 6, SOFTMQ_PUSH_OK);
	claim(r, &pos, &woke);
	assert_false(softmq_ring_fits(r, pos));
	assert_int_equal(softmq_ring_push(r, ITEM(8), &retries), SOFTMQ_PUSH_SPILLED);
	pop_expect(r, 5, 6);
	assert_null(softmq_ring_pop(r));	/* 7 not spilled yet */
	softmq_ring_spill(r, ITEM(7), pos);
	pop_expect(r, 7, 8);
	assert_null(softmq_ring_pop(r));
	assert_int_equal(retries, 0);
	free(r);
}

/*
 * Spilled items pushed out of position order (two producers racing between
 * claim and spill) still leave in position order, and a slot that fits
 * again takes the positions after them.
 */
static void t_spill_out_of_order(void **state)
{
	struct softmq_ring *r = ring_new(1);
	unsigned long p2, p3, p4;
	int woke;

	(void)state;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	claim(r, &p2, &woke);
	claim(r, &p3, &woke);
	claim(r, &p4, &woke);
	softmq_ring_spill(r, ITEM(4), p4);
	softmq_ring_spill(r, ITEM(2), p2);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);
	assert_null(softmq_ring_pop(r));	/* 3 is late */
	softmq_ring_spill(r, ITEM(3), p3);
	assert_int_equal(ITEM_N(softmq_ring_peek(r)), 3);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
	push_expect(r, 5, SOFTMQ_PUSH_SPILLED);	/* 4 still queued: no slot */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 4);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 5);
	push_expect(r, 6, SOFTMQ_PUSH_OK);	/* drained: the slot again */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 6);
	assert_null(softmq_ring_pop(r));
	/* popped items' spill words are zero again */
	assert_null(((struct test_item *)ITEM(4))->spill.next);
	assert_int_equal(((struct test_item *)ITEM(4))->spill.pos, 0);
	free(r);
}

/*
 * A one-slot ring with item 1 in its slot and positions 2..@last claimed
 * by stalled producers (p[i]): every one of them spills when it goes on.
 */
static struct softmq_ring *ring_claimed(unsigned long *p, int last)
{
	struct softmq_ring *r = ring_new(1);
	int woke, i;

	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	for (i = 2; i <= last; i++)
		claim(r, &p[i], &woke);
	return r;
}

/*
 * Late spills across batches: 5, 3, 4 in one batch (3 and 4 lost races to
 * 5: the late list), then 2 in the next, behind the late list's last: the
 * walk.  All leave in position order.
 */
static void t_spill_late_walk(void **state)
{
	unsigned long p[6];
	struct softmq_ring *r = ring_claimed(p, 5);

	(void)state;
	softmq_ring_spill(r, ITEM(5), p[5]);
	softmq_ring_spill(r, ITEM(3), p[3]);
	softmq_ring_spill(r, ITEM(4), p[4]);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_null(softmq_ring_pop(r));	/* 2 not spilled yet: the batch is taken */
	assert_non_null(r->late_first);		/* 3 and 4 behind 5 */
	assert_int_equal(ITEM_N(r->late_first), 3);
	assert_int_equal(ITEM_N(r->late_last), 4);
	softmq_ring_spill(r, ITEM(2), p[2]);
	pop_expect(r, 2, 5);
	assert_null(softmq_ring_pop(r));
	assert_null(r->spill_first);
	assert_null(r->late_first);
	free(r);
}

/*
 * A batch taken off the stack in order and after the main list's last is
 * spliced on whole (softmq_ring_unspill()); one that is in order but
 * starts behind that last, or holds a race, goes item by item.  Either
 * way every item leaves in position order.
 */
static void t_spill_splice(void **state)
{
	unsigned long p[9];
	struct softmq_ring *r = ring_claimed(p, 8);

	(void)state;
	/* 3, 4: in order, a batch of its own; then 5, 6 after them */
	softmq_ring_spill(r, ITEM(3), p[3]);
	softmq_ring_spill(r, ITEM(4), p[4]);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_null(softmq_ring_pop(r));	/* 2 not spilled: batch taken */
	assert_int_equal(ITEM_N(r->spill_first), 3);
	assert_int_equal(ITEM_N(r->spill_last), 4);
	assert_null(r->spill_last->next);
	softmq_ring_spill(r, ITEM(5), p[5]);
	softmq_ring_spill(r, ITEM(6), p[6]);
	assert_null(softmq_ring_pop(r));	/* spliced after 4 */
	assert_int_equal(ITEM_N(r->spill_last), 6);
	assert_null(r->late_first);
	/* 2, in order but behind 6: the late list, not a splice */
	softmq_ring_spill(r, ITEM(2), p[2]);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);
	assert_int_equal(ITEM_N(r->spill_last), 6);
	/* 8 then 7: a race within the batch, item by item */
	softmq_ring_spill(r, ITEM(8), p[8]);
	softmq_ring_spill(r, ITEM(7), p[7]);
	pop_expect(r, 3, 8);
	assert_null(softmq_ring_pop(r));
	assert_null(r->spill_first);
	assert_null(r->late_first);
	free(r);
}

/*
 * A push that spills still refreshes head_snap: while a ring spills no
 * push fits, and a snapshot nobody refreshed would, 2^63 positions (2^31
 * on 32-bit) later, make a spilling position look as if it fitted.
 */
static void t_spill_refreshes_snap(void **state)
{
	struct softmq_ring *r = ring_new(2);

	(void)state;
	fill(r, 2);				/* positions 0, 1 */
	push_expect(r, 3, SOFTMQ_PUSH_SPILLED);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 2);	/* head 2 */
	assert_int_equal(SNAP_LOAD(r), 0);
	push_expect(r, 4, SOFTMQ_PUSH_OK);	/* 3 - 2 fits, snap 2 */
	push_expect(r, 5, SOFTMQ_PUSH_SPILLED);	/* 4 - 2 does not */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);	/* head 3 */
	push_expect(r, 6, SOFTMQ_PUSH_SPILLED);	/* 5 - 3 does not */
	assert_int_equal(SNAP_LOAD(r), 3);	/* refreshed by a spill */
	pop_expect(r, 4, 6);
	assert_null(softmq_ring_pop(r));
	free(r);
}

/* ---- active bitmap ---------------------------------------------------------- */

static unsigned long naive_next(const unsigned long *map, unsigned long n,
				unsigned long from)
{
	for (; from < n; from++)
		if (map[from / BITS_PER_LONG] & (1UL << (from % BITS_PER_LONG)))
			return from;
	return n;
}

/*
 * The summary word before @map (softmq_active_summary()) made to name the
 * words of [0, @n) with a mark, or with @all every word: a summary may name
 * an empty word, never leave out one with a mark.
 */
static void summarize(unsigned long *map, unsigned long n, bool all)
{
	unsigned long w, *summary = softmq_active_summary(map);

	*summary = 0;
	for (w = 0; w < BITS_TO_LONGS(n) && w < BITS_PER_LONG; w++)
		if (all || map[w])
			*summary |= 1UL << w;
}

/* A retire's two steps on the marks: the bit, then the summary. */
static void unmark(unsigned long *map, unsigned long n, unsigned long idx)
{
	clear_bit(idx, map);
	softmq_active_summary_drop(map, n, idx);
}

/* softmq_active_any_but(), or for @but >= @n any mark (a scan from 0). */
static bool any_but(const unsigned long *map, unsigned long n, unsigned long but)
{
	return but < n ? softmq_active_any_but(map, n, but) :
			 softmq_active_next(map, n, 0) < n;
}

static void t_active_bitmap(void **state)
{
	static const unsigned int bits[] = { 0, 1, 63, 64, 127, 128, 149 };
	unsigned long words[1 + 3] = { 0 }, *map = words + 1;
	unsigned long n = 150, from, i;
	struct softmq_ring *r = ring_new(2);

	(void)state;
	assert_int_equal(softmq_active_next(map, n, 0), n);
	assert_int_equal(softmq_active_next(map, n, 149), n);
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		softmq_active_mark(map, n, bits[i]);
	softmq_active_mark(map, n, 64);	/* idempotent */
	assert_int_equal(words[0], 7UL);
	assert_int_equal(map[0], 3UL | (1UL << 63));
	assert_int_equal(map[1], 1UL | (1UL << 63));
	assert_int_equal(map[2], 1UL | (1UL << 21));
	for (from = 0; from <= n; from++)
		assert_int_equal(softmq_active_next(map, n, from),
				 naive_next(map, n, from));
	assert_int_equal(softmq_active_next(map, n, 2), 63);
	assert_int_equal(softmq_active_next(map, n, 65), 127);
	assert_int_equal(softmq_active_next(map, n, 129), 149);
	assert_int_equal(softmq_active_next(map, n, 150), n);

	/* bits past n in the last word are never reported */
	map[2] |= ~0UL << 22;
	assert_int_equal(softmq_active_next(map, n, 149), 149);
	assert_int_equal(softmq_active_next(map, n, 150), n);
	assert_int_equal(softmq_active_next(map, 149, 130), 149);	/* n=149 */
	map[2] &= ~(~0UL << 22);

	/*
	 * retire clears exactly its own bit, at word boundaries; the summary
	 * names a word while it holds a mark
	 */
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		unsigned long before[3], w = bits[i] / BITS_PER_LONG;

		memcpy(before, map, sizeof(before));
		assert_true(softmq_ring_retire(r, map, n, bits[i]));
		before[w] &= ~(1UL << (bits[i] % BITS_PER_LONG));
		assert_memory_equal(map, before, sizeof(before));
		assert_int_equal(words[0] >> w & 1, !!map[w]);
	}
	assert_int_equal(map[0] | map[1] | map[2], 0);
	assert_int_equal(words[0], 0);
	assert_int_equal(softmq_active_next(map, n, 0), n);

	/* a ring that holds an item is not retired: mark and word stay */
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	softmq_active_mark(map, n, 130);
	assert_false(softmq_ring_retire(r, map, n, 130));
	assert_int_equal(map[2], 1UL << 2);
	assert_int_equal(words[0], 1UL << 2);
	assert_ptr_equal(softmq_ring_pop(r), ITEM(1));
	assert_null(softmq_ring_pop(r));
	assert_true(softmq_ring_retire(r, map, n, 130));
	assert_int_equal(map[2] | words[0], 0);

	/* n exactly one and two words, n = 1 */
	set_bit(63, map);
	assert_int_equal(softmq_active_next(map, 64, 0), 63);
	assert_int_equal(softmq_active_next(map, 63, 0), 63);	/* = n */
	assert_int_equal(softmq_active_next(map, 128, 64), 128);
	softmq_active_mark(map, 128, 127);
	assert_int_equal(softmq_active_next(map, 128, 64), 127);
	set_bit(0, map);
	assert_int_equal(softmq_active_next(map, 1, 0), 0);
	assert_int_equal(softmq_active_next(map, 1, 1), 1);
	free(r);
}

static void t_active_random(void **state)
{
	unsigned long words[1 + 5], *map = words + 1;
	int round;

	(void)state;
	for (round = 0; round < 2000; round++) {
		unsigned long n = 1 + lcg() % (5 * BITS_PER_LONG), from, i;
		unsigned long density = lcg() % 4;

		memset(words, 0, sizeof(words));
		for (i = 0; i < n; i++)
			if (density && lcg() % (density * 8) == 0)
				set_bit(i, map);
		if (round % 3 == 0) {	/* junk past n, in n's last word too */
			map[4] |= ~0UL << 1;
			if (n % BITS_PER_LONG)
				map[(n - 1) / BITS_PER_LONG] |=
					~0UL << (n % BITS_PER_LONG);
		}
		/* summed from 65 bits: exact, or naming every word */
		summarize(map, n, round % 5 == 1);
		for (from = 0; from <= n; from++) {
			unsigned long want = naive_next(map, n, from);

			assert_int_equal(softmq_active_next(map, n, from), want);
			/* one wrap: [from, n), then [0, from) */
			if (want == n && from) {
				want = naive_next(map, from, 0);
				if (want == from)
					want = n;
			}
			assert_int_equal(softmq_active_next_wrap(map, n, from), want);
		}
		/* marked and not in a second bitmap (the consumer's "known") */
		{
			unsigned long known[5], want = n;

			for (i = 0; i < 5; i++)
				known[i] = lcg() & lcg();
			for (i = 0; i < n; i++)
				if (softmq_active_next(map, n, i) == i &&
				    !(known[i / BITS_PER_LONG] >> (i % BITS_PER_LONG) & 1)) {
					want = i;
					break;
				}
			assert_int_equal(softmq_active_first_andnot(map, known, n), want);
		}
		/* any ring but one marked, junk past n or not */
		{
			unsigned long marked = 0, but;

			for (i = 0; i < n; i++)
				marked += naive_next(map, n, i) == i;
			for (but = 0; but <= n; but++)
				assert_int_equal(any_but(map, n, but),
						 marked > (but < n &&
							   naive_next(map, n, but) == but));
		}
	}
}

/* One mark, or two, against every ring left out, across word boundaries. */
static void t_active_any_but(void **state)
{
	static const unsigned long sizes[] = { 1, 2, 63, 64, 65, 128, 150, 320 };
	unsigned long words[1 + BITS_TO_LONGS(320)], *map = words + 1;
	unsigned long s, b, b2, but;

	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned long n = sizes[s];

		memset(words, 0, sizeof(words));
		for (but = 0; but <= n; but++)
			assert_false(any_but(map, n, but));
		for (b = 0; b < n; b++) {
			softmq_active_mark(map, n, b);
			for (but = 0; but <= n; but++)
				assert_int_equal(any_but(map, n, but),
						 but != b);
			/* a second mark in another word, or the same one */
			b2 = (b + BITS_PER_LONG) % n;
			if (b2 != b) {
				softmq_active_mark(map, n, b2);
				for (but = 0; but <= n; but++)
					assert_true(any_but(map, n, but));
				unmark(map, n, b2);
			}
			unmark(map, n, b);
			assert_int_equal(words[0], 0);
		}
	}
}

/*
 * The summary of a bitmap of 2..BITS_PER_LONG words: a mark names its
 * word, a retire that leaves the word empty clears it, and the looks read
 * only the words it names.  None for one word or for more than
 * BITS_PER_LONG words, whose looks read every word.
 */
static void t_active_summary(void **state)
{
	unsigned long words[1 + BITS_PER_LONG + 1] = { 0 }, *map = words + 1;
	unsigned long known[BITS_PER_LONG + 1] = { 0 };
	unsigned long n;

	(void)state;
	softmq_active_mark(map, 150, 3);
	assert_int_equal(words[0], 1UL);
	softmq_active_mark(map, 150, 70);
	softmq_active_mark(map, 150, 71);
	assert_int_equal(words[0], 3UL);
	unmark(map, 150, 70);			/* 71 still marked: kept */
	assert_int_equal(words[0], 3UL);
	unmark(map, 150, 71);
	assert_int_equal(words[0], 1UL);

	/* a mark its word's bit does not name yet is not looked at */
	set_bit(130, map);
	assert_int_equal(softmq_active_next(map, 150, 4), 150);
	assert_int_equal(softmq_active_next_wrap(map, 150, 4), 3);
	assert_false(softmq_active_any_but(map, 150, 3));
	set_bit(3, known);
	assert_int_equal(softmq_active_first_andnot(map, known, 150), 150);
	/* named, even with nothing else in the word */
	softmq_active_mark(map, 150, 130);
	assert_int_equal(words[0], 5UL);
	assert_int_equal(softmq_active_next(map, 150, 4), 130);
	assert_true(softmq_active_any_but(map, 150, 3));
	assert_int_equal(softmq_active_first_andnot(map, known, 150), 130);
	assert_int_equal(softmq_active_next_wrap(map, 150, 131), 3);
	/* an empty word named costs a read, and finds nothing */
	unmark(map, 150, 130);
	words[0] |= 2UL;
	assert_int_equal(softmq_active_next(map, 150, 4), 150);
	assert_false(softmq_active_any_but(map, 150, 3));
	unmark(map, 150, 3);
	assert_int_equal(words[0], 2UL);	/* only a retire in it clears it */
	words[0] = 0;

	/* the widest summed bitmap: its last word is the summary's last bit */
	n = BITS_PER_LONG * BITS_PER_LONG;
	softmq_active_mark(map, n, n - 1);
	assert_int_equal(words[0], 1UL << (BITS_PER_LONG - 1));
	assert_int_equal(softmq_active_next(map, n, 0), n - 1);
	assert_int_equal(softmq_active_next_wrap(map, n, n - 1), n - 1);
	assert_int_equal(softmq_active_next_wrap(map, n, n), n - 1);	/* from = n */
	assert_int_equal(softmq_active_next(map, n, n), n);
	assert_false(softmq_active_any_but(map, n, n - 1));
	unmark(map, n, n - 1);
	assert_int_equal(words[0], 0);

	/* one word, and one word more than summed: no summary */
	softmq_active_mark(map, BITS_PER_LONG, 5);
	assert_int_equal(words[0], 0);
	n = BITS_PER_LONG * BITS_PER_LONG + 1;
	softmq_active_mark(map, n, n - 1);
	assert_int_equal(words[0], 0);
	assert_int_equal(softmq_active_next(map, n, 0), 5);
	assert_int_equal(softmq_active_next(map, n, 6), n - 1);
	assert_true(softmq_active_any_but(map, n, 5));
	unmark(map, n, n - 1);
	unmark(map, BITS_PER_LONG, 5);
	assert_int_equal(words[0], 0);
	assert_int_equal(softmq_active_next(map, n, 0), n);
}

/* Band hints: note sets, test_bit reads, clear_hint clears an unmarked band's. */
static void t_band_hints(void **state)
{
	unsigned long hints = 0, words[1 + 2] = { 0 }, *map = words + 1;

	(void)state;
	assert_false(test_bit(0, &hints));
	softmq_band_note(&hints, 1);
	assert_true(test_bit(1, &hints));
	assert_false(test_bit(0, &hints));
	softmq_band_note(&hints, 1);			/* already set: unchanged */
	assert_int_equal(hints, 2UL | 1UL << (SOFTMQ_BAND_WOKE + 1));

	/* nothing marked: hint cleared; the woke bit is the scan's */
	assert_true(softmq_band_clear_hint(&hints, 1, map, 100));
	assert_int_equal(hints, 1UL << (SOFTMQ_BAND_WOKE + 1));
	assert_false(softmq_band_woke_take(&hints, 0));
	assert_true(softmq_band_woke(&hints, 1));	/* a look takes nothing */
	assert_false(softmq_band_woke(&hints, 0));
	assert_true(softmq_band_woke_take(&hints, 1));	/* taken once */
	assert_false(softmq_band_woke(&hints, 1));
	assert_false(softmq_band_woke_take(&hints, 1));
	assert_int_equal(hints, 0);
	/* a wake after the take sets it again, the hint too */
	softmq_band_note(&hints, 1);
	assert_true(softmq_band_woke_take(&hints, 1));
	assert_int_equal(hints, 2);
	assert_true(softmq_band_clear_hint(&hints, 1, map, 100));

	/* a mark anywhere in [0, n): kept, hint set again */
	softmq_band_note(&hints, 2);
	softmq_active_mark(map, 100, 99);
	assert_false(softmq_band_clear_hint(&hints, 2, map, 100));
	assert_true(test_bit(2, &hints));
	/* a mark at or past n does not count */
	assert_true(softmq_band_clear_hint(&hints, 2, map, 99));
	assert_false(test_bit(2, &hints));
}

/*
 * The retire at a pop that emptied its ring: clear_hint_but() leaves the
 * popped ring out of its look, one-word and multi-word maps alike.
 */
static void t_band_hint_but(void **state)
{
	unsigned long hints = 0, words[1 + 2] = { 0 }, *map = words + 1;

	(void)state;
	set_bit(3, map);
	softmq_band_note(&hints, 0);
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 10, 3));
	assert_false(test_bit(0, &hints));
	set_bit(7, map);				/* another ring: kept */
	assert_false(softmq_band_clear_hint_but(&hints, 0, map, 10, 3));
	assert_true(test_bit(0, &hints));
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 7, 3));	/* past n */
	clear_bit(3, map);
	clear_bit(7, map);

	/* two words: before, after, past n */
	softmq_active_mark(map, 100, 70);
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 100, 70));
	softmq_active_mark(map, 100, 5);
	assert_false(softmq_band_clear_hint_but(&hints, 0, map, 100, 70));
	assert_true(test_bit(0, &hints));
	unmark(map, 100, 5);
	softmq_active_mark(map, 100, 99);
	assert_false(softmq_band_clear_hint_but(&hints, 0, map, 100, 70));
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 99, 70));
	assert_false(test_bit(0, &hints));
	/* its own mark clear: "no other" all the same, either width */
	unmark(map, 100, 99);
	unmark(map, 100, 70);
	assert_int_equal(words[0], 0);
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 100, 70));
	assert_true(softmq_band_clear_hint_but(&hints, 0, map, 10, 3));
}

/* looks_empty: no item at head, nothing spilled (the slots' or the stack's). */
static void t_looks_empty(void **state)
{
	struct softmq_ring *r = ring_new(2);

	(void)state;
	assert_true(softmq_ring_looks_empty(r));
	fill(r, 2);
	push_expect(r, 3, SOFTMQ_PUSH_SPILLED);
	assert_false(softmq_ring_looks_empty(r));
	pop_expect(r, 1, 2);
	assert_false(softmq_ring_looks_empty(r));	/* the spilled one */
	pop_expect(r, 3, 3);
	assert_true(softmq_ring_looks_empty(r));
	push_expect(r, 4, SOFTMQ_PUSH_OK);		/* not retired: no wake */
	assert_false(softmq_ring_looks_empty(r));
	pop_expect(r, 4, 4);
	assert_true(softmq_ring_looks_empty(r));
	free(r);
}

/* The producer's check after a non-waking push: marked, named, hinted. */
static void t_ring_seen(void **state)
{
	unsigned long hints = 0, words[1 + 2] = { 0 }, *map = words + 1;

	(void)state;
	assert_false(softmq_ring_seen(map, 128, 70, &hints, 1));	/* neither */
	softmq_band_note(&hints, 1);
	assert_false(softmq_ring_seen(map, 128, 70, &hints, 1));	/* hint, no mark */
	set_bit(70, map);
	/* marked, its word not named yet: its waker is between the two */
	assert_false(softmq_ring_seen(map, 128, 70, &hints, 1));
	assert_true(softmq_ring_seen(map, 64 * 64 + 1, 70, &hints, 1));	/* no summary */
	softmq_active_mark(map, 128, 70);
	assert_true(softmq_ring_seen(map, 128, 70, &hints, 1));	/* all three */
	assert_false(softmq_ring_seen(map, 128, 70, &hints, 2));	/* other band's hint */
	assert_false(softmq_ring_seen(map, 128, 69, &hints, 1));	/* other ring */
	assert_true(softmq_band_clear_hint(&hints, 1, map, 64));	/* clears the hint */
	assert_false(softmq_ring_seen(map, 128, 70, &hints, 1));	/* mark, no hint */
	set_bit(5, map);				/* one word: no summary */
	softmq_band_note(&hints, 1);
	assert_true(softmq_ring_seen(map, 64, 5, &hints, 1));
}

/* ---- races at exact points (kshim build only) -------------------------------- */
#ifdef RING_KSHIM

static struct softmq_ring *h_ring;
static unsigned long *h_map;
static int h_armed, h_fired;
static enum kshim_ev h_on;
static const void *h_addr;
static void (*h_action)(void);
static enum kshim_ev h_log[64];
static int h_nlog;

/* Run h_action once, right after the first event h_on on h_addr. */
static void hook(enum kshim_ev ev, const void *addr)
{
	if (h_nlog < 64)
		h_log[h_nlog++] = ev;
	if (!h_armed || ev != h_on || (h_addr && addr != h_addr))
		return;
	h_armed = 0;
	kshim_hook = NULL;	/* the "other CPU" runs unhooked */
	h_action();
	h_fired++;
	kshim_hook = hook;
}

static void arm(enum kshim_ev on, const void *addr, void (*action)(void))
{
	h_on = on;
	h_addr = addr;
	h_action = action;
	h_armed = 1;
	h_fired = 0;
	h_nlog = 0;
	kshim_hook = hook;
}

static enum softmq_push other_res;
static void other_push(void)
{
	unsigned int rt = 0;

	other_res = softmq_ring_push(h_ring, ITEM(100), &rt);
	if (other_res == SOFTMQ_PUSH_WOKE)
		set_bit(0, h_map);
}

/* Retire failure case 2: a push lands between retire's clear and cmpxchg. */
static void t_retire_loses_to_push(void **state)
{
	unsigned long map[1] = { 0 };
	struct softmq_ring *r = ring_new(4);

	(void)state;
	h_ring = r;
	h_map = map;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	set_bit(0, map);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	assert_null(softmq_ring_pop(r));
	arm(KSHIM_CLEAR_BIT, NULL, other_push);
	assert_false(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	kshim_hook = NULL;
	assert_int_equal(h_fired, 1);
	assert_int_equal(other_res, SOFTMQ_PUSH_OK);	/* ring was not idle */
	assert_int_equal(map[0], 1);			/* mark put back */
	assert_false(TAIL_LOAD(r) & SOFTMQ_RING_IDLE);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 100);
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));

	/*
	 * A summed bitmap (150 rings, three words and the summary before
	 * them): the retire that loses leaves the word named; the one that
	 * wins drops it after its cmpxchg, as its last step.
	 */
	{
		unsigned long words[1 + 3] = { 0 }, *smap = words + 1;

		h_map = smap;
		push_expect(r, 3, SOFTMQ_PUSH_WOKE);
		softmq_active_mark(smap, 150, 130);
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
		arm(KSHIM_CLEAR_BIT, NULL, other_push);
		assert_false(softmq_ring_retire(r, smap, 150, 130));
		kshim_hook = NULL;
		assert_int_equal(other_res, SOFTMQ_PUSH_OK);
		assert_int_equal(smap[2], 1UL << 2);
		assert_int_equal(words[0], 1UL << 2);
		assert_int_equal(ITEM_N(softmq_ring_pop(r)), 100);
		arm(KSHIM_SET_BIT, (void *)-1, NULL);	/* log only */
		assert_true(softmq_ring_retire(r, smap, 150, 130));
		kshim_hook = NULL;
		assert_int_equal(smap[2] | words[0], 0);
		/* read, clear the mark, cmpxchg, clear the summary's bit */
		assert_int_equal(h_nlog, 4);
		assert_int_equal(h_log[2], KSHIM_TAIL_CMPXCHG);
		assert_int_equal(h_log[3], KSHIM_CLEAR_BIT);
	}
	free(r);
}

/*
 * A producer marks and notes right after the consumer's hint clear: the
 * consumer's second look finds the mark, so the band keeps its hint: it
 * ends set (the store-buffering handshake, in one of its two orders; in
 * the other the producer's note sees the clear and sets the bit itself).
 */
static unsigned long h_hints;
static void other_mark_note(void)
{
	set_bit(7, h_map);
	softmq_band_note(&h_hints, 1);
}

static void t_band_clear_hint_loses_to_mark(void **state)
{
	unsigned long map[1] = { 0 };

	(void)state;
	h_map = map;
	h_hints = 1UL << 1;
	arm(KSHIM_CLEAR_BIT, &h_hints, other_mark_note);
	assert_false(softmq_band_clear_hint(&h_hints, 1, map, 64));
	kshim_hook = NULL;
	assert_int_equal(h_fired, 1);
	assert_true(test_bit(1, &h_hints));
	assert_int_equal(map[0], 1UL << 7);
}

/* The order the handshake proof relies on: clear the mark, then cmpxchg
 * IDLE in (then, on failure only, set it again). */
static void t_retire_order(void **state)
{
	unsigned long map[1] = { 1 };
	struct softmq_ring *r = ring_new(4);

	(void)state;
	h_ring = r;
	h_map = map;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	softmq_ring_pop(r);
	arm(KSHIM_SET_BIT, (void *)-1, NULL);	/* log only */
	assert_true(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	kshim_hook = NULL;
	assert_int_equal(h_nlog, 3);
	assert_int_equal(h_log[0], KSHIM_TAIL_READ);
	assert_int_equal(h_log[1], KSHIM_CLEAR_BIT);
	assert_int_equal(h_log[2], KSHIM_TAIL_CMPXCHG);

	push_expect(r, 2, SOFTMQ_PUSH_WOKE);
	set_bit(0, map);
	softmq_ring_pop(r);
	arm(KSHIM_CLEAR_BIT, NULL, other_push);
	assert_false(softmq_ring_retire(r, map, BITS_PER_LONG, 0));
	kshim_hook = NULL;
	/* read, clear, (other push: read, cmpxchg, release), cmpxchg, set */
	assert_int_equal(h_log[0], KSHIM_TAIL_READ);
	assert_int_equal(h_log[1], KSHIM_CLEAR_BIT);
	assert_int_equal(h_log[2], KSHIM_TAIL_CMPXCHG);
	assert_int_equal(h_log[3], KSHIM_SET_BIT);
	assert_int_equal(h_nlog, 4);
	free(r);
}

/* Two producers race for one position: the loser retries behind it. */
static void t_push_cmpxchg_retry(void **state)
{
	unsigned long map[1] = { 0 };
	struct softmq_ring *r = ring_new(4);
	unsigned int retries = 0;

	(void)state;
	h_ring = r;
	h_map = map;
	arm(KSHIM_TAIL_CMPXCHG, NULL, other_push);
	assert_int_equal(softmq_ring_push(r, ITEM(1), &retries), SOFTMQ_PUSH_OK);
	kshim_hook = NULL;
	assert_int_equal(retries, 1);
	assert_int_equal(other_res, SOFTMQ_PUSH_WOKE);	/* it took the edge */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 100);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 1);
	free(r);
}

/*
 * The consumer drains the ring between our claim and our fit check: the
 * position fits by the head we read, and goes into its slot.
 */
static void other_drain2(void)
{
	assert_int_equal(ITEM_N(softmq_ring_pop(h_ring)), 1);
	assert_int_equal(ITEM_N(softmq_ring_pop(h_ring)), 2);
}

static void t_push_fits_after_drain(void **state)
{
	struct softmq_ring *r = ring_new(2);
	unsigned int retries = 0;

	(void)state;
	h_ring = r;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	push_expect(r, 2, SOFTMQ_PUSH_OK);
	arm(KSHIM_TAIL_CMPXCHG, &r->tail, other_drain2);
	assert_int_equal(softmq_ring_push(r, ITEM(3), &retries), SOFTMQ_PUSH_OK);
	kshim_hook = NULL;
	assert_int_equal(h_fired, 1);
	assert_int_equal(SNAP_LOAD(r), 2);
	assert_null(r->spilled);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
	assert_null(softmq_ring_pop(r));
	free(r);
}

/*
 * The same drain just after our head read: the position did not fit when
 * we looked, so it spills although its slot is free by then, and the
 * consumer takes it from the spill list at its position, before a later
 * push that found the slot free.
 */
static void t_push_spills_then_drained(void **state)
{
	struct softmq_ring *r = ring_new(2);
	unsigned int retries = 0;

	(void)state;
	h_ring = r;
	push_expect(r, 1, SOFTMQ_PUSH_WOKE);
	push_expect(r, 2, SOFTMQ_PUSH_OK);
	arm(KSHIM_LOAD_ACQUIRE, &r->head, other_drain2);
	assert_int_equal(softmq_ring_push(r, ITEM(3), &retries),
			 SOFTMQ_PUSH_SPILLED);
	kshim_hook = NULL;
	assert_int_equal(h_fired, 1);
	push_expect(r, 4, SOFTMQ_PUSH_OK);	/* head 2: position 3 fits */
	assert_null(r->slot[2 & r->mask]);	/* position 2 never used its slot */
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 3);
	assert_int_equal(ITEM_N(softmq_ring_pop(r)), 4);
	assert_null(softmq_ring_pop(r));
	assert_int_equal(retries, 0);
	free(r);
}
#endif /* RING_KSHIM */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_layout),
		cmocka_unit_test(t_pos),
		cmocka_unit_test(t_init_empty),
		cmocka_unit_test(t_reinit),
		cmocka_unit_test(t_fifo_full_peek_count),
		cmocka_unit_test(t_woke_edge),
		cmocka_unit_test(t_capacity_1),
		cmocka_unit_test(t_capacity_4096),
		cmocka_unit_test(t_many_laps),
		cmocka_unit_test(t_wrap_pos_mask),
		cmocka_unit_test(t_wrap_full_exact),
		cmocka_unit_test(t_head_snap),
		cmocka_unit_test(t_unpublished_head),
		cmocka_unit_test(t_unpublished_full),
		cmocka_unit_test(t_spill_out_of_order),
		cmocka_unit_test(t_spill_late_walk),
		cmocka_unit_test(t_spill_splice),
		cmocka_unit_test(t_spill_refreshes_snap),
		cmocka_unit_test(t_active_bitmap),
		cmocka_unit_test(t_active_random),
		cmocka_unit_test(t_active_any_but),
		cmocka_unit_test(t_active_summary),
		cmocka_unit_test(t_band_hints),
		cmocka_unit_test(t_band_hint_but),
		cmocka_unit_test(t_looks_empty),
		cmocka_unit_test(t_ring_seen),
#ifdef RING_KSHIM
		cmocka_unit_test(t_retire_loses_to_push),
		cmocka_unit_test(t_band_clear_hint_loses_to_mark),
		cmocka_unit_test(t_retire_order),
		cmocka_unit_test(t_push_cmpxchg_retry),
		cmocka_unit_test(t_push_fits_after_drain),
		cmocka_unit_test(t_push_spills_then_drained),
#endif
	};

	cmocka_set_message_output(CM_OUTPUT_TAP);
#ifdef RING_KSHIM
	return cmocka_run_group_tests_name("ring-unit-kshim", tests, NULL, NULL);
#else
	return cmocka_run_group_tests_name("ring-unit", tests, NULL, NULL);
#endif
}
