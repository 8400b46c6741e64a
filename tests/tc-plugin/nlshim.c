// SPDX-License-Identifier: GPL-2.0
/*
 * nlshim.so - LD_PRELOAD shim for testing q_softmq.so with a real tc binary
 * on a host whose kernel has no softmq (or cannot load modules at all).
 *
 * It sits between tc and its rtnetlink socket:
 *
 *   NLSHIM_LOG=FILE    append one line per netlink message tc sends (any
 *                      type), e.g. "send type=36 flags=0x0605 kind=softmq
 *                      nested=1 opts=1:1024,3:1536" (nested: NLA_F_NESTED
 *                      on TCA_OPTIONS).  An empty log after a command
 *                      proves tc sent the kernel nothing.
 *   NLSHIM_FAKE_ACK=1  RTM_NEWQDISC / RTM_DELQDISC are logged but not sent;
 *                      tc gets a success ACK.  The kernel's state is never
 *                      touched.
 *   NLSHIM_DUMP=FILE   an RTM_GETQDISC dump is answered with the netlink
 *                      messages stored in FILE (made by mkmsg.py) followed by
 *                      NLMSG_DONE, so `tc [-s] [-j] qdisc show` prints softmq
 *                      qdiscs through the plugin.
 *   NLSHIM_CLASS_DUMP=FILE  the same for an RTM_GETTCLASS dump (`tc -s
 *                      class show`).
 *
 * Everything else (RTM_GETLINK for device names, ...) reaches the kernel
 * unchanged.  Only test code: never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define MAX_FD	1024

struct pending {
	char *buf;
	size_t len;
};

static struct pending pending[MAX_FD];

static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int,
			      const struct sockaddr *, socklen_t);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *,
				socklen_t *);

static void resolve(void)
{
	if (real_sendmsg)
		return;
	real_sendmsg = dlsym(RTLD_NEXT, "sendmsg");
	real_sendto = dlsym(RTLD_NEXT, "sendto");
	real_recvmsg = dlsym(RTLD_NEXT, "recvmsg");
	real_recvfrom = dlsym(RTLD_NEXT, "recvfrom");
}

static int nl_pid_of(int fd, __u32 *pid)
{
	struct sockaddr_nl sa;
	socklen_t len = sizeof(sa);

	if (fd < 0 || fd >= MAX_FD)
		return -1;
	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    sa.nl_family != AF_NETLINK)
		return -1;
	*pid = sa.nl_pid;
	return 0;
}

static void logf_(const char *fmt, ...)
{
	const char *path = getenv("NLSHIM_LOG");
	va_list ap;
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void log_msg(const struct nlmsghdr *h)
{
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "send type=%u flags=0x%04x",
		     h->nlmsg_type, h->nlmsg_flags);
	if ((h->nlmsg_type == RTM_NEWQDISC || h->nlmsg_type == RTM_DELQDISC) &&
	    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct tcmsg))) {
		const struct tcmsg *t = NLMSG_DATA(h);
		struct rtattr *rta = TCA_RTA(t);
		int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*t));

		n += snprintf(line + n, sizeof(line) - n, " parent=0x%x",
			      t->tcm_parent);
		for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
			if (rta->rta_type == TCA_KIND) {
				n += snprintf(line + n, sizeof(line) - n,
					      " kind=%.*s",
					      (int)RTA_PAYLOAD(rta),
					      (char *)RTA_DATA(rta));
			} else if ((rta->rta_type & NLA_TYPE_MASK) ==
				   TCA_OPTIONS) {
				struct rtattr *o = RTA_DATA(rta);
				int olen = RTA_PAYLOAD(rta);
				const char *sep = "";

				n += snprintf(line + n, sizeof(line) - n,
					      " nested=%d opts=",
					      !!(rta->rta_type & NLA_F_NESTED));
				for (; RTA_OK(o, olen); o = RTA_NEXT(o, olen)) {
					__u32 v = 0;

					if (RTA_PAYLOAD(o) == sizeof(v))
						memcpy(&v, RTA_DATA(o), sizeof(v));
					n += snprintf(line + n, sizeof(line) - n,
						      "%s%u:%u", sep,
						      o->rta_type, v);
					if (RTA_PAYLOAD(o) != sizeof(v))
						n += snprintf(line + n,
							      sizeof(line) - n,
							      "(len%u)",
							      (unsigned int)RTA_PAYLOAD(o));
					sep = ",";
				}
			}
			if (n >= (int)sizeof(line))
				break;
		}
	}
	logf_("%s\n", line);
}

static void queue(int fd, const void *data, size_t len)
{
	char *nb = realloc(pending[fd].buf, pending[fd].len + len);

	if (!nb)
		abort();
	memcpy(nb + pending[fd].len, data, len);
	pending[fd].buf = nb;
	pending[fd].len += len;
}

/* The header of a reply to req. */
static void reply_hdr(struct nlmsghdr *h, __u32 len, __u16 type, __u16 flags,
		      const struct nlmsghdr *req, __u32 pid)
{
	h->nlmsg_len = len;
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = req->nlmsg_seq;
	h->nlmsg_pid = pid;
}

static void queue_ack(int fd, const struct nlmsghdr *req, __u32 pid)
{
	struct {
		struct nlmsghdr h;
		struct nlmsgerr e;
	} ack;

	memset(&ack, 0, sizeof(ack));
	reply_hdr(&ack.h, sizeof(ack), NLMSG_ERROR, NLM_F_CAPPED, req, pid);
	ack.e.error = 0;
	ack.e.msg = *req;
	queue(fd, &ack, sizeof(ack));
}

