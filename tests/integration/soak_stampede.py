"""Stampede soak: the meta read-through protocol under load, every reply checked against a
ledger of what each connection sent and when it was answered. Connections loop over
`mg <key> v c N30` (on W: "recompute" for 0-3 ms, then `ms <key> ... C<cas>`, or now and then
close the connection instead: a holder that dies), plain `ms`, `md`, `md I`, `mg` without N and
multi-key `get`s, on shared keys with TTLs of 0-3 s and `-o stale_grace`. Two servers at once:

- "strict" (24 hot keys, -m 64: nothing is evicted; lease_timeout 3 s, a thousand times a
  live holder's hold), for the lease rules: at most one lease a key at a time (no W granted
  while another connection holds one, unless a write, delete or invalidation by someone else
  may have come between, or the lease may have timed out); a holder's store is refused only
  then; only the leases of holders that died time out; and a lease timeout after the run, no
  key answers Z (a dead holder costs lease_timeout, then its lease passes on).
- "classic" (the same keys, -o classic_stampede=wait): the same lease rules for read-through
  clients that only know get, set and add (a one-key get's miss is its lease; the others
  park until it is filled, or until the dead holder's lease times out); after the run every
  key's get is answered (no reader parks for good).
- "lossy" (1,500 keys of 8 B-100 KB in -m 8 with the flash tier and a snapshot every second),
  for the value rules through eviction, flash and a restart: stopped with SIGTERM at the end,
  started again from its snapshot and flash file, and every key read again; then loaded
  again, killed (SIGKILL) and every key read again (the change journal keeps out what was
  written after the last snapshot began).

On both: every value read is one a client wrote for that key, whole; no value whose `ms` was
refused is ever read; and no read returns a value that a later write or delete had replaced
before the read was sent (one sent after that value's `ms` was answered, and answered before
the read was sent). `md I` and expiry leave a stale value, which may be served (with X):
they replace nothing. Times are taken conservatively (a send's before it is sent, an answer's
after it is read, under one lock), so a violation found is one whatever the scheduling.

Not a test_*.py: scripts/test.sh runs it for 20 s against the ASan and TSan builds,
scripts/soak.sh for longer.
    soak_stampede.py [seconds]   (HERDLESS_BIN picks the daemon)
"""

import bisect
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

import harness
from test_concurrency import make_value, value_problem

CONNECTIONS = 8   # a server
STRICT_KEYS = [b"hot%d" % i for i in range(24)]
# Keys only ever read through (no other store, delete or invalidation, no XFetch): a dead
# holder's lease on one of them can only time out (lease_timeouts).
READ_ONLY_KEYS = frozenset(STRICT_KEYS[:4])
LOSSY_KEYS = [b"soak%d" % i for i in range(1500)]   # ~16 MB of values (mean 10.6 KB): over -m 8
TTLS = (0, 0, 1, 2, 3)
LEASE_TIMEOUT_S = 3   # strict and classic: what a holder that died costs
# A classic read parks up to a lease timeout a dead holder, and the reader that takes the
# lease over may die too (a fifth do, on the read-only keys): a reply may take a few.
REPLY_TIMEOUT_S = harness.TIMEOUT + 10 * LEASE_TIMEOUT_S
INF = float("inf")


