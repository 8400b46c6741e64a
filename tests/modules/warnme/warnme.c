// SPDX-License-Identifier: GPL-2.0
/*
 * warnme: a test-only module whose init WARNs once.
 *
 * The test bed's self-test (tests/vm/00-selftest.sh) loads it inside a
 * nested harness run and checks that the harness's kernel-log scanner turns
 * the splat into a FAIL.  Never load it outside that self-test.
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init warnme_init(void)
{
	WARN(1, "softmq-warnme: deliberate warning for the harness self-test\n");
	return 0;
}

static void __exit warnme_exit(void)
{
}

module_init(warnme_init);
module_exit(warnme_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("softmq test bed: a module that WARNs at load (self-test only)");
