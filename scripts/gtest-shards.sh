#!/usr/bin/env bash
# scripts/gtest-shards.sh N PROGRAM [ARGS...]: runs a GoogleTest program as N shards at once
# (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX: each shard runs every Nth test), for a slow build
# such as ThreadSanitizer's on a machine with N cores. Prints each shard's output in turn and
# fails if any shard failed.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 N PROGRAM [ARGS...]" >&2; exit 2; }
shards="$1"
shift
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" "$@" >"$dir/$i" 2>&1 &
  pids+=($!)
done
rc=0
for ((i = 0; i < shards; i++)); do
  wait "${pids[$i]}" || rc=1
  echo "== shard $((i + 1)) of $shards"
  cat "$dir/$i"
done
exit $rc
