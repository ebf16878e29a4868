#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (-fsanitize=fuzzer,address,undefined) into
# build/fuzz and runs each for [seconds] (default 300), $JOBS at a time:
#   classic   tests/fuzz/parser_fuzzer.cc    seeds tests/fuzz/corpus/classic, classic.dict
#   meta      tests/fuzz/parser_fuzzer.cc    seeds tests/fuzz/corpus/meta,    meta.dict
#   lease     tests/fuzz/parser_fuzzer.cc    seeds tests/fuzz/corpus/lease,   lease.dict
#   executor  tests/fuzz/executor_fuzzer.cc  seeds tests/fuzz/corpus/executor, all three dicts
#   binary    tests/fuzz/binary_fuzzer.cc    seeds tests/fuzz/corpus/binary,  binary.dict
#   mixed     tests/fuzz/executor_fuzzer.cc  seeds tests/fuzz/corpus/binary and executor, all dicts
#   cgroup    tests/fuzz/cgroup_fuzzer.cc    seeds tests/fuzz/corpus/cgroup (cpu.max, /proc/self/cgroup)
#   auth      tests/fuzz/auth_fuzzer.cc      seeds tests/fuzz/corpus/auth,     auth.dict (-Y, -S)
#   snapshot  tests/fuzz/snapshot_fuzzer.cc  seeds tests/fuzz/corpus/snapshot (the -e file reader)
#   peer      tests/fuzz/peer_reply_fuzzer.cc seeds tests/fuzz/corpus/peer (warm peers' replies)
#   flash     tests/fuzz/flash_page_fuzzer.cc seeds tests/fuzz/corpus/flash (the flash page reader)
#   ring      tests/fuzz/ring_config_fuzzer.cc seeds tests/fuzz/corpus/ring (nutcracker YAML, -o ring)
#   options   tests/fuzz/options_fuzzer.cc seeds tests/fuzz/corpus/options (the command line, -o keys)
#   journal   tests/fuzz/journal_fuzzer.cc seeds tests/fuzz/corpus/journal (-e's <file>.changes)
# (The parser target reads every command family; the seeds and dictionary steer each run to
# one. The executor target picks the protocol from the stream's first byte, as a connection
# does, so "mixed" runs binary and text streams, each mutated into the other's bytes.) Every run also replays tests/fuzz/corpus/parser and tests/fuzz/corpus/regressions.
# New inputs accumulate in build/fuzz/corpus/<target> (not committed); a crash stops the
# script with the input saved in build/fuzz/crashes/ — fix it, then add that input to
# tests/fuzz/corpus/regressions/.
# Prints "fuzz-result: PASS|FAIL <target> <executions> executions in <s> s" per target.
#   scripts/fuzz.sh [seconds-per-target] [target...]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(classic meta lease executor binary mixed cgroup auth snapshot peer flash ring options journal)

FUZZ_DIR="$REPO_ROOT/build/fuzz"
SEEDS="$REPO_ROOT/tests/fuzz"
CXX="${FUZZ_CXX:-clang++}"
CXXFLAGS=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
          -fno-sanitize-recover=undefined -I"$REPO_ROOT" -I"$FUZZ_DIR")
# The .cc files of libstorage.a and libprotocol.a, as Makefile.am lists them.
mapfile -t LIB_SOURCES < <(
  sed -n '/^lib\(storage\|protocol\)_a_SOURCES/,/^$/p' "$REPO_ROOT/Makefile.am" |
    tr ' \t\\' '\n\n\n' | grep '\.cc$')

# The command line's parser, its `stats settings` lines and the daemon files its value readers
# live in (-o warm_peer's list, -o metrics' address; they bring libevent and the log along).
OPTIONS_SOURCES=(daemon/options.cc daemon/option_table.cc daemon/extstore_options.cc
                 daemon/tuning_options.cc daemon/settings_stats.cc daemon/warm_peer.cc
                 daemon/metrics_server.cc daemon/log.cc)

