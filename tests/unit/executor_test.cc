#include "protocol/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/watch.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest()
      : random_(7), store_(DrivenStoreConfig(&clock_, &random_)), server_(&stats_),
        executor_(&store_, &server_, &stats_) {}

  // Processes all of `input` in one call and returns every reply byte.
  std::string Run(std::string_view input) {
    outcome_ = executor_.Process(input, &out_, SIZE_MAX, 0);
    return Drain(&out_);
  }

  // The value of "STAT <name> " in a stats reply, or "<absent>".
  static std::string StatValue(const std::string& reply, const std::string& name) {
    const std::string needle = "STAT " + name + " ";
    size_t at = reply.find(needle);
    if (at == std::string::npos) return "<absent>";
    at += needle.size();
    return reply.substr(at, reply.find("\r\n", at) - at);
  }

  // The names of a stats reply, in order.
  static std::vector<std::string> StatNames(const std::string& reply) {
    std::vector<std::string> names;
    size_t at = 0;
    while ((at = reply.find("STAT ", at)) != std::string::npos) {
      at += 5;
      names.push_back(reply.substr(at, reply.find(' ', at) - at));
    }
    return names;
  }

  ManualClock clock_;
  DefaultRandom random_;
  ItemStore store_;
  ThreadStats stats_;
  FakeServer server_;
  Executor executor_;
  ReplyBuffer out_;
  ProcessOutcome outcome_;
};

// --- retrieval -------------------------------------------------------------

TEST_F(ExecutorTest, GetMissAnswersEnd) {
  EXPECT_EQ(Run("get nothing\r\n"), "END\r\n");
  EXPECT_EQ(stats_.cmd_get.Get(), 1u);
  EXPECT_EQ(stats_.get_misses.Get(), 1u);
}

