#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In-guest part of scripts/capture-rxe-vectors.sh.
set -eu
ip netns add peer
ip link add c0 type veth peer name c1
ip link set c1 netns peer
ip addr add 198.18.31.1/24 dev c0
ip addr add 2001:2:0:31::1/64 dev c0 nodad
ip link set c0 up
ip -n peer addr add 198.18.31.2/24 dev c1
ip -n peer addr add 2001:2:0:31::2/64 dev c1 nodad
ip -n peer link set c1 up
ip -n peer link set lo up
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev c0
sleep 2
gid_index() { # address pattern in the GID table
	for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
		grep -q "$1" "$g" && { basename "$g"; return; }
	done
}
v4=$(gid_index ffff:c612:1f01)
v6=$(gid_index 2001:0002:0000:0031)
out=/mnt/out/vectors.txt
: > "$out"
run() { # kind prog gid_index peer_gid_hex server
	ip netns exec peer python3 scripts/guest/capture-rxe.py "$1" "$4" >> "$out" &
	local cap=$! n=300
	while [ $n -gt 0 ] && ! ip netns exec peer ss -ltn | grep -q ':18515 '; do
		sleep 0.1
		n=$((n - 1))
	done
	timeout 8 "$2" -d rxe0 -g "$3" -n 1 -s 64 "$5" >> /mnt/out/clients.log 2>&1 || true
	wait $cap
}
run ud_v4 ibv_ud_pingpong "$v4" 00000000000000000000ffffc6121f02 198.18.31.2
run rc_v4 ibv_rc_pingpong "$v4" 00000000000000000000ffffc6121f02 198.18.31.2
run ud_v6 ibv_ud_pingpong "$v6" 20010002000000310000000000000002 2001:2:0:31::2
cat "$out"
