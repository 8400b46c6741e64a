/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_CACHE_H
#define _KSHIM_LINUX_CACHE_H
#define ____cacheline_aligned_in_smp	__attribute__((aligned(64)))
#endif
