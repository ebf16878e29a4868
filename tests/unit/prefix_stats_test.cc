#include "protocol/prefix_stats.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace herdless {
namespace {

TEST(PrefixStatsTest, CountsPerPrefixAsMemcached) {
  PrefixStats p;
  p.Configure(':', true);
  p.RecordSet("a:1");
  p.RecordGet("a:1", true);
  p.RecordGet("a:3", false);
  p.RecordDelete("a:1");
  p.RecordGet("b:1", true);
  p.RecordGet(":x", false);          // an empty prefix counts (memcached: "PREFIX  get ...")
  p.RecordGet("nodelim", true);      // no delimiter: not counted
  p.RecordSet(std::string("n\0x:1", 5));   // a NUL before the delimiter ends the search
  p.RecordGet("a:b:c", true);        // the first delimiter ends the prefix
  EXPECT_EQ(p.Dump(),
            "PREFIX  get 1 hit 0 set 0 del 0\r\n"
            "PREFIX a get 3 hit 2 set 1 del 1\r\n"
            "PREFIX b get 1 hit 1 set 0 del 0\r\n"
            "END\r\n");
  EXPECT_EQ(p.size(), 3u);
}

TEST(PrefixStatsTest, DelimiterIsConfigurable) {
  PrefixStats p;
  p.Configure('/', true);
  EXPECT_EQ(p.delimiter(), '/');
  EXPECT_TRUE(p.enabled());
  p.RecordSet("user/42");
  p.RecordSet("user:42");
  EXPECT_EQ(p.Dump(), "PREFIX user get 0 hit 0 set 1 del 0\r\nEND\r\n");
  p.set_enabled(false);
  EXPECT_FALSE(p.enabled());
}

TEST(PrefixStatsTest, EmptyDumpIsEnd) {
  PrefixStats p;
  EXPECT_FALSE(p.enabled());   // memcached's default: detail off
  EXPECT_EQ(p.delimiter(), ':');
  EXPECT_EQ(p.Dump(), "END\r\n");
}

TEST(PrefixStatsTest, NewPrefixesBeyondTheBoundAreNotCounted) {
  PrefixStats p(2);
  p.Configure(':', true);
  p.RecordSet("a:1");
  p.RecordSet("b:1");
  p.RecordSet("c:1");   // refused: the table is full
  p.RecordSet("a:2");   // a known prefix still counts
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.refused(), 1u);
  EXPECT_EQ(p.Dump(),
            "PREFIX a get 0 hit 0 set 2 del 0\r\n"
            "PREFIX b get 0 hit 0 set 1 del 0\r\n"
            "END\r\n");
  p.Clear();   // stats reset
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.refused(), 0u);
  EXPECT_EQ(p.Dump(), "END\r\n");
  p.RecordSet("c:1");
  EXPECT_EQ(p.size(), 1u);
}

TEST(PrefixStatsTest, WorkersShareOneTable) {
  PrefixStats p;
  p.Configure(':', true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 1000; i++) {
        p.RecordGet("k" + std::to_string(i % 10) + ":x", (i + t) % 2 == 0);
        p.RecordSet("shared:" + std::to_string(i));
      }
    });
  }
  std::thread reader([&p] {
    for (int i = 0; i < 50; i++) {
      const std::string dump = p.Dump();
      ASSERT_GE(dump.size(), 5u);
      EXPECT_EQ(dump.substr(dump.size() - 5), "END\r\n");
    }
  });
  for (auto& t : threads) t.join();
  reader.join();
  const std::string dump = p.Dump();
  EXPECT_NE(dump.find("PREFIX shared get 0 hit 0 set 4000 del 0\r\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("PREFIX k0 get 400 hit 200 set 0 del 0\r\n"), std::string::npos) << dump;
  EXPECT_EQ(p.size(), 11u);
}

}  // namespace
}  // namespace herdless
