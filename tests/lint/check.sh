#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kernel-side code against the tools net/sched reviewers run on it:
#
#   tests/lint/check.sh [LINE...]      (what make check runs, after the
#                                       kernel fetch; default 6.1 6.12)
#
#   checkpatch   checkpatch.pl --strict (linux-source-6.12's, see
#                tests/testbed/kernels.sh tools) on every kernel source we
#                ship or load: src/, include/, tests/modules/.  Run without
#                a kernel tree, it cannot know which CamelCase names the
#                kernel defines; the three it flags here are the kernel's
#                (Qdisc, Qdisc_ops, Qdisc_class_ops) and C11's (_Alignas, userspace half of
#                the ring header), and only those are let through.
#   sparse       make C=2 CHECK=sparse against each Debian line's headers
#                (the 7.x lines in the sid chroot, with sid's sparse,
#                installed there on first use).  Any sparse warning fails.
#   codel        include/softmq_codel.h against each line's own
#                codel_dequeue() on random traces (tests/ring/codel.c)
#   cross        W=1 builds for arm64 (6.12, 7.2) and i386 (6.1 686-pae)
#                with Debian's cross gcc (tests/testbed/kernels.sh
#                fetch-cross): nothing of them boots here.
# W=1 is checked where the module is built (tests/testbed/build.sh).
# Prints PASS/FAIL/SKIP lines and "N passed, N failed, N skipped".
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TB=$REPO/tests/testbed
LINES=("$@")
[ ${#LINES[@]} -gt 0 ] || LINES=(6.1 6.12)
OUT=$REPO/build/lint
mkdir -p "$OUT"
. "$HERE/../cases.sh"
. "$TB/lib.sh"

# ---------------------------------------------------------------- checkpatch
KNOWN_CAMEL='Avoid CamelCase: <(Qdisc|Qdisc_ops|Qdisc_class_ops|_Alignas)>'
cp_pl=$("$TB/kernels.sh" path checkpatch 2>/dev/null)
if [ ! -x "$cp_pl" ]; then
	fail checkpatch "no checkpatch.pl extract (tests/testbed/kernels.sh tools)"
else
	cd "$REPO" || exit 1
	for f in src/*.c src/*.h include/*.h include/uapi/*.h tests/modules/*/*.c; do
		[ -e "$f" ] || continue
		log=$OUT/checkpatch-$(echo "$f" | tr / _).log
		"$cp_pl" --strict --no-tree --terse --show-types -f "$f" > "$log" 2>&1
		rc=$?
		bad=$(grep -E ': (ERROR|WARNING|CHECK):' "$log" | grep -Ev "$KNOWN_CAMEL")
		# --terse: exit 0 and no output is a clean file; exit 1 is
		# "found something" (the known CamelCase included) and ends with
		# its total line; anything else is checkpatch not running
		if [ $rc = 0 ] && [ -s "$log" ] && ! grep -q '^total: 0 errors, 0 warnings' "$log"; then
			fail "checkpatch-$f" "checkpatch.pl exited 0 but printed: $(head -n 2 "$log" | tr '\n' ' ')"
		elif [ $rc != 0 ] && { [ $rc != 1 ] || ! grep -q '^total: [0-9]* errors' "$log"; }; then
			fail "checkpatch-$f" "checkpatch.pl exited $rc without its total line: $(tail -n 2 "$log" | tr '\n' ' ')"
		elif [ -n "$bad" ]; then
			fail "checkpatch-$f" "$(echo "$bad" | head -n 3 | tr '\n' ' ')(log: ${log#"$REPO"/})"
		else
			pass "checkpatch-$f"
		fi
	done
fi

# ---------------------------------------------------------------- sparse
if ! command -v sparse > /dev/null; then
	fail sparse "sparse is not installed (apt-get install sparse; make check installs it)"
else
	for line in "${LINES[@]}"; do
		kdir=$("$TB/kernels.sh" path kdir "$line" 2>/dev/null)
		# the 7.x lines build in the sid chroot: its own sparse there.
		# Their Makefile asks scripts/checker-valid.sh, which Debian's
		# headers do not ship, and turns C= off without it: the
		# command line's KBUILD_CHECKSRC=2 keeps it on ("CHECK" lines
		# below prove sparse ran).
		in_sid=()
		if [ "$(line_toolchain "$line")" = sid ]; then
			in_sid=("$TB/sidroot.sh" run --bind "$OUT" --)
			if ! "${in_sid[@]}" sh -c 'command -v sparse >/dev/null ||
				apt-get install -y -q sparse || { apt-get update -q && apt-get install -y -q sparse; }' \
				> "$OUT/sparse-$line-install.log" 2>&1; then
				fail "sparse-$line" "sparse not installable in the sid chroot (log: build/lint/sparse-$line-install.log)"
				continue
			fi
			kdir=$SID_ROOT$kdir
		fi
		if [ ! -d "$kdir" ]; then
			fail "sparse-$line" "no headers for $line (tests/testbed/kernels.sh fetch $line)"
			continue
		fi
		for mod in softmq modules/slowdev modules/warnme; do
			src=$OUT/sparse-$line/$mod log=$OUT/sparse-$line-${mod##*/}.log
			rm -rf "$src"; mkdir -p "$src"
			case $mod in
			softmq) cp -r "$REPO/Kbuild" "$REPO/src" "$REPO/include" "$src/";;
			*) cp -r "$REPO/tests/$mod/." "$src/";;
			esac
			if ! "${in_sid[@]}" make -C "${kdir#"${in_sid[*]:+$SID_ROOT}"}" M="$src" C=2 CHECK=sparse W=1 \
				${in_sid[*]:+KBUILD_CHECKSRC=2} modules > "$log" 2>&1; then
				fail "sparse-$line-${mod##*/}" "make failed (log: ${log#"$REPO"/})"
			elif ! grep -q '^  CHECK ' "$log"; then
				fail "sparse-$line-${mod##*/}" "sparse did not run (log: ${log#"$REPO"/})"
			elif grep -E 'warning:|error:' "$log" | grep -q .; then
				fail "sparse-$line-${mod##*/}" "$(grep -E 'warning:|error:' "$log" | head -n 3 | tr '\n' ' ')"
			else
				pass "sparse-$line-${mod##*/}" "$(grep -c '^  CHECK ' "$log") file(s) checked"
			fi
		done
	done
fi

# ---------------------------------------------------------------- codel
# include/softmq_codel.h against each kernel's own codel_dequeue()
# (tests/ring/codel.c, on tests/ring/kshim-codel): the kernel's
# net/codel.h and net/codel_impl.h, copied out of its headers' -common
# tree, and nothing else of the kernel's.  One case per -common tree,
# named by its version: the -rt flavour shares its line's, and a cross
# line (686-pae) its base line's, which is checked where that line is.
codel_seen=" "
for line in "${LINES[@]}"; do
	is_cross_line "$line" && continue
	kdir=$("$TB/kernels.sh" path kdir "$line" 2>/dev/null)
	root=""
	[ "$(line_toolchain "$line")" = sid ] && root=$SID_ROOT
	common=$(sed -n 's/^include \(.*\)\/Makefile$/\1/p' "$root$kdir/Makefile" 2>/dev/null | head -n 1)
	case $common in "$CACHE"/*) ;; ?*) common=$root$common;; esac
	if [ -z "$common" ] || [ ! -e "$common/include/net/codel_impl.h" ]; then
		fail "codel-equivalence-$line" "no net/codel_impl.h in $line's headers (${common:-no -common tree named in $root$kdir/Makefile})"
		continue
	fi
	case $codel_seen in *" $common "*) continue;; esac
	codel_seen="$codel_seen$common "
	name=codel-equivalence-$(basename "$common" | sed 's/^linux-headers-//; s/-common$//')
	d=$OUT/$name log=$OUT/$name/build.log
	rm -rf "$d"; mkdir -p "$d/net"
	cp "$common/include/net/codel.h" "$common/include/net/codel_impl.h" "$d/net/"
	if ! gcc -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror \
		-I"$REPO/tests/ring/kshim-codel" -I"$REPO/tests/ring/kshim" -I"$d" \
		-I"$REPO/include" "$REPO/tests/ring/codel.c" -o "$d/codel" > "$log" 2>&1; then
		fail "$name" "build failed: $(grep -m1 'error' "$log") (log: ${log#"$REPO"/})"
		continue
	fi
	res=$("$d/codel" 2>&1)
	case $res in
	"PASS codel-equivalence: "*) pass "$name" "line $line: ${res#PASS codel-equivalence: }";;
	*) fail "$name" "line $line: ${res#FAIL codel-equivalence: }";;
	esac
done

# ---------------------------------------------------------------- cross
# The other architectures Debian ships each line for, built only: arm64 on
# 6.12 and 7.2, i386 (686-pae) on 6.1 (tests/testbed/lib.sh
# line_cross_targets).  The same W=1 rule as the lines' own builds: a
# warning fails (32-bit long and size_t, 64-bit atomics, arm64's
# per-CPU and barrier macros are what an amd64 build cannot see).
for line in "${LINES[@]}"; do
	for target in $(line_cross_targets "$line"); do
		log=$OUT/cross-$target-fetch.log
		"$TB/kernels.sh" fetch-cross "$target" > "$log" 2>&1
		rc=$?
		if [ $rc -eq 2 ] && grep -qF "$PAPT_LEFT_OUT_WHY" "$log"; then
			skip "build-$target" "$(tail -n 1 "$log")"
			continue
		elif [ $rc -ne 0 ]; then
			fail "build-$target" "kernels.sh fetch-cross $target failed: $(grep -v '^Get:' "$log" | tail -n 1) (log: ${log#"$REPO"/})"
			continue
		fi
		tenv=$(line_env "$target")
		standin=$(sed -n 's/^WANTED_ABI=//p' "$tenv")
		[ -z "$standin" ] ||
			echo "    # build-$target: $(sed -n 's/^ABI=//p' "$tenv") stands in for $standin (its index could not be fetched: tests/README.md)"
		log=$OUT/cross-$target-build.log
		"$TB/build.sh" "$target" > "$log" 2>&1
		rc=$?
		while IFS= read -r l; do
			case $l in
			"PASS "*) pass "${l#PASS }" ;;
			"FAIL "*) fail "${l#FAIL }" ;;
			"    "*) echo "$l" ;;
			esac
		done < "$log"
		if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
			fail "build-$target" "build.sh exited $rc (log: ${log#"$REPO"/})"
		fi
	done
done

# ---------------------------------------------------------------- reset guard
# Kbuild reads qdisc_reset_all_tx_gt() from the kernel's headers and
# softmq_compat.h refuses a kernel where it resets a NOLOCK qdisc without
# its seqlock.  The guard must fire on such a header: the first line's
# function with its seqlock lines taken out, given to Kbuild in place of
# the real one (SOFTMQ_SCH_GENERIC on make's command line).
line="" hdr=""
for l in "${LINES[@]}"; do case $l in 6.*) line=$l; break;; esac; done
if [ -n "$line" ]; then
	kdir=$("$TB/kernels.sh" path kdir "$line" 2>/dev/null)
	# Debian's headers: the flavour's Makefile includes the -common tree's
	common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$kdir/Makefile" 2>/dev/null)
	hdr=$(ls "$kdir/include/net/sch_generic.h" "$common/include/net/sch_generic.h" 2>/dev/null | head -n 1)
fi
src=$OUT/reset-guard log=$OUT/reset-guard.log
if [ -z "$line" ]; then
	skip reset-guard "no 6.x line given: the 7.x lines build in the sid chroot"
elif [ -z "$hdr" ]; then
	fail reset-guard "no include/net/sch_generic.h under $line's headers ($kdir)"
elif ! sed -n '/^static inline void qdisc_reset_all_tx_gt/,/^}/p' "$hdr" | grep -q seqlock; then
	fail reset-guard "$line's qdisc_reset_all_tx_gt() has no seqlock: the module cannot build there"
else
	rm -rf "$src"; mkdir -p "$src"
	cp -r "$REPO/Kbuild" "$REPO/src" "$REPO/include" "$src/"
	sed '/^static inline void qdisc_reset_all_tx_gt/,/^}/{/seqlock/d}' "$hdr" > "$src/sch_generic.h"
	if make -C "$kdir" M="$src" SOFTMQ_SCH_GENERIC="$src/sch_generic.h" modules > "$log" 2>&1; then
		fail reset-guard "built against a qdisc_reset_all_tx_gt() without the seqlock (log: ${log#"$REPO"/})"
	elif ! grep -q 'takes no seqlock on this kernel' "$log"; then
		fail reset-guard "the build failed, but not on the guard: $(grep -m 2 'error' "$log" | tr '\n' ' ')"
	else
		pass reset-guard "$line's headers with the seqlock taken out: the build stops at the guard"
	fi
fi

cases_summary --skipped
