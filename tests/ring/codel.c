// SPDX-License-Identifier: GPL-2.0
/*
 * codel.c - softmq's CoDel pass (include/softmq_codel.h) against the
 * kernel's own codel_dequeue() (include/net/codel_impl.h of a Debian line,
 * copied beside the build by tests/lint/check.sh, "codel").
 *
 * Two copies of one queue take the same random trace (bursts of packets,
 * some ECN-capable, some unstamped or stamped ahead of the clock, DSCPs;
 * the clock moving by nanoseconds to seconds; random target, interval,
 * MTU, ECN, ce_threshold and its DSCP selector): copy A dequeues through
 * codel_dequeue() alone,
 * copy B as the module does (softmq_codel_dequeue()): the packet taken
 * first, softmq_codel_pass() asked, and codel_dequeue() called with that
 * packet as its first pop only when the answer is no.  After every
 * dequeue both must have returned the same packet with the same mark,
 * dropped the same packets, and hold the same CoDel state, statistics and
 * backlog.  Both paths must have been taken often, and so must CoDel's
 * drops, ECN marks and ce_threshold marks, or the run proves nothing.
 * The clock stands still between steps; in half of them it moves on by
 * one to four CoDel ticks after each read within the dequeue, the same
 * for both copies (B's codel_dequeue() starts again from the step's time:
 * it reads the clock only after its first pop, as the module's reads it
 * afresh), so that an unstamped packet's time, read after "now", leaves a
 * sojourn below zero, and a pass that read them the other way round would
 * differ (its ldelay, its ce_threshold verdict); unstamped packets must
 * have met such a clock in B's pass.  B runs the module's
 * softmq_codel_dequeue_first(); not covered: b_slow() and cb_pop()
 * restate the module's softmq_codel_dequeue_slow() and softmq_codel_pop()
 * rather than compile them.
 *
 *   codel [SEEDS [STEPS]]     prints one PASS or FAIL line; exit 1 on FAIL
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/compiler.h>
#include <net/codel.h>
#include <net/codel_impl.h>
#include "softmq_codel.h"

u64 codel_test_ns, codel_test_tick;
/* The step's time, where B's codel_dequeue() starts its reads again. */
static u64 step_ns;

#define QLEN	2048

struct side {
	struct sk_buff	*q[QLEN];
	unsigned int	head, n;
	u32		bytes;		/* queued */
	/*
	 * Counted but not yet in the queue: a producer between its byte
	 * count and its push (softmq_ring_account() comes first), so that a
	 * pop can leave a backlog over an MTU and the next find nothing.
	 */
	u32		inflight;
	u32		backlog;	/* what codel_dequeue() holds against */
	struct sk_buff	*first;		/* B: taken before codel_dequeue() */
	struct codel_vars vars;
	struct codel_stats stats;
	u64		dropped;	/* ids of dropped packets, hashed */
	u32		drops;
};

static struct codel_params params;
/* B's dequeues: passed, handed to codel_dequeue(), found empty */
static unsigned long fast, slow, empty;
/* Unstamped packets whose time B's pass read from a moving clock. */
static unsigned long moved;
static bool in_pass;
static struct side a, b;
static u64 rng;

static u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (u32)(rng >> 16);
}

static struct sk_buff *ring_take(struct side *s)
{
	struct sk_buff *skb;

	if (!s->n)
		return NULL;
	skb = s->q[s->head];
	s->head = (s->head + 1) % QLEN;
	s->n--;
	s->bytes -= skb->len;
	s->backlog = s->bytes + s->inflight;
	return skb;
}

/* softmq_codel_pop(): the packet taken already, else the ring's next. */
static struct sk_buff *cb_pop(struct codel_vars *vars, void *ctx)
{
	struct side *s = ctx;
	struct sk_buff *skb = s->first;

	(void)vars;
	if (skb) {
		s->first = NULL;
		slow++;
		/* codel_dequeue() reads the clock after this pop: as A's did */
		codel_test_ns = step_ns;
		in_pass = false;
		return skb;
	}
	return ring_take(s);
}

