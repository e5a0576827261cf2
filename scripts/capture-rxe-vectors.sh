#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Record packets rdma_rxe sends (UD over IPv4 and IPv6, an RC SEND and its
# retransmission) in the guest and write them to kunit/rxe_vectors.h, the
# KUnit ICRC and parser tests' reference data.  Run by hand when the
# vectors should change; the result is committed.
set -euo pipefail

. "$(dirname "$0")/common.sh"

out=$(mktemp -d /tmp/softrvt-capture.XXXXXX)
"$TOP/scripts/vm.sh" -t 600 -o "$out" -- scripts/guest/capture-rxe.sh >&2
[ -s "$out/vectors.txt" ] || { log "no packets captured"; exit 1; }

python3 - "$out/vectors.txt" > "$TOP/kunit/rxe_vectors.h" <<'PY'
import sys

print("/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */")
print("/*")
print(" * RoCEv2 packets sent by rdma_rxe (Linux 6.12), recorded from the IP")
print(" * header to the ICRC by scripts/capture-rxe-vectors.sh.  Generated.")
print(" */")
print()
print("struct rxe_vector {")
print("\tconst char *name;")
print("\tbool ipv6;")
print("\tunsigned int len;")
print("\tconst u8 *data;")
print("};")
print()
names = []
for i, line in enumerate(open(sys.argv[1])):
    kind, fam, hexdata = line.split()
    data = bytes.fromhex(hexdata)
    name = "rxe_%s_%d" % (kind, i)
    names.append((name, kind, fam, len(data)))
    print("static const u8 %s[] = {" % name)
    for j in range(0, len(data), 12):
        print("\t" + " ".join("0x%02x," % b for b in data[j:j + 12]))
    print("};")
    print()
print("static const struct rxe_vector rxe_vectors[] = {")
for name, kind, fam, n in names:
    print('\t{ "%s", %s, %d, %s },' % (kind, "true" if fam == "ipv6" else "false", n, name))
print("};")
PY
log "wrote kunit/rxe_vectors.h"
