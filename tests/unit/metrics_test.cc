#include "protocol/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "daemon/metrics_server.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() : store_(DrivenStoreConfig(&clock_, &random_)), server_(&stats_) {}

  // Every sample line as name{labels} -> value; checks the families' form.
  std::map<std::string, std::string> Scrape() {
    std::string text;
    WriteMetrics(&store_, &server_, &text);
    std::map<std::string, std::string> samples;
    std::set<std::string> families;
    std::string current;   // the family whose TYPE came last
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# HELP ", 0) == 0) continue;
      if (line.rfind("# TYPE ", 0) == 0) {
        current = line.substr(7, line.find(' ', 7) - 7);
        EXPECT_TRUE(families.insert(current).second) << "family twice: " << current;
        continue;
      }
      const size_t space = line.rfind(' ');
      const std::string series = line.substr(0, space);
      EXPECT_EQ(series.substr(0, series.find('{')), current) << "sample outside its family";
      EXPECT_TRUE(samples.emplace(series, line.substr(space + 1)).second) << series;
    }
    return samples;
  }

  ManualClock clock_;
  ScriptedRandom random_;
  ItemStore store_;
  ThreadStats stats_;
  FakeServer server_;
};

TEST_F(MetricsTest, MemcachedExporterNamesCarryStatsValues) {
  ASSERT_EQ(PutFiller(&store_, "k", 10), StoreStatus::kStored);
  stats_.cmd_set.Add(3);
  stats_.cas_hits.Add(1);
  stats_.cas_badval.Add(1);
  stats_.get_hits.Add(5);
  stats_.get_misses.Add(2);
  stats_.waits_parked.Add(4);
  auto m = Scrape();
  EXPECT_EQ(m["memcached_up"], "1");
  EXPECT_EQ(m["memcached_current_items"], "1");
  EXPECT_EQ(m["memcached_commands_total{command=\"get\",status=\"hit\"}"], "5");
  EXPECT_EQ(m["memcached_commands_total{command=\"get\",status=\"miss\"}"], "2");
  // cmd_set counts the cas commands too, as memcached_exporter subtracts.
  EXPECT_EQ(m["memcached_commands_total{command=\"set\",status=\"hit\"}"], "1");
  EXPECT_EQ(m["memcached_slab_current_items{slab=\"1\"}"], "1");
  EXPECT_EQ(m["memcached_limit_bytes"], std::to_string(store_.memory_limit()));
  EXPECT_EQ(m["herdless_waits_parked_total"], "4");
  EXPECT_EQ(m["herdless_lease_grants_total"], "0");
  EXPECT_EQ(m.count("herdless_tracked_keys"), 1u);
  // Exported once, under memcached's name.
  EXPECT_EQ(m.count("herdless_get_hits_total"), 0u);
  EXPECT_EQ(m.count("herdless_curr_items"), 0u);
  EXPECT_EQ(m.count("herdless_snapshot_writes_total"), 0u);   // no -e
}

TEST_F(MetricsTest, SnapshotSeriesWithMemoryFile) {
  server_.snapshot.snapshot.enabled = true;
  server_.snapshot.snapshot.writes = 2;
  server_.snapshot.snapshot.load_skipped_expired = 3;
  server_.snapshot.snapshot.load_skipped_flushed = 7;
  server_.snapshot.snapshot.load_ms = 1234;
  auto m = Scrape();
  EXPECT_EQ(m["herdless_snapshot_writes_total"], "2");
  EXPECT_EQ(m["herdless_snapshot_load_skipped_items{reason=\"expired\"}"], "3");
  EXPECT_EQ(m["herdless_snapshot_load_skipped_items{reason=\"flushed\"}"], "7");
  EXPECT_EQ(m["herdless_snapshot_load_skipped_items{reason=\"changed\"}"], "0");
  EXPECT_EQ(m["herdless_snapshot_load_seconds"], "1.234");
  EXPECT_EQ(m["herdless_snapshot_last_duration_seconds"], "0.000");
}

TEST(MetricsAddressTest, PortAloneIsLoopback) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(ParseMetricsAddress("9150", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 9150);
  ASSERT_TRUE(ParseMetricsAddress("0.0.0.0:80", &host, &port));
  EXPECT_EQ(host, "0.0.0.0");
  ASSERT_TRUE(ParseMetricsAddress("[::1]:9150", &host, &port));
  EXPECT_EQ(host, "::1");
  for (const char* bad : {"", ":9150", "::1:9150", "[::1]9150", "host:", "host:0", "host:65536",
                          "x:+1"}) {
    EXPECT_FALSE(ParseMetricsAddress(bad, &host, &port)) << bad;
  }
}

}  // namespace
}  // namespace herdless
