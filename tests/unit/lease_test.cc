#include "storage/lease.h"

#include <gtest/gtest.h>

#include <cmath>

#include "storage/item_store.h"
#include "storage/read_rate.h"
#include "storage/store_time.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

// --- The pure decision functions ----------------------------------------------

TEST(LeaseLiveTest, TimeoutZeroMeansAlwaysLive) {
  LeaseSettings s;
  s.lease_timeout_ms = 0;
  EXPECT_TRUE(LeaseLive(s, 0, 4000000000u));
}

TEST(LeaseLiveTest, LiveUntilTheTimeoutPasses) {
  LeaseSettings s;
  s.lease_timeout_ms = 5000;
  EXPECT_TRUE(LeaseLive(s, 1000, 1000));
  EXPECT_TRUE(LeaseLive(s, 1000, 5999));
  EXPECT_FALSE(LeaseLive(s, 1000, 6000));
}

TEST(LeaseLiveTest, SurvivesTheMillisecondWrap) {
  LeaseSettings s;
  s.lease_timeout_ms = 5000;
  const uint32_t granted = 0xFFFFFF00u;
  EXPECT_TRUE(LeaseLive(s, granted, granted + 1000));  // wrapped past 2^32
  EXPECT_FALSE(LeaseLive(s, granted, granted + 5000));
}

TEST(XFetchDrawTest, FollowsThePapersRule) {
  // now - delta*beta*ln(u) >= expiry, delta in ms, times in us.
  const double u = std::exp(-1.0);  // -ln(u) == 1: look-ahead of exactly delta*beta
  EXPECT_TRUE(XFetchDraw(9000000, 10000000, 1000, 1.0, u));   // 1 s ahead, gap 1 s
  EXPECT_FALSE(XFetchDraw(8999000, 10000000, 1000, 1.0, u));  // 1.001 s ahead
  EXPECT_TRUE(XFetchDraw(8000000, 10000000, 1000, 2.0, u));   // beta doubles the gap
  EXPECT_FALSE(XFetchDraw(0, 10000000, 1000, 1.0, 1.0));      // u = 1: no look-ahead
  EXPECT_TRUE(XFetchDraw(10000000, 10000000, 1000, 1.0, 1.0));  // at expiry: always
}

TEST(SmoothDeltaTest, FirstSampleThenExponentialSmoothing) {
  EXPECT_EQ(SmoothDelta(0, 100), 100);
  EXPECT_EQ(SmoothDelta(100, 200), 125);
  EXPECT_EQ(SmoothDelta(0, 0), 1);          // measured, however fast
  EXPECT_EQ(SmoothDelta(0, 1000000), 65535);  // saturates
  EXPECT_EQ(SmoothDelta(100, -5), 75);      // a negative sample counts as 1
}

class DecideReadTest : public ::testing::Test {
 protected:
  LeaseSettings settings_;
  LeaseView view_;
  LeaseAsk ask_;
  const int64_t now_us_ = 100 * 1000000LL;
  const uint32_t now_ms_ = 100 * 1000;

  LeaseDecision Decide(double u = 1.0) { return DecideRead(settings_, view_, ask_, now_us_, u); }
};

TEST_F(DecideReadTest, PlainFreshItemGetsNoHint) {
  view_.exptime = 200 * kTicksPerSecond;
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kNone);
}

// The store skips DecideRead when LeaseDecisionNeeded is false: over a grid of views, asks and
// draws, DecideRead then always answers kNone; and each of the six conditions alone does give a
// hint somewhere in the grid (so none of them could be dropped).
TEST_F(DecideReadTest, NoDecisionNeededMeansNoHint) {
  bool hinted_alone[6] = {};
  for (int bits = 0; bits < 64; ++bits) {
    view_.stale = bits & 1;
    view_.token_sent = bits & 2;
    view_.needs_value = bits & 4;
    ask_.has_recache = bits & 8;
    ask_.recache_below_s = 1000;
    ask_.refresh_ahead = bits & 16;
    ask_.xfetch_beta = (bits & 32) ? 1000.0 : 0;
    // Never, an eighth of a second left, 100 s left.
    for (int32_t exptime : {int32_t{0}, static_cast<int32_t>(100 * kTicksPerSecond + 1),
                            static_cast<int32_t>(200 * kTicksPerSecond)}) {
      for (double reads_per_s : {0.0, 1000.0}) {
        for (double u : {1e-9, 0.5, 1.0}) {
          view_.exptime = exptime;
          view_.reads_per_s = reads_per_s;
          view_.ttl_s = 60;
          view_.lease_granted_ms = now_ms_ - 10;   // live, if a token is out
          const LeaseDecision d = Decide(u);
          if (!LeaseDecisionNeeded(view_.stale, view_.token_sent, view_.needs_value, ask_)) {
            EXPECT_EQ(d.verdict, LeaseVerdict::kNone) << bits;
            EXPECT_FALSE(d.by_xfetch || d.by_refresh || d.regrant) << bits;
          } else if (__builtin_popcount(bits) == 1 && d.verdict != LeaseVerdict::kNone) {
            hinted_alone[__builtin_ctz(bits)] = true;
          }
        }
      }
    }
  }
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(hinted_alone[i]) << "condition " << i;
}

TEST_F(DecideReadTest, StaleItemWinsWithoutAsking) {
  view_.stale = true;
  const LeaseDecision d = Decide();
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_FALSE(d.regrant);
  EXPECT_FALSE(d.by_xfetch);
}

