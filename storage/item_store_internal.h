// The parts of ItemStore its implementation files share (item_store.cc: the
// core; item_store_read.cc, item_store_write.cc: the operations;
// item_store_rates.cc: read rates; item_store_memory.cc: placing items,
// eviction, relocation; item_store_admin.cc: flush, expiry crawl, walk,
// restore, stats): the store itself (ItemStore::Impl, to which ItemStore
// forwards each call: one pointer more, no allocation per call), a shard,
// its lock guard, what a lookup found, and small helpers. Not a public
// interface: include it only from those files.
#ifndef HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_
#define HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "storage/eviction.h"
#include "storage/index.h"
#include "storage/item_store.h"
#include "storage/lease.h"
#include "storage/parked.h"
#include "storage/segments.h"
#include "storage/shard_mutex.h"
#include "storage/store_events.h"
#include "storage/store_time.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

// See ItemStore::Impl's helpers.
#define HERDLESS_STEP [[gnu::always_inline]] inline

namespace herdless {
namespace store_internal {

constexpr int kMaxRoomAttempts = 64;   // evictions tried for one new item

inline uint64_t HashKey(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }
// `known`: the hash ItemStore::Prefetch returned for this key, 0 = not known.
inline uint64_t HashKey(std::string_view key, uint64_t known) { return known != 0 ? known : HashKey(key); }

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

// What a lookup reports of a live item (FoundItem).
inline FoundItem LiveItem(ItemView item) {
  return {.live = true, .value_len = item.client_value_len(), .client_flags = item.client_flags(),
          .on_flash = item.is_flash_stub()};
}

// The size memcached gives the item (mem_requested); a flash stub's is that
// of memcached's header item, where it keeps the same key.
inline uint64_t MemcachedSizeOf(ItemView item) {
  return MemcachedLiveSize(item.key_len(), item.value_len(), item.client_flags(), item.is_flash_stub());
}

// memcached's class for the item (stats items, watch lines).
inline int SlabClassOf(ItemView item) { return MemcachedSlabClass(MemcachedSizeOf(item)); }

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

// -o ext_path (item_store_flash.cc): a value fetched from flash, kept for the
// readers its fetch woke. `buffer` is a retired jumbo segment holding the
// value (one pin is the entry's; nullptr: it could not be held, a miss);
// `where` the stub's locator it was read from (another means the key moved
// on); `readers` how many of the reads parked on it (ParkedReaders::Wake's
// count) have yet to take it. An entry whose
// readers never came back goes a couple of seconds later.
struct FetchedValue {
  FlashLocator where;
  Segment* buffer = nullptr;
  uint32_t value_len = 0;
  uint32_t readers = 0;
  int64_t at_s = 0;
};

}  // namespace store_internal

// ---------------------------------------------------------------------------
// The store behind ItemStore's calls, which it forwards unchanged.

class ItemStore::Impl {
 public:
  explicit Impl(const StoreConfig& config);
  ~Impl();

