// ItemStore's request path. Reading order: construction, time and limits,
// linking and lookup, then the operations (Read, Store, Delete, Touch,
// Arithmetic) each from lookup to reply. Placing new items and eviction are
// in item_store_memory.cc; flush, the expiry crawl, walk, restore and stats
// in item_store_admin.cc.
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

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>

#include "storage/decimal.h"
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
constexpr int64_t kAddBumpInterval = 60;  // memcached's ITEM_UPDATE_INTERVAL
// A lease-get placeholder with no lease timeout (memcached behaviour) still
// needs an end: the FB paper hands out one token per key every 10 seconds.
constexpr int64_t kPlaceholderTtlWithoutTimeoutS = 10;

}  // namespace

ItemStore::ItemStore(const StoreConfig& config)
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

ItemStore::~ItemStore() {
  // Every segment goes back to the pool; a segment readers still pin stays
  // until they release it, so then the pool must outlive the store: it is
  // kept reachable on purpose (a leak only in this shutdown corner).
  queues_->RetireAll();
  if (pool_->AnyPinned()) {
    static std::mutex graveyard_mu;
    static auto* graveyard = new std::vector<std::unique_ptr<SegmentPool>>;
    std::lock_guard<std::mutex> lock(graveyard_mu);
    graveyard->push_back(std::move(pool_));
  }
}

ItemStore::Shard& ItemStore::ShardFor(uint64_t hash) {
  // High bits pick the shard, low bits the bucket, so the two stay independent.
  if (config_.shard_bits == 0) return shards_[0];
  return shards_[hash >> (64 - config_.shard_bits)];
}

ItemView ItemStore::ItemAt(uint64_t slot_value) const {
  return ItemView(pool_->Get(slot::Segment(slot_value))->At(slot::Offset(slot_value)));
}

Segment* ItemStore::SegmentOf(uint64_t slot_value) const {
  return pool_->Get(slot::Segment(slot_value));
}

// ---------------------------------------------------------------------------
// Time and CAS.

int64_t ItemStore::NowSeconds() const { return config_.clock->NowMicros() / 1000000; }

ItemStore::Times ItemStore::Now() const {
  const int64_t us = config_.clock->NowMicros();
  return Times{us, us / 1000000, TickOf(us), static_cast<uint32_t>(us / 1000)};
}

