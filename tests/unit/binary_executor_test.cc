// BinaryExecutor: requests in, response packets out, decoded and checked field
// by field; the shared counters; the classic stampede modes for binary gets;
// text and binary on one store.
#include "protocol/binary_executor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/auth.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

using namespace binary;

std::string Set(uint8_t op, std::string key, std::string value, uint32_t flags = 0,
                uint32_t exptime = 0, uint64_t cas = 0) {
  return Packet(op, key, Be(flags, 4) + Be(exptime, 4), value, cas);
}

std::string Incr(uint8_t op, std::string key, uint64_t delta, uint64_t initial = 0,
                 uint32_t exptime = kNoAutoCreate, uint64_t cas = 0) {
  return Packet(op, key, Be(delta, 8) + Be(initial, 8) + Be(exptime, 4), "", cas);
}

struct Response {
  uint8_t opcode = 0;
  uint16_t status = 0;
  std::string extras, key, value;
  uint32_t opaque = 0;
  uint64_t cas = 0;
};

std::vector<Response> Decode(const std::string& s) {
  std::vector<Response> out;
  size_t at = 0;
  while (at + kHeaderSize <= s.size()) {
    EXPECT_EQ(static_cast<uint8_t>(s[at]), kResponseMagic);
    Response r;
    r.opcode = static_cast<uint8_t>(s[at + 1]);
    const size_t keylen = FromBe(s.substr(at + 2, 2));
    const size_t extlen = static_cast<uint8_t>(s[at + 4]);
    r.status = static_cast<uint16_t>(FromBe(s.substr(at + 6, 2)));
    const size_t bodylen = FromBe(s.substr(at + 8, 4));
    r.opaque = static_cast<uint32_t>(FromBe(s.substr(at + 12, 4)));
    r.cas = FromBe(s.substr(at + 16, 8));
    r.extras = s.substr(at + kHeaderSize, extlen);
    r.key = s.substr(at + kHeaderSize + extlen, keylen);
    r.value = s.substr(at + kHeaderSize + extlen + keylen, bodylen - extlen - keylen);
    at += kHeaderSize + bodylen;
    out.push_back(r);
  }
  EXPECT_EQ(at, s.size()) << "trailing bytes";
  return out;
}

class NullSink : public LeaseWakeSink {
 public:
  void Wake(const WaitTicket&) override { ++wakes; }
  int wakes = 0;
};

class BinaryExecutorTest : public ::testing::Test {
 protected:
  BinaryExecutorTest() : config_(DrivenStoreConfig(&clock_, &random_)), server_(&stats_) {
    clock_.AdvanceSeconds(100);
    config_.wake_sink = &sink_;
    Reset();
  }

  void Reset() {
    store_ = std::make_unique<ItemStore>(config_);
    binary_ = std::make_unique<BinaryExecutor>(store_.get(), &server_, &stats_);
    text_ = std::make_unique<Executor>(store_.get(), &server_, &stats_);
  }

  std::vector<Response> Run(const std::string& in, const WaitTicket* park = nullptr) {
    outcome_ = binary_->Process(in, &out_, SIZE_MAX, 0, park);
    return Decode(Drain(&out_));
  }

  Response One(const std::string& in) {
    std::vector<Response> r = Run(in);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? Response() : r[0];
  }

  std::string Text(std::string_view in) {
    text_->Process(in, &out_, SIZE_MAX, 0);
    return Drain(&out_);
  }

  ManualClock clock_;
  DefaultRandom random_{3};
  NullSink sink_;
  StoreConfig config_;
  ThreadStats stats_;
  FakeServer server_;
  std::unique_ptr<ItemStore> store_;
  std::unique_ptr<BinaryExecutor> binary_;
  std::unique_ptr<Executor> text_;
  ReplyBuffer out_;
  ProcessOutcome outcome_;
};

