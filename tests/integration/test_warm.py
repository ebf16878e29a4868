"""scripts/herdless-warm: a new herdless warmed from a running Debian memcached.

- 10 000 keys with mixed TTLs and flags in memcached (9 000 stored first, 1 000 at least a
  clock tick later): `herdless-warm` copies all of them into a herdless, each with its
  value, its flags and its remaining TTL (within 2 s); with `--max-items 1000` exactly the
  1 000 most recently used ones; an item the target already has is not overwritten.
- From a herdless source: copied the same way if it answers `lru_crawler metadump`,
  otherwise the tool says the source cannot list its items and exits 1.
Counts and values only.
"""

import os
import subprocess
import time

import harness

TOOL = os.path.join(harness.REPO, "scripts", "herdless-warm")
N_OLD = 9000
N_RECENT = 1000


def run_tool(*args):
    return subprocess.run(["/usr/bin/python3", TOOL] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)


def store_all(conn, items):
    conn.send(b"".join(b"set %s %d %d %d\r\n%s\r\n" % (k, f, t, len(v), v)
                       for k, (v, f, t) in items.items()))
    replies = [conn.recv_line() for _ in items]
    return sum(1 for r in replies if r == b"STORED\r\n")


def read_all(conn, keys):
    """{key: (value, flags, ttl) or None} through mg (t: -1 = no expiry)."""
    out = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        conn.send(b"".join(b"mg %s v f t\r\n" % k for k in chunk))
        for k in chunk:
            words = conn.recv_line().split()
            if words[0] == b"EN":
                out[k] = None
                continue
            value = conn.recv_exact(int(words[1]) + 2)[:-2]
            flags = {w[:1]: int(w[1:]) for w in words[2:]}
            out[k] = (value, flags[b"f"], flags[b"t"])
    return out


def make_items(prefix, n, seed):
    items = {}
    for i in range(n):
        key = b"%s:%d" % (prefix, i)
        value = (b"%d-%s|" % (seed, key)) * (1 + (i * 7) % 40)
        flags = (i * 2654435761) & 0xFFFFFFFF
        ttl = (0, 300, 3000, 86400)[i % 4]
        items[key] = (value, flags, ttl)
    return items


def check_copy(res, label, source_view, target_view):
    missing = [k for k in source_view if source_view[k] is not None and target_view[k] is None]
    wrong = [k for k in source_view if source_view[k] is not None and target_view[k] is not None
             and target_view[k][:2] != source_view[k][:2]]
    def ttl_ok(s, t):
        return t[2] == -1 if s[2] == -1 else t[2] != -1 and abs(s[2] - t[2]) <= 2
    ttl_off = [k for k in source_view if source_view[k] is not None and target_view[k] is not None
               and not ttl_ok(source_view[k], target_view[k])]
    res.equal(len(missing), 0, "%s: every key copied" % label)
    res.equal(wrong[:5], [], "%s: values and flags as in the source" % label)
    res.equal(ttl_off[:5], [], "%s: remaining TTLs within 2 s of the source's" % label)


def body(res):
    mc = harness.start_memcached(["-m", "64"])
    old = make_items(b"old", N_OLD, 1)
    recent = make_items(b"recent", N_RECENT, 2)
    with harness.Conn(mc.port) as c:
        res.equal(store_all(c, old), N_OLD, "memcached: the older keys stored")
        time.sleep(2.1)   # memcached's clock ticks each second: the next ones are later
        res.equal(store_all(c, recent), N_RECENT, "memcached: the recent keys stored")
        source_view = read_all(c, list(old) + list(recent))

    # --max-items: the most recently used only.
    h1 = harness.start_herdless(["-m", "64"])
    run = run_tool("--from", "127.0.0.1:%d" % mc.port, "--to", "127.0.0.1:%d" % h1.port,
                   "--max-items", str(N_RECENT))
    res.check(run.returncode == 0, "--max-items: exit 0", run.stderr.decode())
    with harness.Conn(h1.port) as c:
        got_recent = read_all(c, list(recent))
        got_old = read_all(c, list(old))
    res.equal(sum(1 for v in got_recent.values() if v is not None), N_RECENT,
              "--max-items %d: every recent key copied" % N_RECENT)
    res.equal(sum(1 for v in got_old.values() if v is not None), 0,
              "--max-items %d: no older key copied" % N_RECENT)
    check_copy(res, "--max-items", {k: source_view[k] for k in recent}, got_recent)
    h1.stop()

    # Everything, paced; a key the target already has is kept.
    h2 = harness.start_herdless(["-m", "64"])
    with harness.Conn(h2.port) as c:
        res.equal(c.call(b"set old:5 0 0 5\r\nnewer\r\n"), b"STORED\r\n", "target: a newer value")
    run = run_tool("--from", "127.0.0.1:%d" % mc.port, "--to", "127.0.0.1:%d" % h2.port,
                   "--rate", "50000")
    err = run.stderr.decode()
    res.check(run.returncode == 0, "all: exit 0", err)
    res.check("done: %d copied, 0 gone from the source meanwhile, 1 already on the target"
              % (N_OLD + N_RECENT - 1) in err, "all: the summary line", err)
    res.check("items/s" in err and "ETA" in err and "MB" in err, "all: progress lines", err)
    with harness.Conn(h2.port) as c:
        target_view = read_all(c, list(old) + list(recent))
    res.equal(target_view[b"old:5"], (b"newer", 0, -1), "all: the target's own value is kept")
    del source_view[b"old:5"]
    del target_view[b"old:5"]
    check_copy(res, "all", source_view, target_view)

    # From a herdless: copied if it lists its items, a clear refusal if it cannot.
    h3 = harness.start_herdless(["-m", "64"])
    with harness.Conn(h2.port) as c:
        c.send(b"lru_crawler metadump all\r\n")
        first = c.recv_line()
        lists = first.startswith(b"key=") or first == b"END\r\n"
    run = run_tool("--from", "127.0.0.1:%d" % h2.port, "--to", "127.0.0.1:%d" % h3.port)
    if lists:
        res.check(run.returncode == 0, "from herdless: exit 0", run.stderr.decode())
        with harness.Conn(h3.port) as c:
            check_copy(res, "from herdless", target_view, read_all(c, list(target_view)))
    else:
        harness.log("the herdless source has no lru_crawler metadump (%r)" % first)
        res.equal(run.returncode, 1, "from herdless without metadump: exit 1")
        res.check(b"cannot list its items" in run.stderr, "from herdless: says why",
                  run.stderr.decode())
    h3.stop()
    h2.stop()
    mc.stop()


if __name__ == "__main__":
    harness.run("test_warm", body)
