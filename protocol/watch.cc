#include "protocol/watch.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "protocol/key.h"
#include "protocol/meta_parser.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

struct KindName {
  std::string_view name;
  uint32_t kind;
};

// memcached's process_watch_command (deletions: 1.6.21+), plus herdless's stampede.
constexpr KindName kKindNames[] = {
    {"rawcmds", kWatchRawCmds},         {"evictions", kWatchEvictions},
    {"fetchers", kWatchFetchers},       {"mutations", kWatchMutations},
    {"sysevents", kWatchSysEvents},     {"connevents", kWatchConnEvents},
    {"proxyreqs", kWatchProxyReqs},     {"proxyevents", kWatchProxyEvents},
    {"proxyuser", kWatchProxyUser},     {"deletions", kWatchDeletions},
    {"stampede", kWatchStampede},
};

constexpr const char* kFetchStatus[] = {"not_found", "found", "flushed", "expired"};
constexpr const char* kStoreStatus[] = {"not_stored", "stored",    "exists",
                                        "not_found",  "too_large", "no_memory"};
constexpr const char* kStoreCommand[] = {"null", "add", "set", "replace", "append", "prepend", "cas"};
constexpr const char* kTransport[] = {"local", "tcp", "udp"};
constexpr const char* kCloseReason[] = {"error", "normal", "idle_timeout", "shutdown"};
constexpr const char* kLeaseReason[] = {"miss", "stale", "xfetch", "recache", "takeover"};

// The slab class memcached logs for a live item (for a value on flash, its
// header item's; size= stays the value's length).
int LoggedClass(std::string_view key, size_t value_len, uint32_t client_flags, bool on_flash) {
  return MemcachedSlabClass(MemcachedLiveSize(key.size(), value_len, client_flags, on_flash));
}

}  // namespace

bool ParseWatchKinds(std::string_view args, uint32_t* kinds, bool prefix) {
  uint32_t set = 0;
  bool any = false;
  while (!args.empty()) {
    const size_t space = args.find(' ');
    const std::string_view word = args.substr(0, space);
    args = space == std::string_view::npos ? std::string_view() : args.substr(space + 1);
    if (word.empty()) continue;
    any = true;
    bool known = false;
    for (const KindName& k : kKindNames) {
      if (WordMatches(word, k.name, prefix)) {
        set |= k.kind;
        known = true;
        break;
      }
    }
    if (!known) return false;
  }
  *kinds = any ? set : kWatchFetchers;
  return true;
}

LogLine& LogLine::Text(std::string_view s) {
  const size_t n = std::min(s.size(), sizeof(buf_) - len_);
  std::memcpy(buf_ + len_, s.data(), n);
  len_ += n;
  return *this;
}

LogLine& LogLine::Key(std::string_view key) {
  char encoded[kMaxUriEncodedKey];
  return Text(std::string_view(encoded, UriEncode(key.substr(0, 250), encoded)));
}

LogLine& LogLine::Number(uint64_t v) {
  char digits[kMaxUint64Digits];
  return Text(std::string_view(digits, FormatUint64(v, digits) - digits));
}

LogLine& LogLine::Signed(int64_t v) {
  if (v < 0) {
    Text("-");
    return Number(0 - static_cast<uint64_t>(v));
  }
  return Number(static_cast<uint64_t>(v));
}

void FormatItemGet(LogLine* line, std::string_view key, FetchStatus status, int slab_class, int fd,
                   size_t value_len) {
  line->Text("type=item_get key=").Key(key).Text(" status=").Text(kFetchStatus[static_cast<int>(status)])
      .Text(" clsid=").Number(static_cast<uint64_t>(slab_class)).Text(" cfd=").Signed(fd)
      .Text(" size=").Number(value_len);
}

