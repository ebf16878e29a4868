#!/usr/bin/env python3
"""memcached's extstore options, side by side with Debian's memcached 1.6.18 (built with
extstore): the ext_* block of `stats settings` (names, order, values) for the same -o list,
`stats extstore`, and the messages of bad ext_* values, which must be memcached's words.

herdless has no flash tier yet: it refuses ext_path itself (checked last), so the settings
cases use the tuning keys alone, which memcached also accepts without a path.
"""

import os
import subprocess

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


def body(results):
    compare_settings(results)
    compare_messages(results)
    # A path memcached accepts: herdless says it has no flash tier rather than run without one.
    harness.check_refuses_to_start(results, ["-o", "ext_path=" + FLASH + ":64m"],
                                   b"no flash tier yet", "ext_path")
    if os.path.exists(FLASH):
        os.remove(FLASH)


if __name__ == "__main__":
    harness.run("test_extstore", body)
