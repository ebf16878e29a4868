"""Real binary-protocol client libraries against herdless: pylibmc (libmemcached) with
binary=True, and PHP's Memcached extension with OPT_BINARY_PROTOCOL (Debian's python3-pylibmc,
php-cli, php-memcached). Each does set/get/multi-get/cas/incr/decr/append/prepend/delete/
touch/flush/stats with real values checked. TEST_AGAINST=memcached runs the same checks
against memcached.
"""

import subprocess

import harness

PHP_SCRIPT = r"""
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->addServer('127.0.0.1', (int)$argv[1]);
function check($what, $ok) { echo ($ok ? "ok" : "FAIL") . " $what\n"; }
check("set", $m->set("p:a", "hello"));
check("get", $m->get("p:a") === "hello");
check("get miss", $m->get("p:missing") === false
      && $m->getResultCode() === Memcached::RES_NOTFOUND);
check("setMulti", $m->setMulti(["p:x" => "1", "p:y" => "2", "p:z" => "3"]));
$got = $m->getMulti(["p:x", "p:y", "p:nothere", "p:z"]);
check("getMulti", $got === ["p:x" => "1", "p:y" => "2", "p:z" => "3"]);
check("add existing", $m->add("p:a", "other") === false);
check("add new", $m->add("p:new", "n"));
check("replace missing", $m->replace("p:gone", "z") === false);
check("replace", $m->replace("p:new", "N") && $m->get("p:new") === "N");
$m->setOption(Memcached::OPT_COMPRESSION, false);
check("append", $m->append("p:a", " world"));
check("prepend", $m->prepend("p:a", ">> "));
check("append result", $m->get("p:a") === ">> hello world");
$r = $m->get("p:a", null, Memcached::GET_EXTENDED);
check("gets", is_array($r) && $r["value"] === ">> hello world" && $r["cas"] > 0);
check("cas", $m->cas($r["cas"], "p:a", "swapped"));
check("cas stale", $m->cas($r["cas"], "p:a", "again") === false
      && $m->getResultCode() === Memcached::RES_DATA_EXISTS);
check("value after cas", $m->get("p:a") === "swapped");
check("set counter", $m->set("p:n", "10"));
check("increment", $m->increment("p:n", 5) === 15);
check("decrement", $m->decrement("p:n", 20) === 0);
check("increment missing", $m->increment("p:nocounter", 1) === false);
check("increment initial", $m->increment("p:init", 1, 100, 0) === 100);
check("increment after initial", $m->increment("p:init", 1) === 101);
check("touch", $m->touch("p:a", 100));
check("touch missing", $m->touch("p:nokey", 100) === false);
check("delete", $m->delete("p:new"));
check("delete missing", $m->delete("p:new") === false);
check("big value", $m->set("p:big", str_repeat("0123456789", 50000))
      && strlen($m->get("p:big")) === 500000);
$stats = $m->getStats();
$s = $stats["127.0.0.1:" . $argv[1]];
check("stats", isset($s["cmd_get"]) && $s["cmd_get"] > 0 && isset($s["curr_items"]));
check("version", strlen(array_values($m->getVersion())[0]) > 0);
check("flush", $m->flush());
check("flushed", $m->get("p:x") === false);
"""


