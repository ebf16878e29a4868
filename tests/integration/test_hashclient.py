#!/usr/bin/env python3
"""Client-side hashing, no proxy: pymemcache's HashClient over three herdless nodes.

- classic commands spread over the nodes (each key on exactly one, the one HashClient's hasher
  names), multi-gets across them;
- the meta stampede hints on the node HashClient picks for a hot key: 100 concurrent readers
  send `mg <key> s v c N30 Y1`; on a miss (N: vivify) and on each expiry (stale_grace keeps the
  value) exactly one gets W and recomputes, the others get Z (retry shortly, or the stale value
  with X); the recomputed value is stored with HashClient.set (a plain set fulfils the lease);
- node loss: one node killed (SIGKILL); HashClient marks it dead and rehashes its keys onto the
  others; keys elsewhere keep hitting, the lost node's keys miss, are recomputed and hit again.
"""

import threading
import time

from pymemcache.client.hash import HashClient
from pymemcache.exceptions import MemcacheError

import harness
from harness import Conn
from scaleout import key_names, owners, run_rounds

NODE_ARGS = ["-t", "2", "-o", "stale_grace=60,lease_timeout=30"]
KEYS = 300
READERS = 100
RECOMPUTE_S = 0.1
ROUND_DEADLINE_S = 60 if harness.SANITIZED else 30
MG = b"mg %s s v c N30 Y1\r\n"


def hash_client(nodes):
    # A failing node is retried once after 0.1 s, then taken out of the ring for the test's life.
    return HashClient([("127.0.0.1", n.port) for n in nodes], connect_timeout=harness.TIMEOUT,
                      timeout=harness.TIMEOUT * 2, default_noreply=False, retry_attempts=1,
                      retry_timeout=0.1, dead_timeout=600)


def node_of(hc, nodes, key):
    """The node HashClient's hasher sends `key` to."""
    server = hc.hasher.get_node(key)
    for i, n in enumerate(nodes):
        if server == "127.0.0.1:%d" % n.port:
            return i
    raise AssertionError("HashClient picked an unknown server %r" % server)


def read_meta(conn):
    """One mg reply: (flags, value or None)."""
    header = conn.recv_line().rstrip(b"\r\n").split(b" ")
    if header[0] == b"VA":
        data = conn.recv_exact(int(header[1]) + 2)[:-2]
        return header[2:], data
    return header[1:], None


def check_classic(r, nodes, hc):
    keys = key_names("key:", KEYS)
    r.equal(hc.set_many({k: k.encode() for k in keys}), [], "set_many stores every key")
    held = owners(nodes, keys)
    per_node = [sum(1 for k in keys if held[k] == [i]) for i in range(len(nodes))]
    harness.log("keys per node through HashClient (rendezvous hashing): %s" % per_node)
    r.check(all(n > 0 for n in per_node) and sum(per_node) == KEYS,
            "keys land on all three nodes, each on exactly one", repr(per_node))
    r.check(all(held[k] == [node_of(hc, nodes, k)] for k in keys),
            "each on the node HashClient's hasher names")
    many = hc.get_many(keys)
    r.check(len(many) == KEYS and all(many[k] == k.encode() for k in keys),
            "get_many across the nodes returns every key")
    r.equal(hc.incr(keys[0], 1) if hc.set(keys[0], b"41") else None, 42, "incr")
    r.equal(hc.delete(keys[0]), True, "delete")
    r.equal(hc.get(keys[0]), None, "a deleted key misses")


class Round:
    def __init__(self, name, old, new):
        self.name, self.old, self.new = name, old, new
        self.lock = threading.Lock()
        self.wins = 0       # W: this reader recomputes
        self.retries = 0    # Z without a value: someone else recomputes, retry
        self.stale = 0      # a value with X: stale, served while someone recomputes
        self.reads = 0
        self.errors = []


def read_until_new(conn, hc, rnd, hot):
    deadline = time.monotonic() + ROUND_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            conn.send(MG % hot.encode())
            flags, value = read_meta(conn)
        except (OSError, EOFError, TimeoutError) as e:
            with rnd.lock:
                rnd.errors.append(repr(e))
            return
        with rnd.lock:
            rnd.reads += 1
        if b"W" in flags:
            with rnd.lock:
                rnd.wins += 1
            time.sleep(RECOMPUTE_S)
            with rnd.lock:  # HashClient is shared by the readers; one store at a time
                hc.set(hot, rnd.new, expire=600)
            continue
        if value == rnd.new and b"X" not in flags:
            return
        if value == rnd.old and b"X" in flags:
            with rnd.lock:
                rnd.stale += 1
        elif b"Z" in flags and value == b"":
            with rnd.lock:
                rnd.retries += 1
        else:
            with rnd.lock:
                rnd.errors.append("unexpected reply %r %r" % (flags, value))
            return
        time.sleep(0.005)
    with rnd.lock:
        rnd.errors.append("no new value within %ds" % ROUND_DEADLINE_S)


