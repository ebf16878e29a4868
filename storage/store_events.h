// StoreEventSink: what the store reports as it happens, for whoever watches
// it (the daemon's `watch` streams: evictions, the flash tier's moves and
// compactions, and herdless's stampede stream). The store calls OnEvent
// under a shard lock (or none: the flash writer's compaction lines), on the
// thread that caused the event: an implementation must be quick, must never block and
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
  // The flash tier (-o ext_path), memcached's extstore log lines.
  kFlashWrite,         // a value moved to flash (memcached's extwrite)
  kCompactFragInfo,    // a compaction check: its fragmentation limit
  kCompactStart,       // a page's compaction began
  kCompactReadStart,   // one write buffer's worth of the page is read back
  kCompactReadEnd,     // ... and its values rescued, dropped or skipped
  kCompactEnd,         // the page's compaction ended
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
  // kFlashWrite: the page bucket it went to (FlashBucket's number), and
  // `fetched`, `idle_s` as for kEviction.
  uint32_t bucket = 0;
  // The compaction kinds. `offset` is the part's start in the page
  // (kCompactReadStart) or how far into the part the records went
  // (kCompactReadEnd); `long_form` asks for 1.6.45's read_end fields.
  uint32_t page = 0;
  uint64_t page_version = 0;
  uint64_t offset = 0;
  uint64_t rescues = 0, lost = 0, skipped = 0;
  bool long_form = false;
  double frag_ratio = 0;         // kCompactFragInfo: the share of a page ...
  uint64_t frag_bytes = 0;       // ... and its bytes, live data under which a page is compacted
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
