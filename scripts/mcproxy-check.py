#!/usr/bin/python3
"""mcproxy-check.py: three herdless nodes behind memcached's own proxy (memcached 1.6.x built
with --enable-proxy, its built-in routelib), driven through the proxy. A check run by hand where
such a proxy is built: Debian's memcached has no proxy and CI has none. What the proxy sends a
backend is replayed in CI from a recording (tests/integration/latest_cases.py, proxy_backend_*).

    /usr/bin/python3 scripts/mcproxy-check.py --proxy /opt/memcached-1.6.45-proxy/bin/memcached
        [--herdless PATH] [--memcached-backends [PATH]]

The nodes run `-t 2 -o classic_stampede=stale,stale_grace=60,lease_timeout=30`; the proxy
`-t 1 -o proxy_config=routelib,proxy_arg=<file>` with one pool of the three and route_direct.
Checked through the proxy, as test_twemproxy.py and test_hashclient.py check their routers:
- the classic commands with pymemcache, noreply ones among them (the proxy sends a client's
  noreply as `noreplY`, so that the node answers, and drops the answer): each key on exactly one
  node, a multi-get across the nodes, `delete <key> noreply` applied; what the proxy does not
  carry (lease-get, flush_all, verbosity) closes the client's connection, `stats` is its own;
- a classic stampede (classic_stampede=stale): 100 readers of a hot key, one recompute per
  expiry, the others served the stale value (test_twemproxy's rounds);
- a meta stampede: 100 readers of `mg <key> s v c N30 Y1`, one W per miss and per expiry, the
  others Z or the stale value with X (test_hashclient's rounds);
- a node lost (SIGKILL): route_direct has no failover, so the lost node's keys get the proxy's
  `SERVER_ERROR` while the other nodes' keys keep hitting.
--memcached-backends runs the same against memcached nodes (default Debian's /usr/bin/memcached;
the meta readers then leave out Y1, herdless's XFetch flag; its 1.6.18 refuses
`delete <key> noreplY`, and it has no classic stampede mode nor stale values, so those checks
fail there: the comparison). Exit status 1 when a check fails.
"""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import harness  # noqa: E402  (tests/integration)
import test_hashclient  # noqa: E402
import test_twemproxy  # noqa: E402
from harness import Conn  # noqa: E402
from pymemcache.exceptions import MemcacheError  # noqa: E402
from scaleout import key_names, owners  # noqa: E402

NODE_ARGS = test_twemproxy.NODE_ARGS
KEYS = 300


