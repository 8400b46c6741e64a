#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: boot one Debian kernel line under QEMU, load softmq, attach it
# to a device, push traffic, show `tc -s qdisc`, compare with pfifo_fast,
# unload.  Works on a fresh Debian 12 machine (installs what it needs as
# root).  The guest part is tests/testbed/demo-guest.sh.
#
#   tests/demo.sh [LINE]      default 6.12; also 6.1 7.2 7.2-rt
#   DEMO_COUNT=N              pktgen packets per thread (default 20000)
#   VM_SMP=N                  vCPUs (default 2)
{ # parsed whole before it runs: editing this file cannot break a running copy
set -uo pipefail
. "$(dirname "$0")/testbed/lib.sh"

LINE=${1:-6.12}
[ "$(id -u)" = 0 ] || die "run as root (QEMU exports / over 9p; apt-get for missing packages)"
# shellcheck disable=SC2086
need_pkgs $(all_host_pkgs) || exit 1
"$TB_DIR/kernels.sh" fetch "$LINE" || exit 1
"$TB_DIR/kernels.sh" tools >/dev/null 2>&1 || log "tc 6.15 / tools fetch failed (not needed for the demo)"
"$TB_DIR/build.sh" plugin || true
"$TB_DIR/build.sh" "$LINE"
if [ ! -e "$REPO/build/$LINE/softmq/sch_softmq.ko" ]; then
	echo "FAIL demo: sch_softmq.ko did not build for $LINE (log: build/$LINE/logs/softmq.log)"
	exit 1
fi
export DEMO_COUNT=${DEMO_COUNT:-20000}
exec "$TB_DIR/vm.sh" --kernel "$LINE" --no-prepare ${VM_SMP:+--smp "$VM_SMP"} \
	--results "$REPO/build/$LINE/demo" "$TB_DIR/demo-guest.sh"
exit
}
