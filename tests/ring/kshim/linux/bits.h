/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace stand-in for <linux/bits.h>: see ../kshim.h. */
#ifndef _KSHIM_LINUX_BITS_H
#define _KSHIM_LINUX_BITS_H
#ifndef BITS_PER_LONG
#define BITS_PER_LONG	(__SIZEOF_LONG__ * 8)
#endif
#endif
