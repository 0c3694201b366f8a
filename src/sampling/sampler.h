// One request's sampler: a chain of steps built from its SamplingParams, its own RNG and
// its own preallocated candidates buffer, so a token depends only on this request's
// parameters, seed, logits and history (never on the batch or the thread count).
//
// The chain, in order (llama.cpp's default order); steps whose parameter is "off" are left out:
//   logit_bias -> penalties (repetition, frequency, presence over the last penalty_last_n)
//   -> [logprobs: records the full distribution at this point]
//   -> temperature == 0: greedy (argmax, lowest id on ties)
//      otherwise: top_k -> top_p -> min_p -> temperature -> dist (softmax, one RNG draw)
// Note that top_p and min_p see the distribution before temperature.
//
// Thread rules: not thread-safe; one Sampler per request, used by one thread at a time.
// Memory: n_vocab * 12 bytes of candidates, plus n_vocab * 4 bytes when penalties are on.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sampling/sampler_steps.h"
#include "sampling/sampling_params.h"
#include "sampling/token_candidates.h"

namespace tally {

// Log-probabilities from the distribution after logit bias, penalties and temperature
// (temperature 1 for greedy), over the whole vocabulary: before top-k/top-p/min-p, so the
// sampled token's value is what the model, as penalised, gave it.
struct SampleLogprobs {
  TokenLogprob sampled{-1, 0.0f};
  std::span<const TokenLogprob> top;  // [top_logprobs], most likely first
};

class Sampler {
 public:
  // p must pass p.validate(n_vocab) (checked: a failure here is a caller bug).
  Sampler(const SamplingParams& p, int32_t n_vocab);

  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  Sampler(Sampler&&) = default;
  Sampler& operator=(Sampler&&) = default;

  // logits: [n_vocab], read only (copied into the candidates). history: the request's
  // tokens so far (prompt + generated), oldest first, for the penalties.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // Speculation with a draft model: draft_token was drawn from the draft's distribution q
  // ([n_vocab], q[draft_token] > 0). Exact rejection sampling against p, this sampler's
  // processed distribution (spec_rejection.h): one uniform decides acceptance, a second one
  // (on rejection only) draws from norm(max(0, p - q)). Sets *accepted. Greedy: the argmax,
  // accepted when it is the draft token. Logprobs as for sample().
  int32_t sample_with_draft(std::span<const float> logits, std::span<const int32_t> history,
                            int32_t draft_token, std::span<const float> q, bool* accepted);

  // After sample(), when params.logprobs: the values for the token it returned. The span
  // stays valid until the next sample().
  const SampleLogprobs& last_logprobs() const { return logprobs_; }

  // The seed in use: params.seed, or the one drawn for kRandomSeed.
  uint64_t seed() const { return seed_; }
  // Whether sample() reads `history` (a penalty is set): a caller may pass an empty one when
  // not, and skip gathering it.
  bool reads_history() const { return reads_history_; }
  int32_t n_vocab() const { return n_vocab_; }
  // The chain as text, e.g. "logit_bias -> penalties -> top_k -> top_p -> min_p -> ...".
  std::string describe() const;

 private:
  int32_t n_vocab_;
  uint64_t seed_;
  TokenCandidates candidates_;
  std::vector<std::unique_ptr<SamplerStep>> steps_;
  LogprobsStep* logprobs_step_ = nullptr;  // owned by steps_, when logprobs are asked for
  bool reads_history_ = false;
  DistStep* dist_step_ = nullptr;          // owned by steps_ (the last one), when not greedy
  std::vector<float> dense_p_;             // [n_vocab] p for sample_with_draft, on first use
  SampleLogprobs logprobs_;
};

// kRandomSeed -> a seed from std::random_device; any other seed unchanged.
uint64_t resolve_seed(uint64_t seed);

}  // namespace tally
