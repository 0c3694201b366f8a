// What one request asks of the sampler. Plain data: the server fills it from the request,
// validate() checks it against the model's vocabulary, and a Sampler is built from it.
// The chain these parameters configure is described in sampler.h and docs/sampling.md.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tally {

// seed == kRandomSeed: draw the seed from std::random_device when the Sampler is built
// (Sampler::seed() reports the one drawn, so a run can be repeated). Every other value,
// 0 included, is used as given.
inline constexpr uint64_t kRandomSeed = UINT64_MAX;

struct SamplingParams {
  float temperature = 0.8f;         // 0 = greedy (argmax, lowest id on ties)
  int32_t top_k = 40;               // <= 0: off
  float top_p = 0.95f;              // 1.0: off
  float min_p = 0.05f;              // 0: off; keeps p >= min_p * max p
  float repetition_penalty = 1.0f;  // 1.0: off; > 1 divides positive logits, multiplies negative
  int32_t penalty_last_n = 64;      // window of history for all penalties; -1 = all, 0 = off
  float presence_penalty = 0.0f;    // OpenAI: logit -= presence if the token is in the window
  float frequency_penalty = 0.0f;   // OpenAI: logit -= frequency * count in the window
  std::vector<std::pair<int32_t, float>> logit_bias;  // {token, bias} added; -inf bans
  uint64_t seed = 0;                // same seed + same logits -> same tokens
  bool logprobs = false;            // report the sampled token's log-probability
  int32_t top_logprobs = 0;         // and the n most likely tokens' (needs logprobs)

  // InvalidArgument naming the field for values out of range, logit_bias token ids outside
  // [0, n_vocab), a bias that is NaN or +inf, or biases that ban every token; the field is
  // also a value (Status::field(): "top_p", "logit_bias", ...). In sampling_check.cpp.
  Status validate(int32_t n_vocab) const;
};

}  // namespace tally
