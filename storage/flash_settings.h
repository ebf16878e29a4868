// ExtstoreSettings: memcached 1.6.18's extstore options (-o ext_*), as given,
// with memcached's defaults. An empty `files` means no flash tier: nothing
// else here changes anything then. `stats settings` shows them.
#ifndef HERDLESS_STORAGE_FLASH_SETTINGS_H_
#define HERDLESS_STORAGE_FLASH_SETTINGS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herdless {

// memcached's page buckets, by its numbers (storage.c's PAGE_BUCKET_*). A
// page is written by one bucket's stream: new values (default; chunked: larger
// than a slab chunk; lowttl: expiring within ext_low_ttl), compaction's rescues
// (compact; coldcompact: values never read; old: when nothing else frees a
// page). A file's pages serve its own bucket's stream first, and the default
// file's any stream (ext_path=FILE:SIZE:BUCKET, memcached 1.6.45).
enum class FlashBucket : uint8_t { kDefault = 0, kCompact, kChunked, kLowTtl, kColdCompact, kOld };
inline constexpr size_t kFlashBuckets = 6;
inline constexpr const char* kFlashBucketNames[kFlashBuckets] = {"default", "compact", "chunked",
                                                                  "lowttl", "coldcompact", "old"};
inline const char* FlashBucketName(FlashBucket bucket) { return kFlashBucketNames[static_cast<size_t>(bucket)]; }
// The bucket of that name (false: memcached knows none).
inline bool FlashBucketNamed(std::string_view name, FlashBucket* bucket) {
  for (size_t i = 0; i < kFlashBuckets; i++) {
    if (name == kFlashBucketNames[i]) {
      *bucket = static_cast<FlashBucket>(i);
      return true;
    }
  }
  return false;
}

// One ext_path=FILE:SIZE[:BUCKET]: a file of whole pages (several files: JBOD,
// pages interleaved between them as memcached does).
struct FlashFile {
  std::string path;
  uint64_t size_bytes = 0;
  uint32_t page_count = 0;   // size_bytes / page_size, rounded down
  bool size_has_unit = true; // the size ended in m, g, t or p (1.6.45 refuses others)
  FlashBucket free_bucket = FlashBucket::kDefault;   // 1.6.18 refuses any other
};

struct ExtstoreSettings {
  std::vector<FlashFile> files;          // ext_path, in the order given
  uint32_t page_size = 64u << 20;        // ext_page_size (given in MB)
  uint32_t wbuf_size = 4u << 20;         // ext_wbuf_size (given in MB)
  uint32_t threads = 1;                  // ext_threads: I/O threads
  uint32_t io_depth = 1;                 // ext_io_depth
  uint32_t item_size = 512;              // ext_item_size: values at least this long move
  uint32_t item_age = UINT32_MAX;        // ext_item_age: seconds idle before a value moves
  uint32_t low_ttl = 0;                  // ext_low_ttl: shorter TTLs go to their own pages
  uint32_t recache_rate = 2000;          // ext_recache_rate: 1 read in N comes back to RAM
  uint32_t compact_under = 0;            // ext_compact_under: free pages; 0 = a quarter
  uint32_t drop_under = 0;               // ext_drop_under: free pages; 0 = a quarter
  uint32_t max_sleep_us = 1000000;       // ext_max_sleep: longest background nap
  double max_frag = 0.8;                 // ext_max_frag: live fraction a page is compacted under
  bool drop_unread = false;              // ext_drop_unread: compaction drops unread values
  double slab_automove_freeratio = 0.01; // memcached parses it with the ext_* keys
  // -o compat=1.6.45: 1.6.45's extstore: its choice of page to compact, its
  // compaction log lines, and an item's fetched mark kept across its move.
  bool as_1645 = false;

  bool enabled() const { return !files.empty(); }
  // In 64 bits, as memcached's temp_page_count: each file's count may be up
  // to UINT32_MAX, and a sum wrapped to 32 bits would pass the "< 65536
  // pages" check at start (CheckExtstoreInit) with an absurd ext_path.
  uint64_t page_count() const {
    uint64_t n = 0;
    for (const FlashFile& f : files) n += f.page_count;
    return n;
  }
};

// The ext_* settings memcached's `extstore` command changes at run time (the
// others are fixed at start), started at the options' values. Read by the
// workers, the flash tier's writer and `stats settings`, hence atomic; a
// change applies from the next decision on.
struct FlashTunables {
  std::atomic<uint32_t> item_size{512};
  std::atomic<uint32_t> item_age{UINT32_MAX};
  std::atomic<uint32_t> low_ttl{0};
  std::atomic<uint32_t> recache_rate{2000};
  std::atomic<uint32_t> compact_under{0};
  std::atomic<uint32_t> drop_under{0};
  std::atomic<uint32_t> max_sleep_us{1000000};
  std::atomic<double> max_frag{0.8};
  std::atomic<bool> drop_unread{false};

  FlashTunables() = default;
  explicit FlashTunables(const ExtstoreSettings& s) { StartWith(s); }
  void StartWith(const ExtstoreSettings& s) {
    item_size.store(s.item_size, std::memory_order_relaxed);
    item_age.store(s.item_age, std::memory_order_relaxed);
    low_ttl.store(s.low_ttl, std::memory_order_relaxed);
    recache_rate.store(s.recache_rate, std::memory_order_relaxed);
    compact_under.store(s.compact_under, std::memory_order_relaxed);
    drop_under.store(s.drop_under, std::memory_order_relaxed);
    max_sleep_us.store(s.max_sleep_us, std::memory_order_relaxed);
    max_frag.store(s.max_frag, std::memory_order_relaxed);
    drop_unread.store(s.drop_unread, std::memory_order_relaxed);
  }
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_FLASH_SETTINGS_H_
