"""Shared helpers for the integration tests: every test starts its servers, reads stats,
waits and compares transcripts through this module.

start_herdless(args) / start_memcached(args) start a daemon on a free loopback port and wait
until it accepts; every daemon is stopped at exit, also when a test fails. The daemon picks the
port itself (-p -1, and -U -1 for UDP) and reports it through MEMCACHED_PORT_FILENAME, as
memcached does, so no other process can take the port between a probe and the bind. Process runs
any other server (a proxy, an installed wrapper) the same way; run_to_exit runs herdless for a
start that must fail. Conn is a raw socket client (TCP or a unix socket) whose reads all time out
(a test never hangs). stats/stat/stat_values read `stats`; wait_for and wait_for_stat poll for
what a daemon does asynchronously, bounded. SideBySide starts memcached and the daemon under test
in pairs and compares their Transcripts, case by case. Results counts checks and turns
them into an exit code.
"""

import atexit
import difflib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("HERDLESS_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
HERDLESS_BIN = os.environ.get("HERDLESS_BIN") or os.path.join(REPO, "build", "release", "herdless")
MEMCACHED_BIN = os.environ.get("MEMCACHED_BIN", "/usr/bin/memcached")

# Sanitizer builds are several times slower: give every wait more room.
SANITIZED = os.environ.get("HERDLESS_SANITIZED") == "1"
TIMEOUT = 20.0 if SANITIZED else 5.0

# The comparison tests run only the cases whose name holds this (all without it).
COMPARE_ONLY = os.environ.get("COMPARE_ONLY")

SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                     b"runtime error:", b"ThreadSanitizer", b"UndefinedBehaviorSanitizer")


def log(*parts):
    print(*parts, flush=True)


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_port_random = random.SystemRandom()
_ports_given = set()


def free_port():
    """A loopback port nobody listens on right now, for a server a test starts on it.

    Drawn at random below the kernel's ephemeral range: a port the kernel picked (bind to 0)
    could be handed out again, between the probe and the server's bind, as the local port of
    any connection another test opens; ports below that range are never picked for those.
    Never the same port twice in a process: a test that draws several before it starts their
    server (nutcracker's pools) would otherwise get a repeat now and then (about 1 in 450
    for ten ports), which the server then fails to bind."""
    high = min(_ephemeral_low(), 65536)
    low = max(1024, high - 20000)
    while True:
        port = _port_random.randrange(low, high)
        if port in _ports_given:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            _ports_given.add(port)
            return port


def user_args():
    return ["-u", "nobody"] if os.geteuid() == 0 else []


def sanitizer_complained(log_text):
    """Whether a daemon's log (text) holds a sanitizer's report."""
    return any(marker.decode() in log_text for marker in SANITIZER_MARKERS)


class DaemonError(Exception):
    pass


_running = []


