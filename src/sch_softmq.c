// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_softmq.c	Soft multiqueue: lockless per-flow rings.
 *
 * Every CPU enqueues without a lock shared by all CPUs: a packet is hashed
 * to one of "flows" rings (or, with "key cpu", to the ring of the CPU that
 * sends it) and pushed into that lockless MPSC ring, or beyond its slots
 * onto its spill list: what is queued is bounded by limit and memory_limit,
 * not by the ring.  One consumer at a time (the qdisc seqlock) walks the
 * rings that have work round robin, byte-fair by deficit round robin,
 * inside up to three pfifo_fast-style priority bands.
 *
 * Concurrency (TCQ_F_NOLOCK):
 *  - softmq_enqueue() runs on any number of CPUs at once, BH disabled, in
 *    an RCU read-side section, without any qdisc lock.  It reads q->table,
 *    pushes into one ring and touches only per-CPU counters, that ring, and
 *    on the ring's empty -> non-empty edge its "active" bit and (read, and
 *    written only after the consumer cleared them) its band's hint and
 *    WOKE bits.
 *  - softmq_dequeue()/softmq_reset() are the consumer, serialized by
 *    sch->seqlock (or the root lock when a classful parent cleared NOLOCK).
 *  - softmq_change() holds RTNL; it excludes the consumer with the same lock
 *    and producers with RCU: a new geometry is a new table published with
 *    rcu_assign_pointer(); the old one is drained before the new one is
 *    served, so a flow's packets never overtake each other across a change.
 *
 * The ring itself is include/softmq_ring.h, shared with the userspace tests.
 */

#include <linux/bitmap.h>
#include <linux/cpu.h>
#include <linux/hash.h>
#include <linux/ipv6.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/siphash.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/u64_stats_sync.h>
#include <net/codel.h>
#include <net/codel_impl.h>
#include <net/codel_qdisc.h>
#include <net/ip.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include <uapi/softmq.h>
#include "softmq_compat.h"
#include "softmq_bound.h"
#include "softmq_codel.h"
#include "softmq_ring.h"

/* Minima and defaults (the maxima are uapi: include/uapi/softmq.h). */
#define SOFTMQ_FLOWS_DEFAULT		1024U
#define SOFTMQ_DEPTH_DEFAULT		64U
#define SOFTMQ_QUANTUM_MIN		64U
#define SOFTMQ_BANDS_DEFAULT		3U
/*
 * limit and memory_limit: fq_codel's defaults for an instance that serves a
 * whole device; an instance under a multiqueue parent (mq: one per TX queue)
 * gets them divided by the number of TX queues, but never less than the
 * _QUEUE_MIN values (64 queues: 64 x 4 MiB = 256 MiB, not 64 x 32 MiB).
 */
#define SOFTMQ_LIMIT_DEFAULT		10240U
#define SOFTMQ_LIMIT_QUEUE_MIN		1024U
#define SOFTMQ_MEMORY_LIMIT_MIN		4096U
#define SOFTMQ_MEMORY_LIMIT_DEFAULT	(32U << 20)
#define SOFTMQ_MEMORY_LIMIT_QUEUE_MIN	(4U << 20)
/* CoDel per ring, with fq_codel's defaults (us): target 5 ms, interval 100 ms. */
#define SOFTMQ_TARGET_DEFAULT		5000U
#define SOFTMQ_INTERVAL_DEFAULT		100000U
/* Worst-case memory one instance may commit (all rings allocated). */
#define SOFTMQ_MEM_CAP_MIB		128
#define SOFTMQ_MEM_CAP			((u64)SOFTMQ_MEM_CAP_MIB << 20)

#define SOFTMQ_MAX_BANDS	3
/* A hint word's band bits, without its "a ring woke" bits. */
#define softmq_hinted(hints)	((hints) & GENMASK(SOFTMQ_MAX_BANDS - 1, 0))
/*
 * A ring spills an item into its first two words (struct softmq_spill): for
 * a queued skb, its list linkage, which is the qdisc's while it holds it.
 */
static_assert(offsetof(struct sk_buff, next) ==
	      offsetof(struct softmq_spill, next));
static_assert(offsetof(struct sk_buff, prev) ==
	      offsetof(struct softmq_spill, pos));
static_assert(SOFTMQ_MAX_BANDS <= SOFTMQ_BAND_WOKE);
/* Each ring is a class, minor band * rings + index + 1: 16 bits (TC_H_MIN). */
#define SOFTMQ_MAX_CLASSES	TC_H_MIN_MASK
/* How long change() waits for a previous geometry to drain, and how often it looks. */
#define SOFTMQ_DRAIN_WAIT_MS	100
#define SOFTMQ_DRAIN_POLL_MS	20

struct softmq_config {
	u32	flows;
	u32	depth;
	u32	quantum;
	u32	bands;
	u32	key;
	u32	limit;
	u32	memory_limit;
	u32	codel;
	u32	target;		/* us */
	u32	interval;	/* us */
	u32	ecn;
	u32	ce_threshold;	/* us, or SOFTMQ_CE_THRESHOLD_OFF */
};

/*
 * A ring and what only the consumer keeps about it: its CoDel state and the
 * round in which it was last served as a new flow.  Allocated together on
 * first use; the ring goes last, its slots follow it.
 */
struct softmq_flow {
	struct codel_vars	cvars;
	u32			new_round;
	/*
	 * Consumer: the dequeue whose pop last left it empty and alone, and
	 * retired it, or found it refilled since (softmq_ring_drained()).
	 */
	u32			drained_at;
	struct softmq_ring	ring;
};

/*
 * One geometry: the rings and their active bitmaps.  Immutable after
 * publication except for the ring pointers (filled in lazily by producers
 * with cmpxchg), the active bits (set by producers, cleared by the consumer)
 * and the consumer-only section.
 */
struct softmq_table {
	u32			nr_rings;	/* per band */
	u32			depth;
	u32			bands;
	u32			key;
	u32			hash_seed;
	hsiphash_key_t		tuple_key;
	atomic_t		allocated;	/* rings allocated so far */
	unsigned long		*active[SOFTMQ_MAX_BANDS];
	/*
	 * Consumer only: rings it has found marked since they last woke.  A
	 * marked ring missing here woke since: a new (sparse) flow.
	 */
	unsigned long		*known[SOFTMQ_MAX_BANDS];
	struct softmq_ring	**rings;	/* [band * nr_rings + idx] */
	/*
	 * The WOKE bits of band_hints that a sparse-flow pass takes: none
	 * where a band has one ring, which is never a new flow.  Producers
	 * set them all the same (softmq_band_note()); softmq_dequeue() reads
	 * only these.
	 */
	unsigned long		woke_mask;

	/*
	 * Bit b: band b may have a marked ring (softmq_band_note/_clear_hint);
	 * bit SOFTMQ_BAND_WOKE + b: one may have woken (_woke_take).
	 * Producers read it on a ring's wake edge and write it only when the
	 * consumer has cleared a bit: its own line, off the header and cursors.
	 */
	unsigned long		band_hints ____cacheline_aligned_in_smp;

	/* Consumer only, or change() with the consumer excluded. */
	u32			cursor[SOFTMQ_MAX_BANDS] ____cacheline_aligned_in_smp;
	/* The ring served as a new flow now, or nr_rings for none. */
	u32			new_idx[SOFTMQ_MAX_BANDS];
	/* Round-robin laps: a ring is served as new at most once a lap. */
	u32			round[SOFTMQ_MAX_BANDS];
	/* Bits set in known[band]. */
	u32			known_rings[SOFTMQ_MAX_BANDS];
	/*
	 * The dequeue that last refilled a ring of the band, and the first
	 * ring it refilled there (softmq_ring_refill()).
	 */
	u32			credit_at[SOFTMQ_MAX_BANDS];
	u32			credit_idx[SOFTMQ_MAX_BANDS];
	/*
	 * The band's WOKE bit was taken (or a reset left rings marked but
	 * unknown), and no scan for new rings has come back empty since.
	 */
	bool			woke_pending[SOFTMQ_MAX_BANDS];
	/*
	 * Set by change() once no producer can reach this table (release;
	 * the consumer reads it with acquire, so it sees every push that was
	 * made before).
	 */
	bool			unreachable;
};

/* The producers' event counters, per CPU (struct tc_softmq_xstats). */
enum softmq_cpu_counter {
	SOFTMQ_CNT_SPILLED,
	SOFTMQ_CNT_NOMEM,
	SOFTMQ_CNT_PUSH_RETRIES,
	SOFTMQ_CNT_RING_WAKEUPS,
	SOFTMQ_CNT_OVERLIMIT,
	SOFTMQ_CNT_OVERMEMORY,
	SOFTMQ_CNT_MAX
};

struct softmq_cpu_stats {
	/* Keeps dump() from reading a torn u64 on 32-bit. */
	struct u64_stats_sync	syncp;
	u64_stats_t		cnt[SOFTMQ_CNT_MAX];
	/*
	 * This CPU's producers' share of the two bounds, not yet folded:
	 * changed by this_cpu_*() only (include/softmq_bound.h).
	 */
	s32			pkts_delta;
	s32			mem_delta;
};

struct softmq_sched_data {
	/* Read by producers on every packet; written by init/change only. */
	struct softmq_table __rcu	*table;
	struct softmq_cpu_stats __percpu *cpu_stats;
	/*
	 * CoDel is on: producers stamp packets (an unstamped one reads as
	 * "now").  cfg.codel's value, kept here on the producers' line: cfg
	 * shares lines with the consumer's counters.
	 */
	bool				timestamp;

	/* Read by producers; each count written once a batch (softmq_bound.h). */
	struct softmq_bound	pkts ____cacheline_aligned_in_smp;
	struct softmq_bound	memory;

	/* Consumer state. */
	struct softmq_table	*draining ____cacheline_aligned_in_smp;
	struct softmq_table	*spent;		/* drained, freed by change/destroy */
	u32			ring_hiwat;
	/* What we dequeued, counted like the core's bstats (gso_segs). */
	struct gnet_stats_basic_sync	dequeued;
	u64			busy_skips;
	/* The consumer's share of the two bounds, not yet folded. */
	s32			deq_pkts;
	s32			deq_mem;
	/*
	 * CoDel, per ring (struct softmq_flow).  Set with cparams under the
	 * consumer lock, so a dequeue sees one configuration's on/off and
	 * parameters (cfg.codel is dump()'s).
	 */
	bool			codel;
	struct codel_params	cparams;
	struct codel_stats	cstats;
	u32			codel_backlog;	/* the ring's bytes, for codel_dequeue() */
	/* Taken already: what codel_dequeue()'s first pop returns. */
	struct sk_buff		*codel_first;
	/*
	 * This dequeue met a ring whose head a producer has claimed but not
	 * published, or an old table producers may still reach.
	 */
	bool			busy;
	u64			codel_drops;
	u32			new_flow_count;
	/* softmq_dequeue() calls, to tell a ring's refills apart from wakes. */
	u32			dequeues;

	/*
	 * Written under RTNL, each field with WRITE_ONCE: dump() may read it
	 * without RTNL, and the consumer reads quantum.
	 */
	struct softmq_config	cfg;
	u64			reconfigs;
};

/*
 * The lock that serializes the consumer: the seqlock while NOLOCK, else the
 * root lock a classful parent dequeues under (what sch_tree_lock() takes).
 */
static spinlock_t *softmq_consumer_lock(struct Qdisc *sch)
{
	if (sch->flags & TCQ_F_NOLOCK)
		return &sch->seqlock;
	return qdisc_root_sleeping_lock(sch);
}

/*
 * q->table only changes in init/change/destroy, which hold RTNL and exclude
 * the consumer: RTNL holders and the consumer read it without RCU.  Under a
 * classful parent the consumer holds the root lock, which only RTNL may
 * look up (qdisc_root_sleeping_lock()): lockdep checks the NOLOCK consumer
 * and RTNL, and takes the locked mode on trust.
 */
static struct softmq_table *softmq_table_protected(struct Qdisc *sch)
{
	struct softmq_sched_data *q = qdisc_priv(sch);

	return rcu_dereference_protected(q->table,
					 lockdep_rtnl_is_held() ||
					 lockdep_is_held(&sch->seqlock) ||
					 !(sch->flags & TCQ_F_NOLOCK));
}

/* ---- data path ------------------------------------------------------------ */

static unsigned int softmq_band(const struct softmq_table *t,
				const struct sk_buff *skb)
{
	if (t->bands == 1)
		return 0;
	return sch_default_prio2band[skb->priority & TC_PRIO_MAX];
}

