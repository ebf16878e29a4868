"""TLS (-Z) with real clients: pymemcache's tls_context and `openssl s_client` against
certificates made here with `openssl req`; text, meta, lease and binary commands, large values,
pipelines and a parked reader over TLS; a notls: listener beside the TLS one; client
certificates with ssl_verify_mode=3; refresh_certs (a new certificate is seen by the next
handshake, a bad file keeps the old one); memcached's ssl_* `stats settings` compared with
memcached -Z run side by side; hostile clients (hundreds of stalled handshakes, plain text
to the TLS port, TLS to the plain port, garbage after the handshake) while others are served
and memory stays bounded; fail-closed start-up. TEST_AGAINST=memcached runs the checks that
hold for memcached on memcached (it has no handshake timeout, leases or stampede modes).
"""

import os
import shutil
import socket
import ssl
import struct
import subprocess
import time

import certs
import harness
from pymemcache.client.base import Client

HERDLESS = harness.target_name() == "herdless"


class TlsConn(harness.Conn):
    """harness.Conn over TLS."""

    def __init__(self, port, context, timeout=None):
        super().__init__(port, timeout)
        self.sock = context.wrap_socket(self.sock, server_hostname="127.0.0.1")


def start(c, extra_opts="", args=(), plain_port=True):
    """The target with -Z (and a notls: listener on .plain_port)."""
    argv = list(args)
    plain = harness.free_port() if plain_port else None
    if plain:
        argv += ["-l", "notls:127.0.0.1:%d" % plain]
    daemon = harness.start_target(c.server_args(extra=extra_opts) + argv)
    daemon.plain_port = plain
    return daemon


def settings_lines(conn, prefix):
    conn.send(b"stats settings\r\n")
    reply = conn.recv_until(b"END\r\n")
    return [l for l in reply.split(b"\r\n") if l.startswith(b"STAT " + prefix)]


def basic_commands(r, c, daemon):
    ctx = c.client_context()
    client = Client(("127.0.0.1", daemon.port), tls_context=ctx, connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)
    r.check(client.set("greeting", b"hello over tls"), "pymemcache tls_context: set")
    r.equal(client.get("greeting"), b"hello over tls", "pymemcache tls_context: get")
    big = os.urandom(700 * 1024)
    r.check(client.set("big", big), "a 700 KB value is stored over TLS")
    r.equal(client.get("big"), big, "and read back intact (many records)")
    r.equal(client.incr("n", 1), None, "incr of a missing key")
    client.set("n", b"41")
    r.equal(client.incr("n", 1), 42, "incr over TLS")
    many = {"k%d" % i: b"v%d" % i for i in range(200)}
    client.set_many(many)
    r.equal(client.get_many(list(many)), many, "set_many/get_many of 200 keys over TLS")
    client.close()

    with TlsConn(daemon.port, ctx) as conn:
        pipeline = b"".join(b"set p%d 0 0 %d\r\n%s\r\n" % (i, len(b"%d" % i), b"%d" % i)
                            for i in range(300))
        pipeline += b"".join(b"get p%d\r\n" % i for i in range(300))
        conn.send(pipeline)
        stored = [conn.recv_line() for _ in range(300)]
        r.equal(set(stored), {b"STORED\r\n"}, "300 pipelined sets in one TLS write")
        values = [conn.recv_until(b"END\r\n") for _ in range(300)]
        r.equal(values[299], b"VALUE p299 0 3\r\n299\r\nEND\r\n", "and 300 pipelined gets, in order")
        r.equal(conn.call(b"ms meta 2 T0\r\nhi\r\nmg meta v\r\n", b"VA 2\r\nhi\r\n"),
                b"HD\r\nVA 2\r\nhi\r\n", "meta commands over TLS")
        r.equal(conn.call(b"version\r\n")[:8], b"VERSION ", "version over TLS")
        if HERDLESS:
            # Requests that arrive in the same TLS record as the end of a large value sit
            # decrypted inside OpenSSL, where no socket event announces them. memcached
            # 1.6.18 leaves them there until the client sends more (this hangs it).
            value = b"x" * 100000
            conn.send(b"set large 0 0 %d\r\n%s\r\nget large\r\nmn\r\n" % (len(value), value))
            r.equal(conn.recv_line(), b"STORED\r\n", "a 100 KB set in one TLS write")
            r.equal(conn.recv_until(b"MN\r\n"),
                    b"VALUE large 0 100000\r\n%s\r\nEND\r\nMN\r\n" % value,
                    "the requests after it in the same record are answered")
            reply = conn.call(b"lease-get lk\r\n", b"END\r\n")
            r.check(reply.startswith(b"LVALUE lk ") or reply.startswith(b"VALUE"),
                    "lease-get over TLS answers a lease", repr(reply))

    # The binary protocol over TLS (memcached's -B auto picks it from the first byte).
    with TlsConn(daemon.port, ctx) as conn:
        key, value = b"bin", os.urandom(40000)
        setreq = struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), 8, 0, 0, 8 + len(key) + len(value),
                             7, 0) + struct.pack(">II", 0xABCD, 0) + key + value
        getreq = struct.pack(">BBHBBHIIQ", 0x80, 0x0c, len(key), 0, 0, 0, len(key), 8, 0) + key
        # Pipelined in one write, for herdless; memcached 1.6.18 stalls on the GetK that
        # shares a TLS record with the end of the value (see below), so it gets them apart.
        conn.send(setreq + getreq if HERDLESS else setreq)
        header = conn.recv_exact(24)
        r.equal((header[0], header[1], header[6:8]), (0x81, 0x01, b"\0\0"), "binary Set over TLS")
        conn.recv_exact(struct.unpack(">I", header[8:12])[0])
        if not HERDLESS:
            conn.send(getreq)
        header = conn.recv_exact(24)
        body = conn.recv_exact(struct.unpack(">I", header[8:12])[0])
        r.equal((header[1], header[6:8], body[:4], body[4:7], body[7:]),
                (0x0c, b"\0\0", struct.pack(">I", 0xABCD), key, value),
                "binary GetK over TLS returns flags, key and the 40 KB value")

    # openssl s_client, the tool operators reach for.
    proc = subprocess.run(["openssl", "s_client", "-quiet", "-connect", "127.0.0.1:%d" % daemon.port,
                           "-CAfile", c.path("ca.pem"), "-verify_return_error"],
                          input=b"get greeting\r\nquit\r\n", capture_output=True,
                          timeout=harness.TIMEOUT * 2)
    r.check(b"VALUE greeting 0 14\r\nhello over tls\r\nEND\r\n" in proc.stdout,
            "openssl s_client reads a value (certificate verified against the CA)",
            repr(proc.stdout[-300:]) + repr(proc.stderr[-300:]))

    with harness.Conn(daemon.plain_port) as plain:
        r.equal(plain.call(b"get greeting\r\n", b"END\r\n"),
                b"VALUE greeting 0 14\r\nhello over tls\r\nEND\r\n",
                "the notls: listener serves plain text beside the TLS one")


