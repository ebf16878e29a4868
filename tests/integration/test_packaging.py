#!/usr/bin/env python3
"""Installed like memcached: `make install DESTDIR=...` lays out the daemon, its man page,
the configuration file, the script that reads it and the systemd unit; the unit passes
`systemd-analyze verify`; and its ExecStart, run by hand (systemd is not PID 1 here), starts
herdless with the configuration file's flags, tells a notification socket READY=1, reloads on
SIGHUP and stops on SIGTERM, logging timestamped, levelled lines.

The installed files name their paths under the configured prefix, which does not exist outside
DESTDIR: the unit and the script are run and verified as copies whose prefix paths point into
DESTDIR (nothing else is changed).
"""

import os
import re
import shlex
import shutil
import signal
import socket
import stat as statmod
import subprocess
import tempfile
import time

import harness
from harness import HERDLESS_BIN, Conn

BUILDDIR = os.environ.get("HERDLESS_BUILDDIR") or os.path.dirname(os.path.abspath(HERDLESS_BIN))
UNIT_DIR = "/lib/systemd/system"
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warning|notice|info|debug): .+$")

# What a unit modelled on Debian's memcached.service must say.
REQUIRED_DIRECTIVES = [
    "Type=notify", "DynamicUser=yes", "ProtectSystem=strict", "PrivateTmp=yes",
    "NoNewPrivileges=yes", "MemoryDenyWriteExecute=yes",
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "StateDirectory=herdless",
    "ExecReload=/bin/kill -HUP $MAINPID", "Documentation=man:herdless(1)",
    "WantedBy=multi-user.target",
]


def make_install(destdir):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-C", BUILDDIR, "install", "DESTDIR=" + destdir,
                           "systemdsystemunitdir=" + UNIT_DIR],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300)


def unit_value(text, key):
    for line in text.splitlines():
        if line.startswith(key + "="):
            return line[len(key) + 1:]
    return None


class NotifySocket:
    """An abstract unix datagram socket standing in for systemd's NOTIFY_SOCKET."""

    def __init__(self):
        self.name = "herdless-test-notify-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name)

    def address(self):
        return "@" + self.name

    def wait_for(self, field, timeout=None):
        """The first message that holds line `field` ("READY=1"), as a dict; None on timeout."""
        deadline = time.monotonic() + (timeout or harness.TIMEOUT)
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                return None
            lines = data.split("\n")
            if field in lines:
                return dict(line.split("=", 1) for line in lines if "=" in line)
        return None

    def close(self):
        self.sock.close()


def settings(port):
    with Conn(port) as c:
        return harness.stats(c, b"settings")


class ExecStart(harness.Process):
    """The unit's ExecStart, relocated into DESTDIR, run by hand as systemd would (NOTIFY_SOCKET,
    $OPTIONS after the configuration file); it listens on `port` once READY=1 arrives."""

    def __init__(self, argv, notify, options, port):
        argv = [word for word in argv if word != "$OPTIONS"] + options
        super().__init__("herdless-execstart", argv, port,
                         env=dict(os.environ, NOTIFY_SOCKET=notify.address()))
        self.start(wait=False)


def check_layout(r, destdir):
    """The installed files; returns (unit text, wrapper path, conf path, daemon path) or None."""
    installed = sorted(os.path.relpath(os.path.join(d, f), destdir)
                       for d, _, files in os.walk(destdir) for f in files)
    harness.log("installed: " + ", ".join(installed))
    unit_path = os.path.join(destdir, UNIT_DIR.lstrip("/"), "herdless.service")
    if not r.check(os.path.isfile(unit_path), "the unit is installed in " + UNIT_DIR):
        return None
    with open(unit_path) as f:
        unit = f.read()
    exec_start = shlex.split(unit_value(unit, "ExecStart") or "")
    r.check(len(exec_start) == 3 and exec_start[2] == "$OPTIONS",
            "ExecStart runs the script with the configuration file and $OPTIONS", repr(exec_start))
    wrapper, conf = exec_start[0], exec_start[1]
    with open(os.path.join(destdir, wrapper.lstrip("/"))) as f:
        m = re.search(r"^herdless='([^']+)'$", f.read(), re.M)
    daemon = m.group(1) if m else "?"
    prefix = os.path.dirname(os.path.dirname(daemon))
    expected = {
        daemon: "the daemon",
        wrapper: "herdless-start",
        conf: "the configuration file",
        os.path.join(prefix, "share/man/man1/herdless.1"): "the man page",
        os.path.join(UNIT_DIR, "herdless.service"): "the unit",
    }
    for path, what in expected.items():
        r.check(os.path.relpath(path, "/") in installed, "%s is installed at %s" % (what, path))
    r.equal(len(installed), len(expected), "nothing else is installed")
    for path in (daemon, wrapper):
        mode = os.stat(os.path.join(destdir, path.lstrip("/"))).st_mode
        r.check(mode & statmod.S_IXUSR, "%s is executable" % path)
    r.check(wrapper.endswith("/libexec/herdless/herdless-start"), "the script is in libexec", wrapper)
    r.check(os.path.basename(os.path.dirname(conf)) == "etc", "the configuration is in etc", conf)
    for directive in REQUIRED_DIRECTIVES:
        r.check(directive in unit.splitlines(), "the unit says " + directive)
    return unit, wrapper, conf, daemon, prefix


