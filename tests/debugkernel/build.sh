#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the sanitizer kernels softmq is tested on, from Debian's
# linux-source-6.12, into the cache.  Idempotent: a second run only checks
# stamps (seconds).
#
#   tests/debugkernel/build.sh [kasan] [kcsan]      (default: kasan kcsan)
#
# Flavours (config fragments next to this script):
#   kasan  KASAN generic inline + PROVE_LOCKING + DEBUG_ATOMIC_SLEEP +
#          DEBUG_KMEMLEAK (DEFAULT_OFF: boot with kmemleak=on for leak runs)
#   kcsan  KCSAN (no KASAN)
# Both: x86_64 defconfig + kvm_guest.config + base.config (9p, overlay,
# virtio built in so no initramfs modules are needed; NET_SCHED and the
# qdiscs the tests compare against built in; veth, dummy, pktgen modules;
# no debug info; DRM/sound/wireless/USB/ethernet drivers trimmed).
#
# Output, per flavour F (test bed kernel line "6.12-F"):
#   $CACHE/debugkernel/build-F/          O= build dir (KDIR for modules)
#   $CACHE/debugkernel/build-F/modroot/  modules_install tree
#   $CACHE/kernels/6.12-F.env            LINE ABI KROOT VMLINUZ KMODDIR KDIR
#                                        TOOLCHAIN BOOT_ARGS FLAVOUR (the
#                                        test bed's kernel-line format)
# Environment: SOFTMQ_CACHE (default ~/.cache/softmq), SOFTMQ_OFFLINE=1,
#   JOBS (default: nproc), NICE (default 10: the CPUs are shared).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${SOFTMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmq}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
DK=$CACHE/debugkernel
JOBS=${JOBS:-$(nproc)}
NICE=${NICE:-10}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf '[debugkernel] %s\n' "$*" >&2; }
die() { printf '[debugkernel] ERROR: %s\n' "$*" >&2; exit 1; }

FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(kasan kcsan)
for f in "${FLAVOURS[@]}"; do
	[ -f "$HERE/$f.config" ] || die "unknown flavour '$f' (no $HERE/$f.config)"
done

mkdir -p "$DK"
# One builder at a time per cache (two agents/CI steps may call us).
exec 9>"$DK/.lock"
flock 9

# ------------------------------------------------------------ build deps
need=""
for p in flex bison libelf-dev bc libssl-dev cpio kmod gcc make xz-utils dwarves; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q '^install ok installed$' || need="$need $p"
done
if [ -n "$need" ]; then
	[ "$(id -u)" = 0 ] || die "missing build deps, run: apt-get install$need"
	log "installing build deps:$need"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need >&2
fi

# ------------------------------------------------------------ source
# linux-source-6.12 from the machine's apt sources (bookworm-security); the
# test bed's private apt config is the fallback.
src_deb=$(ls "$DK"/linux-source-6.12_*_all.deb 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$src_deb" ]; then
	[ "${SOFTMQ_OFFLINE:-0}" = 1 ] && die "offline and no linux-source-6.12 in $DK"
	log "downloading linux-source-6.12"
	( cd "$DK" && apt-get -q download linux-source-6.12 ) >&2 2>"$DK/download.log" ||
	( [ -f "$CACHE/apt/apt.conf" ] && cd "$DK" &&
	  APT_CONFIG=$CACHE/apt/apt.conf apt-get -q download linux-source-6.12 ) >&2 ||
		die "apt-get download linux-source-6.12 failed (see $DK/download.log)"
	src_deb=$(ls "$DK"/linux-source-6.12_*_all.deb | sort -V | tail -1)
fi
srcver=$(basename "$src_deb" | sed 's/^linux-source-6\.12_\(.*\)_all\.deb$/\1/')
SRC=$DK/linux-$srcver
if [ ! -e "$SRC/.ready" ]; then
	log "extracting $srcver"
	rm -rf "$SRC" "$DK/deb-x"
	mkdir -p "$DK/deb-x" "$SRC"
	dpkg-deb -x "$src_deb" "$DK/deb-x"
	tar -C "$SRC" --strip-components=1 -xf "$DK"/deb-x/usr/src/linux-source-6.12.tar.*
	rm -rf "$DK/deb-x"
	echo "$srcver" > "$SRC/.ready"
fi

# ------------------------------------------------------------ flavours
# check_config F: every =y/=m/"is not set" line of the fragments holds.
check_config() {
	local cfg=$1 frag line sym want bad=0
	shift
	for frag in "$@"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) sym=${line%%=*}; want=$line;;
			"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; want=$line;;
			*) continue;;
			esac
			if [ "$want" = "$sym=n" ] || [ "${want#\# }" != "$want" ]; then
				grep -q "^$sym=[ym]" "$cfg" && { log "config: $sym still set"; bad=1; }
			else
				grep -qxF "$want" "$cfg" || { log "config: want '$want', have '$(grep "^$sym=\|^# $sym is" "$cfg" || echo unset)'"; bad=1; }
			fi
		done < "$frag"
	done
	return $bad
}

