"""-o warm_peer: a herdless that misses asks a peer first (issue 22, part 1).

- From Debian's memcached: classic get/gets in classic_stampede wait mode, meta mg N,
  lease-get and binary Get each come back with the peer's value, flags and remaining TTL;
  a key the peer lacks gets the usual recompute hint (END, W, a lease token).
- 200 concurrent readers of one key the node lacks: one peer fetch, every reader the value.
- From another herdless over a unix socket.
- A peer that knows only `gets` (a stub answering mg with ERROR).
- A set or a delete that lands while the fetch is under way wins; a delete refuses warm
  fills of its key for warm_holdoff (warm_refused); both are sent on to the peer
  (test_warm_invalidation.py has the rest).
- A silent peer: the reader gets its hint after warm_timeout_ms (warm_timeouts), and the
  other clients of the same worker are answered meanwhile; a dead peer: warm_errors.
- A node joins behind nutcracker (ketama): two memcached nodes hold 600 keys, a third node is
  added and every key is read through the proxy with a read-through client (a miss loads
  from the "database" and sets). Database loads for the moved keys: one per moved key with a
  memcached as the new node, none with a herdless warming from the two old nodes.
- The same join with -o ring (the pool's YAML) instead of warm_peer: each moved key is asked
  of its previous owner only (one fetch, no peer miss), no database load.
- -o ring against a live nutcracker: 10,000 keys per hash (md5, fnv1a_64, fnv1a_32, murmur with
  a hash_tag, one_at_a_time, crc32a; 2,000 for fnv1_64, fnv1_32, crc32), weighted and named
  servers: `ring owner` names, for every key, the node nutcracker stored it on.
- A ring node returns (ring, -e): node3 stops, nutcracker ejects it, a third of its keys
  are overwritten and a third deleted through the proxy (foreign on the other nodes: TTL
  capped at 60 s, foreign_sets counts each change); node3 comes back with its snapshot and,
  before serving, takes the others' lists: no old value is read, overwritten keys give the
  new value (warmed from the node that has it), deleted keys miss, the rest come back.
- `warm off` / `warm on` at run time; -o warm_min_hit_ratio=0.5 ends warm-up by itself after
  30 peer misses (warm_active 0, no further fetch).
- The default warm_min_hit_ratio (0.1) with -o ring: a node whose previous owner lacks its
  keys (it never joined) stops warming and stops sending its changes on (warm_active 0,
  warm_fetches and warm_invalidations no longer grow); a joining node whose previous owner
  has its keys keeps warming.
- -o restore_max_age: a node back with -e from a snapshot older than that serves none of
  its values as fresh: stale (the first reader recomputes, and may fill with add) in wait mode, nothing restored
  with classic_stampede off; a younger snapshot restores as before.
Counts and replies only, no timings.
"""

import os
import socket
import threading
import time
import urllib.parse

from pymemcache.exceptions import MemcacheError

import binproto
import harness
import scaleout
import test_twemproxy


class StubPeer:
    """A loopback peer answering each request line after `release` is set: mg with VA (or
    ERROR when meta is False; the keys in `stale` as a value expired 3 s ago and in its stale
    grace, `t-3 X W`, the lease handed to the asker, which gives it back with `md`: HD), gets
    with VALUE, `delete` (a herdless's invalidation, after
    `ring forget`, which it answers ERROR as a memcached) by forgetting the key; `silent`:
    never answers; `drop_deletes`: closes the connection on a delete instead."""

    def __init__(self, values, meta=True, silent=False, drop_deletes=False, stale=()):
        self.values = values
        self.stale = stale
        self.meta = meta
        self.silent = silent
        self.drop_deletes = drop_deletes
        self.release = threading.Event()
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _answer(self, line):
        words = line.split()
        if words[0] == b"ring":
            return b"ERROR\r\n"
        if words[0] == b"delete":
            return b"DELETED\r\n" if self.values.pop(words[1], None) is not None else b"NOT_FOUND\r\n"
        if words[0] == b"md":
            return b"HD\r\n"   # the lease a fetch won given back (md <key> I C<token>)
        value = self.values.get(words[1]) if len(words) > 1 else None
        if words[0] == b"mg":
            if not self.meta:
                return b"ERROR\r\n"
            if value is None:
                return b"EN\r\n"
            if words[1] in self.stale:
                token = b" c7" if b"c" in words[2:] else b""
                return b"VA %d f5 t-3%s X W\r\n%s\r\n" % (len(value), token, value)
            return b"VA %d f5 t900\r\n%s\r\n" % (len(value), value)
        if value is None:
            return b"END\r\n"
        return b"VALUE %s 5 %d 1\r\n%s\r\nEND\r\n" % (words[1], len(value), value)

    def _serve(self, c):
        buf = b""
        while True:
            try:
                data = c.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                self.requests.append(line)
                if self.silent:
                    continue
                if self.drop_deletes and line.startswith((b"delete ", b"ring forget ")):
                    c.close()
                    return
                self.release.wait(30)
                try:
                    c.sendall(self._answer(line))
                except OSError:
                    return

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