TEST_F(BinaryExecutorTest, GetFormsOfAHit) {
  const Response set = One(Set(kSet, "k", "value", 42));
  EXPECT_EQ(set.status, kSuccess);
  EXPECT_NE(set.cas, 0u);
  struct {
    uint8_t op;
    bool key;
  } forms[] = {{kGet, false}, {kGetQ, false}, {kGetK, true}, {kGetKQ, true}};
  for (const auto& f : forms) {
    const Response r = One(Packet(f.op, "k", "", "", 0, 0x0a0b0c0d));
    EXPECT_EQ(r.opcode, f.op);
    EXPECT_EQ(r.status, kSuccess);
    EXPECT_EQ(FromBe(r.extras), 42u);
    EXPECT_EQ(r.key, f.key ? "k" : "");
    EXPECT_EQ(r.value, "value");
    EXPECT_EQ(r.cas, set.cas);
    EXPECT_EQ(r.opaque, 0x0a0b0c0du);   // the request's bytes, unchanged
  }
  EXPECT_EQ(stats_.cmd_get.Get(), 4u);
  EXPECT_EQ(stats_.get_hits.Get(), 4u);
}

TEST_F(BinaryExecutorTest, GetFormsOfAMiss) {
  const Response get = One(Packet(kGet, "m"));
  EXPECT_EQ(get.status, kKeyNotFound);
  EXPECT_EQ(get.value, "Not found");
  const Response getk = One(Packet(kGetK, "m"));
  EXPECT_EQ(getk.status, kKeyNotFound);
  EXPECT_EQ(getk.key, "m");
  EXPECT_EQ(getk.value, "");
  EXPECT_TRUE(Run(Packet(kGetQ, "m") + Packet(kGetKQ, "m")).empty());
  EXPECT_EQ(stats_.get_misses.Get(), 4u);
}

TEST_F(BinaryExecutorTest, QuietCommandsAreSilentOnSuccessOnly) {
  EXPECT_TRUE(Run(Set(kSetQ, "k", "1") + Packet(kDeleteQ, "k") + Packet(kFlushQ)).empty());
  const std::vector<Response> errors =
      Run(Set(kAddQ, "k", "1") + Set(kAddQ, "k", "2") + Packet(kDeleteQ, "zz") +
          Set(kReplaceQ, "zz", "1") + Incr(kIncrementQ, "zz", 1));
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].opcode, kAddQ);
  EXPECT_EQ(errors[0].status, kKeyExists);
  EXPECT_EQ(errors[1].status, kKeyNotFound);
  EXPECT_EQ(errors[2].status, kKeyNotFound);
  EXPECT_EQ(errors[3].status, kKeyNotFound);
}

TEST_F(BinaryExecutorTest, StoreResults) {
  struct {
    std::string request;
    uint16_t status;
  } steps[] = {
      {Set(kReplace, "k", "x"), kKeyNotFound},
      {Set(kAdd, "k", "1"), kSuccess},
      {Set(kAdd, "k", "2"), kKeyExists},
      {Set(kReplace, "k", "3"), kSuccess},
      {Set(kSet, "k", "4", 0, 0, 12345), kKeyExists},
      {Set(kSet, "zz", "4", 0, 0, 12345), kKeyNotFound},
      {Packet(kAppend, "zz", "", "x"), kNotStored},
      {Packet(kAppend, "k", "", "5"), kSuccess},
      {Packet(kPrepend, "k", "", "0"), kSuccess},
      {Packet(kAppend, "k", "", "x", 12345), kKeyExists},
  };
  for (const auto& s : steps) EXPECT_EQ(One(s.request).status, s.status) << FromBe(s.request.substr(1, 1));
  EXPECT_EQ(One(Packet(kGet, "k")).value, "035");
  EXPECT_EQ(stats_.cas_badval.Get(), 1u);
  EXPECT_EQ(stats_.cas_misses.Get(), 1u);
}

TEST_F(BinaryExecutorTest, CasRoundTripAcrossProtocols) {
  const uint64_t cas = One(Set(kSet, "k", "1")).cas;
  EXPECT_EQ(Text("gets k\r\n"), "VALUE k 0 1 " + std::to_string(cas) + "\r\n1\r\nEND\r\n");
  const Response swapped = One(Set(kSet, "k", "2", 0, 0, cas));
  EXPECT_EQ(swapped.status, kSuccess);
  EXPECT_EQ(Text("cas k 0 0 1 " + std::to_string(swapped.cas) + "\r\n3\r\n"), "STORED\r\n");
  EXPECT_EQ(One(Packet(kGet, "k")).value, "3");
  EXPECT_EQ(stats_.cas_hits.Get(), 2u);
}

