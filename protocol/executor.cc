// The classic text protocol's commands, with memcached 1.6.18's replies and
// counters (proto_text.c process_*_command, memcached.c server_stats and
// process_stat_settings). Meta commands go to ExecuteMeta().
//
// Counting follows memcached exactly, including its quirks:
//   - cmd_get counts keys of get/gets, not commands; gat/gats keys count as
//     cmd_touch with touch_hits/touch_misses and never as cmd_get/get_hits.
//   - cmd_set counts storage commands whose data block was read (a malformed
//     block too), not those refused as too large or out of memory.
//   - cas_misses: cas on a missing key; cas_badval: CAS mismatch.
//   - cmd_flush counts refused flush_all commands too.
//   - cmd_meta is counted by ExecuteMeta (memcached counts only `me`).
//   - bytes_read / bytes_written are counted by the daemon, which sees the
//     socket (swallowed data blocks and partial writes included).
//   - conn_yields counts Process() calls cut short by -R (reqs_per_event).
#include "protocol/executor.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/cachedump.h"
#include "protocol/meta_executor.h"
#include "protocol/metadump.h"
#include "protocol/numbers.h"
#include "protocol/watch.h"
#include "protocol/stat_writer.h"

namespace herdless {

namespace {

constexpr std::string_view kBadDataChunk = "CLIENT_ERROR bad data chunk";

// metadump and watch over UDP. memcached 1.6.18 starts the stream anyway and
// writes it to the unconnected UDP socket, where it is lost: the client gets
// no reply at all. herdless says why instead.
constexpr std::string_view kNoStreamOverUdp = "SERVER_ERROR streams not supported over UDP\r\n";
// memcached's MAX_NUMBER_OF_SLAB_CLASSES: class ids a command may name.
constexpr uint32_t kMaxSlabClassIds = 64;
// memcached caps `verbosity` at MAX_VERBOSITY_LEVEL.
constexpr int64_t kMaxVerbosity = 2;
// cache_memlimit bounds (megabytes), as process_memlimit_command.
constexpr int64_t kMinMemlimitMb = 8;
constexpr int64_t kMaxMemlimitMb = 1000000000;

// Classic replies obey noreply entirely: memcached's out_string() drops every
// line, errors included, once the command said noreply.
void Reply(const Request& req, ReplyBuffer* out, std::string_view line) {
  if (!req.noreply) out->Append(line);
}

// Splits "k1 k2  k3" into words, skipping runs of spaces as memcached's
// tokenizer does.
class WordIterator {
 public:
  explicit WordIterator(std::string_view keys) : rest_(keys) {}
  bool Next(std::string_view* key) {
    while (!rest_.empty() && rest_.front() == ' ') rest_.remove_prefix(1);
    if (rest_.empty()) return false;
    size_t end = rest_.find(' ');
    if (end == std::string_view::npos) end = rest_.size();
    *key = rest_.substr(0, end);
    rest_.remove_prefix(end);
    return true;
  }

