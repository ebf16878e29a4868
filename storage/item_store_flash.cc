// ItemStore's flash tier (-o ext_path; StoreConfig::flash). A value leaves
// RAM in two ways: its segment is evicted (DemoteLocked, from EvictFromLocked:
// the value goes whether eviction would drop it or keep it, a read stub being
// kept in its place, so the main queue holds stubs, not big values;
// EvictAhead runs eviction early on the flash writer's thread so workers
// rarely do), or it is idle (MoveIdleToFlash, ext_item_age). Either way its
// item is replaced by a stub: the same key and metadata (CAS, TTL, flags,
// state bits, lease, read rate stay in RAM), and a FlashLocator for a value.
// A read of a stub parks and asks the fetcher (FetchFromFlashLocked); the
// fetches end in FinishFlashReads, which keeps each value in a buffer of its
// own for the readers it wakes (Shard::fetched; with memcached's recache rule
// the stub becomes a RAM item again instead); their re-run is a hit on the
// stub's metadata served from that buffer (ReadStubLocked,
// ServeFetchedLocked). Whatever removes a stub releases its record
// (UnlinkLocked). Compaction (CompactFlashPage) writes a fragmented page's
// live records again and repoints their stubs, so the page frees up.
#include "storage/item_store.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "storage/flash_page.h"
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

FlashLocator LocatorAt(const char* p) {
  return FlashLocator{le_bytes::Get32(p), le_bytes::Get32(p + 4), le_bytes::Get32(p + 8)};
}
FlashLocator StubLocator(ItemView stub) { return LocatorAt(stub.value_data()); }
uint32_t StubValueLength(ItemView stub) { return stub.client_value_len(); }

bool SameLocator(const FlashLocator& a, const FlashLocator& b) {
  return a.page == b.page && a.generation == b.generation && a.offset == b.offset;
}

// Values that may move: live values big enough. A stale value, or one whose
// lease is out, moves as any other: its stub keeps the state bits, the CAS
// (the lease token) and the lease's grant time, as memcached's header item
// keeps ITEM_STALE and ITEM_TOKEN_SENT (1.6.45's ITEM_PRESERVE_FLAGS).
bool Movable(uint64_t s, ItemView item, uint32_t min_size) {
  return !item.is_flash_stub() && item.value_len() >= min_size && !Has(s, kItemNeedsValue | kItemPlaceholder);
}

// memcached's ext_low_ttl rule: an item that expires within low_ttl seconds
// goes to the low-TTL pages (never for 0, nor for an item without a TTL).
bool ShortLived(ItemView item, int64_t now_tick, uint32_t low_ttl) {
  return low_ttl != 0 && item.exptime() != 0 && TtlAt(item.exptime(), now_tick) < int64_t{low_ttl};
}

// The bucket whose pages a value moving out of RAM goes to, as memcached's
// storage_write picks it: low-TTL, else chunked for an item larger than
// slab_chunk_max (memcached chunks it), else the default.
FlashBucket WriteBucket(ItemView item, bool short_lived, uint32_t chunk_max) {
  if (short_lived) return FlashBucket::kLowTtl;
  return MemcachedSizeOf(item) > chunk_max ? FlashBucket::kChunked : FlashBucket::kDefault;
}

// memcached's log of a page's compaction (watch sysevents): compact_start,
// then a compact_read_start and compact_read_end for each write buffer's worth
// of the page (memcached reads it back so; here, the records that start in
// that part and what became of them), then compact_end. Counts the pass
// either way; with no sink it logs nothing.
class CompactionLog {
 public:
  struct Part {
    uint64_t rescues = 0, lost = 0, skipped = 0;
  };

  CompactionLog(StoreEventSink* sink, const FlashStore::Compaction& c, size_t page_bytes, bool long_form)
      : sink_(sink), page_(c.page), part_bytes_(c.read_size != 0 ? c.read_size : page_bytes),
        parts_((page_bytes + part_bytes_ - 1) / part_bytes_), long_form_(long_form) {
    StoreEvent e = Event(StoreEventKind::kCompactStart);
    e.page_version = c.generation;
    Log(e);
  }

