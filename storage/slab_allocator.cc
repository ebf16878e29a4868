// SlabAllocator. Reading order: the class table, pages (map, unmap), the hot
// path (Allocate, Free), then draining.
//
// A page is kPageSize bytes at a kPageSize-aligned address: its first bytes
// hold a pointer to its Page record, so Free finds the page of any chunk with
// a mask. Chunks are carved lazily (untouched memory stays out of RSS until
// used); freed chunks go on their page's free list, linked through their
// first 8 bytes. Pages with a free or uncarved chunk are on their class's
// `partial` list. Under ASan free chunks are poisoned (all but the link), so
// a use after free of an item is still reported.
#include "storage/slab_allocator.h"

#include <sys/mman.h>

#include <cassert>
#include <cstring>
#include <new>

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

constexpr size_t kLinkBytes = sizeof(void*);

// Chunk sizes: 8-byte steps from 16 to 256, then 16 classes per doubling up
// to kMaxChunk, so rounding never costs more than 6.25% (3% on average).
struct ClassTable {
  std::vector<size_t> sizes;            // sizes[0] unused (kNoClass)
  std::vector<uint8_t> class_by_units;  // index: (n + 7) / 8
  ClassTable() {
    sizes.push_back(0);
    for (size_t s = 16; s <= 256; s += 8) sizes.push_back(s);
    for (size_t base = 256; base < SlabAllocator::kMaxChunk; base *= 2) {
      for (size_t k = 1; k <= 16; k++) sizes.push_back(base + k * base / 16);
    }
    assert(sizes.back() == SlabAllocator::kMaxChunk && sizes.size() <= 256);
    class_by_units.resize(SlabAllocator::kMaxChunk / 8 + 1);
    size_t cls = 1;
    for (size_t units = 0; units < class_by_units.size(); units++) {
      while (sizes[cls] < units * 8) cls++;
      class_by_units[units] = static_cast<uint8_t>(cls);
    }
  }
};

const ClassTable& Table() {
  static const ClassTable table;
  return table;
}

}  // namespace

struct SlabAllocator::Page {
  char* base = nullptr;
  SlabAllocator* owner = nullptr;
  int cls = kNoClass;
  size_t chunk_size = 0;
  uint32_t capacity = 0;
  // Guarded by the class lock (in_use is also read racily when choosing a victim).
  uint32_t carved = 0;
  std::atomic<uint32_t> in_use{0};
  void* free_list = nullptr;
  std::vector<uint64_t> used_bits;
  std::atomic<bool> draining{false};
  // Fully carved, not draining, at most half in use: memory its class does
  // not need, taken first when another class needs a page.
  std::atomic<bool> slack{false};
  bool drain_busy = false;  // DrainPage is walking it: unmapping waits
  bool in_partial = false;
  Page* prev = nullptr;
  Page* next = nullptr;
  // Guarded by pages_mu_.
  bool claimed = false;

  char* chunk(uint32_t i) const { return base + kPageHeader + size_t{i} * chunk_size; }
  uint32_t index(const void* chunk) const {
    return static_cast<uint32_t>((static_cast<const char*>(chunk) - base - kPageHeader) /
                                 chunk_size);
  }
  bool used(uint32_t i) const { return (used_bits[i / 64] >> (i % 64)) & 1; }
};

struct SlabAllocator::Class {
  std::mutex mu;
  Page* partial = nullptr;  // pages that can hand out a chunk
  size_t pages = 0;
  size_t in_use = 0;

  void PushPartial(Page* p) {
    p->prev = nullptr;
    p->next = partial;
    if (partial != nullptr) partial->prev = p;
    partial = p;
    p->in_partial = true;
  }
  void RemovePartial(Page* p) {
    if (!p->in_partial) return;
    if (p->prev != nullptr) p->prev->next = p->next;
    else partial = p->next;
    if (p->next != nullptr) p->next->prev = p->prev;
    p->prev = p->next = nullptr;
    p->in_partial = false;
  }
};

int SlabAllocator::ClassFor(size_t n) {
  if (n > kMaxChunk) return kNoClass;
  return Table().class_by_units[(n + 7) / 8];
}

size_t SlabAllocator::ChunkSize(int cls) { return Table().sizes[static_cast<size_t>(cls)]; }

int SlabAllocator::ClassCount() { return static_cast<int>(Table().sizes.size()) - 1; }

size_t SlabAllocator::ChunksPerPage(int cls) { return (kPageSize - kPageHeader) / ChunkSize(cls); }

SlabAllocator::SlabAllocator(std::atomic<size_t>* used, const std::atomic<size_t>* limit)
    : used_(used), limit_(limit), classes_(std::make_unique<Class[]>(ClassCount() + 1)) {}

