// SPDX-License-Identifier: GPL-2.0
/*
 * q_softmq.c - tc(8) support for the softmq qdisc.
 *
 *   tc qdisc { add | change | replace } dev DEV root softmq
 *	[ flows NUMBER ] [ depth PACKETS ] [ quantum BYTES ]
 *	[ bands 1|3 ] [ key flow|cpu ]
 *	[ limit PACKETS ] [ memory_limit BYTES ]
 *	[ codel | nocodel ] [ target TIME ] [ interval TIME ]
 *	[ ecn | noecn ] [ ce_threshold TIME|off ]
 *
 * Every argument is checked here, before tc talks to the kernel: a bad one
 * gets a one-line message naming it, then the usage, and tc exits with 1.
 * Only options given on the command line are sent; the kernel fills in
 * defaults on add and keeps the current values on change.
 *
 * Built against tc_abi.h (no iproute2 headers needed); one binary serves
 * iproute2 6.1 through 7.1.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tc_abi.h"
#include "uapi/softmq.h"

#define SOFTMQ_ATTR_MAXLEN	1024	/* room for TCA_OPTIONS, as tc's qdiscs */
#define __unused		__attribute__((unused))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... softmq [ flows NUMBER ] [ depth PACKETS ] [ quantum BYTES ]\n"
		"                  [ bands 1|3 ] [ key flow|cpu ]\n"
		"                  [ limit PACKETS ] [ memory_limit BYTES ]\n"
		"                  [ codel | nocodel ] [ target TIME ] [ interval TIME ]\n"
		"                  [ ecn | noecn ] [ ce_threshold TIME|off ]\n"
		"  flows    rings per band (key flow), power of two %u..%u, default %u\n"
		"  depth    packets per ring, power of two %u..%u, default %u\n"
		"  quantum  bytes per ring per round, %u..%u (1514, 1.5k, 64k),\n"
		"           default device MTU + link header\n"
		"  bands    1, or 3 for pfifo_fast's priority bands, default %u\n"
		"  key      flow: one ring per flow hash; cpu: one ring per CPU; default flow\n"
		"  limit    packets queued, %u..%u, default %u\n"
		"  memory_limit  bytes of skb memory queued (4Mb, 32Mb), %u..%u,\n"
		"           default %uMb (under mq: divided by the TX queues, at least\n"
		"           %u packets and %uMb)\n"
		"  codel    CoDel AQM on every ring (default); nocodel: plain FIFO rings\n"
		"  target   CoDel's acceptable queue delay, 1us..60s, default 5ms\n"
		"           (TIME: 5ms, 500us, 1.5ms, 1s; a bare number is usec)\n"
		"  interval CoDel's interval, 1us..60s, default 100ms\n"
		"  ecn      CoDel CE-marks ECN-capable packets instead of dropping\n"
		"           them (default); noecn: it drops them\n"
		"  ce_threshold  CE-mark ECN-capable packets queued longer than this,\n"
		"           0us..60s, or off (default)\n",
		SOFTMQ_FLOWS_MIN, SOFTMQ_FLOWS_MAX, SOFTMQ_FLOWS_DEFAULT,
		SOFTMQ_DEPTH_MIN, SOFTMQ_DEPTH_MAX, SOFTMQ_DEPTH_DEFAULT,
		SOFTMQ_QUANTUM_MIN, SOFTMQ_QUANTUM_MAX, SOFTMQ_BANDS_DEFAULT,
		SOFTMQ_LIMIT_MIN, SOFTMQ_LIMIT_MAX, SOFTMQ_LIMIT_DEFAULT,
		SOFTMQ_MEMORY_LIMIT_MIN, SOFTMQ_MEMORY_LIMIT_MAX,
		SOFTMQ_MEMORY_LIMIT_DEFAULT >> 20, SOFTMQ_LIMIT_QUEUE_MIN,
		SOFTMQ_MEMORY_LIMIT_QUEUE_MIN >> 20);
}