class Ledger:
    """What one server's connections sent and were answered. Times come from now(), taken under
    the one lock, so everything recorded before a time is in the ledger when that time is read."""

    def __init__(self, strict):
        self.strict = strict
        self.lock = threading.Lock()
        self.writes = {}      # (writer, seq) -> [send, answer time or INF, status or None]
        self.replaced = {}    # key -> ([answer time], [latest send so far]): ms HD and md HD
        self.grants = {}      # key -> [[connection, mg send, W answered, release send or INF]]
        self.changes = {}     # key -> [[send, answer or INF]]: every ms and md (they may end a lease)
        self.refused_stores = []   # (key, grant, ms send, ms answer, status)
        self.counts = dict.fromkeys(("ops", "verified", "misses", "wins", "zs", "stale",
                                     "holders_died", "read_only_holders_died", "stores_refused"), 0)
        self.errors = []

    def now(self):
        with self.lock:
            return time.monotonic()

    def error(self, text):
        with self.lock:
            self.errors.append(text)

    def count(self, name, n=1):
        with self.lock:
            self.counts[name] += n

    def begin_change(self, key, value_id=None):
        """Before an ms or md is sent: its record (for end_change)."""
        with self.lock:
            change = [time.monotonic(), INF]
            self.changes.setdefault(key, []).append(change)
            if value_id is not None:
                self.writes[value_id] = [change[0], INF, None]
            return change

    def end_change(self, key, change, replaces, value_id=None, status=None):
        """After its answer: `replaces` when it stored a value or deleted one."""
        with self.lock:
            change[1] = time.monotonic()
            if value_id is not None:
                self.writes[value_id][1:] = [change[1], status]
            if replaces:
                answers, sends = self.replaced.setdefault(key, ([], []))
                answers.append(change[1])
                sends.append(max(change[0], sends[-1] if sends else 0.0))

    def check_value(self, key, value, read_sent, flags, what):
        """A value read by a request sent at read_sent; flags: the mg flags (W, Z, X) or ()."""
        if value == b"":
            if b"W" not in flags and b"Z" not in flags:
                self.error("%s %r: an empty value, not a lease's stub" % (what, key))
            return
        problem = value_problem(key, value)
        if problem is not None:
            self.error("%s %r: %s (%d bytes: %r...)" % (what, key, problem, len(value), value[:40]))
            return
        writer, seq = (int(x) for x in value.split(b"|")[1:3])
        with self.lock:
            write = self.writes.get((writer, seq))
            if write is None:
                self.errors.append("%s %r: a value nobody wrote (%d, %d)" % (what, key, writer, seq))
                return
            if write[2] is not None and write[2] not in (b"HD", b"STORED"):
                self.errors.append("%s %r: the value of a store answered %r" % (what, key, write[2]))
                return
            answers, sends = self.replaced.get(key, ((), ()))
            i = bisect.bisect_left(answers, read_sent)   # the changes answered before the read
            if i > 0 and sends[i - 1] > write[1]:
                self.errors.append("%s %r: value (%d, %d) was replaced before the read was sent"
                                   % (what, key, writer, seq))
                return
            self.counts["verified"] += 1


