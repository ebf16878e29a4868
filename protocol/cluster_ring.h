// ClusterRing: this node's view of its nutcracker pool (-o ring, ring_self): who owns
// a key on the full ring, and who owned it before this node joined (the ring
// without it). Immutable once built; shared by the workers.
#ifndef HERDLESS_PROTOCOL_CLUSTER_RING_H_
#define HERDLESS_PROTOCOL_CLUSTER_RING_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/ketama.h"
#include "protocol/ring_config.h"

namespace herdless {

class ClusterRing {
 public:
  // Reads `path` and picks the first pool listing `self` (as listed, or its
  // name). nullptr with *error.
  static std::unique_ptr<ClusterRing> Load(const std::string& path, std::string_view self, std::string* error);
  // The same from the pool itself (tests, the fuzz target).
  static std::unique_ptr<ClusterRing> Make(RingPool pool, std::string_view self, std::string* error);

  const RingPool& pool() const { return pool_; }
  int self() const { return self_; }
  // The server (an index into pool().servers) owning `key` on the full ring.
  int Owner(std::string_view key) const;
  bool Mine(std::string_view key) const { return Owner(key) == self_; }
  // Its owner on the ring without this node: the node it moved from when this one joined.
  int PreviousOwner(std::string_view key) const;

  // The addresses (numeric, as inet_ntop writes them) of the pool's servers:
  // numeric hosts as listed, names resolved once by Load (at start). Who may
  // take a foreign list (`ring foreign`).
  bool IsMemberAddress(std::string_view numeric) const;

 private:
  ClusterRing(RingPool pool, int self);

  RingPool pool_;
  int self_;
  KetamaContinuum full_;
  KetamaContinuum without_self_;
  std::vector<std::string> addresses_;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_CLUSTER_RING_H_
