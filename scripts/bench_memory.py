#!/usr/bin/python3
"""Memory efficiency: how many items each server holds in the same -m.

For each value size, starts memcached and herdless with the same -m, sets
distinct keys (pipelined, noreply) until the server reports evictions, then
prints the items it holds, its RSS, and the bytes per item beyond key+value
(counted against -m, and against RSS growth).
"""
import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_listening  # noqa: E402


def stats(sock):
    sock.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fill(argv, port, value_size, batch=2000):
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    proc = subprocess.Popen(argv + ["-p", str(port), "-l", "127.0.0.1"] + user,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        sock = socket.create_connection(("127.0.0.1", port))
        rss0 = rss_bytes(proc.pid)
        value = b"v" * value_size
        n = 0
        key_len = len(b"key:%010d" % 0)
        while True:
            payload = b"".join(b"set key:%010d 0 0 %d noreply\r\n%s\r\n" % (n + i, value_size, value)
                               for i in range(batch))
            sock.sendall(payload)
            n += batch
            st = stats(sock)
            if int(st.get("evictions", 0)) > 0:
                break
        time.sleep(0.2)
        st = stats(sock)
        items = int(st["curr_items"])
        rss = rss_bytes(proc.pid)
        limit = int(st["limit_maxbytes"])
        sock.close()
        return {
            "items": items,
            "rss": rss,
            "limit": limit,
            "overhead_limit": limit / items - key_len - value_size,
            "overhead_rss": (rss - rss0) / items - key_len - value_size,
        }
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--memory", type=int, default=256)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--herdless", default=os.environ.get("HERDLESS_BIN", "build/release/herdless"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    args = ap.parse_args()
    print(f"-m {args.memory}; keys of 14 bytes; values of {args.sizes} bytes; "
          "fill until the first eviction")
    print("| value | server | items held | RSS MiB | bytes/item over key+value (vs -m) | (vs RSS growth) |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for size in (int(s) for s in args.sizes.split(",")):
        res = {}
        for name, binary in (("memcached", args.memcached), ("herdless", args.herdless)):
            r = fill([binary, "-m", str(args.memory), "-t", "2"], free_port(), size)
            res[name] = r
            print(f"| {size} | {name} | {r['items']} | {r['rss'] / 2**20:.1f} | "
                  f"{r['overhead_limit']:.1f} | {r['overhead_rss']:.1f} |")
        ratios.append((size, res["herdless"]["items"] / res["memcached"]["items"]))
    for size, ratio in ratios:
        print(f"items held, herdless/memcached, {size}-byte values: {ratio:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
