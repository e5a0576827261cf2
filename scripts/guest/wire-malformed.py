#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Send malformed RoCEv2 packets to a softrvt device; each must be dropped
and counted under its cause, and nothing else may change.  Then feed an
RC responder QP (made here with pyverbs) requests that break the rules of
a message: each must be NAKed as an invalid request and the QP must fail,
while well-formed, duplicate and early requests are handled as such.

Packets that are well formed but not the connection's (another source
address, another P_Key, a QP whose peer is on its own device) must be
dropped before they act on the QP.

usage: wire-malformed.py DEV SRC-IPv4 DST-IPv4 SGID-INDEX DEV-NS DEV-NETDEV
                         NETDEV
Run in the sender's network namespace; DEV is the receiving device, in
namespace DEV-NS on DEV-NETDEV, and SGID-INDEX the index of DST's GID on
it; NETDEV is the sender's end of the link.  Prints TAP lines.
"""

import socket
import struct
import subprocess
import sys
import time

import roce
from roce import bth, deth

dev, src, dst = sys.argv[1:4]
sgid_index = int(sys.argv[4])
dev_ns, dev_netdev, netdev = sys.argv[5:8]
tests = 0
failed = 0


def counters():
    return roce.counters(dev)


FORGED_SRC = "198.18.12.99"  # on the link, but nobody's peer


def packet(bth_and_rest, good_icrc=True, ident=0x1234, saddr=None):
    return roce.packet(saddr or src, dst, bth_and_rest, good_icrc, ident)


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
             k not in ("rx_packets", "rx_bytes", "rx_paged")}
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
# The multicast QPN takes UD packets to a multicast address only.
expect("UD SEND to the multicast QPN at a unicast address",
       packet(bth(UD_SEND_ONLY, 0xffffff) + deth(0x11111111, 5) + payload),
       "drop_bad_transport")
expect("RC SEND to the multicast QPN",
       packet(bth(0x04, 0xffffff) + payload), "drop_bad_transport")
expect("UD SEND to the GSI QP with a wrong Q_Key",
       packet(bth(UD_SEND_ONLY, 1) + deth(0x1234, 5) + payload),
       "drop_bad_qkey")
expect("UD SEND to the GSI QP with a P_Key of another partition",
       packet(bth(UD_SEND_ONLY, 1, pkey=0x8001) + deth(0x80010000, 5) +
              payload), "drop_bad_pkey")


# --- Requests to an RC responder ---------------------------------------

import pyverbs.enums as e  # noqa: E402
from pyverbs.addr import AHAttr, GID, GlobalRoute  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import RecvWR, SGE  # noqa: E402

RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_ONLY = 0x00, 0x01, 0x04
RC_WRITE_MIDDLE, RC_WRITE_ONLY, RC_READ_REQUEST = 0x07, 0x0a, 0x0c
PEER_QPN = 0xfedcba     # nobody's: the NAKs are dropped at the sender
RQ_PSN = 100
MTU = 1024

ctx = Context(name=dev)
pd = PD(ctx)
mr = MR(pd, 4 * MTU, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
mapped = socket.inet_pton(socket.AF_INET6, "::ffff:" + src)
peer_gid = ":".join(mapped[i:i + 2].hex() for i in range(0, 16, 2))


def gid_of(addr):
    mapped = socket.inet_pton(socket.AF_INET6, "::ffff:" + addr)
    return ":".join(mapped[i:i + 2].hex() for i in range(0, 16, 2))


def rc_responder(dgid=None, rd_atomic=1):
    """An RC QP in RTR expecting RQ_PSN, with one receive of 2 MTUs; its
    peer is SRC, or DGID.  It takes RD_ATOMIC READs at a time."""
    cq = CQ(ctx, 8)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=1, max_recv_wr=2)))
    attr = QPAttr(path_mtu=e.IBV_MTU_1024)
    attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE |
                            e.IBV_ACCESS_REMOTE_WRITE |
                            e.IBV_ACCESS_REMOTE_READ)
    attr.dest_qp_num = PEER_QPN
    attr.rq_psn = RQ_PSN
    attr.max_dest_rd_atomic = rd_atomic
    attr.min_rnr_timer = 1
    attr.ah_attr = AHAttr(is_global=1, port_num=1,
                          gr=GlobalRoute(dgid=GID(dgid or peer_gid),
                                         sgid_index=sgid_index))
    qp.to_rtr(attr)
    mr.write(b"\0" * 2 * MTU, 2 * MTU)
    qp.post_recv(RecvWR(wr_id=7, num_sge=1,
                        sg=[SGE(mr.buf, 2 * MTU, mr.lkey)]))
    return qp, cq


def qp_state(qp):
    return qp.query(e.IBV_QP_STATE)[0].qp_state


def counter_moved(before, name, n=1, tries=100):
    """The counters once NAME moved by N since BEFORE, or after TRIES
    polls: a packet an engine handles is counted when the engine runs,
    which on a busy machine is not within any fixed time."""
    after = counters()
    for _ in range(tries):
        if after.get(name, 0) - before.get(name, 0) >= n:
            break
        time.sleep(0.1)
        after = counters()
    return after


def first_wc(cq, tries=50):
    for _ in range(tries):
        n, wcs = cq.poll()
        if n:
            return wcs[0]
        time.sleep(0.1)
    return None


def reth(length, region=None, off=0):
    region = region or mr
    return struct.pack("!QII", region.buf + off, region.rkey, length)


def report(name, problems):
    global tests, failed
    tests += 1
    if problems:
        failed += 1
    print("%s %d - %s%s" % ("not ok" if problems else "ok", tests, name,
                             ": " + "; ".join(problems) if problems else ""))


# The counters of traffic, and of how it was carried, not of errors.
TRAFFIC = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_in_place",
           "rx_paged")


def responder_problems(before, moved, qp, state, cq, wc_status, data,
                       tx=None):
    """What is wrong once a responder QP took a case's packets: the
    counters (BEFORE the packets) other than the traffic ones must have
    moved as MOVED says, a counter to its count; TX packets sent if
    given; QP in STATE; the first receive completion of CQ with
    WC_STATUS for wr_id 7 on QP (None: no completion, looked for 2 s
    after the counters moved, by when the engine that counted would
    have completed) holding DATA if given."""
    after = counters()
    for _ in range(50):
        if all(after.get(c, 0) - before.get(c, 0) >= n
               for c, n in moved.items()):
            break
        time.sleep(0.1)
        after = counters()
    delta = {k: after[k] - before.get(k, 0) for k in after
             if after[k] != before.get(k, 0) and
             k not in TRAFFIC}
    wc = first_wc(cq, 20 if wc_status is None else 50)
    problems = []
    if delta != moved:
        problems.append("counters moved: %s" % delta)
    sent = after.get("tx_packets", 0) - before.get("tx_packets", 0)
    if tx is not None and sent != tx:
        problems.append("%d packets sent, not %d" % (sent, tx))
    if qp_state(qp) != state:
        problems.append("QP state %d, not %d" % (qp_state(qp), state))
    if wc_status is None:
        if wc is not None:
            problems.append("unexpected completion, status %d" % wc.status)
    elif wc is None:
        problems.append("no receive completion")
    elif wc.status != wc_status or wc.wr_id != 7 or wc.qp_num != qp.qp_num:
        problems.append("completion status %d wr_id %d qp %d, not %d 7 %d" %
                        (wc.status, wc.wr_id, wc.qp_num, wc_status,
                         qp.qp_num))
    elif data is not None and (wc.byte_len != len(data) or
                               mr.read(len(data), 0) != data):
        problems.append("received %d bytes, not the %d sent" %
                        (wc.byte_len, len(data)))
    return problems


def rc_case(name, pkts, moved, state, wc_status, data=None, dgid=None,
            tx=None):
    """Send PKTS to a new responder.  Each counter in MOVED must move by
    one (or, MOVED a dict, by its count) and no other counter but the
    traffic ones may move; the QP must be in
    STATE and its receive complete with WC_STATUS (None: not at all),
    holding DATA if given, and TX packets must have been sent if given.
    A packet given as (P, ADDR) comes from ADDR; a number N instead of a
    packet waits until the device sent N packets since the case began."""
    qp, cq = rc_responder(dgid)
    moved = moved if isinstance(moved, dict) else {c: 1 for c in moved}
    before = counters()
    for p in pkts:
        if isinstance(p, int):
            for _ in range(100):
                if counters().get("tx_packets", 0) - \
                        before.get("tx_packets", 0) >= p:
                    break
                time.sleep(0.1)
            continue
        p, saddr = p if isinstance(p, tuple) else (p, None)
        sock.sendto(packet(p(qp.qp_num), saddr=saddr), (dst, 0))
    problems = responder_problems(before, moved, qp, state, cq, wc_status,
                                  data, tx)
    report("RC responder: " + name, problems)


def req(opcode, psn, payload=b"", ext=b"", pkey=0xffff):
    pad = (4 - len(payload)) & 3
    return lambda qpn: (bth(opcode, qpn, psn, pad, pkey) + ext + payload +
                        b"\0" * pad)


msg = bytes(range(256)) * 4     # one MTU
RC_SEND_LAST = RC_SEND_MIDDLE + 1
RTR, ERR = e.IBV_QPS_RTR, e.IBV_QPS_ERR
OK, FLUSH = e.IBV_WC_SUCCESS, e.IBV_WC_WR_FLUSH_ERR
INV_REQ = e.IBV_WC_REM_INV_REQ_ERR
rc_case("FIRST and LAST of a SEND are received, data checked",
        [req(RC_SEND_FIRST, RQ_PSN, msg),
         req(RC_SEND_LAST, RQ_PSN + 1, msg[:100])],
        (), RTR, OK, msg + msg[:100])
rc_case("a request past the expected PSN gets a sequence NAK",
        [req(RC_SEND_ONLY, RQ_PSN + 5, msg[:8])],
        ("seq_naks_sent", "drop_bad_psn"), RTR, None)
# A requester may count its retries until it sees an ACK (rxe does): the
# packet that repairs a gap is acknowledged, and before the NAK of a gap
# that follows at once, both without AckReq.
rc_case("the request that repairs a sequence error is acknowledged, "
        "before the NAK of the next gap; data checked",
        [req(RC_SEND_LAST, RQ_PSN + 1, msg[:100]), 1,
         req(RC_SEND_FIRST, RQ_PSN, msg),
         req(RC_SEND_LAST, RQ_PSN + 2, msg[:100]), 3,
         req(RC_SEND_LAST, RQ_PSN + 1, msg[:100])],
        {"seq_naks_sent": 2, "drop_bad_psn": 2}, RTR, OK,
        msg + msg[:100], tx=4)
rc_case("a request before the expected PSN is a duplicate",
        [req(RC_SEND_ONLY, RQ_PSN - 1, msg[:8])],
        ("dup_requests",), RTR, None)
rc_case("MIDDLE without a FIRST is an invalid request",
        [req(RC_SEND_MIDDLE, RQ_PSN, msg)], ("err_naks_sent",), ERR, FLUSH)
rc_case("a FIRST shorter than the MTU is an invalid request",
        [req(RC_SEND_FIRST, RQ_PSN, msg[:512])], ("err_naks_sent",), ERR,
        FLUSH)
rc_case("a WRITE shorter than its RETH length is an invalid request",
        [req(RC_WRITE_ONLY, RQ_PSN, msg[:64], reth(128))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("a READ within a SEND is an invalid request",
        [req(RC_SEND_FIRST, RQ_PSN, msg),
         req(RC_READ_REQUEST, RQ_PSN + 1, ext=reth(8))],
        ("err_naks_sent",), ERR, INV_REQ)
# A region to READ from, larger than one engine run answers.
big = MR(pd, 1 << 20, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
rc_case("a READ is answered in MTU-sized responses",
        [req(RC_READ_REQUEST, RQ_PSN, ext=reth(4096, big))],
        (), RTR, None, tx=4)
rc_case("a duplicate READ from the middle of one answered is answered "
        "again from there",
        [req(RC_READ_REQUEST, RQ_PSN, ext=reth(4096, big)), 4,
         req(RC_READ_REQUEST, RQ_PSN + 2, ext=reth(2048, big, 2048))],
        ("dup_requests",), RTR, None, tx=6)
rc_case("a duplicate READ asking for more than the READ taken is dropped",
        [req(RC_READ_REQUEST, RQ_PSN, ext=reth(8, big)), 1,
         req(RC_READ_REQUEST, RQ_PSN, ext=reth(4096, big))],
        ("dup_requests", "drop_bad_hdr"), RTR, None, tx=1)
rc_case("a duplicate READ of a PSN no READ took is dropped",
        [req(RC_SEND_ONLY, RQ_PSN, msg[:8]),
         req(RC_READ_REQUEST, RQ_PSN, ext=reth(4096, big))],
        ("dup_requests", "drop_bad_psn"), RTR, OK, msg[:8], tx=0)
rc_case("a READ beyond max_dest_rd_atomic while one is answered is an "
        "invalid request",
        [req(RC_READ_REQUEST, RQ_PSN, ext=reth(1 << 20, big)),
         req(RC_READ_REQUEST, RQ_PSN + 1024, ext=reth(8, big))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("a READ longer than max_msg_sz is an invalid request",
        [req(RC_READ_REQUEST, RQ_PSN, ext=reth(0xffffffff, big))],
        ("err_naks_sent",), ERR, FLUSH)
# --- Duplicate READs: what is answered again, and from where -----------

RC_READ_FIRST, RC_READ_ONLY = 0x0d, 0x10
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def block(i):
    """The 1 KiB at offset i KiB of the region READ below: each differs."""
    return b"".join(struct.pack("!HH", i, j) for j in range(MTU // 4))


big.write(b"".join(block(i) for i in range(512)), 512 * MTU)


class Responses:
    """The READ responses the device sends to PEER_QPN, caught on NETDEV
    as they leave the link towards this script: (PSN, opcode, payload)."""

    def __init__(self):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM,
                               socket.htons(0x0800))
        # All 128 responses of a case wait here before they are read: past
        # net.core.rmem_max (some 400 KB of skbs, 85 responses) they would
        # be dropped, so the size is forced (root).
        self.s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 23)
        self.s.bind((netdev, 0))
        self.s.settimeout(0.2)
        self.got = []

    def _take(self, p):
        ihl = (p[0] & 0xf) * 4
        if len(p) < ihl + 8 + 12 + 4 or p[9] != socket.IPPROTO_UDP or \
                p[12:16] != socket.inet_aton(dst) or \
                struct.unpack("!H", p[ihl + 2:ihl + 4])[0] != roce.PORT:
            return
        b = p[ihl + 8:]
        opcode, flags = b[0], b[1]
        qpn, psn = struct.unpack("!II", b[4:12])
        if qpn & 0xffffff != PEER_QPN or not 0x0d <= opcode <= 0x10:
            return
        start = 12 if opcode == 0x0e else 16    # MIDDLE has no AETH
        data = b[start:len(b) - 4 - ((flags >> 4) & 3)]
        self.got.append((psn & 0xffffff, opcode, data))

    def wait(self, n, quiet=1.0, limit=60):
        """Catch responses until N came and then none for QUIET seconds
        (or LIMIT seconds went by); return them and start again."""
        deadline = time.time() + limit
        last = time.time()
        while time.time() < deadline:
            try:
                self._take(self.s.recv(65536))
                last = time.time()
            except socket.timeout:
                if len(self.got) >= n and time.time() - last >= quiet:
                    break
        got, self.got = self.got, []
        return got

    def close(self):
        self.s.close()


def read_req(psn, blk, nblk):
    return req(RC_READ_REQUEST, psn, ext=reth(nblk * MTU, big, blk * MTU))


def dup_read_case(name, reads, dups, want):
    """A responder taking 128 READs at a time: send READS ((PSN, first
    block, blocks) each), catch all their responses, then send DUPS (the
    same form, duplicates and new READs).  The responses to DUPS must be
    WANT, (PSN, block) each in order, one MTU each, holding the blocks of
    the region they name; the QP stays in RTR."""
    qp, cq = rc_responder(rd_atomic=128)
    cap = Responses()
    problems = []
    for psn, blk, n in reads:
        sock.sendto(packet(read_req(psn, blk, n)(qp.qp_num)), (dst, 0))
    first = cap.wait(sum(n for _, _, n in reads))
    if len(first) != sum(n for _, _, n in reads):
        problems.append("%d responses to the READs, not %d" %
                        (len(first), sum(n for _, _, n in reads)))
    for psn, blk, n in dups:
        sock.sendto(packet(read_req(psn, blk, n)(qp.qp_num)), (dst, 0))
    got = cap.wait(len(want))
    cap.close()
    seen = [(psn, data) for psn, _, data in got]
    expected = [(psn, block(blk)) for psn, blk in want]
    if seen != expected:
        problems.append("%d responses to the duplicates, not %d; PSNs %s, "
                        "not %s; data %s" %
                        (len(seen), len(expected),
                         [p - RQ_PSN for p, _ in seen[:12]],
                         [p - RQ_PSN for p, _ in expected[:12]],
                         "as read" if [d for _, d in seen] ==
                         [d for _, d in expected] else "not the region's"))
    if qp_state(qp) != RTR:
        problems.append("QP state %d, not RTR" % qp_state(qp))
    report("RC responder: " + name, problems)


P = RQ_PSN
# 128 one-packet READs, all answered; a duplicate of the oldest, then
# new READs: those take the oldest READ's slot.  Only the duplicate's
# own response comes again, and each new READ is answered from its own
# region.
dup_read_case("a duplicate of the oldest of 128 READs, then new READs: "
              "each answered once, from its own region",
              [(P + i, i, 1) for i in range(128)],
              [(P, 0, 1)] + [(P + 128 + i, 128 + i, 1) for i in range(8)],
              [(P, 0)] + [(P + 128 + i, 128 + i) for i in range(8)])
# One small duplicate must not draw the responses of the READs after
# it: the requester asks again for each one it lost.
dup_read_case("a duplicate of a READ's last packet is answered with that "
              "packet only, not the later READs",
              [(P + 8 * i, 8 * i, 8) for i in range(4)],
              [(P + 7, 7, 1)],
              [(P + 7, 7)])
dup_read_case("duplicates of two READs' last packets, then a new READ",
              [(P + 8 * i, 8 * i, 8) for i in range(4)],
              [(P + 15, 15, 1), (P + 31, 31, 1), (P + 32, 32, 2)],
              [(P + 15, 15), (P + 31, 31), (P + 32, 32), (P + 33, 33)])



rc_case("a WRITE MIDDLE within a SEND is an invalid request",
        [req(RC_SEND_FIRST, RQ_PSN, msg),
         req(RC_WRITE_MIDDLE, RQ_PSN + 1, msg)],
        ("err_naks_sent",), ERR, INV_REQ)


# FLUSH and ATOMIC_WRITE (IBA 1.5 annex A19), answered with a READ
# response without payload.
RC_FLUSH, RC_ATOMIC_WRITE = 0x1c, 0x1d
FLUSH_GLOBAL, FLUSH_RANGE = 1, 0


def feth(plt, sel=FLUSH_RANGE):
    return struct.pack("!I", sel << 4 | plt)


value = bytes(range(0x51, 0x59))
rc_case("an ATOMIC_WRITE is answered with one READ response",
        [req(RC_ATOMIC_WRITE, RQ_PSN, value, reth(8, off=64))],
        (), RTR, None, tx=1)
report("RC responder: the ATOMIC_WRITE's 8 bytes landed",
       [] if mr.read(8, 64) == value else
       ["read %s" % mr.read(8, 64).hex()])
rc_case("an ATOMIC_WRITE of 4 bytes is an invalid request",
        [req(RC_ATOMIC_WRITE, RQ_PSN, value[:4], reth(8, off=64))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("an ATOMIC_WRITE whose RETH says 16 bytes is an invalid request",
        [req(RC_ATOMIC_WRITE, RQ_PSN, value, reth(16, off=64))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("an ATOMIC_WRITE not aligned to 8 is an invalid request",
        [req(RC_ATOMIC_WRITE, RQ_PSN, value, reth(8, off=68))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("a FLUSH of a placement type that does not exist is an invalid "
        "request",
        [req(RC_FLUSH, RQ_PSN, ext=feth(4) + reth(64))],
        ("err_naks_sent",), ERR, FLUSH)
rc_case("a FLUSH the QP has no right to is a remote access error",
        [req(RC_FLUSH, RQ_PSN, ext=feth(FLUSH_GLOBAL) + reth(64))],
        ("err_naks_sent",), ERR, FLUSH)

# --- Packets that are not the connection's ------------------------------

rc_case("a SEND from another address than the QP's peer is dropped; the "
        "peer's SEND with the same PSN is then received, data checked",
        [(req(RC_SEND_ONLY, RQ_PSN, b"forged!!"), FORGED_SRC),
         req(RC_SEND_ONLY, RQ_PSN, msg[:200])],
        ("drop_bad_addr",), RTR, OK, msg[:200])
rc_case("a WRITE from another address than the QP's peer is dropped",
        [(req(RC_WRITE_ONLY, RQ_PSN, msg[:64], reth(64)), FORGED_SRC)],
        ("drop_bad_addr",), RTR, None)
rc_case("a SEND with the P_Key of another partition is dropped",
        [req(RC_SEND_ONLY, RQ_PSN, msg[:8], pkey=0x1234)],
        ("drop_bad_pkey",), RTR, None)
rc_case("a SEND with the default partition's limited P_Key is received",
        [req(RC_SEND_ONLY, RQ_PSN, msg[:96], pkey=0x7fff)],
        (), RTR, OK, msg[:96])
rc_case("a QP whose peer is on its own device takes nothing from the wire",
        [req(RC_SEND_FIRST, RQ_PSN, msg)],
        ("drop_bad_addr",), RTR, None, dgid=gid_of(dst))


def rc_requester(sq_psn, path_mtu=e.IBV_MTU_1024, timeout=18):
    """An RC QP in RTS whose peer, PEER_QPN at SRC, is this script; it
    resends after 4.096 us << TIMEOUT, 7 times."""
    cq = CQ(ctx, 8)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=2, max_recv_wr=1)))
    attr = QPAttr(path_mtu=path_mtu)
    attr.dest_qp_num = PEER_QPN
    attr.rq_psn = RQ_PSN
    attr.sq_psn = sq_psn
    attr.timeout = timeout
    attr.retry_cnt = 7
    attr.max_rd_atomic = 1
    attr.max_dest_rd_atomic = 1
    attr.ah_attr = AHAttr(is_global=1, port_num=1,
                          gr=GlobalRoute(dgid=GID(peer_gid),
                                         sgid_index=sgid_index))
    qp.to_rts(attr)
    return qp, cq


def forged_ack_case():
    """An RC requester with a SEND outstanding to a peer that never answers:
    an ACK for it from another address must not complete it; the same ACK
    from the peer's address does."""
    global tests, failed
    # 8.6 s a retry, 7 of them: the test is done long before, however
    # busy the machine.
    qp, cq = rc_requester(200, timeout=21)
    from pyverbs.wr import SendWR
    qp.post_send(SendWR(wr_id=9, num_sge=1,
                        sg=[SGE(mr.buf, 8, mr.lkey)]))
    ack = bth(0x11, qp.qp_num, 200) + struct.pack("!I", 0x1f << 24 | 1)
    before = counters()
    sock.sendto(packet(ack, saddr=FORGED_SRC), (dst, 0))
    after = counter_moved(before, "drop_bad_addr")
    n, wcs = cq.poll()
    problems = []
    if after.get("drop_bad_addr", 0) - before.get("drop_bad_addr", 0) != 1:
        problems.append("drop_bad_addr did not count the forged ACK")
    if n:
        problems.append("the forged ACK completed the SEND (status %d)" %
                        wcs[0].status)
    sock.sendto(packet(ack), (dst, 0))
    wc = first_wc(cq)
    if not n and (wc is None or wc.status != OK or wc.wr_id != 9):
        problems.append("the peer's ACK did not complete the SEND")
    tests += 1
    if problems:
        failed += 1
    print("%s %d - RC requester: an ACK from another address than the "
          "peer's completes nothing%s" % (
              "not ok" if problems else "ok", tests,
              ": " + "; ".join(problems) if problems else ""))


