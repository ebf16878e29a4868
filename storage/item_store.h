// ItemStore: the cache, a facade that composes storage's parts in the order a
// request needs them. Keys are hashed (XXH3) to one of 2^shard_bits shards;
// each shard has a lock, an Index (key -> item location, state bits, access
// frequency), its counters, its live leases' grant times and its parked
// readers. Items are appended to segments (SegmentPool) under one global
// memory budget (-m); when it is spent, S3Fifo picks the segment to evict and
// the store walks its items: expired and stale ones are reclaimed, read ones
// move to the main queue, the others are evicted (storage/eviction.h).
// Expiry is lazy (checked on access) plus ReclaimExpired(), which a
// maintenance timer calls. The per-key lease (memcached's meta leases,
// lease-get, classic stampede modes, XFetch, refresh-ahead) is decided by
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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/clock.h"
#include "storage/flash_store.h"
#include "storage/foreign.h"
#include "storage/item.h"
#include "storage/lease.h"
#include "storage/parked.h"
#include "storage/random.h"
#include "storage/read_rate.h"
#include "storage/store_events.h"
#include "storage/store_requests.h"
#include "storage/store_stats.h"

namespace herdless {

class DeleteHoldoff;
class PeerCopies;
class ChangeJournal;
class Segment;

// -o ext_path: a value the flash tier is to read back for readers parked on
// its key (ItemStore::Read with ReadOptions::flash_park). The fetcher reads it
// on its own threads, fills in `result` and `value`, and hands a batch of
// them to ItemStore::FinishFlashReads.
struct FlashFetch {
  std::string key;
  FlashLocator where;
  uint32_t value_len = 0;
  bool recache = false;   // the read that asked for it is the one in ext_recache_rate to recache
  FlashReadResult result = FlashReadResult::kMiss;   // the fetcher's outcome
  std::string value;                                 // kOk: the verified value
};
class FlashFetcher {
 public:
  virtual ~FlashFetcher() = default;
  // Called under a shard lock, or none: queue the fetches (those of one
  // request, to be finished in one batch) and return.
  virtual void Fetch(std::vector<FlashFetch> fetches) = 0;
};

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
  // Deletes start a hold-off of this long on their key (WarmFillsHeldOff):
  // warm fills from a peer are refused meanwhile. 0 = no hold-off kept.
  uint32_t delete_holdoff_ms = 0;
  // -o warm_peer / ring: each client change is reported (storage/peer_copies.h);
  // one sent on to a peer holds the key's fills off this long, while it travels.
  PeerCopies* peer_copies = nullptr;   // not owned; nullptr = no peer to warm from
  uint32_t forwarded_holdoff_ms = 0;
  // -o ring: keys held for an absent owner, their TTL capped (storage/foreign.h).
  ForeignKeys* foreign = nullptr;   // not owned; nullptr = every key is ours
  // -o ext_path: values of at least ext_item_size bytes that eviction would
  // drop move to `flash` instead, their items becoming stubs; nullptr = none.
  FlashStore* flash = nullptr;           // not owned
  FlashFetcher* flash_fetcher = nullptr; // not owned; required with `flash`
  // A value on flash whose bytes are in a write buffer or the page cache is
  // read at once on the reader's thread (FlashStore::Read's nowait, which
  // never waits for the device); only the others park for the fetcher.
  bool flash_reads_cached = false;
  // ext_item_size and ext_recache_rate (0: never recache) as they are now (the
  // `extstore` command changes them); not owned; nullptr = memcached's defaults.
  const FlashTunables* flash_tunables = nullptr;
  // -o compat=1.6.45 (ExtstoreSettings::as_1645): a value moved to flash keeps
  // its item's fetched mark, and compaction's log lines have 1.6.45's fields.
  bool flash_as_1645 = false;
  // memcached's slab_chunk_max: memcached chunks a larger item, whose value
  // goes to the flash tier's chunked bucket (FlashBucket::kChunked).
  uint32_t flash_chunk_max = 512u << 10;
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
  uint8_t exptime_eighths = 0;   // the expiry tick's eighths of a second past it (0..7)
  int64_t last_access = 0;       // store seconds
  uint64_t cas = 0;
  uint16_t delta_ms = 0;         // smoothed recompute time (XFetch's delta), 0 = unmeasured
  uint8_t frequency = 0;         // 0..3
  bool fetched = false;
  bool stale = false;            // invalidated, or expired within stale_grace
  bool invalidated = false;      // made stale by a delete or store (not by its expiry)
  bool binary_key = false;
  bool no_value = false;         // a lease stub still waiting for its value
  bool flash_stub = false;       // the value is on flash; `value` is its locator (Walk's flash_stubs)
  bool placeholder = false;      // a lease-get placeholder (invisible to plain gets)
  bool lease_out = false;
  double reads_per_s = 0;        // the read-rate estimate now, 0 = untracked
  ReadRateState read_rate;       // ... as the item holds it (as of last_access)
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
  // Starts loading the index bucket `key`'s lookup will read, without a lock: called with the
  // next pipelined request's key while this one runs, so that its cache miss overlaps work.
  // Returns the key's hash, for that request's ReadOptions::key_hash.
  uint64_t Prefetch(std::string_view key) const;
  StoreResult Store(const StoreRequest& req);
  DeleteStatus Delete(const DeleteRequest& req);
  ArithResult Arithmetic(const ArithRequest& req);
  // touch: new exptime on an existing item. Returns false on a miss.
  // `found`, when not null, is filled in from the live item touched;
  // `key_hash` as ReadOptions::key_hash.
  bool Touch(std::string_view key, int64_t exptime, FoundItem* found = nullptr, uint64_t key_hash = 0);