void FormatItemStore(LogLine* line, std::string_view key, StoreLogStatus status,
                     StoreLogCommand cmd, uint32_t ttl, int slab_class, int fd, size_t value_len) {
  line->Text("type=item_store key=").Key(key).Text(" status=")
      .Text(kStoreStatus[static_cast<int>(status)]).Text(" cmd=")
      .Text(kStoreCommand[static_cast<int>(cmd)]).Text(" ttl=").Number(ttl).Text(" clsid=")
      .Number(static_cast<uint64_t>(slab_class)).Text(" cfd=").Signed(fd).Text(" size=")
      .Number(value_len);
}

void FormatItemDeleted(LogLine* line, std::string_view key, bool meta, int slab_class,
                       size_t value_len) {
  line->Text("type=deleted key=").Key(key).Text(meta ? " cmd=md" : " cmd=delete").Text(" clsid=")
      .Number(static_cast<uint64_t>(slab_class)).Text(" size=").Number(value_len);
}

void FormatConnNew(LogLine* line, std::string_view ip, uint16_t port, ConnTransport transport, int fd) {
  line->Text("type=conn_new rip=").Text(ip).Text(" rport=").Number(port).Text(" transport=")
      .Text(kTransport[static_cast<int>(transport)]).Text(" cfd=").Signed(fd);
}

void FormatConnClose(LogLine* line, std::string_view ip, uint16_t port, ConnTransport transport,
                     CloseReason reason, int fd) {
  line->Text("type=conn_close rip=").Text(ip).Text(" rport=").Number(port).Text(" transport=")
      .Text(kTransport[static_cast<int>(transport)]).Text(" reason=")
      .Text(kCloseReason[static_cast<int>(reason)]).Text(" cfd=").Signed(fd);
}

uint32_t FormatStoreEvent(LogLine* line, const StoreEvent& e) {
  switch (e.kind) {
    case StoreEventKind::kEviction:
      line->Text("type=eviction key=").Key(e.key).Text(e.fetched ? " fetch=yes" : " fetch=no")
          .Text(" ttl=").Signed(e.ttl_s).Text(" la=").Signed(e.idle_s).Text(" clsid=")
          .Number(static_cast<uint64_t>(e.slab_class)).Text(" size=").Number(e.value_len);
      return kWatchEvictions;
    case StoreEventKind::kLeaseGranted:
      line->Text("type=lease_granted key=").Key(e.key).Text(" token=").Number(e.token)
          .Text(" reason=").Text(kLeaseReason[static_cast<int>(e.reason)]).Text(" ttl=")
          .Signed(e.ttl_s).Text(" clsid=").Number(static_cast<uint64_t>(e.slab_class));
      return kWatchStampede;
    case StoreEventKind::kLeaseFulfilled:
      line->Text("type=lease_fulfilled key=").Key(e.key).Text(" token=").Number(e.token)
          .Text(" held_ms=").Number(e.held_ms).Text(" ttl=").Signed(e.ttl_s).Text(" clsid=")
          .Number(static_cast<uint64_t>(e.slab_class)).Text(" size=").Number(e.value_len);
      return kWatchStampede;
    case StoreEventKind::kLeaseTimedOut:
      line->Text("type=lease_timeout key=").Key(e.key).Text(" token=").Number(e.previous_token)
          .Text(" new_token=").Number(e.token).Text(" held_ms=").Number(e.held_ms);
      return kWatchStampede;
    case StoreEventKind::kStaleServed:
      line->Text("type=stale_served key=").Key(e.key).Text(" cas=").Number(e.token).Text(" ttl=")
          .Signed(e.ttl_s).Text(" clsid=").Number(static_cast<uint64_t>(e.slab_class))
          .Text(" size=").Number(e.value_len);
      return kWatchStampede;
    case StoreEventKind::kFlashWrite:
      line->Text("type=extwrite key=").Key(e.key).Text(e.fetched ? " fetch=yes" : " fetch=no")
          .Text(" ttl=").Signed(e.ttl_s).Text(" la=").Signed(e.idle_s).Text(" clsid=")
          .Number(static_cast<uint64_t>(e.slab_class)).Text(" bucket=").Number(e.bucket);
      return kWatchEvictions;
    case StoreEventKind::kCompactFragInfo: {
      char ratio[32];   // memcached's %.2f
      std::snprintf(ratio, sizeof(ratio), "%.2f", e.frag_ratio);
      line->Text("type=compact_fraginfo ratio=").Text(ratio).Text(" bytes=").Number(e.frag_bytes);
      return kWatchSysEvents;
    }
    case StoreEventKind::kCompactStart:
      line->Text("type=compact_start id=").Number(e.page).Text(" version=").Number(e.page_version);
      return kWatchSysEvents;
    case StoreEventKind::kCompactReadStart:
      line->Text("type=compact_read_start id=").Number(e.page).Text(" offset=").Number(e.offset);
      return kWatchSysEvents;
    case StoreEventKind::kCompactReadEnd:
      // 1.6.45 adds the rescues that needed new memory and the values lost
      // for want of it: herdless rewrites a value without either, so 0.
      line->Text("type=compact_read_end id=").Number(e.page).Text(" offset=").Number(e.offset)
          .Text(" rescues=").Number(e.rescues);
      if (e.long_form) line->Text(" rescues_realloc=0");
      line->Text(" lost=").Number(e.lost);
      if (e.long_form) line->Text(" lost_oom=0");
      line->Text(" skipped=").Number(e.skipped);
      return kWatchSysEvents;
    case StoreEventKind::kCompactEnd:
      line->Text("type=compact_end id=").Number(e.page);
      return kWatchSysEvents;
  }
  return 0;
}

