// S3Fifo: which items leave when memory is needed, after S3-FIFO (Yang et al.,
// "FIFO queues are all you need for cache eviction", SOSP 2023), over
// segments instead of single items.
//
// New items are appended to the small queue (S); the evictor frees the oldest
// segment of S while S holds more than a tenth of the queued segments, else
// the oldest segment of the main queue (M). Each item of that segment is
// decided on by its 2-bit access frequency (kept in its index slot; a read
// adds one, saturating at 3): from S, an item read since it was stored moves
// to M (copied to M's open segment), any other is evicted and leaves a ghost
// in the index; from M, a read item is copied to M's tail with one read
// fewer, any other is evicted. A key stored again while its ghost is fresh
// starts with one read, so its first eviction from S moves it to M. A hit
// only bumps a counter: no list move, no lock beyond the shard's.
//
// This class keeps the two queues of sealed segments and the open segment
// each appends to, and decides per item (Keep); ItemStore walks a victim's
// items under their shards' locks. Knows segments, nothing of keys or leases.
// Thread-safe: one lock per queue's open segment, one for the queues (order:
// a shard lock, then an open segment's lock, then the queues' lock).
#ifndef HERDLESS_STORAGE_EVICTION_H_
#define HERDLESS_STORAGE_EVICTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "storage/segments.h"

namespace herdless {

class S3Fifo {
 public:
  static constexpr uint8_t kMaxFrequency = 3;
  // Reads an item needs to move from S to M.
  static constexpr uint8_t kMoveToMainReads = 1;
  // S's share of the queued segments, in tenths.
  static constexpr size_t kSmallTenths = 1;

  explicit S3Fifo(SegmentPool* pool) : pool_(pool) {}
  S3Fifo(const S3Fifo&) = delete;
  S3Fifo& operator=(const S3Fifo&) = delete;

  // The fate of an item of a victim segment from queue `from` with access
  // frequency `freq`: true = keep it (copied to M's tail, with frequency
  // `*new_freq`), false = evict it.
  static bool Keep(SegmentQueue from, uint8_t freq, uint8_t* new_freq);

  // Room for `bytes` at the tail of queue `q`: at the end of its open segment,
  // or in a new one (the full one is sealed and queued). False when no
  // segment can be taken: the caller evicts and tries again. `beyond_limit`
  // is for the evictor's copies (SegmentPool::TakeFixed).
  struct Place {
    Segment* segment = nullptr;
    uint32_t offset = 0;
  };
  bool Append(SegmentQueue q, uint32_t bytes, int64_t now_s, bool beyond_limit, Place* out);

  // A new jumbo segment joins S's tail, sealed.
  void AddJumbo(Segment* s);

  // The next victim (state kEvicting, out of its queue): S's oldest segment
  // while S holds more than its share or M is empty, else M's oldest; the
  // open segments as a last resort (sealed first). nullptr when nothing is left.
  Segment* PopVictim();
  // Without eviction (-M): the queued segment with the most bytes of items
  // no longer linked (deleted, replaced), to compact; nullptr when none has any.
  Segment* PopMostDead();
  // A victim jumbo whose item is kept moves to M's tail (no copy).
  void RequeueToMain(Segment* s);
  // A segment's last linked item went away: a queued one leaves its queue and
  // is retired at once; an open or evicting one is left to its owner.
  void OnEmptied(Segment* s);
  // Retires every segment (the store is being destroyed).
  void RetireAll();

  // Ghosts (see storage/index.h): a clock that ticks once per item evicted
  // from S; a ghost stores the tick it was made at (20 bits, coarse) and is
  // fresh while fewer than `window` evictions happened since.
  uint32_t GhostStamp() const;
  uint32_t NextGhostStamp();
  bool GhostFresh(uint32_t stamp, size_t window) const;

  // Queued and open segments per queue (stats, tests).
  size_t SegmentsIn(SegmentQueue q) const;
  // Calls visit(segment) for every open and queued segment (stats), under
  // the lock that keeps it there: visit must be quick and take no lock.
  template <typename Visitor>
  void ForEachSegment(Visitor&& visit) const;

 private:
  struct List {
    Segment* head = nullptr;   // oldest
    Segment* tail = nullptr;
    size_t count = 0;
  };
  struct Appender {
    mutable std::mutex mu;
    Segment* open = nullptr;
  };
  static constexpr int kGhostShift = 4;   // a ghost tick is 16 evictions from S
  static constexpr uint32_t kGhostMask = (uint32_t{1} << 20) - 1;

  void PushLocked(SegmentQueue q, Segment* s);   // mu_ held
  void RemoveLocked(Segment* s);                  // mu_ held
  void SealLocked(Segment* s);                    // mu_ held: queue it, or retire it if empty

  SegmentPool* pool_;
  Appender appenders_[2];
  mutable std::mutex mu_;
  List lists_[2];
  std::atomic<uint64_t> ghost_clock_{0};
};

template <typename Visitor>
void S3Fifo::ForEachSegment(Visitor&& visit) const {
  for (const Appender& a : appenders_) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.open != nullptr) visit(*a.open);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const List& l : lists_) {
    for (const Segment* s = l.head; s != nullptr; s = s->next) visit(*s);
  }
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_EVICTION_H_