/*
 * A keyed hash of the skb's addresses and ports, for the skbs nobody has
 * hashed: IPv4 or IPv6 TCP and UDP, not fragmented, no IPv6 extension
 * header.  The flow dissector would walk the headers generically (and run
 * a BPF flow dissector attached to the namespace, which this path skips)
 * and siphash a struct flow_keys that also holds the protocol and a VLAN
 * id; here the fields are read where the stack put them, copied only when
 * they are not in the linear part, so that a flow takes this path by its
 * headers' contents and never by its skbs' layout.  hsiphash
 * (SipHash-1-3 on 64-bit, HalfSipHash on 32-bit) with the table's key
 * keeps the ring of a flow unpredictable to the sender, as a hashtable
 * keyed by packets must be.  TCP and UDP between the same addresses and
 * ports share a ring, and so do such flows on two VLANs.  A flow whose
 * packets only sometimes carry an IPv6 extension header (forwarded BIG
 * TCP GRO packets with a jumbo hop-by-hop header, on the kernels that add
 * one) has those in another ring.  The result is not stored in skb->hash:
 * it is not the stack's hash.  False: anything else, for the dissector.
 */
static bool softmq_flow_hash_tuple(const struct softmq_table *t,
				   const struct sk_buff *skb, u32 *hash)
{
	int nhoff = skb_network_offset(skb);
	/* The ports follow a header without options, and the addresses. */
	union {
		struct {
			struct iphdr	hdr;
			__be32		ports;
		} v4;
		struct {
			struct ipv6hdr	hdr;
			__be32		ports;
		} v6;
	} buf;
	const __be32 *ports;
	__be32 _ports;

	/* One read each: the ports right after a header without options. */
	BUILD_BUG_ON(offsetof(typeof(buf.v4), ports) != sizeof(struct iphdr));
	BUILD_BUG_ON(offsetof(typeof(buf.v6), ports) != sizeof(struct ipv6hdr));
	/* The hash's 36 bytes: IPv6's addresses end its header. */
	BUILD_BUG_ON(offsetof(struct ipv6hdr, daddr) + sizeof(struct in6_addr) !=
		     sizeof(struct ipv6hdr));
	if (nhoff < 0)
		return false;
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *iph;

		/*
		 * One read for the header and the ports where it has no
		 * options; a TCP or UDP packet too short for it has no ports
		 * either, and goes to the dissector as it would with two.
		 */
		iph = skb_header_pointer(skb, nhoff, sizeof(buf.v4), &buf.v4);
		if (!iph || iph->ihl < 5 || ip_is_fragment(iph) ||
		    (iph->protocol != IPPROTO_TCP && iph->protocol != IPPROTO_UDP))
			return false;
		ports = (const __be32 *)(iph + 1);
		if (unlikely(iph->ihl > 5)) {
			ports = skb_header_pointer(skb, nhoff + iph->ihl * 4,
						   sizeof(_ports), &_ports);
			if (!ports)
				return false;
		}
		*hash = hsiphash_3u32((__force u32)iph->saddr,
				      (__force u32)iph->daddr,
				      (__force u32)*ports, &t->tuple_key);
		return true;
	}
	if (skb->protocol == htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, nhoff, sizeof(buf.v6), &buf.v6);
		if (!ip6h ||
		    (ip6h->nexthdr != IPPROTO_TCP && ip6h->nexthdr != IPPROTO_UDP))
			return false;
		/* the source, the destination and the ports follow each other */
		*hash = hsiphash(&ip6h->saddr,
				 2 * sizeof(struct in6_addr) + sizeof(__be32),
				 &t->tuple_key);
		return true;
	}
	return false;
}

/*
 * The flow's hash, scattered over the rings by the table's seed or key,
 * dissecting the headers only when nobody has hashed the flow and it is
 * not plain TCP or UDP: the hash the skb carries (a device's on receive,
 * or TCP's, set from its socket), else the hash of the connected socket
 * that sends it (a connected UDP socket has one from connect() on: one
 * peer, one flow), else the addresses and ports' (forwarded packets
 * without a device hash, unconnected sockets that may send each packet
 * elsewhere, as sch_fq treats them, and pktgen), else the flow
 * dissector's.  A socket picks a new sk_txhash when its path fails (TCP's
 * RTO, for one); its packets then go to another ring, and the two rings'
 * packets of that flow may leave out of order once, as they may from
 * fq_codel.  The per-table seed and key decorrelate instances: under mq,
 * the device may have picked this queue from the same hash.
 */
static u32 softmq_flow_hash(const struct softmq_table *t, struct sk_buff *skb)
{
	const struct sock *sk = skb->sk;
	u32 hash;

	if (skb->l4_hash || skb->sw_hash)
		return __hash_32(skb->hash ^ t->hash_seed);
	if (sk && sk_fullsock(sk) && READ_ONCE(sk->sk_state) == TCP_ESTABLISHED) {
		hash = READ_ONCE(sk->sk_txhash);
		if (hash)
			return __hash_32(hash ^ t->hash_seed);
	}
	if (softmq_flow_hash_tuple(t, skb, &hash))
		return hash;
	return __hash_32(skb_get_hash(skb) ^ t->hash_seed);
}

/*
 * The CPU that sent @skb.  It is not always the one running enqueue: under
 * a classful parent, since 6.19 the CPU that drains the root's defer_list
 * enqueues every sender's skbs.  The core records a sender before the
 * qdisc: netdev_core_pick_tx() sets sender_cpu where it holds no CPU yet
 * (0, or a receive path's napi_id in that union).  A CPU an earlier hop
 * recorded stays (a tunnel, a veth peer forwarding, mirred): its packets
 * share that CPU's ring, which any CPU may push to.  Without XPS there is
 * no record, and key cpu keys by the enqueueing CPU.
 */
static unsigned int softmq_sender_cpu(const struct sk_buff *skb)
{
#ifdef CONFIG_XPS
	unsigned int cpu = skb->sender_cpu - 1;

	if (cpu < nr_cpu_ids)
		return cpu;
#endif
	/* BH is off (or migration, on PREEMPT_RT): the CPU cannot change. */
	return smp_processor_id();
}

static unsigned int softmq_ring_index(const struct softmq_table *t,
				      struct sk_buff *skb)
{
	if (t->key == SOFTMQ_KEY_CPU)
		return softmq_sender_cpu(skb);
	/* flows 1: nothing to choose, so no flow dissection for skbs without a hash */
	if (t->nr_rings == 1)
		return 0;
	return reciprocal_scale(softmq_flow_hash(t, skb), t->nr_rings);
}

static struct softmq_flow *softmq_flow(struct softmq_ring *ring)
{
	return container_of(ring, struct softmq_flow, ring);
}

static size_t softmq_flow_bytes(unsigned int depth)
{
	return offsetof(struct softmq_flow, ring) + softmq_ring_bytes(depth);
}

static void softmq_flow_free(struct softmq_ring *ring)
{
	if (ring)
		kfree(softmq_flow(ring));
}

/*
 * Rings are allocated on first use, so an instance costs only its pointer
 * table until flows show up.  Racing producers both allocate; the cmpxchg
 * (fully ordered, so the initialised ring is visible before the pointer)
 * picks one and the loser frees its copy.  A ring starts with a full
 * quantum, as an idle one is left (softmq_band_dequeue()).
 */
static struct softmq_ring *softmq_ring_lookup(struct softmq_sched_data *q,
					      struct softmq_table *t,
					      unsigned int slot)
{
	struct softmq_ring *ring = READ_ONCE(t->rings[slot]);
	struct softmq_flow *flow;
	struct softmq_ring *old;

	if (likely(ring))
		return ring;

	flow = kzalloc(softmq_flow_bytes(t->depth), GFP_ATOMIC | __GFP_NOWARN);
	if (!flow)
		return NULL;
	ring = &flow->ring;
	softmq_ring_init(ring, t->depth);
	WRITE_ONCE(ring->deficit, READ_ONCE(q->cfg.quantum));
	old = cmpxchg(&t->rings[slot], NULL, ring);
	if (old) {
		kfree(flow);
		return old;
	}
	atomic_inc(&t->allocated);
	return ring;
}

static int softmq_drop(struct sk_buff *skb, struct Qdisc *sch,
		       struct sk_buff **to_free, enum qdisc_drop_reason reason)
{
	/* qdisc_drop_reason() has no per-CPU stats variant. */
	tcf_set_qdisc_drop_reason(skb, reason);
	if (qdisc_is_percpu_stats(sch))
		return qdisc_drop_cpu(skb, sch, to_free);
	return qdisc_drop(skb, sch, to_free);
}

/* Producer: @pkts packets of @bytes truesize more (or fewer) on this CPU. */
static void softmq_charge(struct softmq_sched_data *q, s32 pkts, s32 bytes)
{
	softmq_bound_charge(&q->pkts, &q->cpu_stats->pkts_delta, pkts);
	softmq_bound_charge(&q->memory, &q->cpu_stats->mem_delta, bytes);
}

/*
 * Producer, BH off: the only writers of this CPU's counters run on this
 * CPU, in task context with BH off or (PREEMPT_RT) pinned to it but
 * preemptible.  u64_stats_add() is one CPU-local RMW on 64-bit, and on
 * 32-bit PREEMPT_RT u64_stats_update_begin() disables preemption, so two
 * senders of one CPU never tear a count either way.
 */
static void softmq_stat_add(struct softmq_sched_data *q,
			    enum softmq_cpu_counter c, u64 n)
{
	struct softmq_cpu_stats *cs = this_cpu_ptr(q->cpu_stats);

	u64_stats_update_begin(&cs->syncp);
	u64_stats_add(&cs->cnt[c], n);
	u64_stats_update_end(&cs->syncp);
}

/*
 * Consumer: @skb leaves the queue (sent, or freed by reset).  Always
 * inlined: once per packet, and out of line it was a call and a return
 * around two compares.
 */
static __always_inline void softmq_uncharge(struct softmq_sched_data *q,
					    struct sk_buff *skb)
{
	softmq_bound_uncharge(&q->pkts, &q->deq_pkts, 1);
	softmq_bound_uncharge(&q->memory, &q->deq_mem,
			      get_codel_cb(skb)->mem_usage);
}

/*
 * Consumer, the queue found empty: fold its deltas, so that an idle
 * instance's counts are not left overstated by up to a batch.  Always
 * inlined: at low load the empty dequeue runs once per packet, and the
 * call cost more than the two tests.
 */
static __always_inline void softmq_uncharge_flush(struct softmq_sched_data *q)
{
	softmq_bound_flush(&q->pkts, &q->deq_pkts);
	softmq_bound_flush(&q->memory, &q->deq_mem);
}

enum softmq_verdict {
	SOFTMQ_ADMIT,
	SOFTMQ_OVERLIMIT,
	SOFTMQ_OVERMEMORY,
};

/*
 * Admission against limit and memory_limit, without a lock and without a
 * write: below both limits, two reads of a line written once per batch
 * (softmq_bound), and every packet is admitted.  From a limit to its
 * ceiling, a packet is admitted only if its ring holds less than its share of
 * each limit (at least one packet), so that a sparse flow keeps getting
 * through while the rings of the fat ones are cut.  The share is the
 * room softmq_bound_room() leaves, over the rings in use: the limit over
 * them at the limit, shrinking to nothing at 9/8 of it, so that the fat
 * flows' refills of the rings the consumer empties stop short of the
 * ceiling, where a sparse flow would be cut too.
 * From the ceiling on (5/4 of a limit, more on many CPUs), nothing is
 * admitted.  The counts a producer reads understate by up to
 * nr_cpu_ids * (batch - 1) (the lag: less than 1/16 of the limit, more
 * where the batch's floor wins, see softmq_bound_batch()), and each CPU
 * may add the packet it is admitting, so the backlog stays under the
 * ceiling + the lag + nr_cpu_ids packets: limit * 21/16 + nr_cpu_ids
 * without the floor.  The memory likewise, with one skb per CPU.
 * "Each CPU": admission and charge run in one preempt-off section, so on
 * PREEMPT_RT too at most one admitted packet per CPU is not yet charged.
 */