void FormatWait(LogLine* line, WaitEvent event, std::string_view key, uint64_t token,
                uint32_t waited_ms, int fd) {
  switch (event) {
    case WaitEvent::kParked:
      line->Text("type=reader_parked key=").Key(key).Text(" token=").Number(token);
      break;
    case WaitEvent::kWoken:
      line->Text("type=reader_woken key=").Key(key).Text(" token=").Number(token)
          .Text(" waited_ms=").Number(waited_ms);
      break;
    case WaitEvent::kTimedOut:
      line->Text("type=reader_timed_out key=").Key(key).Text(" token=").Number(token)
          .Text(" waited_ms=").Number(waited_ms);
      break;
  }
  line->Text(" cfd=").Signed(fd);
}

void WatchContext::Fetch(std::string_view key, const ReadResult& r, bool hit) const {
  if (!wants(kWatchFetchers)) return;
  const FetchStatus status = hit              ? FetchStatus::kFound
                             : r.miss_flushed ? FetchStatus::kFlushed
                             : r.miss_expired ? FetchStatus::kExpired
                                              : FetchStatus::kNotFound;
  const int cls = hit ? LoggedClass(key, r.value_size(), r.client_flags, r.on_flash) : 0;
  LogLine line;
  FormatItemGet(&line, key, status, cls, fd, hit ? r.value_size() : 0);
  log->Write(kWatchFetchers, line.view());
}

void WatchContext::Lookup(std::string_view key, const FoundItem& found) const {
  if (!wants(kWatchFetchers)) return;
  const int cls = found.live ? LoggedClass(key, found.value_len, found.client_flags, found.on_flash) : 0;
  const FetchStatus status = found.live                             ? FetchStatus::kFound
                             : found.miss == LookupMiss::kExpired ? FetchStatus::kExpired
                             : found.miss == LookupMiss::kFlushed ? FetchStatus::kFlushed
                                                                  : FetchStatus::kNotFound;
  LogLine line;
  FormatItemGet(&line, key, status, cls, fd, found.live ? found.value_len : 0);
  log->Write(kWatchFetchers, line.view());
}

void WatchContext::Created(ItemStore* store, std::string_view key, uint64_t value,
                           int64_t exptime) const {
  if (!wants(kWatchFetchers | kWatchMutations)) return;
  char digits[24];
  const size_t len = static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), value).ptr - digits);
  Store(store, key, len, 0, exptime, StoreMode::kAdd, StoreResult{.status = StoreStatus::kStored});
}

