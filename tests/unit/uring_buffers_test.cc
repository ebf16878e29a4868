// The io_uring path's accounting (daemon/uring_transport.h): its provided
// receive buffers, and the reply bytes a send in flight reads.
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "daemon/uring_transport.h"
#include "protocol/block_cache.h"
#include "protocol/reply.h"

namespace herdless {
namespace {

TEST(BufferPool, LendsEachBufferOnceAndTakesItBack) {
  BufferPool pool(8, 4096);
  EXPECT_EQ(pool.count(), 8u);
  EXPECT_EQ(pool.size(), 4096u);
  EXPECT_EQ(pool.lent(), 0u);
  EXPECT_TRUE(pool.Take(3));
  EXPECT_FALSE(pool.Take(3));   // the kernel cannot fill a buffer still held
  EXPECT_EQ(pool.lent(), 1u);
  EXPECT_TRUE(pool.Give(3));
  EXPECT_FALSE(pool.Give(3));   // nor can one be returned twice
  EXPECT_EQ(pool.lent(), 0u);
}

TEST(BufferPool, RejectsIdsOutOfRange) {
  BufferPool pool(4, 512);
  EXPECT_FALSE(pool.Take(4));
  EXPECT_FALSE(pool.Give(4));
  EXPECT_EQ(pool.lent(), 0u);
}

TEST(BufferPool, PlentyWhileAtMostHalfIsLent) {
  // Connections starved of buffers re-arm their receive only when plenty are back.
  BufferPool pool(4, 512);
  EXPECT_TRUE(pool.plenty());
  pool.Take(0);
  pool.Take(1);
  EXPECT_TRUE(pool.plenty());
  pool.Take(2);
  EXPECT_FALSE(pool.plenty());
  pool.Give(0);
  EXPECT_TRUE(pool.plenty());
}

TEST(Ring, CreateSaysWhyNot) {
  std::string why;
  const bool made = Ring::Create(&why) != nullptr;
  EXPECT_EQ(made, why.empty()) << why;   // -o io=auto logs `why` when it falls back
}

// An owner that only notes the ring's calls (it reads when the test says).
struct NotedOwner : Transport::Owner {
  void OnReadable() override { ++readable; }
  void OnWritable() override { ++writable; }
  void OnEstablished() override {}
  void OnHandshakeFailed() override {}
  int readable = 0;
  int writable = 0;
};

// Turns `base`'s loop until `done` (false: `ms` passed).
bool TurnUntil(event_base* base, const std::function<bool()>& done, int ms = 2000) {
  for (int i = 0; i < ms && !done(); ++i) {
    event_base_loop(base, EVLOOP_NONBLOCK);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

std::string ReadAll(Transport* t) {
  std::string got;
  char buf[64 * 1024];
  size_t n = 0;
  while (t->Read(buf, sizeof(buf), &n) == Transport::Io::kDone) got.append(buf, n);
  return got;
}

// A ring on its own libevent loop, with one transport on a socket pair whose
// other end (`peer`) the test writes and reads.
class RingOnSocketPair : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ring = Ring::Create(&why);
    if (ring == nullptr) GTEST_SKIP() << why;
    base = event_base_new();
    ASSERT_NE(base, nullptr);
    ASSERT_TRUE(ring->Attach(base, &why)) << why;
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    peer = fds[1];
    t = ring->NewTransport(fds[0]);
    ASSERT_TRUE(t->Start(&owner));
  }
  void TearDown() override {
    t.reset();   // queues its cancels and closes its socket
    if (peer >= 0) close(peer);
    if (base != nullptr) TurnUntil(base, [] { return false; }, 100);   // the cancels' completions
    ring.reset();   // its events, before their loop
    if (base != nullptr) event_base_free(base);
  }

  std::unique_ptr<Ring> ring;
  event_base* base = nullptr;
  int peer = -1;
  NotedOwner owner;
  std::unique_ptr<Transport> t;
};

// A connection that stops reading (back-pressure, a full input) gives the
// ring's buffers back at once, its bytes kept in order for when it reads
// again: otherwise connections that do not read could hold every buffer and
// starve the others on the same ring (test_hostile's non-readers hung so).
TEST_F(RingOnSocketPair, AConnectionThatStopsReadingHoldsNoBuffer) {
  const std::string first(3 * Ring::kBufferSize, 'a');
  ASSERT_EQ(write(peer, first.data(), first.size()), static_cast<ssize_t>(first.size()));
  ASSERT_TRUE(TurnUntil(base, [&] { return ring->pool().lent() > 0 && owner.readable > 0; }));
  t->Want(/*read=*/false, /*write=*/false);
  EXPECT_EQ(ring->pool().lent(), 0u) << "held buffers go back when it stops reading";
  // Bytes that arrive before the cancel takes effect are copied out too.
  const std::string second(2 * Ring::kBufferSize, 'b');
  ASSERT_EQ(write(peer, second.data(), second.size()), static_cast<ssize_t>(second.size()));
  TurnUntil(base, [] { return false; }, 200);   // 200 ms of turns
  EXPECT_EQ(ring->pool().lent(), 0u);
  t->Want(/*read=*/true, /*write=*/false);
  std::string got;
  ASSERT_TRUE(TurnUntil(base, [&] {
    got += ReadAll(t.get());
    return got.size() >= first.size() + second.size();
  }));
  EXPECT_EQ(got, first + second) << "in the order they arrived";
  EXPECT_EQ(ring->pool().lent(), 0u);
}

// A connection closed while a send is in flight: the kernel reads that
// send's bytes until it completes, after the close, so the transport keeps
// them (Abandon) and they go back to the worker's caches only then. Freed at
// once, they were the next replies' blocks while the kernel still sent them.
TEST_F(RingOnSocketPair, ASendsBytesOutliveItsConnection) {
  BlockCache blocks(1024);
  auto out = std::make_unique<ReplyBuffer>();
  out->set_caches(&blocks, nullptr);
  std::string all;   // 1 MB in 64 blocks, more than the socket holds
  for (int i = 0; i < 64; ++i) {
    const std::string block(BlockCache::kBlockSize, static_cast<char>('A' + i % 26));
    out->Append(block);
    all += block;
  }
  t->Abandon(out.get());
  EXPECT_EQ(out->pending_bytes(), all.size()) << "no send in flight: nothing is taken";
  // Write until a send waits for the peer, which does not read.
  size_t n = 0;
  size_t written = 0;
  for (;;) {
    ASSERT_EQ(t->Write(out.get(), &n), Transport::Io::kAgain);
    written += n;
    const int before = owner.writable;
    if (!TurnUntil(base, [&] { return owner.writable > before; }, 200)) break;
  }
  ASSERT_FALSE(out->empty());
  const size_t free_before = blocks.free_blocks();
  t->Abandon(out.get());
  EXPECT_TRUE(out->empty()) << "the send in flight's bytes are the transport's now";
  out.reset();
  t.reset();   // queues the send's cancel and closes the socket
  EXPECT_EQ(blocks.free_blocks(), free_before) << "nothing freed before the send completes";
  ASSERT_TRUE(TurnUntil(base, [&] { return blocks.free_blocks() > free_before; }))
      << "freed at the send's completion";
  // What the peer got is the replies' prefix, unchanged.
  std::string got;
  char buf[64 * 1024];
  ssize_t r;
  while ((r = recv(peer, buf, sizeof(buf), MSG_DONTWAIT)) > 0) got.append(buf, static_cast<size_t>(r));
  EXPECT_GE(got.size(), written);
  EXPECT_EQ(got, all.substr(0, got.size()));
}

}  // namespace
}  // namespace herdless
