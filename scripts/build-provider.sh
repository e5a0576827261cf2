#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the userspace provider libsoftrvt inside an rdma-core release's
# tree and copy it to the repository's build/: libsoftrvt-rdmav34.so to
# build/provider/ (rdma-core 56.1, the default: libibverbs' private ABI
# 34, which Debian 12's rdma-core 44 and Debian 13's 56.1 share),
# libsoftrvt-rdmav65.so to build/provider-rdmav65/ with
# SOFTRVT_RDMA_CORE=65.0 (Debian sid: rdma-core 65 changed that ABI).
# Prints the directory on stdout.
#
# The rdma-core source is fetched and configured once in $CACHE; later
# runs only copy providers/softrvt in and rebuild that one target.  In the
# guest, RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt loads it.
set -euo pipefail

. "$(dirname "$0")/common.sh"

RDMA_CORE_VER=${SOFTRVT_RDMA_CORE:-56.1}
case $RDMA_CORE_VER in
56.1)
	RDMA_CORE_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
	suite=trixie
	pabi=34
	out=$TOP/build/provider
	;;
65.0)
	RDMA_CORE_SHA256=f6ba3d8b2c4aa334c5c883c1ad0772de339011123cff4fb1db32ae7a443fb7ca
	suite=sid
	pabi=65
	out=$TOP/build/provider-rdmav65
	;;
*)
	log "rdma-core $RDMA_CORE_VER: not a release softrvt builds in (56.1, 65.0)"
	exit 1
	;;
esac
RDMA_CORE_ORIG=rdma-core_${RDMA_CORE_VER}.orig.tar.gz
# The provider ABI of that libibverbs; the target and the file name carry it.
PROVIDER=softrvt-rdmav$pabi
PKGS="cmake ninja-build dpkg-dev libnl-3-dev libnl-route-3-dev pkg-config libudev-dev
      python3 gcc binutils rsync"

src=$CACHE/rdma-core-$RDMA_CORE_VER

# The configured rdma-core tree in the cache is shared by every clone.
exec 8> "$CACHE/rdma-core.lock"
flock 8

check_orig() {
	echo "$RDMA_CORE_SHA256  $1" | sha256sum --check --status
}

# The release's source from the suite that has it; apt checks the tarball
# against the suite's index, and so does the checksum here, against the
# release softrvt was tested with.
download_orig() { # directory
	# Fails when the .dsc is gone from the mirror: the checksum decides.
	(cd "$1" && apt_suite "$1/apt" deb-src "$suite" \
		source --download-only "rdma-core/$suite") || true
}

fetch_source() {
	local tmp tarball=$CACHE/$RDMA_CORE_ORIG

	[ -f "$src/.softrvt-unpacked" ] && return 0
	if ! { [ -f "$tarball" ] && check_orig "$tarball"; }; then
		tmp=$(mktemp -d "$CACHE/rdma-core-src.XXXXXX")
		# Let apt's unprivileged _apt user write the download there.
		chmod 755 "$tmp"
		log "fetching rdma-core $RDMA_CORE_VER source from $suite"
		download_orig "$tmp"
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

# The provider may need nothing but libibverbs (including the
# IBVERBS_PRIVATE_<ABI> symbols, which tie a provider to the releases of
# that ABI) and libc.  When the guest root (Debian 13, rdma-core 56.1)
# has been built, check every imported symbol of the ABI-34 build against
# its libibverbs too.
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
	bad=$(awk -v p="$pabi" '$1 !~ "^IBVERBS_(1\\.[0-9]+|PRIVATE_" p ")$"' <<<"$imports")
	if [ -n "$bad" ]; then
		log "$so needs libibverbs symbol versions of another ABI: $bad"
		exit 1
	fi
	[ "$pabi" = 34 ] || return 0
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
