#include "protocol/auth.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "protocol/meta_parser.h"
#include "protocol/numbers.h"
#include "protocol/request_loop.h"

namespace herdless {

namespace {

// memcached's tokenize_command: the first `max` words.
size_t SplitWords(std::string_view s, std::string_view* words, size_t max) {
  WordIterator it(s);
  size_t n = 0;
  while (n < max && it.Next(&words[n])) ++n;
  return n;
}

// memcached's safe_strtoul on the <bytes> word: decimal digits, a value that
// fits 32 bits.
bool ParseLength(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > UINT32_MAX) return false;
  *out = v;
  return true;
}

}  // namespace

bool ConstantTimeEquals(std::string_view candidate, std::string_view secret) {
  // Every candidate byte is compared (against the secret repeated), and the
  // lengths are folded in: no early exit, no branch on secret bytes.
  size_t diff = candidate.size() ^ secret.size();
  if (secret.empty()) return diff == 0;
  size_t j = 0;
  for (size_t i = 0; i < candidate.size(); ++i) {
    diff |= static_cast<unsigned char>(candidate[i]) ^ static_cast<unsigned char>(secret[j]);
    j = (j + 1 == secret.size()) ? 0 : j + 1;
  }
  return diff == 0;
}

bool AuthFile::Parse(std::string_view text, std::string* error, Format format) {
  std::vector<Entry> entries;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      *error = "has a malformed entry on line " + std::to_string(line_number) +
               ". Should be 'user:password'";
      return false;
    }
    std::string_view password = line.substr(colon + 1);
    if (format == Format::kSaslPwdb) password = password.substr(0, password.find(':'));
    entries.push_back(Entry{std::string(line.substr(0, colon)), std::string(password)});
  }
  if (entries.empty()) {
    *error = "has no 'user:password' entry: nobody could authenticate";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_ = std::move(entries);
  return true;
}

size_t AuthFile::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

bool AuthFile::Load(const std::string& path, std::string* error, Format format) {
  const std::string what = format == Format::kSaslPwdb ? "SASL password database" : "authfile";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    *error = "Could not open " + what + " [" + path + "] for reading, error " + std::strerror(errno);
    return false;
  }
  std::string text;
  char chunk[4096];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) text.append(chunk, n);
  const bool failed = std::ferror(f) != 0;
  const int saved = errno;
  std::fclose(f);
  if (failed) {
    *error = "Could not read " + what + " [" + path + "], error " + std::strerror(saved);
    return false;
  }
  std::string why;
  if (!Parse(text, &why, format)) {
    *error = (format == Format::kSaslPwdb ? "SASL password database [" : "Authfile [") + path +
             "] " + why;
    return false;
  }
  return true;
}

bool AuthFile::Check(std::string_view user, std::string_view password) const {
  // Every entry is compared in full: the time says nothing about which user
  // exists or how much of a password matched.
  bool found = false;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& e : entries_) {
    const bool user_ok = ConstantTimeEquals(user, e.user);
    const bool password_ok = ConstantTimeEquals(password, e.password);
    found |= user_ok & password_ok;
  }
  return found;
}

bool ParseSaslPlain(std::string_view message, std::string_view* user, std::string_view* password) {
  const size_t first = message.find('\0');
  if (first == std::string_view::npos) return false;
  const size_t second = message.find('\0', first + 1);
  if (second == std::string_view::npos) return false;
  const std::string_view authzid = message.substr(0, first);
  *user = message.substr(first + 1, second - first - 1);
  *password = message.substr(second + 1);
  if (user->empty() || password->find('\0') != std::string_view::npos) return false;
  return authzid.empty() || authzid == *user;
}

namespace {

// One request of the exchange at the front of `rest`, answered.
StepResult AnswerAuthRequest(std::string_view rest, const AuthFile& auth, ReplyBuffer* out,
                             ThreadStats* stats, bool latest, AuthOutcome* outcome) {
  constexpr size_t kLatestMinAuthBytes = 3, kLatestMinAuthLine = 6;   // 1.6.45's
  if (latest && rest.size() < kLatestMinAuthBytes) return {};
  const size_t newline = rest.find('\n');
  if (newline == std::string_view::npos) {
    if (rest.size() > kMaxAuthLine) outcome->close = true;   // junk: hang up, as memcached
    return {};
  }
  if (latest && newline < kLatestMinAuthLine) {   // 1.6.45 hangs up on a line this short
    outcome->close = true;
    return {};
  }
  std::string_view line = rest.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view words[6];
  const size_t count = SplitWords(line, words, 6);
  uint64_t length = 0;
  uint32_t length32 = 0;
  // 1.6.45: the line starts with "set" (strncmp), its length read with the token reader.
  const bool is_set = latest ? line.starts_with("set") : words[0] == "set";
  const bool length_ok = latest ? ParseTokenUint32(words[4], &length32) : ParseLength(words[4], &length);
  if (latest) length = length32;
  if (count < 5 || !is_set || !length_ok) {
    out->Append("CLIENT_ERROR unauthenticated\r\n");
    return {newline + 1, true};
  }
  constexpr uint64_t kLatestMaxAuthPayload = 16384;   // 1.6.45's MAX_AUTH_REQ_LEN
  if (latest && length > kLatestMaxAuthPayload) {
    out->Append("CLIENT_ERROR auth token too long\r\n");
    return {newline + 1, true};
  }
  if (length > (latest ? kLatestMaxAuthPayload : kMaxAuthPayload)) {
    // memcached would buffer the whole block first; no credential is this long.
    stats->auth_cmds.Add();
    stats->auth_errors.Add();
    out->Append("CLIENT_ERROR authentication failure\r\n");
    outcome->close = true;
    return {};
  }
  const size_t block = static_cast<size_t>(length) + 2;
  if (rest.size() - (newline + 1) < block) return {};   // the block is still arriving
  const std::string_view data = rest.substr(newline + 1, block);
  const size_t consumed = newline + 1 + block;
  if (data.substr(block - 2) != "\r\n") {
    out->Append("CLIENT_ERROR bad command line termination\r\n");
    return {consumed, true};
  }
  std::string_view token[2];
  if (SplitWords(data.substr(0, block - 2), token, 2) < 2) {
    out->Append("CLIENT_ERROR bad authentication token format\r\n");
    return {consumed, true};
  }
  stats->auth_cmds.Add();
  if (auth.Check(token[0], token[1])) {
    out->Append("STORED\r\n");
    outcome->authenticated = true;
    return {consumed, false};
  }
  stats->auth_errors.Add();
  out->Append("CLIENT_ERROR authentication failure\r\n");
  return {consumed, true};
}

}  // namespace

// A pass cut short by -R counts no conn_yields here (as before the loop was
// shared): only commands count them.
AuthOutcome ProcessAsciiAuth(std::string_view input, const AuthFile& auth, ReplyBuffer* out,
                             ThreadStats* stats, size_t max_output, int max_requests, bool latest) {
  AuthOutcome outcome;
  RunRequests(input, *out, {max_output, max_requests}, /*yields=*/nullptr, &outcome.consumed,
              [&](std::string_view rest) {
                return AnswerAuthRequest(rest, auth, out, stats, latest, &outcome);
              });
  return outcome;
}

}  // namespace herdless
