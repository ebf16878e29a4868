// SegmentPool: item memory. Items are appended one after another into fixed
// segments (one size per store, 64 KiB to 1 MiB, chosen from -m); an item too
// big for that gets a jumbo segment of its own (one malloc). The segment is the
// unit of memory accounting, of eviction (storage/eviction.h) and of reader
// pins: an ItemRef pins the segment its item lives in, and a retired
// segment's memory is reused only once its last pin is gone. Items carry no
// per-item pointer, refcount or size class, and waste nothing to rounding.
//
// Every segment has a 24-bit id: the index stores ids and offsets, not
// pointers. Get(id) is lock-free. The pool keeps the memory budget (-m): used
// bytes count fixed segments in use (not free), jumbo blocks and side-table
// charges. Thread-safe; Segment's fields say what guards them.
#ifndef HERDLESS_STORAGE_SEGMENTS_H_
#define HERDLESS_STORAGE_SEGMENTS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace herdless {

class SegmentPool;

enum class SegmentState : uint8_t {
  kFree,      // in the pool
  kOpen,      // items are being appended to it
  kQueued,    // sealed, in an eviction queue
  kEvicting,  // taken by an evictor, which walks its items
  kRetired,   // nothing linked in it: reused when its last pin is released
};

enum class SegmentQueue : uint8_t { kSmall, kMain };

class Segment {
 public:
  static constexpr uint64_t kRetiredBit = uint64_t{1} << 63;

  // Fixed while the segment is in use.
  uint32_t id = 0;
  bool jumbo = false;
  char* base = nullptr;
  uint32_t capacity = 0;          // bytes
  SegmentPool* pool = nullptr;
  int64_t created_s = 0;          // store seconds when it was taken

  // Appending (storage/eviction.h): `reserved` grows under the appender's lock
  // while the segment is open and is final once it is sealed. `written` counts
  // the bytes of items fully written and linked (release order): a walker that
  // reads written == reserved sees every item and its index slot.
  uint32_t reserved = 0;
  std::atomic<uint32_t> written{0};
  // Items whose index slot points into this segment, and their bytes.
  std::atomic<uint32_t> live_items{0};
  std::atomic<uint64_t> live_bytes{0};
  // Readers' pins, plus kRetiredBit once it is retired.
  std::atomic<uint64_t> pins{0};
  // Bit c: an item of size class c was linked here since it was taken (for
  // the classes' ages: ItemStore::ClassAges). Never cleared while in use.
  std::atomic<uint64_t> classes{0};

  // Where the segment is. Changed by its owner of the moment (the pool, its
  // appender, the queues' lock, its evictor); atomic because a late
  // OnEmptied may read it while its evictor retires it.
  std::atomic<SegmentState> state{SegmentState::kFree};
  // Guarded by the eviction queues' lock (storage/eviction.h).
  SegmentQueue queue = SegmentQueue::kSmall;
  Segment* prev = nullptr;
  Segment* next = nullptr;

  // Takes a pin. Only while something in the segment is linked and seen under
  // its shard's lock (a retired segment is never pinned anew).
  void Pin() { pins.fetch_add(1, std::memory_order_relaxed); }
  char* At(uint32_t offset) const { return base + offset; }
};

class SegmentPool {
 public:
  static constexpr uint32_t kMaxId = (uint32_t{1} << 24) - 3;  // the index keeps 2 ids
  static constexpr size_t kMaxSegment = size_t{1} << 20;

  // The segment size for a memory limit: about 1/512 of it, a power of two
  // between 64 KiB and 1 MiB (and at most a quarter of a tiny limit).
  static size_t SegmentSizeFor(size_t memory_limit);
  // Items up to this size are appended to fixed segments; bigger ones get a
  // jumbo segment. A quarter of a segment (16 KiB or more): appends copy at
  // most that much under a shard lock, the unused tail a too-big item leaves
  // at a segment's end stays small, and few items are single allocations
  // (whose freed memory the allocator keeps).
  size_t max_fixed_item() const { return segment_size_ / 4; }

  SegmentPool(size_t segment_size, size_t limit);
  ~SegmentPool();  // no segment may still be pinned (AnyPinned() is false)
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  size_t segment_size() const { return segment_size_; }

  // A free fixed segment (state kOpen, empty), or nullptr when the budget
  // allows no more. `beyond_limit`: the evictor's copies may use one segment
  // past the limit, given back as soon as the victim is retired.
  Segment* TakeFixed(int64_t now_s, bool beyond_limit);

  // A jumbo segment with room for `bytes` (state kQueued's caller sets), or
  // nullptr when the budget has no room or malloc fails. Charges its block;
  // `beyond_limit` bytes past the limit are allowed (transient buffers).
  Segment* NewJumbo(size_t bytes, int64_t now_s, size_t beyond_limit = 0);
  // Bytes a jumbo of `bytes` charges.
  static size_t JumboCharge(size_t bytes);

  // The segment with this id (never nullptr for an id an index slot holds).
  Segment* Get(uint32_t id) const {
    return tables_[id >> kTableBits].load(std::memory_order_acquire)[id & kTableMask];
  }

  // Nothing in the segment is linked any more: it goes back to the pool (a
  // jumbo is freed) once its last pin is released, maybe at once.
  void Retire(Segment* s);
  // Called by ReleasePin for the last pin of a retired segment.
  void Recycle(Segment* s);

  // The budget, in bytes.
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_.load(std::memory_order_relaxed); }
  void set_limit(size_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  // Side tables' memory, counted in the budget.
  void Charge(size_t bytes) { used_.fetch_add(bytes, std::memory_order_relaxed); }
  void Uncharge(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Introspection (stats, tests).
  size_t FixedInUse() const;     // fixed segments not free
  size_t FixedFree() const;      // mapped and free
  uint64_t FixedRecycled() const { return recycled_.load(std::memory_order_relaxed); }
  size_t JumboCount() const;
  bool AnyPinned() const;

 private:
  static constexpr int kTableBits = 12;
  static constexpr uint32_t kTableMask = (uint32_t{1} << kTableBits) - 1;
  static constexpr size_t kTables = (size_t{1} << 24) >> kTableBits;

  bool ChargeIfRoom(size_t bytes, size_t extra_allowed);
  uint32_t NewIdLocked(Segment* s);  // mu_ held; 0 when ids ran out
  bool MapRegionLocked();            // mu_ held: more free fixed segments

  const size_t segment_size_;
  std::atomic<size_t> used_{0};
  std::atomic<size_t> limit_;
  std::atomic<uint64_t> recycled_{0};       // fixed segments put back on the free list

  mutable std::mutex mu_;
  std::vector<Segment*> free_fixed_;        // guarded by mu_
  std::vector<std::unique_ptr<Segment>> fixed_;  // guarded by mu_: every fixed segment
  std::vector<void*> regions_;              // guarded by mu_: mappings, for the destructor
  size_t region_bytes_ = 0;
  std::vector<uint32_t> free_ids_;          // guarded by mu_
  uint32_t next_id_ = 1;                    // guarded by mu_
  size_t jumbos_ = 0;                       // guarded by mu_
  std::unique_ptr<std::atomic<Segment**>[]> tables_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_SEGMENTS_H_
