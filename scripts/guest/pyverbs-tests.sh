#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core's own pyverbs tests (python3-pyverbs, Debian 13) on softrvt0,
# one module per process: a module that crashes takes only itself down.
# usage: pyverbs-tests.sh [-d DEV] [-g GID] all | MODULE... | NAME:MODULE+...
# "all" is every test_*.py module the package ships; NAME:M1+M2+... runs
# the modules M1, M2... in one process, reported as NAME.  For each
# process prints one line
#   PYVERBS <name> <rc> <seconds> <ran> <passed> <skipped> <failed> <errors> <summary>
# where rc is the process's exit status (139 for SIGSEGV) and summary
# unittest's last OK/FAILED line, "-" when it printed none.  The log of a
# process is $OUT/pyverbs/<name>.log.
# SOFTRVT_PROVIDER=installed: the provider a package installed (a stock
# guest), not the one built in the repository.
set -u
export RDMAV_DRIVERS=${RDMAV_DRIVERS-/mnt/softrvt/build/provider/libsoftrvt}
[ "${SOFTRVT_PROVIDER:-}" = installed ] && unset RDMAV_DRIVERS
# A crash prints the Python stack it happened in.
export PYTHONFAULTHANDLER=1
OUT=${OUT:-/mnt/out}
dev=softrvt0
gid=1
while getopts "d:g:" opt; do
	case $opt in
	d) dev=$OPTARG ;;
	g) gid=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
src=${PYVERBS_TESTS:-/usr/share/doc/rdma-core/tests}
work=${PYVERBS_WORK:-/tmp/pyverbs}
mkdir -p "$work/tests" "$OUT/pyverbs"
cp -a "$src"/. "$work/tests/"
gunzip -f "$work"/tests/*.gz 2>/dev/null
cd "$work" || exit 1
if [ "${1:-}" = all ]; then
	set --
	for f in tests/test_*.py; do
		f=${f#tests/}
		set -- "$@" "${f%.py}"
	done
fi

# The count of one kind in unittest's summary: "FAILED (failures=1, ...)".
summary_count() { # summary key
	echo "$1" | sed -n "s/.*[(, ]$2=\([0-9]*\).*/\1/p" | grep . || echo 0
}

# The test modules MODULE imports, and theirs.
module_deps() { # module
	local d
	sed -n 's/^from tests\.\(test_[a-z0-9_]*\) import.*/\1/p' "tests/$1.py" |
	while read -r d; do
		echo "$d"
		module_deps "$d"
	done
}

# The package's __init__ imports every test_*.py beside it, which under
# TCG takes most of a minute: each module runs from a directory that
# holds the helpers, compiled once, and only it and the modules it
# imports.
mkdir -p slim/tests
find tests -maxdepth 1 -type f ! -name 'test_*' -exec cp -p -t slim/tests {} +
python3 -m compileall -q slim/tests > /dev/null

for arg in "$@"; do
	name=${arg%%:*}
	modules=${arg#*:}
	log=$OUT/pyverbs/$name.log
	rm -f slim/tests/test_*.py
	# __init__ imports the test modules in the order of their names,
	# and the first must import tests.utils before efa_base or
	# mlx5_base do, as they and utils import each other: in the whole
	# directory test_addr is first and does.
	echo 'import tests.utils  # noqa: F401, see pyverbs-tests.sh' \
		> slim/tests/test_0_import_order.py
	names=()
	for m in ${modules//+/ }; do
		[ -f "tests/$m.py" ] || break
		for d in "$m" $(module_deps "$m"); do
			cp -p "tests/$d.py" slim/tests/
		done
		names+=("tests.$m")
	done
	[ -f "tests/$m.py" ] || { echo "PYVERBS $name 2 0 0 0 0 0 0 no module $m"; continue; }
	start=$(date +%s)
	echo "pyverbs-tests: $name starts" > /dev/kmsg
	(cd slim && timeout 600 python3 tests/run_tests.py --dev "$dev" \
		--gid "$gid" -v "${names[@]}") > "$log" 2>&1
	rc=$?
	# Where a crash happened: the kernel names the object the faulting
	# instruction was in ("segfault at ... in libibverbs.so.1[...]").
	if [ "$rc" -ge 128 ]; then
		dmesg | sed -n "/pyverbs-tests: $name starts/,\$p" |
			grep -a 'segfault at\|traps:' | sed 's/^/KERNEL: /' >> "$log"
	fi
	secs=$(($(date +%s) - start))
	summary=$(grep -aE '^(OK|FAILED)' "$log" | tail -1)
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log" | tail -1)
	ran=${ran:-0}
	skipped=$(summary_count "$summary" skipped)
	failed=$(summary_count "$summary" failures)
	errors=$(summary_count "$summary" errors)
	xfail=$(summary_count "$summary" 'expected failures')
	xpass=$(summary_count "$summary" 'unexpected successes')
	passed=$((ran - skipped - failed - errors - xfail - xpass))
	echo "PYVERBS $name $rc $secs $ran $passed $skipped $failed $errors ${summary:--}"
done
