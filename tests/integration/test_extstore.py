#!/usr/bin/env python3
"""memcached's extstore options, side by side with Debian's memcached 1.6.18 (built with
extstore): the ext_* block of `stats settings` (names, order, values) for the same -o list,
`stats extstore`, and the messages of bad ext_* values, which must be memcached's words.

The flash tier itself (-o ext_path): values move to the file (waited for on
extstore_objects_written) and read back byte for byte through get, gets, a multi-key get, mg
and a binary get; a delete or an overwrite of a value on flash; the flash counters and
extstore_* lines where memcached prints them; a small file that fills up degrades to misses;
corrupted file bytes read as misses counted in badcrc_from_extstore, never as a wrong value.
The runtime `extstore` command: memcached's replies and settings, and its effect on the tier.
`watch evictions sysevents`: memcached's extwrite and compaction lines.
"""

import os
import re
import socket
import struct
import subprocess
import time

import harness
from harness import HERDLESS_BIN, MEMCACHED_BIN

# memcached creates the file of an ext_path it refuses late (too many pages); removed at the end.
FLASH = "/tmp/herdless-ext-test.%d" % os.getpid()

# memcached's lines from ext_item_size to ext_drop_unread (slab_automove_freeratio among them).
EXT_BLOCK_FIRST, EXT_BLOCK_LAST = "ext_item_size", "ext_drop_unread"

SETTINGS_CASES = [
    [],
    ["-o", "ext_item_size=100,ext_item_age=30,ext_low_ttl=5,ext_recache_rate=7"],
    ["-o", "ext_compact_under=3,ext_drop_under=2,ext_max_sleep=9,ext_max_frag=0.5,ext_drop_unread"],
    ["-o", "ext_wbuf_size=8,ext_threads=4,ext_page_size=32,slab_automove_freeratio=0.25"],
    ["-o", "ext_max_frag=1.237,ext_drop_unread=0"],
]

# Each must make memcached exit at start; herdless must say what memcached says.
BAD_CASES = [
    "ext_item_size=abc",
    "ext_item_size=-1",
    "ext_item_size",
    "ext_recache_rate=3x",
    "ext_max_frag=x",
    "ext_max_sleep",
    "ext_path",
    "ext_path=" + FLASH,
    "ext_path=" + FLASH + ":64m:lowttl",
    "ext_path=" + FLASH + ":64m:nosuch",
    "ext_path=" + FLASH + ":64m:coldcompact",   # 1.6.45's buckets: unknown to 1.6.18
    "ext_path=" + FLASH + ":64m:old",
    "ext_path=" + FLASH + ":64m,ext_page_size=2",
    "ext_page_size=2,ext_path=" + FLASH + ":64m",
    "ext_wbuf_size=0,ext_path=" + FLASH + ":64m",
    "ext_page_size=2,ext_wbuf_size=2,ext_path=" + FLASH + ":200g",
]
BAD_FLAG_CASES = [
    ["-I", "8m", "-o", "ext_path=" + FLASH + ":64m"],
    ["-U", "22999", "-o", "ext_path=" + FLASH + ":64m"],
]


def ext_block(conn):
    lines = []
    inside = False
    for name, value in harness.stats(conn, b"settings").items():
        inside = inside or name == EXT_BLOCK_FIRST
        if inside:
            lines.append((name, value))
        if name == EXT_BLOCK_LAST:
            break
    return lines


def start_failure(argv):
    """stderr lines of a start that must fail (None if it did not fail within the timeout)."""
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode == 0:
        return None
    return [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line]


def compare_settings(results):
    servers = harness.SideBySide()
    for args in SETTINGS_CASES:
        ref, ours = servers.pair(args)
        with harness.Conn(ref.port) as a, harness.Conn(ours.port) as b:
            want = ext_block(a)
            results.check(len(want) == 11, "memcached %s: the ext_* block has 11 lines" % args,
                          repr(want))
            results.equal(ext_block(b), want, "stats settings ext_* block with %s" % args)
            results.equal(b.call(b"stats extstore\r\n", b"END\r\n"),
                          a.call(b"stats extstore\r\n", b"END\r\n"),
                          "stats extstore without ext_path, %s" % args)
    servers.stop(results)