  // ItemStore's calls (their contracts: storage/item_store.h).
  ReadResult Read(std::string_view key, const ReadOptions& opts);
  uint64_t Prefetch(std::string_view key);
  void FinishFlashReads(std::vector<FlashFetch>* done);
  size_t ParkOnFlash(const std::vector<std::string_view>& keys, const WaitTicket& ticket, std::string_view* first);
  bool EvictAhead(size_t headroom);
  size_t MoveIdleToFlash(WalkCursor* cursor, size_t max_buckets, uint32_t min_idle_s);
  size_t CompactFlashPage(const FlashStore::Compaction& c);
  size_t CompactFlash();
  StoreResult Store(const StoreRequest& req);
  DeleteStatus Delete(const DeleteRequest& req);
  ArithResult Arithmetic(const ArithRequest& req);
  bool Touch(std::string_view key, int64_t exptime, FoundItem* found, uint64_t key_hash);
  void FlushAll(int64_t delay_s);
  int64_t flush_deadline() const { return flush_deadline_.load(std::memory_order_relaxed); }
  size_t ReclaimExpired(size_t budget);
  size_t Crawl(WalkCursor* cursor, size_t max_buckets, CrawlScope* scope);
  void SetMemoryLimit(size_t bytes);
  size_t memory_limit() const;
  size_t MaxValueLength(size_t key_len) const;
  StoreStats Stats() const;
  void ResetStats();
  void ClassAges(uint64_t ages[kMemcachedClasses + 1]) const;
  void TrackSizes(bool on);
  bool tracking_sizes() const;
  std::vector<std::pair<uint64_t, uint64_t>> SizeHistogram() const;
  size_t Walk(WalkCursor* cursor, size_t max_buckets,
              const std::function<void(const WalkedItem&)>& visit, bool flash_stubs);
  StoreStatus Restore(const RestoreRequest& req);
  void ReserveItems(size_t items);
  uint64_t CasCounter() const { return next_cas_.load(std::memory_order_relaxed); }
  void AdvanceCasPast(uint64_t cas);
  // -e's change journal keeps a ceiling above every CAS handed out, so that a
  // start after a crash hands none out again (a lease token included).
  static constexpr uint64_t kCasReserveBlock = uint64_t{1} << 16;
  void SetCasJournal(ChangeJournal* journal);
  void ReserveCasAhead(uint64_t from);
  std::vector<double> RecomputeSpreads() const;
  void RestoreRecomputeSpreads(const std::vector<double>& saved);
  int64_t ToUnixTime(int64_t store_s) const;
  int64_t NowSeconds() const;
  int64_t ToStoreTime(int64_t exptime) const;
  int32_t ToExpiryTick(int64_t exptime) const;
  // The expiry tick of a value that expired ago_s seconds ago (at least a tick ago).
  int32_t ExpiredTick(int64_t ago_s) const;
  const StoreConfig& config() const { return config_; }
  // The live ext_* settings (StoreConfig::flash_tunables, or memcached's defaults).
  const FlashTunables& flash_tunables() const;

  // The parts the helpers below share (defined after the class).
  struct Shard;
  struct Found;
  struct Times;
  struct Placed;
  struct Hit;   // item_store_read.cc
  class ShardLock;
  class Hasher;

 private:
  // Helpers; "Locked" ones need the shard's lock held. Those declared inline
  // are defined at the end of this header. A HERDLESS_STEP is a step of the
  // operations of one file, written apart so that each reads top to bottom,
  // and folded back into its callers there: the hot path pays no call for it.

