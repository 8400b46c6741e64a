// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for include/softmq_ring.h (clang -fsanitize=fuzzer,
 * address,undefined).  One input = a few rings with their own depth and
 * starting position (near the wrap of SOFTMQ_RING_POS_MASK if the input says
 * so), then a sequence of single-threaded operations, each checked against a
 * plain reference queue per ring:
 *
 *   push, pop, peek, count, retire, active_next, and "claim"/"publish": the
 *   two halves of a push done apart, as a producer stalled between its
 *   cmpxchg and its slot store (or its spill) leaves them (up to 4 such
 *   pending at once).  A ring holds up to QMAX items: beyond its depth they
 *   spill, and each must still come out at its position.
 *
 * Items are malloc'ed and freed when popped, so ASan also sees a double pop
 * (double free), a stale pop (use after free) and a lost item (leak).
 * Invariants after every op: a ring holding items or claims is marked, or a
 * pending claim still owes it its mark (PUSH_WOKE not acted upon yet).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_inc.h"

#define NRINGS_MAX	4
#define MAXDEPTH	16
#define QMAX		64		/* items one ring may hold here */
#define NPEND		4

struct item {
	struct softmq_spill spill;	/* the ring's while spilled */
	unsigned long id;
};

struct ref {				/* reference model of one ring */
	struct item *q[QMAX];		/* NULL = claimed, not yet published */
	unsigned long head, tail;	/* counts, not wrapped */
	int idle;
};

struct pend {
	int used, ring, woke;
	unsigned long pos;		/* the ring's position (wrapped) */
	unsigned long refidx;		/* index in ref->q (mod QMAX) */
	struct item *it;
};

static struct softmq_ring *rings[NRINGS_MAX];
static struct ref ref[NRINGS_MAX];
static struct pend pend[NPEND];
static unsigned long map[1];
static unsigned int nrings, depth[NRINGS_MAX];
static unsigned long next_id;

#define CHECK(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "fuzz: check failed at %s:%d: %s\n",	\
			__FILE__, __LINE__, #c);			\
		abort();						\
	}								\
} while (0)

static int marked(unsigned int r)
{
	return softmq_active_next(map, nrings, r) == r;
}

static int owes_mark(unsigned int r)
{
	int k;

	for (k = 0; k < NPEND; k++)
		if (pend[k].used && pend[k].ring == (int)r && pend[k].woke)
			return 1;
	return 0;
}

static void invariants(void)
{
	unsigned int r;

	for (r = 0; r < nrings; r++) {
		struct ref *f = &ref[r];
		long t = TAIL_LOAD(rings[r]);

		CHECK(softmq_ring_count(rings[r]) == f->tail - f->head);
		CHECK(!!(t & SOFTMQ_RING_IDLE) == f->idle);
		/* no item or claim in an unmarked ring, unless its waker is
		 * still on its way to mark it */
		if (f->tail != f->head)
			CHECK(marked(r) || owes_mark(r));
		if (f->idle)
			CHECK(f->tail == f->head);
	}
}

static void op_push(unsigned int r)
{
	struct ref *f = &ref[r];
	struct item *it = calloc(1, sizeof(*it));
	unsigned int retries = 0;
	enum softmq_push res;

	if (f->tail - f->head == QMAX) {
		free(it);
		return;
	}
	it->id = ++next_id;
	res = softmq_ring_push(rings[r], it, &retries);
	CHECK(retries == 0);
	if (f->tail - f->head >= depth[r])
		CHECK(res == SOFTMQ_PUSH_SPILLED);
	else
		CHECK(res == (f->idle ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK));
	f->q[f->tail++ % QMAX] = it;
	if (res == SOFTMQ_PUSH_WOKE) {
		f->idle = 0;
		set_bit(r, map);
	}
}

/* The first half of a push: the cmpxchg, as push does it. */
static void op_claim(unsigned int r)
{
	struct ref *f = &ref[r];
	long t = TAIL_LOAD(rings[r]);
	unsigned long pos = softmq_ring_pos(t);
	int k;

	for (k = 0; k < NPEND && pend[k].used; k++)
		;
	if (k == NPEND || f->tail - f->head == QMAX)
		return;
	CHECK(pos == ((rings[r]->head + (f->tail - f->head)) & SOFTMQ_RING_POS_MASK));
	TAIL_STORE(rings[r], (long)(((pos + 1) & SOFTMQ_RING_POS_MASK) << 1));
	pend[k].used = 1;
	pend[k].ring = (int)r;
	pend[k].woke = (int)(t & SOFTMQ_RING_IDLE);
	pend[k].pos = pos;
	pend[k].refidx = f->tail;
	pend[k].it = calloc(1, sizeof(struct item));
	pend[k].it->id = ++next_id;
	f->q[f->tail++ % QMAX] = NULL;
	if (pend[k].woke)
		f->idle = 0;
}