HOT_READERS = 200   # the figure
# Peers on a loaded machine may take longer than the 50 ms default: no test depends on it.
PEER_TIMEOUT_MS = 3000


def warm_node(peer, *extra):
    return harness.start_herdless(["-t", "1", "-o", "classic_stampede=wait,warm_peer=" + peer,
                                   "-o", "warm_timeout_ms=%d" % PEER_TIMEOUT_MS] + list(extra))


def from_memcached(res):
    mc = harness.start_memcached(["-m", "16"])
    with harness.Conn(mc.port) as m:
        for k in (b"a", b"b", b"c", b"d"):
            res.equal(m.call(b"set %s 7 1000 3\r\nv-%s\r\n" % (k, k)), b"STORED\r\n", "peer set")
    h = warm_node("127.0.0.1:%d" % mc.port)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get a\r\n", b"END\r\n"), b"VALUE a 7 3\r\nv-a\r\nEND\r\n",
                  "classic get: the peer's value and flags")
        reply = c.call(b"mg a f t\r\n").split()
        res.check(reply[0] == b"HD" and reply[1] == b"f7" and 990 <= int(reply[2][1:]) <= 1000,
                  "the copy keeps the peer's flags and remaining TTL", repr(reply))
        res.equal(c.call(b"mg b v f N30\r\n", b"\r\nv-b\r\n"), b"VA 3 f7\r\nv-b\r\n",
                  "meta mg N: the peer's value, no W")
        res.equal(c.call(b"lease-get c\r\n", b"END\r\n"), b"VALUE c 7 3\r\nv-c\r\nEND\r\n",
                  "lease-get: the peer's value")
        res.equal(c.call(b"get nope\r\n", b"END\r\n"), b"END\r\n", "peer miss: a classic miss")
        res.equal(c.call(b"mg nope2 v N30\r\n", b"\r\n\r\n"), b"VA 0 W\r\n\r\n",
                  "peer miss: meta gets its W")
        lease = c.call(b"lease-get nope3\r\n", b"END\r\n")
        res.check(lease.startswith(b"LVALUE nope3 ") and not lease.startswith(b"LVALUE nope3 1 "),
                  "peer miss: lease-get gets its token", repr(lease))
        res.equal(harness.stat_values(c, "warm_fetches", "warm_hits", "warm_misses"),
                  {"warm_fetches": 6, "warm_hits": 3, "warm_misses": 3},
                  "warm_fetches / hits / misses")
    with binproto.BinConn(h.port) as b:
        resp = b.call(binproto.get(b"d"))
        res.equal((resp.status, resp.value), (0, b"v-d"), "binary Get: the peer's value")
    h.stop()

    # One key, many readers: one fetch.
    with harness.Conn(mc.port) as m:
        m.call(b"set hot 0 1000 3\r\nhot\r\n")
        before = harness.stat(m, "get_hits")
    h = warm_node("127.0.0.1:%d" % mc.port)
    conns = [harness.Conn(h.port) for _ in range(HOT_READERS)]
    for c in conns:
        c.send(b"get hot\r\n")
    replies = [c.recv_until(b"END\r\n") for c in conns]
    res.equal(sum(r == b"VALUE hot 0 3\r\nhot\r\nEND\r\n" for r in replies), HOT_READERS,
              "%d readers of one missing key: all get the peer's value" % HOT_READERS)
    res.equal(harness.stat(conns[0], "warm_fetches"), 1, "%d readers: one peer fetch" % HOT_READERS)
    with harness.Conn(mc.port) as m:
        res.equal(harness.stat(m, "get_hits") - before, 1, "%d readers: the peer read once" % HOT_READERS)
    for c in conns:
        c.close()
    h.stop()
    mc.stop()


def from_herdless(res):
    path = "/tmp/herdless-peer-%d.sock" % harness.free_port()
    peer = harness.start_herdless(["-s", path, "-a", "0666"], unix_socket=path)
    with harness.Conn(path) as p:
        p.call(b"set k 3 0 2\r\nhi\r\n")
        p.call(b"mg lease v N30\r\n", b"\r\n\r\n")   # a peer's stub being recomputed
    h = warm_node(path)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get k\r\n", b"END\r\n"), b"VALUE k 3 2\r\nhi\r\nEND\r\n",
                  "from herdless over a unix socket")
        res.equal(c.call(b"mg k t\r\n"), b"HD t-1\r\n", "no TTL at the peer: none here")
        res.equal(c.call(b"get lease\r\n", b"END\r\n"), b"END\r\n",
                  "a peer's value under recompute is not copied")
        res.equal(harness.stat(c, "warm_stale"), 1, "... counted in warm_stale")
    h.stop()
    peer.stop()


