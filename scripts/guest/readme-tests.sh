#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The README's first commands, exactly as printed, on a guest where
# nothing of softrvt's is loaded yet (run first after boot).  The `make`
# lines ran on the host, which built the module in the tree; `eth0` is a
# veth of that name.
set -u

. scripts/guest/lib.sh

ko=drivers/infiniband/sw/softrvt/softrvt.ko
loaded() { lsmod | grep -q "^$1 "; }

mapfile -t lines < <(awk '
	/checked in the guest by scripts\/guest\/readme-tests.sh/ { marked = 1; next }
	marked && /^```sh/ { inside = 1; next }
	inside && /^```/ { exit }
	inside { print }' README.md)
check "readme: the checked block has the insmod and rdma link commands" \
	sh -c "printf '%s\n' \"\${@}\" | grep -q '^insmod ' && printf '%s\n' \"\${@}\" | grep -q '^rdma link add '" \
	sh "${lines[@]}"

check "readme: udp_tunnel, ip6_udp_tunnel and softrvt not loaded at boot" \
	sh -c '! lsmod | grep -Eq "^(udp_tunnel|ip6_udp_tunnel|softrvt) "'
# What the README warns about: insmod alone does not load the
# dependencies.
insmod "$ko" > /tmp/insmod.err 2>&1
rc=$?
cat /tmp/insmod.err
check "readme: insmod alone fails with Unknown symbol, as the README says" \
	sh -c "[ $rc != 0 ] && grep -q 'Unknown symbol' /tmp/insmod.err"

veth eth0 eth0-peer
for line in "${lines[@]}"; do
	case "$line" in
	make*) continue ;;
	esac
	echo "# $line"
	check "readme: \`$line\`" sh -c "$line"
	case "$line" in
	insmod*)
		check "readme: softrvt loaded after insmod" loaded softrvt ;;
	"rdma link add"*)
		check "readme: softrvt0 exists on eth0" \
			sh -c 'rdma link show softrvt0/1 | grep -q "netdev eth0"' ;;
	"rdma link delete"*)
		check "readme: softrvt0 is gone" no_ibdev softrvt0 ;;
	esac
done
ip link del eth0
rmmod softrvt
true
