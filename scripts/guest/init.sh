#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The guest's init, run by /sbin/softrvt-boot with /proc, /sys, /dev and
# the repository mounted: finish the setup, run the host's command, then
# collect the kernel's reports and power off.

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

stage() { echo "[init $(cut -d' ' -f1 /proc/uptime)] $*"; }
stage "start"

mount -t devpts devpts /dev/pts 2>/dev/null || { mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }
# What udev would link: bash's process substitution needs /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
mkdir -p /dev/shm
for d in /run /tmp /dev/shm /root /var/tmp; do
	mount -t tmpfs tmpfs "$d"
done
mount -t debugfs debugfs /sys/kernel/debug
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out /mnt/out

# The host's watchdog reads this file's age: while the guest's kernel and
# its scheduler run, it is at most a few seconds old.
(
	while :; do
		cut -d' ' -f1 /proc/uptime > /mnt/out/heartbeat
		sleep 5
	done
) &
stage "mounted"

# The host's KVM probe only asks whether the guest reaches this point.
if [ -f /mnt/out/probe ]; then
	echo 0 > /mnt/out/status
	sync
	echo b > /proc/sysrq-trigger
fi

# A writable /lib/modules holding the test kernel's modules and softrvt's,
# so that modprobe and `rdma link add` autoloading find them.
install_modules() {
	local rel m
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=loose modroot /mnt/modroot
	rel=$(uname -r)
	mount -t tmpfs tmpfs /lib/modules
	cp -a "/mnt/modroot/lib/modules/$rel" /lib/modules/
	mkdir -p "/lib/modules/$rel/extra"
	# Modules the host built for another kernel than the tree's come in OUT.
	if [ -d /mnt/out/modules ]; then
		cp /mnt/out/modules/*.ko "/lib/modules/$rel/extra/"
	else
		for m in /mnt/softrvt/drivers/infiniband/sw/softrvt/softrvt.ko \
			 /mnt/softrvt/kunit/softrvt_kunit.ko; do
			[ -f "$m" ] && cp "$m" "/lib/modules/$rel/extra/"
		done
	fi
	stage "modules copied"
	depmod -a
}

# kmemleak only reports objects unreferenced for 5 s; scan after that.
# The report file appears only if every scan worked: no file fails the run.
scan_kmemleak() {
	[ -w /sys/kernel/debug/kmemleak ] || return 0
	stage "kmemleak scan"
	sleep 6
	echo scan > /sys/kernel/debug/kmemleak &&
		echo scan > /sys/kernel/debug/kmemleak &&
		cat /sys/kernel/debug/kmemleak > /mnt/out/kmemleak.tmp &&
		mv /mnt/out/kmemleak.tmp /mnt/out/kmemleak
}

# vm.sh -l: the harness's own tests need neither.
light=
[ -f /mnt/out/light ] && light=1
[ "$light" ] || install_modules

ip link set lo up
cd /mnt/softrvt || exit 1
stage "running: $(cat /mnt/out/cmd)"

sh -c "$(cat /mnt/out/cmd)"
echo $? > /mnt/out/status.tmp
stage "command done"

[ "$light" ] || scan_kmemleak
stage "collecting the kernel log"
dmesg > /mnt/out/dmesg
mv /mnt/out/status.tmp /mnt/out/status
sync
echo b > /proc/sysrq-trigger
