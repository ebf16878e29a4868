"""Warm restarts (-e <file>): the cache comes back after a stop, a crash or a bad file.

- SIGTERM, then SIGUSR1: 200 000 items with mixed TTLs, flags, binary values and CAS are
  written at the stop and loaded at the next start; every item still alive comes back byte
  for byte with its flags, its remaining TTL (within 2 s) and its CAS, which still validates
  `cas` and `ms C`; items that expired meanwhile stay gone; new CAS values are above every
  restored one.
- `-o snapshot_interval=1`, then `kill -9`: every item stored before the last periodic
  snapshot comes back; `stats` counts the writes.
- The change journal (<file>.changes): after a `kill -9`, no key replaced, deleted,
  invalidated, counted or touched since the snapshot on disk began comes back, the others
  do, and no CAS is handed out twice; after a flush_all nothing does; after a clean stop
  everything does; a run that did not stop in another boot (its journal's boot id changed
  by the test, as a power loss would leave it) restores nothing. A journal that cannot be
  opened: the file is neither restored nor kept, no periodic write is made, the stop's is.
- A delayed flush_all across restarts: its deadline passing while herdless is down (its
  items are left out, counted), still ahead at the start (pending in the new process: the
  items go at the deadline, a later set stays, also over another restart), and a kill -9
  after the deadline whose last periodic write came before it: no flushed value comes back.
- Bad files (cut at every tenth of its length, a flipped byte in the header, a record and
  a checksum, empty, random bytes, another -I): herdless logs why, moves the file to
  <file>.bad, starts empty and serves. Another -m: every item loaded, the log says so. A directory at the path: it starts, serves, logs and counts
  the failed writes (`snapshot_failures`). An unwritable directory (no journal can be made
  there): it starts empty, serves, logs why, the previous file untouched. A FIFO at the path:
  the start does not wait on it.
- A full disk (a 16 MB tmpfs, skipped where it cannot be mounted): changes keep being served
  (the journal's pages are allocated up front, no SIGBUS), writes fail and are counted, the
  stop exits 0; full before the start: no journal, logged, serves.
- Warm-up: a key that expired while herdless was down, within stale_grace, comes back
  stale: of 200 concurrent readers exactly one gets the lease (W), none a miss.
- Read rates: a hot key's estimate (`mg r`, metadump's `rate=`) comes back, decayed over
  the downtime only; a cold key has none; and a hot key restored with a short TTL left is
  refreshed ahead (W with its fresh value, `mg Yr`) before it expires, from the restart on.
Counts and values only; waits are for events (a periodic write, an expiry), bounded.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

import harness

WAIT = harness.TIMEOUT * 6
# A sanitized daemon fills, reads, writes and loads about four times slower: a quarter of the
# items there still spans many segments and every shard.
N_ITEMS = 50000 if harness.SANITIZED else 200000
BATCH = 2000


def make_state_dir():
    """A directory the daemon (-u nobody when the tests run as root) can write."""
    d = tempfile.mkdtemp(prefix="herdless-snapshot-")
    os.chmod(d, 0o777)
    return d


def parse_meta(buf, at):
    """One mg reply in buf at offset `at`: (reply, next offset), or None if incomplete.
    reply: None for EN, else (value, {flag letter: text})."""
    eol = buf.find(b"\r\n", at)
    if eol < 0:
        return None
    words = bytes(buf[at:eol]).split()
    if words[0] == b"EN":
        return None, eol + 2
    if words[0] != b"VA":
        raise AssertionError("mg: unexpected %r" % words)
    end = eol + 2 + int(words[1]) + 2
    if len(buf) < end:
        return None
    value = bytes(buf[eol + 2:end - 2])
    return (value, {w[:1].decode(): w[1:].decode() for w in words[2:]}), end


def parse_line(buf, at):
    eol = buf.find(b"\r\n", at)
    return None if eol < 0 else (bytes(buf[at:eol + 2]), eol + 2)


def read_meta(conn):
    """One mg reply on a harness.Conn (few replies; pipelined() parses many)."""
    words = conn.recv_line().split()
    if words[0] == b"EN":
        return None
    value = conn.recv_exact(int(words[1]) + 2)[:-2]
    return value, {w[:1].decode(): w[1:].decode() for w in words[2:]}


def pipelined(conn, commands, parse):
    """Sends commands in batches and returns each reply as parse(buffer, offset) finds it."""
    out = []
    sock = conn.sock
    sock.settimeout(WAIT)
    for i in range(0, len(commands), BATCH):
        chunk = commands[i:i + BATCH]
        sock.sendall(b"".join(chunk))
        buf = bytearray()
        at = 0
        while len(out) < i + len(chunk):
            got = parse(buf, at) if at < len(buf) else None
            if got is None:
                data = sock.recv(1 << 20)
                if not data:
                    raise EOFError("connection closed mid-batch")
                buf += data
                continue
            out.append(got[0])
            at = got[1]
    return out


def fill(conn, items):
    """items: {key: (value, flags, ttl)}; stores them with ms, checks every HD."""
    cmds = [b"ms %s %d F%d T%d\r\n%s\r\n" % (k, len(v), f, t, v) for k, (v, f, t) in items.items()]
    replies = pipelined(conn, cmds, parse_line)
    return sum(1 for r in replies if r == b"HD\r\n")


def read_all(conn, keys):
    """{key: (value, flags, ttl, cas) or None}."""
    cmds = [b"mg %s v f t c\r\n" % k for k in keys]
    got = pipelined(conn, cmds, parse_meta)
    out = {}
    for k, r in zip(keys, got):
        out[k] = None if r is None else (r[0], int(r[1]["f"]), int(r[1]["t"]), int(r[1]["c"]))
    return out


def make_items(rng, n, prefix=b"k", short_ttl=True):
    """Mixed values (binary bytes, \\r\\n inside, empty, up to 2 KB), flags and TTLs
    (with short_ttl, a sixth have a TTL of 2 s, to expire before they are checked). The other
    TTLs are long enough to outlive the slowest run (a TSan build on a loaded machine took 125 s
    from the fill to the write, and items with a TTL of 100 s expired in between)."""
    items = {}
    for i in range(n):
        size = rng.choice((0, 1, 10, 100, 100, 300, 2000))
        value = rng.randbytes(size) if i % 3 else (b"v%d\r\n" % i) * (size // 8 + 1)
        flags = rng.choice((0, 1, 42, 0xFFFFFFFF, i))
        ttl = rng.choice((0, 0, 3000, 10000, 86400, 2 if short_ttl else 0))
        items[prefix + b"%d" % i] = (value, flags & 0xFFFFFFFF, ttl)
    return items


def check_restored(res, label, conn, before, items, read_before_at):
    """Every item alive before is back with value, flags, CAS and TTL; the T2 ones are gone.
    read_before_at: monotonic time the read of `before` began. TTLs may have gone down by
    the time since, plus 2 s at most: the file keeps whole seconds, rounded down (a restored
    item never outlives its TTL), and `t` reports the remaining time rounded up."""
    after = read_all(conn, list(before))
    elapsed = time.monotonic() - read_before_at
    wrong, missing, back_from_dead, ttl_off = [], 0, 0, []
    for k, b in before.items():
        a = after[k]
        if items[k][2] == 2:
            back_from_dead += a is not None
            continue
        if b is None:
            continue
        if a is None:
            missing += 1
            continue
        if a[:2] != b[:2] or a[3] != b[3]:
            wrong.append(k)
        if b[2] != -1 and not (b[2] - elapsed - 2 <= a[2] <= b[2]):
            ttl_off.append((k, b[2], a[2]))
        if b[2] == -1 and a[2] != -1:
            ttl_off.append((k, b[2], a[2]))
    alive = sum(1 for k, b in before.items() if b is not None and items[k][2] != 2)
    res.equal(missing, 0, "%s: none of the %d live items is missing" % (label, alive))
    res.equal(wrong[:5], [], "%s: values, flags and CAS are the same" % label)
    res.equal(ttl_off[:5], [], "%s: remaining TTLs within 2 s" % label)
    res.equal(back_from_dead, 0, "%s: items that expired while down stay gone" % label)
    return after


def roundtrip(res):
    rng = random.Random(13)
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-v", "-m", "512", "-t", "2", "-e", path]
    items = make_items(rng, N_ITEMS)
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, items), N_ITEMS, "fill: every ms stored")
        stored_at = time.monotonic()
        before = read_all(c, list(items))
    max_cas = max(b[3] for b in before.values() if b is not None)
    status, log = d.stop_with(signal.SIGTERM, WAIT)
    res.equal(status, 0, "SIGTERM: exit 0")
    # The T2 items may have expired before the write.
    alive = sum(1 for k, b in before.items() if b is not None and items[k][2] != 2)
    m = re.search(r"snapshot \(stop\): wrote (\d+) items", log)
    res.check(m is not None and alive <= int(m.group(1)) <= N_ITEMS,
              "SIGTERM: the write of every live item is logged", log[-2000:])
    res.check(not os.path.exists(path + ".tmp"), "SIGTERM: no temporary file left")

    # The T2 items must be past their expiry at the check (1 s clock granularity).
    time.sleep(max(0.0, stored_at + 3.2 - time.monotonic()))
    for label, signo in (("SIGTERM", signal.SIGUSR1), ("SIGUSR1", None)):
        t0 = time.monotonic()
        d = harness.start_herdless(args)
        with harness.Conn(d.port, timeout=WAIT) as c:
            check_restored(res, "after " + label, c, before, items, stored_at)
            s = harness.stat_values(c, "snapshot_loaded_items")
            expect_loaded = sum(1 for k, b in before.items() if b is not None and items[k][2] != 2)
            res.equal(s["snapshot_loaded_items"], expect_loaded,
                      "after %s: stats snapshot_loaded_items" % label)
            # CAS values still validate, and new ones are above every restored one.
            live = [k for k, b in before.items() if b is not None and items[k][2] != 2]
            k1, k2, k3 = live[10], live[20], live[30]
            res.equal(c.call(b"cas %s 5 0 1 %d\r\nx\r\n" % (k1, before[k1][3])), b"STORED\r\n",
                      "after %s: cas with the restored CAS" % label)
            res.equal(c.call(b"ms %s 1 C%d\r\ny\r\n" % (k2, before[k2][3])), b"HD\r\n",
                      "after %s: ms C with the restored CAS" % label)
            res.equal(c.call(b"ms %s 1 C%d\r\ny\r\n" % (k3, before[k3][3] + 1)), b"EX\r\n",
                      "after %s: ms C with a wrong CAS is refused" % label)
            c.send(b"mg %s c\r\n" % k1)
            new_cas = int(c.recv_line().split()[1][1:])
            res.check(new_cas > max_cas, "after %s: a new CAS (%d) is above every restored one (%d)"
                      % (label, new_cas, max_cas))
            # The changed items are what the next restart must bring back.
            stored_at = time.monotonic()
            before = read_all(c, list(items))
            max_cas = max(b[3] for b in before.values() if b is not None)
            harness.log("%s: restart and check took %.1f s" % (label, time.monotonic() - t0))
        if signo is None:
            d.stop()
            break
        status, log = d.stop_with(signo, WAIT)
        res.equal(status, 0, "SIGUSR1: exit 0")
        res.check("snapshot (stop): wrote %d items" % expect_loaded in log,
                  "SIGUSR1: the write is logged", log[-2000:])
    shutil.rmtree(state, ignore_errors=True)


def periodic_then_kill9(res):
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-v", "-m", "64", "-e", path, "-o", "snapshot_interval=1"]
    items = make_items(random.Random(7), 20000, b"p", short_ttl=False)
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, items), len(items), "periodic: every ms stored")
        read_at = time.monotonic()
        before = read_all(c, list(items))
        # A write that began after the last store: two more completed writes.
        writes = harness.stat(c, b"snapshot_writes")
        harness.wait_for(lambda: harness.stat(c, b"snapshot_writes") >= writes + 2, WAIT,
                         what="two periodic writes")
        s = harness.stat_values(c, "snapshot_failures", "snapshot_last_bytes",
                                "snapshot_last_items", "snapshot_last_duration_ms")
        res.equal(s["snapshot_failures"], 0, "periodic: no failed write")
        res.check(s["snapshot_last_bytes"] > 20000 * 28, "periodic: snapshot_last_bytes")
        res.equal(s["snapshot_last_items"], len(items), "periodic: snapshot_last_items")
        res.check(s["snapshot_last_duration_ms"] is not None, "periodic: snapshot_last_duration_ms")
        res.equal(c.call(b"set after 0 0 1\r\nz\r\n"), b"STORED\r\n", "periodic: a later set")
        # Changed after the last write began: they must not come back as they were.
        replaced, deleted = [k for k in items if items[k][2] == 0][:2]
        res.equal(c.call(b"set %s 0 0 3\r\nnew\r\n" % replaced), b"STORED\r\n", "periodic: a replace")
        res.equal(c.call(b"delete %s\r\n" % deleted), b"DELETED\r\n", "periodic: a delete")
    d.kill_hard()
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        # Left out, or its new value when a write that began after the set ended before the kill.
        now = read_all(c, [replaced])[replaced]
        res.check(now is None or now[0] == b"new", "after kill -9: the replaced key never has its old value",
                  repr(now))
        res.equal(c.call(b"mg %s v\r\n" % deleted), b"EN\r\n", "after kill -9: the deleted key stays deleted")
        del before[replaced], before[deleted]
        check_restored(res, "after kill -9", c, before, items, read_at)
    d.stop()
    shutil.rmtree(state, ignore_errors=True)


def gets_cas(c, key):
    """Stores `key` and returns the CAS it got."""
    c.call(b"set %s 0 0 1\r\nx\r\n" % key)
    return int(c.call(b"gets %s\r\n" % key, b"END\r\n").split(b"\r\n")[0].split()[4])


def crash_leaves_out_changes(res):
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-v", "-m", "64", "-e", path]
    keys = [b"j%d" % i for i in range(2000)]
    replaced, deleted, invalidated, counted, touched = (keys[0:100], keys[100:200], keys[200:220],
                                                        keys[220:240], keys[240:260])
    unchanged = keys[260:]
    old = {k: (b"7" if k in counted else b"old-" + k, 0, 0) for k in keys}
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, old), len(keys), "journal: filled")
    d.stop_with(signal.SIGTERM, WAIT)   # the stop's snapshot: exact
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(harness.stat(c, b"snapshot_loaded_items"), len(keys), "journal: the stop's snapshot loads whole")
        replies = [c.call(b"set %s 0 0 3\r\nnew\r\n" % k) for k in replaced]
        replies += [c.call(b"delete %s\r\n" % k) for k in deleted]
        replies += [c.call(b"md %s I\r\n" % k) for k in invalidated]
        replies += [c.call(b"incr %s 1\r\n" % k) for k in counted]
        replies += [c.call(b"touch %s 5000\r\n" % k) for k in touched]
        res.equal(sorted(set(replies)), [b"8\r\n", b"DELETED\r\n", b"HD\r\n", b"STORED\r\n", b"TOUCHED\r\n"],
                  "journal: the changes made")
        last_cas = gets_cas(c, b"casprobe")
    d.kill_hard()
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        first_cas = gets_cas(c, b"casprobe")
        res.check(first_cas > last_cas, "journal: after kill -9, no CAS is handed out again",
                  "last before: %d, first after: %d" % (last_cas, first_cas))
        got = read_all(c, keys)
        back = [k for k in keys[:260] if got[k] is not None]
        res.equal(back, [], "journal: after kill -9, no key changed since the snapshot comes back")
        wrong = [k for k in unchanged if got[k] is not None and got[k][0] != old[k][0]]
        res.equal(wrong, [], "journal: every unchanged key that comes back has its value")
        kept = sum(1 for k in unchanged if got[k] is not None)
        res.check(kept >= 0.99 * len(unchanged), "journal: the unchanged keys come back",
                  "%d of %d" % (kept, len(unchanged)))
        skipped = harness.stat(c, b"snapshot_load_skipped_changed")
        res.check(260 <= skipped <= 260 + len(unchanged) - kept, "journal: snapshot_load_skipped_changed",
                  str(skipped))
        res.equal(c.call(b"flush_all\r\n"), b"OK\r\n", "journal: flush_all")
    d.kill_hard()
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(harness.stat(c, b"snapshot_loaded_items"), 0, "journal: after flush_all and kill -9, nothing")
        res.equal(c.call(b"set clean 0 0 1\r\nc\r\n"), b"STORED\r\n", "journal: a set before a clean stop")
    d.stop_with(signal.SIGTERM, WAIT)
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        s = harness.stat_values(c, "snapshot_loaded_items", "snapshot_load_skipped_changed")
        res.equal((s["snapshot_loaded_items"], s["snapshot_load_skipped_changed"]), (1, 0),
                  "journal: after a clean stop, the stop's snapshot whole")
        res.equal(c.call(b"get clean\r\n", b"END\r\n"), b"VALUE clean 0 1\r\nc\r\nEND\r\n",
                  "journal: its value")
    d.kill_hard()
    # As a power loss leaves it: a run that did not stop, in another boot.
    with open(path + ".changes", "r+b") as f:
        f.seek(32)
        f.write(b"00000000-0000-4000-8000-000000000000\0")
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        s = harness.stat_values(c, "snapshot_loaded_items", "snapshot_load_skipped_changed")
        res.equal((s["snapshot_loaded_items"], s["snapshot_load_skipped_changed"]), (0, 1),
                  "journal: a run that did not stop in another boot: nothing restored")
    status, log = d.stop_with(signal.SIGTERM, WAIT)
    res.check("did not stop, in an earlier boot" in log, "journal: the lost journal is logged", log[-2000:])
    shutil.rmtree(state, ignore_errors=True)


def all_missing(c, keys):
    return all(v is None for v in read_all(c, keys).values())


def fill_flush_and_stop(res, args, items, seconds, what):
    """Starts herdless with `args`, stores `items`, sends `flush_all <seconds>` and stops it
    with SIGTERM. Returns the server's time (whole seconds) the flush is due at."""
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, items), len(items), what + ": filled")
        due = harness.stat(c, b"time") + seconds
        res.equal(c.call(b"flush_all %d\r\n" % seconds), b"OK\r\n", "%s: flush_all %d" % (what, seconds))
    status, _ = d.stop_with(signal.SIGTERM, WAIT)
    res.equal(status, 0, what + ": the stop")
    return due


