// Clock: the only source of time for the store (expiry, leases, XFetch, flush).
// SystemClock reads the OS; ManualClock is driven by tests so that expiry and
// lease timeouts are tested without sleeping. Both are thread-safe.
#ifndef HERDLESS_STORAGE_CLOCK_H_
#define HERDLESS_STORAGE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace herdless {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds since an arbitrary epoch fixed at construction.
  // SystemClock's resolution is a kernel tick (1-10 ms), not a microsecond.
  virtual int64_t NowMicros() const = 0;
  // Wall-clock Unix seconds: for absolute exptimes (> 30 days) and `stats time`.
  virtual int64_t UnixSeconds() const = 0;
};

class SystemClock final : public Clock {
 public:
  SystemClock();
  int64_t NowMicros() const override;
  int64_t UnixSeconds() const override;

 private:
  int64_t start_monotonic_us_;
};

// Starts at NowMicros() == 0 and UnixSeconds() == unix_start; moves only when told.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t unix_start = 1700000000) : unix_start_(unix_start) {}
  int64_t NowMicros() const override { return now_us_.load(std::memory_order_relaxed); }
  int64_t UnixSeconds() const override { return unix_start_ + NowMicros() / 1000000; }
  void AdvanceMicros(int64_t us) { now_us_.fetch_add(us, std::memory_order_relaxed); }
  void AdvanceSeconds(int64_t s) { AdvanceMicros(s * 1000000); }

 private:
  const int64_t unix_start_;
  std::atomic<int64_t> now_us_{0};
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_CLOCK_H_
