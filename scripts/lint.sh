#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Static checks of the kernel sources, as linux-rdma review expects:
# a W=1 build with -Werror, sparse over every file (C=2), and
# checkpatch --strict.  The build's modules are the ones the tests load.
# Prints one "PASS name" or "FAIL name" line per check on stdout.
set -uo pipefail

. "$(dirname "$0")/common.sh"

kdir=${KDIR:-$("$TOP/scripts/build-kernel.sh" debug)} || exit 1
src=$(readlink -f "$kdir/source")
logdir=${LINT_LOGDIR:-$(mktemp -d /tmp/softrvt-lint.XXXXXX)}
mkdir -p "$logdir"

result() { # status name
	if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2"; fi
}

# sid's sparse: Debian 12's cannot parse 7.x headers (build-sparse.sh).
sparse_dir=$("$TOP/scripts/build-sparse.sh" 2> "$logdir/sparse-build.log") ||
	{ tail -n 20 "$logdir/sparse-build.log" >&2; exit 1; }
export PATH=$sparse_dir:$PATH
# A kernel whose checker-valid.sh turns the checker down builds on
# without it, saying so: that is a failure of the sparse check, not a
# pass.
sparse_skipped() { # build-log
	grep -q 'specified, but .* is not available or not up to date' "$1"
}

log "building modules with W=1 -Werror and sparse (C=2)"
make -s -C "$kdir" M="$TOP" clean >/dev/null 2>&1
make -C "$kdir" M="$TOP" W=1 C=2 KCFLAGS=-Werror modules \
	> "$logdir/build.log" 2>&1
build=$?
[ "$build" = 0 ] || tail -40 "$logdir/build.log" >&2
result "$build" "lint: modules build with W=1 -Werror"

# The driver folder on its own, laid out as in a kernel tree: its Kbuild
# must work without the repository's top level.
tree=$(mktemp -d /tmp/softrvt-tree.XXXXXX)
mkdir -p "$tree/drivers/infiniband/sw" "$tree/include/uapi/rdma"
cp -a "$TOP/drivers/infiniband/sw/softrvt" "$tree/drivers/infiniband/sw/"
cp "$TOP/include/uapi/rdma/softrvt-abi.h" "$tree/include/uapi/rdma/"
find "$tree" -name '*.o' -o -name '*.ko' -o -name '.*.cmd' | xargs rm -f
make -C "$kdir" M="$tree/drivers/infiniband/sw/softrvt" CONFIG_RDMA_SOFTRVT=m \
	W=1 KCFLAGS=-Werror modules > "$logdir/intree.log" 2>&1
intree=$?
[ -f "$tree/drivers/infiniband/sw/softrvt/softrvt.ko" ] || intree=1
[ "$intree" = 0 ] || tail -20 "$logdir/intree.log" >&2
rm -rf "$tree"
result "$intree" "lint: driver folder builds alone, as in a kernel tree"

# Sparse prints "file:line:col: warning|error: ..." for the files it checks.
grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$logdir/build.log" \
	> "$logdir/sparse.log"
if sparse_skipped "$logdir/build.log"; then
	log "the kernel's checker-valid.sh turned sparse down"
	result 1 "lint: sparse clean"
elif [ -s "$logdir/sparse.log" ] || [ "$build" != 0 ]; then
	cat "$logdir/sparse.log" >&2
	result 1 "lint: sparse clean"
else
	result 0 "lint: sparse clean"
fi

mapfile -t files < <(cd "$TOP" && git ls-files -- "drivers/*.[ch]" \
	"kunit/*.[ch]" "include/*.h" ":!*/trace.h" ":!*/compat.h")
(cd "$TOP" && "$src/scripts/checkpatch.pl" --strict --no-tree --terse \
	--show-types -f "${files[@]}") > "$logdir/checkpatch.log" 2>&1
# checkpatch does not parse the TRACE_EVENT() language: every trace header
# in the kernel (include/trace/events/rdma_core.h, for one) gets these
# from it, for its TP_*() layout and its TRACE_DEFINE_ENUM() lists.
(cd "$TOP" && "$src/scripts/checkpatch.pl" --strict --no-tree --terse \
	--show-types --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT,COMPLEX_MACRO,TRAILING_SEMICOLON,MACRO_ARG_UNUSED \
	-f $(git ls-files -- "drivers/*/trace.h")) >> "$logdir/checkpatch.log" 2>&1
