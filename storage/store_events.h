// StoreEventSink: what the store reports as it happens, for whoever watches
// it (the daemon's `watch` streams: evictions, and herdless's stampede
// stream). The store calls OnEvent under a shard lock, on the thread that
// caused the event: an implementation must be quick, must never block and
// must not call the store. Wants() is one relaxed load, so while nobody
// watches an event site costs a load and a branch. Knows no wire format.
#ifndef HERDLESS_STORAGE_STORE_EVENTS_H_
#define HERDLESS_STORAGE_STORE_EVENTS_H_

#include <atomic>
#include <cstdint>
#include <string_view>

namespace herdless {

enum class StoreEventKind : uint8_t {
  kEviction,        // an item left to make room for new ones
  kLeaseGranted,    // a reader won a key's lease (it recomputes the value)
  kLeaseFulfilled,  // a new value ended a live lease
  kLeaseTimedOut,   // a lease outlived the lease timeout: the next reader takes it over
  kStaleServed,     // a reader was given a stale value
};

// Why a reader won a lease.
enum class LeaseReason : uint8_t {
  kMiss,      // the key had no value (a stub now holds the lease)
  kStale,     // the value is stale (invalidated, or expired within the stale grace)
  kXFetch,    // an XFetch draw chose this reader before the expiry
  kRecache,   // the TTL fell below the reader's threshold (LeaseAsk::has_recache)
  kTakeover,  // the previous holder's lease timed out
};

struct StoreEvent {
  StoreEventKind kind = StoreEventKind::kEviction;
  std::string_view key;      // raw key bytes (valid during OnEvent only)
  int slab_class = 0;        // the item's size class (MemcachedSlabClass)
  uint32_t value_len = 0;
  int64_t ttl_s = -1;        // seconds left before expiry, -1 = never (negative past it)
  // kEviction
  bool fetched = false;      // read since it was stored
  int64_t idle_s = 0;        // seconds since its last access
  // Leases: the token is the item's CAS when the lease was granted.
  uint64_t token = 0;
  uint64_t previous_token = 0;   // kLeaseTimedOut: the token that died
  LeaseReason reason = LeaseReason::kMiss;   // kLeaseGranted
  uint32_t held_ms = 0;          // kLeaseFulfilled, kLeaseTimedOut: how long it was held
};

class StoreEventSink {
 public:
  static constexpr uint32_t Bit(StoreEventKind k) { return uint32_t{1} << static_cast<int>(k); }

  bool Wants(StoreEventKind k) const { return (wanted_.load(std::memory_order_relaxed) & Bit(k)) != 0; }
  // Which kinds to report from now on (a mask of Bit()s).
  void SetWanted(uint32_t mask) { wanted_.store(mask, std::memory_order_relaxed); }

  virtual void OnEvent(const StoreEvent& event) = 0;

 protected:
  ~StoreEventSink() = default;

 private:
  std::atomic<uint32_t> wanted_{0};
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_STORE_EVENTS_H_
