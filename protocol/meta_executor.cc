// Meta commands, written to match memcached 1.6.18's replies byte for byte
// (checked against Debian's 1.6.18; the cases are pinned in
// tests/unit/meta_executor_test.cc). The shape of every reply is:
//
//   <code>[ <return flags in request order>][ Z][ X][ W]\r\n[<data>\r\n]
//
// Which flags a command echoes, and when `q` hides a reply, differ per
// command exactly as they do in memcached; the comments say where.
#include "protocol/meta_executor.h"

#include <cstdint>
#include <string_view>
#include <utility>

#include "protocol/accounting.h"
#include "protocol/key.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

using Flag = MetaFlags::Flag;

// ---------------------------------------------------------------------------
// Return-flag writers shared by every command.

// The key as memcached writes it: raw, or re-encoded in base64 when `binary`.
void AppendKey(std::string_view key, bool binary, ReplyLine* out) {
  if (!binary) {
    out->Append(key);
    return;
  }
  char encoded[(kMaxKeyLength + 2) / 3 * 4 + 4];
  out->Append(std::string_view(encoded, Base64Encode(key, encoded, sizeof(encoded))));
}

// memcached's META_KEY: " k<key>", or the key in base64 followed by " b".
// Hits (mg, me) follow how the item was stored (memcached's ITEM_KEY_BINARY);
// every other reply follows the request.
void AppendKeyFlag(std::string_view key, bool binary, ReplyLine* out) {
  out->Append(" k");
  AppendKey(key, binary, out);
  if (binary) out->Append(" b");
}

void AppendKeyFlag(const Request& req, ReplyLine* out) {
  AppendKeyFlag(req.key, req.key_was_base64, out);
}

// The opaque comes back as the client sent it, flag letter included.
void AppendOpaqueFlag(const Flag& flag, ReplyLine* out) {
  out->Append(" O");
  out->Append(flag.token);
}

// The flags every reply echoes, hit or miss: O and k, in request order.
void AppendOpaqueAndKey(const Request& req, ReplyLine* out) {
  const MetaFlags& flags = req.meta;
  for (int i = 0; i < flags.count; ++i) {
    if (flags.list[i].name == 'O') {
      AppendOpaqueFlag(flags.list[i], out);
    } else if (flags.list[i].name == 'k') {
      AppendKeyFlag(req, out);
    }
  }
}


// ---------------------------------------------------------------------------
// TTL as seen at a position in the flag list.
//
// memcached applies T (and N, on an item the command just created) at the
// place they stand in the request, so a `t` before them reports the old TTL
// and a `t` after them the new one. The store applies the changes at once and
// reports the final TTL; positions before the last change are computed from
// the requested exptime.
class TtlWalk {
 public:
  TtlWalk(const ItemStore& store, int64_t initial, int64_t final_ttl, int last_change)
      : store_(store), current_(initial), final_(final_ttl), last_change_(last_change) {}

  // The flag at `index` set the exptime to `exptime`.
  void Change(int index, int64_t exptime) {
    current_ = index == last_change_ ? final_ : TtlOf(exptime);
  }
  int64_t current() const { return current_; }   // `t`: remaining seconds, -1 = never expires

 private:
  int64_t TtlOf(int64_t exptime) const {
    if (exptime == 0) return -1;
    return store_.ToStoreTime(exptime) - store_.NowSeconds();
  }

  const ItemStore& store_;
  int64_t current_;
  int64_t final_;
  int last_change_;
};

// Index of the last flag that changes the TTL: T always, N only on a created item.
int LastTtlChange(const MetaFlags& flags, bool created) {
  if (!flags.Has('T') && !(created && flags.Has('N'))) return -1;
  int last = -1;
  for (int i = 0; i < flags.count; ++i) {
    char name = flags.list[i].name;
    if (name == 'T' || (name == 'N' && created)) last = i;
  }
  return last;
}

