# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared settings for the softrvt scripts; sourced, not run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Slow artefacts (kernel builds, guest root) live outside the clone so a
# fresh clone reuses them.
CACHE=${SOFTRVT_CACHE:-/var/cache/softrvt}
mkdir -p "$CACHE"

log() { printf '[softrvt] %s\n' "$*" >&2; }