int64_t ItemStore::ToStoreTime(int64_t exptime) const {
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

int32_t ItemStore::ToExpiryTick(int64_t exptime) const {
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

int64_t ItemStore::ToUnixTime(int64_t store_s) const {
  return store_s + (config_.clock->UnixSeconds() - NowSeconds());
}

// The counter stays below kNarrowCasLimit (items store it in 6 bytes): after
// 2^48 stores it starts again from 2.
uint64_t ItemStore::NextCas() {
  const uint64_t c = next_cas_.fetch_add(1, std::memory_order_relaxed);
  return c < kNarrowCasLimit ? c : 2 + (c - 2) % (kNarrowCasLimit - 2);
}

// ---------------------------------------------------------------------------
// Limits.

bool ItemStore::ItemFits(size_t key_len, uint32_t client_flags, size_t value_len) const {
  if (key_len > kMaxKeyLength) return false;
  const size_t total = kMemcachedHeaderBytes + kMemcachedCasBytes + key_len + 1 +
                       (client_flags != 0 ? kMemcachedFlagsBytes : 0) + value_len + 2;
  return total <= config_.item_size_max;
}

size_t ItemStore::MaxValueLength(size_t key_len) const {
  const size_t overhead = kMemcachedHeaderBytes + kMemcachedCasBytes + key_len + 1 + 2;
  return config_.item_size_max > overhead ? config_.item_size_max - overhead : 0;
}

size_t ItemStore::memory_limit() const { return pool_->limit(); }

void ItemStore::SetMemoryLimit(size_t bytes) {
  pool_->set_limit(bytes);
}

// ---------------------------------------------------------------------------
// Linking and unlinking.

uint64_t ItemStore::LinkLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView item,
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
  c.mem_requested += MemcachedItemSize(item.key_len(), item.value_len(), item.client_flags());
  if (counts_as_new) {
    shard.counters.total_items++;
    c.total_items++;
  }
  if (state & kItemTokenSent) shard.leases_out++;
  CountRateLocked(shard, item.read_rate(), +1);
  if (shard.track_sizes) CountSizeLocked(shard, size, +1);
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
void ItemStore::UnlinkLocked(Shard& shard, uint64_t* slot, bool leave_ghost) {
  const uint64_t s = *slot;
  const ItemView item = ItemAt(s);
  Segment* seg = SegmentOf(s);
  const size_t size = item.size();
  shard.bytes -= size;
  StoreStats::Class& c = shard.counters.classes[SlabClassOf(item)];
  c.items--;
  c.bytes -= size;
  c.mem_requested -= MemcachedItemSize(item.key_len(), item.value_len(), item.client_flags());
  if (Has(s, kItemTokenSent)) {
    shard.leases_out--;
    DropLeaseLocked(shard, s);
  }
  CountRateLocked(shard, item.read_rate(), -1);
  if (shard.track_sizes) CountSizeLocked(shard, size, -1);
  if (leave_ghost) shard.index.EraseToGhost(slot, queues_->NextGhostStamp());
  else shard.index.Erase(slot);
  WakeLocked(shard, item.key());
  seg->live_bytes.fetch_sub(size, std::memory_order_relaxed);
  if (seg->live_items.fetch_sub(1, std::memory_order_acq_rel) == 1) queues_->OnEmptied(seg);
}

// Counts an item of a victim segment that is about to be removed: evicted,
// or (expired, flushed) reclaimed. memcached counts these where its LRU tail
// is pulled; an item that expires on access counts only as get_expired.
void ItemStore::CountRemovalLocked(Shard& shard, uint64_t s, ItemView item, const Times& t,
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
    shard.counters.reclaimed++;
    c.reclaimed++;
    if (!fetched) {
      shard.counters.expired_unfetched++;
      c.expired_unfetched++;
    }
  }
}

// A new value of the key ended the live lease `token` after `took_ms`.
void ItemStore::CountFulfilledLocked(Shard& shard, uint64_t token, ItemView fresh, uint32_t took_ms,
                                     const Times& t) {
  shard.counters.lease_fulfilled++;
  if (!Watching(StoreEventKind::kLeaseFulfilled)) return;
  StoreEvent e = EventAbout(StoreEventKind::kLeaseFulfilled, fresh, t.now_tick);
  e.token = token;
  e.held_ms = took_ms;
  config_.events->OnEvent(e);
}

// Ends the waits of the key's parked readers (see ShardLock).
void ItemStore::WakeLocked(Shard& shard, std::string_view key) {
  if (!shard.parked.empty()) shard.parked.Wake(key);
}

void ItemStore::SetLeaseLocked(Shard& shard, uint64_t s, uint32_t granted_ms) {
  if (shard.leases.Set(slot::LocationKey(s), granted_ms)) pool_->Charge(LeaseTable::kEntryBytes);
}

uint32_t ItemStore::LeaseGrantedLocked(const Shard& shard, uint64_t s) const {
  return shard.leases.GrantedAt(slot::LocationKey(s));
}

void ItemStore::DropLeaseLocked(Shard& shard, uint64_t s) {
  if (shard.leases.Drop(slot::LocationKey(s))) pool_->Uncharge(LeaseTable::kEntryBytes);
}

// ---------------------------------------------------------------------------
// Read rates. Every linked item with an estimate is counted in rated_items,
// and in hot_items when its hot mark is set; the counts follow the item bytes
// (LinkLocked, UnlinkLocked, RepointLocked, SetRateLocked).

void ItemStore::CountRateLocked(Shard& shard, ReadRateState rate, int sign) {
  if (!rate.present()) return;
  if (sign > 0) {
    shard.rated_items++;
    if (rate.hot()) shard.hot_items++;
  } else {
    shard.rated_items--;
    if (rate.hot()) shard.hot_items--;
  }
}

void ItemStore::SetRateLocked(Shard& shard, ItemView item, ReadRateState rate) {
  if (!rate.present()) rate.set_hot(false);
  CountRateLocked(shard, item.read_rate(), -1);
  item.set_read_rate(rate);
  CountRateLocked(shard, rate, +1);
}

ReadRateState ItemStore::CarriedRateLocked(Shard& shard, ItemView old, const Times& t, int32_t exptime) {
  ReadRateState rate = old.read_rate();
  if (!rate.present()) return ReadRateState{};
  const int64_t since_s = std::max<int64_t>(0, t.now_s - old.last_access());
  rate.count = ReadRate::Decayed(rate.count, since_s, NextRandom(&shard.random));
  if (ReadRate::CountOf(rate.count) < ReadRate::kDropBelowReads) return ReadRateState{};
  rate.set_ttl_code(ReadRate::TtlCode(TtlAt(exptime, t.now_tick)));
  return rate;
}

void ItemStore::RememberRateLocked(Shard& shard, uint64_t hash, ReadRateState rate, int64_t now_s) {
  if (rate.present()) shard.remembered_rates[hash % Shard::kRememberedRates] = {hash, rate.count, now_s};
}

ReadRateState ItemStore::RecalledRateLocked(Shard& shard, uint64_t hash, int64_t now_s) {
  const Shard::RememberedRate& e = shard.remembered_rates[hash % Shard::kRememberedRates];
  ReadRateState rate;
  if (e.hash != hash || e.count == 0) return rate;
  rate.count = ReadRate::Decayed(e.count, std::max<int64_t>(0, now_s - e.at_s), NextRandom(&shard.random));
  return rate;
}

void ItemStore::MoveAccessTimeLocked(Shard& shard, ItemView item, int64_t now_s) {
  ReadRateState rate = item.read_rate();
  if (rate.present() && now_s > item.last_access()) {
    rate.count = ReadRate::Decayed(rate.count, now_s - item.last_access(), NextRandom(&shard.random));
    SetRateLocked(shard, item, rate);
  }
  item.set_last_access(ClampStoreTime(now_s));
}

// A key read again within the second of its last access (and read before:
// a store followed by one read does not count) gets an estimate, starting
// from that earlier read. Keys read less often than that never pay for one.
// When the item has no room for it, the estimate is remembered for the key's
// next item (its next store): copying the item here would make a hit
// allocate.
void ItemStore::TrackIfHotLocked(Shard& shard, uint64_t* slot, const Times& t) {
  const int64_t now_s = t.now_s;
  const ItemView item = ItemAt(*slot);
  if (item.read_rate().present() || item.last_access() != now_s || !Has(*slot, kItemFetched)) return;
  ReadRateState rate;
  rate.count = ReadRate::Encode(ReadRate::kTrackedAfterReads);
  rate.set_ttl_code(ReadRate::TtlCode(TtlAt(item.exptime(), t.now_tick)));
  if (item.CanHoldReadRate()) {
    SetRateLocked(shard, item, rate);
    return;
  }
  const uint64_t hash = HashKey(item.key());
  if (shard.remembered_rates[hash % Shard::kRememberedRates].hash != hash) {
    rate.count = ReadRate::Encode(ReadRate::kTrackedAfterReads + 1);   // this read too
    RememberRateLocked(shard, hash, rate, now_s);
  }
}

// ---------------------------------------------------------------------------
// Lookup with lazy expiry and delayed flush.

bool ItemStore::IsFlushed(ItemView item, int64_t now_s) const {
  const int64_t deadline = flush_deadline_.load(std::memory_order_relaxed);
  return deadline != 0 && now_s >= deadline && item.last_access() < deadline;
}

// Finds the key, removing it first when it is flushed or expired beyond the
// stale grace. Stubs (placeholders, vivified items still waiting for their
// value) never linger as stale values.
ItemStore::Found ItemStore::LookupLocked(Shard& shard, std::string_view key, uint64_t hash,
                                         const Times& t) {
  const int64_t now_s = t.now_s;
  Found f;
  uint64_t* slot = shard.index.Find(hash, [&](uint64_t s) { return ItemAt(s).key() == key; });
  if (slot == nullptr) {
    f.carried_rate = RecalledRateLocked(shard, hash, now_s);
    return f;
  }
  const ItemView item = ItemAt(*slot);
  if (IsFlushed(item, now_s)) {
    UnlinkLocked(shard, slot);
    f.removed_flushed = true;
    return f;
  }
  if (IsExpiredAt(item, t.now_tick)) {
    const bool stub = Has(*slot, kItemPlaceholder | kItemNeedsValue);
    if (stub || IsPastGraceAt(item, t.now_tick, config_.stale_grace_s)) {
      if (!stub) {
        f.carried_rate = CarriedRateLocked(shard, item, t, 0);
        RememberRateLocked(shard, hash, f.carried_rate, now_s);
      }
      // memcached's get_expired (the caller's), not reclaimed.
      UnlinkLocked(shard, slot);
      f.removed_expired = !stub;
      return f;
    }
    f.slot = slot;
    f.presence = Found::kExpiredInGrace;
    return f;
  }
  f.slot = slot;
  f.presence = Has(*slot, kItemPlaceholder) ? Found::kPlaceholder : Found::kLive;
  return f;
}

void ItemStore::RemoveKey(std::string_view key) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  ShardLock lock(this, shard);
  uint64_t* slot = shard.index.Find(hash, [&](uint64_t s) { return ItemAt(s).key() == key; });
  if (slot != nullptr) UnlinkLocked(shard, slot);
}

