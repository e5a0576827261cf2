#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In-guest part of `make demo`.
set -x
ip link add v0 type veth peer name v1
ip link set v0 up
ip link set v1 up
ip addr add 198.18.11.1/24 dev v0
rdma link add softrvt0 type softrvt netdev v0 || exit 1
lsmod | grep softrvt
rdma link show
rdma dev show
cat /sys/class/infiniband/softrvt0/ports/1/gids/0 \
    /sys/class/infiniband/softrvt0/ports/1/gids/1 2>/dev/null
if [ -x tests/uverbs_rings ]; then
	tests/uverbs_rings softrvt0 | tail -3
fi
rdma link delete softrvt0
rdma link show
