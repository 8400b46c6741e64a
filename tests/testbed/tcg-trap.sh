# SPDX-License-Identifier: GPL-2.0
# What the test bed knows of the faults that TCG, not the guest's code,
# makes: vm.sh's rerun of a guest that crashed on one (through lib.sh),
# and the harness's of a script that saw one as a warning or lost a
# process to one (in the guest).  Sourced, never run; no dependency but
# objdump (binutils, which the kernel builds need), and only for
# tcg_insn_cannot_gp, false without it: the guest sources it too.

# tcg_eflags_impossible HEX: true if no x86 CPU pushes HEX as an EFLAGS
# (a reserved bit set: 3, 5, 15, 22 and up; or bit 1, always 1, clear).
tcg_eflags_impossible() {
	(( (16#$1 & ~16#3f7fd7) != 0 || (16#$1 & 2) == 0 ))
}

# tcg_trace_names_softmq: stdin = a trace; true if a frame of it names
# softmq or slowdev (frames marked "?" are stale words on the stack, not
# the call chain, and the module list is not a frame).
tcg_trace_names_softmq() {
	grep -av 'Modules linked in' | grep -avE '\] +\? ' | grep -aq 'sch_softmq\|slowdev\|softmq_'
}

# tcg_trap_re CONSOLE: the pattern of the first line of a guest crash in
# CONSOLE that TCG, not the guest's code, is known to cause (vm.sh reruns
# the script once if the trap is in kernel text and no softmq frame is on
# the trace), or nothing.  Two kinds: an int3 or a double fault (a site
# another vCPU was patching; see vm.sh), and an x86 oops whose saved
# EFLAGS no x86 CPU pushes (tcg_eflags_impossible): the CPU writes that
# word when it takes the fault, so no stray store by the guest made it;
# what TCG leaves there is a pointer's bits
# (tests/testbed/seen/2026-12-04-i386-oops-20-traffic.txt: c4384646, an
# skb's address | 0x246).
tcg_trap_re() {
	local re='Oops: (int3|double fault)|(int3|double fault): 0000 \[#' fl
	if grep -aqE "$re" "$1" 2>/dev/null; then echo "$re"; return 0; fi
	fl=$(grep -a -E -A16 '(Oops|BUG): ' "$1" 2>/dev/null |
		grep -a -m1 -oE 'EFLAGS: [0-9a-fA-F]{1,16}\b' | cut -d' ' -f2)
	[ -n "$fl" ] || return 0
	if tcg_eflags_impossible "$fl"; then echo '(Oops|BUG): '; fi
	return 0
}

# tcg_insn_cannot_gp FILE OFFSET: true if the x86-64 instruction at byte
# OFFSET (hex) of FILE cannot raise a general protection fault: a plain
# ALU or move instruction each of whose operands is a register or an
# immediate (no memory operand, bracketed or absolute; no segment,
# control or debug register; no jump, no prefix objdump names).  Prints
# the instruction.  Decoded by objdump; without one, false.
tcg_insn_cannot_gp() {
	local off=$((16#$2)) insn op ops
	local opnd='(%[a-z][a-z0-9]*|[$]0x[0-9a-f]+)'
	local alu='^(add|adc|sub|sbb|and|or|xor|cmp|test|mov|movabs|movz[bw][wlq]|movs[bw][wlq]|movslq|inc|dec|neg|not|shl|shr|sar|rol|ror|imul)[bwlq]?$'
	command -v objdump > /dev/null || return 1
	insn=$(objdump -D -b binary -m i386:x86-64 --start-address=$off \
		--stop-address=$((off + 15)) "$1" 2>/dev/null |
		awk -F'\t' -v a="$(printf '%x:' $off)" '{ sub(/^ +/, "", $1) } $1 == a { print $3; exit }')
	read -r op ops <<< "$insn"
	[[ $op =~ $alu ]] || return 1
	[[ $ops =~ ^$opnd(,$opnd){0,2}$ ]] || return 1
	[[ ,$ops, =~ ,%(cs|ds|es|fs|gs|ss|cr[0-9]+|db[0-9]+|dr[0-9]+), ]] && return 1
	echo "$op $ops"
}
