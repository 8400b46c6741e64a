#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: build softmq-dkms_<v>_all.deb and softmq-tc_<v>_<arch>.deb with
# Debian's tooling (dpkg-buildpackage, debhelper, dh-dkms) from a copy of
# the tree in OUT/src/, so nothing is written next to the repository, then
# run lintian on them.
#
#   debian/build-debs.sh [--no-lintian] [OUT]
#                                   OUT defaults to build/deb (in the repo)
#
# OUT/ gets the .deb files, the .changes/.buildinfo, build.log and
# lintian.txt.  Installs the build dependencies with apt-get when run as
# root and they are missing.  Exit status: non-zero if the build fails, the
# versions disagree, or lintian reports an error (warnings are listed in
# lintian.txt; each one we keep is explained in debian/*.lintian-overrides).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
LINTIAN=1
[ "${1:-}" = --no-lintian ] && { LINTIAN=0; shift; }
OUT=${1:-build/deb}
case "$OUT" in /*) ;; *) OUT=$REPO/$OUT;; esac

say() { printf 'build-debs: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# --------------------------------------------------------- build dependencies
DEPS="dpkg-dev debhelper dh-dkms make gcc libc6-dev"
[ $LINTIAN = 1 ] && DEPS="$DEPS lintian"
missing=""
for p in $DEPS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	[ "$(id -u)" = 0 ] || die "missing packages; as root: apt-get install --no-install-recommends$missing"
	say "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing >&2 ||
	{ apt-get update -q >&2 && apt-get install -y -q --no-install-recommends $missing >&2; } ||
		die "apt-get install$missing failed"
fi

# --------------------------------------------------------- one version
V=$(cat "$REPO/VERSION")
CONF_V=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$REPO/dkms.conf")
DEB_V=$(dpkg-parsechangelog -l "$REPO/debian/changelog" -S Version)
[ "$V" = "$CONF_V" ] && [ "$V" = "$DEB_V" ] ||
	die "versions disagree: VERSION=$V dkms.conf=$CONF_V debian/changelog=$DEB_V (bump all three; dch -v $V)"

# --------------------------------------------------------- copy and build
SRC=$OUT/src/softmq-$V
rm -rf "$OUT"
mkdir -p "$SRC"
# Sources only: what the packages are made of, without build products.
(cd "$REPO" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
	--exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.a' --exclude='*.so' \
	--exclude=modules.order --exclude=Module.symvers --exclude=out \
	LICENSE Makefile Kbuild VERSION dkms.conf src include tc-plugin debian) |
	tar -x -C "$SRC"
say "building in ${SRC#"$REPO"/} (log: ${OUT#"$REPO"/}/build.log)"
if ! (cd "$SRC" && dpkg-buildpackage -b -us -uc) > "$OUT/build.log" 2>&1; then
	tail -n 25 "$OUT/build.log" >&2
	die "dpkg-buildpackage failed"
fi
mv "$OUT"/src/*.deb "$OUT"/src/*.changes "$OUT"/src/*.buildinfo "$OUT"/
rm -rf "$OUT/src"

say "packages:"
for f in "$OUT"/*.deb; do
	printf '  %s  %s bytes\n' "${f#"$REPO"/}" "$(stat -c %s "$f")" >&2
done
[ $LINTIAN = 1 ] || exit 0

# --------------------------------------------------------- lintian
changes=$(ls "$OUT"/softmq_*.changes)
lrc=0
# Every tag down to pedantic, and the overridden ones with their reasons
# (O: lines).  lintian warns against running as root: use nobody then.
lint=(lintian --display-info --pedantic --show-overrides "$changes")
if [ "$(id -u)" = 0 ] && runuser -u nobody -- test -r "$changes"; then
	lint=(runuser -u nobody -- env HOME=/tmp TMPDIR=/tmp "${lint[@]}")
fi
"${lint[@]}" > "$OUT/lintian.txt" 2>&1 || lrc=$?
say "lintian -I --pedantic --show-overrides (${OUT#"$REPO"/}/lintian.txt):"
if grep -q '^[EWIPX]:' "$OUT/lintian.txt"; then
	sed 's/^/  /' "$OUT/lintian.txt" >&2
else
	say "  no tags except overridden ones (O:), each explained in debian/*.lintian-overrides"
	grep '^O:' "$OUT/lintian.txt" | sed 's/^/  /' >&2 || true
fi
[ $lrc -eq 0 ] || die "lintian failed (rc=$lrc)"
