// SPDX-License-Identifier: GPL-2.0
/*
 * line-share: a QEMU TCG plugin that follows, per 64-byte line of guest
 * kernel memory, which vCPUs write and read it, for `make bench
 * MODE=sharing` (cache lines written by more than one CPU, per packet).
 *
 *   qemu-system-x86_64 -accel tcg,thread=multi -smp N ...
 *       -plugin line-share.so,out=DIR,mark=0xADDR[,lines=LOG2]
 *
 * Every load and store of a guest kernel instruction to a kernel address
 * (both in the upper half: bit 63 set) calls back here with the vCPU's
 * index.  The upper half, not 0xffff800000000000 and up: QEMU's `-cpu max`
 * has LA57, so the guest kernel runs 5-level paging and its direct map
 * (slab, per-CPU), vmalloc area and stacks are at 0xff11... and 0xffa0...
 * (with 4-level paging 0xffff888... and 0xffffc90...).  Until 2026-12-02
 * the test was `>= 0xffff800000000000`, which kept only the kernel image,
 * the modules, the fixmap and cpu_entry_area: 44-85 loads and 2-4 stores
 * a packet of the ~1 500-2 600 accesses the window has a packet (6.12, 4
 * vCPUs), none of them to an skb, a qdisc or a stack.  Per line
 * (guest virtual address >> 6, in an open-addressed table of 2^LOG2 lines,
 * default 2^20) the plugin keeps the last writer, the set of vCPUs that
 * wrote it and that read it in the window, and the set that holds a current
 * copy (a store leaves only the writer; a load adds the reader).  It counts:
 *
 *   xstore  a store to a line last written by another vCPU (an ownership
 *           transfer);
 *   xload   a load of a line another vCPU wrote since this vCPU last read
 *           it (its copy was invalidated: a transfer to the reader);
 *   rmw     an xload followed by the same instruction's store to the same
 *           line on the same vCPU (a locked add, a cmpxchg, `incq (mem)`):
 *           one transfer on hardware, counted as one xload and one xstore
 *           here, so transfers = xstores + xloads - rmw;
 *   pstore  a store to a line that, with it, has been written by three
 *           or more vCPUs in the window (producer-shared: more than the
 *           one-producer/one-consumer pair any queue has).  Counted at the
 *           store, so a line's first stores before its third writer are not;
 *           the line dump has the exact per-line figure (all its stores, the
 *           final writer set).
 *
 * Each counter is kept per line and per instruction (charged to the
 * instruction doing the access; bench/report_sharing.py maps it to a
 * function with the guest's kallsyms).
 *
 * The window: each execution of the TB at MARK (the drop_caches handler,
 * as for bench/insn-profile.c) toggles it.  An even mark (0, 2, ...) clears
 * the table and opens the window; the next, odd mark closes it and writes
 * DIR/share-NNNN.txt, NNNN that mark's index, which is what bench/guest.sh
 * --profile records as the run's profile_phase.  Outside the window the
 * callbacks return at once.  The dump:
 *
 *   V vcpu loads stores insns uloads ustores
 *                                          per vCPU: accesses to kernel memory,
 *                                          kernel instructions executed, and
 *                                          kernel instructions' accesses below
 *                                          the kernel half (user memory): the
 *                                          instrument's self-check (about 0.3-0.5
 *                                          kernel accesses an instruction)
 *   I vaddr xstores xloads rmw pstores     per instruction with any event
 *   L line writers readers stores loads xstores xloads rmw pstores ids...
 *                                          per line written by >= 2 vCPUs or
 *                                          with any event; masks in hex; ids:
 *                                          up to 6 instructions that stored to
 *                                          it or read it across vCPUs, first
 *                                          seen first, each vaddr:writers:stores
 *                                          (the vCPUs whose stores to the line
 *                                          it made, in hex, and how many: the
 *                                          producer side's own writer set)
 *   X overflow N                           lines not tracked (table full)
 *
 * Threads: QEMU runs one host thread per vCPU (-accel tcg,thread=multi), so
 * callbacks run concurrently.  Each line has a spin lock word (its updates
 * are a few instructions); per-instruction counters are atomic adds; per-vCPU
 * totals are owned by that vCPU's thread.  Translation (rare) takes a mutex.
 *
 * TCG is not a cache model: a vCPU runs a whole translation block (often
 * many) before another gets the host CPU, and two host cores interleave 4-16
 * vCPUs coarsely, so a line bounced between CPUs on hardware may be touched
 * by one vCPU many times in a row here.  The counts are lower bounds on the
 * transfers; which lines are shared, and by whom, is the structural result.
 *
 * The plugin ABI is declared here (Debian does not package qemu-plugin.h);
 * version 1 is Debian 12's QEMU 7.2.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
	void (*cb)(unsigned int vcpu, void *udata),
	enum qemu_plugin_cb_flags flags, void *udata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
	void (*cb)(unsigned int vcpu, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata),
	enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
	void *udata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, void *udata), void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

/* The kernel half (bit 63), whatever the paging depth: see above. */
#define KERNEL_ADDR(va)	((int64_t)(va) < 0)
#define MAX_VCPUS	64
#define NIDS		6
#define IBUCKETS	(1u << 18)
#define PROBES		128

