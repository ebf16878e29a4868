// ItemStore's core, which every operation uses. Reading order: construction,
// time and limits, linking and unlinking, lookup. The operations are in
// item_store_read.cc (Read) and item_store_write.cc (Store, Delete, Touch,
// Arithmetic), the keys' read rates in item_store_rates.cc, placing new
// items and eviction in item_store_memory.cc, and flush, the expiry crawl,
// walk, restore and stats in item_store_admin.cc.
//
// Locking: one shard lock at a time, never two. A new item is placed, written
// and linked under its shard's lock (placing takes the open segment's lock
// inside it); anything that may evict (MakeRoom) runs with no shard lock
// held, so an operation that finds no room unlocks, makes room and starts
// over from its lookup. The evictor takes the shard lock of each item of its
// victim segment in turn.
//
// Parked readers (classic wait mode) are tickets in their shard's
// ParkedReaders. Every change that may end a wait (an item linked or
// unlinked, a lease re-granted or cancelled) wakes the key's tickets, and
// ShardLock hands them to the wake sink once the lock is released.
#include "storage/item_store.h"

#include "storage/change_journal.h"
#include "storage/holdoff.h"
#include "storage/peer_copies.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "storage/item_store_internal.h"
#include "storage/limits.h"

namespace herdless {

using namespace store_internal;

namespace {

// memcached's item_size_ok: a 48-byte header, the 8-byte CAS, key + NUL, 4
// bytes of client flags when they are not 0, and the value with its CRLF must
// fit item_size_max. Checked against Debian's memcached 1.6.18.
constexpr size_t kMemcachedHeaderBytes = 48;
constexpr size_t kMemcachedCasBytes = 8;
constexpr size_t kMemcachedFlagsBytes = 4;

constexpr int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;  // 30 days, as memcached

}  // namespace

ItemStore::Impl::Impl(const StoreConfig& config)
    : config_(config),
      shard_count_(size_t{1} << std::clamp(config.shard_bits, 0, 16)) {
  assert(config_.clock != nullptr && config_.random != nullptr);
  config_.shard_bits = std::clamp(config.shard_bits, 0, 16);
  if (config_.segment_size == 0) config_.segment_size = SegmentPool::SegmentSizeFor(config.memory_limit);
  shards_ = std::make_unique<Shard[]>(shard_count_);
  pool_ = std::make_unique<SegmentPool>(config_.segment_size, config.memory_limit);
  queues_ = std::make_unique<S3Fifo>(pool_.get());
  hasher_ = std::make_unique<Hasher>(this);
}

ItemStore::Impl::~Impl() {
  // Every segment goes back to the pool; a segment readers still pin stays
  // until they release it, so then the pool must outlive the store: it is
  // kept reachable on purpose (a leak only in this shutdown corner).
  DropFetched();
  queues_->RetireAll();
  if (pool_->AnyPinned()) {
    static std::mutex graveyard_mu;
    static auto* graveyard = new std::vector<std::unique_ptr<SegmentPool>>;
    std::lock_guard<std::mutex> lock(graveyard_mu);
    graveyard->push_back(std::move(pool_));
  }
}

// ---------------------------------------------------------------------------
// Time and CAS.

int64_t ItemStore::Impl::NowSeconds() const { return config_.clock->NowMicros() / 1000000; }

int64_t ItemStore::Impl::ToStoreTime(int64_t exptime) const {
  if (exptime == 0) return 0;
  const int64_t now = NowSeconds();
  // "Already expired" must be a non-zero time <= now (0 means never). Store
  // time may itself be 0 (a ManualClock's start), hence -1 in that case.
  const int64_t expired = now - 1 != 0 ? now - 1 : -1;
  if (exptime < 0) return expired;
  int64_t t;
  if (exptime <= kMaxRelativeExptime) {
    t = now + exptime;
  } else {
    t = exptime - (config_.clock->UnixSeconds() - now);  // absolute Unix time
    if (t <= now) return expired;
  }
  return std::min<int64_t>(t, INT32_MAX);
}

int32_t ItemStore::Impl::ToExpiryTick(int64_t exptime) const {
  if (exptime == 0) return 0;
  const int64_t now_tick = TickOf(config_.clock->NowMicros());
  // As ToStoreTime: "already expired" is a non-zero tick <= now.
  const int64_t expired = now_tick - 1 != 0 ? now_tick - 1 : -1;
  if (exptime < 0) return ClampStoreTime(expired);
  int64_t tick;
  if (exptime <= kMaxRelativeExptime) {
    // The tick the expiry falls in: the item lives exptime seconds, less
    // what the clock is into its current tick (under 1/8 s).
    tick = now_tick + exptime * kTicksPerSecond;
  } else {
    // An absolute Unix time: whole seconds, as the client gave it.
    const int64_t now_s = NowSeconds();
    const int64_t store_s = exptime - (config_.clock->UnixSeconds() - now_s);
    if (store_s <= now_s) return ClampStoreTime(expired);
    tick = store_s * kTicksPerSecond;
    if (tick <= now_tick) return ClampStoreTime(expired);
  }
  return static_cast<int32_t>(std::min<int64_t>(tick, INT32_MAX));
}

int32_t ItemStore::Impl::ExpiredTick(int64_t ago_s) const {
  const int64_t now_tick = TickOf(config_.clock->NowMicros());
  const int64_t tick = now_tick - 1 - std::clamp<int64_t>(ago_s, 0, INT32_MAX) * kTicksPerSecond;
  return ClampStoreTime(tick != 0 ? tick : -1);   // 0 would be "never"
}

int64_t ItemStore::Impl::ToUnixTime(int64_t store_s) const {
  return store_s + (config_.clock->UnixSeconds() - NowSeconds());
}

// ---------------------------------------------------------------------------
// Limits.

bool ItemStore::Impl::ItemFits(size_t key_len, uint32_t client_flags, size_t value_len) const {
  if (key_len > kMaxKeyLength) return false;
  const size_t total = kMemcachedHeaderBytes + kMemcachedCasBytes + key_len + 1 +
                       (client_flags != 0 ? kMemcachedFlagsBytes : 0) + value_len + 2;
  return total <= config_.item_size_max;
}

size_t ItemStore::Impl::MaxValueLength(size_t key_len) const {
  const size_t overhead = kMemcachedHeaderBytes + kMemcachedCasBytes + key_len + 1 + 2;
  return config_.item_size_max > overhead ? config_.item_size_max - overhead : 0;
}

size_t ItemStore::Impl::memory_limit() const { return pool_->limit(); }

void ItemStore::Impl::SetMemoryLimit(size_t bytes) {
  pool_->set_limit(bytes);
}

// ---------------------------------------------------------------------------
// Linking and unlinking.

uint64_t ItemStore::Impl::LinkLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView item,
                                     uint8_t state, uint8_t freq, bool new_key, bool counts_as_new) {
  if (new_key) {
    const size_t window = shard.index.items() * shard_count_;
    if (shard.index.TakeGhost(hash, [&](uint32_t stamp) { return queues_->GhostFresh(stamp, window); })) {
      freq = std::max(freq, S3Fifo::kMoveToMainReads);
      shard.counters.ghost_hits++;
    }
  }
  const uint64_t s = slot::Make(placed.segment->id, placed.offset, Index::TagOf(hash), state, freq);
  shard.index.Insert(hash, s, *hasher_);
  const size_t size = item.size();
  shard.bytes += size;
  const int slab_class = SlabClassOf(item);
  StoreStats::Class& c = shard.counters.classes[slab_class];
  c.items++;
  c.bytes += size;
  c.mem_requested += MemcachedSizeOf(item);
  if (counts_as_new) {
    shard.counters.total_items++;
    c.total_items++;
  }
  if (state & kItemTokenSent) shard.leases_out++;
  if (IsForeign(item)) shard.foreign_items++;
  CountRateLocked(shard, item.read_rate(), +1);
  if (shard.track_sizes) CountSizeLocked(shard, item, +1);
  WakeLocked(shard, item.key());
  Segment* seg = placed.segment;
  NoteClassIn(seg, slab_class);
  seg->live_items.fetch_add(1, std::memory_order_relaxed);
  seg->live_bytes.fetch_add(size, std::memory_order_relaxed);
  // Published last: an evictor waiting for the segment's bytes then sees the link.
  if (seg->jumbo) queues_->AddJumbo(seg);
  else seg->written.fetch_add(placed.bytes, std::memory_order_release);
  return s;
}

