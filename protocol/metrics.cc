#include "protocol/metrics.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "protocol/numbers.h"
#include "protocol/stat_writer.h"
#include "protocol/stats_groups.h"
#include "protocol/thread_stats.h"
#include "storage/store_stats.h"

namespace herdless {

namespace {

using StatMap = std::unordered_map<std::string, std::string>;
// `stats items` and `stats slabs` by class: "items:3:number" is [3]["number"].
using ClassMap = std::map<int, StatMap>;

enum class Kind : uint8_t { kCounter, kGauge };

// One `stats` field as one memcached_exporter series.
struct StatMetric {
  const char* stat;
  const char* metric;
  Kind kind;
  const char* help;
};

constexpr Kind kC = Kind::kCounter;
constexpr Kind kG = Kind::kGauge;

// `stats` (and the totals line of `stats slabs`), in memcached_exporter's names
// (uptime typed gauge: promtool wants a counter's name to end in _total).
constexpr StatMetric kGeneral[] = {
    {"uptime", "memcached_uptime_seconds", kG, "Seconds since the server started."},
    {"time", "memcached_time_seconds", kG, "The server's Unix time."},
    {"rusage_user", "memcached_process_user_cpu_seconds_total", kC, "User CPU time of the process."},
    {"rusage_system", "memcached_process_system_cpu_seconds_total", kC,
     "System CPU time of the process."},
    {"bytes_read", "memcached_read_bytes_total", kC, "Bytes read from clients."},
    {"bytes_written", "memcached_written_bytes_total", kC, "Bytes sent to clients."},
    {"curr_connections", "memcached_current_connections", kG, "Open connections."},
    {"total_connections", "memcached_connections_total", kC, "Connections opened since start."},
    {"rejected_connections", "memcached_connections_rejected_total", kC,
     "Connections refused at the -c limit."},
    {"conn_yields", "memcached_connections_yielded_total", kC,
     "Times a connection yielded at the -R limit."},
    {"listen_disabled_num", "memcached_connections_listener_disabled_total", kC,
     "Times the listener was paused at the connection limit."},
    {"bytes", "memcached_current_bytes", kG, "Bytes used by the stored items."},
    {"limit_maxbytes", "memcached_limit_bytes", kG, "Bytes the server may use for items (-m)."},
    {"curr_items", "memcached_current_items", kG, "Items stored now."},
    {"total_items", "memcached_items_total", kC, "Items stored since start."},
    {"evictions", "memcached_items_evicted_total", kC,
     "Unexpired items removed to make room for new ones."},
    {"reclaimed", "memcached_items_reclaimed_total", kC,
     "Stores that reused the memory of an expired item."},
    {"store_too_large", "memcached_item_too_large_total", kC,
     "Stores refused for exceeding the item size limit (-I)."},
    {"store_no_memory", "memcached_item_no_memory_total", kC, "Stores refused for want of memory."},
    {"lru_crawler_starts", "memcached_lru_crawler_starts_total", kC, "Crawls started."},
    {"direct_reclaims", "memcached_direct_reclaims_total", kC,
     "Times a worker reclaimed or evicted items itself."},
    {"crawler_items_checked", "memcached_lru_crawler_items_checked_total", kC,
     "Items the expiry crawl looked at."},
    {"crawler_reclaimed", "memcached_lru_crawler_reclaimed_total", kC,
     "Expired items the expiry crawl removed."},
    {"moves_to_cold", "memcached_lru_crawler_moves_to_cold_total", kC,
     "Items moved to the COLD LRU (0: herdless has no segmented LRU)."},
    {"moves_to_warm", "memcached_lru_crawler_moves_to_warm_total", kC,
     "Items moved to the WARM LRU (0: herdless has no segmented LRU)."},
    {"moves_within_lru", "memcached_lru_crawler_moves_within_lru_total", kC,
     "Items bumped within an LRU (0: herdless has no segmented LRU)."},
    {"total_malloced", "memcached_malloced_bytes", kG, "Bytes of memory the item pool holds."},
    {"accepting_conns", "memcached_accepting_connections", kG,
     "Whether the server accepts new connections."},
};

// `stats settings`: maxconns always; the crawler's lines while it is enabled,
// as memcached_exporter reads them. yes/no values are 1/0.
constexpr StatMetric kSettingsAlways[] = {
    {"maxconns", "memcached_max_connections", kG, "Most clients allowed (-c)."},
};
constexpr StatMetric kCrawlerSettings[] = {
    {"lru_crawler", "memcached_lru_crawler_enabled", kG, "Whether the LRU crawler is enabled."},
    {"lru_crawler_sleep", "memcached_lru_crawler_sleep", kG,
     "Microseconds the crawler sleeps per 1000 items checked."},
    {"lru_crawler_tocrawl", "memcached_lru_crawler_to_crawl", kG,
     "Most items per class a crawl checks (0 = all)."},
    {"lru_maintainer_thread", "memcached_lru_crawler_maintainer_thread", kG,
     "Whether an LRU maintainer thread runs."},
    {"hot_lru_pct", "memcached_lru_crawler_hot_percent", kG, "Share of memory for the HOT LRU."},
    {"warm_lru_pct", "memcached_lru_crawler_warm_percent", kG, "Share of memory for the WARM LRU."},
    {"hot_max_factor", "memcached_lru_crawler_hot_max_factor", kG, "HOT LRU age factor."},
    {"warm_max_factor", "memcached_lru_crawler_warm_max_factor", kG, "WARM LRU age factor."},
};

// `stats items`, per class. memcached_exporter types the three moves_* and
// evicted_time as counters without a _total suffix, which promtool rejects:
// the names stay (dashboards use them), typed gauge (always 0 here but evicted_time).
constexpr StatMetric kItems[] = {
    {"number", "memcached_slab_current_items", kG, "Items stored in this class."},
    {"age", "memcached_slab_items_age_seconds", kG, "Age of the oldest item in this class."},
    {"crawler_reclaimed", "memcached_slab_items_crawler_reclaimed_total", kC,
     "Items of this class the crawl removed."},
    {"evicted", "memcached_slab_items_evicted_total", kC, "Items of this class evicted unexpired."},
    {"evicted_nonzero", "memcached_slab_items_evicted_nonzero_total", kC,
     "Items of this class with a TTL evicted unexpired."},
    {"evicted_time", "memcached_slab_items_evicted_time_seconds", kG,
     "Seconds since the last access of the last evicted item of this class."},
    {"evicted_unfetched", "memcached_slab_items_evicted_unfetched_total", kC,
     "Items of this class evicted never read."},
    {"expired_unfetched", "memcached_slab_items_expired_unfetched_total", kC,
     "Items of this class reclaimed expired never read."},
    {"outofmemory", "memcached_slab_items_outofmemory_total", kC,
     "Stores of this class refused for want of memory."},
    {"reclaimed", "memcached_slab_items_reclaimed_total", kC,
     "Expired items of this class whose memory was reused."},
    {"tailrepairs", "memcached_slab_items_tailrepairs_total", kC, "LRU tail repairs (0 here)."},
    {"moves_to_cold", "memcached_slab_items_moves_to_cold", kG, "Moves to COLD (0 here)."},
    {"moves_to_warm", "memcached_slab_items_moves_to_warm", kG, "Moves to WARM (0 here)."},
    {"moves_within_lru", "memcached_slab_items_moves_within_lru", kG, "Moves within an LRU (0 here)."},
    {"number_hot", "memcached_slab_hot_items", kG, "Items in the HOT LRU (0 here)."},
    {"number_warm", "memcached_slab_warm_items", kG, "Items in the WARM LRU (0 here)."},
    {"number_cold", "memcached_slab_cold_items", kG, "Items in the COLD LRU (all of the class)."},
    {"number_temp", "memcached_slab_temporary_items", kG, "Items in the TEMP LRU."},
    {"age_hot", "memcached_slab_hot_age_seconds", kG, "Age of the oldest HOT item."},
    {"age_warm", "memcached_slab_warm_age_seconds", kG, "Age of the oldest WARM item."},
    {"mem_requested", "memcached_slab_mem_requested_bytes", kG,
     "Bytes the items of this class take, as memcached counts them."},
};

// `stats slabs`, per class.
constexpr StatMetric kSlabs[] = {
    {"chunk_size", "memcached_slab_chunk_size_bytes", kG, "Chunk size of this class."},
    {"chunks_per_page", "memcached_slab_chunks_per_page", kG, "Chunks per page of this class."},
    {"total_pages", "memcached_slab_current_pages", kG, "Pages of this class."},
    {"total_chunks", "memcached_slab_current_chunks", kG, "Chunks of this class."},
    {"used_chunks", "memcached_slab_chunks_used", kG, "Chunks holding an item."},
    {"free_chunks", "memcached_slab_chunks_free", kG, "Chunks free."},
    {"free_chunks_end", "memcached_slab_chunks_free_end", kG, "Free chunks at the end of the last page."},
};

// memcached_commands_total's commands with hits and misses.
constexpr std::string_view kHitMissCommands[] = {"get", "delete", "incr", "decr", "cas", "touch"};

// The text exposition format: a family's HELP and TYPE lines, then its samples.
class Exposition {
 public:
  explicit Exposition(std::string* out) : out_(*out) {}