#define RLX		__ATOMIC_RELAXED

/* One per instrumented kernel instruction (by vaddr: retranslations share). */
struct insn {
	uint64_t vaddr;
	uint64_t xstores, xloads, rmw, pstores;	/* atomic adds */
	struct insn *next, *all;
};

struct line {
	uint64_t tag;			/* (vaddr >> 6) + 1; 0: empty */
	uint32_t lock;
	uint8_t owner;			/* last writer + 1; 0: none in the window */
	uint8_t nids;
	uint64_t writers, readers, valid;	/* vCPU masks */
	uint32_t stores, loads, xstores, xloads, rmw, pstores;
	struct insn *ids[NIDS];
	uint64_t idwriters[NIDS];	/* per id: the vCPUs whose stores it made */
	uint32_t idstores[NIDS];	/* per id: its stores to this line */
};

/* Per vCPU, written by its own thread only. */
struct vcpu {
	uint64_t loads, stores, insns, uloads, ustores;
	uint64_t pend_tag;		/* the line of this vCPU's last xload ... */
	struct insn *pend_insn;		/* ... and its instruction */
	char pad[8];
};

static struct insn *ibuckets[IBUCKETS], *insns;
static pthread_mutex_t trans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct line *table;
static uint64_t tmask, tmax, tused, overflow;
static struct vcpu vcpus[MAX_VCPUS];
static int active;
static unsigned int nmark;
static uint64_t mark;
static const char *outdir = ".";

static struct insn *insn_get(uint64_t vaddr)
{
	uint32_t h = (uint32_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 46) & (IBUCKETS - 1);
	struct insn *in;

	for (in = ibuckets[h]; in; in = in->next)
		if (in->vaddr == vaddr)
			return in;
	in = calloc(1, sizeof(*in));
	if (!in) {
		perror("line-share");
		exit(1);
	}
	in->vaddr = vaddr;
	in->next = ibuckets[h];
	ibuckets[h] = in;
	in->all = insns;
	insns = in;
	return in;
}

static struct line *line_get(uint64_t tag)
{
	uint64_t h = (tag * 0x9e3779b97f4a7c15ULL) >> 20, i, cur;
	struct line *l;

	for (i = 0; i < PROBES; i++) {
		l = &table[(h + i) & tmask];
		cur = __atomic_load_n(&l->tag, __ATOMIC_ACQUIRE);
		if (cur == tag)
			return l;
		if (cur)
			continue;
		if (__atomic_load_n(&tused, RLX) >= tmax)
			return NULL;
		if (__atomic_compare_exchange_n(&l->tag, &cur, tag, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&tused, 1, RLX);
			return l;
		}
		if (cur == tag)		/* another vCPU inserted it meanwhile */
			return l;
	}
	return NULL;
}

static void line_lock(struct line *l)
{
	while (__atomic_exchange_n(&l->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->lock, RLX))
			__builtin_ia32_pause();
}

static void line_unlock(struct line *l)
{
	__atomic_store_n(&l->lock, 0, __ATOMIC_RELEASE);
}

static int line_note(struct line *l, struct insn *in)
{
	int i;

	for (i = 0; i < l->nids; i++)
		if (l->ids[i] == in)
			return i;
	if (l->nids < NIDS) {
		l->ids[l->nids] = in;
		return l->nids++;
	}
	return -1;
}

static void mem_cb(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		   void *udata)
{
	struct insn *in = udata;
	struct vcpu *v = &vcpus[vcpu & (MAX_VCPUS - 1)];
	uint64_t bit = 1ULL << (vcpu & (MAX_VCPUS - 1)), tag = (vaddr >> 6) + 1;
	bool xs = false, xl = false, ps = false, rmw = false;
	struct line *l;
	int k;

	if (!__atomic_load_n(&active, RLX))
		return;
	if (!KERNEL_ADDR(vaddr)) {
		if (qemu_plugin_mem_is_store(info))
			v->ustores++;
		else
			v->uloads++;
		return;
	}
	l = line_get(tag);
	if (!l) {
		__atomic_fetch_add(&overflow, 1, RLX);
		return;
	}
	line_lock(l);
	if (qemu_plugin_mem_is_store(info)) {
		v->stores++;
		l->stores++;
		if (l->owner && l->owner != (uint8_t)(vcpu + 1)) {
			xs = true;
			l->xstores++;
			/* the store half of a read-modify-write that already
			 * counted its load as the transfer */
			if (v->pend_tag == tag && v->pend_insn == in) {
				rmw = true;
				l->rmw++;
			}
		}
		l->owner = (uint8_t)(vcpu + 1);
		l->writers |= bit;
		l->valid = bit;
		if (__builtin_popcountll(l->writers) >= 3) {
			ps = true;
			l->pstores++;
		}
		k = line_note(l, in);
		if (k >= 0) {
			l->idwriters[k] |= bit;
			l->idstores[k]++;
		}
	} else {
		v->loads++;
		l->loads++;
		l->readers |= bit;
		if (l->owner && !(l->valid & bit)) {
			xl = true;
			l->xloads++;
			line_note(l, in);
		}
		l->valid |= bit;
	}
	line_unlock(l);
	v->pend_tag = xl ? tag : 0;
	v->pend_insn = xl ? in : NULL;
	if (xs)
		__atomic_fetch_add(&in->xstores, 1, RLX);
	if (xl)
		__atomic_fetch_add(&in->xloads, 1, RLX);
	if (rmw)
		__atomic_fetch_add(&in->rmw, 1, RLX);
	if (ps)
		__atomic_fetch_add(&in->pstores, 1, RLX);
}

