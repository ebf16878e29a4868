// ItemStore's maintenance and introspection: flush_all, the expiry crawl
// (ReclaimExpired), the walk over every item, restoring items from a
// snapshot, and the counters.
#include "storage/item_store.h"

#include <cstring>

#include "storage/change_journal.h"
#include "storage/item_store_internal.h"

namespace herdless {

using namespace store_internal;

// ---------------------------------------------------------------------------
// Flush, expiry crawl, walk, restore, stats.

// Drops every item whose last store/touch/fetch was before `flushed_before`
// (everything when it is INT64_MAX).
size_t ItemStore::Impl::SweepAll(int64_t flushed_before) {
  size_t removed = 0;
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    ShardLock lock(this, shard);
    uint64_t cursor = 0;
    do {
      cursor = shard.index.Walk(cursor, 64, [&](uint64_t* slot) {
        const ItemView item = ItemAt(*slot);
        if (item.last_access() < flushed_before) {
          // memcached's maintainer and allocator count flushed items reclaimed.
          if (!Has(*slot, kItemPlaceholder | kItemNeedsValue)) {
            CountReclaimedLocked(shard, SlabClassOf(item), !Has(*slot, kItemFetched));
          }
          UnlinkLocked(shard, slot);
          removed++;
        }
      });
    } while (cursor != 0);
  }
  return removed;
}

void ItemStore::Impl::FlushAll(int64_t delay_s) {
  const int64_t now_s = NowSeconds();
  const int64_t deadline = delay_s > 0 ? ToStoreTime(delay_s) : 0;
  if (deadline <= now_s) {
    flush_deadline_.store(0, std::memory_order_relaxed);
    SweepAll(INT64_MAX);
    return;
  }
  // Items hidden by a deadline that already passed must not come back when
  // the deadline moves: remove them before replacing it.
  const int64_t previous = flush_deadline_.exchange(deadline, std::memory_order_relaxed);
  if (previous != 0 && previous <= now_s) SweepAll(previous);
}