  // The core (item_store.cc).
  inline Shard& ShardFor(uint64_t hash);
  inline Times Now() const;
  inline uint64_t NextCas();
  bool ItemFits(size_t key_len, uint32_t client_flags, size_t value_len) const;
  inline bool IsFlushed(ItemView item, int64_t now_s) const;
  // Its key is foreign (-o ring): counted in curr_foreign_items, and never
  // kept by eviction. Costs a ring lookup, only with a ring.
  inline bool IsForeign(ItemView item) const;
  inline ItemView ItemAt(uint64_t slot) const;
  inline Segment* SegmentOf(uint64_t slot) const;
  // The key's item as an operation sees it (item_store.cc says how). Inline
  // for the common case, a live item; LookupRestLocked the others (`slot`:
  // what the index found, or nullptr).
  inline Found LookupLocked(Shard& shard, std::string_view key, uint64_t hash, const Times& t);
  Found LookupRestLocked(Shard& shard, uint64_t* slot, uint64_t hash, const Times& t);
  // A write's attempts on one key (item_store_write.cc): the key's shard
  // locked and the key looked up, then op(lock, found, times, attempt),
  // which returns true once it has answered (into its caller's result), or
  // false once it has let the lock go to make room: then the lookup and op
  // run again.
  static constexpr bool kAnswered = true, kRetry = false;   // what op returns
  template <typename Op>
  inline void LockedAttempts(Shard& shard, uint64_t hash, std::string_view key, Op&& op);
  void RemoveKey(std::string_view key);
  // Places a new item and writes its header (`fields`, made full for a jumbo;
  // a new CAS drawn into them when `draw_cas`); the caller writes the value.
  // kRetry: there was no room, so the lock was let go and room made: start
  // over from the lookup. kNoRoom: give up (at once when !make_room).
  enum class Placement : uint8_t { kWritten, kRetry, kNoRoom };
  inline Placement WriteNewLocked(ShardLock& lock, int attempt, const Times& t, bool draw_cas,
                                  ItemFields* fields, Placed* placed, ItemView* item, bool make_room = true);
  // Links a written item; returns its slot. `new_key`: a store of a key that
  // had no item (a fresh ghost gives it a read). `counts_as_new` false: the
  // same item rewritten (an incr that memcached does in place).
  uint64_t LinkLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView item,
                      uint8_t state, uint8_t freq, bool new_key, bool counts_as_new = true);
  void UnlinkLocked(Shard& shard, uint64_t* slot, bool leave_ghost = false);
  // Counts an item evicted (a victim segment's item that leaves), or
  // reclaimed by eviction (`evicted` false: it had expired or was flushed).
  void CountRemovalLocked(Shard& shard, uint64_t slot, ItemView item, const Times& t, bool evicted);
  // Counts an expired or flushed item whose memory is freed without a read
  // (memcached's reclaimed: its LRU maintainer and allocator pulling tails).
  static void CountReclaimedLocked(Shard& shard, int slab_class, bool unfetched);
  // A store that found its key's expired or flushed copy (and removed it).
  static void CountStoreOverExpiredLocked(Shard& shard, const Found& f);
  // Notes in *res what a store's lookup found (StoreResult::found).
  void NoteFoundLocked(const Found& f, StoreResult* res) const;
  // What a delete, touch or incr's lookup found, as the watcher logs it.
  FoundItem FoundOf(const Found& f) const;
  void CountFulfilledLocked(Shard& shard, uint64_t token, ItemView fresh, uint32_t took_ms,
                            const Times& t);
  bool Watching(StoreEventKind kind) const {
    return config_.events != nullptr && config_.events->Wants(kind);
  }
  static void WakeLocked(Shard& shard, std::string_view key);
  // The side table of live leases' grant times, keyed by item location;
  // `early`: LeaseTable::Set's.
  void SetLeaseLocked(Shard& shard, uint64_t slot, uint32_t granted_ms, bool early = false);
  // Expired for every reader: a stub at once, a value beyond the stale grace
  // unless an early recompute of it (XFetch, refresh-ahead) is still under
  // way, for which it waits as a stale value: one recompute per expiry, and
  // no reader meets a miss meanwhile. (Flushed items are gone as well.)
  bool ExpiredForAllLocked(const Shard& shard, uint64_t slot, ItemView item, const Times& t) const;
  inline uint32_t LeaseGrantedLocked(const Shard& shard, uint64_t slot) const;
  void DropLeaseLocked(Shard& shard, uint64_t slot);

  // Memory (item_store_memory.cc). New items are placed (room taken at the
  // small queue's tail, or a jumbo segment), written and linked under the
  // shard's lock; when there is no room the caller unlocks, calls MakeRoom()
  // and tries again.
  bool PlaceLocked(size_t bytes, int64_t now_s, Placed* out);
  bool MakeRoom(size_t bytes);
  // For an operation that found no room: unlocks and makes room. True when
  // the operation should start over (from its lookup), false to give up.
  bool RoomToRetry(ShardLock& lock, int attempt, size_t bytes);
  bool EvictSegment(bool compact);
  void EvictFromLocked(Shard& shard, uint64_t* slot, Segment* victim, const Times& t, bool compact);
  void CountKeptLocked(Shard& shard, SegmentQueue from);
  // Writes a copy of the slot's item with `fields` (the same key and value)
  // and points the slot at it (the slot pointer stays valid). False when
  // there is no room.
  bool RelocateLocked(Shard& shard, uint64_t* slot, ItemFields fields, int64_t now_s);
  void RepointLocked(Shard& shard, uint64_t* slot, const Placed& placed, ItemView copy, uint8_t freq);
  // Makes sure the slot's item can hold `exptime`, a tick (copying it with room for a
  // TTL if it has none; its TTL stays as it was). False when that needs `*needed`
  // bytes there are not.
  bool RoomForExptimeLocked(Shard& shard, uint64_t* slot, int32_t exptime, int64_t now_s,
                            size_t* needed);

