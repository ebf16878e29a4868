// ItemStore's flash tier (-o ext_path; StoreConfig::flash). A value leaves
// RAM in two ways: its segment is evicted (DemoteLocked, from EvictFromLocked:
// the value goes whether eviction would drop it or keep it, a read stub being
// kept in its place, so the main queue holds stubs, not big values;
// EvictAhead runs eviction early on the flash writer's thread so workers
// rarely do), or it is idle (MoveIdleToFlash, ext_item_age). Either way its
// item is replaced by a stub: the same key and metadata (CAS, TTL, flags,
// state bits, lease, read rate stay in RAM), and a FlashLocator for a value.
// A read of a stub parks and asks the fetcher (FetchFromFlashLocked); the
// fetch ends in FinishFlashRead, which swaps the stub back for the value and
// wakes the readers, whose re-run then reads RAM. Whatever removes a stub
// releases its record (UnlinkLocked).
#include "storage/item_store.h"

#include <vector>

#include "storage/item_store_internal.h"
#include "storage/le_bytes.h"

namespace herdless {

using namespace store_internal;

namespace {

void EncodeStubValue(char* out, const FlashLocator& where, uint32_t value_len) {
  le_bytes::Put32(out, where.page);
  le_bytes::Put32(out + 4, where.generation);
  le_bytes::Put32(out + 8, where.offset);
  le_bytes::Put32(out + 12, value_len);
}

FlashLocator StubLocator(ItemView stub) {
  const char* p = stub.value_data();
  return FlashLocator{le_bytes::Get32(p), le_bytes::Get32(p + 4), le_bytes::Get32(p + 8)};
}
uint32_t StubValueLength(ItemView stub) { return stub.client_value_len(); }

bool SameLocator(const FlashLocator& a, const FlashLocator& b) {
  return a.page == b.page && a.generation == b.generation && a.offset == b.offset;
}

// Values that may move: live, big enough, and no lease state to keep exact.
bool Movable(uint64_t s, ItemView item, uint32_t min_size) {
  return !item.is_flash_stub() && item.value_len() >= min_size &&
         !Has(s, kItemTokenSent | kItemNeedsValue | kItemPlaceholder | kItemStale);
}

}  // namespace

void ItemStore::Impl::MoveClassLocked(Shard& shard, ItemView from, ItemView to) {
  StoreStats::Class& a = shard.counters.classes[SlabClassOf(from)];
  StoreStats::Class& b = shard.counters.classes[SlabClassOf(to)];
  const uint64_t from_requested = MemcachedItemSize(from.key_len(), from.value_len(), from.client_flags());
  a.items--;
  a.bytes -= from.size();
  a.mem_requested -= from_requested;
  b.items++;
  b.bytes += from.size();   // RepointLocked adds the difference to the new class
  b.mem_requested += MemcachedItemSize(to.key_len(), to.value_len(), to.client_flags());
}

bool ItemStore::Impl::SwapToStubLocked(Shard& shard, uint64_t* slot, const FlashLocator& where, int64_t now_s,
                                       bool at_main_tail, uint8_t freq) {
  const ItemView item = ItemAt(*slot);
  ItemFields fields = item.Fields();
  fields.flash_stub = true;
  fields.value_len = kFlashStubValueBytes;
  fields.full_header = false;
  const uint32_t size = static_cast<uint32_t>(ItemSize(fields));
  Placed placed;
  if (at_main_tail) {
    // Eviction's copies go to M's tail, beyond the limit if need be (as kept items).
    S3Fifo::Place p;
    if (!queues_->Append(SegmentQueue::kMain, size, now_s, /*beyond_limit=*/true, &p)) return false;
    placed = Placed{p.segment, p.offset, size};
  } else if (!PlaceLocked(size, now_s, &placed)) {
    return false;
  }
  const ItemView stub = WriteItem(placed.segment->At(placed.offset), fields);
  EncodeStubValue(stub.value_data(), where, item.value_len());
  MoveClassLocked(shard, item, stub);
  RepointLocked(shard, slot, placed, stub, freq);
  return true;
}

bool ItemStore::Impl::DemoteLocked(Shard& shard, uint64_t* slot, int64_t now_s, uint8_t freq) {
  const ItemView item = ItemAt(*slot);
  if (!Movable(*slot, item, config_.flash_item_size)) return false;
  FlashLocator where;
  if (!config_.flash->Write(item.key(), item.cas(), item.value(), &where)) return false;
  if (SwapToStubLocked(shard, slot, where, now_s, /*at_main_tail=*/true, freq)) return true;
  config_.flash->Release(where, item.key_len(), item.value_len());
  return false;
}

void ItemStore::Impl::ReleaseFlashLocked(ItemView stub) {
  config_.flash->Release(StubLocator(stub), stub.key_len(), StubValueLength(stub));
}

// The ticket waits for the fetch; without one (a timed-out wait, a read kind
// that never waits) the value cannot be served now: a miss.
void ItemStore::Impl::FetchFromFlashLocked(Shard& shard, uint64_t* slot, std::string_view key,
                                           const WaitTicket* ticket, ReadResult* r) {
  if (ticket == nullptr || config_.flash_fetcher == nullptr || config_.wake_sink == nullptr) {
    shard.counters.get_aborted_extstore++;
    return;
  }
  const ItemView stub = ItemAt(*slot);
  FlashFetch fetch;
  fetch.key.assign(key);
  fetch.where = StubLocator(stub);
  fetch.value_len = StubValueLength(stub);
  // Readers already waiting on the key mean its fetch is under way: one is enough.
  const bool under_way = shard.parked.Waiting(key);
  shard.parked.Park(key, *ticket);
  if (!under_way) {
    shard.counters.get_extstore++;
    config_.flash_fetcher->Fetch(std::move(fetch));
  }
  r->parked = true;
  r->cas = stub.cas();
}

bool ItemStore::Impl::ParkIfOnFlash(std::string_view key, const WaitTicket& ticket) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  const Times t = Now();
  ShardLock lock(this, shard);
  const Found f = LookupLocked(shard, key, hash, t);
  if (f.slot == nullptr || !ItemAt(*f.slot).is_flash_stub()) return false;
  ReadResult r;
  FetchFromFlashLocked(shard, f.slot, key, &ticket, &r);
  return r.parked;
}

