// memcached's tuning flags and -o keys for its slab allocator, LRU, crawler,
// slab mover, hash table, logger and NAPI ids (memcached.c's -f -n -L -N,
// hot_lru_pct .. temporary_ttl, lru_crawler_sleep, hashpower, ...), as rows of
// the option table: the same names, readings (atoi, atof, safe_strtoul) and
// error messages, so that a value memcached refuses at start is refused here
// too. herdless has no slab allocator, segmented or temporary LRU, slab mover,
// memcached hash table or log buffers: those values start what `stats
// settings` shows and `lru tune|temp_ttl`, `slabs automove` change, or change
// nothing (docs/operations.md); the crawler's sleep and item count are
// herdless's too.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/option_table.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

bool Missing(OptionParse& p) { return p.Fail("Missing " + std::string(p.name) + " argument"); }

bool Percent(OptionParse& p, uint32_t* out) {
  if (!p.has_value) return Missing(p);
  const int pct = std::atoi(std::string(p.value).c_str());
  if (pct < 1 || pct >= 80) return p.Fail(std::string(p.name) + " must be > 1 and < 80");
  *out = static_cast<uint32_t>(pct);
  return p.NoteIgnored();
}

bool Factor(OptionParse& p, double* out) {
  if (!p.has_value) return Missing(p);
  *out = std::atof(std::string(p.value).c_str());
  if (*out <= 0) return p.Fail(std::string(p.name) + " must be > 0");
  return p.NoteIgnored();
}

// memcached's "Missing numeric argument for <name>" keys.
bool MissingNumeric(OptionParse& p) {
  return p.Fail("Missing numeric argument for " + std::string(p.name));
}

// A value safe_strtoul reads, else memcached's "could not parse argument to <name>";
// then ignored (memcached's log buffer sizes, its read buffer limit).
bool ParsedAndIgnored(OptionParse& p) {
  uint32_t value = 0;
  if (!p.has_value) return Missing(p);
  if (!ParseUint32(p.value, &value)) return p.Fail("could not parse argument to " + std::string(p.name));
  return p.NoteIgnored();
}

std::string WindowRange(const ProtocolSettings& s) {
  return s.latest() ? "slab_automove_window must be > 2 and < 1800" : "slab_automove_window must be > 2";
}

constexpr OptionRow kTuningFlags[] = {
    {.flag = 'f', .name = "slab-growth-factor", .arg = Arg::kRequired, .value = "<num>",
     .apply = [](OptionParse& p) {
       if (std::atof(std::string(p.value).c_str()) <= 1.0) return p.Fail("Factor must be greater than 1");
       return p.NoteIgnored();
     },
     .ignored = true},
    {.flag = 'n', .name = "slab-min-size", .arg = Arg::kRequired, .value = "<bytes>",
     .apply = [](OptionParse& p) {
       p.slab_min_size = std::atoi(std::string(p.value).c_str());
       if (p.slab_min_size == 0) return p.Fail("Chunk size must be greater than 0");
       return p.NoteIgnored();
     },
     .ignored = true},
    {.flag = 'L', .name = "enable-largepages",
     .apply = [](OptionParse& p) { return p.NoteIgnored(); }, .ignored = true},
    {.flag = 'N', .name = "napi-ids", .arg = Arg::kRequired, .value = "<num>",
     .apply = [](OptionParse& p) {
       p.settings.num_napi_ids = std::atoi(std::string(p.value).c_str());
       if (p.settings.num_napi_ids <= 0) return p.Fail("Maximum number of NAPI IDs must be greater than 0");
       return p.NoteIgnored();
     },
     .ignored = true},
};

