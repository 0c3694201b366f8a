#include "sampling/token_candidates.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "base/check.h"

namespace tally {

TokenCandidates::TokenCandidates(int32_t n_vocab) {
  TALLY_CHECK(n_vocab > 0, "n_vocab = {} must be positive", n_vocab);
  data_.resize(static_cast<size_t>(n_vocab));
}

void TokenCandidates::fill(std::span<const float> logits) {
  TALLY_CHECK(logits.size() == data_.size(), "logits have {} entries, the vocabulary {}",
              logits.size(), data_.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    float l = logits[i];
    if (!(l <= FLT_MAX)) l = std::isnan(l) ? -INFINITY : FLT_MAX;  // one compare when finite
    data_[i] = {static_cast<int32_t>(i), l, 0.0f};
  }
  size_ = logits.size();
  sorted_ = 0;
  in_id_order_ = true;
  selected = -1;
}

void TokenCandidates::sort_prefix(size_t m) {
  m = std::min(m, size_);
  if (m <= sorted_) return;
  auto first = data_.begin() + static_cast<ptrdiff_t>(sorted_);
  auto mid = data_.begin() + static_cast<ptrdiff_t>(m);
  auto last = data_.begin() + static_cast<ptrdiff_t>(size_);
  // Few wanted of many (top-k, the first top-p chunk): a heap selection, where most
  // candidates cost one comparison with the worst kept. Otherwise partition, then sort.
  constexpr size_t kHeapSelectMax = 256;
  if (m - sorted_ <= kHeapSelectMax) {
    std::partial_sort(first, mid, last, candidate_before);
  } else {
    if (mid != last) std::nth_element(first, mid, last, candidate_before);
    std::sort(first, mid, candidate_before);
  }
  sorted_ = m;
  in_id_order_ = false;
}

void TokenCandidates::truncate(size_t n) {
  TALLY_CHECK(n <= size_, "truncate to {} of {} candidates", n, size_);
  size_ = n;  // a prefix of id order is still id order
  sorted_ = std::min(sorted_, n);
}

size_t TokenCandidates::best_index() const {
  TALLY_CHECK(size_ > 0, "no candidates left");
  if (sorted_ > 0) return 0;
  size_t best = 0;
  for (size_t i = 1; i < size_; ++i) {
    if (candidate_before(data_[i], data_[best])) best = i;
  }
  return best;
}

double TokenCandidates::softmax() {
  if (size_ == 0) return 0.0;
  const float max_logit = data_[best_index()].logit;
  if (max_logit == -INFINITY) {
    for (size_t i = 0; i < size_; ++i) data_[i].prob = 0.0f;
    return 0.0;
  }
  double sum = 0.0;
  for (size_t i = 0; i < size_; ++i) {
    const float w = std::exp(data_[i].logit - max_logit);
    data_[i].prob = w;
    sum += w;
  }
  const double inv = 1.0 / sum;  // sum >= 1: the max contributes exp(0)
  for (size_t i = 0; i < size_; ++i) data_[i].prob = static_cast<float>(data_[i].prob * inv);
  return sum;
}

}  // namespace tally
