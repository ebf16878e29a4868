"""Binary SASL (-S), as memcached 1.6.18: pylibmc (binary=True, username/password)
authenticates with PLAIN against the user:password file MEMCACHED_SASL_PWDB names; a wrong
password fails; before authentication every binary command but List Mechanisms, Auth, Step
and Version is answered "Auth failure." and the connection closed, and nothing changes;
auth_cmds/auth_errors count; SASL over TLS; a missing database stops the daemon at start.
The raw exchanges are compared byte for byte with Debian's memcached -S run side by side
(which, built without memcached's own password file, reads a Cyrus sasldb made here with
saslpasswd2, when sasl2-bin is installed).
"""

import os
import shutil
import struct
import subprocess
import tempfile

import binproto
import certs
import harness
import pylibmc

HERDLESS = harness.target_name() == "herdless"
SASL_LIST_MECHS, SASL_AUTH, SASL_STEP = 0x20, 0x21, 0x22
GET, SET, DELETE, FLUSH, NOOP, VERSION, STAT, QUIT, GETQ, INCR = (
    0x00, 0x01, 0x04, 0x08, 0x0a, 0x0b, 0x10, 0x07, 0x09, 0x05)


def packet(op, key=b"", extras=b"", value=b"", opaque=0x11223344):
    return binproto.packet(op, key, extras, value, opaque=opaque)


def plain(user, password, authzid=b""):
    return authzid + b"\0" + user + b"\0" + password


def reply(conn):
    """One binary response packet (header and body), or b"" at EOF."""
    try:
        header = conn.recv_exact(24)
    except EOFError:
        return b""
    return header + conn.recv_exact(struct.unpack(">I", header[8:12])[0])


def status(packet_bytes):
    return struct.unpack(">H", packet_bytes[6:8])[0] if packet_bytes else None


class Setup:
    """The password database for herdless and, if saslpasswd2 exists, a Cyrus sasldb and
    SASL config for memcached, with the same users."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="herdless-sasl-")
        os.chmod(self.dir, 0o755)
        self.pwdb = os.path.join(self.dir, "pwdb")
        with open(self.pwdb, "w") as f:
            f.write("alice:s3cret\nbob:hunter2:more fields\n")
        os.chmod(self.pwdb, 0o644)
        self.memcached_env = None
        if shutil.which("saslpasswd2") and os.access(harness.MEMCACHED_BIN, os.X_OK):
            sasldb = os.path.join(self.dir, "sasldb2")
            for user, password in (("alice", "s3cret"), ("bob", "hunter2")):
                subprocess.run(["saslpasswd2", "-p", "-f", sasldb, "-a", "memcached", "-c", user],
                               input=password.encode(), check=True, capture_output=True)
            os.chmod(sasldb, 0o644)
            with open(os.path.join(self.dir, "memcached.conf"), "w") as f:
                f.write("mech_list: plain\nsasldb_path: %s\n" % sasldb)
            os.chmod(os.path.join(self.dir, "memcached.conf"), 0o644)
            self.memcached_env = {"SASL_CONF_PATH": self.dir}

    def start(self, name, args=()):
        os.environ["MEMCACHED_SASL_PWDB"] = self.pwdb
        if name == "memcached":
            os.environ.update(self.memcached_env)
            return harness.start_memcached(["-S"] + list(args))
        return harness.start_herdless(["-S"] + list(args))

    def close(self):
        shutil.rmtree(self.dir, True)


# Each exchange: requests sent one at a time on a fresh connection, every reply kept (b"" once
# the server has closed). Both servers must answer them with the same bytes.
EXCHANGES = {
    "list mechanisms after authenticating drops it": [
        packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret")), packet(NOOP),
        packet(SASL_LIST_MECHS), packet(NOOP)],
    "list mechanisms, then a refused get closes": [
        packet(SASL_LIST_MECHS), packet(GET, b"k"), packet(NOOP)],
    "version is allowed before authentication": [packet(VERSION), packet(NOOP)],
    "PLAIN in one step, then commands": [
        packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret")),
        packet(SET, b"k", struct.pack(">II", 5, 0), b"value"), packet(GET, b"k")],
    "PLAIN in two steps": [
        packet(SASL_AUTH, b"PLAIN"), packet(SASL_STEP, b"PLAIN", value=plain(b"bob", b"hunter2")),
        packet(NOOP)],
    "failures keep the connection unauthenticated": [
        packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"wrong")),
        packet(SASL_STEP, b"PLAIN", value=plain(b"alice", b"s3cret")),
        packet(SASL_AUTH, b"CRAM-MD5", value=b"x"),
        packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret", b"bob")),
        packet(SASL_AUTH, b"PLAIN", value=plain(b"mallory", b"s3cret")),
        packet(SASL_AUTH, b"PLAIN", value=plain(b"bob", b"hunter2:more fields")),
        packet(FLUSH)],
    "a second Auth fails and leaves the connection unauthenticated": [
        packet(SASL_AUTH, b"PLAIN", value=b"alice" + plain(b"alice", b"s3cret")),
        packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret")), packet(NOOP)],
}
REFUSED = [GET, GETQ, SET, DELETE, FLUSH, NOOP, STAT, QUIT, INCR]


def run_exchange(port, requests):
    out = []
    with harness.Conn(port) as conn:
        for req in requests:
            conn.send(req)
            got = reply(conn)
            out.append(got)
            if not got:
                break
    return out


def comparable(replies):
    """Replies with the CAS field zeroed and Version's text and length dropped (each
    server's own)."""
    out = []
    for p in replies:
        if len(p) >= 24:
            if p[1] == VERSION:
                p = p[:8] + b"\0" * 4 + p[12:24] + b"<version>"
            p = p[:16] + b"\0" * 8 + p[24:]
        out.append(p)
    return out


