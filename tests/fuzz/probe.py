#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""probe.py - does a packet still leave through DEV's qdisc, and how fast?

  probe.py DEV DST [--limit-ms 10] [--tries 3] [--wait-ms 1000]

Sends one marked UDP datagram to DST (port 9) out of DEV and waits for it
on DEV's transmit tap (AF_PACKET, outgoing): the tap sees a packet after
the qdisc released it, just before the driver gets it.  The latency is the
tap's kernel timestamp minus the time just before sendto(), so a slow
wake-up of this process does not count.  Repeats TRIES times.

The socket has IP_RECVERR, so a packet the qdisc drops fails sendto()
with ENOBUFS instead of vanishing (UDP hides it otherwise); such a send is
retried every 50 ms, 2 s at most (an ECONNREFUSED is the previous probe's
ICMP reply: sent again).  A probe not seen within --wait-ms is either stuck
in the qdisc -- then the qdisc run of the next send releases it and it
shows up late: that fails -- or it never left at all, which is what the
core's noop qdisc does (silently, NET_XMIT_CN) between a link flap and
linkwatch's dev_activate(), up to a second later: then another probe is
sent (5 more at most).

Prints "probe DEV: best X ms, worst Y ms, N of M left in time[, why]";
exits 0 when TRIES probes left within --wait-ms, none was stuck, no send
failed and the best one left within --limit-ms, else 1.
"""
import argparse
import errno
import os
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SO_BINDTODEVICE = 25
IP_RECVERR = 11


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev")
    ap.add_argument("dst")
    ap.add_argument("--limit-ms", type=float, default=10.0)
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--wait-ms", type=float, default=1000.0)
    a = ap.parse_args()

    tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    tap.bind((a.dev, ETH_P_ALL))
    tap.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, a.dev.encode())
    tx.setsockopt(socket.SOL_IP, IP_RECVERR, 1)
    lat, errors, refused = [], 0, 0
    unseen = {}     # marker -> send time of a probe not seen in time
    late = []       # ms after which an unseen probe did leave

    def stamp(anc):
        for lvl, typ, val in anc:
            if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                # a native struct timespec (32-bit longs on i386)
                sec, nsec = struct.unpack("@ll", val[:struct.calcsize("@ll")])
                return sec + nsec / 1e9
        return time.clock_gettime(time.CLOCK_REALTIME)

    def watch(marker, seconds):
        """Read the tap until MARKER leaves (its timestamp) or SECONDS pass;
        an earlier unseen probe that leaves meanwhile goes to late."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([tap], [], [], left)[0]:
                return None
            data, anc, _, addr = tap.recvmsg(65536, 256)
            if addr[2] != PACKET_OUTGOING or b"softmq-probe-" not in data:
                continue
            if marker is not None and marker in data:
                return stamp(anc)
            for m in list(unseen):
                if m in data:
                    late.append((stamp(anc) - unseen.pop(m)) * 1000.0)

    probes, sent = a.tries, 0
    while sent < probes:
        sent += 1
        marker = b"softmq-probe-" + os.urandom(8).hex().encode()
        for attempt in range(41):
            t_send = time.clock_gettime(time.CLOCK_REALTIME)
            try:
                tx.sendto(marker, (a.dst, 9))
                err = None
            except OSError as e:
                err = e
            if err is not None and err.errno == errno.ECONNREFUSED:
                continue    # the previous probe's ICMP reply, not this send
            if err is None or err.errno != errno.ENOBUFS or attempt == 40:
                break
            refused += 1
            time.sleep(0.05)
        if err is not None:
            print("probe %s: sendto: %s" % (a.dev, err))
            errors += 1
            continue
        got = watch(marker, a.wait_ms / 1000.0)
        if got is None:
            # Stuck in the qdisc (the next send's qdisc run releases it:
            # watch() sees it late), or gone before the qdisc.  One more
            # probe tells which.
            unseen[marker] = t_send
            if probes < a.tries + 5:
                probes += 1
        else:
            lat.append(max(0.0, (got - t_send) * 1000.0))
        time.sleep(0.05)
    watch(None, 0.3)

    vanished = len(unseen)
    notes = []
    if refused:
        notes.append("%d sends refused (ENOBUFS) and retried" % refused)
    if vanished:
        notes.append("%d never left (dropped before the qdisc: the noop qdisc "
                     "while linkwatch activates the device?) and were sent again"
                     % vanished)
    if late:
        notes.append("%d STUCK: left only after a later send, %s ms" %
                     (len(late), ", ".join("%.0f" % x for x in late)))
    why = "".join(", " + n for n in notes)
    if lat:
        print("probe %s: best %.2f ms, worst %.2f ms, %d of %d left in time%s" %
              (a.dev, min(lat), max(lat), len(lat), sent, why))
    else:
        print("probe %s: none of %d left in time%s" % (a.dev, sent, why))
    good = (not errors and not late and len(lat) >= a.tries and
            min(lat) <= a.limit_ms)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
