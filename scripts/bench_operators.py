#!/usr/bin/env python3
"""What `lru_crawler metadump` costs other clients: memtier_benchmark (50 connections, 1:10
set:get over KEYS keys) against herdless, alternating runs without and with a client that
dumps the whole cache in a loop, on herdless and on Debian's memcached (same -m, -t). Prints
ops/s and p50/p99/p99.9/max latency per run and the with/without ratios; the dumps' lines and
durations. Timing figures depend on the machine's load: take the bench lock
(`flock /work/helpers/bench.lock ...`) and compare ratios, not absolute numbers.

    scripts/bench_operators.py [--seconds 10] [--rounds 2] [--keys 200000]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server on %d did not start" % port)


def memtier(tool, port, keys, seconds=None, fill=False):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    argv = [tool, "-s", "127.0.0.1", "-p", str(port), "--protocol=memcache_text", "-t", "1",
            "-c", "50", "--key-prefix=k:", "--key-minimum=1", "--key-maximum=%d" % keys,
            "--data-size=100", "--hide-histogram", "--json-out-file=" + out,
            "--print-percentiles=50,99,99.9,100"]
    argv += (["--ratio=1:0", "--key-pattern=P:P", "--requests=allkeys"] if fill else
             ["--ratio=1:10", "--test-time=%d" % seconds])
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    t = data["ALL STATS"]["Totals"]
    p = t.get("Percentile Latencies", {})
    # memtier writes the 100th percentile as "p100.0" (not "p100.00"); "Max Latency" is the
    # same figure and is always there.
    return {"ops": t["Ops/sec"], "p50": p.get("p50.00", 0), "p99": p.get("p99.00", 0),
            "p999": p.get("p99.90", 0), "max": t["Max Latency"]}


def dump_loop(port, stop, stats):
    with socket.create_connection(("127.0.0.1", port)) as s:
        while not stop.is_set():
            t0 = time.monotonic()
            s.sendall(b"lru_crawler metadump all\r\n")
            buf = b""
            lines = 0
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    return
                lines += chunk.count(b"\n")
                buf = buf[-8:] + chunk
            stats.append((lines - 1, time.monotonic() - t0))


def run(name, argv, tool, args):
    port = free_port()
    proc = subprocess.Popen(argv + ["-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_listening(port)
        memtier(tool, port, args.keys, fill=True)
        rows = []
        for r in range(args.rounds):
            for dumping in (False, True):
                stop, dumps = threading.Event(), []
                t = threading.Thread(target=dump_loop, args=(port, stop, dumps))
                if dumping:
                    t.start()
                res = memtier(tool, port, args.keys, seconds=args.seconds)
                stop.set()
                if dumping:
                    t.join()
                res["dumps"] = dumps
                rows.append((dumping, res))
                print("%-9s round %d %-12s ops/s %9.0f  p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms%s"
                      % (name, r + 1, "with dumps" if dumping else "no dump", res["ops"], res["p50"],
                         res["p99"], res["p999"], res["max"],
                         "  (%d dumps of %d lines, %.2f s each)" % (
                             len(dumps), dumps[0][0] if dumps else 0,
                             sum(d[1] for d in dumps) / max(1, len(dumps))) if dumping else ""))
                sys.stdout.flush()
        for key in ("ops", "p99", "p999", "max"):
            base = sum(r[key] for d, r in rows if not d)
            dump = sum(r[key] for d, r in rows if d)
            print("%-9s with/without dumps: %s x%.2f" % (name, key, dump / base if base else 0))
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keys", type=int, default=200000)
    ap.add_argument("--herdless", default=os.path.join(REPO, "build", "release", "herdless"))
    ap.add_argument("--memtier", default=os.environ.get("MEMTIER", "memtier_benchmark"))
    args = ap.parse_args()
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    common = ["-l", "127.0.0.1", "-m", "1024", "-t", "2"] + user
    run("herdless", [args.herdless] + common, args.memtier, args)
    run("memcached", ["/usr/bin/memcached", "-U", "0"] + common, args.memtier, args)


if __name__ == "__main__":
    main()
