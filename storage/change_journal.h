// ChangeJournal: which keys changed since the snapshot on disk (-e) began, so
// that a start after a crash leaves those keys out instead of serving the
// values they had before (a value replaced or deleted since must never come
// back). Two bitmaps of key hashes in a file mapped shared (<snapshot>.changes):
// noting a change is one atomic OR, no system call, and the page cache keeps
// it when the process dies. A snapshot write calls Begin() before it walks
// the store (new changes go to the other bitmap) and Commit() once its file
// is in place (the bitmap of changes it holds is cleared), so the two bitmaps
// together always cover every change since the start of the file on disk. A
// key whose bit is set may also just share it with one that changed: a miss
// after the restart, never a wrong value. Thread-safe.
//
// A power loss or a kernel crash can lose the map's last pages; the file says
// whether herdless stopped cleanly and in which boot it last ran, and a
// journal from another boot without a clean stop marks every key changed.
#ifndef HERDLESS_STORAGE_CHANGE_JOURNAL_H_
#define HERDLESS_STORAGE_CHANGE_JOURNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace herdless {

class ChangeJournal {
 public:
  // What Open found of an earlier run's journal.
  enum class Found : uint8_t {
    kNone,      // no journal (or not one of this format): nothing is known, nothing is marked
    kJournal,   // the earlier run's changes, as it left them
    kLost,      // that run did not stop cleanly in an earlier boot: every key is marked
  };

  // Opens (or creates) the journal at `path`, mapped shared. `boot_id`
  // names this boot (/proc/sys/kernel/random/boot_id). Null with *error.
  static std::unique_ptr<ChangeJournal> Open(const std::string& path, std::string_view boot_id,
                                             std::string* error);
  ~ChangeJournal();
  ChangeJournal(const ChangeJournal&) = delete;
  ChangeJournal& operator=(const ChangeJournal&) = delete;

  Found found() const { return found_; }

  // A key's value, expiry or presence changed (after the change is made).
  void Noted(std::string_view key);
  // Every key changed (flush_all).
  void NotedAll();
  // Whether `key` may have changed since the snapshot on disk began.
  bool MayHaveChanged(std::string_view key) const;

  // The CAS ceiling: no CAS at or above it has been handed out. The store
  // raises it ahead of its counter; a start after a crash resumes the counter
  // above it, so that no CAS, and no lease token, is handed out twice.
  void ReserveCas(uint64_t ceiling);
  uint64_t CasCeiling() const;

  // A snapshot write: Begin before its walk, Commit once its file replaced the old one.
  void Begin();
  void Commit();

  // The run's start (not stopped cleanly yet, this boot), and its orderly
  // stop once the stop's snapshot, which holds every change, is in place:
  // both bitmaps cleared, the map synced to disk.
  void MarkRunning();
  void MarkStopped();

  static constexpr int kBitsLog2 = 25;   // per bitmap: 4 MiB
  static constexpr size_t kHeaderSize = 4096;

 private:
  ChangeJournal(int fd, char* map, size_t size, Found found, std::string boot_id);
  uint64_t* Bitmap(int i) const;
  std::atomic_ref<uint32_t> AllFlag(int i) const;
  void Clear(int i);
  void WriteBootId();

  const int fd_;
  char* const map_;
  const size_t size_;
  const Found found_;
  const std::string boot_id_;
  std::atomic<int> current_{0};
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_CHANGE_JOURNAL_H_
