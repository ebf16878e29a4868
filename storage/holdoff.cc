#include "storage/holdoff.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace herdless {

void DeleteHoldoff::Note(uint64_t hash, int64_t until_us, int64_t now_us) {
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (until_us <= s.all_until_us) return;   // the whole shard is refused longer
  auto found = s.until_us.find(hash);
  if (found != s.until_us.end()) {
    found->second = std::max(found->second, until_us);
    return;
  }
  if (s.until_us.size() >= kMaxEntries) {
    // Drop what has ended; if the shard is still full, the quarter that ends
    // soonest (exactly a quarter, however many end at the same time: the next
    // kMaxEntries / 4 notes then pass without a scan), whose refusals the
    // whole shard takes over.
    std::erase_if(s.until_us, [&](const auto& e) { return e.second <= now_us; });
    if (s.until_us.size() >= kMaxEntries) {
      std::vector<std::pair<int64_t, uint64_t>> by_end;
      by_end.reserve(s.until_us.size());
      for (const auto& [h, until] : s.until_us) by_end.emplace_back(until, h);
      const auto quarter = by_end.begin() + static_cast<std::ptrdiff_t>(by_end.size() / 4);
      std::nth_element(by_end.begin(), quarter, by_end.end());
      for (auto it = by_end.begin(); it != quarter; ++it) {
        s.all_until_us = std::max(s.all_until_us, it->first);
        s.until_us.erase(it->second);
      }
      std::erase_if(s.until_us, [&](const auto& e) { return e.second <= s.all_until_us; });
      if (until_us <= s.all_until_us) return;
    }
  }
  s.until_us[hash] = until_us;
}

void DeleteHoldoff::NoteAll(int64_t until_us) {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.all_until_us = std::max(s.all_until_us, until_us);
    std::erase_if(s.until_us, [&](const auto& e) { return e.second <= s.all_until_us; });
  }
}

bool DeleteHoldoff::Holds(uint64_t hash, int64_t now_us) const {
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.all_until_us > now_us) return true;
  auto it = s.until_us.find(hash);
  if (it == s.until_us.end()) return false;
  if (it->second > now_us) return true;
  s.until_us.erase(it);
  return false;
}

size_t DeleteHoldoff::size() const {
  size_t n = 0;
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    n += s.until_us.size();
  }
  return n;
}

}  // namespace herdless