// Takes the item out of the index (leaving a ghost if asked), uncounts it and
// wakes its key's parked readers. Readers holding an ItemRef keep its bytes.
void ItemStore::Impl::UnlinkLocked(Shard& shard, uint64_t* slot, bool leave_ghost) {
  const uint64_t s = *slot;
  const ItemView item = ItemAt(s);
  Segment* seg = SegmentOf(s);
  const size_t size = item.size();
  shard.bytes -= size;
  StoreStats::Class& c = shard.counters.classes[SlabClassOf(item)];
  c.items--;
  c.bytes -= size;
  c.mem_requested -= MemcachedSizeOf(item);
  if (Has(s, kItemTokenSent)) {
    shard.leases_out--;
    DropLeaseLocked(shard, s);
  }
  if (IsForeign(item)) shard.foreign_items--;
  CountRateLocked(shard, item.read_rate(), -1);
  if (shard.track_sizes) CountSizeLocked(shard, item, -1);
  if (item.is_flash_stub()) ReleaseFlashLocked(item);
  if (leave_ghost) shard.index.EraseToGhost(slot, queues_->NextGhostStamp());
  else shard.index.Erase(slot);
  WakeLocked(shard, item.key());
  seg->live_bytes.fetch_sub(size, std::memory_order_relaxed);
  if (seg->live_items.fetch_sub(1, std::memory_order_acq_rel) == 1) queues_->OnEmptied(seg);
}