// A get's reply references its item until memcached writes the batch out
// (at its end, at a Noop or an error reply): a decrement of that item then
// writes a new one of the number's length rather than padding it in place.
TEST_F(BinaryExecutorTest, ADecrementOfAnItemShownEarlierInTheBatchIsNotPadded) {
  struct Case {
    std::string batch;
    std::string value;
  } cases[] = {
      {"", "99 "},
      {Packet(kGet, "n"), "99"},
      {Packet(kGetQ, "n"), "99"},
      {Packet(kTouch, "n", Be(0, 4)), "99"},
      {Packet(kGet, "n") + Packet(kGetK, "zz"), "99"},   // a GetK miss is no error
      {Packet(kGet, "n") + Packet(kNoop), "99 "},
      {Packet(kGet, "n") + Packet(kGet, "zz"), "99 "},
      {Packet(kGet, "n") + Packet(kDeleteQ, "zz"), "99 "},
  };
  for (const Case& c : cases) {
    Run(Set(kSet, "n", "100"));
    Run(c.batch + Incr(kDecrement, "n", 1));
    EXPECT_EQ(One(Packet(kGet, "n")).value, c.value) << c.batch.size();
  }
}

TEST_F(BinaryExecutorTest, IncrementAndDecrement) {
  const Response created = One(Incr(kIncrement, "n", 5, 10, 0));
  EXPECT_EQ(created.status, kSuccess);
  EXPECT_EQ(FromBe(created.value), 10u);   // created with the initial value, no delta
  EXPECT_EQ(FromBe(One(Incr(kIncrement, "n", 5)).value), 15u);
  EXPECT_EQ(FromBe(One(Incr(kDecrement, "n", 20)).value), 0u);
  EXPECT_EQ(One(Incr(kIncrement, "none", 1)).status, kKeyNotFound);
  One(Set(kSet, "s", "abc"));
  const Response bad = One(Incr(kIncrement, "s", 1));
  EXPECT_EQ(bad.status, kNonNumeric);
  EXPECT_EQ(bad.value, "Non-numeric server-side value for incr or decr");
  EXPECT_EQ(One(Incr(kIncrement, "n", 1, 0, kNoAutoCreate, 1)).status, kKeyExists);
  EXPECT_EQ(stats_.incr_hits.Get(), 1u);
  EXPECT_EQ(stats_.decr_hits.Get(), 1u);
  EXPECT_EQ(stats_.incr_misses.Get(), 1u);
}

TEST_F(BinaryExecutorTest, TouchAndGat) {
  One(Set(kSet, "k", "v", 9, 10));
  const Response touch = One(Packet(kTouch, "k", Be(1000, 4)));
  EXPECT_EQ(touch.status, kSuccess);
  EXPECT_EQ(FromBe(touch.extras), 9u);
  EXPECT_EQ(touch.value, "");
  clock_.AdvanceSeconds(20);   // past the old TTL, within the new one
  const Response gatk = One(Packet(kGatK, "k", Be(1000, 4)));
  EXPECT_EQ(gatk.key, "k");
  EXPECT_EQ(gatk.value, "v");
  EXPECT_TRUE(Run(Packet(kGatQ, "m", Be(1, 4))).empty());
  EXPECT_EQ(stats_.cmd_touch.Get(), 3u);
  EXPECT_EQ(stats_.touch_hits.Get(), 2u);
  EXPECT_EQ(stats_.touch_misses.Get(), 1u);
  EXPECT_EQ(stats_.cmd_get.Get(), 0u);
}

TEST_F(BinaryExecutorTest, FlushNoopVersionQuit) {
  One(Set(kSet, "k", "v"));
  EXPECT_EQ(One(Packet(kFlush)).status, kSuccess);
  EXPECT_EQ(One(Packet(kGet, "k")).status, kKeyNotFound);
  EXPECT_EQ(One(Packet(kNoop)).status, kSuccess);
  EXPECT_EQ(One(Packet(kVersion)).value, kServerVersion);
  EXPECT_EQ(One(Packet(kQuit)).opcode, kQuit);
  EXPECT_TRUE(outcome_.close);
  EXPECT_TRUE(Run(Packet(kQuitQ)).empty());
  EXPECT_TRUE(outcome_.close);
  server_.settings.flush_enabled = false;
  const Response refused = One(Packet(kFlush));
  EXPECT_EQ(refused.status, kAuthError);
  EXPECT_EQ(refused.value, "Auth failure.");
}