# The runtime `extstore` command: each line's reply, then the ext_* block it leaves.
EXTSTORE_LINES = [
    b"extstore", b"extstore item_size", b"extstore item_size 100", b"extstore item_size x",
    b"extstore item_size -1", b"extstore item_size +7", b"extstore item 100", b"extstore max 100",
    b"extstore max_frag 0.5", b"extstore max_frag .25x", b"extstore drop_unread 2",
    b"extstore free_memchunks 1 2", b"extstore free_memchunks 64 2", b"extstore free_memchunks 1",
    b"extstore nosuch 1", b"extstore item_size 100 noreply", b"extstore item_size x noreply",
    b"extstore noreply", b"extstore item_size 4294967296", b"extstore item_size 5 extra",
    b"extstore  item_age   7 ", b"extstore low_ttl 3", b"extstore recache_rate 9",
    b"extstore compact_under 4", b"extstore drop_under 2", b"extstore max_sleep 50000",
    b"extstore max_frag 1e1", b"extstore max_frag nan", b"extstore drop_unread 0",
    b"extstore low_ttl 99999999999999999999",
]


def command_transcript(conn):
    out = []
    for line in EXTSTORE_LINES:
        reply = conn.call(line + b"\r\nmn\r\n", b"MN\r\n")
        out.append((line, reply, ext_block(conn)))
    return out


def compare_extstore_command(results):
    """memcached's replies to `extstore <setting> <value>` and the settings they leave, without
    and with ext_path (each server its own file)."""
    for tag in ("none", "cmd"):
        opts = [] if tag == "none" else ["-o", FLASH_OPTS + ",ext_path=%s:16m" % flash_file(tag)]
        mc_opts = [] if tag == "none" else ["-o", FLASH_OPTS + ",ext_path=%s.mc:16m" % flash_file(tag)]
        ref, ours = harness.start_memcached(mc_opts), harness.start_target(opts)
        try:
            with harness.Conn(ref.port) as a, harness.Conn(ours.port) as b:
                want, got = command_transcript(a), command_transcript(b)
                for w, g in zip(want, got):
                    results.equal(g, w, "extstore command (%s ext_path): %r" % (tag, w[0]))
        finally:
            ref.stop()
            ours.stop()
            for p in (flash_file(tag), flash_file(tag) + ".mc"):
                if os.path.exists(p):
                    os.remove(p)


def check_command_applies(results):
    """`extstore item_age` reaches the running flash tier: values that never idle out under the
    default age move to flash once it is 1 s."""
    path = flash_file("age")
    ours = harness.start_herdless(["-m", "8", "-o", "ext_page_size=2,ext_wbuf_size=2,ext_max_sleep=20000,"
                                   "ext_path=%s:16m" % path])
    try:
        with harness.Conn(ours.port) as c:
            set_all(c, range(10))
            results.equal(harness.stat(c, "extstore_objects_written"), 0,
                          "without ext_item_age nothing that fits in RAM moves")
            results.equal(c.call(b"extstore item_age 1\r\n"), b"OK\r\n", "extstore item_age 1")
            results.check(wait_written(c, 10) >= 10, "the 10 idle values moved to flash")
            results.equal([get_value(c, b"k%d" % i) for i in range(10)], [value_of(i) for i in range(10)],
                          "and read back")
    finally:
        ours.stop()
        if os.path.exists(path):
            os.remove(path)


def check_sizes_1645_refuses(results):
    """memcached 1.6.45 refuses ext_path=<file>:0m (no whole page, exit 64) and :1GB (no unit,
    exit 1), which 1.6.18 starts with: so does herdless under -o compat=1.6.45 (1.6.45's words,
    checked against its build by hand: t/extstore-start.t 1, 2)."""
    path = flash_file("size")
    cases = [("0m", b"supplied ext_path has zero size, cannot use", 64),
             ("1GB", b"must supply size to ext_path, ie: ext_path=/f/e:64m (m|g|t|p supported)\n"
                     b"failed to parse ext_path argument", 1)]
    for size, message, status in cases:
        proc = harness.check_refuses_to_start(
            results, ["-U", "0", "-o", "ext_path=%s:%s,compat=1.6.45" % (path, size)], message,
            "compat=1.6.45, ext_path=<file>:%s" % size)
        results.equal(proc.returncode, status, "1.6.45's exit status for :%s" % size)
    if os.path.exists(path):
        os.remove(path)


