// Per-client token buckets: one for requests (--rate-limit-rpm) and one for tokens
// (--rate-limit-tpm), keyed by API key id (or by client address without auth). A bucket
// holds up to a minute's allowance and refills continuously.
//
// Requests: admit() takes one request and reserves the request's worst case of tokens
// (prompt + max_tokens x n); settle() returns what it did not use. A bucket may not hold a
// reservation larger than its capacity, so a request asking for more than a minute's tokens
// still runs when its bucket is full (and then empties it).
//
// The clock is injected (seconds, monotonic) so tests can drive time. Not thread-safe: the
// server calls it from its I/O thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace tally::server {

class TokenBucket {
 public:
  TokenBucket() = default;
  TokenBucket(double capacity, double refill_per_second, double now);

  // Takes `amount` (capped at the capacity) if available; otherwise takes nothing and
  // returns the seconds until it would be.
  double try_take(double amount, double now);
  // Returns tokens (never above the capacity) or takes more (the level may go negative:
  // debt that later requests wait out).
  void adjust(double delta, double now);
  double level(double now);

 private:
  void refill(double now);

  double capacity_ = 0;
  double rate_ = 0;  // per second
  double level_ = 0;
  double last_ = 0;
};

struct RateLimits {
  double requests_per_minute = 0;  // 0 = unlimited
  double tokens_per_minute = 0;    // 0 = unlimited
};

class RateLimiter {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  explicit RateLimiter(RateLimits limits, Clock clock = {});

  bool enabled() const { return limits_.requests_per_minute > 0 || limits_.tokens_per_minute > 0; }

  struct Decision {
    bool allowed = true;
    double retry_after = 0;  // seconds, when refused
    const char* what = "";   // "requests" or "tokens", when refused
  };
  // One request of `client` that may use up to `tokens` tokens.
  Decision admit(const std::string& client, int64_t tokens);
  // Whether `client` would be refused a request now, on its request bucket alone: a check
  // that takes nothing (and adds no table entry), made from the header before the body is
  // read. admit() still decides; the token bucket needs the request's token count.
  Decision peek(const std::string& client);
  // The request reserved `reserved` tokens at admit() and used `used`.
  void settle(const std::string& client, int64_t reserved, int64_t used);

  size_t client_count() const { return clients_.size(); }

 private:
  struct Buckets {
    TokenBucket requests;
    TokenBucket tokens;
    double last_seen = 0;
  };
  Buckets& buckets_of(const std::string& client, double now);
  void forget_idle(double now);

  RateLimits limits_;
  Clock clock_;
  std::unordered_map<std::string, Buckets> clients_;
  double last_sweep_ = 0;
};

}  // namespace tally::server
