#include "metrics/histogram.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tally::metrics {

bool valid_bucket_bounds(std::span<const double> bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return false;
    if (i > 0 && !(bounds[i] > bounds[i - 1])) return false;
  }
  return true;
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  TALLY_CHECK(valid_bucket_bounds(bounds), "histogram bounds must be finite and increasing");
  for (size_t i = 0; i <= bounds.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  // The first bound >= value (le is inclusive); past the last bound is the +Inf bucket.
  const auto bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                          bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snap;
  snap.cumulative.resize(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snap.cumulative[i] = running;
  }
  snap.sum = sum_.load(std::memory_order_relaxed);
  return snap;
}

}  // namespace tally::metrics