forged_ack_case()


def set_mtu(mtu):
    subprocess.run(["ip", "-n", dev_ns, "link", "set", dev_netdev, "mtu",
                    str(mtu)], check=True)
    subprocess.run(["ip", "link", "set", netdev, "mtu", str(mtu)],
                   check=True)
    want = e.IBV_MTU_4096 if mtu >= 4200 else e.IBV_MTU_1024
    for _ in range(50):
        if ctx.query_port(1).active_mtu == want:
            return True
        time.sleep(0.1)
    return False


def read_mtu_case():
    """An RC requester READs 8 KiB from this script, which answers at
    1024 bytes a packet, the path MTU when the READ began.  Then the
    port's MTU grows to 4096: a response cut at the new MTU, which would
    reach past the READ's buffer, is dropped, and the 1024-byte responses
    still complete the READ, data checked, the bytes after it untouched."""
    from pyverbs.wr import SendWR
    psn0 = 300
    # 8.6 s a retry: a loaded guest takes seconds to change the MTU.
    qp, cq = rc_requester(psn0, e.IBV_MTU_4096, timeout=21)
    sink = MR(pd, 3 * 4096, e.IBV_ACCESS_LOCAL_WRITE)
    sink.write(b"\0" * 3 * 4096, 3 * 4096)
    wr = SendWR(wr_id=11, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                sg=[SGE(sink.buf, 8192, sink.lkey)])
    wr.set_wr_rdma(0x5678, 0x10000)
    sent0 = counters().get("tx_packets", 0)
    qp.post_send(wr)
    problems = []
    for _ in range(100):        # the READ request is out
        if counters().get("tx_packets", 0) > sent0:
            break
        time.sleep(0.1)
    else:
        problems.append("the READ request was not sent")
    if not set_mtu(9000):
        problems.append("the port's MTU did not become 4096")
    aeth = struct.pack("!I", 0x1f << 24 | 1)
    before = counters()
    forged = bth(0x0e, qp.qp_num, psn0 + 2) + b"\xee" * 4096
    sock.sendto(packet(forged), (dst, 0))
    after = counter_moved(before, "drop_bad_hdr")
    if after.get("drop_bad_hdr", 0) - before.get("drop_bad_hdr", 0) != 1:
        problems.append("the response cut at the new MTU was not dropped")
    data = bytes((i * 7 + i // 1024) & 0xff for i in range(8192))
    for i in range(8):
        op = 0x0d if i == 0 else 0x0f if i == 7 else 0x0e
        hdr = bth(op, qp.qp_num, psn0 + i) + (aeth if op != 0x0e else b"")
        sock.sendto(packet(hdr + data[i * 1024:(i + 1) * 1024]), (dst, 0))
    wc = first_wc(cq, 300)
    if wc is None or wc.status != OK or wc.wr_id != 11:
        problems.append("the READ did not complete: %s" %
                        (wc.status if wc else "no completion"))
    elif sink.read(8192, 0) != data:
        problems.append("the READ's data differs")
    if sink.read(4096, 8192) != b"\0" * 4096:
        problems.append("bytes after the READ's buffer were written")
    if not set_mtu(1500):
        problems.append("the port's MTU did not go back to 1024")
    report("RC requester: READ responses keep the MTU the READ began "
           "with", problems)


def max_msg_case():
    """post_send refuses a message longer than max_msg_sz."""
    from pyverbs.pyverbs_error import PyverbsRDMAError
    from pyverbs.wr import SendWR
    qp, cq = rc_requester(400)
    limit = ctx.query_port(1).max_msg_sz
    problems = []
    wr = SendWR(wr_id=12, num_sge=2,
                sg=[SGE(mr.buf, limit, mr.lkey), SGE(mr.buf, 1, mr.lkey)])
    try:
        qp.post_send(wr)
        problems.append("a SEND of max_msg_sz + 1 bytes was posted")
    except PyverbsRDMAError as err:
        if err.error_code != 22:
            problems.append("error %d, not EINVAL" % err.error_code)
    report("post_send: a message longer than max_msg_sz (%d) is refused "
           "with EINVAL" % limit, problems)


read_mtu_case()
max_msg_case()


# --- Requests to an XRC TGT QP -----------------------------------------

XRC_SEND_FIRST, XRC_SEND_LAST, XRC_SEND_ONLY = 0xa0, 0xa2, 0xa4


def xrc_srq(xrcd, cq, wr_id):
    """An XRC SRQ of XRCD completing on CQ, with one receive of 2 MTUs
    at the start of MR."""
    from pyverbs.srq import SRQ, SrqInitAttrEx
    attr = SrqInitAttrEx(max_wr=2)
    attr.srq_type = e.IBV_SRQT_XRC
    attr.pd = pd
    attr.xrcd = xrcd
    attr.cq = cq
    attr.comp_mask = (e.IBV_SRQ_INIT_ATTR_TYPE | e.IBV_SRQ_INIT_ATTR_PD |
                      e.IBV_SRQ_INIT_ATTR_CQ | e.IBV_SRQ_INIT_ATTR_XRCD)
    srq = SRQ(ctx, attr)
    srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                         sg=[SGE(mr.buf, 2 * MTU, mr.lkey)]))
    return srq