def gets_only_peer(res):
    stub = StubPeer({b"g": b"old"}, meta=False)
    stub.release.set()
    h = warm_node("127.0.0.1:%d" % stub.port)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get g\r\n", b"END\r\n"), b"VALUE g 5 3\r\nold\r\nEND\r\n",
                  "a peer without meta: read with gets")
        reply = c.call(b"mg g t\r\n").split()
        res.check(0 < int(reply[1][1:]) <= 60, "gets gives no TTL: kept at most 60 s", repr(reply))
    res.equal(stub.requests[:2], [b"mg g v f t c", b"gets g"], "mg first, then gets")
    h.stop()
    stub.close()


def set_and_delete_during_fetch(res, a, b, stub, label=""):
    """Reader `a` misses s, then d, on a node warming from `stub` (which holds both and its
    replies until released); `b` sets s, then deletes d, while each fetch is under way: the
    set's value is read, d stays gone."""
    a.send(b"get s\r\n")
    harness.wait_for(lambda: b"mg s v f t c" in stub.requests, what="the fetch of s")
    res.equal(b.call(b"set s 0 0 3\r\nnew\r\n"), b"STORED\r\n", label + "set during the fetch")
    stub.release.set()
    res.equal(a.recv_until(b"END\r\n"), b"VALUE s 0 3\r\nnew\r\nEND\r\n", label + "a set during the fetch wins")
    harness.wait_for(lambda: b"s" not in stub.values, what="the set of s sent on to the peer")
    stub.release.clear()
    a.send(b"get d\r\n")
    harness.wait_for(lambda: b"mg d v f t c" in stub.requests, what="the fetch of d")
    res.equal(b.call(b"delete d\r\n"), b"NOT_FOUND\r\n", label + "delete during the fetch")
    stub.release.set()
    res.equal(a.recv_until(b"END\r\n"), b"END\r\n", label + "a delete during the fetch wins")
    res.equal(b.call(b"mg d v\r\n"), b"EN\r\n", label + "... and the peer's value was not kept")


def writes_meanwhile(res):
    stub = StubPeer({b"s": b"old", b"d": b"old", b"h": b"old", b"h2": b"old"})
    h = warm_node("127.0.0.1:%d" % stub.port, "-o", "warm_timeout_ms=10000,warm_holdoff=1")
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        set_and_delete_during_fetch(res, a, b, stub)
        res.equal(b.call(b"delete h\r\n"), b"NOT_FOUND\r\n", "delete of a key the node lacks")
        res.equal(b.call(b"mg h v N30\r\n", b"\r\n\r\n"), b"VA 0 W\r\n\r\n",
                  "within the hold-off: no warm fill, the reader recomputes")
        res.equal(harness.stat(b, "warm_refused"), 1, "warm_refused counts it")
        # The set of s and the deletes of d and h go on to the peer: its copies go.
        harness.wait_for(lambda: not {b"s", b"d", b"h"} & set(stub.values), what="the peer's deletes")
        res.check(b"ring forget s" in stub.requests and b"delete s" in stub.requests,
                  "a set is sent on as ring forget, then delete to a peer without a ring",
                  repr(stub.requests))
    h.stop()
    stub.close()


def bad_peers(res):
    stub = StubPeer({b"x": b"v"}, silent=True)
    h = warm_node("127.0.0.1:%d" % stub.port, "-o", "warm_timeout_ms=3000")
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        a.send(b"get x\r\n")
        harness.wait_for(lambda: len(stub.requests) == 1, what="the fetch of x")
        res.equal(b.call(b"set y 0 0 1\r\n1\r\n"), b"STORED\r\n",
                  "a silent peer blocks no other client of the worker")
        res.equal(b.call(b"get y\r\n", b"END\r\n"), b"VALUE y 0 1\r\n1\r\nEND\r\n",
                  "... reads too")
        res.equal(a.recv_until(b"END\r\n"), b"END\r\n", "a silent peer: the recompute hint")
        res.equal(harness.stat(b, "warm_timeouts"), 1, "warm_timeouts")
    h.stop()
    stub.close()
    h = warm_node("127.0.0.1:%d" % harness.free_port())
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get x\r\n", b"END\r\n"), b"END\r\n", "a dead peer: a miss")
        res.equal(c.call(b"mg x2 v N30\r\n", b"\r\n\r\n"), b"VA 0 W\r\n\r\n", "... and a W")
        res.check(harness.stat(c, "warm_errors") >= 1, "warm_errors")
    h.stop()


