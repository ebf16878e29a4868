// ItemStore's reads. Read looks the key up, then serves a hit or, for the
// reads that ask for one, creates a stub on a miss that holds the key's
// lease. A hit reads top to bottom: the access (read rate, touch, per-class
// count, bump), the lease decision (and the grant, or the re-grant after a
// timeout), the touch that waits for that decision, the result, and a stale
// value served.
#include "storage/item_store.h"

#include <algorithm>

#include "storage/item_store_internal.h"

namespace herdless {

using namespace store_internal;

namespace {

// A lease-get placeholder with no lease timeout (memcached behaviour) still
// needs an end: the FB paper hands out one token per key every 10 seconds.
constexpr int64_t kPlaceholderTtlWithoutTimeoutS = 10;

// A miss creates a stub that holds the key's lease for these reads: a
// placeholder (lease-get, classic stampede modes), or a 0-byte item
// (kMeta with create_on_miss).
bool WantsStub(const ReadOptions& opts) {
  return (opts.kind == ReadKind::kMeta && opts.create_on_miss) || opts.kind == ReadKind::kLeaseGet ||
         opts.kind == ReadKind::kClassicLease;
}
bool MakesPlaceholder(const ReadOptions& opts) { return opts.kind != ReadKind::kMeta; }

}  // namespace

// What a hit works on: the item, and what it looked like before this read.
struct ItemStore::Impl::Hit {
  uint64_t* slot = nullptr;
  ItemView item{nullptr};
  bool stub = false;            // a placeholder, or an item still waiting for its value
  bool touch_later = false;     // see AccessLocked
  int32_t exptime_before = 0;
  int64_t since_access_s = 0;   // before this read, at least 0
  uint8_t ttl_code_before = 0;  // the TTL the estimate kept before any touch (ReadRate::TtlCode)
  ReadRateState rate;           // the estimate as this read leaves it
};

// Placeholders are seen only by the reads that would create one; values in
// stale grace are not seen by classic reads.
bool ItemStore::Impl::VisibleTo(const Found& f, const ReadOptions& opts) {
  if (f.presence == Found::kPlaceholder) return WantsStub(opts);
  if (f.presence == Found::kExpiredInGrace) return opts.kind != ReadKind::kClassic;
  return f.slot != nullptr;
}

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
  const uint64_t hash = HashKey(key, opts.key_hash);
  Shard& shard = ShardFor(hash);
  const double u = (opts.kind != ReadKind::kClassic && opts.lease.xfetch_beta > 0)
                       ? config_.random->UniformOpenClosed()
                       : 1.0;
  const int32_t touch_exptime = opts.has_touch ? ToExpiryTick(opts.touch_exptime) : 0;
  ReadResult r;
  bool tried_now = false;   // a value on flash read at once (TryFetchNowLocked), once
  for (int attempt = 0;; attempt++) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, key, hash, t);
    r.miss_expired = f.removed_expired;
    r.miss_flushed = f.removed_flushed;
    // A value on flash is a hit once fetched for this read; until then it is
    // read at once if cached, or parks, or misses.
    const bool on_flash = config_.flash != nullptr && f.slot != nullptr && ItemAt(*f.slot).is_flash_stub();
    if (on_flash && opts.value_wanted && !tried_now && VisibleTo(f, opts) &&
        TryFetchNowLocked(lock, shard, f, key, opts.flash_park) != FetchNow::kNotTried) {
      tried_now = true;
      continue;   // either way, look again: the value waits for this read, or it parks
    }
    if (on_flash && (!VisibleTo(f, opts) || (opts.value_wanted && ReadStubLocked(shard, f, key, opts, &r)))) return r;
    if (VisibleTo(f, opts)) {
      // A touch that gives a TTL to an item stored without one needs a copy
      // with room for it: made before anything else changes.
      size_t needed = 0;
      if (opts.has_touch && !RoomForExptimeLocked(shard, f.slot, touch_exptime, t.now_s, &needed)) {
        if (!RoomToRetry(lock, attempt, needed)) return r;
        continue;
      }
      HitLocked(shard, f.slot, f, opts, touch_exptime, t, u, &r);
      if (on_flash) {
        r.on_flash = r.status == ReadStatus::kHit;
        opts.value_wanted ? ServeFetchedLocked(shard, key, &r) : LeaveOnFlashLocked(f, &r);
      }
      if (opts.park != nullptr && r.no_value && r.lease == LeaseVerdict::kHeld &&
          config_.wake_sink != nullptr) {
        shard.parked.Park(key, *opts.park);
        r.parked = true;
      }
      return r;
    }
    if (!WantsStub(opts)) return r;  // a plain miss; invisible items stay as they are

    // A miss that creates a stub and wins its lease.
    uint8_t state = 0;
    ItemFields fields = StubFields(key, f, opts, touch_exptime, t, &state);
    Placed placed;
    ItemView stub(nullptr);
    const Placement placement = WriteNewLocked(lock, attempt, t, /*draw_cas=*/opts.create_cas == 0, &fields, &placed,
                                                 &stub);
    if (placement == Placement::kRetry) continue;  // the key may have changed meanwhile: look again
    if (placement == Placement::kNoRoom) return r;  // a miss without a lease
    LinkStubLocked(shard, hash, placed, stub, state, MakesPlaceholder(opts), t, &r);
    return r;
  }
}

