// ItemStore: the cache, a facade that composes storage's parts in the order a
// request needs them. Keys are hashed (XXH3) to one of 2^shard_bits shards;
// each shard has a lock, an Index (key -> item location, state bits, access
// frequency), its counters, its live leases' grant times and its parked
// readers. Items are appended to segments (SegmentPool) under one global
// memory budget (-m); when it is spent, S3Fifo picks the segment to evict and
// the store walks its items: expired and stale ones are reclaimed, read ones
// move to the main queue, the others are evicted (storage/eviction.h).
// Expiry is lazy (checked on access) plus ReclaimExpired(), which a
// maintenance timer calls. The per-key lease (memcached's W/X/Z, lease-get,
// classic stampede modes, XFetch, refresh-ahead) is decided by
// storage/lease.h, with each hot key's read rate (storage/read_rate.h). Readers
// parked in classic wait mode (ReadOptions::park) are woken through
// StoreConfig::wake_sink when their key changes; evictions and lease events
// are reported to StoreConfig::events (storage/store_events.h) while someone
// watches. Thread-safe; knows no wire format.
//
// Times from clients are memcached "exptime" values: 0 = never, negative =
// already expired, <= 30 days = relative seconds, larger = Unix time.
#ifndef HERDLESS_STORAGE_ITEM_STORE_H_
#define HERDLESS_STORAGE_ITEM_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/clock.h"
#include "storage/item.h"
#include "storage/lease.h"
#include "storage/parked.h"
#include "storage/random.h"
#include "storage/read_rate.h"
#include "storage/store_events.h"
#include "storage/store_requests.h"
#include "storage/store_stats.h"

namespace herdless {

class SegmentPool;
class S3Fifo;
class Segment;
enum class SegmentQueue : uint8_t;

struct StoreConfig {
  size_t memory_limit = 64u << 20;   // bytes of item memory (-m)
  // Bytes per segment; 0 = SegmentPool::SegmentSizeFor(memory_limit).
  size_t segment_size = 0;
  size_t item_size_max = 1u << 20;   // -I: limit on a whole item, as memcached
  bool evictions = true;             // -M: false = an allocation that needs room fails instead
  int shard_bits = 6;                // 2^shard_bits shards
  LeaseSettings lease;
  uint32_t stale_grace_s = 0;        // keep expired items as stale this long
  Clock* clock = nullptr;            // not owned; required
  RandomSource* random = nullptr;    // not owned; required
  LeaseWakeSink* wake_sink = nullptr;  // not owned; required for ReadOptions::park
  StoreEventSink* events = nullptr;    // not owned; nullptr = nobody watches
};

// Which items an expiry crawl looks at (Crawl): size classes (bit c for class
// c), and at most `per_class_limit` items of each (0 = all), memcached's
// lru_crawler_tocrawl. `checked` counts what the crawl looked at so far.
struct CrawlScope {
  uint64_t classes = ~uint64_t{0};
  uint64_t per_class_limit = 0;
  uint64_t checked[kMemcachedClasses + 1] = {};
  uint64_t checked_total = 0;
  uint64_t reclaimed = 0;
};

// A position in a walk over every item (Walk). Starts at the beginning.
struct WalkCursor {
  uint32_t shard = 0;
  uint64_t position = 0;   // the shard index's reverse-binary cursor
  bool done = false;
};

// One item as a walk sees it, under its shard's lock: copy what you need, or
// Pin() it to read the value after the visit returns.
struct WalkedItem {
  std::string_view key;
  std::string_view value;
  uint32_t client_flags = 0;
  int64_t exptime = 0;           // store second the expiry tick falls in (SecondOfTick), 0 = never
  int64_t last_access = 0;       // store seconds
  uint64_t cas = 0;
  uint16_t delta_ms = 0;         // smoothed recompute time (XFetch's delta), 0 = unmeasured
  uint8_t frequency = 0;         // 0..3
  bool fetched = false;
  bool stale = false;            // invalidated, or expired within stale_grace
  bool invalidated = false;      // made stale by md I / ms I (not by its expiry)
  bool binary_key = false;
  bool no_value = false;         // a lease stub still waiting for its value
  bool placeholder = false;      // a lease-get placeholder (invisible to plain gets)
  bool lease_out = false;
  double reads_per_s = 0;        // the read-rate estimate now, 0 = untracked
  int slab_class = 0;            // MemcachedSlabClass of the item
  uint32_t size = 0;             // bytes the item takes in memory
  Segment* segment = nullptr;
  ItemRef Pin() const;
};

class ItemStore {
 public:
  explicit ItemStore(const StoreConfig& config);
  ~ItemStore();
  ItemStore(const ItemStore&) = delete;
  ItemStore& operator=(const ItemStore&) = delete;

