#include "daemon/option_table.h"

#include "daemon/warm_peer.h"

#include "config.h"

#include <sysexits.h>

#include <climits>
#include <cstdio>

#include "daemon/metrics_server.h"
#include "daemon/tls.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

// --- how values are read and shown ------------------------------------------

// The names of ClassicStampedeMode, BindingProtocol (memcached's -B words) and
// TlsSettings::min_version, by value.
constexpr std::string_view kStampedeModes[] = {"off", "stale", "wait"};
constexpr std::string_view kCompatVersions[] = {"1.6.18", "1.6.45"};   // Compat's order
constexpr std::string_view kBindingProtocols[] = {"auto", "ascii", "binary"};
constexpr std::string_view kTlsVersions[] = {"tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
constexpr std::string_view kOffOn[] = {"off", "on"};
constexpr std::string_view kIoPaths[] = {"auto", "uring", "epoll"};

// memcached's prot_text(): -B's word, but "auto-negotiate" for auto.
std::string BindingProtocolName(BindingProtocol p) {
  if (p == BindingProtocol::kAuto) return "auto-negotiate";
  return std::string(kBindingProtocols[static_cast<int>(p)]);
}

// memcached's ssl_proto_text().
std::string_view TlsVersionName(int min_version) {
  return min_version >= 0 && min_version <= 3 ? kTlsVersions[min_version] : "unknown";
}

std::string Octal(int mask) {
  char text[16];
  const int n = std::snprintf(text, sizeof(text), "%o", static_cast<unsigned>(mask));
  return std::string(text, static_cast<size_t>(n));
}

// -I's syntax for a size: "1m", "512k" or bytes.
std::string SizeText(uint64_t bytes) {
  if (bytes != 0 && bytes % (1024 * 1024) == 0) return std::to_string(bytes >> 20) + "m";
  if (bytes != 0 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "k";
  return std::to_string(bytes);
}

std::string DefaultText(int v) { return std::to_string(v); }
std::string DefaultText(uint32_t v) { return std::to_string(v); }
std::string DefaultText(double v) {
  char text[32];
  const int n = std::snprintf(text, sizeof(text), "%g", v);
  return std::string(text, static_cast<size_t>(n));
}
std::string DefaultText(const std::string& v) { return v; }

// The setting a row shows, reached through `Path`: <&ProtocolSettings::tls,
// &TlsSettings::key> is settings.tls.key.
template <auto... Path>
const auto& At(const ProtocolSettings& s) {
  return (s .* ... .* Path);
}

// help_default: the default of the setting, as the option takes it.
template <auto... Path>
std::string Default(const ProtocolSettings& d) {
  return DefaultText(At<Path...>(d));
}

// Setting writers: the setting as memcached prints it.
template <auto... Path>
void Signed(const SettingsView& v, std::string_view name, StatWriter* w) {
  w->AddSigned(name, At<Path...>(v.settings));
}
template <auto... Path>
void Unsigned(const SettingsView& v, std::string_view name, StatWriter* w) {
  w->Add(name, uint64_t{At<Path...>(v.settings)});
}
template <auto... Path>
void YesNo(const SettingsView& v, std::string_view name, StatWriter* w) {
  w->AddBool(name, At<Path...>(v.settings));
}
template <int kDecimals, auto... Path>
void Fixed(const SettingsView& v, std::string_view name, StatWriter* w) {
  w->AddFixed(name, At<Path...>(v.settings), kDecimals);
}
// A path or name, or what memcached prints for none: "NULL", or "(null)"
// where it passes NULL to printf.
inline constexpr char kNull[] = "NULL";
inline constexpr char kNullPrinted[] = "(null)";
template <const char* kUnset, auto... Path>
void TextOr(const SettingsView& v, std::string_view name, StatWriter* w) {
  const std::string& text = At<Path...>(v.settings);
  w->Add(name, text.empty() ? std::string_view(kUnset) : std::string_view(text));
}

// --- how values are applied -------------------------------------------------

template <auto Field, bool kValue>
bool Set(OptionParse& p) {
  p.settings.*Field = kValue;
  return true;
}

template <auto Field>
bool SetOption(OptionParse& p) {
  p.options.*Field = true;
  return true;
}

template <Options::Action kAction>
bool Act(OptionParse& p) {
  p.options.action = kAction;
  return true;
}

// A file or user name, which may not be empty.
bool Name(OptionParse& p, std::string* field, const char* what) {
  if (p.value.empty()) return p.Fail(std::string("empty ") + what);
  *field = std::string(p.value);
  return true;
}

// -p and -U: -1 asks the kernel for a port.
bool Port(OptionParse& p, int max, int* port, const char* what) {
  if (p.value == "-1") {
    *port = -1;
    return true;
  }
  return p.Int(0, max, port) || p.Fail(std::string("invalid ") + what + " port " + Quoted(p.value));
}

// memcached's ssl_* paths and names, which may not be empty.
bool TlsText(OptionParse& p, std::string TlsSettings::*field) {
  if (!p.has_value || p.value.empty()) return p.MissingSsl();
  p.settings.tls.*field = std::string(p.value);
  return true;
}

// --- the table --------------------------------------------------------------

using W = StatWriter;
using V = SettingsView;
using P = ProtocolSettings;

// memcached 1.6.18's flags, in the order -h lists them.
constexpr OptionRow kFlags[] = {
    {.flag = 'p', .name = "port", .arg = Arg::kRequired, .value = "<num>",
     .help = "TCP port to listen on (default: {default};\n0 = no TCP, -1 = a free port)",
     .help_default = Default<&P::tcp_port>,
     .apply = [](OptionParse& p) {
       p.tcp_port_given = true;   // range checked once -U is known
       return Port(p, 1 << 30, &p.settings.tcp_port, "TCP");
     },
     .setting = {"tcpport", Signed<&P::tcp_port>}},
    {.flag = 'U', .name = "udp-port", .arg = Arg::kRequired, .value = "<num>",
     .help = "UDP port to listen on (default: {default}, off; -1 = a free port)",
     .help_default = Default<&P::udp_port>,
     .apply = [](OptionParse& p) {
       p.udp_port_given = true;
       return Port(p, 65535, &p.settings.udp_port, "UDP");
     },
     .setting = {"udpport", Signed<&P::udp_port>}},
    {.flag = 's', .name = "unix-socket", .arg = Arg::kRequired, .value = "<file>",
     .help = "UNIX socket to listen on (disables network support)",
     .apply = [](OptionParse& p) { return Name(p, &p.settings.domain_socket, "-s socket path"); },
     .setting = {"domain_socket", TextOr<kNull, &P::domain_socket>}},
    {.flag = 'a', .name = "unix-mask", .arg = Arg::kRequired, .value = "<mask>",
     .help = "access mask for UNIX socket, in octal (default: {default})",
     .help_default = [](const P& d) { return Octal(d.unix_mask); },
     .apply = [](OptionParse& p) {
       // Octal like chmod's, as memcached's strtol(optarg, NULL, 8).
       const std::string bad = "invalid -a mask " + Quoted(p.value) + " (octal)";
       if (p.value.empty() || p.value.size() > 4) return p.Fail(bad);
       int mask = 0;
       for (char c : p.value) {
         if (c < '0' || c > '7') return p.Fail(bad);
         mask = mask * 8 + (c - '0');
       }
       p.settings.unix_mask = mask;
       return true;
     },
     .setting = {"umask", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, Octal(v.settings.unix_mask));
                 }}},
    {.flag = 'A', .name = "enable-shutdown",
     .help = "enable ascii \"shutdown\" command",
     .apply = Set<&P::shutdown_enabled, true>,
     .setting = {"shutdown_command", YesNo<&P::shutdown_enabled>}},
    {.flag = 'l', .name = "listen", .arg = Arg::kRequired, .value = "<addr>",
     .help = "interface(s) to listen on, comma separated; an entry may\n"
             "carry its own port (host:port, [v6]:port)\n(default: {default})",
     .tls_help = "if TLS/SSL is enabled, 'notls' prefix can be used to\n"
                 "disable for specific listeners (-l notls:<ip>:<port>)",
     .help_default = Default<&P::listen_interface>,
     .apply = [](OptionParse& p) {
       if (p.value.empty()) return p.Fail("empty -l address");
       for (std::string_view list = p.value; !list.empty();) {
         const size_t comma = list.find(',');
         const std::string_view entry = list.substr(0, comma);
         list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
         bool seen = entry.empty();
         for (const std::string& e : p.listen_entries) seen = seen || e == entry;
         if (!seen) p.listen_entries.emplace_back(entry);   // memcached also drops repeats
       }
       return true;
     },
     .setting = {"inter", TextOr<kNull, &P::listen_interface>}},
    {.flag = 'd', .name = "daemon", .help = "run as a daemon",
     .apply = SetOption<&Options::daemonize>},
    {.flag = 'r', .name = "enable-coredumps", .help = "maximize core file limit",
     .apply = SetOption<&Options::enable_coredumps>},
    {.flag = 'u', .name = "user", .arg = Arg::kRequired, .value = "<user>",
     .help = "assume identity of <username> (only when run as root)",
     .apply = [](OptionParse& p) { return Name(p, &p.settings.username, "-u user name"); }},
    {.flag = 'm', .name = "memory-limit", .arg = Arg::kRequired, .value = "<num>",
     .help = "item memory in megabytes (default: {default})",
     .help_default = [](const P& d) { return std::to_string(d.max_bytes >> 20); },
     .apply = [](OptionParse& p) {
       uint64_t mb;
       if (!p.Unsigned(0, uint64_t{1} << 40, &mb)) {
         return p.Fail("invalid memory limit " + Quoted(p.value) + " (megabytes)");
       }
       p.settings.max_bytes = mb << 20;
       return true;
     },
     // cache_memlimit changes it.
     .setting = {"maxbytes", [](const V& v, std::string_view n, W* w) { w->Add(n, v.memory_limit); }}},
    {.flag = 'M', .name = "disable-evictions",
     .help = "return error on memory exhausted instead of evicting",
     .apply = Set<&P::evictions, false>,
     .setting = {"evictions", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, v.settings.evictions ? "on" : "off");
                 }}},
    {.flag = 'c', .name = "conn-limit", .arg = Arg::kRequired, .value = "<num>",
     .help = "max simultaneous connections (default: {default})",
     .help_default = Default<&P::max_connections>,
     .apply = [](OptionParse& p) {
       return p.Int(1, 1 << 24, &p.settings.max_connections) ||
              p.Fail("Maximum connections must be greater than 0");
     },
     .setting = {"maxconns", Signed<&P::max_connections>}},
    {.flag = 'k', .name = "lock-memory", .help = "lock down all paged memory",
     .apply = SetOption<&Options::lock_memory>},
    {.flag = 'v', .name = "verbose", .arg = Arg::kOptional,   // --verbose=<anything> counts once
     .help = "verbose (print errors/warnings while in event loop)\n"
             "-vv\tvery verbose (also print connections opened/closed)\n"
             "-vvv\textremely verbose (herdless prints no more than at -vv)",
     .apply = [](OptionParse& p) {
       p.options.verbosity++;
       return true;
     },
     // The verbosity command changes it.
     .setting = {"verbosity", [](const V& v, std::string_view n, W* w) {
                   w->AddSigned(n, v.verbosity);
                 }}},
    {.flag = 'h', .name = "help", .help = "print this help and exit",
     .apply = Act<Options::Action::kHelp>},
    {.flag = 'i', .name = "license", .help = "print version and exit (as -V)",
     .apply = Act<Options::Action::kVersion>},
    {.flag = 'V', .name = "version", .help = "print version and exit",
     .apply = Act<Options::Action::kVersion>},
    {.flag = 'P', .name = "pidfile", .alias = "pid-file", .arg = Arg::kRequired, .value = "<file>",
     .help = "save PID in <file> (removed at exit)",
     .apply = [](OptionParse& p) { return Name(p, &p.options.pid_file, "-P pid file name"); }},
    {.flag = 't', .name = "threads", .arg = Arg::kRequired, .value = "<num>",
     .help = "number of threads to use (default: {default});\n"
             "herdless runs no more than the CPUs it may use",
     .help_default = Default<&P::num_threads>,
     .apply = [](OptionParse& p) {
       if (!p.Int(1, 1024, &p.settings.num_threads)) {
         // memcached's words (it reads the value with atoi); herdless also stops at 1024.
         int many = 0;
         return p.Fail(p.Int(1025, INT_MAX, &many) ? "Number of threads must be at most 1024"
                                                   : "Number of threads must be greater than 0");
       }
       if (p.settings.num_threads > 64) {
         p.options.warnings.push_back(
             "Setting a high number of worker threads is not recommended."
             " Set this value to the number of cores in your machine or less.");
       }
       return true;
     },
     .setting = {"num_threads", Signed<&P::num_threads>}},
    {.flag = 'R', .name = "max-reqs-per-event", .arg = Arg::kRequired,
     .help = "maximum number of requests per event, limits the\n"
             "requests processed per connection to prevent\nstarvation (default: {default})",
     .help_default = Default<&P::reqs_per_event>,
     .apply = [](OptionParse& p) {
       return p.Int(1, 1 << 30, &p.settings.reqs_per_event) ||
              p.Fail("Number of requests per event must be greater than 0");
     },
     .setting = {"reqs_per_event", Signed<&P::reqs_per_event>}},
    {.flag = 'C', .name = "disable-cas", .help = "disable use of CAS",
     .apply = Set<&P::cas_enabled, false>,
     .setting = {"cas_enabled", YesNo<&P::cas_enabled>}},
    {.flag = 'b', .name = "listen-backlog", .arg = Arg::kRequired, .value = "<num>",
     .help = "set the backlog queue limit (default: {default})",
     .help_default = Default<&P::backlog>,
     .apply = [](OptionParse& p) {
       return p.Int(1, 1 << 30, &p.settings.backlog) ||
              p.Fail("invalid listen backlog " + Quoted(p.value));
     },
     .setting = {"tcp_backlog", Signed<&P::backlog>}},
    {.flag = 'B', .name = "protocol", .arg = Arg::kRequired, .value = "<name>",
     .help = "protocol - one of ascii, binary, or auto (default: {default})",
     .help_default = [](const P& d) { return BindingProtocolName(d.binding_protocol); },
     .apply = [](OptionParse& p) {
       p.protocol_given = true;
       int protocol;
       if (!p.Word(kBindingProtocols, &protocol)) {
         p.exit_status = EX_USAGE;   // memcached exits so at once
         return p.Fail("Invalid value for binding protocol: " + std::string(p.value) +
                       "\n -- should be one of auto, binary, or ascii");
       }
       p.settings.binding_protocol = static_cast<BindingProtocol>(protocol);
       return true;
     },
     .setting = {"binding_protocol", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, BindingProtocolName(v.settings.binding_protocol));
                 }}},
    {.flag = 'I', .name = "max-item-size", .arg = Arg::kRequired, .value = "<num>",
     .help = "adjusts max item size\n(default: {default}, min: 1k, max: 1024m)",
     .help_default = [](const P& d) { return SizeText(d.item_size_max); },
     .apply = [](OptionParse& p) {
       // Bytes, or a count of k or m (either case), as memcached.
       std::string_view digits = p.value;
       uint64_t unit = 1;
       if (!digits.empty()) {
         const char last = digits.back();
         if (last == 'k' || last == 'K') unit = 1024;
         if (last == 'm' || last == 'M') unit = 1024 * 1024;
         if (unit != 1) digits.remove_suffix(1);
       }
       uint64_t count;
       if (!ParseWholeNumber(digits, 0, UINT64_MAX / (1024 * 1024), &count)) {
         return p.Fail("invalid item size " + Quoted(p.value));
       }
       p.settings.item_size_max = count * unit;   // limits checked once -m is known
       return true;
     },
     .setting = {"item_size_max", Unsigned<&P::item_size_max>}},
    {.flag = 'S', .name = "enable-sasl",
     .help = "turn on Sasl authentication (binary protocol, PLAIN;\n"
             "user:password lines in the file $MEMCACHED_SASL_PWDB names)",
     .apply = Set<&P::sasl_enabled, true>,
     .setting = {"auth_enabled_sasl", YesNo<&P::sasl_enabled>}},
    {.flag = 'F', .name = "disable-flush-all", .help = "disable flush_all command",
     .apply = Set<&P::flush_enabled, false>,
     .setting = {"flush_enabled", YesNo<&P::flush_enabled>}},
    {.flag = 'D', .arg = Arg::kRequired, .value = "<char>",
     .help = "use <char> as the delimiter between key prefixes and\n"
             "IDs, for per-prefix stats (stats detail dump); the\n"
             "default is \"{default}\" (colon). -D also turns the per-prefix\n"
             "stats on (else: the \"stats detail on\" command)",
     .help_default = [](const P& d) { return std::string(1, d.prefix_delimiter); },
     .apply = [](OptionParse& p) {
       // memcached: the first character is the delimiter, and -D turns the
       // per-prefix stats on.
       if (p.value.empty()) return p.Fail("No delimiter specified");
       p.settings.prefix_delimiter = p.value[0];
       p.settings.detail_enabled = true;
       return true;
     },
     .setting = {"stat_key_prefix", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, std::string_view(&v.prefix_delimiter, 1));
                 }}},
    {.flag = 'X', .name = "disable-dumping",
     .help = "disable stats cachedump and lru_crawler metadump",
     .apply = Set<&P::dump_enabled, false>,
     .setting = {"dump_enabled", YesNo<&P::dump_enabled>}},
    {.flag = 'W', .name = "disable-watch", .help = "disable watch commands (live logging)",
     .apply = Set<&P::watch_enabled, false>},
    {.flag = 'Y', .name = "auth-file", .arg = Arg::kRequired, .value = "<file>",
     .help = "enable ASCII protocol authentication. format:\nuser:pass\\nuser2:pass2\\n",
     .apply = [](OptionParse& p) { return Name(p, &p.settings.auth_file, "-Y auth file name"); },
     .setting = {"auth_enabled_ascii", [](const V& v, std::string_view n, W* w) {
                   const std::string& file = v.settings.auth_file;
                   w->Add(n, file.empty() ? std::string_view("no") : std::string_view(file));
                 }}},
    {.flag = 'e', .name = "memory-file", .arg = Arg::kRequired, .value = "<file>",
     .help = "warm restart: load the cache from this snapshot file at\n"
             "start, write it at every orderly stop (SIGTERM, SIGINT,\n"
             "SIGUSR1, shutdown) and every snapshot_interval",
     .apply = [](OptionParse& p) { return Name(p, &p.settings.memory_file, "-e snapshot file name"); },
     .setting = {"memory_file", TextOr<kNullPrinted, &P::memory_file>}},
    {.flag = 'Z', .name = "enable-ssl", .help = "enable TLS/SSL",
     .apply = [](OptionParse& p) {
#ifdef HERDLESS_TLS
       p.settings.tls.enabled = true;
       return true;
#else
       return p.Fail("This server is not built with TLS support.");
#endif
     },
     .setting = {"ssl_enabled", YesNo<&P::tls, &TlsSettings::enabled>}, .tls = true},
    {.flag = 'o', .name = "extended", .arg = Arg::kRequired,
     .help = "comma separated list of extended options",
     .apply = [](OptionParse& p) { return p.ApplySuboptions(p.value); }},
};

