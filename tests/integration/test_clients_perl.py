#!/usr/bin/env python3
"""Perl clients against herdless and Debian's memcached side by side (tests/integration/
clients.py): Cache::Memcached::Fast (libcache-memcached-fast-perl) and Cache::Memcached
(libcache-memcached-perl), each doing set/get/get_multi/add/replace/append/gets+cas/incr/decr/
delete/flush_all and a value over -I 1m; then each one's reads in classic stampede mode
(herdless only: the first reader of a stale key gets the miss, the next the stale value).
"""

import clients
import harness

COMMON = r"""
sub check { my ($what, $ok) = @_; print(($ok ? "ok" : "FAIL") . " $what\n"); }
my $big = join("", map { chr(int(rand(256))) } 1 .. (2 * 1024 * 1024));
check("set", $m->set("pl:a", "hello"));
check("get", ($m->get("pl:a") // "") eq "hello");
check("get miss", !defined $m->get("pl:missing"));
$m->set("pl:$_", "v$_") for 1 .. 3;
my $h = $m->get_multi(map { "pl:$_" } 1 .. 4);
check("get_multi", join(",", map { "$_=$h->{$_}" } sort keys %$h) eq "pl:1=v1,pl:2=v2,pl:3=v3");
check("add existing", !$m->add("pl:a", "other"));
check("add new", $m->add("pl:new", "n"));
check("replace missing", !$m->replace("pl:gone", "z"));
check("replace", $m->replace("pl:new", "N") && $m->get("pl:new") eq "N");
check("set counter", $m->set("pl:n", "10"));
check("incr", $m->incr("pl:n", 5) == 15);
check("decr floors at 0", $m->decr("pl:n", 20) == 0);
check("incr missing", !$m->incr("pl:nocounter", 1));
check("delete", $m->delete("pl:new"));
check("deleted", !defined $m->get("pl:new"));
check("delete missing", !$m->delete("pl:new"));
check("too large refused", !$m->set("pl:big", $big));
check("too large not stored", !defined $m->get("pl:big"));
"""

FAST = r"""
use Cache::Memcached::Fast;
my $m = Cache::Memcached::Fast->new({servers => ["127.0.0.1:$ARGV[0]"], utf8 => 0,
                                     max_size => 4 * 1024 * 1024, compress_threshold => -1});
""" + COMMON + r"""
check("append", $m->append("pl:a", " world") && $m->get("pl:a") eq "hello world");
check("prepend", $m->prepend("pl:a", ">") && $m->get("pl:a") eq ">hello world");
my $g = $m->gets("pl:a");
check("gets", ref $g eq "ARRAY" && $g->[1] eq ">hello world");
check("cas", $m->cas("pl:a", @$g[0], "swapped"));
check("stale cas refused", !$m->cas("pl:a", @$g[0], "again"));
check("value after cas", $m->get("pl:a") eq "swapped");
check("touch", $m->touch("pl:a", 100));
check("touch missing", !$m->touch("pl:nokey", 100));
my $mg = $m->gets_multi("pl:1", "pl:2");
check("gets_multi", ref $mg->{"pl:1"} eq "ARRAY" && $mg->{"pl:2"}[1] eq "v2");
check("version", length((values %{$m->server_versions})[0]) > 0);
check("flush_all", $m->flush_all && !defined $m->get("pl:1"));
"""

CLASSIC = r"""
use Cache::Memcached;
my $m = Cache::Memcached->new({servers => ["127.0.0.1:$ARGV[0]"], compress_threshold => 10_000_000});
""" + COMMON + r"""
check("append", $m->append("pl:a", " world") && $m->get("pl:a") eq "hello world");
my $s = $m->stats(["misc"]);
check("stats", $s->{hosts}{"127.0.0.1:$ARGV[0]"}{misc}{cmd_get} > 0);
check("flush_all", $m->flush_all && !defined $m->get("pl:1"));
"""

STALE_READER = r"""
use %s;
my $m = %s->new({servers => ["127.0.0.1:$ARGV[1]"]});
my $v = $m->get($ARGV[0]);
print defined $v ? "value $v\n" : "miss\n";
"""


def body(results):
    sbs = harness.SideBySide()
    pair = sbs.pair()
    clients.compare(results, pair, "Cache::Memcached::Fast", ["perl", "-e", FAST], 28)
    clients.compare(results, pair, "Cache::Memcached", ["perl", "-e", CLASSIC], 20)
    sbs.stop(results)
    for module in ("Cache::Memcached::Fast", "Cache::Memcached"):
        reader = clients.script_reader(["perl", "-e", STALE_READER % (module, module)])
        clients.check_stale_reads(results, module, reader)


if __name__ == "__main__":
    harness.run("test_clients_perl", body)
