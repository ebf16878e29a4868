#!/usr/bin/python3
"""compare-random.py: random request sequences sent to herdless and to a memcached side by side,
their replies compared (a yardstick run by hand, not part of scripts/test.sh).

    /usr/bin/python3 scripts/compare-random.py [--memcached PATH] [--herdless PATH]
        [--herdless-args "..."] [--latest] [--binary] [--mangle] [--split] [--first SEED] [--seeds N] [--steps N]

Each seed is one connection to each server (both flushed first) and up to --steps requests drawn
from that seed: the text storage, retrieval, arithmetic, touch and delete commands and mg, ms, md
and ma with random flags, over six keys (one of 250 bytes), with values of numbers, blanks and
text up to 70,000 bytes, bad numbers and unknown flags among them. Every request is followed by
`mn` and its replies read up to `MN`. CAS values are compared by order of appearance, `t` flags
above 2 s as "some TTL". The first differing reply of a seed is printed with the earlier requests
that named its key; the exit status is 1 when any seed differed.

--binary sends the binary protocol's requests instead (every opcode but the SASL, stat and
version ones; quiet ones too, extras of a wrong length now and then, a 251-byte key), each
followed by a NOOP whose reply ends its responses; their fields are compared.

--mangle (text) disturbs the command lines: doubled, leading and trailing spaces, a bare `\n`,
a word dropped or added, upper case, and sends up to four requests in one write (each still fenced
by `mn` at the end of the write).

--split cuts each write at one to three random bytes and sends the pieces 1 ms apart (TCP_NODELAY),
so that each server reads requests in parts: a line without its end, a data block without its
last bytes, a binary header cut short; what is answered must not depend on where a read ends.
A request then takes a few ms, so the `l` differences of the notes below come more often.

--latest adds memcached 1.6.19+'s flags (E, md x, ms MA/MP N) and is meant for memcached 1.6.45
against herdless with --herdless-args "-o compat=1.6.45".

Differences that come from memcached, not herdless (docs/reliability.md):
- an incr or decr that shortens a number: memcached rewrites the item in place (the value keeps its
  length, padded with spaces) unless another thread holds a reference to it at that moment (its
  LRU maintainer, crawler), when it writes a new item of the exact length; herdless pads unless a
  reply of the same batch shows the item (an mg's, a 1.6.45 get's), as memcached.
  Later `get`s, `h` and the length differ. A new item is unread, so after any incr, decr or ma
  that met such a reference, `h` on an item read before says 0 in memcached and 1 in herdless
  (seed 8096: alike with memcached's `-o no_lru_maintainer`).
- `flush_all <delay>`: memcached's cut-off takes effect a second before the delay ends
  (`flush_all 1` at once), and a later delayed flush moves it, showing again items an earlier
  one hid; herdless removes the items when the delay ends. Neither generator sends a delay.
- an incr, decr or ma of a value of spaces only: memcached's strtoull reads on past the value's
  end into the memory after the item, so a digit there makes it a number (after a long run);
  herdless answers non-numeric, as memcached does on a fresh server.
- `l` (seconds since the last access) differs by one when a second boundary falls between them;
  so do `t` (the TTL left) and an `R<n>` flag's win on an item with n seconds left (memcached
  `HD W`, herdless `HD`, or the other way): each server's second begins at another moment;
- a storage command refused for a bad word whose data (no newline in its first 2048 bytes) is
  then read as a command line: memcached closes the connection and drops the queued
  `CLIENT_ERROR`; herdless sends it, then closes.
- a `get` (`gets`, `gat`, `gats`) with a key over 250 bytes and another key (1.6.18), or any such
  `get` (1.6.45), makes memcached drop the replies it has not yet sent to earlier requests of the
  same read: it answers the `CLIENT_ERROR` alone. herdless answers each request.
- memcached 1.6.45 answers a `get` of a key over 250 bytes with `CLIENT_ERROR bad command line
  format` and an empty line after it (`\r\n\r\n`); herdless sends no empty line. --latest takes
  the empty line out of memcached's replies before they are compared.
"""

import argparse
import os
import random
import re
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import binproto  # noqa: E402  (tests/integration)
import harness  # noqa: E402

