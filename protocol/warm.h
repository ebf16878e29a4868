// Warm-up from a peer, as the protocol sees it (-o warm_peer, docs/deployment.md).
// A read that wins the lease of a key with no value (meta mg N, lease-get,
// get/gets and binary Get in classic_stampede modes) is not answered: the
// pass stops there (ProcessOutcome::Warm) and the daemon asks the peer for
// the value on that reader's behalf, stores a hit under the reader's lease
// token (which wakes the readers waiting on the key), and runs the request
// again with a WarmPass saying it came back: it then reads the value, or wins
// its own lease again (held_lease) and gets the recompute hint as without a
// peer. A value stale at the peer is stored as a stale one under the same
// lease (StaleCopyFits): the reader still recomputes, the others are served
// it. Keys in their delete hold-off are never sent (warm_refused).
// One WarmGate per executor; not thread-safe.
#ifndef HERDLESS_PROTOCOL_WARM_H_
#define HERDLESS_PROTOCOL_WARM_H_

#include <cstdint>
#include <string_view>

#include "protocol/request_loop.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

namespace herdless {

// What the daemon tells one Process() pass about warm-up.
struct WarmPass {
  bool enabled = false;      // a peer to warm from: a winning miss may wait for it
  bool returned = false;     // the head request is back from the peer: never again
  uint64_t held_lease = 0;   // ... without a value: the lease token it still holds
};

class WarmGate {
 public:
  // A pass begins (pass == nullptr: warm-up off for it).
  void Begin(const WarmPass* pass, ItemStore* store, ThreadStats* stats);
  // The head request has run (or parked): the ones after it are new readers.
  void NextRequest() {
    pass_.returned = false;
    pass_.held_lease = 0;
  }
  // A lease-capable read's options: the lease the head request still holds.
  void Apply(ReadOptions* opts) const { opts->held_lease = pass_.held_lease; }
  // After such a read of `key`: true (outcome->Warm called) when the reader
  // must wait for the peer instead of being answered.
  bool Divert(const ReadResult& r, std::string_view key, ProcessOutcome* outcome);

 private:
  WarmPass pass_;
  ItemStore* store_ = nullptr;
  ThreadStats* stats_ = nullptr;
};

// The peers' hit ratio over the last kSeconds seconds (-o warm_min_hit_ratio):
// fed once a second with the running totals of warm_fetches and of the
// fetches that paid (warm_hits + warm_stale_copies).
// The window starts at the start (totals zero). Below() says warm-up stopped paying: at least kMinFetches fetches in the
// window, and fewer hits than `ratio` of them; with fewer fetches in the window,
// the same over the totals since the start (a node that rarely asks). A total
// that went down (stats reset) starts the window over. Not thread-safe.
class PeerHitWindow {
 public:
  static constexpr int kSeconds = 10;
  static constexpr uint64_t kMinFetches = 20;

  void Second(uint64_t fetches, uint64_t hits);
  bool Below(double ratio) const;

 private:
  struct Totals {
    uint64_t fetches = 0, hits = 0;
  };
  Totals seen_[kSeconds + 1];   // the totals of the last kSeconds + 1 seconds,
  int filled_ = 1;              // ... how many of them are seen (the start: zeros)
  int next_ = 1;
};

// Warm-up is on: a peer is set and warm_for has not run out `uptime_s`
// seconds after the start.
inline bool WarmActive(const ProtocolSettings& s, int64_t uptime_s) {
  return s.warm_enabled() && (s.warm_for_s == 0 || uptime_s < int64_t{s.warm_for_s});
}

// A key the text protocol can carry to a peer (1..250 bytes, no space or
// control byte).
bool WarmableKey(std::string_view key);

// A peer's stale value (its TTL there `peer_ttl_s`: 0 or below once expired,
// -1 also for no expiry) is copied here as one that has been stale for
// *stale_for_s seconds: true when this node's stale_grace_s still covers
// that (0: stale serving off, nothing is copied).
bool StaleCopyFits(int64_t peer_ttl_s, uint32_t stale_grace_s, int64_t* stale_for_s);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_WARM_H_
