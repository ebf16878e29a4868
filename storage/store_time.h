// Store time: the store's clock (storage/clock.h) counts microseconds from
// process start. Items keep their last access in whole store seconds (as
// memcached's current_time) and their expiry in ticks of 1/8 s, so that an
// item set with TTL T lives T seconds, less at most one tick (memcached:
// between T-1 and T), in the same 4-byte field.
//
// Range: a tick count is an int32, so expiry times reach 2^31 / 8 s, about
// 8.5 years after process start. An exptime beyond that (an absolute Unix
// time far in the future) is clamped to it: such an item expires then.
#ifndef HERDLESS_STORAGE_STORE_TIME_H_
#define HERDLESS_STORAGE_STORE_TIME_H_

#include <cstdint>

namespace herdless {

constexpr int64_t kTicksPerSecond = 8;
constexpr int64_t kMicrosPerTick = 1000000 / kTicksPerSecond;

// The tick a clock reading falls in.
inline int64_t TickOf(int64_t now_us) {
  return now_us >= 0 ? now_us / kMicrosPerTick : -((-now_us + kMicrosPerTick - 1) / kMicrosPerTick);
}

// Whole seconds until an expiry tick, rounded up, as memcached's
// `exptime - current_time`: at least 1 while the item is alive, 0 or less
// once it has expired; -1 for an item that never expires (expiry 0).
inline int64_t SecondsUntil(int64_t expiry_tick, int64_t now_tick) {
  if (expiry_tick == 0) return -1;
  const int64_t ticks = expiry_tick - now_tick;
  // Integer division truncates toward zero: that is the ceiling below zero.
  return ticks > 0 ? (ticks + kTicksPerSecond - 1) / kTicksPerSecond : ticks / kTicksPerSecond;
}

// The store second an expiry tick falls in (for dumps and snapshots, which
// count whole seconds): rounded down, so that an item restored from it never
// lives longer than it would have (as memcached's whole-second expiry, up to
// 7/8 s less). Only tick 0 (never) gives 0: a tick in the first second
// (already expired at start) gives -1.
inline int64_t SecondOfTick(int64_t tick) {
  if (tick == 0) return 0;
  const int64_t s = tick >= 0 ? tick / kTicksPerSecond : -((-tick + kTicksPerSecond - 1) / kTicksPerSecond);
  return s != 0 ? s : -1;
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_STORE_TIME_H_
