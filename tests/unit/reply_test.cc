#include "protocol/reply.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "storage/item.h"
#include "storage/segments.h"

namespace herdless {
namespace {

// Every pending byte, in order, as the iovecs present them.
std::string Pending(const ReplyBuffer& buf) {
  std::vector<struct iovec> iov(4096);
  int n = buf.FillIovecs(iov.data(), static_cast<int>(iov.size()));
  std::string s;
  for (int i = 0; i < n; ++i) s.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return s;
}

// The first `n` pending bytes (fewer if fewer are pending).
std::string PendingPrefix(const ReplyBuffer& buf, size_t n) {
  struct iovec iov[64];
  int count = buf.FillIovecs(iov, 64);
  std::string s;
  for (int i = 0; i < count && s.size() < n; ++i)
    s.append(static_cast<const char*>(iov[i].iov_base), std::min(iov[i].iov_len, n - s.size()));
  return s;
}

int SegmentCount(const ReplyBuffer& buf) {
  std::vector<struct iovec> iov(4096);
  return buf.FillIovecs(iov.data(), static_cast<int>(iov.size()));
}

// Bytes standing for an item in a segment the test owns: ItemRefs pin the
// segment, and Refs() counts the test's own reference plus the pins.
struct Item {
  Item(std::string_view k, std::string_view v) : bytes(std::string(k) + std::string(v) + "\r\n"),
                                                 key_len(k.size()), value_len(v.size()) {}
  std::string_view key() const { return std::string_view(bytes).substr(0, key_len); }
  std::string_view value() const { return std::string_view(bytes).substr(key_len, value_len); }
  std::string_view value_with_crlf() const { return std::string_view(bytes).substr(key_len); }
  const char* value_data() const { return bytes.data() + key_len; }
  std::string bytes;
  size_t key_len;
  size_t value_len;
  Segment segment;
};

Item* MakeItem(std::string_view key, std::string_view value) { return new Item(key, value); }

uint64_t Refs(const Item* item) { return 1 + item->segment.pins.load(); }

ItemRef Share(Item* item) {
  item->segment.Pin();
  return ItemRef(&item->segment);
}

void ReleaseItem(Item* item) {
  ASSERT_EQ(item->segment.pins.load(), 0u);
  delete item;
}

// A value too big to be copied: it is sent from the item in place.
std::string Large(std::string_view head, char fill = 'v') {
  return std::string(head) + std::string(600, fill);
}

// The start of a get's reply for a Large value of "key" (605 bytes): its
// VALUE line copied, then the value sent from the item in place.
void AppendLargeValue(ReplyBuffer* buf, Item* item) {
  buf->Append("VALUE key 0 605\r\n");
  buf->AppendItemBytes(Share(item), item->value_with_crlf());
}

TEST(ReplyBufferTest, StartsEmpty) {
  ReplyBuffer buf;
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(buf.pending_bytes(), 0u);
  EXPECT_EQ(SegmentCount(buf), 0);
}

TEST(ReplyBufferTest, AdjacentCopiesMergeIntoOneSegment) {
  ReplyBuffer buf;
  buf.Append("STORED\r\n");
  buf.Append("END\r\n");
  buf.AppendNumber(42);
  buf.Append("\r\n");
  EXPECT_EQ(Pending(buf), "STORED\r\nEND\r\n42\r\n");
  EXPECT_EQ(SegmentCount(buf), 1);
  EXPECT_EQ(buf.pending_bytes(), 17u);
}

TEST(ReplyBufferTest, EmptyAppendAddsNothing) {
  ReplyBuffer buf;
  buf.Append("");
  EXPECT_TRUE(buf.empty());
}

TEST(ReplyBufferTest, AppendNumberWritesDecimal) {
  const uint64_t values[] = {0, 1, 9, 10, 99, 100, 12345, 4294967295u, 4294967296u,
                             std::numeric_limits<uint64_t>::max()};
  for (uint64_t v : values) {
    ReplyBuffer buf;
    buf.AppendNumber(v);
    EXPECT_EQ(Pending(buf), std::to_string(v));
  }
}

TEST(ReplyBufferTest, AppendSignedNumberWritesSign) {
  const int64_t values[] = {0, 1, -1, 59, -59, std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) {
    ReplyBuffer buf;
    buf.AppendSignedNumber(v);
    EXPECT_EQ(Pending(buf), std::to_string(v));
  }
}

// A line gathered in a ReplyLine reads as the same pieces appended one by one, whatever its
// length: short, just over the stack buffer (768), a piece longer than it, numbers at its edge.
TEST(ReplyLineTest, GathersTheSamePiecesAsSeparateAppends) {
  for (size_t filler = 0; filler < 1700; filler += filler < 600 ? 100 : 1) {
    ReplyBuffer gathered, direct;
    {
      ReplyLine line(&gathered);
      line.Append("VA ");
      line.AppendNumber(100);
      line.Append(" k");
      line.Append(std::string(filler, 'k'));
      line.Append(" c");
      line.AppendNumber(std::numeric_limits<uint64_t>::max());
      line.Append(" t");
      line.AppendSignedNumber(std::numeric_limits<int64_t>::min());
      line.AppendSignedNumber(-1);
      line.AppendFlag('s', 100);
      line.AppendSignedFlag('t', -1);
      line.AppendSignedFlag('t', std::numeric_limits<int64_t>::min());
      line.AppendFlag('c', std::numeric_limits<uint64_t>::max());
      line.End();
    }
    direct.Append("VA ");
    direct.AppendNumber(100);
    direct.Append(" k");
    direct.Append(std::string(filler, 'k'));
    direct.Append(" c");
    direct.AppendNumber(std::numeric_limits<uint64_t>::max());
    direct.Append(" t");
    direct.AppendSignedNumber(std::numeric_limits<int64_t>::min());
    direct.AppendSignedNumber(-1);
    direct.Append(" s100 t-1 t");
    direct.AppendSignedNumber(std::numeric_limits<int64_t>::min());
    direct.Append(" c");
    direct.AppendNumber(std::numeric_limits<uint64_t>::max());
    direct.Append("\r\n");
    EXPECT_EQ(Pending(gathered), Pending(direct)) << filler;
  }
}

TEST(ReplyLineTest, WritesOnlyAtItsEndOrWhenDestroyed) {
  ReplyBuffer buf;
  {
    ReplyLine line(&buf);
    line.Append("HD");
    EXPECT_TRUE(buf.empty());
    line.End();
    EXPECT_EQ(Pending(buf), "HD\r\n");
    line.Append("EN");
  }
  EXPECT_EQ(Pending(buf), "HD\r\nEN");
}

// The items an unsent reply shows are held until everything owed is written
// (or ReleaseHeld(): a point where memcached flushes).
TEST(ReplyBufferTest, HeldItemsLastUntilTheRepliesAreWritten) {
  ReplyBuffer out;
  EXPECT_TRUE(out.held().empty());
  out.Append("VA 1\r\nx\r\n");
  out.Hold(7);
  out.Append("VA 1\r\ny\r\n");
  out.Hold(9);
  EXPECT_EQ(std::vector<uint64_t>(out.held().begin(), out.held().end()), (std::vector<uint64_t>{7, 9}));
  out.Consume(5);
  EXPECT_EQ(out.held().size(), 2u);   // still owed
  out.Consume(out.pending_bytes());
  EXPECT_TRUE(out.held().empty());
  out.Append("HD\r\n");
  out.Hold(11);
  out.ReleaseHeld();
  EXPECT_TRUE(out.held().empty());
  out.Hold(12);
  out.Clear();
  EXPECT_TRUE(out.held().empty());
}

TEST(ReplyBufferTest, ItemBytesAreSentInPlaceBetweenCopies) {
  Item* item = MakeItem("key", Large("hello"));
  ReplyBuffer buf;
  AppendLargeValue(&buf, item);
  buf.Append("END\r\n");
  EXPECT_EQ(Pending(buf), "VALUE key 0 605\r\n" + Large("hello") + "\r\nEND\r\n");
  EXPECT_EQ(SegmentCount(buf), 3);
  struct iovec iov[3];
  ASSERT_EQ(buf.FillIovecs(iov, 3), 3);
  EXPECT_EQ(iov[1].iov_base, item->value_data());   // not copied
  buf.Clear();
  ReleaseItem(item);
}

// A small value is copied: its reference is dropped at once, and it extends
// the copies around it into one segment.
TEST(ReplyBufferTest, SmallItemBytesAreCopiedBetweenCopies) {
  Item* item = MakeItem("key", "hello");
  ReplyBuffer buf;
  buf.Append("VALUE key 0 5\r\n");
  buf.AppendItemBytes(Share(item), item->value_with_crlf());
  EXPECT_EQ(Refs(item), 1u);
  buf.Append("END\r\n");
  EXPECT_EQ(Pending(buf), "VALUE key 0 5\r\nhello\r\nEND\r\n");
  EXPECT_EQ(SegmentCount(buf), 1);
  ReleaseItem(item);
}

TEST(ReplyBufferTest, ItemReferenceReleasedOnceWhenFullyConsumed) {
  Item* item = MakeItem("k", Large("abcdef"));
  ReplyBuffer buf;
  buf.AppendItemBytes(Share(item), item->value_with_crlf());
  EXPECT_EQ(Refs(item), 2u);
  buf.Consume(3);
  EXPECT_EQ(Refs(item), 2u);   // still being sent
  EXPECT_EQ(Pending(buf), Large("def") + "\r\n");
  buf.Consume(605);
  EXPECT_EQ(Refs(item), 1u);
  EXPECT_TRUE(buf.empty());
  buf.Consume(0);
  buf.Clear();
  EXPECT_EQ(Refs(item), 1u);
  ReleaseItem(item);
}

TEST(ReplyBufferTest, ClearAndDestructorReleaseItemReferences) {
  Item* a = MakeItem("a", Large("1"));
  Item* b = MakeItem("b", Large("2"));
  {
    ReplyBuffer buf;
    buf.AppendItemBytes(Share(a), a->value_with_crlf());
    buf.Clear();
    EXPECT_EQ(Refs(a), 1u);
    EXPECT_TRUE(buf.empty());
    buf.AppendItemBytes(Share(b), b->value_with_crlf());
    buf.AppendItemBytes(Share(b), b->value_with_crlf());
    EXPECT_EQ(Refs(b), 3u);
  }
  EXPECT_EQ(Refs(b), 1u);
  ReleaseItem(a);
  ReleaseItem(b);
}

TEST(ReplyBufferTest, EmptyItemBytesDropTheReferenceAtOnce) {
  Item* item = MakeItem("k", "v");
  ReplyBuffer buf;
  buf.AppendItemBytes(Share(item), std::string_view());
  EXPECT_EQ(Refs(item), 1u);
  EXPECT_TRUE(buf.empty());
  ReleaseItem(item);
}

// Builds copies, item values, a large copy and a number; returns the bytes.
std::string FillMixed(ReplyBuffer* buf, const std::vector<Item*>& items) {
  std::string expected;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string line = "VALUE " + std::string(items[i]->key()) + " 0 " +
                       std::to_string(items[i]->value_len) + "\r\n";
    buf->Append(line);
    buf->AppendItemBytes(Share(items[i]), items[i]->value_with_crlf());
    expected += line;
    expected += items[i]->value_with_crlf();
  }
  std::string big(16 * 1024 + 1, 'x');   // just over one chunk
  big[0] = 'B';
  big.back() = 'E';
  buf->Append(big);
  expected += big;
  buf->AppendNumber(1234567);
  expected += "1234567";
  buf->Append("END\r\n");
  expected += "END\r\n";
  return expected;
}

TEST(ReplyBufferTest, PartialConsumeAtEveryOffset) {
  std::vector<Item*> items = {MakeItem("a", "first"), MakeItem("bb", ""), MakeItem("ccc", Large("third!"))};
  std::string expected;
  {
    ReplyBuffer probe;
    expected = FillMixed(&probe, items);
  }
  for (size_t offset = 0; offset <= expected.size(); ++offset) {
    ReplyBuffer buf;
    FillMixed(&buf, items);
    buf.Consume(offset);
    ASSERT_EQ(buf.pending_bytes(), expected.size() - offset);
    // Checking every byte of every suffix would be quadratic; the front and
    // the length pin down where the cut landed.
    ASSERT_EQ(PendingPrefix(buf, 64), expected.substr(offset, 64)) << "offset " << offset;
    buf.Consume(buf.pending_bytes());
    ASSERT_TRUE(buf.empty());
  }
  for (Item* item : items) {
    EXPECT_EQ(Refs(item), 1u);
    ReleaseItem(item);
  }
}

TEST(ReplyBufferTest, ConsumeInSmallStepsYieldsEveryByteInOrder) {
  std::vector<Item*> items = {MakeItem("k1", Large("value-one")), MakeItem("k2", "v2")};
  for (size_t step = 1; step <= 13; ++step) {
    ReplyBuffer buf;
    std::string expected = FillMixed(&buf, items);
    std::string written;
    while (!buf.empty()) {
      struct iovec iov[8];
      int n = buf.FillIovecs(iov, 8);
      ASSERT_GT(n, 0);
      // Pretend the socket took only `step` bytes of the first iovec.
      size_t take = std::min(step, iov[0].iov_len);
      written.append(static_cast<const char*>(iov[0].iov_base), take);
      buf.Consume(take);
    }
    EXPECT_EQ(written, expected) << "step " << step;
  }
  for (Item* item : items) {
    EXPECT_EQ(Refs(item), 1u);
    ReleaseItem(item);
  }
}

TEST(ReplyBufferTest, LargeAppendKeepsItsBytesIntact) {
  ReplyBuffer buf;
  buf.Append("head ");
  std::string big(100000, 'z');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  buf.Append(big);
  buf.Append(" tail");
  EXPECT_EQ(Pending(buf), "head " + big + " tail");
  EXPECT_EQ(buf.pending_bytes(), big.size() + 10);
}

TEST(ReplyBufferTest, ManySegmentsAreFilledInOrderUpToMax) {
  std::vector<Item*> items;
  for (int i = 0; i < 500; ++i) items.push_back(MakeItem("key" + std::to_string(i), Large(std::to_string(i))));
  ReplyBuffer buf;
  std::string expected;
  for (Item* item : items) {
    buf.Append("V ");
    buf.AppendItemBytes(Share(item), item->value_with_crlf());
    expected += "V ";
    expected += item->value_with_crlf();
  }
  EXPECT_EQ(SegmentCount(buf), 1000);
  struct iovec iov[16];
  EXPECT_EQ(buf.FillIovecs(iov, 16), 16);
  EXPECT_EQ(Pending(buf), expected);
  // Drain in writev-sized bites: 16 iovecs at a time.
  while (!buf.empty()) {
    int n = buf.FillIovecs(iov, 16);
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    buf.Consume(total);
  }
  for (Item* item : items) {
    EXPECT_EQ(Refs(item), 1u);
    ReleaseItem(item);
  }
}

// A byte bound (the io_uring path's per-send bound) cuts the last iovec short
// and leaves the rest for the next fill; below it the iovecs are unchanged.
TEST(ReplyBufferTest, FillIovecsStopsAtAByteBound) {
  Item* item = MakeItem("key", Large("bound"));
  ReplyBuffer buf;
  AppendLargeValue(&buf, item);
  buf.Append("END\r\n");
  const std::string all = Pending(buf);
  struct iovec iov[3];
  ASSERT_EQ(buf.FillIovecs(iov, 3, all.size()), 3);   // the whole of it: as without a bound
  EXPECT_EQ(iov[2].iov_len, 5u);
  const size_t bound = 17 + 100;   // the header and part of the value
  ASSERT_EQ(buf.FillIovecs(iov, 3, bound), 2);
  EXPECT_EQ(iov[0].iov_len, 17u);
  EXPECT_EQ(iov[1].iov_base, item->value_data());
  EXPECT_EQ(iov[1].iov_len, 100u);
  buf.Consume(bound);
  EXPECT_EQ(Pending(buf), all.substr(bound)) << "the rest goes out next";
  EXPECT_EQ(buf.FillIovecs(iov, 3, 0), 0);
  buf.Clear();
  ReleaseItem(item);
}

// A moved buffer owes the same bytes at the same addresses (a send in flight
// reads them there) and keeps the item pinned; the one moved from is empty.
TEST(ReplyBufferTest, MoveKeepsTheBytesWhereTheyAre) {
  Item* item = MakeItem("key", Large("moved"));
  ReplyBuffer buf;
  AppendLargeValue(&buf, item);
  const std::string all = Pending(buf);
  struct iovec before[2];
  ASSERT_EQ(buf.FillIovecs(before, 2), 2);
  ReplyBuffer taken(std::move(buf));
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(Pending(buf), "");
  struct iovec after[2];
  ASSERT_EQ(taken.FillIovecs(after, 2), 2);
  EXPECT_EQ(after[0].iov_base, before[0].iov_base);
  EXPECT_EQ(after[1].iov_base, before[1].iov_base);
  EXPECT_EQ(Pending(taken), all);
  EXPECT_EQ(Refs(item), 2u) << "still pinned by the buffer that took it";
  buf.Append("next\r\n");   // the one moved from is usable
  EXPECT_EQ(Pending(buf), "next\r\n");
  taken.Clear();
  EXPECT_EQ(Refs(item), 1u);
  ReleaseItem(item);
}

TEST(ReplyBufferTest, DrainedBufferReusesItsChunk) {
  ReplyBuffer buf;
  buf.Append("first reply\r\n");
  struct iovec iov[1];
  ASSERT_EQ(buf.FillIovecs(iov, 1), 1);
  void* first = iov[0].iov_base;
  buf.Consume(buf.pending_bytes());
  buf.Append("second\r\n");
  ASSERT_EQ(buf.FillIovecs(iov, 1), 1);
  EXPECT_EQ(iov[0].iov_base, first);
  EXPECT_EQ(Pending(buf), "second\r\n");
}

TEST(ReplyBufferTest, AppendAfterPartialConsumeContinuesTheSameSegment) {
  ReplyBuffer buf;
  buf.Append("abcdef");
  buf.Consume(2);
  buf.Append("gh");
  EXPECT_EQ(Pending(buf), "cdefgh");
  EXPECT_EQ(SegmentCount(buf), 1);
}

TEST(ReplyBufferTest, SpillingPastAChunkStartsANewSegment) {
  ReplyBuffer buf;
  std::string line(1000, 'q');
  std::string expected;
  for (int i = 0; i < 40; ++i) {   // 40 KB: more than two 16 KiB chunks
    buf.Append(line);
    expected += line;
  }
  EXPECT_EQ(Pending(buf), expected);
  EXPECT_GE(SegmentCount(buf), 3);
  buf.Consume(20000);
  EXPECT_EQ(Pending(buf), expected.substr(20000));
}

// A client that keeps reading behind a long backlog: written segments are
// dropped from the front in batches while new ones are appended, and every
// byte and item reference survives the moves.
TEST(ReplyBufferTest, LongBacklogKeepsOrderAcrossCompaction) {
  Item* item = MakeItem("k", Large("value"));
  ReplyBuffer buf;
  std::string expected;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) {
      buf.AppendItemBytes(Share(item), item->value());
      buf.Append("|" + std::to_string(round * 100 + i) + "\n");
      expected += Large("value") + "|" + std::to_string(round * 100 + i) + "\n";
    }
    // Write all but the last 7 bytes of what is owed.
    const size_t written = buf.pending_bytes() - 7;
    buf.Consume(written);
    expected.erase(0, written);
    ASSERT_EQ(Pending(buf), expected) << "round " << round;
  }
  EXPECT_GT(Refs(item), 1u);   // the unwritten value still holds its reference
  buf.Consume(buf.pending_bytes());
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(Refs(item), 1u);
  ReleaseItem(item);
}

}  // namespace
}  // namespace herdless