/*
 * The second half, as push does it after its claim: the release store of the
 * slot if the position fits by now, else the spill; then the mark if WOKE.
 */
static void op_publish(unsigned int k)
{
	struct pend *pd = &pend[k % NPEND];
	struct softmq_ring *rg;
	int fits;

	if (!pd->used)
		return;
	rg = rings[pd->ring];
	fits = ((pd->pos - rg->head) & SOFTMQ_RING_POS_MASK) <= rg->mask;
	CHECK(softmq_ring_fits(rg, pd->pos) == fits);
	if (fits) {
		CHECK(__atomic_load_n(&rg->slot[pd->pos & rg->mask],
				      __ATOMIC_RELAXED) == NULL);
		__atomic_store_n(&rg->slot[pd->pos & rg->mask], pd->it,
				 __ATOMIC_RELEASE);
	} else {
		CHECK(!pd->woke);	/* an idle ring's first position fits */
		softmq_ring_spill(rg, pd->it, pd->pos);
	}
	ref[pd->ring].q[pd->refidx % QMAX] = pd->it;
	if (pd->woke)
		set_bit((unsigned int)pd->ring, map);
	pd->used = 0;
}

static void op_pop(unsigned int r, int peek_only)
{
	struct ref *f = &ref[r];
	struct item *want = f->head == f->tail ? NULL : f->q[f->head % QMAX];
	struct item *got = peek_only ? softmq_ring_peek(rings[r]) :
				       softmq_ring_pop(rings[r]);

	CHECK(got == want);
	if (got && !peek_only) {
		f->head++;
		/* a spilled item's words are zero again */
		CHECK(!got->spill.next && !got->spill.pos);
		free(got);
	}
}

/* Retire as the consumer does it: after a pop came back empty. */
static void op_retire(unsigned int r)
{
	struct ref *f = &ref[r];
	int was_marked = marked(r);
	int ok = softmq_ring_retire(rings[r], map, nrings, r);

	CHECK(ok == (f->head == f->tail));
	if (ok) {
		CHECK(!marked(r));
		f->idle = 1;
	} else {
		CHECK(marked(r) == was_marked);	/* untouched */
	}
}

static void op_next(unsigned int from)
{
	unsigned long want = nrings, i;

	from %= nrings + 1;
	for (i = from; i < nrings; i++)
		if (map[0] & (1UL << i)) {
			want = i;
			break;
		}
	CHECK(softmq_active_next(map, nrings, from) == want);
}

/* A consumer pass like softmq_band_dequeue over everything marked. */
static void op_consume(void)
{
	unsigned long idx = 0;

	while ((idx = softmq_active_next(map, nrings, idx)) < nrings) {
		op_pop((unsigned int)idx, 1);
		if (softmq_ring_peek(rings[idx]))
			op_pop((unsigned int)idx, 0);
		else
			op_retire((unsigned int)idx);
		idx++;
	}
}

static void teardown(void)
{
	unsigned int r;
	int k;

	for (k = 0; k < NPEND; k++)
		op_publish((unsigned int)k);
	for (r = 0; r < nrings; r++) {
		while (ref[r].head != ref[r].tail)
			op_pop(r, 0);
		CHECK(softmq_ring_pop(rings[r]) == NULL);
		free(rings[r]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i = 0;
	unsigned int r;

	if (size < 2)
		return 0;
	memset(ref, 0, sizeof(ref));
	memset(pend, 0, sizeof(pend));
	map[0] = 0;
	nrings = 1 + data[i++] % NRINGS_MAX;
	for (r = 0; r < nrings; r++) {
		uint8_t c = i < size ? data[i++] : 0;
		unsigned long start = 0;

		depth[r] = 1U << (c % 5);		/* 1 .. 16 */
		if (c & 0x20)				/* near the wrap */
			start = SOFTMQ_RING_POS_MASK - (c >> 6) * depth[r] - (c & 7);
		rings[r] = ring_new(depth[r]);
		ring_seek(rings[r], start, 1);
		if (c & 0x10)				/* stale snapshot */
			rings[r]->head_snap = (start - 3 * depth[r]) & SOFTMQ_RING_POS_MASK;
		ref[r].idle = 1;
	}
	while (i < size) {
		uint8_t b = data[i++];
		unsigned int arg = b >> 3;

		r = arg % nrings;
		switch (b & 7) {
		case 0:
		case 1:
			op_push(r);
			break;
		case 2:
			op_pop(r, 0);
			break;
		case 3:
			op_pop(r, 1);
			CHECK(softmq_ring_count(rings[r]) == ref[r].tail - ref[r].head);
			break;
		case 4:
			if (!softmq_ring_peek(rings[r]))	/* as the consumer */
				op_retire(r);
			else
				op_next(arg);
			break;
		case 5:
			op_claim(r);
			break;
		case 6:
			op_publish(arg);
			break;
		case 7:
			op_consume();
			break;
		}
		invariants();
	}
	teardown();
	return 0;
}
