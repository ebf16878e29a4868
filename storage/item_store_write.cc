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
StoreResult ItemStore::Impl::StoreConcat(const StoreRequest& req) {
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

DeleteStatus ItemStore::Impl::Delete(const DeleteRequest& req) {
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

bool ItemStore::Impl::Touch(std::string_view key, int64_t exptime) {
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

ArithResult ItemStore::Impl::Arithmetic(const ArithRequest& req) {
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
