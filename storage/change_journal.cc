#include "storage/change_journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <xxhash.h>

namespace herdless {

namespace {

// The header: magic, version, the bitmaps' size, whether the last run
// stopped cleanly, each bitmap's "every key changed" flag, the boot the last
// run started in, the CAS ceiling. The bitmaps follow at kHeaderSize.
constexpr char kMagic[8] = {'H', 'R', 'D', 'L', 'C', 'H', 'G', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kVersionAt = 8;
constexpr size_t kBitsAt = 12;
constexpr size_t kCleanAt = 16;
constexpr size_t kAllAt = 20;      // two uint32_t
constexpr size_t kBootIdAt = 32;
constexpr size_t kBootIdSize = 48;
constexpr size_t kCasCeilingAt = 80;
constexpr uint64_t kLostCasValues = uint64_t{1} << 32;

constexpr size_t kBitmapBytes = size_t{1} << (ChangeJournal::kBitsLog2 - 3);
constexpr size_t kFileSize = ChangeJournal::kHeaderSize + 2 * kBitmapBytes;

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void Store32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }

uint64_t BitOf(std::string_view key) {
  return XXH3_64bits(key.data(), key.size()) >> (64 - ChangeJournal::kBitsLog2);
}

// Every block of the file allocated, before the first store into the map: a
// store into a page without a block must allocate one in the page fault,
// and on a full file system that fault is SIGBUS, the whole process. So the
// journal is never sparse (a journal of an earlier herdless, which punched
// its bitmaps out, gets its holes filled here) and Clear zeroes in place.
// It costs the file's full size on disk, 8 MiB + 4 KiB, from the start (a
// sparse journal took as much once its bitmaps had been written all over).
// This holds where a block, once allocated, is overwritten in place (ext4,
// XFS, tmpfs); a copy-on-write file system (btrfs without nodatacow, ZFS)
// needs a new block for each write, which no allocation ahead reserves.
bool AllocateBlocks(int fd, const std::string& path, std::string* error) {
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(kFileSize));
  if (err == 0) return true;
  *error = Errno("cannot allocate the " + std::to_string(kFileSize) + " bytes of " + path +
                     " (a change noted into a page without its block would kill herdless on a full disk)",
                 err);
  return false;
}

}  // namespace

std::unique_ptr<ChangeJournal> ChangeJournal::Open(const std::string& path, std::string_view boot_id,
                                                   std::string* error) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = Errno("cannot open " + path, errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = path + " is not a regular file";
    close(fd);
    return nullptr;
  }
  char header[kBootIdAt + kBootIdSize] = {};
  const bool ours = static_cast<size_t>(st.st_size) == kFileSize &&
                    pread(fd, header, sizeof(header), 0) == static_cast<ssize_t>(sizeof(header)) &&
                    std::memcmp(header, kMagic, sizeof(kMagic)) == 0 &&
                    Load32(header + kVersionAt) == kVersion && Load32(header + kBitsAt) == kBitsLog2;
  // Anything else starts a new journal: a file of zeros.
  if (!ours && (ftruncate(fd, 0) != 0 || ftruncate(fd, static_cast<off_t>(kFileSize)) != 0)) {
    *error = Errno("cannot size " + path, errno);
    close(fd);
    return nullptr;
  }
  if (!AllocateBlocks(fd, path, error)) {
    close(fd);
    return nullptr;
  }
  void* map = mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    *error = Errno("cannot map " + path, errno);
    close(fd);
    return nullptr;
  }
  Found found = Found::kNone;
  if (ours) {
    const bool clean = Load32(header + kCleanAt) != 0;
    const std::string_view last_boot(header + kBootIdAt, strnlen(header + kBootIdAt, kBootIdSize));
    found = clean || last_boot == boot_id ? Found::kJournal : Found::kLost;
  }
  std::unique_ptr<ChangeJournal> journal(
      new ChangeJournal(fd, static_cast<char*>(map), kFileSize, found, std::string(boot_id)));
  if (!ours) {
    std::memcpy(journal->map_, kMagic, sizeof(kMagic));
    Store32(journal->map_ + kVersionAt, kVersion);
    Store32(journal->map_ + kBitsAt, kBitsLog2);
    journal->WriteBootId();
  }
  if (found == Found::kLost) {
    // What that run changed last may never have reached the disk: every
    // key, until two snapshots of this run have been committed; and its
    // last CAS ceilings: the counter skips more values than a run hands
    // out between two writebacks of the page cache (seconds).
    journal->AllFlag(0).store(1, std::memory_order_relaxed);
    journal->AllFlag(1).store(1, std::memory_order_relaxed);
    journal->ReserveCas(journal->CasCeiling() + kLostCasValues);
  }
  return journal;
}

