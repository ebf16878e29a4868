"""The binary protocol, packet by packet, against Debian's memcached 1.6.18.

Each case is a list of writes on one or more connections (binary, or text for the checks that
cross protocols). Every case runs against a memcached and a herdless started for this test (the
data is flushed between cases). A binary connection's replies are collected by sending a Noop
with a marker opaque and reading response packets up to its reply; a text connection's by
sending `mn` and reading up to `MN`; with eof the last connection is read until the server
closes it. Both transcripts must be identical field by field (magic, opcode, status, key,
extras, value, opaque), after normalising what legitimately differs: CAS values (mapped to
symbols by first appearance) and the version string. Stat replies keep only the counters
listed in COUNTERS (memcached's other names and values differ by design: slab classes, pids,
times; curr_items too, since memcached's flush is lazy) and their end marker.

Run with TEST_AGAINST=memcached to compare memcached with itself (checks the cases are
deterministic); COMPARE_ONLY=<substring> runs only the matching cases.
"""

import struct
import time

import harness
from binproto import (OP, OPNAME, BinConn, exp_extras, get, incr, packet, parse, set_,
                      set_extras)

SYNC = "sync"
LIMIT_1M = 1024 * 1024
COUNTERS = {b"cmd_get", b"cmd_set", b"cmd_flush", b"cmd_touch", b"get_hits", b"get_misses",
            b"get_expired", b"get_flushed", b"delete_misses", b"delete_hits", b"incr_misses",
            b"incr_hits", b"decr_misses", b"decr_hits", b"cas_misses", b"cas_hits",
            b"cas_badval", b"touch_hits", b"touch_misses", b"total_items",
            b"store_too_large", b"store_no_memory", b"evictions", b"sizes_status",
            b"sizes_error", b"detailed", b"auth_cmds", b"auth_errors"}
MARK = 0x7E570000  # opaque of the collecting Noop (plus a counter)
# How long a read waits in a case whose server is expected to fall silent (quiet=True): both
# transcripts then end with the same "no reply within" and what came before it.
QUIET_WAIT = 2.0 if harness.SANITIZED else 1.0


class Case:
    """steps: bytes (binary connection 0), (conn, bytes), (conn, [chunks]), ("t", conn, bytes)
    for a text connection, a callable cas_list -> bytes (written on connection 0), or SYNC.
    eof: the last connection is expected to be closed by the server. quiet: the server is
    expected to fall silent with the connection open; reads wait QUIET_WAIT, not the harness's
    timeout."""

    def __init__(self, name, steps, eof=False, args=(), quiet=False):
        self.name = name
        self.steps = steps
        self.eof = eof
        self.args = tuple(args)
        self.quiet = quiet


def stat(group=b"", opaque=0):
    return packet("STAT", group, opaque=opaque)


