# SPDX-License-Identifier: GPL-2.0
# Shared by tests/vm/80-install-*.sh (sourced, bash), inside the test bed's
# guest: the host's / read-only under a tmpfs overlay, so dpkg -i, dkms and
# make install write only into the overlay.  Uses the guest env of
# tests/testbed/vm.sh: SOFTMQ_REPO, SOFTMQ_LINE, SOFTMQ_KVER, SOFTMQ_CACHE.
#
# Each script leaves the guest as it found it (no softmq module loaded or
# installed, no package, no dkms entry), so the scripts run in any order.

npass=0 nfail=0 nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }
check() { local n=$1 w=$2; shift 2; if "$@"; then pass "$n"; else fail "$n" "$w"; fi; }
note() { echo "  # $*"; }

REPO=${SOFTMQ_REPO:?not in the test bed guest}
ABI=$(uname -r)
V=$(cat "$REPO/VERSION")
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
DEV=smqi0
WORK=$(mktemp -d /tmp/softmq-install.XXXXXX)
OUTD=${SOFTMQ_RESULTS:-$WORK}    # logs kept on the host (used by the scripts)
export OUTD
# tc must find q_softmq.so where the packages and make install put it, not
# in the test bed's TC_LIB_DIR (tc then skips its default dir).
unset TC_LIB_DIR

# man-db's dpkg trigger rebuilds the whole man index: minutes under TCG,
# and nothing we test.  The guest's root is a tmpfs overlay, so this only
# lasts until power-off.
if [ "${SOFTMQ_IN_VM:-0}" = 1 ]; then rm -f /var/lib/man-db/auto-update; fi

# The name the kernel asks modprobe for: "sch_<id>" before 6.9, then
# "net-sch-<id>" (MODULE_ALIAS_NET_SCH).
kver_ge() { printf '%s\n%s\n' "$2" "$1" | sort -V -C; }
if kver_ge "$ABI" 6.9; then AUTOLOAD_NAME=net-sch-softmq; else AUTOLOAD_NAME=sch_softmq; fi

# can_build PREFIX: the line's env, and whether this guest can build
# modules for it (7.x needs gcc-16, which lives in the host's sid chroot).
can_build() {
	local envf=${SOFTMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmq}/kernels/${SOFTMQ_LINE:-}.env
	if [ ! -r "$envf" ]; then skip "$1" "no kernel line env $envf"; return 1; fi
	# shellcheck disable=SC1090
	KDIR=$(. "$envf"; echo "$KDIR") TOOLCHAIN=$(. "$envf"; echo "$TOOLCHAIN")
	if [ "$TOOLCHAIN" != host ]; then
		skip "$1" "building a module for $SOFTMQ_LINE needs gcc-16 from the host's sid chroot, which does not exist inside the guest"
		return 1
	fi
	return 0
}

