#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make deb`: build softrvt-dkms and ibverbs-provider-softrvt with
# dpkg-buildpackage from a copy of the repository's tracked files, then
# check them with lintian.  The packages, .buildinfo and .changes land in
# build/deb/ and lintian's report in build/deb/lintian.log; prints that
# directory on stdout.  Exits 1 if the build fails, 3 if lintian reports
# an error or a warning about the packages built.
set -euo pipefail

. "$(dirname "$0")/common.sh"

# The packaging tools, and what scripts/build-provider.sh builds with.
PKGS="build-essential debhelper dh-dkms dpkg-dev fakeroot lintian git rsync cmake
      ninja-build libnl-3-dev libnl-route-3-dev libudev-dev pkg-config
      python3 gcc binutils libibverbs1"

# shellcheck disable=SC2086
ensure_pkgs $PKGS

out=$TOP/build/deb
work=$(mktemp -d /tmp/softrvt-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

# dpkg-buildpackage writes next to the tree it builds: a copy, in a
# folder of its own, without the build products of the working tree.
version=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)
src=$work/softrvt-$version
mkdir -p "$src"
git -C "$TOP" ls-files -z |
	rsync -a --from0 --files-from=- "$TOP/" "$src/"

log "building the packages of softrvt $version"
if ! (cd "$src" && dpkg-buildpackage -b -us -uc) > "$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	log "dpkg-buildpackage failed"
	exit 1
fi
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes "$out"/lintian.log
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out/"
cp "$work/build.log" "$out/build.log"

changes=$(ls "$out"/*.changes)
if ! lintian --info --display-info --fail-on error,warning "$changes" \
	> "$out/lintian.log" 2>&1; then
	cat "$out/lintian.log" >&2
	log "lintian reported errors or warnings"
	exit 3
fi
echo "$out"