  // flush_all: delay_s <= 0 drops every item now; otherwise every item stored
  // or touched before now + delay_s is dropped once that moment passes.
  // `client`: a client's flush, reported to StoreConfig::peer_copies (false:
  // the daemon's own, e.g. the ring return's).
  void FlushAll(int64_t delay_s, bool client = true);
  // The deadline of the last delayed flush_all, in store seconds (convert
  // with ToUnixTime), whether still ahead or passed: items last stored or
  // touched before it are flushed once it is reached. 0 = none (never
  // delayed, or an immediate flush_all since). For snapshots.
  int64_t FlushDeadline() const;

  // Removes up to `budget` expired items; returns how many were removed. A
  // delayed flush_all whose deadline has passed is applied here first (its
  // items removed, their parked readers woken). The daemon calls it on a timer.
  // Counted as reclaimed / expired_unfetched, as memcached's LRU maintainer
  // counts what it pulls off its LRU tails.
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
  size_t item_size_max() const;

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

  // memcached's `stats sizes`: a histogram of the sizes memcached would give
  // the items stored since enabling (as memcached, not those already there),
  // in 32-byte buckets; disabling drops it.
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
  // Items whose value is on flash are skipped, or with `flash_stubs` (the
  // stop's snapshot, metadump) visited with their 16-byte locator as the value.
  size_t Walk(WalkCursor* cursor, size_t max_buckets,
              const std::function<void(const WalkedItem&)>& visit, bool flash_stubs = false);

  // Stores an item with the metadata a snapshot kept: replaces what the key
  // holds; the CAS counter moves past the item's CAS. kStored, kTooLarge,
  // kNoMemory, or kNotStored when it has expired beyond the stale grace;
  // a value on flash (RestoreRequest::flash_stub) kNotFound when the flash
  // tier does not adopt its record (FlashStore::Adopt).
  StoreStatus Restore(const RestoreRequest& req);

  // Sizes the index of an empty store for about `items` items at once (a
  // snapshot about to be loaded), so that loading moves no index bucket.
  void ReserveItems(size_t items);

  // The CAS counter: the value the next new CAS is drawn from, and a way to
  // move it past a CAS handed out before a restart (it never moves back).
  uint64_t CasCounter() const;
  void AdvanceCasPast(uint64_t cas);

