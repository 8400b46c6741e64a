/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_FIND_H
#define _KSHIM_LINUX_FIND_H
#include "bitops.h"

/* Word at a time, as lib/find_bit.c; each word read once, relaxed. */
static inline unsigned long find_next_bit(const unsigned long *addr,
					  unsigned long size,
					  unsigned long offset)
{
	while (offset < size) {
		unsigned long w = __atomic_load_n(&addr[offset / BITS_PER_LONG],
						  __ATOMIC_RELAXED);

		w &= ~0UL << (offset % BITS_PER_LONG);
		if (w) {
			offset = (offset & ~(unsigned long)(BITS_PER_LONG - 1)) +
				 __ffs(w);
			return offset < size ? offset : size;
		}
		offset = (offset | (BITS_PER_LONG - 1)) + 1;
	}
	return size;
}

/* Set in @addr, clear in @mask (the caller's own: plain reads), from @offset. */
static inline unsigned long find_next_andnot_bit(const unsigned long *addr,
						 const unsigned long *mask,
						 unsigned long size,
						 unsigned long offset)
{
	while (offset < size) {
		unsigned long i = offset / BITS_PER_LONG;
		unsigned long w = __atomic_load_n(&addr[i], __ATOMIC_RELAXED) &
				  ~mask[i];

		w &= ~0UL << (offset % BITS_PER_LONG);
		if (w) {
			offset = i * BITS_PER_LONG + __ffs(w);
			return offset < size ? offset : size;
		}
		offset = (i + 1) * BITS_PER_LONG;
	}
	return size;
}

/* As lib/find_bit's: [offset, size), then [0, offset). */
static inline unsigned long find_next_bit_wrap(const unsigned long *addr,
					       unsigned long size,
					       unsigned long offset)
{
	unsigned long bit = find_next_bit(addr, size, offset);

	if (bit < size)
		return bit;
	bit = find_next_bit(addr, offset, 0);
	return bit < offset ? bit : size;
}
#endif