def extstore_pages(conn):
    """`stats extstore` as {page: {field: value}}."""
    pages = {}
    for name, value in harness.stats(conn, b"extstore").items():
        page, field = name.split(":")
        pages.setdefault(int(page), {})[field] = int(value)
    return pages


def check_low_ttl(results):
    """ext_low_ttl: values whose TTL ends within it fill pages of their own, shown with memcached's
    bucket 3 in stats extstore once written; values without a TTL go to bucket 0's. A page still
    being written shows zeros (1.6.18) or its version and bytes but no bucket (1.6.45), as
    memcached's extstore_get_page_data fills them."""
    per_kind = 600   # 4000-byte values: a 2 MB page and some
    for compat in ([], ["-o", "compat=1.6.45"]):
        path = flash_file("lowttl")
        ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_low_ttl=60,ext_path=%s:16m" % path]
                                      + compat)
        label = " ".join(compat) or "default"
        try:
            with harness.Conn(ours.port) as c:
                for i in range(2 * per_kind):
                    v = value_of(i)
                    c.send(b"set k%d 0 %d %d noreply\r\n%s\r\n" % (i, 30 if i % 2 == 0 else 0, len(v), v))
                results.check(wait_written(c, 2 * per_kind) >= 2 * per_kind,
                              "%s: %d values moved to flash" % (label, 2 * per_kind))
                pages = extstore_pages(c).values()
                used = int(harness.stats(c)["extstore_pages_used"])
                shown = [p for p in pages if p["version"] != 0]
                results.equal(sorted({p["bucket"] for p in shown}), [0, 3],
                              "%s: written pages of both kinds, the low-TTL ones in bucket 3" % label)
                # One page of each kind is still being written.
                results.equal(len(shown), used if compat else used - 2,
                              "%s: pages showing a version, of %d in use" % (label, used))
                results.equal([get_value(c, b"k%d" % i) for i in range(0, 2 * per_kind, 97)],
                              [value_of(i) for i in range(0, 2 * per_kind, 97)], "%s: both read back" % label)
        finally:
            ours.stop()
            if os.path.exists(path):
                os.remove(path)


# memcached 1.6.45's extstore lines right after `-o ext_path=<file>:256m` (four free pages; its
# first page is in the free list, where 1.6.18 leaves it out and counts it used), recorded from
# memcached 1.6.45 on 2026-12-06: `stats` (its extstore_* lines) and `stats extstore`.
START_1645 = [
    "extstore_memory_pressure 0.00", "extstore_compact_lost 0", "extstore_compact_rescues 0",
    "extstore_compact_resc_cold 0", "extstore_compact_resc_old 0", "extstore_compact_skipped 0",
    "extstore_page_allocs 0", "extstore_page_evictions 0", "extstore_page_reclaims 0",
    "extstore_pages_free 4", "extstore_pages_used 0", "extstore_objects_evicted 0",
    "extstore_objects_read 0", "extstore_objects_written 0", "extstore_objects_used 0",
    "extstore_bytes_evicted 0", "extstore_bytes_written 0", "extstore_bytes_read 0",
    "extstore_bytes_used 0", "extstore_bytes_fragmented 0", "extstore_limit_maxbytes 268435456",
    "extstore_io_queue 0",
] + ["%d:%s 0" % (page, field) for page in range(4) for field in ("version", "bytes", "bucket", "free_bucket")]


