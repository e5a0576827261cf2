#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""An MPI program whose every result is checked, for Open MPI over UCX.

Run by mpirun on any number of ranks: point-to-point messages around the
ring of ranks at each size, then Allreduce, Alltoall and Bcast.  Every
byte received is compared with what its sender wrote (a pattern of the
sender's rank and the size).  Rank 0 prints one TAP line a test, "ok"
only when every rank found its data intact; and, for the table of
clients.rst only, the rate of the largest point-to-point exchange.

usage: mpirun ... mpi-check.py [MAX-BYTES]   (default 1 MiB; up to 16 MiB)
"""

import hashlib
import sys
from array import array

from mpi4py import MPI


def pattern(src, size, salt=""):
    block = hashlib.sha256(f"{src}:{size}:{salt}".encode()).digest() * 8
    return (block * (size // len(block) + 1))[:size]


def point_to_point(comm, size):
    rank, n = comm.Get_rank(), comm.Get_size()
    dst, src = (rank + 1) % n, (rank - 1) % n
    rbuf = bytearray(size)
    comm.Sendrecv([pattern(rank, size), MPI.BYTE], dest=dst, sendtag=size % 32768,
                  recvbuf=[rbuf, MPI.BYTE], source=src, recvtag=size % 32768)
    return bytes(rbuf) == pattern(src, size)


def allreduce(comm):
    rank, n = comm.Get_rank(), comm.Get_size()
    send = array("q", [rank * 1000003 + i for i in range(4096)])
    recv = array("q", [0] * 4096)
    comm.Allreduce([send, MPI.INT64_T], [recv, MPI.INT64_T], op=MPI.SUM)
    want = [sum(r * 1000003 + i for r in range(n)) for i in range(4096)]
    return list(recv) == want


def alltoall(comm, block):
    rank, n = comm.Get_rank(), comm.Get_size()
    send = b"".join(pattern(rank, block, salt=str(j)) for j in range(n))
    recv = bytearray(block * n)
    comm.Alltoall([send, MPI.BYTE], [recv, MPI.BYTE])
    return all(recv[j * block:(j + 1) * block] == pattern(j, block, salt=str(rank))
               for j in range(n))


def bcast(comm, size):
    buf = bytearray(pattern(0, size, salt="bcast")) if comm.Get_rank() == 0 \
        else bytearray(size)
    comm.Bcast([buf, MPI.BYTE], root=0)
    return bytes(buf) == pattern(0, size, salt="bcast")


def main(argv):
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    top = int(argv[1]) if len(argv) > 1 else 1 << 20
    sizes = [s for s in (1, 64, 4096, 65536, 1 << 20, 16 << 20) if s <= top]
    tests = [(f"point-to-point around {n} ranks, {s} bytes",
              lambda s=s: point_to_point(comm, s)) for s in sizes]
    tests += [(f"Allreduce of 4096 int64 over {n} ranks", lambda: allreduce(comm)),
              (f"Alltoall of 64 KiB blocks over {n} ranks",
               lambda: alltoall(comm, 65536)),
              (f"Bcast of {min(top, 1 << 20)} bytes to {n} ranks",
               lambda: bcast(comm, min(top, 1 << 20)))]
    if rank == 0:
        print(f"1..{len(tests)}", flush=True)
    failed = 0
    for i, (name, test) in enumerate(tests, 1):
        comm.Barrier()
        start = MPI.Wtime()
        good = comm.gather(bool(test()), root=0)
        if rank == 0 and i == len(sizes):
            rate = sizes[-1] / (MPI.Wtime() - start) / 1e6
            print(f"# point-to-point of {sizes[-1]} bytes: {rate:.2f} MB/s a rank",
                  flush=True)
        if rank == 0:
            bad = [r for r, g in enumerate(good) if not g]
            failed += bool(bad)
            verdict = "ok" if not bad else "not ok"
            where = f" (ranks {bad} saw other bytes)" if bad else ""
            print(f"{verdict} {i} - {name}{where}", flush=True)
    failed = comm.bcast(failed, root=0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