static void queue_dump(int fd, const struct nlmsghdr *req, __u32 pid,
		       const char *path)
{
	struct {
		struct nlmsghdr h;
		int err;
	} done;
	char *data = NULL;
	size_t len = 0, off;
	FILE *f = fopen(path, "rb");

	if (f) {
		char chunk[4096];
		size_t r;

		while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) {
			data = realloc(data, len + r);
			if (!data)
				abort();
			memcpy(data + len, chunk, r);
			len += r;
		}
		fclose(f);
	} else {
		fprintf(stderr, "nlshim: cannot open %s\n", path);
	}
	for (off = 0; off + sizeof(struct nlmsghdr) <= len;) {
		struct nlmsghdr *h = (struct nlmsghdr *)(data + off);
		size_t l = NLMSG_ALIGN(h->nlmsg_len);

		if (h->nlmsg_len < sizeof(*h) || off + l > len)
			break;
		h->nlmsg_seq = req->nlmsg_seq;
		h->nlmsg_pid = pid;
		h->nlmsg_flags |= NLM_F_MULTI;
		off += l;
	}
	queue(fd, data, off);
	free(data);

	memset(&done, 0, sizeof(done));
	reply_hdr(&done.h, sizeof(done), NLMSG_DONE, NLM_F_MULTI, req, pid);
	queue(fd, &done, sizeof(done));
}

/* Log every message; return 1 when the shim answers instead of the kernel. */
static int intercept(int fd, const char *buf, size_t len)
{
	const char *dump = getenv("NLSHIM_DUMP");
	const char *cdump = getenv("NLSHIM_CLASS_DUMP");
	const char *fake = getenv("NLSHIM_FAKE_ACK");
	size_t off;
	int handled = 0;
	__u32 pid;

	if (nl_pid_of(fd, &pid))
		return 0;
	for (off = 0; off + sizeof(struct nlmsghdr) <= len;) {
		const struct nlmsghdr *h = (const void *)(buf + off);

		if (h->nlmsg_len < sizeof(*h) || off + h->nlmsg_len > len)
			break;
		log_msg(h);
		if (fake && *fake && (h->nlmsg_type == RTM_NEWQDISC ||
				      h->nlmsg_type == RTM_DELQDISC)) {
			queue_ack(fd, h, pid);
			handled = 1;
		} else if (dump && *dump && h->nlmsg_type == RTM_GETQDISC) {
			queue_dump(fd, h, pid, dump);
			handled = 1;
		} else if (cdump && *cdump && h->nlmsg_type == RTM_GETTCLASS) {
			queue_dump(fd, h, pid, cdump);
			handled = 1;
		}
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	return handled;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	size_t total = 0, i;
	char *flat;
	ssize_t ret;

	resolve();
	for (i = 0; i < msg->msg_iovlen; i++)
		total += msg->msg_iov[i].iov_len;
	flat = malloc(total ? total : 1);
	if (!flat)
		abort();
	for (total = 0, i = 0; i < msg->msg_iovlen; i++) {
		memcpy(flat + total, msg->msg_iov[i].iov_base,
		       msg->msg_iov[i].iov_len);
		total += msg->msg_iov[i].iov_len;
	}
	if (intercept(fd, flat, total))
		ret = (ssize_t)total;
	else
		ret = real_sendmsg(fd, msg, flags);
	free(flat);
	return ret;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	resolve();
	if (intercept(fd, buf, len))
		return (ssize_t)len;
	return real_sendto(fd, buf, len, flags, to, tolen);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return sendto(fd, buf, len, flags, NULL, 0);
}

static void fill_peer(struct sockaddr *addr, socklen_t *alen)
{
	struct sockaddr_nl kernel;

	if (!addr || !alen)
		return;
	memset(&kernel, 0, sizeof(kernel));
	kernel.nl_family = AF_NETLINK;
	memcpy(addr, &kernel, *alen < sizeof(kernel) ? *alen : sizeof(kernel));
	*alen = sizeof(kernel);
}

/* Serve the queued answer as one datagram, honouring PEEK and TRUNC. */
static ssize_t serve(int fd, struct iovec *iov, size_t iovlen, int flags,
		     int *msg_flags)
{
	struct pending *p = &pending[fd];
	size_t copied = 0, i, len = p->len;

	for (i = 0; i < iovlen && copied < len; i++) {
		size_t n = len - copied;

		if (n > iov[i].iov_len)
			n = iov[i].iov_len;
		memcpy(iov[i].iov_base, p->buf + copied, n);
		copied += n;
	}
	if (msg_flags)
		*msg_flags = copied < len ? MSG_TRUNC : 0;
	if (!(flags & MSG_PEEK)) {
		free(p->buf);
		p->buf = NULL;
		p->len = 0;
	}
	return (flags & MSG_TRUNC) ? (ssize_t)len : (ssize_t)copied;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	resolve();
	if (fd >= 0 && fd < MAX_FD && pending[fd].len) {
		fill_peer(msg->msg_name, &msg->msg_namelen);
		msg->msg_controllen = 0;
		return serve(fd, msg->msg_iov, msg->msg_iovlen, flags,
			     &msg->msg_flags);
	}
	return real_recvmsg(fd, msg, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	resolve();
	if (fd >= 0 && fd < MAX_FD && pending[fd].len) {
		struct iovec iov = { .iov_base = buf, .iov_len = len };

		fill_peer(from, fromlen);
		return serve(fd, &iov, 1, flags, NULL);
	}
	return real_recvfrom(fd, buf, len, flags, from, fromlen);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}