def start_lines(port):
    """The extstore_* lines of `stats` and the lines of `stats extstore`, without "STAT "."""
    with harness.Conn(port) as c:
        lines = c.call(b"stats\r\n", b"END\r\n").decode().splitlines()
        lines = [ln[5:] for ln in lines if ln.startswith("STAT extstore_")]
        return lines + [ln[5:] for ln in c.call(b"stats extstore\r\n", b"END\r\n").decode().splitlines()
                        if ln.startswith("STAT ")]


def compare_start_stats(results):
    """Before anything is written: the extstore lines as Debian's memcached 1.6.18 prints them
    (live), and as 1.6.45 does (recorded) under -o compat=1.6.45; then 1.6.45's memory pressure
    (the share of memory in classes whose items stay in RAM) grows with small items."""
    theirs, ours, ours_1645 = (flash_file(tag) for tag in ("start-memcached", "start-herdless", "start-1645"))
    ref = harness.start_memcached(["-o", "ext_path=%s:256m" % theirs])
    mine = harness.start_herdless(["-o", "ext_path=%s:256m" % ours])
    latest = harness.start_herdless(["-o", "ext_path=%s:256m,compat=1.6.45" % ours_1645])
    try:
        want = start_lines(ref.port)
        results.check(len(want) == 19 + 16, "memcached 1.6.18: 19 extstore_* lines, 4 pages", repr(want))
        results.equal(start_lines(mine.port), want, "at start, memcached 1.6.18's extstore lines")
        results.equal(start_lines(latest.port), START_1645, "at start, memcached 1.6.45's extstore lines")
        with harness.Conn(latest.port) as c:
            for i in range(2000):
                c.send(b"set small%d 0 0 100 noreply\r\n%s\r\n" % (i, b"s" * 100))
            results.equal(c.call(b"mn\r\n"), b"MN\r\n", "2000 small items stored")
            pressure = harness.stats(c)["extstore_memory_pressure"]
            results.check(re.fullmatch(r"\d+\.\d\d", pressure) and float(pressure) > 0,
                          "1.6.45: extstore_memory_pressure above 0 with small items", pressure)
    finally:
        for daemon in (ref, mine, latest):
            daemon.stop()
        for path in (theirs, ours, ours_1645):
            if os.path.exists(path):
                os.remove(path)


def compare_messages(results):
    cases = [["-o", c] for c in BAD_CASES] + BAD_FLAG_CASES
    for args in cases:
        base = ["-l", "127.0.0.1", "-p", "0"] + harness.user_args()
        want = start_failure([MEMCACHED_BIN] + base + list(args))
        if not results.check(want is not None, "memcached refuses %s" % args):
            continue
        got = start_failure([HERDLESS_BIN] + base + list(args))
        results.check(got is not None and all(line in got for line in want),
                      "herdless refuses %s with memcached's words" % args,
                      "  memcached: %r\n  herdless:  %r" % (want, got))


# memcached's smallest pages and buffers (2 MB); values of 512 bytes or more idle 1 s move.
FLASH_OPTS = "ext_page_size=2,ext_wbuf_size=2,ext_item_size=512,ext_item_age=1,ext_max_sleep=20000"


def flash_file(tag):
    return "/tmp/herdless-ext-%s.%d" % (tag, os.getpid())


def value_of(i, size=4000):
    head = b"v%d:" % i
    return head + bytes((i * 7 + k) % 251 for k in range(size - len(head)))


