#include "protocol/meta_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "protocol/key.h"
#include "protocol/text_parser.h"

namespace herdless {
namespace {

size_t TestMaxValue(const void*, size_t) { return 100; }

class MetaParserTest : public ::testing::Test {
 protected:
  // Parses a copy of `in` kept until the next call (req_'s views point into it).
  ParseResult Parse(std::string_view in) {
    input_.assign(in.data(), in.size());
    ParserLimits limits;
    limits.max_value_length = &TestMaxValue;
    return ParseRequest(input_.data(), input_.size(), limits, req_.get());
  }

  const Request& Ok(std::string_view in) {
    const ParseResult r = Parse(in);
    EXPECT_EQ(r.status, ParseStatus::kRequest) << in << " -> " << r.error;
    EXPECT_EQ(r.consumed, in.size()) << in;
    return *req_;
  }

  std::string ErrorOf(std::string_view in) {
    const ParseResult r = Parse(in);
    EXPECT_EQ(r.status, ParseStatus::kError) << in;
    EXPECT_FALSE(r.suppress) << "meta errors are always sent";
    return std::string(r.error);
  }

  // `head` followed by n distinct valid flags (n <= 19).
  static std::string WithFlags(std::string head, int n) {
    static const char* const kFlags[] = {"c", "f", "h", "k", "l", "q", "s", "t", "u", "v",
                                         "P", "L", "I", "O", "T1", "N1", "R1", "C1", "F1"};
    for (int i = 0; i < n; ++i) {
      head += ' ';
      head += kFlags[i];
    }
    return head;
  }