ChangeJournal::ChangeJournal(int fd, char* map, size_t size, Found found, std::string boot_id)
    : fd_(fd), map_(map), size_(size), found_(found), boot_id_(std::move(boot_id)) {}

ChangeJournal::~ChangeJournal() {
  munmap(map_, size_);
  close(fd_);
}

uint64_t* ChangeJournal::Bitmap(int i) const {
  return reinterpret_cast<uint64_t*>(map_ + kHeaderSize + static_cast<size_t>(i) * kBitmapBytes);
}

std::atomic_ref<uint32_t> ChangeJournal::AllFlag(int i) const {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(map_ + kAllAt + 4 * static_cast<size_t>(i)));
}

void ChangeJournal::Noted(std::string_view key) {
  const uint64_t bit = BitOf(key);
  std::atomic_ref<uint64_t> word(Bitmap(current_.load(std::memory_order_relaxed))[bit / 64]);
  const uint64_t mask = uint64_t{1} << (bit % 64);
  if ((word.load(std::memory_order_relaxed) & mask) == 0) word.fetch_or(mask, std::memory_order_relaxed);
}

void ChangeJournal::NotedAll() { AllFlag(current_.load(std::memory_order_relaxed)).store(1, std::memory_order_relaxed); }

bool ChangeJournal::MayHaveChanged(std::string_view key) const {
  const uint64_t bit = BitOf(key);
  const uint64_t mask = uint64_t{1} << (bit % 64);
  for (int i = 0; i < 2; i++) {
    if (AllFlag(i).load(std::memory_order_relaxed) != 0) return true;
    if ((std::atomic_ref<uint64_t>(Bitmap(i)[bit / 64]).load(std::memory_order_relaxed) & mask) != 0) return true;
  }
  return false;
}

void ChangeJournal::ReserveCas(uint64_t ceiling) {
  std::atomic_ref<uint64_t> at(*reinterpret_cast<uint64_t*>(map_ + kCasCeilingAt));
  uint64_t now = at.load(std::memory_order_relaxed);
  while (now < ceiling && !at.compare_exchange_weak(now, ceiling, std::memory_order_relaxed)) {
  }
}

uint64_t ChangeJournal::CasCeiling() const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(map_ + kCasCeilingAt)).load(std::memory_order_relaxed);
}

void ChangeJournal::Begin() { current_.store(1 - current_.load(std::memory_order_relaxed), std::memory_order_seq_cst); }

void ChangeJournal::Commit() { Clear(1 - current_.load(std::memory_order_relaxed)); }

// A bitmap is emptied word by word in place, never punched out of the file
// (AllocateBlocks: a hole would make the next change on a full disk a
// SIGBUS). Only words that are set are written, so a page nothing was noted
// into stays clean: the clear reads the 4 MiB bitmap into the page cache
// (reclaimable) but dirties only the pages changes touched. A change noted
// into it after Begin was made before Begin, so the snapshot just committed
// holds it: losing its bit to the clear is harmless.
void ChangeJournal::Clear(int i) {
  uint64_t* words = Bitmap(i);
  for (size_t w = 0; w < kBitmapBytes / 8; w++) {
    std::atomic_ref<uint64_t> word(words[w]);
    if (word.load(std::memory_order_relaxed) != 0) word.store(0, std::memory_order_relaxed);
  }
  AllFlag(i).store(0, std::memory_order_relaxed);
}

void ChangeJournal::WriteBootId() {
  char boot[kBootIdSize] = {};
  std::memcpy(boot, boot_id_.data(), std::min(boot_id_.size(), kBootIdSize - 1));
  std::memcpy(map_ + kBootIdAt, boot, kBootIdSize);
}

void ChangeJournal::MarkRunning() {
  WriteBootId();
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(map_ + kCleanAt)).store(0, std::memory_order_relaxed);
  // On disk before the first change: a power loss from here on finds a run
  // of this boot that did not stop.
  msync(map_, kHeaderSize, MS_SYNC);
}

void ChangeJournal::MarkStopped() {
  // The stop's snapshot holds every change (nothing changed once it began):
  // a bitmap left over from a write that was cancelled or failed is cleared too.
  Clear(0);
  Clear(1);
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(map_ + kCleanAt)).store(1, std::memory_order_relaxed);
  msync(map_, size_, MS_SYNC);
  fsync(fd_);
}

}  // namespace herdless
