// PrefixStats: memcached's per-prefix counters (`stats detail on|off|dump`,
// -D <char>; memcached's stats_prefix.c). A key's prefix is what precedes its
// first delimiter; keys without one are not counted. One small table shared
// by every worker behind a mutex, touched only while detail is on (callers
// check enabled(): one relaxed load when off). At most kMaxPrefixes prefixes
// are kept: a new prefix beyond them is not counted (memcached has no bound).
#ifndef HERDLESS_PROTOCOL_PREFIX_STATS_H_
#define HERDLESS_PROTOCOL_PREFIX_STATS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace herdless {

class PrefixStats {
 public:
  static constexpr size_t kMaxPrefixes = 4096;

  explicit PrefixStats(size_t max_prefixes = kMaxPrefixes) : max_prefixes_(max_prefixes) {}

  // -D: the delimiter (memcached's default ':') and whether counting starts on.
  void Configure(char delimiter, bool enabled) {
    delimiter_.store(delimiter, std::memory_order_relaxed);
    enabled_.store(enabled, std::memory_order_relaxed);
  }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  char delimiter() const { return delimiter_.load(std::memory_order_relaxed); }

  // memcached's stats_prefix_record_*: a get counts `hit` when the client got
  // the value; set counts every storage command, delete every delete.
  void RecordGet(std::string_view key, bool hit);
  void RecordSet(std::string_view key);
  void RecordDelete(std::string_view key);

  // stats reset: forgets every prefix.
  void Clear();

  // "PREFIX <prefix> get <n> hit <n> set <n> del <n>\r\n" per prefix, in
  // byte order of the prefixes, then "END\r\n".
  std::string Dump() const;

  size_t size() const;
  // Records not counted because the table was full.
  uint64_t refused() const;

 private:
  struct Counts {
    uint64_t gets = 0, hits = 0, sets = 0, deletes = 0;
  };
  // The key's counters, or nullptr (no delimiter, or the table is full).
  // Called with mu_ held.
  Counts* Find(std::string_view key);

  const size_t max_prefixes_;
  std::atomic<bool> enabled_{false};
  std::atomic<char> delimiter_{':'};
  mutable std::mutex mu_;
  std::map<std::string, Counts, std::less<>> table_;
  uint64_t refused_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_PREFIX_STATS_H_
