#!/bin/sh
# Runs memcached's own t/ suite (its t/*.t files and t/lib/MemcachedTest.pm) against herdless,
# the server started as the suite starts memcached. Needs a memcached source tree (for t/ and
# timedrun.c) and perl's prove; not run in CI.
#
#   scripts/memcached-t.sh /opt/src/memcached-1.6.18 [t/file.t ...]
#
# Without files: every t/*.t but the extstore, proxy, TLS and whitespace ones. Each file is
# bounded to $T_FILE_TIMEOUT seconds (default 180: watcher.t hangs rather than fails). Prints
# prove's verdict per file and "memcached-t: <passed>/<run> files passed". HERDLESS_BIN picks
# the binary (default build/release/herdless); HERDLESS_ARGS are added to every start (e.g.
# "-o compat=1.6.45" for 1.6.45's t/).
set -eu
repo="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:?usage: scripts/memcached-t.sh <memcached source dir> [t/file.t ...]}"
shift
bin="${HERDLESS_BIN:-$repo/build/release/herdless}"
[ -x "$bin" ] || { echo "no herdless binary at $bin" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src/t" "$work/t"
cc -O2 -o "$work/timedrun" "$src/timedrun.c"
# The suite runs $builddir/memcached-debug. memcached's harness adds -o relaxed_privileges
# (memcached's seccomp switch), which herdless does not have: dropped here.
cat > "$work/memcached-debug" <<WRAP
#!/bin/sh
n=\$#
i=0
while [ \$i -lt \$n ]; do
  a="\$1"; shift; i=\$((i + 1))
  if [ "\$a" = "-o" ] && [ \$i -lt \$n ] && [ "\$1" = "relaxed_privileges" ]; then
    shift; i=\$((i + 1)); continue
  fi
  set -- "\$@" "\$a"
done
exec "$bin" \$HERDLESS_ARGS "\$@"
WRAP
chmod +x "$work/memcached-debug"
export HERDLESS_ARGS="${HERDLESS_ARGS:-}"
cd "$work"
if [ $# -eq 0 ]; then
  set -- $(ls t/*.t | grep -Ev 'extstore|proxy|ssl|tls|whitespace')
fi
run=0
passed=0
for f in "$@"; do
  f="t/$(basename "$f")"
  run=$((run + 1))
  if timeout "${T_FILE_TIMEOUT:-180}" prove "$f" > "$work/out" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $f"
  else
    echo "FAIL $f"
    grep -E "^(not ok|# +Failed test|Failed|t/.*Wstat)" "$work/out" | head -20 | sed 's/^/    /'
  fi
done
echo "memcached-t: $passed/$run files passed"
