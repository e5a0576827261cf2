#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the guest root (Debian 13 minbase with rdma-core and the verbs tools)
# and cache it.  Prints the directory on stdout.  The guest mounts it
# read-only over 9p, so one copy serves every run.
set -euo pipefail

. "$(dirname "$0")/common.sh"

PKGS="rdma-core,ibverbs-utils,ibverbs-providers,perftest,rdmacm-utils"
PKGS+=",python3-pyverbs,iproute2,kmod,procps,python3"
# The kernel ULPs' tools: NVMe over Fabrics, fio to verify, NFS over RDMA.
PKGS+=",nvme-cli,fio,nfs-kernel-server"
# A TCP anchor for the bench, the tracepoints' reader, and a profiler
# for the bench's data paths (perf record -a in the guest).
PKGS+=",iperf3,trace-cmd,linux-perf"
# The programs people run on RDMA (scripts/guest/clients.sh): qperf and
# libfabric's tools; and those clients.rst lists as not yet run: UCX's
# tools, Open MPI with mpi4py, the iSER and SRP initiators' and the LIO
# target's tools, infiniband-diags.
PKGS+=",qperf,libfabric-bin,ucx-utils,openmpi-bin,python3-mpi4py"
PKGS+=",open-iscsi,targetcli-fb,srptools,infiniband-diags"
# The kernel's rdma selftests (scripts/guest/selftests.sh) call ping.
PKGS+=",iputils-ping"
key=$(echo "trixie $PKGS" | sha256sum | cut -c1-16)
root=$CACHE/rootfs-$key

# The guest's PID 1: mount the repository and hand over to the repo's own
# init, so that changing the guest scripts needs no new root.
install_boot() {
	cat > "$root/sbin/softrvt-boot.new" <<'BOOT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=loose softrvt /mnt/softrvt
exec /mnt/softrvt/scripts/guest/init.sh
BOOT
	chmod 755 "$root/sbin/softrvt-boot.new"
	mkdir -p "$root/mnt/softrvt" "$root/mnt/out" "$root/mnt/modroot"
	mv "$root/sbin/softrvt-boot.new" "$root/sbin/softrvt-boot"
}

if [ -f "$root/.softrvt-done" ]; then
	install_boot
	echo "$root"
	exit 0
fi

log "debootstrap trixie into $root (about 4 minutes)"
fresh_dir "$root"
mirror=$(debian_mirror)
apt_proxy_env
debootstrap_private --variant=minbase --include="$PKGS" trixie "$root" "$mirror" >&2
mkdir -p "$root/lib/modules"
install_boot
touch "$root/.softrvt-done"
echo "$root"