def parked_reader(r, c):
    """Classic wait mode over TLS: a reader parks on a lease and is woken by the set."""
    daemon = start(c, args=["-o", "classic_stampede=wait,lease_timeout=10"])
    ctx = c.client_context()
    with TlsConn(daemon.port, ctx) as holder, TlsConn(daemon.port, ctx) as waiter:
        r.equal(holder.call(b"get hot\r\n", b"END\r\n"), b"END\r\n", "the first reader wins the lease")
        waiter.send(b"get hot\r\n")
        time.sleep(0.2)  # not for correctness: the waiter's reply must come after the set either way
        r.equal(holder.call(b"set hot 0 0 5\r\nfresh\r\n"), b"STORED\r\n", "the holder sets")
        r.equal(waiter.recv_until(b"END\r\n"), b"VALUE hot 0 5\r\nfresh\r\nEND\r\n",
                "the parked TLS reader is woken with the value")
    daemon.stop()


def peer_der(port, ctx):
    with socket.create_connection(("127.0.0.1", port), timeout=harness.TIMEOUT) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.getpeercert(binary_form=True)


def der_of(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def refresh_certs(r, c):
    # The daemon reads copies, so the test can replace them.
    live = certs.Certs.__new__(certs.Certs)
    live.dir = c.dir
    chain = c.path("live-chain.pem")
    key = c.path("live-key.pem")
    shutil.copy(c.path("server.pem"), chain)
    shutil.copy(c.path("server.key"), key)
    daemon = harness.start_target(["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (chain, key),
                                   "-l", "notls:127.0.0.1:%d" % harness.free_port()])
    ctx = c.client_context()
    r.equal(peer_der(daemon.port, ctx), der_of(c.path("server.pem")), "first certificate served")
    with TlsConn(daemon.port, ctx) as admin:
        r.check(admin.call(b"set keep 0 0 1\r\nk\r\n") == b"STORED\r\n", "a connection before the refresh")
        shutil.copy(c.path("server2.pem"), chain)
        shutil.copy(c.path("server2.key"), key)
        r.equal(admin.call(b"refresh_certs\r\n"), b"OK\r\n", "refresh_certs answers OK")
        r.equal(peer_der(daemon.port, ctx), der_of(c.path("server2.pem")),
                "the next handshake presents the new certificate")
        r.equal(admin.call(b"get keep\r\n", b"END\r\n"), b"VALUE keep 0 1\r\nk\r\nEND\r\n",
                "the open connection keeps working")
        with open(chain, "w") as f:
            f.write("not a certificate\n")
        reply = admin.call(b"refresh_certs\r\n")
        r.check(reply.startswith(b"Error loading the certificate chain: " + chain.encode()),
                "a bad file: refresh_certs answers memcached's error", repr(reply))
        r.equal(peer_der(daemon.port, ctx), der_of(c.path("server2.pem")),
                "and the certificate in use stays the last good one")
        shutil.copy(c.path("server2.pem"), chain)
        shutil.copy(c.path("server.key"), key)  # a key that does not match
        reply = admin.call(b"refresh_certs noreply\r\n")
        r.check(reply.startswith(b"Error"), "a mismatched key is refused (noreply hides only OK)",
                repr(reply))
        r.equal(peer_der(daemon.port, ctx), der_of(c.path("server2.pem")),
                "still the last good certificate")
    daemon.stop()


def verify_mode_3(r, c):
    daemon = start(c, "ssl_verify_mode=3,ssl_ca_cert=%s" % c.path("ca.pem"))
    with TlsConn(daemon.port, c.client_context(with_cert=True)) as conn:
        r.equal(conn.call(b"set v 0 0 1\r\n1\r\n"), b"STORED\r\n",
                "ssl_verify_mode=3: a client with a certificate signed by ssl_ca_cert is served")
    refused = False
    try:
        with TlsConn(daemon.port, c.client_context()) as conn:
            # TLS 1.3 reports the server's refusal at the first read.
            refused = conn.call(b"get v\r\n", b"END\r\n") is None
    except (ssl.SSLError, EOFError, ConnectionError, TimeoutError, OSError):
        refused = True
    r.check(refused, "a client without a certificate is refused")
    with harness.Conn(daemon.plain_port) as plain:
        # The server counts the failed handshake once OpenSSL's call that sent the client its
        # alert returns: the client may see the refusal first.
        errors = harness.wait_for_stat(plain, b"ssl_handshake_errors", lambda n: n >= 1)
        r.check(errors is not None and errors >= 1, "the refusal counts in ssl_handshake_errors",
                repr(errors))
        r.equal(settings_lines(plain, b"ssl_verify_mode"), [b"STAT ssl_verify_mode 7"],
                "stats settings ssl_verify_mode shows memcached's flag value")
    daemon.stop()


def settings_like_memcached(r, c):
    if not HERDLESS or not os.access(harness.MEMCACHED_BIN, os.X_OK):
        return
    opts = "ssl_min_version=3,ssl_session_cache,ssl_ciphers=HIGH,ssl_ca_cert=%s" % c.path("ca.pem")
    found = {}
    for name, starter in (("herdless", harness.start_herdless), ("memcached", harness.start_memcached)):
        plain = harness.free_port()
        d = starter(c.server_args(extra=opts) + ["-l", "notls:127.0.0.1:%d" % plain])
        with TlsConn(d.port, c.client_context()) as conn:
            conn.call(b"version\r\n")
            found[name] = settings_lines(conn, b"ssl_")
            found[name + " sessions"] = harness.stat(conn, b"ssl_new_sessions")
            found[name + " refresh"] = harness.stat(conn, b"time_since_server_cert_refresh")
        d.stop()
    herdless_lines = [l for l in found["herdless"] if not l.startswith(b"STAT ssl_handshake_timeout")]
    r.equal(herdless_lines, found["memcached"], "stats settings ssl_* as memcached -Z prints them")
    r.check(found["herdless sessions"] is not None and found["herdless sessions"] >= 1,
            "ssl_new_sessions counts with ssl_session_cache (memcached: %r)"
            % found["memcached sessions"], repr(found["herdless sessions"]))
    r.check(found["herdless refresh"] is not None, "time_since_server_cert_refresh is shown")


def client_hello():
    """The first bytes a real TLS client sends."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def hostile(r, c):
    timeout_opt = "ssl_handshake_timeout=2" if HERDLESS else ""
    daemon = start(c, timeout_opt, args=["-c", "2048"])
    ctx = c.client_context()
    hello = client_hello()
    plain = harness.Conn(daemon.plain_port)
    before = harness.stat(plain, b"ssl_handshake_errors")
    base_conns = harness.stat(plain, b"curr_connections")
    rss_before = daemon.rss_bytes()

    stalled = []
    for i in range(300):
        s = socket.create_connection(("127.0.0.1", daemon.port), timeout=harness.TIMEOUT)
        if i % 3 == 1:
            s.sendall(hello[: len(hello) // 2])  # half a ClientHello, then silence
        elif i % 3 == 2:
            s.sendall(b"\x16\x03\x01\xff\xff" + b"\0" * 64)  # a record header promising 64 KB
        stalled.append(s)
    with TlsConn(daemon.port, ctx) as conn:
        r.equal(conn.call(b"set during 0 0 2\r\nok\r\nget during\r\n", b"END\r\n"),
                b"STORED\r\nVALUE during 0 2\r\nok\r\nEND\r\n",
                "300 stalled handshakes: a real TLS client is still served")
    r.equal(plain.call(b"get during\r\n", b"END\r\n"), b"VALUE during 0 2\r\nok\r\nEND\r\n",
            "and the plain listener too")

    # Plain text to the TLS port: the handshake fails, the connection closes.
    with harness.Conn(daemon.port) as wrong:
        wrong.send(b"get during\r\n")
        try:
            got = wrong.recv_until_eof()
        except (TimeoutError, ConnectionError):
            got = b"<no close>"
        r.check(b"VALUE" not in got and got != b"<no close>",
                "plain text to the TLS port is closed without a reply", repr(got[:100]))
    # TLS to the plain port: garbage lines, the server answers errors or closes, and lives.
    try:
        with TlsConn(daemon.plain_port, ctx, timeout=2) as wrong:
            wrong.call(b"version\r\n")
        r.check(False, "a TLS handshake with the plain port cannot succeed")
    except (ssl.SSLError, EOFError, ConnectionError, TimeoutError, OSError):
        r.check(True, "a TLS handshake with the plain port fails")
    # Garbage after a completed handshake: that connection closes, nobody else notices.
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=harness.TIMEOUT) as raw:
        tls = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        tls.sendall(b"set g 0 0 1\r\n1\r\n")
        r.equal(tls.recv(100), b"STORED\r\n", "a TLS client authenticated the server and wrote")
        raw_fd = socket.socket(fileno=os.dup(tls.fileno()))
        raw_fd.sendall(b"\x17\x03\x03\x00\x20" + os.urandom(32))  # a forged application record
        raw_fd.settimeout(harness.TIMEOUT)
        try:
            rest = raw_fd.recv(1000)
            while rest:
                rest = raw_fd.recv(1000)
            closed = True
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        raw_fd.close()
        r.check(closed, "a forged record after the handshake closes that connection")

    errors_now = harness.wait_for_stat(plain, b"ssl_handshake_errors", lambda n: n > before)
    r.check(errors_now is not None and errors_now > before,
            "failed handshakes count in ssl_handshake_errors", "%r -> %r" % (before, errors_now))
    rss_growth = daemon.rss_bytes() - rss_before
    r.check(rss_growth < 64 * 1024 * 1024, "300 stalled handshakes cost bounded memory",
            "RSS grew %d bytes" % rss_growth)

    if HERDLESS:
        # The handshake timeout frees every stalled slot (the clients never close).
        conns = harness.wait_for_stat(plain, b"curr_connections", lambda n: n <= base_conns,
                                      20 * (3 if harness.SANITIZED else 1))
        r.check(conns is not None and conns <= base_conns,
                "ssl_handshake_timeout closes stalled handshakes", "curr_connections %r (base %r)"
                % (conns, base_conns))
        errors_after = harness.stat(plain, b"ssl_handshake_errors")
        r.check(errors_after - before >= 300, "each timed-out handshake is counted",
                "%r -> %r" % (before, errors_after))
    for s in stalled:
        s.close()
    with TlsConn(daemon.port, ctx) as conn:
        r.equal(conn.call(b"get g\r\n", b"END\r\n"), b"VALUE g 0 1\r\n1\r\nEND\r\n",
                "the server still serves TLS clients after all of it")
    plain.close()
    daemon.stop()


def fails_closed(r, c):
    if not HERDLESS:
        return
    bad = c.path("not-a-cert.pem")
    with open(bad, "w") as f:
        f.write("garbage\n")
    cases = [
        (["-Z"], b"ssl_chain_cert"),
        (["-Z", "-o", "ssl_chain_cert=/nonexistent/cert.pem"], b"Error loading the certificate chain"),
        (["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (bad, c.path("server.key"))],
         b"Error loading the certificate chain"),
        (["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (c.path("server.pem"), c.path("client.key"))],
         b"Error loading the key"),
        (c.server_args(extra="ssl_ca_cert=/nonexistent/ca.pem"), b"Error loading the CA certificate"),
        (c.server_args(extra="ssl_ciphers=NO-SUCH-CIPHER"), b"Error setting the provided cipher(s)"),
    ]
    for args, message in cases:
        harness.check_refuses_to_start(r, args, message, " ".join(args[:3])[-60:])


def body(r):
    c = certs.Certs()
    fails_closed(r, c)
    daemon = start(c)
    basic_commands(r, c, daemon)
    daemon.stop()
    if HERDLESS:
        parked_reader(r, c)
    refresh_certs(r, c)
    verify_mode_3(r, c)
    settings_like_memcached(r, c)
    hostile(r, c)


if __name__ == "__main__":
    harness.run("test_tls", body)
