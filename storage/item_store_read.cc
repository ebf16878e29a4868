// ItemStore::Impl::Read: lookup, then a hit (touch, counting, the lease decision)
// or a miss that creates a stub holding the key's lease.
#include "storage/item_store.h"

#include <algorithm>

#include "storage/item_store_internal.h"

namespace herdless {

using namespace store_internal;

namespace {

// A lease-get placeholder with no lease timeout (memcached behaviour) still
// needs an end: the FB paper hands out one token per key every 10 seconds.
constexpr int64_t kPlaceholderTtlWithoutTimeoutS = 10;

}  // namespace

// ---------------------------------------------------------------------------
// Read.

// A placeholder lives a little longer than its lease, so that a timeout is
// seen as a regrant (which renews it) rather than as a miss: until the second
// after the one in which the lease ends. (Rounding the grant time down
// instead could end it a few ms after the lease, before the readers parked on
// it notice the timeout, and they would all be woken by its expiry.)
int32_t ItemStore::Impl::PlaceholderExptime(int64_t now_us) const {
  if (config_.lease.lease_timeout_ms == 0) {
    return ClampStoreTime(TickOf(now_us) + kPlaceholderTtlWithoutTimeoutS * kTicksPerSecond);
  }
  const int64_t lease_end_us = now_us + int64_t{config_.lease.lease_timeout_ms} * 1000;
  return ClampStoreTime(((lease_end_us + 999999) / 1000000 + 1) * kTicksPerSecond);
}

ReadResult ItemStore::Impl::Read(std::string_view key, const ReadOptions& opts) {
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

void ItemStore::Impl::HitLocked(Shard& shard, uint64_t* slot, const Found& found, const ReadOptions& opts,
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

}  // namespace herdless
