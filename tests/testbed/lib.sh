# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the softmq test bed.  Sourced (bash), never executed.
#
# Environment:
#   SOFTMQ_CACHE    cache dir (default: ~/.cache/softmq); kernels, apt lists,
#                   the sid chroot, tc 6.15, selftest/checkpatch extracts
#   SOFTMQ_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   SOFTMQ_SECURITY_MIRROR  (default http://deb.debian.org/debian-security)
#   SOFTMQ_OFFLINE=1        never touch the network, use the cache only
#   SOFTMQ_APT_MAX_AGE      seconds before the private apt lists are
#                           refreshed (default 86400)

TB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TB_DIR/../.." && pwd)
# Outside the work tree by default, so a fresh clone of the repo (CI) finds
# what an earlier run on this machine fetched and built.
CACHE=${SOFTMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmq}
# A cache that is a link to a folder that has gone: start a fresh one.
if [ -L "$CACHE" ] && [ ! -e "$CACHE" ]; then rm -f "$CACHE"; fi
MIRROR=${SOFTMQ_MIRROR:-http://deb.debian.org/debian}
SEC_MIRROR=${SOFTMQ_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
APT_MAX_AGE=${SOFTMQ_APT_MAX_AGE:-86400}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SID_ROOT=$CACHE/sid-chroot
# Everything we run as a tool (sbin for depmod/debootstrap/switch_root).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log()  { printf '[testbed] %s\n' "$*" >&2; }
die()  { printf '[testbed] ERROR: %s\n' "$*" >&2; exit 1; }
now()  { date +%s; }

case "$CACHE" in
*[[:space:]]*) die "SOFTMQ_CACHE must not contain spaces: '$CACHE'";;
esac
case "$REPO" in
*[[:space:]]*) die "the repo path must not contain spaces: '$REPO'";;
esac

mkdir -p "$CACHE" || die "cannot create cache dir $CACHE"
CACHE=$(cd "$CACHE" && pwd)
SID_ROOT=$CACHE/sid-chroot

# ---------------------------------------------------------------- host packages
# Debian packages the test bed needs on the host (CI: fresh Debian 12).
# BOOT_PKGS: fetch a Debian kernel, build the module against it and boot it
# (make demo needs no more; debootstrap only for the sid-built 7.x lines).
BOOT_PKGS="qemu-system-x86 busybox-static dwarves kmod cpio xz-utils zstd
gzip gcc gcc-12 make libc6-dev libelf1 libssl3 iproute2 util-linux procps
iputils-ping python3 debian-archive-keyring dpkg-dev"
HOST_PKGS="$BOOT_PKGS debootstrap ethtool iperf3 tcpdump python3-pyroute2
jq groff-base"

# demo_host_pkgs LINE: what make demo on LINE needs on the host.
demo_host_pkgs() {
	echo $BOOT_PKGS
	[ "$(line_toolchain "$1")" = host ] || echo debootstrap
}

# all_host_pkgs: HOST_PKGS plus what test suites list in
# tests/*/host-packages (package names, whitespace-separated, # comments):
# the guest runs the host's userland, so whatever a VM test needs must be
# installed on the host before the VM boots.
all_host_pkgs() {
	echo $HOST_PKGS
	cat "$REPO"/tests/host-packages "$REPO"/tests/*/host-packages 2>/dev/null |
		sed 's/#.*//' | tr -s ' \t' '\n\n' | grep -v '^$' | sort -u
}

# need_pkgs PKG...: install what is missing (root), else print the command.
need_pkgs() {
	local missing="" p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		log "missing Debian packages; run as root:"
		log "  apt-get update && apt-get install -y --no-install-recommends$missing"
		return 1
	fi
	log "installing:$missing"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2 ||
	{ apt-get update -q >&2 &&
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2; }
}

