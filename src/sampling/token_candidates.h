// The working set the sampler steps narrow down: one entry per token still in the running,
// preallocated once for the whole vocabulary so that sampling a token allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally {

struct TokenCandidate {
  int32_t id;
  float logit;  // after the steps so far (bias, penalties, temperature)
  float prob;   // valid only right after softmax()
};

// "a ranks before b": higher logit first, lower id on equal logits. A total order, so any
// sort or selection over it gives the same result with every standard library.
inline bool candidate_before(const TokenCandidate& a, const TokenCandidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Order invariant (what makes results identical across platforms): between steps the
// candidates are either in id order or sorted by candidate_before, or a filtered
// subsequence of one of those. Only sort_prefix() leaves an unspecified tail, and the steps
// that call it truncate to the sorted prefix before they return.
class TokenCandidates {
 public:
  explicit TokenCandidates(int32_t n_vocab);

  // Resets to the whole vocabulary in id order. logits: [n_vocab]. NaN becomes -inf and
  // +inf becomes the largest float, so that softmax and sorting stay well-defined.
  void fill(std::span<const float> logits);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TokenCandidate& operator[](size_t i) { return data_[i]; }
  const TokenCandidate& operator[](size_t i) const { return data_[i]; }
  std::span<TokenCandidate> view() { return {data_.data(), size_}; }
  std::span<const TokenCandidate> view() const { return {data_.data(), size_}; }

  // True while candidate i is token i (fill() and nothing reordered or removed since), so
  // a step can look a token up by id.
  bool in_id_order() const { return in_id_order_; }
  // How many leading candidates are known to be the best ones, in candidate_before order.
  size_t sorted_prefix() const { return sorted_; }

  // Makes the first min(m, size) candidates the best ones in candidate_before order, with a
  // partial sort (small m) or nth_element + a sort of the prefix: never a full sort.
  void sort_prefix(size_t m);
  // Keeps the first n candidates (n <= size).
  void truncate(size_t n);
  // Keeps the candidates for which keep(candidate) is true, in their order.
  template <typename Keep>
  void retain(Keep keep);

  // Index of the best candidate (candidate_before order); size must be > 0.
  size_t best_index() const;
  // Sets every prob to softmax(logit) over the current candidates, summing in candidate
  // order in double. If no logit is finite, every prob is 0. Returns the sum of
  // exp(logit - max logit) (0 when no logit is finite).
  double softmax();

  // The candidate a selecting step (greedy, dist) chose; -1 until one has.
  int64_t selected = -1;

 private:
  std::vector<TokenCandidate> data_;  // [n_vocab], first size_ in use
  size_t size_ = 0;
  size_t sorted_ = 0;
  bool in_id_order_ = false;
};

template <typename Keep>
void TokenCandidates::retain(Keep keep) {
  size_t out = 0;
  size_t sorted_kept = 0;
  for (size_t i = 0; i < size_; ++i) {
    if (!keep(data_[i])) continue;
    if (i < sorted_) ++sorted_kept;  // the kept part of the best prefix stays the best
    data_[out++] = data_[i];
  }
  if (out != size_) in_id_order_ = false;
  size_ = out;
  sorted_ = sorted_kept;
}

}  // namespace tally