def set_all(conn, keys, size=4000):
    for i in keys:
        v = value_of(i, size)
        conn.send(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
    for _ in keys:
        conn.recv_line()


def wait_written(conn, at_least, timeout=15.0):
    """Waits until extstore_objects_written reaches at_least; its last value."""
    deadline = time.time() + timeout
    while True:
        n = int(harness.stats(conn).get("extstore_objects_written", "0"))
        if n >= at_least or time.time() > deadline:
            return n
        time.sleep(0.1)


def get_value(conn, key, cmd=b"get"):
    """The value of one key (None on a miss), checking the reply's framing."""
    reply = conn.call(cmd + b" " + key + b"\r\n", b"END\r\n")
    if reply == b"END\r\n":
        return None
    header, rest = reply.split(b"\r\n", 1)
    size = int(header.split()[3])
    return rest[:size]


def multi_get(conn, keys):
    reply = conn.call(b"get " + b" ".join(keys) + b"\r\n", b"END\r\n")
    out = {}
    while reply.startswith(b"VALUE "):
        header, reply = reply.split(b"\r\n", 1)
        f = header.split()
        size = int(f[3])
        out[f[1]] = reply[:size]
        reply = reply[size + 2:]
    return out


def binary_get(port, key):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(key), 0, 0, 0, len(key), 0, 0) + key)
        head = b""
        while len(head) < 24:
            head += s.recv(24 - len(head))
        status, body_len = struct.unpack(">H", head[6:8])[0], struct.unpack(">I", head[8:12])[0]
        body = b""
        while len(body) < body_len:
            body += s.recv(body_len - len(body))
        return body[4:] if status == 0 else None


def metadump_classes(conn):
    """{key: cls} from lru_crawler metadump all."""
    return {line[b"key"]: line[b"cls"] for line in harness.metadump(conn)}


def flash_names(conn):
    return [n for n in harness.stats(conn) if "extstore" in n]


def check_round_trip(results):
    """Store, moved to flash, read back byte for byte; delete and overwrite on flash."""
    path = flash_file("rt")
    ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_path=%s:16m" % path])
    ref = harness.start_memcached(["-m", "8", "-o", FLASH_OPTS + ",ext_path=%s:16m" % (path + ".mc")])
    try:
        with harness.Conn(ours.port) as c, harness.Conn(ref.port) as m:
            results.equal(flash_names(c), flash_names(m), "the flash lines of stats, memcached's order")
            set_all(c, range(40))
            results.check(wait_written(c, 40) >= 40, "40 values moved to flash")
            results.equal([get_value(c, b"k%d" % i) for i in range(0, 40, 2)],
                          [value_of(i) for i in range(0, 40, 2)], "get of values on flash")
            got = multi_get(c, [b"k%d" % i for i in range(1, 40, 2)] + [b"nosuch"])
            results.equal(got, {b"k%d" % i: value_of(i) for i in range(1, 40, 2)},
                          "a multi-key get of values on flash")
            st = harness.stats(c)
            results.check(int(st["get_extstore"]) == 40 and int(st["recache_from_extstore"]) == 0,
                          "get_extstore counts the fetches; values read once are not recached", repr(st))
            # Just written, they are in the write buffer or the page cache: read at once, no wait
            # (the parked path, for values only the device has, is tests/unit/item_store_flash_test.cc's).
            results.equal(int(st["waits_parked"]), 0, "values on flash but cached are read without a wait")
            set_all(c, range(100, 110))
            results.check(wait_written(c, 50) >= 50, "10 more values moved to flash")
            results.equal(c.call(b"mg k100 v s\r\n", b"\r\n") + c.recv_exact(4002),
                          b"VA 4000 s4000\r\n" + value_of(100) + b"\r\n", "mg of a value on flash")
            results.equal(binary_get(ours.port, b"k101"), value_of(101), "binary get of a value on flash")
            results.equal(get_value(c, b"k102", b"gets") is not None, True, "gets of a value on flash")
            results.equal(c.call(b"append k103 0 0 1\r\nx\r\n"), b"NOT_STORED\r\n",
                          "append to a value on flash: NOT_STORED, as memcached")
            results.equal(c.call(b"delete k104\r\n"), b"DELETED\r\n", "delete of a value on flash")
            results.equal(get_value(c, b"k104"), None, "a deleted value on flash is gone")
            results.equal(c.call(b"set k105 0 0 3\r\nnew\r\n"), b"STORED\r\n", "overwrite on flash")
            results.equal(get_value(c, b"k105"), b"new", "an overwritten value on flash")
            fetched = int(harness.stats(c)["get_extstore"])
            results.equal(c.call(b"mg k107 s f t\r\n", b"\r\n"), b"HD s4000 f0 t-1\r\n",
                          "mg without v of a value on flash: its metadata")
            results.equal(int(harness.stats(c)["get_extstore"]), fetched, "mg without v reads nothing from flash")
            # memcached keeps a header item in RAM for a value on flash: class 1 here, the value's size.
            debug = c.call(b"me k108\r\n", b"\r\n")
            results.check(re.fullmatch(rb"ME k108 exp=-1 la=\d+ cas=\d+ fetch=(yes|no) cls=1 size=4063\r\n", debug)
                          is not None, "me of a value on flash: memcached's line (%r)" % debug)
            results.equal(int(harness.stats(c)["get_extstore"]), fetched, "me reads nothing from flash")
            results.equal([get_value(c, b"k%d" % i) for i in range(106, 110)],
                          [value_of(i) for i in range(106, 110)], "the others still read back")
            pages = c.call(b"stats extstore\r\n", b"END\r\n").count(b":version ")
            results.equal(pages, 8, "stats extstore: a line group per page")
            # metadump lists values on flash as memcached lists their header items (and so
            # memcached-tool dump finds them): the same keys and classes from both servers.
            set_all(m, list(range(40)) + list(range(100, 110)))
            results.check(wait_written(m, 50, timeout=30.0) >= 50, "memcached moved its values to flash too")
            m.call(b"delete k104\r\n")
            m.call(b"set k105 0 0 3\r\nnew\r\n")
            results.equal(metadump_classes(c), metadump_classes(m),
                          "metadump of values on flash: memcached's keys and classes")
    finally:
        ours.stop()
        ref.stop()
        for p in (path, path + ".mc"):
            if os.path.exists(p):
                os.remove(p)


