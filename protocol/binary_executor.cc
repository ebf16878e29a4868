// The binary protocol's commands, with memcached 1.6.18's replies and counters
// (proto_bin.c). What memcached does, and so what this does:
//   - Errors are always sent; a quiet command (SetQ, DeleteQ, ...) is silent
//     only on success, and GetQ/GetKQ/GATQ/GATKQ only on a miss.
//   - The reply echoes the opcode as sent and the opaque; its CAS is the
//     item's on a hit or a successful store or incr, else 0.
//   - A CAS in a Set/Add/Replace makes it a compare-and-swap; in Append,
//     Prepend, Delete and Incr/Decr it must match (Data exists otherwise).
//   - Incr/Decr create a missing counter with `initial` unless the expiration
//     is 0xffffffff; a created counter counts neither a hit nor a miss.
//   - cmd_set counts stores whose value was read, not those refused as too
//     large or out of memory (which, unlike the text protocol's, count
//     neither store_too_large nor store_no_memory); a refused Flush (-F)
//     counts nothing.
//   - Stat answers the general stats, "settings", "items", "slabs", "sizes",
//     "reset" and "detail on|off|dump"; any other group (even "conns") is Not
//     found. "reset" and "settings" match as prefixes, as memcached's strncmp.
#include "protocol/binary_executor.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "protocol/accounting.h"
#include "protocol/auth.h"
#include "protocol/binary_wire.h"
#include "protocol/stat_writer.h"
#include "protocol/stats_groups.h"

