// Refresh-ahead across a restart with -e, through the store itself: hot keys
// read as Poisson processes on a driven clock by meta reads asking for the
// refresh (mg Yr), each win stored one drawn recompute time later, then a
// stop as scripts/stampede-bench-rates makes it (reads stop, the refreshes
// out land, the snapshot is written) and a new store that loads it after a
// downtime, the reads going on with their schedule shifted by the pause.
// What the first TTL after the restart must show is what the TTLs before it
// show: the windows the restored rate, Δ and spread give, and the budget.
// Deterministic (fixed seeds): no timing.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "storage/item_store.h"
#include "storage/snapshot.h"
#include "storage/store_time.h"

namespace herdless {
namespace {

using Rng = std::mt19937_64;
using Recompute = std::function<double(Rng&)>;   // one recompute time, ms

constexpr int64_t kUnixStart = 1700000000;
constexpr int64_t kTtlS = 10;
constexpr int64_t kUs = 1000000;

// One process's store: its own clock, on the whole-second phase of the
// other's (SystemClock starts on the wall clock's fraction of a second).
struct Node {
  Node(int64_t unix_start, int64_t now_us) : clock(unix_start), random(7) {
    clock.AdvanceMicros(now_us);
    StoreConfig config;
    config.clock = &clock;
    config.random = &random;
    config.shard_bits = 2;
    config.stale_grace_s = 30;
    store = std::make_unique<ItemStore>(config);
  }
  ManualClock clock;
  DefaultRandom random;
  std::unique_ptr<ItemStore> store;
};

struct Phase {
  int64_t reads = 0, bad_reads = 0;   // bad: a stale value the restart did not make unavoidable
  std::vector<double> intervals_s;    // each grant's interval since the key's previous one
  std::vector<double> leads_s;        // early grants: how long before the value's expiry
  double PerTtl() const {
    double sum = 0;
    for (double s : intervals_s) sum += s;
    return sum > 0 ? static_cast<double>(intervals_s.size()) * kTtlS / sum : 0;
  }
  double MeanLead() const {
    double sum = 0;
    for (double s : leads_s) sum += s;
    return leads_s.empty() ? 0 : sum / static_cast<double>(leads_s.size());
  }
};

struct Band {
  Band(double r, int k) : rate(r), keys(k) {}
  double rate;
  int keys;
  Phase before, first_ttl;   // the 20 s before the restart, the first TTL after it
};

struct Event {
  int64_t at_us;
  bool store;   // else a read
  int key;
  bool operator>(const Event& o) const { return at_us > o.at_us; }
};

class RestartRun {
 public:
  RestartRun(std::vector<Band> bands, Recompute recompute, uint64_t seed, int64_t down_us)
      : bands_(std::move(bands)), recompute_(std::move(recompute)), rng_(seed), down_us_(down_us) {
    char dir[] = "/tmp/herdless-refresh-restart-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/snapshot";
  }
  ~RestartRun() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  // Fills, warms up 60 s, measures 20 s, restarts, measures the first TTL.
  void Run() {
    node_ = std::make_unique<Node>(kUnixStart, 100 * kUs);
    const int64_t start = 100 * kUs;
    for (size_t b = 0; b < bands_.size(); b++) {
      for (int i = 0; i < bands_[b].keys; i++) {
        keys_.push_back(KeyState{"k" + std::to_string(b) + ":" + std::to_string(i), b});
        const int k = static_cast<int>(keys_.size()) - 1;
        Store(k, start, std::uniform_int_distribution<int64_t>(1, kTtlS)(rng_));   // first expiries spread
        Push(Event{start + Gap(k), false, k});
      }
    }
    measure_from_ = start + 60 * kUs;
    restart_at_ = measure_from_ + 20 * kUs;
    bool restarted = false;
    while (!events_.empty()) {
      Event e = events_.top();
      if (!restarted && e.at_us >= restart_at_) {
        Restart();
        restarted = true;
        continue;
      }
      if (restarted && e.at_us >= resumed_ + kTtlS * kUs) break;
      events_.pop();
      SetTime(e.at_us);
      if (e.store) {
        Store(e.key, e.at_us);
      } else {
        Read(e.key, e.at_us);
        Push(Event{e.at_us + Gap(e.key), false, e.key});
      }
    }
  }

  const std::vector<Band>& bands() const { return bands_; }

 private:
  struct KeyState {
    std::string name;
    size_t band;
    int64_t expiry_us = 0;        // the value's expiry (its tick)
    int64_t last_grant_us = -1;
  };

  int64_t Gap(int k) {
    return static_cast<int64_t>(std::exponential_distribution<double>(bands_[keys_[k].band].rate)(rng_) * kUs);
  }
  void Push(const Event& e) { events_.push(e); }
  void SetTime(int64_t at_us) { node_->clock.AdvanceMicros(at_us - offset_us_ - node_->clock.NowMicros()); }

  void Store(int k, int64_t at_us, int64_t ttl_s = kTtlS) {
    StoreRequest req;
    req.key = keys_[k].name;
    req.value = "v";
    req.exptime = ttl_s;
    ASSERT_EQ(node_->store->Store(req).status, StoreStatus::kStored);
    keys_[k].expiry_us = (TickOf(at_us - offset_us_) + ttl_s * kTicksPerSecond) * kMicrosPerTick + offset_us_;
  }

  Phase* PhaseAt(Band& band, int64_t at_us) {
    if (at_us >= measure_from_ && at_us < restart_at_) return &band.before;
    if (resumed_ != 0 && at_us >= resumed_ && at_us < resumed_ + kTtlS * kUs) return &band.first_ttl;
    return nullptr;
  }