# Compiles one source into build/fuzz/obj unless its object is newer than it and every header.
compile() {
  local src="$1" obj="$FUZZ_DIR/obj/${1//\//_}.o"
  if [ -f "$obj" ] && [ "$obj" -nt "$REPO_ROOT/$src" ] &&
     [ -z "$(find "$REPO_ROOT/protocol" "$REPO_ROOT/storage" "$REPO_ROOT/daemon" "$REPO_ROOT/tests/unit" -name '*.h' -newer "$obj")" ]; then
    return 0
  fi
  quietly "$CXX" "${CXXFLAGS[@]}" -fsanitize=fuzzer-no-link -c "$REPO_ROOT/$src" -o "$obj"
}

build_fuzzers() {
  command -v "$CXX" >/dev/null || die "no $CXX (Debian package clang)"
  mkdir -p "$FUZZ_DIR/obj" "$FUZZ_DIR/corpus" "$FUZZ_DIR/crashes"
  # The library code reads config.h only for HERDLESS_JEMALLOC, which stays off here; the
  # command line's for HERDLESS_TLS, on so that the ssl_* options are parsed too.
  local config=$'/* fuzz build: system allocator, TLS options */\n#define HERDLESS_TLS 1'
  [ "$(cat "$FUZZ_DIR/config.h" 2>/dev/null)" = "$config" ] || printf '%s\n' "$config" >"$FUZZ_DIR/config.h"
  export -f compile quietly die
  export CXX FUZZ_DIR REPO_ROOT
  export CXXFLAGS_LIST="${CXXFLAGS[*]}"
  local src
  for src in "${LIB_SOURCES[@]}" tests/fuzz/parser_fuzzer.cc tests/fuzz/executor_fuzzer.cc \
             tests/fuzz/binary_fuzzer.cc daemon/cpu_limit.cc tests/fuzz/cgroup_fuzzer.cc \
             tests/fuzz/auth_fuzzer.cc tests/fuzz/snapshot_fuzzer.cc tests/fuzz/peer_reply_fuzzer.cc \
             tests/fuzz/flash_page_fuzzer.cc tests/fuzz/ring_config_fuzzer.cc \
             "${OPTIONS_SOURCES[@]}" tests/fuzz/options_fuzzer.cc tests/fuzz/journal_fuzzer.cc; do
    echo "$src"
  done | xargs -P "$JOBS" -I{} bash -c 'CXXFLAGS=($CXXFLAGS_LIST); compile "$1"' _ {} ||
    die "compiling the fuzz targets failed"
  local xxhash
  xxhash="$(pkg-config --libs libxxhash)"
  local libs=() name
  for src in "${LIB_SOURCES[@]}"; do libs+=("$FUZZ_DIR/obj/${src//\//_}.o"); done
  for name in parser_fuzzer executor_fuzzer binary_fuzzer cgroup_fuzzer auth_fuzzer snapshot_fuzzer \
              peer_reply_fuzzer flash_page_fuzzer ring_config_fuzzer options_fuzzer journal_fuzzer; do
    local main="$FUZZ_DIR/obj/tests_fuzz_$name.cc.o" bin="$FUZZ_DIR/$name"
    local objs=("${libs[@]}")
    # The cgroup parsers are the daemon's, alone: no protocol or storage code.
    [ "$name" = cgroup_fuzzer ] && objs=("$FUZZ_DIR/obj/daemon_cpu_limit.cc.o")
    local extra_libs=""
    if [ "$name" = options_fuzzer ]; then
      for src in "${OPTIONS_SOURCES[@]}"; do objs+=("$FUZZ_DIR/obj/${src//\//_}.o"); done
      extra_libs="$(pkg-config --libs libevent)"
    fi
    local stale=0 o
    for o in "$main" "${objs[@]}"; do [ "$o" -nt "$bin" ] && stale=1; done
    [ -x "$bin" ] && [ $stale -eq 0 ] && continue
    # shellcheck disable=SC2086
    quietly "$CXX" "${CXXFLAGS[@]}" -fsanitize=fuzzer "$main" "${objs[@]}" $xxhash $extra_libs -lpthread \
      -o "$bin" || die "linking $name failed"
  done
  cat "$SEEDS"/classic.dict "$SEEDS"/meta.dict "$SEEDS"/lease.dict "$SEEDS"/binary.dict \
    >"$FUZZ_DIR/all.dict"
}