static enum softmq_verdict softmq_admit(struct softmq_sched_data *q,
					const struct softmq_table *t,
					const struct softmq_ring *ring,
					u32 truesize)
{
	enum softmq_bound_level over_pkts = softmq_bound_level(&q->pkts);
	enum softmq_bound_level over_mem = softmq_bound_level(&q->memory);
	u32 rings, len;

	if (likely(over_pkts == SOFTMQ_BOUND_UNDER &&
		   over_mem == SOFTMQ_BOUND_UNDER))
		return SOFTMQ_ADMIT;
	if (over_pkts != SOFTMQ_BOUND_CEILING &&
	    over_mem != SOFTMQ_BOUND_CEILING) {
		rings = atomic_read(&t->allocated);
		len = softmq_ring_len(ring);
		if (softmq_bound_share_allows(&q->pkts, rings, 1, len) &&
		    softmq_bound_share_allows(&q->memory, rings, truesize, len))
			return SOFTMQ_ADMIT;
	}
	return over_pkts != SOFTMQ_BOUND_UNDER ? SOFTMQ_OVERLIMIT :
						 SOFTMQ_OVERMEMORY;
}

static int softmq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			  struct sk_buff **to_free)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	unsigned int pkt_len = qdisc_pkt_len(skb);
	u32 truesize = skb->truesize;
	unsigned int band, idx, retries = 0;
	enum softmq_verdict verdict;
	struct softmq_ring *ring;
	struct softmq_table *t;
	enum softmq_push res;

	/* BH-off is an RCU read-side section: change() waits for us. */
	t = rcu_dereference_bh(q->table);
	band = softmq_band(t, skb);
	idx = softmq_ring_index(t, skb);

	ring = softmq_ring_lookup(q, t, band * t->nr_rings + idx);
	if (unlikely(!ring)) {
		softmq_stat_add(q, SOFTMQ_CNT_NOMEM, 1);
		return softmq_drop(skb, sch, to_free, QDISC_DROP_GENERIC);
	}

	/*
	 * Between its tail cmpxchg and its slot store a producer holds the
	 * ring's head: the consumer stops there, and on its empty -> non-empty
	 * edge DRAINING stays set for the whole device.  On PREEMPT_RT a BH-off
	 * section is preemptible, so a low-priority sender preempted there
	 * would hold back every sender of the ring (with key cpu, every task
	 * on this CPU, SCHED_FIFO ones included) with no lock to boost it.
	 * Keep those two stores on the CPU; elsewhere BH-off already does.
	 * Admission and charge go in the same section: a sender preempted
	 * between them would be one more admitted packet the counts do not
	 * show yet, per preempted sender rather than per CPU.  The charge (and
	 * the ring's byte count) goes before the push, which publishes @skb to
	 * the consumer: its uncharge never comes first.
	 */
	preempt_disable();
	verdict = softmq_admit(q, t, ring, truesize);
	if (likely(verdict == SOFTMQ_ADMIT)) {
		/* Only an admitted packet pays the clock read. */
		/* mem_usage: its truesize may change before dequeue. */
		get_codel_cb(skb)->mem_usage = truesize;
		if (READ_ONCE(q->timestamp))
			codel_set_enqueue_time(skb);
		else
			get_codel_cb(skb)->enqueue_time = 0;
		softmq_charge(q, 1, truesize);
		softmq_ring_account(ring, pkt_len);
		res = softmq_ring_push(ring, skb, &retries);
	}
	preempt_enable();
	if (unlikely(verdict != SOFTMQ_ADMIT)) {
		if (verdict == SOFTMQ_OVERLIMIT)
			softmq_stat_add(q, SOFTMQ_CNT_OVERLIMIT, 1);
		else
			softmq_stat_add(q, SOFTMQ_CNT_OVERMEMORY, 1);
		return softmq_drop(skb, sch, to_free, QDISC_DROP_OVERLIMIT);
	}
	if (unlikely(retries))
		softmq_stat_add(q, SOFTMQ_CNT_PUSH_RETRIES, retries);
	if (unlikely(res == SOFTMQ_PUSH_SPILLED))
		softmq_stat_add(q, SOFTMQ_CNT_SPILLED, 1);
	/* From here on another CPU may have dequeued and freed skb. */
	if (res == SOFTMQ_PUSH_WOKE) {
		softmq_active_mark(t->active[band], t->nr_rings, idx);
		softmq_band_note(&t->band_hints, band);
		softmq_stat_add(q, SOFTMQ_CNT_RING_WAKEUPS, 1);
	} else if (unlikely(!softmq_ring_seen(t->active[band], t->nr_rings,
					      idx, &t->band_hints, band))) {
		/*
		 * The producer that woke this ring has not marked it (or noted
		 * its band) yet: it is between its push and its note (IRQ, vCPU
		 * preemption, PREEMPT_RT).  Until then the consumer cannot see
		 * our packet, no busy ring sets DRAINING, the qdisc looks
		 * empty, and the next packet of our flow could take the bypass
		 * path and overtake this one.  Mark and note ourselves (two
		 * reads and a barrier on every packet, see softmq_ring_seen();
		 * writes only in that window; a mark on
		 * a ring the consumer emptied meanwhile is retired on its next
		 * visit, a stale hint on the band's next scan).
		 */
		softmq_active_mark(t->active[band], t->nr_rings, idx);
		softmq_band_note(&t->band_hints, band);
	}
	qdisc_update_stats_at_enqueue(sch, pkt_len);
	return NET_XMIT_SUCCESS;
}

static void softmq_note_occupancy(struct softmq_sched_data *q,
				  const struct softmq_ring *ring)
{
	u32 n = softmq_ring_count(ring);

	if (n > q->ring_hiwat)
		WRITE_ONCE(q->ring_hiwat, n);
}

/*
 * Consumer: softmq_ring_take() where head's item was neither in its slot
 * nor first on the main spill list, and the ring has spilled.  Out of
 * line, so that the per-packet path (a slot or the main list's first
 * taken, or an empty pop: per packet at low load) saves no registers for
 * a call it does not make.
 */
static noinline struct sk_buff *
softmq_ring_take_spilled(struct softmq_ring *ring)
{
	struct sk_buff *skb = __softmq_ring_pop_spilled(ring);

	if (skb)
		softmq_ring_taken(ring, qdisc_pkt_len(skb));
	return skb;
}

/*
 * Consumer: the next packet of @ring, its bytes off the ring's count.
 * softmq_ring_pop() in its parts, the stack and the late list out of
 * line.  Always inlined: once per packet.
 */
static __always_inline struct sk_buff *
softmq_ring_take(struct softmq_ring *ring)
{
	struct sk_buff *skb = softmq_ring_pop_slot(ring);

	if (!skb)
		skb = softmq_ring_pop_listed(ring);
	if (!skb)
		return softmq_ring_unspilled(ring) ? NULL :
		       softmq_ring_take_spilled(ring);
	softmq_ring_taken(ring, qdisc_pkt_len(skb));
	return skb;
}

/*
 * A queued packet leaves without being sent (CoDel, reset()): it is counted
 * as dropped, and leaves the backlog by the same per-CPU counters it
 * entered.  Zeroing those in reset() would race with producers of other TX
 * queues still enqueueing into a shared root (the sums could end at +1, or
 * at -1 wrapped), and the packets would vanish from the identity
 * "enqueued == sent + dropped + backlog".  The per-CPU values may go below
 * zero one by one; only their sum means anything.
 */
static void softmq_queued_drop(struct Qdisc *sch, struct sk_buff *skb,
			       enum qdisc_drop_reason reason)
{
	softmq_uncharge(qdisc_priv(sch), skb);
	if (qdisc_is_percpu_stats(sch)) {
		qdisc_qstats_cpu_backlog_dec(sch, skb);
		qdisc_qstats_cpu_qlen_dec(sch);
		qdisc_qstats_cpu_drop(sch);
	} else {
		qdisc_qstats_backlog_dec(sch, skb);
		sch->q.qlen--;
		qdisc_qstats_drop(sch);
	}
	kfree_skb_reason(skb, (enum skb_drop_reason)reason);
}

/* What CoDel's next codel_should_drop() holds against @ring's backlog. */
static void softmq_codel_set_backlog(struct Qdisc *sch,
				     struct softmq_ring *ring)
{
	struct softmq_sched_data *q = qdisc_priv(sch);

	/* codel_should_drop() keeps the last MTU of a ring: what is left. */
	q->codel_backlog = min_t(unsigned long, softmq_ring_backlog(ring),
				 U32_MAX);
}

/*
 * Consumer: the next packet of @ring for CoDel, its backlog set after it
 * (a NULL ends CoDel's state without a look at the backlog).
 */
static __always_inline struct sk_buff *
softmq_codel_take(struct Qdisc *sch, struct softmq_ring *ring)
{
	struct sk_buff *skb = softmq_ring_take(ring);

	if (skb)
		softmq_codel_set_backlog(sch, ring);
	return skb;
}

/*
 * CoDel callbacks (include/net/codel_impl.h), consumer only; @ctx is the
 * qdisc.  A NULL from the ring (empty, or its head claimed by a producer
 * that has not published yet) ends CoDel's dropping state for the ring, as
 * an empty fq_codel flow does.  The first pop of a codel_dequeue() call
 * returns the packet softmq_codel_dequeue() took already.
 */
static struct sk_buff *softmq_codel_pop(struct codel_vars *vars, void *ctx)
{
	struct softmq_flow *flow = container_of(vars, struct softmq_flow, cvars);
	struct Qdisc *sch = ctx;
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = q->codel_first;

	if (skb) {
		q->codel_first = NULL;
		return skb;
	}
	return softmq_codel_take(sch, &flow->ring);
}

static void softmq_codel_drop(struct sk_buff *skb, void *ctx)
{
	struct Qdisc *sch = ctx;
	struct softmq_sched_data *q = qdisc_priv(sch);

	WRITE_ONCE(q->codel_drops, q->codel_drops + 1);
	softmq_queued_drop(sch, skb, QDISC_DROP_CONGESTED);
}

static u32 softmq_codel_len(const struct sk_buff *skb)
{
	return qdisc_pkt_len(skb);
}

static codel_time_t softmq_codel_time(const struct sk_buff *skb)
{
	codel_time_t t = codel_get_enqueue_time(skb);

	/* Queued while CoDel was off: no sojourn to hold against it. */
	return t ? t : codel_get_time();
}

/*
 * Consumer: codel_dequeue() for the ring @arg, whose next packet @skb did
 * not pass (softmq_codel_dequeue_first()): it gets that packet from its
 * first pop, the clock read again as it reads it.  Out of line, and apart
 * from the pass: its frame (six registers and a stack canary for the
 * ce_threshold selector's header read) is paid only by the packets that
 * come here.  @ctx is the qdisc.
 */
static noinline struct sk_buff *
softmq_codel_dequeue_slow(void *ctx, void *arg, struct sk_buff *skb)
{
	struct Qdisc *sch = ctx;
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct softmq_ring *ring = arg;

	q->codel_first = skb;
	skb = codel_dequeue(sch, &q->codel_backlog, &q->cparams,
			    &softmq_flow(ring)->cvars, &q->cstats,
			    softmq_codel_len, softmq_codel_time,
			    softmq_codel_drop, softmq_codel_pop);
	/* codel_dequeue() pops first, always: nothing is left for a next call. */
	DEBUG_NET_WARN_ON_ONCE(q->codel_first);
	return skb;
}

/*
 * Consumer: the next packet of @ring through CoDel
 * (softmq_codel_dequeue_first(), which the equivalence test runs too):
 * the packet is taken first, and codel_dequeue() runs only when
 * softmq_codel_pass() finds it would not hand the packet on as it is
 * (above target, dropping, a CE mark due).  An empty ring ends CoDel's
 * state for it, as codel_dequeue() ends it.  Out of line: inlined into
 * the round robin, even the pass's clock read grows its frame, and the
 * path without CoDel would pay for that on every packet.
 */
static noinline struct sk_buff *softmq_codel_dequeue(struct Qdisc *sch,
						     struct softmq_ring *ring)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = softmq_codel_take(sch, ring);

	/* The take set codel_backlog: read it after. */
	return softmq_codel_dequeue_first(sch, skb, q->codel_backlog,
					  &q->cparams,
					  &softmq_flow(ring)->cvars,
					  &q->cstats, softmq_codel_len,
					  softmq_codel_time,
					  softmq_codel_dequeue_slow, ring);
}

/*
 * Consumer: ring @idx of @band was found empty.  Retire it (idle and
 * unmarked, new again with a full quantum when it wakes), unless a push in
 * flight keeps it marked.  A retry run's lap may have retired a new ring
 * already: it is counted out of known_rings once.  A retired ring is no
 * longer the new flow in service: the lap of a rescan after MISSED, which
 * has no sparse-flow pass, may be the one that retires it, and a new_idx
 * left on it would have the next pass serve an unmarked ring.
 */
