# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The programs people run on RDMA, between the two guests of the pair:
# qperf, libfabric's fi_pingpong, UCX's ucx_perftest, Open MPI over UCX,
# rsockets and librdmacm's examples.  Sourced by pair-tests.sh after pair-lib.sh; both
# guests call the same functions in the same order, each its side.
#
# Every program also leaves a row in $OUT/clients (the client's guest):
# "PAIRING<TAB>PROGRAM<TAB>PASS|FAIL<TAB>FIGURE", from which
# scripts/clients-table.py writes the table of
# Documentation/softrvt/clients.rst.  The figures are what each tool
# prints under TCG, for the table only: nothing is judged by them.

CLIENTS_PAIRING=""

# What the servers of these programs listen on before their clients may
# start (pair_run's READY): fi_pingpong's control port, or any RDMA CM
# id in LISTEN (rsockets' programs, whose command is env).
pair_ready_fabric() { tcp_listening 47592; }
pair_ready_cmany() { rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN'; }
pair_ready_ucx() { tcp_listening 13337; }
pair_ready_mpi() { tcp_listening 7491; }
# mckey's receiver has joined 239.18.50.1 once its QP is attached: the
# device then has eth0 take the group's MAC (both drivers do).
pair_ready_mcast() { ip maddr show dev eth0 | grep -q '01:00:5e:12:32:01'; }

# The row of test NAME, the client's: the result just recorded for it
# and the figure FIGURE-FN finds in the client's log.
clients_row() { # NAME FIGURE-FN
	local res fig=""
	[ -n "$CLIENTS_PAIRING" ] || return 0
	res=$(tail -n 1 "$OUT/results")
	wire_log "$1"
	[ -f "$REPLY.client" ] && fig=$("$2" "$REPLY.client")
	printf '%s\t%s\t%s\t%s\n' "$CLIENTS_PAIRING" "${1#*: }" "${res%% *}" \
		"$fig" >> "$OUT/clients"
}

# pair_run NAME, and the row of it in the client's guest.
# usage: clients_prog NAME FIGURE-FN WANT SERVER-ROLE READY SERVER-CMD... -- CLIENT-CMD...
clients_prog() {
	local name=$1 figfn=$2 srole=$4
	shift 2
	pair_run "$name" "$@"
	[ "$srole" = "$PAIR_ROLE" ] || clients_row "$name" "$figfn"
}

# The side of a server that serves a run of clients: start CMD, its
# output in LOG, and tell the other guest at "STEP: ready" whether it
# listens on TCP PORT; stop it once the other says "STEP: done".
clients_serve() { # STEP PORT LOG CMD...
	local step=$1 port=$2 log=$3 pid rc
	shift 3
	"$@" > "$log" 2>&1 &
	pid=$!
	wait_for 300 tcp_listening "$port"
	rc=$?
	pair_sync "$step: ready" "$rc"
	[ "$rc" = 0 ] && pair_sync "$step: done" - 900
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
# The clients' side: whether the server of STEP listens.  If it does,
# the clients' side ends with pair_sync "STEP: done".
clients_served() { # STEP
	pair_sync "$1: ready" && [ "$REPLY" = 0 ]
}

# Figures from the clients' logs.
fig_none() { :; }
fig_refused() { echo "refused: qperf gives UD and UC no GRH"; }
fig_qperf() { sed -n 's/^ *\(bw\|latency\|msg_rate\) *= *\(.*[^ ]\) *$/\1 \2/p' "$1" | head -n 1; }
fig_fabric() { awk '$3 ~ /^=/ { r = $6 " MB/s, " $7 " us/xfer" } END { print r }' "$1"; }
fig_cmtime() { awk '/^full connect/ { print "10 connections in " $4 " us" }' "$1"; }
fig_ucx() { awk '/^Final:/ { print $4 " us average latency" }' "$1"; }
fig_ucx_bw() { awk '/^Final:/ { print $6 " MB/s average" }' "$1"; }
fig_mpi() { sed -n 's/^# point-to-point of \([0-9]*\) bytes: \(.*\)$/\1 B point-to-point: \2/p' "$1"; }
fig_rstream() { awk 'h { r = $7 " Gb/s, " $8 " us/xfer"; h = 0 } /^name/ { h = 1 } END { print r }' "$1"; }

# qperf: its server serves every test of the run, then is stopped.
# qperf reaches a RoCE device only through the RDMA CM (-cm1): its
# other path gives LIDs without a GRH, which no RoCE device takes, and
# its UD and UC tests have only that path (they fail on rdma_rxe and on
# RoCE NICs alike): QPERF_IB_TESTS names those to show refused, as rxe
# refuses them.
clients_qperf() { # SROLE TEST...
	local s=$1 t name log rc
	shift
	if [ "$s" = "$PAIR_ROLE" ]; then
		wire_log "$CLIENTS_PAIRING qperf server"
		clients_serve qperf 19765 "$REPLY.server" qperf
		return
	fi
	if ! clients_served qperf; then
		fail "$CLIENTS_PAIRING: qperf (the server did not listen)"
		return
	fi
	for t in "$@"; do
		name="$CLIENTS_PAIRING: qperf -cm1 $t"
		wire_log "$name"
		log=$REPLY
		timeout 120 qperf -cm1 -vvs -t "${QPERF_SECONDS:-2}" "$PAIR_PEER" \
			"$t" > "$log.client" 2>&1
		wire_judge "$name" '^ *(bw|latency|msg_rate) *= *[0-9.,]+ ' \
			"$log" $? 0
		clients_row "$name" fig_qperf
	done
	# Without -cm1: the address qperf builds has no GRH.  The device
	# must refuse it (EINVAL), not send it.
	for t in ${QPERF_IB_TESTS:-}; do
		name="$CLIENTS_PAIRING: qperf $t (LIDs, no GRH)"
		wire_log "$name"
		log=$REPLY
		timeout 120 qperf -t 1 "$PAIR_PEER" "$t" > "$log.client" 2>&1
		rc=$?
		check "$name: refused with EINVAL, as RoCE devices do" \
			refused_einval "$rc" "$log.client"
		clients_row "$name" fig_refused
	done
	pair_sync "qperf: done"
}

refused_einval() { [ "$1" != 0 ] && grep -q "Invalid argument" "$2"; }

# fi_pingpong over the verbs provider's endpoint TYPE (msg, rdm through
# ofi_rxm, dgram) at each SIZE, its data checked (-c).  ofi_rxm opens
# one CQ of (128 + 128) * FI_UNIVERSE_SIZE (256) entries, more than
# rdma_rxe takes (32768): with rxe at either end, CLIENTS_FI_UNIVERSE
# sets a smaller universe, a setting a user of rxe needs as well.
clients_fabric() { # SROLE TYPE SIZE...
	local s=$1 type=$2 size prov=verbs dom=%D cmd
	shift 2
	case $type in
	rdm) prov="verbs;ofi_rxm" ;;
	dgram) dom=%D-dgram ;;
	esac
	cmd=(env FI_UNIVERSE_SIZE="${CLIENTS_FI_UNIVERSE:-256}" fi_pingpong
		-p "$prov" -e "$type" -d "$dom" -I 20 -c)
	for size in "$@"; do
		clients_prog "$CLIENTS_PAIRING: fi_pingpong $type $size -c" \
			fig_fabric '^ *[0-9.]+[kmg]? +[0-9]+ +=[0-9]+ ' "$s" fabric \
			"${cmd[@]}" -S "$size" -- "${cmd[@]}" -S "$size" %S
	done
}

