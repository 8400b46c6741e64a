// SPDX-License-Identifier: GPL-2.0
/*
 * Microbenchmark for include/softmq_ring.h (make -C tests/ring bench).
 *
 *   bench tput REPS ITEMS   throughput table (Mitems/s moved producer ->
 *                           consumer), every queue in the same run:
 *     softmq      the ring, shared by all producers; the consumer polls it
 *                 (the same use as spinring below: like for like)
 *     softmq-M    the same ring with the "has work" marking: WOKE -> mark,
 *                 the consumer walks the active bitmap and retires the ring
 *                 whenever it finds it empty (softmq_band_dequeue's pattern)
 *     softmq-R    one ring per producer, marked as softmq-M (per-flow rings)
 *     spinring    ptr_ring-like: producers serialise on a spinlock
 *                 (pthread_spin_lock) and store into a NULL slot; the one
 *                 consumer takes slots without a lock (pfifo_fast's
 *                 skb_array_produce / __skb_array_consume split)
 *     mutexq      a plain pthread_mutex around an array queue, both sides
 *     with P = 1, 2 producer threads and either one dedicated consumer
 *     thread ("dedicated": P+1 threads) or no consumer thread ("inline": each
 *     producer, after its push, takes the consumer role if a trylock gets
 *     it and drains a batch, as qdisc_run does: P threads).
 *   bench ir PAIRS          uncontended single-thread loops for callgrind:
 *                           pair_push/pair_pop (push then pop, ring stays
 *                           active) and edge_cycle (push WOKE + mark + pop +
 *                           empty pop + retire: the idle->active->idle cycle
 *                           a lightly loaded ring goes through per packet).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "ring_inc.h"

#define DEPTH	1024
#define MAXP	2
#define BATCH	64

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ---- the three queues, one interface ---------------------------------------- */

struct spinring {
	pthread_spinlock_t lock __attribute__((aligned(64)));
	unsigned long prod;
	unsigned long cons __attribute__((aligned(64)));
	void *q[DEPTH] __attribute__((aligned(64)));
};

static int spin_push(struct spinring *s, void *it)
{
	int ok = 0;

	pthread_spin_lock(&s->lock);
	if (!__atomic_load_n(&s->q[s->prod & (DEPTH - 1)], __ATOMIC_RELAXED)) {
		__atomic_store_n(&s->q[s->prod & (DEPTH - 1)], it, __ATOMIC_RELEASE);
		s->prod++;
		ok = 1;
	}
	pthread_spin_unlock(&s->lock);
	return ok;
}

static void *spin_pop(struct spinring *s)
{
	void **slot = &s->q[s->cons & (DEPTH - 1)];
	void *it = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (it) {
		__atomic_store_n(slot, NULL, __ATOMIC_RELAXED);
		s->cons++;
	}
	return it;
}

struct mutexq {
	pthread_mutex_t lock;
	unsigned long head, tail;
	void *q[DEPTH];
};

static int mutex_push(struct mutexq *m, void *it)
{
	int ok = 0;

	pthread_mutex_lock(&m->lock);
	if (m->tail - m->head < DEPTH) {
		m->q[m->tail++ & (DEPTH - 1)] = it;
		ok = 1;
	}
	pthread_mutex_unlock(&m->lock);
	return ok;
}

static void *mutex_pop(struct mutexq *m)
{
	void *it = NULL;

	pthread_mutex_lock(&m->lock);
	if (m->head != m->tail)
		it = m->q[m->head++ & (DEPTH - 1)];
	pthread_mutex_unlock(&m->lock);
	return it;
}

enum kind { K_SOFTMQ, K_SOFTMQ_M, K_SOFTMQ_R, K_SPIN, K_MUTEX, K_N };
static const char *kind_name[K_N] = {
	"softmq", "softmq-M", "softmq-R", "spinring", "mutexq"
};

static enum kind kind;
static struct softmq_ring *rings[MAXP];
static unsigned long active[1];
static unsigned long cursor;
static struct spinring *sring;
static struct mutexq *mq;
static unsigned int nprod;
static unsigned long items;
static int inline_consumer;
static atomic_int cons_lock;
static atomic_ulong consumed;
static pthread_barrier_t start;

/*
 * The softmq ring never refuses (it spills); like the qdisc's limit, the
 * producer holds back while its ring holds DEPTH items, so that every
 * queue here is bounded alike and the spill path stays rare.
 */
static int q_push(unsigned int p, void *it)
{
	unsigned int retries = 0;
	struct softmq_ring *r;
	enum softmq_push res;

	switch (kind) {
	case K_SOFTMQ:
		if (softmq_ring_len(rings[0]) >= DEPTH)
			return 0;
		softmq_ring_push(rings[0], it, &retries);
		return 1;
	case K_SOFTMQ_M:
	case K_SOFTMQ_R:
		r = rings[kind == K_SOFTMQ_M ? 0 : p];
		if (softmq_ring_len(r) >= DEPTH)
			return 0;
		res = softmq_ring_push(r, it, &retries);
		if (res == SOFTMQ_PUSH_WOKE)
			set_bit(kind == K_SOFTMQ_M ? 0 : p, active);
		return 1;
	case K_SPIN:
		return spin_push(sring, it);
	default:
		return mutex_push(mq, it);
	}
}

