#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The harness's judgement of the traps that TCG makes (harness.sh
# --tcg-trap: tcg_debug_trap, tcg_user_trap) on the seen excerpts, and on
# variants that a CPU could have made or that name softmq, which must
# count.  Reads files only, no kernel log: tests/check.sh runs it on the
# host (its setup group), where it costs a second; in a TCG guest each
# excerpt cost one to two.  The nested runs that rerun a script need a
# kernel log, and stay in tests/vm/00-selftest.sh, which takes its
# fixtures from here.
#
#   tcg-trap-cases.sh DIR              write the fixtures into DIR, judge
#                                      them: PASS/FAIL lines and a summary
#   tcg-trap-cases.sh --fixtures DIR   write them only
#
# Fixtures: DIR/trap.log, the seen debug trap (tests/testbed/seen/
# 2026-12-07-6.12-debug-trap-20-traffic.txt), and DIR/trap-<variant>.log;
# DIR/gp-bin/gpbin, a file of its own for the user #GP (an ELF magic
# number, then "sub $0x1,%rdx" at 0x40, "mov %al,(%rbx,%rdx,1)" at 0x44,
# "movabs %eax,0x8000000000000000" at 0x47), DIR/ut.log its trap
# (tests/testbed/seen/2026-12-07-6.12-user-gpf-40-default-qdisc.txt's,
# moved there) and DIR/ut-<variant>.log; DIR/*.kmsg, the traps as lines
# for /dev/kmsg.
set -u
TB=$(cd "$(dirname "$0")" && pwd)
. "$TB/../cases.sh"
only_fixtures=0
[ "${1:-}" = --fixtures ] && { only_fixtures=1; shift; }
dir=${1:?usage: tcg-trap-cases.sh [--fixtures] DIR}
mkdir -p "$dir/gp-bin"

grep '^    | ' "$TB/seen/2026-12-07-6.12-debug-trap-20-traffic.txt" |
	sed 's/^    | //; s/\r$//' > "$dir/trap.log"
sed 's/EFLAGS: 65d0ab02/EFLAGS: 00000246/' "$dir/trap.log" > "$dir/trap-valid.log"
sed 's/  __alloc_skb+0x160\/0x1a0$/  softmq_enqueue+0x74\/0x330 [sch_softmq]/' "$dir/trap.log" > "$dir/trap-softmq.log"
sed 's/RIP: 0010:kmem_cache_alloc_node_noprof+0x74\/0x330$/& [veth]/' "$dir/trap.log" > "$dir/trap-module.log"
{ cat "$dir/trap.log"; echo '[   99.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2'
  echo '[   99.1] ---[ end trace 0000000000000000 ]---'; } > "$dir/trap-two.log"
# a trace longer than the 60 lines the scanner prints of a splat: judged
# whole, without and with a softmq frame below them
awk '{ print } /^\[ *[0-9.]+\]  <TASK>$/ { for (i = 0; i < 30; i++) print "[   89.62]  f" i "+0x1/0x2" }' \
	"$dir/trap.log" > "$dir/trap-long.log"
awk '{ print } /^\[ *[0-9.]+\]  f29\+0x1\/0x2$/ { print "[   89.62]  softmq_dequeue+0x74/0x330 [sch_softmq]" }' \
	"$dir/trap-long.log" > "$dir/trap-deep.log"
sed 's/RIP: 0010:kmem_cache_alloc_node_noprof+0x74\/0x330$/RIP: 0010:0xffffffffc0123456/' "$dir/trap.log" > "$dir/trap-nosym.log"
sed 's/^\[ *[0-9.]*\] //' "$dir/trap.log" > "$dir/trap.kmsg"

{ printf '\177ELF'; head -c 60 /dev/zero; printf '\110\203\352\001\210\004\023\243'
  head -c 7 /dev/zero; printf '\200'; } > "$dir/gp-bin/gpbin"
echo '[  491.0] traps: python3[3072] general protection fault ip:401040 sp:7fffdd42e4f0 error:0 in gpbin[40,401000+1000]' > "$dir/ut.log"
sed 's/ip:401040/ip:401044/; s/gpbin\[40,/gpbin[44,/' "$dir/ut.log" > "$dir/ut-memop.log"
sed 's/ip:401040/ip:401047/; s/gpbin\[40,/gpbin[47,/' "$dir/ut.log" > "$dir/ut-absmem.log"
sed 's/ip:401040/ip:401041/' "$dir/ut.log" > "$dir/ut-misfit.log"
sed 's/401000+1000/402000+1000/' "$dir/ut.log" > "$dir/ut-outside.log"
sed 's/gpbin\[40,401000+1000/gpbin[40,401000+2000/' "$dir/ut.log" > "$dir/ut-toolong.log"
sed 's/gpbin\[/gpbin-none[/' "$dir/ut.log" > "$dir/ut-nofile.log"
sed 's/error:0/error:4/' "$dir/ut.log" > "$dir/ut-error.log"
sed 's/gpbin\[40,401000+/gpbin[401000+/' "$dir/ut.log" > "$dir/ut-fmt61.log"
{ cat "$dir/ut.log"; echo '[  492.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2'
  echo '[  492.1] ---[ end trace 0000000000000000 ]---'; } > "$dir/ut-two.log"
sed 's/^\[ *[0-9.]*\] //' "$dir/ut.log" > "$dir/ut.kmsg"
[ $only_fixtures = 1 ] && exit 0

# each excerpt's status from one harness process ("STATUS FILE" lines)
rcs=$(PATH=$dir/gp-bin:$PATH "$TB/harness.sh" --tcg-trap "$dir"/trap{,-long,-valid,-softmq,-module,-two,-deep,-nosym}.log \
	"$dir"/ut{,-memop,-absmem,-nofile,-error,-misfit,-outside,-toolong,-fmt61,-two}.log 2>&1)
# judge NAME FILE WANT WHY: FILE's status is WANT (0: taken for TCG's)
judge() {
	local rc
	if [ "$2" != "$dir/trap.log" ] && [ "$2" != "$dir/ut.log" ] &&
	   { cmp -s "$dir/trap.log" "$2" || cmp -s "$dir/ut.log" "$2"; }; then
		rc="not changed by its sed"
	else
		rc=$(awk -v f="$2" '$2 == f { print $1 }' <<< "$rcs")
	fi
	if [ "$rc" = "$3" ]; then pass "$1"; else fail "$1" "$4 (status ${rc:-none})"; fi
}
judge selftest-tcg-trap-known "$dir/trap.log" 0 "the seen debug trap was not known for TCG's"
judge selftest-tcg-trap-long "$dir/trap-long.log" 0 "the seen debug trap with a longer trace was not known for TCG's"
for v in valid softmq module two deep nosym; do
	judge "selftest-tcg-trap-$v" "$dir/trap-$v.log" 1 "the debug trap variant '$v' was taken for TCG's"
done
# (the user #GP is decoded as x86-64 code: on another host it is refused)
if [ "$(uname -m)" = x86_64 ]; then
	judge selftest-tcg-user-trap-known "$dir/ut.log" 0 "the #GP at 'sub \$0x1,%rdx' was not known for TCG's"
else
	judge selftest-tcg-user-trap-known "$dir/ut.log" 1 "the #GP was taken for TCG's on a $(uname -m) host"
fi
for v in memop absmem nofile error misfit outside toolong fmt61 two; do
	judge "selftest-tcg-user-trap-$v" "$dir/ut-$v.log" 1 "the #GP variant '$v' was taken for TCG's"
done
cases_summary
