#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Two stock guests of different Debian releases as two hosts
# (scripts/vm-pair.sh -S A:B): each installs the packages of `make deb`
# and builds the module with DKMS for its own kernel, then RC traffic with
# data checked crosses the link both ways — softrvt to softrvt, then
# softrvt on guest a with rdma_rxe on guest b, then rdma_rxe on guest a
# with softrvt on guest b: the wire format does not depend on the kernel
# a module was built for.  Each guest writes PASS/FAIL lines to its own
# $OUT/results, the client's guest for each program.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
: > "$OUT/results"
. scripts/guest/stock-lib.sh
. scripts/guest/pair-lib.sh || exit 2

# The releases' own providers: rxe's and the installed softrvt's.
PAIR_PROVIDERS=installed

# A stock kernel has virtio-net as a module, which no udev loads once the
# guest's init runs; had the initramfs loaded it, udev named the NIC by
# its slot.  pair-lib wants eth0.
modprobe virtio_net
nic=""
for _ in $(seq 50); do
	nic=$(ip -o link | awk -F': ' '/52:54:00:50:00:0/ { print $2; exit }')
	[ -n "$nic" ] && break
	sleep 0.2
done
[ -z "$nic" ] || [ "$nic" = eth0 ] || ip link set "$nic" name eth0

stock_install

pair_stage() { echo "== pair (${SECONDS}s): $*"; }
# The pingpongs with their data checked, a server on guest SROLE.
cross() { # LABEL SROLE
	pair_prog "$1: rc_pingpong -s 65536 -c" "$iters" "$2" \
		ibv_rc_pingpong -d %D -g %G -s 65536 -n 20 -c
	pair_prog "$1: rc_pingpong -s 1 -c" "$iters" "$2" \
		ibv_rc_pingpong -d %D -g %G -s 1 -n 20 -c
}

pair_stage "guest $PAIR_ROLE ($kver) at $PAIR_ADDR"
if ! pair_up; then
	ip addr show
	exit 0
fi
pass "link: eth0 up at MTU 9000, guest $PAIR_OTHER met over it"
pair_sync "kernels" "$kver"
other_kver=$REPLY
echo "# guest $PAIR_OTHER runs $other_kver"
me="$kver ($PAIR_ROLE)"
peer="$other_kver ($PAIR_OTHER)"
[ "$PAIR_ROLE" = a ] && ka=$me kb=$peer || ka=$peer kb=$me

pair_stage "softrvt on both hosts"
check "link: softrvt device on eth0" pair_dev_up softrvt softrvt0
pair_sync "softrvt on both"
cross "srvt $ka server, srvt $kb client" a
cross "srvt $kb server, srvt $ka client" b

pair_stage "softrvt on guest a, rdma_rxe on guest b"
if [ "$PAIR_ROLE" = b ]; then
	check "link: softrvt device removed" pair_dev_down
	check "link: rxe device on eth0" pair_dev_up rxe rxe0
fi
pair_sync "softrvt and rxe"
cross "srvt $ka server, rxe $kb client" a
cross "rxe $kb server, srvt $ka client" b

pair_stage "rdma_rxe on guest a, softrvt on guest b"
check "link: $PAIR_DEV removed" pair_dev_down
if [ "$PAIR_ROLE" = a ]; then
	check "link: rxe device on eth0" pair_dev_up rxe rxe0
else
	check "link: softrvt device on eth0" pair_dev_up softrvt softrvt0
fi
pair_sync "rxe and softrvt"
cross "rxe $ka server, srvt $kb client" a
cross "srvt $kb server, rxe $ka client" b

pair_stage "teardown"
[ -n "$PAIR_DEV" ] && check "link: $PAIR_DEV removed" pair_dev_down
pair_down
echo "# pair: guest $PAIR_ROLE ran its tests in ${SECONDS}s"
