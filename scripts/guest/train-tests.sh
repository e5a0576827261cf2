# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Trains: softrvt's UDP GSO transmit, on the wire setup of wire-setup.sh.
# Sourced by wire-tests.sh, after lib.sh and wire-setup.sh.

section "wire: trains of packets in one UDP GSO skb"
# On an IPv6 path whose device takes UDP GSO skbs (a veth), the requester
# and the READ responder hand the stack trains: packets of one message in
# one skb, cut into datagrams as late as the stack can; a veth counts a
# train as one frame.  Each packet's ICRC must hold for the headers the
# segmenter gave it: each side takes every packet the other counted as
# sent (rdma_rxe's rcvd_pkts counts only packets that passed its ICRC
# check), none dropped for its ICRC, every byte arrives as sent.  A
# packet may be resent even on the clean link, when an ACK comes later
# than the timer on a busy machine: a resent packet is sent and taken
# like any other, and the count is shown.  IPv4 packets never go in
# trains.
link_tx() { # NS NETDEV: the frames NETDEV sent
	ns_exec "$1" ip -s link show dev "$2" |
		awk '$1 == "TX:" { getline; print $2; exit }'
}
# The counters of one device: "sent received icrc-drops resent in-place
# paged" (rxe has none of the last four: 0).
dev_counts() { # NS DEV rxe|srvt
	local out
	out=$(dev_counters "$1" "$2")
	if [ "$3" = rxe ]; then
		set -- sent_pkts rcvd_pkts none none none none
	else
		set -- tx_packets rx_packets drop_bad_icrc retransmits \
			tx_in_place rx_paged
	fi
	local c v line=()
	for c in "$@"; do
		v=$(awk -v n="$c" '$1 == n { print $2 }' <<< "$out")
		line+=("${v:-0}")
	done
	echo "${line[@]}"
}
# Whether the frames a softrvt side's netdev sent say trains went (IPv6)
# or did not (IPv4).  usage: train_check LABEL KIND IPV6 FRAMES PACKETS
train_check() {
	[ "$2" = srvt ] || return 0
	echo "# $1: $5 RoCE packets sent in $4 frames"
	if [ "$3" ]; then
		check "$1: the packets went in trains" [ "$(($4 * 2))" -lt "$5" ]
	else
		check "$1: the packets went one by one" [ "$4" -ge "$5" ]
	fi
}
# Each side takes every packet the other sent, none is dropped for its
# ICRC, the data arrives whole (wire_xfer checks every byte).  Nothing
# is asserted of resends: how many there are depends on how busy the
# machine is (ACK timeouts), and softrvt to softrvt a receiver's full
# queue drops packets, counted, that are resent.
# usage: trains LABEL TCP-ADDR SNS SDEV SNETDEV SADDR SKIND CNS CDEV CNETDEV CADDR CKIND
trains() {
	local l=$1 tcp=$2 sns=$3 sdev=$4 snd=$5 sa=$6 sk=$7
	local cns=$8 cdev=$9 cnd=${10} ca=${11} ck=${12}
	local s0 c0 s1 c1 sf0 cf0 ipv6=
	[ "${sa#*:}" != "$sa" ] && ipv6=1
	# shellcheck disable=SC2207 # four numbers
	s0=($(dev_counts "$sns" "$sdev" "$sk"))
	# shellcheck disable=SC2207
	c0=($(dev_counts "$cns" "$cdev" "$ck"))
	sf0=$(link_tx "$sns" "$snd")
	cf0=$(link_tx "$cns" "$cnd")
	WIRE_TCP_ADDR=$tcp wire_pair "$l: $train_mib MiB each by WRITE, SEND and READ, data checked" \
		"wire_xfer: OK" "$sns" "$sdev" "$sa" "$cns" "$cdev" "$ca" \
		tests/wire_xfer -d %D -g %G -s "${train_mib}M" -m 64K -M 4096 -t 170
	# shellcheck disable=SC2207
	s1=($(dev_counts "$sns" "$sdev" "$sk"))
	# shellcheck disable=SC2207
	c1=($(dev_counts "$cns" "$cdev" "$ck"))
	local ssent=$((s1[0] - s0[0])) srcvd=$((s1[1] - s0[1]))
	local csent=$((c1[0] - c0[0])) crcvd=$((c1[1] - c0[1]))
	local resent=$((c1[3] - c0[3] + s1[3] - s0[3]))
	check "$l: the server took each of the client's $csent packets ($srcvd)" \
		[ "$srcvd" = "$csent" ]
	check "$l: the client took each of the server's $ssent packets ($crcvd)" \
		[ "$crcvd" = "$ssent" ]
	check "$l: no ICRC drop" [ "$((c1[2] - c0[2] + s1[2] - s0[2]))" = 0 ]
	echo "# $l: $resent packets resent"
	train_check "$l, server" "$sk" "$ipv6" "$(($(link_tx "$sns" "$snd") - sf0))" "$ssent"
	train_check "$l, client" "$ck" "$ipv6" "$(($(link_tx "$cns" "$cnd") - cf0))" "$csent"
	[ "$ipv6" ] && return
	# One by one, softrvt's RC payload goes from the MR's pages: the
	# client's WRITE and SEND packets, the server's READ responses, 256
	# of 4 KiB a MiB; a softrvt receiver takes them in those pages.
	in_place_check "$l, client" "$ck" $((c1[4] - c0[4])) $((train_mib * 512)) \
		"$sk" $((s1[5] - s0[5]))
	in_place_check "$l, server" "$sk" $((s1[4] - s0[4])) $((train_mib * 256)) \
		"$ck" $((c1[5] - c0[5]))
}
# usage: in_place_check LABEL KIND SENT-IN-PLACE AT-LEAST PEER-KIND PEER-PAGED
in_place_check() {
	[ "$2" = srvt ] || return 0
	check "$1: $3 packets sent from the MR's pages, at least $4" [ "$3" -ge "$4" ]
	[ "$5" = srvt ] || return 0
	check "$1: the peer took them in those pages ($6)" [ "$6" -ge "$4" ]
}
# On the clean link, 2 MiB each (4 MiB with SOFTRVT_FULL=1): 512
# packets of 4 KiB per operation, in trains of up to a 64 KiB message.
train_mib=2
[ "${SOFTRVT_FULL:-}" ] && train_mib=4
for side in "ns1 w0" "ns2 w1" "init x0" "ns3 x1"; do
	set -- $side
	ns_exec "$1" ip link set "$2" mtu 9000
