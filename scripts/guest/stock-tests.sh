#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# In a stock guest (scripts/vm.sh -S): a Debian release's own kernel and
# rdma-core, and the packages of `make deb` for its libibverbs ABI
# installed as a user would, from the files, with no network.  DKMS
# builds the module for the running kernel; `rdma link add` loads it; the
# provider claims softrvt's devices by their hca_type whatever their
# names, and no other driver's; the release's own pyverbs tests of the
# device, its objects and one-device traffic pass; the pingpongs (data
# checked) and rping run softrvt to softrvt and with that kernel's
# rdma_rxe both ways; removing the packages leaves nothing of theirs.  Writes "PASS
# name"/"FAIL name" lines to $OUT/results.
set -u

. scripts/guest/lib.sh
. scripts/guest/wire-setup.sh
: > "$OUT/results"
. scripts/guest/stock-lib.sh

none_installed() { # apt's status
	[ "$1" = 0 ] && ! installed softrvt-dkms && ! installed ibverbs-provider-softrvt
}
listed() { # file device...: each device has a line of ibv_devices
	local f=$1 d
	shift
	for d in "$@"; do
		grep -qE "^ +${d}[[:space:]]" "$f" || return 1
	done
}

stock_install

stage "rdma link add loads the module"
# roce0 and softrvt1 on a veth pair in ns1; an rxe device in the
# initial namespace, where rxe binds its port, named so that a provider
# that matched names starting with "softrvt" would claim it.
rxe=softrvt_rxe0
ip netns add ns1
ip link add v0 netns ns1 type veth peer name v1 netns ns1
not_loaded() { ! loaded "$1"; }
check "stock: softrvt not loaded before rdma link add" not_loaded softrvt
wire_ns_dev ns1 v0 roce0 198.18.14.1 2001:2:0:14::1 > "$LOG/link-add" 2>&1
rc=$?
cat "$LOG/link-add"
check "stock: rdma link add roce0 type softrvt netdev v0" test "$rc" = 0
check "stock: rdma link add loaded softrvt" loaded softrvt
check "stock: and ib_uverbs, its soft dependency" loaded ib_uverbs
lsmod | grep -E '^(softrvt|ib_uverbs|ib_core|udp_tunnel|ip6_udp_tunnel) '
check "stock: roce0's hca_type is softrvt" \
	sh -c '[ "$(cat /sys/class/infiniband/roce0/hca_type)" = softrvt ]'
check "stock: rdma link add softrvt1 type softrvt netdev v1" \
	wire_ns_dev ns1 v1 softrvt1 198.18.14.2 2001:2:0:14::2
veth x0 x1
check "stock: rdma link add $rxe type rxe netdev x0" \
	rdma link add "$rxe" type rxe netdev x0
check "stock: $rxe has no hca_type" test ! -e "/sys/class/infiniband/$rxe/hca_type"

stage "the providers that claim each device"
ibv_devices > "$LOG/devices" 2>&1
cat "$LOG/devices"
check "stock: ibv_devices lists roce0, softrvt1 and $rxe" \
	listed "$LOG/devices" roce0 softrvt1 "$rxe"
# With one provider's driver file alone, ibv_devices lists exactly the
# devices that provider claims; the others get libibverbs' warning.
only() { # driver-file-name log
	mkdir -p "/tmp/only-$1"
	cp "/etc/libibverbs.d/$1.driver" "/tmp/only-$1/"
	unshare -m sh -c "mount --bind /tmp/only-$1 /etc/libibverbs.d &&
		IBV_SHOW_WARNINGS=1 ibv_devices" > "$2" 2>&1
	cat "$2"
}
only softrvt "$LOG/only-softrvt"
check "stock: libsoftrvt claims roce0 and softrvt1" \
	listed "$LOG/only-softrvt" roce0 softrvt1
# No line, and libibverbs' warning, for each device; and the provider
# did not match it before libibverbs' own check of the ABI version turned
# it down, which is all that kept a name pattern "softrvt*" off rxe's
# softrvt_rxe0 (rxe's ABI is 2, softrvt's 1).
refused() { # log provider device...
	local f=$1 p=$2 d
	shift 2
	for d in "$@"; do
		! listed "$f" "$d" &&
			grep -q "no userspace device-specific driver found for $d" "$f" &&
			! grep -q "Driver $p does not support the kernel ABI .*/$d\$" "$f" ||
			return 1
	done
}
check "stock: libsoftrvt refuses the rxe device named $rxe" \
	refused "$LOG/only-softrvt" softrvt "$rxe"
only rxe "$LOG/only-rxe"
check "stock: librxe claims $rxe" listed "$LOG/only-rxe" "$rxe"
check "stock: librxe claims neither softrvt device" \
	refused "$LOG/only-rxe" rxe roce0 softrvt1