def start_proxy(binary, nodes, workdir):
    """memcached's proxy on a free port, routelib's one pool of `nodes`, route_direct."""
    routes = os.path.join(workdir, "routes.lua")
    with open(routes, "w") as f:
        f.write("pools{\n    main = {\n        backends = {\n")
        for node in nodes:
            f.write('            "127.0.0.1:%d",\n' % node.port)
        f.write("        }\n    }\n}\nroutes{\n    default = route_direct{ child = \"main\" }\n}\n")
    port = harness.free_port()
    argv = [binary, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1"] + harness.user_args() + \
        ["-o", "proxy_config=routelib,proxy_arg=%s" % routes]
    return harness.Process("mcproxy", argv, port).start()


def check_classic(r, nodes, proxy):
    c = test_twemproxy.client(proxy.port)
    keys = key_names("key:", KEYS)
    for k in keys:
        c.set(k, ("value of " + k).encode(), noreply=True)   # sent on as `noreplY`
    r.equal(c.get(keys[-1]), ("value of " + keys[-1]).encode(), "the noreply sets are stored")
    held = owners(nodes, keys)
    per_node = [sum(1 for k in keys if held[k] == [i]) for i in range(len(nodes))]
    harness.log("keys per node through the proxy (routelib's default hash): %s" % per_node)
    r.check(all(n > 0 for n in per_node) and sum(per_node) == KEYS,
            "keys land on all three nodes, each on exactly one", repr(per_node))
    many = c.get_many(keys)
    r.check(len(many) == KEYS and all(many[k] == ("value of " + k).encode() for k in keys),
            "one multi-get across the three nodes returns every key")
    r.equal(c.set("counter", b"10"), True, "set")
    r.equal(c.incr("counter", 5), 15, "incr")
    c.incr("counter", 5, noreply=True)
    r.equal(c.decr("counter", 3), 17, "a noreply incr applied, then decr")
    value, token = c.gets("counter")
    r.equal(c.cas("counter", b"20", token), True, "cas with the current token")
    r.equal(c.cas("counter", b"30", token), False, "cas with a stale token: EXISTS")
    r.equal(c.touch("counter", 100), True, "touch")
    try:
        c.delete("counter", noreply=True)   # sent on as `delete counter noreplY`
        deleted_quietly = c.get("counter") is None
    except MemcacheError as e:
        deleted_quietly = False
        harness.log("delete noreply: %r" % e)
    r.check(deleted_quietly, "delete <key> noreply through the proxy deletes, with no error")
    c.close()
    # What the proxy does not carry under route_direct: it closes the client's connection.
    for command in (b"lease-get key:1\r\n", b"flush_all\r\n", b"verbosity 1\r\n"):
        with Conn(proxy.port) as raw:
            raw.send(command)
            r.equal(raw.recv_until_eof(), b"", "the proxy closes the connection on %r"
                    % command.split(b" ")[0].strip())
    with Conn(proxy.port) as raw:
        r.check(b"STAT proxy_conn_requests" in raw.call(b"stats\r\n", b"END\r\n"),
                "stats through the proxy are the proxy's own")


def check_meta_stampede(r, proxy, stale_values):
    store = test_twemproxy.client(proxy.port)
    test_hashclient.run_meta_stampede(r, lambda: Conn(proxy.port, timeout=harness.TIMEOUT * 4), store,
                                      "hot:meta", "the proxy", stale_values)
    store.close()


def check_node_loss(r, nodes, proxy):
    keys = key_names("loss:", KEYS)
    c = test_twemproxy.client(proxy.port)
    for k in keys:
        c.set(k, k.encode(), expire=600)
    held = owners(nodes, keys)
    lost = 2
    nodes[lost].kill_hard()
    answers = {"hit": 0, "miss": 0, "error": 0}
    kept_wrong = 0
    for k in keys:
        try:
            value = c.get(k)
            answers["hit" if value == k.encode() else "miss"] += 1
            kept_wrong += held[k] != [lost] and value != k.encode()
        except (MemcacheError, OSError) as e:
            answers["error"] += 1
            kept_wrong += held[k] != [lost]
            if answers["error"] == 1:
                harness.log("a key of the lost node: %r" % e)
            c.close()
    lost_count = sum(1 for k in keys if held[k] == [lost])
    harness.log("node loss under route_direct: %d keys on the lost node; answers %s" % (lost_count, answers))
    r.equal(kept_wrong, 0, "the other nodes' keys keep hitting")
    r.equal(answers["error"], lost_count, "the lost node's keys get the proxy's error (no failover)")
    c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--proxy", required=True, help="memcached built with --enable-proxy")
    ap.add_argument("--herdless", default=harness.HERDLESS_BIN)
    ap.add_argument("--memcached-backends", nargs="?", const="/usr/bin/memcached", default=None,
                    help="memcached nodes instead of herdless ones")
    args = ap.parse_args()
    harness.HERDLESS_BIN = os.path.abspath(args.herdless)

    def body(r):
        workdir = tempfile.mkdtemp(prefix="herdless-mcproxy-")
        os.chmod(workdir, 0o755)   # the proxy reads its routes as nobody
        if args.memcached_backends:
            harness.MEMCACHED_BIN = args.memcached_backends
            test_hashclient.MG = b"mg %s s v c N30\r\n"   # Y (herdless's XFetch) is an invalid flag there
            nodes = [harness.start_memcached(["-t", "2"]) for _ in range(3)]
        else:
            nodes = [harness.start_herdless(NODE_ARGS) for _ in range(3)]
        proxy = start_proxy(os.path.abspath(args.proxy), nodes, workdir)
        with Conn(proxy.port) as conn:
            harness.log("proxy %s, nodes %s" % (conn.call(b"version\r\n").decode().strip(),
                                                [n.port for n in nodes]))
        checks = (lambda: check_classic(r, nodes, proxy), lambda: test_twemproxy.check_stampede(r, proxy),
                  lambda: check_meta_stampede(r, proxy, not args.memcached_backends),
                  lambda: check_node_loss(r, nodes, proxy))
        for check, name in zip(checks, ("classic", "classic stampede", "meta stampede", "node loss")):
            try:
                check()
            except Exception as e:  # report and go on with the next check
                r.failures.append("%s: %r" % (name, e))
                harness.log("FAIL: the %s check raised %r" % (name, e))
        proxy.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    harness.run("mcproxy-check", body)


if __name__ == "__main__":
    main()