// Counts an item of a victim segment that is about to be removed: evicted,
// or (expired, flushed) reclaimed. memcached counts these where its LRU tail
// is pulled; an item that expires on access counts only as get_expired.
void ItemStore::Impl::CountRemovalLocked(Shard& shard, uint64_t s, ItemView item, const Times& t,
                                         bool evicted) {
  const int64_t now_s = t.now_s;
  const bool fetched = Has(s, kItemFetched);
  const int slab_class = SlabClassOf(item);
  StoreStats::Class& c = shard.counters.classes[slab_class];
  if (evicted && !IsExpiredAt(item, t.now_tick) && !IsFlushed(item, now_s)) {
    shard.counters.evictions++;
    c.evicted++;
    c.evicted_time = static_cast<uint64_t>(std::max<int64_t>(0, now_s - item.last_access()));
    if (item.exptime() != 0) c.evicted_nonzero++;
    if (!fetched) {
      shard.counters.evicted_unfetched++;
      c.evicted_unfetched++;
    }
    if (slot::Freq(s) > 0) {
      shard.counters.evicted_active++;
      c.evicted_active++;
    }
    if (Watching(StoreEventKind::kEviction)) {
      StoreEvent e = EventAbout(StoreEventKind::kEviction, item, t.now_tick);
      e.fetched = fetched;
      e.idle_s = now_s - item.last_access();
      config_.events->OnEvent(e);
    }
  } else {
    CountReclaimedLocked(shard, slab_class, !fetched);
  }
}

void ItemStore::Impl::CountReclaimedLocked(Shard& shard, int slab_class, bool unfetched) {
  StoreStats::Class& c = shard.counters.classes[slab_class];
  shard.counters.reclaimed++;
  c.reclaimed++;
  if (unfetched) {
    shard.counters.expired_unfetched++;
    c.expired_unfetched++;
  }
}

void ItemStore::Impl::CountStoreOverExpiredLocked(Shard& shard, const Found& f) {
  if (f.removed_expired || f.removed_flushed) CountReclaimedLocked(shard, f.removed_class, f.removed_unfetched);
}

