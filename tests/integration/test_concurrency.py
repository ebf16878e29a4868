"""Many connections hammering overlapping keys; every reply must be whole and self-consistent.

THREADS threads each drive CONNS connections through OPS random set/get/delete/multi-get
operations on a small shared key set. Every value encodes its key, writer, sequence number
and a CRC, so a get must return either a miss or a value written for that very key, intact
(no torn or mixed value). Counters built with incr and with gets/cas loops must end exact.
A few ~500 KB values exercise partial reads and writes. The daemon must still answer at the
end. TEST_AGAINST=memcached runs the same load against memcached.
"""

import random
import threading
import zlib

import harness

THREADS = 8
CONNS = 2
OPS = 2000
KEYS = [b"key%d" % i for i in range(24)]
BIG_KEYS = [b"big%d" % i for i in range(3)]
INCRS_PER_THREAD = 200
CAS_PER_THREAD = 50


def make_value(key, writer, seq, size):
    body = b"%s|%d|%d|" % (key, writer, seq)
    body += bytes((seq + i) % 251 for i in range(size)) if size < 4096 else \
        (b"%08d" % seq) * (size // 8)
    return body + b"|%08x" % zlib.crc32(body)


def value_problem(key, value):
    """None if value is a whole value written for key, else what is wrong with it."""
    body, sep, crc = value.rpartition(b"|")
    if not sep or len(crc) != 8:
        return "no checksum"
    if b"%08x" % zlib.crc32(body) != crc:
        return "checksum mismatch (torn or mixed value)"
    if body.split(b"|", 1)[0] != key:
        return "value belongs to key %r" % body.split(b"|", 1)[0]
    return None


class Client:
    """A raw connection with the few commands the load uses; any odd reply raises."""

    def __init__(self, port):
        self.conn = harness.Conn(port)

    def expect(self, want):
        line = self.conn.recv_line()
        if line != want:
            raise AssertionError("want %r, got %r" % (want, line))

    def send_set(self, key, value):
        self.conn.send(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))

    def set(self, key, value):
        self.send_set(key, value)
        self.expect(b"STORED\r\n")

    def read_values(self, command):
        """(key, value, cas) triples of a get/gets reply."""
        out = []
        while True:
            line = self.conn.recv_line()
            if line == b"END\r\n":
                return out
            f = line.split()
            if not f or f[0] != b"VALUE" or len(f) < 4:
                raise AssertionError("%s: unexpected line %r" % (command, line))
            data = self.conn.recv_exact(int(f[3]) + 2)
            if data[-2:] != b"\r\n":
                raise AssertionError("%s: data block of %r not ended by CRLF" % (command, f[1]))
            out.append((f[1], data[:-2], f[4] if len(f) > 4 else None))

    def get(self, *keys, cas=False):
        command = b"%s %s\r\n" % (b"gets" if cas else b"get", b" ".join(keys))
        self.conn.send(command)
        return self.read_values(command)

    def delete(self, key):
        self.conn.send(b"delete %s\r\n" % key)
        line = self.conn.recv_line()
        if line not in (b"DELETED\r\n", b"NOT_FOUND\r\n"):
            raise AssertionError("delete: %r" % line)

    def close(self):
        self.conn.close()


