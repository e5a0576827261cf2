# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Namespaces and devices for the wire tests; sourced after lib.sh.
#
#   ns1 (w0 198.18.12.1, 2001:2:0:12::1, softrvt1) <-veth-> ns2 (w1 198.18.12.2,
#   2001:2:0:12::2, softrvt2): softrvt to softrvt.
#   init (x0 198.18.13.1, 2001:2:0:13::1, rxe0) <-veth-> ns3 (x1 198.18.13.2,
#   2001:2:0:13::2, softrvt3): rxe to softrvt; rxe binds in the initial
#   namespace only.

export RDMAV_DRIVERS=/mnt/softrvt/build/provider/libsoftrvt

# What the clients print once they ran to the end: the pingpongs, and the
# rows of perftest's bandwidth and latency tools (their figures may be
# 0.00 where perftest cannot calibrate its clock, as under TCG).
# shellcheck disable=SC2034 # for the scripts that source this
iters="iters in"
# shellcheck disable=SC2034
bw='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
# shellcheck disable=SC2034
lat='^ *[0-9]+ +[0-9]+ +([0-9.]+|inf) +([0-9.]+|inf) +([0-9.]+|inf)'

# An IPv6 address written out as sysfs shows GIDs, without forking: the
# guest runs under TCG and this is polled.
expand6() {
	local addr=$1 left right i n out=() l=() r=() w
	if [[ $addr == *::* ]]; then
		left=${addr%%::*}
		right=${addr#*::}
	else
		left=$addr
		right=
	fi
	IFS=: read -ra l <<< "$left"
	IFS=: read -ra r <<< "$right"
	n=$((8 - ${#l[@]} - ${#r[@]}))
	for i in "${l[@]}"; do printf -v w %04x "0x$i"; out+=("$w"); done
	for ((i = 0; i < n; i++)); do out+=(0000); done
	for i in "${r[@]}"; do printf -v w %04x "0x$i"; out+=("$w"); done
	local IFS=:
	REPLY="${out[*]}"
}

# The index of a RoCE v2 GID of an address: DEV IPv4|IPv6-address
gid_index() {
	local dev=$1 addr=$2 want f g t
	local d=/sys/class/infiniband/$dev/ports/1
	if [ "${addr#*:}" = "$addr" ]; then
		IFS=. read -r a b c e <<< "$addr"
		printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
			"$a" "$b" "$c" "$e"
	else
		expand6 "$addr"
		want=$REPLY
	fi
	# Shell builtins only: this is polled, and a fork costs under TCG.
	for f in "$d"/gids/*; do
		read -r g < "$f" 2> /dev/null && [ "$g" = "$want" ] || continue
		read -r t < "$d/gid_attrs/types/${f##*/}" 2> /dev/null &&
			[ "$t" = "RoCE v2" ] || continue
		echo "${f##*/}"
		return 0
	done
	return 1
}

has_gid() { gid_index "$1" "$2" > /dev/null; }

# A device of TYPE (default softrvt) on NETDEV in namespace NS.
wire_ns_dev() { # NS NETDEV IBDEV IPv4 IPv6 [TYPE]
	local ns=$1 nd=$2 ib=$3 a4=$4 a6=$5 type=${6:-softrvt}
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "$nd" up
	ip -n "$ns" addr add "$a4/24" dev "$nd"
	ip -n "$ns" addr add "$a6/64" dev "$nd" nodad
	ns_exec "$ns" rdma link add "$ib" type "$type" netdev "$nd" &&
		wait_for 100 has_gid "$ib" "$a4" &&
		wait_for 100 has_gid "$ib" "$a6"
}

# Two namespaces joined by a veth, a device of TYPE (default softrvt) on
# each end, at 198.18.NET.1 and .2 (2001:2:0:NET::1 and ::2).
wire_ns_pair() { # NS1 NETDEV1 IBDEV1 NS2 NETDEV2 IBDEV2 NET [TYPE]
	ip netns add "$1" && ip netns add "$4" &&
		ip link add "$2" netns "$1" type veth peer name "$5" netns "$4" &&
		wire_ns_dev "$1" "$2" "$3" "198.18.$7.1" "2001:2:0:$7::1" "${8:-}" &&
		wire_ns_dev "$4" "$5" "$6" "198.18.$7.2" "2001:2:0:$7::2" "${8:-}"
}

# rxe0 (init, x0) <-> softrvt3 (ns3, x1); rxe binds in the initial
# namespace only.
wire_rxe_pair() {
	modprobe rdma_rxe &&
		ip netns add ns3 &&
		ip link add x0 type veth peer name x1 netns ns3 &&
		ip link set x0 up &&
		ip addr add 198.18.13.1/24 dev x0 &&
		ip addr add 2001:2:0:13::1/64 dev x0 nodad &&
		rdma link add rxe0 type rxe netdev x0 &&
		wait_for 100 has_gid rxe0 198.18.13.1 &&
		wait_for 100 has_gid rxe0 2001:2:0:13::1 &&
		wire_ns_dev ns3 x1 softrvt3 198.18.13.2 2001:2:0:13::2
}

# Every counter of a device's `rdma statistic`, "name value" a line.
dev_counters() { # NS DEV
	ns_exec "$1" rdma statistic show link "$2/1" |
		tr -s ' \n' '\n\n' | sed '/^$/d' | tail -n +3 | paste -d' ' - -
}
# One of them; empty if the device has no such counter.
dev_counter() { # NS DEV NAME
	dev_counters "$1" "$2" | awk -v n="$3" '$1 == n { print $2 }'
}

# Loss, delay and reordering on a netdev, with jumbo frames so that a
# 4 KiB path MTU fits; netem_off undoes both.
netem_on() { # NS NETDEV NETEM-ARGS...
	ns_exec "$1" ip link set "$2" mtu 9000 &&
		ns_exec "$1" tc qdisc add dev "$2" root netem "${@:3}"
}
netem_off() { # NS NETDEV
	ns_exec "$1" tc qdisc del dev "$2" root 2>/dev/null
	ns_exec "$1" ip link set "$2" mtu 1500
}

wire_setup() {
	wire_ns_pair ns1 w0 softrvt1 ns2 w1 softrvt2 12 && wire_rxe_pair
}

wire_devices_gone() {
	local d
	for d in softrvt1 softrvt2 softrvt3 rxe0; do
		[ -e "/sys/class/infiniband/$d" ] && return 1
	done
	return 0
}

wire_teardown() {
	rdma link delete rxe0 2>/dev/null
	ip link del x0 2>/dev/null
	ip netns del ns1 2>/dev/null
	ip netns del ns2 2>/dev/null
	ip netns del ns3 2>/dev/null
	wait_for 100 wire_devices_gone
	modprobe -r rdma_rxe 2>/dev/null
	true
}

# Where the logs of test NAME go: REPLY.server and REPLY.client.
wire_log() { # NAME
	[ -d "$OUT/wire" ] || mkdir -p "$OUT/wire"
	REPLY=$OUT/wire/${1//[^a-zA-Z0-9]/_}
}

# One side's arguments in WIRE_ARGS: "%G" in ARGS becomes GID, "%D"
# becomes DEV.
wire_subst() { # DEV GID ARGS...
	local dev=$1 gid=$2 a
	shift 2
	WIRE_ARGS=()
	for a in "$@"; do
		a=${a//%G/$gid}
		WIRE_ARGS+=("${a//%D/$dev}")
	done
}

# The same, "%G" the index of ADDR's GID on DEV.
wire_args() { # DEV ADDR ARGS...
	local dev=$1 gid
	gid=$(gid_index "$1" "$2")
	shift 2
	wire_subst "$dev" "$gid" "$@"
}

# Start a verbs tool's server in NS, its output in LOG, and wait until it
# listens on the tools' TCP port (18515): its process in WIRE_SPID.  If it
# does not, it is stopped, NAME fails, and this returns 1.
wire_server() { # NAME LOG NS CMD...
	local name=$1 log=$2 ns=$3
	shift 3
	(ns_spawn "$ns" "$@") > "$log" 2>&1 &
	WIRE_SPID=$!
	wait_for 300 tcp_listening 18515 "$WIRE_SPID" && return 0
	kill "$WIRE_SPID" 2>/dev/null
	wait "$WIRE_SPID"
	fail "$name (server did not listen)"
	return 1
}

# A test passes if its server and its client both exited 0 and the
# client's output matches WANT; else show the end of both logs.
wire_judge() { # NAME WANT LOG CLIENT-STATUS SERVER-STATUS
	if [ "$4" = 0 ] && [ "$5" = 0 ] && grep -qE "$2" "$3.client"; then
		pass "$1"
	else
		echo "--- $1: client rc=$4 server rc=$5"
		tail -n 5 "$3.client" "$3.server" 2>/dev/null
		fail "$1"
	fi
}

# Run a server in one namespace and its client in another; both must
# succeed and the client's output must match WANT.
# usage: wire_pair NAME WANT SNS SDEV SADDR CNS CDEV CADDR PROG ARGS...
# "%G" in ARGS becomes the side's GID index, "%D" its device.  The
# programs' own TCP exchange goes to $WIRE_TCP_ADDR if set (their servers
# listen on IPv4 only), else to SADDR.
wire_pair() {
	local name=$1 want=$2 sns=$3 sdev=$4 saddr=$5 cns=$6 cdev=$7
	local caddr=$8 prog=$9 log sargs cargs
	shift 9
	wire_log "$name"
	log=$REPLY
	wire_args "$sdev" "$saddr" "$@"
	sargs=("${WIRE_ARGS[@]}")
	wire_args "$cdev" "$caddr" "$@"
	cargs=("${WIRE_ARGS[@]}")
	wire_server "$name" "$log.server" "$sns" \
		timeout "${WIRE_TIMEOUT:-180}" "$prog" "${sargs[@]}" || return
	ns_exec "$cns" timeout "${WIRE_TIMEOUT:-180}" "$prog" "${cargs[@]}" \
		"${WIRE_TCP_ADDR:-$saddr}" > "$log.client" 2>&1
	local crc=$?
	wait "$WIRE_SPID"
	wire_judge "$name" "$want" "$log" "$crc" "$?"
}

# ibv_xsrq_pingpong: a server and two clients, which share an XRC domain
# on their device (the file /tmp/xrc_domain), so that the server sends to
# each client's XRC SRQ through the TGT QPs of both in turn; each side
# receives on its SRQ, messages of 4 packets at the default 1024-byte
# path MTU.  The three must exit 0 and print "success".
# usage: xsrq_trio NAME LOG SNS CNS SERVER-ADDR SERVER-ARGS... -- CLIENT-ARGS...
xsrq_trio() {
	local name=$1 log=$2 sns=$3 cns=$4 saddr=$5 sargs=() c1 rs r1 r2
	shift 5
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	rm -f /tmp/xrc_domain
	wire_server "$name" "$log.server" "$sns" \
		timeout 180 ibv_xsrq_pingpong "${sargs[@]}" -c 2 || return
	ns_exec "$cns" timeout 180 ibv_xsrq_pingpong "$@" "$saddr" \
		> "$log.client1" 2>&1 &
	c1=$!
	ns_exec "$cns" timeout 180 ibv_xsrq_pingpong "$@" "$saddr" \
		> "$log.client2" 2>&1
	r2=$?
	wait "$c1"
	r1=$?
	wait "$WIRE_SPID"
	rs=$?
	if [ "$rs$r1$r2" = 000 ] && grep -qx success "$log.server" &&
	   grep -qx success "$log.client1" &&
	   grep -qx success "$log.client2"; then
		pass "$name"
	else
		echo "--- $name: server rc=$rs clients rc=$r1 $r2"
		tail -n 5 "$log.server" "$log.client1" "$log.client2"
		fail "$name"
	fi
}

# nsenter rather than `ip netns exec`, which mounts a sysfs each time: too
# slow under TCG to poll with.
ns_exec() { # NS|init CMD...
	local ns=$1
	shift
	if [ "$ns" = init ]; then "$@"; else nsenter --net="/run/netns/$ns" "$@"; fi
}

# ns_exec in place of the shell that calls it: in a background subshell,
# $! is then the command's own process, inside the namespace.
ns_spawn() { # NS|init CMD...
	local ns=$1
	shift
	if [ "$ns" = init ]; then exec "$@"; fi
	exec nsenter --net="/run/netns/$ns" "$@"
}

# A CM program: server first, then the client; both must succeed.
# usage: cm_pair NAME SNS CNS SERVER-CMD -- CLIENT-CMD
cm_pair() {
	local name=$1 sns=$2 cns=$3 log scmd=() ccmd=()
	shift 3
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	wire_log "$name"
	log=$REPLY
	ns_exec "$sns" timeout 120 "${scmd[@]}" > "$log.server" 2>&1 &
	local spid=$!
	sleep 2
	ns_exec "$cns" timeout 120 "${ccmd[@]}" > "$log.client" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		pass "$name"
	else
		echo "--- $name: client rc=$crc server rc=$src"
		tail -n 5 "$log.client" "$log.server"
		fail "$name"
	fi
}

# Every program between one server side and one client side.
# usage: suite LABEL SNS SDEV SADDR CNS CDEV CADDR [SERVER-IPv4]
# With IPv6 GIDs the programs' TCP exchange still uses SERVER-IPv4.
suite() {
	local l=$1 s=("$2" "$3" "$4") c=("$5" "$6" "$7")
	local size sizes WIRE_TCP_ADDR=${8:-}

	sizes="1 4096 65536"
	[ "${1#*ipv6}" != "$1" ] && [ -z "${SOFTRVT_FULL:-}" ] && sizes=4096
	for size in $sizes; do
		wire_pair "$l: rc_pingpong -s $size" "$iters" "${s[@]}" "${c[@]}" \
			ibv_rc_pingpong -d %D -g %G -s $size -n 50 -c
	done
	wire_pair "$l: uc_pingpong -s 4096" "$iters" "${s[@]}" "${c[@]}" \
		ibv_uc_pingpong -d %D -g %G -s 4096 -n 100 -c
	wire_pair "$l: srq_pingpong -s 4096" "$iters" "${s[@]}" "${c[@]}" \
		ibv_srq_pingpong -d %D -g %G -s 4096 -n 100 -c
	wire_pair "$l: ud_pingpong -s 1024" "$iters" "${s[@]}" "${c[@]}" \
		ibv_ud_pingpong -d %D -g %G -s 1024 -n 100 -c
	wire_pair "$l: rc_pingpong -e" "$iters" "${s[@]}" "${c[@]}" \
		ibv_rc_pingpong -d %D -g %G -s 1024 -n 100 -e -c
	[ "${QUICK:-}" ] && return
	if [ "${1#*ipv6}" != "$1" ] && [ -z "${SOFTRVT_FULL:-}" ]; then
		# IPv6 GIDs: the CM tools in make check; perftest in check-full.
		cm_pair "$l: rping -v" "${s[0]}" "${c[0]}" \
			rping -s -a "${s[2]}" -v -C 20 -- \
			rping -c -a "${s[2]}" -v -C 20
		cm_pair "$l: udaddy" "${s[0]}" "${c[0]}" \
			udaddy -b "${s[2]}" -- udaddy -s "${s[2]}"
		return
	fi
	wire_pair "$l: ib_write_bw" "$bw" "${s[@]}" "${c[@]}" \
		ib_write_bw -d %D -x %G -F -s 65536 -n 100
	wire_pair "$l: ib_read_bw" "$bw" "${s[@]}" "${c[@]}" \
		ib_read_bw -d %D -x %G -F -s 65536 -n 100
	wire_pair "$l: ib_send_bw" "$bw" "${s[@]}" "${c[@]}" \
		ib_send_bw -d %D -x %G -F -s 65536 -n 100
	wire_pair "$l: ib_atomic_bw" "$bw" "${s[@]}" "${c[@]}" \
		ib_atomic_bw -d %D -x %G -F -n 100
	wire_pair "$l: ib_send_lat" "$lat" "${s[@]}" "${c[@]}" \
		ib_send_lat -d %D -x %G -F -s 8 -n 100
	cm_pair "$l: rping -v" "${s[0]}" "${c[0]}" \
		rping -s -a "${s[2]}" -v -C 20 -- \
		rping -c -a "${s[2]}" -v -C 20
	cm_pair "$l: ucmatose" "${s[0]}" "${c[0]}" \
		ucmatose -b "${s[2]}" -- ucmatose -s "${s[2]}"
	cm_pair "$l: udaddy" "${s[0]}" "${c[0]}" \
		udaddy -b "${s[2]}" -- udaddy -s "${s[2]}"
}
