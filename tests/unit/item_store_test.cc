#include "storage/item_store.h"

#include "storage/lease.h"
#include "storage/segments.h"
#include "storage/store_time.h"
#include "tests/unit/test_support.h"

#include <gtest/gtest.h>

#include <map>

#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace herdless {
namespace {

constexpr int64_t kUnixStart = 1700000000;

class ItemStoreTest : public ::testing::Test {
 protected:
  ItemStoreTest() : clock_(kUnixStart), random_(7), config_(DrivenStoreConfig(&clock_, &random_)) {
    clock_.AdvanceSeconds(100);  // store time 100: far from the "0 = never" edge
    Reset();
  }

  void Reset() { store_ = std::make_unique<ItemStore>(config_); }

  StoreResult Put(std::string_view key, std::string_view value, int64_t exptime = 0,
                  StoreMode mode = StoreMode::kSet, uint32_t flags = 0) {
    StoreRequest req;
    req.mode = mode;
    req.key = key;
    req.value = value;
    req.exptime = exptime;
    req.client_flags = flags;
    return store_->Store(req);
  }

  StoreResult Cas(std::string_view key, std::string_view value, uint64_t cas) {
    StoreRequest req;
    req.mode = StoreMode::kCas;
    req.key = key;
    req.value = value;
    req.compare_cas = cas;
    return store_->Store(req);
  }

  ReadResult Read(std::string_view key, ReadKind kind = ReadKind::kClassic) {
    ReadOptions opts;
    opts.kind = kind;
    return store_->Read(key, opts);
  }

  std::optional<std::string> Get(std::string_view key) {
    ReadResult r = Read(key);
    if (r.status != ReadStatus::kHit) return std::nullopt;
    return std::string(r.value);
  }

  DeleteStatus Del(std::string_view key) {
    DeleteRequest req;
    req.key = key;
    return store_->Delete(req);
  }

  ArithResult Arith(std::string_view key, bool incr, uint64_t delta) {
    ArithRequest req;
    req.key = key;
    req.incr = incr;
    req.delta = delta;
    return store_->Arithmetic(req);
  }

  ManualClock clock_;
  DefaultRandom random_;
  StoreConfig config_;
  std::unique_ptr<ItemStore> store_;
};

// --- Store modes -------------------------------------------------------------

TEST_F(ItemStoreTest, SetThenGetReturnsValueFlagsAndCas) {
  StoreResult s = Put("k", "hello", 0, StoreMode::kSet, 42);
  ASSERT_EQ(s.status, StoreStatus::kStored);
  EXPECT_GE(s.cas, 2u);  // 0 and 1 are reserved for lease tokens
  EXPECT_EQ(s.stored_size, 5u);

  ReadResult r = Read("k");
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_EQ(r.value, "hello");
  EXPECT_EQ(r.client_flags, 42u);
  EXPECT_EQ(r.cas, s.cas);
  EXPECT_EQ(r.ttl_before, -1);
  EXPECT_EQ(r.lease, LeaseVerdict::kNone);
}

// The executor hands the store the hash Prefetch returned for a pipelined request's key
// (ReadOptions::key_hash, StoreRequest::key_hash, DeleteRequest::key_hash, ArithRequest::key_hash,
// Touch's): it must reach the item the key's own hash does.
TEST_F(ItemStoreTest, PrefetchedHashReachesTheSameItem) {
  for (const std::string& key : {std::string("a"), std::string("user:1234"), std::string(250, 'k')}) {
    const uint64_t hash = store_->Prefetch(key);
    StoreRequest req;
    req.key = key;
    req.value = "41";
    req.key_hash = hash;
    ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored) << key;
    EXPECT_EQ(Read(key).value, "41") << key;   // hashed by the store
    ReadOptions opts;
    opts.key_hash = hash;
    EXPECT_EQ(store_->Read(key, opts).value, "41") << key;
    req.mode = StoreMode::kAppend;
    req.value = "0";
    ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored) << key;
    EXPECT_EQ(Read(key).value, "410") << key;
    ArithRequest ar;
    ar.key = key;
    ar.key_hash = hash;
    const ArithResult sum = store_->Arithmetic(ar);
    EXPECT_EQ(sum.status, ArithStatus::kOk) << key;
    EXPECT_EQ(sum.value, 411u) << key;
    EXPECT_TRUE(store_->Touch(key, 100, nullptr, hash)) << key;
    EXPECT_EQ(Read(key).ttl_before, 100) << key;
    EXPECT_EQ(store_->Delete(DeleteRequest{.key = key, .key_hash = hash}), DeleteStatus::kDeleted) << key;
    EXPECT_EQ(Read(key).status, ReadStatus::kMiss) << key;
  }
  EXPECT_EQ(Read("user:1235").status, ReadStatus::kMiss);
}

// ReadOptions::details = false (a classic get): the same hit, counted and
// bumped alike, without the TTLs, access time, frequency and recompute time.
TEST_F(ItemStoreTest, ReadWithoutDetailsLeavesThemAtTheirDefaults) {
  StoreRequest req;
  req.key = "k";
  req.value = "v";
  req.client_flags = 7;
  req.exptime = 60;
  const uint64_t cas = store_->Store(req).cas;
  clock_.AdvanceSeconds(5);
  ReadOptions plain;
  plain.details = false;
  const ReadResult a = store_->Read("k", plain);
  ASSERT_EQ(a.status, ReadStatus::kHit);
  EXPECT_EQ(a.value, "v");
  EXPECT_EQ(a.client_flags, 7u);
  EXPECT_EQ(a.cas, cas);
  const ReadResult defaults;
  EXPECT_EQ(a.ttl_before, defaults.ttl_before);
  EXPECT_EQ(a.ttl_after, defaults.ttl_after);
  EXPECT_EQ(a.fetched_before, defaults.fetched_before);
  EXPECT_EQ(a.seconds_since_access, defaults.seconds_since_access);
  EXPECT_EQ(a.frequency, defaults.frequency);
  EXPECT_EQ(a.recompute_ms, defaults.recompute_ms);
  // The read without details was a read all the same: fetched, bumped, counted.
  clock_.AdvanceSeconds(2);
  const ReadResult b = store_->Read("k", ReadOptions());
  EXPECT_EQ(b.ttl_before, 53);
  EXPECT_EQ(b.ttl_after, 53);
  EXPECT_TRUE(b.fetched_before);
  EXPECT_EQ(b.seconds_since_access, 2);
  EXPECT_EQ(b.frequency, 1);
  uint64_t get_hits = 0;
  const StoreStats stats = store_->Stats();
  for (const StoreStats::Class& c : stats.classes) get_hits += c.get_hits;
  EXPECT_EQ(get_hits, 2u);
}

TEST_F(ItemStoreTest, EveryStoreGetsANewCas) {
  const uint64_t a = Put("k", "1").cas;
  const uint64_t b = Put("k", "2").cas;
  const uint64_t c = Put("other", "3").cas;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
}

TEST_F(ItemStoreTest, ReadOfMissingKeyIsAMiss) {
  ReadResult r = Read("nope");
  EXPECT_EQ(r.status, ReadStatus::kMiss);
  EXPECT_FALSE(r.item);
}

TEST_F(ItemStoreTest, AddFailsWhenKeyExists) {
  ASSERT_EQ(Put("k", "old").status, StoreStatus::kStored);
  EXPECT_EQ(Put("k", "new", 0, StoreMode::kAdd).status, StoreStatus::kNotStored);
  EXPECT_EQ(Get("k"), "old");
}

TEST_F(ItemStoreTest, AddStoresWhenKeyIsMissingOrExpired) {
  EXPECT_EQ(Put("k", "v", 0, StoreMode::kAdd).status, StoreStatus::kStored);
  ASSERT_EQ(Put("e", "old", 5).status, StoreStatus::kStored);
  clock_.AdvanceSeconds(5);
  EXPECT_EQ(Put("e", "new", 0, StoreMode::kAdd).status, StoreStatus::kStored);
  EXPECT_EQ(Get("e"), "new");
}

TEST_F(ItemStoreTest, ReplaceNeedsAnExistingItem) {
  EXPECT_EQ(Put("k", "v", 0, StoreMode::kReplace).status, StoreStatus::kNotStored);
  EXPECT_EQ(Get("k"), std::nullopt);
  Put("k", "old");
  EXPECT_EQ(Put("k", "new", 0, StoreMode::kReplace).status, StoreStatus::kStored);
  EXPECT_EQ(Get("k"), "new");
}

TEST_F(ItemStoreTest, AppendAndPrependKeepFlagsAndTtl) {
  Put("k", "mid", 50, StoreMode::kSet, 9);
  EXPECT_EQ(Put("k", "-end", 0, StoreMode::kAppend, 1).status, StoreStatus::kStored);
  EXPECT_EQ(Put("k", "start-", 999, StoreMode::kPrepend, 2).status, StoreStatus::kStored);
  ReadResult r = Read("k");
  EXPECT_EQ(r.value, "start-mid-end");
  EXPECT_EQ(r.client_flags, 9u);
  EXPECT_EQ(r.ttl_before, 50);
}

