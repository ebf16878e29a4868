// The io_uring path's provided-buffer accounting (daemon/uring_transport.h).
#include <gtest/gtest.h>

#include "daemon/uring_transport.h"

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

TEST(Ring, UsableSaysWhyNot) {
  std::string why;
  const bool usable = Ring::Usable(&why);
  EXPECT_EQ(usable, why.empty()) << why;   // -o io=auto logs `why` when it falls back
}

}  // namespace
}  // namespace herdless
