/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq_codel.h - CoDel's verdict on a packet it would hand on as it is,
 * taken before codel_dequeue() (include/net/codel_impl.h) is called.
 *
 * Outside its dropping state (below target, the common case, at low load
 * always; or above it for less than an interval), codel_dequeue() only
 * records the packet's sojourn and size and hands it on; the consumer paid
 * for its frame, an out-of-line codel_should_drop() and a call back into
 * the ring for the pop.  The consumer takes the packet first, asks
 * softmq_codel_pass() and calls codel_dequeue() only when the answer is
 * false, giving it that packet as the first its dequeue callback returns.
 * softmq_codel_pass() writes no state when it returns false, so
 * codel_dequeue() then starts from the state it would have started from.
 * softmq_codel_pass() mirrors codel_should_drop() and the ce_threshold
 * test at the end of codel_dequeue() (the same in 6.1, 6.12 and 7.2).
 *
 * Compiled into the module and into the userspace equivalence test
 * (tests/ring/codel.c), which runs both ways over random traces against
 * each Debian line's own codel_impl.h (tests/lint/check.sh, "codel").
 * Include <net/codel_impl.h> before it, from the one .c file that does, as
 * sch_codel.c and sch_fq_codel.c include it.
 */
#ifndef _SOFTMQ_CODEL_H
#define _SOFTMQ_CODEL_H

#include <linux/compiler.h>
#include <linux/types.h>
#include <net/codel.h>

/*
 * Consumer, not in the dropping state, with a packet of @len bytes just
 * taken from a queue that now holds @backlog bytes, queued @sojourn ago,
 * at @now: true if codel_dequeue() would hand it on untouched, with what
 * it would record recorded (the sojourn, the largest packet, and when the
 * sojourn went above target).  codel_should_drop() says no there: the
 * sojourn below target, or no more than an MTU left behind, or above
 * target for less than an interval yet; and the sojourn is not after
 * ce_threshold (codel_dequeue() CE-marks a packet past it; with
 * ce_threshold off, CODEL_DISABLED_THRESHOLD, a sojourn that wrapped below
 * zero counts as past it too; the DSCP mask of ce_threshold is left to
 * codel_dequeue(): past the threshold is false whatever the mask).  False:
 * no state is written, and the packet is codel_dequeue()'s; a false is
 * always correct, only slower.  WRITE_ONCE()
 * where newer codel_impl.h has it (dump() reads these without the
 * consumer's lock).
 */
static inline bool softmq_codel_pass(struct codel_vars *vars,
				     const struct codel_params *params,
				     struct codel_stats *stats, u32 len,
				     codel_time_t now, codel_time_t sojourn,
				     u32 backlog)
{
	codel_time_t above;

	if (codel_time_after(sojourn, params->ce_threshold))
		return false;
	if (codel_time_before(sojourn, params->target) ||
	    backlog <= params->mtu) {
		above = 0;
	} else if (!vars->first_above_time) {
		above = now + params->interval;
	} else if (!codel_time_after(now, vars->first_above_time)) {
		above = vars->first_above_time;
	} else {
		/* above target for an interval: codel_dequeue() drops */
		return false;
	}
	WRITE_ONCE(vars->ldelay, sojourn);
	if (unlikely(len > stats->maxpacket))
		WRITE_ONCE(stats->maxpacket, len);
	vars->first_above_time = above;
	return true;
}

/*
 * What softmq_codel_dequeue_first() calls for a packet that did not pass:
 * codel_dequeue() with @skb as the first packet its pop returns.  @ctx and
 * @arg (the queue, for the caller's own use) as softmq_codel_dequeue_first()
 * got them.
 */
typedef struct sk_buff *(*softmq_codel_slow_t)(void *ctx, void *arg,
					       struct sk_buff *skb);

/*
 * Consumer: codel_dequeue() with the queue's next packet, @skb (NULL: the
 * queue was empty), taken already and @backlog left behind it.  What
 * codel_dequeue() returns, without calling it when softmq_codel_pass()
 * says it would hand @skb on as it is; else what @slow_func returns for
 * @skb.  The module and the equivalence test both run this, each with
 * its own @slow_func (the module's out of line, reached by a tail call).
 * @slow_arg goes to @slow_func as it is.  In the dropping state the
 * packet is @slow_func's before the clock is read: codel_dequeue() reads
 * the clock itself, so only a packet that crosses into the dropping state
 * pays for two reads.  The clock is read before @skb_time_func is asked,
 * as codel_should_drop() does: an unstamped packet's time is the clock's.
 */
static __always_inline struct sk_buff *
softmq_codel_dequeue_first(void *ctx, struct sk_buff *skb, u32 backlog,
			   const struct codel_params *params,
			   struct codel_vars *vars, struct codel_stats *stats,
			   codel_skb_len_t skb_len_func,
			   codel_skb_time_t skb_time_func,
			   softmq_codel_slow_t slow_func, void *slow_arg)
{
	codel_time_t now;

	if (!skb) {
		/* codel_dequeue() on an empty queue */
		vars->first_above_time = 0;
		WRITE_ONCE(vars->dropping, false);
		return NULL;
	}
	if (!vars->dropping) {
		now = codel_get_time();
		if (softmq_codel_pass(vars, params, stats, skb_len_func(skb),
				      now, now - skb_time_func(skb), backlog))
			return skb;
	}
	return slow_func(ctx, slow_arg, skb);
}

#endif /* _SOFTMQ_CODEL_H */
