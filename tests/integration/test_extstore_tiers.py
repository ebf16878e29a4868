"""memcached 1.6.45's tiered flash files (-o compat=1.6.45, ext_path=<file>:<size>:<bucket>).

Each file's pages serve its bucket first: `stats extstore` at start lists them as 1.6.45 does
(recorded: CI has no 1.6.45). With a compact file, compaction's rescues land on its pages; with
coldcompact and old files, a full default file with nothing to defragment has its oldest page
compacted, values never read going to the coldcompact pages and the others to the old ones. Every
value read back is the one written (or a miss), never another. 1.6.18's refusals of these
buckets are compared with Debian's memcached in test_extstore.py.
"""
import os
import time

import harness
from test_extstore import extstore_pages, flash_file, get_value, start_lines, wait_written

# memcached 1.6.45's extstore lines right after `-o ext_page_size=8,ext_wbuf_size=2,
# ext_path=<a>:16m,ext_path=<b>:16m:compact,ext_path=<c>:8m:coldcompact,ext_path=<d>:8m:old`,
# recorded from memcached 1.6.45 on 2026-12-06: `stats` (its extstore_* lines) and `stats
# extstore`. Its list of files is the -o list backwards: page 0 is the old file's.
TIERED_OPTS = "ext_page_size=8,ext_wbuf_size=2,ext_path=%s:16m,ext_path=%s:16m:compact," \
              "ext_path=%s:8m:coldcompact,ext_path=%s:8m:old"
TIERED_START_1645 = [
    "extstore_memory_pressure 0.00", "extstore_compact_lost 0", "extstore_compact_rescues 0",
    "extstore_compact_resc_cold 0", "extstore_compact_resc_old 0", "extstore_compact_skipped 0",
    "extstore_page_allocs 0", "extstore_page_evictions 0", "extstore_page_reclaims 0",
    "extstore_pages_free 6", "extstore_pages_used 0", "extstore_objects_evicted 0",
    "extstore_objects_read 0", "extstore_objects_written 0", "extstore_objects_used 0",
    "extstore_bytes_evicted 0", "extstore_bytes_written 0", "extstore_bytes_read 0",
    "extstore_bytes_used 0", "extstore_bytes_fragmented 0", "extstore_limit_maxbytes 50331648",
    "extstore_io_queue 0",
]
for _page, _free_bucket in enumerate([5, 4, 1, 0, 1, 0]):
    TIERED_START_1645 += ["%d:version 0" % _page, "%d:bytes 0" % _page, "%d:bucket 0" % _page,
                          "%d:free_bucket %d" % (_page, _free_bucket)]

VALUE_SIZE = 20000
COMMON = "compat=1.6.45,ext_page_size=8,ext_wbuf_size=2,ext_item_size=512,ext_item_age=0," \
         "ext_recache_rate=10000,ext_max_frag=0.9,ext_max_sleep=100000"


def value_of(prefix, i):
    head = b"%s%d:" % (prefix, i)
    return head + bytes(((i * 13 + k) % 26) + 65 for k in range(VALUE_SIZE - len(head)))


def set_values(conn, prefix, count):
    for i in range(count):
        conn.send(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, i, VALUE_SIZE, value_of(prefix, i)))
    conn.call(b"mn\r\n", b"MN\r\n")


def wait_stat(conn, names, timeout=30.0):
    """Waits until every stat named is above 0; the stats then (or at the timeout)."""
    deadline = time.time() + timeout
    while True:
        s = harness.stats(conn)
        if all(int(s.get(n, "0")) > 0 for n in names) or time.time() > deadline:
            return s
        time.sleep(0.1)


def check_read_back(results, conn, prefix, count, label):
    """Each value reads back as written or misses; the number of hits."""
    hits = 0
    for i in range(count):
        got = get_value(conn, b"%s%d" % (prefix, i))
        if got is None:
            continue
        hits += 1
        if got != value_of(prefix, i):
            results.check(False, "%s: %s%d reads back as written" % (label, prefix.decode(), i))
            return hits
    results.check(True, "%s: every %s value read is the one written (%d hits of %d)"
                  % (label, prefix.decode(), hits, count))
    return hits