  // The record at [offset, end): the part it starts in, begun (and those
  // before it ended) if need be.
  Part& Reached(uint64_t offset, uint64_t end) {
    while (next_part_ <= offset / part_bytes_) BeginPart();
    end_in_part_ = std::min<uint64_t>(end - (next_part_ - 1) * part_bytes_, part_bytes_);
    return part_;
  }

  // Ends the open part and logs the parts never reached (memcached reads the
  // whole page), then compact_end. Returns the pass's counts.
  Part Finish() {
    while (next_part_ < parts_) BeginPart();
    EndPart();
    Log(Event(StoreEventKind::kCompactEnd));
    return total_;
  }

 private:
  StoreEvent Event(StoreEventKind kind) const {
    StoreEvent e;
    e.kind = kind;
    e.page = page_;
    return e;
  }
  void Log(const StoreEvent& e) {
    if (sink_ != nullptr) sink_->OnEvent(e);
  }
  void BeginPart() {
    EndPart();
    StoreEvent e = Event(StoreEventKind::kCompactReadStart);
    e.offset = next_part_ * part_bytes_;
    Log(e);
    next_part_++;
    open_ = true;
  }
  void EndPart() {
    if (!open_) return;
    StoreEvent e = Event(StoreEventKind::kCompactReadEnd);
    e.offset = end_in_part_;
    e.rescues = part_.rescues;
    e.lost = part_.lost;
    e.skipped = part_.skipped;
    e.long_form = long_form_;
    Log(e);
    total_.rescues += part_.rescues;
    total_.lost += part_.lost;
    total_.skipped += part_.skipped;
    part_ = Part{};
    end_in_part_ = 0;
    open_ = false;
  }

  StoreEventSink* const sink_;
  const uint32_t page_;
  const uint64_t part_bytes_;
  const uint64_t parts_;
  const bool long_form_;
  uint64_t next_part_ = 0;
  bool open_ = false;
  uint64_t end_in_part_ = 0;
  Part part_;
  Part total_;
};

}  // namespace

const FlashTunables& ItemStore::Impl::flash_tunables() const {
  static const FlashTunables kDefaults;
  return config_.flash_tunables != nullptr ? *config_.flash_tunables : kDefaults;
}

void ItemStore::Impl::MoveClassLocked(Shard& shard, ItemView from, ItemView to) {
  StoreStats::Class& a = shard.counters.classes[SlabClassOf(from)];
  StoreStats::Class& b = shard.counters.classes[SlabClassOf(to)];
  const uint64_t from_requested = MemcachedSizeOf(from);
  a.items--;
  a.bytes -= from.size();
  a.mem_requested -= from_requested;
  b.items++;
  b.bytes += from.size();   // RepointLocked adds the difference to the new class
  b.mem_requested += MemcachedSizeOf(to);
}

bool ItemStore::Impl::SwapToStubLocked(Shard& shard, uint64_t* slot, const FlashLocator& where, int64_t now_s,
                                       bool at_main_tail, uint8_t freq, FlashBucket bucket) {
  const ItemView item = ItemAt(*slot);
  // memcached's extwrite line, about the item as it was in RAM.
  StoreEvent written;
  if (Watching(StoreEventKind::kFlashWrite)) {
    written = EventAbout(StoreEventKind::kFlashWrite, item, Now().now_tick);
    written.fetched = Has(*slot, kItemFetched);
    written.idle_s = now_s - item.last_access();
    written.bucket = static_cast<uint32_t>(bucket);
  }
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
  // As memcached 1.6.18's new header item: "read" counts from the move on, so
  // a recache (or compaction's drop_unread) looks at reads of the value on
  // flash. 1.6.45's header item keeps the mark (ITEM_PRESERVE_FLAGS).
  if (!config_.flash_as_1645) *slot = slot::WithState(*slot, slot::State(*slot) & ~kItemFetched);
  if (written.kind == StoreEventKind::kFlashWrite) {
    written.key = stub.key();
    config_.events->OnEvent(written);
  }
  return true;
}

