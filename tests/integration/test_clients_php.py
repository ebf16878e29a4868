#!/usr/bin/env python3
"""PHP's other memcache extension (php-memcache, class Memcache) against herdless and Debian's
memcached side by side (tests/integration/clients.py): set/get/multi-get/add/replace/append/
gets+cas/increment/decrement/delete/flush and a value over -I 1m; then its reads in classic
stampede mode (herdless only).
"""

import clients
import harness

CHECKS = r"""
$m = new Memcache();
$m->addServer('127.0.0.1', (int)$argv[1]);
function check($what, $ok) { echo ($ok ? "ok" : "FAIL") . " $what\n"; }
check("set", $m->set("ph:a", "hello"));
check("get", $m->get("ph:a") === "hello");
check("get miss", $m->get("ph:missing") === false);
check("set more", $m->set("ph:x", "1") && $m->set("ph:y", "2") && $m->set("ph:z", "3"));
check("multi-get", $m->get(["ph:x", "ph:y", "ph:nothere", "ph:z"]) === ["ph:x" => "1", "ph:y" => "2", "ph:z" => "3"]);
check("add existing", $m->add("ph:a", "other") === false);
check("add new", $m->add("ph:new", "n"));
check("replace missing", $m->replace("ph:gone", "z") === false);
check("replace", $m->replace("ph:new", "N") && $m->get("ph:new") === "N");
check("append", $m->append("ph:a", " world") && $m->get("ph:a") === "hello world");
check("prepend", $m->prepend("ph:a", ">") && $m->get("ph:a") === ">hello world");
$flags = null; $cas = null;
check("gets", $m->get("ph:a", $flags, $cas) === ">hello world" && $cas > 0);
check("cas", $m->cas("ph:a", "swapped", 0, 0, $cas));
check("stale cas refused", $m->cas("ph:a", "again", 0, 0, $cas) === false);
check("value after cas", $m->get("ph:a") === "swapped");
check("set counter", $m->set("ph:n", "10"));
check("increment", $m->increment("ph:n", 5) === 15);
check("decrement floors at 0", $m->decrement("ph:n", 20) === 0);
check("increment missing", $m->increment("ph:nocounter", 1) === false);
check("delete", $m->delete("ph:new"));
check("deleted", $m->get("ph:new") === false);
check("delete missing", $m->delete("ph:new") === false);
check("too large refused", @$m->set("ph:big", random_bytes(2 * 1024 * 1024)) === false);
check("too large not stored", $m->get("ph:big") === false);
$s = $m->getStats();
check("stats", isset($s["cmd_get"]) && $s["cmd_get"] > 0);
check("version", strlen($m->getVersion()) > 0);
check("flush", $m->flush());
check("flushed", $m->get("ph:x") === false);
"""

STALE_READER = r"""
$m = new Memcache();
$m->addServer('127.0.0.1', (int)$argv[2]);
$v = $m->get($argv[1]);
echo $v === false ? "miss" : "value $v";
"""


def body(results):
    sbs = harness.SideBySide()
    clients.compare(results, sbs.pair(), "php-memcache", ["php", "-r", CHECKS], 28)
    sbs.stop(results)
    clients.check_stale_reads(results, "php-memcache", clients.script_reader(["php", "-r", STALE_READER]))


if __name__ == "__main__":
    harness.run("test_clients_php", body)
