#!/usr/bin/env python3
"""Pure-Python clients against herdless and Debian's memcached side by side (tests/integration/
clients.py): python3-memcache (text protocol) and python3-binary-memcached (bmemcached, binary
protocol), each doing set/get/multi-get/add/replace/gets+cas/incr/decr/touch (python-memcache;
bmemcached has none)/delete/flush and a
value over -I 1m; then python-memcache's reads in classic stampede mode (herdless only).
"""

import os

import bmemcached
import memcache

import clients
import harness

BIG = os.urandom(2 * 1024 * 1024)   # over -I 1m, and no client compresses it below


def lines_of(checks):
    return ["%s %s" % ("ok" if ok else "FAIL", what) for what, ok in checks]


def python_memcache_checks(port):
    c = memcache.Client(["127.0.0.1:%d" % port], cache_cas=True, socket_timeout=harness.TIMEOUT,
                        server_max_value_length=len(BIG) * 2)
    checks = [("set", c.set("pm:a", "hello")), ("get", c.get("pm:a") == "hello"),
              ("get miss", c.get("pm:missing") is None),
              ("set_multi", c.set_multi({"pm:x": "1", "pm:y": "2", "pm:z": "3"}) == []),
              ("get_multi", c.get_multi(["pm:x", "pm:y", "pm:nothere", "pm:z"]) ==
               {"pm:x": "1", "pm:y": "2", "pm:z": "3"}),
              ("add existing", not c.add("pm:a", "other")), ("add new", bool(c.add("pm:new", "n"))),
              ("replace missing", not c.replace("pm:gone", "z")),
              ("replace", bool(c.replace("pm:new", "N")) and c.get("pm:new") == "N"),
              ("append", bool(c.append("pm:a", " world")) and c.get("pm:a") == "hello world")]
    checks.append(("gets", c.gets("pm:a") == "hello world"))
    checks.append(("cas", bool(c.cas("pm:a", "swapped"))))
    c2 = memcache.Client(["127.0.0.1:%d" % port], cache_cas=True, socket_timeout=harness.TIMEOUT)
    c2.gets("pm:a")
    c.set("pm:a", "changed")
    checks.append(("cas after another set refused", not c2.cas("pm:a", "again")))
    checks.append(("value after cas", c.get("pm:a") == "changed"))
    c.set("pm:n", "10")
    checks += [("incr", c.incr("pm:n", 5) == 15), ("decr floors at 0", c.decr("pm:n", 20) == 0),
               ("incr missing", c.incr("pm:nocounter") is None),
               ("touch", bool(c.touch("pm:a", 100))), ("delete", bool(c.delete("pm:new"))),
               ("deleted", c.get("pm:new") is None),
               ("delete_multi", bool(c.delete_multi(["pm:x", "pm:y"]))),
               ("too large refused", not c.set("pm:big", BIG)),
               ("too large not stored", c.get("pm:big") is None),
               ("stats", int(c.get_stats()[0][1]["cmd_get"]) > 0),
               ("flush_all", c.flush_all() is None and c.get("pm:z") is None)]
    c.disconnect_all()
    c2.disconnect_all()
    return lines_of(checks)


def bmemcached_too_large(c, key):
    try:
        c.set(key, BIG)
    except bmemcached.exceptions.MemcachedException as e:
        return e.args[1] == 3   # the binary protocol's E2BIG
    return False


def bmemcached_checks(port):
    c = bmemcached.Client(("127.0.0.1:%d" % port,), socket_timeout=harness.TIMEOUT)
    checks = [("set", c.set("bm:a", "hello")), ("get", c.get("bm:a") == "hello"),
              ("get miss", c.get("bm:missing") is None),
              ("set_multi", c.set_multi({"bm:x": "1", "bm:y": "2", "bm:z": "3"}) == []),
              ("get_multi", c.get_multi(["bm:x", "bm:y", "bm:nothere", "bm:z"]) ==
               {"bm:x": "1", "bm:y": "2", "bm:z": "3"}),
              ("add existing", not c.add("bm:a", "other")), ("add new", bool(c.add("bm:new", "n"))),
              ("replace missing", not c.replace("bm:gone", "z")),
              ("replace", bool(c.replace("bm:new", "N")) and c.get("bm:new") == "N")]
    value, cas = c.gets("bm:a")
    checks += [("gets", value == "hello" and cas > 0), ("cas", bool(c.cas("bm:a", "swapped", cas))),
               ("stale cas refused", not c.cas("bm:a", "again", cas)),
               ("value after cas", c.get("bm:a") == "swapped")]
    c.set("bm:n", 10)
    checks += [("incr", c.incr("bm:n", 5) == 15), ("decr floors at 0", c.decr("bm:n", 20) == 0),
               ("delete", bool(c.delete("bm:new"))),
               ("deleted", c.get("bm:new") is None),
               ("delete_multi", bool(c.delete_multi(["bm:x", "bm:y"]))),
               ("too large refused (E2BIG raised)", bmemcached_too_large(c, "bm:big")),
               ("too large not stored", c.get("bm:big") is None),
               ("stats", int(list(c.stats().values())[0]["cmd_get"]) > 0),
               ("flush_all", bool(c.flush_all()) and c.get("bm:z") is None)]
    c.disconnect_all()
    return lines_of(checks)


def body(results):
    sbs = harness.SideBySide()
    pair = sbs.pair()
    clients.compare(results, pair, "python3-memcache", python_memcache_checks, 25)
    clients.compare(results, pair, "python3-binary-memcached", bmemcached_checks, 22)
    sbs.stop(results)
    clients.check_stale_reads(results, "python3-memcache", lambda port: memcache.Client(
        ["127.0.0.1:%d" % port], socket_timeout=harness.TIMEOUT).get)


if __name__ == "__main__":
    harness.run("test_clients_python", body)
