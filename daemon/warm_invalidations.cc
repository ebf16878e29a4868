#include "daemon/warm_invalidations.h"

#include <cstdint>
#include <string>

#include "daemon/log.h"
#include "daemon/warm_peer.h"
#include "daemon/worker.h"
#include "protocol/cluster_ring.h"
#include "protocol/warm.h"
#include "storage/item_store.h"

namespace herdless {

std::unique_ptr<WarmInvalidations> WarmInvalidations::Configure(const ProtocolSettings& s, const ClusterRing* ring,
                                                                const std::atomic<bool>* stopped, StoreConfig* store) {
  auto made =
      std::make_unique<WarmInvalidations>(ring, stopped, s.warm_for_s > 0 ? CoarseNowSeconds() + s.warm_for_s : 0);
  store->delete_holdoff_ms = s.warm_holdoff_s * 1000;
  store->forwarded_holdoff_ms = 2 * s.warm_timeout_ms;
  store->peer_copies = made.get();
  return made;
}

bool WarmInvalidations::Over() const { return warm_until_s_ != 0 && CoarseNowSeconds() >= warm_until_s_; }

int64_t WarmInvalidations::RefusalSeconds(int64_t warm_until_s) {
  if (warm_until_s == 0) return INT64_MAX;   // warm-up never ends: nor does the refusal
  const int64_t left = warm_until_s - CoarseNowSeconds();
  return left > 0 ? left + 1 : 1;
}

void WarmInvalidations::Failed(Worker* worker, std::string_view key, int64_t warm_until_s) {
  worker->stats().warm_invalidations_failed.Add();
  worker->store()->RefuseWarmFills(key, RefusalSeconds(warm_until_s));
}

bool WarmInvalidations::Changed(std::string_view key) {
  if (Over()) return false;
  Worker* worker = Worker::Current();
  WarmPeers* peers = worker != nullptr ? worker->warm_peers() : nullptr;
  if (peers == nullptr || !WarmableKey(key)) return false;
  int first = 0;
  int end = static_cast<int>(peers->peer_count());
  if (ring_ != nullptr) {
    // Only a key this node owns is warmed, and only from its previous owner.
    first = ring_->Mine(key) ? ring_->PreviousOwner(key) : -1;
    if (first < 0) return false;
    end = first + 1;
  }
  const int64_t until = warm_until_s_;
  if (stopped_->load(std::memory_order_relaxed)) {
    // Nothing is sent while warm-up is stopped (a node whose peers lack its
    // keys stops sending too): a `warm on` later must not copy this key.
    worker->store()->RefuseWarmFills(key, RefusalSeconds(until));
    return false;
  }
  for (int peer = first; peer < end; peer++) {
    auto done = [worker, until, k = std::string(key)](const WarmResult& r) {
      if (r.kind != WarmResult::Kind::kDeleted) Failed(worker, k, until);
    };
    if (peers->Invalidate(key, peer, std::move(done))) {
      worker->stats().warm_invalidations.Add();
    } else {
      Failed(worker, key, until);   // too many under way
    }
  }
  return true;
}

void WarmInvalidations::Flushed() {
  Worker* worker = Worker::Current();
  if (Over() || worker == nullptr) return;
  worker->store()->RefuseAllWarmFills(RefusalSeconds(warm_until_s_));
  Log(LogLevel::kNotice, "flush_all: no warm fill from the peers until warm-up ends (they keep their copies)");
}

}  // namespace herdless
