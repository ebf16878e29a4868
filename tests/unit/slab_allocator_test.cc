#include "storage/slab_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <set>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace herdless {
namespace {

constexpr size_t kPage = SlabAllocator::kPageSize;

class SlabAllocatorTest : public ::testing::Test {
 protected:
  void SetLimitPages(size_t pages) { limit_.store(pages * kPage); }

  // Allocates until the class has no chunk left; returns the chunks.
  std::vector<void*> Fill(int cls) {
    std::vector<void*> chunks;
    while (void* c = slabs_.Allocate(cls)) chunks.push_back(c);
    return chunks;
  }

  std::atomic<size_t> used_{0};
  std::atomic<size_t> limit_{64 * kPage};
  SlabAllocator slabs_{&used_, &limit_};
};

// Frees every pinned chunk unless it is in `held` (a reader still has it);
// `unpinnable` chunks are refused at Pin (not yet published).
class TestEvictor : public ChunkEvictor {
 public:
  bool Pin(void* chunk) override {
    if (unpinnable.count(chunk) != 0) return false;
    pinned++;
    return true;
  }
  void Evict(void* chunk) override {
    if (held.count(chunk) != 0) return;
    evicted++;
    SlabAllocator::Free(chunk);
  }
  std::set<void*> held;
  std::set<void*> unpinnable;
  int pinned = 0;
  int evicted = 0;
};

TEST_F(SlabAllocatorTest, ClassesFitEveryRequestWithAtMostSixPercentRounding) {
  for (size_t n = 1; n <= SlabAllocator::kMaxChunk; n++) {
    const int cls = SlabAllocator::ClassFor(n);
    ASSERT_GT(cls, SlabAllocator::kNoClass) << n;
    const size_t size = SlabAllocator::ChunkSize(cls);
    ASSERT_GE(size, n);
    ASSERT_EQ(size % 8, 0u);
    ASSERT_LE(size, std::max<size_t>(16, n + n / 16 + 7)) << n;
    if (cls > 1) {
      ASSERT_LT(SlabAllocator::ChunkSize(cls - 1), n) << "not the smallest fit: " << n;
    }
  }
  EXPECT_EQ(SlabAllocator::ClassFor(SlabAllocator::kMaxChunk + 1), SlabAllocator::kNoClass);
  EXPECT_LE(SlabAllocator::ClassCount(), 255);
}

TEST_F(SlabAllocatorTest, TypicalItemsGetTightClasses) {
  // 64-byte header + 14-byte key + value + CRLF: memcached's chunks are 192 and 1184.
  EXPECT_EQ(SlabAllocator::ChunkSize(SlabAllocator::ClassFor(180)), 184u);
  EXPECT_EQ(SlabAllocator::ChunkSize(SlabAllocator::ClassFor(1080)), 1088u);
}

TEST_F(SlabAllocatorTest, ChunksAreDistinctAlignedAndFreshOnesReadAsZero) {
  const int cls = SlabAllocator::ClassFor(100);
  const size_t size = SlabAllocator::ChunkSize(cls);
  std::vector<char*> chunks;
  for (int i = 0; i < 100; i++) {
    char* c = static_cast<char*>(slabs_.Allocate(cls));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 8, 0u);
    EXPECT_TRUE(std::all_of(c, c + size, [](char b) { return b == 0; }));
    std::memset(c, 0x5a, size);  // would corrupt a neighbour if chunks overlapped
    chunks.push_back(c);
  }
  std::sort(chunks.begin(), chunks.end());
  for (size_t i = 1; i < chunks.size(); i++) EXPECT_GE(chunks[i] - chunks[i - 1], ptrdiff_t(size));
  for (char* c : chunks) SlabAllocator::Free(c);
  EXPECT_EQ(slabs_.ChunksInUse(cls), 0u);
}

TEST_F(SlabAllocatorTest, AFreedChunkIsReusedBeforeNewMemory) {
  const int cls = SlabAllocator::ClassFor(500);
  void* a = slabs_.Allocate(cls);
  void* b = slabs_.Allocate(cls);
  SlabAllocator::Free(a);
  EXPECT_EQ(slabs_.Allocate(cls), a);
  EXPECT_EQ(slabs_.ChunksInUse(cls), 2u);
  SlabAllocator::Free(a);
  SlabAllocator::Free(b);
}

#if defined(__SANITIZE_ADDRESS__)
TEST_F(SlabAllocatorTest, FreedChunksArePoisonedUnderAsan) {
  const int cls = SlabAllocator::ClassFor(200);
  char* c = static_cast<char*>(slabs_.Allocate(cls));
  EXPECT_FALSE(__asan_address_is_poisoned(c + 100));
  SlabAllocator::Free(c);
  EXPECT_TRUE(__asan_address_is_poisoned(c + 100));  // a use after free is reported
  EXPECT_EQ(slabs_.Allocate(cls), c);
  EXPECT_FALSE(__asan_address_is_poisoned(c + 100));
  SlabAllocator::Free(c);
}
#endif

