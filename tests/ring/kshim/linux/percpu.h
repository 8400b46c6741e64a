/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in for the this_cpu_*() operations of <linux/percpu.h>:
 * see ../kshim.h.  A "__percpu" pointer is the address of CPU 0's copy;
 * CPU n's copy lies n * KSHIM_PCPU_STRIDE bytes after it (the test defines
 * the stride and lays its per-CPU array out so).  The test says which CPU
 * runs with kshim_cpu.  this_cpu_add_return() reports itself after the
 * add, so a test can run a fold "from an interrupt" between two steps.
 */
#ifndef _KSHIM_LINUX_PERCPU_H
#define _KSHIM_LINUX_PERCPU_H
#include "../kshim.h"

#ifndef KSHIM_PCPU_STRIDE
#error "define KSHIM_PCPU_STRIDE (bytes between two CPUs' copies) first"
#endif

extern unsigned int kshim_cpu;

#define __percpu
#define kshim_this_cpu_ptr(p) \
	((__typeof__(p))((char *)(p) + kshim_cpu * (KSHIM_PCPU_STRIDE)))
#define this_cpu_add_return(pcp, n) ({					\
	__typeof__(pcp) *___p = kshim_this_cpu_ptr(&(pcp));		\
	__typeof__(pcp) ___v = (*___p += (n));				\
	kshim_event(KSHIM_PCPU_ADD, ___p);				\
	___v; })
#define this_cpu_sub(pcp, n)	((void)(*kshim_this_cpu_ptr(&(pcp)) -= (n)))
#define this_cpu_xchg(pcp, n) ({					\
	__typeof__(pcp) *___p = kshim_this_cpu_ptr(&(pcp));		\
	__typeof__(pcp) ___o = *___p;					\
	*___p = (n);							\
	___o; })
#endif
