#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make check`: static checks, then one guest boot that runs the KUnit
# module and the in-guest tests on the debug kernel.  Ends with one line
# "N passed, N failed"; exits non-zero if anything failed, if the kernel
# reported a WARNING, BUG, lockdep, KASAN, UBSAN or kmemleak finding, or if
# the guest timed out.
set -uo pipefail

. "$(dirname "$0")/common.sh"

out=${CHECK_OUT:-$CACHE/check-last}
rm -rf "$out"
mkdir -p "$out"
results=$out/results.all
: > "$results"

# Where the run spent its time: "NAME SECONDS" lines, printed last.
times=$out/times
: > "$times"
t_start=$SECONDS
timed_phase() { # name start
	echo "$1 $((SECONDS - $2))" >> "$times"
}

record() { # PASS|FAIL name
	echo "$1 $2" >> "$results"
	echo "$1 $2"
}

# The kernel's own checkers: any report fails the run.
kernel_checks() { # label outdir
	local klog=$2/dmesg
	local pattern='WARNING:|BUG:|KASAN|UBSAN|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|Oops|Kernel panic|general protection fault|sleeping function called from invalid context|DEBUG_LOCKS_WARN_ON|INFO: lockdep is turned off|unreferenced object'

	[ -f "$klog" ] || klog=$2/console.log
	if grep -E "$pattern" "$klog" > "$2/kernel-reports.log"; then
		cat "$2/kernel-reports.log"
		record FAIL "$1kernel log: no WARNING, BUG, lockdep, KASAN or UBSAN report"
	else
		record PASS "$1kernel log: no WARNING, BUG, lockdep, KASAN or UBSAN report"
	fi
	if [ ! -f "$2/kmemleak" ]; then
		record FAIL "$1kmemleak: scan ran"
	elif [ -s "$2/kmemleak" ]; then
		head -60 "$2/kmemleak"
		record FAIL "$1kmemleak: no leaks"
	else
		record PASS "$1kmemleak: no leaks"
	fi
}

# What a guest left in its out folder: its verdict, its results, its
# kernel log.
guest_judge() { # label outdir
	if [ -f "$2/verdict" ]; then
		record FAIL "$1guest: $(cat "$2/verdict")"
	else
		record PASS "$1guest: ran to the end (longest silence $(cat "$2/longest-silence")s)"
	fi
	[ -f "$2/results" ] && sed "s/^\(PASS\|FAIL\) /&$1/" "$2/results" >> "$results"
	# A guest script that met a shell error (a function or a program
	# missing, bad syntax, an unset variable) skipped whatever it was
	# about to test, and every check it did reach may still pass.
	if grep -E '\.sh: line [0-9]+: ' "$2/console.log" > "$2/shell-errors.log" 2>/dev/null; then
		cat "$2/shell-errors.log"
		record FAIL "$1guest scripts: no shell error"
	else
		record PASS "$1guest scripts: no shell error"
	fi
	kernel_checks "$1" "$2"
}

# One boot of the debug kernel.  The watchdog stops a hung guest within
# minutes; the timeout only bounds a run that keeps moving.
guest_run() { # label outdir timeout [vm.sh options] -- command...
	local label=$1 gout=$2 gtimeout=$3
	shift 3
	mkdir -p "$gout"
	"$TOP/scripts/vm.sh" -k "$kdir" -t "$gtimeout" -o "$gout" "$@" \
		> "$gout.log" 2>&1
	tail -n 150 "$gout.log"
	guest_judge "$label" "$gout"
}

# The kernel's rdma selftests come from the test kernel's source, which
# the guest does not see: copied into its OUT for scripts/guest/selftests.sh.
stage_selftests() { # guest-dir
	mkdir -p "$1/selftests/kselftest" &&
		cp -r "$src/tools/testing/selftests/rdma" "$1/selftests/" &&
		cp "$src/tools/testing/selftests/kselftest/ktap_helpers.sh" \
			"$1/selftests/kselftest/"
}

# Two guests as two hosts (vm-pair.sh), each judged as a guest: guest a's
# results and kernel log under "LABEL a: ", guest b's under "LABEL b: ".
pair_run() { # label outdir timeout [vm-pair.sh options] -- command...
	local label=$1 gout=$2 gtimeout=$3 t0=$SECONDS
	shift 3
	mkdir -p "$gout"
	"$TOP/scripts/vm-pair.sh" -k "$kdir" -t "$gtimeout" -o "$gout" "$@" \
		> "$gout.log" 2>&1
	tail -n 200 "$gout.log"
	echo "$label: both guests ran for $((SECONDS - t0))s"
	guest_judge "$label a: " "$gout/a"
	guest_judge "$label b: " "$gout/b"
}

