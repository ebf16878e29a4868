"""ASCII authentication (-Y), as memcached 1.6.18: before a connection authenticates
(`set <any> <any> <any> <len>` with "<user> <password>" as data, answered STORED), every
command kind is answered CLIENT_ERROR unauthenticated and changes nothing (checked from a
second, authenticated connection); a wrong password is CLIENT_ERROR authentication failure;
auth_cmds and auth_errors count; pymemcache authenticates with a plain set; -Y over TLS;
SIGHUP re-reads the file; a missing or empty file stops the daemon at start. TEST_AGAINST=memcached runs the shared
checks on memcached (which answers only the first of several pipelined refused lines, and
starts with an empty file).
"""

import os
import signal
import tempfile

import certs
import harness
from pymemcache.client.base import Client

HERDLESS = harness.target_name() == "herdless"


def auth_file(text):
    f = tempfile.NamedTemporaryFile("w", prefix="herdless-auth-", delete=False)
    f.write(text)
    f.close()
    os.chmod(f.name, 0o644)
    return f.name


def login(conn, user=b"alice", password=b"s3cret"):
    payload = user + b" " + password
    return conn.call(b"set auth 0 0 %d\r\n%s\r\n" % (len(payload), payload))


# Every command kind, one line at a time (a data block is sent as a line of its own, and
# is refused as a line too). Each must be refused and change nothing.
REFUSED = [
    b"get victim", b"gets victim", b"gat 0 victim", b"gats 0 victim", b"touch victim 10",
    b"add fresh 0 0 1", b"x", b"replace victim 0 0 1", b"y", b"append victim 0 0 1", b"z",
    b"prepend victim 0 0 1", b"w", b"cas victim 0 0 1 1", b"v", b"delete victim",
    b"incr counter 5", b"decr counter 5", b"flush_all", b"flush_all 0", b"stats",
    b"stats settings", b"stats items", b"stats slabs", b"stats conns", b"stats reset",
    b"version", b"verbosity 2", b"mn", b"mg victim v", b"ms victim 1", b"q", b"md victim",
    b"ma counter", b"me victim", b"lease-get victim", b"lease-set victim 1 0 0 1", b"l",
    b"watch", b"lru_crawler metadump all", b"lru_crawler crawl all", b"shutdown",
    b"cache_memlimit 100", b"refresh_certs", b"quit", b"set only four words",
    b"set victim 0 0 notanumber", b"\x16\x03\x01\x02\x00", b"",
]


