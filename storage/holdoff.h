// DeleteHoldoff: the keys whose warm fills from a peer are refused for now
// (Facebook's cold cluster warmup rule: a delete refuses warm fills of its
// key for a hold-off, so that a value the peer still holds cannot come back;
// herdless also holds off keys whose change is on its way to the peer, and
// those whose peer copy could not be invalidated). Keys are kept as 64-bit
// hashes, so a collision only refuses a fill. Bounded at kMaxEntries per
// shard, and never forgetful: a full shard drops the quarter of its entries
// that end soonest and refuses every key of the shard until the last of them
// would have ended. Thread-safe (sharded locks).
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
  static constexpr int64_t kForever = INT64_MAX;

  // Refuses fills of the key with this hash until until_us (kForever: for good).
  void Note(uint64_t hash, int64_t until_us, int64_t now_us);
  // Refuses fills of every key until until_us.
  void NoteAll(int64_t until_us);
  // True while a refusal of the key lasts.
  bool Holds(uint64_t hash, int64_t now_us) const;
  // Entries kept now, over the shards (tests).
  size_t size() const;

 private:
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<uint64_t, int64_t> until_us;   // guarded by mutex
    int64_t all_until_us = 0;                         // every key of the shard; guarded by mutex
  };
  Shard& ShardOf(uint64_t hash) const { return shards_[hash >> 60]; }

  mutable std::array<Shard, 16> shards_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_HOLDOFF_H_
