#include "server/rate_limiter.h"

#include <algorithm>
#include <chrono>

namespace tally::server {

TokenBucket::TokenBucket(double capacity, double refill_per_second, double now)
    : capacity_(capacity), rate_(refill_per_second), level_(capacity), last_(now) {}

void TokenBucket::refill(double now) {
  if (now > last_) {
    level_ = std::min(capacity_, level_ + (now - last_) * rate_);
    last_ = now;
  }
}

double TokenBucket::try_take(double amount, double now) {
  refill(now);
  amount = std::min(amount, capacity_);
  if (level_ >= amount) {
    level_ -= amount;
    return 0;
  }
  return rate_ > 0 ? (amount - level_) / rate_ : 1e9;
}

void TokenBucket::adjust(double delta, double now) {
  refill(now);
  level_ = std::min(capacity_, level_ + delta);
}

double TokenBucket::level(double now) {
  refill(now);
  return level_;
}

RateLimiter::RateLimiter(RateLimits limits, Clock clock)
    : limits_(limits), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
}

RateLimiter::Buckets& RateLimiter::buckets_of(const std::string& client, double now) {
  auto it = clients_.find(client);
  if (it == clients_.end()) {
    Buckets b;
    b.requests = TokenBucket(limits_.requests_per_minute, limits_.requests_per_minute / 60, now);
    b.tokens = TokenBucket(limits_.tokens_per_minute, limits_.tokens_per_minute / 60, now);
    it = clients_.emplace(client, b).first;
  }
  it->second.last_seen = now;
  return it->second;
}

// A client unseen for a minute has refilled its buckets (unless it ran into debt): its entry
// carries nothing and is dropped, so the table stays as small as the set of active clients.
void RateLimiter::forget_idle(double now) {
  if (now - last_sweep_ < 60) return;
  last_sweep_ = now;
  for (auto it = clients_.begin(); it != clients_.end();) {
    Buckets& b = it->second;
    const bool idle = now - b.last_seen > 60 && b.tokens.level(now) >= limits_.tokens_per_minute;
    it = idle ? clients_.erase(it) : std::next(it);
  }
}

RateLimiter::Decision RateLimiter::admit(const std::string& client, int64_t tokens) {
  if (!enabled()) return {};
  const double now = clock_();
  forget_idle(now);
  Buckets& b = buckets_of(client, now);
  const bool limit_requests = limits_.requests_per_minute > 0;
  const bool limit_tokens = limits_.tokens_per_minute > 0;
  // Check both before taking from either, so a refusal takes nothing.
  double wait_requests = 0;
  double wait_tokens = 0;
  if (limit_requests && b.requests.level(now) < 1) wait_requests = b.requests.try_take(1, now);
  if (limit_tokens) {
    const double want = std::min<double>(static_cast<double>(tokens), limits_.tokens_per_minute);
    const double level = b.tokens.level(now);
    if (level < want) wait_tokens = (want - level) / (limits_.tokens_per_minute / 60);
  }
  if (wait_requests > 0 || wait_tokens > 0) {
    const bool requests_worse = wait_requests >= wait_tokens;
    return {false, std::max(wait_requests, wait_tokens), requests_worse ? "requests" : "tokens"};
  }
  if (limit_requests) b.requests.try_take(1, now);
  if (limit_tokens) b.tokens.adjust(-static_cast<double>(tokens), now);
  return {};
}

RateLimiter::Decision RateLimiter::peek(const std::string& client) {
  if (limits_.requests_per_minute <= 0) return {};
  auto it = clients_.find(client);
  if (it == clients_.end()) return {};  // a new client starts with a full bucket
  TokenBucket& requests = it->second.requests;
  const double now = clock_();
  const double level = requests.level(now);
  if (level >= 1) return {};
  return {false, (1 - level) / (limits_.requests_per_minute / 60), "requests"};
}

void RateLimiter::settle(const std::string& client, int64_t reserved, int64_t used) {
  if (limits_.tokens_per_minute <= 0) return;
  const double now = clock_();
  Buckets& b = buckets_of(client, now);
  b.tokens.adjust(static_cast<double>(reserved - used), now);
}

}  // namespace tally::server
