#!/usr/bin/env bash
# The long soaks: builds the ASan/UBSan daemon (build/asan, as scripts/test.sh does) and runs
# against it for [seconds] each (default 300) tests/integration/soak.py (16 connections doing
# set/get/mg/delete/incr/cas on overlapping keys through eviction (-m 8) and expiry (TTLs of
# 1-3 s); every read must be a miss or a value some client wrote for that key), then
# tests/integration/soak_stampede.py (the meta and classic read-through protocols with leases,
# stale values, dying holders, flash and a restart, every reply checked against a ledger).
# Prints the operations and verified reads. scripts/test.sh runs the same soaks for 20 s.
#   scripts/soak.sh [seconds]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${1:-300}"
cd "$REPO_ROOT"
ensure_deps
echo "== sanitizer build (build/asan: address,undefined, no jemalloc)"
(build build/asan --enable-sanitizers=address,undefined --without-jemalloc CXXFLAGS="-g -O1") ||
  die "sanitizer build failed"
for soak in soak.py soak_stampede.py; do
  echo "== $soak, $seconds s"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    HERDLESS_SANITIZED=1 HERDLESS_BIN="$REPO_ROOT/build/asan/herdless" \
    /usr/bin/python3 "tests/integration/$soak" "$seconds" || exit 1
done