TEST_F(DecideReadTest, LiveTokenMeansHeldEvenWhenStale) {
  view_.stale = true;
  view_.token_sent = true;
  view_.lease_granted_ms = now_ms_ - 10;
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kHeld);
}

TEST_F(DecideReadTest, TimedOutTokenIsRegranted) {
  view_.stale = true;
  view_.token_sent = true;
  view_.lease_granted_ms = now_ms_ - settings_.lease_timeout_ms;
  const LeaseDecision d = Decide();
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_TRUE(d.regrant);
}

TEST_F(DecideReadTest, StubWaitingForItsValueIsRegrantedAfterTimeout) {
  view_.needs_value = true;
  view_.token_sent = true;
  view_.exptime = 130 * kTicksPerSecond;
  view_.lease_granted_ms = now_ms_ - settings_.lease_timeout_ms - 1;
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kWin);
}

TEST_F(DecideReadTest, TimedOutTokenOnAFreshItemGivesNoHintUnlessAsked) {
  view_.exptime = 200 * kTicksPerSecond;
  view_.token_sent = true;
  view_.lease_granted_ms = now_ms_ - settings_.lease_timeout_ms;
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kNone);
}

TEST_F(DecideReadTest, RecacheWindowWinsOnlyBelowTheRemainingTtl) {
  ask_.has_recache = true;
  ask_.recache_below_s = 30;
  view_.exptime = (100 + 29) * kTicksPerSecond;
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kWin);
  view_.exptime = (100 + 30) * kTicksPerSecond;  // memcached: it->exptime < now + R
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kNone);
  view_.exptime = 0;  // no TTL never wins by R
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kNone);
}

// Expiry is kept in ticks of 1/8 s; R compares memcached's whole seconds
// (exptime - current_time, the remaining TTL `mg t` shows, rounded up).
TEST_F(DecideReadTest, RecacheWindowCountsWholeSecondsOfASubSecondExpiry) {
  ask_.has_recache = true;
  ask_.recache_below_s = 3;
  view_.exptime = 102 * kTicksPerSecond + 1;   // 2.125 s left: memcached's 3
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kNone);
  view_.exptime = 102 * kTicksPerSecond;       // 2 s left
  EXPECT_EQ(Decide().verdict, LeaseVerdict::kWin);
}

TEST_F(DecideReadTest, XFetchUsesTheMeasuredDeltaOrTheDefault) {
  ask_.xfetch_beta = 1.0;
  view_.exptime = 101 * kTicksPerSecond;  // 1 s left
  // Default delta 100 ms: needs -ln(u) >= 10.
  EXPECT_EQ(Decide(std::exp(-9.9)).verdict, LeaseVerdict::kNone);
  LeaseDecision d = Decide(std::exp(-10.1));
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_TRUE(d.by_xfetch);
  // Measured delta 500 ms: needs -ln(u) >= 2.
  view_.delta_ms = 500;
  EXPECT_EQ(Decide(std::exp(-1.9)).verdict, LeaseVerdict::kNone);
  EXPECT_EQ(Decide(std::exp(-2.1)).verdict, LeaseVerdict::kWin);
  // Never for items without TTL, never while a lease is live.
  view_.exptime = 0;
  EXPECT_EQ(Decide(1e-300).verdict, LeaseVerdict::kNone);
  view_.exptime = 101 * kTicksPerSecond;
  view_.token_sent = true;
  view_.lease_granted_ms = now_ms_;
  EXPECT_EQ(Decide(1e-300).verdict, LeaseVerdict::kHeld);
}

// --- Refresh-ahead: the window and the decision -----------------------------------

// ln(1/ε) / λ_low, λ_low the estimate less one standard deviation of it.
double ReadGap(double rate, double epsilon = 0.01) {
  return std::log(1.0 / epsilon) * (1.0 + 1.0 / std::sqrt(2.0 * rate * ReadRate::kTimeConstantS)) / rate;
}