bool ItemStore::Impl::DemoteLocked(Shard& shard, uint64_t* slot, int64_t now_s, uint8_t freq) {
  const ItemView item = ItemAt(*slot);
  if (!Movable(*slot, item, flash_tunables().item_size.load(std::memory_order_relaxed))) return false;
  FlashLocator where;
  const FlashBucket bucket =
      WriteBucket(item, ShortLived(item, Now().now_tick, flash_tunables().low_ttl.load(std::memory_order_relaxed)),
                  config_.flash_chunk_max);
  if (!config_.flash->Write(item.key(), item.cas(), item.value(), &where, bucket)) return false;
  if (SwapToStubLocked(shard, slot, where, now_s, /*at_main_tail=*/true, freq, bucket)) return true;
  config_.flash->Release(where, item.key_len(), item.value_len());
  return false;
}

void ItemStore::Impl::ReleaseFlashLocked(ItemView stub) {
  config_.flash->Release(StubLocator(stub), stub.key_len(), StubValueLength(stub));
}

// A stub from the stop's snapshot (-e restart): its record belongs to the
// kept flash tier again (FlashStore::Adopt), or, `adopt` false, no more.
bool ItemStore::Impl::AdoptFlashStub(std::string_view key, std::string_view stub_value, bool adopt) {
  if (config_.flash == nullptr || stub_value.size() != kFlashStubValueBytes) return false;
  const FlashLocator where = LocatorAt(stub_value.data());
  const uint32_t value_len = le_bytes::Get32(stub_value.data() + 12);
  if (adopt) return config_.flash->Adopt(where, key.size(), value_len);
  config_.flash->Release(where, key.size(), value_len);
  return false;
}

// The ticket waits for the fetch; without one (a timed-out wait, a read kind
// that never waits) the value cannot be served now: a miss.
void ItemStore::Impl::FetchFromFlashLocked(Shard& shard, uint64_t* slot, std::string_view key,
                                           const WaitTicket* ticket, std::vector<FlashFetch>* batch,
                                           ReadResult* r) {
  if (ticket == nullptr || config_.flash_fetcher == nullptr || config_.wake_sink == nullptr) {
    shard.counters.get_aborted_extstore++;
    return;
  }
  const ItemView stub = ItemAt(*slot);
  // Readers already waiting on the key mean its fetch is under way: one is enough.
  const bool under_way = shard.parked.Waiting(key);
  shard.parked.Park(key, *ticket);
  r->parked = true;
  r->cas = stub.cas();
  if (under_way) return;
  shard.counters.get_extstore++;
  FlashFetch fetch;
  fetch.key.assign(key);
  fetch.where = StubLocator(stub);
  fetch.value_len = StubValueLength(stub);
  fetch.recache = MayRecacheLocked(*slot) && TakeRecacheTurn(ticket);
  if (batch != nullptr) {
    batch->push_back(std::move(fetch));
  } else {
    std::vector<FlashFetch> one;
    one.push_back(std::move(fetch));
    config_.flash_fetcher->Fetch(std::move(one));
  }
}

// The value fetched for the stub, if one waits for its readers.
FetchedValue* ItemStore::Impl::FetchedForLocked(Shard& shard, std::string_view key, ItemView stub) {
  if (shard.fetched.empty()) return nullptr;
  auto it = shard.fetched.find(key);
  if (it == shard.fetched.end() || !SameLocator(it->second.where, StubLocator(stub))) return nullptr;
  return &it->second;
}