size_t ItemStore::Impl::ReclaimExpired(size_t budget) {
  // A delayed flush_all takes effect here, once, when its deadline passes:
  // its items go at once, and readers parked on them are woken (a lazy check
  // on access alone would leave them waiting for their lease to time out).
  size_t removed = 0;
  const int64_t deadline = flush_deadline_.load(std::memory_order_relaxed);
  if (deadline != 0 && NowSeconds() >= deadline &&
      flush_swept_.exchange(deadline, std::memory_order_relaxed) != deadline) {
    removed += SweepAll(deadline);
  }
  // At most ~1000 buckets (a few thousand items) a call, 16 per lock hold.
  constexpr size_t kBucketsPerLock = 16;
  const size_t scan_limit = std::max<size_t>(budget * 4, 1024);
  size_t scanned = 0;
  while (removed < budget && scanned < scan_limit) {
    const size_t index = reclaim_cursor_.load(std::memory_order_relaxed) % shard_count_;
    Shard& shard = shards_[index];
    bool shard_done = false;
    {
      ShardLock lock(this, shard);
      const Times t = Now();
      const int64_t now_s = t.now_s;
      shard.reclaim_position = shard.index.Walk(shard.reclaim_position, kBucketsPerLock, [&](uint64_t* slot) {
        if (removed >= budget) return;
        const ItemView item = ItemAt(*slot);
        // A key that is no longer read stops counting as hot here (reads
        // re-judge the keys that are).
        ReadRateState rate = item.read_rate();
        if (rate.hot() && ReadRate::PerSecond(rate.count, now_s - item.last_access()) <
                              config_.lease.refresh_hot_per_s) {
          rate.set_hot(false);
          SetRateLocked(shard, item, rate);
        }
        if (CrawlItemLocked(shard, slot, t, /*by_crawler=*/false)) removed++;
      });
      scanned += kBucketsPerLock;
      shard_done = shard.reclaim_position == 0;
    }
    if (shard_done && (reclaim_cursor_.fetch_add(1, std::memory_order_relaxed) + 1) % shard_count_ == 0) {
      crawler_passes_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return removed;
}

// LookupLocked's rule: flushed, or expired for every reader
// (ExpiredForAllLocked). `by_crawler`: an lru_crawler crawl, whose removals are
// memcached's crawler_reclaimed (flushed ones too; only expired ones are
// expired_unfetched); otherwise the background reclaim, memcached's LRU
// maintainer, whose removals are reclaimed.
bool ItemStore::Impl::CrawlItemLocked(Shard& shard, uint64_t* slot, const Times& t, bool by_crawler) {
  const int64_t now_s = t.now_s;
  const uint64_t s = *slot;
  const ItemView item = ItemAt(s);
  const int slab_class = SlabClassOf(item);
  StoreStats::Class& c = shard.counters.classes[slab_class];
  if (by_crawler) {
    shard.counters.crawler_items_checked++;
    c.crawler_items_checked++;
  }
  const bool flushed = IsFlushed(item, now_s);
  if (!flushed && !ExpiredForAllLocked(shard, s, item, t)) {
    return false;
  }
  if (!by_crawler) {
    CountReclaimedLocked(shard, slab_class, !Has(s, kItemFetched));
  } else {
    shard.counters.crawler_reclaimed++;
    c.crawler_reclaimed++;
    if (!flushed && !Has(s, kItemFetched)) {
      shard.counters.expired_unfetched++;
      c.expired_unfetched++;
    }
  }
  // An expired hot key keeps its read rate for its next value (read_rate.h).
  if (!flushed && item.read_rate().present() && !Has(s, kItemPlaceholder | kItemNeedsValue)) {
    RememberRateLocked(shard, HashKey(item.key()), CarriedRateLocked(shard, item, t, 0), now_s);
  }
  UnlinkLocked(shard, slot);
  return true;
}

size_t ItemStore::Impl::Crawl(WalkCursor* cursor, size_t max_buckets, CrawlScope* scope) {
  if (cursor->done) return 0;
  size_t removed = 0;
  Shard& shard = shards_[cursor->shard];
  {
    ShardLock lock(this, shard);
    const Times t = Now();
    cursor->position = shard.index.Walk(cursor->position, max_buckets, [&](uint64_t* slot) {
      const int slab_class = SlabClassOf(ItemAt(*slot));
      if ((scope->classes & (uint64_t{1} << slab_class)) == 0) return;
      if (scope->per_class_limit != 0 && scope->checked[slab_class] >= scope->per_class_limit) return;
      scope->checked[slab_class]++;
      scope->checked_total++;
      if (CrawlItemLocked(shard, slot, t, /*by_crawler=*/true)) removed++;
    });
  }
  if (cursor->position == 0) {
    cursor->shard++;
    cursor->done = cursor->shard == shard_count_;
  }
  scope->reclaimed += removed;
  return removed;
}

ItemRef WalkedItem::Pin() const {
  segment->Pin();
  return ItemRef(segment);
}

size_t ItemStore::Impl::Walk(WalkCursor* cursor, size_t max_buckets,
                             const std::function<void(const WalkedItem&)>& visit, bool flash_stubs) {
  if (cursor->done) return 0;
  size_t visited = 0;
  Shard& shard = shards_[cursor->shard];
  {
    ShardLock lock(this, shard);
    const Times t = Now();
    const int64_t now_s = t.now_s;
    cursor->position = shard.index.Walk(cursor->position, max_buckets, [&](uint64_t* slot) {
      const uint64_t s = *slot;
      const ItemView item = ItemAt(s);
      const bool expired = IsExpiredAt(item, t.now_tick);
      if (IsFlushed(item, now_s) || ExpiredForAllLocked(shard, s, item, t) ||
          (item.is_flash_stub() && !flash_stubs)) {   // no value in RAM (-o ext_path): only callers that want them
        return;
      }
      WalkedItem w;
      w.key = item.key();
      w.value = item.value();
      w.client_flags = item.client_flags();
      w.exptime = SecondOfTick(item.exptime());
      if (w.exptime > 0) w.exptime_eighths = static_cast<uint8_t>(item.exptime() - w.exptime * kTicksPerSecond);
      w.last_access = item.last_access();
      w.cas = item.cas();
      w.delta_ms = item.delta_ms();
      w.frequency = slot::Freq(s);
      w.fetched = Has(s, kItemFetched);
      w.stale = Has(s, kItemStale) || expired;
      w.invalidated = Has(s, kItemStale);
      w.binary_key = Has(s, kItemBinaryKey);
      w.no_value = Has(s, kItemPlaceholder | kItemNeedsValue);
      w.flash_stub = item.is_flash_stub();
      w.placeholder = Has(s, kItemPlaceholder);
      w.lease_out = Has(s, kItemTokenSent);
      // A key that became hot in an item with no room for its estimate has
      // it in the shard's remembered rates until its next store.
      ReadRateState rate = item.read_rate();
      if (!rate.present() && !w.no_value && Has(s, kItemFetched)) {
        rate = RememberedAsOfLocked(shard, HashKey(item.key()), item);
      }
      w.read_rate = rate;
      w.reads_per_s = rate.present()
                          ? ReadRate::PerSecond(rate.count, std::max<int64_t>(0, now_s - item.last_access()))
                          : 0;
      w.slab_class = SlabClassOf(item);
      w.size = static_cast<uint32_t>(item.size());
      w.segment = SegmentOf(s);
      visit(w);
      visited++;
    });
  }
  if (cursor->position == 0) {
    cursor->shard++;
    cursor->done = cursor->shard == shard_count_;
  }
  return visited;
}

void ItemStore::Impl::ReserveItems(size_t items) {
  // Keys spread evenly over the shards; a few percent more for the spread.
  const size_t per_shard = items / shard_count_ + items / shard_count_ / 16 + 64;
  for (size_t i = 0; i < shard_count_; i++) {
    ShardLock lock(this, shards_[i]);
    shards_[i].index.Reserve(per_shard);
  }
}

void ItemStore::Impl::SetCasJournal(ChangeJournal* journal) {
  cas_journal_ = journal;
  if (journal != nullptr) ReserveCasAhead(next_cas_.load(std::memory_order_relaxed));
}

void ItemStore::Impl::ReserveCasAhead(uint64_t from) { cas_journal_->ReserveCas(from + 2 * kCasReserveBlock); }

void ItemStore::Impl::AdvanceCasPast(uint64_t cas) {
  // CAS values at or above the counter's wrap point never come from it.
  if (cas >= kNarrowCasLimit) return;
  uint64_t next = next_cas_.load(std::memory_order_relaxed);
  while (next <= cas &&
         !next_cas_.compare_exchange_weak(next, cas + 1, std::memory_order_relaxed)) {
  }
}

StoreStatus ItemStore::Impl::Restore(const RestoreRequest& req) {
  if (!ItemFits(req.key.size(), req.client_flags, req.value.size())) return StoreStatus::kTooLarge;
  const int64_t now_unix = config_.clock->UnixSeconds();
  // LookupLocked's rule: an item expired beyond the stale grace is gone.
  if (req.exptime_unix != 0 && req.exptime_unix + int64_t{config_.stale_grace_s} <= now_unix) {
    return StoreStatus::kNotStored;
  }
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  // A value on flash: its record must be the kept flash tier's (-e restart).
  if (req.flash_stub && !AdoptFlashStub(req.key, req.value, /*adopt=*/true)) return StoreStatus::kNotFound;
  // Later stores must get CAS values no restored item has.
  if (req.cas != 0) AdvanceCasPast(req.cas);
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t);
    ItemFields fields;
    fields.key = req.key;
    fields.value_len = static_cast<uint32_t>(req.value.size());
    fields.flash_stub = req.flash_stub;
    fields.client_flags = req.client_flags;
    if (req.exptime_unix != 0) {
      // Whole Unix seconds, as ToExpiryTick takes absolute exptimes. Store
      // time may be near 0 just after a start: an expiry in the past (kept
      // stale by the grace) must not become 0, which means "never".
      const int64_t exptime =
          (req.exptime_unix - now_unix + t.now_s) * kTicksPerSecond + std::min<int64_t>(req.exptime_eighths, 7);
      fields.exptime = ClampStoreTime(exptime != 0 ? exptime : -1);
    }
    int64_t last_access =
        req.last_access_unix == 0 ? t.now_s : std::min(req.last_access_unix - now_unix + t.now_s, t.now_s);
    const int64_t flush_deadline = flush_deadline_.load(std::memory_order_relaxed);
    if (req.before_flush && flush_deadline != 0) last_access = std::min(last_access, flush_deadline - 1);
    fields.last_access = ClampStoreTime(last_access);
    fields.delta_ms = req.delta_ms;
    if (req.read_rate.present()) {   // as of last access, with the TTL the key was stored with
      fields.read_rate = req.read_rate;
      // Not the TTL left now: a window judged by that would shrink with it,
      // and a value restored near its expiry would get its refresh too late.
      if (fields.read_rate.ttl_code() == 0) {
        fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
      }
    }
    fields.cas = req.cas != 0 ? req.cas : 2;
    Placed placed;
    ItemView item(nullptr);
    const Placement placement =
        WriteNewLocked(lock, attempt, t, /*draw_cas=*/req.cas == 0, &fields, &placed, &item, req.evict);
    if (placement == Placement::kRetry) continue;
    if (placement == Placement::kNoRoom) {
      if (req.flash_stub) AdoptFlashStub(req.key, req.value, /*adopt=*/false);
      return StoreStatus::kNoMemory;
    }
    CopyBytes(item.value_data(), req.value);
    if (f.slot != nullptr) UnlinkLocked(shard, f.slot);
    const uint8_t state = (req.fetched ? kItemFetched : 0) | (req.stale ? kItemStale : 0) |
                          (req.binary_key ? kItemBinaryKey : 0);
    LinkLocked(shard, hash, placed, item, state, std::min(req.frequency, S3Fifo::kMaxFrequency),
               /*new_key=*/false);
    return StoreStatus::kStored;
  }
}