TEST_F(SlabAllocatorTest, TheBudgetCountsWholePages) {
  SetLimitPages(2);
  const int cls = SlabAllocator::ClassFor(1000);
  EXPECT_EQ(used_.load(), 0u);
  void* first = slabs_.Allocate(cls);
  EXPECT_EQ(used_.load(), kPage);  // one chunk holds a whole page
  std::vector<void*> chunks = Fill(cls);
  EXPECT_EQ(chunks.size() + 1, 2 * SlabAllocator::ChunksPerPage(cls));
  EXPECT_EQ(used_.load(), 2 * kPage);
  EXPECT_EQ(slabs_.PageCount(), 2u);
  // Another class gets nothing while the budget is spent...
  EXPECT_EQ(slabs_.Allocate(SlabAllocator::ClassFor(100)), nullptr);
  // ...and freed chunks stay with their class (the page is not given back).
  for (void* c : chunks) SlabAllocator::Free(c);
  SlabAllocator::Free(first);
  EXPECT_EQ(used_.load(), 2 * kPage);
  EXPECT_EQ(slabs_.PagesOfClass(cls), 2u);
  EXPECT_EQ(slabs_.Allocate(SlabAllocator::ClassFor(100)), nullptr);
}

TEST_F(SlabAllocatorTest, DrainingAPageUnmapsItAndLetsAnotherClassUseTheBudget) {
  SetLimitPages(2);
  const int big = SlabAllocator::ClassFor(1000);
  const int small = SlabAllocator::ClassFor(100);
  std::vector<void*> chunks = Fill(big);
  ASSERT_EQ(used_.load(), 2 * kPage);
  ASSERT_EQ(slabs_.Allocate(small), nullptr);

  SlabAllocator::Page* victim = slabs_.ClaimVictimPage(chunks.front());
  ASSERT_NE(victim, nullptr);
  TestEvictor evictor;
  EXPECT_TRUE(slabs_.DrainPage(victim, &evictor));
  EXPECT_EQ(evictor.evicted, static_cast<int>(SlabAllocator::ChunksPerPage(big)));
  EXPECT_EQ(used_.load(), kPage);
  EXPECT_EQ(slabs_.PagesOfClass(big), 1u);
  void* c = slabs_.Allocate(small);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(slabs_.PagesOfClass(small), 1u);
  SlabAllocator::Free(c);
  // Draining the rest frees exactly the big chunks that survived.
  TestEvictor rest;
  while (SlabAllocator::Page* p = slabs_.ClaimVictimPage(nullptr)) {
    EXPECT_TRUE(slabs_.DrainPage(p, &rest));
  }
  EXPECT_EQ(rest.evicted, static_cast<int>(SlabAllocator::ChunksPerPage(big)));
  EXPECT_EQ(used_.load(), 0u);
}

TEST_F(SlabAllocatorTest, AHeldChunkKeepsItsDrainedPageUntilItIsFreed) {
  SetLimitPages(1);
  const int cls = SlabAllocator::ClassFor(2000);
  std::vector<void*> chunks = Fill(cls);
  ASSERT_FALSE(chunks.empty());
  TestEvictor evictor;
  evictor.held.insert(chunks[3]);            // a reader still has it
  evictor.unpinnable.insert(chunks[5]);      // built but not yet published
  SlabAllocator::Page* page = slabs_.ClaimVictimPage(nullptr);
  ASSERT_NE(page, nullptr);
  EXPECT_FALSE(slabs_.DrainPage(page, &evictor));
  EXPECT_EQ(evictor.pinned, static_cast<int>(chunks.size()) - 1);
  EXPECT_EQ(slabs_.ChunksInUse(cls), 2u);
  EXPECT_TRUE(slabs_.IsDraining(chunks[3]));
  EXPECT_EQ(used_.load(), kPage);
  // A draining page hands out nothing, and is never claimed twice.
  EXPECT_EQ(slabs_.Allocate(cls), nullptr);
  EXPECT_EQ(slabs_.ClaimVictimPage(nullptr), nullptr);

  SlabAllocator::Free(chunks[3]);
  EXPECT_EQ(slabs_.PageCount(), 1u);
  SlabAllocator::Free(chunks[5]);  // the last chunk: the page goes
  EXPECT_EQ(slabs_.PageCount(), 0u);
  EXPECT_EQ(used_.load(), 0u);
  void* c = slabs_.Allocate(cls);
  EXPECT_NE(c, nullptr);
  SlabAllocator::Free(c);
}

