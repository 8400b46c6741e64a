#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In the guest, on any line (7.x too: no compiler needed here,
# while the deb/dkms/make scripts need one and SKIP on 7.x): the test
# bed's sch_softmq.ko, built on the host for this kernel, placed where
# `make install` puts it (/lib/modules/<kver>/updates) + depmod, then
# "tc qdisc add dev X root softmq" must load it by itself, through the name
# this kernel asks modprobe for (sch_softmq before 6.9, net-sch-softmq
# from 6.9 on); modinfo by name; removed again, nothing left.
. "$(dirname "$0")/lib.sh"
P=install-autoload
KO=$SMQ_KO
[ -f "$KO" ] || { fail $P "no module for this line at '$KO' (tests/testbed/build.sh $SMQ_LINE)"; exit 0; }
install_start $P

dst=/lib/modules/$ABI/updates/sch_softmq.ko
install -D -m 0644 "$KO" "$dst" && depmod -a "$ABI"
check $P-depmod "modules.alias has no net-sch-softmq" \
	grep -q '^alias net-sch-softmq sch_softmq$' /lib/modules/"$ABI"/modules.alias
f=$(modinfo -F filename sch_softmq 2>&1)
check $P-modinfo "modinfo sch_softmq finds '$f', want $dst" test "$f" = "$dst"
modinfo sch_softmq 2>&1 | sed 's/^/  #   /'
f=$(modinfo -F alias sch_softmq 2>&1)
check $P-modinfo-alias "aliases '$f'" grep -qx net-sch-softmq <<<"$f"
f=$(modinfo -F version sch_softmq 2>&1)
check $P-modinfo-version "no version" test -n "$f"
inst_autoload $P
inst_traffic $P
inst_detach
rmmod sch_softmq 2>/dev/null
rm -f "$dst"; rmdir "/lib/modules/$ABI/updates" 2>/dev/null
depmod -a "$ABI"
inst_nothing_left $P