def xrc_case(name, pkts, moved, state, srq_wc, data=None):
    """An XRC TGT QP in RTR, of a domain with an SRQ; another domain
    has an SRQ too.  PKTS are functions of the QP number and the two SRQ
    numbers (ours, theirs).  The counters in MOVED must move by one and
    no other; the QP must be in STATE; our SRQ's CQ must see a receive
    with status SRQ_WC (None: none) and DATA, for the TGT QP; the other
    SRQ's CQ nothing."""
    import os
    from pyverbs.qp import QPInitAttrEx
    from pyverbs.xrcd import XRCD, XRCDInitAttr
    init = XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD |
                        e.IBV_XRCD_INIT_ATTR_OFLAGS, os.O_CREAT, -1)
    xrcd, other = XRCD(ctx, init), XRCD(ctx, init)
    cq, other_cq = CQ(ctx, 8), CQ(ctx, 8)
    mr.write(b"\0" * 2 * MTU, 2 * MTU)
    srq = xrc_srq(xrcd, cq, 7)
    other_srq = xrc_srq(other, other_cq, 8)
    qp = QP(ctx, QPInitAttrEx(qp_type=e.IBV_QPT_XRC_RECV,
                              comp_mask=e.IBV_QP_INIT_ATTR_XRCD, xrcd=xrcd))
    attr = QPAttr(path_mtu=e.IBV_MTU_1024)
    attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
    attr.dest_qp_num = PEER_QPN
    attr.rq_psn = RQ_PSN
    attr.min_rnr_timer = 1
    attr.ah_attr = AHAttr(is_global=1, port_num=1,
                          gr=GlobalRoute(dgid=GID(peer_gid),
                                         sgid_index=sgid_index))
    qp.to_rtr(attr)
    before = counters()
    for p in pkts:
        sock.sendto(packet(p(qp.qp_num, srq.get_srq_num(),
                             other_srq.get_srq_num())), (dst, 0))
    problems = responder_problems(before, {c: 1 for c in moved}, qp,
                                  state, cq, srq_wc, data)
    if first_wc(other_cq, 1) is not None:
        problems.append("the other domain's SRQ completed a receive")
    report("XRC TGT QP: " + name, problems)


