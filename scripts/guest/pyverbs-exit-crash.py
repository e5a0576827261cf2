#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
A crash of pyverbs' own at the exit of the interpreter, on any provider.

rdma-core 56.1's tests build a test's objects in a constructor, and skip
the test by raising unittest.SkipTest from it when the device lacks a
feature (test_flow's raw packet QP, test_parent_domain's parent domain).
The half-built object, its Context, PD and CQ then live on only in a
reference cycle through the exception's traceback.  The garbage collector
frees such a cycle in an order of its own: it first clears the weak
references by which a pyverbs Context closes its PDs and CQs before
itself, and Cython's tp_clear drops the PD's and CQ's references to their
Context.  The Context can so be closed (ibv_close_device(), which frees
the provider's context and closes its command fd) while its PD and CQ
still exist, and their own deallocation then calls ibv_dealloc_pd() and
ibv_destroy_cq() on a freed ibv_context: "Failed to destroy ... Bad file
descriptor", or SIGSEGV.

This does the same, without unittest.  usage: pyverbs-exit-crash.py IBDEV
Exits 0 if the interpreter survives; run it on rxe to see that the
provider is not the cause.  rdma-core fixed its tests after 56.1 (PR
#1618, "tests: Ensure graceful resource cleaning": a skipped test closes
its Context itself).
"""
import sys

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.pd import PD


class Skipped(Exception):
    pass


class Resources:
    def __init__(self, name):
        self.ctx = d.Context(name=name)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8, None, None, 0)
        raise Skipped('the device lacks the next object')


def one_skipped_test(name, kept):
    try:
        Resources(name)
    except Skipped as ex:
        # unittest keeps the exception of a skipped test; kept here, the
        # frame, the traceback and the half-built object form a cycle.
        kept.append(ex)
        err = ex  # noqa: F841, the frame's own reference: the cycle


def main():
    kept = []
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 20):
        one_skipped_test(sys.argv[1], kept)
    del kept
    print('built and dropped; the interpreter exits now', flush=True)


if __name__ == '__main__':
    main()
