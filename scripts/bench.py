#!/usr/bin/python3
"""A/B throughput benchmark: herdless against Debian's memcached, same flags, same load.

Starts both servers with the same -t/-m/-c on loopback, fills the key space,
then runs each preset against A and B alternately (A B A B ...), and prints per
run and as medians: ops/s, hits/s, p50/p99/p99.9 latency, the server's CPU
seconds per million operations (from /proc/<pid>/stat, split user/kernel), and
herdless/memcached ratios, and how busy the server and the load generator were
(CPU seconds per second of the round: a load generator near 100 % bounds the
ops/s of both servers, so their ratio says little; CPU/op still compares
them) and the share of the machine's CPU time the hypervisor stole (a round
with much of it is not comparable). After each preset's rounds it counts each server's
system calls over a fixed number of requests (--syscall-requests, `perf stat`
on the syscall tracepoints of all its threads) and prints them per request, with
how it waits: its context switches, the high-resolution timers it starts and the
timer interrupts that land on it, a request.
--memcached PATH picks the reference server (e.g. 1.6.45 built from source);
--herdless-args adds flags to herdless only (e.g. "-o io=epoll"). Load generator: memtier_benchmark ($MEMTIER or on PATH); without it,
Debian's memcaslap (fewer figures; said in the output).

--self runs herdless against a second herdless process instead (an A/A run):
the spread of its ratios around 1.00 is the noise floor of this machine.
--baseline BIN runs herdless against another herdless binary (A/B of two
versions, e.g. before and after a change).

--tls runs both servers with -Z and the same certificate (a CA and a server
certificate made here with `openssl req`), memtier_benchmark with --tls
--cacert; the fill and flush go through a notls: listener. memtier only.
"""
import argparse
import json
import os
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PRESETS = {
    # name: (description, memtier args)
    "a": ("1:10 set:get, 100 B values, 100k keys, 50 conns",
          ["--ratio=1:10", "--data-size=100", "--key-pattern=R:R"]),
    "b": ("as a, --pipeline=16",
          ["--ratio=1:10", "--data-size=100", "--key-pattern=R:R", "--pipeline=16"]),
    "c": ("as a, 1000 B values",
          ["--ratio=1:10", "--data-size=1000", "--key-pattern=R:R"]),
    "d": ("10-key multi-get, 100 B values",
          ["--ratio=1:10", "--data-size=100", "--key-pattern=R:R", "--multi-key-get=10"]),
    "e": ("100% gets, hot Zipf keys, 100 B values",
          ["--ratio=0:1", "--data-size=100", "--key-pattern=Z:Z", "--key-zipf-exp=1.2"]),
}
KEYS = 100000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not start")


def cpu_split(pid):
    """(user, kernel) CPU seconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11], fields[12] are utime, stime (fields 14, 15 of the whole line).
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def stolen_seconds():
    """CPU seconds the hypervisor gave to others so far, all CPUs (/proc/stat's steal)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0


SYSCALL_EVENTS = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{n}" for n in (
    "read", "recvfrom", "sendmsg", "writev", "write", "epoll_wait", "io_uring_enter")]
# How a server waits: its threads' context switches, the high-resolution timers they start
# (an io_uring wait with a time-out starts one) and the timer interrupts that land on them.
WAIT_EVENTS = {"context-switches": "switches", "timer:hrtimer_start": "timers",
               "irq_vectors:local_timer_entry": "timer_irqs"}


def countable(event):
    """Whether perf can count `event` here: a software event, or a tracepoint tracefs lists."""
    if ":" not in event:
        return True
    return any(os.path.isdir(os.path.join(root, "events", *event.split(":")))
               for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))


def count_syscalls(pid, run):
    """Runs run() with `perf stat` counting the system calls of every thread of pid.
    Returns {event name: count} (the total is "all"), or None if perf cannot count here."""
    if not shutil.which("perf"):
        return None
    with tempfile.NamedTemporaryFile(suffix=".perf", delete=False) as tf:
        out = tf.name
    events = SYSCALL_EVENTS + [e for e in WAIT_EVENTS if countable(e)]
    perf = subprocess.Popen(["perf", "stat", "-x", ",", "-o", out, "-p", str(pid),
                             "-e", ",".join(events)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)   # perf attaches to every thread
    try:
        run()
    finally:
        perf.send_signal(2)
        perf.wait(10)
    counts = {}
    with open(out) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) >= 3 and parts[0].isdigit():
                name = WAIT_EVENTS.get(parts[2]) or \
                    parts[2].split(":")[-1].replace("sys_enter_", "").replace("sys_enter", "all")
                counts[name] = int(parts[0])
    os.unlink(out)
    return counts if "all" in counts else None


