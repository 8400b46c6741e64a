#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In the guest: `make install` from a checkout (no DESTDIR, KDIR
# and KVER defaulting to the running kernel): module under updates/ with
# depmod, plugin + man page; autoload by tc; `make uninstall`; nothing left.
. "$(dirname "$0")/lib.sh"
P=install-make
install_start $P checkout

t0=$(date +%s)
if make -C "$SRC" install > "$OUTD/make-install.log" 2>&1; then
	pass $P-install
else
	fail $P-install "$(grep -iE 'error' "$OUTD/make-install.log" | head -n 4 | tr '\n' ' ')"
	exit 0
fi
note "make install took $(( $(date +%s) - t0 ))s"
ko=$(ls /lib/modules/"$ABI"/updates/sch_softmq.ko* 2>/dev/null | head -n 1)
check $P-module-file "no sch_softmq.ko* in /lib/modules/$ABI/updates" test -n "$ko"
check $P-plugin-file "no /usr/lib/$MULTIARCH/tc/q_softmq.so" test -f /usr/lib/"$MULTIARCH"/tc/q_softmq.so
check $P-manpage "man -w tc-softmq does not find the page" \
	bash -c 'man -w tc-softmq 2>/dev/null | grep -q "^/usr/share/man/man8/tc-softmq.8"'
check $P-depmod "modules.alias has no net-sch-softmq after make install" \
	grep -q '^alias net-sch-softmq sch_softmq$' /lib/modules/"$ABI"/modules.alias
inst_modinfo $P
inst_autoload $P
inst_traffic $P
inst_plugin $P
inst_detach
rmmod sch_softmq 2>/dev/null
if make -C "$SRC" uninstall > "$OUTD/make-uninstall.log" 2>&1; then
	pass $P-uninstall
else
	fail $P-uninstall "$(tail -n 4 "$OUTD/make-uninstall.log" | tr '\n' ' ')"
fi
inst_nothing_left $P
