#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the instruction-counting TCG plugin (scripts/qemu-plugin/) for
# the QEMU installed here and cache it; prints the path of the plugin.
# A plugin compiles against qemu-plugin.h of its QEMU's own version,
# which only QEMU's source carries: the header is taken from the source
# package of the installed version (apt-get source, the machine's own
# suite), checked by apt against its signed index.  No glib needed.
set -euo pipefail

. "$(dirname "$0")/common.sh"

ensure_pkgs qemu-system-x86 gcc xz-utils
src=$(dirname "$0")/qemu-plugin/insn_count.c
qver=$(dpkg-query -W -f '${source:Version}' qemu-system-x86)
key=$( { echo "$qver"; cat "$src"; } | sha256sum | cut -c1-16)
dir=$CACHE/plugin-$key

exec 8> "$CACHE/plugin.lock"
flock 8
if [ -f "$dir/insn_count.so" ]; then
	echo "$dir/insn_count.so"
	exit 0
fi

hdr=$CACHE/qemu-plugin-h-$qver/qemu-plugin.h
if [ ! -f "$hdr" ]; then
	dl=$CACHE/dl-qemu
	apt_download_dir "$dl"
	rel=$(. /etc/os-release && echo "$VERSION_CODENAME")
	for suite in "$rel" "$rel-updates" none; do
		[ "$suite" != none ] ||
			{ log "plugin: no source of qemu $qver in $rel or $rel-updates"; exit 1; }
		(cd "$dl" && apt_suite "$dl/apt" deb-src "$suite" source \
			--download-only "qemu=$qver") && break
	done
	mkdir -p "${hdr%/*}.tmp"
	tar -C "${hdr%/*}.tmp" --strip-components=3 --wildcards \
		-xf "$(ls "$dl"/qemu_*.orig.tar.*)" '*/include/qemu/qemu-plugin.h'
	mv "${hdr%/*}.tmp" "${hdr%/*}"
	rm -rf "$dl"
fi
log "building the TCG plugin insn_count for qemu $qver"
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -I "${hdr%/*}" \
	-o "$dir.tmp/insn_count.so" "$src"
mv "$dir.tmp" "$dir"
echo "$dir/insn_count.so"