TEST_F(BinaryExecutorTest, StatPacketsEndWithAnEmptyOne) {
  One(Set(kSet, "k", "v"));
  const std::vector<Response> all = Run(Packet(kStat, "", "", "", 0, 77));
  ASSERT_GT(all.size(), 40u);
  bool saw_cmd_set = false;
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    EXPECT_EQ(all[i].opcode, kStat);
    EXPECT_EQ(all[i].opaque, 77u);
    EXPECT_FALSE(all[i].key.empty());
    if (all[i].key == "cmd_set") saw_cmd_set = all[i].value == "1";
  }
  EXPECT_TRUE(saw_cmd_set);
  EXPECT_TRUE(all.back().key.empty() && all.back().value.empty());
  EXPECT_EQ(Run(Packet(kStat, "reset")).size(), 1u);
  EXPECT_EQ(stats_.cmd_set.Get(), 0u);
  EXPECT_EQ(One(Packet(kStat, "conns")).status, kKeyNotFound);   // as memcached
  EXPECT_EQ(One(Packet(kStat, "bogus")).value, "Not found");
  EXPECT_EQ(Run(Packet(kStat, "sizes_disable")).size(), 1u);     // no end marker, as memcached
  std::vector<Response> settings = Run(Packet(kStat, "settings"));
  bool binding = false;
  for (const Response& r : settings) binding |= r.key == "binding_protocol";
  EXPECT_TRUE(binding);
}

TEST_F(BinaryExecutorTest, ErrorsAndTheirConsequences) {
  const Response unknown = One(Packet(0x1b, "", Be(1, 4)));
  EXPECT_EQ(unknown.status, kUnknownCommand);
  EXPECT_FALSE(outcome_.close);
  EXPECT_EQ(outcome_.swallow, 4u);
  const Response invalid = One(Packet(kGet, "k", Be(1, 4)) + Packet(kNoop));
  EXPECT_EQ(invalid.status, kInvalidArguments);
  EXPECT_TRUE(outcome_.close);
  EXPECT_TRUE(Run(std::string(24, 'x')).empty());
  EXPECT_TRUE(outcome_.close);
  EXPECT_EQ(One(Packet(kSaslListMechs)).status, kUnknownCommand);
}

TEST_F(BinaryExecutorTest, TooLargeSetRemovesTheOldValue) {
  One(Set(kSet, "k", "old"));
  const std::string big(store_->MaxValueLength(1) + 1, 'x');
  const Response r = One(Set(kSet, "k", big));
  EXPECT_EQ(r.status, kTooLarge);
  EXPECT_EQ(r.value, "Too large.");
  EXPECT_EQ(outcome_.swallow, big.size());
  EXPECT_EQ(One(Packet(kGet, "k")).status, kKeyNotFound);
}

TEST_F(BinaryExecutorTest, CasDisabledShowsZero) {
  server_.settings.cas_enabled = false;
  EXPECT_EQ(One(Set(kSet, "k", "1")).cas, 0u);
  EXPECT_EQ(One(Packet(kGet, "k")).cas, 0u);
  EXPECT_EQ(One(Set(kSet, "k", "2", 0, 0, 777)).status, kSuccess);   // no CAS to compare
}

TEST_F(BinaryExecutorTest, RequestsPerEventYield) {
  std::string three = Packet(kNoop) + Packet(kNoop) + Packet(kNoop);
  outcome_ = binary_->Process(three, &out_, SIZE_MAX, 2);
  EXPECT_EQ(outcome_.consumed, 2 * kHeaderSize);
  EXPECT_EQ(stats_.conn_yields.Get(), 1u);
  Drain(&out_);
}

// --- classic stampede modes apply to binary gets ----------------------------

