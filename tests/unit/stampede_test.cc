// Stampede protection seen from the wire and from the store: mcrouter's
// lease-get/lease-set, the classic stale and wait modes, and the parking of
// wait-mode readers (registration, wake-ups, timeouts). The clock is driven
// by hand and XFetch's random draws are scripted.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/executor.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

// Records wake-ups. Also reads the woken key back, which would deadlock if the
// store called it with the shard lock held.
class RecordingSink : public LeaseWakeSink {
 public:
  void Wake(const WaitTicket& ticket) override {
    woken.push_back(ticket);
    if (store != nullptr && !read_back_key.empty()) store->Read(read_back_key, ReadOptions());
  }
  std::vector<WaitTicket> woken;
  ItemStore* store = nullptr;
  std::string read_back_key;
};

// The <token> of "LVALUE <key> <token> ...", or 0.
uint64_t TokenOf(const std::string& reply) {
  if (reply.rfind("LVALUE ", 0) != 0) return 0;
  const size_t start = reply.find(' ', 7) + 1;
  return std::stoull(reply.substr(start, reply.find(' ', start) - start));
}

class StampedeTest : public ::testing::Test {
 protected:
  StampedeTest() : config_(DrivenStoreConfig(&clock_, &random_)), server_(&stats_) {
    clock_.AdvanceSeconds(100);  // store time 100: far from the "0 = never" edge
    config_.wake_sink = &sink_;
    config_.lease.lease_timeout_ms = 5000;
    Reset();
  }

  // Rebuilds the store and executor from config_ and server_.settings.
  void Reset() {
    store_ = std::make_unique<ItemStore>(config_);
    executor_ = std::make_unique<Executor>(store_.get(), &server_, &stats_);
    sink_.store = store_.get();
  }

  std::string Run(std::string_view input, const WaitTicket* park = nullptr) {
    outcome_ = executor_->Process(input, &out_, SIZE_MAX, 0, park);
    return Drain(&out_);
  }

  WaitTicket Ticket(uint64_t conn, uint64_t seq = 1) { return WaitTicket{0, conn, seq}; }

  ManualClock clock_;
  ScriptedRandom random_;
  RecordingSink sink_;
  StoreConfig config_;
  std::unique_ptr<ItemStore> store_;
  ThreadStats stats_;
  FakeServer server_;
  std::unique_ptr<Executor> executor_;
  ReplyBuffer out_;
  ProcessOutcome outcome_;
};

// --- lease-get / lease-set ---------------------------------------------------