// ---------------------------------------------------------------------------
// Read.

// A placeholder lives a little longer than its lease, so that a timeout is
// seen as a regrant (which renews it) rather than as a miss: until the second
// after the one in which the lease ends. (Rounding the grant time down
// instead could end it a few ms after the lease, before the readers parked on
// it notice the timeout, and they would all be woken by its expiry.)
int32_t ItemStore::PlaceholderExptime(int64_t now_us) const {
  if (config_.lease.lease_timeout_ms == 0) {
    return ClampStoreTime(TickOf(now_us) + kPlaceholderTtlWithoutTimeoutS * kTicksPerSecond);
  }
  const int64_t lease_end_us = now_us + int64_t{config_.lease.lease_timeout_ms} * 1000;
  return ClampStoreTime(((lease_end_us + 999999) / 1000000 + 1) * kTicksPerSecond);
}

ReadResult ItemStore::Read(std::string_view key, const ReadOptions& opts) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  const bool classic = opts.kind == ReadKind::kClassic;
  const double u =
      (!classic && opts.lease.xfetch_beta > 0) ? config_.random->UniformOpenClosed() : 1.0;
  const int32_t touch_exptime = opts.has_touch ? ToExpiryTick(opts.touch_exptime) : 0;
  const bool wants_stub = (opts.kind == ReadKind::kMeta && opts.has_vivify) ||
                          opts.kind == ReadKind::kLeaseGet ||
                          opts.kind == ReadKind::kClassicLease;
  const bool makes_placeholder = opts.kind != ReadKind::kMeta;

  ReadResult r;
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, key, hash, t);
    r.miss_expired = f.removed_expired;
    r.miss_flushed = f.removed_flushed;
    bool visible = f.slot != nullptr;
    if (f.presence == Found::kPlaceholder) visible = wants_stub;
    if (f.presence == Found::kExpiredInGrace && classic) visible = false;
    if (visible) {
      // A touch that gives a TTL to an item stored without one needs a copy
      // with room for it: made before anything else changes.
      size_t needed = 0;
      if (opts.has_touch && !RoomForExptimeLocked(shard, f.slot, touch_exptime, t.now_s, &needed)) {
        if (!RoomToRetry(lock, attempt, needed)) return r;
        continue;
      }
      HitLocked(shard, f.slot, f, opts, touch_exptime, t, u, &r);
      if (opts.park != nullptr && r.no_value && r.lease == LeaseVerdict::kHeld &&
          config_.wake_sink != nullptr) {
        shard.parked.Park(key, *opts.park);
        r.parked = true;
      }
      break;
    }
    if (!wants_stub) break;  // a plain miss; invisible items stay as they are

    // A miss that creates a stub and wins its lease.
    ItemFields fields;
    fields.key = key;
    fields.last_access = ClampStoreTime(t.now_s);
    uint8_t state = kItemTokenSent | kItemNeedsValue;
    if (makes_placeholder) {
      fields.exptime = PlaceholderExptime(t.now_us);
      state |= kItemPlaceholder;
    } else {
      // memcached's mg N: a real 0-byte item with the N TTL (or T's).
      fields.exptime = opts.has_touch ? touch_exptime : ToExpiryTick(opts.vivify_exptime);
      if (opts.bump) state |= kItemFetched;
    }
    fields.cas = 2;   // narrow: the real one is drawn once there is room
    fields.read_rate = f.carried_rate;
    if (fields.read_rate.present()) {
      fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
    }
    Placed placed;
    if (!PlaceLocked(ItemSize(fields), t.now_s, &placed)) {
      if (!RoomToRetry(lock, attempt, ItemSize(fields))) return r;  // a miss without a lease
      continue;  // the key may have changed meanwhile: look again
    }
    fields.cas = NextCas();
    const ItemView stub = WriteItem(placed.segment->At(placed.offset), fields);
    const uint64_t s = LinkLocked(shard, hash, placed, stub, state, 0, /*new_key=*/true);
    SetLeaseLocked(shard, s, t.now_ms);
    shard.counters.lease_grants++;
    if (Watching(StoreEventKind::kLeaseGranted)) {
      StoreEvent e = EventAbout(StoreEventKind::kLeaseGranted, stub, t.now_tick);
      e.token = fields.cas;
      e.reason = LeaseReason::kMiss;
      config_.events->OnEvent(e);
    }
    placed.segment->Pin();
    r.status = ReadStatus::kHit;
    r.item = ItemRef(placed.segment);
    r.value = stub.value();
    r.client_flags = 0;
    r.cas = fields.cas;
    r.ttl_before = r.ttl_after = TtlAt(fields.exptime, t.now_tick);
    r.lease = LeaseVerdict::kWin;
    r.placeholder = makes_placeholder;
    r.vivified = !makes_placeholder;
    r.no_value = true;
    break;
  }
  return r;
}

