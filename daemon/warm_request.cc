#include "daemon/warm_request.h"

#include "daemon/connection.h"
#include "daemon/warm_peer.h"
#include "daemon/worker.h"
#include "protocol/cluster_ring.h"
#include "storage/item_store.h"

namespace herdless {

namespace {

constexpr int64_t kRelativeExptimeMaxS = 60 * 60 * 24 * 30;   // memcached's: beyond, a Unix time

}  // namespace

WarmRequest::~WarmRequest() {
  if (fetch_ != 0 && worker_->warm_peers() != nullptr) worker_->warm_peers()->Cancel(fetch_);
}

const WarmPass* WarmRequest::Pass() {
  if (worker_->warm_peers() == nullptr) return nullptr;
  const int64_t until = worker_->config().warm_until_s;
  const std::atomic<bool>* stopped = worker_->config().warm_stopped;
  pass_.enabled = (until == 0 || CoarseNowSeconds() < until) &&
                  (stopped == nullptr || !stopped->load(std::memory_order_relaxed));
  return &pass_;
}

void WarmRequest::Note(const ProcessOutcome& outcome) {
  if (outcome.consumed > 0 || outcome.parked) {
    pass_.returned = false;
    pass_.held_lease = 0;
  }
  if (outcome.warm) Start(outcome.park_key, outcome.park_token);
}

void WarmRequest::Start(std::string_view key, uint64_t token) {
  ThreadStats& stats = worker_->stats();
  pass_.returned = true;   // whatever the peer says, the request runs once more without it
  pass_.held_lease = token;
  key_.assign(key);
  int only_peer = -1;
  if (const ClusterRing* ring = worker_->config().ring; ring != nullptr) {
    // A key this node owns came from its owner before the join; a foreign
    // key's owner is away: no peer has it.
    only_peer = ring->Mine(key) ? ring->PreviousOwner(key) : -1;
    if (only_peer < 0) {
      conn_->ResumeSoon();
      return;
    }
  }
  fetch_ = worker_->warm_peers()->Fetch(key, [this](const WarmResult& r) { Done(r); }, only_peer);
  if (fetch_ == 0) {
    stats.warm_refused.Add();   // too many under way: recompute as without a peer
    conn_->ResumeSoon();
    return;
  }
  stats.warm_fetches.Add();
}

void WarmRequest::Done(const WarmResult& r) {
  fetch_ = 0;
  ThreadStats& stats = worker_->stats();
  switch (r.kind) {
    case WarmResult::Kind::kMiss:
      stats.warm_misses.Add();
      if (r.stale) stats.warm_stale.Add();
      break;
    case WarmResult::Kind::kStale:
      stats.warm_misses.Add();
      stats.warm_stale.Add();
      if (StoreStaleCopy(r)) stats.warm_stale_copies.Add();
      break;
    case WarmResult::Kind::kTimeout: stats.warm_timeouts.Add(); break;
    case WarmResult::Kind::kError:
    case WarmResult::Kind::kDeleted: stats.warm_errors.Add(); break;   // (an invalidation's: never here)
    case WarmResult::Kind::kHit: {
      stats.warm_hits.Add();
      ItemStore* store = worker_->store();
      int64_t ttl = r.ttl_known ? r.ttl_s : kUnknownTtlS;
      int64_t exptime = ttl < 0 ? 0 : ttl;
      if (exptime > kRelativeExptimeMaxS) exptime += store->config().clock->UnixSeconds();
      StoreRequest req;
      req.mode = StoreMode::kSet;
      req.key = key_;
      req.value = r.value;
      req.client_flags = r.flags;
      req.exptime = exptime;
      req.lease_token = pass_.held_lease;   // only while this reader's lease is the live one
      req.warm_fill = true;                 // the peer's own copy: nothing to invalidate there
      store->Store(req);
      break;
    }
  }
  conn_->ResumeSoon();
}

// The peer's stale value, stored as stale under the reader's lease: the
// reader still gets its recompute hint, the key's other readers this value,
// as the peer would have served them. Not when this node would not serve it
// (stale_grace), nor once a client's change here ended the lease.
bool WarmRequest::StoreStaleCopy(const WarmResult& r) {
  ItemStore* store = worker_->store();
  StoreRequest req;
  if (!StaleCopyFits(r.ttl_s, store->config().stale_grace_s, &req.stale_for_s)) return false;
  req.mode = StoreMode::kSet;
  req.key = key_;
  req.value = r.value;
  req.client_flags = r.flags;
  req.lease_token = pass_.held_lease;
  req.stale_copy = true;
  req.warm_fill = true;
  return store->Store(req).status == StoreStatus::kStored;
}

}  // namespace herdless