  void Family(std::string_view name, Kind kind, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(kind == Kind::kCounter ? " counter\n" : " gauge\n");
  }
  // `labels` is "" or `a="x",b="y"`; `value` a number as `stats` prints it.
  void Sample(std::string_view name, std::string_view labels, std::string_view value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(value).append("\n");
  }
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    char buf[kMaxUint64Digits];
    Sample(name, labels, std::string_view(buf, FormatUint64(value, buf) - buf));
  }

 private:
  std::string& out_;
};

const std::string* Find(const StatMap& stats, std::string_view name) {
  auto it = stats.find(std::string(name));
  return it == stats.end() ? nullptr : &it->second;
}

// A `stats` value as a sample value: yes/no as 1/0, numbers as printed.
std::string_view SampleValue(const std::string& value) {
  if (value == "yes") return "1";
  if (value == "no") return "0";
  return value;
}

uint64_t Number(const StatMap& stats, std::string_view name) {
  const std::string* v = Find(stats, name);
  return v == nullptr ? 0 : std::strtoull(v->c_str(), nullptr, 10);
}

bool HasAll(const StatMap& stats, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (Find(stats, name) == nullptr) return false;
  }
  return true;
}

StatPairs Collect(ItemStore* store, ServerInfo* server, std::string_view group) {
  StatPairs pairs;
  StatWriter w(&pairs);
  WriteStatsGroup(store, server, group, &w);
  return pairs;
}

