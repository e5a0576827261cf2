# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# softrvt: `make` builds the modules against KDIR (by default the
# project's test kernel, built and cached on first use); `make check` runs
# every test; `make demo` shows a device in a guest.  `make install`
# installs the module and the provider on this machine, for the running
# kernel; `make deb` builds the Debian packages instead.

KDIR ?=
SCRIPTS := $(CURDIR)/scripts

# Resolve KDIR at recipe time, so that `make deps` or `make clean` never
# start a kernel build.
kdir = $$(if [ -n "$(KDIR)" ]; then echo "$(KDIR)"; \
	  else $(SCRIPTS)/build-kernel.sh debug; fi)

# Where `make install` puts the provider: libibverbs' provider directory
# and its configuration directory.  DESTDIR stages an installation.
MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
		     gcc -print-multiarch)
PROVIDER_DIR ?= /usr/lib/$(MULTIARCH)/libibverbs
IBV_CONFIG_DIR ?= /etc/libibverbs.d
DESTDIR ?=
DRIVER_DIR := $(CURDIR)/drivers/infiniband/sw/softrvt

# For install and uninstall: KDIR if given, or the running kernel's
# headers; and the release of that kernel.
install_kdir = $$(if [ -n "$(KDIR)" ]; then echo "$(KDIR)"; \
		  else echo "/lib/modules/$$(uname -r)/build"; fi)
# The rdma-core release to build the provider in: the one of this
# machine's libibverbs private ABI (65 from rdma-core 65 on, 34 before).
install_rdma_core = $$(if objdump -T $(PROVIDER_DIR)/../libibverbs.so.1 \
		       2>/dev/null | grep -q IBVERBS_PRIVATE_65; \
		       then echo 65.0; else echo 56.1; fi)
install_kver = $$(if [ -n "$(KDIR)" ]; then \
		  cat "$(KDIR)/include/config/kernel.release"; else uname -r; fi)

.PHONY: all modules clean deps kernel rootfs tests lint check check-full kunit \
	demo bench install uninstall deb

all: modules

modules:
	$(MAKE) -C "$(kdir)" M=$(CURDIR) modules

deps:
	$(SCRIPTS)/deps.sh

kernel: deps
	$(SCRIPTS)/build-kernel.sh debug

rootfs: deps
	$(SCRIPTS)/build-rootfs.sh

# Userspace test programs, run in the guest.
tests:
	$(MAKE) -C tests

lint: deps
	$(SCRIPTS)/lint.sh

# T="SUITE..." runs only those suites of the guest (scripts/guest/run-tests.sh
# lists them), in one boot, without the lint and the other guests.
T ?=
check: deps
	T="$(T)" $(SCRIPTS)/check.sh

# The KUnit suites alone: one boot of the test kernel.
kunit: deps
	T=kunit $(SCRIPTS)/check.sh

# Every test at full size: SOFTRVT_FULL=1 in the guest selects the long
# mode of the tests that have one, too long for CI.
check-full: deps
	T="$(T)" SOFTRVT_FULL=1 $(SCRIPTS)/check.sh

demo: deps
	$(SCRIPTS)/demo.sh

bench: deps
	$(SCRIPTS)/bench.sh

# The driver alone, as DKMS builds it: the KUnit module is for the
# test kernel only.  depmod makes `modprobe softrvt` and the autoload by
# `rdma link add` find it and the modules it needs.
install:
	kdir=$(install_kdir); kver=$(install_kver); \
	[ -n "$$kver" ] || exit 1; \
	$(MAKE) -C "$$kdir" M=$(DRIVER_DIR) CONFIG_RDMA_SOFTRVT=m modules && \
	install -D -m 0644 $(DRIVER_DIR)/softrvt.ko \
		"$(DESTDIR)/lib/modules/$$kver/updates/softrvt.ko" && \
	if [ -z "$(DESTDIR)" ]; then depmod -a "$$kver"; fi
	provider=$$(SOFTRVT_RDMA_CORE=$(install_rdma_core) \
		    $(SCRIPTS)/build-provider.sh) && \
	so=$$(basename "$$(ls "$$provider"/libsoftrvt-rdmav*.so)") && \
	install -D -m 0644 "$$provider/$$so" "$(DESTDIR)$(PROVIDER_DIR)/$$so" && \
	install -D -m 0644 "$$provider/softrvt.driver" \
		"$(DESTDIR)$(IBV_CONFIG_DIR)/softrvt.driver"

uninstall:
	kver=$(install_kver); [ -n "$$kver" ] || exit 1; \
	rm -f "$(DESTDIR)/lib/modules/$$kver/updates/softrvt.ko" && \
	if [ -z "$(DESTDIR)" ]; then depmod -a "$$kver"; fi
	rm -f "$(DESTDIR)$(PROVIDER_DIR)"/libsoftrvt-rdmav*.so \
		"$(DESTDIR)$(IBV_CONFIG_DIR)/softrvt.driver"

# softrvt-dkms and ibverbs-provider-softrvt, in build/deb/ (Debian 12
# and 13) and build/deb-rdmav65/ (sid): DIST=bookworm, trixie, sid, all.
deb:
	$(SCRIPTS)/build-deb.sh

clean:
	@if [ -n "$(KDIR)" ]; then $(MAKE) -C "$(KDIR)" M=$(CURDIR) clean; fi
	find . \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
		-o -name '.*.cmd' -o -name 'modules.order' -o -name 'Module.symvers' \
		-o -name '*.a' \) -not -path './.git/*' -delete
	$(MAKE) -C tests clean