  // Each shard's spread of recompute times (storage/lease.h), in shard order,
  // for a snapshot; and setting them from one, whose writer may have had
  // another (power-of-two) shard count: a shard takes the mean of the saved
  // shards that held its keys. Empty: nothing changes.
  std::vector<double> RecomputeSpreads() const;
  void RestoreRecomputeSpreads(const std::vector<double>& saved);

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

  const StoreConfig& config() const;

  // The flash tier (StoreConfig::flash). A batch of fetches ended. For each
  // whose key still has the stub at its `where`: on kOk the value is served
  // to the readers the fetch woke (ReadResult's pin holds it, not the -m
  // item memory), and with memcached's rule (an item read before within 60
  // s, one such read in ext_recache_rate) it becomes a RAM item again
  // (recache_from_extstore); otherwise the stub is dropped (miss_ or
  // badcrc_from_extstore). The batch's parked readers are woken once, after
  // the whole batch: a multi-key read parked on several keys runs again once.
  void FinishFlashReads(std::vector<FlashFetch>* done);
  // A multi-key read's first pass: parks `ticket` on each of `keys` whose
  // value is on flash and not yet fetched, and fetches them in one batch.
  // Returns how many it parked on (*first: the first of them).
  size_t ParkOnFlash(const std::vector<std::string_view>& keys, const WaitTicket& ticket,
                     std::string_view* first);
  // The flash writer's steps. EvictAhead evicts one segment (its values
  // moving to flash) when less than `headroom` bytes of the budget are free;
  // false when it did nothing. MoveIdleToFlash moves the values of items idle
  // at least `min_idle_s` in a few index buckets of one shard (a walk, as
  // Walk's); returns the values moved.
  bool EvictAhead(size_t headroom);
  size_t MoveIdleToFlash(WalkCursor* cursor, size_t max_buckets, uint32_t min_idle_s);
  // Compaction (FlashStore::PickCompaction's page): the values of the page
  // that stubs still point at are written again and their stubs repointed
  // (with drop_unread, a value never read is dropped with its stub), so the
  // page frees up. Returns the values moved or dropped. CompactFlash picks
  // the page on the flash tunables as they are now, then compacts it; both
  // report memcached's compaction events (StoreEventKind::kCompact*; the
  // check's at most once per ext_max_sleep, as often as memcached checks).
  size_t CompactFlashPage(const FlashStore::Compaction& c);
  size_t CompactFlash();

  // True while warm fills of `key` are refused: a delete of it (any Delete,
  // found or not) is younger than StoreConfig::delete_holdoff_ms, a change
  // sent on to a peer is younger than forwarded_holdoff_ms, or RefuseWarmFills.
  bool WarmFillsHeldOff(std::string_view key) const;
  // Refuses warm fills of `key` (RefuseAllWarmFills: of every key) for
  // `seconds` (INT64_MAX: for good): a peer may still hold an old copy of it.
  // Needs delete_holdoff_ms or peer_copies (else does nothing).
  void RefuseWarmFills(std::string_view key, int64_t seconds);
  void RefuseAllWarmFills(int64_t seconds);

  // -e: every change from now on (a store, delete, touch, incr/decr, flush)
  // is noted in `journal` (storage/change_journal.h), which must outlive the
  // store, and its CAS ceiling kept above every CAS handed out. Set before
  // the store serves, once.
  void SetChangeJournal(ChangeJournal* journal);

 private:
  // The store itself: its shards, memory, queues and the helpers the
  // operations share (storage/item_store_internal.h), made once with the store.
  class Impl;
  std::unique_ptr<Impl> impl_;
  void HoldOff(std::string_view key, int64_t for_us);
  // Read with a ring (-o ring), whose foreign keys are capped, or a change
  // journal: out of line, so that a read without either is a plain tail call.
  ReadResult ReadObserved(std::string_view key, const ReadOptions& opts);

  std::unique_ptr<DeleteHoldoff> holdoff_;   // with delete_holdoff_ms or peer_copies
  ForeignKeys* const foreign_;
  PeerCopies* const peer_copies_;
  ChangeJournal* changes_ = nullptr;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_STORE_H_