void ItemStore::HitLocked(Shard& shard, uint64_t* slot, const Found& found, const ReadOptions& opts,
                          int64_t touch_exptime, const Times& t, double u, ReadResult* r) {
  const bool stub = Has(*slot, kItemPlaceholder | kItemNeedsValue);
  if (opts.bump && !stub) TrackIfHotLocked(shard, slot, t);   // may copy the item
  ItemView item = ItemAt(*slot);
  const int32_t exptime_before = item.exptime();
  const int64_t since_access_s = std::max<int64_t>(0, t.now_s - item.last_access());
  ReadRateState rate = item.read_rate();
  const int64_t ttl_before_s = ReadRate::TtlOfCode(rate.ttl_code());
  r->reads_per_s = rate.present() ? ReadRate::PerSecond(rate.count, since_access_s) : 0;

  // The touch. A classic-mode read (kClassicLease) touches only a fresh value
  // it is given, after the lease decision: touching a stale value would make
  // it look fresh, and the reader chosen to recompute is answered a miss.
  const bool touch_later = opts.has_touch && opts.kind == ReadKind::kClassicLease;
  auto touch = [&] {
    item.set_exptime(static_cast<int32_t>(touch_exptime));
    rate.set_ttl_code(ReadRate::TtlCode(TtlAt(touch_exptime, t.now_tick)));
  };
  r->ttl_before = TtlAt(exptime_before, t.now_tick);
  if (opts.has_touch && !touch_later) touch();
  r->ttl_after = TtlAt(item.exptime(), t.now_tick);
  r->fetched_before = Has(*slot, kItemFetched);
  r->seconds_since_access = t.now_s - item.last_access();
  if (!Has(*slot, kItemPlaceholder | kItemNeedsValue)) {
    StoreStats::Class& c = shard.counters.classes[SlabClassOf(item)];
    (opts.has_touch ? c.touch_hits : c.get_hits)++;
  }
  r->frequency = slot::Freq(*slot);
  if (opts.bump) {
    if (rate.present()) {
      rate.count = ReadRate::AfterRead(rate.count, since_access_s, NextRandom(&shard.random));
      rate.set_hot(r->reads_per_s >= config_.lease.refresh_hot_per_s);
    }
    // A hit only counts: no list to move (storage/eviction.h).
    const uint8_t freq = std::min<uint8_t>(slot::Freq(*slot) + 1, S3Fifo::kMaxFrequency);
    *slot = slot::WithFreq(slot::WithState(*slot, slot::State(*slot) | kItemFetched), freq);
    item.set_last_access(ClampStoreTime(t.now_s));
  }
  if (rate.present()) SetRateLocked(shard, item, rate);

  const bool classic = opts.kind == ReadKind::kClassic;
  // Classic reads ignore staleness entirely (memcached §1.7.11).
  const bool stale =
      !classic && (found.presence == Found::kExpiredInGrace || Has(*slot, kItemStale));
  if (!classic) {
    const bool judge_new_ttl = opts.recache_after_touch || !opts.has_touch || touch_later;
    LeaseView view;
    view.stale = stale;
    view.token_sent = Has(*slot, kItemTokenSent);
    view.needs_value = Has(*slot, kItemNeedsValue);
    view.exptime = judge_new_ttl ? item.exptime() : exptime_before;
    view.lease_granted_ms = view.token_sent ? LeaseGrantedLocked(shard, *slot) : 0;
    view.delta_ms = item.delta_ms();
    view.reads_per_s = r->reads_per_s;
    view.ttl_s = judge_new_ttl ? ReadRate::TtlOfCode(rate.ttl_code()) : ttl_before_s;
    const LeaseDecision d = DecideRead(config_.lease, view, opts.lease, t.now_us, u);
    if (d.verdict == LeaseVerdict::kWin) {
      if (!view.token_sent) {
        *slot = slot::WithState(*slot, slot::State(*slot) | kItemTokenSent);
        shard.leases_out++;
      }
      SetLeaseLocked(shard, *slot, t.now_ms);
      LeaseReason reason = d.by_xfetch     ? LeaseReason::kXFetch
                           : view.stale    ? LeaseReason::kStale
                           : view.needs_value ? LeaseReason::kMiss
                                              : LeaseReason::kRecache;
      if (d.regrant) {
        // A new CAS supersedes the dead holder's token: its fenced store fails.
        const uint64_t dead_token = item.cas();
        item.set_cas(NextCas());
        if (Has(*slot, kItemPlaceholder)) item.set_exptime(PlaceholderExptime(t.now_us));
        shard.counters.lease_timeouts++;
        // Readers parked on the dead lease wait for the new one instead.
        WakeLocked(shard, item.key());
        reason = LeaseReason::kTakeover;
        if (Watching(StoreEventKind::kLeaseTimedOut)) {
          StoreEvent e = EventAbout(StoreEventKind::kLeaseTimedOut, item, t.now_tick);
          e.token = item.cas();
          e.previous_token = dead_token;
          e.held_ms = t.now_ms - view.lease_granted_ms;
          config_.events->OnEvent(e);
        }
      }
      shard.counters.lease_grants++;
      if (d.by_xfetch) shard.counters.xfetch_grants++;
      if (d.by_refresh) shard.counters.refresh_grants++;
      if (Watching(StoreEventKind::kLeaseGranted)) {
        StoreEvent e = EventAbout(StoreEventKind::kLeaseGranted, item, t.now_tick);
        e.token = item.cas();
        e.reason = reason;
        config_.events->OnEvent(e);
      }
    }
    r->lease = d.verdict;
    r->lease_by_xfetch = d.by_xfetch;
    r->lease_by_refresh = d.by_refresh;
  }
  if (touch_later && !stale && !stub && r->lease != LeaseVerdict::kWin) {
    touch();
    if (rate.present()) item.set_read_rate(rate);   // the TTL code only: counts unchanged
    r->ttl_after = TtlAt(item.exptime(), t.now_tick);
  }

  Segment* seg = SegmentOf(*slot);
  seg->Pin();
  r->status = ReadStatus::kHit;
  r->item = ItemRef(seg);
  r->value = item.value();
  r->client_flags = item.client_flags();
  r->cas = item.cas();
  r->recompute_ms = item.delta_ms();
  r->stale = stale;
  r->placeholder = Has(*slot, kItemPlaceholder);
  r->no_value = stub;
  r->binary_key = Has(*slot, kItemBinaryKey);
  // A classic-mode winner is answered with a miss: it does not see the stale value.
  if (stale && !(opts.kind == ReadKind::kClassicLease && r->lease == LeaseVerdict::kWin)) {
    shard.counters.stale_hits++;
    if (Watching(StoreEventKind::kStaleServed)) {
      StoreEvent e = EventAbout(StoreEventKind::kStaleServed, item, t.now_tick);
      e.token = item.cas();
      config_.events->OnEvent(e);
    }
  }
}

