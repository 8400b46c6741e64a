#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""flood.py - keep a device's qdisc busy: UDP from N processes until killed.

  flood.py DEV PREFIX [--procs N] [--flows F]

Each process sends to PREFIX.x.y (a /16 routed out of DEV, e.g. 198.18),
port 9, from F source ports, with random priorities (all three bands), and
ignores send errors (ENOBUFS from a full qdisc, ENETDOWN while the link is
down): meant for devices that go down and up under it, where pktgen stops.
"""
import argparse
import os
import random
import signal
import socket
import sys
import time


def sender(dev, prefix, flows, seed):
    rng = random.Random(seed)
    socks = []
    for _ in range(min(flows, 64)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, 25, dev.encode())   # SO_BINDTODEVICE
        s.setblocking(False)
        socks.append(s)
    payload = b"f" * 200
    while True:
        s = rng.choice(socks)
        try:
            s.setsockopt(socket.SOL_SOCKET, 12, rng.randrange(8))   # SO_PRIORITY
            for _ in range(16):
                s.sendto(payload, ("%s.%d.%d" % (prefix, rng.randrange(256),
                                                 rng.randrange(1, 255)), 9))
        except OSError:
            time.sleep(0.001)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev")
    ap.add_argument("prefix")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--flows", type=int, default=64)
    a = ap.parse_args()
    kids = []
    for i in range(a.procs):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                sender(a.dev, a.prefix, a.flows, i)
            finally:
                os._exit(0)
        kids.append(pid)

    def stop(*_):
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        for k in kids:
            try:
                os.waitpid(k, 0)
            except OSError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
