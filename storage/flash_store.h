// FlashStore: the flash tier's files (ext_path) cut into pages of
// ext_page_size, one page open for writing per bucket (FlashBucket: new
// values, compaction's rescues, ...) through a write buffer of ext_wbuf_size,
// each value read back verified (storage/flash_page.h).
// It keeps each page's generation and live bytes; its user says when a value
// on flash is no longer referenced (Release), a page with nothing live is
// free again, and a full device evicts its oldest page, whose values then
// read as misses; after an orderly stop the files can be kept for the -e
// restart (OpenKept ... FinishRestart: the snapshot's items adopt their
// records again). Thread-safe: one mutex guards the page table and the write
// buffer; reads of flushed records use pread outside it.
#ifndef HERDLESS_STORAGE_FLASH_STORE_H_
#define HERDLESS_STORAGE_FLASH_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "storage/flash_page.h"
#include "storage/flash_settings.h"

namespace herdless {

// memcached's extstore_* counters (`stats`), and its per-page data (`stats extstore`).
struct FlashStats {
  uint64_t page_allocs = 0, page_evictions = 0, page_reclaims = 0;
  uint64_t pages_free = 0, pages_used = 0;
  uint64_t objects_evicted = 0, objects_read = 0, objects_written = 0, objects_used = 0;
  uint64_t bytes_evicted = 0, bytes_written = 0, bytes_read = 0, bytes_used = 0;
  uint64_t bytes_fragmented = 0, limit_maxbytes = 0, io_queue = 0;
  uint64_t compact_lost = 0, compact_rescues = 0, compact_skipped = 0;
  uint64_t compact_resc_cold = 0, compact_resc_old = 0;   // rescues into those buckets
};
struct FlashPageData {
  uint64_t version = 0;   // the page's generation, 0 = free
  uint64_t bytes_used = 0;
  FlashBucket bucket = FlashBucket::kDefault;        // the stream that writes it (default when free)
  FlashBucket free_bucket = FlashBucket::kDefault;   // its file's
  bool open = false;      // still being written (memcached's active page)
  uint64_t objects = 0;   // live values
};

enum class FlashReadResult : uint8_t {
  kOk,
  kMiss,          // the page was evicted or reused since: a miss_from_extstore
  kBadChecksum,   // the bytes read are not what was written: a badcrc_from_extstore
  kIoError,       // the read failed or came back short: a miss
  kWouldBlock,    // `nowait` and the bytes are not in the page cache: nothing read
};

class FlashStore {
 public:
  // Opens (creates) each file and empties it, as memcached does: O_RDWR|O_CREAT
  // 0644, a write lock against a second server, truncated to 0. nullptr with
  // memcached's message in *error.
  static std::unique_ptr<FlashStore> Open(const ExtstoreSettings& settings, std::string* error);
  // The -e restart's form of Open: the files are opened as they are, not
  // emptied, every page free; nothing is written until FinishRestart. If
  // AcceptRestart takes the snapshot's identity, each restored stub Adopts
  // its record; FinishRestart then empties the files unless some were
  // adopted (a crash, other files or settings: the tier starts empty).
  static std::unique_ptr<FlashStore> OpenKept(const ExtstoreSettings& settings, std::string* error);
  // What the stop's snapshot records of the files (after Sync): the ext_path
  // settings and each file's device, inode, size and modification time, so
  // that a file written or replaced since is not trusted.
  std::string Identity() const;
  uint32_t next_generation() const;
  // The write buffers to the files, and the files to the device (fsync).
  bool Sync();
  // OpenKept's store, before FinishRestart: true when `identity` is this
  // store's Identity(); writing will resume at `next_generation` (the
  // writer's, above every generation its file may hold).
  bool AcceptRestart(std::string_view identity, uint32_t next_generation);
  // A restored stub's record, after AcceptRestart: false (drop the stub)
  // unless its page's header is that generation's and the record fits the
  // page. The record itself is verified when it is read, as every read is.
  bool Adopt(const FlashLocator& where, size_t key_len, uint32_t value_len);
  void FinishRestart();
  ~FlashStore();
  FlashStore(const FlashStore&) = delete;
  FlashStore& operator=(const FlashStore&) = delete;

  // Appends the value's record to `bucket`'s open page (memcached's
  // extstore_write_request: a new page from the bucket's files, else the
  // default ones, else the oldest full page of those is evicted). False when
  // the record is longer than a write buffer or a write to the file failed:
  // the value stays in RAM.
  bool Write(std::string_view key, uint64_t cas, std::string_view value, FlashLocator* where,
             FlashBucket bucket = FlashBucket::kDefault);
  // Writes the open write buffers to the file (the writer thread's idle step).
  bool Flush();
  // The value at `where`, verified to be the record for `key` of value_len bytes.
  // `nowait`: only from a write buffer or the page cache (preadv2 RWF_NOWAIT,
  // which never waits for the device), else kWouldBlock.
  FlashReadResult Read(const FlashLocator& where, std::string_view key, uint32_t value_len,
                       std::string* value, bool nowait = false);
  // The value at `where` is referenced no more (deleted, replaced, recached,
  // its item evicted): its page's live bytes drop; an emptied page is freed.
  void Release(const FlashLocator& where, size_t key_len, uint32_t value_len);