TEST(RefreshWindowTest, RecomputeTimeAndItsSpreadPlusTheTimeToTheNextReadBounded) {
  LeaseSettings s;   // hot from 2 reads/s, epsilon 1%, a quarter of the TTL, 1.10 recomputes per TTL
  struct Case {
    double rate, delta_ms, spread;
    int64_t ttl_s;
    double window_s;
  };
  const Case cases[] = {
      {5, 100, 0, 10, 9.875 + 0.1 + 0.2 - 10 / 1.1},  // 0.1 + ReadGap(5) = 1.09 s: over the budget
      {25, 100, 0, 10, 0.1 + ReadGap(25)},           // 0.29 s
      {500, 100, 0, 10, 0.1 + ReadGap(500)},         // 0.11 s
      {25, 100, 0.25, 10, 0.2 + ReadGap(25)},        // 4 mean deviations of 25 ms
      {25, 100, kInitialSpread, 10, 0.3 + ReadGap(25)},   // before any sample: 3 Δ (TCP's 3 R)
      // The recompute budget: a life of the TTL less a tick, Δ, 1/λ, less TTL / 1.1.
      {5, 100, 2, 10, 9.875 + 0.1 + 0.2 - 10 / 1.1},     // 1.08 s
      {10, 100, 0, 10, 0.1 + ReadGap(10)},               // 0.62 s: under it
      {2, 100, 0, 10, 9.875 + 0.1 + 0.5 - 10 / 1.1},     // 1.38 s
      {2, 100, 0, 4, 3.875 + 0.1 + 0.5 - 4 / 1.1},       // 0.84 s, below a quarter of the TTL
      {2, 100, 0, 2, 0.5},                           // a quarter of the TTL
      {5, 2000, 0, 0, 2 + ReadGap(5)},               // no TTL known: no bound
      {1.99, 100, 0, 10, 0},                         // below the threshold: never
      {0, 100, 0, 10, 0},                            // untracked: never
  };
  for (const Case& c : cases) {
    EXPECT_NEAR(RefreshWindowUs(s, c.rate, c.delta_ms, c.spread, c.ttl_s) / 1e6, c.window_s, 1e-5)
        << c.rate << " " << c.delta_ms << " " << c.spread << " " << c.ttl_s;
  }
  s.refresh_epsilon = 0.001;
  EXPECT_NEAR(RefreshWindowUs(s, 5, 100, 0, 100) / 1e6, 0.1 + ReadGap(5, 0.001), 1e-5);   // TTL 100 s
  s.refresh_budget = 0;   // no budget: the spread alone
  EXPECT_NEAR(RefreshWindowUs(s, 5, 100, 2, 10) / 1e6, 0.9 + ReadGap(5, 0.001), 1e-5);
  s.refresh_hot_per_s = 10;
  EXPECT_EQ(RefreshWindowUs(s, 5, 100, 0, 100), 0);
}

TEST(SmoothSpreadTest, MeanDeviationOverTheMeanWithGainAQuarter) {
  EXPECT_DOUBLE_EQ(SmoothSpread(0.5, 100, 0), 0.5);        // no mean yet: unchanged
  EXPECT_DOUBLE_EQ(SmoothSpread(0.5, 100, 100), 0.375);    // on the mean
  EXPECT_DOUBLE_EQ(SmoothSpread(0, 150, 100), 0.125);      // 50% off
  EXPECT_DOUBLE_EQ(SmoothSpread(0, 50, 100), 0.125);       // either way
  EXPECT_DOUBLE_EQ(SmoothSpread(0, 100000, 100), 4.0);     // one wild sample counts 16 at most
}

TEST(RefreshDecisionTest, WinsInsideTheWindowOnlyWhenAskedAndNoLeaseIsLive) {
  LeaseSettings s;
  LeaseView v;
  v.exptime = 101 * kTicksPerSecond;
  v.reads_per_s = 25;   // window 0.29 s with the default delta, no spread
  v.delta_spread = 0;
  v.ttl_s = 10;
  LeaseAsk ask;
  ask.refresh_ahead = true;
  EXPECT_EQ(DecideRead(s, v, ask, 100700000, 1).verdict, LeaseVerdict::kNone);   // 0.3 s left
  LeaseDecision d = DecideRead(s, v, ask, 100720000, 1);                         // 0.28 s left
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_TRUE(d.by_refresh);
  EXPECT_FALSE(d.by_xfetch);
  ask.refresh_ahead = false;
  EXPECT_EQ(DecideRead(s, v, ask, 100720000, 1).verdict, LeaseVerdict::kNone);
  ask.refresh_ahead = true;
  v.token_sent = true;   // one lease at a time
  v.lease_granted_ms = 100700;
  EXPECT_EQ(DecideRead(s, v, ask, 100720000, 1).verdict, LeaseVerdict::kHeld);
  v.lease_granted_ms = 100720 - s.lease_timeout_ms;   // its holder died: passes on
  d = DecideRead(s, v, ask, 100720000, 1);
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_TRUE(d.regrant);
  v.token_sent = false;
  v.reads_per_s = 1;     // a cold key: never early, even at the last moment
  EXPECT_EQ(DecideRead(s, v, ask, 100999999, 1).verdict, LeaseVerdict::kNone);
  v.exptime = 0;         // no TTL: nothing to refresh ahead of
  v.reads_per_s = 25;
  EXPECT_EQ(DecideRead(s, v, ask, 100999999, 1).verdict, LeaseVerdict::kNone);
}

TEST(RefreshDecisionTest, TheWindowEndsAtTheExpiryTickNotTheWholeSecond) {
  LeaseSettings s;
  LeaseView v;
  v.exptime = 101 * kTicksPerSecond + 4;   // expires at 101.5 s
  v.reads_per_s = 25;                      // window 0.29 s
  v.delta_spread = 0;
  v.ttl_s = 10;
  LeaseAsk ask;
  ask.refresh_ahead = true;
  EXPECT_EQ(DecideRead(s, v, ask, 101200000, 1).verdict, LeaseVerdict::kNone);   // 0.3 s left
  EXPECT_EQ(DecideRead(s, v, ask, 101220000, 1).verdict, LeaseVerdict::kWin);    // 0.28 s left
}

