#include "storage/random.h"

#include <atomic>
#include <random>

namespace herdless {
namespace {

// splitmix64: tiny, fast, and good enough for a Bernoulli draw per read.
uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::atomic<uint64_t> g_stream{0};

}  // namespace

DefaultRandom::DefaultRandom(uint64_t seed) : seed_(seed != 0 ? seed : std::random_device{}()) {}

double DefaultRandom::UniformOpenClosed() {
  // Each thread gets its own stream so draws need no lock.
  thread_local uint64_t state = 0;
  thread_local const DefaultRandom* owner = nullptr;
  if (owner != this) {
    owner = this;
    state = seed_ ^ (g_stream.fetch_add(1, std::memory_order_relaxed) * 0xD1B54A32D192ED03ull);
  }
  // 53 random bits -> (0, 1].
  uint64_t bits = SplitMix(&state) >> 11;
  return (static_cast<double>(bits) + 1.0) / 9007199254740992.0;
}

}  // namespace herdless
