# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The MTU under a connection; sourced by wire-tests.sh after wire_setup,
# softrvt1 (ns1, w0) and softrvt2 (ns2, w1) up, ig1 and ig2 their GIDs.
#
# A connected QP keeps the MTU it was given (softrvt_qp_mtu()): when the
# netdevs' MTU drops below the port's 2048-byte step while 1 MiB SENDs
# stream, packets of 2048 bytes still fit and must still be taken; and a
# route whose MTU is below the QP's packets drops each of them, counted
# in tx_too_big and said in the kernel log, instead of retrying in
# silence.

# Both ends of the softrvt link to MTU.
mtu_link() { # MTU
	ip -n ns1 link set w0 mtu "$1" && ip -n ns2 link set w1 mtu "$1"
}

# The bytes softrvt1's QPs hold in received packets (debugfs rx_queued).
mtu_queued() {
	awk '$1 == "softrvt1" { print $2 }' /sys/kernel/debug/softrvt/rx_queued
}
mtu_held() { [ "$(mtu_queued)" -gt 0 ]; }

# 1 MiB SENDs both ways at a path MTU of 2048, on netdevs of 9000 bytes,
# with softrvt1's engines held (debugfs rx_hold): once its first packets
# wait in its queue, both netdevs drop to 2100 bytes (the port's MTU goes
# to 1024; the QPs' 2092-byte packets still fit), and the engines go on.
# Never below 1280 bytes: IPv6 would leave the netdevs, and the GIDs of
# their addresses with it.  The packets held and the messages after
# them must be taken, to the end of the stream, every message whole
# (rc_pingpong -c checks each one's bytes).  The hold, not the
# scheduler, puts the change in the middle of the stream.
mtu_drop_under_stream() {
	local name="mtu: 1 MiB SENDs go on when the netdev's MTU drops under them"
	local log spid cpid crc src held=0 hold=/sys/kernel/debug/softrvt/rx_hold

	wire_log mtu-drop
	log=$REPLY
	mtu_link 9000
	if ! wire_server "$name" "$log.server" ns1 timeout 300 \
		ibv_rc_pingpong -d softrvt1 -g "$ig1" -m 2048 -s 1048576 -n 8 -c; then
		mtu_link 1500
		return
	fi
	spid=$WIRE_SPID
	echo "softrvt1 1" > "$hold"
	(ns_spawn ns2 timeout 300 ibv_rc_pingpong -d softrvt2 -g "$ig2" \
		-m 2048 -s 1048576 -n 8 -c 198.18.12.1) > "$log.client" 2>&1 &
	cpid=$!
	wait_for 1200 mtu_held && held=1
	mtu_link 2100
	echo "softrvt1 0" > "$hold"
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	mtu_link 1500
	echo "# mtu drop: packets held at the change=$held client=$crc server=$src"
	if [ "$held" = 1 ] && [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		pass "$name"
	else
		tail -n 5 "$log.client" "$log.server"
		fail "$name"
	fi
}

# A route from ns2 to softrvt1 with an MTU of 1000: softrvt2's 4 KiB SEND
# goes as 1024-byte packets, none of which fits.  The client's SEND must
# fail (retries exhausted), each packet be counted in tx_too_big, and the
# kernel log say why.
mtu_route_too_small() {
	local name="mtu: packets longer than the route's MTU"
	local log spid crc n0 n1

	wire_log mtu-route
	log=$REPLY
	ip -n ns2 route add 198.18.12.1/32 dev w1 mtu 1000
	n0=$(dev_counter ns2 softrvt2 tx_too_big)
	if ! wire_server "$name" "$log.server" ns1 timeout 120 \
		ibv_rc_pingpong -d softrvt1 -g "$ig1" -s 4096 -n 5; then
		ip -n ns2 route del 198.18.12.1/32 dev w1
		return
	fi
	spid=$WIRE_SPID
	ns_exec ns2 timeout 120 ibv_rc_pingpong -d softrvt2 -g "$ig2" \
		-s 4096 -n 5 198.18.12.1 > "$log.client" 2>&1
	crc=$?
	kill "$spid" 2>/dev/null
	wait "$spid"
	n1=$(dev_counter ns2 softrvt2 tx_too_big)
	ip -n ns2 route del 198.18.12.1/32 dev w1
	echo "# mtu route: client=$crc tx_too_big $n0 -> $n1"
	check "$name: the SEND fails (retries exhausted)" \
		grep -q "retry counter exceeded" "$log.client"
	check "$name: each is counted in tx_too_big" [ "$((n1 - n0))" -ge 8 ]
	check "$name: the kernel log says why" \
		sh -c "dmesg | grep -q \"exceeds the route's MTU of 1000\""
}

mtu_drop_under_stream
mtu_route_too_small
mtu_gids_kept() {
	has_gid softrvt1 2001:2:0:12::1 && has_gid softrvt2 2001:2:0:12::2 &&
		has_gid softrvt1 198.18.12.1
}
check "mtu: the netdevs keep their addresses' GIDs" mtu_gids_kept