TEST_F(ItemStoreTest, AppendNeedsAnExistingItem) {
  EXPECT_EQ(Put("k", "x", 0, StoreMode::kAppend).status, StoreStatus::kNotStored);
  EXPECT_EQ(Put("k", "x", 0, StoreMode::kPrepend).status, StoreStatus::kNotStored);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, AppendWithVivifyCreatesTheItemFromItsData) {
  StoreRequest req;
  req.mode = StoreMode::kAppend;
  req.key = "k";
  req.value = "data";
  req.client_flags = 3;
  req.create_on_miss = true;
  req.create_exptime = 30;
  ASSERT_EQ(store_->Store(req).status, StoreStatus::kStored);
  ReadResult r = Read("k");
  EXPECT_EQ(r.value, "data");
  EXPECT_EQ(r.client_flags, 3u);
  EXPECT_EQ(r.ttl_before, 30);
}

TEST_F(ItemStoreTest, AppendWithMismatchedCasIsExists) {
  const uint64_t cas = Put("k", "a").cas;
  StoreRequest req;
  req.mode = StoreMode::kAppend;
  req.key = "k";
  req.value = "b";
  req.compare_cas = cas + 100;
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kExists);
  req.compare_cas = cas;
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kStored);
  EXPECT_EQ(Get("k"), "ab");
}

TEST_F(ItemStoreTest, CasIsNotFoundWhenMissing) {
  EXPECT_EQ(Cas("k", "v", 5).status, StoreStatus::kNotFound);
}

TEST_F(ItemStoreTest, CasMismatchIsExistsAndMatchStores) {
  const uint64_t cas = Put("k", "old").cas;
  EXPECT_EQ(Cas("k", "x", cas + 1).status, StoreStatus::kExists);
  EXPECT_EQ(Cas("k", "x", 0).status, StoreStatus::kExists);  // memcached: 0 never matches
  StoreResult s = Cas("k", "new", cas);
  EXPECT_EQ(s.status, StoreStatus::kStored);
  EXPECT_NE(s.cas, cas);
  EXPECT_EQ(Get("k"), "new");
  EXPECT_EQ(Cas("k", "again", cas).status, StoreStatus::kExists);
}

TEST_F(ItemStoreTest, MetaSetWithCompareCasActsAsCas) {
  const uint64_t cas = Put("k", "old").cas;
  StoreRequest req;
  req.mode = StoreMode::kSet;
  req.key = "k";
  req.value = "new";
  req.compare_cas = cas + 7;
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kExists);
  req.key = "missing";
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kNotFound);
}

TEST_F(ItemStoreTest, ExplicitNewCasIsUsed) {
  StoreRequest req;
  req.key = "k";
  req.value = "v";
  req.new_cas = 777;
  EXPECT_EQ(store_->Store(req).cas, 777u);
  EXPECT_EQ(Read("k").cas, 777u);
}

// --- Time --------------------------------------------------------------------

TEST_F(ItemStoreTest, RelativeExptimeExpiresExactlyAtItsSecond) {
  Put("k", "v", 10);
  clock_.AdvanceSeconds(9);
  EXPECT_EQ(Read("k").ttl_before, 1);
  clock_.AdvanceMicros(999999);
  EXPECT_EQ(Get("k"), "v");
  clock_.AdvanceMicros(1);
  EXPECT_EQ(Get("k"), std::nullopt);
}

// Expiry is kept in ticks of 1/8 s (storage/store_time.h): an item lives
// its TTL, less at most one tick, wherever in a second it was stored (with
// whole-second expiry, as memcached's, it would live 9.1 s here).
TEST_F(ItemStoreTest, AnItemStoredMidSecondLivesItsWholeTtl) {
  clock_.AdvanceMicros(900000);   // 100.9 s
  Put("k", "v", 10);
  EXPECT_EQ(Read("k").ttl_before, 10);   // memcached's t right after a set
  clock_.AdvanceMicros(9600000);  // 110.5 s
  EXPECT_EQ(Read("k").ttl_before, 1);
  clock_.AdvanceMicros(300000);   // 110.8 s
  EXPECT_EQ(Get("k"), "v");
  clock_.AdvanceMicros(150000);   // 110.95 s
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, TouchAndGatGiveASubSecondExpiryToo) {
  Put("k", "v", 10);
  clock_.AdvanceMicros(500000);   // 100.5 s
  EXPECT_TRUE(store_->Touch("k", 5));
  clock_.AdvanceMicros(4900000);  // 105.4 s
  EXPECT_EQ(Get("k"), "v");
  ReadOptions gat;
  gat.has_touch = true;
  gat.touch_exptime = 2;          // until 107.4 s
  EXPECT_EQ(store_->Read("k", gat).ttl_after, 2);
  clock_.AdvanceMicros(1950000);  // 107.35 s
  EXPECT_EQ(Get("k"), "v");
  clock_.AdvanceMicros(100000);   // 107.45 s
  EXPECT_EQ(Get("k"), std::nullopt);
}

// An item stored without a TTL has no field for one: the touch copies it with
// room first, and the read still reports (and judges) the TTL it had before.
TEST_F(ItemStoreTest, FirstTouchOfAnItemWithoutTtlReportsTheOldTtlBefore) {
  Put("k", "v");
  ReadOptions gat;
  gat.kind = ReadKind::kMeta;
  gat.has_touch = true;
  gat.touch_exptime = 100;
  const ReadResult r = store_->Read("k", gat);
  EXPECT_EQ(r.ttl_before, -1);
  EXPECT_EQ(r.ttl_after, 100);
  EXPECT_EQ(Read("k").ttl_before, 100);
}

TEST_F(ItemStoreTest, ExpiryTicksOfRelativeAbsoluteAndNegativeExptimes) {
  clock_.AdvanceMicros(300000);   // 100.3 s: tick 802
  const int64_t now_tick = 100 * kTicksPerSecond + 2;
  EXPECT_EQ(store_->ToExpiryTick(0), 0);
  EXPECT_EQ(store_->ToExpiryTick(10), now_tick + 10 * kTicksPerSecond);
  EXPECT_EQ(store_->ToExpiryTick(2592000), now_tick + int64_t{2592000} * kTicksPerSecond);
  EXPECT_LT(store_->ToExpiryTick(2592001), now_tick);   // Unix time 1970 + 30 days: past
  EXPECT_LT(store_->ToExpiryTick(-1), now_tick);
  EXPECT_NE(store_->ToExpiryTick(-1), 0);
  // Absolute Unix times are whole seconds, as the client gives them.
  EXPECT_EQ(store_->ToExpiryTick(clock_.UnixSeconds() + 100), 200 * kTicksPerSecond);
  EXPECT_LT(store_->ToExpiryTick(clock_.UnixSeconds()), now_tick);
}

// An int32 of ticks reaches 2^31 / 8 s (8.5 years) after process start: a
// later absolute exptime is clamped to that, and the item expires then.
TEST_F(ItemStoreTest, FarFutureAbsoluteExptimeIsClampedToTheTickRange) {
  const int64_t far = clock_.UnixSeconds() + int64_t{20} * 365 * 86400;
  EXPECT_EQ(store_->ToExpiryTick(far), INT32_MAX);
  Put("k", "v", far);
  const int64_t left_s = (int64_t{INT32_MAX} + kTicksPerSecond - 1) / kTicksPerSecond - 100;
  EXPECT_EQ(Read("k").ttl_before, left_s);
  clock_.AdvanceSeconds(left_s - 1);
  EXPECT_EQ(Get("k"), "v");
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(Get("k"), std::nullopt);
  Put("never", "v", 0);   // no TTL is not concerned
  EXPECT_EQ(Get("never"), "v");
}

TEST_F(ItemStoreTest, WalkShowsTheSecondTheExpiryFallsIn) {
  clock_.AdvanceMicros(900000);   // 100.9 s: expires at 110.875 s
  Put("k", "v", 10);
  Put("never", "v", 0);
  std::map<std::string, int64_t> exptimes;
  WalkCursor cursor;
  while (!cursor.done) {
    store_->Walk(&cursor, 64, [&](const WalkedItem& w) { exptimes[std::string(w.key)] = w.exptime; });
  }
  EXPECT_EQ(exptimes["k"], 110);
  EXPECT_EQ(SecondOfTick(-1), -1);
  EXPECT_EQ(SecondOfTick(1), -1);   // "expired" in the first second, not "never"
  EXPECT_EQ(SecondOfTick(8), 1);
  EXPECT_EQ(exptimes["never"], 0);
}

