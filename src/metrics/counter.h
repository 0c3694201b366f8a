// Counter and Gauge: one atomic double each, so any thread updates them without a lock.
#pragma once

#include <atomic>

namespace tally::metrics {

// Only goes up (Prometheus resets are process restarts).
class Counter {
 public:
  void inc(double amount = 1) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  // Raises the counter to `total` when it is higher: mirrors a monotonic total kept elsewhere
  // (the engine's counters) without ever going down.
  void advance_to(double total) {
    double current = value_.load(std::memory_order_relaxed);
    while (total > current &&
           !value_.compare_exchange_weak(current, total, std::memory_order_relaxed)) {
    }
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void inc(double amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void dec(double amount = 1) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

}  // namespace tally::metrics
