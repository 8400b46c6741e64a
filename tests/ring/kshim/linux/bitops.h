/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_BITOPS_H
#define _KSHIM_LINUX_BITOPS_H
#include <limits.h>
#include "../kshim.h"

#define BITS_PER_LONG	((int)(sizeof(long) * CHAR_BIT))

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
#endif
