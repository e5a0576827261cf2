#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Flood many UD QPs of a softrvt device while their engines are held
off, so that the device's cap on queued received packets drops what each
QP's own cap would still take; check the drops are counted under
drop_dev_queue_full, that every packet is accounted for, and that the
bytes queued (debugfs softrvt/rx_queued) return to zero when the engines
drain them and when RESET and destroy_qp purge them.

The engines are held by debugfs softrvt/rx_hold: while the device is held
they take no packet off their queues, whatever the scheduler does, and
releasing it runs them.  (Busy loops at real-time priority did not hold
them on a busy machine: a CI run saw 16840 packets taken by the engines
where the cap should have dropped them.)

usage: wire-rx-flood.py DEV SRC-IPv4 DST-IPv4
Run in the sender's network namespace; DEV is the receiving device; the
link needs an MTU of 9000.  Prints TAP lines.
"""

import socket
import subprocess
import sys
import time

import roce
from roce import delta

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

dev, src, dst = sys.argv[1:4]
NQPS = 8
QKEY = 0x11223344
PAYLOAD = 8000          # a jumbo frame: some 16 KiB of truesize
tests = 0
failed = 0


def ok(cond, name, detail=""):
    global tests, failed
    tests += 1
    if not cond:
        failed += 1
    print("%s %d - %s%s" % ("ok" if cond else "not ok", tests, name,
                           (": " + detail) if detail and not cond else ""))
    sys.stdout.flush()


def counters():
    return roce.counters(dev)


def rx_queued():
    with open("/sys/kernel/debug/softrvt/rx_queued") as f:
        for line in f:
            name, queued, cap = line.split()
            if name == dev:
                return int(queued), int(cap)
    raise RuntimeError("%s not in softrvt/rx_queued" % dev)


def ud_packet(qpn):
    """A UD SEND_ONLY of PAYLOAD bytes, with its ICRC."""
    return roce.packet(src, dst, roce.bth(0x64, qpn) + roce.deth(QKEY, 5) +
                       b"\x5a" * PAYLOAD)


HOLD = "/sys/kernel/debug/softrvt/rx_hold"


def hold(on):
    """Hold DEV's engines off its received packets, or release them."""
    with open(HOLD, "w") as f:
        f.write("%s %d" % (dev, 1 if on else 0))


def held():
    with open(HOLD) as f:
        return dev in f.read().split()


def qp_rx_queued():
    """The packets queued on each QP of DEV, by QP number, as restrack
    shows them (drv_rx_queued): one rdma command for all of them."""
    out = subprocess.run(["rdma", "-dd", "resource", "show", "qp", "link",
                          dev + "/1"], capture_output=True, text=True,
                         check=True).stdout
    depth, qpn = {}, None
    for word, value in zip(out.split(), out.split()[1:]):
        if word == "lqpn":
            qpn = int(value)
        elif word == "drv_rx_queued" and qpn is not None:
            depth[qpn] = int(value)
    return depth


def our_rx_queued():
    """qp_rx_queued() for the flood's QPs only, QP1 left out."""
    depth = qp_rx_queued()
    return {qp.qp_num: depth.get(qp.qp_num, 0) for qp in qps}


def wait_until(cond, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    return cond()


ctx = Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 16)
qps = []
for _ in range(NQPS):
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=1, max_recv_wr=1)))
    attr = QPAttr()
    attr.qkey = QKEY
    qp.to_rts(attr)
    qps.append(qp)
# No receive is posted: the engine counts each packet it takes as
# drop_no_rwqe, so every packet ends in exactly one counter.
pkts = [ud_packet(qp.qp_num) for qp in qps]
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)


def received(before, n):
    """Whether the receive path has taken N packets since BEFORE: each
    one counts in rx_packets before it is queued or dropped.  The stack
    may hand them over a little after sendto() returns."""
    return wait_until(lambda: delta(before, counters()).get("rx_packets", 0)
                      >= n)