# rsockets: rstream and riostream, and a plain TCP program under the
# preload library, its data checked.
clients_rsockets() { # SROLE
	local s=$1 pre=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
	clients_prog "$CLIENTS_PAIRING: rstream 64 KiB" fig_rstream \
		'^custom ' "$s" cmany rstream -b %S -S 65536 -C 50 \
		-- rstream -s %S -S 65536 -C 50
	clients_prog "$CLIENTS_PAIRING: riostream 64 KiB" fig_rstream \
		'^custom ' "$s" cmany riostream -b %S -S 65536 -C 50 \
		-- riostream -s %S -S 65536 -C 50
	clients_prog "$CLIENTS_PAIRING: TCP program on rsockets, 4 MiB checked" \
		fig_none 'tcp_check: OK' "$s" cmany \
		env LD_PRELOAD="$pre" tests/tcp_check server %S 7490 \
		-- env LD_PRELOAD="$pre" tests/tcp_check client %S 7490 \
		$((4 << 20))
}

# librdmacm's examples, each with its server bound to the server's
# address; cmtime's own TCP exchange on a port of its own (its default
# is the pair's meeting point's).
clients_rdmacm() { # SROLE
	local s=$1
	clients_prog "$CLIENTS_PAIRING: rdma_server/rdma_client" fig_none \
		'rdma_client: end 0' "$s" cmany rdma_server -s %S \
		-- rdma_client -s %S
	clients_prog "$CLIENTS_PAIRING: rdma_xserver/rdma_xclient (XRC)" \
		fig_none 'rdma_xclient: end 0' "$s" cmany rdma_xserver -c x \
		-- rdma_xclient -s %S -c x
	clients_prog "$CLIENTS_PAIRING: ucmatose" fig_none 'test complete' \
		"$s" cmany ucmatose -b %S -- ucmatose -s %S
	clients_prog "$CLIENTS_PAIRING: udaddy" fig_none 'test complete' \
		"$s" cmany udaddy -b %S -- udaddy -s %S
	clients_prog "$CLIENTS_PAIRING: cmtime -c 10" fig_cmtime '^full connect +[0-9]+' \
		"$s" cmany cmtime -b %S -p 7480 -c 10 -- cmtime -s %S -p 7480 -c 10
	clients_mckey "$s"
}