static void cb_drop(struct sk_buff *skb, void *ctx)
{
	struct side *s = ctx;

	s->dropped = s->dropped * 1000003 + skb->id;
	s->drops++;
	free(skb);
}

static u32 cb_len(const struct sk_buff *skb)
{
	return skb->len;
}

/* softmq_codel_time(): an unstamped packet has no sojourn. */
static codel_time_t cb_time(const struct sk_buff *skb)
{
	if (!skb->tstamp && in_pass && codel_test_tick)
		moved++;
	return skb->tstamp ? skb->tstamp : codel_get_time();
}

static struct sk_buff *dequeue_a(void)
{
	return codel_dequeue(&a, &a.backlog, &params, &a.vars, &a.stats,
			     cb_len, cb_time, cb_drop, cb_pop);
}


/* softmq_codel_dequeue_slow(): codel_dequeue(), @skb its first pop's. */
static struct sk_buff *b_slow(void *ctx, void *arg, struct sk_buff *skb)
{
	struct side *s = ctx;

	s->first = skb;
	return codel_dequeue(s, &s->backlog, &params, &s->vars, &s->stats,
			     cb_len, cb_time, cb_drop, cb_pop);
}

/* As softmq_codel_dequeue() does it. */
static struct sk_buff *dequeue_b(void)
{
	struct sk_buff *skb = ring_take(&b);

	if (!skb)
		empty++;
	in_pass = true;
	skb = softmq_codel_dequeue_first(&b, skb, b.backlog, &params, &b.vars,
					 &b.stats, cb_len, cb_time, b_slow, NULL);
	in_pass = false;
	return skb;
}

static void enqueue(struct side *s, const struct sk_buff *proto)
{
	struct sk_buff *skb = malloc(sizeof(*skb));

	if (!skb)
		abort();
	*skb = *proto;
	s->q[(s->head + s->n) % QLEN] = skb;
	s->n++;
	s->bytes += skb->len;
}

static int differ(const char **what)
{
	const struct codel_vars *va = &a.vars, *vb = &b.vars;
	const struct codel_stats *sa = &a.stats, *sb = &b.stats;

	*what = "CoDel state";
	if (va->count != vb->count || va->lastcount != vb->lastcount ||
	    va->dropping != vb->dropping ||
	    va->rec_inv_sqrt != vb->rec_inv_sqrt ||
	    va->first_above_time != vb->first_above_time ||
	    va->drop_next != vb->drop_next || va->ldelay != vb->ldelay)
		return 1;
	*what = "statistics";
	if (sa->maxpacket != sb->maxpacket || sa->drop_count != sb->drop_count ||
	    sa->drop_len != sb->drop_len || sa->ecn_mark != sb->ecn_mark ||
	    sa->ce_mark != sb->ce_mark)
		return 1;
	*what = "queue, backlog or drops";
	return a.n != b.n || a.bytes != b.bytes || a.backlog != b.backlog ||
	       a.dropped != b.dropped || a.drops != b.drops || b.first;
}

static void drain(struct side *s)
{
	struct sk_buff *skb;

	while ((skb = ring_take(s)))
		free(skb);
}