def check_recache(results):
    """memcached's recache rule: a value on flash read again within a minute comes back to RAM
    one such read in ext_recache_rate (here 1); a first read is served from flash only."""
    path = flash_file("rc")
    ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_recache_rate=1,ext_path=%s:16m" % path])
    try:
        with harness.Conn(ours.port) as c:
            set_all(c, range(5))
            results.check(wait_written(c, 5) >= 5, "5 values moved to flash")
            results.equal(get_value(c, b"k3"), value_of(3), "a first read of a value on flash")
            st = harness.stats(c)
            results.equal((st["get_extstore"], st["recache_from_extstore"]), ("1", "0"),
                          "the first read is served from flash, not recached")
            results.equal(get_value(c, b"k3"), value_of(3), "a second read of a value on flash")
            st = harness.stats(c)
            results.equal((st["get_extstore"], st["recache_from_extstore"]), ("2", "1"),
                          "the second read within a minute recaches it (ext_recache_rate=1)")
    finally:
        ours.stop()
        if os.path.exists(path):
            os.remove(path)


def check_stale_moves(results):
    """A stale value (md I) moves to flash and stays stale: the first mg after the move wins the
    recompute (W), the next sees it taken (Z). Default: read before the move does not count (h0),
    as 1.6.18's new header item; -o compat=1.6.45: it does (h1), as 1.6.45's, whose lines these
    are (recorded from memcached 1.6.45 on 2026-12-05). memcached 1.6.18 itself loses the stale
    mark in the move (its first mg answers `HD h0`, a fresh value): not reproduced."""
    for extra, first in (([], b"HD h0 X W\r\n"), (["-o", "compat=1.6.45"], b"HD h1 X W\r\n")):
        path = flash_file("stale")
        ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_path=%s:16m" % path] + extra)
        try:
            with harness.Conn(ours.port) as c:
                set_all(c, [0])
                results.equal(c.call(b"mg k0 h\r\n"), b"HD h0\r\n", "read once in RAM")
                results.equal(c.call(b"md k0 I\r\n"), b"HD\r\n", "invalidated")
                results.check(wait_written(c, 1) >= 1, "the stale value moved to flash")
                results.equal(c.call(b"mg k0 h\r\n"), first, "%r: a stale value on flash: the first mg wins" % extra)
                results.equal(c.call(b"mg k0 h\r\n"), b"HD h1 Z X\r\n", "%r: the next sees the win taken" % extra)
                results.equal(get_value(c, b"k0"), value_of(0), "its value read back from flash")
        finally:
            ours.stop()
            if os.path.exists(path):
                os.remove(path)


