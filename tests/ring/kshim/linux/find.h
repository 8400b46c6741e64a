/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_FIND_H
#define _KSHIM_LINUX_FIND_H
#include "bitops.h"

/* Deliberately naive (bit by bit): an independent check of the header's
 * userspace word-at-a-time version, which the other build uses. */
static inline unsigned long find_next_bit(const unsigned long *addr,
					  unsigned long size,
					  unsigned long offset)
{
	for (; offset < size; offset++)
		if (__atomic_load_n(&addr[offset / BITS_PER_LONG],
				    __ATOMIC_RELAXED) &
		    (1UL << (offset % BITS_PER_LONG)))
			return offset;
	return size;
}

/* Bit by bit too: set in @addr, clear in @mask, from @offset. */
static inline unsigned long find_next_andnot_bit(const unsigned long *addr,
						 const unsigned long *mask,
						 unsigned long size,
						 unsigned long offset)
{
	for (; offset < size; offset++)
		if ((__atomic_load_n(&addr[offset / BITS_PER_LONG],
				     __ATOMIC_RELAXED) &
		     ~mask[offset / BITS_PER_LONG]) &
		    (1UL << (offset % BITS_PER_LONG)))
			return offset;
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
