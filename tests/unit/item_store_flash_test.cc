// ItemStore with a flash tier (storage/item_store_flash.cc) on a real file:
// values eviction would drop move to flash and their items become stubs; a
// read of a stub parks and fetches (never a hit, never a wrong value); the
// fetch recaches the value or drops the stub (bad checksum, a value gone);
// delete, overwrite and eviction of a stub release its record; append and
// incr refuse a value on flash as memcached does; idle values move too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/flash_store.h"
#include "storage/item_store.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

// Records fetches instead of running them: the test runs them (Run) in order.
class RecordingFetcher final : public FlashFetcher {
 public:
  void Fetch(FlashFetch fetch) override { fetches.push_back(std::move(fetch)); }
  std::vector<FlashFetch> fetches;
};

class CountingSink final : public LeaseWakeSink {
 public:
  void Wake(const WaitTicket&) override { ++woken; }
  int woken = 0;
};

constexpr size_t kValueLen = 2000;

std::string ValueOf(int i) {
  std::string v = "value-" + std::to_string(i) + "-";
  while (v.size() < kValueLen) v += static_cast<char>('a' + (v.size() + i) % 26);
  return v;
}
std::string KeyOf(int i) { return "key:" + std::to_string(i); }

class ItemStoreFlashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/herdless-storeflash-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    ExtstoreSettings settings;
    settings.page_size = 1u << 20;
    settings.wbuf_size = 64u << 10;
    FlashFile f;
    f.path = dir_ + "/flash";
    f.page_count = 8;
    settings.files.push_back(f);
    std::string error;
    flash_ = FlashStore::Open(settings, &error);
    ASSERT_NE(flash_, nullptr) << error;
    StoreConfig config = DrivenStoreConfig(&clock_, &random_);
    config.memory_limit = 1u << 20;   // room for a few hundred of the values
    config.wake_sink = &sink_;
    config.flash = flash_.get();
    config.flash_fetcher = &fetcher_;
    store_ = std::make_unique<ItemStore>(config);
  }
  void TearDown() override {
    store_.reset();
    flash_.reset();
    ::unlink((dir_ + "/flash").c_str());
    ::rmdir(dir_.c_str());
  }

  void Set(int i) {
    const std::string key = KeyOf(i);
    const std::string value = ValueOf(i);
    StoreRequest req;
    req.key = key;
    req.value = value;
    ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored) << i;
  }
  // Stores keys 0..n-1: far more than -m holds, so the first ones move to flash.
  void Fill(int n) {
    for (int i = 0; i < n; ++i) Set(i);
  }
  ReadResult Read(const std::string& key, bool park = true) {
    ReadOptions opts;
    opts.flash_park = park ? &ticket_ : nullptr;
    return store_->Read(key, opts);
  }
  // Runs the recorded fetches as the daemon's readers do.
  void RunFetches() {
    std::vector<FlashFetch> fetches;
    fetches.swap(fetcher_.fetches);
    for (const FlashFetch& f : fetches) {
      std::string value;
      const FlashReadResult r = flash_->Read(f.where, f.key, f.value_len, &value);
      store_->FinishFlashRead(f.key, f.where, r, value);
    }
  }
  // The first key (of 0..n-1) whose read parks: its value is on flash.
  int FirstOnFlash(int n) {
    for (int i = 0; i < n; ++i) {
      ReadResult r = Read(KeyOf(i));
      if (r.parked) return i;
      if (r.status == ReadStatus::kHit) continue;
    }
    return -1;
  }
  std::string ValueRead(int i) {
    ReadResult r = Read(KeyOf(i));
    if (r.parked) {
      RunFetches();
      r = Read(KeyOf(i));
    }
    if (r.status != ReadStatus::kHit || r.parked) return "<miss>";
    return std::string(r.value);
  }

  std::string dir_;
  ManualClock clock_;
  ScriptedRandom random_;
  CountingSink sink_;
  RecordingFetcher fetcher_;
  WaitTicket ticket_{0, 1, 1};
  std::unique_ptr<FlashStore> flash_;
  std::unique_ptr<ItemStore> store_;
};

TEST_F(ItemStoreFlashTest, EvictedValuesMoveToFlashAndReadBackByteForByte) {
  Fill(2000);
  const FlashStats fs = flash_->Stats();
  EXPECT_GT(fs.objects_written, 1000u);
  EXPECT_EQ(store_->Stats().evictions, 0u);   // nothing was lost to eviction
  EXPECT_EQ(store_->Stats().curr_items, 2000u);
  // Every key reads back exactly: from RAM, or parked, fetched and recached.
  for (int i = 0; i < 2000; i += 7) EXPECT_EQ(ValueRead(i), ValueOf(i)) << i;
  const StoreStats ss = store_->Stats();
  EXPECT_GT(ss.get_extstore, 0u);
  EXPECT_EQ(ss.recache_from_extstore, ss.get_extstore);
  EXPECT_EQ(ss.miss_from_extstore + ss.badcrc_from_extstore, 0u);
  EXPECT_GT(sink_.woken, 0);
}

