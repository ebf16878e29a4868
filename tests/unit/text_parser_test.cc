#include "protocol/text_parser.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace herdless {
namespace {

constexpr size_t kTestMaxValue = 100;

size_t TestMaxValue(const void*, size_t) { return kTestMaxValue; }

ParserLimits TestLimits() {
  ParserLimits limits;
  limits.max_value_length = &TestMaxValue;
  return limits;
}

class TextParserTest : public ::testing::Test {
 protected:
  // Parses a copy of `in` kept until the next call, so req_'s views stay
  // valid while the test looks at them.
  ParseResult Parse(std::string_view in) {
    input_.assign(in.data(), in.size());
    return ParseRequest(input_.data(), input_.size(), TestLimits(), req_.get());
  }

  // A result that must be an error reply; returns its text.
  std::string ErrorOf(std::string_view in) {
    const ParseResult r = Parse(in);
    EXPECT_EQ(r.status, ParseStatus::kError) << in;
    return std::string(r.error);
  }

  // Every strict prefix of `in` shorter than `complete` bytes needs more
  // input; from `complete` bytes on, the result equals the whole input's.
  void ExpectPrefixesNeedMore(const std::string& in, size_t complete) {
    const ParseResult full = Parse(in);
    for (size_t k = 0; k < in.size(); ++k) {
      // Copy the prefix so ASan catches any read past its end.
      std::unique_ptr<char[]> copy(new char[k + 1]);
      std::memcpy(copy.get(), in.data(), k);
      Request r;
      const ParseResult part = ParseRequest(copy.get(), k, TestLimits(), &r);
      if (k < complete) {
        EXPECT_EQ(part.status, ParseStatus::kNeedMore) << "prefix " << k << " of " << in;
        EXPECT_EQ(part.consumed, 0u);
      } else {
        EXPECT_EQ(part.status, full.status) << "prefix " << k << " of " << in;
        EXPECT_EQ(part.consumed, full.consumed);
        EXPECT_EQ(part.swallow, full.swallow);
        EXPECT_EQ(part.error, full.error);
      }
    }
  }

  std::string input_;
  std::unique_ptr<Request> req_ = std::make_unique<Request>();
};

// ---- framing ----------------------------------------------------------------

TEST_F(TextParserTest, EmptyInputNeedsMore) {
  const ParseResult r = Parse("");
  EXPECT_EQ(r.status, ParseStatus::kNeedMore);
  EXPECT_EQ(r.consumed, 0u);
}

TEST_F(TextParserTest, LineWithoutNewlineNeedsMore) {
  EXPECT_EQ(Parse("get foo").status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse("get foo\r").status, ParseStatus::kNeedMore);
}

TEST_F(TextParserTest, AcceptsCrLfAndBareLf) {
  ParseResult r = Parse("get foo\r\n");
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, 9u);
  EXPECT_EQ(req_->keys, "foo");
  r = Parse("get foo\n");
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, 8u);
  EXPECT_EQ(req_->keys, "foo");
}

TEST_F(TextParserTest, ConsumesOnlyTheFirstOfPipelinedRequests) {
  const std::string in = "get a\r\nset b 0 0 1\r\nx\r\ndelete b\r\n";
  ParseResult r = Parse(in);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, 7u);
  r = Parse(std::string_view(in).substr(7));
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kSet);
  EXPECT_EQ(r.consumed, 16u);
  r = Parse(std::string_view(in).substr(23));
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kDelete);
}