StoreStats ItemStore::Impl::Stats() const {
  StoreStats s;
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    std::lock_guard<ShardMutex> lock(shard.mu);
    s.AddShard(shard.counters);
    s.curr_items += shard.index.items();
    s.bytes += shard.bytes;
    s.curr_leases += shard.leases_out;
    s.curr_foreign_items += shard.foreign_items;
    s.hot_keys += shard.hot_items;
    s.rated_keys += shard.rated_items;
    s.hash_buckets += shard.index.buckets() * Index::kSlotsPerBucket;
    s.hash_bytes += shard.index.MemoryBytes();
  }
  s.crawler_passes = crawler_passes_.load(std::memory_order_relaxed);
  s.segments_recycled = pool_->FixedRecycled();
  s.segments_free = pool_->FixedFree();
  s.total_malloced = pool_->used();
  s.segment_size = pool_->segment_size();
  s.segments_small = queues_->SegmentsIn(SegmentQueue::kSmall);
  s.segments_main = queues_->SegmentsIn(SegmentQueue::kMain);
  s.jumbo_items = pool_->JumboCount();
  s.evicted_segments = evicted_segments_.load(std::memory_order_relaxed);
  return s;
}

void ItemStore::Impl::ResetStats() {
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    std::lock_guard<ShardMutex> lock(shard.mu);
    shard.counters.ResetCounters();   // the per-class gauges stay, like curr_items
  }
  evicted_segments_.store(0, std::memory_order_relaxed);
  crawler_passes_.store(0, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Class ages and the size histogram.

void ItemStore::Impl::ClassAges(uint64_t ages[kMemcachedClasses + 1]) const {
  int64_t oldest[kMemcachedClasses + 1];
  for (int k = 0; k <= kMemcachedClasses; k++) oldest[k] = INT64_MAX;
  queues_->ForEachSegment([&](const Segment& seg) {
    uint64_t mask = seg.classes.load(std::memory_order_relaxed);
    while (mask != 0) {
      const int k = __builtin_ctzll(mask);
      mask &= mask - 1;
      if (k <= kMemcachedClasses && seg.created_s < oldest[k]) oldest[k] = seg.created_s;
    }
  });
  const int64_t now_s = NowSeconds();
  for (int k = 0; k <= kMemcachedClasses; k++) {
    ages[k] = oldest[k] == INT64_MAX ? 0 : static_cast<uint64_t>(std::max<int64_t>(0, now_s - oldest[k]));
  }
}

namespace {
constexpr size_t kSizeBucketBytes = 32;   // memcached's `stats sizes` granularity
size_t SizeBucket(size_t bytes) { return (bytes + kSizeBucketBytes - 1) / kSizeBucketBytes; }
}  // namespace

void ItemStore::Impl::CountSizeLocked(const Shard&, ItemView item, int delta) {
  if (item.cas() < sizes_cas_min_) return;
  const size_t bucket = SizeBucket(MemcachedSizeOf(item));
  if (bucket < size_buckets_) sizes_[bucket].fetch_add(static_cast<uint32_t>(delta), std::memory_order_relaxed);
}

void ItemStore::Impl::SetCasLocked(const Shard& shard, ItemView item, uint64_t cas) {
  if (shard.track_sizes) CountSizeLocked(shard, item, -1);
  item.set_cas(cas);
  if (shard.track_sizes) CountSizeLocked(shard, item, +1);
}

// As memcached's item_stats_sizes_init: the items already stored are not
// counted (an item counts once its CAS is one handed out from now on), so
// enabling costs no pass over the cache.
void ItemStore::Impl::TrackSizes(bool on) {
  std::lock_guard<std::mutex> guard(sizes_mu_);
  if (on == (sizes_ != nullptr)) return;
  if (on) {
    size_buckets_ = config_.item_size_max / kSizeBucketBytes + 1;   // memcached's stats_sizes_buckets
    sizes_ = std::make_unique<std::atomic<uint32_t>[]>(size_buckets_);
    for (size_t b = 0; b < size_buckets_; b++) sizes_[b].store(0, std::memory_order_relaxed);
    sizes_cas_min_ = next_cas_.load(std::memory_order_relaxed);
  }
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    ShardLock lock(this, shard);
    shard.track_sizes = on;
  }
  if (!on) sizes_.reset();
}

bool ItemStore::Impl::tracking_sizes() const {
  std::lock_guard<std::mutex> guard(sizes_mu_);
  return sizes_ != nullptr;
}

std::vector<std::pair<uint64_t, uint64_t>> ItemStore::Impl::SizeHistogram() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::lock_guard<std::mutex> guard(sizes_mu_);
  if (sizes_ == nullptr) return out;
  for (size_t b = 0; b < size_buckets_; b++) {
    const uint32_t n = sizes_[b].load(std::memory_order_relaxed);
    if (n != 0) out.emplace_back(uint64_t{b} * kSizeBucketBytes, n);
  }
  return out;
}

}  // namespace herdless
