// ItemStore's writes: Store (set, add, replace, cas, lease-set), append and
// prepend, Delete, Touch and Arithmetic, each from lookup to result.
#include "storage/item_store.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "storage/decimal.h"
#include "storage/item_store_internal.h"
#include "storage/limits.h"

namespace herdless {

using namespace store_internal;

namespace {

constexpr int64_t kAddBumpInterval = 60;  // memcached's ITEM_UPDATE_INTERVAL

}  // namespace

// ---------------------------------------------------------------------------
// Store.

StoreResult ItemStore::Impl::Store(const StoreRequest& req) {
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

  const int32_t exptime = req.stale_copy ? ExpiredTick(req.stale_for_s) : ToExpiryTick(req.exptime);
  const uint64_t hash = HashKey(req.key, req.key_hash);
  Shard& shard = ShardFor(hash);
  // memcached counts a store's per-class stats in the new item's class.
  StoreStats::Class& counts = shard.counters.classes[MemcachedSlabClass(
      MemcachedItemSize(req.key.size(), req.value.size(), req.client_flags))];
  LockedAttempts(shard, hash, req.key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    if (attempt == 0) {
      counts.set_cmds++;
      CountStoreOverExpiredLocked(shard, f);
      NoteFoundLocked(f, &res);
    }
    const StoreAction action = StoreActionLocked(shard, f, req, attempt == 0, t, counts, &res.status);
    if (action == StoreAction::kReject) return kAnswered;
    uint8_t state = 0;
    LeaseHandover lease;
    ItemFields fields = StoreFieldsLocked(shard, hash, f, req, exptime, action, t, &state, &lease);
    Placed placed;
    ItemView item(nullptr);
    const bool draw_cas = req.new_cas == 0 && action != StoreAction::kStaleCopy;
    const Placement placement = WriteNewLocked(lock, attempt, t, draw_cas, &fields, &placed, &item);
    if (placement == Placement::kRetry) return kRetry;
    if (placement == Placement::kNoRoom) {
      // RoomToRetry let the shard's lock go; its counters need it again.
      lock.lock();
      counts.outofmemory++;
      lock.unlock();
      if (remove_on_failure) RemoveKey(req.key);
      res.status = StoreStatus::kNoMemory;
      return kAnswered;
    }
    CopyBytes(item.value_data(), req.value);
    // The new value's frequency carries the key's reads: it is the same key.
    const uint8_t freq = f.slot != nullptr ? slot::Freq(*f.slot) : 0;
    ReplaceLocked(shard, hash, f, placed, item, state, freq, lease, t);
    res.status = StoreStatus::kStored;
    res.cas = fields.cas;
    res.stored_size = fields.value_len;
    return kAnswered;
  });
  return res;
}

// What a store does with the item the lookup found: store a plain value, a
// stale one, or nothing (kReject, with *status saying why).
ItemStore::Impl::StoreAction ItemStore::Impl::StoreActionLocked(Shard& shard, const Found& f,
                                                                const StoreRequest& req, bool first_attempt,
                                                                const Times& t, StoreStats::Class& counts,
                                                                StoreStatus* status) {
  const uint64_t old_slot = f.slot != nullptr ? *f.slot : 0;
  const bool live = f.presence == Found::kLive;
  // meta's C turns set and replace into a compare-and-swap (memcached).
  const bool cas_mode = req.mode == StoreMode::kCas ||
                        (req.compare_cas != 0 &&
                         (req.mode == StoreMode::kSet || req.mode == StoreMode::kReplace));
  if (req.lease_token != 0) {
    // lease-set: only the holder of the live lease may store.
    if (f.slot != nullptr && Has(old_slot, kItemTokenSent) && ItemAt(old_slot).cas() == req.lease_token) {
      return req.stale_copy ? StoreAction::kStaleCopy : StoreAction::kPlain;
    }
    shard.counters.lease_sets_refused++;
    *status = StoreStatus::kNotStored;
    return StoreAction::kReject;
  }
  if (cas_mode) {
    // Stubs and values in stale grace take part: a lease winner's token is their CAS.
    if (f.slot == nullptr) {
      *status = StoreStatus::kNotFound;
      return StoreAction::kReject;
    }
    if (req.compare_cas != 0 && req.compare_cas == ItemAt(old_slot).cas()) {
      if (first_attempt) counts.cas_hits++;
      return StoreAction::kPlain;
    }
    if (req.stale_on_older_cas && req.compare_cas != 0 && req.compare_cas < ItemAt(old_slot).cas()) {
      return StoreAction::kStale;  // an older CAS stores a stale value (memcached's)
    }
    *status = StoreStatus::kExists;
    counts.cas_badval++;
    return StoreAction::kReject;
  }
  const bool told_missing = Has(old_slot, kItemStale) || Has(old_slot, kItemTokenSent);
  if (req.mode == StoreMode::kAdd && live && !(req.classic_lease_add && told_missing)) {
    // memcached's add bumps the existing item (its time at most once a minute).
    ItemView old_item = ItemAt(old_slot);
    *f.slot = slot::WithFreq(old_slot, std::min<uint8_t>(slot::Freq(old_slot) + 1, S3Fifo::kMaxFrequency));
    if (old_item.last_access() < t.now_s - kAddBumpInterval) MoveAccessTimeLocked(shard, old_item, t.now_s);
    *status = StoreStatus::kNotStored;
    return StoreAction::kReject;
  }
  if (req.mode == StoreMode::kReplace && !live) {
    *status = StoreStatus::kNotStored;
    return StoreAction::kReject;
  }
  return StoreAction::kPlain;   // set, add of a new key, replace of a live one
}

