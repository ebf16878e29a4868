#!/usr/bin/python3
"""Cluster events behind nutcracker: herdless against memcached (issue 22, point 3).

Three nodes behind Debian's nutcracker (ketama fnv1a_64, auto_eject_hosts: true,
server_failure_limit: 1, server_retry_timeout --retry-ms), read-through clients over --keys
keys (Zipf --zipf) and writers, all in one asyncio process:

- a reader gets a key through the proxy; on a miss it loads the key from a fake database
  (--recompute-ms, counted) and fills the cache with `add` (TTL --ttl); on a proxy error it
  loads from the database too (counted as a load and as an error) and fills nothing;
- a writer bumps a key's version in the database, then either sets the new value through
  the proxy (write-through) or deletes the key (invalidation), half and half; the write is
  "committed" when the proxy answered.
Every value carries its version. A read is stale when it returns a version older than the
key's committed version when the read started. A read is stale-after-flap when, after the
node came back, it returns a version the key had when the node went away although the key
was written since: what a node restored from a snapshot must never serve.

Scenarios, each run for memcached x3 and herdless x3 (same nodes, same load):
  join  a fourth node is started and the clients move to a second nutcracker that lists it
        (nutcracker does not reload its configuration). herdless: the new node has the
        4-node ring (-o ring, ring_self=node4) and warms each miss from the key's previous
        owner; memcached: the new node starts empty.
  still the control for join: the same run with no fourth node (the clients stay on the
        3-node proxy), measured over the same window and the same keys (the keys node4
        would take): what those keys cost with no join. `join` minus `still` is what the
        join itself costs, without a baseline scaled from before the event.
  flap  node3 stops (SIGTERM: herdless writes its -e snapshot), nutcracker ejects it and its
        keys go to the others; after --away seconds it comes back: herdless with -e and the
        ring (it asks the others for the keys they changed for it and drops them), memcached
        empty. With --no-ring the herdless nodes have no ring: the return relies on
        --herdless-args '-o restore_max_age=S' (the snapshot comes back stale).
  still-flap the control for flap: the same run with no stop and no restart, measured over the
        same windows ("death", "return") and the same keys (node3's). `flap` minus
        `still-flap` is what the death and the return themselves cost.
The cache is prefilled with every key, TTLs spread over 1..--ttl s (as if set over the last
--ttl s). Per scenario: the --baseline s before the event, then the --window s after it
(flap: the --away s of the death, then --window s after the return). Which keys move is
asked of a helper herdless with the ring (`ring owner`), not in the data path.
"""
import argparse
import asyncio
import bisect
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_listening  # noqa: E402

NUTCRACKER = "/usr/sbin/nutcracker"
PAD = b"x" * 64


def key_names(count):
    return ["k:" + hashlib.sha1(str(i).encode()).hexdigest()[:16] for i in range(count)]


def zipf_picker(n, alpha, rng):
    cdf, total = [], 0.0
    for rank in range(1, n + 1):
        total += rank ** -alpha
        cdf.append(total)
    cdf = [c / total for c in cdf]
    perm = list(range(n))
    rng.shuffle(perm)
    return lambda: perm[min(bisect.bisect_left(cdf, rng.random()), n - 1)]


def user_args():
    return ["-u", "nobody"] if os.geteuid() == 0 else []


