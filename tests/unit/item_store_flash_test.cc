// ItemStore with a flash tier (storage/item_store_flash.cc) on a real file:
// values eviction would drop move to flash and their items become stubs; a
// read of a stub parks and fetches (never a hit, never a wrong value); the
// fetch serves the value to the readers it woke, without bringing it back to
// RAM unless memcached's recache rule says so, or drops the stub (bad
// checksum, a value gone); a multi-key read's fetches go out and wake it together;
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
  void Fetch(std::vector<FlashFetch> batch) override {
    for (FlashFetch& f : batch) fetches.push_back(std::move(f));
    ++calls;
  }
  std::vector<FlashFetch> fetches;
  int calls = 0;
};

// Keeps the store's events (their keys copied: valid during OnEvent only).
class RecordingEvents final : public StoreEventSink {
 public:
  void OnEvent(const StoreEvent& e) override {
    events.push_back(e);
    keys.emplace_back(e.key);
    events.back().key = std::string_view();
  }
  std::vector<StoreEvent> Of(StoreEventKind kind) const {
    std::vector<StoreEvent> out;
    for (const StoreEvent& e : events) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }
  std::vector<StoreEvent> events;
  std::vector<std::string> keys;
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
    config.flash_reads_cached = reads_cached_;
    tunables_.recache_rate.store(recache_rate_);
    config.flash_tunables = &tunables_;
    config.flash_as_1645 = as_1645_;
    config.events = &events_;
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
    for (FlashFetch& f : fetches) f.result = flash_->Read(f.where, f.key, f.value_len, &f.value);
    store_->FinishFlashReads(&fetches);
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
  uint32_t recache_rate_ = 2000;   // ext_recache_rate's default
  bool reads_cached_ = false;      // StoreConfig::flash_reads_cached
  bool as_1645_ = false;           // StoreConfig::flash_as_1645
  RecordingEvents events_;         // records only what a test asks for (SetWanted)
  FlashTunables tunables_;         // what `extstore` changes at run time
  std::unique_ptr<FlashStore> flash_;
  std::unique_ptr<ItemStore> store_;

  size_t MoveIdle() {
    WalkCursor cursor;
    size_t moved = 0;
    while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
    return moved;
  }
};

TEST_F(ItemStoreFlashTest, EvictedValuesMoveToFlashAndReadBackByteForByte) {
  Fill(2000);
  const FlashStats fs = flash_->Stats();
  EXPECT_GT(fs.objects_written, 1000u);
  EXPECT_EQ(store_->Stats().evictions, 0u);   // nothing was lost to eviction
  EXPECT_EQ(store_->Stats().curr_items, 2000u);
  // Every key reads back exactly: from RAM, or parked, fetched and served.
  for (int i = 0; i < 2000; i += 7) EXPECT_EQ(ValueRead(i), ValueOf(i)) << i;
  const StoreStats ss = store_->Stats();
  EXPECT_GT(ss.get_extstore, 0u);
  EXPECT_EQ(ss.recache_from_extstore, 0u);   // none had been read before
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
  DeleteRequest::Removed removed;   // what the watcher's lines report
  del.removed = &removed;
  EXPECT_EQ(store_->Delete(del), DeleteStatus::kDeleted);
  EXPECT_TRUE(removed.live && removed.on_flash);
  EXPECT_EQ(removed.value_len, ValueOf(a).size());
  EXPECT_EQ(flash_->Stats().objects_used, used - 1);
  EXPECT_EQ(ValueRead(a), "<miss>");

  const int b = FirstOnFlash(2000);
  ASSERT_GE(b, 0);
  fetcher_.fetches.clear();
  StoreRequest set;
  const std::string key_b = KeyOf(b);
  set.key = key_b;
  set.value = "fresh";
  const StoreResult stored = store_->Store(set);
  ASSERT_EQ(stored.status, StoreStatus::kStored);
  EXPECT_TRUE(stored.found.live && stored.found.on_flash);
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
    std::vector<FlashFetch> done;
    done.swap(fetcher_.fetches);
    done.back().result = c.result;
    store_->FinishFlashReads(&done);
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
  std::vector<FlashFetch> done;
  done.swap(fetcher_.fetches);
  FlashFetch& f = done.back();
  ASSERT_EQ(f.result = flash_->Read(f.where, f.key, f.value_len, &f.value), FlashReadResult::kOk);
  StoreRequest set;
  set.key = f.key;
  set.value = "newer";
  ASSERT_EQ(store_->Store(set).status, StoreStatus::kStored);
  store_->FinishFlashReads(&done);
  EXPECT_EQ(ValueRead(i), "newer");
}

