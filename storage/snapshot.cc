// The snapshot file's writer (a walk of the store into per-hotness block
// buffers) and loader (one thread reads ahead, one restores), in that order;
// the reader that checks a file and hands out its blocks hottest first is
// snapshot_reader.cc, the encoding of each part snapshot_format.cc.
#include "storage/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "storage/change_journal.h"
#include "storage/item_store.h"

namespace herdless {

using namespace snapshot_format;

namespace {

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint32_t UnixTime32(int64_t t) { return static_cast<uint32_t>(std::clamp<int64_t>(t, 1, UINT32_MAX)); }

// ---------------------------------------------------------------------------
// Writer.

// Writes numbered blocks to the temporary file; remembers the first error.
class BlockWriter {
 public:
  BlockWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  bool WriteRaw(std::string_view bytes) { return WritePieces({bytes}); }

  bool WriteBlock(uint8_t kind, uint8_t hotness, uint32_t records,
                  const std::vector<std::string_view>& payload) {
    size_t len = 0;
    for (std::string_view piece : payload) len += piece.size();
    char header[kBlockHeaderSize];
    EncodeBlockHeader(header, sequence_++, kind, hotness, static_cast<uint32_t>(len), records, payload);
    std::vector<std::string_view> pieces;
    pieces.reserve(payload.size() + 1);
    pieces.emplace_back(header, sizeof(header));
    pieces.insert(pieces.end(), payload.begin(), payload.end());
    return WritePieces(pieces);
  }

  uint32_t blocks() const { return sequence_; }
  uint64_t bytes() const { return bytes_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool WritePieces(const std::vector<std::string_view>& pieces) {
    if (failed()) return false;
    std::vector<struct iovec> iov;
    iov.reserve(pieces.size());
    for (std::string_view piece : pieces) {
      if (!piece.empty()) iov.push_back({const_cast<char*>(piece.data()), piece.size()});
    }
    size_t first = 0;
    while (first < iov.size()) {
      const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
      const ssize_t n = writev(fd_, &iov[first], count);
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = Errno("writing " + path_, errno);
        return false;
      }
      bytes_ += static_cast<uint64_t>(n);
      size_t left = static_cast<size_t>(n);
      while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (left > 0) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
    return true;
  }

  int fd_;
  std::string path_;
  uint32_t sequence_ = 0;
  uint64_t bytes_ = 0;
  std::string error_;
};

// Records bigger than this are not copied under the shard's lock: the item is
// pinned and copied after the walk step.
constexpr size_t kCopyUnderLock = 1024;

class SnapshotWalk {
 public:
  SnapshotWalk(ItemStore* store, BlockWriter* out, const SnapshotWriteOptions& options)
      : store_(store), out_(out), options_(options), unix_offset_(store->ToUnixTime(0)) {
    for (std::string& b : buffers_) b.reserve(options.block_bytes + kCopyUnderLock * 64);
  }

  // Walks the whole store; false when cancelled or a write failed.
  bool Run() {
    WalkCursor cursor;
    while (!cursor.done) {
      if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed)) return false;
      const int64_t now_s = store_->NowSeconds();
      store_->Walk(&cursor, options_.buckets_per_step, [&](const WalkedItem& w) { Visit(w, now_s); },
                   options_.flash_stubs);
      for (Pending& p : pending_) Add(p.record, p.hotness);
      pending_.clear();   // releases the pins
      for (int c = 0; c < kHotnessClasses; c++) {
        if (buffers_[c].size() >= options_.block_bytes) Flush(c);
      }
      if (out_->failed()) return false;
    }
    for (int c = 0; c < kHotnessClasses; c++) Flush(c);
    return !out_->failed();
  }

  uint64_t items() const { return items_; }
  // The Unix time of store time 0 that every record's times were converted with.
  int64_t unix_offset() const { return unix_offset_; }

 private:
  struct Pending {
    Record record;   // points into the pinned item
    ItemRef pin;
    int hotness;
  };

