"""A value deleted or replaced on a warming node never comes back from its warm peer (issue 22).

A warming node (-o warm_peer, -o ring) sends each client change of a key it would warm on to
the peer it warms from (`ring forget <key>`, or `delete <key>` to a peer without a ring), so
the peer's older copy is gone before the hold-off ends; a delete the peer did not confirm
refuses the key's warm fills for the rest of warm-up.

- From Debian's memcached and from another herdless: a delete of a key the node lacks, and a
  set with a 1 s TTL whose value then expires: the peer's copies are gone (warm_invalidations,
  no failure), and after the hold-off a miss of either key gets no old value (a peer miss);
  a key nobody changed still warms; after a client's flush_all no key warms, the peer keeps
  its copies.
- A peer that drops the connection on the delete (unreachable for it): warm_invalidations_failed,
  the peer keeps the old value, and after the hold-off a miss of the key still does not warm
  it (warm_refused); other keys warm. A dead peer: the failure is counted.
- While warm-up is stopped (`warm off`) nothing is sent; a key deleted meanwhile does not
  warm after `warm on`, another key does.
- Two herdless nodes warming from each other: a delete sent on is not echoed back.
- With -o ring: a node's delete goes to the key's previous owner only (the one it would warm
  from, as `ring forget`, which a ring node applies without counting or logging it as a
  foreign change.
Counts and replies only; the sleeps wait out a hold-off or a TTL, nothing is timed.
"""

import os
import time

import harness
import scaleout
import test_cluster

# The peers' confirmations may be slow on a loaded machine; the hold-off after a change sent
# on to a peer is twice this.
TIMEOUT_MS = 1000
PAST_HOLDOFF_S = 2.5   # past warm_holdoff=1 and 2 * TIMEOUT_MS


def warm_node(peer):
    return harness.start_herdless(["-t", "2", "-o", "classic_stampede=wait,warm_peer=" + peer,
                                   "-o", "warm_timeout_ms=%d,warm_holdoff=1" % TIMEOUT_MS])


def held(port, key):
    """Whether the node has a value for `key` (a plain meta get: no lease, no warm-up)."""
    with harness.Conn(port) as p:
        return p.call(b"mg %s v\r\nmn\r\n" % key, b"MN\r\n") != b"EN\r\nMN\r\n"


def deletes_reach_the_peer(res, peer, label, peer_port):
    with harness.Conn(peer_port) as p:
        for k in (b"d", b"s", b"keep", b"x"):
            res.equal(p.call(b"set %s 3 1000 3\r\nold\r\n" % k), b"STORED\r\n", "%s: peer set" % label)
    h = warm_node(peer)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"delete d\r\n"), b"NOT_FOUND\r\n", "%s: delete of a key the node lacks" % label)
        res.equal(c.call(b"set s 0 1 3\r\nnew\r\n"), b"STORED\r\n", "%s: set with a 1 s TTL" % label)
        harness.wait_for(lambda: not held(peer_port, b"d") and not held(peer_port, b"s"),
                         what="%s: the peer's copies to go" % label)
        res.equal(harness.stat_values(c, "warm_invalidations", "warm_invalidations_failed"),
                  {"warm_invalidations": 2, "warm_invalidations_failed": 0},
                  "%s: two changes sent on, both confirmed" % label)
        time.sleep(PAST_HOLDOFF_S)   # the hold-off and s's TTL run out
        res.equal(c.call(b"get d\r\n", b"END\r\n"), b"END\r\n",
                  "%s: after the hold-off the deleted value does not come back" % label)
        res.equal(c.call(b"get s\r\n", b"END\r\n"), b"END\r\n",
                  "%s: nor the value the expired set replaced" % label)
        res.equal(harness.stat_values(c, "warm_fetches", "warm_hits", "warm_misses", "warm_refused"),
                  {"warm_fetches": 2, "warm_hits": 0, "warm_misses": 2, "warm_refused": 0},
                  "%s: both asked of the peer, which missed" % label)
        res.equal(c.call(b"get keep\r\n", b"END\r\n"), b"VALUE keep 3 3\r\nold\r\nEND\r\n",
                  "%s: a key nobody changed still warms" % label)
        res.equal(c.call(b"flush_all\r\n"), b"OK\r\n", "%s: flush_all" % label)
        res.equal(c.call(b"get x\r\n", b"END\r\n"), b"END\r\n", "%s: after a flush_all no key warms" % label)
        res.equal(harness.stat(c, "warm_refused"), 1, "%s: ... refused" % label)
    res.equal(held(peer_port, b"x"), True, "%s: the flush stays here: the peer keeps its copy" % label)
    h.stop()


