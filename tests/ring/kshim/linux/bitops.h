/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_BITOPS_H
#define _KSHIM_LINUX_BITOPS_H
#include <limits.h>
#include "../kshim.h"

#define BITS_PER_LONG	((int)(sizeof(long) * CHAR_BIT))
#define BIT(nr)		(1UL << (nr))
#define BIT_MASK(nr)	(1UL << ((nr) % BITS_PER_LONG))
#define BIT_WORD(nr)	((nr) / BITS_PER_LONG)
#define BITS_TO_LONGS(nr) (((nr) + BITS_PER_LONG - 1) / BITS_PER_LONG)

static inline void set_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_or((unsigned long *)&addr[nr / BITS_PER_LONG],
			  1UL << (nr % BITS_PER_LONG), __ATOMIC_RELAXED);
	kshim_event(KSHIM_SET_BIT, (const void *)addr);
}

static inline void clear_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_and((unsigned long *)&addr[nr / BITS_PER_LONG],
			   ~(1UL << (nr % BITS_PER_LONG)), __ATOMIC_RELAXED);
	kshim_event(KSHIM_CLEAR_BIT, (const void *)addr);
}

/* The index of the lowest set bit of @w, which is not zero. */
static inline unsigned long __ffs(unsigned long w)
{
	return (unsigned long)__builtin_ctzl(w);
}

static inline bool test_bit(long nr, const volatile unsigned long *addr)
{
	return (__atomic_load_n((const unsigned long *)&addr[nr / BITS_PER_LONG],
				__ATOMIC_RELAXED) >> (nr % BITS_PER_LONG)) & 1;
}

/*
 * Orders the set_bit()/clear_bit() before it against everything after: an
 * acq_rel RMW on one word shared by every caller, which C11 and
 * ThreadSanitizer both follow (TSan does not model atomic_thread_fence).
 */
static long kshim_mb_word;
#define smp_mb__after_atomic() \
	((void)__atomic_fetch_add(&kshim_mb_word, 0, __ATOMIC_ACQ_REL))
/* A full barrier between plain accesses: the same RMW (see above). */
#define smp_mb() \
	((void)__atomic_fetch_add(&kshim_mb_word, 0, __ATOMIC_ACQ_REL))
#endif