// ---------------------------------------------------------------------------
// A miss that creates a stub.

ItemFields ItemStore::Impl::StubFields(std::string_view key, const Found& f, const ReadOptions& opts,
                                       int32_t touch_exptime, const Times& t, uint8_t* state) const {
  ItemFields fields;
  fields.key = key;
  fields.last_access = ClampStoreTime(t.now_s);
  *state = kItemTokenSent | kItemNeedsValue;
  if (MakesPlaceholder(opts)) {
    fields.exptime = PlaceholderExptime(t.now_us);
    *state |= kItemPlaceholder;
  } else {
    // As memcached's: a real 0-byte item with the creation TTL (or the touch's).
    fields.exptime = opts.has_touch ? touch_exptime : ToExpiryTick(opts.create_exptime);
    if (opts.bump) *state |= kItemFetched;
  }
  // narrow: the real one is drawn once there is room (unless the client chose it)
  fields.cas = opts.create_cas != 0 ? opts.create_cas : 2;
  fields.read_rate = f.carried_rate;
  if (fields.read_rate.present()) {
    fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
  }
  return fields;
}

void ItemStore::Impl::LinkStubLocked(Shard& shard, uint64_t hash, const Placed& placed, ItemView stub,
                                     uint8_t state, bool placeholder, const Times& t, ReadResult* r) {
  const uint64_t s = LinkLocked(shard, hash, placed, stub, state, 0, /*new_key=*/true);
  SetLeaseLocked(shard, s, t.now_ms);
  shard.counters.lease_grants++;
  if (Watching(StoreEventKind::kLeaseGranted)) {
    StoreEvent e = EventAbout(StoreEventKind::kLeaseGranted, stub, t.now_tick);
    e.token = stub.cas();
    e.reason = LeaseReason::kMiss;
    config_.events->OnEvent(e);
  }
  placed.segment->Pin();
  r->status = ReadStatus::kHit;
  r->item = ItemRef(placed.segment);
  r->value = stub.value();
  r->client_flags = 0;
  r->cas = stub.cas();
  r->ttl_before = r->ttl_after = TtlAt(stub.exptime(), t.now_tick);
  r->lease = LeaseVerdict::kWin;
  r->placeholder = placeholder;
  r->created = !placeholder;
  r->no_value = true;
}

// ---------------------------------------------------------------------------
// A hit.

void ItemStore::Impl::HitLocked(Shard& shard, uint64_t* slot, const Found& found, const ReadOptions& opts,
                                int32_t touch_exptime, const Times& t, double u, ReadResult* r) {
  // A touch moves the expiry of a value kept past it (stale_grace): the value
  // stays stale, as memcached keeps an md I'd one stale through a touch.
  // (A classic-mode read touches only a fresh value: AccessLocked.)
  if (found.presence == Found::kExpiredInGrace && opts.has_touch && opts.kind != ReadKind::kClassicLease) {
    *slot = slot::WithState(*slot, slot::State(*slot) | kItemStale);
  }
  Hit hit = AccessLocked(shard, slot, found.hash, opts, touch_exptime, t, r);
  const bool classic = opts.kind == ReadKind::kClassic;
  // Classic reads ignore staleness entirely (memcached §1.7.11).
  const bool stale = !classic && (found.presence == Found::kExpiredInGrace || Has(*slot, kItemStale));
  if (!classic) DecideLeaseLocked(shard, hit, stale, opts, t, u, r);
  if (hit.touch_later && !stale && !hit.stub && r->lease != LeaseVerdict::kWin) {
    TouchHit(&hit, touch_exptime, t);
    if (hit.rate.present()) hit.item.set_read_rate(hit.rate);   // the TTL code only: counts unchanged
    if (opts.details) r->ttl_after = TtlAt(hit.item.exptime(), t.now_tick);
  }
  FillHit(hit, stale, r);
  // A classic-mode winner is answered with a miss: it does not see the stale value.
  if (stale && !(opts.kind == ReadKind::kClassicLease && r->lease == LeaseVerdict::kWin)) {
    CountStaleServedLocked(shard, hit.item, t);
  }
}