int main(int argc, char **argv)
{
	unsigned int seeds = argc > 1 ? atoi(argv[1]) : 16;
	unsigned long steps = argc > 2 ? atol(argv[2]) : 100000;
	unsigned long deq = 0, ce_marks = 0, ecn_marks = 0, drops = 0;
	unsigned int seed, id = 0;
	unsigned long i;

	for (seed = 1; seed <= seeds; seed++) {
		rng = 0x9e3779b97f4a7c15ULL * seed;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		codel_params_init(&params);
		codel_vars_init(&a.vars);
		codel_vars_init(&b.vars);
		codel_stats_init(&a.stats);
		codel_stats_init(&b.stats);
		params.target = 50 + rnd() % 5000;
		params.interval = params.target * (2 + rnd() % 40);
		params.mtu = (u32[]){ 1514, 9000, 65536 }[rnd() % 3];
		params.ecn = rnd() % 2;
		if (rnd() % 3)
			params.ce_threshold = params.target / 2 +
					      rnd() % (4 * params.target);
		/* ce_threshold for one DSCP only, or for all */
		if (rnd() % 2) {
			params.ce_threshold_mask = 0xfc;
			params.ce_threshold_selector = (rnd() % 4) << 2;
		}
		/* near the 32-bit tick wrap (a tick is 1024 ns) */
		codel_test_ns = ((u64)1 << 42) - (u64)(rnd() % 4096) * 1000000;
		for (i = 0; i < steps; i++) {
			struct sk_buff *ra, *rb;
			unsigned int k, burst, heavy;
			const char *what = "";
			u32 r = rnd() % 100;

			/* light and heavy phases: the queue builds and drains */
			heavy = i % 4000 < 500;
			if (r < (heavy ? 30 : 10)) {
				burst = 1 + rnd() % (heavy ? 16 : 4);
				for (k = 0; k < burst && a.n < QLEN; k++) {
					struct sk_buff p = {
						.id = ++id,
						.len = 64 + rnd() % 1451,
						.tstamp = codel_get_time(),
						.ect = rnd() % 2,
						/* -1: not IP */
						.dsfield = rnd() % 8 ? (int)(rnd() % 4) << 2 : -1,
					};
					u32 odd = rnd() % 200;

					if (odd == 0)
						p.tstamp = 0;
					else if (odd == 1)
						p.tstamp += 1 + rnd() % 64;
					else if (odd == 2)
						p.len = 65536;
					else if (odd < 50)
						/* queued long before (above target alone) */
						p.tstamp -= params.target + rnd() % (2 * params.interval);
					else if (odd < 80)
						/* one left: a backlog of an MTU, or one byte off */
						p.len = params.mtu - 1 + rnd() % 3;
					enqueue(&a, &p);
					enqueue(&b, &p);
				}
			}
			if (rnd() % 100 == 0)
				a.inflight = b.inflight = rnd() % 2 ? rnd() % 4000 : 0;
			r = rnd() % 1000;
			if (r < 800)
				codel_test_ns += rnd() % 4096;
			else if (r < 990)
				codel_test_ns += rnd() % (1 << 20);
			else
				codel_test_ns += (u64)(rnd() % 2000) << 20;
			step_ns = codel_test_ns;
			codel_test_tick = rnd() % 2 ? (u64)(1 + rnd() % 4) << 10 : 0;
			ra = dequeue_a();
			codel_test_ns = step_ns;
			rb = dequeue_b();
			codel_test_ns = step_ns;
			codel_test_tick = 0;
			deq++;
			if ((ra ? ra->id : 0) != (rb ? rb->id : 0) ||
			    (ra && ra->ce != rb->ce) || differ(&what)) {
				if ((ra ? ra->id : 0) != (rb ? rb->id : 0) ||
				    (ra && ra->ce != rb->ce))
					what = "the packet returned or its mark";
				printf("FAIL codel-equivalence: seed %u step %lu: %s differ (codel_dequeue() alone: packet %u, with softmq_codel_pass(): packet %u)\n",
				       seed, i, what, ra ? ra->id : 0,
				       rb ? rb->id : 0);
				return 1;
			}
			free(ra);
			free(rb);
		}
		ce_marks += a.stats.ce_mark;
		ecn_marks += a.stats.ecn_mark;
		drops += a.drops;
		drain(&a);
		drain(&b);
	}
	fast = deq - slow - empty;
	if (fast < deq / 10 || slow < deq / 100 || !drops || !ecn_marks ||
	    !ce_marks || !moved) {
		printf("FAIL codel-equivalence: the trace did not take every path (%lu dequeues: %lu passed, %lu to codel_dequeue(), %lu empty; %lu drops, %lu ECN marks, %lu ce_threshold marks; %lu unstamped packets' times read by the pass from a moving clock)\n",
		       deq, fast, slow, empty, drops, ecn_marks, ce_marks, moved);
		return 1;
	}
	printf("PASS codel-equivalence: %lu dequeues identical (%lu passed, %lu to codel_dequeue(), %lu empty; %lu drops, %lu ECN marks, %lu ce_threshold marks; %lu unstamped packets' times read by the pass from a moving clock)\n",
	       deq, fast, slow, empty, drops, ecn_marks, ce_marks, moved);
	return 0;
}
