/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq_compat.h - every difference between the kernel lines softmq builds
 * for (Debian 6.1, 6.12, 7.2, 7.2-rt) lives here, so sch_softmq.c reads like
 * upstream code for the newest kernel.
 */
#ifndef _SOFTMQ_COMPAT_H
#define _SOFTMQ_COMPAT_H

#include <linux/version.h>
#include <linux/module.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>

/*
 * Qdisc autoload: until 6.9 the core asked for "sch_<id>" (our module name,
 * so no alias is needed); since then it asks for "net-sch-<id>", declared
 * with MODULE_ALIAS_NET_SCH().
 */
#ifndef MODULE_ALIAS_NET_SCH
#define MODULE_ALIAS_NET_SCH(id)	MODULE_ALIAS("net-sch-" id)
#endif

/*
 * CoDel (include/net/codel.h, codel_impl.h): codel_dequeue() and its
 * callbacks have the same signatures on 6.1, 6.12 and 7.2, so nothing is
 * needed here.  7.x caps the drops of one codel_dequeue() call (256) and
 * marks its state writes; older lines may drop a ring's whole standing
 * queue in one call after a long gap, as fq_codel does there.  6.19's
 * deferred dequeue drops (TCQ_F_DEQUEUE_DROPS, qdisc_dequeue_drop()) are
 * for locked qdiscs only (they warn on TCQ_F_NOLOCK): softmq frees CoDel's
 * drops in place on every line.
 */

/*
 * softmq_reset() purges the rings as the consumer: it must never run beside
 * softmq_dequeue().  The core's reset paths hold the seqlock of a NOLOCK
 * qdisc, except qdisc_reset_all_tx_gt() (ethtool -L shrinking the TX
 * queues) on kernels older than its 2026 fix, which took only the qdisc
 * lock: a purge there could race a dequeue on another CPU.  Kbuild reads
 * the inline function from this kernel's headers (SOFTMQ_RESET_SEQLOCK).
 */
#if !SOFTMQ_RESET_SEQLOCK
#error "qdisc_reset_all_tx_gt() takes no seqlock on this kernel: softmq needs its 2026 fix"
#endif

/*
 * Range policies: before 6.7 struct nla_policy points to a non-const
 * struct netlink_range_validation, which the validation only reads.
 * Kbuild reads the field from this kernel's headers (SOFTMQ_NLA_RANGE_CONST).
 */
#if !SOFTMQ_NLA_RANGE_CONST
#undef NLA_POLICY_FULL_RANGE
#define NLA_POLICY_FULL_RANGE(tp, _range) {				\
	.type = NLA_ENSURE_UINT_OR_BINARY_TYPE(tp),			\
	.validation_type = NLA_VALIDATE_RANGE_PTR,			\
	.range = (struct netlink_range_validation *)(_range),		\
}
#endif

/*
 * pfifo_fast's priority map, exported since 6.5 (Kbuild reads
 * sch_generic.h: SOFTMQ_HAVE_PRIO2BAND); a copy of its values before.
 */
#if !SOFTMQ_HAVE_PRIO2BAND
static const u8 sch_default_prio2band[TC_PRIO_MAX + 1] = {
	1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1
};
#endif

/*
 * Qdisc drop reasons, 7.x: an enqueue drop carries one in tc_skb_cb
 * (tcf_set_qdisc_drop_reason()), the core frees it with that reason, and a
 * dequeue drop freed in place passes it to kfree_skb_reason(), as
 * qdisc_dequeue_drop() does.  Before (Kbuild reads sch_generic.h:
 * SOFTMQ_HAVE_QDISC_DROP_REASON), every qdisc drop is
 * SKB_DROP_REASON_QDISC_DROP, which the core already gives an enqueue's
 * drops (6.12 presets it in tc_skb_cb, 6.1 frees them with it): nothing to
 * set there.
 */
#if !SOFTMQ_HAVE_QDISC_DROP_REASON
enum qdisc_drop_reason {
	QDISC_DROP_GENERIC = SKB_DROP_REASON_QDISC_DROP,
	QDISC_DROP_OVERLIMIT = SKB_DROP_REASON_QDISC_DROP,
	QDISC_DROP_CONGESTED = SKB_DROP_REASON_QDISC_DROP,
};

static inline void tcf_set_qdisc_drop_reason(const struct sk_buff *skb,
					     enum qdisc_drop_reason reason)
{
}
#endif

#endif /* _SOFTMQ_COMPAT_H */
