# SPDX-License-Identifier: GPL-2.0
#
# softmq: the kernel module (via Kbuild), the tc plugin and the test bed.
#
#   make                  build sch_softmq.ko for the running kernel (KDIR)
#   make check            all tests: userspace + the VM suite on every kernel line
#   make check KERNELS="6.1 6.12"   a subset of kernel lines
#   make demo             boot a VM, load softmq, push traffic, compare, unload
#   make vm-shell KERNEL=6.12       interactive guest
#   make bench-ring       userspace ring microbenchmark

KVER	?= $(shell uname -r)
KDIR	?= /lib/modules/$(KVER)/build
KERNELS	?= 6.1 6.12 7.2 7.2-rt
KERNEL	?= 6.12

all: modules plugin

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

plugin:
	$(MAKE) -C tc-plugin

check:
	tests/check.sh $(KERNELS)

demo:
	tests/demo.sh $(KERNEL)

vm-shell:
	tests/testbed/vm.sh --shell --kernel $(KERNEL)

bench-ring:
	$(MAKE) -C tests/ring bench

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	-$(MAKE) -C tc-plugin clean
	-$(MAKE) -C tests/ring clean
	rm -rf build

.PHONY: all modules plugin check demo vm-shell bench-ring clean
