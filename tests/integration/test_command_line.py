"""A refused command line, side by side with Debian's memcached: the same exit status and the
same stderr, byte for byte (memcached exits 1 for a flag getopt or its loop cannot take, with
getopt's words after the program name and `Illegal argument "?"`; EX_USAGE (64) for the checks
after the last flag). Both servers get the same argv[0] (a symlink named `memcached`).

-o sock_cookie_id marks the listener (ss shows its fwmark).

-d -P, as an init script starts memcached: the command returns 0 at once, the pid file names the
daemon, which serves values of every size on every connection (on the io_uring path too: its
rings are made before the fork), and SIGTERM ends it and removes the pid file. A pid file that
cannot be written is reported and the server serves, as memcached does.
"""

import os
import signal
import subprocess
import tempfile

import harness

# Command lines both servers must refuse. Deliberate differences (herdless refuses a value
# memcached reads with atoi, e.g. `-p abc`, `-m -5`, or a stray argument) are not listed here:
# docs/operations.md ("A new node, or moving from memcached") names them.
REFUSED = [
    ["-z"],                                   # unknown flag
    ["-X", "-Q"],
    ["--bogus"],                              # unknown long flag
    ["-p"],                                   # a flag without its value
    ["--port"],
    ["-o", "bogus"],                          # unknown -o key
    ["-o", "idle_timeout"],                   # -o key without its value
    ["-t", "0"],
    ["-c", "0"],
    ["-R", "0"],
    ["-I", "512"],                            # checks after the last flag: EX_USAGE
    ["-m", "1", "-I", "1m"],
    ["-m", "4096", "-I", "1025m"],
    ["-o", "slab_chunk_max=3000"],
    ["-S", "-B", "ascii"],
    ["-Z", "-p", "0"],
    ["-o", "ext_page_size=2,ext_path={tmp}/ext:64m"],   # extstore_init: 1
    ["-o", "ext_path=/nonexistent/ext:64m"],
    # memcached's tuning keys that herdless keeps or ignores, with values memcached refuses
    ["-o", "hashpower=5"], ["-o", "hashpower=40"], ["-o", "hashpower"],
    ["-o", "tail_repair_time=3"], ["-o", "tail_repair_time"],
    ["-o", "slab_automove_window=2"], ["-o", "slab_automove_window"],
    ["-o", "slab_automove_ratio=2"], ["-o", "slab_automove_ratio=0"],
    ["-o", "lru_crawler_sleep=2000000"], ["-o", "lru_crawler_sleep=-1"], ["-o", "lru_crawler_sleep"],
    ["-o", "lru_crawler_tocrawl=x"], ["-o", "lru_crawler_tocrawl=-1"], ["-o", "lru_crawler_tocrawl"],
    ["-o", "watcher_logbuf_size=x"], ["-o", "worker_logbuf_size"],
    ["-o", "hash_algorithm=foo"], ["-o", "hash_algorithm"],
    ["-o", "read_buf_mem_limit=x"], ["-o", "read_buf_mem_limit"],
    ["-f", "1"], ["-f", "abc"], ["-n", "0"], ["-N", "0"],
    ["-o", "slab_sizes=10-100"], ["-o", "slab_sizes=100-abc"], ["-o", "slab_sizes=100-90"],
    ["-o", "slab_sizes=100-104"], ["-o", "slab_sizes=100-600000"], ["-n", "200", "-o", "slab_sizes=100-300"],
    ["-B", "foo"],                            # EX_USAGE at once
    ["-N", "5", "-t", "4"],
    # two errors: the one memcached checks first is named
    ["-I", "10", "-N", "5", "-t", "4"],
    ["-I", "10", "-o", "ext_path={tmp}/ext:64m:compact"],
    ["-U", "5", "-o", "ext_path={tmp}/ext:64m,slab_sizes=x"],
    ["-p", "70000", "-o", "hot_lru_pct=70,warm_lru_pct=70"],
    ["-p", "70000", "-S", "-B", "ascii"],
    ["-p", "70000", "-o", "ext_page_size=2,ext_path={tmp}/ext:64m"],
    ["-p", "70000", "-o", "ext_path={tmp}/ext:64m,ext_page_size=2"],
]

# Refused with memcached's exit status but herdless's own words: for -Y (1, from authfile_load) it
# names the line of a malformed entry, ends its message with a newline and says strerror once; for
# an empty slab_sizes (64) memcached says nothing.
REFUSED_STATUS_ONLY = [
    ["-Y", "{tmp}/auth-malformed"],
    ["-Y", "{tmp}/auth-missing"],
    ["-o", "slab_sizes="],                    # memcached: EX_USAGE without a word
]


def refusal(binary, args):
    """(exit status, stderr) of a start that must fail, or None if it is still running."""
    argv = [binary, "-l", "127.0.0.1", "-U", "0"] + harness.user_args() + list(args)
    if "-p" not in args and "--port" not in args:
        argv += ["-p", "0"]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    return proc.returncode, proc.stderr