# compat.h maps a macro of two arguments onto a kernel's of one where
# the kernel dropped the second (__assign_str(), v6.10).
(cd "$TOP" && "$src/scripts/checkpatch.pl" --strict --no-tree --terse \
	--show-types --ignore MACRO_ARG_UNUSED \
	-f drivers/infiniband/sw/softrvt/compat.h) >> "$logdir/checkpatch.log" 2>&1
if grep -qE '(ERROR|WARNING|CHECK):' "$logdir/checkpatch.log"; then
	grep -E '(ERROR|WARNING|CHECK):' "$logdir/checkpatch.log" >&2
	result 1 "lint: checkpatch --strict clean"
else
	result 0 "lint: checkpatch --strict clean"
fi

# Every module shares one symbol namespace with the kernel image and the
# other modules (kallsyms, ftrace and perf show them all), rdmavt, hfi1
# and qib among them.  Every global symbol of softrvt's modules carries
# softrvt's name (tracepoints carry it after the kernel's own prefixes),
# and no file of the kernel tree uses that name, so none can collide.
# The names the tests load the modules by are the modules' own.
prefix_check() {
	local ko bad=0 syms

	for ko in "$TOP/drivers/infiniband/sw/softrvt/softrvt.ko" \
		  "$TOP/kunit/softrvt_kunit.ko"; do
		[ -f "$ko" ] || continue
		syms=$(nm --defined-only "$ko" | awk '$2 ~ /^[A-Z]$/ { print $3 }' |
			grep -v -E '^(__this_module|init_module|cleanup_module)$' |
			grep -v -E '^(__[a-zA-Z_]+)?softrvt_')
		[ -z "$syms" ] || { log "$(basename "$ko"): global without softrvt_: $syms"; bad=1; }
	done
	[ -f "$TOP/drivers/infiniband/sw/softrvt/softrvt.ko" ] || bad=1
	if grep -r -l -I -w -E --include='*.[chS]' '(softrvt|SOFTRVT)_[A-Za-z0-9_]+' \
		"$src/drivers" "$src/include" "$src/net" "$src/kernel" 2>/dev/null; then
		log "the kernel tree uses softrvt's prefix"
		bad=1
	fi
	return "$bad"
}
prefix_check
result "$?" "lint: every global symbol carries softrvt's prefix, which the kernel tree does not use"