void Merge(const StatPairs& pairs, StatMap* into) {
  for (const auto& [name, value] : pairs) into->emplace(name, value);
}

// "<prefix><class>:<field>" pairs into *classes; the others into *rest.
void SplitClasses(const StatPairs& pairs, std::string_view prefix, ClassMap* classes, StatMap* rest) {
  for (const auto& [name, value] : pairs) {
    std::string_view n(name);
    const size_t colon = n.find(':', prefix.size());
    if (n.substr(0, prefix.size()) != prefix || colon == std::string_view::npos) {
      if (rest != nullptr) rest->emplace(name, value);
      continue;
    }
    const int cls = std::atoi(std::string(n.substr(prefix.size(), colon - prefix.size())).c_str());
    (*classes)[cls].emplace(std::string(n.substr(colon + 1)), value);
  }
}

// One series per row found in `stats`.
template <size_t N>
void WriteTable(const StatMetric (&rows)[N], const StatMap& stats, Exposition* ex) {
  for (const StatMetric& row : rows) {
    const std::string* v = Find(stats, row.stat);
    if (v == nullptr) continue;
    ex->Family(row.metric, row.kind, row.help);
    ex->Sample(row.metric, "", SampleValue(*v));
  }
}

std::string SlabLabel(int cls) { return "slab=\"" + std::to_string(cls) + "\""; }

