#!/usr/bin/env bash
# Checks that the release tarball (`make dist`) carries every file of the checkout, so that
# a build and `make check` from it (what `make distcheck` does, out of tree and from a
# read-only source tree) find everything they need. Cheap: it builds nothing. Files that
# only a git checkout needs are exempt (EXEMPT below). Uses the configured tree in
# [build-dir] (default build/release). Prints the missing files and fails if there are any;
# prints nothing else on success but a count.
#   scripts/check-dist.sh [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EXEMPT='^(\.ci/|\.gitignore$|m4/\.keep$)'
dir="${1:-build/release}"
case "$dir" in /*) ;; *) dir="$REPO_ROOT/$dir" ;; esac
[ -f "$dir/Makefile" ] || die "no configured build in $dir (run scripts/run.sh or build it first)"
command -v git >/dev/null && git -C "$REPO_ROOT" rev-parse --git-dir >/dev/null 2>&1 ||
  { echo "not a git checkout: nothing to compare the tarball with"; exit 0; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$dir" && quietly make distdir distdir="$work/dist") || die "make distdir failed"
# Tracked files and new ones not yet committed (but not ignored ones).
git -C "$REPO_ROOT" ls-files --cached --others --exclude-standard | grep -Ev "$EXEMPT" |
  sort -u >"$work/checkout"
(cd "$work/dist" && find . -type f | sed 's|^\./||' | sort) >"$work/tarball"
missing="$(comm -23 "$work/checkout" "$work/tarball")"
if [ -n "$missing" ]; then
  echo "files of the checkout missing from the release tarball (add them to EXTRA_DIST or a"
  echo "_SOURCES list in Makefile.am):"
  echo "$missing" | sed 's/^/  /'
  exit 1
fi
echo "the release tarball carries all $(wc -l <"$work/checkout") files of the checkout"