/* Print the one-line error, then the usage; the caller returns -1. */
#define bad(fmt, ...) do {						\
		fprintf(stderr, "softmq: " fmt "\n", ##__VA_ARGS__);	\
		explain();						\
	} while (0)

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

/* Options without a value: a word for each setting of one attribute. */
static const struct {
	const char *word;
	int attr;
	__u32 val;
} flag_words[] = {
	{ "codel",	TCA_SOFTMQ_CODEL,	1 },
	{ "nocodel",	TCA_SOFTMQ_CODEL,	0 },
	{ "ecn",	TCA_SOFTMQ_ECN,		1 },
	{ "noecn",	TCA_SOFTMQ_ECN,		0 },
};

static const char *const key_names[] = {
	[SOFTMQ_KEY_FLOW]	= "flow",
	[SOFTMQ_KEY_CPU]	= "cpu",
};

static int opt_lookup(const char *word)
{
	int i;

	for (i = TCA_SOFTMQ_UNSPEC + 1; i <= TCA_SOFTMQ_MAX; i++)
		if (opt_names[i] && strcmp(word, opt_names[i]) == 0)
			return i;
	return -1;
}

static int flag_lookup(const char *word)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flag_words); i++)
		if (strcmp(word, flag_words[i].word) == 0)
			return (int)i;
	return -1;
}

static bool is_pow2(__u32 v)
{
	return v && !(v & (v - 1));
}

/*
 * A decimal count: digits only (no sign, no spaces, no hex or octal), so
 * "010" means ten and "-1" is refused rather than wrapped.
 */
static int parse_count(const char *name, const char *arg, __u32 min,
		       __u32 max, bool pow2, __u32 *out)
{
	unsigned long long v = 0;
	const char *p;

	if (arg[0] == '-' && arg[1]) {
		bad("%s \"%s\" is negative; expected %s%u..%u", name, arg,
		    pow2 ? "a power of two " : "", min, max);
		return -1;
	}
	if (!arg[0] || arg[strspn(arg, "0123456789")]) {
		bad("%s \"%s\" is not a number; expected %s%u..%u", name, arg,
		    pow2 ? "a power of two " : "", min, max);
		return -1;
	}
	for (p = arg; *p; p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > max)
			break;
	}
	if (v < min || v > max) {
		bad("%s \"%s\" is out of range; expected %s%u..%u", name, arg,
		    pow2 ? "a power of two " : "", min, max);
		return -1;
	}
	if (pow2 && !is_pow2((__u32)v)) {
		bad("%s \"%s\" is not a power of two; expected 1, 2, 4, ... %u",
		    name, arg, max);
		return -1;
	}
	*out = (__u32)v;
	return 0;
}

