#include "storage/change_journal.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "storage/snapshot.h"

namespace herdless {
namespace {

constexpr char kBoot[] = "0f4b7a1e-0000-4000-8000-000000000001";
constexpr char kNextBoot[] = "0f4b7a1e-0000-4000-8000-000000000002";

class ChangeJournalTest : public ::testing::Test {
 protected:
  ChangeJournalTest() {
    char dir[] = "/tmp/herdless-journal-test-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/snapshot.changes";
    snapshot_ = dir_ + "/snapshot";
    clock_.AdvanceSeconds(100);
  }
  ~ChangeJournalTest() override {
    for (const std::string& p : {path_, snapshot_, snapshot_ + ".tmp"}) unlink(p.c_str());
    rmdir(dir_.c_str());
  }

  std::unique_ptr<ChangeJournal> Open(const char* boot = kBoot) {
    std::string error;
    auto j = ChangeJournal::Open(path_, boot, &error);
    EXPECT_NE(j, nullptr) << error;
    return j;
  }

  // A store's settings, on this fixture's clock (at store time 100).
  StoreConfig Config() {
    StoreConfig config;
    config.memory_limit = 16 << 20;
    config.clock = &clock_;
    config.random = &random_;
    return config;
  }

  std::string dir_;
  std::string path_;
  std::string snapshot_;
  ManualClock clock_;
  DefaultRandom random_{1};
};

TEST_F(ChangeJournalTest, ANewJournalMarksOnlyWhatChanged) {
  auto j = Open();
  EXPECT_EQ(j->found(), ChangeJournal::Found::kNone);
  EXPECT_FALSE(j->MayHaveChanged("a"));
  j->Noted("a");
  EXPECT_TRUE(j->MayHaveChanged("a"));
  int marked = 0;
  for (int i = 0; i < 1000; i++) marked += j->MayHaveChanged("other" + std::to_string(i));
  EXPECT_EQ(marked, 0);
}

TEST_F(ChangeJournalTest, ACommittedSnapshotClearsTheChangesItHolds) {
  auto j = Open();
  j->Noted("before");
  j->Begin();            // a write starts: "before" is in it
  j->Noted("during");    // may or may not be in it
  EXPECT_TRUE(j->MayHaveChanged("before"));   // until the write is in place
  j->Commit();
  EXPECT_FALSE(j->MayHaveChanged("before"));
  EXPECT_TRUE(j->MayHaveChanged("during"));
  j->Begin();            // a write that fails: nothing is cleared
  j->Noted("after");
  EXPECT_TRUE(j->MayHaveChanged("during"));
  j->Begin();            // the next one succeeds: it holds "during" and "after"
  j->Noted("last");
  j->Commit();
  EXPECT_TRUE(j->MayHaveChanged("last"));
  EXPECT_FALSE(j->MayHaveChanged("after"));
  // "during" shares the bitmap of the changes since this write began: still
  // marked (a miss after a crash, never a wrong value) until the next write.
  j->Begin();
  j->Commit();
  EXPECT_FALSE(j->MayHaveChanged("during"));
}

TEST_F(ChangeJournalTest, AFlushMarksEveryKeyUntilASnapshotHoldsIt) {
  auto j = Open();
  j->NotedAll();
  EXPECT_TRUE(j->MayHaveChanged("anything"));
  j->Begin();
  j->Commit();
  EXPECT_FALSE(j->MayHaveChanged("anything"));
}

TEST_F(ChangeJournalTest, ACrashKeepsTheChangesAPowerLossMarksEverything) {
  {
    auto j = Open();
    j->MarkRunning();
    j->Noted("changed");
  }   // the process dies: no MarkStopped
  {
    auto j = Open();   // the same boot: the page cache kept every change
    EXPECT_EQ(j->found(), ChangeJournal::Found::kJournal);
    EXPECT_TRUE(j->MayHaveChanged("changed"));
    EXPECT_FALSE(j->MayHaveChanged("unchanged"));
  }
  {
    auto j = Open(kNextBoot);   // the machine went down with it
    EXPECT_EQ(j->found(), ChangeJournal::Found::kLost);
    EXPECT_TRUE(j->MayHaveChanged("unchanged"));
    EXPECT_GE(j->CasCeiling(), uint64_t{1} << 32);   // its last ceilings may be lost too
    j->MarkRunning();
  }
  {
    // It crashes again before a snapshot of its own: still nothing trusted.
    auto j = Open(kNextBoot);
    EXPECT_EQ(j->found(), ChangeJournal::Found::kJournal);
    EXPECT_TRUE(j->MayHaveChanged("unchanged"));
    for (int i = 0; i < 2; i++) {   // two snapshots of its own: both bitmaps start over
      j->Begin();
      j->Commit();
    }
    EXPECT_FALSE(j->MayHaveChanged("unchanged"));
  }
}

TEST_F(ChangeJournalTest, AStopMakesAnotherBootTrustIt) {
  {
    auto j = Open();
    j->MarkRunning();
    j->Noted("changed");
    j->Begin();   // a periodic write, cancelled by the stop
    j->Noted("later");
    j->Begin();   // the stop's write
    j->Commit();
    j->MarkStopped();
  }
  auto j = Open(kNextBoot);
  EXPECT_EQ(j->found(), ChangeJournal::Found::kJournal);
  EXPECT_FALSE(j->MayHaveChanged("changed"));
  EXPECT_FALSE(j->MayHaveChanged("later"));
}

TEST_F(ChangeJournalTest, AnotherFileIsStartedOver) {
  {
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "not a journal", 13), 13);
    close(fd);
  }
  auto j = Open();
  EXPECT_EQ(j->found(), ChangeJournal::Found::kNone);
  EXPECT_FALSE(j->MayHaveChanged("a"));
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size),
            ChangeJournal::kHeaderSize + 2 * (size_t{1} << (ChangeJournal::kBitsLog2 - 3)));
}