void ItemStore::Impl::NoteFoundLocked(const Found& f, StoreResult* res) const {
  if (f.presence != Found::kLive) return;
  res->found = LiveItem(ItemAt(*f.slot));
}

FoundItem ItemStore::Impl::FoundOf(const Found& f) const {
  if (f.presence == Found::kLive) return LiveItem(ItemAt(*f.slot));
  if (f.removed_flushed) return {.miss = LookupMiss::kFlushed};
  if (f.removed_expired || f.presence == Found::kExpiredInGrace) return {.miss = LookupMiss::kExpired};
  return {};
}

// A new value of the key ended the live lease `token` after `took_ms`.
void ItemStore::Impl::CountFulfilledLocked(Shard& shard, uint64_t token, ItemView fresh, uint32_t took_ms,
                                           const Times& t) {
  shard.counters.lease_fulfilled++;
  if (!Watching(StoreEventKind::kLeaseFulfilled)) return;
  StoreEvent e = EventAbout(StoreEventKind::kLeaseFulfilled, fresh, t.now_tick);
  e.token = token;
  e.held_ms = took_ms;
  config_.events->OnEvent(e);
}

// Ends the waits of the key's parked readers (see ShardLock).
void ItemStore::Impl::WakeLocked(Shard& shard, std::string_view key) {
  if (!shard.parked.empty()) shard.parked.Wake(key);
}

void ItemStore::Impl::ShardLock::UnlockAndDeliver() {
  std::vector<Index::Retired> retired = shard_.index.TakeRetired();
  const std::vector<WaitTicket> woken = shard_.parked.TakeWoken();
  shard_.mu.unlock();
  for (const WaitTicket& ticket : woken) store_->config_.wake_sink->Wake(ticket);
  for (Index::Retired& r : retired) r.Release();
}

void ItemStore::Impl::SetLeaseLocked(Shard& shard, uint64_t s, uint32_t granted_ms, bool early) {
  if (shard.leases.Set(slot::LocationKey(s), granted_ms, early)) pool_->Charge(LeaseTable::kEntryBytes);
}

// Without a lease timeout (memcached's behaviour) a dead holder's lease would
// keep the value forever: the value then goes at its expiry, as memcached's.
bool ItemStore::Impl::ExpiredForAllLocked(const Shard& shard, uint64_t s, ItemView item, const Times& t) const {
  if (!IsExpiredAt(item, t.now_tick)) return false;
  if (Has(s, kItemPlaceholder | kItemNeedsValue)) return true;
  if (!IsPastGraceAt(item, t.now_tick, config_.stale_grace_s)) return false;
  if (!Has(s, kItemTokenSent) || config_.lease.lease_timeout_ms == 0) return true;
  const uint64_t location = slot::LocationKey(s);
  return !shard.leases.Early(location) || !LeaseLive(config_.lease, shard.leases.GrantedAt(location), t.now_ms);
}

void ItemStore::Impl::DropLeaseLocked(Shard& shard, uint64_t s) {
  if (shard.leases.Drop(slot::LocationKey(s))) pool_->Uncharge(LeaseTable::kEntryBytes);
}

// ---------------------------------------------------------------------------
// Lookup with lazy expiry and delayed flush.