def everything_refused(r, daemon):
    with harness.Conn(daemon.port) as admin, harness.Conn(daemon.port) as intruder:
        r.equal(login(admin), b"STORED\r\n", "alice authenticates with her password")
        r.equal(admin.call(b"set victim 0 0 8\r\noriginal\r\n"), b"STORED\r\n",
                "an authenticated set")
        admin.call(b"set counter 0 0 2\r\n10\r\n")
        before_items = harness.stat(admin, b"curr_items")
        before_cmds = harness.stat(admin, b"auth_cmds")
        replies = []
        for line in REFUSED:
            replies.append(intruder.call(line + b"\r\n"))
        bad = [(l, rep) for l, rep in zip(REFUSED, replies) if rep != b"CLIENT_ERROR unauthenticated\r\n"]
        r.equal(bad, [], "%d command lines before authentication: each CLIENT_ERROR unauthenticated"
                % len(REFUSED))
        r.equal(admin.call(b"gets victim\r\n", b"END\r\n")[:len(b"VALUE victim 0 8 ")],
                b"VALUE victim 0 8 ", "the victim key is still there")
        r.equal(admin.call(b"get victim counter\r\n", b"END\r\n"),
                b"VALUE victim 0 8\r\noriginal\r\nVALUE counter 0 2\r\n10\r\nEND\r\n",
                "unchanged: no flush, no update, no incr, no delete")
        r.equal(admin.call(b"get fresh\r\n", b"END\r\n"), b"END\r\n", "no add happened")
        r.equal(harness.stat(admin, b"curr_items"), before_items, "curr_items unchanged")
        r.equal(harness.stat(admin, b"auth_cmds"), before_cmds, "refused lines are not auth_cmds")
        settings = admin.call(b"stats settings\r\n", b"END\r\n")
        r.check(b"STAT verbosity 0\r\n" in settings, "verbosity unchanged")
        r.check(b"STAT auth_enabled_ascii " in settings and b"STAT auth_enabled_ascii no" not in settings,
                "stats settings auth_enabled_ascii names the file")
        r.check(daemon.alive(), "shutdown before auth did nothing")

        # Wrong credentials.
        r.equal(login(intruder, b"alice", b"wrong"), b"CLIENT_ERROR authentication failure\r\n",
                "a wrong password")
        r.equal(login(intruder, b"mallory", b"s3cret"), b"CLIENT_ERROR authentication failure\r\n",
                "an unknown user")
        r.equal(login(intruder, b"alice", b"s3cret2"), b"CLIENT_ERROR authentication failure\r\n",
                "a password with the right prefix")
        r.equal(intruder.call(b"set a 0 0 5\r\nalice\r\n"),
                b"CLIENT_ERROR bad authentication token format\r\n", "a token without a password")
        r.equal(intruder.call(b"get victim\r\n"), b"CLIENT_ERROR unauthenticated\r\n",
                "still unauthenticated after failures")
        r.equal(harness.stat(admin, b"auth_cmds") - before_cmds, 3, "auth_cmds counts attempts")
        r.check(harness.stat(admin, b"auth_errors") >= 3, "auth_errors counts failures")

        if HERDLESS:
            # Pipelined after a failed auth: every line answered in order, none executed.
            intruder.send(b"set a 0 0 10\r\nbob wrong1\r\nget victim\r\ndelete victim\r\n"
                          b"set victim 0 0 1\r\nX\r\nflush_all\r\n")
            got = [intruder.recv_line() for _ in range(5)]
            r.equal(got, [b"CLIENT_ERROR authentication failure\r\n",
                          b"CLIENT_ERROR unauthenticated\r\n", b"CLIENT_ERROR unauthenticated\r\n",
                          b"CLIENT_ERROR bad authentication token format\r\n",
                          b"CLIENT_ERROR unauthenticated\r\n"],
                    "pipelined commands after a failed auth are each refused")
            r.equal(admin.call(b"get victim\r\n", b"END\r\n"),
                    b"VALUE victim 0 8\r\noriginal\r\nEND\r\n", "and changed nothing")
            # Authentication then commands in one write: the rest runs as commands.
            intruder.send(b"set a 0 0 11\r\nbob hunt3r2\r\nget victim\r\n")
            r.equal(intruder.recv_line(), b"STORED\r\n", "bob authenticates in a pipeline")
            r.equal(intruder.recv_until(b"END\r\n"), b"VALUE victim 0 8\r\noriginal\r\nEND\r\n",
                    "and the command after it runs")
            # A block too long to be a credential is refused and the connection closed.
            with harness.Conn(daemon.port) as big:
                big.send(b"set a 0 0 100000\r\n")
                r.equal(big.recv_until_eof(), b"CLIENT_ERROR authentication failure\r\n",
                        "an oversized credential block closes the connection")
            # A junk line with no newline is closed, as memcached does past 2 KB.
            with harness.Conn(daemon.port) as junk:
                junk.send(b"x" * 5000)
                r.equal(junk.recv_until_eof(), b"", "5000 bytes without a newline: closed")


