#include "daemon/log.h"

#include <gtest/gtest.h>

#include <string>

namespace herdless {
namespace {

TEST(LogTest, LineIsUtcTimestampLevelAndText) {
  // 2024-02-29T23:59:58.007Z
  const int64_t ms = 1709251198007;
  EXPECT_EQ(FormatLogLine(LogLevel::kError, ms, "failed to listen"),
            "2024-02-29T23:59:58.007Z error: failed to listen\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, ms, "w"), "2024-02-29T23:59:58.007Z warning: w\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kNotice, ms, "n"), "2024-02-29T23:59:58.007Z notice: n\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, ms, "i"), "2024-02-29T23:59:58.007Z info: i\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kDebug, 0, "d"), "1970-01-01T00:00:00.000Z debug: d\n");
}

TEST(LogTest, OneMessageIsOneLine) {
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, 0, "two\nlines\n"),
            "1970-01-01T00:00:00.000Z warning: two lines\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, 0, "cr\r\n"), "1970-01-01T00:00:00.000Z warning: cr\n");
  std::string longest(5000, 'x');
  std::string line = FormatLogLine(LogLevel::kInfo, 0, longest);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_LT(line.size(), 1100u) << "a runaway message is cut";
}

TEST(LogTest, LevelsFollowMemcachedsVerbosity) {
  EXPECT_EQ(VerbosityFor(LogLevel::kError), 0);
  EXPECT_EQ(VerbosityFor(LogLevel::kWarning), 0);
  EXPECT_EQ(VerbosityFor(LogLevel::kNotice), 1);   // -v
  EXPECT_EQ(VerbosityFor(LogLevel::kInfo), 2);     // -vv: connections
  EXPECT_EQ(VerbosityFor(LogLevel::kDebug), 3);    // -vvv
  const int saved = LogVerbosity();
  SetLogVerbosity(1);
  EXPECT_TRUE(LogEnabled(LogLevel::kWarning));
  EXPECT_TRUE(LogEnabled(LogLevel::kNotice));
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  SetLogVerbosity(0);
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  EXPECT_FALSE(LogEnabled(LogLevel::kNotice));
  SetLogVerbosity(saved);
}

}  // namespace
}  // namespace herdless
