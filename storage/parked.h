// ParkedReaders: the readers of one shard that wait, in classic wait mode, for
// a key that has no value while another client holds its lease. A reader is a
// WaitTicket; every change that may end the wait (a new value, a removal, a
// cancelled or re-granted lease) takes the key's tickets, and the shard hands
// them to the LeaseWakeSink once its lock is released, so a sink never runs
// under a store lock. Not thread-safe: guarded by the owning shard's lock.
#ifndef HERDLESS_STORAGE_PARKED_H_
#define HERDLESS_STORAGE_PARKED_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace herdless {

// A reader parked on a key: the daemon's worker, its connection and the
// park's sequence number (a later park of the same connection supersedes it;
// a ticket of a closed connection is ignored).
struct WaitTicket {
  uint32_t worker = 0;
  uint64_t conn_id = 0;
  uint64_t seq = 0;
  // The connection's count of flash reads that could recache (memcached's
  // per-connection recache_counter; nullptr: one count for the store). Used only
  // by the read this ticket comes with, on the connection's own thread.
  uint64_t* recache_counter = nullptr;
};

// Told when a parked reader's key changed in a way that ends its wait. Called
// with no store lock held, from whichever thread made the change; must be
// thread-safe and quick.
class LeaseWakeSink {
 public:
  virtual ~LeaseWakeSink() = default;
  virtual void Wake(const WaitTicket& ticket) = 0;
};

// Lets a map by std::string be searched with a string_view (no std::string
// built): ParkedReaders' and the store's maps by key.
struct StringKeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const { return std::hash<std::string_view>()(key); }
};

class ParkedReaders {
 public:
  // No reader is parked: callers skip Wake() entirely (the common case).
  bool empty() const { return by_key_.empty(); }

  // Registers `ticket` on `key`. A connection parks on one key at a time: its
  // older ticket for the key is replaced, so a key's list stays bounded.
  void Park(std::string_view key, const WaitTicket& ticket);

  // Some reader waits on the key (-o ext_path: its value's fetch is under way).
  bool Waiting(std::string_view key) const { return by_key_.find(key) != by_key_.end(); }

  // Moves the key's tickets to the wake list; returns how many parks they
  // made (a request may park one ticket on a key twice: `get a a`).
  size_t Wake(std::string_view key);

  // Moves every ticket to the wake list (the whole shard was emptied).
  void WakeAll();

  // The tickets to deliver once the shard lock is released (the list is left empty).
  bool has_woken() const { return !woken_.empty(); }
  std::vector<WaitTicket> TakeWoken() {
    std::vector<WaitTicket> out;
    out.swap(woken_);
    return out;
  }

 private:
  struct Waiters {
    std::vector<WaitTicket> tickets;
    size_t parks = 0;   // Park calls since the key's last wake
  };
  std::unordered_map<std::string, Waiters, StringKeyHash, std::equal_to<>> by_key_;
  std::vector<WaitTicket> woken_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_PARKED_H_
