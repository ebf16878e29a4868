// ForeignKeys: which keys this node holds only because their owner is away
// (-o ring; protocol/foreign_log.h implements it). The store keeps them at
// most ttl_s() seconds and reports every change of one (a store, delete,
// touch or incr/decr) so that their owner, when back, drops its old copy.
// Called on any thread. Foreign() and ttl_s() are pure and take no lock (the
// store calls them under its shard locks, to count and evict foreign items);
// Changed() and Hit() are called outside the store's locks. None calls the store.
#ifndef HERDLESS_STORAGE_FOREIGN_H_
#define HERDLESS_STORAGE_FOREIGN_H_

#include <cstdint>
#include <string_view>

namespace herdless {

class ForeignKeys {
 public:
  virtual bool Foreign(std::string_view key) const = 0;
  virtual int64_t ttl_s() const = 0;
  virtual void Changed(std::string_view key) = 0;
  virtual void Hit() = 0;   // a read found a foreign key's value

 protected:
  ~ForeignKeys() = default;
};

// memcached's exptime (0 = never, <= 30 days relative, beyond a Unix time,
// negative = already gone) capped to at most `cap_s` seconds from now.
inline int64_t CapExptime(int64_t exptime, int64_t cap_s, int64_t now_unix) {
  constexpr int64_t kRelativeMaxS = 60 * 60 * 24 * 30;
  if (exptime < 0) return exptime;
  const int64_t left = exptime == 0 ? INT64_MAX : exptime > kRelativeMaxS ? exptime - now_unix : exptime;
  return left > cap_s ? cap_s : exptime;
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_FOREIGN_H_
