/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim of <linux/minmax.h>: max() as the headers use it (no
 * arguments with side effects, operands of one type). */
#ifndef _KSHIM_LINUX_MINMAX_H
#define _KSHIM_LINUX_MINMAX_H

#define max(x, y)	((x) > (y) ? (x) : (y))

#endif
