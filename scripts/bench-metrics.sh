#!/usr/bin/env bash
# The cost of Prometheus scrapes (-o metrics): memtier_benchmark against herdless for
# $SECONDS_PER_RUN s, alternately without and with a scrape of /metrics every 100 ms, $RUNS
# times each; prints each run's ops/s and p99, the ratios (scraped / unscraped, medians), and
# the scrape's own size and time. A benchmark, not a test: figures go to docs/benchmarks.md.
# Needs memtier_benchmark ($MEMTIER, default /opt/memtier/bin/memtier_benchmark) and curl.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MEMTIER="${MEMTIER:-/opt/memtier/bin/memtier_benchmark}"
RUNS="${RUNS:-3}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-8}"
build build/release
port=$((20000 + RANDOM % 10000))
mport=$((port + 1))
user=(); [ "$(id -u)" -eq 0 ] && user=(-u nobody)
"$REPO_ROOT/build/release/herdless" "${user[@]}" -l 127.0.0.1 -p "$port" -t 2 -m 256 \
  -o "metrics=$mport" &
herdless_pid=$!
scraper_pid=
cleanup() {
  [ -n "$scraper_pid" ] && kill "$scraper_pid" 2>/dev/null
  kill "$herdless_pid" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$mport/metrics" >/dev/null && break; sleep 0.1; done

run() {   # prints "<ops/s> <p99 ms>"
  "$MEMTIER" -s 127.0.0.1 -p "$port" -P memcache_text -t 2 -c 8 --ratio=1:9 \
    --key-maximum=100000 -d 100 --test-time="$SECONDS_PER_RUN" --hide-histogram 2>/dev/null |
    awk '$1 == "Totals" { print $2, $(NF-2) }'
}
scrape_loop() {
  while :; do curl -s -o /dev/null "http://127.0.0.1:$mport/metrics"; sleep 0.1; done
}

plain=() scraped=()
for i in $(seq "$RUNS"); do
  plain+=("$(run)")
  scrape_loop & scraper_pid=$!
  scraped+=("$(run)")
  kill "$scraper_pid"; wait "$scraper_pid" 2>/dev/null || true; scraper_pid=
  echo "run $i: without scrapes ${plain[-1]}   with a scrape every 100 ms ${scraped[-1]}   (ops/s p99-ms)"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ops_ratio=$(paste <(printf '%s\n' "${scraped[@]}" | cut -d' ' -f1) <(printf '%s\n' "${plain[@]}" | cut -d' ' -f1) |
  awk '{ print $1 / $2 }' | median)
p99_ratio=$(paste <(printf '%s\n' "${scraped[@]}" | cut -d' ' -f2) <(printf '%s\n' "${plain[@]}" | cut -d' ' -f2) |
  awk '{ print $1 / $2 }' | median)
echo "median ratios, scraped / unscraped: ops/s $ops_ratio, p99 $p99_ratio"
curl -s -o /dev/null -w 'one scrape: %{size_download} bytes in %{time_total} s\n' "http://127.0.0.1:$mport/metrics"
