#include "storage/eviction.h"

#include <cassert>

namespace herdless {

bool S3Fifo::Keep(SegmentQueue from, uint8_t freq, uint8_t* new_freq) {
  if (from == SegmentQueue::kSmall) {
    if (freq < kMoveToMainReads) return false;
    *new_freq = 0;   // M counts its own reads
    return true;
  }
  if (freq == 0) return false;
  *new_freq = static_cast<uint8_t>(freq - 1);
  return true;
}

// ---------------------------------------------------------------------------
// Appending.

bool S3Fifo::Append(SegmentQueue q, uint32_t bytes, int64_t now_s, bool beyond_limit, Place* out) {
  Appender& a = appenders_[static_cast<int>(q)];
  std::lock_guard<std::mutex> lock(a.mu);
  Segment* s = a.open;
  if (s == nullptr || s->reserved + bytes > s->capacity) {
    Segment* fresh = pool_->TakeFixed(now_s, beyond_limit);
    if (fresh == nullptr) return false;
    fresh->queue = q;
    if (s != nullptr) {
      std::lock_guard<std::mutex> queues(mu_);
      SealLocked(s);
    }
    a.open = s = fresh;
  }
  out->segment = s;
  out->offset = s->reserved;
  s->reserved += bytes;
  return true;
}

void S3Fifo::AddJumbo(Segment* s) {
  s->queue = SegmentQueue::kSmall;
  std::lock_guard<std::mutex> lock(mu_);
  PushLocked(SegmentQueue::kSmall, s);
}

// ---------------------------------------------------------------------------
// The queues.

void S3Fifo::PushLocked(SegmentQueue q, Segment* s) {
  List& l = lists_[static_cast<int>(q)];
  s->queue = q;
  s->state.store(SegmentState::kQueued, std::memory_order_relaxed);
  s->prev = l.tail;
  s->next = nullptr;
  if (l.tail != nullptr) l.tail->next = s;
  else l.head = s;
  l.tail = s;
  l.count++;
}

void S3Fifo::RemoveLocked(Segment* s) {
  List& l = lists_[static_cast<int>(s->queue)];
  if (s->prev != nullptr) s->prev->next = s->next;
  else l.head = s->next;
  if (s->next != nullptr) s->next->prev = s->prev;
  else l.tail = s->prev;
  s->prev = s->next = nullptr;
  l.count--;
}

// A full (or abandoned) open segment: queued, unless nothing in it is linked
// any more (its items were all deleted while it was open). `written` is read
// first: an appender counts its link in live_items before it publishes its
// bytes in `written` (release), so once every reservation is written a
// live_items of 0 is not an appender's link still on its way. (Read the
// other way round, a link made between the two reads retired a segment an
// index slot pointed into.)
void S3Fifo::SealLocked(Segment* s) {
  if (s->written.load(std::memory_order_acquire) == s->reserved &&
      s->live_items.load(std::memory_order_acquire) == 0) {
    pool_->Retire(s);
    return;
  }
  PushLocked(s->queue, s);
}

Segment* S3Fifo::PopVictim() {
  for (int attempt = 0; attempt < 3; attempt++) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      List& small = lists_[static_cast<int>(SegmentQueue::kSmall)];
      List& main = lists_[static_cast<int>(SegmentQueue::kMain)];
      const size_t queued = small.count + main.count;
      List* from = nullptr;
      if (small.count != 0 && (small.count * 10 > queued * kSmallTenths || main.count == 0)) {
        from = &small;
      } else if (main.count != 0) {
        from = &main;
      }
      if (from != nullptr) {
        Segment* s = from->head;
        RemoveLocked(s);
        s->state.store(SegmentState::kEvicting, std::memory_order_relaxed);
        return s;
      }
    }
    // Everything left is in the open segments: seal one (S's first), so the
    // next pass can take it.
    const int q = attempt == 0 ? static_cast<int>(SegmentQueue::kSmall) : static_cast<int>(SegmentQueue::kMain);
    Appender& a = appenders_[q];
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.open == nullptr) continue;
    std::lock_guard<std::mutex> queues(mu_);
    SealLocked(a.open);
    a.open = nullptr;
  }
  return nullptr;
}

Segment* S3Fifo::PopMostDead() {
  std::lock_guard<std::mutex> lock(mu_);
  Segment* best = nullptr;
  uint64_t most_dead = 0;
  for (const List& l : lists_) {
    for (Segment* s = l.head; s != nullptr; s = s->next) {
      if (s->jumbo) continue;
      const uint64_t live = s->live_bytes.load(std::memory_order_relaxed);
      const uint64_t dead = s->reserved > live ? s->reserved - live : 0;
      if (dead > most_dead) {
        most_dead = dead;
        best = s;
      }
    }
  }
  if (best != nullptr) {
    RemoveLocked(best);
    best->state.store(SegmentState::kEvicting, std::memory_order_relaxed);
  }
  return best;
}

void S3Fifo::RequeueToMain(Segment* s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s->live_items.load(std::memory_order_acquire) == 0) {
    pool_->Retire(s);   // its item went while it was being decided on
    return;
  }
  PushLocked(SegmentQueue::kMain, s);
}

void S3Fifo::OnEmptied(Segment* s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s->state.load(std::memory_order_relaxed) != SegmentState::kQueued) return;
  // A sealed segment may still have room reserved by an appender that has
  // not linked its item yet: that link will come (and OnEmptied again when
  // it goes). `written` first, as in SealLocked.
  if (!s->jumbo && s->written.load(std::memory_order_acquire) != s->reserved) return;
  if (s->live_items.load(std::memory_order_acquire) != 0) return;   // relinked meanwhile
  RemoveLocked(s);
  pool_->Retire(s);
}

void S3Fifo::RetireAll() {
  for (Appender& a : appenders_) {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.open != nullptr) pool_->Retire(a.open);
    a.open = nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (List& l : lists_) {
    while (l.head != nullptr) {
      Segment* s = l.head;
      RemoveLocked(s);
      pool_->Retire(s);
    }
  }
}

size_t S3Fifo::SegmentsIn(SegmentQueue q) const {
  size_t n = 0;
  {
    const Appender& a = appenders_[static_cast<int>(q)];
    std::lock_guard<std::mutex> lock(a.mu);
    n += a.open != nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return n + lists_[static_cast<int>(q)].count;
}

// ---------------------------------------------------------------------------
// Ghosts.

uint32_t S3Fifo::GhostStamp() const {
  return static_cast<uint32_t>(ghost_clock_.load(std::memory_order_relaxed) >> kGhostShift) & kGhostMask;
}

uint32_t S3Fifo::NextGhostStamp() {
  return static_cast<uint32_t>(ghost_clock_.fetch_add(1, std::memory_order_relaxed) >> kGhostShift) &
         kGhostMask;
}

bool S3Fifo::GhostFresh(uint32_t stamp, size_t window) const {
  const uint64_t age_ticks = (GhostStamp() - stamp) & kGhostMask;
  // Ages past half the stamp's range are ambiguous (wrapped): stale.
  if (age_ticks > (kGhostMask >> 1)) return false;
  return (age_ticks << kGhostShift) < window;
}

}  // namespace herdless
