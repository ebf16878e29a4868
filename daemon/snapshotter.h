// Snapshotter: the daemon's side of warm restarts (-e <file>). Load() runs at
// start, before any connection is accepted: a file that is not a valid
// snapshot is moved to <file>.bad and the cache starts empty. With
// -o snapshot_interval a background thread (at a lower CPU priority than the
// workers) writes the file every interval, counted from the end of the last
// write. At an orderly stop the server calls StopPeriodic() (a write in
// progress is cancelled), stops its workers, then WriteFinal(), which alone
// records the values on flash (-o ext_path: a restart keeps the files only if
// they are as that write left them). Every change made meanwhile is noted in
// <file>.changes, so that a start after a crash leaves out the keys changed
// since the file on disk began. Every outcome is logged and counted for
// `stats` (snapshot_*). The file format and the write itself are
// storage/snapshot.h's. Thread-safe.
#ifndef HERDLESS_DAEMON_SNAPSHOTTER_H_
#define HERDLESS_DAEMON_SNAPSHOTTER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "protocol/server_info.h"

namespace herdless {

class ChangeJournal;
class ItemStore;
struct SnapshotLoadResult;

class Snapshotter {
 public:
  // `store` must outlive it; `path` should be absolute (-d changes directory).
  // `max_age_s`, `old_means_nothing`: SnapshotLoadOptions' (-o restore_max_age).
  Snapshotter(ItemStore* store, std::string path, uint32_t interval_s, int load_threads,
              int64_t max_age_s = 0, bool old_means_nothing = false);
  ~Snapshotter();   // StopPeriodic()
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  void Load();
  void StartPeriodic();   // no-op without an interval or a change journal
  void StopPeriodic();
  // The last write, once nothing else changes the store. False if it failed.
  bool WriteFinal();

  SnapshotFigures Figures() const;

 private:
  // Load's steps: the change journal (<file>.changes, storage/change_journal.h)
  // opened first, so that keys changed since the file began stay out; the
  // load's outcome logged and counted.
  void OpenJournal();
  // Without the journal nothing tells which keys changed since the file
  // began (its last run may have crashed), nor later which ones this run
  // changes: the file is neither restored nor left for a later start (as
  // memcached removes its memory file's metadata once read), and no periodic
  // write makes one that a crash would leave. The orderly stop's write is exact.
  void RemoveUnjournaled();
  void Report(const SnapshotLoadResult& r);
  void Periodic();
  // flash_stubs: the stop's write (SnapshotWriteOptions::flash_stubs).
  bool Write(const char* why, bool flash_stubs = false);

  ItemStore* const store_;
  const std::string path_;
  const uint32_t interval_s_;
  const int load_threads_;
  const int64_t max_age_s_;
  const bool old_means_nothing_;

  mutable std::mutex mu_;          // guards figures_ and stop_
  std::condition_variable wake_;
  bool stop_ = false;
  SnapshotFigures figures_;
  std::atomic<bool> cancel_{false};
  std::unique_ptr<ChangeJournal> journal_;   // null if it could not be opened
  std::thread thread_;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_SNAPSHOTTER_H_
