// Worst-case latency while the index grows: one thread stores keys 0..N-1
// into an empty ItemStore (100-byte values, -m large enough that nothing is
// evicted), while a reader thread reads random keys already stored and times
// every Read. Prints the writer's and the reader's latency percentiles and
// maxima. A store whose index doubles a shard in one step shows it as reads
// (and stores) that wait for the whole rehash of that shard.
//
// Usage: growth_latency [items (default 4000000)] [shard_bits (default 6)]
// Built by scripts/bench-growth.sh; uses only ItemStore's public API.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

std::string KeyOf(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key:%010llu", static_cast<unsigned long long>(i));
  return buf;
}

void Report(const char* what, std::vector<int64_t>& ns) {
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) { return ns[std::min(ns.size() - 1, static_cast<size_t>(q * ns.size()))]; };
  size_t over100us = 0, over1ms = 0;
  for (int64_t v : ns) {
    over100us += v > 100000;
    over1ms += v > 1000000;
  }
  std::printf("%-6s n=%zu p50=%.2fus p99=%.2fus p99.9=%.2fus p99.99=%.2fus max=%.1fus "
              ">100us=%zu >1ms=%zu\n",
              what, ns.size(), at(0.5) / 1e3, at(0.99) / 1e3, at(0.999) / 1e3, at(0.9999) / 1e3,
              ns.back() / 1e3, over100us, over1ms);
  std::printf("%-6s ten slowest (us):", what);
  for (size_t i = ns.size() - std::min<size_t>(10, ns.size()); i < ns.size(); i++) {
    std::printf(" %.0f", ns[i] / 1e3);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t items = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4000000;
  const int shard_bits = argc > 2 ? std::atoi(argv[2]) : 6;
  herdless::SystemClock clock;
  herdless::DefaultRandom random(1);
  herdless::StoreConfig config;
  config.memory_limit = size_t{4} << 30;  // room for every item: growth only, no eviction
  config.shard_bits = shard_bits;
  config.clock = &clock;
  config.random = &random;
  herdless::ItemStore store(config);

  const std::string value(100, 'v');
  std::atomic<uint64_t> stored{0};
  std::atomic<bool> done{false};
  std::vector<int64_t> write_ns;
  std::vector<int64_t> read_ns;
  write_ns.reserve(items);
  read_ns.reserve(items * 2);

  std::thread reader([&] {
    uint64_t x = 88172645463325252ull;
    uint64_t misses = 0;
    while (!done.load(std::memory_order_relaxed)) {
      const uint64_t n = stored.load(std::memory_order_acquire);
      if (n == 0) continue;
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const std::string key = KeyOf(x % n);
      herdless::ReadOptions opts;
      const auto t0 = Clock::now();
      herdless::ReadResult r = store.Read(key, opts);
      const auto t1 = Clock::now();
      read_ns.push_back(Nanos(t0, t1));
      misses += r.status != herdless::ReadStatus::kHit;
    }
    if (misses != 0) std::printf("reader: %llu misses (expected none)\n", (unsigned long long)misses);
  });

  const auto start = Clock::now();
  for (uint64_t i = 0; i < items; i++) {
    const std::string key = KeyOf(i);
    herdless::StoreRequest req;
    req.key = key;
    req.value = value;
    const auto t0 = Clock::now();
    store.Store(req);
    const auto t1 = Clock::now();
    write_ns.push_back(Nanos(t0, t1));
    stored.store(i + 1, std::memory_order_release);
  }
  const double seconds = Nanos(start, Clock::now()) / 1e9;
  done = true;
  reader.join();
  const herdless::StoreStats s = store.Stats();
  std::printf("stored %llu items in %.2f s; curr_items=%llu evictions=%llu\n",
              (unsigned long long)items, seconds, (unsigned long long)s.curr_items,
              (unsigned long long)s.evictions);
  Report("store", write_ns);
  Report("read", read_ns);
  return 0;
}