def check_meta_stampede(r, nodes, hc):
    hot = "hot:meta"
    node = nodes[node_of(hc, nodes, hot)]
    run_meta_stampede(r, lambda: Conn(node.port, timeout=harness.TIMEOUT * 4), hc, hot, "HashClient")


def run_meta_stampede(r, open_conn, store, hot, via, stale_values=True):
    """READERS readers on open_conn() connections read `hot` with MG until they see its new
    value, in three rounds: from a miss (N vivifies), then from two expiries; a W stores the
    recomputed value with store.set. One W a round; the others retry (Z) on the miss and get
    the stale value (X) on an expiry (with stale_values: a node without stale_grace has none)."""
    rounds = [Round("miss", None, b"gen-1"), Round("expiry 1", b"gen-1", b"gen-2"),
              Round("expiry 2", b"gen-2", b"gen-3")]

    def before_round(i, rnd):
        if i > 0:
            r.equal(store.touch(hot, 1), True, "touch the hot key to a 1 s TTL")
            time.sleep(2.2)

    def after_round(rnd):
        harness.log("meta %s: %d readers, %d mg, %d W (recomputes), %d stale (X), %d retries (Z)"
                    % (rnd.name, READERS, rnd.reads, rnd.wins, rnd.stale, rnd.retries))
        r.check(not rnd.errors, "%s: no errors" % rnd.name, "%d, first %r" % (len(rnd.errors), rnd.errors[:2]))
        r.equal(rnd.wins, 1, "%s: exactly one W among %d readers" % (rnd.name, READERS))
        if rnd.old is None:
            r.check(rnd.retries >= 1 and rnd.stale == 0, "%s: the others were told to retry (Z)" % rnd.name)
        elif stale_values:
            r.check(rnd.stale >= 1 and rnd.retries == 0, "%s: the others got the stale value (X)" % rnd.name)
        r.equal(store.get(hot), rnd.new, "%s: %s reads the recomputed value" % (rnd.name, via))

    run_rounds(READERS, open_conn, lambda conn, rnd: read_until_new(conn, store, rnd, hot), rounds,
               before_round, after_round, ROUND_DEADLINE_S)
    total = sum(x.wins for x in rounds)
    harness.log("%s + meta hints: %d misses/expiries, %d recomputes (%.2f each)"
                % (via, len(rounds), total, total / len(rounds)))


def check_node_loss(r, nodes, hc):
    keys = key_names("loss:", KEYS)
    hc.set_many({k: k.encode() for k in keys}, expire=600)
    lost = 1
    lost_keys = [k for k in keys if node_of(hc, nodes, k) == lost]
    kept = set(keys) - set(lost_keys)
    r.check(lost_keys and kept, "keys on the lost node and on the others", repr(len(lost_keys)))
    nodes[lost].kill_hard()

    recomputes = {}
    kept_misses = 0
    errors = 0
    unstored = 0  # HashClient answers a miss and drops the store while it retries a failed node
    wrong = []
    pending = list(keys)
    deadline = time.monotonic() + ROUND_DEADLINE_S
    while pending and time.monotonic() < deadline:
        k = pending[0]
        try:
            value = hc.get(k)
        except (MemcacheError, OSError):
            errors += 1  # HashClient raises until it marks the node dead
            time.sleep(0.05)
            continue
        if value is None:
            kept_misses += k in kept
            recomputes[k] = recomputes.get(k, 0) + 1
            try:
                stored = hc.set(k, k.encode(), expire=600)
            except (MemcacheError, OSError):
                stored = False
                errors += 1
            if not stored:
                unstored += 1
                time.sleep(0.02)
            continue
        if value != k.encode():
            wrong.append((k, value))
        pending.pop(0)
    harness.log("node loss: %d keys on the lost node, %d elsewhere; %d errors and %d dropped stores "
                "before HashClient took it out of its ring, %d recomputes"
                % (len(lost_keys), len(kept), errors, unstored, sum(recomputes.values())))
    r.equal(pending, [], "every key is served again after the loss")
    r.equal(wrong, [], "with its value")
    r.equal(kept_misses, 0, "keys of the surviving nodes never missed")
    r.equal(sorted(recomputes), sorted(lost_keys), "the lost node's keys were recomputed")
    r.check("127.0.0.1:%d" % nodes[lost].port not in hc.hasher.nodes,
            "the lost node left HashClient's ring", repr(hc.hasher.nodes))


def body(r):
    nodes = [harness.start_herdless(NODE_ARGS) for _ in range(3)]
    hc = hash_client(nodes)
    check_classic(r, nodes, hc)
    check_meta_stampede(r, nodes, hc)
    check_node_loss(r, nodes, hc)
    hc.close()
    for i, node in enumerate(nodes):
        if i != 1:
            node.stop()


if __name__ == "__main__":
    harness.run("test_hashclient", body)
