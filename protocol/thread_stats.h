// ThreadStats: the protocol counters of one worker thread. Only the owning
// worker writes (plain load+store, no locked instruction on the hot path);
// `stats` reads every worker's copy with relaxed loads and sums them.
#ifndef HERDLESS_PROTOCOL_THREAD_STATS_H_
#define HERDLESS_PROTOCOL_THREAD_STATS_H_

#include <atomic>
#include <cstdint>

namespace herdless {

// A single-writer counter.
class Counter {
 public:
  void Add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }
  void Reset() { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// The counters, by the place `stats` prints them (stats_groups.cc); the
// names are memcached's `stats` names (plus herdless's wait counters).
// The command counters: one run, in memcached's order, after reserved_fds.
// With -o ext_path memcached prints the flash tier's read counters
// (storage/store_stats.h) between the two halves.
#define HERDLESS_COMMAND_STATS(X) HERDLESS_GET_COMMAND_STATS(X) HERDLESS_OTHER_COMMAND_STATS(X)
#define HERDLESS_GET_COMMAND_STATS(X) \
  X(cmd_get) X(cmd_set) X(cmd_flush) X(cmd_touch) X(cmd_meta) \
  X(get_hits) X(get_misses) X(get_expired) X(get_flushed)
#define HERDLESS_OTHER_COMMAND_STATS(X) \
  X(delete_misses) X(delete_hits) X(incr_misses) X(incr_hits) \
  X(decr_misses) X(decr_hits) X(cas_misses) X(cas_hits) X(cas_badval) \
  X(touch_hits) X(touch_misses) X(store_too_large) X(store_no_memory) \
  X(auth_cmds) X(auth_errors)
// The connection counters: each where memcached prints it, some only with
// a setting on (idle_kicks with -o idle_timeout, ssl_* with -Z).
#define HERDLESS_CONNECTION_STATS(X) \
  X(ssl_handshake_errors) X(ssl_proto_errors) X(bytes_read) X(bytes_written) X(conn_yields) X(idle_kicks)
// Classic wait mode's parked readers: one run, after the lease counters.
#define HERDLESS_WAIT_STATS(X) X(waits_parked) X(waits_woken) X(waits_timed_out)
// Warm-up from a peer (-o warm_peer): one run, after the wait counters, shown
// while a peer is set. Fetches asked, and how each ended; refused: a key in
// its delete hold-off, or too many fetches in flight; stale: misses where a
// peer had the value but stale or being recomputed (W, Z, X); stale_copies:
// of those, stored here as a stale value (-o stale_grace). Invalidations: deletes
// sent to a peer after a client changed a key here; failed: not confirmed
// (the key then warms no more until warm-up ends; docs/deployment.md).
#define HERDLESS_WARM_STATS(X) \
  X(warm_fetches) X(warm_hits) X(warm_misses) X(warm_stale) X(warm_stale_copies) X(warm_timeouts) \
  X(warm_errors) X(warm_refused) X(warm_invalidations) X(warm_invalidations_failed)

#define HERDLESS_THREAD_STATS(X) \
  HERDLESS_COMMAND_STATS(X) HERDLESS_CONNECTION_STATS(X) HERDLESS_WAIT_STATS(X) \
  HERDLESS_WARM_STATS(X)

struct ThreadStats {
#define HERDLESS_DECLARE_COUNTER(name) Counter name;
  HERDLESS_THREAD_STATS(HERDLESS_DECLARE_COUNTER)
#undef HERDLESS_DECLARE_COUNTER

  // A read that found its item expired or flushed (and so missed), as
  // memcached counts it for every kind of get.
  void CountMissCause(bool expired, bool flushed) {
    if (expired) get_expired.Add();
    if (flushed) get_flushed.Add();
  }

  void Reset() {
#define HERDLESS_RESET_COUNTER(name) name.Reset();
    HERDLESS_THREAD_STATS(HERDLESS_RESET_COUNTER)
#undef HERDLESS_RESET_COUNTER
  }
};

// Plain sums over all workers, for formatting.
struct ThreadStatsTotals {
#define HERDLESS_DECLARE_TOTAL(name) uint64_t name = 0;
  HERDLESS_THREAD_STATS(HERDLESS_DECLARE_TOTAL)
#undef HERDLESS_DECLARE_TOTAL

  void Add(const ThreadStats& s) {
#define HERDLESS_ADD_TOTAL(name) name += s.name.Get();
    HERDLESS_THREAD_STATS(HERDLESS_ADD_TOTAL)
#undef HERDLESS_ADD_TOTAL
  }
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_THREAD_STATS_H_
