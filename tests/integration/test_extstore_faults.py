#!/usr/bin/env python3
"""A flash device that returns errors (-o ext_path), for real: the daemon runs with an LD_PRELOAD
shim (eio_preload.c, built here with the system's C compiler) that makes pread/pwrite of the
flash file fail with EIO, or pwrite with ENOSPC (a full device), while a trigger file exists.
A read that fails is a miss counted in miss_from_extstore, as memcached counts it; a write that
fails drops the values of its page (extstore_page_evictions, then misses); never a wrong value
nor a crash, and the server keeps serving, flash included once the device recovers. A file
that cannot grow to its ext_path size (RLIMIT_FSIZE below it, as a small filesystem) is a
device that fills up: writes past the limit fail (EFBIG; herdless ignores SIGXFSZ), their
pages' values miss, the values below it read back.
"""

import os
import shutil
import subprocess
import tempfile
import time

import harness
import test_extstore as ext
from test_extstore_restart import read_back

HERE = os.path.dirname(os.path.abspath(__file__))


def build_shim(results, directory):
    """The shim's path, or None (a failed check) without a C compiler."""
    out = os.path.join(directory, "eio_preload.so")
    cc = os.environ.get("CC", "cc")
    try:
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", out, os.path.join(HERE, "eio_preload.c"), "-ldl"],
                       check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as e:
        results.check(False, "the fault shim builds with %s" % cc, repr(e))
        return None
    return out


def start(shim, path):
    env = ["env", "LD_PRELOAD=" + shim, "EIO_PRELOAD_PATH=" + path,
           # a sanitizer build's runtime must come first; the shim only forwards to it
           "ASAN_OPTIONS=" + os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"]
    return harness.start_herdless(["-m", "8", "-o", ext.FLASH_OPTS + ",ext_path=%s:16m" % path], prefix=env)


def fail(path, what, error="EIO"):
    with open(path + ".fail-" + what, "w") as f:
        f.write(error)


def recover(path, what):
    os.remove(path + ".fail-" + what)


def wait_in_file(path, marker, timeout=10.0):
    """Until the writer has written its buffer out (reads then go to the file)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path, "rb") as f:
            if marker in f.read():
                return True
        time.sleep(0.1)
    return False


def wait_stat(c, name, at_least, timeout=10.0):
    deadline = time.time() + timeout
    while int(harness.stats(c)[name]) < at_least and time.time() < deadline:
        time.sleep(0.1)
    return int(harness.stats(c)[name])


def still_serves(results, c, first, what):
    """RAM and flash both work again: a small value, then values moved to flash after the fault."""
    results.equal(c.call(b"set small 0 0 2\r\nok\r\n"), b"STORED\r\n", "%s: the server still stores" % what)
    results.equal(ext.get_value(c, b"small"), b"ok", "%s: and serves" % what)
    written = int(harness.stats(c)["extstore_objects_written"])
    ext.set_all(c, range(first, first + 10))
    results.check(ext.wait_written(c, written + 10) >= written + 10, "%s: values move to flash again" % what)
    results.equal(read_back(c, range(first, first + 10)), (10, 0, 0), "%s: and read back from it" % what)


def check_read_errors(results, shim):
    path = ext.flash_file("eior")
    d = start(shim, path)
    try:
        with harness.Conn(d.port) as c:
            ext.set_all(c, range(40))
            results.check(ext.wait_written(c, 40) >= 40, "reads: 40 values moved to flash")
            results.check(wait_in_file(path, b"v39:"), "reads: the values reached the file")
            fail(path, "read")
            results.equal(read_back(c, range(20)), (0, 20, 0), "reads failing (EIO): misses, no wrong value")
            st = harness.stats(c)
            results.equal((st["miss_from_extstore"], st["badcrc_from_extstore"]), ("20", "0"),
                          "a failed read is a miss_from_extstore, as memcached counts it")
            recover(path, "read")
            results.equal(read_back(c, range(20, 40)), (20, 0, 0), "the device back: the other values read")
            still_serves(results, c, 100, "after read errors")
        results.check(d.alive(), "reads: the server is still running")
    finally:
        d.stop()
        for p in (path, path + ".fail-read"):
            if os.path.exists(p):
                os.remove(p)


def check_write_errors(results, shim, error):
    what = "writes failing (%s)" % error
    path = ext.flash_file("eiow")
    d = start(shim, path)
    try:
        with harness.Conn(d.port) as c:
            fail(path, "write", error)
            ext.set_all(c, range(40))
            results.check(ext.wait_written(c, 40) >= 40, "%s: 40 values moved to the write buffer" % what)
            results.check(wait_stat(c, "extstore_page_evictions", 1) >= 1,
                          "%s: the buffer's page is dropped" % what)
            same, misses, wrong = read_back(c, range(40))
            results.equal(wrong, 0, "%s: no wrong value" % what)
            results.check(misses > 0, "%s: the values that never reached the file miss" % what,
                          "same %d misses %d" % (same, misses))
            recover(path, "write")
            still_serves(results, c, 200, what)
        results.check(d.alive(), "%s: the server is still running" % what)
    finally:
        d.stop()
        for p in (path, path + ".fail-write"):
            if os.path.exists(p):
                os.remove(p)


def check_size_limited(results):
    """The file may not grow past 3 MB of its 16: values written beyond read as misses."""
    what = "a file limited to 3 MB"
    path = ext.flash_file("fsize")
    d = harness.start_herdless(["-m", "8", "-o", ext.FLASH_OPTS + ",ext_path=%s:16m" % path],
                               prefix=["prlimit", "--fsize=%d" % (3 << 20), "--"])
    try:
        with harness.Conn(d.port) as c:
            keys = range(1000, 1600)
            ext.set_all(c, keys, size=8000)
            results.check(ext.wait_written(c, 500) >= 500, "%s: values moved to flash" % what)
            results.check(wait_stat(c, "extstore_page_evictions", 1) >= 1,
                          "%s: the pages past the limit are dropped" % what)
            same, misses, wrong = read_back(c, keys, 8000)
            results.equal(wrong, 0, "%s: no wrong value" % what)
            results.check(misses > 0 and same > 0, "%s: values past the limit miss, the others read" % what,
                          "same %d misses %d" % (same, misses))
            results.equal(c.call(b"set small 0 0 2\r\nok\r\n"), b"STORED\r\n", "%s: the server still stores" % what)
        results.check(d.alive(), "%s: the server is still running (SIGXFSZ ignored)" % what)
        results.check(os.path.getsize(path) <= 3 << 20, "%s: the file stayed within the limit" % what)
    finally:
        d.stop()
        if os.path.exists(path):
            os.remove(path)


def body(results):
    check_size_limited(results)
    directory = tempfile.mkdtemp(prefix="herdless-eio-")
    try:
        shim = build_shim(results, directory)
        if shim is None:
            return
        check_read_errors(results, shim)
        check_write_errors(results, shim, "EIO")
        check_write_errors(results, shim, "ENOSPC")
    finally:
        shutil.rmtree(directory)


if __name__ == "__main__":
    harness.run("test_extstore_faults", body)