# KUnit: each case line of the KTAP the module printed in guest DIR counts
# as a test.
kunit_judge() { # guest-dir
	if [ -f "$1/kunit.log" ]; then
		sed -E 's/^\[[^]]*\] ?//' "$1/kunit.log" > "$out/kunit.ktap"
		if python3 "$src/tools/testing/kunit/kunit.py" parse "$out/kunit.ktap" \
			> "$out/kunit-parse.log" 2>&1; then
			record PASS "kunit: kunit.py parse reports success"
		else
			record FAIL "kunit: kunit.py parse reports success"
		fi
		cat "$out/kunit-parse.log"
		ncases=0
		while read -r line; do
			name=${line#*ok [0-9]* }
			case "$line" in
			"not ok "*) record FAIL "kunit: $name" ;;
			*"# SKIP"*) record FAIL "kunit: $name (skipped)" ;;
			*) record PASS "kunit: $name" ;;
			esac
			ncases=$((ncases + 1))
		done < <(grep -E '^    (not )?ok [0-9]+ ' "$out/kunit.ktap" | sed 's/^    //')
		[ "$ncases" -gt 0 ] || record FAIL "kunit: cases found in the KTAP output"
	else
		record FAIL "kunit: KTAP output collected"
	fi
}

# The guest's sections, longest first, from their start times.
guest_sections() {
	[ -f "$out/guest/sections" ] || return 0
	awk '{ t = $1; $1 = ""; if (NR > 1) print t - t0, name; t0 = t; name = $0 }' \
		"$out/guest/sections" | sort -rn | head -n 12 |
		awk '{ n = $1; $1 = ""; printf "%s%s %ds", sep, substr($0, 2), n; sep = "; " }'
}

# The run's last lines: where the time went, what failed, the count; the
# exit status says whether anything failed.
summary() {
	timed_phase total "$t_start"
	echo
	echo "guest's longest sections: $(guest_sections)"
	echo "time (s): $(awk '{ n = $NF; $NF = ""; printf "%s%s%d", sep, $0, n; sep = ", " }' "$times")"
	passed=$(grep -c '^PASS ' "$results")
	failed=$(grep -c '^FAIL ' "$results")
	echo
	grep '^FAIL ' "$results" || true
	echo "$passed passed, $failed failed"
	exit "$([ "$failed" = 0 ] && echo 0 || echo 1)"
}

# check-full: the KCSAN kernel (no KASAN there), its own build of the
# driver in the guest's OUT, one boot of kcsan-tests.sh.  KCSAN reports
# that name softrvt fail it; races it finds elsewhere in the kernel are
# printed, not counted.
kcsan_phase() {
	local kk tree gout=$out/guest-kcsan

	if ! kk=$("$TOP/scripts/build-kernel.sh" kcsan 2> "$out/kcsan-build.log"); then
		tail -n 20 "$out/kcsan-build.log"
		record FAIL "kcsan: the KCSAN kernel builds"
		return
	fi
	tree=$(mktemp -d /tmp/softrvt-kcsan.XXXXXX)
	mkdir -p "$tree/drivers/infiniband/sw" "$tree/include/uapi/rdma" \
		"$gout/modules"
	cp -a "$TOP/drivers/infiniband/sw/softrvt" "$tree/drivers/infiniband/sw/"
	cp "$TOP/include/uapi/rdma/softrvt-abi.h" "$tree/include/uapi/rdma/"
	find "$tree" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \) -delete
	if ! make -C "$kk" M="$tree/drivers/infiniband/sw/softrvt" \
		CONFIG_RDMA_SOFTRVT=m modules > "$out/kcsan-module.log" 2>&1; then
		tail -n 20 "$out/kcsan-module.log"
		record FAIL "kcsan: softrvt builds for the KCSAN kernel"
		rm -rf "$tree"
		return
	fi
	cp "$tree/drivers/infiniband/sw/softrvt/softrvt.ko" "$gout/modules/"
	rm -rf "$tree"
	# A watchpoint every 40 accesses rather than 400: the writes of a
	# new path are few.
	"$TOP/scripts/vm.sh" -k "$kk" -t 3600 -o "$gout" \
		-a kcsan.skip_watch=40 -- \
		scripts/guest/kcsan-tests.sh > "$gout.log" 2>&1
	tail -n 60 "$gout.log"
	if [ -f "$gout/verdict" ]; then
		record FAIL "kcsan: guest: $(cat "$gout/verdict")"
	else
		record PASS "kcsan: guest ran to the end"
	fi
	[ -f "$gout/results" ] && cat "$gout/results" >> "$results"
	grep -A 30 'BUG: KCSAN' "$gout/dmesg" > "$gout/kcsan-reports.log" 2>/dev/null
	sed 's/^\[[^]]*\] //' "$gout/kcsan-reports.log" | grep '^BUG: KCSAN' |
		sort | uniq -c
	if grep -A 30 'BUG: KCSAN' "$gout/dmesg" 2>/dev/null |
		grep -q '\[softrvt\]'; then
		record FAIL "kcsan: no data race reported in softrvt"
	elif [ -f "$gout/dmesg" ]; then
		record PASS "kcsan: no data race reported in softrvt"
	else
		record FAIL "kcsan: kernel log collected"
	fi
	if grep -E 'WARNING:|BUG:|Oops|general protection fault' \
		"$gout/dmesg" 2>/dev/null | grep -v 'BUG: KCSAN'; then
		record FAIL "kcsan: kernel log: no WARNING, BUG or Oops"
	else
		record PASS "kcsan: kernel log: no WARNING, BUG or Oops"
	fi
}