def fixed_port():
    """A free port below the ephemeral range: the nodes' and proxies' ports are written into the
    ring files minutes before node4 or the second proxy listens, and an ephemeral port (free_port)
    may meanwhile be taken as the local port of some connection on the machine."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.SystemRandom()
    while True:
        port = rng.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


class Cluster:
    """The nodes (index 0..3, names node1..node4, fixed ports) and their ring files."""

    def __init__(self, kind, args, workdir):
        self.kind, self.args, self.workdir = kind, args, workdir
        self.ports = [fixed_port() for _ in range(4)]
        self.procs = [None] * 4
        self.snap = os.path.join(workdir, "snap-node3")
        self.rings = {n: self.write_ring(n, fixed_port()) for n in (3, 4)}

    def write_ring(self, count, listen):
        path = os.path.join(self.workdir, "ring%d.yml" % count)
        with open(path, "w") as f:
            f.write("bench:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n"
                    "  timeout: 2000\n  auto_eject_hosts: true\n  server_failure_limit: 1\n"
                    "  server_retry_timeout: %d\n  servers:\n" % (listen, self.args.retry_ms))
            for i in range(count):
                f.write("   - 127.0.0.1:%d:1 node%d\n" % (self.ports[i], i + 1))
        os.chmod(path, 0o644)
        return path, listen

    def node_argv(self, i, ring_nodes):
        if self.kind == "memcached":
            return [self.args.memcached, "-l", "127.0.0.1", "-p", str(self.ports[i]), "-U", "0",
                    "-t", "1", "-m", "64"] + user_args()
        ring = "" if self.args.no_ring else ",ring=%s,ring_self=node%d" % (self.rings[ring_nodes][0], i + 1)
        argv = [self.args.herdless, "-l", "127.0.0.1", "-p", str(self.ports[i]), "-U", "0", "-t", "1",
                "-m", "64"] + user_args() + ["-o", "classic_stampede=stale,stale_grace=60" + ring]
        if i == 2:
            argv += ["-e", self.snap]
        return argv + self.args.herdless_args.split()

    def start_node(self, i, ring_nodes):
        argv = self.node_argv(i, ring_nodes)
        self.procs[i] = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                         stderr=open(os.path.join(self.workdir, "node%d.log" % (i + 1)), "a"))
        wait_listening(self.ports[i], self.procs[i], timeout=30)
        return " ".join(argv)

    def stop_node(self, i):
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)   # herdless -e writes its snapshot on an orderly stop
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs[i] = None

    def start_proxy(self, ring_nodes):
        path, listen = self.rings[ring_nodes]
        argv = [NUTCRACKER, "-c", path, "-s", str(free_port()), "-a", "127.0.0.1",
                "-o", os.path.join(self.workdir, "nutcracker%d.log" % ring_nodes)]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(listen, p)
        return p, listen


def owners(args, cluster, ring_nodes, keys):
    """{key: node index} on the ring of `ring_nodes` nodes, from a helper herdless's `ring owner`."""
    port = free_port()
    p = subprocess.Popen([args.herdless, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1"]
                         + user_args() + ["-o", "ring=%s,ring_self=node1" % cluster.rings[ring_nodes][0]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    index = {"127.0.0.1:%d" % port_: i for i, port_ in enumerate(cluster.ports)}
    found = {}
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        for start in range(0, len(keys), 200):
            s.sendall(b"ring owner %s\r\n" % " ".join(keys[start:start + 200]).encode())
            for line in iter(f.readline, b"END\r\n"):
                _, k, owner = line.decode().split()
                found[k] = index[owner]
    p.terminate()
    p.wait()
    return found


CLUSTER_STATS = ("warm_fetches", "warm_hits", "warm_misses", "warm_stale", "warm_stale_copies", "warm_timeouts",
                 "warm_errors", "warm_refused", "warm_invalidations", "warm_invalidations_failed",
                 "foreign_sets", "foreign_hits", "foreign_logged", "foreign_handed")


def herdless_stats(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
    stats = dict(line.split()[1:3] for line in data.decode().splitlines() if line.startswith("STAT "))
    return {k: int(stats[k]) for k in CLUSTER_STATS if k in stats}


class Conn:
    """One text-protocol connection (to nutcracker), reconnected after an error."""

    def __init__(self, port):
        self.port, self.r, self.w = port, None, None

    async def call(self, request, ends):
        try:
            if self.w is None:
                self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)
            self.w.write(request)
            line = await asyncio.wait_for(self.r.readline(), 5)
            if not line:
                raise ConnectionError("closed")
            if line.startswith(b"VALUE "):
                data = await self.r.readexactly(int(line.split()[3]) + 2)
                await self.r.readline()   # END
                return data[:-2]
            if line in ends:
                return line
            raise ConnectionError(line.strip().decode(errors="replace"))
        except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            self.close()
            raise ConnectionError("request failed")

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


class Run:
    """One scenario on one kind of cluster: the database, the counters, the clients."""

    def __init__(self, args, keys, moved):
        self.args, self.keys, self.moved = args, keys, moved
        self.version = {k: 0 for k in keys}     # the database
        self.committed = {k: 0 for k in keys}   # versions whose cache write was answered
        self.at_away = None                     # committed versions when the node went away
        self.back_at = None                     # when it came back
        self.changed_before_return = set()      # keys written while it was away, before it restarted
        self.stale_flap_keys = set()
        self.moved_read = {}                    # second -> moved keys some reader asked for then
        self.t0 = time.monotonic()
        self.port = None
        self.stop = False
        self.series = {}                        # counter -> {second: count}
        self.events = {}

    def count(self, name, n=1):
        second = int(time.monotonic() - self.t0)
        bucket = self.series.setdefault(name, {})
        bucket[second] = bucket.get(second, 0) + n

    def total(self, name, start, end):
        return sum(v for s, v in self.series.get(name, {}).items() if start <= s < end)

    async def load(self, k):
        self.count("loads")
        if k in self.moved:
            self.count("loads_moved")
        await asyncio.sleep(self.args.recompute_ms / 1000)
        return self.version[k]

    def check(self, k, value, committed_at_start):
        v = int(value.split(b":", 1)[0])
        self.count("hits")
        if v < committed_at_start:
            self.count("stale")
            if k in self.moved:
                self.count("stale_moved")
            if (self.back_at is not None and self.at_away is not None and
                    v <= self.at_away[k] < committed_at_start):
                self.count("stale_after_flap")
                self.stale_flap_keys.add(k)
                if k in self.changed_before_return:
                    self.count("stale_after_flap_listed")   # written before the node came back

    async def reader(self, rng, pick):
        conn = Conn(self.port)
        interval = self.args.clients / self.args.rate
        next_at = time.monotonic() + rng.random() * interval
        while not self.stop:
            next_at += interval
            if conn.port != self.port:
                conn.close()
                conn.port = self.port
            k = self.keys[pick()]
            if k in self.moved:
                self.moved_read.setdefault(int(time.monotonic() - self.t0), set()).add(k)
            committed = self.committed[k]
            try:
                got = await conn.call(b"get %s\r\n" % k.encode(), (b"END\r\n",))
                if got == b"END\r\n":
                    self.count("misses")
                    v = await self.load(k)
                    value = b"%d:%s" % (v, PAD)
                    await conn.call(b"add %s 0 %d %d\r\n%s\r\n" % (k.encode(), self.args.ttl, len(value), value),
                                    (b"STORED\r\n", b"NOT_STORED\r\n"))
                else:
                    self.check(k, got, committed)
            except ConnectionError:
                self.count("errors")
                await self.load(k)
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        conn.close()

    async def writer(self, rng, pick):
        conn = Conn(self.port)
        interval = 1.0 / self.args.write_rate
        next_at = time.monotonic()
        while not self.stop:
            next_at += interval
            if conn.port != self.port:
                conn.close()
                conn.port = self.port
            k = self.keys[pick()]
            self.version[k] += 1
            v = self.version[k]
            try:
                if rng.random() < 0.5:
                    value = b"%d:%s" % (v, PAD)
                    await conn.call(b"set %s 0 %d %d\r\n%s\r\n" % (k.encode(), self.args.ttl, len(value), value),
                                    (b"STORED\r\n",))
                else:
                    await conn.call(b"delete %s\r\n" % k.encode(), (b"DELETED\r\n", b"NOT_FOUND\r\n"))
                self.committed[k] = max(self.committed[k], v)
                self.count("writes")
            except ConnectionError:
                self.count("write_errors")   # not committed: a read may still see the old value
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        conn.close()

    def mark(self, name):
        self.events[name] = time.monotonic() - self.t0
        return self.events[name]


async def prefill(port, keys, ttl, rng):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    for start in range(0, len(keys), 500):
        for k in keys[start:start + 500]:
            value = b"0:%s" % PAD
            w.write(b"set %s 0 %d %d\r\n%s\r\n" % (k.encode(), rng.randint(1, ttl), len(value), value))
        await w.drain()
        for _ in keys[start:start + 500]:
            await r.readline()
    w.close()


async def scenario(args, kind, name, keys):
    workdir = tempfile.mkdtemp(prefix="bench-cluster-")
    os.chmod(workdir, 0o777)   # the nodes run as nobody and write node3's snapshot here
    cluster = Cluster(kind, args, workdir)
    procs = []
    try:
        return await scenario_on(args, kind, name, keys, cluster, procs)
    finally:
        for i in range(4):
            cluster.stop_node(i)
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait()


async def scenario_on(args, kind, name, keys, cluster, procs):
    rng = random.Random(args.seed)
    commands = [cluster.start_node(i, 3) for i in range(3)]
    proxy3, port3 = cluster.start_proxy(3)
    procs.append(proxy3)
    if name in ("join", "still"):
        own4 = owners(args, cluster, 4, keys)
        moved = {k for k, o in own4.items() if o == 3}
    else:
        own3 = owners(args, cluster, 3, keys)
        moved = {k for k, o in own3.items() if o == 2}
    run = Run(args, keys, moved)
    await prefill(port3, keys, args.ttl, rng)
    run.port = port3
    run.t0 = time.monotonic()
    tasks = [asyncio.create_task(run.reader(random.Random(args.seed + i),
                                            zipf_picker(len(keys), args.zipf, random.Random(args.seed + i))))
             for i in range(args.clients)]
    tasks.append(asyncio.create_task(run.writer(random.Random(args.seed - 1),
                                                zipf_picker(len(keys), args.zipf, random.Random(args.seed - 1)))))
    await asyncio.sleep(args.settle + args.baseline)
    windows = {}
    if name == "join":
        proxy4, port4 = cluster.start_proxy(4)
        procs.append(proxy4)
        commands.append(cluster.start_node(3, 4))
        t = run.mark("join")
        run.port = port4   # every client moves to the proxy that lists node4
        await asyncio.sleep(args.window)
        windows["join"] = (t, args.window)
    elif name == "still":
        t = run.mark("still")   # nothing happens
        await asyncio.sleep(args.window)
        windows["still"] = (t, args.window)
    else:   # flap, or its control still-flap: the same timeline with node3 left running
        run.at_away = dict(run.committed)
        t = run.mark("death")
        if name == "flap":
            cluster.stop_node(2)
        await asyncio.sleep(args.away)
        windows["death"] = (t, args.away)
        run.changed_before_return = {k for k in keys if run.committed[k] > run.at_away[k]}
        if name == "flap":
            commands.append(cluster.start_node(2, 3))
        run.back_at = t2 = run.mark("return")
        await asyncio.sleep(args.window)
        windows["return"] = (t2, args.window)
    run.stop = True
    await asyncio.gather(*tasks)
    node_stats = {}
    if kind == "herdless":
        for i, port in enumerate(cluster.ports):
            if cluster.procs[i] is not None:
                node_stats["node%d" % (i + 1)] = herdless_stats(port)
        with open(os.path.join(cluster.workdir, "node3.log")) as f:
            node_stats["node3 log"] = [line.strip() for line in f if "ring:" in line]
    base_end = int(args.settle + args.baseline)
    result = {"kind": kind, "scenario": name, "moved": len(moved), "commands": commands, "events": {}}
    names = ("loads", "loads_moved", "misses", "errors", "stale", "stale_moved", "stale_after_flap",
             "stale_after_flap_listed", "hits", "writes", "write_errors")
    result["baseline"] = {n: run.total(n, base_end - args.baseline, base_end) for n in names}
    for event, (t, length) in windows.items():
        start = int(t)
        result["events"][event] = {n: run.total(n, start, start + length) for n in names}
        result["events"][event]["seconds"] = length
        result["events"][event]["moved_read"] = len(set().union(
            *(ks for s, ks in run.moved_read.items() if start <= s < start + length)))
    result["after_all"] = {n: run.total(n, base_end, 10 ** 6) for n in names}
    result["series"] = {n: run.series.get(n, {}) for n in ("loads", "loads_moved", "errors", "stale")}
    result["event_times"] = run.events
    result["node_stats"] = node_stats
    result["stale_after_flap_keys"] = len(run.stale_flap_keys)
    return result


def report(results, args):
    print("%d keys, Zipf %.2f, TTL %d s, %d ms recompute, %d readers at %d gets/s in all, %d writes/s "
          "(half set, half delete); nutcracker ketama fnv1a_64, server_retry_timeout %d ms; baseline %d s, "
          "window %d s, away %d s" % (args.keys, args.zipf, args.ttl, args.recompute_ms, args.clients, args.rate,
                                     args.write_rate, args.retry_ms, args.baseline, args.window, args.away))
    for r in results:
        print("%s %s: commands:" % (r["scenario"], r["kind"]))
        for c in r["commands"]:
            print("    " + c)
    print()
    print("| event | server | moved keys | DB loads (moved keys) | baseline, same length | misses | "
          "client errors | stale reads (moved keys) | stale-after-flap (key written before the restart) | gets |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        b = r["baseline"]
        for event, e in r["events"].items():
            scale = e["seconds"] / args.baseline
            print("| %s (%d s) | %s | %d | %d (%d) | %d (%d) | %d | %d | %d (%d) | %d (%d) | %d |" % (
                event + (" [%s: no event]" % r["scenario"] if r["scenario"] in CONTROLS.values() else ""),
                e["seconds"], r["kind"], r["moved"], e["loads"], e["loads_moved"],
                b["loads"] * scale, b["loads_moved"] * scale, e["misses"], e["errors"], e["stale"],
                e["stale_moved"], e["stale_after_flap"], e["stale_after_flap_listed"],
                e["hits"] + e["misses"] + e["errors"]))
    for r in results:
        if r["scenario"] == "flap":
            print("flap %s: stale-after-flap reads were of %d distinct keys" % (r["kind"], r["stale_after_flap_keys"]))
    print()
    for r in results:
        for node, figures in r.get("node_stats", {}).items():
            if isinstance(figures, list):
                for line in figures:
                    print("%s herdless, %s: %s" % (r["scenario"], node, line))
            elif any(figures.values()):
                print("%s herdless, %s: %s" % (r["scenario"], node,
                                              " ".join("%s=%d" % kv for kv in figures.items() if kv[1])))
    print()
    by = {(r["kind"], r["scenario"]): r for r in results}
    for (kind, name), r in by.items():
        if kind != "herdless" or ("memcached", name) not in by:
            continue
        m = by[("memcached", name)]
        for event in r["events"]:
            h_moved, m_moved = r["events"][event]["loads_moved"], m["events"][event]["loads_moved"]
            scale = r["events"][event]["seconds"] / args.baseline
            h_extra = h_moved - r["baseline"]["loads_moved"] * scale
            m_extra = m_moved - m["baseline"]["loads_moved"] * scale
            print("%s: herdless/memcached DB loads of the moved keys: %d/%d = %.2f; per moved key %.2f vs %.2f; "
                  "above the baseline: %d/%d = %.2f" % (
                      event + (" [%s: no event]" % name if name in CONTROLS.values() else ""),
                      h_moved, m_moved, h_moved / max(1, m_moved), h_moved / max(1, r["moved"]),
                      m_moved / max(1, m["moved"]), h_extra, m_extra, h_extra / m_extra if m_extra > 0 else float("nan")))
    report_against_controls(by)


CONTROLS = {"join": "still", "flap": "still-flap"}   # scenario -> the same run with no event
CONTROL_WINDOW = {"join": "still", "death": "death", "return": "return"}


def report_against_controls(by):
    """Each event's loads of the moved keys minus its control's (same keys, same window, no event):
    what the event itself costs, without a baseline scaled from before it."""
    for name, control in CONTROLS.items():
        events = next((by[(k, name)]["events"] for k in ("memcached", "herdless") if (k, name) in by), {})
        for event in events:
            extra = {}
            for kind in ("memcached", "herdless"):
                if (kind, name) not in by or (kind, control) not in by:
                    continue
                e = by[(kind, name)]["events"][event]
                c = by[(kind, control)]["events"][CONTROL_WINDOW[event]]
                extra[kind] = e["loads_moved"] - c["loads_moved"]
                print("%s %s: DB loads of the moved keys %d, without the %s (%s) %d: the %s's own %d"
                      % (event, kind, e["loads_moved"], event, control, c["loads_moved"], event, extra[kind]))
                if event == "death":
                    read = e.get("moved_read", 0)
                    moved = by[(kind, name)]["moved"]
                    print("death %s: %d of %d moved keys read in the window; loads per moved key %.2f, "
                          "per moved key read %.2f; caused by the death (death - %s) per moved key read %.2f"
                          % (kind, read, moved, e["loads_moved"] / max(1, moved),
                             e["loads_moved"] / max(1, read), control, extra[kind] / max(1, read)))
            if len(extra) == 2:
                print("%s: herdless/memcached loads caused by the %s (%s - %s): %d/%d = %.2f" % (
                    event, event, name, control, extra["herdless"], extra["memcached"],
                    extra["herdless"] / extra["memcached"] if extra["memcached"] > 0 else float("nan")))


def chart(json_path, svg_path):
    """An SVG of database loads per second through each event, one panel per scenario,
    memcached and herdless on the same axes (no plotting package needed)."""
    with open(json_path) as f:
        results = json.load(f)["results"]
    scenarios = []
    for r in results:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    width, panel, left, top = 720, 220, 50, 30
    colours = {"memcached": "#c0392b", "herdless": "#2471a3"}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, top + panel * len(scenarios)),
           '<rect width="100%" height="100%" fill="white"/>']
    for row, name in enumerate(scenarios):
        runs = [r for r in results if r["scenario"] == name]
        series = {r["kind"]: {int(s): v for s, v in r["series"]["loads"].items()} for r in runs}
        end = max(max(s.keys(), default=0) for s in series.values()) + 1
        peak = max(max(s.values(), default=1) for s in series.values())
        y0, h, w = top + row * panel, panel - 50, width - left - 20
        out.append('<text x="%d" y="%d">%s: database loads per second (peak %d)</text>' % (left, y0 - 8, name, peak))
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (left, y0, w, h))
        for r in runs:
            for event, t in r["event_times"].items():
                x = left + w * t / end
                out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#aaa" stroke-dasharray="4"/>'
                           '<text x="%.1f" y="%d">%s</text>' % (x, y0, x, y0 + h, x + 3, y0 + 12, event))
            break
        for kind, points in series.items():
            path = " ".join("%.1f,%.1f" % (left + w * (s + 0.5) / end, y0 + h - h * points.get(s, 0) / peak)
                            for s in range(end))
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (colours.get(kind, "#000"), path))
        for i, kind in enumerate(series):
            out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (left + 10 + 90 * i, y0 + h + 16, colours.get(kind, "#000"), kind))
        out.append('<text x="%d" y="%d">seconds: 0 .. %d</text>' % (left + w - 100, y0 + h + 16, end))
    out.append("</svg>")
    with open(svg_path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--herdless")  # bench-cluster passes it; needed unless --chart
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--herdless-args", default="", help="more herdless flags, e.g. '-o warm_timeout_ms=200'")
    ap.add_argument("--no-ring", action="store_true",
                    help="herdless nodes without -o ring (flap: give --herdless-args '-o restore_max_age=S')")
    ap.add_argument("--servers", default="memcached,herdless")
    ap.add_argument("--scenarios", default="join,flap",
                    help="of join, still (join's control), flap, still-flap (flap's control)")
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--zipf", type=float, default=0.99)
    ap.add_argument("--ttl", type=int, default=60)
    ap.add_argument("--recompute-ms", type=int, default=50)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rate", type=int, default=2000, help="gets per second, all readers together")
    ap.add_argument("--write-rate", type=int, default=100)
    ap.add_argument("--retry-ms", type=int, default=2000, help="nutcracker's server_retry_timeout")
    ap.add_argument("--settle", type=int, default=5, help="seconds of traffic before the baseline")
    ap.add_argument("--baseline", type=int, default=20)
    ap.add_argument("--window", type=int, default=60, help="seconds measured after the event")
    ap.add_argument("--away", type=int, default=30, help="flap: seconds the node is away")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="write the results (with loads per second) here")
    ap.add_argument("--chart", nargs=2, metavar=("JSON", "SVG"), help="draw a --json file's loads per second, and exit")
    args = ap.parse_args()
    if args.chart:
        return chart(*args.chart)
    if not args.herdless:
        ap.error("--herdless is required (except with --chart)")
    keys = key_names(args.keys)
    results = []
    print("load average before: %s" % open("/proc/loadavg").read().strip(), flush=True)
    for name in args.scenarios.split(","):
        for kind in args.servers.split(","):   # alternated per scenario, same seed
            start = time.time()
            results.append(asyncio.run(scenario(args, kind, name, keys)))
            print("ran %s %s in %.0f s; load average %s" % (name, kind, time.time() - start,
                                                          open("/proc/loadavg").read().strip()), flush=True)
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
