// The option table: each of herdless's flags and -o keys written once, as one
// row: its names, how -h shows it, how its value is applied, and the `stats
// settings` line that shows it. ParseOptions and UsageText (options.cc) walk
// the rows, docs/herdless.1's test reads -h, and WriteSettingsStats
// (settings_stats.cc) prints the rows' lines. A new flag or -o key is one row
// in option_table.cc (and its entry in docs/herdless.1).
#ifndef HERDLESS_DAEMON_OPTION_TABLE_H_
#define HERDLESS_DAEMON_OPTION_TABLE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/options.h"
#include "protocol/server_info.h"
#include "protocol/stat_writer.h"

namespace herdless {

// What `stats settings` reads: the options and what has changed since at run
// time (cache_memlimit, verbosity, stats detail on|off, stats sizes_enable,
// lru_crawler, slabs automove).
struct SettingsView {
  const ProtocolSettings& settings;
  uint64_t memory_limit;
  bool tracking_sizes;
  int verbosity;
  char prefix_delimiter;
  bool detail_enabled;
  const OperatorSettings& operators;
};

// One `stats settings` line: its name, and either how its value is written or
// a value that never changes (memcached's, for machinery herdless lacks).
struct SettingLine {
  const char* name = nullptr;   // nullptr: none
  void (*write)(const SettingsView& view, std::string_view name, StatWriter* w) = nullptr;
  const char* fixed = nullptr;
};

// One option being applied, as a row's apply function sees it: the value
// given and the options being built, with helpers that parse the value and
// fail with memcached's (or herdless's) message. The parser (options.cc)
// implements it.
class OptionParse {
 public:
  explicit OptionParse(Options* options) : options(*options), settings(options->protocol) {}

  Options& options;
  ProtocolSettings& settings;   // options.protocol
  char flag = 0;                // the flag being applied; 0 for an -o key
  std::string_view name;        // the -o key being applied
  std::string_view value;       // "" when none was given
  bool has_value = false;
  std::string error;            // set by Fail
  bool getopt_error = false;    // set by FailGetopt
  int exit_status = 1;          // of a failure: 1 while flags are read, EX_USAGE in the checks after

  // Kept for the checks after the last option (options.cc).
  std::vector<std::string> listen_entries;   // every -l entry, in order, without repeats
  bool tcp_port_given = false;               // -p
  bool udp_port_given = false;               // -U
  bool protocol_given = false;               // -B
  bool wait_timeout_given = false;           // -o wait_timeout_ms
  bool slab_chunk_max_given = false;         // -o slab_chunk_max, with or without a value
  bool slab_chunk_max_has_value = false;
  std::string slab_chunk_max_value;
  bool slab_chunk_max_is_page = false;       // -o no_modern: one page unless given
  int slab_min_size = 48;                    // -n, the least -o slab_sizes may give
  bool slab_sizes_given = false;             // -o slab_sizes, with or without a value
  std::string slab_sizes;
  bool ext_page_size_after_path = false;     // 1.6.18 refuses it, 1.6.45 takes it

  bool Fail(std::string message);
  bool FailGetopt(std::string message);   // getopt's own words: an unknown flag, a missing value
  // The value as a whole decimal number in [min, max]: no sign, spaces or
  // trailing bytes.
  bool Int(int min, int max, int* out) const;
  bool Unsigned(uint64_t min, uint64_t max, uint64_t* out) const;
  bool U32(uint32_t min, uint32_t max, uint32_t* out) const;
  // A finite number in [min, max], as strtod reads it.
  bool Double(double min, double max, double* out) const;
  // The value's index among `words`.
  bool Word(std::span<const std::string_view> words, int* index) const;