def pylibmc_checks(r, port):
    import pylibmc
    c = pylibmc.Client(["127.0.0.1:%d" % port], binary=True,
                       behaviors={"cas": True, "connect_timeout": int(harness.TIMEOUT * 1000),
                                  "receive_timeout": int(harness.TIMEOUT * 1000000),
                                  "send_timeout": int(harness.TIMEOUT * 1000000)})
    r.equal(c.set("a", b"hello"), True, "pylibmc: set")
    r.equal(c.get("a"), b"hello", "pylibmc: get")
    r.equal(c.get("missing"), None, "pylibmc: get miss")
    r.equal(c.set("f", b"x", time=100), True, "pylibmc: set with a TTL")
    values = {"m%d" % i: b"v%d" % i for i in range(30)}
    r.equal(c.set_multi(values), [], "pylibmc: set_multi")
    r.equal(c.get_multi(list(values) + ["nothere"]), values, "pylibmc: get_multi")
    r.equal(c.add("a", b"other"), False, "pylibmc: add of an existing key")
    r.equal(c.add("new", b"n"), True, "pylibmc: add")
    try:
        c.replace("nokey", b"z")
        r.check(False, "pylibmc: replace of a missing key raises NotFound")
    except pylibmc.NotFound:
        r.check(True, "pylibmc: replace of a missing key raises NotFound")
    r.equal(c.replace("new", b"N"), True, "pylibmc: replace")
    r.equal(c.append("a", b" world"), True, "pylibmc: append")
    r.equal(c.prepend("a", b">> "), True, "pylibmc: prepend")
    r.equal(c.get("a"), b">> hello world", "pylibmc: append/prepend result")
    value, cas = c.gets("a")
    r.equal(value, b">> hello world", "pylibmc: gets value")
    r.check(cas > 0, "pylibmc: gets CAS", repr(cas))
    r.equal(c.cas("a", b"swapped", cas), True, "pylibmc: cas")
    r.equal(c.cas("a", b"again", cas), False, "pylibmc: stale cas refused")
    r.equal(c.get("a"), b"swapped", "pylibmc: value after cas")
    c.set("n", b"10")
    r.equal(c.incr("n", 5), 15, "pylibmc: incr")
    r.equal(c.decr("n", 20), 0, "pylibmc: decr floors at 0")
    try:
        c.incr("nocounter", 1)
        r.check(False, "pylibmc: incr of a missing key raises NotFound")
    except pylibmc.NotFound:
        r.check(True, "pylibmc: incr of a missing key raises NotFound")
    r.equal(c.touch("a", 100), True, "pylibmc: touch")
    r.equal(c.delete("new"), True, "pylibmc: delete")
    r.equal(c.delete("new"), False, "pylibmc: delete of a missing key")
    r.equal(c.delete_multi(["m0", "m1"]), True, "pylibmc: delete_multi")
    r.equal(c.get_multi(["m0", "m1", "m2"]), {"m2": b"v2"}, "pylibmc: delete_multi removed")
    big = bytes(range(256)) * 2000
    r.equal(c.set("big", big), True, "pylibmc: 512 KB set")
    r.equal(c.get("big"), big, "pylibmc: 512 KB get")
    stats = c.get_stats()
    r.check(len(stats) == 1 and int(stats[0][1].get("cmd_get", 0)) > 0,
            "pylibmc: stats over the binary protocol", repr(stats)[:200])
    r.equal(c.flush_all(), True, "pylibmc: flush_all")
    r.equal(c.get("a"), None, "pylibmc: flushed")
    c.disconnect_all()


def php_checks(r, port):
    run = subprocess.run(["php", "-r", PHP_SCRIPT, str(port)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=harness.TIMEOUT * 6)
    out = run.stdout.decode("utf-8", "replace")
    lines = [l for l in out.splitlines() if l.startswith(("ok ", "FAIL "))]
    r.check(run.returncode == 0, "php exit status", out[-2000:])
    r.check(len(lines) >= 30, "php ran its checks", out[-2000:])
    for line in lines:
        r.check(line.startswith("ok "), "php-memcached: " + line.split(" ", 1)[1])


def body(r):
    daemon = harness.start_target()
    pylibmc_checks(r, daemon.port)
    php_checks(r, daemon.port)
    with harness.Conn(daemon.port) as c:
        r.equal(c.call(b"version\r\n")[:8], b"VERSION ", "text still served beside binary")
    r.check(daemon.alive(), "daemon alive after the binary clients")
    daemon.stop()


if __name__ == "__main__":
    harness.run("test_binary_clients", body)
