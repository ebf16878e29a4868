// The meta commands' replies, pinned to what Debian's memcached 1.6.18 sends
// for the same requests (each expectation was read off a live 1.6.18 with raw
// sockets). CAS values differ from memcached's (herdless starts its counter
// at 2), so tests read them from earlier replies. The store is real; the
// clock is manual; leases never time out unless a test says otherwise
// (memcached's behaviour).
#include "protocol/meta_executor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/key.h"
#include "storage/clock.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

class MetaExecutorTest : public ::testing::Test {
 protected:
  MetaExecutorTest() { Reopen(0); }

  void Reopen(uint32_t lease_timeout_ms, size_t item_size_max = 1u << 20) {
    StoreConfig config;
    config.clock = &clock_;
    config.random = &random_;
    config.item_size_max = item_size_max;
    config.lease.lease_timeout_ms = lease_timeout_ms;
    store_ = std::make_unique<ItemStore>(config);
    stats_.Reset();
  }

  // Runs one meta command line ("mg foo v t", no CRLF) with `data` as the ms
  // data block and returns the reply bytes. Stands in for the meta parser:
  // splits flags, converts the numeric tokens, decodes a `b` key.
  std::string Run(std::string_view line, std::string_view data = {}) {
    lines_.emplace_back(line);
    std::string_view rest = lines_.back();
    std::vector<std::string_view> words;
    while (!rest.empty()) {
      size_t sp = rest.find(' ');
      std::string_view w = rest.substr(0, sp);
      if (!w.empty()) words.push_back(w);
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
    auto req = std::make_unique<Request>();
    req->latest = latest_;
    if (words[0] == "mg") req->command = Command::kMetaGet;
    if (words[0] == "ms") req->command = Command::kMetaSet;
    if (words[0] == "md") req->command = Command::kMetaDelete;
    if (words[0] == "ma") req->command = Command::kMetaArithmetic;
    if (words[0] == "mn") req->command = Command::kMetaNoop;
    if (words[0] == "me") req->command = Command::kMetaDebug;
    size_t first_flag = 1;
    if (words.size() > 1) {
      req->key = words[1];
      first_flag = 2;
    }
    if (req->command == Command::kMetaSet) {
      first_flag = 3;
      lines_.emplace_back(data);
      req->value = lines_.back();
      req->value_length = static_cast<uint32_t>(data.size());
    }
    MetaFlags& flags = req->meta;
    MetaArgs& args = req->meta_args;
    for (size_t i = first_flag; i < words.size(); ++i) {
      const char name = words[i][0];
      const std::string token(words[i].substr(1));
      flags.list[flags.count++] = {name, words[i].substr(1)};
      flags.present |= MetaFlags::Bit(name);
      switch (name) {
        case 'N': args.N = std::stoll(token); break;
        case 'R': args.R = std::stoll(token); break;
        case 'T': args.T = std::stoll(token); break;
        case 'C': args.C = std::stoull(token); break;
        case 'E': args.E = std::stoull(token); break;
        case 'F': args.F = static_cast<uint32_t>(std::stoul(token)); break;
        case 'D': args.D = std::stoull(token); break;
        case 'J': args.J = std::stoull(token); break;
        case 'Y': args.Y = std::stod(token); break;
        case 'M': args.M = token[0]; break;
        case 'O': args.O = words[i].substr(1); break;
        default: break;
      }
    }
    if (flags.Has('b')) {
      size_t n = Base64Decode(req->key, req->decoded_key, sizeof(req->decoded_key));
      EXPECT_NE(n, 0u) << "bad base64 key in test: " << line;
      req->decoded_key_length = static_cast<uint8_t>(n);
      req->key = std::string_view(req->decoded_key, n);
      req->key_was_base64 = true;
    }
    ReplyBuffer out;
    ExecuteMeta(store_.get(), &stats_, *req, &out);
    return Drain(&out);
  }

  // A request the parser flagged as over the item limit (data swallowed).
  std::string RunTooLarge(std::string_view line) {
    auto req = std::make_unique<Request>();
    req->command = Command::kMetaSet;
    lines_.emplace_back(line);
    req->key = lines_.back();
    req->value_too_large = true;
    ReplyBuffer out;
    ExecuteMeta(store_.get(), &stats_, *req, &out);
    return Drain(&out);
  }

  // The CAS in a reply's " c<cas>" flag.
  static uint64_t CasOf(const std::string& reply) {
    size_t at = reply.find(" c");
    EXPECT_NE(at, std::string::npos) << reply;
    return std::strtoull(reply.c_str() + at + 2, nullptr, 10);
  }

  static std::string S(uint64_t v) { return std::to_string(v); }

  ManualClock clock_;
  // Nothing scripted: every draw is 1.0, so an XFetch draw wins only once the item expired.
  ScriptedRandom random_;
  std::unique_ptr<ItemStore> store_;
  ThreadStats stats_;
  std::deque<std::string> lines_;   // a deque: views into past requests stay valid as it grows
  bool latest_ = false;             // -o compat=1.6.45
};

// ---------------------------------------------------------------------------
// mg

TEST_F(MetaExecutorTest, MgMissIsEnEchoingOnlyOpaqueAndKeyInRequestOrder) {
  EXPECT_EQ(Run("mg miss O123 k v s t c f"), "EN O123 kmiss\r\n");
  EXPECT_EQ(Run("mg miss k O1 h l t"), "EN kmiss O1\r\n");
  EXPECT_EQ(Run("mg miss"), "EN\r\n");
}

TEST_F(MetaExecutorTest, MgMissWithBase64KeyEchoesEncodedKeyThenB) {
  EXPECT_EQ(Run("mg bWlzcw== b O1 k"), "EN O1 kbWlzcw== b\r\n");
}

TEST_F(MetaExecutorTest, MgQuietHidesOnlyTheMiss) {
  EXPECT_EQ(Run("mg foo O123 k v q s t c f"), "");
  EXPECT_EQ(Run("ms foo 2", "hi"), "HD\r\n");
  EXPECT_EQ(Run("mg foo q v"), "VA 2\r\nhi\r\n");
  EXPECT_EQ(Run("mg foo q"), "HD\r\n");
}

TEST_F(MetaExecutorTest, MgHitWithoutFlagsIsHdAndWithVIsVa) {
  Run("ms foo 2", "hi");
  EXPECT_EQ(Run("mg foo"), "HD\r\n");
  EXPECT_EQ(Run("mg foo v"), "VA 2\r\nhi\r\n");
  EXPECT_EQ(Run("mg foo v P L"), "VA 2\r\nhi\r\n");   // proxy hints: no effect
}

TEST_F(MetaExecutorTest, MgReturnFlagsComeInRequestOrder) {
  uint64_t cas = CasOf(Run("ms foo 2 c", "hi"));
  EXPECT_EQ(Run("mg foo s v t f c k O9 h l"),
            "VA 2 s2 t-1 f0 c" + S(cas) + " kfoo O9 h0 l0\r\nhi\r\n");
  clock_.AdvanceSeconds(3);
  EXPECT_EQ(Run("mg foo h l k"), "HD h1 l3 kfoo\r\n");
  EXPECT_EQ(Run("mg foo l"), "HD l0\r\n");
}

TEST_F(MetaExecutorTest, MgClientFlagsAndTtlComeFromTheStoredItem) {
  Run("ms m1 1 T10 F99", "Q");
  EXPECT_EQ(Run("mg m1 v t f"), "VA 1 t10 f99\r\nQ\r\n");
}

TEST_F(MetaExecutorTest, MgNoUpdateLeavesTheItemUnfetched) {
  Run("ms x 1", "a");
  EXPECT_EQ(Run("mg x u h"), "HD h0\r\n");
  EXPECT_EQ(Run("mg x u h"), "HD h0\r\n");
  EXPECT_EQ(Run("mg x h"), "HD h0\r\n");
  EXPECT_EQ(Run("mg x h"), "HD h1\r\n");
}

TEST_F(MetaExecutorTest, MgTBeforeTouchShowsOldTtlAndAfterShowsNew) {
  Run("ms a 1 T100", "x");
  EXPECT_EQ(Run("mg a t T50"), "HD t100\r\n");
  EXPECT_EQ(Run("mg a t"), "HD t50\r\n");
  EXPECT_EQ(Run("mg a T70 t"), "HD t70\r\n");
  EXPECT_EQ(Run("mg a T0 t"), "HD t-1\r\n");
}

TEST_F(MetaExecutorTest, MgBase64KeyOfABase64StoredItemComesBackEncoded) {
  EXPECT_EQ(Run("ms Zm9v 2 b", "hi"), "HD\r\n");
  EXPECT_EQ(Run("mg Zm9v b k v"), "VA 2 kZm9v b\r\nhi\r\n");
  EXPECT_EQ(Run("mg Zm9v k b"), "HD kZm9v b\r\n");
}

// memcached remembers that an item was stored with a base64 key
// (ITEM_KEY_BINARY): hits echo it in base64 even when asked without `b`, and
// keys stored plainly stay plain even when asked with `b` (checked against
// Debian's memcached 1.6.18).
TEST_F(MetaExecutorTest, HitsEchoTheKeyAsItWasStored) {
  EXPECT_EQ(Run("ms Zm9v 3 b", "bar"), "HD\r\n");
  EXPECT_EQ(Run("mg foo k v O1"), "VA 3 kZm9v b O1\r\nbar\r\n");
  EXPECT_EQ(Run("ms plain 1", "x"), "HD\r\n");
  EXPECT_EQ(Run("mg cGxhaW4= b k"), "HD kplain\r\n");
  EXPECT_EQ(Run("mg bm9wZQ== b k"), "EN kbm9wZQ== b\r\n");   // a miss follows the request
}

TEST_F(MetaExecutorTest, MgCountsGetsTouchesAndVivifiesAsMemcachedDoes) {
  Run("ms foo 2", "hi");
  Run("mg foo v");        // hit
  Run("mg nope v");       // miss
  Run("mg foo T30");      // touch hit: not a get
  Run("mg nope T30");     // a miss counts as a get miss even with T
  Run("mg viv N30");      // vivified: a hit
  Run("mg viv N30 T30");  // touch hit
  EXPECT_EQ(stats_.cmd_get.Get(), 4u);
  EXPECT_EQ(stats_.get_hits.Get(), 2u);
  EXPECT_EQ(stats_.get_misses.Get(), 2u);
  EXPECT_EQ(stats_.cmd_touch.Get(), 2u);
  EXPECT_EQ(stats_.touch_hits.Get(), 2u);
  EXPECT_EQ(stats_.touch_misses.Get(), 0u);
  EXPECT_EQ(stats_.cmd_meta.Get(), 0u);   // memcached counts only `me` there
}

// ---------------------------------------------------------------------------
// Anti-stampede: N, R, W/X/Z, md I, ms I C.

TEST_F(MetaExecutorTest, VivifyingMissWinsAndLaterReadersSeeZ) {
  std::string first = Run("mg h1 N30 c v s t");
  uint64_t cas = CasOf(first);
  EXPECT_EQ(first, "VA 0 c" + S(cas) + " s0 t30 W\r\n\r\n");
  EXPECT_EQ(Run("mg h1 c v"), "VA 0 c" + S(cas) + " Z\r\n\r\n");
  EXPECT_EQ(Run("mg h1 c v k"), "VA 0 c" + S(cas) + " kh1 Z\r\n\r\n");
  EXPECT_EQ(Run("mg h1 N30 q"), "HD Z\r\n");
}

TEST_F(MetaExecutorTest, VivifiedItemReportsUnfetchedThenFetched) {
  std::string first = Run("mg viv N30 t v c k s f h l");
  uint64_t cas = CasOf(first);
  EXPECT_EQ(first, "VA 0 t30 c" + S(cas) + " kviv s0 f0 h0 l0 W\r\n\r\n");
  EXPECT_EQ(Run("mg viv t v c k s f h l"),
            "VA 0 t30 c" + S(cas) + " kviv s0 f0 h1 l0 Z\r\n\r\n");
}

TEST_F(MetaExecutorTest, VivifyTtlFollowsFlagPositions) {
  EXPECT_EQ(Run("mg viv2 t N30"), "HD t-1 W\r\n");
  EXPECT_EQ(Run("mg viv4 N30 T60 t"), "HD t60 W\r\n");
  EXPECT_EQ(Run("mg viv5 N30 q"), "HD W\r\n");
  EXPECT_EQ(Run("mg viv5 N30 q"), "HD Z\r\n");
}

TEST_F(MetaExecutorTest, WinnersCasStoreFulfilsTheLeaseAndOldCasIsRefused) {
  uint64_t cas = CasOf(Run("mg w1 N30 c v"));
  EXPECT_EQ(Run("mg w1 c v"), "VA 0 c" + S(cas) + " Z\r\n\r\n");
  EXPECT_EQ(Run("ms w1 5 C999 T60", "wrong"), "EX\r\n");
  std::string stored = Run("ms w1 5 C" + S(cas) + " T60 c", "hello");
  uint64_t new_cas = CasOf(stored);
  EXPECT_EQ(stored, "HD c" + S(new_cas) + "\r\n");
  EXPECT_NE(new_cas, cas);
  EXPECT_EQ(Run("mg w1 c v t"), "VA 5 c" + S(new_cas) + " t60\r\nhello\r\n");
  EXPECT_EQ(Run("ms w1 5 C" + S(cas) + " T60 c", "again"), "EX c0\r\n");
}

TEST_F(MetaExecutorTest, InvalidatedItemGivesStaleWinThenStaleHeld) {
  Run("ms s1 3 T100", "old");
  uint64_t cas0 = CasOf(Run("mg s1 c"));
  EXPECT_EQ(Run("md s1 I"), "HD\r\n");
  std::string winner = Run("mg s1 c v t");
  uint64_t cas1 = CasOf(winner);
  EXPECT_NE(cas1, cas0);   // md I gives the item a new CAS
  EXPECT_EQ(winner, "VA 3 c" + S(cas1) + " t100 X W\r\nold\r\n");
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(Run("mg s1 c v t"), "VA 3 c" + S(cas1) + " t99 Z X\r\nold\r\n");
}

TEST_F(MetaExecutorTest, InvalidateWithTtlQuietlyResetsTheLease) {
  Run("ms s1 3 T100", "old");
  Run("md s1 I");
  Run("mg s1 v");   // wins
  EXPECT_EQ(Run("md s1 I T30 q"), "");
  EXPECT_EQ(Run("mg s1 v t"), "VA 3 t30 X W\r\nold\r\n");
  EXPECT_EQ(Run("mg s1 v t"), "VA 3 t30 Z X\r\nold\r\n");
}

TEST_F(MetaExecutorTest, StaleSetWithOlderCasStoresAStaleValueKeepingTtlAndLease) {
  Run("ms s1 3 T100", "old");
  uint64_t cas0 = CasOf(Run("mg s1 c"));
  Run("md s1 I");
  Run("mg s1 v");   // W
  clock_.AdvanceSeconds(2);
  std::string stale_set = Run("ms s1 3 I C" + S(cas0) + " T200 c", "low");
  uint64_t cas2 = CasOf(stale_set);
  EXPECT_EQ(stale_set, "HD c" + S(cas2) + "\r\n");
  EXPECT_EQ(Run("mg s1 c v t"), "VA 3 c" + S(cas2) + " t98 Z X\r\nlow\r\n");
  // The current CAS stores a normal, fresh item.
  std::string fresh = Run("ms s1 3 I C" + S(cas2) + " T200 c", "eql");
  uint64_t cas3 = CasOf(fresh);
  EXPECT_EQ(fresh, "HD c" + S(cas3) + "\r\n");
  EXPECT_EQ(Run("mg s1 c v t"), "VA 3 c" + S(cas3) + " t200\r\neql\r\n");
}

TEST_F(MetaExecutorTest, StaleSetRefusesHigherCasAndLowerCasWithoutI) {
  Run("ms s1 3 T100", "old");
  uint64_t cas0 = CasOf(Run("mg s1 c"));
  Run("md s1 I");
  EXPECT_EQ(Run("ms s1 3 I C" + S(cas0 + 1000) + " T200 c", "hig"), "EX c0\r\n");
  EXPECT_EQ(Run("ms s1 3 C" + S(cas0) + " T200 c", "low"), "EX c0\r\n");
  // I without C is a plain set.
  std::string plain = Run("ms s1 3 I T200 c", "noc");
  EXPECT_EQ(plain, "HD c" + S(CasOf(plain)) + "\r\n");
  EXPECT_EQ(Run("mg s1 v t"), "VA 3 t200\r\nnoc\r\n");
}

TEST_F(MetaExecutorTest, RecacheWinsOnlyBelowTheRemainingTtl) {
  Run("ms r1 1 T100", "x");
  EXPECT_EQ(Run("mg r1 R30 v t"), "VA 1 t100\r\nx\r\n");
  EXPECT_EQ(Run("mg r1 R101 v t"), "VA 1 t100 W\r\nx\r\n");
  EXPECT_EQ(Run("mg r1 R101 v t"), "VA 1 t100 Z\r\nx\r\n");
  Run("ms r2 1", "x");   // no TTL: R never wins
  EXPECT_EQ(Run("mg r2 R30 v t"), "VA 1 t-1\r\nx\r\n");
}

TEST_F(MetaExecutorTest, RecacheJudgesTheTtlAtItsPosition) {
  Run("ms r3 1 T100", "x");
  EXPECT_EQ(Run("mg r3 t R200 T10"), "HD t100 W\r\n");
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(Run("mg r3 t R20"), "HD t9 Z\r\n");
  Run("ms r4 1 T100", "x");
  EXPECT_EQ(Run("mg r4 T10 R20 t"), "HD t10 W\r\n");
  Run("ms r5 1 T100", "x");
  EXPECT_EQ(Run("mg r5 R20 T10 t"), "HD t10\r\n");
}

TEST_F(MetaExecutorTest, QuietPipelineAnswersOnlyHitsAndNoop) {
  Run("ms a 1", "A");
  std::string replies = Run("mg a q v k") + Run("mg b q v k") + Run("mg c q v k") + Run("mn");
  EXPECT_EQ(replies, "VA 1 ka\r\nA\r\nMN\r\n");
}

// herdless's lease timeout (default 5 s; 0 above, as memcached): a winner that
// never stores loses its lease and the next reader wins with a new CAS.
TEST_F(MetaExecutorTest, DeadWinnersLeasePassesOnAfterTheTimeout) {
  Reopen(5000);
  uint64_t cas = CasOf(Run("mg k N30 c"));
  EXPECT_EQ(Run("mg k c"), "HD c" + S(cas) + " Z\r\n");
  clock_.AdvanceSeconds(6);
  std::string next = Run("mg k c");
  uint64_t cas2 = CasOf(next);
  EXPECT_NE(cas2, cas);
  EXPECT_EQ(next, "HD c" + S(cas2) + " W\r\n");
  EXPECT_EQ(Run("ms k 1 C" + S(cas), "x"), "EX\r\n");
  EXPECT_EQ(Run("ms k 1 C" + S(cas2), "y"), "HD\r\n");
}

// ---------------------------------------------------------------------------
// ms

TEST_F(MetaExecutorTest, MsEchoesCasKeyAndOpaqueInRequestOrder) {
  std::string reply = Run("ms Zm9v 2 T100 F7 c k O5 b", "hi");
  EXPECT_EQ(reply, "HD c" + S(CasOf(reply)) + " kZm9v b O5\r\n");
  EXPECT_EQ(Run("ms foo 2 q", "hi"), "");
}

TEST_F(MetaExecutorTest, MsAddOnExistingIsNotStoredEvenQuietly) {
  EXPECT_EQ(Run("ms m1 1 ME", "a"), "HD\r\n");
  EXPECT_EQ(Run("ms m1 1 ME c", "a"), "NS c0\r\n");
  EXPECT_EQ(Run("ms m1 1 ME q", "a"), "NS\r\n");
}

TEST_F(MetaExecutorTest, MsAppendAndPrependKeepTheOldTtl) {
  Run("ms m1 1", "a");
  EXPECT_EQ(Run("ms m1 1 MA T5", "b"), "HD\r\n");
  EXPECT_EQ(Run("ms m1 1 MP q", "c"), "");
  EXPECT_EQ(Run("mg m1 v t"), "VA 3 t-1\r\ncab\r\n");
}

TEST_F(MetaExecutorTest, MsAppendReplaceAndCasNeedAnItem) {
  EXPECT_EQ(Run("ms m2 1 MA", "b"), "NS\r\n");
  EXPECT_EQ(Run("ms m2 1 MR", "b"), "NS\r\n");
  EXPECT_EQ(Run("ms m2 1 C5", "b"), "NF\r\n");
  EXPECT_EQ(Run("ms m2 1 C5 q", "b"), "NF\r\n");
}

TEST_F(MetaExecutorTest, MsAppendHonoursCas) {
  Run("ms app 1", "a");
  uint64_t cas = CasOf(Run("mg app c"));
  EXPECT_EQ(Run("ms app 1 MA C" + S(cas + 5) + " c", "b"), "EX c0\r\n");
  std::string ok = Run("ms app 1 MA C" + S(cas) + " c", "b");
  uint64_t new_cas = CasOf(ok);
  EXPECT_EQ(ok, "HD c" + S(new_cas) + "\r\n");
  EXPECT_EQ(Run("ms app 1 MR C" + S(new_cas + 1) + " c", "Y"), "EX c0\r\n");
  EXPECT_EQ(Run("ms app 1 ME C" + S(new_cas) + " c", "Y"), "NS c0\r\n");
  EXPECT_EQ(Run("mg app v"), "VA 2\r\nab\r\n");
}

TEST_F(MetaExecutorTest, MsRejectsUnknownAndLowerCaseModes) {
  EXPECT_EQ(Run("ms m2 1 Ms", "b"), "CLIENT_ERROR invalid mode for ms M token\r\n");
  EXPECT_EQ(Run("ms m2 1 MX q", "b"), "CLIENT_ERROR invalid mode for ms M token\r\n");
  EXPECT_EQ(Run("mg m2"), "EN\r\n");
}

TEST_F(MetaExecutorTest, MsTooLargeRemovesTheOldItemAndIsReportedEvenQuietly) {
  Run("ms m1 1", "a");
  EXPECT_EQ(RunTooLarge("m1"), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Run("mg m1 v"), "EN\r\n");
  EXPECT_EQ(stats_.store_too_large.Get(), 1u);
  EXPECT_EQ(stats_.cmd_set.Get(), 1u);   // memcached: not a set command
}

TEST_F(MetaExecutorTest, MsOverTheItemLimitIsTooLargeFromTheStoreToo) {
  Reopen(0, 1024);
  Run("ms m1 1", "a");
  EXPECT_EQ(Run("ms m1 2000 T10 q", std::string(2000, 'x')),
            "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Run("mg m1 v"), "EN\r\n");
}

TEST_F(MetaExecutorTest, MsCountsSetsAndCasOutcomes) {
  Run("ms foo 1", "x");
  uint64_t cas = CasOf(Run("mg foo c"));
  Run("ms foo 1 C1", "x");              // badval
  Run("ms nokey 1 C1", "x");            // miss
  Run("ms foo 1 C" + S(cas), "y");      // hit
  Run("ms foo 1 MA C1", "x");           // append mismatch: not a cas_badval
  Run("ms none 1 MR", "x");             // NS
  EXPECT_EQ(stats_.cmd_set.Get(), 6u);
  EXPECT_EQ(stats_.cas_badval.Get(), 1u);
  EXPECT_EQ(stats_.cas_misses.Get(), 1u);
  EXPECT_EQ(stats_.cas_hits.Get(), 1u);
}

// memcached 1.6.20+ (1.6.18 accepts `s` and `N` on ms and ignores them).
TEST_F(MetaExecutorTest, MsReturnsStoredSizeAndVivifiesAppend) {
  EXPECT_EQ(Run("ms sz 3 s", "abc"), "HD s3\r\n");
  EXPECT_EQ(Run("ms sz 2 MA s", "de"), "HD s5\r\n");
  EXPECT_EQ(Run("ms nv 2 MA N30 s", "de"), "HD s2\r\n");
  EXPECT_EQ(Run("mg nv v t"), "VA 2 t30\r\nde\r\n");
}

// ---------------------------------------------------------------------------
// md

TEST_F(MetaExecutorTest, MdQuietHidesOnlyHd) {
  Run("ms s1 1", "x");
  EXPECT_EQ(Run("md s1 C1"), "EX\r\n");
  EXPECT_EQ(Run("md s1 I C1"), "EX\r\n");
  EXPECT_EQ(Run("md s1 C1 q"), "EX\r\n");
  EXPECT_EQ(Run("md s1 q"), "");
  EXPECT_EQ(Run("md s1 q O5 k"), "NF O5 ks1\r\n");
  EXPECT_EQ(Run("md s1 O5 k"), "NF O5 ks1\r\n");
  EXPECT_EQ(Run("md c2ox b O5 k"), "NF O5 kc2ox b\r\n");
}

// memcached's md compares C0 like any other CAS (ms and ma take 0 as any).
TEST_F(MetaExecutorTest, MdComparesCasZero) {
  Run("ms z 1", "5");
  EXPECT_EQ(Run("md z C0"), "EX\r\n");
  EXPECT_EQ(Run("md z C0 I"), "EX\r\n");
  EXPECT_EQ(Run("md z C0 x"), "EX\r\n");
  EXPECT_EQ(Run("ma z C0 v"), "VA 1\r\n6\r\n");
  EXPECT_EQ(Run("md nope C0"), "NF\r\n");
}

TEST_F(MetaExecutorTest, MdDeletesAndEchoesFlags) {
  Run("ms foo 1", "x");
  EXPECT_EQ(Run("md foo k O7"), "HD kfoo O7\r\n");
  EXPECT_EQ(Run("mg foo"), "EN\r\n");
}

TEST_F(MetaExecutorTest, MdCountsDeletesButNotInvalidations) {
  Run("ms foo 1", "x");
  Run("ms x 1", "x");
  Run("md foo");       // hit
  Run("md foo");       // NF
  Run("md x I");       // not counted
  Run("md x C1");      // EX: a miss
  EXPECT_EQ(stats_.delete_hits.Get(), 1u);
  EXPECT_EQ(stats_.delete_misses.Get(), 2u);
}

// md x (memcached 1.6.19+): the replies memcached 1.6.45 gave to the same
// requests (tests/integration/test_compare_latest.py replays them too).
TEST_F(MetaExecutorTest, MdXEmptiesTheValueKeepingCasWithNewFlagsAndTtl) {
  uint64_t cas = CasOf(Run("ms a 2 T0 F5 c", "hi"));
  EXPECT_EQ(Run("md a x F7 T100"), "HD\r\n");
  EXPECT_EQ(Run("mg a c f v t s"), "VA 0 c" + S(cas) + " f7 t100 s0\r\n\r\n");
  EXPECT_EQ(stats_.delete_hits.Get(), 1u);   // memcached counts md x as a delete hit
  EXPECT_EQ(Run("md a x"), "HD\r\n");        // no F, no T: flags 0, no TTL
  EXPECT_EQ(Run("mg a f t"), "HD f0 t-1\r\n");
  EXPECT_EQ(Run("md zz x"), "NF\r\n");
  EXPECT_EQ(Run("md a x C1"), "EX\r\n");
  EXPECT_EQ(Run("md a x C" + S(cas) + " q"), "");
}

TEST_F(MetaExecutorTest, MdXWithIIsAStaleTombstoneWithTheChosenCas) {
  Run("ms a 2", "hi");
  EXPECT_EQ(Run("md a x I E999"), "HD\r\n");
  EXPECT_EQ(Run("mg a c f v t s"), "VA 0 c999 f0 t-1 s0 X W\r\n\r\n");
  EXPECT_EQ(Run("mg a c"), "HD c999 Z X\r\n");
  EXPECT_EQ(stats_.delete_hits.Get(), 0u);   // an invalidation, not a delete
}

TEST_F(MetaExecutorTest, EGivesTheItemTheClientsCas) {
  EXPECT_EQ(Run("ms d 1 E77 c", "x"), "HD c77\r\n");
  EXPECT_EQ(Run("mg d c"), "HD c77\r\n");
  EXPECT_EQ(Run("ms d 1 C77 E78 c", "y"), "HD c78\r\n");
  EXPECT_EQ(Run("md d I E90"), "HD\r\n");
  EXPECT_EQ(Run("mg d c"), "HD c90 X W\r\n");
  EXPECT_EQ(Run("md d E5"), "HD\r\n");          // a plain delete: E has nothing to set
  EXPECT_EQ(Run("ma e N0 J5 E55 c v"), "VA 1 c55\r\n5\r\n");
  EXPECT_EQ(Run("ma e E56 c v"), "VA 1 c56\r\n6\r\n");
  // mg: only the item N creates takes E's CAS; a hit keeps its own.
  EXPECT_EQ(Run("mg b N30 E1234 c v"), "VA 0 c1234 W\r\n\r\n");
  EXPECT_EQ(Run("mg e E1 c"), "HD c56\r\n");
}

TEST_F(MetaExecutorTest, MsNInAppendModeCreatesTheMissingItem) {
  EXPECT_EQ(Run("ms c 2 MA N30 F3 s", "ab"), "HD s2\r\n");
  EXPECT_EQ(Run("mg c v f t"), "VA 2 f3 t30\r\nab\r\n");
  EXPECT_EQ(Run("ms c 1 MP N30 s", "z"), "HD s3\r\n");
  EXPECT_EQ(Run("ms nn 1 MA s", "z"), "NS s1\r\n");
}

// ---------------------------------------------------------------------------
// ma

TEST_F(MetaExecutorTest, MaQuietHidesUpdatesButNotMissesOrCreations) {
  EXPECT_EQ(Run("ma n1"), "NF\r\n");
  EXPECT_EQ(Run("ma n1 q"), "NF\r\n");
  EXPECT_EQ(Run("ma n1 q O1 k"), "NF O1 kn1\r\n");
  EXPECT_EQ(Run("ma n1 N0 q"), "HD\r\n");
  EXPECT_EQ(Run("ma n1 q"), "");
  EXPECT_EQ(Run("ma n1 v"), "VA 1\r\n2\r\n");
  EXPECT_EQ(Run("ma a1 N0 q v"), "VA 1\r\n0\r\n");
  EXPECT_EQ(Run("ma a1 N0 q v"), "");
}

// memcached 1.6.19+ (compat=1.6.45): q hides a creation's line too.
TEST_F(MetaExecutorTest, MaQuietHidesCreationsUnderCompatLatest) {
  latest_ = true;
  EXPECT_EQ(Run("ma n1 q"), "NF\r\n");
  EXPECT_EQ(Run("ma n1 N0 J5 q k"), "");
  EXPECT_EQ(Run("ma n1 q"), "");
  EXPECT_EQ(Run("ma n1 v"), "VA 1\r\n7\r\n");
}

TEST_F(MetaExecutorTest, MaModesDeltasAndWrapAround) {
  Run("ma n1 N0");
  Run("ma n1");
  Run("ma n1");   // 2
  std::string r = Run("ma n1 v t c k O2 MD D5");
  EXPECT_EQ(r, "VA 1 t-1 c" + S(CasOf(r)) + " kn1 O2\r\n0\r\n");   // floors at 0
  EXPECT_EQ(Run("ma n1 v MD D500"), "VA 1\r\n0\r\n");
  EXPECT_EQ(Run("ma n1 v M-"), "VA 1\r\n0\r\n");
  EXPECT_EQ(Run("ma n1 v M+ D18446744073709551615"), "VA 20\r\n18446744073709551615\r\n");
  EXPECT_EQ(Run("ma n1 v MI D2"), "VA 1\r\n1\r\n");   // wraps mod 2^64
  EXPECT_EQ(Run("ma n1 v Mi"), "CLIENT_ERROR invalid mode for ma M token\r\n");
  EXPECT_EQ(Run("ma n1 v Mx q"), "CLIENT_ERROR invalid mode for ma M token\r\n");
}

TEST_F(MetaExecutorTest, MaCreatesWithInitialValueAndTtlByPosition) {
  EXPECT_EQ(Run("ma n2 N100 J13 v t"), "VA 2 t100\r\n13\r\n");
  EXPECT_EQ(Run("ma n3 t N100 J13 v"), "VA 2 t-1\r\n13\r\n");
  EXPECT_EQ(Run("ma n4 N100 J13 T50 t v"), "VA 2 t50\r\n13\r\n");
  EXPECT_EQ(Run("ma n4 T20 t v"), "VA 2 t20\r\n14\r\n");
  EXPECT_EQ(Run("ma n4 t v"), "VA 2 t20\r\n15\r\n");
}

// As Debian's memcached 1.6.18: t before T shows the TTL the item had, after T the new one.
TEST_F(MetaExecutorTest, MaTtlFlagFollowsItsPositionAroundT) {
  EXPECT_EQ(Run("ma c N100 J5 v"), "VA 1\r\n5\r\n");
  EXPECT_EQ(Run("ma c t T30 v"), "VA 1 t100\r\n6\r\n");
  EXPECT_EQ(Run("ma c t v"), "VA 1 t30\r\n7\r\n");
  EXPECT_EQ(Run("ma c T40 t"), "HD t40\r\n");
}

TEST_F(MetaExecutorTest, MaCasMismatchIsExEvenQuietly) {
  Run("ma n4 N0");
  EXPECT_EQ(Run("ma n4 C1 v"), "EX\r\n");
  EXPECT_EQ(Run("ma n4 C1 v q O3"), "EX O3\r\n");
}

TEST_F(MetaExecutorTest, MaOnNonNumericValueIsAClientErrorEvenQuietly) {
  Run("ms s 3", "abc");
  Run("ms e 0", "");
  const std::string error = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
  EXPECT_EQ(Run("ma s v"), error);
  EXPECT_EQ(Run("ma s v q"), error);
  EXPECT_EQ(Run("ma e v"), error);
}

TEST_F(MetaExecutorTest, MaCountsHitsAndMissesButNotCreations) {
  Run("ma n");        // incr miss
  Run("ma n N0");     // created: not counted
  Run("ma n");        // incr hit
  Run("ma n MD");     // decr hit
  Run("ma n MD");     // decr hit
  Run("ma nn MD");    // decr miss
  Run("ma n C1");     // EX: not counted
  EXPECT_EQ(stats_.incr_hits.Get(), 1u);
  EXPECT_EQ(stats_.incr_misses.Get(), 1u);
  EXPECT_EQ(stats_.decr_hits.Get(), 2u);
  EXPECT_EQ(stats_.decr_misses.Get(), 1u);
}

// ---------------------------------------------------------------------------
// mn, me

TEST_F(MetaExecutorTest, MnIsMn) { EXPECT_EQ(Run("mn"), "MN\r\n"); }

TEST_F(MetaExecutorTest, MeShowsMemcachedsDebugLine) {
  std::string set = Run("ms foo 2 T100 F7 c", "hi");
  uint64_t cas = CasOf(set);
  // memcached prints exp as now - exptime (minus the remaining TTL), and the
  // size and slab class its own item layout would have.
  EXPECT_EQ(Run("me foo"), "ME foo exp=-100 la=0 cas=" + S(cas) + " fetch=no cls=1 size=68\r\n");
  Run("mg foo");
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(Run("me foo"), "ME foo exp=-99 la=1 cas=" + S(cas) + " fetch=yes cls=1 size=68\r\n");
  EXPECT_EQ(Run("me nope"), "EN\r\n");
  EXPECT_EQ(stats_.cmd_meta.Get(), 3u);
}

TEST_F(MetaExecutorTest, MeReportsNoTtlLargerClassesAndBase64Keys) {
  uint64_t cas = CasOf(Run("ms m3 300 F4 c", std::string(300, 'x')));
  EXPECT_EQ(Run("me m3"), "ME m3 exp=-1 la=0 cas=" + S(cas) + " fetch=no cls=7 size=365\r\n");
  cas = CasOf(Run("ms Zm9v 2 b c", "hi"));
  EXPECT_EQ(Run("me Zm9v b"), "ME Zm9v exp=-1 la=0 cas=" + S(cas) + " fetch=no cls=1 size=64\r\n");
}

}  // namespace
}  // namespace herdless
