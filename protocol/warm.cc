#include "protocol/warm.h"

namespace herdless {

void WarmGate::Begin(const WarmPass* pass, ItemStore* store, ThreadStats* stats) {
  pass_ = pass != nullptr ? *pass : WarmPass{};
  store_ = store;
  stats_ = stats;
}

bool WarmGate::Divert(const ReadResult& r, std::string_view key, ProcessOutcome* outcome) {
  if (!pass_.enabled || pass_.returned) return false;
  if (r.status != ReadStatus::kHit || !r.no_value || r.lease != LeaseVerdict::kWin) return false;
  if (!WarmableKey(key)) return false;
  if (store_->WarmFillsHeldOff(key)) {
    stats_->warm_refused.Add();
    return false;
  }
  outcome->Warm(key, r.cas);
  return true;
}

void PeerHitWindow::Second(uint64_t fetches, uint64_t hits) {
  const Totals& last = seen_[(next_ + kSeconds) % (kSeconds + 1)];
  if (filled_ > 0 && (fetches < last.fetches || hits < last.hits)) filled_ = 0;   // stats reset
  seen_[next_] = {fetches, hits};
  next_ = (next_ + 1) % (kSeconds + 1);
  if (filled_ < kSeconds + 1) filled_++;
}

bool PeerHitWindow::Below(double ratio) const {
  if (filled_ < 2) return false;
  const Totals& now = seen_[(next_ + kSeconds) % (kSeconds + 1)];
  const Totals& then = seen_[(next_ + kSeconds + 1 - filled_) % (kSeconds + 1)];
  uint64_t fetches = now.fetches - then.fetches;
  uint64_t hits = now.hits - then.hits;
  // A node whose own keys were never elsewhere (a ring node that did not
  // join) asks its peers rarely: judge it by everything since the start.
  if (fetches < kMinFetches) {
    fetches = now.fetches;
    hits = now.hits;
  }
  return fetches >= kMinFetches && static_cast<double>(hits) < ratio * static_cast<double>(fetches);
}

bool WarmableKey(std::string_view key) {
  if (key.empty() || key.size() > 250) return false;
  for (unsigned char c : key) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

bool StaleCopyFits(int64_t peer_ttl_s, uint32_t stale_grace_s, int64_t* stale_for_s) {
  // -1 is also "no expiry" (an invalidated value): counted as expired now.
  *stale_for_s = peer_ttl_s < -1 ? -peer_ttl_s : 0;
  return *stale_for_s < int64_t{stale_grace_s};
}

}  // namespace herdless