# ---------------------------------------------------------------- private apt
# Own sources list, lists dir, archive cache and (empty) dpkg status inside
# $CACHE/apt: the machine's apt configuration is never touched.
PAPT=$CACHE/apt
papt_setup() {
	mkdir -p "$PAPT"/lists/partial "$PAPT"/archives/partial \
		"$PAPT"/etc/sources.list.d "$PAPT"/etc/preferences.d
	[ -e "$PAPT/status" ] || : > "$PAPT/status"
	{
		papt_source "$MIRROR" bookworm
		papt_source "$SEC_MIRROR" bookworm-security
		papt_source "$MIRROR" bookworm-backports
		papt_source "$MIRROR" sid
	} > "$PAPT/etc/sources.list.new"
	cat > "$PAPT/apt.conf.new" <<EOF
Dir::Etc::SourceList "$PAPT/etc/sources.list";
Dir::Etc::SourceParts "$PAPT/etc/sources.list.d";
Dir::Etc::Preferences "$PAPT/etc/preferences";
Dir::Etc::PreferencesParts "$PAPT/etc/preferences.d";
Dir::State::Lists "$PAPT/lists";
Dir::State::status "$PAPT/status";
Dir::Cache "$PAPT/cache";
Dir::Cache::archives "$PAPT/archives";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
Acquire::Retries "3";
APT::Architectures { $(printf '"%s"; ' $PAPT_ARCHES)};
APT::Sandbox::User "root";
EOF
	local f
	for f in etc/sources.list apt.conf; do
		if cmp -s "$PAPT/$f.new" "$PAPT/$f"; then rm -f "$PAPT/$f.new"
		elif [ "$f" = etc/sources.list ] && [ -e "$PAPT/$f" ] &&
		     cmp -s <(sed 's/ arch=[^]]*//' "$PAPT/$f.new") \
			    <(sed 's/ arch=[^]]*//' "$PAPT/$f"); then
			# only an index left out or taken back (papt_update):
			# the lists of the other suites stay good
			mv "$PAPT/$f.new" "$PAPT/$f"
		else mv "$PAPT/$f.new" "$PAPT/$f"; rm -f "$PAPT/lists.stamp"; fi
	done
}
papt() { APT_CONFIG=$PAPT/apt.conf "$@"; }

# vcpus_int3_loop: reads vcpu-pcs.py's lines ("CPU#N: sym+0xoff (k/n), ...")
# and is true when the guest looks stuck on an int3: a vCPU of
# multi-threaded TCG that runs a stale translation of code the kernel
# patched takes the patch's int3 again and again, and the patching CPU
# waits for it in smp_call_function_many_cond() (both 6.1 hangs of
# 40-default-qdisc, tests/README.md).  True if, with two vCPUs or more,
# some vCPU is in the int3 path in 3 samples of 5 or more and every other
# one either is too or waits there.  error_entry and error_return serve
# page faults too: they count only beside an int3 sample of the same vCPU.
# One vCPU on a hot int3 while the others run is no hang, and neither is
# a guest with one vCPU: nothing there would wait for it.
vcpus_int3_loop() {
	awk '
	/CPU#[0-9]+:/ {
		cpus++; trap = entry = wait = 0
		for (i = 1; i < NF; i++) {
			c = $(i + 1)
			if (c !~ /^\([0-9]+\/[0-9]+\),?$/) continue
			gsub(/[(),]/, "", c); split(c, f, "/")
			if ($i ~ /^(asm_exc_int3|exc_int3|do_int3|poke_int3_handler|kprobe_int3_handler)\+/)
				trap += f[1]
			else if ($i ~ /^(error_entry|error_return)\+/)
				entry += f[1]
			else if ($i ~ /^smp_call_function_many_cond\+/)
				wait += f[1]
		}
		if (trap > 0 && trap + entry >= 3) looping++
		else if (wait >= 3) waiting++ }
	END { exit !(cpus >= 2 && looping > 0 && looping + waiting == cpus) }'
}

