#include "storage/eviction.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

TEST(S3FifoTest, KeepMovesReadItemsOfTheSmallQueueToMain) {
  uint8_t f = 9;
  EXPECT_FALSE(S3Fifo::Keep(SegmentQueue::kSmall, 0, &f));
  EXPECT_TRUE(S3Fifo::Keep(SegmentQueue::kSmall, 1, &f));
  EXPECT_EQ(f, 0);   // M counts its own reads
  EXPECT_TRUE(S3Fifo::Keep(SegmentQueue::kSmall, 3, &f));
  EXPECT_EQ(f, 0);
}

TEST(S3FifoTest, KeepReinsertsReadItemsOfMainWithOneReadLess) {
  uint8_t f = 9;
  EXPECT_FALSE(S3Fifo::Keep(SegmentQueue::kMain, 0, &f));
  EXPECT_TRUE(S3Fifo::Keep(SegmentQueue::kMain, 1, &f));
  EXPECT_EQ(f, 0);
  EXPECT_TRUE(S3Fifo::Keep(SegmentQueue::kMain, 3, &f));
  EXPECT_EQ(f, 2);
}

// The policy through the store, on synthetic traces with known answers. One
// shard; 2 MiB in 64 KiB segments (32 of them); ~128-byte items (~16,000 fit).
class EvictionPolicyTest : public ::testing::Test {
 protected:
  EvictionPolicyTest()
      : random_(7), config_(DrivenStoreConfig(&clock_, &random_, /*shard_bits=*/0)) {
    clock_.AdvanceSeconds(100);
    config_.memory_limit = size_t{2} << 20;
    store_ = std::make_unique<ItemStore>(config_);
  }

  static std::string Key(const char* prefix, int i) { return prefix + std::to_string(100000 + i); }
  void Put(const std::string& key) {
    StoreRequest req;
    req.key = key;
    req.value = value_;
    ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored);
  }
  bool Hit(const std::string& key, bool bump = true) {
    ReadOptions opts;
    opts.bump = bump;
    return store_->Read(key, opts).status == ReadStatus::kHit;
  }
  uint8_t Frequency(const std::string& key) {
    ReadOptions opts;
    opts.bump = false;
    return store_->Read(key, opts).frequency;
  }
  // How many items fit: fill with fresh keys until the first eviction.
  size_t Capacity() {
    int i = 0;
    while (store_->Stats().evictions == 0) Put(Key("probe", i++));
    return store_->Stats().curr_items;
  }

  ManualClock clock_;
  DefaultRandom random_;
  StoreConfig config_;
  std::unique_ptr<ItemStore> store_;
  const std::string value_ = std::string(100, 'v');
};

TEST_F(EvictionPolicyTest, FrequencySaturatesAtThree) {
  Put("k");
  for (int i = 0; i < 10; i++) {
    ReadOptions opts;
    EXPECT_EQ(store_->Read("k", opts).frequency, std::min(i, 3)) << i;
  }
  EXPECT_EQ(Frequency("k"), 3);   // a read without bump does not count
  EXPECT_EQ(Frequency("k"), 3);
}

TEST_F(EvictionPolicyTest, AHotSetSurvivesAScan) {
  const size_t capacity = Capacity();
  ASSERT_GT(capacity, 12000u);
  // A hot set of a quarter of the cache, read twice each...
  const int hot = static_cast<int>(capacity / 4);
  for (int i = 0; i < hot; i++) Put(Key("hot", i));
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < hot; i++) ASSERT_TRUE(Hit(Key("hot", i)));
  }
  // ...then a one-pass scan of three times the cache, never read again.
  for (int i = 0; i < static_cast<int>(capacity * 3); i++) Put(Key("scan", i));
  int kept = 0;
  for (int i = 0; i < hot; i++) kept += Hit(Key("hot", i));
  EXPECT_EQ(kept, hot);   // LRU would keep none of them
  const StoreStats s = store_->Stats();
  EXPECT_GE(s.moved_to_main, static_cast<uint64_t>(hot));
  EXPECT_GT(s.evictions, capacity * 2);
}

