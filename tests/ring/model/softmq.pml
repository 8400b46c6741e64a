/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq.pml - Promela model of the softmq ring, its "ring has work" marking
 * and the kernel's NOLOCK qdisc_run protocol around softmq_dequeue().
 *
 * Who is modelled
 *   NP producers: softmq_enqueue() (the ring push, the mark on PUSH_WOKE)
 *   followed by the qdisc_run() that __dev_xmit_skb() does after every
 *   enqueue; each pushes K items, item i of producer p into ring
 *   RING_OF(p, i) (-DRING_MAP=0,1,2 below; -DANY_RING: a ring chosen
 *   nondeterministically, every map at once, much larger).
 *   One consumer at a time: whoever wins the seqlock in qdisc_run_begin(),
 *   a producer or the "softirq" process (net_tx_action) after a reschedule.
 *   -DCONTROL_LOCK: a "control" process, softmq_change() and its
 *   softmq_reap()s, takes the seqlock NCTL times (default 1) with
 *   spin_lock_bh(), holds it without touching the rings, and leaves it
 *   through softmq_consumer_unlock(): unlock, smp_mb(), reschedule if
 *   MISSED is set, as qdisc_run_end() does.  A qdisc_run_begin() that loses
 *   the trylock to it sets MISSED and returns, counting on exactly that.
 *
 * Step granularity and the line map
 *   One Promela step = one indivisible access to shared memory, with the
 *   private computation around it folded in (atomic/d_step).  Each step's
 *   comment quotes the code it stands for:
 *     H:nnn  include/softmq_ring.h line nnn      } checked by
 *     Q:     src/sch_softmq.c (text only)        } check-model-map.py
 *     K:     Linux 6.12 include/net/sch_generic.h, net/core/dev.c (not checked)
 *   Two merges are exact, not approximations:
 *   - pop's "slot = NULL" and "head = h + 1" are one step: producers never
 *     read slots and only read head, so no producer can tell them apart;
 *   - run_end's MISSED test and __netif_schedule() are one step: a softirq
 *     run that starts in between starts after the test anyway.
 *
 * Memory model: sequential consistency.  The model checks the protocol's
 * logic over every interleaving of these steps.  What makes a real CPU
 * behave like one of them is the barriers, argued in the header's comments
 * and exercised under ThreadSanitizer by tests/ring/stress.c.  Where a
 * barrier matters, the comment at the step says which step order it buys.
 * Dropping smp_mb__after_atomic() in the dequeue lets the re-scan's loads
 * pass the MISSED clear: under SC that is the re-scan happening before the
 * clear, i.e. no re-scan after it, which is the MUT_NO_RESCAN mutant.
 *
 * Properties (assertions, exhaustive safety search by pan)
 *   P1 no item lost or duplicated: pop returns each claimed item once, from
 *      the ring and position it was claimed at; a publish never overwrites a
 *      slot that still holds an item;
 *   P2 per-producer FIFO per ring (a flow maps to one ring);
 *   P3 no stuck item: once every producer has finished (or stopped, P4),
 *      the control process (if any) is through, and no consumer run is
 *      going on or pending, every item pushed by a
 *      producer that did not stop has been delivered; with no stop, every
 *      ring is also empty, idle and unmarked and MISSED/DRAINING are clear;
 *   P4 (-DMAXSTALL=1) a producer stopped forever at any step of its push or
 *      of qdisc_run_begin() never keeps the consumer from other rings'
 *      items, nor from items ahead of it in its own ring: P3 holds for all
 *      items but the stopped producer's own and those queued in its ring
 *      behind its position when it stopped either between its claim and its
 *      publish (FIFO), or after taking the idle->active edge (PUSH_WOKE)
 *      and before its qdisc_run_begin() was through: until then the ring
 *      is its to announce (unmarked, or marked with no run after the mark),
 *      and pushes by others into it see a marked-looking ring only later;
 *      or after any other publish and before its qdisc_run_begin() was
 *      through: a consumer that found its claimed slot unpublished left
 *      the ring to it (DRAINING set, the ring's later items behind it), and
 *      its run is the one that serves them (found by model-deep's
 *      deep-stall-map1-3p: three producers in one ring of one slot).
 *      This is the design's stated cost ("only that ring's later items
 *      wait ... the stalled producer's own qdisc_run ... picks them up"),
 *      found by this model with the stop placed after the mark.
 *      Stop points: every step of the push, and qdisc_run_begin() after its
 *      first failed trylock.  Not after test_and_set_bit(MISSED) and before
 *      the second trylock: there, a stop delays every ring, because a
 *      producer that finds MISSED already set returns at once, trusting the
 *      one that set it to retry the lock (kernel code, the same for
 *      pfifo_fast; non-RT: an IRQ-long window with BH off; PREEMPT_RT: a
 *      preemption).  -DSTALL_AFTER_MISSED adds that stop point and spin
 *      shows the delay (make check keeps it as an expected finding);
 *   P5 no livelock: once the producers are done, the softirq runs only a
 *      bounded number of times (a dequeue that leaves MISSED set when it
 *      finds nothing makes qdisc_run_end() reschedule forever); each lock
 *      taken by the control process may add one run (a softirq that lost
 *      the trylock to it).
 *   pan also reports any deadlock (a process blocked outside an end state).
 *
 * Mutants (make check requires spin to report an error for each)
 *   MUT_NO_RESCAN     dequeue clears MISSED/DRAINING but does not look again
 *   MUT_NO_CLEAR      dequeue neither clears MISSED nor looks again (P5)
 *   MUT_RETIRE_ORDER  retire cmpxchg's IDLE in before clearing the mark
 *   MUT_RETIRE_NOSET  retire does not re-mark the ring when its cmpxchg fails
 *   MUT_NO_RETRYLOCK  qdisc_run_begin() does not retry the lock after MISSED
 *   MUT_HINT_NO_RESCAN the consumer clears a band hint without looking again
 *   MUT_POP_RETIRE_NO_LOOK a pop that empties its ring retires it and clears
 *                     the hint without looking at the other rings
 *   MUT_POP_RETIRE_NO_RESTORE that retire, failing (a push in flight),
 *                     leaves the hint clear
 *   MUT_SPILL_ANY_POS  pop takes any spilled item of the ring, whatever its
 *                     position (order: P1's position check)
 *   MUT_SPILL_STALE_LIST pop trusts a non-empty list of spilled items and
 *                     does not take the stack when head's item is not in it
 *                     (a spill pushed out of position order is lost: P3)
 *   MUT_SUMMARY_NO_RECHECK (with SUMMARY) the retire's summary drop clears
 *                     the word's bit without reading the word again: a mark
 *                     made after its first read is left out of the looks (P3)
 *   MUT_SUMMARY_AFTER_HINT (with SUMMARY) the producer names its word after
 *                     its band note: a consumer that cleared the hint looks
 *                     past the mark, and the producer trusts the hint (P3)
 *   MUT_CONTROL_NO_MISSED (with CONTROL_LOCK) the control process leaves the
 *                     lock with a plain spin_unlock_bh(), MISSED not looked
 *                     at (softmq_reap() before softmq_consumer_unlock()): a
 *                     producer that lost the trylock to it has its item
 *                     stuck (P3)
 *
 * tests/ring/model/rwc.pml, a separate small model, checks the producer's
 * softmq_ring_seen() barrier under a non-multi-copy-atomic memory model
 * (the RWC pattern that sequential consistency here cannot show).
 *
 * Simplifications (over-approximations, or irrelevant to P1-P5)
 *   - one band, DRR credit not modelled (it only delays a ring by one visit);
 *     the cursor is modelled as in the code; -DANY_CURSOR lets each dequeue
 *     start anywhere instead (every DRR order); with SUMMARY the lap takes
 *     a marked cursor ring without a look, its mark read directly (the
 *     code's at_cursor; softmq_cursor_dequeue() is that first step taken
 *     before the walk, see band_dequeue());
 *   - positions do not wrap (a byte never exceeds NP*K); the wrap of
 *     SOFTMQ_RING_POS_MASK is covered by the unit tests and the fuzzer;
 *   - the device always accepts (no requeue, no stopped queue); quota QUOTA;
 *   - one softirq process: a reschedule raised while it runs is served when
 *     it loops back; a second CPU's net_tx_action would only find the seqlock
 *     taken and set MISSED, which the producers' qdisc_run already does;
 *   - no TCQ_F_CAN_BYPASS path, no old-table draining (change() only as
 *     the lock holder above, -DCONTROL_LOCK); so not the enqueue's
 *     re-mark/re-note of a ring whose waker has not marked or noted it yet
 *     either (it guards the bypass path's order: rwc.pml);
 *   - the band hint is this band's bit: the other bands' bits are other
 *     words' worth of the same protocol.
 *
 * Bounds (tests/ring/run-check.sh, all exhaustive, no bitstate; pan built
 * with -DSAFETY -DCOLLAPSE -DMEMLIM=2048 (one-ring-3p: 3072), run with
 * -m500000; a search that hits either bound fails the test; states on
 * 2026-12-04, with the spill and the retire at the pop):
 *   base           NP=2 K=2 NR=2 DEPTH=2                    3.7M states
 *   full-quota     DEPTH=1 QUOTA=1 (spill path, quota path) 11.9M
 *   three-producers NP=3 K=1                                  6.5M
 *   one-ring       RING_MAP=1 (4 items, one ring of 2)      25.7M
 *   one-ring-3p    RING_MAP=1 NP=3 K=1 DEPTH=1 QUOTA=2      37.8M (2.3 GB)
 *                  (spills out of position order)
 *   own-rings      RING_MAP=2 DEPTH=1 QUOTA=1                7.0M
 *   any-cursor     ANY_CURSOR                                4.0M
 *   stall          MAXSTALL=1                               12.6M
 *   stall-3p       MAXSTALL=1 NP=3 K=1 DEPTH=1              22.0M
 *   control-lock   CONTROL_LOCK NCTL=2 K=1                   1.9M
 *   control-lock-one-ring  the same, RING_MAP=1              2.8M
 *   control-lock-quota     the same, DEPTH=1 QUOTA=1         1.7M
 *   control-lock-stall     the same, MAXSTALL=1              3.7M
 *   summary        SUMMARY (the looks through the summary word,
 *                  and the lap's start at a marked cursor ring) 7.4M
 *   summary-one-word      the same, SUMMARY_ONE_WORD         6.0M
 *   summary-stall         the same, MAXSTALL=1              19.7M
 *   summary-control-lock  the same, CONTROL_LOCK NCTL=2 K=1  2.8M
 *   (2026-12-07; model-deep adds SUMMARY with RING_MAP=1, 34.7M, with
 *   ANY_CURSOR, 11.2M, and with MAXSTALL=1 NP=3 K=1 DEPTH=1, 31.8M)
 * about 215 s in all.  make -C tests/ring model-deep (MEMLIM 6144) runs
 * ANY_RING variants: with -DNO_POP_RETIRE (the retire at the pop left
 * out; with it, -DANY_RING alone outgrew 8 GB at 140M states) for
 * deep-any-ring and deep-any-ring-3p-d1-q1 (26-44M states, up to 2.5 GB),
 * with it for deep-any-ring-cursor-3p (95.5M, 4.9 GB, 312 s); the stall
 * case with three producers in one ring of one slot (66M, 3.6 GB) and
 * CONTROL_LOCK with K=2 (42M, 2.4 GB), both with it.
 * NP=3 K=2 does not fit in 3 GB, nor CONTROL_LOCK NP=3 K=1 in 2 GB.
 * MUT_NO_RETRYLOCK runs with -DNO_CLEAN_END: with the clean-end check on,
 * spin first reports a MISSED bit left set at rest; without it, the lost
 * item itself.
 */

#ifndef NP
#define NP	2		/* producers */
#endif
#ifndef NR
#define NR	2		/* rings */
#endif
#ifndef DEPTH
#define DEPTH	2		/* ring capacity, power of two */
#endif
#ifndef K
#define K	2		/* items per producer */
#endif
#ifndef QUOTA
#define QUOTA	64		/* dev_tx_weight; small values exercise the quota path */
#endif
#ifndef MAXSTALL
#define MAXSTALL 0		/* producers that may stop forever (P4) */
#endif
#ifdef CONTROL_LOCK
#ifndef NCTL
#define NCTL	1		/* times change() takes the consumer lock */
#endif
#else
#define NCTL	0
#endif

#define MASK	 (DEPTH - 1)
#define NITEMS	 (NP * K)
#define MAXSCHED (NITEMS + 2 + NCTL)	/* P5: see the softirq process */
#define NOPOS	 255
#ifndef RING_MAP
#define RING_MAP 0
#endif
#if RING_MAP == 0
#define RING_OF(p, i)	(((p) + (i)) % NR)	/* producers interleave over rings */
#elif RING_MAP == 1
#define RING_OF(p, i)	0			/* everyone into ring 0 */
#else
#define RING_OF(p, i)	((p) % NR)		/* one ring per producer */
#endif

/* ---- shared state ---------------------------------------------------------
 * tail = claimed * 2 + IDLE; a slot holds 0 (NULL) or an item id 1..NITEMS. */
byte tail[NR];		/* H: atomic_long_t tail; */
byte head[NR];		/* H: unsigned long head; */
byte head_snap[NR];	/* H: unsigned long	head_snap; */
byte slot[NR * DEPTH];	/* H: ____cacheline_aligned_in_smp void *slot[]; */
/*
 * The spill stack and the consumer's list, as sets of items (each item's
 * ring is itemring[]): the list's order is the code's business (unit tests
 * and the fuzzer); what the protocol needs is that the consumer finds
 * head's item there when, and only when, it has been spilled.
 */
bit  instk[NITEMS + 1];	/* H: struct softmq_spill *spilled; */
bit  inpriv[NITEMS + 1];	/* H: struct softmq_spill *spill_first; */
byte spos[NITEMS + 1];	/* H: unsigned long pos; */
bit  mark[NR];		/* (Q) t->active[band], one word */
/*
 * -DSUMMARY: the bitmap's summary word (softmq_active_summary(), a bitmap of
 * 2..BITS_PER_LONG words): each ring in a word of its own, or with
 * -DSUMMARY_ONE_WORD both rings in word 0, so a retire finds the word
 * still marked by the other ring.  Without it (a bitmap of one word, or
 * of more words than the summary has bits), every word is looked at.
 */
#ifdef SUMMARY
#ifdef SUMMARY_ONE_WORD
#define WORD_OF(i)	0
#else
#define WORD_OF(i)	(i)
#endif
bit  summ[NR];		/* H: return (unsigned long *)map - 1; */
#define NAMED(i)	summ[WORD_OF(i)]
#else
#define NAMED(i)	1
#endif
bit  hint;		/* (Q) t->band_hints, this band's bit */
byte cursor;		/* (Q) t->cursor[band] */
bit  missed;		/* K: __QDISC_STATE_MISSED */
bit  draining;		/* K: __QDISC_STATE_DRAINING */
bit  locked;		/* K: qdisc->seqlock */
bit  sched;		/* K: __QDISC_STATE_SCHED (net_tx_action pending) */
bit  in_softirq;
byte nsched;		/* softirq runs after all producers are done */

/* ---- ghost state for the properties --------------------------------------- */
bit  accepted[NITEMS + 1];	/* claimed by a successful cmpxchg */
bit  delivered[NITEMS + 1];
byte itemring[NITEMS + 1];
byte itempos[NITEMS + 1];
byte lastseq[NP * NR];		/* P2 */
bit  stalled[NP];
byte nstalled;
byte ndone;
bit  ctldone;			/* the control process is through (or absent) */
byte blocked_from[NR];		/* P4: first position behind a stopped producer */

/* Consumer locals, in every process that can become the consumer. */
#ifdef SUMMARY
#define CURSOR_LOCALS	; bit at_cursor
#else
#define CURSOR_LOCALS
#endif
#define CONSUMER_LOCALS \
	bit got; bit old; bit need_retry; bit busy; bit ok; bit spill_listed; \
	byte quota; byte it; byte idx; byte first_busy; byte t2; byte from \
	CURSOR_LOCALS

/*
 * A stop point (P4): the producer may stop here forever.  @blk records what
 * its stop blocks.  Never inside the consumer: a CPU holding the seqlock
 * (BH off) always finishes its run.
 */
#if MAXSTALL > 0
/* sr, sp: the ring and position this producer is responsible for (ghost) */
#define STALL \
	if \
	:: canstall && nstalled < MAXSTALL -> \
		atomic { \
			nstalled++; stalled[p] = 1; \
			if \
			:: sr != NOPOS && sp < blocked_from[sr] -> blocked_from[sr] = sp \
			:: else -> skip \
			fi \
		}; \
		goto stop \
	:: true -> skip \
	fi
#define GHOST_CLAIM(rr, pp)	sr = rr; sp = pp
#define GHOST_DONE		sr = NOPOS; sp = 0
#define STALL_LOCALS		byte sr = NOPOS; byte sp
#else
#define STALL			skip
#define GHOST_CLAIM(rr, pp)	skip
#define GHOST_DONE		skip
#define STALL_LOCALS		byte sr = NOPOS
#endif

/* First marked ring at or after @i, or NR (one load of the bitmap word). */
#define FIND_NEXT(i) \
	do \
	:: i < NR && !(NAMED(i) && mark[i]) -> i++ \
	:: else -> break \
	od

/*
 * The consumer's list lookup: head's item if it is listed (it), and whether
 * the list holds anything of ring @r (spill_listed).  -DMUT_SPILL_ANY_POS:
 * any listed item is taken, whatever its position.
 */
#ifndef MUT_SPILL_ANY_POS
#define SPILL_MATCH(x, r)	(inpriv[x] && itemring[x] == r && spos[x] == head[r])
#else
#define SPILL_MATCH(x, r)	(inpriv[x] && itemring[x] == r)
#endif
#define SPILL_FIND(r) \
	it = 0; spill_listed = 0; t2 = 1; \
	do \
	:: t2 <= NITEMS -> \
		if :: inpriv[t2] && itemring[t2] == r -> spill_listed = 1 :: else -> skip fi; \
		if :: it == 0 && SPILL_MATCH(t2, r) -> it = t2 :: else -> skip fi; \
		t2++ \
	:: else -> break \
	od; \
	t2 = 0

/* P1, P2: ghost bookkeeping of item @item leaving ring @r at position @pos. */
#define DELIVER(item, r, pos) \
	assert(item >= 1 && item <= NITEMS); \
	assert(accepted[item]); \
	assert(!delivered[item]); \
	assert(itemring[item] == r && itempos[item] == pos); \
	delivered[item] = 1; \
	assert((item - 1) % K + 1 > lastseq[((item - 1) / K) * NR + r]); \
	lastseq[((item - 1) / K) * NR + r] = (item - 1) % K + 1

/*
 * softmq_ring_retire() of ring idx.  Out: ok (retired: unmarked and IDLE;
 * else the ring keeps its mark).
 */
inline ring_retire()
{
	atomic {				/* H:907 long t = atomic_long_read(&r->tail); */
		t2 = tail[idx];
		ok = (t2 / 2 == head[idx])	/* H:909 if (softmq_ring_pos(t) != r->head) */
	};
	if
	:: ok ->
#ifndef MUT_RETIRE_ORDER
		mark[idx] = 0;			/* H:911 clear_bit(idx, map); */
		atomic {			/* H:917 if (atomic_long_try_cmpxchg(&r->tail, &t, t | SOFTMQ_RING_IDLE)) */
			if
			:: tail[idx] == t2 -> tail[idx] = t2 | 1
			:: else -> ok = 0
			fi
		};
#else
		/* mutant: IDLE in first, the mark out after */
		atomic {
			if
			:: tail[idx] == t2 -> tail[idx] = t2 | 1
			:: else -> ok = 0
			fi
		};
		if :: ok -> mark[idx] = 0 :: else -> skip fi;
#endif
		if
#ifndef MUT_RETIRE_NOSET
		:: !ok -> mark[idx] = 1		/* H:921 set_bit(idx, map); */
#endif
		:: else -> skip
		fi
	:: else -> skip
	fi;
#ifdef SUMMARY
	/*
	 * softmq_active_summary_drop(), softmq_ring_retire()'s last step once
	 * its cmpxchg succeeded.  -DMUT_SUMMARY_NO_RECHECK: the word's bit
	 * cleared without the second read, so a mark made between the first
	 * read and the clear is left out of the summary.
	 */
	if
	:: ok ->
		d_step {			/* H: if (!softmq_active_summed(n) || READ_ONCE(map[w])) */
			t2 = 0;
			do
			:: t2 < NR && !(WORD_OF(t2) == WORD_OF(idx) && mark[t2]) -> t2++
			:: else -> break
			od
		};
		if
		:: t2 == NR ->
			summ[WORD_OF(idx)] = 0;	/* H: clear_bit(w, summary); */
#ifndef MUT_SUMMARY_NO_RECHECK
			d_step {		/* H: if (READ_ONCE(map[w])) */
				t2 = 0;
				do
				:: t2 < NR && !(WORD_OF(t2) == WORD_OF(idx) && mark[t2]) -> t2++
				:: else -> break
				od
			};
			if
			:: t2 < NR -> summ[WORD_OF(idx)] = 1	/* H: set_bit(w, summary); */
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi;
		t2 = 0
	:: else -> skip
	fi
#endif
}

/*
 * softmq_ring_drained() after a pop from ring idx that left it looking
 * empty (the caller's step): the band's hint cleared, the other rings
 * looked at, and idx retired if none is marked.  Its other first test (the
 * only known ring) is left to spin: such a pop may come here or not.  -DMUT_POP_RETIRE_NO_LOOK:
 * retired without the look (another ring's mark left unhinted);
 * -DMUT_POP_RETIRE_NO_RESTORE: a retire that fails (a push in flight) leaves
 * the hint clear.
 */
inline pop_retire()
{
	hint = 0;				/* H: clear_bit(band, hints); */
	d_step {				/* H: if (!softmq_active_any_but(map, n, idx)) */
		ok = 1;
#ifndef MUT_POP_RETIRE_NO_LOOK
		t2 = 0;
		do
		:: t2 < NR ->
			if :: t2 != idx && NAMED(t2) && mark[t2] -> ok = 0 :: else -> skip fi;
			t2++
		:: else -> break
		od;
#endif
		t2 = 0
	};
	if
	:: !ok -> hint = 1			/* H: set_bit(band, hints); */
	:: else ->
		ring_retire();			/* Q: if (softmq_ring_idle(q, t, band, idx, ring)) { */
		if
#ifndef MUT_POP_RETIRE_NO_RESTORE
		:: !ok -> hint = 1		/* Q: set_bit(band, &t->band_hints); */
#endif
		:: else -> skip
		fi
	fi;
	d_step { t2 = 0; ok = 0 }
}

/*
 * softmq_band_dequeue()'s lap, one band, deficit and new flows not modelled:
 * softmq_band_next() inlined.  Out: it (0 = NULL), busy.  In the code a
 * ring with deficit <= 0 is skipped once and refilled (which also ends a
 * run of busy visits); leaving that out removes only
 * those extra visits.  The loop ends: a rescan that finds a mark goes on
 * to visit that ring, which either gives a packet, or is busy (the lap
 * then stops at it), or goes idle (its mark cleared, and only a producer's
 * push marks again, a bounded number of times).  Without SUMMARY the
 * code's start of the lap at a marked cursor ring without the scan
 * (at_cursor) is not written out: its read of the cursor's mark is the
 * first read the scan below makes, and a scan from a marked cursor
 * returns the cursor.  With SUMMARY the scan finds only marks whose word
 * is named, so the start is written out (at_cursor below).  Nor is
 * softmq_cursor_dequeue(), which is that same first step taken before
 * the walk (a NULL from it runs the walk, which visits the ring again:
 * a second pop, and a second take of the spill stack, both consumer-side
 * only).  The sparse-flow pass is not modelled either, nor its own direct
 * read of the cursor's mark (whether to run it).
 */
inline band_dequeue()
{
#ifdef ANY_CURSOR
	atomic { select (idx : 0 .. NR - 1); first_busy = NR; it = 0 };
#else
	d_step {
		idx = cursor;			/* Q: unsigned long idx = t->cursor[band]; */
		first_busy = NR;		/* Q: unsigned long busy_from = n; */
		it = 0
	};
#endif
	if
	:: !hint -> it = 0			/* Q: if (!test_bit(band, &t->band_hints)) */
	:: else ->
#ifdef SUMMARY
	/*
	 * The lap starts at a marked cursor ring without a look: its mark is
	 * read directly, so the ring may be served, and retired, before its
	 * waker has named its word in the summary (a stale named word after).
	 */
	at_cursor = mark[idx];			/* Q: at_cursor = test_bit_acquire(idx, t->active[band]); */
#endif
	do
	/* Q: idx = softmq_band_next(t, band, idx); */
	/* Q: idx = softmq_active_next_wrap(t->active[band], n, from); */
	:: d_step {				/* H: return find_next_bit_wrap(map, n, from); */
		from = idx;
#ifdef SUMMARY
		if
		:: at_cursor -> ok = 0		/* Q: if (!at_cursor) */
		:: else ->
#endif
		FIND_NEXT(idx);
		if :: idx >= NR && from > 0 -> idx = 0; ok = 1 :: else -> ok = 0 fi
#ifdef SUMMARY
		fi;
		at_cursor = 0
#endif
	   };
	   if
	   :: ok ->
		d_step {			/* lib/find_bit.c: then [0, from) */
			do
			:: idx < from && !(NAMED(idx) && mark[idx]) -> idx++
			:: else -> break
			od;
			if :: idx >= from -> idx = NR :: else -> skip fi;	/* ... else n */
			ok = 0;
			from = 0
		}
	   :: else -> from = 0
	   fi;
	   if
	   :: idx >= NR ->
		/* Q: if (softmq_band_clear_hint(&t->band_hints, band, t->active[band], n)) */
#ifndef MUT_HINT_NO_RESCAN
		hint = 0;			/* H: clear_bit(band, hints); */
		d_step {			/* H: if (softmq_active_next(map, n, 0) >= n) */
			idx = 0;
			FIND_NEXT(idx);
			ok = (idx < NR)
		};
#else
		/* mutant: the hint cleared without the second look */
		d_step { hint = 0; ok = 0 };
#endif
		if
		:: !ok -> d_step { idx = NR }	/* H: return true; */
		:: else ->
			hint = 1;		/* H: set_bit(band, hints); */
			d_step {		/* Q: return softmq_active_next(t->active[band], n, 0); */
				idx = 0;
				FIND_NEXT(idx);
				ok = 0
			}
		fi
	   :: else -> skip
	   fi;
	   if
	   :: idx >= NR || idx == first_busy -> break	/* Q: if (idx >= n || idx == busy_from) */
	   :: else -> skip
	   fi;

	   /* softmq_ring_pop() */
	   atomic {				/* H: void *item = smp_load_acquire(slot); */
		it = slot[idx * DEPTH + head[idx] % DEPTH];
		if
		:: it != 0 ->
			/* H: WRITE_ONCE(*slot, NULL); */
			/* H: smp_store_release(&r->head, (h + 1) & SOFTMQ_RING_POS_MASK); */
			slot[idx * DEPTH + head[idx] % DEPTH] = 0;
			DELIVER(it, idx, head[idx]);
			head[idx] = head[idx] + 1;
			cursor = idx		/* Q: t->cursor[band] = idx; */
		:: else -> skip
		fi
	   };
	   if
	   :: it == 0 ->
		/* softmq_ring_pop_listed(), softmq_ring_spilled(): consumer-private, then the stack */
		d_step {			/* H: if (r->spill_first && r->spill_first->pos == r->head) */
			SPILL_FIND(idx)
		};
		if
#ifndef MUT_SPILL_STALE_LIST
		:: it == 0 ->
#else
		/* mutant: a non-empty list is trusted, the stack not taken */
		:: it == 0 && !spill_listed ->
#endif
			atomic {		/* H: struct softmq_spill *s = xchg(&r->spilled, NULL); */
				t2 = 1;
				do
				:: t2 <= NITEMS ->
					if
					:: instk[t2] && itemring[t2] == idx ->
						instk[t2] = 0; inpriv[t2] = 1
					:: else -> skip
					fi;
					t2++
				:: else -> break
				od;
				t2 = 0
			};
			d_step { SPILL_FIND(idx) }	/* H: for (pass = 0; pass < 2; pass++) { */
		:: else -> skip
		fi;
		if
		:: it != 0 ->
			d_step {		/* H: *list = s->next; */
				inpriv[it] = 0;
				DELIVER(it, idx, head[idx]);
				head[idx] = head[idx] + 1;	/* H: smp_store_release(&r->head, (h + 1) & SOFTMQ_RING_POS_MASK); */
				cursor = idx
			}
		:: else -> skip
		fi;
		spill_listed = 0
	   :: else -> skip
	   fi;
	   if
	   :: it != 0 ->
#ifndef NO_POP_RETIRE
		d_step {			/* H: return !READ_ONCE(r->slot[r->head & r->cmask]) && */
			ok = (slot[idx * DEPTH + head[idx] % DEPTH] == 0);
			t2 = 1;
			do
			:: t2 <= NITEMS ->
				if
				:: (instk[t2] || inpriv[t2]) && itemring[t2] == idx -> ok = 0
				:: else -> skip
				fi;
				t2++
			:: else -> break
			od;
			t2 = 0
		};
		if
		:: ok -> pop_retire()		/* Q: softmq_ring_drained(q, t, band, idx, ring); */
		:: true -> ok = 0
		fi;
#endif
		break				/* Q: return skb; */
	   :: else -> skip
	   fi;

	   ring_retire();			/* softmq_ring_retire() */
	   d_step {
		if
		:: !ok ->
			busy = 1;		/* Q: q->busy = true; */
			if
			:: first_busy == NR -> first_busy = idx	/* Q: busy_from = idx; */
			:: else -> skip
			fi
		:: else -> skip
		fi;
		idx++;				/* Q: for (;; idx++, at_cursor = false) { */
		t2 = 0;
		ok = 0
	   }
	od;
	if
	:: it == 0 ->
		d_step {			/* Q: t->cursor[band] = idx < n ? idx : 0; */
			if :: idx < NR -> cursor = idx :: else -> cursor = 0 fi
		}
	:: else -> skip
	fi
	fi
}

/* softmq_dequeue().  Out: it. */
inline dequeue()
{
	need_retry = 1;				/* Q: bool need_retry = true; */
dq_retry:
	busy = 0;				/* Q: q->busy = false; */
	band_dequeue();
	if
	:: it == 0 ->
		if
#ifndef MUT_NO_CLEAR
		/* one READ_ONCE of the state word */
		:: need_retry && (missed || draining) ->	/* Q: if (need_retry && (READ_ONCE(sch->state) & QDISC_STATE_NON_EMPTY)) { */
			missed = 0;		/* Q: clear_bit(__QDISC_STATE_MISSED, &sch->state); */
			draining = 0;		/* Q: clear_bit(__QDISC_STATE_DRAINING, &sch->state); */
			/* Q: smp_mb__after_atomic(); */
			/* under SC: the re-scan's loads come after both clears
			 * (see the note at the top of this file) */
#ifndef MUT_NO_RESCAN
			need_retry = 0;
			goto dq_retry		/* Q: goto retry; */
#else
			need_retry = 0
#endif
#endif
		:: else -> skip
		fi;
		if
		:: busy -> draining = 1		/* Q: if (q->busy) set_bit(__QDISC_STATE_DRAINING, &sch->state); */
		:: else -> skip
		fi
	:: else -> skip
	fi;
	atomic { idx = 0; first_busy = 0; busy = 0; need_retry = 0 }
}

/*
 * qdisc_run() = qdisc_run_begin(); __qdisc_run(); qdisc_run_end() (K, 6.12).
 * __dev_xmit_skb() runs it after every enqueue, a dropped one too;
 * net_tx_action() runs it for a scheduled qdisc.
 */
inline qdisc_run()
{
	atomic {				/* K: if (spin_trylock(&qdisc->seqlock)) */
		if :: !locked -> locked = 1; got = 1 :: else -> got = 0 fi
	};
	if
	:: !got ->
		STALL;
		atomic { old = missed; missed = 1 };	/* K: if (test_and_set_bit(__QDISC_STATE_MISSED, &qdisc->state)) */
		if
		:: !old ->
#ifdef STALL_AFTER_MISSED
			STALL;
#endif
#ifndef MUT_NO_RETRYLOCK
			atomic {		/* K: return spin_trylock(&qdisc->seqlock); */
				if :: !locked -> locked = 1; got = 1 :: else -> got = 0 fi
			}
#else
			skip
#endif
		:: else -> skip
		fi
	:: else -> skip
	fi;
	if
	:: got ->
		quota = QUOTA;			/* K: int quota = READ_ONCE(net_hotdata.dev_tx_weight); */
		do				/* K: while (qdisc_restart(q, &packets, quota)) { */
		:: dequeue();
		   if
		   :: it == 0 -> break
		   :: else -> skip
		   fi;
		   quota--;
		   if
		   :: quota == 0 ->		/* K: if (quota <= 0) { */
			missed = 1;		/* K: set_bit(__QDISC_STATE_MISSED, &q->state); */
			break
		   :: else -> skip
		   fi
		od;
		atomic { it = 0; quota = 0; got = 0 };
		locked = 0;			/* K: spin_unlock(&qdisc->seqlock); */
		/* K: smp_mb();  under SC: MISSED is read after the unlock */
		atomic {			/* K: if (unlikely(test_bit(__QDISC_STATE_MISSED, */
			if
			:: missed -> sched = 1	/* K: __netif_schedule(qdisc); */
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
	atomic { got = 0; old = 0 }
}

proctype producer(byte p)
{
	byte i, r, t, pos, h, item;
	bit woke, fits;
	bit canstall = 1;
	CONSUMER_LOCALS;
	STALL_LOCALS;

	do
	:: i < K ->
#ifdef ANY_RING
		atomic {
			item = p * K + i + 1;
			select (r : 0 .. NR - 1)	/* Q: idx = softmq_ring_index(t, skb); */
		};
#else
		d_step { item = p * K + i + 1; r = RING_OF(p, i) };
#endif
		STALL;

		/* ---- softmq_ring_push() ---- */
		atomic {
			t = tail[r];		/* H: long t = atomic_long_read(&r->tail); */
			pos = t / 2		/* H: pos = softmq_ring_pos(t); */
		};
		do
		:: atomic {			/* H: if (atomic_long_try_cmpxchg(&r->tail, &t, */
			if
			:: tail[r] == t ->
				tail[r] = (pos + 1) * 2;
				accepted[item] = 1;
				itemring[item] = r;
				itempos[item] = pos;
				GHOST_CLAIM(r, pos);
				break
			:: else ->
				t = tail[r];	/* H: (*retries)++; */
				pos = t / 2
			fi
		   }
		od;
		woke = t % 2;			/* H: return (t & SOFTMQ_RING_IDLE) ? SOFTMQ_PUSH_WOKE : SOFTMQ_PUSH_OK; */
		STALL;	/* claimed, not published */

		/* softmq_ring_fits() */
		atomic {			/* H: if (((pos - smp_load_acquire(&r->head_snap)) & SOFTMQ_RING_POS_MASK) <= */
			fits = ((pos - head_snap[r] + 256) % 256 <= MASK)
		};
		if
		:: !fits ->
			atomic {		/* H: h = smp_load_acquire(&r->head); */
				h = head[r];
				fits = ((pos - h + 256) % 256 <= MASK)
			};
			d_step { head_snap[r] = h; h = 0 }	/* H: smp_store_release(&r->head_snap, h); */
		:: else -> skip
		fi;
		STALL;	/* looked, not published */
		if
		:: fits ->
			d_step {		/* H: smp_store_release(&r->slot[pos & r->mask], item); */
				assert(slot[r * DEPTH + pos % DEPTH] == 0);
				slot[r * DEPTH + pos % DEPTH] = item
			}
		:: else ->
			/* softmq_ring_spill(): an idle ring's first position fits */
			assert(!woke);
			d_step {		/* H: } while (!try_cmpxchg(&r->spilled, &first, s)); */
				spos[item] = pos;
				instk[item] = 1
			}
		fi;
		if
		:: woke ->
			STALL;	/* WOKE, not yet marked */
			mark[r] = 1;	/* H: set_bit(idx, map); */
#if defined(SUMMARY) && !defined(MUT_SUMMARY_AFTER_HINT)
			STALL;	/* marked, its word not yet named */
			if		/* H: if (!test_bit(BIT_WORD(idx), summary)) */
			:: !summ[WORD_OF(r)] -> summ[WORD_OF(r)] = 1	/* H: set_bit(BIT_WORD(idx), summary); */
			:: else -> skip
			fi;
#endif
			STALL;	/* marked, band not yet noted */
			if		/* H: if (!test_bit(band, hints)) */
			:: !hint -> hint = 1	/* H: set_bit(band, hints); */
			:: else -> skip
			fi
#if defined(SUMMARY) && defined(MUT_SUMMARY_AFTER_HINT)
			/* mutant: the word named after the band's hint */
			;
			if
			:: !summ[WORD_OF(r)] -> summ[WORD_OF(r)] = 1
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi;
		atomic { t = 0; pos = 0; woke = 0; fits = 0; item = 0; r = 0 };
		STALL;
		qdisc_run();
		atomic { GHOST_DONE; i++ }
	:: else -> break
	od;
	ndone++;
	goto end_out;
stop:
end_stop:
	false;
end_out:
	skip
}

/* net_tx_action() for this qdisc. */
active proctype softirq()
{
	byte p = 0;
	bit canstall = 0;
	CONSUMER_LOCALS;
	STALL_LOCALS;

end_wait:
	do
	:: atomic {
		sched ->
		sched = 0;		/* K: clear_bit(__QDISC_STATE_SCHED, &q->state); */
		in_softirq = 1;
		/*
		 * P5.  Once the producers are done, MISSED can only be set by a
		 * quota break (at most NITEMS/QUOTA times) or be left over from
		 * before (once): a livelock, which keeps rescheduling without
		 * end, trips this.  Not counted earlier: the count would split
		 * states.
		 */
		if
		:: ndone + nstalled == NP -> nsched++; assert(nsched <= MAXSCHED)
		:: else -> skip
		fi
	   };
	   qdisc_run();			/* K: qdisc_run(q); */
	   in_softirq = 0
	od;
stop:
	false
}

#ifdef CONTROL_LOCK
/*
 * softmq_change() (RTNL, process context): softmq_reap() and the table swap
 * take the consumer lock, NCTL times in all, and leave it through
 * softmq_consumer_unlock().  What they do under the lock (q->spent,
 * q->draining, the table pointer) touches no ring, mark, hint or state bit
 * the model has, so here the lock is only held.  A producer's or the
 * softirq's qdisc_run_begin() that loses the trylock to it sets MISSED and
 * returns, as it would against a consumer.
 */
proctype control()
{
	byte n;

	do
	:: n < NCTL ->
		atomic { !locked -> locked = 1 };	/* Q: spin_lock_bh(lock); */
		locked = 0;			/* Q: spin_unlock_bh(lock); */
#ifndef MUT_CONTROL_NO_MISSED
		/* Q: if (!(sch->flags & TCQ_F_NOLOCK)) */
		/* (NOLOCK: the lock is the seqlock; the model's case) */
		/* Q: smp_mb(); */
		/* under SC: MISSED is read after the unlock, as in run_end */
		atomic {			/* Q: if (test_bit(__QDISC_STATE_MISSED, &sch->state)) */
			if
			:: missed -> sched = 1	/* Q: __netif_schedule(sch); */
			:: else -> skip
			fi
		};
#else
		/* mutant: a plain spin_unlock_bh(), MISSED not looked at */
#endif
		n++
	:: else -> break
	od;
	ctldone = 1
}
#endif

/* P3, P4: checked once everything has come to rest. */
active proctype monitor()
{
	byte i;

	atomic {
		(ndone + nstalled == NP && ctldone && !sched && !in_softirq &&
		 !locked) ->
		do
		:: i < NITEMS ->
			i++;
			if
			:: accepted[i] && !stalled[(i - 1) / K] &&
			   itempos[i] < blocked_from[itemring[i]] ->
				assert(delivered[i])
			:: else -> skip
			fi
		:: else -> break
		od;
		if
#ifndef NO_CLEAN_END
		:: nstalled == 0 ->
			i = 0;
			do
			:: i < NR ->
				assert(head[i] == tail[i] / 2);	/* empty */
				assert(tail[i] % 2 == 1);	/* idle */
				assert(!mark[i]);		/* unmarked */
				/*
				 * -DSUMMARY: a word may stay named with no
				 * mark: a producer that read its bit clear
				 * before the consumer served and retired its
				 * ring sets it after.  A look reads that word
				 * for nothing until the next retire in it.
				 */
				i++
			:: else -> break
			od;
			assert(!missed && !draining)
#endif
		:: else -> skip
		fi
	}
}

init
{
	byte i;

	atomic {
		do
		:: i < NR ->
			tail[i] = 1;	/* H: atomic_long_set(&r->tail, SOFTMQ_RING_IDLE); */
			blocked_from[i] = NOPOS;
			i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < NP -> run producer(i); i++
		:: else -> break
		od;
#ifdef CONTROL_LOCK
		run control();
#else
		ctldone = 1;
#endif
		i = 0
	}
}
