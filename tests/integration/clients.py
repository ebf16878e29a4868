"""What the test_clients_*.py files share: a client's checks run against Debian's memcached and
herdless side by side (harness.SideBySide), each check's line ("ok <what>" or "FAIL <what>")
compared between the two, and every check required to pass on herdless.

A client's checks are either a script (Perl, PHP, Ruby) printing those lines, run with the
server's port as its last argument, or a Python function(port) returning them."""

import subprocess

import harness


def script_lines(argv, port):
    """The ok/FAIL lines a script prints for the server on `port`, and its other output."""
    run = subprocess.run(list(argv) + [str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=harness.TIMEOUT * 6)
    out = run.stdout.decode("utf-8", "replace")
    lines = [l for l in out.splitlines() if l.startswith(("ok ", "FAIL "))]
    if run.returncode != 0:
        lines.append("FAIL exit status %d" % run.returncode)
    return lines, out


def compare(results, pair, client, checks, min_checks):
    """Runs `checks` (argv of a script, or a function(port) returning lines) on both servers of
    `pair`; one check per line on herdless, and one that memcached printed the same lines."""
    transcripts = []
    for daemon in pair:
        if callable(checks):
            lines, out = checks(daemon.port), ""
        else:
            lines, out = script_lines(checks, daemon.port)
        transcripts.append(lines)
    reference, ours = transcripts
    results.check(len(ours) >= min_checks, "%s: ran its %d+ checks" % (client, min_checks),
                  out[-2000:])
    for line in ours:
        results.check(line.startswith("ok "), "%s: %s" % (client, line.split(" ", 1)[1]))
    t_ref, t_ours = harness.Transcript(), harness.Transcript()
    t_ref.lines, t_ours.lines = reference, ours
    detail = t_ours.differences(t_ref)
    results.check(detail is None, "%s: the same results as against memcached" % client, detail or "")


def stale_read_lines(port, read, key=b"stampede:k"):
    """Classic stampede mode (-o classic_stampede=stale): `key` stored, then invalidated over the
    meta protocol (md I) so it is stale; the client's first read (read(key) -> value or None) gets
    the miss that makes it the recomputer, the second the stale value."""
    with harness.Conn(port) as c:
        stored = c.call(b"set %s 0 0 5\r\nstale\r\n" % key) == b"STORED\r\n"
        invalidated = c.call(b"md %s I\r\n" % key) == b"HD\r\n"
    first, second = read(key.decode()), read(key.decode())
    return ["%s stale-mode read: first a miss, then the stale value" %
            ("ok" if stored and invalidated and first is None and second in ("stale", b"stale") else "FAIL")]


def script_reader(argv):
    """read(key) for stale_read_lines: runs `argv` + [key, port], a script that prints "miss" or
    "value <value>"."""
    def reader(port):
        def read(key):
            _, out = script_lines(list(argv) + [key], port)
            text = out.strip()
            return text[len("value "):] if text.startswith("value ") else None
        return read
    return reader


def check_stale_reads(results, client, reader, keys=(b"stampede:k",)):
    """stale_read_lines for each key on herdless with -o classic_stampede=stale; `reader(port)`
    gives the client's read(key)."""
    d = harness.start_herdless(["-o", "classic_stampede=stale,stale_grace=60"])
    for key in keys:
        for line in stale_read_lines(d.port, reader(d.port), key):
            results.check(line.startswith("ok "), "%s: %s" % (client, line.split(" ", 1)[1]))
    d.stop()
