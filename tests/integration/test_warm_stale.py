"""A value its warm peer holds stale is copied as stale (issue 22, the join's loads).

A node that warms a miss from a peer (-o warm_peer, -o ring) and finds the value stale there
(expired within the peer's stale_grace, `X`; or with a lease out, `W`/`Z`) stores it as a stale
value under the lease of the reader whose miss asked: that reader gets its recompute hint, every
other reader the stale value, as the peer would have served them. The peer here is a herdless
with -o stale_grace=60 holding values set already expired (`set k 0 -1`) or invalidated (`md I`).

- Wait mode: 50 concurrent readers of one such key: one peer fetch, one reader told to
  recompute (one database load), 49 given the stale value; the recompute then replaces it.
- Stale mode (as behind twemproxy): the first reader recomputes, the next get the stale value
  with the peer's flags; an invalidated value (`md I`, TTL left at the peer) too. The fetch's
  `mg` won the lease at the peer (W); the node gives it back, so the peer's next reader wins.
- Stale serving off here (stale_grace 0): nothing is copied; a second reader misses as before
  (warm_stale counts it, warm_stale_copies does not).
- A set or a delete that lands while the fetch is under way wins (a stub peer holds its reply):
  no stale copy. A reader whose connection is reset while its fetch waits on the stub (a
  plain close is a half-close the node still answers): the lease the late reply hands over
  still goes back (`md <key> I C<token>`). A delete of a stale copy: after the hold-off the
  peer's copy is gone too (the delete was sent on), and no old value comes back.
Counts and replies only; one sleep waits out a hold-off, nothing is timed.
"""

import socket
import struct
import time

import harness
import test_cluster
import test_warm_invalidation

READERS = 50
TIMEOUT_MS = 1000
PAST_HOLDOFF_S = 2.5   # past warm_holdoff=1 and the 2 * TIMEOUT_MS after a change sent on


def stale_peer():
    # Its leases never time out (lease_timeout=0): one the node's fetch won there and kept would
    # keep the peer's readers at Z for good, so a W there says the fetch gave it back.
    return harness.start_herdless(["-t", "1", "-o", "classic_stampede=stale,stale_grace=60,lease_timeout=0"])


def warm_node(peer_port, mode="stale", grace=60, timeout_ms=TIMEOUT_MS):
    return harness.start_herdless(["-t", "1", "-o", "classic_stampede=%s,stale_grace=%d" % (mode, grace),
                                   "-o", "warm_peer=127.0.0.1:%d,warm_timeout_ms=%d,warm_holdoff=1"
                                   % (peer_port, timeout_ms)])


def set_stale(port, key, value, invalidate=False):
    """`key` held stale at the peer: expired at once, or invalidated with its TTL left."""
    with harness.Conn(port) as p:
        ttl = 1000 if invalidate else -1
        assert p.call(b"set %s 5 %d %d\r\n%s\r\n" % (key, ttl, len(value), value)) == b"STORED\r\n"
        if invalidate:
            assert p.call(b"md %s I\r\n" % key) == b"HD\r\n"


def warm_counts(conn):
    return harness.stat_values(conn, "warm_fetches", "warm_hits", "warm_stale", "warm_stale_copies")


def lease_given_back(port, key, value):
    """The peer's reply to `mg <key> v` once its lease is free again (W), else None."""
    with harness.Conn(port) as p:
        reply = p.call(b"mg %s v\r\n" % key, b"\r\n%s\r\n" % value)
    return reply if b" W" in reply else None


def concurrent_readers(res, peer):
    set_stale(peer.port, b"hot", b"old")
    h = warm_node(peer.port, mode="wait")
    conns = [harness.Conn(h.port) for _ in range(READERS)]
    for c in conns:
        c.send(b"get hot\r\n")
    replies = [c.recv_until(b"END\r\n") for c in conns]
    loaders = [c for c, r in zip(conns, replies) if r == b"END\r\n"]
    res.equal(len(loaders), 1, "wait mode, %d readers: one is told to recompute (one load)" % READERS)
    res.equal(sum(r == b"VALUE hot 5 3\r\nold\r\nEND\r\n" for r in replies), READERS - 1,
              "... the others get the peer's stale value")
    res.equal(warm_counts(conns[0]),
              {"warm_fetches": 1, "warm_hits": 0, "warm_stale": 1, "warm_stale_copies": 1},
              "... one peer fetch, copied as stale")
    if loaders:
        res.equal(loaders[0].call(b"add hot 0 60 3\r\nnew\r\n"), b"STORED\r\n", "the recompute lands")
        res.equal(conns[1].call(b"get hot\r\n", b"END\r\n"), b"VALUE hot 0 3\r\nnew\r\nEND\r\n",
                  "... and replaces the stale copy")
    for c in conns:
        c.close()
    h.stop()


