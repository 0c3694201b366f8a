#include "sched/draft_length.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tally {

StepCostTable::StepCostTable(int32_t max_positions)
    : seconds_(static_cast<size_t>(std::max(max_positions, 1)) + 1, 0.0) {}

void StepCostTable::record(int32_t positions, double seconds) {
  if (positions < 1 || positions > max_positions() || !(seconds > 0.0)) return;
  double& t = seconds_[static_cast<size_t>(positions)];
  if (t == 0.0) {
    t = seconds;
  } else {
    t += (seconds < t ? kWeightDown : kWeightUp) * (seconds - t);
  }
}

bool StepCostTable::measured(int32_t positions) const {
  return positions >= 1 && positions <= max_positions() &&
         seconds_[static_cast<size_t>(positions)] > 0.0;
}

void StepCostTable::estimate(int32_t n0, std::span<double> out) const {
  // One pass: the nearest measured size at or below n0, then upward, each unmeasured run
  // filled once its upper end is found.
  const int32_t top = max_positions();
  int32_t lo = std::min(n0, top);
  while (lo >= 1 && !measured(lo)) --lo;
  const auto count = static_cast<int32_t>(out.size());
  int32_t i = 0;
  while (i < count) {
    const int32_t n = n0 + i;
    if (measured(n)) {
      out[static_cast<size_t>(i)] = seconds_[static_cast<size_t>(n)];
      lo = n;
      ++i;
      continue;
    }
    int32_t hi = n + 1;
    while (hi <= top && !measured(hi)) ++hi;
    const bool has_hi = hi <= top;
    const int32_t run_end = std::min(has_hi ? hi : n0 + count, n0 + count);
    for (int32_t m = n; m < run_end; ++m) {
      double t = 0.0;
      if (lo >= 1 && has_hi) {
        const double tl = seconds_[static_cast<size_t>(lo)];
        const double th = seconds_[static_cast<size_t>(hi)];
        t = tl + (th - tl) * static_cast<double>(m - lo) / static_cast<double>(hi - lo);
      } else if (lo >= 1) {
        t = seconds_[static_cast<size_t>(lo)];
      } else if (has_hi) {
        t = seconds_[static_cast<size_t>(hi)];
      }
      out[static_cast<size_t>(m - n0)] = t;
    }
    i = run_end - n0;
  }
}

int32_t choose_draft_lengths(const StepCostTable& cost, int32_t n0,
                             std::span<const DraftCandidate> candidates, std::span<int32_t> k,
                             DraftChoiceScratch& scratch) {
  TALLY_CHECK(k.size() == candidates.size(), "{} lengths for {} candidates", k.size(),
              candidates.size());
  std::fill(k.begin(), k.end(), 0);
  auto& gains = scratch.gains;
  gains.clear();
  for (size_t c = 0; c < candidates.size(); ++c) {
    const double a = std::clamp(static_cast<double>(candidates[c].alpha), 0.0, 1.0);
    double g = 1.0;
    for (int32_t j = 0; j < candidates[c].max_k; ++j) {
      g *= a;
      gains.emplace_back(g, static_cast<int32_t>(c));
    }
  }
  if (gains.empty()) return 0;
  // Best gains first; ties by candidate, so the choice is a function of its inputs.
  std::sort(gains.begin(), gains.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  auto& times = scratch.times;
  times.assign(gains.size() + 1, 0.0);
  cost.estimate(std::max(n0, 1), times);
  if (!(times[0] > 0.0)) return 0;
  const double base = static_cast<double>(std::max(n0, 1));
  const double base_rate = base / times[0];
  double best_rate = base_rate * (1.0 + kDraftMinGain);
  int32_t best_m = 0;
  double useful = base;
  for (size_t m = 1; m < times.size(); ++m) {
    useful += gains[m - 1].first;
    if (!(times[m] > 0.0)) break;
    const double rate = useful / times[m];
    if (rate > best_rate) {
      best_rate = rate;
      best_m = static_cast<int32_t>(m);
    }
  }
  for (int32_t m = 0; m < best_m; ++m) {
    ++k[static_cast<size_t>(gains[static_cast<size_t>(m)].second)];
  }
  return best_m;
}

}  // namespace tally
