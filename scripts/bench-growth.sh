#!/usr/bin/env bash
# Worst-case latency while the index grows from empty to millions of items:
# builds herdless optimised and runs tests/bench/growth_latency (see
# docs/benchmarks.md). Arguments: [items (default 4000000)] [shard_bits (6)].
# Run it under the bench lock: flock /work/helpers/bench.lock scripts/bench-growth.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_deps
build build/release
(cd "$REPO_ROOT/build/release" && quietly make -j"$JOBS" tests/bench/growth_latency) ||
  die "could not build the growth benchmark"
exec "$REPO_ROOT/build/release/tests/bench/growth_latency" "$@"
