// Token buckets under an injected clock: refill, refusal with the right wait, reservation and
// settlement of tokens, and independence of clients.
#include "server/rate_limiter.h"

#include <gtest/gtest.h>

namespace {

using tally::server::RateLimiter;
using tally::server::RateLimits;
using tally::server::TokenBucket;

TEST(TokenBucket, StartsFullAndRefillsAtItsRate) {
  TokenBucket b(10, 1, 0);  // 10 tokens, 1 per second
  EXPECT_EQ(b.try_take(10, 0), 0);
  EXPECT_DOUBLE_EQ(b.try_take(1, 0), 1.0);  // empty: one second to wait
  EXPECT_DOUBLE_EQ(b.try_take(3, 1), 2.0);  // 1 token back after 1 s; 2 s more for 3
  EXPECT_EQ(b.try_take(3, 3), 0);
  EXPECT_DOUBLE_EQ(b.level(1000), 10);  // never above the capacity
}

TEST(TokenBucket, AmountsAboveCapacityNeedOnlyAFullBucket) {
  TokenBucket b(5, 1, 0);
  EXPECT_EQ(b.try_take(50, 0), 0);
  EXPECT_DOUBLE_EQ(b.level(0), 0);
}

TEST(TokenBucket, AdjustCanRunIntoDebt) {
  TokenBucket b(10, 1, 0);
  b.adjust(-25, 0);
  EXPECT_DOUBLE_EQ(b.level(0), -15);
  EXPECT_DOUBLE_EQ(b.level(20), 5);
}

struct FakeClock {
  double now = 100;
  RateLimiter::Clock fn() {
    return [this] { return now; };
  }
};

TEST(RateLimiter, DisabledAdmitsEverything) {
  RateLimiter limiter(RateLimits{});
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limiter.admit("c", 1'000'000).allowed);
}

TEST(RateLimiter, RequestsPerMinute) {
  FakeClock clock;
  RateLimiter limiter(RateLimits{6, 0}, clock.fn());  // one request per 10 s
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(limiter.admit("a", 0).allowed) << i;
  auto refused = limiter.admit("a", 0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_STREQ(refused.what, "requests");
  EXPECT_NEAR(refused.retry_after, 10.0, 1e-9);
  EXPECT_TRUE(limiter.admit("b", 0).allowed);  // another client has its own bucket
  clock.now += 10;
  EXPECT_TRUE(limiter.admit("a", 0).allowed);
  EXPECT_FALSE(limiter.admit("a", 0).allowed);
}

TEST(RateLimiter, TokensAreReservedThenSettled) {
  FakeClock clock;
  RateLimiter limiter(RateLimits{0, 600}, clock.fn());  // 10 tokens per second
  ASSERT_TRUE(limiter.admit("a", 500).allowed);         // reserves 500 of 600
  auto refused = limiter.admit("a", 200);
  EXPECT_FALSE(refused.allowed);
  EXPECT_STREQ(refused.what, "tokens");
  EXPECT_NEAR(refused.retry_after, 10.0, 1e-9);  // 100 missing at 10 per second
  limiter.settle("a", 500, 120);                 // used 120: 380 come back
  EXPECT_TRUE(limiter.admit("a", 200).allowed);
}

TEST(RateLimiter, ARefusalTakesNothing) {
  FakeClock clock;
  RateLimiter limiter(RateLimits{60, 100}, clock.fn());
  ASSERT_TRUE(limiter.admit("a", 100).allowed);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.admit("a", 50).allowed);
  clock.now += 30;  // 50 tokens and 30 requests back
  EXPECT_TRUE(limiter.admit("a", 50).allowed);
}

TEST(RateLimiter, OversizedRequestsRunWhenTheBucketIsFull) {
  FakeClock clock;
  RateLimiter limiter(RateLimits{0, 100}, clock.fn());
  EXPECT_TRUE(limiter.admit("a", 1000).allowed);  // more than a minute's worth: debt
  EXPECT_FALSE(limiter.admit("a", 1).allowed);
  limiter.settle("a", 1000, 1000);
  clock.now += 60 * 10;
  EXPECT_TRUE(limiter.admit("a", 1).allowed);
}

TEST(RateLimiter, ForgetsIdleClients) {
  FakeClock clock;
  RateLimiter limiter(RateLimits{10, 0}, clock.fn());
  for (int i = 0; i < 50; ++i) limiter.admit("client-" + std::to_string(i), 0);
  EXPECT_EQ(limiter.client_count(), 50u);
  clock.now += 120;
  limiter.admit("new", 0);
  EXPECT_EQ(limiter.client_count(), 1u);
}

}  // namespace
