#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build sch_softmq.ko and the test-only modules for one kernel line.
#
#   build.sh LINE          (the line must be fetched: kernels.sh fetch LINE)
#   build.sh TARGET        a cross target (kernels.sh fetch-cross TARGET):
#                          sch_softmq.ko only, with W=1 as for the lines;
#                          with the test modules once it is fetched to boot
#   build.sh plugin        only the tc plugin (make -C tc-plugin, host gcc)
#
# Outputs (one tree per line, lines never clobber each other):
#   build/<line>/softmq/sch_softmq.ko        copy of Kbuild, src/, include/
#   build/<line>/modules/<name>/<name>.ko    each tests/modules/<name>/
#   build/<line>/logs/<what>.log             full make output
# W=1; any "warning:" (compiler or modpost) fails that build.
# Prints one protocol line per build: PASS <name> / FAIL <name>: <why>;
# exits non-zero if anything failed.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -euo pipefail
. "$(dirname "$0")/lib.sh"

JOBS=${SOFTMQ_JOBS:-2}
fails=0

# modinfo's version for every line.  Kbuild asks git, and the sid chroot
# has none (the 7.2 modules said "unknown"): ask it here, on the host.
SOFTMQ_VERSION=$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null) ||
	SOFTMQ_VERSION=$(cat "$REPO/VERSION")

# kmake DIR LOG: build the Kbuild tree in DIR against this line's headers
# (a cross target's: with its cross gcc first on PATH, and the Debian host
# architecture its headers' .kernelvariables asks for).
kmake() {
	local dir=$1 logf=$2 rc=0 path=$PATH libs=${LD_LIBRARY_PATH:-}
	# shellcheck disable=SC2206
	local vars=(${CROSS_VARS:-})
	# The extracted cross binutils load their libbfd from beside them.
	[ -n "${CROSS_BIN:-}" ] && path=$CROSS_BIN:$PATH &&
		libs=${CROSS_BIN%/bin}/lib/x86_64-linux-gnu${libs:+:$libs}
	if [ "$TOOLCHAIN" = host ]; then
		PATH=$path LD_LIBRARY_PATH=$libs \
			make -C "$KDIR" M="$dir" W=1 -j"$JOBS" SOFTMQ_VERSION="$SOFTMQ_VERSION" \
			"${vars[@]}" modules > "$logf" 2>&1 || rc=$?
	else
		"$TB_DIR/sidroot.sh" run --bind "$dir" -- \
			make -C "$KDIR" M="$dir" W=1 -j"$JOBS" SOFTMQ_VERSION="$SOFTMQ_VERSION" \
			"${vars[@]}" modules > "$logf" 2>&1 || rc=$?
	fi
	return $rc
}

# build_one NAME SRCDIR... DEST: copy the sources into DEST and build there.
# Built in DEST.new and swapped in at the end, so a VM of another run that
# loads DEST/*.ko meanwhile never sees a half-built tree.
build_one() {
	local final=${*: -1} name=$1 dest logf rc=0 nwarn ko
	local srcs=("${@:2:$#-2}")
	dest=$final.new
	logf=$OUT/logs/$name.log
	rm -rf "$dest"; mkdir -p "$dest" "$OUT/logs"
	# Sources only: leave out build products of an in-tree `make`.
	tar -c --exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
		--exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.a' \
		--exclude=modules.order --exclude=Module.symvers \
		--exclude=.tmp_versions "${srcs[@]}" | tar -x -C "$dest"
	kmake "$dest" "$logf" || rc=$?
	rm -rf "$final.old"
	[ -e "$final" ] && mv "$final" "$final.old"
	mv "$dest" "$final"; rm -rf "$final.old"
	dest=$final
	nwarn=$(grep -ci 'warning:' "$logf" || true)
	ko=$(find "$dest" -maxdepth 1 -name '*.ko' | head -n 1)
	if [ $rc -ne 0 ] || [ -z "$ko" ]; then
		grep -iE 'error|warning:' "$logf" | head -n 20 | sed 's/^/    /'
		echo "FAIL build-$LINE-$name: make failed (rc=$rc), log: ${logf#"$REPO"/}"
		return 1
	elif [ "$nwarn" -gt 0 ]; then
		grep -i 'warning:' "$logf" | head -n 20 | sed 's/^/    /'
		echo "FAIL build-$LINE-$name: $nwarn warning(s) with W=1, log: ${logf#"$REPO"/}"
		return 1
	else
		echo "PASS build-$LINE-$name"
	fi
}