class Worker:
    """One connection's loop of meta requests (reconnecting after a holder's death)."""

    def __init__(self, port, index, ledger, keys, seed):
        self.port, self.index, self.ledger, self.keys = port, index, ledger, keys
        self.writable = [k for k in keys if k not in READ_ONLY_KEYS]   # what multi-key gets read
        self.rng = random.Random(seed)
        self.conn = harness.Conn(port, REPLY_TIMEOUT_S)
        self.seq = 0

    def run(self, deadline):
        try:
            while time.monotonic() < deadline:
                self.ledger.count("ops")
                key, roll = self.rng.choice(self.keys), self.rng.random()
                next(act for upto, act in self.mix(key) if roll < upto)()
        except Exception as e:   # recorded; the main thread reports it
            self.ledger.error("connection %d: %s: %s" % (self.index, type(e).__name__, e))
        finally:
            self.conn.close()

    def mix(self, key):
        """(cumulative share, request) of the loop's requests on `key`."""
        if key in READ_ONLY_KEYS:
            return ((1.01, lambda: self.read_through(key)),)
        return ((0.40, lambda: self.read_through(key)),
                (0.60, lambda: self.store(key, self.rng.choice(TTLS))),
                (0.68, lambda: self.delete(key, b"")),
                (0.76, lambda: self.delete(key, b" I")),
                (0.88, lambda: self.peek(key)),
                (1.01, lambda: self.get(self.rng.sample(self.writable, self.rng.choice((1, 1, 3, 8))))))

    def new_value(self, key):
        self.seq += 1
        size = self.rng.randint(8, 2000) if self.ledger.strict else int(2 ** self.rng.uniform(3, 16.6))
        return (self.index, self.seq), make_value(key, self.index, self.seq, size)

    def read_mg(self):
        """(flags, value) of an `mg ... v` answer; value None on EN."""
        words = self.conn.recv_line().split()
        if words[0] == b"EN":
            return (), None
        if words[0] != b"VA":
            raise AssertionError("mg: %r" % words)
        return words[2:], self.conn.recv_exact(int(words[1]) + 2)[:-2]

    def read_through(self, key):
        sent = self.ledger.now()
        xfetch = key not in READ_ONLY_KEYS and self.rng.random() < 0.1
        self.conn.send(b"mg %s v c N30%s\r\n" % (key, b" Y200" if xfetch else b""))
        flags, value = self.read_mg()
        if value is None:
            raise AssertionError("mg N30 of %r answered EN" % key)
        self.after_read(key, sent, flags, value, "mg N")

    def peek(self, key):
        sent = self.ledger.now()
        self.conn.send(b"mg %s v c\r\n" % key)
        flags, value = self.read_mg()
        if value is None:
            self.ledger.count("misses")
        else:
            self.after_read(key, sent, flags, value, "mg")

    def after_read(self, key, sent, flags, value, what):
        """Checks a meta read's value; on W, the recompute and its `ms C`."""
        led = self.ledger
        led.check_value(key, value, sent, flags, what)
        if b"X" in flags:
            led.count("stale")
        if b"Z" in flags:
            led.count("zs")
        if b"W" in flags:
            cas = int([f for f in flags if f.startswith(b"c")][0][1:])
            self.hold(key, sent, lambda ttl: self.store(key, ttl, cas))

    def hold(self, key, sent, fill, granted=True):
        """The lease won by the read sent at `sent`: the recompute, then fill(ttl) (its status,
        change), or now and then the holder's death instead (False). Not `granted`: a miss
        that may be the lease or not (a multi-key get's), filled all the same."""
        led = self.ledger
        grant = [self.index, sent, time.monotonic(), INF]
        if granted:
            led.count("wins")
            with led.lock:
                grant[2] = time.monotonic()
                led.grants.setdefault(key, []).append(grant)
        time.sleep(self.rng.choice((0, 0, 0.001, 0.003)))   # the recompute
        read_only = key in READ_ONLY_KEYS
        if self.rng.random() < (0.2 if read_only else 0.03):   # the holder dies without storing
            grant[3] = led.now()
            self.conn.close()
            led.count("holders_died")
            led.count("read_only_holders_died", read_only)
            self.conn = harness.Conn(self.port, REPLY_TIMEOUT_S)
            return False
        status, change = fill(self.rng.choice(TTLS[2:] if read_only else TTLS))   # read-only: expires
        grant[3] = change[0]
        if granted and status not in (b"HD", b"STORED"):
            led.count("stores_refused")
            with led.lock:
                led.refused_stores.append((key, grant, change, status))
        return True

    def store(self, key, ttl, cas=None):
        value_id, value = self.new_value(key)
        change = self.ledger.begin_change(key, value_id)
        self.conn.send(b"ms %s %d T%d%s\r\n%s\r\n"
                       % (key, len(value), ttl, b"" if cas is None else b" C%d" % cas, value))
        status = self.conn.recv_line().strip()
        if status not in (b"HD", b"EX", b"NF") or (cas is None and status != b"HD"):
            raise AssertionError("ms %r: %r" % (key, status))
        self.ledger.end_change(key, change, status == b"HD", value_id, status)
        return status, change

    def delete(self, key, flags):
        change = self.ledger.begin_change(key)
        self.conn.send(b"md %s%s\r\n" % (key, flags))
        status = self.conn.recv_line().strip()
        if status not in (b"HD", b"NF"):
            raise AssertionError("md %r%s: %r" % (key, flags, status))
        # md I leaves the value, stale: it replaces nothing
        self.ledger.end_change(key, change, status == b"HD" and not flags)

    def get(self, keys):
        """A classic get; returns the keys it missed."""
        sent = self.ledger.now()
        self.conn.send(b"get %s\r\n" % b" ".join(keys))
        found = set()
        while True:
            line = self.conn.recv_line()
            if line == b"END\r\n":
                break
            words = line.split()
            if words[0] != b"VALUE" or words[1] not in keys:
                raise AssertionError("get %r: %r" % (keys, line))
            value = self.conn.recv_exact(int(words[3]) + 2)[:-2]
            # a classic get ignores staleness; an empty value is a stub's (a miss's lease)
            self.ledger.check_value(words[1], value, sent, (b"Z",), "get")
            found.add(words[1])
        missed = [k for k in keys if k not in found]
        self.ledger.count("misses", len(missed))
        return sent, missed