// Snapshots keep Unix seconds: a restored expiry is the start of that second.
TEST_F(ItemStoreTest, RestoredExpiryIsItsUnixSecond) {
  clock_.AdvanceMicros(300000);   // 100.3 s
  RestoreRequest req;
  req.key = "k";
  req.value = "v";
  req.exptime_unix = clock_.UnixSeconds() + 10;   // store second 110
  ASSERT_EQ(store_->Restore(req), StoreStatus::kStored);
  EXPECT_EQ(Read("k").ttl_before, 10);
  clock_.AdvanceMicros(9600000);  // 109.9 s
  EXPECT_EQ(Get("k"), "v");
  clock_.AdvanceMicros(100000);   // 110 s
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, NegativeExptimeIsAlreadyExpired) {
  Put("k", "old");
  EXPECT_EQ(Put("k", "v", -1).status, StoreStatus::kStored);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, NegativeExptimeIsExpiredEvenAtStoreTimeZero) {
  ManualClock fresh_clock(kUnixStart);
  config_.clock = &fresh_clock;
  Reset();
  EXPECT_NE(store_->ToStoreTime(-5), 0);
  EXPECT_LE(store_->ToStoreTime(-5), store_->NowSeconds());
  Put("k", "v", -5);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, ThirtyDaysIsTheLastRelativeExptime) {
  EXPECT_EQ(store_->ToStoreTime(2592000), 100 + 2592000);
  // One more is a Unix time (1970 + 30 days): long past, so already expired.
  Put("k", "v", 2592001);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, AbsoluteExptimeIsConvertedFromUnixTime) {
  const int64_t unix_now = clock_.UnixSeconds();
  Put("k", "v", unix_now + 100);
  EXPECT_EQ(Read("k").ttl_before, 100);
  clock_.AdvanceSeconds(100);
  EXPECT_EQ(Get("k"), std::nullopt);
  Put("past", "v", unix_now - 10);
  EXPECT_EQ(Get("past"), std::nullopt);
}

TEST_F(ItemStoreTest, ZeroExptimeNeverExpires) {
  Put("k", "v", 0);
  clock_.AdvanceSeconds(10 * 365 * 86400);
  EXPECT_EQ(Get("k"), "v");
  EXPECT_EQ(store_->ToStoreTime(0), 0);
}

TEST_F(ItemStoreTest, TouchChangesTtlButNotCas) {
  const uint64_t cas = Put("k", "v", 10).cas;
  EXPECT_TRUE(store_->Touch("k", 100));
  ReadResult r = Read("k");
  EXPECT_EQ(r.ttl_before, 100);
  EXPECT_EQ(r.cas, cas);
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(Get("k"), "v");
  EXPECT_FALSE(store_->Touch("missing", 10));
}

TEST_F(ItemStoreTest, TouchMarksTheItemFetched) {
  Put("k", "v");
  store_->Touch("k", 10);
  ReadOptions opts;
  opts.kind = ReadKind::kMeta;
  EXPECT_TRUE(store_->Read("k", opts).fetched_before);
}

TEST_F(ItemStoreTest, GatReportsTtlBeforeAndAfterTheTouch) {
  Put("k", "v", 10);
  ReadOptions opts;
  opts.has_touch = true;
  opts.touch_exptime = 60;
  ReadResult r = store_->Read("k", opts);
  EXPECT_EQ(r.ttl_before, 10);
  EXPECT_EQ(r.ttl_after, 60);
  EXPECT_EQ(Read("k").ttl_before, 60);
}

TEST_F(ItemStoreTest, FetchedAndLastAccessAreReportedBeforeTheBump) {
  Put("k", "v");
  clock_.AdvanceSeconds(7);
  ReadOptions no_bump;
  no_bump.kind = ReadKind::kMeta;
  no_bump.bump = false;
  ReadResult r = store_->Read("k", no_bump);
  EXPECT_FALSE(r.fetched_before);
  EXPECT_EQ(r.seconds_since_access, 7);
  r = Read("k");  // bumps
  EXPECT_FALSE(r.fetched_before);
  EXPECT_EQ(r.seconds_since_access, 7);
  r = Read("k");
  EXPECT_TRUE(r.fetched_before);
  EXPECT_EQ(r.seconds_since_access, 0);
}

// --- Flush -------------------------------------------------------------------

TEST_F(ItemStoreTest, FlushAllNowDropsEverything) {
  for (int i = 0; i < 100; i++) Put("k" + std::to_string(i), "v");
  store_->FlushAll(0);
  for (int i = 0; i < 100; i++) EXPECT_EQ(Get("k" + std::to_string(i)), std::nullopt);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
  EXPECT_EQ(store_->Stats().bytes, 0u);
  Put("after", "v");
  EXPECT_EQ(Get("after"), "v");
}

TEST_F(ItemStoreTest, DelayedFlushDropsItemsStoredBeforeItsDeadline) {
  Put("early", "v");
  store_->FlushAll(10);
  clock_.AdvanceSeconds(5);
  EXPECT_EQ(Get("early"), "v");
  Put("before_deadline", "v");
  clock_.AdvanceSeconds(5);  // the deadline
  Put("at_deadline", "v");
  EXPECT_EQ(Get("early"), std::nullopt);
  EXPECT_EQ(Get("before_deadline"), std::nullopt);
  EXPECT_EQ(Get("at_deadline"), "v");
  clock_.AdvanceSeconds(100);
  EXPECT_EQ(Get("at_deadline"), "v");
}

TEST_F(ItemStoreTest, FlushedItemsStayGoneWhenANewDelayedFlushIsScheduled) {
  Put("old", "v");
  store_->FlushAll(2);
  clock_.AdvanceSeconds(3);
  store_->FlushAll(100);
  EXPECT_EQ(Get("old"), std::nullopt);
}

TEST_F(ItemStoreTest, ReclaimRemovesDelayedFlushedItems) {
  for (int i = 0; i < 20; i++) Put("k" + std::to_string(i), "v");
  store_->FlushAll(1);
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(store_->ReclaimExpired(1000), 20u);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
}

// --- Memory ------------------------------------------------------------------

TEST_F(ItemStoreTest, EvictionKeepsMemoryUnderTheLimitAndCountsEvictions) {
  config_.memory_limit = 64 * 1024;
  Reset();
  const std::string value(1000, 'x');
  for (int i = 0; i < 500; i++) {
    ASSERT_EQ(Put("key" + std::to_string(i), value).status, StoreStatus::kStored);
    ASSERT_LE(store_->Stats().bytes, config_.memory_limit);
  }
  const StoreStats s = store_->Stats();
  EXPECT_GT(s.evictions, 400u);
  EXPECT_EQ(s.evicted_unfetched, s.evictions);
  EXPECT_EQ(s.curr_items + s.evictions, 500u);
  EXPECT_EQ(Get("key499"), value);  // the newest survives
  EXPECT_EQ(Get("key0"), std::nullopt);
}

TEST_F(ItemStoreTest, EvictionCountsStaleItemsEvictedAndExpiredOnesReclaimed) {
  config_.shard_bits = 0;
  config_.memory_limit = 64 * 1024;   // four 16 KiB segments
  Reset();
  const std::string value(100, 'v');
  Put("k0", value);
  Put("k1", value, 5);
  Put("k2", value);
  DeleteRequest inv;
  inv.key = "k2";
  inv.mark_stale = true;
  ASSERT_EQ(store_->Delete(inv), DeleteStatus::kDeleted);
  clock_.AdvanceSeconds(5);
  // Fill until the segment of k0..k2 (the oldest) is evicted.
  for (int i = 0; store_->Stats().evictions + store_->Stats().reclaimed < 3; i++) {
    Put("fill" + std::to_string(i), value);
  }
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.reclaimed, 1u);            // k1, expired
  EXPECT_EQ(s.expired_unfetched, 1u);
  EXPECT_EQ(Get("k0"), std::nullopt);
  ReadOptions meta;
  meta.kind = ReadKind::kMeta;
  EXPECT_EQ(store_->Read("k2", meta).status, ReadStatus::kMiss);
}

TEST_F(ItemStoreTest, LowerMemoryLimitEvictsOnTheNextStore) {
  config_.memory_limit = size_t{16} << 20;   // 64 KiB segments
  Reset();
  const std::string value(1000, 'x');
  for (int i = 0; i < 1000; i++) Put("k" + std::to_string(i), value);
  store_->SetMemoryLimit(256 * 1024);
  EXPECT_EQ(store_->memory_limit(), 256u * 1024);
  // Each store over the limit gives back one segment (1000 items span 16).
  for (int i = 0; i < 40; i++) Put("one_more" + std::to_string(i), value);
  EXPECT_LE(store_->Stats().total_malloced, 256u * 1024);
  EXPECT_EQ(Get("one_more39"), value);
}

TEST_F(ItemStoreTest, AnItemBiggerThanAllMemoryIsNoMemory) {
  config_.memory_limit = 4096;
  Reset();
  Put("small", "v");
  EXPECT_EQ(Put("big", std::string(8000, 'x')).status, StoreStatus::kNoMemory);
  EXPECT_EQ(Get("small"), "v");  // nothing was evicted for a hopeless store
}

TEST_F(ItemStoreTest, MaxValueLengthFollowsMemcachedsItemSizeRule) {
  // Checked against memcached 1.6.18 -I 1m: key "k" takes values up to 1048516
  // bytes with flags 0 and 4 bytes fewer with non-zero flags.
  EXPECT_EQ(store_->MaxValueLength(1), 1048516u);
  EXPECT_EQ(Put("k", std::string(1048516, 'x')).status, StoreStatus::kStored);
  EXPECT_EQ(Put("k", std::string(1048517, 'x')).status, StoreStatus::kTooLarge);
  EXPECT_EQ(Put("f", std::string(1048512, 'x'), 0, StoreMode::kSet, 1).status,
            StoreStatus::kStored);
  EXPECT_EQ(Put("f", std::string(1048513, 'x'), 0, StoreMode::kSet, 1).status,
            StoreStatus::kTooLarge);
}

