"""Byte-for-byte comparison of herdless against Debian's memcached 1.6.18.

Each case is a list of writes on one or more connections. Every case runs against a memcached
and a herdless started for this test (the data is flushed between cases); a connection's
replies are collected by sending `mn` and reading up to `MN` (or up to EOF for cases where the
server closes). The two transcripts must be identical after normalising what legitimately
differs: CAS values (mapped to symbols by first appearance), TTLs (within +-1 s) and the
version string. `stats` is compared by the names of its lines.

Run with TEST_AGAINST=memcached to compare memcached with itself (checks the cases are
deterministic); COMPARE_ONLY=<substring> runs only the matching cases.
"""

import difflib
import re
import time

import harness

LIMIT_1M = 1024 * 1024
SYNC = "sync"  # marker step: collect the replies so far before the next write


class Case:
    """One scenario. steps: bytes (connection 0), (conn, bytes), (conn, [chunks]), [chunks] or
    SYNC; (conn, bytes, False) leaves the request unfinished: its replies are collected only
    after that connection's next write. A list of chunks is written piece by piece with a short pause between them, so the
    server sees the request split at those points. `{casN}` in a write is replaced by the Nth
    CAS value this server has returned in this case. eof: the last connection is expected to
    be closed by the server (read to EOF instead of sending mn)."""

    def __init__(self, name, steps, eof=False, args=()):
        self.name = name
        self.steps = steps
        self.eof = eof
        self.args = tuple(args)


def split(data, *cuts):
    """data cut into chunks at the given offsets."""
    points = [0] + list(cuts) + [len(data)]
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


def bytewise(data):
    return [data[i:i + 1] for i in range(len(data))]


def setcmd(key, value, flags=0, exptime=0, cmd="set", extra=""):
    if isinstance(key, str):
        key = key.encode()
    if isinstance(value, str):
        value = value.encode()
    line = b"%s %s %d %d %d%s\r\n" % (cmd.encode(), key, flags, exptime, len(value),
                                      extra.encode())
    return line + value + b"\r\n"


K250 = b"k" * 250
K251 = b"k" * 251
BIG_OK = b"v" * 1000000  # fits in a 1 MiB item with its header
TOO_BIG = b"x" * (LIMIT_1M + 1)
FUTURE = int(time.time()) + 1000  # an absolute exptime


# lru tune|mode|temp_ttl: memcached's replies (1.6.45's are the same: latest_cases.py); the
# last steps put memcached's defaults back (a temporary or flat LRU would change how memcached
# stores in later cases).
LRU_DEFAULTS = [b"lru temp_ttl -1\r\n", b"lru mode segmented\r\n", b"lru tune 20 40 0.2 2\r\n"]
LRU_STEPS = [b"lru\r\n", b"lru tune 10 30 0.5 3\r\n", b"lru tune 50 31 1 1\r\n",
             b"lru tune 10 10 0 1\r\n", b"lru tune 10 10 1 -1\r\n", b"lru tune 10 10 1\r\n",
             b"lru tune x 10 1 1\r\n", b"lru tune 10 10 1x 1\r\n", b"lru tune 10 10 inf 1\r\n",
             b"lru tune 4294967295 81 1 1\r\n", b"lru tune +5 10 .5 1e1\r\n",
             b"lru mode flat\r\n", b"lru mode segmentedx\r\n", b"lru mode\r\n",
             b"lru temp_ttl 100\r\n", b"lru temp_ttl -1\r\n", b"lru temp_ttl 1x\r\n",
             b"lru temp_ttl\r\n", b"lru foo 1\r\n", b"lru mode f\r\n", b"lru t 5\r\n",
             b"lru mode flat noreply\r\n", b"lru tune 1 1 1 noreply\r\n", b"lru noreply\r\n",
             b"lru tune 10 10 1 1 extra words\r\n"] + LRU_DEFAULTS


