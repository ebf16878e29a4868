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
  if (store_->InDeleteHoldoff(key)) {
    stats_->warm_refused.Add();
    return false;
  }
  outcome->Warm(key, r.cas);
  return true;
}

bool WarmableKey(std::string_view key) {
  if (key.empty() || key.size() > 250) return false;
  for (unsigned char c : key) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

}  // namespace herdless
