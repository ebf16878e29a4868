#!/usr/bin/env bash
# The stampede comparison of the README: herdless in every protected mode
# against Debian's memcached, with scripts/stampede-bench.
#
# Builds herdless optimised (build/release), then for each run starts a fresh
# server with the -o options that mode needs, runs the bench, and stops it:
#   memcached                                     classic, meta (mg N)
#   herdless -o stale_grace=10,xfetch_beta=1      meta, xfetch (mg Y1), lease
#   herdless -o classic_stampede=stale,stale_grace=10,xfetch_beta=1   stale
#   herdless -o classic_stampede=wait             wait (no stale value: readers park)
# and the crashed-holder scenario (--crash: the first lease holder never stores):
#   memcached                                     meta
#   herdless -o lease_timeout=1,stale_grace=10    meta, lease
#   herdless -o classic_stampede=wait,lease_timeout=1   wait
# Writes the table to $OUT/table.md (and prints it) and the chart of backend
# recomputes over time to docs/stampede.png (gnuplot).
#
# Usage: scripts/stampede-compare.sh [stampede-bench options, e.g. --duration 10]
#
# With --rates first, the multi-rate scenario instead (scripts/stampede-bench-rates:
# 784 keys read 0.2 to 500 times a second, TTL 10 s, 100 ms recompute, one busy
# read-through client whose CPU share and lag each run reports), one fresh
# server per line:
#   memcached                          plain expiry (mg N30), R3 (mg N30 R3)
#   herdless -o stale_grace=30         xfetch (mg N30 Y1), adaptive (mg N30 Yr)
#   herdless -o classic_stampede=stale,refresh_ahead=on,stale_grace=30
#                                      classic (get; set on END)
# Table: $OUT/rates.md; chart of misses + stale reads per rate band:
# docs/stampede-rates.png.
#   scripts/stampede-compare.sh --rates [stampede-bench-rates options, e.g. --duration 30]
# OUT defaults to build/stampede; HERDLESS=<binary> uses that daemon instead of
# building one. Servers run with -t 4, as the bench's clients
# and the servers share this machine's cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEPS+=(gnuplot-nox)   # only this script draws charts
ensure_deps
if [ -z "${HERDLESS:-}" ]; then   # HERDLESS=/path/to/herdless skips the build
  build build/release
  HERDLESS="$REPO_ROOT/build/release/herdless"
fi
BENCH="$REPO_ROOT/scripts/stampede-bench"
OUT="${OUT:-$REPO_ROOT/build/stampede}"
CHART="$REPO_ROOT/docs/stampede.png"
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.dat
user=()
[ "$(id -u)" -eq 0 ] && user=(-u nobody)

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server <binary> [args...]: starts it on a free port (sets $port) and
# waits until it accepts.
start_server() {
  port="$(free_port)"
  "$@" "${user[@]}" -l 127.0.0.1 -p "$port" -t 4 >"$OUT/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    if /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  cat "$OUT/server.log" >&2
  die "server did not start: $*"
}

# run <json name> <label> <modes> <server command...> -- [bench options]
run() {
  local name="$1" label="$2" modes="$3"
  shift 3
  local server=()
  while [ "$1" != "--" ]; do
    server+=("$1")
    shift
  done
  shift
  start_server "${server[@]}"
  echo "# ${server[*]##*/}" >&2
  /usr/bin/python3 "$BENCH" --port "$port" --label "$label" --modes "$modes" --no-header \
    --json "$OUT/$name.json" "$@" "${BENCH_ARGS[@]}" | tee -a "$OUT/table.md"
  stop_server
}