TEST_F(BinaryExecutorTest, StaleModeGivesOneReaderTheMissAndOthersTheStaleValue) {
  config_.stale_grace_s = 30;
  Reset();
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  One(Set(kSet, "k", "old", 0, 10));
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(One(Packet(kGet, "k")).status, kKeyNotFound);   // the recompute hint
  EXPECT_TRUE(Run(Packet(kGetQ, "k")).size() == 1);          // others: the stale value
  EXPECT_EQ(One(Packet(kGetK, "k")).value, "old");
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  // GAT is a lease read like Get, and touches only a fresh value it returns;
  // Touch returns no value and stays memcached's (an expired item is not found).
  EXPECT_EQ(One(Packet(kGat, "k", Be(100, 4))).value, "old");
  EXPECT_EQ(One(Packet(kGatK, "k", Be(100, 4))).value, "old");
  EXPECT_EQ(One(Packet(kTouch, "k", Be(100, 4))).status, kKeyNotFound);
  EXPECT_EQ(store_->Stats().lease_grants, 1u);
  One(Set(kSet, "k", "new", 0, 10));
  EXPECT_EQ(One(Packet(kGat, "k", Be(100, 4))).value, "new");
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(One(Packet(kGet, "k")).value, "new");   // the GAT gave it 100 s
}

TEST_F(BinaryExecutorTest, StaleModeGatWinnerGetsTheMissAndTouchesNothing) {
  config_.stale_grace_s = 30;
  Reset();
  server_.settings.classic_stampede = ClassicStampedeMode::kStale;
  One(Set(kSet, "k", "old", 0, 10));
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(One(Packet(kGatK, "k", Be(100, 4))).status, kKeyNotFound);   // the recompute hint
  EXPECT_TRUE(Run(Packet(kGatQ, "k", Be(100, 4))).size() == 1);          // stale value
  EXPECT_EQ(Run(Packet(kGatKQ, "k", Be(100, 4))).size(), 1u);
  clock_.AdvanceSeconds(30);   // the stale grace ends: nobody touched the value
  EXPECT_EQ(Run(Packet(kGetQ, "k")).size(), 0u);
}

TEST_F(BinaryExecutorTest, WaitModeParksABinaryGetUntilTheSet) {
  server_.settings.classic_stampede = ClassicStampedeMode::kWait;
  EXPECT_EQ(One(Packet(kGet, "k")).status, kKeyNotFound);   // the lease winner
  const WaitTicket t{0, 7, 1};
  const std::string pipeline = Packet(kNoop) + Packet(kGetK, "k") + Packet(kNoop);
  std::vector<Response> before = Run(pipeline, &t);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_TRUE(outcome_.parked);
  EXPECT_EQ(outcome_.consumed, kHeaderSize);
  One(Set(kSet, "k", "new"));
  EXPECT_EQ(sink_.wakes, 1);
  std::vector<Response> after = Run(pipeline.substr(kHeaderSize), &t);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].value, "new");
  EXPECT_EQ(after[1].opcode, kNoop);
}

// -S: SASL PLAIN against the password database, memcached's answers; nothing
// but the SASL opcodes and Version before authentication.
class BinarySaslTest : public BinaryExecutorTest {
 protected:
  BinarySaslTest() {
    std::string error;
    EXPECT_TRUE(pwdb_.Parse("alice:s3cret:extra fields\nbob:hunter2\n", &error,
                            AuthFile::Format::kSaslPwdb)) << error;
    sasl_ = std::make_unique<BinaryExecutor>(store_.get(), &server_, &stats_, &pwdb_);
  }

  std::vector<Response> Sasl(const std::string& in) {
    outcome_ = sasl_->Process(in, &out_, SIZE_MAX, 0, nullptr, &session_);
    return Decode(Drain(&out_));
  }

  static std::string Plain(std::string user, std::string password, std::string authzid = "") {
    return authzid + std::string(1, '\0') + user + std::string(1, '\0') + password;
  }

  AuthFile pwdb_;
  std::unique_ptr<BinaryExecutor> sasl_;
  BinarySession session_;
};

