#!/usr/bin/env python3
"""The operators' view (docs/operations.md), against Debian's memcached 1.6.18 side by side.

- Debian's memcached-tool (the memcached package's script): display, stats, settings and dump of
  10 000 keys against herdless; dump lists every key once with its flags and expiry.
- lru_crawler metadump: memcached's line format (URI-encoded keys, exp, fetch, cls) compared
  line by line with memcached's for the same keys; herdless's stale/lease fields after them; a
  dump while 50 connections write lists every key that was present throughout, exactly once.
- lru_crawler crawl/enable/disable/sleep/tocrawl, slabs automove/reassign: the same replies as
  memcached for the same commands; crawl reclaims expired items (crawler_reclaimed), and with the
  crawler off an expired item's memory reused by eviction counts as reclaimed; so do a flushed item
  (memcached -o no_modern side by side), a set over its own expired copy and the background reclaim.
- stats items / stats slabs: memcached's field names per class, the same classes for the same
  item sizes, items per class adding up to curr_items, pages x page size within -m.
- watch: mutations and fetchers lines as memcached's for another connection's set and get;
  connevents; the stampede stream (lease granted, timed out, fulfilled); a watcher that never
  reads keeps the server's memory bounded and its lost lines are counted (log_watcher_skipped).
- -X refuses metadump and stats cachedump, -W refuses watch, with memcached's errors.
- -o track_sizes: `stats sizes` counts from the start (also under -o compat=1.6.45); `stats
  sizes_enable` counts only the items stored since, and refuses under -C, as memcached; the -o
  keys of the crawler and slab mover start the values `stats settings` shows, as memcached's.
- stats detail (per-prefix counters, -D) and stats cachedump: the same replies as memcached's
  for the same commands (dumps as sets of lines), errors byte for byte; cachedump lists every
  item of a class, memcached's lines (its COLD LRU only) among them.
"""

import random
import re
import socket
import subprocess
import threading
import time

import harness
from binproto import BinConn, get, set_
from harness import Conn

MEMCACHED_TOOL = "/usr/share/memcached/scripts/memcached-tool"
KEYS = 10000
SLOW = harness.SANITIZED


