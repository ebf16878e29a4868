#include "storage/segments.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "storage/eviction.h"
#include "storage/item.h"

namespace herdless {
namespace {

constexpr size_t kSeg = size_t{16} << 10;

class SegmentPoolTest : public ::testing::Test {
 protected:
  SegmentPool pool_{kSeg, 4 * kSeg};
};

TEST(SegmentSizeTest, AboutA512thOfTheLimitWithinBounds) {
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{256} << 20), size_t{512} << 10);
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{1} << 30), size_t{1} << 20);
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{64} << 30), size_t{1} << 20);
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{64} << 20), size_t{128} << 10);
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{16} << 20), size_t{64} << 10);
  EXPECT_EQ(SegmentPool::SegmentSizeFor(size_t{1} << 20), size_t{64} << 10);
  // A limit of a few KiB still gets a few segments.
  EXPECT_LE(SegmentPool::SegmentSizeFor(4096) * 4, size_t{4096});
  EXPECT_EQ(SegmentPool::SegmentSizeFor(64 * 1024), size_t{16} << 10);
}

TEST_F(SegmentPoolTest, TheBudgetCountsWholeSegmentsAndStopsAtTheLimit) {
  std::vector<Segment*> taken;
  for (int i = 0; i < 4; i++) {
    Segment* s = pool_.TakeFixed(0, false);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->capacity, kSeg);
    EXPECT_EQ(s->state.load(), SegmentState::kOpen);
    EXPECT_EQ(pool_.Get(s->id), s);
    taken.push_back(s);
  }
  EXPECT_EQ(pool_.used(), 4 * kSeg);
  EXPECT_EQ(pool_.TakeFixed(0, false), nullptr);
  // The evictor may take one past the limit, not two.
  Segment* extra = pool_.TakeFixed(0, true);
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(pool_.TakeFixed(0, true), nullptr);
  EXPECT_EQ(pool_.used(), 5 * kSeg);
  pool_.Retire(extra);
  EXPECT_EQ(pool_.used(), 4 * kSeg);
  for (Segment* s : taken) pool_.Retire(s);
  EXPECT_EQ(pool_.used(), 0u);
  EXPECT_EQ(pool_.FixedInUse(), 0u);
}

TEST_F(SegmentPoolTest, ARetiredSegmentWaitsForItsLastPin) {
  Segment* s = pool_.TakeFixed(0, false);
  s->Pin();
  s->Pin();
  pool_.Retire(s);
  EXPECT_EQ(pool_.FixedInUse(), 1u);   // pinned: not reusable yet
  EXPECT_EQ(pool_.used(), kSeg);
  EXPECT_TRUE(pool_.AnyPinned());
  ReleasePin(s);
  EXPECT_EQ(pool_.FixedInUse(), 1u);
  ReleasePin(s);
  EXPECT_EQ(pool_.FixedInUse(), 0u);
  EXPECT_EQ(pool_.used(), 0u);
  EXPECT_FALSE(pool_.AnyPinned());
}

TEST(SegmentPoolSmallTest, FreeingASegmentSmallerThanAPageKeepsItsNeighboursBytes) {
  // A limit of a few KiB has 1 KiB segments, several to a page: giving one
  // segment's memory back to the kernel would zero the others'.
  SegmentPool pool(1024, 16 * 1024);
  std::vector<Segment*> segs;
  for (int i = 0; i < 16; i++) {
    Segment* s = pool.TakeFixed(0, false);
    ASSERT_NE(s, nullptr);
    std::memset(s->base, 'a' + i, 1024);
    segs.push_back(s);
  }
  for (int i = 0; i < 16; i += 2) pool.Retire(segs[i]);   // more free than the warm ones
  for (int i = 1; i < 16; i += 2) {
    for (size_t b = 0; b < 1024; b++) ASSERT_EQ(segs[i]->base[b], 'a' + i) << i << " " << b;
  }
  for (int i = 1; i < 16; i += 2) pool.Retire(segs[i]);
}

TEST_F(SegmentPoolTest, JumbosAreChargedTheirBlockAndFreedOnRetire) {
  Segment* j = pool_.NewJumbo(3 * kSeg, 0);
  ASSERT_NE(j, nullptr);
  EXPECT_TRUE(j->jumbo);
  EXPECT_EQ(pool_.used(), SegmentPool::JumboCharge(3 * kSeg));
  EXPECT_EQ(pool_.Get(j->id), j);
  EXPECT_EQ(pool_.NewJumbo(2 * kSeg, 0), nullptr);   // over the limit
  std::memset(j->base, 'x', 3 * kSeg);
  pool_.Retire(j);
  EXPECT_EQ(pool_.used(), 0u);
  EXPECT_EQ(pool_.JumboCount(), 0u);
}

TEST_F(SegmentPoolTest, AppendFillsASegmentThenSealsItIntoItsQueue) {
  S3Fifo queues(&pool_);
  S3Fifo::Place a, b, c;
  ASSERT_TRUE(queues.Append(SegmentQueue::kSmall, 10000, 0, false, &a));
  ASSERT_TRUE(queues.Append(SegmentQueue::kSmall, 6000, 0, false, &b));
  EXPECT_EQ(a.segment, b.segment);
  EXPECT_EQ(b.offset, 10000u);
  ASSERT_TRUE(queues.Append(SegmentQueue::kSmall, 1000, 0, false, &c));   // does not fit: a new one
  EXPECT_NE(c.segment, a.segment);
  EXPECT_EQ(c.offset, 0u);
  EXPECT_EQ(queues.SegmentsIn(SegmentQueue::kSmall), 2u);
  // The sealed one is the victim once its bytes are written.
  a.segment->live_items = 2;
  a.segment->written = 16000;
  EXPECT_EQ(queues.PopVictim(), a.segment);
  pool_.Retire(a.segment);
  c.segment->written = 1000;
  queues.RetireAll();
  EXPECT_EQ(pool_.used(), 0u);
}

TEST_F(SegmentPoolTest, AnEmptiedQueuedSegmentIsRetiredAtOnce) {
  S3Fifo queues(&pool_);
  S3Fifo::Place a, b;
  ASSERT_TRUE(queues.Append(SegmentQueue::kSmall, 16000, 0, false, &a));
  a.segment->live_items = 1;
  a.segment->written = 16000;
  ASSERT_TRUE(queues.Append(SegmentQueue::kSmall, 1000, 0, false, &b));   // seals a
  EXPECT_EQ(pool_.FixedInUse(), 2u);
  a.segment->live_items = 0;
  queues.OnEmptied(a.segment);
  EXPECT_EQ(pool_.FixedInUse(), 1u);
  b.segment->written = 1000;
  queues.RetireAll();
}

}  // namespace
}  // namespace herdless