def delayed_flush_survives_restarts(res):
    """A delayed flush_all is kept across restarts (format 6): one whose deadline passes while
    herdless is down leaves its items out; one still ahead at the start removes them when it
    comes (and not what is stored after it); and after a kill -9 following a periodic write
    made before the deadline, the flushed values do not come back."""
    state = make_state_dir()
    keys = [b"f%d" % i for i in range(50)]
    old = {k: (b"old-" + k, 0, 0) for k in keys}

    # SIGTERM; the deadline passes while herdless is down.
    args = ["-v", "-m", "64", "-e", os.path.join(state, "down")]
    due = fill_flush_and_stop(res, args, old, 2, "flush while down")
    # The deadline is within a second of `due` (whole seconds on the server's clocks).
    time.sleep(max(0.0, due + 2 - time.time()))
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.check(all_missing(c, keys), "flush while down: no flushed value comes back")
        s = harness.stat_values(c, "snapshot_loaded_items", "snapshot_load_skipped_flushed")
        res.equal((s["snapshot_loaded_items"], s["snapshot_load_skipped_flushed"]), (0, len(keys)),
                  "flush while down: counted in snapshot_load_skipped_flushed")
    d.stop()

    # SIGTERM and a restart before the deadline: it is still pending in the new process.
    args = ["-v", "-m", "64", "-e", os.path.join(state, "ahead")]
    due = fill_flush_and_stop(res, args, old, 8, "flush pending")
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        got = read_all(c, keys)
        # The server's deadline is not before due - 1: values read before then are still there.
        if time.time() < due - 1:
            res.equal(sum(1 for v in got.values() if v is not None), len(keys),
                      "flush pending: the items are back until the deadline")
            res.check("delayed flush_all is pending" in d.log_text(), "flush pending: logged",
                      d.log_text()[-2000:])
        else:
            harness.log("flush pending: the restart took until the deadline; its check before it skipped")
        gone = harness.wait_for(lambda: all_missing(c, keys), max(0.0, due + 2 - time.time()) + WAIT)
        res.check(gone, "flush pending: the restored items are flushed at the deadline")
        res.check(time.time() >= due - 1, "flush pending: not before it")
        res.equal(c.call(b"set %s 0 0 3\r\nnew\r\n" % keys[0]), b"STORED\r\n", "flush pending: a set after it")
        res.equal(c.call(b"get %s\r\n" % keys[0], b"END\r\n"), b"VALUE %s 0 3\r\nnew\r\nEND\r\n" % keys[0],
                  "flush pending: what is stored after the deadline stays")
    d.stop_with(signal.SIGTERM, WAIT)
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        got = read_all(c, keys)
        res.equal([k for k in keys if got[k] is not None], [keys[0]],
                  "flush pending: after another restart, only what was stored after the deadline")
        res.equal(got[keys[0]][0], b"new", "flush pending: its value")
    d.stop()

    # kill -9 after the deadline, the last periodic write made before it (its write cleared
    # the journal's "flush_all" mark): the file's deadline still flushes them.
    # Writes every 3 s: two by about 6 s, one that began after the flush_all among them; the
    # deadline at 8 s; the next write at about 9 s, after the kill.
    args = ["-v", "-m", "64", "-e", os.path.join(state, "crash"), "-o", "snapshot_interval=3"]
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, old), len(keys), "flush and kill -9: filled")
        writes = harness.stat(c, b"snapshot_writes")
        due = harness.stat(c, b"time") + 8
        res.equal(c.call(b"flush_all 8\r\n"), b"OK\r\n", "flush and kill -9: flush_all 8")
        harness.wait_for(lambda: harness.stat(c, b"snapshot_writes") >= writes + 2, WAIT,
                         what="two periodic writes after the flush_all")
        if time.time() >= due - 1:
            harness.log("flush and kill -9: the writes came after the deadline (a slow machine)")
        # As soon as the flush shows (before the next write, usually), the crash.
        harness.wait_for(lambda: all_missing(c, keys), max(0.0, due + 2 - time.time()) + WAIT,
                         what="the flush_all's deadline")
    d.kill_hard()
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.check(all_missing(c, keys), "flush and kill -9: no flushed value comes back")
        res.equal(harness.stat(c, b"snapshot_loaded_items"), 0, "flush and kill -9: nothing loaded")
    d.stop()
    shutil.rmtree(state, ignore_errors=True)


