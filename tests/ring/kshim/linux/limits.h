/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_LIMITS_H
#define _KSHIM_LINUX_LIMITS_H
#include <limits.h>
#include <stdint.h>

#define U32_MAX		UINT32_MAX
#endif