// The -o keys: memcached's idle_timeout, herdless's own, memcached's ssl_*.
constexpr OptionRow kSuboptions[] = {
    {.name = "idle_timeout",
     .help = "timeout for idle connections. (default: {default}, no timeout)",
     .help_default = Default<&P::idle_timeout>,
     .apply = [](OptionParse& p) {
       return p.Number(0, 1 << 30, &p.settings.idle_timeout, "seconds, 0 = no timeout");
     },
     .setting = {"idle_timeout", Signed<&P::idle_timeout>}},
    {.name = "sock_cookie_id",   // memcached 1.6.45
     .help = "attributes an ID to a socket for ip filtering/firewalls",
     .apply = [](OptionParse& p) {
       // As 1.6.45's (void)safe_strtoul: a value it cannot read leaves no mark.
       uint32_t id = 0;
       if (ParseUint32(p.value, &id)) p.settings.sock_cookie_id = id;
       return true;
     }},
    {.name = "stalled_client_timeout",
     .help = "close a client that reads none of the replies it is\n"
             "owed for this long once they reach the output bound\n"
             "(default: {default} s; 0 = never)",
     .help_default = Default<&P::stalled_client_timeout>,
     .apply = [](OptionParse& p) {
       return p.Number(0, 1 << 30, &p.settings.stalled_client_timeout, "seconds, 0 = never");
     },
     .setting = {"stalled_client_timeout", Signed<&P::stalled_client_timeout>}},
    {.name = "lease_timeout",
     .help = "seconds before an unfulfilled lease passes to the next\n"
             "reader (default: {default}; 0 = never, as memcached)",
     .help_default = [](const P& d) { return std::to_string(d.lease.lease_timeout_ms / 1000); },
     .apply = [](OptionParse& p) {
       uint32_t seconds;
       if (!p.Number(0u, 4000000u, &seconds, "seconds, 0 = never")) return false;
       p.settings.lease.lease_timeout_ms = seconds * 1000;   // fits: at most 4e9
       return true;
     },
     .setting = {"lease_timeout", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, uint64_t{v.settings.lease.lease_timeout_ms / 1000});
                 }}},
    {.name = "xfetch_delta_ms",
     .help = "recompute time assumed before one is measured (default: {default})",
     .help_default = Default<&P::lease, &LeaseSettings::default_delta_ms>,
     .apply = [](OptionParse& p) {
       // The measured delta is kept in 16 bits on the item.
       return p.Number(1u, 65535u, &p.settings.lease.default_delta_ms, "milliseconds, 1..65535");
     },
     .setting = {"xfetch_delta_ms", Unsigned<&P::lease, &LeaseSettings::default_delta_ms>}},
    {.name = "xfetch_beta",
     .help = "XFetch beta for lease-get and classic stale mode\n(default: {default}, off)",
     .help_default = Default<&P::xfetch_beta>,
     .apply = [](OptionParse& p) {
       return p.Number(0.0, 1000.0, &p.settings.xfetch_beta, "a number >= 0, 0 = off");
     },
     .setting = {"xfetch_beta", Fixed<2, &P::xfetch_beta>}},
    {.name = "stale_grace",
     .help = "seconds an expired item is kept as stale (default: {default}, off)",
     .help_default = Default<&P::stale_grace_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0u, 1u << 30, &p.settings.stale_grace_s, "seconds, 0 = off");
     },
     .setting = {"stale_grace", Unsigned<&P::stale_grace_s>}},
    {.name = "classic_stampede",
     .help = "off|stale|wait: stampede protection for plain get/gets\n(default: {default})",
     .help_default = [](const P& d) {
       return std::string(kStampedeModes[static_cast<int>(d.classic_stampede)]);
     },
     .apply = [](OptionParse& p) {
       int mode;
       if (!p.Choice(kStampedeModes, "off|stale|wait", "off, stale or wait", &mode)) return false;
       p.settings.classic_stampede = static_cast<ClassicStampedeMode>(mode);
       return true;
     },
     .setting = {"classic_stampede", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, kStampedeModes[static_cast<int>(v.settings.classic_stampede)]);
                 }}},
    {.name = "compat",   // herdless
     .help = "1.6.18|1.6.45: whose answers to give where memcached 1.6.18\n"
             "and 1.6.45 differ (docs/protocol.md) (default: {default})",
     .help_default = [](const P& d) {
       return std::string(kCompatVersions[static_cast<int>(d.compat)]);
     },
     .apply = [](OptionParse& p) {
       int version;
       if (!p.Choice(kCompatVersions, "1.6.18|1.6.45", "1.6.18 or 1.6.45", &version)) return false;
       p.settings.compat = static_cast<Compat>(version);
       return true;
     },
     .setting = {"compat", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, kCompatVersions[static_cast<int>(v.settings.compat)]);
                 }}},
    {.name = "wait_timeout_ms",
     .help = "longest a parked reader waits in wait mode\n"
             "(default: lease_timeout, or {default} when that is 0)",
     .help_default = [](const P&) { return std::to_string(kWaitTimeoutWithoutLeaseMs); },
     .apply = [](OptionParse& p) {
       p.wait_timeout_given = true;
       return p.Number(1u, UINT32_MAX, &p.settings.wait_timeout_ms, "milliseconds, > 0");
     },
     .setting = {"wait_timeout_ms", Unsigned<&P::wait_timeout_ms>}},
    {.name = "warm_peer",
     .help = "HOST:PORT[;HOST:PORT...] or /socket: on a miss that wins its lease,\n"
             "ask these memcached/herdless peers first (default: none)",
     .apply = [](OptionParse& p) {
       if (!p.has_value || p.value.empty()) return p.Missing("peer");
       std::vector<PeerAddress> peers;
       std::string error;
       if (!ParsePeerList(p.value, &peers, &error)) return p.Fail(error);
       p.settings.warm_peer = std::string(p.value);
       return true;
     },
     .setting = {"warm_peer", TextOr<kNull, &P::warm_peer>}},
    {.name = "warm_timeout_ms",
     .help = "longest a reader waits for the warm peers (default: {default})",
     .help_default = Default<&P::warm_timeout_ms>,
     .apply = [](OptionParse& p) {
       return p.Number(1u, 60000u, &p.settings.warm_timeout_ms, "milliseconds, 1..60000");
     },
     .setting = {"warm_timeout_ms", Unsigned<&P::warm_timeout_ms>}},
    {.name = "warm_holdoff",
     .help = "seconds a delete refuses warm fills of its key (default: {default})",
     .help_default = Default<&P::warm_holdoff_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0u, 3600u, &p.settings.warm_holdoff_s, "seconds, 0..3600");
     },
     .setting = {"warm_holdoff", Unsigned<&P::warm_holdoff_s>}},
    {.name = "warm_for",
     .help = "seconds after the start when warm-up ends (default: {default}, never)",
     .help_default = Default<&P::warm_for_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0u, 1u << 30, &p.settings.warm_for_s, "seconds, 0 = never");
     },
     .setting = {"warm_for", Unsigned<&P::warm_for_s>}},
    {.name = "warm_min_hit_ratio",
     .help = "warm-up ends when the peers' hit ratio over 10 s falls below\n"
             "this (default: {default}; 0 = never)",
     .help_default = Default<&P::warm_min_hit_ratio>,
     .apply = [](OptionParse& p) {
       return p.Number(0.0, 1.0, &p.settings.warm_min_hit_ratio, "a ratio 0..1, 0 = never");
     },
     .setting = {"warm_min_hit_ratio", Fixed<2, &P::warm_min_hit_ratio>}},
    {.name = "ring",
     .help = "a nutcracker YAML file: this node's pool, with -o ring_self\n"
             "(warm each moved key from its previous owner; default: none)",
     .apply = [](OptionParse& p) {
       if (!p.has_value || p.value.empty()) return p.Missing("file");
       p.settings.ring = std::string(p.value);
       return true;
     },
     .setting = {"ring", TextOr<kNull, &P::ring>}},
    {.name = "ring_self",
     .help = "this node in the -o ring file: host:port as listed, or its name",
     .apply = [](OptionParse& p) {
       if (!p.has_value || p.value.empty()) return p.Missing("host:port");
       p.settings.ring_self = std::string(p.value);
       return true;
     },
     .setting = {"ring_self", TextOr<kNull, &P::ring_self>}},
    {.name = "foreign_ttl",
     .help = "with -o ring: the longest a key of another node lives here\n"
             "(it came because its owner is away; default: {default})",
     .help_default = Default<&P::foreign_ttl_s>,
     .apply = [](OptionParse& p) {
       return p.Number(1u, 1u << 30, &p.settings.foreign_ttl_s, "seconds, > 0");
     },
     .setting = {"foreign_ttl", Unsigned<&P::foreign_ttl_s>}},
    {.name = "refresh_ahead",
     .help = "on|off: adaptive refresh-ahead for lease-get and classic\n"
             "stale/wait mode (default: {default}; meta clients ask with mg Yr)",
     .help_default = [](const P& d) { return std::string(kOffOn[d.refresh_ahead]); },
     .apply = [](OptionParse& p) {
       int on;
       if (!p.Choice(kOffOn, "on|off", "on or off", &on)) return false;
       p.settings.refresh_ahead = on == 1;
       return true;
     },
     .setting = {"refresh_ahead", YesNo<&P::refresh_ahead>}},
    {.name = "refresh_hot",
     .help = "reads per second from which a key is refreshed ahead\n(default: {default})",
     .help_default = Default<&P::lease, &LeaseSettings::refresh_hot_per_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0.001, 1e9, &p.settings.lease.refresh_hot_per_s, "reads per second, > 0");
     },
     .setting = {"refresh_hot", Fixed<2, &P::lease, &LeaseSettings::refresh_hot_per_s>}},
    {.name = "refresh_epsilon",
     .help = "chance a hot key is not read in its window (default: {default})",
     .help_default = Default<&P::lease, &LeaseSettings::refresh_epsilon>,
     .apply = [](OptionParse& p) {
       return p.Number(1e-9, 0.5, &p.settings.lease.refresh_epsilon, "a probability, 0 < e <= 0.5");
     },
     .setting = {"refresh_epsilon", Fixed<4, &P::lease, &LeaseSettings::refresh_epsilon>}},
    {.name = "refresh_max_fraction",
     .help = "largest refresh window, as a fraction of the TTL\n(default: {default})",
     .help_default = Default<&P::lease, &LeaseSettings::refresh_max_fraction>,
     .apply = [](OptionParse& p) {
       return p.Number(0.001, 1.0, &p.settings.lease.refresh_max_fraction,
                       "a fraction of the TTL, 0 < f <= 1");
     },
     .setting = {"refresh_max_fraction", Fixed<2, &P::lease, &LeaseSettings::refresh_max_fraction>}},
    {.name = "io",
     .help = "auto|uring|epoll: the connections' I/O path (default: {default};\n"
             "auto is io_uring where the kernel allows it; TLS is epoll)",
     .help_default = [](const P& d) { return std::string(kIoPaths[d.io_path]); },
     .apply = [](OptionParse& p) {
       return p.Choice(kIoPaths, "auto|uring|epoll", "auto, uring or epoll", &p.settings.io_path);
     },
     .setting = {"io", [](const V& v, std::string_view n, W* w) { w->Add(n, kIoPaths[v.settings.io_path]); }}},
    {.name = "exact_threads",
     .help = "run -t worker threads even when fewer CPUs are allowed",
     .apply = [](OptionParse& p) {
       if (p.has_value) return p.Fail("-o exact_threads takes no value");
       p.settings.exact_threads = true;
       return true;
     },
     .setting = {"exact_threads", YesNo<&P::exact_threads>}},
    {.name = "snapshot_interval",
     .help = "also write the -e snapshot every <num> seconds, in the\n"
             "background (default: {default}, only at an orderly stop)",
     .help_default = Default<&P::snapshot_interval_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0u, 1u << 30, &p.settings.snapshot_interval_s, "seconds, 0 = off");
     },
     .setting = {"snapshot_interval", Unsigned<&P::snapshot_interval_s>}},
    {.name = "metrics",
     .help = "serve Prometheus metrics at http://<host:port>/metrics\n"
             "(a port alone: on 127.0.0.1; default: off)",
     .apply = [](OptionParse& p) {
       std::string host;
       int port;
       if (!p.has_value) return p.Missing("host:port");
       if (!ParseMetricsAddress(p.value, &host, &port)) return p.Invalid("[host:]port, IPv6 in [ ]");
       const bool v6 = host.find(':') != std::string::npos;
       p.settings.metrics_address = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
       return true;
     },
     .setting = {"metrics", TextOr<kNull, &P::metrics_address>}},
    {.name = "restore_max_age",
     .help = "a -e snapshot older than <num> seconds comes back stale (the first\n"
             "reader recomputes), or not at all with classic_stampede=off\n"
             "(default: {default}, off)",
     .help_default = Default<&P::restore_max_age_s>,
     .apply = [](OptionParse& p) {
       return p.Number(0u, 1u << 30, &p.settings.restore_max_age_s, "seconds, 0 = off");
     },
     .setting = {"restore_max_age", Unsigned<&P::restore_max_age_s>}},
    // memcached's: herdless has no slab chunks, but shows the value (whose
    // unit -o compat chooses, options.cc CheckSlabChunkMax).
    {.name = "slab_chunk_max",
     .apply = [](OptionParse& p) {
       p.slab_chunk_max_given = true;
       p.slab_chunk_max_has_value = p.has_value;
       p.slab_chunk_max_value = std::string(p.value);
       return p.NoteIgnored();
     },
     .setting = {"slab_chunk_max", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, uint64_t{v.settings.slab_chunk_max});
                 }},
     .ignored = true},
    {.name = "ssl_chain_cert", .help = "certificate chain file in PEM format",
     .apply = [](OptionParse& p) { return TlsText(p, &TlsSettings::chain_cert); },
     .setting = {"ssl_chain_cert", TextOr<kNullPrinted, &P::tls, &TlsSettings::chain_cert>},
     .tls = true},
    {.name = "ssl_key", .help = "private key, if not part of the -ssl_chain_cert",
     .apply = [](OptionParse& p) { return TlsText(p, &TlsSettings::key); },
     .setting = {"ssl_key", TextOr<kNullPrinted, &P::tls, &TlsSettings::key>}, .tls = true},
    {.name = "ssl_keyformat",
     .help = "private key format (PEM or DER, or 1 or 2) (default: {default})",
     .help_default = [](const P& d) { return std::string(d.tls.keyformat == 2 ? "DER" : "PEM"); },
     .apply = [](OptionParse& p) {
       // OpenSSL's SSL_FILETYPE_PEM (1) and SSL_FILETYPE_ASN1 (2), by number
       // as memcached takes them, or by name.
       if (!p.has_value) return p.MissingSsl();
       int& format = p.settings.tls.keyformat;
       if (p.value == "PEM" || p.value == "pem") {
         format = 1;
       } else if (p.value == "DER" || p.value == "der" || p.value == "ASN1") {
         format = 2;
       } else if (!p.Int(1, 2, &format)) {
         return p.Fail("could not parse argument to ssl_keyformat");
       }
       return true;
     },
     .setting = {"ssl_keyformat", Signed<&P::tls, &TlsSettings::keyformat>}, .tls = true},
    {.name = "ssl_verify_mode",
     .help = "peer certificate verification mode, default is {default}(None).\n"
             "valid values are 0(None), 1(Request), 2(Require)\nor 3(Once)",
     .help_default = Default<&P::tls, &TlsSettings::verify_mode>,
     .apply = [](OptionParse& p) {
       if (!p.has_value) return p.MissingSsl();
       return p.Int(0, 3, &p.settings.tls.verify_mode) ||
              p.Fail("Invalid ssl_verify_mode. Use help to see valid options.");
     },
     // memcached prints the OpenSSL flags the mode stands for.
     .setting = {"ssl_verify_mode", [](const V& v, std::string_view n, W* w) {
                   w->AddSigned(n, SslVerifyFlags(v.settings.tls.verify_mode));
                 }},
     .tls = true},
    {.name = "ssl_ciphers", .help = "specify cipher list to be used",
     .apply = [](OptionParse& p) { return TlsText(p, &TlsSettings::ciphers); },
     .setting = {"ssl_ciphers", TextOr<kNull, &P::tls, &TlsSettings::ciphers>}, .tls = true},
    {.name = "ssl_ca_cert", .help = "PEM format file of acceptable client CA's",
     .apply = [](OptionParse& p) { return TlsText(p, &TlsSettings::ca_cert); },
     .setting = {"ssl_ca_cert", TextOr<kNull, &P::tls, &TlsSettings::ca_cert>}, .tls = true},
    {.name = "ssl_wbuf_size",
     .help = "size in kilobytes of per-connection SSL output buffer\n(default: {default})",
     .help_default = [](const P& d) { return std::to_string(d.tls.wbuf_size / 1024); },
     .apply = [](OptionParse& p) {
       if (!p.has_value) return p.MissingSsl();
       uint32_t kb;
       if (!p.U32(1, 1024, &kb)) return p.Fail("could not parse argument to ssl_wbuf_size");
       p.settings.tls.wbuf_size = kb * 1024;
       return true;
     },
     .setting = {"ssl_wbuf_size", Unsigned<&P::tls, &TlsSettings::wbuf_size>}, .tls = true},
    {.name = "ssl_session_cache",
     .help = "enable server-side SSL session cache, to support session\nresumption",
     .apply = [](OptionParse& p) {
       p.settings.tls.session_cache = true;
       return true;
     },
     .setting = {"ssl_session_cache", YesNo<&P::tls, &TlsSettings::session_cache>}, .tls = true},
    {.name = "ssl_kernel_tls", .help = "enable kernel TLS offload",
     .apply = [](OptionParse& p) {
       p.settings.tls.kernel_tls = true;
       return true;
     },
     .setting = {"ssl_kernel_tls", YesNo<&P::tls, &TlsSettings::kernel_tls>}, .tls = true},
    {.name = "ssl_min_version",
     .help = "minimum protocol version to accept (default: {default})\n"
             "valid values are 0(tlsv1.0), 1(tlsv1.1), 2(tlsv1.2), or 3(tlsv1.3).",
     .help_default = [](const P& d) { return std::string(TlsVersionName(d.tls.min_version)); },
     .apply = [](OptionParse& p) {
       // memcached takes 0..3; the names it prints are accepted too.
       if (!p.has_value) return p.MissingSsl();
       return p.Word(kTlsVersions, &p.settings.tls.min_version) ||
              p.Int(0, 3, &p.settings.tls.min_version) ||
              p.Fail("Invalid ssl_min_version. Use help to see valid options.");
     },
     .setting = {"ssl_min_version", [](const V& v, std::string_view n, W* w) {
                   w->Add(n, TlsVersionName(v.settings.tls.min_version));
                 }},
     .tls = true},
    {.name = "ssl_handshake_timeout",   // herdless
     .help = "seconds a TLS handshake may take before the connection\nis closed (default: {default})",
     .help_default = Default<&P::tls, &TlsSettings::handshake_timeout_s>,
     .apply = [](OptionParse& p) {
       if (!p.has_value) return p.MissingSsl();
       return p.Int(1, 3600, &p.settings.tls.handshake_timeout_s) || p.Invalid("seconds, 1..3600");
     },
     .setting = {"ssl_handshake_timeout", Signed<&P::tls, &TlsSettings::handshake_timeout_s>},
     .tls = true},
};

