// SPDX-License-Identifier: GPL-2.0
/*
 * insn-profile: a QEMU TCG plugin that counts the guest kernel's executed
 * instructions per translation block, for `make bench MODE=profile`.
 *
 *   qemu-system-x86_64 ... -plugin insn-profile.so,out=DIR,mark=0xADDR
 *
 * Every execution of a kernel TB (vaddr in the upper half) adds its
 * instruction count to the TB's entry.  Each time the guest executes the
 * TB at MARK (the entry of a kernel function the guest calls on purpose:
 * bench/guest.sh writes 4 to /proc/sys/vm/drop_caches, which does nothing
 * but run its handler), what each block ran since the previous mark is
 * written to DIR/phase-NNNN.txt as "vaddr instructions executions" lines.
 * The guest logs what each phase was; bench/report_profile.py maps vaddrs
 * to functions (System.map with nokaslr, /proc/kallsyms for modules).
 *
 * The plugin ABI is declared here (QEMU's qemu-plugin.h is not packaged by
 * Debian): the calls used exist unchanged from QEMU 4.2 on; version 1 is
 * the API of Debian 12's QEMU 7.2 (later QEMUs refuse it and say so).
 * Under -icount one vCPU runs at a time; with several multi-threaded vCPUs
 * (BENCH_VCPUS > 1, at most MAX_VCPUS) each counts in its own slot, which
 * only its thread writes: a dump never zeroes a slot, it reports what the
 * slot gained since the last dump (@seen, the dumps' own), so no count is
 * lost or counted twice, and a phase boundary is exact to the blocks a
 * vCPU runs while the dump reads.  A mutex orders the translations (which
 * run on any vCPU thread) and the dumps.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
	void (*cb)(unsigned int vcpu, void *udata),
	enum qemu_plugin_cb_flags flags, void *udata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, void *udata), void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define KERNEL_BASE	0xffff800000000000ULL
#define NBUCKETS	(1u << 18)
#define MAX_VCPUS	16	/* bench.sh boots at most -smp 16 */

/* One per distinct (vaddr, size): a TB retranslated alike reuses it. */
struct block {
	uint64_t vaddr;
	uint64_t insns[MAX_VCPUS];	/* executed, per vCPU: its thread writes */
	uint64_t seen[MAX_VCPUS];	/* insns at the last dump: dump() writes */
	uint32_t n_insns;
	struct block *next;	/* hash chain */
	struct block *all;	/* every block, for the dump */
};

static struct block *buckets[NBUCKETS];
static struct block *blocks;
static uint64_t mark;
static const char *outdir = ".";
static unsigned int phase;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct block *block_get(uint64_t vaddr, uint32_t n_insns)
{
	uint32_t h = (uint32_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 46) & (NBUCKETS - 1);
	struct block *b;

	for (b = buckets[h]; b; b = b->next)
		if (b->vaddr == vaddr && b->n_insns == n_insns)
			return b;
	b = calloc(1, sizeof(*b));
	if (!b) {
		perror("insn-profile");
		exit(1);
	}
	b->vaddr = vaddr;
	b->n_insns = n_insns;
	b->next = buckets[h];
	buckets[h] = b;
	b->all = blocks;
	blocks = b;
	return b;
}

static void dump(const char *name)
{
	char path[4096];
	struct block *b;
	uint64_t sum;
	unsigned int i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	pthread_mutex_lock(&lock);
	for (b = blocks; b; b = b->all) {
		for (sum = 0, i = 0; i < MAX_VCPUS; i++) {
			uint64_t now = __atomic_load_n(&b->insns[i], __ATOMIC_RELAXED);

			sum += now - b->seen[i];
			b->seen[i] = now;
		}
		if (sum)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				b->vaddr, sum, sum / b->n_insns);
	}
	pthread_mutex_unlock(&lock);
	fclose(f);
}

static void block_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;
	uint64_t *slot = &b->insns[vcpu % MAX_VCPUS];

	/* Only this thread writes the slot: a plain add, stored whole. */
	__atomic_store_n(slot, *slot + b->n_insns, __ATOMIC_RELAXED);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	char name[32];

	(void)vcpu;
	(void)udata;
	pthread_mutex_lock(&lock);
	snprintf(name, sizeof(name), "phase-%04u.txt", phase++);
	pthread_mutex_unlock(&lock);
	dump(name);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	(void)id;
	if (vaddr < KERNEL_BASE)
		return;
	/* The mark first: the phase ends before the mark's own block counts. */
	if (vaddr == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, mark_exec,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
	pthread_mutex_lock(&lock);
	b = block_get(vaddr, (uint32_t)qemu_plugin_tb_n_insns(tb));
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	dump("phase-last.txt");
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
			int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			outdir = argv[i] + 4;
		else if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 0);
		else {
			fprintf(stderr, "insn-profile: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!mark) {
		fprintf(stderr, "insn-profile: mark=ADDR is required\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