static __always_inline bool softmq_ring_idle(struct softmq_sched_data *q,
					     struct softmq_table *t,
					     unsigned int band,
					     unsigned long idx,
					     struct softmq_ring *ring)
{
	if (!softmq_ring_retire(ring, t->active[band], t->nr_rings, idx))
		return false;
	WRITE_ONCE(ring->deficit, READ_ONCE(q->cfg.quantum));
	if (__test_and_clear_bit(idx, t->known[band]))
		t->known_rings[band]--;
	if (t->new_idx[band] == idx)
		WRITE_ONCE(t->new_idx[band], t->nr_rings);
	return true;
}

/*
 * Consumer: ring @idx of @band gave a packet.  If the pop left it empty
 * and no other ring of the band is marked, retire it and clear the band's
 * hint now: at low load, where each packet leaves alone, the dequeue after
 * it then finds no band hinted and returns before the table, instead of a
 * visit that only retires the ring.  Only a ring that is alone: one
 * waiting behind it would see this one, refilled between two dequeues,
 * come back each time as a new flow with a fresh quantum, its deficit
 * forgotten at every pop.  The known rings are the cheap first test; the
 * rescan under the cleared hint is the one that decides.
 */
static __always_inline void softmq_ring_drained(struct softmq_sched_data *q,
						struct softmq_table *t,
						unsigned int band,
						unsigned long idx,
						struct softmq_ring *ring)
{
	struct softmq_flow *flow = softmq_flow(ring);

	if (t->known_rings[band] != 1 || !test_bit(idx, t->known[band]) ||
	    !softmq_ring_looks_empty(ring))
		return;
	/*
	 * Retired at the pop of the dequeue before this one, and refilled
	 * since: its sender keeps up with the dequeues (the core's loop, a
	 * transmit between two of them).  Retired at every pop, it would wake
	 * on every packet (the producer's mark and note, our hint clear, look
	 * and retire, on lines both sides write); leave it marked, as before,
	 * while the dequeues keep finding it refilled.
	 */
	if (flow->drained_at == q->dequeues - 1) {
		flow->drained_at = q->dequeues;
		return;
	}
	if (!softmq_band_clear_hint_but(&t->band_hints, band, t->active[band],
					t->nr_rings, idx))
		return;
	if (softmq_ring_idle(q, t, band, idx, ring)) {
		flow->drained_at = q->dequeues;
		return;
	}
	/* A push in flight keeps it marked: the band keeps its hint. */
	set_bit(band, &t->band_hints);
}

/*
 * Consumer: the next packet of ring @idx of @band, through CoDel where it
 * is on, charged to the ring's deficit; the ring retired if the pop left
 * it alone and empty (softmq_ring_drained(); a band of one ring, which
 * has no known rings, retires it at the next visit instead).  NULL if it
 * is empty or its head is claimed but not yet published.  The step that
 * the sparse-flow pass, the lap and the cursor's shortcut each take:
 * always inlined into the three, so that none pays a call for it.
 */
static __always_inline struct sk_buff *
softmq_ring_serve(struct Qdisc *sch, struct softmq_table *t,
		  unsigned int band, unsigned long idx,
		  struct softmq_ring *ring)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb;

	skb = q->codel ? softmq_codel_dequeue(sch, ring) :
			 softmq_ring_take(ring);
	if (!skb)
		return NULL;
	WRITE_ONCE(ring->deficit, ring->deficit - qdisc_pkt_len(skb));
	softmq_ring_drained(q, t, band, idx, ring);
	return skb;
}

/*
 * Consumer: the rounds of @band's lap that would only refill its rings,
 * taken at once, if every marked ring is in debt and the lap has met
 * each since it last refilled it (softmq_ring_refill(), at the ring where
 * that circle started, before its refill there).  Each would get the
 * least debt among them rounded down to whole quanta, in that many
 * circles that serve nothing, and then a quantum in the circle the lap
 * is on, which ends where it started: every marked ring gets both, and
 * the lap's next step is that ring's visit of the circle after, as it
 * would have been.  True if taken.  A marked ring with credit (busy, or
 * marked behind the lap, which starts it at a full quantum) ends the
 * look: the circle may serve it.  That every marked ring is in debt is
 * all the skip needs (a circle may start at any ring); the lap's circle
 * only keeps the look to one a circle.  @ring, ring @at of the band, is
 * the one the lap met again, in debt.
 */
static bool softmq_band_credit(struct softmq_table *t, unsigned int band,
			       unsigned long at, struct softmq_ring *ring,
			       long quantum)
{
	struct softmq_ring **rings = t->rings + band * t->nr_rings;
	unsigned long *active = t->active[band];
	unsigned long n = t->nr_rings;
	long least = LONG_MAX;
	unsigned long idx;

	/*
	 * One bulk flow alone in its band (the one known ring, no other
	 * marked): its debt is the least, without the two scans below, each
	 * a search of the whole bitmap to find the one ring (key flow:
	 * 1 024 bits, four library scans a GSO skb).
	 */
	if (t->known_rings[band] <= 1 && !softmq_active_any_but(active, n, at)) {
		least = rounddown(-ring->deficit, quantum) + quantum;
		WRITE_ONCE(ring->deficit, ring->deficit + least);
		t->round[band] += least / quantum;
		return true;
	}
	for (idx = softmq_active_next(active, n, 0); idx < n;
	     idx = softmq_active_next(active, n, idx + 1)) {
		ring = READ_ONCE(rings[idx]);
		if (!ring || ring->deficit > 0)
			return false;
		least = min(least, -ring->deficit);
	}
	least = rounddown(least, quantum) + quantum;
	for (idx = softmq_active_next(active, n, 0); idx < n;
	     idx = softmq_active_next(active, n, idx + 1)) {
		ring = READ_ONCE(rings[idx]);
		/* Marked behind the first scan: a full quantum, no debt. */
		if (ring && ring->deficit <= 0)
			WRITE_ONCE(ring->deficit, ring->deficit + least);
	}
	/* The laps they were: a ring new in one of them may be new again. */
	t->round[band] += least / quantum;
	return true;
}

/*
 * Consumer: ring @idx of @band is out of credit; a quantum more, and it
 * waits for the next round (false), or the rounds up to its next visit
 * are taken at once and it has credit (true: the lap serves it now, as
 * that visit would).  The first ring a dequeue refills in the band, met
 * again in debt in that dequeue, has seen the lap come full circle
 * without serving (a serve ends the dequeue; a ring with debt stays
 * marked until served), refilling every marked ring in debt: if all are
 * in debt, each round after it would do the same and nothing else until
 * the least indebted ring has credit, and softmq_band_credit() takes
 * those rounds at once, up to this ring's next visit.  If the ring has
 * no credit then, its refill of that visit, and the lap goes on,
 * refilling the rings still in debt, to the one that circle serves.  The
 * cheap test here, the look there: once a circle.  A GSO skb leaves its
 * ring tens of quanta in debt (43 KB at an MTU quantum: 28): where every
 * marked ring is in such debt (bulk flows, or one alone in its band),
 * each skb cost tens of rounds, a call and a scan step for every marked
 * ring in each.  ring_hiwat's samples in the skipped rounds are left out
 * (a statistic).  Only the consumer changes a marked ring's deficit; a
 * ring a producer marks meanwhile has a full quantum, and the lap meets
 * it as it would have met it in the rounds taken.  Out of line, so that
 * the lap's per-packet path does not carry it: what the lap holds moves
 * the compiler's layout of the whole walk, refill or not
 * (bench/README.md, stop 54).
 */
static noinline bool softmq_ring_refill(struct softmq_sched_data *q,
					struct softmq_table *t,
					unsigned int band, unsigned long idx,
					struct softmq_ring *ring)
{
	long quantum = READ_ONCE(q->cfg.quantum);

	if (t->credit_at[band] != q->dequeues) {
		t->credit_at[band] = q->dequeues;
		t->credit_idx[band] = idx;
	} else if (t->credit_idx[band] == idx) {
		/* Its visit of the circle after the skipped ones: now. */
		if (softmq_band_credit(t, band, idx, ring, quantum) &&
		    ring->deficit > 0)
			return true;
	}
	WRITE_ONCE(ring->deficit, ring->deficit + quantum);
	softmq_note_occupancy(q, ring);
	return false;
}

/*
 * Consumer: met ring @idx of @band (@ring, NULL if its slot has none),
 * marked and not known until now (it woke since the consumer last met
 * it).  True if it is to be served as a new flow.  Not if it was served
 * as new in this lap already: the lap serves it.  Nor if the lap left it
 * in debt (it served the ring meanwhile: the rescan after MISSED does not
 * look for new rings): it keeps the deficit it has, a full quantum since
 * it went idle less what the lap took, and gets no extra quantum.  Either
 * way another ring that woke is still unknown, and the next dequeue's
 * pass finds it: one look per dequeue (a lone flow that keeps waking
 * paid two).
 */
static __always_inline bool softmq_band_meet(struct softmq_sched_data *q,
					     struct softmq_table *t,
					     unsigned int band,
					     unsigned long idx,
					     struct softmq_ring *ring)
{
	struct softmq_flow *flow;

	__set_bit(idx, t->known[band]);
	t->known_rings[band]++;
	if (!ring)
		return false;
	flow = softmq_flow(ring);
	if (flow->new_round == t->round[band])
		return false;
	flow->new_round = t->round[band];
	if (ring->deficit <= 0)
		return false;
	WRITE_ONCE(t->new_idx[band], idx);
	WRITE_ONCE(q->new_flow_count, q->new_flow_count + 1);
	return true;
}

/*
 * Consumer: the ring of @band to serve as a new (sparse) flow, or nr_rings
 * for none.  A marked ring the consumer has not met since it woke (marked,
 * not known) is a new flow: it is served before the band's backlogged
 * rings for one quantum, as fq_codel serves its new_flows list, but at most
 * once per round-robin lap of the band, so flows that keep going idle and
 * waking cannot starve the backlogged ones (fq_codel sends such a flow
 * through its old list once for the same reason).  All of this is consumer
 * state: producers only mark rings.
 */
static unsigned long softmq_band_new_flow(struct softmq_sched_data *q,
					  struct softmq_table *t,
					  unsigned int band)
{
	struct softmq_ring **rings = t->rings + band * t->nr_rings;
	unsigned long n = t->nr_rings;
	unsigned long idx;

	if (t->new_idx[band] < n)
		return t->new_idx[band];
	/* No ring woke since a scan found none: no scan. */
	if (!t->woke_pending[band] &&
	    !softmq_band_woke_take(&t->band_hints, band))
		return n;
	t->woke_pending[band] = true;
	idx = softmq_active_first_andnot(t->active[band], t->known[band], n);
	if (idx >= n) {
		t->woke_pending[band] = false;
		return n;
	}
	return softmq_band_meet(q, t, band, idx, READ_ONCE(rings[idx])) ?
	       idx : n;
}

/*
 * Consumer: the first marked ring of @band at or after @from, wrapping
 * once (a wrap ends a round-robin lap), or nr_rings if none is marked.  A
 * band found empty has its hint cleared, and is scanned once more in case
 * a producer marked a ring meanwhile (softmq_band_clear_hint()); a second
 * empty scan leaves the hint set: producers that keep marking must not
 * keep the consumer here, and a stale hint costs one scan later.
 */
static unsigned long softmq_band_next(struct softmq_table *t,
				      unsigned int band, unsigned long from)
{
	unsigned long n = t->nr_rings;
	unsigned long idx;

	idx = softmq_active_next_wrap(t->active[band], n, from);
	if (idx < n) {
		if (idx < from)
			t->round[band]++;
		return idx;
	}
	t->round[band]++;
	if (softmq_band_clear_hint(&t->band_hints, band, t->active[band], n))
		return n;
	return softmq_active_next(t->active[band], n, 0);
}

/*
 * Consumer: a ring of @band may be due as a new flow: one in service, or
 * one that may have woken since a scan found none.  Without either, the
 * sparse-flow pass would only return.
 */
static bool softmq_band_new_pending(const struct softmq_table *t,
				    unsigned int band)
{
	return t->new_idx[band] < t->nr_rings || t->woke_pending[band] ||
	       softmq_band_woke(&t->band_hints, band);
}

/*
 * Consumer: where no ring of @band is known and no new flow is being
 * served, its cursor ring @idx, marked, woke since the consumer last met
 * it (or was marked unmet); where the consumer keeps up, the ring it
 * served last (retired at the pop that emptied it, softmq_ring_drained())
 * is the one that wakes next: key cpu's one ring with one sender, at
 * every packet.  Meet it here, without the WOKE bit's clear and the
 * pass's scan.  True if it is the lap's (new in this lap already, in
 * debt, or no ring in its slot), which then visits it first: the pass is
 * skipped.  False if it is now the new flow the pass serves (t->new_idx),
 * or was not met.  The WOKE bit stays set until a pass takes it (one that
 * runs with a ring known, a new flow in service or the cursor ring
 * unmarked); another ring that woke waits for that pass, up to a new
 * flow's quantum and a packet, as it waits when the scan meets a lower
 * index first.  While the bit stays set, producers' notes skip its store.
 */