// Position of flag `name` in the request, or -1.
int FlagIndex(const MetaFlags& flags, char name) {
  for (int i = 0; i < flags.count; ++i) {
    if (flags.list[i].name == name) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------
// Reply lines shared by the commands.

// A reply that echoes only O and k: EN, NF, EX and md's HD.
void AppendCodeLine(std::string_view code, const Request& req, ReplyBuffer* out) {
  ReplyLine line(out);
  line.Append(code);
  AppendOpaqueAndKey(req, &line);
  line.End();
}

// The code of a success: "VA <bytes>" when the value follows (v), else "HD".
void AppendSuccessCode(bool with_value, size_t value_length, ReplyLine* out) {
  if (with_value) {
    out->Append("VA ");
    out->AppendNumber(value_length);
  } else {
    out->Append("HD");
  }
}

// ---------------------------------------------------------------------------
// mg

ReadOptions MetaReadOptions(const MetaFlags& flags, const MetaArgs& args) {
  const bool touch = flags.Has('T');
  ReadOptions opts;
  opts.kind = ReadKind::kMeta;
  opts.bump = !flags.Has('u');
  opts.has_touch = touch;
  opts.touch_exptime = args.T;
  opts.create_on_miss = flags.Has('N');
  opts.create_exptime = args.N;
  opts.create_cas = flags.Has('E') ? args.E : 0;   // 1.6.19+: N's item gets this CAS
  opts.lease.has_recache = flags.Has('R');
  opts.lease.recache_below_s = args.R;
  opts.lease.xfetch_beta = flags.Has('Y') ? args.Y : 0;
  opts.lease.refresh_ahead = flags.Has('Y') && args.Y_refresh;
  // memcached applies the flags in order: with T before R, R judges the new TTL.
  opts.judge_touched_ttl = touch && FlagIndex(flags, 'T') < FlagIndex(flags, 'R');
  return opts;
}

// A hit's return flags in request order, then the lease hints.
void AppendGetFlags(const ItemStore& store, const Request& req, const ReadResult& r,
                    ReplyLine* out) {
  const MetaFlags& flags = req.meta;
  const MetaArgs& args = req.meta_args;
  TtlWalk ttl(store, r.created ? -1 : r.ttl_before, r.ttl_after,
              LastTtlChange(flags, r.created));
  for (int i = 0; i < flags.count; ++i) {
    const Flag& flag = flags.list[i];
    switch (flag.name) {
      case 'T': ttl.Change(i, args.T); break;
      case 'N': if (r.created) ttl.Change(i, args.N); break;
      case 's': out->AppendFlag('s', r.value_size()); break;
      case 't': out->AppendSignedFlag('t', ttl.current()); break;
      case 'c': out->AppendFlag('c', r.cas); break;
      case 'f': out->AppendFlag('f', r.client_flags); break;
      case 'l': out->AppendFlag('l', static_cast<uint64_t>(r.seconds_since_access)); break;
      case 'h': out->Append(r.fetched_before ? " h1" : " h0"); break;
      case 'r': {   // herdless: the read rate before this read
        char rate[2 + kMaxRateChars] = {' ', 'r'};
        out->Append(std::string_view(rate, FormatReadRate(r.reads_per_s, rate + 2) - rate));
        break;
      }
      case 'O': AppendOpaqueFlag(flag, out); break;
      case 'k': AppendKeyFlag(req.key, r.binary_key, out); break;
      default: break;   // b q u v R P L Y: no return value
    }
  }
  // Lease hints, after the requested flags and in memcached's order. Z and W
  // never come together: the store grants a win only when no lease is out.
  if (r.lease == LeaseVerdict::kHeld) out->Append(" Z");
  if (r.stale) out->Append(" X");
  if (r.lease == LeaseVerdict::kWin) out->Append(" W");
}

void ExecuteGet(ItemStore* store, ThreadStats* stats, const WatchContext& watch, const Request& req,
                ReplyBuffer* out, WarmGate* warm, ProcessOutcome* outcome, const WaitTicket* park,
                uint64_t key_hash) {
  const MetaFlags& flags = req.meta;
  ReadOptions opts = MetaReadOptions(flags, req.meta_args);
  opts.key_hash = key_hash;
  if (warm != nullptr) warm->Apply(&opts);
  opts.flash_park = outcome != nullptr ? park : nullptr;
  opts.value_wanted = flags.Has('v');   // without v, a value on flash stays there
  ReadResult r = store->Read(req.key, opts);
  if (r.parked) {   // its value is being fetched from flash: run again once it is in RAM
    outcome->Park(req.key, r.cas);
    return;
  }
  if (warm != nullptr && warm->Divert(r, req.key, outcome)) return;
  stats->CountMissCause(r.miss_expired, r.miss_flushed);
  watch.Fetch(req.key, r, r.status == ReadStatus::kHit);

  // memcached decides "touch or get" while writing a hit's flags, so a miss
  // is always a get miss, a hit with T a touch hit, and a vivified miss a hit.
  if (r.status == ReadStatus::kMiss) {
    CountRead(stats, /*touch=*/false, /*hit=*/false);
    if (flags.Has('q')) return;   // q hides only EN
    AppendCodeLine("EN", req, out);
    return;
  }
  CountRead(stats, opts.has_touch, /*hit=*/true);
  out->Hold(r.cas);   // memcached's reply references the item until it is sent

  // 1.6.45 (-o compat=1.6.45): C<cas> makes the value conditional, HD when
  // the client's copy is current (1.6.18 ignores C on mg).
  const bool current = req.latest && flags.Has('C') && r.cas == req.meta_args.C;
  const bool with_value = flags.Has('v') && !current;
  ReplyLine line(out);
  AppendSuccessCode(with_value, r.value.size(), &line);
  AppendGetFlags(*store, req, r, &line);
  line.End();
  if (with_value) {
    out->AppendItemBytes(std::move(r.item), r.value);
    out->Append("\r\n");
  }
}

// ---------------------------------------------------------------------------
// ms

// memcached 1.6.18 recognises upper-case mode letters only.
bool StoreModeFor(char mode, StoreMode* result) {
  switch (mode) {
    case 0:
    case 'S': *result = StoreMode::kSet; return true;
    case 'E': *result = StoreMode::kAdd; return true;
    case 'A': *result = StoreMode::kAppend; return true;
    case 'P': *result = StoreMode::kPrepend; return true;
    case 'R': *result = StoreMode::kReplace; return true;
    default: return false;
  }
}

std::string_view StoreCode(StoreStatus status) {
  switch (status) {
    case StoreStatus::kStored: return "HD";
    case StoreStatus::kExists: return "EX";
    case StoreStatus::kNotFound: return "NF";
    default: return "NS";
  }
}

// The store an ms asks for; false for a mode memcached does not know.
bool MetaStoreRequest(const Request& req, StoreRequest* sr) {
  const MetaFlags& flags = req.meta;
  const MetaArgs& args = req.meta_args;
  if (!StoreModeFor(args.M, &sr->mode)) return false;
  const bool has_cas = flags.Has('C');
  // C turns set and replace into a CAS store; append and prepend check it
  // themselves; add ignores it (memcached).
  if (has_cas && (sr->mode == StoreMode::kSet || sr->mode == StoreMode::kReplace)) {
    sr->mode = StoreMode::kCas;
  }
  if (has_cas && sr->mode != StoreMode::kAdd) sr->compare_cas = args.C;
  // I only means something for a CAS store: an older CAS stores a stale item.
  sr->stale_on_older_cas = flags.Has('I') && sr->mode == StoreMode::kCas;
  sr->key = req.key;
  sr->value = req.value;
  sr->client_flags = flags.Has('F') ? args.F : 0;
  sr->exptime = flags.Has('T') ? args.T : 0;
  sr->create_on_miss = flags.Has('N');
  sr->create_exptime = args.N;
  sr->new_cas = flags.Has('E') ? args.E : 0;
  sr->binary_key = req.key_was_base64;
  // memcached drops the key's old item when the new one cannot be allocated,
  // in every ms mode, so a stale value does not outlive the failed write.
  sr->unlink_on_failure = true;
  return true;
}

void AppendSetFlags(const Request& req, const StoreResult& result, ReplyLine* out) {
  const bool stored = result.status == StoreStatus::kStored;
  const MetaFlags& flags = req.meta;
  for (int i = 0; i < flags.count; ++i) {
    const Flag& flag = flags.list[i];
    switch (flag.name) {
      case 'O': AppendOpaqueFlag(flag, out); break;
      case 'k': AppendKeyFlag(req, out); break;
      case 'c': out->AppendFlag('c', stored ? result.cas : 0); break;
      // memcached 1.6.20+: the item's final size (append/prepend included).
      case 's':
        out->AppendFlag('s', stored ? result.stored_size : req.value.size());
        break;
      default: break;
    }
  }
}

void ExecuteSet(ItemStore* store, ThreadStats* stats, const WatchContext& watch, const Request& req,
                ReplyBuffer* out, uint64_t key_hash) {
  StoreRequest sr;
  if (!MetaStoreRequest(req, &sr)) {
    out->Append("CLIENT_ERROR invalid mode for ms M token\r\n");
    return;
  }
  sr.key_hash = key_hash;
  // memcached fails the allocation before reading the data, so an item that
  // cannot fit is not a set command. The parser has already swallowed a value
  // declared over the limit.
  if (req.value_too_large) {
    store->Delete(DeleteRequest{.key = req.key});
    CountStoreRefusal(stats, StoreStatus::kTooLarge);
    out->Append(StoreRefusalLine(StoreStatus::kTooLarge));
    return;
  }

  StoreResult result = store->Store(sr);
  watch.Store(store, req.key, sr.value.size(), sr.client_flags, sr.exptime, sr.mode, result);
  // Unlike text append and prepend, ms refuses them so too.
  if (IsAllocationFailure(result.status)) {
    CountStoreRefusal(stats, result.status);
    out->Append(StoreRefusalLine(result.status));
    return;
  }
  CountStore(stats, result.status, /*compare=*/sr.mode == StoreMode::kCas);

  if (result.status == StoreStatus::kStored && req.meta.Has('q')) return;   // q hides only HD
  ReplyLine line(out);
  line.Append(StoreCode(result.status));
  AppendSetFlags(req, result, &line);
  line.End();
}

// ---------------------------------------------------------------------------
// md

void ExecuteDelete(ItemStore* store, ThreadStats* stats, const WatchContext& watch, const Request& req,
                   ReplyBuffer* out, uint64_t key_hash) {
  const MetaFlags& flags = req.meta;
  const MetaArgs& args = req.meta_args;

  DeleteRequest dr;
  dr.key = req.key;
  dr.key_hash = key_hash;
  dr.compare_cas = flags.Has('C') ? args.C : 0;
  dr.compare_zero_cas = flags.Has('C');   // memcached's md compares C0 too (ma and ms's MA/MP take it as any)
  dr.mark_stale = flags.Has('I');
  // x (1.6.19+): the value emptied, the item kept with F's flags and T's TTL.
  dr.empty_value = flags.Has('x');
  dr.client_flags = flags.Has('F') ? args.F : 0;
  // T without I or x is ignored.
  dr.has_ttl = flags.Has('T') && (dr.mark_stale || dr.empty_value);
  dr.exptime = args.T;
  dr.new_cas = flags.Has('E') ? args.E : 0;
  DeleteRequest::Removed removed;
  dr.removed = &removed;
  DeleteStatus status = store->Delete(dr);
  // x logs its empty item.
  if (dr.empty_value && removed.live) removed = {.live = true, .client_flags = dr.client_flags};
  watch.Lookup(req.key, removed);

  std::string_view code;
  switch (status) {
    case DeleteStatus::kDeleted:
      // Invalidation keeps the item, so memcached counts no delete hit (nor logs one).
      if (!dr.mark_stale) {
        stats->delete_hits.Add();
        watch.Delete(req.key, /*meta=*/true, removed);
      }
      if (flags.Has('q')) return;   // q hides only HD
      code = "HD";
      break;
    case DeleteStatus::kExists:
      stats->delete_misses.Add();
      code = "EX";
      break;
    case DeleteStatus::kNotFound:
      stats->delete_misses.Add();
      code = "NF";
      break;
    case DeleteStatus::kNoMemory:   // x's empty item found no room
      out->Append("SERVER_ERROR out of memory\r\n");
      return;
  }
  AppendCodeLine(code, req, out);
}

// ---------------------------------------------------------------------------
// ma

// The incr or decr an ma asks for; false for a mode memcached does not know.
bool MetaArithRequest(const Request& req, ArithRequest* ar) {
  const MetaFlags& flags = req.meta;
  const MetaArgs& args = req.meta_args;
  switch (args.M) {
    case 0:
    case 'I':
    case '+': ar->incr = true; break;
    case 'D':
    case '-': ar->incr = false; break;
    default: return false;
  }
  ar->key = req.key;
  ar->delta = flags.Has('D') ? args.D : 1;
  ar->compare_cas = flags.Has('C') ? args.C : 0;
  ar->create_on_miss = flags.Has('N');
  ar->create_exptime = args.N;
  ar->initial = flags.Has('J') ? args.J : 0;
  ar->has_ttl = flags.Has('T');
  ar->exptime = args.T;
  ar->new_cas = flags.Has('E') ? args.E : 0;
  return true;
}

// The reply to an incr or decr that went through: HD or VA, the return
// flags, the number.
void AppendArithmeticReply(const ItemStore& store, const Request& req, const ArithResult& r,
                           ReplyBuffer* out) {
  const MetaFlags& flags = req.meta;
  const MetaArgs& args = req.meta_args;
  char number[24];
  char* number_end = FormatUint64(r.value, number);
  std::string_view digits(number, number_end - number);

  const bool with_value = flags.Has('v');
  ReplyLine line(out);
  AppendSuccessCode(with_value, digits.size(), &line);
  // `t` before `T` on an existing item reports the TTL it had (memcached).
  TtlWalk ttl(store, r.created ? -1 : r.ttl_before, r.ttl, LastTtlChange(flags, r.created));
  for (int i = 0; i < flags.count; ++i) {
    const Flag& flag = flags.list[i];
    switch (flag.name) {
      case 'T': ttl.Change(i, args.T); break;
      case 'N': if (r.created) ttl.Change(i, args.N); break;
      case 'c': line.AppendFlag('c', r.cas); break;
      case 't': line.AppendSignedFlag('t', ttl.current()); break;
      case 'O': AppendOpaqueFlag(flag, &line); break;
      case 'k': AppendKeyFlag(req, &line); break;
      default: break;
    }
  }
  line.End();
  if (with_value) {
    line.Append(digits);
    line.End();
  }
}

void ExecuteArithmetic(ItemStore* store, ThreadStats* stats, const WatchContext& watch,
                       const Request& req, ReplyBuffer* out, uint64_t key_hash) {
  ArithRequest ar;
  if (!MetaArithRequest(req, &ar)) {
    out->Append("CLIENT_ERROR invalid mode for ma M token\r\n");
    return;
  }
  ar.key_hash = key_hash;
  ar.referenced = out->held();
  const ArithResult r = store->Arithmetic(ar);
  watch.Lookup(req.key, r.found);
  // memcached's ma stores the new number without a TTL and sets N's after: its line says ttl=0.
  if (r.created) watch.Created(store, req.key, r.value, /*exptime=*/0);
  switch (r.status) {
    case ArithStatus::kNonNumeric:
      out->Append("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
      return;
    case ArithStatus::kNoMemory:
      out->Append("SERVER_ERROR out of memory\r\n");
      return;
    case ArithStatus::kNotFound:
      CountArithmetic(stats, ar.incr, /*hit=*/false);
      AppendCodeLine("NF", req, out);
      return;
    case ArithStatus::kExists:
      AppendCodeLine("EX", req, out);
      return;
    case ArithStatus::kOk:
      break;
  }
  // memcached counts hits only for an existing item. Its q hides the HD of
  // an update; of a creation (N on a miss) only from 1.6.19 on.
  if (!r.created) CountArithmetic(stats, ar.incr, /*hit=*/true);
  if (req.meta.Has('q') && (!r.created || req.latest)) return;
  AppendArithmeticReply(*store, req, r, out);
}

// ---------------------------------------------------------------------------
// me

void ExecuteDebug(ItemStore* store, ThreadStats* stats, const Request& req, ReplyBuffer* out) {
  stats->cmd_meta.Add();
  // A look that changes nothing: no LRU bump, no fetched mark, no lease.
  ReadOptions opts;
  opts.kind = ReadKind::kClassic;
  opts.bump = false;
  opts.value_wanted = false;   // a value on flash stays there: its RAM metadata is enough
  ReadResult r = store->Read(req.key, opts);
  if (r.status == ReadStatus::kMiss) {
    out->Append("EN\r\n");
    return;
  }
  ReplyLine line(out);
  line.Append("ME ");
  AppendKey(req.key, r.binary_key, &line);
  // 1.6.18 prints exp as (now - exptime), minus the remaining TTL; 1.6.24+
  // (-o compat=1.6.45) the remaining TTL.
  line.Append(" exp=");
  line.AppendSignedNumber(r.ttl_before == -1 ? -1 : req.latest ? r.ttl_before : -r.ttl_before);
  line.Append(" la=");
  line.AppendNumber(static_cast<uint64_t>(r.seconds_since_access));
  line.Append(" cas=");
  line.AppendNumber(r.cas);
  line.Append(r.fetched_before ? " fetch=yes" : " fetch=no");
  // memcached's size and slab class for the same item (storage/item.h), so
  // `me` prints the line memcached prints.
  const uint64_t total = MemcachedItemSize(req.key.size(), r.value_size(), r.client_flags);
  // A value on flash leaves memcached a header item in RAM (its item_hdr, 12
  // bytes, for the value): cls is that item's class, size the value's total.
  constexpr size_t kFlashHeaderValueLen = 12 - 2;
  const bool on_flash = r.value_len_on_flash != 0;
  line.Append(" cls=");
  line.AppendNumber(MemcachedSlabClass(
      on_flash ? MemcachedItemSize(req.key.size(), kFlashHeaderValueLen, r.client_flags) : total));
  line.Append(" size=");
  line.AppendNumber(total);
  line.End();
}

}  // namespace

void ExecuteMeta(ItemStore* store, ThreadStats* stats, const Request& req, ReplyBuffer* out,
                 const WatchContext* watch, WarmGate* warm, ProcessOutcome* outcome, const WaitTicket* park,
                 uint64_t key_hash) {
  static const WatchContext kNobody;
  const WatchContext& w = watch != nullptr ? *watch : kNobody;
  switch (req.command) {
    case Command::kMetaGet:
      ExecuteGet(store, stats, w, req, out, outcome != nullptr ? warm : nullptr, outcome, park, key_hash);
      break;
    case Command::kMetaSet: ExecuteSet(store, stats, w, req, out, key_hash); break;
    case Command::kMetaDelete: ExecuteDelete(store, stats, w, req, out, key_hash); break;
    case Command::kMetaArithmetic: ExecuteArithmetic(store, stats, w, req, out, key_hash); break;
    case Command::kMetaDebug: ExecuteDebug(store, stats, req, out); break;
    case Command::kMetaNoop:
      out->Append("MN\r\n");
      out->ReleaseHeld();   // memcached's mn flushes the replies before it
      break;
    default: break;   // not a meta command: the executor never sends one here
  }
}

}  // namespace herdless
