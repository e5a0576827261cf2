#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the userspace provider libsoftrvt inside rdma-core 56.1, the
# version the Debian 13 guest runs, and copy libsoftrvt-rdmav34.so to
# build/provider/ of the repository.  Prints that directory on stdout.
#
# The rdma-core source is fetched and configured once in $CACHE; later
# runs only copy providers/softrvt in and rebuild that one target.  In the
# guest, RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt loads it.
set -euo pipefail

. "$(dirname "$0")/common.sh"

RDMA_CORE_VER=56.1
RDMA_CORE_ORIG=rdma-core_${RDMA_CORE_VER}.orig.tar.gz
RDMA_CORE_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
# The provider ABI of libibverbs 56.1; the target and the file name carry it.
PROVIDER=softrvt-rdmav34
PKGS="cmake ninja-build dpkg-dev libnl-3-dev libnl-route-3-dev pkg-config libudev-dev
      python3 gcc binutils rsync"

src=$CACHE/rdma-core-$RDMA_CORE_VER
out=$TOP/build/provider

# The configured rdma-core tree in the cache is shared by every clone.
exec 8> "$CACHE/rdma-core.lock"
flock 8

check_orig() {
	echo "$RDMA_CORE_SHA256  $1" | sha256sum --check --status
}

has_source() {
	apt-cache showsrc rdma-core 2>/dev/null | grep -q "^Version: $RDMA_CORE_VER-"
}

fetch_source() {
	local tmp tarball=$CACHE/$RDMA_CORE_ORIG

	[ -f "$src/.softrvt-unpacked" ] && return 0
	if ! { [ -f "$tarball" ] && check_orig "$tarball"; }; then
		if grep -qs '^VERSION_CODENAME=bookworm$' /etc/os-release; then
			# scripts/deps.sh adds the trixie deb-src entry.
			grep -rqs '^deb-src .* trixie ' /etc/apt/sources.list.d/ ||
				"$TOP/scripts/deps.sh"
		elif ! has_source; then
			# Debian 13, for make install or make deb: the entry
			# alone, if apt's sources have none.
			apt-get update -q >&2
			has_source ||
				echo "deb-src $(debian_mirror) trixie main" \
					> /etc/apt/sources.list.d/softrvt-src.list
		fi
		has_source || apt-get update -q >&2
		tmp=$(mktemp -d "$CACHE/rdma-core-src.XXXXXX")
		# Let apt's unprivileged _apt user write the download there.
		chmod 755 "$tmp"
		log "fetching rdma-core $RDMA_CORE_VER source"
		# Exits non-zero (no .dsc is kept); the checksum below decides.
		(cd "$tmp" &&
		 apt-get source --download-only "rdma-core/trixie" >&2) || true
		if [ ! -f "$tmp/$RDMA_CORE_ORIG" ] ||
		   ! check_orig "$tmp/$RDMA_CORE_ORIG"; then
			log "rdma-core $RDMA_CORE_VER: $RDMA_CORE_ORIG missing or" \
			    "its sha256 is not $RDMA_CORE_SHA256"
			rm -rf "$tmp"
			exit 1
		fi
		mv "$tmp/$RDMA_CORE_ORIG" "$tarball"
		rm -rf "$tmp"
	fi
	log "unpacking $RDMA_CORE_ORIG"
	rm -rf "$src" "$src.new"
	mkdir -p "$src.new"
	tar -xzf "$tarball" -C "$src.new" --strip-components=1
	touch "$src.new/.softrvt-unpacked"
	mv "$src.new" "$src"
}

# Copy the provider and the uapi header into the tree, and hook them up.
install_sources() {
	# By content, and stamped now when copied: a changed file must look
	# newer to ninja than the objects built from the last copy.
	mkdir -p "$src/providers/softrvt"
	rsync -r --checksum --delete "$TOP/providers/softrvt/" \
		"$src/providers/softrvt/"

	# kernel-headers/ is rdma-core's copy of the kernel uapi.  Listed next
	# to siw-abi.h in kernel-headers/CMakeLists.txt, our header becomes
	# <rdma/softrvt-abi.h> (publish_internal_headers) and
	# <kernel-abi/softrvt-abi.h> with the _STRUCT_ wrappers that
	# DECLARE_DRV_CMD needs (rdma_kernel_provider_abi).
	if ! cmp -s "$TOP/include/uapi/rdma/softrvt-abi.h" \
		"$src/kernel-headers/rdma/softrvt-abi.h"; then
		cp "$TOP/include/uapi/rdma/softrvt-abi.h" \
			"$src/kernel-headers/rdma/softrvt-abi.h"
	fi
	if ! grep -q 'rdma/softrvt-abi.h' "$src/kernel-headers/CMakeLists.txt"; then
		sed -i 's|^\(\s*\)rdma/siw-abi.h$|&\n\1rdma/softrvt-abi.h|' \
			"$src/kernel-headers/CMakeLists.txt"
		[ "$(grep -c 'rdma/softrvt-abi.h' \
			"$src/kernel-headers/CMakeLists.txt")" = 2 ] ||
			{ log "cannot list softrvt-abi.h in kernel-headers/CMakeLists.txt"; exit 1; }
	fi
	if ! grep -q '^add_subdirectory(providers/softrvt)' "$src/CMakeLists.txt"; then
		sed -i 's|^add_subdirectory(providers/siw)$|&\nadd_subdirectory(providers/softrvt)|' \
			"$src/CMakeLists.txt"
		grep -q '^add_subdirectory(providers/softrvt)' "$src/CMakeLists.txt" ||
			{ log "cannot add providers/softrvt to CMakeLists.txt"; exit 1; }
	fi
}

