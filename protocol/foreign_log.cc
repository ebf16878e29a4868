#include "protocol/foreign_log.h"

namespace herdless {

ForeignLog::ForeignLog(const ClusterRing* ring, int64_t ttl_s)
    : ring_(ring), ttl_s_(ttl_s), logged_(ring->pool().servers.size()), overflowed_(ring->pool().servers.size()) {}

void ForeignLog::Changed(std::string_view key) {
  sets_.fetch_add(1, std::memory_order_relaxed);
  const int owner = ring_->Owner(key);
  if (owner < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto& keys = logged_[owner];
  if (total_ >= kMaxKeys) {
    if (keys.find(std::string(key)) == keys.end()) overflowed_[owner] = true;
    return;
  }
  if (keys.emplace(key).second) total_++;
}

std::vector<std::string> ForeignLog::Take(int owner, bool* overflowed) {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto& keys = logged_[owner];
  out.reserve(keys.size());
  for (const std::string& k : keys) out.push_back(k);
  total_ -= keys.size();
  handed_ += keys.size();
  keys.clear();
  *overflowed = overflowed_[owner];
  overflowed_[owner] = false;
  return out;
}

ForeignLog::Figures ForeignLog::Stats() const {
  Figures f;
  f.foreign_sets = sets_.load(std::memory_order_relaxed);
  f.foreign_hits = hits_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  f.foreign_logged = total_;
  f.foreign_handed = handed_;
  return f;
}

}  // namespace herdless
