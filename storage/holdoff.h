// DeleteHoldoff: the keys deleted in the last few seconds (Facebook's cold
// cluster warmup rule: a delete refuses warm fills of its key for a hold-off,
// so that a value the peer still holds cannot come back). Keys are kept as
// 64-bit hashes, so a collision only refuses a fill. Bounded: beyond
// kMaxEntries per shard the quarter ending soonest is dropped. Thread-safe (sharded locks).
#ifndef HERDLESS_STORAGE_HOLDOFF_H_
#define HERDLESS_STORAGE_HOLDOFF_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace herdless {

class DeleteHoldoff {
 public:
  static constexpr size_t kMaxEntries = 1 << 16;   // per shard
  explicit DeleteHoldoff(int64_t holdoff_us) : holdoff_us_(holdoff_us) {}

  // The key with this hash was deleted at now_us.
  void Note(uint64_t hash, int64_t now_us);
  // True while the key's hold-off lasts.
  bool Holds(uint64_t hash, int64_t now_us) const;
  // Entries kept now, over the shards (tests).
  size_t size() const;

 private:
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<uint64_t, int64_t> until_us;   // guarded by mutex
  };
  Shard& ShardOf(uint64_t hash) const { return shards_[hash >> 60]; }

  const int64_t holdoff_us_;
  mutable std::array<Shard, 16> shards_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_HOLDOFF_H_
