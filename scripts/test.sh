#!/usr/bin/env bash
# The whole test gate: release build + `make check` (unit + integration tests) + a check that
# the release tarball carries every file of the checkout, then an
# ASan/UBSan build (no jemalloc) running the same tests against the instrumented daemon plus
# a 20 s soak; a ThreadSanitizer build running the unit tests, the concurrency, stampede,
# snapshot and TLS tests and a 20 s soak; then every libFuzzer target for 15 s (scripts/fuzz.sh; scripts/soak.sh and
# scripts/fuzz.sh run longer). Stops at the first failing stage. The last line is always
# "N passed, N failed", counting test programs (unit_tests, each tests/integration/test_*.py,
# each soak, each fuzz target) per build.
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

# Runs one test program outside `make check` (label, then env assignments and the command);
# counts it and shows its output's last lines (all of it if it failed).
run_counted() {
  local label="$1" out rc=0
  shift
  echo "== $label"
  out="$(mktemp)"
  env "$@" >"$out" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    tail -n 3 "$out"
  else
    failed=$((failed + 1))
    tail -n 200 "$out" >&2
    echo "FAIL: $label" >&2
  fi
  rm -f "$out"
  return $rc
}

PYTHON=/usr/bin/python3  # as tests/integration/run_all.sh
ASAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 HERDLESS_SANITIZED=1)
TSAN_ENV=(TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 HERDLESS_SANITIZED=1)

cd "$REPO_ROOT"
echo "== dependencies"
ensure_deps

echo "== release build (build/release)"
(build build/release) || stage_failed "release build"
check_in build/release release
# What `make distcheck` would find missing, without its 3 minutes of building (run
# `make -C build/release distcheck` for the whole thing).
run_counted "release: the tarball carries every file (scripts/check-dist.sh)" \
  bash scripts/check-dist.sh build/release || stage_failed "release tarball contents"

echo "== sanitizer build (build/asan: address,undefined, no jemalloc)"
(build build/asan --enable-sanitizers=address,undefined --without-jemalloc CXXFLAGS="-g -O1") ||
  stage_failed "sanitizer build"
check_in build/asan asan "${ASAN_ENV[@]}"
run_counted "asan: soak, 20 s" "${ASAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/asan/herdless" \
  "$PYTHON" tests/integration/soak.py 20 || stage_failed "asan soak"

echo "== thread sanitizer build (build/tsan: thread, no jemalloc)"
(build build/tsan --enable-sanitizers=thread --without-jemalloc CXXFLAGS="-g -O1" &&
 cd build/tsan && quietly make -j"$JOBS" tests/unit_tests) || stage_failed "tsan build"
run_counted "tsan: unit_tests" "${TSAN_ENV[@]}" build/tsan/tests/unit_tests --gtest_brief=1 ||
  stage_failed "tsan unit tests"
run_counted "tsan: test_concurrency.py" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/test_concurrency.py || stage_failed "tsan concurrency test"
run_counted "tsan: test_stampede.py" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/test_stampede.py || stage_failed "tsan stampede test"
run_counted "tsan: test_snapshot.py" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/test_snapshot.py || stage_failed "tsan snapshot test"
run_counted "tsan: test_tls.py" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/test_tls.py || stage_failed "tsan tls test"
run_counted "tsan: soak, 20 s" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/soak.py 20 || stage_failed "tsan soak"

echo "== fuzzing (build/fuzz: libFuzzer + ASan/UBSan, 15 s per target)"
fuzz_out="$(mktemp)"
fuzz_rc=0
bash scripts/fuzz.sh 15 >"$fuzz_out" 2>&1 || fuzz_rc=$?
while IFS= read -r line; do
  case "$line" in
    "fuzz-result: PASS "*) passed=$((passed + 1)); echo "$line" ;;
    "fuzz-result: FAIL "*) failed=$((failed + 1)); echo "$line" ;;
  esac
done <"$fuzz_out"
if [ $fuzz_rc -ne 0 ]; then
  tail -n 100 "$fuzz_out" >&2
  rm -f "$fuzz_out"
  stage_failed "fuzzing"
fi
rm -f "$fuzz_out"

finish 0
