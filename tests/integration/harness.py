"""Shared helpers for the integration tests.

start_herdless(args) / start_memcached(args) start a daemon on a free loopback port and wait
until it accepts; every daemon is stopped at exit, also when a test fails. The daemon picks the
port itself (-p -1, and -U -1 for UDP) and reports it through MEMCACHED_PORT_FILENAME, as
memcached does, so no other process can take the port between a probe and the bind. Conn is a raw
socket client whose reads all time out (a test never hangs). Results counts checks and turns
them into an exit code.
"""

import atexit
import os
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

SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                     b"runtime error:", b"ThreadSanitizer", b"UndefinedBehaviorSanitizer")


def log(*parts):
    print(*parts, flush=True)


def free_port():
    """A loopback port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def user_args():
    return ["-u", "nobody"] if os.geteuid() == 0 else []


class DaemonError(Exception):
    pass


_running = []


class Daemon:
    """One daemon process listening on 127.0.0.1:port; stop() ends it and checks its log."""

    def __init__(self, name, argv_without_port, unix_socket=None):
        self.name = name
        self.argv_without_port = argv_without_port
        self.unix_socket = unix_socket
        self.port = None
        self.udp_port = None
        self.port_dir = None
        self.proc = None
        self.log_file = None

    def start(self):
        """Starts the daemon; with unix_socket set, waits for that socket instead of a port."""
        self.port_dir = tempfile.mkdtemp(prefix=self.name + "-ports-")
        os.chmod(self.port_dir, 0o777)   # memcached writes it after becoming -u nobody
        port_file = os.path.join(self.port_dir, "ports")
        argv = self.argv_without_port
        if self.unix_socket is None and "-p" not in argv:
            argv = argv + ["-p", "-1"]
        self.log_file = tempfile.NamedTemporaryFile(prefix=self.name + "-", suffix=".log",
                                                    delete=False)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, MEMCACHED_PORT_FILENAME=port_file))
        _running.append(self)
        try:
            if self.unix_socket is None:
                self._read_port_file(port_file)
            self._wait_until_accepting()
            return self
        except DaemonError:
            self._kill()
            raise

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
            for line in f:
                kind, _, port = line.partition(":")
                if kind == "TCP INET" and self.port is None:
                    self.port = int(port)
                elif kind == "UDP INET" and self.udp_port is None:
                    self.udp_port = int(port)
        if self.port is None:
            raise DaemonError("%s listed no TCP port in its port file" % self.name)

    def _connect(self):
        if self.unix_socket is not None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(0.5)
            try:
                s.connect(self.unix_socket)
            finally:
                s.close()
        else:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()

    def _wait_until_accepting(self):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError("%s exited with %s before accepting; log:\n%s"
                                  % (self.name, self.proc.returncode, self.log_text()))
            try:
                self._connect()
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

    def kill_hard(self):
        """SIGKILL, as a crash or a lost machine; the process is forgotten (no stop())."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._kill()
        os.unlink(self.log_file.name)
        if self.port_dir:
            shutil.rmtree(self.port_dir, ignore_errors=True)

    def stop(self):
        """Stops the daemon; raises DaemonError if it died early or a sanitizer complained."""
        died_early = self.proc.poll() is not None
        needed_kill = self._kill()
        text = self.log_text().encode()
        os.unlink(self.log_file.name)
        shutil.rmtree(self.port_dir, ignore_errors=True)
        problems = []
        status = self.proc.returncode
        if died_early:
            problems.append("%s had already exited (status %s) when the test stopped it"
                            % (self.name, status))
        elif needed_kill:
            problems.append("%s ignored SIGTERM for %.0fs" % (self.name, TIMEOUT))
        elif status not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
            problems.append("%s exited with status %s on SIGTERM" % (self.name, status))
        if any(marker in text for marker in SANITIZER_MARKERS):
            problems.append("%s reported a sanitizer error" % self.name)
        if problems:
            raise DaemonError("; ".join(problems) + "; log:\n" + text.decode("utf-8", "replace"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        else:
            self._kill()
        return False


class Process(Daemon):
    """Another server (a proxy) run with its full argv, listening on a port the caller chose;
    stopped at exit like the daemons."""

    def __init__(self, name, argv, port):
        super().__init__(name, list(argv))
        self.port = port

    def start(self):
        self.log_file = tempfile.NamedTemporaryFile(prefix=self.name + "-", suffix=".log",
                                                    delete=False)
        self.proc = subprocess.Popen(self.argv_without_port, stdin=subprocess.DEVNULL,
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        _running.append(self)
        try:
            self._wait_until_accepting()
        except DaemonError:
            self._kill()
            raise
        return self


def start_herdless(args=(), exact_threads=True, prefix=(), unix_socket=None):
    """herdless on a free port. Tests run the -t they ask for (-o exact_threads) whatever
    CPUs the machine has, so races are exercised alike everywhere; `prefix` goes before the
    binary (e.g. taskset); unix_socket: the -s path the daemon is started with (no TCP)."""
    argv = list(prefix) + [HERDLESS_BIN, "-l", "127.0.0.1"] + user_args() + list(args)
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


def _kill_all():
    for d in list(_running):
        d._kill()


atexit.register(_kill_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class Conn:
    """A raw text-protocol connection. Every read waits at most `timeout` seconds."""

    def __init__(self, port, timeout=None):
        self.timeout = timeout or TIMEOUT
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=self.timeout)
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


def stat(conn, name):
    """The integer value of `stats` line `name` (bytes), or None if absent."""
    conn.send(b"stats\r\n")
    for line in conn.recv_until(b"END\r\n").split(b"\r\n"):
        f = line.split(b" ")
        if len(f) == 3 and f[0] == b"STAT" and f[1] == name:
            return int(f[2])
    return None


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
