// Index: key -> item location, for one shard. A table of 64-byte buckets of
// eight 64-bit slots (a bucket is one cache line); a full bucket chains an
// overflow bucket through its last slot. A slot holds all the per-item
// metadata that is not in the item itself:
//
//   segment id (24 bits) | offset (20) | tag (12) | state (6) | frequency (2)
//
// The tag is 12 more bits of the key's hash: a lookup reads an item (and
// compares its key) only when the tag matches. State bits are ItemState;
// frequency is the eviction's access counter (storage/eviction.h). A slot
// whose segment is kGhostSegment holds only a tag and a stamp: a key
// recently evicted from the small queue; ghosts live in slots that would
// otherwise be empty, and any insert may take them.
//
// Growth never stops the shard for a whole rehash: when the items reach six
// per bucket a table twice as big is mapped (zero pages, no clearing), and
// every insert then moves two buckets of the old table into it; lookups look
// in whichever table holds the key's bucket. Walk() visits every bucket with
// a reverse-binary cursor (as Redis's SCAN) that stays valid across growth: an
// item present for the whole walk is visited exactly once.
//
// The index knows no keys: callers compare keys (Find's matcher) and say how
// to hash a slot's item when a bucket moves (SlotHasher). Not thread-safe:
// the shard's lock guards it (all but BucketHint, a prefetch address for any thread). Slot pointers are valid until the next change.
#ifndef HERDLESS_STORAGE_INDEX_H_
#define HERDLESS_STORAGE_INDEX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace herdless {

inline uint64_t ReverseBits(uint64_t v) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
  return __builtin_bswap64(v);
}

// Bits of a slot's state.
enum ItemState : uint8_t {
  kItemFetched = 1 << 0,      // read at least once since stored
  kItemStale = 1 << 1,        // invalidated by a delete or store (not by its expiry)
  kItemTokenSent = 1 << 2,    // a lease (the right to recompute the value) is out
  kItemNeedsValue = 1 << 3,   // a stub a read made (create_on_miss, placeholder): no value yet
  kItemPlaceholder = 1 << 4,  // lease-only stub: invisible to reads that would not create one
  kItemBinaryKey = 1 << 5,    // stored with a binary key (StoreRequest::binary_key)
};

namespace slot {
constexpr int kFreqBits = 2, kStateBits = 6, kTagBits = 12, kOffsetBits = 20, kSegmentBits = 24;
constexpr int kStateShift = kFreqBits;
constexpr int kTagShift = kStateShift + kStateBits;
constexpr int kOffsetShift = kTagShift + kTagBits;
constexpr int kSegmentShift = kOffsetShift + kOffsetBits;
constexpr uint32_t kGhostSegment = (uint32_t{1} << kSegmentBits) - 1;
constexpr uint32_t kLinkSegment = kGhostSegment - 1;
constexpr uint64_t kEmpty = 0;

inline uint32_t Segment(uint64_t s) { return static_cast<uint32_t>(s >> kSegmentShift); }
inline uint32_t Offset(uint64_t s) { return static_cast<uint32_t>(s >> kOffsetShift) & ((1u << kOffsetBits) - 1); }
inline uint16_t Tag(uint64_t s) { return static_cast<uint16_t>(s >> kTagShift) & ((1u << kTagBits) - 1); }
inline uint8_t State(uint64_t s) { return static_cast<uint8_t>(s >> kStateShift) & ((1u << kStateBits) - 1); }
inline uint8_t Freq(uint64_t s) { return static_cast<uint8_t>(s) & ((1u << kFreqBits) - 1); }
inline bool IsItem(uint64_t s) { return s != kEmpty && Segment(s) < kLinkSegment; }
inline bool IsGhost(uint64_t s) { return Segment(s) == kGhostSegment; }

inline uint64_t Make(uint32_t segment, uint32_t offset, uint16_t tag, uint8_t state, uint8_t freq) {
  return (uint64_t{segment} << kSegmentShift) | (uint64_t{offset} << kOffsetShift) |
         (uint64_t{tag} << kTagShift) | (uint64_t{state} << kStateShift) | freq;
}
constexpr uint64_t kBelowOffset = (uint64_t{1} << kOffsetShift) - 1;
constexpr uint64_t kStateMask = ((uint64_t{1} << kStateBits) - 1) << kStateShift;
constexpr uint64_t kFreqMask = (uint64_t{1} << kFreqBits) - 1;
inline uint64_t WithLocation(uint64_t s, uint32_t segment, uint32_t offset) {
  return (s & kBelowOffset) | (uint64_t{segment} << kSegmentShift) | (uint64_t{offset} << kOffsetShift);
}
inline uint64_t WithState(uint64_t s, uint8_t state) {
  return (s & ~kStateMask) | (uint64_t{state} << kStateShift);
}
inline uint64_t WithFreq(uint64_t s, uint8_t freq) { return (s & ~kFreqMask) | freq; }
// A key made of the location alone (side tables keyed by item).
inline uint64_t LocationKey(uint64_t s) { return s >> kOffsetShift; }
}  // namespace slot

