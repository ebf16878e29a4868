// A mutex for the item store's shards: one compare-and-swap to lock and one
// exchange to unlock when no thread waits (std::mutex's pthread calls cost
// ~80 instructions a request on the read path). Under contention it spins
// briefly, then sleeps on a futex. Not recursive; meets Lockable, so
// std::lock_guard and std::unique_lock work with it.
#ifndef HERDLESS_STORAGE_SHARD_MUTEX_H_
#define HERDLESS_STORAGE_SHARD_MUTEX_H_

#include <atomic>
#include <cstdint>

namespace herdless {

class ShardMutex {
 public:
  ShardMutex() = default;
  ShardMutex(const ShardMutex&) = delete;
  ShardMutex& operator=(const ShardMutex&) = delete;

  void lock() {
    uint32_t expected = kFree;
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      LockContended();
    }
  }
  bool try_lock() {
    uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kLockedWithWaiters) WakeOne();
  }

 private:
  static constexpr uint32_t kFree = 0, kLocked = 1, kLockedWithWaiters = 2;
  void LockContended();
  void WakeOne();

  std::atomic<uint32_t> state_{kFree};
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_SHARD_MUTEX_H_