def cases():
    c = []
    add = lambda *a, **k: c.append(Case(*a, **k))

    # --- storage commands
    add("set_get", [setcmd("a", "hello"), b"get a\r\n"])
    add("set_empty_value", [setcmd("a", ""), b"get a\r\n"])
    add("set_overwrite", [setcmd("a", "one", 1), setcmd("a", "two", 2), b"get a\r\n"])
    add("set_binary_value", [setcmd("a", b"\x00\r\n\xff END\r\n"), b"get a\r\n"])
    add("set_noreply", [setcmd("a", "v", extra=" noreply"), b"get a\r\n"])
    add("set_flags_max", [setcmd("a", "v", 4294967295), b"gets a\r\n"])
    add("set_flags_overflow", [setcmd("a", "v", 4294967296), b"get a\r\n"])
    add("set_flags_negative", [b"set a -1 0 1\r\nv\r\n", b"get a\r\n"])
    add("set_flags_nonnumeric", [b"set a x 0 1\r\nv\r\n", b"get a\r\n"])
    add("set_exptime_nonnumeric", [b"set a 0 x 1\r\nv\r\n", b"get a\r\n"])
    add("set_length_nonnumeric", [b"set a 0 0 x\r\nv\r\n", b"get a\r\n"])
    add("set_length_negative", [b"set a 0 0 -1\r\nv\r\n", b"get a\r\n"])
    add("set_too_few_tokens", [b"set a 0 0\r\n", b"get a\r\n"])
    add("set_too_many_tokens", [b"set a 0 0 1 noreply extra\r\nv\r\n", b"get a\r\n"])
    add("set_noreply_misspelt", [b"set a 0 0 1 noreplx\r\nv\r\n", b"get a\r\n"])
    add("add_new_and_existing", [setcmd("a", "1", cmd="add"), setcmd("a", "2", cmd="add"),
                                 b"get a\r\n"])
    add("add_noreply", [setcmd("a", "1", cmd="add", extra=" noreply"),
                        setcmd("a", "2", cmd="add", extra=" noreply"), b"get a\r\n"])
    add("replace_missing_and_existing", [setcmd("a", "1", cmd="replace"), b"get a\r\n",
                                         setcmd("a", "2"), setcmd("a", "3", 7, cmd="replace"),
                                         b"get a\r\n"])
    add("replace_noreply", [setcmd("a", "1", cmd="replace", extra=" noreply"), setcmd("a", "2"),
                            setcmd("a", "3", cmd="replace", extra=" noreply"), b"get a\r\n"])
    add("append_prepend", [setcmd("a", "mid", 5), setcmd("a", "end", 9, cmd="append"),
                           setcmd("a", "start", 9, cmd="prepend"), b"gets a\r\n"])
    add("append_prepend_missing", [setcmd("a", "x", cmd="append"),
                                   setcmd("a", "x", cmd="prepend"), b"get a\r\n"])
    add("append_prepend_noreply", [setcmd("a", "m"), setcmd("a", "e", cmd="append", extra=" noreply"),
                                   setcmd("a", "s", cmd="prepend", extra=" noreply"),
                                   setcmd("b", "x", cmd="append", extra=" noreply"),
                                   b"get a b\r\n"])
    add("append_changes_cas", [setcmd("a", "1"), b"gets a\r\n", setcmd("a", "2", cmd="append"),
                               b"gets a\r\n"])

    # --- cas
    add("cas_flow", [setcmd("a", "1"), b"gets a\r\n", SYNC,
                     b"cas a 3 0 1 {cas1}\r\n2\r\n", b"gets a\r\n",
                     b"cas a 0 0 1 {cas1}\r\n3\r\n", b"gets a\r\n"])
    add("cas_missing", [b"cas a 0 0 1 12345\r\nv\r\n", b"get a\r\n"])
    add("cas_mismatch", [setcmd("a", "1"), b"cas a 0 0 1 999999999\r\n2\r\n", b"get a\r\n"])
    add("cas_noreply", [setcmd("a", "1"), b"gets a\r\n", SYNC,
                        b"cas a 0 0 1 {cas1} noreply\r\n2\r\n",
                        b"cas a 0 0 1 {cas1} noreply\r\n3\r\n",
                        b"cas b 0 0 1 1 noreply\r\n3\r\n", b"gets a b\r\n"])
    add("cas_bad_token", [setcmd("a", "1"), b"cas a 0 0 1 abc\r\n2\r\n", b"get a\r\n"])
    add("cas_missing_token", [setcmd("a", "1"), b"cas a 0 0 1\r\n2\r\n", b"get a\r\n"])
    add("cas_after_delete", [setcmd("a", "1"), b"gets a\r\n", SYNC, b"delete a\r\n",
                             b"cas a 0 0 1 {cas1}\r\n2\r\n", b"get a\r\n"])

    # --- retrieval
    add("get_miss", [b"get nothere\r\n"])
    add("get_multi_with_missing", [setcmd("a", "1"), setcmd("c", "3", 3),
                                   b"get a b c d a\r\n", b"gets x c y a\r\n"])
    add("get_many_keys", [setcmd("k%d" % i, str(i), i) for i in range(0, 40, 3)] +
        [b"get " + b" ".join(b"k%d" % i for i in range(40)) + b"\r\n"])
    add("get_noreply_is_a_key", [setcmd("noreply", "n"), b"get a noreply\r\n"])
    add("key_with_nul", [setcmd(b"a\x00b", "1"), b"get a\x00b\r\n", b"get a\r\n"])
    add("cas_negative_unique", [setcmd("a", "1"), b"cas a 0 0 1 -1\r\n2\r\n", b"get a\r\n"])
    add("get_no_key", [b"get\r\n", b"gets\r\n", b"get \r\n"])
    add("get_extra_spaces", [setcmd("a", "1"), b"get  a   a \r\n"])
    add("gat_gats", [setcmd("a", "1", 4), setcmd("b", "2"), b"gat 100 a b z\r\n",
                     b"mg a t v\r\n", b"gats 0 a b\r\n", b"mg a t\r\n"])
    add("gat_negative_expires", [setcmd("a", "1"), b"gat -1 a\r\n", b"get a\r\n"])
    add("gat_bad_exptime", [setcmd("a", "1"), b"gat abc a\r\n", b"gat\r\n", b"gat 10\r\n",
                            b"get a\r\n"])

    # --- touch
    add("touch", [setcmd("a", "1"), b"touch a 100\r\n", b"mg a t\r\n", b"touch z 100\r\n",
                  b"touch a 0\r\n", b"mg a t\r\n"])
    add("touch_noreply", [setcmd("a", "1"), b"touch a 100 noreply\r\n",
                          b"touch z 100 noreply\r\n", b"mg a t\r\n"])
    add("touch_bad", [setcmd("a", "1"), b"touch a abc\r\n", b"touch a\r\n", b"touch\r\n",
                      b"touch a -1\r\n", b"get a\r\n"])

    # --- delete
    add("delete", [setcmd("a", "1"), b"delete a\r\n", b"delete a\r\n", b"get a\r\n"])
    add("delete_noreply", [setcmd("a", "1"), b"delete a noreply\r\n", b"delete a noreply\r\n",
                           b"get a\r\n"])
    add("delete_legacy_zero", [setcmd("a", "1"), setcmd("b", "1"), b"delete a 0\r\n",
                               b"delete b 5\r\n", b"delete b 0 noreply\r\n", b"delete\r\n",
                               b"get a b\r\n"])

    # --- incr / decr
    add("incr_decr", [setcmd("n", "10", 5), b"incr n 5\r\n", b"decr n 3\r\n", b"incr n 0\r\n",
                      b"gets n\r\n"])
    add("incr_wraps", [setcmd("n", "18446744073709551615"), b"incr n 1\r\n", b"get n\r\n",
                       setcmd("m", "18446744073709551610"), b"incr n 18446744073709551615\r\n",
                       b"incr m 10\r\n"])
    add("decr_floors_at_zero", [setcmd("n", "5"), b"decr n 6\r\n", b"decr n 1\r\n",
                                b"get n\r\n"])
    add("decr_shorter_pads", [setcmd("n", "100"), b"decr n 1\r\n", b"get n\r\n",
                              b"incr n 1\r\n", b"get n\r\n", setcmd("m", "10"),
                              b"incr m 99990\r\n", b"get m\r\n"])
    add("incr_non_numeric", [setcmd("s", "abc"), b"incr s 1\r\n", b"decr s 1\r\n",
                             setcmd("t", "12a"), b"incr t 1\r\n", setcmd("u", ""),
                             b"incr u 1\r\n", setcmd("w", " 12"), b"incr w 1\r\n", b"get s\r\n"])
    add("incr_bad_delta", [setcmd("n", "1"), b"incr n abc\r\n", b"incr n -1\r\n",
                           b"decr n 18446744073709551616\r\n", b"incr n 1x\r\n", b"incr n\r\n",
                           b"incr\r\n", b"get n\r\n"])
    add("incr_missing", [b"incr n 1\r\n", b"decr n 1\r\n"])
    add("incr_noreply", [setcmd("n", "1"), b"incr n 5 noreply\r\n", b"decr n 2 noreply\r\n",
                         b"incr z 1 noreply\r\n", b"incr n abc noreply\r\n", b"get n\r\n"])
    add("incr_long_value", [setcmd("n", "123456789012345678901"), b"incr n 1\r\n"])
    add("incr_changes_cas", [setcmd("n", "1"), b"gets n\r\n", b"incr n 1\r\n", b"gets n\r\n"])

    # --- flush_all, verbosity, version, misc
    add("flush_all", [setcmd("a", "1"), setcmd("b", "2"), b"flush_all\r\n", b"get a b\r\n",
                      setcmd("a", "3"), b"get a\r\n"])
    add("flush_all_noreply", [setcmd("a", "1"), b"flush_all noreply\r\n", b"get a\r\n",
                              b"flush_all 0 noreply\r\n", b"flush_all 0\r\n"])
    add("flush_all_delayed", [setcmd("a", "1"), b"flush_all 100\r\n", b"get a\r\n",
                              b"flush_all 0\r\n", b"get a\r\n"])
    add("flush_all_bad", [b"flush_all abc\r\n", b"flush_all 1 2 3\r\n", b"flush_all -1\r\n"])
    add("verbosity", [b"verbosity 1\r\n", b"verbosity 0 noreply\r\n", b"verbosity\r\n",
                      b"verbosity abc\r\n", b"verbosity 5\r\n", b"verbosity 1 2 3\r\n",
                      b"verbosity 0\r\n"])
    add("version", [b"version\r\n", b"version extra\r\n"])
    add("lru_command", LRU_STEPS)
    add("unknown_command", [b"bogus\r\n", b"GET a\r\n", b"Set a 0 0 1\r\n", b"getx a\r\n",
                            b"sets a 0 0 1\r\n"])
    add("empty_lines", [b"\r\n", b"\n", b"   \r\n", b"get a\r\n"])
    add("lone_newline_endings", [b"set a 0 0 2\nhi\r\n", b"get a\n", b"gets a\n",
                                 b"delete a\n", b"get a\n"])
    add("data_block_lone_newline", [b"set a 0 0 2\r\nhi\n", b"get a\r\n"])
    add("bad_data_chunk", [b"set a 0 0 3\r\nabcde\r\n", b"get a\r\n"])
    add("bad_data_chunk_keeps_old", [setcmd("a", "old"), b"set a 0 0 1\r\nxyz\r\n",
                                     b"get a\r\n"])
    add("leading_spaces", [b"  set a 0 0 1\r\nv\r\n", b" get a\r\n"])

    add("stats_reset_and_unknown", [b"stats reset\r\n", b"stats nonsense\r\n",
                                    b"stats reset extra\r\n"])
    add("cache_memlimit", [b"cache_memlimit 100\r\n", b"cache_memlimit 1\r\n",
                           b"cache_memlimit abc\r\n", b"cache_memlimit\r\n",
                           b"cache_memlimit 100 noreply\r\n", b"cache_memlimit 64\r\n"])
    add("shutdown_not_enabled", [b"shutdown\r\n", b"shutdown graceful\r\n", b"version\r\n"])
    add("mn_alone", [b"mn\r\n", b"mn extra\r\n"])

    # --- keys
    add("key_250_ok", [setcmd(K250, "v"), b"get " + K250 + b"\r\n",
                       b"delete " + K250 + b"\r\n"])
    # memcached drops replies still queued on the connection when a get fails on a long
    # key (conn_release_items), so those gets start after a SYNC to stay deterministic.
    add("key_251_rejected", [setcmd(K251, "v"), SYNC, b"get " + K251 + b"\r\n", SYNC,
                             b"get a " + K251 + b"\r\n", b"delete " + K251 + b"\r\n",
                             b"incr " + K251 + b" 1\r\n", b"touch " + K251 + b" 1\r\n"])
    add("key_control_characters", [setcmd(b"a\x01b", "1"), setcmd(b"tab\tkey", "2"),
                                   setcmd(b"del\x7f", "3"), setcmd(b"\xc3\xa9t\xc3\xa9", "4"),
                                   b"get a\x01b tab\tkey del\x7f \xc3\xa9t\xc3\xa9\r\n"])

    # --- exptime
    add("exptime_negative", [setcmd("a", "1", exptime=-1), b"get a\r\n",
                             setcmd("b", "1"), setcmd("b", "2", exptime=-1), b"get b\r\n"])
    add("exptime_30_days_relative", [setcmd("a", "1", exptime=2592000), b"mg a t v\r\n"])
    add("exptime_absolute_past", [setcmd("a", "1", exptime=2592001), b"get a\r\n"])
    add("exptime_absolute_future", [setcmd("a", "1", exptime=FUTURE), b"mg a t v\r\n"])

    add("exptime_huge_and_past_absolute", [setcmd("a", "1", exptime=99999999999), b"get a\r\n",
                                           setcmd("b", "1"), b"touch b 2592001\r\n",
                                           b"get b\r\n", setcmd("c", "1", exptime=-2592001),
                                           b"get c\r\n"])
    add("incr_keeps_flags_and_ttl", [setcmd("n", "5", flags=42, exptime=500), b"incr n 3\r\n",
                                     b"mg n f t v\r\n"])

    # --- too large
    add("object_too_large", [setcmd("big", TOO_BIG), b"get big\r\n"])
    add("object_too_large_removes_old", [setcmd("big", "old"), setcmd("big", TOO_BIG),
                                         b"get big\r\n"])
    add("object_too_large_append_keeps_old", [setcmd("big", "old"),
                                           setcmd("big", TOO_BIG, cmd="append"),
                                           b"get big\r\n"])
    add("object_too_large_noreply", [setcmd("big", TOO_BIG, extra=" noreply"), b"get big\r\n"])
    add("object_large_fits", [setcmd("big", BIG_OK), b"get big\r\n"])
    # With -I 1m, 1048514 bytes is the largest value memcached 1.6.18 takes under key "big".
    add("object_size_boundary", [setcmd("big", b"b" * 1048514), setcmd("bib", b"c" * 1048515),
                                 b"mg big s\r\nmg bib s\r\n"])

    # --- pipelining and splitting
    add("pipeline_one_write",
        [b"".join([setcmd("p%d" % i, "%d" % (i * 7)) for i in range(50)] +
                  [b"get " + b" ".join(b"p%d" % i for i in range(50)) + b"\r\n"] +
                  [b"incr p%d 1\r\n" % i for i in range(50)] +
                  [b"delete p%d\r\n" % i for i in range(0, 50, 2)] +
                  [b"get p%d\r\n" % i for i in range(50)])])
    add("pipeline_mixed_noreply",
        [b"set a 0 0 1 noreply\r\n1\r\nget a\r\nincr a 1 noreply\r\nget a\r\n"
         b"delete a noreply\r\nget a\r\nbogus\r\nversion\r\n"])
    many = b"get " + b" ".join(b"multikey%03d" % i for i in range(300)) + b"\r\n"
    add("large_multiget_line", [setcmd("multikey007", "7"), setcmd("multikey299", "299"),
                                many, split(many, 2500, 3000)])
    add("incr_value_over_64_bits", [setcmd("n", "18446744073709551616"), b"incr n 1\r\n",
                                    setcmd("m", "-5"), b"decr m 1\r\n"])
    add("split_byte_by_byte", [bytewise(setcmd("a", "hello\r\nworld") + b"get a\r\n" +
                                        b"incr a 1\r\ndelete a\r\n")])
    add("split_in_data", [split(setcmd("a", "0123456789"), 3, 14, 20, 21),
                          split(b"get a\r\n", 5, 6)])
    add("split_before_lf", [split(b"set a 0 0 2\r\nab\r\nget a\r\n", 12, 16, 23)])
    add("split_big_value", [split(setcmd("b", BIG_OK), 5, 100, 65536, 500000, 1000010),
                            b"get b\r\n"])

    # --- several connections
    add("two_conns_see_each_other", [(0, setcmd("a", "1")), (1, b"get a\r\n"),
                                     (1, setcmd("a", "2")), (0, b"get a\r\n")])
    add("two_conns_cas_race", [(0, setcmd("a", "1")), (0, b"gets a\r\n"), (1, b"gets a\r\n"),
                               SYNC, (1, b"cas a 0 0 1 {cas1}\r\nB\r\n"),
                               (0, b"cas a 0 0 1 {cas1}\r\nA\r\n"), (0, b"gets a\r\n")])
    add("two_conns_interleaved_partial", [(0, b"set a 0 0 5\r\nhel", False), (1, b"get a\r\n"),
                                          (0, b"lo\r\n"), (1, b"get a\r\n")])

    # --- connection close
    add("quit", [setcmd("a", "1"), b"get a\r\nquit\r\nget a\r\n"], eof=True)
    add("quit_noreply_before", [b"set a 0 0 1 noreply\r\n1\r\nquit\r\n"], eof=True)
    add("long_line_without_newline_closes", [b"x" * 3000], eof=True)

    # --- meta basics (the normaliser covers c, t and me)
    add("meta_basics", [b"ms m 2 T100 F7 c\r\nhi\r\n", b"mg m v f t c s k\r\n",
                        b"mg missing v\r\n", b"mg missing v q\r\n", b"md m\r\n",
                        b"md m q\r\n", b"md m\r\n", b"mn\r\n"])
    add("meta_arithmetic", [b"ma n\r\n", b"ma n N0 J10 v\r\n", b"ma n v\r\n",
                            b"ma n MD D3 v t c\r\n", b"ma n q\r\n", b"mg n v\r\n"])
    add("meta_vivify_and_tokens", [b"mg s N30 s t v c\r\n", b"mg s N30 s t v\r\n",
                                   b"mg s v\r\n", b"get s\r\n", b"ms s 2 ME\r\nhi\r\n",
                                   b"ms s 3 T60\r\nnew\r\n", b"mg s N30 t v\r\n"])
    add("meta_early_recache", [b"ms r 1 T10\r\nx\r\n", b"mg r R30 v t\r\n",
                               b"mg r R30 v t\r\n", b"ms n 1\r\nx\r\n", b"mg n R30 v\r\n",
                               b"ms f 1 T100\r\nx\r\n", b"mg f R30 v\r\n"])
    add("meta_invalidate_and_stale_set", [b"ms i 3 T100\r\nold\r\n", b"mg i c\r\n", SYNC,
                                          b"md i I T30\r\n", b"mg i s t c v\r\n",
                                          b"mg i s t c v\r\n", b"get i\r\n",
                                          b"ms i 3 I C{cas1}\r\nnew\r\n", b"mg i t c v\r\n",
                                          b"ms i 3 C{cas1}\r\nbad\r\n",
                                          b"ms nope 1 C5\r\nx\r\n"])
    add("meta_cas_fencing", [b"mg w N30 c\r\n", SYNC, b"ms w 1 C{cas1} T60\r\nv\r\n",
                             b"ms w 1 C{cas1} T60\r\nv\r\n", b"mg w v t\r\n",
                             b"md w C999999\r\n", b"md w q\r\n", b"mg w v\r\n"])
    # md compares C0 too (EX), where ms and ma take C0 as any CAS.
    add("meta_delete_cas_zero", [b"ms z 1\r\n5\r\n", b"md z C0\r\n", b"md z C0 I\r\n",
                                 b"md z C0 q\r\n", b"ma z C0 v\r\n", b"mg z v\r\n",
                                 b"ms z 1 C0\r\n6\r\n", b"md nope C0\r\n"])
    # The anti-stampede flow across clients: one W, Z for the others, the winner's
    # fenced store, then a plain hit for everyone.
    add("meta_stampede_two_clients", [(0, b"mg k N30 s c v\r\n"), (1, b"mg k N30 s c v\r\n"),
                                      (1, b"mg k s v\r\n"), SYNC,
                                      (0, b"ms k 5 C{cas1} T60\r\nfresh\r\n"),
                                      (1, b"mg k s t v\r\n"), (1, b"get k\r\n")])
    # Stale set with an equal CAS is a normal store (the item is fresh again); a
    # higher one is refused.
    add("meta_stale_set_equal_and_higher", [b"ms j 3 T100\r\nold\r\n", b"mg j c\r\n",
                                            SYNC, b"md j I T30\r\n", b"mg j c v\r\n", SYNC,
                                            b"ms j 3 I C{cas2}\r\nnew\r\n", b"mg j t v\r\n",
                                            b"ms j 3 I C999999999\r\nbad\r\n",
                                            b"mg j v\r\n"])
    add("meta_set_modes", [b"ms a 1 MA\r\nx\r\n", b"ms a 1 ME\r\nx\r\n",
                           b"ms a 1 ME\r\ny\r\n", b"ms a 1 MA\r\nz\r\n",
                           b"ms a 1 MP\r\nw\r\n", b"ms a 1 MR F3\r\nr\r\n",
                           b"ms b 1 MR\r\nr\r\n", b"ms a 1 MS\r\ns\r\n",
                           b"ms a 1 MX\r\nq\r\n", b"mg a v f\r\n"])
    add("meta_flag_errors", [b"mg a zz\r\n", b"mg a v v\r\n", b"mg a O" + b"o" * 33 + b"\r\n",
                             b"mg " + K251 + b" v\r\n", b"mg\r\n", b"ms a\r\n",
                             b"ms a x\r\n", b"ms a 1 Tx\r\nx\r\n", b"ma a Dx\r\n",
                             b"mg a v k O1 q\r\n", b"mg a k O2\r\n", b"mn\r\n"])
    add("meta_opaque_key_base64", [b"ms Zm9v 3 b\r\nbar\r\n", b"mg Zm9v b k v O77\r\n",
                                   b"get foo\r\n", b"mg missing k O9\r\n", b"mg !!! b v\r\n",
                                   b"md Zm9v b q\r\n", b"get foo\r\n"])
    # memcached 1.6.18 remembers on the item that its key was set in base64: a later plain
    # `mg foo k` returns the key base64-encoded, with b.
    add("meta_binary_key_flag_sticks", [b"ms Zm9v 3 b\r\nbar\r\n", b"mg foo k v O1\r\n",
                                        b"ms foo 3\r\nbaz\r\n", b"mg foo k v\r\n"])
    add("meta_arithmetic_modes", [b"ma c N0 J5 v\r\n", b"ma c M+ D10 v\r\n",
                                  b"ma c M- D100 v\r\n", b"ma c MI v\r\n", b"ma c Mx v\r\n",
                                  b"ms s 3\r\nabc\r\n", b"ma s v\r\n",
                                  b"ma c q D2\r\n", b"mg c v\r\n", b"ma z q\r\n"])
    add("meta_touch_and_hit_flags", [b"ms h 1 T100\r\nx\r\n", b"mg h h l t\r\n",
                                     b"mg h h t T500\r\n", b"mg h t\r\n", b"mg h u h\r\n"])
    # A touch that gives an item its first TTL: a t before T still reports none, and an R
    # before T judges the old TTL (none: no recache token).
    add("meta_first_ttl_in_order", [b"ms g 1\r\nx\r\n", b"mg g t T100 s\r\n",
                                    b"ms g 1\r\nx\r\n", b"mg g t T100 N30 c\r\n", SYNC,
                                    b"ms g 1\r\nx\r\n", b"mg g R300 T100 t v\r\n",
                                    b"mg g t\r\n"])
    add("meta_debug", [setcmd("a", "1", exptime=100), b"me a\r\n", b"me zz\r\n"])
    # An incr whose number outgrows its item makes a new one (unread, not stale, no token
    # sent); one that fits keeps the item's marks.
    add("incr_grown_number_new_item", [setcmd("g", "5"), b"get g\r\n", b"md g I q\r\n",
                                       b"incr g 100\r\n", b"mg g h v\r\n", setcmd("f", "500"),
                                       b"get f\r\n", b"md f I q\r\n", b"incr f 1\r\n",
                                       b"mg f h v\r\n", b"ms YmluAA== 1 b\r\n5\r\n",
                                       b"ma YmluAA== b M+ D100 v\r\n", b"mg YmluAA== b h v\r\n"])
    return c