def check_full_file(results):
    """A file far smaller than what is stored: its oldest pages go, their values miss."""
    path = flash_file("full")
    ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_path=%s:6m" % path])
    try:
        with harness.Conn(ours.port) as c:
            for first in range(0, 3000, 500):
                set_all(c, range(first, first + 500), size=8000)
            wait_written(c, 2000)
            wrong = misses = 0
            for i in range(0, 3000, 10):
                v = get_value(c, b"k%d" % i)
                if v is None:
                    misses += 1
                elif v != value_of(i, 8000):
                    wrong += 1
            st = harness.stats(c)
            results.equal(wrong, 0, "a full flash file: no wrong value")
            results.check(misses > 0 and int(st["extstore_page_evictions"]) > 0,
                          "a full flash file degrades to misses", "misses %d, %r" % (misses, st))
    finally:
        ours.stop()
        if os.path.exists(path):
            os.remove(path)


# memcached's extstore log lines (logger.c), in `watch evictions` and `watch sysevents`.
LOG_LINE = re.compile(
    rb"ts=\d+\.\d+ gid=\d+ type=(?:"
    rb"extwrite key=(?P<key>\S+) fetch=(?:yes|no) ttl=-?\d+ la=\d+ clsid=(?P<cls>\d+) bucket=\d+"
    rb"|compact_fraginfo ratio=(?P<ratio>\d+\.\d\d) bytes=\d+"
    rb"|compact_start id=(?P<start>\d+) version=\d+"
    rb"|compact_read_start id=\d+ offset=(?P<offset>\d+)"
    rb"|compact_read_end id=\d+ offset=\d+ rescues=(?P<rescues>\d+) lost=\d+ skipped=\d+"
    rb"|compact_end id=(?P<end>\d+)"
    rb"|compact_abort id=\d+)\r?\n")   # memcached's only


