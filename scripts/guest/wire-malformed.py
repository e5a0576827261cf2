#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Send malformed RoCEv2 packets to a softrvt device; each must be dropped
and counted under its cause, and nothing else may change.

usage: wire-malformed.py DEV SRC-IPv4 DST-IPv4
Run in the sender's network namespace; DEV is the receiving device.
Prints TAP lines.
"""

import json
import socket
import struct
import subprocess
import sys
import time
import zlib

dev, src, dst = sys.argv[1:4]
PORT = 4791
tests = 0
failed = 0


def counters():
    out = subprocess.run(["rdma", "-j", "statistic", "show", "link",
                          dev + "/1"], capture_output=True, text=True,
                         check=True).stdout
    data = json.loads(out)[0]
    return {k: v for k, v in data.items() if isinstance(v, int)}


def ip4(payload_len, ident):
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, ident,
                       0x4000, 64, socket.IPPROTO_UDP, 0,
                       socket.inet_aton(src), socket.inet_aton(dst))


def icrc(ip, udp, rest):
    """The RoCEv2 ICRC: CRC-32 over ones for the LRH and the masked headers."""
    mip = bytearray(ip)
    mip[1] = 0xff            # TOS
    mip[8] = 0xff            # TTL
    mip[10:12] = b"\xff\xff"  # header checksum
    mudp = bytearray(udp)
    mudp[6:8] = b"\xff\xff"  # UDP checksum
    mrest = bytearray(rest)
    mrest[4] = 0xff          # FECN, BECN, reserved bits of the BTH
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(mip) +
                                        bytes(mudp) + bytes(mrest)))


def packet(bth_and_rest, good_icrc=True, ident=0x1234):
    ulen = 8 + len(bth_and_rest) + 4
    ip = ip4(ulen, ident)
    udp = struct.pack("!HHHH", 50000, PORT, ulen, 0)
    crc = icrc(ip, udp, bth_and_rest)
    if not good_icrc:
        crc = bytes(b ^ 0x5a for b in crc)
    return ip + udp + bth_and_rest + crc


def bth(opcode, qpn, psn=0, pad=0):
    return struct.pack("!BBHII", opcode, pad << 4, 0xffff, qpn & 0xffffff,
                       psn)


def deth(qkey, sqp):
    return struct.pack("!II", qkey, sqp)


sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)


def expect(name, pkt, counter, n=1):
    global tests, failed
    before = counters()
    sock.sendto(pkt, (dst, 0))
    after = before
    for _ in range(50):
        time.sleep(0.1)
        after = counters()
        if after.get(counter, 0) - before.get(counter, 0) >= n:
            break
    tests += 1
    # A packet checked by its QP's engine was received first.
    delta = {k: after[k] - before.get(k, 0) for k in after
             if after[k] != before.get(k, 0) and
             k not in ("rx_packets", "rx_bytes")}
    ok = delta == {counter: n}
    if not ok:
        failed += 1
    print("%s %d - %s: counted as %s %s" % ("ok" if ok else "not ok", tests,
                                           name, counter, delta))


UD_SEND_ONLY = 0x64
payload = b"x" * 64
expect("UD SEND to a QP number nobody has",
       packet(bth(UD_SEND_ONLY, 0xabcdef) + deth(0x11111111, 5) + payload),
       "drop_no_qp")
expect("bad ICRC",
       packet(bth(UD_SEND_ONLY, 1) + deth(0x80010000, 5) + payload,
              good_icrc=False),
       "drop_bad_icrc")
expect("shorter than a BTH",
       packet(b"\x64\x00\xff\xff\x00\x00"), "drop_bad_hdr")
expect("reserved RC opcode",
       packet(bth(0x1f, 1) + payload), "drop_bad_hdr")
expect("pad count larger than the payload",
       packet(bth(UD_SEND_ONLY, 1, pad=3) + deth(0x80010000, 5)),
       "drop_bad_hdr")
expect("payload on an ACK",
       packet(bth(0x11, 1) + b"\x00" * 4 + payload), "drop_bad_hdr")
expect("RC request to the GSI QP (a UD QP)",
       packet(bth(0x04, 1) + payload), "drop_bad_transport")
expect("UD SEND to the GSI QP with a wrong Q_Key",
       packet(bth(UD_SEND_ONLY, 1) + deth(0x1234, 5) + payload),
       "drop_bad_qkey")

print("1..%d" % tests)
sys.exit(1 if failed else 0)
