/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim of <linux/minmax.h>: min(), max() and clamp() as the
 * headers use them (no arguments with side effects, operands of one type). */
#ifndef _KSHIM_LINUX_MINMAX_H
#define _KSHIM_LINUX_MINMAX_H

#define min(x, y)		((x) < (y) ? (x) : (y))
#define max(x, y)		((x) > (y) ? (x) : (y))
#define clamp(v, lo, hi)	min(max(v, lo), hi)

#endif