TEST_F(ItemStoreTest, TooLargeSetRemovesTheOldItem) {
  Put("k", "old");
  EXPECT_EQ(Put("k", std::string(2 << 20, 'x')).status, StoreStatus::kTooLarge);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, TooLargeAddOrReplaceKeepsTheOldItem) {
  Put("k", "old");
  EXPECT_EQ(Put("k", std::string(2 << 20, 'x'), 0, StoreMode::kAdd).status,
            StoreStatus::kTooLarge);
  EXPECT_EQ(Put("k", std::string(2 << 20, 'x'), 0, StoreMode::kReplace).status,
            StoreStatus::kTooLarge);
  EXPECT_EQ(Get("k"), "old");
}

TEST_F(ItemStoreTest, TooLargeMetaStoreRemovesTheOldItemInAnyMode) {
  Put("k", "old");
  StoreRequest req;
  req.mode = StoreMode::kAdd;
  req.key = "k";
  req.value = std::string(2 << 20, 'x');
  req.unlink_on_failure = true;
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kTooLarge);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, AppendBeyondTheItemSizeLimitIsNotStored) {
  Put("k", std::string(1048516 - 10, 'x'));
  EXPECT_EQ(Put("k", std::string(11, 'y'), 0, StoreMode::kAppend).status,
            StoreStatus::kNotStored);
  EXPECT_EQ(Get("k")->size(), 1048516u - 10);
}

// --- Delete ------------------------------------------------------------------

TEST_F(ItemStoreTest, DeleteRemovesAndReportsMisses) {
  Put("k", "v");
  EXPECT_EQ(Del("k"), DeleteStatus::kDeleted);
  EXPECT_EQ(Get("k"), std::nullopt);
  EXPECT_EQ(Del("k"), DeleteStatus::kNotFound);
}

// What a delete's, touch's and incr's lookup found, for the watcher's item_get
// line: the live item's sizes, or the expired or flushed copy it removed.
TEST_F(ItemStoreTest, DeleteTouchAndIncrReportWhatTheirLookupFound) {
  Put("d", "v", 5);
  Put("t", "v", 5);
  Put("n", "41", 5);
  Put("live", "12345", 0, StoreMode::kSet, 7);
  clock_.AdvanceSeconds(6);
  DeleteRequest::Removed removed;
  EXPECT_EQ(store_->Delete(DeleteRequest{.key = "d", .removed = &removed}), DeleteStatus::kNotFound);
  EXPECT_FALSE(removed.live);
  EXPECT_EQ(removed.miss, LookupMiss::kExpired);
  FoundItem touched;
  EXPECT_FALSE(store_->Touch("t", 10, &touched));
  EXPECT_EQ(touched.miss, LookupMiss::kExpired);
  EXPECT_EQ(Arith("n", true, 1).found.miss, LookupMiss::kExpired);
  EXPECT_EQ(Arith("n", true, 1).found.miss, LookupMiss::kAbsent);   // the copy is gone now
  ASSERT_EQ(store_->Delete(DeleteRequest{.key = "live", .removed = &removed}), DeleteStatus::kDeleted);
  EXPECT_TRUE(removed.live);
  EXPECT_EQ(removed.value_len, 5u);
  EXPECT_EQ(removed.client_flags, 7u);
  Put("f", "v");
  store_->FlushAll(1);
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(store_->Delete(DeleteRequest{.key = "f", .removed = &removed}), DeleteStatus::kNotFound);
  EXPECT_EQ(removed.miss, LookupMiss::kFlushed);
}

TEST_F(ItemStoreTest, DeleteWithCompareCas) {
  const uint64_t cas = Put("k", "v").cas;
  DeleteRequest req;
  req.key = "k";
  req.compare_cas = cas + 1;
  EXPECT_EQ(store_->Delete(req), DeleteStatus::kExists);
  req.compare_cas = cas;
  EXPECT_EQ(store_->Delete(req), DeleteStatus::kDeleted);
}

TEST_F(ItemStoreTest, InvalidateKeepsTheValueForMetaButClassicIgnoresStaleness) {
  const uint64_t cas = Put("k", "v", 100).cas;
  DeleteRequest req;
  req.key = "k";
  req.mark_stale = true;
  req.has_ttl = true;
  req.exptime = 30;
  ASSERT_EQ(store_->Delete(req), DeleteStatus::kDeleted);
  ReadResult classic = Read("k");
  ASSERT_EQ(classic.status, ReadStatus::kHit);  // memcached: get ignores X
  EXPECT_FALSE(classic.stale);
  EXPECT_NE(classic.cas, cas);
  EXPECT_EQ(classic.ttl_before, 30);
}

// --- incr / decr -------------------------------------------------------------

TEST_F(ItemStoreTest, IncrAddsAndChangesCas) {
  const uint64_t cas = Put("n", "41").cas;
  ArithResult a = Arith("n", true, 1);
  ASSERT_EQ(a.status, ArithStatus::kOk);
  EXPECT_EQ(a.value, 42u);
  EXPECT_NE(a.cas, cas);
  ReadResult r = Read("n");
  EXPECT_EQ(r.value, "42");
  EXPECT_EQ(r.cas, a.cas);
}

TEST_F(ItemStoreTest, TotalItemsCountsAnIncrOnlyWhenTheNumberOutgrowsItsItem) {
  Put("n", "98");
  ASSERT_EQ(store_->Stats().total_items, 1u);
  Arith("n", true, 1);   // 99: memcached rewrites it in place
  Arith("n", false, 50); // "49", still fits
  EXPECT_EQ(store_->Stats().total_items, 1u);
  Arith("n", true, 51);  // 100: one digit longer, a new item in memcached too
  EXPECT_EQ(Get("n"), "100");
  EXPECT_EQ(store_->Stats().total_items, 2u);
}

// memcached rewrites a shorter number in place only in an item no unsent
// reply references; a referenced one is replaced by a new item of the
// number's length, unread (its CAS names it: another item's is no matter).
TEST_F(ItemStoreTest, AnIncrOfAReferencedItemWritesANewItem) {
  const uint64_t shown = Put("n", "100").cas;
  Read("n");
  const uint64_t others[] = {shown + 1000};
  ArithRequest req;
  req.key = "n";
  req.incr = false;
  req.referenced = others;
  ASSERT_EQ(store_->Arithmetic(req).status, ArithStatus::kOk);
  EXPECT_EQ(Get("n"), "99 ");   // in place
  EXPECT_EQ(store_->Stats().total_items, 1u);

  const uint64_t held[] = {Read("n").cas};
  req.referenced = held;
  ASSERT_EQ(store_->Arithmetic(req).status, ArithStatus::kOk);
  ReadOptions peek;
  peek.kind = ReadKind::kMeta;
  peek.bump = false;
  const ReadResult r = store_->Read("n", peek);
  EXPECT_EQ(r.value, "98");
  EXPECT_FALSE(r.fetched_before);
  EXPECT_EQ(store_->Stats().total_items, 2u);
}

// memcached 1.6.18 and 1.6.45: an incr marks the item accessed; one whose
// number outgrows the item makes a new item, unread and not stale.
TEST_F(ItemStoreTest, IncrIsAnAccessAndAGrownNumberIsANewItem) {
  ReadOptions peek;
  peek.kind = ReadKind::kMeta;
  peek.bump = false;
  Put("n", "500");
  Read("n");
  clock_.AdvanceSeconds(7);
  Arith("n", true, 1);   // "501": in place
  ReadResult r = store_->Read("n", peek);
  EXPECT_TRUE(r.fetched_before);
  EXPECT_EQ(r.seconds_since_access, 0);

  Put("g", "5");
  Read("g");
  DeleteRequest invalidate;
  invalidate.key = "g";
  invalidate.mark_stale = true;
  ASSERT_EQ(store_->Delete(invalidate), DeleteStatus::kDeleted);
  ASSERT_TRUE(store_->Read("g", peek).stale);
  clock_.AdvanceSeconds(3);
  Arith("g", true, 100);   // "105": a new item
  r = store_->Read("g", peek);
  EXPECT_EQ(r.value, "105");
  EXPECT_FALSE(r.fetched_before);
  EXPECT_FALSE(r.stale);
  EXPECT_EQ(r.seconds_since_access, 0);
}

TEST_F(ItemStoreTest, IncrWrapsAt2To64) {
  Put("n", "18446744073709551615");
  EXPECT_EQ(Arith("n", true, 2).value, 1u);
  EXPECT_EQ(Get("n"), "1                   ");  // same length, padded as memcached
}

TEST_F(ItemStoreTest, DecrFloorsAtZero) {
  Put("n", "5");
  EXPECT_EQ(Arith("n", false, 10).value, 0u);
  EXPECT_EQ(Get("n"), "0");
}

