/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rwc.pml - the producer's softmq_ring_seen() barrier under a weak,
 * non-multi-copy-atomic memory model (the RWC pattern).  softmq.pml checks
 * the protocol under sequential consistency, where this case cannot occur.
 *
 * Who is modelled (three CPUs, two words)
 *   mark  the ring's bit in t->active[band] (one bit of its own word here)
 *   hint  the band's bit in t->band_hints
 *   W  the waker: softmq_enqueue() after a push that returned
 *      SOFTMQ_PUSH_WOKE: set_bit() (the mark), then softmq_band_note().
 *   C  the consumer in softmq_band_dequeue(): it read the hint set
 *      (test_bit() in softmq_table_dequeue()) before the start, scans the marks, and finding none
 *      runs softmq_band_clear_hint(): clear the hint, barrier, scan again,
 *      set the hint again if the rescan finds a mark.
 *   P  the producer P2 whose push into the same ring returned
 *      SOFTMQ_PUSH_OK (W's push made the ring non-idle; W may not have
 *      marked it or noted the band yet): softmq_ring_seen(), and if that
 *      is false its own set_bit() + softmq_band_note().
 *   Initially mark = 0 (the ring was idle and unmarked) and hint = 1 (C
 *   has read it set).  The tail, the slots and MISSED/DRAINING are left
 *   out: softmq.pml has them; P2's push reading W's tail orders nothing
 *   about the mark, so P may find the mark set or not.
 *
 * Memory model (explicit: the words below are the state of the hardware)
 *   Each location has a coherence order: the order in which stores to it
 *   are performed (committed) by their CPUs; val[] holds them, initial
 *   value first.  Each CPU c has a view of each location: the latest store
 *   that has reached c.  A store is performed at once for its own CPU (it
 *   reads its own writes, store-buffer forwarding) and reaches each other
 *   CPU at a nondeterministic later time, independently per (location,
 *   reader), in coherence order (the "memory" process: no CPU ever reads a
 *   value older than one it has seen, stores may be seen in different
 *   orders by different CPUs: not multi-copy atomic, as on POWER).  A load
 *   reads the store its view holds.  Loads and stores of a CPU happen in
 *   program order (no speculation; the roles have no two loads in a row
 *   without a barrier between them except the mutants', where load-load
 *   reordering would only add outcomes, and C's look at the summary and
 *   then at the word it names, which the code orders by an address
 *   dependency).  smp_mb() (and
 *   smp_mb__after_atomic() after a set_bit()/clear_bit(), which is one on
 *   these CPUs) by CPU c completes only once every store c has performed
 *   or read (per location, the latest such) has reached every CPU: the
 *   model makes it reach them at that step, which is one of the
 *   interleavings of waiting for it.  That is A-cumulativity as in the
 *   LKMM (stores read before the fence); POWER's sync also carries stores
 *   that reached c without c reading them, which only forbids more.
 *   set_bit()/clear_bit() are plain stores here: each word has only this
 *   bit.  -DMCA: a store reaches every other CPU at the same time (memory
 *   advances one store at a time for all readers, each location on its own:
 *   x86-TSO's outcomes are a subset);
 *   -DSC: a store reaches every CPU as it is performed.
 *
 * Property (assertion at the end of every execution, exhaustive)
 *   P2's packet is visible to the consumer.  If C cleared the hint (its
 *   rescan found no mark: the next dequeue skips the band; DRAINING stays
 *   clear, the qdisc looks empty and P2's flow's next packet may take the
 *   bypass path ahead of this one), then before returning P2 must have
 *   read or written a hint store coherence-after C's clear: its own note
 *   (it read the clear), W's note, or C's own re-set.  P2's later
 *   fully ordered steps (its qdisc_run's trylock or test_and_set_bit of
 *   MISSED) carry what it has read to the next consumer.  Equivalently:
 *   either C's scan or rescan saw a mark, or P2 re-notes / sees the hint
 *   clear, or W's note re-set the hint (and P2 saw it) before P2 concluded.
 *   W may be anywhere when the check runs: before its mark, between mark
 *   and note (stopped by an IRQ, vCPU preemption, PREEMPT_RT), or done.
 *
 * -DSUMMARY: the bitmap has a summary word (softmq_active_summary(), a
 *   bitmap of 2..BITS_PER_LONG words), one more location, "summ", the
 *   bit of the ring's word, initially 0.  W names the word after its mark
 *   (softmq_active_mark(): barrier, read, set if clear) and before its
 *   note; C's scans read the summary first and the mark only if it names
 *   the word; softmq_ring_seen() wants the word named as well as the ring
 *   marked, and its helper path marks and names.  The stop that matters is
 *   W's between its mark and its summary store: a mark C's scans do not
 *   read.  MUT_SEEN_NO_SUMMARY, softmq_ring_seen() without the summary
 *   test, trusts that mark and the hint, and must be reported, under
 *   sequential consistency too (-DSC).  -DSUMMARY_DROP: the word starts
 *   named for another ring k of it, and C first drops the bit after
 *   retiring k (softmq_active_summary_drop(): clear, barrier, read the
 *   word again): the bit P reads may be k's.  Mutants, each reported
 *   under the weak model: MUT_SEEN_NO_SUMMARY_MB (no barrier between
 *   softmq_ring_seen()'s mark and summary reads: P trusts k's bit while
 *   C's drop has not seen W's mark), MUT_NO_MARK_MB (none between W's
 *   mark and its summary read), MUT_NO_DROP_MB (none in the drop).
 * Mutant (make check requires spin to report it)
 *   MUT_NO_SEEN_MB  softmq_ring_seen() without its smp_mb(): P reads
 *                   mark = 1 (W's store has reached P but not C), then
 *                   hint = 1 (C's clear has not reached P yet) and trusts
 *                   it; C clears the hint, barrier, rescans and finds the
 *                   mark 0.  The RWC outcome: allowed on POWER (and on
 *                   arm64 through load-load reordering), forbidden once P
 *                   has a full barrier: its smp_mb() pushes W's mark to C
 *                   before P reads the hint, so C's rescan after its own
 *                   barrier sees the mark, or C's clear (pushed out by C's
 *                   barrier) reached P before P's hint read.
 *   MUT_NO_CLEAR_HINT_MB softmq_band_clear_hint() without its barrier (a check of
 *                   the model: the pairing barrier on C's side matters too)
 *   Why SC hides it: P's reads of mark = 1 and of the old hint come after
 *   W's mark store and before C's clear in the single order, so C's rescan
 *   (after its clear) reads mark = 1.  The same holds for MCA: the mark P
 *   read has reached C too.  make check runs the mutant under -DMCA as
 *   well, to keep that claim (and the model's weakness) honest.
 *
 * Step granularity and the line map (check-model-map.py checks this file
 * too): one Promela step = one access by one CPU, or one propagation of one
 * store to one CPU.  H:nnn include/softmq_ring.h line nnn, H: text only
 * (text that occurs more than once), Q: src/sch_softmq.c.
 *
 * Size: 17k states (MCA 8k, SC 5k; -DSUMMARY 72k, MCA 33k); pan takes
 * milliseconds.
 */

#define NCPU	3
#define W	0		/* the waker */
#define C	1		/* the consumer */
#define P	2		/* P2, the producer that got SOFTMQ_PUSH_OK */
#define NLOC	3
#define MARK	0		/* (Q) t->active[band], the ring's bit */
#define HINT	1		/* (Q) t->band_hints, the band's bit */
#define SUMM	2		/* H: return (unsigned long *)map - 1; */
#define MAXST	6		/* stores per location, the initial one included */

/* ---- the memory ------------------------------------------------------------ */
byte nst[NLOC];			/* stores performed so far, per location */
bit  val[NLOC * MAXST];		/* their values, in coherence order */
byte view[NCPU * NLOC];		/* the latest store that has reached a CPU */
byte obs[NCPU * NLOC];		/* the latest store a CPU has read or written */
#define V(c, l)	view[(c) * NLOC + (l)]
#define O(c, l)	obs[(c) * NLOC + (l)]

/* ---- ghost state for the property ------------------------------------------- */
bit  csaw;			/* C's scan or rescan found the mark */
bit  cdone;
byte cclear;			/* coherence index of C's clear of the hint */
bit  pdone;
byte phint;			/* the latest hint store P has read or written */

#ifdef SC
#define STORE_ALL(l)	V(0, l) = nst[l]; V(1, l) = nst[l]; V(2, l) = nst[l]
#else
#define STORE_ALL(l)	skip
#endif

/* CPU c performs a store of v to l: the next in l's coherence order. */
inline store(c, l, v)
{
	d_step {
		assert(nst[l] < MAXST);
		val[l * MAXST + nst[l]] = v;
		V(c, l) = nst[l];
		O(c, l) = nst[l];
		STORE_ALL(l);
		nst[l]++
	}
}

/* CPU c loads l: the store its view holds. */
inline load(c, l, dst)
{
	d_step {
		dst = val[l * MAXST + V(c, l)];
		O(c, l) = V(c, l)
	}
}

/* smp_mb() by CPU c: what c wrote or read has reached every CPU. */
#define PUSH(c, y, l)	if :: V(y, l) < O(c, l) -> V(y, l) = O(c, l) :: else -> skip fi
inline mb(c)
{
	d_step {
		PUSH(c, 0, MARK); PUSH(c, 1, MARK); PUSH(c, 2, MARK);
		PUSH(c, 0, HINT); PUSH(c, 1, HINT); PUSH(c, 2, HINT);
		PUSH(c, 0, SUMM); PUSH(c, 1, SUMM); PUSH(c, 2, SUMM)
	}
}

/* Propagation: the next store of l reaches CPU c (or, MCA, every CPU). */
#ifndef MCA
#define PROP(c, l)	:: d_step { V(c, l) < nst[l] - 1 -> V(c, l)++ }
#define PROPS		PROP(0, MARK) PROP(1, MARK) PROP(2, MARK) \
			PROP(0, HINT) PROP(1, HINT) PROP(2, HINT) \
			PROP(0, SUMM) PROP(1, SUMM) PROP(2, SUMM)
#else
#define MIN3(l)	(V(0, l) < V(1, l) -> \
			 (V(0, l) < V(2, l) -> V(0, l) : V(2, l)) : \
			 (V(1, l) < V(2, l) -> V(1, l) : V(2, l)))
#define RAISE(c, l, m)	if :: V(c, l) < m -> V(c, l) = m :: else -> skip fi
#define PROP(l)		:: d_step { MIN3(l) < nst[l] - 1 -> \
				m = MIN3(l) + 1; \
				RAISE(0, l, m); RAISE(1, l, m); RAISE(2, l, m); m = 0 }
#define PROPS		PROP(MARK) PROP(HINT) PROP(SUMM)
#endif

proctype memory()
{
	byte m;

end_prop:
	do
	PROPS
	od
}

/*
 * CPU c names the ring's word after its mark: softmq_active_mark()'s
 * second half.  Without -DSUMMARY, nothing.
 */
inline name_word(c, s)
{
#ifdef SUMMARY
#ifndef MUT_NO_MARK_MB
	mb(c);				/* H: smp_mb__after_atomic(); */
#endif
	load(c, SUMM, s);		/* H: if (!test_bit(BIT_WORD(idx), summary)) */
	if
	:: !s -> store(c, SUMM, 1)	/* H: set_bit(BIT_WORD(idx), summary); */
	:: else -> skip
	fi
#else
	skip
#endif
}

/* CPU c's look at the ring's mark: with -DSUMMARY, only if its word is named. */
inline look(c, m)
{
#ifdef SUMMARY
	load(c, SUMM, m);		/* H: s = READ_ONCE(*softmq_active_summary(map)); */
	if
	:: m -> load(c, MARK, m)	/* H: bits = READ_ONCE(map[w]); */
	:: else -> skip
	fi
#else
	load(c, MARK, m)
#endif
}

/* W: softmq_enqueue() after SOFTMQ_PUSH_WOKE. */
proctype waker()
{
	bit h, s;

	store(W, MARK, 1);		/* H: set_bit(idx, map); */
	name_word(W, s);
	/* softmq_band_note() */
	mb(W);				/* H:766 smp_mb__after_atomic(); */
	load(W, HINT, h);		/* H:767 if (!test_bit(band, hints)) */
	if
	:: !h -> store(W, HINT, 1)	/* H: set_bit(band, hints); */
	:: else -> skip
	fi
}

/* C: softmq_band_dequeue() of this band, the hint read set before. */
proctype consumer()
{
	bit m;

#ifdef SUMMARY_DROP
	/*
	 * softmq_active_summary_drop() after C retired ring k, the other ring
	 * of the word, whose mark named it: the word holds only W's ring now.
	 */
	load(C, MARK, m);		/* H: if (!softmq_active_summed(n) || READ_ONCE(map[w])) */
	if
	:: !m ->
		store(C, SUMM, 0);	/* H: clear_bit(w, summary); */
#ifndef MUT_NO_DROP_MB
		mb(C);			/* H: smp_mb__after_atomic(); */
#endif
		load(C, MARK, m);	/* H: if (READ_ONCE(map[w])) */
		if
		:: m -> store(C, SUMM, 1)	/* H: set_bit(w, summary); */
		:: else -> skip
		fi
	:: else -> skip
	fi;
#endif
	look(C, m);			/* Q: idx = softmq_active_next_wrap(t->active[band], n, from); */
	if
	:: m -> csaw = 1		/* the ring is found: popped, retired by softmq.pml's rules */
	:: else ->
		/* Q: if (softmq_band_clear_hint(&t->band_hints, band, t->active[band], n)) */
		d_step { cclear = nst[HINT] };
		store(C, HINT, 0);	/* H:816 clear_bit(band, hints); */
#ifndef MUT_NO_CLEAR_HINT_MB
		mb(C);			/* H:818 smp_mb__after_atomic(); */
#endif
		look(C, m);		/* H:819 if (softmq_active_next(map, n, 0) >= n) */
		if
		:: m ->
			store(C, HINT, 1);	/* H:821 set_bit(band, hints); */
			csaw = 1
		:: else -> skip		/* H:820 return true; */
		fi
	fi;
	cdone = 1
}

/* P2: softmq_enqueue() after SOFTMQ_PUSH_OK. */
proctype producer()
{
	bit m, h, s;

	/* Q: } else if (unlikely(!softmq_ring_seen(t->active[band], */
	load(P, MARK, m);		/* H:875 if (!test_bit(idx, map)) */
#if defined(SUMMARY) && !defined(MUT_SEEN_NO_SUMMARY)
	if
	:: m ->
#ifndef MUT_SEEN_NO_SUMMARY_MB
		mb(P);			/* H: smp_mb(); */
#endif
		load(P, SUMM, m)	/* H: if (!test_bit(BIT_WORD(idx), softmq_active_summary(map))) */
	:: else -> skip
	fi;
#endif
	if
	:: m ->
#ifndef MUT_NO_SEEN_MB
		mb(P);			/* H:890 smp_mb(); */
#endif
		load(P, HINT, h)	/* H:891 return test_bit(band, hints); */
	:: else -> h = 0		/* H:876 return false; */
	fi;
	if
	:: !h ->
		/* the helper: mark, name and note ourselves */
		store(P, MARK, 1);	/* H: set_bit(idx, map); */
		name_word(P, s);
		/* Q: softmq_band_note(&t->band_hints, band); */
		mb(P);			/* H:766 smp_mb__after_atomic(); */
		load(P, HINT, h);	/* H:767 if (!test_bit(band, hints)) */
		if
		:: !h -> store(P, HINT, 1)	/* H: set_bit(band, hints); */
		:: else -> skip
		fi
	:: else -> skip
	fi;
	d_step { phint = O(P, HINT); pdone = 1 }	/* Q: return NET_XMIT_SUCCESS; */
}

/* The property, once C and P are through (W anywhere). */
proctype monitor()
{
	atomic {
		cdone && pdone ->
		assert(csaw || phint > cclear)
	}
}

init
{
	atomic {
		/* store 0 of each location, mark 0 and hint 1; every view on it */
		val[MARK * MAXST] = 0;
		val[HINT * MAXST] = 1;
#ifdef SUMMARY_DROP
		val[SUMM * MAXST] = 1;	/* named for ring k */
#else
		val[SUMM * MAXST] = 0;
#endif
		nst[MARK] = 1;
		nst[HINT] = 1;
		nst[SUMM] = 1;
		run memory();
		run waker();
		run consumer();
		run producer();
		run monitor()
	}
}
