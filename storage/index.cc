// Index. Reading order: tables and overflow buckets, insert and erase, growth.
#include "storage/index.h"

#include <sys/mman.h>

#include <cassert>
#include <cstring>
#include <new>

namespace herdless {
namespace {

constexpr size_t kInitialBuckets = 64;   // one 4 KiB page
constexpr size_t kOverflowChunk = 256;   // overflow buckets are allocated this many at a time
constexpr uint64_t kLinkIndexMask = (uint64_t{1} << slot::kSegmentShift) - 1;

uint64_t LinkTo(uint32_t overflow) {
  return (uint64_t{slot::kLinkSegment} << slot::kSegmentShift) | overflow;
}

bool IsLink(uint64_t s) { return slot::Segment(s) == slot::kLinkSegment; }

}  // namespace

Index::Index() {
  table_ = NewTable(kInitialBuckets);
  if (table_.buckets == nullptr) throw std::bad_alloc();
  PublishHint();
}

// While growing, the old table holds most keys' buckets until the last moves.
void Index::PublishHint() {
  const Table& t = old_.buckets != nullptr ? old_ : table_;
  hint_mask_.store(t.mask, std::memory_order_relaxed);
  hint_buckets_.store(t.buckets, std::memory_order_relaxed);
}

Index::~Index() {
  if (table_.buckets != nullptr) munmap(table_.buckets, table_.bytes);
  if (old_.buckets != nullptr) munmap(old_.buckets, old_.bytes);
  for (Retired& r : retired_) r.Release();
}

void Index::Retired::Release() {
  if (mem != nullptr) munmap(mem, bytes);
  mem = nullptr;
}

// A table comes from mmap: its zero pages cost nothing until used, so mapping
// a big one under the shard lock takes no time proportional to its size.
Index::Table Index::NewTable(size_t buckets) {
  Table t;
  const size_t bytes = buckets * sizeof(Bucket);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return t;
  t.buckets = static_cast<Bucket*>(mem);
  t.mask = buckets - 1;
  t.bytes = bytes;
  return t;
}

size_t Index::MemoryBytes() const {
  return table_.bytes + old_.bytes + overflow_chunks_.size() * kOverflowChunk * sizeof(Bucket);
}

Index::Bucket* Index::Next(const Bucket* b) const {
  const uint64_t last = b->slots[kSlotsPerBucket - 1];
  if (!IsLink(last)) return nullptr;
  const uint64_t i = last & kLinkIndexMask;
  return &overflow_chunks_[i / kOverflowChunk][i % kOverflowChunk];
}

uint32_t Index::NewOverflow() {
  uint32_t i;
  if (!overflow_free_.empty()) {
    i = overflow_free_.back();
    overflow_free_.pop_back();
  } else {
    if (overflow_used_ == overflow_chunks_.size() * kOverflowChunk) {
      overflow_chunks_.push_back(std::make_unique<Bucket[]>(kOverflowChunk));
    }
    i = static_cast<uint32_t>(overflow_used_++);
  }
  std::memset(&overflow_chunks_[i / kOverflowChunk][i % kOverflowChunk], 0, sizeof(Bucket));
  return i;
}

void Index::FreeChain(Bucket* first) {
  for (Bucket* b = first; b != nullptr;) {
    const uint64_t last = b->slots[kSlotsPerBucket - 1];
    if (!IsLink(last)) break;
    overflow_free_.push_back(static_cast<uint32_t>(last & kLinkIndexMask));
    b = Next(b);
  }
}

// ---------------------------------------------------------------------------
// Insert and erase.

// Puts `value` in the first empty slot of the chain, else over its first
// ghost, else in a new overflow bucket (which takes over the last slot's
// entry, the slot becoming the link).
void Index::InsertInto(Bucket* b, uint64_t value) {
  uint64_t* ghost = nullptr;
  Bucket* last = b;
  for (; b != nullptr; b = Next(b)) {
    last = b;
    for (uint64_t& s : b->slots) {
      if (s == slot::kEmpty) {
        s = value;
        return;
      }
      if (ghost == nullptr && slot::IsGhost(s)) ghost = &s;
    }
  }
  if (ghost != nullptr) {
    *ghost = value;
    return;
  }
  const uint32_t i = NewOverflow();
  Bucket& fresh = overflow_chunks_[i / kOverflowChunk][i % kOverflowChunk];
  fresh.slots[0] = last->slots[kSlotsPerBucket - 1];
  fresh.slots[1] = value;
  last->slots[kSlotsPerBucket - 1] = LinkTo(i);
}

void Index::Insert(uint64_t hash, uint64_t item_slot, const SlotHasher& hasher) {
  assert(slot::IsItem(item_slot));
  InsertInto(BucketFor(hash), item_slot);
  items_++;
  if (old_.buckets != nullptr) {
    for (size_t n = 0; n < kMovesPerInsert && old_.buckets != nullptr; n++) MoveOneBucket(hasher);
  } else {
    MaybeGrow(hasher);
  }
}

void Index::Erase(uint64_t* item_slot) {
  assert(slot::IsItem(*item_slot));
  *item_slot = slot::kEmpty;
  items_--;
}

void Index::EraseToGhost(uint64_t* item_slot, uint32_t stamp) {
  assert(slot::IsItem(*item_slot));
  *item_slot = slot::Make(slot::kGhostSegment, stamp, slot::Tag(*item_slot), 0, 0);
  items_--;
}

uint64_t* Index::FindLocation(uint64_t hash, uint32_t segment, uint32_t offset) {
  for (Bucket* b = BucketFor(hash); b != nullptr; b = Next(b)) {
    for (uint64_t& s : b->slots) {
      if (slot::IsItem(s) && slot::Segment(s) == segment && slot::Offset(s) == offset) return &s;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Growth.

void Index::MaybeGrow(const SlotHasher& hasher) {
  if (items_ <= kGrowAtItemsPerBucket * table_.size()) return;
  Table bigger = NewTable(table_.size() * 2);
  if (bigger.buckets == nullptr) return;   // no memory: chains grow longer instead
  old_ = table_;
  table_ = bigger;
  moved_ = 0;
  PublishHint();
  MoveOneBucket(hasher);
}

// Moves the next bucket of the old table (and its overflow chain) into the
// new one: every item slot is rehashed from its item's key; ghosts are
// dropped. At most 8 slots per bucket of chain: a bounded step.
void Index::MoveOneBucket(const SlotHasher& hasher) {
  Bucket* b = &old_.buckets[moved_];
  uint64_t values[kSlotsPerBucket];
  std::vector<uint64_t> more;   // only for buckets with an overflow chain
  size_t n = 0;
  for (Bucket* c = b; c != nullptr; c = Next(c)) {
    for (uint64_t s : c->slots) {
      if (!slot::IsItem(s)) continue;
      if (n < kSlotsPerBucket) values[n++] = s;
      else more.push_back(s);
    }
  }
  FreeChain(b);
  std::memset(b, 0, sizeof(Bucket));
  moved_++;
  for (size_t i = 0; i < n; i++) {
    InsertInto(&table_.buckets[hasher.HashOf(values[i]) & table_.mask], values[i]);
  }
  for (uint64_t s : more) InsertInto(&table_.buckets[hasher.HashOf(s) & table_.mask], s);
  if (moved_ == old_.size()) {
    retired_.push_back(Retired{old_.buckets, old_.bytes});
    old_ = Table();
    moved_ = 0;
    PublishHint();
  }
}

void Index::Reserve(size_t items) {
  if (items_ != 0 || old_.buckets != nullptr) return;
  size_t buckets = table_.size();
  while (items > kGrowAtItemsPerBucket * buckets) buckets *= 2;
  if (buckets == table_.size()) return;
  Table bigger = NewTable(buckets);
  if (bigger.buckets == nullptr) return;   // no memory: it grows as it fills instead
  // Overflow buckets of the empty table hold nothing (only ghosts) either.
  overflow_chunks_.clear();
  overflow_free_.clear();
  overflow_used_ = 0;
  retired_.push_back(Retired{table_.buckets, table_.bytes});
  table_ = bigger;
  PublishHint();
}

void Index::FinishGrowth(const SlotHasher& hasher) {
  while (old_.buckets != nullptr) MoveOneBucket(hasher);
}

}  // namespace herdless
