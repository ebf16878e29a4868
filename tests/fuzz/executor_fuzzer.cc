// libFuzzer target for Executor::Process and BinaryExecutor::Process on a real
// ItemStore: the parsers and every command's execution (classic, meta, lease,
// binary), with eviction, expiry and leases in play. As a connection under
// -B auto, the stream's first byte picks the protocol (0x80: binary) and the
// rest of the stream stays in it, whatever it holds (target "executor" starts
// from text seeds, "mixed" from binary and text seeds, each mutated into the
// other's bytes). The first two input bytes pick the store's limits, the
// settings, how the rest is cut into chunks and how far the clock moves
// between chunks; the rest is one client's byte stream, fed the way
// daemon/connection.cc feeds it (append, Process until no progress, drop
// consumed and swallowed bytes, honour close, write replies out).
// Checked:
//   - Process never consumes more than it was given, and makes progress
//     whenever it returns with output room and a complete request pending;
//   - each Process call gets an exactly-sized heap copy of the input that is
//     freed right after, so ASan catches a reply or item that keeps pointing
//     into the input, and any read outside it;
//   - every reply byte is readable (the output is copied out as a socket
//     would send it), also after later commands replaced or evicted the items
//     it references;
//   - the store's byte count stays within its memory limit.
// Built and run by scripts/fuzz.sh.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/binary_executor.h"
#include "protocol/executor.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"

namespace herdless {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

class FuzzServer : public ServerInfo {
 public:
  explicit FuzzServer(ThreadStats* stats) : stats_(stats) {}
  ServerSnapshot Snapshot() override {
    ServerSnapshot s;
    s.pid = 1;
    s.threads = 1;
    s.totals.Add(*stats_);
    return s;
  }
  std::vector<ConnectionInfo> Connections() override {
    ConnectionInfo c;
    c.addr = "127.0.0.1:1";
    c.state = "conn_parse_cmd";
    return {c};
  }
  const ProtocolSettings& Settings() const override { return settings; }
  // The daemon's option table writes these; the fuzzer links no daemon code.
  void WriteSettings(const ItemStore&, StatWriter*) override {}
  void ResetStats() override { stats_->Reset(); }
  void SetVerbosity(int level) override { verbosity_ = level; }
  int Verbosity() const override { return verbosity_; }
  void Shutdown(bool) override {}

  ProtocolSettings settings;

 private:
  ThreadStats* stats_;
  int verbosity_ = 0;
};

// A deterministic RandomSource (XFetch draws), so a crash reproduces.
class FuzzRandom : public RandomSource {
 public:
  explicit FuzzRandom(uint32_t seed) : x_(seed | 1) {}
  double UniformOpenClosed() override {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 17;
    x_ ^= x_ << 5;
    return (static_cast<double>(x_ % 1000000) + 1) / 1000000.0;
  }

 private:
  uint32_t x_;
};

// Sends up to `limit` bytes of the output "to the socket": copies them out.
void WriteOut(ReplyBuffer* out, size_t limit, std::string* sink) {
  while (!out->empty() && limit > 0) {
    struct iovec iov[16];
    const int n = out->FillIovecs(iov, 16);
    Check(n > 0);
    size_t taken = 0;
    for (int i = 0; i < n && taken < limit; ++i) {
      const size_t len = std::min(iov[i].iov_len, limit - taken);
      sink->assign(static_cast<const char*>(iov[i].iov_base), len);   // touches every byte
      taken += len;
    }
    out->Consume(taken);
    limit -= taken;
  }
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size < 2) return 0;
  const uint32_t seed = data[0] | (uint32_t{data[1]} << 8);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  ManualClock clock;
  FuzzRandom random(seed);
  StoreConfig config;
  config.item_size_max = (seed & 1) ? 1024 : 64 * 1024;
  config.memory_limit = (seed & 2) ? 4 * config.item_size_max : 1u << 20;
  config.shard_bits = (seed >> 2) & 1;
  config.lease.lease_timeout_ms = (seed & 8) ? 0 : 2000;
  config.stale_grace_s = (seed & 16) ? 5 : 0;
  config.clock = &clock;
  config.random = &random;
  ItemStore store(config);

  ThreadStats stats;
  FuzzServer server(&stats);
  server.settings.cas_enabled = (seed & 32) == 0;
  server.settings.shutdown_enabled = (seed & 64) != 0;
  server.settings.classic_stampede = static_cast<ClassicStampedeMode>((seed >> 7) % 3);
  server.settings.item_size_max = config.item_size_max;
  server.settings.max_bytes = config.memory_limit;
  Executor executor(&store, &server, &stats);
  BinaryExecutor binary_executor(&store, &server, &stats);
  const bool binary = !stream.empty() && static_cast<uint8_t>(stream[0]) == 0x80;

  // Back-pressure as in the daemon, but tiny, so early stops happen often.
  const size_t max_output = (seed & 0x200) ? 64 : SIZE_MAX;
  const int max_requests = (seed & 0x400) ? 1 + ((seed >> 11) & 3) : 0;
  const int64_t clock_step_us = ((seed >> 13) & 7) * 400000;   // 0..2.8 s per chunk

  uint32_t x = seed * 2654435761u + 1;
  std::string buffer;
  std::string sink;
  uint64_t pending_swallow = 0;
  size_t pos = 0;
  bool closed = false;
  ReplyBuffer out;
  while (pos < stream.size() && !closed) {
    x = x * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(1 + (x >> 16) % 96, stream.size() - pos);
    std::string_view chunk = stream.substr(pos, n);
    pos += n;
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(pending_swallow, chunk.size()));
    pending_swallow -= skip;
    buffer.append(chunk.substr(skip));
    clock.AdvanceMicros(clock_step_us);
    if ((x >> 20) & 1) store.ReclaimExpired(4);   // the daemon's maintenance timer

    for (;;) {
      if (buffer.empty()) break;
      const size_t len = buffer.size();
      std::unique_ptr<char[]> copy(new char[len]);
      std::memcpy(copy.get(), buffer.data(), len);
      const std::string_view input(copy.get(), len);
      const ProcessOutcome o =
          binary ? binary_executor.Process(input, &out, max_output, max_requests)
                 : executor.Process(input, &out, max_output, max_requests);
      copy.reset();   // the executor may keep nothing that points into its input
      Check(o.consumed <= len);
      buffer.erase(0, o.consumed);
      if (o.close) {
        closed = true;
        break;
      }
      if (o.swallow > 0) {
        const size_t drop = static_cast<size_t>(std::min<uint64_t>(o.swallow, buffer.size()));
        buffer.erase(0, drop);
        pending_swallow = o.swallow - drop;
        if (pending_swallow > 0) break;
      }
      const bool progressed = o.consumed > 0 || o.swallow > 0;
      if (!progressed && out.pending_bytes() <= max_output) break;   // needs more bytes
      // The socket takes a little at a time (the rest stays owed, as to a
      // slow reader), or all once the output bound stopped the executor.
      WriteOut(&out, progressed && (x >> 8) % 3 == 0 ? 7 : SIZE_MAX, &sink);
    }
    Check(store.Stats().bytes <= store.memory_limit());
  }
  WriteOut(&out, SIZE_MAX, &sink);
  return 0;
}
