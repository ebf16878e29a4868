"""Many connections hammering overlapping keys; every reply must be whole and self-consistent.

THREADS threads each drive CONNS connections (one speaking the text protocol, one the binary
protocol) through OPS random set/get/delete/multi-get operations on a small shared key set. Every value encodes its key, writer, sequence number
and a CRC, so a get must return either a miss or a value written for that very key, intact
(no torn or mixed value). Counters built with incr and with gets/cas loops must end exact.
A few ~500 KB values exercise partial reads and writes. The daemon must still answer at the
end. TEST_AGAINST=memcached runs the same load against memcached.
"""

import random
import threading
import zlib

import harness
from binproto import OP, BinConn, get as bin_get, incr as bin_incr, packet, set_ as bin_set

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

    def pipeline(self, pairs):
        """Sets every (key, value) and gets their keys, in one write."""
        batch = b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in pairs)
        self.conn.send(batch + b"get %s\r\n" % b" ".join(k for k, _ in pairs))
        for _ in pairs:
            self.expect(b"STORED\r\n")
        return self.read_values(b"pipelined get")

    def incr(self, key):
        self.conn.send(b"incr %s 1\r\n" % key)
        line = self.conn.recv_line()
        if not line.rstrip().isdigit():
            raise AssertionError("incr %r: %r" % (key, line))

    def cas(self, key, value, cas):
        """True if stored, False if the CAS no longer matched."""
        self.conn.send(b"cas %s 0 0 %d %s\r\n%s\r\n" % (key, len(value), cas, value))
        line = self.conn.recv_line()
        if line not in (b"STORED\r\n", b"EXISTS\r\n"):
            raise AssertionError("cas %r: %r" % (key, line))
        return line == b"STORED\r\n"

    def close(self):
        self.conn.close()


class BinaryClient:
    """The same operations over the binary protocol (quiet gets ended by a Noop)."""

    def __init__(self, port):
        self.conn = BinConn(port)
        self.opaque = 0

    def _ok(self, resp, what, allowed=(0,)):
        if resp.status not in allowed:
            raise AssertionError("%s: status %#x %r" % (what, resp.status, resp.value[:60]))
        return resp

    def set(self, key, value):
        self._ok(self.conn.call(bin_set(key, value)), "set %r" % key)

    def read_values(self, sent, what):
        self.opaque += 1
        out = [(p.key, p.value, p.cas) for p in self.conn.until_noop(self.opaque)
               if p.opcode == OP["GETKQ"]]
        for k, v, _ in out:
            if k not in sent:
                raise AssertionError("%s: unexpected key %r" % (what, k))
        return out

    def get(self, *keys, cas=False):
        self.conn.send(b"".join(bin_get(k, op="GETKQ") for k in keys))
        return self.read_values(keys, "get")

    def delete(self, key):
        self._ok(self.conn.call(packet("DELETE", key)), "delete %r" % key, (0, 1))

    def pipeline(self, pairs):
        self.conn.send(b"".join(bin_set(k, v, op="SETQ") for k, v in pairs) +
                       b"".join(bin_get(k, op="GETKQ") for k, _ in pairs))
        return self.read_values([k for k, _ in pairs], "pipelined get")

    def incr(self, key):
        self._ok(self.conn.call(bin_incr(key, 1, exptime=0xFFFFFFFF)), "incr %r" % key)

    def cas(self, key, value, cas):
        resp = self._ok(self.conn.call(bin_set(key, value, cas=cas)), "cas %r" % key, (0, 2))
        return resp.status == 0

    def close(self):
        self.conn.close()


def worker(port, index, errors, stats):
    rng = random.Random(index)
    clients = [Client(port), BinaryClient(port)][:CONNS]
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
                for k, v, _ in c.pipeline([(k, make_value(k, index, seq, 100)) for k in keys]):
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
        c = clients[index % len(clients)]   # half the threads count in binary
        for _ in range(INCRS_PER_THREAD):
            c.incr(b"counter")
        done = 0
        while done < CAS_PER_THREAD:
            (_, value, cas), = c.get(b"casctr", cas=True)
            if c.cas(b"casctr", b"%d" % (int(value.strip()) + 1), cas):
                done += 1
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