  // Reads (item_store_read.cc): a miss that creates a stub holding the key's
  // lease, and a hit in its steps.
  int32_t PlaceholderExptime(int64_t now_us) const;   // an expiry tick
  HERDLESS_STEP static bool VisibleTo(const Found& f, const ReadOptions& opts);
  ItemFields StubFields(std::string_view key, const Found& f, const ReadOptions& opts,
                        int32_t touch_exptime, const Times& t, uint8_t* state) const;
  void LinkStubLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView stub, uint8_t state,
                      bool placeholder, const Times& t, ReadResult* r);
  HERDLESS_STEP void HitLocked(Shard& shard, uint64_t* slot, const Found& found, const ReadOptions& opts,
                               int32_t touch_exptime, const Times& t, double u, ReadResult* r);
  HERDLESS_STEP Hit AccessLocked(Shard& shard, uint64_t* slot, uint64_t hash, const ReadOptions& opts,
                                 int32_t touch_exptime, const Times& t, ReadResult* r);
  HERDLESS_STEP static void TouchHit(Hit* h, int32_t touch_exptime, const Times& t);
  HERDLESS_STEP void DecideLeaseLocked(Shard& shard, Hit& h, bool stale, const ReadOptions& opts,
                                       const Times& t, double u, ReadResult* r);
  void GrantLeaseLocked(Shard& shard, Hit& h, const LeaseView& view, const LeaseDecision& d,
                        const Times& t);
  void RegrantLocked(Shard& shard, Hit& h, uint32_t dead_granted_ms, const Times& t);
  HERDLESS_STEP void FillHit(const Hit& h, bool stale, ReadResult* r) const;
  void CountStaleServedLocked(Shard& shard, ItemView item, const Times& t);

  // Writes (item_store_write.cc): a store decides what to do with the item
  // the lookup found, builds the new one's fields and links it in its place.
  // kStale: an older CAS (stale_on_older_cas); kStaleCopy: StoreRequest::stale_copy.
  enum class StoreAction : uint8_t { kPlain, kStale, kStaleCopy, kReject };
  HERDLESS_STEP StoreAction StoreActionLocked(Shard& shard, const Found& f, const StoreRequest& req,
                                              bool first_attempt, const Times& t, StoreStats::Class& counts,
                                              StoreStatus* status);
  // What a new value of a key does with the key's lease: ends it (fulfilled,
  // after took_ms), or keeps it (a new item with kItemTokenSent: granted_ms).
  struct LeaseHandover {
    bool fulfilled = false;
    bool measured = false;         // fulfilled within lease_timeout: took_ms is a recompute time
    uint32_t took_ms = 0;
    uint16_t mean_before_ms = 0;   // the key's recompute time before this sample (fulfilled)
    uint32_t granted_ms = 0;
  };
  HERDLESS_STEP ItemFields StoreFieldsLocked(Shard& shard, uint64_t hash, const Found& f,
                                             const StoreRequest& req, int32_t exptime, StoreAction action,
                                             const Times& t, uint8_t* state, LeaseHandover* lease);
  HERDLESS_STEP LeaseHandover EndLeaseLocked(const Shard& shard, uint64_t old_slot, ItemFields* fields,
                                             const Times& t) const;
  // Links a new item of the key in the place of the one the lookup found (if
  // any), counting the lease it fulfils (into the shard's recompute spread
  // too: here, once the item is placed, so a placement that retries counts
  // it once), keeping the one it keeps.
  HERDLESS_STEP uint64_t ReplaceLocked(Shard& shard, uint64_t hash, const Found& f, const Placed& placed,
                                       ItemView item, uint8_t state, uint8_t freq, const LeaseHandover& lease,
                                       const Times& t, bool counts_as_new = true);
  StoreResult StoreConcat(const StoreRequest& req);
  // md I: the item stays as a stale value, its lease cancelled by a new CAS
  // (`new_cas`, which it can hold, or 0: drawn).
  void InvalidateLocked(Shard& shard, uint64_t* slot, uint64_t new_cas);
  // Delete's empty_value (md x): the found item replaced by an empty one.
  Placement EmptyValueLocked(ShardLock& lock, int attempt, Shard& shard, uint64_t hash, const Found& f,
                             const DeleteRequest& req, const Times& t);
  HERDLESS_STEP static ArithStatus CountedValueLocked(Shard& shard, ItemView old_item, const ArithRequest& req,
                                                      bool first_attempt, uint64_t* value);

  // Read rates (item_store_rates.cc; storage/read_rate.h). A key read twice
  // within one second gets an estimate (from its next store when the item
  // has no room). TrackIfHotLocked, inline: a read of an item without an
  // estimate; StartTrackingLocked the rare start, out of line.
  HERDLESS_STEP void TrackIfHotLocked(Shard& shard, uint64_t* slot, uint64_t hash, const Times& t);
  void StartTrackingLocked(Shard& shard, ItemView item, uint64_t hash, const Times& t);
  // The remembered estimate of a key whose item has no room for one, as of
  // the item's last access; none if not remembered.
  ReadRateState RememberedAsOfLocked(Shard& shard, uint64_t hash, ItemView item);
  // The estimate a new item of the key gets at `t` with `exptime` (a tick):
  // `old`'s decayed, or none once it has decayed below one read.
  ReadRateState CarriedRateLocked(Shard& shard, ItemView old, const Times& t, int32_t exptime);
  // Remembers the estimate (decayed to now_s) of a key removed on expiry, and
  // recalls it, decayed to now, when the key is not in the index
  // (Shard::remembered_rates); none if not remembered.
  static void RememberRateLocked(Shard& shard, uint64_t hash, ReadRateState rate, int64_t now_s);
  ReadRateState RecalledRateLocked(Shard& shard, uint64_t hash, int64_t now_s);
  // Sets the item's last access to now (an access that is not a read),
  // decaying its estimate to it first.
  void MoveAccessTimeLocked(Shard& shard, ItemView item, int64_t now_s);
  // Rewrites the estimate in place, keeping the shard's counts.
  void SetRateLocked(Shard& shard, ItemView item, ReadRateState rate);
  static inline void CountRateLocked(Shard& shard, ReadRateState rate, int sign);

  // The flash tier (item_store_flash.cc; StoreConfig::flash). A victim's big
  // value moves to flash, a stub with access count `freq` at M's tail in its
  // place (false: it could not, evict or keep it as usual). A stub's record is
  // released when the stub goes. A read of a stub whose value was fetched for
  // it is served from Shard::fetched; otherwise it parks and fetches (into
  // *batch, or at once when batch is nullptr), or misses.
  bool DemoteLocked(Shard& shard, uint64_t* slot, int64_t now_s, uint8_t freq);
  void ReleaseFlashLocked(ItemView stub);
  bool AdoptFlashStub(std::string_view key, std::string_view stub_value, bool adopt);
  void FetchFromFlashLocked(Shard& shard, uint64_t* slot, std::string_view key, const WaitTicket* ticket,
                            std::vector<FlashFetch>* batch, ReadResult* r);
  // Read's step for a stub it sees: true when the read is answered (parked, or a
  // miss); false when the fetched value waits for it: Read then runs the hit
  // as for a RAM item and ServeFetchedLocked puts the value in *r.
  bool ReadStubLocked(Shard& shard, const Found& f, std::string_view key, const ReadOptions& opts, ReadResult* r);
  void ServeFetchedLocked(Shard& shard, std::string_view key, ReadResult* r);
  // A hit on a stub for a read that wants no value: its length, no bytes.
  void LeaveOnFlashLocked(const Found& f, ReadResult* r) const;
  // The value fetched for the stub, if one waits for its readers.
  static store_internal::FetchedValue* FetchedForLocked(Shard& shard, std::string_view key, ItemView stub);
  // StoreConfig::flash_reads_cached: a read of the stub `f` found may fetch
  // its value at once (*fetch: what to read). FetchCachedNow reads it from
  // the page cache and finishes it as FinishFlashReads would, kept for
  // `own_readers` more reads (`reader`'s); false (nothing done) when it is not cached.
  bool FetchNowFitsLocked(Shard& shard, const Found& f, std::string_view key, const WaitTicket* park,
                          FlashFetch* fetch);
  bool FetchCachedNow(FlashFetch* fetch, uint32_t own_readers, const WaitTicket* reader);
  // Both, for one reader: kNotTried (it does not fit; `lock` still held), or the lock given up
  // and the value read (kFetched) or found not cached (kNotCached). Out of line, so that the
  // fetch record is no part of a RAM hit's frame.
  enum class FetchNow : uint8_t { kNotTried, kNotCached, kFetched };
  FetchNow TryFetchNowLocked(ShardLock& lock, Shard& shard, const Found& f, std::string_view key,
                             const WaitTicket* park);
  // Recaching (FlashFetch::recache): whether a read of the stub at `slot` may
  // bring its value back to RAM, and, counting one such read by `reader`,
  // whether it is the one in ext_recache_rate that does.
  bool MayRecacheLocked(uint64_t slot);
  bool TakeRecacheTurn(const WaitTicket* reader);
  // One fetch of a batch ended: settled under its key's lock, its parked
  // readers woken (into *woken), its value kept for them and `own_readers`.
  void FinishOneFetch(FlashFetch& done, uint32_t own_readers, std::vector<WaitTicket>* woken);
  // One fetch of FinishFlashReads, under its key's lock: kRetry when it let
  // the lock go to make room for a recache.
  bool FinishFetchLocked(ShardLock& lock, Shard& shard, const Found& f, const Times& t, int attempt,
                         FlashFetch& done);
  bool RecacheLocked(ShardLock& lock, Shard& shard, const Found& f, const Times& t, int attempt,
                     std::string_view value, bool* placed);
  void KeepFetchedLocked(Shard& shard, const FlashFetch& done, const Times& t);
  // Drops every fetched value still held (the store's end).
  void DropFetched();
  // Moves an item's class counts (items, bytes, memcached's bytes) from
  // `from`'s class to `to`'s, before RepointLocked swaps one for the other.
  static void MoveClassLocked(Shard& shard, ItemView from, ItemView to);
  // The stub replacing the slot's item, whose value is at `where` (CAS unchanged;
  // on a page of `bucket`'s). At M's tail with `freq` (eviction's copies,
  // beyond the limit if need be), or placed as a new item.
  bool SwapToStubLocked(Shard& shard, uint64_t* slot, const FlashLocator& where, int64_t now_s,
                        bool at_main_tail, uint8_t freq, FlashBucket bucket);

  // Maintenance (item_store_admin.cc).
  size_t SweepAll(int64_t flushed_before);
  // The expiry crawl's rule for one item: removes it when flushed, or expired
  // beyond the stale grace (a stub when expired at all), counting it as
  // crawler_reclaimed (an lru_crawler crawl) or reclaimed (the background
  // reclaim). True when removed.
  bool CrawlItemLocked(Shard& shard, uint64_t* slot, const Times& t, bool by_crawler);
  // The size histogram (TrackSizes): the item joins (+1) or leaves (-1), at
  // the size memcached gives it (MemcachedSizeOf), if its CAS is one handed out
  // since tracking began (as memcached's stats_sizes_cas_min).
  void CountSizeLocked(const Shard& shard, ItemView item, int delta);
  // Gives a linked item a new CAS in place, keeping the size histogram's
  // count of it right (its CAS decides whether it is counted).
  void SetCasLocked(const Shard& shard, ItemView item, uint64_t cas);

  StoreConfig config_;
  std::unique_ptr<Shard[]> shards_;
  size_t shard_count_;
  std::unique_ptr<SegmentPool> pool_;     // item memory and the -m budget
  std::unique_ptr<S3Fifo> queues_;
  std::unique_ptr<Hasher> hasher_;
  std::atomic<uint64_t> next_cas_{2};   // CAS 0 and 1 are lease tokens' special values
  ChangeJournal* cas_journal_ = nullptr;  // SetCasJournal's
  std::atomic<uint64_t> evicted_segments_{0};
  std::atomic<size_t> reclaim_cursor_{0};   // shard the expiry crawler visits next
  std::atomic<int64_t> flush_deadline_{0};  // pending delayed flush (store seconds), 0 = none
  std::atomic<int64_t> flush_swept_{0};     // the deadline ReclaimExpired already applied
  std::atomic<uint64_t> crawler_passes_{0};
  int64_t fraginfo_logged_us_ = 0;          // CompactFlash's last compact_fraginfo (the writer's thread only)
  std::atomic<uint64_t> recache_counter_{0};  // reads that may recache, of readers without a counter
  // Size histogram (TrackSizes): memcached's 32-byte buckets up to
  // item_size_max (a larger item is not counted, as in memcached); a shard counts its items
  // into it while its track_sizes is set (both changed under its lock). Only items
  // whose CAS is at least sizes_cas_min_ count: those stored since tracking began.
  mutable std::mutex sizes_mu_;             // serialises TrackSizes
  std::unique_ptr<std::atomic<uint32_t>[]> sizes_;
  size_t size_buckets_ = 0;
  uint64_t sizes_cas_min_ = 0;              // set before any shard's track_sizes
};