def used_free_buckets(conn):
    """The free buckets of the pages in use."""
    return sorted({p["free_bucket"] for p in extstore_pages(conn).values() if p["version"] != 0})


def with_files(tags, run):
    paths = [flash_file(t) for t in tags]
    try:
        run(paths)
    finally:
        for p in paths:
            if os.path.exists(p):
                os.remove(p)


def compare_tiered_start(results):
    def run(paths):
        opts = "compat=1.6.45," + TIERED_OPTS % tuple(paths)
        with harness.start_herdless(["-U", "0", "-o", opts]) as d:
            results.equal(start_lines(d.port), TIERED_START_1645, "at start, 1.6.45's lines for four tiered files")
    with_files(["tier-a", "tier-b", "tier-c", "tier-d"], run)


def check_compact_file(results):
    """A default file of 4 pages and a compact one: half of the first values deleted, more
    written; the default file runs out of free pages and its half-empty pages are compacted
    into the compact file's."""
    def run(paths):
        with harness.start_herdless(["-m", "128", "-U", "0", "-o", COMMON + ",ext_path=%s:32m:default,"
                                     "ext_path=%s:32m:compact" % tuple(paths)]) as d:
            with harness.Conn(d.port) as c:
                set_values(c, b"a", 600)
                set_values(c, b"b", 600)
                results.check(wait_written(c, 1200) >= 1200, "compact file: 1,200 values written to flash")
                for i in range(600):
                    c.send(b"delete b%d noreply\r\n" % i)
                set_values(c, b"c", 500)
                s = wait_stat(c, ["extstore_compact_rescues"])
                results.check(int(s["extstore_compact_rescues"]) > 0, "compact file: values rescued",
                              s.get("extstore_compact_rescues"))
                results.check(1 in used_free_buckets(c), "compact file: its pages in use",
                              repr(used_free_buckets(c)))
                buckets = {p["bucket"] for p in extstore_pages(c).values() if p["version"] != 0}
                results.check(buckets <= {0, 1}, "compact file: pages of the default and compact buckets only",
                              repr(buckets))
                check_read_back(results, c, b"a", 600, "compact file")
                check_read_back(results, c, b"c", 500, "compact file")
    with_files(["cmp-default", "cmp-compact"], run)


def check_cold_and_old(results):
    """A default file of 2 pages beside coldcompact and old ones: once the default file has no
    free page and nothing to defragment, its oldest page's values move on, those read to the old
    file and those never read to the coldcompact one."""
    def run(paths):
        with harness.start_herdless(["-m", "128", "-U", "0", "-o", COMMON + ",ext_path=%s:16m:default,"
                                     "ext_path=%s:16m:coldcompact,ext_path=%s:16m:old" % tuple(paths)]) as d:
            with harness.Conn(d.port) as c:
                set_values(c, b"n", 300)
                results.check(wait_written(c, 300) >= 300, "cold/old: 300 values written to flash")
                for i in range(0, 300, 2):
                    get_value(c, b"n%d" % i)
                set_values(c, b"m", 400)
                s = wait_stat(c, ["extstore_compact_resc_cold", "extstore_compact_resc_old"])
                results.check(int(s["extstore_compact_resc_cold"]) > 0, "cold/old: values never read rescued "
                              "into the coldcompact file", s.get("extstore_compact_resc_cold"))
                results.check(int(s["extstore_compact_resc_old"]) > 0, "cold/old: values read rescued into "
                              "the old file", s.get("extstore_compact_resc_old"))
                used = used_free_buckets(c)
                results.check(4 in used and 5 in used, "cold/old: both files' pages in use", repr(used))
                hits = check_read_back(results, c, b"n", 300, "cold/old")
                results.check(hits > 0, "cold/old: the rescued values still read back", str(hits))
                check_read_back(results, c, b"m", 400, "cold/old")
    with_files(["co-default", "co-cold", "co-old"], run)


def body(results):
    compare_tiered_start(results)
    check_compact_file(results)
    check_cold_and_old(results)


if __name__ == "__main__":
    harness.run("test_extstore_tiers", body)
