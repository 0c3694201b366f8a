#include "sampling/sampler_steps.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tally {

void LogitBiasStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  TALLY_CHECK(c.in_id_order(), "logit_bias must run before any step that reorders candidates");
  for (const auto& [token, bias] : bias_) c[static_cast<size_t>(token)].logit += bias;
}

PenaltyStep::PenaltyStep(const PenaltyOptions& options, int32_t n_vocab)
    : options_(options), counts_(static_cast<size_t>(n_vocab), 0) {}

void PenaltyStep::apply(TokenCandidates& c, std::span<const int32_t> history) {
  TALLY_CHECK(c.in_id_order(), "penalties must run before any step that reorders candidates");
  size_t n = history.size();
  if (options_.last_n >= 0) n = std::min(n, static_cast<size_t>(options_.last_n));
  const std::span<const int32_t> window = history.last(n);
  const size_t n_vocab = counts_.size();
  for (int32_t t : window) {
    if (t >= 0 && static_cast<size_t>(t) < n_vocab) ++counts_[static_cast<size_t>(t)];
  }
  // Each distinct token once, at its first occurrence; resetting its count marks it done
  // and leaves counts_ all zero for the next call.
  for (int32_t t : window) {
    if (t < 0 || static_cast<size_t>(t) >= n_vocab) continue;
    const uint32_t count = counts_[static_cast<size_t>(t)];
    if (count == 0) continue;
    counts_[static_cast<size_t>(t)] = 0;
    float& logit = c[static_cast<size_t>(t)].logit;
    logit = logit > 0.0f ? logit / options_.repetition : logit * options_.repetition;
    logit -= static_cast<float>(count) * options_.frequency + options_.presence;
  }
}

void GreedyStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  c.selected = static_cast<int64_t>(c.best_index());
}

TopKStep::TopKStep(int32_t k) : k_(static_cast<size_t>(k)) {
  TALLY_CHECK(k >= 1, "top_k = {} must be >= 1 when the step is used", k);
}

void TopKStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  if (c.size() <= k_) return;
  c.sort_prefix(k_);
  c.truncate(k_);
}

void TopPStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  if (c.size() <= 1) return;
  c.softmax();
  constexpr size_t kFirstPrefix = 64;
  double cum = 0.0;
  size_t i = 0;
  for (size_t m = std::min(kFirstPrefix, c.size());; m = std::min(4 * m, c.size())) {
    c.sort_prefix(m);
    for (; i < m; ++i) {
      cum += c[i].prob;
      if (cum >= p_) {
        c.truncate(i + 1);
        return;
      }
    }
    if (m == c.size()) return;  // rounding kept the sum just below p: keep everything
  }
}

MinPStep::MinPStep(float min_p) : log_min_p_(std::log(min_p)) {
  TALLY_CHECK(min_p > 0.0f && min_p <= 1.0f, "min_p = {} must be in (0, 1]", min_p);
}

void MinPStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  if (c.size() <= 1) return;
  const float max_logit = c[c.best_index()].logit;
  if (max_logit == -INFINITY) return;
  const float threshold = max_logit + log_min_p_;
  c.retain([threshold](const TokenCandidate& t) { return t.logit >= threshold; });
}

TemperatureStep::TemperatureStep(float temperature) : temperature_(temperature) {
  TALLY_CHECK(temperature > 0.0f, "temperature = {} must be > 0 for the step", temperature);
}

void TemperatureStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  for (TokenCandidate& t : c.view()) t.logit = scale(t.logit, temperature_);
}

void DistStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  TALLY_CHECK(!c.empty(), "no candidates to draw from");
  const double u = rng_.next_double();
  c.softmax();
  // Running sum of the normalised probabilities; the target is u (the sum is ~1).
  double cum = 0.0;
  int64_t last_positive = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].prob <= 0.0f) continue;
    cum += c[i].prob;
    last_positive = static_cast<int64_t>(i);
    if (cum > u) {
      c.selected = last_positive;
      return;
    }
  }
  // u fell in the rounding gap at the top (or nothing is finite).
  c.selected = last_positive >= 0 ? last_positive : 0;
}

LogprobsStep::LogprobsStep(float temperature, int32_t top_n)
    : temperature_(temperature),
      heap_(static_cast<size_t>(std::max(top_n, 0))),
      top_(static_cast<size_t>(std::max(top_n, 0))) {
  TALLY_CHECK(temperature > 0.0f, "logprobs temperature = {} must be > 0", temperature);
}

void LogprobsStep::apply(TokenCandidates& c, std::span<const int32_t> /*history*/) {
  max_scaled_ = -INFINITY;
  for (const TokenCandidate& t : c.view()) {
    max_scaled_ = std::max(max_scaled_, TemperatureStep::scale(t.logit, temperature_));
  }
  double sum = 0.0;
  if (max_scaled_ != -INFINITY) {
    for (const TokenCandidate& t : c.view()) {
      sum += std::exp(TemperatureStep::scale(t.logit, temperature_) - max_scaled_);
    }
  }
  log_sum_ = std::log(sum);  // -inf when nothing is finite

  // The top n by a bounded heap whose front is the worst kept: O(size log n), no reorder.
  const size_t n = std::min(heap_.size(), c.size());
  size_t kept = 0;
  for (const TokenCandidate& t : c.view()) {
    if (kept < n) {
      heap_[kept++] = t;
      std::push_heap(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(kept), candidate_before);
    } else if (n > 0 && candidate_before(t, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(n), candidate_before);
      heap_[n - 1] = t;
      std::push_heap(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(n), candidate_before);
    }
  }
  std::sort_heap(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(n), candidate_before);
  for (size_t i = 0; i < n; ++i) {
    top_[i] = {heap_[i].id, logprob_of(TemperatureStep::scale(heap_[i].logit, temperature_))};
  }
  top_count_ = n;
}

float LogprobsStep::logprob_of(float scaled_logit) const {
  if (scaled_logit == -INFINITY || max_scaled_ == -INFINITY) return -INFINITY;
  return static_cast<float>(static_cast<double>(scaled_logit - max_scaled_) - log_sum_);
}

}  // namespace tally
