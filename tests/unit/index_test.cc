#include "storage/index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

namespace herdless {
namespace {

// Items are stood in for by their "key": a 64-bit hash chosen by the test.
// Each item's location is unique (segment = 1 + n / 1000, offset = n % 1000);
// the hasher maps a location back to the hash the item was inserted with.
class IndexTest : public ::testing::Test, public SlotHasher {
 protected:
  uint64_t HashOf(uint64_t s) const override {
    return hashes_.at(LocationOf(slot::Segment(s), slot::Offset(s)));
  }
  static uint64_t LocationOf(uint32_t seg, uint32_t off) { return (uint64_t{seg} << 20) | off; }

  // Inserts item number n with hash h.
  void Add(uint64_t n, uint64_t h) {
    const uint32_t seg = static_cast<uint32_t>(1 + n / 1000);
    const uint32_t off = static_cast<uint32_t>(n % 1000);
    hashes_[LocationOf(seg, off)] = h;
    index_.Insert(h, slot::Make(seg, off, Index::TagOf(h), 0, 0), *this);
  }
  uint64_t* FindN(uint64_t n, uint64_t h) {
    const uint32_t seg = static_cast<uint32_t>(1 + n / 1000);
    const uint32_t off = static_cast<uint32_t>(n % 1000);
    return index_.Find(h, [&](uint64_t s) {
      return slot::Segment(s) == seg && slot::Offset(s) == off;
    });
  }
  // Walks the whole index; returns how often each location was visited.
  std::map<uint64_t, int> WalkAll(size_t step = 3) {
    std::map<uint64_t, int> seen;
    uint64_t cursor = 0;
    do {
      cursor = index_.Walk(cursor, step, [&](uint64_t* s) {
        seen[LocationOf(slot::Segment(*s), slot::Offset(*s))]++;
      });
    } while (cursor != 0);
    return seen;
  }

