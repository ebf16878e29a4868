// The classic text protocol's commands and mcrouter's lease commands, with
// memcached 1.6.18's replies and counters (proto_text.c process_*_command).
//
// Counting follows memcached exactly, including its quirks:
//   - cmd_get counts keys of get/gets, not commands; gat/gats keys count as
//     cmd_touch with touch_hits/touch_misses and never as cmd_get/get_hits.
//   - cmd_set counts storage commands whose data block was read (a malformed
//     block too: the Executor counts that one), not those refused as too
//     large or out of memory.
//   - cas_misses: cas on a missing key; cas_badval: CAS mismatch.
//   - cmd_flush counts refused flush_all commands too.
//   - cmd_meta is counted by ExecuteMeta (memcached counts only `me`).
//   - bytes_read / bytes_written are counted by the daemon, which sees the
//     socket (swallowed data blocks and partial writes included).
#include "protocol/text_commands.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/accounting.h"
#include "protocol/meta_executor.h"
#include "protocol/meta_parser.h"
#include "protocol/numbers.h"
#include "protocol/operator_commands.h"
#include "protocol/stats_groups.h"

namespace herdless {

namespace {

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

// -o ext_path: parks the request on every one of `keys` whose value is on
// flash and not yet fetched (their fetches go out together; their batch's end
// wakes it).
bool ParkOnFlash(ItemStore* store, std::string_view keys, const WaitTicket& ticket, ProcessOutcome* outcome) {
  thread_local std::vector<std::string_view> list;   // reused: no allocation per get
  list.clear();
  WordIterator words(keys);
  std::string_view key;
  while (words.Next(&key)) list.push_back(key);
  std::string_view first;
  if (store->ParkOnFlash(list, ticket, &first) == 0) return false;
  outcome->Park(first, 0);
  return true;
}

// A multi-key get never parks in wait mode (see ClassicReadOptions), so no
// reply is ever half written; with -o ext_path it parks on its keys on
// flash before writing anything (ParkOnFlash), and runs again once fetched.
void Retrieve(const TextContext& c, const Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  ItemStore* store = c.store;
  ThreadStats* stats = c.stats;
  const ProtocolSettings& settings = c.server->Settings();
  const WatchContext& watch = c.watch;
  PrefixStats* prefixes = &c.server->prefix_stats();
  const bool with_cas = req.command == Command::kGets || req.command == Command::kGats;
  const bool touch = req.command == Command::kGat || req.command == Command::kGats;
  const bool single = !req.key.empty();   // the parser found one key
  if (!single && c.park != nullptr && store->config().flash != nullptr && ParkOnFlash(store, req.keys, *c.park, outcome)) {
    return;
  }
  ReadOptions opts = ClassicReadOptions(settings, touch, req.exptime, single ? c.park : nullptr,
                                        /*with_value=*/true, c.client_gone);
  if (single) opts.key_hash = c.key_hash;
  WarmGate* warm = single && opts.kind == ReadKind::kClassicLease ? c.warm : nullptr;
  if (warm != nullptr) warm->Apply(&opts);
  WordIterator keys(req.keys);   // one key is not split from the list again
  std::string_view key = req.key;
  bool first = true;
  bool owes_value_end = false;   // the last value's "\r\n", appended with what follows it
  while (single ? first : keys.Next(&key)) {
    if (owes_value_end) {
      out->Append("\r\n");
      owes_value_end = false;
    }
    // Over UDP memcached sends each key's reply as its own message.
    if (!first) out->EndMessage();
    first = false;
    ReadResult r = store->Read(key, opts);
    if (r.parked) {
      outcome->Park(key, r.cas);
      return;
    }
    if (warm != nullptr && warm->Divert(r, key, outcome)) return;
    const bool hit = CountClassicRead(stats, opts, r);
    watch.Fetch(key, r, hit);
    if (prefixes->enabled()) prefixes->RecordGet(key, hit);
    if (!hit) continue;
    // With -C memcached keeps no CAS and `gets` shows 0.
    AppendValueLine(key, r.client_flags, r.value.size(), with_cas,
                    settings.cas_enabled ? r.cas : 0, out);
    out->AppendItemBytes(std::move(r.item), r.value);
    // 1.6.18 writes a get's replies before it reads the next request (no
    // item stays referenced); 1.6.45 holds them with the batch's others.
    if (req.latest) out->Hold(r.cas);
    owes_value_end = true;
  }
  out->Append(owes_value_end ? std::string_view("\r\nEND\r\n") : std::string_view("END\r\n"));
}

// ---------------------------------------------------------------------------
// mcrouter's lease-get (docs/protocol.md): VALUE on a fresh hit; otherwise
// LVALUE with the lease token (this client recomputes) or token 1 (another
// client does), and whatever value the key has: fresh (an XFetch draw), stale,
// or none (an empty data block).

constexpr uint64_t kHotMissToken = 1;

void LeaseGet(ItemStore* store, ThreadStats* stats, const ProtocolSettings& settings,
              PrefixStats* prefixes, WarmGate* warm, const Request& req, ReplyBuffer* out,
              ProcessOutcome* outcome) {
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  opts.lease.xfetch_beta = settings.xfetch_beta;
  opts.lease.refresh_ahead = settings.refresh_ahead;
  if (warm != nullptr) warm->Apply(&opts);
  ReadResult r = store->Read(req.key, opts);
  if (warm != nullptr && warm->Divert(r, req.key, outcome)) return;
  stats->CountMissCause(r.miss_expired, r.miss_flushed);
  const bool has_value = r.status == ReadStatus::kHit && !r.no_value;
  CountRead(stats, /*touch=*/false, has_value);
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

// The reply to a store that was not refused.
std::string_view StoreReplyLine(StoreStatus status, StoreMode mode) {
  switch (status) {
    case StoreStatus::kStored: return "STORED\r\n";
    case StoreStatus::kExists: return "EXISTS\r\n";
    // Only cas tells a missing item apart; replace/append/prepend say NOT_STORED.
    case StoreStatus::kNotFound: return mode == StoreMode::kCas ? "NOT_FOUND\r\n" : "NOT_STORED\r\n";
    default: return "NOT_STORED\r\n";
  }
}

// lease-set is a set that only the key's lease holder may make. A refused one
// leaves the key alone: a superseded holder must never remove a newer value.
void Update(const TextContext& c, const Request& req, ReplyBuffer* out) {
  ItemStore* store = c.store;
  ThreadStats* stats = c.stats;
  const WatchContext& watch = c.watch;
  PrefixStats* prefixes = &c.server->prefix_stats();
  const StoreMode mode = ModeOf(req.command);
  // memcached counts a storage command's prefix before it allocates the item.
  if (prefixes->enabled()) prefixes->RecordSet(req.key);
  const bool concat = mode == StoreMode::kAppend || mode == StoreMode::kPrepend;
  const bool lease_set = req.command == Command::kLeaseSet;
  const bool unlink_on_failure = mode == StoreMode::kSet && !lease_set;
  if (req.value_too_large) {
    // The parser is swallowing the block. memcached unlinks the old value of
    // a refused set "to avoid stale data persisting in cache".
    CountStoreRefusal(stats, StoreStatus::kTooLarge);
    if (unlink_on_failure) store->Delete(DeleteRequest{.key = req.key});
    Reply(req, out, StoreRefusalLine(StoreStatus::kTooLarge));
    return;
  }

  StoreRequest sr;
  sr.mode = mode;
  sr.key = req.key;
  sr.key_hash = c.key_hash;
  sr.value = req.value;
  sr.client_flags = req.client_flags;
  sr.exptime = req.exptime;
  // classic_stampede answers the winner's get of a stale item with a miss.
  sr.classic_lease_add = c.server->Settings().classic_stampede != ClassicStampedeMode::kOff;
  if (mode == StoreMode::kCas) sr.compare_cas = req.cas_unique;
  if (lease_set) {
    if (req.cas_unique <= kHotMissToken) {   // 0 and 1 are never a lease
      CountStore(stats, StoreStatus::kNotStored, /*compare=*/false);
      Reply(req, out, "NOT_STORED\r\n");
      return;
    }
    sr.lease_token = req.cas_unique;
  }
  const StoreResult r = store->Store(sr);
  watch.Store(store, req.key, req.value.size(), req.client_flags, req.exptime, mode, r);

  // A set, add, replace or cas that does not fit fails with SERVER_ERROR;
  // append and prepend allocate later, where it is a plain NOT_STORED.
  if (IsAllocationFailure(r.status) && !concat) {
    // item_store.h: a too-large set has already removed the old item.
    if (r.status == StoreStatus::kNoMemory && unlink_on_failure) {
      store->Delete(DeleteRequest{.key = req.key});
    }
    CountStoreRefusal(stats, r.status);
    Reply(req, out, StoreRefusalLine(r.status));
    return;
  }
  CountStore(stats, r.status, /*compare=*/mode == StoreMode::kCas);
  Reply(req, out, StoreReplyLine(r.status, mode));
}

// ---------------------------------------------------------------------------
// delete / incr / decr / touch

void Delete(ItemStore* store, ThreadStats* stats, const WatchContext& watch, PrefixStats* prefixes,
            const Request& req, uint64_t key_hash, ReplyBuffer* out) {
  if (prefixes->enabled()) prefixes->RecordDelete(req.key);
  DeleteRequest::Removed removed;
  const bool deleted = store->Delete(DeleteRequest{.key = req.key, .removed = &removed, .key_hash = key_hash}) ==
                       DeleteStatus::kDeleted;
  watch.Lookup(req.key, removed);
  if (deleted) {
    watch.Delete(req.key, /*meta=*/false, removed);
    stats->delete_hits.Add();
    Reply(req, out, "DELETED\r\n");
  } else {
    stats->delete_misses.Add();
    Reply(req, out, "NOT_FOUND\r\n");
  }
}

void Arithmetic(ItemStore* store, ThreadStats* stats, const WatchContext& watch, const Request& req,
                uint64_t key_hash, ReplyBuffer* out) {
  const bool incr = req.command == Command::kIncr;
  ArithRequest ar;
  ar.key = req.key;
  ar.key_hash = key_hash;
  ar.incr = incr;
  ar.delta = req.delta;
  ar.referenced = out->held();
  const ArithResult r = store->Arithmetic(ar);
  watch.Lookup(req.key, r.found);
  switch (r.status) {
    case ArithStatus::kOk:
      CountArithmetic(stats, incr, /*hit=*/true);
      if (!req.noreply) {
        out->AppendNumber(r.value);
        out->Append("\r\n");
      }
      return;
    case ArithStatus::kNotFound:
      CountArithmetic(stats, incr, /*hit=*/false);
      Reply(req, out, "NOT_FOUND\r\n");
      return;
    case ArithStatus::kNonNumeric:
      Reply(req, out, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
      return;
    case ArithStatus::kNoMemory:
      // memcached counts the hit before it fails to allocate the new value.
      CountArithmetic(stats, incr, /*hit=*/true);
      Reply(req, out, "SERVER_ERROR out of memory\r\n");
      return;
    case ArithStatus::kExists:   // only with a compare CAS, which incr/decr lack
      Reply(req, out, "EXISTS\r\n");
      return;
  }
}

void Touch(ItemStore* store, ThreadStats* stats, const WatchContext& watch, const Request& req,
           uint64_t key_hash, ReplyBuffer* out) {
  FoundItem found;
  const bool touched = store->Touch(req.key, req.exptime, &found, key_hash);
  watch.Lookup(req.key, found);
  CountRead(stats, /*touch=*/true, touched);
  Reply(req, out, touched ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
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

void CacheMemlimit(ItemStore* store, const ProtocolSettings& settings, const Request& req,
                   ReplyBuffer* out) {
  // memcached reads the megabytes with safe_strtoul: anything else is ERROR.
  if (!req.has_number || req.number < 0 || req.number > int64_t{UINT32_MAX}) {
    Reply(req, out, "ERROR\r\n");
  } else if (req.number < kMinMemlimitMb) {
    Reply(req, out, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
  } else if (req.number > kMaxMemlimitMb) {
    Reply(req, out, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n");
  } else if (!settings.memory_file.empty()) {
    // memcached with -e refuses it (do_slabs_adjust_mem_limit: its memory is
    // the file, preallocated). So does herdless: a snapshot records -m, and a
    // limit changed here would make the next start with the same -m load it
    // under another limit than the one it was written with.
    Reply(req, out, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n");
  } else {
    store->SetMemoryLimit(static_cast<size_t>(req.number) << 20);
    Reply(req, out, "OK\r\n");
  }
}

// memcached ignores noreply here (process_shutdown_command never reads it).
void Shutdown(ServerInfo* server, const Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  if (!server->Settings().shutdown_enabled) {
    out->Append(server->Settings().latest() ? "SERVER_ERROR: shutdown not enabled\r\n"
                                            : "ERROR: shutdown not enabled\r\n");
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

void Verbosity(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  server->SetVerbosity(static_cast<int>(req.number > kMaxVerbosity ? kMaxVerbosity
                                        : req.number < 0           ? 0
                                                                   : req.number));
  Reply(req, out, "OK\r\n");
}

void Version(const ProtocolSettings& settings, ReplyBuffer* out) {
  out->Append("VERSION ");
  out->Append(ServerVersion(settings));
  out->Append("\r\n");
}

// -o compat=1.6.45: its parser takes a trailing noreply off a command it has
// no grammar for (slabs, lru_crawler, lru, extstore, shutdown) and then hides every reply,
// errors too; what the command does still happens, but a dump streams nothing.
bool TakeHiddenNoreply(const ProtocolSettings& settings, Request* req) {
  constexpr std::string_view kNoreply = "noreply";
  std::string_view args = req->args;
  while (!args.empty() && args.back() == ' ') args.remove_suffix(1);
  if (!settings.latest() || args.size() < kNoreply.size() ||
      args.substr(args.size() - kNoreply.size()) != kNoreply ||
      (args.size() > kNoreply.size() && args[args.size() - kNoreply.size() - 1] != ' ')) {
    return false;
  }
  req->args = args.substr(0, args.size() - kNoreply.size());
  return true;
}

void OperatorCommand(const TextContext& c, const Request& req, bool pipelined, ReplyBuffer* out,
                     ProcessOutcome* outcome) {
  Request bare = req;
  ReplyBuffer hidden;
  ProcessOutcome no_stream;
  if (TakeHiddenNoreply(c.server->Settings(), &bare)) {
    out = &hidden;
    if (req.command == Command::kLruCrawler) outcome = &no_stream;
  }
  if (req.command == Command::kShutdown) {
    Shutdown(c.server, bare, out, outcome);
  } else if (req.command == Command::kLruCrawler) {
    LruCrawlerCommand(c.server, bare, pipelined, c.datagram, out, outcome);
  } else if (req.command == Command::kLru) {
    LruCommand(c.server, bare, out);
  } else if (req.command == Command::kExtstore) {
    ExtstoreCommand(c.server, bare, out);
  } else {
    SlabsCommand(c.server, bare, out);
  }
}

}  // namespace

void ExecuteTextCommand(const TextContext& c, const Request& req, ReplyBuffer* out,
                        ProcessOutcome* outcome) {
  const bool pipelined = out->pending_bytes() > c.batch_output;
  switch (req.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats:
      Retrieve(c, req, out, outcome);
      return;
    case Command::kSet:
    case Command::kAdd:
    case Command::kReplace:
    case Command::kAppend:
    case Command::kPrepend:
    case Command::kCas:
    case Command::kLeaseSet:
      Update(c, req, out);
      return;
    case Command::kDelete:
      Delete(c.store, c.stats, c.watch, &c.server->prefix_stats(), req, c.key_hash, out);
      return;
    case Command::kIncr:
    case Command::kDecr:
      Arithmetic(c.store, c.stats, c.watch, req, c.key_hash, out);
      return;
    case Command::kTouch:
      Touch(c.store, c.stats, c.watch, req, c.key_hash, out);
      return;
    case Command::kFlushAll:
      FlushAll(c.store, c.stats, c.server->Settings(), req, out);
      return;
    case Command::kStats:
      StatsCommand(c.store, c.server, req, out);
      return;
    case Command::kVersion:
      Version(c.server->Settings(), out);
      return;
    case Command::kVerbosity:
      Verbosity(c.server, req, out);
      return;
    case Command::kQuit:
      outcome->close = true;
      outcome->close_normal = true;
      return;
    case Command::kShutdown:
    case Command::kLruCrawler:
    case Command::kSlabs:
    case Command::kLru:
    case Command::kExtstore:
      OperatorCommand(c, req, pipelined, out, outcome);
      return;
    case Command::kCacheMemlimit:
      CacheMemlimit(c.store, c.server->Settings(), req, out);
      return;
    case Command::kRefreshCerts:
      RefreshCerts(c.server, req, out);
      return;
    case Command::kWatch:
      WatchCommand(c.server, req, pipelined, c.datagram, out, outcome);
      return;
    case Command::kRing: return RingCommand(c.server, c.store, req, c.datagram ? -1 : c.watch.fd, out);
    case Command::kWarm: return WarmCommand(c.server, req, out);
    case Command::kMetaGet:
    case Command::kMetaSet:
    case Command::kMetaDelete:
    case Command::kMetaArithmetic:
    case Command::kMetaNoop:
    case Command::kMetaDebug:
      ExecuteMeta(c.store, c.stats, req, out, &c.watch, c.warm, outcome, c.park, c.key_hash);
      if (req.command == Command::kMetaNoop) c.batch_output = out->pending_bytes();
      return;
    case Command::kLeaseGet:
      LeaseGet(c.store, c.stats, c.server->Settings(), &c.server->prefix_stats(), c.warm, req, out,
               outcome);
      return;
  }
}

}  // namespace herdless
