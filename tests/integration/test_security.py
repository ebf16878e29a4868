"""Security defaults of herdless (some deliberately stricter than memcached's):
  - with no -l it listens on 127.0.0.1 only (memcached: every interface);
  - UDP is off: no UDP socket, and -U with a port is refused;
  - as root it refuses to start without -u, and -u drops to that user (uid, gid and
    supplementary groups, checked in /proc/<pid>/status);
  - `shutdown` is refused without -A and works with it;
  - no reply reveals bytes of a value deleted or replaced before (a canary is written, deleted
    and overwritten, then a battery of commands must never show it).
The root checks run only when the test runs as root (they say so otherwise). herdless only:
TEST_AGAINST=memcached skips this file's daemon-specific checks.
"""

import os
import pwd

import harness

CANARY = b"CANARY-7f3a9c-"


def listening_sockets(pid):
    """(protocol, local address hex, port) of every socket the process holds."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        with open("/proc/net/" + proto) as f:
            next(f)
            for line in f:
                fields = line.split()
                address, port = fields[1].split(":")
                if fields[9] in inodes:
                    found.append((proto, address, int(port, 16), fields[3]))
    return found


def default_listen_and_no_udp(r):
    daemon = harness.Daemon("herdless", [harness.HERDLESS_BIN] + harness.user_args()
                            + harness.io_args()).start()
    sockets = listening_sockets(daemon.proc.pid)
    listeners = [s for s in sockets if s[3] == "0A"]   # TCP_LISTEN
    r.equal(listeners, [("tcp", "0100007F", daemon.port, "0A")],
            "with no -l the only listener is 127.0.0.1:<port>")
    r.equal([s for s in sockets if s[0].startswith("udp")], [], "no UDP socket by default")
    with harness.Conn(daemon.port) as c:
        c.send(b"stats settings\r\n")
        settings = c.recv_until(b"END\r\n")
    r.check(b"STAT udpport 0\r\n" in settings, "stats settings shows udpport 0")
    daemon.stop()
    # With -U, UDP listens where TCP does: loopback only unless -l says otherwise.
    daemon = harness.Daemon("herdless", [harness.HERDLESS_BIN, "-U", "-1"] +
                            harness.user_args()).start()
    udp = [s for s in listening_sockets(daemon.proc.pid) if s[0].startswith("udp")]
    r.equal(udp, [("udp", "0100007F", daemon.udp_port, "07")],
            "-U: the only UDP socket is 127.0.0.1:<port>")
    daemon.stop()


def privileges(r):
    if os.geteuid() != 0:
        harness.log("not root: the -u and refuse-root checks are skipped")
        return
    run = harness.run_to_exit(["-p", "0"], as_user=False)
    r.equal(run.returncode, 64, "as root without -u it refuses to start (EX_USAGE)")
    r.check(b"can't run as root without the -u switch" in run.stderr,
            "with memcached's message", run.stderr.decode(errors="replace"))
    nobody = pwd.getpwnam("nobody")
    daemon = harness.start_herdless([])   # harness adds -u nobody as root
    # The port accepts (into the listen backlog) before -u takes effect, as memcached's: a
    # request is served only once the workers run, after the switch (this read raced it).
    with harness.Conn(daemon.port) as c:
        c.call(b"version\r\n")
    uid = daemon.status_field("Uid").split()
    gid = daemon.status_field("Gid").split()
    r.equal(uid, [str(nobody.pw_uid)] * 4, "-u nobody: real, effective, saved and fs uid")
    r.equal(gid, [str(nobody.pw_gid)] * 4, "-u nobody: every gid too")
    r.equal(daemon.status_field("Groups"), "", "-u drops supplementary groups")
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(b"version\r\n")[:8], b"VERSION ", "and it serves as nobody")
    daemon.stop()
    run = harness.run_to_exit(["-p", "0", "-u", "no-such-user-herdless"], as_user=False)
    r.check(run.returncode != 0 and b"can't find the user" in run.stderr,
            "an unknown -u user is refused", run.stderr.decode(errors="replace"))


def shutdown_needs_A(r):
    daemon = harness.start_herdless([])
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(b"shutdown\r\n"), b"ERROR: shutdown not enabled\r\n",
                "shutdown without -A is refused")
        r.equal(c.call(b"shutdown graceful\r\n"), b"ERROR: shutdown not enabled\r\n",
                "graceful too")
    r.check(daemon.alive(), "and the daemon keeps running")
    daemon.stop()
    daemon = harness.start_herdless(["-A"])
    with harness.Conn(daemon.port) as c:
        c.send(b"shutdown\r\n")
        r.equal(c.recv_until_eof(), b"", "with -A, shutdown closes the connection")
    status, log = daemon.wait_exit()
    r.equal(status, 0, "and the daemon exits cleanly")
    r.check(not harness.sanitizer_complained(log), "without a sanitizer report", log)


def no_leaked_bytes(r):
    daemon = harness.start_herdless(["-m", "8"])
    secret = (CANARY * 8000)[:100000]
    with harness.Conn(daemon.port) as c:
        for i in range(40):   # secrets in many sizes, then gone
            v = secret[:1 + i * 2500]
            c.call(b"set s%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
        for i in range(0, 40, 2):
            c.call(b"delete s%d\r\n" % i)
        for i in range(1, 40, 2):
            c.call(b"set s%d 0 0 1\r\nx\r\n" % i)   # replaced by a shorter value
        battery = [
            b"get s0 s1 s2 s3\r\n", b"gets s1 s3\r\n", b"gat 0 s1 s5\r\n",
            b"append s1 0 0 3\r\nabc\r\n", b"prepend s3 0 0 3\r\nabc\r\n", b"get s1 s3\r\n",
            b"incr s5 1\r\n", b"set n 0 0 2\r\n99\r\n", b"incr n 1\r\n", b"decr n 100\r\n",
            b"get n\r\n", b"mg s1 v k c f t s\r\n", b"mg s0 v\r\n", b"mg s7 v N30\r\n",
            b"ms s9 2 MA\r\nzz\r\n", b"mg s9 v\r\n", b"ms s11 5 MP\r\nyyyyy\r\n",
            b"mg s11 v\r\n", b"ma n D5 v\r\n", b"md s13 I\r\n", b"mg s13 v c\r\n",
            b"set short 0 0 10\r\nabc\r\n", b"get short\r\n",
            b"set big 0 0 2000000\r\n" + b"q" * 2000000 + b"\r\n", b"get big\r\n",
            b"lease-get s15\r\n", b"lease-get s0\r\n", b"mg s0 v c t\r\n",
            b"ms s0 0\r\n\r\n", b"mg s0 v\r\n", b"mn\r\n",
        ]
        c.send(b"".join(battery))
        reply = c.recv_until(b"MN\r\n")
        r.check(len(reply) > 200, "the battery of commands was answered (%d bytes)" % len(reply))
        r.check(CANARY not in reply and CANARY[:8] not in reply,
                "no reply shows a byte of a deleted or replaced value", reply[:2000])
    daemon.stop()


def body(r):
    if harness.target_name() != "herdless":
        harness.log("test_security checks herdless's own defaults: skipped for memcached")
        return
    default_listen_and_no_udp(r)
    privileges(r)
    shutdown_needs_A(r)
    no_leaked_bytes(r)


if __name__ == "__main__":
    harness.run("test_security", body)
