#include "storage/flash_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "storage/file_io.h"

namespace herdless {

namespace {

// One preadv2 with RWF_NOWAIT: the whole range from the page cache, or false
// (EAGAIN: some of it is not cached; a short read: part of it is not).
bool ReadCachedOnly(int fd, char* p, size_t n, uint64_t offset) {
  struct iovec io {p, n};
  ssize_t r;
  do {
    r = ::preadv2(fd, &io, 1, static_cast<off_t>(offset), RWF_NOWAIT);
  } while (r < 0 && errno == EINTR);
  return r == static_cast<ssize_t>(n);
}

// memcached's extstore_init: open, lock against a second server, and
// (unless the file is being reopened) empty.
int OpenFlashFile(const std::string& path, bool empty, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  if (ok) {
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    ok = ::fcntl(fd, F_SETLK, &lock) == 0 && (!empty || ::ftruncate(fd, 0) == 0);
  }
  if (ok) return fd;
  *error = std::string("Failed to initialize external storage: failed to open file\nextstore open: ") +
           std::strerror(errno);
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

FlashStore::FlashStore(const ExtstoreSettings& settings) : settings_(settings) {}

FlashStore::~FlashStore() {
  Flush();   // an orderly stop keeps what the buffer holds
  for (int fd : fds_) ::close(fd);
}

std::unique_ptr<FlashStore> FlashStore::Open(const ExtstoreSettings& settings, std::string* error) {
  std::unique_ptr<FlashStore> store = OpenFiles(settings, /*empty=*/true, error);
  if (store == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(store->mu_);
  store->OpenFirstPageLocked();
  return store;
}

std::unique_ptr<FlashStore> FlashStore::OpenKept(const ExtstoreSettings& settings, std::string* error) {
  std::unique_ptr<FlashStore> store = OpenFiles(settings, /*empty=*/false, error);
  if (store == nullptr) return nullptr;
  store->restart_ = Restart::kPending;
  store->kept_headers_.assign(store->pages_.size(), KeptHeader{});
  return store;
}

std::string FlashStore::Identity() const {
  std::string out = "page_size " + std::to_string(settings_.page_size);
  for (size_t i = 0; i < settings_.files.size(); ++i) {
    const FlashFile& f = settings_.files[i];
    struct stat st {};
    if (::fstat(fds_[i], &st) != 0) return "";   // unknown: never matches
    out += "\npath " + f.path + " size " + std::to_string(f.size_bytes) + " device " +
           std::to_string(st.st_dev) + " inode " + std::to_string(st.st_ino) + " bytes " +
           std::to_string(st.st_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }
  return out;
}

uint32_t FlashStore::next_generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_generation_;
}

bool FlashStore::Sync() {
  bool ok = Flush();
  for (int fd : fds_) ok = ::fsync(fd) == 0 && ok;
  return ok;
}

bool FlashStore::AcceptRestart(std::string_view identity, uint32_t next_generation) {
  if (identity.empty() || next_generation == 0 || identity != Identity()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (restart_ != Restart::kPending) return false;
  restart_ = Restart::kAccepted;
  next_generation_ = next_generation;
  return true;
}

const FlashPageHeader& FlashStore::KeptHeaderLocked(uint32_t index) {
  KeptHeader& kept = kept_headers_[index];
  if (!kept.read) {
    kept.read = true;
    char bytes[kFlashPageHeaderSize];
    const Page& page = pages_[index];
    if (!ReadAll(page.fd, bytes, sizeof(bytes), page.file_offset) ||
        !DecodeFlashPageHeader(std::string_view(bytes, sizeof(bytes)), &kept.header)) {
      kept.header = FlashPageHeader{};
    }
  }
  return kept.header;
}

bool FlashStore::Adopt(const FlashLocator& where, size_t key_len, uint32_t value_len) {
  const size_t size = FlashRecordSize(key_len, value_len);
  std::lock_guard<std::mutex> lock(mu_);
  if (restart_ != Restart::kAccepted || where.page >= pages_.size() || where.generation == 0 ||
      where.offset < kFlashPageHeaderSize || where.offset + size > settings_.page_size) {
    return false;
  }
  Page& page = pages_[where.page];
  if (page.generation == 0) {   // the page's first record adopted: its header says what it was
    const FlashPageHeader& header = KeptHeaderLocked(where.page);
    if (header.generation != where.generation) return false;
    page.generation = header.generation;
    page.bucket = static_cast<FlashBucket>(header.bucket);
  } else if (page.generation != where.generation) {
    return false;
  }
  page.full = true;   // written to again only once freed
  page.live_bytes += size;
  ++page.live_objects;
  ++stats_.objects_used;
  stats_.bytes_used += size;
  ++adopted_;
  return true;
}

void FlashStore::FinishRestart() {
  std::lock_guard<std::mutex> lock(mu_);
  if (restart_ == Restart::kNone) return;
  if (adopted_ == 0) {
    // Nothing of the file is trusted: emptied as Open's are.
    for (int fd : fds_) {
      [[maybe_unused]] const int ignored = ::ftruncate(fd, 0);   // failing, its pages are free all the same
    }
    for (Page& p : pages_) FreeLocked(&p);
    next_generation_ = 1;
    stats_ = FlashStats{};
  }
  restart_ = Restart::kNone;
  kept_headers_.clear();
  OpenFirstPageLocked();
}

void FlashStore::OpenFirstPageLocked() {
  // memcached 1.6.18 leaves its first page out of the free list (pages_used 1
  // before any write); 1.6.45 does not.
  if (!settings_.as_1645 && OpenPageLocked(FlashBucket::kDefault)) stats_.page_allocs = 0;
}

std::unique_ptr<FlashStore> FlashStore::OpenFiles(const ExtstoreSettings& settings, bool empty,
                                                  std::string* error) {
  std::unique_ptr<FlashStore> store(new FlashStore(settings));
  std::vector<uint32_t> left;
  for (const FlashFile& file : settings.files) {
    const int fd = OpenFlashFile(file.path, empty, error);
    if (fd < 0) return nullptr;
    store->fds_.push_back(fd);
    left.push_back(file.page_count);
  }
  // Pages interleave between the files (JBOD), as memcached's do: its list
  // of files is the -o list backwards, so page 0 is the last file's.
  std::vector<uint64_t> next_offset(left.size(), 0);
  const uint64_t total = settings.page_count();   // < 65536: CheckExtstoreInit
  for (size_t k = 0; store->pages_.size() < total; k++) {
    const size_t f = left.size() - 1 - k % left.size();
    if (left[f] == 0) continue;
    --left[f];
    Page page;
    page.fd = store->fds_[f];
    page.free_bucket = settings.files[f].free_bucket;
    page.file_offset = next_offset[f];
    next_offset[f] += settings.page_size;
    store->pages_.push_back(page);
  }
  return store;
}

FlashStore::Page* FlashStore::FreePageLocked(FlashBucket free_bucket) {
  for (Page& p : pages_) {
    if (p.generation == 0 && p.free_bucket == free_bucket) return &p;
  }
  return nullptr;
}

bool FlashStore::OpenPageLocked(FlashBucket bucket) {
  Page* chosen = FreePageLocked(bucket);
  if (chosen == nullptr && bucket != FlashBucket::kDefault) chosen = FreePageLocked(FlashBucket::kDefault);
  if (chosen == nullptr) {
    // No page free for it: the oldest full page it could have had goes.
    for (Page& p : pages_) {
      const bool usable = p.free_bucket == bucket || p.free_bucket == FlashBucket::kDefault;
      if (usable && p.full && (chosen == nullptr || p.generation < chosen->generation)) chosen = &p;
    }
    if (chosen == nullptr) return false;
    EvictLocked(chosen);
  }
  chosen->generation = next_generation_++;
  if (next_generation_ == 0) next_generation_ = 1;
  ++stats_.page_allocs;
  chosen->bucket = bucket;
  Stream& stream = StreamOf(bucket);
  stream.open_page = chosen - pages_.data();
  stream.wbuf.assign(kFlashPageHeaderSize, '\0');
  EncodeFlashPageHeader({chosen->generation, static_cast<uint8_t>(bucket)}, stream.wbuf.data());
  stream.wbuf_start = 0;
  stream.page_used = kFlashPageHeaderSize;
  return true;
}

void FlashStore::EvictLocked(Page* page) {
  ++stats_.page_evictions;
  stats_.objects_evicted += page->live_objects;
  stats_.bytes_evicted += page->live_bytes;
  FreeLocked(page);
}

void FlashStore::FreeLocked(Page* page) {
  ++stats_.page_reclaims;
  stats_.objects_used -= page->live_objects;
  stats_.bytes_used -= page->live_bytes;
  page->generation = 0;
  page->live_bytes = 0;
  page->live_objects = 0;
  page->full = false;
  page->bucket = FlashBucket::kDefault;
}

bool FlashStore::FlushLocked(Stream& stream) {
  if (stream.open_page < 0 || stream.wbuf.empty()) return true;
  Page& page = pages_[static_cast<size_t>(stream.open_page)];
  if (!WriteAll(page.fd, stream.wbuf.data(), stream.wbuf.size(), page.file_offset + stream.wbuf_start)) {
    // The buffered values never reached the file: the page goes, and every
    // value on it reads as a miss rather than as whatever the file holds.
    EvictLocked(&page);
    stream.open_page = -1;
    stream.wbuf.clear();
    return false;
  }
  stream.wbuf_start += stream.wbuf.size();
  stream.wbuf.clear();
  return true;
}

bool FlashStore::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  bool ok = true;
  for (Stream& stream : streams_) ok = FlushLocked(stream) && ok;
  return ok;
}

bool FlashStore::Write(std::string_view key, uint64_t cas, std::string_view value, FlashLocator* where,
                       FlashBucket bucket) {
  const size_t size = FlashRecordSize(key.size(), value.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (size + kFlashPageHeaderSize > settings_.wbuf_size || size + kFlashPageHeaderSize > settings_.page_size) {
    return false;
  }
  if (restart_ != Restart::kNone) return false;   // pages not adopted yet may hold restored values
  Stream& stream = StreamOf(bucket);
  if (stream.open_page >= 0 && stream.page_used + size > settings_.page_size) {
    Page& full = pages_[static_cast<size_t>(stream.open_page)];
    if (!FlushLocked(stream)) return false;
    full.full = true;
    stream.open_page = -1;
    if (full.live_objects == 0) FreeLocked(&full);
  }
  if (stream.open_page < 0 && !OpenPageLocked(bucket)) return false;
  if (stream.wbuf.size() + size > settings_.wbuf_size && !FlushLocked(stream)) return false;
  if (stream.open_page < 0 && !OpenPageLocked(bucket)) return false;   // the flush failed and dropped the page
  Page& page = pages_[static_cast<size_t>(stream.open_page)];
  const size_t at = stream.wbuf.size();
  stream.wbuf.resize(at + size);
  EncodeFlashRecord(page.generation, cas, key, value, stream.wbuf.data() + at);
  *where = {static_cast<uint32_t>(stream.open_page), page.generation, static_cast<uint32_t>(stream.page_used)};
  stream.page_used += size;
  page.live_bytes += size;
  ++page.live_objects;
  ++stats_.objects_written;
  stats_.bytes_written += size;
  ++stats_.objects_used;
  stats_.bytes_used += size;
  return true;
}

FlashReadResult FlashStore::Read(const FlashLocator& where, std::string_view key, uint32_t value_len,
                                 std::string* value, bool nowait) {
  const size_t size = FlashRecordSize(key.size(), value_len);
  std::string bytes(size, '\0');
  int fd;
  uint64_t offset;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (where.page >= pages_.size()) return FlashReadResult::kMiss;
    const Page& page = pages_[where.page];
    if (page.generation != where.generation || where.offset + size > settings_.page_size) {
      return FlashReadResult::kMiss;
    }
    fd = page.fd;
    for (const Stream& stream : streams_) {
      if (static_cast<int64_t>(where.page) != stream.open_page || where.offset < stream.wbuf_start) continue;
      const size_t at = where.offset - stream.wbuf_start;
      if (at + size > stream.wbuf.size()) return FlashReadResult::kMiss;
      bytes.assign(stream.wbuf, at, size);
      fd = -1;
    }
    offset = page.file_offset + where.offset;
  }
  if (nowait && fd >= 0 && !ReadCachedOnly(fd, bytes.data(), size, offset)) return FlashReadResult::kWouldBlock;
  const bool read = fd < 0 || nowait || ReadAll(fd, bytes.data(), size, offset);
  FlashRecord record;
  const FlashReadCheck check = read ? CheckFlashRead(bytes, where.generation, key, value_len, &record)
                                    : FlashReadCheck::kMismatch;
  std::lock_guard<std::mutex> lock(mu_);
  // A page evicted while the read was under way may have been rewritten
  // under it: whatever came back is not this value's.
  if (pages_[where.page].generation != where.generation) return FlashReadResult::kMiss;
  if (!read) return FlashReadResult::kIoError;
  if (check == FlashReadCheck::kBadChecksum) return FlashReadResult::kBadChecksum;
  if (check == FlashReadCheck::kMismatch) return FlashReadResult::kMiss;
  value->assign(record.value);
  ++stats_.objects_read;
  stats_.bytes_read += size;
  return FlashReadResult::kOk;
}

void FlashStore::Release(const FlashLocator& where, size_t key_len, uint32_t value_len) {
  const size_t size = FlashRecordSize(key_len, value_len);
  std::lock_guard<std::mutex> lock(mu_);
  if (where.page >= pages_.size()) return;
  Page& page = pages_[where.page];
  if (page.generation != where.generation || page.live_objects == 0) return;   // evicted already
  const uint64_t bytes = std::min<uint64_t>(size, page.live_bytes);
  page.live_bytes -= bytes;
  --page.live_objects;
  stats_.bytes_used -= bytes;
  --stats_.objects_used;
  if (page.full && page.live_objects == 0) FreeLocked(&page);
}

uint32_t FlashStore::free_pages() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const Page& p : pages_) n += p.generation == 0 ? 1 : 0;
  return n;
}

bool FlashStore::Compaction::RescueBucket(bool never_read, FlashBucket* to) const {
  if (never_read && has_coldcompact) {
    *to = FlashBucket::kColdCompact;
    return true;
  }
  if (never_read && drop_unread) return false;
  *to = use_old ? FlashBucket::kOld : FlashBucket::kCompact;
  return true;
}

bool FlashStore::PickCompaction(const FlashTunables& live, Compaction* out, CompactionCheck* check) {
  const Thresholds t{live.compact_under.load(std::memory_order_relaxed),
                     live.drop_under.load(std::memory_order_relaxed), live.max_frag.load(std::memory_order_relaxed),
                     live.drop_unread.load(std::memory_order_relaxed)};
  std::lock_guard<std::mutex> lock(mu_);
  return settings_.as_1645 ? PickCompaction1645Locked(t, out, check) : PickCompaction1618Locked(t, out, check);
}

bool FlashStore::PickCompaction1618Locked(const Thresholds& t, Compaction* out, CompactionCheck* check) const {
  uint64_t free = 0;
  for (const Page& p : pages_) free += p.generation == 0 ? 1 : 0;
  if (free == pages_.size() || free > t.compact_under) return false;
  // Fewer free pages lower the limit: a device filling up compacts only its emptiest pages.
  const double rate = (1.0 - static_cast<double>(free) / pages_.size()) * t.max_frag;
  const double limit = static_cast<double>(settings_.page_size) * rate;
  if (check != nullptr) *check = {true, rate, static_cast<uint64_t>(limit)};
  const Page* low = nullptr;      // the oldest page under the limit
  const Page* lowest = nullptr;   // the oldest page
  for (const Page& p : pages_) {
    if (!p.full || p.bucket == FlashBucket::kLowTtl) continue;   // short-lived pages empty by themselves
    if (lowest == nullptr || p.generation < lowest->generation) lowest = &p;
    if (static_cast<double>(p.live_bytes) < limit && (low == nullptr || p.generation < low->generation)) low = &p;
  }
  const bool drop = low == nullptr && lowest != nullptr && t.drop_unread && free <= t.drop_under;
  const Page* chosen = low != nullptr ? low : (drop ? lowest : nullptr);
  if (chosen == nullptr) return false;
  *out = Compaction{static_cast<uint32_t>(chosen - pages_.data()), chosen->generation, drop, settings_.wbuf_size};
  return true;
}

bool FlashStore::PickCompaction1645Locked(const Thresholds& t, Compaction* out, CompactionCheck* check) {
  struct BucketPages {
    uint32_t total = 0, free = 0;
    Page* low = nullptr;      // the emptiest page under the limit
    Page* lowest = nullptr;   // the oldest page
  };
  BucketPages buckets[kFlashBuckets];
  const double limit = static_cast<double>(settings_.page_size) * t.max_frag;
  bool used = false;
  for (Page& p : pages_) {
    BucketPages& b = buckets[static_cast<size_t>(p.free_bucket)];
    b.total++;
    if (p.generation == 0) {
      b.free++;
      continue;
    }
    used = true;
    if (!p.full) continue;   // still being written
    if (b.lowest == nullptr || p.generation < b.lowest->generation) b.lowest = &p;
    if (static_cast<double>(p.live_bytes) < limit && (b.low == nullptr || p.live_bytes < b.low->live_bytes)) {
      b.low = &p;
    }
  }
  if (!used) return false;
  if (check != nullptr) *check = {true, t.max_frag, static_cast<uint64_t>(limit)};
  Compaction c;
  c.read_size = settings_.wbuf_size;
  // The coldcompact and old files are never compacted: full, they evict their oldest page.
  for (FlashBucket kind : {FlashBucket::kColdCompact, FlashBucket::kOld}) {
    BucketPages& b = buckets[static_cast<size_t>(kind)];
    if (b.total == 0) continue;
    (kind == FlashBucket::kOld ? c.use_old : c.has_coldcompact) = true;
    if (b.free == 0 && b.lowest != nullptr) {
      EvictLocked(b.lowest);
      return false;
    }
  }
  const bool has_old = c.use_old;
  for (size_t i = 0; i < kFlashBuckets; i++) {
    const BucketPages& b = buckets[i];
    const auto kind = static_cast<FlashBucket>(i);
    if (b.total == 0 || kind == FlashBucket::kLowTtl || b.free >= t.compact_under) continue;
    Page* chosen = b.low;
    c.use_old = false;
    if (chosen == nullptr && b.free < t.drop_under && b.lowest != nullptr && kind != FlashBucket::kColdCompact &&
        kind != FlashBucket::kOld && (t.drop_unread || c.has_coldcompact || has_old)) {
      // Nothing to defragment: the oldest page, whose values go to the old
      // file (or are dropped, or go to the coldcompact file, never read).
      chosen = b.lowest;
      c.drop_unread = t.drop_unread;
      c.use_old = has_old;
    }
    if (chosen == nullptr) continue;
    c.page = static_cast<uint32_t>(chosen - pages_.data());
    c.generation = chosen->generation;
    *out = c;
    return true;
  }
  return false;
}

void FlashStore::CountCompaction(const CompactionCounts& counts) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.compact_rescues += counts.rescues;
  stats_.compact_lost += counts.lost;
  stats_.compact_skipped += counts.skipped;
  stats_.compact_resc_cold += counts.rescues_cold;
  stats_.compact_resc_old += counts.rescues_old;
}

bool FlashStore::ReadPage(uint32_t index, std::string* bytes) const {
  int fd;
  uint64_t offset;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= pages_.size() || !pages_[index].full) return false;
    fd = pages_[index].fd;
    offset = pages_[index].file_offset;
  }
  // The last page of a file may end where its last record does: the rest reads as zeros.
  bytes->assign(settings_.page_size, '\0');
  return ReadUpTo(fd, bytes->data(), bytes->size(), offset) >= static_cast<ssize_t>(kFlashPageHeaderSize);
}

FlashStats FlashStore::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  FlashStats s = stats_;
  for (const Page& p : pages_) (p.generation == 0 ? s.pages_free : s.pages_used) += 1;
  s.limit_maxbytes = uint64_t{settings_.page_size} * pages_.size();
  s.bytes_fragmented = s.pages_used * settings_.page_size - s.bytes_used;
  return s;
}

std::vector<FlashPageData> FlashStore::PageData() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FlashPageData> out;
  for (const Page& p : pages_) {
    out.push_back({p.generation, p.live_bytes, p.bucket, p.free_bucket, p.generation != 0 && !p.full,
                   p.live_objects});
  }
  return out;
}

}  // namespace herdless
