#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stage 2 of the guest (PID 1 after switch_root; the root is the host's /
# read-only with a tmpfs overlay).  Sets up the system, reads the run's
# settings from $softmq_results/guest.env (written by vm.sh), then runs the
# harness over the selected tests (or an interactive shell) and powers off.
{ # parsed whole before it runs: editing this file cannot break a running copy
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=${TERM:-linux}

poweroff_now() {
	sync
	echo o > /proc/sysrq-trigger
	# The power-off takes the 9p root away under us: a sleep loaded
	# from it then fails with EIO, which is no error of the run.
	sleep 60 2>/dev/null
}
trap poweroff_now EXIT

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
# /tmp stays the overlay's (its writes land in the tmpfs upper layer): a
# fresh tmpfs here would hide a checkout or results dir under the host's
# /tmp, and `git clone ... /tmp/softmq && make demo` must work.
chmod 1777 /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ln -sf /proc/self/fd /dev/fd 2>/dev/null
ln -sf /proc/self/fd/0 /dev/stdin; ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
hostname softmq-vm
ip link set lo up
echo 1 > /proc/sys/kernel/sysrq

# The first skb flow hash of a boot initializes the hash secret with
# net_get_random_once(), whose static key is then switched off by
# text_poke_bp(): int3 patching.  Under multi-threaded TCG a vCPU running
# __skb_get_hash_net() at that moment can execute the int3 after the patch
# is done ("Oops: int3" at __skb_get_hash_net, seen on 6.12 with pktgen on
# both vCPUs in 40-default-qdisc).  A QEMU artifact, not a kernel or
# softmq bug: take that first hash here, one CPU busy, and let the work
# that flips the key run before any test.  (An ARP request through a
# 2-queue device: netdev_pick_tx() hashes it.)
if ip link add smq_hash0 numtxqueues 2 type dummy 2>/dev/null; then
	ip link set smq_hash0 up
	ip addr add 198.18.254.1/24 dev smq_hash0
	ping -c 1 -W 1 198.18.254.2 > /dev/null 2>&1
	sleep 1
	ip link del smq_hash0
fi
# The same race on netstamp_needed_key: probe.py's SO_TIMESTAMPNS tap
# turns it on and, when it closes, off again, while pktgen runs on the
# other vCPU ("Oops: int3" at __netif_receive_skb_core on 7.2-rt in
# 64-churn-link).  Hold one timestamping socket open for the whole boot
# so the key is switched once, here.  bench/guest.sh stops it: the
# bench measures the path without receive timestamps.
python3 -c 'import signal, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
signal.pause()' &
echo $! > /run/softmq-tstamp-hold.pid
sleep 1

# shellcheck disable=SC1091
. "$softmq_results/guest.env" || { echo "SOFTMQ-GUEST-FAILED: no guest.env"; exit 1; }
cd "$SOFTMQ_REPO" || exit 1
# vm.sh names a hung vCPU's place from the kernel's text symbols as they
# are in this boot (Debian's System.map is a stub pointing at the -dbg
# package; kallsyms has the KASLR offset applied)
awk '$2 ~ /^[tTwW]$/ && NF == 3' /proc/kallsyms > "$SOFTMQ_RESULTS_ROOT/kallsyms"
# vm.sh --maxcpus: CPUs from SOFTMQ_SMP on go offline (nr_cpu_ids stays).
cpu=${SOFTMQ_SMP:-0}
while [ "$cpu" -lt "${SOFTMQ_MAXCPUS:-0}" ]; do
	echo 0 > "/sys/devices/system/cpu/cpu$cpu/online" ||
		{ echo "SOFTMQ-GUEST-FAILED: cpu$cpu would not go offline"; exit 1; }
	cpu=$((cpu + 1))
done
echo "softmq-vm: $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB"
echo "SOFTMQ-GUEST-READY"

if [ "${SOFTMQ_VM_MODE:-test}" = shell ]; then
	cat <<EOF
softmq test bed shell on $SOFTMQ_LINE ($(uname -r)).  Env: SOFTMQ_KO=$SOFTMQ_KO
  TC_LIB_DIR=$TC_LIB_DIR  SOFTMQ_TC615=$SOFTMQ_TC615
  Run a test: tests/testbed/harness.sh tests/vm/NAME.sh    Exit the shell to power off.
EOF
	setsid -c /bin/bash -i < "/dev/${SOFTMQ_CONSOLE:-ttyS0}" > "/dev/${SOFTMQ_CONSOLE:-ttyS0}" 2>&1
	exit 0
fi

# shellcheck disable=SC2086
"$SOFTMQ_REPO/tests/testbed/harness.sh" --results "$SOFTMQ_RESULTS_ROOT" $SOFTMQ_VM_TESTS
rc=$?
echo "SOFTMQ-GUEST-DONE rc=$rc"
exit 0
exit
}
