#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In the guest: install softmq-dkms and softmq-tc with dpkg (into
# the overlay root), check dkms built and installed the module for the
# running kernel, modinfo, autoload by tc, the plugin from tc's default
# directory, traffic; then purge both and check nothing is left.
#
# Packages: build/deb/ from `make deb` (tests/install/check.sh makes them)
# when they hold the current sources, else built here without lintian.
. "$(dirname "$0")/lib.sh"
P=install-deb
install_start $P build

# ---------------------------------------------------------------- packages
debs=$REPO/build/deb
fresh() {
	local x=$WORK/x
	[ -f "$debs/softmq-dkms_${V}_all.deb" ] && ls "$debs"/softmq-tc_"${V}"_*.deb > /dev/null 2>&1 || return 1
	rm -rf "$x"; mkdir -p "$x"
	dpkg-deb -x "$debs/softmq-dkms_${V}_all.deb" "$x" || return 1
	make -s -C "$REPO" dkms-src DKMS_SRC_ROOT="$WORK/src" > /dev/null 2>&1 || return 1
	diff -r "$x/usr/src/softmq-$V" "$WORK/src/softmq-$V" > /dev/null
}
if fresh; then
	note "installing the packages from build/deb/"
else
	note "build/deb/ missing or stale: building the packages here (no lintian)"
	t0=$(date +%s)
	if ! "$REPO/debian/build-debs.sh" --no-lintian "$WORK/deb" > "$OUTD/build-debs.log" 2>&1; then
		fail $P-build "debian/build-debs.sh failed: $(tail -n 3 "$OUTD/build-debs.log" | tr '\n' ' ')"
		exit 0
	fi
	note "built in $(( $(date +%s) - t0 ))s"
	debs=$WORK/deb
fi
DKMS_DEB=$debs/softmq-dkms_${V}_all.deb
TC_DEB=$(ls "$debs"/softmq-tc_"${V}"_*.deb | head -n 1)
ls -l "$DKMS_DEB" "$TC_DEB" | sed 's/^/  # /'

# ---------------------------------------------------------------- dpkg -i
t0=$(date +%s)
if DEBIAN_FRONTEND=noninteractive dpkg -i "$DKMS_DEB" "$TC_DEB" > "$OUTD/dpkg-i.log" 2>&1; then
	pass $P-dpkg-i
else
	fail $P-dpkg-i "dpkg -i failed: $(grep -iE 'error|fail' "$OUTD/dpkg-i.log" | head -n 4 | tr '\n' ' ')"
fi
note "dpkg -i took $(( $(date +%s) - t0 ))s"
sed 's/^/  #   /' "$OUTD/dpkg-i.log"
st=$(dkms status -m softmq 2>&1)
check $P-dkms-built "dkms status: $st" grep -q "^softmq/$V, $ABI, x86_64: installed" <<<"$st"
ko=$(ls /lib/modules/"$ABI"/updates/dkms/sch_softmq.ko* 2>/dev/null | head -n 1)
check $P-module-file "no sch_softmq.ko* in /lib/modules/$ABI/updates/dkms" test -n "$ko"
check $P-depmod "modules.alias has no net-sch-softmq after install" \
	grep -q '^alias net-sch-softmq sch_softmq$' /lib/modules/"$ABI"/modules.alias
inst_modinfo $P
f=$(modinfo -F signer sch_softmq 2>/dev/null)
note "signer: ${f:-none} (dkms' own MOK in this guest's /var/lib/dkms; not enrolled, no Secure Boot here)"

# ---------------------------------------------------------------- use it
inst_autoload $P
inst_traffic $P
inst_plugin $P
inst_detach

# ---------------------------------------------------------------- default
# docs/install.md "Make it the default qdisc": the two files, applied the way boot does
# (systemd-modules-load, then systemd-sysctl's equivalent sysctl -p); a
# device with a real queue (ifb) created afterwards gets softmq as root.
default_qdisc() {
	local p=$P-default old out
	old=$(cat /proc/sys/net/core/default_qdisc)
	rmmod sch_softmq 2>/dev/null
	mkdir -p /etc/modules-load.d /etc/sysctl.d
	echo sch_softmq > /etc/modules-load.d/softmq.conf
	echo net.core.default_qdisc=softmq > /etc/sysctl.d/90-softmq.conf
	out=$(/lib/systemd/systemd-modules-load /etc/modules-load.d/softmq.conf 2>&1)
	check $p-modules-load "systemd-modules-load did not load sch_softmq: $out" \
		bash -c 'lsmod | grep -q "^sch_softmq "'
	out=$(sysctl -p /etc/sysctl.d/90-softmq.conf 2>&1)
	check $p-sysctl "net.core.default_qdisc is '$(cat /proc/sys/net/core/default_qdisc)': $out" \
		grep -qx softmq /proc/sys/net/core/default_qdisc
	out=$(rmmod sch_softmq 2>&1)
	check $p-pinned "rmmod succeeded while softmq is the default qdisc (no instance yet)" \
		bash -c 'lsmod | grep -q "^sch_softmq "'
	ip link del smqifb0 2>/dev/null
	if ip link add smqifb0 type ifb 2>/dev/null && ip link set smqifb0 up; then
		out=$(tc qdisc show dev smqifb0)
		check $p-new-device "a new ifb device got: $out" grep -q '^qdisc softmq [0-9a-f]*: root' <<<"$out"
	else
		skip $p-new-device "no ifb device in this kernel"
	fi
	echo "$old" > /proc/sys/net/core/default_qdisc
	ip link del smqifb0 2>/dev/null
	rm -f /etc/modules-load.d/softmq.conf /etc/sysctl.d/90-softmq.conf
	out=$(rmmod sch_softmq 2>&1)
	check $p-unpinned "rmmod after restoring default_qdisc=$old: $out" \
		bash -c '! lsmod | grep -q "^sch_softmq "'
}
default_qdisc

# ---------------------------------------------------------------- purge
rmmod sch_softmq 2>/dev/null
if DEBIAN_FRONTEND=noninteractive dpkg --purge softmq-tc softmq-dkms > "$OUTD/dpkg-purge.log" 2>&1; then
	pass $P-dpkg-purge
else
	fail $P-dpkg-purge "dpkg --purge failed: $(tail -n 4 "$OUTD/dpkg-purge.log" | tr '\n' ' ')"
fi
sed 's/^/  #   /' "$OUTD/dpkg-purge.log"
inst_nothing_left $P
out=$(modprobe -n sch_softmq 2>&1)
check $P-not-loadable "modprobe still finds sch_softmq: $out" test -n "$out"