def from_memcached(res):
    mc = harness.start_memcached(["-m", "16"])
    deletes_reach_the_peer(res, "127.0.0.1:%d" % mc.port, "memcached peer", mc.port)
    mc.stop()


def from_herdless(res):
    peer = harness.start_herdless(["-t", "1"])
    deletes_reach_the_peer(res, "127.0.0.1:%d" % peer.port, "herdless peer", peer.port)
    peer.stop()


def mutual_peers(res):
    """Two herdless nodes warming from each other: a delete on one reaches the other as `ring
    forget`, which that one does not send back (no echo)."""
    ports = [harness.free_port(), harness.free_port()]
    nodes = [harness.start_herdless(["-t", "1", "-p", str(ports[i]), "-o",
                                     "classic_stampede=wait,warm_peer=127.0.0.1:%d" % ports[1 - i],
                                     "-o", "warm_timeout_ms=%d" % TIMEOUT_MS]) for i in (0, 1)]
    with harness.Conn(nodes[1].port) as b:
        b.call(b"set m 0 1000 3\r\nold\r\n")
        res.equal(harness.stat(b, "warm_invalidations"), 1, "mutual: b's set sent on to a")
    with harness.Conn(nodes[0].port) as a:
        res.equal(a.call(b"delete m\r\n"), b"NOT_FOUND\r\n", "mutual: delete m on a")
        harness.wait_for(lambda: not held(nodes[1].port, b"m"), what="mutual: b's copy to go")
        res.equal(harness.stat_values(a, "warm_invalidations", "warm_invalidations_failed"),
                  {"warm_invalidations": 1, "warm_invalidations_failed": 0}, "mutual: a sent one, confirmed")
    with harness.Conn(nodes[1].port) as b:
        res.equal(harness.stat(b, "warm_invalidations"), 1, "mutual: b sent nothing back")
    for n in nodes:
        n.stop()


def unreachable_peer(res):
    stub = test_cluster.StubPeer({b"f": b"old", b"g": b"old"}, drop_deletes=True)
    stub.release.set()
    h = warm_node("127.0.0.1:%d" % stub.port)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"delete f\r\n"), b"NOT_FOUND\r\n", "unreachable: delete f")
        harness.wait_for_stat(c, "warm_invalidations_failed", lambda n: n == 1)
        res.equal(stub.values.get(b"f"), b"old", "unreachable: the peer keeps the old value")
        time.sleep(PAST_HOLDOFF_S)   # the hold-off runs out (and the peer's rest after the drop)
        res.equal(c.call(b"get f\r\n", b"END\r\n"), b"END\r\n",
                  "unreachable: after the hold-off the old value still does not come back")
        res.equal(harness.stat_values(c, "warm_refused", "warm_fetches"), {"warm_refused": 1, "warm_fetches": 0},
                  "unreachable: refused, never asked of the peer")
        res.equal(c.call(b"get g\r\n", b"END\r\n"), b"VALUE g 5 3\r\nold\r\nEND\r\n",
                  "unreachable: a key nobody changed still warms")
    h.stop()
    stub.close()
    h = warm_node("127.0.0.1:%d" % harness.free_port())
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"delete f\r\n"), b"NOT_FOUND\r\n", "dead peer: delete f")
        harness.wait_for_stat(c, "warm_invalidations_failed", lambda n: n == 1)
    h.stop()


