#include "sched/draft_length.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tally {

StepCostTable::StepCostTable(int32_t max_positions)
    : log_shape_(static_cast<size_t>(std::max(max_positions, 1)) + 1, 0.0),
      count_(log_shape_.size(), 0) {}

void StepCostTable::record(int32_t positions, double seconds, bool drafted) {
  if (positions < 1 || positions > max_positions() || !(seconds > 0.0) ||
      !std::isfinite(seconds)) {
    return;
  }
  const auto n = static_cast<size_t>(positions);
  const double observed = std::log(seconds);
  int32_t& count = count_[n];
  double& shape = log_shape_[n];
  if (count++ == 0) {
    shape = observed - log_speed_;
    largest_measured_ = std::max(largest_measured_, positions);
    smallest_measured_ =
        smallest_measured_ == 0 ? positions : std::min(smallest_measured_, positions);
    return;
  }
  // One bounded residual, shared: the speed takes its part, the size's shape the rest. (Two
  // separately bounded updates drift apart: each stall's excess, bounded, and the recovery
  // after it, not, left a simulated frequent size's shape 2x high after 3000 steps.)
  double residual = std::clamp(observed - log_speed_ - shape, -kMaxStepLog, kMaxStepLog);
  if (!drafted && count > kSettledCount) {
    log_speed_ += kSpeedWeight * residual;
    residual -= kSpeedWeight * residual;
  }
  shape += std::max(kShapeWeight, 1.0 / count) * residual;
}

bool StepCostTable::measured(int32_t positions) const {
  return positions >= 1 && positions <= max_positions() &&
         count_[static_cast<size_t>(positions)] > 0;
}

double StepCostTable::shape_seconds(int32_t positions) const {
  return std::exp(log_shape_[static_cast<size_t>(positions)]);
}

void StepCostTable::estimate(int32_t n0, std::span<double> out) const {
  // One pass: the nearest measured size at or below n0, then upward, each unmeasured run
  // filled once its upper end is found.
  const double speed = std::exp(log_speed_);
  // Past the largest measured size: the chord from the smallest, whose slope is at most the
  // last part's on a flat-then-linear curve (it errs towards cheaper, and the step that
  // drafts there measures it), never falling.
  const int32_t a = smallest_measured_;
  const int32_t b = largest_measured_;
  const double past_largest_slope =
      b > a ? std::max(0.0, (shape_seconds(b) - shape_seconds(a)) / static_cast<double>(b - a))
            : 0.0;
  int32_t lo = std::min(n0, largest_measured_);
  while (lo >= 1 && !measured(lo)) --lo;
  const auto count = static_cast<int32_t>(out.size());
  int32_t i = 0;
  while (i < count) {
    const int32_t n = n0 + i;
    if (measured(n)) {
      out[static_cast<size_t>(i)] = speed * shape_seconds(n);
      lo = n;
      ++i;
      continue;
    }
    int32_t hi = n + 1;
    while (hi <= largest_measured_ && !measured(hi)) ++hi;  // none is past the largest
    const bool has_hi = hi <= largest_measured_;
    const int32_t run_end = std::min(has_hi ? hi : n0 + count, n0 + count);
    for (int32_t m = n; m < run_end; ++m) {
      double t = 0.0;
      if (lo >= 1 && has_hi) {
        const double tl = shape_seconds(lo);
        const double th = shape_seconds(hi);
        t = tl + (th - tl) * static_cast<double>(m - lo) / static_cast<double>(hi - lo);
      } else if (lo >= 1) {
        t = shape_seconds(lo) + past_largest_slope * static_cast<double>(m - lo);
      } else if (has_hi) {
        t = shape_seconds(hi);
      }
      out[static_cast<size_t>(m - n0)] = speed * t;
    }
    i = run_end - n0;
  }
}

