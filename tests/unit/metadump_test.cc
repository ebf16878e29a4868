#include "protocol/metadump.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "protocol/key.h"
#include "protocol/reply.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

std::string Encode(std::string_view key) {
  char out[kMaxUriEncodedKey];
  return std::string(out, UriEncode(key, out));
}

TEST(UriEncodeTest, EncodesAsMemcachedDoes) {
  struct Case {
    std::string key;
    std::string want;
  } cases[] = {
      {"plain", "plain"},
      {"AZaz09-._~", "AZaz09-._~"},
      {"100%", "100%25"},
      {"a b", "a%20b"},
      {"user:42/x?y=z&w", "user%3A42%2Fx%3Fy%3Dz%26w"},
      {std::string("\x00\x01\xff", 3), "%00%01%FF"},
      {"\r\n", "%0D%0A"},
  };
  for (const Case& c : cases) EXPECT_EQ(Encode(c.key), c.want) << c.key;
  const std::string longest(250, '\xfe');
  EXPECT_EQ(Encode(longest).size(), kMaxUriEncodedKey);
}

TEST(MetadumpTest, LineHasMemcachedsFieldsThenHerdlesss) {
  WalkedItem item;
  item.key = "a%b";
  item.exptime = 100;
  item.last_access = 40;
  item.cas = 77;
  item.fetched = true;
  item.slab_class = 7;
  item.size = 325;
  std::string line;
  AppendMetadumpLine(1000, item, &line);
  EXPECT_EQ(line, "key=a%25b exp=1100 la=1040 cas=77 fetch=yes cls=7 size=325 stale=no lease=no\n");
  item.exptime = 0;
  item.fetched = false;
  item.stale = true;
  item.lease_out = true;
  line.clear();
  AppendMetadumpLine(1000, item, &line);
  EXPECT_EQ(line, "key=a%25b exp=-1 la=1040 cas=77 fetch=no cls=7 size=325 stale=yes lease=yes\n");
  // A key with a read-rate estimate: its reads a second, last.
  item.reads_per_s = 24.996;
  line.clear();
  AppendMetadumpLine(1000, item, &line);
  EXPECT_EQ(line, "key=a%25b exp=-1 la=1040 cas=77 fetch=no cls=7 size=325 stale=yes lease=yes rate=25.00\n");
  // -o compat=1.6.45: 1.6.45's flags= field (and the space after it) before herdless's.
  item.reads_per_s = 0;
  item.client_flags = 9;
  line.clear();
  AppendMetadumpLine(1000, item, &line, /*with_flags=*/true);
  EXPECT_EQ(line, "key=a%25b exp=-1 la=1040 cas=77 fetch=no cls=7 size=325 flags=9 stale=yes lease=yes\n");
}

// memcached 1.6.45's crawler_mgdump_eval: the key as is, or base64 and " b".
TEST(MetadumpTest, MgdumpLineIsAnMgOfTheKey) {
  WalkedItem item;
  item.key = "foo";
  std::string line;
  AppendMgdumpLine(item, &line);
  EXPECT_EQ(line, "mg foo\r\n");
  item.binary_key = true;
  line.clear();
  AppendMgdumpLine(item, &line);
  EXPECT_EQ(line, "mg Zm9v b\r\n");
}

TEST(MetadumpTest, ParsesCrawlerClassesAsMemcached) {
  uint64_t classes = 0;
  EXPECT_TRUE(ParseCrawlerClasses("all", &classes));
  EXPECT_EQ(classes, kAllCrawlerClasses);
  EXPECT_TRUE(ParseCrawlerClasses("1,3,,63", &classes));
  EXPECT_EQ(classes, (uint64_t{1} << 1) | (uint64_t{1} << 3) | (uint64_t{1} << 63));
  for (const char* bad : {"0", "64", "x", "1,-2", "99999999999"}) {
    EXPECT_FALSE(ParseCrawlerClasses(bad, &classes)) << bad;
  }
}

class MetadumpStreamTest : public ::testing::Test {
 protected:
  MetadumpStreamTest()
      : store_(std::make_unique<ItemStore>(DrivenStoreConfig(&clock_, &random_))) {}

  void Put(const std::string& key, size_t value_len, int64_t exptime = 0) {
    ASSERT_EQ(PutFiller(store_.get(), key, value_len, exptime), StoreStatus::kStored);
  }

  // Runs a dump to its end in small passes, as a connection does.
  std::string Dump(uint64_t classes,
                   MetadumpStream::Format format = MetadumpStream::Format::kMetadump) {
    MetadumpStream dump(store_.get(), classes, format);
    ReplyBuffer out;
    std::string text;
    // A pass stops at the bound: the client (here) reads what is pending before the next.
    for (int passes = 0; passes < 100000; passes++) {
      const bool done = dump.Fill(&out, 4096, 2);
      EXPECT_LE(out.pending_bytes(), 4096u + 16384u);   // at most one step (16 buckets) past the bound
      text += Drain(&out);
      if (done) break;
    }
    EXPECT_TRUE(dump.done());
    return text;
  }

  ManualClock clock_;
  DefaultRandom random_;
  std::unique_ptr<ItemStore> store_;
};

TEST_F(MetadumpStreamTest, ListsEveryLiveItemOnceThenEnd) {
  for (int i = 0; i < 3000; i++) Put("k" + std::to_string(i), 10);
  Put("big", 300);
  Put("gone", 10, 1);
  clock_.AdvanceSeconds(2);
  const std::string text = Dump(kAllCrawlerClasses);
  ASSERT_GE(text.size(), 5u);
  EXPECT_EQ(text.substr(text.size() - 5), "END\r\n");
  std::map<std::string, int> seen;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos && text.compare(start, 3, "END");
       start = nl + 1) {
    const std::string line = text.substr(start, nl - start);
    ASSERT_EQ(line.rfind("key=", 0), 0u) << line;
    seen[line.substr(4, line.find(' ') - 4)]++;
  }
  EXPECT_EQ(seen.size(), 3001u);
  EXPECT_EQ(seen.count("gone"), 0u);   // expired
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key;
}

TEST_F(MetadumpStreamTest, ListsOnlyTheClassesAsked) {
  Put("small", 1);     // class 1
  Put("big", 300);     // class 7
  const std::string text = Dump(uint64_t{1} << 7);
  EXPECT_NE(text.find("key=big "), std::string::npos);
  EXPECT_EQ(text.find("key=small "), std::string::npos);
  EXPECT_EQ(Dump(uint64_t{1} << 2), "END\r\n");
}

TEST_F(MetadumpStreamTest, MgdumpListsMgLinesThenEn) {
  Put("small", 1);
  Put("big", 300);
  Put("gone", 10, 1);
  clock_.AdvanceSeconds(2);
  const std::string text = Dump(kAllCrawlerClasses, MetadumpStream::Format::kMgdump);
  EXPECT_TRUE(text == "mg small\r\nmg big\r\nEN\r\n" || text == "mg big\r\nmg small\r\nEN\r\n")
      << text;
  EXPECT_EQ(Dump(uint64_t{1} << 2, MetadumpStream::Format::kMgdump), "EN\r\n");
}

}  // namespace
}  // namespace herdless
