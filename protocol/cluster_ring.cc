#include "protocol/cluster_ring.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace herdless {

namespace {

// The numeric addresses `host` stands for: itself when numeric; else what the
// resolver says when `resolve` (it may block: only at start).
void AddressesOf(const std::string& host, bool resolve, std::vector<std::string>* out) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = resolve ? 0 : AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (host.empty() || getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = "";
    const void* where = a->ai_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                                                : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
    if (inet_ntop(a->ai_family, where, text, sizeof text) != nullptr) out->push_back(text);
  }
  freeaddrinfo(found);
}

std::vector<KetamaContinuum::Server> Points(const RingPool& pool, int leave_out) {
  std::vector<KetamaContinuum::Server> out;
  for (size_t i = 0; i < pool.servers.size(); i++) {
    out.push_back({pool.servers[i].name, pool.servers[i].weight, static_cast<int>(i) != leave_out});
  }
  return out;
}

}  // namespace

std::unique_ptr<ClusterRing> ClusterRing::Load(const std::string& path, std::string_view self, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "ring: cannot read " + path;
    return nullptr;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<RingPool> pools;
  if (!ParseRingConfig(text.str(), &pools, error)) {
    *error = path + ": " + *error;
    return nullptr;
  }
  for (RingPool& pool : pools) {
    for (const RingServer& s : pool.servers) {
      if (s.listed != self && s.name != self) continue;
      std::unique_ptr<ClusterRing> ring = Make(std::move(pool), self, error);
      if (ring != nullptr) {
        for (const RingServer& member : ring->pool_.servers) AddressesOf(member.host, true, &ring->addresses_);
      }
      return ring;
    }
  }
  *error = "ring: no pool of " + path + " lists ring_self " + std::string(self);
  return nullptr;
}

std::unique_ptr<ClusterRing> ClusterRing::Make(RingPool pool, std::string_view self, std::string* error) {
  if (pool.distribution != "ketama") {
    *error = "ring: pool " + pool.name + " has distribution " + pool.distribution + ", herdless computes only ketama";
    return nullptr;
  }
  int found = -1;
  for (size_t i = 0; i < pool.servers.size(); i++) {
    if (pool.servers[i].listed == self || pool.servers[i].name == self) {
      found = static_cast<int>(i);
      break;
    }
  }
  if (found < 0) {
    *error = "ring: pool " + pool.name + " does not list ring_self " + std::string(self);
    return nullptr;
  }
  return std::unique_ptr<ClusterRing>(new ClusterRing(std::move(pool), found));
}

ClusterRing::ClusterRing(RingPool pool, int self)
    : pool_(std::move(pool)), self_(self), full_(Points(pool_, -1)), without_self_(Points(pool_, self)) {
  for (const RingServer& member : pool_.servers) AddressesOf(member.host, false, &addresses_);
}

bool ClusterRing::IsMemberAddress(std::string_view numeric) const {
  return std::find(addresses_.begin(), addresses_.end(), numeric) != addresses_.end();
}

int ClusterRing::Owner(std::string_view key) const {
  return full_.Owner(HashKey(pool_.hash, HashedPart(key, pool_.hash_tag)));
}

int ClusterRing::PreviousOwner(std::string_view key) const {
  return without_self_.Owner(HashKey(pool_.hash, HashedPart(key, pool_.hash_tag)));
}

}  // namespace herdless
