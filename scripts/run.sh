#!/usr/bin/env bash
# Builds the release daemon and runs it in the foreground on 127.0.0.1:11211.
# Extra arguments are passed to herdless (e.g. scripts/run.sh -m 256 -t 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_deps
build build/release
user_args=()
[ "$(id -u)" -eq 0 ] && user_args=(-u nobody)
exec "$REPO_ROOT/build/release/herdless" -l 127.0.0.1 -p 11211 "${user_args[@]}" "$@"