// A fetched value is served to the reader it woke and stays on flash: the
// next read parks and fetches again; its metadata counted the read.
TEST_F(ItemStoreFlashTest, AFetchedValueIsServedWithoutComingBackToRam) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  RunFetches();
  const ReadResult r = Read(KeyOf(i));
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_FALSE(r.fetched_before);
  EXPECT_EQ(std::string(r.value), ValueOf(i));
  EXPECT_EQ(store_->Stats().recache_from_extstore, 0u);
  const ReadResult again = Read(KeyOf(i));
  EXPECT_TRUE(again.parked);   // still on flash, and the fetched copy is gone
  RunFetches();
  const ReadResult third = Read(KeyOf(i));
  EXPECT_TRUE(third.fetched_before);
  EXPECT_EQ(std::string(third.value), ValueOf(i));
}

// memcached's rule: an item read before, within the last minute, comes back
// to RAM one such read in ext_recache_rate (here every one; 0: never).
class ItemStoreFlashRecacheTest : public ItemStoreFlashTest,
                                  public ::testing::WithParamInterface<uint32_t> {
 protected:
  void SetUp() override {
    recache_rate_ = GetParam();
    ItemStoreFlashTest::SetUp();
  }
};

TEST_P(ItemStoreFlashRecacheTest, AValueReadBeforeLatelyIsRecached) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  EXPECT_EQ(ValueRead(i), ValueOf(i));   // the first read: not read before
  EXPECT_EQ(store_->Stats().recache_from_extstore, 0u);
  clock_.AdvanceSeconds(61);             // read before, but not lately
  EXPECT_EQ(ValueRead(i), ValueOf(i));
  EXPECT_EQ(store_->Stats().recache_from_extstore, 0u);
  EXPECT_EQ(ValueRead(i), ValueOf(i));   // read 0 s ago: it qualifies
  const bool recaches = GetParam() != 0;
  EXPECT_EQ(store_->Stats().recache_from_extstore, recaches ? 1u : 0u);
  const ReadResult r = Read(KeyOf(i));
  EXPECT_EQ(r.parked, !recaches);        // back in RAM: a plain hit
  if (recaches) {
    EXPECT_EQ(std::string(r.value), ValueOf(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, ItemStoreFlashRecacheTest, ::testing::Values(0u, 1u));

// A multi-key read parks on its keys on flash with one batch of fetches, and
// the batch's end wakes it once; its keys are then served.
TEST_F(ItemStoreFlashTest, AMultiKeyReadIsFetchedAndWokenOnce) {
  Fill(2000);
  std::vector<std::string> keys;
  for (int i = 0; i < 2000 && keys.size() < 5; ++i) {
    if (Read(KeyOf(i), /*park=*/false).status == ReadStatus::kMiss) keys.push_back(KeyOf(i));
  }
  ASSERT_EQ(keys.size(), 5u);
  keys.push_back(KeyOf(1999));   // in RAM
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  fetcher_.fetches.clear();
  fetcher_.calls = 0;
  std::string_view first;
  EXPECT_EQ(store_->ParkOnFlash(views, ticket_, &first), 5u);
  EXPECT_EQ(first, keys[0]);
  EXPECT_EQ(fetcher_.calls, 1);
  EXPECT_EQ(fetcher_.fetches.size(), 5u);
  const int woken = sink_.woken;
  RunFetches();
  EXPECT_EQ(sink_.woken - woken, 1);
  EXPECT_EQ(store_->ParkOnFlash(views, ticket_, &first), 0u);   // every value is fetched
  for (const std::string& key : keys) {
    const ReadResult r = Read(key, /*park=*/false);
    ASSERT_EQ(r.status, ReadStatus::kHit) << key;
    EXPECT_EQ(std::string(r.value), ValueOf(std::stoi(key.substr(4)))) << key;
  }
}

// `get a a`: a key parked on twice by one request is served to both reads.
TEST_F(ItemStoreFlashTest, AKeyTwiceInOneReadIsServedTwice) {
  Fill(2000);
  int i = 0;
  while (i < 2000 && Read(KeyOf(i), /*park=*/false).status != ReadStatus::kMiss) ++i;
  ASSERT_LT(i, 2000);
  const std::string key = KeyOf(i);
  fetcher_.fetches.clear();
  std::string_view first;
  EXPECT_EQ(store_->ParkOnFlash({key, key}, ticket_, &first), 2u);
  EXPECT_EQ(fetcher_.fetches.size(), 1u);
  RunFetches();
  for (int n = 0; n < 2; ++n) {
    const ReadResult r = Read(key, /*park=*/false);
    ASSERT_EQ(r.status, ReadStatus::kHit) << n;
    EXPECT_EQ(std::string(r.value), ValueOf(i));
  }
}

// StoreConfig::flash_reads_cached (the daemon's): a value on flash whose bytes
// are cached is read at once by the reader, without parking or a wake; one
// only the device has parks as before.
class ItemStoreFlashCachedTest : public ItemStoreFlashTest {
 protected:
  ItemStoreFlashCachedTest() { reads_cached_ = true; }
  // Keys 0..1999 whose values are on flash: a read that wants no value finds
  // the key with its value's length on flash (a key evicted outright misses).
  std::vector<std::string> OnFlash(size_t n) {
    std::vector<std::string> keys;
    for (int i = 0; i < 2000 && keys.size() < n; ++i) {
      ReadOptions opts;
      opts.value_wanted = false;
      opts.bump = false;
      const ReadResult r = store_->Read(KeyOf(i), opts);
      if (r.status == ReadStatus::kHit && r.value_len_on_flash != 0) keys.push_back(KeyOf(i));
    }
    return keys;
  }
  // The flash file's pages leave the page cache (as far as the kernel lets them).
  void DropPageCache() {
    ASSERT_TRUE(flash_->Flush());
    const int fd = ::open((dir_ + "/flash").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
};

TEST_F(ItemStoreFlashCachedTest, ACachedValueIsReadAtOnce) {
  Fill(2000);
  const std::vector<std::string> keys = OnFlash(20);
  ASSERT_EQ(keys.size(), 20u);
  fetcher_.fetches.clear();
  const int woken = sink_.woken;
  const uint64_t fetched = store_->Stats().get_extstore;
  for (const std::string& key : keys) {
    const ReadResult r = Read(key);
    EXPECT_FALSE(r.parked) << key;
    ASSERT_EQ(r.status, ReadStatus::kHit) << key;
    EXPECT_TRUE(r.on_flash) << key;
    EXPECT_EQ(std::string(r.value), ValueOf(std::stoi(key.substr(4)))) << key;
  }
  EXPECT_TRUE(fetcher_.fetches.empty());
  EXPECT_EQ(sink_.woken, woken);
  EXPECT_EQ(store_->Stats().get_extstore, fetched + keys.size());
  // Served once: the next read of each is another flash read, not a stale copy.
  EXPECT_EQ(Read(keys[0]).status, ReadStatus::kHit);
  EXPECT_EQ(store_->Stats().get_extstore, fetched + keys.size() + 1);
}

// A multi-key read's pass parks on nothing; each key, `get a a`'s twice, is then served.
TEST_F(ItemStoreFlashCachedTest, AMultiKeyReadOfCachedValuesDoesNotPark) {
  Fill(2000);
  std::vector<std::string> keys = OnFlash(5);
  ASSERT_EQ(keys.size(), 5u);
  keys.push_back(keys[2]);
  keys.push_back(KeyOf(1999));   // in RAM
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  fetcher_.fetches.clear();
  std::string_view first;
  EXPECT_EQ(store_->ParkOnFlash(views, ticket_, &first), 0u);
  EXPECT_TRUE(fetcher_.fetches.empty());
  for (const std::string& key : keys) {
    const ReadResult r = Read(key, /*park=*/false);
    ASSERT_EQ(r.status, ReadStatus::kHit) << key;
    EXPECT_EQ(std::string(r.value), ValueOf(std::stoi(key.substr(4)))) << key;
  }
}

// A value the page cache does not hold parks for the I/O thread, unless the
// device answers within the read that may not wait: RWF_NOWAIT starts the
// readahead, and this VM's disk can complete it before the read returns. Either
// way every value reads back as stored; parks come in one batch.
// A read done at once counts once towards its connection's recaches.
TEST_F(ItemStoreFlashCachedTest, AReadDoneAtOnceCountsOnceForRecache) {
  tunables_.recache_rate.store(2);
  Fill(2000);
  const std::vector<std::string> keys = OnFlash(1);
  ASSERT_EQ(keys.size(), 1u);
  WaitTicket ticket{0, 7, 1};
  uint64_t conn_count = 0;
  ticket.recache_counter = &conn_count;
  ReadOptions opts;
  opts.flash_park = &ticket;
  ASSERT_EQ(store_->Read(keys[0], opts).status, ReadStatus::kHit);   // first read on flash: not counted
  EXPECT_EQ(conn_count, 0u);
  const ReadResult r = store_->Read(keys[0], opts);   // read before, lately: counted, and its turn
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_FALSE(r.parked);
  EXPECT_EQ(conn_count, 1u);
  EXPECT_EQ(store_->Stats().recache_from_extstore, 1u);
}

TEST_F(ItemStoreFlashCachedTest, AValueOnlyTheDeviceHasReadsBackParkedOrNot) {
  Fill(2000);
  std::vector<std::string> keys = OnFlash(6);
  ASSERT_EQ(keys.size(), 6u);
  const std::string single = keys.back();   // not read before the single read below
  keys.pop_back();
  DropPageCache();
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  fetcher_.fetches.clear();
  fetcher_.calls = 0;
  std::string_view first;
  const size_t parked = store_->ParkOnFlash(views, ticket_, &first);
  EXPECT_LE(parked, 5u);
  EXPECT_EQ(fetcher_.calls, parked > 0 ? 1 : 0);
  RunFetches();
  for (const std::string& key : keys) {
    EXPECT_EQ(std::string(Read(key, /*park=*/false).value), ValueOf(std::stoi(key.substr(4)))) << key;
  }
  DropPageCache();   // the fetches read the pages back into it
  ReadResult r = Read(single);
  if (r.parked) {
    RunFetches();
    r = Read(single);
  }
  EXPECT_EQ(std::string(r.value), ValueOf(std::stoi(single.substr(4))));
}

// Compaction: the live values of a fragmented page are written again and
// their stubs repointed, the page is freed, and every value still reads back
// byte for byte; with drop_unread, values never read go with their stubs.
class ItemStoreFlashCompactionTest : public ItemStoreFlashTest, public ::testing::WithParamInterface<bool> {};

TEST_P(ItemStoreFlashCompactionTest, MovesALivePagesValuesAndFreesIt) {
  const bool drop_unread = GetParam();
  {
    Fill(2000);
    const int i = FirstOnFlash(2000);
    ASSERT_GE(i, 0);
    const FlashLocator at = fetcher_.fetches.back().where;
    RunFetches();
    EXPECT_EQ(ValueRead(i), ValueOf(i));   // read: kept even with drop_unread
    std::vector<int> kept;
    for (int k = 0; k < 2000; ++k) {
      if (k % 3 == 0 && k != i) {   // fragment: a third of the values go
        DeleteRequest del;
        const std::string key = KeyOf(k);
        del.key = key;
        store_->Delete(del);
      } else {
        kept.push_back(k);
      }
    }
    const FlashStats before = flash_->Stats();
    const size_t moved = store_->CompactFlashPage({at.page, at.generation, drop_unread});
    const FlashStats after = flash_->Stats();
    EXPECT_GT(moved, 0u);
    EXPECT_EQ(flash_->PageData()[at.page].version, 0u);   // freed
    EXPECT_EQ(after.page_reclaims, before.page_reclaims + 1);
    EXPECT_EQ((after.compact_rescues - before.compact_rescues) + (after.compact_lost - before.compact_lost), moved);
    EXPECT_EQ(after.compact_lost > before.compact_lost, drop_unread);
    EXPECT_EQ(ValueRead(i), ValueOf(i));
    int lost = 0;
    for (int k : kept) {
      const std::string got = ValueRead(k);
      if (got == "<miss>" && drop_unread) {
        ++lost;
        continue;
      }
      EXPECT_EQ(got, ValueOf(k)) << k;
    }
    EXPECT_EQ(static_cast<uint64_t>(lost), after.compact_lost - before.compact_lost);
  }
}

INSTANTIATE_TEST_SUITE_P(DropUnread, ItemStoreFlashCompactionTest, ::testing::Bool());

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

// ext_item_size is read at each move: `extstore item_size` raised above the
// values' length keeps them in RAM from then on.
TEST_F(ItemStoreFlashTest, ARaisedItemSizeKeepsValuesInRam) {
  for (int i = 0; i < 50; ++i) Set(i);
  tunables_.item_size.store(kValueLen + 1);
  clock_.AdvanceSeconds(5);
  WalkCursor cursor;
  size_t moved = 0;
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  EXPECT_EQ(moved, 0u);
  tunables_.item_size.store(kValueLen);
  cursor = WalkCursor{};
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  EXPECT_EQ(moved, 50u);
}

// As memcached's header item, a stub starts unread: reads in RAM before the
// move do not make its first read from flash a recache.
TEST_F(ItemStoreFlashTest, ReadsBeforeTheMoveDoNotCountForRecache) {
  tunables_.recache_rate.store(1);
  Set(0);
  ASSERT_EQ(Read(KeyOf(0)).status, ReadStatus::kHit);   // read in RAM
  clock_.AdvanceSeconds(5);
  WalkCursor cursor;
  size_t moved = 0;
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  ASSERT_EQ(moved, 1u);
  EXPECT_EQ(ValueRead(0), ValueOf(0));   // its first read on flash
  EXPECT_EQ(store_->Stats().recache_from_extstore, 0u);
  EXPECT_EQ(ValueRead(0), ValueOf(0));   // read before, lately: recached
  EXPECT_EQ(store_->Stats().recache_from_extstore, 1u);
}

// memcached counts the reads that may recache per connection (from 0: a
// connection's first such read recaches): the ticket's counter, when it has one.
TEST_F(ItemStoreFlashTest, RecacheReadsAreCountedPerConnection) {
  tunables_.recache_rate.store(3);
  Set(0);
  Set(1);
  clock_.AdvanceSeconds(5);
  ASSERT_EQ(MoveIdle(), 2u);
  EXPECT_EQ(ValueRead(0), ValueOf(0));   // first reads on flash: not yet eligible
  EXPECT_EQ(ValueRead(1), ValueOf(1));
  uint64_t first_conn = 0, busy_conn = 4;
  const auto read_as = [&](int i, uint64_t* counter) {
    WaitTicket ticket{0, 7, 1};
    ticket.recache_counter = counter;
    ReadOptions opts;
    opts.flash_park = &ticket;
    ReadResult r = store_->Read(KeyOf(i), opts);
    if (r.parked) {
      RunFetches();
      r = store_->Read(KeyOf(i), opts);
    }
    return r.status == ReadStatus::kHit ? std::string(r.value) : "<miss>";
  };
  EXPECT_EQ(read_as(1, &busy_conn), ValueOf(1));   // its 5th such read: 4 % 3 != 0
  EXPECT_EQ(busy_conn, 5u);
  EXPECT_EQ(store_->Stats().recache_from_extstore, 0u);
  EXPECT_EQ(read_as(0, &first_conn), ValueOf(0));   // its first: recached
  EXPECT_EQ(first_conn, 1u);
  EXPECT_EQ(store_->Stats().recache_from_extstore, 1u);
}

// memcached 1.6.45's header item keeps ITEM_FETCHED (ITEM_PRESERVE_FLAGS):
// under -o compat=1.6.45 a value read in RAM lately is recached on its first
// read from flash.
class ItemStoreFlash1645Test : public ItemStoreFlashTest {
 protected:
  ItemStoreFlash1645Test() { as_1645_ = true; }
};

TEST_F(ItemStoreFlash1645Test, ReadsBeforeTheMoveCountForRecache) {
  tunables_.recache_rate.store(1);
  Set(0);
  Set(1);
  ASSERT_EQ(Read(KeyOf(0)).status, ReadStatus::kHit);   // read in RAM; key 1 never
  clock_.AdvanceSeconds(5);
  ASSERT_EQ(MoveIdle(), 2u);
  EXPECT_EQ(ValueRead(0), ValueOf(0));
  EXPECT_EQ(store_->Stats().recache_from_extstore, 1u);
  EXPECT_EQ(ValueRead(1), ValueOf(1));   // its first read: not recached
  EXPECT_EQ(store_->Stats().recache_from_extstore, 1u);
}

// A stale value whose lease is out moves to flash as any other (memcached's
// header item keeps ITEM_STALE and ITEM_TOKEN_SENT): read back from flash it
// is still stale, with its CAS, and the lease still held by its winner.
TEST_F(ItemStoreFlashTest, AStaleValueWithItsLeaseOutMovesAndStaysSo) {
  Set(0);
  const std::string key = KeyOf(0);
  DeleteRequest invalidate;
  invalidate.key = key;
  invalidate.mark_stale = true;
  ASSERT_EQ(store_->Delete(invalidate), DeleteStatus::kDeleted);
  ReadOptions meta;
  meta.kind = ReadKind::kMeta;
  meta.flash_park = &ticket_;
  const ReadResult winner = store_->Read(key, meta);
  ASSERT_EQ(winner.status, ReadStatus::kHit);
  EXPECT_TRUE(winner.stale);
  EXPECT_EQ(winner.lease, LeaseVerdict::kWin);
  clock_.AdvanceSeconds(3);   // idle past ext_item_age 2, within the 5 s lease
  ASSERT_EQ(MoveIdle(), 1u);
  ReadResult r = store_->Read(key, meta);
  ASSERT_TRUE(r.parked);
  RunFetches();
  r = store_->Read(key, meta);
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_FALSE(r.parked);
  EXPECT_TRUE(r.on_flash);
  EXPECT_EQ(std::string(r.value), ValueOf(0));
  EXPECT_TRUE(r.stale);
  EXPECT_EQ(r.lease, LeaseVerdict::kHeld);
  EXPECT_EQ(r.cas, winner.cas);
}

// memcached's extwrite line for each value that moves (watch evictions):
// about the item as it was in RAM, with the page bucket it went to.
TEST_F(ItemStoreFlashTest, EachMoveIsReportedWithItsBucket) {
  events_.SetWanted(StoreEventSink::Bit(StoreEventKind::kFlashWrite));
  tunables_.low_ttl.store(60);
  Set(0);
  const std::string key = KeyOf(1);
  const std::string value = ValueOf(1);
  StoreRequest short_lived;
  short_lived.key = key;
  short_lived.value = value;
  short_lived.exptime = 30;
  ASSERT_EQ(store_->Store(short_lived).status, StoreStatus::kStored);
  ASSERT_EQ(Read(KeyOf(0)).status, ReadStatus::kHit);
  clock_.AdvanceSeconds(5);
  ASSERT_EQ(MoveIdle(), 2u);
  ASSERT_EQ(events_.events.size(), 2u);
  for (size_t n = 0; n < 2; ++n) {
    const StoreEvent& e = events_.events[n];
    const bool first = events_.keys[n] == KeyOf(0);
    EXPECT_TRUE(first || events_.keys[n] == KeyOf(1)) << events_.keys[n];
    EXPECT_EQ(e.kind, StoreEventKind::kFlashWrite);
    EXPECT_EQ(e.fetched, first);
    EXPECT_EQ(e.bucket, first ? 0u : static_cast<uint32_t>(FlashBucket::kLowTtl));
    EXPECT_EQ(e.ttl_s, first ? -1 : 25);
    EXPECT_EQ(e.idle_s, 5);
    EXPECT_EQ(e.value_len, kValueLen);
  }
}

// memcached's compaction lines (watch sysevents): compact_start, then a
// read_start and read_end for each write buffer's worth of the page (16 of
// 64 KiB in a 1 MiB page), whose counts add up to the pass's, then compact_end.
TEST_F(ItemStoreFlashTest, ACompactionIsReportedAWriteBufferAtATime) {
  Fill(2000);
  const int i = FirstOnFlash(2000);
  ASSERT_GE(i, 0);
  const FlashLocator at = fetcher_.fetches.back().where;
  RunFetches();
  for (int k = 0; k < 2000; k += 2) {
    DeleteRequest del;
    const std::string key = KeyOf(k);
    del.key = key;
    store_->Delete(del);
  }
  events_.SetWanted(~uint32_t{0});
  const FlashStats before = flash_->Stats();
  ASSERT_GT(store_->CompactFlashPage({at.page, at.generation, false, 64u << 10}), 0u);
  const FlashStats after = flash_->Stats();
  std::vector<StoreEventKind> kinds;
  for (const StoreEvent& e : events_.events) {
    if (e.kind != StoreEventKind::kEviction) kinds.push_back(e.kind);
  }
  ASSERT_EQ(kinds.size(), 2u + 2 * 16);
  EXPECT_EQ(kinds.front(), StoreEventKind::kCompactStart);
  EXPECT_EQ(kinds.back(), StoreEventKind::kCompactEnd);
  const std::vector<StoreEvent> starts = events_.Of(StoreEventKind::kCompactReadStart);
  const std::vector<StoreEvent> ends = events_.Of(StoreEventKind::kCompactReadEnd);
  ASSERT_EQ(starts.size(), 16u);
  ASSERT_EQ(ends.size(), 16u);
  uint64_t rescues = 0, skipped = 0;
  for (size_t n = 0; n < 16; ++n) {
    EXPECT_EQ(kinds[1 + 2 * n], StoreEventKind::kCompactReadStart);
    EXPECT_EQ(kinds[2 + 2 * n], StoreEventKind::kCompactReadEnd);
    EXPECT_EQ(starts[n].page, at.page);
    EXPECT_EQ(starts[n].offset, n * (64u << 10));
    EXPECT_LE(ends[n].offset, 64u << 10);
    EXPECT_FALSE(ends[n].long_form);
    rescues += ends[n].rescues;
    skipped += ends[n].skipped;
  }
  EXPECT_EQ(events_.Of(StoreEventKind::kCompactStart)[0].page_version, at.generation);
  EXPECT_EQ(rescues, after.compact_rescues - before.compact_rescues);
  EXPECT_EQ(skipped, after.compact_skipped - before.compact_skipped);
  EXPECT_GT(rescues, 0u);
  EXPECT_GT(skipped, 0u);
  // As memcached's, the rescues go to pages of the compact bucket's, not among new values.
  uint64_t on_compact_pages = 0;
  for (const FlashPageData& p : flash_->PageData()) {
    if (p.version != 0 && p.bucket == FlashBucket::kCompact) on_compact_pages += p.objects;
  }
  EXPECT_EQ(on_compact_pages, rescues);
}

// ext_low_ttl: a value whose item expires within it moves to the low-TTL
// pages (stats extstore's bucket 3), one without a TTL to the others.
TEST_F(ItemStoreFlashTest, ShortLivedValuesMoveToLowTtlPages) {
  tunables_.low_ttl.store(60);
  for (int i = 0; i < 10; ++i) {
    const std::string key = KeyOf(i);
    const std::string value = ValueOf(i);
    StoreRequest req;
    req.key = key;
    req.value = value;
    req.exptime = i % 2 == 0 ? 30 : 0;   // even keys expire within 60 s
    ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored) << i;
  }
  clock_.AdvanceSeconds(5);
  WalkCursor cursor;
  size_t moved = 0;
  while (!cursor.done) moved += store_->MoveIdleToFlash(&cursor, 64, /*min_idle_s=*/2);
  ASSERT_EQ(moved, 10u);
  uint64_t low_bytes = 0, other_bytes = 0;
  for (const FlashPageData& p : flash_->PageData()) {
    (p.bucket == FlashBucket::kLowTtl ? low_bytes : other_bytes) += p.bytes_used;
  }
  EXPECT_GT(low_bytes, 5 * kValueLen);
  EXPECT_LT(low_bytes, 6 * kValueLen);
  EXPECT_GT(other_bytes, 5 * kValueLen);
  EXPECT_LT(other_bytes, 6 * kValueLen);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ValueRead(i), ValueOf(i)) << i;
}

}  // namespace
}  // namespace herdless