// A lookup (LookupLocked, inline in item_store_internal.h, answers a live
// item) removes the key first when it is flushed or expired beyond the stale
// grace. Stubs (placeholders, items created on a miss still waiting for their
// value) never linger as stale values.
ItemStore::Impl::Found ItemStore::Impl::LookupRestLocked(Shard& shard, uint64_t* slot, uint64_t hash,
                                                         const Times& t) {
  const int64_t now_s = t.now_s;
  Found f;
  f.hash = hash;
  if (slot == nullptr) {
    f.carried_rate = RecalledRateLocked(shard, hash, now_s);
    return f;
  }
  const ItemView item = ItemAt(*slot);
  // What a store counts of the copy it replaces; noted only when the copy goes (a size class
  // costs ~50 instructions, too much for every hit).
  const auto note_removed = [&] {
    f.removed_class = SlabClassOf(item);
    f.removed_unfetched = !Has(*slot, kItemFetched);
  };
  if (IsFlushed(item, now_s)) {
    note_removed();
    UnlinkLocked(shard, slot);
    f.removed_flushed = true;
    return f;
  }
  if (IsExpiredAt(item, t.now_tick)) {
    const bool stub = Has(*slot, kItemPlaceholder | kItemNeedsValue);
    if (ExpiredForAllLocked(shard, *slot, item, t)) {
      if (!stub) {
        f.carried_rate = CarriedRateLocked(shard, item, t, 0);
        RememberRateLocked(shard, hash, f.carried_rate, now_s);
      }
      // memcached's get_expired (the caller's), not reclaimed.
      note_removed();
      UnlinkLocked(shard, slot);
      f.removed_expired = !stub;
      return f;
    }
    f.slot = slot;
    f.presence = Found::kExpiredInGrace;
    return f;
  }
  // Live after all: LookupLocked answers a live item itself, but `flush_all`
  // on another thread may have moved the flush deadline since it looked.
  f.slot = slot;
  f.presence = Has(*slot, kItemPlaceholder) ? Found::kPlaceholder : Found::kLive;
  return f;
}

void ItemStore::Impl::RemoveKey(std::string_view key) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  ShardLock lock(this, shard);
  uint64_t* slot = shard.index.Find(hash, [&](uint64_t s) { return ItemAt(s).key() == key; });
  if (slot != nullptr) UnlinkLocked(shard, slot);
}

// ---------------------------------------------------------------------------
// ItemStore: each call handed to the store behind it.

ItemStore::ItemStore(const StoreConfig& config)
    : impl_(std::make_unique<Impl>(config)), foreign_(config.foreign), peer_copies_(config.peer_copies) {
  if (config.delete_holdoff_ms > 0 || peer_copies_ != nullptr) holdoff_ = std::make_unique<DeleteHoldoff>();
}
ItemStore::~ItemStore() = default;

uint64_t ItemStore::Impl::Prefetch(std::string_view key) {
  const uint64_t hash = HashKey(key);
  __builtin_prefetch(ShardFor(hash).index.BucketHint(hash));
  return hash;
}

uint64_t ItemStore::Prefetch(std::string_view key) const { return impl_->Prefetch(key); }

