#include "protocol/cluster_ring.h"

#include <fstream>
#include <sstream>

namespace herdless {

namespace {

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
      if (s.listed == self || s.name == self) return Make(std::move(pool), self, error);
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
    : pool_(std::move(pool)), self_(self), full_(Points(pool_, -1)), without_self_(Points(pool_, self)) {}

int ClusterRing::Owner(std::string_view key) const {
  return full_.Owner(HashKey(pool_.hash, HashedPart(key, pool_.hash_tag)));
}

int ClusterRing::PreviousOwner(std::string_view key) const {
  return without_self_.Owner(HashKey(pool_.hash, HashedPart(key, pool_.hash_tag)));
}

}  // namespace herdless
