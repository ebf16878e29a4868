#include "protocol/peer_reply.h"

#include <vector>

#include "protocol/numbers.h"

namespace herdless {

namespace {

constexpr size_t kMaxLine = 2048;

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    const size_t j = s.find(' ', i);
    const size_t end = j == std::string_view::npos ? s.size() : j;
    if (end > i) words.push_back(s.substr(i, end - i));
    i = end + 1;
  }
  return words;
}

// The value reply whose first line is `w` (VA or VALUE), `line_end` bytes
// with its CRLF.
PeerParse ParseValue(std::string_view in, const std::vector<std::string_view>& w, size_t line_end,
                     size_t max_value, PeerReply* r, size_t* used) {
  const bool meta = w[0] == "VA";
  int64_t len = 0, flags = 0;
  if (w.size() < (meta ? 2u : 4u) || !ParseWholeNumber(w[meta ? 1 : 3], &len) || len < 0 ||
      static_cast<uint64_t>(len) > max_value) {
    return PeerParse::kBad;
  }
  if (!meta && (!ParseWholeNumber(w[2], &flags) || flags < 0 || flags > UINT32_MAX)) return PeerParse::kBad;
  const std::string_view tail = meta ? "\r\n" : "\r\nEND\r\n";
  const size_t need = line_end + static_cast<size_t>(len) + tail.size();
  if (in.size() < need) return PeerParse::kNeedMore;
  if (in.substr(line_end + static_cast<size_t>(len), tail.size()) != tail) return PeerParse::kBad;
  r->kind = PeerReply::Kind::kHit;
  r->value.assign(in.substr(line_end, static_cast<size_t>(len)));
  r->ttl_known = meta;
  bool invalid = false, leased = false;
  for (size_t i = 2; meta && i < w.size(); ++i) {
    int64_t n = 0;
    if (w[i][0] == 'f' && ParseWholeNumber(w[i].substr(1), &n) && n >= 0 && n <= UINT32_MAX) flags = n;
    // An expired value in the peer's stale grace has a TTL of 0 or below.
    if (w[i][0] == 't' && ParseWholeNumber(w[i].substr(1), &n)) r->ttl_s = n;
    uint64_t cas = 0;
    if (w[i][0] == 'c' && ParseWholeNumber(w[i].substr(1), &cas)) r->cas = cas;
    if (w[i] == "X") invalid = true;
    if (w[i] == "W" || w[i] == "Z") leased = true;
    if (w[i] == "W") r->won = true;
  }
  if (invalid || leased) {
    // Stale there, or a lease out on it: at best a stale value (a stub has no bytes).
    r->stale = true;
    r->kind = invalid || len > 0 ? PeerReply::Kind::kStale : PeerReply::Kind::kMiss;
  } else if (meta && r->ttl_s <= 0 && r->ttl_s != -1) {
    r->kind = PeerReply::Kind::kMiss;   // expiring now
  }
  r->flags = static_cast<uint32_t>(flags);
  *used = need;
  return PeerParse::kDone;
}

}  // namespace

PeerParse ParsePeerReply(std::string_view in, size_t max_value, PeerReply* reply, size_t* used) {
  *reply = PeerReply{};
  const size_t eol = in.find("\r\n");
  if (eol == std::string_view::npos) return in.size() <= kMaxLine ? PeerParse::kNeedMore : PeerParse::kBad;
  if (eol > kMaxLine) return PeerParse::kBad;
  const std::string_view line = in.substr(0, eol);
  *used = eol + 2;
  if (line == "EN" || line == "END") {
    reply->kind = PeerReply::Kind::kMiss;
    return PeerParse::kDone;
  }
  if (line == "DELETED" || line == "NOT_FOUND") {
    reply->kind = PeerReply::Kind::kDeleted;
    return PeerParse::kDone;
  }
  const std::vector<std::string_view> w = Words(line);
  if (!w.empty() && (w[0] == "VA" || w[0] == "VALUE")) return ParseValue(in, w, eol + 2, max_value, reply, used);
  reply->kind = line == "ERROR" ? PeerReply::Kind::kUnknownCommand : PeerReply::Kind::kError;
  return PeerParse::kDone;
}

}  // namespace herdless