TEST_F(TextParserTest, EmptyOrShortLinesAreUnknownCommands) {
  EXPECT_EQ(ErrorOf("\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("\n"), "ERROR");
  EXPECT_EQ(ErrorOf(" \n"), "ERROR");
  EXPECT_EQ(ErrorOf("x\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("bogus command\r\n"), "ERROR");
}

TEST_F(TextParserTest, CommandNamesAreCaseSensitive) {
  EXPECT_EQ(ErrorOf("SET a 0 0 1\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("Get a\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("MG a\r\n"), "ERROR");
}

TEST_F(TextParserTest, LeadingAndRepeatedSpacesSeparateWords) {
  ASSERT_EQ(Parse("  get   a  b \r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->keys, "a  b");
  ASSERT_EQ(Parse("set  k  1  2  3 \r\nabc\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->key, "k");
  EXPECT_EQ(req_->value, "abc");
}

TEST_F(TextParserTest, OnlySpacesSeparateWordsSoTabsStayInKeys) {
  ASSERT_EQ(Parse("get a\tb\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->keys, "a\tb");
  ASSERT_EQ(Parse("set a\rb 0 0 1\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->key, "a\rb");
}

TEST_F(TextParserTest, NulByteEndsTheCommandLine) {
  const std::string in("get a\0 b\r\nget c\r\n", 17);
  const ParseResult r = Parse(in);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req_->keys, "a");
  EXPECT_EQ(r.consumed, 10u);
  EXPECT_EQ(ErrorOf(std::string("set a\0 0 0 1\r\n", 14)), "ERROR");
}

TEST_F(TextParserTest, OverLongLineWithoutNewlineCloses) {
  const std::string line(2049, 'a');
  EXPECT_EQ(Parse(line).status, ParseStatus::kClose);
  EXPECT_EQ(Parse(line.substr(0, 2048)).status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse("set " + std::string(3000, 'k')).status, ParseStatus::kClose);
}

TEST_F(TextParserTest, OverLongMultigetKeepsWaiting) {
  EXPECT_EQ(Parse("get " + std::string(5000, 'k')).status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse("gets " + std::string(5000, 'k')).status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse(std::string(100, ' ') + "get " + std::string(5000, 'k')).status,
            ParseStatus::kNeedMore);
  EXPECT_EQ(Parse(std::string(101, ' ') + "get " + std::string(5000, 'k')).status,
            ParseStatus::kClose);
  EXPECT_EQ(Parse("gat " + std::string(5000, 'k')).status, ParseStatus::kClose);
}

TEST_F(TextParserTest, LineLengthLimitComesFromLimits) {
  ParserLimits limits = TestLimits();
  limits.max_line_length = 10;
  const std::string in = "version xxxx";
  EXPECT_EQ(ParseRequest(in.data(), in.size(), limits, req_.get()).status, ParseStatus::kClose);
}

TEST_F(TextParserTest, HttpRequestClosesTheConnection) {
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\n").status, ParseStatus::kClose);
  EXPECT_EQ(Parse("POST /x HTTP/1.0\r\n").status, ParseStatus::kClose);
  // memcached's g/s/a/c/i/d/t families answer ERROR before looking.
  EXPECT_EQ(ErrorOf("gx / HTTP/1.1\r\n"), "ERROR");
}

// ---- retrieval ----------------------------------------------------------------

TEST_F(TextParserTest, GetAndGetsCarryTheirKeys) {
  ASSERT_EQ(Parse("get a\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kGet);
  EXPECT_EQ(req_->keys, "a");
  ASSERT_EQ(Parse("gets a b c\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kGets);
  EXPECT_EQ(req_->keys, "a b c");
  ASSERT_EQ(Parse("bget a\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kGet);
}

// A single-key get is read without splitting its line (ParseRequest's
// shortcut); every line here, taken by it or not, parses as the general way
// parses it, the request left behind included (each parse starts from a
// request another command filled).
TEST_F(TextParserTest, SingleKeyGetShortcutAgreesWithTheGeneralParse) {
  const std::string longest(250, 'k');
  const std::vector<std::string> lines = {
      "get k\r\n", "gets k\r\n", "get k\n", "get " + longest + "\r\n", "get " + longest + "k\r\n",
      "get k \r\n", "get  k\r\n", "get k1 k2\r\n", "get \r\n", "get\r\n", "gets\r\n", "gat 0 k\r\n",
      "get k\tx\r\n", std::string("get k\0x\r\n", 10), "get k\rx\r\n", "get k\r\r\n", "GET k\r\n",
      "get k\xc3\xa9\x7f\r\n", "getk\r\n", "gets  \r\n", " get k\r\n", "get noreply\r\n"};
  for (bool latest : {false, true}) {
    ParserLimits limits = TestLimits();
    limits.latest = latest;
    for (const std::string& line : lines) {
      Request shortcut, general;
      for (Request* r : {&shortcut, &general}) {
        const std::string set = "set other 5 7 1 noreply\r\nx\r\n";
        ParseRequest(set.data(), set.size(), limits, r);
      }
      const ParseResult a = ParseRequest(line.data(), line.size(), limits, &shortcut);
      const ParseResult b = ParseRequest(line.data(), line.size(), limits, &general, /*shortcuts=*/false);
      const std::string what = "line \"" + line + "\", latest " + std::to_string(latest);
      EXPECT_EQ(a.status, b.status) << what;
      EXPECT_EQ(a.consumed, b.consumed) << what;
      EXPECT_EQ(a.error, b.error) << what;
      EXPECT_EQ(a.suppress, b.suppress) << what;
      if (a.status != ParseStatus::kRequest) continue;
      EXPECT_EQ(shortcut.command, general.command) << what;
      EXPECT_EQ(shortcut.latest, general.latest) << what;
      EXPECT_EQ(shortcut.noreply, general.noreply) << what;
      EXPECT_EQ(shortcut.key.data(), general.key.data()) << what;
      EXPECT_EQ(shortcut.key.size(), general.key.size()) << what;
      EXPECT_EQ(shortcut.keys.data(), general.keys.data()) << what;
      EXPECT_EQ(shortcut.keys.size(), general.keys.size()) << what;
      EXPECT_EQ(shortcut.client_flags, general.client_flags) << what;
      EXPECT_EQ(shortcut.exptime, general.exptime) << what;
      EXPECT_EQ(shortcut.value_length, general.value_length) << what;
      EXPECT_EQ(shortcut.value.size(), general.value.size()) << what;
      EXPECT_EQ(shortcut.args.size(), general.args.size()) << what;
      EXPECT_EQ(shortcut.meta.count, general.meta.count) << what;
      EXPECT_EQ(shortcut.key_was_base64, general.key_was_base64) << what;
    }
  }
  Request r;
  const std::string get = "gets " + longest + "\r\n";
  ASSERT_EQ(ParseRequest(get.data(), get.size(), TestLimits(), &r).status, ParseStatus::kRequest);
  EXPECT_EQ(r.command, Command::kGets);
  EXPECT_EQ(r.key, longest);
  EXPECT_EQ(r.keys, longest);
}

TEST_F(TextParserTest, GetWithoutKeyIsUnknownCommand) {
  EXPECT_EQ(ErrorOf("get\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("get \r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("gets\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("gat\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("getx a\r\n"), "ERROR");
}

TEST_F(TextParserTest, GetRejectsKeyLongerThan250) {
  const std::string k250(250, 'k');
  ASSERT_EQ(Parse("get " + k250 + "\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->keys, k250);
  EXPECT_EQ(ErrorOf("get a " + std::string(251, 'k') + " b\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, GetChecksKeysBeyondTheTokenWindow) {
  std::string line = "get";
  for (int i = 0; i < 40; ++i) line += " k" + std::to_string(i);
  ASSERT_EQ(Parse(line + "\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->keys, line.substr(4));
  EXPECT_EQ(ErrorOf(line + " " + std::string(251, 'z') + "\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, GatParsesExptimeThenKeys) {
  ASSERT_EQ(Parse("gat 100 a b\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kGat);
  EXPECT_EQ(req_->exptime, 100);
  EXPECT_EQ(req_->keys, "a b");
  ASSERT_EQ(Parse("gats -1 a\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kGats);
  EXPECT_EQ(req_->exptime, -1);
}

TEST_F(TextParserTest, GatWithoutKeysIsValidAndEmpty) {
  ASSERT_EQ(Parse("gat 10\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->keys.empty());
}

TEST_F(TextParserTest, GatRejectsBadExptime) {
  EXPECT_EQ(ErrorOf("gat abc a\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_EQ(ErrorOf("gats 1x a\r\n"), "CLIENT_ERROR invalid exptime argument");
}

// ---- storage --------------------------------------------------------------------

TEST_F(TextParserTest, SetParsesEveryField) {
  const ParseResult r = Parse("set foo 42 300 5\r\nhello\r\n");
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, 25u);
  EXPECT_EQ(r.swallow, 0u);
  EXPECT_EQ(req_->command, Command::kSet);
  EXPECT_EQ(req_->key, "foo");
  EXPECT_EQ(req_->client_flags, 42u);
  EXPECT_EQ(req_->exptime, 300);
  EXPECT_EQ(req_->value_length, 5u);
  EXPECT_EQ(req_->value, "hello");
  EXPECT_FALSE(req_->noreply);
  EXPECT_FALSE(req_->value_too_large);
}

TEST_F(TextParserTest, EveryStorageCommandMapsToItsCommand) {
  const std::pair<const char*, Command> cases[] = {
      {"set", Command::kSet},         {"add", Command::kAdd},
      {"replace", Command::kReplace}, {"append", Command::kAppend},
      {"prepend", Command::kPrepend},
  };
  for (const auto& [name, command] : cases) {
    ASSERT_EQ(Parse(std::string(name) + " k 1 2 3\r\nabc\r\n").status, ParseStatus::kRequest)
        << name;
    EXPECT_EQ(req_->command, command) << name;
    EXPECT_EQ(req_->value, "abc");
  }
}

TEST_F(TextParserTest, CasCarriesItsUnique) {
  ASSERT_EQ(Parse("cas k 0 0 1 18446744073709551615\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kCas);
  EXPECT_EQ(req_->cas_unique, UINT64_MAX);
  ASSERT_EQ(Parse("cas k 0 0 1 7 noreply\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->cas_unique, 7u);
  EXPECT_TRUE(req_->noreply);
}

TEST_F(TextParserTest, CasWithoutUniqueIsUnknownCommand) {
  // memcached's t/cas.t: "cas foo 0 0 6 \r\nbarva2\r\n" gives ERROR twice.
  const std::string in = "cas foo 0 0 6 \r\nbarva2\r\n";
  const ParseResult r = Parse(in);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "ERROR");
  EXPECT_EQ(r.consumed, 16u) << "the data line is left to be parsed as a command";
  EXPECT_EQ(ErrorOf(std::string_view(in).substr(16)), "ERROR");
  EXPECT_EQ(ErrorOf("cas k 0 0 1 bad\r\nx\r\n"), "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, SetAcceptsNoreply) {
  ASSERT_EQ(Parse("set k 0 0 1 noreply\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
}

TEST_F(TextParserTest, SetIgnoresAnExtraWordThatIsNotNoreply) {
  ASSERT_EQ(Parse("set k 0 0 1 foo\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_FALSE(req_->noreply);
  EXPECT_EQ(req_->value, "x");
}

TEST_F(TextParserTest, SetWithWrongWordCountIsUnknownCommand) {
  EXPECT_EQ(ErrorOf("set k 0 0\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("set k 0 0 1 noreply x\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("set\r\n"), "ERROR");
  EXPECT_FALSE(Parse("set k 0 0 1 a b\r\n").suppress) << "ERROR is never suppressed";
}

TEST_F(TextParserTest, SetRejectsBadNumbersWithoutSwallowingTheData) {
  for (const char* line : {"set k x 0 1\r\n", "set k 0 x 1\r\n", "set k 0 0 x\r\n",
                           "set k -1 0 1\r\n", "set k 0 0 -1\r\n", "set k 0 0 4294967295\r\n",
                           "set k 0 0 2147483647\r\n", "set k 0 0 2147483646\r\n"}) {
    const ParseResult r = Parse(line);
    ASSERT_EQ(r.status, ParseStatus::kError) << line;
    EXPECT_EQ(r.error, "CLIENT_ERROR bad command line format") << line;
    EXPECT_EQ(r.consumed, std::string_view(line).size());
    EXPECT_EQ(r.swallow, 0u);
    EXPECT_FALSE(r.suppress);
  }
}

TEST_F(TextParserTest, SetNumbersWrapLikeMemcached) {
  ASSERT_EQ(Parse("set k 4294967297 0 1\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->client_flags, 1u);
  ASSERT_EQ(Parse("set k 0 0 4294967299\r\nabc\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->value, "abc");
  ASSERT_EQ(Parse("set k +1 \t5 1\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->client_flags, 1u);
  EXPECT_EQ(req_->exptime, 5);
}

TEST_F(TextParserTest, SetRejectsKeyLongerThan250) {
  ASSERT_EQ(Parse("set " + std::string(250, 'k') + " 0 0 1\r\nx\r\n").status,
            ParseStatus::kRequest);
  EXPECT_EQ(ErrorOf("set " + std::string(251, 'k') + " 0 0 1\r\nx\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, NoreplySuppressesLaterErrors) {
  ParseResult r = Parse("set " + std::string(251, 'k') + " 0 0 1 noreply\r\n");
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_TRUE(r.suppress);
  // "noreply" where <bytes> belongs: memcached takes it as noreply and then
  // fails the number, silently.
  r = Parse("set k 0 0 noreply\r\nx\r\n");
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "CLIENT_ERROR bad command line format");
  EXPECT_TRUE(r.suppress);
  EXPECT_EQ(r.consumed, 19u);
}

TEST_F(TextParserTest, ZeroLengthValue) {
  const ParseResult r = Parse("set k 0 0 0\r\n\r\n");
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, 15u);
  EXPECT_TRUE(req_->value.empty());
}

TEST_F(TextParserTest, ValueMayHoldAnyBytes) {
  const std::string value("a\r\nb\0\n", 6);
  ASSERT_EQ(Parse("set k 0 0 6\r\n" + value + "\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->value, value);
}

TEST_F(TextParserTest, DataBlockNeedsMoreUntilComplete) {
  EXPECT_EQ(Parse("set k 0 0 5\r\nhel").status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse("set k 0 0 5\r\nhello").status, ParseStatus::kNeedMore);
  EXPECT_EQ(Parse("set k 0 0 5\r\nhello\r").status, ParseStatus::kNeedMore);
}

TEST_F(TextParserTest, BadDataChunkConsumesExactlyTheDeclaredBlock) {
  // memcached reads <bytes>+2 bytes, refuses them, and parses the rest.
  const std::string in = "set k 0 0 3\r\nabcde\r\n";
  const ParseResult r = Parse(in);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "CLIENT_ERROR bad data chunk");
  EXPECT_EQ(r.consumed, 13u + 5u);
  EXPECT_EQ(r.swallow, 0u);
  EXPECT_FALSE(r.suppress);
  EXPECT_EQ(ErrorOf(std::string_view(in).substr(r.consumed)), "ERROR");
}

TEST_F(TextParserTest, DataBlockEndingInBareLfIsBadDataChunk) {
  EXPECT_EQ(ErrorOf("set k 0 0 3\r\nabc\nX"), "CLIENT_ERROR bad data chunk");
}

TEST_F(TextParserTest, NoreplySuppressesBadDataChunk) {
  const ParseResult r = Parse("set k 0 0 3 noreply\r\nabcde\r\n");
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "CLIENT_ERROR bad data chunk");
  EXPECT_TRUE(r.suppress);
}

TEST_F(TextParserTest, TooLargeValueIsSwallowed) {
  const std::string in = "set k 0 0 101\r\n";
  const ParseResult r = Parse(in);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->value_too_large);
  EXPECT_EQ(req_->command, Command::kSet);
  EXPECT_EQ(req_->key, "k");
  EXPECT_TRUE(req_->value.empty());
  EXPECT_EQ(r.consumed, in.size()) << "only the line; the block is swallowed";
  EXPECT_EQ(r.swallow, 103u);
  // Same answer when the block is already buffered.
  const ParseResult with_data = Parse(in + std::string(101, 'v') + "\r\n");
  EXPECT_EQ(with_data.consumed, in.size());
  EXPECT_EQ(with_data.swallow, 103u);
}

TEST_F(TextParserTest, ValueAtTheLimitIsAccepted) {
  ASSERT_EQ(Parse("set k 0 0 100\r\n" + std::string(100, 'v') + "\r\n").status,
            ParseStatus::kRequest);
  EXPECT_FALSE(req_->value_too_large);
  EXPECT_EQ(req_->value.size(), 100u);
}

TEST_F(TextParserTest, TooLargeKeepsNoreplyForTheExecutor) {
  ASSERT_EQ(Parse("append k 0 0 500 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->value_too_large);
  EXPECT_TRUE(req_->noreply);
}

TEST_F(TextParserTest, MaxValueLengthSeesTheKeyLength) {
  ParserLimits limits;
  limits.max_value_length = [](const void* ctx, size_t key_len) -> size_t {
    *static_cast<size_t*>(const_cast<void*>(ctx)) = key_len;
    return 1000;
  };
  size_t seen = 0;
  limits.ctx = &seen;
  const std::string in = "set abcd 0 0 1\r\nx\r\n";
  ASSERT_EQ(ParseRequest(in.data(), in.size(), limits, req_.get()).status, ParseStatus::kRequest);
  EXPECT_EQ(seen, 4u);
}

TEST_F(TextParserTest, NoLimitFunctionMeansNoLimit) {
  ParserLimits limits;
  const std::string in = "set k 0 0 200\r\n" + std::string(200, 'v') + "\r\n";
  ASSERT_EQ(ParseRequest(in.data(), in.size(), limits, req_.get()).status, ParseStatus::kRequest);
  EXPECT_FALSE(req_->value_too_large);
}

// ---- delete, incr/decr, touch ---------------------------------------------------

TEST_F(TextParserTest, DeleteAcceptsLegacyZeroAndNoreply) {
  ASSERT_EQ(Parse("delete k\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kDelete);
  EXPECT_EQ(req_->key, "k");
  EXPECT_FALSE(req_->noreply);
  ASSERT_EQ(Parse("delete k 0\r\n").status, ParseStatus::kRequest);
  EXPECT_FALSE(req_->noreply);
  ASSERT_EQ(Parse("delete k noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  ASSERT_EQ(Parse("delete k 0 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
}

// memcached's proxy forwards `delete k noreply` as `delete k noreplY` and wants the reply.
TEST_F(TextParserTest, DeleteTakesTheProxysNoreplyMarkerAndAnswers) {
  ASSERT_EQ(Parse("delete k noreplY\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->key, "k");
  EXPECT_FALSE(req_->noreply);
  ASSERT_EQ(Parse("delete k 0 noreplY\r\n").status, ParseStatus::kRequest);
  EXPECT_FALSE(req_->noreply);
  const std::string usage = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
  EXPECT_EQ(ErrorOf("delete k 5 noreplY\r\n"), usage);
  EXPECT_EQ(ErrorOf("delete k noreplY 0\r\n"), usage);
  EXPECT_EQ(ErrorOf("delete k NOREPLY\r\n"), usage);
}

TEST_F(TextParserTest, DeleteRejectsOtherArguments) {
  const std::string usage = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
  EXPECT_EQ(ErrorOf("delete k 5\r\n"), usage);
  EXPECT_EQ(ErrorOf("delete k 0 x\r\n"), usage);
  EXPECT_FALSE(Parse("delete k 0 x\r\n").suppress);
  const ParseResult quiet = Parse("delete k 5 noreply\r\n");
  EXPECT_EQ(quiet.error, usage);
  EXPECT_TRUE(quiet.suppress);
  EXPECT_EQ(ErrorOf("delete\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("delete a b c d\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("delete " + std::string(251, 'k') + "\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, IncrDecrParseDelta) {
  ASSERT_EQ(Parse("incr k 18446744073709551615\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kIncr);
  EXPECT_EQ(req_->delta, UINT64_MAX);
  ASSERT_EQ(Parse("decr k 3 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kDecr);
  EXPECT_EQ(req_->delta, 3u);
  EXPECT_TRUE(req_->noreply);
  ASSERT_EQ(Parse("incr k 1 x\r\n").status, ParseStatus::kRequest) << "extra word ignored";
  EXPECT_FALSE(req_->noreply);
}

TEST_F(TextParserTest, IncrDecrRejectBadDelta) {
  const std::string bad = "CLIENT_ERROR invalid numeric delta argument";
  EXPECT_EQ(ErrorOf("incr k x\r\n"), bad);
  EXPECT_EQ(ErrorOf("incr k -1\r\n"), bad);
  EXPECT_EQ(ErrorOf("decr k 18446744073709551616\r\n"), bad);
  EXPECT_TRUE(Parse("incr k x noreply\r\n").suppress);
  EXPECT_EQ(ErrorOf("incr k\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("incr k 1 noreply x\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("incr " + std::string(251, 'k') + " 1\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, TouchParsesExptime) {
  ASSERT_EQ(Parse("touch k 60\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kTouch);
  EXPECT_EQ(req_->key, "k");
  EXPECT_EQ(req_->exptime, 60);
  ASSERT_EQ(Parse("touch k 60 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  EXPECT_EQ(ErrorOf("touch k x\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_TRUE(Parse("touch k x noreply\r\n").suppress);
  EXPECT_EQ(ErrorOf("touch k\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("touch " + std::string(251, 'k') + " 1\r\n"),
            "CLIENT_ERROR bad command line format");
}

// ---- administrative commands --------------------------------------------------

TEST_F(TextParserTest, FlushAllForms) {
  ASSERT_EQ(Parse("flush_all\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kFlushAll);
  EXPECT_FALSE(req_->has_number);
  ASSERT_EQ(Parse("flush_all 10\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->has_number);
  EXPECT_EQ(req_->number, 10);
  ASSERT_EQ(Parse("flush_all noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  EXPECT_FALSE(req_->has_number);
  ASSERT_EQ(Parse("flush_all 5 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  EXPECT_EQ(req_->number, 5);
  ASSERT_EQ(Parse("flush_all 1 2\r\n").status, ParseStatus::kRequest) << "third word ignored";
  EXPECT_EQ(req_->number, 1);
  ASSERT_EQ(Parse("flush_all -1\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->number, -1);
}

TEST_F(TextParserTest, FlushAllErrors) {
  EXPECT_EQ(ErrorOf("flush_all x\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_TRUE(Parse("flush_all x noreply\r\n").suppress);
  EXPECT_EQ(ErrorOf("flush_all 1 2 3\r\n"), "ERROR");
}

TEST_F(TextParserTest, VerbosityForms) {
  ASSERT_EQ(Parse("verbosity 1\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kVerbosity);
  EXPECT_EQ(req_->number, 1);
  ASSERT_EQ(Parse("verbosity 5 x\r\n").status, ParseStatus::kRequest);
  EXPECT_FALSE(req_->noreply);
  ASSERT_EQ(Parse("verbosity 1 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  EXPECT_EQ(ErrorOf("verbosity\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("verbosity invalid\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_TRUE(Parse("verbosity noreply\r\n").suppress);
}

TEST_F(TextParserTest, CacheMemlimitForms) {
  ASSERT_EQ(Parse("cache_memlimit 64\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kCacheMemlimit);
  EXPECT_EQ(req_->number, 64);
  ASSERT_EQ(Parse("cache_memlimit 64 noreply\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->noreply);
  EXPECT_EQ(ErrorOf("cache_memlimit x\r\n"), "ERROR");
  EXPECT_TRUE(Parse("cache_memlimit x noreply\r\n").suppress);
  EXPECT_EQ(ErrorOf("cache_memlimit\r\n"), "ERROR");
}

TEST_F(TextParserTest, StatsCarriesItsArguments) {
  ASSERT_EQ(Parse("stats\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kStats);
  EXPECT_TRUE(req_->args.empty());
  ASSERT_EQ(Parse("stats  detail  on \r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->args, "detail  on");
}

TEST_F(TextParserTest, VersionQuitShutdown) {
  ASSERT_EQ(Parse("version\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kVersion);
  ASSERT_EQ(Parse("version x y\r\n").status, ParseStatus::kRequest);
  ASSERT_EQ(Parse("quit\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kQuit);
  ASSERT_EQ(Parse("shutdown\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kShutdown);
  EXPECT_TRUE(req_->args.empty());
  ASSERT_EQ(Parse("shutdown graceful\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->args, "graceful");
  ASSERT_EQ(Parse("shutdown bogus\r\n").status, ParseStatus::kRequest)
      << "the executor answers (its reply depends on -A)";
  EXPECT_EQ(req_->args, "bogus");
}

// ---- mcrouter leases ------------------------------------------------------------

TEST_F(TextParserTest, LeaseGetTakesOneKey) {
  ASSERT_EQ(Parse("lease-get k\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kLeaseGet);
  EXPECT_EQ(req_->key, "k");
  EXPECT_EQ(ErrorOf("lease-get\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("lease-get a b\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("lease-get " + std::string(251, 'k') + "\r\n"),
            "CLIENT_ERROR bad command line format");
}

TEST_F(TextParserTest, LeaseSetParsesLikeSet) {
  const ParseResult r = Parse("lease-set test:stepan:1 123 1 65 3 noreply\r\nabc\r\n");
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req_->command, Command::kLeaseSet);
  EXPECT_EQ(req_->key, "test:stepan:1");
  EXPECT_EQ(req_->cas_unique, 123u);
  EXPECT_EQ(req_->client_flags, 1u);
  EXPECT_EQ(req_->exptime, 65);
  EXPECT_EQ(req_->value, "abc");
  EXPECT_TRUE(req_->noreply);
}

TEST_F(TextParserTest, LeaseSetErrors) {
  EXPECT_EQ(ErrorOf("lease-set k 1 0 0\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("lease-set k x 0 0 1\r\nx\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("lease-set k 1 0 0 -1\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("lease-set k 1 0 0 3\r\nabcd\r\n"), "CLIENT_ERROR bad data chunk");
  const ParseResult big = Parse("lease-set k 1 0 0 1000\r\n");
  ASSERT_EQ(big.status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->value_too_large);
  EXPECT_EQ(big.swallow, 1002u);
}

// ---- split input ------------------------------------------------------------------

TEST_F(TextParserTest, EveryPrefixOfACompleteRequestNeedsMore) {
  const std::vector<std::string> requests = {
      "get a b c\r\n", "gets a\n", "gat 10 a\r\n", "set k 1 2 5\r\nhello\r\n",
      "cas k 0 0 1 9 noreply\r\nx\r\n", "append k 0 0 0\r\n\r\n", "delete k 0 noreply\r\n",
      "incr k 5\r\n", "touch k 5\r\n", "flush_all 0\r\n", "stats items\r\n", "version\r\n",
      "verbosity 1\r\n", "lease-get k\r\n", "lease-set k 5 0 0 2\r\nab\r\n", "bogus\r\n",
      "delete k x\r\n",
  };
  for (const std::string& in : requests) ExpectPrefixesNeedMore(in, in.size());
  // A bad chunk is decided once <bytes>+2 bytes are there: "abc" + "de".
  ExpectPrefixesNeedMore("set k 0 0 3\r\nabcde\r\n", 18);
}

TEST_F(TextParserTest, TooLargeIsDecidedOnceTheLineIsComplete) {
  const std::string line = "set k 0 0 500\r\n";
  ExpectPrefixesNeedMore(line + "vvvv", line.size());
}

// -o compat=1.6.45: the answers memcached 1.6.45 gave to the same lines
// (tests/integration/test_compare_latest.py replays them against the server).
class LatestParserTest : public ::testing::Test {
 protected:
  ParseResult Parse(std::string_view in) {
    input_.assign(in.data(), in.size());
    ParserLimits limits = TestLimits();
    limits.latest = true;
    return ParseRequest(input_.data(), input_.size(), limits, &req_);
  }
  std::string ErrorOf(std::string_view in) {
    const ParseResult r = Parse(in);
    EXPECT_EQ(r.status, ParseStatus::kError) << in;
    return std::string(r.error);
  }
  std::string input_;
  Request req_;
};

TEST_F(LatestParserTest, ShortAndBlankLinesAreBadFormat) {
  for (const char* line : {"\r\n", " \r\n", "a\r\n", "\n", "get\r\n", "gat 10\r\n", "set a 0 0\r\n",
                           "incr a\r\n", "touch a\r\n", "delete\r\n", "mg\r\n", "md\r\n",
                           "verbosity\r\n"}) {
    EXPECT_EQ(ErrorOf(line), "CLIENT_ERROR bad command line format") << line;
  }
  EXPECT_EQ(ErrorOf("ab\r\n"), "ERROR");   // two bytes: a command word, unknown
  EXPECT_EQ(ErrorOf("bget a\r\n"), "ERROR");
}

TEST_F(LatestParserTest, TrailingWordsAreIgnored) {
  ParseResult r = Parse("set a 0 0 1 noreply extra\r\nx\r\n");
  EXPECT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_FALSE(req_.noreply);   // noreply counts only as the last word
  EXPECT_EQ(req_.value, "x");
  EXPECT_EQ(Parse("touch a 10 x y\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(Parse("verbosity 1 2 3\r\n").status, ParseStatus::kRequest);
  r = Parse("delete a noreply extra\r\n");
  EXPECT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_FALSE(req_.noreply);
  EXPECT_EQ(Parse("delete a 5\r\n").status, ParseStatus::kRequest);
  EXPECT_TRUE(req_.latest);
}

// 1.6.45's token readers: digits only, in range; the flags and exptime of a
// store are still read as 1.6.18 reads them.
TEST_F(LatestParserTest, NumbersAreReadWithTheTokenReaders) {
  EXPECT_EQ(ErrorOf("set a 0 0 +1\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(Parse("set a +0 +0 01\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(ErrorOf("cas a 0 0 1 +1\r\nx\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("incr a +1\r\n"), "CLIENT_ERROR invalid numeric delta argument");
  EXPECT_EQ(ErrorOf("incr a 000000000000000000000001\r\n"),   // 24 characters
            "CLIENT_ERROR invalid numeric delta argument");
  EXPECT_EQ(Parse("incr a 0000000000000000000001\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(ErrorOf("touch a +10\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_EQ(ErrorOf("gat 2147483648 a\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_EQ(ErrorOf("flush_all +0\r\n"), "CLIENT_ERROR invalid exptime argument");
  EXPECT_EQ(ErrorOf("verbosity +1\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("cache_memlimit +100\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("ms a +1\r\nx\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("ms a 1 T+5\r\nx\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg a T\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("md a C+1\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("ma a D\r\n"), "CLIENT_ERROR invalid or duplicate flag");
  EXPECT_EQ(Parse("ms a 1 T-5 F00000000005\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_.meta_args.T, -5);
  EXPECT_EQ(req_.meta_args.F, 5u);
}

TEST_F(LatestParserTest, StorageErrorsSwallowTheBlockOnceItsLengthIsKnown) {
  ParseResult r = Parse("cas a 0 0 1\r\nx\r\n");
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(r.swallow, 3u);
  r = Parse("set a z 0 1\r\nx\r\n");
  EXPECT_EQ(r.swallow, 3u);
  r = Parse("set a 0 0 x\r\n");
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.swallow, 0u);
  EXPECT_TRUE(Parse("cas a 0 0 1 noreply\r\nx\r\n").suppress);
}

TEST_F(LatestParserTest, MdNamesItsFlagErrorAndMTakesTheFirstLetter) {
  EXPECT_EQ(ErrorOf("md a Zz\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("md a q q\r\n"), "CLIENT_ERROR duplicate flag");
  EXPECT_EQ(ErrorOf("ma a Zz\r\n"), "CLIENT_ERROR invalid or duplicate flag");
  EXPECT_EQ(Parse("ms a 1 MSX\r\nx\r\n").status, ParseStatus::kRequest);
  EXPECT_EQ(req_.meta_args.M, 'S');
  EXPECT_EQ(ErrorOf("ms a 1 M\r\nx\r\n"), "CLIENT_ERROR invalid mode for ms M token");
}

// 1.6.45 takes the command word up to the first space: after a leading space
// only its operator commands are found (by the first word); and a last
// "noreply" hides the ERROR of a line it does not know.
TEST_F(LatestParserTest, LeadingSpaceAndNoreplyOnUnknownLines) {
  struct Case {
    const char* line;
    ParseStatus status;
    bool suppress;
  };
  const Case cases[] = {
      {" get a\r\n", ParseStatus::kError, false},
      {"  mn\r\n", ParseStatus::kError, false},
      {" version\r\n", ParseStatus::kError, false},
      {" set a 0 0 1\r\n", ParseStatus::kError, false},   // its data is the next line
      {" incr a 1 noreply\r\n", ParseStatus::kError, true},
      {"   \r\n", ParseStatus::kError, false},
      {" flush_all\r\n", ParseStatus::kRequest, false},
      {" verbosity 1\r\n", ParseStatus::kRequest, false},
      {" verbosity\r\n", ParseStatus::kError, false},   // found: its own bad format
      {"foo noreply\r\n", ParseStatus::kError, true},
      {"GET a noreply\r\n", ParseStatus::kError, true},
      {"foo noreplyx\r\n", ParseStatus::kError, false},
      {"touch noreply\r\n", ParseStatus::kError, false},   // too few words: shown
      {" foo HTTP/1.1\r\n", ParseStatus::kClose, false},
  };
  for (const Case& c : cases) {
    const ParseResult r = Parse(c.line);
    EXPECT_EQ(r.status, c.status) << c.line;
    if (r.status != ParseStatus::kError) continue;
    EXPECT_EQ(r.suppress, c.suppress) << c.line;
    const std::string_view line(c.line);
    const bool bad_format = line.substr(0, 5) == "touch" || line == " verbosity\r\n";
    EXPECT_EQ(r.error, bad_format ? "CLIENT_ERROR bad command line format" : "ERROR") << c.line;
  }
  // 1.6.18 (the default) skips the space and hides no ERROR.
  ParserLimits limits = TestLimits();
  input_ = " get a\r\n";
  EXPECT_EQ(ParseRequest(input_.data(), input_.size(), limits, &req_).status, ParseStatus::kRequest);
  input_ = "foo noreply\r\n";
  EXPECT_FALSE(ParseRequest(input_.data(), input_.size(), limits, &req_).suppress);
}

// 1.6.45's tokenizer gives up on a meta flag word that starts with neither a
// letter ('A'..'z') nor a digit: a bad format, ms's data not swallowed.
TEST_F(LatestParserTest, MetaFlagWordsItCannotTokenize) {
  for (const char* line : {"mg a +x\r\n", "mg a v !\r\n", "md a {\r\n", "ma a -\r\n", "me a ~\r\n",
                           "mg a \x80\r\n", "mg a q q ~\r\n"}) {
    EXPECT_EQ(ErrorOf(line), "CLIENT_ERROR bad command line format") << line;
  }
  const ParseResult r = Parse("ms a 1 ~\r\nx\r\n");
  EXPECT_EQ(r.error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(r.swallow, 0u);
  EXPECT_EQ(ErrorOf("mg a [ _\r\n"), "CLIENT_ERROR invalid flag");   // in 'A'..'z': read, unknown
  EXPECT_EQ(ErrorOf("mx a ~\r\n"), "ERROR");
  EXPECT_EQ(Parse("mg ~ v\r\n").status, ParseStatus::kRequest);   // the key is not a flag
}

}  // namespace
}  // namespace herdless
