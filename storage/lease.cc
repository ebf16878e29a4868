#include "storage/lease.h"

#include <algorithm>
#include <cmath>

#include "storage/read_rate.h"
#include "storage/store_time.h"

namespace herdless {

bool LeaseLive(const LeaseSettings& s, uint32_t granted_ms, uint32_t now_ms) {
  if (s.lease_timeout_ms == 0) return true;  // memcached: a token never times out
  // Unsigned subtraction stays correct across the 2^32 ms (~49 day) wrap.
  const uint32_t age_ms = now_ms - granted_ms;
  return age_ms < s.lease_timeout_ms;
}

bool XFetchDraw(int64_t now_us, int64_t expiry_us, double delta_ms, double beta, double u) {
  if (beta <= 0 || delta_ms <= 0) return now_us >= expiry_us;
  // -ln(u) is Exp(1) for u uniform on (0, 1]; the look-ahead gap is delta*beta*Exp(1).
  const double gap_us = -delta_ms * 1000.0 * beta * std::log(u);
  return static_cast<double>(now_us) + gap_us >= static_cast<double>(expiry_us);
}

int64_t RefreshWindowUs(const LeaseSettings& s, double reads_per_s, double delta_ms, double spread,
                        int64_t ttl_s) {
  if (!(reads_per_s >= s.refresh_hot_per_s) || reads_per_s <= 0) return 0;
  const double epsilon = std::clamp(s.refresh_epsilon, 1e-9, 1.0);
  const double delta_s = delta_ms / 1000.0;
  const double rate_low = reads_per_s / (1.0 + 1.0 / std::sqrt(2.0 * reads_per_s * ReadRate::kTimeConstantS));
  const double recompute_s = delta_s * (1.0 + kRefreshSpreadTimes * std::max(spread, 0.0));
  double window_s = recompute_s + std::log(1.0 / epsilon) / rate_low;
  if (ttl_s > 0) {
    const double ttl = static_cast<double>(ttl_s);
    window_s = std::min(window_s, s.refresh_max_fraction * ttl);
    if (s.refresh_budget > 1.0) {
      // A new value lives its TTL less up to a tick (store_time.h): count it whole.
      const double lifetime = ttl - 1.0 / kTicksPerSecond;
      window_s = std::min(window_s, lifetime + delta_s + 1.0 / reads_per_s - ttl / s.refresh_budget);
    }
  }
  return static_cast<int64_t>(std::max(window_s, 0.0) * 1e6);
}

LeaseDecision DecideRead(const LeaseSettings& s, const LeaseView& v, const LeaseAsk& ask,
                         int64_t now_us, double u) {
  LeaseDecision d;
  const uint32_t now_ms = static_cast<uint32_t>(now_us / 1000);
  const bool live = v.token_sent && LeaseLive(s, v.lease_granted_ms, now_ms);
  if (live) {
    d.verdict = LeaseVerdict::kHeld;
    return d;
  }

  bool win = false;
  if (v.stale || v.needs_value) {
    // memcached: a stale item wins automatically, whatever the reader asked. A stub
    // whose earlier lease timed out wants its value from the next reader.
    win = true;
  } else if (ask.has_recache && v.exptime != 0) {
    // memcached's recache rule: it->exptime < current_time + threshold, in
    // whole seconds as memcached counts them (the remaining TTL it shows).
    // Items without TTL never win.
    win = SecondsUntil(v.exptime, TickOf(now_us)) < ask.recache_below_s;
  }
  const double delta_ms = v.delta_ms != 0 ? v.delta_ms : s.default_delta_ms;
  if (!win && ask.refresh_ahead && v.exptime != 0) {
    // Deterministic, so it comes before XFetch's draw: a win it gives is
    // counted as a refresh-ahead grant.
    const int64_t remaining_us = int64_t{v.exptime} * kMicrosPerTick - now_us;
    if (remaining_us < RefreshWindowUs(s, v.reads_per_s, delta_ms, v.delta_spread, v.ttl_s)) {
      win = true;
      d.by_refresh = true;
    }
  }
  if (!win && ask.xfetch_beta > 0 && v.exptime != 0) {
    if (XFetchDraw(now_us, int64_t{v.exptime} * kMicrosPerTick, delta_ms, ask.xfetch_beta, u)) {
      win = true;
      d.by_xfetch = true;
    }
  }
  if (win) {
    d.verdict = LeaseVerdict::kWin;
    d.regrant = v.token_sent;  // the token was out but its lease is no longer live
  }
  return d;
}

double SmoothSpread(double old_spread, int64_t sample_ms, uint16_t mean_ms) {
  if (mean_ms == 0) return old_spread;   // the key's first sample: no mean to deviate from
  const double deviation = std::abs(static_cast<double>(std::max<int64_t>(sample_ms, 1)) - mean_ms) / mean_ms;
  // A sample from a lease that timed out says little of the backend: the
  // deviation a sample adds is bounded (16 means a window of 65 Δ at most).
  return (3.0 * old_spread + std::min(deviation, kMaxSpread)) / 4.0;
}

uint16_t SmoothDelta(uint16_t old_ms, int64_t sample_ms) {
  // A measurement of 0 ms would read as "unmeasured": keep at least 1 ms.
  const int64_t sample = std::clamp<int64_t>(sample_ms, 1, UINT16_MAX);
  const int64_t smoothed = old_ms != 0 ? (int64_t{old_ms} * 3 + sample) / 4 : sample;
  return static_cast<uint16_t>(std::clamp<int64_t>(smoothed, 1, UINT16_MAX));
}

}  // namespace herdless