def stopped_warm_up(res):
    """While warm-up is stopped nothing is sent to the peer; the keys changed meanwhile do not
    warm after `warm on`, the others do."""
    mc = harness.start_memcached(["-m", "16"])
    with harness.Conn(mc.port) as p:
        for k in (b"p1", b"p2"):
            p.call(b"set %s 0 1000 3\r\nold\r\n" % k)
    h = warm_node("127.0.0.1:%d" % mc.port)
    with harness.Conn(h.port) as c:
        res.equal(c.call(b"warm off\r\n"), b"OK\r\n", "stopped: warm off")
        res.equal(c.call(b"delete p1\r\n"), b"NOT_FOUND\r\n", "stopped: delete p1")
        res.equal(harness.stat(c, "warm_invalidations"), 0, "stopped: nothing sent to the peer")
        res.equal(c.call(b"warm on\r\n"), b"OK\r\n", "stopped: warm on")
        time.sleep(PAST_HOLDOFF_S)
        res.equal(c.call(b"get p1\r\n", b"END\r\n"), b"END\r\n",
                  "stopped: the key deleted meanwhile does not warm after warm on")
        res.equal(c.call(b"get p2\r\n", b"END\r\n"), b"VALUE p2 0 3\r\nold\r\nEND\r\n",
                  "stopped: another key warms")
    res.equal(held(mc.port, b"p1"), True, "stopped: the peer kept p1")
    h.stop()
    mc.stop()


def ring_previous_owner(res):
    workdir = harness.scratch_dir("herdless-invalidate-ring-")
    os.chmod(workdir, 0o755)
    ports = [harness.free_port() for _ in range(3)]
    ring = os.path.join(workdir, "ring.yml")
    with open(ring, "w") as f:
        f.write("herdless:\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n")
        for i, port in enumerate(ports):
            f.write("   - 127.0.0.1:%d:1 node%d\n" % (port, i + 1))
    os.chmod(ring, 0o644)
    nodes = [harness.start_herdless(["-t", "2", "-p", str(port), "-o",
                                     "classic_stampede=wait,ring=%s,ring_self=node%d" % (ring, i + 1),
                                     # every fetch here misses: the ratio rule must not end warm-up
                                     "-o", "warm_timeout_ms=%d,warm_holdoff=1,warm_min_hit_ratio=0" % TIMEOUT_MS])
             for i, port in enumerate(ports)]
    keys = scaleout.key_names("inv:", 300)
    with harness.Conn(nodes[2].port) as n3:
        reply = n3.call(b"ring owner %s\r\n" % " ".join(keys).encode(), b"END\r\n").decode()
    mine = [line.split(" ")[1] for line in reply.split("\r\n")
            if line.startswith("OWNER ") and line.split(" ")[2] == "127.0.0.1:%d" % ports[2]][:40]
    res.check(len(mine) >= 10, "ring: node3 owns keys", repr(len(mine)))
    foreign_sets = []
    for n in nodes[:2]:
        with harness.Conn(n.port) as c:
            for k in mine:
                c.call(b"set %s 0 1000 3\r\nold\r\n" % k.encode())
            foreign_sets.append(harness.stat(c, "foreign_sets"))
    with harness.Conn(nodes[2].port) as n3:
        for k in mine:
            res.equal(n3.call(b"delete %s\r\n" % k.encode()), b"NOT_FOUND\r\n", "ring: delete on node3")

        def copies():
            return sum(held(n.port, k.encode()) for n in nodes[:2] for k in mine)
        harness.wait_for(lambda: copies() == len(mine), what="ring: the previous owners' deletes")
        res.equal(harness.stat_values(n3, "warm_invalidations", "warm_invalidations_failed"),
                  {"warm_invalidations": len(mine), "warm_invalidations_failed": 0},
                  "ring: one invalidation per key, to its previous owner only")
        time.sleep(PAST_HOLDOFF_S)
        res.equal(sum(n3.call(b"get %s\r\n" % k.encode(), b"END\r\n") != b"END\r\n" for k in mine), 0,
                  "ring: after the hold-off no deleted value comes back")
        res.equal(harness.stat(n3, "warm_misses"), len(mine), "ring: each asked of its previous owner, which missed")
    for n, before in zip(nodes[:2], foreign_sets):
        with harness.Conn(n.port) as c:
            res.equal(harness.stat(c, "foreign_sets"), before,
                      "ring: `ring forget` is no foreign change (node3 made it)")
    for n in nodes:
        n.stop()


def body(res):
    from_memcached(res)
    from_herdless(res)
    mutual_peers(res)
    unreachable_peer(res)
    stopped_warm_up(res)
    ring_previous_owner(res)


if __name__ == "__main__":
    harness.run("test_warm_invalidation", body)
