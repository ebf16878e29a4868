// SlabAllocator: item memory carved from 64 KiB pages in fine size classes
// (16 per doubling, 8-byte steps below 256, up to kMaxChunk), so an item
// wastes ~3% on rounding instead of a general allocator's ~10%. Pages come
// zeroed from 1 MiB mmap'd regions; each serves one class and counts its
// chunks in use; the memory budget counts pages in use, as memcached counts
// slab pages. A page can be drained (its chunks' owners asked to let go) and,
// once empty, returned to the pool (its memory given back with MADV_DONTNEED):
// that is how memory moves between classes without calcification. Pages are
// small so that a small -m still has pages for many classes at once.
// Thread-safe: one mutex per class, one for the page registry (order: class,
// then registry; callers may hold their own locks around Allocate/Free).
#ifndef HERDLESS_STORAGE_SLAB_ALLOCATOR_H_
#define HERDLESS_STORAGE_SLAB_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace herdless {

// What a draining page asks of its chunks' owner.
class ChunkEvictor {
 public:
  virtual ~ChunkEvictor() = default;
  // Called with the class lock held for every chunk in use: take a hold on
  // the chunk's object if it is fully built and alive (true), or leave it
  // (false). Must not block or take locks.
  virtual bool Pin(void* chunk) = 0;
  // Called with no allocator lock held for every pinned chunk: drop the
  // object's other owners if possible, then the pin (which may free the chunk).
  virtual void Evict(void* chunk) = 0;
};

class SlabAllocator {
 public:
  static constexpr size_t kPageSize = size_t{1} << 16;
  // Pages are mapped this many at a time: one mapping per region keeps the
  // process far below vm.max_map_count even at -m of many GiB.
  static constexpr size_t kRegionPages = 16;
  static constexpr size_t kPageHeader = 64;      // holds the Page* of the page
  static constexpr size_t kMaxChunk = 16 * 1024;  // bigger blocks: the caller mallocs
  static constexpr int kNoClass = 0;

  // `used` and `limit` are the caller's memory budget in bytes (not owned):
  // a new page is taken only while used + kPageSize <= limit, and adds
  // kPageSize to `used` (returning it to the pool subtracts it).
  SlabAllocator(std::atomic<size_t>* used, const std::atomic<size_t>* limit);
  ~SlabAllocator();  // unmaps every region: no chunk may still be in use
                     // (TotalChunksInUse() == 0)
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  // Class for a block of n bytes, kNoClass when n > kMaxChunk.
  static int ClassFor(size_t n);
  static size_t ChunkSize(int cls);
  static int ClassCount();  // classes are 1..ClassCount()
  static size_t ChunksPerPage(int cls);

  // A chunk of class `cls` (8-byte aligned, contents unspecified except that
  // a chunk never handed out before reads as zeros), or nullptr when the
  // class has no free chunk and the budget allows no new page.
  void* Allocate(int cls);
  // Returns a chunk from any SlabAllocator to its page.
  static void Free(void* chunk);

  // Pages that are fully carved, not draining and at most half in use: their
  // class holds memory it does not need (after deletes, expiry, flush_all).
  size_t SlackPages() const { return slack_pages_.load(std::memory_order_relaxed); }

  // Picks a page to drain: the emptiest slack page, else the emptiest page
  // when it is at most half full, else the page holding `hint` (e.g. the
  // oldest item's chunk; may be nullptr or already gone), else the emptiest.
  // Never a page claimed before. Returns an opaque page, or nullptr.
  struct Page;
  Page* ClaimVictimPage(const void* hint);
  // Drains a claimed page: no chunk is handed out from it any more, and
  // `evictor` is asked about every chunk in use. Returns true when the page
  // was emptied and unmapped; otherwise it is unmapped when its last chunk
  // is freed (chunks held by readers, or built but not yet published).
  bool DrainPage(Page* page, ChunkEvictor* evictor);

  // True when the chunk's page is being drained (a racy hint, for choosing).
  static bool IsDraining(const void* chunk);

  // Introspection (tests, stats).
  size_t PageCount() const;
  size_t PagesOfClass(int cls) const;
  size_t ChunksInUse(int cls) const;
  size_t TotalChunksInUse() const;

 private:
  struct Class;
  Page* NewPageLocked(Class& c, int cls);
  void UnmapLocked(Class& c, Page* page);  // class lock held
  void UpdateSlackLocked(Page* page);       // class lock held
  static Page* PageOf(const void* chunk);

  std::atomic<size_t>* used_;
  const std::atomic<size_t>* limit_;
  std::unique_ptr<Class[]> classes_;
  char* TakePageMemory();            // a zeroed page from the pool; nullptr if mmap fails
  void GivePageMemory(char* base);   // back to the pool, its memory released

  mutable std::mutex pages_mu_;
  std::unordered_map<uintptr_t, Page*> pages_;  // by base address
  std::vector<char*> free_pages_;                // guarded by pages_mu_: zeroed, unused
  std::vector<void*> regions_;                   // guarded by pages_mu_: for the destructor
  std::atomic<size_t> slack_pages_{0};
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_SLAB_ALLOCATOR_H_
