// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency stress for include/softmq_ring.h.  Run by `make check` as a
 * plain -O2 build, under ThreadSanitizer and under ASan+UBSan.
 *
 *   stress one   P M D        P producers x M items into one ring of depth D,
 *                             one dedicated consumer thread popping.
 *   stress many  P M D R      the same into R rings with the active bitmap and
 *                             retire handshake; the consumer walks the marked
 *                             rings like softmq_band_dequeue (pop, or retire,
 *                             skip a ring whose head is not published yet).
 *                             After the producers stop it runs until no ring is
 *                             marked, then every ring must be empty: an item
 *                             left in an unmarked ring is a lost wake-up.
 *   stress qdisc P M D R      no consumer thread at all: the kernel's NOLOCK
 *                             protocol (qdisc_run_begin/end with a seqlock,
 *                             MISSED/DRAINING, net_tx_action rescheduling,
 *                             softmq_dequeue's clear-MISSED/barrier/re-scan)
 *                             emulated with C11 atomics.  Producers push, then
 *                             qdisc_run(); a "softirq" thread serves
 *                             reschedules.  At the end nothing forces a drain:
 *                             every item must have been delivered by the
 *                             protocol itself.
 *
 * Checks, always: every item arrives exactly once; items of one producer that
 * went to one ring arrive in the order it pushed them.  An item points to a
 * payload word the producer writes with a plain store before the push and
 * the consumer reads with a plain load after the pop (as an skb's contents):
 * so ThreadSanitizer checks that push's publish orders the payload for the
 * consumer.  ring = f(producer, seq) spreads each producer's items over the
 * rings in bursts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ring_inc.h"

#define MAXP	16

static __thread unsigned long rnd = 88172645463325252UL;
static int one_in(unsigned int n)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd % n == 0;
}

#ifdef RING_KSHIM
/*
 * Jitter build (out/stress-jitter*): kshim's access hooks (-DRING_KSHIM):
 * the hook runs after (or, for cmpxchg and release stores, before) every
 * shared access the header makes.  Here it sometimes yields or spins there,
 * so a producer or the consumer is "preempted" inside push/retire and the
 * race windows, nanoseconds wide otherwise, get hit.
 */
static void jitter(enum kshim_ev ev, const void *addr)
{
	(void)ev;
	(void)addr;
	if (one_in(128)) {
		sched_yield();
	} else if (one_in(16)) {
		volatile int i;

		for (i = 0; i < 200; i++)
			;
	}
}
void (*kshim_hook)(enum kshim_ev ev, const void *addr) = jitter;
#endif

static unsigned int P, R, D;
static unsigned long M;
static struct softmq_ring **rings;
static unsigned long *active;
static unsigned int nwords;

/* consumer-side bookkeeping (only ever touched by the one consumer) */
static unsigned char *seen[MAXP];
/* Items: the ring's two spill words, then v = p << 32 | seq + 1. */
struct stress_item {
	struct softmq_spill spill;
	unsigned long v;
};
static struct stress_item *payload[MAXP];
static unsigned long *last_seq;		/* [P * R], seq + 1 of the last item */
static unsigned long delivered, dups, order_errs, bad_ring;
static unsigned long busy_skips, spills, full_waits, push_retries;

static atomic_uint producers_left;
static pthread_barrier_t start;

static unsigned int ring_of(unsigned int p, unsigned long seq)
{
	return (unsigned int)((p * 7 + seq / 5) % R);
}

static void deliver(unsigned int idx, void *it)
{
	unsigned long v = ((struct stress_item *)it)->v;	/* plain load: TSan checks */
	unsigned int p = (unsigned int)(v >> 32);
	unsigned long seq = (v & 0xffffffffUL) - 1;
	unsigned long *last;

	if (p >= P || seq >= M || it != &payload[p][seq]) {
		bad_ring++;
		return;
	}
	if (ring_of(p, seq) != idx)
		bad_ring++;
	if (seen[p][seq]++)
		dups++;
	last = &last_seq[p * R + idx];
	if (seq + 1 <= *last)
		order_errs++;
	*last = seq + 1;
	__atomic_store_n(&delivered, delivered + 1, __ATOMIC_RELAXED);
}

/*
 * softmq_band_dequeue() reduced to what concerns the ring: walk marked rings
 * from the cursor; pop, and retire a ring the pop emptied if no other is
 * marked; on NULL retire; a ring that cannot be retired has a push in
 * flight, skip it (and stop after a lap of only such rings).
 * Returns 1 with an item, 0 if nothing, *busy if a ring was skipped.
 */
static unsigned long cursor, hints;
static int band_dequeue(int *busy)
{
	unsigned long idx = cursor, first_busy = R;
	int hint_cleared = 0;

	if (!test_bit(0, &hints))
		return 0;
	for (;;) {
		void *it;

		idx = softmq_active_next_wrap(active, R, idx);
		if (idx >= R) {
			cursor = 0;
			if (hint_cleared || softmq_band_clear_hint(&hints, 0, active, R))
				return 0;
			hint_cleared = 1;
			idx = 0;
			continue;
		}
		if (idx == first_busy) {
			cursor = idx;
			return 0;
		}
		it = softmq_ring_pop(rings[idx]);
		if (it) {
			deliver((unsigned int)idx, it);
			cursor = idx;
			/* softmq_ring_drained(): a lone ring its pop emptied */
			if (softmq_ring_looks_empty(rings[idx]) &&
			    softmq_band_clear_hint_but(&hints, 0, active, R, idx)) {
				if (!softmq_ring_retire(rings[idx], active, R,
							(unsigned int)idx))
					set_bit(0, &hints);
			}
			return 1;
		}
		if (!softmq_ring_retire(rings[idx], active, R, (unsigned int)idx)) {
			*busy = 1;
			busy_skips++;
			if (first_busy == R)
				first_busy = idx;
		}
		idx++;
	}
}

/*
 * A ring never refuses; like the qdisc's limit, a producer holds back while
 * its ring holds 2 * D items, so that pushes go both to the slots and
 * beyond them.
 */
static void producer_push(unsigned int p, unsigned long seq, void (*on_full)(void))
{
	unsigned int idx = R ? ring_of(p, seq) : 0, retries = 0;
	void *it = &payload[p][seq];
	enum softmq_push res;

	payload[p][seq].v = ((unsigned long)p << 32) | (seq + 1);	/* plain store */

	while (softmq_ring_len(rings[idx]) >= 2 * D) {
		__atomic_fetch_add(&full_waits, 1, __ATOMIC_RELAXED);
		if (on_full)
			on_full();
		sched_yield();
	}

	res = softmq_ring_push(rings[idx], it, &retries);
	if (res == SOFTMQ_PUSH_SPILLED)
		__atomic_fetch_add(&spills, 1, __ATOMIC_RELAXED);
	if (res == SOFTMQ_PUSH_WOKE && active) {
		softmq_active_mark(active, R, idx);
		softmq_band_note(&hints, 0);
	}
	if (retries)
		__atomic_fetch_add(&push_retries, retries, __ATOMIC_RELAXED);
}

/* ---- mode one / many: a dedicated consumer thread ---------------------------- */

static void *producer_plain(void *arg)
{
	unsigned int p = (unsigned int)(uintptr_t)arg;
	unsigned long s;

	rnd += p;
	pthread_barrier_wait(&start);
	for (s = 0; s < M; s++) {
		producer_push(p, s, NULL);
		if (one_in(4096))
			sched_yield();
	}
	atomic_fetch_sub(&producers_left, 1);
	return NULL;
}

static void *consumer_one(void *arg)
{
	unsigned long idle = 0;

	(void)arg;
	rnd += 1000;
	pthread_barrier_wait(&start);
	for (;;) {
		void *it = softmq_ring_pop(rings[0]);

		if (it) {
			deliver(0, it);
			idle = 0;
			continue;
		}
		if (atomic_load(&producers_left) == 0 &&
		    softmq_ring_count(rings[0]) == 0)
			return NULL;
		if (++idle % 64 == 0)
			sched_yield();
	}
}

static void *consumer_many(void *arg)
{
	unsigned long idle = 0;

	(void)arg;
	rnd += 1000;
	pthread_barrier_wait(&start);
	for (;;) {
		int busy = 0;

		if (band_dequeue(&busy)) {
			idle = 0;
			continue;
		}
		/* Stop only when producers are gone and no ring is marked:
		 * whatever is left then sits in an unmarked ring. */
		if (atomic_load(&producers_left) == 0 &&
		    softmq_active_next(active, R, 0) >= R)
			return NULL;
		/* With no producer left, a marked ring in an unhinted band
		 * would never be served again: the hint protocol failed. */
		if (atomic_load(&producers_left) == 0 &&
		    !test_bit(0, &hints)) {
			fprintf(stderr, "stress: rings marked but the band hint is clear\n");
			abort();
		}
		if (++idle % 64 == 0)
			sched_yield();
	}
}

/* ---- mode qdisc: the NOLOCK protocol ------------------------------------------- */

#define MISSED		1UL	/* __QDISC_STATE_MISSED */
#define DRAINING	2UL	/* __QDISC_STATE_DRAINING */
#define QUOTA		64	/* dev_tx_weight */

static atomic_ulong qstate;	/* MISSED | DRAINING */
static atomic_int seqlock;	/* qdisc->seqlock */
static atomic_int sched_bit;	/* __QDISC_STATE_SCHED */
static atomic_int softirq_running, softirq_stop;
static atomic_ulong softirq_runs;
static sem_t softirq_sem;
static unsigned long missed_rescans;

/* spin_trylock: acquire on success.  seq_cst so that the C11 model gives
 * what smp_mb()/fully ordered atomics give in qdisc_run_begin/end. */
static int trylock(void)
{
	int z = 0;

	return atomic_compare_exchange_strong(&seqlock, &z, 1);
}

/* softmq_dequeue(): the NOLOCK "found nothing" contract. */
static int qdisc_dequeue(void)
{
	int need_retry = 1, busy;

retry:
	busy = 0;
	if (band_dequeue(&busy))
		return 1;
	if (need_retry && (atomic_load_explicit(&qstate, memory_order_relaxed) &
			   (MISSED | DRAINING))) {
		/*
		 * clear_bit x2; smp_mb__after_atomic().  Fully ordered (seq_cst)
		 * RMWs stand in for the pair: a producer's later
		 * test_and_set_bit(MISSED) reads from them, and its earlier
		 * set_bit on the active map is then visible to our re-scan.
		 * (No atomic_thread_fence: ThreadSanitizer does not model it.)
		 */
		atomic_fetch_and(&qstate, ~MISSED);
		atomic_fetch_and(&qstate, ~DRAINING);
		need_retry = 0;
		missed_rescans++;
		goto retry;
	}
	if (busy)
		atomic_fetch_or(&qstate, DRAINING);
	return 0;
}

static void netif_schedule(void)
{
	if (!atomic_exchange(&sched_bit, 1))
		sem_post(&softirq_sem);
}

static void qdisc_run(void)
{
	int quota = QUOTA;

	/* qdisc_run_begin() */
	if (!trylock()) {
		if (atomic_fetch_or(&qstate, MISSED) & MISSED)
			return;
		if (!trylock())
			return;
	}
	/* __qdisc_run() */
	while (qdisc_dequeue()) {
		if (--quota <= 0) {
			atomic_fetch_or(&qstate, MISSED);
			break;
		}
	}
	/* qdisc_run_end(): spin_unlock; smp_mb(); test MISSED */
	atomic_store(&seqlock, 0);
	if (atomic_load(&qstate) & MISSED)
		netif_schedule();
}

static void qdisc_on_full(void)
{
	qdisc_run();
}

static void *producer_qdisc(void *arg)
{
	unsigned int p = (unsigned int)(uintptr_t)arg;
	unsigned long s;

	rnd += p;
	pthread_barrier_wait(&start);
	for (s = 0; s < M; s++) {
		producer_push(p, s, qdisc_on_full);
		/*
		 * Now and then push the next item before running the qdisc
		 * (a burst; this producer's last push is always followed by
		 * a run, so the protocol still owes every item a delivery).
		 * Items of a burst go to one ring, so the second finds the
		 * first still there even when the host runs the threads one
		 * after another: small rings spill on every run, not only
		 * when the scheduler happens to overlap producers.
		 */
		if (s + 1 < M && s % 5 != 4 && one_in(64))
			continue;
		if (one_in(1024))
			sched_yield();	/* preempted between push and qdisc_run */
		qdisc_run();
	}
	atomic_fetch_sub(&producers_left, 1);
	return NULL;
}

/* net_tx_action() for our one qdisc. */
static void *softirq(void *arg)
{
	(void)arg;
	rnd += 2000;
	for (;;) {
		while (sem_wait(&softirq_sem) && errno == EINTR)
			;
		if (atomic_load(&softirq_stop))
			return NULL;
		atomic_store(&softirq_running, 1);
		atomic_fetch_add(&softirq_runs, 1);
		atomic_store(&sched_bit, 0);	/* clear_bit(__QDISC_STATE_SCHED) */
		qdisc_run();
		atomic_store(&softirq_running, 0);
	}
}

/* True once no run is going on or pending (producers are all joined). */
static int quiescent(void)
{
	unsigned long c1 = atomic_load(&softirq_runs);
	int running = atomic_load(&softirq_running);
	int pending = atomic_load(&sched_bit);
	int locked = atomic_load(&seqlock);

	return !running && !pending && !locked && c1 == atomic_load(&softirq_runs);
}

/* ------------------------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int report(const char *name, int ok, const char *why);

/* A lost wake-up shows as no progress: say so and stop instead of hanging. */
static const char *mode_name;
static void *watchdog(void *arg)
{
	unsigned long last = ~0UL, same = 0;

	(void)arg;
	for (;;) {
		unsigned long d = __atomic_load_n(&delivered, __ATOMIC_RELAXED);
		char why[160];
		unsigned int i, held = 0, unmarked = 0;

		if (d != last) {
			last = d;
			same = 0;
		} else if (++same == 50) {	/* 5 s without a delivery */
			for (i = 0; i < R; i++) {
				if (!softmq_ring_count(rings[i]))
					continue;
				held++;
				if (active && softmq_active_next(active, R, i) != i)
					unmarked++;
			}
			snprintf(why, sizeof(why), "stuck: %lu/%lu delivered, %u rings "
				 "hold items, %u of them unmarked", d,
				 (unsigned long)P * M, held, unmarked);
			report(mode_name, 0, why);
			fflush(stdout);
			_exit(1);
		}
		usleep(100000);
	}
	return NULL;
}

static int report(const char *name, int ok, const char *why)
{
	printf("%s - stress %s P=%u M=%lu D=%u R=%u%s%s\n", ok ? "ok" : "not ok",
	       name, P, M, D, R, why ? ": " : "", why ? why : "");
	return !ok;
}

int main(int argc, char **argv)
{
	pthread_t th[MAXP], cons, sirq, wd;
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned int i, left_items = 0, left_marked = 0;
	unsigned long p, want;
	int qd = !strcmp(mode, "qdisc"), many = !strcmp(mode, "many");
	int fails = 0;
	double t0;
	char why[256] = "";

	if (argc < 5 || (!qd && !many && strcmp(mode, "one"))) {
		fprintf(stderr, "usage: %s one|many|qdisc P M D [R]\n", argv[0]);
		return 2;
	}
	P = (unsigned int)atoi(argv[2]);
	M = strtoul(argv[3], NULL, 0);
	D = (unsigned int)atoi(argv[4]);
	R = argc > 5 ? (unsigned int)atoi(argv[5]) : 1;
	if (!strcmp(mode, "one"))
		R = 1;
	if (P < 1 || P > MAXP || M < 1 || M >= (1UL << 32) || R < 1 ||
	    !D || (D & (D - 1)))
		return 2;

	rings = calloc(R, sizeof(*rings));
	for (i = 0; i < R; i++)
		rings[i] = ring_new(D);
	nwords = (R + BITS_PER_LONG - 1) / BITS_PER_LONG;
	if (strcmp(mode, "one"))
		active = (unsigned long *)calloc(1 + nwords, sizeof(long)) + 1;
	for (p = 0; p < P; p++) {
		seen[p] = calloc(M, 1);
		payload[p] = calloc(M, sizeof(**payload));
	}
	last_seq = calloc((size_t)P * R, sizeof(*last_seq));
	atomic_store(&producers_left, P);
	sem_init(&softirq_sem, 0, 0);
	pthread_barrier_init(&start, NULL, P + (qd ? 0 : 1));

	t0 = now();
	mode_name = mode;
	pthread_create(&wd, NULL, watchdog, NULL);
	if (qd)
		pthread_create(&sirq, NULL, softirq, NULL);
	else
		pthread_create(&cons, NULL, many ? consumer_many : consumer_one, NULL);
	for (p = 0; p < P; p++)
		pthread_create(&th[p], NULL, qd ? producer_qdisc : producer_plain,
			       (void *)(uintptr_t)p);
	for (p = 0; p < P; p++)
		pthread_join(th[p], NULL);
	if (qd) {
		/* wait for the protocol to settle; never drain by hand */
		double t1 = now();

		while (!quiescent()) {
			if (now() - t1 > 30) {
				snprintf(why, sizeof(why), "no quiescence after 30 s");
				break;
			}
			usleep(1000);
		}
		atomic_store(&softirq_stop, 1);
		sem_post(&softirq_sem);
		pthread_join(sirq, NULL);
	} else {
		pthread_join(cons, NULL);
	}

	/* Every ring empty; a ring still holding items is a stuck item. */
	for (i = 0; i < R; i++) {
		left_items += softmq_ring_count(rings[i]) != 0;
		if (active)
			left_marked += softmq_active_next(active, R, i) == i;
	}
	want = (unsigned long)P * M;
	/* Rings of at most 4 slots under 2+ producers must have spilled. */
	if (!why[0] && D <= 4 && !spills)
		snprintf(why, sizeof(why), "no push spilled: the spill path was not taken");
	if (delivered != want || dups || order_errs || bad_ring || left_items ||
	    (active && left_marked && !qd) || why[0]) {
		if (!why[0])
			snprintf(why, sizeof(why),
				 "delivered %lu/%lu dups %lu order %lu badring %lu "
				 "rings-with-items %u marked %u",
				 delivered, want, dups, order_errs, bad_ring,
				 left_items, left_marked);
		fails += report(mode, 0, why);
	} else {
		fails += report(mode, 1, NULL);
	}
	printf("# %s: %.2f s, spills %lu, full-waits %lu, cmpxchg-retries %lu, busy-skips %lu"
	       ", missed-rescans %lu, softirq-runs %lu\n", mode, now() - t0,
	       spills, full_waits, push_retries, busy_skips, missed_rescans,
	       (unsigned long)atomic_load(&softirq_runs));
	for (i = 0; i < R; i++)
		free(rings[i]);
	free(rings);
	if (active)
		free(active - 1);	/* and its summary word */
	for (p = 0; p < P; p++) {
		free(seen[p]);
		free(payload[p]);
	}
	free(last_seq);
	return fails;
}
