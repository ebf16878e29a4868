// WatchHub: the daemon's log for `watch` (protocol/watch.h's WatchLog). A
// watcher is a connection that sent `watch <kinds>`; each has a bounded
// buffer (memcached's watcher_logbuf_size, 256 KiB). Write() stamps a line
// ("ts=<s>.<us> gid=<n> <body>\n") once and appends it to every watcher of
// its kind under the hub's mutex, or counts it skipped for a watcher whose
// buffer is full: it never waits for a socket, so a slow watcher loses lines
// (log_watcher_skipped, and memcached's "skipped=<n>" line in its stream)
// and never slows a worker. The watcher's connection drains its buffer from
// its own thread (Drain). While nobody watches, Wants() is one relaxed load
// and Write() is never called. Thread-safe.
#ifndef HERDLESS_DAEMON_WATCH_HUB_H_
#define HERDLESS_DAEMON_WATCH_HUB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/watch.h"

namespace herdless {

class WatchHub final : public WatchLog {
 public:
  static constexpr size_t kBufferBytes = 256 * 1024;   // memcached's watcher_logbuf_size
  static constexpr size_t kMaxWatchers = 20;           // memcached's WATCHER_LIMIT

  struct Watcher;

  WatchHub();
  ~WatchHub();

  // A new watcher of `kinds`; nullptr when kMaxWatchers are attached.
  std::shared_ptr<Watcher> Add(uint32_t kinds);
  void Remove(const std::shared_ptr<Watcher>& watcher);

  // Appends the watcher's pending lines to *out (preceded by "skipped=<n>\n"
  // when lines were lost since the last drain) and empties its buffer.
  // Returns the bytes appended.
  size_t Drain(Watcher* watcher, std::string* out);

  void Write(uint32_t kind, std::string_view body) override;

  // The store's events, forwarded as lines (StoreConfig::events).
  StoreEventSink* store_events() { return &store_events_; }

  uint64_t skipped() const;    // log_watcher_skipped
  uint64_t sent() const;       // log_watcher_sent: lines handed to watchers
  uint64_t watchers() const;   // log_watchers

 private:
  void SyncKinds();   // under mu_

  StoreEventLog store_events_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Watcher>> watchers_;   // guarded by mu_
  uint64_t next_gid_ = 1;                           // guarded by mu_
  uint64_t skipped_ = 0;                            // guarded by mu_
  uint64_t sent_ = 0;                               // guarded by mu_
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_WATCH_HUB_H_