class ClassicWorker(Worker):
    """A classic read-through client's loop against -o classic_stampede=wait: a get that misses
    a key holds its lease (one-key gets of it park until it is filled), filled with set or add."""

    def mix(self, key):
        if key in READ_ONLY_KEYS:
            return ((1.01, lambda: self.read_through([key])),)
        return ((0.45, lambda: self.read_through([key])),
                (0.62, lambda: self.classic_store(key, self.rng.choice(TTLS), b"set")),
                (0.70, lambda: self.delete(key, b"")),
                (0.78, lambda: self.delete(key, b" I")),
                (0.88, lambda: self.peek(key)),
                (1.01, lambda: self.read_through(self.rng.sample(self.writable, self.rng.choice((2, 3, 8))))))

    def read_through(self, keys):
        """A get, and every key it missed filled. A one-key get's miss is the key's lease; a
        multi-key get's may be a hot miss (the lease held elsewhere: it never parks)."""
        sent, missed = self.get(keys)
        for key in missed:
            if not self.hold(key, sent, lambda ttl: self.classic_store(
                    key, ttl, b"add" if self.rng.random() < 0.3 else b"set"), granted=len(keys) == 1):
                break   # the holder died: its other leases died with it

    def classic_store(self, key, ttl, command):
        value_id, value = self.new_value(key)
        change = self.ledger.begin_change(key, value_id)
        self.conn.send(b"%s %s 0 %d %d\r\n%s\r\n" % (command, key, ttl, len(value), value))
        status = self.conn.recv_line().strip()
        if status not in (b"STORED", b"NOT_STORED") or (command == b"set" and status != b"STORED"):
            raise AssertionError("%s %r: %r" % (command, key, status))
        self.ledger.end_change(key, change, status == b"STORED", value_id, status)
        return status, change


def changed_between(ledger, key, after, before, skip=None):
    """Whether some ms or md of `key` other than `skip` may have been executed after time
    `after` and before time `before`."""
    return any(c is not skip and c[0] < before and c[1] > after for c in ledger.changes.get(key, ()))


def lease_violations(ledger):
    """W granted while another connection held the key's lease, with nothing between that
    could have ended it, before that lease could have timed out; and holders' stores refused
    with nothing between, before their lease could have timed out."""
    found = []
    longest = max((g[3] - g[2] for gs in ledger.grants.values() for g in gs), default=0.0)
    for key, grants in ledger.grants.items():
        grants = sorted(grants, key=lambda g: g[2])
        answered = [g[2] for g in grants]
        for b in grants:
            lo = bisect.bisect_left(answered, b[1] - longest)
            for a in grants[lo:bisect.bisect_left(answered, b[1])]:
                # a's W was answered before b's mg was sent; a released only after b's W came,
                # which came before a's lease could time out
                if (a is not b and a[3] > b[2] and b[2] < a[1] + LEASE_TIMEOUT_S and
                        not changed_between(ledger, key, a[1], b[2])):
                    found.append("%r: W to connection %d while connection %d held the lease"
                                 % (key, b[0], a[0]))
    for key, grant, change, status in ledger.refused_stores:
        if change[1] < grant[1] + LEASE_TIMEOUT_S and not changed_between(ledger, key, grant[1], change[1],
                                                                           skip=change):
            found.append("%r: the holder's ms C answered %r with no change since its W" % (key, status))
    return found


