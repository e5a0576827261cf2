# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What the guest's Python tests share: a device's counters, and RoCEv2
packets over IPv4 built byte by byte, with their ICRC, for a raw socket.
Imported from this folder by wire-malformed.py, wire-rx-flood.py and
wire-av-sqd.py."""

import json
import socket
import struct
import subprocess
import zlib

PORT = 4791


def counters(dev):
    """DEV's counters, as `rdma statistic` shows them: name -> value."""
    out = subprocess.run(["rdma", "-j", "statistic", "show", "link",
                          dev + "/1"], capture_output=True, text=True,
                         check=True).stdout
    data = json.loads(out)[0]
    return {k: v for k, v in data.items() if isinstance(v, int)}


def delta(before, after):
    """The counters that changed between two readings, by how much."""
    return {k: after[k] - before.get(k, 0) for k in after
            if after[k] != before.get(k, 0)}


def bth(opcode, qpn, psn=0, pad=0, pkey=0xffff):
    return struct.pack("!BBHII", opcode, pad << 4, pkey, qpn & 0xffffff,
                       psn)


def deth(qkey, sqp):
    return struct.pack("!II", qkey, sqp)


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


def packet(src, dst, rest, good_icrc=True, ident=0x1234):
    """An IPv4 packet from SRC to DST of REST (the BTH on), with UDP and
    IP headers and the ICRC, or a wrong one."""
    ulen = 8 + len(rest) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, ident, 0x4000, 64,
                     socket.IPPROTO_UDP, 0, socket.inet_aton(src),
                     socket.inet_aton(dst))
    udp = struct.pack("!HHHH", 50000, PORT, ulen, 0)
    crc = icrc(ip, udp, rest)
    if not good_icrc:
        crc = bytes(b ^ 0x5a for b in crc)
    return ip + udp + rest + crc
