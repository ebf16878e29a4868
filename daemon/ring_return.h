// ReturnToRing: what a node of a -o ring pool does before its first request:
// it asks each other server of the pool for the keys changed there for it
// while it was away (`ring foreign <self>`, protocol/foreign_log.h) and drops
// its copies of them (from a -e snapshot), so it never serves a value that
// was replaced or deleted meanwhile; its next read of one warms from that
// server or recomputes. A server that lists more than it kept (OVERFLOW)
// makes it drop everything. Blocking, with short timeouts: the main thread,
// before the workers start. Servers that do not answer are skipped (dead, or
// without a ring: a memcached).
#ifndef HERDLESS_DAEMON_RING_RETURN_H_
#define HERDLESS_DAEMON_RING_RETURN_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace herdless {

class ClusterRing;
class ItemStore;

struct ReturnFigures {
  uint32_t asked = 0;      // servers that answered
  uint32_t silent = 0;     // servers that did not (dead, or no ring there)
  uint64_t listed = 0;     // keys they listed
  uint64_t dropped = 0;    // copies dropped here
  bool flushed = false;    // a list overflowed: everything dropped
};

ReturnFigures ReturnToRing(const ClusterRing& ring, ItemStore* store, int timeout_ms);
// Its log line; `after_s` since start (0: before the first request).
void LogReturn(const ReturnFigures& f, int after_s);

// The same again, from a thread of its own, at 2, 4, 8 ... 64 s after start:
// writes that reach a fallback between the first listing and the router
// taking this node back (nutcracker's server_retry_timeout, 30 s by default)
// are logged there too. Dropping a key here costs at worst a recompute: the
// newer value is on the server that listed it. Stops (and joins) when destroyed.
class LaterRingReturns {
 public:
  LaterRingReturns(const ClusterRing* ring, ItemStore* store, int timeout_ms);
  ~LaterRingReturns();
  LaterRingReturns(const LaterRingReturns&) = delete;
  LaterRingReturns& operator=(const LaterRingReturns&) = delete;

 private:
  void Run(const ClusterRing* ring, ItemStore* store, int timeout_ms);

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;   // guarded by mu_
  std::thread thread_;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_RING_RETURN_H_
