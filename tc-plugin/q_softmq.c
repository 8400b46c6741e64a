// SPDX-License-Identifier: GPL-2.0
/*
 * q_softmq.c - tc(8) support for the softmq qdisc.
 *
 * Built against tc_abi.h (Debian ships no iproute2 headers); one binary
 * serves iproute2 6.1 through 7.1.  Values are parsed with tc's own
 * helpers and only checked for syntax here: the kernel's policy checks
 * their ranges and says what is wrong (extack).  Only the options given
 * are sent; the kernel fills in defaults on add and keeps the current
 * values on change.  As in every tc qdisc, a repeated option's last value
 * wins.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tc_abi.h"
#include "uapi/softmq.h"

#define SOFTMQ_ATTR_MAXLEN	1024	/* room for TCA_OPTIONS, as tc's qdiscs */
#define __maybe_unused		__attribute__((unused))

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... softmq [ flows NUMBER ] [ depth PACKETS ] [ quantum BYTES ]\n"
		"                  [ bands 1|3 ] [ key flow|cpu ]\n"
		"                  [ limit PACKETS ] [ memory_limit BYTES ]\n"
		"                  [ codel | nocodel ] [ target TIME ] [ interval TIME ]\n"
		"                  [ ecn | noecn ] [ ce_threshold TIME|off ]\n");
}

/* Options with a value; codel/nocodel and ecn/noecn are words alone. */
static const char *const opt_names[] = {
	[TCA_SOFTMQ_FLOWS]	= "flows",
	[TCA_SOFTMQ_DEPTH]	= "depth",
	[TCA_SOFTMQ_QUANTUM]	= "quantum",
	[TCA_SOFTMQ_BANDS]	= "bands",
	[TCA_SOFTMQ_KEY]	= "key",
	[TCA_SOFTMQ_LIMIT]	= "limit",
	[TCA_SOFTMQ_MEMORY_LIMIT] = "memory_limit",
	[TCA_SOFTMQ_TARGET]	= "target",
	[TCA_SOFTMQ_INTERVAL]	= "interval",
	[TCA_SOFTMQ_CE_THRESHOLD] = "ce_threshold",
};

static const char *const key_names[] = {
	[SOFTMQ_KEY_FLOW]	= "flow",
	[SOFTMQ_KEY_CPU]	= "cpu",
};

/*
 * get_time() stores whatever strtod() read, times its unit, into an
 * unsigned int: a negative, NaN or huge time would reach the kernel as
 * some other, valid one ("nan" as 0, "4295s" as 32ms).  Refuse those
 * first; get_time() checks the unit's spelling, the kernel the range.
 */
static int softmq_get_time(__u32 *us, const char *arg)
{
	char *unit;
	double t = strtod(arg, &unit);

	if (tolower(*unit) == 's')
		t *= 1e6;
	else if (tolower(*unit) == 'm')
		t *= 1e3;
	if (!isfinite(t) || t < 0 || t > UINT32_MAX)
		return -1;
	return get_time(us, arg);
}