# Runs target $1 for $seconds; prints its fuzz-result line; false if it found something.
run_target() {
  local name="$1" bin dict
  case "$name" in
    classic|meta|lease) bin="$FUZZ_DIR/parser_fuzzer"; dict="$SEEDS/$name.dict" ;;
    executor|mixed) bin="$FUZZ_DIR/executor_fuzzer"; dict="$FUZZ_DIR/all.dict" ;;
    binary) bin="$FUZZ_DIR/binary_fuzzer"; dict="$SEEDS/binary.dict" ;;
    cgroup) bin="$FUZZ_DIR/cgroup_fuzzer"; dict="" ;;
    auth) bin="$FUZZ_DIR/auth_fuzzer"; dict="$SEEDS/auth.dict" ;;
    snapshot) bin="$FUZZ_DIR/snapshot_fuzzer"; dict="" ;;
    peer) bin="$FUZZ_DIR/peer_reply_fuzzer"; dict="" ;;
    flash) bin="$FUZZ_DIR/flash_page_fuzzer"; dict="" ;;
    ring) bin="$FUZZ_DIR/ring_config_fuzzer"; dict="" ;;
    options) bin="$FUZZ_DIR/options_fuzzer"; dict="" ;;
    journal) bin="$FUZZ_DIR/journal_fuzzer"; dict="" ;;
    *) die "unknown fuzz target $name (classic meta lease executor binary mixed cgroup auth snapshot peer flash ring options journal)" ;;
  esac
  local work="$FUZZ_DIR/corpus/$name" log="$FUZZ_DIR/$name.log"
  mkdir -p "$work"
  local seeds=("$SEEDS/corpus/$name")
  [ "$name" = mixed ] && seeds=("$SEEDS/corpus/binary" "$SEEDS/corpus/executor")
  [ -d "$SEEDS/corpus/parser" ] && seeds+=("$SEEDS/corpus/parser")
  [ -d "$SEEDS/corpus/regressions" ] && seeds+=("$SEEDS/corpus/regressions")
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 ${dict:+-dict="$dict"} -artifact_prefix="$FUZZ_DIR/crashes/$name-" \
    "$work" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  local runs time
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  time="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)"
  if [ $rc -ne 0 ]; then
    tail -n 80 "$log" >&2
    echo "fuzz-result: FAIL $name ${runs:-?} executions (exit $rc; input in $FUZZ_DIR/crashes/)"
    return 1
  fi
  echo "fuzz-result: PASS $name ${runs:-?} executions in ${time:-$seconds} s"
}

# Runs the targets $JOBS at a time (each libFuzzer run is one process on one core), printing
# each target's lines in the order given once it is done.
main() {
  build_fuzzers
  local status=0 i t
  local -a pids=() outs=()
  for i in "${!targets[@]}"; do
    outs[i]="$(mktemp)"
    run_target "${targets[i]}" >"${outs[i]}" 2>&1 &
    pids[i]=$!
    if [ $(((i + 1) % JOBS)) -eq 0 ]; then wait "${pids[@]:i+1-JOBS:JOBS}"; fi
  done
  for i in "${!targets[@]}"; do
    wait "${pids[i]}" || status=1
    cat "${outs[i]}"
    rm -f "${outs[i]}"
  done
  return $status
}

main
