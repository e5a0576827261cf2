#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The meeting point of the two guests of a pair (scripts/vm-pair.sh).

Guest a runs it; both guests' scripts (pair_sync in pair-lib.sh) connect
to it when they reach a named step and send one line,
"ROLE<TAB>VALUE<TAB>STEP".  Once both roles have sent the same STEP, each
gets back "OK<TAB>VALUE" with the other's VALUE, and the connections
close.  Different steps mean that the two scripts are out of step: each
gets "MISMATCH<TAB>the other's STEP".  A guest that hangs up while it
waits (its own deadline passed) is forgotten, so that a later step of it
does not meet a stale one.  Once both have sent the step "the end" and
been answered, it exits: guest a waits for that before it goes, so that
guest b's answer is never cut off.

Only socket and select: under TCG, in the debug guest, importing asyncio
takes some 20 seconds.

usage: pair-sync.py ADDR PORT
"""

import select
import socket
import sys


def log(msg):
    print(f"pair-sync: {msg}", file=sys.stderr, flush=True)


def reply(sock, text):
    try:
        sock.sendall((text + "\n").encode())
    except OSError:
        pass
    sock.close()


class Meeting:
    def __init__(self):
        self.partial = {}  # socket -> bytes of its line so far
        self.waiting = {}  # role -> (step, value, socket)
        self.over = False  # both were answered at "the end"

    def arrive(self, sock, line):
        try:
            role, value, step = line.decode(errors="replace").split("\t", 2)
        except ValueError:
            log(f"not a step: {line!r}")
            sock.close()
            return
        if role not in ("a", "b"):
            log(f"unknown role {role!r}")
            sock.close()
            return
        other = "b" if role == "a" else "a"
        stale = self.waiting.pop(role, None)
        if stale:
            reply(stale[2], f"MISMATCH\t{step} (a later step of the same guest)")
        peer = self.waiting.pop(other, None)
        if not peer:
            self.waiting[role] = (step, value, sock)
        elif peer[0] == step:
            reply(peer[2], f"OK\t{value}")
            reply(sock, f"OK\t{peer[1]}")
            self.over = step == "the end"
        else:
            log(f"out of step: {role} at {step!r}, {other} at {peer[0]!r}")
            reply(peer[2], f"MISMATCH\t{step}")
            reply(sock, f"MISMATCH\t{peer[0]}")

    def readable(self, sock):
        if sock in self.partial:
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                del self.partial[sock]
                sock.close()
                return
            self.partial[sock] += data
            if b"\n" in self.partial[sock]:
                line = self.partial.pop(sock).split(b"\n", 1)[0]
                self.arrive(sock, line)
            return
        # A waiting guest has nothing more to say: it hung up.
        for role, (_, _, wsock) in list(self.waiting.items()):
            if wsock is sock:
                del self.waiting[role]
                sock.close()

    def serve(self, listener):
        while not self.over:
            socks = [listener, *self.partial,
                     *(w[2] for w in self.waiting.values())]
            ready, _, _ = select.select(socks, [], [])
            for sock in ready:
                if sock is listener:
                    conn, _ = listener.accept()
                    self.partial[conn] = b""
                else:
                    self.readable(sock)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((sys.argv[1], int(sys.argv[2])))
    listener.listen(8)
    Meeting().serve(listener)


if __name__ == "__main__":
    main()