  // memcached 1.6.18's storage_compact_check on `live`'s settings: with at
  // most ext_compact_under pages free, the oldest page whose live bytes are
  // under the fragmentation limit (page size x ext_max_frag x the used fraction
  // of the device); failing that, with ext_drop_unread and at most
  // ext_drop_under pages free, the oldest page, whose unread values may then
  // be dropped. With as_1645, 1.6.45's, bucket by bucket of the files' free
  // buckets: under the thresholds, not at them; a fixed limit of page size x
  // ext_max_frag; the emptiest page under it; failing that, the oldest page
  // when values can be dropped or go to a coldcompact or old file; and a full
  // coldcompact or old file evicts its oldest page instead. The page's live
  // values should be written again (then Released) so the page frees up.
  struct Compaction {
    uint32_t page = 0;
    uint32_t generation = 0;
    bool drop_unread = false;      // values never read may be dropped...
    uint32_t read_size = 0;   // memcached reads a page back a write buffer at a time (0 = at once)
    bool has_coldcompact = false;  // ...unless they go to the coldcompact file's pages
    bool use_old = false;          // the others go to the old file's pages, not the compact bucket's
    // Where a rescued value goes: nowhere (false) when it is to be dropped.
    bool RescueBucket(bool never_read, FlashBucket* to) const;
  };
  // The check itself, which memcached logs (compact_fraginfo): whether it got
  // as far as a fragmentation limit (1.6.18: free pages at or under
  // ext_compact_under; 1.6.45: any page in use), and that limit.
  struct CompactionCheck {
    bool ran = false;
    double ratio = 0;        // of a page's size
    uint64_t limit_bytes = 0;
  };
  bool PickCompaction(const FlashTunables& live, Compaction* out, CompactionCheck* check = nullptr);
  // What a compaction pass did with a page's live values (extstore_compact_*).
  struct CompactionCounts {
    uint64_t rescues = 0, lost = 0, skipped = 0, rescues_cold = 0, rescues_old = 0;
  };
  void CountCompaction(const CompactionCounts& counts);
  // A full page's bytes, for FlashPageReader (compaction's walk); false if
  // the page is not full or the read failed.
  bool ReadPage(uint32_t page, std::string* bytes) const;
  uint32_t free_pages() const;

  FlashStats Stats() const;
  std::vector<FlashPageData> PageData() const;

 private:
  struct Page {
    int fd = -1;
    uint64_t file_offset = 0;
    uint32_t generation = 0;   // 0 = free
    uint64_t live_bytes = 0;
    uint64_t live_objects = 0;
    bool full = false;         // written to its end (not an open page)
    FlashBucket bucket = FlashBucket::kDefault;        // whose stream writes it
    FlashBucket free_bucket = FlashBucket::kDefault;   // its file's
  };
  // A bucket's page open for writing and its write buffer.
  struct Stream {
    int64_t open_page = -1;    // -1 = none
    uint64_t page_used = 0;    // bytes of the open page written or buffered
    uint64_t wbuf_start = 0;   // where in the open page the buffer starts
    std::string wbuf;          // the buffered bytes, at most ext_wbuf_size
  };
  struct Thresholds {
    uint32_t compact_under, drop_under;
    double max_frag;
    bool drop_unread;
  };

  explicit FlashStore(const ExtstoreSettings& settings);
  static std::unique_ptr<FlashStore> OpenFiles(const ExtstoreSettings& settings, bool empty,
                                               std::string* error);
  // A kept page's header, read once per page during a restart (generation 0 if it does not decode).
  const FlashPageHeader& KeptHeaderLocked(uint32_t page);
  Stream& StreamOf(FlashBucket bucket) { return streams_[static_cast<size_t>(bucket)]; }
  // A new page for the bucket's stream: a free page of its files, else of the
  // default files, else the oldest full page of those is evicted.
  bool OpenPageLocked(FlashBucket bucket);
  Page* FreePageLocked(FlashBucket free_bucket);
  void OpenFirstPageLocked();            // at start, as memcached 1.6.18 (not 1.6.45) has one
  bool FlushLocked(Stream& stream);
  // The page is free again. Counted in page_reclaims however it came to be
  // (emptied, or evicted: memcached's _free_page counts both).
  void FreeLocked(Page* page);
  // The page goes with its live values, which then read as misses.
  void EvictLocked(Page* page);
  bool PickCompaction1618Locked(const Thresholds& t, Compaction* out, CompactionCheck* check) const;
  bool PickCompaction1645Locked(const Thresholds& t, Compaction* out, CompactionCheck* check);

  const ExtstoreSettings settings_;
  std::vector<int> fds_;
  mutable std::mutex mu_;
  std::vector<Page> pages_;
  uint32_t next_generation_ = 1;
  Stream streams_[kFlashBuckets];
  FlashStats stats_;
  // The -e restart (OpenKept until FinishRestart): no write while pending.
  enum class Restart : uint8_t { kNone, kPending, kAccepted };
  Restart restart_ = Restart::kNone;
  struct KeptHeader {
    bool read = false;
    FlashPageHeader header;
  };
  std::vector<KeptHeader> kept_headers_;   // per page
  uint64_t adopted_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_FLASH_STORE_H_