  void Read(int k, int64_t at_us) {
    KeyState& key = keys_[k];
    ReadOptions opts;
    opts.kind = ReadKind::kMeta;
    opts.lease.refresh_ahead = true;
    const ReadResult r = node_->store->Read(key.name, opts);
    ASSERT_EQ(r.status, ReadStatus::kHit) << key.name;
    Phase* phase = PhaseAt(bands_[key.band], at_us);
    if (phase != nullptr) {
      phase->reads++;
      // A value that expired from the stop until a refresh begun at the
      // first read after it could land had no read in time (the bench's "down").
      const bool unavoidable = key.expiry_us >= restart_at_ && key.expiry_us <= resumed_ + 100000;
      if (r.stale && !unavoidable) phase->bad_reads++;
    }
    if (r.lease != LeaseVerdict::kWin) return;
    if (phase != nullptr) {
      if (key.last_grant_us >= 0) phase->intervals_s.push_back((at_us - key.last_grant_us) / 1e6);
      if (r.lease_by_refresh) phase->leads_s.push_back((key.expiry_us - at_us) / 1e6);
    }
    key.last_grant_us = at_us;
    Push(Event{at_us + static_cast<int64_t>(std::max(1.0, recompute_(rng_)) * 1000), true, k});
  }

  // As the bench: no new reads; the refreshes out land; SIGTERM writes the
  // snapshot; a new process loads it `down_us_` later; the reads' schedule
  // moves by the whole pause.
  void Restart() {
    std::vector<Event> reads;
    int64_t stopped = restart_at_;
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (!e.store) {
        reads.push_back(e);
        continue;
      }
      SetTime(e.at_us);
      Store(e.key, e.at_us);
      stopped = e.at_us;
    }
    SetTime(stopped);
    SnapshotWriteOptions write;
    write.sync = false;
    ASSERT_TRUE(WriteSnapshot(node_->store.get(), path_, write).ok);
    resumed_ = stopped + down_us_;
    // The new process: its store time starts at its own 0, a whole number of
    // seconds from the old one's.
    const int64_t unix_now = kUnixStart + resumed_ / kUs;
    offset_us_ = (resumed_ / kUs - 100) * kUs;
    node_ = std::make_unique<Node>(unix_now - 100, resumed_ - offset_us_);
    const SnapshotLoadResult l = LoadSnapshot(node_->store.get(), path_, SnapshotLoadOptions());
    ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
    ASSERT_EQ(l.loaded, keys_.size());
    const int64_t shift = resumed_ - restart_at_;
    for (Event e : reads) {
      e.at_us += shift;
      Push(e);
    }
  }

  std::vector<Band> bands_;
  Recompute recompute_;
  Rng rng_;
  const int64_t down_us_;
  std::string dir_, path_;
  std::unique_ptr<Node> node_;
  int64_t offset_us_ = 0;   // timeline = node's store time + this
  std::vector<KeyState> keys_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t measure_from_ = 0, restart_at_ = 0, resumed_ = 0;
};

Recompute Normal(double mean_ms, double sd_ms) {
  return [=](Rng& rng) { return std::normal_distribution<double>(mean_ms, sd_ms)(rng); };
}
Recompute LogNormal(double median_ms, double sigma) {   // heavy right tail
  return [=](Rng& rng) { return std::lognormal_distribution<double>(std::log(median_ms), sigma)(rng); };
}

// The goals of issue 25 from the first TTL after a restart: at most 0.05% of
// reads stale (beyond the values the stop itself let expire), at most 1.10
// recomputes per key per TTL at 5 reads/s and 1.05 from 25 up, each a
// recompute's interval since the key's previous one, across the restart;
// and the early refreshes come as long before expiry as before the stop
// (the restored rate, Δ and spread give the windows the keys had).
void ExpectTheFirstTtlAsBefore(const Recompute& recompute, uint64_t seed) {
  RestartRun run({{5, 120}, {25, 48}, {100, 12}, {500, 4}}, recompute, seed, /*down_us=*/200000);
  run.Run();
  for (const Band& b : run.bands()) {
    const double budget = b.rate >= 25 ? 1.05 : 1.10;
    ASSERT_GE(b.first_ttl.intervals_s.size(), static_cast<size_t>(b.keys)) << b.rate;
    EXPECT_LE(b.first_ttl.PerTtl(), budget) << b.rate << "/s";
    EXPECT_LE(b.first_ttl.bad_reads, b.first_ttl.reads * 5 / 10000)
        << b.rate << "/s: " << b.first_ttl.bad_reads << " of " << b.first_ttl.reads;
    EXPECT_NEAR(b.first_ttl.MeanLead(), b.before.MeanLead(), 0.15 * b.before.MeanLead()) << b.rate << "/s";
    EXPECT_NEAR(b.first_ttl.PerTtl(), b.before.PerTtl(), 0.03) << b.rate << "/s";
  }
}

TEST(RefreshAheadRestart, TheFirstTtlAfterARestartIsLikeTheTtlsBeforeItNormalRecomputeTimes) {
  ExpectTheFirstTtlAsBefore(Normal(100, 10), 1);
  ExpectTheFirstTtlAsBefore(Normal(100, 10), 2);
}

TEST(RefreshAheadRestart, TheFirstTtlAfterARestartIsLikeTheTtlsBeforeItHeavyTailedRecomputeTimes) {
  ExpectTheFirstTtlAsBefore(LogNormal(100, 0.5), 3);
}

}  // namespace
}  // namespace herdless
