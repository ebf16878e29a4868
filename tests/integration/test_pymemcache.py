"""pymemcache's Client against herdless: every method of the client, with real values checked.

pymemcache (Debian's python3-pymemcache, 3.5) has no gat/gats; those are covered by
test_compare.py. TEST_AGAINST=memcached runs the same checks against memcached.
"""

import harness

from pymemcache.client.base import Client
from pymemcache import exceptions


def body(r):
    daemon = harness.start_target()
    # default_noreply=False: every write waits for its reply, so a read on another
    # connection (the raw checks below) never races the write it checks.
    client = Client(("127.0.0.1", daemon.port), connect_timeout=harness.TIMEOUT,
                    timeout=harness.TIMEOUT, default_noreply=False)

    # set / get / flags
    r.equal(client.set("a", b"hello"), True, "set returns True")
    r.equal(client.get("a"), b"hello", "get returns the stored value")
    r.equal(client.get("missing"), None, "get of a missing key returns None")
    r.equal(client.get("missing", default=b"dflt"), b"dflt", "get returns the default on miss")
    r.equal(client.set("f", b"x", flags=123456, noreply=False), True, "set with flags")
    with harness.Conn(daemon.port) as raw:
        r.equal(raw.call(b"get f\r\n", b"END\r\n"), b"VALUE f 123456 1\r\nx\r\nEND\r\n",
                "flags set through the client come back on the VALUE line")
    # A noreply write is followed by a read on the same connection, which the server
    # answers in order.
    r.equal(client.set("nr", b"quiet", noreply=True), True, "set noreply returns True")
    r.equal(client.get("nr"), b"quiet", "value stored by a noreply set")

    # set_many / get_many / set_multi / get_multi
    values = {"m%d" % i: b"v%d" % i for i in range(20)}
    r.equal(client.set_many(values), [], "set_many reports no failed keys")
    r.equal(client.get_many(list(values) + ["nothere"]), values,
            "get_many returns exactly the stored keys")
    r.equal(client.set_multi({"x1": b"1", "x2": b"2"}), [], "set_multi")
    r.equal(client.get_multi(["x1", "x2"]), {"x1": b"1", "x2": b"2"}, "get_multi")

    # add / replace
    r.equal(client.add("a", b"other", noreply=False), False, "add of an existing key fails")
    r.equal(client.add("new", b"n", noreply=False), True, "add of a new key succeeds")
    r.equal(client.get("new"), b"n", "added value")
    r.equal(client.replace("nokey", b"z", noreply=False), False, "replace of a missing key fails")
    r.equal(client.replace("new", b"N", noreply=False), True, "replace of an existing key")
    r.equal(client.get("new"), b"N", "replaced value")

    # append / prepend
    r.equal(client.append("a", b" world", noreply=False), True, "append")
    r.equal(client.prepend("a", b">> ", noreply=False), True, "prepend")
    r.equal(client.get("a"), b">> hello world", "append and prepend applied in order")
    r.equal(client.append("nokey", b"x", noreply=False), False, "append to a missing key fails")
    r.equal(client.prepend("nokey", b"x", noreply=False), False, "prepend to a missing key fails")

    # gets / cas / gets_many
    value, cas = client.gets("a")
    r.equal(value, b">> hello world", "gets value")
    r.check(cas is not None and int(cas) > 0, "gets returns a positive CAS", repr(cas))
    r.equal(client.cas("a", b"swapped", cas), True, "cas with the current token stores")
    r.equal(client.get("a"), b"swapped", "value after cas")
    r.equal(client.cas("a", b"again", cas), False, "cas with a stale token is refused")
    r.equal(client.get("a"), b"swapped", "refused cas leaves the value")
    r.equal(client.cas("nokey", b"v", b"1"), None, "cas on a missing key returns None")
    _, cas2 = client.gets("a")
    r.check(cas2 != cas, "a store changes the CAS", "%r == %r" % (cas, cas2))
    r.equal(client.gets("missing"), (None, None), "gets of a missing key")
    many = client.gets_many(["a", "new", "missing"])
    r.equal(sorted(many), ["a", "new"], "gets_many keys")
    r.equal(many.get("a", (None,))[0], b"swapped", "gets_many value")

    # delete / delete_many
    r.equal(client.delete("new", noreply=False), True, "delete of an existing key")
    r.equal(client.delete("new", noreply=False), False, "delete of a missing key")
    r.equal(client.get("new"), None, "deleted key is gone")
    r.equal(client.delete_many(["m0", "m1", "nothere"], noreply=False), True, "delete_many")
    r.equal(client.get_many(["m0", "m1", "m2"]), {"m2": b"v2"}, "delete_many removed its keys")
    r.equal(client.delete_multi(["m2"]), True, "delete_multi")
    r.equal(client.get("m2"), None, "delete_multi removed its key")

    # incr / decr
    client.set("n", b"10")
    r.equal(client.incr("n", 5), 15, "incr")
    r.equal(client.decr("n", 20), 0, "decr floors at 0")
    r.equal(client.incr("n", 18446744073709551615), 18446744073709551615, "incr to 2^64-1")
    r.equal(client.incr("n", 2), 1, "incr wraps around 2^64")
    r.equal(client.incr("nokey", 1), None, "incr of a missing key returns None")
    r.equal(client.decr("nokey", 1), None, "decr of a missing key returns None")
    try:
        client.incr("a", 1)
        r.check(False, "incr of a non-numeric value raises")
    except exceptions.MemcacheClientError as e:
        r.check("non-numeric" in str(e), "incr of a non-numeric value raises a client error",
                str(e))

    # touch
    r.equal(client.touch("a", 100, noreply=False), True, "touch of an existing key")
    r.equal(client.touch("nokey", 100, noreply=False), False, "touch of a missing key")
    r.equal(client.touch("a", -1, noreply=False), True, "touch with a negative TTL")
    r.equal(client.get("a"), None, "negative touch expires the item")

    # expiry through set
    client.set("gone", b"x", expire=-1)
    r.equal(client.get("gone"), None, "negative expire is already expired")
    client.set("long", b"x", expire=3600)
    r.equal(client.get("long"), b"x", "item with a TTL is readable")

    # large values
    big = bytes(range(256)) * 4000  # 1,024,000 bytes: under the 1 MiB item limit
    r.equal(client.set("big", big, noreply=False), True, "set of a ~1 MB value")
    r.equal(client.get("big"), big, "~1 MB value round-trips")
    try:
        client.set("huge", b"x" * (2 * 1024 * 1024), noreply=False)
        r.check(False, "a 2 MiB value is refused")
    except exceptions.MemcacheServerError as e:
        r.check("too large" in str(e), "a 2 MiB value is refused as too large", str(e))

    # stats / version / verbosity-free admin
    stats = client.stats()
    r.check(b"curr_items" in stats and b"pid" in stats and b"cmd_get" in stats,
            "stats has pid, curr_items, cmd_get", repr(sorted(stats)[:10]))
    r.check(isinstance(stats.get(b"cmd_get"), int) and stats[b"cmd_get"] > 0,
            "stats cmd_get counts our gets", repr(stats.get(b"cmd_get")))
    settings = client.stats("settings")
    r.check(b"maxbytes" in settings, "stats settings has maxbytes", repr(sorted(settings)[:10]))
    version = client.version()
    r.check(isinstance(version, bytes) and len(version) > 0, "version is non-empty", repr(version))
    r.equal(client.cache_memlimit(100), True, "cache_memlimit 100")

    # flush_all
    r.equal(client.flush_all(noreply=False), True, "flush_all")
    r.equal(client.get_many(["a", "f", "long", "big"]), {}, "flush_all empties the cache")
    client.set("after", b"1")
    r.equal(client.get("after"), b"1", "sets after flush_all are kept")
    r.equal(client.flush_all(delay=0, noreply=True), True, "flush_all noreply")
    r.equal(client.get("after"), None, "flush_all noreply flushed")

    # keys the client refuses before sending (check_key), and unicode
    try:
        client.set("bad key", b"x")
        r.check(False, "a key with a space is refused by the client")
    except exceptions.MemcacheIllegalInputError:
        r.check(True, "a key with a space is refused by the client")

    # shutdown is not enabled without -A
    try:
        client.shutdown()
        r.check(False, "shutdown without -A is refused")
    except (exceptions.MemcacheError, ) as e:
        r.check("shutdown" in str(e) or isinstance(e, exceptions.MemcacheUnknownCommandError),
                "shutdown without -A is refused", repr(e))
    r.check(daemon.alive(), "daemon survives a refused shutdown")

    # quit closes the connection; the client reconnects on the next call
    client.quit()
    r.equal(client.set("q", b"after quit"), True, "the client reconnects after quit")
    r.equal(client.get("q"), b"after quit", "value after reconnect")
    client.close()
    daemon.stop()


if __name__ == "__main__":
    harness.run("test_pymemcache", body)
