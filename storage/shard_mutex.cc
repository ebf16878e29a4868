#include "storage/shard_mutex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace herdless {

namespace {

// A holder's critical section is a few hundred nanoseconds: spinning about
// that long first saves the two system calls of a sleep and a wake-up, while
// a holder that was preempted is not waited for any longer than that.
constexpr int kSpins = 64;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint32_t* Word(std::atomic<uint32_t>* state) { return reinterpret_cast<uint32_t*>(state); }

}  // namespace

// Drepper's "Futexes Are Tricky", mutex 2: a thread that goes to sleep marks
// the word kLockedWithWaiters, so that the unlock knows it has a futex to wake.
void ShardMutex::LockContended() {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                std::atomic<uint32_t>::is_always_lock_free);
  for (int i = 0; i < kSpins; i++) {
    CpuRelax();
    uint32_t expected = kFree;
    if (state_.load(std::memory_order_relaxed) == kFree &&
        state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      return;
    }
  }
  // From here on this thread owns the lock only as kLockedWithWaiters: it
  // cannot tell whether other sleepers remain, so its unlock must wake one.
  while (state_.exchange(kLockedWithWaiters, std::memory_order_acquire) != kFree) {
    syscall(SYS_futex, Word(&state_), FUTEX_WAIT_PRIVATE, kLockedWithWaiters, nullptr, nullptr, 0);
  }
}

void ShardMutex::WakeOne() {
  syscall(SYS_futex, Word(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace herdless