// The new item's fields: the request's, with the key's recompute time and
// read rate. A plain store ends any lease on the key and, when it fulfils
// one, measures the recompute time; a stale one keeps the old TTL, is marked
// stale and keeps any outstanding lease (*lease says which); a stale copy
// keeps the lease and its token as the CAS, with its own (past) expiry.
ItemFields ItemStore::Impl::StoreFieldsLocked(Shard& shard, uint64_t hash, const Found& f,
                                              const StoreRequest& req, int32_t exptime, StoreAction action,
                                              const Times& t, uint8_t* state, LeaseHandover* lease) {
  ItemFields fields;
  fields.key = req.key;
  fields.value_len = static_cast<uint32_t>(req.value.size());
  fields.client_flags = req.client_flags;
  fields.exptime = exptime;
  fields.last_access = ClampStoreTime(t.now_s);
  fields.cas = req.new_cas != 0 ? req.new_cas : 2;
  *state = req.binary_key ? kItemBinaryKey : 0;
  if (f.slot == nullptr) {
    if (f.carried_rate.present()) {
      fields.read_rate = f.carried_rate;
      fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
    }
    return fields;
  }
  const uint64_t old_slot = *f.slot;
  const ItemView old_item = ItemAt(old_slot);
  fields.delta_ms = old_item.delta_ms();
  if (action == StoreAction::kStale || action == StoreAction::kStaleCopy) {
    if (action == StoreAction::kStale) fields.exptime = old_item.exptime();
    else fields.cas = old_item.cas();
    *state |= kItemStale | (slot::State(old_slot) & kItemTokenSent);
    if (*state & kItemTokenSent) lease->granted_ms = LeaseGrantedLocked(shard, old_slot);
  } else {
    *lease = EndLeaseLocked(shard, old_slot, &fields, t);
  }
  // The key's read rate goes on with its new value.
  fields.read_rate = CarriedRateLocked(shard, old_item, t, fields.exptime);
  if (!fields.read_rate.present()) {
    fields.read_rate = RecalledRateLocked(shard, hash, t.now_s);
    fields.read_rate.set_ttl_code(ReadRate::TtlCode(TtlAt(fields.exptime, t.now_tick)));
  }
  return fields;
}

// A new value of the key ends the lease the item at `old_slot` holds, if it
// holds one, and measures the recompute time into fields->delta_ms. Changes
// nothing in the shard: the placement after it may retry.
ItemStore::Impl::LeaseHandover ItemStore::Impl::EndLeaseLocked(const Shard& shard, uint64_t old_slot,
                                                               ItemFields* fields, const Times& t) const {
  LeaseHandover lease;
  if (!Has(old_slot, kItemTokenSent)) return lease;
  const uint32_t granted_ms = LeaseGrantedLocked(shard, old_slot);
  lease.fulfilled = true;
  lease.took_ms = t.now_ms - granted_ms;
  lease.mean_before_ms = fields->delta_ms;
  // A store after the lease timed out (its holder gone, nobody took over)
  // measures how long the key went without one, not the recompute.
  lease.measured = LeaseLive(config_.lease, granted_ms, t.now_ms);
  if (lease.measured) fields->delta_ms = SmoothDelta(fields->delta_ms, lease.took_ms);
  return lease;
}

