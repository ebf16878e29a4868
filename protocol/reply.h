// ReplyBuffer: the bytes owed to one connection, as a queue of iovec-ready
// segments. Short strings and small values are copied into owned chunks
// (adjacent copies merge into one segment); larger item values are referenced
// in place and the ItemRef keeps the item alive until the bytes are written,
// so a concurrent set or delete never frees or changes memory that is still
// being sent. Its chunks come from a BlockCache and its queue (the piece and
// chunk arrays) from a ReplyQueueCache (set_caches); ReleaseIdle() gives both
// back, so an idle connection holds neither. Not thread-safe: one per
// connection.
#ifndef HERDLESS_PROTOCOL_REPLY_H_
#define HERDLESS_PROTOCOL_REPLY_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/block_cache.h"
#include "storage/item.h"

namespace herdless {

struct ReplyQueue;   // a ReplyBuffer's owed pieces and chunks (reply.cc)

// One worker's spare ReplyQueues: a buffer takes one with its first reply and
// gives it back when it goes idle, so idle connections hold none and a busy
// one does not allocate its arrays each request. Keeps at most max_free
// (their arrays trimmed to a few pieces); the first max_chunked of them keep
// one empty chunk as well, so that a connection's next reply takes no block
// either (a request at a time gave a block back and took one again each time).
// One thread only.
class ReplyQueueCache {
 public:
  explicit ReplyQueueCache(size_t max_free = 256, size_t max_chunked = 64)
      : max_free_(max_free), max_chunked_(max_chunked) {}
  ~ReplyQueueCache();
  ReplyQueueCache(const ReplyQueueCache&) = delete;
  ReplyQueueCache& operator=(const ReplyQueueCache&) = delete;

  // An empty queue (perhaps with an empty chunk), from `cache` or (null) the heap.
  static ReplyQueue* Take(ReplyQueueCache* cache);
  // `queue` owes nothing; kept, or freed when the cache is null or full. Its
  // chunk, if any and not kept with it, goes to `blocks`.
  static void Give(ReplyQueueCache* cache, ReplyQueue* queue, BlockCache* blocks);
  size_t free_queues() const { return free_.size(); }
  size_t chunked_queues() const;   // spares holding a chunk

 private:
  const size_t max_free_;
  const size_t max_chunked_;
  // A stack: a spare keeps its chunk only when pushed below max_chunked_, and
  // its place never changes while it is here, so at most max_chunked_ do.
  std::vector<ReplyQueue*> free_;
};

class ReplyBuffer {
 public:
  ReplyBuffer();
  // Takes every byte `other` owes, with its caches; `other` is left empty
  // (and usable). Moves no bytes: the iovecs it filled stay valid.
  ReplyBuffer(ReplyBuffer&& other) noexcept;
  ~ReplyBuffer();
  ReplyBuffer(const ReplyBuffer&) = delete;
  ReplyBuffer& operator=(const ReplyBuffer&) = delete;

  // Copies `s` into owned storage.
  void Append(std::string_view s);
  void AppendNumber(uint64_t v);        // decimal
  void AppendSignedNumber(int64_t v);
  // Sends `bytes`, an item's value that `item` keeps in place: a small one is
  // copied, a larger one is sent from the item, whose reference this takes.
  void AppendItemBytes(ItemRef item, std::string_view bytes);

  // The next iovecs to write, at most `max` of them and `max_bytes` in all
  // (the last one cut short); returns how many were filled.
  int FillIovecs(struct iovec* iov, int max, size_t max_bytes = SIZE_MAX) const;
  // Drops `n` written bytes from the front, releasing items fully sent.
  void Consume(size_t n);

  // memcached keeps a reference to each item an unsent reply shows, and
  // rewrites a number in place only in an item nobody else references
  // (ArithRequest::referenced). Hold() notes a shown item by its CAS (unique
  // to it) until everything owed is written, or until ReleaseHeld() at a
  // point where memcached flushes its replies (mn).
  void Hold(uint64_t cas);
  void ReleaseHeld();
  std::span<const uint64_t> held() const;

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
    if (pending_ > 0) {
      NoteMessageEnd();
    } else if (!skipped) {
      leading_empty_message_ = true;
    }
  }
  bool leading_empty_message() const { return leading_empty_message_; }
  const std::vector<size_t>& message_ends() const;

  // Every segment holds at least one byte: nothing pending is nothing owed.
  bool empty() const { return pending_ == 0; }
  size_t pending_bytes() const { return pending_; }
  void Clear();   // drops every owed byte and every chunk
  // Chunks from `blocks`, the queue from `queues` (both outlive this buffer;
  // null: the heap). Set before use.
  void set_caches(BlockCache* blocks, ReplyQueueCache* queues) {
    blocks_ = blocks;
    queues_ = queues;
  }
  // Nothing owed: gives the queue back (with its emptied chunk, which the
  // spare may keep) and every other chunk.
  void ReleaseIdle();

 private:
  ReplyQueue& Queue();       // queue_, taken on first use
  char* Reserve(size_t n);   // room for n contiguous bytes at the end of the output
  char* ReserveNewSegment(size_t n);
  void CloseTail();
  void DropOldestChunk();    // its bytes are no longer referenced by a segment
  void Reset(bool keep_chunk);   // Clear; keep_chunk: the newest standard chunk stays, emptied
  void CompactSegments();
  void NoteMessageEnd();

  ReplyQueue* queue_ = nullptr;   // null while nothing was appended since ReleaseIdle
  BlockCache* blocks_ = nullptr;
  ReplyQueueCache* queues_ = nullptr;
  size_t pending_ = 0;
  // When the last segment is chunk bytes (not an item's), where it ends and
  // where its chunk ends: bytes appended there extend it. Else both null.
  char* tail_ = nullptr;
  char* tail_end_ = nullptr;
  bool track_messages_ = false;
  bool leading_empty_message_ = false;
};

// One reply line gathered on the stack and handed to a ReplyBuffer in one
// Append: a meta reply is a code, flags and numbers in a dozen short pieces,
// and each ReplyBuffer::Append is a call and a memcpy of its own. The longest
// meta line (a 250-byte key in base64 with every flag, each once) is under 600
// bytes; a longer one would go out in parts. What is gathered is written by
// End() or, at the latest, by the destructor, so nothing is lost on an early
// return.
class ReplyLine {
 public:
  explicit ReplyLine(ReplyBuffer* out) : out_(out) {}
  ~ReplyLine() { Flush(); }
  ReplyLine(const ReplyLine&) = delete;
  ReplyLine& operator=(const ReplyLine&) = delete;

  void Append(std::string_view s);
  void AppendNumber(uint64_t v);        // decimal
  void AppendSignedNumber(int64_t v);
  // A meta return flag with a number: " <name><v>".
  void AppendFlag(char name, uint64_t v);
  void AppendSignedFlag(char name, int64_t v);
  // "\r\n", then everything gathered to the ReplyBuffer.
  void End();

 private:
  static constexpr size_t kCapacity = 768;
  static constexpr size_t kNumberRoom = 23;   // " <name>", "-" and 20 digits
  void Flush();
  ReplyBuffer* out_;
  size_t used_ = 0;
  char line_[kCapacity];
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_REPLY_H_