// ---------------------------------------------------------------------------
// The shard.

struct ItemStore::Impl::Times {
  int64_t now_us;
  int64_t now_s;     // whole store seconds: last access, flush deadlines
  int64_t now_tick;  // store ticks (storage/store_time.h): expiry
  uint32_t now_ms;  // mod 2^32, as lease grant times
};

// What a lookup found under the key.
struct ItemStore::Impl::Found {
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
  // The removed item's size class and whether it was never read, for a store
  // that counts it reclaimed (memcached's allocator reuses such an item).
  int removed_class = 0;
  bool removed_unfetched = false;
  // The read-rate estimate of an expired item the lookup removed, decayed to
  // now, for the key's next item (a lease stub, or the new value).
  ReadRateState carried_rate;
  uint64_t hash = 0;          // the key's
};

// Where a new item goes: a segment (jumbo or the small queue's open one) and
// an offset in it, with room taken for `bytes`.
struct ItemStore::Impl::Placed {
  Segment* segment = nullptr;
  uint32_t offset = 0;
  uint32_t bytes = 0;
};

struct ItemStore::Impl::Shard {
  ShardMutex mu;
  Index index;
  size_t bytes = 0;       // herdless's bytes of the linked items
  size_t leases_out = 0;  // linked items with kItemTokenSent
  size_t foreign_items = 0;   // linked items whose key IsForeign
  double recompute_spread = kInitialSpread;   // SmoothSpread of the leases fulfilled here
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
  // estimate from here (Store, a stub created on a miss). A direct-mapped
  // table by hash, overwritten freely.
  struct RememberedRate {
    uint64_t hash = 0;
    uint16_t count = 0;   // ReadRateState::count, as of at_s
    uint8_t aux = 0;      // ReadRateState::aux (its TTL code)
    int64_t at_s = 0;
  };
  static constexpr size_t kRememberedRates = 16;
  RememberedRate remembered_rates[kRememberedRates];
  bool track_sizes = false;        // count linked items in Impl::sizes_
  // -o ext_path: values fetched from flash for the readers their fetch woke
  // (store_internal::FetchedValue), by key.
  std::unordered_map<std::string, store_internal::FetchedValue, StringKeyHash, std::equal_to<>> fetched;
  int64_t fetched_swept_s = 0;
};