TEST_F(ItemStoreFlashTest, AStubIsNeverAHitWithoutItsValue) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  const size_t fetches = fetcher_.fetches.size();
  const ReadResult r = Read(KeyOf(i), /*park=*/false);
  EXPECT_EQ(r.status, ReadStatus::kMiss);
  EXPECT_FALSE(r.parked);
  EXPECT_EQ(fetcher_.fetches.size(), fetches);
  EXPECT_GT(store_->Stats().get_aborted_extstore, 0u);
  // Still on flash: a parked read gets it.
  EXPECT_EQ(ValueRead(i), ValueOf(i));
}

TEST_F(ItemStoreFlashTest, DeleteAndOverwriteReleaseTheRecord) {
  Fill(2000);
  const int a = FirstOnFlash(2000);
  ASSERT_GE(a, 0);
  fetcher_.fetches.clear();
  const uint64_t used = flash_->Stats().objects_used;
  DeleteRequest del;
  const std::string key_a = KeyOf(a);
  del.key = key_a;
  EXPECT_EQ(store_->Delete(del), DeleteStatus::kDeleted);
  EXPECT_EQ(flash_->Stats().objects_used, used - 1);
  EXPECT_EQ(ValueRead(a), "<miss>");

  const int b = FirstOnFlash(2000);
  ASSERT_GE(b, 0);
  fetcher_.fetches.clear();
  StoreRequest set;
  const std::string key_b = KeyOf(b);
  set.key = key_b;
  set.value = "fresh";
  ASSERT_EQ(store_->Store(set).status, StoreStatus::kStored);
  EXPECT_EQ(flash_->Stats().objects_used, used - 2);
  EXPECT_EQ(ValueRead(b), "fresh");
}

TEST_F(ItemStoreFlashTest, AppendAndIncrRefuseAValueOnFlash) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  const std::string key = KeyOf(i);
  StoreRequest app;
  app.mode = StoreMode::kAppend;
  app.key = key;
  app.value = "tail";
  EXPECT_EQ(store_->Store(app).status, StoreStatus::kNotStored);
  ArithRequest incr;
  incr.key = key;
  EXPECT_EQ(store_->Arithmetic(incr).status, ArithStatus::kNonNumeric);
  EXPECT_EQ(ValueRead(i), ValueOf(i));   // unchanged
}

// A fetch that comes back damaged or gone drops the stub: a miss, counted.
TEST_F(ItemStoreFlashTest, AFailedFetchDropsTheStub) {
  struct Case {
    FlashReadResult result;
    bool badcrc;
  };
  for (const Case c : {Case{FlashReadResult::kBadChecksum, true}, Case{FlashReadResult::kMiss, false},
                       Case{FlashReadResult::kIoError, false}}) {
    Fill(2000);
    fetcher_.fetches.clear();
    const int i = FirstOnFlash(2000);
    ASSERT_GE(i, 0);
    ASSERT_EQ(fetcher_.fetches.size(), 1u);
    const StoreStats before = store_->Stats();
    const FlashFetch f = fetcher_.fetches.back();
    fetcher_.fetches.clear();
    store_->FinishFlashRead(f.key, f.where, c.result, "");
    const StoreStats after = store_->Stats();
    EXPECT_EQ(after.badcrc_from_extstore - before.badcrc_from_extstore, c.badcrc ? 1u : 0u);
    EXPECT_EQ(after.miss_from_extstore - before.miss_from_extstore, c.badcrc ? 0u : 1u);
    EXPECT_EQ(ValueRead(i), "<miss>");
  }
}

// A fetch for a stub the key no longer has (overwritten meanwhile) changes nothing.
TEST_F(ItemStoreFlashTest, ALateFetchLeavesANewValueAlone) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  const FlashFetch f = fetcher_.fetches.back();
  fetcher_.fetches.clear();
  std::string old;
  ASSERT_EQ(flash_->Read(f.where, f.key, f.value_len, &old), FlashReadResult::kOk);
  StoreRequest set;
  set.key = f.key;
  set.value = "newer";
  ASSERT_EQ(store_->Store(set).status, StoreStatus::kStored);
  store_->FinishFlashRead(f.key, f.where, FlashReadResult::kOk, old);
  EXPECT_EQ(ValueRead(i), "newer");
}

TEST_F(ItemStoreFlashTest, IdleValuesMoveAndSmallOnesStay) {
  for (int i = 0; i < 50; ++i) Set(i);
  StoreRequest small;
  small.key = "small";
  small.value = "tiny";
  ASSERT_EQ(store_->Store(small).status, StoreStatus::kStored);
  clock_.AdvanceSeconds(5);
  size_t moved = 0;
  WalkCursor cursor;
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  EXPECT_EQ(moved, 50u);
  EXPECT_EQ(Read("small").status, ReadStatus::kHit);
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(Read(KeyOf(i)).parked) << i;
  }
  RunFetches();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(ValueRead(i), ValueOf(i)) << i;
}

// Values idle for less than ext_item_age stay in RAM.
TEST_F(ItemStoreFlashTest, RecentValuesDoNotMove) {
  for (int i = 0; i < 50; ++i) Set(i);
  WalkCursor cursor;
  size_t moved = 0;
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  EXPECT_EQ(moved, 0u);
}

}  // namespace
}  // namespace herdless