static void dump(unsigned int idx)
{
	char path[4096];
	struct insn *in;
	uint64_t i;
	FILE *f;
	int k;

	snprintf(path, sizeof(path), "%s/share-%04u.txt", outdir, idx);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	for (k = 0; k < MAX_VCPUS; k++)
		if (vcpus[k].loads || vcpus[k].stores || vcpus[k].insns)
			fprintf(f, "V %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
				k, vcpus[k].loads, vcpus[k].stores, vcpus[k].insns,
				vcpus[k].uloads, vcpus[k].ustores);
	pthread_mutex_lock(&trans_lock);
	for (in = insns; in; in = in->all)
		if (in->xstores || in->xloads || in->pstores)
			fprintf(f, "I %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
				in->vaddr, in->xstores, in->xloads, in->rmw, in->pstores);
	pthread_mutex_unlock(&trans_lock);
	for (i = 0; i <= tmask; i++) {
		struct line *l = &table[i];

		if (!l->tag || (!l->xstores && !l->xloads &&
				__builtin_popcountll(l->writers) < 2))
			continue;
		fprintf(f, "L %" PRIx64 " %" PRIx64 " %" PRIx64 " %u %u %u %u %u %u",
			(l->tag - 1) << 6, l->writers, l->readers, l->stores,
			l->loads, l->xstores, l->xloads, l->rmw, l->pstores);
		for (k = 0; k < l->nids; k++)
			fprintf(f, " %" PRIx64 ":%" PRIx64 ":%u", l->ids[k]->vaddr,
				l->idwriters[k], l->idstores[k]);
		fputc('\n', f);
	}
	fprintf(f, "X overflow %" PRIu64 "\n", overflow);
	fclose(f);
}

/* Called with the window closed: the other vCPUs' callbacks return early. */
static void reset(void)
{
	struct insn *in;

	memset(table, 0, (tmask + 1) * sizeof(*table));
	tused = 0;
	overflow = 0;
	memset(vcpus, 0, sizeof(vcpus));
	pthread_mutex_lock(&trans_lock);
	for (in = insns; in; in = in->all)
		in->xstores = in->xloads = in->rmw = in->pstores = 0;
	pthread_mutex_unlock(&trans_lock);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	unsigned int idx = nmark++;

	(void)vcpu;
	(void)udata;
	if (!(idx & 1)) {
		reset();
		__atomic_store_n(&active, 1, __ATOMIC_SEQ_CST);
	} else {
		__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
		dump(idx);
	}
}

/* Each kernel TB: its instruction count, for the V line's self-check. */
static void tb_exec(unsigned int vcpu, void *udata)
{
	if (__atomic_load_n(&active, RLX))
		vcpus[vcpu & (MAX_VCPUS - 1)].insns += (uintptr_t)udata;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	size_t n, i;

	(void)id;
	if (!KERNEL_ADDR(vaddr))
		return;
	n = qemu_plugin_tb_n_insns(tb);
	if (vaddr == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, mark_exec,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
	else
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)n);
	pthread_mutex_lock(&trans_lock);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, i);

		qemu_plugin_register_vcpu_mem_cb(qi, mem_cb, QEMU_PLUGIN_CB_NO_REGS,
			QEMU_PLUGIN_MEM_RW, insn_get(qemu_plugin_insn_vaddr(qi)));
	}
	pthread_mutex_unlock(&trans_lock);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	if (active) {
		active = 0;
		dump(nmark);
	}
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
			int argc, char **argv)
{
	unsigned int log2 = 20;
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			outdir = argv[i] + 4;
		else if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 0);
		else if (!strncmp(argv[i], "lines=", 6))
			log2 = (unsigned int)strtoul(argv[i] + 6, NULL, 0);
		else {
			fprintf(stderr, "line-share: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!mark || log2 < 10 || log2 > 26) {
		fprintf(stderr, "line-share: mark=ADDR is required, lines=10..26\n");
		return -1;
	}
	tmask = (1ULL << log2) - 1;
	tmax = (tmask + 1) / 4 * 3;	/* keep probe chains short */
	table = calloc(tmask + 1, sizeof(*table));
	if (!table) {
		perror("line-share");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
