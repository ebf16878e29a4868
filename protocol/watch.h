// Watch: memcached's `watch` log streams, as the protocol sees them. A
// connection that sends `watch <kinds>` becomes a watcher: the daemon's log
// (WatchLog, implemented in daemon/watch_hub.h) sends it one line per event
// of those kinds, memcached's format:
//
//   ts=<unix seconds>.<microseconds> gid=<n> type=<event> <field>=<value> ...\n
//
// This file names the kinds, parses the command's arguments, and formats
// each event's body (what follows "gid=<n> "): memcached's item_get,
// item_store, deleted, eviction, conn_new and conn_close lines, its flash
// tier's extwrite and compaction lines, and herdless's stampede stream
// (docs/operations.md). Keys are URI-encoded. Pure code: the buffers,
// threads and sockets are the daemon's.
#ifndef HERDLESS_PROTOCOL_WATCH_H_
#define HERDLESS_PROTOCOL_WATCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/item_store.h"
#include "storage/store_events.h"

namespace herdless {

// memcached's LOG_* bits (logger.h), plus herdless's stampede stream.
enum WatchKind : uint32_t {
  kWatchSysEvents = 1u << 1,
  kWatchFetchers = 1u << 2,
  kWatchMutations = 1u << 3,
  kWatchConnEvents = 1u << 5,
  kWatchEvictions = 1u << 6,
  kWatchRawCmds = 1u << 9,
  kWatchProxyReqs = 1u << 10,
  kWatchProxyEvents = 1u << 11,
  kWatchProxyUser = 1u << 12,
  kWatchDeletions = 1u << 13,  // memcached 1.6.21+
  // herdless: leases, stale values, parked readers (its own bit, past memcached's)
  kWatchStampede = 1u << 20,
};

// `watch [kind ...]`: the words after "watch". No word = fetchers, as
// memcached. False for a word that names no kind (memcached's ERROR). With
// `prefix` (-o compat=1.6.45) a word may be the start of a kind's name, the
// first in memcached's order winning (`watch s` is sysevents).
bool ParseWatchKinds(std::string_view args, uint32_t* kinds, bool prefix = false);

// The log the protocol writes to. Wants() is one relaxed load: callers check
// it before building a line, so nothing is formatted while nobody watches.
class WatchLog {
 public:
  bool Wants(uint32_t kinds) const { return (watched_.load(std::memory_order_relaxed) & kinds) != 0; }
  // Logs one event of `kind` whose body is `body` (no "ts=... gid=..."
  // prefix, no newline: the log adds them). Never blocks.
  virtual void Write(uint32_t kind, std::string_view body) = 0;

 protected:
  ~WatchLog() = default;
  void SetWatched(uint32_t kinds) { watched_.store(kinds, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> watched_{0};
};

// A line body being built (fixed room: the longest line is a few hundred
// bytes plus an encoded key).
class LogLine {
 public:
  LogLine& Text(std::string_view s);
  LogLine& Key(std::string_view key);   // URI-encoded
  LogLine& Number(uint64_t v);
  LogLine& Signed(int64_t v);
  std::string_view view() const { return {buf_, len_}; }

 private:
  char buf_[1024];
  size_t len_ = 0;
};

// What a fetch found (memcached's was_found).
enum class FetchStatus : uint8_t { kNotFound, kFound, kFlushed, kExpired };
// memcached's store_item_type and NREAD_* command names.
enum class StoreLogStatus : uint8_t { kNotStored, kStored, kExists, kNotFound, kTooLarge, kNoMemory };
enum class StoreLogCommand : uint8_t { kNull, kAdd, kSet, kReplace, kAppend, kPrepend, kCas };
enum class ConnTransport : uint8_t { kLocal, kTcp, kUdp };
enum class CloseReason : uint8_t { kError, kNormal, kIdleTimeout, kShutdown };

// memcached's lines.
void FormatItemGet(LogLine* line, std::string_view key, FetchStatus status, int slab_class, int fd,
                   size_t value_len);
void FormatItemStore(LogLine* line, std::string_view key, StoreLogStatus status,
                     StoreLogCommand cmd, uint32_t ttl, int slab_class, int fd, size_t value_len);
// `ip` is the peer's address text ("unix" for a unix socket).
// memcached 1.6.21+'s deletion line; `meta` is md (else delete).
void FormatItemDeleted(LogLine* line, std::string_view key, bool meta, int slab_class,
                       size_t value_len);
void FormatConnNew(LogLine* line, std::string_view ip, uint16_t port, ConnTransport transport, int fd);
void FormatConnClose(LogLine* line, std::string_view ip, uint16_t port, ConnTransport transport,
                     CloseReason reason, int fd);

// Store events: memcached's eviction, extwrite and compaction (sysevents) lines,
// herdless's stampede lines.
// Returns the watch kind the event belongs to.
uint32_t FormatStoreEvent(LogLine* line, const StoreEvent& e);

// herdless's parked-reader lines (classic wait mode).
enum class WaitEvent : uint8_t { kParked, kWoken, kTimedOut };
void FormatWait(LogLine* line, WaitEvent event, std::string_view key, uint64_t token,
                uint32_t waited_ms, int fd);

// The executors' hooks (text, meta, binary): memcached's item_get line for
// a key a read looked up, its item_store line for a store that ran (not one
// refused as too large or for want of memory, which memcached refuses before
// it stores). Each is one relaxed load while nobody watches.
struct WatchContext {
  WatchLog* log = nullptr;
  int fd = -1;   // the client's descriptor (cfd=)
  bool wants(uint32_t kind) const { return log != nullptr && log->Wants(kind); }
  void Fetch(std::string_view key, const ReadResult& r, bool hit) const;
  // A store that ran logs memcached's item_get for its lookup (what `r` says
  // it found; memcached's do_store_item looks the key up), then item_store.
  void Store(ItemStore* store, std::string_view key, size_t value_len, uint32_t client_flags,
             int64_t exptime, StoreMode mode, const StoreResult& r) const;
  // memcached's item_get for the lookup inside a delete, touch, incr or decr
  // (its do_item_get logs every lookup): found, not_found, expired or flushed.
  void Lookup(std::string_view key, const FoundItem& found) const;
  // An incr or ma that created its item on a miss: memcached stores the
  // initial number as an add, logging that store's lookup and item_store.
  void Created(ItemStore* store, std::string_view key, uint64_t value, int64_t exptime) const;
  // A delete or md that removed (or, md x, emptied) an item.
  void Delete(std::string_view key, bool meta, const DeleteRequest::Removed& removed) const;
};

// Forwards the store's events to a WatchLog as lines, asking the store only
// for the events some watcher wants (Sync after the watchers change).
class StoreEventLog final : public StoreEventSink {
 public:
  explicit StoreEventLog(WatchLog* log) : log_(log) {}
  void Sync(uint32_t watched_kinds);
  void OnEvent(const StoreEvent& event) override;

 private:
  WatchLog* log_;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_WATCH_H_
