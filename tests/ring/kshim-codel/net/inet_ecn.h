/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in for <net/inet_ecn.h>, for the CoDel equivalence test
 * (../codel.c): an ECN-capable packet takes a CE mark, others refuse it.
 */
#ifndef _KSHIM_CODEL_INET_ECN_H
#define _KSHIM_CODEL_INET_ECN_H
#include <linux/skbuff.h>

static inline int INET_ECN_set_ce(struct sk_buff *skb)
{
	if (!skb->ect)
		return 0;
	skb->ce = true;
	return 1;
}

static inline int skb_get_dsfield(struct sk_buff *skb)
{
	return skb->dsfield;
}

#endif
