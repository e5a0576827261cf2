#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build a stock guest and cache it: a Debian release with its own kernel
# (linux-image-amd64 and its initramfs) and what a user installs to build
# softrvt with DKMS, as an ext4 image.  Prints the directory holding
# root.img, vmlinuz and initrd.img on stdout.  scripts/vm.sh -S boots the
# image with -snapshot, so no run changes it.
#
# usage: build-stock-root.sh [TARGET]   (default: $SOFTRVT_STOCK or trixie)
# TARGET: bookworm (Debian 12: Linux 6.1, rdma-core 44), trixie (Debian
# 13: 6.12, 56.1), trixie-bpo (Debian 13 with trixie-backports' kernel:
# 7.3, 56.1), sid (7.2, rdma-core 65).
set -euo pipefail

. "$(dirname "$0")/common.sh"

target=${1:-${SOFTRVT_STOCK:-trixie}}
PKGS="dkms,gcc,make,libc6-dev"
PKGS+=",rdma-core,ibverbs-utils,ibverbs-providers,rdmacm-utils,iproute2,kmod,procps"
# The release's own pyverbs tests, for the modules softrvt runs.
PKGS+=",python3-pyverbs"
KERNEL="linux-image-amd64,linux-headers-amd64"
case $target in
bookworm | trixie | sid)
	suite=$target
	PKGS+=",$KERNEL"
	later=""
	;;
trixie-bpo)
	# The backports kernel goes in once the root has apt's sources.
	suite=trixie
	later="-t trixie-backports ${KERNEL//,/ }"
	;;
*)
	log "unknown stock target $target"
	exit 1
	;;
esac
key=$(echo "$target stock $PKGS $later" | sha256sum | cut -c1-16)
dir=$CACHE/stock-$key

# check.sh builds it in the background while a guest may want it.
exec 7> "$CACHE/stock-root-$target.lock"
flock 7

if [ -f "$dir/.softrvt-done" ]; then
	echo "$dir"
	exit 0
fi

log "debootstrap $target with its kernel into $dir (about 6 minutes)"
fresh_dir "$dir"
root=$dir/root
mirror=$(debian_mirror)
apt_proxy_env
debootstrap_private --variant=minbase --include="$PKGS" "$suite" "$root" "$mirror" >&2
if [ -n "$later" ]; then
	echo "deb $mirror trixie-backports main" \
		> "$root/etc/apt/sources.list.d/backports.list"
	# shellcheck disable=SC2086
	chroot "$root" sh -c "apt-get update -q &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $later" >&2
fi

# PID 1 in the image only mounts what the stock kernel needs modules for
# and hands over to the repository's init, so that changing the guest
# scripts needs no new image.
cat > "$root/sbin/softrvt-boot" <<'BOOT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
modprobe -a 9pnet_virtio 9p
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro softrvt /mnt/softrvt
exec /mnt/softrvt/scripts/guest/init.sh
BOOT
chmod 755 "$root/sbin/softrvt-boot"
mkdir -p "$root/mnt/softrvt" "$root/mnt/out"

cp "$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)" "$dir/vmlinuz"
cp "$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)" "$dir/initrd.img"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

# Room for dpkg and the DKMS build; the writes of a run go to QEMU's
# snapshot, never to the image.
size=$(($(du -sm "$root" | cut -f1) + 1024))
mkfs.ext4 -q -F -L softrvt-stock -d "$root" "$dir/root.img.new" "${size}M" >&2
mv "$dir/root.img.new" "$dir/root.img"
rm -rf "$root"
touch "$dir/.softrvt-done"
echo "$dir"