  std::string input_;
  std::unique_ptr<Request> req_ = std::make_unique<Request>();
};

// ---- mg ------------------------------------------------------------------------

TEST_F(MetaParserTest, MgWithoutFlags) {
  const Request& r = Ok("mg foo\r\n");
  EXPECT_EQ(r.command, Command::kMetaGet);
  EXPECT_EQ(r.key, "foo");
  EXPECT_EQ(r.meta.count, 0);
  EXPECT_FALSE(r.noreply) << "q is the executor's business, not noreply";
}

TEST_F(MetaParserTest, MgKeepsFlagsInRequestOrder) {
  const Request& r = Ok("mg foo v T30 k Oab t c\r\n");
  ASSERT_EQ(r.meta.count, 6);
  const char names[] = {'v', 'T', 'k', 'O', 't', 'c'};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.meta.list[i].name, names[i]);
  EXPECT_EQ(r.meta.list[1].token, "30");
  EXPECT_EQ(r.meta.Token('O'), "ab");
  EXPECT_TRUE(r.meta.Has('v'));
  EXPECT_FALSE(r.meta.Has('f'));
  EXPECT_EQ(r.meta_args.T, 30);
  EXPECT_EQ(r.meta_args.O, "ab");
}

TEST_F(MetaParserTest, MgAcceptsEveryReturnFlag) {
  const Request& r = Ok("mg Zm9v b c f h k l q s t u v P L\r\n");
  EXPECT_EQ(r.meta.count, 13);
  EXPECT_EQ(r.key, "foo");
}

TEST_F(MetaParserTest, MgParsesNumericTokens) {
  const Request& r = Ok("mg foo N30 R-5 T0 Y1.5\r\n");
  EXPECT_EQ(r.meta_args.N, 30);
  EXPECT_EQ(r.meta_args.R, -5);
  EXPECT_EQ(r.meta_args.T, 0);
  EXPECT_EQ(r.meta_args.Y, 1.5);
  EXPECT_TRUE(r.meta.Has('Y'));
}

TEST_F(MetaParserTest, OneFlagTableServesEveryCommandLikeMemcached1618) {
  // 1.6.18 checks one table for all meta commands: ms/ma flags on mg are
  // accepted and left for the executor to ignore.
  const Request& r = Ok("mg foo F5 I MS C9 D2 J3\r\n");
  EXPECT_EQ(r.meta_args.F, 5u);
  EXPECT_EQ(r.meta_args.M, 'S');
  EXPECT_EQ(r.meta_args.C, 9u);
  EXPECT_EQ(r.meta_args.D, 2u);
  EXPECT_EQ(r.meta_args.J, 3u);
}

TEST_F(MetaParserTest, YIsHerdlessOnlyOnMg) {
  EXPECT_EQ(ErrorOf("mg foo Y0\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Y-1\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Yx\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Y\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(Ok("mg foo Y2\r\n").meta_args.Y, 2.0);
  EXPECT_EQ(ErrorOf("ms foo 1 Y1\r\nx\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("md foo Y1\r\n"), "CLIENT_ERROR invalid or duplicate flag");
}

TEST_F(MetaParserTest, YrAsksForRefreshAheadWithOrWithoutXFetch) {
  const Request& a = Ok("mg foo Yr v\r\n");
  EXPECT_TRUE(a.meta_args.Y_refresh);
  EXPECT_EQ(a.meta_args.Y, 0.0);
  const Request& b = Ok("mg foo Yr1.5\r\n");
  EXPECT_TRUE(b.meta_args.Y_refresh);
  EXPECT_EQ(b.meta_args.Y, 1.5);
  const Request& c = Ok("mg foo Y2\r\n");
  EXPECT_FALSE(c.meta_args.Y_refresh);
  EXPECT_EQ(ErrorOf("mg foo Yr0\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Yrr\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Y1r\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Yr Yr\r\n"), "CLIENT_ERROR duplicate flag");
}

TEST_F(MetaParserTest, RateFlagIsHerdlessOnlyOnMg) {
  const Request& r = Ok("mg foo r v\r\n");
  EXPECT_TRUE(r.meta.Has('r'));
  EXPECT_EQ(ErrorOf("ms foo 1 r\r\nx\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("md foo r\r\n"), "CLIENT_ERROR invalid or duplicate flag");
  EXPECT_EQ(ErrorOf("ma foo r\r\n"), "CLIENT_ERROR invalid or duplicate flag");
}

// E (1.6.19+) and x (1.6.19+) are accepted on every meta command, as 1.6.45's
// one flag table does; E's token is a uint64.
TEST_F(MetaParserTest, ECarriesTheClientsCasAndXIsAFlag) {
  EXPECT_EQ(Ok("mg foo N30 E5\r\n").meta_args.E, 5u);
  EXPECT_EQ(Ok("ms foo 1 E18446744073709551615\r\nx\r\n").meta_args.E, UINT64_MAX);
  EXPECT_EQ(Ok("ma foo E7\r\n").meta_args.E, 7u);
  const Request& r = Ok("md foo x I E9 F3 T30\r\n");
  EXPECT_TRUE(r.meta.Has('x'));
  EXPECT_EQ(r.meta_args.E, 9u);
  EXPECT_EQ(ErrorOf("mg foo E\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo E-1\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo x x\r\n"), "CLIENT_ERROR duplicate flag");
  EXPECT_EQ(ErrorOf("md foo Ez\r\n"), "CLIENT_ERROR invalid or duplicate flag");
}

TEST_F(MetaParserTest, UnknownFlag) {
  EXPECT_EQ(ErrorOf("mg foo z\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("mg foo m o o o o o o o o o\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("mg foo 1\r\n"), "CLIENT_ERROR invalid flag");
}

TEST_F(MetaParserTest, DuplicateFlag) {
  EXPECT_EQ(ErrorOf("mg foo v v\r\n"), "CLIENT_ERROR duplicate flag");
  EXPECT_EQ(ErrorOf("mg foo T1 T2\r\n"), "CLIENT_ERROR duplicate flag");
  // memcached treats bytes >= 127 as duplicates.
  EXPECT_EQ(ErrorOf("mg foo \xff\r\n"), "CLIENT_ERROR duplicate flag");
}

TEST_F(MetaParserTest, FirstInvalidOrDuplicateFlagWinsOverEarlierBadTokens) {
  EXPECT_EQ(ErrorOf("mg foo Tx z\r\n"), "CLIENT_ERROR invalid flag");
}

TEST_F(MetaParserTest, BadNumericTokensName1618sMessages) {
  EXPECT_EQ(ErrorOf("mg foo Tabc\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo N\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo R1x\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo C-1\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Fabc\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("mg foo Jx\r\n"), "CLIENT_ERROR invalid numeric initial value");
  EXPECT_EQ(ErrorOf("mg foo Dx\r\n"), "CLIENT_ERROR invalid numeric delta value");
  EXPECT_EQ(ErrorOf("mg foo MSS\r\n"), "CLIENT_ERROR incorrect length for M token");
  EXPECT_EQ(ErrorOf("mg foo M\r\n"), "CLIENT_ERROR incorrect length for M token");
}

TEST_F(MetaParserTest, LastBadTokenMessageWins) {
  EXPECT_EQ(ErrorOf("mg foo Jx Tx\r\n"), "CLIENT_ERROR bad token in command line format");
  EXPECT_EQ(ErrorOf("mg foo Tx Jx\r\n"), "CLIENT_ERROR invalid numeric initial value");
  EXPECT_EQ(ErrorOf("mg foo Tx Fx\r\n"), "CLIENT_ERROR bad token in command line format");
}

TEST_F(MetaParserTest, TtlTokensWrapLikeSafeStrtol) {
  EXPECT_EQ(Ok("mg foo T4294967306\r\n").meta_args.T, 10);
}

TEST_F(MetaParserTest, TooManyTokens) {
  // ntokens (command, key, flags, terminal) may be at most 20.
  Ok(WithFlags("mg foo", 17) + "\r\n");
  EXPECT_EQ(ErrorOf(WithFlags("mg foo", 18) + "\r\n"), "CLIENT_ERROR options flags are too long");
  EXPECT_EQ(ErrorOf(WithFlags("md foo", 18) + "\r\n"), "CLIENT_ERROR options flags too long");
  EXPECT_EQ(ErrorOf(WithFlags("ma foo", 18) + "\r\n"), "CLIENT_ERROR options flags too long");
  std::string many = "mg foo";
  for (int i = 0; i < 40; ++i) many += " v";
  EXPECT_EQ(ErrorOf(many + "\r\n"), "CLIENT_ERROR options flags are too long");
}

TEST_F(MetaParserTest, OpaqueOfMoreThan31BytesIsTooLong) {
  const std::string o31(31, 'o');
  EXPECT_EQ(Ok("mg foo O" + o31 + "\r\n").meta_args.O, o31);
  EXPECT_EQ(ErrorOf("mg foo O" + o31 + "o\r\n"), "CLIENT_ERROR opaque token too long");
  EXPECT_EQ(ErrorOf("md foo O" + o31 + "o\r\n"), "CLIENT_ERROR opaque token too long");
  EXPECT_EQ(ErrorOf("ma foo O" + o31 + "o\r\n"), "CLIENT_ERROR opaque token too long");
}

TEST_F(MetaParserTest, KeyLongerThan250) {
  const std::string k250(250, 'k');
  EXPECT_EQ(Ok("mg " + k250 + " v\r\n").key, k250);
  const std::string k251(251, 'k');
  EXPECT_EQ(ErrorOf("mg " + k251 + "\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("ms " + k251 + " 1\r\nx\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("md " + k251 + "\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("ma " + k251 + "\r\n"), "CLIENT_ERROR bad command line format");
  EXPECT_EQ(ErrorOf("me " + k251 + "\r\n"), "CLIENT_ERROR bad command line format");
}

TEST_F(MetaParserTest, Base64KeyIsDecoded) {
  const Request& r = Ok("mg Zm9vYg== b k v\r\n");
  EXPECT_TRUE(r.key_was_base64);
  EXPECT_EQ(r.key, "foob");
  EXPECT_EQ(r.key.data(), r.decoded_key);
  EXPECT_EQ(r.decoded_key_length, 4);
}

TEST_F(MetaParserTest, Base64KeyMayHoldAnyByte) {
  const Request& r = Ok("mg AP8gCg== b\r\n");
  EXPECT_EQ(r.key, std::string("\x00\xff \n", 4));
}

TEST_F(MetaParserTest, BadBase64Key) {
  EXPECT_EQ(ErrorOf("mg foo b\r\n"), "CLIENT_ERROR error decoding key");
  EXPECT_EQ(ErrorOf("mg Zm9vZg b\r\n"), "CLIENT_ERROR error decoding key");
  EXPECT_EQ(ErrorOf("mg Zm9v=== b\r\n"), "CLIENT_ERROR error decoding key");
  EXPECT_EQ(ErrorOf("md foo b\r\n"), "CLIENT_ERROR invalid or duplicate flag");
}

TEST_F(MetaParserTest, ShortMetaLines) {
  EXPECT_EQ(ErrorOf("mg\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("ms\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("md\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("ma\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("mx foo\r\n"), "ERROR");
  EXPECT_EQ(ErrorOf("me\r\n"), "CLIENT_ERROR bad command line format");
}

TEST_F(MetaParserTest, ErrorsAreSentEvenWithQ) {
  EXPECT_EQ(ErrorOf("mg foo q z\r\n"), "CLIENT_ERROR invalid flag");
  EXPECT_EQ(ErrorOf("ma foo q MX\r\n"), "CLIENT_ERROR invalid mode for ma M token");
}

// ---- ms ------------------------------------------------------------------------

TEST_F(MetaParserTest, MsCarriesDataAndFlags) {
  const Request& r = Ok("ms foo 5 T30 F7 C12 I MS k c O9 q\r\nhello\r\n");
  EXPECT_EQ(r.command, Command::kMetaSet);
  EXPECT_EQ(r.key, "foo");
  EXPECT_EQ(r.value_length, 5u);
  EXPECT_EQ(r.value, "hello");
  EXPECT_EQ(r.meta_args.T, 30);
  EXPECT_EQ(r.meta_args.F, 7u);
  EXPECT_EQ(r.meta_args.C, 12u);
  EXPECT_EQ(r.meta_args.M, 'S');
  EXPECT_EQ(r.meta_args.O, "9");
  EXPECT_TRUE(r.meta.Has('I'));
  EXPECT_TRUE(r.meta.Has('q'));
  EXPECT_EQ(r.meta.count, 9);
}

TEST_F(MetaParserTest, MsWithBase64Key) {
  const Request& r = Ok("ms Zm9v 2 b\r\nhi\r\n");
  EXPECT_EQ(r.key, "foo");
  EXPECT_EQ(r.value, "hi");
}

TEST_F(MetaParserTest, MsAcceptsEveryMode) {
  for (char mode : std::string("EAPRS")) {
    EXPECT_EQ(Ok(std::string("ms k 1 M") + mode + "\r\nx\r\n").meta_args.M, mode);
  }
}

TEST_F(MetaParserTest, MsDatalenErrorsLeaveTheDataUnswallowed) {
  for (const char* line : {"ms foo\r\n", "ms foo abc\r\n", "ms foo -1\r\n", "ms foo T5\r\n",
                           "ms foo 2147483646\r\n"}) {
    const ParseResult r = Parse(line);
    ASSERT_EQ(r.status, ParseStatus::kError) << line;
    EXPECT_EQ(r.error, "CLIENT_ERROR bad command line format") << line;
    EXPECT_EQ(r.swallow, 0u) << line;
  }
  EXPECT_EQ(ErrorOf(WithFlags("ms foo 1", 17) + "\r\n"), "CLIENT_ERROR options flags too long");
  Ok(WithFlags("ms foo 1", 16) + "\r\nx\r\n");
}

TEST_F(MetaParserTest, MsFlagErrorsSwallowTheData) {
  const std::pair<const char*, const char*> cases[] = {
      {"ms foo 2 z\r\n", "CLIENT_ERROR invalid flag"},
      {"ms foo 2 v v\r\n", "CLIENT_ERROR duplicate flag"},
      {"ms foo 2 Tq\r\n", "CLIENT_ERROR bad token in command line format"},
      {"ms foo 2 Fx\r\n", "CLIENT_ERROR bad command line format"},
      {"ms foo 2 MX\r\n", "CLIENT_ERROR invalid mode for ms M token"},
      {"ms foo 2 MXY\r\n", "CLIENT_ERROR incorrect length for M token"},
      {"ms foo 2 b\r\n", "CLIENT_ERROR error decoding key"},
      {"ms foo 2 O12345678901234567890123456789012\r\n", "CLIENT_ERROR opaque token too long"},
      {"ms foo 2 O12345678901234567890123456789012 MX\r\n",
       "CLIENT_ERROR invalid mode for ms M token"},
  };
  for (const auto& [line, error] : cases) {
    const ParseResult r = Parse(std::string(line) + "xx\r\n");
    ASSERT_EQ(r.status, ParseStatus::kError) << line;
    EXPECT_EQ(r.error, error) << line;
    EXPECT_EQ(r.consumed, std::string_view(line).size()) << line;
    EXPECT_EQ(r.swallow, 4u) << line;
    EXPECT_FALSE(r.suppress);
  }
}

TEST_F(MetaParserTest, MsTooLargeIsSwallowed) {
  const std::string line = "ms foo 101 T5\r\n";
  const ParseResult r = Parse(line);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_TRUE(req_->value_too_large);
  EXPECT_EQ(req_->command, Command::kMetaSet);
  EXPECT_EQ(r.consumed, line.size());
  EXPECT_EQ(r.swallow, 103u);
}

TEST_F(MetaParserTest, MsBadDataChunkIsSentEvenWithQ) {
  const ParseResult r = Parse("ms foo 2 q\r\nxxx\r\n");
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error, "CLIENT_ERROR bad data chunk");
  EXPECT_FALSE(r.suppress);
  EXPECT_EQ(r.consumed, 16u);
}

TEST_F(MetaParserTest, MsNeedsItsDataBlock) {
  const std::string in = "ms foo 3 T1\r\nabc\r\n";
  for (size_t k = 0; k < in.size(); ++k) {
    Request r;
    EXPECT_EQ(ParseRequest(in.data(), k, ParserLimits(), &r).status, ParseStatus::kNeedMore) << k;
  }
  EXPECT_EQ(Ok(in).value, "abc");
}

// ---- md, ma ----------------------------------------------------------------------

TEST_F(MetaParserTest, MdFlags) {
  const Request& r = Ok("md foo q I T30 C5 k O1\r\n");
  EXPECT_EQ(r.command, Command::kMetaDelete);
  EXPECT_EQ(r.meta_args.T, 30);
  EXPECT_EQ(r.meta_args.C, 5u);
  EXPECT_TRUE(r.meta.Has('I'));
}

TEST_F(MetaParserTest, MdReportsEveryFlagErrorAsOne) {
  const std::string message = "CLIENT_ERROR invalid or duplicate flag";
  EXPECT_EQ(ErrorOf("md foo z\r\n"), message);
  EXPECT_EQ(ErrorOf("md foo q q\r\n"), message);
  EXPECT_EQ(ErrorOf("md foo Tabc\r\n"), message);
}

TEST_F(MetaParserTest, MaFlagsAndDefaults) {
  const Request& d = Ok("ma foo\r\n");
  EXPECT_EQ(d.command, Command::kMetaArithmetic);
  EXPECT_EQ(d.meta_args.D, 1u) << "delta defaults to 1";
  EXPECT_EQ(d.meta_args.M, 0);
  const Request& r = Ok("ma foo N0 J10 D5 T9 MD v t c k O2 q\r\n");
  EXPECT_EQ(r.meta_args.J, 10u);
  EXPECT_EQ(r.meta_args.D, 5u);
  EXPECT_EQ(r.meta_args.N, 0);
  EXPECT_EQ(r.meta_args.M, 'D');
}

TEST_F(MetaParserTest, MaModes) {
  for (char mode : std::string("I+D-")) {
    EXPECT_EQ(Ok(std::string("ma k M") + mode + "\r\n").meta_args.M, mode);
  }
  EXPECT_EQ(ErrorOf("ma foo MX\r\n"), "CLIENT_ERROR invalid mode for ma M token");
  EXPECT_EQ(ErrorOf("ma foo Dabc\r\n"), "CLIENT_ERROR invalid or duplicate flag");
  EXPECT_EQ(ErrorOf("ma foo Nx\r\n"), "CLIENT_ERROR invalid or duplicate flag");
}

// ---- mn, me ------------------------------------------------------------------------

TEST_F(MetaParserTest, MnIgnoresItsArguments) {
  EXPECT_EQ(Ok("mn\r\n").command, Command::kMetaNoop);
  EXPECT_EQ(Ok("mn foo bar\r\n").command, Command::kMetaNoop);
}

TEST_F(MetaParserTest, MeTakesAKeyAndOptionalB) {
  const Request& r = Ok("me foo\r\n");
  EXPECT_EQ(r.command, Command::kMetaDebug);
  EXPECT_EQ(r.key, "foo");
  EXPECT_FALSE(r.key_was_base64);
  const Request& b = Ok("me Zm9v b\r\n");
  EXPECT_EQ(b.key, "foo");
  EXPECT_TRUE(b.key_was_base64);
  EXPECT_EQ(Ok("me foo x y\r\n").key, "foo") << "other words are ignored";
  EXPECT_EQ(ErrorOf("me Zm9 b\r\n"), "CLIENT_ERROR bad command line format");
}

TEST_F(MetaParserTest, RequestIsResetBetweenParses) {
  Ok("mg Zm9v b v T5 O1\r\n");
  const Request& r = Ok("mg bar\r\n");
  EXPECT_EQ(r.key, "bar");
  EXPECT_FALSE(r.key_was_base64);
  EXPECT_EQ(r.meta.count, 0);
  EXPECT_EQ(r.meta.present, 0u);
  EXPECT_EQ(r.meta_args.T, 0);
  EXPECT_TRUE(r.meta_args.O.empty());
}

// ---- tokenizer ---------------------------------------------------------------------

TEST(CommandLineTest, SplitsOnSpacesOnly) {
  CommandLine l;
  SplitCommandLine("  a\tb  c ", &l);
  ASSERT_EQ(l.count, 2);
  EXPECT_EQ(l.token[0], "a\tb");
  EXPECT_EQ(l.token[1], "c");
  EXPECT_EQ(l.ntokens(), 3);
  EXPECT_EQ(l.From(1), "c ");
}

TEST(CommandLineTest, StopsAfter23Tokens) {
  std::string line;
  for (int i = 0; i < 30; ++i) line += "t" + std::to_string(i) + " ";
  CommandLine l;
  SplitCommandLine(line, &l);
  EXPECT_EQ(l.count, CommandLine::kMaxTokens);
  EXPECT_EQ(l.token[22], "t22");
}

// SplitCommandLine finds a word's end eight bytes at a time (FindSpace): over
// random lines of every length up to 300, with runs of spaces, tabs and high
// bytes, and more than 23 words, it splits as a plain byte loop does, and
// reads nothing past the line (each in a buffer of its own size, for ASan).
TEST(CommandLineTest, SplitsAsAByteLoopDoes) {
  const auto reference = [](std::string_view line, std::vector<std::string_view>* tokens) {
    size_t i = 0;
    while (tokens->size() < static_cast<size_t>(CommandLine::kMaxTokens)) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i == line.size()) break;
      const size_t start = i;
      while (i < line.size() && line[i] != ' ') ++i;
      tokens->push_back(line.substr(start, i - start));
    }
  };
  std::mt19937 rng(24);
  const std::string alphabet = "  a:\t\x80!\xa0\x1f";
  for (int round = 0; round < 20000; ++round) {
    const size_t length = rng() % 301;
    std::unique_ptr<char[]> buffer(new char[length == 0 ? 1 : length]);
    const int space_share = static_cast<int>(rng() % 8);
    for (size_t i = 0; i < length; ++i) {
      buffer[i] = static_cast<int>(rng() % 8) < space_share ? ' ' : alphabet[rng() % alphabet.size()];
    }
    const std::string_view line(buffer.get(), length);
    std::vector<std::string_view> want;
    reference(line, &want);
    CommandLine l;
    SplitCommandLine(line, &l);
    ASSERT_EQ(l.count, static_cast<int>(want.size())) << "round " << round;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(l.token[i].data(), want[i].data()) << "round " << round << " token " << i;
      ASSERT_EQ(l.token[i].size(), want[i].size()) << "round " << round << " token " << i;
    }
  }
}

// FindSpace and FindSpaceOrControl read eight bytes at a time: the first
// marked byte at every offset of a long word, and none, is found where a byte
// loop finds it. '!' is one above a space (the borrow case), 0xa0 has the high
// bit set.
TEST(FindSpaceTest, FindsTheFirstMarkedByteAtEveryOffset) {
  for (const char fill : {'!', '\xa0', 'k'}) {
    for (const char mark : {' ', '\r', '\n', '\t', '\0'}) {
      for (size_t length = 0; length < 40; ++length) {
        for (size_t at = 0; at <= length; ++at) {
          std::string s(length, fill);
          if (at < length) s[at] = mark;
          if (at + 1 < length) s[at + 1] = ' ';
          for (size_t from = 0; from <= at; ++from) {
            const size_t space = mark == ' ' ? at : std::min(at + 1, length);
            ASSERT_EQ(FindSpace(s, from), space) << "length " << length << " at " << at << " from " << from;
            ASSERT_EQ(FindSpaceOrControl(s, from), at) << "length " << length << " at " << at << " from " << from;
          }
        }
      }
    }
  }
}

// ---- keys and base64 ---------------------------------------------------------------

TEST(KeyTest, ValidKeysAreOneTo250BytesWithoutSpaceNewlineOrNul) {
  EXPECT_TRUE(IsValidKey("a"));
  EXPECT_TRUE(IsValidKey(std::string(250, 'k')));
  EXPECT_TRUE(IsValidKey("a\tb\rc\x01\x7f\xff")) << "memcached accepts control bytes";
  EXPECT_FALSE(IsValidKey(""));
  EXPECT_FALSE(IsValidKey(std::string(251, 'k')));
  EXPECT_FALSE(IsValidKey("a b"));
  EXPECT_FALSE(IsValidKey("a\nb"));
  EXPECT_FALSE(IsValidKey(std::string("a\0b", 3)));
}

TEST(KeyTest, Base64RoundTripsEveryLength) {
  std::string raw;
  for (int n = 0; n < 40; ++n) {
    char enc[64];
    const size_t e = Base64Encode(raw, enc, sizeof(enc));
    EXPECT_EQ(e, (raw.size() + 2) / 3 * 4);
    if (n > 0) {
      char dec[64];
      const size_t d = Base64Decode(std::string_view(enc, e), dec, sizeof(dec));
      EXPECT_EQ(std::string(dec, d), raw);
    }
    raw += static_cast<char>(n * 37 + 200);
  }
}

TEST(KeyTest, Base64KnownVectors) {
  char out[16];
  EXPECT_EQ(std::string(out, Base64Encode("foob", out, sizeof(out))), "Zm9vYg==");
  EXPECT_EQ(std::string(out, Base64Encode("fooba", out, sizeof(out))), "Zm9vYmE=");
  EXPECT_EQ(std::string(out, Base64Decode("Zm9vYmFy", out, sizeof(out))), "foobar");
}

TEST(KeyTest, Base64DecoderIsLenientLikeMemcached) {
  char out[16];
  EXPECT_EQ(std::string(out, Base64Decode("Zm9v!YmFy", out, sizeof(out))), "foobar")
      << "bytes outside the alphabet are skipped";
  EXPECT_EQ(std::string(out, Base64Decode("Zg==Zm9v", out, sizeof(out))), "f")
      << "a padded block ends the input";
  EXPECT_EQ(Base64Decode("", out, sizeof(out)), 0u);
  EXPECT_EQ(Base64Decode("Zm9", out, sizeof(out)), 0u);
  EXPECT_EQ(Base64Decode("====", out, sizeof(out)), 0u);
  EXPECT_EQ(Base64Decode("Zm9vYmFy", out, 5), 0u) << "does not fit";
}

TEST(KeyTest, Base64EncodeRefusesSmallBuffers) {
  char out[7];
  EXPECT_EQ(Base64Encode("foob", out, sizeof(out)), 0u);
}

}  // namespace
}  // namespace herdless
