#!/usr/bin/env python3
"""libmemcached-tools (Debian names them memc*) against herdless and Debian's memcached side by
side: memccp (files, and one over -I 1m), memccat (hits and a miss), memcexist, memctouch,
memcdump, memcrm, memcping, memcslap (a bounded get run), memcflush, and memcstat. Each step's
exit status and output (timings and pids left out) must be memcached's (both run with
`-o no_lru_maintainer`, so memcached's cachedump does not depend on its LRU thread's timing);
memcstat must list every stat memcached's does, and memcslap's gets must show in `stats`.
"""

import os
import re
import shutil
import subprocess
import tempfile

import harness

FILES = {"a.txt": b"hello\n", "b.txt": b"world\n"}
SLAP_GETS = 100   # memcslap: 2 threads x 50


def tool(daemon, workdir, *args):
    """(exit status, stdout, stderr) of a libmemcached tool run on `daemon`, in `workdir`."""
    run = subprocess.run([args[0], "--servers=127.0.0.1:%d" % daemon.port] + list(args[1:]),
                         cwd=workdir, capture_output=True, timeout=harness.TIMEOUT * 4)
    return run.returncode, run.stdout.decode("utf-8", "replace"), run.stderr.decode("utf-8", "replace")


def transcript(daemon, workdir):
    t = harness.Transcript()

    def step(name, *args, normalize=lambda s: s):
        rc, out, err = tool(daemon, workdir, *args)
        t.lines.append("%s: rc %d | %s | %s" % (name, rc, normalize(out).strip(), err.strip()))

    step("memccp", "memccp", *FILES)
    step("memccp too large", "memccp", "big.bin")
    step("memccat", "memccat", *FILES)
    step("memccat miss", "memccat", "nokey")
    step("memcexist", "memcexist", "a.txt")
    step("memcexist miss", "memcexist", "nokey")
    step("memctouch", "memctouch", "--expire=100", "a.txt")
    step("memctouch miss", "memctouch", "--expire=100", "nokey")
    step("memcdump", "memcdump", normalize=lambda s: " ".join(sorted(s.split())))
    step("memcrm", "memcrm", "a.txt")
    step("memcrm miss", "memcrm", "a.txt")
    step("memccat after memcrm", "memccat", "a.txt")
    step("memcping", "memcping")
    before = stat(daemon, "cmd_get")
    step("memcslap", "memcslap", "--concurrency=2", "--execute-number=50", "--test=get",
         normalize=lambda s: re.sub(r"[0-9.]+ seconds", "<t> seconds", s))
    t.lines.append("memcslap gets in stats: %d" % (stat(daemon, "cmd_get") - before))
    step("memcflush", "memcflush")
    step("memccat after memcflush", "memccat", "b.txt")
    return t


def stat(daemon, name):
    with harness.Conn(daemon.port) as c:
        return harness.stat(c, name)


def memcstat_names(daemon, workdir):
    rc, out, _ = tool(daemon, workdir, "memcstat")
    return rc, {line.strip().split(":")[0] for line in out.splitlines()[1:] if ":" in line}


def body(results):
    workdir = tempfile.mkdtemp(prefix="herdless-memtools-")
    try:
        for name, data in FILES.items():
            with open(os.path.join(workdir, name), "wb") as f:
                f.write(data)
        with open(os.path.join(workdir, "big.bin"), "wb") as f:
            f.write(os.urandom(2 * 1024 * 1024))
        sbs = harness.SideBySide()
        # memcdump lists `stats cachedump`, which in memcached's segmented LRU holds only what
        # its LRU thread has moved to COLD by then (a race: "b.txt" or "a.txt b.txt"). Without
        # that thread memcached keeps every item in COLD, as herdless does (lru_segmented no).
        memcached, herdless = sbs.pair(("-o", "no_lru_maintainer"))
        reference, ours = transcript(memcached, workdir), transcript(herdless, workdir)
        results.check(ours.differences(reference) is None, "every tool: memcached's results",
                      ours.differences(reference) or "")
        results.check("memcslap gets in stats: %d" % SLAP_GETS in ours.lines,
                      "memcslap: %d gets counted" % SLAP_GETS, "\n".join(ours.lines))
        results.check(ours.lines[0].startswith("memccp: rc 0"), "memccp stored the files", ours.lines[0])
        (ref_rc, ref_names), (rc, names) = memcstat_names(memcached, workdir), memcstat_names(herdless, workdir)
        results.equal((ref_rc, rc), (0, 0), "memcstat: exit status 0, against memcached and herdless")
        results.check(len(ref_names) > 30 and ref_names <= names, "memcstat: every stat memcached's lists",
                      repr(sorted(ref_names - names)))
        sbs.stop(results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    harness.run("test_clients_memtools", body)