TEST(RefreshDecisionTest, RecacheAndXFetchKeepTheirOwnWins) {
  LeaseSettings s;
  LeaseView v;
  v.exptime = 101 * kTicksPerSecond;
  v.reads_per_s = 25;
  v.ttl_s = 10;
  LeaseAsk ask;
  ask.refresh_ahead = true;
  ask.xfetch_beta = 1;
  // Outside the window an XFetch draw can still win, counted as XFetch's.
  LeaseDecision d = DecideRead(s, v, ask, 100500000, 1e-9);
  EXPECT_TRUE(d.by_xfetch);
  EXPECT_FALSE(d.by_refresh);
  // Inside it the window decides first (no draw needed).
  d = DecideRead(s, v, ask, 100800000, 1.0);
  EXPECT_TRUE(d.by_refresh);
  // memcached's R wins on its own terms (not counted as refresh-ahead).
  ask.has_recache = true;
  ask.recache_below_s = 3;
  d = DecideRead(s, v, ask, 100800000, 1.0);
  EXPECT_EQ(d.verdict, LeaseVerdict::kWin);
  EXPECT_FALSE(d.by_refresh);
  // A stale value wins as always.
  ask = LeaseAsk{};
  v.stale = true;
  EXPECT_EQ(DecideRead(s, v, ask, 100000000, 1.0).verdict, LeaseVerdict::kWin);
}

// --- Leases through the store ---------------------------------------------------

class LeaseStoreTest : public ::testing::Test {
 protected:
  LeaseStoreTest() : config_(DrivenStoreConfig(&clock_, &random_, /*shard_bits=*/1)) {
    clock_.AdvanceSeconds(100);
    config_.lease.lease_timeout_ms = 5000;
    Reset();
  }
  void Reset() { store_ = std::make_unique<ItemStore>(config_); }

  ReadResult Mg(std::string_view key, ReadOptions opts = {}) {
    opts.kind = ReadKind::kMeta;
    return store_->Read(key, opts);
  }
  ReadResult MgVivify(std::string_view key, int64_t ttl = 30) {
    ReadOptions opts;
    opts.create_on_miss = true;
    opts.create_exptime = ttl;
    return Mg(key, opts);
  }
  StoreResult Set(std::string_view key, std::string_view value, int64_t exptime = 0) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    req.exptime = exptime;
    return store_->Store(req);
  }
  StoreResult SetWithCas(std::string_view key, std::string_view value, uint64_t cas,
                         bool invalidate = false, int64_t exptime = 0) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    req.compare_cas = cas;
    req.stale_on_older_cas = invalidate;
    req.exptime = exptime;
    return store_->Store(req);
  }
  StoreResult LeaseSet(std::string_view key, std::string_view value, uint64_t token) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    req.lease_token = token;
    return store_->Store(req);
  }
  DeleteStatus Invalidate(std::string_view key, int64_t ttl = 30) {
    DeleteRequest req;
    req.key = key;
    req.mark_stale = true;
    req.has_ttl = true;
    req.exptime = ttl;
    return store_->Delete(req);
  }

  ManualClock clock_;
  ScriptedRandom random_;
  StoreConfig config_;
  std::unique_ptr<ItemStore> store_;
};

TEST_F(LeaseStoreTest, VivifyWinsThenOthersSeeZ) {
  ReadResult first = MgVivify("k");
  ASSERT_EQ(first.status, ReadStatus::kHit);  // memcached counts it as a hit
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(first.placeholder);
  EXPECT_EQ(first.lease, LeaseVerdict::kWin);
  EXPECT_EQ(first.value, "");
  EXPECT_EQ(first.ttl_after, 30);
  EXPECT_EQ(first.client_flags, 0u);

  ReadResult second = MgVivify("k");
  EXPECT_FALSE(second.created);
  EXPECT_EQ(second.lease, LeaseVerdict::kHeld);
  EXPECT_TRUE(second.fetched_before);  // memcached: h1 after the vivifying mg
  EXPECT_EQ(second.cas, first.cas);
  EXPECT_EQ(Mg("k").lease, LeaseVerdict::kHeld);  // even without N

  // The vivified stub is a real item: classic get sees an empty value.
  ReadOptions classic;
  ReadResult g = store_->Read("k", classic);
  ASSERT_EQ(g.status, ReadStatus::kHit);
  EXPECT_EQ(g.value, "");

  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.lease_grants, 1u);
  EXPECT_EQ(s.curr_leases, 1u);
}

TEST_F(LeaseStoreTest, WinnersFencedStoreFulfilsAndMeasuresDelta) {
  const uint64_t token = MgVivify("k").cas;
  clock_.AdvanceMicros(250000);
  StoreResult s = SetWithCas("k", "value", token);
  ASSERT_EQ(s.status, StoreStatus::kStored);
  ReadResult r = Mg("k");
  EXPECT_EQ(r.lease, LeaseVerdict::kNone);
  EXPECT_EQ(r.value, "value");
  EXPECT_EQ(r.recompute_ms, 250);
  const StoreStats st = store_->Stats();
  EXPECT_EQ(st.lease_fulfilled, 1u);
  EXPECT_EQ(st.curr_leases, 0u);
}

TEST_F(LeaseStoreTest, PlainSetAlsoEndsTheLease) {
  MgVivify("k");
  Set("k", "v");
  EXPECT_EQ(Mg("k").lease, LeaseVerdict::kNone);
  EXPECT_EQ(store_->Stats().lease_fulfilled, 1u);
}

