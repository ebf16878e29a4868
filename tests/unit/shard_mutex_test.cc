#include "storage/shard_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace herdless {
namespace {

// More threads than this machine's cores, so that holders are preempted and
// waiters go through both the spin and the futex sleep.
TEST(ShardMutexTest, ThreadsThatIncrementUnderTheLockLoseNoIncrement) {
  constexpr int kThreads = 6, kRounds = 50000;
  ShardMutex mu;
  uint64_t counter = 0;   // deliberately not atomic: the lock is what protects it
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; r++) {
        std::lock_guard<ShardMutex> lock(mu);
        counter++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kRounds);
}

TEST(ShardMutexTest, AWaiterGetsTheLockOnlyOnceItIsReleased) {
  ShardMutex mu;
  mu.lock();
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    mu.lock();
    acquired = true;
    mu.unlock();
  });
  // Long enough for the waiter to give up spinning and sleep on the futex;
  // the assertions hold however long it takes.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(acquired);
  EXPECT_FALSE(mu.try_lock());
  mu.unlock();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

}  // namespace
}  // namespace herdless