# softrvt and rxe on two hosts: one boot of two guests, with
# ib_core.force_mr=1 (read-only once booted), so that the NVMe target on
# softrvt moves data through MRs of its own (rdma_rw) there.  Then the
# table of the programs people run on RDMA from both guests' rows.
pair_phase() {
	pair_run "pair" "$out/guest-pair" $((full ? 5400 : 1800)) \
		-a ib_core.force_mr=1 -- env SOFTRVT_FULL="$full" PAIR_FORCE_MR=1 \
		scripts/guest/pair-tests.sh
	echo "== the programs people run on RDMA (Documentation/softrvt/clients.rst)"
	if python3 "$TOP/scripts/clients-table.py" "$out/guest-pair/a/clients" \
		"$out/guest-pair/b/clients" > "$out/clients.rst"; then
		cat "$out/clients.rst"
		record PASS "clients: every pairing's programs in the table"
	else
		record FAIL "clients: every pairing's programs in the table"
	fi
}

# make check T="SUITE...": the test kernel, the modules, the provider and
# the test programs as they are, then one guest running those suites of
# run-tests.sh (make kunit: T=kunit), judged as make check judges its
# guest.  No lint, no stock or paired guests.  T=kcsan boots the KCSAN
# kernel of check-full alone, T=pair the two guests of the pair alone.
quick_check() { # suites
	local t0=$SECONDS

	kdir=$("$TOP/scripts/build-kernel.sh" debug) || { record FAIL "build test kernel"; summary; }
	src=$(readlink -f "$kdir/source")
	"$TOP/scripts/build-rootfs.sh" > /dev/null 2> "$out/rootfs.log" ||
		{ tail -n 20 "$out/rootfs.log"; record FAIL "build guest root"; summary; }
	if ! make -C "$kdir" M="$TOP" -j"$(nproc)" modules > "$out/build.log" 2>&1; then
		tail -n 30 "$out/build.log"
		record FAIL "modules build"
		summary
	fi
	# KUnit and the README's commands need neither the provider nor the
	# test programs.
	if [ -n "$(echo "$1" | tr ' ' '\n' | grep -v -x -E 'kunit|readme|')" ]; then
		"$TOP/scripts/build-provider.sh" > "$out/provider-build.log" 2>&1 ||
			{ tail -n 30 "$out/provider-build.log"; record FAIL "provider builds"; }
		make -s -C "$TOP/tests" > "$out/tests-build.log" 2>&1 ||
			{ cat "$out/tests-build.log"; record FAIL "tests: userspace tests build"; }
	fi
	timed_phase build "$t0"
	t0=$SECONDS
	case $1 in
	kcsan | pair)
		"${1}_phase"
		timed_phase "$1" "$t0"
		summary
		;;
	esac
	stage_selftests "$out/guest"
	# shellcheck disable=SC2086
	guest_run "" "$out/guest" $((full ? 4 * 3600 : 4500)) -- \
		env SOFTRVT_FULL="$full" scripts/guest/run-tests.sh $1
	timed_phase guest "$t0"
	[[ " $1 " != *" kunit "* ]] || kunit_judge "$out/guest"
	summary
}

# SOFTRVT_FULL=1 (make check-full) runs the long proofs at full size.  The
# in-guest suite of make check took 27 minutes under TCG on 2 cores
# (2026-12-02), more when the host has other work.
full=${SOFTRVT_FULL:-}
[ -z "${T:-}" ] || quick_check "$T"

