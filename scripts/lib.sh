# Shared helpers for scripts/*.sh. Source it; do not run it.
#   ensure_deps            install missing Debian packages (apt-get update only if needed)
#   build <dir> [args...]  configure out of tree in <dir> (relative to the repo root) and make
# Both are quiet on success and print the captured output on failure.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc 2>/dev/null || echo 2)"

DEPS=(build-essential autoconf automake libtool pkg-config libevent-dev
      libjemalloc-dev libxxhash-dev libgtest-dev googletest memcached
      libmemcached-tools python3 python3-pymemcache python3-pylibmc php-cli php-memcached
      netcat-openbsd clang systemd groff-base nutcracker libssl-dev openssl
      libsasl2-modules sasl2-bin prometheus python3-memcache python3-binary-memcached
      libcache-memcached-fast-perl libcache-memcached-perl php-memcache ruby ruby-dalli nginx
      liburing-dev iproute2)

die() {
  echo "error: $*" >&2
  exit 1
}

# Runs a command with its output captured; shows the output only if it fails.
quietly() {
  local log
  log="$(mktemp)"
  local rc=0
  "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    rm -f "$log"
    return 0
  fi
  echo "---- failed (exit $rc): $* ----" >&2
  tail -n 200 "$log" >&2
  echo "---- end of output ----" >&2
  rm -f "$log"
  return $rc
}

ensure_deps() {
  command -v dpkg-query >/dev/null 2>&1 || return 0  # not Debian: trust the caller
  local missing=() pkg
  for pkg in "${DEPS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing missing packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  quietly "${sudo[@]}" apt-get update -q || die "apt-get update failed"
  quietly env DEBIAN_FRONTEND=noninteractive "${sudo[@]}" \
    apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    die "could not install: ${missing[*]}"
}

# True if configure is missing or older than one of its inputs.
configure_is_stale() {
  local src="$REPO_ROOT"
  [ -x "$src/configure" ] || return 0
  [ "$src/configure.ac" -nt "$src/configure" ] && return 0
  [ "$src/Makefile.am" -nt "$src/Makefile.in" ] && return 0
  [ -f "$src/Makefile.in" ] || return 0
  return 1
}

build() {
  local dir="$1"
  shift
  [ -n "$dir" ] || die "build: no build directory given"
  case "$dir" in /*) ;; *) dir="$REPO_ROOT/$dir" ;; esac
  if configure_is_stale; then
    (cd "$REPO_ROOT" && quietly autoreconf -fi) || die "autoreconf failed"
  fi
  mkdir -p "$dir"
  # Reconfigure when the arguments change or configure is newer than the build.
  local args="$*" stamp="$dir/.herdless-configure-args"
  if [ ! -f "$dir/Makefile" ] || [ "$REPO_ROOT/configure" -nt "$dir/Makefile" ] ||
     [ "$(cat "$stamp" 2>/dev/null)" != "$args" ]; then
    (cd "$dir" && quietly "$REPO_ROOT/configure" "$@") || die "configure failed in $dir"
    printf '%s' "$args" >"$stamp"
  fi
  (cd "$dir" && quietly make -j"$JOBS") || die "build failed in $dir"
}
