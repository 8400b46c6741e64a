#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fetch Debian kernels (image + headers) per kernel line into the cache.
#
#   kernels.sh fetch LINE...     resolve the line's current ABI, download and
#                                extract image/modules/headers, depmod; for
#                                sid lines also install the headers in the
#                                sid chroot.  Cached: a second run needs no
#                                network (lists are refreshed once a day).
#   kernels.sh fetch TARGET...   a cross target that boots too (6.1-686-pae,
#                                6.12-arm64): its line, its headers and
#                                cross gcc, its image and modules, and a
#                                Debian 12 root of its architecture
#   kernels.sh env LINE          print the line's settings (shell syntax):
#                                LINE ABI KROOT VMLINUZ KMODDIR KDIR TOOLCHAIN
#   kernels.sh fetch-cross TARGET...  a build-only target: another
#                                architecture's headers of a fetched line's
#                                ABI (6.1-686-pae, 6.12-arm64, 7.2-arm64;
#                                line_cross_targets) and Debian's cross gcc
#                                for it; env adds CROSS_ARCH CROSS_BIN CROSS_VARS
#   kernels.sh tools             fetch tc 6.15 (bookworm-backports), Debian
#                                12's i386 tc (with its libraries) and the
#                                tc-testing / checkpatch extracts of
#                                linux-source-6.1 and linux-source-6.12
#   kernels.sh path WHAT [LINE]  print a path: tdc [LINE] (tc-testing dir of
#                                the matching source, default 6.12),
#                                checkpatch, tc615, tc-i386-root, kdir LINE,
#                                vmlinuz LINE
#   kernels.sh resolve LINE      print the line's current image package
#
# Lines: 6.1 6.12 7.2 7.2-rt (6.x = bookworm builds, 7.x = sid builds).
# Exit 2 means "cannot be done here" (e.g. sid chroot impossible offline):
# callers count that as a SKIP, with the reason printed on stderr.
{ # parsed whole before it runs: editing this file cannot break a running copy
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# deps_closure PKG...: PKG plus the kernel packages it depends on (first
# alternatives only), i.e. linux-{image,binary,modules,base,headers,kbuild}-*.
deps_closure() {
	local -A seen=()
	local queue=("$@") p d
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}; queue=("${queue[@]:1}")
		[ -n "${seen[$p]:-}" ] && continue
		seen[$p]=1
		echo "$p"
		for d in $(papt apt-cache depends --no-recommends --no-suggests \
				--no-conflicts --no-breaks --no-replaces --no-enhances "$p" |
			awk '/^ *\|?(Pre)?Depends:/ {
				alt = ($1 ~ /^\|/); name = $2
				if (!skip) print name
				skip = alt   # next line is an alternative of this one
			}'); do
			case "$d" in
			*-unsigned|*-dbg|"<"*) continue;;
			linux-image-[0-9]*|linux-binary-[0-9]*|linux-modules-[0-9]*|\
			linux-base-[0-9]*|linux-headers-[0-9]*|linux-kbuild-[0-9]*)
				queue+=("$d");;
			esac
		done
	done
}

resolve() {   # resolve LINE -> image package name (current ABI)
	local re
	re=$(line_image_re "$1") || die "unknown kernel line '$1'"
	papt apt-cache pkgnames linux-image- | grep -E "$re" | sort -V | tail -n 1
}

# download PKG... into the current directory (private apt config).
# A network failure while fetching a sid line exits 2 (counted SKIP).
NET_FAIL_RC=1
download() {
	papt apt-get -q download "$@" >&2 && return 0
	echo "apt-get download failed (offline?): $*" >&2
	exit $NET_FAIL_RC
}

cached_env_ok() {   # the line was fetched before and is complete
	local envf
	envf=$(line_env "$1")
	[ -e "$envf" ] || return 1
	# shellcheck disable=SC1090
	( . "$envf"; [ -e "$KROOT/.done" ] && [ -e "$VMLINUZ" ] &&
	  { [ "$TOOLCHAIN" = host ] || [ -e "$SID_ROOT$KDIR/Makefile" ]; } )
}