def cases():
    c = []
    add = lambda *a, **k: c.append(Case(*a, **k))
    K250 = b"k" * 250

    # --- get / set family
    add("set_get_all_forms", [set_("a", "hello", flags=5, opaque=1), get("a", 2), get("a", 3, "GETK"),
                              get("a", 4, "GETQ"), get("a", 5, "GETKQ")])
    add("get_miss_all_forms", [get("m", 1), get("m", 2, "GETK"), get("m", 3, "GETQ"),
                               get("m", 4, "GETKQ"), get("m", 5)])
    add("set_quiet", [set_("a", "v", op="SETQ", opaque=9), get("a", 10)])
    add("set_empty_value", [set_("a", ""), get("a")])
    add("set_flags_max", [set_("a", "v", flags=0xFFFFFFFF), get("a", op="GETK")])
    add("set_binary_key_and_value", [set_(b"a b\x00c\r\n", b"\x00\xff\r\nEND\r\n"),
                                     get(b"a b\x00c\r\n", op="GETK")])
    add("set_key_250", [set_(K250, "v"), get(K250, op="GETK")])
    add("set_overwrite", [set_("a", "one", 1), set_("a", "two", 2), get("a")])
    add("set_large_value", [set_("big", b"v" * 500000), get("big")])
    add("set_too_large", [set_("a", "old"), set_("a", b"x" * (LIMIT_1M + 1), opaque=7),
                          get("a", 8), set_("b", "ok"), get("b")])
    add("set_too_large_quiet", [set_("a", "old"), set_("a", b"x" * (LIMIT_1M + 1), op="SETQ"),
                                get("a")])
    add("add_new_existing", [set_("a", "1", op="ADD"), set_("a", "2", op="ADD"),
                             set_("a", "3", op="ADDQ"), set_("b", "4", op="ADDQ"),
                             get("a"), get("b")])
    add("replace_missing_existing", [set_("a", "1", op="REPLACE"), set_("a", "1", op="REPLACEQ"),
                                     set_("a", "2"), set_("a", "3", 7, op="REPLACE"),
                                     set_("a", "4", op="REPLACEQ"), get("a")])
    add("cas_flow", [set_("a", "1"), SYNC,
                     lambda cas: set_("a", "2", cas=cas[0]),
                     lambda cas: set_("a", "3", cas=cas[0]),
                     get("a"),
                     set_("nokey", "x", cas=12345),
                     lambda cas: set_("a", "4", cas=cas[-1], op="SETQ"),
                     get("a")])
    add("cas_add_replace", [set_("a", "1"), SYNC,
                            lambda cas: set_("a", "2", cas=cas[0], op="ADD"),
                            lambda cas: set_("a", "3", cas=cas[0], op="REPLACE"),
                            lambda cas: set_("a", "4", cas=cas[0] + 1000, op="REPLACE"),
                            set_("b", "5", cas=77, op="ADD"), get("a"), get("b")])
    # --- append / prepend
    add("append_prepend", [packet("APPEND", "a", value="x"), packet("PREPEND", "a", value="x"),
                           set_("a", "mid", 3), packet("APPEND", "a", value="end"),
                           packet("PREPEND", "a", value="start"), get("a"),
                           packet("APPENDQ", "a", value="!"), packet("PREPENDQ", "a", value="<"),
                           packet("APPENDQ", "zz", value="q"), get("a")])
    add("append_cas", [set_("a", "1"), SYNC,
                       lambda cas: packet("APPEND", "a", value="2", cas=cas[0]),
                       lambda cas: packet("APPEND", "a", value="3", cas=cas[0]),
                       packet("PREPEND", "zz", value="3", cas=5), get("a")])
    add("append_too_large", [set_("a", "old"),
                             packet("APPEND", "a", value=b"x" * (LIMIT_1M + 1)), get("a")])
    # --- delete
    add("delete", [set_("a", "1"), set_("b", "2"), packet("DELETE", "a"), packet("DELETE", "a"),
                   packet("DELETEQ", "b"), packet("DELETEQ", "b"), get("a"), get("b")])
    add("delete_cas", [set_("a", "1"), SYNC,
                       lambda cas: packet("DELETE", "a", cas=cas[0] + 1),
                       get("a"),
                       lambda cas: packet("DELETE", "a", cas=cas[0]),
                       get("a")])
    # --- incr / decr
    add("incr_create_and_count", [incr("n", 5, 10), incr("n", 5, 10), incr("n", 20, op="DECR"),
                                  get("n")])
    add("incr_no_create", [incr("n", 1, 10, 0xFFFFFFFF), incr("n", 1, 10, 0xFFFFFFFF, op="DECR"),
                           incr("n", 1, 10, 0xFFFFFFFF, op="INCRQ"), get("n")])
    add("incr_quiet", [incr("n", 1, 7, op="INCRQ"), incr("n", 2, op="INCRQ"),
                       incr("n", 1, op="DECRQ"), get("n")])
    add("incr_non_numeric", [set_("a", "abc"), incr("a"), set_("e", ""), incr("e"),
                             set_("s", "12abc"), incr("s")])
    # SYNC after a get: memcached rewrites a counter in place only while no reply in flight
    # still references the item, so a pipelined get would change what it does.
    add("incr_wrap", [set_("n", "18446744073709551615"), incr("n", 1), get("n"), SYNC,
                      incr("n", 5, op="DECR"), get("n")])
    add("decr_in_place_padding", [set_("n", "10"), incr("n", 1, op="DECR"), get("n"), SYNC,
                                  incr("n", 100), get("n")])
    add("incr_cas", [set_("n", "1"), SYNC,
                     lambda cas: incr("n", 1, cas=cas[0] + 99),
                     lambda cas: incr("n", 1, cas=cas[0]),
                     incr("m", 1, 3, cas=42), get("n"), get("m")])
    add("incr_flags_kept", [set_("n", "5", flags=77), incr("n", 1), get("n")])
    # --- touch / gat
    add("touch_gat", [set_("a", "v", flags=3), packet("TOUCH", "a", exp_extras(100)),
                      packet("TOUCH", "m", exp_extras(100)),
                      packet("GAT", "a", exp_extras(100)), packet("GATK", "a", exp_extras(100)),
                      packet("GATQ", "a", exp_extras(100)), packet("GATKQ", "a", exp_extras(100)),
                      packet("GAT", "m", exp_extras(100)), packet("GATK", "m", exp_extras(100)),
                      packet("GATQ", "m", exp_extras(100)),
                      packet("GATKQ", "m", exp_extras(100))])
    add("gat_expires", [set_("a", "v"), packet("GAT", "a", exp_extras(0xFFFFFFFF)), get("a"),
                        packet("TOUCH", "a", exp_extras(0)), get("a")])
    # --- flush
    add("flush", [set_("a", "1"), packet("FLUSH"), get("a"), set_("b", "2"),
                  packet("FLUSHQ", opaque=3), get("b"), set_("c", "3"),
                  packet("FLUSH", extras=exp_extras(0)), get("c")])
    add("flush_delayed", [set_("a", "1"), packet("FLUSH", extras=exp_extras(100)), get("a")])
    add("flush_disabled", [set_("a", "1"), packet("FLUSH"), packet("FLUSHQ"), get("a")],
        args=("-F",))
    # --- noop / version / quit
    add("noop_version", [packet("NOOP", opaque=0x01020304), packet("VERSION", opaque=5)])
    add("quit", [set_("a", "1"), SYNC, packet("QUIT", opaque=11)], eof=True)
    add("quit_quiet", [set_("a", "1"), SYNC, packet("QUITQ", opaque=11)], eof=True)
    add("quit_pipeline", [SYNC, set_("a", "1") + packet("QUIT") + get("a")], eof=True)
    # --- stats
    # Keys no other case uses: memcached flushes lazily, and a store that meets an older
    # case's flushed item counts get_flushed.
    add("stat_counters", [stat(b"reset"), set_("sa", "1"), set_("sb", b"x" * (LIMIT_1M + 1)),
                          get("sa"), get("sm"), get("sm", op="GETQ"), incr("sn", 1, 0),
                          incr("sn", 1), incr("sz", 1, 0, 0xFFFFFFFF),
                          incr("sz", 1, 0, 0xFFFFFFFF, op="DECR"),
                          packet("DELETE", "sa"), packet("DELETE", "sa"),
                          packet("TOUCH", "sn", exp_extras(10)), packet("GAT", "sm", exp_extras(10)),
                          set_("sn", "2", cas=1), set_("sy", "2", cas=1), packet("FLUSH"), stat()])
    add("stat_groups", [stat(b"settings", 1), stat(b"items", 2), stat(b"slabs", 3),
                        stat(b"sizes", 4), stat(b"bogus", 5), stat(b"conns", 6),
                        stat(b"detail on", 7), stat(b"detail off", 8), stat(b"detail dump", 9),
                        stat(b"detail bogus", 10), stat(b"detail", 11), stat(b"cachedump 1 1", 12)])
    # Per-prefix counters over the binary protocol: Get/GAT/Touch count as gets, the Set and
    # Append families as sets, Delete as deletes (one prefix: memcached lists them in hash order).
    add("stat_detail_counts", [stat(b"reset", 1), stat(b"detail on", 2), set_("pd:1", "1"),
                               get("pd:1", 3), get("pd:2", 4, "GETQ"), get("pd:1", 5, "GETK"),
                               packet("APPEND", "pd:1", value=b"2", opaque=6),
                               packet("TOUCH", "pd:1", exp_extras(10), opaque=7),
                               packet("DELETE", "pd:1", opaque=8), packet("DELETE", "pd:1", opaque=9),
                               set_("nodelim", "1"), get("nodelim", 10), stat(b"detail dump", 11),
                               stat(b"detail off", 12), get("pd:1", 13), stat(b"detail dump", 14),
                               stat(b"reset", 15), stat(b"detail dump", 16)])
    add("stat_sizes_disable", [stat(b"sizes_disable", 1)])
    add("stat_reset_prefix", [get("m"), stat(b"resetting", 1), stat()])
    add("stat_body_is_next_request", [packet("STAT", bodylen=24) + packet("NOOP", opaque=77)])
    # Its own keys too: with "a" (which earlier cases store), memcached's `set a` counted
    # get_flushed whenever its LRU maintainer had not yet reclaimed the flushed "a" of an
    # earlier case (about 2 runs in 40), and herdless, whose flush is eager, never does.
    add("stat_text_crossed", [set_("xa", "1"), get("xa"), ("t", 1, b"get xa xb\r\n"), SYNC,
                              stat()])
    # --- SASL without -S, unknown opcodes
    add("sasl_unknown", [packet("SASL_LIST", opaque=1), packet("SASL_AUTH", "PLAIN", value=b"\0u\0p"),
                         packet("SASL_STEP", "PLAIN", value=b"x"), packet("NOOP", opaque=2)])
    add("verbosity_unknown", [packet("VERBOSITY", extras=exp_extras(1), opaque=3),
                              packet("NOOP", opaque=4)])
    add("unknown_opcode_swallows_body", [packet(0x50, value=b"12345", opaque=5),
                                         packet("NOOP", opaque=6)])
    add("unknown_opcode_swallows_past_key", [SYNC, packet(0x42, "abc", value=b"de") +
                                             packet("NOOP", opaque=6)], eof=True, quiet=True)
    # --- errors that close
    add("bad_magic", [set_("a", "1"), SYNC, b"\x81" + packet("NOOP")[1:]], eof=True)
    add("text_on_binary_connection", [set_("a", "1"), SYNC, b"get a\r\n" + b" " * 30], eof=True)
    add("key_longer_than_body", [SYNC, packet("GET", "abc", bodylen=2)], eof=True)
    add("ext_and_key_longer_than_body", [SYNC, packet("SET", "abc", set_extras(), bodylen=10)],
        eof=True)
    add("key_251", [SYNC, get(b"k" * 251)], eof=True)
    for name, bad in (
            ("get_with_extras", packet("GET", "a", extras=b"\0\0\0\0")),
            ("get_without_key", packet("GET")),
            ("get_body_longer", packet("GET", "a", value=b"xx")),
            ("set_short_extras", packet("SET", "a", extras=b"\0\0\0\0", value=b"v")),
            ("set_without_key", packet("SET", extras=set_extras(), value=b"v")),
            ("incr_short_extras", packet("INCR", "a", extras=b"\0" * 8)),
            ("incr_with_value", packet("INCR", "a", extras=b"\0" * 20, value=b"v")),
            ("delete_with_extras", packet("DELETE", "a", extras=b"\0\0\0\0")),
            ("append_with_extras", packet("APPEND", "a", extras=b"\0\0\0\0", value=b"v")),
            ("touch_without_extras", packet("TOUCH", "a")),
            ("gat_without_key", packet("GAT", extras=exp_extras(1))),
            ("noop_with_body", packet("NOOP", value=b"x")),
            ("version_with_key", packet("VERSION", "a")),
            ("quit_with_extras", packet("QUIT", extras=b"\0\0\0\0")),
            ("flush_bad_extras", packet("FLUSH", extras=b"\0\0")),
            ("flush_with_key", packet("FLUSH", "a")),
            ("stat_with_extras", packet("STAT", extras=b"\0\0\0\0")),
            ("sasl_auth_without_key", packet("SASL_AUTH", value=b"x")),
            ("sasl_list_with_key", packet("SASL_LIST", "a")),
    ):
        add("invalid_" + name, [set_("a", "1"), SYNC, bad + get("a")], eof=True)
    # --- framing
    whole = set_("a", "hello", 1) + get("a", 5, "GETK")
    add("split_header", [(0, [whole[:10], whole[10:30], whole[30:]])])
    add("split_bytewise", [(0, [whole[i:i + 1] for i in range(len(whole))])])
    add("pipeline_quiet_gets", [set_("a", "1", op="SETQ"), set_("b", "2", op="SETQ"),
                                get("a", 1, "GETKQ") + get("m", 2, "GETKQ") + get("b", 3, "GETKQ") +
                                get("n", 4, "GETQ") + get("a", 5, "GETQ")])
    add("opaque_echo", [set_("a", "1", opaque=0xFFFFFFFF), get("a", 0x80000001),
                        get("m", 0x12345678), packet("DELETE", "m", opaque=0xCAFEBABE)])
    add("vbucket_datatype_ignored", [struct.pack(">BBHBBHIIQ", 0x80, 0, 1, 0, 1, 7, 1, 3, 0) + b"a",
                                     set_("a", "v"), struct.pack(">BBHBBHIIQ", 0x80, 0, 1, 0, 9, 0xffff, 1, 4, 0) + b"a"])
    # --- across protocols: one store, one CAS space
    add("binary_then_text", [set_("a", "bin", flags=9), SYNC, ("t", 1, b"gets a\r\n"),
                             ("t", 1, b"set b 3 0 4\r\ntext\r\n"), SYNC, get("b"), get("b", op="GETK"),
                             incr("c", 1, 5), SYNC, ("t", 1, b"incr c 2\r\nget c\r\n")])
    add("text_then_binary_cas", [("t", 1, b"set a 0 0 1\r\nx\r\ngets a\r\n"), SYNC,
                                 lambda cas: set_("a", "y", cas=cas[0]), SYNC,
                                 ("t", 1, b"gets a\r\n")])
    add("text_connection_stays_text", [("t", 1, b"version\r\n"), SYNC,
                                       ("t", 1, packet("NOOP"))], quiet=True)
    # --- -B forces one protocol on every connection
    add("forced_binary_refuses_text", [SYNC, b"version\r\n" + b" " * 20], eof=True,
        args=("-B", "binary"))
    add("forced_binary_serves_binary", [set_("a", "1"), get("a")], args=("-B", "binary"))
    add("forced_ascii_reads_binary_as_text", [("t", 1, get("a") + b"\r\n")], args=("-B", "ascii"))
    # --- -C: no CAS
    add("cas_disabled", [set_("a", "1"), get("a"), set_("a", "2", cas=5), get("a"), incr("n", 1, 1)],
        args=("-C",))
    return c


