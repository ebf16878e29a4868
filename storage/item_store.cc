// ItemStore. Reading order: constants and small helpers, the shard (hash table
// + LRU), memory and eviction, lookup with lazy expiry, then the public
// operations (Read, Store, Delete, Arithmetic, Touch, FlushAll, reclaim, stats).
//
// Locking: one shard lock at a time, never two. Anything that may evict
// (allocating a new item) runs with no shard lock held; operations that need
// a new item look the key up, drop the lock, allocate, retake the lock and
// check that the key still holds what they saw (retrying if not).
//
// Parked readers (classic wait mode) are tickets in their shard's waiter map,
// keyed by the key. Every change that may end a wait (an item linked or
// unlinked, a lease re-granted or cancelled) takes the key's tickets, and
// ShardLock hands them to the wake sink once the lock is released. The map is
// looked at only when the shard has waiters: no cost otherwise.
#include "storage/item_store.h"

#include "storage/slab_allocator.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace herdless {
namespace {

// memcached's item_size_ok: a 48-byte header, the 8-byte CAS, key + NUL, 4
// bytes of client flags when they are not 0, and the value with its CRLF must
// fit item_size_max. Checked against Debian's memcached 1.6.18.
constexpr size_t kMemcachedHeaderBytes = 48;
constexpr size_t kMemcachedCasBytes = 8;
constexpr size_t kMemcachedFlagsBytes = 4;
constexpr size_t kMaxKeyLength = 250;

constexpr int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;  // 30 days, as memcached
constexpr size_t kInitialBuckets = 256;                   // per shard, a power of two
constexpr int kEvictScan = 5;          // LRU tail items looked at for a stale victim
constexpr int kMaxRoomAttempts = 64;   // evictions/page drains tried for one slab item
constexpr int kClassScan = 16;         // LRU tail items per shard looked at for one of the needy class
constexpr int64_t kAddBumpInterval = 60;  // memcached's ITEM_UPDATE_INTERVAL
// A lease-get placeholder with no lease timeout (memcached behaviour) still
// needs an end: the FB paper hands out one token per key every 10 seconds.
constexpr int64_t kPlaceholderTtlWithoutTimeoutS = 10;

uint64_t HashKey(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

bool Has(const Item* item, uint8_t bits) { return (item->state & bits) != 0; }

// Memory an item holds: its slab chunk, or its malloc'd block.
size_t ChargeOf(const Item* item) {
  if (item->slab_class != SlabAllocator::kNoClass) return SlabAllocator::ChunkSize(item->slab_class);
  return AllocatedSize(ItemAllocSize(item->key_len, item->value_len));
}

// Only malloc'd items are in the budget one by one; slab items are in it
// through their pages.
bool ChargedAlone(const Item* item) { return item->slab_class == SlabAllocator::kNoClass; }

bool IsExpired(const Item* item, int64_t now_s) {
  return item->exptime != 0 && item->exptime <= now_s;
}

int64_t TtlOf(int64_t exptime, int64_t now_s) { return exptime == 0 ? -1 : exptime - now_s; }

int32_t ClampStoreTime(int64_t t) {
  return static_cast<int32_t>(std::clamp<int64_t>(t, INT32_MIN, INT32_MAX));
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// memcached parses an incr/decr target with strtoull: leading white space, an
// optional sign, digits, then white space or the end of the value ("12 abc"
// is 12, "12abc" is not a number). A '-' is refused when the negated result
// would be negative as a signed number, as safe_strtoull does.
bool ParseCounter(std::string_view v, uint64_t* out) {
  size_t i = 0;
  while (i < v.size() && IsSpace(v[i])) i++;
  bool negative = false;
  if (i < v.size() && (v[i] == '+' || v[i] == '-')) {
    negative = v[i] == '-';
    i++;
  }
  const size_t digits_start = i;
  uint64_t value = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(v[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;  // ERANGE
    value = value * 10 + digit;
    i++;
  }
  if (i == digits_start) return false;
  if (i < v.size() && !IsSpace(v[i])) return false;
  if (negative) {
    value = 0 - value;
    if (static_cast<int64_t>(value) < 0) return false;
  }
  *out = value;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------
// Shard: a chained hash table and an LRU list (head = most recently used).

struct ItemStore::Times {
  int64_t now_us;
  int64_t now_s;
  uint32_t now_ms;  // mod 2^32, as Item::lease_granted_ms
};

// What a lookup found under the key.
struct ItemStore::Found {
  enum Presence : uint8_t {
    kAbsent,
    kLive,            // a real, unexpired item
    kExpiredInGrace,  // expired less than stale_grace ago: kept as a stale value
    kPlaceholder,     // a lease-only stub (kItemPlaceholder)
  };
  Item* item = nullptr;
  Presence presence = kAbsent;
  // Why an absent key is absent, when the lookup itself removed it
  // (memcached's get_expired / get_flushed).
  bool removed_expired = false;
  bool removed_flushed = false;
};

struct ItemStore::Shard {
  std::mutex mu;
  std::vector<Item*> buckets = std::vector<Item*>(kInitialBuckets, nullptr);
  size_t item_count = 0;
  size_t bytes = 0;
  size_t leases_out = 0;  // linked items with kItemTokenSent
  Item* lru_head = nullptr;
  Item* lru_tail = nullptr;
  size_t reclaim_bucket = 0;
  StoreStats counters;  // only the event counters are used here
  ParkedReaders parked;  // woken tickets are delivered by ShardLock::unlock

  Item** SlotFor(std::string_view key, uint64_t hash) {
    Item** slot = &buckets[hash & (buckets.size() - 1)];
    while (*slot != nullptr && (*slot)->key() != key) slot = &(*slot)->hash_next;
    return slot;
  }

  void LruPushHead(Item* item) {
    item->lru_prev = nullptr;
    item->lru_next = lru_head;
    if (lru_head != nullptr) lru_head->lru_prev = item;
    lru_head = item;
    if (lru_tail == nullptr) lru_tail = item;
  }

  void LruRemove(Item* item) {
    if (item->lru_prev != nullptr) item->lru_prev->lru_next = item->lru_next;
    else lru_head = item->lru_next;
    if (item->lru_next != nullptr) item->lru_next->lru_prev = item->lru_prev;
    else lru_tail = item->lru_prev;
    item->lru_prev = item->lru_next = nullptr;
  }

  void LruBump(Item* item) {
    if (lru_head == item) return;
    LruRemove(item);
    LruPushHead(item);
  }

  // Doubles the bucket array once the chains average 1.5 items.
  void MaybeGrow() {
    if (item_count * 2 <= buckets.size() * 3) return;
    std::vector<Item*> bigger(buckets.size() * 2, nullptr);
    for (Item* head : buckets) {
      while (head != nullptr) {
        Item* next = head->hash_next;
        Item** slot = &bigger[HashKey(head->key()) & (bigger.size() - 1)];
        head->hash_next = *slot;
        *slot = head;
        head = next;
      }
    }
    buckets.swap(bigger);
    reclaim_bucket = 0;
  }

  void SetTokenSent(Item* item) {
    if (!Has(item, kItemTokenSent)) {
      item->state |= kItemTokenSent;
      leases_out++;
    }
  }

  void ClearTokenSent(Item* item) {
    if (Has(item, kItemTokenSent)) {
      item->state &= static_cast<uint8_t>(~kItemTokenSent);
      leases_out--;
    }
  }
};

// The shard's lock. Tickets taken while it was held are delivered to the wake
// sink after it is released, so a sink never runs under a store lock.
class ItemStore::ShardLock {
 public:
  ShardLock(const ItemStore* store, Shard& shard) : store_(store), shard_(shard) { lock(); }
  ~ShardLock() {
    if (locked_) unlock();
  }
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

  void lock() {
    shard_.mu.lock();
    locked_ = true;
  }
  void unlock() {
    locked_ = false;
    if (!shard_.parked.has_woken()) {
      shard_.mu.unlock();
      return;
    }
    const std::vector<WaitTicket> woken = shard_.parked.TakeWoken();
    shard_.mu.unlock();
    for (const WaitTicket& ticket : woken) store_->config_.wake_sink->Wake(ticket);
  }

 private:
  const ItemStore* store_;
  Shard& shard_;
  bool locked_ = false;
};

ItemStore::ItemStore(const StoreConfig& config)
    : config_(config),
      shard_count_(size_t{1} << std::clamp(config.shard_bits, 0, 16)),
      memory_limit_(config.memory_limit) {
  assert(config_.clock != nullptr && config_.random != nullptr);
  config_.shard_bits = std::clamp(config.shard_bits, 0, 16);
  shards_ = std::make_unique<Shard[]>(shard_count_);
  if (config_.slab_allocator && config_.memory_limit >= kSlabMinLimit) {
    slabs_ = std::make_unique<SlabAllocator>(&memory_used_, &memory_limit_);
  }
}

ItemStore::~ItemStore() {
  for (size_t i = 0; i < shard_count_; i++) {
    Item* item = shards_[i].lru_head;
    while (item != nullptr) {
      Item* next = item->lru_next;
      ReleaseItem(item);  // readers still holding an ItemRef keep their copy alive
      item = next;
    }
  }
  if (slabs_ != nullptr && slabs_->TotalChunksInUse() != 0) {
    // Readers still hold items in its pages: the allocator must outlive them.
    // Kept reachable on purpose (a leak only in this shutdown corner).
    static std::mutex graveyard_mu;
    static auto* graveyard = new std::vector<std::unique_ptr<SlabAllocator>>;
    std::lock_guard<std::mutex> lock(graveyard_mu);
    graveyard->push_back(std::move(slabs_));
  }
}

ItemStore::Shard& ItemStore::ShardFor(uint64_t hash) {
  // High bits pick the shard, low bits the bucket, so the two stay independent.
  if (config_.shard_bits == 0) return shards_[0];
  return shards_[hash >> (64 - config_.shard_bits)];
}

// ---------------------------------------------------------------------------
// Time.

int64_t ItemStore::NowSeconds() const { return config_.clock->NowMicros() / 1000000; }

ItemStore::Times ItemStore::Now() const {
  const int64_t us = config_.clock->NowMicros();
  return Times{us, us / 1000000, static_cast<uint32_t>(us / 1000)};
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

// ---------------------------------------------------------------------------
// Linking, unlinking and memory.

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

void ItemStore::SetMemoryLimit(size_t bytes) {
  memory_limit_.store(bytes, std::memory_order_relaxed);
}

bool ItemStore::Reserve(size_t bytes) {
  if (bytes > memory_limit()) return false;  // evicting everything would not help
  size_t used = memory_used_.load(std::memory_order_relaxed);
  for (;;) {
    if (used + bytes <= memory_limit()) {
      if (memory_used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed)) {
        return true;
      }
      continue;  // `used` was reloaded by the failed exchange
    }
    if (!(slabs_ != nullptr ? MakeRoom(SlabAllocator::kNoClass) : EvictOne())) return false;
    used = memory_used_.load(std::memory_order_relaxed);
  }
}

// Reserves memory for (evicting as needed) and allocates an unlinked item
// with `value_len` value bytes left for the caller. nullptr = no memory.
Item* ItemStore::NewItem(std::string_view key, size_t value_len) {
  if (slabs_ != nullptr) {
    const int cls = SlabAllocator::ClassFor(ItemAllocSize(key.size(), value_len));
    if (cls != SlabAllocator::kNoClass) return NewSlabItem(key, value_len, cls);
  }
  const size_t bytes = AllocatedSize(ItemAllocSize(key.size(), value_len));
  if (!Reserve(bytes)) return nullptr;
  size_t charged = 0;
  Item* item = AllocateItem(key, static_cast<uint32_t>(value_len), &charged);
  if (item == nullptr) {
    memory_used_.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  assert(charged == bytes);
  return item;
}

// Gives back an item from NewItem that was never linked.
void ItemStore::DiscardItem(Item* item) {
  if (ChargedAlone(item)) memory_used_.fetch_sub(ChargeOf(item), std::memory_order_relaxed);
  ReleaseItem(item);
}

void ItemStore::LinkLocked(Shard& shard, Item* item, uint64_t hash, bool counts_as_new) {
  Item** slot = shard.SlotFor(item->key(), hash);
  assert(*slot == nullptr);
  item->hash_next = nullptr;
  *slot = item;
  item->state |= kItemLinked;
  shard.LruPushHead(item);
  shard.item_count++;
  shard.bytes += ChargeOf(item);
  if (Has(item, kItemTokenSent)) shard.leases_out++;
  if (counts_as_new) shard.counters.total_items++;
  shard.MaybeGrow();
  WakeLocked(shard, item->key());
}

// Takes the item out of the table and the LRU, uncharges it and drops the
// table's reference (readers holding an ItemRef keep the block alive).
void ItemStore::UnlinkLocked(Shard& shard, Item* item) {
  Item** slot = shard.SlotFor(item->key(), HashKey(item->key()));
  assert(*slot == item);
  *slot = item->hash_next;
  item->hash_next = nullptr;
  shard.LruRemove(item);
  item->state &= static_cast<uint8_t>(~kItemLinked);
  shard.item_count--;
  const size_t charge = ChargeOf(item);
  shard.bytes -= charge;
  if (Has(item, kItemTokenSent)) shard.leases_out--;
  if (ChargedAlone(item)) memory_used_.fetch_sub(charge, std::memory_order_relaxed);
  WakeLocked(shard, item->key());
  ReleaseItem(item);
}

// Ends the waits of the key's parked readers (see ShardLock).
void ItemStore::WakeLocked(Shard& shard, std::string_view key) {
  if (!shard.parked.empty()) shard.parked.Wake(key);
}

// Every new value of a key goes through here (set, add, cas, append, incr,
// vivify, lease-set). This is where parked readers of the key will be woken.
void ItemStore::ReplaceLocked(Shard& shard, Item* old_item, Item* new_item, uint64_t hash,
                              bool counts_as_new) {
  if (old_item != nullptr) UnlinkLocked(shard, old_item);
  LinkLocked(shard, new_item, hash, counts_as_new);
}

// Counts an item that is about to be removed for expiry or eviction.
void ItemStore::CountRemovalLocked(Shard& shard, const Item* item, int64_t now_s,
                                   bool evicted) {
  const bool fetched = Has(item, kItemFetched);
  if (evicted && !IsExpired(item, now_s) && !IsFlushed(item, now_s)) {
    shard.counters.evictions++;
    if (!fetched) shard.counters.evicted_unfetched++;
  } else {
    shard.counters.reclaimed++;
    if (!fetched) shard.counters.expired_unfetched++;
  }
}

// Among the few items at the shard's LRU tail the first stale, expired or
// flushed one, else the tail; nullptr when the shard is empty.
Item* ItemStore::TailVictimLocked(Shard& shard, int64_t now_s) const {
  Item* candidate = shard.lru_tail;
  for (int n = 0; n < kEvictScan && candidate != nullptr; n++, candidate = candidate->lru_prev) {
    if (Has(candidate, kItemStale) || IsExpired(candidate, now_s) || IsFlushed(candidate, now_s)) {
      return candidate;
    }
  }
  return shard.lru_tail;
}

// Removes one item, round-robin over the shards (malloc'd items).
bool ItemStore::EvictOne() {
  if (!config_.evictions) return false;   // -M: the allocation fails (out of memory)
  const int64_t now_s = NowSeconds();
  const size_t start = evict_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[(start + i) % shard_count_];
    ShardLock lock(this, shard);
    Item* victim = TailVictimLocked(shard, now_s);
    if (victim == nullptr) continue;
    CountRemovalLocked(shard, victim, now_s, /*evicted=*/true);
    UnlinkLocked(shard, victim);
    return true;
  }
  return false;
}

// Drains a slab page: every item in it that is linked is evicted. A chunk is
// pinned (a reference taken) only while its refcount is not 0: a chunk whose
// item is being freed, or was handed out but not yet built, reads 0 (pages
// are mapped zeroed, and an item is freed at 0). The key is read only after
// the pin, which acquires AllocateItemIn's release of the refcount, and the
// item counts as linked only if the table holds it (its state byte may still
// be written unlocked by the store that built it).
class ItemStore::PageEvictor : public ChunkEvictor {
 public:
  PageEvictor(ItemStore* store, int64_t now_s) : store_(store), now_s_(now_s) {}

  bool Pin(void* chunk) override {
    Item* item = static_cast<Item*>(chunk);
    uint32_t refs = item->refcount.load(std::memory_order_acquire);
    while (refs != 0) {
      if (item->refcount.compare_exchange_weak(refs, refs + 1, std::memory_order_acquire,
                                               std::memory_order_acquire)) {
        return true;
      }
    }
    return false;
  }

  void Evict(void* chunk) override {
    Item* item = static_cast<Item*>(chunk);
    const uint64_t hash = HashKey(item->key());
    Shard& shard = store_->ShardFor(hash);
    {
      ShardLock lock(store_, shard);
      if (*shard.SlotFor(item->key(), hash) == item) {
        store_->CountRemovalLocked(shard, item, now_s_, /*evicted=*/true);
        store_->UnlinkLocked(shard, item);
      }
    }
    ReleaseItem(item);  // the pin; frees the chunk unless a reader still has it
  }

 private:
  ItemStore* store_;
  int64_t now_s_;
};

// Frees memory for a chunk of `slab_class` (kNoClass: budget for a malloc'd
// item). A slack page (a class holding memory it does not use) is drained
// first. Else the next shard's LRU victim is evicted when that helps: it is
// of the class, a malloc'd item (frees budget for a page), or on a page
// already draining. Otherwise a whole page is drained (the emptiest, or the
// victim's when every page is mostly full), so memory moves between classes.
// Returns false when there is nothing left to free.
bool ItemStore::MakeRoom(int slab_class) {
  if (!config_.evictions) return false;   // -M: the allocation fails (out of memory)
  const int64_t now_s = NowSeconds();
  if (slabs_->SlackPages() != 0) {
    if (SlabAllocator::Page* page = slabs_->ClaimVictimPage(nullptr)) {
      PageEvictor evictor(this, now_s);
      slabs_->DrainPage(page, &evictor);
      return true;
    }
  }
  // Evicting an item frees a chunk in its own class only, so look near every
  // shard's LRU tail for one whose chunk (or malloc'd block, or draining
  // page) helps this class, the way memcached's per-class LRUs do. Draining
  // a whole page is the last resort: it evicts every item in it, and with
  // many classes in use, draining on the first mismatch thrashes the cache.
  const size_t start = evict_cursor_.fetch_add(1, std::memory_order_relaxed);
  const void* hint = nullptr;
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[(start + i) % shard_count_];
    ShardLock lock(this, shard);
    Item* tail = TailVictimLocked(shard, now_s);
    if (tail == nullptr) continue;
    if (hint == nullptr) hint = tail;  // only an address: which page to drain
    Item* victim = tail;
    for (int n = 0; n < kClassScan && victim != nullptr; n++, victim = victim->lru_prev) {
      if (victim->slab_class == slab_class || ChargedAlone(victim) ||
          SlabAllocator::IsDraining(victim)) {
        CountRemovalLocked(shard, victim, now_s, /*evicted=*/true);
        UnlinkLocked(shard, victim);
        return true;
      }
    }
  }
  SlabAllocator::Page* page = slabs_->ClaimVictimPage(hint);
  if (page == nullptr) return hint != nullptr && EvictOne();
  PageEvictor evictor(this, now_s);
  slabs_->DrainPage(page, &evictor);
  return true;
}

// A slab item: a free chunk of the class, else room made for one (a few
// tries: other threads may take the chunks freed for this one).
Item* ItemStore::NewSlabItem(std::string_view key, size_t value_len, int slab_class) {
  // A lowered limit (cache_memlimit) gives back a page per allocation.
  if (memory_used_.load(std::memory_order_relaxed) > memory_limit()) {
    MakeRoom(SlabAllocator::kNoClass);
  }
  for (int attempt = 0; attempt < kMaxRoomAttempts; attempt++) {
    void* chunk = slabs_->Allocate(slab_class);
    if (chunk != nullptr) {
      return AllocateItemIn(chunk, slab_class, key, static_cast<uint32_t>(value_len));
    }
    if (!MakeRoom(slab_class)) break;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Lookup with lazy expiry and delayed flush.

bool ItemStore::IsFlushed(const Item* item, int64_t now_s) const {
  const int64_t deadline = flush_deadline_.load(std::memory_order_relaxed);
  return deadline != 0 && now_s >= deadline && item->last_access < deadline;
}

// Finds the key, removing it first when it is flushed or expired beyond the
// stale grace. Stubs (placeholders, vivified items still waiting for their
// value) never linger as stale values.
ItemStore::Found ItemStore::LookupLocked(Shard& shard, std::string_view key, uint64_t hash,
                                         int64_t now_s) {
  Found f;
  Item* item = *shard.SlotFor(key, hash);
  if (item == nullptr) return f;
  if (IsFlushed(item, now_s)) {
    UnlinkLocked(shard, item);
    f.removed_flushed = true;
    return f;
  }
  if (IsExpired(item, now_s)) {
    const bool stub = Has(item, kItemPlaceholder | kItemNeedsValue);
    if (stub || int64_t{item->exptime} + config_.stale_grace_s <= now_s) {
      CountRemovalLocked(shard, item, now_s, /*evicted=*/false);
      UnlinkLocked(shard, item);
      f.removed_expired = !stub;
      return f;
    }
    f.item = item;
    f.presence = Found::kExpiredInGrace;
    return f;
  }
  f.item = item;
  f.presence = Has(item, kItemPlaceholder) ? Found::kPlaceholder : Found::kLive;
  return f;
}

void ItemStore::RemoveKey(std::string_view key) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  ShardLock lock(this, shard);
  Item* item = *shard.SlotFor(key, hash);
  if (item != nullptr) UnlinkLocked(shard, item);
}

// ---------------------------------------------------------------------------
// Read.

// A placeholder lives a little longer than its lease, so that a timeout is
// seen as a regrant (which renews it) rather than as a miss.
int32_t ItemStore::PlaceholderExptime(int64_t now_s) const {
  const int64_t ttl = config_.lease.lease_timeout_ms != 0
                          ? (config_.lease.lease_timeout_ms + 999) / 1000 + 1
                          : kPlaceholderTtlWithoutTimeoutS;
  return ClampStoreTime(now_s + ttl);
}

ReadResult ItemStore::Read(std::string_view key, const ReadOptions& opts) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  const bool classic = opts.kind == ReadKind::kClassic;
  const double u =
      (!classic && opts.lease.xfetch_beta > 0) ? config_.random->UniformOpenClosed() : 1.0;
  const int64_t touch_exptime = opts.has_touch ? ToStoreTime(opts.touch_exptime) : 0;
  const bool wants_stub = (opts.kind == ReadKind::kMeta && opts.has_vivify) ||
                          opts.kind == ReadKind::kLeaseGet ||
                          opts.kind == ReadKind::kClassicLease;
  const bool makes_placeholder = opts.kind != ReadKind::kMeta;

  ReadResult r;
  Item* stub = nullptr;  // allocated with no lock held, linked on a miss
  for (;;) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, key, hash, t.now_s);
    r.miss_expired = f.removed_expired;
    r.miss_flushed = f.removed_flushed;
    bool visible = f.item != nullptr;
    if (f.presence == Found::kPlaceholder) visible = wants_stub;
    if (f.presence == Found::kExpiredInGrace && classic) visible = false;
    if (visible) {
      HitLocked(shard, f.item, f, opts, touch_exptime, t, u, &r);
      if (opts.park != nullptr && r.no_value && r.lease == LeaseVerdict::kHeld &&
          config_.wake_sink != nullptr) {
        shard.parked.Park(key, *opts.park);
        r.parked = true;
      }
      break;
    }
    if (!wants_stub) break;  // a plain miss; invisible items stay as they are
    if (stub == nullptr) {
      lock.unlock();
      stub = NewItem(key, 0);
      if (stub == nullptr) return r;  // no memory: a miss without a lease
      continue;  // the key may have changed meanwhile: look again
    }

    // A miss that creates a stub and wins its lease.
    stub->cas = NextCas();
    stub->last_access = static_cast<int32_t>(t.now_s);
    stub->lease_granted_ms = t.now_ms;
    stub->state = kItemTokenSent | kItemNeedsValue;
    if (makes_placeholder) {
      stub->exptime = PlaceholderExptime(t.now_s);
      stub->state |= kItemPlaceholder;
      r.placeholder = true;
      r.no_value = true;
    } else {
      // memcached's mg N: a real 0-byte item with the N TTL (or T's).
      stub->exptime = ClampStoreTime(opts.has_touch ? touch_exptime
                                                    : ToStoreTime(opts.vivify_exptime));
      if (opts.bump) stub->state |= kItemFetched;
      r.vivified = true;
      r.no_value = true;
    }
    ReplaceLocked(shard, f.item, stub, hash);
    shard.counters.lease_grants++;
    r.status = ReadStatus::kHit;
    r.item = ItemRef::Share(stub);
    r.value = stub->value();
    r.client_flags = 0;
    r.cas = stub->cas;
    r.ttl_before = r.ttl_after = TtlOf(stub->exptime, t.now_s);
    r.lease = LeaseVerdict::kWin;
    stub = nullptr;
    break;
  }
  if (stub != nullptr) DiscardItem(stub);
  return r;
}

void ItemStore::HitLocked(Shard& shard, Item* item, const Found& found, const ReadOptions& opts,
                          int64_t touch_exptime, const Times& t, double u, ReadResult* r) {
  const int32_t exptime_before = item->exptime;
  r->ttl_before = TtlOf(exptime_before, t.now_s);
  if (opts.has_touch) item->exptime = ClampStoreTime(touch_exptime);
  r->ttl_after = TtlOf(item->exptime, t.now_s);
  r->fetched_before = Has(item, kItemFetched);
  r->seconds_since_access = t.now_s - item->last_access;
  if (opts.bump) {
    item->state |= kItemFetched;
    item->last_access = static_cast<int32_t>(t.now_s);
    shard.LruBump(item);
  }

  const bool classic = opts.kind == ReadKind::kClassic;
  // Classic reads ignore staleness entirely (memcached §1.7.11).
  const bool stale =
      !classic && (found.presence == Found::kExpiredInGrace || Has(item, kItemStale));
  if (!classic) {
    LeaseView view;
    view.stale = stale;
    view.token_sent = Has(item, kItemTokenSent);
    view.needs_value = Has(item, kItemNeedsValue);
    view.exptime = (opts.recache_after_touch || !opts.has_touch) ? item->exptime : exptime_before;
    view.lease_granted_ms = item->lease_granted_ms;
    view.delta_ms = item->delta_ms;
    const LeaseDecision d = DecideRead(config_.lease, view, opts.lease, t.now_us, u);
    if (d.verdict == LeaseVerdict::kWin) {
      shard.SetTokenSent(item);
      item->lease_granted_ms = t.now_ms;
      if (d.regrant) {
        // A new CAS supersedes the dead holder's token: its fenced store fails.
        item->cas = NextCas();
        if (Has(item, kItemPlaceholder)) item->exptime = PlaceholderExptime(t.now_s);
        shard.counters.lease_timeouts++;
        // Readers parked on the dead lease wait for the new one instead.
        WakeLocked(shard, item->key());
      }
      shard.counters.lease_grants++;
      if (d.by_xfetch) shard.counters.xfetch_grants++;
    }
    r->lease = d.verdict;
    r->lease_by_xfetch = d.by_xfetch;
  }

  r->status = ReadStatus::kHit;
  r->item = ItemRef::Share(item);
  r->value = item->value();
  r->client_flags = item->client_flags;
  r->cas = item->cas;
  r->stale = stale;
  r->placeholder = Has(item, kItemPlaceholder);
  r->no_value = Has(item, kItemPlaceholder | kItemNeedsValue);
  r->binary_key = Has(item, kItemBinaryKey);
  // A classic-mode winner is answered with a miss: it does not see the stale value.
  if (stale && !(opts.kind == ReadKind::kClassicLease && r->lease == LeaseVerdict::kWin)) {
    shard.counters.stale_hits++;
  }
}

// ---------------------------------------------------------------------------
// Store.

// Links `new_item` in place of `old_item` (may be null) as a plain new value:
// it ends any lease on the key, and measures the recompute time when it does.
void ItemStore::StoreNewLocked(Shard& shard, Item* old_item, Item* new_item, uint64_t hash,
                               const Times& t) {
  if (old_item != nullptr) {
    new_item->delta_ms = old_item->delta_ms;
    if (Has(old_item, kItemTokenSent) && !Has(new_item, kItemTokenSent)) {
      shard.counters.lease_fulfilled++;
      const int64_t took_ms = static_cast<uint32_t>(t.now_ms - old_item->lease_granted_ms);
      new_item->delta_ms = SmoothDelta(old_item->delta_ms, took_ms);
    }
  }
  ReplaceLocked(shard, old_item, new_item, hash);
}

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

  const int64_t exptime = ToStoreTime(req.exptime);
  Item* item = NewItem(req.key, req.value.size());
  if (item == nullptr) {
    if (remove_on_failure) RemoveKey(req.key);
    res.status = StoreStatus::kNoMemory;
    return res;
  }
  std::memcpy(item->value_data(), req.value.data(), req.value.size());
  item->client_flags = req.client_flags;
  item->exptime = ClampStoreTime(exptime);
  if (req.binary_key) item->state |= kItemBinaryKey;

  // meta's C turns set and replace into a compare-and-swap (memcached).
  const bool cas_mode = req.mode == StoreMode::kCas ||
                        (req.compare_cas != 0 &&
                         (req.mode == StoreMode::kSet || req.mode == StoreMode::kReplace));
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const Times t = Now();
  ShardLock lock(this, shard);
  const Found f = LookupLocked(shard, req.key, hash, t.now_s);
  Item* old_item = f.item;
  const bool live = f.presence == Found::kLive;

  enum class Action { kPlain, kStale, kReject } action = Action::kReject;
  if (req.lease_token != 0) {
    // lease-set: only the holder of the live lease may store.
    if (old_item != nullptr && Has(old_item, kItemTokenSent) && old_item->cas == req.lease_token) {
      action = Action::kPlain;
    } else {
      shard.counters.lease_sets_refused++;
      res.status = StoreStatus::kNotStored;
    }
  } else if (cas_mode) {
    // Stubs and values in stale grace take part: a lease winner's token is their CAS.
    if (old_item == nullptr) {
      res.status = StoreStatus::kNotFound;
    } else if (req.compare_cas != 0 && req.compare_cas == old_item->cas) {
      action = Action::kPlain;
    } else if (req.invalidate && req.compare_cas != 0 && req.compare_cas < old_item->cas) {
      action = Action::kStale;  // memcached's ms I: an older CAS stores a stale value
    } else {
      res.status = StoreStatus::kExists;
    }
  } else if (req.mode == StoreMode::kAdd) {
    if (live) {
      // memcached's add bumps the existing item (its time at most once a minute).
      shard.LruBump(old_item);
      if (old_item->last_access < t.now_s - kAddBumpInterval) {
        old_item->last_access = static_cast<int32_t>(t.now_s);
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

  if (action == Action::kReject) {
    lock.unlock();
    DiscardItem(item);
    return res;
  }
  item->cas = req.new_cas != 0 ? req.new_cas : NextCas();
  item->last_access = static_cast<int32_t>(t.now_s);
  if (action == Action::kStale) {
    // Keeps the old TTL, is marked stale and keeps any outstanding lease.
    item->exptime = old_item->exptime;
    item->state = (item->state & kItemBinaryKey) | kItemStale | (old_item->state & kItemTokenSent);
    item->lease_granted_ms = old_item->lease_granted_ms;
  }
  StoreNewLocked(shard, old_item, item, hash, t);
  res.status = StoreStatus::kStored;
  res.cas = item->cas;
  res.stored_size = item->value_len;
  return res;
}

// Append, prepend and incr build the replacement with the lock released, from
// a snapshot of the item (`seen`, at CAS `seen_cas`). It is still right if the
// key holds that same item, unchanged, or (for a vivify) still nothing.
static bool StillBuiltFrom(const ItemRef& seen, uint64_t seen_cas, const Item* current) {
  return current == nullptr ? !seen : (seen.get() == current && seen_cas == current->cas);
}

// append / prepend: a new item holding old + new bytes, with the old item's
// client flags and TTL. Needs a live item, unless ms N vivifies it.
StoreResult ItemStore::StoreConcat(const StoreRequest& req) {
  StoreResult res;
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const bool append = req.mode == StoreMode::kAppend;
  Item* fresh = nullptr;
  ItemRef seen;        // the old item the fresh one was built from
  uint64_t seen_cas = 0;
  for (;;) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t.now_s);
    Item* old_item = f.presence == Found::kLive ? f.item : nullptr;

    if (old_item == nullptr && !req.has_vivify) {
      res.status = StoreStatus::kNotStored;
      break;
    }
    if (old_item != nullptr && req.compare_cas != 0 && req.compare_cas != old_item->cas) {
      res.status = StoreStatus::kExists;
      break;
    }
    const bool ready = fresh != nullptr && StillBuiltFrom(seen, seen_cas, old_item);
    if (!ready) {
      size_t len = req.value.size();
      uint32_t flags = req.client_flags;
      if (old_item != nullptr) {
        len += old_item->value_len;
        flags = old_item->client_flags;
      }
      if (!ItemFits(req.key.size(), flags, len)) {
        res.status = StoreStatus::kNotStored;  // memcached: the bigger item fails to allocate
        break;
      }
      seen = old_item != nullptr ? ItemRef::Share(old_item) : ItemRef();
      seen_cas = old_item != nullptr ? old_item->cas : 0;
      lock.unlock();
      if (fresh != nullptr) DiscardItem(fresh);
      fresh = NewItem(req.key, len);
      if (fresh == nullptr) {
        res.status = StoreStatus::kNotStored;
        break;
      }
      // The old value bytes never change, so copying them unlocked is safe.
      char* out = fresh->value_data();
      if (!seen) {
        std::memcpy(out, req.value.data(), req.value.size());
        fresh->client_flags = req.client_flags;
        fresh->exptime = ClampStoreTime(ToStoreTime(req.vivify_exptime));
      } else {
        const std::string_view old_value = seen->value();
        std::string_view first = append ? old_value : req.value;
        std::string_view second = append ? req.value : old_value;
        std::memcpy(out, first.data(), first.size());
        std::memcpy(out + first.size(), second.data(), second.size());
        fresh->client_flags = seen->client_flags;
      }
      continue;
    }

    if (old_item != nullptr) fresh->exptime = old_item->exptime;  // may have been touched
    fresh->cas = req.new_cas != 0 ? req.new_cas : NextCas();
    fresh->last_access = static_cast<int32_t>(t.now_s);
    StoreNewLocked(shard, f.item, fresh, hash, t);
    res.status = StoreStatus::kStored;
    res.cas = fresh->cas;
    res.stored_size = fresh->value_len;
    fresh = nullptr;
    break;
  }
  if (fresh != nullptr) DiscardItem(fresh);
  return res;
}

// ---------------------------------------------------------------------------
// Delete, Touch, Arithmetic.

DeleteStatus ItemStore::Delete(const DeleteRequest& req) {
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const int64_t new_exptime = req.has_ttl ? ToStoreTime(req.exptime) : 0;
  const Times t = Now();
  ShardLock lock(this, shard);
  const Found f = LookupLocked(shard, req.key, hash, t.now_s);
  Item* item = f.item;
  if (item == nullptr) return DeleteStatus::kNotFound;
  if (f.presence == Found::kPlaceholder) {
    UnlinkLocked(shard, item);  // cancels the lease; the key had no value
    return DeleteStatus::kNotFound;
  }
  if (f.presence == Found::kExpiredInGrace && !req.invalidate) {
    UnlinkLocked(shard, item);  // expired, as memcached sees it
    return DeleteStatus::kNotFound;
  }
  if (req.compare_cas != 0 && req.compare_cas != item->cas) return DeleteStatus::kExists;
  if (req.invalidate) {
    // md I: keep the value as stale, so the next reader wins and others get X.
    item->state |= kItemStale;
    shard.ClearTokenSent(item);
    WakeLocked(shard, item->key());  // the lease is cancelled
    item->cas = req.new_cas != 0 ? req.new_cas : NextCas();
    if (req.has_ttl) item->exptime = ClampStoreTime(new_exptime);
    return DeleteStatus::kDeleted;
  }
  UnlinkLocked(shard, item);
  return DeleteStatus::kDeleted;
}

bool ItemStore::Touch(std::string_view key, int64_t exptime) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  const int64_t new_exptime = ToStoreTime(exptime);
  const Times t = Now();
  ShardLock lock(this, shard);
  const Found f = LookupLocked(shard, key, hash, t.now_s);
  if (f.presence != Found::kLive) return false;
  // memcached: touch fetches with an LRU bump (marking the item fetched); the CAS stays.
  f.item->exptime = ClampStoreTime(new_exptime);
  f.item->state |= kItemFetched;
  f.item->last_access = static_cast<int32_t>(t.now_s);
  shard.LruBump(f.item);
  return true;
}

ArithResult ItemStore::Arithmetic(const ArithRequest& req) {
  ArithResult res;
  const uint64_t hash = HashKey(req.key);
  Shard& shard = ShardFor(hash);
  const int64_t ttl_exptime = req.has_ttl ? ToStoreTime(req.exptime) : 0;
  const int64_t vivify_exptime = req.has_vivify ? ToStoreTime(req.vivify_exptime) : 0;
  Item* fresh = nullptr;
  ItemRef seen;
  uint64_t seen_cas = 0;
  uint64_t value = 0;
  bool fits_in_place = false;   // memcached would rewrite the old item's bytes
  for (;;) {
    const Times t = Now();
    ShardLock lock(this, shard);
    const Found f = LookupLocked(shard, req.key, hash, t.now_s);
    Item* old_item = f.presence == Found::kLive ? f.item : nullptr;
    if (old_item == nullptr && !req.has_vivify) {
      res.status = ArithStatus::kNotFound;
      break;
    }
    if (old_item != nullptr) {
      // memcached's order: empty value, then CAS, then the number itself.
      if (old_item->value_len == 0) {
        res.status = ArithStatus::kNonNumeric;
        break;
      }
      if (req.compare_cas != 0 && req.compare_cas != old_item->cas) {
        res.status = ArithStatus::kExists;
        break;
      }
    }
    const bool ready = fresh != nullptr && StillBuiltFrom(seen, seen_cas, old_item);
    if (!ready) {
      size_t len;
      char digits[24];
      if (old_item == nullptr) {
        value = req.initial;  // ma N J: created with the initial value, no delta applied
        len = static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), value).ptr -
                                  digits);
      } else {
        uint64_t current;
        if (!ParseCounter(old_item->value(), &current)) {
          res.status = ArithStatus::kNonNumeric;
          break;
        }
        if (req.incr) value = current + req.delta;  // wraps mod 2^64
        else value = req.delta > current ? 0 : current - req.delta;
        len = static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), value).ptr -
                                  digits);
      }
      // memcached rewrites a number in place when it still fits, padding with
      // spaces ("10" decr 1 reads "9 "); a longer one gets a new item.
      fits_in_place = old_item != nullptr && len <= old_item->value_len;
      const size_t item_len = fits_in_place ? old_item->value_len : len;
      seen = old_item != nullptr ? ItemRef::Share(old_item) : ItemRef();
      seen_cas = old_item != nullptr ? old_item->cas : 0;
      lock.unlock();
      if (fresh != nullptr) DiscardItem(fresh);
      fresh = NewItem(req.key, item_len);
      if (fresh == nullptr) {
        res.status = ArithStatus::kNoMemory;
        break;
      }
      std::memcpy(fresh->value_data(), digits, len);
      std::memset(fresh->value_data() + len, ' ', item_len - len);
      continue;
    }

    res.created = old_item == nullptr;
    if (old_item != nullptr) {
      // Looks like memcached's in-place update: same flags, TTL and state bits.
      fresh->client_flags = old_item->client_flags;
      fresh->exptime = old_item->exptime;
      fresh->state = old_item->state & (kItemFetched | kItemStale | kItemTokenSent | kItemBinaryKey);
      fresh->lease_granted_ms = old_item->lease_granted_ms;
      fresh->delta_ms = old_item->delta_ms;
      fresh->last_access = old_item->last_access;
    } else {
      fresh->exptime = ClampStoreTime(vivify_exptime);
      fresh->last_access = static_cast<int32_t>(t.now_s);
    }
    res.ttl_before = TtlOf(fresh->exptime, t.now_s);
    if (req.has_ttl) fresh->exptime = ClampStoreTime(ttl_exptime);
    fresh->cas = req.new_cas != 0 ? req.new_cas : NextCas();
    ReplaceLocked(shard, f.item, fresh, hash, /*counts_as_new=*/!fits_in_place);
    res.status = ArithStatus::kOk;
    res.value = value;
    res.cas = fresh->cas;
    res.ttl = TtlOf(fresh->exptime, t.now_s);
    fresh = nullptr;
    break;
  }
  if (fresh != nullptr) DiscardItem(fresh);
  return res;
}

