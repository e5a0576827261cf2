#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Record RoCEv2 packets that rdma_rxe sends, as test vectors.

Run in the guest by scripts/capture-rxe-vectors.sh.  rxe0 sits on veth c0
in the initial namespace; the peer end c1 is in namespace "peer", where
this script answers the pingpong programs' address exchange with a QP that
does not exist and records what rxe then sends to UDP port 4791.  Prints
one line per packet: "<kind> <ipv4|ipv6> <hex from the IP header>".
"""
import socket
import struct
import sys
import threading
import time

ETH_P_ALL = 0x0003


def fake_server(gid_hex, done):
    """Answer one pingpong client with QPN 0x11 at gid_hex."""
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("::", 18515))
    srv.listen(1)
    srv.settimeout(60)
    conn, _ = srv.accept()
    conn.recv(64)
    msg = "0000:000011:000001:%s" % gid_hex
    conn.sendall(msg.encode() + b"\0")
    try:
        conn.recv(16)
    except OSError:
        pass
    conn.close()
    srv.close()
    done.set()


def capture(ifname, want, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.settimeout(1)
    deadline = time.time() + 30
    while time.time() < deadline and len(out) < want:
        try:
            frame = s.recv(4096)
        except socket.timeout:
            continue
        ethertype = struct.unpack("!H", frame[12:14])[0]
        l3 = frame[14:]
        if ethertype == 0x0800 and l3[9] == 17:
            ihl = (l3[0] & 15) * 4
            dport = struct.unpack("!H", l3[ihl + 2:ihl + 4])[0]
            total = struct.unpack("!H", l3[2:4])[0]
            if dport == 4791:
                out.append(("ipv4", l3[:total]))
        elif ethertype == 0x86DD and l3[6] == 17:
            dport = struct.unpack("!H", l3[42:44])[0]
            plen = struct.unpack("!H", l3[4:6])[0]
            if dport == 4791:
                out.append(("ipv6", l3[:40 + plen]))
    s.close()


def main():
    """usage: capture-rxe.py KIND PEER_GID_HEX, in the peer namespace."""
    kind, gid_hex = sys.argv[1:3]
    pkts = []
    done = threading.Event()
    t = threading.Thread(target=fake_server, args=(gid_hex, done))
    t.start()
    capture("c1", 2, pkts)
    t.join()
    for fam, p in pkts:
        print(kind, fam, p.hex())


if __name__ == "__main__":
    main()