# image_ready ROOT ABI NAME: an extracted image's modules depmod'ed at
# ROOT/lib/modules/ABI; prints its vmlinuz.  Merged-/usr packages (7.x)
# put modules under usr/lib: depmod -b and modprobe -d find them at
# ROOT/lib/modules through a link.
image_ready() {
	local root=$1 abi=$2 p
	[ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
	[ -d "$root/lib/modules/$abi" ] || die "$3: no modules dir in the image packages"
	for p in "$root/boot/vmlinuz-$abi" "$root/lib/modules/$abi/vmlinuz" ""; do
		[ -e "$p" ] && break
	done
	[ -n "$p" ] || die "$3: no vmlinuz in the image packages"
	depmod -b "$root" "$abi" || die "$3: depmod failed"
	echo "$p"
}

fetch_line() {
	local line=$1 img abi kdir envf tc t0
	case "$line" in
	*-kasan|*-kcsan)   # sanitizer kernels: built here, tests/debugkernel
		"$REPO/tests/debugkernel/build.sh" "${line##*-}"
		return;;
	esac
	t0=$(now)
	envf=$(line_env "$line")
	tc=$(line_toolchain "$line")
	[ "$tc" = sid ] && NET_FAIL_RC=2
	mkdir -p "$CACHE/kernels"
	if ! papt_update; then
		cached_env_ok "$line" && { log "$line: using cached kernel"; return 0; }
		[ "$tc" = sid ] && { echo "no apt lists (offline?) for line $line" >&2; exit 2; }
		die "$line: cannot read the Debian package lists (offline?)"
	fi
	# Resolved since the lists were last refreshed: nothing can have moved.
	if cached_env_ok "$line" && [ "$envf" -nt "$PAPT/lists.stamp" ]; then
		fix_links "$envf"
		log "$line: $(sed -n 's/^ABI=//p' "$envf") (cached)"
		return 0
	fi
	img=$(resolve "$line")
	if [ -z "$img" ]; then
		cached_env_ok "$line" && { log "$line: no such package now, using cached kernel"; return 0; }
		die "$line: no linux-image package matches $(line_image_re "$line")"
	fi
	abi=${img#linux-image-}
	kdir=$CACHE/kernels/$abi
	if cached_env_ok "$line" && grep -qx "ABI=$abi" "$envf"; then
		touch "$envf"
		fix_links "$envf"
		log "$line: $abi (cached)"
		return 0
	fi
	if [ "$tc" = sid ] && [ ! -e "$SID_ROOT/.ready" ]; then
		"$TB_DIR/sidroot.sh" create || {
			echo "sid chroot cannot be made: $(cat "$CACHE/sid-chroot.failed" 2>/dev/null)" >&2
			exit 2; }
	fi
	if [ "${SOFTMQ_OFFLINE:-0}" = 1 ]; then
		echo "$line: $abi not cached and SOFTMQ_OFFLINE=1" >&2
		exit $NET_FAIL_RC
	fi

	log "$line: fetching $abi"
	local img_pkgs hdr_pkgs debs=$CACHE/debs/$abi p
	img_pkgs=$(deps_closure "$img" | grep -v '^linux-headers-\|^linux-kbuild-' || true)
	hdr_pkgs=$(deps_closure "linux-headers-$abi" | grep -v '^linux-image-\|^linux-binary-\|^linux-modules-' || true)
	log "$line: packages:" $img_pkgs $hdr_pkgs
	rm -rf "$debs"; mkdir -p "$debs"
	# shellcheck disable=SC2086
	(cd "$debs" && download $img_pkgs $hdr_pkgs)

	rm -rf "$kdir.tmp"; mkdir -p "$kdir.tmp/root"
	local extract=$img_pkgs
	[ "$tc" = host ] && extract="$img_pkgs $hdr_pkgs"
	for p in $extract; do
		dpkg-deb -x "$debs/${p}"_*.deb "$kdir.tmp/root" ||
			die "dpkg-deb -x failed for $p"
	done
	local root=$kdir.tmp/root vmlinuz kd=""
	vmlinuz=$(image_ready "$root" "$abi" "$line") || exit 1
	if [ "$tc" = host ]; then
		kd=$root/usr/src/linux-headers-$abi
		[ -e "$kd/Makefile" ] || die "$line: no headers Makefile"
		# The one-line Makefile includes /usr/src/...-common absolutely.
		sed -i "s#/usr/src/#$kdir/root/usr/src/#g" "$kd/Makefile"
		kd=$kdir/root/usr/src/linux-headers-$abi
	else
		local hd=()
		for p in $hdr_pkgs; do hd+=("$debs/${p}"_*.deb); done
		if ! "$TB_DIR/sidroot.sh" install-debs "${hd[@]}"; then
			rm -rf "$kdir.tmp"
			die "$line: installing the headers in the sid chroot failed"
		fi
		kd=/usr/src/linux-headers-$abi
		[ -e "$SID_ROOT$kd/Makefile" ] || die "$line: headers missing in the sid chroot"
	fi
	touch "$root/.done"
	rm -rf "$kdir"; mv "$kdir.tmp" "$kdir"
	rm -rf "$debs"
	cat > "$envf" <<EOF
LINE=$line
ABI=$abi
KROOT=$kdir/root
VMLINUZ=${vmlinuz/$kdir.tmp/$kdir}
KMODDIR=$kdir/root/lib/modules/$abi
KDIR=$kd
TOOLCHAIN=$tc
EOF
	fix_links "$envf"
	prune
	log "$line: $abi ready in $(( $(now) - t0 ))s"
}

# ------------------------------------------------------------ cross targets
# cross_kbuild ABI ARCH: the linux-kbuild package linux-headers-ABI:ARCH
# depends on, or nothing where the lists lack those headers.
cross_kbuild() {
	# apt-cache fails for a package the lists lack: that is the answer
	papt apt-cache depends "linux-headers-$1:$2" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-kbuild-/ {sub(/:.*/, "", $2); print $2; exit}' ||
		true
}

# fetch_cross TARGET: the TARGET flavour's headers at the ABI its base line
# (fetched first) has, for a W=1 build only: nothing of it boots.
#   host lines: headers + common + the amd64 linux-kbuild (fixdep, modpost
#     and the rest are host tools, whatever the target) extracted under
#     $CACHE/cross/<abi>; Debian 12's cross gcc and binutils for the
#     target extracted beside them (gcc is relocatable).  Installing
#     gcc-aarch64-linux-gnu would remove gcc-multilib, which tests/ring's
#     32-bit build needs: Debian declares them conflicting.
#   sid lines: the headers extracted into the sid chroot (its amd64
#     linux-kbuild is there from the line's own fetch) and the cross gcc
#     installed there with apt.
fetch_cross() {
	local target=$1 base flav arch gnu envf benv babi abi tc debs dir kd
	local kbuild gccv tcdir p why wanted abi_wanted=""
	base=${target%%-*}; flav=${target#*-}
	arch=$(cross_arch "$flav") || die "unknown cross target '$target'"
	gnu=$(cross_gnu_type "$arch")
	envf=$(line_env "$target")
	benv=$(line_env "$base")
	[ -e "$benv" ] || die "$target: line $base not fetched (kernels.sh fetch $base)"
	babi=$(sed -n 's/^ABI=//p' "$benv")
	abi=${babi%-amd64}-$flav
	tc=$(line_toolchain "$base")
	if [ -e "$envf" ] && grep -qx "ABI=$abi" "$envf"; then
		log "$target: $abi (cached)"
		return 0
	fi
	papt_update || die "$target: no apt lists"
	# a stand-in ABI (below) is kept until the lists are refreshed
	if [ -e "$envf" ] && grep -qx "WANTED_ABI=$abi" "$envf" &&
	   [ "$envf" -nt "$PAPT/lists.stamp" ]; then
		log "$target: $(sed -n 's/^ABI=//p' "$envf") for $abi (cached)"
		return 0
	fi
	kbuild=$(cross_kbuild "$abi" "$arch")
	if [ -z "$kbuild" ]; then
		why=$(papt_left_out "$arch")
		[ -n "$why" ] || die "$target: no linux-headers-$abi:$arch in the lists"
		# An index of $arch could not be fetched, and the line's ABI is
		# not in the others (a point release's security update, say):
		# build and boot the newest $flav ABI of the same kernel version
		# that they have, rather than nothing.  Only ABIs of the form
		# VERSION-N-FLAVOUR (6.1's) have one.  The env's WANTED_ABI says
		# which ABI it stands in for; the lists are asked again after
		# each refresh, so the line's own comes back once its index does.
		wanted=$(papt apt-cache pkgnames "linux-headers-${babi%%-*}-" 2>/dev/null |
			grep -E "^linux-headers-$(echo "${babi%%-*}" | sed 's/[.+]/\\&/g')-[0-9]+-$flav\$" |
			sort -V | tail -n 1) || true
		wanted=${wanted#linux-headers-}
		[ -n "$wanted" ] && kbuild=$(cross_kbuild "$wanted" "$arch")
		[ -n "$kbuild" ] || { echo "$target: no linux-headers-$abi:$arch: $why" >&2; exit 2; }
		if [ -e "$envf" ] && grep -qx "ABI=$wanted" "$envf"; then
			sed -i "s/^WANTED_ABI=.*/WANTED_ABI=$abi/" "$envf"
			log "$target: $wanted for $abi (cached)"
			return 0
		fi
		log "$target: no linux-headers-$abi:$arch ($why): $wanted stands in"
		abi_wanted=$abi abi=$wanted
	fi
	log "$target: fetching the $abi headers"
	debs=$CACHE/debs/$abi
	rm -rf "$debs"; mkdir -p "$debs"
	(cd "$debs" && download "linux-headers-$abi:$arch" "linux-headers-${abi%-"$flav"}-common" "$kbuild:amd64")
	if [ "$tc" = host ]; then
		dir=$CACHE/cross/$abi
		rm -rf "$dir.tmp"; mkdir -p "$dir.tmp/root"
		for p in "$debs"/*.deb; do
			dpkg-deb -x "$p" "$dir.tmp/root" || die "dpkg-deb -x failed for $p"
		done
		kd=$dir.tmp/root/usr/src/linux-headers-$abi
		[ -e "$kd/Makefile" ] || die "$target: no headers Makefile"
		sed -i "s#/usr/src/#$dir/root/usr/src/#g" "$kd/Makefile"
		gccv=$(grep -o 'gcc-[0-9]*' "$kd/.kernelvariables" | head -n 1)
		rm -rf "$dir"; mv "$dir.tmp" "$dir"
		kd=$dir/root/usr/src/linux-headers-$abi
		tcdir=$CACHE/cross/$gccv-$gnu
		if [ ! -e "$tcdir/.done" ]; then
			log "$target: fetching Debian 12's $gccv cross compiler for $gnu"
			rm -rf "$tcdir" "$debs/tc"; mkdir -p "$debs/tc" "$tcdir"
			(cd "$debs/tc" && download "$gccv-$gnu/bookworm" "cpp-${gccv#gcc-}-$gnu/bookworm" \
				"binutils-$gnu/bookworm" "$gccv-$gnu-base/bookworm")
			for p in "$debs"/tc/*.deb; do
				dpkg-deb -x "$p" "$tcdir" || die "dpkg-deb -x failed for $p"
			done
			"$tcdir/usr/bin/$gnu-$gccv" --version > /dev/null ||
				die "$target: the extracted $gnu-$gccv does not run"
			LD_LIBRARY_PATH=$tcdir/usr/lib/x86_64-linux-gnu "$tcdir/usr/bin/$gnu-as" --version > /dev/null ||
				die "$target: the extracted $gnu-as does not run"
			touch "$tcdir/.done"
		fi
		tcdir=$tcdir/usr/bin
	else
		kd=/usr/src/linux-headers-$abi
		rm -rf "${SID_ROOT:?}$kd"
		dpkg-deb -x "$debs/linux-headers-${abi}"_*.deb "$SID_ROOT" ||
			die "$target: dpkg-deb -x into the sid chroot failed"
		[ -e "$SID_ROOT$kd/Makefile" ] || die "$target: no headers Makefile in the sid chroot"
		gccv=$(grep -o 'gcc-[0-9]*' "$SID_ROOT$kd/.kernelvariables" | head -n 1)
		if ! "$TB_DIR/sidroot.sh" run -- sh -c "command -v $gnu-$gccv" > /dev/null; then
			log "$target: installing $gccv-$gnu in the sid chroot"
			"$TB_DIR/sidroot.sh" run -- sh -c \
				"apt-get install -y -q $gccv-$gnu || { apt-get update -q && apt-get install -y -q $gccv-$gnu; }" \
				> "$CACHE/sid-cross.log" 2>&1 ||
				{ tail -5 "$CACHE/sid-cross.log" >&2; die "$target: $gccv-$gnu not installable in the sid chroot"; }
			"$TB_DIR/sidroot.sh" run -- apt-get clean > /dev/null 2>&1 || true
		fi
		tcdir=""
	fi
	rm -rf "$debs"
	cat > "$envf" <<EOF
LINE=$target
ABI=$abi
KDIR=$kd
TOOLCHAIN=$tc
CROSS_ARCH=$arch
CROSS_BIN=$tcdir
CROSS_VARS="DEB_HOST_ARCH=$arch DEB_HOST_GNU_TYPE=$gnu"
EOF
	[ -z "$abi_wanted" ] || echo "WANTED_ABI=$abi_wanted" >> "$envf"
	log "$target: $abi ready"
}

# fetch_cross_boot TARGET: what booting a cross target takes, beside its
# headers (fetch_cross first): the flavour's image and modules at the same
# ABI, extracted under $CACHE/kernels/<abi> as a line's are, and a root of
# its architecture (fetch_guest_root).  The env gains the boot settings.
fetch_cross_boot() {
	local target=$1 envf abi arch kdir debs root vmlinuz p
	envf=$(line_env "$target")
	abi=$(sed -n 's/^ABI=//p' "$envf")
	arch=$(sed -n 's/^CROSS_ARCH=//p' "$envf")
	kdir=$CACHE/kernels/$abi
	if ! grep -q '^VMLINUZ=' "$envf" || [ ! -e "$kdir/root/.done" ]; then
		log "$target: fetching the $abi image and modules"
		debs=$CACHE/debs/$abi-image
		rm -rf "$debs" "$kdir.tmp"; mkdir -p "$debs" "$kdir.tmp/root"
		(cd "$debs" && download "linux-image-$abi:$arch")
		for p in "$debs"/*.deb; do
			dpkg-deb -x "$p" "$kdir.tmp/root" || die "dpkg-deb -x failed for $p"
		done
		root=$kdir.tmp/root
		vmlinuz=$(image_ready "$root" "$abi" "$target") || exit 1
		touch "$root/.done"
		rm -rf "$kdir"; mv "$kdir.tmp" "$kdir"; rm -rf "$debs"
		sed -i '/^\(KROOT\|VMLINUZ\|KMODDIR\|GUEST_ARCH\|GUEST_ROOT\)=/d' "$envf"
		cat >> "$envf" <<EOF
KROOT=$kdir/root
VMLINUZ=${vmlinuz/$kdir.tmp/$kdir}
KMODDIR=$kdir/root/lib/modules/$abi
GUEST_ARCH=$arch
GUEST_ROOT=$CACHE/guest-root/$arch
EOF
	fi
	# gcc's own headers and crt files for the arm64 tc plugin (vm.sh
	# builds it against the guest's root); i386's is gcc -m32
	local bin gccv tcdir
	bin=$(sed -n 's/^CROSS_BIN=//p' "$envf")
	if [ "$arch" = arm64 ] && [ -n "$bin" ] && [ ! -e "${bin%/usr/bin}/.libgcc-dev" ]; then
		tcdir=${bin%/usr/bin}
		gccv=$(basename "$tcdir"); gccv=${gccv%%-aarch64*}
		debs=$CACHE/debs/lib$gccv-dev
		rm -rf "$debs"; mkdir -p "$debs"
		(cd "$debs" && download "lib$gccv-dev-arm64-cross/bookworm")
		dpkg-deb -x "$debs"/*.deb "$tcdir" || die "$target: extracting lib$gccv-dev-arm64-cross failed"
		rm -rf "$debs"; touch "$tcdir/.libgcc-dev"
	fi
	fetch_guest_root "$arch"
	log "$target: $abi boots"
}

# fetch_guest_root ARCH: a Debian 12 minbase root for ARCH with
# GUEST_ROOT_PKGS, the root its guests boot on.  debootstrap --foreign
# unpacks; its second stage (the packages' configuration) runs in a
# chroot where the host runs the binaries (i386 under IA32 emulation,
# about a minute), else under proot with Debian's qemu-user (arm64): no
# arm64 binfmt handler is registered on the host, proot runs every foreign exec
# through qemu-<arch> itself (7 minutes for arm64; in a TCG guest over 9p
# it took over 30).  proot -q qemu-i386 is no fallback for i386: proot
# takes an i386 binary for a host one and execs it natively.  A host that
# cannot exec i386 binaries (IA32 emulation off, or a hypervisor without
# 32-bit mode: "Exec format error") gets a binfmt_misc handler for the
# second stage only (i386_binfmt_on).
fetch_guest_root() {
	local arch=$1 dst=$CACHE/guest-root/$1 pkgs qarch
	pkgs=$(echo $GUEST_ROOT_PKGS | tr ' ' ,)
	# made with the packages asked for now: else made again
	[ -e "$dst/.configured" ] && [ -e "$dst/busybox" ] &&
		[ "$(cat "$dst/.configured")" = "$pkgs" ] && return 0
	case "$arch" in i386) qarch=i386;; arm64) qarch=aarch64;; *) die "no qemu-user for $arch";; esac
	need_pkgs debootstrap debian-archive-keyring proot qemu-user || return 1
	log "guest root $arch: debootstrap --foreign (minbase + $pkgs)"
	rm -rf "$dst.tmp"; mkdir -p "$dst.tmp"
	debootstrap --foreign --arch="$arch" --variant=minbase --include="$pkgs" \
		--keyring="$KEYRING" bookworm "$dst.tmp/root" "$MIRROR" > "$dst.tmp/debootstrap.log" 2>&1 ||
		{ tail -5 "$dst.tmp/debootstrap.log" >&2; die "debootstrap --foreign --arch=$arch failed"; }
	[ -x "$dst.tmp/root/debootstrap/debootstrap" ] || die "guest root $arch: no second stage"
	# The first stage unpacks the required set only: the initramfs's
	# busybox (vm.sh) comes from the .deb the second stage installs.
	dpkg-deb -x "$dst.tmp"/root/var/cache/apt/archives/busybox-static_*.deb "$dst.tmp/busybox-deb" &&
		mv "$dst.tmp/busybox-deb/bin/busybox" "$dst.tmp/busybox" ||
		die "guest root $arch: no busybox-static"
	rm -rf "$dst.tmp/busybox-deb"
	# The first stage leaves proc a link to the host's /proc.
	rm -f "$dst.tmp/root/proc"; mkdir -p "$dst.tmp/root/proc"
	# A handler a killed run left behind would pass the probe and stay.
	[ -e "$BINFMT_DIR/$BINFMT_NAME" ] && echo -1 > "$BINFMT_DIR/$BINFMT_NAME"
	if [ "$arch" = i386 ] && ! chroot "$dst.tmp/root" /usr/bin/true 2> /dev/null; then
		i386_binfmt_on "$dst.tmp/root"
	fi
	if chroot "$dst.tmp/root" /usr/bin/true 2> /dev/null; then
		# i386 on an amd64 kernel with IA32 emulation (or qemu-i386
		# through binfmt_misc): as a native chroot
		log "guest root $arch: debootstrap --second-stage (chroot${I386_BINFMT:+, i386 binaries under qemu-i386 via binfmt_misc})"
		DEBOOTSTRAP_DIR=/debootstrap chroot "$dst.tmp/root" /debootstrap/debootstrap --second-stage \
			> "$dst.tmp/second-stage.log" 2>&1
	else
		log "guest root $arch: debootstrap --second-stage under proot -q qemu-$qarch"
		DEBOOTSTRAP_DIR=/debootstrap proot -q "qemu-$qarch" -r "$dst.tmp/root" \
			-b /proc -b /sys -b /dev -w / /debootstrap/debootstrap --second-stage \
			> "$dst.tmp/second-stage.log" 2>&1
	fi || { i386_binfmt_off; tail -5 "$dst.tmp/second-stage.log" >&2; die "guest root $arch: the second stage failed"; }
	i386_binfmt_off
	rm -rf "$dst.tmp/root/var/cache/apt/archives"/*.deb
	rm -rf "$dst"; mv "$dst.tmp" "$dst"
	echo "$pkgs" > "$dst/.configured"
}

# i386_binfmt_on ROOT: run i386 ELF binaries through Debian's static
# qemu-i386 (taken out of bookworm's qemu-user-static .deb, 63 MB, into
# $CACHE/tools; not installed: 380 MB) until i386_binfmt_off.  The F flag
# opens the interpreter now, so it is found from inside the chroot.  The
# handler is host-wide while it exists: it is removed after the second
# stage, and on exit.  The magic and mask are qemu's own
# (scripts/qemu-binfmt-conf.sh): an i386 ELF executable or shared object.
I386_BINFMT= BINFMT_DIR=/proc/sys/fs/binfmt_misc BINFMT_NAME=softmq-i386
i386_binfmt_on() {
	local bm=$BINFMT_DIR qemu=$CACHE/tools/qemu-i386-static d
	if [ ! -x "$qemu" ]; then
		rm -rf "$CACHE"/qemu-static.*
		d=$(mktemp -d "$CACHE/qemu-static.XXXXXX")
		# bookworm's: backports' qemu-user-static is a transitional package
		(cd "$d" && download qemu-user-static/bookworm) &&
			dpkg-deb --fsys-tarfile "$d"/qemu-user-static_*.deb |
			tar -xO ./usr/bin/qemu-i386-static > "$d/qemu-i386-static" &&
			chmod +x "$d/qemu-i386-static" && mkdir -p "$CACHE/tools" &&
			mv "$d/qemu-i386-static" "$qemu"
		rm -rf "$d"
		[ -x "$qemu" ] || die "guest root i386: this host runs no i386 binary, and qemu-i386-static could not be taken out of qemu-user-static's .deb"
	fi
	[ -e "$bm/register" ] || mount -t binfmt_misc binfmt_misc "$bm" ||
		die "guest root i386: this host runs no i386 binary, and binfmt_misc cannot be mounted at $bm"
	# (fetch_guest_root removed a stale one before its probe)
	# Before the handler exists: a signal between the two would leave it.
	I386_BINFMT=$bm/$BINFMT_NAME
	trap i386_binfmt_off EXIT
	printf '%s' ":$BINFMT_NAME:M::\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x03\x00:\xff\xff\xff\xff\xff\xfe\xfe\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:$qemu:F" \
		> "$bm/register" || die "guest root i386: this host runs no i386 binary, and binfmt_misc refused a handler for qemu-i386"
	log "guest root i386: this host execs no i386 binary; qemu-i386 registered with binfmt_misc for the second stage"
	chroot "$1" /usr/bin/true ||
		die "guest root i386: i386 binaries do not run even through qemu-i386 ($bm/$BINFMT_NAME)"
}

i386_binfmt_off() {
	if [ -n "$I386_BINFMT" ] && [ -e "$I386_BINFMT" ]; then
		echo -1 > "$I386_BINFMT" || log "could not remove $I386_BINFMT"
	fi
	I386_BINFMT=
	return 0
}

# fix_links ENVFILE: lib/modules/<abi>/{build,source} point at /usr/src
# (absolute): point them at the extracted headers (or the sid chroot's),
# so `make -C /lib/modules/$(uname -r)/build` works on the host and in the
# guest, where this dir is bind-mounted at /lib/modules/<abi>.
fix_links() {
	local LINE ABI KROOT VMLINUZ KMODDIR KDIR TOOLCHAIN l t base
	# shellcheck disable=SC1090
	. "$1"
	base=$KROOT
	[ "$TOOLCHAIN" = sid ] && base=$SID_ROOT
	for l in build source; do
		[ -L "$KMODDIR/$l" ] || continue
		t=$(readlink "$KMODDIR/$l")
		case "$t" in
		/usr/src/*) ln -sfn "$base$t" "$KMODDIR/$l";;
		../../../src/*) ln -sfn "$base/usr/src/${t#../../../src/}" "$KMODDIR/$l";;
		esac
	done
	# 7.x: the headers are only in the sid chroot
	if [ "$TOOLCHAIN" = sid ] && [ ! -e "$KMODDIR/build" ] && [ -d "$SID_ROOT$KDIR" ]; then
		ln -sfn "$SID_ROOT$KDIR" "$KMODDIR/build"
	fi
}

prune() {   # drop kernels no line refers to any more
	local d used
	used=$(cat "$CACHE"/kernels/*.env 2>/dev/null | sed -n 's/^ABI=//p')
	for d in "$CACHE"/kernels/*/; do
		d=${d%/}
		[ -e "$d/root/.done" ] || continue
		grep -qxF "${d##*/}" <<<"$used" && continue
		log "pruning old kernel ${d##*/}"
		rm -rf "$d"
	done
	# cross targets' headers (fetch_cross); their gcc-* toolchains stay
	for d in "$CACHE"/cross/*/; do
		d=${d%/}
		case ${d##*/} in gcc-*) continue;; esac
		grep -qxF "${d##*/}" <<<"$used" && continue
		log "pruning old cross headers ${d##*/}"
		rm -rf "$d"
	done
}

# ------------------------------------------------------------------ tools
TOOLS=$CACHE/tools

fetch_tc615() {
	local dst=$TOOLS/iproute2-bpo ver root tcbin missing d
	[ "$dst/.done" -nt "$PAPT/lists.stamp" ] && return 0
	ver=$(papt apt-cache madison iproute2 | awk -F'|' '$3 ~ /bookworm-backports/ {gsub(/ /,"",$2); print $2; exit}')
	if [ -e "$dst/.done" ] && { [ -z "$ver" ] || grep -qxF "$ver" "$dst/.done"; }; then
		touch "$dst/.done"; return 0
	fi
	[ -n "$ver" ] || die "no iproute2 in bookworm-backports"
	log "fetching iproute2 $ver (bookworm-backports) for its tc"
	rm -rf "$dst.tmp"; mkdir -p "$dst.tmp/debs" "$dst.tmp/root"
	(cd "$dst.tmp/debs" && download "iproute2=$ver")
	dpkg-deb -x "$dst.tmp"/debs/iproute2_*.deb "$dst.tmp/root"
	root=$dst.tmp/root
	tcbin=$(ls "$root"/usr/sbin/tc "$root"/sbin/tc 2>/dev/null | head -n 1 || true)
	[ -n "$tcbin" ] || die "no tc in iproute2 $ver"
	libpath() { find "$root" -name '*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:; }
	missing=$(LD_LIBRARY_PATH=$(libpath) ldd "$tcbin" | awk '/not found/ {print $1}')
	if [ -n "$missing" ]; then
		# Fetch the dependencies the host lacks (or has too old) from
		# backports, the same way, until ldd is happy.
		log "tc $ver misses: $missing; fetching its library dependencies"
		for d in $(papt apt-cache depends --no-recommends --no-suggests "iproute2=$ver" |
				awk '/^ *\|?Depends:/ {print $2}' | grep '^lib' | sort -u); do
			(cd "$dst.tmp/debs" && { download "$d/bookworm-backports" 2>/dev/null ||
				download "$d"; }) || true
		done
		for p in "$dst.tmp"/debs/lib*.deb; do
			[ -e "$p" ] && dpkg-deb -x "$p" "$root"
		done
		missing=$(LD_LIBRARY_PATH=$(libpath) ldd "$tcbin" | awk '/not found/ {print $1}')
		[ -z "$missing" ] || die "tc $ver still misses libraries: $missing"
	fi
	rm -rf "$dst.tmp/debs"
	rm -rf "$dst"; mv "$dst.tmp" "$dst"
	root=$dst/root; tcbin=${tcbin/$dst.tmp/$dst}
	local lp; lp=$(libpath)
	{
		echo "#!/bin/sh"
		echo "# tc from iproute2 $ver (bookworm-backports), runs on bookworm"
		[ -n "$lp" ] && echo "export LD_LIBRARY_PATH=$lp\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
		echo "exec $tcbin \"\$@\""
	} > "$dst/tc"
	chmod +x "$dst/tc"
	"$dst/tc" -V >&2 || die "tc $ver does not run here"
	echo "$ver" > "$dst/.done"
}

fetch_source() {   # fetch_source 6.1|6.12: tc-testing + checkpatch extracts
	local v=$1 dst=$TOOLS/linux-source-$1 ver tarname
	[ "$dst/.done" -nt "$PAPT/lists.stamp" ] && return 0
	ver=$(papt apt-cache policy "linux-source-$v" 2>/dev/null | awk '/Candidate:/ {print $2}')
	if [ -e "$dst/.done" ] && { [ -z "$ver" ] || [ "$ver" = "(none)" ] || grep -qxF "$ver" "$dst/.done"; }; then
		touch "$dst/.done"; return 0
	fi
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no linux-source-$v package"
	log "fetching linux-source-$v $ver (tc-testing, checkpatch)"
	rm -rf "$dst.tmp"; mkdir -p "$dst.tmp/deb"
	(cd "$dst.tmp/deb" && download "linux-source-$v=$ver")
	tarname=$(dpkg-deb -c "$dst.tmp"/deb/*.deb | awk '{print $6}' | grep -E '/linux-source-.*\.tar\.(xz|gz|bz2|zst)$' | head -n 1)
	[ -n "$tarname" ] || die "no source tarball in linux-source-$v"
	local z
	case "$tarname" in *.xz) z=-J;; *.gz) z=-z;; *.bz2) z=-j;; *) z=--zstd;; esac
	dpkg-deb --fsys-tarfile "$dst.tmp"/deb/*.deb | tar -xO "$tarname" |
		tar -x "$z" -C "$dst.tmp" --strip-components=1 --wildcards \
			"linux-source-$v/tools/testing/selftests/tc-testing" \
			"linux-source-$v/scripts/checkpatch.pl" \
			"linux-source-$v/scripts/spelling.txt" \
			"linux-source-$v/scripts/const_structs.checkpatch" \
			"linux-source-$v/COPYING" 2>&1 | grep -v 'Not found in archive' >&2 || true
	[ -e "$dst.tmp/scripts/checkpatch.pl" ] || die "extracting linux-source-$v failed"
	[ -e "$dst.tmp/tools/testing/selftests/tc-testing/tdc.py" ] || die "no tdc.py in linux-source-$v"
	rm -rf "$dst.tmp/deb"
	echo "$ver" > "$dst.tmp/.done"
	rm -rf "$dst"; mv "$dst.tmp" "$dst"
}

# fetch_tc_i386: Debian 12's i386 tc and the libraries it needs, for the
# tc plugin's 32-bit host cases (qemu-i386 -L runs it: this host's kernel
# runs no i386 binaries).  debootstrap --foreign only downloads and
# unpacks the essential set; the rest (iproute2 and its libraries) is
# extracted here from the .debs it fetched.  Nothing runs in the root.
fetch_tc_i386() {
	local dst=$TOOLS/i386-tc root d
	[ -e "$dst/.done" ] && return 0
	need_pkgs debootstrap debian-archive-keyring || return 1
	root=$dst.tmp/root
	rm -rf "$dst.tmp"; mkdir -p "$dst.tmp"
	log "fetching Debian 12's i386 tc (debootstrap --foreign, minbase + iproute2)"
	debootstrap --foreign --arch=i386 --variant=minbase --include=iproute2 \
		--keyring="$KEYRING" bookworm "$root" "$MIRROR" > "$dst.tmp/debootstrap.log" 2>&1 ||
		{ tail -5 "$dst.tmp/debootstrap.log" >&2; die "debootstrap --foreign --arch=i386 failed"; }
	while read -r _ d; do
		dpkg-deb -x "$root$d" "$root" || die "dpkg-deb -x $d failed"
	done < "$root/debootstrap/debpaths"
	rm -rf "$root/var/cache/apt/archives"/*.deb
	[ -x "$root/sbin/tc" ] || die "no sbin/tc in the i386 root"
	rm -rf "$dst"; mv "$dst.tmp" "$dst"
	touch "$dst/.done"
}

fetch_tools() {
	if ! papt_update; then
		[ -e "$TOOLS/iproute2-bpo/.done" ] && [ -e "$TOOLS/linux-source-6.12/.done" ] &&
			[ -e "$TOOLS/linux-source-6.1/.done" ] && [ -e "$TOOLS/i386-tc/.done" ] &&
			return 0
		die "tools: cannot read the Debian package lists (offline?)"
	fi
	mkdir -p "$TOOLS"
	fetch_tc615
	fetch_tc_i386
	fetch_source 6.1
	fetch_source 6.12
}

path_of() {
	case "$1" in
	tdc)
		case "${2:-6.12}" in 6.1|6.1-*) echo "$TOOLS/linux-source-6.1/tools/testing/selftests/tc-testing";;
		*) echo "$TOOLS/linux-source-6.12/tools/testing/selftests/tc-testing";; esac ;;
	checkpatch) echo "$TOOLS/linux-source-6.12/scripts/checkpatch.pl" ;;
	tc615) echo "$TOOLS/iproute2-bpo/tc" ;;
	tc-i386-root) echo "$TOOLS/i386-tc/root" ;;
	kdir|vmlinuz)
		[ -n "${2:-}" ] || die "path $1 needs a LINE"
		# shellcheck disable=SC1090
		( . "$(line_env "$2")"; if [ "$1" = kdir ]; then echo "$KDIR"; else echo "$VMLINUZ"; fi ) ;;
	*) die "path: unknown '$1' (tdc, checkpatch, tc615, tc-i386-root, kdir, vmlinuz)" ;;
	esac
}

with_lock() {   # serialize fetches of concurrent runs
	exec 8>"$CACHE/fetch.lock"
	flock -w 3600 8 || die "cannot take $CACHE/fetch.lock"
}

cmd=${1:-}; shift || true
case "$cmd" in
fetch)
	[ $# -gt 0 ] || die "usage: $0 fetch LINE..."
	[ "$(id -u)" = 0 ] || die "fetching needs root (apt-get download as root, chroot)"
	need_pkgs kmod xz-utils zstd dpkg debian-archive-keyring || exit 1
	with_lock
	for l in "$@"; do
		if is_cross_line "$l"; then
			fetch_line "${l%%-*}"; fetch_cross "$l"; fetch_cross_boot "$l"
		else
			fetch_line "$l"
		fi
	done ;;
env)
	[ -e "$(line_env "${1:?LINE}")" ] || die "line $1 not fetched; run: $0 fetch $1"
	cat "$(line_env "$1")" ;;
fetch-cross)
	[ $# -gt 0 ] || die "usage: $0 fetch-cross TARGET..."
	[ "$(id -u)" = 0 ] || die "fetching needs root (apt-get download as root, chroot)"
	with_lock
	for l in "$@"; do fetch_cross "$l"; done ;;
tools) with_lock; fetch_tools ;;
path) path_of "$@" ;;
resolve) papt_update >/dev/null; resolve "${1:?LINE}" ;;
*) sed -n '3,33p' "$0" | sed 's/^# \{0,1\}//'; exit 1 ;;
esac
exit
}