def syscall_line(name, counts, requests, cpu):
    """One line: system calls per request (total and the main ones), CPU user/kernel."""
    user, kern = cpu
    split = f"cpu user {user / requests * 1e6:.2f} kernel {kern / requests * 1e6:.2f} s/Mop"
    if counts is None:
        return f"  syscalls {name:9s} (perf cannot count system calls here)  {split}"
    waits = set(WAIT_EVENTS.values())
    parts = " ".join(f"{k} {v / requests:.3f}" for k, v in sorted(counts.items())
                     if k != "all" and k not in waits and v)
    wait_parts = " ".join(f"{k} {counts[k] / requests:.3f}" for k in WAIT_EVENTS.values() if k in counts)
    return (f"  syscalls {name:9s} {counts['all'] / requests:.3f}/request ({parts})  {split}"
            + (f"\n  waits    {name:9s} {wait_parts} /request" if wait_parts else ""))


def make_certs(directory):
    """A CA and a server certificate for 127.0.0.1 it signs; returns (ca, cert, key) paths."""
    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=directory, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bench CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "1",
        "-days", "2", "-extfile", "server.ext", "-out", "server.pem")
    os.chmod(directory, 0o755)
    for name in os.listdir(directory):
        os.chmod(os.path.join(directory, name), 0o644)
    return tuple(os.path.join(directory, n) for n in ("ca.pem", "server.pem", "server.key"))


def flush(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"flush_all\r\n")
        s.recv(100)


