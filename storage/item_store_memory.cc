// ItemStore's memory: where a new item goes (PlaceLocked), making room when
// there is none (MakeRoom, the evictor), and copying an item whose header
// must grow (RelocateLocked). The policy itself is S3Fifo's
// (storage/eviction.h); this file applies it under the shards' locks.
#include "storage/item_store.h"

#include <cstring>
#include <thread>

#include "storage/item_store_internal.h"

namespace herdless {

using namespace store_internal;

// ---------------------------------------------------------------------------
// Memory and eviction.

bool ItemStore::Impl::PlaceLocked(size_t bytes, int64_t now_s, Placed* out) {
  out->bytes = static_cast<uint32_t>(bytes);
  if (bytes > pool_->max_fixed_item()) {
    Segment* s = pool_->NewJumbo(bytes, now_s);
    if (s == nullptr) return false;
    out->segment = s;
    out->offset = 0;
    return true;
  }
  S3Fifo::Place p;
  if (!queues_->Append(SegmentQueue::kSmall, static_cast<uint32_t>(bytes), now_s,
                       /*beyond_limit=*/false, &p)) {
    // Without eviction the room compaction made is at the main queue's tail.
    if (config_.evictions || !queues_->Append(SegmentQueue::kMain, static_cast<uint32_t>(bytes),
                                              now_s, /*beyond_limit=*/false, &p)) {
      return false;
    }
  }
  out->segment = p.segment;
  out->offset = p.offset;
  return true;
}

// Frees memory for a new item of `bytes` (no lock held): evicts segments
// until the budget's use falls. A segment whose items are all kept (moved to
// the main queue) frees nothing, and so does one a reader still pins; the
// main queue's counts fall with every pass, so a few passes always free
// something. Without eviction (-M) the segment holding the most bytes of
// items that are gone is compacted instead: its live items are copied to the
// main queue's tail. False when the item can never fit or nothing is left to
// evict (or to compact).
bool ItemStore::Impl::MakeRoom(size_t bytes) {
  if (bytes > pool_->max_fixed_item() && SegmentPool::JumboCharge(bytes) > memory_limit()) {
    return false;   // evicting everything would not help
  }
  if (!config_.evictions) return EvictSegment(/*compact=*/true);
  constexpr int kMaxEvictions = 4096;
  const size_t used_before = pool_->used();
  for (int i = 0; i < kMaxEvictions; i++) {
    if (!EvictSegment(/*compact=*/false)) return false;
    if (pool_->used() < used_before) return true;
  }
  return true;   // the caller tries again
}

bool ItemStore::Impl::RoomToRetry(ShardLock& lock, int attempt, size_t bytes) {
  lock.unlock();
  return attempt < kMaxRoomAttempts && MakeRoom(bytes);
}

// The evictor: takes the victim S3Fifo chooses and decides on each item in it
// under the item's shard lock. The segment is then retired (reused once no
// reader pins it), except a jumbo whose item is kept: it moves to M whole.
// `compact`: the victim is the segment with the most dead bytes, and every
// live item of it is kept.
bool ItemStore::Impl::EvictSegment(bool compact) {
  Segment* victim = compact ? queues_->PopMostDead() : queues_->PopVictim();
  if (victim == nullptr) return false;
  evicted_segments_.fetch_add(1, std::memory_order_relaxed);
  // Appenders that took room before it was sealed may still be writing.
  while (victim->written.load(std::memory_order_acquire) != victim->reserved && !victim->jumbo) {
    std::this_thread::yield();
  }
  const Times t = Now();
  const uint32_t end = victim->jumbo ? 1 : victim->reserved;
  bool requeue = false;
  for (uint32_t offset = 0; offset < end;) {
    const ItemView item(victim->At(offset));
    const uint64_t hash = HashKey(item.key());
    Shard& shard = ShardFor(hash);
    ShardLock lock(this, shard);
    uint64_t* slot = shard.index.FindLocation(hash, victim->id, offset);
    if (slot != nullptr) {
      EvictFromLocked(shard, slot, victim, t, compact);
      // A kept jumbo keeps its slot (same segment, same offset).
      if (victim->jumbo) requeue = shard.index.FindLocation(hash, victim->id, 0) != nullptr;
    }
    offset += victim->jumbo ? 1 : static_cast<uint32_t>(item.size());
  }
  if (requeue) queues_->RequeueToMain(victim);
  else pool_->Retire(victim);
  return true;
}

// One item of a victim segment: flushed, expired and stale items go first
// (reclaimed, or evicted when stale); otherwise S3Fifo::Keep decides whether
// it is copied to the main queue's tail or evicted (from the small queue, a
// ghost of it stays in the index). When compacting, every item that is not
// flushed or expired is kept.
void ItemStore::Impl::EvictFromLocked(Shard& shard, uint64_t* slot, Segment* victim, const Times& t,
                                      bool compact) {
  const int64_t now_s = t.now_s;
  const uint64_t s = *slot;
  const ItemView item = ItemAt(s);
  const bool expired = IsExpiredAt(item, t.now_tick);
  const bool gone = IsFlushed(item, now_s) || ExpiredForAllLocked(shard, s, item, t);
  // A foreign key (-o ring) goes at its first eviction pass, without a ghost:
  // it is here only while its owner is away, for at most foreign_ttl.
  const bool stale = Has(s, kItemStale) || expired || (!compact && IsForeign(item));
  uint8_t new_freq = slot::Freq(s);
  const bool keep = compact ? !gone : !gone && !stale && S3Fifo::Keep(victim->queue, slot::Freq(s), &new_freq);
  // -o ext_path: a big value leaving its segment, kept or not, moves to flash; its stub,
  // a few bytes, is what the main queue keeps (read stubs stay, as kept items do).
  if (config_.flash != nullptr && !compact && !gone && !stale &&
      DemoteLocked(shard, slot, now_s, keep ? new_freq : uint8_t{0})) {
    if (keep) CountKeptLocked(shard, victim->queue);
    return;
  }
  if (keep) {
    if (victim->jumbo) {
      *slot = slot::WithFreq(s, new_freq);
      if (!compact) CountKeptLocked(shard, victim->queue);
      return;
    }
    const uint32_t size = static_cast<uint32_t>(item.size());
    S3Fifo::Place p;
    if (queues_->Append(SegmentQueue::kMain, size, now_s, /*beyond_limit=*/true, &p)) {
      std::memcpy(p.segment->At(p.offset), item.data(), size);
      RepointLocked(shard, slot, Placed{p.segment, p.offset, size}, ItemView(p.segment->At(p.offset)),
                    new_freq);
      if (!compact) CountKeptLocked(shard, victim->queue);
      return;
    }
    // No segment even beyond the limit: evict it after all.
  }
  CountRemovalLocked(shard, s, item, t, /*evicted=*/true);
  const bool ghost = !gone && !stale && victim->queue == SegmentQueue::kSmall;
  UnlinkLocked(shard, slot, ghost);
}

void ItemStore::Impl::CountKeptLocked(Shard& shard, SegmentQueue from) {
  if (from == SegmentQueue::kSmall) shard.counters.moved_to_main++;
  else shard.counters.main_reinserted++;
}

// Points the slot at a copy of its item (written at `placed`, of the same
// key and value), keeping its state; the slot stays where it is in the index.
void ItemStore::Impl::RepointLocked(Shard& shard, uint64_t* slot, const Placed& placed, ItemView copy,
                                    uint8_t freq) {
  const uint64_t s = *slot;
  const ItemView old_item = ItemAt(s);
  Segment* old_seg = SegmentOf(s);
  const size_t old_size = old_item.size();
  const size_t new_size = copy.size();
  shard.bytes += new_size - old_size;
  const int slab_class = SlabClassOf(copy);
  shard.counters.classes[slab_class].bytes += new_size - old_size;
  CountRateLocked(shard, old_item.read_rate(), -1);
  CountRateLocked(shard, copy.read_rate(), +1);
  if (shard.track_sizes) {
    CountSizeLocked(shard, old_item, -1);
    CountSizeLocked(shard, copy, +1);
  }
  NoteClassIn(placed.segment, slab_class);
  const uint64_t moved = slot::WithFreq(slot::WithLocation(s, placed.segment->id, placed.offset), freq);
  if (Has(s, kItemTokenSent)) shard.leases.Move(slot::LocationKey(s), slot::LocationKey(moved));
  *slot = moved;
  Segment* seg = placed.segment;
  seg->live_items.fetch_add(1, std::memory_order_relaxed);
  seg->live_bytes.fetch_add(new_size, std::memory_order_relaxed);
  if (seg->jumbo) queues_->AddJumbo(seg);
  else seg->written.fetch_add(placed.bytes, std::memory_order_release);
  old_seg->live_bytes.fetch_sub(old_size, std::memory_order_relaxed);
  if (old_seg->live_items.fetch_sub(1, std::memory_order_acq_rel) == 1) queues_->OnEmptied(old_seg);
}

bool ItemStore::Impl::RelocateLocked(Shard& shard, uint64_t* slot, ItemFields fields, int64_t now_s) {
  const ItemView old_item = ItemAt(*slot);
  fields.full_header = false;
  fields.full_header = ItemSize(fields) > pool_->max_fixed_item();
  Placed placed;
  if (!PlaceLocked(ItemSize(fields), now_s, &placed)) return false;
  const ItemView copy = WriteItem(placed.segment->At(placed.offset), fields);
  CopyBytes(copy.value_data(), old_item.value());
  RepointLocked(shard, slot, placed, copy, slot::Freq(*slot));
  return true;
}

bool ItemStore::Impl::RoomForExptimeLocked(Shard& shard, uint64_t* slot, int32_t exptime, int64_t now_s,
                                           size_t* needed) {
  if (ItemAt(*slot).CanHoldExptime(exptime)) return true;
  ItemFields fields = ItemAt(*slot).Fields();
  const int32_t kept = fields.exptime;
  fields.exptime = exptime;   // a layout with the field
  if (RelocateLocked(shard, slot, fields, now_s)) {
    // Room only: the caller applies the new TTL where it stands among the
    // request's flags (a t or R before it sees the old one), or not at all.
    ItemAt(*slot).set_exptime(kept);
    return true;
  }
  *needed = ItemSize(fields);
  return false;
}

}  // namespace herdless