// ---------------------------------------------------------------------------
// Store.

StoreResult ItemStore::Store(const StoreRequest& req) {
  StoreResult res;
  // A lease-set that fails leaves the key alone, as any refused lease-set does.
  const bool remove_on_failure =
      (req.mode == StoreMode::kSet && req.lease_token == 0) || req.unlink_on_failure;
  if (!ItemFits(req.key.size(), req.client_flags, req.value.size())) {
    if (remove_on_failure && req.key.size() <= kMaxKeyLength) RemoveKey(req.key);
    res.status = StoreStatus::kTooLarge;
    return res;
  }
  if (req.mode == StoreMode::kAppend || req.mode == StoreMode::kPrepend) {
    return StoreConcat(req);
  }
  // A lowered limit (cache_memlimit) is reached one eviction per store.
  if (pool_->used() > pool_->limit() && config_.evictions) EvictSegment(/*compact=*/false);

  const int32_t exptime = ToExpiryTick(req.exptime);
  // meta's C turns set and replace into a compare-and-swap (memcached).
  const bool cas_mode = req.mode == StoreMode::kCas ||
                        (req.compare_cas != 0 &&
                         (req.mode == StoreMode::kSet || req.mode == StoreMode::kReplace));
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  // memcached counts a store's per-class stats in the new item's class.
  StoreStats::Class& counts = shard.counters.classes[MemcachedSlabClass(
      MemcachedItemSize(req.key.size(), req.value.size(), req.client_flags))];
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    if (attempt == 0) counts.set_cmds++;
    const Found f = LookupLocked(shard, req.key, hash, t);
    const uint64_t old_slot = f.slot != nullptr ? *f.slot : 0;
    const bool live = f.presence == Found::kLive;

    enum class Action { kPlain, kStale, kReject } action = Action::kReject;
    if (req.lease_token != 0) {
      // lease-set: only the holder of the live lease may store.
      if (f.slot != nullptr && Has(old_slot, kItemTokenSent) &&
          ItemAt(old_slot).cas() == req.lease_token) {
        action = Action::kPlain;
      } else {
        shard.counters.lease_sets_refused++;
        res.status = StoreStatus::kNotStored;
      }
    } else if (cas_mode) {
      // Stubs and values in stale grace take part: a lease winner's token is their CAS.
      if (f.slot == nullptr) {
        res.status = StoreStatus::kNotFound;
      } else if (req.compare_cas != 0 && req.compare_cas == ItemAt(old_slot).cas()) {
        action = Action::kPlain;
        if (attempt == 0) counts.cas_hits++;
      } else if (req.invalidate && req.compare_cas != 0 && req.compare_cas < ItemAt(old_slot).cas()) {
        action = Action::kStale;  // memcached's ms I: an older CAS stores a stale value
      } else {
        res.status = StoreStatus::kExists;
        counts.cas_badval++;
      }
    } else if (req.mode == StoreMode::kAdd) {
      if (live) {
        // memcached's add bumps the existing item (its time at most once a minute).
        ItemView old_item = ItemAt(old_slot);
        *f.slot = slot::WithFreq(old_slot, std::min<uint8_t>(slot::Freq(old_slot) + 1, S3Fifo::kMaxFrequency));
        if (old_item.last_access() < t.now_s - kAddBumpInterval) {
          MoveAccessTimeLocked(shard, old_item, t.now_s);
        }
        res.status = StoreStatus::kNotStored;
      } else {
        action = Action::kPlain;
      }
    } else if (req.mode == StoreMode::kReplace) {
      if (live) action = Action::kPlain;
      else res.status = StoreStatus::kNotStored;
    } else {
      action = Action::kPlain;  // set
    }
    if (action == Action::kReject) return res;

    // The new item's fields. A plain store ends any lease on the key and, when
    // it fulfils one, measures the recompute time.
    ItemFields fields;
    fields.key = req.key;
    fields.value_len = static_cast<uint32_t>(req.value.size());
    fields.client_flags = req.client_flags;
    fields.exptime = exptime;
    fields.last_access = ClampStoreTime(t.now_s);
    fields.cas = req.new_cas != 0 ? req.new_cas : 2;
    uint8_t state = req.binary_key ? kItemBinaryKey : 0;
    uint32_t granted = 0;
    bool fulfilled = false;
    uint32_t took_ms = 0;
    if (f.slot != nullptr) {
      const ItemView old_item = ItemAt(old_slot);
      fields.delta_ms = old_item.delta_ms();
      if (action == Action::kStale) {
        // Keeps the old TTL, is marked stale and keeps any outstanding lease.
        fields.exptime = old_item.exptime();
        state |= kItemStale | (slot::State(old_slot) & kItemTokenSent);
        if (state & kItemTokenSent) granted = LeaseGrantedLocked(shard, old_slot);
      } else if (Has(old_slot, kItemTokenSent)) {
        fulfilled = true;
        took_ms = t.now_ms - LeaseGrantedLocked(shard, old_slot);
        fields.delta_ms = SmoothDelta(old_item.delta_ms(), took_ms);
      }
      // The key's read rate goes on with its new value.
      fields.read_rate = CarriedRateLocked(shard, old_item, t, fields.exptime);
      if (!fields.read_rate.present()) {
        fields.read_rate = RecalledRateLocked(shard, hash, t.now_s);
        fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
      }
    } else if (f.carried_rate.present()) {
      fields.read_rate = f.carried_rate;
      fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
    }
    fields.full_header = ItemSize(fields) > pool_->max_fixed_item();
    Placed placed;
    if (!PlaceLocked(ItemSize(fields), t.now_s, &placed)) {
      if (!RoomToRetry(lock, attempt, ItemSize(fields))) {
        // RoomToRetry let the shard's lock go; its counters need it again.
        lock.lock();
        counts.outofmemory++;
        lock.unlock();
        if (remove_on_failure) RemoveKey(req.key);
        res.status = StoreStatus::kNoMemory;
        return res;
      }
      continue;
    }
    if (req.new_cas == 0) fields.cas = NextCas();
    const ItemView item = WriteItem(placed.segment->At(placed.offset), fields);
    CopyBytes(item.value_data(), req.value);
    // The new value's frequency carries the key's reads: it is the same key.
    const uint8_t freq = f.slot != nullptr ? slot::Freq(old_slot) : 0;
    if (fulfilled) CountFulfilledLocked(shard, ItemAt(old_slot).cas(), item, took_ms, t);
    if (f.slot != nullptr) UnlinkLocked(shard, f.slot);
    const uint64_t s = LinkLocked(shard, hash, placed, item, state, freq, /*new_key=*/f.slot == nullptr);
    if (state & kItemTokenSent) SetLeaseLocked(shard, s, granted);
    res.status = StoreStatus::kStored;
    res.cas = fields.cas;
    res.stored_size = fields.value_len;
    return res;
  }
}