class Server:
    def __init__(self, name, argv, port, cpus, plain_port=None):
        self.name, self.port = name, port
        self.plain_port = plain_port or port   # fill and flush (a notls: listener with --tls)
        prefix = ["taskset", "-c", cpus] if cpus else []
        self.proc = subprocess.Popen(prefix + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.plain_port, self.proc)
        self.check()

    def check(self):
        """Raises unless this server's process is alive and is the one answering on its port:
        a server that died, or another one on the same port, would have been measured silently
        (its CPU read as a dead process's zeros, the other server's ops/s as its own)."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}")
        with socket.create_connection(("127.0.0.1", self.plain_port), timeout=10) as sock:
            sock.sendall(b"stats\r\n")
            reply = b""
            while not reply.endswith(b"END\r\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        pid = re.search(rb"^STAT pid (\d+)\r$", reply, re.M)
        if not pid or int(pid.group(1)) != self.proc.pid:
            raise RuntimeError(f"port {self.plain_port} is answered by pid "
                               f"{pid.group(1).decode() if pid else '?'}, not {self.name}'s {self.proc.pid}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def memtier_run(tool, port, preset_args, seconds, conns, cpus, fill=False, tls_args=(),
                requests=0):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    argv = ([ "taskset", "-c", cpus] if cpus else []) + [
        tool, "-s", "127.0.0.1", "-p", str(port), "--protocol=memcache_text",
        "-t", "1", "-c", str(conns), "--key-prefix=k:", "--key-minimum=1",
        f"--key-maximum={KEYS}", "--hide-histogram", f"--json-out-file={out}"] + list(tls_args)
    if fill:
        size = [a for a in preset_args if a.startswith("--data-size")]
        argv += ["--ratio=1:0", "--key-pattern=P:P", "--requests=allkeys"] + size
    elif requests:
        argv += [f"--requests={requests}"] + preset_args
    else:
        argv += [f"--test-time={seconds}"] + preset_args
    # The load generator's share of its core: near 100 % it, not the server,
    # bounds ops/s (memtier's one thread saturates a core in the pipelined presets).
    usage0, wall0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    res = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    usage1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - wall0
    client_busy = ((usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)) / wall
    if res.returncode != 0:
        raise RuntimeError(f"memtier failed: {' '.join(argv)}\n{res.stderr[-2000:]}")
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    totals = data["ALL STATS"]["Totals"]
    gets = data["ALL STATS"].get("Gets", {})
    pct = totals.get("Percentile Latencies", {})
    return {
        "ops": totals["Ops/sec"],
        "count": totals.get("Count", 0),
        "hits": gets.get("Hits/sec", 0.0),
        "p50": pct.get("p50.00", 0.0),
        "p99": pct.get("p99.00", 0.0),
        "p999": pct.get("p99.90", 0.0),
        "client_busy": client_busy,
        "wall": wall,
    }


def memcaslap_run(port, preset_args, seconds, conns, cpus):
    size = next((a.split("=")[1] for a in preset_args if a.startswith("--data-size")), "100")
    argv = (["taskset", "-c", cpus] if cpus else []) + [
        "memcaslap", "-s", f"127.0.0.1:{port}", "-T", "1", "-c", str(conns),
        "-t", f"{seconds}s", "-X", size]
    res = subprocess.run(argv, capture_output=True, text=True)
    ops = 0.0
    count = 0
    for line in res.stdout.splitlines():
        if line.startswith("Run time"):
            # "Run time: 10.0s Ops: 123456 TPS: 12345 Net_rate: ..."
            parts = line.split()
            count = int(parts[parts.index("Ops:") + 1])
            ops = float(parts[parts.index("TPS:") + 1])
    return {"ops": ops, "count": count, "hits": 0.0, "p50": 0.0, "p99": 0.0, "p999": 0.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="a,b,c,d,e")
    ap.add_argument("--rounds", type=int, default=3, help="A/B alternations per preset")
    ap.add_argument("--seconds", type=int, default=10, help="length of one run")
    ap.add_argument("--threads", type=int, default=4, help="-t of both servers")
    ap.add_argument("--memory", type=int, default=1024, help="-m of both servers (MB)")
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--self", action="store_true",
                    help="baseline is a second herdless (A/A: shows the noise floor)")
    ap.add_argument("--baseline", default=None,
                    help="baseline is this herdless binary (e.g. a build of an older commit)")
    ap.add_argument("--tls", action="store_true",
                    help="both servers with -Z and one certificate, memtier with --tls --cacert")
    ap.add_argument("--herdless-args", default="",
                    help="more flags for herdless only, e.g. '-o io=epoll'")
    ap.add_argument("--base-args", default="",
                    help="more flags for the baseline server only")
    ap.add_argument("--syscall-requests", type=int, default=100000,
                    help="after each preset's rounds, count each server's system calls over "
                         "this many requests (perf stat; 0: skip)")
    args = ap.parse_args()
    base = "herdless2" if args.self else "before" if args.baseline else "memcached"
    base_bin = args.herdless if args.self else args.baseline or args.memcached

    tool = os.environ.get("MEMTIER") or shutil.which("memtier_benchmark")
    ncpu = os.cpu_count() or 1
    server_cpus, load_cpus = ("0", "1") if ncpu >= 2 and shutil.which("taskset") else (None, None)
    print(f"machine: {ncpu} cores, {os.uname().release}; "
          + (f"servers pinned to cpu {server_cpus}, load generator to cpu {load_cpus}"
             if server_cpus else "no pinning (fewer than 2 cores or no taskset)"))
    print("load generator: " + (tool if tool else
          "memcaslap (memtier_benchmark not found: no latency percentiles, no hit counts)"))

    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    common = ["-t", str(args.threads), "-m", str(args.memory), "-c", "4096"] + user
    tls_args = []
    pa, pb = free_port(), free_port()
    plain = {pa: None, pb: None}
    if args.tls:
        if not tool:
            sys.exit("--tls needs memtier_benchmark (MEMTIER=/opt/memtier/bin/memtier_benchmark)")
        certdir = tempfile.mkdtemp(prefix="bench-certs-")
        ca, cert, key = make_certs(certdir)
        common += ["-Z", "-o", f"ssl_chain_cert={cert},ssl_key={key}"]
        tls_args = ["--tls", f"--cacert={ca}"]
        plain = {pa: free_port(), pb: free_port()}
        print(f"TLS: both servers -Z with {cert}; memtier --tls --cacert {ca}")

    def listen(port):
        entries = ["127.0.0.1"] + ([f"notls:127.0.0.1:{plain[port]}"] if plain[port] else [])
        return ["-p", str(port), "-l", ",".join(entries)]

    servers = {
        base: Server(base, [base_bin] + listen(pa) + common + shlex.split(args.base_args), pa,
                     server_cpus, plain[pa]),
        "herdless": Server("herdless", [args.herdless] + listen(pb) + common
                           + shlex.split(args.herdless_args), pb, server_cpus, plain[pb]),
    }
    print(f"servers: {base} {base_bin} {args.base_args}, herdless {args.herdless} "
          f"{args.herdless_args}; flags: {' '.join(common)}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary = []
    try:
        for name in args.presets.split(","):
            desc, preset_args = PRESETS[name]
            print(f"\n== preset {name}: {desc}; {args.rounds} rounds x {args.seconds}s, "
                  f"{args.conns} connections")
            results = {base: [], "herdless": []}
            for srv in servers.values():
                flush(srv.plain_port)
                if tool:
                    memtier_run(tool, srv.plain_port, preset_args, 0, args.conns, load_cpus, fill=True)
            for r in range(args.rounds):
                for srv in servers.values():
                    srv.check()
                    cpu0 = cpu_split(srv.proc.pid)
                    steal0 = stolen_seconds()
                    if tool:
                        res = memtier_run(tool, srv.port, preset_args, args.seconds, args.conns, load_cpus,
                                          tls_args=tls_args)
                    else:
                        res = memcaslap_run(srv.port, preset_args, args.seconds, args.conns, load_cpus)
                    cpu1 = cpu_split(srv.proc.pid)
                    srv.check()
                    ops_total = res["count"] or res["ops"] * args.seconds
                    mops = ops_total / 1e6 if ops_total else float("inf")
                    res["user_per_mop"] = (cpu1[0] - cpu0[0]) / mops
                    res["kernel_per_mop"] = (cpu1[1] - cpu0[1]) / mops
                    res["cpu_per_mop"] = res["user_per_mop"] + res["kernel_per_mop"]
                    wall = res.get("wall", args.seconds)
                    res["server_busy"] = (cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / wall
                    # On a virtual machine a round whose CPUs were taken away is slow for
                    # both servers' rounds alike only if it happens to both: shown per round.
                    res["steal"] = (stolen_seconds() - steal0) / (wall * (ncpu or 1))
                    results[srv.name].append(res)
                    print(f"  round {r + 1} {srv.name:9s} ops/s {res['ops']:10.0f}  hits/s {res['hits']:10.0f}"
                          f"  p50 {res['p50']:.3f}  p99 {res['p99']:.3f}  p99.9 {res['p999']:.3f} ms"
                          f"  cpu {res['cpu_per_mop']:.2f} s/Mop (user {res['user_per_mop']:.2f}"
                          f" kernel {res['kernel_per_mop']:.2f})"
                          + (f"  busy: server {100 * res['server_busy']:.0f}%,"
                             f" load generator {100 * res['client_busy']:.0f}%, " if "client_busy" in res else "  ")
                          + f"stolen {100 * res['steal']:.0f}%")
            med = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in results.items()}
            m, h = med[base], med["herdless"]
            def ratio(f):
                return h[f] / m[f] if m[f] else float("nan")
            if tool and args.syscall_requests:
                per_conn = max(1, args.syscall_requests // args.conns)
                for srv in servers.values():
                    c0 = cpu_split(srv.proc.pid)
                    counts = count_syscalls(srv.proc.pid, lambda: memtier_run(
                        tool, srv.port, preset_args, 0, args.conns, load_cpus, tls_args=tls_args,
                        requests=per_conn))
                    c1 = cpu_split(srv.proc.pid)
                    print(syscall_line(srv.name, counts, per_conn * args.conns,
                                       (c1[0] - c0[0], c1[1] - c0[1])))
            print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            print(f"  median {base:9s} ops/s {m['ops']:.0f} p99 {m['p99']:.3f} ms cpu {m['cpu_per_mop']:.2f} s/Mop")
            print(f"  median herdless  ops/s {h['ops']:.0f} p99 {h['p99']:.3f} ms cpu {h['cpu_per_mop']:.2f} s/Mop")
            print(f"  ratio herdless/{base}: ops/s {ratio('ops'):.2f}x  p50 {ratio('p50'):.2f}x  "
                  f"p99 {ratio('p99'):.2f}x  p99.9 {ratio('p999'):.2f}x  cpu/op {ratio('cpu_per_mop'):.2f}x")
            summary.append((name, m, h, ratio("ops"), ratio("p99"), ratio("cpu_per_mop")))
    finally:
        for srv in servers.values():
            srv.stop()
    print(f"\n| preset | {base} ops/s | herdless ops/s | ops ratio | p99 ratio | CPU/op ratio |")
    print("|---|---|---|---|---|---|")
    for name, m, h, ro, rp, rc in summary:
        print(f"| {name} | {m['ops']:.0f} | {h['ops']:.0f} | {ro:.2f} | {rp:.2f} | {rc:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