static __always_inline bool softmq_band_meet_cursor(struct softmq_sched_data *q,
						    struct softmq_table *t,
						    unsigned int band,
						    unsigned long idx)
{
	if (t->known_rings[band] || t->new_idx[band] < t->nr_rings)
		return false;
	return !softmq_band_meet(q, t, band, idx,
				 READ_ONCE(t->rings[band * t->nr_rings + idx]));
}

/*
 * Consumer: deficit round robin over the marked rings of one band whose
 * hint is set, a new flow first (@new_flows: not on the rescan after
 * MISSED).  Returns NULL when the band is empty, or after a full lap that
 * only met rings whose head slot a producer has claimed but not yet
 * published (q->busy is then set): waiting for such a producer could be
 * long (IRQ, vCPU preemption, PREEMPT_RT), and it runs the qdisc itself
 * once it has published.
 */
static struct sk_buff *softmq_band_dequeue(struct Qdisc *sch,
					   struct softmq_table *t,
					   unsigned int band, bool new_flows)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct softmq_ring **rings = t->rings + band * t->nr_rings;
	unsigned long n = t->nr_rings;
	unsigned long idx = t->cursor[band];
	/* The first ring of the current run of busy visits, n for none. */
	unsigned long busy_from = n;
	struct softmq_ring *ring;
	struct sk_buff *skb;
	bool at_cursor;

	/*
	 * New flows first; one ring per band has nothing to put first, nor
	 * has a band with none due while its cursor ring is marked (the lap
	 * starts there, below), nor one whose marked cursor ring is met here
	 * and left to the lap.  Only the consumer clears a mark, so one it
	 * read set stays set meanwhile; a mark or a wake after the read is
	 * met as one after the scan's was.  The read is an acquire: the
	 * cursor is not taken from the mark word, so no address dependency
	 * orders the slot's read after it (a control dependency orders no
	 * loads on arm64 or POWER), and the slot could still read NULL
	 * where the producer published its ring (cmpxchg, fully ordered)
	 * before the mark.  Free on x86.
	 */
	at_cursor = test_bit_acquire(idx, t->active[band]);
	if (new_flows && n > 1 &&
	    (!at_cursor || (softmq_band_new_pending(t, band) &&
			    !softmq_band_meet_cursor(q, t, band, idx)))) {
		while ((idx = softmq_band_new_flow(q, t, band)) < n) {
			ring = READ_ONCE(rings[idx]);
			if (ring->deficit <= 0) {
				/* Its quantum spent, it joins the lap owing. */
				WRITE_ONCE(t->new_idx[band], n);
				continue;
			}
			skb = softmq_ring_serve(sch, t, band, idx, ring);
			if (skb)
				return skb;
			/*
			 * Empty.  One a push in flight keeps marked is the
			 * lap's.  No second scan: the lap serves whatever woke
			 * since, and the next dequeue puts it first.
			 */
			softmq_ring_idle(q, t, band, idx, ring);
			WRITE_ONCE(t->new_idx[band], n);
			break;
		}
		/*
		 * Nothing new to serve, and no ring we met since it woke still
		 * holds packets: the band is most likely empty.  Clear its
		 * hint and look once, instead of a lap's scan and then that
		 * same look (at low load, after every packet).  A ring found
		 * there sets the hint again and the lap serves it.
		 */
		if (!t->known_rings[band] &&
		    softmq_band_clear_hint(&t->band_hints, band,
					   t->active[band], n))
			return NULL;
		idx = t->cursor[band];
		at_cursor = test_bit_acquire(idx, t->active[band]);
	}

	/*
	 * The old flows: the round robin's lap.  A scan from a marked cursor
	 * ring finds that ring (no wrap, no new round): the lap starts there
	 * without one, on a backlogged band at every dequeue.
	 */
	for (;; idx++, at_cursor = false) {
		if (!at_cursor)
			idx = softmq_band_next(t, band, idx);
		if (idx >= n || idx == busy_from)
			break;
		ring = READ_ONCE(rings[idx]);
		if (ring && ring->deficit <= 0) {
			busy_from = n;
			if (!softmq_ring_refill(q, t, band, idx, ring))
				continue;
		}
		skb = ring ? softmq_ring_serve(sch, t, band, idx, ring) : NULL;
		if (skb) {
			t->cursor[band] = idx;
			return skb;
		}
		if (ring && softmq_ring_idle(q, t, band, idx, ring))
			continue;
		/* A push in flight: its producer runs the qdisc once it is in. */
		WRITE_ONCE(q->busy_skips, q->busy_skips + 1);
		q->busy = true;
		if (busy_from == n)
			busy_from = idx;
	}
	t->cursor[band] = idx < n ? idx : 0;
	return NULL;
}

static struct sk_buff *softmq_table_dequeue(struct Qdisc *sch,
					    struct softmq_table *t,
					    bool new_flows)
{
	struct sk_buff *skb;
	unsigned int band;

	for (band = 0; band < t->bands; band++) {
		/*
		 * An empty band costs a bit test here, not a call.  False only
		 * if no ring of the band was marked when the bit was read.
		 */
		if (!test_bit(band, &t->band_hints))
			continue;
		skb = softmq_band_dequeue(sch, t, band, new_flows);
		if (skb)
			return skb;
	}
	return NULL;
}

/*
 * Consumer: the round robin's next packet where it is the cursor ring's,
 * taken without the lap.  On a backlogged band each dequeue but one a
 * quantum serves the ring it served last, and the table's walk (its
 * frame, the band loop, the sparse-flow test, the lap's set-up) cost as
 * much as the take.  @hints, read by the caller, has a band bit and no
 * hinted band's WOKE bit of t->woke_mask set: no ring of such a band woke
 * since the sparse-flow pass last took the bit (a band of one ring has no
 * such pass, nor a new flow).
 * The first hinted band is the one the walk would serve, and its cursor
 * ring is the lap's first if it is marked, and no new flow is due (the
 * rest of softmq_band_new_pending()): then this is the walk's first
 * step, as it would take it.  NULL for anything else (a ring being
 * served as new or found woken, the cursor ring unmarked, out of credit,
 * empty or busy): the walk then runs as ever, and takes from where this
 * left the ring.
 */
static noinline struct sk_buff *softmq_cursor_dequeue(struct Qdisc *sch,
						      struct softmq_table *t,
						      unsigned long hints)
{
	unsigned int band = __ffs(hints);
	unsigned long idx = t->cursor[band];
	struct softmq_ring *ring;

	/* Acquire, as softmq_band_dequeue()'s read: the slot after it. */
	if (t->new_idx[band] < t->nr_rings || t->woke_pending[band] ||
	    !test_bit_acquire(idx, t->active[band]))
		return NULL;
	ring = READ_ONCE(t->rings[band * t->nr_rings + idx]);
	if (!ring || ring->deficit <= 0)
		return NULL;
	return softmq_ring_serve(sch, t, band, idx, ring);
}

/* Consumer, or any caller once no producer can reach @t. */
static bool softmq_table_idle(const struct softmq_table *t)
{
	unsigned int band;

	for (band = 0; band < t->bands; band++)
		if (softmq_active_next(t->active[band], t->nr_rings, 0) <
		    t->nr_rings)
			return false;
	return true;
}

/*
 * Consumer, once the table a change() replaced gave nothing: forget it if
 * it is empty and no producer can reach it any more.  Until change() has
 * seen a grace period a producer may still push into it, and serving the
 * new table could let a flow's later packet overtake that one.
 */
static bool softmq_drain_end(struct softmq_sched_data *q)
{
	struct softmq_table *old = q->draining;

	/* Acquire: pairs with the release in softmq_change(). */
	if (!smp_load_acquire(&old->unreachable) || !softmq_table_idle(old))
		return false;
	WRITE_ONCE(q->draining, NULL);
	q->spent = old;
	return true;
}

/*
 * CoDel dropped packets in this dequeue.  A classful parent (NOLOCK
 * cleared) counted them in its own qlen and backlog: tell it.  With NOLOCK
 * the parent is the root or mq, which sums its children's counters.
 */
static void softmq_codel_report(struct Qdisc *sch)
{
	struct softmq_sched_data *q = qdisc_priv(sch);

	if (!(sch->flags & TCQ_F_NOLOCK))
		qdisc_tree_reduce_backlog(sch, q->cstats.drop_count,
					  q->cstats.drop_len);
	q->cstats.drop_count = 0;
	q->cstats.drop_len = 0;
}

static struct sk_buff *softmq_dequeue(struct Qdisc *sch)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	bool need_retry = true;
	struct softmq_table *t;
	unsigned long hints;
	struct sk_buff *skb;

	q->dequeues++;
retry:
	q->busy = false;
	skb = NULL;
	if (unlikely(q->draining)) {
		/* Packets queued before a change leave before newer ones. */
		skb = softmq_table_dequeue(sch, q->draining, need_retry);
		if (!skb && !softmq_drain_end(q))
			q->busy = true;
	}
	t = softmq_table_protected(sch);
	/*
	 * No band hinted: every band would be skipped (its test_bit()).
	 * The empty dequeue that ends each burst, per packet at low load,
	 * stops at this load.  A ring that woke (a WOKE bit) has the walk
	 * look for new flows: at low load, where every packet wakes its
	 * ring, the cursor's shortcut is not even called.  The test is on
	 * every hinted band's bit: one for the served band's bit alone
	 * (another band's new flows wait for the walk to reach that band in
	 * any case) cost 3-7 instructions a packet at low load.  An unhinted
	 * band's bit is left out: the walk skips that band, and its bit may
	 * stay set while the band is empty (softmq_band_meet_cursor()).
	 */
	hints = READ_ONCE(t->band_hints);
	if (!skb && !q->draining && softmq_hinted(hints)) {
		if (!(hints & (hints << SOFTMQ_BAND_WOKE) & t->woke_mask))
			skb = softmq_cursor_dequeue(sch, t, hints);
		if (!skb)
			skb = softmq_table_dequeue(sch, t, need_retry);
	}
	if (unlikely(q->cstats.drop_count))
		softmq_codel_report(sch);
	if (skb) {
		softmq_uncharge(q, skb);
		bstats_update(&q->dequeued, skb);
		qdisc_update_stats_at_dequeue(sch, skb);
		return skb;
	}

	/*
	 * NOLOCK contract: a producer whose qdisc_run_begin() lost the race
	 * for the seqlock set MISSED after pushing.  Clear MISSED/DRAINING,
	 * then look again: a push that raced with our scan is found now, or
	 * its producer sets MISSED again and qdisc_run_end() reschedules us.
	 */
	if (need_retry && (READ_ONCE(sch->state) & QDISC_STATE_NON_EMPTY)) {
		clear_bit(__QDISC_STATE_MISSED, &sch->state);
		clear_bit(__QDISC_STATE_DRAINING, &sch->state);
		/* Order the clears before the rescan's ring reads. */
		smp_mb__after_atomic();
		need_retry = false;
		goto retry;
	}

	/*
	 * Packets are queued that we cannot take yet (a push in flight, or an
	 * old table producers may still reach).  Their producer's own
	 * qdisc_run(), or change(), runs us again; meanwhile DRAINING keeps
	 * nolock_qdisc_is_empty() false, so the bypass path cannot send a
	 * newer packet ahead of them, and without MISSED we do not spin.
	 */
	if (q->busy)
		set_bit(__QDISC_STATE_DRAINING, &sch->state);
	softmq_uncharge_flush(q);
	return NULL;
}

/* ---- control path ---------------------------------------------------------- */

/*
 * Consumer (or with no producer left): free every queued packet (counted
 * against @sch's stats by reset(); destroy() passes NULL) and leave
 * @t as a fresh table is, each ring idle and unmarked with a full quantum,
 * each band unhinted, cursors at zero, through the same retire handshakes as
 * dequeue.  A ring with a push in flight keeps its mark (and its band its
 * hint): that packet is the producer's to run, as after any dequeue.
 */