  // Under the shard's lock: as little as possible.
  void Visit(const WalkedItem& w, int64_t now_s) {
    if (w.no_value) return;   // a lease stub: the next reader after a restart gets the lease
    Record r;
    r.key = w.key;
    r.value = w.value;
    r.client_flags = w.client_flags;
    r.exptime_unix = w.exptime == 0 ? 0 : UnixTime32(w.exptime + unix_offset_);
    r.exptime_eighths = w.read_rate.present() && r.exptime_unix != 0 ? w.exptime_eighths : 0;
    r.last_access_unix = UnixTime32(w.last_access + unix_offset_);
    r.cas = w.cas;
    r.delta_ms = w.delta_ms;
    r.rate_count = w.read_rate.count;
    r.rate_aux = w.read_rate.aux;
    r.frequency = w.frequency;
    r.fetched = w.fetched;
    r.invalidated = w.invalidated;
    r.binary_key = w.binary_key;
    r.flash_stub = w.flash_stub;
    const int hotness = HotnessClass(w.frequency, now_s - w.last_access);
    items_++;
    if (RecordSize(r) <= kCopyUnderLock) {
      AppendRecord(&buffers_[hotness], r);
      counts_[hotness]++;
    } else {
      pending_.push_back(Pending{r, w.Pin(), hotness});
    }
  }

  // After the lock: a record too big for a shared block gets a block of its
  // own, written from the item's memory.
  void Add(const Record& r, int hotness) {
    if (RecordSize(r) < options_.block_bytes) {
      AppendRecord(&buffers_[hotness], r);
      counts_[hotness]++;
      return;
    }
    std::string head(RecordHeadSize(r) + r.key.size(), '\0');
    EncodeRecordHead(head.data(), r);
    out_->WriteBlock(kBlockItems, static_cast<uint8_t>(hotness), 1, {head, r.value});
  }

  void Flush(int hotness) {
    if (counts_[hotness] == 0) return;
    out_->WriteBlock(kBlockItems, static_cast<uint8_t>(hotness), counts_[hotness], {buffers_[hotness]});
    buffers_[hotness].clear();
    counts_[hotness] = 0;
  }

  ItemStore* store_;
  BlockWriter* out_;
  const SnapshotWriteOptions& options_;
  const int64_t unix_offset_;   // Unix time of store time 0
  std::string buffers_[kHotnessClasses];
  uint32_t counts_[kHotnessClasses] = {};
  std::vector<Pending> pending_;
  uint64_t items_ = 0;
};

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The end block of a finished walk: its counts, the store's counters as they
// are after it, and the flash tier's identity.
EndBlock EndOfWalk(ItemStore* store, const SnapshotWalk& walk, const BlockWriter& out,
                   const SnapshotWriteOptions& options) {
  EndBlock end;
  end.items = walk.items();
  end.item_blocks = out.blocks();
  end.cas_counter = store->CasCounter();
  end.finished_unix = store->config().clock->UnixSeconds();
  end.recompute_spreads = store->RecomputeSpreads();
  // A delayed flush_all's deadline, read after the walk, so that one issued
  // while it ran is in the file too: items walked before it came are in the
  // file, and the loader flushes them as this store does (skipped once the
  // deadline has passed, hidden when it comes otherwise). Converted with the
  // records' own offset, so that "last access before the deadline" is the
  // same comparison in the file as in the store.
  const int64_t flush_deadline = store->FlushDeadline();
  if (flush_deadline != 0) end.flush_deadline_unix = std::max<int64_t>(1, flush_deadline + walk.unix_offset());
  FlashStore* flash = store->config().flash;
  if (options.flash_stubs && flash != nullptr) {
    // The stubs' records reach the device before the file that names them.
    if (options.sync ? flash->Sync() : flash->Flush()) {
      end.flash_identity = flash->Identity();
      end.flash_next_generation = flash->next_generation();
    }   // else: no identity, and the restart starts the tier empty
  }
  return end;
}

}  // namespace