/* One consumer at a time. */
static void *q_pop(void)
{
	unsigned long n = kind == K_SOFTMQ_M ? 1 : nprod, idx;
	void *it;

	switch (kind) {
	case K_SOFTMQ:
		return softmq_ring_pop(rings[0]);
	case K_SOFTMQ_M:
	case K_SOFTMQ_R:
		idx = cursor;
		for (;;) {
			idx = softmq_active_next(active, n, idx);
			if (idx >= n) {
				idx = softmq_active_next(active, n, 0);
				if (idx >= n)
					return NULL;
			}
			it = softmq_ring_pop(rings[idx]);
			if (it) {
				cursor = idx;
				return it;
			}
			if (!softmq_ring_retire(rings[idx], active, n, (unsigned int)idx))
				return NULL;	/* push in flight: come back */
			idx++;
		}
	case K_SPIN:
		return spin_pop(sring);
	default:
		return mutex_pop(mq);
	}
}

static unsigned long drain(unsigned long max)
{
	unsigned long n = 0;

	while (n < max && q_pop())
		n++;
	if (n)
		atomic_fetch_add_explicit(&consumed, n, memory_order_relaxed);
	return n;
}

static void *producer(void *arg)
{
	unsigned int p = (unsigned int)(uintptr_t)arg;
	unsigned long i, spins = 0;

	pthread_barrier_wait(&start);
	for (i = 0; i < items; i++) {
		/* its own pool: fewer than TEST_ITEMS / MAXP of them are queued */
		void *it = ITEM(p * (TEST_ITEMS / MAXP) + i % (TEST_ITEMS / MAXP));

		while (!q_push(p, it)) {
			if (inline_consumer) {
				int z = 0;

				if (atomic_compare_exchange_strong(&cons_lock, &z, 1)) {
					drain(BATCH);
					atomic_store(&cons_lock, 0);
				}
			}
			if (++spins % 64 == 0)
				sched_yield();
			else
				cpu_relax();
		}
		if (inline_consumer) {
			int z = 0;

			if (atomic_compare_exchange_strong(&cons_lock, &z, 1)) {
				drain(BATCH);
				atomic_store(&cons_lock, 0);
			}
		}
	}
	return NULL;
}