bool ItemStore::Impl::ReadStubLocked(Shard& shard, const Found& f, std::string_view key, const ReadOptions& opts,
                                     ReadResult* r) {
  const FetchedValue* fetched = FetchedForLocked(shard, key, ItemAt(*f.slot));
  if (fetched == nullptr) {
    FetchFromFlashLocked(shard, f.slot, key, opts.flash_park, nullptr, r);
    return true;
  }
  if (fetched->buffer != nullptr) return false;
  ServeFetchedLocked(shard, key, r);   // it could not be held: a miss
  return true;
}

void ItemStore::Impl::LeaveOnFlashLocked(const Found& f, ReadResult* r) const {
  if (r->status != ReadStatus::kHit) return;
  r->value_len_on_flash = StubValueLength(ItemAt(*f.slot));
  r->value = std::string_view();
  r->item = ItemRef();
}

// The reader takes the fetched value (its pin keeps the buffer); the last
// of the readers the fetch woke drops the entry.
void ItemStore::Impl::ServeFetchedLocked(Shard& shard, std::string_view key, ReadResult* r) {
  auto it = shard.fetched.find(key);
  if (it == shard.fetched.end()) return;
  FetchedValue& v = it->second;
  if (v.buffer != nullptr && r->status == ReadStatus::kHit) {
    v.buffer->Pin();
    r->item = ItemRef(v.buffer);
    r->value = std::string_view(v.buffer->base, v.value_len);
  }
  if (v.readers > 1) {
    v.readers--;
    return;
  }
  if (v.buffer != nullptr) ReleasePin(v.buffer);
  shard.fetched.erase(it);
}

// With flash_reads_cached a stub's value is read at once when it is cached
// (nobody waits on it yet); `get a a` reads it twice, so a key fetched here
// is kept for one more reader each time it comes again.
size_t ItemStore::Impl::ParkOnFlash(const std::vector<std::string_view>& keys, const WaitTicket& ticket,
                                    std::string_view* first) {
  std::vector<FlashFetch> batch;
  std::vector<std::string_view> fetched_here;
  size_t parked = 0;
  for (std::string_view key : keys) {
    const uint64_t hash = HashKey(key);
    Shard& shard = ShardFor(hash);
    for (bool tried_now = false;;) {
      ShardLock lock(this, shard);
      const Found f = LookupLocked(shard, key, hash, Now());
      if (f.slot == nullptr || !ItemAt(*f.slot).is_flash_stub()) break;
      if (FetchedValue* v = FetchedForLocked(shard, key, ItemAt(*f.slot)); v != nullptr) {   // fetched: read it
        if (std::find(fetched_here.begin(), fetched_here.end(), key) != fetched_here.end()) v->readers++;
        break;
      }
      if (const FetchNow now = tried_now ? FetchNow::kNotTried : TryFetchNowLocked(lock, shard, f, key, &ticket);
          now != FetchNow::kNotTried) {
        tried_now = true;
        if (now == FetchNow::kNotCached) continue;   // look again, and park
        fetched_here.push_back(key);
        break;
      }
      ReadResult r;
      FetchFromFlashLocked(shard, f.slot, key, &ticket, &batch, &r);
      if (r.parked && parked++ == 0) *first = key;
      break;
    }
  }
  if (!batch.empty()) config_.flash_fetcher->Fetch(std::move(batch));
  return parked;
}

// Only for a read that could wait (`park`: the others miss as before), and
// only while no reader waits on the key (its fetch is under way: join it).
bool ItemStore::Impl::FetchNowFitsLocked(Shard& shard, const Found& f, std::string_view key, const WaitTicket* park,
                                         FlashFetch* fetch) {
  if (!config_.flash_reads_cached || park == nullptr || config_.wake_sink == nullptr || shard.parked.Waiting(key)) {
    return false;
  }
  const ItemView stub = ItemAt(*f.slot);
  if (FetchedForLocked(shard, key, stub) != nullptr) return false;
  fetch->key.assign(key);
  fetch->where = StubLocator(stub);
  fetch->value_len = StubValueLength(stub);
  fetch->recache = MayRecacheLocked(*f.slot);   // counted only if FetchCachedNow reads it
  return true;
}

