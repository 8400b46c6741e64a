#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh check|bench: are the tools tests/ring needs here?  Names the Debian
# packages that bring what is missing; installs nothing.
set -u
what=${1:-check}
miss=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
try_cc() {	# try_cc COMPILER FLAGS... : compile+link a trivial program
	local cc=$1; shift
	printf '%s\n' "$SRC" | "$cc" -x c - "$@" -o "$tmp/a.out" >/dev/null 2>&1
}

have make || miss+=(make)
have gcc || miss+=(gcc)
SRC='int main(void){return 0;}'
have gcc && { try_cc gcc || miss+=(libc6-dev); }
have gcc && { try_cc gcc -fsanitize=thread || miss+=("libtsan2(gcc-12)"); }
have gcc && { try_cc gcc -fsanitize=address,undefined || miss+=("libasan8/libubsan1(gcc-12)"); }
SRC='#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
int main(void){return 0;}'
have gcc && { try_cc gcc -lcmocka || miss+=(libcmocka-dev); }
if have clang; then
	SRC='#include <stdint.h>
#include <stddef.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}'
	try_cc clang -fsanitize=fuzzer,address,undefined || miss+=(libclang-rt-14-dev)
else
	miss+=(clang libclang-rt-14-dev)
fi
SRC='int main(void){return 0;}'
have gcc && { try_cc gcc -m32 -static || miss+=(gcc-multilib); }
# i386 binaries run natively where the kernel has IA32 emulation, else under qemu-i386
{ have qemu-i386 || "$tmp/a.out" 2>/dev/null; } || miss+=(qemu-user)
have spin || miss+=(spin)
have python3 || miss+=(python3)
[ "$what" = bench ] && { have valgrind || miss+=(valgrind); have callgrind_annotate || true; }

[ ${#miss[@]} -eq 0 ] && exit 0
echo "tests/ring: missing Debian packages: ${miss[*]}"
echo "  install them with: apt-get install $(echo "${miss[*]}" | sed 's/([^)]*)//g')"
if [ "$what" = check ]; then
	echo "FAIL deps: missing ${miss[*]}"
	echo "0 passed, 1 failed"
fi
exit 1
