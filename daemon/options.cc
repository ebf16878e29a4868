#include "daemon/options.h"

#include "config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <sysexits.h>

#include "daemon/option_table.h"
#include "protocol/cluster_ring.h"

namespace herdless {

namespace {

constexpr uint64_t kItemSizeMin = 1024;             // memcached's ITEM_SIZE_MAX_LOWER_LIMIT
constexpr uint64_t kItemSizeMax = 1024ull << 20;    // ITEM_SIZE_MAX_UPPER_LIMIT

#ifdef HERDLESS_TLS
constexpr bool kBuiltWithTls = true;
#else
constexpr bool kBuiltWithTls = false;
#endif

// False for a TLS row in a build without TLS: -h does not show it, -o does
// not know it.
bool InThisBuild(const OptionRow& row) { return kBuiltWithTls || !row.tls; }

}  // namespace

// --- OptionParse: the helpers of the table's apply functions -----------------

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool ParseWholeNumber(std::string_view s, uint64_t min, uint64_t max, uint64_t* out) {
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

bool ParseWholeNumber(std::string_view s, int min, int max, int* out) {
  uint64_t v;
  if (!ParseWholeNumber(s, static_cast<uint64_t>(min), static_cast<uint64_t>(max), &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool OptionParse::Fail(std::string message) {
  error = std::move(message);
  return false;
}

bool OptionParse::FailGetopt(std::string message) {
  getopt_error = true;
  return Fail(std::move(message));
}

bool OptionParse::Int(int min, int max, int* out) const {
  return ParseWholeNumber(value, min, max, out);
}

bool OptionParse::Unsigned(uint64_t min, uint64_t max, uint64_t* out) const {
  return ParseWholeNumber(value, min, max, out);
}

bool OptionParse::U32(uint32_t min, uint32_t max, uint32_t* out) const {
  uint64_t v;
  if (!ParseWholeNumber(value, min, max, &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool OptionParse::Double(double min, double max, double* out) const {
  const std::string text(value);
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

bool OptionParse::Word(std::span<const std::string_view> words, int* index) const {
  for (size_t i = 0; i < words.size(); ++i) {
    if (value == words[i]) {
      *index = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

bool OptionParse::Missing(std::string_view what) {
  return Fail("Missing " + std::string(what) + " argument for " + std::string(name));
}

bool OptionParse::Invalid(std::string_view range) {
  return Fail("invalid value " + Quoted(value) + " for -o " + std::string(name) + " (" +
              std::string(range) + ")");
}

bool OptionParse::Number(int min, int max, int* out, std::string_view range) {
  if (!has_value) return Missing("numeric");
  return Int(min, max, out) || Invalid(range);
}

bool OptionParse::Number(uint32_t min, uint32_t max, uint32_t* out, std::string_view range) {
  if (!has_value) return Missing("numeric");
  return U32(min, max, out) || Invalid(range);
}

bool OptionParse::Number(double min, double max, double* out, std::string_view range) {
  if (!has_value) return Missing("numeric");
  return Double(min, max, out) || Invalid(range);
}

bool OptionParse::Choice(std::span<const std::string_view> words, std::string_view what,
                         std::string_view range, int* out) {
  if (!has_value) return Missing(what);
  return Word(words, out) || Invalid(range);
}

bool OptionParse::MissingSsl() { return Fail("Missing " + std::string(name) + " argument"); }

bool OptionParse::ApplySuboptions(std::string_view list) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    flag = 0;
    name = item.substr(0, eq);
    value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    has_value = eq != std::string_view::npos;
    if (!ApplySuboption()) return false;
  }
  return true;
}

bool OptionParse::ApplySuboption() {
  for (const OptionRow& row : SuboptionRows()) {
    if (name == row.name && InThisBuild(row)) return row.apply(*this);
  }
  // memcached's crawler, LRU maintainer, slab mover and connection-limit
  // switches, in order (-o no_modern,lru_crawler: the crawler on). They set
  // what `stats settings` shows and which of their blocks `stats` prints.
  constexpr std::string_view kSwitches[] = {
      "lru_crawler",   "no_lru_crawler",   "no_modern",     "lru_maintainer",
      "no_lru_maintainer", "slab_reassign", "no_slab_reassign", "maxconns_fast",
      "no_maxconns_fast",  "no_slab_automove"};
  if (std::find(std::begin(kSwitches), std::end(kSwitches), name) != std::end(kSwitches)) {
    if (has_value) return Fail("-o " + std::string(name) + " takes no value");
    MachinerySettings& m = settings.machinery;
    const bool on = !name.starts_with("no_");
    if (name == "lru_crawler" || name == "no_lru_crawler") {
      settings.lru_crawler_at_start = on;
    } else if (name == "no_modern") {
      settings.lru_crawler_at_start = false;
      m.lru_maintainer = m.slab_reassign = m.maxconns_fast = false;
      m.slab_automove = 0;
      slab_chunk_max_is_page = true;
    } else if (name.ends_with("slab_reassign")) {
      m.slab_reassign = on;
    } else if (name.ends_with("maxconns_fast")) {
      m.maxconns_fast = on;
    } else if (name == "no_slab_automove") {
      m.slab_automove = 0;
    } else {
      m.lru_maintainer = on;
    }
    return true;
  }
  if (name == "slab_automove") {   // memcached: alone 1, else atoi in 0..2
    const int mode = has_value ? std::atoi(std::string(value).c_str()) : 1;
    if (mode < 0 || mode > 2) return Fail("slab_automove must be between 0 and 2");
    settings.machinery.slab_automove = static_cast<uint32_t>(mode);
    return true;
  }
  for (std::string_view ignored : IgnoredSuboptions()) {
    if (name == ignored) return NoteIgnored();
  }
  return Fail("Illegal suboption " + Quoted(name));
}

bool OptionParse::NoteIgnored() {
  std::string note = flag != 0 ? std::string("-") + flag : "-o " + std::string(name);
  if (flag != 0 && has_value) {
    note += " " + std::string(value) + " (no slab allocator / NAPI in herdless)";
  } else if (has_value) {
    note += "=" + std::string(value);
  }
  options.ignored.push_back(std::move(note));
  return true;
}

// --- the command line --------------------------------------------------------

namespace {

const OptionRow* FindFlag(char c) {
  for (const OptionRow& row : FlagRows()) {
    if (row.flag == c) return &row;
  }
  return nullptr;
}

const OptionRow* FindLongFlag(std::string_view name) {
  for (const OptionRow& row : FlagRows()) {
    if ((row.name != nullptr && name == row.name) || (row.alias != nullptr && name == row.alias)) {
      return &row;
    }
  }
  return nullptr;
}

bool Apply(const OptionRow& row, std::string_view value, bool has_value, OptionParse* p) {
  p->flag = row.flag;
  p->name = {};
  p->value = value;
  p->has_value = has_value;
  return row.apply(*p);
}

// "--name", "--name=value" or "--name value" (then *i moves past the value),
// with getopt_long's messages.
bool ApplyLongFlag(std::string_view arg, int argc, char** argv, int* i, OptionParse* p) {
  std::string_view name = arg.substr(2);
  std::string_view value;
  bool has_value = false;
  const size_t eq = name.find('=');
  if (eq != std::string_view::npos) {
    value = name.substr(eq + 1);
    name = name.substr(0, eq);
    has_value = true;
  }
  const OptionRow* row = FindLongFlag(name);
  if (row == nullptr) return p->FailGetopt("unrecognized option '--" + std::string(name) + "'");
  if (row->arg == Arg::kNone && has_value) {
    return p->FailGetopt("option '--" + std::string(name) + "' doesn't allow an argument");
  }
  if (row->arg == Arg::kRequired && !has_value) {
    if (*i + 1 >= argc) return p->FailGetopt("option '--" + std::string(name) + "' requires an argument");
    value = argv[++*i];
    has_value = true;
  }
  return Apply(*row, value, has_value, p);
}

// A cluster of short flags: "-vv", "-dA", "-p11211", "-p 11211" (then *i
// moves past the value), with getopt's messages. Stops after -h or -V.
bool ApplyShortFlags(std::string_view arg, int argc, char** argv, int* i, OptionParse* p) {
  for (size_t j = 1; j < arg.size(); ++j) {
    const OptionRow* row = FindFlag(arg[j]);
    if (row == nullptr) return p->FailGetopt(std::string("invalid option -- '") + arg[j] + "'");
    if (row->arg != Arg::kRequired) {
      if (!Apply(*row, {}, false, p)) return false;
      if (p->options.action != Options::Action::kRun) return true;
      continue;
    }
    std::string_view value = arg.substr(j + 1);
    if (value.empty()) {
      if (*i + 1 >= argc) return p->FailGetopt(std::string("option requires an argument -- '") + arg[j] + "'");
      value = argv[++*i];
    }
    return Apply(*row, value, true, p);
  }
  return true;
}

bool ApplyArguments(int argc, char** argv, OptionParse* p) {
  for (int i = 1; i < argc && p->options.action == Options::Action::kRun; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) return p->Fail("unexpected argument " + Quoted(argv[i + 1]));
      break;
    }
    if (arg.size() > 2 && arg.substr(0, 2) == "--") {
      if (!ApplyLongFlag(arg, argc, argv, &i, p)) return false;
    } else if (arg.size() < 2 || arg.front() != '-') {
      return p->Fail("unexpected argument " + Quoted(arg));
    } else if (!ApplyShortFlags(arg, argc, argv, &i, p)) {
      return false;
    }
  }
  return true;
}

// memcached's checks once every option is known, in memcached's order and words
// (ParseOptions calls them in that order).
bool CheckItemSizeMax(OptionParse* p) {
  const ProtocolSettings& s = p->settings;
  if (s.item_size_max < kItemSizeMin) return p->Fail("Item max size cannot be less than 1024 bytes.");
  if (s.item_size_max > s.max_bytes / 2) {
    return p->Fail("Cannot set item size limit higher than 1/2 of memory max.");
  }
  if (s.item_size_max > kItemSizeMax) return p->Fail("Cannot set item size limit higher than a gigabyte.");
  return true;
}

bool CheckPorts(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  // memcached: -U without -p serves TCP on the UDP port too.
  if (p->udp_port_given && s.udp_port != 0 && !p->tcp_port_given) s.tcp_port = s.udp_port;
  if (s.tcp_port > 65535) return p->Fail("ERROR: Invalid port number " + std::to_string(s.tcp_port) + ".");
  return true;
}

// -o slab_chunk_max, once -o compat is known wherever it stands: memcached
// 1.6.18 reads bytes (and goes on without a value it cannot read), 1.6.45
// kilobytes; then both check it against -I and the 1 MB page, in their words.
// Without it, memcached's default: half a page (or of -I, below that).
bool CheckSlabChunkMax(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  constexpr int64_t kPage = 1 << 20;   // memcached's slab_page_size
  const int64_t item_max = static_cast<int64_t>(s.item_size_max);
  s.slab_chunk_max = static_cast<uint32_t>(item_max < kPage / 2 ? item_max / 2 : kPage / 2);
  if (p->slab_chunk_max_is_page) s.slab_chunk_max = kPage;   // -o no_modern
  if (!p->slab_chunk_max_given) return true;
  const std::string& text = p->slab_chunk_max_value;
  char* end = nullptr;
  errno = 0;
  long long chunk = std::strtoll(text.c_str(), &end, 10);
  const bool parsed = !text.empty() && errno == 0 && (*end == '\0' || *end == ' ');
  if (s.latest()) {
    // memcached 1.6.45 reads the value inside its getopt loop: these exit 1.
    p->exit_status = 1;
    if (!p->slab_chunk_max_has_value) return p->Fail("Missing slab_chunk_max argument");
    if (!parsed) return p->Fail("could not parse argument to slab_chunk_max");
    if (chunk <= 0) return p->Fail("slab_chunk_max must be >= 0");
    if (chunk > 1024) return p->Fail("slab_chunk_max must be specified in kilobytes.");
    chunk *= 1024;
    p->exit_status = EX_USAGE;
  } else if (!parsed || chunk <= 0) {
    return true;
  }
  const std::string bytes = std::to_string(chunk), items = std::to_string(item_max);
  if (chunk > item_max) {
    return p->Fail("slab_chunk_max (bytes: " + bytes + ") cannot be larger than -I (item_size_max " +
                   items + ")");
  }
  if (item_max % chunk != 0) {
    return p->Fail("-I (item_size_max: " + items + ") must be evenly divisible by slab_chunk_max (bytes: " +
                   bytes + ")");
  }
  if (kPage % chunk != 0) {
    return p->Fail("slab_chunk_max (bytes: " + bytes + ") must divide evenly into " +
                   std::to_string(kPage) + " (slab_page_size)");
  }
  s.slab_chunk_max = static_cast<uint32_t>(chunk);
  return true;
}

bool CheckAuthentication(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  if (s.sasl_enabled) {
    // memcached: SASL is binary only, and never over UDP.
    if (!s.auth_file.empty()) return p->Fail("ERROR: -S (binary SASL) and -Y (ASCII authentication) exclude each other.");
    if (!p->protocol_given) {
      s.binding_protocol = BindingProtocol::kBinary;
    } else if (s.binding_protocol != BindingProtocol::kBinary) {
      return p->Fail("ERROR: You cannot allow the ASCII protocol while using SASL.");
    }
    if (s.udp_port != 0) return p->Fail("ERROR: Cannot enable UDP while using binary SASL authentication.");
  }
  if (!s.auth_file.empty()) {
    // memcached: ASCII authentication speaks ASCII only, and never over UDP.
    if (!p->protocol_given) {
      s.binding_protocol = BindingProtocol::kAscii;
    } else if (s.binding_protocol != BindingProtocol::kAscii) {
      return p->Fail("ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.");
    }
    if (s.udp_port != 0) return p->Fail("Cannot use UDP with ascii authentication enabled (-U 0 to disable)");
  }
  return true;
}

bool CheckStampedeAndSnapshot(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  if (s.snapshot_interval_s != 0 && s.memory_file.empty()) {
    return p->Fail("-o snapshot_interval needs a snapshot file (-e <file>)");
  }
  if (s.ring.empty() != s.ring_self.empty()) return p->Fail("-o ring and -o ring_self go together");
  if (!s.ring.empty()) {
    std::string error;
    if (ClusterRing::Load(s.ring, s.ring_self, &error) == nullptr) return p->Fail(error);
  }
  if (!p->wait_timeout_given) {
    // A parked reader must be answered even when leases never time out.
    const uint32_t lease_ms = s.lease.lease_timeout_ms;
    s.wait_timeout_ms = lease_ms > 0 ? lease_ms : kWaitTimeoutWithoutLeaseMs;
  }
  return true;
}

// One -l entry: "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6
// address; *port = -1 when it names none.
bool ParseListenEntry(std::string_view entry, std::string* host, int* port) {
  *port = -1;
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(entry.substr(1, close - 1));
    const std::string_view rest = entry.substr(close + 1);
    if (rest.empty()) return !host->empty();
    if (rest.front() != ':') return false;
    return !host->empty() && ParseWholeNumber(rest.substr(1), 0, 65535, port);
  }
  const size_t colon = entry.find(':');
  if (colon != std::string_view::npos && entry.find(':', colon + 1) != std::string_view::npos) {
    *host = std::string(entry);   // a bare IPv6 address
    return true;
  }
  *host = std::string(entry.substr(0, colon));
  if (colon == std::string_view::npos) return !host->empty();
  return !host->empty() && ParseWholeNumber(entry.substr(colon + 1), 0, 65535, port);
}

// The -l entries (or the default interface) as listeners.
bool BuildListeners(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  if (!p->listen_entries.empty()) {
    // Comma-joined, as memcached keeps -l for `stats settings`.
    s.listen_interface.clear();
    for (const std::string& entry : p->listen_entries) {
      if (!s.listen_interface.empty()) s.listen_interface += ',';
      s.listen_interface += entry;
    }
  }
  std::vector<ListenAddress>& listen = p->options.listen;
  listen.clear();
  for (std::string_view list = s.listen_interface; !list.empty();) {
    const size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (entry.empty()) continue;
    ListenAddress address;
    address.tls = s.tls.enabled;
    if (entry.substr(0, 6) == "notls:") {
      // memcached: a plain listener beside the TLS ones.
      if (!s.tls.enabled) return p->Fail("'notls' option is valid only when SSL is enabled");
      address.tls = false;
      entry.remove_prefix(6);
    }
    int port;
    if (!ParseListenEntry(entry, &address.host, &port)) {
      return p->Fail("invalid -l address " + Quoted(entry));
    }
    if (address.host == "*") address.host.clear();
    address.port = port >= 0 ? port : s.tcp_port;
    address.explicit_port = port;
    listen.push_back(std::move(address));
  }
  if (listen.empty()) return p->Fail("no address to listen on (-l)");
  if (s.tls.enabled && s.tcp_port == 0) {
    bool tls_listener = false;
    for (const ListenAddress& a : listen) tls_listener |= a.tls && a.port != 0;
    if (!tls_listener) return p->Fail("ERROR: You cannot enable SSL without a TCP port.");
  }
  return true;
}

// -h: the option column is this wide (or one space wider than the option).
constexpr size_t kHelpColumn = 26;

void AddHelpLine(std::string_view column, std::string_view text, std::string* s) {
  *s += column;
  if (!text.empty()) {
    s->append(column.size() < kHelpColumn ? kHelpColumn - column.size() : 1, ' ');
    *s += text;
  }
  *s += '\n';
}

// One row's -h entry: its option column, then its help lines.
void AddHelp(const OptionRow& row, const ProtocolSettings& defaults, std::string* s) {
  if (!InThisBuild(row) || row.unlisted) return;
  std::string column;
  if (row.flag == 0) {
    column = std::string("   - ") + row.name + ":";
  } else {
    column = std::string("-") + row.flag;
    if (row.name != nullptr) column += std::string(", --") + row.name;
    if (row.value != nullptr) column += std::string(row.name != nullptr ? "=" : " ") + row.value;
  }
  std::string help = row.help != nullptr ? row.help : "";
  if (row.tls_help != nullptr && kBuiltWithTls) help += std::string("\n") + row.tls_help;
  const size_t at = help.find("{default}");
  if (at != std::string::npos) help.replace(at, 9, row.help_default(defaults));
  std::string_view lines = help;
  do {
    const size_t newline = lines.find('\n');
    std::string_view line = lines.substr(0, newline);
    lines = newline == std::string_view::npos ? std::string_view() : lines.substr(newline + 1);
    const size_t tab = line.find('\t');
    if (tab != std::string_view::npos) {
      AddHelpLine(line.substr(0, tab), line.substr(tab + 1), s);
    } else {
      AddHelpLine(column, line, s);
    }
    column.clear();   // the next lines go under the first
  } while (!lines.empty());
}

}  // namespace

bool ParseOptions(int argc, char** argv, Options* options, OptionError* error) {
  *options = Options();
#ifdef HERDLESS_TLS
  options->protocol.tls.available = true;
#endif
  OptionParse parse(options);
  // -h and -V stop the parse: the rest of the command line is not checked.
  bool ok = ApplyArguments(argc, argv, &parse);
  if (ok && options->action == Options::Action::kRun) {
    parse.exit_status = EX_USAGE;   // memcached exits so from its checks after getopt
    // (CheckExtstoreAsRead's are made as memcached reads the options: they exit 1.)
    ok = CheckExtstoreAsRead(&parse) && CheckNapiIds(&parse) &&
         CheckItemSizeMax(&parse) && CheckSlabChunkMax(&parse) && CheckExtstoreConfig(&parse) &&
         CheckTuningOptions(&parse) && CheckAuthentication(&parse) && CheckPorts(&parse) &&
         CheckExtstoreInit(&parse) && CheckStampedeAndSnapshot(&parse) && BuildListeners(&parse);
  }
  *error = OptionError{parse.error, parse.exit_status, parse.getopt_error};
  return ok;
}

bool ParseOptions(int argc, char** argv, Options* options, std::string* error) {
  OptionError full;
  const bool ok = ParseOptions(argc, argv, options, &full);
  *error = std::move(full.message);
  return ok;
}

std::string OptionError::Printed(const char* program) const {
  if (!from_getopt) return message + "\n";
  return std::string(program) + ": " + message + "\nIllegal argument \"?\"\n";
}

std::string VersionText() { return "herdless 0.1.0 (memcached 1.6.18 compatible)\n"; }

std::string UsageText() {
  const ProtocolSettings defaults;
  std::string s = VersionText();
  for (const OptionRow& row : FlagRows()) {
    if (!row.ignored) AddHelp(row, defaults, &s);
  }
  for (const OptionRow& row : SuboptionRows()) {
    if (!row.ignored) AddHelp(row, defaults, &s);
  }
  s += "   memcached's tuning options (hashpower, slab_*, lru_*, modern, ...) are accepted\n"
       "   and ignored.\n"
       "Environment: MEMCACHED_PORT_FILENAME=<file>: once listening, write the TCP and UDP\n"
       "ports to <file> (\"TCP INET: <port>\" lines), as memcached does.\n"
       "Accepted for compatibility with memcached's command line and ignored:\n";
  for (const OptionRow& row : FlagRows()) {
    if (row.ignored) AddHelp(row, defaults, &s);
  }
  return s;
}

}  // namespace herdless