ItemStore::Impl::FetchNow ItemStore::Impl::TryFetchNowLocked(ShardLock& lock, Shard& shard, const Found& f,
                                                             std::string_view key, const WaitTicket* park) {
  FlashFetch fetch;
  if (!FetchNowFitsLocked(shard, f, key, park, &fetch)) return FetchNow::kNotTried;
  lock.unlock();
  return FetchCachedNow(&fetch, 1, park) ? FetchNow::kFetched : FetchNow::kNotCached;
}

// memcached's recache_or_free: an item read before, lately (ITEM_FETCHED and
// ITEM_ACTIVE: here, read before this read; its time within
// ITEM_UPDATE_INTERVAL), comes back to RAM one such read in ext_recache_rate,
// counted per connection (c->recache_counter, from 0: a connection's first
// such read recaches); the others are served from the fetched copy. Decided
// as the read asks for the value, on its connection's thread.
bool ItemStore::Impl::MayRecacheLocked(uint64_t slot) {
  constexpr int64_t kRecentReadS = 60;
  return flash_tunables().recache_rate.load(std::memory_order_relaxed) != 0 && Has(slot, kItemFetched) &&
         Now().now_s - ItemAt(slot).last_access() < kRecentReadS;
}

bool ItemStore::Impl::TakeRecacheTurn(const WaitTicket* reader) {
  const uint32_t recache_rate = flash_tunables().recache_rate.load(std::memory_order_relaxed);
  if (recache_rate == 0) return false;
  const uint64_t n = reader != nullptr && reader->recache_counter != nullptr
                         ? (*reader->recache_counter)++
                         : recache_counter_.fetch_add(1, std::memory_order_relaxed);
  return n % recache_rate == 0;
}

bool ItemStore::Impl::FetchCachedNow(FlashFetch* fetch, uint32_t own_readers, const WaitTicket* reader) {
  fetch->result = config_.flash->Read(fetch->where, fetch->key, fetch->value_len, &fetch->value, /*nowait=*/true);
  if (fetch->result == FlashReadResult::kWouldBlock) return false;   // the read parks and counts then
  fetch->recache = fetch->recache && TakeRecacheTurn(reader);
  std::vector<WaitTicket> woken;
  FinishOneFetch(*fetch, own_readers, &woken);
  for (const WaitTicket& w : woken) config_.wake_sink->Wake(w);   // readers that parked meanwhile
  return true;
}

// Every fetch of the batch first, then the wakes, each ticket once (a
// multi-key read parks the same ticket on several keys).
void ItemStore::Impl::FinishFlashReads(std::vector<FlashFetch>* done) {
  std::vector<WaitTicket> woken;
  for (FlashFetch& d : *done) FinishOneFetch(d, 0, &woken);
  std::sort(woken.begin(), woken.end(), [](const WaitTicket& a, const WaitTicket& b) {
    return std::tie(a.worker, a.conn_id, a.seq) < std::tie(b.worker, b.conn_id, b.seq);
  });
  for (size_t i = 0; i < woken.size(); i++) {
    const WaitTicket& w = woken[i];
    if (i > 0 && w.worker == woken[i - 1].worker && w.conn_id == woken[i - 1].conn_id && w.seq == woken[i - 1].seq) {
      continue;
    }
    config_.wake_sink->Wake(w);
  }
}

