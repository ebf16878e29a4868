#include "protocol/reply.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "protocol/numbers.h"

namespace herdless {

namespace {

// Most replies are a few short lines; 16 KiB holds a pipeline's worth of them
// and is what memcached sizes its response buffers to.
constexpr size_t kChunkSize = BlockCache::kBlockSize;
// Values up to this size are copied into the chunk rather than sent from the
// item in place: the copy costs less than the iovec, the piece and the pin
// they need, and a pipeline of small hits goes out as one iovec.
constexpr size_t kCopyValuesUpTo = 512;
// Written segments are dropped from the front of the vector in batches.
constexpr size_t kCompactAfter = 256;
// A spare queue keeps room for this many pieces (a reply is one to four):
// the larger array a pipelined burst grew goes back to the heap.
constexpr size_t kSparePieces = 8;

}  // namespace

struct ReplyQueue {
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

  ReplyQueue() { segments.reserve(kSparePieces); }

  // segments[head..] are owed; the vector is reused, not reallocated, as a
  // connection's replies are written and new ones appended.
  std::vector<Piece> segments;
  size_t head = 0;
  std::vector<Chunk> chunks;   // oldest first: chunks still referenced by segments
  std::vector<size_t> message_ends;   // TrackMessages: pending byte counts
  std::vector<uint64_t> held;   // Hold(): CASes of the items the owed replies show
};

namespace {

void FreeChunk(BlockCache* blocks, const ReplyQueue::Chunk& chunk) {
  if (chunk.capacity == kChunkSize) {
    BlockCache::Give(blocks, chunk.data);
  } else {
    delete[] chunk.data;
  }
}

}  // namespace

ReplyQueueCache::~ReplyQueueCache() {
  for (ReplyQueue* queue : free_) {
    for (const ReplyQueue::Chunk& chunk : queue->chunks) FreeChunk(nullptr, chunk);
    delete queue;
  }
}

size_t ReplyQueueCache::chunked_queues() const {
  return static_cast<size_t>(
      std::count_if(free_.begin(), free_.end(), [](const ReplyQueue* q) { return !q->chunks.empty(); }));
}

ReplyQueue* ReplyQueueCache::Take(ReplyQueueCache* cache) {
  if (cache == nullptr || cache->free_.empty()) return new ReplyQueue;
  ReplyQueue* queue = cache->free_.back();
  cache->free_.pop_back();
  return queue;
}

void ReplyQueueCache::Give(ReplyQueueCache* cache, ReplyQueue* queue, BlockCache* blocks) {
  const bool kept = cache != nullptr && cache->free_.size() < cache->max_free_;
  if (!kept || cache->free_.size() >= cache->max_chunked_) {
    for (const ReplyQueue::Chunk& chunk : queue->chunks) FreeChunk(blocks, chunk);
    queue->chunks.clear();
  }
  if (!kept) {
    delete queue;
    return;
  }
  if (queue->segments.capacity() > kSparePieces) {
    std::vector<ReplyQueue::Piece>().swap(queue->segments);
    queue->segments.reserve(kSparePieces);
  }
  cache->free_.push_back(queue);
}

ReplyBuffer::ReplyBuffer() = default;

ReplyBuffer::ReplyBuffer(ReplyBuffer&& other) noexcept
    : queue_(std::exchange(other.queue_, nullptr)),
      blocks_(other.blocks_),
      queues_(other.queues_),
      pending_(std::exchange(other.pending_, 0)),
      tail_(std::exchange(other.tail_, nullptr)),
      tail_end_(std::exchange(other.tail_end_, nullptr)),
      track_messages_(other.track_messages_),
      leading_empty_message_(std::exchange(other.leading_empty_message_, false)) {}

ReplyBuffer::~ReplyBuffer() {
  Clear();
  delete queue_;
}

ReplyQueue& ReplyBuffer::Queue() {
  if (queue_ == nullptr) queue_ = ReplyQueueCache::Take(queues_);
  return *queue_;
}

// Most appends extend the last segment in place; the rest take a new
// segment, or a new chunk.
char* ReplyBuffer::Reserve(size_t n) {
  if (tail_ != nullptr && static_cast<size_t>(tail_end_ - tail_) >= n) {
    char* p = tail_;
    tail_ += n;
    pending_ += n;
    queue_->segments.back().len += n;
    return p;
  }
  return ReserveNewSegment(n);
}

// The newest chunk's `used` lags while appends extend its last segment in
// place: brought up to date when that segment stops being the last.
void ReplyBuffer::CloseTail() {
  if (tail_ == nullptr) return;
  ReplyQueue::Chunk& chunk = queue_->chunks.back();
  chunk.used = static_cast<size_t>(tail_ - chunk.data);
  tail_ = tail_end_ = nullptr;
}

char* ReplyBuffer::ReserveNewSegment(size_t n) {
  ReplyQueue& q = Queue();
  CloseTail();
  if (q.chunks.empty() || q.chunks.back().capacity - q.chunks.back().used < n) {
    // A string bigger than a chunk gets a chunk of its own size.
    q.chunks.push_back(n <= kChunkSize ? ReplyQueue::Chunk{BlockCache::Take(blocks_), kChunkSize, 0}
                                       : ReplyQueue::Chunk{new char[n], n, 0});
  }
  ReplyQueue::Chunk& chunk = q.chunks.back();
  char* p = chunk.data + chunk.used;
  chunk.used += n;
  pending_ += n;
  q.segments.push_back(ReplyQueue::Piece{p, n, nullptr});
  // Bytes after these continue the same segment, so a pipeline of short
  // replies goes out as one iovec.
  tail_ = p + n;
  tail_end_ = chunk.data + chunk.capacity;
  return p;
}

void ReplyBuffer::DropOldestChunk() {
  std::vector<ReplyQueue::Chunk>& chunks = queue_->chunks;
  FreeChunk(blocks_, chunks.front());
  chunks.erase(chunks.begin());
}

void ReplyBuffer::Append(std::string_view s) {
  if (s.empty()) return;
  std::memcpy(Reserve(s.size()), s.data(), s.size());
}

void ReplyBuffer::AppendNumber(uint64_t v) {
  char buf[24];
  char* end = FormatUint64(v, buf);
  Append(std::string_view(buf, end - buf));
}

void ReplyBuffer::AppendSignedNumber(int64_t v) {
  char buf[kMaxUint64Digits + 1];
  Append(std::string_view(buf, FormatInt64(v, buf) - buf));
}

void ReplyLine::Append(std::string_view s) {
  if (s.size() > kCapacity - used_) {
    Flush();
    if (s.size() > kCapacity) {
      out_->Append(s);
      return;
    }
  }
  std::memcpy(line_ + used_, s.data(), s.size());
  used_ += s.size();
}

void ReplyLine::AppendNumber(uint64_t v) {
  static_assert(kNumberRoom >= kMaxUint64Digits + 3);
  if (kNumberRoom > kCapacity - used_) Flush();
  used_ = static_cast<size_t>(FormatUint64(v, line_ + used_) - line_);
}

void ReplyLine::AppendSignedNumber(int64_t v) {
  if (kNumberRoom > kCapacity - used_) Flush();
  used_ = static_cast<size_t>(FormatInt64(v, line_ + used_) - line_);
}

void ReplyLine::AppendFlag(char name, uint64_t v) {
  if (kNumberRoom > kCapacity - used_) Flush();
  line_[used_] = ' ';
  line_[used_ + 1] = name;
  used_ = static_cast<size_t>(FormatUint64(v, line_ + used_ + 2) - line_);
}

void ReplyLine::AppendSignedFlag(char name, int64_t v) {
  if (kNumberRoom > kCapacity - used_) Flush();
  line_[used_] = ' ';
  line_[used_ + 1] = name;
  used_ = static_cast<size_t>(FormatInt64(v, line_ + used_ + 2) - line_);
}

void ReplyLine::End() {
  Append("\r\n");
  Flush();
}

void ReplyLine::Flush() {
  out_->Append(std::string_view(line_, used_));
  used_ = 0;
}

void ReplyBuffer::AppendItemBytes(ItemRef item, std::string_view bytes) {
  if (bytes.empty()) return;   // nothing to send: `item` releases its reference
  if (bytes.size() <= kCopyValuesUpTo) {
    Append(bytes);   // `item` releases its reference once copied
    return;
  }
  CloseTail();   // the next bytes start a new segment
  Queue().segments.push_back(ReplyQueue::Piece{bytes.data(), bytes.size(), item.Release()});
  pending_ += bytes.size();
}

void ReplyBuffer::NoteMessageEnd() {
  std::vector<size_t>& ends = queue_->message_ends;   // pending_ > 0: there is a queue
  if (pending_ > (ends.empty() ? 0 : ends.back())) ends.push_back(pending_);
}

const std::vector<size_t>& ReplyBuffer::message_ends() const {
  static const std::vector<size_t> kNone;
  return queue_ != nullptr ? queue_->message_ends : kNone;
}

int ReplyBuffer::FillIovecs(struct iovec* iov, int max, size_t max_bytes) const {
  if (empty()) return 0;
  const std::vector<ReplyQueue::Piece>& segments = queue_->segments;
  int n = 0;
  for (size_t i = queue_->head; i < segments.size() && n < max && max_bytes > 0; ++i, ++n) {
    iov[n].iov_base = const_cast<char*>(segments[i].data);
    iov[n].iov_len = std::min(segments[i].len, max_bytes);
    max_bytes -= iov[n].iov_len;
  }
  return n;
}

void ReplyBuffer::Consume(size_t n) {
  while (n > 0 && !empty()) {
    ReplyQueue::Piece& seg = queue_->segments[queue_->head];
    if (n < seg.len) {
      seg.data += n;
      seg.len -= n;
      pending_ -= n;
      return;
    }
    n -= seg.len;
    pending_ -= seg.len;
    if (seg.pin != nullptr) {
      ReleasePin(seg.pin);
    } else {
      // Chunk segments were written in chunk order, so every chunk in front
      // of the one holding this segment is no longer referenced.
      while (!queue_->chunks.front().Contains(seg.data)) DropOldestChunk();
    }
    ++queue_->head;
  }
  if (queue_ != nullptr) CompactSegments();
}

void ReplyBuffer::Hold(uint64_t cas) { Queue().held.push_back(cas); }

void ReplyBuffer::ReleaseHeld() {
  if (queue_ != nullptr) queue_->held.clear();
}

std::span<const uint64_t> ReplyBuffer::held() const {
  if (queue_ == nullptr) return {};
  return queue_->held;
}

void ReplyBuffer::CompactSegments() {
  ReplyQueue& q = *queue_;
  if (empty()) {
    q.segments.clear();
    q.head = 0;
    q.held.clear();
    tail_ = tail_end_ = nullptr;
    // Everything is written: keep the newest chunk (if standard-sized) for the
    // next replies (ReleaseIdle gives it back when the connection waits).
    while (q.chunks.size() > 1) DropOldestChunk();
    if (!q.chunks.empty()) {
      if (q.chunks.front().capacity == kChunkSize) {
        q.chunks.front().used = 0;
      } else {
        DropOldestChunk();
      }
    }
    return;
  }
  if (q.head >= kCompactAfter && q.head * 2 >= q.segments.size()) {
    q.segments.erase(q.segments.begin(), q.segments.begin() + static_cast<std::ptrdiff_t>(q.head));
    q.head = 0;
  }
}

void ReplyBuffer::Clear() { Reset(/*keep_chunk=*/false); }

void ReplyBuffer::Reset(bool keep_chunk) {
  pending_ = 0;
  tail_ = tail_end_ = nullptr;
  leading_empty_message_ = false;
  if (queue_ == nullptr) return;
  ReplyQueue& q = *queue_;
  for (size_t i = q.head; i < q.segments.size(); ++i) {
    if (q.segments[i].pin != nullptr) ReleasePin(q.segments[i].pin);
  }
  q.segments.clear();
  q.head = 0;
  q.message_ends.clear();
  q.held.clear();
  const size_t keep = keep_chunk && !q.chunks.empty() && q.chunks.back().capacity == kChunkSize ? 1 : 0;
  while (q.chunks.size() > keep) DropOldestChunk();
  if (keep == 1) q.chunks.front().used = 0;
}

// Freeing and regrowing the piece array on every request cost about 200
// instructions a request (callgrind); a spare queue from the worker's cache
// costs a pop and a push. Its chunk stays with it: giving the block back to
// the BlockCache and taking it again cost about 150 more (a request at a time).
void ReplyBuffer::ReleaseIdle() {
  if (!empty() || queue_ == nullptr) return;
  Reset(/*keep_chunk=*/true);
  ReplyQueueCache::Give(queues_, queue_, blocks_);
  queue_ = nullptr;
}

}  // namespace herdless
