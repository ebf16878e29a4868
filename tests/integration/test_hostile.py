"""Hostile and unlucky clients against the real daemon: none of them may crash it, grow it
without bound, or disturb the other clients.

  - more connections than -c: the extra ones get memcached's error and are closed, the
    accepted ones keep working, and a freed slot is reused;
  - clients that send requests but never read: the daemon stops executing and reading for
    them once 4 MiB of replies are owed (daemon/connection.cc), so its RSS stays flat while
    they push, other clients are answered, and when they finally read, every reply is there,
    whole and in order. (memcached does the same: it parks such a connection in conn_mwrite;
    neither closes it, and idle_timeout spares it too.)
  - one byte at a time; a 250-key get sent 2000 times in one write;
  - a declared 1 GB data block (SERVER_ERROR object too large for cache, the block is
    swallowed as it arrives, not buffered) and a 5 MB one (the connection is usable after);
  - an endless line without "\\n" (closed; the daemon does not buffer it);
  - random binary garbage; half-closed sockets; resets in the middle of a reply;
  - a half-closed client that reads its replies slowly is not closed as stalled;
  - half-closed clients that never read hold a bounded number of kernel threads (io=uring);
  - -o idle_timeout closes idle connections.
Every wait is bounded; nothing asserts on timing. TEST_AGAINST=memcached runs the checks that
apply to memcached too (the few herdless-only ones say so).
"""

import os
import random
import select
import socket
import threading
import time

import harness

HERDLESS = harness.target_name() == "herdless"
MAX_OUTPUT = 4 << 20          # daemon/worker.h: WorkerConfig::max_output
MAX_INPUT = (1 << 20) + 65536  # item_size_max + slack: the largest request buffered (approx.)
REFUSED = b"ERROR Too many open connections\r\n"


def set_line(key, value, noreply=False):
    return b"set %s 0 0 %d%s\r\n%s\r\n" % (key, len(value), b" noreply" if noreply else b"",
                                          value)


def value_reply(key, value):
    return b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(value), value)