# The stock guests: Debian releases' own kernels and rdma-core, with the
# packages of `make deb` for their libibverbs ABI installed as a user
# would, built by DKMS.  make check boots the oldest and the newest
# (Debian 12's Linux 6.1 with rdma-core 44; Debian 13 with trixie-
# backports' 7.3), make check-full Debian 13's 6.12 and sid's 7.2 with
# rdma-core 65 too.  Their root images and the packages are built in the
# background while the host builds the test kernel: debootstrap waits on
# the network and the disk.  The guests boot only once the kernel is
# built: a TCG guest and a kernel build on the same two cores took 3.5
# times as long for the guest's DKMS build as alone.  Prints PASS/FAIL
# lines, each test named "stock TARGET: ...".
kernel_built=$out/.kernel-built
stock_targets="bookworm trixie-bpo"
[ -n "${SOFTRVT_FULL:-}" ] && stock_targets="bookworm trixie trixie-bpo sid"
# What a stock guest left in DIR, its lines named LABEL: its verdict, its
# results, its kernel log.
stock_judge() { # label dir vm-log
	local label=$1 dir=$2

	if [ -f "$dir/verdict" ]; then
		# Indented: its PASS lines are counted from the results file.
		tail -n 30 "$3" | sed 's/^/  | /'
		echo "FAIL $label: guest: $(cat "$dir/verdict")"
	else
		echo "PASS $label: guest ran to the end (longest silence $(cat "$dir/longest-silence")s)"
	fi
	[ -f "$dir/results" ] && sed "s/^\(PASS\|FAIL\) stock\([ :]\)/\1 $label\2/; t; s/^\(PASS\|FAIL\) /\1 $label: /" "$dir/results"
	if grep -E 'WARNING:|BUG:|Oops|Kernel panic|general protection fault' \
		"$dir/dmesg" > "$dir/kernel-reports.log" 2>/dev/null; then
		cat "$dir/kernel-reports.log"
		echo "FAIL $label: kernel log: no WARNING, BUG or Oops"
	elif [ -f "$dir/dmesg" ]; then
		echo "PASS $label: kernel log: no WARNING, BUG or Oops"
	else
		echo "FAIL $label: kernel log collected"
	fi
}
stock_guest() { # target
	local t=$1 t0=$SECONDS dir=$out/stock-$1

	mkdir -p "$dir"
	SOFTRVT_STOCK=$t "$TOP/scripts/vm.sh" -S -t 1800 -o "$dir" -- \
		scripts/guest/stock-tests.sh > "$out/stock-$t-vm.log" 2>&1
	grep -E '^(== |apt-get install:|kernel )' "$out/stock-$t-vm.log"
	echo "stock guest $t: $((SECONDS - t0)) s with the wait for the guest lock"
	stock_judge "stock $t" "$dir" "$out/stock-$t-vm.log"
}
# check-full: two stock guests of different kernels as two hosts.
stock_pair() { # target-a target-b
	local t0=$SECONDS dir=$out/stock-pair

	mkdir -p "$dir"
	"$TOP/scripts/vm-pair.sh" -S "$1:$2" -t 2700 -o "$dir" -- \
		scripts/guest/stock-pair-tests.sh > "$out/stock-pair-vm.log" 2>&1
	grep -E '^[ab]\| (== |apt-get install:|kernel )' "$out/stock-pair-vm.log"
	echo "stock pair $1:$2: $((SECONDS - t0)) s with the wait for the guest lock"
	stock_judge "stock pair a ($1)" "$dir/a" "$dir/a.log"
	stock_judge "stock pair b ($2)" "$dir/b" "$dir/b.log"
}
stock_job() {
	local rc=0 t0=$SECONDS t ready="" dist=trixie

	for t in $stock_targets; do
		if SOFTRVT_STOCK=$t "$TOP/scripts/build-stock-root.sh" > /dev/null \
			2> "$out/stock-root-$t.log"; then
			ready+=" $t"
		else
			tail -n 20 "$out/stock-root-$t.log" | sed 's/^/  | /'
			echo "FAIL stock $t: the stock guest's root builds"
		fi
		[ "$t" = sid ] && dist=all
	done
	echo "stock guests' roots: ready after $((SECONDS - t0)) s"
	DIST=$dist "$TOP/scripts/build-deb.sh" > /dev/null 2> "$out/deb.log" || rc=$?
	[ "$rc" = 0 ] || tail -n 40 "$out/deb.log" | sed 's/^/  | /'
	case $rc in
	0 | 3) echo "PASS deb: make deb builds softrvt-dkms and ibverbs-provider-softrvt" ;;
	*)
		echo "FAIL deb: make deb builds softrvt-dkms and ibverbs-provider-softrvt"
		return
		;;
	esac
	if [ "$rc" = 0 ]; then
		echo "PASS deb: lintian reports no error or warning"
	else
		echo "FAIL deb: lintian reports no error or warning"
	fi
	# Not past check.sh itself, should it end first.
	while [ ! -e "$kernel_built" ] && kill -0 $$ 2>/dev/null; do
		sleep 5
	done
	[ -e "$kernel_built" ] || return
	for t in $ready; do
		stock_guest "$t"
	done
	# The oldest kernel against the newest, softrvt and rdma_rxe.
	[[ -n "${SOFTRVT_FULL:-}" && $ready == *bookworm* && $ready == *trixie-bpo* ]] &&
		stock_pair bookworm trixie-bpo
	true
}
stock_job > "$out/stock.log" 2>&1 &
stock=$!

