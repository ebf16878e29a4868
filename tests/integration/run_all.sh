#!/bin/sh
# Runs every tests/integration/test_*.py against $HERDLESS_BIN (default: build/release/herdless
# in the source tree). Prints "integration-result: PASS|FAIL <test>" per test (scripts/test.sh
# counts these lines) and exits non-zero if any test failed.
here="$(cd "$(dirname "$0")" && pwd)"
: "${HERDLESS_SRCDIR:=$(cd "$here/../.." && pwd)}"
: "${HERDLESS_BIN:=$HERDLESS_SRCDIR/build/release/herdless}"
export HERDLESS_SRCDIR HERDLESS_BIN
PYTHON=/usr/bin/python3  # Debian's python3-pymemcache is installed for this interpreter only
# Each test bounds its own waits; this is the backstop against a wedged test.
limit=600
[ "${HERDLESS_SANITIZED:-0}" = 1 ] && limit=900

echo "integration tests against $HERDLESS_BIN"
passed=0
failed=0
for test in "$here"/test_*.py; do
  name="$(basename "$test")"
  echo "==== $name"
  if timeout -k 10 "$limit" "$PYTHON" "$test"; then
    echo "integration-result: PASS $name"
    passed=$((passed + 1))
  else
    echo "integration-result: FAIL $name"
    failed=$((failed + 1))
  fi
done
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