# "VERSION SYMBOL" for each libibverbs symbol a library imports (undef)
# or defines (def), from objdump -T.
verbs_syms() {
	objdump -T "$2" | awk -v want="$1" '
		NF >= 2 && $(NF - 1) ~ /^\(?IBVERBS_/ {
			und = /\*UND\*/
			if ((want == "undef") != und)
				next
			v = $(NF - 1)
			gsub(/[()]/, "", v)
			print v, $NF
		}' | sort -u
}

# The guest runs Debian 13's rdma-core 56.1: the provider may need nothing
# but its libibverbs (including the IBVERBS_PRIVATE_34 symbols, which tie
# a provider to that exact release) and libc.  When the guest root has been
# built, check every imported symbol against its libibverbs too.
check_deps() {
	local so=$1 imports bad lib

	if objdump -p "$so" | grep -qE '^ *(RPATH|RUNPATH) '; then
		log "$so has a library search path of the build tree"
		exit 1
	fi

	bad=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }' |
		grep -Ev '^(libibverbs\.so\.1|libc\.so\.6)$' || true)
	if [ -n "$bad" ]; then
		log "$so needs libraries the guest may lack: ${bad//$'\n'/ }"
		exit 1
	fi
	imports=$(verbs_syms undef "$so")
	if [ -z "$imports" ]; then
		log "$so: found no libibverbs imports, objdump output not understood"
		exit 1
	fi
	bad=$(awk '$1 !~ /^IBVERBS_(1\.[0-9]+|PRIVATE_34)$/' <<<"$imports")
	if [ -n "$bad" ]; then
		log "$so needs libibverbs symbol versions 56.1 lacks: $bad"
		exit 1
	fi
	for lib in "$CACHE"/rootfs-*/usr/lib/*/libibverbs.so.1; do
		[ -e "$lib" ] || continue
		bad=$(comm -23 <(echo "$imports") <(verbs_syms def "$lib"))
		if [ -n "$bad" ]; then
			log "$so needs symbols $lib lacks: $bad"
			exit 1
		fi
	done
}

# shellcheck disable=SC2086
ensure_pkgs $PKGS
fetch_source
install_sources

# The library is used from the build tree, never installed by cmake,
# which would strip the build tree's RUNPATH: it is not given one.  It is
# compiled with Debian's hardening flags, as a package of it must be.  A
# tree configured otherwise before is configured again.
flags=$(cd "$src" && export DEB_BUILD_MAINT_OPTIONS=hardening=+all &&
	echo "-DCMAKE_C_FLAGS=$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)" &&
	echo "-DCMAKE_SHARED_LINKER_FLAGS=$(dpkg-buildflags --get LDFLAGS)" &&
	echo "-DCMAKE_MODULE_LINKER_FLAGS=$(dpkg-buildflags --get LDFLAGS)")
mapfile -t cmake_args <<<"-DNO_PYVERBS=1
-DNO_MAN_PAGES=1
-DCMAKE_SKIP_BUILD_RPATH=ON
$flags"
if [ ! -f "$src/build/build.ninja" ] ||
   [ "$(cat "$src/build/.softrvt-cmake-args" 2>/dev/null)" != "${cmake_args[*]}" ]; then
	log "configuring rdma-core $RDMA_CORE_VER"
	rm -rf "$src/build"
	mkdir -p "$src/build"
	(cd "$src/build" && cmake -GNinja "${cmake_args[@]}" .. >&2)
	echo "${cmake_args[*]}" > "$src/build/.softrvt-cmake-args"
fi
log "building $PROVIDER"
# ninja re-runs cmake by itself when the CMakeLists.txt files changed.
ninja -C "$src/build" -j1 "$PROVIDER" >&2

so=$src/build/lib/lib$PROVIDER.so
check_deps "$so"
mkdir -p "$out"
cp "$so" "$out/lib$PROVIDER.so.new"
mv "$out/lib$PROVIDER.so.new" "$out/lib$PROVIDER.so"
# For an installation: the .so next to libibverbs' other providers and
# this file in /etc/libibverbs.d/.
echo "driver softrvt" > "$out/softrvt.driver"
# The tests build against the verbs headers of the rdma-core the guest
# runs (tests/Makefile): cmake published them under build/include.
ln -sfn "$src/build/include" "$out/include"
echo "$out"
