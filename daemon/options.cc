#include "daemon/options.h"

#include "config.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace herdless {

namespace {

constexpr uint64_t kItemSizeMin = 1024;             // memcached's ITEM_SIZE_MAX_LOWER_LIMIT
constexpr uint64_t kItemSizeMax = 1024ull << 20;    // ITEM_SIZE_MAX_UPPER_LIMIT
constexpr uint32_t kWaitTimeoutWithoutLeaseMs = 5000;

enum class Arg { kNone, kRequired, kOptional };

struct Flag {
  char short_name;
  const char* long_name;
  Arg arg;
};

// memcached 1.6.18's flags (plus --pid-file, an alias of --pidfile).
constexpr Flag kFlags[] = {
    {'p', "port", Arg::kRequired},
    {'U', "udp-port", Arg::kRequired},
    {'s', "unix-socket", Arg::kRequired},
    {'a', "unix-mask", Arg::kRequired},
    {'A', "enable-shutdown", Arg::kNone},
    {'Z', "enable-ssl", Arg::kNone},
    {'l', "listen", Arg::kRequired},
    {'d', "daemon", Arg::kNone},
    {'r', "enable-coredumps", Arg::kNone},
    {'u', "user", Arg::kRequired},
    {'m', "memory-limit", Arg::kRequired},
    {'M', "disable-evictions", Arg::kNone},
    {'c', "conn-limit", Arg::kRequired},
    {'k', "lock-memory", Arg::kNone},
    {'v', "verbose", Arg::kOptional},
    {'h', "help", Arg::kNone},
    {'i', "license", Arg::kNone},
    {'V', "version", Arg::kNone},
    {'P', "pidfile", Arg::kRequired},
    {'P', "pid-file", Arg::kRequired},
    {'f', "slab-growth-factor", Arg::kRequired},
    {'n', "slab-min-size", Arg::kRequired},
    {'L', "enable-largepages", Arg::kNone},
    {'D', nullptr, Arg::kRequired},
    {'t', "threads", Arg::kRequired},
    {'R', "max-reqs-per-event", Arg::kRequired},
    {'C', "disable-cas", Arg::kNone},
    {'b', "listen-backlog", Arg::kRequired},
    {'B', "protocol", Arg::kRequired},
    {'I', "max-item-size", Arg::kRequired},
    {'S', "enable-sasl", Arg::kNone},
    {'F', "disable-flush-all", Arg::kNone},
    {'X', "disable-dumping", Arg::kNone},
    {'W', "disable-watch", Arg::kNone},
    {'Y', "auth-file", Arg::kRequired},
    {'e', "memory-file", Arg::kRequired},
    {'o', "extended", Arg::kRequired},
    {'N', "napi-ids", Arg::kRequired},
};

// memcached's -o keys that only tune memcached's slab allocator, LRU threads,
// hash table or logging. herdless has none of those, so they change nothing.
constexpr std::string_view kIgnoredSubopts[] = {
    "maxconns_fast", "no_maxconns_fast", "hashpower", "no_hashexpand",
    "slab_reassign", "no_slab_reassign", "slab_automove", "no_slab_automove",
    "slab_automove_ratio", "slab_automove_window", "tail_repair_time",
    "hash_algorithm", "lru_crawler", "no_lru_crawler", "lru_crawler_sleep",
    "lru_crawler_tocrawl", "lru_maintainer", "no_lru_maintainer", "hot_lru_pct",
    "warm_lru_pct", "hot_max_factor", "warm_max_factor", "temporary_ttl",
    "watcher_logbuf_size", "worker_logbuf_size", "slab_sizes", "slab_chunk_max",
    "track_sizes", "no_inline_ascii_resp", "inline_ascii_resp", "modern",
    "no_modern", "no_chunked_items", "drop_privileges", "no_drop_privileges",
    "resp_obj_mem_limit", "read_buf_mem_limit",
};

const Flag* FindShort(char c) {
  for (const Flag& f : kFlags) {
    if (f.short_name == c) return &f;
  }
  return nullptr;
}

const Flag* FindLong(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.long_name != nullptr && name == f.long_name) return &f;
  }
  return nullptr;
}

