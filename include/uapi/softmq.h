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
	TCA_SOFTMQ_FLOWS,	/* u32: rings per band in key flow mode */
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

/*
 * The largest values the kernel takes.  Its defaults and minima are not
 * ABI: it refuses what is out of range with an extack message, and dumps
 * what it runs with.
 */
#define SOFTMQ_FLOWS_MAX		65536U
#define SOFTMQ_DEPTH_MAX		4096U
#define SOFTMQ_QUANTUM_MAX		(1U << 20)
#define SOFTMQ_LIMIT_MAX		(1U << 24)
#define SOFTMQ_MEMORY_LIMIT_MAX		(1U << 31)
#define SOFTMQ_CODEL_TIME_MAX		60000000U	/* 60 s, in us */
/* TCA_SOFTMQ_CE_THRESHOLD: no CE marking on a sojourn threshold. */
#define SOFTMQ_CE_THRESHOLD_OFF		0xffffffffU

enum {
	TCA_SOFTMQ_XSTATS_QDISC,
	TCA_SOFTMQ_XSTATS_CLASS,
};

struct tc_softmq_qd_stats {
	/* Packets dropped, each also counted in the qdisc's drops. */
	__u64	drop_overlimit;		/* refused: limit reached */
	__u64	drop_overmemory;	/* refused: memory_limit reached */
	__u64	drop_nomem;		/* refused: no memory for a new ring */
	__u64	drop_codel;		/* dropped at dequeue by CoDel */
	__u64	memory_usage;		/* skb truesize queued now, bytes */
	/* Which way packets went. */
	__u64	spilled;		/* queued beyond a full ring's slots */
	__u64	bypassed;		/* sent without queueing (TCQ_F_CAN_BYPASS) */
	__u64	ring_wakeups;		/* idle -> marked ring transitions */
	__u64	push_retries;		/* lost compare-and-swap races on a ring */
	__u64	busy_skips;		/* dequeue passed a ring with a push in flight */
	__u64	reconfigs;		/* geometry changes applied */
	__u32	maxpacket;		/* largest packet CoDel has seen, bytes */
	__u32	ecn_mark;		/* CE-marked by CoDel instead of dropped */
	__u32	ce_mark;		/* CE-marked above ce_threshold */
	__u32	new_flow_count;		/* rings served first after waking (sparse) */
	__u32	new_flows_len;		/* rings being served as new now */
	__u32	old_flows_len;		/* other rings holding packets now */
	__u32	active_rings;		/* rings marked as holding packets */
	__u32	allocated_rings;	/* rings allocated so far (lazily) */
	__u32	ring_hiwat;		/* most packets seen in one ring */
	__u32	draining;		/* 1 while an old geometry is still drained */
};

/* One ring: tc -s class show, class minor = band * rings per band + index + 1. */
struct tc_softmq_cl_stats {
	__u32	band;
	__u32	index;		/* ring within the band (flow hash slot, or CPU) */
	__s32	deficit;	/* DRR credit left, bytes */
	__u32	ldelay;		/* sojourn time of the last packet dequeued, us */
	__u32	count;		/* CoDel: drops/marks in this dropping state */
	__u32	lastcount;
	__u32	dropping;	/* CoDel: 1 while in dropping state */
	__s32	drop_next;	/* CoDel: next drop/mark due in, us (if dropping) */
	__u32	new_flow;	/* 1 while served as a new (sparse) flow */
};

struct tc_softmq_xstats {
	__u32	type;		/* TCA_SOFTMQ_XSTATS_* */
	__u32	pad;
	union {
		struct tc_softmq_qd_stats qdisc_stats;
		struct tc_softmq_cl_stats class_stats;
	};
};

#endif /* _UAPI_SOFTMQ_H */