# ---------------------------------------------------------------------------- running

class Transcript(harness.Transcript):
    """Binary packets field by field, text lines as they came (CAS values as symbols)."""

    def cas_symbol(self, cas):
        return "0" if cas == 0 else super().cas_symbol(cas)

    def add_binary(self, conn_index, packets, rest=b""):
        for p in packets:
            key, value = p.key, p.value
            if p.opcode == OP["STAT"] and p.status == 0 and key and key not in COUNTERS:
                continue
            if p.opcode == OP["VERSION"] and p.status == 0:
                value = b"<version>"
            self.lines.append("%d: %s st=%#x ext=%s key=%r val=%r opq=%#x cas=%s dt=%d" % (
                conn_index, OPNAME.get(p.opcode, hex(p.opcode)), p.status, p.extras.hex(), key,
                value if len(value) < 200 else value[:40] + b"...(%d)" % len(value), p.opaque,
                self.cas_symbol(p.cas), p.datatype))
        if rest:
            self.lines.append("%d: <%d trailing bytes %r>" % (conn_index, len(rest), rest[:40]))

    def add_text(self, conn_index, data):
        for line in data.split(b"\r\n"):
            f = line.split(b" ")
            if f[0] == b"VERSION":
                line = b"VERSION <version>"
            elif f[0] == b"VALUE" and len(f) == 5:
                line = b" ".join(f[:4]) + b" " + self.cas_symbol(int(f[4])).encode()
            self.lines.append("%d: text %r" % (conn_index, line))