TEST_F(BinarySaslTest, EverythingButSaslAndVersionIsRefusedBeforeAuthentication) {
  One(Set(kSet, "k", "v"));   // through the executor without -S
  const uint8_t refused[] = {kGet, kGetQ, kSet, kDelete, kIncrement, kFlush, kStat, kNoop, kQuit,
                             kTouch, kAppend, 0x1b};
  for (uint8_t op : refused) {
    std::vector<Response> r = Sasl(Packet(op, "k", "", "", 0, 0x01020304) + Packet(kNoop));
    ASSERT_EQ(r.size(), 1u) << int(op);
    EXPECT_EQ(r[0].opcode, op);
    EXPECT_EQ(r[0].status, kAuthError);
    EXPECT_EQ(r[0].value, "Auth failure.");
    EXPECT_EQ(r[0].opaque, 0x01020304u);
    EXPECT_TRUE(outcome_.close) << int(op);
  }
  EXPECT_EQ(One(Packet(kGet, "k")).value, "v");   // nothing changed
  std::vector<Response> r = Sasl(Packet(kVersion) + Packet(kSaslListMechs));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].value, kServerVersion);
  EXPECT_EQ(r[1].status, kSuccess);
  EXPECT_EQ(r[1].value, "PLAIN");
  EXPECT_FALSE(outcome_.close);
  EXPECT_EQ(stats_.auth_cmds.Get(), 0u);
}

TEST_F(BinarySaslTest, PlainAuthentication) {
  const struct {
    std::string mech, data;
    uint16_t status;
  } failures[] = {
      {"PLAIN", Plain("alice", "wrong"), kAuthError},
      {"PLAIN", Plain("alice", "s3cret:extra fields"), kAuthError},   // the password ends at ':'
      {"PLAIN", Plain("mallory", "s3cret"), kAuthError},
      {"PLAIN", Plain("alice", "s3cret", "bob"), kAuthError},         // acting for someone else
      {"PLAIN", "alice s3cret", kAuthError},
      {"CRAM-MD5", Plain("alice", "s3cret"), kAuthError},
      {std::string(33, 'M'), "x", kInvalidArguments},
  };
  uint64_t errors = 0;
  for (const auto& f : failures) {
    std::vector<Response> r = Sasl(Packet(kSaslAuth, f.mech, "", f.data));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, f.status) << f.mech << " " << f.data;
    EXPECT_FALSE(session_.authenticated);
    if (f.status == kAuthError) ++errors;
  }
  EXPECT_EQ(stats_.auth_errors.Get(), errors);
  EXPECT_EQ(Sasl(Packet(kSaslStep, "PLAIN", "", Plain("alice", "s3cret")))[0].status, kAuthError)
      << "a Step with no Auth before it";
  std::vector<Response> r = Sasl(Packet(kSaslAuth, "PLAIN", "", Plain("alice", "s3cret", "alice")) +
                                 Packet(kGet, "k"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, kSuccess);
  EXPECT_EQ(r[0].value, "Authenticated");
  EXPECT_EQ(r[1].status, kKeyNotFound);   // commands run once authenticated
  EXPECT_TRUE(session_.authenticated);
  EXPECT_EQ(stats_.auth_cmds.Get(), errors + 2);
  // As memcached: List Mechanisms drops the authentication, and its SASL
  // context never succeeds twice, so the connection is refused from then on.
  EXPECT_EQ(Sasl(Packet(kSaslListMechs))[0].value, "PLAIN");
  EXPECT_FALSE(session_.authenticated);
  EXPECT_EQ(Sasl(Packet(kSaslAuth, "PLAIN", "", Plain("alice", "s3cret")))[0].status, kAuthError);
  EXPECT_FALSE(session_.authenticated);
  EXPECT_EQ(Sasl(Packet(kGet, "k"))[0].status, kAuthError);
  EXPECT_TRUE(outcome_.close);
}

TEST_F(BinarySaslTest, PlainInTwoSteps) {
  std::vector<Response> r = Sasl(Packet(kSaslAuth, "PLAIN"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, kAuthContinue);
  EXPECT_TRUE(r[0].value.empty());
  r = Sasl(Packet(kSaslStep, "PLAIN", "", Plain("bob", "hunter2")));
  EXPECT_EQ(r[0].status, kSuccess);
  EXPECT_TRUE(session_.authenticated);
}

TEST_F(BinarySaslTest, LongSaslBodiesAreRefusedFromTheHeader) {
  // The header alone decides: the 100 KB body is never waited for.
  std::string packet = Packet(kSaslAuth, "PLAIN", "", std::string(100000, 'x'));
  std::vector<Response> r = Sasl(packet.substr(0, 100));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, kAuthError);
  EXPECT_TRUE(outcome_.close);
}

}  // namespace
}  // namespace herdless