def daemonized(r):
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)   # -u's user writes the pid file
        pid_file = os.path.join(tmp, "herdless.pid")
        port = harness.free_port()
        argv = [harness.HERDLESS_BIN, "-d", "-P", pid_file, "-l", "127.0.0.1", "-p", str(port),
                "-U", "0", "-t", "2"] + harness.user_args() + harness.io_args()
        started = subprocess.run(argv, capture_output=True, timeout=harness.TIMEOUT)
        pid = harness.wait_for(lambda: _read(pid_file))
        try:
            r.check(started.returncode == 0, "-d: the command returns 0", repr(started))
            if r.check(pid.isdigit(), "-d -P: the pid file names the daemon", repr(pid)):
                serves_values(r, port)
        finally:
            if pid.isdigit():
                os.kill(int(pid), signal.SIGTERM)
        if pid.isdigit():
            r.check(harness.wait_for(lambda: not os.path.exists("/proc/%s" % pid)), "SIGTERM ends the daemon")
            r.check(not os.path.exists(pid_file), "and it removes its pid file")


def unwritable_pid_file(r):
    """A -P file that cannot be written (a copy of Debian's memcached.conf names
    /var/run/memcached/memcached.pid): memcached says so and serves; so does herdless, and at
    its stop it removes no file it did not write."""
    path = "/nonexistent-herdless-dir/memcached.pid"
    with harness.start_memcached(["-P", path]) as m:
        with harness.Conn(m.port) as c:
            r.equal(c.call(b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n", "memcached -P unwritable: serves")
    d = harness.start_herdless(["-P", path])
    with harness.Conn(d.port) as c:
        r.equal(c.call(b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n", "herdless -P unwritable: serves")
    status, log = d.stop_with(signal.SIGTERM)
    r.check(status == 0 and "Could not open the pid file %s" % path in log and "remove" not in log,
            "the pid file is reported at start, nothing removed at the stop", log[-1000:])


def serves_values(r, port):
    """Values of 1 B to 300 KB (many of the io_uring path's 4 KB receive buffers) set on one
    connection and read back on another."""
    conns = [harness.wait_for(lambda: _connect(port), what="the daemon's port") for _ in range(4)]
    served = 0
    for i, size in enumerate([1, 100, 4095, 4096, 4097, 20000, 65536, 300000]):
        value = bytes((i * 7 + j) % 251 for j in range(size))
        key = b"d%d" % i
        ok = conns[i % 4].call(b"set %s 0 0 %d\r\n%s\r\n" % (key, size, value)) == b"STORED\r\n"
        c = conns[(i + 1) % 4]
        c.send(b"get %s\r\n" % key)
        want = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, size, value)
        served += ok and c.recv_exact(len(want)) == want
    r.equal(served, 8, "-d: values of 1 B to 300 KB stored and read back on other connections")
    want_io = os.environ.get("HERDLESS_IO")
    if want_io in ("uring", "epoll"):
        r.equal(harness.stats(conns[0], b"settings").get("io"), want_io, "-d: stats settings io as asked")
    for c in conns:
        c.close()


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _connect(port):
    try:
        return harness.Conn(port)
    except OSError:
        return None


def listener_marks(port):
    """The fwmark `ss -tlne` shows for the TCP listener on `port` ("" for none)."""
    out = subprocess.run(["ss", "-tlneH", "sport = :%d" % port], capture_output=True, text=True).stdout
    return " ".join(w for w in out.split() if w.startswith("fwmark:"))


def sock_cookie_id(r):
    """-o sock_cookie_id (memcached 1.6.45): the listener carries the mark (as root, which may
    set one; otherwise the refusal is logged and the server serves)."""
    d = harness.start_herdless(["-o", "sock_cookie_id=77"])
    with harness.Conn(d.port) as c:
        r.equal(c.call(b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n", "sock_cookie_id: serves")
    marks = listener_marks(d.port)
    if os.geteuid() == 0:
        r.equal(marks, "fwmark:0x4d", "sock_cookie_id=77: the listener's SO_MARK")
    _, log = d.stop_with(signal.SIGTERM)
    if os.geteuid() != 0:
        r.check("SO_MARK 77" in log, "sock_cookie_id: the refused mark is logged", log[-1000:])
    with harness.start_herdless() as d:
        r.equal(listener_marks(d.port), "", "no sock_cookie_id: no mark")


def body(r):
    daemonized(r)
    unwritable_pid_file(r)
    sock_cookie_id(r)
    with tempfile.TemporaryDirectory() as tmp:
        # getopt prints argv[0]: give both the same one.
        ours = os.path.join(tmp, "herdless", "memcached")
        theirs = os.path.join(tmp, "debian", "memcached")
        for link, target in ((ours, harness.HERDLESS_BIN), (theirs, harness.MEMCACHED_BIN)):
            os.mkdir(os.path.dirname(link))
            os.chmod(os.path.dirname(link), 0o755)
            os.symlink(target, link)
        with open(os.path.join(tmp, "auth-malformed"), "w") as f:
            f.write("user:password\nnocolon\n")
        for args, words in [(a, True) for a in REFUSED] + [(a, False) for a in REFUSED_STATUS_ONLY]:
            args = [a.replace("{tmp}", tmp) for a in args]
            want = refusal(theirs, args)
            if not r.check(want is not None and want[0] != 0, "memcached refuses %s" % args,
                           repr(want)):
                continue
            got = refusal(ours, args)
            got_tail = None if got is None else (got[0], got[1].replace(ours.encode(), theirs.encode()))
            if words:
                r.equal(got_tail, want, "herdless refuses %s with memcached's status and words" % args)
            else:
                r.equal(got_tail and got_tail[0], want[0], "herdless refuses %s with memcached's status"
                        % args)


if __name__ == "__main__":
    harness.run("test_command_line", body)
