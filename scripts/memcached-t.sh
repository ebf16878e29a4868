#!/bin/sh
# memcached-t.sh: run a memcached source tree's own t/*.t suite against a server binary (a yardstick,
# run by hand; not part of scripts/test.sh). Usage:
#   scripts/memcached-t.sh [-s SRCDIR] [-b BINARY] [-a ARGS] [-t SECONDS] [-o LOGDIR] [FILE.t ...]
# SRCDIR defaults to /opt/src/memcached-1.6.18, BINARY to build/release/herdless, SECONDS (per file) to 120;
# ARGS are added to every server start (e.g. -a "-o compat=1.6.45" for 1.6.45's t/ where herdless has it).
# The tree's t/ is copied to a temporary directory outside the repository; in place of the tree's
# memcached-debug and timedrun go two small wrappers. The wrapper drops the harness's "-o relaxed_privileges"
# unless BINARY's -h lists it, and turns "-u root" into "-u nobody" unless BINARY's -V says memcached.
# Prints one line per file (PASS, FAIL with its first failing test, SKIP, TIMEOUT) and "N/M passed".
# Needs perl (core modules; the ssl_* files skip unless T_MEMD_SSL is set).
set -u
src=/opt/src/memcached-1.6.18
bin=build/release/herdless
limit=120
logdir=
extra=
while getopts s:b:a:t:o: opt; do
    case $opt in
    s) src=$OPTARG ;;
    b) bin=$OPTARG ;;
    a) extra=$OPTARG ;;
    t) limit=$OPTARG ;;
    o) logdir=$OPTARG ;;
    *) sed -n 3,6p "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ -f "$src/t/lib/MemcachedTest.pm" ] || { echo "no memcached t/ tree in $src" >&2; exit 2; }
bin=$(readlink -f "$bin") && [ -x "$bin" ] || { echo "no executable server binary" >&2; exit 2; }

work=$(mktemp -d /tmp/memcached-t.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cp -r "$src/t" "$work/t"
# line-lengths.t reads the tree's doc/protocol.txt.
[ -f "$src/doc/protocol.txt" ] && mkdir "$work/doc" && cp "$src/doc/protocol.txt" "$work/doc/"
[ -n "$logdir" ] || logdir=$work/logs
mkdir -p "$logdir" && logdir=$(cd "$logdir" && pwd)

# timedrun LIMIT CMD...: exec keeps the pid the harness kills the server's; the pid is noted so that a
# server whose file died before stopping it (a SIGPIPE, the time bound) is ended after the file.
printf '#!/bin/sh\necho $$ >>"%s/servers"\nshift\nexec "$@"\n' "$work" >"$work/timedrun"
# Debian's memcached (built without seccomp) and herdless both refuse relaxed_privileges; herdless refuses
# to run as root, so it gets -u nobody (and the pid file the harness made as root).
drop=1 nobody=1
"$bin" -h 2>/dev/null | grep -q relaxed_privileges && drop=0
case $("$bin" -V 2>/dev/null) in memcached\ *) nobody=0 ;; esac
cat >"$work/memcached-debug" <<EOF
#!/bin/sh
n=\$#
while [ \$n -gt 0 ]; do
    a=\$1; shift; n=\$((n - 1))
    if [ $drop = 1 ] && [ "\$a" = -o ] && [ "\${1-}" = relaxed_privileges ]; then shift; n=\$((n - 1)); continue; fi
    if [ $nobody = 1 ] && [ "\$a" = -u ] && [ "\${1-}" = root ]; then shift; n=\$((n - 1)); set -- "\$@" -u nobody; continue; fi
    # The pid file daemonize.t makes (as root, mode 0600) is for a server that stays root: hand it to nobody.
    if [ $nobody = 1 ] && [ "\$a" = -P ] && [ -f "\${1-}" ]; then chown nobody "\$1"; fi
    set -- "\$@" "\$a"
done
exec "$bin" $extra "\$@"
EOF
chmod +x "$work/timedrun" "$work/memcached-debug"

if [ $# -eq 0 ]; then
    set -- $(cd "$work" && ls t/*.t)
fi
pass=0 total=0 skip=0
for f in "$@"; do
    f=t/${f#t/}
    name=${f#t/}
    log=$logdir/${name%.t}.log
    total=$((total + 1))
    (cd "$work" && timeout -k 5 "$limit" perl "$f" >"$log" 2>&1)
    rc=$?
    for p in $(cat "$work/servers" 2>/dev/null); do
        [ "$(readlink "/proc/$p/exe")" = "$bin" ] && kill "$p" 2>/dev/null
    done
    : >"$work/servers"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "TIMEOUT $name (${limit}s)"
    elif grep -qi '^1\.\.0 # *skip' "$log"; then
        echo "SKIP $name: $(grep -m1 '^1\.\.0' "$log" | sed 's/^1\.\.0 # *[Ss][Kk][Ii][Pp] *//')"
        skip=$((skip + 1))
    elif [ $rc -eq 0 ] && ! grep -q '^not ok' "$log"; then
        echo "PASS $name"
        pass=$((pass + 1))
    else
        first=$(grep -m1 '^not ok' "$log")
        if [ -z "$first" ] && [ $rc -gt 128 ]; then
            first="signal $((rc - 128)) after: $(grep '^ok' "$log" | tail -1)"
        fi
        [ -n "$first" ] || first="exit $rc: $(grep -v '^ok\|^#\|^1\.\.' "$log" | head -1)"
        echo "FAIL $name: $first"
    fi
done
echo "$pass/$total passed, $skip skipped ($src against $bin; logs in $logdir)"