void ItemStore::Impl::FinishFlashRead(std::string_view key, const FlashLocator& where, FlashReadResult result,
                                      std::string_view value) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  LockedAttempts(shard, hash, key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    // Woken whatever happens: the re-run finds the value, or a miss.
    WakeLocked(shard, key);
    if (f.slot == nullptr || !ItemAt(*f.slot).is_flash_stub() ||
        !SameLocator(StubLocator(ItemAt(*f.slot)), where)) {
      return kAnswered;   // stored, deleted or moved again meanwhile
    }
    const ItemView stub = ItemAt(*f.slot);
    if (result != FlashReadResult::kOk || value.size() != StubValueLength(stub)) {
      (result == FlashReadResult::kBadChecksum ? shard.counters.badcrc_from_extstore
                                               : shard.counters.miss_from_extstore)++;
      UnlinkLocked(shard, f.slot);
      return kAnswered;
    }
    ItemFields fields = stub.Fields();
    fields.flash_stub = false;
    fields.value_len = static_cast<uint32_t>(value.size());
    Placed placed;
    ItemView item(nullptr);
    const Placement placement = WriteNewLocked(lock, attempt, t, /*draw_cas=*/false, &fields, &placed, &item);
    if (placement == Placement::kRetry) return kRetry;
    if (placement == Placement::kNoRoom) {
      shard.counters.get_oom_extstore++;
      UnlinkLocked(shard, f.slot);
      return kAnswered;
    }
    CopyBytes(item.value_data(), value);
    ReleaseFlashLocked(stub);
    MoveClassLocked(shard, stub, item);
    RepointLocked(shard, f.slot, placed, item, slot::Freq(*f.slot));
    shard.counters.recache_from_extstore++;
    return kAnswered;
  });
}

bool ItemStore::Impl::EvictAhead(size_t headroom) {
  if (!config_.evictions || config_.flash == nullptr) return false;
  if (pool_->used() + headroom < pool_->limit()) return false;
  return EvictSegment(/*compact=*/false);
}

// Candidates are pinned under the shard lock, written to flash with no lock
// held, and swapped for stubs only if the key still has that very item with
// that CAS; otherwise the record is released at once.
size_t ItemStore::Impl::MoveIdleToFlash(WalkCursor* cursor, size_t max_buckets, uint32_t min_idle_s) {
  if (config_.flash == nullptr || cursor->done) return 0;
  struct Candidate {
    uint64_t hash;
    uint64_t slot;
    uint64_t cas;
    ItemRef pin;
  };
  std::vector<Candidate> candidates;
  Shard& shard = shards_[cursor->shard];
  {
    ShardLock lock(this, shard);
    const Times t = Now();
    cursor->position = shard.index.Walk(cursor->position, max_buckets, [&](uint64_t* slot) {
      const ItemView item = ItemAt(*slot);
      if (!Movable(*slot, item, config_.flash_item_size) || IsExpiredAt(item, t.now_tick) ||
          IsFlushed(item, t.now_s) || t.now_s - item.last_access() < int64_t{min_idle_s}) {
        return;
      }
      Segment* seg = SegmentOf(*slot);
      seg->Pin();
      candidates.push_back(Candidate{HashKey(item.key()), *slot, item.cas(), ItemRef(seg)});
    });
  }
  if (cursor->position == 0 && ++cursor->shard == shard_count_) cursor->done = true;
  size_t moved = 0;
  for (const Candidate& c : candidates) {
    const ItemView item = ItemAt(c.slot);   // pinned: its key and value stay
    FlashLocator where;
    if (!config_.flash->Write(item.key(), c.cas, item.value(), &where)) continue;
    const Times t = Now();
    ShardLock lock(this, shard);
    uint64_t* slot = shard.index.FindLocation(c.hash, slot::Segment(c.slot), slot::Offset(c.slot));
    if (slot != nullptr && ItemAt(*slot).cas() == c.cas &&
        Movable(*slot, ItemAt(*slot), config_.flash_item_size) &&
        SwapToStubLocked(shard, slot, where, t.now_s, /*at_main_tail=*/false, slot::Freq(*slot))) {
      moved++;
    } else {
      config_.flash->Release(where, item.key_len(), item.value_len());
    }
  }
  return moved;
}

}  // namespace herdless
