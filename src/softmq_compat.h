/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softmq_compat.h - every difference between the kernel lines softmq builds
 * for (Debian 6.1, 6.12, 7.2, 7.2-rt) lives here, so sch_softmq.c reads like
 * upstream code for the newest kernel.
 */
#ifndef _SOFTMQ_COMPAT_H
#define _SOFTMQ_COMPAT_H

#include <linux/version.h>
#include <linux/module.h>
#include <net/pkt_sched.h>

/*
 * Qdisc autoload: until 6.9 the core asked for "sch_<id>" (our module name,
 * so no alias is needed); since then it asks for "net-sch-<id>", declared
 * with MODULE_ALIAS_NET_SCH().
 */
#ifndef MODULE_ALIAS_NET_SCH
#define MODULE_ALIAS_NET_SCH(id)	MODULE_ALIAS("net-sch-" id)
#endif

#endif /* _SOFTMQ_COMPAT_H */
