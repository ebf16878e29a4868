// ItemStore's read rates (storage/read_rate.h): which keys get an estimate,
// how it decays and follows the key from one item to the next; and the
// shards' recompute spreads (storage/lease.h), which a snapshot keeps.
#include "storage/item_store.h"

#include <algorithm>
#include <mutex>

#include "storage/item_store_internal.h"

namespace herdless {

using namespace store_internal;

// ---------------------------------------------------------------------------
// Read rates. Every linked item with an estimate is counted in rated_items,
// and in hot_items when its hot mark is set; the counts follow the item bytes
// (LinkLocked, UnlinkLocked, RepointLocked, SetRateLocked).

void ItemStore::Impl::SetRateLocked(Shard& shard, ItemView item, ReadRateState rate) {
  if (!rate.present()) rate.set_hot(false);
  CountRateLocked(shard, item.read_rate(), -1);
  item.set_read_rate(rate);
  CountRateLocked(shard, rate, +1);
}

ReadRateState ItemStore::Impl::CarriedRateLocked(Shard& shard, ItemView old, const Times& t, int32_t exptime) {
  ReadRateState rate = old.read_rate();
  if (!rate.present()) return ReadRateState{};
  const int64_t since_s = std::max<int64_t>(0, t.now_s - old.last_access());
  rate.count = ReadRate::Decayed(rate.count, since_s, NextRandom(&shard.random));
  if (ReadRate::CountOf(rate.count) < ReadRate::kDropBelowReads) return ReadRateState{};
  rate.set_ttl_code(ReadRate::TtlCode(TtlAt(exptime, t.now_tick)));
  return rate;
}

void ItemStore::Impl::RememberRateLocked(Shard& shard, uint64_t hash, ReadRateState rate, int64_t now_s) {
  if (rate.present()) shard.remembered_rates[hash % Shard::kRememberedRates] = {hash, rate.count, rate.aux, now_s};
}

ReadRateState ItemStore::Impl::RecalledRateLocked(Shard& shard, uint64_t hash, int64_t now_s) {
  const Shard::RememberedRate& e = shard.remembered_rates[hash % Shard::kRememberedRates];
  ReadRateState rate;
  if (e.hash != hash || e.count == 0) return rate;
  rate.count = ReadRate::Decayed(e.count, std::max<int64_t>(0, now_s - e.at_s), NextRandom(&shard.random));
  return rate;
}

void ItemStore::Impl::MoveAccessTimeLocked(Shard& shard, ItemView item, int64_t now_s) {
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
// When the item has no room for it, the estimate is kept in the shard's
// remembered rates, and counts the key's reads there (TrackIfHotLocked), until
// the key's next item (its next store) takes it: copying the item here would
// make a hit allocate.
void ItemStore::Impl::StartTrackingLocked(Shard& shard, ItemView item, uint64_t hash, const Times& t) {
  ReadRateState rate;
  rate.count = ReadRate::Encode(ReadRate::kTrackedAfterReads);
  rate.set_ttl_code(ReadRate::TtlCode(TtlAt(item.exptime(), t.now_tick)));
  if (item.CanHoldReadRate()) {
    SetRateLocked(shard, item, rate);
    return;
  }
  rate.count = ReadRate::Encode(ReadRate::kTrackedAfterReads + 1);   // this read too
  RememberRateLocked(shard, hash, rate, t.now_s);
}

ReadRateState ItemStore::Impl::RememberedAsOfLocked(Shard& shard, uint64_t hash, ItemView item) {
  const Shard::RememberedRate& e = shard.remembered_rates[hash % Shard::kRememberedRates];
  ReadRateState rate;
  if (e.hash != hash || e.count == 0 || item.CanHoldReadRate()) return rate;
  // Counted up to the key's last read, which is the item's last access.
  rate.count = ReadRate::Decayed(e.count, std::max<int64_t>(0, item.last_access() - e.at_s),
                                 NextRandom(&shard.random));
  rate.aux = e.aux;
  rate.set_hot(false);
  return rate;
}

// ---------------------------------------------------------------------------
// Recompute spreads.

std::vector<double> ItemStore::Impl::RecomputeSpreads() const {
  std::vector<double> spreads(shard_count_);
  for (size_t i = 0; i < shard_count_; i++) {
    std::lock_guard<ShardMutex> lock(shards_[i].mu);
    spreads[i] = shards_[i].recompute_spread;
  }
  return spreads;
}

// A key's shard is its hash's top bits (ShardFor): with power-of-two counts,
// shard j of n holds the keys of saved shards [j m / n, (j + 1) m / n) of m
// (one saved shard, when n > m).
void ItemStore::Impl::RestoreRecomputeSpreads(const std::vector<double>& saved) {
  const size_t m = saved.size();
  if (m == 0) return;
  for (size_t j = 0; j < shard_count_; j++) {
    const size_t first = j * m / shard_count_;
    const size_t end = std::max(first + 1, (j + 1) * m / shard_count_);
    double sum = 0;
    for (size_t i = first; i < end; i++) sum += saved[i];
    std::lock_guard<ShardMutex> lock(shards_[j].mu);
    shards_[j].recompute_spread = std::clamp(sum / static_cast<double>(end - first), 0.0, kMaxSpread);
  }
}

}  // namespace herdless