class Runner:
    def __init__(self, port, ascii_only=False, timeout=None):
        self.port = port
        self.timeout = timeout
        self.ascii_only = ascii_only  # -B ascii: no mn (binary) marker; use version
        self.conns = {}
        self.text_conns = set()
        self.marks = 0

    def conn(self, index, text):
        if index not in self.conns:
            self.conns[index] = BinConn(self.port, self.timeout)
            if text:
                self.text_conns.add(index)
        return self.conns[index]

    def collect(self, index, transcript):
        conn = self.conns[index]
        if index in self.text_conns and self.ascii_only:
            conn.send(b"version\r\n")
            transcript.add_text(index, conn.recv_until(b"VERSION ")[:-8])
            conn.recv_line()
        elif index in self.text_conns:
            conn.send(b"mn\r\n")
            transcript.add_text(index, conn.recv_until(b"MN\r\n")[:-4])
        else:
            self.marks += 1
            transcript.add_binary(index, conn.until_noop(MARK + self.marks))

    def collect_eof(self, index, transcript):
        data = self.conns[index].recv_until_eof()
        if index in self.text_conns:
            transcript.add_text(index, data)
        else:
            packets, rest = parse(data)
            transcript.add_binary(index, packets, rest)
        transcript.lines.append("%d: <EOF>" % index)