KEYS = ["a", "b", "k3", "longer_key_" + "x" * 20, "n", "K" * 250]
EXPTIMES = ["0", "0", "1000", "-1", "100000", "2592001", "abc"]
# Numbers stay below 2^63: memcached's incr reads a larger one by scanning for a '-' past the
# value's end, so its answer depends on what lies in memory after the item.
NUMBERS = [0, 1, 5, 99, 2**32, 2**63 - 1, 2**63 - 3, 7]
ODD_LINES = [b"flush_all\r\n", b"flush_all 0\r\n", b"flush_all noreply\r\n", b"verbosity 1\r\n",
             b"verbosity\r\n", b"mn\r\n", b"mg " + b"K" * 251 + b" v\r\n", b"get " + b"K" * 251 + b"\r\n",
             b"mg YQ== b v k\r\n", b"ms YQ== 2 b\r\nhi\r\n", b"md YQ== b q\r\n", b"ma bg== b N0 v\r\n",
             b"mg a== b\r\n"]


class Generator:
    """One seed's requests. `{casN}` stands for the Nth CAS value this connection was given. The
    CAS values E gives are far above what a server's counter reaches in a run: a CAS is compared
    by its value's order of appearance, and E55 met the counter's 55 once."""

    def __init__(self, seed, latest, mangle=False):
        self.r = random.Random(seed)
        self.latest = latest
        self.mangle = mangle

    def value(self):
        r = self.r
        c = r.random()
        if c < 0.3:
            return str(r.choice(NUMBERS)).encode()
        if c < 0.6:
            return r.choice([b"", b"-3", b" 12", b"12 "])
        if c < 0.65:
            return bytes(r.choice(b"abcxyz019") for _ in range(r.choice([511, 512, 513, 4000, 20000, 70000])))
        return bytes(r.choice(b"abcxyz019 ") for _ in range(r.randint(1, 30)))

    def flags(self, pool, latest_pool=()):
        pool = pool + (list(latest_pool) if self.latest else [])
        return "".join(" " + self.r.choice(pool) for _ in range(self.r.randint(0, 5)))

    def next(self):
        if not self.mangle:
            return self.request()
        writes = []
        count = self.r.choice([1, 1, 1, 2, 4])
        while len(writes) < count:
            request = self.mangled(self.request())
            if writes and b"K" * 251 in request and request.lstrip()[:3].lower() in (b"get", b"gat"):
                continue   # memcached drops the replies before it (the module's notes)
            writes.append(request)
        return b"".join(writes)

    def mangled(self, request):
        """The request with its command line disturbed (its data, if any, as it was)."""
        r = self.r
        line, sep, data = request.partition(b"\r\n")
        words = line.split(b" ")
        # A refused line's data over 2048 bytes is read as a line too long (the notes above): only
        # spaces that keep the line good there (1.6.45 refuses a line that starts with a space).
        c = r.random() * ((0.25 if self.latest else 0.3) if len(data) > 2048 else 1)
        if c < 0.15:
            i = r.randrange(len(words))
            words[i:i + 1] = [words[i], b""]          # a doubled space
        elif c < 0.25:
            words.append(b"")                          # a trailing space
        elif c < 0.3:
            words.insert(0, b"")                       # a leading space
        elif c < 0.4 and len(words) > 1:
            del words[r.randrange(1, len(words))]      # a word missing
        elif c < 0.5:
            # (not x or E: 1.6.19+'s flags, answered as 1.6.45 does; --latest has them; no delay
            # for flush_all: the module's notes)
            word = r.choice([b"noreply", b"0", b"z", b"q", b"T5", b"+1"])
            words.insert(r.randint(1, len(words)), b"0" if words[0] == b"flush_all" and word == b"+1" else word)
        elif c < 0.55:
            words[0] = words[0].upper()
        if words[0] == b"mg" and any(w[:1] in (b"Y", b"r") for w in words[2:]):
            return request   # a key moved among the flags would read as herdless's own Y or r
        if len(words) > 1 and b"{cas" in words[1]:
            return request   # a CAS as the key: each server's own number, printed by `k`
        line = b" ".join(words)
        if r.random() < 0.15:
            sep = b"\n"
        return line + sep + data

    def request(self):
        r = self.r
        k = r.choice(KEYS)
        c = r.random()
        if c < 0.25:
            cmd = r.choice(["set", "add", "replace", "append", "prepend", "cas"])
            v = self.value()
            # A refused line's data is read as a command line; over 2048 bytes without a newline,
            # memcached closes without sending its error (the module's notes): big values only
            # with good words.
            big = len(v) > 2048
            flags = r.choice(["0", "1", "4294967295"] + ([] if big else ["4294967296", "-1", "x"]))
            exptime = r.choice(EXPTIMES[:5] if big else EXPTIMES)
            uniques = ["{cas%d}" % r.randint(0, 5), "0", "999999"] + ([] if big else ["x"])
            unique = " " + r.choice(uniques) if cmd == "cas" else ""
            noreply = " noreply" if r.random() < 0.1 else ""
            return f"{cmd} {k} {flags} {exptime} {len(v)}{unique}{noreply}\r\n".encode() + v + b"\r\n"
        if c < 0.4:
            cmd = r.choice(["get", "gets", "gat", "gats"])
            keys = " ".join(r.choice(KEYS) for _ in range(r.randint(0, 3)))
            exptime = r.choice(EXPTIMES) + " " if cmd.startswith("gat") else ""
            return f"{cmd} {exptime}{keys}\r\n".encode()
        if c < 0.5:
            delta = r.choice(["1", "0", "5", "18446744073709551615", "18446744073709551616", "-1", "x", ""])
            noreply = " noreply" if r.random() < 0.1 else ""
            return f"{r.choice(['incr', 'decr'])} {k} {delta}{noreply}\r\n".encode()
        if c < 0.55:
            x = r.random()
            if x < 0.15:
                return r.choice(ODD_LINES)
            return f"touch {k} {r.choice(EXPTIMES)}{' noreply' if x < 0.3 else ''}\r\n".encode()
        if c < 0.6:
            return r.choice([f"delete {k}\r\n", f"delete {k} 0\r\n", f"delete {k} 5\r\n",
                             f"delete {k} noreply\r\n"]).encode()
        if c < 0.75:
            return f"mg {k}" .encode() + self.flags(
                ["v", "f", "t", "c", "s", "k", "Oab", "q", "h", "l", "N30", "R30", "T100", "u", "zz"],
                ["E9000000055", "x"]).encode() + b"\r\n"
        if c < 0.87:
            v = self.value()
            return f"ms {k} {len(v)}".encode() + self.flags(
                ["F5", "T100", "T-1", "C{cas1}", "C0", "I", "MS", "ME", "MA", "MP", "MR", "q", "Oop", "k",
                 "c", "Mx"], ["N30", "E9000000077", "s"]).encode() + b"\r\n" + v + b"\r\n"
        if c < 0.93:
            return f"md {k}".encode() + self.flags(["q", "C{cas0}", "C0", "I", "T30", "k", "Oz", "zz"],
                                                   ["x", "E9000000066", "F3"]).encode() + b"\r\n"
        return f"ma {k}".encode() + self.flags(
            ["N30", "J13", "D2", "T100", "MI", "M+", "MD", "M-", "q", "Oo", "k", "t", "c", "v", "Mz", "D-1",
             "J-1"]).encode() + b"\r\n"


