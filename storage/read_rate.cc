#include "storage/read_rate.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace herdless {

namespace {

constexpr double kUnitsPerRead = 16.0;
constexpr int kMantissaBits = 12;
constexpr uint32_t kMantissaSpan = 1u << kMantissaBits;   // 4096
constexpr int kMaxExponent = 15;
// After this many seconds without a read any count has decayed to nothing
// (exp(-400/16) * the largest count < 1/16 read).
constexpr int64_t kForgetAfterS = 400;

// a^k for k = 0..kForgetAfterS, a = exp(-1/tau).
const std::array<double, kForgetAfterS + 1>& DecayTable() {
  static const std::array<double, kForgetAfterS + 1> table = [] {
    std::array<double, kForgetAfterS + 1> t{};
    for (int64_t k = 0; k <= kForgetAfterS; k++) {
      t[k] = std::exp(-static_cast<double>(k) / ReadRate::kTimeConstantS);
    }
    return t;
  }();
  return table;
}

double DecayFactor(int64_t elapsed_s) {
  if (elapsed_s <= 0) return 1.0;
  if (elapsed_s > kForgetAfterS) return 0.0;
  return DecayTable()[elapsed_s];
}

// Expected count just before a read at a steady rate of one read a second
// (see the header): a/(1-a) + 1/2.
double ReadsPerUnitRate() {
  static const double d = [] {
    const double a = std::exp(-1.0 / ReadRate::kTimeConstantS);
    return a / (1.0 - a) + 0.5;
  }();
  return d;
}

double UnitsOf(uint16_t code) {
  const uint32_t e = code >> kMantissaBits;
  const uint32_t m = code & (kMantissaSpan - 1);
  if (e == 0) return m;
  return std::ldexp(static_cast<double>(kMantissaSpan + m), static_cast<int>(e) - 1);
}

// The code of `units`, rounded down or up with the probability that makes
// the rounding unbiased (`dither` uniform on [0, 1)).
uint16_t CodeOf(double units, double dither) {
  if (!(units > 0)) return 0;
  if (units < 2.0 * kMantissaSpan) {
    // Below 8192 units the code is the number of units itself.
    return static_cast<uint16_t>(std::min<double>(std::floor(units + dither), 2.0 * kMantissaSpan));
  }
  int x;
  std::frexp(units, &x);                   // units in [2^(x-1), 2^x)
  int e = x - kMantissaBits;               // units in [4096 << (e-1), 8192 << (e-1))
  double q = std::floor(std::ldexp(units, 1 - e) + dither);   // in [4096, 8192]
  if (q >= 2.0 * kMantissaSpan) {
    e++;
    q = kMantissaSpan;
  }
  if (e > kMaxExponent) return UINT16_MAX;
  return static_cast<uint16_t>((static_cast<uint32_t>(e) << kMantissaBits) |
                               (static_cast<uint32_t>(q) - kMantissaSpan));
}

double Dither(uint32_t random) { return static_cast<double>(random) * 0x1p-32; }

}  // namespace

double ReadRate::CountOf(uint16_t count) { return UnitsOf(count) / kUnitsPerRead; }

uint16_t ReadRate::Encode(double reads) { return CodeOf(reads * kUnitsPerRead, 0.0); }

uint16_t ReadRate::Decayed(uint16_t count, int64_t elapsed_s, uint32_t random) {
  if (elapsed_s <= 0 || count == 0) return count;
  return CodeOf(UnitsOf(count) * DecayFactor(elapsed_s), Dither(random));
}

uint16_t ReadRate::AfterRead(uint16_t count, int64_t elapsed_s, uint32_t random) {
  // Most reads of a hot key come in the same second as the one before: no
  // decay, and below 2 * kMantissaSpan units a code is its number of units,
  // so the read adds exactly kUnitsPerRead to it (what the general path
  // computes, without its floating point).
  constexpr uint32_t kReadUnits = static_cast<uint32_t>(kUnitsPerRead);
  if (elapsed_s <= 0 && count + kReadUnits <= 2 * kMantissaSpan) return static_cast<uint16_t>(count + kReadUnits);
  return CodeOf(UnitsOf(count) * DecayFactor(elapsed_s) + kUnitsPerRead, Dither(random));
}

double ReadRate::PerSecond(uint16_t count, int64_t elapsed_s) {
  return CountOf(count) * DecayFactor(elapsed_s) / ReadsPerUnitRate();
}

uint8_t ReadRate::TtlCode(int64_t ttl_s) {
  if (ttl_s <= 0) return 0;
  const double code = std::round(8.0 * std::log2(static_cast<double>(ttl_s) + 1.0));
  return static_cast<uint8_t>(std::clamp(code, 1.0, 127.0));
}

int64_t ReadRate::TtlOfCode(uint8_t code) {
  if (code == 0) return 0;
  return static_cast<int64_t>(std::llround(std::exp2(code / 8.0) - 1.0));
}

}  // namespace herdless