// One family per row, a sample per class that has the field.
template <size_t N>
void WriteClassTable(const StatMetric (&rows)[N], const ClassMap& classes, Exposition* ex) {
  for (const StatMetric& row : rows) {
    bool started = false;
    for (const auto& [cls, stats] : classes) {
      const std::string* v = Find(stats, row.stat);
      if (v == nullptr) continue;
      if (!started) ex->Family(row.metric, row.kind, row.help);
      started = true;
      ex->Sample(row.metric, SlabLabel(cls), SampleValue(*v));
    }
  }
}

std::string CommandLabels(std::string_view command, std::string_view status) {
  return "command=\"" + std::string(command) + "\",status=\"" + std::string(status) + "\"";
}

// memcached_commands_total{command,status}, as memcached_exporter derives it:
// set hits are cmd_set less the cas commands memcached counts in it too.
void WriteCommands(const StatMap& s, Exposition* ex) {
  constexpr char kName[] = "memcached_commands_total";
  ex->Family(kName, kC, "Commands by command and status.");
  for (std::string_view op : kHitMissCommands) {
    const std::string hits = std::string(op) + "_hits";
    const std::string misses = std::string(op) + "_misses";
    if (const std::string* v = Find(s, hits)) ex->Sample(kName, CommandLabels(op, "hit"), *v);
    if (const std::string* v = Find(s, misses)) ex->Sample(kName, CommandLabels(op, "miss"), *v);
  }
  if (const std::string* v = Find(s, "cas_badval")) ex->Sample(kName, CommandLabels("cas", "badval"), *v);
  if (const std::string* v = Find(s, "cmd_flush")) ex->Sample(kName, CommandLabels("flush", "hit"), *v);
  if (HasAll(s, {"cmd_set", "cas_misses", "cas_hits", "cas_badval"})) {
    const uint64_t cas = Number(s, "cas_misses") + Number(s, "cas_hits") + Number(s, "cas_badval");
    const uint64_t set = Number(s, "cmd_set");
    ex->Sample(kName, CommandLabels("set", "hit"), set >= cas ? set - cas : 0);
  }
}

// memcached_slab_commands_total{slab,command,status}, from `stats slabs`.
void WriteSlabCommands(const ClassMap& slabs, Exposition* ex) {
  constexpr char kName[] = "memcached_slab_commands_total";
  if (slabs.empty()) return;
  ex->Family(kName, kC, "Commands on this class's items by command and status.");
  for (const auto& [cls, s] : slabs) {
    const std::string slab = SlabLabel(cls) + ",";
    for (std::string_view op : kHitMissCommands) {
      if (const std::string* v = Find(s, std::string(op) + "_hits")) {
        ex->Sample(kName, slab + CommandLabels(op, "hit"), *v);
      }
    }
    if (const std::string* v = Find(s, "cas_badval")) ex->Sample(kName, slab + CommandLabels("cas", "badval"), *v);
    if (HasAll(s, {"cmd_set", "cas_hits", "cas_badval"})) {
      const uint64_t cas = Number(s, "cas_hits") + Number(s, "cas_badval");
      const uint64_t set = Number(s, "cmd_set");
      ex->Sample(kName, slab + CommandLabels("set", "hit"), set >= cas ? set - cas : 0);
    }
  }
}

// memcached_slab_lru_hits_total{slab,lru}.
void WriteLruHits(const ClassMap& items, Exposition* ex) {
  constexpr char kName[] = "memcached_slab_lru_hits_total";
  constexpr std::pair<std::string_view, std::string_view> kLrus[] = {
      {"hits_to_hot", "hot"}, {"hits_to_warm", "warm"}, {"hits_to_cold", "cold"},
      {"hits_to_temp", "temporary"}};
  if (items.empty()) return;
  ex->Family(kName, kC, "Reads that found an item of this class, by LRU.");
  for (const auto& [cls, s] : items) {
    for (const auto& [stat, lru] : kLrus) {
      if (const std::string* v = Find(s, stat)) {
        ex->Sample(kName, SlabLabel(cls) + ",lru=\"" + std::string(lru) + "\"", *v);
      }
    }
  }
}