def log_lines(watcher, until, timeout=30.0):
    """The watcher's lines, read until one matches `until` (a regex) or `timeout` passes."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            lines.append(watcher.recv_line())
        except TimeoutError:
            break
        if re.search(until, lines[-1]):
            break
    return lines


def compaction_shape(lines):
    """The line types of the first whole compaction (compact_start to its compact_end), the
    read_start offsets, and the rescues its read_end lines count."""
    types, offsets, rescues, inside = [], [], 0, False
    for line in lines:
        m = LOG_LINE.fullmatch(line)
        if m is None:
            continue
        kind = line.split(b" type=")[1].split(b" ")[0]
        if m.group("start") is not None:
            inside = True
        if not inside:
            continue
        types.append(kind)
        if m.group("offset") is not None:
            offsets.append(int(m.group("offset")))
        if m.group("rescues") is not None:
            rescues += int(m.group("rescues"))
        if m.group("end") is not None:
            break
    return types, offsets, rescues


def check_log_lines(results):
    """`watch evictions sysevents` on both servers, the same work: a line per value moved to
    flash (extwrite, with memcached's class of the value's item), the compaction check's
    fraginfo, and a fragmented page's compaction, in memcached's words. herdless's compaction
    reads the page a write buffer at a time as memcached's (compact_start, a read_start and
    read_end for each 2 MB of the 4 MB page, compact_end); memcached's own pass may stop early
    (compact_abort, when the page frees up under it), so its lines are compared by form only."""
    opts = ("ext_page_size=4,ext_wbuf_size=2,ext_item_size=512,ext_item_age=1,ext_max_sleep=20000,"
            "ext_compact_under=4,ext_max_frag=0.9,ext_path=%s:16m")
    paths = [flash_file("log"), flash_file("log") + ".mc"]
    servers = [harness.start_herdless(["-m", "8", "-o", opts % paths[0]]),
               harness.start_memcached(["-m", "8", "-o", opts % paths[1]])]
    try:
        seen = []
        for server, until in zip(servers, (rb"type=compact_end", rb"type=compact_read_end")):
            with harness.Conn(server.port) as c, harness.Conn(server.port, timeout=30.0) as watcher:
                results.equal(watcher.call(b"watch evictions sysevents\r\n"), b"OK\r\n", "watch")
                set_all(c, range(1500))
                results.check(wait_written(c, 1500, timeout=30.0) >= 1500, "1500 values moved to flash")
                for i in range(1500):   # every page about a third live: under the limit (0.45 of a page)
                    if i % 3 != 0:
                        c.call(b"delete k%d\r\n" % i)
                seen.append(log_lines(watcher, until))
        ours, ref = seen
        results.equal([line for line in ours if LOG_LINE.fullmatch(line) is None], [],
                      "herdless: every line one of memcached's extstore lines")
        # memcached's other system events (lru_crawler, slab_move) are not the flash tier's.
        results.equal([line for line in ref if re.search(rb" type=(extwrite|compact_)", line)
                       and LOG_LINE.fullmatch(line) is None], [], "memcached: its extstore lines as expected")
        for name, lines in (("herdless", ours), ("memcached", ref)):
            for kind in (b"compact_fraginfo", b"compact_start", b"compact_read_start", b"compact_read_end"):
                results.check(any(b" type=" + kind + b" " in line for line in lines), "%s: %s lines" % (name, kind))
        classes = [{m.group("key"): m.group("cls") for m in map(LOG_LINE.fullmatch, lines)
                    if m is not None and m.group("key") is not None} for lines in seen]
        results.equal(len(classes[0]), 1500, "an extwrite line for each value moved")
        results.equal(classes[0], classes[1], "extwrite: the same keys and classes as memcached's")
        types, offsets, rescues = compaction_shape(ours)
        results.equal(types, [b"compact_start"] + [b"compact_read_start", b"compact_read_end"] * 2 + [b"compact_end"],
                      "a compaction's lines")
        results.equal(offsets, [0, 2097152], "a compaction reads the page a write buffer at a time")
        results.check(rescues > 0, "the compaction's read_end lines count its rescues", repr(ours[-6:]))
    finally:
        for server in servers:
            server.stop()
        for p in paths:
            if os.path.exists(p):
                os.remove(p)


def check_corrupted_file(results):
    """Bytes of the file overwritten under the server: misses and badcrc, no wrong value."""
    path = flash_file("bad")
    ours = harness.start_herdless(["-m", "8", "-o", FLASH_OPTS + ",ext_path=%s:16m" % path])
    try:
        with harness.Conn(ours.port) as c:
            set_all(c, range(60))
            wait_written(c, 60)
            # The writer writes its buffer out once idle; wait until the file has the values.
            deadline = time.time() + 10
            while os.path.getsize(path) > 0 and time.time() < deadline:
                with open(path, "rb") as f:
                    if f.read(1 << 20).count(b"v59:") > 0:
                        break
                time.sleep(0.1)
            with open(path, "r+b") as f:
                f.seek(20000)
                f.write(b"\x55" * 100000)
            wrong = misses = 0
            for i in range(60):
                v = get_value(c, b"k%d" % i)
                if v is None:
                    misses += 1
                elif v != value_of(i):
                    wrong += 1
            st = harness.stats(c)
            results.equal(wrong, 0, "a corrupted flash file: no wrong value")
            results.check(misses > 0 and int(st["badcrc_from_extstore"]) > 0,
                          "corrupted values are misses counted in badcrc_from_extstore",
                          "misses %d, %r" % (misses, st))
    finally:
        ours.stop()
        if os.path.exists(path):
            os.remove(path)


def body(results):
    compare_settings(results)
    compare_messages(results)
    compare_extstore_command(results)
    compare_start_stats(results)
    check_command_applies(results)
    check_low_ttl(results)
    check_sizes_1645_refuses(results)
    check_round_trip(results)
    check_recache(results)
    check_stale_moves(results)
    check_full_file(results)
    check_corrupted_file(results)
    check_log_lines(results)
    if os.path.exists(FLASH):
        os.remove(FLASH)


if __name__ == "__main__":
    harness.run("test_extstore", body)