# Bump when the steps below change what gets built.
CONFIG_RECIPE=1

build_flavour() {
	local f=$1 O=$DK/build-$1 stamp want t0
	# What the kernel is made of: the source, the fragments, the recipe.
	# The env file is rewritten on every run (cheap).
	want=$(cat "$SRC/.ready" "$HERE/base.config" "$HERE/$f.config" |
		sha256sum | cut -c1-16)-$CONFIG_RECIPE
	stamp=$O/.softmq-stamp
	if [ -e "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	   [ -e "$O/arch/x86/boot/bzImage" ] && [ -d "$O/modroot/lib/modules" ]; then
		write_env "$f" "$O"
		log "$f: up to date ($O, built in $(cat "$O/.build-seconds" 2>/dev/null || echo '?') s)"
		return 0
	fi
	t0=$(date +%s)
	mkdir -p "$O"
	rm -f "$stamp"
	log "$f: configuring in $O"
	make -s -C "$SRC" O="$O" defconfig >&2
	make -s -C "$SRC" O="$O" kvm_guest.config >&2
	# merge_config: later fragments win; then olddefconfig resolves deps.
	"$SRC/scripts/kconfig/merge_config.sh" -m -O "$O" "$O/.config" \
		"$HERE/base.config" "$HERE/$f.config" >"$O/merge.log" 2>&1
	make -s -C "$SRC" O="$O" olddefconfig >&2
	check_config "$O/.config" "$HERE/base.config" "$HERE/$f.config" ||
		die "$f: .config lacks options above (dependency missing?)"
	log "$f: building (nice -n $NICE make -j$JOBS), log $O/build.log"
	if ! nice -n "$NICE" make -C "$SRC" O="$O" -j"$JOBS" bzImage modules >"$O/build.log" 2>&1; then
		tail -30 "$O/build.log" >&2
		die "$f: kernel build failed"
	fi
	rm -rf "$O/modroot"
	make -s -C "$SRC" O="$O" INSTALL_MOD_PATH="$O/modroot" INSTALL_MOD_STRIP=1 \
		DEPMOD=/sbin/depmod modules_install >>"$O/build.log" 2>&1 ||
		die "$f: modules_install failed"
	echo "$(( $(date +%s) - t0 ))" > "$O/.build-seconds"
	echo "$want" > "$stamp"
	write_env "$f" "$O"
	log "$f: built $(cat "$O/include/config/kernel.release") in $(cat "$O/.build-seconds") s ($(du -sh "$O/arch/x86/boot/bzImage" | cut -f1) bzImage)"
}

# write_env F O: the test bed's kernel-line file (tests/testbed/lib.sh
# line_env: LINE ABI KROOT VMLINUZ KMODDIR KDIR TOOLCHAIN), plus what vm.sh
# uses for these lines: BOOT_ARGS (kernel command line, "# boot:" in the
# flavour's fragment), PRE_TESTS / POST_TESTS (scripts run before / after
# tests/vm/*.sh), KMSG_FILTER (command the harness pipes each script's
# kernel log through before its splat scan; @RESULTS@ = results dir).
write_env() {
	local f=$1 O=$2 rel pre="" post="" filt="" boot
	rel=$(cat "$O/include/config/kernel.release")
	boot=$(sed -n 's/^# boot: //p' "$HERE/$f.config")
	case "$f" in
	kasan)
		# KASAN reports only the first bug of a boot by default: the
		# self-test's deliberate one would hide every later one.
		# (Here, not in the fragment's "# boot:" line, which is part
		# of the build stamp.)
		boot="$boot kasan_multi_shot"
		pre="$REPO/tests/debugkernel/kmemleak-clear.sh"
		post="$REPO/tests/debugkernel/kmemleak-check.sh";;
	kcsan)
		filt="awk -v ign=@RESULTS@/kcsan-ignored.log -f $REPO/tests/debugkernel/kcsan-filter.awk";;
	esac
	mkdir -p "$CACHE/kernels"
	cat > "$CACHE/kernels/6.12-$f.env.new" <<EOF
LINE=6.12-$f
ABI=$rel
KROOT=$O/modroot
VMLINUZ=$O/arch/x86/boot/bzImage
KMODDIR=$O/modroot/lib/modules/$rel
KDIR=$O
TOOLCHAIN=host
FLAVOUR=$f
BOOT_ARGS="$boot"
PRE_TESTS="$pre"
POST_TESTS="$post"
KMSG_FILTER="$filt"
EOF
	mv "$CACHE/kernels/6.12-$f.env.new" "$CACHE/kernels/6.12-$f.env"
}

for f in "${FLAVOURS[@]}"; do
	build_flavour "$f"
done
