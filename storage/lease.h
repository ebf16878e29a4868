// The lease state machine, as pure functions over one item's state, so every
// protocol path (meta leases, lease-get, classic stale/wait modes, XFetch,
// refresh-ahead) takes the same decision and tests can drive it with a fixed
// clock and random draw.
// ItemStore calls these under the shard lock; nothing here locks or allocates,
// except LeaseTable, the side table of live leases' grant times.
#ifndef HERDLESS_STORAGE_LEASE_H_
#define HERDLESS_STORAGE_LEASE_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace herdless {

// What the lease decisions are tuned by. These defaults are the only ones:
// the daemon's options start from them.
struct LeaseSettings {
  uint32_t lease_timeout_ms = 5000;    // 0 = never (memcached's behaviour)
  uint32_t default_delta_ms = 100;     // XFetch's delta before any measurement
  // Refresh-ahead (RefreshWindowUs): keys read at least this often are hot.
  double refresh_hot_per_s = 2.0;
  // The chance that a hot key is not read inside its window before it expires.
  double refresh_epsilon = 0.01;
  // The window is at most this fraction of the key's TTL.
  double refresh_max_fraction = 0.25;
};

// What a reader asked for, beyond a plain read.
struct LeaseAsk {
  bool has_recache = false;  // win it once the TTL left falls below recache_below_s
  int64_t recache_below_s = 0;
  double xfetch_beta = 0;    // 0 = no draw
  bool refresh_ahead = false;  // adaptive refresh-ahead window (RefreshWindowUs)
};

// What the item looks like to the decision (copied out of the header).
struct LeaseView {
  bool stale = false;        // kItemStale or expired within stale_grace
  bool token_sent = false;   // kItemTokenSent
  bool needs_value = false;  // kItemNeedsValue (stub waiting for its value)
  int32_t exptime = 0;       // expiry tick (storage/store_time.h), 0 = never
  uint32_t lease_granted_ms = 0;
  uint16_t delta_ms = 0;
  double reads_per_s = 0;    // the key's read rate (storage/read_rate.h), 0 = untracked
  int64_t ttl_s = 0;         // the TTL the key was stored with, 0 = unknown
};

enum class LeaseVerdict : uint8_t {
  kNone,        // no hint: plain hit
  kWin,         // this reader gets the lease
  kHeld,        // someone else holds a live lease
};

struct LeaseDecision {
  LeaseVerdict verdict = LeaseVerdict::kNone;
  bool by_xfetch = false;     // the win came from an XFetch draw
  bool by_refresh = false;    // the win came from the refresh-ahead window
  bool regrant = false;       // the previous holder's lease had timed out
};

// True when a lease granted at `granted_ms` is still live at `now_ms`.
bool LeaseLive(const LeaseSettings& s, uint32_t granted_ms, uint32_t now_ms);

// XFetch (Vattani et al., Fig. 3): recompute early iff
//   now - delta * beta * ln(u) >= expiry,  u uniform on (0, 1].
bool XFetchDraw(int64_t now_us, int64_t expiry_us, double delta_ms, double beta, double u);

// Refresh-ahead: the window before expiry in which a hot key's next reader
// refreshes it, for a key read `reads_per_s` times a second with recompute
// time `delta_ms` and TTL `ttl_s` (0 = unknown: no bound):
//   min(delta + max(ln(1/epsilon) / rate, delta / 2), max_fraction * ttl)
// — the recompute time, plus the time within which the key is read again
// with probability 1 - epsilon (reads as a Poisson process), but at least
// half the recompute time again: delta is a smoothed mean, and a recompute
// slower than it must still land before expiry (ln(1/epsilon)/rate leaves
// that slack only below ~92 reads/s at delta = 100 ms). 0 for a key read
// less often than refresh_hot_per_s: it is never refreshed early.
constexpr double kRefreshSlackOfDelta = 0.5;
int64_t RefreshWindowUs(const LeaseSettings& s, double reads_per_s, double delta_ms, int64_t ttl_s);

// Decides the lease outcome of one read of an existing item.
// `u` is consumed only when an XFetch draw is needed.
LeaseDecision DecideRead(const LeaseSettings& s, const LeaseView& v, const LeaseAsk& ask,
                         int64_t now_us, double u);

// Exponentially smoothed recompute time: new = old ? (old*3 + sample)/4 : sample.
uint16_t SmoothDelta(uint16_t old_ms, int64_t sample_ms);

// When each live lease of a shard was granted (ms, mod 2^32), by the location
// of the item holding it. A side table: only an item with a lease out (its
// kItemTokenSent bit) has an entry, so the other items carry no lease time.
// Not thread-safe: the shard's lock guards it.
class LeaseTable {
 public:
  // What an entry is charged to the memory budget (the map's node and slot).
  static constexpr size_t kEntryBytes = 64;

  // Records a grant; true when the location had no entry (a new charge).
  bool Set(uint64_t location, uint32_t granted_ms) {
    auto [it, inserted] = granted_.try_emplace(location, granted_ms);
    if (!inserted) it->second = granted_ms;
    return inserted;
  }
  uint32_t GrantedAt(uint64_t location) const {
    auto it = granted_.find(location);
    return it == granted_.end() ? 0 : it->second;
  }
  // True when there was an entry (its charge goes).
  bool Drop(uint64_t location) { return granted_.erase(location) != 0; }
  // The item moved (copied elsewhere): its lease goes with it.
  void Move(uint64_t from, uint64_t to) {
    auto it = granted_.find(from);
    if (it == granted_.end()) return;
    const uint32_t granted = it->second;
    granted_.erase(it);
    granted_[to] = granted;
  }
  size_t size() const { return granted_.size(); }

 private:
  std::unordered_map<uint64_t, uint32_t> granted_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_LEASE_H_
