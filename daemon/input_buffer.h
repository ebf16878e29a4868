// InputBuffer: the bytes a connection has read and not yet executed, as
// [begin, end) of one growable block. A transport reads into Room() and
// Commit()s what arrived; the executors see view() and the connection
// Drop()s what they consumed. It grows (up to `limit`) while a request does
// not fit, and gives a large block back once it empties, so an idle
// connection holds at most kInitialInput. One per connection, not thread-safe.
#ifndef HERDLESS_DAEMON_INPUT_BUFFER_H_
#define HERDLESS_DAEMON_INPUT_BUFFER_H_

#include <cstddef>
#include <memory>
#include <string_view>

namespace herdless {

class InputBuffer {
 public:
  static constexpr size_t kInitialInput = 16 * 1024;   // memcached's READ_BUFFER_SIZE

  explicit InputBuffer(size_t limit) : limit_(limit < kInitialInput ? kInitialInput : limit) {}

  std::string_view view() const { return {data_.get() + begin_, end_ - begin_}; }
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
    return data_.get() + end_;
  }
  void Commit(size_t n) { end_ += n; }

  void ShrinkIfIdle() {
    if (empty() && capacity_ > kInitialInput) Release();
  }

 private:
  static constexpr size_t kMinReadRoom = 4 * 1024;   // grow or compact below this much free tail

  void MakeRoom();
  void Release();
  void Reallocate(size_t capacity);

  const size_t limit_;
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_INPUT_BUFFER_H_