static int parse_bytes(const char *name, const char *arg, const char *eg,
		       __u32 min, __u32 max, __u32 *out)
{
	unsigned int v;

	if (arg[0] == '-') {
		bad("%s \"%s\" is negative; expected %u..%u bytes",
		    name, arg, min, max);
		return -1;
	}
	/*
	 * tc's own size parser: 1514, 1514b, 1.5k, 64kb, 1m ...  Like every
	 * tc size it drops a fraction of a byte ("100.5" is 100).
	 */
	if (!arg[0] || get_size(&v, arg)) {
		bad("%s \"%s\" is not a size in bytes (e.g. %s) from %u to %u",
		    name, arg, eg, min, max);
		return -1;
	}
	if (v < min || v > max) {
		bad("%s \"%s\" (%u bytes) is out of range; expected %u..%u bytes",
		    name, arg, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* As the plugin prints times: 5ms, 100ms, 1s, 1500us (exact, in usec). */
static void sprint_usec(char *buf, size_t len, __u32 us)
{
	if (us && !(us % 1000000))
		snprintf(buf, len, "%us", us / 1000000);
	else if (us && !(us % 1000))
		snprintf(buf, len, "%ums", us / 1000);
	else
		snprintf(buf, len, "%uus", us);
}

/*
 * A time as tc's get_time() reads it: a number (strtod: 5, 1.5, 1e3) and
 * an optional unit, s/sec/secs, ms/msec/msecs or us/usec/usecs, any case;
 * a bare number is microseconds.  get_time() itself is not used: it stores
 * a negative, huge or NaN double into an unsigned int unchecked.  The
 * fraction of a microsecond is dropped, as get_time() drops it.
 */
static int parse_time(const char *name, const char *arg, __u32 min,
		      __u32 max, bool can_off, __u32 *out)
{
	char lo[16], hi[16];
	const char *unit;
	char *end;
	double t;

	sprint_usec(lo, sizeof(lo), min);
	sprint_usec(hi, sizeof(hi), max);
	if (can_off && strcmp(arg, "off") == 0) {
		*out = SOFTMQ_CE_THRESHOLD_OFF;
		return 0;
	}
	if (arg[0] == '-') {
		bad("%s \"%s\" is negative; expected %s..%s%s", name, arg, lo,
		    hi, can_off ? " or off" : "");
		return -1;
	}
	t = strtod(arg, &end);
	unit = end;
	if (end == arg || !isfinite(t)) {
		unit = NULL;
	} else if (!*unit || !strcasecmp(unit, "us") ||
		   !strcasecmp(unit, "usec") || !strcasecmp(unit, "usecs")) {
		/* microseconds */
	} else if (!strcasecmp(unit, "ms") || !strcasecmp(unit, "msec") ||
		   !strcasecmp(unit, "msecs")) {
		t *= 1000;
	} else if (!strcasecmp(unit, "s") || !strcasecmp(unit, "sec") ||
		   !strcasecmp(unit, "secs")) {
		t *= 1000000;
	} else {
		unit = NULL;
	}
	if (!unit) {
		bad("%s \"%s\" is not a time (e.g. 5ms, 500us, 1s) from %s to %s%s",
		    name, arg, lo, hi, can_off ? ", or off" : "");
		return -1;
	}
	if (t < 0) {
		bad("%s \"%s\" is negative; expected %s..%s%s", name, arg, lo,
		    hi, can_off ? " or off" : "");
		return -1;
	}
	if (t > max || (__u32)t < min) {
		bad("%s \"%s\" is out of range; expected %s..%s%s", name, arg,
		    lo, hi, can_off ? " or off" : "");
		return -1;
	}
	*out = (__u32)t;
	return 0;
}

static int softmq_parse_opt(const struct qdisc_util *qu __unused, int argc,
			    char **argv, struct nlmsghdr *n,
			    const char *dev __unused)
{
	__u32 val[TCA_SOFTMQ_MAX + 1] = { 0 };
	const char *seen[TCA_SOFTMQ_MAX + 1] = { NULL };
	struct rtattr *tail;
	int i;

	for (; argc > 0; argc--, argv++) {
		const char *word = *argv, *arg;
		int opt, flag;

		if (strcmp(word, "help") == 0) {
			explain();
			return -1;
		}
		flag = flag_lookup(word);
		opt = flag >= 0 ? flag_words[flag].attr : opt_lookup(word);
		if (opt < 0) {
			bad("unknown option \"%s\"", word);
			return -1;
		}
		if (seen[opt] && strcmp(seen[opt], word) == 0) {
			bad("option \"%s\" is given more than once", word);
			return -1;
		}
		if (seen[opt]) {
			bad("option \"%s\" contradicts \"%s\" before it", word,
			    seen[opt]);
			return -1;
		}
		if (flag >= 0) {
			val[opt] = flag_words[flag].val;
			seen[opt] = word;
			continue;
		}
		if (argc < 2) {
			bad("option \"%s\" needs a value", word);
			return -1;
		}
		argc--;
		arg = *++argv;

		switch (opt) {
		case TCA_SOFTMQ_FLOWS:
			if (parse_count(word, arg, SOFTMQ_FLOWS_MIN,
					SOFTMQ_FLOWS_MAX, true, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_DEPTH:
			if (parse_count(word, arg, SOFTMQ_DEPTH_MIN,
					SOFTMQ_DEPTH_MAX, true, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_QUANTUM:
			if (parse_bytes(word, arg, "1514, 1.5k", SOFTMQ_QUANTUM_MIN,
					SOFTMQ_QUANTUM_MAX, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_LIMIT:
			if (parse_count(word, arg, SOFTMQ_LIMIT_MIN,
					SOFTMQ_LIMIT_MAX, false, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_MEMORY_LIMIT:
			if (parse_bytes(word, arg, "4Mb, 32Mb",
					SOFTMQ_MEMORY_LIMIT_MIN,
					SOFTMQ_MEMORY_LIMIT_MAX, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_BANDS:
			if (strcmp(arg, "1") == 0) {
				val[opt] = 1;
			} else if (strcmp(arg, "3") == 0) {
				val[opt] = 3;
			} else {
				bad("bands \"%s\" is not 1 or 3", arg);
				return -1;
			}
			break;
		case TCA_SOFTMQ_KEY:
			if (strcmp(arg, key_names[SOFTMQ_KEY_FLOW]) == 0) {
				val[opt] = SOFTMQ_KEY_FLOW;
			} else if (strcmp(arg, key_names[SOFTMQ_KEY_CPU]) == 0) {
				val[opt] = SOFTMQ_KEY_CPU;
			} else {
				bad("key \"%s\" is not flow or cpu", arg);
				return -1;
			}
			break;
		case TCA_SOFTMQ_TARGET:
		case TCA_SOFTMQ_INTERVAL:
			if (parse_time(word, arg, SOFTMQ_CODEL_TIME_MIN,
				       SOFTMQ_CODEL_TIME_MAX, false, &val[opt]))
				return -1;
			break;
		case TCA_SOFTMQ_CE_THRESHOLD:
			if (parse_time(word, arg, 0, SOFTMQ_CODEL_TIME_MAX, true,
				       &val[opt]))
				return -1;
			break;
		}
		seen[opt] = word;
	}

	/* NLA_F_NESTED as newer iproute2 qdiscs set it; softmq takes both. */
	tail = addattr_nest(n, SOFTMQ_ATTR_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (!tail)
		return -1;
	for (i = TCA_SOFTMQ_UNSPEC + 1; i <= TCA_SOFTMQ_MAX; i++)
		if (seen[i] && addattr_l(n, SOFTMQ_ATTR_MAXLEN, i, &val[i],
					 sizeof(val[i])))
			return -1;
	addattr_nest_end(n, tail);
	return 0;
}

/* Index a nested attribute block by type; later duplicates win. */
static void parse_nested(struct rtattr *tb[], int max, struct rtattr *nest)
{
	struct rtattr *rta = RTA_DATA(nest);
	int len = RTA_PAYLOAD(nest);

	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		unsigned short type = rta->rta_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = rta;
	}
}

static bool get_u32_attr(struct rtattr *tb[], int type, __u32 *v)
{
	if (!tb[type] || RTA_PAYLOAD(tb[type]) < sizeof(__u32))
		return false;
	memcpy(v, RTA_DATA(tb[type]), sizeof(*v));
	return true;
}

/* As tc prints sizes: 32Mb, 1500Kb, 4097b (JSON gets the bytes). */
static void print_bytes(const char *name, __u32 v)
{
	char text[64], buf[32];

	if (v >= (1U << 20) && !(v % (1U << 20)))
		snprintf(buf, sizeof(buf), "%uMb", v >> 20);
	else if (v >= 1024 && !(v % 1024))
		snprintf(buf, sizeof(buf), "%uKb", v >> 10);
	else
		snprintf(buf, sizeof(buf), "%ub", v);
	snprintf(text, sizeof(text), "%s %s ", name, buf);
	print_color_uint(PRINT_JSON, COLOR_NONE, name, NULL, v);
	print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s", text);
}

/* A time: "target 5ms " as text, the microseconds in JSON. */
static void print_usec(const char *name, __u32 us)
{
	char text[64], buf[16];

	sprint_usec(buf, sizeof(buf), us);
	snprintf(text, sizeof(text), "%s %s ", name, buf);
	print_color_uint(PRINT_JSON, COLOR_NONE, name, NULL, us);
	print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s", text);
}

/* Options in the order of the synopsis. */
static int softmq_print_opt(const struct qdisc_util *qu __unused,
			    FILE *f __unused, struct rtattr *opt)
{
	struct rtattr *tb[TCA_SOFTMQ_MAX + 1];
	char buf[16];
	__u32 v;

	if (!opt)
		return 0;
	parse_nested(tb, TCA_SOFTMQ_MAX, opt);

	if (get_u32_attr(tb, TCA_SOFTMQ_FLOWS, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "flows", "flows %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_DEPTH, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "depth", "depth %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_QUANTUM, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "quantum",
				 "quantum %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_BANDS, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "bands", "bands %u ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_KEY, &v)) {
		const char *name = buf;

		if (v <= SOFTMQ_KEY_MAX)
			name = key_names[v];
		else
			snprintf(buf, sizeof(buf), "%u", v);
		print_color_string(PRINT_ANY, COLOR_NONE, "key", "key %s ", name);
	}
	if (get_u32_attr(tb, TCA_SOFTMQ_LIMIT, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "limit", "limit %up ", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_MEMORY_LIMIT, &v))
		print_bytes("memory_limit", v);
	/* CoDel as fq_codel prints it; JSON has the times in usec. */
	if (get_u32_attr(tb, TCA_SOFTMQ_CODEL, &v)) {
		print_color_bool(PRINT_JSON, COLOR_NONE, "codel", NULL, v);
		if (!v)
			print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s",
					   "nocodel ");
	}
	if (get_u32_attr(tb, TCA_SOFTMQ_TARGET, &v))
		print_usec("target", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_INTERVAL, &v))
		print_usec("interval", v);
	if (get_u32_attr(tb, TCA_SOFTMQ_ECN, &v)) {
		print_color_bool(PRINT_JSON, COLOR_NONE, "ecn", NULL, v);
		if (v)
			print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s",
					   "ecn ");
	}
	if (get_u32_attr(tb, TCA_SOFTMQ_CE_THRESHOLD, &v) &&
	    v != SOFTMQ_CE_THRESHOLD_OFF)
		print_usec("ce_threshold", v);
	return 0;
}

/* Classes (rings) have no options of their own. */
static int softmq_print_copt(const struct qdisc_util *qu __unused,
			     FILE *f __unused, struct rtattr *opt __unused)
{
	return 0;
}

/*
 * One ring (tc -s class show), as fq_codel prints a flow; JSON always has
 * every key, text names dropping and new_flow only when they are set.
 */
static void print_class_xstats(const struct tc_softmq_class_xstats *cs)
{
	char text[64], buf[16];

	print_color_uint(PRINT_ANY, COLOR_NONE, "band", "  band %u", cs->band);
	print_color_uint(PRINT_ANY, COLOR_NONE, "index", " index %u",
			 cs->index);
	print_color_int(PRINT_ANY, COLOR_NONE, "deficit", " deficit %d",
			cs->deficit);
	print_color_uint(PRINT_ANY, COLOR_NONE, "count", " count %u",
			 cs->count);
	print_color_uint(PRINT_ANY, COLOR_NONE, "lastcount", " lastcount %u",
			 cs->lastcount);
	sprint_usec(buf, sizeof(buf), cs->ldelay);
	print_color_uint(PRINT_JSON, COLOR_NONE, "ldelay", NULL, cs->ldelay);
	print_color_string(PRINT_FP, COLOR_NONE, NULL, " ldelay %s", buf);
	print_color_bool(PRINT_JSON, COLOR_NONE, "dropping", NULL,
			 cs->dropping);
	print_color_int(PRINT_JSON, COLOR_NONE, "drop_next", NULL,
			cs->drop_next);
	if (cs->dropping) {
		/* -INT_MIN does not fit: its magnitude as unsigned */
		sprint_usec(buf, sizeof(buf), cs->drop_next < 0 ?
			    0U - (__u32)cs->drop_next : (__u32)cs->drop_next);
		snprintf(text, sizeof(text), " dropping drop_next %s%s",
			 cs->drop_next < 0 ? "-" : "", buf);
		print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s", text);
	}
	print_color_bool(PRINT_JSON, COLOR_NONE, "new_flow", NULL,
			 cs->new_flow);
	if (cs->new_flow)
		print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s",
				   " new_flow");
}

/*
 * tc calls this for the qdisc's xstats and for each class's: a block the
 * size of struct tc_softmq_class_xstats is a ring's.  In the qdisc's,
 * every field is printed, always, so scripts see the same keys on every
 * kernel.  A shorter block (a module built from an older header) reads as
 * zeros past its end, as tc does for fq_codel; a longer one is cut.
 */
static int softmq_print_xstats(const struct qdisc_util *qu __unused,
			       FILE *f __unused, struct rtattr *xstats)
{
	struct tc_softmq_class_xstats cs;
	struct tc_softmq_xstats st;
	size_t len;

	if (!xstats)
		return 0;
	len = RTA_PAYLOAD(xstats);
	if (len == sizeof(cs)) {
		memcpy(&cs, RTA_DATA(xstats), sizeof(cs));
		print_class_xstats(&cs);
		return 0;
	}
	memset(&st, 0, sizeof(st));
	memcpy(&st, RTA_DATA(xstats), len < sizeof(st) ? len : sizeof(st));

#define U64(field, fmt) \
	print_color_u64(PRINT_ANY, COLOR_NONE, #field, fmt, st.field)
#define U32(field, fmt) \
	print_color_uint(PRINT_ANY, COLOR_NONE, #field, fmt, st.field)
	U64(drops_ring_full,	"  drops_ring_full %" PRIu64);
	U64(drops_nomem,	" drops_nomem %" PRIu64);
	U64(push_retries,	" push_retries %" PRIu64);
	U64(ring_wakeups,	" ring_wakeups %" PRIu64);
	U64(busy_skips,		" busy_skips %" PRIu64);
	U64(bypassed,		" bypassed %" PRIu64);
	print_nl();
	U32(active_rings,	"  active_rings %u");
	U32(allocated_rings,	" allocated_rings %u");
	U32(ring_hiwat,		" ring_hiwat %u");
	U32(draining,		" draining %u");
	U64(reconfigs,		" reconfigs %" PRIu64);
	print_nl();
	U64(drop_overlimit,	"  drop_overlimit %" PRIu64);
	U64(drop_overmemory,	" drop_overmemory %" PRIu64);
	U64(memory_usage,	" memory_usage %" PRIu64);
	print_nl();
	U64(codel_drops,	"  codel_drops %" PRIu64);
	U32(maxpacket,		" maxpacket %u");
	U32(ecn_mark,		" ecn_mark %u");
	U32(ce_mark,		" ce_mark %u");
	U32(new_flow_count,	" new_flow_count %u");
	print_nl();
	U32(new_flows_len,	"  new_flows_len %u");
	U32(old_flows_len,	" old_flows_len %u");
	U64(spilled,		" spilled %" PRIu64);
#undef U64
#undef U32
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