constexpr size_t kJournalBytes = ChangeJournal::kHeaderSize + 2 * (size_t{1} << (ChangeJournal::kBitsLog2 - 3));

size_t AllocatedBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_blocks) * 512 : 0;
}

// Changes spread over every page of the current bitmap (20,000 keys over its
// 1,024 pages).
void NoteAllOver(ChangeJournal* j, const std::string& prefix) {
  for (int i = 0; i < 20000; i++) j->Noted(prefix + std::to_string(i));
}

// A store into a journal page without a block is a SIGBUS on a full disk:
// the file is allocated whole when opened (a sparse journal of an earlier
// herdless included) and a committed snapshot clears it in place, never by
// punching holes.
TEST_F(ChangeJournalTest, ItsBlocksStayAllocated) {
  {
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kJournalBytes)), 0);   // sparse, as they were left
    close(fd);
    auto j = Open();
    j->MarkRunning();
    j->Begin();
    j->Commit();
    j->MarkStopped();
  }
  auto j = Open();
  EXPECT_EQ(j->found(), ChangeJournal::Found::kJournal);
  EXPECT_GE(AllocatedBytes(path_), kJournalBytes);
  j->MarkRunning();
  NoteAllOver(j.get(), "a");
  j->Begin();
  j->Commit();   // the bitmap "a" went to is cleared
  EXPECT_FALSE(j->MayHaveChanged("a1"));
  EXPECT_GE(AllocatedBytes(path_), kJournalBytes);
  j->MarkStopped();
  EXPECT_GE(AllocatedBytes(path_), kJournalBytes);
}

