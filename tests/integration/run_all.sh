#!/bin/sh
# Runs the integration tests against $HERDLESS_BIN (default: build/release/herdless in the source
# tree): every tests/integration/test_*.py, or the files named, $HERDLESS_TEST_JOBS (default 3)
# at a time, the files marked `# serial` alone (tests/integration/run_all.py says how). Prints
# "integration-result: PASS|FAIL <test>" per test (scripts/test.sh counts these lines) and exits
# non-zero if any test failed.
here="$(cd "$(dirname "$0")" && pwd)"
# Debian's python3-pymemcache is installed for this interpreter only.
exec /usr/bin/python3 "$here/run_all.py" "$@"
