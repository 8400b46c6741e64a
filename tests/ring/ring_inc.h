/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Include include/softmq_ring.h for a test, on top of kshim/ (the kernel
 * API it uses; -DRING_KSHIM adds the access hooks, see kshim/kshim.h).
 * Also small helpers every test uses.
 */
#ifndef _RING_INC_H
#define _RING_INC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "softmq_ring.h"
#define TAIL_LOAD(r)	  __atomic_load_n(&(r)->tail.counter, __ATOMIC_SEQ_CST)
#define TAIL_STORE(r, v)  __atomic_store_n(&(r)->tail.counter, (v), __ATOMIC_SEQ_CST)

#define HEAD_LOAD(r)	__atomic_load_n(&(r)->head, __ATOMIC_SEQ_CST)
#define SNAP_LOAD(r)	__atomic_load_n(&(r)->head_snap, __ATOMIC_SEQ_CST)

/* A zeroed, cache-line aligned ring, as the module gets from kzalloc. */
static inline struct softmq_ring *ring_new(unsigned int depth)
{
	size_t sz = (softmq_ring_bytes(depth) + 63) & ~(size_t)63;
	struct softmq_ring *r = aligned_alloc(64, sz);

	if (!r)
		abort();
	memset(r, 0, sz);
	softmq_ring_init(r, depth);
	return r;
}

/*
 * Put an initialised, empty ring at position @pos (head = head_snap = pos,
 * claimed = pos, IDLE as given): how tests reach the wrap of
 * SOFTMQ_RING_POS_MASK without 2^63 pushes.
 */
static inline void ring_seek(struct softmq_ring *r, unsigned long pos, int idle)
{
	pos &= SOFTMQ_RING_POS_MASK;
	r->head = pos;
	r->head_snap = pos;
	TAIL_STORE(r, (long)((pos << 1) | (idle ? SOFTMQ_RING_IDLE : 0)));
}

/*
 * Items that carry a number: the ring's two spill words, then the number.
 * ITEM(n) takes slot n % TEST_ITEMS of a pool, so at most TEST_ITEMS items
 * may be queued at once; ITEM_N(NULL) is 0, and a test fails on it, not
 * with a crash.
 */
struct test_item {
	struct softmq_spill spill;
	uintptr_t n;
};
#define TEST_ITEMS	(1 << 16)
static struct test_item test_items[TEST_ITEMS];

static inline void *test_item(uintptr_t n)
{
	struct test_item *it = &test_items[n % TEST_ITEMS];

	it->n = n;
	return it;
}

static inline uintptr_t test_item_n(const void *p)
{
	return p ? ((const struct test_item *)p)->n : 0;
}

#define ITEM(n)		test_item(n)
#define ITEM_N(p)	test_item_n(p)

#endif