uint64_t ItemStore::Impl::ReplaceLocked(Shard& shard, uint64_t hash, const Found& f, const Placed& placed,
                                        ItemView item, uint8_t state, uint8_t freq, const LeaseHandover& lease,
                                        const Times& t, bool counts_as_new) {
  if (lease.fulfilled) {
    if (lease.measured) {
      shard.recompute_spread = SmoothSpread(shard.recompute_spread, lease.took_ms, lease.mean_before_ms);
    }
    CountFulfilledLocked(shard, ItemAt(*f.slot).cas(), item, lease.took_ms, t);
  }
  if (f.slot != nullptr) UnlinkLocked(shard, f.slot);
  const uint64_t s = LinkLocked(shard, hash, placed, item, state, freq, /*new_key=*/f.slot == nullptr,
                                counts_as_new);
  if (state & kItemTokenSent) SetLeaseLocked(shard, s, lease.granted_ms);
  return s;
}

// append / prepend: a new item holding old + new bytes, with the old item's
// client flags and TTL. Needs a live item, unless the request creates one on
// a miss.
StoreResult ItemStore::Impl::StoreConcat(const StoreRequest& req) {
  StoreResult res;
  const uint64_t hash = HashKey(req.key, req.key_hash);
  Shard& shard = ShardFor(hash);
  const bool append = req.mode == StoreMode::kAppend;
  LockedAttempts(shard, hash, req.key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    CountStoreOverExpiredLocked(shard, f);
    if (attempt == 0) NoteFoundLocked(f, &res);
    const bool live = f.presence == Found::kLive;
    // memcached refuses to append to a value on flash (ITEM_HDR): NOT_STORED.
    if ((!live && !req.create_on_miss) || (live && ItemAt(*f.slot).is_flash_stub())) {
      res.status = StoreStatus::kNotStored;
      return kAnswered;
    }
    if (live && req.compare_cas != 0 && req.compare_cas != ItemAt(*f.slot).cas()) {
      res.status = StoreStatus::kExists;
      return kAnswered;
    }
    // The new item: built like memcached's, which allocates it afresh with the
    // old item's flags and TTL (and no base64-key mark).
    ItemFields fields;
    fields.key = req.key;
    fields.last_access = ClampStoreTime(t.now_s);
    fields.cas = req.new_cas != 0 ? req.new_cas : 2;
    std::string_view old_value;
    if (live) {
      const ItemView old_item = ItemAt(*f.slot);
      old_value = old_item.value();
      fields.client_flags = old_item.client_flags();
      fields.exptime = old_item.exptime();
    } else {
      fields.client_flags = req.client_flags;
      fields.exptime = ToExpiryTick(req.create_exptime);
    }
    const size_t len = old_value.size() + req.value.size();
    if (!ItemFits(req.key.size(), fields.client_flags, len)) {
      res.status = StoreStatus::kNotStored;  // memcached: the bigger item fails to allocate
      return kAnswered;
    }
    fields.value_len = static_cast<uint32_t>(len);
    // A new value of the key (whatever it held: a value in stale grace, a
    // stub) ends its lease, and measures the recompute time when it does.
    LeaseHandover lease;
    if (f.slot != nullptr) {
      fields.delta_ms = ItemAt(*f.slot).delta_ms();
      lease = EndLeaseLocked(shard, *f.slot, &fields, t);
      fields.read_rate = CarriedRateLocked(shard, ItemAt(*f.slot), t, fields.exptime);
    }
    Placed placed;
    ItemView item(nullptr);
    const Placement placement = WriteNewLocked(lock, attempt, t, req.new_cas == 0, &fields, &placed, &item);
    if (placement == Placement::kRetry) return kRetry;
    if (placement == Placement::kNoRoom) {
      res.status = StoreStatus::kNotStored;
      return kAnswered;
    }
    const std::string_view first = append ? old_value : req.value;
    const std::string_view second = append ? req.value : old_value;
    CopyBytes(item.value_data(), first);
    CopyBytes(item.value_data() + first.size(), second);
    const uint8_t freq = f.slot != nullptr ? slot::Freq(*f.slot) : 0;
    ReplaceLocked(shard, hash, f, placed, item, 0, freq, lease, t);
    res.status = StoreStatus::kStored;
    res.cas = fields.cas;
    res.stored_size = fields.value_len;
    return kAnswered;
  });
  return res;
}