TEST_F(StampedeTest, LeaseGetMissGrantsATokenAndAnEmptyValue) {
  const std::string reply = Run("lease-get k\r\n");
  const uint64_t token = TokenOf(reply);
  EXPECT_GE(token, 2u);
  EXPECT_EQ(reply, "LVALUE k " + std::to_string(token) + " 0 0\r\n\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  EXPECT_EQ(stats_.get_misses.Get(), 1u);
}

TEST_F(StampedeTest, SecondLeaseGetIsAHotMiss) {
  Run("lease-get k\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "LVALUE k 1 0 0\r\n\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
}

TEST_F(StampedeTest, LeaseSetWithTheTokenStoresAndLeaseGetThenHits) {
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 7 0 5\r\nhello\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 7 5\r\nhello\r\nEND\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 7 5\r\nhello\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_fulfilled, 1u);
  EXPECT_EQ(store_->Stats().curr_leases, 0u);
}

TEST_F(StampedeTest, LeaseSetWithAWrongTokenIsRefused) {
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  EXPECT_EQ(Run("lease-set k " + std::to_string(token + 100) + " 0 0 1\r\nx\r\n"),
            "NOT_STORED\r\n");
  EXPECT_EQ(Run("lease-set k 1 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("lease-set k 0 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 0 1\r\nx\r\n"), "STORED\r\n");
  EXPECT_EQ(store_->Stats().lease_sets_refused, 1u);   // 0 and 1 never reach the store
}

TEST_F(StampedeTest, LeaseSetNoreplyIsSilent) {
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 0 1 noreply\r\nx\r\n"), "");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nx\r\nEND\r\n");
}

TEST_F(StampedeTest, LeaseSetWithoutALeaseIsRefused) {
  Run("set k 0 0 1\r\nv\r\n");
  EXPECT_EQ(Run("lease-set k 12345 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
}

TEST_F(StampedeTest, TimedOutLeasePassesOnAndTheOldTokenIsRefused) {
  const uint64_t first = TokenOf(Run("lease-get k\r\n"));
  clock_.AdvanceMicros(5500000);   // past lease_timeout (5 s)
  const uint64_t second = TokenOf(Run("lease-get k\r\n"));
  EXPECT_GT(second, first);
  EXPECT_EQ(Run("lease-set k " + std::to_string(first) + " 0 0 3\r\nold\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("lease-set k " + std::to_string(second) + " 0 0 3\r\nnew\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 3\r\nnew\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_timeouts, 1u);
}

TEST_F(StampedeTest, RegrantedPlaceholderOutlivesItsNewLease) {
  Run("lease-get k\r\n");
  clock_.AdvanceSeconds(5);
  const uint64_t second = TokenOf(Run("lease-get k\r\n"));   // regrant at 5 s
  clock_.AdvanceSeconds(4);   // 9 s: the first placeholder's time is up, not the new lease's
  EXPECT_EQ(Run("lease-get k\r\n"), "LVALUE k 1 0 0\r\n\r\nEND\r\n");
  EXPECT_EQ(Run("lease-set k " + std::to_string(second) + " 0 0 1\r\nx\r\n"), "STORED\r\n");
}

TEST_F(StampedeTest, DeleteCancelsTheLease) {
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  Run("delete k\r\n");
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
}

TEST_F(StampedeTest, StaleValueGoesWithTheTokenToTheFirstReaderAndWithTokenOneToOthers) {
  config_.stale_grace_s = 30;
  Reset();
  Run("set k 3 10 3\r\nold\r\n");
  clock_.AdvanceSeconds(11);
  const std::string first = Run("lease-get k\r\n");
  const uint64_t token = TokenOf(first);
  EXPECT_GE(token, 2u);
  EXPECT_EQ(first, "LVALUE k " + std::to_string(token) + " 3 3\r\nold\r\nEND\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "LVALUE k 1 3 3\r\nold\r\nEND\r\n");
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // classic get: expired is expired
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 3 10 3\r\nnew\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 3 3\r\nnew\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().stale_hits, 2u);
}

TEST_F(StampedeTest, XFetchWinOnLeaseGetCarriesTheTokenAndTheFreshValue) {
  server_.settings.xfetch_beta = 1;
  Run("set k 0 10 5\r\nfresh\r\n");
  clock_.AdvanceSeconds(9);     // 1 s left; delta 100 ms: needs u < e^-10
  random_.Script({0.5});
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 5\r\nfresh\r\nEND\r\n");
  random_.Script({1e-6});
  const std::string won = Run("lease-get k\r\n");
  const uint64_t token = TokenOf(won);
  EXPECT_EQ(won, "LVALUE k " + std::to_string(token) + " 0 5\r\nfresh\r\nEND\r\n");
  random_.Script({1e-6});       // a second winning draw while the lease is out:
  // a fresh value is a plain hit (only stale values and misses are hot misses)
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 5\r\nfresh\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().xfetch_grants, 1u);
  EXPECT_EQ(stats_.get_hits.Get(), 3u);
}

// A value whose early recompute (an XFetch win) is still under way when it
// expires waits for it as a stale value: the others get a hot miss with it
// (meta: Z X), nobody a second lease, and the winner's store is taken. Once
// the lease is dead the value goes at its expiry, as without the draw.
TEST_F(StampedeTest, AValueExpiringUnderAnXFetchRecomputeWaitsForIt) {
  server_.settings.xfetch_beta = 1;
  Run("set k 0 10 5\r\nfresh\r\n");
  clock_.AdvanceSeconds(9);
  random_.Script({1e-6});
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  ASSERT_GT(token, 1u);
  clock_.AdvanceSeconds(2);     // expired; the lease (5 s) is live
  EXPECT_EQ(Run("lease-get k\r\n"), "LVALUE k 1 0 5\r\nfresh\r\nEND\r\n");
  EXPECT_EQ(Run("mg k v N30\r\n"), "VA 5 Z X\r\nfresh\r\n");
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // classic get: expired is expired
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 10 3\r\nnew\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 3\r\nnew\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);

  // A winner that never stores: at its lease's end the value is gone.
  clock_.AdvanceSeconds(9);
  random_.Script({1e-6});
  ASSERT_GT(TokenOf(Run("lease-get k\r\n")), 1u);
  clock_.AdvanceSeconds(2);
  EXPECT_EQ(Run("mg k v\r\n"), "VA 3 Z X\r\nnew\r\n");
  clock_.AdvanceSeconds(4);     // the lease timed out
  EXPECT_EQ(Run("mg k v\r\n"), "EN\r\n");
}

// memcached's own R window (and any lease without a timeout) is not waited
// for: the value goes at its expiry, and the next reader wins, as memcached's.
TEST_F(StampedeTest, AnRWindowWinIsNotWaitedFor) {
  Run("set k 0 10 1\r\nv\r\n");
  clock_.AdvanceSeconds(8);
  EXPECT_EQ(Run("mg k v R30\r\n"), "VA 1 W\r\nv\r\n");
  clock_.AdvanceSeconds(3);
  EXPECT_EQ(Run("mg k v N30\r\n"), "VA 0 W\r\n\r\n");
}

TEST_F(StampedeTest, WithoutBetaLeaseGetNeverDraws) {
  Run("set k 0 10 1\r\nv\r\n");
  clock_.AdvanceSeconds(9);
  random_.Script({1e-9});
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(random_.left(), 1u);
}

TEST_F(StampedeTest, TooLargeLeaseSetKeepsTheKey) {
  Run("set k 0 0 1\r\nv\r\n");
  const std::string big(2u << 20, 'x');
  EXPECT_EQ(Run("lease-set k 99 0 0 " + std::to_string(big.size()) + "\r\n"),
            "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
}

// --- classic stale mode --------------------------------------------------------

TEST_F(StampedeTest, StaleModeFirstMissWinsOthersMissUntilTheSet) {
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(store_->Stats().curr_leases, 1u);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  EXPECT_EQ(Run("set k 0 0 1\r\nv\r\nget k\r\n"), "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_fulfilled, 1u);
  EXPECT_EQ(stats_.get_misses.Get(), 2u);
  EXPECT_EQ(stats_.get_hits.Get(), 1u);
}

TEST_F(StampedeTest, StaleModeServesTheStaleValueToAllButTheWinner) {
  config_.stale_grace_s = 30;
  Reset();
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  Run("set k 5 10 3\r\nold\r\n");
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // the winner: its cue to recompute
  const std::string stale = Run("gets k\r\n");
  EXPECT_EQ(stale.rfind("VALUE k 5 3 ", 0), 0u) << stale;
  EXPECT_EQ(Run("get k k\r\n"), "VALUE k 5 3\r\nold\r\nVALUE k 5 3\r\nold\r\nEND\r\n");
  EXPECT_EQ(Run("set k 5 10 3\r\nnew\r\nget k\r\n"), "STORED\r\nVALUE k 5 3\r\nnew\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
}

// A read-through client fills a miss with add: the winner's add of a key it
// was told is missing (stale, or drawn) must store, or the stale value stays.
TEST_F(StampedeTest, StaleModeWinnersAddReplacesTheValueItWasToldIsMissing) {
  struct Case {
    const char* name;
    ClassicStampedeMode mode;
    const char* make_stale;   // run after "set k 0 100 3 old"
    const char* winner_get;   // the winner's reply
    const char* add_reply;
  };
  const Case cases[] = {
      {"invalidated, stale mode", ClassicStampedeMode::kStale, "md k I q\r\n", "END\r\n", "STORED\r\n"},
      {"invalidated, wait mode", ClassicStampedeMode::kWait, "md k I q\r\n", "END\r\n", "STORED\r\n"},
      {"invalidated, off (memcached)", ClassicStampedeMode::kOff, "md k I q\r\n",
       "VALUE k 0 3\r\nold\r\nEND\r\n", "NOT_STORED\r\n"},
      {"fresh, stale mode (no draw)", ClassicStampedeMode::kStale, "", "VALUE k 0 3\r\nold\r\nEND\r\n",
       "NOT_STORED\r\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    server_.settings.classic_stampede = c.mode;
    Reset();
    Run("set k 0 100 3\r\nold\r\n");
    Run(c.make_stale);
    EXPECT_EQ(Run("get k\r\n"), c.winner_get);
    EXPECT_EQ(Run("add k 0 100 3\r\nnew\r\n"), c.add_reply);
    const bool stored = std::string(c.add_reply) == "STORED\r\n";
    EXPECT_EQ(Run("get k\r\n"), stored ? "VALUE k 0 3\r\nnew\r\nEND\r\n" : c.winner_get);
    EXPECT_EQ(store_->Stats().curr_leases, 0u);
    EXPECT_EQ(Run("add k 0 100 3\r\nxyz\r\n"), "NOT_STORED\r\n");   // now live and fresh
  }
}

TEST_F(StampedeTest, StaleModeXFetchWinnerGetsAMissOthersTheFreshValue) {
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  server_.settings.xfetch_beta = 2;
  Run("set k 0 10 1\r\nv\r\n");
  clock_.AdvanceSeconds(9);
  random_.Script({1e-9, 1e-9});
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().xfetch_grants, 1u);
  // The drawn winner fills its "miss" with add: it stores and ends the lease.
  EXPECT_EQ(Run("add k 0 10 1\r\nw\r\n"), "STORED\r\n");
  EXPECT_EQ(store_->Stats().curr_leases, 0u);
  EXPECT_EQ(store_->Stats().lease_fulfilled, 1u);
}

// A meta touch of a value kept past its expiry moves the expiry, but the
// value stays stale (X), as memcached keeps an md I'd one through a touch:
// lease-get still sees a hot miss, and a dead winner's lease passes on.
TEST_F(StampedeTest, ATouchLeavesAValueInStaleGraceStale) {
  config_.stale_grace_s = 30;
  config_.lease.lease_timeout_ms = 1000;
  Reset();
  Run("set g 0 1 3\r\nold\r\n");
  clock_.AdvanceSeconds(2);
  EXPECT_EQ(Run("mg g v T30 t\r\n"), "VA 3 t30 X W\r\nold\r\n");
  EXPECT_EQ(Run("mg g v t\r\n"), "VA 3 t30 Z X\r\nold\r\n");
  EXPECT_EQ(TokenOf(Run("lease-get g\r\n")), 1u);
  clock_.AdvanceSeconds(2);   // the winner never stores
  EXPECT_EQ(Run("mg g v t\r\n"), "VA 3 t28 X W\r\nold\r\n");
}

// md I of a value kept past its expiry: not found, as memcached sees it; the
// value stays stale and expired (a classic get still misses), and the lease
// on it ends, so that the old token's store fails.
TEST_F(StampedeTest, InvalidatingAValueInStaleGraceEndsItsLeaseOnly) {
  config_.stale_grace_s = 30;
  Reset();
  Run("set g 0 1 3\r\nold\r\n");
  clock_.AdvanceSeconds(2);
  const uint64_t token = TokenOf(Run("lease-get g\r\n"));
  ASSERT_GT(token, 1u);
  EXPECT_EQ(Run("md g I T30\r\n"), "NF\r\n");
  EXPECT_EQ(Run("get g\r\n"), "END\r\n");
  EXPECT_EQ(Run("mg g v t\r\n"), "VA 3 t-1 X W\r\nold\r\n");   // still expired; a new winner
  EXPECT_EQ(Run("lease-set g " + std::to_string(token) + " 0 60 3\r\nnew\r\n"), "NOT_STORED\r\n");
}

// lease-get's tokens 0 and 1 mean "no lease" and "a hot miss": a CAS a
// client chose as 1 (E1) is redrawn before it becomes a winner's token.
TEST_F(StampedeTest, ALeaseGetTokenIsNeverOne) {
  Run("set k 0 0 3\r\nold\r\n");
  EXPECT_EQ(Run("md k I E1\r\n"), "HD\r\n");
  const uint64_t token = TokenOf(Run("lease-get k\r\n"));
  EXPECT_GT(token, 1u);
  EXPECT_EQ(TokenOf(Run("lease-get k\r\n")), 1u);   // the others: a hot miss
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 0 3\r\nnew\r\n"), "STORED\r\n");
}

TEST_F(StampedeTest, OffModeLeavesGetAsMemcached) {
  config_.stale_grace_s = 30;
  Reset();
  Run("set k 0 10 1\r\nv\r\n");
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 0u);
}

TEST_F(StampedeTest, GatIsALeaseReadThatTouchesOnlyTheFreshValueItGives) {
  config_.stale_grace_s = 30;
  Reset();
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  EXPECT_EQ(Run("gat 10 k\r\n"), "END\r\n");   // a miss: this reader holds the lease
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  EXPECT_EQ(Run("gat 10 k\r\n"), "END\r\n");   // no value yet, lease held elsewhere
  Run("set k 0 10 3\r\nold\r\n");
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(Run("gat 100 k\r\n"), "END\r\n");           // stale: the winner's miss
  EXPECT_EQ(Run("gat 100 k\r\n"), "VALUE k 0 3\r\nold\r\nEND\r\n");   // others: stale
  EXPECT_EQ(Run("mg k t\r\n"), "HD t-1 Z X\r\n");   // neither touched the stale value
  Run("set k 0 10 3\r\nnew\r\n");
  EXPECT_EQ(Run("gat 100 k\r\n"), "VALUE k 0 3\r\nnew\r\nEND\r\n");
  EXPECT_EQ(Run("mg k t\r\n"), "HD t100\r\n");  // a fresh value is touched
  EXPECT_EQ(store_->Stats().lease_grants, 2u);
}

// --- refresh-ahead on every protocol ----------------------------------------------

TEST_F(StampedeTest, MgYrGivesOneReaderTheRefreshHintWithTheFreshValue) {
  Run("set k 0 100 1\r\nv\r\n");
  for (int i = 0; i < 25 * 40; i++) {
    Run("mg k v\r\n");
    clock_.AdvanceMicros(40000);
    // The estimate starts with the key's next item (this one has no room).
    if (i == 25) Run("set k 0 100 1\r\nv\r\n");
  }
  // The rate flag: reads per second, two decimals.
  const std::string rate = Run("mg k r\r\n");
  ASSERT_EQ(rate.rfind("HD r", 0), 0u) << rate;
  EXPECT_NEAR(std::stod(rate.substr(4)), 25, 5) << rate;
  EXPECT_EQ(Run("mg nothing r\r\n"), "EN\r\n");
  Run("set k 0 10 1\r\nv\r\n");
  EXPECT_EQ(Run("mg k v Yr\r\n"), "VA 1\r\nv\r\n");    // 10 s left: nothing to do
  clock_.AdvanceMicros(9800000);                         // 0.2 s left: inside the window
  EXPECT_EQ(Run("mg k v\r\n"), "VA 1\r\nv\r\n");         // without Yr: memcached's mg
  EXPECT_EQ(Run("mg k v Yr\r\n"), "VA 1 W\r\nv\r\n");    // the refresh hint, fresh value
  EXPECT_EQ(Run("mg k v Yr\r\n"), "VA 1 Z\r\nv\r\n");    // one lease at a time
  EXPECT_EQ(Run("mg k v\r\n"), "VA 1 Z\r\nv\r\n");
  const std::string stats = Run("stats\r\n");
  EXPECT_NE(stats.find("STAT refresh_grants 1\r\n"), std::string::npos);
  EXPECT_NE(stats.find("STAT hot_keys 1\r\n"), std::string::npos);
  EXPECT_NE(stats.find("STAT tracked_keys 1\r\n"), std::string::npos);
  EXPECT_EQ(store_->Stats().xfetch_grants, 0u);
}

TEST_F(StampedeTest, ServerOptionRefreshesAheadForLeaseGetAndTheClassicModes) {
  server_.settings.refresh_ahead = true;
  Run("set k 0 100 5\r\nfresh\r\n");
  for (int i = 0; i < 25 * 40; i++) {
    Run("get k\r\n");
    clock_.AdvanceMicros(40000);
    if (i == 25) Run("set k 0 100 5\r\nfresh\r\n");
  }
  Run("set k 0 10 5\r\nfresh\r\n");
  clock_.AdvanceMicros(9800000);
  const std::string won = Run("lease-get k\r\n");
  const uint64_t token = TokenOf(won);
  EXPECT_EQ(won, "LVALUE k " + std::to_string(token) + " 0 5\r\nfresh\r\nEND\r\n");
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 5\r\nfresh\r\nEND\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 5\r\nfresh\r\nEND\r\n");   // classic off: a plain get
  EXPECT_EQ(Run("lease-set k " + std::to_string(token) + " 0 10 3\r\nnew\r\n"), "STORED\r\n");

  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  clock_.AdvanceMicros(9800000);   // stored at 49.8 s: expires at 59.75 s (a 1/8 s tick); now 59.6 s
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");                            // the chosen reader
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 3\r\nnew\r\nEND\r\n");      // the others
  EXPECT_EQ(store_->Stats().refresh_grants, 2u);
  EXPECT_EQ(store_->Stats().lease_grants, 2u);
}

TEST_F(StampedeTest, WithoutTheOptionOrYrNothingIsRefreshedAhead) {
  Run("set k 0 100 1\r\nv\r\n");
  for (int i = 0; i < 25 * 40; i++) {
    Run("get k\r\n");
    clock_.AdvanceMicros(40000);
  }
  Run("set k 0 10 1\r\nv\r\n");
  clock_.AdvanceMicros(9800000);
  EXPECT_EQ(Run("lease-get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(Run("mg k v\r\n"), "VA 1\r\nv\r\n");
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 0u);
}

// --- classic wait mode: the executor -------------------------------------------

class WaitModeTest : public StampedeTest {
 protected:
  WaitModeTest() { server_.settings.classic_stampede = ClassicStampedeMode::kWait; }
};

TEST_F(WaitModeTest, ReaderOfAKeyWithALeaseAndNoValueParks) {
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // the lease winner
  const WaitTicket t = Ticket(7);
  EXPECT_EQ(Run("get k\r\n", &t), "");
  EXPECT_TRUE(outcome_.parked);
  EXPECT_EQ(outcome_.consumed, 0u);
  EXPECT_GE(outcome_.park_token, 2u);
  EXPECT_EQ(stats_.cmd_get.Get(), 1u);   // a parked read is counted when it is answered
}

TEST_F(WaitModeTest, ParkedReaderIsWokenBySetAndThenAnsweredWithTheValue) {
  Run("get k\r\n");
  const WaitTicket t = Ticket(7, 3);
  Run("get k\r\n", &t);
  ASSERT_TRUE(outcome_.parked);
  EXPECT_TRUE(sink_.woken.empty());
  Run("set k 0 0 3\r\nnew\r\n");
  ASSERT_EQ(sink_.woken.size(), 1u);
  EXPECT_EQ(sink_.woken[0].conn_id, 7u);
  EXPECT_EQ(sink_.woken[0].seq, 3u);
  EXPECT_EQ(Run("get k\r\n", &t), "VALUE k 0 3\r\nnew\r\nEND\r\n");
  EXPECT_FALSE(outcome_.parked);
}

TEST_F(WaitModeTest, RequestsBeforeTheParkedOneAreAnsweredAndLaterOnesWait) {
  Run("get k\r\n");
  const WaitTicket t = Ticket(7);
  const std::string input = "version\r\nget k\r\nversion\r\n";
  EXPECT_EQ(Run(input, &t), "VERSION 1.6.18-herdless\r\n");
  EXPECT_TRUE(outcome_.parked);
  EXPECT_EQ(outcome_.consumed, std::string("version\r\n").size());
}

TEST_F(WaitModeTest, WithoutATicketTheReaderGetsAMiss) {
  Run("get k\r\n");
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // e.g. a wait that timed out
  EXPECT_FALSE(outcome_.parked);
}

TEST_F(WaitModeTest, MultiKeyGetNeverParks) {
  Run("get k\r\n");
  Run("set other 0 0 1\r\no\r\n");
  const WaitTicket t = Ticket(7);
  EXPECT_EQ(Run("get other k\r\n", &t), "VALUE other 0 1\r\no\r\nEND\r\n");
  EXPECT_FALSE(outcome_.parked);
}

TEST_F(WaitModeTest, StaleValueIsServedNotWaitedFor) {
  config_.stale_grace_s = 30;
  Reset();
  Run("set k 0 10 3\r\nold\r\n");
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  const WaitTicket t = Ticket(7);
  EXPECT_EQ(Run("get k\r\n", &t), "VALUE k 0 3\r\nold\r\nEND\r\n");
  EXPECT_FALSE(outcome_.parked);
}

TEST_F(WaitModeTest, StaleModeNeverParks) {
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  Run("get k\r\n");
  const WaitTicket t = Ticket(7);
  EXPECT_EQ(Run("get k\r\n", &t), "END\r\n");
  EXPECT_FALSE(outcome_.parked);
}

TEST_F(WaitModeTest, AfterTheLeaseTimesOutTheNextReaderTakesItOver) {
  Run("get k\r\n");   // a holder that never stores
  const WaitTicket t = Ticket(7);
  Run("get k\r\n", &t);
  ASSERT_TRUE(outcome_.parked);
  const uint64_t first = outcome_.park_token;
  clock_.AdvanceMicros(5500000);   // past lease_timeout (5 s)
  // The wait timed out: the reader runs once more without parking and wins.
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(store_->Stats().lease_timeouts, 1u);
  ASSERT_EQ(sink_.woken.size(), 1u);   // the regrant woke the parked ticket
  // Others now wait for the new lease.
  const WaitTicket u = Ticket(8);
  Run("get k\r\n", &u);
  EXPECT_TRUE(outcome_.parked);
  EXPECT_NE(outcome_.park_token, first);
}

// A client that closed its end (EOF) while parked cannot store: when its wait
// times out on a dead lease it gets a miss without taking the lease over, so
// a live reader does (the half-closed client still gets its reply).
TEST_F(WaitModeTest, AParkedReaderWhoseClientLeftNeverTakesTheLeaseOver) {
  Run("get k\r\n");   // a holder that never stores
  const WaitTicket t = Ticket(7);
  Run("get k\r\n", &t);
  ASSERT_TRUE(outcome_.parked);
  clock_.AdvanceMicros(5500000);   // past lease_timeout: the lease is dead
  executor_->set_client_fd(7, /*datagram=*/false, /*gone=*/true);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // its wait timed out: a miss...
  EXPECT_FALSE(outcome_.parked);
  EXPECT_EQ(store_->Stats().lease_timeouts, 0u);   // ...without the lease
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  executor_->set_client_fd(8);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // a live reader takes it over
  EXPECT_EQ(store_->Stats().lease_timeouts, 1u);
  EXPECT_EQ(store_->Stats().lease_grants, 2u);
}

TEST_F(WaitModeTest, AClientThatLeftIsNeverChosenToRecompute) {
  config_.stale_grace_s = 30;
  Reset();
  Run("set k 0 10 3\r\nold\r\n");
  clock_.AdvanceSeconds(11);   // stale
  executor_->set_client_fd(7, /*datagram=*/false, /*gone=*/true);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // as a classic read: no stale value, no lease
  EXPECT_EQ(Run("get nothing\r\n"), "END\r\n");
  EXPECT_EQ(store_->Stats().lease_grants, 0u);
  executor_->set_client_fd(8);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");   // the next live reader wins
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 3\r\nold\r\nEND\r\n");   // the others: the stale value
}

// --- the store's waiter registry ---------------------------------------------------

class WaitersTest : public StampedeTest {
 protected:
  ReadResult ParkedRead(std::string_view key, const WaitTicket& t) {
    ReadOptions opts;
    opts.kind = ReadKind::kClassicLease;
    opts.park = &t;
    return store_->Read(key, opts);
  }
  uint64_t Grant(std::string_view key) {
    ReadOptions opts;
    opts.kind = ReadKind::kClassicLease;
    return store_->Read(key, opts).cas;
  }
  void Put(std::string_view key, std::string_view value) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    store_->Store(req);
  }
};

TEST_F(WaitersTest, WinnerAndValueHoldersNeverPark) {
  const WaitTicket t = Ticket(1);
  EXPECT_FALSE(ParkedRead("k", t).parked);   // wins the lease
  Put("v", "x");
  EXPECT_FALSE(ParkedRead("v", t).parked);   // has a value
  EXPECT_TRUE(ParkedRead("k", t).parked);
}

TEST_F(WaitersTest, StoreWakesEveryWaiterOfTheKeyOnce) {
  Grant("k");
  Grant("other");
  for (uint64_t c = 1; c <= 3; ++c) EXPECT_TRUE(ParkedRead("k", Ticket(c)).parked);
  EXPECT_TRUE(ParkedRead("other", Ticket(9)).parked);
  Put("k", "v");
  ASSERT_EQ(sink_.woken.size(), 3u);
  for (const WaitTicket& t : sink_.woken) EXPECT_NE(t.conn_id, 9u);
  Put("k", "w");   // the tickets were taken: no second wake
  EXPECT_EQ(sink_.woken.size(), 3u);
}

TEST_F(WaitersTest, ParkingAgainReplacesTheConnectionsTicket) {
  Grant("k");
  ParkedRead("k", Ticket(1, 1));
  ParkedRead("k", Ticket(1, 2));
  Put("k", "v");
  ASSERT_EQ(sink_.woken.size(), 1u);
  EXPECT_EQ(sink_.woken[0].seq, 2u);
}

TEST_F(WaitersTest, DeleteFlushAndLeaseTimeoutWake) {
  Grant("a");
  ParkedRead("a", Ticket(1));
  store_->Delete(DeleteRequest{.key = "a"});
  EXPECT_EQ(sink_.woken.size(), 1u);

  Grant("b");
  ParkedRead("b", Ticket(2));
  store_->FlushAll(0);
  EXPECT_EQ(sink_.woken.size(), 2u);

  Grant("c");
  ParkedRead("c", Ticket(3));
  clock_.AdvanceMicros(5500000);   // past lease_timeout (5 s)
  Grant("c");   // regrant
  EXPECT_EQ(sink_.woken.size(), 3u);
  EXPECT_EQ(store_->Stats().lease_timeouts, 1u);
}

TEST_F(WaitersTest, DelayedFlushWakesWhenItTakesEffect) {
  // Enough other items that the expiry crawler's budget alone would not reach the key.
  for (int i = 0; i < 20000; ++i) Put("f" + std::to_string(i), "x");
  Grant("k");
  ASSERT_TRUE(ParkedRead("k", Ticket(1)).parked);
  store_->FlushAll(2);
  store_->ReclaimExpired(64);
  EXPECT_TRUE(sink_.woken.empty());   // not yet: the key still has its lease
  clock_.AdvanceSeconds(1);
  store_->ReclaimExpired(64);
  EXPECT_TRUE(sink_.woken.empty());
  clock_.AdvanceSeconds(1);   // the deadline: the maintenance tick applies the flush
  store_->ReclaimExpired(64);
  ASSERT_EQ(sink_.woken.size(), 1u);
  EXPECT_EQ(sink_.woken[0].conn_id, 1u);
  EXPECT_EQ(store_->Stats().curr_items, 0u);
  // The woken reader finds no holder now and takes the lease itself.
  EXPECT_FALSE(ParkedRead("k", Ticket(1)).parked);
}

TEST_F(WaitersTest, InvalidatingAVivifiedStubWakes) {
  ReadOptions vivify;
  vivify.kind = ReadKind::kMeta;
  vivify.create_on_miss = true;
  vivify.create_exptime = 30;
  ASSERT_EQ(store_->Read("k", vivify).lease, LeaseVerdict::kWin);
  EXPECT_TRUE(ParkedRead("k", Ticket(1)).parked);   // mg N stub: no value yet
  store_->Delete(DeleteRequest{.key = "k", .mark_stale = true});
  EXPECT_EQ(sink_.woken.size(), 1u);
}

TEST_F(WaitersTest, EvictionWakes) {
  config_.memory_limit = 64u << 10;
  config_.shard_bits = 0;
  Reset();
  Grant("k");
  ParkedRead("k", Ticket(1));   // a read: the stub moves to the main queue when its segment goes
  const std::string value(1000, 'x');
  // Keys read once each keep the main queue cycling too.
  for (int i = 0; i < 1000 && sink_.woken.empty(); ++i) {
    Put("fill" + std::to_string(i), value);
    store_->Read("fill" + std::to_string(i), ReadOptions());
  }
  EXPECT_EQ(sink_.woken.size(), 1u);
}

TEST_F(WaitersTest, SinkRunsWithoutTheShardLock) {
  sink_.read_back_key = "k";   // the sink reads the same key: a deadlock if locked
  Grant("k");
  ParkedRead("k", Ticket(1));
  Put("k", "v");
  EXPECT_EQ(sink_.woken.size(), 1u);
}

TEST_F(WaitersTest, NoSinkNoPark) {
  config_.wake_sink = nullptr;
  Reset();
  Grant("k");
  EXPECT_FALSE(ParkedRead("k", Ticket(1)).parked);
}

}  // namespace
}  // namespace herdless