// Whether a `stats` name is exported under memcached_exporter's names (a
// herdless_* series for it would count it twice).
bool ExportedAsMemcached(std::string_view stat) {
  for (const StatMetric& row : kGeneral) {
    if (stat == row.stat) return true;
  }
  for (std::string_view op : kHitMissCommands) {
    if (stat.substr(0, op.size()) == op &&
        (stat.substr(op.size()) == "_hits" || stat.substr(op.size()) == "_misses")) {
      return true;
    }
  }
  return stat == "cas_badval" || stat == "cmd_flush" || stat == "cmd_set";
}

// HELP for the herdless_* series; a counter list's new row gets the default.
const char* HerdlessHelp(std::string_view stat) {
  static const std::unordered_map<std::string_view, const char*> kHelp = {
      {"lease_grants", "Recompute leases granted (each sends one client to the backend)."},
      {"lease_fulfilled", "Leases ended by their holder's set."},
      {"lease_timeouts", "Leases that timed out before their holder's set."},
      {"lease_sets_refused", "Sets refused for carrying a stale or foreign lease token."},
      {"xfetch_grants", "Leases granted early by XFetch."},
      {"refresh_grants", "Leases granted early in a refresh-ahead window."},
      {"stale_hits", "Reads served a stale value while one client recomputes."},
      {"curr_leases", "Leases held now."},
      {"hot_keys", "Keys read at the refresh_hot rate or faster now."},
      {"tracked_keys", "Keys carrying a read-rate estimate now."},
      {"waits_parked", "Readers parked in wait mode until a lease ends."},
      {"waits_woken", "Parked readers answered by the lease holder's set."},
      {"waits_timed_out", "Parked readers answered with a miss at wait_timeout_ms."},
      {"get_expired", "Reads that found their item expired."},
      {"get_flushed", "Reads that found their item flushed."},
      {"moved_to_main", "Items copied from the small queue to the main one."},
      {"main_reinserted", "Items read while in the main queue, copied to its tail."},
      {"ghost_hits", "Keys stored again while their ghost was fresh."},
      {"curr_foreign_items", "Items held now for a ring owner that is away (-o ring)."},
  };
  auto it = kHelp.find(stat);
  return it == kHelp.end() ? "The `stats` field of this name (docs/operations.md)." : it->second;
}

void WriteHerdless(std::string_view stat, uint64_t value, Kind kind, Exposition* ex) {
  if (ExportedAsMemcached(stat)) return;
  if (stat == "rated_keys") stat = "tracked_keys";   // `stats` calls it so
  std::string name = "herdless_" + std::string(stat);
  if (kind == Kind::kCounter) name += "_total";
  ex->Family(name, kind, HerdlessHelp(stat));
  ex->Sample(name, "", value);
}

// Every row of the store's and the workers' counter lists that memcached's
// names do not cover.
void WriteHerdlessCounters(const StoreStats& ss, const ThreadStatsTotals& t, Exposition* ex) {
#define HERDLESS_GAUGE(name) WriteHerdless(#name, ss.name, kG, ex);
#define HERDLESS_STORE_COUNTER(name) WriteHerdless(#name, ss.name, kC, ex);
#define HERDLESS_THREAD_COUNTER(name) WriteHerdless(#name, t.name, kC, ex);
  HERDLESS_STORE_GAUGES(HERDLESS_GAUGE)
  HERDLESS_STORE_COUNTERS(HERDLESS_STORE_COUNTER)
  HERDLESS_THREAD_STATS(HERDLESS_THREAD_COUNTER)
#undef HERDLESS_GAUGE
#undef HERDLESS_STORE_COUNTER
#undef HERDLESS_THREAD_COUNTER
}