def journal_unopenable(res):
    """A journal that cannot be opened (a directory in its place): the snapshot is neither
    restored nor kept, no periodic write is made, the orderly stop's is, and a start with
    its journal back restores that one."""
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-v", "-m", "64", "-e", path, "-o", "snapshot_interval=1"]
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(fill(c, {b"before%d" % i: (b"v", 0, 0) for i in range(100)}), 100, "no journal: filled")
    d.stop_with(signal.SIGTERM, WAIT)
    os.unlink(path + ".changes")
    os.mkdir(path + ".changes")
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(harness.stat(c, b"snapshot_loaded_items"), 0, "no journal: nothing restored")
        res.equal(c.call(b"get before1\r\n"), b"END\r\n", "no journal: a key of the file is a miss")
        res.check(not os.path.exists(path), "no journal: the file removed")
        res.equal(c.call(b"set after 0 0 1\r\na\r\n"), b"STORED\r\n", "no journal: a set")
        time.sleep(2.5)   # more than two of -o snapshot_interval=1
        res.equal(harness.stat(c, b"snapshot_writes"), 0, "no journal: no periodic write")
    _, log = d.stop_with(signal.SIGTERM, WAIT)
    res.check("no change journal" in log and "removed %s without restoring it" % path in log,
              "no journal: the log says why", log[-2000:])
    os.rmdir(path + ".changes")
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        res.equal(harness.stat(c, b"snapshot_loaded_items"), 1, "no journal: the stop's snapshot restored")
        res.equal(c.call(b"get after\r\n", b"END\r\n"), b"VALUE after 0 1\r\na\r\nEND\r\n",
                  "no journal: its value")
    d.stop_with(signal.SIGTERM, WAIT)
    shutil.rmtree(state, ignore_errors=True)


