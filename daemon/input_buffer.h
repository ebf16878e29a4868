// InputBuffer: the bytes a connection has read and not yet executed, as
// [begin, end) of one growable block. A transport reads into Room() and
// Commit()s what arrived; the executors see view() and the connection
// Drop()s what they consumed. Its first block (kInitialInput) comes from the
// worker's BlockCache on the first read; it grows (up to `limit`) while a
// request does not fit, and Release()s its block once it empties, so an idle
// connection holds none. One per connection, not thread-safe.
#ifndef HERDLESS_DAEMON_INPUT_BUFFER_H_
#define HERDLESS_DAEMON_INPUT_BUFFER_H_

#include <cstddef>
#include <string_view>

#include "protocol/block_cache.h"

namespace herdless {

class InputBuffer {
 public:
  static constexpr size_t kInitialInput = BlockCache::kBlockSize;   // memcached's READ_BUFFER_SIZE

  // `cache` (may be null) outlives the buffer.
  InputBuffer(size_t limit, BlockCache* cache)
      : limit_(limit < kInitialInput ? kInitialInput : limit), cache_(cache) {}
  ~InputBuffer() { Release(); }
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  std::string_view view() const { return {data_ + begin_, end_ - begin_}; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  bool full() const { return size() >= limit_; }

  void Drop(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }

  // Free room at the tail, *len bytes (0 only when full()); Commit(n) keeps n
  // of them. Inline while there is room (every read).
  char* Room(size_t* len) {
    if (capacity_ - end_ < kMinReadRoom) MakeRoom();
    *len = capacity_ - end_;
    return data_ + end_;
  }
  void Commit(size_t n) { end_ += n; }

  // Gives the block back while nothing is buffered.
  void ReleaseIfEmpty() {
    if (empty() && data_ != nullptr) Release();
  }

 private:
  static constexpr size_t kMinReadRoom = 4 * 1024;   // grow or compact below this much free tail

  void MakeRoom();
  void Release();
  void Reallocate(size_t capacity);

  const size_t limit_;
  BlockCache* const cache_;
  char* data_ = nullptr;   // kInitialInput bytes from cache_, or larger from the heap
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_INPUT_BUFFER_H_
