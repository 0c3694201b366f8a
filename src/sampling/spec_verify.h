// Speculative decoding's acceptance rule for one draft position when the draft is a single
// proposed token (q = one-hot on it: n-gram / prompt-lookup drafts).
//
// Exact rejection sampling accepts the draft token d with probability min(1, p(d) / q(d)) =
// p(d) and, on rejection, draws from norm(max(0, p - q)) = p with d removed, renormalised.
// Drawing x ~ p with the sample's own sampler and accepting when x == d does exactly that
// (P(accept) = p(d); given x != d, x is distributed as p without d), and it spends the RNG
// draws the sample would spend without speculation: a seeded request keeps its tokens.
// Greedy sampling is the special case p = one-hot on the argmax.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace tally {

struct SpecPositionResult {
  int32_t token = -1;     // the target's token at this position (d when accepted)
  bool accepted = false;  // token == the draft token: verification goes on
};

// p is the sampler's processed distribution for `logits` after `history`; draft_token < 0
// means no draft at this position (the bonus token): never accepted.
inline SpecPositionResult spec_verify_position(Sampler& sampler, std::span<const float> logits,
                                               std::span<const int32_t> history,
                                               int32_t draft_token) {
  SpecPositionResult r;
  r.token = sampler.sample(logits, history);
  r.accepted = draft_token >= 0 && r.token == draft_token;
  return r;
}

// The same for a draft model's token drawn from its distribution q ([n_vocab]): exact
// rejection sampling with the real q (Sampler::sample_with_draft, --spec-sampled-verify q). An
// empty q is the one-hot case above (n-gram drafts, argmax drafting: greedy requests, and
// sampled ones under --spec-sampled-verify token).
inline SpecPositionResult spec_verify_position(Sampler& sampler, std::span<const float> logits,
                                               std::span<const int32_t> history,
                                               int32_t draft_token, std::span<const float> q) {
  if (q.empty() || draft_token < 0) {
    return spec_verify_position(sampler, logits, history, draft_token);
  }
  SpecPositionResult r;
  r.token = sampler.sample_with_draft(logits, history, draft_token, q, &r.accepted);
  return r;
}

}  // namespace tally