// memcached's -o keys that only tune memcached's slab allocator, LRU threads,
// hash table or logging. (lru_crawler, lru_maintainer, slab_reassign,
// maxconns_fast, slab_automove, their no_ forms and no_modern set the crawler's
// start and what `stats settings` shows: OptionParse::ApplySuboption.)
constexpr std::string_view kIgnoredSuboptions[] = {
    "no_hashexpand",
    "no_inline_ascii_resp", "inline_ascii_resp", "modern",
    "no_chunked_items", "drop_privileges", "no_drop_privileges",
};

}  // namespace

std::span<const OptionRow> FlagRows() {
  static const std::vector<OptionRow> rows = [] {
    std::vector<OptionRow> all(std::begin(kFlags), std::end(kFlags));
    for (const OptionRow& row : TuningFlagRows()) all.push_back(row);
    return all;
  }();
  return rows;
}
std::span<const OptionRow> SuboptionRows() {
  static const std::vector<OptionRow> rows = [] {
    std::vector<OptionRow> all(std::begin(kSuboptions), std::end(kSuboptions));
    for (const OptionRow& row : ExtstoreRows()) all.push_back(row);
    for (const OptionRow& row : TuningKeyRows()) all.push_back(row);
    return all;
  }();
  return rows;
}
std::span<const std::string_view> IgnoredSuboptions() { return kIgnoredSuboptions; }

}  // namespace herdless