// The access: the key's read rate (r->reads_per_s is its estimate before this
// read), the touch, the per-class hit, the bump. A classic-mode read
// (kClassicLease) touches only a fresh value it is given, after the lease
// decision (touch_later): touching a stale value would make it look fresh,
// and the reader chosen to recompute is answered a miss.
ItemStore::Impl::Hit ItemStore::Impl::AccessLocked(Shard& shard, uint64_t* slot, uint64_t hash,
                                                   const ReadOptions& opts,
                                                   int32_t touch_exptime, const Times& t, ReadResult* r) {
  Hit h;
  h.slot = slot;
  h.stub = Has(*slot, kItemPlaceholder | kItemNeedsValue);
  if (opts.bump && !h.stub) TrackIfHotLocked(shard, slot, hash, t);   // may copy the item
  h.item = ItemAt(*slot);
  h.touch_later = opts.has_touch && opts.kind == ReadKind::kClassicLease;
  h.exptime_before = h.item.exptime();
  h.since_access_s = std::max<int64_t>(0, t.now_s - h.item.last_access());
  h.rate = h.item.read_rate();
  h.ttl_code_before = h.rate.ttl_code();
  r->reads_per_s = h.rate.present() ? ReadRate::PerSecond(h.rate.count, h.since_access_s) : 0;
  if (opts.has_touch && !h.touch_later) TouchHit(&h, touch_exptime, t);
  if (opts.details) {
    r->ttl_before = TtlAt(h.exptime_before, t.now_tick);
    r->ttl_after = TtlAt(h.item.exptime(), t.now_tick);
    r->fetched_before = Has(*slot, kItemFetched);
    r->seconds_since_access = t.now_s - h.item.last_access();
    r->frequency = slot::Freq(*slot);
    r->recompute_ms = h.item.delta_ms();
  }
  if (!h.stub) {
    StoreStats::Class& c = shard.counters.classes[SlabClassOf(h.item)];
    (opts.has_touch ? c.touch_hits : c.get_hits)++;
  }
  if (opts.bump) {
    if (h.rate.present()) {
      h.rate.count = ReadRate::AfterRead(h.rate.count, h.since_access_s, NextRandom(&shard.random));
      h.rate.set_hot(r->reads_per_s >= config_.lease.refresh_hot_per_s);
    }
    // A hit only counts: no list to move (storage/eviction.h).
    const uint8_t freq = std::min<uint8_t>(slot::Freq(*slot) + 1, S3Fifo::kMaxFrequency);
    *slot = slot::WithFreq(slot::WithState(*slot, slot::State(*slot) | kItemFetched), freq);
    h.item.set_last_access(ClampStoreTime(t.now_s));
  }
  if (h.rate.present()) SetRateLocked(shard, h.item, h.rate);
  return h;
}

// The touch: the new expiry, and the TTL the key's estimate goes on with.
void ItemStore::Impl::TouchHit(Hit* h, int32_t touch_exptime, const Times& t) {
  h->item.set_exptime(touch_exptime);
  h->rate.set_ttl_code(ReadRate::TtlCode(TtlAt(touch_exptime, t.now_tick)));
}

// The lease decision of a read that is not classic (storage/lease.h), and
// the grant when this reader wins.
void ItemStore::Impl::DecideLeaseLocked(Shard& shard, Hit& h, bool stale, const ReadOptions& opts,
                                        const Times& t, double u, ReadResult* r) {
  // Most meta reads: r keeps its default, no lease (kNone).
  if (!LeaseDecisionNeeded(stale, Has(*h.slot, kItemTokenSent), Has(*h.slot, kItemNeedsValue), opts.lease)) return;
  // Which TTL the decision judges: before or after this read's touch.
  const bool judge_new_ttl = opts.judge_touched_ttl || !opts.has_touch || h.touch_later;
  LeaseView view;
  view.stale = stale;
  view.token_sent = Has(*h.slot, kItemTokenSent);
  view.needs_value = Has(*h.slot, kItemNeedsValue);
  view.exptime = judge_new_ttl ? h.item.exptime() : h.exptime_before;
  view.lease_granted_ms = view.token_sent ? LeaseGrantedLocked(shard, *h.slot) : 0;
  view.delta_ms = h.item.delta_ms();
  view.delta_spread = shard.recompute_spread;
  view.reads_per_s = r->reads_per_s;
  view.ttl_s = ReadRate::TtlOfCode(judge_new_ttl ? h.rate.ttl_code() : h.ttl_code_before);
  LeaseDecision d = DecideRead(config_.lease, view, opts.lease, t.now_us, u);
  if (d.verdict == LeaseVerdict::kHeld && opts.held_lease != 0 && h.item.cas() == opts.held_lease) {
    d.verdict = LeaseVerdict::kWin;   // its own live lease, given back (no new grant)
  } else if (d.verdict == LeaseVerdict::kWin) {
    // lease-get's tokens 0 and 1 mean "no lease" and "a hot miss": a CAS a
    // client chose (E) as either is redrawn before it becomes the token.
    if (opts.kind == ReadKind::kLeaseGet && h.item.cas() <= 1) SetCasLocked(shard, h.item, NextCas());
    GrantLeaseLocked(shard, h, view, d, t);
  }
  r->lease = d.verdict;
  r->lease_by_xfetch = d.by_xfetch;
  r->lease_by_refresh = d.by_refresh;
}