def mount_small_tmpfs(size):
    """A tmpfs of `size` the daemon can write, or None where mounting is not permitted (not
    root, a container): the caller then skips."""
    d = make_state_dir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0777" % size, "tmpfs", d],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        os.rmdir(d)
        return None
    return d


def unmount(d):
    subprocess.run(["umount", "-l", d], check=False)
    shutil.rmtree(d, ignore_errors=True)


def fill_up(d):
    """Writes into `d` until its file system is full (another writer took the space): large
    writes, then small ones for what they left."""
    for size in (65536, 512):
        with open(os.path.join(d, "filler"), "ab", buffering=0) as f:
            try:
                while True:
                    f.write(b"x" * size)
            except OSError:
                pass


def full_disk(res):
    """The snapshot's file system fills up while herdless runs: every kind of change still
    works (each one lands in the change journal's mapped pages, which a full disk used to make
    a SIGBUS), the periodic writes fail and are counted, the stop exits 0. And a disk already
    full at start: no journal can be made, so it runs without one (logged) and serves."""
    d = mount_small_tmpfs("16m")
    if d is None:
        harness.log("full disk: SKIPPED (cannot mount a tmpfs here)")
        return
    try:
        path = os.path.join(d, "snapshot")
        args = ["-v", "-m", "64", "-e", path, "-o", "snapshot_interval=1"]
        dm = harness.start_herdless(args)
        with harness.Conn(dm.port, timeout=WAIT) as c:
            res.equal(fill(c, {b"early%d" % i: (b"v", 0, 0) for i in range(2000)}), 2000, "full disk: filled")
            harness.wait_for(lambda: harness.stat(c, b"snapshot_writes") >= 2, WAIT, what="two periodic writes")
            os.unlink(path)   # its space goes to the filler too
            fill_up(d)
            stored = fill(c, {b"late%d" % i: (b"v", 0, 0) for i in range(20000)})
            res.equal(stored, 20000, "full disk: sets still stored")
            res.equal(c.call(b"delete early1\r\n"), b"DELETED\r\n", "full disk: a delete")
            res.equal(c.call(b"set n 0 0 1\r\n5\r\n"), b"STORED\r\n", "full disk: a set")
            res.equal(c.call(b"incr n 1\r\n"), b"6\r\n", "full disk: an incr")
            res.equal(c.call(b"touch late2 100\r\n"), b"TOUCHED\r\n", "full disk: a touch")
            harness.wait_for(lambda: harness.stat(c, b"snapshot_failures") >= 1, WAIT, what="a failed write")
            res.equal(c.call(b"flush_all\r\n"), b"OK\r\n", "full disk: a flush_all")
            res.equal(c.call(b"set after 0 0 1\r\na\r\n"), b"STORED\r\n", "full disk: serves after all that")
        status, log = dm.stop_with(signal.SIGTERM, WAIT)
        res.equal(status, 0, "full disk: exits 0 (no SIGBUS)")
        res.check("snapshot (stop) failed" in log, "full disk: the stop's failed write is logged", log[-2000:])

        # Full before the start (a journal from before this fix would have had holes; here
        # a new one is to be made): no room for it, so none.
        os.unlink(path + ".changes")
        fill_up(d)   # the journal's space too
        dm = harness.start_herdless(args)
        with harness.Conn(dm.port, timeout=WAIT) as c:
            res.equal(fill(c, {b"k%d" % i: (b"v", 0, 0) for i in range(5000)}), 5000, "full at start: serves")
        status, log = dm.stop_with(signal.SIGTERM, WAIT)
        res.equal(status, 0, "full at start: exits 0")
        res.check("no change journal (cannot allocate" in log and "No space left on device" in log,
                  "full at start: the log says why", log[-2000:])
    finally:
        unmount(d)