// A small tmpfs of its own (root, as CI runs; skipped where mounting is not
// permitted), unmounted at the end.
class FullDiskTest : public ChangeJournalTest {
 protected:
  bool Mount(const char* size) {
    mount_ = dir_ + "/fs";
    if (mkdir(mount_.c_str(), 0700) != 0) return false;
    mounted_ = mount("tmpfs", mount_.c_str(), "tmpfs", 0, size) == 0;
    return mounted_;
  }
  ~FullDiskTest() override {
    if (mounted_) umount2(mount_.c_str(), MNT_DETACH);
    rmdir(mount_.c_str());
  }
  // Writes until the file system is full.
  void Fill() {
    const int fd = open((mount_ + "/filler").c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(4096, 'x');
    while (write(fd, block.data(), block.size()) > 0) {
    }
    close(fd);
  }
  std::string mount_;
  bool mounted_ = false;
};

// The reviewer's crash: a change noted after a committed snapshot, on a full
// disk, into a page the commit had punched out of the file. In a child, so
// that a SIGBUS fails the test instead of the run.
TEST_F(FullDiskTest, AFullDiskNeverKillsTheProcess) {
  if (!Mount("size=16m")) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  const std::string path = mount_ + "/snapshot.changes";
  EXPECT_EXIT(
      {
        std::string error;
        auto j = ChangeJournal::Open(path, kBoot, &error);
        if (j == nullptr) _exit(2);
        j->MarkRunning();
        NoteAllOver(j.get(), "before");
        for (int round = 0; round < 3; round++) {
          j->Begin();
          j->Commit();
          Fill();   // again: a punched bitmap would have freed its blocks
          NoteAllOver(j.get(), "round" + std::to_string(round));
        }
        j->NotedAll();
        j->MarkStopped();
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Too little space for the journal: it is not opened (the snapshotter then
// runs without one, as docs/operations.md says), and says why.
TEST_F(FullDiskTest, NoRoomForTheJournalIsAnErrorNotACrash) {
  if (!Mount("size=4m")) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  std::string error;
  auto j = ChangeJournal::Open(mount_ + "/snapshot.changes", kBoot, &error);
  EXPECT_EQ(j, nullptr);
  EXPECT_NE(error.find("cannot allocate"), std::string::npos) << error;
  EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
  unlink((mount_ + "/snapshot.changes").c_str());
}

// The CAS values a run hands out after its last snapshot are never handed
// out again by a start after a crash: the ceiling, raised ahead of the
// counter, persists in the journal.
TEST_F(ChangeJournalTest, AStartAfterACrashHandsOutNoCasTwice) {
  const StoreConfig config = Config();
  auto put = [](ItemStore* s) {
    StoreRequest req;
    req.key = "k";
    req.value = "v";
    return s->Store(req).cas;
  };
  uint64_t highest = 0;
  {
    auto j = Open();
    ItemStore a(config);
    a.SetChangeJournal(j.get());
    for (int i = 0; i < 2 * 65536 + 10; i++) highest = std::max(highest, put(&a));
    EXPECT_GT(j->CasCeiling(), highest);
  }   // the crash
  auto j = Open();
  ItemStore b(config);
  ASSERT_GT(j->CasCeiling(), highest);
  b.AdvanceCasPast(j->CasCeiling() - 1);   // as the daemon's load does
  EXPECT_GT(put(&b), highest);
}

// The store notes its changes; a snapshot begins and commits; the load
// leaves out what changed after the file began.
TEST_F(ChangeJournalTest, ALoadAfterACrashLeavesOutTheKeysChangedSinceTheSnapshot) {
  const StoreConfig config = Config();
  auto j = Open();
  ItemStore a(config);
  a.SetChangeJournal(j.get());
  auto put = [](ItemStore* s, const std::string& key, const std::string& value) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    return s->Store(req).status;
  };
  for (int i = 0; i < 200; i++) ASSERT_EQ(put(&a, "k" + std::to_string(i), "old"), StoreStatus::kStored);
  SnapshotWriteOptions w;
  w.sync = false;
  w.changes = j.get();
  ASSERT_TRUE(WriteSnapshot(&a, snapshot_, w).ok);
  EXPECT_FALSE(j->MayHaveChanged("k1"));   // the snapshot holds it
  ASSERT_EQ(put(&a, "k1", "new"), StoreStatus::kStored);
  DeleteRequest del;
  del.key = "k2";
  a.Delete(del);
  del.key = "k3";
  del.mark_stale = true;   // md I
  a.Delete(del);
  ArithRequest incr;
  incr.key = "k4";
  a.Arithmetic(incr);   // not a number: nothing changes
  ASSERT_TRUE(a.Touch("k5", 1000));

  ItemStore b(config);   // the process after the crash
  SnapshotLoadOptions l;
  l.changes = j.get();
  const SnapshotLoadResult r = LoadSnapshot(&b, snapshot_, l);
  ASSERT_EQ(r.status, SnapshotLoadResult::Status::kLoaded) << r.error;
  EXPECT_EQ(r.skipped_changed, 4u);
  EXPECT_EQ(r.loaded, 196u);
  for (const char* gone : {"k1", "k2", "k3", "k5"}) {
    EXPECT_EQ(b.Read(gone, ReadOptions()).status, ReadStatus::kMiss) << gone;
  }
  for (const char* kept : {"k0", "k4", "k199"}) {
    const ReadResult hit = b.Read(kept, ReadOptions());
    EXPECT_EQ(hit.status, ReadStatus::kHit) << kept;
    EXPECT_EQ(hit.value, "old");
  }
}

}  // namespace
}  // namespace herdless