def normalise_step(step):
    """(conn, chunks or callable, text)"""
    if step == SYNC:
        return step
    if callable(step):
        return (0, step, False)
    if isinstance(step, bytes):
        return (0, [step], False)
    if step[0] == "t":
        return (step[1], [step[2]], True)
    conn, data = step
    return (conn, data if isinstance(data, list) else [data], False)


def run_case(case, port):
    flush(port, case.args)
    transcript = Transcript()
    runner = Runner(port, ascii_only="ascii" in case.args,
                    timeout=QUIET_WAIT if case.quiet else None)
    pending = []
    try:
        last = None
        for step in map(normalise_step, case.steps):
            if step == SYNC or (last is not None and step[0] != last):
                for i in pending:
                    runner.collect(i, transcript)
                pending.clear()
                last = None
                if step == SYNC:
                    continue
            index, chunks, text = step
            conn = runner.conn(index, text)
            if callable(chunks):
                chunks = [chunks(transcript.cas_values)]
            for k, chunk in enumerate(chunks):
                if k:
                    time.sleep(0.002)  # let the previous piece arrive on its own
                conn.send(chunk)
            if index not in pending:
                pending.append(index)
            last = index
        if case.eof:
            closing = pending.pop()
            for i in pending:
                runner.collect(i, transcript)
            runner.collect_eof(closing, transcript)
        else:
            for i in pending:
                runner.collect(i, transcript)
    except (TimeoutError, EOFError, OSError, ValueError) as e:
        transcript.lines.append("<transport error: %s>" % e)
    finally:
        for conn in runner.conns.values():
            conn.close()
    return transcript


def flush(port, args):
    if "ascii" in args:
        with harness.Conn(port) as conn:
            conn.call(b"flush_all\r\n")
        return
    with BinConn(port) as conn:
        # -F refuses flushes; under -C memcached's flush also hides items stored later in the
        # same second. There the keys the cases use are deleted instead.
        if "-F" not in args and "-C" not in args:
            conn.call(packet("FLUSH", opaque=1))
        else:
            for key in (b"a", b"b", b"c", b"e", b"m", b"n", b"s", b"z", b"big", b"nokey", b"zz",
                        b"a b\x00c\r\n", b"k" * 250):
                conn.call(packet("DELETE", key))


def body(results):
    servers = harness.SideBySide()
    ran, mismatched = servers.compare(results, cases(),
                                      lambda case, daemon: run_case(case, daemon.port))
    servers.stop(results)
    harness.log("compare_binary: %d cases ran, %d matched, %d differ%s" % (
        ran, ran - len(mismatched), len(mismatched),
        (": " + " ".join(mismatched)) if mismatched else ""))


if __name__ == "__main__":
    harness.run("test_compare_binary", body)