// ---------------------------------------------------------------------------
// Delete, Touch, Arithmetic.

DeleteStatus ItemStore::Impl::Delete(const DeleteRequest& req) {
  const uint64_t hash = HashKey(req.key, req.key_hash);
  Shard& shard = ShardFor(hash);
  const int32_t new_exptime = req.has_ttl ? ToExpiryTick(req.exptime) : 0;
  DeleteStatus answer{};
  auto Answer = [&answer](DeleteStatus a) { answer = a; return kAnswered; };
  LockedAttempts(shard, hash, req.key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    // The first lookup is the one memcached's watcher logs (a retry's finds the same item).
    if (req.removed != nullptr && attempt == 0) *req.removed = FoundOf(f);
    if (f.slot == nullptr) return Answer(DeleteStatus::kNotFound);
    if (f.presence == Found::kPlaceholder) {
      UnlinkLocked(shard, f.slot);  // cancels the lease; the key had no value
      return Answer(DeleteStatus::kNotFound);
    }
    if (f.presence == Found::kExpiredInGrace && !req.mark_stale) {
      UnlinkLocked(shard, f.slot);  // expired, as memcached sees it
      return Answer(DeleteStatus::kNotFound);
    }
    if (f.presence == Found::kExpiredInGrace) {
      // md I of a value kept stale past its expiry: it stays stale and
      // expired (a T would make it a live value to classic reads), but its
      // lease ends with a new CAS, so that a store with the old token fails.
      // Not found, as memcached sees it (so a client's E is not kept); a C
      // that does not match changes nothing.
      const bool cas_matches = !(req.compare_cas != 0 || req.compare_zero_cas) ||
                               req.compare_cas == ItemAt(*f.slot).cas();
      if (cas_matches) InvalidateLocked(shard, f.slot, 0);
      return Answer(DeleteStatus::kNotFound);
    }
    if (req.removed != nullptr && !req.removed->live) {   // a stale value md I keeps
      *req.removed = LiveItem(ItemAt(*f.slot));
    }
    if ((req.compare_cas != 0 || req.compare_zero_cas) && req.compare_cas != ItemAt(*f.slot).cas()) {
      return Answer(DeleteStatus::kExists);
    }
    if (req.empty_value) {
      const Placement placement = EmptyValueLocked(lock, attempt, shard, hash, f, req, t);
      if (placement == Placement::kRetry) return kRetry;
      return Answer(placement == Placement::kNoRoom ? DeleteStatus::kNoMemory : DeleteStatus::kDeleted);
    }
    shard.counters.classes[SlabClassOf(ItemAt(*f.slot))].delete_hits++;
    if (!req.mark_stale) {
      UnlinkLocked(shard, f.slot);
      return Answer(DeleteStatus::kDeleted);
    }
    // Keep the value as stale, so that the next reader wins the lease and
    // the others are served the stale value.
    const uint64_t new_cas = req.new_cas != 0 ? req.new_cas : 0;
    ItemView item = ItemAt(*f.slot);
    if (!item.CanHoldCas(new_cas) || (req.has_ttl && !item.CanHoldExptime(new_exptime))) {
      ItemFields fields = item.Fields();
      fields.cas = new_cas;
      if (req.has_ttl) fields.exptime = new_exptime;
      if (!RelocateLocked(shard, f.slot, fields, t.now_s)) {
        if (!RoomToRetry(lock, attempt, ItemSize(fields))) return Answer(DeleteStatus::kNotFound);
        return kRetry;
      }
      item = ItemAt(*f.slot);
    }
    InvalidateLocked(shard, f.slot, new_cas);
    if (req.has_ttl) item.set_exptime(new_exptime);
    return Answer(DeleteStatus::kDeleted);
  });
  return answer;
}