static int softmq_parse_opt(const struct qdisc_util *qu __maybe_unused,
			    int argc, char **argv, struct nlmsghdr *n,
			    const char *dev __maybe_unused)
{
	__u32 val[TCA_SOFTMQ_MAX + 1];
	bool set[TCA_SOFTMQ_MAX + 1] = { false };
	struct rtattr *tail;
	int i;

	for (; argc > 0; argc--, argv++) {
		const char *word = *argv, *arg = argv[1];
		int opt, err = 0;

		if (strcmp(word, "codel") == 0 || strcmp(word, "nocodel") == 0) {
			val[TCA_SOFTMQ_CODEL] = word[0] == 'c';
			set[TCA_SOFTMQ_CODEL] = true;
			continue;
		}
		if (strcmp(word, "ecn") == 0 || strcmp(word, "noecn") == 0) {
			val[TCA_SOFTMQ_ECN] = word[0] == 'e';
			set[TCA_SOFTMQ_ECN] = true;
			continue;
		}
		if (strcmp(word, "help") == 0) {
			explain();
			return -1;
		}

		for (opt = TCA_SOFTMQ_MAX; opt > TCA_SOFTMQ_UNSPEC; opt--)
			if (opt_names[opt] && strcmp(word, opt_names[opt]) == 0)
				break;
		if (opt == TCA_SOFTMQ_UNSPEC) {
			fprintf(stderr, "What is \"%s\"?\n", word);
			explain();
			return -1;
		}
		/* Not NEXT_ARG(): tc's exits with 255, a plugin's error is 1. */
		if (argc < 2) {
			fprintf(stderr, "\"%s\" needs a value\n", word);
			explain();
			return -1;
		}

		switch (opt) {
		case TCA_SOFTMQ_QUANTUM:
		case TCA_SOFTMQ_MEMORY_LIMIT:
			err = get_size(&val[opt], arg);
			break;
		case TCA_SOFTMQ_KEY:
			if (strcmp(arg, key_names[SOFTMQ_KEY_FLOW]) == 0)
				val[opt] = SOFTMQ_KEY_FLOW;
			else if (strcmp(arg, key_names[SOFTMQ_KEY_CPU]) == 0)
				val[opt] = SOFTMQ_KEY_CPU;
			else
				err = -1;
			break;
		case TCA_SOFTMQ_CE_THRESHOLD:
			if (strcmp(arg, "off") == 0)
				val[opt] = SOFTMQ_CE_THRESHOLD_OFF;
			else
				err = softmq_get_time(&val[opt], arg);
			break;
		case TCA_SOFTMQ_TARGET:
		case TCA_SOFTMQ_INTERVAL:
			err = softmq_get_time(&val[opt], arg);
			break;
		default:
			err = get_unsigned(&val[opt], arg, 0);
			break;
		}
		if (err) {
			fprintf(stderr, "Illegal \"%s\" \"%s\"\n", word, arg);
			explain();
			return -1;
		}
		set[opt] = true;
		argc--;
		argv++;
	}

	/* NLA_F_NESTED as newer iproute2 qdiscs set it; softmq takes both. */
	tail = addattr_nest(n, SOFTMQ_ATTR_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (!tail)
		return -1;
	for (i = TCA_SOFTMQ_UNSPEC + 1; i <= TCA_SOFTMQ_MAX; i++)
		if (set[i] && addattr_l(n, SOFTMQ_ATTR_MAXLEN, i, &val[i],
					sizeof(val[i])))
			return -1;
	addattr_nest_end(n, tail);
	return 0;
}

static bool get_u32_attr(struct rtattr *tb[], int type, __u32 *v)
{
	if (!tb[type] || RTA_PAYLOAD(tb[type]) < sizeof(__u32))
		return false;
	memcpy(v, RTA_DATA(tb[type]), sizeof(*v));
	return true;
}

/* A time: "target 5ms " as text, the microseconds in JSON. */
static void print_usec(const char *name, const char *fmt, __u32 us)
{
	SPRINT_BUF(b);

	print_uint(PRINT_JSON, name, NULL, us);
	print_string(PRINT_FP, NULL, fmt, sprint_time(us, b));
}

/* Options in the order of the synopsis. */
static int softmq_print_opt(const struct qdisc_util *qu __maybe_unused,
			    FILE *f __maybe_unused, struct rtattr *opt)
{
	struct rtattr *tb[TCA_SOFTMQ_MAX + 1];
	__u32 v;

	if (!opt)
		return 0;
	parse_rtattr_nested(tb, TCA_SOFTMQ_MAX, opt);

	if (get_u32_attr(tb, TCA_SOFTMQ_FLOWS, &v))
		print_uint(PRINT_ANY, "flows", "flows %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_DEPTH, &v))
		print_uint(PRINT_ANY, "depth", "depth %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_QUANTUM, &v))
		print_uint(PRINT_ANY, "quantum", "quantum %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_BANDS, &v))
		print_uint(PRINT_ANY, "bands", "bands %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_KEY, &v)) {
		SPRINT_BUF(b);

		/* A key from a newer module: its number, still a JSON string. */
		snprintf(b, sizeof(b), "%u", v);
		print_string(PRINT_ANY, "key", "key %s ",
			     v <= SOFTMQ_KEY_MAX ? key_names[v] : b);
	}
	if (get_u32_attr(tb, TCA_SOFTMQ_LIMIT, &v))
		print_uint(PRINT_ANY, "limit", "limit %up ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_MEMORY_LIMIT, &v))
		print_size(PRINT_ANY, "memory_limit", "memory_limit %s ", v);
	/* As fq_codel: what is off or at its default is not printed. */
	if (get_u32_attr(tb, TCA_SOFTMQ_CODEL, &v)) {
		print_bool(PRINT_JSON, "codel", NULL, v);
		if (!v)
			print_string(PRINT_FP, NULL, "%s", "nocodel ");
	}
	if (get_u32_attr(tb, TCA_SOFTMQ_TARGET, &v))
		print_usec("target", "target %s ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_INTERVAL, &v))
		print_usec("interval", "interval %s ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_ECN, &v) && v)
		print_bool(PRINT_ANY, "ecn", "ecn ", true);
	if (get_u32_attr(tb, TCA_SOFTMQ_CE_THRESHOLD, &v) &&
	    v != SOFTMQ_CE_THRESHOLD_OFF)
		print_usec("ce_threshold", "ce_threshold %s ", v);
	return 0;
}

/* Classes (rings) have no options of their own. */
static int softmq_print_copt(const struct qdisc_util *qu __maybe_unused,
			     FILE *f __maybe_unused,
			     struct rtattr *opt __maybe_unused)
{
	return 0;
}

/* One ring (tc -s class show), as fq_codel prints a flow. */
static void print_class_xstats(const struct tc_softmq_cl_stats *cs)
{
	SPRINT_BUF(b);

	print_uint(PRINT_ANY, "band", "  band %u", cs->band);
	print_uint(PRINT_ANY, "index", " index %u", cs->index);
	print_int(PRINT_ANY, "deficit", " deficit %d", cs->deficit);
	print_uint(PRINT_ANY, "count", " count %u", cs->count);
	print_uint(PRINT_ANY, "lastcount", " lastcount %u", cs->lastcount);
	print_uint(PRINT_JSON, "ldelay", NULL, cs->ldelay);
	print_string(PRINT_FP, NULL, " ldelay %s", sprint_time(cs->ldelay, b));
	if (cs->dropping) {
		__s32 next = cs->drop_next;

		print_bool(PRINT_ANY, "dropping", " dropping", true);
		print_int(PRINT_JSON, "drop_next", NULL, next);
		/* -INT_MIN does not fit: its magnitude as unsigned */
		print_string(PRINT_FP, NULL, next < 0 ? " drop_next -%s" :
			     " drop_next %s",
			     sprint_time(next < 0 ? 0U - (__u32)next : (__u32)next, b));
	}
	if (cs->new_flow)
		print_bool(PRINT_ANY, "new_flow", " new_flow", true);
}

static void print_qdisc_xstats(const struct tc_softmq_qd_stats *st)
{
#define U64(field, sep) print_u64(PRINT_ANY, #field, sep #field " %llu", st->field)
#define U32(field, sep) print_uint(PRINT_ANY, #field, sep #field " %u", st->field)
	U64(drop_overlimit, "  ");
	U64(drop_overmemory, " ");
	U64(drop_nomem, " ");
	U64(drop_codel, " ");
	/* tc's name for fq_codel's memory_usage */
	print_u64(PRINT_ANY, "memory_used", " memory_used %llu", st->memory_usage);
	print_nl();
	U64(spilled, "  ");
	U64(bypassed, " ");
	U64(ring_wakeups, " ");
	U64(push_retries, " ");
	U64(busy_skips, " ");
	U64(reconfigs, " ");
	print_nl();
	U32(maxpacket, "  ");
	U32(ecn_mark, " ");
	U32(ce_mark, " ");
	U32(new_flow_count, " ");
	U32(new_flows_len, " ");
	U32(old_flows_len, " ");
	print_nl();
	U32(active_rings, "  ");
	U32(allocated_rings, " ");
	U32(ring_hiwat, " ");
	U32(draining, " ");
#undef U64
#undef U32
}

/*
 * tc calls this for the qdisc's xstats and for each class's, told apart
 * by their type.  A shorter block (a module built from an older header)
 * reads as zeros past its end, as tc does for fq_codel; a longer one is
 * cut.
 */
static int softmq_print_xstats(const struct qdisc_util *qu __maybe_unused,
			       FILE *f __maybe_unused, struct rtattr *xstats)
{
	struct tc_softmq_xstats st = { 0 };
	size_t len;

	if (!xstats)
		return 0;
	len = RTA_PAYLOAD(xstats);
	if (len < sizeof(st.type))
		return -1;
	memcpy(&st, RTA_DATA(xstats), len < sizeof(st) ? len : sizeof(st));
	if (st.type == TCA_SOFTMQ_XSTATS_QDISC)
		print_qdisc_xstats(&st.qdisc_stats);
	else if (st.type == TCA_SOFTMQ_XSTATS_CLASS)
		print_class_xstats(&st.class_stats);
	return 0;
}

/* Writable: tc links it into its list through ->next. */
__attribute__((visibility("default")))
struct qdisc_util softmq_qdisc_util = {
	.id		= "softmq",
	.parse_qopt	= softmq_parse_opt,
	.print_qopt	= softmq_print_opt,
	.print_xstats	= softmq_print_xstats,
	.print_copt	= softmq_print_copt,
};