for d in roce0 softrvt1 "$rxe"; do
	ibv_devinfo -d "$d" > "$LOG/devinfo-$d" 2>&1
	rc=$?
	cat "$LOG/devinfo-$d"
	check "stock: ibv_devinfo -d $d opens it through its provider" \
		sh -c "[ $rc = 0 ] && grep -q 'hca_id:.*$d' '$LOG/devinfo-$d' && grep -q 'state:.*PORT_ACTIVE' '$LOG/devinfo-$d'"
done

stage "ibv_rc_pingpong -c on roce0"
WIRE_TIMEOUT=120 wire_pair "stock: ibv_rc_pingpong -c on roce0, server and client" \
	"100 iters in" ns1 roce0 198.18.14.1 ns1 roce0 198.18.14.1 \
	ibv_rc_pingpong -d %D -g %G -n 100 -c
gid=$(gid_index roce0 198.18.14.1)

stage "rdma-core's pyverbs tests of this release on roce0"
# The modules of the device, its objects and RC/UD traffic on one device
# (Documentation/softrvt/pyverbs.rst), all six in rdma-core 44 to 65, as
# this release's rdma-core has them, through the installed provider.  Each must pass some and fail
# none; what the release or the kernel lacks, it skips by capability.
ip netns exec ns1 env OUT="$LOG" SOFTRVT_PROVIDER=installed \
	scripts/guest/pyverbs-tests.sh -d roce0 -g "$gid" \
	test_device test_pd test_cq test_cqex test_mr test_qp \
	> "$LOG/pyverbs.summary"
while read -r tag module rc secs ran passed skipped failed errors summary; do
	[ "$tag" = PYVERBS ] || continue
	what="stock pyverbs: $module, $passed passed, $skipped skipped of $ran (${secs}s)"
	if [ "$rc" = 0 ] && [ "$passed" -gt 0 ] && [ "$failed" = 0 ] &&
		[ "$errors" = 0 ]; then
		pass "$what"
	else
		fail "$what"
		tail -n 30 "$LOG/pyverbs/$module.log"
	fi
done < "$LOG/pyverbs.summary"
# PYVERBS name rc secs ran ...: six processes that exited 0 and ran tests.
check "stock pyverbs: six modules ran" \
	test "$(awk '$1 == "PYVERBS" && $3 == 0 && $5 > 0' "$LOG/pyverbs.summary" | wc -l)" = 6

rdma link delete "$rxe"
ip link del x0
ip netns del ns1
wait_for 100 no_ibdev roce0 && wait_for 100 no_ibdev softrvt1

stage "softrvt to softrvt, and to this kernel's rdma_rxe both ways"
if wire_setup > "$LOG/wire-setup" 2>&1; then
	pass "stock: softrvt in two namespaces, rdma_rxe in the initial one"
	QUICK=1 suite "stock srvt-srvt" ns1 softrvt1 198.18.12.1 ns2 softrvt2 198.18.12.2
	QUICK=1 suite "stock rxe server, srvt client" init rxe0 198.18.13.1 ns3 softrvt3 198.18.13.2
	QUICK=1 suite "stock srvt server, rxe client" ns3 softrvt3 198.18.13.2 init rxe0 198.18.13.1
	cm_pair "stock srvt-srvt: rping -v" ns1 ns2 \
		rping -s -a 198.18.12.1 -v -C 20 -- rping -c -a 198.18.12.1 -v -C 20
	cm_pair "stock srvt server, rxe client: rping -v" ns3 init \
		rping -s -a 198.18.13.2 -v -C 20 -- rping -c -a 198.18.13.2 -v -C 20
	cm_pair "stock rxe server, srvt client: rping -v" init ns3 \
		rping -s -a 198.18.13.1 -v -C 20 -- rping -c -a 198.18.13.1 -v -C 20
else
	cat "$LOG/wire-setup"
	fail "stock: softrvt in two namespaces, rdma_rxe in the initial one"
fi
wire_teardown

stage "removal"
check "stock: rmmod softrvt once its devices are gone" rmmod softrvt
apt-get remove -y softrvt-dkms ibverbs-provider-softrvt > "$LOG/apt-remove.log" 2>&1
rc=$?
[ "$rc" = 0 ] || tail -n 30 "$LOG/apt-remove.log"
check "stock: apt-get remove removes both packages" none_installed "$rc"
left=$(softrvt_files)
[ -z "$left" ] || echo "left behind: $left"
check "stock: no module, source, provider or driver file left behind" test -z "$left"
check "stock: modprobe no longer finds softrvt" sh -c '! modinfo softrvt > /dev/null 2>&1'
stage "done"
true