def relocate(text, prefix, destdir):
    return text.replace(prefix + "/", destdir + prefix + "/")


def check_verify(r, unit, prefix, destdir, workdir):
    analyze = shutil.which("systemd-analyze")
    if not r.check(analyze is not None, "systemd-analyze is installed (Debian package systemd)"):
        return
    copy = os.path.join(workdir, "herdless.service")
    with open(copy, "w") as f:
        f.write(relocate(unit, prefix, destdir))
    env = dict(os.environ, MANPATH=os.path.join(destdir + prefix, "share/man"))
    run = subprocess.run([analyze, "verify", copy], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, cwd=workdir, timeout=60)
    output = run.stdout.decode(errors="replace").strip()
    harness.log("systemd-analyze verify: exit %d, output: %r" % (run.returncode, output))
    r.check(run.returncode == 0 and output == "", "systemd-analyze verify is clean", output)
    run = subprocess.run([analyze, "security", "--offline=true", copy], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, cwd=workdir, timeout=60)
    m = re.search(r"Overall exposure level for herdless.service: ([0-9.]+)", run.stdout.decode())
    if m:  # informative: the lower the better (Debian's memcached.service scores 4.8)
        harness.log("systemd-analyze security --offline: exposure %s" % m.group(1))


def check_exec_start(r, unit, prefix, destdir, workdir):
    """Runs the relocated ExecStart as systemd would (NOTIFY_SOCKET, $OPTIONS), then reloads and stops."""
    exec_start = shlex.split(relocate(unit_value(unit, "ExecStart"), prefix, destdir))
    wrapper = exec_start[0]
    with open(wrapper) as f:
        script = f.read()
    with open(wrapper, "w") as f:
        f.write(relocate(script, prefix, destdir))
    conf = exec_start[1]
    with open(conf) as f:
        conf_text = f.read()
    r.check("\n-m 64\n" in conf_text and "\n-l 127.0.0.1\n" in conf_text,
            "the shipped configuration says -m 64 and -l 127.0.0.1, as Debian's memcached.conf")

    # The configuration file says -p 11211; $OPTIONS come after it and win.
    port = harness.free_port()
    notify = NotifySocket()
    run = ExecStart(exec_start, notify, ["-p", str(port), "-vv"] + harness.user_args(), port)
    try:
        ready = notify.wait_for("READY=1")
        if not r.check(ready is not None, "READY=1 arrives on NOTIFY_SOCKET", run.log_text()):
            return
        r.equal(ready.get("MAINPID"), str(run.proc.pid),
                "it comes from the process systemd started (the script exec'd herdless)")
        harness.log("notification: %r" % ready)
        s = settings(port)
        r.equal((s.get("tcpport"), s.get("maxbytes"), s.get("inter")),
                (str(port), str(64 << 20), "127.0.0.1"),
                "herdless runs with the file's -m and -l and $OPTIONS' -p")
        with Conn(port) as c:
            r.equal(c.call(b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n", "it serves")
        run.proc.send_signal(signal.SIGHUP)
        r.check(notify.wait_for("RELOADING=1") is not None, "SIGHUP: RELOADING=1")
        r.check(notify.wait_for("READY=1") is not None, "then READY=1 again")
        with Conn(port) as c:
            r.equal(c.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n",
                    "the cache survives a reload")
        run.proc.send_signal(signal.SIGTERM)
        r.check(notify.wait_for("STOPPING=1") is not None, "SIGTERM: STOPPING=1")
        r.equal(run.proc.wait(timeout=harness.TIMEOUT), 0, "exit status 0 after SIGTERM")
        lines = run.log_text().splitlines()
        bad = [line for line in lines if not LOG_LINE.match(line)]
        r.check(lines and not bad, "every log line is '<UTC time> <level>: <text>'", "\n".join(bad or lines))
        text = "\n".join(lines)
        for what, pattern in (("listening", r"notice: listening on tcp:127\.0\.0\.1:%d$" % port),
                              ("a connection (-vv)", r"info: <\d+ new [a-z-]+ client connection\.?$"),
                              ("the reload", r"notice: SIGHUP: nothing to reload$"),
                              ("the stop", r"notice: Exiting normally$")):
            r.check(re.search(pattern, text, re.M), "-vv logs " + what, text)
    finally:
        run.discard()
        notify.close()

    # Without -v: nothing is logged while serving.
    notify = NotifySocket()
    port = harness.free_port()
    run = ExecStart(exec_start, notify, ["-p", str(port)] + harness.user_args(), port)
    try:
        r.check(notify.wait_for("READY=1") is not None, "READY=1 without -v too",
                run.log_text())
        for _ in range(3):
            with Conn(port) as c:
                c.call(b"set k 0 0 1\r\nv\r\n")
                c.call(b"get k\r\n", b"END\r\n")
                c.call(b"get missing\r\n", b"END\r\n")
        r.equal(run.terminate(), 0, "exit status 0")
        r.equal(run.log_text(), "", "without -v nothing is logged for connections and requests")
    finally:
        run.discard()
        notify.close()


def check_config_file(r, exec_start_argv, workdir):
    """herdless-start reads a memcached.conf-style file the way Debian's wrapper does."""
    wrapper = exec_start_argv[0]
    conf = os.path.join(workdir, "memcached-style.conf")
    with open(conf, "w") as f:
        f.write("# a copy of a Debian /etc/memcached.conf, edited\n"
                "-d\n"
                "logfile /var/log/memcached.log\n"
                "\n"
                "\t-m   32   # trailing comment\n"
                "-o classic_stampede=stale,stale_grace=60\n"
                "# -c 5\n"
                "-l 127.0.0.1\n"
                "-P /var/run/memcached/memcached.pid\n"   # Debian's: not writable here, reported
                "-I 2m\n"
                "-c 100")  # no final newline
    notify = NotifySocket()
    port = harness.free_port()
    run = ExecStart([wrapper, conf], notify,
                    ["-p", str(port), "-o", "idle_timeout=7"] + harness.user_args(), port)
    try:
        if not r.check(notify.wait_for("READY=1") is not None,
                       "started from a memcached.conf-style file",
                       run.log_text()):
            return
        r.equal(run.proc.poll(), None, "-d in the file is dropped: it stays in the foreground")
        s = settings(port)
        got = {k: s.get(k) for k in ("maxbytes", "maxconns", "item_size_max", "classic_stampede",
                                     "stale_grace", "idle_timeout", "tcpport")}
        r.equal(got, {"maxbytes": str(32 << 20), "maxconns": "100", "item_size_max": str(2 << 20),
                      "classic_stampede": "stale", "stale_grace": "60", "idle_timeout": "7",
                      "tcpport": str(port)},
                "every flag of the file (and the extra ones) reached herdless")
        r.equal(run.terminate(), 0, "exit status 0")
    finally:
        run.discard()
        notify.close()

    for text, status, message in (("-m 64\nbogus value\n", 78, "%s:2: not a flag: bogus"),
                                  (None, 66, "cannot read %s")):
        path = os.path.join(workdir, "bad.conf")
        if text is None:
            path = os.path.join(workdir, "missing.conf")
        else:
            with open(path, "w") as f:
                f.write(text)
        run = subprocess.run([wrapper, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=harness.TIMEOUT)
        out = run.stdout.decode(errors="replace")
        r.check(run.returncode == status and (message % path) in out,
                "herdless-start refuses %s with exit %d" % ("a bad line" if text else "a missing file", status),
                "exit %d: %s" % (run.returncode, out))


def body(r):
    destdir = tempfile.mkdtemp(prefix="herdless-destdir-")
    workdir = tempfile.mkdtemp(prefix="herdless-unit-")
    try:
        run = make_install(destdir)
        if not r.check(run.returncode == 0, "make install DESTDIR=... succeeds",
                       run.stdout.decode(errors="replace")[-3000:]):
            return
        layout = check_layout(r, destdir)
        if layout is None:
            return
        unit, wrapper, conf, daemon, prefix = layout
        check_verify(r, unit, prefix, destdir, workdir)
        check_exec_start(r, unit, prefix, destdir, workdir)
        exec_start = shlex.split(relocate(unit_value(unit, "ExecStart"), prefix, destdir))
        check_config_file(r, exec_start, workdir)
    finally:
        shutil.rmtree(destdir, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    harness.run("test_packaging", body)
