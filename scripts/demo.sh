#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make demo`: build what is needed, boot the guest, add a softrvt device
# on a veth and show it.
set -euo pipefail

. "$(dirname "$0")/common.sh"

kdir=$("$TOP/scripts/build-kernel.sh" debug)
"$TOP/scripts/build-rootfs.sh" > /dev/null
make -s -C "$kdir" M="$TOP" modules
make -s -C "$TOP/tests"
"$TOP/scripts/vm.sh" -k "$kdir" -t 900 -- scripts/guest/demo.sh