TEST_F(ItemStoreTest, ShorterResultIsSpacePaddedAsMemcached) {
  // memcached 1.6.18: set n "10"; decr n 1; get n -> "9 ".
  Put("n", "10");
  EXPECT_EQ(Arith("n", false, 1).value, 9u);
  EXPECT_EQ(Get("n"), "9 ");
  EXPECT_EQ(Arith("n", true, 1).value, 10u);  // "9 " still parses
  EXPECT_EQ(Get("n"), "10");
}

TEST_F(ItemStoreTest, LongerResultGrowsTheValue) {
  Put("n", "99", 50, StoreMode::kSet, 5);
  EXPECT_EQ(Arith("n", true, 1).value, 100u);
  ReadResult r = Read("n");
  EXPECT_EQ(r.value, "100");
  EXPECT_EQ(r.client_flags, 5u);
  EXPECT_EQ(r.ttl_before, 50);
}

TEST_F(ItemStoreTest, NonNumericValuesAreRefused) {
  for (std::string_view bad : {"", "abc", "12abc", "-5", "99999999999999999999999"}) {
    Put("n", bad);
    EXPECT_EQ(Arith("n", true, 1).status, ArithStatus::kNonNumeric) << bad;
  }
  // strtoull's leniency, as memcached: white space around and "12 abc".
  Put("n", " 12 ");
  EXPECT_EQ(Arith("n", true, 1).value, 13u);
  Put("n", "12 abc");
  EXPECT_EQ(Arith("n", true, 1).value, 13u);
  EXPECT_EQ(Get("n"), "13    ");
}

TEST_F(ItemStoreTest, ArithmeticOnAMissingKeyIsNotFound) {
  EXPECT_EQ(Arith("n", true, 1).status, ArithStatus::kNotFound);
}

TEST_F(ItemStoreTest, MetaArithmeticVivifiesWithTheInitialValue) {
  ArithRequest req;
  req.key = "n";
  req.create_on_miss = true;
  req.create_exptime = 30;
  req.initial = 5;
  ArithResult a = store_->Arithmetic(req);
  ASSERT_EQ(a.status, ArithStatus::kOk);
  EXPECT_TRUE(a.created);
  EXPECT_EQ(a.value, 5u);  // memcached: no delta on creation
  EXPECT_EQ(a.ttl, 30);
  a = store_->Arithmetic(req);
  EXPECT_FALSE(a.created);
  EXPECT_EQ(a.value, 6u);
  EXPECT_EQ(a.ttl, 30);
}

TEST_F(ItemStoreTest, MetaArithmeticHonoursCompareCasAndTtl) {
  const uint64_t cas = Put("n", "1").cas;
  ArithRequest req;
  req.key = "n";
  req.compare_cas = cas + 1;
  EXPECT_EQ(store_->Arithmetic(req).status, ArithStatus::kExists);
  req.compare_cas = cas;
  req.has_ttl = true;
  req.exptime = 90;
  req.new_cas = 1234;
  ArithResult a = store_->Arithmetic(req);
  EXPECT_EQ(a.status, ArithStatus::kOk);
  EXPECT_EQ(a.ttl, 90);
  EXPECT_EQ(a.cas, 1234u);
}

// --- Item lifetime -----------------------------------------------------------

TEST_F(ItemStoreTest, ItemRefStaysValidAfterOverwriteAndDelete) {
  Put("k", "first");
  ReadResult r = Read("k");
  ASSERT_EQ(r.status, ReadStatus::kHit);
  Put("k", "second-and-longer");
  Put("k", "x", 0, StoreMode::kAppend);
  EXPECT_EQ(Del("k"), DeleteStatus::kDeleted);
  store_->FlushAll(0);
  EXPECT_EQ(r.value, "first");
  EXPECT_EQ(store_->Stats().bytes, 0u);  // unlinked items are uncharged at once
}

TEST_F(ItemStoreTest, ItemRefOutlivesTheStore) {
  Put("k", "v");
  ReadResult r = Read("k");
  store_.reset();
  EXPECT_EQ(r.value, "v");
}

TEST_F(ItemStoreTest, IncrNeverChangesBytesAReaderHolds) {
  Put("n", "10");
  ReadResult r = Read("n");
  Arith("n", false, 1);
  EXPECT_EQ(r.value, "10");
}

// --- Expiry crawl, stats, table growth -----------------------------------------

TEST_F(ItemStoreTest, ReclaimExpiredRemovesOnlyExpiredItems) {
  for (int i = 0; i < 50; i++) Put("short" + std::to_string(i), "v", 5);
  for (int i = 0; i < 50; i++) Put("long" + std::to_string(i), "v", 500);
  Read("short0");  // fetched once
  clock_.AdvanceSeconds(5);
  EXPECT_EQ(store_->ReclaimExpired(1000), 50u);
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.curr_items, 50u);
  // The background reclaim's removals are memcached's reclaimed (its LRU
  // maintainer's), not crawler_reclaimed (lru_crawler crawl's).
  EXPECT_EQ(s.reclaimed, 50u);
  EXPECT_EQ(s.crawler_reclaimed, 0u);
  EXPECT_EQ(s.crawler_items_checked, 0u);
  EXPECT_EQ(s.expired_unfetched, 49u);
  const int cls = MemcachedSlabClass(MemcachedItemSize(7, 1, 0));   // "short00"-sized
  EXPECT_GE(s.classes[cls].reclaimed, 1u);
  EXPECT_EQ(store_->ReclaimExpired(1000), 0u);
}

TEST_F(ItemStoreTest, ReclaimExpiredRespectsItsBudget) {
  for (int i = 0; i < 50; i++) Put("k" + std::to_string(i), "v", 1);
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(store_->ReclaimExpired(10), 10u);
  EXPECT_EQ(store_->Stats().curr_items, 40u);
}

// memcached counts an item that expires on access as get_expired (the
// protocol's), neither reclaimed nor expired_unfetched.
TEST_F(ItemStoreTest, LazyExpiryIsNotReclaimed) {
  Put("k", "v", 1);
  clock_.AdvanceSeconds(1);
  ReadOptions opts;
  EXPECT_TRUE(store_->Read("k", opts).miss_expired);
  EXPECT_EQ(store_->Stats().reclaimed, 0u);
  EXPECT_EQ(store_->Stats().expired_unfetched, 0u);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
}

// A store that finds its key's expired copy counts it reclaimed in the old
// item's class, as memcached's allocator does (t/issue_163.t); a read that
// finds it does not (above). Append and prepend store too.
TEST_F(ItemStoreTest, StoreOverItsExpiredCopyCountsReclaimed) {
  struct Case {
    StoreMode mode;
    bool read_first;   // the expired copy was fetched: not expired_unfetched
  };
  const Case cases[] = {{StoreMode::kSet, false}, {StoreMode::kSet, true}, {StoreMode::kAdd, false},
                        {StoreMode::kReplace, false}, {StoreMode::kAppend, false}};
  for (const Case& c : cases) {
    Reset();
    Put("k", std::string(300, 'a'), 5);
    if (c.read_first) Read("k");
    clock_.AdvanceSeconds(6);
    Put("k", "v", 0, c.mode);
    const StoreStats s = store_->Stats();
    const int old_class = MemcachedSlabClass(MemcachedItemSize(1, 300, 0));
    EXPECT_EQ(s.reclaimed, 1u) << static_cast<int>(c.mode);
    EXPECT_EQ(s.classes[old_class].reclaimed, 1u) << static_cast<int>(c.mode);
    EXPECT_EQ(s.expired_unfetched, c.read_first ? 0u : 1u) << static_cast<int>(c.mode);
  }
}

// flush_all's items count reclaimed (memcached's maintainer and allocator
// count flushed items so: t/issue_183.t); an lru_crawler crawl's removals
// count crawler_reclaimed instead.
TEST_F(ItemStoreTest, FlushedItemsCountReclaimedAndACrawlCountsCrawlerReclaimed) {
  Put("a", "1");
  Put("b", "2");
  Read("b");
  store_->FlushAll(0);
  StoreStats s = store_->Stats();
  EXPECT_EQ(s.reclaimed, 2u);
  EXPECT_EQ(s.expired_unfetched, 1u);
  Put("c", "3", 5);
  clock_.AdvanceSeconds(6);
  WalkCursor cursor;
  CrawlScope scope;
  scope.classes = ~uint64_t{0};
  while (!cursor.done) store_->Crawl(&cursor, 1024, &scope);
  s = store_->Stats();
  EXPECT_EQ(s.crawler_reclaimed, 1u);
  EXPECT_GE(s.crawler_items_checked, 1u);
  EXPECT_EQ(s.reclaimed, 2u);
}

