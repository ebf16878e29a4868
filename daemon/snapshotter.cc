#include "daemon/snapshotter.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "daemon/log.h"
#include "storage/change_journal.h"
#include "storage/item_store.h"
#include "storage/snapshot.h"

namespace herdless {

namespace {

// The periodic writer yields the CPU to the workers (a nice value is per
// thread on Linux).
constexpr int kWriterNice = 10;

double Megabytes(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

// This boot's id: a run that did not stop in another boot may have lost its
// journal's last pages with the machine.
std::string BootId() {
  char id[64] = {};
  FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f == nullptr) return "";
  const size_t n = std::fread(id, 1, sizeof(id) - 1, f);
  std::fclose(f);
  std::string s(id, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Snapshotter::Snapshotter(ItemStore* store, std::string path, uint32_t interval_s, int load_threads,
                         int64_t max_age_s, bool old_means_nothing)
    : store_(store),
      path_(std::move(path)),
      interval_s_(interval_s),
      load_threads_(load_threads),
      max_age_s_(max_age_s),
      old_means_nothing_(old_means_nothing) {
  figures_.enabled = true;
}

Snapshotter::~Snapshotter() { StopPeriodic(); }

void Snapshotter::Load() {
  OpenJournal();
  if (journal_ == nullptr) {
    RemoveUnjournaled();
    return;
  }
  SnapshotLoadOptions options;
  options.threads = load_threads_;
  options.max_age_s = max_age_s_;
  options.old_means_nothing = old_means_nothing_;
  options.changes = journal_.get();
  const SnapshotLoadResult r = LoadSnapshot(store_, path_, options);
  Report(r);
  // CAS values the last run handed out after its file was written (a crash) stay unused.
  if (journal_->CasCeiling() > 0) store_->AdvanceCasPast(journal_->CasCeiling() - 1);
  journal_->MarkRunning();
  store_->SetChangeJournal(journal_.get());
}

void Snapshotter::OpenJournal() {
  const std::string path = path_ + ".changes";
  std::string error;
  journal_ = ChangeJournal::Open(path, BootId(), &error);
  if (journal_ == nullptr) {
    Log(LogLevel::kWarning,
        "snapshot: no change journal (%s): nothing would tell which keys a crash left changed, "
        "so no snapshot is restored or written periodically; the orderly stop writes one",
        error.c_str());
    return;
  }
  switch (journal_->found()) {
    case ChangeJournal::Found::kNone:
      Log(LogLevel::kNotice, "snapshot: started the change journal %s", path.c_str());
      break;
    case ChangeJournal::Found::kJournal:
      break;
    case ChangeJournal::Found::kLost:
      Log(LogLevel::kWarning,
          "snapshot: the last run did not stop, in an earlier boot (a power loss?): its change "
          "journal %s may have lost pages, so no key of the snapshot is restored", path.c_str());
      break;
  }
}

void Snapshotter::RemoveUnjournaled() {
  if (unlink(path_.c_str()) == 0) {
    Log(LogLevel::kWarning, "snapshot: removed %s without restoring it", path_.c_str());
  } else if (errno != ENOENT) {
    Log(LogLevel::kWarning,
        "snapshot: could not remove %s (%s): a later start with its journal would restore it "
        "although this run changes the cache", path_.c_str(), std::strerror(errno));
  }
}

void Snapshotter::Report(const SnapshotLoadResult& r) {
  using Status = SnapshotLoadResult::Status;
  switch (r.status) {
    case Status::kMissing:
      Log(LogLevel::kNotice, "snapshot: no file %s yet, starting empty", path_.c_str());
      return;
    case Status::kOld:
      Log(LogLevel::kNotice, "snapshot: %s is older than restore_max_age; starting empty",
          path_.c_str());
      return;
    case Status::kUnreadable:
      Log(LogLevel::kWarning, "snapshot: %s; starting empty (the file is left where it is)",
          r.error.c_str());
      return;
    case Status::kInvalid: {
      // Kept for a post-mortem, out of the way of the next write.
      const std::string bad = path_ + ".bad";
      std::string moved = "moved to " + bad;
      if (std::rename(path_.c_str(), bad.c_str()) != 0) {
        moved = "could not move it to " + bad + ": " + std::strerror(errno);
      }
      Log(LogLevel::kWarning, "snapshot: %s is not a usable snapshot: %s; %s; starting %s",
          path_.c_str(), r.error.c_str(), moved.c_str(),
          r.loaded == 0 ? "empty" : ("with the " + std::to_string(r.loaded) +
                                     " items of its blocks that were whole").c_str());
      break;
    }
    case Status::kLoaded:
      Log(LogLevel::kNotice,
          "snapshot: loaded %llu items (%llu of them stale) from %s (%.1f MB, written %lld s ago) "
          "in %.2f s; skipped %llu changed since, %llu flushed, %llu expired, %llu over -I, %llu beyond -m",
          U(r.loaded), U(r.stale), path_.c_str(), Megabytes(r.file_bytes),
          static_cast<long long>(store_->config().clock->UnixSeconds() - r.header.written_unix),
          r.seconds, U(r.skipped_changed), U(r.skipped_flushed), U(r.skipped_expired), U(r.skipped_too_large),
          U(r.skipped_no_memory));
      if (r.flush_pending_unix != 0) {
        Log(LogLevel::kNotice,
            "snapshot: the last run's delayed flush_all is pending: the items stored before Unix time %lld "
            "(in %lld s) are flushed then",
            static_cast<long long>(r.flush_pending_unix),
            static_cast<long long>(r.flush_pending_unix - store_->config().clock->UnixSeconds()));
      }
      if (r.header.memory_limit != store_->memory_limit()) {
        Log(LogLevel::kNotice, "snapshot: %s was written with -m %llu, this herdless runs -m %llu: "
            "loaded hottest first into this -m", path_.c_str(), U(r.header.memory_limit >> 20),
            U(store_->memory_limit() >> 20));
      }
      if (r.skipped_no_memory > 0) {
        Log(LogLevel::kWarning,
            "snapshot: %llu items did not fit in -m %llu (the snapshot was written with -m %llu): "
            "the coldest were left out",
            U(r.skipped_no_memory), U(store_->memory_limit() >> 20), U(r.header.memory_limit >> 20));
      }
      if (store_->config().flash != nullptr) {
        Log(LogLevel::kNotice, "snapshot: flash tier %s: %llu values on flash restored, %llu dropped%s",
            r.flash_values > 0 ? "reopened" : "started empty", U(r.flash_values), U(r.skipped_flash),
            r.skipped_flash > 0 && r.flash_values == 0
                ? " (its files are not as the last orderly stop left them, or its settings changed)"
                : "");
      }
      if (r.skipped_too_large > 0) {
        Log(LogLevel::kWarning, "snapshot: %llu items are larger than -I %llu and were left out",
            U(r.skipped_too_large), U(store_->item_size_max()));
      }
      break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  figures_.loaded_items = r.loaded;
  figures_.load_skipped_expired = r.skipped_expired;
  figures_.load_skipped_too_large = r.skipped_too_large;
  figures_.load_skipped_no_memory = r.skipped_no_memory;
  figures_.load_skipped_changed = r.skipped_changed;
  figures_.load_skipped_flushed = r.skipped_flushed;
  figures_.load_ms = static_cast<uint64_t>(r.seconds * 1000);
}

void Snapshotter::StartPeriodic() {
  // Without the journal a periodic file would be restored after a crash as it is.
  if (interval_s_ == 0 || journal_ == nullptr || thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread(&Snapshotter::Periodic, this);
}

void Snapshotter::StopPeriodic() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cancel_.store(true);
  wake_.notify_all();
  thread_.join();
  cancel_.store(false);
}

void Snapshotter::Periodic() {
  // Signals are the main loop's.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kWriterNice);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (wake_.wait_for(lock, std::chrono::seconds(interval_s_), [this] { return stop_; })) break;
    lock.unlock();
    Write("periodic");
    lock.lock();
  }
}

bool Snapshotter::WriteFinal() {
  const bool ok = Write("stop", /*flash_stubs=*/true);
  // Exact: nothing changed since it began. (After a failed write the journal
  // still covers every change since the file on disk began.)
  if (ok && journal_ != nullptr) journal_->MarkStopped();
  return ok;
}

bool Snapshotter::Write(const char* why, bool flash_stubs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    figures_.in_progress = true;
  }
  SnapshotWriteOptions options;
  options.cancel = &cancel_;
  options.flash_stubs = flash_stubs;
  options.changes = journal_.get();
  const SnapshotWriteResult r = WriteSnapshot(store_, path_, options);
  std::lock_guard<std::mutex> lock(mu_);
  figures_.in_progress = false;
  if (r.ok) {
    figures_.writes++;
    figures_.last_time = store_->config().clock->UnixSeconds();
    figures_.last_duration_ms = static_cast<uint64_t>(r.seconds * 1000);
    figures_.last_bytes = r.bytes;
    figures_.last_items = r.items;
    Log(LogLevel::kNotice, "snapshot (%s): wrote %llu items (%.1f MB) to %s in %.2f s", why,
        U(r.items), Megabytes(r.bytes), path_.c_str(), r.seconds);
  } else if (r.cancelled) {
    Log(LogLevel::kNotice, "snapshot (%s): cancelled for the stop", why);
  } else {
    figures_.failures++;
    Log(LogLevel::kWarning, "snapshot (%s) failed: %s; the previous snapshot is kept", why,
        r.error.c_str());
  }
  return r.ok;
}

SnapshotFigures Snapshotter::Figures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return figures_;
}

}  // namespace herdless
