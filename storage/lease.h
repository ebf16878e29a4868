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
  // ... and at most what keeps a key's recomputes per TTL at this many on
  // average (RefreshWindowUs).
  double refresh_budget = 1.10;
};

// What a reader asked for, beyond a plain read.
struct LeaseAsk {
  bool has_recache = false;  // win it once the TTL left falls below recache_below_s
  int64_t recache_below_s = 0;
  double xfetch_beta = 0;    // 0 = no draw
  bool refresh_ahead = false;  // adaptive refresh-ahead window (RefreshWindowUs)
};

// The spread of recompute times as TCP's RTTVAR (RFC 6298), relative to the
// mean: a sample's deviation from its key's smoothed mean Δ before it, over
// that Δ, smoothed with gain 1/4. Before any sample: 1/2, as RTTVAR = R/2.
// Kept per shard of the store (a key recomputes about once per TTL, too
// rarely for a spread of its own; a loaded backend or client slows all).
// A sample adds at most kMaxSpread, so the spread never exceeds it.
// Snapshots keep it (storage/snapshot.h), so a restarted node starts with it.
constexpr double kInitialSpread = 0.5;
constexpr double kMaxSpread = 16.0;
double SmoothSpread(double old_spread, int64_t sample_ms, uint16_t mean_ms);

// What the item looks like to the decision (copied out of the header).
struct LeaseView {
  bool stale = false;        // kItemStale or expired within stale_grace
  bool token_sent = false;   // kItemTokenSent
  bool needs_value = false;  // kItemNeedsValue (stub waiting for its value)
  int32_t exptime = 0;       // expiry tick (storage/store_time.h), 0 = never
  uint32_t lease_granted_ms = 0;
  uint16_t delta_ms = 0;
  double delta_spread = kInitialSpread;  // recompute times' mean deviation / their mean (RecomputeSpread)
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
// refreshes it, for a key read `reads_per_s` times a second (an estimate),
// recompute time `delta_ms` (a smoothed mean) with relative mean deviation
// `spread`, TTL `ttl_s` (0 = unknown: no bound):
//   Δ (1 + 4 spread) + ln(1/ε) / λ_low,   λ_low = λ / (1 + 1/sqrt(2 λ τ))
// — the time a recompute takes at worst but rarely (TCP's RTO: SRTT + 4
// RTTVAR), plus the time within which the key is read again with probability
// 1 - ε (reads as a Poisson process) at the rate the estimate may overstate
// by one standard deviation (storage/read_rate.h: 1/sqrt(2 λ τ), 8% at
// 5 reads/s). Bounded by max_fraction * TTL and by the recompute budget: a
// refresh in a window W starts on average W - 1/λ before expiry, so a key
// recomputes every L + Δ + 1/λ - W, L the value's life (its TTL less up to
// a tick); at most refresh_budget times per TTL means
// W <= L + Δ + 1/λ - TTL / refresh_budget. 0 for a key read less
// often than refresh_hot_per_s: it is never refreshed early.
constexpr double kRefreshSpreadTimes = 4.0;
int64_t RefreshWindowUs(const LeaseSettings& s, double reads_per_s, double delta_ms, double spread,
                        int64_t ttl_s);

// Decides the lease outcome of one read of an existing item.
// `u` is consumed only when an XFetch draw is needed.
LeaseDecision DecideRead(const LeaseSettings& s, const LeaseView& v, const LeaseAsk& ask,
                         int64_t now_us, double u);

// False when DecideRead can only answer kNone, whatever the rest of the view:
// a fresh value with no lease out or owed, and no recache, refresh-ahead or
// XFetch asked for (most meta reads). Lets a caller skip building the view.
inline bool LeaseDecisionNeeded(bool stale, bool token_sent, bool needs_value, const LeaseAsk& ask) {
  return stale || token_sent || needs_value || ask.has_recache || ask.refresh_ahead || ask.xfetch_beta > 0;
}

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
  // `early`: drawn on a value still fresh (XFetch, refresh-ahead), whose
  // expiry then waits for the recompute (ItemStore: an awaited value).
  bool Set(uint64_t location, uint32_t granted_ms, bool early = false) {
    auto [it, inserted] = granted_.try_emplace(location, Grant{granted_ms, early});
    if (!inserted) it->second = Grant{granted_ms, early};
    return inserted;
  }
  uint32_t GrantedAt(uint64_t location) const {
    auto it = granted_.find(location);
    return it == granted_.end() ? 0 : it->second.ms;
  }
  bool Early(uint64_t location) const {
    auto it = granted_.find(location);
    return it != granted_.end() && it->second.early;
  }
  // True when there was an entry (its charge goes).
  bool Drop(uint64_t location) { return granted_.erase(location) != 0; }
  // The item moved (copied elsewhere): its lease goes with it.
  void Move(uint64_t from, uint64_t to) {
    auto it = granted_.find(from);
    if (it == granted_.end()) return;
    const Grant granted = it->second;
    granted_.erase(it);
    granted_[to] = granted;
  }
  size_t size() const { return granted_.size(); }

 private:
  struct Grant {
    uint32_t ms;
    bool early;
  };
  std::unordered_map<uint64_t, Grant> granted_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_LEASE_H_
