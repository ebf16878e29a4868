#include "protocol/cachedump.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "storage/clock.h"
#include "storage/item.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

TEST(CachedumpLineTest, FormatsAsMemcached) {
  struct Case {
    std::string key;
    size_t value_len;
    int64_t exptime;   // store seconds, 0 = never
    std::string want;
  } cases[] = {
      {"a:2", 5, 100, "ITEM a:2 [5 b; 1100 s]\r\n"},
      {"never", 0, 0, "ITEM never [0 b; 0 s]\r\n"},
      {"100%", 1, 0, "ITEM 100% [1 b; 0 s]\r\n"},                // not encoded
      {std::string("ab\0cd", 5), 3, 0, "ITEM ab [3 b; 0 s]\r\n"},  // strncpy stops at NUL
  };
  for (const Case& c : cases) {
    const std::string value(c.value_len, 'v');
    WalkedItem item;
    item.key = c.key;
    item.value = value;
    item.exptime = c.exptime;
    std::string line;
    AppendCachedumpLine(1000, item, &line);
    EXPECT_EQ(line, c.want);
  }
}

class CachedumpTest : public ::testing::Test {
 protected:
  CachedumpTest() : store_(std::make_unique<ItemStore>(DrivenStoreConfig(&clock_, &random_))) {}

  void Put(const std::string& key, size_t value_len, int64_t exptime = 0, bool binary = false) {
    ASSERT_EQ(PutFiller(store_.get(), key, value_len, exptime, binary), StoreStatus::kStored);
  }

  // The class `stats items` shows for an item stored by Put(key, value_len).
  int ClassOf(const std::string& key, size_t value_len) {
    WalkCursor cursor;
    int cls = -1;
    while (!cursor.done) {
      store_->Walk(&cursor, 64, [&](const WalkedItem& item) {
        if (item.key == key) cls = item.slab_class;
      });
    }
    return cls;
  }

  static std::set<std::string> Keys(const std::string& reply) {
    std::set<std::string> keys;
    size_t start = 0;
    for (size_t nl; (nl = reply.find("\r\n", start)) != std::string::npos; start = nl + 2) {
      const std::string line = reply.substr(start, nl - start);
      if (line == "END") break;
      EXPECT_EQ(line.rfind("ITEM ", 0), 0u) << line;
      keys.insert(line.substr(5, line.find(' ', 5) - 5));
    }
    return keys;
  }

  ManualClock clock_;
  DefaultRandom random_;
  std::unique_ptr<ItemStore> store_;
};

TEST_F(CachedumpTest, ListsOneClassWithLimit) {
  for (int i = 0; i < 100; i++) Put("small" + std::to_string(i), 10);
  Put("large", 5000);
  Put("gone", 10, 1);
  Put("bin", 10, 0, /*binary=*/true);
  clock_.AdvanceSeconds(2);
  const int small = ClassOf("small0", 10);
  const int large = ClassOf("large", 5000);
  ASSERT_GT(small, 0);
  ASSERT_NE(small, large);

  std::string reply;
  Cachedump(store_.get(), small, 0, &reply);
  ASSERT_GE(reply.size(), 5u);
  EXPECT_EQ(reply.substr(reply.size() - 5), "END\r\n");
  std::set<std::string> keys = Keys(reply);
  EXPECT_EQ(keys.size(), 100u);   // not "gone" (expired), "bin" (binary key) or "large"
  EXPECT_EQ(keys.count("gone") + keys.count("bin") + keys.count("large"), 0u);

  Cachedump(store_.get(), small, 7, &reply);
  EXPECT_EQ(Keys(reply).size(), 7u);

  Cachedump(store_.get(), large, 0, &reply);
  EXPECT_EQ(reply, "ITEM large [5000 b; 0 s]\r\nEND\r\n");

  Cachedump(store_.get(), 0, 0, &reply);   // memcached's class 0 is valid and empty
  EXPECT_EQ(reply, "END\r\n");
}

TEST_F(CachedumpTest, ReplyIsBoundedAtTwoMegabytes) {
  // 250-byte keys: ~270-byte lines, so 10 000 of them would pass 2 MB.
  for (int i = 0; i < 10000; i++) {
    std::string key = std::to_string(i);
    key.resize(250, 'k');
    Put(key, 10);
  }
  std::string key0 = "0";
  key0.resize(250, 'k');
  std::string reply;
  Cachedump(store_.get(), ClassOf(key0, 10), 0, &reply);
  EXPECT_LT(reply.size(), kCachedumpMaxBytes);
  EXPECT_GT(reply.size(), kCachedumpMaxBytes - 300);
  EXPECT_EQ(reply.substr(reply.size() - 5), "END\r\n");
  EXPECT_EQ(Keys(reply).size(), (reply.size() - 5) / (5 + 250 + std::string(" [10 b; 0 s]\r\n").size()));
}

}  // namespace
}  // namespace herdless
