#!/usr/bin/python3
"""Items held with a flash tier: Debian's memcached with extstore against herdless, both at the
same -m and the same ext_path size (issue 26's first goal: -m 64, a 2 GB file, 2 KB values).

Each server gets a fresh file under --dir. The script stores --keys keys, by default 1.2 times
what the file holds, with values of --value-size bytes derived from the key, in pipelined
batches on one connection to each server, at most --rate sets a second. It waits until the server's extstore_objects_written stops moving,
then reads back every --sample-th key and checks each value byte for byte. Items held =
the share of the sample that hit × --keys. Both servers stay up; then a seeded Zipf trace of
--requests gets over the same keys is replayed on both as a cache-aside client (a miss is set
again) in turns of --chunk gets, the order swapped every turn, so that neither server gains
from running second on a shared machine. It reports the hit ratio, values read back wrong,
gets/s and the p99 of a 50-key get (one client: timing figures are noisy; give `uptime`), the
server's CPU time (user and kernel, /proc/<pid>/stat) during its own turns per get, each
server's items held, the values read back wrong (must be 0), `stats` curr_items and
extstore_objects_used, RSS, the reads that went to flash and came back to RAM (get_extstore,
recache_from_extstore, in all), and the herdless/memcached ratios. The fill also runs in
turns, batch by batch. --herdless-first gives herdless the first turn. --mem-limit-mb puts
each server in a memory cgroup whose limit covers the page cache too, so that the flash file
is read from the disk rather than from memory.

A herdless that refuses ext_path (built before its flash tier) is run RAM-only, with the
same -m, and the script says so: the ratio is then against herdless's RAM alone.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import cpu_split, free_port, wait_listening  # noqa: E402
from bench_hitratio import make_trace  # noqa: E402
from bench_memory import rss_bytes, stats  # noqa: E402


def value_of(key, size):
    seed = (key + b"|") * (size // (len(key) + 1) + 1)
    return seed[:size]


def start(argv):
    port = free_port()
    proc = subprocess.Popen(argv + ["-p", str(port), "-U", "0", "-l", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
    except RuntimeError:
        err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
        return None, None, err
    return proc, port, ""


def read_replies(sock, buf, count, terminator):
    """Reads until `count` terminators have arrived; returns (replies bytes, leftover)."""
    while buf.count(terminator) < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


def fill(socks, keys, value_size, batch, rate):
    """Sets every key on every server, batch by batch in turns (so that no server's file is
    older than the other's), at most `rate` sets a second each (0 = as fast as they answer): a
    memcached whose writer thread falls behind evicts values before they reach the file.
    Returns [stored, refused] for each socket."""
    counts = [[0, 0] for _ in socks]
    began = time.time()
    for turn, start_i in enumerate(range(0, keys, batch)):
        if rate:
            ahead = start_i / rate - (time.time() - began)
            if ahead > 0:
                time.sleep(ahead)
        out = bytearray()
        n = min(batch, keys - start_i)
        for i in range(start_i, start_i + n):
            key = b"k%d" % i
            out += b"set %s 0 0 %d\r\n%s\r\n" % (key, value_size, value_of(key, value_size))
        order = list(range(len(socks))) if turn % 2 == 0 else list(range(len(socks)))[::-1]
        for at in order:
            socks[at].sendall(out)
            buf = read_replies(socks[at], b"", n, b"\r\n")
            counts[at][0] += buf.count(b"STORED\r\n")
            counts[at][1] += n - buf.count(b"STORED\r\n")
    return counts


def settle(sock, seconds):
    """Waits until extstore_objects_written has not moved for `seconds` (at most 120 s)."""
    last, since, deadline = None, time.time(), time.time() + 120
    while time.time() < deadline:
        written = stats(sock).get("extstore_objects_written")
        if written is None:
            return
        if written != last:
            last, since = written, time.time()
        elif time.time() - since >= seconds:
            return
        time.sleep(0.5)


def sample(sock, keys, value_size, every, batch=50):
    hits = wrong = asked = 0
    ids = list(range(0, keys, every))
    for at in range(0, len(ids), batch):
        chunk = [b"k%d" % i for i in ids[at:at + batch]]
        sock.sendall(b"get " + b" ".join(chunk) + b"\r\n")
        buf = read_replies(sock, b"", 1, b"END\r\n")
        asked += len(chunk)
        pos = 0
        while buf.startswith(b"VALUE ", pos):
            eol = buf.index(b"\r\n", pos)
            _, key, _, length = buf[pos:eol].split(b" ")[:4]
            data = buf[eol + 2:eol + 2 + int(length)]
            hits += 1
            wrong += data != value_of(key, value_size)
            pos = eol + 2 + int(length) + 2
    return hits, wrong, asked


class Replay:
    """One server's share of the cache-aside replay: its hits, wrong values, time and the
    latency of each 50-key get."""

    def __init__(self):
        self.hits = self.wrong = self.gets = 0
        self.elapsed = 0.0
        self.cpu = [0.0, 0.0]   # the server's user and kernel seconds during its turns
        self.latencies = []

    def run(self, sock, ids, value_size):
        """Replays `ids` (multi-gets of 50); each miss is set again."""
        began = time.time()
        for at in range(0, len(ids), 50):
            keys = [b"k%d" % i for i in ids[at:at + 50]]
            t0 = time.time()
            sock.sendall(b"get " + b" ".join(keys) + b"\r\n")
            buf = read_replies(sock, b"", 1, b"END\r\n")
            self.latencies.append(time.time() - t0)
            found = set()
            pos = 0
            while buf.startswith(b"VALUE ", pos):
                eol = buf.index(b"\r\n", pos)
                key, length = buf[pos:eol].split(b" ")[1], int(buf[pos:eol].split(b" ")[3])
                self.wrong += buf[eol + 2:eol + 2 + length] != value_of(key, value_size)
                found.add(key)
                pos = eol + 2 + length + 2
            self.hits += sum(1 for k in keys if k in found)
            missed = [k for k in set(keys) if k not in found]
            if missed:
                sock.sendall(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n"
                                      % (k, value_size, value_of(k, value_size)) for k in missed))
        self.gets += len(ids)
        self.elapsed += time.time() - began

    def summary(self):
        """(hit ratio, wrong values, gets/s, p99 of a 50-key get in ms)."""
        latencies = sorted(self.latencies)
        p99 = latencies[int(0.99 * (len(latencies) - 1))] * 1000 if latencies else 0
        return self.hits / max(self.gets, 1), self.wrong, self.gets / max(self.elapsed, 1e-9), p99


def memory_cgroup(name, limit_mb):
    """A memory cgroup (v1's memory controller, else v2) limited to `limit_mb`: the page cache
    of the server's flash file is charged to it, so at most that much of the file stays
    cached and the rest is read from the disk. Returns its directory."""
    for base, limit_file in (("/sys/fs/cgroup/memory", "memory.limit_in_bytes"), ("/sys/fs/cgroup", "memory.max")):
        if not os.path.exists(os.path.join(base, "cgroup.procs")):
            continue
        path = os.path.join(base, "herdless-bench-%s-%d" % (name, os.getpid()))
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, limit_file), "w") as f:
                f.write(str(limit_mb << 20))
            return path
        except OSError:
            continue
    raise SystemExit("--mem-limit-mb needs a writable memory cgroup (root, v1 memory or v2)")


class Server:
    """A server under test: started (in its memory cgroup if asked), filled, sampled, then
    replayed in turns with the other one."""

    def __init__(self, name, argv, args):
        self.name, self.argv, self.args = name, argv, args
        self.proc = self.port = self.sock = self.cgroup = None
        self.held = 0
        self.replay = Replay()

    def start(self):
        argv = self.argv
        if self.args.mem_limit_mb:
            self.cgroup = memory_cgroup(self.name.split()[0], self.args.mem_limit_mb)
            # Joins the cgroup before exec: every page the server touches is charged to it.
            argv = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.cgroup] + argv
        self.proc, self.port, err = start(argv)
        if self.proc is None:
            return err
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # no Nagle wait after noreply sets
        return ""

    def sample_and_print(self, stored, refused, fill_s):
        args = self.args
        hits, wrong, asked = sample(self.sock, args.keys, args.value_size, args.sample)
        self.held = int(hits / asked * args.keys) if asked else 0
        st = stats(self.sock)
        print("%-24s items held %9d (%5.1f%% of %d sampled)  read back wrong %d  stored %d refused %d"
              "  curr_items %s  extstore_objects_used %s  RSS %.0f MB  fill %.1f s"
              % (self.name, self.held, 100.0 * hits / max(asked, 1), asked, wrong, stored, refused,
                 st.get("curr_items"), st.get("extstore_objects_used", "-"), rss_bytes(self.proc.pid) / 1e6,
                 fill_s), flush=True)

    def report(self):
        args = self.args
        st = stats(self.sock)
        print("%-24s zipf:%s over the keys, %d gets: hit ratio %.4f  wrong %d  %.0f gets/s"
              "  p99 of a 50-key get %.2f ms" % (self.name, args.zipf, self.replay.gets, *self.replay.summary()))
        user, kernel = self.replay.cpu
        print("%-24s server CPU in its replay turns: user %.2f s, kernel %.2f s, %.2f us a get"
              % (self.name, user, kernel, 1e6 * (user + kernel) / max(self.replay.gets, 1)))
        print("%-24s in all: cmd_get %s  get_extstore %s  recache_from_extstore %s  miss_from_extstore %s"
              % (self.name, st.get("cmd_get"), st.get("get_extstore"), st.get("recache_from_extstore"),
                 st.get("miss_from_extstore")))
        if self.cgroup is not None:
            for peak in ("memory.max_usage_in_bytes", "memory.peak"):
                if os.path.exists(os.path.join(self.cgroup, peak)):
                    with open(os.path.join(self.cgroup, peak)) as f:
                        print("%-24s its cgroup's peak memory, page cache included: %.0f MB"
                              % (self.name, int(f.read()) / 1e6))

    def stop(self):
        if self.sock is not None:
            self.sock.close()
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
        if self.cgroup is not None:
            try:
                os.rmdir(self.cgroup)
            except OSError as e:
                print("could not remove %s: %s" % (self.cgroup, e))


def replay_in_turns(servers, args):
    """The Zipf trace in chunks of --chunk gets, each chunk replayed on every server, the
    order swapped every chunk (A B, B A, ...): both see the machine's same moments, so
    neither gains from running second. Each server still sees the whole trace in order."""
    ids, _ = make_trace("zipf:%s" % args.zipf, args.keys, args.requests, seed=1)
    chunk = max(50, args.chunk // 50 * 50)
    taking_turns = list(servers)
    for turn, at in enumerate(range(0, len(ids), chunk)):
        order = taking_turns if turn % 2 == 0 else taking_turns[::-1]
        rates = []
        for s in order:
            s.sock.settimeout(30)
            before = s.replay.elapsed
            cpu_before = cpu_split(s.proc.pid)
            try:
                s.replay.run(s.sock, ids[at:at + chunk], args.value_size)
            except socket.timeout:   # seen once with memcached 1.6.18: a multi-get never answered
                print("%-24s no reply within 30 s: out of the replay after %d gets" % (s.name, s.replay.gets))
                taking_turns.remove(s)
                s.sock.close()
                s.sock = socket.create_connection(("127.0.0.1", s.port))   # for its stats
                continue
            s.replay.cpu = [t + now - was for t, now, was in zip(s.replay.cpu, cpu_split(s.proc.pid), cpu_before)]
            if args.verbose:
                rates.append("%s %.0f" % (s.name.split()[0], len(ids[at:at + chunk]) / max(s.replay.elapsed - before, 1e-9)))
        if args.verbose:
            print("turn %d gets/s: %s" % (turn, ", ".join(rates)))


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def resident_mb(path):
    """How much of `path` the page cache holds (util-linux's fincore), or None."""
    try:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                             capture_output=True, text=True, check=True).stdout.split()
        return "%.0f" % (int(out[0]) / 1e6)
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--herdless", required=True)
    p.add_argument("--memcached", default="/usr/bin/memcached")
    p.add_argument("--memory-mb", type=int, default=64)
    p.add_argument("--file-size", default="2g", help="ext_path size, memcached's syntax (2g, 512m)")
    p.add_argument("--value-size", type=int, default=2048)
    p.add_argument("--keys", type=int, default=0, help="default: 1.2 x what the file holds")
    p.add_argument("--sample", type=int, default=50, help="read back every N-th key")
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--rate", type=int, default=20000, help="sets per second at most (0: no limit)")
    p.add_argument("--zipf", default="0.99", help="Zipf exponent of the replay after the fill")
    p.add_argument("--requests", type=int, default=500000, help="gets of the Zipf replay (0: none)")
    p.add_argument("--ext-options", default="", help="more -o ext_* options for both")
    p.add_argument("--dir", default=None, help="where the flash files go (default: a temp dir)")
    p.add_argument("--herdless-first", action="store_true",
                   help="herdless takes the first turn (fill and replay alternate the order anyway)")
    p.add_argument("--chunk", type=int, default=25000,
                   help="gets per turn of the replay; the servers take turns, the order swapped each turn")
    p.add_argument("--verbose", action="store_true", help="print each turn's gets/s")
    p.add_argument("--mem-limit-mb", type=int, default=0,
                   help="each server in a memory cgroup of this size, page cache included (0: none): "
                        "most of the flash file is then read from the disk, not the page cache")
    args = p.parse_args()
    units = {"m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    file_bytes = int(args.file_size[:-1]) * units[args.file_size[-1].lower()]
    if args.keys == 0:
        args.keys = int(1.2 * file_bytes / args.value_size)
    workdir = args.dir or tempfile.mkdtemp(prefix="bench-extstore-")
    os.chmod(workdir, 0o777)   # the servers run as nobody
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    extra = ("," + args.ext_options) if args.ext_options else ""
    print("uptime: %s" % uptime())
    print("-m %d, ext_path of %s, %d-byte values, %d keys at <= %d/s, every %d-th read back"
          % (args.memory_mb, args.file_size, args.value_size, args.keys, args.rate, args.sample))
    servers = []
    for name, binary in (("memcached", args.memcached), ("herdless", args.herdless)):
        path = os.path.join(workdir, name + ".ext")
        ext = ["-o", "ext_path=%s:%s%s" % (path, args.file_size, extra)]
        servers.append((Server(name + " (ext_path)", [binary, "-m", str(args.memory_mb)] + user + ext, args),
                        path, [binary, "-m", str(args.memory_mb)] + user))
    if args.herdless_first:
        servers.reverse()
    try:
        running = []
        for server, path, ram_only in servers:
            err = server.start()
            if err and server.name.startswith("herdless"):
                print("herdless refused ext_path (%s): RAM only, same -m" % err.strip().splitlines()[0])
                server.name, server.argv = "herdless (RAM only)", ram_only
                err = server.start()
            if err:
                raise SystemExit("%s did not start: %s" % (server.name, err))
            running.append(server)
        t0 = time.time()
        counts = fill([s.sock for s in running], args.keys, args.value_size, args.batch, args.rate)
        fill_s = time.time() - t0
        for server in running:
            settle(server.sock, 2.0)
        # The files' dirty pages written back now, not by the kernel during the replay.
        os.sync()
        for server, (stored, refused) in zip(running, counts):
            server.sample_and_print(stored, refused, fill_s)
        for server, path, _ in servers:
            print("%-24s flash file in the page cache: %s MB" % (server.name, resident_mb(path)))
        if args.requests:
            print("replay: %d gets in turns of %d, uptime: %s" % (args.requests, args.chunk, uptime()), flush=True)
            replay_in_turns(running, args)
            for server, path, _ in servers:
                print("%-24s after the replay, in the page cache: %s MB" % (server.name, resident_mb(path)))
            for server in running:
                server.report()
            by_name = {s.name.split()[0]: s.replay.summary() for s in running}
            if len(by_name) == 2:
                h, m = by_name["herdless"], by_name["memcached"]
                cpu = {s.name.split()[0]: sum(s.replay.cpu) for s in running}
                print("herdless/memcached: gets/s %.2fx  p99 %.2fx  server CPU a get %.2fx  hit ratio %.4f / %.4f"
                      % (h[2] / m[2], h[3] / max(m[3], 1e-9), cpu["herdless"] / max(cpu["memcached"], 1e-9), h[0], m[0]))
        held = {s.name.split()[0]: s.held for s in running}
    finally:
        for server, path, _ in servers:
            server.stop()
            if os.path.exists(path):
                os.unlink(path)
    if args.dir is None:
        os.rmdir(workdir)
    print("uptime: %s" % uptime())
    if held.get("memcached"):
        print("items held, herdless/memcached: %.2f" % (held["herdless"] / held["memcached"]))


if __name__ == "__main__":
    main()