// The item carries the reader's lease from now (its CAS is the token).
void ItemStore::Impl::GrantLeaseLocked(Shard& shard, Hit& h, const LeaseView& view, const LeaseDecision& d,
                                       const Times& t) {
  uint64_t* slot = h.slot;
  if (!view.token_sent) {
    *slot = slot::WithState(*slot, slot::State(*slot) | kItemTokenSent);
    shard.leases_out++;
  }
  SetLeaseLocked(shard, *slot, t.now_ms, /*early=*/d.by_xfetch || d.by_refresh);
  LeaseReason reason = d.by_xfetch         ? LeaseReason::kXFetch
                       : view.stale        ? LeaseReason::kStale
                       : view.needs_value  ? LeaseReason::kMiss
                                           : LeaseReason::kRecache;
  if (d.regrant) {
    RegrantLocked(shard, h, view.lease_granted_ms, t);
    reason = LeaseReason::kTakeover;
  }
  shard.counters.lease_grants++;
  if (d.by_xfetch) shard.counters.xfetch_grants++;
  if (d.by_refresh) shard.counters.refresh_grants++;
  if (Watching(StoreEventKind::kLeaseGranted)) {
    StoreEvent e = EventAbout(StoreEventKind::kLeaseGranted, h.item, t.now_tick);
    e.token = h.item.cas();
    e.reason = reason;
    config_.events->OnEvent(e);
  }
}

// The previous holder's lease (granted at `dead_granted_ms`) timed out: a new
// CAS supersedes its token, so its fenced store fails; a placeholder lives
// on; readers parked on the dead lease wait for the new one instead.
void ItemStore::Impl::RegrantLocked(Shard& shard, Hit& h, uint32_t dead_granted_ms, const Times& t) {
  const uint64_t dead_token = h.item.cas();
  SetCasLocked(shard, h.item, NextCas());
  if (Has(*h.slot, kItemPlaceholder)) h.item.set_exptime(PlaceholderExptime(t.now_us));
  shard.counters.lease_timeouts++;
  WakeLocked(shard, h.item.key());
  if (Watching(StoreEventKind::kLeaseTimedOut)) {
    StoreEvent e = EventAbout(StoreEventKind::kLeaseTimedOut, h.item, t.now_tick);
    e.token = h.item.cas();
    e.previous_token = dead_token;
    e.held_ms = t.now_ms - dead_granted_ms;
    config_.events->OnEvent(e);
  }
}

// The result: the value (pinned) and the metadata as they are now.
void ItemStore::Impl::FillHit(const Hit& h, bool stale, ReadResult* r) const {
  Segment* seg = SegmentOf(*h.slot);
  seg->Pin();
  r->status = ReadStatus::kHit;
  r->item = ItemRef(seg);
  r->value = h.item.value();
  r->client_flags = h.item.client_flags();
  r->cas = h.item.cas();
  r->stale = stale;
  r->placeholder = Has(*h.slot, kItemPlaceholder);
  r->no_value = h.stub;
  r->binary_key = Has(*h.slot, kItemBinaryKey);
}

void ItemStore::Impl::CountStaleServedLocked(Shard& shard, ItemView item, const Times& t) {
  shard.counters.stale_hits++;
  if (Watching(StoreEventKind::kStaleServed)) {
    StoreEvent e = EventAbout(StoreEventKind::kStaleServed, item, t.now_tick);
    e.token = item.cas();
    config_.events->OnEvent(e);
  }
}

}  // namespace herdless