 private:
  std::string_view rest_;
};

// ---------------------------------------------------------------------------
// watch fetchers / mutations: memcached's item_get and item_store lines. The
// Wants() check is one relaxed load: nothing is formatted while nobody watches.

// ---------------------------------------------------------------------------
// get / gets / gat / gats

// "VALUE <key> <flags> <bytes>[ <cas>]\r\n" built in one piece, so a hit costs
// one copy plus the in-place value.
void AppendValueLine(std::string_view key, uint32_t flags, uint32_t bytes, bool with_cas,
                     uint64_t cas, ReplyBuffer* out) {
  char line[6 + kMaxKeyLength + 3 * (1 + kMaxUint64Digits) + 2];
  char* p = line;
  std::memcpy(p, "VALUE ", 6);
  p += 6;
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  *p++ = ' ';
  p = FormatUint64(flags, p);
  *p++ = ' ';
  p = FormatUint64(bytes, p);
  if (with_cas) {
    *p++ = ' ';
    p = FormatUint64(cas, p);
  }
  *p++ = '\r';
  *p++ = '\n';
  out->Append(std::string_view(line, p - line));
}

bool IsSingleKey(std::string_view keys) {
  WordIterator words(keys);
  std::string_view key;
  return words.Next(&key) && !words.Next(&key);
}

// A multi-key get never parks (see ClassicReadOptions), so no reply is ever
// half written.
void Retrieve(ItemStore* store, ThreadStats* stats, const ProtocolSettings& settings,
              const WaitTicket* park, const WatchContext& watch, PrefixStats* prefixes,
              const Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  const bool with_cas = req.command == Command::kGets || req.command == Command::kGats;
  const bool touch = req.command == Command::kGat || req.command == Command::kGats;
  const ReadOptions opts =
      ClassicReadOptions(settings, touch, req.exptime, IsSingleKey(req.keys) ? park : nullptr);
  WordIterator keys(req.keys);
  std::string_view key;
  bool first = true;
  while (keys.Next(&key)) {
    // Over UDP memcached sends each key's reply as its own message.
    if (!first) out->EndMessage();
    first = false;
    ReadResult r = store->Read(key, opts);
    if (r.parked) {
      outcome->parked = true;
      outcome->park_key = key;
      outcome->park_token = r.cas;
      return;
    }
    const bool hit = CountClassicRead(stats, opts, r);
    watch.Fetch(key, r, hit);
    if (prefixes->enabled()) prefixes->RecordGet(key, hit);
    if (!hit) continue;
    // With -C memcached keeps no CAS and `gets` shows 0.
    AppendValueLine(key, r.client_flags, r.value.size(), with_cas,
                    settings.cas_enabled ? r.cas : 0, out);
    out->AppendItemBytes(std::move(r.item), r.value);
    out->Append("\r\n");
  }
  out->Append("END\r\n");
}

// ---------------------------------------------------------------------------
// mcrouter's lease-get (docs/protocol.md): VALUE on a fresh hit; otherwise
// LVALUE with the lease token (this client recomputes) or token 1 (another
// client does), and whatever value the key has: fresh (an XFetch draw), stale,
// or none (an empty data block).

constexpr uint64_t kHotMissToken = 1;

void LeaseGet(ItemStore* store, ThreadStats* stats, const ProtocolSettings& settings,
              PrefixStats* prefixes, const Request& req, ReplyBuffer* out) {
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  opts.lease.xfetch_beta = settings.xfetch_beta;
  opts.lease.refresh_ahead = settings.refresh_ahead;
  ReadResult r = store->Read(req.key, opts);
  stats->CountMissCause(r.miss_expired, r.miss_flushed);
  const bool has_value = r.status == ReadStatus::kHit && !r.no_value;
  stats->cmd_get.Add();
  (has_value ? stats->get_hits : stats->get_misses).Add();
  if (prefixes->enabled()) prefixes->RecordGet(req.key, has_value);
  if (r.status == ReadStatus::kMiss) {
    out->Append("END\r\n");   // no memory for the lease's placeholder: a miss without a token
    return;
  }
  // A fresh value whose lease another client holds (an early refresh under
  // way) is a plain hit: only stale values and misses are "hot misses".
  if (r.lease == LeaseVerdict::kNone || (r.lease == LeaseVerdict::kHeld && has_value && !r.stale)) {
    AppendValueLine(req.key, r.client_flags, r.value.size(), false, 0, out);
  } else {
    out->Append("LVALUE ");
    out->Append(req.key);
    out->Append(" ");
    out->AppendNumber(r.lease == LeaseVerdict::kWin ? r.cas : kHotMissToken);
    out->Append(" ");
    out->AppendNumber(r.client_flags);
    out->Append(" ");
    out->AppendNumber(r.value.size());
    out->Append("\r\n");
  }
  out->AppendItemBytes(std::move(r.item), r.value);
  out->Append("\r\nEND\r\n");
}

// ---------------------------------------------------------------------------
// set / add / replace / append / prepend / cas

StoreMode ModeOf(Command c) {
  switch (c) {
    case Command::kAdd: return StoreMode::kAdd;
    case Command::kReplace: return StoreMode::kReplace;
    case Command::kAppend: return StoreMode::kAppend;
    case Command::kPrepend: return StoreMode::kPrepend;
    case Command::kCas: return StoreMode::kCas;
    default: return StoreMode::kSet;
  }
}

// lease-set is a set that only the key's lease holder may make. A refused one
// leaves the key alone: a superseded holder must never remove a newer value.
void Update(ItemStore* store, ThreadStats* stats, const WatchContext& watch,
            PrefixStats* prefixes, const Request& req, ReplyBuffer* out) {
  const StoreMode mode = ModeOf(req.command);
  // memcached counts a storage command's prefix before it allocates the item.
  if (prefixes->enabled()) prefixes->RecordSet(req.key);
  const bool concat = mode == StoreMode::kAppend || mode == StoreMode::kPrepend;
  const bool lease_set = req.command == Command::kLeaseSet;
  const bool unlink_on_failure = mode == StoreMode::kSet && !lease_set;
  if (req.value_too_large) {
    // The parser is swallowing the block. memcached unlinks the old value of
    // a refused set "to avoid stale data persisting in cache".
    stats->store_too_large.Add();
    if (unlink_on_failure) store->Delete(DeleteRequest{.key = req.key});
    Reply(req, out, "SERVER_ERROR object too large for cache\r\n");
    return;
  }

  StoreRequest sr;
  sr.mode = mode;
  sr.key = req.key;
  sr.value = req.value;
  sr.client_flags = req.client_flags;
  sr.exptime = req.exptime;
  if (mode == StoreMode::kCas) sr.compare_cas = req.cas_unique;
  if (lease_set) {
    if (req.cas_unique <= kHotMissToken) {   // 0 and 1 are never a lease
      stats->cmd_set.Add();
      Reply(req, out, "NOT_STORED\r\n");
      return;
    }
    sr.lease_token = req.cas_unique;
  }
  const StoreResult r = store->Store(sr);
  watch.Store(store, req.key, req.value.size(), req.client_flags, req.exptime, mode, r.status);

  // memcached allocates the new item before it looks at the old one: a set,
  // add, replace or cas that does not fit fails with SERVER_ERROR. append and
  // prepend allocate the combined item later, in do_store_item, where a
  // failure is a plain NOT_STORED.
  if ((r.status == StoreStatus::kTooLarge || r.status == StoreStatus::kNoMemory) && !concat) {
    if (r.status == StoreStatus::kTooLarge) {
      // item_store.h: a too-large set has already removed the old item.
      stats->store_too_large.Add();
      Reply(req, out, "SERVER_ERROR object too large for cache\r\n");
    } else {
      stats->store_no_memory.Add();
      if (unlink_on_failure) store->Delete(DeleteRequest{.key = req.key});
      Reply(req, out, "SERVER_ERROR out of memory storing object\r\n");
    }
    return;
  }

  stats->cmd_set.Add();
  switch (r.status) {
    case StoreStatus::kStored:
      if (mode == StoreMode::kCas) stats->cas_hits.Add();
      Reply(req, out, "STORED\r\n");
      return;
    case StoreStatus::kExists:
      if (mode == StoreMode::kCas) stats->cas_badval.Add();
      Reply(req, out, "EXISTS\r\n");
      return;
    case StoreStatus::kNotFound:
      // Only cas tells a missing item apart; replace/append/prepend say
      // NOT_STORED.
      if (mode == StoreMode::kCas) {
        stats->cas_misses.Add();
        Reply(req, out, "NOT_FOUND\r\n");
      } else {
        Reply(req, out, "NOT_STORED\r\n");
      }
      return;
    case StoreStatus::kNotStored:
    case StoreStatus::kTooLarge:
    case StoreStatus::kNoMemory:
      Reply(req, out, "NOT_STORED\r\n");
      return;
  }
}

// ---------------------------------------------------------------------------
// delete / incr / decr / touch

void Delete(ItemStore* store, ThreadStats* stats, PrefixStats* prefixes, const Request& req,
            ReplyBuffer* out) {
  if (prefixes->enabled()) prefixes->RecordDelete(req.key);
  if (store->Delete(DeleteRequest{.key = req.key}) == DeleteStatus::kDeleted) {
    stats->delete_hits.Add();
    Reply(req, out, "DELETED\r\n");
  } else {
    stats->delete_misses.Add();
    Reply(req, out, "NOT_FOUND\r\n");
  }
}

void Arithmetic(ItemStore* store, ThreadStats* stats, const Request& req, ReplyBuffer* out) {
  const bool incr = req.command == Command::kIncr;
  ArithRequest ar;
  ar.key = req.key;
  ar.incr = incr;
  ar.delta = req.delta;
  const ArithResult r = store->Arithmetic(ar);
  switch (r.status) {
    case ArithStatus::kOk:
      (incr ? stats->incr_hits : stats->decr_hits).Add();
      if (!req.noreply) {
        out->AppendNumber(r.value);
        out->Append("\r\n");
      }
      return;
    case ArithStatus::kNotFound:
      (incr ? stats->incr_misses : stats->decr_misses).Add();
      Reply(req, out, "NOT_FOUND\r\n");
      return;
    case ArithStatus::kNonNumeric:
      Reply(req, out, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
      return;
    case ArithStatus::kNoMemory:
      // memcached counts the hit before it fails to allocate the new value.
      (incr ? stats->incr_hits : stats->decr_hits).Add();
      Reply(req, out, "SERVER_ERROR out of memory\r\n");
      return;
    case ArithStatus::kExists:   // only with a compare CAS, which incr/decr lack
      Reply(req, out, "EXISTS\r\n");
      return;
  }
}

void Touch(ItemStore* store, ThreadStats* stats, const Request& req, ReplyBuffer* out) {
  stats->cmd_touch.Add();
  if (store->Touch(req.key, req.exptime)) {
    stats->touch_hits.Add();
    Reply(req, out, "TOUCHED\r\n");
  } else {
    stats->touch_misses.Add();
    Reply(req, out, "NOT_FOUND\r\n");
  }
}

// ---------------------------------------------------------------------------
// flush_all / verbosity / cache_memlimit / shutdown

void FlushAll(ItemStore* store, ThreadStats* stats, const ProtocolSettings& settings,
              const Request& req, ReplyBuffer* out) {
  stats->cmd_flush.Add();   // memcached counts refused flushes too
  if (!settings.flush_enabled) {
    Reply(req, out, "CLIENT_ERROR flush_all not allowed\r\n");
    return;
  }
  // The delay is an exptime (relative, or absolute past 30 days); zero or a
  // negative delay means now.
  int64_t delay = 0;
  if (req.has_number && req.number > 0) delay = store->ToStoreTime(req.number) - store->NowSeconds();
  store->FlushAll(delay > 0 ? delay : 0);
  Reply(req, out, "OK\r\n");
}

void CacheMemlimit(ItemStore* store, const Request& req, ReplyBuffer* out) {
  // memcached reads the megabytes with safe_strtoul: anything else is ERROR.
  if (!req.has_number || req.number < 0 || req.number > int64_t{UINT32_MAX}) {
    Reply(req, out, "ERROR\r\n");
  } else if (req.number < kMinMemlimitMb) {
    Reply(req, out, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
  } else if (req.number > kMaxMemlimitMb) {
    Reply(req, out, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n");
  } else {
    store->SetMemoryLimit(static_cast<size_t>(req.number) << 20);
    Reply(req, out, "OK\r\n");
  }
}

// memcached ignores noreply here (process_shutdown_command never reads it).
void Shutdown(ServerInfo* server, const Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  if (!server->Settings().shutdown_enabled) {
    out->Append("ERROR: shutdown not enabled\r\n");
    return;
  }
  if (req.args.empty() || req.args == "graceful") {
    server->Shutdown(/*graceful=*/!req.args.empty());
    outcome->close = true;
    return;
  }
  out->Append("CLIENT_ERROR invalid shutdown mode\r\n");
}

// memcached's process_refresh_certs_command: noreply hides the OK, not an
// error. A build without TLS does not know the command.
void RefreshCerts(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  if (!server->Settings().tls.available) {
    out->Append("ERROR\r\n");
    return;
  }
  std::string error;
  if (server->RefreshCerts(&error)) {
    Reply(req, out, "OK\r\n");
    return;
  }
  out->Append(error);
  out->Append("\r\n");
}

// ---------------------------------------------------------------------------
// stats

// Stats memcached prints for machinery herdless does not have: the names stay,
// so dashboards and tools that read them keep working.
void Zeros(StatWriter* w, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) w->Add(name, uint64_t{0});
}

int HashPowerLevel(uint64_t buckets) {
  int power = 0;
  while (buckets > 1) {
    buckets >>= 1;
    ++power;
  }
  return power;
}

// herdless's warm-restart figures (-e): the last write and the load at start.
void SnapshotStats(const SnapshotFigures& f, StatWriter* w) {
  w->Add("snapshot_in_progress", uint64_t{f.in_progress});
  w->Add("snapshot_writes", f.writes);
  w->Add("snapshot_failures", f.failures);
  w->AddSigned("snapshot_last_time", f.last_time);
  w->Add("snapshot_last_duration_ms", f.last_duration_ms);
  w->Add("snapshot_last_bytes", f.last_bytes);
  w->Add("snapshot_last_items", f.last_items);
  w->Add("snapshot_loaded_items", f.loaded_items);
  w->Add("snapshot_load_skipped_expired", f.load_skipped_expired);
  w->Add("snapshot_load_skipped_too_large", f.load_skipped_too_large);
  w->Add("snapshot_load_skipped_no_memory", f.load_skipped_no_memory);
  w->Add("snapshot_load_ms", f.load_ms);
}

// `stats`: memcached's names in memcached's order (server_stats, then the
// engine totals), as a memcached run with no slab rebalancer, LRU crawler,
// segmented LRU, extstore, proxy or TLS prints them, since herdless has none
// of those. Its own lease counters follow at the end, then the snapshot's.
void GeneralStats(ItemStore* store, ServerInfo* server, StatWriter* w) {
  const ServerSnapshot snap = server->Snapshot();
  const ProtocolSettings& settings = server->Settings();
  const StoreStats ss = store->Stats();
  const ThreadStatsTotals& t = snap.totals;

  w->AddSigned("pid", snap.pid);
  w->AddSigned("uptime", snap.uptime);
  w->AddSigned("time", snap.time);
  w->Add("version", kServerVersion);
  w->Add("libevent", std::string_view(snap.libevent));
  w->Add("pointer_size", uint64_t{8 * sizeof(void*)});
  w->AddFixed("rusage_user", snap.rusage_user, 6);
  w->AddFixed("rusage_system", snap.rusage_system, 6);
  w->Add("max_connections", snap.max_connections);
  w->Add("curr_connections", snap.curr_connections);
  w->Add("total_connections", snap.total_connections);
  w->Add("rejected_connections", snap.rejected_connections);
  w->Add("connection_structures", snap.connection_structures);
  // memcached's response-object and read-buffer pools: herdless has neither
  // (replies point into items, buffers belong to connections).
  Zeros(w, {"response_obj_oom", "response_obj_count", "response_obj_bytes", "read_buf_count",
            "read_buf_bytes", "read_buf_bytes_free", "read_buf_oom"});
  w->Add("reserved_fds", snap.reserved_fds);
  w->Add("cmd_get", t.cmd_get);
  w->Add("cmd_set", t.cmd_set);
  w->Add("cmd_flush", t.cmd_flush);
  w->Add("cmd_touch", t.cmd_touch);
  w->Add("cmd_meta", t.cmd_meta);
  w->Add("get_hits", t.get_hits);
  w->Add("get_misses", t.get_misses);
  w->Add("get_expired", t.get_expired);
  w->Add("get_flushed", t.get_flushed);
  w->Add("delete_misses", t.delete_misses);
  w->Add("delete_hits", t.delete_hits);
  w->Add("incr_misses", t.incr_misses);
  w->Add("incr_hits", t.incr_hits);
  w->Add("decr_misses", t.decr_misses);
  w->Add("decr_hits", t.decr_hits);
  w->Add("cas_misses", t.cas_misses);
  w->Add("cas_hits", t.cas_hits);
  w->Add("cas_badval", t.cas_badval);
  w->Add("touch_hits", t.touch_hits);
  w->Add("touch_misses", t.touch_misses);
  w->Add("store_too_large", t.store_too_large);
  w->Add("store_no_memory", t.store_no_memory);
  w->Add("auth_cmds", t.auth_cmds);
  w->Add("auth_errors", t.auth_errors);
  if (settings.idle_timeout != 0) w->Add("idle_kicks", t.idle_kicks);
  w->Add("bytes_read", t.bytes_read);
  w->Add("bytes_written", t.bytes_written);
  w->Add("limit_maxbytes", uint64_t{store->memory_limit()});
  w->Add("accepting_conns", uint64_t{1});
  w->Add("listen_disabled_num", uint64_t{0});
  w->Add("time_in_listen_disabled_us", uint64_t{0});
  w->Add("threads", snap.threads);
  w->Add("conn_yields", t.conn_yields);
  w->Add("hash_power_level", uint64_t(HashPowerLevel(ss.hash_buckets)));
  w->Add("hash_bytes", ss.hash_bytes);
  w->Add("hash_is_expanding", uint64_t{0});
  // No slab rebalancer or LRU maintainer thread: memcached's names, zero.
  // A segment back in the free pool is a page any class takes: slabs_moved.
  Zeros(w, {"slab_reassign_rescues", "slab_reassign_chunk_rescues",
            "slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim",
            "slab_reassign_busy_items", "slab_reassign_busy_deletes", "slab_reassign_running"});
  w->Add("slabs_moved", ss.segments_recycled);
  w->Add("lru_crawler_running", uint64_t{server->CrawlRunning() ? 1u : 0u});
  w->Add("lru_crawler_starts", server->CrawlStarts());
  w->Add("lru_maintainer_juggles", uint64_t{0});
  w->Add("malloc_fails", uint64_t{0});
  // herdless's workers write log lines straight into the watchers' buffers:
  // nothing is dropped or written on the way (log_worker_*).
  Zeros(w, {"log_worker_dropped", "log_worker_written"});
  w->Add("log_watcher_skipped", snap.log_watcher_skipped);
  w->Add("log_watcher_sent", snap.log_watcher_sent);
  w->Add("log_watchers", snap.log_watchers);
  if (settings.tls.enabled) {
    if (settings.tls.session_cache) w->Add("ssl_new_sessions", snap.ssl_new_sessions);
    w->Add("ssl_handshake_errors", t.ssl_handshake_errors);
    w->AddSigned("time_since_server_cert_refresh", snap.time - snap.ssl_cert_refresh_time);
  }
  Zeros(w, {"unexpected_napi_ids", "round_robin_fallback"});
  w->Add("bytes", ss.bytes);
  w->Add("curr_items", ss.curr_items);
  w->Add("total_items", ss.total_items);
  w->Add("slab_global_page_pool", uint64_t{0});
  w->Add("expired_unfetched", ss.expired_unfetched);
  w->Add("evicted_unfetched", ss.evicted_unfetched);
  w->Add("evicted_active", ss.evicted_active);
  w->Add("evictions", ss.evictions);
  w->Add("reclaimed", ss.reclaimed);
  w->Add("crawler_reclaimed", ss.crawler_reclaimed);
  w->Add("crawler_items_checked", ss.crawler_items_checked);
  Zeros(w, {"lrutail_reflocked", "moves_to_cold", "moves_to_warm", "moves_within_lru",
            "direct_reclaims", "lru_bumps_dropped"});
  // herdless
  w->Add("curr_leases", ss.curr_leases);
  w->Add("lease_grants", ss.lease_grants);
  w->Add("lease_fulfilled", ss.lease_fulfilled);
  w->Add("lease_timeouts", ss.lease_timeouts);
  w->Add("lease_sets_refused", ss.lease_sets_refused);
  w->Add("xfetch_grants", ss.xfetch_grants);
  w->Add("refresh_grants", ss.refresh_grants);
  w->Add("hot_keys", ss.hot_keys);
  w->Add("tracked_keys", ss.rated_keys);
  w->Add("stale_hits", ss.stale_hits);
  w->Add("waits_parked", t.waits_parked);
  w->Add("waits_woken", t.waits_woken);
  w->Add("waits_timed_out", t.waits_timed_out);
  if (snap.snapshot.enabled) SnapshotStats(snap.snapshot, w);
}

// `stats items` and `stats slabs`: one entry per size class that holds
// items. herdless stores items in segments, not slabs: a "class" is the
// memcached slab class an item of that size would occupy (StoreStats::classes,
// storage/item.h MemcachedSlabClass), so tools and dashboards see the same
// class numbers as memcached's. docs/operations.md says what each field
// means here.
void AddClassStat(StatWriter* w, std::string_view prefix, int cls, std::string_view name,
                  uint64_t value) {
  char key[64];
  const int n = std::snprintf(key, sizeof(key), "%.*s%d:%.*s", static_cast<int>(prefix.size()),
                              prefix.data(), cls, static_cast<int>(name.size()), name.data());
  w->Add(std::string_view(key, static_cast<size_t>(n)), value);
}

void ItemsStats(ItemStore* store, StatWriter* w) {
  const StoreStats ss = store->Stats();
  uint64_t ages[kMemcachedClasses + 1];
  store->ClassAges(ages);
  for (int k = 1; k <= kMemcachedClasses; k++) {
    const StoreStats::Class& c = ss.classes[k];
    if (c.items == 0) continue;
    auto add = [&](std::string_view name, uint64_t v) { AddClassStat(w, "items:", k, name, v); };
    add("number", c.items);
    // No segmented LRU (lru_segmented no): every item counts as cold, as memcached's
    // without segmentation.
    add("number_hot", 0);
    add("number_warm", 0);
    add("number_cold", c.items);
    add("age_hot", 0);
    add("age_warm", 0);
    add("age", ages[k]);
    add("mem_requested", c.mem_requested);
    add("evicted", c.evicted);
    add("evicted_nonzero", c.evicted_nonzero);
    add("evicted_time", c.evicted_time);
    add("outofmemory", c.outofmemory);
    add("tailrepairs", 0);
    add("reclaimed", c.reclaimed);
    add("expired_unfetched", c.expired_unfetched);
    add("evicted_unfetched", c.evicted_unfetched);
    add("evicted_active", c.evicted_active);
    add("crawler_reclaimed", c.crawler_reclaimed);
    add("crawler_items_checked", c.crawler_items_checked);
    add("lrutail_reflocked", 0);
    add("moves_to_cold", 0);
    add("moves_to_warm", 0);
    add("moves_within_lru", 0);
    add("direct_reclaims", 0);
    add("hits_to_hot", 0);
    add("hits_to_warm", 0);
    add("hits_to_cold", c.get_hits + c.touch_hits);
    add("hits_to_temp", 0);
  }
}

void SlabsStats(ItemStore* store, StatWriter* w) {
  const StoreStats ss = store->Stats();
  uint64_t active = 0;
  for (int k = 1; k <= kMemcachedClasses; k++) {
    const StoreStats::Class& c = ss.classes[k];
    if (c.items == 0) continue;
    active++;
    auto add = [&](std::string_view name, uint64_t v) { AddClassStat(w, "", k, name, v); };
    const uint64_t chunk = MemcachedChunkSize(k);
    // The class's items in segment units, rounded up: segments are shared by
    // every class, so this is the memory its items take, not pages it owns.
    const uint64_t pages = ss.segment_size == 0 ? 0 : (c.bytes + ss.segment_size - 1) / ss.segment_size;
    add("chunk_size", chunk);
    add("chunks_per_page", ss.segment_size / chunk);
    add("total_pages", pages);
    // Items are not kept in chunks: one "chunk" per item, none free (free
    // room is in the segments being filled, shared by every class).
    add("total_chunks", c.items);
    add("used_chunks", c.items);
    add("free_chunks", 0);
    add("free_chunks_end", 0);
    add("get_hits", c.get_hits);
    add("cmd_set", c.set_cmds);
    add("delete_hits", c.delete_hits);
    add("incr_hits", c.incr_hits);
    add("decr_hits", c.decr_hits);
    add("cas_hits", c.cas_hits);
    add("cas_badval", c.cas_badval);
    add("touch_hits", c.touch_hits);
  }
  w->Add("active_slabs", active);
  w->Add("total_malloced", ss.total_malloced);
}

// `stats sizes`: the histogram of item sizes while sizes_enable is on.
void SizesStats(ItemStore* store, StatWriter* w) {
  if (!store->tracking_sizes()) {
    w->Add("sizes_status", "disabled");
    return;
  }
  for (const auto& [bytes, count] : store->SizeHistogram()) {
    char name[24];
    const int n = std::snprintf(name, sizeof(name), "%llu", static_cast<unsigned long long>(bytes));
    w->Add(std::string_view(name, static_cast<size_t>(n)), count);
  }
}

void ConnsStats(ServerInfo* server, StatWriter* w) {
  for (const ConnectionInfo& c : server->Connections()) {
    const std::string prefix = std::to_string(c.fd) + ":";
    if (c.udp) w->Add(prefix + "UDP", "UDP");
    w->Add(prefix + "addr", std::string_view(c.addr));
    if (!c.listen_addr.empty()) w->Add(prefix + "listen_addr", std::string_view(c.listen_addr));
    w->Add(prefix + "state", std::string_view(c.state));
    w->AddSigned(prefix + "secs_since_last_cmd", c.secs_since_last_cmd);
  }
}

// The words of a command's arguments (memcached's tokens after the command).
struct Words {
  static constexpr int kMax = 8;
  std::string_view word[kMax];
  int count = 0;
  explicit Words(std::string_view args) {
    WordIterator it(args);
    std::string_view w;
    while (it.Next(&w)) {
      if (count == kMax) {
        count = kMax + 1;   // more than any operator command takes
        break;
      }
      word[count++] = w;
    }
  }
};

// lru_crawler <crawl|metadump|tocrawl|sleep> <arg> | <enable|disable>, with
// memcached 1.6.18's replies (process_lru_crawler_command). crawl runs in the
// background (ServerInfo::StartCrawl); metadump turns the connection into a
// stream (ProcessOutcome::stream).
void LruCrawler(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
                ReplyBuffer* out, ProcessOutcome* outcome) {
  const Words w(req.args);
  OperatorSettings& ops = server->operators();
  const bool enabled = ops.lru_crawler.load(std::memory_order_relaxed);
  if (w.count == 2 && (w.word[0] == "crawl" || w.word[0] == "metadump")) {
    const bool dump = w.word[0] == "metadump";
    if (!enabled) {
      out->Append("CLIENT_ERROR lru crawler disabled\r\n");
      return;
    }
    if (dump && !server->Settings().dump_enabled) {
      out->Append("ERROR metadump not allowed\r\n");
      return;
    }
    if (dump && pipelined) {
      out->Append("ERROR cannot pipeline other commands before metadump\r\n");
      return;
    }
    uint64_t classes = 0;
    // "hash" walks the hash table in memcached: herdless's dump always does.
    if (!(dump && w.word[1] == "hash") && !ParseCrawlerClasses(w.word[1], &classes)) {
      out->Append("BADCLASS invalid class id\r\n");
      return;
    }
    if (dump && datagram) {
      out->Append(kNoStreamOverUdp);
      return;
    }
    if (dump) {
      outcome->stream = ProcessOutcome::Stream::kMetadump;
      outcome->stream_arg = w.word[1] == "hash" ? kAllCrawlerClasses : classes;
      return;
    }
    switch (server->StartCrawl(classes, ops.lru_crawler_tocrawl.load(std::memory_order_relaxed))) {
      case CrawlStart::kOk: out->Append("OK\r\n"); return;
      case CrawlStart::kRunning: out->Append("BUSY currently processing crawler request\r\n"); return;
      case CrawlStart::kError: break;
    }
    out->Append("ERROR an unknown error happened\r\n");
    return;
  }
  if (w.count == 2 && (w.word[0] == "tocrawl" || w.word[0] == "sleep")) {
    uint32_t n;
    if (!ParseUint32(w.word[1], &n)) {
      out->Append("CLIENT_ERROR bad command line format\r\n");
      return;
    }
    if (w.word[0] == "tocrawl") {
      ops.lru_crawler_tocrawl.store(n, std::memory_order_relaxed);
    } else if (n > 1000000) {
      out->Append("CLIENT_ERROR sleep must be one second or less\r\n");
      return;
    } else {
      ops.lru_crawler_sleep.store(n, std::memory_order_relaxed);
    }
    out->Append("OK\r\n");
    return;
  }
  if (w.count == 1 && (w.word[0] == "enable" || w.word[0] == "disable")) {
    // memcached fails to start a running crawler thread; stopping a stopped one is OK.
    const bool on = w.word[0] == "enable";
    if (ops.lru_crawler.exchange(on, std::memory_order_relaxed) && on) {
      out->Append("ERROR failed to start lru crawler thread\r\n");
    } else {
      out->Append("OK\r\n");
    }
    return;
  }
  out->Append("ERROR\r\n");
}

// slabs automove <0|1|2> | automove ratio <r> | reassign <src> <dst>
// (process_slabs_command). herdless has no slabs to move: every segment
// returns to one free pool that every class takes from, which is what
// automove asks for; the setting is kept and shown. reassign is answered as
// memcached answers a source class with no spare page, which is always true
// here (a class never holds a free segment).
void Slabs(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  const Words w(req.args);
  OperatorSettings& ops = server->operators();
  const bool noreply = w.count > 0 && w.count <= Words::kMax && w.word[w.count - 1] == "noreply";
  auto reply = [&](std::string_view line) {
    if (!noreply) out->Append(line);
  };
  if (w.count == 3 && w.word[0] == "reassign") {
    int32_t src, dst;
    if (!ParseInt32(w.word[1], &src) || !ParseInt32(w.word[2], &dst)) {
      out->Append("CLIENT_ERROR bad command line format\r\n");
    } else if (src == dst) {
      out->Append("SAME src and dst class are identical\r\n");
    } else if (src < -1 || src > kMemcachedClasses || dst < 0 || dst > kMemcachedClasses) {
      out->Append("BADCLASS invalid src or dst class id\r\n");
    } else {
      out->Append("NOSPARE source class has no spare pages\r\n");
    }
    return;
  }
  if (w.count >= 2 && w.count <= Words::kMax && w.word[0] == "automove") {
    if (w.word[1] == "ratio") {
      double ratio;
      if (w.count < 3 || !ParseDouble(w.word[2], &ratio)) {
        reply("ERROR\r\n");
        return;
      }
      ops.slab_automove_ratio.store(ratio, std::memory_order_relaxed);
    } else {
      uint32_t level;
      if (!ParseUint32(w.word[1], &level)) {
        reply("CLIENT_ERROR bad command line format\r\n");
        return;
      }
      if (level > 2) {
        reply("ERROR\r\n");
        return;
      }
      ops.slab_automove.store(level, std::memory_order_relaxed);
    }
    reply("OK\r\n");
    return;
  }
  out->Append("ERROR\r\n");
}

// watch [kinds]: memcached's process_watch_command.
void Watch(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
           ReplyBuffer* out, ProcessOutcome* outcome) {
  if (!server->Settings().watch_enabled) {
    out->Append("CLIENT_ERROR watch commands not allowed\r\n");
    return;
  }
  if (pipelined) {
    out->Append("ERROR cannot pipeline other commands before watch\r\n");
    return;
  }
  uint32_t kinds;
  if (!ParseWatchKinds(req.args, &kinds)) {
    out->Append("ERROR\r\n");
    return;
  }
  if (datagram) {
    out->Append(kNoStreamOverUdp);
    return;
  }
  outcome->stream = ProcessOutcome::Stream::kWatch;
  outcome->stream_arg = kinds;
}

// First space-separated word of `args` and what follows it.
std::string_view FirstWord(std::string_view args, std::string_view* rest) {
  WordIterator words(args);
  std::string_view word;
  if (!words.Next(&word)) word = {};
  const size_t end = word.empty() ? args.size() : (word.data() - args.data()) + word.size();
  *rest = args.substr(end);
  return word;
}

// stats detail on|off|dump (process_stats_detail); extra words are ignored.
void StatsDetail(ServerInfo* server, std::string_view args, ReplyBuffer* out) {
  std::string_view ignored;
  const std::string_view mode = FirstWord(args, &ignored);
  PrefixStats& prefixes = server->prefix_stats();
  if (mode == "on" || mode == "off") {
    prefixes.set_enabled(mode == "on");
    out->Append("OK\r\n");
  } else if (mode == "dump") {
    out->Append(prefixes.Dump());
  } else {
    out->Append("CLIENT_ERROR usage: stats detail on|off|dump\r\n");
  }
}

// stats cachedump <class> <limit> (process_stat): memcached's checks in its
// order; extra words are ignored. Class ids 0 and 40..63 are valid and empty.
void StatsCachedump(ItemStore* store, ServerInfo* server, std::string_view args,
                    ReplyBuffer* out) {
  if (!server->Settings().dump_enabled) {
    out->Append("CLIENT_ERROR stats cachedump not allowed\r\n");
    return;
  }
  const Words w(args);
  if (w.count < 2) {
    out->Append("CLIENT_ERROR bad command line\r\n");
    return;
  }
  uint32_t id, limit;
  if (!ParseUint32(w.word[0], &id) || !ParseUint32(w.word[1], &limit)) {
    out->Append("CLIENT_ERROR bad command line format\r\n");
    return;
  }
  if (id >= kMaxSlabClassIds) {
    out->Append("CLIENT_ERROR Illegal slab id\r\n");
    return;
  }
  std::string reply;
  Cachedump(store, static_cast<int>(id), limit, &reply);
  out->Append(reply);
}

void Stats(ItemStore* store, ServerInfo* server, const Request& req, ReplyBuffer* out) {
  std::string_view rest;
  const std::string_view sub = FirstWord(req.args, &rest);
  StatWriter w(out);
  if (sub == "reset") {
    server->ResetStats();
    store->ResetStats();
    server->prefix_stats().Clear();   // memcached's stats_reset clears them too
    out->Append("RESET\r\n");
  } else if (sub == "detail") {
    StatsDetail(server, rest, out);
  } else if (sub == "cachedump") {
    StatsCachedump(store, server, rest, out);
  } else if (sub == "conns") {
    ConnsStats(server, &w);
    w.End();
  } else if (!WriteStatsGroup(store, server, sub, &w)) {
    out->Append("ERROR\r\n");
  }
}

}  // namespace

bool WriteStatsGroup(ItemStore* store, ServerInfo* server, std::string_view group,
                     StatWriter* w) {
  if (group.empty()) {
    GeneralStats(store, server, w);
  } else if (group == "settings") {
    server->WriteSettings(*store, w);
  } else if (group == "items") {
    ItemsStats(store, w);
  } else if (group == "slabs") {
    SlabsStats(store, w);
  } else if (group == "sizes") {
    SizesStats(store, w);
  } else if (group == "sizes_disable" || group == "sizes_enable") {
    // memcached writes these two without an end marker.
    const bool on = group == "sizes_enable";
    store->TrackSizes(on);
    w->Add("sizes_status", on ? "enabled" : "disabled");
    return true;
  } else {
    return false;
  }
  w->End();
  return true;
}

ReadOptions ClassicReadOptions(const ProtocolSettings& settings, bool touch, int64_t exptime,
                               const WaitTicket* park, bool with_value) {
  ReadOptions opts;
  opts.kind = ReadKind::kClassic;
  if (touch) {
    opts.has_touch = true;
    opts.touch_exptime = exptime;
  }
  if (with_value && settings.classic_stampede != ClassicStampedeMode::kOff) {
    opts.kind = ReadKind::kClassicLease;
    opts.lease.xfetch_beta = settings.xfetch_beta;
    opts.lease.refresh_ahead = settings.refresh_ahead;
    if (settings.classic_stampede == ClassicStampedeMode::kWait) opts.park = park;
  }
  return opts;
}

bool CountClassicRead(ThreadStats* stats, const ReadOptions& opts, const ReadResult& r) {
  stats->CountMissCause(r.miss_expired, r.miss_flushed);
  bool hit = r.status == ReadStatus::kHit;
  if (hit && opts.kind == ReadKind::kClassicLease) hit = !r.no_value && r.lease != LeaseVerdict::kWin;
  if (opts.has_touch) {
    stats->cmd_touch.Add();
    (hit ? stats->touch_hits : stats->touch_misses).Add();
  } else {
    stats->cmd_get.Add();
    (hit ? stats->get_hits : stats->get_misses).Add();
  }
  return hit;
}

Executor::Executor(ItemStore* store, ServerInfo* server, ThreadStats* stats)
    : store_(store), server_(server), stats_(stats), limits_(ItemStoreLimits(store)),
      watch_(server->watch_log()) {}

void Executor::AnswerParseError(const ParseResult& r, ReplyBuffer* out) {
  // memcached counts a storage command as cmd_set once its data block is
  // read, before it finds the block malformed.
  if (r.error == kBadDataChunk) stats_->cmd_set.Add();
  // A classic command's noreply hides its errors too.
  if (!r.suppress) {
    out->Append(r.error);
    out->Append("\r\n");
  }
}

ProcessOutcome Executor::Process(std::string_view input, ReplyBuffer* out, size_t max_output,
                                 int max_requests, const WaitTicket* park) {
  ProcessOutcome outcome;
  park_ = park;
  batch_output_ = out->pending_bytes();
  RunRequests(input, *out, {max_output, max_requests}, &stats_->conn_yields, &outcome.consumed,
              [&](std::string_view rest) {
                const ParseResult r = ParseRequest(rest.data(), rest.size(), limits_, &request_);
                return FinishParsedStep(r, out, &outcome, [&] {
                  if (r.status == ParseStatus::kError) {
                    AnswerParseError(r, out);
                  } else {
                    Execute(request_, out, &outcome);
                  }
                  return request_.noreply || request_.meta.Has('q');
                });
              });
  park_ = nullptr;
  return outcome;
}

void Executor::Execute(Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  switch (req.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats:
      Retrieve(store_, stats_, server_->Settings(), park_, WatchContext{watch_, client_fd_},
               &server_->prefix_stats(), req, out, outcome);
      return;
    case Command::kSet:
    case Command::kAdd:
    case Command::kReplace:
    case Command::kAppend:
    case Command::kPrepend:
    case Command::kCas:
    case Command::kLeaseSet:
      Update(store_, stats_, WatchContext{watch_, client_fd_}, &server_->prefix_stats(), req, out);
      return;
    case Command::kDelete:
      Delete(store_, stats_, &server_->prefix_stats(), req, out);
      return;
    case Command::kIncr:
    case Command::kDecr:
      Arithmetic(store_, stats_, req, out);
      return;
    case Command::kTouch:
      Touch(store_, stats_, req, out);
      return;
    case Command::kFlushAll:
      FlushAll(store_, stats_, server_->Settings(), req, out);
      return;
    case Command::kStats:
      Stats(store_, server_, req, out);
      return;
    case Command::kVersion:
      out->Append("VERSION ");
      out->Append(kServerVersion);
      out->Append("\r\n");
      return;
    case Command::kVerbosity:
      server_->SetVerbosity(static_cast<int>(req.number > kMaxVerbosity ? kMaxVerbosity
                                             : req.number < 0           ? 0
                                                                        : req.number));
      Reply(req, out, "OK\r\n");
      return;
    case Command::kQuit:
      outcome->close = true;
      return;
    case Command::kShutdown:
      Shutdown(server_, req, out, outcome);
      return;
    case Command::kCacheMemlimit:
      CacheMemlimit(store_, req, out);
      return;
    case Command::kRefreshCerts:
      RefreshCerts(server_, req, out);
      return;
    case Command::kLruCrawler:
      LruCrawler(server_, req, out->pending_bytes() > batch_output_, datagram_, out, outcome);
      return;
    case Command::kSlabs:
      Slabs(server_, req, out);
      return;
    case Command::kWatch:
      Watch(server_, req, out->pending_bytes() > batch_output_, datagram_, out, outcome);
      return;
    case Command::kMetaGet:
    case Command::kMetaSet:
    case Command::kMetaDelete:
    case Command::kMetaArithmetic:
    case Command::kMetaNoop:
    case Command::kMetaDebug:
      {
        const WatchContext watch{watch_, client_fd_};
        ExecuteMeta(store_, stats_, req, out, &watch);
      }
      return;
    case Command::kLeaseGet:
      LeaseGet(store_, stats_, server_->Settings(), &server_->prefix_stats(), req, out);
      return;
  }
}

}  // namespace herdless