namespace herdless {

namespace {

using namespace binary;

// An error reply: memcached's write_bin_error, never silenced, after which
// memcached writes its replies out (its items are no longer referenced).
void Error(ReplyBuffer* out, uint8_t opcode, uint32_t opaque, uint16_t status,
           std::string_view message = {}) {
  if (message.empty()) message = BinaryStatusMessage(status);
  AppendBinaryHeader(out, opcode, status, 0, 0, static_cast<uint32_t>(message.size()), opaque, 0);
  out->Append(message);
  out->ReleaseHeld();
}

void Error(ReplyBuffer* out, const BinaryRequest& req, uint16_t status,
           std::string_view message = {}) {
  Error(out, req.opcode, req.opaque, status, message);
}

// A success reply with an optional body: memcached's write_bin_response,
// silent for quiet commands.
void Success(ReplyBuffer* out, const BinaryRequest& req, uint64_t cas,
             std::string_view body = {}) {
  if (req.quiet) return;
  AppendBinaryHeader(out, req.opcode, kSuccess, 0, 0, static_cast<uint32_t>(body.size()),
                     req.opaque, cas);
  out->Append(body);
}

// memcached's MAX_SASL_MECH_LEN, and its success message.
constexpr size_t kMaxSaslMechLength = 32;
constexpr char kAuthenticated[] = "Authenticated";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

BinaryExecutor::BinaryExecutor(ItemStore* store, ServerInfo* server, ThreadStats* stats,
                               const AuthFile* sasl_pwdb)
    : store_(store), server_(server), watch_{server->watch_log()}, stats_(stats),
      limits_(ItemStoreLimits(store)), sasl_pwdb_(sasl_pwdb) {
  limits_.latest = server->Settings().latest();
}

ProcessOutcome BinaryExecutor::Process(std::string_view input, ReplyBuffer* out,
                                       size_t max_output, int max_requests,
                                       const WaitTicket* park, BinarySession* session,
                                       const WarmPass* warm) {
  ProcessOutcome outcome;
  park_ = park;
  warm_.Begin(warm, store_, stats_);
  warming_ = warm != nullptr;
  session_ = session;
  BinaryRequest req;
  RunRequests(input, *out, {max_output, max_requests}, &stats_->conn_yields, &outcome.consumed,
              [&](std::string_view rest) -> StepResult {
                if (sasl_pwdb_ != nullptr && (session_ == nullptr || !session_->authenticated) &&
                    RefuseUnauthenticated(rest, out)) {
                  outcome.close = true;
                  return {kHeaderSize, false};
                }
                const BinaryParseResult r =
                    ParseBinaryRequest(rest.data(), rest.size(), limits_, &req);
                const StepResult step = FinishParsedStep(r, out, &outcome, [&] {
                  if (r.status == ParseStatus::kError) {
                    Error(out, r.opcode, r.opaque, r.error);
                    outcome.close = r.close;
                  } else {
                    Execute(req, out, &outcome);
                  }
                  return false;   // binary replies are never hidden whole
                });
                warm_.NextRequest();
                return step;
              });
  park_ = nullptr;
  warming_ = false;
  session_ = nullptr;
  return outcome;
}

// -S before authentication: memcached's dispatch_bin_command answers every
// opcode but the SASL ones and Version with "Auth failure." and closes, from
// the header alone (nothing more of the request is read: the caller consumes
// the header and closes). A SASL request
// whose body could not be a mechanism and a PLAIN message is refused so too.
bool BinaryExecutor::RefuseUnauthenticated(std::string_view rest, ReplyBuffer* out) {
  if (rest.size() < kHeaderSize || static_cast<unsigned char>(rest[0]) != kRequestMagic) {
    return false;   // the parser waits for the header, or closes on a bad magic
  }
  const uint8_t opcode = static_cast<uint8_t>(rest[1]);
  uint32_t opaque;
  std::memcpy(&opaque, rest.data() + 12, sizeof(opaque));
  const uint32_t bodylen = LoadBig32(rest.data() + 8);
  const bool sasl = opcode == kSaslListMechs || opcode == kSaslAuth || opcode == kSaslStep;
  if ((sasl || opcode == kVersion) && bodylen <= kMaxAuthPayload) return false;
  Error(out, opcode, opaque, kAuthError);
  return true;
}

// SASL Auth and Step with the PLAIN mechanism, memcached's answers: success
// "Authenticated"; an Auth without data asks for it (Auth continue, empty);
// an unknown mechanism, a malformed message, a wrong user or password, a
// Step with no Auth before it, or any Auth once one succeeded, "Auth
// failure.". Every Auth and Step first drops the connection's authentication. auth_cmds counts every
// verdict, auth_errors the failures.
void BinaryExecutor::SaslAuth(const BinaryRequest& req, ReplyBuffer* out) {
  BinarySession unused;
  BinarySession* session = session_ != nullptr ? session_ : &unused;
  const bool step = req.command == kSaslStep;
  if (req.key.size() > kMaxSaslMechLength) {
    Error(out, req, kInvalidArguments);
    return;
  }
  session->authenticated = false;   // memcached's init_sasl_conn
  bool ok = false;
  if (req.key == "PLAIN" && !session->sasl_done && (!step || session->sasl_started)) {
    if (!step && req.value.empty()) {
      session->sasl_started = true;
      AppendBinaryHeader(out, req.opcode, kAuthContinue, 0, 0, 0, req.opaque, 0);
      return;
    }
    std::string_view user, password;
    ok = ParseSaslPlain(req.value, &user, &password) && sasl_pwdb_->Check(user, password);
  }
  session->sasl_started = false;
  stats_->auth_cmds.Add();
  if (ok) {
    session->authenticated = true;
    session->sasl_done = true;
    AppendBinaryHeader(out, req.opcode, kSuccess, 0, 0, sizeof(kAuthenticated) - 1, req.opaque, 0);
    out->Append(kAuthenticated);
    return;
  }
  stats_->auth_errors.Add();
  Error(out, req, kAuthError);
}

void BinaryExecutor::Execute(const BinaryRequest& req, ReplyBuffer* out,
                             ProcessOutcome* outcome) {
  switch (req.command) {
    case kGet:
    case kGetK:
    case kTouch:
    case kGat:
    case kGatK:
      Retrieve(req, out, outcome);
      return;
    case kSet:
    case kAdd:
    case kReplace:
      if (server_->prefix_stats().enabled()) server_->prefix_stats().RecordSet(req.key);
      Update(req, out);
      return;
    case kAppend:
    case kPrepend:
      if (server_->prefix_stats().enabled()) server_->prefix_stats().RecordSet(req.key);
      Concat(req, out);
      return;
    case kDelete:
      if (server_->prefix_stats().enabled()) server_->prefix_stats().RecordDelete(req.key);
      Delete(req, out);
      return;
    case kIncrement:
    case kDecrement:
      Arithmetic(req, out);
      return;
    case kFlush:
      Flush(req, out);
      return;
    case kStat:
      Stat(req, out);
      return;
    case kNoop:
      Success(out, req, 0);
      out->ReleaseHeld();   // memcached's Noop flushes the replies before it
      return;
    case kVersion:
      Success(out, req, 0, ServerVersion(server_->Settings()));
      return;
    case kQuit:
      Success(out, req, 0);
      outcome->close = true;
      outcome->close_normal = true;
      return;
    case kSaslListMechs:
      if (sasl_pwdb_ == nullptr) break;
      if (session_ != nullptr) session_->authenticated = false;   // memcached's init_sasl_conn
      Success(out, req, 0, "PLAIN");
      return;
    case kSaslAuth:
    case kSaslStep:
      if (sasl_pwdb_ == nullptr) break;
      SaslAuth(req, out);
      return;
    default:
      break;
  }
  // Without -S the SASL opcodes are unknown, as in memcached without SASL
  // (the parser consumed their data).
  Error(out, req, kUnknownCommand);
}

// Get, GetK, Touch, GAT, GATK and the quiet ones. A hit carries the flags as
// extras, the key for GetK/GATK, the value except for Touch, and the CAS. A
// miss is silent for a quiet command; GetK/GATK answer it with the key and no
// message, the others with "Not found".
void BinaryExecutor::Retrieve(const BinaryRequest& req, ReplyBuffer* out,
                              ProcessOutcome* outcome) {
  const bool touch = req.command == kTouch || req.command == kGat || req.command == kGatK;
  const bool with_key = req.command == kGetK || req.command == kGatK;
  const bool with_value = req.command != kTouch;
  const ProtocolSettings& settings = server_->Settings();
  ReadOptions opts = ClassicReadOptions(settings, touch, req.exptime, park_, with_value, client_gone_);
  const bool warm = warming_ && opts.kind == ReadKind::kClassicLease;
  if (warm) warm_.Apply(&opts);
  ReadResult r = store_->Read(req.key, opts);
  if (r.parked) {
    outcome->Park(req.key, r.cas);
    return;
  }
  if (warm && warm_.Divert(r, req.key, outcome)) return;
  const bool hit = CountClassicRead(stats_, opts, r);
  watch_.Fetch(req.key, r, hit);
  if (server_->prefix_stats().enabled()) server_->prefix_stats().RecordGet(req.key, hit);
  if (!hit) {
    if (req.quiet) return;
    if (with_key) {
      AppendBinaryHeader(out, req.opcode, kKeyNotFound, 0, req.keylen, req.keylen, req.opaque, 0);
      out->Append(req.key);
    } else {
      Error(out, req, kKeyNotFound);
    }
    return;
  }
  const uint32_t value_len = with_value ? static_cast<uint32_t>(r.value.size()) : 0;
  const uint16_t keylen = with_key ? req.keylen : 0;
  // The header, the flags (the extras) and the key go out in one append.
  constexpr uint8_t kFlagsSize = 4;
  char head[kHeaderSize + kFlagsSize + kMaxKeyLength];
  FormatBinaryHeader(head, req.opcode, kSuccess, kFlagsSize, keylen, kFlagsSize + keylen + value_len, req.opaque,
                     settings.cas_enabled ? r.cas : 0);
  StoreBig32(head + kHeaderSize, r.client_flags);
  std::memcpy(head + kHeaderSize + kFlagsSize, req.key.data(), keylen);
  out->Append(std::string_view(head, kHeaderSize + kFlagsSize + keylen));
  if (value_len > 0) out->AppendItemBytes(std::move(r.item), r.value);
  out->Hold(r.cas);   // memcached's reply references the item until it is sent
}

// Set, Add, Replace (a CAS makes any of them a compare-and-swap).
void BinaryExecutor::Update(const BinaryRequest& req, ReplyBuffer* out) {
  const bool cas_enabled = server_->Settings().cas_enabled;
  const bool compare = req.cas != 0 && cas_enabled;   // -C: memcached keeps no CAS to compare
  // memcached unlinks the old value of a Set it cannot allocate ("to avoid
  // stale data persisting in cache"), with or without CAS.
  const bool unlink_on_failure = req.command == kSet;
  if (req.value_too_large) {
    if (unlink_on_failure) store_->Delete(DeleteRequest{.key = req.key});
    Error(out, req, kTooLarge);
    return;
  }
  StoreRequest sr;
  sr.mode = compare ? StoreMode::kCas
            : req.command == kAdd ? StoreMode::kAdd
            : req.command == kReplace ? StoreMode::kReplace
                                      : StoreMode::kSet;
  sr.key = req.key;
  sr.value = req.value;
  sr.client_flags = req.flags;
  sr.exptime = req.exptime;
  sr.compare_cas = compare ? req.cas : 0;
  sr.unlink_on_failure = unlink_on_failure;
  // classic_stampede answers the winner's Get of a stale item with Not found.
  sr.classic_lease_add = server_->Settings().classic_stampede != ClassicStampedeMode::kOff;
  const StoreResult r = store_->Store(sr);
  watch_.Store(store_, req.key, req.value.size(), req.flags, req.exptime, sr.mode, r);
  // Refused at allocation (accounting.h): no cmd_set, and in the binary
  // protocol neither store_too_large nor store_no_memory.
  if (r.status == StoreStatus::kTooLarge) {
    Error(out, req, kTooLarge);
    return;
  }
  if (r.status == StoreStatus::kNoMemory) {
    Error(out, req, kOutOfMemory, "Out of memory allocating item");
    return;
  }
  CountStore(stats_, r.status, compare);
  switch (r.status) {
    case StoreStatus::kStored:
      Success(out, req, cas_enabled ? r.cas : 0);
      return;
    case StoreStatus::kExists:
      Error(out, req, kKeyExists);
      return;
    case StoreStatus::kNotFound:
      Error(out, req, kKeyNotFound);
      return;
    default:
      // Not stored: an Add of an existing key, a Replace of a missing one.
      Error(out, req, req.command == kAdd     ? kKeyExists
                      : req.command == kReplace ? kKeyNotFound
                                                : kNotStored);
      return;
  }
}

// Append, Prepend: a missing key, or a combined value that does not fit, is
// Not stored; a CAS that does not match is Data exists.
void BinaryExecutor::Concat(const BinaryRequest& req, ReplyBuffer* out) {
  const bool cas_enabled = server_->Settings().cas_enabled;
  if (req.value_too_large) {
    Error(out, req, kTooLarge);
    return;
  }
  StoreRequest sr;
  sr.mode = req.command == kAppend ? StoreMode::kAppend : StoreMode::kPrepend;
  sr.key = req.key;
  sr.value = req.value;
  sr.compare_cas = cas_enabled ? req.cas : 0;
  const StoreResult r = store_->Store(sr);
  watch_.Store(store_, req.key, req.value.size(), 0, 0, sr.mode, r);
  CountStore(stats_, r.status, /*compare=*/false);
  if (r.status == StoreStatus::kStored) {
    Success(out, req, cas_enabled ? r.cas : 0);
  } else if (r.status == StoreStatus::kExists) {
    Error(out, req, kKeyExists);
  } else {
    Error(out, req, kNotStored);
  }
}

void BinaryExecutor::Delete(const BinaryRequest& req, ReplyBuffer* out) {
  DeleteRequest::Removed found;
  const DeleteStatus status =
      store_->Delete(DeleteRequest{.key = req.key, .compare_cas = req.cas, .removed = &found});
  watch_.Lookup(req.key, found);
  switch (status) {
    case DeleteStatus::kDeleted:
      stats_->delete_hits.Add();
      Success(out, req, 0);
      return;
    case DeleteStatus::kExists:
      Error(out, req, kKeyExists);
      return;
    case DeleteStatus::kNoMemory:   // only an md x: never here
    case DeleteStatus::kNotFound:
      stats_->delete_misses.Add();
      Error(out, req, kKeyNotFound);
      return;
  }
}

// Incr/Decr: the new value as 8 big-endian bytes, with the item's CAS.
void BinaryExecutor::Arithmetic(const BinaryRequest& req, ReplyBuffer* out) {
  const bool incr = req.command == kIncrement;
  ArithRequest ar;
  ar.key = req.key;
  ar.incr = incr;
  ar.delta = req.delta;
  ar.compare_cas = req.cas;
  ar.referenced = out->held();
  if (req.exptime != kNoAutoCreate) {
    ar.create_on_miss = true;
    ar.initial = req.initial;
    ar.create_exptime = req.exptime;
  }
  const ArithResult r = store_->Arithmetic(ar);
  watch_.Lookup(req.key, r.found);
  if (r.created) watch_.Created(store_, req.key, r.value, ar.create_exptime);
  switch (r.status) {
    case ArithStatus::kOk: {
      if (!r.created) CountArithmetic(stats_, incr, /*hit=*/true);
      char value[8];
      StoreBig64(value, r.value);
      Success(out, req, server_->Settings().cas_enabled ? r.cas : 0,
              std::string_view(value, sizeof(value)));
      return;
    }
    case ArithStatus::kNotFound:
      CountArithmetic(stats_, incr, /*hit=*/false);
      Error(out, req, kKeyNotFound);
      return;
    case ArithStatus::kNonNumeric:
      Error(out, req, kNonNumeric);
      return;
    case ArithStatus::kExists:
      Error(out, req, kKeyExists);
      return;
    case ArithStatus::kNoMemory:
      // memcached counts the hit before it fails to allocate the new value.
      CountArithmetic(stats_, incr, /*hit=*/true);
      Error(out, req, kOutOfMemory, "Out of memory incrementing value");
      return;
  }
}

void BinaryExecutor::Flush(const BinaryRequest& req, ReplyBuffer* out) {
  if (!server_->Settings().flush_enabled) {
    Error(out, req, kAuthError);   // memcached's answer to a Flush under -F
    return;
  }
  // As flush_all: the delay is an exptime (relative, or absolute past 30 days).
  int64_t delay = 0;
  if (req.exptime > 0) delay = store_->ToStoreTime(req.exptime) - store_->NowSeconds();
  store_->FlushAll(delay > 0 ? delay : 0);
  stats_->cmd_flush.Add();
  Success(out, req, 0);
}

void BinaryExecutor::Stat(const BinaryRequest& req, ReplyBuffer* out) {
  const std::string_view group = req.key;
  StatWriter w(out, req.opaque);
  if (StartsWith(group, "reset") && !group.empty()) {
    ResetStats(store_, server_);
    w.End();
  } else if (StartsWith(group, "settings")) {
    WriteStatsGroup(store_, server_, "settings", &w);
  } else if (StartsWith(group, "detail")) {
    // memcached's process_bin_stat: the dump is one "detailed" stat holding
    // the text protocol's lines and END. 1.6.45 refuses it with -X.
    if (server_->Settings().latest() && !server_->Settings().dump_enabled) {
      Error(out, req, kKeyNotFound);
      return;
    }
    const std::string_view mode = group.substr(6);
    PrefixStats& prefixes = server_->prefix_stats();
    if (StartsWith(mode, " dump")) {
      w.Add("detailed", std::string_view(prefixes.Dump()));
    } else if (StartsWith(mode, " on")) {
      prefixes.set_enabled(true);
    } else if (StartsWith(mode, " off")) {
      prefixes.set_enabled(false);
    } else {
      Error(out, req, kKeyNotFound);
      return;
    }
    w.End();
  } else if (!WriteStatsGroup(store_, server_, group, &w)) {
    Error(out, req, kKeyNotFound);
  }
}

}  // namespace herdless
