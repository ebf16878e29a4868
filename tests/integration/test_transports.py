"""The ways a memcached site reaches its cache besides TCP, and the flags around them:
UDP (-U) with memcached's frame header, compared with memcached side by side; unix domain
sockets (-s, -a) with pymemcache's unix-socket client; MEMCACHED_PORT_FILENAME with -p -1 and
-U -1 (ephemeral ports) and -p 0 (no TCP); -M (no evictions: out of memory instead).
"""

import os
import shutil
import socket
import stat as stat_module
import struct
import subprocess
import tempfile

import harness
from binproto import BinConn, get as bin_get, packet, parse, set_ as bin_set

from pymemcache.client.base import Client


# ---------------------------------------------------------------------------- UDP

class Udp:
    """A raw UDP client: one request per datagram, replies grouped into messages."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(harness.TIMEOUT)
        self.rid = 0

    def request(self, payload, messages=1, header=None):
        """Sends payload; returns the replies as a list of (message datagrams) until
        `messages` complete messages arrived. Each datagram: (request id, seq, total, data)."""
        self.rid += 1
        head = header if header is not None else struct.pack(">HHHH", self.rid, 0, 1, 0)
        self.sock.sendto(head + payload, ("127.0.0.1", self.port))
        out = []
        current = []
        while len(out) < messages:
            data = self.sock.recv(65536)
            rid, seq, total, reserved = struct.unpack(">HHHH", data[:8])
            current.append((rid, seq, total, reserved, data[8:]))
            if total == 0 or seq == total - 1:   # total 0: memcached's empty message
                out.append(current)
                current = []
        return out

    def quiet(self, datagram, wait=0.3):
        """Sends a raw datagram (header included) and returns whatever arrives within `wait`
        seconds."""
        self.sock.sendto(datagram, ("127.0.0.1", self.port))
        self.sock.settimeout(wait)
        got = []
        try:
            while True:
                got.append(self.sock.recv(65536))
        except socket.timeout:
            pass
        finally:
            self.sock.settimeout(harness.TIMEOUT)
        return got

    def close(self):
        self.sock.close()


def shape(messages):
    """What is compared with memcached: per message, per datagram (seq, total, data)."""
    return [[(seq, total, reserved, data) for _, seq, total, reserved, data in m] for m in messages]


UDP_SCRIPT = [
    # (payload, messages expected)
    (b"set a 0 0 5\r\nhello\r\n", 1),
    (b"get a\r\n", 1),
    (b"get nothere\r\n", 1),
    (b"set big 3 0 4000\r\n" + bytes(range(250)) * 16 + b"\r\n", 1),
    (b"get big\r\n", 1),                      # a 3-datagram reply
    (b"get a nothere big a\r\n", 3),          # memcached: one message per hit key
    (b"get nothere a\r\n", 2),              # an empty first response: a bare header
    (b"set c 0 0 1\r\n1\r\nincr c 5\r\nget c\r\n", 3),   # one message per command
    (b"gets a\r\n", 1),
    (b"delete a\r\n", 1),
    (b"version\r\n", 1),
    (b"mn\r\n", 1),
    (bin_set("b", "binary", 7, opaque=5), 1),
    (bin_get("b", 6, "GETK"), 1),
    (bin_get("big", 7), 1),                   # 3 datagrams, binary
    (bin_get("m", 8) + bin_get("b", 9), 2),
    (bin_get("m", 8, "GETQ") + bin_get("b", 9, "GETQ") + packet("NOOP", opaque=10), 3),
    (bin_set("q", "quiet", op="SETQ"), 1),   # a quiet success: a bare header
    (b"set q 0 0 1 noreply\r\nx\r\nget q\r\n", 1),   # noreply: nothing at all
]


def normalise(data):
    out = []
    for line in data.split(b"\r\n"):
        f = line.split(b" ")
        if f[0] == b"VALUE" and len(f) == 5:
            line = b" ".join(f[:4]) + b" <cas>"
        if f[0] == b"VERSION":
            line = b"VERSION <v>"
        out.append(line)
    return b"\r\n".join(out)


def udp_compare(r):
    ref = harness.start_memcached(["-U", "-1"])
    ours = harness.start_target(["-U", "-1"])
    transcripts = []
    for d in (ref, ours):
        client = Udp(d.udp_port)
        t = []
        for payload, messages in UDP_SCRIPT:
            for m in shape(client.request(payload, messages)):
                for seq, total, reserved, data in m:
                    if data[:1] == b"\x81" and seq == 0:   # binary: CAS and version differ by design
                        packets, rest = parse(data)
                        if not packets:   # the first datagram of a long reply: mask its CAS
                            rest = data[:16] + b"<cas>" + data[24:]
                        data = b"".join(repr(p._replace(cas=int(p.cas != 0))).encode()
                                        for p in packets) + rest
                    t.append((seq, total, reserved, normalise(data)))
        client.close()
        transcripts.append(t)
    diffs = ["datagram %d: memcached %r\n  herdless %r" % (i, a[:3] + (a[3][:80],), b[:3] + (b[3][:80],))
             for i, (a, b) in enumerate(zip(transcripts[0], transcripts[1])) if a != b]
    if len(transcripts[0]) != len(transcripts[1]):
        diffs.append("datagram counts: memcached %d, herdless %d"
                     % (len(transcripts[0]), len(transcripts[1])))
    r.check(not diffs, "UDP replies and their datagram framing as memcached's", "\n".join(diffs[:5]))
    harness.log("udp: %d datagrams compared with memcached" % len(transcripts[0]))
    return ref, ours


def conns_shape(d):
    """`stats conns` with the descriptors and addresses' ports left out: per entry, its fields
    in order with the values that do not depend on the run."""
    entries = {}
    with harness.Conn(d.port) as c:
        c.send(b"stats conns\r\n")
        for line in c.recv_until(b"END\r\n").split(b"\r\n"):
            f = line.split(b" ", 2)
            if len(f) != 3 or f[0] != b"STAT":
                continue
            fd, name = f[1].split(b":", 1)
            value = f[2]
            if name in (b"addr", b"listen_addr"):
                value = value.split(b":")[0]   # tcp / udp / unix
            elif name == b"secs_since_last_cmd":
                value = b"<n>"
            entries.setdefault(int(fd), []).append((name, value))
    return sorted(entries.values())


def udp_checks(r, ref, ours):
    client = Udp(ours.udp_port)
    # A request id is echoed in every datagram of its reply.
    (msg,), = [client.request(b"get big\r\n")]
    r.equal([(seq, total) for _, seq, total, _, _ in msg], [(0, 3), (1, 3), (2, 3)],
            "a 4 KB value comes back in 3 datagrams numbered 0..2 of 3")
    r.check(all(rid == client.rid for rid, _, _, _, _ in msg), "every datagram echoes the request id")
    r.check(all(len(d) <= 1392 for _, _, _, _, d in msg), "no datagram payload over 1392 bytes")
    value = b"".join(d for _, _, _, _, d in msg)
    r.equal(value, b"VALUE big 3 4000\r\n" + bytes(range(250)) * 16 + b"\r\nEND\r\n",
            "the datagrams reassemble the reply")
    # Datagrams memcached drops: too short, or one of several.
    r.equal(client.quiet(b"\x00\x01\x00\x00"), [], "a datagram of 4 bytes is ignored")
    r.equal(client.quiet(struct.pack(">HHHH", 9, 0, 2, 0) + b"get a\r\n"), [],
            "a request that says it spans 2 datagrams is ignored")
    r.equal(client.quiet(b"\x00\x09\x00\x00\x00\x01\x00\x00set x 0 0 10\r\nabc"), [],
            "a request cut off by the end of its datagram is dropped")
    # A value written over UDP is read over TCP.
    client.request(b"set shared 0 0 3\r\nudp\r\n")
    with harness.Conn(ours.port) as c:
        r.equal(c.call(b"get shared\r\n", b"END\r\n"), b"VALUE shared 0 3\r\nudp\r\nEND\r\n",
                "UDP and TCP share the store")
        r.equal(harness.stats(c, b"settings").get("udpport"), "-1",
                "stats settings udpport shows -U as given")
    # Streams over UDP: memcached 1.6.18 starts them and writes them to the unconnected socket,
    # where they are lost (the client gets nothing); herdless answers with an error.
    if harness.target_name() == "herdless":
        for cmd in (b"lru_crawler metadump all\r\n", b"watch\r\n", b"watch fetchers mutations\r\n"):
            (msg,), = [client.request(cmd)]
            r.equal([(seq, total, d) for _, seq, total, _, d in msg],
                    [(0, 1, b"SERVER_ERROR streams not supported over UDP\r\n")],
                    "%r over UDP is refused, not silent" % cmd.strip())
        (msg,), = [client.request(b"lru_crawler metadump 0\r\n")]
        r.equal(msg[0][4], b"BADCLASS invalid class id\r\n", "metadump's own errors come first over UDP")
        (msg,), = [client.request(b"version\r\n")]
        r.check(msg[0][4].startswith(b"VERSION "), "UDP still answers after a refused stream")
    client.close()

    def settled_shape(d):
        # The TCP connections closed above leave `stats conns` once the server has seen their
        # close, which no reply tells: wait until the asking connection is the one TCP client.
        shape = conns_shape(d)
        clients = [e for e in shape if (b"listen_addr", b"tcp") in e]
        return shape if len(clients) == 1 else None
    conns = [harness.wait_for(lambda: settled_shape(d), 10) or conns_shape(d) for d in (ref, ours)]
    r.equal(conns[1], conns[0], "stats conns: the same entries and fields as memcached's "
            "(listener, one UDP socket per worker, this client)")
    for d in (ref, ours):
        r.check(d.alive(), "%s alive after UDP" % d.name)
        d.stop()


# ---------------------------------------------------------------------------- port file

def port_file(r):
    with harness.start_target(["-p", "-1", "-U", "-1"]) as d:
        lines = d.port_file_lines
        r.equal([l.split(":")[0] for l in lines], ["TCP INET", "UDP INET"],
                "the port file lists the TCP and the UDP port, as memcached writes them")
        ports = {l.split(":")[0]: int(l.split(":")[1]) for l in lines}
        r.check(all(p > 0 for p in ports.values()), "ephemeral ports were chosen", repr(ports))
        r.check(not os.path.exists(d.port_file + ".lck"), "the .lck file was renamed")
        with harness.Conn(ports["TCP INET"]) as c:
            r.equal(c.call(b"version\r\n")[:8], b"VERSION ", "TCP answers on the port from the file")
        u = Udp(ports["UDP INET"])
        (msg,), = [u.request(b"version\r\n")]
        r.equal(msg[0][4][:8], b"VERSION ", "UDP answers on the port from the file")
        u.close()


def no_tcp(r):
    """-p 0 disables TCP; with -U it still serves UDP."""
    with harness.start_target(["-p", "0", "-U", "-1"]) as d:
        r.equal([l.split(":")[0] for l in d.port_file_lines], ["UDP INET"], "-p 0: no TCP listener")


# ---------------------------------------------------------------------------- unix sockets

def unix_socket(r):
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)   # -u nobody creates (and replaces, and removes) the socket
        path = os.path.join(tmp, "herdless.sock")
        # A stale socket file left by a crashed server is replaced.
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(path)
        stale.close()
        d = harness.start_herdless(["-s", path, "-a", "766"], unix_socket=path)
        mode = stat_module.S_IMODE(os.stat(path).st_mode)
        r.equal(oct(mode), oct(0o766), "-a 766 sets the socket file's permissions")
        client = Client(path, connect_timeout=harness.TIMEOUT, timeout=harness.TIMEOUT,
                        default_noreply=False)
        r.equal(client.set("k", b"over unix"), True, "pymemcache set over the unix socket")
        r.equal(client.get("k"), b"over unix", "pymemcache get over the unix socket")
        r.equal(client.get_many(["k", "nothere"]), {"k": b"over unix"}, "get_many over unix")
        r.equal(client.incr("n", 1), None, "incr of a missing key")
        settings = client.stats("settings")
        r.equal(settings.get(b"domain_socket"), path.encode(), "stats settings domain_socket")
        r.equal(settings.get(b"umask"), 0o766, "stats settings umask (pymemcache reads it as octal)")
        client.close()
        with BinConn(path) as b:
            r.equal(b.call(bin_get("k", 1)).value, b"over unix",
                    "binary protocol over the unix socket")
        with harness.Conn(path) as u:
            reply = u.call(b"stats conns\r\n", b"END\r\n")
        # memcached keeps no peer address for a unix-socket client: conn_to_str prints "?:<AF 0>".
        r.check(b":addr ?:<AF 0>\r\n" in reply and
                (b":listen_addr unix:" + path.encode() + b"\r\n") in reply,
                "stats conns shows a unix-socket client as memcached does", reply)
        d.stop()
        r.check(not os.path.exists(path), "the socket file is removed at exit")


# ---------------------------------------------------------------------------- -M

def no_evictions(r):
    with harness.start_target(["-M", "-m", "8"]) as d:
        value = b"e" * 10000
        refused = None
        stored = 0
        with harness.Conn(d.port) as c:
            for i in range(3000):
                reply = c.call(b"set ev%d 0 0 %d\r\n%s\r\n" % (i, len(value), value))
                if reply != b"STORED\r\n":
                    refused = reply
                    break
                stored += 1
            r.equal(refused, b"SERVER_ERROR out of memory storing object\r\n",
                    "-M: a set into a full cache is refused (after %d sets)" % stored)
            r.equal(c.call(b"get ev0\r\n", b"END\r\n"),
                    b"VALUE ev0 0 10000\r\n" + value + b"\r\nEND\r\n", "-M: the oldest item is kept")
            r.equal(harness.stat(c, b"evictions"), 0, "-M: evictions stays 0")
            c.send(b"stats settings\r\n")
            r.check(b"STAT evictions off\r\n" in c.recv_until(b"END\r\n"),
                    "stats settings: evictions off")
        with BinConn(d.port) as b:
            resp = b.call(bin_set("evbin", value))
            r.equal((resp.status, resp.value), (0x82, b"Out of memory allocating item"),
                    "-M: a binary Set into a full cache is Out of memory")
            r.equal(b.call(packet("DELETE", "ev0")).status, 0, "a delete makes room")
            r.equal(b.call(bin_set("evbin", value)).status, 0, "and the next Set is stored")


MEMLOCK_ONE_RING = ["prlimit", "--memlock=409600:409600"]   # room for about one ring of four


def serves_on(r, d, what):
    """A set and a get on daemon `d` work; returns its `stats settings` io."""
    with harness.Conn(d.port) as c:
        r.equal(c.call(b"set k 0 0 1\r\nx\r\n"), b"STORED\r\n", "%s: a set" % what)
        r.equal(c.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 1\r\nx\r\nEND\r\n", "%s: a get" % what)
        return harness.stats(c, b"settings").get("io")


CAP_IPC_LOCK = 14


def has_capability(bit):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def io_rings_before_drop(r):
    """Started as root with -u, the daemon makes its workers' rings before it drops privileges:
    with root's CAP_IPC_LOCK they are charged to no user's RLIMIT_MEMLOCK (the -u user's is shared
    by all its rings; Debian's 8 MB held about 14 daemons of -t 4). With room for about one ring,
    all four workers still get theirs, wherever a daemon without that limit runs on io_uring. The
    user is `daemon`, whom no other test's daemons run as."""
    if os.geteuid() != 0 or shutil.which("prlimit") is None or not has_capability(CAP_IPC_LOCK):
        return
    with harness.start_herdless(["-t", "1", "-o", "io=auto"]) as d:
        available = serves_on(r, d, "io=auto") == "uring"
    with harness.start_herdless(["-u", "daemon", "-t", "4", "-v", "-o", "io=auto"],
                                prefix=MEMLOCK_ONE_RING) as d:
        io = serves_on(r, d, "io=auto, as root with -u, with room for one ring")
    if available:
        r.equal(io, "uring", "stats settings: io uring (every worker's ring made before -u)")


def io_auto_falls_back(r):
    """-o io=auto where a worker's ring cannot be made (io_uring_setup's ENOMEM once the user's
    RLIMIT_MEMLOCK is spent: a daemon started by an ordinary user, here `daemon` with room for
    about one ring) serves on epoll instead of failing to start, and says so in its log."""
    setpriv = ["setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups"]
    if os.geteuid() != 0 or shutil.which("prlimit") is None or shutil.which("setpriv") is None:
        return
    if subprocess.run(setpriv + ["test", "-x", harness.HERDLESS_BIN]).returncode != 0:
        print("io_auto_falls_back: skipped: `daemon` cannot run %s" % harness.HERDLESS_BIN)
        return
    with harness.start_herdless(["-t", "4", "-v", "-o", "io=auto"], prefix=MEMLOCK_ONE_RING + setpriv) as d:
        io = serves_on(r, d, "io=auto without room for rings")
        log = d.log_text()
    r.equal(io, "epoll", "stats settings: io epoll")
    r.check("-o io=auto: io_uring is not available" in log and "using epoll" in log,
            "the log says the rings failed and io=auto took epoll")


def client_states(d, ports):
    """`stats conns`'s state of each client connection whose port is in `ports`, by port."""
    states, addrs = {}, {}
    with harness.Conn(d.port) as c:
        c.send(b"stats conns\r\n")
        for line in c.recv_until(b"END\r\n").split(b"\r\n"):
            f = line.split(b" ")
            if len(f) == 3 and f[0] == b"STAT" and b":" in f[1]:
                fd, name = f[1].split(b":", 1)
                (addrs if name == b"addr" else states if name == b"state" else {})[fd] = f[2]
    by_port = {int(a.rsplit(b":", 1)[1]): states.get(fd) for fd, a in addrs.items() if a.startswith(b"tcp:")}
    return {p: by_port.get(p) for p in ports}


def conn_states(r, ref, ours):
    """A client between a storage command's line (binary: header, extras, key) and its data is in
    conn_nread (t/stats-conns.t 5), one with part of a line in conn_read, as memcached's."""
    seen = []
    for d in (ref, ours):
        pending = [(b"set foo 0 0 6\r\n", "line in, data awaited"), (b"get fo", "part of a line"),
                   (bytes([0x80, 1, 0, 3, 8, 0, 0, 0, 0, 0, 0, 14] + [0] * 12), "a binary header in"),
                   (bytes([0x80, 1, 0, 3, 8, 0, 0, 0, 0, 0, 0, 14] + [0] * 20) + b"key",
                    "a binary Set's header, extras and key in")]
        socks = []
        for data, _ in pending:
            s = socket.create_connection(("127.0.0.1", d.port))
            s.sendall(data)
            socks.append(s)
        ports = [s.getsockname()[1] for s in socks]
        # The server reads each client's bytes in its own time, and both servers show a state
        # for a moment on the way (memcached too: a binary Set's key not yet read is conn_read):
        # wait until every one has left conn_new_cmd/conn_waiting, the states stayed the same for
        # three reads in a row (100 ms) and, for herdless, show memcached's; what the server
        # shows at the bound is kept.
        want = [state for _, state in seen[0]] if seen else None
        last = {"st": None, "same": 0}

        def settled():
            st = client_states(d, ports)
            last["same"] = last["same"] + 1 if st == last["st"] else 1
            last["st"] = st
            if any(v in (None, b"conn_waiting", b"conn_new_cmd") for v in st.values()):
                return None
            if last["same"] < 3:
                return None
            return st if want is None or [st.get(p) for p in ports] == want else None
        states = harness.wait_for(settled, 10) or last.get("st")
        seen.append([(what, (states or {}).get(p)) for (_, what), p in zip(pending, ports)])
        for s in socks:
            s.close()
    r.equal(seen[1], seen[0], "stats conns states of pending requests as memcached's")
    r.equal(seen[1][0][1], b"conn_nread", "a set awaiting its data is conn_nread")


def body(r):
    ref, ours = udp_compare(r)
    conn_states(r, ref, ours)
    udp_checks(r, ref, ours)
    port_file(r)
    no_tcp(r)
    if harness.target_name() == "herdless":
        unix_socket(r)
        io_rings_before_drop(r)
        io_auto_falls_back(r)
    no_evictions(r)


if __name__ == "__main__":
    harness.run("test_transports", body)