def warm_switches(res):
    """`warm off|on` stops and resumes warm-up at run time; -o warm_min_hit_ratio ends it by
    itself once the peer stops having the keys (a ratio of 0 over 30 fetches)."""
    mc = harness.start_memcached(["-m", "16"])
    with harness.Conn(mc.port) as m:
        m.call(b"set k1 0 0 1\r\n1\r\n")
        m.call(b"set k2 0 0 1\r\n2\r\n")
    h = warm_node("127.0.0.1:%d" % mc.port)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"warm off\r\n"), b"OK\r\n", "warm off")
        res.equal(harness.stat(c, "warm_active"), 0, "warm off: warm_active 0")
        res.equal(c.call(b"get k1\r\n", b"END\r\n"), b"END\r\n", "warm off: a miss is not warmed")
        res.equal(harness.stat(c, "warm_fetches"), 0, "warm off: no fetch")
        res.equal(c.call(b"warm on\r\n"), b"OK\r\n", "warm on")
        res.equal(c.call(b"get k2\r\n", b"END\r\n"), b"VALUE k2 0 1\r\n2\r\nEND\r\n",
                  "warm on: warmed again")
        res.equal(c.call(b"warm maybe\r\n"), b"CLIENT_ERROR bad command line format\r\n", "warm maybe")
    h.stop()
    h = warm_node("127.0.0.1:%d" % mc.port, "-o", "warm_min_hit_ratio=0.5")
    with harness.Conn(h.port) as c:
        for i in range(30):
            c.call(b"get absent%d\r\n" % i, b"END\r\n")
        # The rule is judged once a second: it may end warm-up after the 20th miss.
        misses = harness.stat(c, "warm_misses")
        res.check(20 <= misses <= 30, "30 peer misses (warm-up may end from the 20th)", repr(misses))
        harness.wait_for(lambda: harness.stat(c, "warm_active") == 0, what="warm-up to end")
        res.equal(c.call(b"get k1\r\n", b"END\r\n"), b"END\r\n",
                  "warm_min_hit_ratio: after it ended a miss is not warmed")
        res.equal(harness.stat(c, "warm_fetches"), misses, "... no fetch")
    h.stop()
    h = harness.start_herdless(["-t", "1"])
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"warm on\r\n"), b"SERVER_ERROR no warm peers (-o warm_peer or -o ring)\r\n",
                  "warm without peers")
        res.equal(c.call(b"ring\r\n"), b"SERVER_ERROR no ring (-o ring)\r\n", "ring without a ring")
    h.stop()
    mc.stop()


def returning_node(res):
    directory = harness.scratch_dir("herdless-return-")
    os.chmod(directory, 0o777)
    path = os.path.join(directory, "snap")

    def restart(mode, max_age, then_sleep=0.0):
        args = ["-e", path, "-o", "classic_stampede=%s,restore_max_age=%d" % (mode, max_age)]
        h = harness.start_herdless(args)
        with harness.Conn(h.port) as c:
            c.call(b"set k 0 0 3\r\nold\r\n")
        h.stop()   # an orderly stop writes the snapshot
        time.sleep(then_sleep)   # ages the file past max_age: waiting, nothing timed
        return harness.start_herdless(args)

    h = restart("wait", 3600)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 3\r\nold\r\nEND\r\n",
                  "a young snapshot restores fresh values")
    h.stop()
    h = restart("wait", 1, then_sleep=2.5)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get k\r\n", b"END\r\n"), b"END\r\n",
                  "an old snapshot: the first classic reader recomputes")
        res.equal(c.call(b"mg k v\r\n", b"\r\nold\r\n"), b"VA 3 Z X\r\nold\r\n",
                  "... and the others see the value as stale")
        res.equal(c.call(b"add k 0 0 3\r\nnew\r\n", b"\r\n"), b"STORED\r\n",
                  "the recomputing reader fills its miss with add (read-through clients do)")
        res.equal(c.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 3\r\nnew\r\nEND\r\n",
                  "... and every reader has the new value")
    h.stop()
    h = restart("off", 1, then_sleep=2.5)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"get k\r\n", b"END\r\n"), b"END\r\n",
                  "an old snapshot with classic_stampede off: nothing restored")
        res.equal(harness.stat(c, "curr_items"), 0, "... no item at all")
    h.stop()


JOIN_KEYS = 600


