/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: just enough of the kernel API (<linux/atomic.h>, bitops, find_next_bit,
 * READ_ONCE, smp_load_acquire ...) in userspace to compile include/softmq_ring.h
 * with __KERNEL__ defined, i.e. its kernel primitives section.  Used by the
 * "kshim" build of unit.c for two things:
 *   - the header's kernel branch is compiled and run (typos, wrong argument
 *     order, try_cmpxchg's update-on-failure semantics are exercised);
 *   - every shared access calls kshim_event() after it happened, so a unit
 *     test can play "another CPU" at an exact point inside push/retire
 *     (e.g. a push landing between retire's tail read and its cmpxchg).
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
};

extern void (*kshim_hook)(enum kshim_ev ev, const void *addr);

static inline void kshim_event(enum kshim_ev ev, const void *addr)
{
	if (kshim_hook)
		kshim_hook(ev, addr);
}
#endif
