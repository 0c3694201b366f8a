#include "sampling/spec_rejection.h"

#include <algorithm>

#include "base/check.h"

namespace tally {

bool spec_accepts_draft(std::span<const float> p, std::span<const float> q, int32_t d, double u) {
  TALLY_CHECK(d >= 0 && static_cast<size_t>(d) < p.size() && p.size() == q.size(),
              "draft token {} of p [{}] and q [{}]", d, p.size(), q.size());
  const auto i = static_cast<size_t>(d);
  // u * q(d) < p(d) is u < p(d) / q(d) without dividing (q(d) > 0: d was drawn from q).
  return u * static_cast<double>(q[i]) < static_cast<double>(p[i]);
}

namespace {

// The first index whose running sum of weight(i) exceeds u * total; the last positive one if u
// fell in the rounding gap at the top; -1 when every weight is zero.
template <typename Weight>
int32_t spec_pick_by_weight(size_t n, double u, Weight weight) {
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += weight(i);
  if (total <= 0.0) return -1;
  const double target = u * total;
  double cum = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < n; ++i) {
    const double w = weight(i);
    if (w <= 0.0) continue;
    cum += w;
    last_positive = static_cast<int32_t>(i);
    if (cum > target) return last_positive;
  }
  return last_positive;
}

}  // namespace

int32_t spec_residual_sample(std::span<const float> p, std::span<const float> q, double u) {
  TALLY_CHECK(p.size() == q.size(), "p [{}] and q [{}]", p.size(), q.size());
  const int32_t t = spec_pick_by_weight(p.size(), u, [&](size_t i) {
    return std::max(0.0, static_cast<double>(p[i]) - static_cast<double>(q[i]));
  });
  if (t >= 0) return t;
  const int32_t from_p =
      spec_pick_by_weight(p.size(), u, [&](size_t i) { return static_cast<double>(p[i]); });
  return std::max(from_p, 0);
}

}  // namespace tally
