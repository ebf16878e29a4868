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
// Written segments are dropped from the front of the vector in batches.
constexpr size_t kCompactAfter = 256;

}  // namespace

ReplyBuffer::ReplyBuffer() = default;

ReplyBuffer::~ReplyBuffer() { Clear(); }

char* ReplyBuffer::Reserve(size_t n) {
  if (chunks_.empty() || chunks_.back().capacity - chunks_.back().used < n) {
    // A string bigger than a chunk gets a chunk of its own size.
    chunks_.push_back(n <= kChunkSize ? Chunk{BlockCache::Take(cache_), kChunkSize, 0}
                                      : Chunk{new char[n], n, 0});
  }
  Chunk& chunk = chunks_.back();
  char* p = chunk.data + chunk.used;
  chunk.used += n;
  pending_ += n;
  // Bytes that continue the last segment in the same chunk extend it, so a
  // pipeline of short replies goes out as one iovec.
  if (!empty() && p != chunk.data) {
    Piece& last = segments_.back();
    if (last.pin == nullptr && last.data + last.len == p) {
      last.len += n;
      return p;
    }
  }
  if (segments_.capacity() == 0) segments_.reserve(8);
  segments_.push_back(Piece{p, n, nullptr});
  return p;
}

void ReplyBuffer::DropOldestChunk() {
  Chunk& chunk = chunks_.front();
  if (chunk.capacity == kChunkSize) {
    BlockCache::Give(cache_, chunk.data);
  } else {
    delete[] chunk.data;
  }
  chunks_.erase(chunks_.begin());
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
  char buf[24];
  char* p = buf;
  uint64_t magnitude = static_cast<uint64_t>(v);
  if (v < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;   // well defined for INT64_MIN too
  }
  char* end = FormatUint64(magnitude, p);
  Append(std::string_view(buf, end - buf));
}

void ReplyBuffer::AppendItemBytes(ItemRef item, std::string_view bytes) {
  if (bytes.empty()) return;   // nothing to send: `item` releases its reference
  segments_.push_back(Piece{bytes.data(), bytes.size(), item.Release()});
  pending_ += bytes.size();
}

int ReplyBuffer::FillIovecs(struct iovec* iov, int max) const {
  int n = 0;
  for (size_t i = head_; i < segments_.size() && n < max; ++i, ++n) {
    iov[n].iov_base = const_cast<char*>(segments_[i].data);
    iov[n].iov_len = segments_[i].len;
  }
  return n;
}

void ReplyBuffer::Consume(size_t n) {
  while (n > 0 && !empty()) {
    Piece& seg = segments_[head_];
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
      while (!chunks_.front().Contains(seg.data)) DropOldestChunk();
    }
    ++head_;
  }
  CompactSegments();
}

void ReplyBuffer::CompactSegments() {
  if (empty()) {
    segments_.clear();
    head_ = 0;
    // Everything is written: keep the newest chunk (if standard-sized) for the
    // next replies (ReleaseIdle gives it back when the connection waits).
    while (chunks_.size() > 1) DropOldestChunk();
    if (!chunks_.empty()) {
      if (chunks_.front().capacity == kChunkSize) {
        chunks_.front().used = 0;
      } else {
        DropOldestChunk();
      }
    }
    return;
  }
  if (head_ >= kCompactAfter && head_ * 2 >= segments_.size()) {
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void ReplyBuffer::Clear() {
  for (size_t i = head_; i < segments_.size(); ++i) {
    if (segments_[i].pin != nullptr) ReleasePin(segments_[i].pin);
  }
  segments_.clear();
  head_ = 0;
  pending_ = 0;
  message_ends_.clear();
  leading_empty_message_ = false;
  while (!chunks_.empty()) DropOldestChunk();
}

void ReplyBuffer::ReleaseIdle() {
  if (!empty()) return;
  Clear();
  // A waiting connection keeps room for a few pieces (a reply is one to four): freeing and
  // regrowing the array on every request cost about 200 instructions a request (callgrind);
  // the larger array a pipelined burst grew goes back to the heap.
  constexpr size_t kIdlePieces = 8;
  if (segments_.capacity() > kIdlePieces) std::vector<Piece>().swap(segments_);
}

}  // namespace herdless