# ---------------------------------------------------------------- running one case

def walk_replies(data):
    """Yields (header_line, data_block) pairs; data_block is None for plain lines."""
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            yield data[pos:], None
            return
        line = data[pos:end + 1]
        pos = end + 1
        fields = line.rstrip(b"\r\n").split(b" ")  # memcached splits on spaces only
        block = None
        n = None
        if len(fields) >= 4 and fields[0] == b"VALUE" and fields[3].isdigit():
            n = int(fields[3])
        elif len(fields) >= 2 and fields[0] == b"VA" and fields[1].isdigit():
            n = int(fields[1])
        if n is not None:
            block = data[pos:pos + n + 2]
            pos += n + 2
        yield line, block


class TextTranscript(harness.Transcript):
    """The replies of one case as text for comparison: CAS values as symbols, each TTL as <TTL>
    with its value in `ttls` (compared within +-1 s)."""

    def __init__(self):
        super().__init__()
        self.ttls = []

    def differences(self, reference):
        if self.text() == reference.text() and not ttls_match(reference.ttls, self.ttls):
            return "TTLs differ: memcached %s, %s %s" % (reference.ttls, harness.target_name(),
                                                         self.ttls)
        return super().differences(reference)

    def _ttl(self, value):
        self.ttls.append(int(value))
        return "<TTL>"

    def add(self, conn_index, data):
        self.lines.append("--- connection %d" % conn_index)
        for line, block in walk_replies(data):
            f = line.rstrip(b"\r\n").split(b" ")
            if f[0] == b"VALUE" and len(f) == 5 and f[4].isdigit():
                text = repr(b" ".join(f[:4]))[2:-1] + " " + self.cas_symbol(f[4])
            elif f[0] in (b"VA", b"HD", b"EN", b"NF", b"NS", b"EX"):
                out = []
                for t in f:
                    if re.fullmatch(rb"c\d+", t):
                        out.append("c" + self.cas_symbol(t[1:]))
                    elif re.fullmatch(rb"t\d+", t):
                        out.append("t" + self._ttl(t[1:]))
                    else:
                        out.append(repr(t)[2:-1])
                text = " ".join(out)
            elif f[0] == b"ME":
                out = []
                for t in f:
                    if t.startswith(b"cas="):
                        out.append("cas=" + self.cas_symbol(t[4:]))
                    elif re.fullmatch(rb"(exp|la)=-?\d+", t):  # 1.6.18 prints exp negated
                        out.append(t.split(b"=")[0].decode() + "=" + self._ttl(t.split(b"=")[1]))
                    else:
                        out.append(repr(t)[2:-1])
                text = " ".join(out)
            elif f[0] == b"VERSION":
                text = "VERSION <version>"
            else:
                text = repr(line.rstrip(b"\r\n"))[2:-1]
            ending = line[len(line.rstrip(b"\r\n")):]
            self.lines.append(text + repr(ending)[2:-1])
            if block is not None:
                if len(block) > 200:
                    self.lines.append("<%d bytes: %r...%r>" % (len(block), block[:20], block[-20:]))
                else:
                    self.lines.append(repr(block)[2:-1])