def join_loads(res, new_node_args, label):
    """Database loads when a third node joins two memcached nodes behind nutcracker, and the
    keys that moved to it."""
    workdir = harness.scratch_dir("herdless-join-")
    old = [harness.start_memcached(["-m", "16"]) for _ in range(2)]
    keys = scaleout.key_names("join:", JOIN_KEYS)
    proxy = test_twemproxy.start_nutcracker(old, workdir)
    c = test_twemproxy.client(proxy.port)
    for k in keys:
        c.set(k, k.encode(), expire=600)
    c.close()
    proxy.stop()
    peers = ";".join("127.0.0.1:%d" % n.port for n in old)
    if new_node_args is None:
        new = harness.start_memcached(["-m", "16"])
    elif "ring" in new_node_args:
        # The pool nutcracker will have, servers named as start_nutcracker names them (so the
        # new node's port, not known yet, does not matter to ketama).
        ring = os.path.join(workdir, "ring.yml")
        with open(ring, "w") as f:
            f.write("herdless:\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n")
            for i, n in enumerate(old):
                f.write("   - 127.0.0.1:%d:1 node%d\n" % (n.port, i + 1))
            f.write("   - 127.0.0.1:1:1 node3\n")
        os.chmod(workdir, 0o755)
        os.chmod(ring, 0o644)
        new = harness.start_herdless(["-t", "2", "-o", "classic_stampede=wait,ring=%s,ring_self=node3" % ring,
                                      "-o", "warm_timeout_ms=%d" % PEER_TIMEOUT_MS])
    else:
        new = harness.start_herdless(["-t", "2", "-o", new_node_args + ",warm_peer=" + peers,
                                      "-o", "warm_timeout_ms=%d" % PEER_TIMEOUT_MS])
    proxy = test_twemproxy.start_nutcracker(old + [new], workdir)
    c = test_twemproxy.client(proxy.port)
    loads = 0
    wrong = 0
    for k in keys:
        value = c.get(k)
        if value is None:
            loads += 1   # the read-through client loads from its database and stores
            c.set(k, k.encode(), expire=600)
        elif value != k.encode():
            wrong += 1
    c.close()
    moved = sum(1 for held in scaleout.owners([new], keys).values() if held)
    harness.log("join, new node %s: %d of %d keys moved to it, %d database loads"
                % (label, moved, JOIN_KEYS, loads))
    res.equal(wrong, 0, "join (%s): no wrong value" % label)
    res.check(moved > 0, "join (%s): keys moved to the new node" % label, repr(moved))
    if new_node_args == "ring":
        with harness.Conn(new.port) as n:
            res.equal(harness.stat(n, "warm_fetches"), moved,
                      "join (ring): one peer fetch per moved key")
            res.equal(harness.stat(n, "warm_misses"), 0,
                      "join (ring): each asked of its previous owner only, which had it")
    proxy.stop()
    for n in old + [new]:
        n.stop()
    return moved, loads


def joining_node(res):
    moved, loads = join_loads(res, None, "memcached")
    res.equal(loads, moved, "join, memcached: one database load per moved key")
    moved, loads = join_loads(res, "classic_stampede=wait", "herdless warm_peer")
    res.equal(loads, 0, "join, herdless warming from the old nodes: no database load")
    moved, loads = join_loads(res, "ring", "herdless ring")
    res.equal(loads, 0, "join, herdless with -o ring (no warm_peer): no database load")


RING_KEYS = 10000
# (hash, keys, weights, named servers, hash_tag). The first pool is unnamed: ring_self
# "127.0.0.1:port" picks it, being the first to list that address; the others are found by
# their servers' names.
RING_POOLS = [("fnv1a_64", RING_KEYS, (1, 1, 1), False, None),
              ("md5", RING_KEYS, (1, 2, 1), True, None),
              ("fnv1a_32", RING_KEYS, (1, 1, 1), True, None),
              ("murmur", RING_KEYS, (3, 1, 2), True, "{}"),
              ("one_at_a_time", RING_KEYS, (1, 1, 1), True, None),
              ("crc32a", RING_KEYS, (1, 1, 2), True, None),
              ("fnv1_64", 2000, (1, 1, 1), True, None),
              ("fnv1_32", 2000, (1, 1, 1), True, None),
              ("crc32", 2000, (1, 1, 1), True, None)]


def ring_yaml(nodes, listen_ports):
    text = ""
    for (hash_name, _, weights, named, tag), port in zip(RING_POOLS, listen_ports):
        text += ("%s:\n  listen: 127.0.0.1:%d\n  hash: %s\n  distribution: ketama\n"
                 % (hash_name, port, hash_name))
        if tag:
            text += "  hash_tag: \"%s\"\n" % tag
        text += "  auto_eject_hosts: false\n  timeout: 5000\n  servers:\n"
        for i, (node, weight) in enumerate(zip(nodes, weights)):
            text += "   - 127.0.0.1:%d:%d%s\n" % (node.port, weight,
                                                 " %s-%d" % (hash_name, i) if named else "")
    return text


def held_keys(node):
    """The keys a node holds (lru_crawler metadump all, keys URL-encoded): on herdless the
    dump walks the whole index; memcached's crawler can pass an item that moves meanwhile."""
    with harness.Conn(node.port) as c:
        return {urllib.parse.unquote(line[b"key"].decode()) for line in harness.metadump(c)}


