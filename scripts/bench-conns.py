#!/usr/bin/python3
"""Connection scale: memory of idle connections and their effect on active clients.

For herdless and the reference memcached (--memcached PATH), one server at a
time, alternately for --rounds rounds: start it (-t 4, -c large enough for
the idle and the active connections), fill the key space, run memtier (preset
a of scripts/bench.py, --active connections) and note its p99; then open
--idle connections that each send one `version` and read its reply (so that
the server has read on them, as a real client's pooled connection) and stay
open; note the server's RSS before and after them (per connection: the
difference over --idle), then run memtier again beside them and note the p99.
The fd limit is raised to its hard limit (both the idle sockets and the
server's need one each). Servers are pinned to cpu 0, memtier to cpu 1.

    scripts/bench-conns.py [--herdless BIN] [--memcached PATH] [--idle 10000]
                           [--active 50] [--seconds 6] [--rounds 2]
"""
import argparse
import os
import resource
import shutil
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  free_port, Server, memtier_run, PRESETS


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_idle(port, count, batch=500):
    """count connections, each after one `version` round trip; returns the sockets."""
    socks = []
    while len(socks) < count:
        group = []
        for _ in range(min(batch, count - len(socks))):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"version\r\n")
            group.append(s)
        for s in group:
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = s.recv(100)
                if not chunk:
                    raise RuntimeError("server closed an idle connection")
                reply += chunk
        socks.extend(group)
    return socks


def one_round(name, argv, tool, preset, args, cpus):
    port = bench.free_port()
    srv = bench.Server(name, argv + ["-p", str(port), "-l", "127.0.0.1"], port, cpus[0])
    try:
        bench.memtier_run(tool, port, preset, 0, args.active, cpus[1], fill=True)
        quiet = bench.memtier_run(tool, port, preset, args.seconds, args.active, cpus[1])
        before = rss_kb(srv.proc.pid)
        idle = open_idle(port, args.idle)
        time.sleep(0.5)
        after = rss_kb(srv.proc.pid)
        busy = bench.memtier_run(tool, port, preset, args.seconds, args.active, cpus[1])
        after_busy = rss_kb(srv.proc.pid)
        for s in idle:
            s.close()
    finally:
        srv.stop()
    res = {"rss_before_mb": before / 1024, "rss_idle_mb": after / 1024,
           "rss_busy_mb": after_busy / 1024,
           "per_conn_b": (after - before) * 1024 / args.idle,
           "p99_quiet": quiet["p99"], "p99_idle": busy["p99"],
           "ops_quiet": quiet["ops"], "ops_idle": busy["ops"]}
    print(f"  {name:9s} rss {res['rss_before_mb']:.1f} -> {res['rss_idle_mb']:.1f} MB with "
          f"{args.idle} idle ({res['per_conn_b']:.0f} B/connection; {res['rss_busy_mb']:.1f} MB "
          f"after the busy run)  p99 {quiet['p99']:.3f} ms alone, {busy['p99']:.3f} ms beside them"
          f"  ops/s {quiet['ops']:.0f} / {busy['ops']:.0f}  load {os.getloadavg()[0]:.2f}",
          flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--herdless-args", default="", help="more flags for herdless, e.g. '-o io=uring'")
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--active", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--preset", default="a", help="a bench.py preset for the active clients")
    args = ap.parse_args()
    tool = os.environ.get("MEMTIER") or shutil.which("memtier_benchmark")
    if not tool:
        sys.exit("needs memtier_benchmark ($MEMTIER or PATH)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.idle + args.active + 100
    if hard != resource.RLIM_INFINITY and hard < need:
        sys.exit(f"the fd hard limit {hard} is below the {need} connections need")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))   # inherited by the servers
    cpus = ("0", "1") if (os.cpu_count() or 1) >= 2 and shutil.which("taskset") else (None, None)
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    common = ["-t", "4", "-m", "1024", "-c", str(need + 100)] + user
    servers = [("memcached", [args.memcached] + common),
               ("herdless", [args.herdless] + common + args.herdless_args.split())]
    preset = bench.PRESETS[args.preset][1]
    print(f"{args.idle} idle + {args.active} active connections (preset {args.preset}), "
          f"{args.rounds} rounds x {args.seconds}s; servers {args.memcached}, {args.herdless} "
          f"{args.herdless_args}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = {name: [] for name, _ in servers}
    for _ in range(args.rounds):
        for name, argv in servers:
            results[name].append(one_round(name, argv, tool, preset, args, cpus))
    med = {n: {k: statistics.median(r[k] for r in v) for k in v[0]} for n, v in results.items()}
    print("\n| server | RSS before | with idle | per idle connection | p99 alone | p99 beside idle | change |")
    print("|---|---|---|---|---|---|---|")
    for n, m in med.items():
        print(f"| {n} | {m['rss_before_mb']:.1f} MB | {m['rss_idle_mb']:.1f} MB | "
              f"{m['per_conn_b']:.0f} B | {m['p99_quiet']:.3f} ms | {m['p99_idle']:.3f} ms | "
              f"{m['p99_idle'] / m['p99_quiet']:.2f}x |")
    h, b = med["herdless"], med["memcached"]
    print(f"herdless/memcached per idle connection {h['per_conn_b'] / b['per_conn_b']:.2f}x; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