def run_load(port, ledger, keys, seconds, first_index, kind=Worker):
    deadline = time.monotonic() + seconds
    workers = [kind(port, first_index + i, ledger, keys, first_index + i) for i in range(CONNECTIONS)]
    return [threading.Thread(target=w.run, args=(deadline,)) for w in workers]


def no_lease_held(port, keys):
    """True when no key's `mg` answers Z. A lease this probe wins is given back at once (md)."""
    with harness.Conn(port) as c:
        for key in keys:
            words = c.call(b"mg %s c N30\r\n" % key).split()
            if b"Z" in words:
                return False
            if b"W" in words:
                c.call(b"md %s\r\n" % key)
    return True


def every_get_answered(port, keys):
    """True when a get of each key is answered (a parked one within wait_timeout_ms, the lease
    timeout, once no holder dies). A lease it wins is given back at once (md)."""
    try:
        with harness.Conn(port, REPLY_TIMEOUT_S) as c:
            for key in keys:
                if c.call(b"get %s\r\n" % key, b"END\r\n") == b"END\r\n":
                    c.call(b"md %s\r\n" % key)
    except TimeoutError:
        return False
    return True


def check_leases(r, name, daemon, ledger, keys, classic=False):
    """The lease rules of a server that evicted nothing, then stops it. Strict: every lease of
    a holder that died on a read-only key times out and is taken over (by a reader of the run
    or by this check's), and a live holder stores within milliseconds, so no other lease times
    out. (Classic: a dead lease's placeholder expires a second or two after the lease when no
    reader came meanwhile, and the next reader's lease is then a new one, not a takeover.)"""
    violations = lease_violations(ledger)
    r.check(not violations, "%s: one lease a key at a time; a holder's store refused only "
            "after another change" % name, "\n".join(violations[:20]))
    if classic:
        r.check(every_get_answered(daemon.port, keys), "classic: after the run, every key's get "
                "is answered")
    else:
        r.check(harness.wait_for(lambda: no_lease_held(daemon.port, keys), LEASE_TIMEOUT_S + harness.TIMEOUT),
                "%s: a lease timeout after the run, no lease is held" % name)
        with harness.Conn(daemon.port) as c:
            timeouts = harness.stat(c, "lease_timeouts")
        died, read_only_died = ledger.counts["holders_died"], ledger.counts["read_only_holders_died"]
        r.check(read_only_died <= timeouts <= died, "%s: the leases of holders that died timed out, "
                "no other" % name, "lease_timeouts %d, holders died %d (%d on read-only keys)"
                % (timeouts, died, read_only_died))
    r.check(daemon.alive(), "%s: daemon alive after the soak" % name)
    daemon.stop()


def report(r, name, ledger, stats, waits):
    harness.log("%s: %s; %s" % (name, ", ".join("%s %d" % kv for kv in ledger.counts.items()),
                                ", ".join("%s %s" % kv for kv in stats.items())))
    r.check(not ledger.errors, "%s: every read was a value written for its key, not refused, "
            "not replaced before the read was sent" % name, "\n".join(ledger.errors[:20]))
    r.check(ledger.counts["verified"] > 0 and ledger.counts["wins"] > 0 and
            (ledger.counts["zs"] > 0 or not waits), "%s: the soak saw values, wins%s"
            % (name, " and waits (Z)" if waits else ""))


