#include "protocol/numbers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace herdless {
namespace {

// herdless's own formats: the whole text, digits and a '-' for signed types only.
TEST(NumbersTest, ParseWholeNumberTakesTheWholeTextOrNothing) {
  struct Row { const char* text; bool ok; int64_t value; };
  const Row rows[] = {
      {"0", true, 0}, {"11211", true, 11211}, {"-1", true, -1},
      {"9223372036854775807", true, INT64_MAX}, {"9223372036854775808", false, 7},
      {"", false, 7}, {"+1", false, 7}, {" 1", false, 7}, {"1 ", false, 7}, {"12a", false, 7},
      {"-", false, 7}, {"0x10", false, 7},
  };
  for (const Row& row : rows) {
    int64_t v = 7;
    EXPECT_EQ(ParseWholeNumber(row.text, &v), row.ok) << row.text;
    EXPECT_EQ(v, row.value) << row.text;   // unchanged on failure
  }
  uint64_t u = 7;
  EXPECT_FALSE(ParseWholeNumber("-1", &u));
  EXPECT_TRUE(ParseWholeNumber("18446744073709551615", &u));
  EXPECT_EQ(u, UINT64_MAX);
}

TEST(NumbersTest, ParseUint64AcceptsPlainDecimal) {
  uint64_t v = 7;
  ASSERT_TRUE(ParseUint64("0", &v));
  EXPECT_EQ(v, 0u);
  ASSERT_TRUE(ParseUint64("12345", &v));
  EXPECT_EQ(v, 12345u);
  ASSERT_TRUE(ParseUint64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
}

TEST(NumbersTest, ParseUint64RejectsOverflowEmptyAndJunk) {
  uint64_t v = 7;
  EXPECT_FALSE(ParseUint64("18446744073709551616", &v));
  EXPECT_FALSE(ParseUint64("99999999999999999999999", &v));
  EXPECT_FALSE(ParseUint64("", &v));
  EXPECT_FALSE(ParseUint64("+", &v));
  EXPECT_FALSE(ParseUint64("abc", &v));
  EXPECT_FALSE(ParseUint64("12a", &v));
  EXPECT_FALSE(ParseUint64("0x10", &v));
  EXPECT_FALSE(ParseUint64("1.5", &v));
  EXPECT_EQ(v, 7u) << "failure leaves the output alone";
}

TEST(NumbersTest, ParseUint64FollowsStrtoullSignRules) {
  uint64_t v = 0;
  EXPECT_FALSE(ParseUint64("-1", &v)) << "wraps to 2^64-1, which looks negative";
  EXPECT_FALSE(ParseUint64("-5", &v));
  ASSERT_TRUE(ParseUint64("-0", &v));
  EXPECT_EQ(v, 0u);
  ASSERT_TRUE(ParseUint64("+42", &v));
  EXPECT_EQ(v, 42u);
  // strtoull negates in unsigned arithmetic: this lands below 2^63 and passes,
  // as it does in memcached.
  ASSERT_TRUE(ParseUint64("-9223372036854775809", &v));
  EXPECT_EQ(v, 9223372036854775807u);
}

TEST(NumbersTest, WhitespaceAroundDigitsFollowsMemcached) {
  uint64_t v = 0;
  ASSERT_TRUE(ParseUint64("\t5", &v)) << "leading whitespace is skipped";
  EXPECT_EQ(v, 5u);
  ASSERT_TRUE(ParseUint64("5\r", &v)) << "trailing whitespace ends the number";
  EXPECT_EQ(v, 5u);
  ASSERT_TRUE(ParseUint64("6\tjunk", &v)) << "anything after that whitespace is ignored";
  EXPECT_EQ(v, 6u);
  EXPECT_FALSE(ParseUint64("\t", &v));
}

TEST(NumbersTest, ParseInt64RangeAndSigns) {
  int64_t v = 0;
  ASSERT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  ASSERT_TRUE(ParseInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_FALSE(ParseInt64("9223372036854775808", &v));
  EXPECT_FALSE(ParseInt64("-9223372036854775809", &v));
  ASSERT_TRUE(ParseInt64("-17", &v));
  EXPECT_EQ(v, -17);
  EXPECT_FALSE(ParseInt64("--1", &v));
}

TEST(NumbersTest, ParseUint32KeepsLowBitsLikeMemcachedOn64Bit) {
  uint32_t v = 0;
  ASSERT_TRUE(ParseUint32("4294967295", &v));
  EXPECT_EQ(v, UINT32_MAX);
  ASSERT_TRUE(ParseUint32("4294967297", &v));
  EXPECT_EQ(v, 1u);
  EXPECT_FALSE(ParseUint32("-1", &v));
  EXPECT_FALSE(ParseUint32("18446744073709551616", &v));
}

TEST(NumbersTest, ParseInt32KeepsLowBitsLikeMemcachedOn64Bit) {
  int32_t v = 0;
  ASSERT_TRUE(ParseInt32("-2147483648", &v));
  EXPECT_EQ(v, INT32_MIN);
  ASSERT_TRUE(ParseInt32("4294967295", &v));
  EXPECT_EQ(v, -1);
  ASSERT_TRUE(ParseInt32("4294967299", &v));
  EXPECT_EQ(v, 3);
  ASSERT_TRUE(ParseInt32("-1", &v));
  EXPECT_EQ(v, -1);
  EXPECT_FALSE(ParseInt32("9223372036854775808", &v));
}

TEST(NumbersTest, ParseDoubleAcceptsDecimalsOnly) {
  double v = 0;
  ASSERT_TRUE(ParseDouble("1", &v));
  EXPECT_EQ(v, 1.0);
  ASSERT_TRUE(ParseDouble("1.5", &v));
  EXPECT_EQ(v, 1.5);
  ASSERT_TRUE(ParseDouble("2e-1", &v));
  EXPECT_DOUBLE_EQ(v, 0.2);
  ASSERT_TRUE(ParseDouble("-3", &v));
  EXPECT_EQ(v, -3.0);
  EXPECT_FALSE(ParseDouble("", &v));
  EXPECT_FALSE(ParseDouble("inf", &v));
  EXPECT_FALSE(ParseDouble("nan", &v));
  EXPECT_FALSE(ParseDouble("1e999", &v));
  EXPECT_FALSE(ParseDouble("1.5x", &v));
  EXPECT_FALSE(ParseDouble(" 1", &v));
  EXPECT_FALSE(ParseDouble("+1", &v));
  EXPECT_FALSE(ParseDouble(".5", &v));
}

// memcached's safe_strtod: strtod's syntax, whitespace or the end after it.
TEST(NumbersTest, ParseStrtodAcceptsWhatSafeStrtodAccepts) {
  struct Case {
    const char* text;
    bool ok;
    double value;
  } cases[] = {{"1", true, 1},     {".5", true, 0.5},   {"+1", true, 1},    {" 2", true, 2},
               {"1e1", true, 10},  {"0x10", true, 16},  {"-3", true, -3},   {"1.5\t", true, 1.5},
               {"", false, 0},     {"x", false, 0},     {"1.5x", false, 0}, {"1e999", false, 0},
               {"1e-400", false, 0}};
  for (const Case& c : cases) {
    double v = -99;
    EXPECT_EQ(ParseStrtod(c.text, &v), c.ok) << c.text;
    if (c.ok) {
      EXPECT_DOUBLE_EQ(v, c.value) << c.text;
    }
  }
  double v = 0;
  ASSERT_TRUE(ParseStrtod("inf", &v));
  EXPECT_TRUE(std::isinf(v));
  ASSERT_TRUE(ParseStrtod("nan", &v));
  EXPECT_TRUE(std::isnan(v));
}

// 1.6.45's token readers: digits only, at most 11 characters, in range.
TEST(NumbersTest, ParseTokenNumbersTakeDigitsOnly) {
  struct Case {
    const char* text;
    bool ok_unsigned;
    bool ok_signed;
    int64_t value;
  } cases[] = {{"0", true, true, 0},
               {"42", true, true, 42},
               {"4294967295", true, false, 4294967295},
               {"4294967296", false, false, 0},
               {"2147483647", true, true, 2147483647},
               {"-2147483648", false, true, -2147483648LL},
               {"-2147483649", false, false, 0},
               {"-1", false, true, -1},
               {"+1", false, false, 0},
               {" 1", false, false, 0},
               {"1x", false, false, 0},
               {"000000000001", false, false, 0}};   // 12 characters
  for (const Case& c : cases) {
    uint32_t u = 7;
    int32_t i = 7;
    EXPECT_EQ(ParseTokenUint32(c.text, &u), c.ok_unsigned) << c.text;
    EXPECT_EQ(ParseTokenInt32(c.text, &i), c.ok_signed) << c.text;
    if (c.ok_unsigned) {
      EXPECT_EQ(u, static_cast<uint32_t>(c.value)) << c.text;
    }
    if (c.ok_signed) {
      EXPECT_EQ(i, c.value) << c.text;
    }
  }
}

TEST(NumbersTest, TokenUint64AndTheVersionChoice) {
  uint64_t u = 7;
  EXPECT_TRUE(ParseTokenUint64("18446744073709551615", &u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(ParseTokenUint64("18446744073709551616", &u));
  EXPECT_TRUE(ParseTokenUint64("0000000000000000000001", &u));   // 22 characters
  EXPECT_FALSE(ParseTokenUint64("00000000000000000000001", &u));
  EXPECT_FALSE(ParseTokenUint64("+1", &u));
  EXPECT_TRUE(ParseUint64As("+1", /*latest=*/false, &u));
  EXPECT_FALSE(ParseUint64As("+1", /*latest=*/true, &u));
  uint32_t v;
  EXPECT_TRUE(ParseUint32As("4294967297", false, &v));   // safe_strtoul's low 32 bits
  EXPECT_EQ(v, 1u);
  EXPECT_FALSE(ParseUint32As("4294967297", true, &v));
  int32_t i;
  EXPECT_TRUE(ParseInt32As(" 5", false, &i));
  EXPECT_FALSE(ParseInt32As(" 5", true, &i));
}

TEST(NumbersTest, FormatUint64WritesDecimalAndReturnsEnd) {
  const uint64_t cases[] = {0, 7, 10, 99, 100, 101, 12345, 1000000, 4294967296u, UINT64_MAX};
  for (uint64_t v : cases) {
    char buf[kMaxUint64Digits + 1];
    buf[kMaxUint64Digits] = 'X';
    char* end = FormatUint64(v, buf);
    EXPECT_EQ(std::string(buf, end), std::to_string(v));
    EXPECT_EQ(buf[kMaxUint64Digits], 'X') << "writes no terminator past the digits";
  }
  // Every digit count at its edges: 10^k - 1, 10^k, 10^k + 1, and the powers of two.
  std::vector<uint64_t> edges = {1, 2, 3};
  for (uint64_t p = 10; p <= 10000000000000000000ull; p *= 10) {
    edges.insert(edges.end(), {p - 1, p, p + 1});
    if (p > UINT64_MAX / 10) break;
  }
  for (int bit = 0; bit < 64; ++bit) edges.insert(edges.end(), {(1ull << bit) - 1, 1ull << bit});
  for (uint64_t v : edges) {
    char buf[kMaxUint64Digits];
    EXPECT_EQ(std::string(buf, FormatUint64(v, buf)), std::to_string(v));
  }
  // Every number of up to six digits (the short ones take paths of their own).
  for (uint64_t v = 0; v < 1000000; ++v) {
    char buf[kMaxUint64Digits];
    ASSERT_EQ(std::string(buf, FormatUint64(v, buf)), std::to_string(v));
  }
}

TEST(NumbersTest, FormatInt64WritesSignAndMagnitude) {
  const int64_t cases[] = {0, 1, -1, 9, -10, 99, -100, 12345, -4294967296, INT64_MAX, INT64_MIN,
                           INT64_MIN + 1};
  for (int64_t v : cases) {
    char buf[kMaxUint64Digits + 2];
    buf[kMaxUint64Digits + 1] = 'X';
    EXPECT_EQ(std::string(buf, FormatInt64(v, buf)), std::to_string(v));
    EXPECT_EQ(buf[kMaxUint64Digits + 1], 'X') << "writes no terminator past the digits";
  }
}

TEST(NumbersTest, FormatReadRateHasTwoDecimalsRounded) {
  const struct {
    double rate;
    const char* text;
  } cases[] = {{0, "0.00"}, {-1, "0.00"}, {0.004, "0.00"}, {0.005, "0.01"}, {1, "1.00"},
               {23.714, "23.71"}, {99.999, "100.00"}, {12345.678, "12345.68"}};
  for (const auto& c : cases) {
    char buf[kMaxRateChars];
    char* end = FormatReadRate(c.rate, buf);
    EXPECT_EQ(std::string(buf, end), c.text) << c.rate;
  }
  char buf[kMaxRateChars];
  EXPECT_LE(FormatReadRate(1e300, buf) - buf, kMaxRateChars);
}

TEST(NumbersTest, FormatThenParseRoundTrips) {
  for (uint64_t v = 1; v != 0 && v < UINT64_MAX / 3; v = v * 3 + 1) {
    char buf[kMaxUint64Digits];
    char* end = FormatUint64(v, buf);
    uint64_t back = 0;
    ASSERT_TRUE(ParseUint64(std::string_view(buf, static_cast<size_t>(end - buf)), &back));
    EXPECT_EQ(back, v);
  }
}

}  // namespace
}  // namespace herdless
