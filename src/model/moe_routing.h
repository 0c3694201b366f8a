// The routing of one mixture-of-experts layer, on the host: each token's softmax over its
// router logits, its top-k experts and their weights, then the tokens grouped by expert so
// that the forward pass runs each active expert once per step over all of its tokens (each
// expert's weights stream once; experts no token chose are not read).
//
// Deterministic: a token's choice and weights depend only on its own logits (ties go to the
// lower expert index), and within an expert the tokens keep their batch order.
#pragma once

#include <cstdint>

namespace tally {

struct MoeRoutingShape {
  int64_t n_tokens = 0;
  int64_t n_expert = 0;
  int64_t n_used = 0;       // k: experts per token
  bool normalize = false;   // renormalise the k chosen probabilities to sum to 1
};

// Buffers of moe_route (ForwardScratch's), T = n_tokens, E = n_expert, k = n_used.
struct MoeRouting {
  int32_t* chosen = nullptr;        // [T][k] each token's experts, best first
  float* chosen_weight = nullptr;   // [T][k] their weights
  int32_t* expert_begin = nullptr;  // [E + 1] expert e's tokens: rows expert_begin[e] ..
                                    // expert_begin[e + 1] of `tokens` and `weights`
  int32_t* cursor = nullptr;        // [E] work space
  float* probs = nullptr;           // [E] work space
  int32_t* tokens = nullptr;        // [T * k] token index, grouped by expert, ascending within
  float* weights = nullptr;         // [T * k] the token's weight for that expert
};

// logits: [T][E] router outputs.
void moe_route(const float* logits, const MoeRoutingShape& shape, const MoeRouting& out);

}  // namespace tally
