// Request: one parsed command, as the parsers (text_parser.h, meta_parser.h)
// produce it and the executor consumes it. Every string_view points into the
// connection's input buffer and is valid only until that buffer is consumed,
// except Request::key for base64 (`b`) meta keys, which points into
// Request::decoded_key.
#ifndef HERDLESS_PROTOCOL_REQUEST_H_
#define HERDLESS_PROTOCOL_REQUEST_H_

#include <cstdint>
#include <string_view>

#include "storage/limits.h"   // kMaxKeyLength

namespace herdless {

enum class Command : uint8_t {
  // classic text protocol
  kGet, kGets, kGat, kGats,
  kSet, kAdd, kReplace, kAppend, kPrepend, kCas,
  kDelete, kIncr, kDecr, kTouch,
  kFlushAll, kStats, kVersion, kVerbosity, kQuit, kShutdown, kCacheMemlimit,
  kRefreshCerts,
  // operator commands (docs/operations.md): the words after the command in args
  kLruCrawler, kSlabs, kLru, kExtstore, kWatch, kRing, kWarm,
  // meta protocol
  kMetaGet, kMetaSet, kMetaDelete, kMetaArithmetic, kMetaNoop, kMetaDebug,
  // mcrouter leases
  kLeaseGet, kLeaseSet,
};

inline constexpr int kMaxMetaFlags = 24;      // memcached: MFLAG_MAX_OPT_LENGTH 20 (+ slack)
inline constexpr int kMaxOpaqueLength = 32;

// Meta flags in request order. Return flags (k, O, b, c, f, ...) are echoed in
// this order, so the executor walks `list`; `Has`/`Token` answer lookups.
struct MetaFlags {
  struct Flag {
    char name;
    std::string_view token;   // text after the flag character (may be empty)
  };
  Flag list[kMaxMetaFlags];
  uint8_t count = 0;
  uint64_t present = 0;       // bit (name - 'A') for 'A'..'z'

  static constexpr uint64_t Bit(char c) { return uint64_t{1} << (c - 'A'); }
  bool Has(char c) const { return (present & Bit(c)) != 0; }
  std::string_view Token(char c) const {
    for (int i = 0; i < count; ++i)
      if (list[i].name == c) return list[i].token;
    return {};
  }
};

// Numeric meta tokens, validated and converted by the meta parser. A field is
// meaningful only when the matching flag is present in MetaFlags.
struct MetaArgs {
  int64_t N = 0;          // vivify TTL (mg, ms append, ma)
  int64_t R = 0;          // recache threshold (mg)
  int64_t T = 0;          // TTL (mg touch, ms, md with I, ma)
  uint64_t C = 0;         // compare CAS
  uint64_t E = 0;         // explicit new CAS
  uint32_t F = 0;         // client flags (ms)
  uint64_t D = 1;         // delta (ma)
  uint64_t J = 0;         // initial value (ma)
  double Y = 0;           // XFetch beta (mg Y<beta>, herdless extension), 0 = none
  bool Y_refresh = false; // mg Yr[<beta>]: refresh-ahead (herdless extension)
  char M = 0;             // mode (ms: E A P R S; ma: I + D -), 0 = default
  std::string_view O;     // opaque
};

struct Request {
  Command command = Command::kGet;
  bool noreply = false;
  bool latest = false;            // -o compat=1.6.45 (ParserLimits::latest)

  // Single-key commands (and meta/lease commands): the key, already validated.
  std::string_view key;
  // get/gets/gat/gats: the keys, space-separated, as they stand on the line
  // (each already validated by IsValidKey: 1..250 bytes, no space, \n or NUL);
  // `key` is the key too when there is exactly one, else empty.
  std::string_view keys;

  // Storage commands: set/add/replace/append/prepend/cas, ms, lease-set.
  uint32_t client_flags = 0;
  int64_t exptime = 0;            // also gat/gats/touch exptime
  uint64_t cas_unique = 0;        // cas; lease-set's token
  uint32_t value_length = 0;      // declared <bytes>
  std::string_view value;         // data block without its "\r\n"
  bool value_too_large = false;   // declared length over the item limit: value
                                  // is empty and the block is being swallowed

  uint64_t delta = 0;             // incr/decr

  // flush_all delay, verbosity level, cache_memlimit megabytes.
  bool has_number = false;
  int64_t number = 0;

  // stats <args> (e.g. "settings", "items"); shutdown's "graceful";
  // lru_crawler, slabs and watch arguments.
  std::string_view args;

  // Meta commands.
  MetaFlags meta;
  MetaArgs meta_args;
  bool key_was_base64 = false;    // `b`: key holds the decoded bytes
  char decoded_key[kMaxKeyLength + 1];
  uint8_t decoded_key_length = 0;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_REQUEST_H_
