#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make deb [DIST=bookworm|trixie|sid|all]`: build softrvt-dkms and
# ibverbs-provider-softrvt with dpkg-buildpackage from a copy of the
# repository's tracked files, then check them with lintian.  One build
# per libibverbs private ABI: Debian 12 and 13 (rdma-core 44 and 56.1)
# share ABI 34, and their packages land in build/deb/; sid's rdma-core
# 65 has ABI 65, and its packages land in build/deb-rdmav65/.  With them
# the .buildinfo, .changes and lintian's report (lintian.log); prints the
# directories on stdout.  Exits 1 if a build fails, 3 if lintian reports
# an error or a warning about the packages built.
set -euo pipefail

. "$(dirname "$0")/common.sh"

# The packaging tools, and what scripts/build-provider.sh builds with.
PKGS="build-essential debhelper dh-dkms dpkg-dev fakeroot lintian git rsync cmake
      ninja-build libnl-3-dev libnl-route-3-dev libudev-dev pkg-config
      python3 gcc binutils libibverbs1"

# shellcheck disable=SC2086
ensure_pkgs $PKGS

# build RDMA-CORE-RELEASE OUTPUT-DIRECTORY
build() {
	local rdma_core=$1 out=$2 work version src changes

	work=$(mktemp -d /tmp/softrvt-deb.XXXXXX)

	# dpkg-buildpackage writes next to the tree it builds: a copy, in a
	# folder of its own, without the build products of the working tree.
	version=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)
	src=$work/softrvt-$version
	mkdir -p "$src"
	git -C "$TOP" ls-files -z |
		rsync -a --from0 --files-from=- "$TOP/" "$src/"

	log "building the packages of softrvt $version"
	if ! (cd "$src" && SOFTRVT_RDMA_CORE=$rdma_core dpkg-buildpackage -b -us -uc) \
		> "$work/build.log" 2>&1; then
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
	rm -rf "$work"
	echo "$out"
}

case ${DIST:-trixie} in
bookworm | trixie) build 56.1 "$TOP/build/deb" ;;
sid) build 65.0 "$TOP/build/deb-rdmav65" ;;
all)
	build 56.1 "$TOP/build/deb"
	build 65.0 "$TOP/build/deb-rdmav65"
	;;
*)
	log "DIST=$DIST: one of bookworm, trixie, sid, all"
	exit 1
	;;
esac