def xreq(opcode, psn, srqn, payload=b""):
    """An XRC request; SRQN picks the XRCETH's number from (ours,
    theirs): a function of both."""
    pad = (4 - len(payload)) & 3
    return lambda qpn, ours, theirs: (
        bth(opcode, qpn, psn, pad) +
        struct.pack("!I", srqn(ours, theirs) & 0xffffff) + payload +
        b"\0" * pad)


def ours(o, t):
    return o


xrc_case("FIRST and LAST of a SEND land in the SRQ the XRCETH names, "
         "data checked",
         [xreq(XRC_SEND_FIRST, RQ_PSN, ours, msg),
          xreq(XRC_SEND_LAST, RQ_PSN + 1, ours, msg[:100])],
         (), RTR, OK, msg + msg[:100])
xrc_case("an XRCETH naming another domain's SRQ is an invalid request",
         [xreq(XRC_SEND_ONLY, RQ_PSN, lambda o, t: t, msg[:64])],
         ("drop_bad_xrc_srq", "err_naks_sent"), ERR, None)
xrc_case("an XRCETH naming no SRQ is an invalid request",
         [xreq(XRC_SEND_ONLY, RQ_PSN, lambda o, t: 0xfffffe, msg[:64])],
         ("drop_bad_xrc_srq", "err_naks_sent"), ERR, None)
xrc_case("a LAST naming another SRQ than its FIRST is an invalid request",
         [xreq(XRC_SEND_FIRST, RQ_PSN, ours, msg),
          xreq(XRC_SEND_LAST, RQ_PSN + 1, lambda o, t: t, msg[:100])],
         ("drop_bad_xrc_srq", "err_naks_sent"), ERR, INV_REQ)
rc_qp, rc_cq = rc_responder()
expect("XRC SEND to an RC QP",
       packet(bth(XRC_SEND_ONLY, rc_qp.qp_num, RQ_PSN) +
              b"\0\0\0\1" + payload), "drop_bad_transport")

print("1..%d" % tests)
sys.exit(1 if failed else 0)