// append / prepend: a new item holding old + new bytes, with the old item's
// client flags and TTL. Needs a live item, unless ms N vivifies it.
StoreResult ItemStore::StoreConcat(const StoreRequest& req) {
  StoreResult res;
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const bool append = req.mode == StoreMode::kAppend;
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t);
    const bool live = f.presence == Found::kLive;
    if (!live && !req.has_vivify) {
      res.status = StoreStatus::kNotStored;
      return res;
    }
    const uint64_t old_slot = live ? *f.slot : 0;
    if (live && req.compare_cas != 0 && req.compare_cas != ItemAt(old_slot).cas()) {
      res.status = StoreStatus::kExists;
      return res;
    }
    // The new item: built like memcached's, which allocates it afresh with the
    // old item's flags and TTL (and no base64-key mark).
    ItemFields fields;
    fields.key = req.key;
    fields.last_access = ClampStoreTime(t.now_s);
    fields.cas = req.new_cas != 0 ? req.new_cas : 2;
    std::string_view old_value;
    if (live) {
      const ItemView old_item = ItemAt(old_slot);
      old_value = old_item.value();
      fields.client_flags = old_item.client_flags();
      fields.exptime = old_item.exptime();
    } else {
      fields.client_flags = req.client_flags;
      fields.exptime = ToExpiryTick(req.vivify_exptime);
    }
    const size_t len = old_value.size() + req.value.size();
    if (!ItemFits(req.key.size(), fields.client_flags, len)) {
      res.status = StoreStatus::kNotStored;  // memcached: the bigger item fails to allocate
      return res;
    }
    fields.value_len = static_cast<uint32_t>(len);
    // A new value of the key (whatever it held: a value in stale grace, a
    // stub) ends its lease, and measures the recompute time when it does.
    bool fulfilled = false;
    uint32_t took_ms = 0;
    if (f.slot != nullptr) {
      const uint64_t s = *f.slot;
      fields.delta_ms = ItemAt(s).delta_ms();
      if (Has(s, kItemTokenSent)) {
        fulfilled = true;
        took_ms = t.now_ms - LeaseGrantedLocked(shard, s);
        fields.delta_ms = SmoothDelta(fields.delta_ms, took_ms);
      }
      fields.read_rate = CarriedRateLocked(shard, ItemAt(s), t, fields.exptime);
    }
    fields.full_header = ItemSize(fields) > pool_->max_fixed_item();
    Placed placed;
    if (!PlaceLocked(ItemSize(fields), t.now_s, &placed)) {
      if (!RoomToRetry(lock, attempt, ItemSize(fields))) {
        res.status = StoreStatus::kNotStored;
        return res;
      }
      continue;
    }
    if (req.new_cas == 0) fields.cas = NextCas();
    const ItemView item = WriteItem(placed.segment->At(placed.offset), fields);
    const std::string_view first = append ? old_value : req.value;
    const std::string_view second = append ? req.value : old_value;
    CopyBytes(item.value_data(), first);
    CopyBytes(item.value_data() + first.size(), second);
    const uint8_t freq = f.slot != nullptr ? slot::Freq(*f.slot) : 0;
    if (fulfilled) CountFulfilledLocked(shard, ItemAt(*f.slot).cas(), item, took_ms, t);
    if (f.slot != nullptr) UnlinkLocked(shard, f.slot);
    LinkLocked(shard, hash, placed, item, 0, freq, /*new_key=*/f.slot == nullptr);
    res.status = StoreStatus::kStored;
    res.cas = fields.cas;
    res.stored_size = fields.value_len;
    return res;
  }
}