constexpr OptionRow kTuningKeys[] = {
    {.name = "hot_lru_pct",
     .apply = [](OptionParse& p) { return Percent(p, &p.settings.machinery.hot_lru_pct); },
     .ignored = true},
    {.name = "warm_lru_pct",
     .apply = [](OptionParse& p) { return Percent(p, &p.settings.machinery.warm_lru_pct); },
     .ignored = true},
    {.name = "hot_max_factor",
     .apply = [](OptionParse& p) { return Factor(p, &p.settings.machinery.hot_max_factor); },
     .ignored = true},
    {.name = "warm_max_factor",
     .apply = [](OptionParse& p) { return Factor(p, &p.settings.machinery.warm_max_factor); },
     .ignored = true},
    {.name = "temporary_ttl",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return Missing(p);
       p.settings.machinery.temp_lru = true;
       p.settings.machinery.temporary_ttl = std::atoi(std::string(p.value).c_str());
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "track_sizes",
     .help = "enable dynamic reports for 'stats sizes' command.",
     .apply = [](OptionParse& p) {
       if (p.has_value) return p.Fail("-o track_sizes takes no value");
       p.settings.track_sizes = true;
       return true;
     }},
    {.name = "lru_crawler_sleep",
     .help = "microseconds to sleep between items\ndefault is 100.",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return p.Fail("Missing lru_crawler_sleep value");
       const int us = std::atoi(std::string(p.value).c_str());
       if (us > 1000000 || us < 0) return p.Fail("LRU crawler sleep must be between 0 and 1 second");
       p.settings.machinery.lru_crawler_sleep = static_cast<uint32_t>(us);
       return true;
     }},
    {.name = "lru_crawler_tocrawl",
     .help = "max items to crawl per slab per run\ndefault is 0 (unlimited)",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return p.Fail("Missing lru_crawler_tocrawl value");
       if (!ParseUint32(p.value, &p.settings.machinery.lru_crawler_tocrawl)) {
         return p.Fail("lru_crawler_tocrawl takes a numeric 32bit value");
       }
       return true;
     }},
    {.name = "slab_automove_ratio",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return Missing(p);
       const double ratio = std::atof(std::string(p.value).c_str());
       if (ratio <= 0 || ratio > 1) return p.Fail("slab_automove_ratio must be > 0 and < 1");
       p.settings.machinery.slab_automove_ratio = ratio;
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "slab_automove_window",   // 1.6.45's upper bound: once -o compat is known
     .apply = [](OptionParse& p) {
       if (!p.has_value) return Missing(p);
       const int window = std::atoi(std::string(p.value).c_str());
       if (window < 3) return p.Fail(WindowRange(p.settings));
       p.settings.machinery.slab_automove_window = window;
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "hashpower",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return MissingNumeric(p);
       const int power = std::atoi(std::string(p.value).c_str());
       if (power < 12) return p.Fail("Initial hashtable multiplier of " + std::to_string(power) + " is too low");
       if (power > 32) {
         return p.Fail("Initial hashtable multiplier of " + std::to_string(power) +
                       " is too high\nChoose a value based on \"STAT hash_power_level\" from a running instance");
       }
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "tail_repair_time",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return MissingNumeric(p);
       if (std::atoi(std::string(p.value).c_str()) < 10) {
         return p.Fail("Cannot set tail_repair_time to less than 10 seconds");
       }
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "hash_algorithm",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return Missing(p);
       if (p.value != "jenkins" && p.value != "murmur3" && p.value != "xxh3") {
         return p.Fail("Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
       }
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "watcher_logbuf_size", .apply = ParsedAndIgnored, .ignored = true},
    {.name = "worker_logbuf_size", .apply = ParsedAndIgnored, .ignored = true},
    {.name = "read_buf_mem_limit", .apply = ParsedAndIgnored, .ignored = true},
    {.name = "resp_obj_mem_limit",   // memcached warns and goes on
     .apply = [](OptionParse& p) {
       p.options.warnings.push_back("DEPRECATED: resp_obj_mem_limit no longer used. See read_buf_mem_limit,");
       return p.NoteIgnored();
     },
     .ignored = true},
    {.name = "slab_sizes",   // checked once -n and slab_chunk_max are known (CheckSlabSizes)
     .apply = [](OptionParse& p) {
       p.slab_sizes_given = true;
       p.slab_sizes = std::string(p.value);
       return p.NoteIgnored();
     },
     .ignored = true},
};

// memcached's _parse_slab_sizes (-o slab_sizes=<bytes>-<bytes>-...): each size
// from -n to slab_chunk_max, at least 8 bytes above the one before, fewer than
// 63 of them (a size that does not read is reported as 0, as memcached's
// message has it).
bool CheckSlabSizes(OptionParse* p) {
  if (!p->slab_sizes_given) return true;
  // memcached exits without a word (or crashes, given no value); herdless says why.
  if (p->slab_sizes.empty()) return p->Fail("Missing slab_sizes argument");
  constexpr uint32_t kChunkAlignBytes = 8;
  constexpr int kMostClasses = 63;   // MAX_NUMBER_OF_SLAB_CLASSES - 1
  std::string_view rest = p->slab_sizes;
  uint32_t size = 0, last = 0;
  int classes = 0;
  while (!rest.empty()) {
    const size_t dash = rest.find('-');
    const std::string_view token = rest.substr(0, dash);
    rest = dash == std::string_view::npos ? std::string_view() : rest.substr(dash + 1);
    if (token.empty()) continue;   // strtok: runs of '-' are one separator
    const bool read = ParseUint32(token, &size);
    if (!read) size = 0;   // safe_strtoul zeroes it first
    const std::string n = std::to_string(size);
    if (!read || size < static_cast<uint32_t>(p->slab_min_size) || size > p->settings.slab_chunk_max) {
      return p->Fail("slab size " + n + " is out of valid range");
    }
    if (last >= size) return p->Fail("slab size " + n + " cannot be lower than or equal to a previous class size");
    if (size <= last + kChunkAlignBytes) {
      return p->Fail("slab size " + n + " must be at least 8 bytes larger than previous class");
    }
    last = size;
    if (++classes >= kMostClasses) return p->Fail("too many slab classes specified");
  }
  return true;
}

}  // namespace

std::span<const OptionRow> TuningFlagRows() { return kTuningFlags; }
std::span<const OptionRow> TuningKeyRows() { return kTuningKeys; }

// memcached's checks once every option is known, in its order.
bool CheckNapiIds(OptionParse* p) {
  const ProtocolSettings& s = p->settings;
  if (s.num_napi_ids <= s.num_threads) return true;
  return p->Fail("Number of napi_ids(" + std::to_string(s.num_napi_ids) +
                 ") cannot be greater than number of threads(" + std::to_string(s.num_threads) + ")");
}

bool CheckTuningOptions(OptionParse* p) {
  if (!CheckSlabSizes(p)) return false;
  const MachinerySettings& m = p->settings.machinery;
  if (m.hot_lru_pct + m.warm_lru_pct > 80) {
    return p->Fail("hot_lru_pct + warm_lru_pct cannot be more than 80% combined");
  }
  if (m.temp_lru && !m.lru_maintainer) return p->Fail("temporary_ttl requires lru_maintainer to be enabled");
  if (p->settings.latest() && m.slab_automove_window > 1800) {
    p->exit_status = 1;   // memcached refuses it as it reads the flag
    return p->Fail(WindowRange(p->settings));
  }
  return true;
}

}  // namespace herdless
