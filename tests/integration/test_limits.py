"""Resource edges: a small memory limit evicts instead of failing, many connections at once,
a client that writes far ahead of reading (back-pressure, no lost or reordered replies), and
clients that vanish mid-request. TEST_AGAINST=memcached runs the same checks on memcached.
"""

import shutil
import socket

import harness


def set_line(key, value):
    return b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value)


def small_memory_evicts(r):
    daemon = harness.start_target(["-m", "8"])
    value = b"e" * 10000
    total = 3000  # ~30 MB through an 8 MB cache
    with harness.Conn(daemon.port) as conn:
        bad = []
        for start in range(0, total, 100):
            conn.send(b"".join(set_line(b"ev%d" % i, value) for i in range(start, start + 100)))
            for i in range(start, start + 100):
                line = conn.recv_line()
                if line != b"STORED\r\n":
                    bad.append((i, line))
        r.equal(bad[:5], [], "every set into a full cache is STORED (LRU eviction, no OOM)")
        reply = conn.call(b"get ev%d\r\n" % (total - 1), b"END\r\n")
        r.equal(reply, b"VALUE ev%d 0 10000\r\n%s\r\nEND\r\n" % (total - 1, value),
                "the newest item survives")
        reply = conn.call(b"get ev0\r\n", b"END\r\n")
        r.equal(reply, b"END\r\n", "the oldest item was evicted")
        evictions = harness.stat(conn, b"evictions")
        r.check(evictions is not None and evictions > 0, "stats evictions counts them",
                repr(evictions))
        limit = harness.stat(conn, b"limit_maxbytes")
        r.equal(limit, 8 * 1024 * 1024, "limit_maxbytes reflects -m 8")
        in_use = harness.stat(conn, b"bytes")
        r.check(in_use is not None and in_use <= limit, "bytes stays under the limit",
                "%r > %r" % (in_use, limit))
    r.check(daemon.alive(), "daemon alive after eviction load")
    daemon.stop()


def many_connections(r, daemon):
    count = 400
    conns = []
    try:
        for i in range(count):
            conns.append(harness.Conn(daemon.port))
        for i, c in enumerate(conns):
            c.send(set_line(b"c%d" % i, b"%d" % i))
        for i, c in enumerate(conns):
            c.recv_line()
            c.send(b"get c%d\r\n" % i)
        ok = sum(1 for i, c in enumerate(conns)
                 if c.recv_until(b"END\r\n") == b"VALUE c%d 0 %d\r\n%d\r\nEND\r\n"
                 % (i, len(b"%d" % i), i))
        r.equal(ok, count, "%d simultaneous connections each get their own reply" % count)
    finally:
        for c in conns:
            c.close()
    # The server learns of the closes asynchronously: poll until it has (bounded).
    with harness.Conn(daemon.port) as conn:
        current = harness.wait_for_stat(conn, b"curr_connections", lambda n: n < 50,
                                        harness.TIMEOUT)
        r.check(current is not None and current < 50,
                "closed connections are released (curr_connections %r)" % current)


def slow_reader(r, daemon):
    """Writes 300 gets of a 100 KB value (30 MB of replies) before reading anything."""
    value = bytes(range(256)) * 400
    with harness.Conn(daemon.port, timeout=harness.TIMEOUT * 6) as conn:
        conn.call(set_line(b"slow", value))
        n = 300
        requests = b"".join(b"get slow\r\nincr ctr%d 1\r\n" % (i % 3) for i in range(n))
        conn.send(requests)  # ~7 KB of requests; nothing is read until all are sent
        expected = b"VALUE slow 0 %d\r\n%s\r\nEND\r\nNOT_FOUND\r\n" % (len(value), value)
        good = 0
        for i in range(n):
            got = conn.recv_exact(len(expected))
            good += got == expected
        r.equal(good, n, "all pipelined replies arrive whole and in order")
        r.equal(conn.call(b"version\r\n")[:8], b"VERSION ", "connection usable afterwards")


def vanishing_clients(r, daemon):
    """Clients that disconnect mid-command, mid-value or with replies unread."""
    cases = [b"set a 0 0 100\r\npartial", b"get a b c", b"set a 0 0 5\r\n",
             set_line(b"big", b"z" * 300000) + b"get big\r\n" * 20]
    for data in cases:
        s = socket.create_connection(("127.0.0.1", daemon.port), timeout=harness.TIMEOUT)
        s.sendall(data)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()  # RST with replies pending
    with harness.Conn(daemon.port) as conn:
        r.equal(conn.call(b"get a\r\n", b"END\r\n"), b"END\r\n",
                "an unfinished set stored nothing")
        r.equal(conn.call(b"version\r\n")[:8], b"VERSION ", "daemon answers after resets")
    r.check(daemon.alive(), "daemon alive after vanishing clients")


def workers_fit_the_cpus(r):
    """herdless runs at most one worker per CPU it may use (-t is the most); exact_threads
    keeps -t. Only herdless: memcached always runs -t."""
    if harness.target_name() != "herdless" or shutil.which("taskset") is None:
        return
    for exact, expected in ((False, 1), (True, 3)):
        with harness.start_herdless(["-t", "3"], exact_threads=exact,
                                    prefix=["taskset", "-c", "0"]) as daemon:
            with harness.Conn(daemon.port) as conn:
                r.equal(harness.stat(conn, b"threads"), expected,
                        "-t 3 on one allowed CPU runs %d workers%s" %
                        (expected, " with -o exact_threads" if exact else ""))
                r.equal(conn.call(b"set k 0 0 1\r\nx\r\nget k\r\n", b"END\r\n"),
                        b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n", "and serves")


def body(r):
    workers_fit_the_cpus(r)
    small_memory_evicts(r)
    daemon = harness.start_target(["-c", "1024"])
    many_connections(r, daemon)
    slow_reader(r, daemon)
    vanishing_clients(r, daemon)
    daemon.stop()


if __name__ == "__main__":
    harness.run("test_limits", body)
