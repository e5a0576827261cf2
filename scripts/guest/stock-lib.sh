# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In a stock guest (scripts/vm.sh -S): the packages of `make deb` for this
# release's libibverbs ABI, installed as a user would from the files, with
# no network; DKMS builds the module for the running kernel.  Sourced
# after lib.sh, by stock-tests.sh and stock-pair-tests.sh; results are
# named "stock: ...".

export DEBIAN_FRONTEND=noninteractive
# The installed provider, as a user's programs find it.
unset RDMAV_DRIVERS
kver=$(uname -r)
# rdma-core 65 changed libibverbs' private ABI: its provider is built apart.
debdir=build/deb
libibverbs=$(dpkg-query -W -f='${Version}' libibverbs1)
dpkg --compare-versions "$libibverbs" ge 65 && debdir=build/deb-rdmav65
echo "kernel $kver, libibverbs1 $libibverbs: packages of $debdir"
debs=($debdir/softrvt-dkms_*_all.deb $debdir/ibverbs-provider-softrvt_*.deb)
LOG=$OUT/stock
mkdir -p "$LOG"

loaded() { lsmod | grep -q "^$1 "; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
softrvt_files() { # what the packages put on the machine, as found now
	find /lib/modules /usr/src /var/lib/dkms /usr/lib/*/libibverbs \
		/etc/libibverbs.d \( -name 'softrvt.ko*' -o -name 'softrvt-*' \
		-o -name 'softrvt' -o -name 'libsoftrvt-*' -o -name 'softrvt.driver' \) \
		2>/dev/null
}
both_installed() { # apt's status
	[ "$1" = 0 ] && installed softrvt-dkms && installed ibverbs-provider-softrvt
}

stage() { echo "== $* ($SECONDS s)"; }

# apt-get install of the two packages, DKMS's build for this kernel.
stock_install() {
	local ver make_log copier t0 rc

	stage "install, DKMS build for $kver"
	check "stock: the two packages of make deb are there" \
		sh -c "[ ${#debs[@]} = 2 ] && [ -f '${debs[0]}' ] && [ -f '${debs[1]}' ]"
	check "stock: nothing of softrvt's on the machine before" \
		test -z "$(softrvt_files)"
	cp "${debs[@]}" /tmp/
	ver=$(dpkg-deb -f "${debs[0]}" Version)
	# The DKMS build writes only its own log: copy it out while it
	# grows, so that the watchdog sees the build move.
	make_log=/var/lib/dkms/softrvt/$ver/build/make.log
	(
		while sleep 10; do
			[ -f "$make_log" ] && cp "$make_log" "$LOG/dkms-make.log"
		done
	) &
	copier=$!
	t0=$SECONDS
	apt-get install -y --no-install-recommends \
		/tmp/"$(basename "${debs[0]}")" /tmp/"$(basename "${debs[1]}")" \
		> "$LOG/apt-install.log" 2>&1
	rc=$?
	kill "$copier"
	wait "$copier" 2>/dev/null
	echo "apt-get install: status $rc after $((SECONDS - t0)) s"
	[ "$rc" = 0 ] || tail -n 30 "$LOG/apt-install.log"
	check "stock: apt-get installs softrvt-dkms and ibverbs-provider-softrvt" \
		both_installed "$rc"
	dkms status softrvt > "$LOG/dkms-status" 2>&1
	cat "$LOG/dkms-status"
	check "stock: DKMS built and installed softrvt for $kver" \
		grep -q "softrvt/$ver, $kver, x86_64: installed" "$LOG/dkms-status"
	check "stock: modprobe finds the DKMS module" \
		sh -c 'modinfo -n softrvt | grep -q "^/lib/modules/$(uname -r)/updates/dkms/softrvt.ko"'
	check "stock: the provider and its driver file are installed" \
		sh -c 'ls /usr/lib/*/libibverbs/libsoftrvt-rdmav*.so && grep -qx "driver softrvt" /etc/libibverbs.d/softrvt.driver'
}