// Marks the item at `slot` stale and cancels its lease (parked readers wake
// to compete for the next), with a new CAS (`new_cas`, or drawn: 0) that
// supersedes the token. The item must be able to hold that CAS.
void ItemStore::Impl::InvalidateLocked(Shard& shard, uint64_t* slot, uint64_t new_cas) {
  const uint64_t s = *slot;
  if (Has(s, kItemTokenSent)) {
    shard.leases_out--;
    DropLeaseLocked(shard, s);
  }
  *slot = slot::WithState(s, (slot::State(s) | kItemStale) & ~kItemTokenSent);
  ItemView item = ItemAt(*slot);
  WakeLocked(shard, item.key());
  SetCasLocked(shard, item, new_cas != 0 ? new_cas : NextCas());
}

// md x: a new, empty item in the old one's place, as memcached stores one
// over it: the request's client flags and TTL, the old CAS (or the chosen
// one). With I it is stale, with a new CAS, and the lease is cancelled;
// without I it is a new value of the key, which ends the lease.
ItemStore::Impl::Placement ItemStore::Impl::EmptyValueLocked(ShardLock& lock, int attempt, Shard& shard,
                                                             uint64_t hash, const Found& f,
                                                             const DeleteRequest& req, const Times& t) {
  const ItemView old_item = ItemAt(*f.slot);
  ItemFields fields;
  fields.key = req.key;
  fields.last_access = ClampStoreTime(t.now_s);
  fields.client_flags = req.client_flags;
  fields.exptime = req.has_ttl ? ToExpiryTick(req.exptime) : 0;
  fields.delta_ms = old_item.delta_ms();
  LeaseHandover lease;
  uint8_t state = 0;
  if (req.mark_stale) {
    fields.cas = req.new_cas != 0 ? req.new_cas : NextCas();
    state = kItemStale;
  } else {
    fields.cas = req.new_cas != 0 ? req.new_cas : old_item.cas();
    lease = EndLeaseLocked(shard, *f.slot, &fields, t);
  }
  const int old_class = SlabClassOf(old_item);
  fields.read_rate = CarriedRateLocked(shard, old_item, t, fields.exptime);
  Placed placed;
  ItemView item(nullptr);
  const Placement placement = WriteNewLocked(lock, attempt, t, /*draw_cas=*/false, &fields, &placed, &item);
  if (placement != Placement::kWritten) return placement;
  if (!req.mark_stale) shard.counters.classes[old_class].delete_hits++;   // memcached's md x counts a hit
  ReplaceLocked(shard, hash, f, placed, item, state, slot::Freq(*f.slot), lease, t);
  return Placement::kWritten;
}

bool ItemStore::Impl::Touch(std::string_view key, int64_t exptime, FoundItem* found, uint64_t key_hash) {
  const uint64_t hash = HashKey(key, key_hash);
  Shard& shard = ShardFor(hash);
  const int32_t new_exptime = ToExpiryTick(exptime);
  bool answer{};
  auto Answer = [&answer](bool a) { answer = a; return kAnswered; };
  LockedAttempts(shard, hash, key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    if (found != nullptr && attempt == 0) *found = FoundOf(f);
    if (f.presence != Found::kLive) return Answer(false);
    if (attempt == 0) shard.counters.classes[SlabClassOf(ItemAt(*f.slot))].touch_hits++;
    size_t needed = 0;
    if (!RoomForExptimeLocked(shard, f.slot, new_exptime, t.now_s, &needed)) {
      if (!RoomToRetry(lock, attempt, needed)) return Answer(false);
      return kRetry;
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
    return Answer(true);
  });
  return answer;
}