void ItemStore::Impl::FinishOneFetch(FlashFetch& d, uint32_t own_readers, std::vector<WaitTicket>* woken) {
  const uint64_t hash = HashKey(d.key);
  Shard& shard = ShardFor(hash);
  LockedAttempts(shard, hash, d.key, [&](ShardLock& lock, const Found& f, const Times& t, int attempt) {
    if (!FinishFetchLocked(lock, shard, f, t, attempt, d)) return kRetry;
    if (own_readers > 0) shard.counters.get_extstore++;   // a fetch the read did itself
    // Woken whatever happened: the re-run finds the value, or a miss.
    const size_t readers = own_readers + (shard.parked.empty() ? 0 : shard.parked.Wake(d.key));   // parks, not tickets: `get a a` reads twice
    auto it = shard.fetched.find(d.key);
    if (it != shard.fetched.end() && SameLocator(it->second.where, d.where)) {
      if (readers > 0) {
        it->second.readers += static_cast<uint32_t>(readers);   // 0 unless an earlier fetch's readers wait too
      } else if (it->second.readers == 0) {   // nobody waits any more
        if (it->second.buffer != nullptr) ReleasePin(it->second.buffer);
        shard.fetched.erase(it);
      }
    }
    std::vector<WaitTicket> mine = shard.parked.TakeWoken();
    woken->insert(woken->end(), mine.begin(), mine.end());
    return kAnswered;
  });
}

// kAnswered once the fetch is settled: the stub is gone or moved on, dropped
// (a miss), recached, or its value kept for its readers (KeepFetchedLocked).
bool ItemStore::Impl::FinishFetchLocked(ShardLock& lock, Shard& shard, const Found& f, const Times& t,
                                        int attempt, FlashFetch& done) {
  if (f.slot == nullptr || !ItemAt(*f.slot).is_flash_stub() || !SameLocator(StubLocator(ItemAt(*f.slot)), done.where)) {
    return kAnswered;   // stored, deleted or moved again meanwhile
  }
  const ItemView stub = ItemAt(*f.slot);
  if (done.result != FlashReadResult::kOk || done.value.size() != StubValueLength(stub)) {
    (done.result == FlashReadResult::kBadChecksum ? shard.counters.badcrc_from_extstore
                                                  : shard.counters.miss_from_extstore)++;
    UnlinkLocked(shard, f.slot);
    return kAnswered;
  }
  if (done.recache) {   // RecacheTurnLocked
    bool placed = false;
    if (!RecacheLocked(lock, shard, f, t, attempt, done.value, &placed)) return kRetry;
    if (placed) return kAnswered;
  }
  KeepFetchedLocked(shard, done, t);
  return kAnswered;
}

// The stub becomes a RAM item with the value (*placed), or stays (no room).
bool ItemStore::Impl::RecacheLocked(ShardLock& lock, Shard& shard, const Found& f, const Times& t, int attempt,
                                    std::string_view value, bool* placed_out) {
  const ItemView stub = ItemAt(*f.slot);
  ItemFields fields = stub.Fields();
  fields.flash_stub = false;
  fields.value_len = static_cast<uint32_t>(value.size());
  Placed placed;
  ItemView item(nullptr);
  const Placement placement = WriteNewLocked(lock, attempt, t, /*draw_cas=*/false, &fields, &placed, &item);
  if (placement == Placement::kRetry) return kRetry;
  if (placement == Placement::kNoRoom) return kAnswered;
  CopyBytes(item.value_data(), value);
  ReleaseFlashLocked(stub);
  MoveClassLocked(shard, stub, item);
  RepointLocked(shard, f.slot, placed, item, slot::Freq(*f.slot));
  shard.counters.recache_from_extstore++;
  *placed_out = true;
  return kAnswered;
}

