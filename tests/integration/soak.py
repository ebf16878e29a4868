"""Soak: many connections doing set/get/delete/incr/cas (and mg) on overlapping keys for a
bounded time, against a small cache (-m 8) with short TTLs, so items are constantly evicted
and expire under the readers. Values are test_concurrency's self-checking values (key,
writer, sequence number, CRC); every value written is also recorded, so every read must be a
miss or a value some client wrote for that very key, whole. Counters (incr) must always read
back as numbers. Not a test_*.py: scripts/soak.sh runs it for minutes, scripts/test.sh for
20 s against the ASan (and TSan) builds.

    soak.py [seconds]   (HERDLESS_BIN picks the daemon; TEST_AGAINST=memcached works too)
"""

import random
import sys
import threading
import time

import harness
from test_concurrency import Client, make_value, value_problem

CONNECTIONS = 16
KEYS = [b"soak%d" % i for i in range(1500)]   # ~16 MB of values (mean 10.6 KB): over -m 8
COUNTERS = [b"ctr%d" % i for i in range(8)]
TTLS = (0, 0, 0, 1, 2, 3)


class Ledger:
    """Every (key, writer, seq) ever sent in a set or cas, and the run's counts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.written = set()
        self.counts = {"ops": 0, "verified": 0, "misses": 0, "sets": 0, "gets": 0,
                       "deletes": 0, "incrs": 0, "cas_stored": 0, "cas_other": 0}
        self.errors = []

    def record_write(self, key, writer, seq):
        with self.lock:
            self.written.add((key, writer, seq))

    def check_read(self, key, value):
        problem = value_problem(key, value)
        if problem is None:
            writer, seq = value.split(b"|")[1:3]
            with self.lock:
                if (key, int(writer), int(seq)) not in self.written:
                    problem = "a value nobody wrote for this key"
        with self.lock:
            if problem:
                self.errors.append("key %r: %s (%d bytes: %r...)"
                                   % (key, problem, len(value), value[:40]))
            else:
                self.counts["verified"] += 1

    def add(self, local):
        with self.lock:
            for name, n in local.items():
                self.counts[name] += n


def worker(port, index, deadline, ledger):
    rng = random.Random(index)
    client = Client(port)
    local = dict.fromkeys(ledger.counts, 0)
    seq = 0

    def new_value(key):
        nonlocal seq
        seq += 1
        size = int(2 ** rng.uniform(3, 16.6))   # 8 B .. 100 KB
        ledger.record_write(key, index, seq)
        return make_value(key, index, seq, size)

    try:
        while time.monotonic() < deadline:
            for _ in range(50):
                local["ops"] += 1
                key = rng.choice(KEYS)
                roll = rng.random()
                if roll < 0.30:
                    value = new_value(key)
                    ttl = rng.choice(TTLS)
                    client.conn.send(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value))
                    client.expect(b"STORED\r\n")
                    local["sets"] += 1
                elif roll < 0.60:
                    keys = rng.sample(KEYS, rng.choice((1, 1, 1, 4, 12)))
                    found = client.get(*keys)
                    local["gets"] += 1
                    local["misses"] += len(keys) - len(found)
                    for k, v, _ in found:
                        if k not in keys:
                            ledger.errors.append("get %r returned key %r" % (keys, k))
                        ledger.check_read(k, v)
                elif roll < 0.68:
                    client.conn.send(b"mg %s v k\r\n" % key)
                    line = client.conn.recv_line()
                    if line.startswith(b"EN"):
                        local["misses"] += 1
                    else:
                        f = line.split()
                        if f[0] != b"VA" or f[2] != b"k" + key:
                            raise AssertionError("mg %r: %r" % (key, line))
                        data = client.conn.recv_exact(int(f[1]) + 2)
                        ledger.check_read(key, data[:-2])
                elif roll < 0.75:
                    client.delete(key)
                    local["deletes"] += 1
                elif roll < 0.88:
                    ctr = rng.choice(COUNTERS)
                    client.conn.send(b"incr %s %d\r\n" % (ctr, rng.randrange(1, 100)))
                    line = client.conn.recv_line()
                    if line == b"NOT_FOUND\r\n":   # evicted or never set: start it again
                        client.conn.send(b"add %s 0 0 1\r\n0\r\n" % ctr)
                        line = client.conn.recv_line()
                        if line not in (b"STORED\r\n", b"NOT_STORED\r\n"):
                            raise AssertionError("add %r: %r" % (ctr, line))
                    elif not line.rstrip().isdigit():
                        raise AssertionError("incr %r: %r" % (ctr, line))
                    for k, v, _ in client.get(ctr):
                        if not v.isdigit():
                            ledger.errors.append("counter %r reads %r" % (ctr, v[:40]))
                    local["incrs"] += 1
                else:
                    found = client.get(key, cas=True)
                    for k, v, _ in found:
                        ledger.check_read(k, v)
                    if not found:
                        local["misses"] += 1
                        continue
                    value = new_value(key)
                    client.conn.send(b"cas %s 0 %d %d %s\r\n%s\r\n"
                                     % (key, rng.choice(TTLS), len(value), found[0][2], value))
                    line = client.conn.recv_line()
                    if line == b"STORED\r\n":
                        local["cas_stored"] += 1
                    elif line in (b"EXISTS\r\n", b"NOT_FOUND\r\n"):
                        local["cas_other"] += 1
                    else:
                        raise AssertionError("cas %r: %r" % (key, line))
    except Exception as e:  # recorded; the main thread reports it
        with ledger.lock:
            ledger.errors.append("connection %d: %s: %s" % (index, type(e).__name__, e))
    finally:
        ledger.add(local)
        client.close()


def body(r, seconds):
    daemon = harness.start_target(["-m", "8", "-t", "4", "-c", "256"])
    ledger = Ledger()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=worker, args=(daemon.port, i, deadline, ledger))
               for i in range(CONNECTIONS)]
    r.check(harness.run_threads(threads, seconds), "every soak connection finished")
    with harness.Conn(daemon.port) as c:
        stats = harness.stat_values(c, "evictions", "reclaimed", "expired_unfetched", "curr_items")
    counts = ledger.counts
    harness.log("soak: %d s, %d connections: %d operations (%d sets, %d gets, %d deletes, "
                "%d incrs, %d cas stored, %d cas refused); %d verified reads, %d misses; "
                "evictions %s, reclaimed %s, expired_unfetched %s; %d errors"
                % (seconds, CONNECTIONS, counts["ops"], counts["sets"], counts["gets"],
                   counts["deletes"], counts["incrs"], counts["cas_stored"], counts["cas_other"],
                   counts["verified"], counts["misses"], stats["evictions"], stats["reclaimed"],
                   stats["expired_unfetched"], len(ledger.errors)))
    r.check(not ledger.errors, "every read was a miss or a value written for its key",
            "\n".join(ledger.errors[:20]))
    r.check(counts["verified"] > 0 and counts["misses"] > 0, "the soak saw both hits and misses")
    r.check((stats["evictions"] or 0) > 0, "the soak ran through evictions")
    r.check(daemon.alive(), "daemon alive after the soak")
    daemon.stop()


if __name__ == "__main__":
    duration = int(sys.argv[1]) if len(sys.argv) > 1 else 180
    harness.run("soak", lambda r: body(r, duration))