def normalise_steps(case):
    """(conn_index, [chunks]) pairs, with SYNC kept as is."""
    out = []
    for step in case.steps:
        if step == SYNC:
            out.append(SYNC)
            continue
        if not isinstance(step, tuple):
            step = (0, step)
        conn_index, data = step[:2]
        collect_after = step[2] if len(step) > 2 else True
        chunks = data if isinstance(data, list) else [data]
        out.append((conn_index, chunks, collect_after))
    return out


def count_mn(data):
    """How many mn commands a write holds (a case may send its own)."""
    return len(re.findall(rb"(?:^|\n)mn(?: [^\n]*)?\r?\n", data))


def collect(conn, conn_index, transcript, mn_sent):
    """Ends the batch on conn with mn and records everything up to its MN (after the MNs
    of the case's own mn commands)."""
    conn.send(b"mn\r\n")
    reply = b"".join(conn.recv_until(b"MN\r\n") for _ in range(mn_sent + 1))
    transcript.add(conn_index, reply)


def run_case(case, port):
    flush(port)
    transcript = TextTranscript()
    steps = normalise_steps(case)
    conns = {}
    pending = []  # connections with replies not yet collected, in order of use

    mn_sent = {}  # connection -> mn commands the case sent since the last collect

    def sync_all():
        for i in pending:
            collect(conns[i], i, transcript, mn_sent.pop(i, 0))
        pending.clear()

    try:
        last = None
        for n, step in enumerate(steps):
            if step == SYNC:
                sync_all()
                last = None
                continue
            conn_index, chunks, collect_after = step
            if last is not None and last != conn_index:
                sync_all()  # keep the order between connections
            if conn_index not in conns:
                conns[conn_index] = harness.Conn(port)
            conn = conns[conn_index]
            for k, chunk in enumerate(chunks):
                for i, cas in enumerate(transcript.cas_values):
                    chunk = chunk.replace(b"{cas%d}" % (i + 1), cas)
                if re.search(rb"\{cas\d+\}", chunk):
                    raise RuntimeError("case %s: no CAS value for %r" % (case.name, chunk[:60]))
                if k:
                    time.sleep(0.002)  # let the previous piece arrive on its own
                conn.send(chunk)
            mn_sent[conn_index] = mn_sent.get(conn_index, 0) + count_mn(b"".join(chunks))
            if collect_after and conn_index not in pending:
                pending.append(conn_index)
            last = conn_index
        if case.eof:
            closing = last
            pending.remove(closing)
            sync_all()
            transcript.add(closing, conns[closing].recv_until_eof() + b"<EOF>")
        else:
            sync_all()
    except (TimeoutError, EOFError, OSError) as e:
        transcript.add(-1, ("<transport error: %s>" % e).encode())
    finally:
        for conn in conns.values():
            conn.close()
    return transcript


