// SPDX-License-Identifier: GPL-2.0
/*
 * warnme: a test-only module whose init makes the kernel complain.
 *
 * The test bed's self-test (tests/vm/00-selftest.sh) loads it inside a
 * nested harness run and checks that the harness's kernel-log scanner turns
 * the report into a FAIL: a WARN on every line, and on the sanitizer lines
 * a report of the sanitizer itself, which also proves the sanitizer is on
 * and instruments out-of-tree modules such as softmq.  Never load it
 * outside that self-test.
 *
 *   mode=0  WARN once (default)
 *   mode=1  read one byte past a kmalloc(8) object (KASAN)
 *   mode=2  two CPUs increment one plain counter for a second (KCSAN)
 *   mode=3  spin with preemption off for @seconds: a soft lockup, which
 *           tests/testbed/vm.sh must call a hung guest (selftest.sh)
 */
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>

static int mode;
module_param(mode, int, 0444);
MODULE_PARM_DESC(mode, "0: WARN (default), 1: out-of-bounds read (KASAN), 2: data race (KCSAN), 3: soft lockup");

static unsigned int seconds = 300;
module_param(seconds, uint, 0444);
MODULE_PARM_DESC(seconds, "mode 3: how long the CPU spins");

/* A variable, so the compiler cannot see the overflow and warn at build. */
static unsigned int warnme_oob_at = 8;

/* Racy on purpose: plain increments from two CPUs (mode 2). */
static unsigned long warnme_shared;

static void warnme_oob(void)
{
	u8 *p = kmalloc(8, GFP_KERNEL);

	if (!p)
		return;
	pr_info("softmq-warnme: byte past the object: %u\n",
		READ_ONCE(p[READ_ONCE(warnme_oob_at)]));
	kfree(p);
}

static int warnme_racer(void *unused)
{
	while (!kthread_should_stop()) {
		warnme_shared++;
		cond_resched();
	}
	return 0;
}

static void warnme_race(void)
{
	unsigned long end = jiffies + HZ;
	struct task_struct *t;
	unsigned int cpu;

	t = kthread_create(warnme_racer, NULL, "warnme_racer");
	if (IS_ERR(t))
		return;
	/* The other CPU than ours, so both loops really run at once. */
	cpu = cpumask_any_but(cpu_online_mask, raw_smp_processor_id());
	if (cpu < nr_cpu_ids)
		kthread_bind(t, cpu);
	wake_up_process(t);
	while (time_before(jiffies, end)) {
		warnme_shared++;
		cond_resched();
	}
	kthread_stop(t);
	pr_info("softmq-warnme: racy counter %lu\n", warnme_shared);
}

/* Interrupts stay on: jiffies advances and the watchdog sees the lockup. */
static void warnme_lockup(void)
{
	unsigned long end = jiffies + seconds * HZ;

	preempt_disable();
	while (time_before(jiffies, end))
		cpu_relax();
	preempt_enable();
}

static int __init warnme_init(void)
{
	switch (mode) {
	case 3:
		warnme_lockup();
		break;
	case 1:
		warnme_oob();
		break;
	case 2:
		warnme_race();
		break;
	default:
		WARN(1, "softmq-warnme: deliberate warning for the harness self-test\n");
	}
	return 0;
}

static void __exit warnme_exit(void)
{
}

module_init(warnme_init);
module_exit(warnme_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("softmq test bed: a module that makes the kernel complain at load (self-test only)");