// ---------------------------------------------------------------------------
// Delete, Touch, Arithmetic.

DeleteStatus ItemStore::Delete(const DeleteRequest& req) {
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const int32_t new_exptime = req.has_ttl ? ToExpiryTick(req.exptime) : 0;
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t);
    if (f.slot == nullptr) return DeleteStatus::kNotFound;
    if (f.presence == Found::kPlaceholder) {
      UnlinkLocked(shard, f.slot);  // cancels the lease; the key had no value
      return DeleteStatus::kNotFound;
    }
    if (f.presence == Found::kExpiredInGrace && !req.invalidate) {
      UnlinkLocked(shard, f.slot);  // expired, as memcached sees it
      return DeleteStatus::kNotFound;
    }
    if (req.compare_cas != 0 && req.compare_cas != ItemAt(*f.slot).cas()) return DeleteStatus::kExists;
    shard.counters.classes[SlabClassOf(ItemAt(*f.slot))].delete_hits++;
    if (!req.invalidate) {
      UnlinkLocked(shard, f.slot);
      return DeleteStatus::kDeleted;
    }
    // md I: keep the value as stale, so the next reader wins and others get X.
    const uint64_t new_cas = req.new_cas != 0 ? req.new_cas : 0;
    ItemView item = ItemAt(*f.slot);
    if (!item.CanHoldCas(new_cas) || (req.has_ttl && !item.CanHoldExptime(new_exptime))) {
      ItemFields fields = item.Fields();
      fields.cas = new_cas;
      if (req.has_ttl) fields.exptime = new_exptime;
      if (!RelocateLocked(shard, f.slot, fields, t.now_s)) {
        if (!RoomToRetry(lock, attempt, ItemSize(fields))) return DeleteStatus::kNotFound;
        continue;
      }
      item = ItemAt(*f.slot);
    }
    const uint64_t s = *f.slot;
    if (Has(s, kItemTokenSent)) {
      shard.leases_out--;
      DropLeaseLocked(shard, s);
    }
    *f.slot = slot::WithState(s, (slot::State(s) | kItemStale) & ~kItemTokenSent);
    WakeLocked(shard, item.key());  // the lease is cancelled
    item.set_cas(new_cas != 0 ? new_cas : NextCas());
    if (req.has_ttl) item.set_exptime(new_exptime);
    return DeleteStatus::kDeleted;
  }
}