TEST_F(LeaseStoreTest, TimedOutLeasePassesToTheNextReaderWithANewCas) {
  const uint64_t old_token = MgVivify("k").cas;
  clock_.AdvanceMicros(4999000);
  EXPECT_EQ(MgVivify("k").lease, LeaseVerdict::kHeld);
  clock_.AdvanceMicros(1000);  // 5 s after the grant
  ReadResult next = MgVivify("k");
  EXPECT_EQ(next.lease, LeaseVerdict::kWin);
  EXPECT_NE(next.cas, old_token);
  EXPECT_EQ(MgVivify("k").lease, LeaseVerdict::kHeld);

  // The dead holder comes back: its fenced store is refused.
  EXPECT_EQ(SetWithCas("k", "late", old_token).status, StoreStatus::kExists);
  EXPECT_EQ(SetWithCas("k", "fresh", next.cas).status, StoreStatus::kStored);
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.lease_timeouts, 1u);
  EXPECT_EQ(s.lease_grants, 2u);
}

TEST_F(LeaseStoreTest, WithoutTimeoutTheLeaseLastsAsLongAsTheStub) {
  config_.lease.lease_timeout_ms = 0;  // memcached's behaviour
  Reset();
  MgVivify("k", 30);
  clock_.AdvanceSeconds(29);
  EXPECT_EQ(MgVivify("k", 30).lease, LeaseVerdict::kHeld);
  clock_.AdvanceSeconds(1);  // the stub's N TTL is the lease length
  ReadResult r = MgVivify("k", 30);
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.lease, LeaseVerdict::kWin);
}

TEST_F(LeaseStoreTest, LeaseGetTokenFencesLeaseSet) {
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  ReadResult first = store_->Read("k", opts);
  ASSERT_TRUE(first.placeholder);
  EXPECT_EQ(first.lease, LeaseVerdict::kWin);
  ReadResult second = store_->Read("k", opts);
  EXPECT_TRUE(second.placeholder);
  EXPECT_EQ(second.lease, LeaseVerdict::kHeld);

  EXPECT_EQ(LeaseSet("k", "v", first.cas + 1).status, StoreStatus::kNotStored);
  EXPECT_EQ(LeaseSet("k", "v", first.cas).status, StoreStatus::kStored);
  // The lease is over: the same token cannot store twice.
  EXPECT_EQ(LeaseSet("k", "again", first.cas).status, StoreStatus::kNotStored);
  ReadResult hit = store_->Read("k", opts);
  EXPECT_FALSE(hit.placeholder);
  EXPECT_EQ(hit.lease, LeaseVerdict::kNone);
  EXPECT_EQ(hit.value, "v");
  EXPECT_EQ(store_->Stats().lease_sets_refused, 2u);
}

TEST_F(LeaseStoreTest, SupersededLeaseGetTokenIsRefused) {
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  const uint64_t old_token = store_->Read("k", opts).cas;
  clock_.AdvanceSeconds(5);
  ReadResult regrant = store_->Read("k", opts);
  EXPECT_EQ(regrant.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(regrant.placeholder);
  EXPECT_EQ(LeaseSet("k", "old", old_token).status, StoreStatus::kNotStored);
  EXPECT_EQ(LeaseSet("k", "new", regrant.cas).status, StoreStatus::kStored);
}

TEST_F(LeaseStoreTest, DeleteCancelsTheLease) {
  Set("k", "v", 100);
  Invalidate("k");
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  const ReadResult win = store_->Read("k", opts);
  ASSERT_EQ(win.lease, LeaseVerdict::kWin);
  DeleteRequest del;
  del.key = "k";
  EXPECT_EQ(store_->Delete(del), DeleteStatus::kDeleted);
  EXPECT_EQ(LeaseSet("k", "v", win.cas).status, StoreStatus::kNotStored);
  EXPECT_EQ(store_->Stats().curr_leases, 0u);
}

TEST_F(LeaseStoreTest, InvalidateGivesStaleWinThenStaleHeld) {
  Set("k", "old", 100);
  ASSERT_EQ(Invalidate("k", 30), DeleteStatus::kDeleted);
  ReadResult first = Mg("k");
  EXPECT_TRUE(first.stale);
  EXPECT_EQ(first.lease, LeaseVerdict::kWin);
  EXPECT_EQ(first.value, "old");
  EXPECT_EQ(first.ttl_before, 30);
  ReadResult second = Mg("k");
  EXPECT_TRUE(second.stale);
  EXPECT_EQ(second.lease, LeaseVerdict::kHeld);
  EXPECT_EQ(store_->Stats().stale_hits, 2u);
}

TEST_F(LeaseStoreTest, InvalidateClearsALiveLease) {
  MgVivify("k");
  Invalidate("k");
  EXPECT_EQ(store_->Stats().curr_leases, 0u);
  EXPECT_EQ(Mg("k").lease, LeaseVerdict::kWin);
}

TEST_F(LeaseStoreTest, StaleSetWithLowerCasKeepsTtlStaleAndLease) {
  // memcached t/metaget.t: after md I, ms I C<older cas> stores a stale value.
  const uint64_t original = Set("k", "v1", 100).cas;
  Invalidate("k", 30);
  const ReadResult win = Mg("k");
  ASSERT_EQ(win.lease, LeaseVerdict::kWin);
  StoreResult s = SetWithCas("k", "v2", original, /*invalidate=*/true, 500);
  ASSERT_EQ(s.status, StoreStatus::kStored);
  ReadResult r = Mg("k");
  EXPECT_EQ(r.value, "v2");
  EXPECT_TRUE(r.stale);
  EXPECT_EQ(r.ttl_before, 30);  // not raised by the stale set
  EXPECT_EQ(r.lease, LeaseVerdict::kHeld);  // the token is inherited
  EXPECT_EQ(store_->Stats().lease_fulfilled, 0u);
}

TEST_F(LeaseStoreTest, StaleSetWithEqualCasIsANormalStore) {
  Set("k", "v1", 100);
  Invalidate("k");
  const ReadResult win = Mg("k");
  ASSERT_EQ(SetWithCas("k", "v2", win.cas, /*invalidate=*/true, 60).status,
            StoreStatus::kStored);
  ReadResult r = Mg("k");
  EXPECT_FALSE(r.stale);
  EXPECT_EQ(r.lease, LeaseVerdict::kNone);
  EXPECT_EQ(r.ttl_before, 60);
}

TEST_F(LeaseStoreTest, StaleSetWithHigherCasOrWithoutInvalidateIsExists) {
  const uint64_t original = Set("k", "v1").cas;
  Invalidate("k");
  const uint64_t current = Mg("k").cas;
  EXPECT_EQ(SetWithCas("k", "x", current + 5, /*invalidate=*/true).status, StoreStatus::kExists);
  EXPECT_EQ(SetWithCas("k", "x", original, /*invalidate=*/false).status, StoreStatus::kExists);
  EXPECT_EQ(SetWithCas("missing", "x", original, /*invalidate=*/true).status,
            StoreStatus::kNotFound);
}

TEST_F(LeaseStoreTest, RecacheWindowWinsOnceAndNeverForItemsWithoutTtl) {
  Set("k", "v", 100);
  Set("forever", "v", 0);
  ReadOptions opts;
  opts.lease.has_recache = true;
  opts.lease.recache_below_s = 30;
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kNone);
  clock_.AdvanceSeconds(71);  // 29 s left
  ReadResult win = Mg("k", opts);
  EXPECT_EQ(win.lease, LeaseVerdict::kWin);
  EXPECT_FALSE(win.stale);
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kHeld);
  EXPECT_EQ(Mg("forever", opts).lease, LeaseVerdict::kNone);
}

