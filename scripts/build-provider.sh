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
PKGS="cmake ninja-build libnl-3-dev libnl-route-3-dev pkg-config libudev-dev
      python3 gcc"

src=$CACHE/rdma-core-$RDMA_CORE_VER
out=$TOP/build/provider

ensure_pkgs() {
	local missing=() p

	for p in $PKGS; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

check_orig() {
	echo "$RDMA_CORE_SHA256  $1" | sha256sum --check --status
}

fetch_source() {
	local tmp tarball=$CACHE/$RDMA_CORE_ORIG

	[ -f "$src/.softrvt-unpacked" ] && return 0
	if ! { [ -f "$tarball" ] && check_orig "$tarball"; }; then
		# scripts/deps.sh adds the trixie deb-src entry.
		grep -rqs '^deb-src .* trixie ' /etc/apt/sources.list.d/ ||
			"$TOP/scripts/deps.sh"
		apt-cache showsrc rdma-core 2>/dev/null |
			grep -q "^Version: $RDMA_CORE_VER-" || apt-get update -q >&2
		tmp=$(mktemp -d "$CACHE/rdma-core-src.XXXXXX")
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
	mkdir -p "$src/providers/softrvt"
	rsync -a --delete "$TOP/providers/softrvt/" "$src/providers/softrvt/"

	# kernel-headers/ is rdma-core's copy of the kernel uapi; the build
	# exposes it as <rdma/...> once listed in kernel-headers/CMakeLists.txt.
	if ! cmp -s "$TOP/include/uapi/rdma/softrvt-abi.h" \
		"$src/kernel-headers/rdma/softrvt-abi.h"; then
		cp "$TOP/include/uapi/rdma/softrvt-abi.h" \
			"$src/kernel-headers/rdma/softrvt-abi.h"
	fi
	if ! grep -q 'rdma/softrvt-abi.h' "$src/kernel-headers/CMakeLists.txt"; then
		sed -i 's|^\(\s*\)rdma/siw-abi.h$|&\n\1rdma/softrvt-abi.h|' \
			"$src/kernel-headers/CMakeLists.txt"
		grep -q 'rdma/softrvt-abi.h' "$src/kernel-headers/CMakeLists.txt"
	fi
	if ! grep -q '^add_subdirectory(providers/softrvt)' "$src/CMakeLists.txt"; then
		sed -i 's|^add_subdirectory(providers/siw)$|&\nadd_subdirectory(providers/softrvt)|' \
			"$src/CMakeLists.txt"
		grep -q '^add_subdirectory(providers/softrvt)' "$src/CMakeLists.txt"
	fi
}

# Every shared library the provider needs must come with the guest's
# rdma-core 56.1 (libibverbs, including its IBVERBS_PRIVATE_34 symbols)
# or libc.
check_deps() {
	local so=$1 bad

	bad=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }' |
		grep -Ev '^(libibverbs\.so\.1|libc\.so\.6)$' || true)
	if [ -n "$bad" ]; then
		log "$so needs libraries the guest may lack: $bad"
		exit 1
	fi
	bad=$(objdump -T "$so" | awk '$4 ~ /^IBVERBS_/ { print $4 }' |
		sort -u | grep -Ev '^IBVERBS_(1\.[0-9]+|PRIVATE_34)$' || true)
	if [ -n "$bad" ]; then
		log "$so needs libibverbs symbol versions 56.1 may lack: $bad"
		exit 1
	fi
}

ensure_pkgs
fetch_source
install_sources

if [ ! -f "$src/build/build.ninja" ]; then
	log "configuring rdma-core $RDMA_CORE_VER"
	mkdir -p "$src/build"
	(cd "$src/build" && cmake -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 .. >&2)
fi
log "building $PROVIDER"
# ninja re-runs cmake by itself when the CMakeLists.txt files changed.
ninja -C "$src/build" -j1 "$PROVIDER" >&2

so=$src/build/lib/lib$PROVIDER.so
check_deps "$so"
mkdir -p "$out"
cp "$so" "$out/lib$PROVIDER.so.new"
mv "$out/lib$PROVIDER.so.new" "$out/lib$PROVIDER.so"
echo "$out"
