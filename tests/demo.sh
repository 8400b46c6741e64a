#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: boot one Debian kernel line under QEMU, load softmq, drive the
# same pktgen load through softmq, pfifo_fast and fq_codel as the root qdisc
# of one device, print a table of the ratios and a verdict, unload.  Works
# from a fresh clone in any directory of a Debian 12 machine; installs (as
# root) only what the demo needs.  The guest part is
# tests/testbed/demo-guest.sh.  Ends with "N passed, N failed, N skipped";
# exits 0 only when every step passed.
#
#   tests/demo.sh [--no-prepare] [LINE]   default 6.12; also 6.1 7.2 7.2-rt
#                             (--no-prepare: make check fetched and built it)
#   DEMO_COUNT=N DEMO_ROUNDS=N  see demo-guest.sh
#   VM_SMP=N                  vCPUs (default 2)
{ # parsed whole before it runs: editing this file cannot break a running copy
set -uo pipefail
. "$(dirname "$0")/testbed/lib.sh"

PREPARE=1
[ "${1:-}" = --no-prepare ] && { PREPARE=0; shift; }
LINE=${1:-6.12}
refuse() {
	log "make demo cannot run here: $*"
	echo "FAIL demo: $*"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}
line_image_re "$LINE" > /dev/null || refuse "unknown kernel line '$LINE' (6.1 6.12 7.2 7.2-rt)"
[ "$(id -u)" = 0 ] || refuse "run it as root: QEMU exports / over 9p with security_model=none, and apt-get installs what is missing"
# The guest mounts fresh file systems on these: a tree under one of them
# would be invisible inside the VM.
case "$REPO/" in
/run/*|/dev/*|/proc/*|/sys/*) refuse "the checkout is under ${REPO%"${REPO#/*/}"}, which the guest replaces with a fresh mount; clone it anywhere else";;
esac
# shellcheck disable=SC2046
need_pkgs $(demo_host_pkgs "$LINE") || refuse "the Debian packages above are missing"
for t in qemu-system-x86_64 busybox; do
	command -v $t > /dev/null || refuse "$t is not installed"
done

if [ $PREPARE = 1 ]; then
	"$TB_DIR/kernels.sh" fetch "$LINE"
	rc=$?
	[ $rc = 0 ] || refuse "could not fetch the $LINE kernel (kernels.sh fetch $LINE exited $rc, see above)"
	"$TB_DIR/build.sh" plugin || refuse "the tc plugin did not build (build/tc-plugin.log)"
	"$TB_DIR/build.sh" "$LINE" || refuse "sch_softmq.ko did not build warning-free for $LINE (build/$LINE/logs/)"
fi
export DEMO_COUNT=${DEMO_COUNT:-20000} DEMO_ROUNDS=${DEMO_ROUNDS:-3}
export VM_PASS_ENV="DEMO_COUNT DEMO_ROUNDS"
exec "$TB_DIR/vm.sh" --kernel "$LINE" --no-prepare ${VM_SMP:+--smp "$VM_SMP"} \
	--timeout 900 --results "$REPO/build/$LINE/demo" "$TB_DIR/demo-guest.sh"
exit
}
