#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NFS over RDMA on softrvt, server and client in this kernel on one
# device: nfsd exports a tmpfs and listens for RPC-over-RDMA on port
# 20049 (svcrdma), the client mounts it with proto=rdma (xprtrdma, which
# registers its pages with FRWR).  NFSv3: rpcbind and mountd answer the
# MOUNT call over TCP, everything after it goes over RDMA.  Files written
# through the mount are read back, after the client's cache is dropped,
# and their checksums compared.  Writes PASS/FAIL lines to $OUT/results.
set -u

. scripts/guest/lib.sh

ADDR=198.18.42.1
EXPORT=/tmp/nfs-export
MNT=/tmp/nfs-mnt
mib=32
[ "${SOFTRVT_FULL:-}" ] && mib=384

log0=$(dmesg | wc -l)

server_up() {
	# The root is read-only: nfs-utils keeps its state in tmpfs.
	mount -t tmpfs tmpfs /var/lib/nfs &&
		mkdir -p /var/lib/nfs/sm /var/lib/nfs/v4recovery "$EXPORT" &&
		touch /var/lib/nfs/etab /var/lib/nfs/rmtab /var/lib/nfs/xtab &&
		mount -t tmpfs -o size=$((mib * 2 + 64))m tmpfs "$EXPORT" &&
		modprobe nfsd && modprobe rpcrdma &&
		{ mountpoint -q /proc/fs/nfsd ||
			mount -t nfsd nfsd /proc/fs/nfsd; } &&
		rpcbind -w &&
		exportfs -o rw,no_root_squash,insecure,fsid=1 "$ADDR/24:$EXPORT" &&
		rpc.mountd -N 2 -N 4 &&
		rpc.nfsd -N 4 2 &&
		echo "rdma 20049" > /proc/fs/nfsd/portlist
}

server_down() {
	rpc.nfsd 0
	exportfs -ua
	pkill -x rpc.mountd
	pkill -x rpcbind
	sleep 1
	umount /proc/fs/nfsd
	umount "$EXPORT"
	umount /var/lib/nfs
	modprobe -r nfsd rpcrdma nfsv3 nfs lockd
}

listening_rdma() { grep -q '^rdma 20049' /proc/fs/nfsd/portlist; }

client_mount() {
	mkdir -p "$MNT" &&
		timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049,nolock,mountproto=tcp \
			"$ADDR:$EXPORT" "$MNT"
}

mounted_rdma() { grep -q " $MNT nfs .*proto=rdma" /proc/mounts; }

# Files of 1 MiB and of odd sizes, written through the mount, read back
# through it after the client's page cache is dropped.
round_trip() {
	local want got
	mounted_rdma || return 1
	head -c $((mib << 20)) /dev/urandom > /tmp/nfs.data
	timeout 600 dd if=/tmp/nfs.data of="$MNT/big" bs=1M status=none \
		conv=fsync || return 1
	for i in 1 2 3; do
		head -c $((i * 4096 + i * 7)) /tmp/nfs.data > "$MNT/small$i" ||
			return 1
	done
	sync
	echo 3 > /proc/sys/vm/drop_caches
	want=$( (cat /tmp/nfs.data; for i in 1 2 3; do
		head -c $((i * 4096 + i * 7)) /tmp/nfs.data; done) | sha256sum)
	got=$( (timeout 600 cat "$MNT/big" "$MNT/small1" "$MNT/small2" \
		"$MNT/small3") | sha256sum)
	echo "nfs: want $want, read $got"
	[ "$want" = "$got" ] || return 1
	# The server's copy too: what the client wrote reached the export.
	[ "$(cat "$EXPORT/big" | sha256sum)" = "$(sha256sum < /tmp/nfs.data)" ]
}

# Both ends of the transport are RC QPs in RTS on softrvt8 (the client's
# xprtrdma and the server's svcrdma, made through rdma_cm, which names
# them): the data did not take TCP.
rdma_qps() {
	local qps n
	qps=$(rdma -d resource show qp 2>&1)
	n=$(printf '%s\n' "$qps" | grep 'link softrvt8/' |
		grep -c 'type RC state RTS')
	echo "nfs: $n RC QPs in RTS on softrvt8"
	[ "$n" -ge 2 ] && return 0
	printf '%s\n' "$qps"
	return 1
}

section "NFS over RDMA on softrvt"
veth f0 f1
ip addr add "$ADDR/24" dev f0
check "nfs: softrvt device on f0" rdma link add softrvt8 type softrvt netdev f0
check "nfs: port ACTIVE" wait_for 50 state_is softrvt8 ACTIVE
check "nfs: nfsd exports a tmpfs, RDMA listener on 20049" server_up
check "nfs: nfsd listens on rdma 20049" listening_rdma
check "nfs: mount -o proto=rdma,port=20049" client_mount
check "nfs: the mount is over RDMA" mounted_rdma
check "nfs: $mib MiB and three odd-sized files written and read back" \
	round_trip
check "nfs: client and server RC QPs on softrvt8" rdma_qps
check "nfs: umount" timeout 120 umount "$MNT"
server_down
rm -f /tmp/nfs.data
check "nfs: device removed" rdma link delete softrvt8
ip link del f0
check_no_splat nfs "$log0"