class Daemon:
    """One daemon process listening on 127.0.0.1:port (and udp_port with -U); stop() ends it and
    checks its log. port_file (MEMCACHED_PORT_FILENAME) and port_file_lines: where the daemon
    wrote its ports, and what."""

    def __init__(self, name, argv_without_port, unix_socket=None):
        self.name = name
        self.argv_without_port = argv_without_port
        self.unix_socket = unix_socket
        self.port = None
        self.udp_port = None
        self.port_file = None
        self.port_file_lines = []
        self.port_dir = None
        self.proc = None
        self.log_file = None

    def start(self):
        """Starts the daemon and waits until it accepts: on its TCP port, on unix_socket if that
        is set, or, with no TCP listener (-p 0), until its port file is written."""
        self.port_dir = tempfile.mkdtemp(prefix=self.name + "-ports-")
        os.chmod(self.port_dir, 0o777)   # memcached writes it after becoming -u nobody
        self.port_file = os.path.join(self.port_dir, "ports")
        argv = self.argv_without_port
        if self.unix_socket is None and "-p" not in argv:
            argv = argv + ["-p", "-1"]
        self._spawn(argv, dict(os.environ, MEMCACHED_PORT_FILENAME=self.port_file))
        try:
            if self.unix_socket is None:
                self._read_port_file(self.port_file)
            if self.port is not None or self.unix_socket is not None:
                self._wait_until_accepting()
            return self
        except DaemonError:
            self._kill()
            raise

    def _spawn(self, argv, env):
        self.log_file = tempfile.NamedTemporaryFile(prefix=self.name + "-", suffix=".log",
                                                    delete=False)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT, env=env)
        _running.append(self)

    def _read_port_file(self, path):
        """Waits for the port file (renamed into place once every port is bound)."""
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(path):
            if self.proc.poll() is not None:
                raise DaemonError("%s exited with %s before listening; log:\n%s"
                                  % (self.name, self.proc.returncode, self.log_text()))
            if time.monotonic() > deadline:
                raise DaemonError("%s wrote no port file within %.0fs; log:\n%s"
                                  % (self.name, TIMEOUT, self.log_text()))
            time.sleep(0.01)
        with open(path) as f:
            self.port_file_lines = f.read().splitlines()
        for line in self.port_file_lines:
            kind, _, port = line.partition(":")
            if kind == "TCP INET" and self.port is None:
                self.port = int(port)
            elif kind == "UDP INET" and self.udp_port is None:
                self.udp_port = int(port)
        if self.port is None and self.udp_port is None:
            raise DaemonError("%s listed no port in its port file" % self.name)

    def _wait_until_accepting(self):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError("%s exited with %s before accepting; log:\n%s"
                                  % (self.name, self.proc.returncode, self.log_text()))
            try:
                Conn(self.unix_socket or self.port, timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.02)
        raise DaemonError("%s did not accept on %s within %.0fs; log:\n%s"
                          % (self.name, self.unix_socket or "port %d" % self.port, TIMEOUT,
                             self.log_text()))

    def log_text(self):
        try:
            with open(self.log_file.name, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def status_field(self, name):
        """A field of /proc/<pid>/status as text ("VmRSS" -> "1234 kB"), or None."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key == name:
                        return value.strip()
        except OSError:
            pass
        return None

    def rss_bytes(self):
        """The daemon's resident set size now (VmRSS)."""
        return int(self.status_field("VmRSS").split()[0]) * 1024

    def _kill(self):
        """SIGTERM, then SIGKILL if it does not exit in time; True if SIGKILL was needed."""
        needed_kill = False
        if self.proc is None:
            return needed_kill
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                needed_kill = True
                self.proc.kill()
                self.proc.wait()
        if self in _running:
            _running.remove(self)
        return needed_kill

    def _remove_files(self):
        if self.log_file is not None and os.path.exists(self.log_file.name):
            os.unlink(self.log_file.name)
        if self.port_dir:
            shutil.rmtree(self.port_dir, ignore_errors=True)

    def discard(self):
        """Ends the daemon if it still runs (SIGTERM, then SIGKILL) and removes its log: for a
        daemon whose end the test checks itself. It is forgotten (no stop())."""
        self._kill()
        self._remove_files()

    def kill_hard(self):
        """SIGKILL, as a crash or a lost machine; the process is forgotten (no stop())."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.discard()

    def terminate(self):
        """SIGTERM (SIGKILL if it is ignored for TIMEOUT); the exit status. Checks nothing and
        keeps the log (discard() removes it)."""
        self._kill()
        return self.proc.returncode

    def wait_exit(self, timeout=None):
        """Waits for the daemon to exit by itself (after a signal or `shutdown`), SIGKILL after
        `timeout` seconds (default TIMEOUT). Returns (exit status, None if it had to be killed;
        log text); the daemon is forgotten (no stop())."""
        try:
            status = self.proc.wait(timeout=timeout or TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = None
        text = self.log_text()
        self.discard()
        return status, text

    def stop_with(self, signo, timeout=None):
        """Sends `signo` and waits for the exit: (exit status, log text) as wait_exit; raises
        DaemonError if a sanitizer complained."""
        self.proc.send_signal(signo)
        status, text = self.wait_exit(timeout)
        if sanitizer_complained(text):
            raise DaemonError("%s reported a sanitizer error; log:\n%s" % (self.name, text))
        return status, text

    def stop(self):
        """Stops the daemon; raises DaemonError if it died early or a sanitizer complained."""
        died_early = self.proc.poll() is not None
        needed_kill = self._kill()
        text = self.log_text()
        self._remove_files()
        problems = []
        status = self.proc.returncode
        if died_early:
            problems.append("%s had already exited (status %s) when the test stopped it"
                            % (self.name, status))
        elif needed_kill:
            problems.append("%s ignored SIGTERM for %.0fs" % (self.name, TIMEOUT))
        elif status not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
            problems.append("%s exited with status %s on SIGTERM" % (self.name, status))
        if sanitizer_complained(text):
            problems.append("%s reported a sanitizer error" % self.name)
        if problems:
            raise DaemonError("; ".join(problems) + "; log:\n" + text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        else:
            self._kill()
        return False


class Process(Daemon):
    """Another server (a proxy, an installed wrapper script) run with its full argv and `env`
    (default: this process's), listening on a port the caller chose; stopped at exit like the
    daemons."""

    def __init__(self, name, argv, port, env=None):
        super().__init__(name, list(argv))
        self.port = port
        self.env = env

    def start(self, wait=True):
        """Starts it and, unless wait=False (the test waits its own way), waits until it accepts."""
        self._spawn(self.argv_without_port, self.env)
        if wait:
            try:
                self._wait_until_accepting()
            except DaemonError:
                self._kill()
                raise
        return self


def io_args():
    """-o io=<path> when $HERDLESS_IO names one (auto, uring, epoll): the whole suite runs on
    either I/O path (run_all.py prints which); nothing (the daemon's auto) otherwise."""
    path = os.environ.get("HERDLESS_IO")
    return ["-o", "io=" + path] if path else []


def start_herdless(args=(), exact_threads=True, prefix=(), unix_socket=None):
    """herdless on a free port. Tests run the -t they ask for (-o exact_threads) whatever
    CPUs the machine has, so races are exercised alike everywhere; `prefix` goes before the
    binary (e.g. taskset); unix_socket: the -s path the daemon is started with (no TCP)."""
    argv = list(prefix) + [HERDLESS_BIN, "-l", "127.0.0.1"] + user_args() + io_args() + list(args)
    if exact_threads:
        argv += ["-o", "exact_threads"]
    if not os.access(HERDLESS_BIN, os.X_OK):
        raise DaemonError("no herdless binary at %s (set HERDLESS_BIN)" % HERDLESS_BIN)
    return Daemon("herdless", argv, unix_socket).start()


def start_memcached(args=()):
    argv = [MEMCACHED_BIN, "-l", "127.0.0.1"] + user_args() + list(args)
    if "-U" not in argv:
        argv += ["-U", "0"]
    return Daemon("memcached", argv).start()


def target_name():
    """The daemon under test: herdless, or memcached with TEST_AGAINST=memcached (which checks
    that a test itself is right)."""
    return os.environ.get("TEST_AGAINST", "herdless")


def start_target(args=()):
    if target_name() == "memcached":
        return start_memcached(args)
    return start_herdless(args)


def run_to_exit(args, env=None, as_user=True):
    """herdless run to its exit, for a start that must fail: on loopback (-p -1 unless args give
    -p), as nobody when root unless as_user=False; the CompletedProcess, its output captured."""
    argv = [HERDLESS_BIN, "-l", "127.0.0.1"] + (user_args() if as_user else []) + io_args() + list(args)
    if "-p" not in argv:
        argv += ["-p", "-1"]
    return subprocess.run(argv, env=env, capture_output=True, timeout=TIMEOUT * 2)


def check_refuses_to_start(results, args, message, what, env=None):
    """One check: herdless with `args` exits at start with a failure status and `message` (bytes)
    on stderr. Returns the CompletedProcess for further checks."""
    proc = run_to_exit(args, env)
    results.check(proc.returncode != 0 and message in proc.stderr,
                  "%s: exits at start with '%s'" % (what, message.decode()),
                  "rc %r, stderr %r" % (proc.returncode, proc.stderr[-300:]))
    return proc


class SideBySide:
    """Debian's memcached and the daemon under test, a pair per argument list started on first
    use, for the tests that run every case on both and compare."""

    def __init__(self):
        self._pairs = {}

    def pair(self, args=()):
        """(memcached, the daemon under test), both started with `args`."""
        args = tuple(args)
        if args not in self._pairs:
            self._pairs[args] = (start_memcached(args), start_target(args))
        return self._pairs[args]

    def compare(self, results, cases, run_case):
        """Runs each case (with .name and .args) whose name holds $COMPARE_ONLY (each case without
        it) on the pair started with its args: run_case(case, daemon) returns that daemon's
        Transcript. One check per case: the daemon under test's transcript is memcached's.
        memcached's background threads make a few of its answers depend on timing (an item its
        LRU maintainer is moving is on neither list for a moment), so a case that differs runs
        once more on both: it is alike when memcached then answers as the daemon under test did
        both times. Returns (how many cases ran, the names of those that differ)."""
        cases = [c for c in cases if not COMPARE_ONLY or COMPARE_ONLY in c.name]
        differ = []
        for case in cases:
            reference, ours = [run_case(case, daemon) for daemon in self.pair(case.args)]
            detail = ours.differences(reference)
            if detail is not None:
                reference_again, ours_again = [run_case(case, daemon) for daemon in self.pair(case.args)]
                if ours_again.differences(ours) is None and ours_again.differences(reference_again) is None:
                    log("case %s: memcached answered otherwise once, then as %s did twice; the "
                        "first answer:\n%s" % (case.name, target_name(), detail))
                    detail = None
            if not results.check(detail is None, "case %s" % case.name, detail or ""):
                differ.append(case.name)
        return len(cases), differ

    def stop(self, results):
        """Checks that every daemon still runs, then stops them all."""
        for pair in self._pairs.values():
            for daemon in pair:
                results.check(daemon.alive(), "%s still running at the end" % daemon.name)
                daemon.stop()


class Transcript:
    """What one server answered in one case, as lines to compare with another server's, and the
    CAS values it returned, in order of first appearance: later requests of the case use them,
    and the lines name each by its symbol (two servers' CAS values differ by design)."""

    def __init__(self):
        self.lines = []
        self.cas_values = []

    def cas_symbol(self, cas):
        """<CAS1>, <CAS2>, ...: the order in which this server first returned `cas`."""
        if cas not in self.cas_values:
            self.cas_values.append(cas)
        return "<CAS%d>" % (self.cas_values.index(cas) + 1)

    def text(self):
        return "\n".join(self.lines)

    def differences(self, reference):
        """None if this transcript is `reference`'s (memcached's), else how it differs: a
        unified diff."""
        if self.text() == reference.text():
            return None
        diff = difflib.unified_diff(reference.text().split("\n"), self.text().split("\n"),
                                    "memcached", target_name(), lineterm="")
        return "\n".join(diff)


_scratch_dirs = []


def scratch_dir(prefix):
    """A new temporary directory, removed with everything in it when the test process exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    _scratch_dirs.append(d)
    return d


def _kill_all():
    """At exit: ends the daemons no test stopped (their files removed too) and the scratch
    directories. A sanitizer report in such a daemon's log still fails the test file."""
    complained = False
    for d in list(_running):
        log("%s left running at exit: %s" % (d.name, " ".join(map(str, d.argv_without_port))))
        d._kill()
        text = d.log_text()
        if sanitizer_complained(text):
            log("%s reported a sanitizer error; log:\n%s" % (d.name, text))
            complained = True
        d._remove_files()
    for d in _scratch_dirs:
        shutil.rmtree(d, ignore_errors=True)
    if complained:
        os._exit(1)


atexit.register(_kill_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class Conn:
    """A raw text-protocol connection to 127.0.0.1:port, or to a unix socket when `address` is
    its path (a str). Every read waits at most `timeout` seconds."""

    def __init__(self, address, timeout=None):
        self.timeout = timeout or TIMEOUT
        if isinstance(address, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(self.timeout)
            try:
                self.sock.connect(address)
            except OSError:
                self.sock.close()
                raise
        else:
            self.sock = socket.create_connection(("127.0.0.1", address), timeout=self.timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no reply within %.1fs; got so far: %r" % (self.timeout, self.buf[-300:]))
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise TimeoutError("no reply within %.1fs; got so far: %r" % (self.timeout, self.buf[-300:]))
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
        self.buf += chunk
        return bool(chunk)

    def recv_until(self, terminator, at_line_start=True):
        """Bytes up to and including the first `terminator`; with at_line_start the terminator
        must begin the buffer or follow a "\\n" (so "END\\r\\n" inside a value is skipped only
        if the value doesn't itself contain a line that looks like it; callers that care use
        recv_exact)."""
        deadline = time.monotonic() + self.timeout
        start = 0
        while True:
            i = self.buf.find(terminator, start)
            while i >= 0 and at_line_start and i > 0 and self.buf[i - 1:i] != b"\n":
                i = self.buf.find(terminator, i + 1)
            if i >= 0:
                end = i + len(terminator)
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            if self.eof or not self._fill(deadline):
                raise EOFError("connection closed before %r; got: %r" % (terminator, self.buf[-300:]))

    def recv_line(self):
        return self.recv_until(b"\n", at_line_start=False)

    def recv_exact(self, n):
        deadline = time.monotonic() + self.timeout
        while len(self.buf) < n:
            if self.eof or not self._fill(deadline):
                raise EOFError("connection closed after %d of %d bytes" % (len(self.buf), n))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_until_eof(self):
        deadline = time.monotonic() + self.timeout
        while not self.eof:
            self._fill(deadline)
        out, self.buf = self.buf, b""
        return out

    def call(self, data, terminator=b"\r\n"):
        """Sends `data` and returns the reply up to the terminator."""
        self.send(data)
        return self.recv_until(terminator, at_line_start=terminator.count(b"\n") == 1
                               and len(terminator) > 2)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def stats(conn, group=b""):
    """`stats [group]` as {name: value}, both str (a value may hold spaces)."""
    if isinstance(group, str):
        group = group.encode()
    out = {}
    for line in conn.call(b"stats " + group + b"\r\n" if group else b"stats\r\n",
                          b"END\r\n").split(b"\r\n"):
        f = line.split(b" ", 2)
        if len(f) == 3 and f[0] == b"STAT":
            out[f[1].decode("utf-8", "replace")] = f[2].decode("utf-8", "replace")
    return out


def call_past_busy(conn, command, seconds=30):
    """Sends an `lru_crawler` crawl or dump command and returns its first reply line, sending it
    again while that is BUSY: memcached's LRU maintainer runs crawls of its own (right after
    start, then about a minute apart), and a crawl or dump asked for meanwhile is BUSY."""
    deadline = time.monotonic() + seconds
    while True:
        conn.send(command)
        first = conn.recv_line()
        if not first.startswith(b"BUSY") or time.monotonic() > deadline:
            return first
        time.sleep(0.05)


def metadump(conn, classes=b"all"):
    """`lru_crawler metadump <classes>`'s lines (without END), as dicts of field -> value (keys
    URL-encoded); asked again while BUSY (call_past_busy)."""
    first = call_past_busy(conn, b"lru_crawler metadump " + classes + b"\r\n")
    data = first if first == b"END\r\n" else first + conn.recv_until(b"END\r\n")
    lines = data[:-len(b"END\r\n")].split(b"\n")
    return [dict(f.split(b"=", 1) for f in line.split(b" ")) for line in lines if line]


def stat_values(conn, *names):
    """{name: its integer value, or None if absent} for the named `stats` lines (str or bytes
    names, kept as given), from one `stats`."""
    current = stats(conn)
    out = {}
    for name in names:
        value = current.get(name.decode() if isinstance(name, bytes) else name)
        out[name] = None if value is None else int(value)
    return out


def stat(conn, name):
    """The integer value of `stats` line `name` (str or bytes), or None if absent."""
    return stat_values(conn, name)[name]


def run_threads(threads, seconds):
    """Starts the threads and waits for them, each at most `seconds` (a load's length) plus a
    margin; True when every one finished."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + TIMEOUT * 6)
    return not any(t.is_alive() for t in threads)


def wait_for(predicate, seconds=None, what=None):
    """Calls predicate() every 50 ms until it returns something true, for at most `seconds`
    (default 2 * TIMEOUT): for what a daemon does asynchronously, never to time it. Returns that
    value, or the last false one; with `what`, raises TimeoutError("timed out waiting for
    <what>") instead."""
    deadline = time.monotonic() + (2 * TIMEOUT if seconds is None else seconds)
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not value and what is not None:
        raise TimeoutError("timed out waiting for " + what)
    return value


def wait_for_stat(conn, name, done, seconds=None):
    """Reads `stats` line `name` until done(value) holds (absent: not done), as wait_for; returns
    the last value read."""
    value = None

    def read():
        nonlocal value
        value = stat(conn, name)
        return value is not None and done(value)

    wait_for(read, seconds)
    return value


class Results:
    """Counts checks; `finish()` prints the summary and returns the process exit code."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failures = []

    def check(self, condition, what, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failures.append(what)
            log("FAIL: %s%s" % (what, ("\n" + detail) if detail else ""))
        return condition

    def equal(self, got, want, what):
        return self.check(got == want, what, "  want: %r\n  got:  %r" % (want, got))

    def finish(self):
        log("%s: %d checks passed, %d failed" % (self.name, self.passed, len(self.failures)))
        return 1 if self.failures else 0


def run(name, body):
    """Runs body(results) and exits with the test's status; any exception is a failure."""
    results = Results(name)
    try:
        body(results)
    except DaemonError as e:  # the message holds the daemon's log; a traceback adds nothing
        log("FAIL: %s" % e)
        results.failures.append("daemon: %s" % str(e).split(";")[0].split("\n")[0])
    except Exception as e:  # report and fail, never hang or leak a daemon
        import traceback
        traceback.print_exc()
        results.failures.append("exception: %s" % e)
        log("FAIL: %s raised %s" % (name, type(e).__name__))
    finally:
        _kill_all()
    sys.exit(results.finish())
