#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A build chroot of Debian sid with the headers of the Debian 13 and sid
# kernels of the support table, cached: trixie's own (6.12),
# trixie-backports' (7.3) and sid's (7.2).
# A kernel's linux-headers package ships its kbuild tools (fixdep,
# modpost) linked against its own release's C library: those of trixie
# and sid do not run on a Debian 12 host, but both run on sid's.  And
# only sid's sparse knows what the headers of 7.x kernels use.
#
# usage: build-chroot.sh [sid]         prints the chroot's directory
#        build-chroot.sh -r sid -- COMMAND...
#                                      runs COMMAND in the chroot, the
#                                      repository at /src, /proc mounted
set -euo pipefail

. "$(dirname "$0")/common.sh"

run=0
if [ "${1:-}" = -r ]; then
	run=1
	shift
fi
target=${1:-sid}
[ $# = 0 ] || shift

# In the chroot: a module build with W=1 and sparse, and
# rdma-core's provider (cmake, ninja, its libraries' headers).
PKGS="gcc,make,libc6-dev,bc,flex,bison,libelf-dev,libssl-dev,sparse,kmod"
PKGS+=",cmake,ninja-build,pkg-config,libnl-3-dev,libnl-route-3-dev"
PKGS+=",libudev-dev,python3,ca-certificates,xz-utils"

[ "$target" = sid ] || { log "unknown chroot target $target"; exit 1; }
suite=sid
headers="linux-headers-amd64"
key=$(echo "$target $PKGS $headers trixie trixie-backports checker-valid files" | sha256sum | cut -c1-16)
dir=$CACHE/chroot-$target-$key

# Debian's linux-headers packages leave out scripts/checker-valid.sh,
# which the Makefile of 7.x kernels runs before C=1 or C=2 to see that
# sparse parses what their headers use (__typeof_unqual__); without it
# sparse is skipped with a warning.  This one asks sparse that question.
checker_valid() { # root
	local d

	for d in "$1"/usr/src/linux-headers-*-common; do
		[ -e "$d/scripts/checker-valid.sh" ] && continue
		grep -q 'checker-valid.sh' "$d/Makefile" || continue
		cat > "$d/scripts/checker-valid.sh" <<-'SCRIPT'
		#!/bin/sh
		# Prints 1 if the checker "$@" parses __typeof_unqual__, else 0.
		command -v "$1" > /dev/null || { echo 0; exit 0; }
		f=$(mktemp --suffix=.c)
		echo 'int u(const int *q) { __typeof_unqual__(*q) v = *q; return v; }' > "$f"
		if "$@" "$f" 2>&1 | grep -q error; then echo 0; else echo 1; fi
		rm -f "$f"
		SCRIPT
		chmod 755 "$d/scripts/checker-valid.sh"
	done
}

build() {
	local mirror root=$dir/root

	log "debootstrap $suite into $dir (about 3 minutes)"
	fresh_dir "$dir"
	mirror=$(debian_mirror)
	apt_proxy_env
	debootstrap_private --variant=minbase --include="$PKGS" "$suite" "$root" \
		"$mirror" >&2
	# sid's Release file reads as expired with some machines' clocks.
	echo 'Acquire::Check-Valid-Until "false";' \
		> "$root/etc/apt/apt.conf.d/99softrvt"
	cat > "$root/etc/apt/sources.list" <<-LIST
	deb $mirror $suite main
	deb $mirror trixie main
	deb $mirror trixie-backports main
	LIST
	[ -z "${http_proxy:-}" ] ||
		echo "Acquire::http::Proxy \"$http_proxy\";" \
			>> "$root/etc/apt/apt.conf.d/99softrvt"
	# shellcheck disable=SC2086
	# Debian 13's headers, its own and its backports', as files: trixie's
	# 6.12 headers depend on the kernel image, whose initramfs hook
	# fails in a chroot.  What they need to build a module is their
	# -common and linux-kbuild packages and their compiler, gcc-14.
	chroot "$root" sh -c "apt-get update -q &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $headers gcc-14 &&
		mkdir -p /tmp/headers && cd /tmp/headers &&
		for s in trixie trixie-backports; do
			h=\$(apt-cache depends linux-headers-amd64/\$s |
				awk '/Depends: linux-headers-/ { print \$2 }') &&
			d=\$(apt-cache depends \$h/\$s |
				awk '/Depends: linux-(headers|kbuild)-/ { print \$2 }') &&
			apt-get download \$h/\$s \$(for p in \$d; do echo \$p/\$s; done) ||
				exit 1
		done &&
		for f in *.deb; do dpkg -x \$f / || exit 1; done &&
		cd / && rm -rf /tmp/headers" >&2
	rm -rf "$root"/var/cache/apt/archives/*.deb
	checker_valid "$root"
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