def pymemcache_login(r, daemon):
    client = Client(("127.0.0.1", daemon.port), connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)
    r.check(client.set("anything", "bob hunt3r2"), "pymemcache authenticates with a set")
    r.check(client.set("k", b"v"), "then sets")
    r.equal(client.get("k"), b"v", "and gets")
    client.close()
    unauth = Client(("127.0.0.1", daemon.port), connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)
    try:
        unauth.get("k")
        r.check(False, "pymemcache without authentication is refused")
    except Exception as e:  # pymemcache raises MemcacheClientError for CLIENT_ERROR
        r.check("unauthenticated" in str(e), "pymemcache without authentication is refused", str(e))
    unauth.close()


def over_tls(r, path):
    c = certs.Certs()
    daemon = harness.start_target(["-Y", path] + c.server_args())
    ctx = c.client_context()
    client = Client(("127.0.0.1", daemon.port), tls_context=ctx, connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)
    try:
        client.get("k")
        r.check(False, "-Y over TLS: unauthenticated get refused")
    except Exception as e:
        r.check("unauthenticated" in str(e), "-Y over TLS: unauthenticated get refused", str(e))
    client.close()
    client = Client(("127.0.0.1", daemon.port), tls_context=ctx, connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)
    r.check(client.set("x", "alice s3cret"), "-Y over TLS: authentication")
    r.check(client.set("k", b"tls"), "then a set")
    r.equal(client.get("k"), b"tls", "and a get")
    client.close()
    daemon.stop()


def sighup_reloads(r):
    """As memcached: SIGHUP re-reads the -Y file; a broken file keeps the passwords."""
    path = auth_file("alice:s3cret\n")
    daemon = harness.start_target(["-Y", path])
    # A served request shows the event loop runs: a SIGHUP before its handler is
    # installed would be ignored (the listeners accept from the moment they bind).
    with harness.Conn(daemon.port) as conn:
        r.equal(login(conn), b"STORED\r\n", "before SIGHUP the first password authenticates")
    with open(path, "w") as f:
        f.write("alice:rotated\n")
    daemon.proc.send_signal(signal.SIGHUP)

    def rotated():
        with harness.Conn(daemon.port) as conn:
            return login(conn, b"alice", b"rotated") == b"STORED\r\n"

    ok = harness.wait_for(rotated, harness.TIMEOUT)   # the reload is asynchronous
    r.check(ok, "after SIGHUP the new password authenticates")
    with harness.Conn(daemon.port) as conn:
        r.equal(login(conn), b"CLIENT_ERROR authentication failure\r\n",
                "and the old one no longer does")
    if HERDLESS:
        with open(path, "w") as f:
            f.write("no colon here\n")
        daemon.proc.send_signal(signal.SIGHUP)
        # Wait for the warning, then check the passwords did not change.
        harness.wait_for(lambda: "previous passwords stay" in daemon.log_text(), harness.TIMEOUT)
        r.check("previous passwords stay" in daemon.log_text(), "a broken file is reported")
        with harness.Conn(daemon.port) as conn:
            r.equal(login(conn, b"alice", b"rotated"), b"STORED\r\n",
                    "and the passwords in force stay")
    daemon.stop()
    os.unlink(path)


def fails_closed(r):
    if not HERDLESS:
        return
    empty = auth_file("")
    malformed = auth_file("alice:s3cret\njust-a-name\n")
    for args, message in ((["-Y", "/nonexistent/auth"], b"Could not open authfile"),
                          (["-Y", empty], b"has no 'user:password' entry"),
                          (["-Y", malformed], b"malformed entry on line 2")):
        proc = harness.check_refuses_to_start(r, args, message, "-Y %s" % args[1])
        r.check(b"s3cret" not in proc.stderr, "no password in the message")
    os.unlink(empty)
    os.unlink(malformed)


def body(r):
    fails_closed(r)
    path = auth_file("alice:s3cret\nbob:hunt3r2\n")
    daemon = harness.start_target(["-Y", path])
    everything_refused(r, daemon)
    pymemcache_login(r, daemon)
    daemon.stop()
    over_tls(r, path)
    os.unlink(path)
    sighup_reloads(r)


if __name__ == "__main__":
    harness.run("test_auth", body)