TEST_F(EvictionPolicyTest, UnreadItemsLeaveFirstInOrder) {
  const size_t capacity = Capacity();
  // FIFO among unread items: after another cache-full of stores, the oldest
  // probes are gone and the newest stores are all there.
  for (int i = 0; i < static_cast<int>(capacity); i++) Put(Key("next", i));
  EXPECT_FALSE(Hit(Key("probe", 0)));
  int newest_kept = 0;
  for (int i = static_cast<int>(capacity) - 1000; i < static_cast<int>(capacity); i++) {
    newest_kept += Hit(Key("next", i), false);
  }
  EXPECT_EQ(newest_kept, 1000);
  EXPECT_EQ(store_->Stats().moved_to_main, 0u);
}

TEST_F(EvictionPolicyTest, AGhostHitPromotesAKeyStoredAgain) {
  Put("returning");
  // The first eviction takes the oldest segment, with it unread: a ghost of it stays.
  const size_t capacity = Capacity();
  ASSERT_FALSE(Hit("returning"));
  const uint64_t ghosts_before = store_->Stats().ghost_hits;
  Put("returning");   // stored again while its ghost is fresh
  EXPECT_EQ(store_->Stats().ghost_hits, ghosts_before + 1);
  EXPECT_EQ(Frequency("returning"), S3Fifo::kMoveToMainReads);
  // So the next pass of the small queue moves it to main although it was never read.
  const uint64_t moved_before = store_->Stats().moved_to_main;
  for (int i = 0; i < static_cast<int>(2 * capacity); i++) Put(Key("more", i));
  EXPECT_TRUE(Hit("returning", false));
  EXPECT_GT(store_->Stats().moved_to_main, moved_before);
  // A key never seen before gets no read from a ghost.
  Put("brand-new");
  EXPECT_EQ(Frequency("brand-new"), 0);
}

TEST_F(EvictionPolicyTest, MainKeepsAnItemWhileItIsReadAndDropsItWhenNot) {
  const size_t capacity = Capacity();
  // Churn where every new key is read once: each moves to main, which then
  // cycles as fast as keys arrive. Two cache-fulls of it reach a steady state.
  int n = 0;
  auto churn = [&](size_t count) {
    for (size_t i = 0; i < count; i++, n++) {
      Put(Key("churn", n));
      ASSERT_TRUE(Hit(Key("churn", n)));
    }
  };
  churn(2 * capacity);
  Put("k");
  ASSERT_TRUE(Hit("k"));
  // Read four times per cache-full of churn, "k" stays...
  for (int quarter = 0; quarter < 12; quarter++) {
    churn(capacity / 4);
    ASSERT_TRUE(Hit("k")) << quarter;
  }
  EXPECT_GT(store_->Stats().main_reinserted, 0u);
  // ...and unread, it goes: its saturated count buys it three more passes of main.
  churn(capacity * 5);
  EXPECT_FALSE(Hit("k", false));
}

TEST_F(EvictionPolicyTest, ExpiredAndStaleItemsGoEvenWhenRead) {
  Put("live");
  StoreRequest ttl;
  ttl.key = "short";
  ttl.value = value_;
  ttl.exptime = 5;
  store_->Store(ttl);
  Put("invalidated");
  for (const char* k : {"live", "short", "invalidated"}) ASSERT_TRUE(Hit(k));
  DeleteRequest inv;
  inv.key = "invalidated";
  inv.mark_stale = true;
  ASSERT_EQ(store_->Delete(inv), DeleteStatus::kDeleted);
  clock_.AdvanceSeconds(5);
  const size_t capacity = Capacity();
  for (int i = 0; i < static_cast<int>(capacity); i++) Put(Key("fill", i));
  EXPECT_TRUE(Hit("live", false));          // read: moved to main
  ReadOptions meta;
  meta.kind = ReadKind::kMeta;
  EXPECT_EQ(store_->Read("invalidated", meta).status, ReadStatus::kMiss);   // read, but stale
  EXPECT_GE(store_->Stats().reclaimed, 1u);  // "short": read, but expired
}

}  // namespace
}  // namespace herdless