// UDP message boundaries (ReplyBuffer::EndMessage).
namespace herdless {
namespace {

TEST(ReplyBufferMessagesTest, UntrackedBufferRecordsNothing) {
  ReplyBuffer out;
  out.Append("abc");
  out.EndMessage();
  EXPECT_TRUE(out.message_ends().empty());
  EXPECT_FALSE(out.leading_empty_message());
}

TEST(ReplyBufferMessagesTest, EndsAreRecordedAndEmptyMessagesDropped) {
  ReplyBuffer out;
  out.TrackMessages(true);
  out.Append("VALUE a 0 1\r\na\r\n");   // 16 bytes
  out.EndMessage();
  out.EndMessage();                     // an empty one after a sent one: nothing
  out.Append("END\r\n");
  out.EndMessage();
  EXPECT_EQ(out.message_ends(), (std::vector<size_t>{16, 21}));
  EXPECT_FALSE(out.leading_empty_message());
  out.Clear();
  EXPECT_TRUE(out.message_ends().empty());
}

TEST(ReplyBufferMessagesTest, AnEmptyFirstMessageIsNotedUnlessSkipped) {
  ReplyBuffer skipped;
  skipped.TrackMessages(true);
  skipped.EndMessage(/*skipped=*/true);   // a noreply command
  EXPECT_FALSE(skipped.leading_empty_message());
  ReplyBuffer empty;
  empty.TrackMessages(true);
  empty.EndMessage();                     // a binary quiet success
  empty.Append("x");
  empty.EndMessage();
  EXPECT_TRUE(empty.leading_empty_message());
  EXPECT_EQ(empty.message_ends(), (std::vector<size_t>{1}));
}

}  // namespace
}  // namespace herdless
