#include "metrics/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "metrics/counter.h"

namespace tally::metrics {
namespace {

const std::vector<double> kBounds = {0.1, 0.5, 1.0};

TEST(Histogram, BoundsAreInclusiveAndCountsCumulative) {
  Histogram h(kBounds);
  for (double v : {0.05, 0.1, 0.2, 0.5, 0.7, 1.0, 3.0, 99.0}) h.observe(v);
  const Histogram::Snapshot s = h.snapshot();
  ASSERT_EQ(s.cumulative.size(), 4u);
  EXPECT_EQ(s.cumulative[0], 2u);  // 0.05, 0.1 (le is <=)
  EXPECT_EQ(s.cumulative[1], 4u);  // + 0.2, 0.5
  EXPECT_EQ(s.cumulative[2], 6u);  // + 0.7, 1.0
  EXPECT_EQ(s.cumulative[3], 8u);  // + 3, 99 in +Inf
  EXPECT_EQ(s.count(), 8u);
  EXPECT_DOUBLE_EQ(s.sum, 0.05 + 0.1 + 0.2 + 0.5 + 0.7 + 1.0 + 3.0 + 99.0);
}

TEST(Histogram, NanIsIgnoredAndNegativeGoesToTheFirstBucket) {
  Histogram h(kBounds);
  h.observe(std::nan(""));
  h.observe(-1.0);
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(s.cumulative[0], 1u);
  EXPECT_EQ(s.sum, -1.0);
}

TEST(Histogram, EmptyBoundsIsOnlyInf) {
  Histogram h(std::span<const double>{});
  h.observe(5);
  EXPECT_EQ(h.snapshot().cumulative, std::vector<uint64_t>{1});
}

TEST(Histogram, RejectsUnsortedBounds) {
  EXPECT_FALSE(valid_bucket_bounds(std::vector<double>{1.0, 1.0}));
  EXPECT_FALSE(valid_bucket_bounds(std::vector<double>{2.0, 1.0}));
  EXPECT_FALSE(valid_bucket_bounds(std::vector<double>{1.0, INFINITY}));
  EXPECT_TRUE(valid_bucket_bounds(std::vector<double>{0.001, 1.0, 2560.0}));
}

// Four threads observe at once: no observation may be lost. Values are multiples of 1/4 so
// the sum is exact whatever the order.
TEST(Histogram, ConcurrentObservesSumCorrectly) {
  Histogram h(kBounds);
  Counter c;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        h.observe(0.25 * ((i + t) % 8));  // 0, 0.25, ..., 1.75
        c.inc();
      }
    });
  }
  for (auto& th : threads) th.join();
  const Histogram::Snapshot s = h.snapshot();
  const uint64_t total = kThreads * kPerThread;
  EXPECT_EQ(s.count(), total);
  EXPECT_EQ(c.value(), static_cast<double>(total));
  // Per 8 consecutive values: 0 in le=0.1; 0, 0.25, 0.5 in le=0.5; + 0.75, 1.0 in le=1.0.
  EXPECT_EQ(s.cumulative[0], total / 8);
  EXPECT_EQ(s.cumulative[1], total * 3 / 8);
  EXPECT_EQ(s.cumulative[2], total * 5 / 8);
  EXPECT_EQ(s.sum, static_cast<double>(total / 8) * (0.25 * 28));
}

TEST(Counter, OnlyGoesUp) {
  Counter c;
  c.inc(2);
  c.inc(-5);  // ignored
  EXPECT_EQ(c.value(), 2);
  c.advance_to(10);
  EXPECT_EQ(c.value(), 10);
  c.advance_to(7);  // a lower total never lowers the counter
  EXPECT_EQ(c.value(), 10);
}

TEST(Gauge, SetIncDec) {
  Gauge g;
  g.set(3);
  g.inc();
  g.dec(0.5);
  EXPECT_EQ(g.value(), 3.5);
}

}  // namespace
}  // namespace tally::metrics
