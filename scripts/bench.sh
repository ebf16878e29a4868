#!/usr/bin/env bash
# A/B benchmark of herdless against Debian's memcached (see docs/benchmarks.md).
# Builds herdless optimised, then runs scripts/bench.py; arguments pass through
# (--memcached PATH picks the reference server, e.g. a memcached 1.6.45 built from source),
# e.g. scripts/bench.sh --presets a,b --rounds 3 --seconds 10; --tls runs both servers with
# -Z and one certificate and memtier with --tls --cacert.
# Load generator: memtier_benchmark from $MEMTIER or PATH, else memcaslap.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_deps
build build/release
exec /usr/bin/python3 "$REPO_ROOT/scripts/bench.py" --herdless "$REPO_ROOT/build/release/herdless" "$@"