TEST_F(ItemStoreTest, StatsCountItemsBytesAndResetKeepsTheGauges) {
  Put("a", "1");
  Put("b", "22");
  Put("a", "333");
  StoreStats s = store_->Stats();
  EXPECT_EQ(s.curr_items, 2u);
  EXPECT_EQ(s.total_items, 3u);
  // Items are counted their encoded size: a 13-byte header, key, value.
  EXPECT_EQ(s.bytes, (13u + 1 + 2) + (13u + 1 + 3));
  EXPECT_EQ(s.hash_buckets, 4u * 64 * 8);   // 4 shards of 64 buckets of 8 slots
  store_->ResetStats();
  s = store_->Stats();
  EXPECT_EQ(s.total_items, 0u);
  EXPECT_EQ(s.curr_items, 2u);
  EXPECT_GT(s.bytes, 0u);
}

TEST_F(ItemStoreTest, HashTableGrowsAndKeepsEveryKey) {
  config_.shard_bits = 0;
  Reset();
  for (int i = 0; i < 5000; i++) Put("key" + std::to_string(i), std::to_string(i));
  for (int i = 0; i < 5000; i++) ASSERT_EQ(Get("key" + std::to_string(i)), std::to_string(i));
  EXPECT_GE(store_->Stats().hash_buckets * 3 / 2, 5000u);
  for (int i = 0; i < 5000; i += 2) ASSERT_EQ(Del("key" + std::to_string(i)), DeleteStatus::kDeleted);
  for (int i = 1; i < 5000; i += 2) ASSERT_EQ(Get("key" + std::to_string(i)), std::to_string(i));
  EXPECT_EQ(store_->Stats().curr_items, 2500u);
}

// --- Stale grace and placeholders --------------------------------------------

TEST_F(ItemStoreTest, ExpiredItemWithinGraceIsAMissForClassicAndStaleForMeta) {
  config_.stale_grace_s = 10;
  Reset();
  Put("k", "old", 5);
  clock_.AdvanceSeconds(6);
  EXPECT_EQ(Read("k").status, ReadStatus::kMiss);
  ReadResult meta = Read("k", ReadKind::kMeta);
  ASSERT_EQ(meta.status, ReadStatus::kHit);
  EXPECT_TRUE(meta.stale);
  EXPECT_EQ(meta.value, "old");
  EXPECT_EQ(meta.lease, LeaseVerdict::kWin);
  EXPECT_EQ(store_->Stats().stale_hits, 1u);
  clock_.AdvanceSeconds(9);  // 15 s: 10 s past expiry
  EXPECT_EQ(Read("k", ReadKind::kMeta).status, ReadStatus::kMiss);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
}

TEST_F(ItemStoreTest, ClassicAddSucceedsOverAValueInGrace) {
  config_.stale_grace_s = 10;
  Reset();
  Put("k", "old", 5);
  clock_.AdvanceSeconds(5);
  EXPECT_EQ(Put("k", "new", 0, StoreMode::kAdd).status, StoreStatus::kStored);
  EXPECT_EQ(Get("k"), "new");
}

TEST_F(ItemStoreTest, LeaseGetMissMakesAPlaceholderThatClassicReadsCannotSee) {
  ReadResult r = Read("k", ReadKind::kLeaseGet);
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_TRUE(r.placeholder);
  EXPECT_EQ(r.lease, LeaseVerdict::kWin);
  EXPECT_GE(r.cas, 2u);
  EXPECT_EQ(r.value, "");

  EXPECT_EQ(Read("k").status, ReadStatus::kMiss);
  EXPECT_EQ(Read("k", ReadKind::kMeta).status, ReadStatus::kMiss);
  EXPECT_FALSE(store_->Touch("k", 10));
  EXPECT_EQ(Arith("k", true, 1).status, ArithStatus::kNotFound);
  EXPECT_EQ(Put("k", "x", 0, StoreMode::kReplace).status, StoreStatus::kNotStored);
  EXPECT_EQ(Put("k", "v", 0, StoreMode::kAdd).status, StoreStatus::kStored);
  EXPECT_EQ(Get("k"), "v");
}

// A fulfilled lease adds its recompute time to its shard's spread once, also
// when the new value's placement had to make room first and ran again.
TEST_F(ItemStoreTest, AFulfilledLeaseSmoothsTheSpreadOnceWhenItsPlacementRetries) {
  config_.memory_limit = 64 * 1024;   // four 16 KiB segments: the sets below make room
  config_.shard_bits = 0;
  Reset();
  double spread = kInitialSpread;
  uint16_t mean_ms = 0;
  const int64_t took_ms[] = {40, 10, 90, 25, 60, 5, 120, 30};
  const StoreStats before = store_->Stats();
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 6; ++i) PutFiller(store_.get(), "fill" + std::to_string(round * 6 + i), 3000);
    if (round > 0) {   // the value goes stale and keeps its recompute time
      DeleteRequest stale;
      stale.key = "k";
      stale.mark_stale = true;
      ASSERT_EQ(store_->Delete(stale), DeleteStatus::kDeleted) << round;
    }
    ASSERT_EQ(Read("k", ReadKind::kLeaseGet).lease, LeaseVerdict::kWin) << round;
    const int64_t ms = took_ms[round % 8];
    clock_.AdvanceMicros(ms * 1000);
    ASSERT_EQ(Put("k", std::string(3000, 'x')).status, StoreStatus::kStored) << round;
    spread = SmoothSpread(spread, ms, mean_ms);
    mean_ms = SmoothDelta(mean_ms, ms);
  }
  EXPECT_GT(store_->Stats().evictions, before.evictions + 100);   // placements did make room
  EXPECT_DOUBLE_EQ(store_->RecomputeSpreads()[0], spread);
}

// The recompute time is the time from grant to fulfil: a store that comes
// after the lease timed out (its holder gone, nobody took over) is no sample,
// neither of the key's time nor of its shard's spread.
TEST_F(ItemStoreTest, AStoreAfterTheLeaseTimedOutIsNoRecomputeTime) {
  config_.lease.lease_timeout_ms = 5000;
  config_.shard_bits = 0;
  Reset();
  ASSERT_EQ(Read("k", ReadKind::kLeaseGet).lease, LeaseVerdict::kWin);
  clock_.AdvanceMicros(40 * 1000);
  ASSERT_EQ(Put("k", "v").status, StoreStatus::kStored);
  EXPECT_EQ(Read("k", ReadKind::kMeta).recompute_ms, 40);
  const double spread = store_->RecomputeSpreads()[0];

  DeleteRequest stale;
  stale.key = "k";
  stale.mark_stale = true;
  ASSERT_EQ(store_->Delete(stale), DeleteStatus::kDeleted);
  ASSERT_EQ(Read("k", ReadKind::kLeaseGet).lease, LeaseVerdict::kWin);
  clock_.AdvanceSeconds(6);
  ASSERT_EQ(Put("k", "w").status, StoreStatus::kStored);
  EXPECT_EQ(Read("k", ReadKind::kMeta).recompute_ms, 40);
  EXPECT_DOUBLE_EQ(store_->RecomputeSpreads()[0], spread);
  EXPECT_EQ(store_->Stats().lease_fulfilled, 2u);   // it did end the lease
}

TEST_F(ItemStoreTest, DeleteOfAPlaceholderIsNotFoundButCancelsTheLease) {
  const uint64_t token = Read("k", ReadKind::kLeaseGet).cas;
  EXPECT_EQ(Del("k"), DeleteStatus::kNotFound);
  StoreRequest req;
  req.key = "k";
  req.value = "v";
  req.lease_token = token;
  EXPECT_EQ(store_->Store(req).status, StoreStatus::kNotStored);
  EXPECT_EQ(store_->Stats().curr_leases, 0u);
}

TEST_F(ItemStoreTest, PlaceholderExpiresWithoutBecomingAStaleValue) {
  config_.stale_grace_s = 100;
  config_.lease.lease_timeout_ms = 2000;
  Reset();
  Read("k", ReadKind::kLeaseGet);
  clock_.AdvanceSeconds(3);  // the placeholder lives lease timeout + 1 s
  EXPECT_EQ(store_->ReclaimExpired(100), 1u);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
}

// --- Concurrency -------------------------------------------------------------