def ring_ownership(res):
    """Each key lands, through a live nutcracker, on the node herdless's `ring owner` names."""
    workdir = harness.scratch_dir("herdless-ring-")
    nodes = [harness.start_memcached(["-m", "64"]) for _ in range(3)]
    listen = [harness.free_port() for _ in RING_POOLS]
    conf = os.path.join(workdir, "nutcracker.yml")
    with open(conf, "w") as f:
        f.write(ring_yaml(nodes, listen))
    os.chmod(workdir, 0o755)
    os.chmod(conf, 0o644)
    argv = ["/usr/sbin/nutcracker", "-c", conf, "-s", str(harness.free_port()), "-a", "127.0.0.1"]   # its log: the harness's
    proxy = harness.Process("nutcracker", argv, listen[-1]).start()
    keys = {}
    for (hash_name, count, _, _, tag), port in zip(RING_POOLS, listen):
        names = scaleout.key_names(hash_name + ":", count)
        if tag:   # half the keys carry a tag: only the tag is hashed
            names = [k if i % 2 else "user:{%d}:%s" % (i % 97, k) for i, k in enumerate(names)]
        keys[hash_name] = names
        c = test_twemproxy.client(port)
        for start in range(0, count, 500):
            failed = c.set_many({k: b"1" for k in names[start:start + 500]}, expire=600)
            res.equal(failed, [], "%s: sets through nutcracker" % hash_name)
        c.close()
    proxy.stop()
    # Asked of each node with gets: memcached's metadump may miss a key the LRU
    # maintainer moves between queues while the crawler walks them.
    holder = {}
    for names in keys.values():
        for k, held in scaleout.owners(nodes, names).items():
            if len(held) == 1:
                holder[k] = "127.0.0.1:%d" % nodes[held[0]].port
    for hash_name, count, _, named, _ in RING_POOLS:
        self_name = "%s-0" % hash_name if named else "127.0.0.1:%d" % nodes[0].port
        h = harness.start_herdless(["-t", "1", "-o", "ring=%s,ring_self=%s" % (conf, self_name)])
        names = keys[hash_name]
        mismatches = []
        with harness.Conn(h.port) as c:
            for start in range(0, count, 100):
                batch = names[start:start + 100]
                reply = c.call(b"ring owner %s\r\n" % " ".join(batch).encode(), b"END\r\n")
                lines = reply.decode().split("\r\n")[:-2]
                res.equal(len(lines), len(batch), "%s: one OWNER line per key" % hash_name)
                for line in lines:
                    _, k, owner = line.split(" ")
                    if holder.get(k) != owner:
                        mismatches.append((k, owner, holder.get(k)))
        h.stop()
        res.equal(mismatches[:3], [], "%s: herdless's owner of each of %d keys is nutcracker's"
                  % (hash_name, count))
        harness.log("ring %s: %d keys, %d owned by node 1" % (
            hash_name, count, sum(1 for k in names if holder.get(k) == "127.0.0.1:%d" % nodes[0].port)))
    for n in nodes:
        n.stop()


def retry(call):
    """One request through nutcracker, again while it still ejects a node that just left."""
    for _ in range(20):
        try:
            return call()
        except (MemcacheError, OSError):
            time.sleep(0.05)   # nutcracker answers the request that finds a node gone with an error
    return call()


def foreign_items(nodes):
    total = 0
    for n in nodes:
        with harness.Conn(n.port) as s:
            total += harness.stat(s, "curr_foreign_items")
    return total


