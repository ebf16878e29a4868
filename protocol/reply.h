// ReplyBuffer: the bytes owed to one connection, as a queue of iovec-ready
// segments. Short strings are copied into owned chunks (adjacent copies merge
// into one segment); item values are referenced in place and the ItemRef keeps
// the item alive until the bytes are written, so a concurrent set or delete
// never frees or changes memory that is still being sent. Its chunks come
// from a BlockCache (set_block_cache) and go back to it with ReleaseIdle(),
// so an idle connection holds none. Not thread-safe: one per connection.
#ifndef HERDLESS_PROTOCOL_REPLY_H_
#define HERDLESS_PROTOCOL_REPLY_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "protocol/block_cache.h"
#include "storage/item.h"

namespace herdless {

class ReplyBuffer {
 public:
  ReplyBuffer();
  ~ReplyBuffer();
  ReplyBuffer(const ReplyBuffer&) = delete;
  ReplyBuffer& operator=(const ReplyBuffer&) = delete;

  // Copies `s` into owned storage.
  void Append(std::string_view s);
  void AppendNumber(uint64_t v);        // decimal
  void AppendSignedNumber(int64_t v);
  // Sends `bytes` (an item's value, which `item` keeps in place) without copying; takes the reference.
  void AppendItemBytes(ItemRef item, std::string_view bytes);

  // The next iovecs to write (at most `max`); returns how many were filled.
  int FillIovecs(struct iovec* iov, int max) const;
  // Drops `n` written bytes from the front, releasing items fully sent.
  void Consume(size_t n);

  // UDP: memcached sends each response object (a command's reply; each key
  // of a multi-key get) as its own run of datagrams. With TrackMessages(true)
  // EndMessage() records where the current message ends, as a count of
  // pending bytes (valid until something is consumed). Empty messages are not
  // recorded, except that memcached sends one header-only datagram when the
  // first response object is empty (a binary quiet success, a get's first key
  // missing) rather than suppressed (`skipped`: a text noreply, a meta q).
  // Without tracking EndMessage() does nothing.
  void TrackMessages(bool on) { track_messages_ = on; }
  void EndMessage(bool skipped = false) {
    if (!track_messages_) return;
    if (pending_ > (message_ends_.empty() ? 0 : message_ends_.back())) {
      message_ends_.push_back(pending_);
    } else if (pending_ == 0 && !skipped) {
      leading_empty_message_ = true;
    }
  }
  bool leading_empty_message() const { return leading_empty_message_; }
  const std::vector<size_t>& message_ends() const { return message_ends_; }

  bool empty() const { return head_ == segments_.size(); }
  size_t pending_bytes() const { return pending_; }
  void Clear();
  // Chunks from `cache` (outlives this buffer; null: the heap). Set before use.
  void set_block_cache(BlockCache* cache) { cache_ = cache; }
  // Nothing owed: gives every chunk and the segment array back.
  void ReleaseIdle();

 private:
  struct Piece {
    const char* data;
    size_t len;
    herdless::Segment* pin;   // an ItemRef's pin on the item's memory, or nullptr for chunk bytes
  };
  struct Chunk {
    char* data;
    size_t capacity;   // BlockCache::kBlockSize: a cache block; larger: its own
    size_t used;
    bool Contains(const char* p) const { return p >= data && p < data + capacity; }
  };
  char* Reserve(size_t n);   // room for n contiguous bytes in the current chunk
  void DropOldestChunk();    // its bytes are no longer referenced by a segment
  void CompactSegments();

  // segments_[head_..] are owed; the vector is reused, not reallocated, as a
  // connection's replies are written and new ones appended.
  std::vector<Piece> segments_;
  size_t head_ = 0;
  std::vector<Chunk> chunks_;   // oldest first: chunks still referenced by segments
  BlockCache* cache_ = nullptr;
  size_t pending_ = 0;
  bool track_messages_ = false;
  bool leading_empty_message_ = false;
  std::vector<size_t> message_ends_;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_REPLY_H_