namespace {

// The best prefix of scratch.gains (in its order) by useful positions per second; returns
// (rate, m). times[m] = T(n0 + m), pass[r] = D(r).
std::pair<double, int32_t> best_prefix(std::span<const DraftCandidate> candidates, double base,
                                       double min_rate, DraftChoiceScratch& scratch) {
  const auto& gains = scratch.gains;
  const auto& times = scratch.times;
  const auto& pass = scratch.pass_times;
  std::fill(scratch.rows_in_pass.begin(), scratch.rows_in_pass.end(), 0);
  std::fill(scratch.taken.begin(), scratch.taken.end(), 0);
  double best_rate = min_rate;
  int32_t best_m = 0;
  double useful = base;
  double passes = 0.0;  // P(m)
  for (size_t m = 1; m < times.size(); ++m) {
    const auto c = static_cast<size_t>(gains[m - 1].second);
    useful += gains[m - 1].first;
    // A candidate's positions come in order (its gains fall in either ordering), so this is
    // its draft token j = taken[c]: pass j gains one row.
    const int32_t j = scratch.taken[c]++;
    if (candidates[c].model) {
      int32_t& rows = scratch.rows_in_pass[static_cast<size_t>(j)];
      passes += pass[static_cast<size_t>(rows + 1)] - pass[static_cast<size_t>(rows)];
      ++rows;
    }
    if (!(times[m] > 0.0)) break;
    const double rate = useful / (times[m] + passes);
    if (rate > best_rate) {
      best_rate = rate;
      best_m = static_cast<int32_t>(m);
    }
  }
  return {best_rate, best_m};
}

}  // namespace

int32_t choose_draft_lengths(const StepCostTable& cost, int32_t n0,
                             std::span<const DraftCandidate> candidates, std::span<int32_t> k,
                             DraftChoiceScratch& scratch, const StepCostTable* draft_pass_cost) {
  TALLY_CHECK(k.size() == candidates.size(), "{} lengths for {} candidates", k.size(),
              candidates.size());
  std::fill(k.begin(), k.end(), 0);
  auto& gains = scratch.gains;
  gains.clear();
  int32_t n_model = 0;
  int32_t most_model_k = 0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const double a = std::clamp(static_cast<double>(candidates[c].alpha), 0.0, 1.0);
    double g = 1.0;
    for (int32_t j = 0; j < candidates[c].max_k; ++j) {
      g *= a;
      gains.emplace_back(g, static_cast<int32_t>(c));
    }
    if (candidates[c].model && candidates[c].max_k > 0) {
      ++n_model;
      most_model_k = std::max(most_model_k, candidates[c].max_k);
    }
  }
  if (gains.empty()) return 0;
  // T(n0 + m) for the m that may be tried. With one size measured, the sizes past it would be
  // priced as that size: free positions, and the first step with guesses would draft them all
  // at once (at concurrency 16 on a model whose positions cost in proportion, a step several
  // times an undrafted one) to learn what one position past it tells. So only the next size.
  const int32_t base_n = std::max(n0, 1);
  const int32_t most_m =
      cost.smallest_measured() < cost.largest_measured()
          ? static_cast<int32_t>(gains.size())
          : std::clamp(cost.largest_measured() + 1 - base_n, 0, static_cast<int32_t>(gains.size()));
  auto& times = scratch.times;
  times.assign(static_cast<size_t>(most_m) + 1, 0.0);
  cost.estimate(base_n, times);
  if (!(times[0] > 0.0)) return 0;
  // D(r) for r = 1..n_model: a pass not measured yet is free (the first step that drafts
  // with the model measures it); past the largest measured, the table's line.
  auto& pass = scratch.pass_times;
  pass.assign(static_cast<size_t>(n_model) + 1, 0.0);
  if (n_model > 0 && draft_pass_cost != nullptr) {
    draft_pass_cost->estimate(1, std::span<double>(pass).subspan(1));
  }
  scratch.rows_in_pass.assign(static_cast<size_t>(most_model_k), 0);
  scratch.taken.assign(candidates.size(), 0);
  const double base = static_cast<double>(std::max(n0, 1));
  const double min_rate = base / times[0] * (1.0 + kDraftMinGain);
  // Best gains first; ties by candidate, so the choice is a function of its inputs.
  const auto by_gain = [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  };
  const auto take = [&](int32_t m) {
    std::fill(k.begin(), k.end(), 0);
    for (int32_t i = 0; i < m; ++i) ++k[static_cast<size_t>(gains[static_cast<size_t>(i)].second)];
    return m;
  };
  std::sort(gains.begin(), gains.end(), by_gain);
  const auto [rate, m] = best_prefix(candidates, base, min_rate, scratch);
  take(m);
  if (n_model == 0 || n_model == static_cast<int32_t>(candidates.size())) return m;
  // Model positions cost passes on top of the step: also try every n-gram position first
  // (each in gain order), and keep the better of the two orders.
  std::sort(gains.begin(), gains.end(), [&](const auto& x, const auto& y) {
    const bool mx = candidates[static_cast<size_t>(x.second)].model;
    const bool my = candidates[static_cast<size_t>(y.second)].model;
    return mx != my ? my : by_gain(x, y);
  });
  const auto [rate2, m2] = best_prefix(candidates, base, min_rate, scratch);
  return rate2 > rate ? take(m2) : m;
}

}  // namespace tally
