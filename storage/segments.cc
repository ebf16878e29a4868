// SegmentPool. Reading order: sizes, the id table, fixed segments (regions,
// take, retire, recycle), jumbo segments, pins.
//
// Fixed segments are carved from mmap'd regions and never unmapped while the
// pool lives; a recycled one beyond the few kept warm gives its memory back
// (MADV_DONTNEED), so RSS follows what is in use after a flush or a lowered
// limit. Under ASan a free segment is poisoned, so a reader that outlives its
// pin is reported.
#include "storage/segments.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "config.h"
#include "storage/item.h"

#ifdef HERDLESS_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

namespace herdless {
namespace {

constexpr size_t kRegionBytes = size_t{16} << 20;  // fixed segments are mapped this much at a time
constexpr size_t kWarmFree = 2;   // free segments kept resident for the next appends

// Jumbo blocks. With jemalloc they come from one arena of their own, past the
// threads' caches: with the default per-CPU arenas a block freed on one worker
// was not reused by the next jumbo of another, and every busy arena kept its
// own freed blocks dirty, so RSS beyond -m grew with the load
// (docs/reliability.md: test_memory_bound's overhead, 21.3 MB before, 13.3 MB
// with the arena, on a machine at load 7-10).
#ifdef HERDLESS_JEMALLOC
int JumboFlags() {
  static const int flags = [] {
    unsigned arena = 0;
    size_t size = sizeof arena;
    if (mallctl("arenas.create", &arena, &size, nullptr, 0) != 0) return MALLOCX_TCACHE_NONE;
    return static_cast<int>(MALLOCX_ARENA(arena)) | MALLOCX_TCACHE_NONE;
  }();
  return flags;
}
char* AllocateJumbo(size_t bytes) { return static_cast<char*>(mallocx(bytes, JumboFlags())); }
void FreeJumbo(char* block) { dallocx(block, MALLOCX_TCACHE_NONE); }
#else
char* AllocateJumbo(size_t bytes) { return static_cast<char*>(std::malloc(bytes)); }
void FreeJumbo(char* block) { std::free(block); }
#endif

size_t FloorPow2(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

size_t SegmentPool::SegmentSizeFor(size_t memory_limit) {
  constexpr size_t kSmallest = size_t{64} << 10;
  const size_t size = std::clamp(FloorPow2(std::max<size_t>(memory_limit / 512, 1)), kSmallest, kMaxSegment);
  // A limit of a few KiB (tests, a tiny cache_memlimit) still gets four segments.
  return std::min(size, std::max<size_t>(1024, FloorPow2(std::max<size_t>(memory_limit / 4, 1))));
}

SegmentPool::SegmentPool(size_t segment_size, size_t limit)
    : segment_size_(segment_size),
      limit_(limit),
      tables_(std::make_unique<std::atomic<Segment**>[]>(kTables)) {
  assert(segment_size <= kMaxSegment && (segment_size & (segment_size - 1)) == 0);
  region_bytes_ = std::max(segment_size_, std::min(kRegionBytes, segment_size_ * 16));
}

SegmentPool::~SegmentPool() {
  for (size_t t = 0; t < kTables; t++) delete[] tables_[t].load(std::memory_order_relaxed);
  for (void* region : regions_) {
    ASAN_UNPOISON_MEMORY_REGION(region, region_bytes_);
    munmap(region, region_bytes_);
  }
}

// ---------------------------------------------------------------------------
// Ids: a two-level table, so Get() needs no lock and ids can grow to 2^24.

uint32_t SegmentPool::NewIdLocked(Segment* s) {
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    if (next_id_ > kMaxId) return 0;
    id = next_id_++;
  }
  std::atomic<Segment**>& table = tables_[id >> kTableBits];
  Segment** slots = table.load(std::memory_order_relaxed);
  if (slots == nullptr) {
    slots = new Segment*[size_t{1} << kTableBits]();
    table.store(slots, std::memory_order_release);
  }
  slots[id & kTableMask] = s;
  s->id = id;
  return id;
}

// ---------------------------------------------------------------------------
// Budget.

bool SegmentPool::ChargeIfRoom(size_t bytes, size_t extra_allowed) {
  size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + bytes > limit_.load(std::memory_order_relaxed) + extra_allowed) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

// ---------------------------------------------------------------------------
// Fixed segments.

bool SegmentPool::MapRegionLocked() {
  void* mem = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  regions_.push_back(mem);
  char* base = static_cast<char*>(mem);
  // Handed out from the lowest address up.
  for (size_t off = region_bytes_; off >= segment_size_; off -= segment_size_) {
    auto s = std::make_unique<Segment>();
    s->pool = this;
    s->base = base + off - segment_size_;
    s->capacity = static_cast<uint32_t>(segment_size_);
    if (NewIdLocked(s.get()) == 0) return !free_fixed_.empty();
    ASAN_POISON_MEMORY_REGION(s->base, segment_size_);
    free_fixed_.push_back(s.get());
    fixed_.push_back(std::move(s));
  }
  return true;
}

Segment* SegmentPool::TakeFixed(int64_t now_s, bool beyond_limit) {
  if (!ChargeIfRoom(segment_size_, beyond_limit ? segment_size_ : 0)) return nullptr;
  Segment* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_fixed_.empty()) MapRegionLocked();
    if (!free_fixed_.empty()) {
      s = free_fixed_.back();
      free_fixed_.pop_back();
    }
  }
  if (s == nullptr) {
    used_.fetch_sub(segment_size_, std::memory_order_relaxed);
    return nullptr;
  }
  ASAN_UNPOISON_MEMORY_REGION(s->base, segment_size_);
  s->created_s = now_s;
  s->reserved = 0;
  s->written.store(0, std::memory_order_relaxed);
  s->live_items.store(0, std::memory_order_relaxed);
  s->live_bytes.store(0, std::memory_order_relaxed);
  s->pins.store(0, std::memory_order_relaxed);
  s->classes.store(0, std::memory_order_relaxed);
  s->state.store(SegmentState::kOpen, std::memory_order_relaxed);
  s->prev = s->next = nullptr;
  return s;
}

