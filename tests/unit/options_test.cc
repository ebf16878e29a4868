#include "daemon/options.h"

#include <gtest/gtest.h>

#include "config.h"

#include <set>
#include <string>
#include <vector>

#include "daemon/option_table.h"
#include "daemon/tls.h"
#include "tests/unit/command_line_support.h"

namespace herdless {
namespace {

TEST(OptionsTest, DefaultsAreMemcachedsExceptTheLoopbackListener) {
  Parsed p = Parse({});
  ASSERT_TRUE(p.ok) << p.error;
  const ProtocolSettings& s = p.options.protocol;
  EXPECT_EQ(p.options.action, Options::Action::kRun);
  EXPECT_EQ(s.tcp_port, 11211);
  EXPECT_EQ(s.udp_port, 0);
  EXPECT_EQ(s.listen_interface, "127.0.0.1");
  EXPECT_EQ(s.max_bytes, 64u << 20);
  EXPECT_EQ(s.max_connections, 1024);
  EXPECT_EQ(s.num_threads, 4);
  EXPECT_EQ(s.item_size_max, 1u << 20);
  EXPECT_EQ(s.reqs_per_event, 20);
  EXPECT_EQ(s.backlog, 1024);
  EXPECT_FALSE(s.shutdown_enabled);
  EXPECT_TRUE(s.flush_enabled);
  EXPECT_TRUE(s.cas_enabled);
  EXPECT_EQ(s.idle_timeout, 0);
  EXPECT_EQ(s.stalled_client_timeout, 30);
  EXPECT_EQ(s.lease.lease_timeout_ms, 5000u);
  EXPECT_EQ(s.lease.default_delta_ms, 100u);
  EXPECT_EQ(s.xfetch_beta, 0.0);
  EXPECT_EQ(s.stale_grace_s, 0u);
  EXPECT_EQ(s.classic_stampede, ClassicStampedeMode::kOff);
  EXPECT_EQ(s.wait_timeout_ms, 5000u);
  EXPECT_EQ(p.options.verbosity, 0);
  EXPECT_FALSE(p.options.daemonize);
  EXPECT_TRUE(p.options.pid_file.empty());
  ASSERT_EQ(p.options.listen.size(), 1u);
  EXPECT_EQ(p.options.listen[0].host, "127.0.0.1");
  EXPECT_EQ(p.options.listen[0].port, 11211);
}

TEST(OptionsTest, ShortFlagsTakeSeparateOrAttachedValues) {
  Parsed p = Parse({"-p", "22122", "-m128", "-c", "10", "-t2", "-R", "5", "-b", "64", "-u", "nobody"});
  ASSERT_TRUE(p.ok) << p.error;
  const ProtocolSettings& s = p.options.protocol;
  EXPECT_EQ(s.tcp_port, 22122);
  EXPECT_EQ(s.max_bytes, 128u << 20);
  EXPECT_EQ(s.max_connections, 10);
  EXPECT_EQ(s.num_threads, 2);
  EXPECT_EQ(s.reqs_per_event, 5);
  EXPECT_EQ(s.backlog, 64);
  EXPECT_EQ(s.username, "nobody");
  EXPECT_EQ(p.options.listen[0].port, 22122);
}

TEST(OptionsTest, LongFlagsTakeEqualsOrSeparateValues) {
  Parsed p = Parse({"--port=22123", "--memory-limit", "32", "--conn-limit=7", "--threads=3",
                    "--max-reqs-per-event=9", "--listen-backlog=16", "--user=daemon",
                    "--pidfile=/tmp/x.pid", "--daemon", "--enable-shutdown",
                    "--disable-flush-all", "--disable-cas", "--max-item-size=2m",
                    "--listen=127.0.0.2", "--udp-port=0"});
  ASSERT_TRUE(p.ok) << p.error;
  const ProtocolSettings& s = p.options.protocol;
  EXPECT_EQ(s.tcp_port, 22123);
  EXPECT_EQ(s.max_bytes, 32u << 20);
  EXPECT_EQ(s.max_connections, 7);
  EXPECT_EQ(s.num_threads, 3);
  EXPECT_EQ(s.reqs_per_event, 9);
  EXPECT_EQ(s.backlog, 16);
  EXPECT_EQ(s.username, "daemon");
  EXPECT_EQ(p.options.pid_file, "/tmp/x.pid");
  EXPECT_TRUE(p.options.daemonize);
  EXPECT_TRUE(s.shutdown_enabled);
  EXPECT_FALSE(s.flush_enabled);
  EXPECT_FALSE(s.cas_enabled);
  EXPECT_EQ(s.item_size_max, 2u << 20);
  EXPECT_EQ(s.listen_interface, "127.0.0.2");
}

TEST(OptionsTest, PidFileAliasIsAccepted) {
  Parsed p = Parse({"--pid-file", "/run/h.pid"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.pid_file, "/run/h.pid");
}

TEST(OptionsTest, ClusteredBooleanFlags) {
  Parsed p = Parse({"-dAFC", "-P", "/tmp/p"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.options.daemonize);
  EXPECT_TRUE(p.options.protocol.shutdown_enabled);
  EXPECT_FALSE(p.options.protocol.flush_enabled);
  EXPECT_FALSE(p.options.protocol.cas_enabled);
}

TEST(OptionsTest, VerbosityCountsEveryV) {
  EXPECT_EQ(Parse({"-v"}).options.verbosity, 1);
  EXPECT_EQ(Parse({"-vv"}).options.verbosity, 2);
  EXPECT_EQ(Parse({"-vvv"}).options.verbosity, 3);
  EXPECT_EQ(Parse({"-v", "-vv", "--verbose"}).options.verbosity, 4);
}

TEST(OptionsTest, HelpAndVersionStopParsing) {
  Parsed help = Parse({"-h", "--bogus"});
  ASSERT_TRUE(help.ok) << help.error;
  EXPECT_EQ(help.options.action, Options::Action::kHelp);
  Parsed version = Parse({"--version"});
  ASSERT_TRUE(version.ok);
  EXPECT_EQ(version.options.action, Options::Action::kVersion);
  EXPECT_EQ(Parse({"-V"}).options.action, Options::Action::kVersion);
  EXPECT_EQ(VersionText(), "herdless 0.1.0 (memcached 1.6.18 compatible)\n");
  EXPECT_NE(UsageText().find("-p, --port=<num>"), std::string::npos);
}

TEST(OptionsTest, MaxItemSizeTakesKAndMSuffixesInEitherCase) {
  EXPECT_EQ(Parse({"-I", "1k"}).options.protocol.item_size_max, 1024u);
  EXPECT_EQ(Parse({"-I", "512K"}).options.protocol.item_size_max, 512u << 10);
  EXPECT_EQ(Parse({"-I", "4m"}).options.protocol.item_size_max, 4u << 20);
  EXPECT_EQ(Parse({"-I", "3M"}).options.protocol.item_size_max, 3u << 20);
  EXPECT_EQ(Parse({"-I", "5000"}).options.protocol.item_size_max, 5000u);
  EXPECT_EQ(Parse({"-m", "4096", "-I", "1024m"}).options.protocol.item_size_max, 1024u << 20);
}

TEST(OptionsTest, MaxItemSizeLimitsAreMemcachedsWithItsMessages) {
  Parsed small = Parse({"-I", "1000"});
  EXPECT_FALSE(small.ok);
  EXPECT_EQ(small.error, "Item max size cannot be less than 1024 bytes.");
  Parsed half = Parse({"-I", "40m"});   // -m 64: at most 32m
  EXPECT_FALSE(half.ok);
  EXPECT_EQ(half.error, "Cannot set item size limit higher than 1/2 of memory max.");
  Parsed giga = Parse({"-m", "8192", "-I", "1025m"});
  EXPECT_FALSE(giga.ok);
  EXPECT_EQ(giga.error, "Cannot set item size limit higher than a gigabyte.");
  EXPECT_FALSE(Parse({"-I", "12x"}).ok);
  EXPECT_FALSE(Parse({"-I", "m"}).ok);
}

// -o slab_chunk_max: bytes for 1.6.18, kilobytes for 1.6.45 (-o compat, before or after it),
// with memcached's messages; without it, half a 1 MB page.
TEST(OptionsTest, SlabChunkMaxTakesTheUnitOfTheCompatVersion) {
  struct Row {
    std::vector<std::string> args;
    uint32_t chunk;       // when accepted
    const char* error;    // nullptr: accepted
  };
  const Row rows[] = {
      {{}, 512u << 10, nullptr},
      {{"-I", "2m"}, 512u << 10, nullptr},
      {{"-I", "1k"}, 512, nullptr},   // memcached refuses to start; herdless shows half of -I
      {{"-o", "slab_chunk_max=16384"}, 16384, nullptr},
      {{"-o", "slab_chunk_max=x"}, 512u << 10, nullptr},   // 1.6.18 goes on without it
      {{"-o", "slab_chunk_max=16,compat=1.6.45"}, 16384, nullptr},
      {{"-o", "compat=1.6.45", "-I", "2m", "-o", "slab_chunk_max=1024"}, 1u << 20, nullptr},
      {{"-o", "compat=1.6.45,slab_chunk_max=16384"}, 0,
       "slab_chunk_max must be specified in kilobytes."},
      {{"-o", "compat=1.6.45,slab_chunk_max=0"}, 0, "slab_chunk_max must be >= 0"},
      {{"-o", "compat=1.6.45,slab_chunk_max=x"}, 0, "could not parse argument to slab_chunk_max"},
      {{"-o", "compat=1.6.45,slab_chunk_max"}, 0, "Missing slab_chunk_max argument"},
      {{"-o", "compat=1.6.45,slab_chunk_max=3"}, 0,
       "-I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max (bytes: 3072)"},
      {{"-I", "1k", "-o", "slab_chunk_max=2048"}, 0,
       "slab_chunk_max (bytes: 2048) cannot be larger than -I (item_size_max 1024)"},
      {{"-I", "2m", "-o", "slab_chunk_max=2097152"}, 0,
       "slab_chunk_max (bytes: 2097152) must divide evenly into 1048576 (slab_page_size)"},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args);
    SCOPED_TRACE("row " + std::to_string(&row - rows));
    EXPECT_EQ(p.ok, row.error == nullptr);
    if (row.error == nullptr) {
      EXPECT_EQ(p.options.protocol.slab_chunk_max, row.chunk);
    } else {
      EXPECT_EQ(p.error, row.error);
    }
  }
}

TEST(OptionsTest, ZeroMemoryIsRejectedAsMemcachedDoes) {
  Parsed p = Parse({"-m", "0"});
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "Cannot set item size limit higher than 1/2 of memory max.");
}

TEST(OptionsTest, ListenTakesListsRepeatsAndPerEntryPorts) {
  Parsed p = Parse({"-l", "127.0.0.1,127.0.0.2:9000", "-l", "[::1]:9001", "-l", "127.0.0.1",
                    "-l", "::1", "-p", "8000"});
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.options.listen.size(), 4u);
  EXPECT_EQ(p.options.listen[0].host, "127.0.0.1");
  EXPECT_EQ(p.options.listen[0].port, 8000);
  EXPECT_EQ(p.options.listen[1].host, "127.0.0.2");
  EXPECT_EQ(p.options.listen[1].port, 9000);
  EXPECT_EQ(p.options.listen[2].host, "::1");
  EXPECT_EQ(p.options.listen[2].port, 9001);
  EXPECT_EQ(p.options.listen[3].host, "::1");
  EXPECT_EQ(p.options.listen[3].port, 8000);
  EXPECT_EQ(p.options.protocol.listen_interface, "127.0.0.1,127.0.0.2:9000,[::1]:9001,::1");
}

TEST(OptionsTest, ListenStarMeansEveryInterface) {
  Parsed p = Parse({"-l", "*"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.listen[0].host, "");
}

TEST(OptionsTest, MalformedListenAddressesAreErrors) {
  EXPECT_FALSE(Parse({"-l", "127.0.0.1:"}).ok);
  EXPECT_FALSE(Parse({"-l", "127.0.0.1:99999"}).ok);
  EXPECT_FALSE(Parse({"-l", "[::1"}).ok);
  EXPECT_FALSE(Parse({"-l", ":80"}).ok);
}

TEST(OptionsTest, HerdlessExtendedOptions) {
  Parsed p = Parse({"-o", "lease_timeout=7,xfetch_delta_ms=250,xfetch_beta=1.5",
                    "-o", "stale_grace=30,classic_stampede=wait,idle_timeout=60",
                    "-o", "stalled_client_timeout=0"});
  ASSERT_TRUE(p.ok) << p.error;
  const ProtocolSettings& s = p.options.protocol;
  EXPECT_EQ(s.lease.lease_timeout_ms, 7000u);
  EXPECT_EQ(s.lease.default_delta_ms, 250u);
  EXPECT_DOUBLE_EQ(s.xfetch_beta, 1.5);
  EXPECT_EQ(s.stale_grace_s, 30u);
  EXPECT_EQ(s.classic_stampede, ClassicStampedeMode::kWait);
  EXPECT_EQ(s.idle_timeout, 60);
  EXPECT_EQ(s.stalled_client_timeout, 0);
  EXPECT_EQ(s.wait_timeout_ms, 7000u);   // follows lease_timeout when not given
}

TEST(OptionsTest, RefreshAheadOptions) {
  const ProtocolSettings defaults = Parse({}).options.protocol;
  EXPECT_FALSE(defaults.refresh_ahead);
  EXPECT_DOUBLE_EQ(defaults.lease.refresh_hot_per_s, 2.0);
  EXPECT_DOUBLE_EQ(defaults.lease.refresh_epsilon, 0.01);
  EXPECT_DOUBLE_EQ(defaults.lease.refresh_max_fraction, 0.25);
  Parsed p = Parse({"-o", "refresh_ahead=on,refresh_hot=0.5,refresh_epsilon=0.001",
                    "-o", "refresh_max_fraction=0.1"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.options.protocol.refresh_ahead);
  EXPECT_DOUBLE_EQ(p.options.protocol.lease.refresh_hot_per_s, 0.5);
  EXPECT_DOUBLE_EQ(p.options.protocol.lease.refresh_epsilon, 0.001);
  EXPECT_DOUBLE_EQ(p.options.protocol.lease.refresh_max_fraction, 0.1);
  EXPECT_FALSE(Parse({"-o", "refresh_ahead=off"}).options.protocol.refresh_ahead);
  EXPECT_FALSE(Parse({"-o", "refresh_ahead=yes"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_ahead"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_hot=0"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_hot=fast"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_epsilon=0"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_epsilon=0.9"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_max_fraction=1.5"}).ok);
  EXPECT_FALSE(Parse({"-o", "refresh_max_fraction=0"}).ok);
}

TEST(OptionsTest, WaitTimeoutDefaultFollowsLeaseTimeoutWhereverItAppears) {
  EXPECT_EQ(Parse({"-o", "wait_timeout_ms=250,lease_timeout=9"}).options.protocol.wait_timeout_ms, 250u);
  EXPECT_EQ(Parse({"-o", "lease_timeout=9"}).options.protocol.wait_timeout_ms, 9000u);
  // Leases that never time out still leave a parked reader a bound.
  EXPECT_EQ(Parse({"-o", "lease_timeout=0"}).options.protocol.wait_timeout_ms, 5000u);
}

TEST(OptionsTest, ExactThreadsIsAFlag) {
  EXPECT_FALSE(Parse({"-t", "8"}).options.protocol.exact_threads);
  Parsed p = Parse({"-t", "8", "-o", "exact_threads"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.options.protocol.exact_threads);
  EXPECT_EQ(p.options.protocol.num_threads, 8);
  EXPECT_FALSE(Parse({"-o", "exact_threads=1"}).ok);
}

TEST(OptionsTest, ClassicStampedeModes) {
  EXPECT_EQ(Parse({"-o", "classic_stampede=off"}).options.protocol.classic_stampede,
            ClassicStampedeMode::kOff);
  EXPECT_EQ(Parse({"-o", "classic_stampede=stale"}).options.protocol.classic_stampede,
            ClassicStampedeMode::kStale);
  EXPECT_FALSE(Parse({"-o", "classic_stampede=always"}).ok);
}

TEST(OptionsTest, MemcachedTuningSuboptionsAreAcceptedAndNoted) {
  Parsed p = Parse({"-o", "hashpower=20,slab_reassign,modern,no_modern,lru_crawler,no_lru_maintainer",
                    "-o", "slab_sizes=100-200-300"});
  ASSERT_TRUE(p.ok) << p.error;
  // all but the crawler, maintainer and slab mover switches (below)
  ASSERT_EQ(p.options.ignored.size(), 3u);
  EXPECT_EQ(p.options.ignored[0], "-o hashpower=20");
  EXPECT_EQ(p.options.ignored[1], "-o modern");
  // memcached warns of this one and starts.
  p = Parse({"-o", "resp_obj_mem_limit=5"});
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.options.warnings.size(), 1u);
  EXPECT_EQ(p.options.warnings[0], "DEPRECATED: resp_obj_mem_limit no longer used. See read_buf_mem_limit,");
}

// memcached's no_modern and no_lru_crawler start the crawler off, a later
// lru_crawler turns it back on (t/lru-crawler.t).
TEST(OptionsTest, CrawlerSwitchesSetItsStartInOrder) {
  struct Case {
    std::vector<std::string> args;
    bool on;
  };
  const Case cases[] = {{{}, true},
                        {{"-o", "no_modern"}, false},
                        {{"-o", "no_lru_crawler"}, false},
                        {{"-o", "no_modern,lru_crawler"}, true},
                        {{"-o", "lru_crawler", "-o", "no_modern"}, false},
                        {{"-o", "modern"}, true}};
  for (const Case& c : cases) {
    Parsed p = Parse(c.args);
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.options.protocol.lru_crawler_at_start, c.on) << (c.args.empty() ? "" : c.args[1]);
  }
  EXPECT_FALSE(Parse({"-o", "no_modern=1"}).ok);
}

// What memcached's no_modern, no_lru_maintainer and temporary_ttl change in
// `stats settings`; temporary_ttl needs the maintainer, as in memcached.
TEST(OptionsTest, MachinerySwitchesSetWhatStatsSettingsShows) {
  Parsed p = Parse({"-o", "no_modern"});
  ASSERT_TRUE(p.ok) << p.error;
  const MachinerySettings& m = p.options.protocol.machinery;
  EXPECT_FALSE(m.lru_maintainer);
  EXPECT_FALSE(m.slab_reassign);
  EXPECT_FALSE(m.maxconns_fast);
  EXPECT_EQ(m.slab_automove, 0u);
  EXPECT_EQ(p.options.protocol.slab_chunk_max, 1u << 20);
  EXPECT_EQ(Parse({"-o", "no_modern,slab_chunk_max=4096"}).options.protocol.slab_chunk_max, 4096u);
  EXPECT_FALSE(Parse({"-o", "no_lru_maintainer"}).options.protocol.machinery.lru_maintainer);
  EXPECT_TRUE(Parse({"-o", "no_lru_maintainer,lru_maintainer"}).options.protocol.machinery.lru_maintainer);
  EXPECT_TRUE(Parse({"-o", "no_lru_maintainer"}).options.protocol.machinery.slab_reassign);
  EXPECT_FALSE(Parse({"-o", "no_slab_reassign"}).options.protocol.machinery.slab_reassign);
  EXPECT_TRUE(Parse({"-o", "no_modern,slab_reassign"}).options.protocol.machinery.slab_reassign);
  EXPECT_FALSE(Parse({"-o", "no_maxconns_fast"}).options.protocol.machinery.maxconns_fast);
  EXPECT_EQ(Parse({"-o", "no_slab_automove"}).options.protocol.machinery.slab_automove, 0u);
  EXPECT_EQ(Parse({"-o", "no_modern,slab_automove"}).options.protocol.machinery.slab_automove, 1u);
  EXPECT_EQ(Parse({"-o", "slab_automove=2"}).options.protocol.machinery.slab_automove, 2u);
  EXPECT_EQ(Parse({"-o", "slab_automove=3"}).error, "slab_automove must be between 0 and 2");
  p = Parse({"-o", "temporary_ttl=90"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.options.protocol.machinery.temp_lru);
  EXPECT_EQ(p.options.protocol.machinery.temporary_ttl, 90);
  EXPECT_EQ(Parse({"-o", "no_lru_maintainer,temporary_ttl=90"}).error,
            "temporary_ttl requires lru_maintainer to be enabled");
  EXPECT_FALSE(Parse({"-o", "temporary_ttl"}).ok);
}

// memcached's LRU tuning keys start what `stats settings` shows, with its checks.
TEST(OptionsTest, LruTuningKeysAreCheckedAsMemcachedChecksThem) {
  Parsed p = Parse({"-o", "hot_lru_pct=30,warm_lru_pct=45,hot_max_factor=0.5,warm_max_factor=3"});
  ASSERT_TRUE(p.ok) << p.error;
  const MachinerySettings& m = p.options.protocol.machinery;
  EXPECT_EQ(m.hot_lru_pct, 30u);
  EXPECT_EQ(m.warm_lru_pct, 45u);
  EXPECT_EQ(m.hot_max_factor, 0.5);
  EXPECT_EQ(m.warm_max_factor, 3.0);
  const struct {
    const char* arg;
    const char* error;
  } refused[] = {{"hot_lru_pct=80", "hot_lru_pct must be > 1 and < 80"},
                 {"warm_lru_pct=0", "warm_lru_pct must be > 1 and < 80"},
                 {"hot_lru_pct=50,warm_lru_pct=40", "hot_lru_pct + warm_lru_pct cannot be more than 80% combined"},
                 {"hot_max_factor=0", "hot_max_factor must be > 0"},
                 {"warm_max_factor", "Missing warm_max_factor argument"}};
  for (const auto& r : refused) EXPECT_EQ(Parse({"-o", r.arg}).error, r.error) << r.arg;
}

// -o slab_sizes is checked after the last option, against -n and
// slab_chunk_max, with memcached's messages and EX_USAGE (an empty list, which
// memcached refuses without a word, with herdless's).
TEST(OptionsTest, SlabSizesAreCheckedAsMemcachedChecksThem) {
  std::string many;
  for (int size = 100; size <= 6300; size += 100) many += (many.empty() ? "" : "-") + std::to_string(size);
  const struct {
    std::vector<std::string> args;
    const char* error;   // nullptr: accepted
  } cases[] = {{{"-o", "slab_sizes=100-200-300"}, nullptr},
               {{"-o", "slab_sizes=--100--200-"}, nullptr},
               {{"-o", "slab_sizes=10-100"}, "slab size 10 is out of valid range"},
               {{"-n", "200", "-o", "slab_sizes=100-300"}, "slab size 100 is out of valid range"},
               {{"-o", "slab_sizes=100-600000"}, "slab size 600000 is out of valid range"},
               {{"-o", "slab_sizes=100-abc"}, "slab size 0 is out of valid range"},
               {{"-o", "slab_sizes=100-90"}, "slab size 90 cannot be lower than or equal to a previous class size"},
               {{"-o", "slab_sizes=100-104"}, "slab size 104 must be at least 8 bytes larger than previous class"},
               {{"-o", "slab_sizes=" + many}, "too many slab classes specified"},
               {{"-o", "slab_sizes="}, "Missing slab_sizes argument"},
               {{"-o", "slab_sizes"}, "Missing slab_sizes argument"}};
  for (const auto& c : cases) {
    Parsed p = Parse(c.args);
    EXPECT_EQ(p.ok, c.error == nullptr) << c.args.back();
    if (c.error == nullptr) continue;
    EXPECT_EQ(p.error, c.error) << c.args.back();
    EXPECT_EQ(p.refused.exit_status, 64) << c.args.back();
  }
}

TEST(OptionsTest, MemcachedTuningFlagsAreAcceptedAndNoted) {
  Parsed p = Parse({"-f", "1.25", "-n", "48", "-L", "-B", "ascii"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.ignored.size(), 3u);
}

TEST(OptionsTest, DelimiterTurnsPrefixStatsOn) {
  Parsed off = Parse({});
  ASSERT_TRUE(off.ok) << off.error;
  EXPECT_EQ(off.options.protocol.prefix_delimiter, ':');
  EXPECT_FALSE(off.options.protocol.detail_enabled);
  Parsed on = Parse({"-D", "/x"});   // memcached takes the first character
  ASSERT_TRUE(on.ok) << on.error;
  EXPECT_EQ(on.options.protocol.prefix_delimiter, '/');
  EXPECT_TRUE(on.options.protocol.detail_enabled);
  Parsed empty = Parse({"-D", ""});
  EXPECT_FALSE(empty.ok);
  EXPECT_EQ(empty.error, "No delimiter specified");
}

TEST(OptionsTest, DumpAndWatchCanBeDisabled) {
  Parsed on = Parse({});
  ASSERT_TRUE(on.ok) << on.error;
  EXPECT_TRUE(on.options.protocol.dump_enabled);
  EXPECT_TRUE(on.options.protocol.watch_enabled);
  Parsed off = Parse({"-X", "--disable-watch"});
  ASSERT_TRUE(off.ok) << off.error;
  EXPECT_FALSE(off.options.protocol.dump_enabled);
  EXPECT_FALSE(off.options.protocol.watch_enabled);
}

TEST(OptionsTest, UnknownOrMalformedSuboptionsAreErrors) {
  Parsed unknown = Parse({"-o", "foo=1"});
  EXPECT_FALSE(unknown.ok);
  EXPECT_EQ(unknown.error, "Illegal suboption \"foo\"");
  Parsed missing = Parse({"-o", "idle_timeout"});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.error, "Missing numeric argument for idle_timeout");
  EXPECT_FALSE(Parse({"-o", "lease_timeout=-1"}).ok);
  EXPECT_FALSE(Parse({"-o", "xfetch_beta=nan"}).ok);
  EXPECT_FALSE(Parse({"-o", "xfetch_beta=-0.5"}).ok);
  EXPECT_FALSE(Parse({"-o", "xfetch_delta_ms=0"}).ok);
  EXPECT_FALSE(Parse({"-o", "xfetch_delta_ms=70000"}).ok);
  EXPECT_FALSE(Parse({"-o", "wait_timeout_ms=0"}).ok);
  EXPECT_FALSE(Parse({"-o", "stale_grace=soon"}).ok);
}

TEST(OptionsTest, OutOfRangeCountsUseMemcachedsMessages) {
  Parsed c = Parse({"-c", "0"});
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.error, "Maximum connections must be greater than 0");
  Parsed r = Parse({"-R", "0"});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "Number of requests per event must be greater than 0");
  EXPECT_FALSE(Parse({"-t", "0"}).ok);
  Parsed port = Parse({"-p", "70000"});
  EXPECT_FALSE(port.ok);
  EXPECT_EQ(port.error, "ERROR: Invalid port number 70000.");
}

TEST(OptionsTest, ManyThreadsWarnLikeMemcached) {
  Parsed p = Parse({"-t", "65"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.warnings.size(), 1u);
}

TEST(OptionsTest, MalformedNumbersAreErrors) {
  EXPECT_FALSE(Parse({"-p", "abc"}).ok);
  EXPECT_FALSE(Parse({"-p", "12abc"}).ok);
  EXPECT_FALSE(Parse({"-m", "-5"}).ok);
  EXPECT_FALSE(Parse({"-c", ""}).ok);
  EXPECT_FALSE(Parse({"-b", "x"}).ok);
  EXPECT_FALSE(Parse({"--threads=four"}).ok);
}

TEST(OptionsTest, UnknownFlagsAndStrayArgumentsAreErrors) {
  Parsed q = Parse({"-Q"});
  EXPECT_FALSE(q.ok);
  EXPECT_EQ(q.error, "invalid option -- 'Q'");
  Parsed l = Parse({"--bogus"});
  EXPECT_FALSE(l.ok);
  EXPECT_EQ(l.error, "unrecognized option '--bogus'");
  EXPECT_FALSE(Parse({"11211"}).ok);
  EXPECT_FALSE(Parse({"--", "x"}).ok);
  EXPECT_FALSE(Parse({"--daemon=yes"}).ok);
}

// memcached's exit statuses: 1 from its getopt loop, EX_USAGE (64) from the
// checks after it; getopt's own complaints are printed after the program name.
TEST(OptionsTest, RefusalsExitAndPrintAsMemcached) {
  struct Row {
    std::vector<std::string> args;
    int exit_status;
    const char* printed;
  };
  const Row rows[] = {
      {{"-Q"}, 1, "prog: invalid option -- 'Q'\nIllegal argument \"?\"\n"},
      {{"--bogus"}, 1, "prog: unrecognized option '--bogus'\nIllegal argument \"?\"\n"},
      {{"-p"}, 1, "prog: option requires an argument -- 'p'\nIllegal argument \"?\"\n"},
      {{"-t", "0"}, 1, "Number of threads must be greater than 0\n"},
      {{"-t", "2000"}, 1, "Number of threads must be at most 1024\n"},
      {{"-o", "bogus"}, 1, "Illegal suboption \"bogus\"\n"},
      {{"-I", "512"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
      {{"-p", "70000"}, 64, "ERROR: Invalid port number 70000.\n"},
      {{"-o", "compat=1.6.45,slab_chunk_max=x"}, 1, "could not parse argument to slab_chunk_max\n"},
      {{"-o", "compat=1.6.45,slab_chunk_max=3"}, 64,
       "-I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max (bytes: 3072)\n"},
      // storage_check_config's refusals are EX_USAGE, extstore_init's (in storage_init) 1.
      {{"-U", "11211", "-o", "ext_path=/tmp/a:64m"}, 64,
       "Cannot use UDP with extstore enabled (-U 0 to disable)\n"},
      {{"-o", "ext_page_size=2,ext_path=/tmp/a:64m"}, 1,
       "Failed to initialize external storage: page_size must be divisible by wbuf_size\n"},
      {{"-N", "5", "-t", "4"}, 64, "Number of napi_ids(5) cannot be greater than number of threads(4)\n"},
      // A line with two errors names the one memcached checks first (both versions' order):
      // the -o list's own refusals, -N, -I, slab_chunk_max, storage_check_config, slab_sizes,
      // the LRU keys, SASL and -Y, the port, extstore_init.
      {{"-I", "10", "-N", "5", "-t", "4"}, 64,
       "Number of napi_ids(5) cannot be greater than number of threads(4)\n"},
      {{"-I", "10", "-o", "ext_path=/tmp/a:64m:compact"}, 1,
       "ext_path only presently supports the default bucket\nfailed to parse ext_path argument\n"},
      {{"-U", "5", "-o", "ext_path=/tmp/a:64m,slab_sizes=x"}, 64,
       "Cannot use UDP with extstore enabled (-U 0 to disable)\n"},
      {{"-p", "70000", "-o", "hot_lru_pct=70,warm_lru_pct=70"}, 64,
       "hot_lru_pct + warm_lru_pct cannot be more than 80% combined\n"},
      {{"-p", "70000", "-S", "-B", "ascii"}, 64, "ERROR: You cannot allow the ASCII protocol while using SASL.\n"},
      {{"-p", "70000", "-o", "ext_page_size=2,ext_path=/tmp/a:64m"}, 64, "ERROR: Invalid port number 70000.\n"},
      {{"-p", "70000", "-o", "ext_path=/tmp/a:64m,ext_page_size=2"}, 1,
       "Must specify ext_page_size before any ext_path arguments\n"},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args);
    ASSERT_FALSE(p.ok) << row.args[0];
    EXPECT_EQ(p.refused.exit_status, row.exit_status) << row.printed;
    EXPECT_EQ(p.refused.Printed("prog"), row.printed);
  }
}

// -N is memcached's NAPI ID count: herdless takes it, checks it against -t as
// memcached does and shows it in `stats settings`, and does nothing else with it.
TEST(OptionsTest, NapiIdsAreCheckedAgainstThreads) {
  EXPECT_TRUE(Parse({"-N", "4", "-t", "4"}).ok);
  EXPECT_TRUE(Parse({"-t", "8", "-N", "5"}).ok);
  EXPECT_EQ(Parse({"-N", "4", "-t", "4"}).options.protocol.num_napi_ids, 4);
  EXPECT_FALSE(Parse({"-N", "5"}).ok);   // memcached's default -t is 4
  EXPECT_EQ(Parse({}).options.protocol.num_napi_ids, 0);
}

TEST(OptionsTest, MissingValuesAreErrors) {
  Parsed p = Parse({"-p"});
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "option requires an argument -- 'p'");
  EXPECT_FALSE(Parse({"--port"}).ok);
}

TEST(OptionsTest, Transports) {
  const Parsed udp = Parse({"-U", "11311"});
  ASSERT_TRUE(udp.ok);
  EXPECT_EQ(udp.options.protocol.udp_port, 11311);
  EXPECT_EQ(udp.options.protocol.tcp_port, 11311);   // memcached: -U without -p moves TCP too
  const Parsed both = Parse({"-p", "-1", "-U", "-1"});
  ASSERT_TRUE(both.ok);
  EXPECT_EQ(both.options.protocol.tcp_port, -1);
  EXPECT_EQ(both.options.protocol.udp_port, -1);
  EXPECT_EQ(both.options.listen[0].port, -1);
  EXPECT_EQ(Parse({"-p", "0"}).options.protocol.tcp_port, 0);
  EXPECT_FALSE(Parse({"-p", "-2"}).ok);
  EXPECT_FALSE(Parse({"-U", "70000"}).ok);
  const Parsed unix_socket = Parse({"-s", "/tmp/mc.sock", "-a", "0766"});
  ASSERT_TRUE(unix_socket.ok);
  EXPECT_EQ(unix_socket.options.protocol.domain_socket, "/tmp/mc.sock");
  EXPECT_EQ(unix_socket.options.protocol.unix_mask, 0766);
  EXPECT_EQ(Parse({}).options.protocol.unix_mask, 0700);
  EXPECT_FALSE(Parse({"-a", "9"}).ok);
  const Parsed listen = Parse({"-l", "127.0.0.1:9000,127.0.0.2"});
  EXPECT_EQ(listen.options.listen[0].explicit_port, 9000);
  EXPECT_EQ(listen.options.listen[1].explicit_port, -1);
  EXPECT_TRUE(Parse({}).options.protocol.evictions);
  EXPECT_FALSE(Parse({"-M"}).options.protocol.evictions);
}

TEST(OptionsTest, UnsupportedFeaturesAreRefusedNotIgnored) {
  EXPECT_FALSE(Parse({"-B", "carrier-pigeon"}).ok);
}

// -e is memcached's restart file flag; herdless's file is a snapshot.
TEST(OptionsTest, SnapshotFileAndInterval) {
  Parsed p = Parse({"-e", "/var/lib/herdless/snapshot", "-o", "snapshot_interval=300"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.protocol.memory_file, "/var/lib/herdless/snapshot");
  EXPECT_EQ(p.options.protocol.snapshot_interval_s, 300u);
  EXPECT_EQ(Parse({"--memory-file=/x"}).options.protocol.memory_file, "/x");
  EXPECT_EQ(Parse({}).options.protocol.snapshot_interval_s, 0u);
  EXPECT_FALSE(Parse({"-e", ""}).ok);
  EXPECT_FALSE(Parse({"-e", "/x", "-o", "snapshot_interval=soon"}).ok);
  const Parsed without_file = Parse({"-o", "snapshot_interval=5"});
  EXPECT_FALSE(without_file.ok);
  EXPECT_NE(without_file.error.find("-e"), std::string::npos) << without_file.error;
}

// -o metrics: off unless given, loopback for a port alone, kept as HOST:PORT.
TEST(OptionsTest, MetricsAddress) {
  EXPECT_EQ(Parse({}).options.protocol.metrics_address, "");
  EXPECT_EQ(Parse({"-o", "metrics=9150"}).options.protocol.metrics_address, "127.0.0.1:9150");
  EXPECT_EQ(Parse({"-o", "metrics=0.0.0.0:9150"}).options.protocol.metrics_address, "0.0.0.0:9150");
  EXPECT_EQ(Parse({"-o", "metrics=[::1]:9150"}).options.protocol.metrics_address, "[::1]:9150");
  EXPECT_FALSE(Parse({"-o", "metrics"}).ok);
  EXPECT_FALSE(Parse({"-o", "metrics=host:99999"}).ok);
}

#ifdef HERDLESS_TLS
// -Z and memcached's ssl_* suboptions, kept as given for `stats settings`.
TEST(OptionsTest, TlsOptions) {
  Parsed p = Parse({"-Z", "-o", "ssl_chain_cert=/c.pem,ssl_key=/k.pem,ssl_verify_mode=3,"
                                "ssl_ca_cert=/ca.pem,ssl_ciphers=HIGH,ssl_min_version=tlsv1.3,"
                                "ssl_session_cache,ssl_wbuf_size=32,ssl_keyformat=2,"
                                "ssl_handshake_timeout=3"});
  ASSERT_TRUE(p.ok) << p.error;
  const TlsSettings& t = p.options.protocol.tls;
  EXPECT_TRUE(t.available);
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.chain_cert, "/c.pem");
  EXPECT_EQ(t.key, "/k.pem");
  EXPECT_EQ(t.verify_mode, 3);
  EXPECT_EQ(SslVerifyFlags(t.verify_mode), 7);   // memcached prints the OpenSSL flags
  EXPECT_EQ(t.ca_cert, "/ca.pem");
  EXPECT_EQ(t.ciphers, "HIGH");
  EXPECT_EQ(t.min_version, 3);
  EXPECT_TRUE(t.session_cache);
  EXPECT_EQ(t.wbuf_size, 32u * 1024);
  EXPECT_EQ(t.keyformat, 2);
  EXPECT_EQ(t.handshake_timeout_s, 3);
  EXPECT_EQ(Parse({"-Z", "-o", "ssl_min_version=2"}).options.protocol.tls.min_version, 2);
  // memcached's messages for bad values.
  EXPECT_EQ(Parse({"-Z", "-o", "ssl_verify_mode=4"}).error,
            "Invalid ssl_verify_mode. Use help to see valid options.");
  EXPECT_EQ(Parse({"-Z", "-o", "ssl_min_version=tlsv9"}).error,
            "Invalid ssl_min_version. Use help to see valid options.");
  EXPECT_EQ(Parse({"-o", "ssl_chain_cert"}).error, "Missing ssl_chain_cert argument");
  EXPECT_FALSE(Parse({"-o", "ssl_bogus=1"}).ok);
  EXPECT_FALSE(Parse({"-Z", "-o", "ssl_handshake_timeout=0"}).ok);
}

TEST(OptionsTest, NotlsListenersOnlyBesideTls) {
  Parsed p = Parse({"-Z", "-p", "11311", "-l", "notls:127.0.0.1:11312,127.0.0.1"});
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.options.listen.size(), 2u);
  EXPECT_FALSE(p.options.listen[0].tls);
  EXPECT_EQ(p.options.listen[0].port, 11312);
  EXPECT_TRUE(p.options.listen[1].tls);
  EXPECT_EQ(p.options.listen[1].port, 11311);
  Parsed plain = Parse({"-l", "notls:127.0.0.1:11312"});
  EXPECT_FALSE(plain.ok);
  EXPECT_EQ(plain.error, "'notls' option is valid only when SSL is enabled");
  EXPECT_FALSE(Parse({"-l", "127.0.0.1"}).options.listen[0].tls);
  EXPECT_EQ(Parse({"-Z", "-p", "0"}).error, "ERROR: You cannot enable SSL without a TCP port.");
}

#else
TEST(OptionsTest, TlsRefusedWithoutTls) {
  EXPECT_EQ(Parse({"-Z"}).error, "This server is not built with TLS support.");
}
#endif

// memcached: -S speaks binary only (its password database is read at start).
TEST(OptionsTest, SaslIsBinaryOnly) {
  Parsed p = Parse({"-S"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.options.protocol.sasl_enabled);
  EXPECT_EQ(p.options.protocol.binding_protocol, BindingProtocol::kBinary);
  EXPECT_TRUE(Parse({"-S", "-B", "binary"}).ok);
  EXPECT_EQ(Parse({"-S", "-B", "ascii"}).error,
            "ERROR: You cannot allow the ASCII protocol while using SASL.");
  EXPECT_FALSE(Parse({"-S", "-B", "auto"}).ok);
  EXPECT_FALSE(Parse({"-S", "-Y", "/etc/auth"}).ok);
}

TEST(OptionsTest, AuthFileIsKept) {
  Parsed p = Parse({"-Y", "/etc/auth"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.protocol.auth_file, "/etc/auth");
  // memcached: -Y speaks ASCII only.
  EXPECT_EQ(p.options.protocol.binding_protocol, BindingProtocol::kAscii);
  EXPECT_TRUE(Parse({"-Y", "/etc/auth", "-B", "ascii"}).ok);
  EXPECT_EQ(Parse({"-Y", "/etc/auth", "-B", "auto"}).error,
            "ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.");
  EXPECT_FALSE(Parse({"-B", "binary", "-Y", "/etc/auth"}).ok);
  EXPECT_FALSE(Parse({"--auth-file="}).ok);
}

TEST(OptionsTest, BindingProtocol) {
  EXPECT_EQ(Parse({}).options.protocol.binding_protocol, BindingProtocol::kAuto);
  EXPECT_EQ(Parse({"-B", "auto"}).options.protocol.binding_protocol, BindingProtocol::kAuto);
  EXPECT_EQ(Parse({"-B", "ascii"}).options.protocol.binding_protocol, BindingProtocol::kAscii);
  EXPECT_EQ(Parse({"--protocol=binary"}).options.protocol.binding_protocol,
            BindingProtocol::kBinary);
  EXPECT_EQ(Parse({"-B", "Binary"}).error,
            "Invalid value for binding protocol: Binary\n -- should be one of auto, binary, or ascii");
}

TEST(OptionsTest, ReparsingStartsFromDefaults) {
  Options options;
  std::string error;
  std::vector<std::string> first = {"herdless", "-p", "1", "-v"};
  std::vector<char*> argv;
  for (std::string& s : first) argv.push_back(s.data());
  ASSERT_TRUE(ParseOptions(static_cast<int>(argv.size()), argv.data(), &options, &error));
  std::string name = "herdless";
  char* second[] = {name.data(), nullptr};
  ASSERT_TRUE(ParseOptions(1, second, &options, &error));
  EXPECT_EQ(options.protocol.tcp_port, 11211);
  EXPECT_EQ(options.verbosity, 0);
}


// The option table (daemon/option_table.cc): each flag and -o key one row.
TEST(OptionTableTest, EachFlagAndKeyIsOneRowWithItsWayToApply) {
  std::set<char> flags;
  std::set<std::string> long_names;
  for (const OptionRow& row : FlagRows()) {
    EXPECT_TRUE(flags.insert(row.flag).second) << "-" << row.flag << " twice";
    for (const char* name : {row.name, row.alias}) {
      if (name != nullptr) {
        EXPECT_TRUE(long_names.insert(name).second) << "--" << name << " twice";
      }
    }
    EXPECT_NE(row.apply, nullptr) << "-" << row.flag;
    // memcached's ignored flags are listed at the end of -h, without text.
    EXPECT_EQ(row.help == nullptr, row.ignored) << "-" << row.flag;
  }
  EXPECT_EQ(flags.count(0), 0u);
  std::set<std::string> keys;
  for (const OptionRow& row : SuboptionRows()) {
    EXPECT_EQ(row.flag, 0) << row.name;
    ASSERT_NE(row.name, nullptr);
    EXPECT_TRUE(keys.insert(row.name).second) << row.name << " twice";
    EXPECT_NE(row.apply, nullptr) << row.name;
    // memcached's keys for machinery herdless lacks that still show a setting: no text.
    EXPECT_EQ(row.help == nullptr, row.ignored) << row.name;
  }
  for (std::string_view ignored : IgnoredSuboptions()) {
    EXPECT_EQ(keys.count(std::string(ignored)), 0u) << ignored << " is both a key and ignored";
  }
}

TEST(OptionTableTest, HelpShowsEveryRowOfThisBuildWithItsDefault) {
  const std::string help = UsageText();
  EXPECT_EQ(help.find("{default}"), std::string::npos);
#ifdef HERDLESS_TLS
  const bool tls = true;
#else
  const bool tls = false;
#endif
  for (std::span<const OptionRow> rows : {FlagRows(), SuboptionRows()}) {
    for (const OptionRow& row : rows) {
      const std::string column = row.flag == 0 ? std::string("\n   - ") + row.name + ":"
                                 : row.name == nullptr ? std::string("\n-") + row.flag + " "
                                                       : std::string("\n-") + row.flag + ", --" + row.name;
      // -h sums up memcached's ignored -o keys in one line.
      const bool shown = (tls || !row.tls) && !row.unlisted && !(row.flag == 0 && row.ignored);
      EXPECT_EQ(help.find(column) != std::string::npos, shown) << column.substr(1);
      const bool placeholder =
          row.help != nullptr && std::string_view(row.help).find("{default}") != std::string_view::npos;
      EXPECT_EQ(placeholder, row.help_default != nullptr) << column.substr(1);
    }
  }
  // The defaults shown are the settings' defaults.
  const ProtocolSettings d;
  EXPECT_NE(help.find("(default: " + std::to_string(d.tcp_port) + ";"), std::string::npos);
  EXPECT_NE(help.find("(default: " + std::to_string(d.max_bytes >> 20) + ")"), std::string::npos);
  EXPECT_NE(help.find("reader (default: " + std::to_string(d.lease.lease_timeout_ms / 1000) + ";"),
            std::string::npos);
}

TEST(OptionTableTest, EachSettingIsShownByOneRow) {
  std::set<std::string> settings;
  for (std::span<const OptionRow> rows : {FlagRows(), SuboptionRows()}) {
    for (const OptionRow& row : rows) {
      if (row.setting.name == nullptr) continue;
      EXPECT_TRUE(settings.insert(row.setting.name).second) << row.setting.name << " twice";
      EXPECT_NE(row.setting.write, nullptr) << row.setting.name;
    }
  }
  EXPECT_GT(settings.size(), 40u);
}

}  // namespace
}  // namespace herdless
