/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: just enough of the kernel API (<linux/atomic.h>, bitops, find_next_bit,
 * READ_ONCE, smp_load_acquire ...) in userspace to compile include/softmq_ring.h
 * as the kernel compiles it: every test build of tests/ring uses it, so the
 * header is one kernel header with no userspace branch (typos, wrong
 * argument order, try_cmpxchg's update-on-failure semantics are exercised).
 * The -DRING_KSHIM builds (unit-kshim, stress-jitter*) also have every
 * shared access call kshim_hook after it happened, so a unit test can play
 * "another CPU" at an exact point inside push/retire (e.g. a push landing
 * between retire's tail read and its cmpxchg); elsewhere kshim_event() is
 * empty.
 * The kernel semantics are mimicked, not imported: a mismatch between this
 * shim and the real kernel API would not be caught here but by the module build.
 */
#ifndef _KSHIM_H
#define _KSHIM_H

enum kshim_ev {
	KSHIM_TAIL_READ,
	KSHIM_TAIL_CMPXCHG,	/* reported just BEFORE the cmpxchg */
	KSHIM_LOAD_ACQUIRE,
	KSHIM_STORE_RELEASE,	/* reported just BEFORE the store */
	KSHIM_SET_BIT,
	KSHIM_CLEAR_BIT,
	KSHIM_PCPU_ADD,		/* reported just AFTER this_cpu_add_return() */
	KSHIM_ATOMIC_ADD,	/* reported just AFTER atomic_long_add() */
};

#ifdef RING_KSHIM
extern void (*kshim_hook)(enum kshim_ev ev, const void *addr);

static inline void kshim_event(enum kshim_ev ev, const void *addr)
{
	if (kshim_hook)
		kshim_hook(ev, addr);
}
#else
/* The plain, sanitizer, fuzz and bench builds: no hook, no cost. */
static inline void kshim_event(enum kshim_ev ev, const void *addr)
{
	(void)ev;
	(void)addr;
}
#endif
#endif
