# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# softrvt: `make` builds the modules against KDIR (by default the
# project's test kernel, built and cached on first use); `make check` runs
# every test; `make demo` shows a device in a guest.

KDIR ?=
SCRIPTS := $(CURDIR)/scripts

# Resolve KDIR at recipe time, so that `make deps` or `make clean` never
# start a kernel build.
kdir = $$(if [ -n "$(KDIR)" ]; then echo "$(KDIR)"; \
	  else $(SCRIPTS)/build-kernel.sh debug; fi)

.PHONY: all modules clean deps kernel rootfs tests lint check check-full demo bench

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

check: deps
	$(SCRIPTS)/check.sh

# Every test at full size: SOFTRVT_FULL=1 in the guest selects the long
# mode of the tests that have one, too long for CI.
check-full: deps
	SOFTRVT_FULL=1 $(SCRIPTS)/check.sh

demo: deps
	$(SCRIPTS)/demo.sh

bench: deps
	$(SCRIPTS)/bench.sh

clean:
	@if [ -n "$(KDIR)" ]; then $(MAKE) -C "$(KDIR)" M=$(CURDIR) clean; fi
	find . \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
		-o -name '.*.cmd' -o -name 'modules.order' -o -name 'Module.symvers' \
		-o -name '*.a' \) -not -path './.git/*' -delete
	$(MAKE) -C tests clean