def fifo_at_the_path(res):
    """A FIFO where the snapshot should be: the start does not wait for a writer of it, logs
    why, starts empty and serves; the stop's write replaces it with a snapshot."""
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    os.mkfifo(path, 0o666)
    d = harness.start_herdless(["-v", "-e", path])   # start_herdless waits until it accepts
    serves(res, "a FIFO", d)
    status, log = d.stop_with(signal.SIGTERM, WAIT)
    res.check("not a regular file" in log and "starting empty" in log, "a FIFO: the log says why", log[-1500:])
    res.check(os.path.isfile(path), "a FIFO: the stop's write replaced it")
    shutil.rmtree(state, ignore_errors=True)


def serves(res, label, d):
    with harness.Conn(d.port) as c:
        res.equal(c.call(b"set x 0 0 2\r\nok\r\n"), b"STORED\r\n", label + ": serves sets")
        res.equal(c.call(b"get x\r\n", b"END\r\n"), b"VALUE x 0 2\r\nok\r\nEND\r\n",
                  label + ": serves gets")
        return harness.stat_values(c, "curr_items", "snapshot_loaded_items", "snapshot_writes")


def bad_files(res):
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-v", "-m", "64", "-e", path]
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        fill(c, make_items(random.Random(3), 3000, b"b", short_ttl=False))
    d.stop_with(signal.SIGTERM, WAIT)
    with open(path, "rb") as f:
        good = f.read()
    res.check(len(good) > 100000, "bad files: a good snapshot of %d bytes" % len(good))

    def flipped(at):
        b = bytearray(good)
        b[at] ^= 0x40
        return bytes(b)

    variants = [("cut at %d/10" % t, good[:len(good) * t // 10]) for t in range(1, 10)]
    variants += [
        ("empty", b""),
        ("flip in the header", flipped(20)),
        ("flip in a record", flipped(64 + 32 + 40)),
        ("flip in a checksum", flipped(64 + 26)),
        ("random bytes", random.Random(5).randbytes(len(good))),
        ("text", b"this is not a snapshot\n"),
    ]
    for label, data in variants:
        with open(path, "wb") as f:
            f.write(data)
        d = harness.start_herdless(args)
        s = serves(res, label, d)
        res.equal(s["curr_items"], 1, label + ": started empty")
        res.check(os.path.exists(path + ".bad") and not os.path.exists(path),
                  label + ": moved to <file>.bad")
        _, log = d.stop_with(signal.SIGTERM, WAIT)
        res.check("is not a usable snapshot" in log, label + ": the log says why", log[-1500:])
        os.unlink(path + ".bad")

    # Another -m: loaded (the cache takes what fits, hottest first), not refused.
    with open(path, "wb") as f:
        f.write(good)
    d = harness.start_herdless(args + ["-m", "65"])
    s = serves(res, "another -m", d)
    res.equal(s["snapshot_loaded_items"], 3000, "another -m: every item loaded")
    res.check(not os.path.exists(path + ".bad"), "another -m: the file not moved to <file>.bad")
    _, log = d.stop_with(signal.SIGTERM, WAIT)
    res.check("written with -m 64, this herdless runs -m 65" in log, "another -m: the log says so", log[-1500:])
    for label, other in (("another -I", ["-I", "2m"]),):
        with open(path, "wb") as f:
            f.write(good)
        d = harness.start_herdless(args + other)
        s = serves(res, label, d)
        res.equal(s["curr_items"], 1, label + ": started empty")
        res.check(os.path.exists(path + ".bad"), label + ": moved to <file>.bad")
        _, log = d.stop_with(signal.SIGTERM, WAIT)
        res.check("written with -m 64 -I 1048576" in log, label + ": the log says why",
                  log[-1500:])
        os.unlink(path + ".bad")

    # A directory where the file should be: left alone, the writes fail and are counted.
    os.unlink(path)   # (the last stop wrote a snapshot there)
    os.mkdir(path)
    d = harness.start_herdless(args + ["-o", "snapshot_interval=1"])
    with harness.Conn(d.port) as c:
        harness.wait_for(lambda: harness.stat(c, b"snapshot_failures") >= 1, WAIT,
                         what="a failed write")
    serves(res, "a directory", d)
    _, log = d.stop_with(signal.SIGTERM, WAIT)
    res.check("not a regular file" in log, "a directory: the log says why", log[-1500:])
    res.check("failed: " in log and "the previous snapshot is kept" in log,
              "a directory: the failed write is logged", log[-1500:])
    os.rmdir(path)

    # An unwritable directory holding a good snapshot: its change journal cannot be made
    # there, so the file is not restored (nothing would tell what a crash of this run
    # changed) and cannot be removed; no periodic write; the stop's write fails.
    locked = os.path.join(state, "locked")
    os.mkdir(locked)
    locked_path = os.path.join(locked, "snapshot")
    with open(locked_path, "wb") as f:
        f.write(good)
    os.chmod(locked_path, 0o644)
    os.chmod(locked, 0o555)
    d = harness.start_herdless(["-v", "-m", "64", "-e", locked_path, "-o", "snapshot_interval=1"])
    s = serves(res, "unwritable directory", d)
    res.equal((s["curr_items"], s["snapshot_loaded_items"]), (1, 0),
              "unwritable directory: without its journal, the snapshot is not restored")
    _, log = d.stop_with(signal.SIGTERM, WAIT)
    for said in ("no change journal", "could not remove", "snapshot (stop) failed", "Permission denied"):
        res.check(said in log, "unwritable directory: the log says " + said, log[-2000:])
    res.check("snapshot (periodic)" not in log, "unwritable directory: no periodic write", log[-2000:])
    with open(locked_path, "rb") as f:
        res.check(f.read() == good, "unwritable directory: the previous snapshot is kept")
    os.chmod(locked, 0o755)
    shutil.rmtree(state, ignore_errors=True)


def stale_warm_up(res):
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-t", "4", "-e", path, "-o", "stale_grace=600"]
    d = harness.start_herdless(args)
    with harness.Conn(d.port) as c:
        res.equal(c.call(b"ms hot 5 T2\r\nvalue\r\n"), b"HD\r\n", "warm-up: the hot key")
        stored_at = time.monotonic()
    d.stop_with(signal.SIGTERM, WAIT)
    time.sleep(max(0.0, stored_at + 3.2 - time.monotonic()))   # it expires while down
    d = harness.start_herdless(args)
    n = 200
    conns = [harness.Conn(d.port, timeout=WAIT) for _ in range(n)]
    for c in conns:
        c.send(b"mg hot s v c N30\r\n")
    replies = [read_meta(c) for c in conns]
    misses = sum(1 for r in replies if r is None)
    winners = [r for r in replies if r is not None and "W" in r[1]]
    res.equal(misses, 0, "warm-up: no miss among %d readers" % n)
    res.equal(len(winners), 1, "warm-up: exactly one reader gets the lease (W)")
    res.equal(sum(1 for r in replies if r is not None and r[0] == b"value" and "X" in r[1]), n,
              "warm-up: every reader gets the stale value (X)")
    res.equal(sum(1 for r in replies if r is not None and "Z" in r[1]), n - 1,
              "warm-up: the others see the lease is taken (Z)")
    if winners:
        token = int(winners[0][1]["c"])
        res.equal(conns[0].call(b"ms hot 5 T60 C%d\r\nfresh\r\n" % token), b"HD\r\n",
                  "warm-up: the one recompute is stored")
    for c in conns:
        c.send(b"mg hot v\r\n")
    fresh = [read_meta(c) for c in conns]
    res.equal(sum(1 for r in fresh if r is not None and r[0] == b"fresh" and not r[1]), n,
              "warm-up: then everyone reads the fresh value")
    res.equal(harness.stat(conns[0], b"lease_grants"), 1, "warm-up: one lease granted")
    for c in conns:
        c.close()
    d.stop()
    shutil.rmtree(state, ignore_errors=True)


def read_hot(conn, key, seconds, per_s=50):
    """Reads `key` per_s times a second for `seconds` (a rate the store tracks)."""
    for _ in range(int(seconds * per_s)):
        conn.send(b"mg %s v\r\n" % key)
        read_meta(conn)
        time.sleep(1.0 / per_s)


def rate_of(conn, key):
    conn.send(b"mg %s r v\r\n" % key)
    r = read_meta(conn)
    return float(r[1].get("r", "0")) if r else None


def rates_survive(res):
    state = make_state_dir()
    path = os.path.join(state, "snapshot")
    args = ["-t", "4", "-e", path, "-o", "stale_grace=30"]
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        for key, ttl in ((b"hot", 3000), (b"soon", 12), (b"cold", 3000)):
            res.equal(c.call(b"ms %s 1 T%d\r\nv\r\n" % (key, ttl)), b"HD\r\n", "rates: store " + key.decode())
        read_hot(c, b"hot", 0.3)    # tracked: the estimate waits for the key's next value
        read_hot(c, b"soon", 0.3)
        c.call(b"ms hot 1 T3000\r\nv\r\n")
        c.call(b"ms soon 1 T12\r\nv\r\n")
        for _ in range(3):
            read_hot(c, b"hot", 0.5)
            read_hot(c, b"soon", 0.5)
        before = rate_of(c, b"hot")
        # A decayed count over τ = 16 s: a key read for 3 s shows part of its rate.
        res.check(before is not None and before >= 2, "rates: the hot key's estimate before", before)
        res.equal(rate_of(c, b"cold"), 0.0, "rates: a key not read has none")
    d.stop_with(signal.SIGTERM, WAIT)
    d = harness.start_herdless(args)
    with harness.Conn(d.port, timeout=WAIT) as c:
        after = rate_of(c, b"hot")
        # Decayed over the downtime (τ 16 s); grown only by the read that asked
        # before (1/16 of a read a second).
        res.check(after is not None and before * 0.3 <= after <= before + 0.07,
                  "rates: the estimate comes back (before %s, after %s)" % (before, after))
        dumped = {line[b"key"]: line for line in harness.metadump(c)}
        res.check(b"rate" in dumped.get(b"hot", {}), "rates: metadump shows rate= after the restart",
                  dumped.get(b"hot"))
        res.check(b"rate" not in dumped.get(b"cold", {b"rate": b""}), "rates: the cold key has no rate=")
        # The key restored with seconds left: read it as a busy client would,
        # until a reader wins its refresh; a fresh value with it (no X) means
        # the refresh came ahead of the expiry.
        deadline = time.monotonic() + WAIT
        win = None
        while win is None and time.monotonic() < deadline:
            c.send(b"mg soon v c Yr\r\n")
            r = read_meta(c)
            if r is not None and "W" in r[1]:
                win = r
            time.sleep(0.05)
        res.check(win is not None and "X" not in win[1], "rates: refreshed ahead after the restart", win)
    d.stop()
    shutil.rmtree(state, ignore_errors=True)


def body(res):
    rates_survive(res)
    roundtrip(res)
    periodic_then_kill9(res)
    crash_leaves_out_changes(res)
    delayed_flush_survives_restarts(res)
    journal_unopenable(res)
    full_disk(res)
    fifo_at_the_path(res)
    bad_files(res)
    stale_warm_up(res)


if __name__ == "__main__":
    harness.run("test_snapshot", body)
