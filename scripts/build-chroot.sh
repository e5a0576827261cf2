#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A build chroot of a Debian release with that release's kernel headers,
# cached.  A kernel's linux-headers package ships its kbuild tools (fixdep,
# modpost) linked against its own release's C library: trixie's and sid's
# do not run on a Debian 12 host, so modules for them are built inside a
# chroot of their release, at native speed.
#
# usage: build-chroot.sh TARGET      prints the chroot's directory
#        build-chroot.sh -r TARGET -- COMMAND...
#                                    runs COMMAND in the chroot, the
#                                    repository at /src (read-write)
# TARGET: trixie-bpo (Linux 7.3 from trixie-backports), sid (Linux 7.2,
# and what rdma-core 65's provider build needs).
set -euo pipefail

. "$(dirname "$0")/common.sh"

run=0
if [ "${1:-}" = -r ]; then
	run=1
	shift
fi
target=${1:?usage: build-chroot.sh [-r] TARGET [-- COMMAND...]}
shift

# Built in every chroot: a module build with W=1 and sparse, and
# rdma-core's provider (cmake, ninja, its libraries' headers).
PKGS="gcc,make,libc6-dev,bc,flex,bison,libelf-dev,libssl-dev,sparse,kmod"
PKGS+=",cmake,ninja-build,pkg-config,libnl-3-dev,libnl-route-3-dev"
PKGS+=",libudev-dev,python3,ca-certificates,xz-utils"

case $target in
trixie-bpo)
	suite=trixie
	extra_list="trixie-backports main"
	headers="-t trixie-backports linux-headers-amd64"
	;;
sid)
	suite=sid
	extra_list="sid main"
	headers="linux-headers-amd64"
	;;
*)
	log "unknown chroot target $target"
	exit 1
	;;
esac

key=$(echo "$target $PKGS $headers" | sha256sum | cut -c1-16)
dir=$CACHE/chroot-$target-$key

build() {
	local mirror root=$dir/root

	log "debootstrap $suite into $dir (about 3 minutes)"
	rm -rf "$dir"
	mkdir -p "$dir"
	mirror=$(debian_mirror)
	apt_proxy_env
	debootstrap --variant=minbase --include="$PKGS" "$suite" "$root" \
		"$mirror" >&2
	# sid's Release file reads as expired with some machines' clocks.
	echo 'Acquire::Check-Valid-Until "false";' \
		> "$root/etc/apt/apt.conf.d/99softrvt"
	cat > "$root/etc/apt/sources.list" <<-LIST
	deb $mirror $suite main
	deb $mirror $extra_list
	deb-src $mirror $suite main
	LIST
	[ -z "${http_proxy:-}" ] ||
		echo "Acquire::http::Proxy \"$http_proxy\";" \
			>> "$root/etc/apt/apt.conf.d/99softrvt"
	# shellcheck disable=SC2086
	chroot "$root" sh -c "apt-get update -q &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $headers" >&2
	rm -rf "$root"/var/cache/apt/archives/*.deb
	mkdir -p "$root/src"
	touch "$dir/.softrvt-done"
}

if [ ! -f "$dir/.softrvt-done" ]; then
	exec 9> "$CACHE/chroot-$target.lock"
	flock 9
	[ -f "$dir/.softrvt-done" ] || build
	exec 9>&-
fi

if [ "$run" = 0 ]; then
	echo "$dir/root"
	exit 0
fi
[ "${1:-}" = -- ] && shift
# A private mount namespace: the bind mounts end with the command, even
# when it is killed.
exec unshare -m sh -c '
	root=$1; src=$2; shift 2
	mount --bind "$src" "$root/src" &&
	mount -t proc proc "$root/proc" &&
	exec chroot "$root" "$@"' sh "$dir/root" "$TOP" "$@"
