// libFuzzer target for the change journal's reader (storage/change_journal.h,
// -e's <file>.changes). The input's first ChangeJournal::kHeaderSize bytes
// (zero-padded) are the file's header, the rest the start of its first bitmap,
// in a file of the journal's size, so that mutations reach the checks of an
// existing journal. Checked: no crash or undefined behaviour; a journal of an
// earlier boot that did not stop marks every key; a noted key is marked; a
// clean stop clears every mark, and another boot then finds it whole.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "storage/change_journal.h"

namespace {

constexpr char kBoot[] = "0f4b7a1e-0000-4000-8000-00000000000a";
constexpr char kOtherBoot[] = "0f4b7a1e-0000-4000-8000-00000000000b";

const std::string& Path() {
  // In memory where there is a tmpfs: each run syncs the file.
  static const std::string path = [] {
    char shm[] = "/dev/shm/herdless-journal-fuzz-XXXXXX";
    char tmp[] = "/tmp/herdless-journal-fuzz-XXXXXX";
    const char* dir = mkdtemp(shm);
    if (dir == nullptr) dir = mkdtemp(tmp);
    if (dir == nullptr) std::abort();
    static std::string made;
    made = dir;
    std::atexit([] {
      unlink((made + "/snapshot.changes").c_str());
      rmdir(made.c_str());
    });
    return made + "/snapshot.changes";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using herdless::ChangeJournal;
  constexpr size_t kFileSize = ChangeJournal::kHeaderSize + 2 * (size_t{1} << (ChangeJournal::kBitsLog2 - 3));
  const std::string& path = Path();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  // Most inputs are a whole-size file; an input starting with 0xff is taken
  // as it is (any size), to reach the reader's size check.
  const bool as_is = size > 0 && data[0] == 0xff;
  if ((!as_is && ftruncate(fd, static_cast<off_t>(kFileSize)) != 0) ||
      (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size))) {
    std::abort();
  }
  close(fd);

  std::string error;
  auto journal = ChangeJournal::Open(path, kBoot, &error);
  if (journal == nullptr) std::abort();   // a regular file of ours: always opens
  const std::string key(reinterpret_cast<const char*>(data), size < 250 ? size : 250);
  if (journal->found() == ChangeJournal::Found::kLost && !journal->MayHaveChanged(key)) std::abort();
  journal->MarkRunning();
  journal->Noted(key);
  if (!journal->MayHaveChanged(key)) std::abort();
  journal->Begin();
  journal->Noted(key);
  journal->Commit();
  if (!journal->MayHaveChanged(key)) std::abort();   // noted after Begin: kept by Commit
  journal->MarkStopped();
  if (journal->MayHaveChanged(key)) std::abort();
  journal.reset();

  journal = ChangeJournal::Open(path, kOtherBoot, &error);
  if (journal == nullptr || journal->found() != ChangeJournal::Found::kJournal) std::abort();
  if (journal->MayHaveChanged(key) || journal->MayHaveChanged("another key")) std::abort();
  return 0;
}
