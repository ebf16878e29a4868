"""Runs the integration tests against $HERDLESS_BIN: every tests/integration/test_*.py, or the
files named on the command line.

Up to $HERDLESS_TEST_JOBS files (default 3) run at once; a file with a line `# serial: <why>`
runs alone, after the others (a test that is timing-sensitive or holds a fixed resource). The
largest files start first: a file's size stands for its run time (the long ones are the big
ones), and a long file started last would leave the other slots idle at the end. Each
file has a time limit (600 s, 900 s with HERDLESS_SANITIZED=1), past which its process group is
sent SIGTERM, then SIGKILL. When a file ends its output is printed whole, then
"integration-result: PASS|FAIL <file>" (scripts/test.sh counts these lines); the output of every
failing file is printed again whole at the end, after a line "==== failing files' output". The
exit status is non-zero if any file failed. $HERDLESS_IO (auto, uring, epoll) adds -o io=<path>
to every herdless the harness starts: the suite runs on either I/O path.
"""

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # Debian's python3-pymemcache is installed for this interpreter only
SERIAL_MARKER = "# serial"
# Each test bounds its own waits; this is the backstop against a wedged test.
LIMIT_S = 900 if os.environ.get("HERDLESS_SANITIZED") == "1" else 600
GRACE_S = 10  # between SIGTERM and SIGKILL


def is_serial(path):
    with open(path) as f:
        return any(line.startswith(SERIAL_MARKER) for line in f)


class Run:
    """One test file running in its own process group, its output going to a file."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.output = tempfile.TemporaryFile()
        self.started = time.monotonic()
        self.proc = subprocess.Popen([PYTHON, path], stdin=subprocess.DEVNULL, stdout=self.output,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.signalled = None  # the signal sent past the time limit

    def poll(self):
        """The exit status once the file has ended, else None; enforces the time limit."""
        status = self.proc.poll()
        if status is not None:
            return status
        elapsed = time.monotonic() - self.started
        if elapsed > LIMIT_S + GRACE_S and self.signalled != signal.SIGKILL:
            self._signal(signal.SIGKILL)
        elif elapsed > LIMIT_S and self.signalled is None:
            self._signal(signal.SIGTERM)
        return None

    def _signal(self, signo):
        self.signalled = signo
        try:
            os.killpg(self.proc.pid, signo)   # the test and every daemon it started
        except ProcessLookupError:
            pass

    def text(self):
        self.output.seek(0)
        text = self.output.read().decode("utf-8", "replace")
        if self.signalled is not None:
            text += "\n(run_all: killed past the %d s limit)\n" % LIMIT_S
        return text

    def reap(self):
        """Kills whatever the file left behind in its process group."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self):
        """SIGTERM to the test and its daemons (the harness stops them), SIGKILL after GRACE_S."""
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        self.reap()


def report(run, status, failed):
    seconds = time.monotonic() - run.started
    result = "PASS" if status == 0 else "FAIL"
    print("==== %s (%s, %.0f s)" % (run.name, result, seconds))
    sys.stdout.write(run.text())
    print("integration-result: %s %s" % (result, run.name), flush=True)
    if status != 0:
        failed.append(run)


running = []  # the Runs under way


def stop_running(signo, _frame):
    """On SIGTERM or SIGINT (make interrupted): ends every test under way and its daemons."""
    for run in running:
        run.stop()
    sys.exit(128 + signo)


def run_files(paths, jobs):
    """Runs them, `jobs` at a time (the serial ones alone); returns the runs that failed."""
    parallel = sorted((p for p in paths if not is_serial(p)), key=os.path.getsize, reverse=True)
    serial = [p for p in paths if is_serial(p)]
    failed = []
    while parallel or serial or running:
        while parallel and len(running) < jobs:
            running.append(Run(parallel.pop(0)))
        if not parallel and not running and serial:
            running.append(Run(serial.pop(0)))
        time.sleep(0.1)
        for run in list(running):
            status = run.poll()
            if status is not None:
                run.reap()
                running.remove(run)
                report(run, status, failed)
    return failed


def main(args):
    os.environ.setdefault("HERDLESS_SRCDIR", os.path.dirname(os.path.dirname(HERE)))
    os.environ.setdefault("HERDLESS_BIN", os.path.join(os.environ["HERDLESS_SRCDIR"], "build",
                                                       "release", "herdless"))
    jobs = max(1, int(os.environ.get("HERDLESS_TEST_JOBS") or 3))
    paths = [a if os.sep in a else os.path.join(HERE, a) for a in args] or \
        sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    print("integration tests against %s, %d at a time, I/O path %s" % (
        os.environ["HERDLESS_BIN"], jobs,
        "-o io=" + os.environ["HERDLESS_IO"] if os.environ.get("HERDLESS_IO")
        else "the daemon's default (epoll)"), flush=True)
    signal.signal(signal.SIGTERM, stop_running)
    signal.signal(signal.SIGINT, stop_running)
    started = time.monotonic()
    failed = run_files(paths, jobs)
    if failed:
        print("==== failing files' output")
        for run in failed:
            print("==== %s" % run.name)
            sys.stdout.write(run.text())
    print("integration: %d passed, %d failed in %.0f s"
          % (len(paths) - len(failed), len(failed), time.monotonic() - started))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