def returning_ring_node(res):
    """Three ring nodes behind nutcracker; node3 stops (writes its -e snapshot), nutcracker
    ejects it and its keys go to the others (foreign there: TTL capped at foreign_ttl); some
    are overwritten, some deleted; node3 comes back with -e and, before serving, drops its
    copies of the keys the others changed: a read gives the new value (warmed from the
    node that has it) or a miss, never the old value; untouched keys come back from the
    snapshot."""
    workdir = harness.scratch_dir("herdless-return-ring-")
    os.chmod(workdir, 0o777)
    ports = [harness.free_port() for _ in range(3)]
    ring = os.path.join(workdir, "ring.yml")
    proxy_port = harness.free_port()
    with open(ring, "w") as f:
        f.write("herdless:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n"
                "  auto_eject_hosts: true\n  server_failure_limit: 1\n  server_retry_timeout: 600000\n"
                "  timeout: 5000\n  servers:\n" % proxy_port)
        for i, port in enumerate(ports):
            f.write("   - 127.0.0.1:%d:1 node%d\n" % (port, i + 1))
    os.chmod(ring, 0o644)
    snap = os.path.join(workdir, "snap")

    def node(i, *extra):
        return harness.start_herdless(["-t", "2", "-p", str(ports[i]), "-o",
                                       "classic_stampede=wait,ring=%s,ring_self=node%d" % (ring, i + 1),
                                       "-o", "warm_timeout_ms=%d" % PEER_TIMEOUT_MS] + list(extra))
    nodes = [node(0), node(1), node(2, "-e", snap)]
    argv = ["/usr/sbin/nutcracker", "-c", ring, "-s", str(harness.free_port()), "-a", "127.0.0.1"]   # its log: the harness's
    proxy = harness.Process("nutcracker", argv, proxy_port).start()
    keys = scaleout.key_names("ret:", 300)
    c = test_twemproxy.client(proxy_port)
    res.equal(c.set_many({k: b"v1" for k in keys}, expire=600), [], "sets through nutcracker")
    with harness.Conn(nodes[0].port) as a:
        owner = {}
        for start in range(0, len(keys), 100):
            reply = a.call(b"ring owner %s\r\n" % " ".join(keys[start:start + 100]).encode(), b"END\r\n")
            for line in reply.decode().split("\r\n")[:-2]:
                owner[line.split(" ")[1]] = line.split(" ")[2]
    mine = [k for k in keys if owner[k] == "127.0.0.1:%d" % ports[2]]
    res.check(len(mine) >= 30, "node3 owns keys", repr(len(mine)))
    nodes[2].stop()   # an orderly stop writes the snapshot
    overwritten, deleted, kept = mine[0::3], mine[1::3], mine[2::3]
    retry(lambda: c.get(overwritten[0]))
    for k in overwritten:
        res.equal(retry(lambda: c.set(k, b"v2", expire=600)), True, "overwrite while node3 is away")
    for k in deleted:
        retry(lambda: c.delete(k))
    c.close()
    k0 = overwritten[0]
    held = scaleout.owners(nodes[:2], [k0])[k0]
    res.equal(len(held), 1, "the overwritten key is on one of the other nodes")
    with harness.Conn(nodes[held[0]].port) as f:
        ttl = int(f.call(b"mg %s t\r\n" % k0.encode()).split()[1][1:])
        res.check(0 < ttl <= 60, "a foreign key's TTL is capped at foreign_ttl (60)", repr(ttl))
    sets = 0
    for n in nodes[:2]:
        with harness.Conn(n.port) as s:
            sets += harness.stat(s, "foreign_sets")
    res.equal(sets, len(overwritten) + len(deleted), "foreign_sets: each overwrite and delete")
    # Each overwritten key is held once (the deleted ones are gone), and a lease stub
    # (in curr_items, not in a metadump) may be one more.
    stubs = 0
    for n in nodes[:2]:
        with harness.Conn(n.port) as s:
            stubs += harness.stat(s, "curr_items") - len(held_keys(n))
    before = foreign_items(nodes[:2])
    res.check(len(overwritten) <= before <= len(overwritten) + stubs,
              "curr_foreign_items: each overwritten key, and at most the stubs besides",
              repr((before, len(overwritten), stubs)))
    with harness.Conn(nodes[held[0]].port) as f:
        res.equal(f.call(b"delete %s\r\n" % k0.encode()), b"DELETED\r\n", "delete a foreign key")
        res.equal(foreign_items(nodes[:2]), before - 1, "curr_foreign_items after the delete")
        res.equal(f.call(b"set %s 0 0 2\r\nv2\r\n" % k0.encode()), b"STORED\r\n", "and store it again")
        f.call(b"set %s 0 0 2\r\nv2\r\n" % k0.encode())   # an overwrite
    res.equal(foreign_items(nodes[:2]), before, "curr_foreign_items after delete, set, overwrite")
    # Taking a list clears it: refused to a connection from outside the ring (127.0.0.2).
    for n in nodes[:2]:
        outsider = socket.create_connection(("127.0.0.1", n.port), timeout=10, source_address=("127.0.0.2", 0))
        outsider.sendall(b"ring foreign node3\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = outsider.recv(100)
            if not chunk:
                break
            reply += chunk
        res.equal(reply, b"CLIENT_ERROR not a ring member\r\n", "ring foreign: refused from a non-member address")
        outsider.close()
    back = node(2, "-e", snap)
    with harness.Conn(back.port) as b:
        new = [b.call(b"get %s\r\n" % k.encode(), b"END\r\n") for k in overwritten]
        res.equal([r for r in new if b"v1" in r], [], "back: no overwritten key gives its old value")
        res.equal(sum(1 for r in new if b"\r\nv2\r\n" in r), len(overwritten),
                  "back: each overwritten key gives the new value (warmed from the fallback)")
        gone = [b.call(b"get %s\r\n" % k.encode(), b"END\r\n") for k in deleted]
        res.equal(sum(1 for r in gone if r == b"END\r\n"), len(deleted),
                  "back: each key deleted while away misses")
        old = [b.call(b"get %s\r\n" % k.encode(), b"END\r\n") for k in kept]
        res.equal(sum(1 for r in old if b"\r\nv1\r\n" in r), len(kept),
                  "back: untouched keys come back from the snapshot")
    with harness.Conn(nodes[0].port) as s0, harness.Conn(nodes[1].port) as s1:
        res.equal(harness.stat(s0, "foreign_logged") + harness.stat(s1, "foreign_logged"), 0,
                  "the others handed their lists over")
    # A write that reaches the fallback after node3's first listing (nutcracker has not
    # taken node3 back): node3's later passes (2, 4, 8 ... s after start) drop its copy.
    late = kept[0]
    c = test_twemproxy.client(proxy_port)
    res.equal(c.set(late, b"v3", expire=600), True, "a write through nutcracker after node3 is back")
    c.close()
    deadline = time.monotonic() + 20
    with harness.Conn(back.port) as b:
        while True:
            got = b.call(b"get %s\r\n" % late.encode(), b"END\r\n")
            if b"\r\nv1\r\n" not in got or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        res.equal(got.split(b"\r\n")[1:2], [b"v3"], "a later pass dropped the old copy: the newer value warms")
    proxy.stop()
    for n in (nodes[0], nodes[1], back):
        n.stop()


def ring_pair(workdir, peer_port, self_port):
    ring = os.path.join(workdir, "ring.yml")
    with open(ring, "w") as f:
        f.write("p:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n"
                "  servers:\n   - 127.0.0.1:%d:1 old\n   - 127.0.0.1:%d:1 new\n"
                % (harness.free_port(), peer_port, self_port))
    os.chmod(ring, 0o644)
    return ring


def owned_keys(c, port, count):
    """`count` keys the node on `port` owns, asked over its connection `c`."""
    names = scaleout.key_names("own:", 8 * count)
    owners = []
    for start in range(0, len(names), 100):
        reply = c.call(b"ring owner %s\r\n" % " ".join(names[start:start + 100]).encode(), b"END\r\n")
        owners += [line.split(" ") for line in reply.decode().split("\r\n")[:-2]]
    return [k for _, k, owner in owners if owner == "127.0.0.1:%d" % port][:count]


def default_hit_ratio(res):
    """-o ring, default warm_min_hit_ratio: warm-up ends where the previous owner misses,
    goes on where it hits."""
    workdir = harness.scratch_dir("herdless-hit-ratio-")
    os.chmod(workdir, 0o755)
    mc = harness.start_memcached(["-m", "16"])
    port = harness.free_port()
    ring = ring_pair(workdir, mc.port, port)
    args = ["-t", "1", "-p", str(port), "-o", "classic_stampede=wait,ring=%s,ring_self=new" % ring,
            "-o", "warm_timeout_ms=%d" % PEER_TIMEOUT_MS]
    h = harness.start_herdless(args)
    with harness.Conn(h.port) as c:
        keys = owned_keys(c, port, 40)
        res.equal(len(keys), 40, "40 keys the new node owns")
        for k in keys[:30]:
            c.call(b"get %s\r\n" % k.encode(), b"END\r\n")
        misses = harness.stat(c, "warm_misses")   # the rule may end warm-up from the 20th
        res.check(20 <= misses <= 30, "never joined: 30 peer misses", repr(misses))
        harness.wait_for(lambda: harness.stat(c, "warm_active") == 0, what="warm-up to end by default")
        sent = harness.stat(c, "warm_invalidations")
        res.equal(c.call(b"set %s 0 0 1\r\nx\r\n" % keys[30].encode()), b"STORED\r\n", "a set")
        res.equal(c.call(b"delete %s\r\n" % keys[30].encode()), b"DELETED\r\n", "a delete")
        res.equal(harness.stat(c, "warm_invalidations"), sent, "after it ended: no change sent on")
        with harness.Conn(mc.port) as m:
            m.call(b"set %s 0 0 2\r\nv1\r\n" % keys[31].encode())
        res.equal(c.call(b"get %s\r\n" % keys[31].encode(), b"END\r\n"), b"END\r\n",
                  "after it ended: a miss is not warmed")
        res.equal(harness.stat(c, "warm_fetches"), misses, "... no fetch")
    h.stop()
    with harness.Conn(mc.port) as m:
        for k in keys:
            m.call(b"set %s 0 0 2\r\nv1\r\n" % k.encode())
    h = harness.start_herdless(args)
    with harness.Conn(h.port) as c:
        got = [c.call(b"get %s\r\n" % k.encode(), b"END\r\n") for k in keys[:30]]
        res.equal(sum(1 for r in got if b"\r\nv1\r\n" in r), 30, "a join: 30 keys warmed")
        for i in range(10):
            c.call(b"get absent-%d\r\n" % i, b"END\r\n")
        time.sleep(2.5)   # let the once-a-second judge see the window (not asserted on)
        res.equal(harness.stat(c, "warm_active"), 1, "a join whose peer hits: warm-up goes on")
        res.equal(c.call(b"get %s\r\n" % keys[35].encode(), b"END\r\n"),
                  b"VALUE %s 0 2\r\nv1\r\nEND\r\n" % keys[35].encode(), "... and warms")
        res.equal(c.call(b"set %s 0 0 1\r\nx\r\n" % keys[36].encode()), b"STORED\r\n", "a set")
        harness.wait_for(lambda: harness.stat(c, "warm_invalidations") >= 1, what="the set sent on to the peer")
    h.stop()
    mc.stop()


def body(res):
    default_hit_ratio(res)
    returning_ring_node(res)
    ring_ownership(res)
    from_memcached(res)
    from_herdless(res)
    gets_only_peer(res)
    writes_meanwhile(res)
    bad_peers(res)
    warm_switches(res)
    returning_node(res)
    joining_node(res)


if __name__ == "__main__":
    harness.run("test_cluster", body)
