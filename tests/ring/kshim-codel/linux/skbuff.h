/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in for <linux/skbuff.h>, for the CoDel equivalence test
 * (../codel.c): a packet is what CoDel and its callbacks look at.
 */
#ifndef _KSHIM_CODEL_SKBUFF_H
#define _KSHIM_CODEL_SKBUFF_H
#include <linux/types.h>

struct sk_buff {
	u32	id;
	u32	len;
	u32	tstamp;		/* codel_time_t; 0: not stamped */
	bool	ect;		/* ECN-capable transport */
	bool	ce;		/* CE-marked */
	int	dsfield;
};

static inline u32 reciprocal_scale(u32 val, u32 ep_ro)
{
	return (u32)(((u64)val * ep_ro) >> 32);
}

#endif