SnapshotWriteResult WriteSnapshot(ItemStore* store, const std::string& path,
                                  const SnapshotWriteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SnapshotWriteResult result;
  const std::string tmp = path + ".tmp";
  // The cache's contents: readable by its owner only. O_NONBLOCK: a FIFO
  // left at <file>.tmp fails the write (ENXIO) instead of holding it, and a
  // stop, until a reader appears; a regular file ignores it.
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) {
    result.error = Errno("cannot create " + tmp, errno);
    return result;
  }
  BlockWriter out(fd, tmp);
  FileHeader header;
  header.memory_limit = store->memory_limit();
  header.item_size_max = store->item_size_max();
  header.written_unix = store->config().clock->UnixSeconds();
  header.block_target = static_cast<uint32_t>(options.block_bytes);
  out.WriteRaw(EncodeHeader(header));

  // From here on every change goes to the journal's other bitmap; the one
  // this file makes unneeded is cleared once it is in place.
  if (options.changes != nullptr) options.changes->Begin();
  SnapshotWalk walk(store, &out, options);
  const bool walked = !out.failed() && walk.Run();
  bool ok = walked;
  if (ok) ok = out.WriteBlock(kBlockEnd, 0, 0, {EncodeEndPayload(EndOfWalk(store, walk, out, options), kVersion)});
  if (ok && options.sync && fsync(fd) != 0) {
    result.error = Errno("fsync " + tmp, errno);
    ok = false;
  }
  if (close(fd) != 0 && ok) {
    result.error = Errno("closing " + tmp, errno);
    ok = false;
  }
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
    result.error = Errno("renaming " + tmp + " to " + path, errno);
    ok = false;
  }
  if (!ok) {
    if (result.error.empty()) result.error = out.error();
    result.cancelled = !walked && !out.failed();
    if (result.cancelled) result.error = "cancelled";
    unlink(tmp.c_str());
    result.seconds = SecondsSince(start);
    return result;
  }
  if (options.sync) {
    // The rename itself must survive a power loss.
    const int dir = open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      fsync(dir);
      close(dir);
    }
  }
  if (options.changes != nullptr) options.changes->Commit();
  result.ok = true;
  result.items = walk.items();
  result.bytes = out.bytes();
  result.seconds = SecondsSince(start);
  return result;
}

// ---------------------------------------------------------------------------
// Loader.

namespace {

// A few block buffers passed between the thread that reads and checks blocks
// and the one that restores them, in block order.
class BlockPipeline {
 public:
  BlockPipeline() {
    for (std::string& b : buffers_) free_.push_back(&b);
  }
  std::string* TakeFree() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return !free_.empty(); });
    std::string* b = free_.back();
    free_.pop_back();
    return b;
  }
  void PutFree(std::string* b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
    changed_.notify_all();
  }
  void PutReady(size_t block, std::string* b) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.emplace_back(block, b);
    changed_.notify_all();
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    changed_.notify_all();
  }
  // The next ready buffer and its block number; nullptr once all are done.
  std::string* TakeReady(size_t* block) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return !ready_.empty() || finished_; });
    if (ready_.empty()) return nullptr;
    std::string* b = ready_.front().second;
    *block = ready_.front().first;
    ready_.pop_front();
    return b;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::string buffers_[4];
  std::vector<std::string*> free_;
  std::deque<std::pair<size_t, std::string*>> ready_;
  bool finished_ = false;
};

// False, with the reason, when the file was written with another -I. Another
// -m is no reason to refuse it: the load restores hottest first without
// evicting, so a smaller cache keeps what fits (the rest counted as
// skipped_no_memory) and a larger one takes it all; nothing in the file
// depends on -m. (memcached refuses a memory file of another -m because the
// file is its slab memory; a herdless snapshot is records.)
bool SameItemSizeMax(const FileHeader& header, const ItemStore& store, std::string* error) {
  if (header.item_size_max == store.item_size_max()) return true;
  *error = "written with -m " + std::to_string(header.memory_limit >> 20) + " -I " +
           std::to_string(header.item_size_max) + ", this herdless runs -m " +
           std::to_string(store.memory_limit() >> 20) + " -I " + std::to_string(store.item_size_max());
  return false;
}