// A whole decimal integer in [min, max]; no sign, spaces or trailing bytes.
bool ParseUnsigned(std::string_view s, uint64_t min, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseInt(std::string_view s, int min, int max, int* out) {
  uint64_t v;
  if (!ParseUnsigned(s, static_cast<uint64_t>(min), static_cast<uint64_t>(max), &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool ParseU32(std::string_view s, uint32_t min, uint32_t max, uint32_t* out) {
  uint64_t v;
  if (!ParseUnsigned(s, min, max, &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// -I: bytes, or a count of k or m (either case), as memcached.
bool ParseSize(std::string_view s, uint64_t* out) {
  uint64_t unit = 1;
  if (!s.empty()) {
    char last = s.back();
    if (last == 'k' || last == 'K') unit = 1024;
    if (last == 'm' || last == 'M') unit = 1024 * 1024;
    if (unit != 1) s.remove_suffix(1);
  }
  uint64_t v;
  if (!ParseUnsigned(s, 0, UINT64_MAX / (1024 * 1024), &v)) return false;
  *out = v * unit;
  return true;
}

bool ParseDouble(std::string_view s, double min, double max, double* out) {
  std::string copy(s);
  if (copy.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// One -l entry: "host", "host:port", "[v6]" or "[v6]:port". port -1 = from -p.
bool ParseListenEntry(std::string_view entry, std::string* host, int* port) {
  *port = -1;
  if (!entry.empty() && entry.front() == '[') {
    size_t close = entry.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(entry.substr(1, close - 1));
    std::string_view rest = entry.substr(close + 1);
    if (rest.empty()) return !host->empty();
    if (rest.front() != ':') return false;
    return !host->empty() && ParseInt(rest.substr(1), 0, 65535, port);
  }
  size_t colon = entry.find(':');
  if (colon != std::string_view::npos && entry.find(':', colon + 1) != std::string_view::npos) {
    *host = std::string(entry);   // a bare IPv6 address
    return true;
  }
  *host = std::string(entry.substr(0, colon));
  if (colon == std::string_view::npos) return !host->empty();
  return !host->empty() && ParseInt(entry.substr(colon + 1), 0, 65535, port);
}

class Parser {
 public:
  Parser(Options* options, std::string* error) : o_(*options), error_(*error) {}

  bool Run(int argc, char** argv);

 private:
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  bool Apply(const Flag& flag, std::string_view value, bool has_value);
  bool ApplySubopts(std::string_view list);
  bool ApplySubopt(std::string_view key, std::string_view value, bool has_value);
  bool ApplyTlsSubopt(std::string_view key, std::string_view value, bool has_value);
  bool Finish();

  Options& o_;
  std::string& error_;
  std::vector<std::string> listen_entries_;   // every -l argument, in order
  bool wait_timeout_set_ = false;
  bool tcp_specified_ = false;
  bool udp_specified_ = false;
  bool protocol_specified_ = false;   // -B given
};

bool Parser::Run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) return Fail("unexpected argument " + Quote(argv[i + 1]));
      break;
    }
    if (arg.size() > 2 && arg.substr(0, 2) == "--") {
      std::string_view name = arg.substr(2);
      std::string_view value;
      bool has_value = false;
      size_t eq = name.find('=');
      if (eq != std::string_view::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const Flag* flag = FindLong(name);
      if (flag == nullptr) return Fail("unrecognized option '--" + std::string(name) + "'");
      if (flag->arg == Arg::kNone && has_value) {
        return Fail("option '--" + std::string(name) + "' doesn't allow an argument");
      }
      if (flag->arg == Arg::kRequired && !has_value) {
        if (i + 1 >= argc) return Fail("option '--" + std::string(name) + "' requires an argument");
        value = argv[++i];
        has_value = true;
      }
      if (!Apply(*flag, value, has_value)) return false;
      if (o_.action != Options::Action::kRun) return true;
      continue;
    }
    if (arg.size() < 2 || arg.front() != '-') {
      return Fail("unexpected argument " + Quote(arg));
    }
    // A cluster of short flags: "-vv", "-dA", "-p11211", "-p 11211".
    for (size_t j = 1; j < arg.size(); ++j) {
      const Flag* flag = FindShort(arg[j]);
      if (flag == nullptr) return Fail(std::string("invalid option -- '") + arg[j] + "'");
      if (flag->arg != Arg::kRequired) {
        if (!Apply(*flag, {}, false)) return false;
        if (o_.action != Options::Action::kRun) return true;
        continue;
      }
      std::string_view value = arg.substr(j + 1);
      if (value.empty()) {
        if (i + 1 >= argc) {
          return Fail(std::string("option requires an argument -- '") + arg[j] + "'");
        }
        value = argv[++i];
      }
      if (!Apply(*flag, value, true)) return false;
      break;
    }
  }
  return Finish();
}

bool Parser::Apply(const Flag& flag, std::string_view value, bool has_value) {
  ProtocolSettings& p = o_.protocol;
  switch (flag.short_name) {
    case 'p':
      // -1: a port the kernel picks (memcached). Range checked in Finish().
      tcp_specified_ = true;
      if (value == "-1") {
        p.tcp_port = -1;
        return true;
      }
      if (!ParseInt(value, 0, 1 << 30, &p.tcp_port)) return Fail("invalid TCP port " + Quote(value));
      return true;
    case 'U':
      udp_specified_ = true;
      if (value == "-1") {
        p.udp_port = -1;
        return true;
      }
      if (!ParseInt(value, 0, 65535, &p.udp_port)) return Fail("invalid UDP port " + Quote(value));
      return true;
    case 's':
      if (value.empty()) return Fail("empty -s socket path");
      p.domain_socket = std::string(value);
      return true;
    case 'a': {
      // An octal mask like chmod's, as memcached's strtol(optarg, NULL, 8).
      uint64_t mask = 0;
      if (value.empty() || value.size() > 4) return Fail("invalid -a mask " + Quote(value) + " (octal)");
      for (char c : value) {
        if (c < '0' || c > '7') return Fail("invalid -a mask " + Quote(value) + " (octal)");
        mask = mask * 8 + static_cast<uint64_t>(c - '0');
      }
      p.unix_mask = static_cast<int>(mask & 07777);
      return true;
    }
    case 'A':
      p.shutdown_enabled = true;
      return true;
    case 'Z':
#ifdef HERDLESS_TLS
      p.tls.enabled = true;
      return true;
#else
      return Fail("This server is not built with TLS support.");
#endif
    case 'l':
      if (value.empty()) return Fail("empty -l address");
      while (!value.empty()) {
        size_t comma = value.find(',');
        std::string_view entry = value.substr(0, comma);
        value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
        bool seen = entry.empty();
        for (const std::string& e : listen_entries_) seen = seen || e == entry;
        if (!seen) listen_entries_.emplace_back(entry);   // memcached also drops repeats
      }
      return true;
    case 'd':
      o_.daemonize = true;
      return true;
    case 'r':
      o_.enable_coredumps = true;
      return true;
    case 'u':
      if (value.empty()) return Fail("empty -u user name");
      p.username = std::string(value);
      return true;
    case 'm': {
      uint64_t mb;
      if (!ParseUnsigned(value, 0, uint64_t{1} << 40, &mb)) {
        return Fail("invalid memory limit " + Quote(value) + " (megabytes)");
      }
      p.max_bytes = mb << 20;
      return true;
    }
    case 'M':
      p.evictions = false;
      return true;
    case 'c':
      if (!ParseInt(value, 1, 1 << 24, &p.max_connections)) {
        return Fail("Maximum connections must be greater than 0");
      }
      return true;
    case 'k':
      o_.lock_memory = true;
      return true;
    case 'v':
      (void)has_value;   // memcached accepts and ignores --verbose=<anything>
      o_.verbosity++;
      return true;
    case 'h':
      o_.action = Options::Action::kHelp;
      return true;
    case 'i':
    case 'V':
      o_.action = Options::Action::kVersion;
      return true;
    case 'P':
      if (value.empty()) return Fail("empty -P pid file name");
      o_.pid_file = std::string(value);
      return true;
    case 'D':
      // memcached: the first character is the delimiter, and -D turns the
      // per-prefix stats on.
      if (value.empty()) return Fail("No delimiter specified");
      p.prefix_delimiter = value[0];
      p.detail_enabled = true;
      return true;
    case 'f':
    case 'n':
    case 'N':
      o_.ignored.push_back(std::string("-") + flag.short_name + " " + std::string(value) +
                           " (no slab allocator / NAPI in herdless)");
      return true;
    case 'X':
      p.dump_enabled = false;
      return true;
    case 'W':
      p.watch_enabled = false;
      return true;
    case 'L':
      o_.ignored.push_back(std::string("-") + flag.short_name);
      return true;
    case 't':
      if (!ParseInt(value, 1, 1024, &p.num_threads)) {
        return Fail("Number of threads must be greater than 0 (at most 1024)");
      }
      if (p.num_threads > 64) {
        o_.warnings.push_back(
            "Setting a high number of worker threads is not recommended."
            " Set this value to the number of cores in your machine or less.");
      }
      return true;
    case 'R':
      if (!ParseInt(value, 1, 1 << 30, &p.reqs_per_event)) {
        return Fail("Number of requests per event must be greater than 0");
      }
      return true;
    case 'C':
      p.cas_enabled = false;
      return true;
    case 'b':
      if (!ParseInt(value, 1, 1 << 30, &p.backlog)) return Fail("invalid listen backlog " + Quote(value));
      return true;
    case 'B':
      protocol_specified_ = true;
      if (value == "auto") {
        p.binding_protocol = BindingProtocol::kAuto;
      } else if (value == "ascii") {
        p.binding_protocol = BindingProtocol::kAscii;
      } else if (value == "binary") {
        p.binding_protocol = BindingProtocol::kBinary;
      } else {
        return Fail("Invalid value for binding protocol: " + std::string(value) +
                    " -- should be one of auto, binary, or ascii");
      }
      return true;
    case 'I': {
      uint64_t size;
      if (!ParseSize(value, &size)) return Fail("invalid item size " + Quote(value));
      p.item_size_max = size;
      return true;
    }
    case 'S':
      p.sasl_enabled = true;
      return true;
    case 'F':
      p.flush_enabled = false;
      return true;
    case 'Y':
      if (value.empty()) return Fail("empty -Y auth file name");
      p.auth_file = std::string(value);
      return true;
    case 'e':
      if (value.empty()) return Fail("empty -e snapshot file name");
      p.memory_file = std::string(value);
      return true;
    case 'o':
      return ApplySubopts(value);
  }
  return Fail(std::string("invalid option -- '") + flag.short_name + "'");
}

bool Parser::ApplySubopts(std::string_view list) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (!ApplySubopt(key, value, eq != std::string_view::npos)) return false;
  }
  return true;
}

bool Parser::ApplySubopt(std::string_view key, std::string_view value, bool has_value) {
  ProtocolSettings& p = o_.protocol;
  auto need = [&](const char* what) {
    return Fail("Missing " + std::string(what) + " argument for " + std::string(key));
  };
  auto bad = [&](const char* range) {
    return Fail("invalid value " + Quote(value) + " for -o " + std::string(key) + " (" + range + ")");
  };
  if (key == "idle_timeout") {
    if (!has_value) return need("numeric");
    if (!ParseInt(value, 0, 1 << 30, &p.idle_timeout)) return bad("seconds, 0 = no timeout");
    return true;
  }
  if (key == "stalled_client_timeout") {
    if (!has_value) return need("numeric");
    if (!ParseInt(value, 0, 1 << 30, &p.stalled_client_timeout)) return bad("seconds, 0 = never");
    return true;
  }
  if (key == "lease_timeout") {
    if (!has_value) return need("numeric");
    if (!ParseU32(value, 0, 4000000, &p.lease_timeout_s)) return bad("seconds, 0 = never");
    return true;
  }
  if (key == "xfetch_delta_ms") {
    if (!has_value) return need("numeric");
    // The measured delta is kept in 16 bits on the item.
    if (!ParseU32(value, 1, 65535, &p.xfetch_delta_ms)) return bad("milliseconds, 1..65535");
    return true;
  }
  if (key == "xfetch_beta") {
    if (!has_value) return need("numeric");
    if (!ParseDouble(value, 0, 1000, &p.xfetch_beta)) return bad("a number >= 0, 0 = off");
    return true;
  }
  if (key == "stale_grace") {
    if (!has_value) return need("numeric");
    if (!ParseU32(value, 0, 1u << 30, &p.stale_grace_s)) return bad("seconds, 0 = off");
    return true;
  }
  if (key == "classic_stampede") {
    if (!has_value) return need("off|stale|wait");
    if (value == "off") {
      p.classic_stampede = ClassicStampedeMode::kOff;
    } else if (value == "stale") {
      p.classic_stampede = ClassicStampedeMode::kStale;
    } else if (value == "wait") {
      p.classic_stampede = ClassicStampedeMode::kWait;
    } else {
      return bad("off, stale or wait");
    }
    return true;
  }
  if (key == "snapshot_interval") {
    if (!has_value) return need("numeric");
    if (!ParseU32(value, 0, 1u << 30, &p.snapshot_interval_s)) return bad("seconds, 0 = off");
    return true;
  }
  if (key == "refresh_ahead") {
    if (!has_value) return need("on|off");
    if (value == "on") {
      p.refresh_ahead = true;
    } else if (value == "off") {
      p.refresh_ahead = false;
    } else {
      return bad("on or off");
    }
    return true;
  }
  if (key == "refresh_hot") {
    if (!has_value) return need("numeric");
    if (!ParseDouble(value, 0.001, 1e9, &p.refresh_hot)) return bad("reads per second, > 0");
    return true;
  }
  if (key == "refresh_epsilon") {
    if (!has_value) return need("numeric");
    if (!ParseDouble(value, 1e-9, 0.5, &p.refresh_epsilon)) return bad("a probability, 0 < e <= 0.5");
    return true;
  }
  if (key == "refresh_max_fraction") {
    if (!has_value) return need("numeric");
    if (!ParseDouble(value, 0.001, 1, &p.refresh_max_fraction)) return bad("a fraction of the TTL, 0 < f <= 1");
    return true;
  }
  if (key == "exact_threads") {
    if (has_value) return Fail("-o exact_threads takes no value");
    p.exact_threads = true;
    return true;
  }
  if (key == "wait_timeout_ms") {
    if (!has_value) return need("numeric");
    if (!ParseU32(value, 1, UINT32_MAX, &p.wait_timeout_ms)) return bad("milliseconds, > 0");
    wait_timeout_set_ = true;
    return true;
  }
#ifdef HERDLESS_TLS
  if (key.substr(0, 4) == "ssl_") return ApplyTlsSubopt(key, value, has_value);
#endif
  for (std::string_view known : kIgnoredSubopts) {
    if (key == known) {
      o_.ignored.push_back("-o " + std::string(key) + (has_value ? "=" + std::string(value) : ""));
      return true;
    }
  }
  return Fail("Illegal suboption " + Quote(key));
}

// memcached's ssl_* suboptions, with its messages.
bool Parser::ApplyTlsSubopt(std::string_view key, std::string_view value, bool has_value) {
  TlsSettings& t = o_.protocol.tls;
  auto need = [&]() { return Fail("Missing " + std::string(key) + " argument"); };
  if (key == "ssl_chain_cert" || key == "ssl_key" || key == "ssl_ciphers" || key == "ssl_ca_cert") {
    if (!has_value || value.empty()) return need();
    std::string& field = key == "ssl_chain_cert" ? t.chain_cert
                         : key == "ssl_key"      ? t.key
                         : key == "ssl_ciphers"  ? t.ciphers
                                                 : t.ca_cert;
    field = std::string(value);
    return true;
  }
  if (key == "ssl_verify_mode") {
    if (!has_value) return need();
    if (!ParseInt(value, 0, 3, &t.verify_mode)) {
      return Fail("Invalid ssl_verify_mode. Use help to see valid options.");
    }
    return true;
  }
  if (key == "ssl_keyformat") {
    if (!has_value) return need();
    // OpenSSL's SSL_FILETYPE_PEM (1) and SSL_FILETYPE_ASN1 (2), by number as
    // memcached takes them, or by name.
    if (value == "PEM" || value == "pem") {
      t.keyformat = 1;
    } else if (value == "DER" || value == "der" || value == "ASN1") {
      t.keyformat = 2;
    } else if (!ParseInt(value, 1, 2, &t.keyformat)) {
      return Fail("could not parse argument to ssl_keyformat");
    }
    return true;
  }
  if (key == "ssl_wbuf_size") {
    if (!has_value) return need();
    uint32_t kb;
    if (!ParseU32(value, 1, 1024, &kb)) return Fail("could not parse argument to ssl_wbuf_size");
    t.wbuf_size = kb * 1024;
    return true;
  }
  if (key == "ssl_session_cache") {
    t.session_cache = true;
    return true;
  }
  if (key == "ssl_kernel_tls") {
    t.kernel_tls = true;
    return true;
  }
  if (key == "ssl_min_version") {
    if (!has_value) return need();
    // memcached takes 0..3; the names it prints are accepted too.
    static constexpr std::string_view kNames[] = {"tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
    for (int i = 0; i < 4; ++i) {
      if (value == kNames[i]) {
        t.min_version = i;
        return true;
      }
    }
    if (!ParseInt(value, 0, 3, &t.min_version)) {
      return Fail("Invalid ssl_min_version. Use help to see valid options.");
    }
    return true;
  }
  if (key == "ssl_handshake_timeout") {   // herdless
    if (!has_value) return need();
    if (!ParseInt(value, 1, 3600, &t.handshake_timeout_s)) {
      return Fail("invalid value " + Quote(value) + " for -o ssl_handshake_timeout (seconds, 1..3600)");
    }
    return true;
  }
  return Fail("Illegal suboption " + Quote(key));
}

bool Parser::Finish() {
  ProtocolSettings& p = o_.protocol;
  // memcached's checks, in memcached's order and words.
  if (p.item_size_max < kItemSizeMin) return Fail("Item max size cannot be less than 1024 bytes.");
  if (p.item_size_max > p.max_bytes / 2) {
    return Fail("Cannot set item size limit higher than 1/2 of memory max.");
  }
  if (p.item_size_max > kItemSizeMax) return Fail("Cannot set item size limit higher than a gigabyte.");
  // memcached: -U without -p serves TCP on the UDP port too.
  if (udp_specified_ && p.udp_port != 0 && !tcp_specified_) p.tcp_port = p.udp_port;
  if (p.tcp_port > 65535) return Fail("ERROR: Invalid port number " + std::to_string(p.tcp_port) + ".");

  if (p.sasl_enabled) {
    // memcached: SASL is binary only, and never over UDP.
    if (!p.auth_file.empty()) return Fail("ERROR: -S (binary SASL) and -Y (ASCII authentication) exclude each other.");
    if (!protocol_specified_) {
      p.binding_protocol = BindingProtocol::kBinary;
    } else if (p.binding_protocol != BindingProtocol::kBinary) {
      return Fail("ERROR: You cannot allow the ASCII protocol while using SASL.");
    }
    if (p.udp_port != 0) return Fail("ERROR: Cannot enable UDP while using binary SASL authentication.");
  }
  if (!p.auth_file.empty()) {
    // memcached: ASCII authentication speaks ASCII only, and never over UDP.
    if (!protocol_specified_) {
      p.binding_protocol = BindingProtocol::kAscii;
    } else if (p.binding_protocol != BindingProtocol::kAscii) {
      return Fail("ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.");
    }
    if (p.udp_port != 0) return Fail("Cannot use UDP with ascii authentication enabled (-U 0 to disable)");
  }

  if (p.snapshot_interval_s != 0 && p.memory_file.empty()) {
    return Fail("-o snapshot_interval needs a snapshot file (-e <file>)");
  }

  if (!wait_timeout_set_) {
    // A parked reader must be answered even when leases never time out.
    p.wait_timeout_ms = p.lease_timeout_s > 0 ? p.lease_timeout_s * 1000 : kWaitTimeoutWithoutLeaseMs;
  }

  if (!listen_entries_.empty()) {
    // Comma-joined, as memcached keeps -l for `stats settings`.
    p.listen_interface.clear();
    for (const std::string& entry : listen_entries_) {
      if (!p.listen_interface.empty()) p.listen_interface += ',';
      p.listen_interface += entry;
    }
  }
  o_.listen.clear();
  std::string_view list = p.listen_interface;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (entry.empty()) continue;
    ListenAddress address;
    address.tls = p.tls.enabled;
    if (entry.substr(0, 6) == "notls:") {
      // memcached: a plain listener beside the TLS ones.
      if (!p.tls.enabled) return Fail("'notls' option is valid only when SSL is enabled");
      address.tls = false;
      entry.remove_prefix(6);
    }
    int port;
    if (!ParseListenEntry(entry, &address.host, &port)) {
      return Fail("invalid -l address " + Quote(entry));
    }
    if (address.host == "*") address.host.clear();
    address.port = port >= 0 ? port : p.tcp_port;
    address.explicit_port = port;
    o_.listen.push_back(std::move(address));
  }
  if (o_.listen.empty()) return Fail("no address to listen on (-l)");
  if (p.tls.enabled && p.tcp_port == 0) {
    bool tls_listener = false;
    for (const ListenAddress& a : o_.listen) tls_listener |= a.tls && a.port != 0;
    if (!tls_listener) return Fail("ERROR: You cannot enable SSL without a TCP port.");
  }
  return true;
}

}  // namespace

bool ParseOptions(int argc, char** argv, Options* options, std::string* error) {
  *options = Options();
#ifdef HERDLESS_TLS
  options->protocol.tls.available = true;
#endif
  error->clear();
  Parser parser(options, error);
  return parser.Run(argc, argv);
}

std::string VersionText() { return "herdless 0.1.0 (memcached 1.6.18 compatible)\n"; }

std::string UsageText() {
  const ProtocolSettings d;
  std::string s = VersionText();
  auto line = [&s](const std::string& text) { s += text + "\n"; };
  line("-p, --port=<num>          TCP port to listen on (default: " + std::to_string(d.tcp_port) + ";");
  line("                          0 = no TCP, -1 = a free port)");
  line("-U, --udp-port=<num>      UDP port to listen on (default: 0, off; -1 = a free port)");
  line("-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)");
  line("-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)");
  line("-A, --enable-shutdown     enable ascii \"shutdown\" command");
  line("-l, --listen=<addr>       interface(s) to listen on, comma separated; an entry may");
  line("                          carry its own port (host:port, [v6]:port)");
  line("                          (default: " + d.listen_interface + ")");
#ifdef HERDLESS_TLS
  line("                          if TLS/SSL is enabled, 'notls' prefix can be used to");
  line("                          disable for specific listeners (-l notls:<ip>:<port>)");
#endif
  line("-d, --daemon              run as a daemon");
  line("-r, --enable-coredumps    maximize core file limit");
  line("-u, --user=<user>         assume identity of <username> (only when run as root)");
  line("-m, --memory-limit=<num>  item memory in megabytes (default: " +
       std::to_string(d.max_bytes >> 20) + ")");
  line("-M, --disable-evictions   return error on memory exhausted instead of evicting");
  line("-c, --conn-limit=<num>    max simultaneous connections (default: " +
       std::to_string(d.max_connections) + ")");
  line("-k, --lock-memory         lock down all paged memory");
  line("-v, --verbose             verbose (print errors/warnings while in event loop)");
  line("-vv                       very verbose (also print connections opened/closed)");
  line("-vvv                      extremely verbose (herdless prints no more than at -vv)");
  line("-h, --help                print this help and exit");
  line("-i, --license             print version and exit (as -V)");
  line("-V, --version             print version and exit");
  line("-P, --pidfile=<file>      save PID in <file> (removed at exit)");
  line("-t, --threads=<num>       number of threads to use (default: " + std::to_string(d.num_threads) + ");");
  line("                          herdless runs no more than the CPUs it may use");
  line("-R, --max-reqs-per-event  maximum number of requests per event, limits the");
  line("                          requests processed per connection to prevent");
  line("                          starvation (default: " + std::to_string(d.reqs_per_event) + ")");
  line("-C, --disable-cas         disable use of CAS");
  line("-b, --listen-backlog=<num> set the backlog queue limit (default: " + std::to_string(d.backlog) + ")");
  line("-B, --protocol=<name>     protocol - one of ascii, binary, or auto (default: auto-negotiate)");
  line("-I, --max-item-size=<num> adjusts max item size");
  line("                          (default: 1m, min: 1k, max: 1024m)");
  line("-S, --enable-sasl         turn on Sasl authentication (binary protocol, PLAIN;");
  line("                          user:password lines in the file $MEMCACHED_SASL_PWDB names)");
  line("-F, --disable-flush-all   disable flush_all command");
  line("-D <char>                 use <char> as the delimiter between key prefixes and");
  line("                          IDs, for per-prefix stats (stats detail dump); the");
  line("                          default is \":\" (colon). -D also turns the per-prefix");
  line("                          stats on (else: the \"stats detail on\" command)");
  line("-X, --disable-dumping     disable stats cachedump and lru_crawler metadump");
  line("-W, --disable-watch       disable watch commands (live logging)");
  line("-Y, --auth-file=<file>    enable ASCII protocol authentication. format:");
  line("                          user:pass\\nuser2:pass2\\n");
  line("-e, --memory-file=<file>  warm restart: load the cache from this snapshot file at");
  line("                          start, write it at every orderly stop (SIGTERM, SIGINT,");
  line("                          SIGUSR1, shutdown) and every snapshot_interval");
#ifdef HERDLESS_TLS
  line("-Z, --enable-ssl          enable TLS/SSL");
#endif
  line("-o, --extended            comma separated list of extended options");
  line("   - idle_timeout:        timeout for idle connections. (default: 0, no timeout)");
  line("   - stalled_client_timeout: close a client that reads none of the replies it is");
  line("                          owed for this long once they reach the output bound");
  line("                          (default: " + std::to_string(d.stalled_client_timeout) + " s; 0 = never)");
  line("   - lease_timeout:       seconds before an unfulfilled lease passes to the next");
  line("                          reader (default: " + std::to_string(d.lease_timeout_s) + "; 0 = never, as memcached)");
  line("   - xfetch_delta_ms:     recompute time assumed before one is measured (default: " +
       std::to_string(d.xfetch_delta_ms) + ")");
  line("   - xfetch_beta:         XFetch beta for lease-get and classic stale mode");
  line("                          (default: 0, off)");
  line("   - stale_grace:         seconds an expired item is kept as stale (default: 0, off)");
  line("   - classic_stampede:    off|stale|wait: stampede protection for plain get/gets");
  line("                          (default: off)");
  line("   - wait_timeout_ms:     longest a parked reader waits in wait mode");
  line("                          (default: lease_timeout, or 5000 when that is 0)");
  line("   - refresh_ahead:       on|off: adaptive refresh-ahead for lease-get and classic");
  line("                          stale/wait mode (default: off; meta clients ask with mg Yr)");
  line("   - refresh_hot:         reads per second from which a key is refreshed ahead");
  line("                          (default: 2)");
  line("   - refresh_epsilon:     chance a hot key is not read in its window (default: 0.01)");
  line("   - refresh_max_fraction: largest refresh window, as a fraction of the TTL");
  line("                          (default: 0.25)");
  line("   - exact_threads:       run -t worker threads even when fewer CPUs are allowed");
  line("   - snapshot_interval:   also write the -e snapshot every <num> seconds, in the");
  line("                          background (default: 0, only at an orderly stop)");
#ifdef HERDLESS_TLS
  line("   - ssl_chain_cert:      certificate chain file in PEM format");
  line("   - ssl_key:             private key, if not part of the -ssl_chain_cert");
  line("   - ssl_keyformat:       private key format (PEM or DER, or 1 or 2) (default: PEM)");
  line("   - ssl_verify_mode:     peer certificate verification mode, default is 0(None).");
  line("                          valid values are 0(None), 1(Request), 2(Require)");
  line("                          or 3(Once)");
  line("   - ssl_ciphers:         specify cipher list to be used");
  line("   - ssl_ca_cert:         PEM format file of acceptable client CA's");
  line("   - ssl_wbuf_size:       size in kilobytes of per-connection SSL output buffer");
  line("                          (default: " + std::to_string(d.tls.wbuf_size / 1024) + ")");
  line("   - ssl_session_cache:   enable server-side SSL session cache, to support session");
  line("                          resumption");
  line("   - ssl_kernel_tls:      enable kernel TLS offload");
  line("   - ssl_min_version:     minimum protocol version to accept (default: tlsv1.2)");
  line("                          valid values are 0(tlsv1.0), 1(tlsv1.1), 2(tlsv1.2), or 3(tlsv1.3).");
  line("   - ssl_handshake_timeout: seconds a TLS handshake may take before the connection");
  line("                          is closed (default: " + std::to_string(d.tls.handshake_timeout_s) + ")");
#endif
  line("   memcached's tuning options (hashpower, slab_*, lru_*, modern, ...) are accepted");
  line("   and ignored.");
  line("Environment: MEMCACHED_PORT_FILENAME=<file>: once listening, write the TCP and UDP");
  line("ports to <file> (\"TCP INET: <port>\" lines), as memcached does.");
  line("Accepted for compatibility with memcached's command line and ignored:");
  line("-f, --slab-growth-factor=<num>");
  line("-n, --slab-min-size=<bytes>");
  line("-L, --enable-largepages");
  line("-N, --napi-ids=<num>");
  return s;
}

}  // namespace herdless