TEST_F(ExecutorTest, SetThenGetReturnsValueWithFlags) {
  EXPECT_EQ(Run("set k 5 0 3\r\nabc\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 5 3\r\nabc\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_set.Get(), 1u);
  EXPECT_EQ(stats_.get_hits.Get(), 1u);
}

TEST_F(ExecutorTest, EmptyValueIsReturned) {
  EXPECT_EQ(Run("set e 0 0 0\r\n\r\nget e\r\n"), "STORED\r\nVALUE e 0 0\r\n\r\nEND\r\n");
}

TEST_F(ExecutorTest, LargestFlagsAreReturnedUnchanged) {
  EXPECT_EQ(Run("set k 4294967295 0 1\r\nx\r\nget k\r\n"),
            "STORED\r\nVALUE k 4294967295 1\r\nx\r\nEND\r\n");
}

TEST_F(ExecutorTest, MultiGetAnswersHitsInOrderAndCountsEveryKey) {
  Run("set a 0 0 1\r\n1\r\nset c 0 0 1\r\n3\r\n");
  EXPECT_EQ(Run("get a b c a\r\n"),
            "VALUE a 0 1\r\n1\r\nVALUE c 0 1\r\n3\r\nVALUE a 0 1\r\n1\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_get.Get(), 4u);
  EXPECT_EQ(stats_.get_hits.Get(), 3u);
  EXPECT_EQ(stats_.get_misses.Get(), 1u);
}

TEST_F(ExecutorTest, GetsShowsTheCasThatCasAccepts) {
  Run("set k 0 0 1\r\nx\r\n");
  const std::string reply = Run("gets k\r\n");
  ASSERT_EQ(reply.rfind("VALUE k 0 1 ", 0), 0u) << reply;
  const std::string cas = reply.substr(12, reply.find("\r\n") - 12);
  EXPECT_EQ(Run("cas k 0 0 1 " + cas + "\r\ny\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("cas k 0 0 1 " + cas + "\r\nz\r\n"), "EXISTS\r\n");
  EXPECT_EQ(Run("cas missing 0 0 1 " + cas + "\r\nz\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\ny\r\nEND\r\n");
  EXPECT_EQ(stats_.cas_hits.Get(), 1u);
  EXPECT_EQ(stats_.cas_badval.Get(), 1u);
  EXPECT_EQ(stats_.cas_misses.Get(), 1u);
  EXPECT_EQ(stats_.cmd_set.Get(), 4u);
}

TEST_F(ExecutorTest, GetsShowsZeroCasWhenCasIsDisabled) {
  server_.settings.cas_enabled = false;
  Run("set k 0 0 1\r\nx\r\n");
  EXPECT_EQ(Run("gets k\r\n"), "VALUE k 0 1 0\r\nx\r\nEND\r\n");
}

TEST_F(ExecutorTest, GatUpdatesTheTtlAndCountsAsTouch) {
  Run("set k 3 10 2\r\nhi\r\n");
  EXPECT_EQ(Run("gat 100 k nope\r\n"), "VALUE k 3 2\r\nhi\r\nEND\r\n");
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 3 2\r\nhi\r\nEND\r\n");
  // As memcached: gat keys are touches, not gets.
  EXPECT_EQ(stats_.cmd_touch.Get(), 2u);
  EXPECT_EQ(stats_.touch_hits.Get(), 1u);
  EXPECT_EQ(stats_.touch_misses.Get(), 1u);
  EXPECT_EQ(stats_.cmd_get.Get(), 1u);
  EXPECT_EQ(stats_.get_hits.Get(), 1u);
}

TEST_F(ExecutorTest, GatsShowsCas) {
  Run("set k 0 0 1\r\nx\r\n");
  const std::string reply = Run("gats 0 k\r\n");
  EXPECT_EQ(reply.rfind("VALUE k 0 1 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("\r\nx\r\nEND\r\n"), std::string::npos);
}

TEST_F(ExecutorTest, ExpiredItemIsAMiss) {
  Run("set k 0 5 1\r\nx\r\n");
  clock_.AdvanceSeconds(6);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
}

// --- storage ---------------------------------------------------------------

TEST_F(ExecutorTest, AddReplaceAppendPrependAnswerAsMemcached) {
  EXPECT_EQ(Run("add k 0 0 1\r\nb\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("add k 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("replace none 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("append none 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("prepend none 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(Run("append k 0 0 1\r\nc\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("prepend k 0 0 1\r\na\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 3\r\nabc\r\nEND\r\n");
  EXPECT_EQ(Run("replace k 7 0 1\r\nr\r\n"), "STORED\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 7 1\r\nr\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_set.Get(), 8u);
}

TEST_F(ExecutorTest, NoreplySuppressesEveryReply) {
  Run("set n 0 0 1\r\n5\r\n");
  const std::string input =
      "set k 0 0 1 noreply\r\nx\r\n"
      "add k 0 0 1 noreply\r\ny\r\n"
      "replace zz 0 0 1 noreply\r\ny\r\n"
      "cas k 0 0 1 1 noreply\r\ny\r\n"
      "append k 0 0 1 noreply\r\ny\r\n"
      "incr n 1 noreply\r\n"
      "decr n 1 noreply\r\n"
      "incr k 1 noreply\r\n"
      "incr zz 1 noreply\r\n"
      "touch zz 1 noreply\r\n"
      "touch k 100 noreply\r\n"
      "delete zz noreply\r\n"
      "delete n noreply\r\n"
      "verbosity 1 noreply\r\n"
      "cache_memlimit 4 noreply\r\n"
      "flush_all noreply\r\n";
  EXPECT_EQ(Run(input), "");
  EXPECT_EQ(outcome_.consumed, input.size());
  EXPECT_EQ(server_.verbosity, 1);
  EXPECT_EQ(Run("get k n\r\n"), "END\r\n");   // flushed
}

TEST_F(ExecutorTest, NoreplySuppressesErrorsToo) {
  // memcached reads 1+2 bytes, refuses them silently, then answers the
  // leftover "\r\n" as an empty command line.
  EXPECT_EQ(Run("set k 0 0 1 noreply\r\nxyz\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("incr k abc noreply\r\n"), "");
  EXPECT_EQ(Run("version\r\n"), "VERSION 1.6.18-herdless\r\n");
}

TEST_F(ExecutorTest, TooLargeSetAnswersServerErrorSwallowsAndDropsOldValue) {
  Run("set k 0 0 3\r\nold\r\n");
  const size_t big = 2 * 1024 * 1024;
  const std::string line = "set k 0 0 " + std::to_string(big) + "\r\n";
  EXPECT_EQ(Run(line), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(outcome_.consumed, line.size());
  EXPECT_EQ(outcome_.swallow, big + 2);
  EXPECT_EQ(Run("get k\r\n"), "END\r\n");
  EXPECT_EQ(stats_.store_too_large.Get(), 1u);
  EXPECT_EQ(stats_.cmd_set.Get(), 1u);   // the refused set is not a cmd_set
}

TEST_F(ExecutorTest, TooLargeAddKeepsOldValue) {
  Run("set k 0 0 3\r\nold\r\n");
  EXPECT_EQ(Run("add k 0 0 2000000\r\n"), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 3\r\nold\r\nEND\r\n");
}

TEST_F(ExecutorTest, TooLargeNoreplySetIsSilent) {
  EXPECT_EQ(Run("set k 0 0 2000000 noreply\r\n"), "");
  EXPECT_EQ(outcome_.swallow, 2000002u);
  EXPECT_EQ(stats_.store_too_large.Get(), 1u);
}

TEST_F(ExecutorTest, ValueJustUnderTheItemLimitIsStored) {
  const size_t n = store_.MaxValueLength(1);
  std::string input = "set k 0 0 " + std::to_string(n) + "\r\n" + std::string(n, 'v') + "\r\n";
  EXPECT_EQ(Run(input), "STORED\r\n");
  EXPECT_EQ(Run("set k 0 0 " + std::to_string(n + 1) + "\r\n"),
            "SERVER_ERROR object too large for cache\r\n");
}

TEST_F(ExecutorTest, BadDataChunkIsAClientError) {
  // As memcached: <bytes>+2 bytes are read and refused, the rest ("\r\n")
  // is an empty command line.
  EXPECT_EQ(Run("set k 0 0 1\r\nxyz\r\nget k\r\n"),
            "CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_set.Get(), 1u);   // memcached counts it once the block is read
}

// --- delete, incr/decr, touch ---------------------------------------------

TEST_F(ExecutorTest, DeleteAnswersDeletedThenNotFound) {
  Run("set k 0 0 1\r\nx\r\n");
  EXPECT_EQ(Run("delete k\r\n"), "DELETED\r\n");
  EXPECT_EQ(Run("delete k\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(Run("delete k 0\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(Run("delete k 5\r\n"),
            "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
  EXPECT_EQ(stats_.delete_hits.Get(), 1u);
  EXPECT_EQ(stats_.delete_misses.Get(), 2u);
}

TEST_F(ExecutorTest, IncrDecrAnswerTheNewValue) {
  Run("set n 5 0 2\r\n10\r\nset s 0 0 1\r\nx\r\n");
  EXPECT_EQ(Run("incr n 5\r\n"), "15\r\n");
  EXPECT_EQ(Run("decr n 100\r\n"), "0\r\n");
  EXPECT_EQ(Run("incr n 18446744073709551615\r\n"), "18446744073709551615\r\n");
  EXPECT_EQ(Run("incr n 1\r\n"), "0\r\n");   // wraps, as memcached
  EXPECT_EQ(Run("incr none 1\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(Run("decr none 1\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(Run("incr s 1\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(Run("incr n abc\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  // A shorter result is space-padded in place, as memcached does.
  EXPECT_EQ(Run("get n\r\n"), "VALUE n 5 20\r\n0                   \r\nEND\r\n");
  EXPECT_EQ(stats_.incr_hits.Get(), 3u);
  EXPECT_EQ(stats_.decr_hits.Get(), 1u);
  EXPECT_EQ(stats_.incr_misses.Get(), 1u);
  EXPECT_EQ(stats_.decr_misses.Get(), 1u);
}

// memcached's replies reference the items they show until they are written:
// an mg's (and, in 1.6.45, a get's) until the batch is flushed (at its end,
// or at an mn; 1.6.18 flushes after each get), and an incr or decr of a
// referenced item writes a new item of the number's length, not padded.
TEST_F(ExecutorTest, ADecrOfAnItemShownEarlierInTheBatchIsNotPadded) {
  struct Case {
    std::string_view batch;
    std::string_view value;
  } cases[] = {
      {"decr n 1\r\n", "99 "},
      {"mg n v\r\ndecr n 1\r\n", "99"},
      {"mg n\r\nma n MD\r\n", "99"},
      {"mg n v\r\nmn\r\ndecr n 1\r\n", "99 "},
      {"mg n v\r\nset n 0 0 3\r\n100\r\ndecr n 1\r\n", "99 "},
      {"mg n v\r\ndecr n 1\r\ndecr n 1\r\n", "98"},
      {"mg o v\r\ndecr n 1\r\n", "99 "},
      {"get n\r\ndecr n 1\r\n", "99 "},   // 1.6.18 has written the get's reply
  };
  for (const Case& c : cases) {
    Run("set n 0 0 3\r\n100\r\nset o 0 0 1\r\n1\r\n");
    Run(c.batch);
    const std::string got = Run("mg n v\r\n");
    EXPECT_EQ(got.substr(got.find('\n') + 1), std::string(c.value) + "\r\n") << c.batch;
  }
  // The next pass comes after the write: nothing is referenced any more.
  Run("set n 0 0 3\r\n100\r\n");
  Run("mg n v\r\n");
  Run("decr n 1\r\n");
  EXPECT_EQ(Run("mg n v\r\n"), "VA 3\r\n99 \r\n");

  // 1.6.45 holds a get's items with the batch's other replies.
  server_.settings.compat = Compat::k1645;
  Executor latest(&store_, &server_, &stats_);
  for (std::string_view read : {"get n\r\n", "gets n\r\n", "gat 0 n\r\n", "gats 0 o n\r\n"}) {
    Run("set n 0 0 3\r\n100\r\n");
    latest.Process(std::string(read) + "decr n 1\r\n", &out_, SIZE_MAX, 0);
    Drain(&out_);
    EXPECT_EQ(Run("mg n v\r\n"), "VA 2\r\n99\r\n") << read;
  }
}

TEST_F(ExecutorTest, TouchAnswersTouchedOrNotFound) {
  Run("set k 0 10 1\r\nx\r\n");
  EXPECT_EQ(Run("touch k 100\r\n"), "TOUCHED\r\n");
  EXPECT_EQ(Run("touch none 100\r\n"), "NOT_FOUND\r\n");
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(Run("get k\r\n"), "VALUE k 0 1\r\nx\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_touch.Get(), 2u);
  EXPECT_EQ(stats_.touch_hits.Get(), 1u);
  EXPECT_EQ(stats_.touch_misses.Get(), 1u);
}

// --- control commands ------------------------------------------------------

TEST_F(ExecutorTest, FlushAllDropsEveryItem) {
  Run("set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n");
  EXPECT_EQ(Run("flush_all\r\n"), "OK\r\n");
  EXPECT_EQ(Run("get a b\r\n"), "END\r\n");
  EXPECT_EQ(stats_.cmd_flush.Get(), 1u);
}

TEST_F(ExecutorTest, FlushAllWithDelayDropsItemsLater) {
  Run("set a 0 0 1\r\n1\r\n");
  EXPECT_EQ(Run("flush_all 10\r\n"), "OK\r\n");
  EXPECT_EQ(Run("get a\r\n"), "VALUE a 0 1\r\n1\r\nEND\r\n");
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(Run("get a\r\n"), "END\r\n");
}

TEST_F(ExecutorTest, FlushAllRefusedWhenDisabledButCounted) {
  server_.settings.flush_enabled = false;
  Run("set a 0 0 1\r\n1\r\n");
  EXPECT_EQ(Run("flush_all\r\n"), "CLIENT_ERROR flush_all not allowed\r\n");
  EXPECT_EQ(Run("get a\r\n"), "VALUE a 0 1\r\n1\r\nEND\r\n");
  EXPECT_EQ(stats_.cmd_flush.Get(), 1u);
}

TEST_F(ExecutorTest, VersionAnswersHerdlessVersion) {
  EXPECT_EQ(Run("version\r\n"), "VERSION 1.6.18-herdless\r\n");
}

TEST_F(ExecutorTest, VerbositySetsLevelCappedAtTwo) {
  EXPECT_EQ(Run("verbosity 1\r\n"), "OK\r\n");
  EXPECT_EQ(server_.verbosity, 1);
  EXPECT_EQ(Run("verbosity 9\r\n"), "OK\r\n");
  EXPECT_EQ(server_.verbosity, 2);
}

TEST_F(ExecutorTest, QuitClosesWithoutReplyAndStopsTheBatch) {
  const std::string first = "get a\r\nquit\r\n";
  EXPECT_EQ(Run(first + "get b\r\n"), "END\r\n");
  EXPECT_TRUE(outcome_.close);
  EXPECT_EQ(outcome_.consumed, first.size());
}

TEST_F(ExecutorTest, ShutdownIsRefusedWithoutDashA) {
  EXPECT_EQ(Run("shutdown\r\n"), "ERROR: shutdown not enabled\r\n");
  EXPECT_EQ(Run("shutdown noreply\r\n"), "ERROR: shutdown not enabled\r\n");
  EXPECT_FALSE(outcome_.close);
  EXPECT_EQ(server_.shutdowns, 0);
}

TEST_F(ExecutorTest, ShutdownWhenEnabledStopsTheServerAndCloses) {
  server_.settings.shutdown_enabled = true;
  EXPECT_EQ(Run("shutdown graceful\r\n"), "");
  EXPECT_TRUE(outcome_.close);
  EXPECT_EQ(server_.shutdowns, 1);
  EXPECT_TRUE(server_.last_shutdown_graceful);
  EXPECT_EQ(Run("shutdown\r\n"), "");
  EXPECT_EQ(server_.shutdowns, 2);
  EXPECT_FALSE(server_.last_shutdown_graceful);
  EXPECT_EQ(Run("shutdown now\r\n"), "CLIENT_ERROR invalid shutdown mode\r\n");
  EXPECT_EQ(server_.shutdowns, 2);
}

TEST_F(ExecutorTest, CacheMemlimitChangesTheLimit) {
  EXPECT_EQ(Run("cache_memlimit 4\r\n"), "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
  EXPECT_EQ(Run("cache_memlimit 2000000000\r\n"),
            "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n");
  EXPECT_EQ(Run("cache_memlimit abc\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("cache_memlimit 100\r\n"), "OK\r\n");
  EXPECT_EQ(store_.memory_limit(), size_t{100} << 20);
  EXPECT_EQ(StatValue(Run("stats\r\n"), "limit_maxbytes"), std::to_string(100u << 20));
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "maxbytes"), std::to_string(100u << 20));
}

// As memcached 1.6.18 and 1.6.45 with -e: refused, after the same bounds checks, noreply honoured.
TEST_F(ExecutorTest, CacheMemlimitIsRefusedWithAMemoryFile) {
  server_.settings.memory_file = "/tmp/snapshot";
  const size_t before = store_.memory_limit();
  EXPECT_EQ(Run("cache_memlimit 4\r\n"), "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
  EXPECT_EQ(Run("cache_memlimit 2000000000\r\n"),
            "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n");
  EXPECT_EQ(Run("cache_memlimit 100\r\n"), "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n");
  EXPECT_EQ(Run("cache_memlimit 100 noreply\r\n"), "");
  EXPECT_EQ(store_.memory_limit(), before);
}

TEST_F(ExecutorTest, UnknownCommandAnswersError) {
  EXPECT_EQ(Run("bogus\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("set k\r\n"), "ERROR\r\n");
}

TEST_F(ExecutorTest, MetaCommandsAreDispatched) {
  EXPECT_EQ(Run("mn\r\n"), "MN\r\n");
  EXPECT_EQ(Run("ms k 1\r\nx\r\nmg k v\r\n"), "HD\r\nVA 1\r\nx\r\n");
}

// --- Process: pipelines, partial input, limits ----------------------------

TEST_F(ExecutorTest, PipelinedRequestsAnswerInOrder) {
  const std::string input =
      "set a 0 0 1\r\n1\r\nget a\r\ndelete a\r\nget a\r\nincr a 1\r\nversion\r\n";
  EXPECT_EQ(Run(input),
            "STORED\r\nVALUE a 0 1\r\n1\r\nEND\r\nDELETED\r\nEND\r\nNOT_FOUND\r\n"
            "VERSION 1.6.18-herdless\r\n");
  EXPECT_EQ(outcome_.consumed, input.size());
  EXPECT_FALSE(outcome_.close);
  EXPECT_EQ(outcome_.swallow, 0u);
}

// The executor parses each pipelined request while the one before it runs,
// into a second Request, and hashes its key once for the prefetch and the
// read: a pipeline is answered as its requests sent one at a time are
// (base64 keys live in the Request that decoded them; a swallowed block is
// not read as requests).
TEST(ExecutorParseAheadTest, APipelineAnswersAsItsRequestsSentOneByOne) {
  const std::vector<std::string> requests = {
      "set a 1 0 1\r\nx\r\n", "get a\r\n", "gets a\r\n", "mg YQ== b v k\r\n", "mg Yg== b v k c\r\n",
      "ms Yg== 2 b T0\r\nhi\r\n", "mg Yg== b v\r\n", "get b\r\n", "get a b\r\n", "get b\r\n",
      "delete a\r\n", "get a\r\n", "bogus a\r\n", "incr n 1\r\n", "set n 0 0 1\r\n5\r\n",
      "incr n 1\r\n", "get n\r\n", "mn\r\n", "gat 10 n\r\n", "get  n\r\n", "touch n 0\r\n",
      "set big 0 0 2000000\r\n", "get n\r\n", "get n\r\n", "get n\r\n"};
  auto run = [&](bool pipelined) {
    ManualClock clock;
    DefaultRandom random(7);
    ItemStore store(DrivenStoreConfig(&clock, &random));
    ThreadStats stats;
    FakeServer server(&stats);
    Executor executor(&store, &server, &stats);
    ReplyBuffer out;
    std::string replies;
    std::string input;
    for (const std::string& request : requests) {
      input += request;
      if (pipelined && &request != &requests.back()) continue;
      const ProcessOutcome outcome = executor.Process(input, &out, SIZE_MAX, 0);
      replies += Drain(&out) + "|";
      input.erase(0, outcome.consumed);
      if (outcome.swallow > 0) input.clear();   // the too-large block and what followed it
    }
    return replies;
  };
  const std::string one_by_one = run(false);
  EXPECT_NE(one_by_one.find("VALUE b 0 2\r\nhi\r\n"), std::string::npos) << one_by_one;
  std::string joined = one_by_one;
  joined.erase(std::remove(joined.begin(), joined.end(), '|'), joined.end());
  // The pipeline stops at the refused block; the requests after it were
  // swallowed with it.
  const std::string pipelined = run(true);
  const std::string before_big = joined.substr(0, joined.find("SERVER_ERROR object too large"));
  EXPECT_EQ(pipelined, before_big + "SERVER_ERROR object too large for cache\r\n|");
}

TEST_F(ExecutorTest, BareNewlineTerminatesALine) {
  EXPECT_EQ(Run("set a 0 0 1\nx\r\nget a\n"), "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
}

TEST_F(ExecutorTest, PartialRequestIsLeftForTheNextCall) {
  const std::string input = "get a\r\nset k 0 0 5\r\nab";
  EXPECT_EQ(Run(input), "END\r\n");
  EXPECT_EQ(outcome_.consumed, 7u);
  // The connection keeps the unconsumed bytes and appends what arrives.
  const std::string rest = input.substr(outcome_.consumed) + "cde\r\nget k\r\nge";
  EXPECT_EQ(Run(rest), "STORED\r\nVALUE k 0 5\r\nabcde\r\nEND\r\n");
  EXPECT_EQ(rest.substr(outcome_.consumed), "ge");
}

TEST_F(ExecutorTest, IncompleteLineConsumesNothing) {
  EXPECT_EQ(Run("get abc"), "");
  EXPECT_EQ(outcome_.consumed, 0u);
}

TEST_F(ExecutorTest, SwallowStopsTheBatch) {
  const std::string line = "set k 0 0 2000000\r\n";
  EXPECT_EQ(Run(line + "xxxxget a\r\n"), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(outcome_.consumed, line.size());
  EXPECT_EQ(outcome_.swallow, 2000002u);
}

TEST_F(ExecutorTest, StopsWhenOutputPassesMaxOutput) {
  Run("set k 0 0 1000\r\n" + std::string(1000, 'v') + "\r\n");
  std::string input;
  for (int i = 0; i < 5; ++i) input += "get k\r\n";
  outcome_ = executor_.Process(input, &out_, 1500, 0);
  // The first reply (~1020 bytes) stays under 1500, the second passes it.
  EXPECT_EQ(outcome_.consumed, 14u);
  const std::string reply = Drain(&out_);
  EXPECT_EQ(reply.size(), 2 * (std::string("VALUE k 0 1000\r\n").size() + 1002 + 5));
  outcome_ = executor_.Process(std::string_view(input).substr(14), &out_, 1500, 0);
  EXPECT_EQ(outcome_.consumed, 14u);
}

TEST_F(ExecutorTest, StopsAfterMaxRequests) {
  const std::string input = "get a\r\nget b\r\nget c\r\n";
  outcome_ = executor_.Process(input, &out_, SIZE_MAX, 2);
  EXPECT_EQ(outcome_.consumed, 14u);
  EXPECT_EQ(Drain(&out_), "END\r\nEND\r\n");
  EXPECT_EQ(stats_.conn_yields.Get(), 1u);   // memcached's name for "stopped at -R"
}

TEST_F(ExecutorTest, ErrorsCountAsRequestsAndKeepTheBatchGoing) {
  EXPECT_EQ(Run("bogus\r\nget a\r\n"), "ERROR\r\nEND\r\n");
}

TEST_F(ExecutorTest, OverlongLineCloses) {
  outcome_ = executor_.Process(std::string(3000, 'x'), &out_, SIZE_MAX, 0);
  EXPECT_TRUE(outcome_.close);
  EXPECT_EQ(Drain(&out_), "");
}

TEST_F(ExecutorTest, ValueReplyHoldsTheItemUntilWritten) {
  Run("set k 0 0 3\r\nabc\r\n");
  ReplyBuffer pending;
  executor_.Process("get k\r\n", &pending, SIZE_MAX, 0);
  // Overwrite and delete before the reply is written: its bytes stay intact.
  EXPECT_EQ(Run("set k 0 0 3\r\nxyz\r\ndelete k\r\n"), "STORED\r\nDELETED\r\n");
  EXPECT_EQ(Drain(&pending), "VALUE k 0 3\r\nabc\r\nEND\r\n");
}

// --- stats -----------------------------------------------------------------

// memcached counts a get that finds its item expired, or flushed by a
// delayed flush_all, as get_expired / get_flushed (and a miss).
TEST_F(ExecutorTest, StatsCountExpiredAndFlushedMisses) {
  Run("set e 0 1 1\r\n1\r\nset f 0 0 1\r\n2\r\n");
  clock_.AdvanceSeconds(2);
  EXPECT_EQ(Run("get e\r\nflush_all 2\r\n"), "END\r\nOK\r\n");
  clock_.AdvanceSeconds(3);
  EXPECT_EQ(Run("mg f v\r\nget e\r\n"), "EN\r\nEND\r\n");   // gone: plain misses now
  const std::string reply = Run("stats\r\n");
  EXPECT_EQ(StatValue(reply, "get_expired"), "1");
  EXPECT_EQ(StatValue(reply, "get_flushed"), "1");
  EXPECT_EQ(StatValue(reply, "get_misses"), "3");
}

TEST_F(ExecutorTest, StatsListsMemcachedNamesInOrderThenLeaseCounters) {
  server_.snapshot.pid = 42;
  server_.snapshot.threads = 4;
  Run("set a 0 0 1\r\n1\r\nget a b\r\n");
  const std::string reply = Run("stats\r\n");
  ASSERT_GE(reply.size(), 5u);
  EXPECT_EQ(reply.substr(reply.size() - 5), "END\r\n");
  // memcached 1.6.18's `stats` names in its order (as Debian's memcached
  // prints them), then herdless's lease counters.
  const std::vector<std::string> expected = {
      "pid", "uptime", "time", "version", "libevent", "pointer_size", "rusage_user",
      "rusage_system", "max_connections", "curr_connections", "total_connections",
      "rejected_connections", "connection_structures", "response_obj_oom", "response_obj_count",
      "response_obj_bytes", "read_buf_count", "read_buf_bytes", "read_buf_bytes_free",
      "read_buf_oom", "reserved_fds", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch",
      "cmd_meta", "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses",
      "delete_hits", "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses",
      "cas_hits", "cas_badval", "touch_hits", "touch_misses", "store_too_large",
      "store_no_memory", "auth_cmds", "auth_errors", "bytes_read", "bytes_written",
      "limit_maxbytes", "accepting_conns", "listen_disabled_num", "time_in_listen_disabled_us",
      "threads", "conn_yields", "hash_power_level", "hash_bytes", "hash_is_expanding",
      "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_evictions_nomem",
      "slab_reassign_inline_reclaim", "slab_reassign_busy_items", "slab_reassign_busy_deletes",
      "slab_reassign_running", "slabs_moved", "lru_crawler_running", "lru_crawler_starts",
      "lru_maintainer_juggles", "malloc_fails", "log_worker_dropped", "log_worker_written",
      "log_watcher_skipped", "log_watcher_sent", "log_watchers", "unexpected_napi_ids",
      "round_robin_fallback", "bytes", "curr_items", "total_items", "slab_global_page_pool",
      "expired_unfetched", "evicted_unfetched", "evicted_active", "evictions", "reclaimed",
      "crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked", "moves_to_cold",
      "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped",
      "curr_leases", "lease_grants", "lease_fulfilled", "lease_timeouts", "lease_sets_refused",
      "xfetch_grants", "refresh_grants", "hot_keys", "tracked_keys", "stale_hits", "waits_parked", "waits_woken", "waits_timed_out"};
  EXPECT_EQ(StatNames(reply), expected);
  EXPECT_EQ(StatValue(reply, "pid"), "42");
  EXPECT_EQ(StatValue(reply, "version"), "1.6.18-herdless");
  EXPECT_EQ(StatValue(reply, "pointer_size"), "64");
  EXPECT_EQ(StatValue(reply, "rusage_user"), "0.000000");
  EXPECT_EQ(StatValue(reply, "cmd_get"), "2");
  EXPECT_EQ(StatValue(reply, "get_hits"), "1");
  EXPECT_EQ(StatValue(reply, "get_misses"), "1");
  EXPECT_EQ(StatValue(reply, "cmd_set"), "1");
  EXPECT_EQ(StatValue(reply, "curr_items"), "1");
  EXPECT_EQ(StatValue(reply, "total_items"), "1");
  EXPECT_EQ(StatValue(reply, "threads"), "4");
  EXPECT_EQ(StatValue(reply, "limit_maxbytes"), "67108864");
}

TEST_F(ExecutorTest, StatsShowsIdleKicksOnlyWithIdleTimeout) {
  EXPECT_EQ(StatValue(Run("stats\r\n"), "idle_kicks"), "<absent>");
  server_.settings.idle_timeout = 30;
  EXPECT_EQ(StatValue(Run("stats\r\n"), "idle_kicks"), "0");
}

// memcached prints the slab mover's, the crawler's and the maintainer's lines
// only while each runs: -o no_slab_reassign, lru_crawler disable, no_lru_maintainer.
TEST_F(ExecutorTest, StatsShowsMachineryLinesOnlyWhileItIsOn) {
  auto has = [&](const std::string& name) { return StatValue(Run("stats\r\n"), name) != "<absent>"; };
  EXPECT_TRUE(has("slabs_moved") && has("lru_crawler_starts") && has("lru_maintainer_juggles"));
  server_.settings.machinery.slab_reassign = false;
  EXPECT_FALSE(has("slab_reassign_rescues") || has("slab_reassign_running") || has("slabs_moved"));
  EXPECT_EQ(Run("lru_crawler disable\r\n"), "OK\r\n");
  EXPECT_FALSE(has("lru_crawler_running") || has("lru_crawler_starts"));
  EXPECT_TRUE(has("lru_maintainer_juggles"));
  EXPECT_EQ(Run("lru_crawler enable\r\n"), "OK\r\n");
  EXPECT_TRUE(has("lru_crawler_running") && has("lru_crawler_starts"));
  server_.settings.machinery.lru_maintainer = false;
  EXPECT_FALSE(has("lru_maintainer_juggles"));
  EXPECT_TRUE(has("malloc_fails"));
}

TEST_F(ExecutorTest, StatsSettingsListsMemcachedNamesThenHerdlessOnes) {
  server_.settings.tcp_port = 11311;
  server_.settings.classic_stampede = ClassicStampedeMode::kWait;
  server_.settings.xfetch_beta = 1.5;
  server_.verbosity = 1;
  const std::string reply = Run("stats settings\r\n");
  const std::vector<std::string> expected = {
      "maxbytes", "maxconns", "tcpport", "udpport", "inter", "verbosity", "oldest", "evictions",
      "domain_socket", "umask", "shutdown_command", "growth_factor", "chunk_size", "num_threads",
      "num_threads_per_udp", "stat_key_prefix", "detail_enabled", "reqs_per_event",
      "cas_enabled", "tcp_backlog", "binding_protocol", "auth_enabled_sasl",
      "auth_enabled_ascii", "item_size_max", "maxconns_fast", "hashpower_init", "slab_reassign",
      "slab_automove", "slab_automove_ratio", "slab_automove_window", "slab_chunk_max",
      "lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl", "tail_repair_time",
      "flush_enabled", "dump_enabled", "hash_algorithm", "lru_maintainer_thread",
      "lru_segmented", "hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor",
      "temp_lru", "temporary_ttl", "idle_timeout", "watcher_logbuf_size", "worker_logbuf_size",
      "read_buf_mem_limit", "track_sizes", "inline_ascii_response", "ext_item_size",
      "ext_item_age", "ext_low_ttl", "ext_recache_rate", "ext_wbuf_size", "ext_compact_under",
      "ext_drop_under", "ext_max_sleep", "ext_max_frag", "slab_automove_freeratio",
      "ext_drop_unread", "num_napi_ids",
      "memory_file", "lease_timeout", "xfetch_delta_ms", "xfetch_beta", "stale_grace",
      "classic_stampede", "wait_timeout_ms", "refresh_ahead", "refresh_hot", "refresh_epsilon",
      "refresh_max_fraction", "stalled_client_timeout", "exact_threads", "io",
      "snapshot_interval", "compat", "warm_peer", "warm_timeout_ms", "warm_holdoff", "warm_for",
      "warm_min_hit_ratio", "ring", "ring_self", "foreign_ttl", "metrics",
      "restore_max_age"};
  EXPECT_EQ(StatNames(reply), expected);
  EXPECT_EQ(StatValue(reply, "metrics"), "NULL");   // off
  EXPECT_EQ(reply.substr(reply.size() - 5), "END\r\n");
  EXPECT_EQ(StatValue(reply, "tcpport"), "11311");
  EXPECT_EQ(StatValue(reply, "inter"), "127.0.0.1");
  EXPECT_EQ(StatValue(reply, "verbosity"), "1");
  EXPECT_EQ(StatValue(reply, "item_size_max"), "1048576");
  EXPECT_EQ(StatValue(reply, "cas_enabled"), "yes");
  EXPECT_EQ(StatValue(reply, "classic_stampede"), "wait");
  EXPECT_EQ(StatValue(reply, "xfetch_beta"), "1.50");
  EXPECT_EQ(StatValue(reply, "lease_timeout"), "5");
}

TEST_F(ExecutorTest, StatsItemsIsEmptyWithoutItems) {
  EXPECT_EQ(Run("stats items\r\n"), "END\r\n");
}

// Items land in memcached's slab class for their size: a 1-byte value is
// class 1 (96-byte chunks), a 300-byte one class 7 (384), as in memcached.
TEST_F(ExecutorTest, StatsItemsListsEachSizeClass) {
  Run("set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nset c 0 100 300\r\n" + std::string(300, 'x') +
      "\r\nget a\r\n");
  const std::string reply = Run("stats items\r\n");
  EXPECT_EQ(StatValue(reply, "items:1:number"), "2");
  EXPECT_EQ(StatValue(reply, "items:1:number_cold"), "2");
  EXPECT_EQ(StatValue(reply, "items:1:hits_to_cold"), "1");
  EXPECT_EQ(StatValue(reply, "items:7:number"), "1");
  EXPECT_EQ(StatValue(reply, "items:1:mem_requested"), "122");   // memcached's 2 x 61 bytes
  EXPECT_EQ(StatValue(reply, "items:2:number"), "<absent>");
  EXPECT_EQ(StatNames(reply).front(), "items:1:number");
  EXPECT_EQ(StatNames(reply).size(), 2u * 28u);   // memcached 1.6.18's 28 fields a class
  EXPECT_EQ(reply.substr(reply.size() - 5), "END\r\n");
}

TEST_F(ExecutorTest, StatsSlabsListsEachSizeClass) {
  EXPECT_EQ(Run("stats slabs\r\n"), "STAT active_slabs 0\r\nSTAT total_malloced 0\r\nEND\r\n");
  Run("set a 0 0 1\r\n1\r\nget a\r\nset c 0 0 300\r\n" + std::string(300, 'x') +
      "\r\ncas c 0 0 1 1\r\nx\r\ndelete a\r\nset n 0 0 2\r\n10\r\nincr n 1\r\n");
  const std::string reply = Run("stats slabs\r\n");
  EXPECT_EQ(StatValue(reply, "1:chunk_size"), "96");
  EXPECT_EQ(StatValue(reply, "1:used_chunks"), "1");   // n
  EXPECT_EQ(StatValue(reply, "1:get_hits"), "1");
  EXPECT_EQ(StatValue(reply, "1:cmd_set"), "3");       // a, the cas, n
  EXPECT_EQ(StatValue(reply, "1:cas_badval"), "1");
  EXPECT_EQ(StatValue(reply, "1:delete_hits"), "1");
  EXPECT_EQ(StatValue(reply, "1:incr_hits"), "1");
  EXPECT_EQ(StatValue(reply, "1:total_pages"), "1");
  EXPECT_EQ(StatValue(reply, "7:chunk_size"), "384");
  EXPECT_EQ(StatValue(reply, "7:cmd_set"), "1");
  EXPECT_EQ(StatValue(reply, "active_slabs"), "2");
  EXPECT_NE(StatValue(reply, "total_malloced"), "0");
}

TEST_F(ExecutorTest, StatsSizesCountsItemsWhileEnabled) {
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT sizes_status disabled\r\nEND\r\n");
  Run("set a 0 0 1\r\n1\r\n");
  EXPECT_EQ(Run("stats sizes_enable\r\n"), "STAT sizes_status enabled\r\n");
  Run("set b 0 0 1\r\n1\r\n");
  // memcached's size for b: its 48-byte header, key, value with \r\n, CAS (61, in the 64
  // bucket). a, stored before, is not counted, as memcached counts only items stored since.
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 1\r\nEND\r\n");
  Run("delete a\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 1\r\nEND\r\n");
  Run("set a 0 0 1\r\n1\r\nset c 0 0 40\r\n" + std::string(40, 'c') + "\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 2\r\nSTAT 128 1\r\nEND\r\n");
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "track_sizes"), "yes");
  EXPECT_EQ(Run("stats sizes_enable\r\n"), "STAT sizes_status enabled\r\n");   // kept
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 2\r\nSTAT 128 1\r\nEND\r\n");
  EXPECT_EQ(Run("stats sizes_disable\r\n"), "STAT sizes_status disabled\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT sizes_status disabled\r\nEND\r\n");
}

// An item given a new CAS where it is (md with I, a lease passed on after its
// holder timed out) joins the histogram then, and leaves it when removed: the
// counts never go below zero.
TEST_F(ExecutorTest, StatsSizesFollowsCasChangedInPlace) {
  Run("set k 0 0 1\r\n1\r\n");
  Run("stats sizes_enable\r\n");
  EXPECT_EQ(Run("md k I\r\n"), "HD\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 1\r\nEND\r\n");
  EXPECT_EQ(Run("mg k v\r\n"), "VA 1 X W\r\n1\r\n");
  clock_.AdvanceSeconds(6);   // past lease_timeout: the next reader gets the lease with a new CAS
  EXPECT_EQ(Run("mg k\r\n"), "HD X W\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT 64 1\r\nEND\r\n");
  Run("delete k\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "END\r\n");
}

TEST_F(ExecutorTest, StatsSizesEnableNeedsCas) {
  server_.settings.cas_enabled = false;
  EXPECT_EQ(Run("stats sizes_enable\r\n"),
            "STAT sizes_status error\r\nSTAT sizes_error cas_support_disabled\r\n");
  EXPECT_EQ(Run("stats sizes\r\n"), "STAT sizes_status disabled\r\nEND\r\n");
}

// memcached 1.6.18's process_lru_crawler_command replies.
TEST_F(ExecutorTest, LruCrawlerRepliesAsMemcached) {
  struct Case {
    const char* line;
    const char* reply;
  } cases[] = {
      {"lru_crawler metadump 0\r\n", "BADCLASS invalid class id\r\n"},
      {"lru_crawler metadump 64\r\n", "BADCLASS invalid class id\r\n"},
      {"lru_crawler metadump 1,x\r\n", "BADCLASS invalid class id\r\n"},
      {"lru_crawler crawl 0\r\n", "BADCLASS invalid class id\r\n"},
      {"lru_crawler crawl 4294967360\r\n", "BADCLASS invalid class id\r\n"},   // 64
      {"lru_crawler crawl hash\r\n", "ERROR an unknown error happened\r\n"},   // dumps only
      {"lru_crawler crawl all\r\n", "ERROR an unknown error happened\r\n"},   // FakeServer
      {"lru_crawler sleep 2000000\r\n", "CLIENT_ERROR sleep must be one second or less\r\n"},
      {"lru_crawler sleep x\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"lru_crawler sleep 50\r\n", "OK\r\n"},
      {"lru_crawler tocrawl x\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"lru_crawler tocrawl 5\r\n", "OK\r\n"},
      {"lru_crawler enable\r\n", "ERROR failed to start lru crawler thread\r\n"},
      {"lru_crawler disable\r\n", "OK\r\n"},
      {"lru_crawler disable\r\n", "OK\r\n"},
      {"lru_crawler metadump all\r\n", "CLIENT_ERROR lru crawler disabled\r\n"},
      {"lru_crawler crawl all\r\n", "CLIENT_ERROR lru crawler disabled\r\n"},
      {"lru_crawler enable\r\n", "OK\r\n"},
      {"lru_crawler foo\r\n", "ERROR\r\n"},
      {"lru_crawler\r\n", "ERROR\r\n"},
      {"lru_crawler crawl 1 2\r\n", "ERROR\r\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Run(c.line), c.reply) << c.line;
  const std::string settings = Run("stats settings\r\n");
  EXPECT_EQ(StatValue(settings, "lru_crawler_sleep"), "50");
  EXPECT_EQ(StatValue(settings, "lru_crawler_tocrawl"), "5");
  EXPECT_EQ(StatValue(settings, "lru_crawler"), "yes");
}

TEST_F(ExecutorTest, MetadumpTurnsTheConnectionIntoAStream) {
  Run("lru_crawler metadump 1,2\r\nget a\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kMetadump);
  EXPECT_EQ(outcome_.stream_arg, 6u);
  EXPECT_EQ(outcome_.consumed, std::string_view("lru_crawler metadump 1,2\r\n").size());
  EXPECT_EQ(Run("version\r\nlru_crawler metadump all\r\n"),
            "VERSION " + std::string(kServerVersion) +
                "\r\nERROR cannot pipeline other commands before metadump\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kNone);
  // memcached's mn flushes the replies before it: what follows is not pipelined.
  EXPECT_EQ(Run("mn\r\nlru_crawler metadump all\r\n"), "MN\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kMetadump);
}

TEST_F(ExecutorTest, MgdumpStartsWithOkAndStreams) {
  EXPECT_EQ(Run("lru_crawler mgdump hash\r\n"), "OK\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kMgdump);
  EXPECT_EQ(Run("version\r\nlru_crawler mgdump all\r\n"),
            "VERSION " + std::string(kServerVersion) +
                "\r\nERROR cannot pipeline other commands before mgdump\r\n");
  EXPECT_EQ(Run("lru_crawler mgdump 99\r\n"), "BADCLASS invalid class id\r\n");
  server_.settings.dump_enabled = false;
  EXPECT_EQ(Run("lru_crawler mgdump all\r\n"), "ERROR key dump not allowed\r\n");
}

// Over UDP a stream cannot run: memcached's reply is lost, herdless says so.
TEST_F(ExecutorTest, StreamsAreRefusedOverUdp) {
  executor_.set_client_fd(7, /*datagram=*/true);
  EXPECT_EQ(Run("lru_crawler metadump all\r\n"), "SERVER_ERROR streams not supported over UDP\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kNone);
  EXPECT_EQ(Run("watch fetchers\r\n"), "SERVER_ERROR streams not supported over UDP\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kNone);
  // memcached's own errors come first, as on TCP.
  EXPECT_EQ(Run("lru_crawler metadump 0\r\n"), "BADCLASS invalid class id\r\n");
  EXPECT_EQ(Run("watch bogus\r\n"), "ERROR\r\n");
  executor_.set_client_fd(7);
  Run("watch\r\n");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kWatch);
}

TEST_F(ExecutorTest, SlabsRepliesAsMemcached) {
  struct Case {
    const char* line;
    const char* reply;
  } cases[] = {
      {"slabs automove 3\r\n", "ERROR\r\n"},
      {"slabs automove x\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"slabs automove 0\r\n", "OK\r\n"},
      {"slabs automove 2 noreply\r\n", ""},
      {"slabs automove ratio\r\n", "ERROR\r\n"},
      {"slabs automove ratio 0.5\r\n", "OK\r\n"},
      {"slabs reassign a 2\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"slabs reassign 3 3\r\n", "SAME src and dst class are identical\r\n"},
      {"slabs reassign 1 99\r\n", "BADCLASS invalid src or dst class id\r\n"},
      {"slabs reassign 1 2\r\n", "NOSPARE source class has no spare pages\r\n"},
      {"slabs foo\r\n", "ERROR\r\n"},
      {"slabs automove\r\n", "ERROR\r\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Run(c.line), c.reply) << c.line;
  const std::string settings = Run("stats settings\r\n");
  EXPECT_EQ(StatValue(settings, "slab_automove"), "2");
  EXPECT_EQ(StatValue(settings, "slab_automove_ratio"), "0.50");
  EXPECT_EQ(Run("slabs automove ratio .25\r\n"), "OK\r\n");   // safe_strtod's syntax
  EXPECT_EQ(Run("slabs automove +1\r\n"), "OK\r\n");
  // 1.6.45 reads digits only; -o no_modern turns slab reassignment off.
  server_.settings.compat = Compat::k1645;
  EXPECT_EQ(Run("slabs automove +1\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(Run("slabs reassign 1 4294967297\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(Run("lru_crawler tocrawl +5\r\n"), "CLIENT_ERROR bad command line format\r\n");
  server_.settings.machinery.slab_reassign = false;
  EXPECT_EQ(Run("slabs reassign 1 2\r\n"), "CLIENT_ERROR slab reassignment disabled\r\n");
}

// lru tune|mode|temp_ttl (process_lru_command): 1.6.18 reads numbers with
// safe_strto* and counts a trailing noreply among the words; 1.6.45 takes
// prefixes of the words and reads digits only.
TEST_F(ExecutorTest, LruRepliesAsMemcached) {
  struct Case {
    const char* line;
    const char* as_1618;
    const char* as_1645;
  } cases[] = {
      {"lru\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru tune 10 30 0.5 3\r\n", "OK\r\n", "OK\r\n"},
      {"lru tune 50 31 1 1\r\n", "ERROR hot and warm pcts must not exceed 80\r\n",
       "ERROR hot and warm pcts must not exceed 80\r\n"},
      {"lru tune 10 10 0 1\r\n", "ERROR hot/warm age factors must be greater than 0\r\n",
       "ERROR hot/warm age factors must be greater than 0\r\n"},
      {"lru tune 10 10 1\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru tune x 10 1 1\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru tune +5 10 .5 1e1\r\n", "OK\r\n", "ERROR\r\n"},
      {"lru tune 4294967295 81 1 1\r\n", "OK\r\n", "OK\r\n"},   // the unsigned sum wraps
      {"lru mode flat\r\n", "OK\r\n", "OK\r\n"},
      {"lru mode f\r\n", "ERROR\r\n", "OK\r\n"},
      {"lru mode segmentedx\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru mode\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru temp_ttl 100\r\n", "OK\r\n", "OK\r\n"},
      {"lru temp_ttl -1\r\n", "OK\r\n", "OK\r\n"},
      {"lru temp_ttl 1x\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"lru t 5\r\n", "ERROR\r\n", "OK\r\n"},   // 1.6.45: too few words for tune, so temp_ttl
      {"lru mode flat noreply\r\n", "", ""},
      {"lru tune 1 1 1 noreply\r\n", "", ""},
      {"lru foo\r\n", "ERROR\r\n", "ERROR\r\n"},
  };
  for (Compat compat : {Compat::k1618, Compat::k1645}) {
    server_.settings.compat = compat;
    for (const Case& c : cases) {
      EXPECT_EQ(Run(c.line), compat == Compat::k1618 ? c.as_1618 : c.as_1645) << c.line;
    }
    Run("lru tune 15 35 0.25 2.5\r\nlru mode segmented\r\nlru temp_ttl 30\r\n");
    std::string settings = Run("stats settings\r\n");
    EXPECT_EQ(StatValue(settings, "lru_maintainer_thread"), "yes");
    EXPECT_EQ(StatValue(settings, "lru_segmented"), "yes");
    EXPECT_EQ(StatValue(settings, "hot_lru_pct"), "15");
    EXPECT_EQ(StatValue(settings, "warm_lru_pct"), "35");
    EXPECT_EQ(StatValue(settings, "hot_max_factor"), "0.25");
    EXPECT_EQ(StatValue(settings, "warm_max_factor"), "2.50");
    EXPECT_EQ(StatValue(settings, "temp_lru"), "yes");
    EXPECT_EQ(StatValue(settings, "temporary_ttl"), "30");
    Run("lru temp_ttl -5\r\nlru mode flat\r\nlru tune 4294967295 81 1 1\r\n");
    settings = Run("stats settings\r\n");
    EXPECT_EQ(StatValue(settings, "temp_lru"), "no");
    EXPECT_EQ(StatValue(settings, "temporary_ttl"), "30");   // kept
    EXPECT_EQ(StatValue(settings, "lru_segmented"), "no");
    EXPECT_EQ(StatValue(settings, "hot_lru_pct"), "-1");     // memcached's %d of an int
  }
  // Without the LRU maintainer (-o no_lru_maintainer, no_modern) only tune is known.
  server_.settings.compat = Compat::k1618;
  server_.settings.machinery.lru_maintainer = false;
  EXPECT_EQ(Run("lru mode flat\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("lru temp_ttl 5\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("lru tune 20 40 0.2 2\r\n"), "OK\r\n");
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "lru_maintainer_thread"), "no");
}

// extstore <setting> <value> (process_extstore_command): OK or a bare ERROR,
// with or without ext_path; the value shows in `stats settings` at once.
// 1.6.18 reads numbers with safe_strto* and hides the reply of a line that
// ends in noreply; 1.6.45 takes a prefix of the setting's name and reads digits only.
TEST_F(ExecutorTest, ExtstoreRepliesAsMemcached) {
  struct Case {
    const char* line;
    const char* as_1618;
    const char* as_1645;
  } cases[] = {
      {"extstore\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore item_size\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore item_size 100\r\n", "OK\r\n", "OK\r\n"},
      {"extstore item_size x\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore item_size -1\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore item_size +7\r\n", "OK\r\n", "ERROR\r\n"},
      {"extstore item 100\r\n", "ERROR\r\n", "OK\r\n"},
      {"extstore max 100\r\n", "ERROR\r\n", "OK\r\n"},   // 1.6.45: max_sleep comes first
      {"extstore max_frag 0.5\r\n", "OK\r\n", "OK\r\n"},
      {"extstore max_frag .25x\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore drop_unread 2\r\n", "OK\r\n", "OK\r\n"},
      {"extstore free_memchunks 1 2\r\n", "OK\r\n", "OK\r\n"},
      {"extstore free_memchunks 64 2\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore free_memchunks 1\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore nosuch 1\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"extstore item_size 100 noreply\r\n", "", ""},
      {"extstore item_size x noreply\r\n", "", ""},
      {"extstore noreply\r\n", "", ""},
  };
  for (Compat compat : {Compat::k1618, Compat::k1645}) {
    server_.settings.compat = compat;
    for (const Case& c : cases) {
      EXPECT_EQ(Run(c.line), compat == Compat::k1618 ? c.as_1618 : c.as_1645) << c.line;
    }
    Run("extstore item_size 300\r\nextstore item_age 30\r\nextstore low_ttl 5\r\n"
        "extstore recache_rate 7\r\nextstore compact_under 3\r\nextstore drop_under 2\r\n"
        "extstore max_sleep 9\r\nextstore max_frag 1.237\r\nextstore drop_unread 1\r\n");
    std::string settings = Run("stats settings\r\n");
    EXPECT_EQ(StatValue(settings, "ext_item_size"), "300");
    EXPECT_EQ(StatValue(settings, "ext_item_age"), "30");
    EXPECT_EQ(StatValue(settings, "ext_low_ttl"), "5");
    EXPECT_EQ(StatValue(settings, "ext_recache_rate"), "7");
    EXPECT_EQ(StatValue(settings, "ext_compact_under"), "3");
    EXPECT_EQ(StatValue(settings, "ext_drop_under"), "2");
    EXPECT_EQ(StatValue(settings, "ext_max_sleep"), "9");
    EXPECT_EQ(StatValue(settings, "ext_max_frag"), "1.24");
    EXPECT_EQ(StatValue(settings, "ext_drop_unread"), "yes");
    EXPECT_EQ(Run("extstore drop_unread 0\r\nextstore item_size 4294967295\r\n"), "OK\r\nOK\r\n");
    settings = Run("stats settings\r\n");
    EXPECT_EQ(StatValue(settings, "ext_drop_unread"), "no");
    EXPECT_EQ(StatValue(settings, "ext_item_size"), "4294967295");
    // A bad number: 1.6.18 zeroes the setting on its way to ERROR, 1.6.45 keeps it;
    // both zero max_frag.
    Run("extstore item_age x\r\nextstore max_frag 1x\r\n");
    settings = Run("stats settings\r\n");
    EXPECT_EQ(StatValue(settings, "ext_item_age"), compat == Compat::k1618 ? "0" : "30");
    EXPECT_EQ(StatValue(settings, "ext_max_frag"), "0.00");
  }
}

TEST_F(ExecutorTest, WatchParsesItsKinds) {
  EXPECT_EQ(Run("watch foo\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("watch mutations stampede\r\n"), "");
  EXPECT_EQ(outcome_.stream, ProcessOutcome::Stream::kWatch);
  EXPECT_EQ(outcome_.stream_arg, uint64_t{kWatchMutations | kWatchStampede});
  EXPECT_EQ(Run("watch\r\n"), "");
  EXPECT_EQ(outcome_.stream_arg, uint64_t{kWatchFetchers});
}

TEST_F(ExecutorTest, StatsConnsListsEveryConnection) {
  server_.connections = {
      {.fd = 23, .addr = "tcp:127.0.0.1:11211", .listen_addr = "", .state = "conn_listening",
       .secs_since_last_cmd = 5},
      {.fd = 24, .addr = "tcp:127.0.0.1:58212", .listen_addr = "tcp:127.0.0.1:11211",
       .state = "conn_parse_cmd", .secs_since_last_cmd = 0}};
  EXPECT_EQ(Run("stats conns\r\n"),
            "STAT 23:addr tcp:127.0.0.1:11211\r\n"
            "STAT 23:state conn_listening\r\n"
            "STAT 23:secs_since_last_cmd 5\r\n"
            "STAT 24:addr tcp:127.0.0.1:58212\r\n"
            "STAT 24:listen_addr tcp:127.0.0.1:11211\r\n"
            "STAT 24:state conn_parse_cmd\r\n"
            "STAT 24:secs_since_last_cmd 0\r\n"
            "END\r\n");
}

TEST_F(ExecutorTest, StatsResetClearsCounters) {
  Run("set a 0 0 1\r\n1\r\nget a\r\n");
  EXPECT_EQ(Run("stats reset\r\n"), "RESET\r\n");
  EXPECT_EQ(server_.resets, 1);
  const std::string reply = Run("stats\r\n");
  EXPECT_EQ(StatValue(reply, "cmd_get"), "0");
  EXPECT_EQ(StatValue(reply, "cmd_set"), "0");
  EXPECT_EQ(StatValue(reply, "curr_items"), "1");   // items stay
}

TEST_F(ExecutorTest, StatsSubcommandErrorsAnswerAsMemcached) {
  EXPECT_EQ(Run("stats bogus\r\n"), "ERROR\r\n");
  EXPECT_EQ(Run("stats detail\r\n"), "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
  EXPECT_EQ(Run("stats detail foo\r\n"), "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
  EXPECT_EQ(Run("stats cachedump 1\r\n"), "CLIENT_ERROR bad command line\r\n");
  EXPECT_EQ(Run("stats cachedump -1 0\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(Run("stats cachedump 1 x\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(Run("stats cachedump 64 0\r\n"), "CLIENT_ERROR Illegal slab id\r\n");
  EXPECT_EQ(Run("stats cachedump 63 0\r\n"), "END\r\n");
  EXPECT_EQ(Run("stats cachedump 0 0\r\n"), "END\r\n");
  server_.settings.dump_enabled = false;   // -X
  EXPECT_EQ(Run("stats cachedump 1 1\r\n"), "CLIENT_ERROR stats cachedump not allowed\r\n");
}

// stats detail: per-prefix counters of get (hits), set-family and delete,
// only while on; meta commands, touch and incr are not counted (memcached).
TEST_F(ExecutorTest, StatsDetailCountsPrefixesWhileOn) {
  Run("set a:1 0 0 1\r\n1\r\n");
  EXPECT_EQ(Run("stats detail dump\r\n"), "END\r\n");
  EXPECT_EQ(Run("stats detail on\r\n"), "OK\r\n");
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "detail_enabled"), "yes");
  Run("set a:1 0 0 1\r\n1\r\nget a:1 a:2 nodelim :x\r\ndelete a:1\r\ngat 10 b:1\r\n");
  Run("append a:9 0 0 1\r\n1\r\ncas a:9 0 0 1 5\r\n1\r\ntouch a:1 1\r\nincr a:1 1\r\n");
  Run("mg a:1 v\r\nms a:1 1\r\n1\r\nmd a:1\r\n");
  const std::string dump =
      "PREFIX  get 1 hit 0 set 0 del 0\r\n"
      "PREFIX a get 2 hit 1 set 3 del 1\r\n"
      "PREFIX b get 1 hit 0 set 0 del 0\r\n"
      "END\r\n";
  EXPECT_EQ(Run("stats detail dump\r\n"), dump);
  EXPECT_EQ(Run("stats detail off extra\r\n"), "OK\r\n");
  Run("get a:1\r\n");
  EXPECT_EQ(Run("stats detail dump\r\n"), dump);   // off: kept, not counted
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "detail_enabled"), "no");
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "stat_key_prefix"), ":");
  EXPECT_EQ(Run("stats reset\r\n"), "RESET\r\n");
  EXPECT_EQ(Run("stats detail dump\r\n"), "END\r\n");
}

TEST_F(ExecutorTest, StatsCachedumpListsAClassAsStatsItemsNumbersIt) {
  Run("set k1 0 0 3\r\nabc\r\nset k2 0 0 3\r\nabc\r\n");
  const std::string items = Run("stats items\r\n");
  const size_t at = items.find("STAT items:");
  ASSERT_NE(at, std::string::npos) << items;
  const std::string cls = items.substr(at + 11, items.find(':', at + 11) - (at + 11));
  const std::string all = Run("stats cachedump " + cls + " 0\r\n");
  EXPECT_TRUE(all == "ITEM k1 [3 b; 0 s]\r\nITEM k2 [3 b; 0 s]\r\nEND\r\n" ||
              all == "ITEM k2 [3 b; 0 s]\r\nITEM k1 [3 b; 0 s]\r\nEND\r\n")
      << all;
  EXPECT_EQ(Run("stats cachedump " + cls + " 1\r\n").size(), all.size() - 20);
}

TEST_F(ExecutorTest, StatsWithTrailingSpacesIsGeneralStats) {
  const std::string reply = Run("stats   \r\n");
  EXPECT_EQ(StatNames(reply).front(), "pid");
}

// The TLS block of `stats settings` (a TLS build), in memcached's order and
// words, between the extstore block (ext_drop_unread last) and num_napi_ids.
TEST_F(ExecutorTest, StatsSettingsShowTheSslBlockInTlsBuilds) {
  server_.settings.tls.available = true;
  server_.settings.tls.enabled = true;
  server_.settings.tls.chain_cert = "/etc/c.pem";
  server_.settings.tls.verify_mode = 2;
  server_.settings.auth_file = "/etc/auth";
  const std::string reply = Run("stats settings\r\n");
  const std::vector<std::string> names = StatNames(reply);
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  EXPECT_EQ(at("ssl_enabled"), at("ext_drop_unread") + 1);
  EXPECT_EQ(at("ssl_min_version"), at("ssl_enabled") + 10);
  EXPECT_EQ(at("num_napi_ids"), at("ssl_min_version") + 1);
  EXPECT_EQ(StatValue(reply, "ssl_enabled"), "yes");
  EXPECT_EQ(StatValue(reply, "ssl_chain_cert"), "/etc/c.pem");
  EXPECT_EQ(StatValue(reply, "ssl_key"), "(null)");
  EXPECT_EQ(StatValue(reply, "ssl_verify_mode"), "3");
  EXPECT_EQ(StatValue(reply, "ssl_keyformat"), "1");
  EXPECT_EQ(StatValue(reply, "ssl_ciphers"), "NULL");
  EXPECT_EQ(StatValue(reply, "ssl_wbuf_size"), "16384");
  EXPECT_EQ(StatValue(reply, "ssl_min_version"), "tlsv1.2");
  EXPECT_EQ(StatValue(reply, "auth_enabled_ascii"), "/etc/auth");
  server_.settings.tls.available = false;
  EXPECT_EQ(StatValue(Run("stats settings\r\n"), "ssl_enabled"), "<absent>");
}

TEST_F(ExecutorTest, GeneralStatsShowSslCountersOnlyWithTls) {
  EXPECT_EQ(StatValue(Run("stats\r\n"), "ssl_handshake_errors"), "<absent>");
  server_.settings.tls.available = true;
  server_.settings.tls.enabled = true;
  server_.snapshot.time = 1000;
  server_.snapshot.ssl_cert_refresh_time = 990;
  stats_.ssl_handshake_errors.Add(3);
  stats_.auth_cmds.Add(2);
  const std::string reply = Run("stats\r\n");
  EXPECT_EQ(StatValue(reply, "ssl_handshake_errors"), "3");
  EXPECT_EQ(StatValue(reply, "time_since_server_cert_refresh"), "10");
  EXPECT_EQ(StatValue(reply, "ssl_new_sessions"), "<absent>");   // only with ssl_session_cache
  EXPECT_EQ(StatValue(reply, "auth_cmds"), "2");
  const std::vector<std::string> names = StatNames(reply);
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  EXPECT_EQ(at("ssl_handshake_errors"), at("log_watchers") + 1);
  EXPECT_EQ(at("unexpected_napi_ids"), at("time_since_server_cert_refresh") + 1);
}

TEST_F(ExecutorTest, RefreshCertsAnswersOkOrTheError) {
  EXPECT_EQ(Run("refresh_certs\r\n"), "ERROR\r\n");   // a build without TLS
  server_.settings.tls.available = true;
  EXPECT_EQ(Run("refresh_certs\r\n"), "OK\r\n");
  EXPECT_EQ(Run("refresh_certs noreply\r\n"), "");
  server_.refresh_error = "Error loading the key: /k.pem : nope";
  // noreply hides the OK only, as memcached's write_and_free.
  EXPECT_EQ(Run("refresh_certs noreply\r\n"), "Error loading the key: /k.pem : nope\r\n");
  EXPECT_EQ(server_.refreshes, 3);
}

// -o compat=1.6.45: 1.6.45's answers where 1.6.18's differ.
TEST_F(ExecutorTest, Compat1645AnswersAs1645) {
  server_.settings.compat = Compat::k1645;
  Executor latest(&store_, &server_, &stats_);
  auto run = [&](std::string_view input) {
    outcome_ = latest.Process(input, &out_, SIZE_MAX, 0);
    return Drain(&out_);
  };
  EXPECT_EQ(run("version\r\n"), "VERSION 1.6.45-herdless\r\n");
  EXPECT_EQ(StatValue(run("stats\r\n"), "version"), "1.6.45-herdless");
  EXPECT_EQ(run("shutdown\r\n"), "SERVER_ERROR: shutdown not enabled\r\n");
  EXPECT_EQ(run("\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(run("stats sizes_enable\r\n"), "ERROR\r\n");
  EXPECT_EQ(run("bget a\r\n"), "ERROR\r\n");
  const std::string stored = run("ms a 2 c\r\nhi\r\n");
  const std::string cas = stored.substr(4, stored.size() - 6);
  EXPECT_EQ(run("mg a v C" + cas + "\r\n"), "HD\r\n");   // the client's copy is current
  EXPECT_EQ(run("mg a v C1\r\n"), "VA 2\r\nhi\r\n");
  // and under the default, 1.6.18's
  server_.settings.compat = Compat::k1618;
  EXPECT_EQ(Run("mg a v C" + cas + "\r\n"), "VA 2\r\nhi\r\n");
  EXPECT_EQ(Run("version\r\n"), "VERSION 1.6.18-herdless\r\n");
}

// The stats and settings lines 1.6.45 has and 1.6.18 lacks (and the one it dropped), by setting;
// freeratio is in both (memcached's extstore block, which Debian's 1.6.18 prints too).
TEST_F(ExecutorTest, Compat1645StatsAndSettingsLines) {
  struct Row {
    const char* command;
    const char* name;
    const char* as_1618;   // "<absent>": not printed
    const char* as_1645;
  };
  const Row rows[] = {
      {"stats\r\n", "slab_reassign_evictions_nomem", "0", "<absent>"},
      {"stats\r\n", "slab_reassign_busy_nomem", "<absent>", "0"},
      {"stats\r\n", "slab_reassign_last_busy_status", "<absent>", "none"},
      {"stats settings\r\n", "slab_automove_freeratio", "0.010", "0.010"},   // both: the extstore block
      {"stats settings\r\n", "num_napi_ids", "(null)", "0"},
      {"stats settings\r\n", "client_flags_size", "<absent>", "4"},
  };
  for (Compat compat : {Compat::k1618, Compat::k1645}) {
    server_.settings.compat = compat;
    for (const Row& row : rows) {
      EXPECT_EQ(StatValue(Run(row.command), row.name),
                compat == Compat::k1618 ? row.as_1618 : row.as_1645)
          << row.command << row.name;
    }
  }
  // 1.6.45 prints busy_nomem and the status where evictions_nomem stood, after busy_deletes.
  const std::vector<std::string> names = StatNames(Run("stats\r\n"));
  const auto at = [&](const char* name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  EXPECT_EQ(at("slab_reassign_busy_nomem"), at("slab_reassign_busy_deletes") + 1);
  EXPECT_EQ(at("slab_reassign_running"), at("slab_reassign_last_busy_status") + 1);
}

// 1.6.45's parser takes a prefix of an operator command's words; 1.6.18 the words alone.
TEST_F(ExecutorTest, Compat1645TakesPrefixesOfOperatorWords) {
  struct Row {
    const char* request;
    const char* as_1618;
    const char* as_1645;
  };
  const Row rows[] = {
      {"stats r\r\n", "ERROR\r\n", "RESET\r\n"},
      {"stats resetx\r\n", "ERROR\r\n", "ERROR\r\n"},
      {"stats det of\r\n", "ERROR\r\n", "OK\r\n"},
      {"stats detail of\r\n", "CLIENT_ERROR usage: stats detail on|off|dump\r\n", "OK\r\n"},
      {"stats siz\r\n", "ERROR\r\n", "ERROR\r\n"},   // the engine's groups: whole words
      {"slabs a 1\r\n", "ERROR\r\n", "OK\r\n"},
      {"slabs automove r 0.5\r\n", "CLIENT_ERROR bad command line format\r\n", "OK\r\n"},
      {"slabs automove w 2\r\n", "CLIENT_ERROR bad command line format\r\n",
       "CLIENT_ERROR automove window too low or too high\r\n"},
      {"slabs re 1 1\r\n", "ERROR\r\n", "SAME src and dst class are identical\r\n"},
      {"lru_crawler s 2000000\r\n", "ERROR\r\n", "CLIENT_ERROR sleep must be one second or less\r\n"},
      {"lru_crawler t 0\r\n", "ERROR\r\n", "OK\r\n"},
      {"lru_crawler x\r\n", "ERROR\r\n", "ERROR\r\n"},
      // and a trailing noreply of slabs, lru_crawler, shutdown hides every reply
      {"lru_crawler x noreply\r\n", "ERROR\r\n", ""},
      {"lru_crawler tocrawl 0 noreply\r\n", "ERROR\r\n", ""},
      {"slabs x noreply\r\n", "ERROR\r\n", ""},
      {"shutdown noreply\r\n", "ERROR: shutdown not enabled\r\n", ""},
      {"slabs automove 3 noreply\r\n", "", ""},
  };
  for (Compat compat : {Compat::k1618, Compat::k1645}) {
    server_.settings.compat = compat;
    Executor executor(&store_, &server_, &stats_);
    for (const Row& row : rows) {
      outcome_ = executor.Process(row.request, &out_, SIZE_MAX, 0);
      EXPECT_EQ(Drain(&out_), compat == Compat::k1618 ? row.as_1618 : row.as_1645) << row.request;
    }
  }
  uint32_t kinds = 0;
  EXPECT_FALSE(ParseWatchKinds("f", &kinds));
  EXPECT_TRUE(ParseWatchKinds("f s", &kinds, /*prefix=*/true));
  EXPECT_EQ(kinds, uint32_t{kWatchFetchers | kWatchSysEvents});   // s: sysevents, memcached's first
}

}  // namespace
}  // namespace herdless