# The private lists' architectures, less those left out of a suite until
# the next refresh because their index could not be fetched ("SUITE ARCH"
# lines, papt_update).
PAPT_ARCHES="amd64 arm64 i386"
PAPT_LEFT_OUT=$PAPT/etc/arch-left-out
# the words that end a fetch's reason when it exits 2 for a left-out index:
# callers (check.sh, lint) count that a SKIP
PAPT_LEFT_OUT_WHY="left out until the next apt refresh"
papt_source() {   # papt_source URI SUITE: its sources.list line
	local uri=$1 suite=$2 a arches="" left=0
	for a in $PAPT_ARCHES; do
		if grep -qx "$suite $a" "$PAPT_LEFT_OUT" 2>/dev/null; then left=1
		else arches=${arches:+$arches,}$a; fi
	done
	# arch= only where something is left out: APT::Architectures is the rest
	if [ $left = 1 ]; then
		echo "deb [signed-by=$KEYRING arch=$arches] $uri $suite main"
	else
		echo "deb [signed-by=$KEYRING] $uri $suite main"
	fi
}

# papt_left_out ARCH: why ARCH's packages may be missing from the lists
# (a suite's index of it was left out), or nothing.
papt_left_out() {
	local suites
	[ -e "$PAPT_LEFT_OUT" ] || return 0
	suites=$(awk -v a="$1" '$2 == a { printf "%s%s", sep, $1; sep = ", " }' \
		"$PAPT_LEFT_OUT")
	[ -z "$suites" ] ||
		echo "the $1 index of $suites could not be fetched (mirror mid-sync?), $PAPT_LEFT_OUT_WHY"
}

papt_update_ok() {
	papt apt-get -q update >"$PAPT/update.log" 2>&1 &&
		! grep -qE '^(W|E): (Failed|Some index)' "$PAPT/update.log"
}
# papt_failed_indexes LOG: "SUITE ARCH" of each binary index apt failed to
# fetch, in any of its forms: the URI (http:, https:), or the lists file
# it was writing or copying (store:, copy:, .../dists_SUITE_main_binary-ARCH_...)
papt_failed_indexes() {
	sed -nE -e 's#^[WE]: Failed to fetch .*/dists/([^/ ]+)/[^ ]*binary-([a-z0-9]+)/.*#\1 \2#p' \
		-e 's#^[WE]: Failed to fetch [a-z]+:[^ ]*_dists_([^_ ]+)_[^ ]*binary-([a-z0-9]+)_.*#\1 \2#p' \
		"$1" | sort -u
}
# papt_update [force]: refresh the lists when older than APT_MAX_AGE.
# Returns non-zero when the lists are unusable (never fetched, offline).
papt_update() {
	local stamp=$PAPT/lists.stamp age=999999999 refresh=0 failed left=""
	[ -e "$stamp" ] && age=$(( $(now) - $(stat -c %Y "$stamp") ))
	if [ "${SOFTMQ_OFFLINE:-0}" != 1 ] &&
	   { [ "${1:-}" = force ] || [ "$age" -ge "$APT_MAX_AGE" ]; }; then
		refresh=1
		# a refresh tries every index again; a failed one keeps these
		left=$(cat "$PAPT_LEFT_OUT" 2>/dev/null || true)
		rm -f "$PAPT_LEFT_OUT"
	fi
	papt_setup
	if [ "${SOFTMQ_OFFLINE:-0}" = 1 ]; then
		[ -e "$stamp" ] || { log "offline and no cached apt lists"; return 1; }
		return 0
	fi
	[ -e "$stamp" ] || refresh=1
	if [ "$refresh" = 1 ]; then
		log "refreshing private apt lists ($PAPT)"
		# apt rejects a whole suite when one of its indexes fails, as a
		# mirror or proxy caught mid-sync makes them fail: leave such a
		# foreign architecture's index out of its suite until the next
		# refresh, so that the other lines' kernels still resolve (the
		# i386 line's then comes from the other suites).  The host's own
		# architecture is never left out.
		# Each retry may meet another index mid-sync: up to three.
		local try=0
		until papt_update_ok; do
			[ $try -lt 3 ] || break
			try=$((try + 1))
			# new foreign ones only: an index already left out that
			# fails again ends the retries
			failed=$(papt_failed_indexes "$PAPT/update.log" |
				grep -v " $(dpkg --print-architecture)\$" |
				grep -vxF -f <(cat "$PAPT_LEFT_OUT" 2>/dev/null) || true)
			[ -n "$failed" ] || break
			grep -E '^[WE]: Failed to fetch' "$PAPT/update.log" | sed 's/^/    /' >&2
			{ cat "$PAPT_LEFT_OUT" 2>/dev/null || true; echo "$failed"; } |
				sort -u > "$PAPT_LEFT_OUT.new"
			mv "$PAPT_LEFT_OUT.new" "$PAPT_LEFT_OUT"
			log "apt: left out until the next refresh (suite arch): $(echo $failed)"
			papt_setup
		done
		if ! grep -qE '^(W|E): (Failed|Some index)' "$PAPT/update.log"; then
			touch "$stamp"
		else
			sed 's/^/    /' "$PAPT/update.log" | tail -5 >&2
			if [ -e "$stamp" ]; then
				if [ -n "$left" ] && [ ! -s "$PAPT_LEFT_OUT" ]; then
					echo "$left" > "$PAPT_LEFT_OUT"
					papt_setup
				fi
				log "apt update failed, using the cached lists"
			else
				log "apt update failed and no cached lists"; return 1
			fi
		fi
	fi
	return 0
}