// Hashes a slot's item (the index rehashes buckets as it grows).
class ItemStore::Impl::Hasher final : public SlotHasher {
 public:
  explicit Hasher(const Impl* store) : store_(store) {}
  uint64_t HashOf(uint64_t slot_value) const override {
    return store_internal::HashKey(store_->ItemAt(slot_value).key());
  }

 private:
  const Impl* store_;
};

// The shard's lock. Tickets woken and index tables retired while it was held
// are delivered and unmapped after it is released, so a sink never runs
// under a store lock and a big munmap never holds the shard.
class ItemStore::Impl::ShardLock {
 public:
  ShardLock(const Impl* store, Shard& shard) : store_(store), shard_(shard) { lock(); }
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
    UnlockAndDeliver();
  }

 private:
  // Wakes the readers woken under the lock and frees the index's retired
  // tables, once the lock is let go. Out of line: the common unlock stays small.
  void UnlockAndDeliver();

  const Impl* store_;
  Shard& shard_;
  bool locked_ = false;
};


// ---------------------------------------------------------------------------
// The inline helpers of the core, which every operation calls.

ItemStore::Impl::Shard& ItemStore::Impl::ShardFor(uint64_t hash) {
  // High bits pick the shard, low bits the bucket, so the two stay independent.
  if (config_.shard_bits == 0) return shards_[0];
  return shards_[hash >> (64 - config_.shard_bits)];
}

