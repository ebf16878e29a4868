// ForeignLog: the keys this node changed for owners that were away (-o ring).
// A key is foreign when its owner on the full ring is another node: nutcracker
// sends it here only while that owner is ejected. Each change of one is
// logged under its owner, so the owner, when it comes back, asks for its
// list (`ring foreign <server>`, which hands the list over and clears it)
// and drops its copies of those keys before serving. At most kMaxKeys keys
// are kept; beyond, the owner's list says it overflowed (drop everything).
// Thread-safe.
#ifndef HERDLESS_PROTOCOL_FOREIGN_LOG_H_
#define HERDLESS_PROTOCOL_FOREIGN_LOG_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "protocol/cluster_ring.h"
#include "storage/foreign.h"

namespace herdless {

// `stats` of foreign keys, in this order.
#define HERDLESS_FOREIGN_STATS(X)                                                 \
  X(foreign_sets)      /* stores, deletes, touches, incr/decr of foreign keys */  \
  X(foreign_hits)      /* reads that found a foreign key's value */               \
  X(foreign_logged)    /* foreign keys logged for their owner now */              \
  X(foreign_handed)    /* keys handed to owners that came back */

class ForeignLog final : public ForeignKeys {
 public:
  static constexpr size_t kMaxKeys = 1u << 20;

  ForeignLog(const ClusterRing* ring, int64_t ttl_s);

  // ForeignKeys
  bool Foreign(std::string_view key) const override { return !ring_->Mine(key); }
  int64_t ttl_s() const override { return ttl_s_; }
  void Changed(std::string_view key) override;
  void Hit() override { hits_.fetch_add(1, std::memory_order_relaxed); }

  // The keys logged for `owner` (an index into the ring's servers), cleared
  // here; *overflowed when some were not kept.
  std::vector<std::string> Take(int owner, bool* overflowed);

  struct Figures {
#define HERDLESS_FOREIGN_FIELD(name) uint64_t name = 0;
    HERDLESS_FOREIGN_STATS(HERDLESS_FOREIGN_FIELD)
#undef HERDLESS_FOREIGN_FIELD
  };
  Figures Stats() const;

 private:
  const ClusterRing* const ring_;
  const int64_t ttl_s_;
  std::atomic<uint64_t> sets_{0};
  std::atomic<uint64_t> hits_{0};
  mutable std::mutex mu_;
  std::vector<std::unordered_set<std::string>> logged_;   // per owner
  std::vector<bool> overflowed_;
  size_t total_ = 0;
  uint64_t handed_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_FOREIGN_LOG_H_
