#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side install tests: make install/uninstall into a DESTDIR,
# dkms add/build/install/uninstall/remove in private trees, make deb +
# lintian.  Nothing here touches the machine's /lib/modules, /usr/src,
# /var/lib/dkms or dpkg database; loading, autoload and dpkg -i are tested
# inside the VM (tests/vm/80-install-*.sh), which installs the packages
# this leaves in build/deb/ (as `make deb` does).
#
#   tests/install/check.sh [LINE...]      default: 6.1 6.12 7.2 7.2-rt
#
# Prints PASS <name> / FAIL <name>: <why> / SKIP <name>: <reason> lines and
# ends with "N passed, N failed, N skipped"; exits 1 if anything failed.
# Needs root for dkms install and the sid chroot (7.x lines); without it
# those cases are SKIPs.  SOFTMQ_INSTALL_NO_DEB=1 skips the (20 s) make deb.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../testbed/lib.sh
. "$HERE/../testbed/lib.sh"     # REPO, CACHE, line_env, PATH

LINES=("$@")
[ ${#LINES[@]} -gt 0 ] || LINES=(6.1 6.12 7.2 7.2-rt)

. "$HERE/../cases.sh"
# check NAME WHY CMD...: PASS if CMD succeeds, else FAIL with WHY.
check() { local n=$1 w=$2; shift 2; if "$@"; then pass "$n"; else fail "$n" "$w"; fi; }

TMP=$(mktemp -d /tmp/softmq-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1

V=$(cat "$REPO/VERSION")
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

# ---------------------------------------------------------------- static
conf_v=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$REPO/dkms.conf")
deb_v=$(dpkg-parsechangelog -l "$REPO/debian/changelog" -S Version 2>/dev/null)
check install-version-consistent \
	"VERSION=$V, dkms.conf PACKAGE_VERSION=$conf_v, debian/changelog=$deb_v" \
	test "$V" = "$conf_v" -a "$V" = "$deb_v"

# dkms sources dkms.conf in bash with these set: do the same.
conf_vars=$(kernelver=6.12.1-amd64 kernel_source_dir=/K dkms_tree=/D bash -c '
	set -e; . "$1"
	echo "name=$PACKAGE_NAME mod=${BUILT_MODULE_NAME[0]} dest=${DEST_MODULE_LOCATION[0]}"
	echo "auto=$AUTOINSTALL"; echo "make=${MAKE[0]}"' _ "$REPO/dkms.conf" 2>&1)
check install-dkms-conf-fields "dkms.conf fields: $conf_vars" \
	grep -qx 'name=softmq mod=sch_softmq dest=/updates/dkms' <<<"$conf_vars"
check install-dkms-conf-autoinstall "AUTOINSTALL is not yes: $conf_vars" \
	grep -qx 'auto=yes' <<<"$conf_vars"
check install-dkms-conf-make "MAKE does not build with kernel_source_dir: $conf_vars" \
	grep -qx 'make=make -C /K M=/D/softmq/'"$V"'/build modules' <<<"$conf_vars"

# BUILD_EXCLUSIVE_KERNEL: every line's ABI (and newer) in, older out.
excl=$(bash -c '. "$1"; echo "$BUILD_EXCLUSIVE_KERNEL"' _ "$REPO/dkms.conf")
bad=""
for k in 6.1.0-57-amd64 6.12.117+deb12-amd64 6.9.1 7.2.13+deb14-amd64 \
	7.2.13+deb14-rt-amd64 10.0.1-amd64; do
	[[ $k =~ $excl ]] || bad="$bad $k(rejected)"
done
for k in 5.10.0-30-amd64 6.0.12-amd64 4.19.0-27-amd64; do
	[[ $k =~ $excl ]] && bad="$bad $k(accepted)"
done
check install-dkms-conf-exclusive "BUILD_EXCLUSIVE_KERNEL '$excl':$bad" test -z "$bad"

# make dkms-src: exactly the files dkms needs.
if make -s -C "$REPO" dkms-src DKMS_SRC_ROOT="$TMP/dkms-src" > "$TMP/dkms-src.log" 2>&1; then
	got=$(cd "$TMP/dkms-src/softmq-$V" && find . -type f | sort | tr '\n' ' ')
	want=$(cd "$REPO" && { echo ./dkms.conf; echo ./Kbuild; echo ./VERSION
		find src include -type f \( -name '*.c' -o -name '*.h' \) -printf './%p\n'; } |
		sort | tr '\n' ' ')
	check install-dkms-src-files "make dkms-src gave [$got], want [$want]" test "$got" = "$want"
else
	fail install-dkms-src-files "make dkms-src failed: $(tail -n 3 "$TMP/dkms-src.log")"
fi

# ---------------------------------------------------------------- per line
# A source copy: what make install needs, no build products, no .git (so
# the module's version is the VERSION file, as for dkms and the .deb).
copy_tree() {
	rm -rf "$1"; mkdir -p "$1"
	(cd "$REPO" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
		--exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.so' --exclude=out \
		--exclude=modules.order --exclude=Module.symvers \
		Makefile Kbuild VERSION dkms.conf src include tc-plugin) | tar -x -C "$1"
}

# modinfo_checks PREFIX KO ABI
modinfo_checks() {
	local p=$1 ko=$2 abi=$3 f
	f=$(modinfo -F version "$ko" 2>&1)
	check "$p-modinfo-version" "version '$f', want '$V'" test "$f" = "$V"
	f=$(modinfo -F description "$ko" 2>&1)
	check "$p-modinfo-description" "no description" test -n "$f"
	f=$(modinfo -F license "$ko" 2>&1)
	check "$p-modinfo-license" "license '$f', want GPL" test "$f" = GPL
	f=$(modinfo -F alias "$ko" 2>&1)
	check "$p-modinfo-alias" "aliases '$f', want net-sch-softmq" grep -qx net-sch-softmq <<<"$f"
	f=$(modinfo -F vermagic "$ko" 2>&1)
	check "$p-modinfo-vermagic" "vermagic '$f' is not for $abi" test "${f%% *}" = "$abi"
}

# make_install_line LINE: make install / uninstall with DESTDIR and KDIR.
make_install_line() {
	local line=$1 p=install-make-$1 src=$TMP/src-$1 stage=$TMP/stage-$1 log=$TMP/make-$1.log
	local mk=(make -C "$src") ko left
	copy_tree "$src"
	if [ "$TOOLCHAIN" = sid ]; then
		if [ $ROOT = 0 ]; then skip "$p" "the $line headers need the sid chroot (root)"; return; fi
		if ! "$TB_DIR/sidroot.sh" status > /dev/null 2>&1; then
			skip "$p" "no sid chroot: $("$TB_DIR/sidroot.sh" status 2>&1 | tail -n 1)"; return
		fi
		# The chroot has gcc-16 for the kernel but no plain "gcc", no
		# dpkg-architecture and no xz (modules_install compresses for
		# 7.2): build the (kernel-independent) plugin here, name the
		# multiarch dir, and lend it the host's xz (sid's liblzma5 is
		# newer, so it runs).
		make -C "$src" plugin > "$log" 2>&1 ||
			{ fail "$p" "make plugin failed: $(tail -n 3 "$log" | tr '\n' ' ')"; return; }
		mkdir -p "$TMP/bin"; cp "$(command -v xz)" "$TMP/bin/xz"
		mk=("$TB_DIR/sidroot.sh" run --bind "$TMP" -- env PATH="$TMP/bin:/usr/sbin:/usr/bin:/sbin:/bin"
			make -C "$src" MULTIARCH="$MULTIARCH")
	fi
	if ! "${mk[@]}" install DESTDIR="$stage" KDIR="$KDIR" >> "$log" 2>&1; then
		fail "$p" "make install DESTDIR=… KDIR=… failed: $(grep -iE 'error|fail' "$log" | head -n 3 | tr '\n' ' ')"
		return
	fi
	pass "$p"
	ko=$(ls "$stage/lib/modules/$ABI/updates/"sch_softmq.ko* 2>/dev/null | head -n 1)
	check "$p-module-path" "no sch_softmq.ko* in DESTDIR/lib/modules/$ABI/updates: $(cd "$stage" && find . -type f | tr '\n' ' ')" \
		test -n "$ko"
	check "$p-plugin-path" "no DESTDIR/usr/lib/$MULTIARCH/tc/q_softmq.so" \
		test -f "$stage/usr/lib/$MULTIARCH/tc/q_softmq.so"
	check "$p-manpage-path" "no DESTDIR/usr/share/man/man8/tc-softmq.8" \
		test -f "$stage/usr/share/man/man8/tc-softmq.8"
	check "$p-no-depmod-in-destdir" "make install ran depmod into DESTDIR" \
		test ! -e "$stage/lib/modules/$ABI/modules.dep"
	[ -n "$ko" ] || return
	modinfo_checks "$p" "$ko" "$ABI"
	# What autoload will resolve: depmod on the staging tree, then ask
	# modprobe which file each name the kernel may request leads to.
	if depmod -b "$stage" "$ABI" 2> "$TMP/depmod-$line.log"; then
		local n r bad=""
		for n in net-sch-softmq sch_softmq; do
			r=$(modprobe -d "$stage" -S "$ABI" --show-depends "$n" 2>&1)
			grep -q "^insmod $stage/lib/modules/$ABI/updates/sch_softmq.ko" <<<"$r" || bad="$bad $n→'$r'"
		done
		check "$p-autoload-names" "modprobe does not resolve:$bad" test -z "$bad"
		rm -f "$stage/lib/modules/$ABI"/modules.*
	else
		fail "$p-autoload-names" "depmod -b failed: $(head -n 2 "$TMP/depmod-$line.log")"
	fi
	if "${mk[@]}" uninstall DESTDIR="$stage" KDIR="$KDIR" > "$log" 2>&1; then
		left=$(cd "$stage" && find . ! -type d | tr '\n' ' ')
		check "$p-uninstall" "left behind: $left" test -z "$left"
	else
		fail "$p-uninstall" "make uninstall failed: $(tail -n 3 "$log" | tr '\n' ' ')"
	fi
}

# dkms_line LINE: dkms add/build/install/status/uninstall/remove against the
# line's extracted headers, in private trees under $TMP.  dkms' own signing
# config (sign_file, mok_signing_key, mok_certificate) is given in the
# environment, so the key dkms generates lands in $TMP, not /var/lib/dkms.
# 7.x lines: the host's dkms script runs inside the sid chroot (gcc-16),
# with x86_64-linux-gnu-{strip,readelf} under their plain names; that
# chroot has no openssl, so no signing there.
dkms_line() {
	local line=$1 p=install-dkms-$1 d=$TMP/dkms-$1 out rc ko st
	local signing=1
	if [ $ROOT = 0 ]; then skip "$p" "dkms install needs root"; return; fi
	command -v dkms > /dev/null || { fail "$p" "dkms is not installed (make check installs it: apt-get install dkms)"; return; }
	mkdir -p "$d/src" "$d/tree" "$d/lib/modules/$ABI" "$d/keys" "$d/bin"
	cp -a "$TMP/dkms-src/softmq-$V" "$d/src/"
	local D=(--dkmstree "$d/tree" --sourcetree "$d/src" --installtree "$d/lib/modules")
	local K=(-k "$ABI" --kernelsourcedir "$KDIR")
	local ENV=(sign_file="$KDIR/scripts/sign-file" mok_signing_key="$d/keys/mok.key"
		mok_certificate="$d/keys/mok.pub")
	local RUN=(env "${ENV[@]}")
	if [ "$TOOLCHAIN" = sid ]; then
		if ! "$TB_DIR/sidroot.sh" status > /dev/null 2>&1; then
			skip "$p" "no sid chroot: $("$TB_DIR/sidroot.sh" status 2>&1 | tail -n 1)"; return
		fi
		signing=0
		cp "$(command -v dkms)" "$d/bin/dkms"
		for st in strip readelf; do
			printf '#!/bin/sh\nexec x86_64-linux-gnu-%s "$@"\n' "$st" > "$d/bin/$st"
			chmod +x "$d/bin/$st"
		done
		RUN=("$TB_DIR/sidroot.sh" run --bind "$TMP" -- env
			PATH="$d/bin:/usr/sbin:/usr/bin:/sbin:/bin" sign_file=/nonexistent)
	fi
	dk() { "${RUN[@]}" dkms "$@" "${D[@]}" > "$d/last.log" 2>&1; }
	dklog() { grep -v '^$' "$d/last.log" | tail -n 4 | tr '\n' ' '; }

	if ! dk add -m softmq -v "$V"; then fail "$p-add" "$(dklog)"; return; fi
	pass "$p-add"
	if ! dk build -m softmq -v "$V" "${K[@]}"; then
		fail "$p-build" "$(dklog); make.log: $(tail -n 5 "$d/tree/softmq/$V/build/make.log" 2>/dev/null | tr '\n' ' ')"
		dk remove -m softmq -v "$V" --all; return
	fi
	pass "$p-build"
	ko=$(ls "$d/tree/softmq/$V/$ABI/x86_64/module/"sch_softmq.ko* 2>/dev/null | head -n 1)
	if [ -n "$ko" ]; then
		modinfo_checks "$p" "$ko" "$ABI"
		if [ $signing = 1 ]; then
			st=$(modinfo -F signer "$ko" 2>&1)
			check "$p-signed-with-mok" "module signer '$st', want dkms' generated MOK" \
				test "$st" = "DKMS module signing key" -a -s "$d/keys/mok.pub"
		else
			skip "$p-signed-with-mok" "no openssl in the sid chroot (signing is checked on 6.x)"
		fi
	else
		fail "$p-built-module" "no module in the dkms tree: $(find "$d/tree" -name '*.ko*')"
	fi
	if dk install -m softmq -v "$V" "${K[@]}" --no-depmod; then
		pass "$p-install"
		ko=$(ls "$d/lib/modules/$ABI/updates/dkms/"sch_softmq.ko* 2>/dev/null | head -n 1)
		check "$p-install-path" "not in <installtree>/$ABI/updates/dkms: $(find "$d/lib" -type f | tr '\n' ' ')" \
			test -n "$ko"
	else
		fail "$p-install" "$(dklog)"
	fi
	dk status -m softmq; cp "$d/last.log" "$d/status"
	check "$p-status" "dkms status: $(cat "$d/status")" \
		grep -q "^softmq/$V, $ABI, x86_64: installed" "$d/status"
	if dk uninstall -m softmq -v "$V" -k "$ABI" --no-depmod; then
		st=$(find "$d/lib" -type f | tr '\n' ' ')
		check "$p-uninstall" "left in the install tree: $st" test -z "$st"
	else
		fail "$p-uninstall" "$(dklog)"
	fi
	if dk remove -m softmq -v "$V" --all; then
		st=$(find "$d/tree" -mindepth 1 | tr '\n' ' ')
		check "$p-remove" "left in the dkms tree: $st" test -z "$st"
	else
		fail "$p-remove" "$(dklog)"
	fi
	# BUILD_EXCLUSIVE: a kernel older than 6.1 is skipped (77), not failed.
	dk add -m softmq -v "$V"
	rc=0; dk build -m softmq -v "$V" -k 5.10.0-30-amd64 --kernelsourcedir "$KDIR" || rc=$?
	check "$p-exclusive-skip" "dkms build for 5.10 exited $rc, want 77 (skipped)" test $rc = 77
	dk remove -m softmq -v "$V" --all
}

# The machine's own dkms state must not change.
dkms_state() { find /var/lib/dkms /usr/src -maxdepth 2 2>/dev/null | grep -i softmq; ls /var/lib/dkms 2>/dev/null; }
state0=$(dkms_state)

for line in "${LINES[@]}"; do
	envf=$(line_env "$line")
	if [ ! -e "$envf" ]; then
		"$TB_DIR/kernels.sh" fetch "$line" > "$TMP/fetch-$line.log" 2>&1
	fi
	if [ ! -e "$envf" ]; then
		why=$(grep -v '^\[testbed\] [a-z0-9.]*: ' "$TMP/fetch-$line.log" | tail -n 1)
		skip "install-make-$line" "kernel line not fetched: ${why:-see tests/testbed/kernels.sh fetch $line}"
		skip "install-dkms-$line" "kernel line not fetched"
		continue
	fi
	# shellcheck disable=SC1090
	(. "$envf"; make_install_line "$line"; dkms_line "$line"; echo "TALLY $CASES_PASS $CASES_FAIL $CASES_SKIP") > "$TMP/line.out"
	grep -v '^TALLY ' "$TMP/line.out"
	read -r _ CASES_PASS CASES_FAIL CASES_SKIP < <(grep '^TALLY ' "$TMP/line.out")
done

state1=$(dkms_state)
check install-machine-dkms-untouched "the machine's dkms state changed: [$state0] -> [$state1]" \
	test "$state0" = "$state1"
check install-no-machine-mok-key "a MOK key appeared in /var/lib/dkms" \
	test ! -e /var/lib/dkms/mok.key -o -n "$(grep -x mok.key <<<"$state0")"

# ---------------------------------------------------------------- make deb
deb_checks() {
	# Into make deb's own output dir: the VM test installs these.
	local out=$REPO/build/deb log=$TMP/deb.log dd tc f
	if [ "${SOFTMQ_INSTALL_NO_DEB:-0}" = 1 ]; then skip install-deb "SOFTMQ_INSTALL_NO_DEB=1"; return; fi
	if ! "$REPO/debian/build-debs.sh" "$out" > "$log" 2>&1; then
		if grep -q 'missing packages' "$log"; then skip install-deb "$(grep 'missing packages' "$log")"
		else fail install-deb "debian/build-debs.sh failed: $(tail -n 4 "$log" | tr '\n' ' ')"; fi
		return
	fi
	pass install-deb
	sed -n '/^build-debs: packages:/,$p' "$log" | sed 's/^/    /'
	dd=$out/softmq-dkms_${V}_all.deb
	tc=$(ls "$out"/softmq-tc_"${V}"_*.deb 2>/dev/null | head -n 1)
	check install-deb-files "want softmq-dkms_${V}_all.deb and softmq-tc_${V}_<arch>.deb: $(ls "$out")" \
		test -f "$dd" -a -n "$tc"
	[ -f "$dd" ] && [ -n "$tc" ] || return
	f=$(dpkg-deb -f "$dd" Depends)
	check install-deb-dkms-depends "softmq-dkms Depends '$f' lacks dkms" grep -q 'dkms' <<<"$f"
	f=$(dpkg-deb -f "$tc" Depends)
	check install-deb-tc-depends "softmq-tc Depends '$f' lacks iproute2" grep -q 'iproute2' <<<"$f"
	rm -rf "$TMP/x"; mkdir -p "$TMP/x/dkms" "$TMP/x/tc"
	dpkg-deb -x "$dd" "$TMP/x/dkms"; dpkg-deb -x "$tc" "$TMP/x/tc"
	check install-deb-dkms-source "usr/src/softmq-$V differs from make dkms-src" \
		diff -r "$TMP/x/dkms/usr/src/softmq-$V" "$TMP/dkms-src/softmq-$V"
	check install-deb-dkms-postinst "no dkms postinst in softmq-dkms" \
		bash -c 'dpkg-deb --ctrl-tarfile "$1" | tar -xO ./postinst | grep -q common.postinst' _ "$dd"
	check install-deb-tc-plugin "no usr/lib/$MULTIARCH/tc/q_softmq.so in softmq-tc" \
		test -f "$TMP/x/tc/usr/lib/$MULTIARCH/tc/q_softmq.so"
	check install-deb-tc-manpage "no tc-softmq.8.gz in softmq-tc" \
		test -f "$TMP/x/tc/usr/share/man/man8/tc-softmq.8.gz"
	f=$(grep -E '^[EW]:' "$out/lintian.txt")
	check install-deb-lintian "lintian errors/warnings: $f" test -z "$f"
	grep -E '^[IPXO]:' "$out/lintian.txt" | sed 's/^/    lintian /'
}
deb_checks

cases_summary --skipped
