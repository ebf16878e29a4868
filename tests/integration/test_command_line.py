"""A refused command line, side by side with Debian's memcached: the same exit status and the
same stderr, byte for byte (memcached exits 1 for a flag getopt or its loop cannot take, with
getopt's words after the program name and `Illegal argument "?"`; EX_USAGE (64) for the checks
after the last flag). Both servers get the same argv[0] (a symlink named `memcached`).
"""

import os
import subprocess
import tempfile

import harness

# Command lines both servers must refuse. Deliberate differences (herdless refuses a value
# memcached reads with atoi, e.g. `-p abc`, `-m -5`, or a stray argument) are not listed here:
# docs/operations.md names them.
REFUSED = [
    ["-z"],                                   # unknown flag
    ["-X", "-Q"],
    ["--bogus"],                              # unknown long flag
    ["-p"],                                   # a flag without its value
    ["--port"],
    ["-o", "bogus"],                          # unknown -o key
    ["-o", "idle_timeout"],                   # -o key without its value
    ["-t", "0"],
    ["-c", "0"],
    ["-R", "0"],
    ["-I", "512"],                            # checks after the last flag: EX_USAGE
    ["-m", "1", "-I", "1m"],
    ["-m", "4096", "-I", "1025m"],
    ["-o", "slab_chunk_max=3000"],
    ["-S", "-B", "ascii"],
    ["-Z", "-p", "0"],
]


def refusal(binary, args):
    """(exit status, stderr) of a start that must fail, or None if it is still running."""
    argv = [binary, "-l", "127.0.0.1", "-U", "0"] + harness.user_args() + list(args)
    if "-p" not in args and "--port" not in args:
        argv += ["-p", "0"]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    return proc.returncode, proc.stderr


def body(r):
    with tempfile.TemporaryDirectory() as tmp:
        # getopt prints argv[0]: give both the same one.
        ours = os.path.join(tmp, "herdless", "memcached")
        theirs = os.path.join(tmp, "debian", "memcached")
        for link, target in ((ours, harness.HERDLESS_BIN), (theirs, harness.MEMCACHED_BIN)):
            os.mkdir(os.path.dirname(link))
            os.chmod(os.path.dirname(link), 0o755)
            os.symlink(target, link)
        for args in REFUSED:
            want = refusal(theirs, args)
            if not r.check(want is not None and want[0] != 0, "memcached refuses %s" % args,
                           repr(want)):
                continue
            got = refusal(ours, args)
            got_tail = None if got is None else (got[0], got[1].replace(ours.encode(), theirs.encode()))
            r.equal(got_tail, want, "herdless refuses %s with memcached's status and words" % args)


if __name__ == "__main__":
    harness.run("test_command_line", body)