def body(r, seconds):
    tmp = tempfile.mkdtemp(prefix="herdless-soak-")
    os.chmod(tmp, 0o777)   # the daemon runs as nobody
    try:
        stampede(r, seconds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stampede(r, seconds, tmp):
    lossy_args = ["-m", "8", "-t", "4", "-e", os.path.join(tmp, "snapshot"), "-o",
                  "stale_grace=60,snapshot_interval=1,ext_page_size=2,ext_wbuf_size=2,ext_item_size=512,"
                  "ext_item_age=1,ext_max_sleep=20000,ext_path=%s:32m" % os.path.join(tmp, "flash")]
    leases = "lease_timeout=%d,stale_grace=60" % LEASE_TIMEOUT_S
    strict = harness.start_herdless(["-m", "64", "-t", "4", "-o", leases])
    classic = harness.start_herdless(["-m", "64", "-t", "4", "-o", "classic_stampede=wait," + leases])
    lossy = harness.start_herdless(lossy_args)
    strict_ledger, classic_ledger, lossy_ledger = Ledger(True), Ledger(True), Ledger(False)
    threads = (run_load(strict.port, strict_ledger, STRICT_KEYS, seconds, 0) +
               run_load(classic.port, classic_ledger, STRICT_KEYS, seconds, CONNECTIONS, ClassicWorker) +
               run_load(lossy.port, lossy_ledger, LOSSY_KEYS, seconds, 2 * CONNECTIONS))
    r.check(harness.run_threads(threads, seconds), "every soak connection finished")

    with harness.Conn(strict.port) as c:
        stats = harness.stat_values(c, "evictions", "lease_grants", "xfetch_grants", "stale_hits",
                                    "lease_timeouts")
    report(r, "strict", strict_ledger, stats, waits=True)
    r.equal(stats["evictions"], 0, "strict: nothing was evicted (the lease rules assume it)")
    check_leases(r, "strict", strict, strict_ledger, STRICT_KEYS)

    with harness.Conn(classic.port) as c:
        stats = harness.stat_values(c, "evictions", "lease_grants", "waits_parked", "waits_woken",
                                    "waits_timed_out", "lease_timeouts")
    report(r, "classic", classic_ledger, stats, waits=False)
    r.check(stats["evictions"] == 0 and (stats["waits_parked"] or 0) > 0,
            "classic: readers were parked; nothing was evicted")
    check_leases(r, "classic", classic, classic_ledger, STRICT_KEYS, classic=True)

    with harness.Conn(lossy.port) as c:
        stats = harness.stat_values(c, "evictions", "extstore_objects_written", "get_extstore",
                                    "curr_items")
    report(r, "lossy", lossy_ledger, stats, waits=False)
    r.check((stats["evictions"] or 0) > 0 and (stats["get_extstore"] or 0) > 0,
            "lossy: the soak ran through evictions and reads from flash")
    status, _ = lossy.stop_with(signal.SIGTERM)
    r.equal(status, 0, "lossy: SIGTERM: exit 0 after the snapshot")
    lossy = harness.start_herdless(lossy_args)
    read_back(r, "the restart", lossy, lossy_ledger)

    # A crash: the load again (a snapshot a second meanwhile), then kill -9 once every request
    # is answered. The keys written since the last snapshot began must not come back as they
    # were (the change journal): the ledger catches a value replaced before the read.
    crash_seconds = max(3, seconds // 4)
    threads = run_load(lossy.port, lossy_ledger, LOSSY_KEYS, crash_seconds, 2 * CONNECTIONS)
    r.check(harness.run_threads(threads, crash_seconds), "lossy: the load before the crash finished")
    lossy.kill_hard()
    lossy = harness.start_herdless(lossy_args)
    read_back(r, "kill -9", lossy, lossy_ledger)
    lossy.stop()


def read_back(r, after, server, ledger):
    """Reads every lossy key once; each value must be one the ledger allows."""
    hits = 0
    with harness.Conn(server.port) as c:
        for key in LOSSY_KEYS:
            sent = ledger.now()
            words = c.call(b"mg %s v\r\n" % key).split()
            if words[0] == b"VA":
                hits += 1
                ledger.check_value(key, c.recv_exact(int(words[1]) + 2)[:-2], sent,
                                   tuple(words[2:]), "after %s: mg" % after)
    harness.log("lossy: %d of %d keys back after %s" % (hits, len(LOSSY_KEYS), after))
    r.check(hits > 0, "lossy: values came back after %s" % after)
    r.check(not ledger.errors, "lossy: after %s, no value replaced, refused or foreign" % after,
            "\n".join(ledger.errors[:20]))


if __name__ == "__main__":
    duration = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    harness.run("soak_stampede", lambda r: body(r, duration))
