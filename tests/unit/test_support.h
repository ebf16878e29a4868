// What the unit tests share: the bytes a ReplyBuffer owes, a fake of the
// process around the executors (ServerInfo), a store configuration on a clock
// the test drives, scripted random draws, and binary request packets. Free of
// GoogleTest, so that the fuzz targets can use it too; header only, so that
// they need no extra object to link.
#ifndef HERDLESS_TESTS_UNIT_TEST_SUPPORT_H_
#define HERDLESS_TESTS_UNIT_TEST_SUPPORT_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/settings_stats.h"
#include "protocol/binary_wire.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"

namespace herdless {

// Every byte `out` owes, in order; consumes them, as a connection's writes do.
inline std::string Drain(ReplyBuffer* out) {
  std::string s;
  struct iovec iov[64];
  while (!out->empty()) {
    const int n = out->FillIovecs(iov, 64);
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
      s.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      total += iov[i].iov_len;
    }
    out->Consume(total);
  }
  return s;
}

// The process around the executors. Snapshot() is `snapshot` with the test's
// ThreadStats as the totals; stats reset resets them; the control commands
// (verbosity, shutdown, refresh_certs) are recorded, not carried out.
class FakeServer : public ServerInfo {
 public:
  explicit FakeServer(ThreadStats* stats) : stats_(stats) {}

  ServerSnapshot Snapshot() override {
    ServerSnapshot s = snapshot;
    s.totals = ThreadStatsTotals();
    s.totals.Add(*stats_);
    return s;
  }
  std::vector<ConnectionInfo> Connections() override { return connections; }
  const ProtocolSettings& Settings() const override { return settings; }
  // The daemon's option table writes them (daemon/settings_stats.h), so that
  // stats settings is tested as it runs; a fuzz target that makes a
  // FakeServer must link those daemon files.
  void WriteSettings(const ItemStore& store, StatWriter* w) override {
    WriteSettingsStats(*this, store, w);
  }
  void ResetStats() override {
    stats_->Reset();
    ++resets;
  }
  void SetVerbosity(int level) override { verbosity = level; }
  int Verbosity() const override { return verbosity; }
  void Shutdown(bool graceful) override {
    ++shutdowns;
    last_shutdown_graceful = graceful;
  }
  bool RefreshCerts(std::string* error) override {
    ++refreshes;
    if (refresh_error.empty()) return true;
    *error = refresh_error;
    return false;
  }

  ProtocolSettings settings;
  ServerSnapshot snapshot;
  std::vector<ConnectionInfo> connections;
  int verbosity = 0;
  int resets = 0;
  int shutdowns = 0;
  bool last_shutdown_graceful = false;
  int refreshes = 0;
  std::string refresh_error;   // "" = refresh_certs succeeds

 private:
  ThreadStats* stats_;
};

// A store configuration whose time and random draws the test drives, in
// 2^shard_bits shards; every other field at its default.
inline StoreConfig DrivenStoreConfig(Clock* clock, RandomSource* random, int shard_bits = 2) {
  StoreConfig config;
  config.clock = clock;
  config.random = random;
  config.shard_bits = shard_bits;
  return config;
}

// Stores `value_len` bytes of 'v' under `key` (a set); returns the outcome.
inline StoreStatus PutFiller(ItemStore* store, std::string_view key, size_t value_len,
                             int64_t exptime = 0, bool binary_key = false) {
  const std::string value(value_len, 'v');
  StoreRequest req;
  req.key = key;
  req.value = value;
  req.exptime = exptime;
  req.binary_key = binary_key;
  return store->Store(req).status;
}

// Replays the draws a test scripts, then 1.0: an XFetch draw that never wins
// before expiry. Thread-safe (some tests read from several threads).
class ScriptedRandom final : public RandomSource {
 public:
  // Replaces the draws not yet taken.
  void Script(std::initializer_list<double> draws) {
    std::lock_guard<std::mutex> lock(mu_);
    draws_.assign(draws);
  }
  void Push(double u) {
    std::lock_guard<std::mutex> lock(mu_);
    draws_.push_back(u);
  }
  double UniformOpenClosed() override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_++;
    if (draws_.empty()) return 1.0;
    const double u = draws_.front();
    draws_.pop_front();
    return u;
  }
  size_t left() const {
    std::lock_guard<std::mutex> lock(mu_);
    return draws_.size();
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::deque<double> draws_;
  int calls_ = 0;
};

// `v` as `bytes` big-endian bytes, and back.
inline std::string Be(uint64_t v, int bytes) {
  std::string s(bytes, '\0');
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) s[i] = static_cast<char>(v & 0xff);
  return s;
}
inline uint64_t FromBe(std::string_view s) {
  uint64_t v = 0;
  for (unsigned char c : s) v = (v << 8) | c;
  return v;
}

// A binary request packet; each length is the true one unless given (>= 0):
// the lies a parser must catch.
inline std::string Packet(uint8_t opcode, std::string key = "", std::string extras = "",
                          std::string value = "", uint64_t cas = 0, uint32_t opaque = 0,
                          int64_t keylen = -1, int64_t extlen = -1, int64_t bodylen = -1,
                          uint8_t magic = binary::kRequestMagic) {
  std::string p;
  p += static_cast<char>(magic);
  p += static_cast<char>(opcode);
  p += Be(keylen < 0 ? key.size() : static_cast<uint64_t>(keylen), 2);
  p += static_cast<char>(extlen < 0 ? extras.size() : static_cast<uint64_t>(extlen));
  p += std::string(3, '\0');   // data type, vbucket
  const uint64_t true_bodylen = key.size() + extras.size() + value.size();
  p += Be(bodylen < 0 ? true_bodylen : static_cast<uint64_t>(bodylen), 4);
  p += Be(opaque, 4);
  p += Be(cas, 8);
  return p + extras + key + value;
}

}  // namespace herdless

#endif  // HERDLESS_TESTS_UNIT_TEST_SUPPORT_H_