bool ItemStore::Touch(std::string_view key, int64_t exptime) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  const int32_t new_exptime = ToExpiryTick(exptime);
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, key, hash, t);
    if (f.presence != Found::kLive) return false;
    if (attempt == 0) shard.counters.classes[SlabClassOf(ItemAt(*f.slot))].touch_hits++;
    size_t needed = 0;
    if (!RoomForExptimeLocked(shard, f.slot, new_exptime, t.now_s, &needed)) {
      if (!RoomToRetry(lock, attempt, needed)) return false;
      continue;
    }
    // memcached: touch fetches with an LRU bump (marking the item fetched); the CAS stays.
    ItemView item = ItemAt(*f.slot);
    item.set_exptime(new_exptime);
    MoveAccessTimeLocked(shard, item, t.now_s);
    ReadRateState rate = item.read_rate();
    if (rate.present()) {
      rate.set_ttl_code(ReadRate::TtlCode(TtlAt(new_exptime, t.now_tick)));
      item.set_read_rate(rate);
    }
    const uint64_t s = *f.slot;
    *f.slot = slot::WithFreq(slot::WithState(s, slot::State(s) | kItemFetched),
                             std::min<uint8_t>(slot::Freq(s) + 1, S3Fifo::kMaxFrequency));
    return true;
  }
}

ArithResult ItemStore::Arithmetic(const ArithRequest& req) {
  ArithResult res;
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const int32_t ttl_exptime = req.has_ttl ? ToExpiryTick(req.exptime) : 0;
  const int32_t vivify_exptime = req.has_vivify ? ToExpiryTick(req.vivify_exptime) : 0;
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t);
    const bool live = f.presence == Found::kLive;
    if (!live && !req.has_vivify) {
      res.status = ArithStatus::kNotFound;
      return res;
    }
    uint64_t value;
    ItemFields fields;
    fields.key = req.key;
    uint8_t state = 0;
    uint8_t freq = 0;
    bool fits_in_place = false;   // memcached would rewrite the old item's bytes
    if (live) {
      const ItemView old_item = ItemAt(*f.slot);
      // memcached's order: empty value, then CAS, then the number itself.
      if (old_item.value_len() == 0) {
        res.status = ArithStatus::kNonNumeric;
        return res;
      }
      if (req.compare_cas != 0 && req.compare_cas != old_item.cas()) {
        res.status = ArithStatus::kExists;
        return res;
      }
      uint64_t current;
      if (!ParseCounter(old_item.value(), &current)) {
        res.status = ArithStatus::kNonNumeric;
        return res;
      }
      if (req.incr) value = current + req.delta;  // wraps mod 2^64
      else value = req.delta > current ? 0 : current - req.delta;
      if (attempt == 0) {
        StoreStats::Class& c = shard.counters.classes[SlabClassOf(old_item)];
        (req.incr ? c.incr_hits : c.decr_hits)++;
      }
      // Looks like memcached's in-place update: same flags, TTL and state bits.
      fields = old_item.Fields();
      state = slot::State(*f.slot) & (kItemFetched | kItemStale | kItemTokenSent | kItemBinaryKey);
      freq = slot::Freq(*f.slot);
    } else {
      value = req.initial;  // ma N J: created with the initial value, no delta applied
      fields.exptime = vivify_exptime;
      fields.last_access = ClampStoreTime(t.now_s);
    }
    char digits[24];
    const size_t len =
        static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), value).ptr - digits);
    // memcached rewrites a number in place when it still fits, padding with
    // spaces ("10" decr 1 reads "9 "); a longer one gets a new item.
    if (live) fits_in_place = len <= ItemAt(*f.slot).value_len();
    fields.value_len = static_cast<uint32_t>(fits_in_place ? ItemAt(*f.slot).value_len() : len);
    res.ttl_before = TtlAt(fields.exptime, t.now_tick);
    if (req.has_ttl) fields.exptime = ttl_exptime;
    fields.cas = req.new_cas != 0 ? req.new_cas : 2;
    fields.full_header = false;
    fields.full_header = ItemSize(fields) > pool_->max_fixed_item();
    Placed placed;
    if (!PlaceLocked(ItemSize(fields), t.now_s, &placed)) {
      if (!RoomToRetry(lock, attempt, ItemSize(fields))) {
        res.status = ArithStatus::kNoMemory;
        return res;
      }
      continue;
    }
    if (req.new_cas == 0) fields.cas = NextCas();
    const ItemView item = WriteItem(placed.segment->At(placed.offset), fields);
    CopyBytes(item.value_data(), std::string_view(digits, len));
    std::memset(item.value_data() + len, ' ', fields.value_len - len);
    uint32_t granted = 0;
    if (live && (state & kItemTokenSent)) granted = LeaseGrantedLocked(shard, *f.slot);
    if (f.slot != nullptr) UnlinkLocked(shard, f.slot);
    const uint64_t s = LinkLocked(shard, hash, placed, item, state, freq,
                                  /*new_key=*/f.slot == nullptr, /*counts_as_new=*/!fits_in_place);
    if (state & kItemTokenSent) SetLeaseLocked(shard, s, granted);
    res.created = !live;
    res.status = ArithStatus::kOk;
    res.value = value;
    res.cas = fields.cas;
    res.ttl = TtlAt(fields.exptime, t.now_tick);
    return res;
  }
}

}  // namespace herdless
