"""libmemcached's memccapable against herdless: every test of both protocols (its 27 binary
and 27 ASCII tests; memccapable runs both without -a or -b), zero failures.

memccapable prints one "[pass]"/"[FAIL]"/"[skip]" line per test and "All tests passed" or
"N of M tests failed" at the end. TEST_AGAINST=memcached runs it against memcached.
"""

import re
import subprocess

import harness


def body(r):
    daemon = harness.start_target()
    argv = ["memccapable", "-t", str(int(harness.TIMEOUT)), "-h", "127.0.0.1",
            "-p", str(daemon.port)]
    try:
        run = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=harness.TIMEOUT * 24)
        output = run.stdout.decode("utf-8", "replace")
        status = run.returncode
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode("utf-8", "replace") + "\n<memccapable timed out>"
        status = None
    harness.log(output.rstrip())
    passed = len(re.findall(r"\[pass\]", output))
    failed = [l.strip() for l in re.findall(r"^(.*)\[FAIL\]", output, re.M)]
    harness.log("memccapable: %d passed, %d failed" % (passed, len(failed)))
    r.equal(status, 0, "memccapable exit status")
    r.equal(failed, [], "memccapable failing tests")
    r.check(passed >= 54, "memccapable ran its binary and ASCII tests", "only %d passed" % passed)
    r.check(len(re.findall(r"^binary .*\[pass\]", output, re.M)) >= 27,
            "memccapable's binary tests passed")
    r.check("All tests passed" in output, "memccapable reports all tests passed")
    r.check(daemon.alive(), "daemon still running after memccapable")
    daemon.stop()


if __name__ == "__main__":
    harness.run("test_memccapable", body)
