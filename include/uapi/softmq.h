/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * softmq netlink interface: TCA_OPTIONS attributes and xstats.
 *
 * Shared by the kernel module (src/sch_softmq.c) and the tc plugin
 * (tc-plugin/q_softmq.c).  Attribute numbers and the xstats layout are ABI:
 * append only, never renumber or reorder.
 */
#ifndef _UAPI_SOFTMQ_H
#define _UAPI_SOFTMQ_H

#include <linux/types.h>

enum {
	TCA_SOFTMQ_UNSPEC,
	TCA_SOFTMQ_FLOWS,	/* u32: rings per band in key flow mode, 2^n */
	TCA_SOFTMQ_DEPTH,	/* u32: slots per ring, 2^n */
	TCA_SOFTMQ_QUANTUM,	/* u32: DRR quantum in bytes */
	TCA_SOFTMQ_BANDS,	/* u32: 1 or 3 (pfifo_fast priomap) */
	TCA_SOFTMQ_KEY,		/* u32: enum softmq_key */
	TCA_SOFTMQ_LIMIT,	/* u32: packets queued per instance */
	TCA_SOFTMQ_MEMORY_LIMIT,	/* u32: skb truesize queued per instance, bytes */
	TCA_SOFTMQ_CODEL,	/* u32: 1 = CoDel per ring (AQM), 0 = plain FIFO rings */
	TCA_SOFTMQ_TARGET,	/* u32: CoDel target sojourn time, microseconds */
	TCA_SOFTMQ_INTERVAL,	/* u32: CoDel interval, microseconds */
	TCA_SOFTMQ_ECN,		/* u32: 1 = CE-mark ECT packets instead of dropping */
	TCA_SOFTMQ_CE_THRESHOLD,	/* u32: CE-mark above this sojourn, us; ~0U = off */
	__TCA_SOFTMQ_MAX
};

#define TCA_SOFTMQ_MAX	(__TCA_SOFTMQ_MAX - 1)

enum softmq_key {
	SOFTMQ_KEY_FLOW,	/* ring chosen by flow hash: per-flow FIFO */
	SOFTMQ_KEY_CPU,		/* ring chosen by enqueuing CPU: per-CPU FIFO */
	__SOFTMQ_KEY_MAX
};

#define SOFTMQ_KEY_MAX	(__SOFTMQ_KEY_MAX - 1)

/* Limits, enforced by the kernel's nla_policy and mirrored by tc. */
#define SOFTMQ_FLOWS_MIN	1U
#define SOFTMQ_FLOWS_MAX	65536U
#define SOFTMQ_FLOWS_DEFAULT	1024U
#define SOFTMQ_DEPTH_MIN	1U
#define SOFTMQ_DEPTH_MAX	4096U
#define SOFTMQ_DEPTH_DEFAULT	64U
#define SOFTMQ_QUANTUM_MIN	64U
#define SOFTMQ_QUANTUM_MAX	(1U << 20)
#define SOFTMQ_BANDS_DEFAULT	3U
/*
 * limit and memory_limit: fq_codel's defaults for an instance that serves a
 * whole device; an instance under a multiqueue parent (mq: one per TX queue)
 * gets them divided by the number of TX queues, but never less than the
 * _QUEUE_MIN values (64 queues: 64 x 4 MiB = 256 MiB, not 64 x 32 MiB).
 */
#define SOFTMQ_LIMIT_MIN		1U
#define SOFTMQ_LIMIT_MAX		(1U << 24)
#define SOFTMQ_LIMIT_DEFAULT		10240U
#define SOFTMQ_LIMIT_QUEUE_MIN		1024U
#define SOFTMQ_MEMORY_LIMIT_MIN		4096U
#define SOFTMQ_MEMORY_LIMIT_MAX		(1U << 31)
#define SOFTMQ_MEMORY_LIMIT_DEFAULT	(32U << 20)
#define SOFTMQ_MEMORY_LIMIT_QUEUE_MIN	(4U << 20)
/*
 * CoDel per ring, with fq_codel's defaults: target 5 ms, interval 100 ms,
 * ECN on, no ce_threshold.  Times are microseconds, as fq_codel's are.
 */
#define SOFTMQ_TARGET_DEFAULT		5000U
#define SOFTMQ_INTERVAL_DEFAULT		100000U
#define SOFTMQ_CODEL_TIME_MIN		1U
#define SOFTMQ_CODEL_TIME_MAX		60000000U	/* 60 s */
#define SOFTMQ_CE_THRESHOLD_OFF		0xffffffffU
/* Worst-case memory one instance may commit (all rings allocated). */
#define SOFTMQ_MEM_CAP		(128U << 20)

struct tc_softmq_xstats {
	__u64	drops_ring_full;	/* 0: a full ring spills (see spilled) */
	__u64	drops_nomem;		/* ring allocation failed (GFP_ATOMIC) */
	__u64	push_retries;		/* lost compare-and-swap races on a ring */
	__u64	ring_wakeups;		/* empty -> non-empty ring transitions */
	__u64	busy_skips;		/* dequeue passed a ring with a push in flight */
	__u64	bypassed;		/* sent without queueing (TCQ_F_CAN_BYPASS) */
	__u32	active_rings;		/* rings marked as holding packets */
	__u32	allocated_rings;	/* rings allocated so far (lazily) */
	__u32	ring_hiwat;		/* highest ring occupancy seen, packets */
	__u32	draining;		/* 1 while an old geometry is still drained */
	__u64	reconfigs;		/* geometry changes applied */
	__u64	drop_overlimit;		/* refused: limit reached */
	__u64	drop_overmemory;	/* refused: memory_limit reached */
	__u64	memory_usage;		/* skb truesize queued now, bytes */
	__u64	codel_drops;		/* dropped at dequeue by CoDel */
	__u32	maxpacket;		/* largest packet CoDel has seen, bytes */
	__u32	ecn_mark;		/* CE-marked by CoDel instead of dropped */
	__u32	ce_mark;		/* CE-marked above ce_threshold */
	__u32	new_flow_count;		/* rings served first after waking (sparse) */
	__u32	new_flows_len;		/* rings being served as new now */
	__u32	old_flows_len;		/* other rings holding packets now */
	__u64	spilled;		/* queued beyond a full ring's slots */
};

/*
 * Per-ring statistics (tc -s class show): class minor = band * rings per
 * band + index + 1.  Its size tells it from struct tc_softmq_xstats.
 */
struct tc_softmq_class_xstats {
	__u32	band;
	__u32	index;		/* ring within the band (flow hash slot, or CPU) */
	__s32	deficit;	/* DRR credit left, bytes */
	__u32	ldelay;		/* sojourn time of the last packet dequeued, us */
	__u32	count;		/* CoDel: drops/marks in this dropping state */
	__u32	lastcount;
	__u32	dropping;	/* CoDel: 1 while in dropping state */
	__s32	drop_next;	/* CoDel: next drop/mark due in, us (if dropping) */
	__u32	new_flow;	/* 1 while served as a new (sparse) flow */
	__u32	pad;
};

#endif /* _UAPI_SOFTMQ_H */