  // herdless's -o keys: "Missing <what> argument for <key>" without a value,
  // "invalid value "<value>" for -o <key> (<range>)" for a bad one.
  bool Missing(std::string_view what);
  bool Invalid(std::string_view range);
  // A number of herdless's -o keys, with those messages (what = "numeric").
  bool Number(int min, int max, int* out, std::string_view range);
  bool Number(uint32_t min, uint32_t max, uint32_t* out, std::string_view range);
  bool Number(double min, double max, double* out, std::string_view range);
  // One of `words` for a herdless -o key (its index in *out): Missing(what)
  // without a value, Invalid(range) for another word.
  bool Choice(std::span<const std::string_view> words, std::string_view what,
              std::string_view range, int* out);
  // memcached's ssl_* keys: "Missing <key> argument" without a value.
  bool MissingSsl();
  // memcached's flags and -o keys for machinery herdless does not have:
  // noted in options.ignored (main logs them at -v).
  bool NoteIgnored();

  // -o: applies each key of the comma-separated list.
  bool ApplySuboptions(std::string_view list);

 private:
  bool ApplySuboption();   // the key in name/value/has_value
};

// How a flag takes its value (getopt_long's); -o keys check theirs themselves.
enum class Arg : uint8_t { kNone, kRequired, kOptional };

struct OptionRow {
  char flag = 0;                // the short flag; 0 for an -o key
  const char* name = nullptr;   // the long flag (without "--") or the -o key
  const char* alias = nullptr;  // another long name for the same flag
  Arg arg = Arg::kNone;
  const char* value = nullptr;  // how -h names the value ("<num>"), if it does
  // The -h text: lines split by '\n', the first beside the option and the
  // others under it; "{default}" stands for help_default of the defaults.
  // A line "column\ttext" puts its own column beside the text (-vv).
  const char* help = nullptr;
  const char* tls_help = nullptr;   // more lines, in a TLS build only
  std::string (*help_default)(const ProtocolSettings& defaults) = nullptr;
  bool (*apply)(OptionParse& parse) = nullptr;
  SettingLine setting = {};     // its `stats settings` line, if it has one
  // Only with TLS: -h shows it and -o knows it only in a TLS build, `stats
  // settings` prints it only when TLS is available. (-Z is a flag in every
  // build, to say that the build has no TLS.)
  bool tls = false;
  bool ignored = false;         // memcached's, accepted and ignored: listed last in -h
  // Parsed and checked but not listed in -h: memcached's test suite reads -h
  // to tell whether a server has the feature (ext_path: extstore).
  bool unlisted = false;
};

// The flags and the -o keys, in the order -h lists them.
std::span<const OptionRow> FlagRows();
std::span<const OptionRow> SuboptionRows();
// memcached's -o keys for machinery herdless does not have: accepted, noted
// at -v, and changing nothing.
std::span<const std::string_view> IgnoredSuboptions();
// memcached's extstore -o keys (extstore_options.cc); SuboptionRows ends with them.
std::span<const OptionRow> ExtstoreRows();
// memcached's extstore checks once every option is known (with ext_path
// only), in the three places memcached makes them: the refusals it makes as
// it reads the -o list, storage_check_config's, and extstore_init's (after
// every other check of the options).
bool CheckExtstoreAsRead(OptionParse* p);
bool CheckExtstoreConfig(OptionParse* p);
bool CheckExtstoreInit(OptionParse* p);
// memcached's tuning flags (-f -n -L -N; FlagRows ends with them) and -o keys
// (hot_lru_pct .. temporary_ttl, lru_crawler_sleep, hashpower, ...), in
// tuning_options.cc, and its checks of them once every option is known.
std::span<const OptionRow> TuningFlagRows();
std::span<const OptionRow> TuningKeyRows();
bool CheckTuningOptions(OptionParse* p);
// -N against -t: memcached's first check after the last option.
bool CheckNapiIds(OptionParse* p);

// -o wait_timeout_ms follows lease_timeout unless given; when leases never
// time out, a parked reader still waits no longer than the default lease.
inline constexpr uint32_t kWaitTimeoutWithoutLeaseMs = LeaseSettings{}.lease_timeout_ms;

// "s", as messages quote what was given.
std::string Quoted(std::string_view s);
// A whole decimal number in [min, max]: no sign, spaces or trailing bytes.
bool ParseWholeNumber(std::string_view s, uint64_t min, uint64_t max, uint64_t* out);
bool ParseWholeNumber(std::string_view s, int min, int max, int* out);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_OPTION_TABLE_H_
