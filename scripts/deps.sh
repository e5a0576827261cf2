#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Install the host packages softrvt's build and tests need (Debian 12 host).
# Idempotent: a stamp file skips apt when the package set has not changed.
set -euo pipefail

. "$(dirname "$0")/common.sh"

PKGS="build-essential bc bison flex libelf-dev libssl-dev dwarves cpio xz-utils
      rsync kmod python3 sparse qemu-system-x86 qemu-utils debootstrap
      iproute2 ca-certificates libibverbs-dev librdmacm-dev
      debhelper dh-dkms dpkg-dev fakeroot lintian git"

stamp="$CACHE/deps.$(echo "$PKGS" | sha256sum | cut -c1-12)"
[ -f "$stamp" ] && exit 0

export DEBIAN_FRONTEND=noninteractive
# From the archive apt already uses: linux-source-6.12 and rdma-core's
# source.  An earlier softrvt.list is ours, not the machine's.
rm -f /etc/apt/sources.list.d/softrvt.list
mirror=$(debian_mirror)
cat > /etc/apt/sources.list.d/softrvt.list <<LIST
deb $mirror bookworm-backports main
deb-src $mirror trixie main
LIST
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $PKGS
apt-get install -y -q --no-install-recommends -t bookworm-backports linux-source-6.12
touch "$stamp"