// A record as the store restores it: without evicting, so that a smaller
// cache keeps the hottest items (they come first).
RestoreRequest RestoreRequestOf(const Record& r) {
  RestoreRequest q;
  q.key = r.key;
  q.value = r.value;
  q.client_flags = r.client_flags;
  q.exptime_unix = r.exptime_unix;
  q.exptime_eighths = r.exptime_eighths;
  q.last_access_unix = r.last_access_unix;
  q.cas = r.cas;
  q.delta_ms = r.delta_ms;
  q.read_rate.count = r.rate_count;
  q.read_rate.aux = r.rate_aux;
  q.frequency = r.frequency;
  q.fetched = r.fetched;
  q.stale = r.invalidated;
  q.binary_key = r.binary_key;
  q.flash_stub = r.flash_stub;
  q.evict = false;
  return q;
}

void CountRestored(StoreStatus status, const Record& r, int64_t now_unix, SnapshotLoadResult* result) {
  switch (status) {
    case StoreStatus::kStored:
      result->loaded++;
      if (r.invalidated || (r.exptime_unix != 0 && r.exptime_unix <= now_unix)) result->stale++;
      break;
    case StoreStatus::kTooLarge: result->skipped_too_large++; break;
    case StoreStatus::kNoMemory: result->skipped_no_memory++; break;
    default: result->skipped_expired++; break;
  }
}

// Visits the records of every item block of a checked file in load order;
// returns the first error ("" if none): a block that changed since the
// check, skipped whole. Every item goes through the store's one append
// point, so a second restoring thread would only wait on it: from 2
// threads, one restores while another reads and checks the next blocks.
std::string RestoreBlocks(const SnapshotReader& reader, int threads,
                          const std::function<void(const Record&)>& restore) {
  std::string first_error;
  if (threads <= 1) {
    std::string buffer;
    for (size_t i = 0; i < reader.item_blocks(); i++) {
      std::string error;
      if (!reader.VisitBlock(i, &buffer, restore, &error) && first_error.empty()) first_error = error;
    }
    return first_error;
  }
  BlockPipeline pipeline;
  std::thread read_ahead([&] {
    for (size_t i = 0; i < reader.item_blocks(); i++) {
      std::string* buffer = pipeline.TakeFree();
      std::string error;
      if (reader.ReadCheckedBlock(i, buffer, &error)) {
        pipeline.PutReady(i, buffer);
      } else {
        if (first_error.empty()) first_error = error;
        pipeline.PutFree(buffer);
      }
    }
    pipeline.Finish();
  });
  size_t i;
  for (std::string* buffer; (buffer = pipeline.TakeReady(&i)) != nullptr;) {
    reader.VisitCheckedBlock(i, *buffer, restore);
    pipeline.PutFree(buffer);
  }
  read_ahead.join();
  return first_error;
}

}  // namespace