void WatchContext::Store(ItemStore* store, std::string_view key, size_t value_len,
                         uint32_t client_flags, int64_t exptime, StoreMode mode,
                         const StoreResult& r) const {
  if (!wants(kWatchFetchers | kWatchMutations)) return;
  StoreLogStatus logged;
  switch (r.status) {
    case StoreStatus::kStored: logged = StoreLogStatus::kStored; break;
    case StoreStatus::kExists: logged = StoreLogStatus::kExists; break;
    case StoreStatus::kNotFound: logged = StoreLogStatus::kNotFound; break;
    case StoreStatus::kNotStored: logged = StoreLogStatus::kNotStored; break;
    default: return;
  }
  // An expired or flushed copy was reclaimed before the lookup, as memcached's
  // allocator frees it first: the lookup finds nothing.
  Lookup(key, r.found);
  if (!wants(kWatchMutations)) return;
  StoreLogCommand cmd = StoreLogCommand::kSet;
  switch (mode) {
    case StoreMode::kAdd: cmd = StoreLogCommand::kAdd; break;
    case StoreMode::kReplace: cmd = StoreLogCommand::kReplace; break;
    case StoreMode::kAppend: cmd = StoreLogCommand::kAppend; break;
    case StoreMode::kPrepend: cmd = StoreLogCommand::kPrepend; break;
    case StoreMode::kCas: cmd = StoreLogCommand::kCas; break;
    default: break;
  }
  // A stored append or prepend logs the combined item, with the old item's flags.
  if ((mode == StoreMode::kAppend || mode == StoreMode::kPrepend) && r.status == StoreStatus::kStored) {
    value_len = r.stored_size;
    if (r.found.live) client_flags = r.found.client_flags;
  }
  // memcached's ttl: seconds left (0 = never; a past one wraps as its %u does).
  const int64_t at = exptime == 0 ? 0 : store->ToStoreTime(exptime);
  const uint32_t ttl = at == 0 ? 0 : static_cast<uint32_t>(at - store->NowSeconds());
  LogLine line;
  FormatItemStore(&line, key, logged, cmd, ttl,
                  MemcachedSlabClass(MemcachedItemSize(key.size(), value_len, client_flags)), fd,
                  value_len);
  log->Write(kWatchMutations, line.view());
}

void WatchContext::Delete(std::string_view key, bool meta,
                          const DeleteRequest::Removed& removed) const {
  if (!wants(kWatchDeletions)) return;
  LogLine line;
  FormatItemDeleted(&line, key, meta,
                    LoggedClass(key, removed.value_len, removed.client_flags, removed.on_flash),
                    removed.value_len);
  log->Write(kWatchDeletions, line.view());
}

void StoreEventLog::Sync(uint32_t watched_kinds) {
  uint32_t wanted = 0;
  if (watched_kinds & kWatchEvictions) wanted |= Bit(StoreEventKind::kEviction) | Bit(StoreEventKind::kFlashWrite);
  if (watched_kinds & kWatchSysEvents) {
    wanted |= Bit(StoreEventKind::kCompactFragInfo) | Bit(StoreEventKind::kCompactStart) |
              Bit(StoreEventKind::kCompactReadStart) | Bit(StoreEventKind::kCompactReadEnd) |
              Bit(StoreEventKind::kCompactEnd);
  }
  if (watched_kinds & kWatchStampede) {
    wanted |= Bit(StoreEventKind::kLeaseGranted) | Bit(StoreEventKind::kLeaseFulfilled) |
              Bit(StoreEventKind::kLeaseTimedOut) | Bit(StoreEventKind::kStaleServed);
  }
  SetWanted(wanted);
}

void StoreEventLog::OnEvent(const StoreEvent& event) {
  LogLine line;
  const uint32_t kind = FormatStoreEvent(&line, event);
  if (kind != 0) log_->Write(kind, line.view());
}

}  // namespace herdless
