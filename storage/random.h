// RandomSource: uniform draws for XFetch. Tests inject a seeded or scripted one.
#ifndef HERDLESS_STORAGE_RANDOM_H_
#define HERDLESS_STORAGE_RANDOM_H_

#include <cstdint>

namespace herdless {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A draw uniform on (0, 1]: never 0, so log() of it is finite. Thread-safe.
  virtual double UniformOpenClosed() = 0;
};

// xoshiro-style generator per thread, seeded from the OS (or from `seed` when
// non-zero, for reproducible tests).
class DefaultRandom final : public RandomSource {
 public:
  explicit DefaultRandom(uint64_t seed = 0);
  double UniformOpenClosed() override;

 private:
  uint64_t seed_;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_RANDOM_H_
