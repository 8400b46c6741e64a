#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tdc cases (tests/tdc/softmq.json) through the kernel's own tdc.py.
# One tc per line keeps the boot short: Debian's tc 6.1 on the 6.1 kernel,
# the bookworm-backports tc 6.15 on 6.12 (both tc binaries run every plugin
# case on the host in `make -C tc-plugin check`).  The 7.x lines run the
# same operations in 10-lifecycle.sh.  make check leaves it to make
# check-full (tests/vm/quick-plan: 10-lifecycle.sh, which drives tc 6.1
# and 6.15, and the netlink fuzzer cover the same options and bad values).
set -u

case "${SOFTMQ_LINE:-}" in
6.1)	tc_bin=$(command -v tc) ;;
6.12)	tc_bin=${SOFTMQ_TC615:-}
	if [ -z "$tc_bin" ]; then
		echo "FAIL tdc-tc615: no tc 6.15 in the cache (tests/testbed/kernels.sh tools); running with tc 6.1"
		tc_bin=$(command -v tc)
	fi ;;
*)	echo "SKIP tdc: tdc runs on the 6.1 and 6.12 lines; $SOFTMQ_LINE covers the same operations in 10-lifecycle"
	exit 0 ;;
esac

# a script before this one may have left the module loaded, with no instance
grep -q '^sch_softmq ' /proc/modules && rmmod sch_softmq
if ! insmod "$SOFTMQ_KO"; then
	echo "FAIL tdc: insmod $SOFTMQ_KO failed"
	exit 0
fi
tests/tdc/run.sh --tc "$tc_bin"
rc=$?
rmmod sch_softmq || echo "FAIL tdc-rmmod: sch_softmq still in use after tdc"
exit $rc