// ---------------------------------------------------------------------------
// Flush, expiry crawl, stats.

// Drops every item whose last store/touch/fetch was before `flushed_before`
// (everything when it is INT64_MAX).
size_t ItemStore::SweepAll(int64_t flushed_before) {
  size_t removed = 0;
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    ShardLock lock(this, shard);
    Item* item = shard.lru_head;
    while (item != nullptr) {
      Item* next = item->lru_next;
      if (item->last_access < flushed_before) {
        UnlinkLocked(shard, item);
        removed++;
      }
      item = next;
    }
  }
  return removed;
}

void ItemStore::FlushAll(int64_t delay_s) {
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

size_t ItemStore::ReclaimExpired(size_t budget) {
  // A delayed flush_all takes effect here, once, when its deadline passes:
  // its items go at once, and readers parked on them are woken (a lazy check
  // on access alone would leave them waiting for their lease to time out).
  size_t removed = 0;
  const int64_t deadline = flush_deadline_.load(std::memory_order_relaxed);
  if (deadline != 0 && NowSeconds() >= deadline &&
      flush_swept_.exchange(deadline, std::memory_order_relaxed) != deadline) {
    removed += SweepAll(deadline);
  }
  constexpr size_t kBucketsPerLock = 64;
  const size_t scan_limit = std::max<size_t>(budget * 16, 4096);
  size_t scanned = 0;
  while (removed < budget && scanned < scan_limit) {
    const size_t index = reclaim_cursor_.load(std::memory_order_relaxed) % shard_count_;
    Shard& shard = shards_[index];
    bool shard_done = false;
    {
      ShardLock lock(this, shard);
      const int64_t now_s = NowSeconds();
      for (size_t n = 0; n < kBucketsPerLock && removed < budget; n++, scanned++) {
        if (shard.reclaim_bucket >= shard.buckets.size()) {
          shard.reclaim_bucket = 0;
          shard_done = true;
          break;
        }
        Item* item = shard.buckets[shard.reclaim_bucket];
        while (item != nullptr) {
          Item* next = item->hash_next;
          // LookupLocked's rule: flushed, or expired beyond the stale grace.
          if (IsFlushed(item, now_s)) {
            UnlinkLocked(shard, item);
            removed++;
          } else if (IsExpired(item, now_s) &&
                     (Has(item, kItemPlaceholder | kItemNeedsValue) ||
                      int64_t{item->exptime} + config_.stale_grace_s <= now_s)) {
            CountRemovalLocked(shard, item, now_s, /*evicted=*/false);
            UnlinkLocked(shard, item);
            removed++;
          }
          item = next;
        }
        shard.reclaim_bucket++;
      }
    }
    if (shard_done) {
      reclaim_cursor_.fetch_add(1, std::memory_order_relaxed);
      scanned++;
    }
  }
  return removed;
}

StoreStats ItemStore::Stats() const {
  StoreStats s;
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    std::lock_guard<std::mutex> lock(shard.mu);
    const StoreStats& c = shard.counters;
    s.curr_items += shard.item_count;
    s.bytes += shard.bytes;
    s.curr_leases += shard.leases_out;
    s.hash_buckets += shard.buckets.size();
    s.total_items += c.total_items;
    s.evictions += c.evictions;
    s.reclaimed += c.reclaimed;
    s.expired_unfetched += c.expired_unfetched;
    s.evicted_unfetched += c.evicted_unfetched;
    s.lease_grants += c.lease_grants;
    s.lease_fulfilled += c.lease_fulfilled;
    s.lease_timeouts += c.lease_timeouts;
    s.lease_sets_refused += c.lease_sets_refused;
    s.xfetch_grants += c.xfetch_grants;
    s.stale_hits += c.stale_hits;
  }
  s.total_malloced = memory_used_.load(std::memory_order_relaxed);
  return s;
}

void ItemStore::ResetStats() {
  for (size_t i = 0; i < shard_count_; i++) {
    Shard& shard = shards_[i];
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.counters = StoreStats();
  }
}

}  // namespace herdless
