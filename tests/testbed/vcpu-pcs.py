#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Where each vCPU of a hung guest is: vm.sh runs this when the guest
reports a long soft lockup, before it kills the VM.

    vcpu-pcs.py MONITOR_SOCKET SYMBOLS STEXT [SAMPLES]

Asks QEMU's human monitor for "info registers -a" SAMPLES times (default
5, 0.5 s apart), takes each CPU's program counter (RIP, EIP or PC) and
names it from SYMBOLS ("addr type name" lines: the guest's /proc/kallsyms
text symbols, or a System.map), shifted by the KASLR offset that STEXT
gives when SYMBOLS is a System.map (the boot's _stext, a hex address;
empty for kallsyms, whose addresses are the boot's).  Prints one line per CPU: "CPU#N: sym+0xoff (k/n)" for each
distinct place, most frequent first.  A PC outside the kernel image is
printed as "module or user ADDRESS": System.map does not know modules.
"""
import bisect
import re
import socket
import sys
import time


def monitor(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    buf = b""

    def until_prompt():
        nonlocal buf
        while not buf.rstrip().endswith(b"(qemu)"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        out, buf = buf, b""
        return out.decode(errors="replace")

    until_prompt()
    s.sendall(cmd.encode() + b"\n")
    out = until_prompt()
    s.close()
    return out


def load_map(path):
    addrs, names = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                addrs.append(int(parts[0], 16))
                names.append(parts[2])
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def main():
    sock, smap, stext = sys.argv[1], sys.argv[2], sys.argv[3]
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    addrs, names = load_map(smap)
    if not addrs:
        print("no text symbols in %s" % smap)
        return 1
    offset = 0
    # all zeros: kptr_restrict hid it; then no offset is known
    if stext and int(stext, 16):
        try:
            offset = int(stext, 16) - addrs[names.index("_stext")]
        except ValueError:
            offset = 0
    end = next((a for a, n in zip(addrs, names) if n == "_etext"), addrs[-1])
    seen = {}
    for _ in range(samples):
        out = monitor(sock, "info registers -a")
        cpu = None
        for line in out.splitlines():
            m = re.match(r"\s*CPU#(\d+)", line)
            if m:
                cpu = int(m.group(1))
            m = re.search(r"\b(?:RIP|EIP|PC)=([0-9a-fA-F]+)", line)
            if m and cpu is not None:
                pc = int(m.group(1), 16) - offset
                if addrs[0] <= pc < end:
                    i = bisect.bisect_right(addrs, pc) - 1
                    where = "%s+0x%x" % (names[i], pc - addrs[i])
                else:
                    where = "module or user %x" % (pc + offset)
                seen.setdefault(cpu, []).append(where)
                cpu = None
        time.sleep(0.5)
    for cpu in sorted(seen):
        places = seen[cpu]
        counts = sorted(set(places), key=lambda p: -places.count(p))
        print("CPU#%d: %s" % (cpu, ", ".join(
            "%s (%d/%d)" % (p, places.count(p), len(places)) for p in counts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
