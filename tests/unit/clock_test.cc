#include "storage/clock.h"

#include <gtest/gtest.h>

#include "storage/random.h"

namespace herdless {
namespace {

TEST(ManualClockTest, StartsAtZeroAndMovesOnlyWhenTold) {
  ManualClock clock(1700000000);
  EXPECT_EQ(clock.NowMicros(), 0);
  EXPECT_EQ(clock.UnixSeconds(), 1700000000);
  EXPECT_EQ(clock.NowMicros(), 0);

  clock.AdvanceMicros(1500);
  EXPECT_EQ(clock.NowMicros(), 1500);
  clock.AdvanceSeconds(2);
  EXPECT_EQ(clock.NowMicros(), 2001500);
  EXPECT_EQ(clock.UnixSeconds(), 1700000002);
}

TEST(SystemClockTest, StoreTimeZeroIsNeverAReadableMoment) {
  SystemClock clock;
  // The epoch is one second back, so "never expires" (0) is never "now".
  EXPECT_GE(clock.NowMicros(), 1000000);
}

TEST(SystemClockTest, MonotonicTimeNeverGoesBack) {
  SystemClock clock;
  int64_t last = clock.NowMicros();
  for (int i = 0; i < 1000; i++) {
    const int64_t now = clock.NowMicros();
    EXPECT_GE(now, last);
    last = now;
  }
}

TEST(SystemClockTest, UnixSecondsIsAPlausibleWallClock) {
  SystemClock clock;
  EXPECT_GT(clock.UnixSeconds(), 1600000000);  // after September 2020
}

TEST(DefaultRandomTest, DrawsLieInTheOpenClosedUnitInterval) {
  DefaultRandom random(42);
  double sum = 0;
  for (int i = 0; i < 10000; i++) {
    const double u = random.UniformOpenClosed();
    ASSERT_GT(u, 0.0);
    ASSERT_LE(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

}  // namespace
}  // namespace herdless