void SegmentPool::Retire(Segment* s) {
  // Whoever sees the count reach zero with the bit set recycles: this call,
  // or the release of the last pin (ReleasePin).
  s->state.store(SegmentState::kRetired, std::memory_order_relaxed);
  if (s->pins.fetch_or(Segment::kRetiredBit, std::memory_order_acq_rel) == 0) Recycle(s);
}

void SegmentPool::Recycle(Segment* s) {
  if (s->jumbo) {
    const size_t charge = JumboCharge(s->capacity);
    {
      std::lock_guard<std::mutex> lock(mu_);
      tables_[s->id >> kTableBits].load(std::memory_order_relaxed)[s->id & kTableMask] = nullptr;
      free_ids_.push_back(s->id);
      jumbos_--;
    }
    FreeJumbo(s->base);
    delete s;
    used_.fetch_sub(charge, std::memory_order_relaxed);
    return;
  }
  s->state.store(SegmentState::kFree, std::memory_order_relaxed);
  // A segment smaller than a page (a limit of a few KiB) shares its page
  // with others: its memory cannot be given back alone.
  static const size_t page_bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bool release_memory = segment_size_ % page_bytes == 0;
  if (release_memory) {
    std::lock_guard<std::mutex> lock(mu_);
    release_memory = free_fixed_.size() >= kWarmFree;
  }
  // Before it is on the free list: once there, it may be taken and written at once.
  if (release_memory) madvise(s->base, segment_size_, MADV_DONTNEED);
  ASAN_POISON_MEMORY_REGION(s->base, segment_size_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_fixed_.push_back(s);
  }
  used_.fetch_sub(segment_size_, std::memory_order_relaxed);
  recycled_.fetch_add(1, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Jumbo segments.

size_t SegmentPool::JumboCharge(size_t bytes) {
#ifdef HERDLESS_JEMALLOC
  return nallocx(bytes, JumboFlags()) + sizeof(Segment);
#else
  return ((bytes + 8 + 15) & ~size_t{15}) + sizeof(Segment);   // glibc's chunk rounding
#endif
}

Segment* SegmentPool::NewJumbo(size_t bytes, int64_t now_s, size_t beyond_limit) {
  const size_t charge = JumboCharge(bytes);
  if (!ChargeIfRoom(charge, beyond_limit)) return nullptr;
  char* mem = AllocateJumbo(bytes);
  if (mem == nullptr) {
    used_.fetch_sub(charge, std::memory_order_relaxed);
    return nullptr;
  }
  auto* s = new Segment;
  s->pool = this;
  s->jumbo = true;
  s->base = mem;
  s->capacity = static_cast<uint32_t>(bytes);
  s->created_s = now_s;
  s->reserved = static_cast<uint32_t>(bytes);
  s->state.store(SegmentState::kOpen, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  if (NewIdLocked(s) == 0) {
    FreeJumbo(mem);
    delete s;
    used_.fetch_sub(charge, std::memory_order_relaxed);
    return nullptr;
  }
  jumbos_++;
  return s;
}

// ---------------------------------------------------------------------------
// Introspection.

size_t SegmentPool::FixedInUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fixed_.size() - free_fixed_.size();
}

size_t SegmentPool::FixedFree() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_fixed_.size();
}

size_t SegmentPool::JumboCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jumbos_;
}

bool SegmentPool::AnyPinned() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : fixed_) {
    if ((s->pins.load(std::memory_order_relaxed) & ~Segment::kRetiredBit) != 0) return true;
  }
  return jumbos_ != 0;   // a jumbo still alive at shutdown is held by a reader
}

// ---------------------------------------------------------------------------
// Pins.

void ReleasePin(Segment* s) {
  if (s->pins.fetch_sub(1, std::memory_order_acq_rel) == (Segment::kRetiredBit | 1)) {
    s->pool->Recycle(s);
  }
}

}  // namespace herdless
