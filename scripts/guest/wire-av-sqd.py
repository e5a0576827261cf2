#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A new path for an RC QP in SQD while its READ responses stream.

A QP of the responding device moves RTS -> SQD, then SQD -> SQD with a
new address vector again and again (the same peer, another traffic
class, hop limit and flow label each time), then back to RTS, while its
peer's READs from it run: every READ must complete, its bytes the
region's, and no packet of the responder may be dropped by the requester
as not from its path.  On a KCSAN kernel (make check-full) the writes of
the path race no read of the engine's.

usage: wire-av-sqd.py REQ-DEV REQ-GID-INDEX RESP-DEV RESP-GID-INDEX [ROUNDS
                      [CHANGES]]
CHANGES new paths a round (default 20).  Prints TAP lines.
"""

import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

import roce

req_dev, req_gid = sys.argv[1], int(sys.argv[2])
resp_dev, resp_gid = sys.argv[3], int(sys.argv[4])
ROUNDS = int(sys.argv[5]) if len(sys.argv) > 5 else 4
READS = 8                       # per round, each of READ_LEN bytes
READ_LEN = 256 * 1024
AV_CHANGES = int(sys.argv[6]) if len(sys.argv) > 6 else 20
tests = 0
failed = 0


def report(name, problems):
    global tests, failed
    tests += 1
    failed += bool(problems)
    print("%s %d - %s%s" % ("not ok" if problems else "ok", tests, name,
                             ": " + "; ".join(problems) if problems else ""))


def drops(dev):
    return roce.counters(dev).get("drop_bad_addr", 0)


class Side:
    def __init__(self, name, gid_index):
        self.ctx = Context(name=name)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 2 * READS)
        self.qp = QP(self.pd, QPInitAttr(
            qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
            cap=QPCap(max_send_wr=READS, max_recv_wr=1)))
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)

    def path(self, peer, n=0):
        """The AV to PEER; N varies what the path check does not look at."""
        gr = GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index,
                         flow_label=(n * 4099) & 0xfffff,
                         hop_limit=64 - n % 32, traffic_class=(n % 8) << 5)
        return AHAttr(is_global=1, port_num=1, gr=gr)

    def connect(self, peer):
        attr = QPAttr(path_mtu=e.IBV_MTU_1024)
        attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE |
                                e.IBV_ACCESS_REMOTE_READ)
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = 0
        attr.sq_psn = 0
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.max_rd_atomic = READS
        attr.max_dest_rd_atomic = READS
        attr.ah_attr = self.path(peer)
        self.qp.to_rts(attr)


def state(qp):
    return qp.query(e.IBV_QP_STATE)[0].qp_state


req = Side(req_dev, req_gid)
resp = Side(resp_dev, resp_gid)
req.connect(resp)
resp.connect(req)
src = MR(resp.pd, READS * READ_LEN,
         e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
sink = MR(req.pd, READS * READ_LEN, e.IBV_ACCESS_LOCAL_WRITE)
pattern = bytes((i * 131 + i // 4096) & 0xff for i in range(READ_LEN))
drops0 = drops(req_dev)
n = 0
for r in range(ROUNDS):
    problems = []
    for i in range(READS):
        src.write(bytes([(b + r + i) & 0xff for b in pattern[:64]]) +
                  pattern[64:], READ_LEN, i * READ_LEN)
    sink.write(b"\0" * READS * READ_LEN, READS * READ_LEN)
    for i in range(READS):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                    sg=[SGE(sink.buf + i * READ_LEN, READ_LEN, sink.lkey)])
        wr.set_wr_rdma(src.rkey, src.buf + i * READ_LEN)
        req.qp.post_send(wr)
    resp.qp.modify(QPAttr(qp_state=e.IBV_QPS_SQD), e.IBV_QP_STATE)
    for _ in range(AV_CHANGES):
        n += 1
        attr = QPAttr(qp_state=e.IBV_QPS_SQD)
        attr.ah_attr = resp.path(req, n)
        resp.qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_AV)
    if state(resp.qp) != e.IBV_QPS_SQD:
        problems.append("responder in state %d, not SQD" % state(resp.qp))
    resp.qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)
    done = 0
    deadline = time.monotonic() + 300
    while done < READS and time.monotonic() < deadline:
        k, wcs = req.cq.poll(READS - done)
        for wc in wcs:
            if wc.status != e.IBV_WC_SUCCESS:
                problems.append("READ %d: status %d" % (wc.wr_id, wc.status))
        done += k
        if not k:
            time.sleep(0.01)
    if done != READS:
        problems.append("%d of %d READs completed" % (done, READS))
    for i in range(READS):
        want = bytes([(b + r + i) & 0xff for b in pattern[:64]]) + \
            pattern[64:]
        if sink.read(READ_LEN, i * READ_LEN) != want:
            problems.append("READ %d: bytes differ" % i)
    report("round %d: %d READs of %d KiB while the responder's path was "
           "set %d times in SQD: all complete, bytes intact" %
           (r, READS, READ_LEN // 1024, AV_CHANGES), problems)
    if problems:
        break
report("no response dropped as not from the responder's path",
       [] if drops(req_dev) == drops0 else
       ["drop_bad_addr %d -> %d" % (drops0, drops(req_dev))])
print("1..%d" % tests)
sys.exit(1 if failed else 0)