TEST_F(LeaseStoreTest, RecacheJudgesTheTtlBeforeATouchUnlessToldOtherwise) {
  Set("k", "v", 100);
  ReadOptions opts;
  opts.lease.has_recache = true;
  opts.lease.recache_below_s = 200;
  opts.has_touch = true;
  opts.touch_exptime = 1000;
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kWin);  // mg R200 T1000: R sees 100 s

  Set("j", "v", 100);
  opts.judge_touched_ttl = true;  // mg T1000 R200: R sees 1000 s
  EXPECT_EQ(Mg("j", opts).lease, LeaseVerdict::kNone);
}

TEST_F(LeaseStoreTest, VivifiedItemDoesNotAlsoWinByRecache) {
  ReadOptions opts;
  opts.create_on_miss = true;
  opts.create_exptime = 30;
  opts.lease.has_recache = true;
  opts.lease.recache_below_s = 60;
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kWin);
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kHeld);
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
}

TEST_F(LeaseStoreTest, ScriptedXFetchDrawsWinOrLoseExactly) {
  Set("k", "v", 10);
  clock_.AdvanceSeconds(9);  // 1 s to expiry, default delta 100 ms
  ReadOptions opts;
  opts.lease.xfetch_beta = 1.0;
  random_.Push(std::exp(-9.0));  // gap 0.9 s: too short
  ReadResult lose = Mg("k", opts);
  EXPECT_EQ(lose.lease, LeaseVerdict::kNone);
  random_.Push(std::exp(-11.0));  // gap 1.1 s: recompute early
  ReadResult win = Mg("k", opts);
  EXPECT_EQ(win.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(win.lease_by_xfetch);
  EXPECT_FALSE(win.stale);
  EXPECT_EQ(win.value, "v");  // the still-fresh value
  random_.Push(std::exp(-11.0));
  EXPECT_EQ(Mg("k", opts).lease, LeaseVerdict::kHeld);
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.xfetch_grants, 1u);
  EXPECT_EQ(s.lease_grants, 1u);
}

TEST_F(LeaseStoreTest, NoDrawIsTakenWithoutBeta) {
  Set("k", "v", 10);
  Mg("k");
  ReadOptions classic;
  store_->Read("k", classic);
  EXPECT_EQ(random_.calls(), 0);
}