build_plugin() {
	if [ -e "$REPO/tc-plugin/Makefile" ]; then
		local logf=$REPO/build/tc-plugin.log
		mkdir -p "$REPO/build"
		if make -C "$REPO/tc-plugin" > "$logf" 2>&1; then
			if grep -qi 'warning:' "$logf"; then
				grep -i 'warning:' "$logf" | head -n 10 | sed 's/^/    /'
				echo "FAIL build-tc-plugin: warnings, log: ${logf#"$REPO"/}"
				fails=$((fails + 1))
			else
				echo "PASS build-tc-plugin"
			fi
		else
			tail -n 15 "$logf" | sed 's/^/    /'
			echo "FAIL build-tc-plugin: make -C tc-plugin failed, log: ${logf#"$REPO"/}"
			fails=$((fails + 1))
		fi
	else
		echo "SKIP build-tc-plugin: no tc-plugin/Makefile yet"
	fi
}

[ $# -eq 1 ] || die "usage: $0 LINE | plugin"
if [ "$1" = plugin ]; then
	build_plugin
	[ $fails -eq 0 ]; exit
fi

LINE=$1
envf=$(line_env "$LINE")
[ -e "$envf" ] || die "line $LINE not fetched; run: tests/testbed/kernels.sh fetch $LINE"
CROSS_ARCH="" CROSS_BIN="" CROSS_VARS="" VMLINUZ="" GUEST_ROOT=""
# shellcheck disable=SC1090
. "$envf"
if [ "$TOOLCHAIN" = host ]; then
	need_pkgs make gcc-12 dwarves || exit 1
fi
OUT=$REPO/build/$LINE
mkdir -p "$OUT"
exec 7>"$OUT/.build.lock"
flock 7

# Test-only modules first: they tell whether the toolchain itself works.
# A cross target fetched for building only (kernels.sh fetch-cross) gets
# the qdisc alone; one fetched to boot (kernels.sh fetch) its test modules too.
[ -n "$CROSS_ARCH" ] && [ -z "$VMLINUZ" ] || for d in "$REPO"/tests/modules/*/; do
	[ -e "$d/Kbuild" ] || continue
	n=$(basename "$d")
	(cd "$d" && build_one "$n" . "$OUT/modules/$n") || fails=$((fails + 1))
done

# The tc plugin of a cross line that boots: gcc -m32 for i386, the arm64
# cross gcc against the arm64 guest's root (its libc6-dev) for arm64.
if [ -n "$CROSS_ARCH" ] && [ -n "$VMLINUZ" ]; then
	logf=$OUT/logs/tc-plugin.log
	mkdir -p "$OUT/logs"
	# gcc -m32 (tests/ring installs it too, but vm.sh may run first)
	if [ "$CROSS_ARCH" = i386 ] && ! need_pkgs gcc-multilib; then
		echo "FAIL build-$LINE-tc-plugin: gcc-multilib is not installed (gcc -m32)"
		fails=$((fails + 1))
	elif PATH=${CROSS_BIN:+$CROSS_BIN:}$PATH \
	   LD_LIBRARY_PATH=${CROSS_BIN:+${CROSS_BIN%/bin}/lib/x86_64-linux-gnu} \
	   make -C "$REPO/tc-plugin" "out/$CROSS_ARCH/q_softmq.so" \
		ARM64_CC="$(cd "${CROSS_BIN:-/usr/bin}" && ls aarch64-linux-gnu-gcc-[0-9]* 2>/dev/null | head -n 1)" \
		ARM64_SYSROOT="$GUEST_ROOT/root" > "$logf" 2>&1; then
		echo "PASS build-$LINE-tc-plugin"
	else
		tail -n 5 "$logf" | sed 's/^/    /'
		echo "FAIL build-$LINE-tc-plugin: make out/$CROSS_ARCH/q_softmq.so failed, log: ${logf#"$REPO"/}"
		fails=$((fails + 1))
	fi
fi

# The qdisc.  Until src/sch_softmq.c exists this is a clear FAIL.
if [ ! -e "$REPO/src/sch_softmq.c" ]; then
	rm -rf "$OUT/softmq"
	echo "FAIL build-$LINE-softmq: src/sch_softmq.c does not exist yet"
	fails=$((fails + 1))
else
	if (cd "$REPO" && build_one softmq Kbuild src include "$OUT/softmq"); then
		ver=$(modinfo -F version "$OUT/softmq/sch_softmq.ko" 2>&1) || true
		if [ "$ver" = "$SOFTMQ_VERSION" ]; then
			echo "PASS build-$LINE-softmq-version ($ver)"
		else
			echo "FAIL build-$LINE-softmq-version: modinfo says '$ver', the tree is $SOFTMQ_VERSION"
			fails=$((fails + 1))
		fi
	else
		fails=$((fails + 1))
	fi
fi

[ $fails -eq 0 ]
exit
}
