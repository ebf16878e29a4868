// libFuzzer target for -Y and -S: the authentication exchange
// (ProcessAsciiAuth), the password file readers (AuthFile::Parse, both
// formats) and SASL PLAIN messages (ParseSaslPlain). The first input byte
// picks the mode and how the rest is cut into chunks.
//   - file mode (byte 0 even, below 16): the rest is a password file; a parse
//     that succeeds must find each of its own "user:password" lines again
//     (-S's format: each user with the password up to the next ':').
//   - PLAIN mode (byte 0 16..31): the rest is a PLAIN message; one that parses
//     must put itself back together from what it was parsed into.
//   - exchange mode: the rest is a client's byte stream before authentication,
//     fed whole and chunk by chunk, the way a connection feeds it (append,
//     process, drop what was consumed) against a fixed file, as 1.6.18 or
//     (byte 0 from 128) 1.6.45 answers it (-o compat=1.6.45). Checked: every
//     reply line is one of memcached's (five, and 1.6.45's "auth token too
//     long"); nothing is consumed past the input; authentication only ever
//     follows a STORED reply; the chunked run answers exactly as the whole
//     run, unless it hung up earlier on a line of over kMaxAuthLine bytes
//     whose newline had not arrived yet (then it answered a prefix of the
//     whole run's replies).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>

#include "protocol/auth.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

void CheckReplies(std::string_view replies, bool latest) {
  static constexpr std::string_view kReplies[] = {
      "STORED\r\n", "CLIENT_ERROR unauthenticated\r\n", "CLIENT_ERROR authentication failure\r\n",
      "CLIENT_ERROR bad command line termination\r\n",
      "CLIENT_ERROR bad authentication token format\r\n",
      "CLIENT_ERROR auth token too long\r\n"};   // 1.6.45's only
  const size_t known_count = latest ? std::size(kReplies) : std::size(kReplies) - 1;
  while (!replies.empty()) {
    bool known = false;
    for (size_t i = 0; i < known_count; ++i) {
      const std::string_view r = kReplies[i];
      if (replies.substr(0, r.size()) == r) {
        replies.remove_prefix(r.size());
        known = true;
        break;
      }
    }
    if (!known) std::abort();
  }
}

struct Run {
  std::string replies;
  bool authenticated = false;
  bool closed = false;
  size_t consumed = 0;   // stream bytes answered
};

// Feeds `stream` in pieces of `chunk` bytes (0 = whole).
Run Feed(const AuthFile& auth, std::string_view stream, size_t chunk, bool latest) {
  Run run;
  ThreadStats stats;
  ReplyBuffer out;
  std::string buffer;
  size_t fed = 0;
  while (!run.authenticated && !run.closed) {
    if (fed == stream.size() && buffer.empty()) break;
    const size_t take = chunk == 0 ? stream.size() - fed : std::min(chunk, stream.size() - fed);
    buffer.append(stream.substr(fed, take));
    fed += take;
    AuthOutcome o = ProcessAsciiAuth(buffer, auth, &out, &stats, SIZE_MAX, 1 << 30, latest);
    if (o.consumed > buffer.size()) std::abort();
    buffer.erase(0, o.consumed);
    run.authenticated = o.authenticated;
    run.closed = o.close;
    if (take == 0 && o.consumed == 0) break;   // all fed, the rest is incomplete
  }
  run.consumed = fed - buffer.size();
  run.replies = Drain(&out);
  CheckReplies(run.replies, latest);
  if (run.authenticated && run.replies.size() < 8) std::abort();
  if (run.authenticated && run.replies.substr(run.replies.size() - 8) != "STORED\r\n") std::abort();
  if (stats.auth_errors.Get() > stats.auth_cmds.Get()) std::abort();
  return run;
}

void PlainMode(std::string_view message) {
  std::string_view user, password;
  if (!ParseSaslPlain(message, &user, &password)) return;
  if (user.empty() || password.find('\0') != std::string_view::npos) std::abort();
  const std::string rebuilt1 = std::string(1, '\0') + std::string(user) + '\0' + std::string(password);
  const std::string rebuilt2 = std::string(user) + rebuilt1;
  if (message != rebuilt1 && message != rebuilt2) std::abort();
}

void FileMode(std::string_view text, AuthFile::Format format) {
  AuthFile auth;
  std::string error;
  if (!auth.Parse(text, &error, format)) {
    if (error.empty()) std::abort();
    return;
  }
  if (auth.size() == 0) std::abort();
  // Each line's own credentials are accepted.
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    std::string_view password = line.substr(colon + 1);
    if (format == AuthFile::Format::kSaslPwdb) password = password.substr(0, password.find(':'));
    // A user listed twice may have another password first: Check any entry.
    if (!auth.Check(line.substr(0, colon), password)) std::abort();
  }
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] < 16 && data[0] % 2 == 0) {
    FileMode(rest, data[0] < 8 ? AuthFile::Format::kAsciiAuth : AuthFile::Format::kSaslPwdb);
    return 0;
  }
  if (data[0] >= 16 && data[0] < 32) {
    PlainMode(rest);
    return 0;
  }
  static const AuthFile* auth = [] {
    auto* a = new AuthFile;
    std::string error;
    if (!a->Parse("alice:s3cret\nbob:hunter2\ncarol:\n", &error)) std::abort();
    return a;
  }();
  const size_t chunk = 1 + data[0] % 37;
  const bool latest = data[0] >= 128;
  const Run whole = Feed(*auth, rest, 0, latest);
  const Run pieces = Feed(*auth, rest, chunk, latest);
  if (pieces.closed && !(whole.closed && whole.replies == pieces.replies)) {
    // The chunked run may hang up on a line before its newline arrived (the
    // whole run answers that line, and may hang up later for another reason).
    const size_t newline = rest.substr(pieces.consumed).find('\n');
    if (newline != std::string_view::npos && newline <= kMaxAuthLine) std::abort();
    if (whole.replies.substr(0, pieces.replies.size()) != pieces.replies) std::abort();
    return 0;
  }
  if (whole.replies != pieces.replies || whole.authenticated != pieces.authenticated ||
      whole.closed != pieces.closed) {
    std::abort();
  }
  return 0;
}
