#include "protocol/auth.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/unit/test_support.h"

namespace herdless {
namespace {

void Users(AuthFile* auth) {
  std::string error;
  EXPECT_TRUE(auth->Parse("alice:secret\nbob:hunter2 with spaces\r\n\ncarol:\n", &error)) << error;
}

TEST(ConstantTimeEqualsTest, ComparesBytesAndLengths) {
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secreT", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secrets"));
  EXPECT_FALSE(ConstantTimeEquals("secrets", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secretsecret", "secret"));   // the secret repeated
  EXPECT_FALSE(ConstantTimeEquals("", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(AuthFileTest, ParsesMemcachedsFormat) {
  AuthFile auth;
  Users(&auth);
  EXPECT_EQ(auth.size(), 3u);
  EXPECT_TRUE(auth.Check("alice", "secret"));
  EXPECT_TRUE(auth.Check("bob", "hunter2 with spaces"));   // the rest of the line, \r dropped
  EXPECT_TRUE(auth.Check("carol", ""));
  EXPECT_FALSE(auth.Check("alice", "hunter2 with spaces"));
  EXPECT_FALSE(auth.Check("alice", "secre"));
  EXPECT_FALSE(auth.Check("mallory", "secret"));
  EXPECT_FALSE(auth.Check("", ""));
}

TEST(AuthFileTest, FailsClosed) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "has no 'user:password' entry: nobody could authenticate"},
      {"\n\r\n", "has no 'user:password' entry: nobody could authenticate"},
      {"alice:secret\nnocolon\n", "has a malformed entry on line 2. Should be 'user:password'"},
      {":secret\n", "has a malformed entry on line 1. Should be 'user:password'"},
  };
  for (const auto& c : cases) {
    AuthFile auth;
    std::string error;
    EXPECT_FALSE(auth.Parse(c.text, &error)) << c.text;
    EXPECT_EQ(error, c.error) << c.text;
    EXPECT_EQ(error.find("secret"), std::string::npos);   // never a password in a message
  }
  AuthFile auth;
  std::string error;
  EXPECT_FALSE(auth.Load("/nonexistent/herdless-auth", &error));
  EXPECT_EQ(error, "Could not open authfile [/nonexistent/herdless-auth] for reading, error "
                   "No such file or directory");
}

TEST(AuthFileTest, LoadsAFile) {
  char path[] = "/tmp/herdless-auth-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs("user:pass\n", f);
  std::fclose(f);
  AuthFile auth;
  std::string error;
  EXPECT_TRUE(auth.Load(path, &error)) << error;
  EXPECT_TRUE(auth.Check("user", "pass"));
  std::remove(path);
}

// The exchange, as memcached 1.6.18 answers each line before authentication.
TEST(ProcessAsciiAuthTest, Table) {
  const struct {
    const char* input;
    const char* output;
    size_t consumed;       // SIZE_MAX = all of it
    bool authenticated;
    bool close;
    uint64_t cmds, errors;
  } cases[] = {
      {"get a\r\n", "CLIENT_ERROR unauthenticated\r\n", SIZE_MAX, false, false, 0, 0},
      {"mg a v\r\nstats\r\nquit\r\nwatch\r\nlru_crawler metadump all\r\nlease-get a\r\n",
       "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\n"
       "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\n"
       "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\n",
       SIZE_MAX, false, false, 0, 0},
      {"add a 0 0 12\r\n", "CLIENT_ERROR unauthenticated\r\n", SIZE_MAX, false, false, 0, 0},
      {"set a 0 0 x\r\n", "CLIENT_ERROR unauthenticated\r\n", SIZE_MAX, false, false, 0, 0},
      {"set a 0 0\r\n", "CLIENT_ERROR unauthenticated\r\n", SIZE_MAX, false, false, 0, 0},
      {"set a 0 0 12\r\nalice secret\r\n", "STORED\r\n", SIZE_MAX, true, false, 1, 0},
      {"set a 0 0 12 noreply\r\nalice secret\r\n", "STORED\r\n", SIZE_MAX, true, false, 1, 0},
      {"set  k  x  y  12\nalice secret\r\nget a\r\n", "STORED\r\n", 31, true, false, 1, 0},
      {"set a 0 0 12\r\nalice secreT\r\nget a\r\n",
       "CLIENT_ERROR authentication failure\r\nCLIENT_ERROR unauthenticated\r\n", SIZE_MAX,
       false, false, 1, 1},
      {"set a 0 0 5\r\nhello\r\n", "CLIENT_ERROR bad authentication token format\r\n", SIZE_MAX,
       false, false, 0, 0},
      {"set a 0 0 12\r\nalice secretXX", "CLIENT_ERROR bad command line termination\r\n",
       SIZE_MAX, false, false, 0, 0},
      {"set a 0 0 12\r\nalice sec", "", 0, false, false, 0, 0},   // the block is arriving
      {"get a", "", 0, false, false, 0, 0},
      {"set a 0 0 5000\r\n", "CLIENT_ERROR authentication failure\r\n", 0, false, true, 1, 1},
  };
  for (const auto& c : cases) {
    AuthFile auth;
  Users(&auth);
    ThreadStats stats;
    ReplyBuffer out;
    const std::string input = c.input;
    AuthOutcome o = ProcessAsciiAuth(input, auth, &out, &stats, SIZE_MAX, 100);
    EXPECT_EQ(Drain(&out), c.output) << c.input;
    EXPECT_EQ(o.consumed, c.consumed == SIZE_MAX ? input.size() : c.consumed) << c.input;
    EXPECT_EQ(o.authenticated, c.authenticated) << c.input;
    EXPECT_EQ(o.close, c.close) << c.input;
    EXPECT_EQ(stats.auth_cmds.Get(), c.cmds) << c.input;
    EXPECT_EQ(stats.auth_errors.Get(), c.errors) << c.input;
  }
}

// -o compat=1.6.45: a block over 16384 bytes is refused without closing, up to it is read.
TEST(ProcessAsciiAuthTest, Compat1645RefusesLongTokensAndGoesOn) {
  AuthFile auth;
  Users(&auth);
  ThreadStats stats;
  ReplyBuffer out;
  const std::string input = "set a 0 0 2147483646\r\nset a 0 0 12\r\nalice secret\r\n";
  AuthOutcome o = ProcessAsciiAuth(input, auth, &out, &stats, SIZE_MAX, 100, /*latest=*/true);
  EXPECT_EQ(Drain(&out), "CLIENT_ERROR auth token too long\r\nSTORED\r\n");
  EXPECT_TRUE(o.authenticated);
  EXPECT_FALSE(o.close);
  const std::string mid = "set a 0 0 5000\r\n";
  EXPECT_EQ(ProcessAsciiAuth(mid, auth, &out, &stats, SIZE_MAX, 100, true).consumed, 0u);
}

// -o compat=1.6.45: fewer than 3 bytes wait, a line shorter than 6 bytes hangs
// up, the line starts with "set" and its length is read with the token reader.
TEST(ProcessAsciiAuthTest, Compat1645ShortLinesAndItsOwnReading) {
  AuthFile auth;
  Users(&auth);
  ThreadStats stats;
  ReplyBuffer out;
  AuthOutcome o = ProcessAsciiAuth("\r\n", auth, &out, &stats, SIZE_MAX, 100, /*latest=*/true);
  EXPECT_EQ(o.consumed, 0u);
  EXPECT_FALSE(o.close);
  EXPECT_TRUE(ProcessAsciiAuth("  \r\n", auth, &out, &stats, SIZE_MAX, 100, true).close);
  EXPECT_TRUE(ProcessAsciiAuth("\r\nset a 0 0 12\r\nalice secret\r\n", auth, &out, &stats,
                               SIZE_MAX, 100, true).close);
  EXPECT_EQ(Drain(&out), "");
  o = ProcessAsciiAuth("setx a 0 0 000000000012\r\nsetx a 0 0 00000000012\r\nalice secret\r\n", auth,
                       &out, &stats, SIZE_MAX, 100, true);
  EXPECT_EQ(Drain(&out), "CLIENT_ERROR unauthenticated\r\nSTORED\r\n");
  EXPECT_TRUE(o.authenticated);
  // 1.6.18: a blank line is answered, "setx" is not set.
  ProcessAsciiAuth("\r\nsetx a 0 0 12\r\n", auth, &out, &stats, SIZE_MAX, 100);
  EXPECT_EQ(Drain(&out), "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\n");
}

TEST(ProcessAsciiAuthTest, JunkWithoutNewlineIsClosedAndLinesAreBounded) {
  AuthFile auth;
  Users(&auth);
  ThreadStats stats;
  ReplyBuffer out;
  const std::string junk(kMaxAuthLine + 1, 'x');
  EXPECT_TRUE(ProcessAsciiAuth(junk, auth, &out, &stats, SIZE_MAX, 100).close);
  EXPECT_FALSE(ProcessAsciiAuth(junk.substr(0, kMaxAuthLine), auth, &out, &stats, SIZE_MAX, 100).close);
  // At most max_requests lines per call (the daemon's -R).
  std::string lines;
  for (int i = 0; i < 10; ++i) lines += "get a\r\n";
  AuthOutcome o = ProcessAsciiAuth(lines, auth, &out, &stats, SIZE_MAX, 3);
  EXPECT_EQ(o.consumed, 3 * 7u);
  EXPECT_EQ(Drain(&out), "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\n"
                         "CLIENT_ERROR unauthenticated\r\n");
}

TEST(AuthFileTest, SaslPasswordDatabaseEndsPasswordsAtAColon) {
  AuthFile pwdb;
  std::string error;
  ASSERT_TRUE(pwdb.Parse("alice:s3cret:more:fields\nbob:x\n", &error, AuthFile::Format::kSaslPwdb));
  EXPECT_TRUE(pwdb.Check("alice", "s3cret"));
  EXPECT_FALSE(pwdb.Check("alice", "s3cret:more:fields"));
  EXPECT_TRUE(pwdb.Check("bob", "x"));
  EXPECT_FALSE(pwdb.Load("/nonexistent/pwdb", &error, AuthFile::Format::kSaslPwdb));
  EXPECT_EQ(error.find("Could not open SASL password database [/nonexistent/pwdb]"), 0u);
}

TEST(SaslPlainTest, Shapes) {
  using namespace std::literals;
  std::string_view user, password;
  EXPECT_TRUE(ParseSaslPlain("\0alice\0pw"sv, &user, &password));
  EXPECT_EQ(user, "alice");
  EXPECT_EQ(password, "pw");
  EXPECT_TRUE(ParseSaslPlain("alice\0alice\0pw"sv, &user, &password));
  EXPECT_FALSE(ParseSaslPlain("bob\0alice\0pw"sv, &user, &password));
  EXPECT_FALSE(ParseSaslPlain("alice pw", &user, &password));
  EXPECT_FALSE(ParseSaslPlain("\0alice"sv, &user, &password));
  EXPECT_FALSE(ParseSaslPlain("\0\0pw"sv, &user, &password));
  EXPECT_FALSE(ParseSaslPlain("\0a\0p\0w"sv, &user, &password));
  EXPECT_TRUE(ParseSaslPlain("\0a\0"sv, &user, &password));   // empty password
}

}  // namespace
}  // namespace herdless
