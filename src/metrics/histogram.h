// A Prometheus histogram with fixed bucket bounds. observe() is lock-free: a binary search over
// the bounds, one relaxed atomic add to that bucket and one to the sum, so the engine thread
// and the io thread observe concurrently without a shared mutex and without allocating.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tally::metrics {

class Histogram {
 public:
  // `bounds`: finite, strictly increasing upper bounds (Prometheus `le`, inclusive); the +Inf
  // bucket is implicit. The span must outlive the histogram (its family owns the vector).
  explicit Histogram(std::span<const double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(double value);  // NaN is ignored (it would poison the sum for good)

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // [bounds + 1]: count of values <= bounds[i]; last = +Inf
    double sum = 0;
    uint64_t count() const { return cumulative.back(); }
  };
  // The count is the +Inf bucket by construction, so a scrape never shows them apart; the sum
  // may trail the buckets by observations in flight (as in every Prometheus client).
  Snapshot snapshot() const;
  std::span<const double> bounds() const { return bounds_; }

 private:
  std::span<const double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // [bounds + 1], per bucket, not cumulative
  std::atomic<double> sum_{0};
};

// True when `bounds` can be a histogram's: every bound finite and strictly above the previous
// one (an empty list is a histogram with the +Inf bucket only).
bool valid_bucket_bounds(std::span<const double> bounds);

}  // namespace tally::metrics
