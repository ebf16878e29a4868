#include "storage/read_rate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace herdless {
namespace {

// Drives the estimate the way ItemStore does: whole-second access times, the
// rate read just before each read is added. Reads arrive as a Poisson process.
struct Simulation {
  uint16_t count = 0;
  int64_t last_s = 0;
  std::mt19937_64 rng{12345};

  double ReadAt(double t) {
    const int64_t s = static_cast<int64_t>(std::floor(t));
    const int64_t elapsed = count == 0 ? 0 : s - last_s;
    const double estimate = count == 0 ? 0 : ReadRate::PerSecond(count, elapsed);
    if (count == 0) count = ReadRate::Encode(ReadRate::kTrackedAfterReads);
    count = ReadRate::AfterRead(count, elapsed, static_cast<uint32_t>(rng()));
    last_s = s;
    return estimate;
  }
};

struct Accuracy {
  double median_ratio;     // median estimate / true rate
  double within_2x;        // fraction of estimates in [rate/2, 2*rate]
};

// Estimates seen by reads after a warm-up of five time constants.
Accuracy Measure(double rate, int samples) {
  Simulation sim;
  std::exponential_distribution<double> gap(rate);
  std::mt19937_64 arrivals(static_cast<uint64_t>(rate * 1000) + 7);
  const double warmup_s = 5 * ReadRate::kTimeConstantS;
  double t = 0;
  std::vector<double> ratios;
  while (static_cast<int>(ratios.size()) < samples) {
    t += gap(arrivals);
    const double estimate = sim.ReadAt(t);
    if (t >= warmup_s) ratios.push_back(estimate / rate);
  }
  std::sort(ratios.begin(), ratios.end());
  const auto in = std::count_if(ratios.begin(), ratios.end(),
                                [](double r) { return r >= 0.5 && r <= 2.0; });
  return {ratios[ratios.size() / 2], static_cast<double>(in) / ratios.size()};
}

// The accuracy the issue asks for: within a factor of about 2 from 0.1 to
// 10 000 reads/s. At low rates the estimate rests on a handful of reads per
// time constant (1.6 at 0.1 reads/s), so single estimates spread more there.
TEST(ReadRateTest, AccurateWithinAFactorOfTwoFromATenthToTenThousandReadsPerSecond) {
  struct Case {
    double rate;
    int samples;
    double min_within_2x;
  };
  const Case cases[] = {
      {0.1, 3000, 0.70},   {0.2, 3000, 0.80},   {0.5, 3000, 0.90},  {1, 5000, 0.97},
      {2, 5000, 0.99},     {5, 10000, 0.999},   {25, 20000, 0.999}, {100, 50000, 0.999},
      {500, 50000, 0.999}, {1000, 50000, 0.999}, {10000, 200000, 0.999},
  };
  for (const Case& c : cases) {
    const Accuracy a = Measure(c.rate, c.samples);
    std::printf("rate %8.1f/s: median estimate %.3f x, %.4f within 2x\n", c.rate, a.median_ratio,
                a.within_2x);
    EXPECT_GT(a.median_ratio, 0.8) << c.rate;
    EXPECT_LT(a.median_ratio, 1.25) << c.rate;
    EXPECT_GE(a.within_2x, c.min_within_2x) << c.rate;
  }
}

TEST(ReadRateTest, DecaysWithTheTimeConstantWhenReadsStop) {
  Simulation sim;
  for (int i = 0; i < 100 * 200; i++) sim.ReadAt(i / 100.0);   // 100 reads/s for 200 s
  const double at_stop = ReadRate::PerSecond(sim.count, 1);
  EXPECT_NEAR(at_stop, 100, 10);
  for (int64_t quiet : {16, 32, 64, 160}) {
    const double expected = at_stop * std::exp(-(quiet - 1) / ReadRate::kTimeConstantS);
    EXPECT_NEAR(ReadRate::PerSecond(sim.count, quiet), expected, expected * 0.01) << quiet;
  }
  EXPECT_EQ(ReadRate::PerSecond(sim.count, 100000), 0);
  // A stored decay (MoveAccessTime, a rewrite) agrees with the computed one.
  const uint16_t decayed = ReadRate::Decayed(sim.count, 16, 0);
  EXPECT_NEAR(ReadRate::PerSecond(decayed, 0), ReadRate::PerSecond(sim.count, 16),
              ReadRate::PerSecond(sim.count, 16) * 0.001);
}

TEST(ReadRateTest, FollowsAChangeOfRateWithinAFewTimeConstants) {
  Simulation sim;
  double t = 0;
  for (; t < 200; t += 0.01) sim.ReadAt(t);   // 100 reads/s
  for (; t < 200 + 4 * ReadRate::kTimeConstantS; t += 1) sim.ReadAt(t);   // then 1 read/s
  EXPECT_NEAR(ReadRate::PerSecond(sim.count, 1), 1 + 99 * std::exp(-4.0), 1.0);
}

TEST(ReadRateTest, CountsRoundTripAndSaturate) {
  for (double reads : {0.0625, 1.0, 2.5, 100.0, 511.9375, 1000.0, 123456.0}) {
    const double back = ReadRate::CountOf(ReadRate::Encode(reads));
    EXPECT_LE(back, reads);
    EXPECT_GE(back, reads * (1 - 1.0 / 4096) - 0.0625) << reads;
  }
  EXPECT_EQ(ReadRate::Encode(0), 0);
  EXPECT_EQ(ReadRate::Encode(1e12), UINT16_MAX);   // saturates, never wraps
  EXPECT_EQ(ReadRate::AfterRead(UINT16_MAX, 0, 0xFFFFFFFFu), UINT16_MAX);
}

TEST(ReadRateTest, AReadInTheSameSecondAddsOneReadToEveryCount) {
  // Every code, a read with no time elapsed: the count plus one read, rounded
  // down with no dither (at counts too large to hold it exactly, and where
  // it saturates) and exactly whatever the dither while a code still is its
  // number of units (from 512 reads on, the rounding path).
  for (uint32_t code = 0; code <= UINT16_MAX; code++) {
    const uint16_t count = static_cast<uint16_t>(code);
    const uint16_t plus_one = ReadRate::Encode(ReadRate::CountOf(count) + 1);
    ASSERT_EQ(ReadRate::AfterRead(count, 0, 0), plus_one) << code;
    if (ReadRate::CountOf(count) + 1 < 512) {
      for (uint32_t random : {1u, 0x80000000u, 0xFFFFFFFFu}) {
        ASSERT_EQ(ReadRate::AfterRead(count, 0, random), plus_one) << code << " " << random;
      }
    }
  }
}

TEST(ReadRateTest, StochasticRoundingLosesNoReads) {
  // Counts that are not representable still add up on average: one read a
  // second at a large count, where one read is below the code's resolution.
  uint16_t count = ReadRate::Encode(20000);
  std::mt19937_64 rng(1);
  double expected = ReadRate::CountOf(count);
  const double a = std::exp(-1.0 / ReadRate::kTimeConstantS);
  for (int i = 0; i < 2000; i++) {
    count = ReadRate::AfterRead(count, 1, static_cast<uint32_t>(rng()));
    expected = expected * a + 1;
  }
  EXPECT_NEAR(ReadRate::CountOf(count), expected, expected * 0.05);
}

TEST(ReadRateTest, TtlCodeWithinTenPercent) {
  EXPECT_EQ(ReadRate::TtlCode(0), 0);
  EXPECT_EQ(ReadRate::TtlOfCode(0), 0);
  for (int64_t ttl : {1, 2, 5, 10, 30, 60, 300, 3600, 30000}) {
    const int64_t back = ReadRate::TtlOfCode(ReadRate::TtlCode(ttl));
    EXPECT_NEAR(static_cast<double>(back), static_cast<double>(ttl), std::max(1.0, ttl * 0.1)) << ttl;
  }
  EXPECT_EQ(ReadRate::TtlCode(int64_t{1} << 40), 127);   // saturates
}

TEST(ReadRateStateTest, HotMarkAndTtlShareAByte) {
  ReadRateState s;
  EXPECT_FALSE(s.present());
  s.set_ttl_code(100);
  s.set_hot(true);
  EXPECT_TRUE(s.hot());
  EXPECT_EQ(s.ttl_code(), 100);
  s.set_hot(false);
  EXPECT_EQ(s.ttl_code(), 100);
  s.set_ttl_code(3);
  EXPECT_FALSE(s.hot());
  EXPECT_EQ(s.ttl_code(), 3);
}

}  // namespace
}  // namespace herdless
