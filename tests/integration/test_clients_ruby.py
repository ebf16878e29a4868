#!/usr/bin/env python3
"""Ruby's Dalli (ruby-dalli, binary protocol) against herdless and Debian's memcached side by
side (tests/integration/clients.py): set/get/get_multi/add/replace/append/prepend/cas/incr/
decr/touch/delete/flush and a value over -I 1m; then its binary gets in classic stampede mode
(herdless only: the first reader of a stale key gets Not found, the next the stale value).
"""

import clients
import harness

CHECKS = r"""
require "dalli"
Dalli.logger.level = Logger::FATAL
m = Dalli::Client.new("127.0.0.1:#{ARGV[0]}", compress: false, value_max_bytes: 8 * 1024 * 1024,
                      serializer: Marshal, socket_timeout: 5)
def check(what, ok) puts "#{ok ? "ok" : "FAIL"} #{what}" end
def raw(m, k, v) m.set(k, v, 0, raw: true) end
check("set", m.set("rb:a", "hello"))
check("get", m.get("rb:a") == "hello")
check("get miss", m.get("rb:missing").nil?)
m.set("rb:x", 1); m.set("rb:y", 2); m.set("rb:z", 3)
check("get_multi", m.get_multi("rb:x", "rb:y", "rb:nothere", "rb:z") == {"rb:x" => 1, "rb:y" => 2, "rb:z" => 3})
check("add existing", !m.add("rb:a", "other"))
check("add new", m.add("rb:new", "n"))
check("replace missing", [false, nil, 0].include?(m.replace("rb:gone", "z")))   # 0: no CAS, not stored
check("replace", m.replace("rb:new", "N") && m.get("rb:new") == "N")
check("raw set", raw(m, "rb:s", "hello"))
check("append", m.append("rb:s", " world") && m.get("rb:s", raw: true) == "hello world")
check("prepend", m.prepend("rb:s", ">") && m.get("rb:s", raw: true) == ">hello world")
check("cas", m.cas("rb:a") { |v| v + "!" } && m.get("rb:a") == "hello!")
check("cas missing", m.cas("rb:nokey") { |v| "x" }.nil?)
value, cas = m.get_cas("rb:a")
m.set("rb:a", "changed")
check("stale cas refused", !m.set_cas("rb:a", "again", cas))
check("value after cas", m.get("rb:a") == "changed")
check("incr with initial", m.incr("rb:n", 1, 0, 10) == 10)
check("incr", m.incr("rb:n", 5) == 15)
check("decr floors at 0", m.decr("rb:n", 20) == 0)
check("incr missing", m.incr("rb:nocounter", 1).nil?)
check("touch", m.touch("rb:a", 100))
check("touch missing", !m.touch("rb:nokey", 100))
check("delete", m.delete("rb:new"))
check("deleted", m.get("rb:new").nil?)
check("delete missing", !m.delete("rb:new"))
big = Random.new(1).bytes(2 * 1024 * 1024)
too_large = begin
  !raw(m, "rb:big", big)
rescue Dalli::DalliError
  true
end
check("too large refused", too_large)
check("too large not stored", m.get("rb:big").nil?)
check("stats", m.stats.values.first["cmd_get"].to_i > 0)
check("flush", m.flush)
check("flushed", m.get("rb:x").nil?)
"""

STALE_READER = r"""
require "dalli"
m = Dalli::Client.new("127.0.0.1:#{ARGV[1]}", socket_timeout: 5)
v = m.get(ARGV[0], raw: true)
print(v.nil? ? "miss" : "value #{v}")
"""


def body(results):
    sbs = harness.SideBySide()
    clients.compare(results, sbs.pair(), "ruby-dalli", ["ruby", "-e", CHECKS], 29)
    sbs.stop(results)
    clients.check_stale_reads(results, "ruby-dalli", clients.script_reader(["ruby", "-e", STALE_READER]))


if __name__ == "__main__":
    harness.run("test_clients_ruby", body)
