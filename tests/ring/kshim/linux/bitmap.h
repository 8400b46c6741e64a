/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace stand-in for <linux/bitmap.h>: see ../kshim.h. */
#ifndef _KSHIM_LINUX_BITMAP_H
#define _KSHIM_LINUX_BITMAP_H
#include "bitops.h"
#define BITMAP_FIRST_WORD_MASK(start) (~0UL << ((start) & (BITS_PER_LONG - 1)))
#define BITMAP_LAST_WORD_MASK(nbits) (~0UL >> (-(nbits) & (BITS_PER_LONG - 1)))
#endif
