#!/usr/bin/env bash
# The whole test gate: first the house's size rules (scripts/check-size.py: files <= 800 lines,
# functions <= 80), then a release build + `make check` (unit + integration tests) + a check that
# the release tarball carries every file of the checkout, then an
# ASan/UBSan build (no jemalloc) running the same tests against the instrumented daemon plus
# the two 20 s soaks (tests/integration/soak.py, soak_stampede.py); a ThreadSanitizer build
# running the unit tests, the concurrency, stampede, snapshot and TLS tests and the two
# soaks; then every libFuzzer target for 10 s (scripts/fuzz.sh; scripts/soak.sh and
# scripts/fuzz.sh run longer). Stops at the first failing stage. The last line is always
# "N passed, N failed", counting test programs (the size check, unit_tests, each
# tests/integration/test_*.py, each soak, each fuzz target) per build.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

passed=0
failed=0

# A stage's heading, with the time since the start: where a slow run spent its minutes.
heading() {
  printf '== %s (at %dm%02ds)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60))
}

finish() {
  heading "end"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "${1:-0}" -eq 0 ]
  exit $?
}

stage_failed() {
  echo "FAILED: $*" >&2
  [ "$failed" -eq 0 ] && failed=1  # a stage that fails before running tests counts as one
  finish 1
}

# Adds the "integration-result: PASS|FAIL <file>" lines of tests/integration/run_all.sh's
# output in file $1 to the counters: one test program per file.
count_integration_results() {
  local line
  [ -f "$1" ] || return 0
  while IFS= read -r line; do
    case "$line" in
      "integration-result: PASS "*) passed=$((passed + 1)) ;;
      "integration-result: FAIL "*) failed=$((failed + 1)) ;;
    esac
  done <"$1"
}

# Shows what the failing files of a run_all.sh output (file $1) printed, whole: run_all.sh
# repeats it at the end, after "==== failing files' output" (the last lines if it has none).
show_integration_failures() {
  if grep -q "^==== failing files' output" "$1"; then
    sed -n "/^==== failing files' output/,\$p" "$1" >&2
  else
    tail -n 300 "$1" >&2
  fi
}

# Adds the results of one `make check` run in build dir $1 to the counters.
count_results() {
  local dir="$1" trs
  trs="$dir/tests/unit_tests.trs"
  if [ -f "$trs" ]; then
    if grep -q '^:test-result: PASS' "$trs"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  fi
  count_integration_results "$dir/tests/integration/run_all.sh.log"
}

# Shows the logs of the failing tests of a `make check` run in build dir $1.
show_failures() {
  local dir="$1" trs
  for trs in "$dir"/tests/*.trs "$dir"/tests/integration/*.trs; do
    [ -f "$trs" ] || continue
    if ! grep -q '^:test-result: PASS' "$trs"; then
      echo "======== ${trs%.trs}.log ========" >&2
      case "$trs" in
        */run_all.sh.trs) show_integration_failures "${trs%.trs}.log" ;;
        *) tail -n 300 "${trs%.trs}.log" >&2 ;;
      esac
    fi
  done
}

# Runs `make check` in build dir $1 (relative to the repo root) with the given environment.
check_in() {
  local rel="$1" label="$2"
  local dir="$REPO_ROOT/$rel"
  shift 2
  heading "$label: make check"
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

# Runs a test command outside `make check` (label, a counter, then env assignments and the
# command) with its output in a temporary file; `<counter> <file> <exit status>` counts it and
# shows what it printed.
run_logged() {
  local label="$1" counter="$2" out rc=0
  shift 2
  heading "$label"
  out="$(mktemp)"
  env "$@" >"$out" 2>&1 || rc=$?
  "$counter" "$out" "$rc"
  [ $rc -eq 0 ] || echo "FAIL: $label" >&2
  rm -f "$out"
  return $rc
}

# One test program: its output's last lines (all of it if it failed).
count_program() {
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
    tail -n 3 "$1"
  else
    failed=$((failed + 1))
    tail -n 200 "$1" >&2
  fi
}

# tests/integration/run_all.sh: each file it ran; the failing files' output whole.
count_integration() {
  count_integration_results "$1"
  if [ "$2" -eq 0 ]; then
    grep -E '^integration(-result)?: ' "$1"
  else
    show_integration_failures "$1"
  fi
}

# Runs one test program (label, then env assignments and the command) and counts it.
run_counted() {
  local label="$1"
  shift
  run_logged "$label" count_program "$@"
}

# Runs tests/integration/run_all.sh (label, then env assignments, the script and the files to
# run), as many at a time as it runs; counts each file.
run_integration() {
  local label="$1"
  shift
  run_logged "$label" count_integration "$@"
}

PYTHON=/usr/bin/python3  # as tests/integration/run_all.sh
ASAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 HERDLESS_SANITIZED=1)
TSAN_ENV=(TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 HERDLESS_SANITIZED=1)