  ReadResult Read(std::string_view key, const ReadOptions& opts);
  StoreResult Store(const StoreRequest& req);
  DeleteStatus Delete(const DeleteRequest& req);
  ArithResult Arithmetic(const ArithRequest& req);
  // touch: new exptime on an existing item. Returns false on a miss.
  bool Touch(std::string_view key, int64_t exptime);

  // flush_all: delay_s <= 0 drops every item now; otherwise every item stored
  // or touched before now + delay_s is dropped once that moment passes.
  void FlushAll(int64_t delay_s);

  // Removes up to `budget` expired items; returns how many were removed. A
  // delayed flush_all whose deadline has passed is applied here first (its
  // items removed, their parked readers woken). The daemon calls it on a timer.
  size_t ReclaimExpired(size_t budget);

  // One step of an expiry crawl (memcached's `lru_crawler crawl`): looks at
  // the items of up to `max_buckets` index buckets of one shard that are in
  // `scope`, removes the expired and flushed ones, and moves the cursor on.
  // Counted as crawler_items_checked / crawler_reclaimed. Returns the items
  // removed.
  size_t Crawl(WalkCursor* cursor, size_t max_buckets, CrawlScope* scope);

  // cache_memlimit: a smaller limit evicts down to it lazily.
  void SetMemoryLimit(size_t bytes);
  size_t memory_limit() const;
  size_t item_size_max() const { return config_.item_size_max; }

  // Largest value length that fits an item with this key (memcached's rule:
  // header + key + value + CRLF + CAS must fit item_size_max).
  size_t MaxValueLength(size_t key_len) const;

  StoreStats Stats() const;
  void ResetStats();   // stats reset: counters only, not curr_items/bytes

  // Per size class, seconds since the oldest segment holding (or having held)
  // items of the class was opened: the age of the class's next eviction
  // candidates, memcached's `age`. 0 for a class with no segment. Walks the
  // segment queues: O(segments).
  void ClassAges(uint64_t ages[kMemcachedClasses + 1]) const;

  // memcached's `stats sizes`: a histogram of item sizes (herdless's bytes)
  // in 32-byte buckets, kept while enabled. Enabling counts the items already
  // stored (one pass over the index); disabling drops the histogram.
  void TrackSizes(bool on);
  bool tracking_sizes() const;
  // (bucket upper bound in bytes, items) for every non-empty bucket, in
  // increasing size; empty when not tracking.
  std::vector<std::pair<uint64_t, uint64_t>> SizeHistogram() const;

  // Visits the items of a few index buckets of one shard, at most
  // `max_buckets`, under that shard's lock (visit must be quick and must not
  // call the store), then moves the cursor on. Items that are flushed or
  // expired beyond the stale grace are skipped. An item present during the
  // whole walk is visited exactly once, whatever is stored, deleted or
  // evicted meanwhile and however the index grows. Returns the items visited.
  size_t Walk(WalkCursor* cursor, size_t max_buckets,
              const std::function<void(const WalkedItem&)>& visit);

  // Stores an item with the metadata a snapshot kept: replaces what the key
  // holds; the CAS counter moves past the item's CAS. kStored, kTooLarge,
  // kNoMemory, or kNotStored when it has expired beyond the stale grace.
  StoreStatus Restore(const RestoreRequest& req);