TEST_F(LeaseStoreTest, ClassicLeaseModeWinnerIsNotCountedAsAStaleHit) {
  Set("k", "v", 100);
  Invalidate("k");
  ReadOptions opts;
  opts.kind = ReadKind::kClassicLease;
  ReadResult win = store_->Read("k", opts);
  EXPECT_EQ(win.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(win.stale);
  ReadResult held = store_->Read("k", opts);
  EXPECT_EQ(held.lease, LeaseVerdict::kHeld);
  EXPECT_EQ(held.value, "v");
  EXPECT_EQ(store_->Stats().stale_hits, 1u);
}

TEST_F(LeaseStoreTest, ClassicLeaseMissMakesAPlaceholder) {
  ReadOptions opts;
  opts.kind = ReadKind::kClassicLease;
  ReadResult miss = store_->Read("k", opts);
  EXPECT_TRUE(miss.placeholder);
  EXPECT_EQ(miss.lease, LeaseVerdict::kWin);
  EXPECT_EQ(store_->Read("k", opts).lease, LeaseVerdict::kHeld);
  Set("k", "v");
  ReadResult hit = store_->Read("k", opts);
  EXPECT_FALSE(hit.placeholder);
  EXPECT_EQ(hit.value, "v");
}

TEST_F(LeaseStoreTest, ExpiredValueInGraceIsServedStaleWhileOneReaderRecomputes) {
  config_.stale_grace_s = 60;
  Reset();
  Set("k", "v", 10);
  clock_.AdvanceSeconds(10);
  ReadOptions opts;
  opts.kind = ReadKind::kLeaseGet;
  ReadResult win = store_->Read("k", opts);
  EXPECT_EQ(win.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(win.stale);
  EXPECT_FALSE(win.placeholder);
  EXPECT_EQ(win.value, "v");
  ReadResult held = store_->Read("k", opts);
  EXPECT_EQ(held.lease, LeaseVerdict::kHeld);
  EXPECT_EQ(held.value, "v");
  EXPECT_EQ(LeaseSet("k", "v2", win.cas).status, StoreStatus::kStored);
  EXPECT_EQ(store_->Read("k", opts).lease, LeaseVerdict::kNone);
}

// --- Refresh-ahead through the store (driven clock) -------------------------------

class RefreshStoreTest : public LeaseStoreTest {
 protected:
  ReadOptions RefreshRead() {
    ReadOptions opts;
    opts.kind = ReadKind::kMeta;
    opts.lease.refresh_ahead = true;
    return opts;
  }
  struct Tally {
    int reads = 0, misses = 0, stale = 0, wins = 0, refresh_wins = 0;
  };
  // Reads `key` every `gap_us` for `seconds` as a read-through client with a
  // 100 ms recompute: a win stores the new value (TTL 10 s) 100 ms later with
  // the token; a miss stores at once.
  Tally ReadThrough(std::string_view key, int64_t gap_us, int64_t seconds) {
    Tally t;
    int64_t pending_at_us = -1;
    uint64_t token = 0;
    const int64_t end_us = clock_.NowMicros() + seconds * 1000000;
    while (clock_.NowMicros() < end_us) {
      if (pending_at_us >= 0 && clock_.NowMicros() >= pending_at_us) {
        SetWithCas(key, "v", token, false, 10);
        pending_at_us = -1;
      }
      ReadResult r = store_->Read(key, RefreshRead());
      t.reads++;
      if (r.status != ReadStatus::kHit) {
        t.misses++;
        Set(key, "v", 10);
      } else {
        if (r.stale) t.stale++;
        if (r.lease == LeaseVerdict::kWin) {
          t.wins++;
          if (r.lease_by_refresh) t.refresh_wins++;
          token = r.cas;
          pending_at_us = clock_.NowMicros() + 100000;
        }
      }
      clock_.AdvanceMicros(gap_us);
    }
    return t;
  }
};

TEST_F(RefreshStoreTest, AHotKeyIsRefreshedOncePerValueAndNeverMisses) {
  Set("hot", "v", 10);
  ReadThrough("hot", 40000, 60);                    // 25 reads/s: the estimate settles
  const uint64_t stores_before = store_->Stats().lease_fulfilled;
  const Tally t = ReadThrough("hot", 40000, 200);   // then 200 s
  EXPECT_EQ(t.misses, 0);
  EXPECT_EQ(t.stale, 0);
  EXPECT_EQ(t.wins, t.refresh_wins);
  // Every value but the last is refreshed exactly once. The refresh is
  // granted 0.244-0.284 s before the old expiry (the window, 0.284 s, less
  // up to one 40 ms read gap) and stored 0.1 s later; a value lives its 10 s
  // less at most one 1/8 s tick. So values are 9.69-9.86 s apart: 200 s hold
  // 20-21 of them (with whole-second expiry, 9-10 s lives: 22-23).
  const uint64_t fulfilled = store_->Stats().lease_fulfilled - stores_before;
  EXPECT_GE(fulfilled + 1, static_cast<uint64_t>(t.refresh_wins));
  EXPECT_LE(fulfilled, static_cast<uint64_t>(t.refresh_wins));
  EXPECT_GE(t.refresh_wins, 20);
  EXPECT_LE(t.refresh_wins, 21);
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.hot_keys, 1u);
  EXPECT_EQ(s.rated_keys, 1u);
  EXPECT_EQ(s.refresh_grants, s.lease_grants);
}

TEST_F(RefreshStoreTest, AKeyKeepsItsRateWhenItExpiresAndIsFilledAgain) {
  // Without refresh-ahead a hot key expires every TTL; the reader that finds
  // it expired fills it again, and the estimate goes on from where it was.
  for (int i = 0; i < 25 * 60; i++) {
    if (Mg("k").status != ReadStatus::kHit) Set("k", "v", 3);
    clock_.AdvanceMicros(40000);
  }
  if (Mg("k").status != ReadStatus::kHit) Set("k", "v", 3);
  EXPECT_GT(Mg("k").reads_per_s, 15);
  // So does a key the maintenance reclaim removed.
  clock_.AdvanceSeconds(4);
  size_t reclaimed = 0;
  for (int i = 0; i < 100 && reclaimed == 0; i++) reclaimed = store_->ReclaimExpired(100);
  EXPECT_EQ(reclaimed, 1u);
  Set("k", "v", 3);
  EXPECT_GT(Mg("k").reads_per_s, 10);
  EXPECT_EQ(Mg("other").reads_per_s, 0);
}

TEST_F(RefreshStoreTest, AHitNeverCopiesTheItemTheEstimateStartsWithTheKeysNextItem) {
  Set("k", "v", 100);
  const StoreStats before = store_->Stats();
  for (int i = 0; i < 50; i++) {
    EXPECT_EQ(Mg("k").reads_per_s, 0);
    clock_.AdvanceMicros(40000);
  }
  const StoreStats after = store_->Stats();
  EXPECT_EQ(after.bytes, before.bytes);   // no copy with room for the field
  EXPECT_EQ(after.rated_keys, 0u);
  Set("k", "v", 100);
  EXPECT_EQ(store_->Stats().rated_keys, 1u);
  EXPECT_GT(Mg("k").reads_per_s, 0);
}

TEST_F(RefreshStoreTest, AColdKeyIsNeverRefreshedEarly) {
  Set("cold", "v", 10);
  const Tally t = ReadThrough("cold", 2000000, 300);   // 0.5 reads/s
  EXPECT_EQ(t.refresh_wins, 0);
  EXPECT_EQ(t.wins, 0);
  EXPECT_GT(t.misses, 20);      // it expires as with plain expiry
  EXPECT_EQ(store_->Stats().refresh_grants, 0u);
  EXPECT_EQ(store_->Stats().hot_keys, 0u);
}

TEST_F(RefreshStoreTest, OneLeaseOthersGetTheFreshValueAndTheRateIsReported) {
  Set("k", "v", 10);
  for (int i = 0; i < 25 * 60; i++) {   // 25 reads/s without asking for refresh-ahead
    Mg("k");
    clock_.AdvanceMicros(40000);
    if (i % 250 == 0) Set("k", "v", 100);   // a new value now and then: the rate goes on
  }
  ReadResult r = Mg("k");
  EXPECT_GT(r.reads_per_s, 20);
  EXPECT_LT(r.reads_per_s, 30);
  // Move into the last 0.2 s of the TTL.
  Set("k", "v", 10);
  clock_.AdvanceMicros(9800000);
  random_.Push(1e-300);   // an XFetch draw that would win: the window decides first
  ReadOptions both = RefreshRead();
  both.lease.xfetch_beta = 1;
  ReadResult win = store_->Read("k", both);
  EXPECT_EQ(win.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(win.lease_by_refresh);
  EXPECT_FALSE(win.stale);
  EXPECT_EQ(win.value, "v");
  for (int i = 0; i < 3; i++) {
    ReadResult other = store_->Read("k", both);
    EXPECT_EQ(other.lease, LeaseVerdict::kHeld);
    EXPECT_FALSE(other.stale);
    EXPECT_EQ(other.value, "v");
  }
  EXPECT_EQ(store_->Stats().refresh_grants, 1u);
  EXPECT_EQ(store_->Stats().xfetch_grants, 0u);
  EXPECT_EQ(SetWithCas("k", "v2", win.cas, false, 10).status, StoreStatus::kStored);
  EXPECT_EQ(store_->Stats().lease_fulfilled, 1u);
}

TEST_F(RefreshStoreTest, ADeadHolderCostsAtMostTheLeaseTimeoutThenStaleGraceServes) {
  config_.stale_grace_s = 30;
  Reset();
  Set("k", "v", 10);
  ReadThrough("k", 40000, 60);
  // Now never fulfil: read on until the refresh lease is won, then keep reading.
  int wins = 0, misses = 0, stale = 0;
  for (int i = 0; i < 25 * 20; i++) {
    ReadResult r = store_->Read("k", RefreshRead());
    if (r.status != ReadStatus::kHit) misses++;
    if (r.stale) stale++;
    if (r.lease == LeaseVerdict::kWin) wins++;
    clock_.AdvanceMicros(40000);
  }
  EXPECT_EQ(misses, 0);          // stale_grace keeps the value
  EXPECT_GT(stale, 0);
  // The refresh lease, then one more per lease timeout (5 s) while stale.
  EXPECT_GE(wins, 2);
  EXPECT_LE(wins, 5);
  EXPECT_GE(store_->Stats().lease_timeouts, 1u);
}

// The paper's per-request probability at r = delta*beta before expiry is e^-1.
TEST(XFetchStatisticsTest, WinRateAtOneDeltaBetaIsOneOverE) {
  DefaultRandom random(12345);
  constexpr int kDraws = 20000;
  const int64_t expiry_us = 50 * 1000000LL;
  const double delta_ms = 200, beta = 1.5;  // delta*beta = 300 ms
  const int64_t now_us = expiry_us - 300000;
  int wins = 0;
  for (int i = 0; i < kDraws; i++) {
    if (XFetchDraw(now_us, expiry_us, delta_ms, beta, random.UniformOpenClosed())) wins++;
  }
  EXPECT_NEAR(static_cast<double>(wins) / kDraws, std::exp(-1.0), 0.02);
}

TEST(XFetchStatisticsTest, WinRateFallsExponentiallyWithDistanceToExpiry) {
  DefaultRandom random(999);
  constexpr int kDraws = 20000;
  const int64_t expiry_us = 50 * 1000000LL;
  const int64_t now_us = expiry_us - 300000;  // 3 * delta*beta
  int wins = 0;
  for (int i = 0; i < kDraws; i++) {
    if (XFetchDraw(now_us, expiry_us, 100, 1.0, random.UniformOpenClosed())) wins++;
  }
  EXPECT_NEAR(static_cast<double>(wins) / kDraws, std::exp(-3.0), 0.01);
}

}  // namespace
}  // namespace herdless