# headers: what installing linux-headers-$ABI does, /lib/modules/$ABI/build
# pointing at the headers (here the test bed's extracted copy, KDIR).
ensure_headers() {
	local b=/lib/modules/$ABI/build t
	[ -e "$b/include" ] && return 0
	if [ -L "$b" ]; then
		t=$(readlink "$b")
		case "$t" in /*) mkdir -p "$(dirname "$t")"; ln -sfn "$KDIR" "$t";; esac
	fi
	[ -e "$b/include" ] || ln -sfn "$KDIR" "$b"
	[ -e "$b/include" ]
}

# copy_checkout DIR: the checkout's sources (no build products) in DIR, as
# a user's clone would be.
copy_checkout() {
	mkdir -p "$1" &&
	(cd "$REPO" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.so' \
		Makefile Kbuild VERSION dkms.conf src include tc-plugin) | tar -x -C "$1"
}

# clean_start PREFIX: nothing of softmq loaded/installed before we start.
clean_start() {
	if lsmod | grep -q '^sch_softmq '; then
		rmmod sch_softmq 2>/dev/null ||
			{ fail "$1-clean-start" "sch_softmq is loaded (by an earlier test) and busy"; return 1; }
	fi
	local l
	l=$(leftovers)
	if [ -n "$l" ]; then fail "$1-clean-start" "already installed: $l"; return 1; fi
	return 0
}

# leftovers: everything an install of softmq may leave behind, one per line.
leftovers() {
	local p
	lsmod | grep -q '^sch_softmq ' && echo "module loaded"
	find /lib/modules/"$ABI"/ -name 'sch_softmq.ko*' 2>/dev/null
	grep -l softmq /lib/modules/"$ABI"/modules.alias /lib/modules/"$ABI"/modules.dep 2>/dev/null
	ls -d /usr/src/softmq-* /var/lib/dkms/softmq 2>/dev/null
	ls /usr/lib/"$MULTIARCH"/tc/q_softmq.so /usr/share/man/man8/tc-softmq.8* 2>/dev/null
	for p in softmq-dkms softmq-tc; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^[^u]' &&
			echo "package $p: $(dpkg-query -W -f='${db:Status-Abbrev}' "$p")"
	done
	return 0
}

# check_nothing_left PREFIX
check_nothing_left() {
	local l
	l=$(leftovers | tr '\n' ' ')
	check "$1-nothing-left" "left behind: $l" test -z "$l"
}

# Log every module the kernel asks for (kernel.modprobe = a wrapper).
MODPROBE_LOG=$WORK/modprobe.log
MODPROBE_ORIG=$(cat /proc/sys/kernel/modprobe)
watch_modprobe() {
	cat > "$WORK/modprobe" <<EOF
#!/bin/sh
echo "\$*" >> $MODPROBE_LOG
exec $MODPROBE_ORIG "\$@"
EOF
	chmod +x "$WORK/modprobe"
	: > "$MODPROBE_LOG"
	echo "$WORK/modprobe" > /proc/sys/kernel/modprobe
}
unwatch_modprobe() { echo "$MODPROBE_ORIG" > /proc/sys/kernel/modprobe; }

make_dev() {
	ip link del "$DEV" 2>/dev/null
	ip link add "$DEV" type dummy && ip link set "$DEV" up &&
		ip addr add 198.18.7.1/24 dev "$DEV"
}

# autoload PREFIX: module not loaded; "tc qdisc add dev X root softmq" must
# load it by itself, through the name this kernel asks for.
autoload() {
	local p=$1 out
	if lsmod | grep -q '^sch_softmq '; then
		rmmod sch_softmq || { fail "$p-autoload" "cannot unload sch_softmq first"; return; }
	fi
	make_dev || { fail "$p-autoload" "cannot create dummy device $DEV"; return; }
	watch_modprobe
	out=$(tc qdisc add dev "$DEV" root softmq 2>&1)
	local rc=$?
	unwatch_modprobe
	note "kernel asked modprobe for: $(tr '\n' ';' < "$MODPROBE_LOG")"
	if [ $rc -ne 0 ]; then
		fail "$p-autoload" "tc qdisc add dev $DEV root softmq: $out (kernel asked for: $(tr '\n' ' ' < "$MODPROBE_LOG"))"
		return
	fi
	check "$p-autoload" "module not loaded after tc qdisc add" \
		bash -c 'lsmod | grep -q "^sch_softmq "'
	check "$p-autoload-name-$AUTOLOAD_NAME" \
		"kernel $ABI did not request $AUTOLOAD_NAME: $(tr '\n' ' ' < "$MODPROBE_LOG")" \
		grep -qw -- "$AUTOLOAD_NAME" "$MODPROBE_LOG"
	out=$(tc qdisc show dev "$DEV")
	check "$p-attached" "tc qdisc show: $out" grep -q '^qdisc softmq [0-9a-f]*: root' <<<"$out"
}

# traffic PREFIX: a few UDP packets (bash's /dev/udp) through the root
# softmq of $DEV (dummy drops them after the qdisc), counted by tc -s.
traffic() {
	local p=$1 out sent
	local i
	for i in 1 2 3 4 5; do echo "softmq $i" 2>/dev/null > /dev/udp/198.18.7.2/9; done
	out=$(tc -s qdisc show dev "$DEV")
	sent=$(sed -n 's/^ *Sent [0-9]* bytes \([0-9]*\) pkt.*/\1/p' <<<"$out" | head -n 1)
	check "$p-traffic" "tc -s shows ${sent:-no} packets sent, want >= 5: $out" test "${sent:-0}" -ge 5
}

# plugin PREFIX: tc parses and prints softmq's options with the installed
# q_softmq.so, from its default directory.
plugin() {
	local p=$1 out
	out=$(LD_BIND_NOW=1 tc qdisc replace dev "$DEV" root softmq flows 64 2>&1) ||
		{ fail "$p-plugin" "tc qdisc replace … softmq flows 64: $out"; return; }
	out=$(LD_BIND_NOW=1 tc qdisc show dev "$DEV" 2>&1)
	check "$p-plugin" "the plugin did not print 'flows 64': $out" grep -q 'flows 64' <<<"$out"
}

detach() {
	tc qdisc del dev "$DEV" root 2>/dev/null
	ip link del "$DEV" 2>/dev/null
	return 0
}

# modinfo_checks PREFIX: modinfo by module name, as an admin would.
modinfo_checks() {
	local p=$1 f
	f=$(modinfo -F filename sch_softmq 2>&1)
	note "modinfo sch_softmq: $f"
	modinfo sch_softmq 2>&1 | sed 's/^/  #   /'
	f=$(modinfo -F version sch_softmq 2>&1)
	check "$p-modinfo-version" "version '$f', want $V" test "$f" = "$V"
	f=$(modinfo -F alias sch_softmq 2>&1)
	check "$p-modinfo-alias" "aliases '$f'" grep -qx net-sch-softmq <<<"$f"
	f=$(modinfo -F license sch_softmq 2>&1)
	check "$p-modinfo-license" "license '$f'" test "$f" = GPL
	f=$(modinfo -F description sch_softmq 2>&1)
	check "$p-modinfo-description" "no description" test -n "$f"
}

finish() {
	detach
	unwatch_modprobe 2>/dev/null
	rm -rf "$WORK"
	echo "  # $npass passed, $nfail failed, $nskip skipped"
	exit 0
}