ItemView ItemStore::Impl::ItemAt(uint64_t slot_value) const {
  return ItemView(pool_->Get(slot::Segment(slot_value))->At(slot::Offset(slot_value)));
}

Segment* ItemStore::Impl::SegmentOf(uint64_t slot_value) const {
  return pool_->Get(slot::Segment(slot_value));
}

ItemStore::Impl::Times ItemStore::Impl::Now() const {
  const int64_t us = config_.clock->NowMicros();
  return Times{us, us / 1000000, TickOf(us), static_cast<uint32_t>(us / 1000)};
}

// The counter stays below kNarrowCasLimit (items store it in 6 bytes): after
// 2^48 stores it starts again from 2. With a change journal, every
// kCasReserveBlock values its ceiling is raised two blocks ahead.
uint64_t ItemStore::Impl::NextCas() {
  const uint64_t c = next_cas_.fetch_add(1, std::memory_order_relaxed);
  if ((c & (kCasReserveBlock - 1)) == 0 && cas_journal_ != nullptr) [[unlikely]] ReserveCasAhead(c);
  return c < kNarrowCasLimit ? c : 2 + (c - 2) % (kNarrowCasLimit - 2);
}

bool ItemStore::Impl::IsFlushed(ItemView item, int64_t now_s) const {
  const int64_t deadline = flush_deadline_.load(std::memory_order_relaxed);
  return deadline != 0 && now_s >= deadline && item.last_access() < deadline;
}

