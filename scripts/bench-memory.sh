#!/usr/bin/env bash
# Items held in the same -m by herdless and Debian's memcached, with RSS and
# per-item overhead (see docs/benchmarks.md). Arguments pass to bench_memory.py,
# e.g. scripts/bench-memory.sh --memory 256 --sizes 100,1000.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_deps
build build/release
exec /usr/bin/python3 "$REPO_ROOT/scripts/bench_memory.py" --herdless "$REPO_ROOT/build/release/herdless" "$@"