def worker(port, index, errors, stats):
    rng = random.Random(index)
    clients = [Client(port) for _ in range(CONNS)]
    try:
        for seq in range(OPS):
            c = clients[seq % CONNS]
            key = rng.choice(KEYS)
            roll = rng.random()
            if roll < 0.35:
                c.set(key, make_value(key, index, seq, rng.randrange(0, 3000)))
            elif roll < 0.40:
                # pipelined: three sets and a get in one write
                keys = [rng.choice(KEYS) for _ in range(3)]
                batch = b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in
                                 ((k, make_value(k, index, seq, 100)) for k in keys))
                c.conn.send(batch + b"get %s\r\n" % b" ".join(keys))
                for _ in keys:
                    c.expect(b"STORED\r\n")
                for k, v, _ in c.read_values(b"pipelined get"):
                    check_value(k, v, errors, stats)
            elif roll < 0.47:
                c.delete(key)
            elif roll < 0.55:
                keys = rng.sample(KEYS, 5)
                found = c.get(*keys)
                returned = [k for k, _, _ in found]
                if [k for k in keys if k in returned] != returned:
                    errors.append("multi-get returned %r for %r" % (returned, keys))
                for k, v, _ in found:
                    check_value(k, v, errors, stats)
            elif roll < 0.56 and index < len(BIG_KEYS):
                big = BIG_KEYS[index]
                c.set(big, make_value(big, index, seq, 500 * 1024))
                for k, v, _ in c.get(big):
                    check_value(k, v, errors, stats)
                    stats["big"] += 1
            else:
                for k, v, _ in c.get(key):
                    if k != key:
                        errors.append("get %r returned key %r" % (key, k))
                    check_value(k, v, errors, stats)
        # exact counters: incr is atomic, and so is a gets/cas retry loop
        c = clients[0]
        for _ in range(INCRS_PER_THREAD):
            c.conn.send(b"incr counter 1\r\n")
            line = c.conn.recv_line()
            if not line.rstrip().isdigit():
                raise AssertionError("incr counter: %r" % line)
        done = 0
        while done < CAS_PER_THREAD:
            (_, value, cas), = c.get(b"casctr", cas=True)
            new = b"%d" % (int(value) + 1)
            c.conn.send(b"cas casctr 0 0 %d %s\r\n%s\r\n" % (len(new), cas, new))
            line = c.conn.recv_line()
            if line == b"STORED\r\n":
                done += 1
            elif line != b"EXISTS\r\n":
                raise AssertionError("cas casctr: %r" % line)
            else:
                stats["cas_retries"] += 1
    except Exception as e:  # recorded; the main thread reports it
        errors.append("thread %d: %s: %s" % (index, type(e).__name__, e))
    finally:
        for c in clients:
            c.close()


lock = threading.Lock()


def check_value(key, value, errors, stats):
    problem = value_problem(key, value)
    with lock:
        stats["hits"] += 1
        if problem:
            errors.append("key %r: %s (%d bytes: %r...)" % (key, problem, len(value), value[:40]))


def body(r):
    daemon = harness.start_target(["-t", "4"])
    setup = Client(daemon.port)
    setup.set(b"counter", b"0")
    setup.set(b"casctr", b"0")

    errors = []
    stats = {"hits": 0, "big": 0, "cas_retries": 0}
    threads = [threading.Thread(target=worker, args=(daemon.port, i, errors, stats))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=harness.TIMEOUT * 60)
    r.check(not any(t.is_alive() for t in threads), "all load threads finished")
    harness.log("concurrency: %d threads x %d connections x %d ops; %d values checked, "
                "%d big, %d cas retries" % (THREADS, CONNS, OPS, stats["hits"], stats["big"],
                                            stats["cas_retries"]))
    r.check(not errors, "no errors under load (%d)" % len(errors), "\n".join(errors[:20]))
    r.check(stats["hits"] > 1000, "the load saw many hits", str(stats["hits"]))

    (_, counter, _), = setup.get(b"counter")
    r.equal(int(counter), THREADS * INCRS_PER_THREAD, "incr counter is exact")
    (_, casctr, _), = setup.get(b"casctr")
    r.equal(int(casctr), THREADS * CAS_PER_THREAD, "gets/cas counter is exact")

    # a big value read back in one piece on a fresh connection
    big = make_value(b"final", 99, 1, 500 * 1024)
    setup.set(b"final", big)
    r.equal(setup.get(b"final"), [(b"final", big, None)], "500 KB value round-trips")

    setup.conn.send(b"version\r\n")
    r.check(setup.conn.recv_line().startswith(b"VERSION "), "daemon still answers version")
    setup.close()
    r.check(daemon.alive(), "daemon still running")
    daemon.stop()


if __name__ == "__main__":
    harness.run("test_concurrency", body)