static void softmq_table_purge(struct Qdisc *sch, struct softmq_table *t)
{
	struct softmq_sched_data *q = sch ? qdisc_priv(sch) : NULL;
	long quantum = q ? READ_ONCE(q->cfg.quantum) : 0;
	unsigned int band, idx;
	struct sk_buff *skb;

	for (band = 0; band < t->bands; band++) {
		struct softmq_ring **rings = t->rings + band * t->nr_rings;
		unsigned long *active = t->active[band];

		for (idx = 0; idx < t->nr_rings; idx++) {
			struct softmq_ring *ring = READ_ONCE(rings[idx]);

			if (!ring)
				continue;
			while ((skb = softmq_ring_take(ring)) != NULL) {
				if (sch)
					softmq_queued_drop(sch, skb,
							   QDISC_DROP_GENERIC);
				else
					kfree_skb(skb);
			}
			WRITE_ONCE(ring->deficit, quantum);
			codel_vars_init(&softmq_flow(ring)->cvars);
			if (test_bit(idx, active))
				softmq_ring_retire(ring, active, t->nr_rings,
						   idx);
		}
		bitmap_zero(t->known[band], t->nr_rings);
		t->known_rings[band] = 0;
		WRITE_ONCE(t->new_idx[band], t->nr_rings);
		/*
		 * A ring whose push was in flight stays marked and is now
		 * unknown, and its push woke nothing: look for it once.  A
		 * band of one ring has no sparse-flow pass to take the flag,
		 * and softmq_cursor_dequeue() would read it for ever.
		 */
		t->woke_pending[band] = t->nr_rings > 1;
		t->cursor[band] = 0;
		softmq_band_clear_hint(&t->band_hints, band, active,
				       t->nr_rings);
	}
}

static void softmq_table_free(struct softmq_table *t)
{
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->bands * t->nr_rings; i++)
		softmq_flow_free(t->rings[i]);
	kvfree(t);
}

static unsigned int softmq_nr_rings(const struct softmq_config *cfg)
{
	return cfg->key == SOFTMQ_KEY_CPU ? nr_cpu_ids : cfg->flows;
}

/* One allocation: header, ring pointers, then a cache-line aligned bitmap
 * per band (producers set bits there, so keep them off the header) after
 * its summary word (softmq_active_summary()), then the consumer's "known"
 * bitmap per band.
 */
static size_t softmq_table_bytes(const struct softmq_config *cfg,
				 size_t *bitmap_off, size_t *bitmap_bytes)
{
	size_t n = softmq_nr_rings(cfg);

	*bitmap_off = ALIGN(sizeof(struct softmq_table) +
			    cfg->bands * n * sizeof(struct softmq_ring *),
			    SMP_CACHE_BYTES);
	*bitmap_bytes = ALIGN((1 + BITS_TO_LONGS(n)) * sizeof(long),
			      SMP_CACHE_BYTES);
	return *bitmap_off + 2 * cfg->bands * *bitmap_bytes;
}

/* Worst case, every ring allocated; slab rounds up to at most a power of 2. */
static u64 softmq_geometry_bytes(const struct softmq_config *cfg)
{
	size_t off, bytes, table = softmq_table_bytes(cfg, &off, &bytes);
	u64 ring = roundup_pow_of_two(softmq_flow_bytes(cfg->depth));

	return table + (u64)cfg->bands * softmq_nr_rings(cfg) * ring;
}

static struct softmq_table *softmq_table_alloc(const struct softmq_config *cfg)
{
	size_t bitmap_off, bitmap_bytes;
	struct softmq_table *t;
	unsigned int band;

	t = kvzalloc(softmq_table_bytes(cfg, &bitmap_off, &bitmap_bytes),
		     GFP_KERNEL);
	if (!t)
		return NULL;
	t->nr_rings = softmq_nr_rings(cfg);
	t->depth = cfg->depth;
	t->bands = cfg->bands;
	if (t->nr_rings > 1)
		t->woke_mask = GENMASK(SOFTMQ_BAND_WOKE + SOFTMQ_MAX_BANDS - 1,
				       SOFTMQ_BAND_WOKE);
	t->key = cfg->key;
	t->hash_seed = get_random_u32();
	get_random_bytes(&t->tuple_key, sizeof(t->tuple_key));
	t->rings = (struct softmq_ring **)(t + 1);
	for (band = 0; band < cfg->bands; band++) {
		t->active[band] = (unsigned long *)((char *)t + bitmap_off +
						    band * bitmap_bytes) + 1;
		t->known[band] = (unsigned long *)((char *)t + bitmap_off +
						   (cfg->bands + band) * bitmap_bytes);
		t->new_idx[band] = t->nr_rings;
		/* Rings start at new_round 0: each may be new in the first lap. */
		t->round[band] = 1;
	}
	return t;
}

static const struct netlink_range_validation softmq_flows_range = {
	.min = 1,
	.max = SOFTMQ_FLOWS_MAX,
};

static const struct netlink_range_validation softmq_depth_range = {
	.min = 1,
	.max = SOFTMQ_DEPTH_MAX,
};

static const struct netlink_range_validation softmq_quantum_range = {
	.min = SOFTMQ_QUANTUM_MIN,
	.max = SOFTMQ_QUANTUM_MAX,
};

static const struct netlink_range_validation softmq_limit_range = {
	.min = 1,
	.max = SOFTMQ_LIMIT_MAX,
};

static const struct netlink_range_validation softmq_memory_limit_range = {
	.min = SOFTMQ_MEMORY_LIMIT_MIN,
	.max = SOFTMQ_MEMORY_LIMIT_MAX,
};

static const struct netlink_range_validation softmq_codel_time_range = {
	.min = 1,
	.max = SOFTMQ_CODEL_TIME_MAX,
};

static const struct nla_policy softmq_policy[TCA_SOFTMQ_MAX + 1] = {
	[TCA_SOFTMQ_FLOWS]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_flows_range),
	[TCA_SOFTMQ_DEPTH]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_depth_range),
	[TCA_SOFTMQ_QUANTUM]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_quantum_range),
	[TCA_SOFTMQ_BANDS]	= NLA_POLICY_RANGE(NLA_U32, 1, SOFTMQ_MAX_BANDS),
	[TCA_SOFTMQ_KEY]	= NLA_POLICY_MAX(NLA_U32, SOFTMQ_KEY_MAX),
	[TCA_SOFTMQ_LIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_limit_range),
	[TCA_SOFTMQ_MEMORY_LIMIT] = NLA_POLICY_FULL_RANGE(NLA_U32,
							  &softmq_memory_limit_range),
	[TCA_SOFTMQ_CODEL]	= NLA_POLICY_MAX(NLA_U32, 1),
	[TCA_SOFTMQ_TARGET]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_codel_time_range),
	[TCA_SOFTMQ_INTERVAL]	= NLA_POLICY_FULL_RANGE(NLA_U32, &softmq_codel_time_range),
	[TCA_SOFTMQ_ECN]	= NLA_POLICY_MAX(NLA_U32, 1),
	/* A time, or SOFTMQ_CE_THRESHOLD_OFF: checked in softmq_parse(). */
	[TCA_SOFTMQ_CE_THRESHOLD] = { .type = NLA_U32 },
};

/* Parse @opt over @cfg.  On error @cfg may be partly written: callers
 * pass a copy and keep it only on success.
 */
static int softmq_parse(struct nlattr *opt, struct softmq_config *cfg,
			struct netlink_ext_ack *extack)
{
	struct nlattr *tb[TCA_SOFTMQ_MAX + 1];
	int err;

	/*
	 * Not nla_parse_nested(): it refuses a nest without NLA_F_NESTED, and
	 * most of iproute2's qdiscs (and tc builds of our plugin before it
	 * set the flag) send TCA_OPTIONS without it.  Take the nest with or
	 * without the flag; its contents still get strict validation (no
	 * unknown types, exact lengths, no trailing bytes).
	 */
	err = __nla_parse(tb, TCA_SOFTMQ_MAX, nla_data(opt), nla_len(opt),
			  softmq_policy, NL_VALIDATE_STRICT, extack);
	if (err < 0)
		return err;

	/* Any count: softmq_ring_index() scales the hash, as fq_codel does. */
	if (tb[TCA_SOFTMQ_FLOWS])
		cfg->flows = nla_get_u32(tb[TCA_SOFTMQ_FLOWS]);
	if (tb[TCA_SOFTMQ_DEPTH]) {
		cfg->depth = nla_get_u32(tb[TCA_SOFTMQ_DEPTH]);
		if (!is_power_of_2(cfg->depth)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_SOFTMQ_DEPTH],
					    "depth must be a power of two");
			return -EINVAL;
		}
	}
	if (tb[TCA_SOFTMQ_QUANTUM])
		cfg->quantum = nla_get_u32(tb[TCA_SOFTMQ_QUANTUM]);
	if (tb[TCA_SOFTMQ_BANDS]) {
		cfg->bands = nla_get_u32(tb[TCA_SOFTMQ_BANDS]);
		if (cfg->bands != 1 && cfg->bands != SOFTMQ_MAX_BANDS) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_SOFTMQ_BANDS],
					    "bands must be 1 or 3");
			return -EINVAL;
		}
	}
	if (tb[TCA_SOFTMQ_KEY])
		cfg->key = nla_get_u32(tb[TCA_SOFTMQ_KEY]);
	if (tb[TCA_SOFTMQ_LIMIT])
		cfg->limit = nla_get_u32(tb[TCA_SOFTMQ_LIMIT]);
	if (tb[TCA_SOFTMQ_MEMORY_LIMIT])
		cfg->memory_limit = nla_get_u32(tb[TCA_SOFTMQ_MEMORY_LIMIT]);
	if (tb[TCA_SOFTMQ_CODEL])
		cfg->codel = nla_get_u32(tb[TCA_SOFTMQ_CODEL]);
	if (tb[TCA_SOFTMQ_TARGET])
		cfg->target = nla_get_u32(tb[TCA_SOFTMQ_TARGET]);
	if (tb[TCA_SOFTMQ_INTERVAL])
		cfg->interval = nla_get_u32(tb[TCA_SOFTMQ_INTERVAL]);
	if (tb[TCA_SOFTMQ_ECN])
		cfg->ecn = nla_get_u32(tb[TCA_SOFTMQ_ECN]);
	if (tb[TCA_SOFTMQ_CE_THRESHOLD]) {
		cfg->ce_threshold = nla_get_u32(tb[TCA_SOFTMQ_CE_THRESHOLD]);
		if (cfg->ce_threshold > SOFTMQ_CODEL_TIME_MAX &&
		    cfg->ce_threshold != SOFTMQ_CE_THRESHOLD_OFF) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_SOFTMQ_CE_THRESHOLD],
					    "ce_threshold must be at most 60 s, or off");
			return -EINVAL;
		}
	}

	if ((u64)softmq_nr_rings(cfg) * cfg->bands > SOFTMQ_MAX_CLASSES) {
		NL_SET_ERR_MSG_MOD(extack,
				   "flows x bands exceeds 65535: each ring is a class, and class ids have 16 bits");
		return -EINVAL;
	}
	if (softmq_geometry_bytes(cfg) > SOFTMQ_MEM_CAP) {
		NL_SET_ERR_MSG_MOD(extack,
				   "flows x depth x bands exceeds the "
				   __stringify(SOFTMQ_MEM_CAP_MIB)
				   " MiB memory cap");
		return -EINVAL;
	}
	return 0;
}

static bool softmq_geometry_equal(const struct softmq_config *a,
				  const struct softmq_config *b)
{
	return softmq_nr_rings(a) == softmq_nr_rings(b) &&
	       a->depth == b->depth && a->bands == b->bands && a->key == b->key;
}

/* On each CPU (an IPI), or for an offline one: fold its deltas into the counts. */
static void softmq_bound_fold_cpu(void *arg)
{
	struct softmq_sched_data *q = arg;

	softmq_bound_fold_this_cpu(&q->pkts, &q->cpu_stats->pkts_delta);
	softmq_bound_fold_this_cpu(&q->memory, &q->cpu_stats->mem_delta);
}

/*
 * Only CPUs whose deltas hold something: isolated CPUs that never sent
 * through us get no IPI.  Read after the new batch is published: a CPU
 * read as empty can have charged at most its one packet in flight since.
 */
static bool softmq_bound_cpu_holds(int cpu, void *arg)
{
	struct softmq_sched_data *q = arg;
	const struct softmq_cpu_stats *cs = per_cpu_ptr(q->cpu_stats, cpu);

	return READ_ONCE(cs->pkts_delta) || READ_ONCE(cs->mem_delta);
}

/*
 * A batch shrank: each CPU's delta may hold up to the old batch, which the
 * new limit's bound does not allow for, and a CPU that sends nothing more
 * would keep it unfolded for good.  Fold every CPU's now.  An offline CPU
 * runs no producer; cpus_read_lock() keeps it so while we fold for it.
 */
