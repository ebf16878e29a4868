#!/usr/bin/env bash
# Warm-restart snapshot speed (-e): write and load of a full 1 GB cache of 100-byte
# values, MB/s and items/s, peak RSS growth while writing (see docs/benchmarks.md).
# Arguments pass to bench_snapshot.py, e.g. scripts/bench-snapshot.sh --memory 256 --runs 1.
# Run it under the bench lock: flock /work/helpers/bench.lock scripts/bench-snapshot.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_deps
build build/release
exec /usr/bin/python3 "$REPO_ROOT/scripts/bench_snapshot.py" \
  --herdless "$REPO_ROOT/build/release/herdless" "$@"
