// ParseBinaryRequest: table-driven, byte buffers in, status / consumed /
// swallow / decoded fields out (memcached 1.6.18's dispatch_bin_command rules).
#include "protocol/binary_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/unit/test_support.h"

namespace herdless {
namespace {

using namespace binary;

size_t MaxValue(const void*, size_t) { return 1000; }

struct Parsed {
  BinaryParseResult result;
  BinaryRequest request;   // its views point into the caller's string: keep it alive
};

Parsed Parse(const std::string& in) {
  ParserLimits limits;
  limits.max_value_length = &MaxValue;
  Parsed p;
  p.result = ParseBinaryRequest(in.data(), in.size(), limits, &p.request);
  return p;
}

// The wire's numbers are big-endian: each width, read back as written and
// laid out most significant byte first.
TEST(BinaryParserTest, BigEndianNumbers) {
  struct Case {
    uint64_t v;
    const char* bytes;   // the 8-byte form
  };
  const Case cases[] = {
      {0, "\x00\x00\x00\x00\x00\x00\x00\x00"},
      {0x0102030405060708ull, "\x01\x02\x03\x04\x05\x06\x07\x08"},
      {0xfffefdfcfbfaf9f8ull, "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"},
      {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff"},
  };
  for (const Case& c : cases) {
    char b[8];
    binary::StoreBig64(b, c.v);
    EXPECT_EQ(std::string(b, 8), std::string(c.bytes, 8)) << c.v;
    EXPECT_EQ(binary::LoadBig64(b), c.v);
    binary::StoreBig32(b, static_cast<uint32_t>(c.v));
    EXPECT_EQ(std::string(b, 4), std::string(c.bytes + 4, 4)) << c.v;
    EXPECT_EQ(binary::LoadBig32(b), static_cast<uint32_t>(c.v));
    binary::StoreBig16(b, static_cast<uint16_t>(c.v));
    EXPECT_EQ(std::string(b, 2), std::string(c.bytes + 6, 2)) << c.v;
    EXPECT_EQ(binary::LoadBig16(b), static_cast<uint16_t>(c.v));
  }
}

TEST(BinaryParserTest, NeedsTheWholeHeaderExtrasAndKey) {
  const std::string get = Packet(kGet, "key");
  for (size_t n = 0; n < get.size(); ++n) {
    EXPECT_EQ(Parse(get.substr(0, n)).result.status, ParseStatus::kNeedMore) << n;
  }
  const Parsed p = Parse(get);
  EXPECT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_EQ(p.result.consumed, get.size());
  EXPECT_EQ(p.request.key, "key");
}

TEST(BinaryParserTest, StoresWaitForTheirValue) {
  const std::string set = Packet(kSet, "k", Be(7, 4) + Be(60, 4), "hello", 99, 0x01020304);
  EXPECT_EQ(Parse(set.substr(0, set.size() - 1)).result.status, ParseStatus::kNeedMore);
  const std::string in = set + "trailing";
  const Parsed p = Parse(in);
  ASSERT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_EQ(p.result.consumed, set.size());
  EXPECT_EQ(p.request.command, kSet);
  EXPECT_FALSE(p.request.quiet);
  EXPECT_EQ(p.request.flags, 7u);
  EXPECT_EQ(p.request.exptime, 60u);
  EXPECT_EQ(p.request.cas, 99u);
  EXPECT_EQ(p.request.value, "hello");
  EXPECT_EQ(Be(p.request.opaque, 4), Be(0x04030201, 4)) << "raw bytes, echoed as they came";
}

TEST(BinaryParserTest, QuietOpcodesFoldIntoTheirLoudOnes) {
  struct {
    uint8_t quiet, loud;
    std::string extras;
    std::string value;
  } cases[] = {
      {kGetQ, kGet, "", ""},           {kGetKQ, kGetK, "", ""},
      {kSetQ, kSet, std::string(8, '\0'), "v"}, {kAddQ, kAdd, std::string(8, '\0'), "v"},
      {kReplaceQ, kReplace, std::string(8, '\0'), "v"},
      {kDeleteQ, kDelete, "", ""},     {kIncrementQ, kIncrement, std::string(20, '\0'), ""},
      {kDecrementQ, kDecrement, std::string(20, '\0'), ""},
      {kAppendQ, kAppend, "", "v"},    {kPrependQ, kPrepend, "", "v"},
      {kGatQ, kGat, std::string(4, '\0'), ""}, {kGatKQ, kGatK, std::string(4, '\0'), ""},
  };
  for (const auto& c : cases) {
    const Parsed p = Parse(Packet(c.quiet, "k", c.extras, c.value));
    ASSERT_EQ(p.result.status, ParseStatus::kRequest) << int(c.quiet);
    EXPECT_EQ(p.request.command, c.loud) << int(c.quiet);
    EXPECT_EQ(p.request.opcode, c.quiet);
    EXPECT_TRUE(p.request.quiet);
  }
  const Parsed quit = Parse(Packet(kQuitQ));
  EXPECT_EQ(quit.request.command, kQuit);
  const Parsed flush = Parse(Packet(kFlushQ));
  EXPECT_EQ(flush.request.command, kFlush);
}

TEST(BinaryParserTest, IncrementExtras) {
  const Parsed p = Parse(Packet(kIncrement, "n", Be(5, 8) + Be(100, 8) + Be(0xffffffff, 4)));
  ASSERT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_EQ(p.request.delta, 5u);
  EXPECT_EQ(p.request.initial, 100u);
  EXPECT_EQ(p.request.exptime, kNoAutoCreate);
}

TEST(BinaryParserTest, FlushExtrasAreOptional) {
  EXPECT_FALSE(Parse(Packet(kFlush)).request.has_exptime);
  const Parsed p = Parse(Packet(kFlush, "", Be(30, 4)));
  EXPECT_TRUE(p.request.has_exptime);
  EXPECT_EQ(p.request.exptime, 30u);
}

TEST(BinaryParserTest, BadMagicClosesWithoutAReply) {
  EXPECT_EQ(Parse(Packet(kNoop, "", "", "", 0, 0, -1, -1, -1, 0x81)).result.status,
            ParseStatus::kClose);
  EXPECT_EQ(Parse("get k\r\n" + std::string(30, ' ')).result.status, ParseStatus::kClose);
}

// Lengths an opcode does not allow: "Invalid arguments", then close.
TEST(BinaryParserTest, InvalidShapesAreInvalidArgumentsAndClose) {
  const std::string ext4(4, '\0'), ext8(8, '\0'), ext20(20, '\0');
  const std::string bad[] = {
      Packet(kGet, "k", ext4),         Packet(kGet),
      Packet(kGet, "k", "", "x"),      Packet(kSet, "k", ext4, "v"),
      Packet(kSet, "", ext8, "v"),     Packet(kIncrement, "k", ext8),
      Packet(kIncrement, "k", ext20, "v"), Packet(kDelete, "k", ext4),
      Packet(kDelete),                 Packet(kAppend, "k", ext4, "v"),
      Packet(kTouch, "k"),             Packet(kGat, "", ext4),
      Packet(kNoop, "", "", "x"),      Packet(kVersion, "k"),
      Packet(kQuit, "", ext4),         Packet(kFlush, "", std::string(2, '\0')),
      Packet(kFlush, "k"),             Packet(kStat, "", ext4),
      Packet(kSaslAuth, "", "", "x"),  Packet(kSaslListMechs, "k"),
      Packet(kGet, std::string(251, 'k')),
  };
  for (const std::string& in : bad) {
    const Parsed p = Parse(in);
    EXPECT_EQ(p.result.status, ParseStatus::kError) << int(in[1]);
    EXPECT_EQ(p.result.error, kInvalidArguments) << int(in[1]);
    EXPECT_TRUE(p.result.close) << int(in[1]);
    EXPECT_EQ(p.result.opcode, static_cast<uint8_t>(in[1]));
  }
}

TEST(BinaryParserTest, KeyAndExtrasBeyondTheBodyAreUnknownCommandAndClose) {
  for (const std::string& in : {Packet(kGet, "abc", "", "", 0, 0, -1, -1, 2),
                                Packet(kSet, "abc", std::string(8, '\0'), "", 0, 0, -1, -1, 10)}) {
    const Parsed p = Parse(in);
    EXPECT_EQ(p.result.status, ParseStatus::kError);
    EXPECT_EQ(p.result.error, kUnknownCommand);
    EXPECT_TRUE(p.result.close);
  }
}

TEST(BinaryParserTest, UnknownOpcodeSwallowsItsBodyAfterExtrasAndKey) {
  const Parsed p = Parse(Packet(0x1b, "ab", Be(1, 4), "xyz"));
  EXPECT_EQ(p.result.status, ParseStatus::kError);
  EXPECT_EQ(p.result.error, kUnknownCommand);
  EXPECT_FALSE(p.result.close);
  EXPECT_EQ(p.result.consumed, kHeaderSize + 4 + 2);
  EXPECT_EQ(p.result.swallow, 4u + 2 + 3);   // memcached's body length, as it does
}

TEST(BinaryParserTest, ATooLargeValueIsSwallowedNotBuffered) {
  const std::string head = Packet(kSet, "k", std::string(8, '\0'), "", 0, 0, -1, -1, 9 + 1001);
  const Parsed p = Parse(head);
  ASSERT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_TRUE(p.request.value_too_large);
  EXPECT_EQ(p.result.consumed, head.size());
  EXPECT_EQ(p.result.swallow, 1001u);
  const Parsed fits = Parse(Packet(kAppend, "k", "", std::string(1000, 'v')));
  EXPECT_FALSE(fits.request.value_too_large);
}

TEST(BinaryParserTest, BodyBeyondKeyOfAPlainCommandIsTheNextRequest) {
  // memcached reads only header, extras and key of a Stat; the rest of the
  // declared body is parsed as what follows.
  const Parsed p = Parse(Packet(kStat, "", "", "", 0, 0, -1, -1, 24) + Packet(kNoop));
  ASSERT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_EQ(p.result.consumed, kHeaderSize);
  const Parsed gat = Parse(Packet(kGat, "k", Be(10, 4), "zz"));
  EXPECT_EQ(gat.result.consumed, kHeaderSize + 4 + 1);
}

TEST(BinaryParserTest, AnyKeyBytesAreAccepted) {
  const std::string key("a b\0\r\n\xff", 7);
  const std::string in = Packet(kGet, key);
  const Parsed p = Parse(in);
  ASSERT_EQ(p.result.status, ParseStatus::kRequest);
  EXPECT_EQ(p.request.key, key);
  EXPECT_EQ(Parse(Packet(kGet, std::string(250, 'k'))).result.status, ParseStatus::kRequest);
}

TEST(BinaryParserTest, StatusMessagesAreMemcachedsWords) {
  EXPECT_EQ(BinaryStatusMessage(kKeyNotFound), "Not found");
  EXPECT_EQ(BinaryStatusMessage(kKeyExists), "Data exists for key.");
  EXPECT_EQ(BinaryStatusMessage(kTooLarge), "Too large.");
  EXPECT_EQ(BinaryStatusMessage(kInvalidArguments), "Invalid arguments");
  EXPECT_EQ(BinaryStatusMessage(kNotStored), "Not stored.");
  EXPECT_EQ(BinaryStatusMessage(kNonNumeric), "Non-numeric server-side value for incr or decr");
  EXPECT_EQ(BinaryStatusMessage(kAuthError), "Auth failure.");
  EXPECT_EQ(BinaryStatusMessage(kUnknownCommand), "Unknown command");
  EXPECT_EQ(BinaryStatusMessage(kOutOfMemory), "Out of memory");
}

}  // namespace
}  // namespace herdless