// The -e snapshot's figures, with -e.
void WriteSnapshot(const SnapshotFigures& f, Exposition* ex) {
  if (!f.enabled) return;
  auto gauge = [ex](const char* name, uint64_t v, const char* help) {
    ex->Family(name, kG, help);
    ex->Sample(name, "", v);
  };
  auto counter = [ex](const char* name, uint64_t v, const char* help) {
    ex->Family(name, kC, help);
    ex->Sample(name, "", v);
  };
  // Prometheus names a duration in seconds (promtool refuses "_ms"); stats keeps milliseconds.
  auto seconds = [ex](const char* name, uint64_t ms, const char* help) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ms / 1000),
                  static_cast<unsigned long long>(ms % 1000));
    ex->Family(name, kG, help);
    ex->Sample(name, "", std::string_view(buf));
  };
  gauge("herdless_snapshot_in_progress", f.in_progress, "Whether a snapshot write runs now.");
  counter("herdless_snapshot_writes_total", f.writes, "Snapshots written.");
  counter("herdless_snapshot_failures_total", f.failures, "Snapshot writes that failed.");
  gauge("herdless_snapshot_last_time_seconds", static_cast<uint64_t>(f.last_time),
        "Unix time the last snapshot write ended (0: none).");
  seconds("herdless_snapshot_last_duration_seconds", f.last_duration_ms, "Length of the last write.");
  gauge("herdless_snapshot_last_bytes", f.last_bytes, "Size of the last snapshot.");
  gauge("herdless_snapshot_last_items", f.last_items, "Items in the last snapshot.");
  gauge("herdless_snapshot_loaded_items", f.loaded_items, "Items loaded at start.");
  const char* skipped = "herdless_snapshot_load_skipped_items";
  ex->Family(skipped, kG,
             "Records the load at start left out, by reason (stats' snapshot_load_skipped_*).");
  const std::pair<const char*, uint64_t> skips[] = {
      {"expired", f.load_skipped_expired}, {"too_large", f.load_skipped_too_large},
      {"no_memory", f.load_skipped_no_memory}, {"changed", f.load_skipped_changed},
      {"flushed", f.load_skipped_flushed}};
  for (const auto& [reason, n] : skips) {
    ex->Sample(skipped, std::string("reason=\"") + reason + "\"", n);
  }
  seconds("herdless_snapshot_load_seconds", f.load_ms, "Length of the load at start.");
}

}  // namespace

void WriteMetrics(ItemStore* store, ServerInfo* server, std::string* out) {
  StatMap general;
  StatMap settings;
  ClassMap items;
  ClassMap slabs;
  Merge(Collect(store, server, ""), &general);
  Merge(Collect(store, server, "settings"), &settings);
  SplitClasses(Collect(store, server, "items"), "items:", &items, nullptr);
  SplitClasses(Collect(store, server, "slabs"), "", &slabs, &general);

  Exposition ex(out);
  ex.Family("memcached_up", kG, "Whether the server could be read (always 1 from the server itself).");
  ex.Sample("memcached_up", "", uint64_t{1});
  if (const std::string* v = Find(general, "version")) {
    ex.Family("memcached_version", kG, "The server's version, as a label.");
    ex.Sample("memcached_version", "version=\"" + *v + "\"", uint64_t{1});
  }
  WriteTable(kGeneral, general, &ex);
  WriteCommands(general, &ex);
  WriteTable(kSettingsAlways, settings, &ex);
  if (const std::string* v = Find(settings, "lru_crawler"); v != nullptr && *v == "yes") {
    WriteTable(kCrawlerSettings, settings, &ex);
  }
  WriteClassTable(kItems, items, &ex);
  WriteLruHits(items, &ex);
  WriteClassTable(kSlabs, slabs, &ex);
  WriteSlabCommands(slabs, &ex);

  const ServerSnapshot snap = server->Snapshot();
  WriteHerdlessCounters(store->Stats(), snap.totals, &ex);
  WriteSnapshot(snap.snapshot, &ex);
}

}  // namespace herdless
