// A connection's input and reply buffers hold cache blocks only while they
// hold bytes: once empty they give them back, so an idle connection holds none.
#include "protocol/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/input_buffer.h"
#include "protocol/reply.h"

namespace herdless {
namespace {

TEST(BlockCacheTest, KeepsAtMostMaxFreeBlocks) {
  BlockCache cache(2);
  std::vector<char*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(BlockCache::Take(&cache));
  for (char* b : blocks) BlockCache::Give(&cache, b);
  EXPECT_EQ(cache.free_blocks(), 2u);
  char* again = BlockCache::Take(&cache);   // a kept block comes back first
  EXPECT_TRUE(again == blocks[0] || again == blocks[1]);
  BlockCache::Give(&cache, again);
}

struct ReplyCase {
  const char* name;
  std::vector<size_t> appends;   // string sizes appended
  size_t consumed;               // bytes written before ReleaseIdle (all: SIZE_MAX)
  size_t cached;                 // free blocks after ReleaseIdle
};

TEST(BlockCacheTest, ReplyBufferGivesItsChunksBackOnlyWhenIdle) {
  const size_t kAll = SIZE_MAX, kBlock = BlockCache::kBlockSize;
  const ReplyCase cases[] = {
      {"one short reply", {10}, kAll, 1},
      {"a second chunk", {10, kBlock}, kAll, 2},
      {"an oversized string has its own chunk", {2 * kBlock}, kAll, 0},
      {"short then oversized", {10, 2 * kBlock}, kAll, 1},
      {"bytes still owed", {10}, 5, 0},
  };
  for (const ReplyCase& c : cases) {
    SCOPED_TRACE(c.name);
    BlockCache cache;
    ReplyBuffer out;
    out.set_caches(&cache, nullptr);
    size_t total = 0;
    for (size_t n : c.appends) {
      out.Append(std::string(n, 'x'));
      total += n;
    }
    out.Consume(c.consumed == kAll ? total : c.consumed);
    out.ReleaseIdle();
    EXPECT_EQ(cache.free_blocks(), c.cached);
    EXPECT_EQ(out.pending_bytes(), c.consumed == kAll ? 0 : total - c.consumed);
    out.Append("again");   // usable after the release, from the cache
    EXPECT_EQ(out.pending_bytes(), (c.consumed == kAll ? 0 : total - c.consumed) + 5);
  }
}

TEST(BlockCacheTest, ReplyBufferHoldsAQueueOnlyWhileItOwesBytes) {
  BlockCache blocks;
  ReplyQueueCache queues(1);
  ReplyBuffer a;
  ReplyBuffer b;
  a.set_caches(&blocks, &queues);
  b.set_caches(&blocks, &queues);
  a.ReleaseIdle();   // never used: nothing to give
  EXPECT_EQ(queues.free_queues(), 0u);
  a.Append("STORED\r\n");
  a.ReleaseIdle();   // owed: keeps it
  EXPECT_EQ(queues.free_queues(), 0u);
  a.Consume(8);
  a.ReleaseIdle();
  EXPECT_EQ(queues.free_queues(), 1u);
  EXPECT_EQ(a.pending_bytes(), 0u);
  // Two busy buffers: one takes the spare, the other a new queue; the cache
  // keeps one of them when both go idle (max_free 1), frees the other.
  a.Append("END\r\n");
  b.Append("VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(queues.free_queues(), 0u);
  EXPECT_EQ(a.pending_bytes(), 5u);
  a.Consume(5);
  b.Consume(b.pending_bytes());
  a.ReleaseIdle();
  b.ReleaseIdle();
  EXPECT_EQ(queues.free_queues(), 1u);
  // A pipelined burst's long piece array comes back as a usable spare.
  for (int i = 0; i < 100; ++i) {
    a.Append("x");
    a.Append(std::string(BlockCache::kBlockSize, 'y'));   // its own chunk: a piece each
  }
  a.Consume(a.pending_bytes());
  a.ReleaseIdle();
  EXPECT_EQ(queues.free_queues(), 1u);
  a.Append("again");
  struct iovec iov[4];
  ASSERT_EQ(a.FillIovecs(iov, 4), 1);
  EXPECT_EQ(std::string(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len), "again");
}

// A spare queue keeps its emptied chunk, so a connection's next reply takes
// no block; only the first max_chunked spares do (a stack: their places never
// change), and the rest give their chunk to the BlockCache.
TEST(BlockCacheTest, SpareQueuesKeepAChunkUpToTheirBound) {
  BlockCache blocks;
  ReplyQueueCache queues(/*max_free=*/4, /*max_chunked=*/2);
  ReplyBuffer out[4];
  for (ReplyBuffer& b : out) {
    b.set_caches(&blocks, &queues);
    b.Append("STORED\r\n");   // each takes a new queue and a new block
  }
  for (ReplyBuffer& b : out) {
    b.Consume(b.pending_bytes());
    b.ReleaseIdle();
  }
  EXPECT_EQ(queues.free_queues(), 4u);
  EXPECT_EQ(queues.chunked_queues(), 2u);
  EXPECT_EQ(blocks.free_blocks(), 2u);
  // Taken back in reverse: the two chunkless spares first, which take the
  // cached blocks; then the two chunked ones, which take none.
  for (int i = 3; i >= 0; --i) out[i].Append("END\r\n");
  EXPECT_EQ(blocks.free_blocks(), 0u);
  EXPECT_EQ(queues.free_queues(), 0u);
  for (ReplyBuffer& b : out) {
    struct iovec iov[2];
    ASSERT_EQ(b.FillIovecs(iov, 2), 1);
    EXPECT_EQ(std::string(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len), "END\r\n");
  }
  // A spare whose last reply had an oversized chunk of its own keeps no chunk.
  out[0].Consume(out[0].pending_bytes());
  out[0].Append(std::string(2 * BlockCache::kBlockSize, 'v'));
  out[0].Consume(out[0].pending_bytes());
  out[0].ReleaseIdle();
  EXPECT_EQ(queues.chunked_queues(), 0u);
}

TEST(BlockCacheTest, InputBufferHoldsABlockOnlyWhileItHoldsBytes) {
  BlockCache cache;
  InputBuffer in(1 << 20, &cache);
  in.ReleaseIfEmpty();   // never read: nothing to give
  EXPECT_EQ(cache.free_blocks(), 0u);
  size_t room = 0;
  char* dest = in.Room(&room);
  ASSERT_GE(room, 4u);
  std::memcpy(dest, "get ", 4);
  in.Commit(4);
  in.ReleaseIfEmpty();   // a partial request stays
  EXPECT_EQ(in.view(), "get ");
  EXPECT_EQ(cache.free_blocks(), 0u);
  in.Drop(4);
  in.ReleaseIfEmpty();
  EXPECT_EQ(cache.free_blocks(), 1u);
  in.Room(&room);   // the next read takes it back
  EXPECT_EQ(cache.free_blocks(), 0u);
  EXPECT_EQ(room, BlockCache::kBlockSize);
}

}  // namespace
}  // namespace herdless
