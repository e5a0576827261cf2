#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build sparse from Debian sid's source and cache it; prints the directory
# that holds the binary.  Debian 12's sparse (0.6.4) cannot parse what the
# headers of 7.x kernels use (__typeof_unqual__): their Makefile asks
# scripts/checker-valid.sh and skips sparse with a warning, so a C=2
# build against the 7.3 test kernel would check nothing.  sid's builds in
# seconds with nothing but the compiler.
set -euo pipefail

. "$(dirname "$0")/common.sh"

exec 8> "$CACHE/sparse.lock"
flock 8
if [ -f "$CACHE/sparse.version" ]; then
	dir=$CACHE/sparse-$(cat "$CACHE/sparse.version")
	if [ -x "$dir/sparse" ]; then
		echo "$dir"
		exit 0
	fi
fi

dl=$CACHE/dl-sparse
apt_download_dir "$dl"
# apt-get source checks each file against the .dsc, and the .dsc against
# sid's signed index.
(cd "$dl" && apt_suite "$dl/apt" deb-src sid source --download-only sparse) ||
	{ log "sparse: no source fetched from sid"; exit 1; }
orig=$(ls "$dl"/sparse_*.orig.tar.*)
version=$(basename "$orig")
version=${version#sparse_}
version=${version%.orig.tar.*}
dir=$CACHE/sparse-$version
log "building sparse $version"
rm -rf "$dir" "$dir.tmp"
mkdir -p "$dir.tmp"
tar -C "$dir.tmp" --strip-components=1 -xf "$orig"
make -s -C "$dir.tmp" -j"$(nproc)" sparse >&2
mv "$dir.tmp" "$dir"
echo "$version" > "$CACHE/sparse.version"
rm -rf "$dl"
echo "$dir"