  Index index_;
  std::map<uint64_t, uint64_t> hashes_;
};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

TEST(SlotTest, FieldsRoundTrip) {
  const uint64_t s = slot::Make(0xABCDEF, 0xFFFFF, 0xFFF, 0x3F, 3);
  EXPECT_EQ(slot::Segment(s), 0xABCDEFu);
  EXPECT_EQ(slot::Offset(s), 0xFFFFFu);
  EXPECT_EQ(slot::Tag(s), 0xFFFu);
  EXPECT_EQ(slot::State(s), 0x3Fu);
  EXPECT_EQ(slot::Freq(s), 3u);
  const uint64_t t = slot::WithFreq(slot::WithState(slot::WithLocation(s, 7, 9), 1), 2);
  EXPECT_EQ(slot::Segment(t), 7u);
  EXPECT_EQ(slot::Offset(t), 9u);
  EXPECT_EQ(slot::Tag(t), 0xFFFu);
  EXPECT_EQ(slot::State(t), 1u);
  EXPECT_EQ(slot::Freq(t), 2u);
  EXPECT_TRUE(slot::IsItem(t));
  EXPECT_FALSE(slot::IsItem(slot::kEmpty));
}

TEST_F(IndexTest, FindsWhatWasInsertedAndNothingElse) {
  for (uint64_t n = 0; n < 100; n++) Add(n, Mix(n));
  for (uint64_t n = 0; n < 100; n++) ASSERT_NE(FindN(n, Mix(n)), nullptr) << n;
  EXPECT_EQ(FindN(500, Mix(500)), nullptr);
  EXPECT_EQ(index_.items(), 100u);
}

TEST_F(IndexTest, CollidingHashesChainAndStayApart) {
  // Forty items with one hash: same bucket, same tag. The matcher tells them apart.
  const uint64_t h = Mix(42);
  for (uint64_t n = 0; n < 40; n++) Add(n, h);
  for (uint64_t n = 0; n < 40; n++) ASSERT_NE(FindN(n, h), nullptr) << n;
  // Same bucket, other tags: never offered to the matcher.
  int offered = 0;
  const uint64_t other_tag = h ^ (uint64_t{1} << 32);
  EXPECT_EQ(index_.Find(other_tag, [&](uint64_t) { offered++; return true; }), nullptr);
  EXPECT_EQ(offered, 0);
  // Erase every other one; the rest are still found, the chain is reused.
  for (uint64_t n = 0; n < 40; n += 2) index_.Erase(FindN(n, h));
  for (uint64_t n = 0; n < 40; n++) EXPECT_EQ(FindN(n, h) != nullptr, n % 2 == 1) << n;
  for (uint64_t n = 100; n < 120; n++) Add(n, h);
  for (uint64_t n = 100; n < 120; n++) ASSERT_NE(FindN(n, h), nullptr) << n;
  EXPECT_EQ(index_.items(), 40u);
}

TEST_F(IndexTest, GrowthIsIncrementalAndLosesNothing) {
  const size_t start = index_.buckets();
  bool saw_growing = false;
  for (uint64_t n = 0; n < 20000; n++) {
    Add(n, Mix(n));
    saw_growing |= index_.growing();
    // Every item is found at every moment of a growth.
    if (n % 997 == 0) {
      for (uint64_t m = 0; m <= n; m += 7) ASSERT_NE(FindN(m, Mix(m)), nullptr) << m << " at " << n;
    }
  }
  EXPECT_TRUE(saw_growing);
  EXPECT_GE(index_.buckets(), start * 32);
  EXPECT_LE(index_.items(), Index::kGrowAtItemsPerBucket * index_.buckets());
  for (uint64_t n = 0; n < 20000; n++) ASSERT_NE(FindN(n, Mix(n)), nullptr) << n;
}

TEST_F(IndexTest, AGrowthMovesAFewBucketsPerInsert) {
  // Fill to the edge of a growth, then count the inserts until it is over.
  uint64_t n = 0;
  while (!index_.growing()) Add(n, Mix(n)), n++;
  const size_t old_buckets = index_.buckets() / 2;
  size_t inserts = 0;
  while (index_.growing()) Add(n, Mix(n)), n++, inserts++;
  // kMovesPerInsert buckets per insert (the first step moved one more).
  EXPECT_GE(inserts + 1, (old_buckets - 1) / Index::kMovesPerInsert);
  EXPECT_LE(inserts, old_buckets / Index::kMovesPerInsert + 1);
}

// The hint addresses the bucket of the table lookups start in: the old one until a
// growth has moved every bucket, then the new one.
TEST_F(IndexTest, TheBucketHintFollowsTheTableLookupsStartIn) {
  auto hint = [&](uint64_t h) { return static_cast<const char*>(index_.BucketHint(h)); };
  uint64_t n = 0;
  const size_t small = index_.buckets();
  EXPECT_EQ(hint(5), hint(5 + small));
  EXPECT_EQ(hint(6) - hint(5), 64);
  while (!index_.growing()) Add(n, Mix(n)), n++;
  EXPECT_EQ(hint(5), hint(5 + small));
  index_.FinishGrowth(*this);
  EXPECT_NE(hint(5), hint(5 + small));
  EXPECT_EQ(hint(5), hint(5 + index_.buckets()));
  EXPECT_EQ(hint(6) - hint(5), 64);
}

TEST_F(IndexTest, WalkVisitsEveryItemOnceWhileTheIndexGrows) {
  for (uint64_t n = 0; n < 3000; n++) Add(n, Mix(n));
  // Walk in small steps, inserting between steps so that the index grows
  // (possibly several times) under the cursor.
  std::map<uint64_t, int> seen;
  uint64_t cursor = 0;
  uint64_t next = 3000;
  const size_t buckets_before = index_.buckets();
  do {
    cursor = index_.Walk(cursor, 2, [&](uint64_t* s) {
      seen[LocationOf(slot::Segment(*s), slot::Offset(*s))]++;
    });
    for (int i = 0; i < 40; i++, next++) Add(next, Mix(next));
  } while (cursor != 0);
  EXPECT_GT(index_.buckets(), buckets_before * 2);
  for (uint64_t n = 0; n < 3000; n++) {
    const uint64_t loc = LocationOf(static_cast<uint32_t>(1 + n / 1000), static_cast<uint32_t>(n % 1000));
    ASSERT_EQ(seen[loc], 1) << "item " << n;
  }
  for (const auto& [loc, count] : seen) ASSERT_EQ(count, 1);
}

TEST_F(IndexTest, DeletionDuringAWalkIsSafe) {
  for (uint64_t n = 0; n < 2000; n++) Add(n, Mix(n));
  // Erase every item as it is visited, and some not yet visited.
  std::set<uint64_t> erased_ahead;
  std::map<uint64_t, int> seen;
  uint64_t cursor = 0;
  uint64_t victim = 1999;
  do {
    cursor = index_.Walk(cursor, 4, [&](uint64_t* s) {
      seen[LocationOf(slot::Segment(*s), slot::Offset(*s))]++;
      index_.Erase(s);
    });
    // An item not yet visited goes too: it must then never be visited.
    while (victim > 0) {
      uint64_t* s = FindN(victim, Mix(victim));
      victim--;
      if (s != nullptr) {
        erased_ahead.insert(LocationOf(slot::Segment(*s), slot::Offset(*s)));
        index_.Erase(s);
        break;
      }
    }
  } while (cursor != 0);
  EXPECT_EQ(index_.items(), 0u);
  EXPECT_EQ(seen.size() + erased_ahead.size(), 2000u);
  for (uint64_t loc : erased_ahead) EXPECT_EQ(seen.count(loc), 0u);
  for (const auto& [loc, count] : seen) EXPECT_EQ(count, 1);
}

TEST_F(IndexTest, WalkOfAnEmptyIndexEndsAtOnce) {
  EXPECT_TRUE(WalkAll().empty());
  EXPECT_EQ(index_.Walk(0, 1000000, [](uint64_t*) {}), 0u);
}

TEST_F(IndexTest, ReserveSizesAnEmptyIndexSoLoadingMovesNoBucket) {
  index_.Reserve(20000);
  const size_t buckets = index_.buckets();
  EXPECT_GE(buckets * Index::kGrowAtItemsPerBucket, 20000u);
  EXPECT_LT(buckets * Index::kGrowAtItemsPerBucket, 40000u);   // what growth would reach
  for (uint64_t n = 0; n < 20000; n++) {
    Add(n, Mix(n));
    ASSERT_FALSE(index_.growing()) << n;
  }
  EXPECT_EQ(index_.buckets(), buckets);
  for (uint64_t n = 0; n < 20000; n += 97) EXPECT_NE(FindN(n, Mix(n)), nullptr);
  EXPECT_EQ(WalkAll().size(), 20000u);
  index_.Reserve(1000000);   // in use: nothing changes
  EXPECT_EQ(index_.buckets(), buckets);
  for (Index::Retired& r : index_.TakeRetired()) r.Release();
}

TEST_F(IndexTest, GhostsAreFoundByTagUntilStaleAndGiveWayToItems) {
  Add(1, Mix(1));
  index_.EraseToGhost(FindN(1, Mix(1)), /*stamp=*/5);
  EXPECT_EQ(index_.items(), 0u);
  EXPECT_EQ(FindN(1, Mix(1)), nullptr);   // a ghost is not an item
  EXPECT_TRUE(WalkAll().empty());
  // Another key of the same bucket but another tag does not take it.
  EXPECT_FALSE(index_.TakeGhost(Mix(1) ^ (uint64_t{1} << 32), [](uint32_t) { return true; }));
  EXPECT_TRUE(index_.TakeGhost(Mix(1), [](uint32_t stamp) { return stamp == 5; }));
  EXPECT_FALSE(index_.TakeGhost(Mix(1), [](uint32_t) { return true; }));   // taken once
  // A stale ghost is cleared, not taken.
  Add(2, Mix(2));
  index_.EraseToGhost(FindN(2, Mix(2)), 9);
  EXPECT_FALSE(index_.TakeGhost(Mix(2), [](uint32_t) { return false; }));
  EXPECT_FALSE(index_.TakeGhost(Mix(2), [](uint32_t) { return true; }));
}

TEST_F(IndexTest, InsertsReuseGhostSlotsBeforeChaining) {
  // Fill one bucket's eight slots with ghosts, then insert: no overflow needed.
  const uint64_t h = Mix(7);
  for (uint64_t n = 0; n < 8; n++) Add(n, h);
  for (uint64_t n = 0; n < 8; n++) index_.EraseToGhost(FindN(n, h), 1);
  const size_t memory = index_.MemoryBytes();
  for (uint64_t n = 10; n < 18; n++) Add(n, h);
  EXPECT_EQ(index_.MemoryBytes(), memory);
  for (uint64_t n = 10; n < 18; n++) EXPECT_NE(FindN(n, h), nullptr);
}

TEST_F(IndexTest, FindLocationNamesTheSlotOfAnItemAtAPlace) {
  for (uint64_t n = 0; n < 50; n++) Add(n, Mix(n));
  uint64_t* s = index_.FindLocation(Mix(33), 1, 33);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s, FindN(33, Mix(33)));
  EXPECT_EQ(index_.FindLocation(Mix(33), 1, 34), nullptr);
}

}  // namespace
}  // namespace herdless