if [ "${1:-}" = "--rates" ]; then
  shift
  RATES="$REPO_ROOT/scripts/stampede-bench-rates"
  TABLE="$OUT/rates.md"
  rm -f "$OUT/rates.json"
  RATES_ARGS=("$@")
  # rates_run <label> <mode> <server command...>: one mode against a fresh server.
  rates_run() {
    local label="$1" mode="$2"
    shift 2
    start_server "$@"
    echo "# ${*##*/} -- $mode" >&2
    /usr/bin/python3 "$RATES" --port "$port" --label "$label" --mode "$mode" --no-header \
      --json "$OUT/rates.json" "${RATES_ARGS[@]}" | tee -a "$TABLE"
    stop_server
  }
  {
    echo "scripts/stampede-bench-rates ${RATES_ARGS[*]:-} (defaults: 784 keys, TTL 10 s, 100 ms recompute, 100 us of client work a read, 30 s warm-up, 60 s measured)"
    echo
    /usr/bin/python3 -c 'import runpy, sys; print(runpy.run_path(sys.argv[1], run_name="bench")["HEADER"])' "$RATES"
  } | tee "$TABLE"
  rates_run memcached plain memcached -U 0
  rates_run memcached R3 memcached -U 0
  rates_run herdless xfetch "$HERDLESS" -o stale_grace=30
  rates_run herdless adaptive "$HERDLESS" -o stale_grace=30
  rates_run herdless classic "$HERDLESS" -o classic_stampede=stale,refresh_ahead=on,stale_grace=30
  # Chart: misses + stale reads per band (log scale; 0 drawn at the floor).
  /usr/bin/python3 "$RATES" --chart-data "$OUT/rates.json" >"$OUT/rates.dat"
  cols="$(head -1 "$OUT/rates.dat" | wc -w)"
  gnuplot <<EOF
set terminal pngcairo size 900,520 font ",10"
set output '$REPO_ROOT/docs/stampede-rates.png'
set title "Reads that saw a miss or a stale value, per read-rate band (TTL 10 s, 100 ms recompute)"
set xlabel "reads per second per key"
set ylabel "% of reads (log scale; 0 drawn at 0.001)"
set logscale y
set yrange [0.001:100]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
set grid ytics
plot for [i=2:$cols] '$OUT/rates.dat' using i:xtic(1) title columnheader(i)
EOF
  echo "table: $TABLE, chart: docs/stampede-rates.png"
  exit 0
fi

BENCH_ARGS=("$@")
header() {
  /usr/bin/python3 -c 'import runpy, sys; print(runpy.run_path(sys.argv[1], run_name="bench")["HEADER"])' "$BENCH"
}
{
  echo "scripts/stampede-bench ${BENCH_ARGS[*]:-} (defaults: 500 clients, TTL 2 s, 100 ms recompute, 20 s per mode)"
  echo
  header
} | tee "$OUT/table.md"
run memcached memcached classic,meta memcached -U 0 --
run herdless herdless meta,xfetch,lease "$HERDLESS" -o stale_grace=10,xfetch_beta=1 --
run herdless-stale herdless stale "$HERDLESS" -o classic_stampede=stale,stale_grace=10,xfetch_beta=1 --
run herdless-wait herdless wait "$HERDLESS" -o classic_stampede=wait --
{
  echo
  echo "Crashed holder (--crash: the first lease holder never stores):"
  echo
  header
} | tee -a "$OUT/table.md"
run crash-memcached memcached meta memcached -U 0 -- --crash
run crash-herdless herdless meta,lease "$HERDLESS" -o lease_timeout=1,stale_grace=10 -- --crash
run crash-herdless-wait herdless wait "$HERDLESS" -o classic_stampede=wait,lease_timeout=1 -- --crash

# Chart: cumulative backend recomputes over time, one line per server and mode.
/usr/bin/python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
lines = []
for name in ("memcached", "herdless", "herdless-stale", "herdless-wait"):
    for r in json.load(open(os.path.join(out, name + ".json"))):
        title = "%s %s" % (r["server"], r["mode"])
        path = os.path.join(out, "%s-%s.dat" % (name, r["mode"]))
        with open(path, "w") as f:
            for i, t in enumerate(sorted(r["timeline"]), 1):
                f.write("%.3f %d\n" % (t, i))
        lines.append((path, title))
with open(os.path.join(out, "plots.txt"), "w") as f:
    for path, title in lines:
        f.write("%s\t%s\n" % (path, title))
EOF
plot=""
while IFS=$'\t' read -r path title; do
  plot+="${plot:+, }'$path' using 1:2 with steps lw 2 title '$title'"
done <"$OUT/plots.txt"
gnuplot <<EOF
set terminal pngcairo size 900,520 font ",10"
set output '$CHART'
set title "Backend recomputes over time: one hot key, 500 clients, TTL 2 s, 100 ms recompute"
set xlabel "seconds"
set ylabel "recomputes so far (log scale)"
set logscale y
set yrange [0.8:*]
set key top left
set grid
plot $plot
EOF
echo "table: $OUT/table.md, chart: $CHART"