  // Sizes the index of an empty store for about `items` items at once (a
  // snapshot about to be loaded), so that loading moves no index bucket.
  void ReserveItems(size_t items);

  // The CAS counter: the value the next new CAS is drawn from, and a way to
  // move it past a CAS handed out before a restart (it never moves back).
  uint64_t CasCounter() const { return next_cas_.load(std::memory_order_relaxed); }
  void AdvanceCasPast(uint64_t cas);

  // Unix time of a store second (WalkedItem's exptime and last access), for
  // snapshots and dumps.
  int64_t ToUnixTime(int64_t store_s) const;

  // Store time helpers (seconds since the clock's epoch), as memcached's
  // current_time; used by the protocol for `stats` and flush_all delays, and
  // by tests.
  int64_t NowSeconds() const;
  // Converts a client exptime to store seconds (0 = never).
  int64_t ToStoreTime(int64_t exptime) const;
  // Converts a client exptime to the expiry tick items keep
  // (storage/store_time.h; 0 = never, a tick <= now when already expired,
  // clamped to the int32 range).
  int32_t ToExpiryTick(int64_t exptime) const;

  const StoreConfig& config() const { return config_; }

 private:
  struct Shard;
  struct Found;
  struct Times;
  struct Placed;
  class ShardLock;
  class Hasher;
  Shard& ShardFor(uint64_t hash);

  // Helpers defined in item_store.cc; "Locked" ones need the shard's lock held.
  Times Now() const;
  uint64_t NextCas();
  bool ItemFits(size_t key_len, uint32_t client_flags, size_t value_len) const;
  bool IsFlushed(ItemView item, int64_t now_s) const;
  int32_t PlaceholderExptime(int64_t now_us) const;   // an expiry tick
  ItemView ItemAt(uint64_t slot) const;
  Segment* SegmentOf(uint64_t slot) const;
  Found LookupLocked(Shard& shard, std::string_view key, uint64_t hash, const Times& t);

