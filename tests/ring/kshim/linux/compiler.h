/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_COMPILER_H
#define _KSHIM_LINUX_COMPILER_H
#include "../kshim.h"
#define READ_ONCE(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#ifndef noinline
#define noinline	__attribute__((__noinline__))
#endif