// The fetched value waits in a buffer of its own (charged to -m while it
// lives, as memcached's read buffers, up to a 32nd of -m past the limit: a
// full cache does not evict for a buffer that lives for one reply) for the
// readers the fetch woke.
void ItemStore::Impl::KeepFetchedLocked(Shard& shard, const FlashFetch& done, const Times& t) {
  constexpr int64_t kFetchedLifetimeS = 2;
  // A read done at once and a parked reader's fetch of the same value may
  // both end: the first one's copy stays for its readers, the others join them.
  if (auto held = shard.fetched.find(done.key);
      held != shard.fetched.end() && held->second.readers > 0 && SameLocator(held->second.where, done.where)) {
    return;
  }
  const size_t beyond_limit = std::max(pool_->segment_size(), pool_->limit() / 32);
  if (!shard.fetched.empty() && shard.fetched_swept_s != t.now_s) {
    shard.fetched_swept_s = t.now_s;
    for (auto it = shard.fetched.begin(); it != shard.fetched.end();) {
      if (it->second.at_s + kFetchedLifetimeS > t.now_s) {
        ++it;
        continue;
      }
      if (it->second.buffer != nullptr) ReleasePin(it->second.buffer);
      it = shard.fetched.erase(it);
    }
  }
  Segment* buffer = pool_->NewJumbo(std::max<size_t>(done.value.size(), 1), t.now_s, beyond_limit);
  if (buffer != nullptr) {
    CopyBytes(buffer->base, done.value);
    buffer->Pin();   // the entry's
    pool_->Retire(buffer);   // never linked: freed with its last pin
  } else {
    shard.counters.get_oom_extstore++;
  }
  FetchedValue& v = shard.fetched[done.key];
  if (v.buffer != nullptr) ReleasePin(v.buffer);
  v = FetchedValue{done.where, buffer, static_cast<uint32_t>(done.value.size()), 0, t.now_s};
}

// memcached's storage_compact_thread for one page: each record whose stub
// still points at it is written again (extstore_compact_rescues) to the
// bucket the compaction names (compact, old, or for a value never read
// coldcompact) and the stub repointed, or, with drop_unread, a value never
// read is dropped with its stub (extstore_compact_lost); records nobody points
// at are skipped (extstore_compact_skipped). Its last record released, the page is free.
// Writes happen with no lock held; a stub that moved on meanwhile keeps its
// new place and the copy is released.
size_t ItemStore::Impl::CompactFlashPage(const FlashStore::Compaction& c) {
  std::string bytes;
  if (config_.flash == nullptr || !config_.flash->ReadPage(c.page, &bytes)) return 0;
  FlashPageReader reader(bytes);
  if (!reader.valid() || reader.generation() != c.generation) return 0;
  CompactionLog log(Watching(StoreEventKind::kCompactStart) ? config_.events : nullptr, c, bytes.size(),
                    config_.flash_as_1645);
  FlashRecord record;
  uint32_t offset;
  FlashStore::CompactionCounts into;   // the rescues into the coldcompact and old buckets
  while (reader.Next(&record, &offset)) {
    CompactionLog::Part& part = log.Reached(offset, offset + FlashRecordSize(record.key.size(), record.value.size()));
    const FlashLocator old{c.page, c.generation, offset};
    const uint64_t hash = HashKey(record.key);
    Shard& shard = ShardFor(hash);
    const auto still_there = [&](const Found& f) {
      return f.slot != nullptr && ItemAt(*f.slot).is_flash_stub() && SameLocator(StubLocator(ItemAt(*f.slot)), old);
    };
    FlashBucket to;
    {
      ShardLock lock(this, shard);
      const Found f = LookupLocked(shard, record.key, hash, Now());
      if (!still_there(f)) {
        part.skipped++;
        continue;
      }
      if (!c.RescueBucket(/*never_read=*/!Has(*f.slot, kItemFetched), &to)) {
        UnlinkLocked(shard, f.slot);   // releases the record
        part.lost++;
        continue;
      }
    }
    FlashLocator where;
    if (!config_.flash->Write(record.key, record.cas, record.value, &where, to)) break;   // full or failing: stop
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, record.key, hash, Now());
    if (!still_there(f)) {
      config_.flash->Release(where, record.key.size(), static_cast<uint32_t>(record.value.size()));
      part.skipped++;
      continue;
    }
    const ItemView stub = ItemAt(*f.slot);
    ReleaseFlashLocked(stub);
    EncodeStubValue(stub.value_data(), where, StubValueLength(stub));
    part.rescues++;
    into.rescues_cold += to == FlashBucket::kColdCompact ? 1 : 0;
    into.rescues_old += to == FlashBucket::kOld ? 1 : 0;
  }
  const CompactionLog::Part total = log.Finish();
  config_.flash->CountCompaction({total.rescues, total.lost, total.skipped, into.rescues_cold, into.rescues_old});
  return total.rescues + total.lost;
}

