#!/usr/bin/python3
"""Warm-restart snapshot speed: write and load of a full cache (-e).

Starts herdless with -m <memory> and -e, fills it with distinct keys and values of
--value-size bytes (pipelined, noreply) until the first eviction (the cache is full),
then stops it with SIGTERM, which writes the snapshot, and starts it again, which loads
it; --runs times. Prints, per run, the write (items, MB, seconds with fsync, MB/s,
items/s, peak RSS growth while writing) and the load (the same, as the daemon logs it,
and the time until it first answers). RSS growth: VmHWM (reset through
/proc/<pid>/clear_refs just before the signal) minus VmRSS before it. CPU s: user +
system seconds of all the daemon's threads (for the write, from the signal to the exit;
for the load, from the start to the log line), a figure other processes on the machine
do not inflate the way they inflate wall-clock seconds; the 1-minute load average is
printed beside. The load reads a file that is in the page cache (it was just written).
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_listening  # noqa: E402
from bench_memory import stats  # noqa: E402

WROTE = re.compile(r"snapshot \(stop\): wrote (\d+) items \(([\d.]+) MB\) to .* in ([\d.]+) s")
LOADED = re.compile(r"snapshot: loaded (\d+) items .*\(([\d.]+) MB, written .*\) in ([\d.]+) s")


def status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Server:
    def __init__(self, binary, memory, snapshot, threads):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="bench-snapshot-", suffix=".log", delete=False)
        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        argv = [binary, "-m", str(memory), "-p", str(self.port), "-l", "127.0.0.1", "-t", str(threads),
                "-v", "-e", snapshot] + user
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc)

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_for(self, pattern, timeout=600):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = pattern.search(self.log_text())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.005)
        raise RuntimeError("herdless never logged %s; log:\n%s" % (pattern.pattern, self.log_text()))

    def cpu_seconds(self):
        """User + system CPU seconds of every thread so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop_and_measure(self):
        """SIGTERM; returns (RSS before in KiB, peak RSS while stopping in KiB, CPU seconds
        from the signal to the exit)."""
        pid = self.proc.pid
        rss = status_kb(pid, "VmRSS")
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")   # resets VmHWM to the current RSS
        except OSError:
            pass
        peak = rss
        cpu_before = self.cpu_seconds()
        self.proc.send_signal(signal.SIGTERM)
        while True:
            waited, status, usage = os.wait4(pid, os.WNOHANG)
            if waited == pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                break
            hwm = status_kb(pid, "VmHWM")
            now = status_kb(pid, "VmRSS")
            for v in (hwm, now):
                if v is not None and v > peak:
                    peak = v
            time.sleep(0.002)
        return rss, peak, usage.ru_utime + usage.ru_stime - cpu_before

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)


def fill(port, value_size, batch=5000):
    sock = socket.create_connection(("127.0.0.1", port))
    value = b"v" * value_size
    n = 0
    while True:
        payload = b"".join(b"set key:%010d 0 0 %d noreply\r\n%s\r\n" % (n + i, value_size, value)
                           for i in range(batch))
        sock.sendall(payload)
        n += batch
        if n % (batch * 20) == 0 and int(stats(sock).get("evictions", 0)) > 0:
            break
    st = stats(sock)
    sock.close()
    return int(st["curr_items"]), int(st["bytes"])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memory", type=int, default=1024, help="-m, MB")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="-t (also the load's threads)")
    ap.add_argument("--dir", default=None, help="where the snapshot goes (default: a temporary directory)")
    args = ap.parse_args()

    work = args.dir or tempfile.mkdtemp(prefix="bench-snapshot-")
    os.chmod(work, 0o777)   # -u nobody writes it
    snapshot = os.path.join(work, "snapshot")
    if os.path.exists(snapshot):
        os.unlink(snapshot)
    print(f"herdless -m {args.memory} -t {args.threads} -e {snapshot}; keys of 14 bytes, values of "
          f"{args.value_size} bytes; filled until the first eviction")
    srv = Server(args.herdless, args.memory, snapshot, args.threads)
    t0 = time.monotonic()
    items, item_bytes = fill(srv.port, args.value_size)
    print(f"filled: {items} items, {item_bytes / 2**20:.0f} MiB of items in {time.monotonic() - t0:.0f} s")
    print("| run | write: items | MB | s (with fsync) | CPU s | MB/s | items/s | peak RSS growth | "
          "load: items | s | CPU s | MB/s | items/s | first reply after start, s | load average |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    loads = []
    try:
        for run in range(1, args.runs + 1):
            rss, peak, w_cpu = srv.stop_and_measure()
            m = srv.wait_for(WROTE)
            w_items, w_mb, w_s = int(m.group(1)), float(m.group(2)), float(m.group(3))
            srv.close()
            srv = Server(args.herdless, args.memory, snapshot, args.threads)
            m = srv.wait_for(LOADED)
            l_items, l_mb, l_s = int(m.group(1)), float(m.group(2)), float(m.group(3))
            l_cpu = srv.cpu_seconds()   # the process did nothing but load so far
            # The first reply comes after the load: the time since the process started.
            sock = socket.create_connection(("127.0.0.1", srv.port))
            stats(sock)
            first = time.monotonic() - srv.started
            sock.close()
            loads.append(l_s)
            with open("/proc/loadavg") as f:
                loadavg = f.read().split()[0]
            print(f"| {run} | {w_items} | {w_mb:.0f} | {w_s:.2f} | {w_cpu:.2f} | {w_mb / w_s:.0f} | "
                  f"{w_items / w_s:.0f} | {(peak - rss) / 1024:.1f} MiB | {l_items} | {l_s:.2f} | "
                  f"{l_cpu:.2f} | {l_mb / l_s:.0f} | {l_items / l_s:.0f} | {first:.2f} | {loadavg} |")
    finally:
        srv.close()
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    best = min(loads)
    print(f"load goal (< 3 s for a 1 GB cache): best {best:.2f} s, "
          f"{'met' if best < 3 else 'missed'} in {sum(1 for s in loads if s < 3)} of {len(loads)} runs")


if __name__ == "__main__":
    sys.exit(main())