SnapshotLoadResult LoadSnapshotFrom(ItemStore* store, const SnapshotSource& source,
                                    const SnapshotLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SnapshotLoadResult result;
  result.file_bytes = source.Size();
  SnapshotReader reader(&source);
  if (!reader.Check(&result.error, options.threads)) {
    result.status = SnapshotLoadResult::Status::kInvalid;
    result.seconds = SecondsSince(start);
    return result;
  }
  result.header = reader.header();
  if (options.require_same_item_size_max && !SameItemSizeMax(result.header, *store, &result.error)) {
    result.status = SnapshotLoadResult::Status::kInvalid;
    result.seconds = SecondsSince(start);
    return result;
  }
  // No CAS handed out before the restart is handed out again.
  if (reader.end().cas_counter > 0) store->AdvanceCasPast(reader.end().cas_counter - 1);
  const int64_t now_unix = store->config().clock->UnixSeconds();
  const bool old = options.max_age_s > 0 && now_unix - result.header.written_unix > options.max_age_s;
  if (old && options.old_means_nothing) {
    result.status = SnapshotLoadResult::Status::kOld;
    result.seconds = SecondsSince(start);
    return result;
  }
  store->ReserveItems(reader.end().items);
  // The first TTL after the restart judges refresh windows as the writer did.
  store->RestoreRecomputeSpreads(reader.end().recompute_spreads);
  // The stop's snapshot of a flash tier: its values are kept if the files are
  // as that stop left them (FlashStore::AcceptRestart); else they are misses.
  FlashStore* flash = store->config().flash;
  const bool flash_kept = flash != nullptr &&
                          flash->AcceptRestart(reader.end().flash_identity, reader.end().flash_next_generation);
  // A delayed flush_all pending when the file was written (version 6), with
  // the store's rule: an item last stored or touched before its deadline is
  // flushed once the deadline is reached. One still ahead is set in this
  // store before anything is restored, so that it hides those items when it
  // comes (as the writer's store would have); once it has passed, they are
  // left out. (FlushAll finds a deadline due if the second turned meanwhile:
  // then it is one that passed.)
  const int64_t flush_deadline = reader.end().flush_deadline_unix;
  if (flush_deadline > now_unix) store->FlushAll(flush_deadline, /*client=*/false);
  const bool flush_pending = flush_deadline > now_unix && store->FlushDeadline() != 0;
  if (flush_pending) result.flush_pending_unix = flush_deadline;
  result.error = RestoreBlocks(reader, options.threads, [&](const Record& r) {
    if (options.changes != nullptr && options.changes->MayHaveChanged(r.key)) {
      result.skipped_changed++;
      return;
    }
    const bool before_flush = flush_deadline != 0 && r.last_access_unix < flush_deadline;
    if (before_flush && !flush_pending) {
      result.skipped_flushed++;
      return;
    }
    if (r.flash_stub && !flash_kept) {
      result.skipped_flash++;
      return;
    }
    RestoreRequest q = RestoreRequestOf(r);
    q.stale = q.stale || old;
    q.before_flush = before_flush;
    const StoreStatus status = store->Restore(q);
    if (old && status == StoreStatus::kStored && !r.invalidated) result.stale++;
    if (r.flash_stub && status == StoreStatus::kStored) result.flash_values++;
    if (r.flash_stub && status == StoreStatus::kNotFound) {
      result.skipped_flash++;   // its page was not as the stop left it
      return;
    }
    CountRestored(status, r, now_unix, &result);
  });
  // A block that changed after the check was skipped whole; the rest stands.
  result.status = result.error.empty() ? SnapshotLoadResult::Status::kLoaded
                                       : SnapshotLoadResult::Status::kInvalid;
  result.seconds = SecondsSince(start);
  return result;
}

SnapshotLoadResult LoadSnapshot(ItemStore* store, const std::string& path,
                                const SnapshotLoadOptions& options) {
  SnapshotLoadResult result;
  // O_NONBLOCK: a FIFO (or a device) at the path must not hold the start up
  // until a writer appears; it is refused below. A regular file ignores it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    result.status = errno == ENOENT ? SnapshotLoadResult::Status::kMissing
                                    : SnapshotLoadResult::Status::kUnreadable;
    result.error = Errno("cannot open " + path, errno);
    return result;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    result.status = SnapshotLoadResult::Status::kUnreadable;
    result.error = path + " is not a regular file";
    close(fd);
    return result;
  }
  FileSource source(fd, static_cast<uint64_t>(st.st_size));
  result = LoadSnapshotFrom(store, source, options);
  close(fd);
  return result;
}

}  // namespace herdless