done
trains "trains srvt-srvt ipv6" 198.18.12.1 \
	ns1 softrvt1 w0 2001:2:0:12::1 srvt ns2 softrvt2 w1 2001:2:0:12::2 srvt
trains "trains srvt-srvt ipv4" 198.18.12.1 \
	ns1 softrvt1 w0 198.18.12.1 srvt ns2 softrvt2 w1 198.18.12.2 srvt
trains "trains rxe server, srvt client, ipv6" 198.18.13.1 \
	init rxe0 x0 2001:2:0:13::1 rxe ns3 softrvt3 x1 2001:2:0:13::2 srvt
trains "trains srvt server, rxe client, ipv6" 198.18.13.2 \
	ns3 softrvt3 x1 2001:2:0:13::2 srvt init rxe0 x0 2001:2:0:13::1 rxe
trains "trains rxe server, srvt client, ipv4" 198.18.13.1 \
	init rxe0 x0 198.18.13.1 rxe ns3 softrvt3 x1 198.18.13.2 srvt
# Trains through loss and reordering: netem drops or delays a train whole.
# 4 MiB each: some 200 trains, so that a few of them are lost for sure.
netem_on ns1 w0 delay 1ms loss 5% reorder 10%
netem_on ns2 w1 delay 1ms loss 5% reorder 10%
r0=$(dev_counter ns2 softrvt2 retransmits)
WIRE_TCP_ADDR=198.18.12.1 WIRE_TIMEOUT=600 wire_pair \
	"trains netem ipv6: 4 MiB each by RC WRITE, SEND and READ, data checked" \
	"wire_xfer: OK" ns1 softrvt1 2001:2:0:12::1 ns2 softrvt2 2001:2:0:12::2 \
	tests/wire_xfer -d %D -g %G -s 4M -m 1M -M 4096 -t 500
check "trains netem ipv6: losses were repaired by retransmission" \
	[ "$(dev_counter ns2 softrvt2 retransmits)" -gt "$r0" ]
for side in "ns1 w0" "ns2 w1" "init x0" "ns3 x1"; do
	netem_off $side
done
