#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the test kernel from Debian's linux-source and cache it: by
# default 7.3 (trixie-backports' linux-source-7.3, the newest kernel
# softrvt supports, what an upstream reviewer builds); SOFTRVT_KERNEL=6.12
# builds bookworm-backports' linux-source-6.12, the series the tests ran
# on before.
#
# usage: build-kernel.sh [debug|release|kcsan]
# Prints the build directory (usable as KDIR) on stdout.  The cache key is
# the source package's version plus the config fragments, so editing a
# fragment rebuilds and an unchanged tree costs nothing.
set -euo pipefail

. "$(dirname "$0")/common.sh"

flavour=${1:-debug}
series=${SOFTRVT_KERNEL:-7.3}
case $series in
6.12) suite=bookworm-backports ;;
7.3) suite=trixie-backports ;;
*)
	log "SOFTRVT_KERNEL=$series: the test kernel is 7.3 or 6.12"
	exit 1
	;;
esac
pkg=linux-source-$series

frags=("$TOP/scripts/kconfig/base.config" "$TOP/scripts/kconfig/$series.config")
[ "$flavour" = debug ] && frags+=("$TOP/scripts/kconfig/debug.config")
[ "$flavour" = kcsan ] && frags+=("$TOP/scripts/kconfig/kcsan.config")

# The suite's newest $pkg, the first time this cache needs it; later
# runs keep to that version (remove $CACHE/$pkg.version to take a newer
# one).  apt checks the package against the suite's signed index.
fetch_source() {
	local dl=$CACHE/dl-$pkg version deb

	apt_download_dir "$dl"
	(cd "$dl" && apt_suite "$dl/apt" deb "$suite" download "$pkg") ||
		{ log "$pkg: not fetched from $suite"; exit 1; }
	deb=$(ls "$dl"/"$pkg"_*_all.deb)
	version=$(dpkg-deb -f "$deb" Version)
	log "unpacking $pkg $version"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO "./usr/src/$pkg.tar.xz" > "$CACHE/$pkg-$version.tar.xz"
	echo "$version" > "$CACHE/$pkg.version"
	rm -rf "$dl"
}

# One kernel build at a time on this machine: a second caller waits for
# the first, then finds its kernel built (2 cores; and two builds of the
# same key would remove each other's tree).  A kernel already built is
# handed out without waiting.
exec 8> "$CACHE/kernel-build.lock"
if [ ! -f "$CACHE/$pkg.version" ]; then
	flock 8
	[ -f "$CACHE/$pkg.version" ] || fetch_source
fi
version=$(cat "$CACHE/$pkg.version")
tarball=$CACHE/$pkg-$version.tar.xz
key=$( { echo "$version"; cat "${frags[@]}"; } | sha256sum | cut -c1-16)
src=$CACHE/linux-source-$version
out=$CACHE/kernel-$flavour-$key

if [ -f "$out/.softrvt-done" ]; then
	echo "$out"
	exit 0
fi
flock 8
if [ -f "$out/.softrvt-done" ]; then
	echo "$out"
	exit 0
fi

if [ ! -f "$src/.softrvt-unpacked" ]; then
	log "unpacking $tarball"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" --strip-components=1 -xJf "$tarball"
	touch "$src.tmp/.softrvt-unpacked"
	mv "$src.tmp" "$src"
fi

log "building $flavour kernel in $out (about 15 minutes on 2 cores)"
rm -rf "$out"
mkdir -p "$out"
make -s -C "$src" O="$out" allnoconfig >&2
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" >&2
make -s -C "$src" O="$out" olddefconfig >&2

# merge_config drops options whose dependencies are off without failing.
missing=0
for f in "${frags[@]}"; do
	while read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qx -- "$line" "$out/.config" ||
				{ log "option lost: $line"; missing=1; }
			;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }
			opt=${opt%% *}
			! grep -q "^$opt=" "$out/.config" ||
				{ log "option should be off: $opt"; missing=1; }
			;;
		esac
	done < "$f"
done
[ "$missing" = 0 ] || exit 1

jobs=$(($(nproc) + 1))
make -s -C "$src" O="$out" -j"$jobs" bzImage modules >&2
make -s -C "$src" O="$out" INSTALL_MOD_PATH="$out/modroot" modules_install >&2
touch "$out/.softrvt-done"
echo "$out"
