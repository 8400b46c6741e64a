#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cached Debian sid chroot that holds gcc-16 and the 7.x kernel headers.
#
#   sidroot.sh create                 debootstrap it (once; cached in $CACHE)
#   sidroot.sh install-debs DEB...    apt-get install local .debs (+ deps) in it
#   sidroot.sh run [--bind DIR]... -- CMD...
#                                     run CMD inside it: private mount
#                                     namespace (unshare -m), own /proc, DIR
#                                     bind-mounted at the same path; nothing
#                                     stays mounted afterwards
#   sidroot.sh status                 "ready", or why it is not
{ # parsed whole before it runs: editing this file cannot break a running copy
set -euo pipefail
. "$(dirname "$0")/lib.sh"

FAIL_FILE=$CACHE/sid-chroot.failed

sid_exec() {   # sid_exec BIND... -- CMD...  (internal)
	local binds=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do binds+=("$1"); shift; done
	shift
	[ "$(id -u)" = 0 ] || die "the sid chroot needs root (unshare -m, chroot)"
	unshare -m --propagation private -- /bin/bash -s -- "$SID_ROOT" "${#binds[@]}" "${binds[@]}" "$@" <<'EOS'
set -e
R=$1; n=$2; shift 2
mount -t proc proc "$R/proc"
mount --bind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/tmp"
while [ "$n" -gt 0 ]; do
	mkdir -p "$R$1"; mount --bind "$1" "$R$1"; shift; n=$((n - 1))
done
cp -L /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
exec chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
EOS
}

create() {
	[ -e "$SID_ROOT/.ready" ] && return 0
	[ "$(id -u)" = 0 ] || die "creating the sid chroot needs root"
	if [ "${SOFTMQ_OFFLINE:-0}" = 1 ]; then
		echo "offline (SOFTMQ_OFFLINE=1) and no cached sid chroot" > "$FAIL_FILE"
		die "$(cat "$FAIL_FILE")"
	fi
	need_pkgs debootstrap debian-archive-keyring
	local tmp=$SID_ROOT.tmp t0
	t0=$(now)
	rm -rf "$tmp"
	log "creating sid chroot (debootstrap --variant=minbase sid) in $SID_ROOT"
	# debootstrap mounts /proc etc. in the target: keep that in a private
	# mount namespace so a failure cannot leave anything mounted.
	if ! unshare -m --propagation private -- debootstrap --variant=minbase \
		--keyring="$KEYRING" --include=make sid "$tmp" "$MIRROR" \
		> "$CACHE/sid-chroot.log" 2>&1; then
		tail -5 "$CACHE/sid-chroot.log" >&2
		echo "debootstrap sid failed (offline? see $CACHE/sid-chroot.log)" > "$FAIL_FILE"
		rm -rf "$tmp"
		die "$(cat "$FAIL_FILE")"
	fi
	cat > "$tmp/etc/apt/apt.conf.d/99softmq" <<'EOF'
// sid's Release files can look expired against a skewed clock
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
	rm -rf "$SID_ROOT"
	mv "$tmp" "$SID_ROOT"
	date -u +%FT%TZ > "$SID_ROOT/.ready"
	rm -f "$FAIL_FILE"
	log "sid chroot ready in $(( $(now) - t0 ))s"
}

install_debs() {
	create
	local d=/var/cache/softmq-debs f names=()
	rm -rf "${SID_ROOT:?}$d"; mkdir -p "$SID_ROOT$d"
	for f in "$@"; do cp "$f" "$SID_ROOT$d/"; names+=("$d/$(basename "$f")"); done
	log "installing in the sid chroot: ${names[*]##*/}"
	if ! sid_exec -- apt-get install -y -q make "${names[@]}" > "$CACHE/sid-install.log" 2>&1; then
		[ "${SOFTMQ_OFFLINE:-0}" = 1 ] && { tail -5 "$CACHE/sid-install.log" >&2; return 1; }
		log "apt-get install failed; apt-get update in the chroot and retry"
		sid_exec -- apt-get update -q >> "$CACHE/sid-install.log" 2>&1 || true
		sid_exec -- apt-get install -y -q make "${names[@]}" >> "$CACHE/sid-install.log" 2>&1 ||
			{ tail -8 "$CACHE/sid-install.log" >&2; rm -rf "${SID_ROOT:?}$d"; return 1; }
	fi
	sid_exec -- apt-get clean >/dev/null 2>&1 || true
	rm -rf "${SID_ROOT:?}$d"
}

cmd=${1:-status}; shift || true
case "$cmd" in
create) create ;;
install-debs) install_debs "$@" ;;
run)
	[ -e "$SID_ROOT/.ready" ] || die "no sid chroot ($SID_ROOT); run: $0 create"
	binds=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		case "$1" in
		--bind) binds+=("$(cd "$2" && pwd)"); shift 2;;
		*) die "run: unknown option $1";;
		esac
	done
	[ "${1:-}" = -- ] && shift
	sid_exec "${binds[@]}" -- "$@" ;;
status)
	if [ -e "$SID_ROOT/.ready" ]; then echo ready
	elif [ -e "$FAIL_FILE" ]; then cat "$FAIL_FILE"; exit 1
	else echo "not created yet"; exit 1; fi ;;
*) die "usage: $0 create|install-debs DEB...|run [--bind DIR]... -- CMD...|status" ;;
esac
exit
}