// Hashes the key of the item a slot points to (used when a bucket moves).
class SlotHasher {
 public:
  virtual ~SlotHasher() = default;
  virtual uint64_t HashOf(uint64_t slot) const = 0;
};

class Index {
 public:
  static constexpr size_t kSlotsPerBucket = 8;
  static constexpr size_t kGrowAtItemsPerBucket = 6;
  static constexpr size_t kMovesPerInsert = 2;

  Index();
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  static uint16_t TagOf(uint64_t hash) {
    return static_cast<uint16_t>(hash >> 32) & ((1u << slot::kTagBits) - 1);
  }

  // The slot of the item whose key hashes to `hash`: the first item slot with
  // the hash's tag for which matches(slot) is true. nullptr when none.
  template <typename Matcher>
  uint64_t* Find(uint64_t hash, Matcher&& matches);
  // Where a lookup of `hash` starts, for a prefetch on any thread without the shard's lock: a
  // copy of the table's address and mask kept in atomics, so it may be stale (an older or
  // unmapped table). A hint to prefetch, never to dereference.
  const void* BucketHint(uint64_t hash) const {
    return hint_buckets_.load(std::memory_order_relaxed) + (hash & hint_mask_.load(std::memory_order_relaxed));
  }
  // The item slot pointing at (segment, offset) among the slots of `hash`'s bucket.
  uint64_t* FindLocation(uint64_t hash, uint32_t segment, uint32_t offset);

  // Adds an item slot (the key must be absent); may move a few buckets of an
  // ongoing growth, and start one.
  void Insert(uint64_t hash, uint64_t item_slot, const SlotHasher& hasher);
  // Removes an item slot (a pointer Find returned).
  void Erase(uint64_t* item_slot);
  // Turns an item slot into a ghost of its key with `stamp` (20 bits).
  void EraseToGhost(uint64_t* item_slot, uint32_t stamp);
  // Finds a ghost of `hash` for which fresh(stamp) holds and removes it
  // (stale ghosts met on the way are cleared). True when one was found.
  template <typename Fresh>
  bool TakeGhost(uint64_t hash, Fresh&& fresh);

  // Walks the table: visits every item slot of the bucket(s) at `cursor`
  // (visit(uint64_t* slot)), up to `max_buckets` cursor positions, and returns
  // the next cursor; 0 when the walk is complete. Start with 0.
  template <typename Visitor>
  uint64_t Walk(uint64_t cursor, size_t max_buckets, Visitor&& visit);

  // Sizes an index that holds nothing yet for `items` at once (a snapshot
  // being loaded), so that inserting them moves no bucket; the table is the
  // one growth would have reached. Does nothing to an index in use.
  void Reserve(size_t items);

  // Finishes an ongoing growth (tests; the store never needs to).
  void FinishGrowth(const SlotHasher& hasher);

  size_t items() const { return items_; }
  size_t buckets() const { return table_.size(); }   // of the newest table
  bool growing() const { return old_.buckets != nullptr; }
  size_t MemoryBytes() const;

  // Tables retired by a finished growth, to unmap once the shard's lock is
  // released (Release() them then).
  struct Retired {
    void* mem = nullptr;
    size_t bytes = 0;
    void Release();
  };
  bool has_retired() const { return !retired_.empty(); }
  std::vector<Retired> TakeRetired() {
    std::vector<Retired> out;
    out.swap(retired_);
    return out;
  }

 private:
  struct alignas(64) Bucket {
    uint64_t slots[kSlotsPerBucket];
  };
  struct Table {
    Bucket* buckets = nullptr;
    size_t mask = 0;      // buckets - 1
    size_t bytes = 0;     // of the mapping
    size_t size() const { return buckets == nullptr ? 0 : mask + 1; }
  };

