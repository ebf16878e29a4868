#include "protocol/prefix_stats.h"

#include <cstring>

#include "protocol/numbers.h"

namespace herdless {

PrefixStats::Counts* PrefixStats::Find(std::string_view key) {
  // memcached stops at the first delimiter, or at a NUL byte (no prefix then).
  const char delim = delimiter();
  size_t length = 0;
  while (length < key.size() && key[length] != '\0' && key[length] != delim) length++;
  if (length == key.size() || key[length] != delim) return nullptr;
  const std::string_view prefix = key.substr(0, length);
  auto it = table_.find(prefix);
  if (it != table_.end()) return &it->second;
  if (table_.size() >= max_prefixes_) {
    refused_++;
    return nullptr;
  }
  return &table_.emplace(std::string(prefix), Counts{}).first->second;
}

void PrefixStats::RecordGet(std::string_view key, bool hit) {
  std::lock_guard<std::mutex> lock(mu_);
  Counts* c = Find(key);
  if (c == nullptr) return;
  c->gets++;
  if (hit) c->hits++;
}

void PrefixStats::RecordSet(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Counts* c = Find(key)) c->sets++;
}

void PrefixStats::RecordDelete(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Counts* c = Find(key)) c->deletes++;
}

void PrefixStats::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  table_.clear();
  refused_ = 0;
}

std::string PrefixStats::Dump() const {
  std::string out;
  auto number = [&out](const char* label, uint64_t v) {
    char buf[kMaxUint64Digits];
    out.append(label);
    out.append(buf, FormatUint64(v, buf) - buf);
  };
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [prefix, c] : table_) {
    out.append("PREFIX ");
    out.append(prefix);
    number(" get ", c.gets);
    number(" hit ", c.hits);
    number(" set ", c.sets);
    number(" del ", c.deletes);
    out.append("\r\n");
  }
  out.append("END\r\n");
  return out;
}

size_t PrefixStats::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.size();
}

uint64_t PrefixStats::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace herdless
