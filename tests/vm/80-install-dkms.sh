#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In the guest: dkms from the source tree as docs/install.md says (make
# dkms-src; dkms add; dkms install; modprobe), use it, then dkms remove and
# check nothing is left.
. "$(dirname "$0")/lib.sh"
P=install-dkms
install_start $P checkout

if make -s -C "$SRC" dkms-src > "$OUTD/dkms-src.log" 2>&1 &&
   dkms add "$SRC/build/dkms/softmq-$V" > "$OUTD/dkms-add.log" 2>&1; then
	pass $P-add
else
	fail $P-add "$(cat "$OUTD"/dkms-src.log "$OUTD"/dkms-add.log 2>/dev/null | tail -n 4 | tr '\n' ' ')"
	exit 0
fi
t0=$(date +%s)
if dkms install "softmq/$V" > "$OUTD/dkms-install.log" 2>&1; then
	pass $P-install
else
	fail $P-install "$(tail -n 6 "$OUTD/dkms-install.log" | tr '\n' ' ')"
	sed 's/^/  #   /' /var/lib/dkms/softmq/"$V"/build/make.log 2>/dev/null | tail -n 20
fi
note "dkms install took $(( $(date +%s) - t0 ))s"
sed 's/^/  #   /' "$OUTD/dkms-install.log"
st=$(dkms status softmq 2>&1)
check $P-status "dkms status: $st" grep -q "^softmq/$V, $ABI, x86_64: installed" <<<"$st"
inst_modinfo $P
out=$(modprobe sch_softmq 2>&1)
check $P-modprobe "modprobe sch_softmq: $out" bash -c 'lsmod | grep -q "^sch_softmq "'
if inst_dev && tc qdisc add dev "$IDEV" root softmq 2>"$WORK/err"; then
	pass $P-attached
	inst_traffic $P
else
	fail $P-attached "tc qdisc add: $(cat "$WORK/err")"
fi
inst_detach
out=$(modprobe -r sch_softmq 2>&1)
check $P-modprobe-r "modprobe -r sch_softmq: $out" bash -c '! lsmod | grep -q "^sch_softmq "'
if dkms remove "softmq/$V" --all > "$OUTD/dkms-remove.log" 2>&1; then
	pass $P-remove
else
	fail $P-remove "$(tail -n 4 "$OUTD/dkms-remove.log" | tr '\n' ' ')"
fi
# dkms add copied the tree to /usr/src; dkms remove leaves that copy (as
# documented): docs/install.md's uninstall removes it, so do that here.
rm -rf "/usr/src/softmq-$V"
inst_nothing_left $P
