#!/usr/bin/python3
"""Hit ratios: a seeded cache-aside trace replayed against herdless and memcached.

For each workload, generates one trace of key requests (the same for both
servers: the seed fixes it), starts Debian's memcached and herdless with the
same -m, and replays the trace as a cache-aside client does: get the keys
(multi-gets of --batch keys, pipelined on one connection); for every key that
missed, set it (noreply, same connection, so the next batch sees it). The
first --warmup share of the trace fills the cache and is not counted. Prints
each server's miss ratio, herdless/memcached miss-ratio ratio, items held
and evictions (from `stats` at the end).

Hit ratios do not depend on CPU timing: the trace, the batching and the order
of every get and set are fixed, so the figures repeat from run to run.

Workloads (name: keys requested):
  zipf:A    Zipf over --keys keys with exponent A (ranks shuffled over the keys)
  uniform   uniform over --keys keys
  scan:A    zipf:A, plus a one-pass scan of --keys new keys mixed into the
            middle third of the measured part (every other request); the miss
            ratio counts the Zipf requests only: does the scan flush the hot set?
"""
import argparse
import bisect
import os
import random
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_listening  # noqa: E402
from bench_memory import rss_bytes, stats  # noqa: E402

SCAN_BASE = 1 << 40   # scan keys never collide with the Zipf keys


def zipf_cdf(n, alpha):
    cdf = []
    total = 0.0
    for rank in range(1, n + 1):
        total += rank ** -alpha
        cdf.append(total)
    return [c / total for c in cdf]


def make_trace(workload, keys, length, seed):
    """Returns (ids, counted): key ids, and whether each request is measured."""
    rng = random.Random(seed)
    kind, _, arg = workload.partition(":")
    perm = list(range(keys))
    rng.shuffle(perm)
    if kind == "uniform":
        ids = [rng.randrange(keys) for _ in range(length)]
    elif kind in ("zipf", "scan"):
        cdf = zipf_cdf(keys, float(arg))
        rnd = rng.random
        bis = bisect.bisect_left
        last = keys - 1
        ids = [perm[min(bis(cdf, rnd()), last)] for _ in range(length)]
    else:
        raise SystemExit(f"unknown workload {workload!r}")
    zipf_request = [True] * len(ids)
    if kind == "scan":
        # A one-pass scan over `keys` new keys, interleaved 1:1 with the Zipf
        # requests in the middle third of the measured part.
        start = length // 3 + (length - length // 3) // 3
        scan = [SCAN_BASE + i for i in range(keys)]
        head, tail = ids[:start], ids[start:]
        mixed = []
        flags = []
        for i, s in enumerate(scan):
            if i < len(tail):
                mixed.append(tail[i])
                flags.append(True)
            mixed.append(s)
            flags.append(False)
        mixed.extend(tail[len(scan):])
        flags.extend([True] * max(0, len(tail) - len(scan)))
        ids = head + mixed
        zipf_request = [True] * len(head) + flags
    return ids, zipf_request


def key_of(i):
    return b"key:%010d" % i


def recv_until_end(sock, buf):
    while not buf.endswith(b"END\r\n"):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


def replay(port, ids, counted, warmup, batch, value):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    vlen = len(value)
    set_tail = b" 0 0 %d noreply\r\n%s\r\n" % (vlen, value)
    requests = misses = 0
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        keys = [key_of(i) for i in chunk]
        sock.sendall(b"get " + b" ".join(keys) + b"\r\n")
        reply = recv_until_end(sock, b"")
        hits = set()
        pos = 0
        while True:
            if reply.startswith(b"END\r\n", pos):
                break
            eol = reply.index(b"\r\n", pos)
            _, k, _, n = reply[pos:eol].split(b" ")[:4]
            hits.add(k)
            pos = eol + 2 + int(n) + 2
        missed = []
        for j, k in enumerate(keys):
            hit = k in hits
            if start + j >= warmup and counted[start + j]:
                requests += 1
                if not hit:
                    misses += 1
            if not hit:
                missed.append(k)
        if missed:
            sock.sendall(b"".join(b"set " + k + set_tail for k in dict.fromkeys(missed)))
    st = stats(sock)
    sock.close()
    return misses, requests, st


def run_server(argv, ids, counted, warmup, batch, value):
    port = free_port()
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    proc = subprocess.Popen(argv + ["-p", str(port), "-l", "127.0.0.1"] + user,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        t0 = time.time()
        misses, requests, st = replay(port, ids, counted, warmup, batch, value)
        return {
            "miss": misses / requests,
            "items": int(st["curr_items"]),
            "evictions": int(st["evictions"]),
            "rss": rss_bytes(proc.pid),
            "seconds": time.time() - t0,
        }
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads",
                    default="zipf:0.99@16,zipf:0.99@32,zipf:0.8@16,zipf:0.8@32,uniform@32,scan:0.99@32",
                    help="comma-separated WORKLOAD@MEGABYTES")
    ap.add_argument("--keys", type=int, default=1000000, help="distinct keys of the Zipf/uniform part")
    ap.add_argument("--requests", type=int, default=8000000, help="trace length")
    ap.add_argument("--warmup", type=float, default=0.33, help="share of the trace not counted")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=100, help="keys per multi-get")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="-t of both servers")
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--herdless-memory", type=float, default=None,
                    help="herdless's -m as a share of the workload's (e.g. 0.66: about as many "
                         "items as memcached holds, to see the eviction policy alone)")
    ap.add_argument("--other", default=None,
                    help="compare herdless against this herdless binary instead of memcached")
    args = ap.parse_args()
    base_name = "memcached" if args.other is None else "other"
    base_bin = args.memcached if args.other is None else args.other
    value = b"v" * args.value_size
    print(f"cache-aside replay: {args.keys} keys, {args.requests} requests (first "
          f"{args.warmup:.0%} not counted), {args.value_size}-byte values, 14-byte keys, "
          f"{args.batch}-key multi-gets, seed {args.seed}")
    print(f"| workload | -m | {base_name} miss | herdless miss | miss ratio h/{base_name[0]} | "
          f"{base_name} items | herdless items | {base_name} evictions | herdless evictions |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = []
    for spec in args.workloads.split(","):
        workload, _, mem = spec.partition("@")
        ids, counted = make_trace(workload, args.keys, args.requests, args.seed)
        warmup = int(len(ids) * args.warmup)
        res = {}
        for name, binary in ((base_name, base_bin), ("herdless", args.herdless)):
            m = mem
            if name == "herdless" and args.herdless_memory:
                m = str(max(1, round(float(mem) * args.herdless_memory)))
            res[name] = run_server([binary, "-m", m, "-t", str(args.threads)], ids, counted,
                                   warmup, args.batch, value)
        b, h = res[base_name], res["herdless"]
        ratio = h["miss"] / b["miss"] if b["miss"] else float("nan")
        summary.append((workload, mem, ratio))
        print(f"| {workload} | {mem} | {b['miss']:.4f} | {h['miss']:.4f} | {ratio:.3f} | "
              f"{b['items']} | {h['items']} | {b['evictions']} | {h['evictions']} |", flush=True)
    for workload, mem, ratio in summary:
        print(f"miss ratio herdless/{base_name}, {workload} at -m {mem}: {ratio:.3f}x")


if __name__ == "__main__":
    sys.exit(main())
