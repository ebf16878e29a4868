#!/usr/bin/python3
"""User-space instructions per request, herdless against memcached, counted by callgrind.

Timing on a shared 2-core machine moves by +-25 %; instruction counts do not.
Each server runs alone under `valgrind --tool=callgrind` (one worker thread,
as the user nobody), is filled with 1000 keys through a plain listener, then
memtier_benchmark sends N requests a connection (10 connections, 1:10
set:get, 100 B values). Two runs, N=1000 and N=4000, and the difference of
their totals divided by the difference in requests is the cost of one request
with start-up, fill and handshakes cancelled out. Kernel work (the loopback
TCP path) is not counted: both servers make the same system calls a request.

    scripts/bench_instructions.py [--tls] [--herdless BIN] [--ratio S:G] [--pipeline N]
                                  [--baseline BIN] [--herdless-args ARGS] [--base-args ARGS]
                                  [--meta | --binary]

--ratio and --pipeline are memtier's (default 1:10, 1); --baseline compares
against another herdless build (e.g. an older commit's) instead of memcached.
--meta sends the meta protocol instead (memtier has none): the same ten
connections at once, each its N requests in batches of --pipeline, `ms k:<n>
100 T0` and `mg k:<n> v f t` in the --ratio, random keys of the 1000, every
batch ended by `mn` (sent to both servers alike) and read up to its `MN`.
--binary: memtier's load in the binary protocol (memcache_binary).

Needs valgrind and memtier_benchmark ($MEMTIER or PATH). Slow: about a minute
a server with --tls.
"""
import argparse
import glob
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  free_port, wait_listening, make_certs

CONNS = 10