  // New items are placed (room taken at the small queue's tail, or a jumbo
  // segment), written and linked under the shard's lock; when there is no
  // room the caller unlocks, calls MakeRoom() and tries again.
  bool PlaceLocked(size_t bytes, int64_t now_s, Placed* out);
  bool MakeRoom(size_t bytes);
  // For an operation that found no room: unlocks and makes room. True when
  // the operation should start over (from its lookup), false to give up.
  bool RoomToRetry(ShardLock& lock, int attempt, size_t bytes);
  bool EvictSegment(bool compact);
  void EvictFromLocked(Shard& shard, uint64_t* slot, Segment* victim, const Times& t, bool compact);
  void CountKeptLocked(Shard& shard, SegmentQueue from);
  // Links a written item; returns its slot. `new_key`: a store of a key that
  // had no item (a fresh ghost gives it a read). `counts_as_new` false: the
  // same item rewritten (an incr that memcached does in place).
  uint64_t LinkLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView item,
                      uint8_t state, uint8_t freq, bool new_key, bool counts_as_new = true);
  void UnlinkLocked(Shard& shard, uint64_t* slot, bool leave_ghost = false);
  // Counts an item evicted (a victim segment's item that leaves), or
  // reclaimed by eviction (`evicted` false: it had expired or was flushed).
  void CountRemovalLocked(Shard& shard, uint64_t slot, ItemView item, const Times& t, bool evicted);
  void CountFulfilledLocked(Shard& shard, uint64_t token, ItemView fresh, uint32_t took_ms,
                            const Times& t);
  // The expiry crawl's rule for one item: removes it when flushed, or expired
  // beyond the stale grace (a stub when expired at all), counting it as
  // crawler_reclaimed. True when removed.
  bool CrawlItemLocked(Shard& shard, uint64_t* slot, const Times& t);
  // The size histogram (TrackSizes): an item of `bytes` joins (+1) or leaves (-1).
  void CountSizeLocked(const Shard& shard, size_t bytes, int delta);
  bool Watching(StoreEventKind kind) const {
    return config_.events != nullptr && config_.events->Wants(kind);
  }
  // Writes a copy of the slot's item with `fields` (the same key and value)
  // and points the slot at it (the slot pointer stays valid). False when
  // there is no room.
  bool RelocateLocked(Shard& shard, uint64_t* slot, ItemFields fields, int64_t now_s);
  void RepointLocked(Shard& shard, uint64_t* slot, const Placed& placed, ItemView copy, uint8_t freq);
  // Makes sure the slot's item can hold `exptime`, a tick (copying it with room for a
  // TTL if it has none). False when that needs `*needed` bytes there are not.
  bool RoomForExptimeLocked(Shard& shard, uint64_t* slot, int32_t exptime, int64_t now_s,
                            size_t* needed);
  void HitLocked(Shard& shard, uint64_t* slot, const Found& found, const ReadOptions& opts,
                 int64_t touch_exptime, const Times& t, double u, ReadResult* r);
  // Read rates (storage/read_rate.h). A key read twice within one second
  // gets an estimate (from its next store when the item has no room).
  void TrackIfHotLocked(Shard& shard, uint64_t* slot, const Times& t);
  // The estimate a new item of the key gets at `t` with `exptime` (a tick):
  // `old`'s decayed, or none once it has decayed below one read.
  ReadRateState CarriedRateLocked(Shard& shard, ItemView old, const Times& t, int32_t exptime);
  // Remembers the estimate (decayed to now_s) of a key removed on expiry, and
  // recalls it, decayed to now, when the key is not in the index
  // (Shard::expired_rates); none if not remembered.
  static void RememberRateLocked(Shard& shard, uint64_t hash, ReadRateState rate, int64_t now_s);
  ReadRateState RecalledRateLocked(Shard& shard, uint64_t hash, int64_t now_s);
  // Sets the item's last access to now (an access that is not a read),
  // decaying its estimate to it first.
  void MoveAccessTimeLocked(Shard& shard, ItemView item, int64_t now_s);
  // Rewrites the estimate in place, keeping the shard's counts.
  void SetRateLocked(Shard& shard, ItemView item, ReadRateState rate);
  static void CountRateLocked(Shard& shard, ReadRateState rate, int sign);
  void RemoveKey(std::string_view key);
  size_t SweepAll(int64_t flushed_before);
  StoreResult StoreConcat(const StoreRequest& req);
  static void WakeLocked(Shard& shard, std::string_view key);
  // The side table of live leases' grant times, keyed by item location.
  void SetLeaseLocked(Shard& shard, uint64_t slot, uint32_t granted_ms);
  uint32_t LeaseGrantedLocked(const Shard& shard, uint64_t slot) const;
  void DropLeaseLocked(Shard& shard, uint64_t slot);

  StoreConfig config_;
  std::unique_ptr<Shard[]> shards_;
  size_t shard_count_;
  std::unique_ptr<SegmentPool> pool_;     // item memory and the -m budget
  std::unique_ptr<S3Fifo> queues_;
  std::unique_ptr<Hasher> hasher_;
  std::atomic<uint64_t> next_cas_{2};   // CAS 0 and 1 are lease tokens' special values
  std::atomic<uint64_t> evicted_segments_{0};
  std::atomic<size_t> reclaim_cursor_{0};   // shard the expiry crawler visits next
  std::atomic<int64_t> flush_deadline_{0};  // pending delayed flush (store seconds), 0 = none
  std::atomic<int64_t> flush_swept_{0};     // the deadline ReclaimExpired already applied
  std::atomic<uint64_t> crawler_passes_{0};
  // Size histogram (TrackSizes): 32-byte buckets; a shard counts its items
  // into it while its track_sizes is set (both changed under its lock).
  mutable std::mutex sizes_mu_;             // serialises TrackSizes
  std::unique_ptr<std::atomic<uint32_t>[]> sizes_;
  size_t size_buckets_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_STORE_H_
