# SPDX-License-Identifier: GPL-2.0
#
# softmq: the kernel module (via Kbuild), the tc plugin and the test bed.
#
#   make                  build sch_softmq.ko for the running kernel (KDIR)
#   make check            all tests: userspace + the VM suite on every kernel line
#   make check KERNELS="6.1 6.12"   a subset of kernel lines
#   make check-quick      one line (KERNEL=), only the host suites the change
#                         touches: the development loop
#   make check-full       every VM script on every line (and the sanitizer
#                         kernels), full churn/fuzz counts
#   make check-debug      the suite on the sanitizer kernels we build
#                         (6.12-kasan: KASAN+lockdep+kmemleak; 6.12-kcsan)
#   make demo             boot a VM, load softmq, push traffic, compare, unload
#   make vm-shell KERNEL=6.12       interactive guest
#   make bench-ring       userspace ring microbenchmark
#   make bench            softmq vs noqueue/pfifo_fast/fq_codel/fq in QEMU, JSON+md+PNG
#                         in bench/results/ (KERNELS=, default 6.12 7.2; MODE=icount|profile|latency;
#                         HOST=1: the running kernel, no VM; BENCH_QUICK=1)
#   make install          (root) module into /lib/modules/<kver>/updates, depmod,
#                         tc plugin + man page; DESTDIR, KDIR, KVER honoured
#   make uninstall        (root) the reverse
#   make dkms-src         clean dkms source tree in build/dkms/softmq-<version>
#   make deb              softmq-dkms and softmq-tc .debs in build/deb/

KVER	?= $(shell uname -r)
KDIR	?= /lib/modules/$(KVER)/build
# The cross lines (tests/README.md, "Kernel lines"): 6.1-686-pae, the
# i386 (32-bit) kernel of the 6.1 line on an i386 root, and 6.12-arm64.
# make check builds for both (lint, W=1); make check-full runs every VM
# script on them.  Named in KERNELS, make check runs a cross line's smoke
# (lifecycle, traffic): left out by default, because on a cold machine
# that cannot exec i386 binaries its guest root alone takes 4 minutes.
KERNELS	?= 6.1 6.12 7.2 7.2-rt
KERNEL	?= 6.12

all: modules plugin

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

plugin:
	$(MAKE) -C tc-plugin

check:
	tests/check.sh $(KERNELS)

# The development loop: one line (KERNEL, default 6.12), the host suites
# the change touches, the VM scripts every line runs.
check-quick:
	tests/check.sh --quick $(KERNEL)

check-full:
	SOFTMQ_FULL=1 tests/check.sh $(KERNELS) 6.1-686-pae 6.12-arm64 6.12-kasan 6.12-kcsan

# The sanitizer kernels: each a 17+ min build cold on 2 cores, and their
# suites run several times slower under TCG; with the four Debian lines that
# would not fit CI's 90 minutes (tests/README.md, "Kernel lines", has the figures).
check-debug:
	tests/check.sh 6.12-kasan 6.12-kcsan

demo:
	tests/demo.sh $(KERNEL)

vm-shell:
	tests/testbed/vm.sh --shell --kernel $(KERNEL)

bench-ring:
	$(MAKE) -C tests/ring bench

# The bench's own default lines unless KERNELS is given (command line or env).
bench:
	KERNELS="$(if $(filter file,$(origin KERNELS)),6.12 7.2,$(KERNELS))" \
		MODE="$(MODE)" HOST="$(HOST)" bench/bench.sh
.PHONY: bench

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	-$(MAKE) -C tc-plugin clean
	-$(MAKE) -C tests/ring clean
	rm -rf build

.PHONY: all modules plugin check check-quick check-full check-debug demo vm-shell bench-ring clean

# ---------------------------------------------------------------- install
# make install / make uninstall (root).  The module goes where kbuild's
# modules_install puts it: $(DESTDIR)/lib/modules/<release of KDIR's
# headers>/$(INSTALL_MOD_DIR), compressed as that kernel's config says; the
# tc plugin and man page come from tc-plugin's own install.  No module
# signing here (Debian's headers carry no key): Secure Boot users install
# with dkms, which signs with the MOK key (docs/install.md, "Secure Boot").  depmod runs
# only without DESTDIR: a staging tree gets none (packagers run it on the
# target).
INSTALL_MOD_DIR	?= updates
DEPMOD		?= depmod
# The release (uname -r) the headers in KDIR are for, KVER if they do not
# say.  Not include/config/kernel.release: Debian 6.1's says "6.1.192".
KREL		= $(or $(shell sed -n 's/.*UTS_RELEASE "\(.*\)".*/\1/p' \
		    $(KDIR)/include/generated/utsrelease.h 2>/dev/null),$(KVER))
MOD_DEST	= $(DESTDIR)/lib/modules/$(KREL)/$(INSTALL_MOD_DIR)
SOFTMQ_PKG_VERSION := $(shell cat $(CURDIR)/VERSION)

install: modules plugin
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(abspath $(DESTDIR)) \
		INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) CONFIG_MODULE_SIG_ALL= modules_install
ifeq ($(DESTDIR),)
	$(DEPMOD) -a $(KREL)
endif
	$(MAKE) -C tc-plugin install DESTDIR=$(abspath $(DESTDIR))

uninstall:
	rm -f $(foreach s,.ko .ko.xz .ko.gz .ko.zst,$(MOD_DEST)/sch_softmq$(s))
	-rmdir --ignore-fail-on-non-empty $(MOD_DEST)
ifeq ($(DESTDIR),)
	$(DEPMOD) -a $(KREL)
endif
	$(MAKE) -C tc-plugin uninstall DESTDIR=$(abspath $(DESTDIR))

# The files dkms builds from (the same list goes into softmq-dkms).
DKMS_SRC_ROOT	?= $(CURDIR)/build/dkms
dkms-src:
	rm -rf $(DKMS_SRC_ROOT)/softmq-$(SOFTMQ_PKG_VERSION)
	mkdir -p $(DKMS_SRC_ROOT)/softmq-$(SOFTMQ_PKG_VERSION)
	tar -c --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
		--exclude='.*.cmd' --exclude='*.a' --exclude=modules.order \
		--exclude=Module.symvers dkms.conf Kbuild VERSION src include | \
		tar -x -C $(DKMS_SRC_ROOT)/softmq-$(SOFTMQ_PKG_VERSION)

# Debian packages (debhelper + dh-dkms), built from a copy in build/deb/.
deb:
	debian/build-debs.sh build/deb

.PHONY: install uninstall dkms-src deb
