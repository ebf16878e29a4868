#include "protocol/ring_config.h"

namespace herdless {

namespace {

constexpr int kKetamaDefaultPort = 11211;   // libmemcached's: left out of the hashed name

// nc_atoi: digits only, at most 9 of them.
bool ParseNumber(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 9) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A line without its comment: '#' at the start or after a space, outside quotes.
std::string_view StripComment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); i++) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      return line.substr(0, i);
    }
  }
  return line;
}

// A scalar without its quotes. False for an unbalanced quote.
bool Scalar(std::string_view v, std::string* out) {
  v = Trim(v);
  if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
    if (v.size() < 2 || v.back() != v.front()) return false;
    v = v.substr(1, v.size() - 2);
  }
  out->assign(v);
  return true;
}

// "host:port:weight [name]" or "/path:weight [name]", parsed from the end as nutcracker does.
bool ParseServer(std::string_view v, RingServer* s) {
  const size_t space = v.rfind(' ');
  std::string_view name;
  if (space != std::string_view::npos) {
    name = Trim(v.substr(space + 1));
    v = Trim(v.substr(0, space));
    if (name.empty()) return false;
  }
  const size_t wcolon = v.rfind(':');
  if (wcolon == std::string_view::npos) return false;
  int64_t weight = 0;
  if (!ParseNumber(v.substr(wcolon + 1), &weight) || weight < 1 || weight > 1000000) return false;
  s->weight = static_cast<uint32_t>(weight);
  s->listed = std::string(v.substr(0, wcolon));
  if (!s->listed.empty() && s->listed[0] == '/') {
    s->name = name.empty() ? s->listed : std::string(name);
    return true;
  }
  const size_t pcolon = s->listed.rfind(':');
  int64_t port = 0;
  if (pcolon == std::string::npos || pcolon == 0 ||
      !ParseNumber(std::string_view(s->listed).substr(pcolon + 1), &port) || port < 1 || port > 65535) {
    return false;
  }
  s->host = s->listed.substr(0, pcolon);
  s->port = static_cast<int>(port);
  if (!name.empty()) {
    s->name = std::string(name);
  } else {
    s->name = port == kKetamaDefaultPort ? s->host : s->listed;
  }
  return true;
}

bool SetPoolKey(std::string_view key, const std::string& value, RingPool* pool, std::string* why) {
  if (key == "hash") {
    if (!ParseRingHash(value, &pool->hash)) {
      *why = "hash '" + value + "' (herdless knows one_at_a_time, md5, crc32, crc32a, fnv1_64, "
             "fnv1a_64, fnv1_32, fnv1a_32, murmur)";
      return false;
    }
  } else if (key == "hash_tag") {
    if (value.size() != 2) {
      *why = "hash_tag must be two characters";
      return false;
    }
    pool->hash_tag = value;
  } else if (key == "distribution") {
    if (value != "ketama" && value != "modula" && value != "random") {
      *why = "distribution '" + value + "'";
      return false;
    }
    pool->distribution = value;
  }
  return true;   // listen, timeout, auto_eject_hosts...: nothing to do with ownership
}

}  // namespace

std::string_view HashedPart(std::string_view key, std::string_view hash_tag) {
  if (hash_tag.size() != 2) return key;
  const size_t start = key.find(hash_tag[0]);
  if (start == std::string_view::npos) return key;
  const size_t end = key.find(hash_tag[1], start + 1);
  if (end == std::string_view::npos || end - start <= 1) return key;
  return key.substr(start + 1, end - start - 1);
}

bool ParseRingConfig(std::string_view text, std::vector<RingPool>* pools, std::string* error) {
  pools->clear();
  bool in_servers = false;
  size_t servers_indent = 0;
  int line_no = 0;
  auto fail = [&](const std::string& why) {
    *error = "ring: line " + std::to_string(line_no) + ": " + why;
    return false;
  };
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line_no++;
    line = StripComment(line);
    if (Trim(line).empty() || Trim(line) == "---") continue;
    if (line.find('\t') != std::string_view::npos) return fail("a tab (YAML indents with spaces)");
    size_t indent = 0;
    while (line[indent] == ' ') indent++;
    std::string_view body = Trim(line.substr(indent));
    if (body[0] == '-') {
      if (!in_servers || indent < servers_indent || pools->empty()) return fail("a list item outside servers:");
      if (body.size() < 2 || body[1] != ' ') return fail("expected '- host:port:weight [name]'");
      std::string value;
      RingServer s;
      if (!Scalar(body.substr(2), &value) || !ParseServer(value, &s)) {
        return fail("expected host:port:weight [name] or /path:weight [name]");
      }
      pools->back().servers.push_back(std::move(s));
      continue;
    }
    const size_t colon = body.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail("expected 'key: value'");
    const std::string_view key = Trim(body.substr(0, colon));
    const std::string_view rest = body.substr(colon + 1);
    if (!rest.empty() && rest[0] != ' ') return fail("expected a space after ':'");
    std::string value;
    if (!Scalar(rest, &value)) return fail("an unbalanced quote");
    in_servers = false;
    if (indent == 0) {
      if (!value.empty()) return fail("a pool is 'name:' followed by its indented keys");
      pools->push_back(RingPool{});
      pools->back().name = std::string(key);
      continue;
    }
    if (pools->empty()) return fail("a key before any pool");
    if (key == "servers") {
      if (!value.empty()) return fail("servers: is a list");
      in_servers = true;
      servers_indent = indent;
      continue;
    }
    std::string why;
    if (!SetPoolKey(key, value, &pools->back(), &why)) return fail(why);
  }
  if (pools->empty()) {
    *error = "ring: no pool";
    return false;
  }
  return true;
}

}  // namespace herdless