ArithResult ItemStore::Impl::Arithmetic(const ArithRequest& req) {
  ArithResult res;
  const uint64_t hash = HashKey(req.key, req.key_hash);
  Shard& shard = ShardFor(hash);
  const int32_t ttl_exptime = req.has_ttl ? ToExpiryTick(req.exptime) : 0;
  const int32_t create_exptime = req.create_on_miss ? ToExpiryTick(req.create_exptime) : 0;
  LockedAttempts(shard, hash, req.key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    const bool live = f.presence == Found::kLive;
    if (attempt == 0) res.found = FoundOf(f);
    if (!live && !req.create_on_miss) {
      res.status = ArithStatus::kNotFound;
      return kAnswered;
    }
    uint64_t value;
    ItemFields fields;
    uint8_t state = 0;
    uint8_t freq = 0;
    if (live) {
      const ItemView old_item = ItemAt(*f.slot);
      res.status = CountedValueLocked(shard, old_item, req, attempt == 0, &value);
      if (res.status != ArithStatus::kOk) return kAnswered;
      // Looks like memcached's in-place update: same flags, TTL and state bits.
      fields = old_item.Fields();
      state = slot::State(*f.slot) & (kItemFetched | kItemStale | kItemTokenSent | kItemBinaryKey);
      freq = slot::Freq(*f.slot);
    } else {
      value = req.initial;  // created with the initial value, no delta applied
      fields.key = req.key;
      fields.exptime = create_exptime;
      fields.last_access = ClampStoreTime(t.now_s);
    }
    char digits[24];
    const size_t len =
        static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), value).ptr - digits);
    // memcached rewrites a number in place when it still fits, padding with
    // spaces ("10" decr 1 reads "9 "), and marks the item accessed now,
    // unless a reply not yet sent references the item; a longer one, or one
    // so referenced, gets a new item, made afresh as append's: unread, not
    // stale, its lease ended (the number is the key's new value).
    const bool fits_in_place = live && len <= ItemAt(*f.slot).value_len() &&
                               std::find(req.referenced.begin(), req.referenced.end(),
                                         ItemAt(*f.slot).cas()) == req.referenced.end();
    fields.value_len = static_cast<uint32_t>(fits_in_place ? ItemAt(*f.slot).value_len() : len);
    fields.last_access = ClampStoreTime(t.now_s);
    res.ttl_before = TtlAt(fields.exptime, t.now_tick);
    if (req.has_ttl) fields.exptime = ttl_exptime;
    fields.cas = req.new_cas != 0 ? req.new_cas : 2;
    LeaseHandover lease;
    if (live && !fits_in_place) {
      state = 0;
      lease = EndLeaseLocked(shard, *f.slot, &fields, t);
    } else if (state & kItemTokenSent) {
      lease.granted_ms = LeaseGrantedLocked(shard, *f.slot);   // a lease on the number stays with it
    }
    Placed placed;
    ItemView item(nullptr);
    const Placement placement = WriteNewLocked(lock, attempt, t, req.new_cas == 0, &fields, &placed, &item);
    if (placement == Placement::kRetry) return kRetry;
    if (placement == Placement::kNoRoom) {
      res.status = ArithStatus::kNoMemory;
      return kAnswered;
    }
    CopyBytes(item.value_data(), std::string_view(digits, len));
    std::memset(item.value_data() + len, ' ', fields.value_len - len);
    ReplaceLocked(shard, hash, f, placed, item, state, freq, lease, t, /*counts_as_new=*/!fits_in_place);
    res.created = !live;
    res.status = ArithStatus::kOk;
    res.value = value;
    res.cas = fields.cas;
    res.ttl = TtlAt(fields.exptime, t.now_tick);
    return kAnswered;
  });
  return res;
}

// incr/decr of a live item: memcached's order of checks (an empty value,
// then the CAS, then the number itself); the result wraps mod 2^64 up and
// stops at 0 down. Counts the class's hit on the first attempt.
ArithStatus ItemStore::Impl::CountedValueLocked(Shard& shard, ItemView old_item, const ArithRequest& req,
                                                bool first_attempt, uint64_t* value) {
  // A value on flash is non-numeric to memcached too (ITEM_HDR).
  if (old_item.value_len() == 0 || old_item.is_flash_stub()) return ArithStatus::kNonNumeric;
  if (req.compare_cas != 0 && req.compare_cas != old_item.cas()) return ArithStatus::kExists;
  uint64_t current;
  if (!ParseCounter(old_item.value(), &current)) return ArithStatus::kNonNumeric;
  if (req.incr) *value = current + req.delta;
  else *value = req.delta > current ? 0 : current - req.delta;
  if (first_attempt) {
    StoreStats::Class& c = shard.counters.classes[SlabClassOf(old_item)];
    (req.incr ? c.incr_hits : c.decr_hits)++;
  }
  return ArithStatus::kOk;
}

}  // namespace herdless
