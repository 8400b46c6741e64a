#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""probe.py - does a packet still leave through DEV's qdisc, and how fast?

  probe.py DEV DST [--limit-ms 10] [--tries 3] [--wait-ms 1000]

Sends one marked UDP datagram to DST (port 9) out of DEV and waits for it
on DEV's transmit tap (AF_PACKET, outgoing): the tap sees a packet after
the qdisc released it, just before the driver gets it.  The latency is the
tap's kernel timestamp minus the time just before sendto(), so a slow
wake-up of this process does not count.  Repeats TRIES times.

Prints "probe DEV: best X ms, worst Y ms, lost N"; exits 0 when every probe
left within --wait-ms and the best one within --limit-ms, else 1.
"""
import argparse
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
    lat, lost = [], 0
    for i in range(a.tries):
        marker = b"softmq-probe-" + os.urandom(8).hex().encode()
        t_send = time.clock_gettime(time.CLOCK_REALTIME)
        try:
            tx.sendto(marker, (a.dst, 9))
        except OSError as e:
            print("probe %s: sendto: %s" % (a.dev, e))
            lost += 1
            continue
        deadline = time.monotonic() + a.wait_ms / 1000.0
        got = None
        while got is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([tap], [], [], left)[0]:
                break
            data, anc, _, addr = tap.recvmsg(65536, 256)
            if addr[2] != PACKET_OUTGOING or marker not in data:
                continue
            for lvl, typ, val in anc:
                if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("=qq", val[:16])
                    got = sec + nsec / 1e9
            if got is None:
                got = time.clock_gettime(time.CLOCK_REALTIME)
        if got is None:
            lost += 1
        else:
            lat.append(max(0.0, (got - t_send) * 1000.0))
        time.sleep(0.05)
    if lat:
        print("probe %s: best %.2f ms, worst %.2f ms, lost %d of %d" %
              (a.dev, min(lat), max(lat), lost, a.tries))
    else:
        print("probe %s: lost %d of %d" % (a.dev, lost, a.tries))
    return 0 if not lost and lat and min(lat) <= a.limit_ms else 1


if __name__ == "__main__":
    sys.exit(main())