SlabAllocator::~SlabAllocator() {
  for (auto& [base, page] : pages_) {
    used_->fetch_sub(kPageSize, std::memory_order_relaxed);
    delete page;
  }
  for (void* region : regions_) {
    ASAN_UNPOISON_MEMORY_REGION(region, kRegionPages * kPageSize);
    munmap(region, kRegionPages * kPageSize);
  }
}

SlabAllocator::Page* SlabAllocator::PageOf(const void* chunk) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(chunk) & ~(kPageSize - 1);
  return *reinterpret_cast<Page* const*>(base);
}

bool SlabAllocator::IsDraining(const void* chunk) {
  return PageOf(chunk)->draining.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Pages.

// Maps a fresh (zeroed) page for the class if the budget allows one.
SlabAllocator::Page* SlabAllocator::NewPageLocked(Class& c, int cls) {
  size_t used = used_->load(std::memory_order_relaxed);
  do {
    if (used + kPageSize > limit_->load(std::memory_order_relaxed)) return nullptr;
  } while (!used_->compare_exchange_weak(used, used + kPageSize, std::memory_order_relaxed));

  char* base = TakePageMemory();
  if (base == nullptr) {
    used_->fetch_sub(kPageSize, std::memory_order_relaxed);
    return nullptr;
  }
  const uintptr_t aligned = reinterpret_cast<uintptr_t>(base);

  Page* p = new Page;
  p->base = base;
  p->owner = this;
  p->cls = cls;
  p->chunk_size = ChunkSize(cls);
  p->capacity = static_cast<uint32_t>(ChunksPerPage(cls));
  p->used_bits.assign((p->capacity + 63) / 64, 0);
  *reinterpret_cast<Page**>(p->base) = p;
  ASAN_POISON_MEMORY_REGION(p->base + kPageHeader, kPageSize - kPageHeader);
  {
    std::lock_guard<std::mutex> lock(pages_mu_);
    pages_.emplace(aligned, p);
  }
  c.pages++;
  c.PushPartial(p);
  return p;
}

void SlabAllocator::UnmapLocked(Class& c, Page* page) {
  c.RemovePartial(page);
  c.pages--;
  {
    std::lock_guard<std::mutex> lock(pages_mu_);
    pages_.erase(reinterpret_cast<uintptr_t>(page->base));
  }
  GivePageMemory(page->base);
  used_->fetch_sub(kPageSize, std::memory_order_relaxed);
  delete page;
}

char* SlabAllocator::TakePageMemory() {
  std::lock_guard<std::mutex> lock(pages_mu_);
  if (free_pages_.empty()) {
    // One mapping of kRegionPages pages, aligned to kPageSize by trimming.
    const size_t region = kRegionPages * kPageSize;
    void* raw = mmap(nullptr, region + kPageSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kPageSize - 1) & ~(kPageSize - 1);
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + region + kPageSize;
    if (aligned + region < end) munmap(reinterpret_cast<void*>(aligned + region), end - aligned - region);
    regions_.push_back(reinterpret_cast<void*>(aligned));
    // Handed out from the lowest address up.
    for (size_t i = kRegionPages; i-- > 0;) {
      free_pages_.push_back(reinterpret_cast<char*>(aligned + i * kPageSize));
    }
  }
  char* base = free_pages_.back();
  free_pages_.pop_back();
  return base;
}

// The page's memory goes back to the kernel (RSS falls) and reads as zeros
// when next used, as a fresh mapping does.
void SlabAllocator::GivePageMemory(char* base) {
  ASAN_UNPOISON_MEMORY_REGION(base, kPageSize);
  madvise(base, kPageSize, MADV_DONTNEED);
  std::lock_guard<std::mutex> lock(pages_mu_);
  free_pages_.push_back(base);
}

// ---------------------------------------------------------------------------
// Hot path.

void* SlabAllocator::Allocate(int cls) {
  assert(cls > kNoClass && cls <= ClassCount());
  Class& c = classes_[static_cast<size_t>(cls)];
  std::lock_guard<std::mutex> lock(c.mu);
  Page* p = c.partial;
  if (p == nullptr) {
    p = NewPageLocked(c, cls);
    if (p == nullptr) return nullptr;
  }
  char* chunk;
  if (p->free_list != nullptr) {
    chunk = static_cast<char*>(p->free_list);
    std::memcpy(&p->free_list, chunk, kLinkBytes);
  } else {
    chunk = p->chunk(p->carved++);
  }
  const uint32_t i = p->index(chunk);
  assert(!p->used(i));
  p->used_bits[i / 64] |= uint64_t{1} << (i % 64);
  p->in_use.store(p->in_use.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  c.in_use++;
  if (p->free_list == nullptr && p->carved == p->capacity) c.RemovePartial(p);
  UpdateSlackLocked(p);
  ASAN_UNPOISON_MEMORY_REGION(chunk, p->chunk_size);
  return chunk;
}

void SlabAllocator::Free(void* chunk) {
  Page* p = PageOf(chunk);
  SlabAllocator* self = p->owner;
  Class& c = self->classes_[static_cast<size_t>(p->cls)];
  std::lock_guard<std::mutex> lock(c.mu);
  const uint32_t i = p->index(chunk);
  assert(p->used(i) && p->chunk(i) == chunk);
  p->used_bits[i / 64] &= ~(uint64_t{1} << (i % 64));
  std::memcpy(chunk, &p->free_list, kLinkBytes);
  p->free_list = chunk;
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(chunk) + kLinkBytes, p->chunk_size - kLinkBytes);
  const uint32_t in_use = p->in_use.load(std::memory_order_relaxed) - 1;
  p->in_use.store(in_use, std::memory_order_relaxed);
  c.in_use--;
  self->UpdateSlackLocked(p);
  if (p->draining.load(std::memory_order_relaxed)) {
    if (in_use == 0 && !p->drain_busy) self->UnmapLocked(c, p);
  } else if (!p->in_partial) {
    c.PushPartial(p);
  }
}

// ---------------------------------------------------------------------------
// Draining.

void SlabAllocator::UpdateSlackLocked(Page* p) {
  const uint32_t in_use = p->in_use.load(std::memory_order_relaxed);
  const bool slack = !p->draining.load(std::memory_order_relaxed) && p->carved == p->capacity &&
                     uint64_t{in_use} * 2 <= p->capacity;
  if (slack == p->slack.load(std::memory_order_relaxed)) return;
  p->slack.store(slack, std::memory_order_relaxed);
  if (slack) slack_pages_.fetch_add(1, std::memory_order_relaxed);
  else slack_pages_.fetch_sub(1, std::memory_order_relaxed);
}

SlabAllocator::Page* SlabAllocator::ClaimVictimPage(const void* hint) {
  std::lock_guard<std::mutex> lock(pages_mu_);
  // The emptiest page, and the emptiest slack page, by fill ratio.
  Page* least = nullptr;
  uint32_t least_in_use = 0;
  Page* least_slack = nullptr;
  uint32_t least_slack_in_use = 0;
  auto emptier = [](uint32_t in_use, const Page* p, uint32_t other_in_use, const Page* other) {
    return other == nullptr || uint64_t{in_use} * other->capacity < uint64_t{other_in_use} * p->capacity;
  };
  for (const auto& [base, p] : pages_) {
    if (p->claimed) continue;
    const uint32_t in_use = p->in_use.load(std::memory_order_relaxed);
    if (emptier(in_use, p, least_in_use, least)) {
      least = p;
      least_in_use = in_use;
    }
    if (p->slack.load(std::memory_order_relaxed) &&
        emptier(in_use, p, least_slack_in_use, least_slack)) {
      least_slack = p;
      least_slack_in_use = in_use;
    }
  }
  Page* chosen = least_slack != nullptr ? least_slack : least;
  if (chosen == least && least != nullptr && uint64_t{least_in_use} * 2 > least->capacity &&
      hint != nullptr) {
    auto it = pages_.find(reinterpret_cast<uintptr_t>(hint) & ~(kPageSize - 1));
    if (it != pages_.end() && !it->second->claimed) chosen = it->second;
  }
  if (chosen != nullptr) chosen->claimed = true;
  return chosen;
}

bool SlabAllocator::DrainPage(Page* page, ChunkEvictor* evictor) {
  Class& c = classes_[static_cast<size_t>(page->cls)];
  std::vector<void*> pinned;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    page->draining.store(true, std::memory_order_relaxed);
    UpdateSlackLocked(page);
    page->drain_busy = true;
    c.RemovePartial(page);
    for (uint32_t i = 0; i < page->carved; i++) {
      if (page->used(i) && evictor->Pin(page->chunk(i))) pinned.push_back(page->chunk(i));
    }
  }
  for (void* chunk : pinned) evictor->Evict(chunk);
  std::lock_guard<std::mutex> lock(c.mu);
  page->drain_busy = false;
  if (page->in_use.load(std::memory_order_relaxed) != 0) return false;
  UnmapLocked(c, page);
  return true;
}

// ---------------------------------------------------------------------------
// Introspection.

size_t SlabAllocator::PageCount() const {
  std::lock_guard<std::mutex> lock(pages_mu_);
  return pages_.size();
}

size_t SlabAllocator::PagesOfClass(int cls) const {
  Class& c = classes_[static_cast<size_t>(cls)];
  std::lock_guard<std::mutex> lock(c.mu);
  return c.pages;
}

size_t SlabAllocator::ChunksInUse(int cls) const {
  Class& c = classes_[static_cast<size_t>(cls)];
  std::lock_guard<std::mutex> lock(c.mu);
  return c.in_use;
}

size_t SlabAllocator::TotalChunksInUse() const {
  size_t total = 0;
  for (int cls = 1; cls <= ClassCount(); cls++) total += ChunksInUse(cls);
  return total;
}

}  // namespace herdless
