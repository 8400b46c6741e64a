#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run softmq's tdc cases (tests/tdc/softmq.json) with the kernel's own
# tc-testing driver, tdc.py, and print one line per case:
#
#   PASS tdc <tc> <id> <name>
#   FAIL tdc <tc> <id> <name>: <why>
#
# Meant for the test VM: sch_softmq already loaded, root, a kernel whose
# dummy and veth modules load on demand.
#
#   tests/tdc/run.sh [--tdc-dir DIR] [--tc PATH]... [--cases FILE]
#                    [--no-module-check]
#
#   --tdc-dir DIR   tools/testing/selftests/tc-testing of the linux-source
#                   matching the running kernel.  Default: $SOFTMQ_TDC_DIR,
#                   else $TDC_DIR, else `tests/testbed/kernels.sh path tdc
#                   $SOFTMQ_LINE` (6.1 for a 6.1 kernel, else 6.12).
#   --tc PATH       a tc binary (or wrapper) to run the cases with; repeat
#                   for several.  Default: $TC, else the tc on PATH plus
#                   $SOFTMQ_TC615 when set (the bookworm-backports 6.15).
#   --cases FILE    another case file (default: softmq.json beside this).
#   --no-module-check  run even if sch_softmq is not loaded (only useful to
#                   check this script: every case then fails or passes for
#                   the wrong reason).
#
# The plugin is taken from $TC_LIB_DIR (default <repo>/tc-plugin).  tdc runs
# each command with the environment in tdc_config_local.py's ENVIR, so
# tdcrun.py writes one into a private copy of the tc-testing dir that passes
# TC_LIB_DIR and LD_BIND_NOW=1 and names the tc under test; it also reruns
# the cases tdc skipped after an earlier case's setup/teardown failed.  Logs
# and TAP files go to $SOFTMQ_RESULTS (when set) or a temporary directory.
#
# Exit status: 0 when tdc ran (its verdicts are in the PASS/FAIL lines, as
# tests/testbed/harness.sh expects); 1 when it could not run at all.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cases=$here/softmq.json

tdc_dir=${SOFTMQ_TDC_DIR:-${TDC_DIR:-}}
tcs=()
modcheck=1
while [ $# -gt 0 ]; do
	case "$1" in
	--tdc-dir) tdc_dir=$2; shift 2;;
	--tc) tcs+=("$2"); shift 2;;
	--cases) cases=$2; shift 2;;
	--no-module-check) modcheck=0; shift;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0;;
	*) echo "run.sh: unknown argument '$1'" >&2; exit 1;;
	esac
done

broken() {   # the script cannot run: say so as a FAIL line and stop
	echo "FAIL tdc: $*"
	exit 1
}

[ -f "$cases" ] || broken "no case file $cases"
cases=$(cd "$(dirname "$cases")" && pwd)/$(basename "$cases")

if [ -z "$tdc_dir" ] && [ -x "$repo/tests/testbed/kernels.sh" ]; then
	line=${SOFTMQ_LINE:-}
	if [ -z "$line" ]; then
		case "$(uname -r)" in 6.1.*|6.1-*) line=6.1;; *) line=6.12;; esac
	fi
	tdc_dir=$("$repo/tests/testbed/kernels.sh" path tdc "$line" 2>/dev/null) || tdc_dir=
fi
[ -n "$tdc_dir" ] || broken "no tc-testing dir (give --tdc-dir or SOFTMQ_TDC_DIR)"
[ -f "$tdc_dir/tdc.py" ] || broken "no tdc.py in $tdc_dir"

if [ ${#tcs[@]} -eq 0 ]; then
	if [ -n "${TC:-}" ]; then
		tcs=("$TC")
	else
		tcs=("$(command -v tc || echo /sbin/tc)")
		[ -n "${SOFTMQ_TC615:-}" ] && tcs+=("$SOFTMQ_TC615")
	fi
fi

lib=${TC_LIB_DIR:-$repo/tc-plugin}
lib=$(cd "$lib" 2>/dev/null && pwd) || broken "TC_LIB_DIR $lib does not exist"
[ -f "$lib/q_softmq.so" ] || broken "no q_softmq.so in $lib (make -C tc-plugin)"
if [ "$modcheck" = 1 ] && [ ! -d /sys/module/sch_softmq ]; then
	broken "the sch_softmq module is not loaded"
fi
ip=$(command -v ip) || broken "no ip binary"
py=$(command -v python3) || broken "no python3"

out=${SOFTMQ_RESULTS:-}
if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/softmq-tdc.XXXXXX)
fi
mkdir -p "$out" || broken "cannot create $out"
total_pass=0 total_fail=0
for tc in "${tcs[@]}"; do
	ver=$("$tc" -V 2>/dev/null | sed -n 's/.*iproute2-\([^ ,]*\).*/\1/p')
	if [ -z "$ver" ]; then
		echo "FAIL tdc $tc: does not run"
		total_fail=$((total_fail + 1))
		continue
	fi
	label=tc-$ver
	echo "# tdc $label: $tc, TC_LIB_DIR=$lib, tdc from $tdc_dir"
	rm -f "$out/tdc-$label.count"
	"$py" "$here/tdcrun.py" --tdc-dir "$tdc_dir" --tc "$tc" --lib "$lib" \
		--ip "$ip" --cases "$cases" --out "$out" --label "$label"
	if read -r p f < "$out/tdc-$label.count" 2>/dev/null; then
		total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
	else
		echo "FAIL tdc $label: tdcrun.py gave no result"
		total_fail=$((total_fail + 1))
	fi
done
echo "# tdc: $total_pass passed, $total_fail failed (results in $out)"
exit 0