static void softmq_bound_fold_all(struct softmq_sched_data *q)
{
	int cpu;

	cpus_read_lock();
	on_each_cpu_cond(softmq_bound_cpu_holds, softmq_bound_fold_cpu, q, true);
	for_each_possible_cpu(cpu) {
		struct softmq_cpu_stats *cs = per_cpu_ptr(q->cpu_stats, cpu);

		if (cpu_online(cpu))
			continue;
		atomic_long_add(xchg(&cs->pkts_delta, 0), &q->pkts.count);
		atomic_long_add(xchg(&cs->mem_delta, 0), &q->memory.count);
	}
	cpus_read_unlock();
}

static void softmq_set_config(struct softmq_sched_data *q,
			      const struct softmq_config *cfg)
{
	bool shrank;

	/* The data path and dump() read them locklessly: publish each field. */
	WRITE_ONCE(q->cfg.flows, cfg->flows);
	WRITE_ONCE(q->cfg.depth, cfg->depth);
	WRITE_ONCE(q->cfg.quantum, cfg->quantum);
	WRITE_ONCE(q->cfg.bands, cfg->bands);
	WRITE_ONCE(q->cfg.key, cfg->key);
	WRITE_ONCE(q->cfg.limit, cfg->limit);
	WRITE_ONCE(q->cfg.memory_limit, cfg->memory_limit);
	WRITE_ONCE(q->cfg.codel, cfg->codel);
	WRITE_ONCE(q->timestamp, cfg->codel);
	WRITE_ONCE(q->cfg.target, cfg->target);
	WRITE_ONCE(q->cfg.interval, cfg->interval);
	WRITE_ONCE(q->cfg.ecn, cfg->ecn);
	WRITE_ONCE(q->cfg.ce_threshold, cfg->ce_threshold);
	shrank = softmq_bound_set(&q->pkts, cfg->limit, SOFTMQ_PKTS_BATCH_MIN,
				  SOFTMQ_PKTS_BATCH_MAX, nr_cpu_ids);
	if (softmq_bound_set(&q->memory, cfg->memory_limit,
			     SOFTMQ_MEMORY_BATCH_MIN, SOFTMQ_MEMORY_BATCH_MAX,
			     nr_cpu_ids))
		shrank = true;
	if (shrank)
		softmq_bound_fold_all(q);
}

static codel_time_t softmq_us_to_codel(u32 us)
{
	return ((u64)us * NSEC_PER_USEC) >> CODEL_SHIFT;
}

/* The consumer's CoDel settings: under the consumer lock, or before init ends. */
static void softmq_codel_set(struct softmq_sched_data *q,
			     const struct softmq_config *cfg)
{
	q->codel = cfg->codel;
	q->cparams.target = softmq_us_to_codel(cfg->target);
	q->cparams.interval = softmq_us_to_codel(cfg->interval);
	q->cparams.ecn = cfg->ecn;
	q->cparams.ce_threshold = cfg->ce_threshold == SOFTMQ_CE_THRESHOLD_OFF ?
				  CODEL_DISABLED_THRESHOLD :
				  softmq_us_to_codel(cfg->ce_threshold);
}

/* Is a qdisc of @handle in @dev's tree below the root?  Under RTNL. */
static bool softmq_qdisc_hashed(struct net_device *dev, u32 handle)
{
	struct Qdisc *q;

	hash_for_each_possible(dev->qdisc_hash, q, hash, handle)
		if (q->handle == handle)
			return true;
	return false;
}

/*
 * Does @sch serve one TX queue of several, as a child of mq or mqprio does?
 * Under RTNL, as init is.  A parent grafted in the device's tree says so by
 * TCQ_F_MQROOT.  A parent not in the tree yet is building its children in
 * its own init, as mq and mqprio (and taprio) do, one per TX queue with
 * the default qdisc; classful qdiscs such as htb, prio or tbf take a child
 * only once they are in the tree.
 */
static bool softmq_serves_one_txq(struct Qdisc *sch)
{
	struct net_device *dev = qdisc_dev(sch);
	u32 major = TC_H_MAJ(sch->parent);
	struct Qdisc *root;

	if (sch->parent == TC_H_ROOT || dev->real_num_tx_queues <= 1)
		return false;
	root = rtnl_dereference(dev->qdisc);
	/*
	 * No root yet, and a parent of major 0: the default mq being built
	 * (the hash may still hold handle-0 default leaves of a root whose
	 * destruction was deferred).
	 */
	if (root->flags & TCQ_F_BUILTIN)
		return !major || !softmq_qdisc_hashed(dev, major);
	if (TC_H_MAJ(root->handle) == major)
		return root->flags & TCQ_F_MQROOT;
	return !softmq_qdisc_hashed(dev, major);
}

/*
 * fq_codel's limits for an instance that serves a whole device.  One that
 * serves one TX queue of several (a child of mq, as default_qdisc makes
 * them) gets its share, but no less than the _QUEUE_MIN values: a 64-queue
 * NIC then holds at most 64 x 4 MiB, not 64 x 32 MiB.
 */
static void softmq_default_limits(struct Qdisc *sch, struct softmq_config *cfg)
{
	unsigned int txqs = qdisc_dev(sch)->real_num_tx_queues;

	cfg->limit = SOFTMQ_LIMIT_DEFAULT;
	cfg->memory_limit = SOFTMQ_MEMORY_LIMIT_DEFAULT;
	if (softmq_serves_one_txq(sch)) {
		cfg->limit = max(cfg->limit / txqs, SOFTMQ_LIMIT_QUEUE_MIN);
		cfg->memory_limit = max(cfg->memory_limit / txqs,
					SOFTMQ_MEMORY_LIMIT_QUEUE_MIN);
	}
}

/*
 * Leave the consumer lock the way qdisc_run_end() leaves the seqlock: a
 * producer whose qdisc_run_begin() lost the trylock to us set MISSED and
 * returned, counting on the holder to run the qdisc again.  Without this a
 * packet pushed while change() held the lock waits for the next transmit.
 */
static void softmq_consumer_unlock(struct Qdisc *sch, spinlock_t *lock)
	__releases(lock)
{
	spin_unlock_bh(lock);
	if (!(sch->flags & TCQ_F_NOLOCK))
		return;
	/* Order the unlock before the MISSED test, as qdisc_run_end() does. */
	smp_mb();
	if (test_bit(__QDISC_STATE_MISSED, &sch->state))
		__netif_schedule(sch);
}

/*
 * Take a drained old table (or the one the consumer set aside) off @q.
 * *left (if given) says whether an old table is still draining, decided in
 * the same critical section: the consumer may move q->draining to q->spent
 * at any time, and a spent table must never be overwritten by the next one.
 */
static struct softmq_table *softmq_reap(struct Qdisc *sch, bool *left)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	spinlock_t *lock = softmq_consumer_lock(sch);
	struct softmq_table *old;

	spin_lock_bh(lock);
	old = q->spent;
	q->spent = NULL;
	/* Only change(), which calls us, sets unreachable. */
	if (!old && q->draining && q->draining->unreachable &&
	    softmq_table_idle(q->draining)) {
		old = q->draining;
		q->draining = NULL;
	}
	if (left)
		*left = q->draining;
	softmq_consumer_unlock(sch, lock);
	return old;
}

static int softmq_change(struct Qdisc *sch, struct nlattr *opt,
			 struct netlink_ext_ack *extack)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	spinlock_t *lock = softmq_consumer_lock(sch);
	struct softmq_config cfg = q->cfg;
	struct softmq_table *new, *old;
	int waited, err;

	err = softmq_parse(opt, &cfg, extack);
	if (err)
		return err;

	if (softmq_geometry_equal(&q->cfg, &cfg)) {
		spin_lock_bh(lock);
		softmq_codel_set(q, &cfg);
		softmq_consumer_unlock(sch, lock);
		/*
		 * The consumer reads quantum, producers the limits, without our
		 * lock: see softmq_bound_set().
		 */
		softmq_set_config(q, &cfg);
		return 0;
	}

	/* One old geometry at a time; give the device a moment to drain it. */
	for (waited = 0; ; waited += SOFTMQ_DRAIN_POLL_MS) {
		bool left;

		softmq_table_free(softmq_reap(sch, &left));
		if (!left)
			break;
		if (waited >= SOFTMQ_DRAIN_WAIT_MS) {
			NL_SET_ERR_MSG_MOD(extack,
					   "previous reconfiguration is still draining, retry later");
			return -EBUSY;
		}
		msleep(SOFTMQ_DRAIN_POLL_MS);
	}

	new = softmq_table_alloc(&cfg);
	if (!new) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the new ring table");
		return -ENOMEM;
	}

	spin_lock_bh(lock);
	old = softmq_table_protected(sch);
	q->draining = old;
	rcu_assign_pointer(q->table, new);
	softmq_codel_set(q, &cfg);
	if (!(sch->flags & TCQ_F_NOLOCK)) {
		/*
		 * No NOLOCK (a classful parent): producers enqueue under the
		 * lock we hold, so none is inside @old any more: it is
		 * unreachable now; dequeue never returns NULL with packets
		 * queued (qdisc_warn_nonwc).  Release: pairs with dequeue's
		 * acquire.
		 */
		smp_store_release(&old->unreachable, true);
	}
	softmq_consumer_unlock(sch, lock);
	softmq_set_config(q, &cfg);
	WRITE_ONCE(q->reconfigs, q->reconfigs + 1);

	/* After this no producer is inside @old: it can only shrink. */
	synchronize_net();
	/* Release: whoever sees unreachable sees every push into @old. */
	smp_store_release(&old->unreachable, true);

	softmq_table_free(softmq_reap(sch, NULL));
	/*
	 * A dequeue that ran while @old was reachable returned NULL with
	 * DRAINING set; run the qdisc so packets in either table move on.
	 */
	if (netif_running(qdisc_dev(sch)))
		__netif_schedule(qdisc_root(sch));
	return 0;
}

static int softmq_init(struct Qdisc *sch, struct nlattr *opt,
		       struct netlink_ext_ack *extack)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct softmq_config cfg = {
		.flows		= SOFTMQ_FLOWS_DEFAULT,
		.depth		= SOFTMQ_DEPTH_DEFAULT,
		.quantum	= clamp_t(u32, psched_mtu(qdisc_dev(sch)),
					  SOFTMQ_QUANTUM_MIN, SOFTMQ_QUANTUM_MAX),
		.bands		= SOFTMQ_BANDS_DEFAULT,
		.key		= SOFTMQ_KEY_FLOW,
		/* fq_codel's AQM, which is what Debian's default gives today. */
		.codel		= 1,
		.target		= SOFTMQ_TARGET_DEFAULT,
		.interval	= SOFTMQ_INTERVAL_DEFAULT,
		.ecn		= 1,
		.ce_threshold	= SOFTMQ_CE_THRESHOLD_OFF,
	};
	struct softmq_table *t;
	int cpu, err;

	softmq_default_limits(sch, &cfg);
	if (opt) {
		err = softmq_parse(opt, &cfg, extack);
		if (err)
			return err;
	}

	gnet_stats_basic_sync_init(&q->dequeued);
	q->cpu_stats = alloc_percpu(struct softmq_cpu_stats);
	if (!q->cpu_stats)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(q->cpu_stats, cpu)->syncp);

	t = softmq_table_alloc(&cfg);
	if (!t) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the ring table");
		return -ENOMEM;
	}
	t->unreachable = false;
	RCU_INIT_POINTER(q->table, t);
	codel_params_init(&q->cparams);
	q->cparams.mtu = psched_mtu(qdisc_dev(sch));
	codel_stats_init(&q->cstats);
	softmq_codel_set(q, &cfg);
	softmq_set_config(q, &cfg);

	/* Safe: dequeue keeps MISSED/DRAINING honest (see softmq_dequeue). */
	sch->flags |= TCQ_F_CAN_BYPASS;
	return 0;
}

/*
 * Consumer side only (the seqlock, or the root lock): other TX queues may
 * still enqueue into a root shared by all of them, so packets pushed
 * during the purge may stay queued, counted, marked and found by the next
 * dequeue; nothing here may assume the rings stay empty.
 */