# UCX: ucx_perftest's tag-matching latency over UD alone and over RC with
# UD for its wireup (the slice: RC only), through UCP.  UCX's UD drops
# every packet whose destination GID is not the device's, and it takes
# the packet type (IPv4 or IPv6) from the completion's sl, where mlx5
# reports it (UCX PR 6317): on rdma_rxe and softrvt alike it reads an
# IPv4 packet's GRH area as IPv6 and drops everything
# ("UD endpoint ... unhandled timeout error"), unless
# UCX_UD_ETH_DGID_CHECK=n (UCX PR 10209 reads the GRH instead for devices
# other than mlx5).  Debian's ucx_perftest is built with MPI: -P 0.
# check-full adds the bandwidths: UCP's tag_bw over each, and UCT's
# put_bw, get_bw (zero-copy) and am_bw (buffered) over rc_verbs and
# am_bw over ud_verbs (UD has no RDMA); a UCT test's server names its
# transport and device as well.
clients_ucx() { # SROLE SET
	local s=$1 tls=(ud_verbs "rc_verbs,ud_verbs") t cmd uct test tl size layout
	[ "$2" = slice ] && [ -z "${SOFTRVT_FULL:-}" ] && tls=("rc_verbs,ud_verbs")
	for t in "${tls[@]}"; do
		cmd=(env UCX_TLS="$t" UCX_NET_DEVICES=%D:1 UCX_IB_GID_INDEX=%G
			UCX_UD_ETH_DGID_CHECK=n ucx_perftest -P 0 -p 13337)
		clients_prog "$CLIENTS_PAIRING: ucx_perftest tag_lat $t" fig_ucx \
			'^Final: +100 ' "$s" ucx "${cmd[@]}" \
			-- "${cmd[@]}" -t tag_lat -n 100 -s 8 %S
		[ -n "${SOFTRVT_FULL:-}" ] || continue
		clients_prog "$CLIENTS_PAIRING: ucx_perftest tag_bw 64 KiB $t" \
			fig_ucx_bw '^Final: +50 ' "$s" ucx "${cmd[@]}" \
			-- "${cmd[@]}" -t tag_bw -n 50 -s 65536 %S
	done
	[ -n "${SOFTRVT_FULL:-}" ] || return 0
	for t in "put_bw rc_verbs 65536 zcopy" "get_bw rc_verbs 65536 zcopy" \
		"am_bw rc_verbs 4096 bcopy" "am_bw ud_verbs 1024 bcopy"; do
		read -r test tl size layout <<< "$t"
		uct=(env UCX_IB_GID_INDEX=%G UCX_UD_ETH_DGID_CHECK=n
			ucx_perftest -P 0 -p 13337 -x "$tl" -d %D:1)
		clients_prog "$CLIENTS_PAIRING: ucx_perftest $test $size B $layout $tl (UCT)" \
			fig_ucx_bw '^Final: +50 ' "$s" ucx "${uct[@]}" \
			-- "${uct[@]}" -t "$test" -D "$layout" -n 50 -s "$size" %S
	done
}

