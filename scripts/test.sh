#!/usr/bin/env bash
# The whole test gate: release build + `make check` (unit + integration tests), then an
# ASan/UBSan build (no jemalloc) running the same tests against the instrumented daemon.
# Stops at the first failing stage. The last line is always "N passed, N failed", counting
# test programs (unit_tests, each tests/integration/test_*.py) per build.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

passed=0
failed=0

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "${1:-0}" -eq 0 ]
  exit $?
}

stage_failed() {
  echo "FAILED: $*" >&2
  [ "$failed" -eq 0 ] && failed=1  # a stage that fails before running tests counts as one
  finish 1
}

# Adds the results of one `make check` run in build dir $1 to the counters.
count_results() {
  local dir="$1" trs log line
  trs="$dir/tests/unit_tests.trs"
  if [ -f "$trs" ]; then
    if grep -q '^:test-result: PASS' "$trs"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  fi
  log="$dir/tests/integration/run_all.sh.log"
  if [ -f "$log" ]; then
    while IFS= read -r line; do
      case "$line" in
        "integration-result: PASS "*) passed=$((passed + 1)) ;;
        "integration-result: FAIL "*) failed=$((failed + 1)) ;;
      esac
    done <"$log"
  fi
}

# Shows the logs of the failing tests of a `make check` run in build dir $1.
show_failures() {
  local dir="$1" trs
  for trs in "$dir"/tests/*.trs "$dir"/tests/integration/*.trs; do
    [ -f "$trs" ] || continue
    if ! grep -q '^:test-result: PASS' "$trs"; then
      echo "======== ${trs%.trs}.log ========" >&2
      tail -n 300 "${trs%.trs}.log" >&2
    fi
  done
}

# Runs `make check` in build dir $1 (relative to the repo root) with the given environment.
check_in() {
  local rel="$1" label="$2"
  local dir="$REPO_ROOT/$rel"
  shift 2
  echo "== $label: make check"
  rm -f "$dir"/tests/*.trs "$dir"/tests/*.log "$dir"/tests/integration/*.trs \
        "$dir"/tests/integration/*.log
  local rc=0 out
  out="$(mktemp)"
  (cd "$dir" && env "$@" make -j"$JOBS" check) >"$out" 2>&1 || rc=$?
  count_results "$dir"
  if [ $rc -ne 0 ]; then
    tail -n 60 "$out" >&2
    show_failures "$dir"
    rm -f "$out"
    stage_failed "$label: make check failed in $rel (logs above)"
  fi
  grep -E '^(PASS|FAIL|XPASS|XFAIL|SKIP|ERROR): ' "$out" || true
  rm -f "$out"
}

cd "$REPO_ROOT"
echo "== dependencies"
ensure_deps

echo "== release build (build/release)"
(build build/release) || stage_failed "release build"
check_in build/release release

echo "== sanitizer build (build/asan: address,undefined, no jemalloc)"
(build build/asan --enable-sanitizers=address,undefined --without-jemalloc CXXFLAGS="-g -O1") ||
  stage_failed "sanitizer build"
check_in build/asan asan \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  HERDLESS_SANITIZED=1

finish 0
