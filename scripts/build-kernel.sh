#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the test kernel from Debian's linux-source-6.12 and cache it.
#
# usage: build-kernel.sh [debug|release|kcsan]
# Prints the build directory (usable as KDIR) on stdout.  The cache key is
# the source tarball's version plus the config fragments, so editing a
# fragment rebuilds and an unchanged tree costs nothing.
set -euo pipefail

. "$(dirname "$0")/common.sh"

flavour=${1:-debug}
tarball=/usr/src/linux-source-6.12.tar.xz
[ -f "$tarball" ] || { log "missing $tarball: run scripts/deps.sh"; exit 1; }

frags=("$TOP/scripts/kconfig/base.config")
[ "$flavour" = debug ] && frags+=("$TOP/scripts/kconfig/debug.config")
[ "$flavour" = kcsan ] && frags+=("$TOP/scripts/kconfig/kcsan.config")

version=$(dpkg-query -W -f='${Version}' linux-source-6.12)
key=$( { echo "$version"; cat "${frags[@]}"; } | sha256sum | cut -c1-16)
src=$CACHE/linux-source-$version
out=$CACHE/kernel-$flavour-$key

if [ -f "$out/.softrvt-done" ]; then
	echo "$out"
	exit 0
fi

# One kernel build at a time on this machine: a second caller waits for
# the first, then finds its kernel built (2 cores; and two builds of the
# same key would remove each other's tree).
exec 8> "$CACHE/kernel-build.lock"
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
