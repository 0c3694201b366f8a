#include "model/moe_routing.h"

#include <cmath>

#include "base/check.h"

namespace tally {

namespace {

// Softmax of one token's logits into probs [E], then its top k (ties: lower index) with their
// probabilities, renormalised when asked. The order of every sum is the expert order.
void moe_route_token(const float* logits, float* probs, const MoeRoutingShape& s, int32_t* chosen, float* weight) {
  float max_logit = logits[0];
  for (int64_t e = 1; e < s.n_expert; ++e) max_logit = std::fmax(max_logit, logits[e]);
  float sum = 0.0f;
  for (int64_t e = 0; e < s.n_expert; ++e) sum += (probs[e] = std::exp(logits[e] - max_logit));
  for (int64_t e = 0; e < s.n_expert; ++e) probs[e] /= sum;
  float chosen_sum = 0.0f;
  for (int64_t j = 0; j < s.n_used; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < s.n_expert; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken = taken || chosen[i] == e;
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    chosen[j] = static_cast<int32_t>(best);
    weight[j] = probs[best];
    chosen_sum += probs[best];
  }
  if (s.normalize)
    for (int64_t j = 0; j < s.n_used; ++j) weight[j] /= chosen_sum;
}

}  // namespace

void moe_route(const float* logits, const MoeRoutingShape& s, const MoeRouting& out) {
  TALLY_CHECK(s.n_used >= 1 && s.n_used <= s.n_expert, "moe: {} of {} experts", s.n_used, s.n_expert);
  const int64_t k = s.n_used;
  for (int64_t e = 0; e <= s.n_expert; ++e) out.expert_begin[e] = 0;
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    moe_route_token(logits + t * s.n_expert, out.probs, s, out.chosen + t * k, out.chosen_weight + t * k);
    for (int64_t j = 0; j < k; ++j) ++out.expert_begin[out.chosen[t * k + j] + 1];
  }
  for (int64_t e = 0; e < s.n_expert; ++e) {
    out.expert_begin[e + 1] += out.expert_begin[e];
    out.cursor[e] = out.expert_begin[e];
  }
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t at = out.cursor[out.chosen[t * k + j]]++;
      out.tokens[at] = static_cast<int32_t>(t);
      out.weights[at] = out.chosen_weight[t * k + j];
    }
  }
}

}  // namespace tally