TEST_F(ItemStoreTest, ConcurrentWritersAndReadersNeverSeeATornValue) {
  config_.memory_limit = 256 * 1024;  // small, so eviction runs too
  Reset();
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  constexpr int kKeys = 64;
  std::atomic<int> bad{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
      for (int i = 0; i < kIterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const std::string key = "key" + std::to_string(x % kKeys);
        const int op = static_cast<int>((x >> 20) % 10);
        if (op < 4) {
          // The value names its key and repeats it, so a torn value shows.
          std::string value;
          const size_t reps = 1 + (x >> 32) % 200;
          for (size_t r = 0; r < reps; r++) value += key + ";";
          StoreRequest req;
          req.key = key;
          req.value = value;
          store_->Store(req);
        } else if (op < 5) {
          DeleteRequest req;
          req.key = key;
          req.mark_stale = (x >> 40) % 2 == 0;  // md I keeps the value as stale
          store_->Delete(req);
        } else if (op < 6) {
          StoreRequest req;
          req.mode = StoreMode::kAppend;
          req.key = key;
          const std::string suffix = key + ";";
          req.value = suffix;
          store_->Store(req);
        } else {
          ReadOptions opts;
          opts.kind = op == 9   ? ReadKind::kMeta
                      : op == 8 ? ReadKind::kLeaseGet
                                : ReadKind::kClassic;
          ReadResult r = store_->Read(key, opts);
          if (r.status != ReadStatus::kHit) continue;
          hits++;
          const std::string_view v = r.value;
          const std::string unit = key + ";";
          if (v.size() % unit.size() != 0) bad++;
          for (size_t p = 0; p + unit.size() <= v.size(); p += unit.size()) {
            if (v.substr(p, unit.size()) != unit) {
              bad++;
              break;
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(hits.load(), 0);
  const StoreStats s = store_->Stats();
  EXPECT_LE(s.bytes, config_.memory_limit);
  EXPECT_LE(s.curr_items, static_cast<uint64_t>(kKeys));
}

// --- Segment memory ------------------------------------------------------------

// Values that name their key, so a value read under the wrong key shows.
std::string ValueFor(const std::string& key, size_t len) {
  std::string v = key + ":";
  while (v.size() < len) v += static_cast<char>('a' + v.size() % 26);
  v.resize(len);
  return v;
}

TEST_F(ItemStoreTest, ItemsAreCountedTheirEncodedSizeAndTheBudgetCountsSegments) {
  Put("k", std::string(100, 'v'));
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.bytes, 13u + 1 + 100);
  EXPECT_EQ(s.total_malloced, s.segment_size);   // the small queue's open segment
  EXPECT_EQ(s.segment_size, SegmentPool::SegmentSizeFor(config_.memory_limit));
}

TEST_F(ItemStoreTest, FillingUsesEverySegmentThenEvictsWholeSegments) {
  config_.memory_limit = size_t{8} << 20;   // 128 segments of 64 KiB
  config_.shard_bits = 0;
  Reset();
  // 9-byte keys, 1000-byte values: 1022-byte items, 64 to a segment.
  const size_t capacity = 128 * 64;
  size_t most = 0;
  const size_t n = capacity + 1000;
  for (size_t i = 0; i < n; i++) {
    const std::string key = "key" + std::to_string(100000 + i);
    ASSERT_EQ(Put(key, ValueFor(key, 1000)).status, StoreStatus::kStored);
    const StoreStats s = store_->Stats();
    ASSERT_LE(s.total_malloced, config_.memory_limit);
    ASSERT_EQ(s.curr_items + s.evictions, i + 1);
    most = std::max<size_t>(most, s.curr_items);
  }
  EXPECT_EQ(most, capacity);   // every byte of every segment held an item
  EXPECT_EQ(Get("key100000"), std::nullopt);
  const std::string last = "key" + std::to_string(100000 + n - 1);
  EXPECT_EQ(Get(last), ValueFor(last, 1000));
}

TEST_F(ItemStoreTest, AnySizeUsesAnySegment) {
  config_.memory_limit = size_t{8} << 20;
  Reset();
  for (int i = 0; i < 20000; i++) {
    const std::string key = "big" + std::to_string(i);
    ASSERT_EQ(Put(key, ValueFor(key, 1000)).status, StoreStatus::kStored);
  }
  // All memory holds 1000-byte items; small ones take it over without
  // calcification (there are no size classes to calcify).
  const size_t small_capacity = (size_t{8} << 20) / (13 + 11 + 100);
  for (size_t i = 0; i < small_capacity; i++) {
    const std::string key = "small" + std::to_string(100000 + i);
    ASSERT_EQ(Put(key, ValueFor(key, 100)).status, StoreStatus::kStored) << i;
    ASSERT_LE(store_->Stats().total_malloced, config_.memory_limit);
  }
  size_t held = 0;
  for (size_t i = 0; i < small_capacity; i++) {
    const std::string key = "small" + std::to_string(100000 + i);
    std::optional<std::string> v = Get(key);
    if (v.has_value()) {
      ASSERT_EQ(*v, ValueFor(key, 100));
      held++;
    }
  }
  EXPECT_GT(held, small_capacity * 3 / 4);
}

TEST_F(ItemStoreTest, AfterFlushAllTheWholeBudgetIsFree) {
  config_.memory_limit = size_t{8} << 20;
  Reset();
  for (int i = 0; i < 60000; i++) Put("small" + std::to_string(i), std::string(100, 's'));
  store_->FlushAll(0);
  // Only the open segments remain taken.
  EXPECT_LE(store_->Stats().total_malloced, 2 * store_->Stats().segment_size);
  const size_t capacity = (size_t{8} << 20) / (13 + 9 + 1000) - 600;
  for (size_t i = 0; i < capacity; i++) {
    ASSERT_EQ(Put("big" + std::to_string(100000 + i), std::string(1000, 'b')).status,
              StoreStatus::kStored);
  }
  EXPECT_EQ(store_->Stats().evictions, 0u);
}

TEST_F(ItemStoreTest, AnEvictedSegmentKeepsAnItemAReaderHoldsUntilItIsReleased) {
  config_.memory_limit = size_t{8} << 20;
  config_.shard_bits = 0;
  Reset();
  Put("first", ValueFor("first", 1000));
  ReadOptions peek;   // a read that does not count: "first" stays unread
  peek.bump = false;
  ReadResult held = store_->Read("first", peek);
  ASSERT_EQ(held.status, ReadStatus::kHit);
  for (int i = 0; i < 20000; i++) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(Put(key, ValueFor(key, 1000)).status, StoreStatus::kStored);
    ASSERT_LE(store_->Stats().total_malloced, config_.memory_limit);
  }
  // Unread, "first" left with the oldest segment; its bytes are still
  // readable through the pin.
  EXPECT_EQ(Get("first"), std::nullopt);
  EXPECT_EQ(held.value, ValueFor("first", 1000));
  held.item.Reset();
  for (int i = 0; i < 10000; i++) {
    const std::string key = "again" + std::to_string(i);
    ASSERT_EQ(Put(key, ValueFor(key, 1000)).status, StoreStatus::kStored);
  }
  EXPECT_LE(store_->Stats().total_malloced, config_.memory_limit);
}

TEST_F(ItemStoreTest, JumboItemsBesideSegmentsStayWithinTheLimit) {
  config_.memory_limit = size_t{8} << 20;
  Reset();
  for (int i = 0; i < 20000; i++) Put("s" + std::to_string(i), std::string(300, 's'));
  const std::string big(100 * 1024, 'B');  // bigger than a quarter of a segment: a jumbo
  for (int i = 0; i < 100; i++) {
    ASSERT_EQ(Put("b" + std::to_string(i), big).status, StoreStatus::kStored);
    ASSERT_LE(store_->Stats().total_malloced, config_.memory_limit);
  }
  EXPECT_EQ(Get("b99"), big);
  EXPECT_GT(store_->Stats().jumbo_items, 0u);
  for (int i = 0; i < 20000; i++) {
    ASSERT_EQ(Put("t" + std::to_string(i), std::string(300, 't')).status, StoreStatus::kStored);
  }
  EXPECT_LE(store_->Stats().total_malloced, config_.memory_limit);
}

TEST_F(ItemStoreTest, CountedBytesAreTheLinkedItemsBytes) {
  config_.memory_limit = size_t{4} << 20;
  Reset();
  for (int i = 0; i < 30000; i++) {
    const std::string key = "k" + std::to_string(i % 7000);
    Put(key, std::string(i % 3000, 'x'), i % 3 == 0 ? 1000 : 0, StoreMode::kSet, i % 5);
    if (i % 4 == 0) Read(key, ReadKind::kClassic);
    if (i % 9 == 0) Del("k" + std::to_string((i * 7) % 7000));
  }
  const StoreStats s = store_->Stats();
  uint64_t class_items = 0, class_bytes = 0;
  for (int c = 1; c <= kMemcachedClasses; c++) {
    class_items += s.classes[c].items;
    class_bytes += s.classes[c].bytes;
  }
  EXPECT_EQ(class_items, s.curr_items);
  EXPECT_EQ(class_bytes, s.bytes);
  size_t walked = 0;
  WalkCursor cursor;
  while (!cursor.done) walked += store_->Walk(&cursor, 16, [](const WalkedItem&) {});
  EXPECT_EQ(walked, s.curr_items);
  EXPECT_LE(s.bytes, s.total_malloced);
  EXPECT_LE(s.total_malloced, config_.memory_limit);
}

TEST_F(ItemStoreTest, LoweredLimitGivesSegmentsBackAsItemsAreStored) {
  config_.memory_limit = 16u << 20;
  Reset();
  for (int i = 0; i < 30000; i++) Put("k" + std::to_string(i), std::string(1000, 'x'));
  ASSERT_GT(store_->Stats().total_malloced, size_t{12} << 20);
  store_->SetMemoryLimit(size_t{8} << 20);
  // One 64 KiB segment given back per store: 8 MiB over the limit takes 128.
  for (int i = 0; i < 300; i++) Put("more" + std::to_string(i), std::string(1000, 'y'));
  EXPECT_LE(store_->Stats().total_malloced, size_t{8} << 20);
  EXPECT_EQ(Get("more299"), std::string(1000, 'y'));
}

TEST_F(ItemStoreTest, ConcurrentMixedSizesUnderEvictionNeverTearAValue) {
  config_.memory_limit = size_t{8} << 20;
  Reset();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      uint32_t x = 12345u + static_cast<uint32_t>(t);
      for (int i = 0; i < 15000; i++) {
        x = x * 1103515245u + 12345u;
        const std::string key = "k" + std::to_string(x % 5000);
        const size_t len = 10 + (x >> 8) % 4000;
        if ((x >> 20) % 3 == 0) {
          StoreRequest req;
          req.key = key;
          const std::string value = ValueFor(key, len);
          req.value = value;
          if (store_->Store(req).status != StoreStatus::kStored) bad++;
        } else {
          ReadResult r = store_->Read(key, ReadOptions());
          if (r.status == ReadStatus::kHit && r.value != ValueFor(key, r.value.size())) bad++;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(store_->Stats().total_malloced, config_.memory_limit);
}

// --- Metadata that needs room: a copy --------------------------------------------

TEST_F(ItemStoreTest, ATouchGivesATtlToAnItemStoredWithoutOne) {
  Put("k", "value");   // no TTL: no room for one in the item
  ReadResult held = Read("k");
  EXPECT_TRUE(store_->Touch("k", 10));
  clock_.AdvanceSeconds(1);   // a read in the touch's second would start a read rate
  ReadOptions gat;
  gat.has_touch = true;
  gat.touch_exptime = 20;
  ReadResult r = store_->Read("k", gat);
  EXPECT_EQ(r.ttl_before, 9);
  EXPECT_EQ(r.ttl_after, 20);
  EXPECT_EQ(r.value, "value");
  EXPECT_EQ(r.cas, held.cas);          // the CAS stays
  EXPECT_EQ(held.value, "value");      // the old bytes a reader holds stay too
  EXPECT_EQ(store_->Stats().curr_items, 1u);
  EXPECT_EQ(store_->Stats().bytes, 13u + 4 + 1 + 5);
  clock_.AdvanceSeconds(20);
  EXPECT_EQ(Get("k"), std::nullopt);
}

TEST_F(ItemStoreTest, InvalidateWithAWideCasKeepsTheStaleValue) {
  Put("k", "v");
  DeleteRequest inv;
  inv.key = "k";
  inv.mark_stale = true;
  inv.new_cas = uint64_t{1} << 60;   // md E: wider than a stored CAS
  ASSERT_EQ(store_->Delete(inv), DeleteStatus::kDeleted);
  ReadResult r = Read("k", ReadKind::kMeta);
  EXPECT_EQ(r.cas, uint64_t{1} << 60);
  EXPECT_TRUE(r.stale);
  EXPECT_EQ(r.value, "v");
}

// --- Walk and restore (the crawler's and the snapshot's view) ---------------------

TEST_F(ItemStoreTest, WalkVisitsEveryItemOnceWhileStoresAndDeletesGoOn) {
  for (int i = 0; i < 3000; i++) Put("k" + std::to_string(i), std::to_string(i));
  std::map<std::string, int> seen;
  WalkCursor cursor;
  int step = 0;
  while (!cursor.done) {
    store_->Walk(&cursor, 2, [&](const WalkedItem& w) {
      seen[std::string(w.key)]++;
      if (w.key[0] == 'k') {
        EXPECT_EQ(w.value, std::string(w.key).substr(1));
      }
    });
    // Meanwhile: new keys (the index grows), and deletes of new keys only.
    for (int j = 0; j < 20; j++, step++) Put("n" + std::to_string(step), "x");
    Del("n" + std::to_string(step / 2));
  }
  for (int i = 0; i < 3000; i++) ASSERT_EQ(seen["k" + std::to_string(i)], 1) << i;
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << key;
}

TEST_F(ItemStoreTest, WalkReportsMetadataAndPinsValues) {
  Put("a", "alpha", 100, StoreMode::kSet, 42);
  Read("a");
  Read("a");
  ItemRef pinned;
  std::string_view value;
  WalkCursor cursor;
  WalkedItem seen;
  while (!cursor.done) {
    store_->Walk(&cursor, 64, [&](const WalkedItem& w) {
      seen = w;
      pinned = w.Pin();
      value = w.value;
    });
  }
  EXPECT_EQ(seen.key, "a");
  EXPECT_EQ(seen.client_flags, 42u);
  EXPECT_EQ(seen.exptime, store_->NowSeconds() + 100);
  EXPECT_EQ(seen.frequency, 2);
  EXPECT_TRUE(seen.fetched);
  EXPECT_EQ(seen.slab_class, MemcachedSlabClass(MemcachedItemSize(1, 5, 42)));
  Del("a");
  store_->FlushAll(0);
  EXPECT_EQ(value, "alpha");   // pinned: still readable
}

TEST_F(ItemStoreTest, RestoreKeepsCasTimesFlagsAndFrequency) {
  RestoreRequest req;
  req.key = "k";
  req.value = "restored";
  req.client_flags = 9;
  req.exptime_unix = clock_.UnixSeconds() + 50;
  req.last_access_unix = clock_.UnixSeconds() - 30;
  req.cas = 777777;
  req.frequency = 3;
  req.fetched = true;
  ASSERT_EQ(store_->Restore(req), StoreStatus::kStored);
  ReadOptions peek;
  peek.bump = false;
  ReadResult r = store_->Read("k", peek);
  EXPECT_EQ(r.value, "restored");
  EXPECT_EQ(r.client_flags, 9u);
  EXPECT_EQ(r.cas, 777777u);
  EXPECT_EQ(r.ttl_before, 50);
  EXPECT_EQ(r.seconds_since_access, 30);
  EXPECT_EQ(r.frequency, 3);
  EXPECT_TRUE(r.fetched_before);
  // The CAS counter moved past it.
  EXPECT_GT(Put("other", "x").cas, 777777u);
  // Already expired: nothing is stored.
  req.key = "gone";
  req.exptime_unix = clock_.UnixSeconds();
  EXPECT_EQ(store_->Restore(req), StoreStatus::kNotStored);
  EXPECT_EQ(Get("gone"), std::nullopt);
}

// --- Per-class counters --------------------------------------------------------------

TEST_F(ItemStoreTest, PerClassCountersFollowMemcachedsClasses) {
  config_.memory_limit = size_t{1} << 20;
  config_.shard_bits = 0;
  Reset();
  const int small = MemcachedSlabClass(MemcachedItemSize(6, 100, 0));
  const int big = MemcachedSlabClass(MemcachedItemSize(6, 1000, 0));
  ASSERT_NE(small, big);
  for (int i = 0; i < 100; i++) Put("s" + std::to_string(10000 + i), std::string(100, 'v'));
  for (int i = 0; i < 10; i++) Put("b" + std::to_string(10000 + i), std::string(1000, 'v'));
  StoreStats s = store_->Stats();
  EXPECT_EQ(s.classes[small].items, 100u);
  EXPECT_EQ(s.classes[small].total_items, 100u);
  EXPECT_EQ(s.classes[small].mem_requested, 100 * MemcachedItemSize(6, 100, 0));
  EXPECT_EQ(s.classes[big].items, 10u);
  // Fill with small items until the big ones are all evicted.
  for (int i = 0; store_->Stats().classes[big].items != 0; i++) {
    Put("f" + std::to_string(10000 + i), std::string(100, 'v'));
  }
  s = store_->Stats();
  EXPECT_EQ(s.classes[big].evicted, 10u);
  EXPECT_EQ(s.classes[big].evicted_unfetched, 10u);
  EXPECT_EQ(s.classes[big].items, 0u);
  EXPECT_EQ(s.classes[small].evicted + s.classes[small].items,
            s.classes[small].total_items);
}

}  // namespace
}  // namespace herdless

// -M: no eviction; a store that needs room a live item holds fails instead.
namespace herdless {
namespace {

class NoEvictionTest : public ItemStoreTest {};

TEST_F(NoEvictionTest, FullCacheRefusesStoresAndEvictsNothing) {
  for (size_t limit : {size_t{64 * 1024}, size_t{8} << 20}) {   // 16 KiB and 64 KiB segments
    config_.memory_limit = limit;
    config_.evictions = false;
    Reset();
    const std::string value(1000, 'x');
    int stored = 0;
    while (stored < 20000 && Put("key" + std::to_string(stored), value).status == StoreStatus::kStored) {
      ++stored;
    }
    ASSERT_LT(stored, 20000) << limit;
    EXPECT_EQ(Put("one-more", value).status, StoreStatus::kNoMemory) << limit;
    EXPECT_EQ(store_->Stats().evictions, 0u) << limit;
    EXPECT_EQ(store_->Stats().curr_items, static_cast<uint64_t>(stored)) << limit;
    EXPECT_EQ(Get("key0"), value) << "the oldest item is kept";
    ASSERT_EQ(store_->Delete(DeleteRequest{.key = "key0"}), DeleteStatus::kDeleted);
    EXPECT_EQ(Put("one-more", value).status, StoreStatus::kStored) << "a delete made room";
  }
}

}  // namespace
}  // namespace herdless
