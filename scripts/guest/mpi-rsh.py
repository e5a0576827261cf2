#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Open MPI's remote launcher between the two guests of the pair.

The guests have no ssh.  mpirun starts its daemon on the other host
through a launch agent called as ssh would be ("AGENT HOST COMMAND...");
this is that agent, and the small server that runs the command on the
other side.  It carries only the command line and its output, over the
pair's link (198.18.50.0/24); stdin is /dev/null.  The exit status of the
remote command is the agent's and the server's.

mpirun starts one daemon a host: the server runs one command and exits,
so that it ends with the run it served.

usage: mpi-rsh.py serve ADDR PORT     (in the guest that is launched into)
       mpi-rsh.py HOST COMMAND...     (the agent, PORT from MPI_RSH_PORT)
"""

import json
import os
import socket
import struct
import subprocess
import sys

PORT = int(os.environ.get("MPI_RSH_PORT", "7491"))


def run_one(conn):
    line = b""
    while not line.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            return 1
        line += chunk
    command = json.loads(line)
    with subprocess.Popen(["/bin/sh", "-c", command],
                          stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as proc:
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            conn.sendall(struct.pack("!I", len(chunk)) + chunk)
        status = proc.wait()
    # A zero-length frame, then the status.
    conn.sendall(struct.pack("!I", 0) + struct.pack("!i", status))
    return status


def serve(addr, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as lsock:
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((addr, port))
        lsock.listen(1)
        conn, _ = lsock.accept()
    with conn:
        status = run_one(conn)
    return 0 if status == 0 else 1


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("mpi-rsh: the remote side hung up")
        buf += chunk
    return buf


def agent(host, argv):
    sock = socket.create_connection((host, PORT))
    sock.sendall(json.dumps(" ".join(argv)).encode() + b"\n")
    out = sys.stdout.buffer
    while True:
        (n,) = struct.unpack("!I", recv_exact(sock, 4))
        if n == 0:
            break
        out.write(recv_exact(sock, n))
        out.flush()
    (status,) = struct.unpack("!i", recv_exact(sock, 4))
    return status if status >= 0 else 128 - status


def main(argv):
    if len(argv) == 4 and argv[1] == "serve":
        return serve(argv[2], int(argv[3]))
    # ssh's options that a launcher may pass before the host.
    args = argv[1:]
    while args and args[0].startswith("-"):
        args = args[1:]
    if len(args) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return agent(args[0], args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