class Session:
    """One connection: requests followed by `mn`, replies up to `MN`, the CAS values seen."""

    def __init__(self, port, split=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(2)
        self.cas = []
        self.pending = b""
        self.split = split   # a random.Random: each write sent in pieces (--split); None: whole

    def send(self, data):
        if self.split is None or len(data) < 2:
            self.sock.sendall(data)
            return
        cuts = sorted(self.split.sample(range(1, len(data)), min(len(data) - 1, self.split.randint(1, 3))))
        for start, end in zip([0] + cuts, cuts + [len(data)]):
            self.sock.sendall(data[start:end])
            time.sleep(0.001)

    def ask(self, request):
        request = re.sub(rb"\{cas(\d)\}", lambda m: self.cas[int(m.group(1))]
                         if int(m.group(1)) < len(self.cas) else b"1", request)
        try:
            self.send(request + b"mn\r\n")
            while b"MN\r\n" not in self.pending:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return self.pending + b"<EOF>"
                self.pending += chunk
        except (BrokenPipeError, ConnectionResetError):
            return self.pending + b"<EOF>"
        except socket.timeout:
            return self.pending + b"<TIMEOUT>"
        reply, _, self.pending = self.pending.partition(b"MN\r\n")
        for line in reply.split(b"\r\n"):
            words = line.split(b" ")
            if words[0] == b"VALUE" and len(words) == 5:
                self.cas.append(words[4])
            elif words[0] in (b"VA", b"HD", b"EN", b"NS", b"EX", b"NF"):
                self.cas += [w[1:] for w in words[1:] if w[:1] == b"c" and w[1:].isdigit()]
        return reply

    @staticmethod
    def ended(reply):
        """Whether the server closed the connection or stopped answering."""
        return reply.endswith((b"<EOF>", b"<TIMEOUT>"))

    def close(self):
        self.sock.close()


BINARY_OPS = ["GET", "GETQ", "GETK", "GETKQ", "SET", "SETQ", "ADD", "ADDQ", "REPLACE", "REPLACEQ",
              "APPEND", "APPENDQ", "PREPEND", "PREPENDQ", "DELETE", "DELETEQ", "INCR", "INCRQ", "DECR",
              "DECRQ", "TOUCH", "GAT", "GATQ", "GATK", "GATKQ", "FLUSH", "FLUSHQ", "VERBOSITY", "NOOP"]
BINARY_EXPTIMES = [0, 0, 1000, 100000, 2592001, 0xFFFFFFFF]


class BinaryGenerator(Generator):
    """One seed's binary requests: (opcode, key, extras, value, cas index or a CAS, extras' length
    as sent), rendered by the session, which knows the CAS values it was given."""

    def next(self):
        r = self.r
        op = r.choice(BINARY_OPS)
        key = r.choice(KEYS + [""]).encode() if r.random() < 0.95 else b"K" * 251
        value, extras = b"", b""
        if op.startswith(("SET", "ADD", "REPLACE")):
            value = self.value()
            extras = struct.pack(">II", r.choice([0, 1, 0xFFFFFFFF]), r.choice(BINARY_EXPTIMES))
        elif op.startswith(("APPEND", "PREPEND")):
            value = self.value()
        elif op.startswith(("INCR", "DECR")):
            extras = struct.pack(">QQI", r.choice([0, 1, 5, 2**64 - 1]), r.choice([0, 7, 2**63]),
                                 r.choice(BINARY_EXPTIMES))
        elif op.startswith(("TOUCH", "GAT")) or op == "VERBOSITY":
            extras = struct.pack(">I", r.choice(BINARY_EXPTIMES))
        elif op.startswith("FLUSH") and r.random() < 0.5:
            # No delayed flush: memcached hides flushed items lazily, by one cut-off time that a
            # later delayed flush moves into the future, which shows them again.
            extras = struct.pack(">I", 0)
        if op in ("FLUSH", "FLUSHQ", "VERBOSITY", "NOOP"):
            key = b""
        if r.random() < 0.05:   # extras of the wrong length: Invalid arguments
            extras = extras[:-1] if extras else b"\0\0\0\0"
        cas = r.choice([None, None, None, 0, 999999] + [("seen", i) for i in range(4)])
        return (op, key, extras, value, cas)


class BinarySession(Session):
    """One binary connection: each request followed by a NOOP, responses read up to its reply."""

    FENCE = 0xFEEDF00D

    def ask(self, request):
        op, key, extras, value, cas = request
        if isinstance(cas, tuple):
            cas = self.cas[cas[1]] if cas[1] < len(self.cas) else 1
        packet = binproto.packet(op, key, extras, value, cas=cas or 0, opaque=7)
        fence = binproto.packet("NOOP", opaque=self.FENCE)
        replies = []
        try:
            self.send(packet + fence)
            while True:
                got, self.pending = binproto.parse(self.pending)
                for response in got:
                    if response.opcode == binproto.OP["NOOP"] and response.opaque == self.FENCE:
                        self.cas += [x.cas for x in replies if x.cas]
                        return replies
                    replies.append(response)
                chunk = self.sock.recv(65536)
                if not chunk:
                    return replies + ["<EOF>"]
                self.pending += chunk
        except (BrokenPipeError, ConnectionResetError):
            return replies + ["<EOF>"]
        except socket.timeout:
            return replies + ["<TIMEOUT>"]

    @staticmethod
    def ended(reply):
        return reply[-1:] in (["<EOF>"], ["<TIMEOUT>"])


def binary_normalised(replies, cas_seen, symbols):
    """Each response's fields, its CAS by order of appearance."""
    out = []
    for x in replies:
        if isinstance(x, str):
            out.append(x)
            continue
        cas = "CAS%d" % symbols.setdefault(x.cas, len(symbols)) if x.cas else 0
        out.append((binproto.OPNAME.get(x.opcode, x.opcode), x.status, x.extras, x.key, x.value, cas,
                    x.opaque))
    return out


def normalised(reply, cas_seen, symbols):
    """CAS values by order of appearance, TTLs above 2 s as `t~`."""
    def symbol(token):
        return b"CAS%d" % symbols.setdefault(token, len(symbols)) if token in cas_seen else token
    lines = []
    for line in reply.split(b"\r\n"):
        words = line.split(b" ")
        if words[0] == b"VALUE" and len(words) == 5:
            words[4] = symbol(words[4])
        else:
            words = [b"c" + symbol(w[1:]) if w[:1] == b"c" and w[1:].isdigit() else w for w in words]
            words = [b"t~" if re.fullmatch(rb"t\d+", w) and int(w[1:]) > 2 else w for w in words]
        lines.append(b" ".join(words))
    return b"\r\n".join(lines)


def key_of(request):
    if isinstance(request, tuple):
        return request[1] or None
    words = request.split(b"\r\n", 1)[0].split(b" ")
    return words[1] if len(words) > 1 and not words[0].startswith((b"gat", b"get")) else None


def run_seed(seed, args, reference, ours):
    session, gen = (BinarySession, BinaryGenerator(seed, False)) if args.binary else \
        (Session, Generator(seed, args.latest, args.mangle))
    compared = binary_normalised if args.binary else normalised
    split = (lambda: random.Random(seed)) if args.split else (lambda: None)
    a, b = session(reference.port, split()), session(ours.port, split())
    flush = ("FLUSH", b"", b"", b"", None) if args.binary else b"flush_all\r\n"
    a.ask(flush)
    b.ask(flush)
    symbols_a, symbols_b = {}, {}
    history = []
    try:
        for step in range(args.steps):
            request = gen.next()
            reply_a, reply_b = a.ask(request), b.ask(request)
            if args.latest and isinstance(reply_a, bytes):   # 1.6.45's empty line after a long get key's error (the notes above)
                reply_a = reply_a.replace(b"bad command line format\r\n\r\n", b"bad command line format\r\n")
            # memcached sends no reply while it waits for a value's data: after a time-out, only
            # whether both timed out counts.
            timed_out = reply_a.endswith(b"<TIMEOUT>") and reply_b.endswith(b"<TIMEOUT>") \
                if isinstance(reply_a, bytes) and isinstance(reply_b, bytes) else False
            if not timed_out and compared(reply_a, a.cas, symbols_a) != compared(reply_b, b.cas, symbols_b):
                print(f"seed {seed} step {step}: {str(request)[:args.width]}")
                print(f"  memcached {str(reply_a)[:600]}\n  herdless  {str(reply_b)[:600]}")
                key = key_of(request)
                for earlier, reply in history:
                    if key is not None and key in (earlier[1] if args.binary else earlier):
                        print(f"    earlier {str(earlier)[:160]} -> {str(reply)[:200]}")
                return False
            history.append((request, reply_a))
            if session.ended(reply_a):
                return True
        return True
    finally:
        a.close()
        b.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--herdless", default=os.path.join(HERE, "..", "build", "release", "herdless"))
    ap.add_argument("--herdless-args", default="")
    ap.add_argument("--latest", action="store_true", help="memcached 1.6.19+'s flags too")
    ap.add_argument("--binary", action="store_true", help="the binary protocol's requests instead")
    ap.add_argument("--mangle", action="store_true", help="disturbed command lines, several a write")
    ap.add_argument("--split", action="store_true", help="each write sent in pieces, 1 ms apart")
    ap.add_argument("--width", type=int, default=300, help="characters of the differing request shown")
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--steps", type=int, default=150)
    args = ap.parse_args()
    harness.MEMCACHED_BIN = os.path.abspath(args.memcached)
    harness.HERDLESS_BIN = os.path.abspath(args.herdless)
    reference = harness.start_memcached(["-m", "64"])
    ours = harness.start_herdless(["-m", "64"] + args.herdless_args.split())
    try:
        differed = [s for s in range(args.first, args.first + args.seeds) if not run_seed(s, args, reference, ours)]
    finally:
        reference.stop()
        ours.stop()
    print(f"{args.seeds - len(differed)}/{args.seeds} seeds replied alike"
          + (f"; differed: {' '.join(map(str, differed))}" if differed else ""))
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