def run_once(binary, requests, tool, outdir, tls, load, extra=(), protocol="memcache_text"):
    port = bench.free_port()
    out = os.path.join(outdir, f"callgrind.{os.path.basename(binary)}.{requests}")
    server = [binary, "-t", "1", "-m", "64", "-p", str(port),
              # valgrind keeps a few descriptors: memcached's setrlimit(-c) must match its limit
              "-c", "1012"] + list(extra)
    client_tls = []
    if tls:
        # The fill goes through a plain listener; `notls:` needs -Z (memcached
        # 1.6.18 and herdless both refuse it without).
        plain = bench.free_port()
        ca, cert, key = tls
        server += ["-l", f"127.0.0.1,notls:127.0.0.1:{plain}",
                   "-Z", "-o", f"ssl_chain_cert={cert},ssl_key={key}"]
        client_tls = ["--tls", f"--cacert={ca}"]
    else:
        plain = port
        server += ["-l", "127.0.0.1"]
    argv = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}"] + server
    if os.geteuid() == 0:
        # Run the whole process as nobody: a server that drops privileges itself
        # could not write its profile to the file valgrind opened as root. setpriv
        # execs valgrind (runuser would stay its parent and SIGKILL it 2 s after
        # forwarding our SIGTERM: a loaded machine lost the profile so).
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + argv
    proc = subprocess.Popen(["bash", "-c", 'ulimit -n 1024 && exec "$@"', "bash"] + argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bench.wait_listening(port, proc, timeout=120)
        base = [tool, "-s", "127.0.0.1", f"--protocol={protocol}", "-t", "1", "--key-prefix=k:",
                "--key-minimum=1", "--key-maximum=1000", "--hide-histogram", "--data-size=100"]
        quiet = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(base + ["-p", str(plain), "-c", "1", "--ratio=1:0", "--key-pattern=P:P",
                               "--requests=allkeys"], **quiet)
        if callable(load):
            load(port, requests)
        else:
            subprocess.run(base + ["-p", str(port), "-c", str(CONNS), f"--requests={requests}"] +
                           load + client_tls, **quiet)
    finally:
        proc.terminate()
        proc.wait()
    totals = []
    for path in glob.glob(out + "-*"):   # a profile per thread: OUT-01, OUT-02, ...
        with open(path) as f:
            match = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        if not match:
            raise RuntimeError(f"no totals in {path}")
        totals.append(int(match.group(1)))
    if not totals:
        raise RuntimeError(f"no profile {out}-*")
    return sum(totals), max(totals)


def meta_load(ratio, pipeline):
    """The --meta load: a function of (port, requests a connection)."""
    sets, gets = (int(x) for x in ratio.split(":"))
    value = b"x" * 100

    def connection(port, requests, seed):
        rng = random.Random(seed)
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            done = 0
            while done < requests:
                batch = []
                for _ in range(min(pipeline, requests - done)):
                    key = b"k:%d" % rng.randint(1, 1000)
                    if rng.randrange(sets + gets) < sets:
                        batch.append(b"ms %s 100 T0\r\n%s\r\n" % (key, value))
                    else:
                        batch.append(b"mg %s v f t\r\n" % key)
                done += len(batch)
                sock.sendall(b"".join(batch) + b"mn\r\n")
                reply = b""
                while not (reply.endswith(b"\r\nMN\r\n") or reply == b"MN\r\n"):
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        raise RuntimeError("the server closed the connection")
                    reply += chunk

    def run(port, requests):
        threads = [threading.Thread(target=connection, args=(port, requests, i)) for i in range(CONNS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return run


def per_request(binary, tool, outdir, tls, load, extra=(), protocol="memcache_text"):
    small, large = 1000, 4000
    a = run_once(binary, small, tool, outdir, tls, load, extra, protocol)
    b = run_once(binary, large, tool, outdir, tls, load, extra, protocol)
    return tuple((y - x) / ((large - small) * CONNS) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--tls", action="store_true", help="both servers with -Z, memtier with --tls")
    ap.add_argument("--ratio", default="1:10", help="memtier's set:get ratio")
    ap.add_argument("--pipeline", type=int, default=1, help="memtier's requests in flight a connection")
    ap.add_argument("--baseline", help="another herdless binary to compare with instead of memcached")
    ap.add_argument("--herdless-args", default="", help="more flags for herdless, e.g. '-o io=uring'")
    ap.add_argument("--base-args", default="", help="more flags for the other server")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--meta", action="store_true", help="the meta protocol (ms/mg) instead of memtier's load")
    mode.add_argument("--binary", action="store_true", help="memtier's load in the binary protocol")
    args = ap.parse_args()
    protocol = "memcache_binary" if args.binary else "memcache_text"
    tool = os.environ.get("MEMTIER") or shutil.which("memtier_benchmark")
    if not tool or not shutil.which("valgrind"):
        sys.exit("needs memtier_benchmark ($MEMTIER) and valgrind")
    outdir = tempfile.mkdtemp(prefix="bench-instr-")
    os.chmod(outdir, 0o1777)
    tls = bench.make_certs(tempfile.mkdtemp(prefix="bench-certs-")) if args.tls else None
    load = meta_load(args.ratio, args.pipeline) if args.meta else \
        [f"--ratio={args.ratio}", f"--pipeline={args.pipeline}"]
    other = ("baseline", os.path.abspath(args.baseline)) if args.baseline else ("memcached", args.memcached)
    results = {}
    extra = {other[0]: args.base_args.split(), "herdless": args.herdless_args.split()}
    for name, binary in (other, ("herdless", os.path.abspath(args.herdless))):
        results[name] = per_request(binary, tool, outdir, tls, load, extra[name], protocol)
        print(f"{name:9s} {results[name][0]:9.0f} instructions a request (user space),"
              f" {results[name][1]:.0f} of them in its busiest thread", flush=True)
    print(f"busiest threads (the worker): {results['herdless'][1] / results[other[0]][1]:.3f}")
    print(f"ratio herdless/{other[0]}: {results['herdless'][0] / results[other[0]][0]:.3f}"
          f" (--ratio {args.ratio} --pipeline {args.pipeline}{', TLS' if tls else ''}{', meta' if args.meta else ''}{', binary' if args.binary else ''});"
          f" profiles in {outdir}")


if __name__ == "__main__":
    main()