cd "$REPO_ROOT"
heading "dependencies"
ensure_deps

run_counted "size rules (scripts/check-size.py)" "$PYTHON" scripts/check-size.py ||
  stage_failed "size rules"

heading "release build (build/release)"
(build build/release) || stage_failed "release build"
check_in build/release release
# What `make distcheck` would find missing, without its 3 minutes of building (run
# `make -C build/release distcheck` for the whole thing).
run_counted "release: the tarball carries every file (scripts/check-dist.sh)" \
  bash scripts/check-dist.sh build/release || stage_failed "release tarball contents"
# make check ran the suite on the daemon's default I/O path (epoll); the whole suite once more
# with -o io=auto, io_uring where the kernel allows it (run_all.sh's log says; about 2 minutes).
run_integration "release: the integration suite on -o io=auto (io_uring)" HERDLESS_IO=auto \
  HERDLESS_BIN="$REPO_ROOT/build/release/herdless" HERDLESS_SRCDIR="$REPO_ROOT" \
  sh tests/integration/run_all.sh || stage_failed "integration tests on the io_uring path"

heading "sanitizer build (build/asan: address,undefined, no jemalloc)"
(build build/asan --enable-sanitizers=address,undefined --without-jemalloc CXXFLAGS="-g -O1") ||
  stage_failed "sanitizer build"
check_in build/asan asan "${ASAN_ENV[@]}"
run_counted "asan: soak, 20 s" "${ASAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/asan/herdless" \
  "$PYTHON" tests/integration/soak.py 20 || stage_failed "asan soak"
run_counted "asan: stampede soak, 20 s" "${ASAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/asan/herdless" \
  "$PYTHON" tests/integration/soak_stampede.py 20 || stage_failed "asan stampede soak"
# The io_uring path under ASan: the hostile clients and the transports (about 30 s).
run_integration "asan: test_hostile.py test_transports.py on -o io=uring" "${ASAN_ENV[@]}" \
  HERDLESS_IO=uring HERDLESS_BIN="$REPO_ROOT/build/asan/herdless" HERDLESS_SRCDIR="$REPO_ROOT" \
  sh tests/integration/run_all.sh test_hostile.py test_transports.py ||
  stage_failed "asan integration tests on the io_uring path"

heading "thread sanitizer build (build/tsan: thread, no jemalloc)"
(build build/tsan --enable-sanitizers=thread --without-jemalloc CXXFLAGS="-g -O1" &&
 cd build/tsan && quietly make -j"$JOBS" tests/unit_tests) || stage_failed "tsan build"
run_counted "tsan: unit_tests, two shards at once" "${TSAN_ENV[@]}" \
  bash scripts/gtest-shards.sh 2 build/tsan/tests/unit_tests --gtest_brief=1 ||
  stage_failed "tsan unit tests"
TSAN_INTEGRATION=(test_concurrency.py test_stampede.py test_snapshot.py test_tls.py)
run_integration "tsan: ${TSAN_INTEGRATION[*]}" "${TSAN_ENV[@]}" \
  HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" HERDLESS_SRCDIR="$REPO_ROOT" \
  sh tests/integration/run_all.sh "${TSAN_INTEGRATION[@]}" || stage_failed "tsan integration tests"
run_counted "tsan: soak, 20 s" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/soak.py 20 || stage_failed "tsan soak"
run_counted "tsan: stampede soak, 20 s" "${TSAN_ENV[@]}" HERDLESS_BIN="$REPO_ROOT/build/tsan/herdless" \
  "$PYTHON" tests/integration/soak_stampede.py 20 || stage_failed "tsan stampede soak"

heading "fuzzing (build/fuzz: libFuzzer + ASan/UBSan, 10 s per target)"
fuzz_out="$(mktemp)"
fuzz_rc=0
bash scripts/fuzz.sh 10 >"$fuzz_out" 2>&1 || fuzz_rc=$?
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
