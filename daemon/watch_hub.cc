#include "daemon/watch_hub.h"

#include <sys/time.h>

#include <algorithm>
#include <cstdio>

namespace herdless {

struct WatchHub::Watcher {
  uint32_t kinds = 0;
  std::string buffer;     // guarded by the hub's mu_
  uint64_t skipped = 0;   // lines lost since the last drain; guarded by mu_
};

WatchHub::WatchHub() : store_events_(this) {}
WatchHub::~WatchHub() = default;

std::shared_ptr<WatchHub::Watcher> WatchHub::Add(uint32_t kinds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (watchers_.size() >= kMaxWatchers) return nullptr;
  auto w = std::make_shared<Watcher>();
  w->kinds = kinds;
  next_gid_++;   // memcached's logger_add_watcher takes a gid (its min_gid): lines' gids skip one
  watchers_.push_back(w);
  SyncKinds();
  return w;
}

void WatchHub::Remove(const std::shared_ptr<Watcher>& watcher) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), watcher), watchers_.end());
  SyncKinds();
}

void WatchHub::SyncKinds() {
  uint32_t kinds = 0;
  for (const auto& w : watchers_) kinds |= w->kinds;
  SetWatched(kinds);
  store_events_.Sync(kinds);
}

size_t WatchHub::Drain(Watcher* watcher, std::string* out) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t before = out->size();
  if (watcher->skipped > 0) {
    char line[48];
    const int n = std::snprintf(line, sizeof(line), "skipped=%llu\n",
                                static_cast<unsigned long long>(watcher->skipped));
    out->append(line, static_cast<size_t>(n));
    watcher->skipped = 0;
  }
  out->append(watcher->buffer);
  watcher->buffer.clear();
  if (watcher->buffer.capacity() > kBufferBytes) watcher->buffer.shrink_to_fit();
  return out->size() - before;
}

void WatchHub::Write(uint32_t kind, std::string_view body) {
  // memcached's logger: "ts=%lld.%d gid=%llu " (microseconds not zero-padded).
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  char head[64];
  const int n = std::snprintf(head, sizeof(head), "ts=%lld.%d gid=%llu ",
                              static_cast<long long>(tv.tv_sec), static_cast<int>(tv.tv_usec),
                              static_cast<unsigned long long>(next_gid_++));
  const size_t len = static_cast<size_t>(n) + body.size() + 1;
  for (const auto& w : watchers_) {
    if ((w->kinds & kind) == 0) continue;
    if (w->buffer.size() + len > kBufferBytes) {
      w->skipped++;
      skipped_++;
      continue;
    }
    w->buffer.append(head, static_cast<size_t>(n));
    w->buffer.append(body);
    w->buffer.push_back('\n');
    sent_++;
  }
}

uint64_t WatchHub::skipped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

uint64_t WatchHub::sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

uint64_t WatchHub::watchers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

}  // namespace herdless
