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
# An earlier softrvt.list is ours, not the machine's: the kernel source
# and rdma-core's are fetched through apt configurations of their own
# (build-kernel.sh, build-provider.sh).
rm -f /etc/apt/sources.list.d/softrvt.list
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $PKGS
touch "$stamp"
