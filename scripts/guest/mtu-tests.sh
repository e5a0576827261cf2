# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The MTU under a connection; sourced by wire-tests.sh after wire_setup,
# softrvt1 (ns1, w0) and softrvt2 (ns2, w1) up, ig1 and ig2 their GIDs.
#
# A connected QP keeps the MTU it was given (rvt_qp_mtu()): when the
# netdevs' MTU drops below the port's 1024-byte step while 1 MiB SENDs
# stream, packets of 1024 bytes still fit and must still be taken; and a
# route whose MTU is below the QP's packets drops each of them, counted
# in tx_too_big and said in the kernel log, instead of retrying in
# silence.

# Both ends of the softrvt link to MTU.
mtu_link() { # MTU
	ip -n ns1 link set w0 mtu "$1" && ip -n ns2 link set w1 mtu "$1"
}

# 1 MiB SENDs both ways; once 2000 packets have arrived at softrvt1, the
# MTU drops to 1100 bytes: the port's MTU goes to 512 while the QPs'
# 1068-byte packets still fit the netdevs.  The stream must go on to the
# end, every message whole (rc_pingpong -c checks each one's bytes), and
# the drop must have happened while it ran.
mtu_drop_under_stream() {
	local name="mtu: 1 MiB SENDs go on when the netdev's MTU drops under them"
	local rx0 log spid crc src changed=0 ran=0 i

	wire_log mtu-drop
	log=$REPLY
	rx0=$(link_stat ns1 softrvt1 rx_packets)
	(ns_spawn ns1 timeout 300 ibv_rc_pingpong -d softrvt1 -g "$ig1" \
		-s 1048576 -n 200 -c) > "$log.server" 2>&1 &
	spid=$!
	if ! wait_for 300 tcp_listening 18515 "$spid"; then
		kill "$spid" 2>/dev/null
		fail "$name (server did not listen)"
		return
	fi
	(ns_spawn ns2 timeout 300 ibv_rc_pingpong -d softrvt2 -g "$ig2" \
		-s 1048576 -n 200 -c 198.18.12.1) > "$log.client" 2>&1 &
	local cpid=$!
	for ((i = 0; i < 3000; i++)); do
		pid_running "$cpid" || break
		if [ $(($(link_stat ns1 softrvt1 rx_packets) - rx0)) -ge 2000 ]; then
			mtu_link 1100 && changed=1
			pid_running "$cpid" && ran=1
			break
		fi
		sleep 0.1
	done
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	mtu_link 1500
	echo "# mtu drop: changed=$changed while running=$ran client=$crc server=$src"
	if [ "$changed" = 1 ] && [ "$ran" = 1 ] && [ "$crc" = 0 ] &&
		[ "$src" = 0 ]; then
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
	n0=$(link_stat ns2 softrvt2 tx_too_big)
	(ns_spawn ns1 timeout 120 ibv_rc_pingpong -d softrvt1 -g "$ig1" \
		-s 4096 -n 5) > "$log.server" 2>&1 &
	spid=$!
	if ! wait_for 300 tcp_listening 18515 "$spid"; then
		kill "$spid" 2>/dev/null
		fail "$name (server did not listen)"
		ip -n ns2 route del 198.18.12.1/32 dev w1
		return
	fi
	ns_exec ns2 timeout 120 ibv_rc_pingpong -d softrvt2 -g "$ig2" \
		-s 4096 -n 5 198.18.12.1 > "$log.client" 2>&1
	crc=$?
	kill "$spid" 2>/dev/null
	wait "$spid"
	n1=$(link_stat ns2 softrvt2 tx_too_big)
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