bool ItemStore::Impl::IsForeign(ItemView item) const {
  return config_.foreign != nullptr && config_.foreign->Foreign(item.key());
}

uint32_t ItemStore::Impl::LeaseGrantedLocked(const Shard& shard, uint64_t s) const {
  return shard.leases.GrantedAt(slot::LocationKey(s));
}

void ItemStore::Impl::CountRateLocked(Shard& shard, ReadRateState rate, int sign) {
  if (!rate.present()) return;
  if (sign > 0) {
    shard.rated_items++;
    if (rate.hot()) shard.hot_items++;
  } else {
    shard.rated_items--;
    if (rate.hot()) shard.hot_items--;
  }
}

ItemStore::Impl::Found ItemStore::Impl::LookupLocked(Shard& shard, std::string_view key, uint64_t hash,
                                                     const Times& t) {
  uint64_t* slot = shard.index.Find(hash, [&](uint64_t s) { return ItemAt(s).key() == key; });
  if (slot != nullptr) {
    const ItemView item = ItemAt(*slot);
    if (!IsFlushed(item, t.now_s) && !store_internal::IsExpiredAt(item, t.now_tick)) {
      Found f;
      f.hash = hash;
      f.slot = slot;
      f.presence = store_internal::Has(*slot, kItemPlaceholder) ? Found::kPlaceholder : Found::kLive;
      return f;
    }
  }
  return LookupRestLocked(shard, slot, hash, t);
}

// The key's reads are counted in the shard's remembered rates while its item
// has no room for an estimate (StartTrackingLocked says why).
void ItemStore::Impl::TrackIfHotLocked(Shard& shard, uint64_t* slot, uint64_t hash, const Times& t) {
  const ItemView item = ItemAt(*slot);
  if (item.read_rate().present() || !store_internal::Has(*slot, kItemFetched)) return;
  Shard::RememberedRate& remembered = shard.remembered_rates[hash % Shard::kRememberedRates];
  if (!item.CanHoldReadRate() && remembered.hash == hash && remembered.count != 0) {
    remembered.count = ReadRate::AfterRead(remembered.count, std::max<int64_t>(0, t.now_s - remembered.at_s),
                                           store_internal::NextRandom(&shard.random));
    remembered.at_s = t.now_s;
    return;
  }
  if (item.last_access() == t.now_s) StartTrackingLocked(shard, item, hash, t);
}

template <typename Op>
void ItemStore::Impl::LockedAttempts(Shard& shard, uint64_t hash, std::string_view key, Op&& op) {
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, key, hash, t);
    if (op(lock, f, t, attempt)) return;
  }
}

ItemStore::Impl::Placement ItemStore::Impl::WriteNewLocked(ShardLock& lock, int attempt, const Times& t,
                                                           bool draw_cas, ItemFields* fields, Placed* placed,
                                                           ItemView* item, bool make_room) {
  fields->full_header = false;
  fields->full_header = ItemSize(*fields) > pool_->max_fixed_item();
  if (!PlaceLocked(ItemSize(*fields), t.now_s, placed)) {
    if (!make_room) return Placement::kNoRoom;
    return RoomToRetry(lock, attempt, ItemSize(*fields)) ? Placement::kRetry : Placement::kNoRoom;
  }
  if (draw_cas) fields->cas = NextCas();
  *item = WriteItem(placed->segment->At(placed->offset), *fields);
  return Placement::kWritten;
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_STORE_INTERNAL_H_