size_t ItemStore::Impl::CompactFlash() {
  if (config_.flash == nullptr) return 0;
  FlashStore::Compaction c;
  FlashStore::CompactionCheck check;
  const bool picked = config_.flash->PickCompaction(flash_tunables(), &c, &check);
  if (check.ran && Watching(StoreEventKind::kCompactFragInfo)) {
    // memcached checks once a compaction pass, at most every ext_max_sleep
    // while idle; this writer may pass far more often.
    const int64_t now_us = Now().now_us;
    if (now_us - fraginfo_logged_us_ >= int64_t{flash_tunables().max_sleep_us.load(std::memory_order_relaxed)}) {
      fraginfo_logged_us_ = now_us;
      StoreEvent e;
      e.kind = StoreEventKind::kCompactFragInfo;
      e.frag_ratio = check.ratio;
      e.frag_bytes = check.limit_bytes;
      config_.events->OnEvent(e);
    }
  }
  return picked ? CompactFlashPage(c) : 0;
}

void ItemStore::Impl::DropFetched() {
  for (size_t i = 0; i < shard_count_; i++) {
    for (auto& [key, v] : shards_[i].fetched) {
      if (v.buffer != nullptr) ReleasePin(v.buffer);
    }
    shards_[i].fetched.clear();
  }
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
    FlashBucket bucket;   // decided under the lock: a touch changes the TTL in place
  };
  std::vector<Candidate> candidates;
  Shard& shard = shards_[cursor->shard];
  const uint32_t min_size = flash_tunables().item_size.load(std::memory_order_relaxed);
  const uint32_t low_ttl = flash_tunables().low_ttl.load(std::memory_order_relaxed);
  {
    ShardLock lock(this, shard);
    const Times t = Now();
    cursor->position = shard.index.Walk(cursor->position, max_buckets, [&](uint64_t* slot) {
      const ItemView item = ItemAt(*slot);
      if (!Movable(*slot, item, min_size) || IsExpiredAt(item, t.now_tick) ||
          IsFlushed(item, t.now_s) || t.now_s - item.last_access() < int64_t{min_idle_s}) {
        return;
      }
      Segment* seg = SegmentOf(*slot);
      seg->Pin();
      candidates.push_back(Candidate{HashKey(item.key()), *slot, item.cas(), ItemRef(seg),
                                     WriteBucket(item, ShortLived(item, t.now_tick, low_ttl), config_.flash_chunk_max)});
    });
  }
  if (cursor->position == 0 && ++cursor->shard == shard_count_) cursor->done = true;
  size_t moved = 0;
  for (const Candidate& c : candidates) {
    const ItemView item = ItemAt(c.slot);   // pinned: its key and value stay
    FlashLocator where;
    if (!config_.flash->Write(item.key(), c.cas, item.value(), &where, c.bucket)) continue;
    const Times t = Now();
    ShardLock lock(this, shard);
    uint64_t* slot = shard.index.FindLocation(c.hash, slot::Segment(c.slot), slot::Offset(c.slot));
    if (slot != nullptr && ItemAt(*slot).cas() == c.cas &&
        Movable(*slot, ItemAt(*slot), min_size) &&
        SwapToStubLocked(shard, slot, where, t.now_s, /*at_main_tail=*/false, slot::Freq(*slot), c.bucket)) {
      moved++;
    } else {
      config_.flash->Release(where, item.key_len(), item.value_len());
    }
  }
  return moved;
}

}  // namespace herdless