  static Table NewTable(size_t buckets);
  Bucket* BucketFor(uint64_t hash);
  Bucket* Next(const Bucket* b) const;   // its overflow bucket, or nullptr
  uint32_t NewOverflow();                // index of a zeroed overflow bucket
  void FreeChain(Bucket* first);          // gives back first's overflow buckets
  void InsertInto(Bucket* first, uint64_t value);
  void MoveOneBucket(const SlotHasher& hasher);
  void MaybeGrow(const SlotHasher& hasher);
  template <typename Visitor>
  void VisitChain(Bucket* b, Visitor& visit);
  void PublishHint();   // BucketHint's copy: the table most lookups start in

  Table table_;             // the newest table
  Table old_;               // while growing: the table being emptied into table_
  size_t moved_ = 0;        // buckets of old_ already moved
  size_t items_ = 0;
  // Overflow buckets, by index (the link slot's value); chunks never move.
  std::vector<std::unique_ptr<Bucket[]>> overflow_chunks_;
  std::vector<uint32_t> overflow_free_;
  size_t overflow_used_ = 0;
  std::vector<Retired> retired_;
  std::atomic<Bucket*> hint_buckets_{nullptr};
  std::atomic<size_t> hint_mask_{0};
};

// ---------------------------------------------------------------------------
// Templates.

inline Index::Bucket* Index::BucketFor(uint64_t hash) {
  if (old_.buckets != nullptr) {
    const size_t i = hash & old_.mask;
    if (i >= moved_) return &old_.buckets[i];
  }
  return &table_.buckets[hash & table_.mask];
}

template <typename Matcher>
uint64_t* Index::Find(uint64_t hash, Matcher&& matches) {
  const uint16_t tag = TagOf(hash);
  for (Bucket* b = BucketFor(hash); b != nullptr; b = Next(b)) {
    for (uint64_t& s : b->slots) {
      // The tag first: it rules out nearly every slot in one compare.
      if (slot::Tag(s) == tag && slot::IsItem(s) && matches(s)) return &s;
    }
  }
  return nullptr;
}

template <typename Fresh>
bool Index::TakeGhost(uint64_t hash, Fresh&& fresh) {
  const uint16_t tag = TagOf(hash);
  for (Bucket* b = BucketFor(hash); b != nullptr; b = Next(b)) {
    for (uint64_t& s : b->slots) {
      if (!slot::IsGhost(s)) continue;
      const bool fresh_ghost = fresh(slot::Offset(s));
      if (!fresh_ghost) {
        s = slot::kEmpty;
      } else if (slot::Tag(s) == tag) {
        s = slot::kEmpty;
        return true;
      }
    }
  }
  return false;
}

template <typename Visitor>
void Index::VisitChain(Bucket* b, Visitor& visit) {
  for (; b != nullptr; b = Next(b)) {
    for (uint64_t& s : b->slots) {
      if (slot::IsItem(s)) visit(&s);
    }
  }
}

// Reverse-binary iteration (Redis's dictScan): the cursor's bits are counted
// from the top, so the buckets already visited at one table size are exactly
// the ones whose children are visited at twice the size.
template <typename Visitor>
uint64_t Index::Walk(uint64_t cursor, size_t max_buckets, Visitor&& visit) {
  auto rev_increment = [](uint64_t v, uint64_t mask) {
    v |= ~mask;
    v = ReverseBits(v);
    v++;
    return ReverseBits(v);
  };
  uint64_t v = cursor;
  for (size_t n = 0; n < max_buckets; n++) {
    if (old_.buckets == nullptr) {
      const uint64_t m0 = table_.mask;
      VisitChain(&table_.buckets[v & m0], visit);
      v = rev_increment(v, m0);
    } else {
      // old_ is the smaller table: visit its bucket, then the buckets of the
      // bigger table that it expands into.
      const uint64_t m0 = old_.mask;
      const uint64_t m1 = table_.mask;
      if ((v & m0) >= moved_) VisitChain(&old_.buckets[v & m0], visit);
      do {
        VisitChain(&table_.buckets[v & m1], visit);
        v = rev_increment(v, m1);
      } while (v & (m0 ^ m1));
    }
    if (v == 0) return 0;
  }
  return v;
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_INDEX_H_