static void softmq_reset(struct Qdisc *sch)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct softmq_table *t = softmq_table_protected(sch);
	struct sk_buff *skb;

	/* Half-initialised after a failed init. */
	if (!t)
		return;
	if (q->draining) {
		softmq_table_purge(sch, q->draining);
		/*
		 * Forget it here as dequeue would: after a reset (link down)
		 * no dequeue may come to do it, and every later geometry
		 * change would wait for it and fail with EBUSY.  change() and
		 * destroy() free q->spent; at most one of the two is set.
		 */
		if (smp_load_acquire(&q->draining->unreachable) &&
		    softmq_table_idle(q->draining)) {
			q->spent = q->draining;
			WRITE_ONCE(q->draining, NULL);
		}
	}
	softmq_table_purge(sch, t);

	/*
	 * A push that landed behind the purge (another TX queue of a shared
	 * root still sending while ethtool -L resets this one) left its ring
	 * marked, and the core clears MISSED after reset without running us:
	 * run again for it, or it would wait for the next transmit.  It may
	 * still be overtaken once: qdisc_reset_all_tx_gt() clears DRAINING
	 * too before it lets the seqlock go, so until our run the qdisc looks
	 * empty and its flow's next packet may take the bypass (nothing we set
	 * here survives that clear).  Only a NOLOCK qdisc is a device queue's
	 * own; under a parent the parent runs us.
	 */
	if ((sch->flags & TCQ_F_NOLOCK) &&
	    softmq_hinted(READ_ONCE(t->band_hints)))
		__netif_schedule(sch);

	/*
	 * qdisc_reset() purges these two lists after us, without touching the
	 * per-CPU counters a NOLOCK requeue raised; their packets were counted
	 * as sent when we dequeued them, so they only leave the backlog.
	 */
	/* The purge's uncharges: an idle instance's counts are exact. */
	softmq_uncharge_flush(q);

	if (qdisc_is_percpu_stats(sch)) {
		skb_queue_walk(&sch->gso_skb, skb) {
			qdisc_qstats_cpu_backlog_dec(sch, skb);
			qdisc_qstats_cpu_qlen_dec(sch);
		}
		skb_queue_walk(&sch->skb_bad_txq, skb) {
			qdisc_qstats_cpu_backlog_dec(sch, skb);
			qdisc_qstats_cpu_qlen_dec(sch);
		}
	}
}

/* Also runs after a failed init: free what exists, touch nothing else. */
static void softmq_destroy(struct Qdisc *sch)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct softmq_table *t = softmq_table_protected(sch);

	if (t)
		softmq_table_purge(NULL, t);
	softmq_table_free(t);
	if (q->draining)
		softmq_table_purge(NULL, q->draining);
	softmq_table_free(q->draining);
	softmq_table_free(q->spent);
	free_percpu(q->cpu_stats);
}

static int softmq_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;
	u32 ce_threshold;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		return -EMSGSIZE;

	if (nla_put_u32(skb, TCA_SOFTMQ_FLOWS, READ_ONCE(q->cfg.flows)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_DEPTH, READ_ONCE(q->cfg.depth)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_QUANTUM, READ_ONCE(q->cfg.quantum)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_BANDS, READ_ONCE(q->cfg.bands)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_KEY, READ_ONCE(q->cfg.key)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_LIMIT, READ_ONCE(q->cfg.limit)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_MEMORY_LIMIT,
			READ_ONCE(q->cfg.memory_limit)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_CODEL, READ_ONCE(q->cfg.codel)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_TARGET, READ_ONCE(q->cfg.target)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_INTERVAL, READ_ONCE(q->cfg.interval)) ||
	    nla_put_u32(skb, TCA_SOFTMQ_ECN, READ_ONCE(q->cfg.ecn)))
		goto nla_put_failure;
	ce_threshold = READ_ONCE(q->cfg.ce_threshold);
	if (ce_threshold != SOFTMQ_CE_THRESHOLD_OFF &&
	    nla_put_u32(skb, TCA_SOFTMQ_CE_THRESHOLD, ce_threshold))
		goto nla_put_failure;

	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -EMSGSIZE;
}

static void softmq_table_stats(const struct softmq_table *t,
			       struct tc_softmq_qd_stats *st)
{
	unsigned int band;

	for (band = 0; band < t->bands; band++) {
		st->active_rings += bitmap_weight(t->active[band], t->nr_rings);
		if (READ_ONCE(t->new_idx[band]) < t->nr_rings)
			st->new_flows_len++;
	}
	st->allocated_rings += atomic_read(&t->allocated);
}

static int softmq_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct softmq_sched_data *q = qdisc_priv(sch);
	struct tc_softmq_xstats xstats = { .type = TCA_SOFTMQ_XSTATS_QDISC };
	struct tc_softmq_qd_stats *st = &xstats.qdisc_stats;
	struct gnet_stats_basic_sync bstats;
	struct softmq_table *draining;
	struct gnet_stats_basic_sync deq;
	long memory = atomic_long_read(&q->memory.count);
	u64 sent, dequeued;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct softmq_cpu_stats *cs = per_cpu_ptr(q->cpu_stats, cpu);
		u64 cnt[SOFTMQ_CNT_MAX];
		unsigned int start, c;

		do {
			start = u64_stats_fetch_begin(&cs->syncp);
			for (c = 0; c < SOFTMQ_CNT_MAX; c++)
				cnt[c] = u64_stats_read(&cs->cnt[c]);
		} while (u64_stats_fetch_retry(&cs->syncp, start));
		st->spilled += cnt[SOFTMQ_CNT_SPILLED];
		st->drop_nomem += cnt[SOFTMQ_CNT_NOMEM];
		st->push_retries += cnt[SOFTMQ_CNT_PUSH_RETRIES];
		st->ring_wakeups += cnt[SOFTMQ_CNT_RING_WAKEUPS];
		st->drop_overlimit += cnt[SOFTMQ_CNT_OVERLIMIT];
		st->drop_overmemory += cnt[SOFTMQ_CNT_OVERMEMORY];
		memory += READ_ONCE(cs->mem_delta);
	}
	memory += READ_ONCE(q->deq_mem);
	st->memory_usage = max(memory, 0L);

	/* Tables are freed only under RTNL, which dump holds. */
	softmq_table_stats(softmq_table_protected(sch), st);
	draining = READ_ONCE(q->draining);
	if (draining) {
		softmq_table_stats(draining, st);
		st->draining = 1;
	}
	st->old_flows_len = st->active_rings - min(st->new_flows_len,
						   st->active_rings);
	st->drop_codel = READ_ONCE(q->codel_drops);
	/* Written by the consumer (marked writes from 7.x on). */
	st->maxpacket = READ_ONCE(q->cstats.maxpacket);
	st->ecn_mark = READ_ONCE(q->cstats.ecn_mark);
	st->ce_mark = READ_ONCE(q->cstats.ce_mark);
	st->new_flow_count = READ_ONCE(q->new_flow_count);
	st->busy_skips = READ_ONCE(q->busy_skips);
	st->ring_hiwat = READ_ONCE(q->ring_hiwat);
	st->reconfigs = READ_ONCE(q->reconfigs);

	/* Every packet the core counted that we never dequeued was bypassed. */
	gnet_stats_basic_sync_init(&bstats);
	gnet_stats_add_basic(&bstats, sch->cpu_bstats, &sch->bstats, false);
	sent = u64_stats_read(&bstats.packets);
	gnet_stats_basic_sync_init(&deq);
	gnet_stats_add_basic(&deq, NULL, &q->dequeued, false);
	dequeued = u64_stats_read(&deq.packets);
	st->bypassed = sent > dequeued ? sent - dequeued : 0;

	return gnet_stats_copy_app(d, &xstats, sizeof(xstats));
}

/*
 * Classes: one per ring of the current geometry that holds packets or is
 * marked, as fq_codel lists its flows; minor = band * rings + index + 1.
 * Read-only: no class can be added, changed or given a child.  Dumps hold
 * RTNL, which keeps the table; the ring's consumer fields are read racily.
 */
static struct softmq_ring *softmq_class_ring(struct Qdisc *sch,
					     unsigned long cl,
					     unsigned int *band,
					     unsigned int *idx)
{
	struct softmq_table *t = softmq_table_protected(sch);
	unsigned long slot = cl - 1;

	if (!cl || slot >= (unsigned long)t->bands * t->nr_rings)
		return NULL;
	*band = slot / t->nr_rings;
	*idx = slot % t->nr_rings;
	return READ_ONCE(t->rings[slot]);
}

static struct Qdisc *softmq_leaf(struct Qdisc *sch, unsigned long arg)
{
	return NULL;
}

static unsigned long softmq_find(struct Qdisc *sch, u32 classid)
{
	unsigned int band, idx;

	return softmq_class_ring(sch, TC_H_MIN(classid), &band, &idx) ?
	       TC_H_MIN(classid) : 0;
}

static int softmq_dump_class(struct Qdisc *sch, unsigned long cl,
			     struct sk_buff *skb, struct tcmsg *tcm)
{
	tcm->tcm_handle |= TC_H_MIN(cl);
	return 0;
}

static int softmq_dump_class_stats(struct Qdisc *sch, unsigned long cl,
				   struct gnet_dump *d)
{
	struct softmq_table *t = softmq_table_protected(sch);
	struct tc_softmq_xstats xstats = { .type = TCA_SOFTMQ_XSTATS_CLASS };
	struct tc_softmq_cl_stats *st = &xstats.class_stats;
	struct gnet_stats_queue qs = { 0 };
	struct codel_vars *vars;
	struct softmq_ring *ring;
	unsigned int band, idx;

	ring = softmq_class_ring(sch, cl, &band, &idx);
	if (!ring)
		return -ENOENT;
	vars = &softmq_flow(ring)->cvars;

	qs.qlen = softmq_ring_len(ring);
	qs.backlog = min_t(unsigned long, softmq_ring_backlog(ring), U32_MAX);
	st->band = band;
	st->index = idx;
	st->deficit = clamp_t(long, READ_ONCE(ring->deficit), S32_MIN, S32_MAX);
	st->ldelay = codel_time_to_us(READ_ONCE(vars->ldelay));
	st->count = READ_ONCE(vars->count);
	st->lastcount = READ_ONCE(vars->lastcount);
	st->dropping = READ_ONCE(vars->dropping);
	if (st->dropping) {
		codel_tdiff_t delta = READ_ONCE(vars->drop_next) - codel_get_time();

		st->drop_next = delta < 0 ? -codel_time_to_us(-delta) :
					       codel_time_to_us(delta);
	}
	st->new_flow = READ_ONCE(t->new_idx[band]) == idx;

	if (gnet_stats_copy_queue(d, NULL, &qs, qs.qlen) < 0)
		return -1;
	return gnet_stats_copy_app(d, &xstats, sizeof(xstats));
}

static void softmq_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	struct softmq_table *t = softmq_table_protected(sch);
	unsigned int slot;

	if (arg->stop)
		return;
	for (slot = 0; slot < t->bands * t->nr_rings; slot++) {
		struct softmq_ring *ring = READ_ONCE(t->rings[slot]);

		if (!ring || (!softmq_ring_len(ring) &&
			      !test_bit(slot % t->nr_rings,
					t->active[slot / t->nr_rings]))) {
			arg->count++;
			continue;
		}
		if (!tc_qdisc_stats_dump(sch, slot + 1, arg))
			break;
	}
}

static const struct Qdisc_class_ops softmq_class_ops = {
	.leaf		= softmq_leaf,
	.find		= softmq_find,
	.dump		= softmq_dump_class,
	.dump_stats	= softmq_dump_class_stats,
	.walk		= softmq_walk,
};

static struct Qdisc_ops softmq_qdisc_ops __read_mostly = {
	.cl_ops		= &softmq_class_ops,
	.id		= "softmq",
	.priv_size	= sizeof(struct softmq_sched_data),
	.enqueue	= softmq_enqueue,
	.dequeue	= softmq_dequeue,
	.peek		= qdisc_peek_dequeued,
	.init		= softmq_init,
	.reset		= softmq_reset,
	.destroy	= softmq_destroy,
	.change		= softmq_change,
	.dump		= softmq_dump,
	.dump_stats	= softmq_dump_stats,
	.owner		= THIS_MODULE,
	.static_flags	= TCQ_F_NOLOCK | TCQ_F_CPUSTATS,
};
MODULE_ALIAS_NET_SCH("softmq");

static int __init softmq_module_init(void)
{
	return register_qdisc(&softmq_qdisc_ops);
}

static void __exit softmq_module_exit(void)
{
	unregister_qdisc(&softmq_qdisc_ops);
}

module_init(softmq_module_init);
module_exit(softmq_module_exit);
MODULE_AUTHOR("softmq developers");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Soft multiqueue: lockless per-flow rings with DRR dequeue");
#ifdef SOFTMQ_VERSION
MODULE_VERSION(SOFTMQ_VERSION);
#endif
