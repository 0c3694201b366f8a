#include "sampling/sampler.h"

#include <random>

#include "base/check.h"
#include "sampling/spec_rejection.h"

namespace tally {

uint64_t resolve_seed(uint64_t seed) {
  if (seed != kRandomSeed) return seed;
  std::random_device rd;
  uint64_t drawn = kRandomSeed;
  while (drawn == kRandomSeed) {  // keep the reported seed reusable as a fixed seed
    drawn = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
  }
  return drawn;
}

Sampler::Sampler(const SamplingParams& p, int32_t n_vocab)
    : n_vocab_(n_vocab), seed_(resolve_seed(p.seed)), candidates_(n_vocab) {
  const Status valid = p.validate(n_vocab);
  TALLY_CHECK(valid.ok(), "Sampler built from invalid parameters: {}", valid.message());

  if (!p.logit_bias.empty()) steps_.push_back(std::make_unique<LogitBiasStep>(p.logit_bias));
  const bool any_penalty = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
                           p.frequency_penalty != 0.0f;
  if (p.penalty_last_n != 0 && any_penalty) {
    const PenaltyOptions options{p.repetition_penalty, p.presence_penalty, p.frequency_penalty,
                                 p.penalty_last_n};
    steps_.push_back(std::make_unique<PenaltyStep>(options, n_vocab));
    reads_history_ = true;
  }
  const bool greedy = p.temperature == 0.0f;
  if (p.logprobs) {
    auto step = std::make_unique<LogprobsStep>(greedy ? 1.0f : p.temperature, p.top_logprobs);
    logprobs_step_ = step.get();
    steps_.push_back(std::move(step));
  }
  if (greedy) {
    steps_.push_back(std::make_unique<GreedyStep>());
    return;
  }
  if (p.top_k > 0 && p.top_k < n_vocab) steps_.push_back(std::make_unique<TopKStep>(p.top_k));
  if (p.top_p < 1.0f) steps_.push_back(std::make_unique<TopPStep>(p.top_p));
  if (p.min_p > 0.0f) steps_.push_back(std::make_unique<MinPStep>(p.min_p));
  if (p.temperature != 1.0f) steps_.push_back(std::make_unique<TemperatureStep>(p.temperature));
  auto dist = std::make_unique<DistStep>(seed_);
  dist_step_ = dist.get();
  steps_.push_back(std::move(dist));
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  candidates_.fill(logits);
  for (const auto& step : steps_) step->apply(candidates_, history);
  TALLY_CHECK(candidates_.selected >= 0, "the sampler chain selected no token");
  const TokenCandidate& chosen = candidates_[static_cast<size_t>(candidates_.selected)];
  if (logprobs_step_ != nullptr) {
    // chosen.logit went through the same temperature division the logprobs step applied.
    logprobs_.sampled = {chosen.id, logprobs_step_->logprob_of(chosen.logit)};
    logprobs_.top = logprobs_step_->top();
  }
  return chosen.id;
}

int32_t Sampler::sample_with_draft(std::span<const float> logits, std::span<const int32_t> history,
                                   int32_t draft_token, std::span<const float> q,
                                   bool* accepted) {
  if (dist_step_ == nullptr) {  // greedy: p is one-hot on the argmax
    const int32_t token = sample(logits, history);
    *accepted = token == draft_token;
    return token;
  }
  candidates_.fill(logits);
  for (size_t i = 0; i + 1 < steps_.size(); ++i) steps_[i]->apply(candidates_, history);
  candidates_.softmax();
  dense_p_.assign(static_cast<size_t>(n_vocab_), 0.0f);
  for (const TokenCandidate& c : candidates_.view()) dense_p_[static_cast<size_t>(c.id)] = c.prob;
  *accepted = spec_accepts_draft(dense_p_, q, draft_token, dist_step_->next_uniform());
  const int32_t token = *accepted ? draft_token
                                  : spec_residual_sample(dense_p_, q, dist_step_->next_uniform());
  if (logprobs_step_ != nullptr) {
    for (const TokenCandidate& c : candidates_.view()) {
      if (c.id != token) continue;
      logprobs_.sampled = {token, logprobs_step_->logprob_of(c.logit)};
      logprobs_.top = logprobs_step_->top();
    }
  }
  return token;
}

std::string Sampler::describe() const {
  std::string out;
  for (const auto& step : steps_) {
    if (!out.empty()) out += " -> ";
    out += step->name();
  }
  return out;
}

}  // namespace tally