def flush(port):
    with harness.Conn(port) as conn:
        reply = conn.call(b"flush_all\r\n")
        if reply != b"OK\r\n":
            raise RuntimeError("flush_all before a case replied %r" % reply)


def ttls_match(a, b):
    return len(a) == len(b) and all(abs(x - y) <= 1 for x, y in zip(a, b))


# ---------------------------------------------------------------- stats

def stat_names(port, command):
    with harness.Conn(port) as conn:
        reply = conn.call(command, b"END\r\n")
    names = []
    for line in reply.split(b"\r\n"):
        f = line.split(b" ")
        if f[0] == b"STAT" and len(f) >= 3:
            names.append(f[1].decode("utf-8", "replace"))
    return names


def compare_stat_names(ref_names, our_names, label, strict, results):
    """Every reference name must appear in ours in the same relative order; extras are listed."""
    ours = set(our_names)
    missing = [n for n in ref_names if n not in ours]
    ref_set = set(ref_names)
    common_ours = [n for n in our_names if n in ref_set]
    common_ref = [n for n in ref_names if n in ours]
    extras = [n for n in our_names if n not in ref_set]
    ok = not missing and common_ours == common_ref
    detail = []
    if missing:
        detail.append("  missing (%d): %s" % (len(missing), " ".join(missing)))
    if common_ours != common_ref:
        diff = difflib.unified_diff(common_ref, common_ours, "memcached", "ours", lineterm="", n=1)
        detail.append("  order differs:\n    " + "\n    ".join(diff))
    if extras:
        harness.log("  %s: extra names not in memcached: %s" % (label, " ".join(extras)))
    if strict:
        results.check(ok, "%s: stat names" % label, "\n".join(detail))
    elif not ok:
        harness.log("NOTE (not a failure): %s differs:\n%s" % (label, "\n".join(detail)))
    return ok


