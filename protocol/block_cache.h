// BlockCache: one worker's free 16 KiB blocks, for its connections' input and
// reply buffers. A connection takes a block while it holds bytes and gives it
// back as it goes idle, so an idle connection holds none (memcached's
// per-thread read-buffer cache). Keeps at most max_free blocks; the rest go
// back to the heap. One thread only; a null cache is plain new/delete.
#ifndef HERDLESS_PROTOCOL_BLOCK_CACHE_H_
#define HERDLESS_PROTOCOL_BLOCK_CACHE_H_

#include <cstddef>
#include <vector>

namespace herdless {

class BlockCache {
 public:
  static constexpr size_t kBlockSize = 16 * 1024;

  explicit BlockCache(size_t max_free = 64) : max_free_(max_free) {}
  ~BlockCache() {
    for (char* block : free_) delete[] block;
  }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of kBlockSize bytes, from `cache` or (null) the heap.
  static char* Take(BlockCache* cache) {
    if (cache == nullptr || cache->free_.empty()) return new char[kBlockSize];
    char* block = cache->free_.back();
    cache->free_.pop_back();
    return block;
  }
  static void Give(BlockCache* cache, char* block) {
    if (cache == nullptr || cache->free_.size() >= cache->max_free_) {
      delete[] block;
      return;
    }
    cache->free_.push_back(block);
  }
  size_t free_blocks() const { return free_.size(); }

 private:
  const size_t max_free_;
  std::vector<char*> free_;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_BLOCK_CACHE_H_