def tool(daemon, mode, timeout=120):
    r = subprocess.run(["perl", MEMCACHED_TOOL, "127.0.0.1:%d" % daemon.port, mode],
                       capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def fill(conn, count, prefix=b"key", value=b"v" * 20, exptime=b"0", flags=b"3"):
    batch = []
    for i in range(count):
        key = b"%s%05d" % (prefix, i)
        batch.append(b"set %s %s %s %d noreply\r\n%s\r\n" % (key, flags, exptime, len(value), value))
        if len(batch) == 500:
            conn.send(b"".join(batch))
            batch = []
    conn.send(b"".join(batch))
    conn.call(b"version\r\n")   # every set above is done once this is answered


def test_memcached_tool(results, hl, mc):
    with Conn(hl.port) as c:
        fill(c, KEYS, exptime=b"3600")
        c.call(b"set %ABC 0 0 1\r\nx\r\n")   # a key with '%': encoded as %25ABC
        now = int(time.time())
        # Read 20 times at once, %ABC gets a read-rate estimate (its item
        # holds it from its next store): herdless's last metadump field
        # (rate=), which memcached-tool must step over.
        c.send(b"get %ABC\r\n" * 20)
        for _ in range(20):
            c.recv_until(b"END\r\n")
        c.call(b"set %ABC 0 0 1\r\nx\r\n")
        dump = {l[b"key"]: l for l in harness.metadump(c)}
    hot, cold = dump.get(b"%25ABC", {}), dump.get(b"key00000", {})
    results.check(list(hot)[-1:] == [b"rate"] and float(hot[b"rate"]) > 0,
                  "a key read often has rate= last in its metadump line", repr(hot))
    results.check(b"rate" not in cold, "a key never read has no rate=", repr(cold))
    code, out, err = tool(hl, "dump")
    results.equal(code, 0, "memcached-tool dump exits 0")
    adds = re.findall(rb"^add (\S+) (\d+) (-?\d+) (\d+)\r$", out, re.M)
    keys = [a[0] for a in adds if re.match(rb"key\d{5}$", a[0]) or a[0] == b"%ABC"]
    results.equal(len(keys), KEYS + 1, "memcached-tool dump lists every key")
    results.equal(len(set(keys)), len(keys), "memcached-tool dump lists each key once")
    results.check(b"%ABC" in keys, "the %-key comes back decoded")
    exps = {int(a[2]) for a in adds if a[0].startswith(b"key")}
    results.check(all(now + 3600 - 2 <= e <= now + 3600 + 2 for e in exps),
                  "dump's expiry is the Unix time of the TTL", repr(sorted(exps)[:3]))
    results.check(all(a[1] == b"3" for a in adds if a[0].startswith(b"key")), "dump keeps the flags")
    harness.log("memcached-tool dump: %d keys, stderr %r" % (len(keys), err.strip()))

    code, out, _ = tool(hl, "display")
    results.equal(code, 0, "memcached-tool display exits 0")
    lines = out.decode().splitlines()
    harness.log("memcached-tool display against herdless:\n" + out.decode())
    results.check(lines and lines[0].split()[:3] == ["#", "Item_Size", "Max_age"],
                  "display prints its header", out.decode()[:200])
    rows = [l.split() for l in lines[1:]]
    with Conn(hl.port) as c:
        items = int(harness.stats(c)["curr_items"])
    results.equal(sum(int(r[4]) for r in rows), items, "display's counts add up to curr_items")
    for mode, field in (("stats", "curr_items"), ("settings", "maxbytes")):
        code, out, _ = tool(hl, mode)
        results.equal(code, 0, "memcached-tool %s exits 0" % mode)
        results.check(re.search(rb"^\s+%s\s+\d+\r?$" % field.encode(), out, re.M) is not None,
                      "memcached-tool %s shows %s" % (mode, field), out.decode()[:300])
    # memcached, the same way, for the record (the note compares them).
    with Conn(mc.port) as c:
        fill(c, 100, exptime=b"3600")
    _, out, _ = tool(mc, "display")
    harness.log("memcached-tool display against memcached (100 keys):\n" + out.decode())


KEY_CASES = [b"plain", b"with%percent", b"a:b/c?d=e&f", b"tilde~dash-dot.under_", b"UPPER"]


def test_format_against_memcached(results, hl, mc):
    """The same items in both; every memcached field compared (la and cas normalised)."""
    dumps = []
    for d in (mc, hl):
        with Conn(d.port) as c:
            c.call(b"flush_all\r\n")
            for i, key in enumerate(KEY_CASES):
                value = b"x" * (10 + 200 * i)
                c.call(b"set %s 0 %d %d\r\n%s\r\n" % (key, 0 if i % 2 else 1000, len(value), value))
            c.call(b"get plain\r\n", b"END\r\n")
            # a binary key, through meta's base64 (b): herdless URI-encodes its bytes too
            c.call(b"ms AAEC/w== 1 b T0\r\nz\r\n")
            lines = harness.metadump(c)
            dumps.append({l[b"key"]: l for l in lines})
    mc_dump, hl_dump = dumps
    results.equal(sorted(hl_dump), sorted(mc_dump), "the dump lists the same encoded keys")
    results.check(b"%00%01%02%FF" in hl_dump, "a binary key is URI-encoded byte by byte",
                  repr(sorted(hl_dump)))
    for key, m in mc_dump.items():
        h = hl_dump.get(key, {})
        for field in (b"fetch", b"cls"):
            results.equal(h.get(field), m.get(field), "%s of %r" % (field.decode(), key))
        results.equal(h.get(b"exp") == b"-1", m.get(b"exp") == b"-1", "exp -1 of %r" % key)
        if m.get(b"exp") != b"-1":
            results.check(abs(int(h[b"exp"]) - int(m[b"exp"])) <= 2, "exp of %r" % key)
        results.equal(list(h)[:7], list(m), "memcached's fields in its order for %r" % key)
        results.equal(list(h)[7:9], [b"stale", b"lease"], "herdless's fields after them")


def test_dump_under_writes(results, hl):
    """A dump while 50 connections write: every key present throughout is listed, once."""
    with Conn(hl.port) as c:
        fill(c, 20000, prefix=b"stable")
    stop = threading.Event()
    worst = [0.0]
    errors = []

    def writer(n):
        try:
            with Conn(hl.port, timeout=30) as w:
                i = 0
                while not stop.is_set():
                    t0 = time.monotonic()
                    w.call(b"set churn%d_%d 0 0 100\r\n%s\r\n" % (n, i % 200, b"c" * 100))
                    worst[0] = max(worst[0], time.monotonic() - t0)
                    i += 1
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    with Conn(hl.port, timeout=60) as c:
        lines = harness.metadump(c)
    stop.set()
    for t in threads:
        t.join()
    results.equal(errors, [], "every writer kept being served")
    stable = [l[b"key"] for l in lines if l[b"key"].startswith(b"stable")]
    results.equal(len(stable), 20000, "every key present throughout is listed")
    results.equal(len(set(stable)), len(stable), "no key is listed twice")
    # Measured, not asserted (timing belongs to scripts/bench_operators.sh).
    harness.log("dump under 50 writers: %d lines; slowest set %.1f ms" % (len(lines), worst[0] * 1000))


def replies(port, commands):
    """Each command's reply line; a crawl is asked again while BUSY (harness.call_past_busy)."""
    out = []
    with Conn(port) as c:
        for cmd in commands:
            if cmd.startswith(b"lru_crawler crawl "):
                out.append(harness.call_past_busy(c, cmd))
                continue
            c.send(cmd)
            out.append(c.recv_until(b"\r\n", at_line_start=False))
    return out


CRAWLER_COMMANDS = [b"lru_crawler metadump 0\r\n", b"lru_crawler metadump 64\r\n",
                    b"lru_crawler crawl 0\r\n", b"lru_crawler crawl 1,2,3\r\n",
                    b"lru_crawler sleep 2000000\r\n", b"lru_crawler sleep x\r\n",
                    b"lru_crawler sleep 100\r\n", b"lru_crawler tocrawl x\r\n",
                    b"lru_crawler tocrawl 0\r\n", b"lru_crawler enable\r\n",
                    b"lru_crawler bogus\r\n", b"lru_crawler\r\n",
                    b"slabs automove 3\r\n", b"slabs automove x\r\n", b"slabs automove 1\r\n",
                    b"slabs automove ratio 0.8\r\n", b"slabs reassign a 1\r\n",
                    b"slabs reassign 2 2\r\n", b"slabs reassign 1 99\r\n",
                    b"slabs reassign 1 2\r\n", b"slabs bogus\r\n", b"watch bogus\r\n"]


# The crawler switched off and on again, side by side. memcached 1.6.18's `disable` stops its
# crawler thread without waiting: until the thread has exited, crawl and metadump get
# "ERROR an unknown error happened" (and `enable` fails); from then on, "CLIENT_ERROR lru
# crawler disabled". herdless's disable is immediate: always the latter. Compared once
# memcached's thread is gone.
DISABLED = [b"lru_crawler crawl all\r\n", b"lru_crawler metadump all\r\n",
            b"lru_crawler disable\r\n", b"lru_crawler enable\r\n",
            b"lru_crawler enable\r\n", b"lru_crawler crawl 1\r\n"]
CRAWLER_STOPPING = b"ERROR an unknown error happened\r\n"


def disable_crawler(d):
    """`lru_crawler disable`, then the first crawl reply that is not memcached's transient one."""
    with Conn(d.port) as c:
        first = c.call(b"lru_crawler disable\r\n")
        reply = CRAWLER_STOPPING
        deadline = time.monotonic() + 10
        while reply == CRAWLER_STOPPING and time.monotonic() < deadline:
            reply = c.call(b"lru_crawler crawl all\r\n")
    return first, reply


def test_replies_against_memcached(results, hl, mc):
    got = replies(hl.port, CRAWLER_COMMANDS)
    want = replies(mc.port, CRAWLER_COMMANDS)
    for cmd, g, w in zip(CRAWLER_COMMANDS, got, want):
        results.equal(g, w, "reply to %r" % cmd.strip())
    # The crawl CRAWLER_COMMANDS started must be over (memcached's is at once), or the last
    # crawl is BUSY.
    for d in (hl, mc):
        with Conn(d.port) as c:
            results.check(harness.wait_for(lambda: harness.stats(c)["lru_crawler_running"] == "0",
                                           30), "%s: the crawl is over" % d.name)
    with Conn(hl.port) as c:
        c.call(b"lru_crawler disable\r\n")
        results.equal(c.call(b"lru_crawler crawl all\r\n"),
                      b"CLIENT_ERROR lru crawler disabled\r\n",
                      "right after disable: crawl refused (memcached: its steady-state reply)")
        c.call(b"lru_crawler enable\r\n")
    results.equal(disable_crawler(hl), disable_crawler(mc), "lru_crawler disable, then crawl")
    got = replies(hl.port, DISABLED)
    want = replies(mc.port, DISABLED)
    for cmd, g, w in zip(DISABLED, got, want):
        results.equal(g, w, "reply to %r (crawler disabled, then enabled)" % cmd.strip())


def test_crawl(results):
    with harness.start_herdless(["-m", "64"]) as d, Conn(d.port) as c:
        results.equal(c.call(b"lru_crawler disable\r\n"), b"OK\r\n", "crawler off")
        fill(c, 1000, prefix=b"short", exptime=b"1")
        fill(c, 100, prefix=b"long")
        time.sleep(2.1)
        results.equal(c.call(b"lru_crawler crawl all\r\n"), b"CLIENT_ERROR lru crawler disabled\r\n",
                      "crawl refused while disabled")
        results.equal(c.call(b"lru_crawler enable\r\n"), b"OK\r\n", "crawler on")
        # The background reclaim (memcached's LRU maintainer) may take some first: those count
        # reclaimed, the crawl's crawler_reclaimed.
        results.equal(c.call(b"lru_crawler crawl all\r\n"), b"OK\r\n", "crawl started")
        done = harness.wait_for(lambda: harness.stats(c).get("lru_crawler_running") == "0"
                                and harness.stats(c)["curr_items"] == "100", 30)
        s = harness.stats(c)
        results.check(done, "the crawl ends with the expired items gone", repr(s.get("curr_items")))
        results.equal(int(s["crawler_reclaimed"]) + int(s["reclaimed"]), 1000,
                      "crawler_reclaimed and reclaimed count them")
        results.check(int(s["crawler_items_checked"]) >= 1000, "crawler_items_checked moves")
        results.check(int(s["lru_crawler_starts"]) >= 1, "lru_crawler_starts moves")
        results.equal(s["expired_unfetched"], "1000", "expired_unfetched: never read")
        items = harness.stats(c, b"items")
        results.equal(sum(int(v) for k, v in items.items() if k.endswith((":crawler_reclaimed", ":reclaimed"))),
                      1000, "per-class crawler_reclaimed and reclaimed add up")


def test_reclaimed_on_reuse(results):
    """With the crawler off, eviction that reuses an expired item's memory counts reclaimed."""
    with harness.start_herdless(["-m", "8"]) as d, Conn(d.port, timeout=30) as c:
        results.equal(c.call(b"lru_crawler disable\r\n"), b"OK\r\n", "crawler off")
        value = b"e" * 1000
        fill(c, 4000, prefix=b"exp", value=value, exptime=b"1")
        time.sleep(2.1)
        fill(c, 12000, prefix=b"new", value=value)
        s = harness.stats(c)
        harness.log("after refill: reclaimed %s evictions %s slabs_moved %s" %
                    (s["reclaimed"], s["evictions"], s["slabs_moved"]))
        results.check(int(s["reclaimed"]) > 0, "reclaimed moves when expired memory is reused")
        results.check(int(s["slabs_moved"]) > 0, "slabs_moved counts segments back in the pool")
        items = harness.stats(c, b"items")
        results.equal(sum(int(v) for k, v in items.items() if k.endswith(":reclaimed")),
                      int(s["reclaimed"]), "per-class reclaimed adds up to reclaimed")


SIZES = [1, 50, 100, 300, 700, 1500, 3000, 9000, 30000, 100000]


def class_fields(st, pattern):
    classes = {}
    for k in st:
        m = re.match(pattern, k)
        if m:
            classes.setdefault(int(m.group(1)), []).append(m.group(2))
    return classes


def test_reclaimed_like_memcached(results):
    """reclaimed counts what memcached's allocator and LRU maintainer free (t/issue_163.t,
    issue_183.t, lru-maintainer.t): a flushed item under -o no_modern (memcached reclaims it at
    its next allocation), a set over its own expired copy, and the background reclaim."""
    hl = harness.start_herdless(["-o", "no_modern"])
    mc = harness.start_memcached(["-o", "no_modern"])
    try:
        for name, d in (("herdless", hl), ("memcached", mc)):
            with Conn(d.port) as c:
                c.call(b"set key 0 0 1\r\n1\r\n")
                c.call(b"flush_all\r\n")
                c.call(b"set key 0 0 1\r\n1\r\n")
                results.equal(harness.stats(c)["reclaimed"], "1", "%s: a flushed item is reclaimed" % name)
                # memcached's no_modern starts its crawler off (t/lru-crawler.t 1).
                results.equal(harness.stats(c, b"settings")["lru_crawler"], "no",
                              "%s: -o no_modern starts the crawler off" % name)
    finally:
        hl.stop()
        mc.stop()
    with harness.start_herdless() as d, Conn(d.port) as c:
        results.equal(c.call(b"lru_crawler disable\r\n"), b"OK\r\n", "crawler off")
        c.call(b"set key 0 1 300\r\n" + b"a" * 300 + b"\r\n")
        time.sleep(2.1)
        results.equal(c.call(b"set key 0 0 300\r\n" + b"b" * 300 + b"\r\n"), b"STORED\r\n",
                      "set over its expired copy")
        s, items = harness.stats(c), harness.stats(c, b"items")
        results.equal((s["reclaimed"], s["expired_unfetched"]), ("1", "1"), "the expired copy is reclaimed")
        results.equal(items.get("items:7:reclaimed"), "1", "in the old item's class")
        results.equal(c.call(b"lru_crawler enable\r\n"), b"OK\r\n", "crawler on")
        c.call(b"set gone 0 1 1\r\n1\r\n")
        time.sleep(1.1)
        results.check(harness.wait_for_stat(c, "reclaimed", lambda v: v == 2, 10) == 2,
                      "the background reclaim counts reclaimed", harness.stats(c)["reclaimed"])
        results.equal(harness.stats(c)["crawler_reclaimed"], "0", "not crawler_reclaimed")


def test_class_stats(results, hl, mc):
    per = []
    for d in (mc, hl):
        with Conn(d.port) as c:
            c.call(b"flush_all\r\n")
            for n, size in enumerate(SIZES):
                for i in range(3):
                    c.call(b"set c%d_%d 0 0 %d\r\n%s\r\n" % (n, i, size, b"s" * size))
            time.sleep(1.1)   # memcached's flush hides items of the flush's second: let it pass
            c.call(b"set after 0 0 1\r\nz\r\n")
            per.append((harness.stats(c, b"items"), harness.stats(c, b"slabs"), harness.stats(c)))
    (mi, ms, _), (hi, hs, hg) = per
    mic, hic = class_fields(mi, r"items:(\d+):(\w+)"), class_fields(hi, r"items:(\d+):(\w+)")
    # memcached keeps flushed items in its classes until they are touched: compare the classes
    # of the items stored after the flush only, by name, and the field names of every class.
    results.check(set(hic) <= set(mic), "herdless's classes are memcached's for these sizes",
                  "%r vs %r" % (sorted(hic), sorted(mic)))
    some = next(iter(mic.values()))
    for k, names in hic.items():
        results.equal(names, some, "stats items field names of class %d" % k)
    msc = class_fields(ms, r"(\d+):(\w+)")
    hsc = class_fields(hs, r"(\d+):(\w+)")
    some = next(iter(msc.values()))
    for k, names in hsc.items():
        results.equal(names, some, "stats slabs field names of class %d" % k)
    results.equal([k for k in hs if not re.match(r"\d+:", k)],
                  [k for k in ms if not re.match(r"\d+:", k)], "stats slabs totals' names")
    total = sum(int(hi["items:%d:number" % k]) for k in hic)
    results.equal(total, int(hg["curr_items"]), "items per class add up to curr_items")
    results.equal(total, 3 * len(SIZES) + 1, "every item is in a class")
    page = max(int(hs["%d:chunk_size" % k]) * int(hs["%d:chunks_per_page" % k]) for k in hsc)
    pages = sum(int(hs["%d:total_pages" % k]) for k in hsc)
    results.check(pages * page <= int(hg["limit_maxbytes"]), "pages x page size within -m",
                  "%d x %d" % (pages, page))
    results.equal(int(hs["active_slabs"]), len(hsc), "active_slabs counts the classes listed")


def test_disabled(results):
    with harness.start_herdless(["-X", "-W"]) as d:
        got = replies(d.port, [b"lru_crawler metadump all\r\n", b"watch\r\n",
                               b"stats cachedump 1 1\r\n"])
    with harness.start_memcached(["-X", "-W"]) as m:
        want = replies(m.port, [b"lru_crawler metadump all\r\n", b"watch\r\n",
                                b"stats cachedump 1 1\r\n"])
    results.equal(got, want, "-X and -W refuse as memcached's")


def test_start_values(results):
    """memcached's -o keys for what the crawler and slab mover commands change start the values
    `stats settings` shows, as memcached's do."""
    args = ["-o", "lru_crawler_sleep=50,lru_crawler_tocrawl=10,slab_automove_ratio=0.5,slab_automove_window=5"]
    names = ("lru_crawler_sleep", "lru_crawler_tocrawl", "slab_automove_ratio", "slab_automove_window")
    shown = []
    for start in (harness.start_memcached, harness.start_herdless):
        with start(args) as d, Conn(d.port) as c:
            settings = harness.stats(c, b"settings")
            shown.append([settings[n] for n in names])
    results.equal(shown[1], shown[0], "the -o values in stats settings, as memcached's")
    results.equal(shown[0], ["50", "10", "0.50", "5"], "memcached shows the values given")


def test_track_sizes(results):
    """-o track_sizes counts from the start as memcached's does, under both compat settings (1.6.45
    has no `stats sizes_enable`), at the sizes memcached gives its items: the same buckets for the
    same items (keys, flags and values of many lengths; an item over -I's buckets not counted),
    replaced and deleted ones gone from them."""
    rnd = random.Random(24)
    items = [(b"k%d%s" % (i, b"y" * rnd.randrange(0, 60)), rnd.choice([0, 0, 5, 70000]), rnd.randrange(0, 3000))
             for i in range(200)]
    items += [(b"big", 0, 1048000), (b"big2", 0, 1048400)]

    def sizes(daemon):
        with harness.Conn(daemon.port) as c:
            for key, flags, size in items:
                c.call(b"set %s %d 0 %d\r\n%s\r\n" % (key, flags, size, b"x" * size))
            for key, _, _ in items[:40]:
                c.call(b"delete %s\r\n" % key)
            c.call(b"set %s 0 0 10\r\n0123456789\r\n" % items[50][0])
            lines = c.call(b"stats sizes\r\n", b"END\r\n").split(b"\r\n")
            setting = harness.stats(c, b"settings")["track_sizes"]
        return setting, [ln.decode() for ln in lines if ln.startswith(b"STAT ")]

    with harness.start_memcached(["-o", "track_sizes"]) as m:
        want = sizes(m)
    results.check(want[0] == "yes" and len(want[1]) > 20, "memcached -o track_sizes: many buckets", repr(want))
    for extra in ([], ["-o", "compat=1.6.45"]):
        with harness.start_herdless(["-o", "track_sizes"] + extra) as d:
            results.equal(sizes(d), want, "-o track_sizes %s: memcached's buckets from the start" % " ".join(extra))
    with harness.start_herdless([]) as d:
        results.equal(sizes(d), ("no", ["STAT sizes_status disabled"]), "without -o track_sizes: nothing counted")



def test_sizes_enable(results):
    """`stats sizes_enable` at run time, as memcached's: items stored before it are not counted
    (nor uncounted when deleted), later ones are; with -C it answers memcached's error."""
    script = [b"set a 0 0 1\r\n1\r\n", b"stats sizes_enable\r\n", b"set b 0 0 1\r\n1\r\n",
              b"stats sizes\r\n", b"delete a\r\n", b"stats sizes\r\n", b"set a 0 0 1\r\n1\r\n",
              b"set c 0 0 40\r\n%s\r\n" % (b"c" * 40), b"stats sizes\r\n", b"stats sizes_enable\r\n",
              b"stats sizes\r\n", b"stats sizes_disable\r\n", b"stats sizes\r\n"]
    ends = {b"stats sizes\r\n": b"END\r\n"}

    def replies(daemon):
        with harness.Conn(daemon.port) as c:
            return [c.call(cmd, ends.get(cmd, b"\r\n")) for cmd in script]

    def cas_off(daemon):
        with harness.Conn(daemon.port) as c:
            c.send(b"stats sizes_enable\r\nstats sizes\r\n")
            return c.recv_until(b"END\r\n")

    with harness.start_memcached([]) as m:
        want = replies(m)
    with harness.start_memcached(["-C"]) as m:
        want_cas_off = cas_off(m)
    results.check(b"STAT 64 1\r\nEND\r\n" in want and b"sizes_error" in want_cas_off,
                  "memcached counts only the items stored since", repr(want))
    with harness.start_herdless([]) as d:
        results.equal(replies(d), want, "sizes_enable at run time: memcached's replies")
    with harness.start_herdless(["-C"]) as d:
        results.equal(cas_off(d), want_cas_off, "-C: memcached's sizes_enable error")

def whole_reply(conn, command, end=b"END\r\n"):
    conn.send(command)
    return conn.recv_until(end, at_line_start=False)


# The same commands on both; the keys' prefixes with -D "/". Counted as memcached counts:
# get/gets/gat keys (hit = a value returned), the set family, delete; not touch, incr or meta.
DETAIL_SCRIPT = [b"set u/1 0 0 1\r\n1\r\n", b"set u/2 0 100 2\r\n22\r\n",
                 b"set p/x 0 0 1\r\n1\r\n", b"set nodelim 0 0 1\r\n1\r\n",
                 b"set u:1 0 0 1\r\n1\r\n", b"add u/2 0 0 1\r\n1\r\n",
                 b"append p/x 0 0 1\r\n1\r\n", b"get u/1 u/3 nodelim /x u:1\r\n",
                 b"gets u/2\r\n", b"delete u/1\r\n", b"delete u/9\r\n", b"gat 100 p/x\r\n",
                 b"touch u/2 10\r\n", b"incr p/x 1\r\n", b"mg u/2\r\n",
                 b"ms m/1 1\r\n1\r\n", b"md m/1\r\n"]
CACHEDUMP_ERRORS = [b"stats cachedump\r\n", b"stats cachedump 1\r\n", b"stats cachedump 64 0\r\n",
                    b"stats cachedump 99999 1\r\n", b"stats cachedump -1 0\r\n",
                    b"stats cachedump x 0\r\n", b"stats cachedump 1 -1\r\n",
                    b"stats cachedump 1 y\r\n", b"stats cachedump 63 0\r\n",
                    b"stats cachedump 0 0\r\n", b"stats detail\r\n", b"stats detail foo\r\n",
                    b"stats detail on extra\r\n"]


def detail_replies(d):
    """Replies to the detail script on one server, in order."""
    out = {}
    with Conn(d.port) as c:
        st = harness.stats(c, b"settings")
        out["settings"] = (st["stat_key_prefix"], st["detail_enabled"])
        for cmd in DETAIL_SCRIPT:
            if cmd.startswith((b"get", b"gat")):
                c.call(cmd, b"END\r\n")
            else:
                whole_reply(c, cmd, b"\r\n")
        # memcached lists prefixes in its hash table's order: compared as sets of lines.
        out["dump"] = sorted(whole_reply(c, b"stats detail dump\r\n").split(b"\r\n"))
        out["off"] = whole_reply(c, b"stats detail off\r\n", b"\r\n")
        c.call(b"get u/2\r\n", b"END\r\n")
        out["dump_after_off"] = sorted(whole_reply(c, b"stats detail dump\r\n").split(b"\r\n"))
        out["settings_after_off"] = harness.stats(c, b"settings")["detail_enabled"]
        out["errors"] = [whole_reply(c, cmd, b"\r\n") for cmd in CACHEDUMP_ERRORS]
        out["reset"] = whole_reply(c, b"stats reset\r\n", b"\r\n")
        out["dump_after_reset"] = whole_reply(c, b"stats detail dump\r\n")
    return out


def cachedump(conn, cls, limit=0):
    """{key: (bytes, exptime)} of `stats cachedump`, and its line count."""
    data = whole_reply(conn, b"stats cachedump %d %d\r\n" % (cls, limit))
    lines = [l for l in data.split(b"\r\n")[:-2]]
    out = {}
    for line in lines:
        m = re.match(rb"ITEM (\S+) \[(\d+) b; (\d+) s\]$", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out, len(lines)


def item_classes(conn):
    """The slab classes `stats items` lists, read until two readings agree: memcached's LRU
    maintainer moves a new item from HOT to COLD with neither list holding it for a moment
    (lru_pull_tail unlinks under one lock and links under the other), and a one-item class
    read then is missing."""
    def read():
        return {int(k.split(":")[1]) for k in harness.stats(conn, b"items")
                if k.endswith(":number")}
    last = read()
    for _ in range(50):
        time.sleep(0.02)
        now = read()
        if now == last:
            return now
        last = now
    return last


def test_detail_and_cachedump(results):
    with harness.start_herdless(["-D", "/"]) as d:
        got = detail_replies(d)
    with harness.start_memcached(["-D", "/"]) as m:
        want = detail_replies(m)
    for name in want:
        results.equal(got[name], want[name], "stats detail / cachedump: %s as memcached's" % name)
    results.equal(got["settings"], ("/", "yes"), "-D sets the delimiter and turns detail on")

    # stats cachedump lists a class's items as `stats items` numbers it: herdless lists every
    # item of the class; memcached only its COLD LRU, so its lines are compared as a subset.
    keys = [b"cd%03d" % i for i in range(50)]
    dumps = []
    for start in (harness.start_herdless, harness.start_memcached):
        with start() as d, Conn(d.port) as c:
            for i, k in enumerate(keys):
                c.call(b"set %s 0 %d 5\r\nhello\r\n" % (k, 0 if i % 2 else 1000))
            c.call(b"set big 0 0 3000\r\n%s\r\n" % (b"b" * 3000))
            classes = item_classes(c)
            small = min(classes)
            dumped, count = cachedump(c, small)
            limited, limited_count = cachedump(c, small, 7)
            meta = {l[b"key"]: l for l in harness.metadump(c, b"%d" % small)}
            dumps.append((classes, dumped, count, limited_count, meta))
    (h_classes, h_dump, h_count, h_limited, h_meta), (m_classes, m_dump, _, _, _) = dumps
    results.equal(h_classes, m_classes, "cachedump classes: the same as memcached's for the same items")
    results.equal(sorted(h_dump), sorted(keys), "cachedump lists every item of the class once")
    results.equal(h_count, len(keys), "one line per item")
    results.equal(h_limited, 7, "the limit bounds the lines")
    results.check(all(h_dump[k][0] == 5 for k in h_dump), "cachedump shows the value's bytes")
    results.check(all(h_dump[k][1] == (0 if h_meta[k][b"exp"] == b"-1" else int(h_meta[k][b"exp"]))
                      for k in h_dump), "cachedump's expiry is metadump's (0 = never)")
    results.check(all(k in h_dump and v[0] == h_dump[k][0] and (v[1] == 0) == (h_dump[k][1] == 0)
                      for k, v in m_dump.items()),
                  "memcached's cachedump lines (its COLD LRU) are among herdless's")


def watch_lines(conn, count, seconds=5):
    """The next `count` lines of a watch stream, without their ts= and gid= fields."""
    out = []
    deadline = time.monotonic() + seconds
    while len(out) < count and time.monotonic() < deadline:
        line = conn.recv_line().rstrip(b"\r\n")
        out.append(b" ".join(f for f in line.split(b" ") if not f.startswith((b"ts=", b"gid="))))
    return out


def sync_watch(w, c, probe):
    """Waits until watcher `w` logs the commands of `c`: memcached's workers learn of a new
    watcher asynchronously, so a command right after its OK may go unlogged. `probe` % n is a
    command logged under a key containing b"wsync"; the lines it produces are consumed."""
    for n in range(100):
        c.call(probe % n, b"\r\n")
        try:
            w.timeout = 0.1
            line = w.recv_line()
        except TimeoutError:
            continue
        finally:
            w.timeout = harness.TIMEOUT
        if b"wsync" in line:
            c.call(probe % 999, b"\r\n")
            while b"wsync999" not in w.recv_line():
                pass
            return True
    return False


def without(line, *fields):
    return b" ".join(f for f in line.split(b" ") if f.split(b"=")[0] not in fields)


def test_watch_against_memcached(results, hl, mc):
    """watch mutations / fetchers see another connection's set and get, in memcached's format."""
    # Each kind watched on its own here; test_watch_store_lookup watches both together.
    seen = []
    for d in (mc, hl):
        with Conn(d.port) as w, Conn(d.port) as c, Conn(d.port) as f:
            results.equal(w.call(b"watch mutations\r\n"), b"OK\r\n", "watch says OK")
            results.check(sync_watch(w, c, b"set wsync%d 0 0 1\r\nx\r\n"), "the watcher logs")
            c.call(b"set w%key 0 100 5\r\nhello\r\n")
            c.call(b"add w%key 0 0 1\r\nx\r\n")
            c.call(b"set w2 5 0 2\r\nhi\r\n")
            c.call(b"ms wm 3 T50 F7\r\nabc\r\n")
            with BinConn(d.port) as b:
                b.call(set_("wb", "bin", flags=2))
            lines = watch_lines(w, 5)
            results.equal(f.call(b"watch fetchers\r\n"), b"OK\r\n", "watch fetchers says OK")
            results.check(sync_watch(f, c, b"get wsync%d\r\n"), "the fetchers watcher logs")
            c.call(b"get w%key wmiss\r\n", b"END\r\n")
            c.call(b"mg wm v\r\n", b"abc\r\n")
            c.call(b"mg wmiss2 v\r\n", b"EN\r\n")
            with BinConn(d.port) as b:
                b.call(get("wb"))
            # stats conns: both watchers are in memcached's conn_watch state.
            watcher_ports = {w.sock.getsockname()[1], f.sock.getsockname()[1]}
            c.send(b"stats conns\r\n")
            states, addrs = {}, {}
            for line in c.recv_until(b"END\r\n").split(b"\r\n"):
                m = re.match(rb"STAT (\d+):(addr|state) (\S+)$", line)
                if m:
                    (addrs if m.group(2) == b"addr" else states)[m.group(1)] = m.group(3)
            watching = sorted(states[fd] for fd, a in addrs.items()
                              if a.startswith(b"tcp:") and int(a.rsplit(b":", 1)[1]) in watcher_ports
                              and fd in states)
            results.equal(watching, [b"conn_watch", b"conn_watch"],
                          "%s: stats conns shows watchers as conn_watch" % d.name)
            # Sorted: memcached's logger thread merges its workers' buffers in turn, so lines
            # of different connections (the binary one's here) may come in any order.
            seen.append(sorted(without(l, b"cfd") for l in lines + watch_lines(f, 5)))
    results.equal(seen[1], seen[0], "watch lines as memcached's (ts, gid, cfd aside)")
    with Conn(hl.port) as w:
        w.call(b"watch connevents\r\n")
        c = Conn(hl.port)
        port = b"rport=%d " % c.sock.getsockname()[1]
        c.call(b"version\r\n")
        c.close()
        lines = []
        for _ in range(20):   # earlier connections' closes may come first
            lines += [l for l in watch_lines(w, 1) if port in l]
            if len(lines) == 2:
                break
    results.check(len(lines) == 2 and lines[0].startswith(b"type=conn_new rip=127.0.0.1 rport=")
                  and b"transport=tcp" in lines[0] and lines[1].startswith(b"type=conn_close")
                  and b"reason=normal" in lines[1], "connevents: conn_new and conn_close", repr(lines))


def test_watch_store_lookup(results, hl, mc):
    """A store logs memcached's item_get for its own lookup before its item_store line (watcher.t
    22-23, watcher_connid.t), as do delete, incr, decr, touch, ma and md (an ma that creates
    its item logs that store as an add), and connevents give memcached's close reasons (watcher.t 11): normal
    for a quit, error for an HTTP request line."""
    seen = []
    for d in (mc, hl):
        with Conn(d.port) as w, Conn(d.port) as c:
            results.equal(w.call(b"watch fetchers mutations\r\n"), b"OK\r\n", "watch says OK")
            results.check(sync_watch(w, c, b"get wsync%d\r\n"), "the watcher logs")
            c.call(b"set wl 0 0 4\r\nvbar\r\n")
            c.call(b"add wl 0 0 1\r\nx\r\n")
            c.call(b"append wl 0 0 2\r\nzz\r\n")
            c.call(b"replace wlmiss 0 0 1\r\nx\r\n")
            c.call(b"ms wl 2 F3\r\nab\r\n")
            c.call(b"get wl\r\n", b"END\r\n")
            # delete, incr, decr, touch, ma and md log the item_get of their lookup.
            for request in (b"set wn 0 0 1\r\n5\r\n", b"incr wn 3\r\n", b"decr wn 1\r\n",
                            b"incr wnmiss 1\r\n", b"touch wn 100\r\n", b"touch wnmiss 1\r\n",
                            b"ma wn\r\n", b"ma wv N90 J5\r\n", b"md wnmiss\r\n", b"delete wn\r\n",
                            b"delete wn\r\n"):
                c.call(request)
            seen.append([without(l, b"cfd") for l in watch_lines(w, 25)])
    results.equal(seen[1], seen[0], "store lookups logged as memcached's (ts, gid, cfd aside)")
    closes = []
    for d in (mc, hl):
        with Conn(d.port) as w:
            results.equal(w.call(b"watch connevents\r\n"), b"OK\r\n", "watch connevents says OK")
            reasons = []
            for request in (b"quit\r\n", b"GET / HTTP/1.1\r\n"):
                c = Conn(d.port)
                port = b"rport=%d " % c.sock.getsockname()[1]
                c.send(request)
                for _ in range(20):   # other connections' lines may come first
                    line = watch_lines(w, 1)[0]
                    if port in line and line.startswith(b"type=conn_close"):
                        reasons.append(line.split(b" reason=")[1].split(b" ")[0])
                        break
                c.close()
            closes.append(reasons)
    results.equal(closes[1], closes[0], "conn_close reasons as memcached's")
    results.equal(closes[1], [b"normal", b"error"], "quit is normal, an HTTP line an error")


def test_watch_stampede(results):
    with harness.start_herdless(["-o", "lease_timeout=1"]) as d, Conn(d.port) as w, \
            Conn(d.port) as c:
        results.equal(w.call(b"watch stampede\r\n"), b"OK\r\n", "watch stampede says OK")
        c.call(b"mg hot v N30 c\r\n", b"\r\n")   # a miss: this client wins the lease
        granted = watch_lines(w, 1)
        results.check(granted and granted[0].startswith(b"type=lease_granted key=hot token=")
                      and b"reason=miss" in granted[0], "lease grant logged", repr(granted))
        time.sleep(1.3)
        c.call(b"mg hot v N30 c\r\n", b"\r\n")   # the holder never stored: taken over
        lines = watch_lines(w, 2)
        results.check(len(lines) == 2 and lines[0].startswith(b"type=lease_timeout key=hot token=")
                      and b"reason=takeover" in lines[1], "lease timeout logged", repr(lines))
        token = lines[1].split(b"token=")[1].split(b" ")[0] if len(lines) == 2 else b"0"
        c.call(b"ms hot 1 T60 C%s\r\nx\r\n" % token)
        done = watch_lines(w, 1)
        results.check(done and done[0].startswith(b"type=lease_fulfilled key=hot token=" + token),
                      "fulfilled lease logged", repr(done))


ROUNDS = 100


def test_watcher_never_reads(results):
    """A watcher that reads nothing costs bounded memory and loses lines, counted."""
    with harness.start_herdless(["-m", "8"]) as d, Conn(d.port) as c:
        w = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        w.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: a small window
        w.connect(("127.0.0.1", d.port))
        w.sendall(b"watch mutations fetchers\r\n")
        harness.wait_for(lambda: harness.stats(c)["log_watchers"] == "1", 5)
        value = b"w" * 2000

        def load():
            for round_ in range(ROUNDS):
                c.send(b"".join(b"set k%d 0 0 %d noreply\r\n%s\r\nget miss%d\r\n" %
                                (i, len(value), value, i) for i in range(500)))
                c.recv_until(b"END\r\n" * 500)

        # Phase 1 fills the cache's segments (-m 8) so that phase 2 measures the watcher alone.
        load()
        rss_before = d.rss_bytes()
        t0 = time.monotonic()
        load()
        s = harness.stats(c)
        grown = d.rss_bytes() - rss_before
        harness.log("never-reading watcher: %s lines skipped, %s sent, RSS +%.1f MB, %d sets+gets "
                    "in %.2f s (second half)" % (s["log_watcher_skipped"], s["log_watcher_sent"],
                                                 grown / 1e6, ROUNDS * 1000,
                                                 time.monotonic() - t0))
        results.check(int(s["log_watcher_skipped"]) > 0, "the watcher's lost lines are counted")
        # ASan keeps freed memory in its quarantine: RSS says nothing there.
        if not harness.SANITIZED:
            results.check(grown < 4 << 20, "the server's memory stays bounded",
                          "RSS grew %d bytes" % grown)
        w.close()
        results.check(harness.wait_for(lambda: harness.stats(c)["log_watchers"] == "0", 5),
                      "a watcher that leaves is removed")


def body(results):
    hl = harness.start_herdless(["-m", "256"])
    mc = harness.start_memcached(["-m", "256"])
    test_replies_against_memcached(results, hl, mc)
    test_format_against_memcached(results, hl, mc)
    test_class_stats(results, hl, mc)
    test_memcached_tool(results, hl, mc)
    test_dump_under_writes(results, hl)
    test_watch_against_memcached(results, hl, mc)
    test_watch_store_lookup(results, hl, mc)
    hl.stop()
    mc.stop()
    test_crawl(results)
    test_reclaimed_on_reuse(results)
    test_reclaimed_like_memcached(results)
    test_disabled(results)
    test_track_sizes(results)
    test_sizes_enable(results)
    test_start_values(results)
    test_detail_and_cachedump(results)
    test_watch_stampede(results)
    test_watcher_never_reads(results)


if __name__ == "__main__":
    harness.run("test_operators", body)
