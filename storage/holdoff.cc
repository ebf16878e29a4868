#include "storage/holdoff.h"

namespace herdless {

void DeleteHoldoff::Note(uint64_t hash, int64_t now_us) {
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.until_us.size() >= kMaxEntries) {
    // Drop what has ended; if the shard is still full, what ends soonest.
    std::erase_if(s.until_us, [&](const auto& e) { return e.second <= now_us; });
    const int64_t cut = now_us + holdoff_us_ / 4;
    if (s.until_us.size() >= kMaxEntries) {
      std::erase_if(s.until_us, [&](const auto& e) { return e.second <= cut; });
    }
  }
  s.until_us[hash] = now_us + holdoff_us_;
}

bool DeleteHoldoff::Holds(uint64_t hash, int64_t now_us) const {
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.until_us.find(hash);
  if (it == s.until_us.end()) return false;
  if (it->second > now_us) return true;
  s.until_us.erase(it);
  return false;
}

}  // namespace herdless
