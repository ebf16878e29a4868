#!/usr/bin/env python3
"""Three herdless nodes behind Debian's nutcracker (twemproxy; ketama, fnv1a_64), driven with
pymemcache through the proxy:

- the classic command set: sets land on all three nodes (each key on exactly one), gets,
  multi-gets across nodes, incr/decr, cas, add/replace/append/prepend, touch, delete; and what
  twemproxy does not forward (meta, lease-get, gat, stats, flush_all: it closes the connection);
- a stampede through the proxy with -o classic_stampede=stale on the nodes: 100 concurrent
  readers of a hot key, each reading until it sees the recomputed value, the one that gets a
  miss recomputes (100 ms) and stores; exactly one recompute per expiry, the others get the
  stale value;
- node loss: one node killed (SIGKILL); nutcracker ejects it, keys on the other nodes keep
  hitting, the lost node's keys miss once, are recomputed and hit again on their new node.

Every wait is bounded; nothing depends on timing but the expiry of a 1 s TTL, waited for.
"""

import os
import shutil
import tempfile
import threading
import time

from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheError

import harness
from harness import Conn
from scaleout import key_names, owners, run_rounds

NODE_ARGS = ["-t", "2", "-o", "classic_stampede=stale,stale_grace=60,lease_timeout=30"]
KEYS = 300
READERS = 100
ROUNDS = 3
RECOMPUTE_S = 0.1
ROUND_DEADLINE_S = 60 if harness.SANITIZED else 30


def start_nutcracker(nodes, workdir):
    """nutcracker on a free port in front of `nodes`; servers are named so the ketama ring does
    not depend on their ports. A lost node is ejected at its first failure, not retried in the
    test's lifetime."""
    port, stats_port = harness.free_port(), harness.free_port()
    conf = os.path.join(workdir, "nutcracker.yml")
    with open(conf, "w") as f:
        f.write("herdless:\n"
                "  listen: 127.0.0.1:%d\n"
                "  hash: fnv1a_64\n"
                "  distribution: ketama\n"
                "  timeout: %d\n"
                "  auto_eject_hosts: true\n"
                "  server_failure_limit: 1\n"
                "  server_retry_timeout: 600000\n"
                "  servers:\n" % (port, 20000 if harness.SANITIZED else 5000))
        for i, node in enumerate(nodes):
            f.write("   - 127.0.0.1:%d:1 node%d\n" % (node.port, i + 1))
    argv = [shutil.which("nutcracker") or "/usr/sbin/nutcracker", "-c", conf, "-s", str(stats_port),
            "-a", "127.0.0.1", "-v", "4"]   # its log: the harness's (shown when it fails)
    return harness.Process("nutcracker", argv, port).start()


def client(port):
    return Client(("127.0.0.1", port), connect_timeout=harness.TIMEOUT, timeout=harness.TIMEOUT * 2,
                  default_noreply=False)


def check_classic_commands(r, nodes, proxy):
    c = client(proxy.port)
    keys = key_names("key:", KEYS)
    for k in keys:
        c.set(k, ("value of " + k).encode())
    held = owners(nodes, keys)
    per_node = [sum(1 for k in keys if i in held[k]) for i in range(len(nodes))]
    harness.log("keys per node through ketama: %s" % per_node)
    r.check(all(n > 0 for n in per_node), "sets land on all three nodes", repr(per_node))
    r.equal(sorted(len(v) for v in held.values())[::len(keys) - 1], [1, 1], "each key is on exactly one node")
    r.equal(sum(1 for k in keys if c.get(k) == ("value of " + k).encode()), KEYS, "every get hits")
    many = c.get_many(keys)
    r.equal(len(many), KEYS, "one multi-get across the three nodes returns every key")
    r.check(all(many[k] == ("value of " + k).encode() for k in keys), "with the right values")

    r.equal(c.set("counter", b"10"), True, "set counter")
    r.equal(c.incr("counter", 5), 15, "incr through the proxy")
    r.equal(c.decr("counter", 3), 12, "decr through the proxy")
    value, token = c.gets("counter")
    r.equal(value, b"12", "gets")
    r.equal(c.cas("counter", b"20", token), True, "cas with the current token stores")
    r.equal(c.cas("counter", b"30", token), False, "cas with a stale token is refused (EXISTS)")
    r.equal(c.get("counter"), b"20", "the refused cas changed nothing")
    r.equal(c.add("counter", b"x"), False, "add of an existing key: NOT_STORED")
    r.equal(c.add("fresh", b"x"), True, "add of a new key")
    r.equal(c.replace("fresh", b"y"), True, "replace")
    r.equal(c.append("fresh", b"z"), True, "append")
    r.equal(c.prepend("fresh", b"w"), True, "prepend")
    r.equal(c.get("fresh"), b"wyz", "append and prepend applied")
    r.equal(c.touch("fresh", 100), True, "touch")
    r.equal(c.delete("fresh"), True, "delete")
    r.equal(c.get("fresh"), None, "a deleted key misses")
    r.equal(c.delete("fresh"), False, "delete of a missing key: NOT_FOUND")
    c.close()

    # What twemproxy does not forward: it closes the client's connection (see docs/deployment.md).
    for command in (b"mg key:1 v\r\n", b"lease-get key:1\r\n", b"gat 10 key:1\r\n", b"stats\r\n",
                    b"flush_all\r\n"):
        with Conn(proxy.port) as raw:
            raw.send(command)
            r.equal(raw.recv_until_eof(), b"", "twemproxy closes the connection on %r"
                    % command.split(b" ")[0].strip())


