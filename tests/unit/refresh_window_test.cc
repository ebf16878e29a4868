// The refresh-ahead window (storage/lease.h) driven through whole lives of a
// key: a driven clock, reads as a Poisson process, the key's read rate as
// ItemStore estimates it (storage/read_rate.h), recompute times drawn from a
// distribution (normal or heavy-tailed), Δ and the spread smoothed from them
// as the store does, and every read decided by DecideRead. Deterministic
// (fixed seeds): no timing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "storage/lease.h"
#include "storage/read_rate.h"
#include "storage/store_time.h"

namespace herdless {
namespace {

using Rng = std::mt19937_64;
using Recompute = std::function<double(Rng&)>;   // one recompute time, ms

struct Outcome {
  int64_t reads = 0;
  int64_t bad_reads = 0;    // reads at or after expiry (stale), before the refresh landed
  int64_t recomputes = 0;
  int64_t early = 0;        // wins from the refresh-ahead window
  double first_grant_s = 0, last_grant_s = 0;
  double BadShare() const { return static_cast<double>(bad_reads) / static_cast<double>(reads); }
  // TTL / the mean interval between recomputes (as scripts/stampede-bench-rates).
  double PerTtl(double ttl_s) const {
    return recomputes > 1 ? ttl_s * static_cast<double>(recomputes - 1) / (last_grant_s - first_grant_s) : 0;
  }
};

// One key read `rate` times a second with TTL `ttl_s` for `ttls` TTLs after a
// warm-up of 10 TTLs; `use_spread` false judges with no spread (the rule
// before it had one).
Outcome Simulate(double rate, int64_t ttl_s, const Recompute& recompute, int ttls, bool use_spread,
                 uint64_t seed) {
  LeaseSettings settings;
  LeaseAsk ask;
  ask.refresh_ahead = true;
  Rng rng(seed);
  std::exponential_distribution<double> gap(rate);
  uint16_t count = ReadRate::Encode(ReadRate::kTrackedAfterReads);
  int64_t last_access_s = 0;
  uint16_t delta_ms = 0;
  double spread = kInitialSpread;
  int64_t expiry_tick = ttl_s * kTicksPerSecond;
  bool lease_out = false;
  int64_t granted_us = 0, store_us = 0;
  const int64_t warm_us = 10 * ttl_s * 1000000;
  const int64_t end_us = warm_us + ttls * ttl_s * 1000000;
  Outcome out;
  for (double t = gap(rng);; t += gap(rng)) {
    const int64_t now_us = static_cast<int64_t>(t * 1e6);
    if (now_us >= end_us) break;
    if (lease_out && store_us <= now_us) {   // the refresh lands
      const int64_t took_ms = (store_us - granted_us) / 1000;
      spread = SmoothSpread(spread, took_ms, delta_ms);
      delta_ms = SmoothDelta(delta_ms, took_ms);
      expiry_tick = TickOf(store_us) + ttl_s * kTicksPerSecond;
      lease_out = false;
    }
    const int64_t now_s = now_us / 1000000;
    LeaseView v;
    v.exptime = static_cast<int32_t>(expiry_tick);
    v.stale = TickOf(now_us) >= expiry_tick;
    v.token_sent = lease_out;
    v.lease_granted_ms = static_cast<uint32_t>(granted_us / 1000);
    v.delta_ms = delta_ms;
    v.delta_spread = use_spread ? spread : 0;
    v.reads_per_s = ReadRate::PerSecond(count, now_s - last_access_s);
    v.ttl_s = ttl_s;
    count = ReadRate::AfterRead(count, now_s - last_access_s, static_cast<uint32_t>(rng()));
    last_access_s = now_s;
    const LeaseDecision d = DecideRead(settings, v, ask, now_us, 1.0);
    const bool measured = now_us >= warm_us;
    if (measured) {
      out.reads++;
      if (v.stale) out.bad_reads++;
    }
    if (d.verdict != LeaseVerdict::kWin) continue;
    lease_out = true;
    granted_us = now_us;
    store_us = now_us + static_cast<int64_t>(std::max(1.0, recompute(rng)) * 1000);
    if (measured) {
      out.early += d.by_refresh;
      if (out.recomputes == 0) out.first_grant_s = t;
      out.last_grant_s = t;
      out.recomputes++;
    }
  }
  return out;
}

Recompute Normal(double mean_ms, double sd_ms) {
  return [=](Rng& rng) { return std::normal_distribution<double>(mean_ms, sd_ms)(rng); };
}
Recompute LogNormal(double median_ms, double sigma) {   // heavy right tail
  return [=](Rng& rng) { return std::lognormal_distribution<double>(std::log(median_ms), sigma)(rng); };
}
Recompute Pareto(double min_ms, double alpha) {          // heavier still (alpha 2.5: finite variance)
  return [=](Rng& rng) {
    return min_ms / std::pow(1.0 - std::uniform_real_distribution<double>(0, 1)(rng), 1.0 / alpha);
  };
}

struct Case {
  std::string name;
  Recompute recompute;
  double rate;
};

// The goals of issue 25 for keys read >= 5 times a second: at most
// `bad_share` of reads find the key expired (0.05%), at most 1.10 recomputes
// per key per TTL at 5 reads/s and 1.05 from 25 up.
template <size_t N>
void ExpectGoals(const Case (&cases)[N], double bad_share) {
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const int ttls = c.rate >= 100 ? 300 : 1500;
    const Outcome o = Simulate(c.rate, 10, c.recompute, ttls, /*use_spread=*/true, seed++);
    const double budget = c.rate >= 25 ? 1.05 : 1.10;
    EXPECT_LE(o.BadShare(), bad_share) << c.name << " at " << c.rate << "/s: " << o.bad_reads << " of " << o.reads;
    EXPECT_LE(o.PerTtl(10), budget) << c.name << " at " << c.rate << "/s";
    EXPECT_GE(o.PerTtl(10), 1.0) << c.name << " at " << c.rate << "/s";
  }
}

TEST(RefreshWindowSimulation, MeetsTheGoalsForNormalAndHeavyTailedRecomputeTimes) {
  const Case cases[] = {
      {"normal 100±10 ms", Normal(100, 10), 5},     {"normal 100±10 ms", Normal(100, 10), 25},
      {"normal 100±10 ms", Normal(100, 10), 100},   {"normal 100±10 ms", Normal(100, 10), 500},
      {"normal 100±40 ms", Normal(100, 40), 5},     {"normal 100±40 ms", Normal(100, 40), 25},
      {"normal 100±40 ms", Normal(100, 40), 100},   {"lognormal 100 ms σ0.5", LogNormal(100, 0.5), 5},
      {"lognormal 100 ms σ0.5", LogNormal(100, 0.5), 25},
      {"lognormal 100 ms σ0.5", LogNormal(100, 0.5), 100},
      {"lognormal 100 ms σ0.5", LogNormal(100, 0.5), 500},
  };
  ExpectGoals(cases, 0.0005);
}

// A Pareto tail (α 2.5: p99.9 at 16 times its minimum) is heavier than four
// mean deviations cover: a few refreshes in a thousand land late, and at
// 100 reads/s each costs tens of stale reads. The budget still holds.
TEST(RefreshWindowSimulation, AParetoTailCostsAFewStaleReadsInAThousand) {
  const Case cases[] = {
      {"pareto 80 ms α2.5", Pareto(80, 2.5), 5},
      {"pareto 80 ms α2.5", Pareto(80, 2.5), 25},
      {"pareto 80 ms α2.5", Pareto(80, 2.5), 100},
  };
  ExpectGoals(cases, 0.0025);
}

// Without the spread, a heavy tail makes refreshes land after expiry: the
// term is what the goals above owe to.
TEST(RefreshWindowSimulation, WithoutTheSpreadHeavyTailsLandLate) {
  const Case cases[] = {
      {"lognormal 100 ms σ0.5", LogNormal(100, 0.5), 100},
      {"pareto 80 ms α2.5", Pareto(80, 2.5), 100},
  };
  for (const Case& c : cases) {
    const Outcome with = Simulate(c.rate, 10, c.recompute, 300, true, 7);
    const Outcome without = Simulate(c.rate, 10, c.recompute, 300, false, 7);
    EXPECT_GT(without.BadShare(), 0.0005) << c.name;
    EXPECT_LT(with.BadShare(), without.BadShare()) << c.name;
  }
}

// Keys read at most once a second are never refreshed early, whatever the
// spread (the threshold is 2 reads/s: the estimate of a key read 1.9 times a
// second crosses it now and then).
TEST(RefreshWindowSimulation, KeysReadLessThanOnceASecondAreNotRefreshedEarly) {
  for (const double rate : {0.2, 0.5, 1.0}) {
    const Outcome o = Simulate(rate, 10, LogNormal(100, 0.5), 300, true, 3);
    EXPECT_GT(o.recomputes, 100) << rate;
    EXPECT_EQ(o.early, 0) << rate;
  }
}

}  // namespace
}  // namespace herdless