def reset(sock):
    """Closes with SO_LINGER 0: the peer sees a reset, not a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def still_serves(r, daemon, what):
    """Another client is answered normally (the reference key is intact)."""
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(b"get ref\r\n", b"END\r\n"), value_reply(b"ref", b"reference"),
                "%s: another client is still served" % what)


def too_many_connections(r):
    limit = 64
    daemon = harness.start_target(["-c", str(limit)])
    accepted, refused = [], []
    try:
        for i in range(limit + 16):
            c = harness.Conn(daemon.port)
            reply = c.call(b"version\r\n")
            if reply.startswith(b"VERSION "):
                accepted.append(c)
            else:
                refused.append((c, reply))
        r.check(len(refused) > 0, "connections beyond -c %d are refused" % limit)
        if HERDLESS:
            r.equal(len(accepted), limit, "exactly -c connections are accepted")
        else:
            r.check(len(accepted) <= limit, "at most -c connections are accepted")
        for c, reply in refused[:3]:
            r.equal(reply, REFUSED, "a refused connection is told why")
            r.equal(c.recv_until_eof(), b"", "then closed")
        good = 0
        for i, c in enumerate(accepted):
            c.send(set_line(b"cc%d" % i, b"v%d" % i) + b"get cc%d\r\n" % i)
            good += c.recv_line() == b"STORED\r\n" and \
                c.recv_until(b"END\r\n") == value_reply(b"cc%d" % i, b"v%d" % i)
        r.equal(good, len(accepted), "every accepted connection still works after the refusals")
        for c, _ in refused:
            c.close()
        accepted.pop().close()

        def one_more():
            c = harness.Conn(daemon.port)
            if c.call(b"version\r\n").startswith(b"VERSION "):
                accepted.append(c)
                return True
            c.close()
            return False
        r.check(harness.wait_for(one_more), "a slot freed by a close is reused")
    finally:
        for c in accepted:
            c.close()
    r.check(daemon.alive(), "daemon alive after refusing connections")
    daemon.stop()


class NonReader:
    """Pipelines `set sN <64 KB> noreply` + `get sN` cycles and never reads, until the daemon
    stops taking its bytes. Each get pins a new version of the item (the worst case: the
    owed replies reference items the cache has already replaced). Every value names its
    cycle, so the replies can be checked when it finally reads."""

    SIZE = 65536

    def __init__(self, port, index):
        self.key = b"s%d" % index
        self.conn = harness.Conn(port, timeout=harness.TIMEOUT * 4)
        self.sock = self.conn.sock
        self.sock.setblocking(False)
        self.cycle = 0
        self.pending = b""
        self.gets_sent = 0       # complete get lines handed to the kernel
        self.get_ends = []       # stream offsets where a get line ends
        self.sent = 0

    def value(self, cycle):
        return (b"%s:%07d|" % (self.key, cycle)) * (self.SIZE // 16)

    def push(self, max_cycles, stall_s=0.5):
        """Sends until the daemon takes nothing for stall_s (or max_cycles are sent)."""
        while True:
            if not self.pending:
                if self.cycle >= max_cycles:
                    return False
                v = self.value(self.cycle)
                head = set_line(self.key, v, noreply=True)
                self.pending = head + b"get %s\r\n" % self.key
                self.get_ends.append(self.sent + len(self.pending))
                self.cycle += 1
            _, writable, _ = select.select([], [self.sock], [], stall_s)
            if not writable:
                return True   # stalled: the daemon stopped reading
            try:
                n = self.sock.send(self.pending)
            except BlockingIOError:
                continue
            self.sent += n
            self.pending = self.pending[n:]

    def read_replies(self, r):
        """Reads the reply of every complete get it sent; all must be whole and in order."""
        complete = sum(1 for end in self.get_ends if end <= self.sent)
        bad = 0
        for cycle in range(complete):
            want = value_reply(self.key, self.value(cycle))
            bad += self.conn.recv_exact(len(want)) != want
        r.equal(bad, 0, "%s: all %d owed replies arrive whole and in order" % (self.key, complete))
        return complete

    def close(self):
        self.conn.close()


def non_readers(r):
    daemon = harness.start_target(["-m", "64"])
    with harness.Conn(daemon.port) as c:
        c.call(set_line(b"ref", b"reference"))
    still_serves(r, daemon, "baseline")
    readers = [NonReader(daemon.port, i) for i in range(6)]
    try:
        # Warm up: one stalled client, so allocator arenas and buffers exist.
        first = readers[0]
        r.check(first.push(2000), "a client that never reads is stopped (its sends block)")
        rss0 = daemon.rss_bytes()
        for nr in readers[1:]:
            r.check(nr.push(2000), "%s: never reading, its sends block" % nr.key)
        rss1 = daemon.rss_bytes()
        still_serves(r, daemon, "while six clients do not read")
        # Push again: nothing more may be taken, so the daemon does not grow.
        more = 0
        for nr in readers:
            before = nr.sent
            nr.push(2000, stall_s=0.3)
            more += nr.sent - before
        rss2 = daemon.rss_bytes()
        pushed = sum(nr.sent for nr in readers)
        harness.log("non-readers: %d MB pushed by 6 clients (%d KB more after stalling); RSS "
                    "%d MB with one stalled, %d MB with six, %d MB after pushing again"
                    % (pushed >> 20, more >> 10, rss0 >> 20, rss1 >> 20, rss2 >> 20))
        per_client = MAX_OUTPUT + MAX_INPUT + 2 * NonReader.SIZE
        if not harness.SANITIZED:   # ASan's quarantine and shadow memory make RSS meaningless
            r.check(rss1 - rss0 <= 5 * per_client + (8 << 20),
                    "each stalled client costs the daemon at most its output and input bounds",
                    "RSS grew %d MB for 5 clients" % ((rss1 - rss0) >> 20))
            r.check(rss2 - rss1 <= 2 << 20, "RSS stays flat while stalled clients keep pushing",
                    "RSS grew %d KB" % ((rss2 - rss1) >> 10))
        still_serves(r, daemon, "after the stalled clients pushed again")
        total = sum(nr.read_replies(r) for nr in readers)
        r.check(total > 6 * (MAX_OUTPUT // NonReader.SIZE) // 2,
                "the stalled clients had many replies owed (%d)" % total)
    finally:
        for nr in readers:
            nr.close()
    r.check(daemon.alive(), "daemon alive after non-reading clients")
    daemon.stop()


def trickle(r, daemon):
    script = (set_line(b"tk", b"hello") + b"get tk\r\nincr tn 1\r\nset tn 0 0 1\r\n7\r\n"
              b"incr tn 5\r\nmg tk v k\r\nmn\r\ngets nope\r\n")
    want = (b"STORED\r\n" + value_reply(b"tk", b"hello") + b"NOT_FOUND\r\nSTORED\r\n12\r\n"
            b"VA 5 ktk\r\nhello\r\nMN\r\nEND\r\n")
    with harness.Conn(daemon.port) as c:
        for i in range(len(script)):
            c.send(script[i:i + 1])
            time.sleep(0.001)   # pacing, so the bytes arrive in separate segments
        r.equal(c.recv_exact(len(want)), want, "requests trickled one byte at a time")
        value = bytes(random.Random(3).randrange(256) for _ in range(20000))
        for b in set_line(b"tb", value) + b"get tb\r\n":
            c.send(bytes([b]))
        r.equal(c.recv_exact(8), b"STORED\r\n", "a 20 KB value trickled byte by byte is stored")
        r.equal(c.recv_until(b"END\r\n"), value_reply(b"tb", value), "and read back intact")


def huge_multiget(r, daemon):
    keys = [b"hk%03d" % i for i in range(250)]
    with harness.Conn(daemon.port) as c:
        c.send(b"".join(set_line(k, b"v" + k) for k in keys[::2]))   # half hit, half miss
        for _ in keys[::2]:
            c.recv_line()
    line = b"get " + b" ".join(keys) + b"\r\n"
    want = b"".join(b"VALUE %s 0 %d\r\nv%s\r\n" % (k, len(k) + 1, k) for k in keys[::2]) + \
        b"END\r\n"
    times = 2000
    with harness.Conn(daemon.port, timeout=harness.TIMEOUT * 4) as c:
        writer = threading.Thread(target=c.send, args=(line * times,))
        writer.start()   # %d MB in one write while this thread reads the replies
        good = 0
        for _ in range(times):
            good += c.recv_exact(len(want)) == want
        writer.join(harness.TIMEOUT * 4)
        r.equal(good, times, "a 250-key get sent %d times in one write (%d MB): every reply "
                "whole" % (times, len(line) * times >> 20))
        r.equal(c.call(b"version\r\n")[:8], b"VERSION ", "connection usable afterwards")


def declared_huge(r, daemon):
    with harness.Conn(daemon.port) as c:
        c.call(set_line(b"big", b"old"))
        c.send(b"set big 0 0 5000000\r\n" + b"x" * 5000000 + b"\r\nget big\r\n")
        r.equal(c.recv_line(), b"SERVER_ERROR object too large for cache\r\n",
                "a 5 MB block is refused")
        r.equal(c.recv_until(b"END\r\n"), b"END\r\n",
                "the block is swallowed, the next command runs; the old value is gone")
    if not HERDLESS:
        return   # memcached answers only once the whole block is swallowed
    with harness.Conn(daemon.port) as c:
        c.send(b"set huge 0 0 1073741824\r\n")
        r.equal(c.recv_line(), b"SERVER_ERROR object too large for cache\r\n",
                "a declared 1 GB block is refused at once")
        rss0 = daemon.rss_bytes()
        filler = b"set x 0 0 1\r\nget ref\r\n" * 10000   # inside the block: not commands
        for _ in range((32 << 20) // len(filler)):
            c.send(filler)
        rss1 = daemon.rss_bytes()
        if not harness.SANITIZED:
            r.check(rss1 - rss0 < 8 << 20, "32 MB of the 1 GB block are swallowed, not buffered",
                    "RSS grew %d MB" % ((rss1 - rss0) >> 20))
        c.sock.settimeout(0.3)
        try:
            early = c.sock.recv(100)
        except socket.timeout:
            early = b"(nothing)"
        r.equal(early, b"(nothing)", "nothing inside the block is executed")
    still_serves(r, daemon, "after a 1 GB declaration")


def endless_line(r, daemon):
    for name, head in ((b"garbage line", b""), (b"get line", b"get ")):
        if head and not HERDLESS:
            continue   # memcached keeps reading a huge get line (bounded only by its memory)
        s = socket.create_connection(("127.0.0.1", daemon.port), timeout=harness.TIMEOUT)
        s.sendall(head)
        chunk = (b"k" * 1000 + b" ") if head else b"a" * 10000
        sent, closed = 0, False
        try:
            while sent < 64 << 20:
                s.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            closed = True
        if not closed:
            try:
                closed = s.recv(100) == b""
            except ConnectionResetError:
                closed = True
            except socket.timeout:
                closed = False
        s.close()
        r.check(closed, "an endless %s without \\n is cut off (after %d KB)"
                % (name.decode(), sent >> 10))
        bound = 2048 if not head else MAX_INPUT
        harness.log("endless %s: closed after %d KB were sent (the daemon keeps at most %d KB)"
                    % (name.decode(), sent >> 10, bound >> 10))
    still_serves(r, daemon, "after endless lines")


def garbage(r, daemon):
    outcomes = []
    for seed in range(6):
        rng = random.Random(seed)
        junk = bytes(rng.randrange(256) for _ in range(200000))
        with harness.Conn(daemon.port) as c:
            try:
                c.send(junk + b"\r\nversion\r\n")
                reply = c.recv_until(b"VERSION ", at_line_start=True)
                outcomes.append("answered %d error lines" % reply.count(b"ERROR"))
            except (EOFError, BrokenPipeError, ConnectionResetError):
                outcomes.append("closed")
    harness.log("garbage: " + "; ".join(outcomes))
    r.check(daemon.alive(), "random binary garbage does not crash the daemon")
    still_serves(r, daemon, "after garbage")


def half_closed(r, daemon):
    value = bytes(range(256)) * 400   # 100 KB
    with harness.Conn(daemon.port) as c:
        c.send(set_line(b"hc", value) + b"get hc\r\n" * 50 + b"incr hn 1\r\n")
        c.sock.shutdown(socket.SHUT_WR)
        want = b"STORED\r\n" + value_reply(b"hc", value) * 50 + b"NOT_FOUND\r\n"
        got = c.recv_until_eof()
        r.equal(len(got), len(want), "after shutdown(SHUT_WR) every reply still arrives")
        r.check(got == want, "whole and in order, then the daemon closes")


def resets_mid_reply(r, daemon):
    value = bytes(range(256)) * 4096   # 1 MB
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(set_line(b"rr", value[:1000000])), b"STORED\r\n", "1 MB value stored")
        base = harness.stat(c, b"curr_connections")
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", daemon.port), timeout=harness.TIMEOUT)
        s.sendall(b"get rr\r\n" * 30)
        got = 0
        while got < 100000 * (i % 5 + 1):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += len(chunk)
        reset(s)
    with harness.Conn(daemon.port) as c:
        released = harness.wait_for(lambda: harness.stat(c, b"curr_connections") <= base)
        r.check(released, "connections reset mid-reply are released")
    still_serves(r, daemon, "after resets mid-reply")


def idle_timeout(r):
    daemon = harness.start_target(["-o", "idle_timeout=2"])
    idle = harness.Conn(daemon.port, timeout=harness.TIMEOUT * 2)
    partial = harness.Conn(daemon.port, timeout=harness.TIMEOUT * 2)
    partial.send(b"get k")
    # memcached spares a connection idle inside a data block (conn_nread); herdless does not.
    in_block = harness.Conn(daemon.port, timeout=harness.TIMEOUT * 2)
    in_block.send(b"set k 0 0 10\r\nabc")
    active = harness.Conn(daemon.port)
    answered = 0
    for _ in range(10):
        answered += active.call(b"version\r\n").startswith(b"VERSION ")
        time.sleep(0.25)
    r.equal(answered, 10, "a connection in use is not timed out")
    r.equal(idle.recv_until_eof(), b"", "an idle connection is closed by idle_timeout")
    r.equal(partial.recv_until_eof(), b"", "so is one idle in the middle of a request line")
    if HERDLESS:
        r.equal(in_block.recv_until_eof(), b"", "and one idle in the middle of a data block")
    r.equal(harness.stat(active, b"idle_kicks"), 3 if HERDLESS else 2,
            "stats idle_kicks counts the connections closed")
    for c in (idle, partial, in_block, active):
        c.close()
    r.check(daemon.alive(), "daemon alive after idle timeouts")
    daemon.stop()


def stalled_client_closed(r):
    """-o stalled_client_timeout: a client that reads none of its owed replies once they
    reach the output bound is closed after that many seconds; the others are untouched."""
    daemon = harness.start_target(["-o", "stalled_client_timeout=1"])
    control = harness.Conn(daemon.port)
    control.call(set_line(b"ref", b"reference"))
    before = harness.stat(control, b"curr_connections")
    nr = NonReader(daemon.port, 0)
    try:
        r.check(nr.push(2000), "a client that never reads is stopped (its sends block)")
        now = harness.wait_for_stat(control, b"curr_connections", lambda n: n <= before,
                                    harness.TIMEOUT * 4)
        r.equal(now, before, "the stalled client is closed past stalled_client_timeout")
        r.equal(control.call(b"get ref\r\n", b"END\r\n"), value_reply(b"ref", b"reference"),
                "the other client keeps being served")
    finally:
        nr.close()
        control.close()
    r.check(daemon.alive(), "daemon alive after closing a stalled client")
    daemon.stop()


class PacedReader:
    """Reads a socket until EOF at about `rate` bytes/s on average: after each read it sleeps
    until the bytes it has read are due, so a late wake-up is made up, not carried on. Gives up
    after `give_up_s` seconds without a byte (the daemon would have closed or hung)."""

    def __init__(self, sock, rate, give_up_s):
        self.sock = sock
        self.rate = rate
        self.sock.settimeout(give_up_s)

    def read_all(self):
        got = bytearray()
        start = time.monotonic()
        while True:
            try:
                chunk = self.sock.recv(16384)
            except (socket.timeout, ConnectionResetError):
                return bytes(got), "no byte for %.0fs or a reset" % self.sock.gettimeout()
            if not chunk:
                return bytes(got), "EOF"
            got += chunk
            due = start + len(got) / self.rate
            time.sleep(max(0.0, due - time.monotonic()))


def half_closed_slow_reader(r):
    """A client that pipelines gets of 1 MB values, half-closes (shutdown(SHUT_WR), as `nc -q`
    or a batch loader does) and then reads steadily, slower than the daemon could send, is
    not stalled: every reply arrives. On io=uring a send the kernel retries once the peer has
    half-closed blocks in a kernel worker until all of it is out and completes only then, so
    a send carries what the socket can take and at most Ring::kSendMax (256 KB) more
    (daemon/uring_transport.h). Before that bound one send held the whole backlog (4 MB and
    more), and this client was closed as stalled after reading about 7 of its 10 MB.
    COUNT values: the first ~5 MB fill the socket's buffers, the rest keep the backlog at the
    output bound while the client reads. At RATE a bounded send completes about every 0.25 s,
    against STALLED_S without progress to be closed: scheduling delays of several times that
    do not matter. Takes COUNT MB / RATE, about 10 s."""
    stalled_s, count, rate = 2, 10, 1 << 20
    daemon = harness.start_target(["-o", "stalled_client_timeout=%d" % stalled_s])
    value = (bytes(range(256)) * 4096)[:(1 << 20) - 512]   # about the largest item (-I 1m)
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(set_line(b"big", value)), b"STORED\r\n", "a 1 MB value is stored")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # A small receive window, set before connect so that it holds: the daemon's sends wait
        # for this reader rather than filling megabytes of socket buffer at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.settimeout(harness.TIMEOUT)
        sock.connect(("127.0.0.1", daemon.port))
        sock.sendall(b"get big\r\n" * count)
        sock.shutdown(socket.SHUT_WR)
        got, why = PacedReader(sock, rate, stalled_s * 3 + harness.TIMEOUT).read_all()
    finally:
        sock.close()
    want = value_reply(b"big", value) * count
    r.equal(len(got), len(want), "a half-closed client reading %d KB/s gets all %d replies "
            "(ended by: %s)" % (rate >> 10, count, why))
    r.check(got == want, "whole and in order, then the daemon closes")
    r.check(daemon.alive(), "daemon alive after a half-closed slow reader")
    daemon.stop()


def kernel_workers(pid):
    """The process's io_uring worker threads (io-wq's, named iou-wrk-<tid>)."""
    count = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                count += f.read().startswith("iou-wrk")
        except OSError:
            pass   # the thread ended meanwhile
    return count


def half_closed_non_readers(r):
    """Clients that get a 512 KB value 24 times over, half-close and never read: on
    io=uring each one's send waits in a kernel worker thread (see half_closed_slow_reader),
    and without a bound CLIENTS of them made CLIENTS threads. A ring has at most
    Ring::kSendWorkers (16) of them, so 2 workers at most 32; the sends beyond wait their
    turn. Others are served meanwhile, and stalled_client_timeout closes every one of them
    (a waiting send is cancelled with its connection). On epoll there are no such threads."""
    clients, workers, stalled_s = 60, 2, 2
    daemon = harness.start_target(["-t", str(workers), "-o", "stalled_client_timeout=%d" % stalled_s])
    control = harness.Conn(daemon.port)
    value = b"h" * (512 << 10)
    r.equal(control.call(set_line(b"big", value)), b"STORED\r\n", "a 512 KB value is stored")
    before = harness.stat(control, b"curr_connections")
    socks = []
    try:
        for _ in range(clients):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", daemon.port))
            s.sendall(b"get big\r\n" * 24)   # 12 MB: past the 4 MB bound with full buffers
            s.shutdown(socket.SHUT_WR)
            socks.append(s)
        most = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:   # while the sends start and wait
            most = max(most, kernel_workers(daemon.proc.pid))
            time.sleep(0.05)
        harness.log("half-closed non-readers: at most %d kernel worker threads" % most)
        r.check(most <= workers * 16, "%d half-closed non-readers hold at most %d kernel threads"
                % (clients, workers * 16), "saw %d" % most)
        r.equal(control.call(b"get nope\r\n"), b"END\r\n", "another client is served meanwhile")
        now = harness.wait_for_stat(control, b"curr_connections", lambda n: n <= before,
                                    stalled_s + harness.TIMEOUT * 4)
        # (At most: `before` may still count the start's readiness probe, closed meanwhile.)
        r.check(now <= before, "every half-closed non-reader is closed past stalled_client_timeout",
                "curr_connections %d, %d before them" % (now, before))
    finally:
        for s in socks:
            s.close()
        control.close()
    r.check(daemon.alive(), "daemon alive after half-closed non-readers")
    daemon.stop()


def body(r):
    too_many_connections(r)
    non_readers(r)
    if HERDLESS:
        stalled_client_closed(r)
        half_closed_slow_reader(r)
        half_closed_non_readers(r)
    daemon = harness.start_target(["-c", "1024"])
    with harness.Conn(daemon.port) as c:
        c.call(set_line(b"ref", b"reference"))
    trickle(r, daemon)
    huge_multiget(r, daemon)
    declared_huge(r, daemon)
    endless_line(r, daemon)
    garbage(r, daemon)
    half_closed(r, daemon)
    resets_mid_reply(r, daemon)
    r.check(daemon.alive(), "daemon alive after every hostile client")
    daemon.stop()
    idle_timeout(r)


if __name__ == "__main__":
    harness.run("test_hostile", body)