# The guest's root beside the kernel: its debootstrap waits on the
# network and the disk more than on the CPUs.
t0=$SECONDS
"$TOP/scripts/build-rootfs.sh" > /dev/null 2> "$out/rootfs.log" &
rootfs=$!
kdir=$("$TOP/scripts/build-kernel.sh" debug) || { record FAIL "build test kernel"; kdir=""; }
: > "$kernel_built"
if ! wait "$rootfs"; then
	tail -n 20 "$out/rootfs.log"
	record FAIL "build guest root"
fi
src=$(readlink -f "$kdir/source")
timed_phase "kernel+root" "$t0"
t0=$SECONDS

# The watchdog's own test sleeps for minutes in an idle guest: let it
# run while the host builds and lints.
if [ -n "$kdir" ]; then
	"$TOP/scripts/harness-tests.sh" "$kdir" sleeper > "$out/harness-sleeper.log" 2>&1 &
	sleeper=$!
	KDIR=$kdir LINT_LOGDIR=$out/lint "$TOP/scripts/lint.sh" | tee -a "$results"
fi
for rc_ver in 56.1 65.0; do
	if SOFTRVT_RDMA_CORE=$rc_ver "$TOP/scripts/build-provider.sh" \
		> "$out/provider-build-$rc_ver.log" 2>&1; then
		record PASS "provider: libsoftrvt builds in rdma-core $rc_ver"
	else
		tail -30 "$out/provider-build-$rc_ver.log"
		record FAIL "provider: libsoftrvt builds in rdma-core $rc_ver"
	fi
done
if make -s -C "$TOP/tests" > "$out/tests-build.log" 2>&1; then
	record PASS "tests: userspace tests build"
else
	cat "$out/tests-build.log"
	record FAIL "tests: userspace tests build"
fi

if [ -n "$kdir" ]; then
	wait "$sleeper"
	cat "$out/harness-sleeper.log"
	grep -E '^(PASS|FAIL) ' "$out/harness-sleeper.log" >> "$results"
	"$TOP/scripts/harness-tests.sh" "$kdir" mirror 2>&1 | tee -a "$results"
	"$TOP/scripts/harness-tests.sh" "$kdir" freshdir 2>&1 | tee -a "$results"
	"$TOP/scripts/harness-tests.sh" "$kdir" kvm 2>&1 | tee -a "$results"
	# The pair's guest b is caught as the paused guest is, by its missing
	# heartbeat: one boot pair for both proofs.
	"$TOP/scripts/harness-tests.sh" "$kdir" pair 2>&1 | tee -a "$results"
	"$TOP/scripts/harness-tests.sh" "$kdir" pairsync 2>&1 | tee -a "$results"
	"$TOP/scripts/harness-tests.sh" "$kdir" plugin 2>&1 | tee -a "$results"
fi

timed_phase "host checks" "$t0"
t0=$SECONDS
stage_selftests "$out/guest"
guest_run "" "$out/guest" $((full ? 4 * 3600 : 4500)) -- \
	env SOFTRVT_FULL="$full" scripts/guest/run-tests.sh
timed_phase guest "$t0"
t0=$SECONDS
pair_phase
# check-full: force_mr on one device too, a boot of its own.
if [ -n "$full" ]; then
	guest_run "force_mr: " "$out/guest-force-mr" 900 -a ib_core.force_mr=1 -- \
		env SOFTRVT_FULL="$full" scripts/guest/nvme-tests.sh force_mr
	kcsan_phase
fi

timed_phase "pair guests" "$t0"
t0=$SECONDS
wait "$stock"
timed_phase "stock wait" "$t0"
echo "== stock guests (Debian's own kernels and rdma-core, make deb, DKMS)"
cat "$out/stock.log"
grep -E '^(PASS|FAIL) ' "$out/stock.log" >> "$results"

kunit_judge "$out/guest"

summary