def stale_mode(res, peer):
    set_stale(peer.port, b"k", b"old")
    set_stale(peer.port, b"inv", b"was", invalidate=True)
    h = warm_node(peer.port)
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        for key, value in ((b"k", b"old"), (b"inv", b"was")):
            res.equal(a.call(b"get %s\r\n" % key, b"END\r\n"), b"END\r\n",
                      "stale mode, %s: the first reader recomputes" % key.decode())
            # The fetch's mg won the peer's lease (W) and gives it back (md I C<token>), sent
            # as the reader is answered and read by the peer when it comes to it: a reader
            # there sees Z (no state changed) until then, and W after.
            peer_read = harness.wait_for(lambda: lease_given_back(peer.port, key, value),
                                         what="the peer's lease of %s given back" % key.decode())
            res.equal(peer_read, b"VA 3 X W\r\n%s\r\n" % value,
                      "... the peer's lease was given back: its next reader there recomputes")
            for _ in range(3):
                res.equal(b.call(b"get %s\r\n" % key, b"END\r\n"), b"VALUE %s 5 3\r\n%s\r\nEND\r\n" % (key, value),
                          "... the next readers get the stale value with the peer's flags")
            res.equal(b.call(b"mg %s v\r\n" % key, b"\r\n%s\r\n" % value), b"VA 3 Z X\r\n%s\r\n" % value,
                      "... meta sees it stale, its lease out")
        res.equal(warm_counts(a), {"warm_fetches": 2, "warm_hits": 0, "warm_stale": 2, "warm_stale_copies": 2},
                  "stale mode: two fetches, both copied as stale")
        res.equal(a.call(b"add k 0 60 3\r\nnew\r\n"), b"STORED\r\n", "the recompute lands")
        res.equal(b.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 3\r\nnew\r\nEND\r\n", "... and is read")
    h.stop()


def serving_off(res, peer):
    set_stale(peer.port, b"off", b"old")
    h = warm_node(peer.port, grace=0)
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        res.equal(a.call(b"get off\r\n", b"END\r\n"), b"END\r\n", "stale_grace 0: the first reader recomputes")
        res.equal(b.call(b"get off\r\n", b"END\r\n"), b"END\r\n", "... and a second misses, as before")
        res.equal(warm_counts(a), {"warm_fetches": 1, "warm_hits": 0, "warm_stale": 1, "warm_stale_copies": 0},
                  "stale_grace 0: counted stale, not copied")
    h.stop()


def changes_during_the_fetch(res):
    stub = test_cluster.StubPeer({b"s": b"old", b"d": b"old"}, stale=(b"s", b"d"))
    h = warm_node(stub.port)
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        test_cluster.set_and_delete_during_fetch(res, a, b, stub, "stale at the peer: ")
        res.equal(harness.stat_values(a, "warm_stale", "warm_stale_copies"),
                  {"warm_stale": 2, "warm_stale_copies": 0}, "both stale at the peer, neither copied")
    h.stop()
    stub.close()


def reader_gone(res):
    stub = test_cluster.StubPeer({b"g": b"old"}, stale=(b"g",))
    # A long timeout: the fetch must still wait on the stub when its reader leaves.
    h = warm_node(stub.port, timeout_ms=30000)
    with harness.Conn(h.port) as watcher:
        reader = harness.Conn(h.port)
        reader.send(b"get g\r\n")
        harness.wait_for(lambda: b"mg g v f t c" in stub.requests, what="the fetch at the stub")
        connections = harness.stat(watcher, "curr_connections")
        reader.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        reader.close()   # a reset: the node drops the connection and forgets the fetch
        harness.wait_for(lambda: harness.stat(watcher, "curr_connections") < connections,
                         what="the reset reader's connection to go")
        stub.release.set()   # the stub hands the lease over (W c7) to a fetch nobody waits for
        harness.wait_for(lambda: b"md g I C7" in stub.requests)
        res.check(b"md g I C7" in stub.requests,
                  "a reader gone before the peer's reply: the lease it won there goes back (md g I C7)",
                  repr(stub.requests))
        res.equal(harness.stat_values(watcher, "warm_fetches", "warm_stale_copies"),
                  {"warm_fetches": 1, "warm_stale_copies": 0}, "... and nothing is copied here")
    h.stop()
    stub.close()


def delete_after(res, peer):
    set_stale(peer.port, b"gone", b"old")
    h = warm_node(peer.port)
    with harness.Conn(h.port) as a, harness.Conn(h.port) as b:
        res.equal(a.call(b"get gone\r\n", b"END\r\n"), b"END\r\n", "the first reader recomputes")
        res.equal(b.call(b"get gone\r\n", b"END\r\n"), b"VALUE gone 5 3\r\nold\r\nEND\r\n",
                  "... a second gets the stale copy")
        res.equal(b.call(b"delete gone\r\n"), b"NOT_FOUND\r\n", "a delete of the stale copy (expired: NOT_FOUND)")
        res.equal(b.call(b"mg gone v\r\n"), b"EN\r\n", "... it is gone here")
        harness.wait_for(lambda: not test_warm_invalidation.held(peer.port, b"gone"), what="the peer's copy to go")
        time.sleep(PAST_HOLDOFF_S)
        res.equal(b.call(b"get gone\r\n", b"END\r\n"), b"END\r\n", "after the hold-off: a miss, no old value")
        res.equal(b.call(b"mg gone v\r\n"), b"EN\r\n", "... nor a stale one")
        res.equal(harness.stat_values(a, "warm_fetches", "warm_stale_copies", "warm_invalidations"),
                  {"warm_fetches": 2, "warm_stale_copies": 1, "warm_invalidations": 1},
                  "the delete was sent on; the second fetch found nothing")
    h.stop()


def body(res):
    peer = stale_peer()
    concurrent_readers(res, peer)
    stale_mode(res, peer)
    serving_off(res, peer)
    delete_after(res, peer)
    peer.stop()
    changes_during_the_fetch(res)
    reader_gone(res)


if __name__ == "__main__":
    harness.run("test_warm_stale", body)