def machinery_stat_names(servers, results):
    """memcached prints its LRU maintainer's lines (in `stats` and `stats items`) only with the
    maintainer, `number_temp` only with the temporary LRU, `rejected_connections` only with
    maxconns_fast: under each flag that turns one off or on, the names are memcached's exactly,
    in order, but for herdless's own (the names it adds to memcached's by default)."""
    ref, ours = servers.pair(())
    own = set(stat_names(ours.port, b"stats\r\n")) - set(stat_names(ref.port, b"stats\r\n"))
    for args in (("-o", "no_lru_maintainer"), ("-o", "temporary_ttl=30"), ("-o", "no_modern")):
        ref, ours = servers.pair(args)
        for daemon in (ref, ours):
            with harness.Conn(daemon.port) as c:
                c.call(b"set machinery 0 0 5\r\nhello\r\n")
        for command in (b"stats\r\n", b"stats items\r\n"):
            got = [n for n in stat_names(ours.port, command) if n not in own]
            results.equal(got, stat_names(ref.port, command),
                          "%s with %s: memcached's names" % (command.strip().decode(), " ".join(args)))


# ---------------------------------------------------------------- main

def body(results):
    servers = harness.SideBySide()
    ran, mismatched = servers.compare(results, cases(),
                                      lambda case, daemon: run_case(case, daemon.port))
    matched = ran - len(mismatched)

    if not harness.COMPARE_ONLY or "stats" in harness.COMPARE_ONLY:
        ref, other = servers.pair(())
        for command, strict in ((b"stats\r\n", True), (b"stats settings\r\n", False)):
            label = command.strip().decode()
            ran += 1
            if compare_stat_names(stat_names(ref.port, command), stat_names(other.port, command),
                                  label, strict, results):
                matched += 1
            elif strict:
                mismatched.append(label)
            else:
                matched += 1  # reported above, not counted as a mismatch

    if not harness.COMPARE_ONLY or "stats" in harness.COMPARE_ONLY:
        machinery_stat_names(servers, results)

    servers.stop(results)
    harness.log("compare: %d cases ran, %d matched%s" % (
        ran, matched, (" ; mismatched: " + " ".join(mismatched)) if mismatched else ""))


if __name__ == "__main__":
    harness.run("test_compare", body)
