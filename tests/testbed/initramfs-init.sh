#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# /init of the test bed's initramfs (busybox).  Mounts the host's / read-only
# over 9p with a tmpfs overlay on top, the results dir read-write at its host
# path, this kernel's modules at /lib/modules/<abi>, then switch_root and
# runs tests/testbed/guest.sh from the host's tree.
#
# A foreign-architecture guest (vm.sh on a cross line) gets its own root as
# "hostroot" and the host's / as "hostfs", from which the dirs named in
# softmq_hostdirs (PATH=REALPATH, comma-separated) are bound at PATH; its
# modules dir gets a tmpfs overlay of its own.
#
# Parameters come from the kernel command line (unknown name=value params
# reach init as environment variables): softmq_repo, softmq_results,
# softmq_moddir, softmq_abi, softmq_hostdirs.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "SOFTMQ-INITRAMFS-FAILED: $*"
	echo o > /proc/sysrq-trigger
	sleep 30
}

while read -r m; do
	insmod "/modules/$m" || echo "softmq-initramfs: insmod $m failed"
done < /modules/order

O=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /lower /rw /newroot
mount -t 9p -o "$O,ro" hostroot /lower || fail "9p mount of the host root"
mount -t tmpfs -o mode=0755 tmpfs /rw || fail "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
	/newroot || fail "overlay mount"
if [ -n "$softmq_hostdirs" ]; then
	mkdir -p /newroot/host
	mount -t 9p -o "$O,ro" hostfs /newroot/host || fail "9p mount of the host's /"
	for d in $(echo "$softmq_hostdirs" | tr , ' '); do
		p=${d%%=*} real=${d#*=}
		mkdir -p "/newroot$p"
		mount -o bind "/newroot/host$real" "/newroot$p" || fail "bind mount of the host's $real at $p"
	done
fi
if [ -n "$softmq_results" ]; then
	mkdir -p "/newroot$softmq_results"
	mount -t 9p -o "$O" results "/newroot$softmq_results" || fail "9p mount of the results dir"
fi
if [ -n "$softmq_moddir" ]; then
	mkdir -p "/newroot/lib/modules/$softmq_abi"
	if [ -n "$softmq_hostdirs" ]; then
		# A cross line's modules lie in the cache, bound read-only
		# from hostfs: give them their own tmpfs upper so that
		# make install and depmod can write there, as they can
		# through the root's overlay on an amd64 line.
		mkdir -p /rw/mod/upper /rw/mod/work
		mount -t overlay overlay -o "lowerdir=/newroot$softmq_moddir,upperdir=/rw/mod/upper,workdir=/rw/mod/work" \
			"/newroot/lib/modules/$softmq_abi" ||
			fail "overlay mount of the modules dir"
	else
		mount -o bind "/newroot$softmq_moddir" "/newroot/lib/modules/$softmq_abi" ||
			fail "bind mount of the modules dir"
	fi
fi
umount /proc /sys
mount --move /dev /newroot/dev 2>/dev/null || umount /dev
exec switch_root /newroot /bin/bash "$softmq_repo/tests/testbed/guest.sh"