def exchanges(r, daemon, reference):
    for name, requests in EXCHANGES.items():
        got = run_exchange(daemon.port, requests)
        if reference is not None:
            r.equal(comparable(got), comparable(run_exchange(reference.port, requests)),
                    "as memcached: " + name)
        else:
            r.check(len(got) > 0 and all(got[:-1]), name, repr(got))
    # Every kind of command before authentication: refused, closed, nothing changed.
    for op in REFUSED:
        req = packet(op, b"k", struct.pack(">II", 0, 0) if op == SET else b"", b"x" if op == SET else b"")
        if op == INCR:
            req = packet(op, b"k", struct.pack(">QQI", 1, 0, 0))
        got = run_exchange(daemon.port, [req, packet(NOOP)])
        r.equal([status(g) for g in got], [0x20, None],
                "opcode 0x%02x before authentication: Auth failure., then closed" % op)
    with harness.Conn(daemon.port) as conn:
        conn.send(packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret")))
        r.equal(status(reply(conn)), 0, "an authenticated connection")
        conn.send(packet(GET, b"k"))
        got = reply(conn)
        r.check(got.endswith(b"value"), "the key set by the exchange above is unchanged", repr(got))


def pylibmc_clients(r, daemon):
    good = pylibmc.Client(["127.0.0.1:%d" % daemon.port], binary=True, username="alice",
                          password="s3cret")
    r.check(good.set("py", "lib"), "pylibmc binary with username/password: set")
    r.equal(good.get("py"), "lib", "and get")
    r.equal(good.incr("n", 1) if good.add("n", "41") else None, 42, "add and incr")
    bad = pylibmc.Client(["127.0.0.1:%d" % daemon.port], binary=True, username="alice",
                         password="wrong")
    try:
        bad.set("py", "changed")
        r.check(False, "pylibmc with a wrong password is refused")
    except pylibmc.Error as e:
        r.check("AUTH" in str(e).upper(), "pylibmc with a wrong password is refused", str(e))
    r.equal(good.get("py"), "lib", "and changed nothing")
    # libmemcached keeps only the stats it knows: read them as packets.
    stats = binary_stats(daemon.port)
    r.check(int(stats.get(b"auth_cmds", 0)) >= 2 and int(stats.get(b"auth_errors", 0)) >= 1,
            "stats auth_cmds and auth_errors count SASL",
            repr((stats.get(b"auth_cmds"), stats.get(b"auth_errors"))))
    settings = binary_stats(daemon.port, b"settings")
    r.equal(settings.get(b"auth_enabled_sasl"), b"yes", "stats settings auth_enabled_sasl yes")
    r.equal(settings.get(b"binding_protocol"), b"binary", "-S speaks binary")


def binary_stats(port, group=b""):
    """A STAT group over an authenticated binary connection, as a dict."""
    out = {}
    with harness.Conn(port) as conn:
        conn.send(packet(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"s3cret")) + packet(STAT, group))
        reply(conn)
        while True:
            p = reply(conn)
            keylen = struct.unpack(">H", p[2:4])[0]
            if not p or keylen == 0:
                return out
            out[p[24:24 + keylen]] = p[24 + keylen:]


def over_tls(r, setup):
    c = certs.Certs()
    daemon = setup.start("herdless", c.server_args())
    with harness.Conn(daemon.port) as raw:
        raw.sock = c.client_context().wrap_socket(raw.sock, server_hostname="127.0.0.1")
        raw.send(packet(SASL_AUTH, b"PLAIN", value=plain(b"bob", b"hunter2")))
        r.equal(status(reply(raw)), 0, "SASL PLAIN over TLS")
        raw.send(packet(VERSION))
        r.equal(status(reply(raw)), 0, "then commands over TLS")
    daemon.stop()


def fails_closed(r, setup):
    env = dict(os.environ)
    env.pop("MEMCACHED_SASL_PWDB", None)
    for extra_env, message in (({}, b"MEMCACHED_SASL_PWDB"),
                               ({"MEMCACHED_SASL_PWDB": "/nonexistent/pwdb"},
                                b"Could not open SASL password database")):
        harness.check_refuses_to_start(r, ["-S"], message, "-S", env=dict(env, **extra_env))


def body(r):
    setup = Setup()
    try:
        if HERDLESS:
            fails_closed(r, setup)
        daemon = setup.start(harness.target_name())
        reference = None
        if HERDLESS and setup.memcached_env:
            reference = setup.start("memcached")
        elif HERDLESS:
            harness.log("saslpasswd2 not found: no side-by-side comparison with memcached")
        exchanges(r, daemon, reference)
        pylibmc_clients(r, daemon)
        daemon.stop()
        if reference:
            reference.stop()
        if HERDLESS:
            over_tls(r, setup)
    finally:
        setup.close()


if __name__ == "__main__":
    harness.run("test_sasl", body)
