/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tc_abi.h - the small part of iproute2's tc plugin ABI that q_softmq.so uses.
 *
 * Debian ships no iproute2 development headers, so the plugin declares what
 * it needs here.  Every declaration below was compared against the iproute2
 * sources of v6.1.0 (Debian bookworm, 6.1.0-3), v6.15.0 (bookworm-backports,
 * 6.15.0-1~bpo12+1) and v7.1.0; they are identical in all three except for
 * the `const` that 6.9 added to the callbacks' first argument, which changes
 * no calling convention or layout.
 *
 * Why this is stable:
 *  - tc finds a plugin with dlopen("$TC_LIB_DIR/q_<kind>.so") and
 *    dlsym("<kind>_qdisc_util"), and writes `next` into the struct it gets
 *    (so the struct must be writable).  Out-of-tree plugins (and the
 *    in-tree ones, which share the code path) depend on struct qdisc_util
 *    keeping its field order; iproute2 has only ever appended to it
 *    (has_block, the last field, was added in 5.9).
 *  - Only plain exported functions of the tc binary are called (it is linked
 *    with -Wl,-export-dynamic).  print_uint(), print_u64(), print_bool(),
 *    print_string(), print_int(), print_size() and parse_rtattr_nested()
 *    are static inline wrappers or macros in iproute2's headers, so they
 *    are written out here, over the exported print_color_*() and
 *    parse_rtattr_flags() they wrap.  Helpers whose signatures changed
 *    between 6.1 and 6.15 (matches(), print_tm(), print_tcstats2_attr())
 *    and noreturn helpers that exit with status 255 (NEXT_ARG(),
 *    incomplete_command(), invarg(), duparg()) are not used.
 *  - print_color_size() took a __u32 size up to 6.x and takes a __u64
 *    since: it is declared with the __u64, which passes a 32-bit value
 *    correctly to either on the ABIs the plugin is built for (x86-64 and
 *    arm64 registers, i386 cdecl: the caller pops the extra word).
 *  - get_time() stores a negative, NaN or huge double into an unsigned int
 *    unchecked: q_softmq.c refuses those before calling it.
 *
 * `LD_BIND_NOW=1 tc ...` resolves every symbol below when tc loads the plugin;
 * the tests in tests/ run both tc versions that way.
 */
#ifndef _SOFTMQ_TC_ABI_H
#define _SOFTMQ_TC_ABI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

/* tc/tc_util.h */
struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(const struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_qopt)(const struct qdisc_util *qu, FILE *f,
			  struct rtattr *opt);
	int (*print_xstats)(const struct qdisc_util *qu, FILE *f,
			    struct rtattr *xstats);
	int (*parse_copt)(const struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_copt)(const struct qdisc_util *qu, FILE *f,
			  struct rtattr *opt);
	int (*has_block)(const struct qdisc_util *qu, struct rtattr *opt,
			 __u32 block_idx, bool *p_has);
};

/* include/json_print.h */
enum output_type {
	PRINT_FP = 1,
	PRINT_JSON = 2,
	PRINT_ANY = 4,
};

/* include/color.h: only COLOR_NONE is used; its value is 6 in 6.1..7.1. */
enum color_attr {
	COLOR_IFNAME,
	COLOR_MAC,
	COLOR_INET,
	COLOR_INET6,
	COLOR_OPERSTATE_UP,
	COLOR_OPERSTATE_DOWN,
	COLOR_NONE
};

int print_color_uint(enum output_type t, enum color_attr color,
		     const char *key, const char *fmt, unsigned int value);
int print_color_int(enum output_type t, enum color_attr color,
		    const char *key, const char *fmt, int value);
/* fmt gets "true" or "false" as its %s; JSON gets a boolean */
int print_color_bool(enum output_type t, enum color_attr color,
		     const char *key, const char *fmt, bool value);
int print_color_u64(enum output_type t, enum color_attr color,
		    const char *key, const char *fmt, uint64_t value);
int print_color_string(enum output_type t, enum color_attr color,
		       const char *key, const char *fmt, const char *value);
/* "32Mb", "1500Kb", "100b" as text (fmt's %s), the bytes in JSON */
int print_color_size(enum output_type t, enum color_attr color,
		     const char *key, const char *fmt, uint64_t size);
void print_nl(void);

#define print_uint(t, key, fmt, v)	print_color_uint(t, COLOR_NONE, key, fmt, v)
#define print_int(t, key, fmt, v)	print_color_int(t, COLOR_NONE, key, fmt, v)
#define print_bool(t, key, fmt, v)	print_color_bool(t, COLOR_NONE, key, fmt, v)
#define print_u64(t, key, fmt, v)	print_color_u64(t, COLOR_NONE, key, fmt, v)
#define print_string(t, key, fmt, v)	print_color_string(t, COLOR_NONE, key, fmt, v)
#define print_size(t, key, fmt, v)	print_color_size(t, COLOR_NONE, key, fmt, v)

/* include/utils.h; each returns 0 on success */
#define SPRINT_BSIZE	64
#define SPRINT_BUF(x)	char x[SPRINT_BSIZE]
int get_unsigned(unsigned int *val, const char *arg, int base);
/* "1514", "1.5k", "64kb", "1m"... -> bytes */
int get_size(unsigned int *size, const char *str);
/* "5ms", "500us", "1s", a bare number is usec -> usec */
int get_time(unsigned int *time, const char *str);
/* usec -> "5ms", "1.5ms", "1.23s" ("%.3g") */
char *sprint_time(__u32 time, char *buf);

/* include/libnetlink.h */
int addattr_l(struct nlmsghdr *n, int maxlen, int type, const void *data,
	      int alen);
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta,
		       int len, unsigned short flags);
static inline int parse_rtattr_nested(struct rtattr *tb[], int max,
				      struct rtattr *rta)
{
	return parse_rtattr_flags(tb, max, RTA_DATA(rta), RTA_PAYLOAD(rta),
				  NLA_F_NESTED);
}

#endif /* _SOFTMQ_TC_ABI_H */