static void *consumer(void *arg)
{
	unsigned long want = nprod * items, got = 0, idle = 0;

	(void)arg;
	pthread_barrier_wait(&start);
	while (got < want) {
		unsigned long n = drain(BATCH);

		got += n;
		if (n) {
			idle = 0;
		} else if (++idle % 64 == 0) {
			sched_yield();
		} else {
			cpu_relax();
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
	unsigned int i;

	for (i = 0; i < MAXP; i++) {
		free(rings[i]);
		rings[i] = ring_new(DEPTH);
	}
	active[0] = 0;
	cursor = 0;
	free(sring);
	sring = aligned_alloc(64, sizeof(*sring));
	memset(sring, 0, sizeof(*sring));
	pthread_spin_init(&sring->lock, PTHREAD_PROCESS_PRIVATE);
	free(mq);
	mq = calloc(1, sizeof(*mq));
	pthread_mutex_init(&mq->lock, NULL);
	atomic_store(&consumed, 0);
	atomic_store(&cons_lock, 0);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);	/* all threads of the process */
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/*
 * One timed run: Mitems/s of wall time moved, and in *per_cpu Mitems per
 * CPU-second the process used (time other jobs on a shared machine take
 * from us does not count; our own spinning and waiting does); -1 if items
 * went missing.
 */
static double run_once(enum kind k, unsigned int p, int inl, double *per_cpu)
{
	pthread_t th[MAXP + 1];
	unsigned int i, nth = p + (inl ? 0 : 1);
	double t0, t1, c0, c1;

	kind = k;
	nprod = p;
	inline_consumer = inl;
	setup();
	pthread_barrier_init(&start, NULL, nth + 1);
	for (i = 0; i < p; i++)
		pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i);
	if (!inl)
		pthread_create(&th[p], NULL, consumer, NULL);
	pthread_barrier_wait(&start);
	t0 = now();
	c0 = cpu_seconds();
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (inl)	/* what no producer's trylock got to */
		drain(~0UL);
	t1 = now();
	c1 = cpu_seconds();
	pthread_barrier_destroy(&start);
	if (atomic_load(&consumed) != p * items)
		return -1;
	*per_cpu = p * items / (c1 - c0 > 1e-4 ? c1 - c0 : 1e-4) / 1e6;
	return p * items / (t1 - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int tput(int reps, unsigned long n)
{
	static const enum kind order[] = {
		K_SOFTMQ, K_SOFTMQ_M, K_SOFTMQ_R, K_SPIN, K_MUTEX
	};
	static double res[2][3][K_N][64], cpu[2][3][K_N][64];
	int inl, pi, r, k;

	items = n;
	if (reps > 64)
		reps = 64;
	/* Interleave the queues run by run so that background noise hits
	 * all of them alike. */
	for (r = 0; r < reps; r++)
		for (inl = 0; inl < 2; inl++)
			for (pi = 1; pi <= MAXP; pi++)
				for (k = 0; k < K_N; k++) {
					double c, v = run_once(order[k], (unsigned int)pi, inl, &c);

					if (v < 0) {
						fprintf(stderr, "bench: %s lost items\n",
							kind_name[order[k]]);
						return 1;
					}
					res[inl][pi][order[k]][r] = v;
					cpu[inl][pi][order[k]][r] = c;
				}
	printf("| consumer | producers | queue | Mitems/s wall: median (min-max) | vs spinring | Mitems per CPU-s: median (min-max) | vs spinring |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (inl = 0; inl < 2; inl++)
		for (pi = 1; pi <= MAXP; pi++) {
			double med[K_N], cmed[K_N];

			for (k = 0; k < K_N; k++) {
				qsort(res[inl][pi][k], (size_t)reps, sizeof(double), cmp_double);
				qsort(cpu[inl][pi][k], (size_t)reps, sizeof(double), cmp_double);
				med[k] = res[inl][pi][k][reps / 2];
				cmed[k] = cpu[inl][pi][k][reps / 2];
			}
			for (k = 0; k < K_N; k++)
				printf("| %s | %d | %s | %.1f (%.1f-%.1f) | %.2fx | %.1f (%.1f-%.1f) | %.2fx |\n",
				       inl ? "inline" : "dedicated", pi, kind_name[k],
				       med[k], res[inl][pi][k][0],
				       res[inl][pi][k][reps - 1], med[k] / med[K_SPIN],
				       cmed[k], cpu[inl][pi][k][0],
				       cpu[inl][pi][k][reps - 1], cmed[k] / cmed[K_SPIN]);
		}
	return 0;
}

/* ---- instruction counts (run under callgrind) ------------------------------- */

static struct softmq_ring *ir_ring, *edge_ring;
static unsigned long ir_map[1];

__attribute__((__noinline__, noclone, used)) enum softmq_push
pair_push(struct softmq_ring *r, void *it)
{
	unsigned int retries = 0;

	return softmq_ring_push(r, it, &retries);
}

__attribute__((__noinline__, noclone, used)) void *pair_pop(struct softmq_ring *r)
{
	return softmq_ring_pop(r);
}

/* Every step must happen: returns 1 only if the whole cycle did. */
__attribute__((__noinline__, noclone, used)) int
edge_cycle(struct softmq_ring *r, unsigned long *map, void *it)
{
	unsigned int retries = 0;
	int ok = softmq_ring_push(r, it, &retries) == SOFTMQ_PUSH_WOKE;

	set_bit(0, map);
	ok &= softmq_active_next(map, 1, 0) == 0;
	ok &= softmq_ring_pop(r) == it;
	ok &= softmq_ring_pop(r) == NULL;
	ok &= softmq_ring_retire(r, map, 1, 0);
	return ok;
}

__attribute__((__noinline__, noclone, used)) int
spin_pair(struct spinring *s, void *it)
{
	return spin_push(s, it) && spin_pop(s) == it;
}

__attribute__((__noinline__, noclone, used)) int
mutex_pair(struct mutexq *m, void *it)
{
	return mutex_push(m, it) && mutex_pop(m) == it;
}

static int ir(unsigned long pairs)
{
	unsigned long i, bad = 0;

	ir_ring = ring_new(DEPTH);
	edge_ring = ring_new(DEPTH);
	setup();
	for (i = 1; i <= pairs; i++) {
		pair_push(ir_ring, ITEM(i));
		bad += pair_pop(ir_ring) != ITEM(i);
	}
	for (i = 1; i <= pairs; i++)
		bad += !edge_cycle(edge_ring, ir_map, ITEM(i));
	for (i = 1; i <= pairs; i++)
		bad += !spin_pair(sring, ITEM(i));
	for (i = 1; i <= pairs; i++)
		bad += !mutex_pair(mq, ITEM(i));
	printf("pairs %lu bad %lu\n", pairs, bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "tput"))
		return tput(atoi(argv[2]), strtoul(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "ir"))
		return ir(strtoul(argv[2], NULL, 0));
	fprintf(stderr, "usage: %s tput REPS ITEMS | ir PAIRS\n", argv[0]);
	return 2;
}
