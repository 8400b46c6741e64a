// SPDX-License-Identifier: GPL-2.0
/*
 * udpsend: the real-socket load of `make bench`.
 *
 * Forks one sender per CPU (pinned), each with its own UDP socket bound to
 * the same source port (SO_REUSEPORT), so "flows F" means F 5-tuples shared
 * by all senders: the destination address walks F consecutive IPv4
 * addresses from BASE, ports fixed.  Every sender first sends WARM datagrams
 * (not measured), then all start together behind a pipe barrier and each
 * sends until COUNT datagrams were accepted.  IP_RECVERR makes a qdisc drop
 * visible to sendto() as ENOBUFS; those are counted as drops and retried
 * (like pktgen, which counts them as errors and sends until COUNT).
 *
 *   udpsend -n SENDERS -c COUNT -f FLOWS -b BASE -p PORT [-w WARM] [-s SIZE]
 *           [-g SEGS] [-B SNDBUF] [-D MS] [-M]
 *
 * SIZE is the Ethernet frame size without FCS (default 64: 22 byte payload).
 * -g SEGS: each send carries SEGS such frames' payloads as one UDP GSO skb
 * (UDP_SEGMENT: the stack and the qdisc see one skb, segmented after the
 * qdisc where the device has no GSO); COUNT and WARM then count skbs.
 * -B SNDBUF: the socket's send buffer (SO_SNDBUFFORCE: root, past
 * wmem_max), which bounds how many of a sender's skbs can be queued.
 * -D MS: after the warm-up and after the measured sends, wait MS ms (the
 * device's drain of what is queued).  -M: with one sender, mark the
 * measured phase for MODE=profile's plugin (bench/insn-profile.c): a write
 * of 4 to /proc/sys/vm/drop_caches right before the measured sends and one
 * after the -D wait, so that the process's fork, exec and exit fall
 * outside the window.
 * Prints one JSON object: totals, and per sender start/end (CLOCK_MONOTONIC
 * ns), sent, drops.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct res {
	uint64_t start, end, sent, drops, other;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Send until @count accepted; ENOBUFS (qdisc drop) counts and retries. */
static void blast(int fd, uint32_t base, unsigned int flows, uint16_t port,
		  size_t len, uint64_t count, struct res *r)
{
	static char buf[65536];
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint64_t i = 0, attempts = 0, cap = count * 16 + 1000;

	while (r->sent < count && attempts++ < cap) {
		dst.sin_addr.s_addr = htonl(base + (uint32_t)(i % flows));
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&dst, sizeof(dst)) >= 0) {
			r->sent++;
			i++;
		} else if (errno == ENOBUFS || errno == EAGAIN) {
			r->drops++;
			i++;
		} else if (errno == EINTR) {
			continue;
		} else {
			r->other++;
			i++;
			if (r->other > 1000)
				die("sendto");
		}
	}
}

/* -M: the plugin's phase mark (bench/guest.sh's profile_mark) */
static void profile_mark(void)
{
	FILE *f = fopen("/proc/sys/vm/drop_caches", "w");

	if (!f || fputs("4\n", f) == EOF || fclose(f))
		die("/proc/sys/vm/drop_caches");
}

