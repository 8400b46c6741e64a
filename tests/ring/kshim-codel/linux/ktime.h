/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in for <linux/ktime.h>, for the CoDel equivalence test
 * (../codel.c): the clock is the test's.  It stands still between steps,
 * and within a dequeue moves @codel_test_tick after each read, so that
 * reads made in another order give other times.  INT_MAX, typecheck(),
 * do_div() and max_t() come along, as the kernel's headers bring them to
 * net/codel.h.
 */
#ifndef _KSHIM_CODEL_KTIME_H
#define _KSHIM_CODEL_KTIME_H
#include <limits.h>
#include <linux/compiler.h>
#include <linux/types.h>

#define NSEC_PER_USEC	1000L
#define NSEC_PER_MSEC	1000000L

extern u64 codel_test_ns, codel_test_tick;

static inline u64 ktime_get_ns(void)
{
	u64 now = codel_test_ns;

	codel_test_ns += codel_test_tick;
	return now;
}

#define typecheck(type, x) \
({	type __dummy; \
	__typeof__(x) __dummy2; \
	(void)(&__dummy == &__dummy2); \
	1; \
})

/* do_div(n, base): n /= base, the remainder returned */
#define do_div(n, base) ({ u32 __rem = (n) % (base); (n) /= (base); __rem; })

#define max_t(type, a, b) ((type)(a) > (type)(b) ? (type)(a) : (type)(b))

#endif
