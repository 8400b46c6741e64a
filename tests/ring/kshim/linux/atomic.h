/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_ATOMIC_H
#define _KSHIM_LINUX_ATOMIC_H
#include <stdbool.h>
#include "../kshim.h"

typedef struct { long counter; } atomic_long_t;

/* Each access reports itself to the test's hook *after* it happened, so a
 * test can make "another CPU" act right between two steps of the header. */
static inline long atomic_long_read(const atomic_long_t *v)
{
	long x = __atomic_load_n(&v->counter, __ATOMIC_RELAXED);

	kshim_event(KSHIM_TAIL_READ, v);
	return x;
}

static inline void atomic_long_set(atomic_long_t *v, long i)
{
	__atomic_store_n(&v->counter, i, __ATOMIC_RELAXED);
}

static inline void atomic_long_add(long i, atomic_long_t *v)
{
	__atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED);
	kshim_event(KSHIM_ATOMIC_ADD, v);
}

/* Kernel semantics: fully ordered on success; on failure *old = current. */
static inline bool atomic_long_try_cmpxchg(atomic_long_t *v, long *old, long new)
{
	kshim_event(KSHIM_TAIL_CMPXCHG, v);
	return __atomic_compare_exchange_n(&v->counter, old, new, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* Pointer-sized, any type; fully ordered (the spill stack). */
#define try_cmpxchg(p, oldp, new) ({					\
	kshim_event(KSHIM_TAIL_CMPXCHG, (const void *)(p));		\
	__atomic_compare_exchange_n((p), (oldp), (new), false,		\
				    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED); })
#define xchg(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)

#define smp_load_acquire(p) ({						\
	__typeof__(*(p)) ___v = __atomic_load_n((p), __ATOMIC_ACQUIRE);	\
	kshim_event(KSHIM_LOAD_ACQUIRE, (const void *)(p));		\
	___v; })
#define smp_store_release(p, v) do {					\
	kshim_event(KSHIM_STORE_RELEASE, (const void *)(p));		\
	__atomic_store_n((p), (v), __ATOMIC_RELEASE);			\
} while (0)
#endif
