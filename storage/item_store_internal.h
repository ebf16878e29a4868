// The parts of ItemStore its implementation files share (item_store.cc: the
// core; item_store_read.cc, item_store_write.cc: the operations;
// item_store_rates.cc: read rates; item_store_memory.cc: placing items,
// eviction, relocation; item_store_admin.cc: flush, expiry crawl, walk,
// restore, stats): a shard, its lock guard, what a lookup found, and small
// helpers. Not a public interface: include it only from those files.
#ifndef HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_
#define HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

#include "storage/eviction.h"
#include "storage/index.h"
#include "storage/item_store.h"
#include "storage/lease.h"
#include "storage/parked.h"
#include "storage/segments.h"
#include "storage/store_events.h"
#include "storage/store_time.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace herdless {
namespace store_internal {

constexpr int kMaxRoomAttempts = 64;   // evictions tried for one new item

inline uint64_t HashKey(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

inline bool Has(uint64_t slot_value, uint8_t bits) { return (slot::State(slot_value) & bits) != 0; }

// Expiry is in ticks (storage/store_time.h): `now_tick` is Times::now_tick.
inline bool IsExpiredAt(ItemView item, int64_t now_tick) {
  const int32_t exptime = item.exptime();
  return exptime != 0 && exptime <= now_tick;
}

// Expired beyond the stale grace: gone for every reader.
inline bool IsPastGraceAt(ItemView item, int64_t now_tick, uint32_t stale_grace_s) {
  return IsExpiredAt(item, now_tick) &&
         int64_t{item.exptime()} + int64_t{stale_grace_s} * kTicksPerSecond <= now_tick;
}

// The remaining TTL in whole seconds, as memcached reports it (-1 = never).
inline int64_t TtlAt(int64_t exptime_tick, int64_t now_tick) { return SecondsUntil(exptime_tick, now_tick); }

inline int32_t ClampStoreTime(int64_t t) {
  return static_cast<int32_t>(std::clamp<int64_t>(t, INT32_MIN, INT32_MAX));
}

// memcpy of a view that may be empty (and then have no data pointer).
inline void CopyBytes(char* dst, std::string_view src) {
  if (!src.empty()) std::memcpy(dst, src.data(), src.size());
}

inline int SlabClassOf(ItemView item) {
  return MemcachedSlabClass(MemcachedItemSize(item.key_len(), item.value_len(), item.client_flags()));
}

// 32 bits from a shard's generator (xorshift64*; the shard's lock guards its
// state): only to round read-rate updates without bias.
inline uint32_t NextRandom(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return static_cast<uint32_t>((x * 0x2545F4914F6CDD1Dull) >> 32);
}

// An event about `item` with what every kind reports (key, size class, value
// length, TTL left); the caller adds its kind's own fields.
inline StoreEvent EventAbout(StoreEventKind kind, ItemView item, int64_t now_tick) {
  StoreEvent e;
  e.kind = kind;
  e.key = item.key();
  e.slab_class = SlabClassOf(item);
  e.value_len = item.value_len();
  e.ttl_s = TtlAt(item.exptime(), now_tick);
  return e;
}

// Marks the segment as holding items of the item's class (ClassAges).
inline void NoteClassIn(Segment* seg, int slab_class) {
  const uint64_t bit = uint64_t{1} << slab_class;
  if ((seg->classes.load(std::memory_order_relaxed) & bit) == 0) {
    seg->classes.fetch_or(bit, std::memory_order_relaxed);
  }
}

}  // namespace store_internal

// ---------------------------------------------------------------------------
// The shard.

struct ItemStore::Times {
  int64_t now_us;
  int64_t now_s;     // whole store seconds: last access, flush deadlines
  int64_t now_tick;  // store ticks (storage/store_time.h): expiry
  uint32_t now_ms;  // mod 2^32, as lease grant times
};

// What a lookup found under the key.
struct ItemStore::Found {
  enum Presence : uint8_t {
    kAbsent,
    kLive,            // a real, unexpired item
    kExpiredInGrace,  // expired less than stale_grace ago: kept as a stale value
    kPlaceholder,     // a lease-only stub (kItemPlaceholder)
  };
  uint64_t* slot = nullptr;   // valid until the index changes (an insert)
  Presence presence = kAbsent;
  // Why an absent key is absent, when the lookup itself removed it
  // (memcached's get_expired / get_flushed).
  bool removed_expired = false;
  bool removed_flushed = false;
  // The read-rate estimate of an expired item the lookup removed, decayed to
  // now, for the key's next item (a lease stub, or the new value).
  ReadRateState carried_rate;
};

// Where a new item goes: a segment (jumbo or the small queue's open one) and
// an offset in it, with room taken for `bytes`.
struct ItemStore::Placed {
  Segment* segment = nullptr;
  uint32_t offset = 0;
  uint32_t bytes = 0;
};

struct ItemStore::Shard {
  std::mutex mu;
  Index index;
  size_t bytes = 0;       // herdless's bytes of the linked items
  size_t leases_out = 0;  // linked items with kItemTokenSent
  uint64_t reclaim_position = 0;   // the expiry crawler's walk cursor
  StoreStats counters;    // only the event counters and classes are used here
  LeaseTable leases;      // live leases' grant times, by LocationKey of the item's slot
  ParkedReaders parked;   // woken tickets are delivered by ShardLock::unlock
  size_t rated_items = 0; // linked items with a read-rate estimate
  size_t hot_items = 0;   // ... of which counted hot (ReadRateState::hot)
  uint64_t random = 0x9E3779B97F4A7C15ull;  // rounding bits for read-rate updates
  // Read-rate estimates of keys whose item cannot hold one: items removed on
  // expiry (a hot key without refresh-ahead expires every TTL and would
  // otherwise start counting again each time), and items without room for
  // the field when their key turned hot. The key's next item takes its
  // estimate from here (Store, a vivified stub). A direct-mapped table by
  // hash, overwritten freely.
  struct RememberedRate {
    uint64_t hash = 0;
    uint16_t count = 0;   // ReadRateState::count, as of at_s
    int64_t at_s = 0;
  };
  static constexpr size_t kRememberedRates = 16;
  RememberedRate remembered_rates[kRememberedRates];
  bool track_sizes = false;        // count linked items in ItemStore::sizes_
};

// Hashes a slot's item (the index rehashes buckets as it grows).
class ItemStore::Hasher final : public SlotHasher {
 public:
  explicit Hasher(const ItemStore* store) : store_(store) {}
  uint64_t HashOf(uint64_t slot_value) const override {
    return store_internal::HashKey(store_->ItemAt(slot_value).key());
  }

 private:
  const ItemStore* store_;
};

// The shard's lock. Tickets woken and index tables retired while it was held
// are delivered and unmapped after it is released, so a sink never runs
// under a store lock and a big munmap never holds the shard.
class ItemStore::ShardLock {
 public:
  ShardLock(const ItemStore* store, Shard& shard) : store_(store), shard_(shard) { lock(); }
  ~ShardLock() {
    if (locked_) unlock();
  }
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

  void lock() {
    shard_.mu.lock();
    locked_ = true;
  }
  void unlock() {
    locked_ = false;
    if (!shard_.parked.has_woken() && !shard_.index.has_retired()) {
      shard_.mu.unlock();
      return;
    }
    std::vector<Index::Retired> retired = shard_.index.TakeRetired();
    const std::vector<WaitTicket> woken = shard_.parked.TakeWoken();
    shard_.mu.unlock();
    for (const WaitTicket& ticket : woken) store_->config_.wake_sink->Wake(ticket);
    for (Index::Retired& r : retired) r.Release();
  }

 private:
  const ItemStore* store_;
  Shard& shard_;
  bool locked_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_