# ---------------------------------------------------------------- kernel lines
# line_known LINE: the lines we know how to resolve.
#   6.x lines: bookworm(-security) builds, host gcc-12
#   7.x lines: sid builds, gcc-16 in the sid chroot
# A "-rt" suffix selects the PREEMPT_RT flavour.
line_image_re() {
	local line=$1 base flav=""
	case "$line" in *-rt) base=${line%-rt}; flav="-rt";; *) base=$line;; esac
	case "$base" in
	6.1)   echo "^linux-image-6\\.1\\.0-[0-9]+${flav}-amd64\$";;
	6.[0-9]*) echo "^linux-image-${base//./\\.}\\.[0-9]+\\+deb12${flav}-amd64\$";;
	[7-9].[0-9]*) echo "^linux-image-${base//./\\.}\\.[0-9]+\\+deb[0-9]+${flav}-amd64\$";;
	*) return 1;;
	esac
}
line_toolchain() {   # host | sid
	case "$1" in 6.*) echo host;; *) echo sid;; esac
}
line_env() { echo "$CACHE/kernels/$1.env"; }
# line_cross_targets LINE: the build-only targets of a line: another
# architecture's flavour at the line's ABI (kernels.sh fetch-cross).  The
# 32-bit one is i386 686-pae on 6.1, the last Debian line with i386 kernels.
line_cross_targets() {
	case "$1" in
	6.1) echo 6.1-686-pae;;
	6.12) echo 6.12-arm64;;
	7.2) echo 7.2-arm64;;
	esac
}
# is_cross_line NAME: a cross target booted as a VM line too (kernels.sh
# fetch NAME: its image and modules, and a root of its architecture).
is_cross_line() {
	case "$1" in 6.1-686-pae|6.12-arm64) return 0;; esac
	return 1
}
# What the tests need in the root of a foreign-architecture guest (the
# amd64 guests run the host's own userland): debootstrap --include.
# libc6-dev: the sysroot the arm64 tc plugin is built against (vm.sh);
# dwarves: pahole, for the kprobes' Qdisc offsets (tests/vm/lib.sh kp_on).
GUEST_ROOT_PKGS="iproute2 kmod procps python3 python3-pyroute2 jq iperf3
tcpdump ethtool iputils-ping busybox-static libc6-dev dwarves"
cross_arch() {   # cross_arch FLAVOUR: its Debian architecture
	case "$1" in arm64) echo arm64;; 686-pae) echo i386;; *) return 1;; esac
}
cross_gnu_type() {   # cross_gnu_type ARCH: the GNU triplet of Debian's cross gcc
	case "$1" in arm64) echo aarch64-linux-gnu;; i386) echo i686-linux-gnu;; esac
}

# tcg_trap_re, and what the guest's harness shares with it
# shellcheck source=tcg-trap.sh
. "$TB_DIR/tcg-trap.sh"