static void drain_wait(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (ms && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	unsigned int senders = 1, flows = 1, port = 9, size = 64, segs = 1;
	unsigned int drain_ms = 0, mark = 0;
	uint64_t count = 10000, warm = 0;
	int sndbuf = 0;
	const char *basestr = "198.19.0.0";
	int ready[2], go[2], out[2], opt;
	struct in_addr base;
	unsigned int k;

	while ((opt = getopt(argc, argv, "n:c:f:b:p:w:s:g:B:D:M")) != -1) {
		switch (opt) {
		case 'n': senders = strtoul(optarg, NULL, 0); break;
		case 'c': count = strtoull(optarg, NULL, 0); break;
		case 'f': flows = strtoul(optarg, NULL, 0); break;
		case 'b': basestr = optarg; break;
		case 'p': port = strtoul(optarg, NULL, 0); break;
		case 'w': warm = strtoull(optarg, NULL, 0); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'g': segs = strtoul(optarg, NULL, 0); break;
		case 'B': sndbuf = (int)strtoul(optarg, NULL, 0); break;
		case 'D': drain_ms = strtoul(optarg, NULL, 0); break;
		case 'M': mark = 1; break;
		default:
			fprintf(stderr, "usage: %s -n SENDERS -c COUNT -f FLOWS -b BASE -p PORT [-w WARM] [-s SIZE]\n"
				"       [-g SEGS] [-B SNDBUF] [-D MS] [-M]\n", argv[0]);
			return 2;
		}
	}
	/* 64 segments at most (the kernel's UDP_MAX_SEGMENTS), 65507 bytes */
	if (!senders || !flows || size < 42 || size > 1514 || !segs || segs > 64 ||
	    (segs > 1 && size == 42) ||
	    (uint64_t)segs * (size - 42) > 65507 || sndbuf < 0 ||
	    (mark && senders != 1) || inet_pton(AF_INET, basestr, &base) != 1) {
		fprintf(stderr, "udpsend: bad arguments\n");
		return 2;
	}
	if (pipe(ready) || pipe(go) || pipe(out))
		die("pipe");

	for (k = 0; k < senders; k++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			struct sockaddr_in src = { .sin_family = AF_INET,
						   .sin_port = htons(port) };
			struct res r = { 0 }, w = { 0 };
			int one = 1, fd;
			cpu_set_t set;
			char c;

			/* Only the parent may hold these ends, or EOF never comes. */
			close(go[1]);
			close(ready[0]);
			close(out[0]);
			CPU_ZERO(&set);
			CPU_SET(k, &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				die("sched_setaffinity");
			fd = socket(AF_INET, SOCK_DGRAM, 0);
			if (fd < 0)
				die("socket");
			if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
			    setsockopt(fd, SOL_IP, IP_RECVERR, &one, sizeof(one)))
				die("setsockopt");
			if (segs > 1) {
				int gso = (int)size - 42;

				if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso, sizeof(gso)))
					die("UDP_SEGMENT");
			}
			if (sndbuf && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE,
						 &sndbuf, sizeof(sndbuf)))
				die("SO_SNDBUFFORCE");
			if (bind(fd, (struct sockaddr *)&src, sizeof(src)))
				die("bind");
			if (warm) {
				blast(fd, ntohl(base.s_addr), flows, port,
				      segs * (size - 42), warm, &w);
				drain_wait(drain_ms);
			}
			if (write(ready[1], "r", 1) != 1)
				die("write");
			if (read(go[0], &c, 1) < 0)	/* EOF: go */
				die("read");
			if (mark)
				profile_mark();
			r.start = now_ns();
			blast(fd, ntohl(base.s_addr), flows, port,
			      segs * (size - 42), count, &r);
			r.end = now_ns();
			drain_wait(drain_ms);
			if (mark)
				profile_mark();
			if (write(out[1], &r, sizeof(r)) != sizeof(r))
				die("write");
			_exit(0);
		}
	}
	close(ready[1]);
	close(go[0]);
	close(out[1]);
	for (k = 0; k < senders; k++) {
		char c;

		if (read(ready[0], &c, 1) != 1) {
			fprintf(stderr, "udpsend: a sender died before the start\n");
			return 1;
		}
	}
	close(go[1]);	/* everyone starts */

	{
		struct res r[256], tot = { .start = UINT64_MAX };
		unsigned int n = 0;

		while (n < senders && n < 256 &&
		       read(out[0], &r[n], sizeof(r[n])) == sizeof(r[n])) {
			if (r[n].start < tot.start)
				tot.start = r[n].start;
			if (r[n].end > tot.end)
				tot.end = r[n].end;
			tot.sent += r[n].sent;
			tot.drops += r[n].drops;
			tot.other += r[n].other;
			n++;
		}
		while (wait(NULL) > 0)
			;
		if (n != senders) {
			fprintf(stderr, "udpsend: %u of %u senders reported\n", n, senders);
			return 1;
		}
		printf("{\"senders\":%u,\"sent\":%llu,\"drops\":%llu,\"errors\":%llu,\"elapsed_ns\":%llu,\"per_sender\":[",
		       senders, (unsigned long long)tot.sent,
		       (unsigned long long)tot.drops, (unsigned long long)tot.other,
		       (unsigned long long)(tot.end - tot.start));
		for (k = 0; k < n; k++)
			printf("%s{\"sent\":%llu,\"drops\":%llu,\"ns\":%llu}", k ? "," : "",
			       (unsigned long long)r[k].sent,
			       (unsigned long long)r[k].drops,
			       (unsigned long long)(r[k].end - r[k].start));
		printf("]}\n");
	}
	return 0;
}