# The memory layer and the rings beneath the queues call nothing above
# them (design.rst): no symbol one of their objects takes from the
# driver is defined outside them.
layer_check() {
	local d="$TOP/drivers/infiniband/sw/softrvt" lower="mr mw sge placement rq mmap"
	local o defs="" bad=0 up

	[ -f "$d/softrvt.ko" ] || return 1
	for o in "$d"/*.o; do
		case " $lower softrvt softrvt.mod " in *" $(basename "$o" .o) "*) continue ;; esac
		defs+=$(nm --defined-only "$o" | awk '$2 ~ /^[A-Z]$/ { print $3 }')$'\n'
	done
	for o in $lower; do
		up=$(nm -u "$d/$o.o" | awk '{ print $2 }' | grep -x -F -f <(printf '%s' "$defs" | grep .))
		[ -z "$up" ] || { log "$o.c calls up: $up"; bad=1; }
	done
	return "$bad"
}
layer_check
result "$?" "lint: the memory layer calls nothing above it"

# loc.h lists each file's functions under the file's name: each under the
# file that defines it.
python3 - "$TOP/drivers/infiniband/sw/softrvt" <<'PY'
import re, sys
d = sys.argv[1]
cur, bad = None, 0
for line in open(f"{d}/loc.h"):
    m = re.match(r"^/\* ([a-z_]+\.c) \*/$", line)
    if m:
        cur = open(f"{d}/{m.group(1)}").read()
        name = m.group(1)
        continue
    m = re.match(r"^(?:extern )?[a-z][^(;\[]*?\b(\w+)\s*[(\[]", line)
    if m and cur is not None and not re.search(
            r"^[a-z][^;]*\b" + m.group(1) + r"\b\s*[(\[=]", cur, re.M):
        print(f"[softrvt] loc.h: {m.group(1)} is not defined in {name}", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
result "$?" "lint: every function of loc.h is under the file that defines it"

# No function of the driver is longer than 100 lines, its braces
# included: one rule a function, short enough to read whole.
long=$(cd "$TOP/drivers/infiniband/sw/softrvt" && awk '
	FNR == 1 { start = 0 }
	/^[a-z].*\(/ && !/;$/ { start = FNR; name = $0 }
	/^}/ && start { if (FNR - start + 1 > 100) print FILENAME ": " name; start = 0 }
' ./*.c)
[ -z "$long" ] || log "functions over 100 lines: $long"
result "$([ -z "$long" ]; echo $?)" "lint: no function of the driver over 100 lines"

# Every file starts with its SPDX line (after a #! line for scripts).
bad=0
while read -r f; do
	if ! head -2 "$TOP/$f" | grep -q 'SPDX-License-Identifier:'; then
		log "no SPDX line: $f"
		bad=1
	fi
done < <(cd "$TOP" && git ls-files -- '*.c' '*.h' '*.sh' '*.py' \
	'*.mk' 'Makefile' 'Kbuild' 'Kconfig' '*/Makefile' '*/Kbuild' '*/Kconfig')
result "$bad" "lint: SPDX line on every source file"

# The driver against each distribution kernel of the support table, as
# DKMS builds it there: W=1 -Werror and sparse.  Debian 12's headers on
# this (Debian 12) host; Debian 13's 6.12, its 7.3 backports and sid's 7.2
# in a sid build chroot (scripts/build-chroot.sh): their kbuild tools need
# a newer C library, and their headers a newer sparse, than Debian 12
# has.  A copy of the tracked files, built in /tmp of the machine that
# builds it.
lint_driver() { # name chroot-target|"" headers-glob
	local name=$1 target=$2 glob=$3 root="" hdr tree status

	if [ -n "$target" ]; then
		root=$("$TOP/scripts/build-chroot.sh" "$target" 2> "$logdir/chroot-$target.log") || {
			tail -n 20 "$logdir/chroot-$target.log" >&2
			result 1 "lint: $name: driver builds with W=1 -Werror, sparse clean"
			return
		}
	fi
	# shellcheck disable=SC2086
	hdr=$(cd "$root/" && ls -d $glob 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$hdr" ]; then
		log "$name: no headers matching $glob"
		result 1 "lint: $name: driver builds with W=1 -Werror, sparse clean"
		return
	fi
	tree=$(mktemp -d "$root/tmp/softrvt-lint.XXXXXX")
	(cd "$TOP" && git ls-files -z drivers include |
		xargs -0 cp --parents -t "$tree")
	local cmd=(make -C "/$hdr" M="${tree#"$root"}/drivers/infiniband/sw/softrvt"
		   CONFIG_RDMA_SOFTRVT=m W=1 C=2 KCFLAGS=-Werror modules)
	if [ -n "$target" ]; then
		"$TOP/scripts/build-chroot.sh" -r "$target" -- "${cmd[@]}"
	else
		"${cmd[@]}"
	fi > "$logdir/build-$name.log" 2>&1
	status=$?
	[ -f "$tree/drivers/infiniband/sw/softrvt/softrvt.ko" ] || status=1
	grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$logdir/build-$name.log" &&
		status=1
	sparse_skipped "$logdir/build-$name.log" && status=1
	[ "$status" = 0 ] || tail -n 30 "$logdir/build-$name.log" >&2
	rm -rf "$tree"
	result "$status" "lint: $name ($(basename "$hdr")): driver builds with W=1 -Werror, sparse clean"
}
if [ -z "${SOFTRVT_LINT_TEST_KERNEL_ONLY:-}" ]; then
	ensure_pkgs linux-headers-amd64
	lint_driver "Debian 12" "" "usr/src/linux-headers-6.1.*-amd64"
	lint_driver "Debian 13" sid "usr/src/linux-headers-6.12.*-amd64"
	lint_driver "Debian 13 backports" sid "usr/src/linux-headers-7.*+deb13-amd64"
	lint_driver "Debian sid" sid "usr/src/linux-headers-*+deb14-amd64"
fi