// A foreign key (StoreConfig::foreign) lives at most its ttl_s, and each
// change of it is reported, before it is made. Each change of any key is
// noted in the change journal (SetChangeJournal), after it is made.
ReadResult ItemStore::Read(std::string_view key, const ReadOptions& opts) {
  if (foreign_ == nullptr && changes_ == nullptr) return impl_->Read(key, opts);
  return ReadObserved(key, opts);
}
[[gnu::noinline]] ReadResult ItemStore::ReadObserved(std::string_view key, const ReadOptions& opts) {
  ReadResult r;
  if (foreign_ == nullptr || !foreign_->Foreign(key)) {
    r = impl_->Read(key, opts);
  } else {
    ReadOptions capped = opts;
    if (opts.has_touch) {
      foreign_->Changed(key);
      capped.touch_exptime = CapExptime(opts.touch_exptime, foreign_->ttl_s(), impl_->config().clock->UnixSeconds());
    }
    capped.create_exptime = CapExptime(opts.create_exptime, foreign_->ttl_s(), impl_->config().clock->UnixSeconds());
    r = impl_->Read(key, capped);
    if (r.status == ReadStatus::kHit && !r.no_value) foreign_->Hit();
  }
  if (changes_ != nullptr && opts.has_touch) changes_->Noted(key);
  return r;
}
StoreResult ItemStore::Store(const StoreRequest& req) {
  StoreResult r;
  if (foreign_ == nullptr || !foreign_->Foreign(req.key)) {
    r = impl_->Store(req);
  } else {
    foreign_->Changed(req.key);
    StoreRequest capped = req;
    capped.exptime = CapExptime(req.exptime, foreign_->ttl_s(), impl_->config().clock->UnixSeconds());
    r = impl_->Store(capped);
  }
  // A refused store changed nothing; a set too large or without memory removed the old value.
  const bool changed = r.status != StoreStatus::kNotStored && r.status != StoreStatus::kExists &&
                       r.status != StoreStatus::kNotFound;
  if (peer_copies_ != nullptr && !req.warm_fill && changed && peer_copies_->Changed(req.key)) {
    HoldOff(req.key, int64_t{impl_->config().forwarded_holdoff_ms} * 1000);
  }
  if (changes_ != nullptr && changed) changes_->Noted(req.key);
  return r;
}
DeleteStatus ItemStore::Delete(const DeleteRequest& req) {
  if (req.client) {
    int64_t hold_ms = impl_->config().delete_holdoff_ms;
    if (peer_copies_ != nullptr && peer_copies_->Changed(req.key)) {
      hold_ms = std::max<int64_t>(hold_ms, impl_->config().forwarded_holdoff_ms);
    }
    HoldOff(req.key, hold_ms * 1000);
  }
  if (req.client && foreign_ != nullptr && foreign_->Foreign(req.key)) foreign_->Changed(req.key);
  const DeleteStatus status = impl_->Delete(req);
  // Also when the key was not here: the snapshot on disk may still hold it.
  if (changes_ != nullptr) changes_->Noted(req.key);
  return status;
}
void ItemStore::HoldOff(std::string_view key, int64_t for_us) {
  if (holdoff_ == nullptr || for_us <= 0) return;
  const int64_t now = impl_->config().clock->NowMicros();
  holdoff_->Note(HashKey(key), now + for_us, now);
}
void ItemStore::RefuseWarmFills(std::string_view key, int64_t seconds) {
  if (holdoff_ == nullptr) return;
  const int64_t now = impl_->config().clock->NowMicros();
  const int64_t until = seconds >= (DeleteHoldoff::kForever - now) / 1000000 ? DeleteHoldoff::kForever
                                                                               : now + seconds * 1000000;
  holdoff_->Note(HashKey(key), until, now);
}
void ItemStore::RefuseAllWarmFills(int64_t seconds) {
  if (holdoff_ == nullptr) return;
  const int64_t now = impl_->config().clock->NowMicros();
  holdoff_->NoteAll(seconds >= (DeleteHoldoff::kForever - now) / 1000000 ? DeleteHoldoff::kForever
                                                                          : now + seconds * 1000000);
}
void ItemStore::FinishFlashReads(std::vector<FlashFetch>* done) { impl_->FinishFlashReads(done); }
size_t ItemStore::ParkOnFlash(const std::vector<std::string_view>& keys, const WaitTicket& ticket,
                              std::string_view* first) {
  return impl_->ParkOnFlash(keys, ticket, first);
}
bool ItemStore::EvictAhead(size_t headroom) { return impl_->EvictAhead(headroom); }
size_t ItemStore::CompactFlashPage(const FlashStore::Compaction& c) { return impl_->CompactFlashPage(c); }
size_t ItemStore::CompactFlash() { return impl_->CompactFlash(); }
size_t ItemStore::MoveIdleToFlash(WalkCursor* cursor, size_t max_buckets, uint32_t min_idle_s) {
  return impl_->MoveIdleToFlash(cursor, max_buckets, min_idle_s);
}
bool ItemStore::WarmFillsHeldOff(std::string_view key) const {
  return holdoff_ != nullptr && holdoff_->Holds(HashKey(key), impl_->config().clock->NowMicros());
}
ArithResult ItemStore::Arithmetic(const ArithRequest& req) {
  if (foreign_ != nullptr && foreign_->Foreign(req.key)) foreign_->Changed(req.key);
  ArithResult r = impl_->Arithmetic(req);
  if (peer_copies_ != nullptr && r.status == ArithStatus::kOk && peer_copies_->Changed(req.key)) {
    HoldOff(req.key, int64_t{impl_->config().forwarded_holdoff_ms} * 1000);
  }
  if (changes_ != nullptr && r.status == ArithStatus::kOk) changes_->Noted(req.key);
  return r;
}
bool ItemStore::Touch(std::string_view key, int64_t exptime, FoundItem* found, uint64_t key_hash) {
  bool touched;
  if (foreign_ == nullptr || !foreign_->Foreign(key)) {
    touched = impl_->Touch(key, exptime, found, key_hash);
  } else {
    foreign_->Changed(key);
    const int64_t capped = CapExptime(exptime, foreign_->ttl_s(), impl_->config().clock->UnixSeconds());
    touched = impl_->Touch(key, capped, found, key_hash);
  }
  if (changes_ != nullptr && touched) changes_->Noted(key);
  return touched;
}
void ItemStore::SetChangeJournal(ChangeJournal* journal) {
  changes_ = journal;
  impl_->SetCasJournal(journal);
}
void ItemStore::FlushAll(int64_t delay_s, bool client) {
  impl_->FlushAll(delay_s);
  if (changes_ != nullptr) changes_->NotedAll();
  if (client && peer_copies_ != nullptr) peer_copies_->Flushed();
}
int64_t ItemStore::FlushDeadline() const { return impl_->flush_deadline(); }
size_t ItemStore::ReclaimExpired(size_t budget) { return impl_->ReclaimExpired(budget); }
size_t ItemStore::Crawl(WalkCursor* cursor, size_t max_buckets, CrawlScope* scope) {
  return impl_->Crawl(cursor, max_buckets, scope);
}
void ItemStore::SetMemoryLimit(size_t bytes) { impl_->SetMemoryLimit(bytes); }
size_t ItemStore::memory_limit() const { return impl_->memory_limit(); }
size_t ItemStore::item_size_max() const { return impl_->config().item_size_max; }
size_t ItemStore::MaxValueLength(size_t key_len) const { return impl_->MaxValueLength(key_len); }
StoreStats ItemStore::Stats() const { return impl_->Stats(); }
void ItemStore::ResetStats() { impl_->ResetStats(); }
void ItemStore::ClassAges(uint64_t ages[kMemcachedClasses + 1]) const { impl_->ClassAges(ages); }
void ItemStore::TrackSizes(bool on) { impl_->TrackSizes(on); }
bool ItemStore::tracking_sizes() const { return impl_->tracking_sizes(); }
std::vector<std::pair<uint64_t, uint64_t>> ItemStore::SizeHistogram() const { return impl_->SizeHistogram(); }
size_t ItemStore::Walk(WalkCursor* cursor, size_t max_buckets,
                       const std::function<void(const WalkedItem&)>& visit, bool flash_stubs) {
  return impl_->Walk(cursor, max_buckets, visit, flash_stubs);
}
StoreStatus ItemStore::Restore(const RestoreRequest& req) { return impl_->Restore(req); }
void ItemStore::ReserveItems(size_t items) { impl_->ReserveItems(items); }
uint64_t ItemStore::CasCounter() const { return impl_->CasCounter(); }
void ItemStore::AdvanceCasPast(uint64_t cas) { impl_->AdvanceCasPast(cas); }
std::vector<double> ItemStore::RecomputeSpreads() const { return impl_->RecomputeSpreads(); }
void ItemStore::RestoreRecomputeSpreads(const std::vector<double>& saved) { impl_->RestoreRecomputeSpreads(saved); }
int64_t ItemStore::ToUnixTime(int64_t store_s) const { return impl_->ToUnixTime(store_s); }
int64_t ItemStore::NowSeconds() const { return impl_->NowSeconds(); }
int64_t ItemStore::ToStoreTime(int64_t exptime) const { return impl_->ToStoreTime(exptime); }
int32_t ItemStore::ToExpiryTick(int64_t exptime) const { return impl_->ToExpiryTick(exptime); }
const StoreConfig& ItemStore::config() const { return impl_->config(); }

}  // namespace herdless