TEST_F(SlabAllocatorTest, TheVictimIsTheEmptiestPageUnlessEveryPageIsMostlyFull) {
  SetLimitPages(3);
  const int a = SlabAllocator::ClassFor(4000);
  const int b = SlabAllocator::ClassFor(8000);
  std::vector<void*> full = Fill(a);  // three full pages of class a
  const size_t per_page = SlabAllocator::ChunksPerPage(a);
  ASSERT_EQ(full.size(), 3 * per_page);
  // Empty most of the page holding full[0].
  std::vector<void*> kept;
  for (void* c : full) {
    if ((reinterpret_cast<uintptr_t>(c) & ~(kPage - 1)) ==
            (reinterpret_cast<uintptr_t>(full[0]) & ~(kPage - 1)) &&
        c != full[0]) {
      SlabAllocator::Free(c);
    } else {
      kept.push_back(c);
    }
  }
  const void* hint = full.back();  // on a full page
  SlabAllocator::Page* victim = slabs_.ClaimVictimPage(hint);
  TestEvictor evictor;
  ASSERT_TRUE(slabs_.DrainPage(victim, &evictor));
  EXPECT_EQ(evictor.evicted, 1);  // only full[0] lived on the emptiest page
  // Now both pages are full: the hint's page is taken.
  SlabAllocator::Page* second = slabs_.ClaimVictimPage(hint);
  TestEvictor evictor2;
  ASSERT_TRUE(slabs_.DrainPage(second, &evictor2));
  EXPECT_EQ(evictor2.evicted, static_cast<int>(per_page));
  EXPECT_NE(slabs_.Allocate(b), nullptr);  // the budget moved to class b
  EXPECT_EQ(slabs_.PagesOfClass(a), 1u);
  // Leave no chunk behind for the destructor.
  TestEvictor rest;
  SlabAllocator::Page* p;
  while ((p = slabs_.ClaimVictimPage(nullptr)) != nullptr) slabs_.DrainPage(p, &rest);
  EXPECT_EQ(slabs_.PageCount(), 0u);
  EXPECT_EQ(used_.load(), 0u);
}

TEST_F(SlabAllocatorTest, AFullPageEmptiedToHalfIsSlackAndClaimedFirst) {
  SetLimitPages(3);
  const int cls = SlabAllocator::ClassFor(1000);
  const size_t per_page = SlabAllocator::ChunksPerPage(cls);
  std::vector<void*> chunks = Fill(cls);  // three full pages
  ASSERT_EQ(chunks.size(), 3 * per_page);
  EXPECT_EQ(slabs_.SlackPages(), 0u);
  // Chunks are carved in order: the middle page holds chunks[per_page, 2 * per_page).
  for (size_t i = per_page; i < per_page + per_page / 2; i++) SlabAllocator::Free(chunks[i]);
  EXPECT_EQ(slabs_.SlackPages(), 0u);  // just over half still in use
  SlabAllocator::Free(chunks[per_page + per_page / 2]);
  EXPECT_EQ(slabs_.SlackPages(), 1u);
  // Taking a chunk back makes it more than half full again.
  void* again = slabs_.Allocate(cls);
  EXPECT_EQ(slabs_.SlackPages(), 0u);
  SlabAllocator::Free(again);
  ASSERT_EQ(slabs_.SlackPages(), 1u);

  // The slack page is claimed even when the hint points elsewhere.
  SlabAllocator::Page* victim = slabs_.ClaimVictimPage(chunks.front());
  TestEvictor evictor;
  ASSERT_TRUE(slabs_.DrainPage(victim, &evictor));
  EXPECT_EQ(evictor.evicted, static_cast<int>(per_page - per_page / 2 - 1));
  EXPECT_EQ(slabs_.SlackPages(), 0u);
  EXPECT_EQ(slabs_.PageCount(), 2u);
  TestEvictor rest;
  while (SlabAllocator::Page* p = slabs_.ClaimVictimPage(nullptr)) slabs_.DrainPage(p, &rest);
  EXPECT_EQ(used_.load(), 0u);
}

TEST_F(SlabAllocatorTest, ConcurrentAllocateAndFreeKeepCountsExact) {
  SetLimitPages(1024);   // room for every thread's live chunks (~16 MiB)
  const int cls = SlabAllocator::ClassFor(300);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      std::deque<void*> mine;
      for (int i = 0; i < 20000; i++) {
        void* c = slabs_.Allocate(cls);
        ASSERT_NE(c, nullptr);
        std::memset(c, t, SlabAllocator::ChunkSize(cls));
        mine.push_back(c);
        if (i % 3 == 2) {
          SlabAllocator::Free(mine.front());
          mine.pop_front();
        }
      }
      for (void* c : mine) SlabAllocator::Free(c);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(slabs_.ChunksInUse(cls), 0u);
  EXPECT_LE(used_.load(), limit_.load());
}

}  // namespace
}  // namespace herdless