queued0, cap = rx_queued()
ok(queued0 == 0, "nothing is queued before the flood", "%d bytes" % queued0)
try:
    # Round 1: the device's cap drops, the engines then drain the rest.
    before = counters()
    hold(True)
    ok(held(), "debugfs softrvt/rx_hold holds the device")
    t0 = time.monotonic()
    # Until the cap is nearly reached, then as much again in drops; each
    # QP stays far under its own cap of 4096 packets.
    rounds, limit = 0, 2 * cap // (PAYLOAD * NQPS)
    while rounds < limit:
        for p in pkts:
            sock.sendto(p, (dst, 0))
        rounds += 1
        if rounds % 8 == 0 and rx_queued()[0] > cap - 256 * 1024:
            break
    for _ in range(8):
        for p in pkts:
            sock.sendto(p, (dst, 0))
    rounds += 8
    sent = rounds * NQPS
    t1 = time.monotonic()
    ok(received(before, sent), "the receive path took every packet sent",
       str(delta(before, counters())))
    queued, _ = rx_queued()
    mid = delta(before, counters())
    depth = our_rx_queued()
    print("# round 1: %d packets to %d QPs in %.1f s; %d bytes queued of "
          "%d; %d packets queued; counters %s" %
          (sent, NQPS, t1 - t0, queued, cap, sum(depth.values()), mid))
    devfull = mid.get("drop_dev_queue_full", 0)
    ok(devfull > 0, "the device's cap drops a flood spread over QPs",
       "nothing dropped: %s" % mid)
    ok(mid.get("drop_queue_full", 0) == 0, "no QP's own cap was reached",
       "drop_queue_full %d" % mid.get("drop_queue_full", 0))
    ok(mid.get("drop_no_rwqe", 0) == 0,
       "the engines took nothing while held", str(mid))
    ok(sum(depth.values()) + devfull == sent,
       "every packet is queued on its QP or dropped by the device's cap",
       "%d queued, %d dropped of %d" % (sum(depth.values()), devfull, sent))
    ok(cap - 2 * (PAYLOAD + 8192) < queued <= cap,
       "what is queued stays within the cap, and reaches it",
       "%d of %d" % (queued, cap))
    hold(False)
    drained = wait_until(lambda: rx_queued()[0] == 0, 120)
    d = delta(before, counters())
    ok(drained, "the bytes queued return to zero once the engines ran",
       "%d left" % rx_queued()[0])
    ok(d.get("rx_packets", 0) == sent and
       d.get("drop_no_rwqe", 0) + d.get("drop_dev_queue_full", 0) == sent,
       "every packet is received, then dropped by the cap or by its QP's "
       "engine", str(d))

    # Round 2: packets queued on QPs that are reset or destroyed are
    # purged, and the device gets their bytes back.
    before = counters()
    hold(True)
    for _ in range(16):
        for p in pkts:
            sock.sendto(p, (dst, 0))
    ok(received(before, 16 * NQPS), "round 2: the receive path took every "
       "packet sent", str(delta(before, counters())))
    depth = our_rx_queued()
    victim = qps[0]
    victim_qpn = victim.qp_num      # not to be read once it is closed
    queued_full, _ = rx_queued()
    victim.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    queued_reset, _ = rx_queued()
    victim_left = qp_rx_queued().get(victim_qpn)
    for qp in qps:
        qp.close()
    queued_gone, _ = rx_queued()
    d = delta(before, counters())
    hold(False)
    print("# round 2: queued %d (QP %d: %d packets of %s), after its "
          "RESET %d, after destroy %d; counters %s" %
          (queued_full, victim_qpn, depth.get(victim_qpn, 0),
           sorted(depth.values()), queued_reset, queued_gone, d))
    ok(sorted(depth.values()) == [16] * NQPS,
       "packets stay queued while the engines are held", str(depth))
    ok(depth.get(victim_qpn, 0) > 0 and 0 < queued_reset < queued_full,
       "moving a QP to RESET gives its packets' bytes back",
       "%d then %d" % (queued_full, queued_reset))
    ok(victim_left == 0, "the QP reset has no packet left queued",
       "%s left" % victim_left)
    ok(queued_gone == 0, "destroying the QPs gives every byte back",
       "%d left" % queued_gone)
    ok(d.get("drop_no_rwqe", 0) == 0 and
       d.get("drop_dev_queue_full", 0) == 0,
       "round 2: no packet dropped, all purged", str(d))
finally:
    if held():
        hold(False)

ok(not held(), "the device is released")
time.sleep(1)
ok(rx_queued()[0] == 0, "nothing is queued at the end")
print("1..%d" % tests)
sys.exit(1 if failed else 0)