class StampedeRound:
    """One expiry of the hot key read by every reader until it sees the new value."""

    def __init__(self, generation):
        self.old = b"gen-%d" % (generation - 1)
        self.new = b"gen-%d" % generation
        self.lock = threading.Lock()
        self.recomputes = 0
        self.stale = 0
        self.gets = 0
        self.errors = []
        self.unexpected = []


def read_until_new(c, rnd, hot):
    deadline = time.monotonic() + ROUND_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            value = c.get(hot)
        except (MemcacheError, OSError) as e:
            with rnd.lock:
                rnd.errors.append(repr(e))
            return
        with rnd.lock:
            rnd.gets += 1
        if value == rnd.new:
            return
        if value is None:  # the recompute hint of classic stale mode
            with rnd.lock:
                rnd.recomputes += 1
            time.sleep(RECOMPUTE_S)
            c.set(hot, rnd.new, expire=600)
        elif value == rnd.old:
            with rnd.lock:
                rnd.stale += 1
            time.sleep(0.005)
        else:
            with rnd.lock:
                rnd.unexpected.append(value)
            return
    with rnd.lock:
        rnd.errors.append("no new value within %ds" % ROUND_DEADLINE_S)


def check_stampede(r, proxy):
    hot = "hot:stampede"
    c = client(proxy.port)
    rounds = [StampedeRound(g) for g in range(1, ROUNDS + 1)]

    def before_round(i, rnd):
        if i == 0:
            c.set(hot, rnd.old, expire=600)
        # Expire the current value: TTL 1 s (memcached counts whole seconds), then wait.
        r.equal(c.touch(hot, 1), True, "touch the hot key to a 1 s TTL")
        time.sleep(2.2)

    def after_round(rnd):
        name = rnd.new.decode()
        harness.log("stampede round %s: %d readers, %d gets, %d recomputes, %d stale values served"
                    % (name, READERS, rnd.gets, rnd.recomputes, rnd.stale))
        r.equal(rnd.errors, [], "round %s: no errors" % name)
        r.equal(rnd.unexpected, [], "round %s: only the old or the new value" % name)
        r.equal(rnd.recomputes, 1, "round %s: one recompute for %d readers through the proxy"
                % (name, READERS))
        r.check(rnd.stale >= 1, "round %s: the other readers got the stale value" % name)
        r.equal(c.get(hot), rnd.new, "round %s: the recomputed value is served" % name)

    try:
        run_rounds(READERS, lambda: client(proxy.port), lambda reader, rnd: read_until_new(reader, rnd, hot),
                   rounds, before_round, after_round, ROUND_DEADLINE_S)
    finally:
        c.close()
    total = sum(x.recomputes for x in rounds)
    harness.log("through the proxy: %d expiries, %d recomputes (%.2f per expiry), %d stale values, %d gets"
                % (ROUNDS, total, total / ROUNDS, sum(x.stale for x in rounds), sum(x.gets for x in rounds)))


def check_node_loss(r, nodes, proxy):
    keys = key_names("loss:", KEYS)
    c = client(proxy.port)
    for k in keys:
        c.set(k, k.encode(), expire=600)
    held = owners(nodes, keys)
    lost = 2
    lost_keys = [k for k in keys if held[k] == [lost]]
    kept_keys = [k for k in keys if held[k] and held[k] != [lost]]
    r.check(lost_keys and len(lost_keys) + len(kept_keys) == KEYS, "the keys are spread", repr(len(lost_keys)))
    nodes[lost].kill_hard()

    # The clients' miss path: get; on a miss recompute and set; an error is retried.
    recomputes = {}
    errors = 0
    kept_misses = 0
    deadline = time.monotonic() + ROUND_DEADLINE_S
    pending = list(keys)
    while pending and time.monotonic() < deadline:
        k = pending[0]
        try:
            value = c.get(k)
            if value is None:
                if k in kept_keys:
                    kept_misses += 1
                recomputes[k] = recomputes.get(k, 0) + 1
                c.set(k, k.encode(), expire=600)
                continue
            if value != k.encode():
                r.equal(value, k.encode(), "value of %s after the node loss" % k)
            pending.pop(0)
        except (MemcacheError, OSError):
            errors += 1
            c.close()  # reconnects on the next command
            time.sleep(0.05)
    c.close()
    harness.log("node loss: %d keys on the lost node, %d on the others; %d errors while nutcracker "
                "ejected it, %d recomputes" % (len(lost_keys), len(kept_keys), errors,
                                               sum(recomputes.values())))
    r.equal(pending, [], "every key is served again after the loss")
    r.equal(kept_misses, 0, "keys of the surviving nodes never missed")
    r.equal(sorted(recomputes), sorted(lost_keys), "exactly the lost node's keys were recomputed")
    r.check(all(n == 1 for n in recomputes.values()), "each once", repr(recomputes))
    held = owners([n for i, n in enumerate(nodes) if i != lost], keys)
    r.check(all(len(v) == 1 for v in held.values()), "the surviving nodes now hold every key once")


def body(r):
    workdir = tempfile.mkdtemp(prefix="herdless-twemproxy-")
    try:
        nodes = [harness.start_herdless(NODE_ARGS) for _ in range(3)]
        proxy = start_nutcracker(nodes, workdir)
        check_classic_commands(r, nodes, proxy)
        check_stampede(r, proxy)
        check_node_loss(r, nodes, proxy)
        proxy.stop()
        for i, node in enumerate(nodes):
            if i != 2:
                node.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    harness.run("test_twemproxy", body)