# mckey: UD multicast through the RDMA CM, the server the receiver.  The
# group 239.18.50.1 is administratively scoped and its frames go only
# over the pair's link.  mckey's sender posts its messages unsignalled
# and destroys its QP right after posting them ("we don't want to handle
# reliability issue in this simple test program"): on a software device,
# whose engine sends after ibv_post_send() returns, how many leave
# before the QP goes is a matter of timing (softrvt sent 12 of 50,
# rdma_rxe 2 of 5, seen).  So the receiver waits for one message and
# exits 0 once it has it; the sender sends 50, three times.
clients_mckey() { # SROLE
	local args=(-m 239.18.50.1 -b %A -S 1024)
	clients_prog "$CLIENTS_PAIRING: mckey, 1 KiB messages to a group" fig_none \
		'test complete' "$1" mcast mckey "${args[@]}" -C 1 \
		-- sh -c 'for i in 1 2 3; do mckey "$@" -s -C 50 || exit; done' \
		mckey "${args[@]}"
}

# Open MPI 5 over UCX: mpirun in the client's guest launches its daemon in
# the server's through scripts/guest/mpi-rsh.py (the guests have no ssh;
# the server is mpi-rsh.py serving that one launch).  Each guest has a
# name of its own (pair-a, pair-b) and slots for two ranks.  The ranks
# talk through UCX's verbs transports only: the pml is UCX, the btl only
# "self", and UCX_TLS leaves out TCP and shared memory, so that two ranks
# on one host go through the device too.  Every process takes its
# device and GID index from its own guest (the daemon from mpi-rsh.py's
# environment), as the two sides may differ.  scripts/guest/mpi-check.py
# checks every byte of point-to-point, Allreduce, Alltoall and Bcast.
mpi_hosts() {
	hostname "pair-$PAIR_ROLE" &&
		printf '127.0.0.1\tlocalhost\n%s\tpair-a\n%s\tpair-b\n' \
			198.18.50.1 198.18.50.2 > /run/pair-hosts &&
		mount --bind /run/pair-hosts /etc/hosts &&
		printf 'pair-a slots=2\npair-b slots=2\n' > /run/mpi-hosts &&
		MPI_HOSTFILE=/run/mpi-hosts
}

clients_mpi() { # SROLE RANKS MAX-BYTES
	local s=$1 np=$2 max=$3 env run
	[ -n "${MPI_HOSTFILE:-}" ] ||
		check "MPI: guest $PAIR_ROLE named pair-$PAIR_ROLE, both in /etc/hosts" mpi_hosts
	env=(env "UCX_TLS=rc_verbs,ud_verbs,self" UCX_NET_DEVICES=%D:1
		UCX_IB_GID_INDEX=%G UCX_UD_ETH_DGID_CHECK=n
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
	run=(mpirun --hostfile "${MPI_HOSTFILE:-none}" -np "$np" --map-by node
		--prtemca plm_ssh_agent "$PWD/scripts/guest/mpi-rsh.py"
		--prtemca oob_tcp_if_include 198.18.50.0/24
		--mca pml ucx --mca btl self scripts/guest/mpi-check.py "$max")
	PAIR_RUN_TIMEOUT=400 clients_prog \
		"$CLIENTS_PAIRING: Open MPI over UCX, $np ranks, up to $max B, checked" \
		fig_mpi '^ok [0-9]+ - Bcast' "$s" mpi \
		"${env[@]}" scripts/guest/mpi-rsh.py serve %S 7491 \
		-- "${env[@]}" MPI_RSH_PORT=7491 "${run[@]}"
}
